"""A seeded lag campaign outside the test suite: `python -m tests.spark.lag_campaign --seeds 8000-8099 --wide`.

Simulates one run per seed (`tests.sim.campaign`'s shapes), then one ingest, `replog timelines` and `replog lag`
over all of them in a fresh lake, and prints the verdicts of `gold/lag_incidents`. A `premature` verdict is a
shrink of a follower that was not lagging: the engine shrank too early or the lag job judged the shrink wrongly,
so each one is printed and the exit status is 1. `late` and `missing` are reported, not failed: a leader's GC
pause or disk stall holds back its `isr-expiration` task, as in Kafka. A campaign like this found the premature
verdicts that `tests/spark/test_lag.py` pins (a leader back from a pause that appends and shrinks in the same
millisecond; with `--deep`, shrinks of followers that never caught up and so report lcu 0).
Exit status: 0 when no verdict is premature, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import functions as F

from jobs.config import load_config
from jobs.ingest import run_ingest
from jobs.lag import run_lag
from jobs.lake import EmbeddedLake
from jobs.session import build_spark
from jobs.timelines import run_timelines
from replication_core.sim.cli import simulate
from schemas.tables import GOLD_LAG_INCIDENTS
from tests.sim.campaign import add_shape_arguments, scenario_maker

SHOWN = 20
"""At most this many premature incidents are printed in full."""


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; print the verdict counts and every premature incident (up to `SHOWN`)."""
    parser = argparse.ArgumentParser(prog="python -m tests.spark.lag_campaign", description=__doc__.split("\n")[0])
    add_shape_arguments(parser)
    parser.add_argument("--work", type=Path, help="keep the landing files and the lake here (default: a temp dir)")
    parser.add_argument("--config", default="conf/local.yaml", help="replog config of the Spark session")
    args = parser.parse_args(argv)
    make = scenario_maker(args)
    work = args.work or Path(tempfile.mkdtemp(prefix="replog-lag-campaign-"))
    t0 = time.monotonic()
    for seed in args.seeds:
        simulate(make(seed), work / "landing" / f"s{seed}")
    print(f"simulated {len(args.seeds)} runs into {work / 'landing'} ({time.monotonic() - t0:.0f} s)", flush=True)
    spark = build_spark(load_config(args.config).spark)
    lake = EmbeddedLake(spark, str(work / "lake"))
    t1 = time.monotonic()
    quiet = lambda _line: None  # noqa: E731 - the jobs' own progress lines are not this tool's output
    run_ingest(spark, lake, str(work / "landing"), log=quiet)
    run_timelines(spark, lake, log=quiet)
    run_lag(spark, lake, log=quiet)
    print(f"ingest + timelines + lag: {time.monotonic() - t1:.0f} s", flush=True)
    incidents = lake.read(GOLD_LAG_INCIDENTS)
    # One row per verdict: small whatever the campaign's size.
    counts = {r["verdict"]: r["count"] for r in incidents.groupBy("verdict").count().collect()}
    print("verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    premature = incidents.where(F.col("verdict") == "premature").orderBy("run_id", "start_ms")
    for r in premature.limit(SHOWN).collect():
        print(f"premature: {r['run_id']} {r['topic']}-{r['partition']} follower {r['follower_id']} leader "
              f"{r['leader_id']} from {r['start_ms']} to {r['end_ms']}, shrink at {r['shrink_ms']}")
    return 1 if counts.get("premature") else 0


if __name__ == "__main__":
    sys.exit(main())
