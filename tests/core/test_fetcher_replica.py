"""Conformance: Kafka's `ReplicaFetcherThreadTest` (reference §7.2) ported to `ReplicaFetcherThread`.

Kafka's test scripts the leader's OffsetsForLeaderEpoch answers and mocks the follower's
`endOffsetForEpoch`; here the leader answers are scripted the same way (`scripted_epoch_answers`) but
the follower is a real `Log` whose epoch cache is built so that the real rules give Kafka's values.
IBP 2.6 = `leader_epoch`, IBP 0.11 = `leader_epoch_v0`, latest MV = `diverging_epoch`.
"""

from __future__ import annotations

import pytest

from replication_core.config import ReplicationConfig
from replication_core.errors import Errors
from replication_core.leader_endpoint import FetchRequest, OffsetsForLeaderEpochRequest
from replication_core.partition_fetch_state import (
    EpochEndOffset,
    ReplicaState,
    TopicPartition,
)
from replication_core.truncation import TruncationProtocol
from tests.core.mock_leader import FollowerHarness, InstrumentedLog, make_harness, mk_batch, mk_log, seed

T1P0, T1P1, T2P1 = TopicPartition("topic1", 0), TopicPartition("topic1", 1), TopicPartition("topic2", 1)
LE = TruncationProtocol.LEADER_EPOCH
DE = TruncationProtocol.DIVERGING_EPOCH
BACKOFF = 1000


def eeo(epoch: int, offset: int, error: str = Errors.NONE) -> EpochEndOffset:
    """`EpochEndOffset(error, leaderEpoch, endOffset)` as the leader would send it."""
    return EpochEndOffset(error, epoch, offset)


def add(h: FollowerHarness, tp: TopicPartition, log: InstrumentedLog, offset: int, epoch: int) -> None:
    """Install `log` for `tp` and add it to the fetcher at `offset` / `epoch`."""
    h.add(tp, log, offset, epoch)


def test_fetch_leader_epoch_request_if_last_epoch_defined_for_some_partitions() -> None:
    """ReplicaFetcherThreadTest.testFetchLeaderEpochRequestIfLastEpochDefinedForSomePartitions (IBP 2.6)."""
    h = make_harness(LE)
    logs = {T1P0: mk_log([mk_batch(0, 5)], tp=T1P0), T1P1: mk_log([mk_batch(0, 5)], tp=T1P1),
            T2P1: mk_log([], tp=T2P1)}
    for tp, log in logs.items():
        add(h, tp, log, 0, 5)
        h.leader.set_leader(tp, [mk_batch(0, 5)] if log.batches else [], 5, 0)
    h.leader.scripted_epoch_answers = {T1P0: [eeo(5, 1)], T1P1: [eeo(5, 1)]}
    for _ in range(3):
        h.do_work()
    assert h.leader.epoch_request_count == 1 and h.leader.fetch_count == 3
    assert set(h.leader.epoch_requests[0].partitions) == {T1P0, T1P1}
    assert [len(log.truncate_calls) for log in logs.values()] == [1, 1, 1]  # two epoch-based, one HW
    assert all(h.state(tp).state is ReplicaState.FETCHING for tp in logs)


@pytest.mark.parametrize(("protocol", "epoch_requests"), [(LE, 1), (DE, 0)])
def test_fetch_leader_epoch_on_first_fetch_only_with_offsets_for_leader_epoch(
        protocol: TruncationProtocol, epoch_requests: int) -> None:
    """ReplicaFetcherThreadTest.shouldFetchLeaderEpochOnFirstFetchOnlyIfLeaderEpochKnownToBothIbp26 /
    shouldNotFetchLeaderEpochOnFirstFetchWithTruncateOnFetch."""
    h = make_harness(protocol)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log([mk_batch(0, 5)], tp=tp), 1, 5)
        h.leader.set_leader(tp, [mk_batch(0, 5)], 5, 1)
    for _ in range(3):
        h.do_work()
    assert h.leader.epoch_request_count == epoch_requests
    assert h.leader.fetch_count == 3


def test_truncate_to_offset_specified_in_epoch_offset_response() -> None:
    """ReplicaFetcherThreadTest.shouldTruncateToOffsetSpecifiedInEpochOffsetResponse: 156 and 172."""
    h = make_harness(LE)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log(seed(0, 200, 5), hw=199, tp=tp), 199, 5)  # own end offset for epoch 5 = 200
    h.leader.scripted_epoch_answers = {T1P0: [eeo(5, 156)], T1P1: [eeo(5, 172)]}
    h.do_work()
    assert h.logs[T1P0].truncate_calls == [156] and h.logs[T1P1].truncate_calls == [172]
    assert (h.logs[T1P0].log_end_offset, h.logs[T1P1].log_end_offset) == (156, 172)


