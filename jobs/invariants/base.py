"""The shape every Spark invariant check shares: a violation is a struct column, a scan folds many checks.

Following dqx, a *check* is a small function that returns a Column: the violation struct (the fields of
`schemas.audit.VIOLATION_SCHEMA`) when its row breaks the rule, null otherwise. A *scan* is one pass over
bronze that annotates each row with the replay state the checks need (`Scan.build`, which reads bronze and
the frames several scans share through `ScanInputs`); every check of the
scan is then evaluated in one projection and the non-null structs are exploded into violation rows. So the
invariants that share a window cost one shuffle and one sort, however many they are.

Evidence follows `replication_core.checker.checker._flag`: the proving event ids without nulls, the
detecting event last, duplicates removed keeping the first occurrence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.session import event_cache_level
from replication_core.checker.catalogue import BY_NAME, SEVERITIES
from schemas.audit import SPARK_VIOLATION_SCHEMA, VIOLATION_COLUMNS

Check = Callable[[], Column]
"""A check: evaluated over a scan's annotated rows, the violation struct or null."""

PARTITION: tuple[str, ...] = ("run_id", "topic", "partition")
"""A partition of a run: the key of the scans' partition-wide windows and joins."""


def checkpointed(frame: DataFrame, storage_level: StorageLevel | None = None) -> DataFrame:
    """`frame` computed now (a local checkpoint, at `storage_level` if given); when it has no rows, a frame the
    optimiser knows is empty.

    A checkpoint's emptiness is not visible to the planner: the joins and windows of the steps after an empty one
    (no lost acknowledgement, no contested write: a clean run) would still each run their jobs over nothing, ~100
    for the evidence of acked_write_lost. Filtered by a constant false, the optimiser folds them away."""
    kept = frame.localCheckpoint(eager=True) if storage_level is None else frame.localCheckpoint(
        eager=True, storageLevel=storage_level)
    return kept.where(F.lit(False)) if kept.isEmpty() else kept


def materialised(frame: DataFrame) -> DataFrame:
    """`frame` computed now and kept at the event cache level (`jobs.session.event_cache_level`), for a
    frame of event-sized rows that several later steps read (`checkpointed`)."""
    return checkpointed(frame, event_cache_level(frame.sparkSession))


class ScanInputs:
    """What a scan's `build` reads: bronze, and frames that several scans derive from it, each built once.

    Within one audit (`jobs.invariants.evaluate`, `materialise=True`) a shared frame is materialised the
    first time a scan asks for it, at the event cache level (`jobs.session.event_cache_level`), and the
    next scans read it instead of repeating its shuffle and window pass; the audit job releases it with
    its other checkpoints. Without `materialise` (one scan run on its own) it stays an ordinary lazy frame.
    """

    def __init__(self, bronze: DataFrame, materialise: bool = False) -> None:
        self.bronze = bronze
        self._materialise = materialise
        self._frames: dict[Callable[[DataFrame], DataFrame], DataFrame] = {}

    def shared(self, make: Callable[[DataFrame], DataFrame]) -> DataFrame:
        """`make(bronze)`, built once per `ScanInputs` (the function is the key)."""
        if make not in self._frames:
            frame = make(self.bronze)
            if self._materialise:
                frame = materialised(frame)
            self._frames[make] = frame
        return self._frames[make]

ColumnLike = Column | str | int | None


def _col(value: ColumnLike) -> Column:
    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        return F.col(value)
    return F.lit(value)


