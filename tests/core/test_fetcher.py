"""Conformance: Kafka's `AbstractFetcherThreadTest` (reference §7.1) ported to `ReplicaFetcherThread`.

Kafka runs every case twice: with truncation on fetch (latest fetch version) and as
`AbstractFetcherThreadWithIbp26Test` (OffsetsForLeaderEpoch, no truncate-on-fetch). Here those are the
`diverging_epoch` and `leader_epoch` protocols. End states are Kafka's; intermediate offsets are
re-derived with the real epoch-cache rules (the mock leader is backed by a real `Log`), and where the
real rules take a different path than Kafka's mock the docstring says so.
"""

from __future__ import annotations

import pytest

from replication_core.config import ReplicationConfig
from replication_core.errors import Errors, IllegalStateError
from replication_core.fetcher import ReplicaFetcherThread
from replication_core.leader_endpoint import (
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
)
from replication_core.partition import Partition, PartitionRegistration
from replication_core.partition_fetch_state import (
    BrokerEndPoint,
    EpochEndOffset,
    InitialFetchState,
    ReplicaState,
    TopicPartition,
)
from replication_core.truncation import TruncationProtocol
from tests.core.mock_leader import (
    InstrumentedLog,
    log_signature,
    make_harness,
    mk_batch,
    mk_log,
    seed,
)

TP = TopicPartition("topic", 0)
BOTH = [TruncationProtocol.DIVERGING_EPOCH, TruncationProtocol.LEADER_EPOCH]
BACKOFF = 1000


