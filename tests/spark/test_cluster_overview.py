"""`jobs.cluster_overview`: the report's run-wide series, on hand-built intervals worked out by hand below."""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from jobs.cluster_overview import (
    FAULT_SPAN_SCHEMA,
    bucket_bounds,
    controller_isr_shrinks,
    down_buckets,
    elections,
    fault_marks,
    fault_spans,
    filled_counts,
    in_office,
    isr_churn,
    partition_counts,
)
from jobs.overview_plot import FaultSpan

# Run r spans 1000..1999 ms: 4 buckets of 250 ms (b0 [1000, 1250), b1 [1250, 1500), b2 [1500, 1750), b3 [1750, 2000)).
BOUNDS = [("r", 1000, 1999)]
STATE = "run_id string, valid_from_ms long, valid_to_ms long, under_replicated boolean, under_min_isr boolean, " \
        "offline boolean, topic string, partition int, leader_epoch int"
# Partition A (t-0): under-replicated and under min ISR over [1100, 1600). Partition B (t-1): under-replicated over
# [1200, 1300), then offline over [1300, 1400). Both fine before and after (null end: still in force); one leader
# epoch each throughout.
STATES = [(*row, "t", p, 1) for p, rows in (
    (0, [("r", 1000, 1100, False, False, False), ("r", 1100, 1600, True, True, False),
         ("r", 1600, None, False, False, False)]),
    (1, [("r", 1000, 1200, False, False, False), ("r", 1200, 1300, True, False, False),
         ("r", 1300, 1400, False, False, True), ("r", 1400, None, False, False, False)])) for row in rows]
INCIDENT = "run_id string, topic string, partition int, leader_epoch int, start_ms long, end_ms long, verdict string"
INCIDENTS = [("r", "t", 0, 1, 1150, 1700, "on_time"), ("r", "t", 1, 1, 1800, None, "ongoing"),
             ("r", "t", 0, 1, 1000, 1900, "premature")]  # a premature shrink is no lag: not counted
SERIES = ("under_replicated", "under_min_isr", "offline", "lagging")


def _buckets(spark: SparkSession):  # type: ignore[no-untyped-def]
    return bucket_bounds(spark.createDataFrame(BOUNDS, "run_id string, start_ms long, end_ms long"), 4)


def test_bucket_width_covers_the_span(spark: SparkSession) -> None:
    assert [r["bucket_ms"] for r in _buckets(spark).collect()] == [250]
    one = spark.createDataFrame([("r", 5, 5)], "run_id string, start_ms long, end_ms long")
    assert [r["bucket_ms"] for r in bucket_bounds(one, 400).collect()] == [1], "at least 1 ms"


def test_partition_counts_are_the_most_at_once_per_bucket(spark: SparkSession) -> None:
    # Running counts (under-replicated, under min ISR, offline, lagging) after each change:
    # 1000 (0,0,0,0); 1100 (1,1,0,0); 1150 (1,1,0,1); 1200 (2,1,0,1); 1300 (1,1,1,1); 1400 (1,1,0,1);
    # 1600 (0,0,0,1); 1700 (0,0,0,0); 1800 (0,0,0,1).
    state = spark.createDataFrame(STATES, STATE)
    incidents = spark.createDataFrame(INCIDENTS, INCIDENT)
    actual = partition_counts(state, incidents, _buckets(spark))
    cols = "run_id string, bucket long, " + ", ".join(f"{n}_max long" for n in SERIES) + ", " + ", ".join(
        f"{n}_last long" for n in SERIES)
    expected = spark.createDataFrame([
        ("r", 0, 2, 1, 0, 1, 2, 1, 0, 1),
        ("r", 1, 1, 1, 1, 1, 1, 1, 0, 1),
        ("r", 2, 0, 0, 0, 1, 0, 0, 0, 0),
        ("r", 3, 0, 0, 0, 1, 0, 0, 0, 1),
    ], cols)
    assert_df_equality(actual.select(*expected.columns), expected, ignore_row_order=True, ignore_nullable=True)
    # A bucket's most also counts what it started with: b1 starts at 2 under-replicated (until 1300), b2 at 1
    # (partition A until 1600). Buckets without a change keep the count the one before ended with.
    filled = filled_counts([r.asDict() for r in actual.collect()], 5)
    assert filled.to_dict("records") == [
        {"bucket": 0, "under_replicated": 2, "under_min_isr": 1, "offline": 0, "lagging": 1},
        {"bucket": 1, "under_replicated": 2, "under_min_isr": 1, "offline": 1, "lagging": 1},
        {"bucket": 2, "under_replicated": 1, "under_min_isr": 1, "offline": 0, "lagging": 1},
        {"bucket": 3, "under_replicated": 0, "under_min_isr": 0, "offline": 0, "lagging": 1},
        {"bucket": 4, "under_replicated": 0, "under_min_isr": 0, "offline": 0, "lagging": 1},
    ]


