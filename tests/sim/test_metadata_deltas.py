"""A KRaft broker applies everything committed since its last read of the metadata log as one delta.

A broker reads the metadata log from its offset; `MetadataLoader.handleCommit` replays every batch of a read
into one `MetadataDelta` and publishes it once. A broker the controller could not reach for a while therefore
jumps to the newest registration of each partition, and never applies a state that a later record had
replaced (`Controller._deliver` with `coalesce`). `cluster.metadata_deltas: false` keeps one update per
delivery, as the ZooKeeper-era controller's LeaderAndIsr requests go.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from replication_core.partition import PartitionRegistration
from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.controller import MetadataUpdate, coalesce
from replication_core.sim.scenario import Scenario
from tests.sim.helpers import check, run, scenario

START = 1_700_000_000_000
A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def _reg(leader: int, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int) -> PartitionRegistration:
    return PartitionRegistration(leader, leader_epoch, isr, (1, 2, 3), partition_epoch)


def _update(states: dict[TopicPartition, PartitionRegistration], *, fenced: frozenset[int] = frozenset(),
            stop: tuple[tuple[TopicPartition, int], ...] = (), incarnation: int | None = 1,
            throttles: tuple[tuple[str, tuple[str, ...], tuple[str, ...], int | None], ...] = (),
            full_state: bool = False, throttle_version: int = 0) -> MetadataUpdate:
    return MetadataUpdate(states, fenced, frozenset(), stop, throttles, incarnation, ((1, 1),), full_state,
                          throttle_version)


def test_one_delta_keeps_the_newest_registration_of_each_partition_and_the_newest_broker_sets() -> None:
    older = _update({A: _reg(1, 0, (1, 2, 3), 0), B: _reg(2, 0, (1, 2, 3), 0)}, fenced=frozenset({3}),
                    throttles=(("t", ("0:1",), (), 100),), throttle_version=4)
    newer = _update({A: _reg(1, 0, (1, 2), 1)}, throttles=(("t", (), (), None),), full_state=True, throttle_version=5)
    delta = coalesce([older, newer])
    assert dict(delta.states) == {A: _reg(1, 0, (1, 2), 1), B: _reg(2, 0, (1, 2, 3), 0)}
    assert delta.fenced == frozenset() and delta.broker_epochs == ((1, 1),)
    assert delta.throttles == (("t", ("0:1",), (), 100), ("t", (), (), None))  # in order: the newest applies last
    assert delta.full_state and delta.incarnation == 1 and delta.stop == ()
    assert delta.throttle_version == 5  # the newest change it carries


def test_a_removal_after_a_registration_is_a_removal_and_a_registration_after_a_removal_is_a_registration() -> None:
    removed = coalesce([_update({A: _reg(1, 0, (1, 2, 3), 0)}), _update({}, stop=((A, 1),))])
    assert dict(removed.states) == {} and removed.stop == ((A, 1),)
    readded = coalesce([_update({}, stop=((A, 1),)), _update({A: _reg(1, 2, (1, 2), 3)})])
    assert dict(readded.states) == {A: _reg(1, 2, (1, 2), 3)} and readded.stop == ()


def test_a_single_update_is_its_own_delta_and_two_incarnations_do_not_mix() -> None:
    one = _update({A: _reg(1, 0, (1, 2, 3), 0)})
    assert coalesce([one]) is one
    with pytest.raises(ValueError, match="incarnations 1 and 2; expected one incarnation"):
        coalesce([one, _update({}, incarnation=2)])


def _follower_epochs_through_a_cut(sc: Scenario) -> tuple[list[int], list[int]]:
    """slow-follower (broker 3's disk stalls 10-35 s): the controller -> broker 2 link is cut from 12 s until the
    controller has committed both the shrink of 3 (partition epoch 1) and its expansion back (2). Returns the
    partition epochs follower 2 held of events-0, in the order it held them, and the controller's."""
    cluster, _events, _stats = run(sc)
    tp = TopicPartition("events", 0)
    info = cluster.controller.partitions[tp]
    ctrl = cluster.controller.node_id
    held: list[int] = []
    committed: list[int] = []
    cut = [False, False]  # cut, healed

    def step() -> None:
        if not cut[0] and cluster.queue.now_ms >= START + 12_000:
            cluster.network.partition([ctrl], [2], two_way=False)
            cut[0] = True
        if not committed or committed[-1] != info.partition_epoch:
            committed.append(info.partition_epoch)
        if cut[0] and not cut[1] and info.partition_epoch == 2:
            cluster.network.heal([ctrl], [2], two_way=False)
            cut[1] = True
        rm = cluster.brokers[2].rm
        if rm is not None and tp in rm.partitions:
            epoch = rm.partitions[tp].partition_epoch
            if not held or held[-1] != epoch:
                held.append(epoch)

    cluster.queue.run_until(START + 50_000, step, step_every=1)
    assert cut == [True, True]
    return held, committed


def test_a_broker_cut_off_from_the_controller_jumps_to_the_newest_partition_epoch() -> None:
    sc = scenario("slow-follower", duration_ms=10_000)
    held, committed = _follower_epochs_through_a_cut(sc)
    assert committed == [0, 1, 2]
    assert held == [0, 2]


def test_without_metadata_deltas_the_broker_applies_every_update_in_turn() -> None:
    sc = scenario("slow-follower", duration_ms=10_000)
    sc = replace(sc, cluster=replace(sc.cluster, metadata_deltas=False))
    assert not sc.cluster.coalesces_metadata
    held, committed = _follower_epochs_through_a_cut(sc)
    assert committed == [0, 1, 2]
    assert held == [0, 1, 2]


def test_the_zookeeper_era_channel_sends_one_leader_and_isr_at_a_time() -> None:
    sc = scenario("slow-follower", duration_ms=10_000)
    sc = replace(sc, cluster=replace(sc.cluster, fence_on_reregistration=False))
    assert sc.cluster.metadata_deltas and not sc.cluster.coalesces_metadata
    held, _committed = _follower_epochs_through_a_cut(sc)
    assert held == [0, 1, 2]


def test_a_run_with_metadata_deltas_is_clean() -> None:
    sc = scenario("slow-follower")
    _cluster, events, stats = run(sc)
    assert check(events, stats).problems == ()