@pytest.mark.parametrize("protocol", BOTH)
def test_simple_fetch(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testSimpleFetch: one doWork replicates [0-1]@e0 and the HW."""
    h = make_harness(protocol)
    h.add(TP, mk_log([]), fetch_offset=0, leader_epoch=0)
    h.leader.set_leader(TP, [mk_batch(0, 0, records=2)], leader_epoch=0, hw=2)
    h.do_work()
    log = h.logs[TP]
    assert (log.log_end_offset, log.high_watermark) == (2, 2)
    assert h.state(TP).fetch_offset == 2


@pytest.mark.parametrize("protocol", BOTH)
def test_delay(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testDelay: a failed fetch request backs every partition off."""
    h = make_harness(protocol, ReplicationConfig(replica_fetch_backoff_ms=250))
    h.add(TP, mk_log([]), 0, 0)
    h.leader.set_leader(TP, [mk_batch(0, 0)], 0, 1)
    h.leader.request_error = Errors.UNKNOWN_TOPIC_ID
    h.do_work()
    assert h.state(TP).is_delayed(h.now_ms)
    h.leader.request_error = None
    result = h.do_work(advance_ms=249)
    assert not result.fetch_sent and result.idle_backoff_ms == 250
    assert h.leader.fetch_count == 1
    assert h.do_work(advance_ms=1).fetch_sent
    assert h.logs[TP].log_end_offset == 1


@pytest.mark.parametrize("protocol", BOTH)
def test_partitions_in_error(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testPartitionsInError: only the errored partitions are delayed."""
    h = make_harness(protocol)
    tps = [TopicPartition("topic", p) for p in range(3)]
    for tp in tps:
        h.add(tp, mk_log([], tp=tp), 0, 0)
        h.leader.set_leader(tp, [mk_batch(0, 0)], 0, 1)
    h.leader.fetch_errors = {tps[0]: Errors.UNKNOWN_TOPIC_ID, tps[1]: Errors.INCONSISTENT_TOPIC_ID}
    h.do_work()
    assert [h.state(tp).is_delayed(h.now_ms) for tp in tps] == [True, True, False]
    assert [h.logs[tp].log_end_offset for tp in tps] == [0, 0, 1]


@pytest.mark.parametrize("protocol", BOTH)
def test_fenced_truncation(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testFencedTruncation: same-epoch FENCED reply -> removed and failed.

    Kafka forces an empty replica into Truncating; with real rules an empty log truncates to its HW
    locally, so the fence arrives on the fetch (truncate-on-fetch) or, with a replicated batch, on
    the OffsetsForLeaderEpoch round (leader_epoch). End state as Kafka: failed, nothing fetched.
    """
    h = make_harness(protocol)
    batches = [] if protocol is TruncationProtocol.DIVERGING_EPOCH else [mk_batch(0, 0)]
    h.add(TP, mk_log(batches), 0, leader_epoch=0)
    h.leader.set_leader(TP, [mk_batch(0, 1, records=2)], leader_epoch=1, hw=2)
    h.do_work()
    assert h.fetcher.fetch_state(TP) is None
    assert h.fetcher.failed_partitions.contains(TP)
    assert h.logs[TP].log_end_offset == len(batches)
    assert h.logs[TP].high_watermark == 0
    if protocol is TruncationProtocol.LEADER_EPOCH:
        assert h.leader.epoch_request_count == 1 and h.leader.fetch_count == 0
    assert h.events[-1]["event_type"] == "fetcher_change" and h.events[-1]["action"] == "removed"


@pytest.mark.parametrize("protocol", BOTH)
def test_fenced_fetch(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testFencedFetch: leader bumps to epoch 1 -> fetch fenced -> failed."""
    h = make_harness(protocol)
    h.add(TP, mk_log([]), 0, 0)
    leader = h.leader.set_leader(TP, [mk_batch(0, 0, records=2)], 0, 2)
    h.do_work()
    assert h.logs[TP].log_end_offset == 2
    leader.become_leader(1)
    h.do_work()
    assert h.fetcher.fetch_state(TP) is None
    assert h.fetcher.failed_partitions.contains(TP)
    assert h.logs[TP].log_end_offset == 2


@pytest.mark.parametrize("protocol", BOTH)
def test_unknown_leader_epoch_in_truncation(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testUnknownLeaderEpochInTruncation: leader behind -> retry, then converge.

    The follower already holds [0]@e0 so that it truncates through the leader (an empty log would
    truncate to its HW locally); in truncate-on-fetch mode the UNKNOWN_LEADER_EPOCH comes on the fetch.
    """
    h = make_harness(protocol)
    h.add(TP, mk_log([mk_batch(0, 0)]), 1, leader_epoch=1)
    leader = h.leader.set_leader(TP, [mk_batch(0, 0)], leader_epoch=0, hw=1)
    h.do_work()
    st = h.state(TP)
    assert st.is_delayed(h.now_ms)
    expected_state = ReplicaState.TRUNCATING if protocol is TruncationProtocol.LEADER_EPOCH else ReplicaState.FETCHING
    assert st.state is expected_state
    assert h.logs[TP].log_end_offset == 1
    leader.become_leader(1)
    h.do_work(advance_ms=BACKOFF)
    st = h.state(TP)
    assert st.state is ReplicaState.FETCHING and not st.is_delayed(h.now_ms)
    assert h.logs[TP].log_end_offset == 1 and st.fetch_offset == 1


@pytest.mark.parametrize("protocol", BOTH)
def test_unknown_leader_epoch_while_fetching(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testUnknownLeaderEpochWhileFetching: stuck at 1 while the leader is behind."""
    h = make_harness(protocol)
    h.add(TP, mk_log([]), 0, leader_epoch=1)
    leader = h.leader.set_leader(TP, [mk_batch(0, 0), mk_batch(1, 0)], leader_epoch=1, hw=2)
    h.do_work()
    assert h.logs[TP].log_end_offset == 1
    leader.set_epoch_without_cache(0)
    h.do_work()
    assert h.logs[TP].log_end_offset == 1 and h.state(TP).state is ReplicaState.FETCHING
    assert h.events[-1]["event_type"] == "fetch_response" and h.events[-1]["error"] == "UNKNOWN_LEADER_EPOCH"
    leader.set_epoch_without_cache(1)
    h.do_work(advance_ms=BACKOFF)
    assert h.logs[TP].log_end_offset == 2


@pytest.mark.parametrize("protocol", BOTH)
def test_truncation(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testTruncation: iterative epoch walk-back to offset 0, then converge.

    Real rules: leader cache {1@0, 3@1, 5@2}; the follower (epochs 0, 2, 4) is told (3, 2) -> truncate
    to 2 (incomplete), (1, 1) -> 1 (incomplete), (0, 0) -> 0 (complete), then fetches all three.
    """
    h = make_harness(protocol)
    replica = mk_log([mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)], hw=0)
    h.add(TP, replica, fetch_offset=3, leader_epoch=5)
    h.leader.set_leader(TP, [mk_batch(0, 1), mk_batch(1, 3), mk_batch(2, 5)], leader_epoch=5, hw=2)
    h.converge(TP)
    assert replica.truncate_calls == [2, 1, 0]
    assert (replica.log_start_offset, replica.log_end_offset, replica.high_watermark) == (0, 3, 2)
    assert log_signature(replica) == log_signature(h.leader.partitions[TP].log)
    reasons = [e["reason"] for e in h.events if e["event_type"] == "truncation"]
    expected = "diverging_epoch" if protocol is TruncationProtocol.DIVERGING_EPOCH else "leader_epoch"
    assert reasons == [expected] * 3


def test_truncate_to_high_watermark_if_leader_epoch_request_not_supported() -> None:
    """AbstractFetcherThreadTest.testTruncateToHighWatermarkIfLeaderEpochRequestNotSupported (pre-0.11)."""
    h = make_harness(TruncationProtocol.HIGH_WATERMARK)
    replica = mk_log([mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)], hw=2)
    h.add(TP, replica, fetch_offset=2, leader_epoch=5)
    work = h.fetcher.work(0)
    request = next(work)
    assert isinstance(request, FetchRequest)  # truncation was local: no OffsetsForLeaderEpoch
    assert replica.truncate_calls == [2] and replica.log_end_offset == 2
    st = h.state(TP)
    assert st.fetch_offset == 2 and st.is_ready_for_fetch(0)
    assert request.partitions[TP].fetch_offset == 2
    assert request.partitions[TP].last_fetched_epoch is None


class _NoEpochLog(InstrumentedLog):
    """Old message format: batches carry no leader epoch, so `latestEpoch` is undefined."""

    @property
    def latest_epoch(self) -> int | None:
        """Always undefined (no epochs in old-format batches)."""
        return None


@pytest.mark.parametrize("protocol", BOTH)
def test_truncate_to_high_watermark_if_leader_epoch_info_not_available(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testTruncateToHighWatermarkIfLeaderEpochInfoNotAvailable."""
    h = make_harness(protocol)
    replica = _NoEpochLog("topic", 0, 2)
    replica.append_as_follower([mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)])
    replica.update_high_watermark(2)
    h.add(TP, replica, fetch_offset=2, leader_epoch=5)
    h.leader.set_leader(TP, [], leader_epoch=5, hw=0)
    work = h.fetcher.work(0)
    next(work)
    assert replica.truncate_calls == [2] and replica.log_end_offset == 2
    assert h.state(TP).fetch_offset == 2 and h.state(TP).state is ReplicaState.FETCHING


def test_truncate_to_high_watermark_during_remove_partitions() -> None:
    """AbstractFetcherThreadTest.testTruncateToHighWatermarkDuringRemovePartitions: removed -> no truncation."""
    h = make_harness(TruncationProtocol.HIGH_WATERMARK)
    replica = mk_log([mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)], hw=2)
    h.add(TP, replica, fetch_offset=2, leader_epoch=5)
    h.fetcher.remove_partitions({TP})
    h.fetcher._truncate_to_high_watermark([TP])
    assert replica.log_end_offset == 3 and replica.truncate_calls == []
    assert h.fetcher.fetch_state(TP) is None


@pytest.mark.parametrize("protocol", BOTH)
def test_truncation_skipped_if_no_epoch_change(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testTruncationSkippedIfNoEpochChange: re-adding at the same epoch keeps state."""
    h = make_harness(protocol)
    replica = mk_log([])
    h.add(TP, replica, 0, leader_epoch=5)
    h.leader.set_leader(TP, [mk_batch(0, 1), mk_batch(1, 3), mk_batch(2, 5)], leader_epoch=5, hw=2)
    h.do_work()
    assert len(replica.truncate_calls) == 1 and replica.log_end_offset == 1
    h.fetcher.add_partitions({TP: InitialFetchState(BrokerEndPoint(1), 5, 3)}, h.now_ms)
    assert h.state(TP).fetch_offset == 1  # state kept, not reset to 3
    h.do_work()
    assert len(replica.truncate_calls) == 1 and replica.log_end_offset == 2


def test_truncation_on_fetch_skipped_if_partition_removed() -> None:
    """AbstractFetcherThreadTest.testTruncationOnFetchSkippedIfPartitionRemoved."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    replica = mk_log([mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)], hw=2)
    h.add(TP, replica, fetch_offset=3, leader_epoch=5)
    h.fetcher._truncate_on_fetch_response({TP: EpochEndOffset(Errors.NONE, 4, 3)})
    assert replica.truncate_calls == [3]
    removed = h.fetcher.remove_partitions({TP})
    assert removed[TP].fetch_offset == 3
    h.fetcher._truncate_on_fetch_response({TP: EpochEndOffset(Errors.NONE, 4, 2)})
    assert replica.truncate_calls == [3] and replica.log_end_offset == 3


@pytest.mark.parametrize("protocol", BOTH)
def test_follower_fetch_out_of_range_high(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh: leader log wiped -> follower empties too.

    Real rules with truncate-on-fetch: the wiped leader still caches epoch 4 at offset 0, so it
    answers DivergingEpoch (4, 0) instead of OFFSET_OUT_OF_RANGE; the end state is Kafka's.
    """
    h = make_harness(protocol)
    batches = [mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)]
    replica = mk_log(batches, hw=0)
    h.add(TP, replica, 3, leader_epoch=4)
    h.leader.set_leader(TP, batches, leader_epoch=4, hw=3)
    h.do_work()
    assert replica.log_end_offset == 3
    h.leader.set_leader(TP, [], leader_epoch=4, hw=0)
    h.do_work()
    assert (replica.log_end_offset, replica.log_start_offset, replica.high_watermark) == (0, 0, 0)
    (trunc,) = [e for e in h.events if e["event_type"] == "truncation"]
    expected = "diverging_epoch" if protocol is TruncationProtocol.DIVERGING_EPOCH else "out_of_range"
    assert (trunc["reason"], trunc["old_leo"], trunc["truncate_offset"]) == (expected, 3, 0)
    assert h.state(TP).fetch_offset == 0


@pytest.mark.parametrize("protocol", BOTH)
def test_fenced_offset_reset_after_out_of_range(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testFencedOffsetResetAfterOutOfRange: fenced ListOffsets -> failed."""
    h = make_harness(protocol)
    h.add(TP, mk_log([]), 0, leader_epoch=4)
    h.leader.set_leader(TP, [mk_batch(1, 2), mk_batch(2, 4)], leader_epoch=4, hw=2)
    h.leader.list_offsets_errors[TP] = [None, Errors.FENCED_LEADER_EPOCH]  # latest ok, earliest fenced
    h.do_work()
    assert h.leader.list_offsets_count == 2
    assert h.logs[TP].log_end_offset == 0
    assert h.fetcher.fetch_state(TP) is None and h.fetcher.failed_partitions.contains(TP)


@pytest.mark.parametrize("protocol", BOTH)
def test_follower_fetch_out_of_range_low(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testFollowerFetchOutOfRangeLow: below the leader LSO -> truncate fully.

    Truncate-on-fetch: doWork 1 gets DivergingEpoch (0, 2) and truncates to 1 (a no-op), doWork 2 gets
    OFFSET_OUT_OF_RANGE and restarts the log at the leader start 2 (as Kafka: two doWorks). With
    OffsetsForLeaderEpoch both steps happen in the first doWork.
    """
    h = make_harness(protocol)
    replica = mk_log([mk_batch(0, 0)], hw=0)
    h.add(TP, replica, fetch_offset=3, leader_epoch=4)
    h.leader.set_leader(TP, [mk_batch(2, 4)], leader_epoch=4, hw=2)
    h.do_work()
    if protocol is TruncationProtocol.DIVERGING_EPOCH:
        assert replica.log_end_offset == 1 and h.state(TP).fetch_offset == 1
        h.do_work()
    assert h.state(TP).state is ReplicaState.FETCHING
    assert replica.log_start_offset == 2 and replica.batches == ()
    h.converge(TP)
    leader = h.leader.partitions[TP].log
    assert (replica.log_start_offset, replica.log_end_offset, replica.high_watermark) == (
        leader.log_start_offset, leader.log_end_offset, leader.high_watermark) == (2, 3, 2)


@pytest.mark.parametrize("protocol", BOTH)
def test_retry_after_unknown_leader_epoch_in_latest_offset_fetch(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testRetryAfterUnknownLeaderEpochInLatestOffsetFetch: backoff, then converge."""
    h = make_harness(protocol)
    replica = mk_log([mk_batch(0, 0)], hw=0)
    h.add(TP, replica, fetch_offset=3, leader_epoch=4)
    h.leader.set_leader(TP, [mk_batch(2, 4)], leader_epoch=4, hw=2)
    h.leader.list_offsets_errors[TP] = [Errors.UNKNOWN_LEADER_EPOCH]
    h.do_work()
    assert h.state(TP).state is ReplicaState.FETCHING
    h.converge(TP, step_ms=BACKOFF)
    assert (replica.log_start_offset, replica.log_end_offset, replica.high_watermark) == (2, 3, 2)


@pytest.mark.parametrize("protocol", BOTH)
def test_corrupt_message(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testCorruptMessage: a corrupt batch backs off (not failed), then LEO 2."""
    h = make_harness(protocol)
    h.add(TP, mk_log([]), 0, 0)
    h.leader.set_leader(TP, [mk_batch(0, 0, records=2)], 0, 2)
    h.leader.corrupt_next.add(TP)
    h.do_work()
    assert h.logs[TP].log_end_offset == 0
    assert h.state(TP).is_delayed(h.now_ms) and not h.fetcher.failed_partitions.contains(TP)
    h.do_work(advance_ms=BACKOFF)
    assert h.logs[TP].log_end_offset == 2


@pytest.mark.parametrize("leader_epoch_on_leader", [0, 1])
def test_leader_epoch_change_during_fetch_epochs_from_leader(leader_epoch_on_leader: int) -> None:
    """AbstractFetcherThreadTest.testLeaderEpochChangeDuringFencedFetchEpochsFromLeader (leader at 1) /
    ...DuringSuccessfulFetchEpochsFromLeader (leader at 0): the reply is ignored, then converge."""
    tp = TopicPartition("topic", 1)
    h = make_harness(TruncationProtocol.LEADER_EPOCH)
    h.add(tp, mk_log([mk_batch(0, 0)], tp=tp), 0, leader_epoch=0)
    h.leader.set_leader(tp, [mk_batch(0, 0)], leader_epoch=leader_epoch_on_leader, hw=0)
    work = h.fetcher.work(0)
    request = next(work)
    assert isinstance(request, OffsetsForLeaderEpochRequest)
    response = h.leader.fetch_epoch_end_offsets(request)
    # The epoch moves to 1 on the follower while the request is in flight.
    h.fetcher.remove_partitions({tp})
    h.fetcher.add_partitions({tp: InitialFetchState(BrokerEndPoint(1), 1, 0)}, 0)
    with pytest.raises(StopIteration):
        work.send((response, 0))
    st = h.state(tp)
    assert st.state is ReplicaState.TRUNCATING and st.current_leader_epoch == 1
    assert h.logs[tp].truncate_calls == []
    if leader_epoch_on_leader < 1:
        h.leader.partitions[tp].become_leader(1)
    h.do_work()
    assert log_signature(h.logs[tp]) == log_signature(h.leader.partitions[tp].log)
    assert h.state(tp).state is ReplicaState.FETCHING


def test_truncate_to_epoch_end_offsets_during_remove_partitions() -> None:
    """AbstractFetcherThreadTest.testTruncateToEpochEndOffsetsDuringRemovePartitions: no state recreated."""
    h = make_harness(TruncationProtocol.LEADER_EPOCH)
    replica = mk_log([mk_batch(0, 0)])
    h.add(TP, replica, 0, leader_epoch=0)
    h.leader.set_leader(TP, [mk_batch(0, 0)], leader_epoch=0, hw=0)
    work = h.fetcher.work(0)
    request = next(work)
    assert isinstance(request, OffsetsForLeaderEpochRequest)
    response = h.leader.fetch_epoch_end_offsets(request)
    h.fetcher.remove_partitions({TP})
    with pytest.raises(StopIteration):
        work.send((response, 0))
    assert h.fetcher.fetch_state(TP) is None and replica.truncate_calls == []
    h.leader.partitions[TP].become_leader(1)
    assert not h.do_work().fetch_sent  # nothing left to do, and nothing breaks
    assert replica.log_end_offset == 1


def test_truncation_throws_if_leader_returns_partitions_not_requested_in_fetch_epochs() -> None:
    """AbstractFetcherThreadTest.testTruncationThrowsExceptionIfLeaderReturnsPartitionsNotRequestedInFetchEpochs."""
    h = make_harness(TruncationProtocol.LEADER_EPOCH)
    h.add(TP, mk_log([mk_batch(0, 0)]), 0, leader_epoch=0)
    h.leader.set_leader(TP, [mk_batch(0, 0)], leader_epoch=0, hw=0)
    h.leader.scripted_epoch_answers = {TopicPartition("topic2", 0): [EpochEndOffset(Errors.NONE, 0, 0)]}
    with pytest.raises(IllegalStateError, match="not requested"):
        h.do_work()


@pytest.mark.parametrize("protocol", BOTH)
def test_fetcher_thread_handling_partition_failure_during_appending(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testFetcherThreadHandlingPartitionFailureDuringAppending."""
    h = make_harness(protocol)
    p1, p2 = TopicPartition("topic", 1), TopicPartition("topic", 2)
    log1 = mk_log([], tp=p1)
    h.add(p1, log1, 0, 0)
    h.add(p2, mk_log([], tp=p2), 0, 0)
    for tp in (p1, p2):
        h.leader.set_leader(tp, [mk_batch(0, 0), mk_batch(1, 0)], 0, 2)
    log1.failing_append = True
    h.do_work()
    assert h.fetcher.fetch_state(p1) is None and h.fetcher.failed_partitions.contains(p1)
    assert h.state(p2).state is ReplicaState.FETCHING and h.logs[p2].log_end_offset == 1
    log1.failing_append = False
    h.leader.partitions[p1].become_leader(1)
    h.fetcher.add_partitions({p1: InitialFetchState(BrokerEndPoint(1), 1, 0)}, h.now_ms)
    assert not h.fetcher.failed_partitions.contains(p1)
    assert h.state(p1).state is ReplicaState.TRUNCATING  # empty log: no latest epoch


@pytest.mark.parametrize("protocol", BOTH)
def test_fetcher_thread_handling_partition_failure_during_truncation(protocol: TruncationProtocol) -> None:
    """AbstractFetcherThreadTest.testFetcherThreadHandlingPartitionFailureDuringTruncation."""
    h = make_harness(protocol)
    p1, p2 = TopicPartition("topic", 1), TopicPartition("topic", 2)
    log1 = mk_log([], tp=p1)
    h.add(p1, log1, 0, 0)
    h.add(p2, mk_log([], tp=p2), 0, 0)
    for tp in (p1, p2):
        h.leader.set_leader(tp, [mk_batch(0, 0)], 0, 1)
    log1.failing_truncate = True
    h.do_work()
    assert h.fetcher.fetch_state(p1) is None and h.fetcher.failed_partitions.contains(p1)
    assert h.state(p2).state is ReplicaState.FETCHING
    log1.failing_truncate = False
    h.fetcher.add_partitions({p1: InitialFetchState(BrokerEndPoint(1), 1, 0)}, h.now_ms)
    assert not h.fetcher.failed_partitions.contains(p1)
    assert h.state(p1).state is ReplicaState.TRUNCATING


def test_diverging_epochs() -> None:
    """AbstractFetcherThreadTest.testDivergingEpochs: one doWork truncates to 2 (lastFetchedEpoch 2)."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    replica = mk_log([mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)], hw=0)
    h.add(TP, replica, fetch_offset=3, leader_epoch=5)
    assert h.state(TP).last_fetched_epoch == 4
    h.leader.set_leader(TP, [mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 5)], leader_epoch=5, hw=2)
    h.do_work()
    assert replica.truncate_calls == [2]
    assert h.state(TP).last_fetched_epoch == 2 and h.state(TP).fetch_offset == 2
    assert h.leader.epoch_request_count == 0
    h.converge(TP)
    assert h.state(TP).last_fetched_epoch == 5
    assert log_signature(replica) == log_signature(h.leader.partitions[TP].log)


def test_truncate_on_fetch_does_not_process_partition_data() -> None:
    """AbstractFetcherThreadTest.testTruncateOnFetchDoesNotProcessPartitionData: records and HW ignored."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    replica = mk_log([mk_batch(0, 0), mk_batch(1, 0), mk_batch(2, 2), mk_batch(3, 4, records=3)], hw=1)
    h.add(TP, replica, fetch_offset=3, leader_epoch=5)
    leader_batches = [mk_batch(0, 0), mk_batch(1, 0), mk_batch(2, 2), mk_batch(3, 5), mk_batch(4, 5)]
    h.leader.set_leader(TP, leader_batches, leader_epoch=5, hw=4)
    h.do_work()
    assert len(replica.truncate_calls) == 1 and replica.append_calls == 0
    assert replica.log_end_offset == 3 and replica.high_watermark == 1
    h.converge(TP)
    assert (replica.log_end_offset, replica.high_watermark) == (5, 4)
    assert len(replica.truncate_calls) == 1


def test_emitted_fetch_and_response_events() -> None:
    """`fetch` / `fetch_response` events carry what the request and response said."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    replica = mk_log([mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 4)], hw=0)
    h.add(TP, replica, fetch_offset=3, leader_epoch=5)
    h.leader.set_leader(TP, [mk_batch(0, 0), mk_batch(1, 2), mk_batch(2, 5)], leader_epoch=5, hw=2)
    h.do_work()
    fetch, response = [e for e in h.events if e["event_type"] in ("fetch", "fetch_response")]
    assert (fetch["leader_id"], fetch["fetcher_id"], fetch["fetch_offset"], fetch["leader_epoch"],
            fetch["last_fetched_epoch"]) == (1, 0, 3, 5, 4)
    assert (response["error"], response["diverging_epoch"], response["diverging_end_offset"],
            response["leader_hw"], response["record_count"]) == ("NONE", 2, 2, 2, 0)


def test_request_failure_backs_off_every_partition_of_the_thread() -> None:
    """`processFetchRequest`: an exception from `leader.fetch` delays all partitions (not only the sent ones)."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    h.add(TP, mk_log([]), 0, 0)
    h.leader.set_leader(TP, [mk_batch(0, 0)], 0, 1)
    work = h.fetcher.work(0)
    next(work)
    other = TopicPartition("other", 0)
    h.add(other, mk_log([], tp=other), 0, 0)
    with pytest.raises(StopIteration):
        work.send((FetchResponse({}, Errors.NETWORK_EXCEPTION), 5))
    delay = h.state(TP).delay
    assert delay is not None and delay.due_ms == 5 + BACKOFF
    assert h.state(other).is_delayed(5)


def test_fenced_reply_for_an_older_request_epoch_is_ignored_instead_of_failing() -> None:
    """The thread already has a newer epoch when the FENCED_LEADER_EPOCH answer to its older request arrives: the
    answer is ignored (`processFetchRequest` takes a partition's answer only in the epoch it asked in, KAFKA-18991;
    before it, `onPartitionFenced` saw the epochs differ and backed the partition off, reference §3.8), so the
    partition is neither failed nor delayed and fetches in its new epoch at once."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    h.add(TP, mk_log([mk_batch(0, 0)]), 1, leader_epoch=0)
    leader = h.leader.set_leader(TP, seed(0, 3, 0), 0, 3)
    work = h.fetcher.work(0)
    request = next(work)
    assert isinstance(request, FetchRequest) and request.partitions[TP].current_leader_epoch == 0
    leader.become_leader(1)
    response = h.leader.fetch(request)  # FENCED_LEADER_EPOCH for epoch 0
    h.fetcher.add_partitions({TP: InitialFetchState(BrokerEndPoint(1), 1, 1)}, 0)  # new epoch meanwhile
    with pytest.raises(StopIteration):
        work.send((response, 0))
    assert not h.fetcher.failed_partitions.contains(TP)
    assert h.state(TP).current_leader_epoch == 1 and not h.state(TP).is_delayed(0)


@pytest.mark.parametrize(("protocol", "version"), [(TruncationProtocol.DIVERGING_EPOCH, 12),
                                                   (TruncationProtocol.LEADER_EPOCH, 11)])
def test_fetch_request_carries_the_protocol_fetch_version(protocol: TruncationProtocol, version: int) -> None:
    """`FetchRequest.Builder.forReplica(version, ...)`: the request says which version the leader answers
    in (and sizes its response in for the replication quota)."""
    h = make_harness(protocol)
    h.add(TP, mk_log([]), fetch_offset=0, leader_epoch=0)
    h.leader.set_leader(TP, [mk_batch(0, 0)], leader_epoch=0, hw=1)
    request = next(h.fetcher.work(0))
    assert isinstance(request, FetchRequest) and request.version == version


def test_follower_events_come_from_the_log_with_follower_role() -> None:
    """Appends / HW / log-start changes are emitted by the follower's `Log` (role follower)."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    h.add(TP, mk_log([]), 0, 0)
    h.leader.set_leader(TP, seed(0, 3, 0), 0, 2, log_start_offset=0)
    h.do_work()
    kinds = [(e["event_type"], e.get("role")) for e in h.events
             if e["event_type"] in ("append", "hw_change", "log_start_offset_change")]
    assert kinds == [("append", "follower"), ("hw_change", "follower")]
    hw = next(e for e in h.events if e["event_type"] == "hw_change")
    assert (hw["old_hw"], hw["hw"]) == (0, 1)  # min(leader HW 2, follower LEO 1)


def test_shutdown_fetcher_does_no_work() -> None:
    """`shutdown`: a stopped fetcher sends nothing."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    h.add(TP, mk_log([]), 0, 0)
    h.fetcher.shutdown()
    result = h.do_work()
    assert not result.fetch_sent and h.leader.fetch_count == 0


def test_negative_initial_offset_is_placed_with_list_offsets() -> None:
    """`partitionFetchState`: `initOffset < 0` -> `fetchOffsetAndTruncate` before anything else."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    h.add(TP, mk_log([]), -1, 0)
    h.leader.set_leader(TP, seed(5, 3, 0), 0, 8, log_start_offset=5)
    h.do_work()
    assert h.leader.list_offsets_count == 2
    assert h.logs[TP].log_start_offset == 5 and h.logs[TP].log_end_offset == 6


def test_maybe_update_topic_ids() -> None:
    """AbstractFetcherThreadTest.testMaybeUpdateTopicIds: ids set in place; unknown partitions ignored."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    p0, p1, other = TopicPartition("topic", 0), TopicPartition("topic", 1), TopicPartition("nope", 0)
    h.add(p0, mk_log([mk_batch(0, 0)], tp=p0), 1, 0)
    h.add(p1, mk_log([mk_batch(0, 0)], tp=p1), 1, 0)
    h.fetcher.maybe_update_topic_ids({p0, other}, {"topic": "uuid-1"}.get)
    assert h.state(p0).topic_id == "uuid-1" and h.state(p1).topic_id is None
    assert list(h.fetcher.partition_states) == [p0, p1] and h.fetcher.fetch_state(other) is None


@pytest.mark.parametrize("error", [
    Errors.UNKNOWN_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.UNKNOWN_TOPIC_ID, Errors.INCONSISTENT_TOPIC_ID, Errors.KAFKA_STORAGE_ERROR,
    Errors.UNKNOWN_SERVER_ERROR, Errors.OFFSET_MOVED_TO_TIERED_STORAGE,
])
def test_partition_errors_back_off_and_retry(error: str) -> None:
    """§3.3 table: these partition errors delay the partition by `replica.fetch.backoff.ms`, then it retries."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    h.add(TP, mk_log([]), 0, 0)
    h.leader.set_leader(TP, [mk_batch(0, 0)], 0, 1)
    h.leader.fetch_errors = {TP: error}
    h.do_work()
    st = h.state(TP)
    assert st.is_delayed(h.now_ms) and st.delay is not None and st.delay.due_ms == BACKOFF
    assert not h.fetcher.failed_partitions.contains(TP)
    assert [e["error"] for e in h.events if e["event_type"] == "fetch_response"] == [error]
    h.leader.fetch_errors = {}
    assert not h.do_work(advance_ms=BACKOFF - 1).fetch_sent
    h.do_work(advance_ms=1)
    assert h.logs[TP].log_end_offset == 1


# --- partitionMapLock around fetchOffsetAndTruncate -------------------------------------------------------


def test_partition_made_leader_during_out_of_range_list_offsets_is_not_truncated() -> None:
    """`processFetchRequest` handles OFFSET_OUT_OF_RANGE inside `inLock(partitionMapLock)`, and
    `handleOutOfRangeError` -> `fetchOffsetAndTruncate` sends its ListOffsets with the lock held; the
    ReplicaManager's `removeFetcherForPartitions` (before `makeLeader`) takes the same lock in
    `removePartitions`. The fetcher says so (`partition_map_locked`) while the ListOffsets is in flight,
    and a partition removed anyway is never truncated by it: the late answer of the old leader does not
    cut the log of the partition this broker now leads."""
    cfg = ReplicationConfig()
    tp = TopicPartition("t", 0)
    p = Partition("t", 0, broker_id=2, config=cfg)
    log = p.log
    p.make_follower(PartitionRegistration(leader=1, leader_epoch=3, isr=(1, 2), replicas=(1, 2),
                                          partition_epoch=1), 0)
    for i in range(10):
        log.append_as_leader(1, 100, i, 3, 0)
    thread = ReplicaFetcherThread(2, 0, BrokerEndPoint(1), cfg, lambda _tp: log, protocol="diverging_epoch")
    thread.add_partitions({tp: InitialFetchState(BrokerEndPoint(1), 3, log.log_end_offset)}, 0)
    assert not thread.partition_map_locked

    work = thread.work(1000)
    assert isinstance(next(work), FetchRequest)
    assert not thread.partition_map_locked  # the Fetch itself is sent without the lock
    request = work.send((FetchResponse({tp: FetchPartitionResponse(error=Errors.OFFSET_OUT_OF_RANGE.value)}),
                         1001))
    assert isinstance(request, ListOffsetsRequest) and request.spec == "latest"
    assert thread.partition_map_locked

    # The driver ignores the lock: the partition leaves the fetcher and this broker leads epoch 4.
    thread.remove_partitions([tp])
    p.make_leader(PartitionRegistration(leader=2, leader_epoch=4, isr=(2,), replicas=(1, 2),
                                        partition_epoch=2), 1002)
    assert (log.log_end_offset, p.leader_epoch_start_offset) == (10, 10)
    epochs_before = [tuple(e) for e in log.epoch_cache.entries]

    with pytest.raises(StopIteration):
        work.send((ListOffsetsResponse(Errors.NONE.value, 5, 3), 1003))  # the old leader is behind: 5 < 10
    assert not thread.partition_map_locked
    assert p.is_leader and log.log_end_offset == 10 and p.leader_epoch_start_offset == 10
    assert [tuple(e) for e in log.epoch_cache.entries] == epochs_before == [(3, 0), (4, 10)]
    assert thread.fetch_state(tp) is None


def test_partition_removed_between_latest_and_earliest_list_offsets_is_not_truncated_fully() -> None:
    """`fetchOffsetAndTruncate`, second ListOffsets (EARLIEST, under the same lock): a partition removed
    while it is in flight is not `truncateFullyAndStartAt` the leader's start offset."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    replica = mk_log([mk_batch(0, 0)], hw=0)
    h.add(TP, replica, fetch_offset=3, leader_epoch=4)
    h.leader.set_leader(TP, seed(5, 3, 4), leader_epoch=4, hw=8, log_start_offset=5)
    work = h.fetcher.work(0)
    fetch = next(work)
    assert isinstance(fetch, FetchRequest)
    latest = work.send((h.leader.fetch(fetch), 0))
    assert isinstance(latest, ListOffsetsRequest) and h.fetcher.partition_map_locked
    earliest = work.send((h.leader.list_offsets(latest), 0))
    assert isinstance(earliest, ListOffsetsRequest) and earliest.spec == "earliest"
    assert h.fetcher.partition_map_locked
    h.fetcher.remove_partitions({TP})
    with pytest.raises(StopIteration):
        work.send((h.leader.list_offsets(earliest), 0))
    assert not h.fetcher.partition_map_locked
    assert (replica.log_start_offset, replica.log_end_offset) == (0, 1)
    assert replica.truncate_calls == [] and h.fetcher.fetch_state(TP) is None
    assert [e for e in h.events if e["event_type"] == "truncation"] == []


def test_partition_removed_during_initial_offset_list_offsets_is_not_reset() -> None:
    """`addPartitions` runs `fetchOffsetAndTruncate` for a negative initial offset under
    `partitionMapLock` (here: at the start of the next `work()`); removed meanwhile, the partition is not
    truncated and not put back."""
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    replica = mk_log([mk_batch(0, 0)])
    h.add(TP, replica, -1, 0)
    h.leader.set_leader(TP, seed(5, 3, 0), 0, 8, log_start_offset=5)
    work = h.fetcher.work(0)
    latest = next(work)
    assert isinstance(latest, ListOffsetsRequest) and h.fetcher.partition_map_locked
    earliest = work.send((h.leader.list_offsets(latest), 0))
    assert isinstance(earliest, ListOffsetsRequest)
    h.fetcher.remove_partitions({TP})
    with pytest.raises(StopIteration):
        work.send((h.leader.list_offsets(earliest), 0))
    assert h.fetcher.fetch_state(TP) is None and not h.fetcher.partition_map_locked
    assert (replica.log_start_offset, replica.log_end_offset) == (0, 1)
