"""Which runs an incremental audit (`replog audit --changed`) must judge, and what each audit judged.

A run's violations depend only on its own bronze events and on the audit's code, so a run needs judging
again only when one of the two changed. Bronze is append-only (an ingest adds events, never rewrites
them), so a run's event count and largest event id tell whether it got new events; the code is named by
`audit_signature`. Every audit withdraws the records of the runs it judges before it replaces their
violations, and writes the new ones in `gold/_audit_watermarks` after its other writes, so an audit that
failed half-way leaves its runs still to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.lake import Lake
from replication_core import provenance
from schemas.audit import GOLD_AUDIT_WATERMARKS
from schemas.spark import to_spark_schema

SIGNED_SOURCES: tuple[tuple[str, str | None], ...] = (
    ("jobs.invariants", None),
    ("replication_core.checker", "catalogue.py"),
    ("replication_core", "config.py"),
    ("replication_core", "truncation.py"),
    ("schemas", "events.py"),
    ("jobs.transforms", "faults.py"),
    ("jobs.transforms", "segments.py"),
)
"""The sources that decide a verdict (`replication_core.provenance.source_digest` pairs): every invariant
function, the catalogue's severities and rules, the engine modules they take Kafka's defaults and the
truncation generations from, the event schema (which faults hold a broker's answers; a new schema version
is a reason to judge again anyway), when a fault ended (`jobs.transforms.faults`) and the replay's LSO
(`jobs.transforms.segments`). A test keeps this in step
with what `jobs.invariants` imports."""
UNSIGNED_IMPORTS: frozenset[str] = frozenset({"jobs.session", "schemas.audit"})
"""Modules `jobs.invariants` imports that decide no verdict: a storage level, the violation columns."""
UNSIGNED = "unsigned"
"""The signature recorded when the sources cannot be read (a deployment without `.py` files): it matches
no later audit, so every run is judged again."""


@dataclass(frozen=True)
class RunMark:
    """What bronze holds of one run: its event count and largest event id."""

    event_count: int
    max_event_id: int


def audit_signature() -> str:
    """A digest of `SIGNED_SOURCES`: another value means other verdicts may follow. Not the package version,
    which names no code (an installed 0.1.0 and a zip on a cluster's driver without it are the same code)."""
    return provenance.source_digest(SIGNED_SOURCES)


def run_marks(bronze: DataFrame) -> dict[str, RunMark]:
    """Per run in `bronze`, its event count and largest event id (one small row per run reaches the driver)."""
    rows = bronze.groupBy("run_id").agg(F.count(F.lit(1)).alias("n"), F.max("event_id").alias("m")).collect()
    return {r["run_id"]: RunMark(int(r["n"]), int(r["m"])) for r in rows}


def judged_marks(lake: Lake, runs: Sequence[str], signature: str) -> dict[str, RunMark]:
    """What the last audit of each of `runs` judged, where that audit ran with `signature`."""
    if not runs or signature == UNSIGNED or not lake.exists(GOLD_AUDIT_WATERMARKS):
        return {}
    rows = (lake.read(GOLD_AUDIT_WATERMARKS, [{"run_id": r} for r in runs])
            .where(F.col("audit_signature") == signature)
            .select("run_id", "event_count", "max_event_id").collect())
    return {r["run_id"]: RunMark(int(r["event_count"]), int(r["max_event_id"])) for r in rows}


def changed_runs(current: dict[str, RunMark], judged: dict[str, RunMark]) -> list[str]:
    """The runs of `current` whose events differ from what was judged (or that were never judged), sorted."""
    return sorted(r for r, mark in current.items() if judged.get(r) != mark)


def record_judged(lake: Lake, marks: dict[str, RunMark], signature: str, audit_id: str,
                  bronze_version: int | None) -> None:
    """Replace the watermarks of the runs in `marks` with what this audit judged."""
    if not marks:
        return
    rows = [(run, m.event_count, m.max_event_id, signature, audit_id, bronze_version)
            for run, m in sorted(marks.items())]
    _replace(lake, lake.spark.createDataFrame(rows, to_spark_schema(GOLD_AUDIT_WATERMARKS.schema)), sorted(marks),
             audit_id)


def forget_judged(lake: Lake, runs: Sequence[str], audit_id: str) -> None:
    """Remove the watermarks of `runs`, before an audit replaces their violations: until it records what it
    judged, a failed audit leaves no watermark vouching for violations it may have replaced."""
    if runs and lake.exists(GOLD_AUDIT_WATERMARKS):
        _replace(lake, lake.spark.createDataFrame([], to_spark_schema(GOLD_AUDIT_WATERMARKS.schema)), runs,
                 audit_id)


def _replace(lake: Lake, df: DataFrame, runs: Sequence[str], audit_id: str) -> None:
    lake.overwrite_partitions(GOLD_AUDIT_WATERMARKS, df, [{"run_id": r} for r in runs],
                              metadata={"replog.audit": audit_id})
