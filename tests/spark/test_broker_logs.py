# Kafka log lines are long and are quoted whole, as brokers print them.
# ruff: noqa: E501
"""Real Kafka broker logs into replication events (`jobs.broker_logs`, `replog ingest --source kafka-logs`).

Hand-written lines follow the templates of the reference (§6, one per Kafka version range); the expected events
are read off each line by hand. `tests/data/kafka-logs` holds real excerpts (sources in its README).
"""

from __future__ import annotations

import bz2
import gzip
import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import jobs.crash_context as crash_context_module
import jobs.ingest as ingest_module
import jobs.invariants as inv
from jobs.broker_logs import ID_SEQUENCE_BITS, BrokerLogOptions, BrokerLogOptionsError, read_broker_logs
from jobs.crash_context import earlier_lines
from jobs.ingest import run_ingest
from jobs.lake import EmbeddedLake
from jobs.landing import discover, is_broker_log, roll_order, rolled_log_of
from jobs.session import sql_conf
from jobs.validate import classify
from replication_core.checker.catalogue import CATALOGUE, KAFKA_LOG
from replication_core.checker.checker import check_events
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE
from tests.conftest import GENERATED
from tests.spark.kafka_log_render import created_text

REAL = Path(__file__).resolve().parents[1] / "data" / "kafka-logs"
COLUMNS = ("broker_id", "event_type", "topic", "partition", "leader_epoch", "action", "leader_id",
           "partition_epoch", "isr", "old_isr", "adding_replicas", "removing_replicas", "leo", "hw", "isr_state",
           "error", "reason", "truncate_offset")
SCHEMA = ("broker_id int, event_type string, topic string, partition int, leader_epoch int, action string, "
          "leader_id int, partition_epoch int, isr array<int>, old_isr array<int>, adding_replicas array<int>, "
          "removing_replicas array<int>, leo bigint, hw bigint, isr_state string, error string, reason string, "
          "truncate_offset bigint")


def ms(stamp: str, tz: timezone = UTC) -> int:
    """Epoch milliseconds of a log4j timestamp ('2024-05-14 12:51:42,342') in `tz`."""
    return int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=tz).timestamp() * 1000)


def write_logs(folder: Path, files: dict[str, str]) -> list[str]:
    """Write `files` (name -> text) under `folder`; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return [str(folder / name) for name in files]


def parse(spark: SparkSession, paths: list[str], tz: str = "UTC") -> DataFrame:
    """The candidate records of `paths`, validated (`_reason_code` null for a kept event), computed once: a test
    asks several questions of them, and each would otherwise plan and run the reader's deep plan again."""
    return classify(read_broker_logs(spark, paths, BrokerLogOptions("cluster-a", tz))).localCheckpoint(eager=True)


def kept_events(got: DataFrame) -> DataFrame:
    """`parse`'s records as events: without the reader's own columns and the raw line."""
    return got.select(*[c for c in got.columns if not c.startswith("_") and c != "raw"])


def row(**values: Any) -> tuple:
    """An expected row over COLUMNS (unnamed columns null)."""
    return tuple(values.get(c) for c in COLUMNS)


def test_log_file_names() -> None:
    """Kafka's log files and log4j's rolled names are logs; event files and others are not."""
    for name in ("server.log", "state-change.log", "controller.log.2024-05-14-13", "server.log.1", "SERVER.LOG",
                 "server.log.1.gz", "controller.log.2024-05-14-13.gz", "server.log.gz", "server.log.1.bz2",
                 "state-change.log.2024-05-14-13.zst", "server.log.BZ2",
                 # logrotate's dateext, with its default dateformat or an hourly one, and with `extension .log`.
                 "server.log-20240514", "server.log-2024051413.gz", "server-20240514.log", "server.log-2024.05.14"):
        assert is_broker_log(name), name
    for name in ("events.jsonl", "server.log.gz.part", "logs.txt", "catalog", "server.logger", "server.log.tar.gz",
                 "server.log.1.gz.tmp", "server.log.xz", "server.log.1.zip", "server.log.tgz", "server.log.1.tar.bz2",
                 "server.log.part", "server.log-backup", "server.log-"):
        assert not is_broker_log(name), name


def test_compressed_rolled_logs_are_read_and_a_broken_one_is_quarantined_whole(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
    """Rolled logs compressed by gzip, bzip2 or zstd give the events their text gives; one whose compressed data
    breaks off (copied while it was written), or that was never compressed, is one quarantined record with the
    reason, and the others go in (read = kept + quarantined)."""
    plain = parse(spark, write_logs(tmp_path / "plain", ELECTIONS))
    want = sorted(tuple(r) for r in plain.where("_reason_code IS NULL").select(
        "event_id", "event_type", "broker_id", "topic", "partition", "leader_id", "leader_epoch").collect())
    n_plain, n_bad = plain.count(), plain.where("_reason_code IS NOT NULL").count()
    landing = tmp_path / "landing"
    landing.mkdir()
    compress = {".gz": gzip.compress, ".bz2": bz2.compress, ".zst": lambda b: pa.compress(b, "zstd", asbytes=True)}
    for i, (name, text) in enumerate(ELECTIONS.items()):
        suffix = list(compress)[i % len(compress)]
        (landing / f"{name}{suffix}").write_bytes(compress[suffix](text.encode()))
    assert len(ELECTIONS) >= len(compress)  # each format is read
    whole = "".join(ELECTIONS.values()).encode() * 200
    for n, suffix in enumerate(compress, start=2):
        data = compress[suffix](whole)
        (landing / f"server-9.log.{n}{suffix}").write_bytes(data[: len(data) // 2])
    (landing / "server-9.log.5.gz").write_text(ELECTIONS["server-2.log"])  # named .gz, never compressed
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    said: list[str] = []
    result = run_ingest(spark, lake, str(landing), log=said.append, logs=BrokerLogOptions("cluster-a"))
    assert (result.read, result.kept, result.quarantined) == (n_plain + 4, len(want), n_bad + 4) and result.reconciles
    # Spark's failure names one; the driver finds the others before the one retry.
    assert any("4 compressed log file(s) that do not inflate to their end, quarantined whole" in m
               for m in said), said
    got = sorted(tuple(r) for r in lake.read(BRONZE_EVENTS).select(
        "event_id", "event_type", "broker_id", "topic", "partition", "leader_id", "leader_epoch").collect())
    assert got == want
    broken = {Path(r["_source_file"]).name: r["reason"] for r in lake.read(BRONZE_QUARANTINE)
              .where(F.col("_source_file").contains("server-9.log.")).collect()}
    assert sorted(broken) == ["server-9.log.2.gz", "server-9.log.3.bz2", "server-9.log.4.zst", "server-9.log.5.gz"]
    for name, what in (("2.gz", "gzip"), ("3.bz2", "bzip2"), ("4.zst", "zstd"), ("5.gz", "gzip")):
        assert broken[f"server-9.log.{name}"].startswith(f"unreadable {what} data: "), broken


def test_each_message_form_becomes_its_event(spark: SparkSession, tmp_path: Path) -> None:
    """Every form of every message the table reads, one per version range, gives the event read off the line."""
    server = """\
[2024-05-14 12:00:00,001] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)
[2024-05-14 12:00:01,000] INFO [Partition t-3 broker=2] t-3 starts at Leader Epoch 4 from offset 80. Previous Leader Epoch was: 3 (kafka.cluster.Partition)
[2024-05-14 12:00:02,000] INFO [Partition t-3 broker=2] t-3 starts at leader epoch 5 from offset 120 with high watermark 100. Previous leader epoch was 4. (kafka.cluster.Partition)
[2024-05-14 12:00:03,000] INFO [Partition t-3 broker=2] Shrinking ISR from 2,1,3 to 2,1 (kafka.cluster.Partition)
[2024-05-14 12:00:04,000] INFO [Partition t-3 broker=2] ISR updated to [2,1] and zkVersion updated to [7] (kafka.cluster.Partition)
[2024-05-14 12:00:05,000] INFO [Partition t-3 broker=2] Expanding ISR from 2,1 to 2,1,3 (kafka.cluster.Partition)
[2024-05-14 12:00:06,000] INFO [Partition t-3 broker=2] Cached zkVersion [7] not equal to that in zookeeper, skip updating ISR (kafka.cluster.Partition)
[2024-05-14 12:00:07,000] INFO [Partition t-3 broker=2] ISR updated to 2,3 and version updated to [8] (kafka.cluster.Partition)
[2024-05-14 12:00:08,000] INFO [Partition t-3 broker=2] ISR updated to 2,3,1  and version updated to 9 (kafka.cluster.Partition)
[2024-05-14 12:00:09,000] INFO [Partition t-3 broker=2] ISR updated to 2 (under-min-isr) and version updated to 10 (kafka.cluster.Partition)
[2024-05-14 12:00:10,000] INFO [Partition t-3 broker=2] Failed to alter partition to PendingExpandIsr(newInSyncReplicaId=4, sentLeaderAndIsr=LeaderAndIsr(leader=2, leaderEpoch=5, isrWithBrokerEpoch=[], leaderRecoveryState=RECOVERED, partitionEpoch=10), leaderRecoveryState=RECOVERED, lastCommittedState=CommittedPartitionState(isr=Set(2), leaderRecoveryState=RECOVERED)) since the controller rejected the request with INELIGIBLE_REPLICA. Partition state has been reset to the latest committed state CommittedPartitionState(isr=Set(2), leaderRecoveryState=RECOVERED). (kafka.cluster.Partition)
[2024-05-14 12:00:11,000] INFO [Log partition=t-3, dir=/var/kafka] Truncating to 95 has no effect as the largest offset in the log is 94 (kafka.log.Log)
[2024-05-14 12:00:11,400] INFO [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] Truncating partition t-3 to local high watermark 93 (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:11,401] INFO [Log partition=t-3, dir=/var/kafka] Truncating to offset 93 (kafka.log.Log)
[2024-05-14 12:00:12,000] INFO [KafkaServer id=2] Starting controlled shutdown (kafka.server.KafkaServer)
[2024-05-14 12:00:13,000] INFO [KafkaServer id=2] shutting down (kafka.server.KafkaServer)
"""
    state_change = """\
[2024-05-14 12:01:00,000] INFO [Broker id=2] Leader u-0 starts at leader epoch 5 from offset 120 with high watermark 100 ISR [2,1,3] addingReplicas [] removingReplicas []. Previous leader epoch was 4. (state.change.logger)
[2024-05-14 12:01:01,000] INFO [Broker id=2] Leader u-0 with topic id Some(AbCdEfGhIjKlMnOpQrStUv) starts at leader epoch 6 from offset 130 with partition epoch 9, high watermark 120, ISR [2,1,3], adding replicas [4] and removing replicas [3] (under-min-isr). Previous leader Some(2) and previous leader epoch was 5. (state.change.logger)
[2024-05-14 12:01:02,000] INFO [Broker id=2] Follower u-0 starts at leader epoch 7 from offset 130 with high watermark 125. Previous leader epoch was 6. (state.change.logger)
[2024-05-14 12:01:03,000] INFO [Broker id=2] Follower u-0 with topic id Some(AbCdEfGhIjKlMnOpQrStUv) starts at leader epoch 8 from offset 128 with partition epoch 11 and high watermark 125. Current leader is 1. Previous leader epoch was 7. (state.change.logger)
"""
    kraft = """\
2024-05-14T12:02:00.500Z  INFO 2537 --- [main] kafka.server.BrokerServer : [BrokerServer id=3] Transition from STARTING to STARTED
[2024-05-14 12:02:00,900] INFO [ReplicaFetcher replicaId=3, leaderId=1, fetcherId=0] Truncating partition u-0 with TruncationState(offset=90, completed=true) due to leader epoch and offset EpochEndOffset(errorCode=0, partition=0, leaderEpoch=8, endOffset=90) (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:02:01,000] INFO [UnifiedLog partition=u-0, dir=/data] Truncating to offset 90 (kafka.log.UnifiedLog)
[2024-05-14 12:02:02,000] INFO [Partition u-0 broker=3] Shrinking ISR from 3,1,2 to 3. Leader: (highWatermark: 100, endOffset: 120). Out of sync replicas: (brokerId: 1, endOffset: 95, lastCaughtUpTimeMs: 1715688000000) (brokerId: 2, endOffset: unknown, lastCaughtUpTimeMs: unknown). (kafka.cluster.Partition)
[2024-05-14 12:02:03,000] INFO [ReplicaFetcherManager on broker 3] Added fetcher to broker 1 for partitions Map(v-0 -> InitialFetchState(Some(AbCdEfGhIjKlMnOpQrStUv),BrokerEndPoint(id=1, host=kafka1:9092),7,300), v-1 -> InitialFetchState(Some(AbCdEfGhIjKlMnOpQrStUv),BrokerEndPoint(id=1, host=kafka1:9092),2,10)) (kafka.server.ReplicaFetcherManager)
[2024-05-14 12:02:04,000] INFO [ReplicaFetcherManager on broker 3] Added fetcher to broker BrokerEndPoint(id=2, host=kafka2:9092) for partitions Map(v-2 -> (offset=12, leaderEpoch=4)) (kafka.server.ReplicaFetcherManager)
[2024-05-14 12:02:05,000] INFO [ReplicaFetcherManager on broker 3] Added fetcher for partitions List([v-3, initOffset 0 to broker BrokerEndPoint(1,kafka1,9092)] ) (kafka.server.ReplicaFetcherManager)
[2024-05-14 12:02:06,000] INFO [ReplicaAlterLogDirsManager on broker 3] Added fetcher for partitions List() (kafka.server.ReplicaAlterLogDirsManager)
"""
    paths = write_logs(tmp_path, {"server.log": server, "state-change.log": state_change, "server.log.3": kraft})
    got = parse(spark, paths)
    assert got.where("_reason_code IS NOT NULL").count() == 0
    kept = got.orderBy("ts_ms", "partition").select(*COLUMNS)
    isr = "isr_change"
    lead = "leadership_change"
    expected = [
        row(broker_id=2, event_type="broker_lifecycle", action="start"),
        row(broker_id=2, event_type=lead, topic="t", partition=3, leader_epoch=4, action="become_leader",
            leader_id=2, leo=80),
        row(broker_id=2, event_type=lead, topic="t", partition=3, leader_epoch=5, action="become_leader",
            leader_id=2, leo=120, hw=100),
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="shrink", isr=[2, 1],
            old_isr=[2, 1, 3], isr_state="proposed"),
        # A commit's action and old ISR come from the ISR the broker last logged.
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="shrink", isr=[2, 1],
            old_isr=[2, 1, 3], isr_state="committed", partition_epoch=7),
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="expand", isr=[2, 1, 3],
            old_isr=[2, 1], isr_state="proposed"),
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="expand", old_isr=[2, 1],
            isr_state="rejected", error="INVALID_UPDATE_VERSION", reason="reset_to_committed"),
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="update", isr=[2, 3],
            old_isr=[2, 1], isr_state="committed", partition_epoch=8),
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="expand", isr=[2, 3, 1],
            old_isr=[2, 3], isr_state="committed", partition_epoch=9),
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="shrink", isr=[2],
            old_isr=[2, 3, 1], isr_state="committed", partition_epoch=10),
        row(broker_id=2, event_type=isr, topic="t", partition=3, leader_epoch=5, action="expand", isr=[2],
            old_isr=[2], isr_state="rejected", error="INELIGIBLE_REPLICA", reason="reset_to_committed"),
        # The reason of a truncation comes from the fetcher's line about it just before.
        row(broker_id=2, event_type="truncation", topic="t", partition=3, leader_epoch=5, truncate_offset=93,
            reason="high_watermark"),
        row(broker_id=2, event_type="broker_lifecycle", action="controlled_shutdown"),
        row(broker_id=2, event_type="broker_lifecycle", action="shutdown"),
        row(broker_id=2, event_type=lead, topic="u", partition=0, leader_epoch=5, action="become_leader",
            leader_id=2, isr=[2, 1, 3], leo=120, hw=100),
        row(broker_id=2, event_type=lead, topic="u", partition=0, leader_epoch=6, action="become_leader",
            leader_id=2, partition_epoch=9, isr=[2, 1, 3], adding_replicas=[4], removing_replicas=[3], leo=130,
            hw=120),
        row(broker_id=2, event_type=lead, topic="u", partition=0, leader_epoch=7, action="become_follower",
            leo=130, hw=125),
        row(broker_id=2, event_type=lead, topic="u", partition=0, leader_epoch=8, action="become_follower",
            leader_id=1, partition_epoch=11, leo=128, hw=125),
        row(broker_id=3, event_type="broker_lifecycle", action="start"),
        # No leadership line of broker 3 for u-0 in its files: the epoch is not known.
        row(broker_id=3, event_type="truncation", topic="u", partition=0, truncate_offset=90, reason="leader_epoch"),
        row(broker_id=3, event_type=isr, topic="u", partition=0, action="shrink", isr=[3], old_isr=[3, 1, 2],
            isr_state="proposed"),
        # One follower transition per partition an 'Added fetcher' line lists; the log-dir fetcher is none.
        row(broker_id=3, event_type=lead, topic="v", partition=0, leader_epoch=7, action="become_follower",
            leader_id=1),
        row(broker_id=3, event_type=lead, topic="v", partition=1, leader_epoch=2, action="become_follower",
            leader_id=1),
        row(broker_id=3, event_type=lead, topic="v", partition=2, leader_epoch=4, action="become_follower",
            leader_id=2),
        row(broker_id=3, event_type=lead, topic="v", partition=3, action="become_follower", leader_id=1),
    ]
    assert_df_equality(kept, spark.createDataFrame(expected, SCHEMA), ignore_nullable=True)
    stamps = [r["ts_ms"] for r in got.orderBy("ts_ms").select("ts_ms").collect()]
    assert stamps[0] == ms("2024-05-14 12:00:00,001")
    assert stamps[18] == ms("2024-05-14 12:02:00,500")  # the ISO stamp with its own zone
    shrink = got.where("ts_ms = {}".format(ms("2024-05-14 12:02:02,000"))).select("out_of_sync_replicas").first()
    assert [tuple(r) for r in shrink[0]] == [(1, 95, 1715688000000), (2, None, None)]
    ids = got.orderBy("event_id").select("event_id", "ts_ms", "partition", "source", "run_id").collect()
    # One event per millisecond but for the fetcher line listing v-0 and v-1: numbered within its millisecond.
    assert [r["event_id"] - (r["ts_ms"] << ID_SEQUENCE_BITS) for r in ids] == [0] * 21 + [0, 1] + [0, 0]
    assert [r["partition"] for r in ids[21:23]] == [0, 1]  # in the order the line lists them
    assert {(r["source"], r["run_id"]) for r in ids} == {("kafka-log", "cluster-a")}


