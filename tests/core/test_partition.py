"""Partition: epoch validation, produce acks / min ISR, follower side, events (plain pytest ports)."""

from __future__ import annotations

import pytest

from replication_core.config import ReplicationConfig
from replication_core.errors import (
    Errors,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    ReplogError,
)
from replication_core.event_log import EventLog
from replication_core.log import RecordBatch
from replication_core.partition import (
    LeaderAndIsr,
    Partition,
    PartitionRegistration,
    StaticBrokerMetadata,
)

T0 = 1_000_000


def reg(epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...], leader: int = 101,
        partition_epoch: int = 1, adding: tuple[int, ...] = ()) -> PartitionRegistration:
    return PartitionRegistration(leader, epoch, isr, replicas, partition_epoch, adding_replicas=adding)


def leader_partition(epoch: int = 5, isr: tuple[int, ...] = (101, 102), replicas: tuple[int, ...] = (101, 102),
                     min_isr: int = 1, events: EventLog | None = None, seed: int = 0) -> Partition:
    p = Partition("test-topic", 0, 101, ReplicationConfig(min_insync_replicas=min_isr), events=events)
    for _ in range(seed):
        p.log.append_as_leader(1, 10, 0, epoch - 1, T0)
    assert p.make_leader(reg(epoch, isr, replicas), T0)
    return p


def snapshot_error(p: Partition, epoch: int | None, leader_only: bool) -> str:
    try:
        p.fetch_offset_snapshot(epoch, leader_only)
        return "NONE"
    except ReplogError as exc:
        return str(exc.error)


@pytest.mark.parametrize(("delta", "expected"), [(0, "NONE"), (None, "NONE"), (-1, "FENCED_LEADER_EPOCH"),
                                                 (1, "UNKNOWN_LEADER_EPOCH")])
def test_leader_epoch_validation_on_leader(delta: int | None, expected: str) -> None:
    """PartitionTest.testLeaderEpochValidationOnLeader, testFetchOffsetSnapshotEpochValidationForLeader,
    testOffsetForLeaderEpochValidationForLeader, testFetchOffsetForTimestampEpochValidationForLeader."""
    p = leader_partition()
    epoch = None if delta is None else 5 + delta
    assert snapshot_error(p, epoch, True) == expected
    assert str(p.last_offset_for_leader_epoch(epoch, 5).error) == expected
    try:
        p.fetch_latest_offset(None, epoch)
        got = "NONE"
    except ReplogError as exc:
        got = str(exc.error)
    assert got == expected


@pytest.mark.parametrize(("delta", "leader_only", "expected"), [
    (0, True, "NOT_LEADER_OR_FOLLOWER"), (0, False, "NONE"), (None, True, "NOT_LEADER_OR_FOLLOWER"),
    (None, False, "NONE"), (-1, True, "FENCED_LEADER_EPOCH"), (-1, False, "FENCED_LEADER_EPOCH"),
    (1, True, "UNKNOWN_LEADER_EPOCH"), (1, False, "UNKNOWN_LEADER_EPOCH"),
])
def test_leader_epoch_validation_on_follower(delta: int | None, leader_only: bool, expected: str) -> None:
    """PartitionTest.testLeaderEpochValidationOnFollower, testFetchOffsetSnapshotEpochValidationForFollower,
    testOffsetForLeaderEpochValidationForFollower, testFetchOffsetForTimestampEpochValidationForFollower."""
    p = Partition("test-topic", 0, 101, ReplicationConfig())
    p.make_follower(reg(5, (101, 102), (101, 102), leader=102), T0)
    epoch = None if delta is None else 5 + delta
    assert snapshot_error(p, epoch, leader_only) == expected
    assert str(p.last_offset_for_leader_epoch(epoch, 5, leader_only).error) == expected
    try:
        p.fetch_latest_offset(None, epoch, leader_only)
        got = "NONE"
    except ReplogError as exc:
        got = str(exc.error)
    assert got == expected


