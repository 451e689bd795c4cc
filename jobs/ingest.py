"""Ingest landing files into `bronze/replication_events`, bad records into `bronze/quarantine`.

    replog ingest --landing DIR [--lake DIR] [--config FILE]
    replog ingest --source kafka-logs --landing DIR [--run-id ID] [--log-timezone TZ]   (jobs.broker_logs)
    ./spark-submit.sh ingest --landing DIR

Exactly-once per landing file: each file's identity (path, size, mtime) is a Delta app
transaction committed atomically with its records, so a rerun skips files already ingested and a
run after new files arrive reads only those. Quarantine is committed before bronze: if the job
dies between the two commits, the rerun finds the files done in quarantine but not in bronze and
completes bronze alone; if it dies before either, nothing is visible and the rerun does it all.

Counts reconcile: records read = kept + quarantined, where quarantined includes duplicates
(an event whose (run_id, event_id) was already kept, in this batch or an earlier one).

Two paths write bronze's files, committed together: landing files in which no record may break a
rule are rewritten whole by Arrow in Spark tasks (`jobs.arrow_ingest`); every other file goes through
Spark's per-record validation (`jobs.landing` + `jobs.validate`), which names each bad record's reason.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F

from jobs.arrow_ingest import ArrowPass, RunSegment, arrow_pass, left_summary, segments_repeat
from jobs.broker_logs import BrokerLogOptions, read_broker_logs
from jobs.crash_context import earlier_context
from jobs.lake import CommitResult, Lake, StagedWrite
from jobs.landing import (
    BROKER_LOG,
    LandingFile,
    discover,
    failed_read_file,
    is_compressed_log,
    read_jsonl,
    read_parquet,
    record_keys,
    unopenable_by_spark,
    unreadable_data,
    unreadable_files,
    unreadable_what,
)
from jobs.session import event_cache_level, sql_conf
from jobs.validate import DUPLICATE, classify, reason_codes
from schemas.events import BRONZE_EVENTS_SCHEMA, SchemaVersionError
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE

EVENT_FILES = "*.jsonl / *.parquet"
LOG_FILES = "Kafka log (*.log, *.log.*, also .gz / .bz2 / .zst)"

BROADCAST_DUPLICATES = 200_000
"""Up to this many duplicate records are broadcast to the join that marks them (a few MB)."""


@dataclass
class IngestResult:
    """What one ingest run did."""

    batch_id: str | None
    files_seen: int
    files_ingested: int
    read: int = 0
    kept: int = 0
    quarantined: int = 0
    duplicates: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    bronze_version: int | None = None
    quarantine_version: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    landing: str = ""
    ignored: list[str] = field(default_factory=list)
    whole_files: int = 0
    """Files the whole-file path (`jobs.arrow_ingest`) rewrote: no record in them broke a rule."""
    task_seconds: dict[str, float] = field(default_factory=dict)
    """The whole-file path's tasks: seconds reading, screening and writing, summed over files (in parallel)."""
    wanted: str = EVENT_FILES
    """The files this ingest looks for, as its messages name them."""

    @property
    def reconciles(self) -> bool:
        """read = kept + quarantined, and the committed files hold exactly those records."""
        return self.read == self.kept + self.quarantined and not self.mismatches

    def summary(self) -> str:
        """The lines printed at the end of a run."""
        if not self.files_seen:
            return (f"ingest: nothing to do: no {self.wanted} files under {self.landing or 'the landing folder'}"
                    + (f" ({len(self.ignored)} other file(s) ignored: {_some(self.ignored)})" if self.ignored else ""))
        if not self.files_ingested:
            return f"ingest: nothing new ({self.files_seen} landing files, all already ingested)"
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(self.by_reason.items())) or "none"
        return (
            f"ingest {self.batch_id}: {self.files_ingested} new of {self.files_seen} landing files\n"
            f"  records read {self.read} = kept {self.kept} + quarantined {self.quarantined}"
            f" (of which duplicates {self.duplicates})  [{'reconciled' if self.reconciles else 'MISMATCH'}]\n"
            f"  quarantine reasons: {reasons}\n"
            + (f"  {self.whole_files} file(s) passed the whole-file screen and were rewritten by Arrow\n"
               if self.whole_files else "")
            + "".join(f"  MISMATCH {m}\n" for m in self.mismatches)
            + f"  bronze/replication_events version {self.bronze_version}, "
            f"bronze/quarantine version {self.quarantine_version}"
        )


