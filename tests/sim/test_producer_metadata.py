"""The producers' client metadata (since session 93): a producer sends to the leaders its last
metadata refresh named, and refreshes after an error that says they are stale, so a leader cut off from the
controller and its followers but not from its clients keeps getting (and acknowledging) acks=1 writes until it learns
it was replaced, as in Kafka. With `fresh_metadata: true` every attempt goes to the controller's current leader, as
replog's producers did before."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from replication_core.sim.cluster import Cluster, ListSink
from replication_core.sim.scenario import DEFAULT_START_MS, parse_scenario_text
from tests.sim.helpers import check, run, watch

# Broker 1 leads `t`; at 5 s it is cut off from the controller and both followers (not from the producer, node
# 2000) for 10 s. Its session (6 s) expires and the controller elects broker 2; broker 1 learns it at the heal.
ISOLATED_LEADER = """
name: isolated-leader-keeps-its-clients
seed: 3
duration_ms: 25000
truncation_mode: diverging-epoch
cluster:
  brokers: 3
  broker_session_timeout_ms: 6000
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
    - {{topic: t, rate_per_s: 100, acks: 1, keys: 1, retries: 5, fresh_metadata: {fresh}}}
faults:
  - {{at_ms: 5000, action: partition, from: [1], to: [2, 3, 1000], duration_ms: 10000}}
"""


def _run(fresh: bool) -> tuple[list[dict[str, Any]], Any, int, int]:
    """The run's events, the checker's verdict, when broker 2 was elected and when broker 1 learnt it (ms from the
    start)."""
    _, events, stats = run(parse_scenario_text(ISOLATED_LEADER.format(fresh=str(fresh).lower())))
    start = min(e["ts_ms"] for e in events)
    elected = next(e["ts_ms"] - start for e in events if e["event_type"] == "leader_election"
                   and e.get("leader_id") == 2)
    learnt = next(e["ts_ms"] - start for e in events if e["event_type"] == "leadership_change"
                  and e["broker_id"] == 1 and e["action"] == "become_follower")
    return events, check(events, stats), elected, learnt


def _acks_from(events: list[dict[str, Any]], broker: int, after_ms: int) -> list[int]:
    """When `broker` acknowledged a write after `after_ms` (ms from the start)."""
    start = min(e["ts_ms"] for e in events)
    return [e["ts_ms"] - start for e in events if e["event_type"] == "produce_ack" and e["broker_id"] == broker
            and e["error"] == "NONE" and e["ts_ms"] - start > after_ms]


def test_an_isolated_leader_keeps_acknowledging_acks1_writes_until_it_learns_it_was_replaced() -> None:
    events, verdict, elected, learnt = _run(False)
    # Last heard of at 4 s, its session expires at 10 s and the check every 6000 / 8 ms finds it at 10.5 s.
    assert elected == 10500 and 15000 < learnt <= 15003
    late = _acks_from(events, 1, elected)
    # Written at 100 a second to the old leader from the election until the heal; all gone from the final log.
    assert len(late) > 400 and max(late) <= learnt
    lost = [v for v in verdict.violations if v.invariant == "acks1_write_lost"]
    assert len(lost) >= len(late)
    assert not [v for v in verdict.violations if v.severity == "error"]
    # Broker 1's first NOT_LEADER_OR_FOLLOWER marks the metadata stale: the next write, or at the latest the retry
    # `retry_backoff_ms` (100 ms, ±20 %) later, refreshes it and goes to broker 2.
    start = min(e["ts_ms"] for e in events)
    refused = next(e["ts_ms"] - start for e in events if e["event_type"] == "produce_ack" and e["broker_id"] == 1
                   and e["error"] == "NOT_LEADER_OR_FOLLOWER")
    assert learnt <= refused < _acks_from(events, 2, elected)[0] <= refused + 3 + 120 + 3 + 3


def test_with_fresh_metadata_writes_follow_the_election() -> None:
    """Before session 93 (`fresh_metadata: true`): the first write after the election goes to broker 2."""
    events, _verdict, elected, _learnt = _run(True)
    assert _acks_from(events, 1, elected) == []


# `solo`'s only replica is broker 2, whose process is killed at 5 s; the producer writes to it from 4 s to 10 s, with
# {retries} retries. {restart}
SOLE_REPLICA = """
name: producer-waits-for-a-leader
seed: 5
duration_ms: {duration_ms}
truncation_mode: diverging-epoch
cluster:
  brokers: 2
  broker_session_timeout_ms: 6000
