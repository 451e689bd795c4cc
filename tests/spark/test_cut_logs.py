"""Logs that start mid-run, as collected broker logs always do: every transform and the audit still run.

A simulated run with a leader failover is cut at 40 % of its span (the first events, the brokers' start-up
configs and the first leader elections, are gone), and the cut log goes through the timelines, lag and
audit transforms. Nothing may fail (Spark runs with ANSI on: an out-of-range array index or an overflow
fails the job), and no interval may start before the first event the log holds. (The ISR look-up that
failed on a log cut before a partition's first state is pinned by a hand-built case in `test_lag.py`:
simulated cuts of every shipped scenario at 20-80 % did not reach it.)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

import jobs.invariants as inv
from jobs.transforms.lag import follower_lag, lag_incidents, lag_summary, run_bounds
from jobs.transforms.timelines import isr_changes, partition_state, replica_offsets
from replication_core.sim.cli import load_scenario, simulate
from schemas.events import EVENT_SCHEMA
from schemas.spark import to_spark_schema

SCENARIO = Path(__file__).resolve().parents[2] / "conf" / "scenarios" / "kip-279-fast-failover.yaml"


@pytest.fixture(scope="module")
def cut(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[DataFrame, int]:
    """The cut run's events and the timestamp of its first event."""
    root = tmp_path_factory.mktemp("cut")
    simulate(load_scenario(SCENARIO), root / "sim")
    full = pa.concat_tables([pq.read_table(f) for f in sorted((root / "sim").rglob("*.parquet"))])
    lo, hi = pc.min(full["ts_ms"]).as_py(), pc.max(full["ts_ms"]).as_py()
    kept = full.filter(pc.greater_equal(full["ts_ms"], lo + (hi - lo) * 2 // 5))
    assert 0 < kept.num_rows < full.num_rows
    pq.write_table(kept, root / "cut.parquet")
    events = spark.read.schema(to_spark_schema(EVENT_SCHEMA)).parquet(str(root / "cut.parquet"))
    return events, pc.min(kept["ts_ms"]).as_py()


def test_the_timelines_of_a_cut_log_start_with_it(cut: tuple[DataFrame, int]) -> None:
    events, first = cut
    for name, table in [("replica_offsets", replica_offsets(events)), ("partition_state", partition_state(events))]:
        assert table.count() > 0, name
        assert table.where(f"valid_from_ms < {first}").count() == 0, name
    # Before the cut log names a partition's leader, whether it is offline is unknown (null), not true.
    state = partition_state(events)
    assert state.where("leader_id IS NULL AND offline").count() == state.where("offline").count()
    assert isr_changes(events).where(f"coalesce(proposed_ms, resolved_ms) < {first}").count() == 0


def test_lag_and_the_audit_run_on_a_cut_log(cut: tuple[DataFrame, int]) -> None:
    events, first = cut
    fl = follower_lag(events)
    assert fl.where(f"valid_from_ms < {first}").count() == 0
    ic, ps = isr_changes(events), partition_state(events)
    incidents = lag_incidents(fl, ic, ps, events)
    summary = lag_summary(ps, ic, fl, incidents, run_bounds(events))
    assert incidents.where(f"start_ms < {first}").count() == 0
    assert summary.count() > 0
    # Replaying a log without its beginning may report violations; what matters here is that it runs.
    inv.evaluate(events).count()