def violation(
    invariant: str,
    when: Column,
    *,
    replica: ColumnLike = "broker_id",
    offset: ColumnLike = None,
    expected: ColumnLike = None,
    actual: ColumnLike = None,
    evidence: Sequence[ColumnLike] = (),
    message: Column,
    severity: Column | None = None,
    event_id: ColumnLike = "event_id",
    ts_ms: ColumnLike = "ts_ms",
    topic: ColumnLike = "topic",
    partition: ColumnLike = "partition",
) -> Column:
    """The violation struct of `invariant` where `when` holds, else null (`Violation`'s fields, in order).

    `severity` defaults to the catalogue's; excusable invariants pass their own (warning when excused).
    """
    types = {f.name: f.dataType for f in SPARK_VIOLATION_SCHEMA.fields}
    ids = F.array(*[_col(e).cast("long") for e in evidence], _col(event_id).cast("long"))
    # Checker: ids without None, detecting event last (none for end-of-run checks, event_id -1), then
    # dict.fromkeys (first occurrence kept).
    proof = F.array_distinct(F.filter(ids, lambda x: x.isNotNull() & (x >= 0)))
    values: dict[str, Column] = {
        "run_id": F.col("run_id"),
        "invariant": F.lit(invariant),
        "severity": severity if severity is not None else F.lit(BY_NAME[invariant].severity),
        "topic": _col(topic),
        "partition": _col(partition),
        "replica": _col(replica),
        "ts_ms": _col(ts_ms),
        "event_id": _col(event_id),
        "offset": _col(offset),
        "expected": _col(expected),
        "actual": _col(actual),
        "evidence": proof,
        "message": message,
    }
    struct = F.struct(*[values[c].cast(types[c]).alias(c) for c in VIOLATION_COLUMNS])
    return F.when(when, struct)


def is_event(event_type: str) -> Column:
    """True on rows of `event_type`."""
    return F.col("event_type") == event_type


def text(*parts: Column | str) -> Column:
    """A message: strings are literal text, Columns their values (null prints as 'null')."""
    cols = [F.lit(p) if isinstance(p, str) else F.coalesce(p.cast("string"), F.lit("null")) for p in parts]
    return F.concat(*cols)


@dataclass(frozen=True)
class Scan:
    """One pass over bronze: `build` annotates rows with replay state, `checks` map invariants to checks."""

    name: str
    build: Callable[[ScanInputs], DataFrame]
    checks: Mapping[str, tuple[Check, ...]] = field(default_factory=dict)

    def run(self, bronze: DataFrame, invariants: Sequence[str] | None = None,
            inputs: ScanInputs | None = None) -> DataFrame:
        """Violations of `invariants` (default: all of this scan's) found in one projection; `inputs`, if
        given, are the audit's (bronze and the frames its scans share)."""
        wanted = [c for name, cs in self.checks.items() if invariants is None or name in invariants for c in cs]
        if not wanted:
            return empty_violations(bronze.sparkSession)
        rows = self.build(inputs if inputs is not None else ScanInputs(bronze))
        names = [f"_v{i}" for i in range(len(wanted))]
        # Every check as its own column and a plain null test first: both are code-generated. A
        # higher-order `filter` over the array of checks is not, and made Spark evaluate every check of
        # every row through the interpreter; the few rows that found something are filtered there.
        checked = rows.select(*[c().alias(n) for c, n in zip(wanted, names, strict=True)])
        hit = reduce(lambda a, b: a | b, [F.col(n).isNotNull() for n in names])
        found = F.filter(F.array(*[F.col(n) for n in names]), lambda v: v.isNotNull())
        return checked.where(hit).select(F.explode(found).alias("v")).select("v.*")


def severity_order() -> Column:
    """The `severity` column's rank, gravest first: 0 error, 1 warning, 2 info; a severity the catalogue does not
    know ranks with the errors, so that nothing unforeseen is ranked out of sight (`jobs.plots.severity_rank`)."""
    ranks = F.create_map(*[F.lit(x) for rank, severity in enumerate(SEVERITIES) for x in (severity, rank)])
    return F.coalesce(ranks[F.col("severity")], F.lit(0))


def empty_violations(spark: SparkSession) -> DataFrame:
    """No violations, with the violation schema."""
    return spark.createDataFrame([], SPARK_VIOLATION_SCHEMA)