def _some(paths: Sequence[str], shown: int = 3) -> str:
    return ", ".join(paths[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def batch_id_for(files: Sequence[LandingFile]) -> str:
    """A deterministic id for a set of files: a resumed run gets the id of the run it resumes."""
    h = hashlib.sha256("\n".join(sorted(f.key.app_id for f in files)).encode()).hexdigest()
    return f"ingest-{h[:16]}"


LogReader = Callable[[Sequence[str]], DataFrame]
"""Reads Kafka log files (paths) into candidate records: `jobs.broker_logs.read_broker_logs` bound to a run."""


def read_candidates(spark: SparkSession, files: Sequence[LandingFile],
                    broken: Mapping[str, str] | None = None, read_logs: LogReader | None = None) -> DataFrame:
    """Every record of `files` in the candidate shape of `jobs.landing`; `broken` files (path -> reason) become
    one unreadable-file record each; Kafka log files are read by `read_logs`."""
    broken = broken or {}
    jsonl = read_jsonl(spark, [f for f in files if f.kind == "jsonl" and f.path not in broken])
    parquet, unreadable = read_parquet(spark, [f for f in files if f.kind == "parquet"], broken)
    unreadable += [(f.path, broken[f.path]) for f in files if f.kind in ("jsonl", BROKER_LOG) and f.path in broken]
    out = jsonl.unionByName(parquet)
    logs = [f.path for f in files if f.kind == BROKER_LOG and f.path not in broken]
    if logs:
        if read_logs is None:
            raise ValueError(f"{len(logs)} Kafka log files but no log reader: ingest them with --source kafka-logs")
        out = out.unionByName(read_logs(logs))
    return out.unionByName(unreadable_files(spark, unreadable)) if unreadable else out


def duplicate_flags(verdicts: DataFrame, existing: DataFrame) -> DataFrame:
    """(file, line, reason) of every good record whose (run_id, event_id) is already kept.

    `verdicts` holds the candidates' key columns and reason codes. Within the batch the first
    occurrence (by file, then line) is kept; against `existing` (the bronze rows of the same runs)
    every occurrence is a duplicate, and a record both repeated in the batch and already in bronze
    is reported as the latter. One window over the good records and bronze's keys, partitioned by
    key: a single shuffle, where a join per rule and an aggregate over their union ran one Spark job
    per stage (the exact check runs for a handful of records, where each job is most of the cost).
    """
    line_type = verdicts.schema["_source_line"].dataType
    good = verdicts.where(F.col("_reason_code").isNull()).select(
        "run_id", "event_id", "_source_file", "_source_line", F.lit(False).alias("_in_bronze")
    )
    kept = existing.select(
        "run_id", "event_id", F.lit(None).cast("string").alias("_source_file"),
        F.lit(None).cast(line_type).alias("_source_line"), F.lit(True).alias("_in_bronze"),
    )
    by_key = Window.partitionBy("run_id", "event_id")
    here = F.struct("_source_file", "_source_line")
    # Bronze's rows only take part where the key is in bronze, and those records get the bronze reason.
    first = F.min(here).over(by_key)
    key = F.concat(F.lit("(run_id="), F.col("run_id"), F.lit(", event_id="), F.col("event_id").cast("string"))
    location = F.concat_ws(":", "_first._source_file", F.col("_first._source_line").cast("string"))
    dup = (
        F.when(F.col("_old"), F.concat(F.lit("duplicate event "), key, F.lit(") is already in bronze")))
        .when(here != F.col("_first"),
              F.concat(F.lit("duplicate event "), key, F.lit(") first seen at "), location))
    )
    return (
        good.unionByName(kept)
        .select("*", first.alias("_first"), F.bool_or("_in_bronze").over(by_key).alias("_old"))
        .where(~F.col("_in_bronze"))
        .select("_source_file", "_source_line", dup.alias("_dup"))
        .where(F.col("_dup").isNotNull())
    )


def mark_duplicates(classified: DataFrame, dups: DataFrame, broadcast: bool) -> DataFrame:
    """Reclassify the records listed in `dups` (see `duplicate_flags`) as duplicates."""
    small = F.broadcast(dups) if broadcast else dups
    joined = classified.join(small, ["_source_file", "_source_line"], "left")
    return joined.select(
        *[c for c in classified.columns if c not in ("_reason", "_reason_code")],
        F.coalesce(F.col("_dup"), F.col("_reason")).alias("_reason"),
        F.when(F.col("_dup").isNotNull(), F.lit(DUPLICATE)).otherwise(F.col("_reason_code")).alias("_reason_code"),
    )


def _check_written(result: IngestResult, commit: CommitResult | None, expected: int | None) -> None:
    """Record the rows `commit` added (counted in its files' footers) and whether they are `expected`.

    The counts come from the first pass, the rows from the files the writes produced: two
    independent tallies of the same records. `expected` is None where this run wrote only part of
    the batch to the table (a resumed run), which the counts do not describe.
    """
    if commit is None or commit.rows_added is None or commit.skipped:
        return
    result.written[commit.table] = commit.rows_added
    if expected is not None and commit.rows_added != expected:
        result.mismatches.append(f"{commit.table}: {commit.rows_added} rows committed, {expected} counted")


def _file_filter(files: Sequence[LandingFile]) -> F.Column:
    return F.col("_source_file").isin(*[f.path for f in files]) if files else F.lit(False)


def suspect_keys(keys: DataFrame, existing: DataFrame) -> DataFrame:
    """The (run_id, event_id) keys that can be duplicates: seen twice in the batch, or already in bronze.

    One hash aggregate over the batch's keys and the existing keys of the same runs; a superset of
    the duplicates (it does not know which records validation keeps), usually empty.
    """
    tagged = keys.where(F.col("run_id").isNotNull() & F.col("event_id").isNotNull()).select(
        "run_id", "event_id", F.lit(1).alias("_in_batch"), F.lit(0).alias("_in_bronze")
    ).unionByName(existing.select("run_id", "event_id", F.lit(0).alias("_in_batch"), F.lit(1).alias("_in_bronze")))
    counted = tagged.groupBy("run_id", "event_id").agg(
        F.sum("_in_batch").alias("_n"), F.max("_in_bronze").alias("_old")
    )
    return counted.where((F.col("_n") > 1) | ((F.col("_n") > 0) & (F.col("_old") > 0))).select("run_id", "event_id")


@dataclass(frozen=True)
class RunKeys:
    """What the batch's keys say about one run: whether an event id repeats, and the ids' range."""

    run_id: str
    repeated: bool
    first_event_id: int
    last_event_id: int


def run_keys(keys: DataFrame) -> list[RunKeys]:
    """One `RunKeys` per run among `keys` (the (run_id, event_id) pairs of a batch), from one job.

    A hash aggregate per key, then one per run over its result: the only rows collected are one per
    run. Keys with a null part are left out, as `suspect_keys` leaves them out: by conditional
    aggregates and on the driver, not by a filter, which the optimiser would push below the key
    parse of JSON Lines, parsing each line again for every column it tests.
    """
    per_key = keys.groupBy("run_id", "event_id").agg(F.count(F.lit(1)).alias("_n"))
    per_run = per_key.groupBy("run_id").agg(
        F.max(F.when(F.col("event_id").isNotNull(), F.col("_n"))).alias("n"),
        F.min("event_id").alias("first"),
        F.max("event_id").alias("last"),
    )
    return [
        RunKeys(r["run_id"], r["n"] > 1, r["first"], r["last"])
        for r in per_run.collect()
        if r["run_id"] is not None and r["n"] is not None
    ]


def bronze_in_range(lake: Lake, runs: Sequence[RunKeys]) -> DataFrame:
    """The bronze rows whose event id lies in its run's range of `runs`: the only ones a key can match.

    Only the runs' partitions are read. A later batch of the same runs (ids past those already
    ingested) overlaps none of bronze, and the range is pushed down to the Parquet reader, which
    skips row groups by their statistics.
    """
    existing = lake.read(BRONZE_EVENTS, [{"run_id": r.run_id} for r in runs])
    if not runs:
        return existing.limit(0)
    in_range = reduce(Column.__or__, [
        (F.col("run_id") == r.run_id) & F.col("event_id").between(r.first_event_id, r.last_event_id) for r in runs
    ])
    return existing.where(in_range)


def _observed_counts(final: DataFrame) -> tuple[DataFrame, Observation]:
    """`final` with metrics collected by whichever action reads it: records per reason code, newer majors."""
    obs = Observation("ingest_counts")
    code = F.col("_reason_code")
    metrics = [
        F.count(F.lit(1)).alias("read"),
        F.count(code).alias("bad"),
        F.count(F.when(F.col("_newer_major"), 1)).alias("newer"),
        F.min(F.when(F.col("_newer_major"), F.col("_source_file"))).alias("newer_example"),
        *[F.count(F.when(code == c, 1)).alias(f"code:{c}") for c in reason_codes()],
    ]
    return final.observe(obs, *metrics), obs


def run_ingest(
    spark: SparkSession,
    lake: Lake,
    landing: str,
    log: Callable[[str], None] = print,
    whole_files: bool = True,
    logs: BrokerLogOptions | None = None,
) -> IngestResult:
    """Ingest what is new in `landing`; see the module docstring for the guarantees.

    With `whole_files` (config `ingest.whole_files`), landing files (Parquet and JSON Lines) in which no
    record may break a rule are first rewritten into bronze by Arrow in Spark tasks (`jobs.arrow_ingest`);
    the rest go through the Spark pass described next, and both are committed together.

    With `logs`, the landing folder holds real Kafka broker logs (`*.log`, `*.log.*`), read as one run by
    `jobs.broker_logs`; they always take the Spark pass.

    The records are read in full once in the common case: one pass validates every record, writes
    the kept ones (uncommitted) and counts all of them as it goes; then the keys of the files it
    wrote are checked for duplicates (`no_duplicates`). Only when a key repeats or bronze already
    holds one of the batch's keys (rare) are those files dropped and the batch written again, with
    the exact duplicate check in front (`_exact_duplicates`). Quarantined records are written by a
    second pass only when there are any. Both tables are committed after that, quarantine first.
    """
    # Validation is one wide expression per record over a join (line numbers) of a parse: Spark's
    # constraint propagation, inferring filters through that join, grows without bound on it (the
    # driver ran out of heap planning the quarantine write). The inferred filters buy nothing here.
    with sql_conf(spark, {"spark.sql.constraintPropagation.enabled": "false"}):
        broken: dict[str, str] = {}
        while True:
            try:
                return _ingest(spark, lake, landing, log, broken, whole_files, logs)
            except Exception as exc:
                # A Parquet file whose footer reads but whose data does not, or a compressed log
                # whose data breaks off, fails the whole pass, and Spark names it. Quarantine it whole,
                # with any other such file the driver finds, and ingest again: the other files are not
                # held back.
                failed = failed_read_file(exc)
                files = discover(landing, logs=logs is not None)
                done = lake.committed(BRONZE_EVENTS, [f.key for f in files])
                suspects = {f.path: f for f in files
                            if (f.kind == "parquet" or is_compressed_log(f)) and f.key not in done}
                # Only such a pending file named for the first time: a JSON Lines or plain log file
                # Spark could not read (deleted, unreadable) is the job's failure, and so is a second
                # failure.
                if failed is None or failed[0] in broken or failed[0] not in suspects:
                    raise
                found = {failed[0]: f"{unreadable_what(suspects[failed[0]])}: {failed[1]}",
                         **unreadable_data(list(suspects.values()))}
                for kind, what in (("parquet", "Parquet file(s) unreadable past their footer"),
                                   (BROKER_LOG, "compressed log file(s) that do not inflate to their end")):
                    if paths := sorted(p for p in found if suspects[p].kind == kind):
                        log(f"ingest: {len(paths)} {what}, quarantined whole: " + ", ".join(paths))
                broken.update(found)


def _ingest(spark: SparkSession, lake: Lake, landing: str, log: Callable[[str], None],
            broken: Mapping[str, str] | None = None, whole_files: bool = True,
            logs: BrokerLogOptions | None = None) -> IngestResult:
    t0 = time.perf_counter()
    ignored: list[str] = []
    files = discover(landing, ignored, logs=logs is not None)
    keys = [f.key for f in files]
    done_bronze = lake.committed(BRONZE_EVENTS, keys)
    done_quarantine = lake.committed(BRONZE_QUARANTINE, keys)
    for_bronze = [f for f in files if f.key not in done_bronze]
    for_quarantine = [f for f in files if f.key not in done_quarantine]
    pending = [f for f in files if f.key not in done_bronze or f.key not in done_quarantine]
    result = IngestResult(None, len(files), len(pending), landing=landing, ignored=ignored,
                          wanted=EVENT_FILES if logs is None else LOG_FILES)
    if ignored:
        log(f"ingest: {len(ignored)} file(s) ignored, not {result.wanted} files: {_some(ignored)}")
    if not pending:
        return result
    batch = batch_id_for(pending)
    result.batch_id = batch
    broken = {**unopenable_by_spark(pending), **(broken or {})}
    size_mb = sum(f.size for f in pending) / 1e6
    log(f"ingest {batch}: reading {len(pending)} files ({size_mb:.1f} MB) from {landing}")

    persisted: list[DataFrame] = []
    # The log files an earlier batch read: the last lines of some date a crash this batch's files tell of.
    landed = [f.path for f in files if f.kind == BROKER_LOG]
    earlier = [f.path for f in files if f.kind == BROKER_LOG and f.key in done_bronze and f.key in done_quarantine]
    read_logs = _log_reader(spark, lake, logs, persisted, earlier, landed, log)

    def classified_of(some: Sequence[LandingFile]) -> DataFrame:
        return classify(read_candidates(spark, some, broken, read_logs)).withColumn("_ingest_batch", F.lit(batch))

    staged: list[StagedWrite] = []  # written, commit not yet attempted: dropped if the run fails
    try:
        result.seconds["discover"] = time.perf_counter() - t0
        fast = ArrowPass.nothing()
        # Files new to both tables: a resumed run (one table done) takes the Spark path, which counts them.
        eligible = [f for f in pending if whole_files and f.key not in done_bronze and f.key not in done_quarantine
                    and f.path not in broken and f.kind != BROKER_LOG]
        if eligible and lake.stages_files:
            t = time.perf_counter()
            fast = arrow_pass(spark, lake, eligible, batch)
            if fast.staged is not None:
                staged.append(fast.staged)
            result.seconds["whole_files"] = time.perf_counter() - t
            log(f"ingest {batch}: {len(fast.kept)} of {len(eligible)} new files rewritten whole by Arrow"
                + (", the others go through Spark's per-record validation:" if fast.left else ""))
            for line in left_summary(fast.left):
                log(f"  {line}")
        whole = {f.path for f in fast.kept}
        slow = [f for f in pending if f.path not in whole]
        # Planning the per-record validation costs ~0.6 s on the driver even over no files: skipped when
        # the whole-file path took every file (an empty frame stands in where the quarantine needs one).
        classified = classified_of(slow) if slow else None
        final = classified
        b_staged: StagedWrite | None = None
        m: dict[str, Any] = _no_records()
        exact = not for_bronze
        if for_bronze:
            # Optimistic: duplicates are rare, so the one full pass assumes there are none. It writes
            # bronze's files (uncommitted) and counts every record; the keys of what it wrote are then
            # checked, from two columns of its own Parquet instead of a second read of the landing
            # files (for JSON Lines, a second parse of every line). What the whole-file path wrote
            # is checked with it, or, alone, from the id ranges its tasks reported.
            t2 = time.perf_counter()
            if classified is not None:
                t1 = time.perf_counter()
                b_staged, m = _validate_write(lake, classified, [f for f in for_bronze if f.path not in whole],
                                              staged)
                result.seconds["validate_write"] = time.perf_counter() - t1
                _refuse_newer_major(m, classified)
                t2 = time.perf_counter()
                written = lake.join_staged([w for w in (fast.staged, b_staged) if w is not None])
                clean = no_duplicates(lake.read_staged(written), lake)
            else:
                clean = not segments_repeat(fast.segments) and not _bronze_holds_keys_of(
                    lake, _segment_runs(fast.segments), lambda: lake.read_staged(fast.staged))
            result.seconds["duplicate_check"] = time.perf_counter() - t2
            if not clean:
                # A key repeats, or bronze holds one of the batch's keys: the written files are
                # dropped and the whole batch is done again by Spark behind the exact check, which
                # finds which records (if any) are duplicates.
                log(f"ingest {batch}: a key may repeat or be in bronze already; "
                    "writing again behind the exact duplicate check")
                for w in (fast.staged, b_staged):
                    if w is not None:
                        staged.remove(w)
                        lake.discard(w)
                b_staged, fast, exact = None, ArrowPass.nothing(), True
                classified = classified_of(pending)
        if exact:
            if classified is None:
                classified = classified_of(pending)
            t3 = time.perf_counter()
            readable = [f for f in pending if f.path not in broken]
            final = _exact_duplicates(spark, lake, readable, classified, persisted, read_logs)
            b_staged, m = _validate_write(lake, final, for_bronze, staged)
            result.seconds["exact_duplicates_write"] = time.perf_counter() - t3
            _refuse_newer_major(m, classified)
        result.whole_files = len(fast.kept)
        result.task_seconds = fast.task_seconds
        by_code = {c: m[f"code:{c}"] for c in reason_codes()}
        if sum(by_code.values()) != m["bad"]:
            raise AssertionError(f"reason codes counted {sum(by_code.values())} records, {m['bad']} are bad")
        result.read = m["read"] + fast.records
        result.by_reason = {c: n for c, n in by_code.items() if n}
        result.quarantined = m["bad"]
        result.duplicates = by_code[DUPLICATE]
        result.kept = result.read - result.quarantined
        meta = {
            "replog.batch": batch,
            "replog.files": len(pending),
            "replog.records_read": result.read,
            "replog.records_kept": result.kept,
            "replog.records_quarantined": result.quarantined,
            "replog.records_duplicate": result.duplicates,
            "replog.files_whole": result.whole_files,
        }
        t4 = time.perf_counter()
        q = b = None
        if for_quarantine:
            if result.quarantined == 0 and lake.stages_files:
                # Nothing to write: the commit still records the files' idempotency keys.
                q_staged = lake.stage_files(BRONZE_QUARANTINE, lambda _folder: None)
            else:
                if final is None:
                    final = classified_of([])
                bad = final.where(F.col("_reason_code").isNotNull() & _file_filter(for_quarantine))
                # With nothing to write, an empty frame still commits the files' idempotency keys,
                # without a scan of the whole batch to find no rows.
                if result.quarantined == 0:
                    bad = bad.limit(0)
                q_staged = lake.stage(BRONZE_QUARANTINE, bad.select(
                    "_source_file", "_source_line", "raw", F.col("_reason").alias("reason"),
                    F.col("_reason_code").alias("reason_code"), "run_id", "event_id", "_ingest_batch",
                ))
            q = lake.commit_staged(q_staged, keys=[f.key for f in for_quarantine], metadata=meta)
        to_commit = [w for w in (fast.staged, b_staged) if w is not None]
        if to_commit:
            # From here on the files may be in the log: never delete them, whatever happens.
            staged.clear()
            b = lake.commit_staged(lake.join_staged(to_commit), keys=[f.key for f in for_bronze], metadata=meta)
        result.seconds["quarantine_commit"] = time.perf_counter() - t4
        everything = len(pending)
        for commit, files_, expected in ((q, for_quarantine, result.quarantined), (b, for_bronze, result.kept)):
            _check_written(result, commit, expected if len(files_) == everything else None)
    finally:
        # A write that was staged but not committed is dropped: nothing references it.
        for s in staged:
            lake.discard(s)
        for df in persisted:
            df.unpersist()
    result.quarantine_version = q.version if q and q.version is not None else lake.version(BRONZE_QUARANTINE)
    result.bronze_version = b.version if b and b.version is not None else lake.version(BRONZE_EVENTS)
    return result


def _log_reader(spark: SparkSession, lake: Lake, logs: BrokerLogOptions | None, persisted: list[DataFrame],
                earlier: Sequence[str] = (), landed: Sequence[str] = (),
                log: Callable[[str], None] = print) -> LogReader | None:
    """The reader of this ingest's Kafka log files: their events' ids follow those bronze holds for the run, and the
    last lines of the `earlier` files (read by an earlier batch; `landed` are all of them) date a crash where the
    file after one tells of it (`jobs.crash_context`).

    The records of one set of files are read once and kept (`event_cache_level`, appended to `persisted`): the
    full pass, the exact duplicate check's keys and the quarantine pass all ask for them, and each would
    otherwise plan and run the reader's windows over every line of the files again. What is kept is the
    replication lines' records, a small part of a broker's log.
    """
    if logs is None:
        return None
    existing = lake.read(BRONZE_EVENTS, [{"run_id": logs.run_id}]) if lake.exists(BRONZE_EVENTS) else None
    read: dict[tuple[str, ...], DataFrame] = {}

    def read_once(paths: Sequence[str]) -> DataFrame:
        key = tuple(paths)
        if key not in read:
            context = earlier_context(spark, paths, earlier, landed, log) if existing is not None else None
            read[key] = read_broker_logs(spark, paths, logs, existing, context).persist(event_cache_level(spark))
            persisted.append(read[key])
        return read[key]

    return read_once


def _bronze_holds_keys_of(lake: Lake, runs: Sequence[RunKeys], keys: Callable[[], DataFrame]) -> bool:
    """True when bronze holds one of the (run_id, event_id) keys of `keys()`, whose id ranges are `runs`.

    Bronze's rows in the ranges are looked for first (a later batch of an engine run starts past the ids already
    ingested, so there are none, found from row-group statistics); only when there are some are the keys
    matched. A later batch of broker logs lies among bronze's ids in time (another broker's files of the same
    hour), and its ids, numbered after bronze's, share none: without the match every such batch was written twice.
    """
    if not lake.exists(BRONZE_EVENTS):
        return False
    existing = bronze_in_range(lake, runs).select("run_id", "event_id")
    if existing.isEmpty():
        return False
    return not existing.join(keys().select("run_id", "event_id"), ["run_id", "event_id"], "left_semi").isEmpty()


def _no_records() -> dict[str, Any]:
    """The counts `_observed_counts` gives for no records at all."""
    return {"read": 0, "bad": 0, "newer": 0, "newer_example": None, **{f"code:{c}": 0 for c in reason_codes()}}


def _segment_runs(segments: Sequence[RunSegment]) -> list[RunKeys]:
    """One `RunKeys` per run of the whole-file path's segments (no id repeats: `segments_repeat` said so)."""
    runs: dict[str, RunKeys] = {}
    for s in segments:
        r = runs.get(s.run_id)
        runs[s.run_id] = RunKeys(s.run_id, False, s.first_event_id, s.last_event_id) if r is None else RunKeys(
            s.run_id, False, min(r.first_event_id, s.first_event_id), max(r.last_event_id, s.last_event_id))
    return list(runs.values())


def no_duplicates(kept: DataFrame, lake: Lake) -> bool:
    """True when no (run_id, event_id) of `kept` repeats within it or is in bronze already.

    One aggregation of `kept`'s keys (the runs, whether a key repeats, each run's id range), then a
    look for bronze rows in those ranges, which the Parquet reader mostly skips by row-group
    statistics, and only if there are some, a match of the keys (`_bronze_holds_keys_of`). False
    means some kept record is a duplicate; the exact check finds which.
    """
    runs = run_keys(kept.select("run_id", "event_id"))
    if any(r.repeated for r in runs):
        return False
    return not _bronze_holds_keys_of(lake, runs, lambda: kept)


def _validate_write(
    lake: Lake, final: DataFrame, for_bronze: Sequence[LandingFile], staged: list[StagedWrite]
) -> tuple[StagedWrite | None, dict[str, Any]]:
    """The one full pass: validate and count every record of `final`, write the kept ones of
    `for_bronze` as bronze's (uncommitted) files, appended to `staged`; returns them and the counts."""
    counted, obs = _observed_counts(final)
    b_staged = None
    if for_bronze:
        good = counted.where(F.col("_reason_code").isNull() & _file_filter(for_bronze)).select(
            *[f.name for f in BRONZE_EVENTS_SCHEMA])
        b_staged = lake.stage(BRONZE_EVENTS, good)
        staged.append(b_staged)
    else:
        counted.write.format("noop").mode("overwrite").save()
    return b_staged, obs.get


def _refuse_newer_major(m: Mapping[str, Any], classified: DataFrame) -> None:
    """Fail the job (committing nothing) when records need a newer replog (`_observed_counts`' `newer`)."""
    if m["newer"]:
        version = classified.where("_newer_major").select("schema_version").first()[0]
        raise SchemaVersionError(version, where=f"in {m['newer']} records, e.g. {m['newer_example']}")


def _exact_duplicates(
    spark: SparkSession, lake: Lake, pending: Sequence[LandingFile], classified: DataFrame,
    persisted: list[DataFrame], read_logs: LogReader | None = None,
) -> DataFrame:
    """`classified` with every duplicate record reclassified as such (`duplicate_flags`).

    Narrow where it can be: the keys of every landing record (`record_keys`) find the runs and the
    suspects (a key seen twice, or already in bronze); only the records carrying a suspect key get
    their verdicts joined. Frames kept for the rest of the run are appended to `persisted`.
    """
    # Persisted: read (for JSON Lines, parsed) once for the runs and the suspects, and suspect_keys'
    # filter would otherwise be pushed below the key parse, parsing again (see run_keys).
    keys_df = record_keys(spark, pending, read_logs).persist(event_cache_level(spark))
    persisted.append(keys_df)
    runs = run_keys(keys_df)
    existing = bronze_in_range(lake, runs)
    if not any(r.repeated for r in runs) and existing.isEmpty():
        return classified
    suspects = suspect_keys(keys_df, existing).persist(StorageLevel.MEMORY_AND_DISK)
    persisted.append(suspects)
    if not suspects.count():
        return classified
    verdicts = classified.join(suspects, ["run_id", "event_id"], "left_semi").select(
        "run_id", "event_id", "_source_file", "_source_line", "_reason_code")
    dups = duplicate_flags(verdicts, existing).persist(StorageLevel.MEMORY_AND_DISK)
    persisted.append(dups)
    n_dups = dups.count()
    # Duplicates are rare: a few are broadcast to the join that marks them.
    return classified if n_dups == 0 else mark_duplicates(classified, dups, n_dups <= BROADCAST_DUPLICATES)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `replog ingest` and `spark-submit jobs/ingest.py`."""
    from jobs.cli import main as cli_main

    return cli_main(["ingest", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":
    sys.exit(main())