def test_isr_can_expand_if_broker_epochs_match_with_kraft_metadata_cache() -> None:
    """PartitionTest.testIsrCanExpandedIfBrokerEpochsMatchWithKraftMetadataCache: a fetch whose broker
    epoch is bumped right after it (race) does not expand; the next fetch with the current epoch does,
    sending -1 for a replica that never fetched."""

    class RacyMetadata(StaticBrokerMetadata):
        """Returns the stale epoch for 102 once (inside the fetch), then the current one."""

        def __init__(self) -> None:
            super().__init__(epochs={101: 1101, 103: 1103})
            self.answers = [1101]

        def broker_epoch(self, broker_id: int) -> int | None:
            if broker_id == 102:
                return self.answers.pop(0) if self.answers else 1102
            return super().broker_epoch(broker_id)

    p = Partition("test-topic", 0, 101, ReplicationConfig(), metadata=RacyMetadata())
    for _ in range(10):
        p.log.append_as_leader(1, 10, 0, 4, T0)
    p.make_leader(reg(5, (101, 103), (101, 102, 103)), T0)
    info = p.fetch_records(102, 10, 1000, T0, broker_epoch=1101)
    r = p.get_replica(102)
    assert r is not None and (r.last_caught_up_time_ms, r.log_end_offset, r.broker_epoch) == (T0, 10, 1101)
    assert info.alter_partition is None and p.maximal_isr == {101, 103}
    info = p.fetch_records(102, 10, 1000, T0, broker_epoch=1102)
    assert info.alter_partition is not None
    assert p.maximal_isr == {101, 102, 103}
    sent = info.alter_partition.leader_and_isr
    assert dict(zip(sent.isr, sent.broker_epochs, strict=True)) == {101: 1101, 102: 1102, 103: -1}


def test_broker_without_alive_epoch_is_not_isr_eligible_with_kraft_metadata_cache() -> None:
    """`Partition.isReplicaIsrEligible`, KRaft branch: `isBrokerEpochIsrEligible(stored, cached)` needs both
    epochs defined, so a follower whose broker has no alive epoch in the metadata cache (not registered)
    is not eligible: its caught-up fetch does not expand the ISR. ZK-style metadata (no epoch table)
    keeps "alive is enough"."""
    md = StaticBrokerMetadata(epochs={1: 100, 2: 200})  # broker 3 unknown to the KRaft cache
    p = Partition("t", 0, 1, ReplicationConfig(), metadata=md)
    p.make_leader(PartitionRegistration(1, 5, (1,), (1, 2, 3), 1), T0)
    for i in range(3):
        p.log.append_as_leader(1, 10, i, 5, T0)
    info = p.fetch_records(3, 3, 1 << 20, T0, current_leader_epoch=5, broker_epoch=300)
    assert not p.is_replica_isr_eligible(3)
    assert info.alter_partition is None and p.maximal_isr == {1}
    info = p.fetch_records(2, 3, 1 << 20, T0, current_leader_epoch=5, broker_epoch=200)
    assert p.is_replica_isr_eligible(2) and info.alter_partition is not None

    zk = Partition("t", 0, 1, ReplicationConfig(), metadata=StaticBrokerMetadata())
    zk.make_leader(PartitionRegistration(1, 5, (1,), (1, 2, 3), 1), T0)
    for i in range(3):
        zk.log.append_as_leader(1, 10, i, 5, T0)
    info = zk.fetch_records(3, 3, 1 << 20, T0, current_leader_epoch=5, broker_epoch=300)
    assert zk.is_replica_isr_eligible(3) and info.alter_partition is not None


def test_update_assignment_and_isr() -> None:
    """PartitionTest.testUpdateAssignmentAndIsr: remote replicas follow the assignment, ongoing
    reassignment keeps adding/removing replicas."""
    p = Partition("test", 1, 0, ReplicationConfig())
    p.make_leader(PartitionRegistration(0, 1, (0, 1, 2, 3), (0, 1, 2, 3), 1, adding_replicas=(4, 5),
                                        removing_replicas=(1, 2)), T0)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((0, 1, 2, 3), (4, 5), (1, 2))
    assert sorted(p.remote_replicas) == [1, 2, 3] and p.isr == {0, 1, 2, 3}
    p.make_leader(PartitionRegistration(0, 1, (0, 3, 4, 5), (0, 3, 4, 5), 2), T0)
    assert sorted(p.remote_replicas) == [3, 4, 5] and p.isr == {0, 3, 4, 5}
    assert p.adding_replicas == () and p.removing_replicas == ()