def test_the_forms_of_older_and_newer_releases_become_their_events(spark: SparkSession, tmp_path: Path) -> None:
    """Forms that other Kafka releases print of messages the table reads: 2.6-2.7's 'Added fetcher to broker {id}',
    4.x's DivergingEpoch truncation line and its committed state as a Java record, 1.1+'s unknown-offset line,
    0.9-1.0's 'Partition [t,p] on broker {id}: ' prefix, 0.11-1.x's 'Error in fetch to broker', 0.8-0.11's
    '[Kafka Server {id}], ' lifecycle lines and 0.8-0.10.0's '[[t,p], initOffset ...' fetcher lines."""
    newer = """\
[2024-05-14 12:00:00,000] INFO [KafkaServer id=3] started (kafka.server.KafkaServer)
[2024-05-14 12:00:01,000] INFO [ReplicaFetcherManager on broker 3] Added fetcher to broker 2 for partitions Map(w-0 -> (offset=12, leaderEpoch=4), w-1 -> (offset=0, leaderEpoch=6)) (kafka.server.ReplicaFetcherManager)
[2024-05-14 12:00:02,000] INFO [ReplicaFetcher replicaId=3, leaderId=2, fetcherId=0] Truncating partition w-0 to offset 10 due to diverging epoch 3 (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:02,001] INFO [UnifiedLog partition=w-0, dir=/data] Truncating to offset 10 (kafka.log.UnifiedLog)
[2024-05-14 12:00:03,000] INFO [Partition x-0 broker=3] Failed to alter partition to PendingShrinkIsr[outOfSyncReplicaIds=[2], sentLeaderAndIsr=LeaderAndIsr(leader=3, leaderEpoch=2, isrWithBrokerEpoch=[], leaderRecoveryState=RECOVERED, partitionEpoch=5), lastCommittedState=CommittedPartitionState[isr=[3, 1, 2], leaderRecoveryState=RECOVERED]] since the controller rejected the request with INVALID_UPDATE_VERSION. Partition state has been reset to the latest committed state CommittedPartitionState[isr=[3, 1, 2], leaderRecoveryState=RECOVERED]. (kafka.cluster.Partition)
[2024-05-14 12:00:04,000] WARN [ReplicaFetcher replicaId=3, leaderId=2, fetcherId=0] Based on replica's leader epoch, leader replied with an unknown offset in w-1. The initial fetch offset 8 will be used for truncation. (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:04,001] INFO [Log partition=w-1, dir=/data] Truncating to offset 8 (kafka.log.Log)
"""
    older = """\
[2018-01-01 00:00:00,000] INFO [Kafka Server 5], started (kafka.server.KafkaServer)
[2018-01-01 00:00:00,500] INFO [ReplicaFetcherManager on broker 5] Added fetcher for partitions List([[y,3], initOffset 11 to broker BrokerEndPoint(1,kafka1,9092)] , [[y,4], initOffset 0 to broker BrokerEndPoint(2,kafka2,9092)] ) (kafka.server.ReplicaFetcherManager)
[2018-01-01 00:00:00,700] INFO [ReplicaFetcherManager on broker 5] Added fetcher for partitions ArrayBuffer([[y,5], initOffset 3 to broker id:1,host:kafka1,port:9092] ) (kafka.server.ReplicaFetcherManager)
[2018-01-01 00:00:01,000] INFO Partition [y,2] on broker 5: Shrinking ISR from 5,1,2 to 5,1 (kafka.cluster.Partition)
[2018-01-01 00:00:02,000] INFO Partition [y,2] on broker 5: Expanding ISR from 5,1 to 5,1,2 (kafka.cluster.Partition)
[2018-01-01 00:00:03,000] WARN [ReplicaFetcherThread-0-1]: Error in fetch to broker 1, request (type=FetchRequest, replicaId=5, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={y-0=(offset=40, logStartOffset=0, maxBytes=1048576), y-1=(offset=7, logStartOffset=0, maxBytes=1048576)}, isolationLevel=READ_UNCOMMITTED) (kafka.server.ReplicaFetcherThread)
java.io.IOException: Connection to 1 was disconnected before the response was read
[2018-01-01 00:00:04,000] INFO [Kafka Server 5], Starting controlled shutdown (kafka.server.KafkaServer)
[2018-01-01 00:00:05,000] INFO [Kafka Server 5], shutting down (kafka.server.KafkaServer)
"""
    got = parse(spark, write_logs(tmp_path, {"server.log": newer, "old/server.log": older}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    lead, isr = "leadership_change", "isr_change"
    expected = [
        # Before 1.0 the server's prefix was '[Kafka Server 5], '.
        row(broker_id=5, event_type="broker_lifecycle", action="start"),
        # Before 0.10.1 the fetcher manager printed '[[t,p], initOffset ...' (0.8: the broker as 'id:1,...').
        row(broker_id=5, event_type=lead, topic="y", partition=3, action="become_follower", leader_id=1),
        row(broker_id=5, event_type=lead, topic="y", partition=4, action="become_follower", leader_id=2),
        row(broker_id=5, event_type=lead, topic="y", partition=5, action="become_follower", leader_id=1),
        # The partition from the prefix of Partition's lines then; the fetcher's line takes the file's broker.
        row(broker_id=5, event_type=isr, topic="y", partition=2, action="shrink", isr=[5, 1], old_isr=[5, 1, 2],
            isr_state="proposed"),
        row(broker_id=5, event_type=isr, topic="y", partition=2, action="expand", isr=[5, 1, 2], old_isr=[5, 1],
            isr_state="proposed"),
        # Each partition of the failed request, from the thread's leader, with the network client's exception.
        row(broker_id=5, event_type="fetch_response", topic="y", partition=0, leader_id=1,
            error="NETWORK_EXCEPTION"),
        row(broker_id=5, event_type="fetch_response", topic="y", partition=1, leader_id=1,
            error="NETWORK_EXCEPTION"),
        row(broker_id=5, event_type="broker_lifecycle", action="controlled_shutdown"),
        row(broker_id=5, event_type="broker_lifecycle", action="shutdown"),
        row(broker_id=3, event_type="broker_lifecycle", action="start"),
        # The leader's id alone after 'to broker'.
        row(broker_id=3, event_type=lead, topic="w", partition=0, leader_epoch=4, action="become_follower",
            leader_id=2),
        row(broker_id=3, event_type=lead, topic="w", partition=1, leader_epoch=6, action="become_follower",
            leader_id=2),
        row(broker_id=3, event_type="truncation", topic="w", partition=0, leader_epoch=4, truncate_offset=10,
            reason="diverging_epoch"),
        row(broker_id=3, event_type=isr, topic="x", partition=0, action="shrink", isr=[3, 1, 2],
            isr_state="rejected", error="INVALID_UPDATE_VERSION", reason="reset_to_committed"),
        # The initial fetch offset is the follower's high watermark.
        row(broker_id=3, event_type="truncation", topic="w", partition=1, leader_epoch=6, truncate_offset=8,
            reason="high_watermark"),
    ]
    kept = got.orderBy("ts_ms", "partition").select(*COLUMNS)
    assert_df_equality(kept, spark.createDataFrame(expected, SCHEMA), ignore_nullable=True)
    fetches = got.where("event_type = 'fetch_response'").orderBy("partition").select("fetcher_id", "fetch_offset")
    assert [tuple(r) for r in fetches.collect()] == [(0, 40), (0, 7)]

def test_a_followers_fetch_errors_become_fetch_responses(spark: SparkSession, tmp_path: Path) -> None:
    """Every form of a fetcher's per-partition error is a fetch_response with Kafka's error name; the leader and
    fetcher come from the thread's prefix (or the line), the error of 'Error for partition .. at offset' from the
    exception log4j prints on the next line; a whole request's failure is one per partition its fetchData names,
    none when it names none (an incremental fetch session's request), and the session handler's line is none. An
    OffsetsForLeaderEpoch answer's error is an epoch_request_retry."""
    fetcher = "[ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0]"
    server = f"""\
[2024-05-14 12:00:00,000] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)
[2024-05-14 12:00:01,000] INFO [Broker id=2] Follower t-0 starts at leader epoch 4 from offset 50 with high watermark 40. Previous leader epoch was 3. (state.change.logger)
[2024-05-14 12:00:02,000] WARN {fetcher} Received UNKNOWN_TOPIC_OR_PARTITION from the leader for partition t-0. This error may be returned transiently when the partition is being created or deleted, but it is not expected to persist. (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:03,000] ERROR {fetcher} Error for partition t-0 at offset 50 (kafka.server.ReplicaFetcherThread)
org.apache.kafka.common.errors.KafkaStorageException: Disk error when trying to access log file on the disk.
[2024-05-14 12:00:04,000] ERROR {fetcher} Error for partition t-0 at offset 51 (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:05,000] ERROR {fetcher} Found invalid messages during fetch for partition t-0 offset 52 (kafka.server.ReplicaFetcherThread)
org.apache.kafka.common.errors.CorruptRecordException: Record is corrupt (stored crc = 1, computed crc = 2)
[2024-05-14 12:00:06,000] INFO {fetcher} Current offset 53 for partition t-0 is out of range, which typically implies a leader change. Reset fetch offset to 40 (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:07,000] INFO {fetcher} Partition t-0 has an older epoch (4) than the current leader. Will await the new LeaderAndIsr state before resuming fetching. (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:08,000] INFO {fetcher} Partition t-0 has an new epoch (5) than the current leader. retry the partition later (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:09,000] INFO {fetcher} Remote broker is not the leader for partition t-0, which could indicate that the partition is being moved (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:10,000] DEBUG {fetcher} Remote broker has a smaller leader epoch for partition t-0 than this replica's current leader epoch of 4. (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:11,000] FATAL {fetcher} Exiting because log truncation is not allowed for partition t-0, current leader's latest offset 30 is less than replica's latest offset 54 (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:12,000] WARN {fetcher} Error in response for fetch request (type=FetchRequest, replicaId=2, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{t-0=(fetchOffset=54, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional[4], lastFetchedEpoch=Optional.empty)}}, isolationLevel=READ_UNCOMMITTED, toForget=, metadata=(sessionId=INVALID, epoch=INITIAL), rackId=) (kafka.server.ReplicaFetcherThread)
java.io.IOException: Connection to 1 was disconnected before the response was read
	at org.apache.kafka.clients.NetworkClientUtils.sendAndReceive(NetworkClientUtils.java:100)
[2024-05-14 12:00:13,000] INFO {fetcher} Error sending fetch request (sessionId=1234, epoch=5) to node 1: (org.apache.kafka.clients.FetchSessionHandler)
java.net.SocketTimeoutException: Failed to connect within 30000 ms
[2024-05-14 12:00:13,001] WARN {fetcher} Error in response for fetch request (type=FetchRequest, replicaId=2, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{t-0=PartitionData(topicId=AAAAAAAAAAAAAAAAAAAAAA, fetchOffset=54, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional[4], lastFetchedEpoch=Optional[3]), t-1=PartitionData(topicId=AAAAAAAAAAAAAAAAAAAAAA, fetchOffset=7, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional.empty, lastFetchedEpoch=Optional.empty)}}, isolationLevel=READ_UNCOMMITTED, removed=, replaced=, metadata=(sessionId=1234, epoch=5), rackId=) (kafka.server.ReplicaFetcherThread)
java.net.SocketTimeoutException: Failed to connect within 30000 ms
[2024-05-14 12:00:14,000] WARN {fetcher} Error in response for fetch request (type=FetchRequest, replicaId=2, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{}}, isolationLevel=READ_UNCOMMITTED, toForget=, metadata=(sessionId=1234, epoch=6)) (kafka.server.ReplicaFetcherThread)
java.io.IOException: Connection to 1 was disconnected before the response was read
[2024-05-14 12:00:15,000] WARN {fetcher} Error in response for fetch request (type=FetchRequest, replicaId=2, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{t-0=(offset=55, logStartOffset=0, maxBytes=1048576)}}, isolationLevel=READ_UNCOMMITTED) (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:16,000] WARN {fetcher} Error in response for fetch request (type=FetchRequest, replicaId=2, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{t-0=(fetchOffset=56, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional[4])}}, isolationLevel=READ_UNCOMMITTED, toForget=, metadata=(sessionId=INVALID, epoch=INITIAL)) (kafka.server.ReplicaFetcherThread)
java.io.EOFException
[2024-05-14 12:00:17,000] WARN {fetcher} Error in response for fetch request (type=FetchRequest, replicaId=2, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{t-0=(fetchOffset=57, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional[4])}}, isolationLevel=READ_UNCOMMITTED, toForget=, metadata=(sessionId=INVALID, epoch=INITIAL)) (kafka.server.ReplicaFetcherThread)
java.nio.channels.ClosedChannelException
[2024-05-14 12:00:18,000] WARN [ReplicaAlterLogDirsThread-1]: Error in response for fetch request (type=FetchRequest, replicaId=-2, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{t-0=(fetchOffset=58, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional[4])}}, isolationLevel=READ_UNCOMMITTED, toForget=, metadata=(sessionId=INVALID, epoch=INITIAL)) (kafka.server.ReplicaAlterLogDirsThread)
org.apache.kafka.common.errors.KafkaStorageException: Disk error when trying to access log file on the disk.
[2024-05-14 12:00:19,000] WARN {fetcher} Error when sending leader epoch request for Map(t-0 -> OffsetForLeaderPartition(partition=0, currentLeaderEpoch=4, leaderEpoch=3)) (kafka.server.ReplicaFetcherThread)
java.io.IOException: Connection to 1 was disconnected before the response was read
[2024-05-14 12:00:19,001] INFO {fetcher} Retrying leaderEpoch request for partition t-0 as the leader reported an error: UNKNOWN_SERVER_ERROR (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:20,000] INFO {fetcher} Retrying leaderEpoch request for partition t-1 as the leader reported an error: NOT_LEADER_OR_FOLLOWER (kafka.server.ReplicaFetcherThread)
"""
    old = """\
[2017-05-24 09:39:34,000] INFO [KafkaServer id=5] started (kafka.server.KafkaServer)
[2017-05-24 09:39:34,637] ERROR [ReplicaFetcherThread-1-175], Error for partition [__consumer_offsets,15] to broker 175:org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition. (kafka.server.ReplicaFetcherThread)
[2015-03-25 11:11:08,976] ERROR [ReplicaFetcherThread-0-21], Current offset 54369274 for partition [topic,11] out of range; reset offset to 49322124 (kafka.server.ReplicaFetcherThread)
[2015-03-25 11:11:09,000] ERROR [ReplicaFetcherThread-0-21], Error for partition [topic,11] to broker 21:class kafka.common.NotLeaderForPartitionException (kafka.server.ReplicaFetcherThread)
[2017-09-20 19:37:05,265] ERROR Found invalid messages during fetch for partition [xxxx,87] offset 1503297 error Message is corrupt (stored crc = 286782282, computed crc = 400317671) (kafka.server.ReplicaFetcherThread)
[2018-01-01 00:00:00,000] FATAL [ReplicaFetcherThread-0-1], Exiting because log truncation is not allowed for partition topic-2, Current leader 1's latest offset 0 is less than replica 5's latest offset 151 (kafka.server.ReplicaFetcherThread)
[2016-02-25 00:29:39,236] FATAL [ReplicaFetcherThread-0-1], Halting because log truncation is not allowed for topic test, Current leader 1's latest offset 0 is less than replica 2's latest offset 151 (kafka.server.ReplicaFetcherThread)
"""
    got = parse(spark, write_logs(tmp_path, {"server.log": server, "server-old.log": old}))
    columns = ["_source_line", "broker_id", "topic", "partition", "leader_epoch", "leader_id", "fetcher_id",
               "fetch_offset", "error", "_reason_code"]
    rows = got.where("event_type = 'fetch_response'").orderBy("_source_file", "_source_line", "partition").select(
        *columns)
    resp = "_source_line bigint, broker_id int, topic string, partition int, leader_epoch int, leader_id int, " \
           "fetcher_id int, fetch_offset bigint, error string, _reason_code string"
    expected = [
        # server-old.log (0.8-1.x): the broker from the file's own line; [ReplicaFetcherThread-<fetcher>-<leader>].
        (2, 5, "__consumer_offsets", 15, None, 175, 1, None, "UNKNOWN_TOPIC_OR_PARTITION", None),
        (3, 5, "topic", 11, None, 21, 0, 54369274, "OFFSET_OUT_OF_RANGE", None),
        (4, 5, "topic", 11, None, 21, 0, None, "NOT_LEADER_OR_FOLLOWER", None),
        (5, 5, "xxxx", 87, None, None, None, 1503297, "CORRUPT_MESSAGE", None),  # 0.9: no thread prefix
        (6, 5, "topic", 2, None, 1, 0, 151, "OFFSET_OUT_OF_RANGE", None),
        # 0.9 names the topic only: no partition, quarantined.
        (7, 5, None, None, None, 1, 0, 151, "OFFSET_OUT_OF_RANGE", "unread_log_line"),
        # server.log (2.0+): the epoch of the broker's follower line unless the line prints the broker's own.
        (3, 2, "t", 0, 4, 1, 0, None, "UNKNOWN_TOPIC_OR_PARTITION", None),
        (4, 2, "t", 0, 4, 1, 0, 50, "KAFKA_STORAGE_ERROR", None),
        # No exception line after it: the error is not known, and a fetch_response from logs needs one.
        (6, 2, "t", 0, 4, 1, 0, 51, None, "missing_field"),
        (7, 2, "t", 0, 4, 1, 0, 52, "CORRUPT_MESSAGE", None),
        (9, 2, "t", 0, 4, 1, 0, 53, "OFFSET_OUT_OF_RANGE", None),
        (10, 2, "t", 0, 4, 1, 0, None, "FENCED_LEADER_EPOCH", None),
        # Kafka prints the fetch state's epoch, here one the broker moved to after sending the request.
        (11, 2, "t", 0, 5, 1, 0, None, "FENCED_LEADER_EPOCH", None),
        (12, 2, "t", 0, 4, 1, 0, None, "NOT_LEADER_OR_FOLLOWER", None),
        (13, 2, "t", 0, 4, 1, 0, None, "UNKNOWN_LEADER_EPOCH", None),
        (14, 2, "t", 0, 4, 1, 0, 54, "OFFSET_OUT_OF_RANGE", None),
        # A failed request: each partition it names, at its fetch offset and CurrentLeaderEpoch (t-1 sent none, and
        # no line gives broker 2's epoch of t-1), with the network client's exception as NETWORK_EXCEPTION.
        (15, 2, "t", 0, 4, 1, 0, 54, "NETWORK_EXCEPTION", None),
        (20, 2, "t", 0, 4, 1, 0, 54, "NETWORK_EXCEPTION", None),
        (20, 2, "t", 1, None, 1, 0, 7, "NETWORK_EXCEPTION", None),
        (24, 2, "t", 0, 4, 1, 0, 55, None, "missing_field"),  # no exception line after it
        (25, 2, "t", 0, 4, 1, 0, 56, "NETWORK_EXCEPTION", None),  # java.io.EOFException
        (27, 2, "t", 0, 4, 1, 0, 57, "NETWORK_EXCEPTION", None),  # java.nio.channels.ClosedChannelException
        # 29: the log-dir mover's own fetch (ReplicaAlterLogDirsThread, replicaId=-2) is no follower's: none.
    ]
    assert_df_equality(rows, spark.createDataFrame(expected, resp), ignore_nullable=True)
    # The session handler's line (18), the request that names no partition (22), the failed OffsetsForLeaderEpoch
    # request's (31) and the exception and stack lines are no events.
    assert got.where("_source_line IN (18, 22, 29, 31) OR raw RLIKE '^(java|org|\t)'").count() == 0
    # An OffsetsForLeaderEpoch answer's error, each partition's (UNKNOWN_SERVER_ERROR where the request failed).
    retries = got.where("event_type = 'epoch_request_retry'").orderBy("_source_line").select(*columns)
    assert_df_equality(retries, spark.createDataFrame([
        (33, 2, "t", 0, 4, 1, 0, None, "UNKNOWN_SERVER_ERROR", None),
        (34, 2, "t", 1, None, 1, 0, None, "NOT_LEADER_OR_FOLLOWER", None)], resp), ignore_nullable=True)


def test_a_log_start_offset_increment_is_a_log_start_offset_change(spark: SparkSession, tmp_path: Path) -> None:
    """The log layer's line about a log start offset moving up (retention, a leader's increment, DeleteRecords), in
    each version's form, is a log_start_offset_change in the epoch of the broker's last leadership line; the local
    tier's start (KIP-405) and a tiered log's merged start are other offsets, and no event."""
    server = """\
[2024-05-14 12:00:00,000] INFO [Broker id=2] Leader t-3 with topic id Some(abc) starts at leader epoch 5 from offset 120 with partition epoch 9, high watermark 100, ISR [2,1], adding replicas [] and removing replicas [] . Previous leader None and previous leader epoch was 4. (state.change.logger)
[2024-05-14 12:00:01,000] INFO [UnifiedLog partition=t-3, dir=/data] Incremented log start offset to 40 due to segment deletion (kafka.log.UnifiedLog)
[2024-05-14 12:00:02,000] INFO [UnifiedLog partition=t-3, dir=/data] Incremented log start offset to 55 due to client delete records request (kafka.log.UnifiedLog)
[2024-05-14 12:00:02,500] INFO [UnifiedLog partition=t-3, dir=/data] Incremented log start offset to 56 due to leader offset increment (kafka.log.UnifiedLog)
[2024-05-14 12:00:02,600] INFO [UnifiedLog partition=t-3, dir=/data] Incremented log start offset to 57 due to snapshot generated (kafka.log.UnifiedLog)
[2024-05-14 12:00:03,000] INFO [UnifiedLog partition=t-3, dir=/data] Incremented local log start offset to 90 due to reason segment deletion (kafka.log.UnifiedLog)
[2024-05-14 12:00:04,000] INFO [MergedLog partition=t-3, dir=/data] Incrementing merged log start offset to 60 (kafka.log.MergedLog)
[2024-05-14 12:00:05,000] INFO [Log partition=u-0, dir=/data] Incrementing log start offset to 7 (kafka.log.Log)
"""
    old = """\
[2018-01-01 00:00:00,000] INFO [KafkaServer id=4] started (kafka.server.KafkaServer)
[2018-01-01 00:00:01,000] INFO Incrementing log start offset of partition orders-12 to 22786435 in dir /kafka/data (kafka.log.Log)
"""
    got = parse(spark, write_logs(tmp_path, {"server.log": server, "server-4.log": old}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    lso = got.where("event_type = 'log_start_offset_change'").orderBy("ts_ms").select(
        "broker_id", "topic", "partition", "leader_epoch", "log_start_offset", "old_log_start_offset", "role",
        "reason")
    schema = ("broker_id int, topic string, partition int, leader_epoch int, log_start_offset bigint, "
              "old_log_start_offset bigint, role string, reason string")
    assert_df_equality(lso, spark.createDataFrame([
        (4, "orders", 12, None, 22786435, None, None, None),  # versions before 2.8 print no reason
        (2, "t", 3, 5, 40, None, None, "segment_deletion"),
        (2, "t", 3, 5, 55, None, None, "client_record_deletion"),
        (2, "t", 3, 5, 56, None, None, "leader_offset_increment"),
        (2, "t", 3, 5, 57, None, None, "snapshot_generated"),
        (2, "u", 0, None, 7, None, None, None),
    ], schema), ignore_nullable=True)
    assert got.count() == 8  # broker 2: the leader line and five log starts; broker 4: its start and a log start


def test_a_log_loaded_at_a_brokers_start_is_a_log_load(spark: SparkSession, tmp_path: Path) -> None:
    """Each version's line for a log its broker loaded (or created) is a log_load with the log start offset and
    LEO it found; 0.8-0.10 print no log start, a tiered build's merged start is the log's, the local tier's start
    is not, LogManager's highWatermark (the log's before its partition applies the checkpoint) is not read, and a
    log in a directory pending deletion or of an intra-broker move is not the replica's."""
    new = """\
[2024-05-14 12:00:00,000] INFO [BrokerServer id=2] Transition from STARTING to STARTED (kafka.server.BrokerServer)
[2024-05-14 12:00:01,000] INFO Completed load of Log(dir=/data/t-3, topicId=GhYHO3u3QCWBkh_YmtCs8Q, topic=t, partition=3, highWatermark=40, lastStableOffset=40, logStartOffset=40, logEndOffset=95) with 2 segments, local-log-start-offset 40 and log-end-offset 95 in 105ms (1/3 completed in /data) (kafka.log.LogManager)
[2024-05-14 12:00:01,100] INFO Completed load of Log(dir=C:\\kafka\\logs\\my-topic-0, topic=my-topic, partition=0, highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=2) with 1 segments in 143ms (2/3 loaded in C:\\kafka\\logs) (kafka.log.LogManager)
[2024-05-14 12:00:01,200] INFO [Log partition=u-1, dir=/data] Completed load of log with 1 segments, log start offset 7 and log end offset 9 in 4 ms (kafka.log.Log)
[2024-05-14 12:00:01,300] INFO [MergedLog partition=u-2, dir=/data] Completed load of log with 1 segments, log start offset (merged: 5, local: 8) and log end offset 12 in 48 ms (kafka.log.MergedLog)
[2024-05-14 12:00:01,400] INFO [MergedLog partition=u-3, dir=/data] Completed load of log with 1 segments, local log start offset 8 and log end offset 12 in 48 ms (kafka.log.MergedLog)
[2024-05-14 12:00:01,500] INFO Completed load of Log(dir=/data/t-3.8f0c2a1b3d4e5f60718293a4b5c6d7e8-future, topic=t, partition=3, highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=12) with 1 segments in 3ms (3/3 completed in /data) (kafka.log.LogManager)
"""
    old = """\
[2018-01-01 00:00:00,000] INFO [Kafka Server 4], started (kafka.server.KafkaServer)
[2018-01-01 00:00:01,000] INFO Completed load of log orders-12 with 1 log segments, log start offset 22786435 and log end offset 22786500 in 12 ms (kafka.log.Log)
[2018-01-01 00:00:02,000] INFO Completed load of log monitor-2 with 1 log segments and log end offset 31119681 in 18507 ms (kafka.log.Log)
[2018-01-01 00:00:03,000] INFO Completed load of log legacy-0 with log end offset 5 (kafka.log.Log)
[2018-01-01 00:00:04,000] INFO Completed load of log orders-12.8f0c2a1b3d4e5f60718293a4b5c6d7e8-delete with 1 log segments, log start offset 0 and log end offset 4 in 3 ms (kafka.log.Log)
"""
    got = parse(spark, write_logs(tmp_path, {"server.log": new, "server-4.log": old}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    loads = got.where("event_type = 'log_load'").select("broker_id", "topic", "partition", "log_start_offset", "leo")
    assert_df_equality(loads, spark.createDataFrame([
        (2, "t", 3, 40, 95),
        (2, "my-topic", 0, 0, 2),
        (2, "u", 1, 7, 9),
        (2, "u", 2, 5, 12),
        (2, "u", 3, None, 12),
        (4, "orders", 12, 22786435, 22786500),
        (4, "monitor", 2, None, 31119681),
        (4, "legacy", 0, None, 5),
    ], "broker_id int, topic string, partition int, log_start_offset bigint, leo bigint"),
        ignore_row_order=True, ignore_nullable=True)
    # Two broker starts and eight loads: a log pending deletion or a future log (an intra-broker move) is not the
    # replica's, and no event either.
    assert got.count() == 10


def test_a_partitions_initial_high_watermark_is_an_hw_change(spark: SparkSession, tmp_path: Path) -> None:
    """The HW a partition starts with in a broker process (2.4+: 'Log loaded for partition ... with initial high
    watermark H' under the partition's prefix) is an hw_change without role, old HW or epoch (not the previous
    process's); of 1.0-2.3's 'Replica loaded ...' lines, printed for every replica of the partition, only one with a
    positive HW (the broker's own: the others print 0) is, and the ones with 0 are no event. A later line before
    the log is loaded again is a future log's (an intra-broker move), no event, as is one after the creation line of
    a future log (with, in 2.4-2.5, the load line its constructor prints just before); one after the creation of a
    new log of the replica (re-created in the same process) is the replica's. An unknown form is quarantined."""
    new = """\
[2024-05-14 12:00:00,000] INFO [BrokerServer id=2] Transition from STARTING to STARTED (kafka.server.BrokerServer)
[2024-05-14 12:00:01,000] INFO [Partition t-3 broker=2] No checkpointed highwatermark is found for partition t-3 (kafka.cluster.Partition)
[2024-05-14 12:00:01,001] INFO [Partition t-3 broker=2] Log loaded for partition t-3 with initial high watermark 0 (kafka.cluster.Partition)
[2024-05-14 12:00:01,050] INFO Completed load of Log(dir=/data/t-4, topic=t, partition=4, highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=9000) with 2 segments in 105ms (1/1 loaded in /data) (kafka.log.LogManager)
[2024-05-14 12:00:01,100] INFO [Partition t-4 broker=2] Log loaded for partition t-4 with initial high watermark 8249 (kafka.cluster.Partition)
[2024-05-14 12:00:01,150] INFO [Broker id=2] Leader t-4 starts at leader epoch 5 from offset 9000 with partition epoch 7, high watermark 8249, ISR [2], adding replicas [] and removing replicas []. Previous leader None and previous leader epoch was 4. (state.change.logger)
[2024-05-14 12:00:01,200] INFO [Partition t-5 broker=2] Log loaded for partition t-5 with an initial high watermark of 7 (kafka.cluster.Partition)
[2024-05-14 12:00:02,000] INFO [Partition t-4 broker=2] Log loaded for partition t-4 with initial high watermark 0 (kafka.cluster.Partition)
[2024-05-14 12:00:03,000] INFO Created log for partition t-3 in /data/t-3 with properties {} (kafka.log.LogManager)
[2024-05-14 12:00:03,001] INFO [Partition t-3 broker=2] Log loaded for partition t-3 with initial high watermark 0 (kafka.cluster.Partition)
[2024-05-14 12:00:04,000] INFO Created log for partition t-3 in /data2/t-3.8f0c2a1b3d4e5f60718293a4b5c6d7e8-future with properties {} (kafka.log.LogManager)
[2024-05-14 12:00:04,001] INFO [Partition t-3 broker=2] Log loaded for partition t-3 with initial high watermark 0 (kafka.cluster.Partition)
[2024-05-14 12:00:05,000] INFO [Log partition=t-6, dir=/data2] Completed load of log with 1 segments, log start offset 0 and log end offset 0 in 1 ms (kafka.log.Log)
[2024-05-14 12:00:05,001] INFO Created log for partition t-6 in /data2/t-6.8f0c2a1b3d4e5f60718293a4b5c6d7e8-future with properties {} (kafka.log.LogManager)
[2024-05-14 12:00:05,002] INFO [Partition t-6 broker=2] Log loaded for partition t-6 with initial high watermark 0 (kafka.cluster.Partition)
[2024-05-14 12:00:06,000] INFO [Log partition=t-7, dir=/mnt/kafka data] Completed load of log with 1 segments, log start offset 0 and log end offset 5 in 1 ms (kafka.log.Log)
[2024-05-14 12:00:06,001] INFO Created log for partition t-7 in /mnt/kafka data/t-7 with properties {} (kafka.log.LogManager)
[2024-05-14 12:00:06,002] INFO [Partition t-7 broker=2] Log loaded for partition t-7 with initial high watermark 5 (kafka.cluster.Partition)
[2024-05-14 12:00:07,001] INFO Created log for partition t-7 in /mnt/kafka data/t-7.8f0c2a1b3d4e5f60718293a4b5c6d7e8-future with properties {} (kafka.log.LogManager)
[2024-05-14 12:00:07,002] INFO [Partition t-7 broker=2] Log loaded for partition t-7 with initial high watermark 0 (kafka.cluster.Partition)
[2024-05-14 13:00:01,050] INFO Completed load of Log(dir=/data/t-4, topic=t, partition=4, highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=9100) with 2 segments in 105ms (1/1 loaded in /data) (kafka.log.LogManager)
[2024-05-14 13:00:01,100] INFO [Partition t-4 broker=2] Log loaded for partition t-4 with initial high watermark 9050 (kafka.cluster.Partition)
"""
    old = """\
[2019-11-19 13:09:05,000] INFO [KafkaServer id=3] started (kafka.server.KafkaServer)
[2019-11-19 13:09:05,017] INFO Replica loaded for partition test1-0 with initial high watermark 0 (kafka.cluster.Replica)
[2019-11-19 13:09:05,019] INFO Replica loaded for partition test1-0 with initial high watermark 0 (kafka.cluster.Replica)
[2019-11-19 13:09:05,020] INFO Replica loaded for partition test1-1 with initial high watermark 13 (kafka.cluster.Replica)
[2019-11-19 13:09:05,021] INFO Replica loaded for partition test1-1 with initial high watermark 0 (kafka.cluster.Replica)
[2019-11-19 13:09:06,000] INFO Replica loaded for partition test1-1 with initial high watermark 11 (kafka.cluster.Replica)
"""
    got = parse(spark, write_logs(tmp_path, {"server.log": new, "server-3.log": old}))
    hws = got.where("event_type = 'hw_change' AND _reason_code IS NULL").select(
        "broker_id", "topic", "partition", "leader_epoch", "role", "old_hw", "hw")
    assert_df_equality(hws, spark.createDataFrame([
        (2, "t", 3, None, None, None, 0),
        (2, "t", 3, None, None, None, 0),  # its log deleted and created again: the new log's
        (2, "t", 4, None, None, None, 8249),
        (2, "t", 4, None, None, None, 9050),  # after the restart's load: the replica's again, not epoch 5's
        (2, "t", 7, None, None, None, 5),  # a 2.4-2.5 new log of the replica: its load line and its HW are read
        (3, "test1", 1, None, None, None, 13),
    ], "broker_id int, topic string, partition int, leader_epoch int, role string, old_hw bigint, hw bigint"),
        ignore_row_order=True, ignore_nullable=True)
    assert [r["_reason_code"] for r in got.where("_reason_code IS NOT NULL").collect()] == ["unread_log_line"]
    # Two starts, six HWs, three loads, one leader line, one quarantined line; the 'No checkpointed' and 'Created log'
    # lines, the HW-0 Replica lines and the future logs' lines (t-6's load too; t-7's in a folder with a space) are
    # none.
    assert got.count() == 13
    assert got.where("event_type = 'log_load' AND partition = 7").count() == 1


def test_a_leaders_refused_append_is_a_produce_answer_with_its_error(spark: SparkSession, tmp_path: Path) -> None:
    """ReplicaManager's ERROR line for an append it refused, with the exception on the next line, is a produce_ack
    with Kafka's error for it: NOT_ENOUGH_REPLICAS (thrown for acks=all only: acks -1), a producer's sequence error,
    a record validation's INVALID_RECORD (acks unknown), an exception that is not one of Kafka's errors (java.lang,
    java.io) as UNKNOWN_SERVER_ERROR; each version's form of the partition (0.9's '[t,0]' under 'Replica Manager on
    Broker', a topic id before it once produce is keyed by topic id)."""
    new = """\
[2024-05-14 12:00:00,000] INFO [Broker id=1] Leader t-0 starts at leader epoch 5 from offset 100 with partition epoch 7, high watermark 90, ISR [1], adding replicas [] and removing replicas []. Previous leader None and previous leader epoch was 4. (state.change.logger)
[2024-05-14 12:00:01,000] ERROR [ReplicaManager broker=1] Error processing append operation on partition t-0 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR Set(1) is insufficient to satisfy the min.isr requirement of 2 for partition t-0
[2024-05-14 12:00:02,000] ERROR [ReplicaManager broker=1] Error processing append operation on partition vDiRhkpVQgmtSLnsAZx7lA:t-0 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.OutOfOrderSequenceException: Out of order sequence number for producer 4000 at offset 120 in partition t-0: 7 (incoming seq. number), 5 (current end sequence number)
[2024-05-14 12:00:03,000] ERROR [ReplicaManager broker=1] Error processing append operation on partition t-1 (kafka.server.ReplicaManager)
java.lang.IllegalStateException: unexpected
[2024-05-14 12:00:04,000] ERROR [ReplicaManager broker=1] Error processing append operation on partition t-1 (kafka.server.ReplicaManager)
org.apache.kafka.common.InvalidRecordException: One or more records have been rejected due to 1 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=0, message='Compacted topic cannot accept message without key in topic partition t-1.')]
[2024-05-14 12:00:05,000] ERROR [ReplicaManager broker=1] Error processing append operation on partition t-1 (kafka.server.ReplicaManager)
java.io.IOException: No space left on device
[2024-05-14 12:00:06,000] ERROR [ReplicaManager broker=1] Error processing append operation on partition AAAAAAAAAAAAAAAAAAAAAA:t-1 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.InvalidTimestampException: Timestamp 1 of message with offset 0 is out of range.
"""
    old = """\
[2017-01-01 00:00:00,000] ERROR [Replica Manager on Broker 66]: Error processing append operation on partition [t3,0] (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.NotEnoughReplicasException: Number of insync replicas for partition [t3,0] is [1], below required minimum [2]
"""
    got = parse(spark, write_logs(tmp_path, {"server.log": new, "server-66.log": old}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    refused = got.where("event_type = 'produce_ack'").select("broker_id", "topic", "partition", "leader_epoch",
                                                             "acks", "error", "base_offset")
    assert_df_equality(refused, spark.createDataFrame([
        (1, "t", 0, 5, -1, "NOT_ENOUGH_REPLICAS", None),
        (1, "t", 0, 5, None, "OUT_OF_ORDER_SEQUENCE_NUMBER", None),
        (1, "t", 1, None, None, "UNKNOWN_SERVER_ERROR", None),
        (1, "t", 1, None, None, "INVALID_RECORD", None),  # KIP-467's record validation, outside the errors package
        (1, "t", 1, None, None, "UNKNOWN_SERVER_ERROR", None),  # a java.io class is not one of Kafka's errors
        (1, "t", 1, None, None, "INVALID_TIMESTAMP", None),
        (66, "t3", 0, None, -1, "NOT_ENOUGH_REPLICAS", None),
    ], "broker_id int, topic string, partition int, leader_epoch int, acks byte, error string, base_offset bigint"),
        ignore_row_order=True, ignore_nullable=True)


def test_an_alter_partition_retry_is_a_rejection_that_keeps_the_proposal(spark: SparkSession, tmp_path: Path) -> None:
    """'Failed to update ISR to Pending...Isr(...) due to unexpected E. Retrying.' (2.7 and 2.8+ forms): a rejected
    isr_change with reason retry and the error; its action from the pending state it names, its old ISR and epoch
    from the broker's earlier lines; the ISR the broker holds stays the committed one."""
    server = """\
[2024-05-14 12:00:00,000] INFO [Broker id=1] Leader t-0 starts at leader epoch 3 from offset 10 with high watermark 10 ISR [1,2] addingReplicas [] removingReplicas []. Previous leader epoch was 2. (state.change.logger)
[2024-05-14 12:00:01,000] WARN [Partition t-0 broker=1] Failed to update ISR to PendingExpandIsr(newInSyncReplicaId=3, sentLeaderAndIsr=LeaderAndIsr(leader=1, leaderEpoch=3, isrWithBrokerEpoch=[BrokerState(brokerId=1, brokerEpoch=-1), BrokerState(brokerId=2, brokerEpoch=-1), BrokerState(brokerId=3, brokerEpoch=-1)], leaderRecoveryState=RECOVERED, partitionEpoch=4), leaderRecoveryState=RECOVERED, lastCommittedState=CommittedPartitionState(isr=Set(1, 2), leaderRecoveryState=RECOVERED)) due to unexpected UNKNOWN_SERVER_ERROR. Retrying. (kafka.cluster.Partition)
[2024-05-14 12:00:02,000] WARN [Partition t-0 broker=1] Controller failed to update ISR to PendingShrinkIsr(isr=Set(1, 2), outOfSyncReplicaIds=Set(2)) due to unexpected REQUEST_TIMED_OUT. Retrying. (kafka.cluster.Partition)
[2024-05-14 12:00:03,000] INFO [Partition t-0 broker=1] ISR updated to 1  and version updated to 5 (kafka.cluster.Partition)
"""
    got = parse(spark, write_logs(tmp_path, {"server.log": server}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    rows = [(r["action"], r["isr_state"], r["reason"], r["error"], r["old_isr"], r["isr"], r["leader_epoch"])
            for r in got.where("event_type = 'isr_change'").orderBy("ts_ms").collect()]
    assert rows == [
        ("expand", "rejected", "retry", "UNKNOWN_SERVER_ERROR", [1, 2], None, 3),
        ("shrink", "rejected", "retry", "REQUEST_TIMED_OUT", [1, 2], None, 3),
        # A retry changes nothing the broker holds: the commit shrinks from [1, 2].
        ("shrink", "committed", None, None, [1, 2], [1], 3),
    ]


class _Log:
    """A broker's log written line by line; `add` returns the line's number (1-based), as `_source_line` gives it."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, t: str, message: str, logger: str = "kafka.log.LogManager", level: str = "INFO") -> int:
        """A log4j line at `t` ('12:00:00,000' on 2024-05-14)."""
        return self.raw(f"[2024-05-14 {t}] {level} {message} ({logger})")

    def raw(self, *lines: str) -> int:
        """Lines as they are (a stack trace, a config block's settings); the number of the first."""
        self.lines += lines
        return len(self.lines) - len(lines) + 1

    def start(self, t: str) -> int:
        """The first line of a broker process (1.0+)."""
        return self.add(t, "Registered kafka:type=kafka.Log4jController MBean", "kafka.utils.Log4jControllerRegistration$")

    def served(self, t: str, broker: int, last: str) -> None:
        """A ZooKeeper broker's process from its first line at `t`: its logs loaded clean, started, and an ISR
        commit at `last`, its last line."""
        self.start(f"{t},000")
        self.add(f"{t},100", "Skipping recovery of 1 logs from /d1 since clean shutdown file was found")
        self.add(f"{t[:-2]}{int(t[-2:]) + 1:02d},000", f"[KafkaServer id={broker}] started", "kafka.server.KafkaServer")
        self.add(last, f"[Partition t-0 broker={broker}] ISR updated to {broker} and version updated to 2",
                 "kafka.cluster.Partition")

    def out_of_memory(self, t: str, frames: int) -> None:
        """An uncaught OutOfMemoryError at `t` and its stack trace of `frames` lines: a process's last lines before
        the kernel kills it."""
        self.add(t, "Uncaught exception in scheduled task 'kafka-log-retention'", "kafka.utils.KafkaScheduler", "ERROR")
        self.raw("java.lang.OutOfMemoryError: Java heap space",
                 *["\tat kafka.log.LogSegment.append(LogSegment.scala:1)"] * frames)

    def text(self) -> str:
        """The file's text."""
        return "".join(f"{line}\n" for line in self.lines)


def _crashes(events: DataFrame) -> dict[int, tuple[int, str, int, str]]:
    """Each crash's broker -> its time, the folder and line of the unclean line that told of it, and its reason."""
    return {r.broker_id: (r.ts_ms, Path(r._source_file).parent.name, r._source_line, r.reason)
            for r in events.where("action = 'crash'").collect()}


def test_an_unclean_start_is_a_crash_dated_at_the_previous_processs_last_line(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    """LogManager's 'no clean shutdown file' line is a crash of the process before, dated at its last stamped line
    (past a stack trace, before the new process's first line): once per process (one line per directory), not at a
    first start (2.6-3.4 call a new directory unclean too), not after a completed shutdown (a directory replaced),
    and a start that died while loading its logs is a process of its own; a config dump inside a process starts
    none."""
    server, log = "kafka.server.KafkaServer", _Log()
    # A first start: its new directory is unclean, but no process came before.
    log.start("12:00:00,000")
    log.add("12:00:00,100", "starting", server)
    log.add("12:00:00,201", "Attempting recovery for all logs in /d1 since no clean shutdown file was found")
    started = [log.add("12:00:01,000", "[KafkaServer id=2] started", server)]
    log.add("12:05:00,000", "[Partition t-0 broker=2] ISR updated to 2,1 and version updated to 3",
            "kafka.cluster.Partition")
    # A dynamic config change prints the KafkaConfig dump again: no process starts there.
    log.raw("[2024-05-14 12:06:00,000] INFO KafkaConfig values: ", "\treplica.lag.time.max.ms = 10000",
            " (kafka.server.KafkaConfig)")
    log.out_of_memory("12:06:30,500", 20)
    # Killed: the next process finds both its directories unclean.
    log.start("12:10:00,000")
    log.add("12:10:00,050", "Registered signal handlers for TERM, INT, HUP",
            "org.apache.kafka.common.utils.LoggingSignalHandler")
    log.add("12:10:00,100", "starting", server)
    log.raw("[2024-05-14 12:10:00,500] INFO KafkaConfig values: ", "\tbroker.id = 2", "\treplica.lag.time.max.ms = 30000",
            " (kafka.server.KafkaConfig)")
    unclean = [log.add("12:10:01,001", "Recovering 3 logs from /d1 since no clean shutdown file was found")]
    log.add("12:10:01,002", "Recovering 2 logs from /d2 since no clean shutdown file was found")
    started.append(log.add("12:10:02,000", "[KafkaServer id=2] started", server))
    # A clean stop, then a replaced (empty) directory: unclean, yet no crash.
    stopped = log.add("12:20:00,000", "[KafkaServer id=2] shutting down", server)
    log.add("12:20:01,000", "[KafkaServer id=2] shut down completed", server)
    log.start("12:30:00,000")
    log.add("12:30:01,000", "Attempting recovery for all logs in /d3 since no clean shutdown file was found")
    started.append(log.add("12:30:02,000", "[KafkaServer id=2] started", server))
    # Killed, then killed again while loading its logs: two crashes.
    log.start("12:40:00,000")
    unclean.append(log.add("12:40:00,100", "Recovering 1 logs from /d3 since no clean shutdown file was found"))
    log.start("12:41:00,000")
    unclean.append(log.add("12:41:00,100", "Recovering 1 logs from /d3 since no clean shutdown file was found"))
    started.append(log.add("12:41:01,000", "[KafkaServer id=2] started", server))
    got = parse(spark, write_logs(tmp_path, {"server.log": log.text()}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    lifecycle = [(r.broker_id, r.action, r.ts_ms, r._source_line) for r in got.where(
        "event_type = 'broker_lifecycle'").orderBy("event_id").collect()]
    # A crash is dated 1 ms after its process's last line.
    assert lifecycle == [(2, action, ms(f"2024-05-14 {t}") + (action == "crash"), line) for action, t, line in (
        ("start", "12:00:01,000", started[0]),
        ("crash", "12:06:30,500", unclean[0]),
        ("start", "12:10:02,000", started[1]),
        ("shutdown", "12:20:00,000", stopped),
        ("start", "12:30:02,000", started[2]),
        ("crash", "12:30:02,000", unclean[1]),
        ("crash", "12:40:00,100", unclean[2]),
        ("start", "12:41:01,000", started[3]),
    )]


def test_a_crash_is_dated_past_failed_starts_its_other_files_and_a_roll(spark: SparkSession, tmp_path: Path) -> None:
    """The crashed process is the last that loaded its logs: starts that failed before that (an exit, a KRaft start
    that shut down before its metadata came) are skipped, whether or not they completed a shutdown. A first log
    directory without logs (3.5+) leaves the second's unclean line the crash's. The crash comes after the broker's
    last line in any of its files (a state-change line after its last server.log line), and, where the log rolled
    as the broker started again, after the last line of the file rolled before; past a long stack trace. A file cut
    before its process's first line dates no crash; one whose log rolled between the next process's first line and
    its unclean line does."""
    kafka, brokers = "kafka.server.KafkaServer", "kafka.server.BrokerServer"
    # Broker 1 (ZooKeeper): killed after its last server.log line at 12:05; a start that exits at once; then a
    # start whose first directory is empty and whose second is unclean.
    one = _Log()
    one.served("12:00:00", 1, "12:05:00,000")
    one.start("12:20:00,000")
    one.add("12:20:00,300", "Exiting Kafka due to fatal exception", "kafka.Kafka$", "ERROR")
    one.start("12:30:00,000")
    one.add("12:30:00,100", "No logs found to be loaded in /d0")
    unclean = {1: one.add("12:30:00,101", "Recovering 2 logs from /d1 since no clean shutdown file was found")}
    # Its state-change.log: the crashed process's last line, after its last server.log line.
    changes = _Log()
    changes.add("12:05:00,500", "[Broker id=1] Follower u-0 starts at leader epoch 4 from offset 9 with partition "
                "epoch 4 and high watermark 9. Current leader is 2. Previous leader Some(2) and previous leader epoch "
                "was 3.", "state.change.logger")
    # The next process's own line, stamped in the millisecond of its first line: not the crashed process's.
    changes.add("12:30:00,000", "[Broker id=1] Follower u-0 starts at leader epoch 5 from offset 9 with partition "
                "epoch 5 and high watermark 9. Current leader is 2. Previous leader Some(2) and previous leader epoch "
                "was 4.", "state.change.logger")
    # Broker 2 (KRaft): killed after a long stack trace; a start that failed before its metadata came and shut down
    # in order (no directory loaded, so none marked clean); the next start finds the directory unclean.
    two = _Log()
    two.start("13:00:00,000")
    two.add("13:00:00,100", "No logs found to be loaded in /d1")
    two.add("13:00:01,000", "[BrokerServer id=2] Transition from STARTING to STARTED", brokers)
    two.add("13:10:00,000", "Uncaught exception in thread 'data-plane-kafka-request-handler-1'", "kafka.utils.Logging",
            "ERROR")
    two.raw("java.lang.StackOverflowError", *["\tat kafka.log.UnifiedLog.read(UnifiedLog.scala:1)"] * 1100)
    two.start("13:20:00,000")
    two.add("13:20:00,100", "[BrokerServer id=2] Transition from SHUTDOWN to STARTING", brokers)
    two.add("13:20:30,000", "Fatal error during broker startup. Prepare to shutdown", "kafka.server.BrokerServer",
            "ERROR")
    two.add("13:20:30,100", "[BrokerServer id=2] shutting down", brokers)
    two.add("13:20:31,000", "[BrokerServer id=2] shut down completed", brokers)
    two.start("13:30:00,000")
    unclean[2] = two.add("13:30:00,100", "Recovering 1 logs from /d1 since no clean shutdown file was found")
    for n in range(5000):  # the file goes on: its last lines (`TAIL_LINES`) are not the trace's
        two.add(f"13:{31 + n // 1000}:{n % 1000 // 20:02d},000", f"[ProducerStateManager partition=t-{n % 7}] Wrote "
                "producer snapshot at offset 5 with 0 producer ids in 1 ms.", "kafka.log.ProducerStateManager")
    # Broker 3 (log4j2): its log rolled as it started again in the next hour; the old hour's file ends with the
    # crashed process's last line.
    rolled, current = _Log(), _Log()
    rolled.start("13:00:00,000")
    rolled.add("13:00:00,100", "Recovering 1 logs from /d1 since no clean shutdown file was found")  # a first start
    rolled.add("13:00:01,000", "[KafkaServer id=3] started", kafka)
    rolled.add("13:59:58,000", "[Partition t-0 broker=3] ISR updated to 3 and version updated to 5",
               "kafka.cluster.Partition")
    current.start("14:02:00,000")
    unclean[3] = current.add("14:02:00,100", "Recovering 1 logs from /d1 since no clean shutdown file was found")
    # Broker 4: a file cut before its process's first line (the MBean line): its unclean line dates no crash.
    cut = _Log()
    cut.add("15:00:00,100", "starting", kafka)
    cut.add("15:00:00,200", "Recovering 1 logs from /d1 since no clean shutdown file was found")
    cut.add("15:00:01,000", "[KafkaServer id=4] started", kafka)
    # Broker 5: the log rolled between the next process's first line and its unclean line.
    before_roll, after_roll = _Log(), _Log()
    before_roll.served("15:00:00", 5, "15:30:00,000")
    before_roll.start("15:59:59,900")
    unclean[5] = after_roll.add("16:00:00,100", "Recovering 1 logs from /d1 since no clean shutdown file was found")
    files = {"b1/server.log": one.text(), "b1/state-change.log": changes.text(), "b2/server.log": two.text(),
             "b3/server.log.2024-05-14-13": rolled.text(), "b3/server.log": current.text(), "b4/server.log": cut.text(),
             "b5/server.log.2024-05-14-15": before_roll.text(), "b5/server.log": after_roll.text()}
    got = parse(spark, write_logs(tmp_path, files))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    assert got.where("broker_id = 4 AND action = 'start'").count() == 1
    assert _crashes(got) == {1: (ms("2024-05-14 12:05:00,501"), "b1", unclean[1], "unclean_start"),
                             2: (ms("2024-05-14 13:10:00,001"), "b2", unclean[2], "unclean_start"),
                             3: (ms("2024-05-14 13:59:58,001"), "b3", unclean[3], "unclean_start"),
                             5: (ms("2024-05-14 15:30:00,001"), "b5", unclean[5], "unclean_start")}


_POD = "kafka_kafka-{}_0b5a3d0e-1c2f-4a5b-9c8d-7e6f5a4b3c2{}/kafka"


def _cri(log: _Log) -> str:
    """`log` as a container runtime writes a container's output: each line after its own time (an hour off the
    broker's, which is not the line's), the stream (log4j's console appender: stdout; a trace: stderr) and F."""
    trace = ("\t", "java.")
    return "".join(f"2024-05-14T10:00:00.000000001Z {'stderr' if line.startswith(trace) else 'stdout'} F {line}\n"
                   for line in log.lines)


def test_a_kubernetes_containers_restarts_are_one_log(spark: SparkSession, tmp_path: Path) -> None:
    """The kubelet writes a container's output to `<restarts>.log` in the pod's folder, rotated to
    `<restarts>.log.<time>.gz`: a broker killed in `0.log` starts again in `1.log`, and its crash is dated by
    `0.log`'s last line, not by another pod's. Each line's runtime prefix goes: the config block and the stack trace
    are read as in a broker's own files."""
    kafka = "kafka.server.KafkaServer"
    rotated, first, second, other = _Log(), _Log(), _Log(), _Log()
    rotated.start("12:00:00,000")
    rotated.raw("[2024-05-14 12:00:00,500] INFO KafkaConfig values: ", "\tbroker.id = 0",
                "\treplica.lag.time.max.ms = 30000", " (kafka.server.KafkaConfig)")
    rotated.add("12:00:00,600", "Skipping recovery of 1 logs from /d1 since clean shutdown file was found")
    rotated.add("12:00:01,000", "[KafkaServer id=0] started", kafka)
    first.add("12:05:00,000", "[Partition t-0 broker=0] ISR updated to 0 and version updated to 2",
              "kafka.cluster.Partition")
    first.out_of_memory("12:06:00,000", 30)
    second.start("12:10:00,000")
    unclean = second.add("12:10:00,100", "Recovering 1 logs from /d1 since no clean shutdown file was found")
    second.add("12:10:01,000", "[KafkaServer id=0] started", kafka)
    # Another pod's broker, whose last line is later than the crashed one's.
    other.served("12:00:00", 1, "12:07:00,000")
    pod0, pod1 = _POD.format(0, "d"), _POD.format(1, "e")
    paths = write_logs(tmp_path, {f"{pod0}/0.log": _cri(first), f"{pod0}/1.log": _cri(second),
                                  f"{pod1}/0.log": _cri(other)})
    (tmp_path / pod0 / "0.log.20240514-120030.gz").write_bytes(gzip.compress(_cri(rotated).encode()))
    got = parse(spark, [*paths, str(tmp_path / pod0 / "0.log.20240514-120030.gz")])
    assert got.where("_reason_code IS NOT NULL").count() == 0
    lifecycle = [(r.broker_id, r.action, r.ts_ms, Path(r._source_file).name, r._source_line) for r in got.where(
        "event_type = 'broker_lifecycle'").orderBy("event_id").collect()]
    assert lifecycle == [(0, "start", ms("2024-05-14 12:00:01,000"), "0.log.20240514-120030.gz", 7),
                         (1, "start", ms("2024-05-14 12:00:01,000"), "0.log", 3),
                         (0, "crash", ms("2024-05-14 12:06:00,001"), "1.log", unclean),
                         (0, "start", ms("2024-05-14 12:10:01,000"), "1.log", 3)]
    configs = got.where("event_type = 'broker_config'").select("broker_id", "config").collect()
    assert [(r.broker_id, r.config) for r in configs] == [(0, {"replica.lag.time.max.ms": "30000"})]


def _cri_parts(line: str, size: int = 16384) -> list[str]:
    """`line` as a container runtime writes a line longer than its buffer (containerd's and CRI-O's default 16 KiB):
    parts of `size` bytes tagged P, the last one F, each after its own time."""
    chunks = [line[i:i + size] for i in range(0, len(line), size)]
    return [f"2024-05-14T10:00:00.00000000{k}Z stdout {'F' if k == len(chunks) - 1 else 'P'} {c}\n"
            for k, c in enumerate(chunks)]


def test_a_container_runtimes_partial_lines_are_read_as_one_line(spark: SparkSession, tmp_path: Path) -> None:
    """A broker's 'Added fetcher' line for hundreds of partitions is longer than the 16 KiB a container runtime
    writes at once: it goes to the container's log as parts tagged P and a last one tagged F, the cuts anywhere
    (inside a partition's entry here). Read, the parts are the broker's line again: the same events as from the
    broker's own file, at the number of the line's first part in the container's file. A P part that is a file's
    last line (its rest never written) is read as it is: the entries it holds whole."""
    log = _Log()
    log.start("12:00:00,000")
    log.add("12:00:00,500", "[KafkaServer id=3] started", "kafka.server.KafkaServer")
    entries = ", ".join(f"w-{p} -> InitialFetchState(Some(AbCdEfGhIjKlMnOpQrStUv),BrokerEndPoint(id=1, "
                        f"host=kafka1:9092),{17 + p % 3},{1000 + p})" for p in range(400))
    added = log.add("12:00:01,000", f"[ReplicaFetcherManager on broker 3] Added fetcher to broker 1 for partitions "
                                    f"Map({entries})", "kafka.server.ReplicaFetcherManager")
    after = log.add("12:00:02,000", "[Partition x-0 broker=3] ISR updated to 3 and version updated to 2",
                    "kafka.cluster.Partition")
    cut = log.add("12:00:03,000", f"[ReplicaFetcherManager on broker 3] Added fetcher to broker 2 for partitions "
                                  f"Map({entries.replace('w-', 'v-').replace('id=1', 'id=2')})",
                  "kafka.server.ReplicaFetcherManager")
    whole = "".join(f"{line}\n" for line in log.lines)
    parts = [_cri_parts(line) for line in log.lines]
    assert [len(p) for p in parts[added - 1:]] == [3, 1, 3]
    # The last line's rest was never written: its first part ends the file.
    pod = "".join(part for line in parts[:-1] for part in line) + parts[-1][0]
    plain, split = write_logs(tmp_path, {"broker/server.log": whole, f"{_POD.format(3, 'f')}/0.log": pod})
    before_cut = f"ts_ms < {ms('2024-05-14 12:00:03,000')}"
    expected = parse(spark, [plain]).where(before_cut)
    got = parse(spark, [split])
    assert got.where("_reason_code IS NOT NULL").count() == 0
    assert expected.where("event_type = 'leadership_change'").count() == 400
    columns = [c for c in kept_events(got).columns if c != "event_id"]
    key = ["ts_ms", "event_type", "topic", "partition"]
    assert_df_equality(got.where(before_cut).select(columns).orderBy(key), expected.select(columns).orderBy(key),
                       ignore_nullable=True)
    # Each line's number is its first part's in the container's file (two parts before the ISR line).
    lines = {(r.event_type, r._source_line) for r in got.select("event_type", "_source_line").collect()}
    assert lines == {("broker_lifecycle", 2), ("leadership_change", added), ("isr_change", after + 2),
                     ("leadership_change", cut + 2)}
    # The first part of the cut line: the entries it holds whole (one cut short is not read).
    first = got.where(f"_source_line = {cut + 2} AND event_type = 'leadership_change'")
    listed = len(re.findall(r"v-\d+ -> InitialFetchState\(Some\(\w+\),BrokerEndPoint\([^)]*\),\d+,\d+\)",
                            parts[-1][0]))
    assert 100 < listed < 400
    assert first.where("topic = 'v' AND leader_id = 2").count() == first.count() == listed


def test_a_brokers_startup_config_block_becomes_its_broker_config(spark: SparkSession, tmp_path: Path) -> None:
    """`KafkaConfig values:` and its setting lines (no timestamps) become one broker_config event with the
    replication settings; the broker is broker.id (node.id in KRaft; -1 means ZooKeeper assigns it: the file's);
    other config blocks and stack traces are not read; a block cut before its settings is quarantined."""
    zk = (
        "[2024-05-14 12:00:00,000] INFO KafkaConfig values: \n"
        "\tadvertised.listeners = PLAINTEXT://kafka2:9092\n"
        "\tbroker.id = 2\n"
        "\tmin.insync.replicas = 2\n"
        "\treplica.lag.time.max.ms = 10000\n"
        "\tunclean.leader.election.enable = false\n"
        " (kafka.server.KafkaConfig)\n"
        "[2024-05-14 12:00:00,100] INFO ProducerConfig values: \n"
        "\tacks = -1\n"
        "\tmin.insync.replicas = 7\n"
        " (org.apache.kafka.clients.producer.ProducerConfig)\n"
        "[2024-05-14 12:00:01,000] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)\n"
        "[2024-05-14 12:00:02,000] ERROR [ReplicaManager broker=2] Error processing fetch (kafka.server.ReplicaManager)\n"
        "java.lang.IllegalStateException: x = y\n"
        "\tat kafka.server.ReplicaManager.fetch(ReplicaManager.scala:1)\n"
        # Restarted with a new setting; broker.id -1 (assigned by ZooKeeper): the file's broker.
        "[2024-05-14 13:00:00,000] INFO KafkaConfig values: \n"
        "\tbroker.id = -1\n"
        "\treplica.lag.time.max.ms = 20000\n"
        " (kafka.server.KafkaConfig)\n"
    )
    kraft = (
        "[2024-05-14 12:00:00,000] INFO KafkaConfig values: \n"
        "\tnode.id = 7\n"
        "\tnum.replica.fetchers = 4\n"
        " (kafka.server.KafkaConfig)\n"
        # The file was rolled inside this block: nothing of it follows.
        "[2024-05-14 12:30:00,000] INFO KafkaConfig values: \n"
    )
    got = parse(spark, write_logs(tmp_path, {"server.log": zk, "kraft.log": kraft}))
    configs = got.where("event_type = 'broker_config' AND _reason_code IS NULL").orderBy("ts_ms", "broker_id")
    assert [(r["broker_id"], r["ts_ms"], r["config"]) for r in configs.select("broker_id", "ts_ms", "config").collect()] == [
        (2, ms("2024-05-14 12:00:00,000"), {"min.insync.replicas": "2", "replica.lag.time.max.ms": "10000",
                                            "unclean.leader.election.enable": "false"}),
        (7, ms("2024-05-14 12:00:00,000"), {"num.replica.fetchers": "4"}),
        (2, ms("2024-05-14 13:00:00,000"), {"replica.lag.time.max.ms": "20000"}),
    ]
    bad = [(Path(r["_source_file"]).name, r["_source_line"], r["_reason"]) for r in
           got.where("_reason_code IS NOT NULL").select("_source_file", "_source_line", "_reason").collect()]
    assert bad == [("kraft.log", 5, "a 'KafkaConfig values:' block without a replication setting line after it "
                    "(expected e.g. '\treplica.lag.time.max.ms = 30000'): was the file cut inside the block?")]
    assert got.where("event_type != 'broker_config'").count() == 1  # the start line


ELECTIONS = {
    # A KRaft controller (node 3000): the 3.x line, the ELR-era line with the previous registration, and a topic id
    # no line of these files names.
    "controller.log": """\
[2024-05-14 12:00:00,000] INFO [QuorumController id=3000] Becoming the active controller at epoch 7, next write offset 1. (org.apache.kafka.controller.QuorumController)
[2024-05-14 12:00:01,000] INFO Setting new leader for topicId AbCdEfGhIjKlMnOpQrStUv, partition 3 to 2 using an unclean election (org.apache.kafka.controller.PartitionChangeBuilder)
[2024-05-14 12:00:02,000] INFO Setting new leader for topicId AbCdEfGhIjKlMnOpQrStUv, partition 4 to 1 using an unclean election. Previous partition: PartitionRegistration(replicas=[1, 2, 3], directories=[AAAAAAAAAAAAAAAAAAAAAA, AAAAAAAAAAAAAAAAAAAAAA, AAAAAAAAAAAAAAAAAAAAAA], isr=[3], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=-1, leaderRecoveryState=RECOVERED, leaderEpoch=5, partitionEpoch=9), change record: PartitionChangeRecord(partitionId=4, topicId=AbCdEfGhIjKlMnOpQrStUv, isr=null, leader=-2, replicas=null, removingReplicas=null, addingReplicas=null, leaderRecoveryState=-1, directories=null, eligibleLeaderReplicas=null, lastKnownElr=null) (org.apache.kafka.controller.PartitionChangeBuilder)
[2024-05-14 12:00:03,000] INFO Setting new leader for topicId ZyXwVuTsRqPoNmLkJiHgFe, partition 0 to 1 using an unclean election (org.apache.kafka.controller.PartitionChangeBuilder)
""",
    # The elected broker names the topic of that id.
    "server-2.log": """\
[2024-05-14 12:00:01,100] INFO [Broker id=2] Leader orders-3 with topic id Some(AbCdEfGhIjKlMnOpQrStUv) starts at leader epoch 6 from offset 100 with partition epoch 10, high watermark 90, ISR [2], adding replicas [] and removing replicas [] . Previous leader Some(1) and previous leader epoch was 5. (state.change.logger)
""",
    # A ZooKeeper controller (broker 1, 0.10 and 1.0 forms of the partition), which also leads orders-5 itself:
    # the election does not take the epoch of the controller's own leadership line.
    "controller.log.2024-05-14-12": """\
[2024-05-14 12:00:00,500] INFO [Controller 1]: Broker 1 starting become controller state transition (kafka.controller.KafkaController)
[2024-05-14 12:00:01,500] INFO [Partition orders-5 broker=1] orders-5 starts at Leader Epoch 4 from offset 80. Previous Leader Epoch was: 3 (kafka.cluster.Partition)
[2024-05-14 12:00:02,500] WARN [OfflinePartitionLeaderSelector]: No broker in ISR is alive for [orders,5]. Elect leader 2 from live brokers 2,3. There's potential data loss. (kafka.controller.OfflinePartitionLeaderSelector)
[2024-05-14 12:00:03,500] WARN [OfflinePartitionLeaderSelector]: No broker in ISR is alive for orders-6. Elect leader 3 from live brokers [3]. There's potential data loss. (kafka.controller.OfflinePartitionLeaderSelector)
""",
}


def test_unclean_elections_are_read_from_the_controllers_log(spark: SparkSession, tmp_path: Path) -> None:
    """The controller's unclean election lines become leader_election events (ISR forced to the new leader); a
    KRaft line's topic id is named by the brokers' lines, else the line is quarantined with the reason."""
    got = parse(spark, write_logs(tmp_path, ELECTIONS))
    elections = got.where("event_type = 'leader_election' AND _reason_code IS NULL").orderBy("ts_ms").select(
        "broker_id", "topic", "partition", "action", "leader_id", "isr", "leader_epoch", "partition_epoch", "replicas")
    schema = ("broker_id int, topic string, partition int, action string, leader_id int, isr array<int>, "
              "leader_epoch int, partition_epoch int, replicas array<int>")
    expected = [
        (3000, "orders", 3, "unclean", 2, [2], None, None, None),
        # The ELR-era line: the new registration's epochs are the previous ones plus one.
        (3000, "orders", 4, "unclean", 1, [1], 6, 10, [1, 2, 3]),
        (1, "orders", 5, "unclean", 2, [2], None, None, None),
        (1, "orders", 6, "unclean", 3, [3], None, None, None),
    ]
    assert_df_equality(elections, spark.createDataFrame(expected, schema), ignore_nullable=True)
    bad = [(Path(r["_source_file"]).name, r["_source_line"], r["_reason"]) for r in
           got.where("_reason_code IS NOT NULL").select("_source_file", "_source_line", "_reason").collect()]
    assert bad == [("controller.log", 4, _UNNAMED.format("ZyXwVuTsRqPoNmLkJiHgFe"))]
    # The events keep the ids the lines print.
    assert [tuple(r) for r in got.where("topic_id IS NOT NULL AND _reason_code IS NULL").orderBy("ts_ms").select(
        "event_type", "partition", "topic_id").collect()] == [
        ("leader_election", 3, "AbCdEfGhIjKlMnOpQrStUv"), ("leadership_change", 3, "AbCdEfGhIjKlMnOpQrStUv"),
        ("leader_election", 4, "AbCdEfGhIjKlMnOpQrStUv")]
    # A rolled controller.log with no line naming its controller: the election is kept, its controller unknown.
    alone = parse(spark, write_logs(tmp_path / "alone", {"controller.log.1": ELECTIONS[
        "controller.log.2024-05-14-12"].split("\n", 2)[2]}))
    assert [(r["broker_id"], r["partition"], r["leader_id"], r["_reason"]) for r in alone.orderBy("ts_ms").select(
        "broker_id", "partition", "leader_id", "_reason").collect()] == [(None, 5, 2, None), (None, 6, 3, None)]


def test_a_crash_is_dated_by_the_last_lines_of_a_file_an_earlier_batch_read(spark: SparkSession, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """An hourly ingest of rolled files: the crashed process's last lines are in a file of the batch before, the next
    process's unclean line in this one. The earlier file rolled just before the new one (compressed too) dates the
    crash; its lines are not read again as events, and it is read only where the new file holds an unclean line.
    No crash after a completed shutdown, though thousands of lines of failed starts follow it, nor where no earlier
    file of the log is there, nor where the file in between could not be read."""
    landing, lake = tmp_path / "landing", EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    kafka = "kafka.server.KafkaServer"
    isr = "[Partition t-0 broker={}] ISR updated to {} and version updated to 2"
    # Broker 1: killed past a stack trace. Broker 2: stopped in order. Broker 3: killed, and its log rolled after the
    # next process's first line (the rolled file is gzipped). Broker 4: two rolled hours; the later one's last line is
    # the crashed process's. Broker 5: its first file. Broker 6: a clean start. Broker 7: stopped in order, then
    # failed starts (no meta.properties) past the earlier file's last `TAIL_LINES`. Broker 8: the hour between its
    # earlier file and the restart's does not inflate. Broker 9: an older hour, stopped in order, lands late, with
    # the restart: the hours between, read before, hold a process that loaded its logs and was killed.
    one, two, three, four_a, four_b, seven, eight, nine_a, nine_b, nine_old = (_Log() for _ in range(10))
    one.served("12:00:00", 1, "12:05:00,000")
    one.out_of_memory("12:06:00,000", 50)
    two.served("12:00:00", 2, "12:30:00,000")
    two.add("12:40:00,000", "[KafkaServer id=2] shutting down", kafka)
    two.add("12:40:01,000", "[KafkaServer id=2] shut down completed", kafka)
    three.served("12:00:00", 3, "12:50:00,000")
    three.start("12:59:59,900")
    four_a.served("11:00:00", 4, "11:30:00,000")
    four_b.add("12:45:00,000", isr.format(4, 4), "kafka.cluster.Partition")
    seven.served("12:00:00", 7, "12:05:00,000")
    seven.add("12:09:00,000", "[KafkaServer id=7] shutting down", kafka)
    seven.add("12:09:01,000", "[KafkaServer id=7] shut down completed", kafka)
    for k in range(1200):
        seven.start(f"12:{10 + k // 30:02d}:{k % 30 * 2:02d},000")
        seven.add(f"12:{10 + k // 30:02d}:{k % 30 * 2:02d},500", "Exiting Kafka due to fatal exception", "kafka.Kafka$",
                  "ERROR")
        seven.raw("java.lang.RuntimeException: No readable meta.properties files found.", "\tat kafka.Kafka.main(x)")
    eight.served("11:00:00", 8, "11:30:00,000")
    nine_a.served("11:00:00", 9, "11:30:00,000")
    nine_b.add("12:40:00,000", isr.format(9, 9), "kafka.cluster.Partition")
    nine_old.served("10:00:00", 9, "10:30:00,000")
    nine_old.add("10:40:00,000", "[KafkaServer id=9] shutting down", kafka)
    nine_old.add("10:40:01,000", "[KafkaServer id=9] shut down completed", kafka)
    write_logs(landing, {"b9/server.log.2024-05-14-11": nine_a.text(), "b9/server.log.2024-05-14-12": nine_b.text(),"b1/server.log.2024-05-14-12": one.text(), "b2/server.log.2024-05-14-12": two.text(),
                         "b4/server.log.2024-05-14-11": four_a.text(), "b4/server.log.2024-05-14-12": four_b.text(),
                         "b7/server.log.2024-05-14-12": seven.text(), "b8/server.log.2024-05-14-11": eight.text()})
    (landing / "b3").mkdir()
    (landing / "b3" / "server.log.2024-05-14-12.gz").write_bytes(gzip.compress(three.text().encode()))
    before = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (before.read, before.quarantined) == (before.kept, 0)
    later: dict[int, _Log] = {b: _Log() for b in range(1, 10)}
    unclean: dict[int, int] = {}
    for b, log in later.items():
        if b != 3:
            log.start("13:00:00,000")
        if b != 6:
            unclean[b] = log.add("13:00:00,100", "Recovering 1 logs from /d1 since no clean shutdown file was found")
        log.add("13:00:01,000", f"[KafkaServer id={b}] started", kafka)
    names = {b: "server.log.2024-05-14-13" for b in (4, 7, 8, 9)}
    write_logs(landing, {f"b{b}/{names.get(b, 'server.log')}": log.text() for b, log in later.items()})
    write_logs(landing, {"b9/server.log.2024-05-14-10": nine_old.text()})
    (landing / "b8" / "server.log.2024-05-14-12.gz").write_bytes(gzip.compress(eight.text().encode())[:-20])
    read: list[str] = []

    def lines_of(path: str) -> list[tuple[int, str, bool]]:
        read.append(str(Path(path).relative_to(landing)))
        return earlier_lines(path)

    monkeypatch.setattr(crash_context_module, "earlier_lines", lines_of)
    said: list[str] = []
    after = run_ingest(spark, lake, str(landing), log=said.append, logs=options)
    # Nine starts, four crashes, the late hour's start, ISR change and shutdown, and the file that does not inflate.
    assert (after.read, after.kept, after.quarantined) == (17, 16, 1)
    assert sorted(set(read)) == ["b1/server.log.2024-05-14-12", "b2/server.log.2024-05-14-12",
                                 "b3/server.log.2024-05-14-12.gz", "b4/server.log.2024-05-14-12",
                                 "b7/server.log.2024-05-14-12", "b9/server.log.2024-05-14-12"]
    assert "ingest: read the last lines of {}: {} tells of a crash they may date".format(
        landing / "b1/server.log.2024-05-14-12", landing / "b1/server.log") in said
    bronze = lake.read(BRONZE_EVENTS)
    assert _crashes(bronze) == {1: (ms("2024-05-14 12:06:00,001"), "b1", unclean[1], "unclean_start"),
                                3: (ms("2024-05-14 12:50:00,001"), "b3", unclean[3], "unclean_start"),
                                4: (ms("2024-05-14 12:45:00,001"), "b4", unclean[4], "unclean_start"),
                                9: (ms("2024-05-14 12:40:00,001"), "b9", unclean[9], "unclean_start")}
    # The earlier files' events are the first batch's alone.
    assert bronze.count() == before.kept + after.kept
    assert bronze.select("event_id").distinct().count() == bronze.count()


_UNNAMED = ("topic id {} is named by no line of these files nor by the run's events in bronze (expected a "
            "state-change line such as 'Leader orders-3 with topic id Some(<id>) starts at leader epoch ...': ingest "
            "the brokers' logs of Kafka 3.3+ with or before the controller's)")


def test_a_controllers_topic_id_is_named_by_a_line_of_an_earlier_batch(spark: SparkSession, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The brokers' logs ingested first, the controller's later (a scheduled ingest of each hour's rolled files):
    bronze's events keep the topic ids their lines print, which name the topic of the controller's lines. The
    later batch's records are made once, for its full pass and its quarantine pass alike (counted by a
    pass-through Python function on each record's run id)."""
    landing = tmp_path / "landing"
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    write_logs(landing, {"server-2.log": ELECTIONS["server-2.log"]})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 1
    write_logs(landing, {"controller.log": ELECTIONS["controller.log"]})
    said: list[str] = []
    made = spark.sparkContext.accumulator(0)

    def tally(run_id: str) -> str:
        made.add(1)
        return run_id

    def counted(spark_: SparkSession, paths: list[str], *args: Any, **kwargs: Any) -> DataFrame:
        return read_broker_logs(spark_, paths, *args, **kwargs).withColumn("run_id", F.udf(tally, "string", useArrow=False)("run_id"))

    monkeypatch.setattr(ingest_module, "read_broker_logs", counted)
    later = run_ingest(spark, lake, str(landing), log=said.append, logs=options)
    assert (later.read, later.kept, later.quarantined) == (3, 2, 1)
    assert made.value == 3
    # Its ids lie among bronze's in time but share none: written once, not again behind the exact check.
    assert not any("writing again" in m for m in said), said
    bronze = lake.read(BRONZE_EVENTS)
    assert [tuple(r) for r in bronze.where("event_type = 'leader_election'").orderBy("partition").select(
        "topic", "partition", "topic_id", "leader_id", "leader_epoch").collect()] == [
        ("orders", 3, "AbCdEfGhIjKlMnOpQrStUv", 2, None), ("orders", 4, "AbCdEfGhIjKlMnOpQrStUv", 1, 6)]
    quarantined = lake.read(BRONZE_QUARANTINE).select("_source_line", "reason").collect()
    assert [tuple(r) for r in quarantined] == [(4, _UNNAMED.format("ZyXwVuTsRqPoNmLkJiHgFe"))]


def test_an_unclean_election_from_logs_shows_in_partition_state_and_the_moments(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    """The election read from the controller's log makes the new leader the partition's (cause
    leader_election:unclean) and is one of the partition's moments for the investigation notebook."""
    from jobs.investigate import partition_moments
    from jobs.transforms.timelines import partition_state

    got = parse(spark, write_logs(tmp_path, ELECTIONS)).where("_reason_code IS NULL")
    events = kept_events(got)
    state = partition_state(events).where("topic = 'orders' AND partition = 3").orderBy("valid_from_ms")
    assert [(r["leader_id"], r["isr"], r["cause"]) for r in state.select("leader_id", "isr", "cause").collect()] == [
        (2, [2], "leader_election:unclean"), (2, [2], "leadership_change:become_leader")]
    moments = partition_moments(events, "cluster-a", "orders", 4).select("kind", "moment").collect()
    assert [tuple(r) for r in moments] == [("election", "unclean election: leader 1 in epoch 6, ISR [1]")]
    moments = partition_moments(events, "cluster-a", "orders", 3).select("kind", "moment").collect()
    assert [tuple(r) for r in moments] == [("election", "unclean election: leader 2, ISR [2]")]


_LEADER_LINE = ("[2024-05-14 {t}] INFO [Broker id={b}] Leader {tp} with topic id Some({id}) starts at leader epoch {e} "
                "from offset 100 with partition epoch 10, high watermark 90, ISR [{b}], adding replicas [] and removing "
                "replicas [] . Previous leader Some(1) and previous leader epoch was {prev}. (state.change.logger)\n")
_RECOVERING_LINE = ("[2024-05-14 {t}] INFO [Broker id={b}] The topic partition {tp} was marked as RECOVERING. Marking "
                    "the topic partition as RECOVERED. (state.change.logger)\n")
_SKIPPED_LINE = ("[2024-05-14 {t}] INFO [Broker id={b}] Skipped the become-leader state change for {tp} with topic id "
                 "{id} and partition state LeaderAndIsrPartitionState(topicName='orders', partitionIndex=3, "
                 "controllerEpoch=-1, leader={b}, leaderEpoch={e}, isr=[{b}], partitionEpoch=11, replicas=[1, 2, 3], "
                 "addingReplicas=[], removingReplicas=[], isNew=false, leaderRecoveryState=1) since it is already the "
                 "leader with leader epoch {e}. Current high watermark 90, ISR [{b}], adding replicas [] and removing "
                 "replicas []. (state.change.logger)\n")
_ORDERS_ID = "AbCdEfGhIjKlMnOpQrStUv"
_OTHER_ID = "ZyXwVuTsRqPoNmLkJiHgFe"
RECOVERING_LOGS = {
    # Broker 2 becomes orders-3's leader in epoch 6 after an unclean election (the line, then the leader line of the
    # same makeLeader call); a new LeaderAndIsr while its AlterPartition is on its way prints the line again, with
    # the sitting leader's "Skipped" line. Broker 3 (a ZooKeeper cluster, IBP 3.2+: its controller prints no line)
    # leads orders-7 in epoch 3 that way. Broker 4 led orders-9 in epoch 5 an hour before; its RECOVERING line
    # stands alone (the file was cut before the leader line): its election's epoch is not known.
    "state-change-2.log": (_RECOVERING_LINE.format(t="12:00:01,100", b=2, tp="orders-3")
                           + _LEADER_LINE.format(t="12:00:01,100", b=2, tp="orders-3", id=_ORDERS_ID, e=6, prev=5)
                           + _RECOVERING_LINE.format(t="12:00:01,400", b=2, tp="orders-3")
                           + _SKIPPED_LINE.format(t="12:00:01,400", b=2, tp="orders-3", id=_ORDERS_ID, e=6)),
    "state-change-3.log": (_RECOVERING_LINE.format(t="12:00:02,000", b=3, tp="orders-7")
                           + _LEADER_LINE.format(t="12:00:02,001", b=3, tp="orders-7", id=_OTHER_ID, e=3, prev=2)),
    "state-change-4.log": (_LEADER_LINE.format(t="11:00:00,000", b=4, tp="orders-9", id=_ORDERS_ID, e=5, prev=4)
                           + _RECOVERING_LINE.format(t="12:00:03,000", b=4, tp="orders-9")),
}


def _controller_line(t: str, topic_id: str, partition: int, leader: int, previous_epoch: int | None = None) -> str:
    """A KRaft controller's unclean election line; with `previous_epoch`, the ELR-era form that gives the epochs."""
    previous = "" if previous_epoch is None else (
        f". Previous partition: PartitionRegistration(replicas=[1, 2, 3, 4], isr=[1], leader=-1, "
        f"leaderRecoveryState=RECOVERED, leaderEpoch={previous_epoch}, partitionEpoch=9), change record: "
        f"PartitionChangeRecord(partitionId={partition})")
    return (f"[2024-05-14 {t}] INFO Setting new leader for topicId {topic_id}, partition {partition} to {leader} "
            f"using an unclean election{previous} (org.apache.kafka.controller.PartitionChangeBuilder)\n")


def _elections(got: DataFrame) -> list[tuple]:
    return [tuple(r) for r in got.where("event_type = 'leader_election' AND _reason_code IS NULL").orderBy(
        "partition", "ts_ms").select("broker_id", "partition", "action", "leader_id", "isr", "leader_epoch").collect()]


def test_a_new_leaders_recovering_line_is_the_unclean_election(spark: SparkSession, tmp_path: Path) -> None:
    """KIP-704: where no controller line tells of an unclean election, the new leader's 'marked as RECOVERING'
    line does: one election per epoch, whose leader and ISR are the broker, in the epoch of the line makeLeader
    prints next (none when it printed none)."""
    got = parse(spark, write_logs(tmp_path, RECOVERING_LOGS))
    assert _elections(got) == [(2, 3, "unclean", 2, [2], 6), (3, 7, "unclean", 3, [3], 3),
                               (4, 9, "unclean", 4, [4], None)]
    assert got.where("_reason_code IS NOT NULL").count() == 0
    assert inv.evaluate(kept_events(got), ["leader_epoch_monotonic", "isr_nonempty"]).count() == 0


def test_a_recovering_leaders_epoch_is_read_past_the_log_it_loads(spark: SparkSession, tmp_path: Path) -> None:
    """makeLeader prints RECOVERING, then (the partition's first call in this process) the creation of its log, if
    new, and the HW it starts with in server.log, then the leader line: the election still takes that leader line's
    epoch."""
    logs = dict(RECOVERING_LOGS, **{"server-3.log": (
        "[2024-05-14 12:00:01,900] INFO Completed load of Log(dir=/data/orders-7, topic=orders, partition=7, "
        "highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=100) with 1 segments in 3ms (1/1 loaded "
        "in /data) (kafka.log.LogManager)\n"
        # Its log deleted while it was out of the assignment, created again by this call: two lines between.
        "[2024-05-14 12:00:02,001] INFO Created log for partition orders-7 in /data/orders-7 with properties {} "
        "(kafka.log.LogManager)\n"
        "[2024-05-14 12:00:02,001] INFO [Partition orders-7 broker=3] Log loaded for partition orders-7 with initial "
        "high watermark 90 (kafka.cluster.Partition)\n")})
    got = parse(spark, write_logs(tmp_path, logs))
    assert _elections(got) == [(2, 3, "unclean", 2, [2], 6), (3, 7, "unclean", 3, [3], 3),
                               (4, 9, "unclean", 4, [4], None)]
    assert got.where("event_type = 'hw_change' AND partition = 7").count() == 1


def test_a_recovering_line_reprinted_in_a_new_epoch_of_the_same_leader_is_no_election(spark: SparkSession,
                                                                                      tmp_path: Path) -> None:
    """Broker 2, elected uncleanly in epoch 6, gets epoch 7 before its AlterPartition cleared RECOVERING (the
    controller moved the epoch for a reassignment): Kafka prints the RECOVERING line again, and the leader line
    names broker 2 itself as the previous leader, so it is no second election. A leader line naming another
    broker, or none (a new process), after a RECOVERING line is an election of its own."""
    def reprint(t: str, e: int, previous: str) -> str:
        return (_RECOVERING_LINE.format(t=t, b=2, tp="orders-3")
                + _LEADER_LINE.format(t=t, b=2, tp="orders-3", id=_ORDERS_ID, e=e, prev=e - 1).replace(
                    "Previous leader Some(1)", f"Previous leader {previous}"))
    logs = {"state-change-2.log": RECOVERING_LOGS["state-change-2.log"] + reprint("12:00:05,000", 7, "Some(2)")}
    got = parse(spark, write_logs(tmp_path / "reprinted", logs))
    assert [e for e in _elections(got) if e[1] == 3] == [(2, 3, "unclean", 2, [2], 6)]
    assert got.where("_reason_code IS NOT NULL").count() == 0
    assert got.where("event_type = 'leadership_change'").count() == 2  # its leader lines stay events
    for previous in ("Some(1)", "None"):
        logs = {"state-change-2.log": RECOVERING_LOGS["state-change-2.log"] + reprint("12:00:05,000", 7, previous)}
        got = parse(spark, write_logs(tmp_path / previous.replace("(", "").replace(")", ""), logs))
        assert [e for e in _elections(got) if e[1] == 3] == [(2, 3, "unclean", 2, [2], 6), (2, 3, "unclean", 2, [2], 7)]


def test_the_controllers_line_and_the_leaders_line_of_one_election_are_one_event(spark: SparkSession,
                                                                                 tmp_path: Path) -> None:
    """With the controller's log, the election is its line (the leader's restates it): with or without an epoch
    on either line (an undated controller line takes the leader's), and whichever is stamped first (two hosts'
    clocks); an election of another leader, or of the same leader long after an undated one, is its own."""
    controller = (
        "[2024-05-14 12:00:00,000] INFO [QuorumController id=3000] Becoming the active controller at epoch 7, next "
        "write offset 1. (org.apache.kafka.controller.QuorumController)\n"
        + _controller_line("12:00:01,000", _ORDERS_ID, 3, 2)
        # Stamped 20 ms after broker 3's lines on a clock ahead of the broker's.
        + _controller_line("12:00:02,020", _OTHER_ID, 7, 3, previous_epoch=2)
        + _controller_line("12:00:02,900", _ORDERS_ID, 9, 4, previous_epoch=7))
    got = parse(spark, write_logs(tmp_path, {**RECOVERING_LOGS, "controller.log": controller}))
    assert _elections(got) == [(3000, 3, "unclean", 2, [2], 6), (3000, 7, "unclean", 3, [3], 3),
                               (3000, 9, "unclean", 4, [4], 8)]
    assert inv.evaluate(kept_events(got), ["leader_epoch_monotonic"]).count() == 0
    # Broker 1 followed broker 2 before its election: its leader line names broker 2 as the previous leader.
    later = (_RECOVERING_LINE.format(t="12:00:05,000", b=1, tp="orders-3")
             + _LEADER_LINE.format(t="12:00:05,000", b=1, tp="orders-3", id=_ORDERS_ID, e=7, prev=6).replace(
                 "Previous leader Some(1)", "Previous leader Some(2)"))
    again = (_RECOVERING_LINE.format(t="13:20:00,000", b=2, tp="orders-3")
             + _LEADER_LINE.format(t="13:20:00,000", b=2, tp="orders-3", id=_ORDERS_ID, e=9, prev=8))
    got = parse(spark, write_logs(tmp_path / "other", {"controller.log": controller, "state-change-1.log": later,
                                                       "state-change-2.log": again}))
    assert [e for e in _elections(got) if e[1] == 3] == [
        (3000, 3, "unclean", 2, [2], None), (1, 3, "unclean", 1, [1], 7), (2, 3, "unclean", 2, [2], 9)]


def stamp(ms: int) -> str:
    """The log4j time of `ms` after 12:00 (the test logs' day)."""
    return f"12:{ms // 60_000:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def _elected_leaders_lines(elections: tuple[tuple[int, str, int, int], ...]) -> dict[str, str]:
    """Each new leader's RECOVERING line and leader line per (ms, partition, broker, epoch), by state-change file."""
    leaders: dict[str, str] = defaultdict(str)
    for t, tp, b, e in elections:
        leaders[f"state-change-{b}.log"] += (_RECOVERING_LINE.format(t=stamp(t), b=b, tp=tp)
                                             + _LEADER_LINE.format(t=stamp(t), b=b, tp=tp, id=_ORDERS_ID, e=e,
                                                                   prev=e - 1))
    return leaders


def test_an_undated_controller_line_takes_the_epoch_of_its_own_leaders_line(spark: SparkSession,
                                                                           tmp_path: Path) -> None:
    """A controller's line without the epoch takes the one its leader's RECOVERING lines give, only where that is
    unambiguous: orders-3's first election (its leader printed the line twice) and second (a third election of the
    same leader 30 s later printed nothing: its leader crashed first) take theirs; the third takes none. orders-4:
    leaders 2, 3 and 2 again one second apart, the controller's clock 1.5 s ahead: each of broker 2's lines is
    nearer to the other election of broker 2, so neither takes an epoch (nor gives a false epoch finding)."""
    controller = "".join(_controller_line(stamp(t), _ORDERS_ID, p, b) for t, p, b in (
        (1_000, 3, 2), (120_000, 3, 2), (150_000, 3, 2),
        (300_000 - 50 + 1_500, 4, 2), (301_000 - 50 + 1_500, 4, 3), (302_000 - 50 + 1_500, 4, 2)))
    leaders = _elected_leaders_lines(((1_100, "orders-3", 2, 6), (120_100, "orders-3", 2, 8), (300_000, "orders-4", 2, 6),
                                      (301_000, "orders-4", 3, 7), (302_000, "orders-4", 2, 8)))
    # Kafka prints broker 2's first line again, with the sitting leader's "Skipped" line.
    leaders["state-change-2.log"] += (_RECOVERING_LINE.format(t=stamp(1_400), b=2, tp="orders-3")
                                      + _SKIPPED_LINE.format(t=stamp(1_400), b=2, tp="orders-3", id=_ORDERS_ID, e=6))
    got = parse(spark, write_logs(tmp_path, {"controller.log": controller, **leaders}))
    assert _elections(got) == [
        (None, 3, "unclean", 2, [2], 6), (None, 3, "unclean", 2, [2], 8), (None, 3, "unclean", 2, [2], None),
        (None, 4, "unclean", 2, [2], None), (None, 4, "unclean", 3, [3], 7), (None, 4, "unclean", 2, [2], None)]
    assert inv.evaluate(kept_events(got), ["leader_epoch_monotonic"]).count() == 0



def test_a_leaders_second_unclean_election_stands_when_one_controller_line_is_missing(spark: SparkSession,
                                                                                      tmp_path: Path) -> None:
    """Broker 2 is elected uncleanly twice within a minute, and the controller's log holds the line of only one of
    the two: the leader's RECOVERING lines pair with the controller's lines in time order, so the one left over is
    an election of its own (any line within the window would take both for restatements). orders-3: elections 50 s
    apart, the second's controller line landed (pairing with the nearer keeps the first, with its epoch). orders-4:
    one second apart with broker 3's election between them, only one of broker 2's controller lines."""
    controller = "".join(_controller_line(stamp(t), _ORDERS_ID, p, b) for t, p, b in (
        (51_100, 3, 2), (301_450, 4, 2), (302_450, 4, 3)))
    leaders = _elected_leaders_lines(((1_000, "orders-3", 2, 6), (51_000, "orders-3", 2, 8), (300_000, "orders-4", 2, 6),
                                      (301_000, "orders-4", 3, 7), (302_000, "orders-4", 2, 8)))
    got = parse(spark, write_logs(tmp_path, {"controller.log": controller, **leaders}))
    assert _elections(got) == [
        (2, 3, "unclean", 2, [2], 6), (None, 3, "unclean", 2, [2], None),
        (2, 4, "unclean", 2, [2], 6), (None, 4, "unclean", 2, [2], None), (None, 4, "unclean", 3, [3], 7)]
    assert inv.evaluate(kept_events(got), ["leader_epoch_monotonic"]).count() == 0
    # With both controller lines, each of broker 2's lines restates one: no election twice.
    both = controller + _controller_line(stamp(1_050), _ORDERS_ID, 3, 2)
    got = parse(spark, write_logs(tmp_path / "both", {"controller.log": both, **leaders}))
    assert [e for e in _elections(got) if e[1] == 3] == [(None, 3, "unclean", 2, [2], None),
                                                         (None, 3, "unclean", 2, [2], None)]

def _replay_line(t: str, controller: int, tp: str, diff: str) -> str:
    """The line a KRaft controller prints as it replays a change whose new leader was not in the ISR."""
    return (f"[2024-05-14 {t}] INFO [QuorumController id={controller}] UNCLEAN partition change for {tp} with topic ID "
            f"{_ORDERS_ID}: {diff} (org.apache.kafka.controller.ReplicationControlManager)\n")


def test_the_controllers_replay_lines_are_its_unclean_and_elr_elections(spark: SparkSession, tmp_path: Path) -> None:
    """Each KRaft controller prints 'UNCLEAN partition change' as it replays an election whose leader was not in the
    ISR: an unclean election, or one from the eligible leader replicas (the new leader in the old ELR, KIP-966). The
    line names the topic, so the builder's lines that name it by id only need no broker log; the active and the
    standby controllers' lines of one record, and the builder's line of the same election, are one event."""
    active = (
        "[2024-05-14 12:00:00,000] INFO [QuorumController id=3000] Becoming the active controller at epoch 7, next "
        "write offset 1. (org.apache.kafka.controller.QuorumController)\n"
        # orders-3: two unclean elections of broker 2, 30 s apart, each the builder's undated line then the replay.
        + _controller_line("12:00:01,000", _ORDERS_ID, 3, 2)
        + _replay_line("12:00:01,001", 3000, "orders-3", "isr: [1] -> [2], leader: 1 -> 2, leaderRecoveryState: "
                       "RECOVERED -> RECOVERING, leaderEpoch: 5 -> 6, partitionEpoch: 9 -> 10")
        + _controller_line("12:00:31,000", _ORDERS_ID, 3, 2)
        + _replay_line("12:00:31,001", 3000, "orders-3", "isr: [3] -> [2], leader: 3 -> 2, leaderRecoveryState: "
                       "RECOVERED -> RECOVERING, leaderEpoch: 7 -> 8, partitionEpoch: 12 -> 13")
        # orders-4: broker 3 elected from the ELR (no builder line at INFO), the ELR losing it.
        + _replay_line("12:00:02,000", 3000, "orders-4", "isr: [] -> [3], leader: -1 -> 3, leaderEpoch: 4 -> 5, "
                       "elr: [1, 3] -> [1], partitionEpoch: 8 -> 9")
        # orders-5: the last known leader elected when ISR and ELR were both empty (unclean): the ELR is unchanged
        # and so not known, the last known ELR emptied.
        + _replay_line("12:00:03,000", 3000, "orders-5", "isr: [] -> [1], leader: -1 -> 1, leaderRecoveryState: "
                       "RECOVERED -> RECOVERING, leaderEpoch: 2 -> 3, lastKnownElr: [1] -> [], partitionEpoch: 6 -> 7")
        # orders-6: the ELR's last member elected.
        + _replay_line("12:00:04,000", 3000, "orders-6", "isr: [] -> [2], leader: -1 -> 2, leaderEpoch: 1 -> 2, "
                       "elr: [2] -> [], partitionEpoch: 3 -> 4")
        # orders-7: an unclean election in epoch 3 (the log of its epoch-2 election has rolled away).
        + _replay_line("12:00:05,000", 3000, "orders-7", "isr: [1] -> [3], leader: 1 -> 3, leaderRecoveryState: "
                       "RECOVERED -> RECOVERING, leaderEpoch: 2 -> 3, partitionEpoch: 4 -> 5"))
    # The standby replays the same records, a few ms later.
    standby = "".join(line.replace("id=3000", "id=3001").replace(",00", ",02", 1)
                      for line in active.splitlines(keepends=True) if "UNCLEAN" in line)
    # The active controller, restarted at 12:10, replays the log since its snapshot: orders-3's first election and
    # orders-7's epoch-2 one are printed again, after later elections of theirs (reprints, no elections).
    active += (_replay_line("12:10:00,000", 3000, "orders-3", "isr: [1] -> [2], leader: 1 -> 2, leaderRecoveryState: "
                            "RECOVERED -> RECOVERING, leaderEpoch: 5 -> 6, partitionEpoch: 9 -> 10")
               + _replay_line("12:10:00,000", 3000, "orders-7", "isr: [3] -> [1], leader: 3 -> 1, leaderRecoveryState: "
                              "RECOVERED -> RECOVERING, leaderEpoch: 1 -> 2, partitionEpoch: 3 -> 4"))
    got = parse(spark, write_logs(tmp_path, {"controller.log": active, "controller-3001.log": standby}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    elections = got.where("event_type = 'leader_election'").orderBy("partition", "ts_ms").select(
        "ts_ms", "broker_id", "topic", "partition", "action", "leader_id", "isr", "leader_epoch", "partition_epoch",
        "elr", "topic_id")
    schema = ("ts_ms bigint, broker_id int, topic string, partition int, action string, leader_id int, "
              "isr array<int>, leader_epoch int, partition_epoch int, elr array<int>, topic_id string")
    expected = [
        (ms("2024-05-14 12:00:01,001"), 3000, "orders", 3, "unclean", 2, [2], 6, 10, None, _ORDERS_ID),
        (ms("2024-05-14 12:00:31,001"), 3000, "orders", 3, "unclean", 2, [2], 8, 13, None, _ORDERS_ID),
        (ms("2024-05-14 12:00:02,000"), 3000, "orders", 4, "elr", 3, [3], 5, 9, [1], _ORDERS_ID),
        (ms("2024-05-14 12:00:03,000"), 3000, "orders", 5, "unclean", 1, [1], 3, 7, None, _ORDERS_ID),
        (ms("2024-05-14 12:00:04,000"), 3000, "orders", 6, "elr", 2, [2], 2, 4, [], _ORDERS_ID),
        (ms("2024-05-14 12:00:05,000"), 3000, "orders", 7, "unclean", 3, [3], 3, 5, None, _ORDERS_ID),
    ]
    assert_df_equality(elections, spark.createDataFrame(expected, schema), ignore_nullable=True)
    assert inv.evaluate(kept_events(got), ["leader_epoch_monotonic"]).count() == 0
    # A line whose leader did not change is no form of an election replog reads: quarantined with the reason.
    odd = parse(spark, write_logs(tmp_path / "odd", {"controller.log": _replay_line(
        "12:00:05,000", 3000, "orders-3", "replicas: [1, 2] -> [1, 2, 3], partitionEpoch: 5 -> 6")}))
    assert [r["_reason_code"] for r in odd.collect()] == ["unread_log_line"]
    # The standby's log alone: its own lines, one per election.
    alone = parse(spark, write_logs(tmp_path / "standby-only", {"controller.log": standby}))
    assert [(r["broker_id"], r["partition"], r["leader_epoch"]) for r in alone.orderBy("partition", "ts_ms").select(
        "broker_id", "partition", "leader_epoch").collect()] == [
        (3001, 3, 6), (3001, 3, 8), (3001, 4, 5), (3001, 5, 3), (3001, 6, 2), (3001, 7, 3)]


def test_an_unclean_elections_lines_never_restate_an_election_from_the_elr(spark: SparkSession,
                                                                         tmp_path: Path) -> None:
    """Kafka prints the builder's line of an election from the ELR at TRACE only, and a RECOVERING line only after an
    unclean one: broker 3 elected from the ELR, then 2 s later uncleanly (its replay line and the leader line after
    its RECOVERING line in files not landed), is two elections, in one batch or in two."""
    elr = _replay_line("12:00:02,000", 3000, "orders-4", "isr: [] -> [3], leader: -1 -> 3, leaderEpoch: 4 -> 5, "
                       "elr: [1, 3] -> [1], partitionEpoch: 8 -> 9")
    builder = _controller_line("12:00:04,000", _ORDERS_ID, 4, 3)
    recovering = _RECOVERING_LINE.format(t="12:00:04,100", b=3, tp="orders-4")
    # The builder's line names no controller: the other line of its file does.
    expected = [(3000, 4, "elr", 3, [3], 5), (3000, 4, "unclean", 3, [3], None)]
    assert _elections(parse(spark, write_logs(tmp_path / "builder", {"controller.log": elr + builder}))) == expected
    got = parse(spark, write_logs(tmp_path / "recovering", {"controller.log": elr, "state-change-3.log": recovering}))
    assert _elections(got) == [expected[0], (3, 4, "unclean", 3, [3], None)]
    landing = tmp_path / "landing"
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    write_logs(landing, {"controller.log": elr})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 1
    write_logs(landing, {"controller.log.1": builder, "state-change-3.log": recovering})
    later = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (later.read, later.kept, later.quarantined) == (1, 1, 0)  # the RECOVERING line restates the builder's
    assert [tuple(r) for r in lake.read(BRONZE_EVENTS).orderBy("ts_ms").select(
        "action", "leader_id", "leader_epoch", "ts_ms").collect()] == [
        ("elr", 3, 5, ms("2024-05-14 12:00:02,000")), ("unclean", 3, None, ms("2024-05-14 12:00:04,000"))]


def test_a_replay_line_restates_the_election_an_earlier_batch_read(spark: SparkSession, tmp_path: Path) -> None:
    """The new leader's RECOVERING and leader lines in bronze, the controller's builder and replay lines of the
    same election in a later batch: still one election, the one bronze holds; an ELR election read again from a
    rolled standby log is not a second one."""
    landing = tmp_path / "landing"
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    write_logs(landing, {"state-change-2.log": RECOVERING_LOGS["state-change-2.log"],
                         "controller.log": _replay_line("12:00:05,000", 3000, "orders-4",
                                                        "isr: [] -> [3], leader: -1 -> 3, leaderEpoch: 4 -> 5, "
                                                        "elr: [1, 3] -> [1], partitionEpoch: 8 -> 9")})
    first = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (first.read, first.kept) == (4, 4)  # two elections, the leader line, the "Skipped" ISR commit
    write_logs(landing, {"controller.log.1": _controller_line("12:00:01,000", _ORDERS_ID, 3, 2)
                         + _replay_line("12:00:01,001", 3000, "orders-3", "isr: [1] -> [2], leader: 1 -> 2, "
                                        "leaderEpoch: 5 -> 6, partitionEpoch: 9 -> 10"),
                         "controller-3001.log": _replay_line("12:00:05,002", 3001, "orders-4",
                                                                "isr: [] -> [3], leader: -1 -> 3, leaderEpoch: 4 -> 5, "
                                                                "elr: [1, 3] -> [1], partitionEpoch: 8 -> 9")})
    second = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (second.read, second.kept, second.quarantined) == (0, 0, 0)
    bronze = lake.read(BRONZE_EVENTS)
    assert [tuple(r) for r in bronze.where("event_type = 'leader_election'").orderBy("partition").select(
        "partition", "broker_id", "action", "leader_id", "leader_epoch").collect()] == [
        (3, 2, "unclean", 2, 6), (4, 3000, "elr", 3, 5)]
    # Broker 4's RECOVERING line without the leader line (its epoch unknown) in bronze, then three controllers'
    # replay lines of that election: the one nearest to it restates it, and so do the others of the same record.
    write_logs(landing, {"state-change-4.log": _RECOVERING_LINE.format(t="12:01:00,500", b=4, tp="orders-9")})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 1
    write_logs(landing, {f"controller-{n}.log.1": _replay_line(
        f"12:01:00,{n - 2990:03d}", n, "orders-9", "isr: [1] -> [4], leader: 1 -> 4, leaderEpoch: 7 -> 8, "
        "partitionEpoch: 9 -> 10") for n in (3000, 3020, 3040)})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).read == 0
    assert lake.read(BRONZE_EVENTS).where("event_type = 'leader_election' AND partition = 9").count() == 1


def test_a_future_logs_hw_line_in_a_later_batch_is_no_event(spark: SparkSession, tmp_path: Path) -> None:
    """The replica's initial-HW line in bronze, an intra-broker move's future log printing the same line in the
    next hour's rolled server.log: no second HW; after the broker's next start loads the log, the line is the
    replica's again."""
    landing = tmp_path / "landing"
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    hw_line = ("[2024-05-14 {t}] INFO [Partition t-4 broker=2] Log loaded for partition t-4 with initial high "
               "watermark {hw} (kafka.cluster.Partition)\n")
    write_logs(landing, {"server.log.2024-05-14-11": hw_line.format(t="11:00:00,000", hw=80)})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 1
    write_logs(landing, {"server.log.2024-05-14-12": hw_line.format(t="12:00:00,000", hw=0)})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 0
    write_logs(landing, {"server.log": (
        "[2024-05-14 13:00:00,000] INFO Completed load of Log(dir=/data/t-4, topic=t, partition=4, highWatermark=0, "
        "lastStableOffset=0, logStartOffset=0, logEndOffset=120) with 1 segments in 3ms (1/1 loaded in /data) "
        "(kafka.log.LogManager)\n" + hw_line.format(t="13:00:01,000", hw=95))})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 2
    assert [tuple(r) for r in lake.read(BRONZE_EVENTS).where("event_type = 'hw_change'").orderBy("ts_ms").select(
        "broker_id", "hw").collect()] == [(2, 80), (2, 95)]


def _created_line(t: str, controller: int, tp: str, replicas: str, leader: int, *, epoch: int = 0,
                  topic_id: str = _ORDERS_ID, kafka4: bool = False) -> str:
    """A KRaft controller's line as it replays a partition's record it does not hold yet (`created_text`), the ISR
    the replicas."""
    ids = [int(b) for b in replicas.split(", ")]
    return (f"[2024-05-14 {t}] INFO [QuorumController id={controller}] "
            f"{created_text(tp, topic_id, ids, ids, leader, epoch=epoch, kafka4=kafka4)} "
            "(org.apache.kafka.controller.ReplicationControlManager)\n")


def test_the_controllers_creation_lines_are_each_partitions_first_leader(spark: SparkSession,
                                                                         tmp_path: Path) -> None:
    """Each KRaft controller prints 'Replayed PartitionRecord for new partition' as it replays a topic's creation:
    the partition's first leader, a clean election in epoch 0 ('topic_creation'), one event for all the controllers'
    lines. A controller restarted at 12:10 replays its snapshot (orders-0 as it stands then, epoch 3: no election)
    and the records after it: orders-1's and orders-2's creations again (their originals are read), and orders-3's,
    whose original has rolled away, after broker 3's leader line of epoch 2 (a reprint). orders-0 deleted and
    created again under a new topic id at 12:20 is a new partition. orders-4, created at 12:30, has a leader line
    of epoch 1 stamped 30 s earlier by a broker whose clock is ahead: its creation stands."""
    active = (_created_line("12:00:00,100", 3000, "orders-0", "1, 2, 3", 1)
              + _created_line("12:00:00,100", 3000, "orders-1", "2, 3, 1", 2)
              + _created_line("12:00:00,100", 3000, "orders-2", "3, 1, 2", 3, kafka4=True)
              + _created_line("12:10:00,000", 3000, "orders-0", "1, 2, 3", 2, epoch=3)
              + _created_line("12:10:00,000", 3000, "orders-1", "2, 3, 1", 2)
              + _created_line("12:10:00,000", 3000, "orders-2", "3, 1, 2", 3, kafka4=True)
              + _created_line("12:10:00,000", 3000, "orders-3", "1, 2, 3", 1)
              + _created_line("12:20:00,000", 3000, "orders-0", "2, 3, 1", 2, topic_id=_OTHER_ID)
              + _created_line("12:30:00,000", 3000, "orders-4", "3, 1, 2", 3))
    standby = "".join(line.replace("id=3000", "id=3001").replace(",100]", ",104]")
                      for line in active.splitlines(keepends=True) if "12:00:00" in line)
    broker = (_LEADER_LINE.format(t="12:05:00,000", b=3, tp="orders-1", id=_ORDERS_ID, e=2, prev=1)
              + _LEADER_LINE.format(t="12:05:00,000", b=1, tp="orders-0", id=_ORDERS_ID, e=4, prev=3)
              + _LEADER_LINE.format(t="12:05:00,000", b=3, tp="orders-3", id=_ORDERS_ID, e=2, prev=1)
              + _LEADER_LINE.format(t="12:29:30,000", b=3, tp="orders-4", id=_ORDERS_ID, e=1, prev=0))
    got = parse(spark, write_logs(tmp_path, {"controller.log": active, "controller-3001.log": standby,
                                             "state-change-3.log": broker}))
    assert got.where("_reason_code IS NOT NULL").count() == 0
    elections = got.where("event_type = 'leader_election'").orderBy("ts_ms", "partition").select(
        "ts_ms", "broker_id", "partition", "action", "reason", "leader_id", "isr", "replicas", "leader_epoch",
        "partition_epoch", "elr", "topic_id")
    schema = ("ts_ms bigint, broker_id int, partition int, action string, reason string, leader_id int, "
              "isr array<int>, replicas array<int>, leader_epoch int, partition_epoch int, elr array<int>, "
              "topic_id string")
    created = "topic_creation"
    expected = [
        (ms("2024-05-14 12:00:00,100"), 3000, 0, "clean", created, 1, [1, 2, 3], [1, 2, 3], 0, 0, None, _ORDERS_ID),
        (ms("2024-05-14 12:00:00,100"), 3000, 1, "clean", created, 2, [2, 3, 1], [2, 3, 1], 0, 0, None, _ORDERS_ID),
        (ms("2024-05-14 12:00:00,100"), 3000, 2, "clean", created, 3, [3, 1, 2], [3, 1, 2], 0, 0, [], _ORDERS_ID),
        (ms("2024-05-14 12:20:00,000"), 3000, 0, "clean", created, 2, [2, 3, 1], [2, 3, 1], 0, 0, None, _OTHER_ID),
        (ms("2024-05-14 12:30:00,000"), 3000, 4, "clean", created, 3, [3, 1, 2], [3, 1, 2], 0, 0, None, _ORDERS_ID),
    ]
    assert_df_equality(elections, spark.createDataFrame(expected, schema), ignore_nullable=True)
    # The standby's log alone: its own lines, one per creation.
    alone = parse(spark, write_logs(tmp_path / "standby-only", {"controller.log": standby}))
    assert sorted((r["broker_id"], r["partition"]) for r in alone.select("broker_id", "partition").collect()) == [
        (3001, 0), (3001, 1), (3001, 2)]


def test_a_creation_line_read_again_in_a_later_batch_is_no_second_creation(spark: SparkSession,
                                                                           tmp_path: Path) -> None:
    """The active controller's creation lines in bronze, then the standby's rolled log of the same records and a
    new partition added to the topic: only the new partition's line is a record."""
    landing = tmp_path / "landing"
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    write_logs(landing, {"controller.log": _created_line("12:00:00,100", 3000, "orders-0", "1, 2", 1)})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 1
    write_logs(landing, {"controller-3001.log.1": _created_line("12:00:00,104", 3001, "orders-0", "1, 2", 1)
                         + _created_line("12:30:00,000", 3001, "orders-1", "2, 1", 2)})
    later = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (later.read, later.kept, later.quarantined) == (1, 1, 0)
    assert [tuple(r) for r in lake.read(BRONZE_EVENTS).orderBy("partition").select(
        "partition", "broker_id", "leader_id", "leader_epoch").collect()] == [(0, 3000, 1, 0), (1, 3001, 2, 0)]


def test_a_second_election_of_a_leader_is_not_taken_for_the_one_an_earlier_batch_read(spark: SparkSession,
                                                                                      tmp_path: Path) -> None:
    """Broker 2's RECOVERING lines of one election in bronze; the controller's log, with that election and a second
    one of broker 2 30 s later (both without epochs), and broker 2's lines of the second, in a later batch: the
    first controller line restates bronze's event, the second is an election of its own, with its leader's epoch;
    and a third one in the next batch is not taken for the second, whose controller's line bronze holds."""
    landing = tmp_path / "landing"
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")

    def lines(t: str, e: int) -> str:
        return (_RECOVERING_LINE.format(t=t, b=2, tp="orders-3")
                + _LEADER_LINE.format(t=t, b=2, tp="orders-3", id=_ORDERS_ID, e=e, prev=e - 1))
    write_logs(landing, {"state-change-2.log": lines("12:00:01,100", 6)})
    assert run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options).kept == 2
    write_logs(landing, {"controller.log": _controller_line("12:00:01,000", _ORDERS_ID, 3, 2)
                         + _controller_line("12:00:31,000", _ORDERS_ID, 3, 2),
                         "state-change-2.log.1": lines("12:00:31,100", 8)})
    later = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (later.read, later.kept, later.quarantined) == (2, 2, 0)  # the second election and its leader line
    bronze = lake.read(BRONZE_EVENTS)
    assert [tuple(r) for r in bronze.where("event_type = 'leader_election'").orderBy("ts_ms").select(
        "ts_ms", "leader_id", "leader_epoch").collect()] == [(ms("2024-05-14 12:00:01,100"), 2, 6),
                                                             (ms("2024-05-14 12:00:31,000"), 2, 8)]
    assert inv.evaluate(bronze, ["leader_epoch_monotonic"]).count() == 0
    # The next hour's controller log: a third election of broker 2, 14 s after the second, whose controller's line
    # bronze holds. The active controller prints one such line per election: this one is no restatement of it.
    write_logs(landing, {"controller.log.1": _controller_line("12:00:45,000", _ORDERS_ID, 3, 2)})
    third = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (third.read, third.kept, third.quarantined) == (1, 1, 0)
    bronze = lake.read(BRONZE_EVENTS)
    assert [tuple(r) for r in bronze.where("event_type = 'leader_election'").orderBy("ts_ms").select(
        "ts_ms", "leader_id", "leader_epoch").collect()][2:] == [(ms("2024-05-14 12:00:45,000"), 2, None)]



def test_a_controller_that_elects_itself_is_still_told_apart_from_its_recovering_line(spark: SparkSession,
                                                                                      tmp_path: Path) -> None:
    """A controller's line in bronze is another election for a later batch's controller line, also where the
    controller elected itself: a ZooKeeper controller (0.8-1.0) is a broker, and a KRaft node may be both (its quiet
    hour's builder line takes the node's id from the hour rolled before it)."""
    options = BrokerLogOptions("cluster-a")

    def zk_line(t: str, controller: int, leader: int) -> str:
        return (f"[2024-05-14 {t}] INFO [Controller {controller}]: Broker {controller} starting become controller state "
                f"transition (kafka.controller.KafkaController)\n"
                f"[2024-05-14 {t}] WARN [OfflinePartitionLeaderSelector]: No broker in ISR is alive for [orders,3]. "
                f"Elect leader {leader} from live brokers {leader}. There's potential data loss. "
                "(kafka.controller.OfflinePartitionLeaderSelector)\n")

    def batches(name: str, *landed: dict[str, str]) -> list[tuple]:
        lake = EmbeddedLake(spark, str(tmp_path / name / "lake"))
        for files in landed:
            write_logs(tmp_path / name / "landing", files)
            run_ingest(spark, lake, str(tmp_path / name / "landing"), log=lambda _m: None, logs=options)
        return [tuple(r) for r in lake.read(BRONZE_EVENTS).where("event_type = 'leader_election'").orderBy(
            "ts_ms").select("broker_id", "leader_id").collect()]
    assert batches("zk", {"controller.log.2024-05-14-11": zk_line("12:00:01,000", 2, 2)},
                   {"controller.log": zk_line("12:00:31,000", 2, 2)}) == [(2, 2)] * 2
    created = ("[2024-05-14 10:00:00,000] INFO [QuorumController id=2] " + created_text(
        "orders-3", _ORDERS_ID, [1, 2, 3], [1], 1) + " (org.apache.kafka.controller.ReplicationControlManager)\n")
    assert batches("kraft", {"controller.log.2024-05-14-10": created,
                             "controller.log.2024-05-14-11": _controller_line("11:59:50,000", _ORDERS_ID, 3, 2)},
                   {"controller.log": _controller_line("12:00:05,000", _ORDERS_ID, 3, 2)}) == [(2, 1), (2, 2), (2, 2)]


def test_an_election_read_in_an_earlier_batch_is_not_read_again(spark: SparkSession, tmp_path: Path) -> None:
    """Logs ingested batch by batch: the controller's lines (with an epoch or without) after the leaders' lines
    in bronze, and the leader's lines after that, leave one election each; the epoch checks find nothing."""
    landing = tmp_path / "landing"
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    write_logs(landing, {name: RECOVERING_LOGS[name] for name in ("state-change-2.log", "state-change-3.log")})
    first = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (first.read, first.kept) == (5, 5)  # two elections, two leader lines, the "Skipped" ISR commit
    write_logs(landing, {"controller.log": _controller_line("12:00:02,000", _OTHER_ID, 7, 3, previous_epoch=2)
                         + _controller_line("12:00:01,000", _ORDERS_ID, 3, 2)})
    # The controller's lines name their topics by id: leader lines of the same batch name them.
    write_logs(landing, {"state-change-1.log": _LEADER_LINE.format(t="11:59:00,000", b=1, tp="orders-7",
                                                                   id=_OTHER_ID, e=2, prev=1)
                         + _LEADER_LINE.format(t="11:59:00,000", b=1, tp="orders-3", id=_ORDERS_ID, e=5, prev=4)})
    second = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (second.read, second.kept, second.quarantined) == (2, 2, 0)  # the leader lines only
    write_logs(landing, {"state-change-2.log.1": RECOVERING_LOGS["state-change-2.log"].replace("12:00:01", "12:00:03")})
    third = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    # The repeated leader line and "Skipped" commit; the RECOVERING lines restate the election.
    assert (third.read, third.kept) == (2, 2)
    bronze = lake.read(BRONZE_EVENTS)
    assert [tuple(r) for r in bronze.where("event_type = 'leader_election'").orderBy("partition").select(
        "partition", "broker_id", "leader_id", "leader_epoch").collect()] == [(3, 2, 2, 6), (7, 3, 3, 3)]
    assert inv.evaluate(bronze, ["leader_epoch_monotonic"]).count() == 0


def test_unusable_lines_are_quarantined_with_the_reason(spark: SparkSession, tmp_path: Path) -> None:
    """A replication line that cannot become an event says why; other lines are not events at all."""
    paths = write_logs(tmp_path, {
        "server.log": (
            "[2024-05-14 12:00:00,000] INFO [Partition t-0 broker=1] Shrinking ISR for t-0 to 1 (kafka.cluster.Partition)\n"
            "Shrinking ISR from 1,2 to 1. Leader: (highWatermark: 5, endOffset: 9).\n"
            "[2024-05-14 12:00:01,000] INFO Opening socket connection to server zk:2181 (org.apache.zookeeper.ClientCnxn)\n"
            "[2024-13-45 12:00:02,000] INFO [Partition t-0 broker=1] Expanding ISR from 1 to 1,2 (kafka.cluster.Partition)\n"
        ),
        # Two brokers name themselves in this file: a line naming neither cannot be placed, whatever the files rolled
        # from the same log say.
        "mixed.log": (
            "[2024-05-14 12:00:00,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"
            "[2024-05-14 12:00:00,000] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)\n"
            "[2024-05-14 12:00:02,000] INFO [Log partition=t-0, dir=/d] Truncating to offset 4 (kafka.log.Log)\n"
        ),
        "mixed.log.1": "[2024-05-14 11:00:00,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n",
        # An hour whose lines name no broker: the hours rolled before it from the same log do, one broker.
        "b3/server.log.2024-05-14-11": "[2024-05-14 11:00:00,000] INFO [KafkaServer id=3] started (kafka.server.KafkaServer)\n",
        "b3/server.log": "[2024-05-14 12:00:05,000] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 40 "
                         "due to segment deletion (kafka.log.UnifiedLog)\n",
        # Another folder's same name is another broker's log.
        "b4/server.log": "[2024-05-14 12:00:06,000] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 41 "
                         "due to segment deletion (kafka.log.UnifiedLog)\n",
        # The hour before names broker 5 only in lines that are no events (log4j2's name, the date before '.log').
        "b5/server-2024-05-14-1.log": (
            "[2024-05-14 11:00:00,000] INFO [ReplicaFetcherManager on broker 5] Removed fetcher for partitions Set(t-0) "
            "(kafka.server.ReplicaFetcherManager)\n"),
        "b5/server.log": "[2024-05-14 12:00:07,000] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 42 "
                         "due to segment deletion (kafka.log.UnifiedLog)\n",
        # The hour before names broker 6 only by its startup config block.
        "b6/server.log.2024-05-14-11": ("[2024-05-14 11:59:59,000] INFO KafkaConfig values: \n\tbroker.id = 6\n"
                                        "\treplica.lag.time.max.ms = 10000\n (kafka.server.KafkaConfig)\n"),
        "b6/server.log": "[2024-05-14 12:00:08,000] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 43 "
                         "due to segment deletion (kafka.log.UnifiedLog)\n",
        # A copy named by hand is no rolled file of server.log: it lends its broker to no other file.
        "b7/server.log.broker1": "[2024-05-14 11:00:00,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n",
        "b7/server.log": "[2024-05-14 12:00:09,000] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 44 "
                         "due to segment deletion (kafka.log.UnifiedLog)\n",
    })
    got = parse(spark, paths)
    kept = got.where("_reason_code IS NULL AND event_type = 'log_start_offset_change'")
    assert sorted((Path(r["_source_file"]).parent.name, r["broker_id"], r["log_start_offset"]) for r in kept.collect()) == [
        ("b3", 3, 40), ("b5", 5, 42), ("b6", 6, 43)]
    got = got.where("_reason_code IS NOT NULL").orderBy("_source_file", "_source_line")
    rows = [(f"{Path(r['_source_file']).parent.name}/{Path(r['_source_file']).name}", r["_source_line"],
             r["_reason_code"], r["_reason"]) for r in
            got.select("_source_file", "_source_line", "_reason_code", "_reason").collect()]
    here = tmp_path.name
    unnamed = ("unread_log_line", "the line does not name its broker (e.g. '[Partition orders-3 broker=2]') and the "
               "other lines of its file, and of the files rolled from its log, name none or several")
    assert rows == [
        ("b4/server.log", 1, *unnamed),
        ("b7/server.log", 1, *unnamed),
        (f"{here}/mixed.log", 3, *unnamed),
        (f"{here}/server.log", 1, "unread_log_line", "a Kafka log line holding 'Shrinking ISR ' in a form replog does "
         "not read (jobs/broker_log_patterns.py lists the forms it reads)"),
        (f"{here}/server.log", 2, "unread_log_line", "no log4j timestamp and level at the start of the line, or an "
         "impossible date (expected e.g. '[2024-05-14 12:51:42,342] INFO ...')"),
        (f"{here}/server.log", 4, "unread_log_line", "no log4j timestamp and level at the start of the line, or an "
         "impossible date (expected e.g. '[2024-05-14 12:51:42,342] INFO ...')"),
    ]
    names = ["/b3/server.log.2024-05-14-11", "/b3/server.log.1.GZ", "/b3/server.log.2024-05-14-11.bz2", "/b3/server.log",
             "/b3/server.log.2024-05-14-11.2.gz", "/b3/server-2024-05-14-1.log.gz",
             "/b3/state-change.log.2024-05-14-11.zst", "/b3/stage-change.log.2024-05-14-11", "/b3/controller.log",
             "/b3/server.log.broker1", "/b3/server.log-20240514.gz", "/b3/server-20240514.log"]
    # A Kubernetes container's files, through its restarts (a static pod's uid is a hash); a sidecar is another log,
    # and so are numbered files outside a pod's folder.
    pod = "/n/kafka_kafka-0_0b5a3d0e-1c2f-4a5b-9c8d-7e6f5a4b3c2d"
    static = "/n/kube-system_kafka-node1_0b5a3d0e1c2f4a5b9c8d7e6f5a4b3c2d"
    names += [f"{pod}/kafka/0.log", f"{pod}/kafka/12.log.20240514-120000.gz", f"{pod}/kafka/1.log.20240514-120000",
              f"{pod}/exporter/0.log", f"{static}/kafka/3.log", "/b3/0.log", "/b3/1.log"]
    rolled = spark.createDataFrame([(n,) for n in names], "p string").select(rolled_log_of("p")).collect()
    # Kafka 4.0 rolled state-change.log as stage-change.log.<date> (KAFKA-19576).
    assert [r[0] for r in rolled] == ["/b3/server.log"] * 6 + ["/b3/state-change.log"] * 2 + [
        "/b3/controller.log", "/b3/server.log.broker1"] + ["/b3/server.log"] * 2 + [f"{pod}/kafka/"] * 3 + [
        f"{pod}/exporter/", f"{static}/kafka/", "/b3/0.log", "/b3/1.log"]


def test_the_files_of_a_rolled_log_sort_oldest_first(spark: SparkSession) -> None:
    """`roll_order`: dated files by their numbers, indexed ones by the index falling (`.1` is the newest rolled
    file), the current file last, compressed or not."""
    oldest_first = ["/b/server-2024-05-14-1.log", "/b/server.log.2024-05-14-9", "/b/server.log.2024-05-14-13.gz",
                    "/b/server.log.2024-05-14-13.2", "/b/server.log.2024-05-14-13.10", "/b/server.log.10",
                    "/b/SERVER.LOG.3.GZ", "/b/server.log.2", "/b/server.log"]
    shuffled = [oldest_first[i] for i in (4, 8, 0, 6, 2, 7, 1, 5, 3)]
    # Dates without dashes, or without the day (log4j DatePatterns '.'yyyyMMdd, '.'yyyy-MM), are dates too.
    undashed = ["/c/server.log.2024-05", "/c/server.log.2024-06", "/c/server.log.20240513", "/c/server.log.20240514",
                "/c/server.log.2024051409", "/c/server.log"]
    # logrotate's dateext (`server.log-20240514`, hourly `-2024051413`, compressed after a day by `delaycompress`).
    # A day's name before its hours', after the day before's (a log whose dateformat changed).
    undashed += ["/d/server.log-20240512.gz", "/d/server.log-2024051223", "/d/server.log-20240513.gz", "/d/server.log-2024051400",
                 "/d/server.log-2024051413", "/d/server.log"]
    # A Kubernetes container's files by its restarts, each restart's rotated files before its current one.
    pod = "/e/kafka_kafka-0_0b5a3d0e-1c2f-4a5b-9c8d-7e6f5a4b3c2d/kafka"
    undashed += [f"{pod}/2.log.20240514-130000.gz", f"{pod}/2.log.20240514-140000", f"{pod}/2.log",
                 f"{pod}/10.log.20240514-110000.gz", f"{pod}/10.log"]
    got = (spark.createDataFrame([(n,) for n in reversed(undashed)], "p string")
           .select("p", roll_order("p").alias("k")).orderBy(F.regexp_extract("p", "^/(.)/", 1), "k").collect())
    assert [r.p for r in got] == undashed
    got = (spark.createDataFrame([(n,) for n in shuffled], "p string")
           .select("p", roll_order("p").alias("k")).orderBy("k").collect())
    assert [r.p for r in got] == oldest_first


def test_lines_of_one_millisecond_split_by_a_roll_are_read_oldest_file_first(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
    """A size-rolled log rolls between any two lines: two ISR commits stamped in one millisecond, the first in the
    rolled `server.log.1`, the second in `server.log`, are read in that order (the second's old ISR is the first's
    ISR, its id the greater), though `server.log` sorts first by name."""
    t = "[2024-05-14 12:00:01,000] INFO [Partition t-0 broker=1] "
    files = {
        "server.log.2": "[2024-05-14 12:00:00,000] INFO [Partition t-0 broker=1] t-0 starts at leader epoch 4 from "
                        "offset 10 with high watermark 10. Previous leader epoch was 3. (kafka.cluster.Partition)\n"
                        + t + "ISR updated to 1,2,3 and version updated to 6 (kafka.cluster.Partition)\n",
        "server.log.1": t + "ISR updated to 1,2 and version updated to 7 (kafka.cluster.Partition)\n",
        "server.log": t + "ISR updated to 1 and version updated to 8 (kafka.cluster.Partition)\n",
    }
    got = parse(spark, write_logs(tmp_path, files)).where("event_type = 'isr_change'")
    rows = [(r.partition_epoch, r.action, r.old_isr, r.isr) for r in got.orderBy("event_id").collect()]
    assert rows == [(6, "update", None, [1, 2, 3]), (7, "shrink", [1, 2, 3], [1, 2]), (8, "shrink", [1, 2], [1])]


def test_timestamps_are_read_in_the_configured_zone(spark: SparkSession, tmp_path: Path) -> None:
    """log4j prints local time without a zone: the configured zone places it; a line's own offset wins."""
    paths = write_logs(tmp_path, {"server.log": (
        "[2024-05-14 12:00:00,250] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"
        "2024-05-14T12:00:00.250+05:00 INFO [KafkaServer id=1] shutting down (kafka.server.KafkaServer)\n")})
    got = {r["action"]: r["ts_ms"] for r in parse(spark, paths, tz="+02:00").collect()}
    assert got == {"start": ms("2024-05-14 12:00:00,250", timezone(timedelta(hours=2))),
                   "shutdown": ms("2024-05-14 12:00:00,250", timezone(timedelta(hours=5)))}
    with pytest.raises(BrokerLogOptionsError, match="cannot name a run"):
        BrokerLogOptions("a/b")


def test_real_excerpts(spark: SparkSession) -> None:
    """The real excerpts: the replication records found, and those that cannot be used (redacted, no stamp)."""
    got = parse(spark, sorted(str(p) for p in REAL.glob("*.log")))
    found = sorted((Path(r["_source_file"]).name[:2], r["_source_line"], r["event_type"], r["action"], r["broker_id"],
                    r["topic"], r["partition"], r["_reason_code"]) for r in got.collect())
    shrink, expand = "isr_change", "isr_change"
    fetch = "fetch_response"
    assert found == [
        # 0.10-0.11: a fetcher's UNKNOWN_TOPIC_OR_PARTITION from leader 175; no line of the excerpt names the
        # broker that printed them.
        *[("06", n, fetch, None, None, "__consumer_offsets", p, "unread_log_line")
          for n, p in ((1, 15), (2, 45), (3, 27), (4, 12))],
        # KAFKA-7165: broker 1's shrinks, partition names redacted by the reporter ('TOPIC_NAME-PARTITION-#').
        ("09", 7, shrink, "shrink", None, None, None, "unread_log_line"),
        ("09", 23, shrink, "shrink", None, None, None, "unread_log_line"),
        ("09", 24, shrink, "shrink", None, None, None, "unread_log_line"),
        ("09", 25, shrink, "shrink", None, None, None, "unread_log_line"),
        ("09", 26, shrink, "shrink", None, None, None, "unread_log_line"),
        # Kafka 2.4: broker 1 added as a follower by a reassignment, then following the leader's moves.
        # 2.4+: the HW a partition starts with in this process (no checkpoint yet: 0).
        ("12", 3, "hw_change", None, 1, "roleplay", 0, None),
        ("12", 7, "leadership_change", "become_follower", 1, "roleplay", 0, None),
        ("12", 21, "leadership_change", "become_follower", 1, "roleplay", 0, None),
        ("12", 30, "leadership_change", "become_follower", 1, "roleplay", 0, None),
        # 2.x: broker 1's fetch from leader 2 fails twice; the second request (after the session was closed) names
        # four partitions, the first (an incremental session's) none.
        *[("18", 12, fetch, None, 1, t, p, None)
          for t, p in (("T-CAPTURE", 2), ("T-DBMS-CHK", 0), ("T-EOD-SNP", 1), ("T-TRADE-CHK", 0))],
        ("18", 18, shrink, "shrink", 3, "__consumer_offsets", 43, None),
        ("18", 19, expand, "expand", 3, "__consumer_offsets", 43, None),
        # 3.x: broker 1's fetchers get UNKNOWN_TOPIC_ID from leaders 2 and 3 for a topic being created.
        *[("21", n, fetch, None, 1, "_confluent-telemetry-metrics", p, None)
          for n, p in ((2, 3), (3, 6), (4, 9), (5, 0), (14, 4), (15, 7), (16, 10), (17, 1))],
        ("27", 1, shrink, "shrink", None, None, None, "unread_log_line"),  # the message alone, no timestamp
        ("30", 11, "hw_change", None, 1001, "kafka-ckpt", 0, None),
        ("30", 12, "leadership_change", "become_leader", 1001, "kafka-ckpt", 0, None),
        ("30", 27, "hw_change", None, 1001, "kafka-metrics", 0, None),
        ("30", 28, "leadership_change", "become_leader", 1001, "kafka-metrics", 0, None),
        # 0.9: corrupt messages (no thread prefix, no broker named); the halt names the topic only; the last line
        # was pasted without its timestamp.
        ("33", 1, fetch, None, None, "xxxx", 87, "unread_log_line"),
        ("33", 2, fetch, None, None, "xxxx", 75, "unread_log_line"),
        ("33", 6, fetch, None, None, None, None, "unread_log_line"),
        ("33", 8, fetch, None, None, "reptest", 0, "unread_log_line"),
        # Three brokers' excerpts in one file: the log layer's line of a log loaded (or created) names no broker,
        # and the file names several, so it is quarantined (files 36 and 39).
        ("36", 5, "log_load", None, None, "test1", 0, "unread_log_line"),
        ("36", 11, "leadership_change", "become_leader", 1, "test1", 0, None),
        ("36", 20, "log_load", None, None, "test1", 0, "unread_log_line"),
        ("36", 27, "leadership_change", "become_follower", 3, "test1", 0, None),
        ("36", 58, "leadership_change", "become_follower", 2, "test1", 0, None),
        ("36", 69, "leadership_change", "become_follower", 2, "test1", 0, None),
        # 2.0: broker 2, following new leader 3, asks it for its epoch's end before 3 learned it leads: it retries.
        ("36", 76, "epoch_request_retry", None, 2, "test1", 0, None),
        ("39", 2, "broker_lifecycle", "start", 0, None, None, None),
        ("39", 4, "log_load", None, None, "byfn-sys-channel", 0, "unread_log_line"),
        ("39", 10, "leadership_change", "become_follower", 0, "byfn-sys-channel", 0, None),
        ("39", 15, "broker_lifecycle", "start", 1, None, None, None),
        ("39", 18, "log_load", None, None, "byfn-sys-channel", 0, "unread_log_line"),
        ("39", 23, "leadership_change", "become_follower", 1, "byfn-sys-channel", 0, None),
        ("39", 28, "broker_lifecycle", "start", 2, None, None, None),
        ("39", 30, "log_load", None, None, "byfn-sys-channel", 0, "unread_log_line"),
        ("39", 35, "leadership_change", "become_leader", 2, "byfn-sys-channel", 0, None),
    ]
    # Who each follower fetches from, and in which epoch where the version prints it (2.4+).
    followers = sorted((Path(r["_source_file"]).name[:2], r["_source_line"], r["leader_id"], r["leader_epoch"])
                       for r in got.where("action = 'become_follower'").collect())
    assert followers == [("12", 7, 3, 1), ("12", 21, 2, 2), ("12", 30, 2, 3), ("36", 27, 1, None),
                         ("36", 58, 1, None), ("36", 69, 3, None), ("39", 10, 2, None), ("39", 23, 2, None)]
    errors = {(Path(r["_source_file"]).name[:2], r["leader_id"], r["fetcher_id"], r["fetch_offset"], r["error"])
              for r in got.where("event_type = 'fetch_response'").collect()}
    assert errors == {
        ("06", 175, 0, None, "UNKNOWN_TOPIC_OR_PARTITION"), ("21", 2, 0, None, "UNKNOWN_TOPIC_ID"),
        ("21", 3, 0, None, "UNKNOWN_TOPIC_ID"), ("33", 1, 0, 151, "OFFSET_OUT_OF_RANGE"),
        ("33", 58, None, None, "UNKNOWN_TOPIC_OR_PARTITION"), ("33", None, None, 1501373, "CORRUPT_MESSAGE"),
        ("33", None, None, 1503297, "CORRUPT_MESSAGE"),
        # java.net.SocketTimeoutException: Failed to connect within 30000 ms
        ("18", 2, 0, 0, "NETWORK_EXCEPTION"), ("18", 2, 0, 86, "NETWORK_EXCEPTION"),
        ("18", 2, 0, 2002, "NETWORK_EXCEPTION")}
    retries = [(r["leader_id"], r["fetcher_id"], r["leader_epoch"], r["error"])
               for r in got.where("event_type = 'epoch_request_retry'").collect()]
    assert retries == [(3, 0, None, "NOT_LEADER_OR_FOLLOWER")]  # NOT_LEADER_FOR_PARTITION before 2.7
    # The 0.10 whole-request failures of files 42 and 45 ('Error in fetch ...FetchRequest@5641fe72') name no
    # partition, nor do file 18's 'Error sending fetch request' lines, and the controllers' lines of 03, 15 and 24
    # are no replication event: none is read.
    assert got.where("_source_file LIKE '%/03-%' OR _source_file LIKE '%/15-%' OR _source_file LIKE '%/24-%' "
                     "OR _source_file LIKE '%/42-%' OR _source_file LIKE '%/45-%'").count() == 0
    out_of_sync = got.where("_source_line = 18 AND _source_file LIKE '%/18-%'").select("old_isr", "isr", "out_of_sync_replicas").first()
    assert (out_of_sync[0], out_of_sync[1]) == ([3, 1, 4], [3])
    assert [(r["replica_id"], r["leo"]) for r in out_of_sync[2]] == [(1, 115), (4, 116)]


def test_ingest_reconciles_is_exactly_once_and_ids_follow(spark: SparkSession, tmp_path: Path) -> None:
    """`run_ingest` with logs: read = kept + quarantined, a rerun adds nothing, and a later file's event in a
    millisecond bronze already holds gets the next id."""
    landing = tmp_path / "landing"
    line = "[2024-05-14 12:00:00,000] INFO [KafkaServer id={b}] started (kafka.server.KafkaServer)\n"
    write_logs(landing, {"server.log.1": line.format(b=1) + "Shrinking ISR from 1,2 to 1\n"})
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    first = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (first.read, first.kept, first.quarantined) == (2, 1, 1) and first.reconciles
    assert first.by_reason == {"unread_log_line": 1}
    again = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert again.files_ingested == 0
    write_logs(landing, {"server.log.2": line.format(b=2)})
    later = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (later.read, later.kept, later.quarantined) == (1, 1, 0)
    bronze = lake.read(BRONZE_EVENTS).orderBy("event_id").select("broker_id", "event_id").collect()
    base = ms("2024-05-14 12:00:00,000") << ID_SEQUENCE_BITS
    assert [(r["broker_id"], r["event_id"]) for r in bronze] == [(1, base), (2, base + 1)]
    assert lake.read(BRONZE_QUARANTINE).count() == 1
    assert [f.kind for f in discover(landing, logs=True)] == ["kafka-log", "kafka-log"]


def test_a_later_batch_continues_from_the_events_in_bronze(spark: SparkSession, tmp_path: Path) -> None:
    """An hour's rolled file whose ISR commit follows a leader line of the hour before: its epoch and the ISR
    it replaces come from the run's events already in bronze; and the broker of a later file of the same log whose
    lines name none."""
    landing = tmp_path / "landing"
    write_logs(landing, {"state-change.log.2024-05-14-11": (
        "[2024-05-14 11:59:00,000] INFO [Broker id=1] Leader t-0 starts at leader epoch 5 from offset 100 with high "
        "watermark 90 ISR [1,2,3] addingReplicas [] removingReplicas []. Previous leader epoch was 4. "
        "(state.change.logger)\n")})
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    options = BrokerLogOptions("cluster-a")
    run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    write_logs(landing, {"server.log.2024-05-14-12": (
        "[2024-05-14 12:00:01,000] INFO [Partition t-0 broker=1] ISR updated to 1,2  and version updated to 8 "
        "(kafka.cluster.Partition)\n"
        "[2024-05-14 12:00:02,000] INFO [UnifiedLog partition=t-0, dir=/data] Truncating to offset 95 "
        "(kafka.log.UnifiedLog)\n")})
    later = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (later.read, later.kept) == (2, 2)
    got = lake.read(BRONZE_EVENTS).where("event_type != 'leadership_change'").orderBy("event_id").select(
        "event_type", "leader_epoch", "action", "old_isr", "isr").collect()
    assert [tuple(r) for r in got] == [("isr_change", 5, "shrink", [1, 2, 3], [1, 2]),
                                       ("truncation", 5, None, None, None)]
    # The current hour's file of the same log names no broker: bronze's events of that log name broker 1.
    write_logs(landing, {"server.log": (
        "[2024-05-14 13:00:01,000] INFO [UnifiedLog partition=t-0, dir=/data] Incremented log start offset to 40 due "
        "to segment deletion (kafka.log.UnifiedLog)\n")})
    current = run_ingest(spark, lake, str(landing), log=lambda _m: None, logs=options)
    assert (current.read, current.kept) == (1, 1)
    moved = lake.read(BRONZE_EVENTS).where("event_type = 'log_start_offset_change'").collect()
    assert [(r["broker_id"], r["leader_epoch"], r["log_start_offset"]) for r in moved] == [(1, 5, 40)]


# --- the audit and the reference checker on events read from logs --------------------------------------------

INCIDENT = {
    # Broker 1 leads t-0 in epoch 5, then truncates its own log while still leading (no follower line):
    # leader_no_truncation. Broker 2 then also leads epoch 5: two leaders of one epoch. Broker 1's fetches from
    # broker 2 then fail (no invariant reads a fetch error from logs; the report lists them).
    "server-1.log": """\
[2024-05-14 12:00:00,000] INFO [Broker id=1] Leader t-0 with topic id Some(AbCdEfGhIjKlMnOpQrStUv) starts at leader epoch 5 from offset 100 with partition epoch 7, high watermark 90, ISR [1,2], adding replicas [] and removing replicas []. Previous leader Some(2) and previous leader epoch was 4. (state.change.logger)
[2024-05-14 12:00:01,000] INFO [Partition t-0 broker=1] ISR updated to 2  and version updated to 8 (kafka.cluster.Partition)
[2024-05-14 12:00:02,000] INFO [UnifiedLog partition=t-0, dir=/data] Truncating to offset 95 (kafka.log.UnifiedLog)
[2024-05-14 12:00:05,000] WARN [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Received UNKNOWN_TOPIC_OR_PARTITION from the leader for partition t-0. This error may be returned transiently when the partition is being created or deleted, but it is not expected to persist. (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:06,000] WARN [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Received UNKNOWN_TOPIC_OR_PARTITION from the leader for partition t-0. This error may be returned transiently when the partition is being created or deleted, but it is not expected to persist. (kafka.server.ReplicaFetcherThread)
[2024-05-14 12:00:07,000] ERROR [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Error for partition t-0 at offset 95 (kafka.server.ReplicaFetcherThread)
org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only for the leader, this error indicates that the broker is not the current leader.
""",
    # Broker 3 (Kafka 2.4, which prints no follower line) leads u-0, becomes a follower (its fetcher is added)
    # and truncates as one: no violation.
    "server-3.log": """\
[2024-05-14 12:00:00,000] INFO [Partition u-0 broker=3] u-0 starts at Leader Epoch 3 from offset 50. Previous Leader Epoch was: 2 (kafka.cluster.Partition)
[2024-05-14 12:00:05,000] INFO [ReplicaFetcherManager on broker 3] Added fetcher to broker BrokerEndPoint(id=1, host=kafka1:9092) for partitions Map(u-0 -> (offset=50, leaderEpoch=4)) (kafka.server.ReplicaFetcherManager)
[2024-05-14 12:00:06,000] INFO [Log partition=u-0, dir=/var/kafka] Truncating to offset 48 (kafka.log.Log)
""",
    "server-2.log": """\
[2024-05-14 12:00:03,000] INFO [Broker id=2] Leader t-0 starts at leader epoch 5 from offset 95 with high watermark 90 ISR [2,1] addingReplicas [] removingReplicas []. Previous leader epoch was 4. (state.change.logger)
[2024-05-14 12:00:04,000] INFO [Partition t-0 broker=2] Expanding ISR from 2 to 2,1 (kafka.cluster.Partition)
[2024-05-14 12:00:04,500] ERROR [ReplicaManager broker=2] Error processing append operation on partition t-0 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR Set(2) is insufficient to satisfy the min.isr requirement of 2 for partition t-0
""",
}


def test_audit_and_checker_agree_on_log_events(spark: SparkSession, tmp_path: Path) -> None:
    """The invariants that apply to real logs, over events read from them: the Spark audit and the reference
    checker find the same violations, the ones read off the incident by hand."""
    got = parse(spark, write_logs(tmp_path, INCIDENT)).where("_reason_code IS NULL")
    events = kept_events(got)
    for_logs = sorted(i.name for i in CATALOGUE if KAFKA_LOG in i.sources and i.name in inv.IMPLEMENTED)
    audit = inv.evaluate(events, for_logs).select("invariant", "replica", "ts_ms").collect()
    spark_found = sorted((r["invariant"], r["replica"], r["ts_ms"]) for r in audit)
    reference = check_events([r.asDict(recursive=True) for r in events.orderBy("event_id").collect()])
    checker_found = sorted((v.invariant, v.replica, v.ts_ms) for v in reference.violations if v.invariant in for_logs)
    t = ms("2024-05-14 12:00:00,000")
    assert spark_found == checker_found == sorted([
        ("isr_nonempty", 1, t + 1000),  # the committed ISR [2] lacks its leader 1
        ("leader_no_truncation", 1, t + 2000),
        ("leader_epoch_monotonic", 2, t + 3000),
    ])


def test_lag_judges_a_log_runs_shrink_premature_only_from_the_lcu_it_reports(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
    """Real logs have no follower_fetch_state: a shrink line is judged alone. With the follower's
    lastCaughtUpTimeMs (3.6+) and the leader's replica.lag.time.max.ms from its KafkaConfig block (10 s here, not
    Kafka's 30 s default), a removal at most 10 s after lcu is premature; one later, or a line without lcu
    (2.2-3.5), or a lag below 0 (a wrong time zone) gets no row: on time or late needs the leader's appends."""
    from jobs.transforms.lag import follower_lag, lag_incidents
    from jobs.transforms.timelines import isr_changes, partition_state

    t = ms("2024-05-14 12:00:20,000")
    text = ("[2024-05-14 12:00:00,000] INFO KafkaConfig values: \n\tbroker.id = 1\n"
            "\treplica.lag.time.max.ms = 10000\n (kafka.server.KafkaConfig)\n"
            "[2024-05-14 12:00:01,000] INFO [Broker id=1] Leader t-0 starts at leader epoch 5 from offset 100 with "
            "high watermark 90 ISR [1,2,3,4] addingReplicas [] removingReplicas []. Previous leader epoch was 4. "
            "(state.change.logger)\n"
            # At 20 s: 2 behind for 8 s (premature), 3 for 20 s (due: no row), 4 caught up 'in the future'.
            "[2024-05-14 12:00:20,000] INFO [Partition t-0 broker=1] Shrinking ISR from 1,2,3,4 to 1. Leader: "
            f"(highWatermark: 90, endOffset: 120). Out of sync replicas: (brokerId: 2, endOffset: 95, "
            f"lastCaughtUpTimeMs: {t - 8000}) (brokerId: 3, endOffset: 90, lastCaughtUpTimeMs: {t - 20000}) "
            f"(brokerId: 4, endOffset: 99, lastCaughtUpTimeMs: {t + 3_600_000}). (kafka.cluster.Partition)\n"
            "[2024-05-14 12:00:20,050] INFO [Partition t-0 broker=1] ISR updated to 1  and version updated to 8 "
            "(kafka.cluster.Partition)\n"
            # 2.2-3.5 print no lcu: not judged.
            "[2024-05-14 12:00:30,000] INFO [Partition t-1 broker=1] Shrinking ISR from 1,2 to 1. Leader: "
            "(highWatermark: 90, endOffset: 120). Out of sync replicas: (brokerId: 2, endOffset: 95). "
            "(kafka.cluster.Partition)\n")
    got = parse(spark, write_logs(tmp_path, {"server.log": text})).where("_reason_code IS NULL")
    events = kept_events(got)
    ic = isr_changes(events)
    assert ic.where(F.col("action") == "shrink").count() == 2
    incidents = lag_incidents(follower_lag(events).localCheckpoint(), ic.localCheckpoint(),
                              partition_state(events).localCheckpoint(), events)
    cols = ("topic", "partition", "follower_id", "leader_id", "leader_epoch", "start_ms", "end_ms",
            "last_caught_up_time_ms", "lag_max_ms", "peak_time_lag_ms", "shrink_ms", "shrink_outcome", "verdict")
    schema = ("topic string, partition int, follower_id int, leader_id int, leader_epoch int, start_ms long, "
              "end_ms long, last_caught_up_time_ms long, lag_max_ms long, peak_time_lag_ms long, shrink_ms long, "
              "shrink_outcome string, verdict string")
    expected = [("t", 0, 2, 1, 5, t, t, t - 8000, 10000, 8000, t, "committed", "premature")]
    assert_df_equality(incidents.select(*cols), spark.createDataFrame(expected, schema), ignore_nullable=True)


def test_cli_ingests_logs_as_a_run_named_after_the_folder(spark: SparkSession, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`replog ingest --source kafka-logs`: the run is the folder's name unless `--run-id` names it; log options
    without the log source, or a zone that is none, are usage errors (exit 2, one line)."""
    from jobs import cli

    landing = tmp_path / "prod-incident-7"
    write_logs(landing, {"server.log": "[2024-05-14 12:00:00,000] INFO [KafkaServer id=4] started "
                                       "(kafka.server.KafkaServer)\n", "notes.txt": "not a log\n"})
    lake_dir = str(tmp_path / "lake")
    assert cli.main(["ingest", "--source", "kafka-logs", "--landing", str(landing), "--lake", lake_dir]) == 0
    out = capsys.readouterr().out
    assert "records read 1 = kept 1 + quarantined 0" in out and "[reconciled]" in out
    assert "1 file(s) ignored, not Kafka log (*.log, *.log.*, also .gz / .bz2 / .zst) files" in out
    lake = EmbeddedLake(spark, lake_dir)
    assert [(r["run_id"], r["source"], r["broker_id"]) for r in lake.read(BRONZE_EVENTS).collect()] == [
        ("prod-incident-7", "kafka-log", 4)]
    assert cli.main(["ingest", "--landing", str(landing), "--lake", lake_dir, "--run-id", "x"]) == 2
    assert "apply to --source kafka-logs only" in capsys.readouterr().err
    assert cli.main(["ingest", "--source", "kafka-logs", "--landing", str(landing), "--lake", lake_dir,
                     "--log-timezone", "Mars/Olympus"]) == 2
    assert "--log-timezone 'Mars/Olympus': expected a time zone name" in capsys.readouterr().err


def test_log_runs_go_through_every_job_to_the_report(spark: SparkSession, tmp_path: Path) -> None:
    """ingest --source kafka-logs -> timelines -> lag -> audit -> report, for two runs of logs in one lake (one pass
    of each job over both, one report each). The incident: the audit exits 1 on its errors, lag judges nothing, and
    the report points at the log lines that prove each violation. The elections: without a violation to show (logs
    cannot prove a lost write), each partition an unclean election hit is still a section of the report, its
    picture marking the election. The ingest of the logs runs with the jobs' own code generation (`GENERATED`);
    the jobs after it run interpreted here, as `tests/test_demo.py` runs them generated (the same code on engine
    events): generating their code again cost this test a third more CPU."""
    from jobs.audit import run_audit
    from jobs.incident_report import run_report
    from jobs.lag import run_lag
    from jobs.timelines import run_timelines

    write_logs(tmp_path / "incident", INCIDENT)
    # The controller's clock 200 ms ahead of broker 2's: its election line for orders-3 comes after the new
    # leader's own line, which already holds the state the election sets (still counted and drawn, from bronze).
    skewed = ELECTIONS["controller.log"].replace("[2024-05-14 12:00:01,000] INFO Setting new leader",
                                                 "[2024-05-14 12:00:01,200] INFO Setting new leader")
    assert skewed != ELECTIONS["controller.log"]
    write_logs(tmp_path / "elections", {**ELECTIONS, "controller.log": skewed})
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    quiet = {"log": lambda _m: None}
    with sql_conf(spark, GENERATED):
        for run in ("incident", "elections"):
            run_ingest(spark, lake, str(tmp_path / run), logs=BrokerLogOptions(run), **quiet)
    run_timelines(spark, lake, **quiet)
    assert run_lag(spark, lake, **quiet).verdicts == {}
    audit = run_audit(spark, lake, **quiet)
    assert audit.exit_code == 1
    # The incident's errors, and no error of the elections' run.
    assert {name: c["error"] for name, c in audit.counts.items() if c.get("error")} == {
        "isr_nonempty": 1, "leader_no_truncation": 1, "leader_epoch_monotonic": 1}

    report = run_report(spark, lake, runs=["incident"], out=tmp_path / "report-incident", **quiet)
    text = (report.out_dir / "report.md").read_text(encoding="utf-8")
    assert "server-1.log:3" in text  # the truncation the leader made
    assert "server-2.log:1" in text  # the second leader of epoch 5
    # Broker 1's failed fetches from broker 2, per error: how many, first and last (s since the first line).
    assert "| follower | leader | error | responses | first (s) | last (s) |" in text
    assert "| 1 | 2 | UNKNOWN_TOPIC_OR_PARTITION | 2 | 5.000 | 6.000 |" in text
    assert "| 1 | 2 | NOT_LEADER_OR_FOLLOWER | 1 | 7.000 | 7.000 |" in text
    assert ("Fetch responses with an error: UNKNOWN_TOPIC_OR_PARTITION 2 (1 partition), NOT_LEADER_OR_FOLLOWER 1 "
            "(1 partition).") in text
    # Broker 2's refused write, the only produce answer a log shows: in the overview and in t-0's section, without
    # a stretch of silence (a log prints refusals alone).
    assert "Produce answers with an error: NOT_ENOUGH_REPLICAS 1 (1 partition)." in text
    assert "- acks=all: answers with an error: 1 NOT_ENOUGH_REPLICAS (at 4.500 s)." in text
    assert "No produce answer for" not in text
    html = (report.out_dir / "report.html").read_text(encoding="utf-8")
    assert "<td>NOT_LEADER_OR_FOLLOWER</td>" in html

    report = run_report(spark, lake, runs=["elections"], out=tmp_path / "report-elections", **quiet)
    text = (report.out_dir / "report.md").read_text(encoding="utf-8")
    assert "4 partition(s) have a violation, a lag incident or an unclean election; 4 plotted" in text
    for partition in (3, 4, 5, 6):
        section = text.split(f"### orders-{partition} (run elections)")[1].split("###")[0]
        assert "0 error(s), 0 warning(s), 0 lag incident(s), 1 unclean election(s)." in section
    assert report.plotted == 4 and all(p.stat().st_size > 10_000 for p in report.pngs)
