"""`jobs.transforms.faults.fault_ends` on hand-built broker faults: when each pause, stall and partition ended."""

from __future__ import annotations

import random

from chispa import assert_df_equality
from pyspark.sql import SparkSession

from jobs.transforms.faults import FAULT_END_COLUMNS, fault_ends
from replication_core.config import LONG_MAX
from replication_core.sim.network import Network
from replication_core.sim.scenario import NetworkSpec

EVENTS = "run_id string, broker_id int, ts_ms long, event_id long, event_type string, action string, " \
         "duration_ms long, peers array<int>, direction string"
ENDS = "run_id string, broker_id int, kind string, start_ms long, end_ms long, duration_ms long, peers array<int>, " \
       "direction string, event_id long"
HUGE = LONG_MAX - 10

# Broker 1: two partitions of the same links, each with its duration, overlapping; each ends at its own heal (the
# simulator counts the cuts of a link), not at the first heal of those peers. Broker 2: a two-way partition without
# a duration outlives a heal of its outbound links only and ends at the two-way heal; a one-way partition ends at
# a two-way heal of its peers. Broker 3: a pause whose duration overflows ends at the broker's next start; another
# after it lasts to Long.MAX (the job does not fail). Broker 4: a pause outlives a controlled shutdown (the process
# keeps running until its shutdown). Broker 5: two partitions of the same links without durations both last until
# the second heal, when the simulator's link is restored (not the first). Broker 6: a partition without a duration
# outlives the scheduled heal of a shorter one nested in it. Broker 7: a heal of links nobody cut counts nothing, so
# the partition after it ends at its own heal. Broker 8: a heal of every link ends the partition before it and
# starts the count afresh. Broker 9: heals of a partition's peers one by one end it at the last; a later partition
# of a peer an earlier heal found uncut ends at its own heal. Broker 10: a partition of itself cuts nothing and ends
# where it starts; a peer named twice is cut twice and needs two heals. Broker 11: a heal of its links before its
# stated end ends a partition with a duration (its scheduled heal then finds them uncut).
FAULTS = [
    ("r", 1, 100, 0, "broker_fault", "network_partition", 50, [2, 3], "both"),
    ("r", 1, 120, 1, "broker_fault", "network_partition", 100, [3, 2], "both"),
    ("r", 1, 150, 2, "broker_fault", "network_heal", None, [2, 3], "both"),
    ("r", 1, 220, 3, "broker_fault", "network_heal", None, [3, 2], "both"),
    ("r", 2, 100, 4, "broker_fault", "network_partition", None, [1], "both"),
    ("r", 2, 150, 5, "broker_fault", "network_heal", None, [1], "outbound"),
    ("r", 2, 200, 6, "broker_fault", "network_heal", None, [1], "both"),
    ("r", 2, 300, 7, "broker_fault", "network_partition", None, [3], "outbound"),
    ("r", 2, 350, 8, "broker_fault", "network_heal", None, [3], "both"),
    ("r", 3, 100, 9, "broker_fault", "gc_pause", HUGE, None, None),
    ("r", 3, 500, 10, "broker_lifecycle", "start", None, None, None),
    ("r", 3, 600, 11, "broker_fault", "gc_pause", HUGE, None, None),
    ("r", 4, 100, 12, "broker_fault", "gc_pause", 100, None, None),
    ("r", 4, 150, 13, "broker_lifecycle", "controlled_shutdown", None, None, None),
    ("r", 5, 100, 14, "broker_fault", "network_partition", None, [2], "both"),
    ("r", 5, 110, 15, "broker_fault", "network_partition", None, [2], "both"),
    ("r", 5, 200, 16, "broker_fault", "network_heal", None, [2], "both"),
    ("r", 5, 300, 17, "broker_fault", "network_heal", None, [2], "both"),
    ("r", 6, 100, 18, "broker_fault", "network_partition", None, [3, 4], "inbound"),
    ("r", 6, 120, 19, "broker_fault", "network_partition", 50, [4, 3], "inbound"),
    ("r", 6, 170, 20, "broker_fault", "network_heal", None, [4, 3], "inbound"),
    ("r", 6, 250, 21, "broker_fault", "network_heal", None, [3, 4], "inbound"),
    ("r", 7, 50, 22, "broker_fault", "network_heal", None, [1], "both"),
    ("r", 7, 100, 23, "broker_fault", "network_partition", None, [1], "both"),
    ("r", 7, 200, 24, "broker_fault", "network_heal", None, [1], "both"),
    ("r", 8, 100, 25, "broker_fault", "network_partition", None, [1, 2], "both"),
    ("r", 8, 140, 26, "broker_fault", "network_heal", None, [1], "both"),
    ("r", 8, 150, 27, "broker_fault", "network_heal", None, None, None),
    ("r", 8, 200, 28, "broker_fault", "network_partition", None, [2, 1], "both"),
    ("r", 8, 250, 29, "broker_fault", "network_heal", None, [1, 2], "both"),
    ("r", 8, 260, 30, "broker_fault", "network_heal", None, [1, 2], "both"),
    ("r", 9, 100, 31, "broker_fault", "network_partition", None, [1, 2], "both"),
    ("r", 9, 150, 32, "broker_fault", "network_heal", None, [1], "both"),
    ("r", 9, 170, 33, "broker_fault", "network_heal", None, [3], "both"),
    ("r", 9, 180, 34, "broker_fault", "network_partition", None, [3], "inbound"),
    ("r", 9, 200, 35, "broker_fault", "network_heal", None, [2], "both"),
    ("r", 9, 210, 36, "broker_fault", "network_heal", None, [3], "inbound"),
    ("r", 10, 100, 37, "broker_fault", "network_partition", None, [10], "both"),
    ("r", 10, 120, 38, "broker_fault", "network_partition", None, [2, 2, 10], "outbound"),
    ("r", 10, 150, 39, "broker_fault", "network_heal", None, [2], "outbound"),
    ("r", 10, 180, 40, "broker_fault", "network_heal", None, [2], "both"),
    ("r", 11, 100, 41, "broker_fault", "network_partition", 100, [1], "both"),
    ("r", 11, 130, 42, "broker_fault", "network_heal", None, [1], "both"),
    ("r", 11, 200, 43, "broker_fault", "network_heal", None, [1], "both"),
]


