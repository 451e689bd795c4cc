"""Audit bronze against the invariant catalogue: `gold/invariant_violations` and `gold/audit_runs`.

    replog audit [--lake DIR] [--config FILE] [--run RUN_ID ...] [--changed] [--fail-on error|warning|never]
    ./spark-submit.sh audit

The catalogue is `replication_core.checker.catalogue.CATALOGUE` (one source for the reference checker
and this job); `jobs.invariants` maps the invariants the Spark audit implements to checks folded into a
few window scans over bronze. Semantics are the reference checker's (`replication_core.checker`), which
the differential tests hold this job to, run for run.

What one audit does: read the bronze snapshot (its version is recorded), evaluate every implemented
invariant, replace the audited runs' partitions of `gold/invariant_violations` with what it found (a
rerun replaces, never duplicates), and append one row to `gold/audit_runs` with the counts per invariant
and the invariants it did *not* evaluate, so a clean audit never hides a check that did not run. Last,
it records per run what it judged (event count, largest event id, the audit code's signature) in
`gold/_audit_watermarks` (`jobs.audit_watermarks`).

Incremental (`changed=True`, `replog audit --changed`, for scheduled audits of a growing lake): only the
runs (of `runs`, or all) whose bronze events changed since an audit of the same code last judged them
are audited; the others keep their violations, and their counts are not in this audit's. With nothing
changed the audit writes nothing and exits 0.

Exit codes a scheduler can act on (`AuditResult.exit_code`): 0 clean for `fail_on`, 1 violations at or
above `fail_on` in the runs audited (`error`: errors only; `warning`: errors and warnings; `never`: always 0),
2 the job failed. Info findings (`acks1_write_lost`: acks=1 writes lost, which Kafka's contract allows) are
written and counted, and never fail an audit.
Only aggregates (counts per invariant, one row per run id) and a `limit`ed sample are collected.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.audit_watermarks import (
    UNSIGNED,
    audit_signature,
    changed_runs,
    forget_judged,
    judged_marks,
    record_judged,
    run_marks,
)
from jobs.invariants import IMPLEMENTED, NOT_IMPLEMENTED, evaluate, not_applicable, run_sources
from jobs.invariants.base import severity_order
from jobs.lake import Lake
from jobs.report_document import NOT_APPLICABLE_NOTE
from jobs.runs import bronze_runs
from jobs.session import releasing_persisted
from replication_core.checker.catalogue import BY_NAME, CATALOGUE, INFO, WARNING
from schemas.audit import (
    GOLD_AUDIT_RUNS,
    GOLD_INVARIANT_VIOLATIONS,
    INVARIANT_VIOLATIONS_SCHEMA,
)
from schemas.spark import to_spark_schema
from schemas.tables import BRONZE_EVENTS

FAIL_ON: tuple[str, ...] = ("error", "warning", "never")
"""Accepted values of `fail_on`."""
EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_FAILED = 0, 1, 2
NOT_EVALUATED_NOTE = "not implemented in the Spark audit yet (run `replog check` for it)"
SAMPLE_LINES = 20


@dataclass
class AuditResult:
    """What one audit found: counts per invariant, the exit code, and a bounded sample of violations."""

    audit_id: str
    fail_on: str
    exit_code: int = EXIT_CLEAN
    runs: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    """Runs an incremental audit left out: their events were judged before by the same code."""
    bronze_version: int | None = None
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    not_evaluated: tuple[str, ...] = NOT_IMPLEMENTED
    duration_ms: int = 0
    sample: list[str] = field(default_factory=list)
    error: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    """The audited runs' sources (engine, kafka-log)."""
    not_applicable: dict[str, list[str]] = field(default_factory=dict)
    """Per invariant, the audited runs it does not apply to (their source's events cannot show it)."""

    def judged_nowhere(self, name: str) -> bool:
        """True when `name` applies to none of the audited runs: a count of 0 would read as "passed"."""
        return bool(self.runs) and len(self.not_applicable.get(name, ())) == len(self.runs)

    def applicability(self, name: str) -> str | None:
        """Why `name` was not judged on some or all audited runs, or None where it was judged on all."""
        left_out = self.not_applicable.get(name, [])
        if not left_out:
            return None
        srcs = ", ".join(sorted({self.sources.get(r, "?") for r in left_out}))
        if self.judged_nowhere(name):
            return f"{NOT_APPLICABLE_NOTE} to the audited runs ({srcs}: their events cannot show it)"
        return (f"{NOT_APPLICABLE_NOTE} to {len(left_out)} of the {len(self.runs)} audited runs ({srcs}: their "
                f"events cannot show it); judged on the others")

    @property
    def errors(self) -> int:
        """Violations of severity error."""
        return sum(c.get("error", 0) for c in self.counts.values())

    @property
    def warnings(self) -> int:
        """Violations of severity warning."""
        return sum(c.get(WARNING, 0) for c in self.counts.values())

    @property
    def infos(self) -> int:
        """Findings of severity info (acks=1 writes lost): counted, never a failure."""
        return sum(c.get(INFO, 0) for c in self.counts.values())

    @property
    def reason(self) -> str | None:
        """The failure's one-line reason (the first line of `error`), None when the audit did not fail."""
        return None if self.error is None else (self.error.strip().splitlines() or [""])[0]

    def summary(self) -> str:
        """The lines printed at the end of a run."""
        if self.error is not None:
            return f"audit {self.audit_id}: FAILED: {self.reason}"
        if self.unchanged and not self.runs:
            return (f"audit: nothing new: {len(self.unchanged)} run(s) already judged at their current events by "
                    f"this code (bronze version {self.bronze_version}); nothing written, exit 0")
        left_out = f" ({len(self.unchanged)} unchanged runs not audited again)" if self.unchanged else ""
        lines = [
            f"audit {self.audit_id}: {len(self.runs)} runs{left_out}, bronze version {self.bronze_version}, "
            f"{self.errors} errors, {self.warnings} warnings, {self.infos} info, exit {self.exit_code} "
            f"(fail-on {self.fail_on}), "
            f"{self.duration_ms} ms",
        ]
        for name in IMPLEMENTED:
            c = self.counts.get(name, {})
            if self.judged_nowhere(name):
                srcs = ", ".join(sorted(set(self.sources.values())))
                lines.append(f"  {name:28s} n/a ({srcs} runs cannot show it)")
                continue
            info = f" info={c.get(INFO, 0)}" if BY_NAME[name].severity == INFO else ""
            partly = self.not_applicable.get(name, [])
            left_out = f" (not judged on {len(partly)} {self.sources.get(partly[0], '?')} run(s))" if partly else ""
            lines.append(f"  {name:28s} errors={c.get('error', 0)} warnings={c.get(WARNING, 0)}{info}{left_out}")
        if self.not_evaluated:
            lines.append(f"  not evaluated ({len(self.not_evaluated)}): {', '.join(self.not_evaluated)}")
        lines.extend(f"  {s}" for s in self.sample)
        return "\n".join(lines)


