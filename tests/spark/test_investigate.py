"""`jobs.investigate` on a hand-built partition story; every expected row is worked out by hand below."""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.investigate import lost_per_partition, lost_writes, offsets_at_moments, partition_moments
from jobs.transforms.timelines import replica_offsets
from tests.spark.conftest import make_events

L, F_, OFF = "leader", "follower", "offline"
CONTROLLER = 1000


def _story(spark: SparkSession):  # type: ignore[no-untyped-def]
    """Broker 1 leads t-0 (epoch 1) with follower 2, shrinks 2 out, appends 5 more records and crashes; the
    controller then elects 2 uncleanly. Broker 3 (no replica of t-0) crashes too, and t-1 has an election."""
    return make_events(spark, [
        dict(event_type="leader_election", ts_ms=0, broker_id=CONTROLLER, leader_id=1, leader_epoch=1,
             action="clean", isr=[1, 2], replicas=[1, 2], partition_epoch=0, reason="topic_creation"),    # 0
        dict(event_type="leadership_change", ts_ms=1, broker_id=1, leader_epoch=1, action="become_leader",
             leader_id=1, partition_epoch=0, isr=[1, 2], replicas=[1, 2], leo=0, hw=0),                 # 1
        dict(event_type="leadership_change", ts_ms=1, broker_id=2, leader_epoch=1, action="become_follower",
             leader_id=1, partition_epoch=0, replicas=[1, 2], leo=0, hw=0),                             # 2
        dict(event_type="append", ts_ms=10, broker_id=1, leader_epoch=1, role=L, base_offset=0, last_offset=9,
             leo=10),                                                                                    # 3
        dict(event_type="append", ts_ms=12, broker_id=2, leader_epoch=1, role=F_, base_offset=0, last_offset=9,
             leo=10),                                                                                    # 4
        dict(event_type="hw_change", ts_ms=15, broker_id=1, leader_epoch=1, role=L, old_hw=0, hw=10),      # 5
        dict(event_type="isr_change", ts_ms=20, broker_id=1, leader_epoch=1, action="shrink",
             isr_state="proposed", old_isr=[1, 2], isr=[1]),                                             # 6
        dict(event_type="isr_change", ts_ms=22, broker_id=1, leader_epoch=1, action="shrink",
             isr_state="committed", old_isr=[1, 2], isr=[1], partition_epoch=1),                        # 7
        dict(event_type="append", ts_ms=25, broker_id=1, leader_epoch=1, role=L, base_offset=10, last_offset=14,
             leo=15),                                                                                    # 8
        dict(event_type="broker_lifecycle", ts_ms=30, broker_id=3, topic=None, partition=None, action="crash"),  # 9
        dict(event_type="broker_lifecycle", ts_ms=40, broker_id=1, topic=None, partition=None, action="crash"),  # 10
        dict(event_type="leader_election", ts_ms=45, broker_id=CONTROLLER, partition=1, leader_id=3,
             leader_epoch=4, action="clean", isr=[3], replicas=[3], partition_epoch=4),                 # 11
        dict(event_type="leader_election", ts_ms=50, broker_id=CONTROLLER, leader_id=2, leader_epoch=2,
             action="unclean", isr=[2], replicas=[1, 2], partition_epoch=2, reason="session_timeout"),  # 12
        dict(event_type="leadership_change", ts_ms=51, broker_id=2, leader_epoch=2, action="become_leader",
             leader_id=2, partition_epoch=2, isr=[2], replicas=[1, 2], leo=10, hw=10),                  # 13
    ], run_id="r")


