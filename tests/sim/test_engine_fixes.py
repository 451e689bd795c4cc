"""Engine fixes the simulator needed (each the smallest change, tested here)."""

from __future__ import annotations

import pytest

from replication_core.config import ReplicationConfig, TruncationMode
from replication_core.fetcher_manager import FetcherManager, replica_fetcher_factory
from replication_core.log import Log
from replication_core.partition_fetch_state import BrokerEndPoint, InitialFetchState, TopicPartition


def test_remove_fetcher_for_partitions_keeps_the_callers_order() -> None:
    """`removeFetcherForPartitions` emits the removed partitions in the order it was given them, not in
    a set's hash order (which varies with PYTHONHASHSEED and broke byte-identical reruns)."""
    events: list[dict[str, object]] = []
    logs = {tp: Log(tp.topic, tp.partition, 2) for tp in
            (TopicPartition("orders", 0), TopicPartition("clicks", 1), TopicPartition("zebra", 7))}
    cfg = ReplicationConfig()
    fm = FetcherManager.from_config(2, cfg, replica_fetcher_factory(2, cfg, logs.__getitem__), events.append)
    leader = BrokerEndPoint(1)
    fm.add_fetcher_for_partitions({tp: InitialFetchState(leader, 0, 0) for tp in logs}, 0)
    for order in (list(logs), list(reversed(logs))):
        fm.add_fetcher_for_partitions({tp: InitialFetchState(leader, 0, 0) for tp in logs}, 0)
        events.clear()
        fm.remove_fetcher_for_partitions(order, 1)
        (removed,) = [e for e in events if e["action"] == "removed"]
        assert [(p["topic"], p["partition"]) for p in removed["partitions"]] == [tuple(tp) for tp in order]  # type: ignore[union-attr]


def test_metadata_waits_for_a_fetcher_holding_its_partition_map_lock() -> None:
    """Kafka's `removeFetcherForPartitions` / `addFetcherForPartitions` / `shutdownIdleFetcherThreads` take
    every fetcher's `partitionMapLock`, which a fetcher holds while its OFFSET_OUT_OF_RANGE handling waits
    for ListOffsets (`fetchOffsetAndTruncate`). The simulated broker applies the metadata cache part of such
    an update (fenced brokers) at once, holds back the partition changes (no `makeLeader` while the fetcher
    may still truncate the log) and every later update, and applies them in order once the lock is free."""
    from replication_core.partition import PartitionRegistration
    from replication_core.sim.controller import MetadataUpdate
    from tests.sim.helpers import run, scenario

    cluster, _, _ = run(scenario("unclean-election", duration_ms=3000))
    follower = cluster.brokers[2]
    rm = follower.rm
    assert rm is not None and follower.fetchers is not None
    tp = TopicPartition("risky", 0)
    p = rm.partitions[tp]
    assert not p.is_leader and p.leader_epoch >= 0
    (actor,) = follower.actors.values()
    assert actor.thread.fetch_state(tp) is not None
    epoch = p.leader_epoch

    actor.thread.partition_map_locked = True  # a ListOffsets of the OFFSET_OUT_OF_RANGE handling in flight
    become_leader = MetadataUpdate({tp: PartitionRegistration(2, epoch + 1, (2,), (1, 2), 100)},
                                   frozenset({1}), frozenset())
    unfence = MetadataUpdate({}, frozenset(), frozenset())
    follower.apply_metadata(become_leader)
    follower.apply_metadata(unfence)
    assert follower.metadata.fenced == {1}  # the cache part of the blocked update is published
    assert not p.is_leader and p.leader_epoch == epoch and actor.thread.fetch_state(tp) is not None

    now = cluster.queue.now_ms
    follower.partition_map_lock_released()  # still locked: nothing moves
    cluster.queue.run_until(now)
    assert not p.is_leader and follower.metadata.fenced == {1}

    actor.thread.partition_map_locked = False
    follower.partition_map_lock_released()
    cluster.queue.run_until(now)
    assert p.is_leader and p.leader_epoch == epoch + 1 and actor.thread.fetch_state(tp) is None
    assert follower.metadata.fenced == set()  # the later update went through after it, in order


