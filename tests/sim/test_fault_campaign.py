"""A seeded fault campaign: 200 short random fault schedules on tiny clusters, zero violations in the
default (diverging-epoch) mode: no acknowledged acks=all write lost, no two replicas that differ below
their high watermarks, no unclean election, events consistent with themselves. One run in
`CHECKER_EVERY` is also judged by the reference checker (every invariant of its catalogue; no error,
no warning), which keeps the whole campaign within its time budget.

A second campaign of 200 runs varies the cluster's shape per seed (3-5 brokers, 1-4 partitions, one or two
fetchers per source broker, the fetch wait and `replica.lag.time.max.ms`, 8-20 virtual seconds), the
protocol generation (diverging-epoch or leader-epoch) and, for every other seed, adds one to three replica
reassignments; every run is judged by the checker (a known, Kafka-faithful race of `tests.sim.known_findings` is
allowed, at most once per shard). Campaigns like it found the restart-before-registration
loss of `test_restart_registration.py` and the reassignment cases of `test_reassign_back.py`."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from replication_core.config import TruncationMode
from replication_core.sim.cli import max_network_delay_ms
from replication_core.sim.scenario import Fault, NemesisSpec, Scenario
from tests.sim.audit import audit
from tests.sim.helpers import check, run, scenario
from tests.sim.known_findings import known_finding

RUNS = 200
SHARDS = 4
CHECKER_EVERY = 4


def campaign_scenario(seed: int) -> Scenario:
    """`nemesis-small` shrunk to a few virtual seconds, with timeouts scaled down so faults bite."""
    base = scenario("nemesis-small")
    cfg = replace(base.broker_config, replica_lag_time_max_ms=1500, replica_socket_timeout_ms=1000,
                  replica_fetch_backoff_ms=100, replica_fetch_wait_max_ms=200,
                  replica_high_watermark_checkpoint_interval_ms=500)
    return replace(
        base, seed=seed, duration_ms=8000, broker_config=cfg,
        cluster=replace(base.cluster, broker_session_timeout_ms=1200, broker_heartbeat_interval_ms=300),
        topics=(replace(base.topics[0], partitions=1 + seed % 2),),
        disk=replace(base.disk, flush_interval_ms=500),
        network=replace(base.network, rpc_timeout_ms=1000),
        producers=tuple(replace(p, request_timeout_ms=1000, rate_per_s=p.rate_per_s / 2) for p in base.producers),
        nemesis=NemesisSpec(min_interval_ms=200, max_interval_ms=900, min_duration_ms=200, max_duration_ms=2000,
                            quiet_ms=3000),
    )


@pytest.mark.parametrize("shard", range(SHARDS))
def test_random_fault_schedules_have_no_violations_in_the_default_mode(shard: int) -> None:
    """RUNS / SHARDS seeds per shard; every run applies faults and ends without a violation."""
    faults = 0
    for seed in range(shard, RUNS, SHARDS):
        _, events, stats = run(campaign_scenario(seed))
        a = audit(events)
        assert a.inconsistencies == [], (seed, a.inconsistencies[:3])
        assert a.lost_acked_writes() == [], (seed, a.lost_acked_writes()[:3], stats.faults_applied)
        assert a.divergences() == [], (seed, a.divergences()[:3], stats.faults_applied)
        assert a.unclean_elections() == [], seed
        assert a.acked, seed
        if (seed // SHARDS) % CHECKER_EVERY == 0:
            result = check(events, stats, max_network_delay_ms(campaign_scenario(seed)))
            assert result.problems == (), (seed, result.problems[:3])
        faults += len(stats.faults_applied)
    assert faults >= RUNS // SHARDS, "the nemesis should inject at least one fault per run on average"


def varied_scenario(seed: int) -> Scenario:
    """`campaign_scenario(seed)` in a shape and protocol generation drawn from the seed."""
    draw = random.Random(seed * 7919)
    base = campaign_scenario(seed)
    cfg = replace(base.broker_config, num_replica_fetchers=draw.choice([1, 2]),
                  replica_fetch_wait_max_ms=draw.choice([50, 200, 500]),
                  replica_lag_time_max_ms=draw.choice([800, 1500, 3000]),
                  truncation_mode=draw.choice([TruncationMode.DIVERGING_EPOCH, TruncationMode.LEADER_EPOCH]))
    sc = replace(base, broker_config=cfg, duration_ms=draw.choice([8000, 12000, 20000]),
                 cluster=replace(base.cluster, brokers=draw.choice([3, 3, 4, 5])),
                 topics=(replace(base.topics[0], partitions=draw.choice([1, 2, 3, 4])),))
    if (seed // SHARDS) % 2:
        # Every other seed of each shard also moves partitions between 4-5 brokers (some throttled), away and
        # sometimes back.
        sc = replace(sc, cluster=replace(sc.cluster, brokers=draw.choice([4, 5])))
        moves = [Fault(draw.randrange(1500, sc.duration_ms - 3000), "reassign", topic=sc.topics[0].name,
                       partition=draw.randrange(sc.topics[0].partitions),
                       replicas=tuple(draw.sample(range(1, sc.cluster.brokers + 1), 3)),
                       throttle_rate=draw.choice([None, 2000, 20000])) for _ in range(draw.choice([1, 2, 3]))]
        sc = replace(sc, faults=tuple(sorted(moves, key=lambda f: f.at_ms)))
    return sc


@pytest.mark.parametrize("shard", range(SHARDS))
def test_varied_shapes_have_no_violations_in_either_epoch_mode(shard: int) -> None:
    """RUNS / SHARDS varied seeds per shard (offset from the first campaign's); the checker judges each."""
    shapes, moved, known = set(), 0, 0
    for seed in range(1000 + shard, 1000 + RUNS, SHARDS):
        sc = varied_scenario(seed)
        _, events, stats = run(sc)
        a = audit(events)
        assert a.inconsistencies == [], (seed, a.inconsistencies[:3])
        assert a.lost_acked_writes() == [], (seed, a.lost_acked_writes()[:3], stats.faults_applied)
        assert a.divergences() == [], (seed, a.divergences()[:3], stats.faults_applied)
        assert a.acked, seed
        # Judged as `replog check` judges the run's files: delayed_fetch_bound with the network's delay bound. A known
        # Kafka-faithful race (`tests.sim.known_findings`) is no failure: seed 1198 (leader-epoch mode) shows the ISR
        # expansion race since session 93's producers moved its timings.
        result = check(events, stats, max_network_delay_ms(sc))
        new = [v for v in result.problems if known_finding(v, events) is None]
        assert new == [], (seed, new[:3])
        known += len(result.problems) - len(new)
        shapes.add((sc.cluster.brokers, sc.topics[0].partitions, sc.broker_config.truncation_mode))
        moved += sum(1 for _, action in stats.faults_applied if action == "reassign")
    assert len(shapes) >= 10, shapes  # the draw does vary the shape
    assert moved >= RUNS // SHARDS // 2, moved  # and reassignments happen
    assert known <= 1, known  # the known races stay rare
