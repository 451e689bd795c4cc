"""Fetch-state value types and fairness (reference §3.1, §3.9): `PartitionFetchState`, `PartitionStates`."""

from __future__ import annotations

from replication_core.partition_fetch_state import (
    DelayedItem,
    FailedPartitions,
    PartitionFetchState,
    PartitionStates,
    ReplicaState,
    TopicPartition,
)
from replication_core.truncation import TruncationProtocol
from tests.core.mock_leader import make_harness, mk_log, seed

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def fetching(offset: int, lag: int | None = None) -> PartitionFetchState:
    """A Fetching state at `offset` with epoch 0."""
    return PartitionFetchState(offset, 0, ReplicaState.FETCHING, lag)


def test_ready_truncating_delayed_and_in_sync_predicates() -> None:
    """`isReadyForFetch` / `isTruncating` / `isDelayed` / `isReplicaInSync`."""
    st = fetching(5)
    assert st.is_ready_for_fetch(0) and not st.is_truncating(0) and not st.is_replica_in_sync
    delayed = st.with_delay(100)
    assert delayed.is_delayed(99) and not delayed.is_ready_for_fetch(99)
    assert not delayed.is_delayed(100) and delayed.is_ready_for_fetch(100)
    assert PartitionFetchState(5, 0, ReplicaState.TRUNCATING).is_truncating(0)
    assert fetching(5, lag=0).is_replica_in_sync and not fetching(5, lag=3).is_replica_in_sync
    assert DelayedItem(10).remaining_ms(4) == 6 and DelayedItem(10).remaining_ms(40) == 0


def test_update_and_move_to_end_and_grouped_set() -> None:
    """`updateAndMoveToEnd` re-inserts at the tail; `set(map)` regroups partitions by topic."""
    states = PartitionStates()
    for tp in (A0, B0, A1):
        states.update_and_move_to_end(tp, fetching(0))
    states.update_and_move_to_end(A0, fetching(1))
    assert list(states) == [B0, A1, A0]
    states.update(B0, fetching(7))
    assert list(states) == [B0, A1, A0]
    states.set_all(dict(states.items()))
    assert list(states) == [B0, A1, A0]  # topics in first-seen order: b, then a
    mixed = PartitionStates()
    for tp in (A0, B0, A1):
        mixed.update(tp, fetching(0))
    mixed.set_all(dict(mixed.items()))
    assert list(mixed) == [A0, A1, B0]


def test_fetch_state_prints_like_kafka() -> None:
    """`PartitionFetchState.toString` (reference §3.1)."""
    st = PartitionFetchState(100, 5, ReplicaState.FETCHING, 3, DelayedItem(1250, 250), 4, "abc")
    assert str(st) == ("FetchState(topicId=Some(abc), fetchOffset=100, currentLeaderEpoch=5, "
                       "lastFetchedEpoch=Some(4), state=Fetching, lag=Some(3), delay=250ms)")


def test_failed_partitions_set() -> None:
    """`FailedPartitions`: add, removeAll, contains."""
    failed = FailedPartitions()
    failed.add(A0)
    failed.add(B0)
    failed.remove_all([A0])
    assert not failed.contains(A0) and failed.contains(B0) and len(failed) == 1


def test_partitions_that_got_data_go_last_in_the_next_fetch() -> None:
    """Fairness (§3.9): a partition that received data moves to the end; an empty answer keeps its place."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    p0, p1 = TopicPartition("t", 0), TopicPartition("t", 1)
    h.add(p0, mk_log(seed(0, 1, 0), hw=1, tp=p0), 1, 0)
    h.add(p1, mk_log(seed(0, 1, 0), hw=1, tp=p1), 1, 0)
    h.leader.set_leader(p0, seed(0, 4, 0), 0, 4)   # p0 has data to fetch
    h.leader.set_leader(p1, seed(0, 1, 0), 0, 1)   # p1 is caught up
    for _ in range(3):
        h.do_work()
    orders = [list(r.partitions) for r in h.leader.fetch_requests]
    # 1st response: both move (p0 got data, p1 got its first lag); then only p0 keeps moving.
    assert orders == [[p0, p1], [p0, p1], [p1, p0]]


def test_backed_off_partition_moves_to_the_end() -> None:
    """`delayPartitions`: a delayed partition is moved to the end of the fetch order."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    p0, p1 = TopicPartition("t", 0), TopicPartition("t", 1)
    for tp in (p0, p1):
        h.add(tp, mk_log(seed(0, 1, 0), hw=1, tp=tp), 1, 0)
        h.leader.set_leader(tp, seed(0, 1, 0), 0, 1)
    h.leader.fetch_errors = {p0: "NOT_LEADER_OR_FOLLOWER"}
    h.do_work()
    assert list(h.fetcher.partition_states)[-1] == p0