def test_follower_made_leader_during_out_of_range_handling_truncates_first() -> None:
    """End to end: the follower's fetch is OFFSET_OUT_OF_RANGE (its leader's log is shorter), and a metadata
    update making it leader arrives while its ListOffsets is in flight. As in Kafka (the update waits for
    the fetcher's `partitionMapLock`), the truncation to the old leader's end offset happens first and the
    new leader epoch starts at the truncated end: the fetcher never truncates a log this broker leads."""
    from replication_core.partition import PartitionRegistration
    from replication_core.sim.controller import MetadataUpdate
    from tests.sim.helpers import run, scenario

    cluster, _, _ = run(scenario("unclean-election", duration_ms=3000, truncation_mode=TruncationMode.LEADER_EPOCH))
    tp = TopicPartition("risky", 0)
    old_leader, follower = cluster.brokers[1], cluster.brokers[2]
    assert old_leader.rm is not None and follower.rm is not None
    leader_log = old_leader.rm.partitions[tp].log
    p = follower.rm.partitions[tp]
    (actor,) = follower.actors.values()
    assert not p.is_leader and p.log.log_end_offset > 20
    # The old leader loses its tail (as an uncleanly elected, shorter replica would have it).
    cut = leader_log.log_end_offset - 20
    leader_log.truncate_to(cut, cluster.queue.now_ms, reason="out_of_range", role="leader")
    update = MetadataUpdate({tp: PartitionRegistration(2, p.leader_epoch + 1, (2,), (1, 2), p.partition_epoch + 1)},
                            frozenset({1}), frozenset())
    seen: dict[str, int] = {}

    def step() -> None:
        if "sent" not in seen and actor.thread.partition_map_locked:
            seen["sent"] = cluster.queue.now_ms
            seen["leo_at_update"] = p.log.log_end_offset
            follower.apply_metadata(update)  # what the controller channel's delivery does
        if "sent" in seen and "leader" not in seen and p.is_leader:
            seen["leader"] = cluster.queue.now_ms

    cluster.queue.run_until(cluster.queue.now_ms + 2000, step, step_every=1)
    assert "sent" in seen and "leader" in seen and seen["leader"] > seen["sent"]
    assert seen["leo_at_update"] > cut
    leader_end = p.leader_epoch_start_offset
    assert leader_end is not None and cut <= leader_end < seen["leo_at_update"]
    assert p.log.log_end_offset >= leader_end  # never truncated below its own epoch start
    assert tuple(p.log.epoch_cache.entries[-1]) == (p.leader_epoch, leader_end)


def test_triaged_run_no_longer_abandons_a_proposal_with_its_isr_unchanged() -> None:
    """nemesis-small seed 3 (the triaged run): leader 2 of t-1 proposed adding 3 (partition epoch 6), the
    controller committed it (7) but the answer was lost, and 3 left the ISR again (8); the leader, still
    pending, learnt only epoch 8 (same ISR {1, 2}), whose `makeLeader` abandoned the proposal (an
    `isr_change` update with the ISR unchanged, which the checker needs to see). Since the controller
    publishes every committed AlterPartition as metadata, the leader learns epoch 7 first: pending
    proposals end by the answer or by the change's metadata, the ISR changes each time, and the run
    still checks clean. (The abandonment event itself is tested on the engine, tests/core
    `test_same_epoch_metadata_abandoning_a_pending_expansion_is_an_event`.)"""
    from tests.sim.helpers import check, run, scenario

    _, events, stats = run(scenario("nemesis-small", seed=3))
    changes = [e for e in events if e["event_type"] == "isr_change"]
    assert [e for e in changes if e["action"] == "update" and e["old_isr"] == e["isr"]] == []
    assert any(e["action"] == "update" and e["reason"] == "leader_and_isr" and e["old_isr"] != e["isr"]
               for e in changes)
    assert check(events, stats).problems == ()


