"""Requests the simulated broker holds (GC pause, disk stall) while their caller gives up."""

from __future__ import annotations

from typing import Any

from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.producer import ProduceRequest
from replication_core.sim.rpc import Call
from tests.sim.helpers import run, scenario


def test_produce_held_past_its_timeout_by_a_disk_stall_is_dropped() -> None:
    """A produce request held by a disk stall (or GC pause) longer than the producer's timeout: the call is
    answered with its error at the deadline and lets go of the request, so when the stall ends the broker
    has nothing to append (as for a request that arrives after its deadline). It raised a TypeError when
    the stall ended (first seen in nemesis-small seed 499 once the controller published AlterPartition
    changes: a ~4 s stall of a leader holding produce requests)."""
    cluster, _, _ = run(scenario("slow-follower", duration_ms=5_000))
    tp = TopicPartition("events", 0)
    leader = cluster.brokers[1]
    assert leader.rm is not None
    log = leader.rm.partitions[tp].log
    now = cluster.queue.now_ms
    answers: list[Any] = []
    call = cluster.rpc.call(99, 1, ProduceRequest(tp, 1, 100, 12345, -1, 1000), leader.handle_produce,
                            lambda response, at: answers.append((response, at)), "timed out", 500)
    assert isinstance(call, Call)
    leader.disk_stall(2_000)
    cluster.queue.run_until(now + 3_000)
    assert answers == [("timed out", now + 500)]
    assert all(b.checksum != 12345 for b in log.batches)
