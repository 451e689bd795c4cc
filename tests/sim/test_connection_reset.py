"""A follower's fetches to a leader whose process died: refused at once on a live host, timed out on a dead one."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise
from typing import Any

from replication_core.sim.clock import EventQueue
from replication_core.sim.network import Network
from replication_core.sim.rpc import RpcLayer
from replication_core.sim.scenario import DEFAULT_START_MS, Fault, Latency, NetworkSpec
from tests.sim.helpers import run, scenario

START_MS = DEFAULT_START_MS
CRASH_MS = 10_000


def _answers_from(events: list[dict[str, Any]], follower: int, leader: int, partition: int) -> list[tuple[int, str]]:
    """(time after the crash, error) of each `fetch_response` the follower processed from the leader."""
    return [(e["ts_ms"] - START_MS - CRASH_MS, e["error"]) for e in events
            if e["event_type"] == "fetch_response" and e["broker_id"] == follower and e["leader_id"] == leader
            and e["partition"] == partition and e["ts_ms"] - START_MS >= CRASH_MS]


def _leader_crash(mode: str) -> list[dict[str, Any]]:
    sc = scenario("leader-crash")
    crash = Fault(at_ms=CRASH_MS, action="crash", broker=1, mode=mode)
    _, events, _ = run(replace(sc, faults=(crash,), duration_ms=20_000))
    return events


def test_a_killed_leaders_followers_fail_at_once_and_retry_every_backoff() -> None:
    """kill -9 leaves the host up: its kernel resets the connections, so follower 2's fetch in flight fails one
    trip after the crash ("Error in response for fetch request"), and each retry after `replica.fetch.backoff.ms`
    (1 s) is refused at once (`awaitReady`: "Connection to 1 failed"), until the controller moves the partition
    after the 9 s session timeout."""
    answers = _answers_from(_leader_crash("process"), follower=2, leader=1, partition=0)
    assert answers, "no answer from the killed leader"
    assert {error for _, error in answers} == {"NETWORK_EXCEPTION"}
    assert answers[0][0] < 50
    gaps = [b - a for (a, _), (b, _) in pairwise(answers)]
    assert len(answers) >= 7
    assert all(1000 <= gap < 1100 for gap in gaps), gaps


def test_a_leader_without_power_leaves_its_followers_waiting_for_the_socket_timeout() -> None:
    """A host without power sends nothing back: follower 2's fetch in flight waits for `replica.socket.timeout.ms`
    (30 s), longer than the run's 10 s after the crash, so no answer from leader 1 is processed."""
    assert _answers_from(_leader_crash("power"), follower=2, leader=1, partition=0) == []


def _rpc() -> tuple[EventQueue, Network, RpcLayer]:
    queue = EventQueue(0)
    network = Network(NetworkSpec(latency=Latency(dist="constant", value=5)), random.Random(0))
    return queue, network, RpcLayer(queue, network)


def test_a_reset_answers_each_waiting_call_one_trip_later_unless_the_way_back_is_cut() -> None:
    """`RpcLayer.reset`: calls held by the dead process (never answered) get their error one trip (5 ms) after the
    reset; a call whose way back is cut keeps waiting for its timeout; a call to another server is untouched."""
    queue, network, rpc = _rpc()
    answers: list[tuple[str, Any, int]] = []

    def call(name: str, src: int, dst: int) -> None:
        rpc.call(src, dst, name, lambda c: None, lambda r, t: answers.append((name, r, t)), "error", 1000)

    call("held", 2, 1)
    call("cut", 3, 1)
    call("other", 2, 4)
    queue.run_until(100)
    network.partition([1], [3], two_way=False)
    rpc.reset(1)
    queue.run_until(2000)
    assert answers == [("held", "error", 105), ("cut", "error", 1000), ("other", "error", 1000)]


def test_a_refused_call_is_answered_once() -> None:
    """A refusal racing the server's own answer: whichever arrives first is the only one the caller sees."""
    queue, _, rpc = _rpc()
    answers: list[tuple[Any, int]] = []
    pending = []
    rpc.call(2, 1, "req", pending.append, lambda r, t: answers.append((r, t)), "error", 1000)
    queue.run_until(10)
    rpc.reply(pending[0], "response")
    rpc.refuse(pending[0])
    queue.run_until(2000)
    assert answers == [("response", 15)]