def test_get_replica() -> None:
    """PartitionTest.testGetReplica: a partition that leads nothing has no replica states and refuses
    leader operations."""
    p = Partition("test-topic", 0, 101, ReplicationConfig())
    assert p.get_replica(102) is None
    with pytest.raises(NotLeaderOrFollowerError):
        p.append_records_to_leader(1, 10, 0, 1, T0)


def test_acks_all_rejected_before_append_under_min_isr() -> None:
    """Partition.appendRecordsToLeader: NOT_ENOUGH_REPLICAS with the committed ISR below min ISR;
    acks 0/1 still append (and the HW does not advance under min ISR)."""
    p = leader_partition(isr=(101,), replicas=(101, 102, 103), min_isr=2)
    with pytest.raises(NotEnoughReplicasError):
        p.append_records_to_leader(1, 10, 0, -1, T0)
    assert p.log.log_end_offset == 0
    p.append_records_to_leader(1, 10, 0, 1, T0)
    assert (p.log.log_end_offset, p.log.high_watermark) == (1, 0)


def test_check_enough_replicas_reach_offset_uses_maximal_isr() -> None:
    """Partition.checkEnoughReplicasReachOffset: done at HW >= required; NOT_ENOUGH_REPLICAS_AFTER_APPEND
    when the ISR shrank below min ISR after the append."""
    p = leader_partition(isr=(101, 102), replicas=(101, 102), min_isr=2)
    res = p.append_records_to_leader(2, 20, 7, -1, T0)
    assert res.batch.last_offset == 1 and not res.hw_incremented
    assert p.check_enough_replicas_reach_offset(2) == (False, Errors.NONE)
    p.fetch_records(102, 2, 1000, T0 + 1)
    assert p.log.high_watermark == 2
    assert p.check_enough_replicas_reach_offset(2) == (True, Errors.NONE)
    # The controller shrinks the ISR to the leader: min ISR 2 capped at RF 2 -> after-append error.
    p.make_leader(reg(5, (101,), (101, 102), partition_epoch=2), T0 + 2)
    assert p.check_enough_replicas_reach_offset(2) == (True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)


def test_leader_hw_with_single_replica_moves_on_append() -> None:
    """maybeIncrementLeaderHW after every leader append: ISR = {leader} advances the HW immediately."""
    p = leader_partition(isr=(101,), replicas=(101,))
    res = p.append_records_to_leader(3, 30, 1, -1, T0)
    assert res.hw_incremented and p.log.high_watermark == 3
    assert p.check_enough_replicas_reach_offset(3) == (True, Errors.NONE)


def test_response_carries_hw_before_the_fetch_update() -> None:
    """Appendix A ordering: the fetch response reports the HW captured before this fetch moved it."""
    p = leader_partition(seed=4)
    info = p.fetch_records(102, 4, 1000, T0)
    assert info.high_watermark == 0 and info.hw_incremented and p.log.high_watermark == 4
    info = p.fetch_records(102, 4, 1000, T0)
    assert info.high_watermark == 4 and not info.hw_incremented


def test_diverging_fetch_does_not_update_follower_state() -> None:
    """KAFKA-13141: a fetch answered with a diverging epoch leaves the follower state untouched."""
    p = leader_partition(seed=4)
    p.log.append_as_leader(1, 10, 0, 5, T0)
    # The follower claims epoch 4 up to offset 5, but epoch 4 ended at 4 on the leader.
    info = p.fetch_records(102, 5, 1000, T0, current_leader_epoch=5, last_fetched_epoch=4)
    assert info.diverging_epoch == (4, 4) and info.batches == ()
    r = p.get_replica(102)
    assert r is not None and r.log_end_offset == -1


