"""Increments against one pass, outside the test suite: `python -m tests.spark.increments_campaign --seeds 700-704`.

A scheduled audit ingests a run's files as they land and runs timelines, lag and audit after each batch; once every
file has landed, the lake must hold what one ingest and one pass of each job over all of them give. For each seed
(`tests.sim.campaign`'s shapes) the run's event files, rolled every `--per-file` events, land in `--steps` parts,
each part followed by the three jobs, in one lake; all of them land at once in another. Every table the jobs write is
then compared row for row (lineage, audit ids and map order aside). With `--logs`, each run is also rendered as the
broker logs Kafka would print (`tests/spark/kafka_log_render.py`; Kafka 3.6 with the controller's log, and 2.4) and
each log file is cut at the same instants into rolled hour files, the older landing first: the ingests of the parts
must give the bronze of one ingest of all, but for the epochs a controller's undated election line borrows
(`without_lent_epochs` says why). Session 50's first run of it found a quiet hour's `server.log` whose lines name no
broker (`jobs.broker_logs._with_rolled_log_broker`) and a controller's election line taken for the restatement of
another election's line in bronze (`_unrepeated_elections`).
Exit status: 0 when every table agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from jobs.audit import run_audit
from jobs.broker_logs import BrokerLogOptions
from jobs.config import load_config
from jobs.ingest import run_ingest
from jobs.lag import run_lag
from jobs.lake import EmbeddedLake
from jobs.session import build_spark
from jobs.timelines import run_timelines
from replication_core.checker.reader import MANIFEST, read_events
from replication_core.sim.cli import simulate
from schemas.audit import GOLD_INVARIANT_VIOLATIONS
from schemas.tables import (
    BRONZE_EVENTS,
    BRONZE_QUARANTINE,
    GOLD_LAG_INCIDENTS,
    GOLD_LAG_SUMMARY,
    SILVER_FOLLOWER_LAG,
    SILVER_ISR_CHANGES,
    SILVER_PARTITION_STATE,
    SILVER_REPLICA_OFFSETS,
    TableSpec,
)
from tests.sim.campaign import add_shape_arguments, scenario_maker
from tests.spark.kafka_log_render import render

TABLES: tuple[TableSpec, ...] = (BRONZE_EVENTS, BRONZE_QUARANTINE, SILVER_REPLICA_OFFSETS, SILVER_PARTITION_STATE,
                                 SILVER_ISR_CHANGES, SILVER_FOLLOWER_LAG, GOLD_LAG_INCIDENTS, GOLD_LAG_SUMMARY,
                                 GOLD_INVARIANT_VIOLATIONS)
"""What the jobs write and a scheduled audit reads: compared between the increments and the one pass."""
ASIDE = frozenset({"_source_file", "_source_line", "_ingest_batch", "audit_id", "event_id"})
"""Columns that say how a row got in (which batch, file, audit) rather than what it says; `event_id` is numbered in
arrival order for log lines (events from files keep the engine's, and each row still matches on everything else)."""
LOG_STYLES = (("3.6", True), ("2.4", True))
"""The broker logs rendered with `--logs`: (Kafka version form, with the controller's log)."""
SHOWN = 5
"""Rows of a difference printed, each way."""

Log = Callable[[str], None]


def _quiet(_line: str) -> None:
    """The jobs' own progress lines are not this tool's output."""


def comparable(df: DataFrame) -> DataFrame:
    """`df` without the `ASIDE` columns, each map as its sorted entries (set operations do not take maps)."""
    cols = [c for c in df.columns if c not in ASIDE]
    return df.select(*[F.array_sort(F.map_entries(c)).alias(c) if isinstance(df.schema[c].dataType, MapType)
                       else F.col(c) for c in cols])


def without_lent_epochs(df: DataFrame) -> DataFrame:
    """Bronze with no leader epoch on the elections a controller's line told without one (no partition epoch, told by
    another broker than the leader), which it may borrow from the leader's RECOVERING lines of the same batch only
    when they are unambiguous (`jobs.broker_logs._unrepeated_elections`). A batch that ends before a second election
    of the leader within `RESTATE_WINDOW_MS` lends what one pass over both, seeing the ambiguity, does not: the
    increments then know more, and this difference is by design."""
    told = ((F.col("event_type") == "leader_election") & F.col("partition_epoch").isNull()
            & ~F.coalesce(F.col("broker_id") == F.col("leader_id"), F.lit(False)))
    return df.withColumn("leader_epoch", F.when(~F.coalesce(told, F.lit(False)), F.col("leader_epoch")))


def differences(parts: EmbeddedLake, whole: EmbeddedLake, tables: tuple[TableSpec, ...], label: str,
                log: Log = print, prepare: Callable[[DataFrame], DataFrame] = lambda df: df) -> int:
    """Print, per table, the rows only one lake holds (each table through `prepare` first); the number of tables
    that differ."""
    differ = 0
    for spec in tables:
        if not parts.exists(spec) and not whole.exists(spec):
            continue
        a, b = comparable(prepare(parts.read(spec))), comparable(prepare(whole.read(spec)))
        only_parts, only_whole = a.exceptAll(b), b.exceptAll(a)
        n_parts, n_whole = only_parts.count(), only_whole.count()
        if n_parts or n_whole:
            differ += 1
            log(f"{label}: {spec.name} differs: {n_parts} row(s) only after the increments, {n_whole} only after "
                "one pass")
            for name, rows in (("increments", only_parts), ("one pass", only_whole)):
                for r in rows.limit(SHOWN).collect():
                    log(f"  {name}: {r.asDict()}")
        else:
            log(f"{label}: {spec.name} agrees ({a.count()} rows)")
    return differ


def _land(files: list[Path], source: Path, landing: Path) -> None:
    for f in files:
        target = landing / f.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)