def test_offsets_at_moments_tells_the_partition_story(spark: SparkSession) -> None:
    bronze = _story(spark)
    story = offsets_at_moments(bronze, replica_offsets(bronze), "r", "t", 0)
    created = "clean election: leader 1 in epoch 1, ISR [1, 2] (topic_creation)"
    shrunk = "ISR shrink committed by leader 1: [1, 2] -> [1]"
    unclean = "unclean election: leader 2 in epoch 2, ISR [2] (session_timeout)"
    expected = spark.createDataFrame([
        # The topic's creation precedes every replica's first interval: the moment alone.
        (0, created, None, None, None, None, None),
        # At the commit: the leader has HW 10 = LEO 10; the follower fetched to 10 but has not heard HW 10.
        (22, shrunk, 1, L, 1, 10, 10),
        (22, shrunk, 2, F_, 1, 0, 10),
        # Broker 3's crash (ts 30) is not this partition's; broker 1's takes its replica offline with LEO 15.
        (40, "broker 1 crash", 1, OFF, 1, 10, 15),
        (40, "broker 1 crash", 2, F_, 1, 0, 10),
        # t-1's election (ts 45) is not this partition's. Electing 2 (LEO 10) gives up offsets 10..14.
        (50, unclean, 1, OFF, 1, 10, 15),
        (50, unclean, 2, F_, 1, 0, 10),
    ], "ts_ms long, moment string, replica_id int, role string, leader_epoch int, high_watermark long, "
       "log_end_offset long")
    assert_df_equality(story, expected, ignore_nullable=True, ignore_metadata=True)


def test_the_moments_of_a_cluster_with_eligible_leader_replicas_show_the_elr(spark: SparkSession) -> None:
    """KIP-966: the controller's changes without an election are moments too, and each moment it states says the
    ELR: broker 2 leaves the ISR below min ISR (eligible), the leader is fenced, broker 2 is elected from the ELR."""
    bronze = make_events(spark, [
        dict(event_type="leader_election", ts_ms=0, broker_id=CONTROLLER, leader_id=1, leader_epoch=0,
             action="clean", isr=[1, 2, 3], elr=[], replicas=[1, 2, 3], partition_epoch=0,
             reason="topic_creation"),                                                                   # 0
        dict(event_type="partition_change", ts_ms=10, broker_id=CONTROLLER, leader_id=1, leader_epoch=0,
             isr=[1, 2], elr=[], replicas=[1, 2, 3], partition_epoch=1, reason="alter_partition"),     # 1
        dict(event_type="partition_change", ts_ms=20, broker_id=CONTROLLER, leader_id=1, leader_epoch=0,
             isr=[1], elr=[2], replicas=[1, 2, 3], partition_epoch=2, reason="alter_partition"),       # 2
        dict(event_type="leader_election", ts_ms=30, broker_id=CONTROLLER, leader_id=2, leader_epoch=1,
             action="elr", isr=[2], elr=[1], replicas=[1, 2, 3], partition_epoch=3,
             reason="session_timeout"),                                                                  # 3
    ], run_id="r")
    expected = spark.createDataFrame([
        (0, 0, 1, "election", "clean election: leader 1 in epoch 0, ISR [1, 2, 3], ELR [] (topic_creation)"),
        (10, 1, 1, "change", "partition change: ISR [1, 2], ELR [] (alter_partition)"),
        (20, 2, 1, "change", "partition change: ISR [1], ELR [2] (alter_partition)"),
        (30, 3, 2, "election", "elr election: leader 2 in epoch 1, ISR [2], ELR [1] (session_timeout)"),
    ], "ts_ms long, event_id long, broker_id int, kind string, moment string")
    actual = partition_moments(bronze, "r", "t", 0).orderBy("event_id")
    assert_df_equality(actual, expected, ignore_nullable=True, ignore_metadata=True)


def test_offsets_at_moments_of_a_partition_without_moments_is_empty(spark: SparkSession) -> None:
    bronze = _story(spark)
    assert offsets_at_moments(bronze, replica_offsets(bronze), "r", "t", 7).count() == 0


