"""`run_timelines` end to end on an embedded lake: tables written, reruns incremental and idempotent."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from jobs.lake import EmbeddedLake
from jobs.runs import MissingInputError, UnknownRunError
from jobs.timelines import run_timelines
from schemas.events import BRONZE_EVENTS_SCHEMA
from schemas.spark import to_spark_schema
from schemas.tables import (
    BRONZE_EVENTS,
    SILVER_ISR_CHANGES,
    SILVER_PARTITION_STATE,
    SILVER_REPLICA_OFFSETS,
    SILVER_TIMELINE_WATERMARKS,
)
from tests.spark.conftest import event_rows

SILVER = (SILVER_REPLICA_OFFSETS, SILVER_PARTITION_STATE, SILVER_ISR_CHANGES, SILVER_TIMELINE_WATERMARKS)


def _ingest(spark: SparkSession, lake: EmbeddedLake, rows: list[dict[str, Any]], batch: str) -> None:
    lineage = {"_source_file": f"{batch}.jsonl", "_ingest_batch": batch}
    full = [{**r, **lineage, "_source_line": i + 1} for i, r in enumerate(rows)]
    lake.append(BRONZE_EVENTS, spark.createDataFrame(full, to_spark_schema(BRONZE_EVENTS_SCHEMA)))


def _leader(p: int, eid: int, ts: int) -> dict[str, Any]:
    return dict(event_id=eid, partition=p, event_type="leadership_change", ts_ms=ts, broker_id=1, leader_epoch=1,
                action="become_leader", leader_id=1, partition_epoch=1, isr=[1, 2], replicas=[1, 2], leo=0, hw=0)


def _append(p: int, eid: int, ts: int, leo: int) -> dict[str, Any]:
    return dict(event_id=eid, partition=p, event_type="append", ts_ms=ts, broker_id=1, leader_epoch=1, role="leader",
                base_offset=leo - 1, last_offset=leo - 1, leo=leo)


def test_rerun_recomputes_only_partitions_with_new_events(spark: SparkSession, lake: EmbeddedLake) -> None:
    _ingest(spark, lake, event_rows([_leader(0, 0, 10), _leader(1, 1, 10), _append(0, 2, 20, 1),
                                     _append(1, 3, 20, 1)]), "b1")
    first = run_timelines(spark, lake, log=lambda _: None)
    assert first.partitions_recomputed == 2
    assert "recomputed 2 partitions of 1 runs" in first.summary()
    versions = {s.name: lake.version(s) for s in SILVER}

    # Nothing new: no commit on any table.
    again = run_timelines(spark, lake, log=lambda _: None)
    assert again.runs == [] and "nothing new" in again.summary()
    assert {s.name: lake.version(s) for s in SILVER} == versions

    # New events in partition 1 only: partition 1 recomputed, partition 0's rows kept as they were.
    _ingest(spark, lake, event_rows([_append(1, 4, 30, 2)]), "b2")
    third = run_timelines(spark, lake, log=lambda _: None)
    assert third.partitions_recomputed == 1
    offsets = lake.read(SILVER_REPLICA_OFFSETS)
    got = sorted(tuple(r) for r in offsets.select("partition", "valid_from_ms", "valid_to_ms", "log_end_offset")
                 .collect())
    assert got == [(0, 10, 20, 0), (0, 20, None, 1), (1, 10, 20, 0), (1, 20, 30, 1), (1, 30, None, 2)]
    marks = {(r["partition"], r["max_event_id"]) for r in lake.read(SILVER_TIMELINE_WATERMARKS).collect()}
    assert marks == {(0, 2), (1, 4)}

    # A new run-level config event: every partition of the run is recomputed with min ISR 2.
    cfg = dict(event_id=5, event_type="broker_config", ts_ms=11, broker_id=1, topic=None, partition=None,
               config={"min.insync.replicas": "2"})
    _ingest(spark, lake, event_rows([cfg]), "b3")
    fourth = run_timelines(spark, lake, log=lambda _: None)
    assert fourth.partitions_recomputed == 2
    state = lake.read(SILVER_PARTITION_STATE)
    assert sorted(tuple(r) for r in state.select("partition", "effective_min_isr", "at_min_isr").collect()) == [
        (0, 2, True), (1, 2, True)]


def test_an_unknown_run_or_a_lake_without_bronze_is_an_error_not_nothing_new(spark: SparkSession,
                                                                           lake: EmbeddedLake) -> None:
    with pytest.raises(MissingInputError, match=r"no bronze/replication_events table in lake .*: run `replog ingest`"):
        run_timelines(spark, lake, log=lambda _: None)
    _ingest(spark, lake, event_rows([_leader(0, 0, 10)], run_id="r1"), "b1")
    with pytest.raises(UnknownRunError, match=r"no run 'r9' in bronze/replication_events of lake .*; it holds: r1"):
        run_timelines(spark, lake, runs=["r9"], log=lambda _: None)
    assert not lake.exists(SILVER_TIMELINE_WATERMARKS), "nothing was written"
    assert run_timelines(spark, lake, runs=["r1"], log=lambda _: None).runs == ["r1"]
