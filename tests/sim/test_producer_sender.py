"""The producer's `Sender`: one request per broker with the first batch of each of its partitions, `linger.ms`,
`max.in.flight.requests.per.connection`, and a request timeout that closes the connection (since session 95).

Each test makes its batches itself (`Producer.send` at fixed virtual times, the producer's own rate being 0) and
reads the requests the client has in flight every virtual millisecond: (broker, partitions of its batches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.cluster import Cluster
from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import watch

SCENARIO = """
name: sender
seed: 3
duration_ms: {duration}
truncation_mode: diverging-epoch
cluster:
  brokers: 2
topics:
  - name: t
    replication_factor: 2
    assignment: [[1, 2], [1, 2], [1, 2], [2, 1]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 0, acks: {acks}, request_timeout_ms: {timeout}, {extra}}}
faults:
{faults}
"""
"""Partitions 0-2 led by broker 1, partition 3 by broker 2; one producer whose batches the test makes."""

Flights = tuple[tuple[int, tuple[int, ...]], ...]


def _run(sends: list[tuple[int, int]], acks: str = "1", timeout: int = 30000, extra: str = "linger_ms: 5",
         faults: str = "", duration: int = 8000) -> tuple[list[tuple[int, Flights]], list[dict[str, Any]], Any]:
    """Run with a batch made for partition p at each (ms from the start, p) of `sends`: each change of the requests in
    flight, (ms from the start, ((broker, partitions), ...)) in sending order, the events and the producer."""
    sc = parse_scenario_text(SCENARIO.format(duration=duration, acks=acks, timeout=timeout, extra=extra,
                                             faults=faults or "  []"))
    clusters: list[Cluster] = []

    def reader(cluster: Cluster) -> Callable[[], Flights]:
        clusters.append(cluster)
        producer = cluster.producers[0]
        for at, partition in sends:
            cluster.queue.at(cluster.start_ms + at, producer.send, TopicPartition("t", partition), producer.spec.acks,
                             1, 100, producer.spec.retries)
        return lambda: tuple((node, tuple(b.req.tp.partition for b in f.batches))
                             for node, flights in producer._in_flight.items() for f in flights)

    changes, events, _ = watch(sc, reader)
    return changes, events, clusters[0].producers[0]


def test_one_request_per_broker_takes_the_first_batch_of_each_of_its_partitions() -> None:
    """Five batches made at 2 s: two for partition 0, one each for 1, 2 (broker 1) and 3 (broker 2). Partition 0's
    first batch has a batch behind it, so it may go at once (`RecordAccumulator.ready`: full), and the drain for broker
    1 takes the first batch of each of its partitions, lingering or not: one request of partitions 0, 1 and 2. The
    batch left on partition 0 and partition 3's, alone in their queues, go when their `linger.ms` (5 ms) ends, one
    request per broker. Every batch is acknowledged."""
    changes, events, producer = _run([(2000, 0), (2000, 0), (2000, 1), (2000, 2), (2000, 3)])
    sent = [(at, flight) for at, flights in changes for flight in flights
            if all(flight not in before for _, before in changes if _ < at)]
    assert sent[0] == (2001, (1, (0, 1, 2)))  # seen the millisecond after it went
    assert sorted(sent[1:]) == [(2005, (1, (0,))), (2005, (2, (3,)))]  # seen as they go (the look comes after)
    assert changes[-1][1] == ()
    assert (producer.sent, producer.acked, producer.failed) == (5, 5, 0)
    acked = [e for e in events if e["event_type"] == "produce_ack"]
    assert [e["error"] for e in acked] == ["NONE"] * 5
    # The first request's three answers are one response: same broker, same millisecond.
    assert len({(e["broker_id"], e["ts_ms"]) for e in acked[:3]}) == 1


def test_an_acks_all_request_is_answered_when_its_last_partition_is() -> None:
    """`DelayedProduce` over several partitions: broker 2, the only follower of partitions 0-2, pauses at 1,990 ms for
    a second; broker 1's request of partitions 0, 1 and 2 (2 s) parks until their HW passes the batches, after the
    pause, and its three answers go together. Each partition's `produce_ack` carries the leader epoch it was settled
    in."""
    _, events, producer = _run([(2000, 0), (2000, 0), (2000, 1), (2000, 2)], acks="all",
                              faults="  - {at_ms: 1990, action: pause, broker: 2, duration_ms: 1000}")
    acked = [e for e in events if e["event_type"] == "produce_ack"]
    assert [e["error"] for e in acked] == ["NONE"] * 4
    # The second batch of partition 0 went in a request of its own at 2,005 ms, answered in the same millisecond.
    assert [e["partition"] for e in acked] == [0, 1, 2, 0] and all(e["leader_epoch"] == 0 for e in acked)
    assert len({e["ts_ms"] for e in acked[:3]}) == 1
    assert 2990 < acked[0]["ts_ms"] - min(e["ts_ms"] for e in events) <= 3010
    assert (producer.sent, producer.acked) == (4, 4)


def test_no_more_requests_in_flight_to_a_broker_than_the_limit() -> None:
    """Batches for partition 0 every 10 ms from 2 s while broker 1 (its leader) pauses from 1,990 ms for a second:
    with `max.in.flight.requests.per.connection: 2` the client sends two requests, then holds the rest in the
    accumulator until an answer frees a slot; the held batches then go one per request (one batch per partition per
    request) as slots free. With the default 5, five are in flight during the pause."""
    sends = [(2000 + 10 * i, 0) for i in range(8)]
    pause = "  - {at_ms: 1990, action: pause, broker: 1, duration_ms: 1000}"
    limited, _, producer = _run(sends, acks="all", extra="linger_ms: 0, max_in_flight_requests_per_connection: 2",
                                faults=pause)
    assert max(len(flights) for _, flights in limited) == 2
    during = [flights for at, flights in limited if at <= 2990]
    assert during[-1] == ((1, (0,)), (1, (0,)))  # the two of 2,000 and 2,010 ms, until the pause ends
    assert (producer.sent, producer.acked, producer.failed) == (8, 8, 0)
    default, _, producer = _run(sends, acks="all", extra="linger_ms: 0", faults=pause)
    assert max(len(flights) for _, flights in default) == 5
    assert (producer.sent, producer.acked, producer.failed) == (8, 8, 0)


def test_a_request_timeout_fails_every_request_in_flight_to_the_broker() -> None:
    """`request.timeout.ms` of 1 s while broker 1 pauses for 3 s from 1,990 ms: the first request (2,000 ms) times
    out at 3,000 ms and the client closes the connection, failing the two sent after it (2,010 and 2,020 ms) at the
    same moment, before their own timeouts (`NetworkClient.handleDisconnections`). All three batches are retried and
    acknowledged once the pause is over."""
    changes, _, producer = _run([(2000, 0), (2010, 0), (2020, 0)], acks="all", timeout=1000, extra="linger_ms: 0",
                                faults="  - {at_ms: 1990, action: pause, broker: 1, duration_ms: 3000}")
    in_flight = [(at, len(flights)) for at, flights in changes]
    assert (2021, 3) in in_flight or (2022, 3) in in_flight
    # All three leave the flight together, at the first request's timeout.
    emptied = next(at for at, n in in_flight if at > 2020 and n == 0)
    assert emptied == 3000
    assert (producer.sent, producer.acked, producer.failed) == (3, 3, 0)