def exit_code_for(errors: int, warnings: int, fail_on: str) -> int:
    """0 or 1 from the violation counts and `fail_on` (error | warning | never)."""
    if fail_on == "never":
        return EXIT_CLEAN
    bad = errors + (warnings if fail_on == "warning" else 0)
    return EXIT_VIOLATIONS if bad else EXIT_CLEAN


def audit_violations(bronze: DataFrame, invariants: Sequence[str] | None = None,
                     log: Callable[[str], None] | None = None, sources: Mapping[str, str] | None = None) -> DataFrame:
    """The pure transform: bronze events -> violations (schema `schemas.audit.VIOLATION_SCHEMA`);
    `log` gets a progress line per scan; `sources` as for `evaluate`."""
    return evaluate(bronze, invariants, log, sources)


def _sample_line(r: dict) -> str:
    """One violation as `replog check` prints it (`Violation.line`)."""
    tp = "-" if r["topic"] is None else f"{r['topic']}-{r['partition']}"
    parts = [r["run_id"], r["invariant"], r["severity"], tp, f"replica={'-' if r['replica'] is None else r['replica']}",
             f"ts={r['ts_ms']}"]
    parts += [f"{k}={r[k]}" for k in ("offset", "expected", "actual") if r[k] is not None]
    parts += ["evidence=[" + ",".join(str(e) for e in (r["evidence"] or [])) + "]", r["message"]]
    return " ".join(parts)