def _jobs(spark: SparkSession, lake: EmbeddedLake) -> None:
    run_timelines(spark, lake, log=_quiet)
    run_lag(spark, lake, log=_quiet)
    run_audit(spark, lake, log=_quiet)


def event_files_campaign(spark: SparkSession, runs: Path, work: Path, steps: int, log: Log = print) -> int:
    """Every run below `runs` landed in `steps` parts, the jobs after each, against one pass: tables that differ."""
    source_files = {run: sorted(p for p in run.rglob("*") if p.is_file() and p.name != MANIFEST)
                    for run in sorted(runs.iterdir())}
    parts = EmbeddedLake(spark, str(work / "lake-parts"))
    landing = work / "landing-parts"
    for k in range(1, steps + 1):
        for run, files in source_files.items():
            done, upto = len(files) * (k - 1) // steps, len(files) * k // steps
            _land(files[done:upto], runs, landing)
            if k == steps:  # the manifest is written when the run ends
                _land([run / MANIFEST], runs, landing)
        run_ingest(spark, parts, str(landing), log=_quiet)
        _jobs(spark, parts)
        log(f"part {k}/{steps} landed and processed")
    whole = EmbeddedLake(spark, str(work / "lake-whole"))
    run_ingest(spark, whole, str(runs), log=_quiet)
    _jobs(spark, whole)
    return differences(parts, whole, TABLES, "event files", log)


def _ts_ms(record: str) -> int:
    """The millisecond of the day a rendered log record is stamped with (enough to order one run's records)."""
    stamp = record[1:24] if record.startswith("[") else record[:23]
    hms, millis = stamp[11:19], stamp[20:23]
    h, m, s = (int(x) for x in hms.split(":"))
    return ((h * 60 + m) * 60 + s) * 1000 + int(millis)


def _records(text: str) -> list[str]:
    """The log's records: a line with its continuation lines (an exception's class on the line after it)."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if out and not (line.startswith("[") or line[:4].isdigit()):
            out[-1] += line
        else:
            out.append(line)
    return out


def logs_campaign(spark: SparkSession, runs: Path, work: Path, steps: int, log: Log = print) -> int:
    """Each run's rendered broker logs landed as rolled files in `steps` parts against one ingest: tables that
    differ."""
    differ = 0
    for run in sorted(runs.iterdir()):
        events = list(read_events(run))
        for style, controller_log in LOG_STYLES:
            files, _ = render(events, style, controller_log)
            stamps = sorted(_ts_ms(r) for text in files.values() for r in _records(text))
            cuts = [stamps[len(stamps) * k // steps] for k in range(1, steps)] + [1 << 62]
            base = work / f"logs-{run.name}-{style}"
            whole_dir, parts_dir = base / "whole", base / "parts"
            options = BrokerLogOptions(f"{run.name}-{style}")
            parts = EmbeddedLake(spark, str(base / "lake-parts"))
            for k, cut in enumerate(cuts):
                low = cuts[k - 1] if k else -1
                for name, text in files.items():
                    chunk = "".join(r for r in _records(text) if low <= _ts_ms(r) < cut)
                    # The current file takes the last part; the earlier parts are its rolled hours.
                    rolled = name if k == len(cuts) - 1 else f"{name}.2024-05-14-{k:02d}"
                    if chunk:
                        for folder in (whole_dir, parts_dir):
                            folder.mkdir(parents=True, exist_ok=True)
                            (folder / rolled).write_text(chunk, encoding="utf-8")
                if parts_dir.exists():
                    run_ingest(spark, parts, str(parts_dir), log=_quiet, logs=options)
            whole = EmbeddedLake(spark, str(base / "lake-whole"))
            run_ingest(spark, whole, str(whole_dir), log=_quiet, logs=options)
            differ += differences(parts, whole, (BRONZE_EVENTS,), f"logs {run.name} {style}", log,
                                  without_lent_epochs)
            differ += differences(parts, whole, (BRONZE_QUARANTINE,), f"logs {run.name} {style}", log)
    return differ


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; print each table's verdict and the rows of any difference."""
    parser = argparse.ArgumentParser(prog="python -m tests.spark.increments_campaign",
                                     description=__doc__.split("\n")[0])
    add_shape_arguments(parser)
    parser.add_argument("--steps", type=int, default=3, help="parts each run lands in (default 3)")
    parser.add_argument("--per-file", type=int, default=1500, help="events per event file (default 1500)")
    parser.add_argument("--logs", action="store_true", help="also the runs' broker logs, cut into rolled files")
    parser.add_argument("--work", type=Path, help="keep the files and the lakes here (default: a temp dir)")
    parser.add_argument("--config", default="conf/local.yaml", help="replog config of the Spark session")
    args = parser.parse_args(argv)
    if args.steps < 2 or args.per_file < 1:
        parser.error(f"--steps must be >= 2 and --per-file >= 1, got {args.steps} and {args.per_file}")
    make = scenario_maker(args)
    work = args.work or Path(tempfile.mkdtemp(prefix="replog-increments-"))
    t0 = time.monotonic()
    for seed in args.seeds:
        sc = make(seed)
        simulate(replace(sc, writer=replace(sc.writer, max_events_per_file=args.per_file)), work / "runs" / f"s{seed}")
    print(f"simulated {len(args.seeds)} runs into {work / 'runs'} ({time.monotonic() - t0:.0f} s)", flush=True)
    spark = build_spark(load_config(args.config).spark)
    differ = event_files_campaign(spark, work / "runs", work, args.steps)
    if args.logs:
        differ += logs_campaign(spark, work / "runs", work, args.steps)
    print(f"{differ} table(s) differ ({time.monotonic() - t0:.0f} s)", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