@pytest.mark.parametrize("deltas", [True, False])
def test_metadata_held_by_a_gc_pause_is_applied_in_order_when_a_second_pause_extends_it(deltas: bool) -> None:
    """A GC pause stops the metadata thread; it resumes with its updates in the order they came, however
    often the pause is extended. Each update used to be held on its own: one held to the first pause's end
    was held again behind those that came during the extension, so an older LeaderAndIsr was applied after
    a newer one (power seed 900428: a stale state recreated a partition its StopReplica had deleted, and
    the broker led it with an empty log). With KRaft's metadata deltas the held updates are one delta (a
    paused JVM reads the metadata log once it runs again): the broker goes to the newest epoch at once;
    with `cluster.metadata_deltas: false` it applies each in turn."""
    from dataclasses import replace

    from replication_core.partition import PartitionRegistration
    from replication_core.sim.controller import MetadataUpdate
    from tests.sim.helpers import run, scenario

    sc = scenario("unclean-election", duration_ms=3000)
    sc = replace(sc, cluster=replace(sc.cluster, metadata_deltas=deltas))
    assert sc.cluster.coalesces_metadata == deltas
    cluster, _, _ = run(sc)
    follower = cluster.brokers[2]
    assert follower.rm is not None
    tp = TopicPartition("risky", 0)
    p = follower.rm.partitions[tp]
    epoch, partition_epoch = p.leader_epoch, p.partition_epoch
    q = cluster.queue
    start = q.now_ms

    def state(leader_epoch: int, pe: int) -> MetadataUpdate:
        return MetadataUpdate({tp: PartitionRegistration(1, leader_epoch, (1, 2), (1, 2), pe)},
                              frozenset(), frozenset())

    follower.pause(100)
    follower.apply_metadata(state(epoch + 1, partition_epoch + 1))  # held to start + 100
    q.run_until(start + 50)
    follower.pause(150)  # a second pause: the broker is now stopped until start + 200
    q.run_until(start + 60)
    follower.apply_metadata(state(epoch + 2, partition_epoch + 2))  # held to start + 200
    q.run_until(start + 150)
    assert p.leader_epoch == epoch  # nothing applied during either pause
    q.run_until(start + 250)
    assert (p.leader_epoch, p.partition_epoch) == (epoch + 2, partition_epoch + 2)
    changes = [e["leader_epoch"] for e in cluster.events[-400:]
               if e["event_type"] == "leadership_change" and e["broker_id"] == 2 and e["topic"] == "risky"
               and e["ts_ms"] > start]
    assert changes == ([epoch + 2] if deltas else [epoch + 1, epoch + 2])