def run_audit(
    spark: SparkSession,
    lake: Lake,
    runs: Sequence[str] | None = None,
    fail_on: str = "error",
    log: Callable[[str], None] = print,
    sample: int = SAMPLE_LINES,
    changed: bool = False,
) -> AuditResult:
    """Audit `runs` (default: every run in bronze; with `changed`, those of them with events not yet judged
    by this code) and write the gold tables; see the module docstring.

    Never raises for a job failure: it is logged and returned as exit code 2.
    """
    started = time.time()
    t0 = time.perf_counter()
    result = AuditResult(f"audit-{uuid.uuid4().hex[:16]}", fail_on)
    found: DataFrame | None = None
    # The scans' local checkpoints are released with the audit's own caches when it ends.
    with releasing_persisted(spark):
        try:
            if fail_on not in FAIL_ON:
                raise ValueError(f"fail_on must be one of {list(FAIL_ON)}, got {fail_on!r}")
            result.bronze_version = lake.version(BRONZE_EVENTS)
            # Every run in bronze, or `runs` once each is known to be there: a typo in a run id or a
            # lake path is a failed job, not a clean audit of nothing. One small row per run.
            result.runs = bronze_runs(lake, runs)
            wanted = [{"run_id": r} for r in result.runs] if runs else None
            # Not cached: each scan reads only its columns and event types from bronze's Parquet
            # (vectorised, pruned), which costs less than building and reading back a cache of all
            # 60 columns (JVM CPU, same JVM, alternating: 1 M events 130 -> 109 s, 10 M see
            # benchmarks/README.md "Session 7").
            bronze = lake.read(BRONZE_EVENTS, wanted)
            signature = _signature(log)
            # Before the scans: with the embedded backend from the file list they read; with delta-spark,
            # which reads the latest snapshot at each action, at worst older than what they judged, which
            # only makes a later `--changed` audit judge the run again.
            marks = run_marks(bronze)
            if changed:
                todo = changed_runs(marks, judged_marks(lake, result.runs, signature))
                result.unchanged = [r for r in result.runs if r not in todo]
                result.runs = todo
                if result.unchanged and todo:
                    bronze = bronze.where(F.col("run_id").isin(todo))  # a partition filter: files pruned
                marks = {r: marks[r] for r in todo}
            if result.runs or not changed:
                found = _judge(spark, lake, bronze, result, started, t0, sample, log)
                record_judged(lake, marks, signature, result.audit_id, result.bronze_version)
        except Exception as exc:  # the scheduler's exit code 2: any failure of the job itself
            result.error = f"{type(exc).__name__}: {exc}"
            result.exit_code = EXIT_FAILED
            if os.environ.get("REPLOG_DEBUG"):  # as the CLI: the one-line reason, the traceback on request
                log(traceback.format_exc())
        finally:
            if found is not None:
                found.unpersist()
            result.duration_ms = int((time.perf_counter() - t0) * 1000)
    log(result.summary())
    return result


def _signature(log: Callable[[str], None]) -> str:
    """`audit_signature()`, or `UNSIGNED` (said in the log) where the sources cannot be read: the audit still
    runs, and a later `--changed` audit judges its runs again."""
    try:
        return audit_signature()
    except FileNotFoundError as exc:
        log(f"audit: cannot sign the audit's code ({exc}); its runs are recorded as {UNSIGNED}")
        return UNSIGNED


