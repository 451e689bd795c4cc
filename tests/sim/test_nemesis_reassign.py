"""Reassignments drawn by the nemesis (`nemesis.faults: [..., reassign]`), among overlapping faults.

A reassignment moves one partition to as many brokers drawn at random, possibly back onto brokers it left and
over one still in progress. The draw is tested on its own, then a short run of `tests.sim.campaign --reassigning`
(the overlapping shapes with reassignments added to the nemesis) must show no problem beyond the known,
Kafka-faithful findings.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from itertools import pairwise

import pytest

from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.cluster import Cluster
from replication_core.sim.nemesis import draw_faults
from replication_core.sim.scenario import NemesisSpec
from tests.sim.campaign import judged_runs, power_reassigning_scenario, reassigning_scenario, throttled_scenario
from tests.sim.helpers import scenario

SEEDS = range(520000, 520024)
PARTITIONS = (("t", 0, 3), ("t", 1, 3), ("u", 0, 2))


def test_a_drawn_reassignment_moves_one_partition_to_as_many_distinct_brokers() -> None:
    spec = NemesisSpec(faults=("reassign",), min_interval_ms=100, max_interval_ms=200, quiet_ms=0, overlap=True)
    faults = draw_faults(spec, (1, 2, 3, 4), 1000, 10_000, random.Random(7), PARTITIONS)
    assert len(faults) > 40
    rf = {(t, p): n for t, p, n in PARTITIONS}
    for f in faults:
        assert f.action == "reassign" and (f.topic, f.partition) in rf
        assert len(f.replicas) == rf[(f.topic, f.partition)] == len(set(f.replicas))
        assert set(f.replicas) <= {1, 2, 3, 4}
    # Every partition is moved, and leaders are drawn too (the first replica differs between draws).
    assert {(f.topic, f.partition) for f in faults} == set(rf)
    assert len({f.replicas[0] for f in faults}) == 4
    with pytest.raises(ValueError, match="needs the partitions it may move"):
        draw_faults(spec, (1, 2, 3, 4), 1000, 10_000, random.Random(7))


def test_drawn_reassignments_are_throttled_at_a_listed_rate_and_unthrottled_without_one() -> None:
    """`NemesisSpec.throttle_rates`: each drawn reassignment takes one of them; none listed, none throttled (and
    no rate drawn, so the seeds pinned by `test_known_findings.py` keep their faults)."""
    spec = NemesisSpec(faults=("reassign",), min_interval_ms=100, max_interval_ms=200, quiet_ms=0, overlap=True)
    plain = draw_faults(spec, (1, 2, 3, 4), 1000, 10_000, random.Random(7), PARTITIONS)
    assert {f.throttle_rate for f in plain} == {None}
    throttled = replace(spec, throttle_rates=(500, 3000, 30000))
    faults = draw_faults(throttled, (1, 2, 3, 4), 1000, 10_000, random.Random(7), PARTITIONS)
    assert {f.throttle_rate for f in faults} == {500, 3000, 30000}
    # The first reassignment is drawn alike; the rate drawn with it shifts what follows.
    assert (faults[0].at_ms, faults[0].replicas) == (plain[0].at_ms, plain[0].replicas)


def test_throttled_reassignments_among_overlapping_faults_show_no_problem_beyond_the_known_findings() -> None:
    """`tests.sim.campaign --throttled`: the drawn reassignments held back by replication quotas (KIP-73), some
    below the produce rate, while the other faults go on; the quota really throttles."""
    seen: Counter[str] = Counter()
    for seed, found, events, stats in judged_runs(throttled_scenario, range(650000, 650012)):
        assert found == [], (seed, found)
        seen["drawn"] += sum(action == "reassign" for _, action in stats.faults_applied)
        throttles = [e for e in events if e["event_type"] == "quota_throttle"]
        seen["throttled runs"] += bool(throttles)
        seen["leader side"] += sum(e["role"] == "leader" for e in throttles)
        seen["follower side"] += sum(e["role"] == "follower" for e in throttles)
    assert seen["drawn"] >= 12 and seen["throttled runs"] >= 6, seen
    assert seen["leader side"] > 0 and seen["follower side"] > 0, seen


def test_reassignments_among_overlapping_faults_lose_no_acknowledged_write_beyond_the_known_findings() -> None:
    """SEEDS of `tests.sim.campaign --reassigning`: reassignments start and complete among the other faults."""
    seen: Counter[str] = Counter()
    for seed, found, events, stats in judged_runs(reassigning_scenario, SEEDS):
        assert found == [], (seed, found)
        seen["drawn"] += sum(action == "reassign" for _, action in stats.faults_applied)
        # A reassignment in progress lists the replicas it removes; once it completes, they are gone.
        removing: dict[tuple[str, int], bool] = {}
        for e in events:
            if e["event_type"] == "leadership_change" and e["action"] == "become_leader":
                tp, now = (e["topic"], e["partition"]), bool(e.get("removing_replicas"))
                seen["completed"] += removing.get(tp, False) and not now
                removing[tp] = now
        seen["crashes"] += sum(action in ("crash", "correlated_crash") for _, action in stats.faults_applied)
    assert seen["drawn"] >= len(SEEDS) and seen["completed"] > 0 and seen["crashes"] > 0, seen


def test_power_failures_among_reassignments_show_no_problem_beyond_the_known_findings() -> None:
    """`--reassigning --power`: the drawn reassignments with crashes that may lose unflushed data."""
    sc = power_reassigning_scenario(530000)
    assert sc.nemesis is not None and "power" in sc.nemesis.crash_modes and "reassign" in sc.nemesis.faults
    seen: Counter[str] = Counter()
    for seed, found, events, stats in judged_runs(power_reassigning_scenario, range(530000, 530016)):
        assert found == [], (seed, found)
        seen["drawn"] += sum(action == "reassign" for _, action in stats.faults_applied)
        # A power failure's recovery reports the unflushed tail it dropped right after the crash event.
        for before, e in pairwise(events):
            seen["power losses"] += (before["event_type"] == "broker_lifecycle" and before["action"] == "crash"
                                     and e["event_type"] == "truncation")
    assert seen["drawn"] >= 16 and seen["power losses"] > 0, seen


def test_a_throttled_move_keeps_every_move_in_progress_throttled() -> None:
    """`kafka-reassign-partitions --execute --additional --throttle` sets a topic's throttled-replica lists over
    all of its moves in progress (calculateProposedMoveMap): a second throttled move on the topic must not lift
    the first one's throttle. The rate is the broker-level one, the latest set."""
    cluster = Cluster(scenario("steady-state"))
    ctrl = cluster.controller
    ctrl.create_topics()
    moves = {}
    for p in (0, 1):
        tp = TopicPartition("clicks", p)
        before = list(ctrl.partitions[tp].replicas)
        spare = next(b for b in sorted(cluster.brokers) if b not in before)
        moves[p] = (before, spare)
        ctrl.reassign(tp, [before[0], spare], 3000 if p == 0 else 500)
    leader_entries, follower_entries, rate = ctrl.throttles["clicks"]
    assert leader_entries == tuple(sorted(f"{p}:{b}" for p, (before, _) in moves.items() for b in before))
    assert follower_entries == tuple(sorted(f"{p}:{spare}" for p, (_, spare) in moves.items()))
    assert rate == 500
    assert "orders" not in ctrl.throttles  # no move of its own