topics:
  - name: solo
    replication_factor: 1
    assignment: [[2]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: solo, rate_per_s: 20, acks: 1, keys: 1, retries: {retries}, start_ms: 4000, stop_ms: 10000,
        fresh_metadata: {fresh}}}
faults:
  - {{at_ms: 5000, action: crash, broker: 2, mode: process}}
{restart}"""


def _sole_replica(*, fresh: bool = False, retries: int = 0, restart_ms: int | None = 12000,
                  duration_ms: int = 30000) -> Any:
    restart = f"  - {{at_ms: {restart_ms}, action: restart, broker: 2}}\n" if restart_ms is not None else ""
    text = SOLE_REPLICA.format(duration_ms=duration_ms, retries=retries, fresh=str(fresh).lower(), restart=restart)
    return run(parse_scenario_text(text))[2]


def test_a_batch_waits_without_spending_retries_while_its_leader_is_down() -> None:
    """The connection to the dead process is refused and the partition then goes offline: the batches made from 5 s
    wait (no retry spent: they have none) until broker 2 is back and leads again, and all are acknowledged. Before
    session 93 each of them failed: its request timed out, or found no leader, with no retry left."""
    stats = _sole_replica(duration_ms=45000)
    assert stats.produced_batches > 80 and stats.failed_batches == 0
    assert stats.acked_batches == stats.produced_batches
    # Requests to the dead process time out after 31 s: by 45 s every batch is answered.
    before = _sole_replica(fresh=True, duration_ms=45000)
    assert before.failed_batches > 60 and before.acked_batches + before.failed_batches == before.produced_batches


def test_a_batch_fails_once_its_delivery_timeout_passes() -> None:
    """Broker 2 never comes back: each batch made from 5 s fails 120 s after it was made (`delivery.timeout.ms`),
    however many retries it had, not before."""
    at_100_s = _sole_replica(retries=1_000_000, restart_ms=None, duration_ms=100_000)
    assert at_100_s.failed_batches == 0
    at_140_s = _sole_replica(retries=1_000_000, restart_ms=None, duration_ms=140_000)
    assert at_140_s.produced_batches == at_100_s.produced_batches
    assert at_140_s.failed_batches + at_140_s.acked_batches == at_140_s.produced_batches
    assert at_140_s.failed_batches > 60


NOT_ENOUGH_REPLICAS = """
name: producer-backs-off
seed: 9
duration_ms: 20000
truncation_mode: diverging-epoch
cluster:
  brokers: 2
broker_config:
  min.insync.replicas: 2
topics:
  - name: t
    replication_factor: 2
    assignment: [[1, 2]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 1, acks: all, keys: 1, retries: 7, start_ms: 12000, stop_ms: 14000,
        fresh_metadata: {fresh}}}
faults:
  # The follower is gone for good: by 12 s it is out of the ISR, which is below min ISR.
  - {{at_ms: 1000, action: crash, broker: 2}}
"""


def _refusals(fresh: bool) -> list[int]:
    """When the leader refused the run's first batch (its ISR below min ISR: every acks=all write is refused
    NOT_ENOUGH_REPLICAS at once)."""
    _, events, _ = run(parse_scenario_text(NOT_ENOUGH_REPLICAS.format(fresh=str(fresh).lower())))
    acks = [e for e in events if e["event_type"] == "produce_ack"]
    assert acks and all(e["error"] == "NOT_ENOUGH_REPLICAS" for e in acks)
    first = acks[0]["batch_checksum"]
    return [e["ts_ms"] for e in acks if e["batch_checksum"] == first]


def test_retries_back_off_exponentially_with_jitter() -> None:
    """KIP-580 (Kafka 3.7+): the n-th retry waits 100 ms x 2^(n-1) x [0.8, 1.2), at most `retry.backoff.max.ms`
    (1000 ms); each gap also holds an answer's and a request's trip (2-6 ms). Before (`fresh_metadata`), 100 ms."""
    times = _refusals(False)
    assert len(times) == 8  # the attempt and its 7 retries
    for n, gap in enumerate((b - a for a, b in pairwise(times))):
        wait = min(100 * 2 ** n, 1000)  # the jitter applies before the cap
        assert int(0.8 * wait) + 2 <= gap <= min(int(1.2 * wait), 1000) + 6, (n, gap)
    before = _refusals(True)
    assert all(102 <= b - a <= 106 for a, b in pairwise(before))


def _refreshes(text: str) -> tuple[list[int], list[dict[str, Any]], Any]:
    """When the run's producer refreshed its metadata (ms from the start), its events and stats."""
    changes, events, stats = watch(parse_scenario_text(text), lambda cluster: lambda: cluster.producers[0].refreshed_ms)
    return [value - DEFAULT_START_MS for _, value in changes], events, stats