def test_lag_counts_only_while_the_leader_was_in_office(spark: SparkSession) -> None:
    # t-0: epoch 1 until the controller names epoch 3 at 1500 (epoch 2 was never stated); t-1: epoch 1 throughout.
    # Epoch 1's incident [1100, 1700) ends at 1500; its ongoing one from 1600 (a zombie's view only) is left out; an
    # incident of epoch 2, which no state names, ends at epoch 3's first state too; epoch 3's and t-1's are kept.
    state = spark.createDataFrame([("r", 1000, 1500, False, False, False, "t", 0, 1),
                                   ("r", 1500, None, False, False, False, "t", 0, 3),
                                   ("r", 1000, None, False, False, False, "t", 1, 1)], STATE)
    incidents = spark.createDataFrame([
        ("r", "t", 0, 1, 1100, 1700, "on_time"), ("r", "t", 0, 1, 1600, None, "ongoing"),
        ("r", "t", 0, 2, 1200, None, "missing"), ("r", "t", 0, 3, 1600, 1800, "on_time"),
        ("r", "t", 1, 1, 1100, None, "ongoing")], INCIDENT)
    expected = spark.createDataFrame([
        ("r", "t", 0, 1, 1100, 1500, "on_time"), ("r", "t", 0, 2, 1200, 1500, "missing"),
        ("r", "t", 0, 3, 1600, 1800, "on_time"), ("r", "t", 1, 1, 1100, None, "ongoing")], INCIDENT)
    assert_df_equality(in_office(incidents, state), expected, ignore_row_order=True, ignore_nullable=True)
    # The overview's lagging count: 2 at 1100-1200 .. 3 from 1200 to 1500, then the epoch-3 incident alone.
    rows = [r.asDict() for r in partition_counts(state, incidents, _buckets(spark)).collect()]
    assert list(filled_counts(rows, 4)["lagging"]) == [3, 3, 2, 2]


def test_isr_churn_counts_committed_shrinks_and_expands_at_their_commit(spark: SparkSession) -> None:
    changes = spark.createDataFrame([
        ("r", "shrink", "committed", 1100), ("r", "expand", "committed", 1600),
        ("r", "shrink", "rejected", 1200), ("r", "update", "committed", 1300), ("r", "shrink", "pending", None),
    ], "run_id string, action string, outcome string, resolved_ms long")
    expected = spark.createDataFrame([("r", 0, 1, 0), ("r", 2, 0, 1)],
                                     "run_id string, bucket long, shrinks long, expands long")
    assert_df_equality(isr_churn(changes, _buckets(spark)), expected, ignore_row_order=True, ignore_nullable=True)


