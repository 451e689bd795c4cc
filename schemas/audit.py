"""Arrow schemas and table specs of what `replog audit` writes: `gold/invariant_violations`, `gold/audit_runs`.

One source, as for the events: each column is declared once here with its documentation; the Spark
StructTypes derive from these through `schemas.spark.to_spark_schema`, and the invariant functions in
`jobs.invariants` produce exactly `VIOLATION_COLUMNS` (the violation schema without the audit id).

A violation row mirrors `replication_core.checker.violation.Violation` field for field, so the Spark
audit and the reference checker can be compared row for row (`offset` / `expected` / `actual` mean what
the catalogue's `Invariant.offsets` says for the invariant).
"""

from __future__ import annotations

import pyarrow as pa

from schemas.spark import to_spark_schema
from schemas.tables import TableSpec


def _f(name: str, t: pa.DataType, doc: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable=nullable, metadata={"doc": doc})


VIOLATION_FIELDS: tuple[pa.Field, ...] = (
    _f("run_id", pa.string(), "Run the violation belongs to.", nullable=False),
    _f("invariant", pa.string(), "Catalogue invariant name (replication_core.checker.catalogue).", nullable=False),
    _f("severity", pa.string(), "error, warning (an excusable violation after an unclean election / crash "
       "loss is a warning) or info (a loss Kafka's contract allows: acks1_write_lost).", nullable=False),
    _f("topic", pa.string(), "Topic; null for violations that are not partition-scoped."),
    _f("partition", pa.int32(), "Partition; null for violations that are not partition-scoped."),
    _f("replica", pa.int32(), "Broker id of the replica concerned; null when no single replica is."),
    _f("ts_ms", pa.int64(), "ts_ms of the detecting event (for an end-of-run check, when the write last left the "
       "partition's leader in office).", nullable=False),
    _f("event_id", pa.int64(), "The detecting event; -1 for end-of-run checks.", nullable=False),
    _f("offset", pa.int64(), "The offset concerned (see the invariant's `offsets`)."),
    _f("expected", pa.int64(), "What the rule requires (see the invariant's `offsets`)."),
    _f("actual", pa.int64(), "What the events show (see the invariant's `offsets`)."),
    _f("evidence", pa.list_(pa.field("element", pa.int64())), "Event ids that prove the violation, the "
       "detecting event last."),
    _f("message", pa.string(), "Human-readable explanation.", nullable=False),
)

VIOLATION_COLUMNS: tuple[str, ...] = tuple(f.name for f in VIOLATION_FIELDS)
"""Columns every invariant function returns, in this order."""

VIOLATION_SCHEMA: pa.Schema = pa.schema(list(VIOLATION_FIELDS))
"""What one invariant function returns (no audit id yet)."""

INVARIANT_VIOLATIONS_SCHEMA: pa.Schema = pa.schema(
    [*VIOLATION_FIELDS, _f("audit_id", pa.string(), "The audit run that found it (gold/audit_runs).",
                           nullable=False)]
)
"""`gold/invariant_violations`: one row per violation, partitioned by run_id (an audit replaces a run's rows)."""

INVARIANT_COUNT = pa.struct(
    [
        pa.field("invariant", pa.string()),
        pa.field("severity", pa.string()),
        pa.field("evaluated", pa.bool_()),
        pa.field("errors", pa.int64()),
        pa.field("warnings", pa.int64()),
        pa.field("note", pa.string()),
    ]
)

AUDIT_RUNS_SCHEMA: pa.Schema = pa.schema(
    [
        _f("audit_id", pa.string(), "Unique id of this audit.", nullable=False),
        _f("started_at_ms", pa.int64(), "Wall-clock start (ms since epoch).", nullable=False),
        _f("duration_ms", pa.int64(), "Wall-clock duration of the audit (ms).", nullable=False),
        _f("bronze_version", pa.int64(), "Version of bronze/replication_events the audit read (null: absent)."),
        _f("runs", pa.list_(pa.field("element", pa.string())), "run_ids audited."),
        _f("fail_on", pa.string(), "error | warning | never: the severity that makes the exit code 1.",
           nullable=False),
        _f("exit_code", pa.int32(), "0 clean (for fail_on), 1 violations at or above fail_on.", nullable=False),
        _f("errors", pa.int64(), "Violations of severity error, all invariants.", nullable=False),
        _f("warnings", pa.int64(), "Violations of severity warning, all invariants.", nullable=False),
        _f("invariants", pa.list_(pa.field("element", INVARIANT_COUNT)), "Per catalogue invariant: whether the "
           "Spark audit evaluated it, and its error / warning counts; never-evaluated ones say why in note."),
        _f("not_evaluated", pa.list_(pa.field("element", pa.string())), "Catalogue invariants this audit did not "
           "evaluate (not implemented in Spark yet): absent from the counts, never passed silently."),
        _f("infos", pa.int64(), "Findings of severity info (acks=1 writes lost, which Kafka allows), all "
           "invariants; each info invariant's count is in its note. Null in rows written before the info "
           "severity existed."),
    ]
)
"""`gold/audit_runs`: one row per `replog audit` run."""

AUDIT_WATERMARKS_SCHEMA: pa.Schema = pa.schema(
    [
        _f("run_id", pa.string(), "Run.", nullable=False),
        _f("event_count", pa.int64(), "Bronze events of the run the audit judged.", nullable=False),
        _f("max_event_id", pa.int64(), "Largest bronze event_id among them.", nullable=False),
        _f("audit_signature", pa.string(), "What judged them: replog's version and a digest of the invariants' "
           "sources (jobs.audit_watermarks.audit_signature); another signature means the run is judged again.",
           nullable=False),
        _f("audit_id", pa.string(), "The audit that judged them (gold/audit_runs).", nullable=False),
        _f("bronze_version", pa.int64(), "Version of bronze/replication_events that audit read."),
    ]
)
"""`gold/_audit_watermarks`: per run, what its last audit judged (`replog audit --changed` skips runs it matches)."""

GOLD_INVARIANT_VIOLATIONS = TableSpec("gold/invariant_violations", INVARIANT_VIOLATIONS_SCHEMA, ("run_id",))
GOLD_AUDIT_RUNS = TableSpec("gold/audit_runs", AUDIT_RUNS_SCHEMA)
GOLD_AUDIT_WATERMARKS = TableSpec("gold/_audit_watermarks", AUDIT_WATERMARKS_SCHEMA, ("run_id",))

AUDIT_TABLES: dict[str, TableSpec] = {
    t.name: t for t in (GOLD_INVARIANT_VIOLATIONS, GOLD_AUDIT_RUNS, GOLD_AUDIT_WATERMARKS)}
"""The audit's tables by name (kept here: schemas.tables is owned by the timelines/lag work)."""

SPARK_VIOLATION_SCHEMA = to_spark_schema(VIOLATION_SCHEMA)
"""Spark form of `VIOLATION_SCHEMA`."""