def _backs_off(gaps: list[int], equivalent: int, slack_ms: int) -> bool:
    """Whether the gaps between refreshes follow the backoff when the first of them follows `equivalent` equivalent
    responses in a row, one more for each next: `retry.backoff.ms` (100) after none or one, then 200, 400, 800, at
    most 1000 ms, each x [0.8, 1.2) (the jitter applies before the cap), plus at most `slack_ms`."""
    steps = [100 if n == 0 else min(100 * 2 ** (n - 1), 1000) for n in range(equivalent, equivalent + len(gaps))]
    return len(gaps) >= 4 and all(int(0.8 * step) <= gap <= min(int(1.2 * step), 1000) + slack_ms
                                  for gap, step in zip(gaps, steps, strict=True))


def test_metadata_refreshes_back_off_while_they_bring_nothing_new() -> None:
    """`Metadata.timeToAllowUpdate` (KIP-580, Kafka 3.7+): a refresh goes `retry.backoff.ms` after the last one at the
    soonest, and after `n` refreshes in a row with no newer leader epoch (equivalent responses), the `n - 1`th step of
    the exponential backoff: 100, 200, 400, 800, then 1000 ms, each x [0.8, 1.2). Broker 2, sole replica, dies at 5 s:
    while the metadata still names it, every look at the held batches (each `retry.backoff.ms`) asks for a refresh,
    which goes on that schedule. Its fencing (offline at 10.5 s, a new leader epoch) starts the count again: a
    partition without a leader asks for the next refresh at once, and the held batches look again when it may go
    (100, 100, 200, 400, 800 ms). So the batches reach broker 2, leader again at 12 s, at the first refresh after its
    election, not within one `retry.backoff.ms` of it."""
    text = SOLE_REPLICA.format(duration_ms=20000, retries=0, fresh="false",
                               restart="  - {at_ms: 12000, action: restart, broker: 2}\n")
    seen, events, stats = _refreshes(text)
    start = min(e["ts_ms"] for e in events)
    offline = next(e["ts_ms"] - start for e in events if e["event_type"] == "leader_election"
                   and e["action"] == "offline")
    elected = next(e["ts_ms"] - start for e in events if e["event_type"] == "leader_election"
                   and e.get("leader_id") == 2 and e["ts_ms"] - start > 12000)
    dead = [t for t in seen if 5000 < t < offline]
    # Looks at the held batches come every 100 ms: a refresh waits for the first look after its time.
    assert _backs_off([b - a for a, b in pairwise(dead)], 1, 100)
    leaderless = [t for t in seen if offline < t]
    assert _backs_off([b - a for a, b in pairwise(leaderless)], 0, 6)
    assert leaderless[-1] > elected and leaderless[-2] < elected
    acks = _acks_from(events, 2, 5000)
    assert acks and min(acks) > leaderless[-1] and stats.failed_batches == 0


# Brokers 1 and 2 cannot reach each other from 2 s on, but both reach the controller: follower 2 stays in the ISR
# (`replica.lag.time.max.ms` is 60 s), so the one acks=all batch, sent at 5 s, parks in leader 1's purgatory until
# its 30 s timeout, and so does its retry.
PARKED_PRODUCE = """
name: producer-request-timeout
seed: 4
duration_ms: 75000
truncation_mode: diverging-epoch
cluster:
  brokers: 2
broker_config:
  replica.lag.time.max.ms: 60000
topics:
  - name: t
    replication_factor: 2
    assignment: [[1, 2]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 1, acks: all, keys: 1, retries: 1, start_ms: 5000, stop_ms: 5001,
        fresh_metadata: {fresh}}}
faults:
  - {{at_ms: 2000, action: partition, from: [1], to: [2], duration_ms: 100000}}
"""


