"""Follower lag, lag incidents and the operator summary (silver/follower_lag, gold/lag_incidents, gold/lag_summary).

    replog lag [--lake DIR] [--config FILE] [--run RUN_ID ...] [--lag-max-ms MS]
    ./spark-submit.sh lag

Reads `bronze/replication_events` and the silver tables of `replog timelines` (run that first);
what the tables mean — lag as Kafka's leader sees it, incidents and their verdicts — is documented in
`jobs.transforms.lag`.

The threshold: replica.lag.time.max.ms in force on the leader (its last `broker_config` event before
the interval), else the run's, else `lag_max_ms` (the job option), else Kafka's default 30000.

Runs are the unit: each run's rows of the three tables are replaced in one commit per table, with
the idempotency key (`replog.lag.v2/<run>/<threshold option>`, the bronze version at which timelines last
rewrote the run). That version grows whenever the run's inputs change, and only then: a rerun with
nothing new skips every run without computing anything, and an ingest of one run recomputes that run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.config import ConfigError
from jobs.lake import IdempotencyKey, Lake
from jobs.runs import require_table, timelined_runs
from jobs.session import event_cache_level
from jobs.transforms.lag import follower_lag, lag_incidents, lag_summary, run_bounds
from schemas.events import EVENT_SCHEMA
from schemas.tables import (
    BRONZE_EVENTS,
    GOLD_LAG_INCIDENTS,
    GOLD_LAG_SUMMARY,
    SILVER_FOLLOWER_LAG,
    SILVER_ISR_CHANGES,
    SILVER_PARTITION_STATE,
    SILVER_TIMELINE_WATERMARKS,
)

OUTPUTS = (SILVER_FOLLOWER_LAG, GOLD_LAG_INCIDENTS, GOLD_LAG_SUMMARY)
APP_ID_PREFIX = "replog.lag.v2/"
"""Idempotency app ids: `<prefix><run>/<threshold option>`. v2 keys carry the run's own timelines stamp (v1
carried a lake-wide sum of versions, which a v2 key must not be compared with)."""


@dataclass
class LagResult:
    """What one `replog lag` run did."""

    bronze_version: int | None
    runs: list[str] = field(default_factory=list)
    runs_skipped: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int | None] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> str:
        """The lines printed at the end of a run."""
        if not self.runs:
            return f"lag: nothing new ({self.runs_skipped} runs already up to date)"
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items())) or "none"
        versions = ", ".join(f"{k} v{v}" for k, v in self.versions.items())
        return (
            f"lag: {len(self.runs)} runs recomputed ({self.runs_skipped} up to date) in {self.seconds:.1f}s\n"
            f"  lag incidents by verdict: {verdicts}\n  tables: {versions}"
        )


def run_lag(
    spark: SparkSession,
    lake: Lake,
    runs: Sequence[str] | None = None,
    lag_max_ms: int | None = None,
    log: Callable[[str], None] = print,
) -> LagResult:
    """Recompute the lag tables of the runs whose inputs changed; see the module docstring."""
    if lag_max_ms is not None and lag_max_ms < 1:
        # Checked before anything is read or written: a 0 or negative threshold would judge every follower
        # lagging and replace the tables with that.
        raise ConfigError(f"lag_max_ms (replica.lag.time.max.ms): expected an integer >= 1, got {lag_max_ms}")
    t0 = time.perf_counter()
    bronze_version = lake.version(BRONZE_EVENTS)
    result = LagResult(bronze_version)
    # The runs the timelines job has processed (its tables are this job's input), or an error naming the
    # job to run first: without them every shrink would be judged missing.
    require_table(lake, BRONZE_EVENTS, "replog ingest")
    runs = timelined_runs(lake, runs)
    # A run's inputs change only when timelines rewrites it (new bronze events of that run), which stamps its
    # watermarks with the bronze version it read: that version, per run, is the run's key. An ingest of
    # another run leaves this one's key, and its lag tables, as they are. One small row per run.
    stamps = {r["run_id"]: int(r["v"]) for r in lake.read(SILVER_TIMELINE_WATERMARKS, [{"run_id": r} for r in runs])
              .groupBy("run_id").agg(F.max("bronze_version").alias("v")).collect()}
    option = "config" if lag_max_ms is None else str(lag_max_ms)
    key_of = {r: IdempotencyKey(f"{APP_ID_PREFIX}{r}/{option}", stamps[r]) for r in runs}
    # One look at each output's commits for all the runs: a call per run reloaded the table's log every time.
    done = [lake.committed(s, list(key_of.values())) for s in OUTPUTS]
    pending = [r for r in runs if any(key_of[r] not in seen for seen in done)]
    result.runs_skipped = len(runs) - len(pending)
    if not pending:
        return result
    result.runs = pending
    log(f"lag: computing {len(pending)} runs")
    parts = [{"run_id": r} for r in pending]
    keys = [key_of[r] for r in pending]
    meta = {"replog.job": "lag", "replog.bronze_version": bronze_version, "replog.lag_max_ms_option": option}

    events = lake.read(BRONZE_EVENTS, parts).select(*EVENT_SCHEMA.names)
    ps = lake.read(SILVER_PARTITION_STATE, parts).persist(StorageLevel.MEMORY_AND_DISK)
    ic = lake.read(SILVER_ISR_CHANGES, parts).persist(StorageLevel.MEMORY_AND_DISK)
    fl = follower_lag(events, lag_max_ms).persist(event_cache_level(spark))
    inc = lag_incidents(fl, ic, ps, events, lag_max_ms).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        summary = lag_summary(ps, ic, fl, inc, run_bounds(events))
        for spec, df in ((SILVER_FOLLOWER_LAG, fl), (GOLD_LAG_INCIDENTS, inc), (GOLD_LAG_SUMMARY, summary)):
            # Runs a crashed earlier attempt already committed to this table are left out: a
            # commit whose keys are partly committed is refused as a concurrent write.
            done = lake.committed(spec, keys)
            todo = [r for r in pending if key_of[r] not in done]
            if not todo:
                result.versions[spec.name] = lake.version(spec)
                continue
            commit = lake.overwrite_partitions(
                spec, df.where(F.col("run_id").isin(todo)), [{"run_id": r} for r in todo],
                keys=[key_of[r] for r in todo], metadata=meta,
            )
            result.versions[spec.name] = commit.version if commit.version is not None else lake.version(spec)
        # A handful of rows: one per verdict.
        result.verdicts = {r["verdict"]: r["n"] for r in inc.groupBy("verdict").agg(F.count(F.lit(1)).alias("n"))
                           .collect()}
    finally:
        for df in (ps, ic, fl, inc):
            df.unpersist()
    result.seconds = time.perf_counter() - t0
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit jobs/lag.py` (the `replog lag` subcommand)."""
    from jobs.cli import main as cli_main

    return cli_main(["lag", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":
    sys.exit(main())