@pytest.mark.parametrize("deltas", [True, False])
def test_a_restart_drops_the_metadata_a_gc_pause_held_for_the_old_process(deltas: bool) -> None:
    """A process that restarts holds nothing its predecessor's GC pause held: that JVM is gone. The old process's
    held call still fires at its pause's old end; it used to take the new process's held update there, after a
    newer StopReplica had been applied, and recreated the deleted replica (as power seed 900428 did). A throttle the
    old process held was applied after the restart too, over the newer removal. The old process's pause outlasts its
    session (6 s here): a KRaft controller registers the new process only once that session has expired."""
    from dataclasses import replace

    from replication_core.partition import PartitionRegistration
    from replication_core.sim.controller import MetadataUpdate
    from tests.sim.helpers import run, scenario

    sc = scenario("unclean-election", duration_ms=3000)
    cluster, _, _ = run(replace(sc, cluster=replace(sc.cluster, metadata_deltas=deltas)))
    q, broker = cluster.queue, cluster.brokers[2]
    tp = TopicPartition("risky", 0)
    start = q.now_ms

    def update(states: dict[TopicPartition, PartitionRegistration] | None = None,
               stop: tuple[tuple[TopicPartition, int], ...] = (),
               throttles: tuple[tuple[str, tuple[str, ...], tuple[str, ...], int | None], ...] = ()) -> MetadataUpdate:
        # A throttle change newer than any the controller has made: a restarted process would not skip it as read.
        return MetadataUpdate(states or {}, frozenset(broker.metadata.fenced), frozenset(), stop, throttles,
                              broker.incarnation, tuple(sorted(broker.metadata.epochs.items())),
                              throttle_version=cluster.controller.throttle_version + 1)

    broker.pause(7000)
    broker.apply_metadata(update(throttles=(("risky", ("0:1",), ("0:2",), 1000),)))  # held to start + 7000
    q.run_until(start + 10)
    broker.crash(False)
    q.run_until(start + 5500)
    assert 2 in cluster.controller.fenced  # the old session expired (at start + 5001)
    broker.start("restart")
    q.run_until(start + 5800)
    assert broker.rm is not None
    p = broker.rm.partitions[tp]
    epoch, partition_epoch = p.leader_epoch, p.partition_epoch
    broker.pause(100)
    broker.apply_metadata(update({tp: PartitionRegistration(1, epoch + 1, (1, 2), (1, 2, 3), partition_epoch + 1)}))
    q.run_until(start + 5950)
    assert broker.rm.partitions[tp].leader_epoch == epoch + 1  # applied at its own pause's end
    broker.apply_metadata(update(stop=((tp, epoch + 2),)))
    assert tp not in broker.rm.partitions
    q.run_until(start + 7100)  # past the old process's pause end
    assert tp not in broker.rm.partitions
    assert broker.follower_quota is not None and not broker.follower_quota.is_throttled("risky", 0)


@pytest.mark.parametrize("deltas", [True, False])
def test_a_delivery_at_the_end_of_a_gc_pause_waits_for_the_updates_the_pause_held(deltas: bool) -> None:
    """An update that reaches the broker in the very millisecond its GC pause ends comes after every update the
    pause held: the metadata thread resumes with its backlog first. The held call of an extended pause is queued
    again at the extension's end, behind a delivery the controller had already scheduled for that millisecond;
    that delivery used to be applied at once and the older held LeaderAndIsr after it, which here recreated the
    replica the delivered StopReplica had just deleted."""
    from dataclasses import replace

    from replication_core.partition import PartitionRegistration
    from replication_core.sim.controller import MetadataUpdate
    from tests.sim.helpers import run, scenario

    sc = scenario("unclean-election", duration_ms=3000)
    cluster, _, _ = run(replace(sc, cluster=replace(sc.cluster, metadata_deltas=deltas)))
    q, follower = cluster.queue, cluster.brokers[2]
    assert follower.rm is not None
    tp = TopicPartition("risky", 0)
    p = follower.rm.partitions[tp]
    epoch, partition_epoch = p.leader_epoch, p.partition_epoch
    start = q.now_ms

    def update(states: dict[TopicPartition, PartitionRegistration] | None = None,
               stop: tuple[tuple[TopicPartition, int], ...] = ()) -> MetadataUpdate:
        return MetadataUpdate(states or {}, frozenset(follower.metadata.fenced), frozenset(), stop, (),
                              follower.incarnation, tuple(sorted(follower.metadata.epochs.items())))

    follower.pause(100)
    q.run_until(start + 10)
    follower.apply_metadata(update({tp: PartitionRegistration(1, epoch + 1, (1, 2), (1, 2), partition_epoch + 1)}))
    q.run_until(start + 50)
    follower.pause(150)  # stopped until start + 200; the held call is queued again there at start + 100
    q.run_until(start + 60)
    # The next delivery, in flight, lands at start + 200: scheduled before the held call is queued again there.
    q.at(start + 200, follower.apply_metadata, update(stop=((tp, epoch + 2),)))
    q.run_until(start + 199)
    assert follower.rm.partitions[tp].leader_epoch == epoch  # nothing applied during the pauses
    q.run_until(start + 300)
    assert tp not in follower.rm.partitions
    changes = [e["leader_epoch"] for e in cluster.events[-400:]
               if e["event_type"] == "leadership_change" and e["broker_id"] == 2 and e["topic"] == "risky"
               and e["ts_ms"] > start]
    # With the deltas the held registration and the StopReplica are one delta, in which the stop wins.
    assert changes == ([] if deltas else [epoch + 1])