def test_the_simulated_faults_of_the_partitions_replicas_are_moments(spark: SparkSession) -> None:
    """Broker 2 (follower of t-0) pauses, is cut off from the leader and the controller until a heal, then its disk
    stalls; broker 3, no replica of t-0, is cut off too: a moment of the run, not of the partition's story."""
    faults = make_events(spark, [
        dict(event_type="broker_fault", ts_ms=13, broker_id=2, topic=None, partition=None, action="gc_pause",
             duration_ms=400),                                                                           # 14
        dict(event_type="broker_fault", ts_ms=16, broker_id=2, topic=None, partition=None,
             action="network_partition", peers=[1, CONTROLLER], direction="both"),                      # 15
        dict(event_type="broker_fault", ts_ms=17, broker_id=3, topic=None, partition=None,
             action="network_partition", peers=[1], direction="outbound", duration_ms=5),               # 16
        dict(event_type="broker_fault", ts_ms=18, broker_id=2, topic=None, partition=None, action="network_heal",
             peers=[1, CONTROLLER], direction="both"),                                                   # 17
        dict(event_type="broker_fault", ts_ms=19, broker_id=2, topic=None, partition=None, action="network_heal"),  # 18
        dict(event_type="broker_fault", ts_ms=21, broker_id=2, topic=None, partition=None, action="disk_stall",
             duration_ms=30),                                                                            # 19
    ], run_id="r").withColumn("event_id", F.col("event_id") + 14)
    bronze = _story(spark).unionByName(faults)
    moments = partition_moments(bronze, "r", "t", 0).where(F.col("kind") == "fault").orderBy("event_id")
    assert_df_equality(moments, spark.createDataFrame([
        (13, 14, 2, "fault", "broker 2 GC pause for 400 ms"),
        (16, 15, 2, "fault", "broker 2 cut off from [1, 1000] (both) until a heal"),
        (17, 16, 3, "fault", "broker 3 cut off from [1] (outbound) for 5 ms"),
        (18, 17, 2, "fault", "broker 2 network heal of [1, 1000] (both)"),
        (19, 18, 2, "fault", "broker 2 network heal of every link"),
        (21, 19, 2, "fault", "broker 2 disk stall for 30 ms"),
    ], "ts_ms long, event_id long, broker_id int, kind string, moment string"),
        ignore_nullable=True, ignore_metadata=True)
    # In the story: broker 2's faults with both replicas' offsets then (broker 1 leads; the follower has fetched to
    # 10 by 12 ms and hears HW 10 only later), broker 3's left out.
    story = offsets_at_moments(bronze, replica_offsets(bronze), "r", "t", 0).where(
        F.col("ts_ms").between(13, 21))
    rows = [(t, m, r, role, 1, hw, leo) for t, m in (
        (13, "broker 2 GC pause for 400 ms"), (16, "broker 2 cut off from [1, 1000] (both) until a heal"),
        (18, "broker 2 network heal of [1, 1000] (both)"), (19, "broker 2 network heal of every link"),
        (21, "broker 2 disk stall for 30 ms")) for r, role, hw, leo in (
        (1, L, 0 if t < 15 else 10, 10), (2, F_, 0, 10))]
    assert_df_equality(story, spark.createDataFrame(rows, "ts_ms long, moment string, replica_id int, role string, "
                                                          "leader_epoch int, high_watermark long, log_end_offset long"),
                       ignore_nullable=True, ignore_metadata=True)


def test_lost_writes_tell_acks_all_from_acks1_and_count_them_per_partition(spark: SparkSession) -> None:
    """Two acks=all writes lost on t-0 (one excused: a warning), three acks=1 ones on t-0 and t-1 (info); another
    invariant's violation is no lost write."""
    schema = ("run_id string, invariant string, severity string, topic string, partition int, offset long, "
              "ts_ms long, message string")
    violations = spark.createDataFrame([
        ("r", "acked_write_lost", "error", "t", 0, 5, 90, "write lost"),
        ("r", "acked_write_lost", "warning", "t", 0, 9, 90, "write lost (after unclean election 4)"),
        ("r", "acks1_write_lost", "info", "t", 0, 7, 90, "acks=1 write lost"),
        ("r", "acks1_write_lost", "info", "t", 1, 3, 90, "acks=1 write lost"),
        ("r", "acks1_write_lost", "info", "t", 1, 4, 90, "acks=1 write lost"),
        ("r", "hw_within_log", "error", "t", 0, 2, 50, "HW above LEO"),
    ], schema)
    lost = lost_writes(violations)
    assert sorted((r["acks"], r["partition"], r["offset"], r["severity"]) for r in lost.collect()) == [
        ("1", 0, 7, "info"), ("1", 1, 3, "info"), ("1", 1, 4, "info"), ("all", 0, 5, "error"),
        ("all", 0, 9, "warning")]
    expected = spark.createDataFrame([("r", "t", 0, "all", 2, 5, 9), ("r", "t", 0, "1", 1, 7, 7),
                                      ("r", "t", 1, "1", 2, 3, 4)],
                                     "run_id string, topic string, partition int, acks string, writes_lost long, "
                                     "first_offset long, last_offset long")
    assert_df_equality(lost_per_partition(lost), expected, ignore_row_order=True, ignore_nullable=True)