def test_each_fault_ends_at_its_own_heal_duration_or_the_process_end(spark: SparkSession) -> None:
    expected = spark.createDataFrame([
        ("r", 1, "network_partition", 100, 150, 50, [2, 3], "both", 0),
        ("r", 1, "network_partition", 120, 220, 100, [3, 2], "both", 1),
        ("r", 2, "network_partition", 100, 200, None, [1], "both", 4),
        ("r", 2, "network_partition", 300, 350, None, [3], "outbound", 7),
        ("r", 3, "gc_pause", 100, 500, HUGE, None, None, 9),
        ("r", 3, "gc_pause", 600, LONG_MAX, HUGE, None, None, 11),
        ("r", 4, "gc_pause", 100, 200, 100, None, None, 12),
        ("r", 5, "network_partition", 100, 300, None, [2], "both", 14),
        ("r", 5, "network_partition", 110, 300, None, [2], "both", 15),
        ("r", 6, "network_partition", 100, 250, None, [3, 4], "inbound", 18),
        ("r", 6, "network_partition", 120, 170, 50, [4, 3], "inbound", 19),
        ("r", 7, "network_partition", 100, 200, None, [1], "both", 23),
        ("r", 8, "network_partition", 100, 150, None, [1, 2], "both", 25),
        ("r", 8, "network_partition", 200, 250, None, [2, 1], "both", 28),
        ("r", 9, "network_partition", 100, 200, None, [1, 2], "both", 31),
        ("r", 9, "network_partition", 180, 210, None, [3], "inbound", 34),
        ("r", 10, "network_partition", 100, 100, None, [10], "both", 37),
        ("r", 10, "network_partition", 120, 180, None, [2, 2, 10], "outbound", 38),
        ("r", 11, "network_partition", 100, 130, 100, [1], "both", 41),
    ], ENDS)
    actual = fault_ends(spark.createDataFrame(FAULTS, EVENTS))
    assert tuple(actual.columns) == FAULT_END_COLUMNS
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def _network_oracle(events: list[tuple[int, int, str, list[int] | None, str | None]]
                    ) -> dict[int, int | None]:
    """When the simulator's own `Network` has restored every link of each partition of one broker (id 0): its event
    id -> the ts of the first later event by which each of its links was uncut at least once (None: never)."""
    net = Network(NetworkSpec(), random.Random(0))
    cuts: dict[int, list[tuple[int, int]]] = {}
    ends: dict[int, int | None] = {}
    for ts, eid, action, peers, direction in events:
        if action == "network_heal" and peers is None:
            net.heal()
        else:
            assert peers is not None and direction is not None
            src, dst = ([0], peers) if direction != "inbound" else (peers, [0])
            (net.partition if action == "network_partition" else net.heal)(src, dst, direction == "both")
        if action == "network_partition":
            links = [(0, p) for p in peers if direction != "inbound"] + [(p, 0) for p in peers
                                                                         if direction != "outbound"]
            # The links it cut are blocked now: a link to the broker itself never is.
            cuts[eid], ends[eid] = [(a, b) for a, b in links if net.is_blocked(a, b)], None
        # Each link counts once it was restored after the partition, though a later partition may cut it again.
        for open_id, links in list(cuts.items()):
            cuts[open_id] = [(a, b) for a, b in links if net.is_blocked(a, b)]
            if not cuts[open_id]:
                ends[open_id] = ts
                del cuts[open_id]
    return ends


def test_partitions_without_durations_end_when_the_simulators_network_restores_their_links(
        spark: SparkSession) -> None:
    # Random partitions and heals of one broker's links to peers 1-3 (one-way, two-way, overlapping, heals of
    # uncut links, heals of every link, a peer named twice, the broker itself among the peers), many runs:
    # fault_ends agrees with the simulator's Network on every end.
    rng = random.Random(7)
    rows, expected = [], []
    for run in range(40):
        events: list[tuple[int, int, str, list[int] | None, str | None]] = []
        for i in range(12):
            roll = rng.random()
            peers = rng.sample([1, 2, 3], rng.randint(1, 3))
            if rng.random() < 0.2:  # a peer named twice, or the broker itself among its peers
                peers.append(rng.choice([0, 1, 2, 3]))
            direction = rng.choice(["both", "outbound", "inbound"])
            if roll < 0.45:
                events.append((10 * i, i, "network_partition", peers, direction))
            elif roll < 0.93:
                events.append((10 * i, i, "network_heal", peers, direction))
            else:
                events.append((10 * i, i, "network_heal", None, None))
        for ts, eid, action, peers, direction in events:
            rows.append((f"r{run}", 0, ts, eid, "broker_fault", action, None, peers, direction))
        for eid, end in _network_oracle(events).items():
            _, _, _, peers, direction = events[eid]
            expected.append((f"r{run}", 0, "network_partition", 10 * eid, end, None, peers, direction, eid))
    ends = [row[4] for row in expected]
    assert None in ends and len(set(ends)) > 5  # open partitions and many different ends
    actual = fault_ends(spark.createDataFrame(rows, EVENTS))
    assert_df_equality(actual, spark.createDataFrame(expected, ENDS), ignore_row_order=True, ignore_nullable=True)