class _EpochsFromFiveLog(InstrumentedLog):
    """Kafka's mock follower: epoch 5 only, and `endOffsetForEpoch(4)` undefined (nothing <= 4 tracked).

    A real cache answers (4, first start offset) there; None is reachable for real only when the cache
    is emptied while the request is in flight, so the branch is exercised with this stub.
    """

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        """Undefined below epoch 5, the real lookup otherwise."""
        return None if epoch < 5 else super().end_offset_for_epoch(epoch)


def test_truncate_to_offset_specified_in_epoch_offset_response_if_follower_has_no_more_epochs() -> None:
    """ReplicaFetcherThreadTest.shouldTruncateToOffsetSpecifiedInEpochOffsetResponseIfFollowerHasNoMoreEpochs."""
    h = make_harness(LE)
    for tp in (T1P0, T1P1):
        log = _EpochsFromFiveLog(tp.topic, tp.partition, 2)
        log.append_as_follower(seed(0, 200, 5))
        add(h, tp, log, 200, 5)
    h.leader.scripted_epoch_answers = {T1P0: [eeo(4, 156)], T1P1: [eeo(4, 202)]}
    h.do_work()
    assert h.logs[T1P0].truncate_calls == [156] and h.logs[T1P1].truncate_calls == [200]


def test_fetch_leader_epoch_second_time_if_leader_replies_with_epoch_not_known_to_follower() -> None:
    """ReplicaFetcherThreadTest.shouldFetchLeaderEpochSecondTimeIfLeaderRepliesWithEpochNotKnownToFollower.

    Follower cache {3@0, 5@120}, LEO 200: endOffsetForEpoch(4) = endOffsetForEpoch(3) = (3, 120).
    """
    h = make_harness(LE)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log(seed(0, 120, 3) + seed(120, 80, 5), tp=tp), 200, 5)
    h.leader.scripted_epoch_answers = {T1P0: [eeo(4, 155), eeo(3, 101)], T1P1: [eeo(4, 143), eeo(3, 102)]}
    h.do_work()
    assert [h.logs[tp].truncate_calls for tp in (T1P0, T1P1)] == [[120], [120]]
    assert h.state(T1P0).state is ReplicaState.TRUNCATING
    h.do_work()
    assert [h.logs[tp].truncate_calls for tp in (T1P0, T1P1)] == [[120, 101], [120, 102]]
    assert [req.partitions[T1P0].leader_epoch for req in h.leader.epoch_requests] == [5, 3]
    assert h.leader.epoch_request_count == 2
    assert all(h.state(tp).state is ReplicaState.FETCHING for tp in (T1P0, T1P1))


def test_truncate_if_leader_replies_with_diverging_epoch_not_known_to_follower() -> None:
    """ReplicaFetcherThreadTest.shouldTruncateIfLeaderRepliesWithDivergingEpochNotKnownToFollower.

    Follower cache {1@0, 2@119, 4@129, 5@149}, LEO 200, HW 115 (one real cache instead of Kafka's
    per-step mocks): DivergingEpoch (4, 140/141) -> 140/141 (epoch known); (3, 130/131) -> 129, the
    end of epoch 2 (epoch 3 unknown, not complete); (1, 119/118) -> 119/118. Never an
    OffsetsForLeaderEpoch request; the partition stays Fetching throughout.
    """
    h = make_harness(DE)
    for tp in (T1P0, T1P1):
        log = mk_log(seed(0, 119, 1) + seed(119, 10, 2) + seed(129, 20, 4) + seed(149, 51, 5), hw=115, tp=tp)
        add(h, tp, log, 200, 6)
    fetcher = h.fetcher
    steps = [({T1P0: eeo(4, 140), T1P1: eeo(4, 141)}, [140, 141]),
             ({T1P0: eeo(3, 130), T1P1: eeo(3, 131)}, [129, 129]),
             ({T1P0: eeo(1, 119), T1P1: eeo(1, 118)}, [119, 118])]
    for diverging, expected in steps:
        fetcher._truncate_on_fetch_response(diverging)
        assert [h.logs[tp].truncate_calls[-1] for tp in (T1P0, T1P1)] == expected
        for tp, offset in zip((T1P0, T1P1), expected, strict=True):
            st = fetcher.fetch_state(tp)
            assert st is not None and st.state is ReplicaState.FETCHING and st.fetch_offset == offset
            assert st.last_fetched_epoch == h.logs[tp].latest_epoch
    assert h.leader.epoch_request_count == 0


