"""The controller's auto leader rebalance (`auto.leader.rebalance.enable`): leadership goes back to a partition's
preferred replica a check interval after the imbalance, in KRaft and in the ZooKeeper-era mode."""

from __future__ import annotations

from typing import Any

import pytest

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import check, run

# Broker 1 is the preferred leader of partition 0 only. It stops at 5 s; its session expires and partition 0 moves
# to broker 2; it starts again at {restart_ms}, catches up and rejoins the ISR within a few seconds.
SCENARIO = """
name: auto-leader-rebalance
seed: 7
duration_ms: {duration_ms}
truncation_mode: diverging-epoch
cluster:
  brokers: 3
  broker_session_timeout_ms: 6000
  fence_on_reregistration: {kraft}
  auto_leader_rebalance_enable: {enable}
  leader_imbalance_check_interval_ms: 20000
broker_config:
  min.insync.replicas: 2
topics:
  - name: t
    replication_factor: 3
    assignment: [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 100, acks: all, keys: 9, retries: 10}}
faults:
  - {{at_ms: 5000, action: crash, broker: 1}}
  - {{at_ms: {restart_ms}, action: restart, broker: 1}}
"""


def _run(*, kraft: bool = True, enable: bool = True, restart_ms: int = 15000,
         duration_ms: int = 60000) -> tuple[list[dict[str, Any]], Any]:
    text = SCENARIO.format(kraft=str(kraft).lower(), enable=str(enable).lower(), restart_ms=restart_ms,
                           duration_ms=duration_ms)
    _, events, stats = run(parse_scenario_text(text))
    return events, stats


def _elections(events: list[dict[str, Any]]) -> list[tuple[int, int, str, int | None, str]]:
    return [(e["ts_ms"], e["partition"], e["action"], e.get("leader_id"), e["reason"]) for e in events
            if e["event_type"] == "leader_election" and e["reason"] != "topic_creation"]


def _rejoined(events: list[dict[str, Any]], broker: int, after_ms: int) -> int:
    """When the leader learnt that the controller committed `broker` back into partition 0's ISR."""
    return next(e["ts_ms"] for e in events if e["event_type"] == "isr_change" and e["partition"] == 0
                and e["isr_state"] == "committed" and e["ts_ms"] > after_ms and broker in e["isr"])


def test_kraft_gives_leadership_back_at_the_next_check() -> None:
    """Kafka 4's `electPreferred` task runs every interval (20 s here) from the controller's start: at 20 s partition 0
    is led by broker 2 (since the session timeout at 10.5 s) and broker 1 is back in the ISR (15 s), so the check
    elects it (`preferred`, the ISR kept, a new leader epoch); nothing is imbalanced after it. No invariant breaks."""
    events, stats = _run()
    start = min(e["ts_ms"] for e in events)
    elections = _elections(events)
    failover = elections[0]
    assert failover[1:] == (0, "clean", 2, "session_timeout")
    assert _rejoined(events, 1, failover[0]) < start + 20000
    assert elections[1:] == [(start + 20000, 0, "preferred", 1, "leader_imbalance")]
    back = next(e for e in events if e["event_type"] == "leader_election" and e["action"] == "preferred")
    assert back["isr"] == [1, 2, 3]
    assert not check(events, stats).violations


def test_kraft_waits_for_the_next_check_when_the_preferred_replica_is_not_in_the_isr() -> None:
    """The check at 20 s finds broker 1 still out of the ISR (it restarts at 35 s) and changes nothing; the one at
    40 s elects it, not the rejoin."""
    events, _ = _run(restart_ms=35000)
    start = min(e["ts_ms"] for e in events)
    elections = _elections(events)
    failover = elections[0]
    rejoin = _rejoined(events, 1, failover[0])
    assert start + 35000 < rejoin < start + 40000
    assert elections[1:] == [(start + 40000, 0, "preferred", 1, "leader_imbalance")]


def test_zookeeper_era_checks_on_a_fixed_period_from_the_controller_start() -> None:
    """`KafkaController`: the first check 5 s after the controller starts, then every interval (25 s, 45 s); at
    25 s broker 1 has all of its one preferred partition led elsewhere (100% > 10%) and is in the ISR again."""
    events, stats = _run(kraft=False)
    start = min(e["ts_ms"] for e in events)
    elections = _elections(events)
    assert elections[0][1:3] == (0, "clean")
    assert elections[1:] == [(start + 25000, 0, "preferred", 1, "leader_imbalance")]
    assert not check(events, stats).violations


@pytest.mark.parametrize("kraft", [True, False])
def test_no_rebalance_when_disabled(kraft: bool) -> None:
    """`auto.leader.rebalance.enable: false`: broker 2 keeps leading partition 0."""
    events, _ = _run(kraft=kraft, enable=False)
    assert [e[2:4] for e in _elections(events)] == [("clean", 2)]
