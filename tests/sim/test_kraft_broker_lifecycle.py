"""KRaft's broker lifecycle in the controller and the broker (`cluster.kraft_lifecycle`, the default since session 92):
sessions expire when they expire, a restart's registration waits for the previous process's session, and a
registered broker stays fenced until it has published its metadata."""

from __future__ import annotations

from typing import Any

import pytest

from replication_core.sim.cluster import Cluster
from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import run

# Broker 2 holds the only replica of `solo` and follows broker 1 for `t`. Its process is killed at {crash_ms}, and
# restarted at {restart_ms} (none if -1).
SCENARIO = """
name: kraft-broker-lifecycle
seed: 11
duration_ms: 30000
truncation_mode: diverging-epoch
cluster:
  brokers: 3
  broker_session_timeout_ms: 9000
  kraft_lifecycle: {kraft}
broker_config:
  min.insync.replicas: 1
topics:
  - name: t
    replication_factor: 2
    assignment: [[1, 2]]
  - name: solo
    replication_factor: 1
    assignment: [[2]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 50, acks: all, keys: 4, retries: 10}}
faults:
  - {{at_ms: {crash_ms}, action: crash, broker: 2}}
{restart}"""


def _run(*, kraft: bool = True, crash_ms: int = 5000, restart_ms: int = -1) -> tuple[Cluster, list[dict[str, Any]]]:
    restart = f"  - {{at_ms: {restart_ms}, action: restart, broker: 2}}\n" if restart_ms >= 0 else ""
    text = SCENARIO.format(kraft=str(kraft).lower(), crash_ms=crash_ms, restart=restart)
    cluster, events, _ = run(parse_scenario_text(text))
    return cluster, events


def _fenced_at(events: list[dict[str, Any]]) -> int:
    """When the controller fenced broker 2's crashed process: `solo`, whose only replica it is, goes offline."""
    return next(e["ts_ms"] for e in events if e["event_type"] == "leader_election" and e["topic"] == "solo"
                and e["action"] == "offline")


def test_sessions_are_checked_eight_times_per_session_timeout() -> None:
    """Kafka 4's `maybeFenceStaleBroker` task runs every `broker.session.timeout.ms / 8` (1,125 ms) from the
    controller's start and fences a broker whose last contact is more than the timeout ago: killed at 11 s, broker 2
    last heard of at 10,001-10,003 ms, expires at 19,001-19,003 ms and is fenced at the next check, 19,125 ms. Every
    quarter session (as replog did before, `kraft_lifecycle: false`) found it at 20,250 ms."""
    cluster, events = _run(crash_ms=11000)
    start = min(e["ts_ms"] for e in events)
    last = cluster.controller.last_heartbeat[2]
    period = 9000 // 8
    first_check_after = start + period * ((last + 9000 - start) // period + 1)
    assert _fenced_at(events) == first_check_after == start + 19125
    legacy, legacy_events = _run(kraft=False, crash_ms=11000)
    assert 19000 < legacy.controller.last_heartbeat[2] + 9000 - start < 19125
    assert _fenced_at(legacy_events) == start + 20250


def _new_process_events(events: list[dict[str, Any]], restart_ms: int) -> list[dict[str, Any]]:
    start = min(e["ts_ms"] for e in events)
    return [e for e in events if e["broker_id"] == 2 and e["ts_ms"] > start + restart_ms
            and e["event_type"] in ("leadership_change", "truncation", "append")]


def test_a_restart_within_the_session_registers_once_the_previous_session_expired() -> None:
    """Restarted at 6 s, 1 s after the crash: the controller answers DUPLICATE_BROKER_REGISTRATION while the old
    session is valid, and the broker asks again a heartbeat interval (2 s) after each refusal. Its new process hears
    of no partition until the old session has expired (13,001 ms) and been fenced (13,500 ms), at the first attempt
    after the expiry (about 14 s); without the handshake the registration went through at once and fenced the old
    process."""
    _, events = _run(restart_ms=6000)
    fenced = _fenced_at(events)
    start = min(e["ts_ms"] for e in events)
    first = min(e["ts_ms"] for e in _new_process_events(events, 6000))
    assert first > fenced
    # Attempts go out at 6 s and then 2 s after each refusal arrives (a round trip of 2-6 ms each): the accepted one
    # is the first after the expiry.
    attempts = [start + 6000]
    while attempts[-1] < fenced:
        attempts.append(attempts[-1] + 2000)
    assert 0 <= first - attempts[-1] < 50, (first - start, [a - start for a in attempts])
    assert not any(e["event_type"] == "leader_election" and e["reason"] == "broker_reregistered" for e in events)
    _, legacy_events = _run(kraft=False, restart_ms=6000)
    reregistered = next(e for e in legacy_events if e["event_type"] == "leader_election"
                        and e["reason"] == "broker_reregistered")
    assert reregistered["ts_ms"] - start < 6100


@pytest.mark.parametrize("kraft", [True, False])
def test_a_registered_broker_is_unfenced_after_its_first_metadata_publish(kraft: bool) -> None:
    """A registration leaves the broker fenced: it learns its partitions (`solo` offline, it follows nobody), publishes
    them, then heartbeats without `wantFence`, and only that heartbeat unfences it and elects it leader of `solo`. The
    restart comes after the session expired, so the registration is accepted at once. Without the handshake the
    registration unfenced it as it arrived, before the broker had any metadata."""
    _, events = _run(kraft=kraft, restart_ms=15000)
    start = min(e["ts_ms"] for e in events)
    assert _fenced_at(events) - start < 15000
    published = next(e["ts_ms"] for e in events if e["event_type"] == "leadership_change" and e["broker_id"] == 2
                     and e["topic"] == "solo" and e["ts_ms"] - start > 15000)
    elected = next(e for e in events if e["event_type"] == "leader_election" and e["topic"] == "solo"
                   and e["ts_ms"] - start > 15000)
    assert (elected["leader_id"], elected["reason"]) == (2, "broker_unfenced")
    if kraft:
        # The heartbeat leaves at the publish and takes 1-3 ms.
        assert 1 <= elected["ts_ms"] - published <= 3, (published, elected)
    else:
        assert elected["ts_ms"] < published