def test_truncate_on_fetch_does_not_update_high_watermark() -> None:
    """ReplicaFetcherThreadTest.testTruncateOnFetchDoesNotUpdateHighWatermark: HW 160 in the response ignored."""
    h = make_harness(DE)
    replica = mk_log(seed(0, 100, 3) + seed(100, 49, 4) + seed(149, 1, 5), hw=130)  # LEO 150, e4 ends at 149
    add(h, T1P0, replica, 150, 6)
    # Leader: epoch 4 ends at 140, then epoch 6 (never saw 5); HW 160.
    h.leader.set_leader(T1P0, seed(0, 100, 3) + seed(100, 40, 4), 6, 0)
    h.leader.partitions[T1P0].log.append_as_follower(seed(140, 30, 6))
    h.leader.partitions[T1P0].log.update_high_watermark(160, role="leader")
    h.do_work()
    assert replica.truncate_calls == [140]
    assert replica.high_watermark == 130 and replica.append_calls == 0
    assert not [e for e in h.events if e["event_type"] == "hw_change"]


def test_lag_is_updated_when_no_records() -> None:
    """ReplicaFetcherThreadTest.testLagIsUpdatedWhenNoRecords: lag None -> Some(0), lastFetchedEpoch kept."""
    h = make_harness(DE)
    add(h, T1P0, mk_log([mk_batch(0, 2)]), 1, 2)
    h.leader.set_leader(T1P0, [mk_batch(0, 2)], 2, 0)
    before = h.fetcher.fetch_state(T1P0)
    assert before is not None and before.lag is None and before.last_fetched_epoch == 2
    h.do_work()
    after = h.fetcher.fetch_state(T1P0)
    assert after is not None and after.lag == 0 and after.last_fetched_epoch == 2 and after.fetch_offset == 1


def test_use_leader_end_offset_if_inter_broker_version_below_20() -> None:
    """ReplicaFetcherThreadTest.shouldUseLeaderEndOffsetIfInterBrokerVersionBelow20 (v0: no epoch in answer)."""
    h = make_harness(TruncationProtocol.LEADER_EPOCH_V0)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log(seed(0, 200, 5), tp=tp), 200, 5)
    h.leader.scripted_epoch_answers = {T1P0: [eeo(-1, 155)], T1P1: [eeo(-1, 143)]}
    h.do_work()
    assert h.leader.epoch_requests[0].version == 0
    assert h.logs[T1P0].truncate_calls == [155] and h.logs[T1P1].truncate_calls == [143]


def test_truncate_to_initial_fetch_offset_if_leader_returns_undefined_offset() -> None:
    """ReplicaFetcherThreadTest.shouldTruncateToInitialFetchOffsetIfLeaderReturnsUndefinedOffset: to 100."""
    h = make_harness(LE)
    add(h, T1P0, mk_log(seed(0, 200, 5), hw=100), 100, 5)
    h.leader.scripted_epoch_answers = {T1P0: [eeo(-1, -1)]}
    h.do_work()
    assert h.logs[T1P0].truncate_calls == [100]


def test_poll_indefinitely_if_leader_returns_any_exception() -> None:
    """ReplicaFetcherThreadTest.shouldPollIndefinitelyIfLeaderReturnsAnyException: retry, then 156."""
    h = make_harness(LE)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log(seed(0, 300, 5), hw=100, tp=tp), 100, 5)
    h.leader.scripted_epoch_answers = {
        T1P0: [eeo(-1, -1, Errors.NOT_LEADER_OR_FOLLOWER)] * 4 + [eeo(5, 156)],
        T1P1: [eeo(-1, -1, Errors.UNKNOWN_SERVER_ERROR)] * 4 + [eeo(5, 156)]}
    for _ in range(4):
        h.do_work(advance_ms=BACKOFF)
        assert all(h.logs[tp].truncate_calls == [] for tp in (T1P0, T1P1))
    h.do_work(advance_ms=BACKOFF)
    assert [h.logs[tp].truncate_calls for tp in (T1P0, T1P1)] == [[156], [156]]
    assert h.leader.epoch_request_count == 5


def test_move_partitions_out_of_truncating_log_state() -> None:
    """ReplicaFetcherThreadTest.shouldMovePartitionsOutOfTruncatingLogState: reply (4, 1) -> both Fetching."""
    h = make_harness(LE)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log([mk_batch(0, 4)], tp=tp), 1, 4)
        assert h.state(tp).state is ReplicaState.TRUNCATING
    h.leader.scripted_epoch_answers = {T1P0: [eeo(4, 1)], T1P1: [eeo(4, 1)]}
    h.do_work()
    assert all(h.state(tp).state is ReplicaState.FETCHING for tp in (T1P0, T1P1))


