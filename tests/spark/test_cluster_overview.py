"""`jobs.cluster_overview`: the report's run-wide series, on hand-built intervals worked out by hand below."""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from jobs.cluster_overview import (
    bucket_bounds,
    controller_isr_shrinks,
    down_buckets,
    elections,
    filled_counts,
    isr_churn,
    partition_counts,
)

# Run r spans 1000..1999 ms: 4 buckets of 250 ms (b0 [1000, 1250), b1 [1250, 1500), b2 [1500, 1750), b3 [1750, 2000)).
BOUNDS = [("r", 1000, 1999)]
STATE = "run_id string, valid_from_ms long, valid_to_ms long, under_replicated boolean, under_min_isr boolean, " \
        "offline boolean"
# Partition A: under-replicated and under min ISR over [1100, 1600). Partition B: under-replicated over
# [1200, 1300), then offline over [1300, 1400). Both fine before and after (null end: still in force).
STATES = [("r", 1000, 1100, False, False, False), ("r", 1100, 1600, True, True, False),
          ("r", 1600, None, False, False, False),
          ("r", 1000, 1200, False, False, False), ("r", 1200, 1300, True, False, False),
          ("r", 1300, 1400, False, False, True), ("r", 1400, None, False, False, False)]
INCIDENTS = [("r", 1150, 1700, "on_time"), ("r", 1800, None, "ongoing"),
             ("r", 1000, 1900, "premature")]  # a premature shrink is no lag: not counted
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
    incidents = spark.createDataFrame(INCIDENTS, "run_id string, start_ms long, end_ms long, verdict string")
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
    state = spark.createDataFrame([("r", 1000, 1250, True, False, False), ("r", 1250, None, False, False, False)],
                                  STATE)
    incidents = spark.createDataFrame([], "run_id string, start_ms long, end_ms long, verdict string")
    rows = [r.asDict() for r in partition_counts(state, incidents, _buckets(spark)).collect()]
    assert list(filled_counts(rows, 3)["under_replicated"]) == [1, 0, 0]


def test_down_buckets_run_from_a_crash_or_shutdown_to_the_next_start(spark: SparkSession) -> None:
    # Broker 1: controlled shutdown at 1100 then shutdown (one stretch), back at 1300 (a log's `start`), crash at
    # 1800 with no restart (down to the run's end). Broker 2: its first start, a crash at 1500 and a restart at
    # 1500 (no time down), a crash at 1600 and a restart at 1750 (exclusive: bucket 3 not touched).
    rows = [(1, 1000, 0, "start"), (1, 1100, 1, "controlled_shutdown"), (1, 1120, 2, "shutdown"),
            (1, 1300, 3, "start"), (1, 1800, 4, "crash"),
            (2, 1000, 5, "start"), (2, 1500, 6, "crash"), (2, 1500, 7, "restart"), (2, 1600, 8, "crash"),
            (2, 1750, 9, "restart")]
    bronze = spark.createDataFrame([("r", b, ts, e, "broker_lifecycle", a) for b, ts, e, a in rows],
                                   "run_id string, broker_id int, ts_ms long, event_id long, event_type string, "
                                   "action string")
    expected = spark.createDataFrame([("r", 1, 0), ("r", 1, 1), ("r", 1, 3), ("r", 2, 2)],
                                     "run_id string, broker_id int, bucket long")
    assert_df_equality(down_buckets(bronze, _buckets(spark)), expected, ignore_row_order=True, ignore_nullable=True)