def test_a_request_a_gc_pause_held_is_lost_with_the_process_that_received_it() -> None:
    """A follower's request that a leader's GC pause held dies with that process: a crash closes its connections,
    so a restarted process never answers it (it used to, at the old pause's end) and the caller's timeout fires, as
    for a request held by a crashed broker. `_produce` already kept its incarnation this way."""
    from replication_core.leader_endpoint import ListOffsetsRequest
    from replication_core.sim.rpc import Call
    from tests.sim.helpers import run, scenario

    cluster, _, _ = run(scenario("unclean-election", duration_ms=3000))
    q, leader = cluster.queue, cluster.brokers[1]
    start = q.now_ms
    answers: list[object] = []

    def list_offsets() -> Call:
        return Call(2, 1, ListOffsetsRequest(2, TopicPartition("risky", 0), None, "LATEST"),
                    lambda response, at: answers.append(response), "TIMEOUT", q.now_ms + 30_000)

    leader.pause(500)
    leader.handle_replica_request(list_offsets())  # held to start + 500
    q.run_until(start + 100)
    leader.crash(False)
    q.run_until(start + 200)
    leader.start("restart")
    q.run_until(start + 1000)  # past the old pause's end
    assert answers == []
    # The same request to the running process is answered (the link works).
    leader.handle_replica_request(list_offsets())
    q.run_until(start + 1100)
    assert len(answers) == 1 and answers[0] != "TIMEOUT"


@pytest.mark.parametrize(("deltas", "zookeeper"), [(True, False), (False, False), (False, True)])
def test_a_restarted_process_never_goes_back_to_a_throttle_its_start_already_saw_replaced(deltas: bool,
                                                                                           zookeeper: bool) -> None:
    """A process takes the controller's throttle configs as they stand when it starts. Updates sent to its predecessor
    and still in the channel carry older throttle changes: applied on top (at once for one addressed to the previous
    incarnation, or in the ZooKeeper-era mode, which addresses none), they throttled the follower again until the
    next update arrived (found by a review helper). Each update now says how many changes the controller had made;
    the process applies only those newer than what it started with."""
    from dataclasses import replace

    from tests.sim.helpers import run, scenario

    sc = scenario("unclean-election", duration_ms=3000)
    cluster, _, _ = run(replace(sc, faults=(), cluster=replace(sc.cluster, metadata_deltas=deltas,
                                                               fence_on_reregistration=not zookeeper)))
    q, controller, broker, network = cluster.queue, cluster.controller, cluster.brokers[2], cluster.network
    start = q.now_ms
    network.partition([controller.node_id], [2], two_way=False)  # the controller's channel to broker 2 queues
    controller._set_throttle("risky", ("0:1",), ("0:2",), 1000)
    q.run_until(start + 5)
    controller._set_throttle("risky", (), (), None)  # removed again: the controller throttles nothing
    q.run_until(start + 10)
    broker.crash(False)
    q.run_until(start + 20)
    broker.start("restart")
    q.run_until(start + 100)
    network.heal([controller.node_id], [2], two_way=False)
    throttled_at: list[int] = []

    def sample() -> None:
        quota = broker.follower_quota
        if quota is not None and quota.is_throttled("risky", 0):
            throttled_at.append(q.now_ms - start)

    q.run_until(start + 2000, sample, step_every=1)
    assert controller.throttles == {}
    assert throttled_at == []
    # A change made after the restart still reaches the process.
    controller._set_throttle("risky", ("0:1",), ("0:2",), 1000)
    q.run_until(start + 2500)
    assert broker.follower_quota is not None and broker.follower_quota.is_throttled("risky", 0)