def test_a_request_times_out_at_the_client_first_and_asks_for_a_metadata_refresh() -> None:
    """`request.timeout.ms` (30 s) is both the client's wait (`NetworkClient.handleTimedOutRequests`, from the send)
    and the broker's DelayedProduce timeout (from the arrival): the client gives up first, disconnects and asks for a
    metadata refresh (`handleServerDisconnect`), which goes at once (the last one was 30 s before); its retry goes
    `retry.backoff.ms` (x [0.8, 1.2)) later, and the broker's REQUEST_TIMED_OUT comes in between. Before, the client
    waited a second longer and retried on the broker's answer, which asks for no refresh (`fresh_metadata` keeps
    that)."""
    sc = parse_scenario_text(PARKED_PRODUCE.format(fresh="false"))
    cluster = Cluster(sc)
    sink = ListSink()
    stats = cluster.run(sink)
    start = min(e["ts_ms"] for e in sink.events)
    timed_out = [e["ts_ms"] - start for e in sink.events if e["event_type"] == "produce_ack"]
    assert len(timed_out) == 2 and stats.produced_batches == stats.failed_batches == 1
    assert all(e["error"] == "REQUEST_TIMED_OUT" for e in sink.events if e["event_type"] == "produce_ack")
    # The batch, made at 5 s, went after `linger.ms` (5 ms): the client gave up at 35,005 ms and refreshed its
    # metadata then; the broker answered after (its 30 s ran from the arrival, 1-3 ms after the send). The retry
    # went 80-120 ms after the timeout and parked 30 s from its own arrival, 1-3 ms later.
    refreshed = cluster.producers[0].refreshed_ms - start
    assert refreshed == 35_005 < timed_out[0] <= 35_008
    assert 35_085 + 30_001 <= timed_out[1] <= 35_125 + 30_003


# Broker 1 leads `t` and shuts down cleanly at 5 s: the controller moves leadership to broker 2 first (epoch 1),
# and broker 1, a follower now, stops about a heartbeat interval later.
LEADER_MOVES = """
name: producer-follows-the-leader-hint
seed: 7
duration_ms: 9000
truncation_mode: diverging-epoch
cluster:
  brokers: 3
topics:
  - name: t
    replication_factor: 3
    assignment: [[1, 2, 3]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 200, acks: 1, keys: 1, retries: 5, fresh_metadata: {fresh}}}
faults:
  - {{at_ms: 5000, action: controlled_shutdown, broker: 1}}
"""


def _refused_then(fresh: bool) -> list[tuple[int, int, int]]:
    """For each batch broker 1 refused NOT_LEADER_OR_FOLLOWER: when (ms from the start), and when and where its next
    attempt was acknowledged."""
    _, events, _ = run(parse_scenario_text(LEADER_MOVES.format(fresh=str(fresh).lower())))
    start = min(e["ts_ms"] for e in events)
    acks = [e for e in events if e["event_type"] == "produce_ack"]
    out = []
    for e in acks:
        if e["error"] == "NOT_LEADER_OR_FOLLOWER":
            nxt = next(a for a in acks if a["batch_checksum"] == e["batch_checksum"] and a["ts_ms"] > e["ts_ms"])
            assert nxt["error"] == "NONE"
            out.append((e["ts_ms"] - start, nxt["ts_ms"] - start, nxt["broker_id"]))
    return out


def test_a_not_leader_answer_names_the_new_leader_and_the_retry_goes_at_once() -> None:
    """KIP-951 (Kafka 3.7+): broker 1, deposed, answers NOT_LEADER_OR_FOLLOWER with the leader and epoch its metadata
    names (`CurrentLeader`); the client takes them (`Metadata.updatePartitionLeadership`, the epoch being newer) and,
    the partition's leader having changed since the attempt, retries without backing off
    (`RecordAccumulator.shouldBackoff`): each refused batch is acknowledged by broker 2 one round trip later, where
    before session 94 the retry waited `retry.backoff.ms` (100 ms x [0.8, 1.2)) and went after a metadata refresh. (A
    `fresh_metadata` client reads the controller's leader at every attempt, so it is never refused here.)"""
    refused = _refused_then(False)
    assert refused and all(acked_at - at <= 8 and broker == 2 for at, acked_at, broker in refused)
    assert _refused_then(True) == []
