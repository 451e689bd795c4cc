"""Requests the simulated broker holds (GC pause, disk stall) while their caller gives up."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replication_core.errors import Errors
from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.cluster import Cluster, ListSink
from replication_core.sim.producer import ProduceRequest
from replication_core.sim.rpc import Call
from tests.sim.helpers import run, scenario


def _held_produce(crash_during_stall: bool) -> tuple[Any, list[Any], int]:
    """Send broker 1 (the leader of events-0) a produce request with a 500 ms timeout, stall its disk for
    2 s (optionally crashing and restarting it in between), and run 3 s on. Returns the cluster, the
    producer's answers and the time the request was sent."""
    cluster, _, _ = run(scenario("slow-follower", duration_ms=5_000))
    tp = TopicPartition("events", 0)
    leader = cluster.brokers[1]
    assert leader.rm is not None and leader.rm.partitions[tp].is_leader
    now = cluster.queue.now_ms
    answers: list[Any] = []
    call = cluster.rpc.call(99, 1, ProduceRequest(tp, 1, 100, 12345, -1, 1000), leader.handle_produce,
                            lambda response, at: answers.append((response, at)), "timed out", 500)
    assert isinstance(call, Call)
    leader.disk_stall(2_000)
    if crash_during_stall:
        cluster.queue.at(now + 1_000, leader.crash, False)
        cluster.queue.at(now + 1_200, leader.start, "restart")
    cluster.queue.run_until(now + 3_000)
    return cluster, answers, now


def _holding(cluster: Any, checksum: int) -> list[int]:
    """The brokers whose log of events-0 holds a batch with `checksum`."""
    tp = TopicPartition("events", 0)
    return [b.broker_id for b in cluster.brokers.values()
            if b.rm is not None and tp in b.rm.partitions
            and any(batch.checksum == checksum for batch in b.rm.partitions[tp].log.batches)]


def test_produce_held_past_its_timeout_is_written_after_the_stall() -> None:
    """A produce request held by a disk stall (or GC pause) longer than the producer's timeout: the producer
    gets its timeout at the deadline, and the broker still appends the batch when the stall ends, as Kafka
    handles a request already in its request channel ("timed out but written"); the late answer goes
    nowhere. Before, the held task read the request from the finished call (None) and raised a TypeError
    (nemesis-small seed 499), and then the batch was dropped instead."""
    cluster, answers, now = _held_produce(crash_during_stall=False)
    assert answers == [("timed out", now + 500)]
    assert 1 in _holding(cluster, 12345)


def test_produce_held_by_a_broker_that_crashes_is_lost_with_the_connection() -> None:
    """A request held when its broker crashes dies with the process: the restarted broker does not append it."""
    cluster, answers, now = _held_produce(crash_during_stall=True)
    assert answers == [("timed out", now + 500)]
    assert _holding(cluster, 12345) == []
    # Not even tried: the restarted broker answers no produce of that batch (not even NOT_LEADER).
    assert [e for e in cluster.events if e["event_type"] == "produce_ack" and e["batch_checksum"] == 12345] == []


def test_a_broker_knows_every_partition_once_its_metadata_caught_up() -> None:
    """KRaft's broker serves requests with the whole metadata image: broker 4 of `throttled-reassignment`, no replica
    of `moves-0` before the reassignment, answers a request for it NOT_LEADER_OR_FOLLOWER
    (`ReplicaManager.getPartitionOrError`), and one for a partition the cluster does not have
    UNKNOWN_TOPIC_OR_PARTITION."""
    sc = replace(scenario("throttled-reassignment"), duration_ms=2_000)
    cluster = Cluster(sc)
    seen: list[tuple[Errors, Errors]] = []

    def probe() -> None:
        rm = cluster.brokers[4].rm
        assert rm is not None and rm.get_partition(TopicPartition("moves", 0)) is None
        seen.append((rm.not_hosted_error(TopicPartition("moves", 0)), rm.not_hosted_error(TopicPartition("moves", 9))))

    cluster.queue.at(cluster.start_ms + 1_000, probe)
    cluster.run(ListSink())
    assert seen == [(Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION)]
