"""KRaft's controlled shutdown (`cluster.kraft_lifecycle`, since session 93): the broker asks in its heartbeats and
stops when the controller answers `shouldShutDown`, which it does once the broker leads nothing and every active
broker has reported the metadata that moved its leadership (`BrokerHeartbeatManager.calculateNextBrokerState`).

Every broker here heartbeats at 0, 2 s, 4 s, ... from the start (`broker_heartbeat_interval_ms` 2000) and links take
1-3 ms, so the times below follow from the heartbeat grid."""

from __future__ import annotations

from typing import Any

import pytest

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import check, run

# Broker 1 leads `t`, whose replicas are all three brokers. {faults} are the scenario's fault entries.
SCENARIO = """
name: kraft-controlled-shutdown
seed: 21
duration_ms: {duration_ms}
truncation_mode: diverging-epoch
cluster:
  brokers: 3
  broker_session_timeout_ms: 9000
  kraft_lifecycle: {kraft}
broker_config:
  min.insync.replicas: 1
topics:
  - name: t
    replication_factor: 3
    assignment: [[1, 2, 3]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 20, acks: all, keys: 4, retries: 10}}
faults:
{faults}"""


def _run(faults: list[str], *, kraft: bool = True, duration_ms: int = 30000) -> list[dict[str, Any]]:
    text = SCENARIO.format(duration_ms=duration_ms, kraft=str(kraft).lower(),
                           faults="".join(f"  - {{{f}}}\n" for f in faults))
    _, events, stats = run(parse_scenario_text(text))
    assert not check(events, stats).violations
    return events


def _lifecycle(events: list[dict[str, Any]], broker: int) -> list[tuple[int, str]]:
    start = min(e["ts_ms"] for e in events)
    return [(e["ts_ms"] - start, e["action"]) for e in events
            if e["event_type"] == "broker_lifecycle" and e["broker_id"] == broker]


def _isr_updates(events: list[dict[str, Any]], leader: int) -> list[tuple[int, list[int]]]:
    """A leader's ISR as the controller's metadata changes it (`isr_change` with reason `leader_and_isr`)."""
    first = min(e["ts_ms"] for e in events)
    return [(e["ts_ms"] - first, e["isr"]) for e in events if e["event_type"] == "isr_change"
            and e["broker_id"] == leader and e["reason"] == "leader_and_isr"]


def _shutdown_of_1(at_ms: int) -> str:
    return f"at_ms: {at_ms}, action: controlled_shutdown, broker: 1, down_ms: 60000"


@pytest.mark.parametrize(("at_ms", "granted_after"), [
    # Asked 500 ms after the grid: the heartbeat 50 ms after the controller's first answer finds brokers 2 and 3 not
    # yet reporting the leadership move (their next heartbeats are at 12 s); the one after, 2 s later, is granted.
    (10500, 2050),
    # Asked 30 ms before the grid: brokers 2 and 3 report the move at 12 s, so the heartbeat 50 ms after the first
    # answer is granted.
    (11970, 50),
])
def test_a_leader_stops_once_every_active_broker_has_reported_the_leadership_move(at_ms: int,
                                                                                    granted_after: int) -> None:
    events = _run([_shutdown_of_1(at_ms)])
    (_, start), (asked, asked_action), (stopped, stopped_action) = _lifecycle(events, 1)[:3]
    assert (start, asked_action, stopped_action) == ("start", "controlled_shutdown", "shutdown")
    # The request is the heartbeat sent as the shutdown begins, granted CONTROLLED_SHUTDOWN on arrival: leadership
    # moves away at once.
    assert at_ms < asked <= at_ms + 3
    first = min(e["ts_ms"] for e in events)
    move = [(e["ts_ms"] - first, e.get("leader_id"), e["reason"]) for e in events
            if e["event_type"] == "leader_election" and e["ts_ms"] - first >= at_ms]
    assert move[0] == (asked, 2, "controlled_shutdown")
    # Granted at a heartbeat `granted_after` after the first answer (itself 1-3 ms after the request's arrival); that
    # heartbeat and its answer take 1-3 ms each.
    assert asked + granted_after < stopped <= asked + 3 + granted_after + 3 + 3


def test_a_crashed_broker_holds_a_controlled_shutdown_until_its_session_expires() -> None:
    """Broker 3 is killed at 9 s (last heartbeat at 8 s). Until its session expires and the controller fences it,
    it is an active broker whose reported offset is older than broker 1's leadership move (`lowestActiveOffset`), so
    broker 1, asking from 10.5 s, is granted only at its first heartbeat after the fencing."""
    events = _run(["at_ms: 9000, action: crash, broker: 3", _shutdown_of_1(10500)])
    # The fencing takes broker 3 out of the ISR; the new leader, broker 2, learns it 1-3 ms later. Its session expired
    # at 17 s and the check after that, every 9000 / 8 ms, found it.
    learnt = next(t for t, isr in _isr_updates(events, 2) if isr == [2])
    assert 17000 < learnt - 3 <= 18000 < learnt
    stopped = next(t for t, action in _lifecycle(events, 1) if action == "shutdown")
    # Broker 1 heartbeats every 2 s from 50 ms after its first answer (10,552-10,556 ms): granted at the first one
    # after the fencing, sent at 18,552-18,556 ms, and answered 2-6 ms later.
    assert 18552 + 2 <= stopped <= 18556 + 6


def test_a_broker_that_leads_nothing_is_told_to_stop_at_once() -> None:
    """UNFENCED + `wantShutDown` without leaderships -> SHUTDOWN_NOW: fenced (out of the ISR) on the request's
    arrival, stopped on the answer's."""
    events = _run(["at_ms: 10500, action: controlled_shutdown, broker: 3, down_ms: 60000"])
    (_, _), (asked, asked_action), (stopped, stopped_action) = _lifecycle(events, 3)[:3]
    assert (asked_action, stopped_action) == ("controlled_shutdown", "shutdown")
    assert 10500 < asked <= 10503 and asked < stopped <= asked + 3
    # The leader, broker 1, learns the new ISR 1-3 ms after the fencing.
    (learnt, isr) = next((t, isr) for t, isr in _isr_updates(events, 1) if t > 10500)
    assert isr == [1, 2] and asked < learnt <= asked + 3


def test_without_an_answer_the_broker_stops_after_five_minutes() -> None:
    """Nothing from the controller reaches broker 1 (a one-way cut): it is granted the shutdown and fenced, but never
    hears so, and `BrokerServer.shutdown` gives up waiting after 5 minutes and stops (cleanly) anyway."""
    events = _run([_shutdown_of_1(10500), "at_ms: 10000, action: partition, from: [1000], to: [1], two_way: false"],
                  duration_ms=320_000)
    stopped = next(t for t, action in _lifecycle(events, 1) if action == "shutdown")
    assert stopped == 10500 + 300_000


def test_without_kraft_lifecycle_a_controlled_shutdown_takes_200_ms() -> None:
    """`kraft_lifecycle: false` keeps the fixed 200 ms replog used before session 93 (tests pin seeds found then)."""
    events = _run([_shutdown_of_1(10500)], kraft=False)
    assert _lifecycle(events, 1)[1:3] == [(10500, "controlled_shutdown"), (10700, "shutdown")]
