"""Correlated crashes (`nemesis.faults: [..., correlated_crash]`): two brokers' processes die at one instant.

Replication promises that a write acknowledged with acks=all survives as long as the page cache does and no
unclean election happens, even while every replica of a partition is down for a while. The draw and the
injector are tested on their own, then a short run of `tests.sim.campaign --correlated` (the deep shapes with
the correlated crash added to the nemesis) must show no problem beyond the known, Kafka-faithful findings.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from itertools import pairwise

from replication_core.sim.nemesis import draw_faults
from replication_core.sim.scenario import NemesisSpec
from tests.sim.campaign import correlated_scenario, judged_runs, problems
from tests.sim.helpers import run, scenario

SEEDS = range(3100, 3120)


def test_a_correlated_crash_is_drawn_as_two_distinct_process_crashes() -> None:
    spec = NemesisSpec(faults=("correlated_crash",), min_interval_ms=100, max_interval_ms=200, min_duration_ms=50,
                       max_duration_ms=400, quiet_ms=0, crash_modes=("power",))
    faults = draw_faults(spec, (1, 2, 3), 1000, 10_000, random.Random(7))
    assert len(faults) > 10
    for f in faults:
        assert f.action == "correlated_crash" and f.mode == "process"  # power loss of two replicas is not drawn
        assert len(set(f.src)) == 2 and set(f.src) <= {1, 2, 3}
        lengths = (f.down_ms or 0, f.duration_ms)
        assert min(lengths) >= 50 and max(lengths) <= 400
    # Never overlapping: the next fault starts after both brokers of this one are back.
    for a, b in pairwise(faults):
        assert b.at_ms > a.at_ms + max(a.down_ms or 0, a.duration_ms)
    # With two brokers there is no pair that leaves one up: a single process crash instead.
    assert {f.action for f in draw_faults(spec, (1, 2), 1000, 10_000, random.Random(7))} == {"crash"}


def test_both_brokers_go_down_at_once_and_restart_after_their_own_durations() -> None:
    sc = replace(scenario("nemesis-small"), duration_ms=12_000,
                 nemesis=NemesisSpec(faults=("correlated_crash",), min_interval_ms=2000, max_interval_ms=2000,
                                     min_duration_ms=500, max_duration_ms=3000, quiet_ms=6000))
    _, events, stats = run(sc)
    # Both restarts come before any next fault, which waits for a healthy cluster.
    assert [action for _, action in stats.faults_applied][:3] == ["correlated_crash", "restart", "restart"]
    life = [(e["ts_ms"] - sc.start_ms, e["broker_id"], e["action"]) for e in events
            if e["event_type"] == "broker_lifecycle" and e["action"] in ("crash", "restart")]
    (t1, b1, a1), (t2, b2, a2) = life[:2]
    assert (a1, a2) == ("crash", "crash") and t1 == t2 and b1 != b2
    restarts = [(b, a) for _, b, a in life[2:4]]
    assert sorted(restarts) == sorted([(b1, "restart"), (b2, "restart")]) and all(t > t1 for t, _, _ in life[2:4])


def test_correlated_crashes_lose_no_acknowledged_write_beyond_the_known_findings() -> None:
    """SEEDS of `tests.sim.campaign --correlated`; partitions with every replica down occur among them."""
    seen: Counter[str] = Counter()
    for seed, found, events, stats in judged_runs(correlated_scenario, SEEDS):
        assert found == [], (seed, found)
        seen["correlated"] += sum(action == "correlated_crash" for _, action in stats.faults_applied)
        seen["offline"] += sum(e["event_type"] == "leader_election" and e["action"] == "offline" for e in events)
    assert seen["correlated"] >= len(SEEDS) // 2 and seen["offline"] > 0, seen


def test_a_restarted_broker_following_an_offline_partition_fetches_from_nobody() -> None:
    """`tests.sim.campaign --correlated` seed 401043: broker 1 restarts while t-0 has no live ISR member, so its
    metadata makes it a follower of leader -1. The fetcher it started towards broker -1 crashed the simulator
    (KeyError -1); Kafka starts none until a leader is elected, and now neither does replog."""
    sc = correlated_scenario(401043)
    found, _known = problems(sc)
    assert found == []
    _, events, _ = run(sc)
    offline = [e for e in events if e["event_type"] == "leadership_change" and e["action"] == "become_follower"
               and e["leader_id"] == -1]
    assert offline, "the run should make a follower of a partition without a leader"
    added_towards_nobody = [e for e in events if e["event_type"] == "fetcher_change" and e["action"] == "added"
                            and e["leader_id"] == -1]
    assert added_towards_nobody == []