def _judge(spark: SparkSession, lake: Lake, bronze: DataFrame, result: AuditResult, started: float, t0: float,
           sample: int, log: Callable[[str], None]) -> DataFrame:
    """Evaluate the catalogue on `bronze` (the runs of `result`), write the gold tables, fill `result`; returns
    the persisted violations (the caller unpersists them)."""
    result.sources = {r["run_id"]: r["source"] for r in run_sources(bronze).collect()}
    result.not_applicable = {n: runs for n, runs in not_applicable(result.sources).items() if runs}
    nowhere = sum(result.judged_nowhere(n) for n in IMPLEMENTED)
    log(f"audit {result.audit_id}: {len(result.runs)} runs, bronze version {result.bronze_version}, "
        f"{len(IMPLEMENTED) - nowhere} invariants evaluated, {len(NOT_IMPLEMENTED)} not evaluated"
        + (f", {nowhere} not applicable to these runs' sources" if nowhere else "")
        + (f"; {len(result.unchanged)} unchanged runs left out" if result.unchanged else ""))
    forget_judged(lake, result.runs, result.audit_id)
    # The scans of invariants no audited run can show are not run at all.
    judged = [n for n in IMPLEMENTED if not result.judged_nowhere(n)]
    found = audit_violations(bronze, judged, log=log, sources=result.sources).withColumn(
        "audit_id", F.lit(result.audit_id)).persist(
        StorageLevel.MEMORY_AND_DISK)
    for r in found.groupBy("invariant", "severity").count().collect():
        result.counts.setdefault(r["invariant"], {})[r["severity"]] = int(r["count"])
    # The gravest first: info findings (allowed losses) must not crowd errors out of the sample.
    first = found.orderBy(severity_order(), "run_id", "topic", "partition", "event_id", "invariant").limit(sample)
    result.sample = [_sample_line(r.asDict()) for r in first.collect()]
    if result.runs:
        columns = [f.name for f in INVARIANT_VIOLATIONS_SCHEMA]
        lake.overwrite_partitions(GOLD_INVARIANT_VIOLATIONS, found.select(*columns),
                                  [{"run_id": r} for r in result.runs],
                                  metadata={"replog.audit": result.audit_id})
    result.exit_code = exit_code_for(result.errors, result.warnings, result.fail_on)
    result.duration_ms = int((time.perf_counter() - t0) * 1000)
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, result, started), metadata={"replog.audit": result.audit_id})
    return found


def _audit_row(spark: SparkSession, result: AuditResult, started: float) -> DataFrame:
    """The one `gold/audit_runs` row of this audit."""
    invariants = [
        (inv.name, inv.severity, inv.name in IMPLEMENTED and not result.judged_nowhere(inv.name),
         result.counts.get(inv.name, {}).get("error", 0), result.counts.get(inv.name, {}).get(WARNING, 0),
         _note(inv.name, inv.severity, result.counts.get(inv.name, {}).get(INFO, 0), result.applicability(inv.name)))
        for inv in CATALOGUE
    ]
    row = (result.audit_id, int(started * 1000), result.duration_ms, result.bronze_version, result.runs,
           result.fail_on, result.exit_code, result.errors, result.warnings, invariants,
           list(result.not_evaluated), result.infos)
    return spark.createDataFrame([row], to_spark_schema(GOLD_AUDIT_RUNS.schema))


def _note(name: str, severity: str, infos: int, applicability: str | None = None) -> str | None:
    """An invariant's `gold/audit_runs` note: why it was not evaluated (or not on some runs: `applicability`), or
    an info invariant's count (the count struct has error and warning fields only; `infos` is the audit's total)."""
    if name not in IMPLEMENTED:
        return NOT_EVALUATED_NOTE
    notes = [f"info={infos} (allowed loss: counted, never a failure)"] if severity == INFO else []
    if applicability is not None:
        notes.insert(0, applicability)
    return "; ".join(notes) or None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit jobs/audit.py` (the lead wires `replog audit` to `run_audit`)."""
    from jobs.cli import main as cli_main

    return cli_main(["audit", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":
    sys.exit(main())