def test_follower_high_watermark_and_log_start_offset() -> None:
    """processPartitionData: follower HW = min(leader HW, LEO) and may move back; LSO only increases."""
    events = EventLog()
    p = Partition("test-topic", 0, 102, ReplicationConfig(), events=events)
    p.make_follower(reg(3, (101, 102), (101, 102), leader=101), T0)
    p.append_records_to_follower([RecordBatch(0, 4, 3, 5, 50, 9)], T0)
    assert p.update_follower_high_watermark(10, T0) and p.log.high_watermark == 5
    assert p.update_follower_high_watermark(2, T0) and p.log.high_watermark == 2
    assert p.maybe_increment_log_start_offset(2, T0) and p.log.log_start_offset == 2
    assert not p.maybe_increment_log_start_offset(1, T0)
    types = [e["event_type"] for e in events]
    assert types == ["leadership_change", "append", "hw_change", "hw_change", "log_start_offset_change"]
    assert [e["hw"] for e in events if e["event_type"] == "hw_change"] == [5, 2]
    assert all(e.get("role") == "follower" for e in events[1:])


def test_shrink_event_lists_out_of_sync_replicas() -> None:
    """isr_change shrink events carry out_of_sync_replicas [{replica_id, leo, last_caught_up_time_ms}]."""
    events = EventLog()
    p = leader_partition(isr=(101, 102, 103), replicas=(101, 102, 103), events=events, seed=10)
    p.fetch_records(102, 10, 1000, T0)
    p.fetch_records(103, 3, 1000, T0)
    req = p.maybe_shrink_isr(T0 + 30001)
    assert req is not None and req.leader_and_isr.isr == (101, 102)
    shrink = [e for e in events if e["event_type"] == "isr_change"][-1]
    assert shrink["action"] == "shrink" and shrink["isr_state"] == "proposed"
    assert shrink["old_isr"] == [101, 102, 103] and shrink["isr"] == [101, 102]
    assert shrink["out_of_sync_replicas"] == [{"replica_id": 103, "leo": 3, "last_caught_up_time_ms": T0}]
    out = p.handle_alter_partition_response(req, LeaderAndIsr(101, 5, (101, 102), 2), T0 + 30002)
    assert out.hw_incremented and p.log.high_watermark == 10
    committed = [e for e in events if e["event_type"] == "isr_change"][-1]
    assert (committed["isr_state"], committed["isr"], committed["partition_epoch"]) == ("committed", [101, 102], 2)
    fetch_states = [e for e in events if e["event_type"] == "follower_fetch_state"]
    assert [(e["follower_id"], e["fetch_offset"], e["leo"]) for e in fetch_states] == [(102, 10, 10), (103, 3, 10)]


def test_stale_alter_partition_success_is_ignored() -> None:
    """handleAlterPartitionUpdate: a response with another leader epoch or an older partition epoch is
    ignored and the state stays pending."""
    p = leader_partition(isr=(101,), replicas=(101, 102), seed=10)
    req = p.fetch_records(102, 10, 1000, T0).alter_partition
    assert req is not None
    p.handle_alter_partition_response(req, LeaderAndIsr(101, 4, (101, 102), 2), T0)
    assert p.is_inflight and p.isr == {101}
    p.handle_alter_partition_response(req, LeaderAndIsr(101, 5, (101, 102), 0), T0)
    assert p.is_inflight and p.isr == {101}
    p.handle_alter_partition_response(req, LeaderAndIsr(101, 5, (101, 102), 1), T0)
    assert not p.is_inflight and p.isr == {101, 102}


def test_make_follower_never_truncates_and_leader_reelection_keeps_log() -> None:
    """Appendix A negative checks: makeFollower / makeLeader never truncate the local log."""
    p = leader_partition(seed=5)
    p.make_follower(reg(6, (101, 102), (101, 102), leader=102, partition_epoch=2), T0)
    assert p.log.log_end_offset == 5 and not p.is_leader and p.remote_replicas == {}
    assert p.make_leader(reg(7, (101, 102), (101, 102), partition_epoch=3), T0)
    assert p.log.log_end_offset == 5 and p.log.epoch_cache.latest_entry == (7, 5)