def test_filter_partitions_made_leader_during_leader_epoch_request() -> None:
    """ReplicaFetcherThreadTest.shouldFilterPartitionsMadeLeaderDuringLeaderEpochRequest: only t1p1 -> 49."""
    h = make_harness(LE)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log(seed(0, 100, 5), tp=tp), 100, 5)
    h.leader.scripted_epoch_answers = {T1P0: [eeo(5, 52)], T1P1: [eeo(5, 49)]}
    work = h.fetcher.work(0)
    request = next(work)
    assert isinstance(request, OffsetsForLeaderEpochRequest)
    response = h.leader.fetch_epoch_end_offsets(request)
    h.fetcher.remove_partitions({T1P0})  # became leader meanwhile
    request2 = work.send((response, 0))
    assert isinstance(request2, FetchRequest) and set(request2.partitions) == {T1P1}
    assert h.logs[T1P0].truncate_calls == [] and h.logs[T1P1].truncate_calls == [49]


def test_handle_exception_from_blocking_send() -> None:
    """ReplicaFetcherThreadTest.shouldHandleExceptionFromBlockingSend: every partition gets the error."""
    h = make_harness(LE)
    for tp in (T1P0, T1P1):
        add(h, tp, mk_log(seed(0, 10, 5), tp=tp), 10, 5)
    h.leader.epoch_request_error = Errors.UNKNOWN_SERVER_ERROR
    h.do_work()
    for tp in (T1P0, T1P1):
        st = h.fetcher.fetch_state(tp)
        assert st is not None and st.state is ReplicaState.TRUNCATING and st.is_delayed(h.now_ms)
        assert h.logs[tp].truncate_calls == []


def test_build_fetch() -> None:
    """ReplicaFetcherThreadTest.testBuildFetch (full request only; incremental fetch sessions not modeled)."""
    cfg = ReplicationConfig(replica_fetch_max_bytes=4096, replica_fetch_response_max_bytes=8192,
                            replica_fetch_wait_max_ms=300, replica_fetch_min_bytes=7)
    h = make_harness(DE, cfg)
    tps = [TopicPartition("topic", p) for p in range(3)]
    for tp, offset in zip(tps, (150, 155, 160), strict=True):
        add(h, tp, mk_log(seed(0, offset, 1), tp=tp), offset, 1)
    work = h.fetcher.work(0)
    request = next(work)
    assert isinstance(request, FetchRequest)
    assert (request.replica_id, request.max_wait_ms, request.min_bytes, request.max_bytes) == (2, 300, 7, 8192)
    assert [(tp, d.fetch_offset, d.log_start_offset, d.max_bytes, d.current_leader_epoch)
            for tp, d in request.partitions.items()] == [
        (tps[0], 150, 0, 4096, 1), (tps[1], 155, 0, 4096, 1), (tps[2], 160, 0, 4096, 1)]


@pytest.mark.parametrize("hw_changes", [True, False])
def test_local_fetch_completion_if_high_watermark_updated(hw_changes: bool) -> None:
    """ReplicaFetcherThreadTest.testLocalFetchCompletionIfHighWatermarkUpdated(true/false)."""
    completed: list[frozenset[TopicPartition]] = []
    h = make_harness(DE, on_hw_updated=completed.append)
    tp0, tp1 = TopicPartition("topic", 0), TopicPartition("topic", 1)
    for tp in (tp0, tp1):
        add(h, tp, mk_log(seed(0, 150, 1), hw=100 if not hw_changes else 50, tp=tp), 150, 1)
        h.leader.set_leader(tp, seed(0, 150, 1), 1, 100)
    h.do_work()
    assert completed == ([frozenset({tp0, tp1})] if hw_changes else [])


def test_follower_quota_leaves_out_of_sync_throttled_partitions_out_of_the_fetch() -> None:
    """`shouldFollowerThrottle` in `buildFetch` (reference §4) and the follower-side byte recording."""
    from replication_core.quota import ReplicationQuotaManager

    quota = ReplicationQuotaManager("follower", 2)
    quota.mark_throttled("topic", [0])
    h = make_harness(DE, quota=quota)
    tp0, tp1 = TopicPartition("topic", 0), TopicPartition("topic", 1)
    for tp in (tp0, tp1):
        add(h, tp, mk_log([], tp=tp), 0, 0)
        h.leader.set_leader(tp, seed(0, 5, 0), 0, 5)
    h.do_work()  # no bound yet: both fetched; tp0's bytes are recorded
    assert quota.rate(0) > 0
    quota.update_quota(1.0)
    h.do_work()
    assert set(h.leader.fetch_requests[-1].partitions) == {tp1}
    throttles = [e for e in h.events if e["event_type"] == "quota_throttle"]
    assert throttles and throttles[-1]["partition"] == 0 and throttles[-1]["role"] == "follower"