def test_controller_isr_shrinks_are_the_isr_removals_no_leader_proposed(spark: SparkSession) -> None:
    # Partition 0: created with ISR [1, 2, 3]; the controller elects a leader without broker 3 at 1100 (KIP-101's
    # shrink through an election), the leader shrinks the ISR to [1] at 1300 (its own, IsrShrinksPerSec), expands
    # it at 1600 (no removal). Partition 1: the leader learns its own shrink from the metadata at 1400 (an
    # `update` that silver/isr_changes groups with its proposal: not the controller's); the controller fences
    # broker 2 at 1450 (a partition_change) and a new leader registers at 1800 without broker 3 (a LeaderAndIsr).
    # Partition 2: the controller's LeaderAndIsr drops broker 1 at 1260 (an `update` of its own); a log line
    # without the ISR at 1300 and the ISR stated again at 1350 remove nobody.
    state = spark.createDataFrame([
        ("r", "t", 0, 1000, 1, [1, 2, 3], "leader_election:clean"),
        ("r", "t", 0, 1100, 2, [1, 2], "leader_election:clean"),
        ("r", "t", 0, 1300, 3, [1], "isr_change:shrink"),
        ("r", "t", 0, 1600, 4, [1, 2], "isr_change:expand"),
        ("r", "t", 1, 1000, 10, [1, 2, 3, 4], "leader_election:clean"),
        ("r", "t", 1, 1400, 11, [1, 2, 3], "isr_change:update"),
        ("r", "t", 1, 1450, 12, [1, 3], "partition_change:session_timeout"),
        ("r", "t", 1, 1800, 13, [1], "leadership_change:become_leader"),
        ("r", "t", 2, 1000, 20, [1, 2], "leader_election:clean"),
        ("r", "t", 2, 1260, 21, [2], "isr_change:update"),
        ("r", "t", 2, 1300, 22, None, "leadership_change:become_leader"),
        ("r", "t", 2, 1350, 23, [1, 2], "isr_change:expand"),
    ], "run_id string, topic string, partition int, valid_from_ms long, event_id long, isr array<int>, cause string")
    changes = spark.createDataFrame([
        ("r", "t", 0, "shrink", "committed", 3), ("r", "t", 0, "expand", "committed", 4),
        ("r", "t", 1, "shrink", "committed", 11), ("r", "t", 2, "update", "committed", 21),
        ("r", "t", 2, "expand", "committed", 23),
    ], "run_id string, topic string, partition int, action string, outcome string, resolved_event_id long")
    expected = spark.createDataFrame([("r", 0, 1), ("r", 1, 2), ("r", 3, 1)],
                                     "run_id string, bucket long, shrinks long")
    assert_df_equality(controller_isr_shrinks(state, changes, _buckets(spark)), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_elections_per_bucket_and_new_leader(spark: SparkSession) -> None:
    bronze = spark.createDataFrame([
        ("r", 1000, "leader_election", "clean", 1), ("r", 1010, "leader_election", "clean", 1),
        ("r", 1300, "leader_election", "unclean", 2), ("r", 1400, "leader_election", "offline", None),
        ("r", 1450, "leader_election", "elr", 3),
        ("r", 1500, "leadership_change", "become_leader", 2),
    ], "run_id string, ts_ms long, event_type string, action string, leader_id int")
    expected = spark.createDataFrame(
        [("r", 0, 1, False, False, 2), ("r", 1, 2, True, False, 1), ("r", 1, 3, False, True, 1)],
        "run_id string, bucket long, leader_id int, unclean boolean, from_elr boolean, elections long")
    assert_df_equality(elections(bronze, _buckets(spark)), expected, ignore_row_order=True, ignore_nullable=True)


def test_a_change_at_a_buckets_first_millisecond_is_all_the_bucket_sees(spark: SparkSession) -> None:
    # Under-replicated over [1000, 1250) exactly: bucket 1 begins as it ends, so it saw none.
    state = spark.createDataFrame([("r", 1000, 1250, True, False, False, "t", 0, 1),
                                   ("r", 1250, None, False, False, False, "t", 0, 1)], STATE)
    incidents = spark.createDataFrame([], INCIDENT)
    rows = [r.asDict() for r in partition_counts(state, incidents, _buckets(spark)).collect()]
    assert list(filled_counts(rows, 3)["under_replicated"]) == [1, 0, 0]


def test_down_buckets_run_from_a_crash_or_shutdown_to_the_next_start(spark: SparkSession) -> None:
    # Broker 1: controlled shutdown at 1100 then shutdown (one stretch), back at 1300 (a log's `start`), crash at
    # 1800 with no restart (down to the run's end). Broker 2: its first start, a crash at 1500 and a restart at
    # 1500 (no time down), a crash at 1600 and a restart at 1750 (exclusive: bucket 3 not touched). Broker 3: a
    # crash read at its restart (dated at its last line, 1100) back at 1550, then a crash at 1600 known to the
    # millisecond: bucket 2 holds both stretches, so it is down for sure.
    rows = [(1, 1000, 0, "start", None), (1, 1100, 1, "controlled_shutdown", None), (1, 1120, 2, "shutdown", None),
            (1, 1300, 3, "start", None), (1, 1800, 4, "crash", None),
            (2, 1000, 5, "start", None), (2, 1500, 6, "crash", None), (2, 1500, 7, "restart", None),
            (2, 1600, 8, "crash", None), (2, 1750, 9, "restart", None),
            (3, 1000, 10, "start", None), (3, 1100, 11, "crash", "unclean_start"), (3, 1550, 12, "start", None),
            (3, 1600, 13, "crash", None), (3, 1700, 14, "start", None)]
    bronze = spark.createDataFrame([("r", b, ts, e, "broker_lifecycle", a, why) for b, ts, e, a, why in rows],
                                   "run_id string, broker_id int, ts_ms long, event_id long, event_type string, "
                                   "action string, reason string")
    expected = spark.createDataFrame([("r", 1, 0, False), ("r", 1, 1, False), ("r", 1, 3, False), ("r", 2, 2, False),
                                      ("r", 3, 0, True), ("r", 3, 1, True), ("r", 3, 2, False)],
                                     "run_id string, broker_id int, bucket long, unsure boolean")
    assert_df_equality(down_buckets(bronze, _buckets(spark)), expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_column_order=True)


FAULT_EVENTS = "run_id string, broker_id int, ts_ms long, event_id long, event_type string, action string, " \
               "duration_ms long, peers array<int>, direction string"
# Run r (1000..1999). Broker 1: cut off from [3, 2] at 1100 until a heal naming [2, 3] (same peers, other order) at
# 1300, a 20 ms GC pause meanwhile; cut off from [2, 3, 1000] at 1400, which a heal of [2, 3] alone at 1500 does not
# end (open to the run's end). Broker 2: a GC pause its crash cuts short, a partition with its duration and its
# scheduled heal. Broker 3: a partition ended by a heal of every link (no peers), one with a 500 ms duration that
# such a heal ends earlier (that heal does not end broker 1's), and a disk stall past the run's end (kept as stated).
FAULTS = [
    ("r", None, 1000, 0, "leader_election", "clean", None, None, None),
    ("r", 1, 1100, 1, "broker_fault", "network_partition", None, [3, 2], "both"),
    ("r", 1, 1150, 2, "broker_fault", "gc_pause", 20, None, None),
    ("r", 1, 1300, 3, "broker_fault", "network_heal", None, [2, 3], "both"),
    ("r", 1, 1400, 4, "broker_fault", "network_partition", None, [2, 3, 1000], "both"),
    ("r", 1, 1500, 5, "broker_fault", "network_heal", None, [2, 3], "both"),
    ("r", 2, 1600, 7, "broker_fault", "gc_pause", 100, None, None),
    ("r", 2, 1650, 8, "broker_lifecycle", "crash", None, None, None),
    ("r", 2, 1700, 9, "broker_fault", "network_partition", 50, [1, 3], "outbound"),
    ("r", 2, 1750, 10, "broker_fault", "network_heal", None, [1, 3], "outbound"),
    ("r", 3, 1250, 11, "broker_fault", "network_partition", None, [1], "inbound"),
    ("r", 3, 1350, 12, "broker_fault", "network_heal", None, None, None),
    ("r", 3, 1400, 13, "broker_fault", "network_partition", 500, [1], "both"),
    ("r", 3, 1450, 14, "broker_fault", "network_heal", None, None, None),
    ("r", 3, 1500, 15, "broker_fault", "disk_stall", 2155, None, None),
]
SPANS = [
    ("r", 1, "network_partition", 1100, 1300, False, [3, 2], "both", 1, 8),
    ("r", 1, "gc_pause", 1150, 1170, False, None, None, 2, 8),
    ("r", 1, "network_partition", 1400, 1999, True, [2, 3, 1000], "both", 4, 8),
    ("r", 2, "gc_pause", 1600, 1650, False, None, None, 7, 8),
    ("r", 2, "network_partition", 1700, 1750, False, [1, 3], "outbound", 9, 8),
    ("r", 3, "network_partition", 1250, 1350, False, [1], "inbound", 11, 8),
    ("r", 3, "network_partition", 1400, 1450, False, [1], "both", 13, 8),
    ("r", 3, "disk_stall", 1500, 3655, False, None, None, 15, 8),
]


def test_fault_spans_end_at_their_duration_a_matching_heal_or_the_runs_end(spark: SparkSession) -> None:
    bronze = spark.createDataFrame(FAULTS, FAULT_EVENTS)
    expected = spark.createDataFrame(SPANS, FAULT_SPAN_SCHEMA)
    assert_df_equality(fault_spans(bronze, _buckets(spark), 50), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_fault_spans_keep_the_first_ones_and_count_them_all(spark: SparkSession) -> None:
    bronze = spark.createDataFrame(FAULTS, FAULT_EVENTS)
    rows = [r.asDict() for r in fault_spans(bronze, _buckets(spark), 3).collect()]
    assert sorted((r["broker_id"], r["kind"], r["start_ms"], r["total"]) for r in rows) == [
        (1, "gc_pause", 1150, 8), (1, "network_partition", 1100, 8), (3, "network_partition", 1250, 8)]
    marks, total = fault_marks(rows, 1000)
    assert total == 8
    assert marks == (FaultSpan(0.1, 0.3, 1, "network_partition", False, (3, 2), "both"),
                     FaultSpan(0.15, 0.17, 1, "gc_pause"),
                     FaultSpan(0.25, 0.35, 3, "network_partition", False, (1,), "inbound"))
    assert fault_marks([], 1000) == ((), 0)
