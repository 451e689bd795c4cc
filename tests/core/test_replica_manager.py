"""ReplicaManager: leadership changes, stop replica, fetch / purgatory, produce acks, ISR expiration,
AlterPartition propagation, and an end-to-end leader + follower run with the real fetcher thread."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replication_core.config import ReplicationConfig, TruncationMode
from replication_core.errors import Errors
from replication_core.event_log import EventLog
from replication_core.fetcher import ReplicaFetcherThread
from replication_core.leader_endpoint import (
    EARLIEST,
    LATEST,
    EpochData,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from replication_core.log import Log
from replication_core.partition import AlterPartitionRequest, LeaderAndIsr, Partition, PartitionRegistration
from replication_core.partition_fetch_state import BrokerEndPoint, InitialFetchState, TopicPartition
from replication_core.replica_manager import LeaderAndIsrRequest, ProduceBatch, ReplicaManager

TP = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)
T0 = 1_000_000


def reg(leader: int, epoch: int, isr: Sequence[int], replicas: Sequence[int] = (1, 2, 3),
        partition_epoch: int = 1) -> PartitionRegistration:
    return PartitionRegistration(leader, epoch, tuple(isr), tuple(replicas), partition_epoch)


def lai(states: Mapping[TopicPartition, PartitionRegistration], controller_epoch: int = 1) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(0, controller_epoch, states)


def fetch_req(replica_id: int, offset: int, epoch: int | None = 1, last_fetched_epoch: int | None = None,
              max_wait_ms: int = 500, tp: TopicPartition = TP, lso: int = 0) -> FetchRequest:
    return FetchRequest(replica_id, -1, max_wait_ms, 1, 10_000_000,
                        {tp: FetchPartitionData(offset, lso, 1_000_000, epoch, last_fetched_epoch)})


class RecordingFetchers:
    """A `FetcherControl` that records the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def add_fetcher_for_partitions(self, initial: Mapping[TopicPartition, InitialFetchState], now_ms: int) -> None:
        self.calls.append(("add", dict(initial)))

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition], now_ms: int) -> object:
        self.calls.append(("remove", sorted(tps)))
        return {}


def leader_rm(isr: Sequence[int] = (1, 2, 3), min_isr: int = 1, events: list[Any] | None = None) -> ReplicaManager:
    rm = ReplicaManager(1, ReplicationConfig(min_insync_replicas=min_isr), events=events)
    result = rm.become_leader_or_follower(lai({TP: reg(1, 1, isr)}), T0)
    assert result.errors == {TP: Errors.NONE} and result.new_leaders == {TP}
    return rm


# --- leadership -------------------------------------------------------------------------------------

def test_become_leader_and_follower_fetcher_changes() -> None:
    """ReplicaManager.becomeLeaderOrFollower: leaders lose their fetcher, followers with a new epoch get
    one at initialFetchOffset (LEO with truncation-on-fetch and a known epoch, else HW)."""
    fetchers = RecordingFetchers()
    log = Log("orders", 1, 2)  # a log that survived on disk
    log.append_as_leader(3, 30, 0, 0)
    log.update_high_watermark(1)
    rm = ReplicaManager(2, ReplicationConfig(), fetcher_control=fetchers, logs={TP1: log})
    result = rm.become_leader_or_follower(lai({TP: reg(2, 1, (1, 2, 3)), TP1: reg(1, 1, (1, 2, 3))}), T0)
    assert result.errors == {TP: Errors.NONE, TP1: Errors.NONE}
    assert result.new_leaders == {TP} and result.new_followers == {TP1}
    assert result.fetchers_to_add == {TP1: InitialFetchState(BrokerEndPoint(1), 1, 3)}
    assert fetchers.calls == [("remove", [TP]), ("remove", [TP1]),
                              ("add", {TP1: InitialFetchState(BrokerEndPoint(1), 1, 3)})]
    legacy = ReplicaManager(2, ReplicationConfig(truncation_mode=TruncationMode.LEADER_EPOCH), logs={TP1: log})
    res = legacy.become_leader_or_follower(lai({TP1: reg(1, 1, (1, 2, 3))}), T0)
    assert res.fetchers_to_add[TP1].init_offset == 1  # HW before truncation-on-fetch


def test_a_follower_of_an_offline_partition_stops_fetching_and_starts_with_the_next_leader() -> None:
    """`applyLocalFollowersDelta`: the fetcher of a partition whose new registration names no leader (every ISR
    member down) is removed and not restarted ("Unable to start fetching ... because it is not alive"); the
    election of a leader, a new leader epoch, starts it towards that leader."""
    fetchers = RecordingFetchers()
    rm = ReplicaManager(2, ReplicationConfig(), fetcher_control=fetchers)
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2, 3))}), T0)
    fetchers.calls.clear()
    res = rm.become_leader_or_follower(lai({TP: reg(-1, 2, (1,), partition_epoch=2)}), T0 + 1)
    assert res.errors == {TP: Errors.NONE} and res.new_followers == {TP}
    assert res.fetchers_to_remove == {TP} and res.fetchers_to_add == {}
    assert fetchers.calls == [("remove", [TP])]
    assert rm.partitions[TP].leader_replica_id == -1 and not rm.partitions[TP].is_leader
    res = rm.become_leader_or_follower(lai({TP: reg(3, 3, (3,), partition_epoch=3)}), T0 + 2)
    assert res.fetchers_to_add == {TP: InitialFetchState(BrokerEndPoint(3), 3, 0)}
    assert fetchers.calls[1:] == [("remove", [TP]), ("add", {TP: InitialFetchState(BrokerEndPoint(3), 3, 0)})]


def test_follower_fetcher_restarted_only_on_new_leader_epoch() -> None:
    """KAFKA-7164: the fetcher restarts whenever the leader epoch increases, even with the same leader,
    and not for a same-epoch update."""
    rm = ReplicaManager(2, ReplicationConfig())
    assert rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2, 3))}), T0).fetchers_to_add
    res = rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2), partition_epoch=2)}), T0)
    assert res.errors == {TP: Errors.NONE} and not res.fetchers_to_add
    res = rm.become_leader_or_follower(lai({TP: reg(1, 2, (1, 2), partition_epoch=3)}), T0)
    assert set(res.fetchers_to_add) == {TP} and res.fetchers_to_remove == {TP}


def test_stale_requests_rejected() -> None:
    """Stale controller epoch, older leader epoch, same epoch without a newer partition epoch, and a
    broker outside the assignment are refused."""
    rm = leader_rm()
    rm.become_leader_or_follower(lai({TP: reg(1, 3, (1, 2, 3))}, controller_epoch=2), T0)
    assert rm.become_leader_or_follower(lai({TP: reg(1, 4, (1, 2, 3))}, controller_epoch=1), T0).errors == {
        TP: Errors.STALE_CONTROLLER_EPOCH}
    assert rm.become_leader_or_follower(lai({TP: reg(1, 2, (1, 2, 3))}, 2), T0).errors == {
        TP: Errors.STALE_CONTROLLER_EPOCH}
    assert rm.become_leader_or_follower(lai({TP: reg(1, 3, (1, 2, 3))}, 2), T0).errors == {
        TP: Errors.STALE_CONTROLLER_EPOCH}
    assert rm.become_leader_or_follower(lai({TP1: reg(4, 1, (4, 5), replicas=(4, 5))}, 2), T0).errors == {
        TP1: Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert rm.get_partition(TP).leader_epoch == 3  # type: ignore[union-attr]


def test_stop_replica_with_and_without_delete() -> None:
    """ReplicaManager.stopReplicas: fenced by an older epoch; without delete the log stays; with delete
    the partition is gone, and a fetch of it gets NOT_LEADER_OR_FOLLOWER: the metadata cache still knows it
    (`getPartitionOrError`, "this broker is no longer a replica of it")."""
    fetchers = RecordingFetchers()
    rm = ReplicaManager(2, ReplicationConfig(), fetcher_control=fetchers)
    rm.become_leader_or_follower(lai({TP: reg(1, 5, (1, 2, 3))}), T0)
    assert rm.stop_replica(TP, delete=False, now_ms=T0, leader_epoch=4).error == Errors.FENCED_LEADER_EPOCH
    res = rm.stop_replica(TP, delete=False, now_ms=T0, leader_epoch=6)
    assert res == (Errors.NONE, True, False) and rm.get_partition(TP) is not None
    assert fetchers.calls[-1] == ("remove", [TP])
    assert rm.stop_replica(TP, delete=True, now_ms=T0).deleted
    assert rm.get_partition(TP) is None
    resp = rm.fetch_messages(fetch_req(3, 0), T0)
    assert resp is not None and resp.partitions[TP].error == Errors.NOT_LEADER_OR_FOLLOWER


def test_a_partition_not_hosted_is_not_leader_or_follower_only_if_the_metadata_knows_it() -> None:
    """`getPartitionOrError`: a partition the broker does not host is NOT_LEADER_OR_FOLLOWER when its metadata cache
    holds it (`learn_partitions`: the cluster's metadata after the initial catch-up), else UNKNOWN_TOPIC_OR_PARTITION,
    for a fetch, an OffsetsForLeaderEpoch, a ListOffsets and a produce alike."""
    rm = ReplicaManager(2, ReplicationConfig())
    unknown = rm.fetch_messages(fetch_req(3, 0), T0)
    assert unknown is not None and unknown.partitions[TP].error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    rm.learn_partitions([TP])
    known = rm.fetch_messages(fetch_req(3, 0), T0)
    assert known is not None and known.partitions[TP].error == Errors.NOT_LEADER_OR_FOLLOWER
    asked = {TP: EpochData(1, 1), TP1: EpochData(1, 0)}
    epochs = rm.offsets_for_leader_epoch(OffsetsForLeaderEpochRequest(3, 3, asked))
    assert (epochs.partitions[TP].error, epochs.partitions[TP1].error) == (
        Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    assert rm.list_offsets(ListOffsetsRequest(3, TP, 1, LATEST)).error == Errors.NOT_LEADER_OR_FOLLOWER
    assert rm.list_offsets(ListOffsetsRequest(3, TP1, 1, LATEST)).error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    produced = rm.append_records(TP, 1, 10, 7, 1, T0)
    assert produced is not None and produced.error == Errors.NOT_LEADER_OR_FOLLOWER
    produced = rm.append_records(TP1, 1, 10, 7, 1, T0)
    assert produced is not None and produced.error == Errors.UNKNOWN_TOPIC_OR_PARTITION


# --- fetch ---------------------------------------------------------------------------------------------

def test_follower_fetch_updates_state_then_hw_and_parks_when_caught_up() -> None:
    """fetchMessages: follower reads up to the LEO, its fetch moves the HW (reported on the next fetch);
    a caught-up fetch parks and is released by the next leader append."""
    rm = leader_rm(isr=(1, 2))
    rm.append_records(TP, 5, 50, 7, 1, T0)
    r1 = rm.fetch_messages(fetch_req(2, 0), T0 + 1)
    assert r1 is not None and [b.base_offset for b in r1.partitions[TP].batches] == [0]
    assert r1.partitions[TP].high_watermark == 0
    assert rm.fetch_messages(fetch_req(2, 5), T0 + 2, request_id="f2") is None  # caught up: parked
    assert rm.get_partition(TP).log.high_watermark == 5  # type: ignore[union-attr]
    assert len(rm.fetch_purgatory) == 1
    rm.append_records(TP, 2, 20, 8, 1, T0 + 3)
    done = rm.take_completed_fetches()
    assert [c.request_id for c in done] == ["f2"]
    part = done[0].response.partitions[TP]
    assert [(b.base_offset, b.last_offset) for b in part.batches] == [(5, 6)] and part.high_watermark == 5
    r = rm.get_partition(TP).get_replica(2)  # type: ignore[union-attr]
    assert r is not None and r.log_end_offset == 5  # purgatory re-read did not update follower state


def test_caught_up_fetch_parks_without_try_complete_and_fused_read_matches_fetch_records() -> None:
    """fetchMessages' shortcuts: a follower fetch caught up on every partition is watched without
    `tryComplete`, whose answer would have been false; and the fused leader read answers and updates
    follower state exactly as `Partition.fetch_records` does (epoch check on last fetched epoch too)."""
    events = EventLog()
    rm = ReplicaManager(1, ReplicationConfig(), events=events)
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2)), TP1: reg(1, 1, (1, 2))}), T0)
    for tp in (TP, TP1):
        rm.append_records(tp, 3, 30, 7, 1, T0)
    # A twin driven through Partition.fetch_records, the unfused path.
    twin_events = EventLog()
    twin = ReplicaManager(1, ReplicationConfig(), events=twin_events)
    twin.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2)), TP1: reg(1, 1, (1, 2))}), T0)
    for tp in (TP, TP1):
        twin.append_records(tp, 3, 30, 7, 1, T0)
    events.clear()
    twin_events.clear()
    for offset, lfe in ((0, None), (3, 1), (3, None)):
        now = T0 + 10 + offset
        parts = {tp: FetchPartitionData(offset, 0, 1_000_000, 1, lfe) for tp in (TP, TP1)}
        req = FetchRequest(2, -1, 0, 1, 10_000_000, parts)
        fused = rm.fetch_messages(req, now)
        assert fused is not None
        for tp in (TP, TP1):
            p = twin.get_partition(tp)
            assert p is not None
            info = p.fetch_records(2, offset, 1_000_000, now, current_leader_epoch=1, last_fetched_epoch=lfe)
            got = fused.partitions[tp]
            assert (got.batches, got.high_watermark, got.log_start_offset) == (
                info.batches, info.high_watermark, info.log_start_offset)
        assert list(events) == list(twin_events)
        events.clear()
        twin_events.clear()
    parts = {tp: FetchPartitionData(3, 0, 1_000_000, 1, 1) for tp in (TP, TP1)}
    assert rm.fetch_messages(FetchRequest(2, -1, 500, 1, 10_000_000, parts), T0 + 20, request_id="c") is None
    (op,) = {op for ops in rm.fetch_purgatory._watchers.values() for op in ops}
    assert op.try_complete(rm.get_partition_or_exception, T0 + 20) is False
    assert len(rm.fetch_purgatory) == 1 and rm.fetch_purgatory.watched(TP) == rm.fetch_purgatory.watched(TP1) == 1
    rm.append_records(TP1, 1, 10, 9, 1, T0 + 21)
    done = rm.take_completed_fetches()
    assert [c.request_id for c in done] == ["c"] and done[0].response.partitions[TP1].batches


def test_min_bytes_above_the_requests_max_bytes_is_capped_at_it() -> None:
    """KafkaApis.handleFetchRequest: `fetchMinBytes = min(minBytes, fetchMaxBytes)`. Asked for at least 5,000 of
    at most 1,000 bytes, a fetch that reads 1,000 is answered at once instead of parking until maxWait; with a
    limit of 5,000 it reads all 1,500 and still parks."""
    rm = leader_rm(isr=(1, 2))
    for _ in range(3):
        rm.append_records(TP, 1, 500, 7, 1, T0)

    def req(max_bytes: int) -> FetchRequest:
        return FetchRequest(2, -1, 500, 5_000, max_bytes, {TP: FetchPartitionData(0, 0, 1_000_000, 1, None)})

    answered = rm.fetch_messages(req(1_000), T0 + 1, request_id="capped")
    assert answered is not None and sum(b.size_bytes for b in answered.partitions[TP].batches) == 1_000
    assert rm.fetch_messages(req(5_000), T0 + 2, request_id="uncapped") is None
    assert len(rm.fetch_purgatory) == 1


def test_a_parked_fetch_completes_when_the_leader_rolls_a_segment_after_it_arrived() -> None:
    """DelayedFetch case F: a fetch parked at the LEO of segment 0 (its `startOffsetMetadata`) completes once the
    leader rolls a new segment, even with fewer than min_bytes readable, because its position is then on an older
    segment than the LEO; on the same segment, bytes below min_bytes keep it parked. The answer reads the new
    segment only. Judged by the segment the fetch offset is in *now* (the new one), it would wait."""
    rm = ReplicaManager(1, ReplicationConfig(), segment_bytes=1000)
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2))}), T0)
    for i in range(2):
        rm.append_records(TP, 1, 400, 10 + i, 1, T0)

    def req(offset: int) -> FetchRequest:
        return FetchRequest(2, -1, 500, 5_000, 10_000_000, {TP: FetchPartitionData(offset, 0, 1_000_000, 1, None)})

    assert rm.fetch_messages(req(2), T0 + 1, request_id="at-2") is None  # caught up: parked on segment 0
    rm.append_records(TP, 1, 100, 12, 1, T0 + 2)  # 900 bytes: still segment 0
    assert rm.take_completed_fetches() == []
    assert rm.fetch_messages(req(3), T0 + 3, request_id="at-3") is None
    rm.append_records(TP, 1, 400, 13, 1, T0 + 4)  # 900 > 1000 - 400: rolls a segment at offset 3
    log = rm.get_partition(TP).log  # type: ignore[union-attr]
    assert log.segments == ((0, 900), (3, 400))
    done = {c.request_id: c.response.partitions[TP] for c in rm.take_completed_fetches()}
    assert sorted(done) == ["at-2", "at-3"]
    assert [b.base_offset for b in done["at-2"].batches] == [2]  # the read stops at segment 0's end
    assert [b.base_offset for b in done["at-3"].batches] == [3]


def test_parked_fetch_expires_at_max_wait() -> None:
    """DelayedFetch expiry: answered with what is there after replica.fetch.wait.max.ms."""
    rm = leader_rm(isr=(1, 2))
    assert rm.fetch_messages(fetch_req(2, 0), T0, request_id="x") is None
    assert rm.next_deadline() == T0 + 500
    rm.tick(T0 + 499)
    assert rm.take_completed_fetches() == []
    rm.tick(T0 + 500)
    done = rm.take_completed_fetches()
    assert [c.request_id for c in done] == ["x"] and done[0].response.partitions[TP].batches == ()


def test_parked_fetch_completes_when_leadership_moves() -> None:
    """Leader -> follower transition completes parked fetches with NOT_LEADER_OR_FOLLOWER."""
    rm = leader_rm(isr=(1, 2))
    assert rm.fetch_messages(fetch_req(2, 0, epoch=None), T0, request_id="p") is None
    rm.become_leader_or_follower(lai({TP: reg(2, 2, (1, 2))}), T0 + 1)
    done = rm.take_completed_fetches()
    assert done[0].response.partitions[TP].error == Errors.NOT_LEADER_OR_FOLLOWER


def test_consumer_fetch_reads_up_to_high_watermark() -> None:
    """Consumer isolation: replica id -1 reads only below the HW; followers read to the LEO."""
    rm = leader_rm(isr=(1, 2))
    rm.append_records(TP, 2, 20, 1, 1, T0)
    rm.fetch_messages(fetch_req(2, 2), T0)  # follower at 2: HW 2
    rm.append_records(TP, 3, 30, 2, 1, T0)
    resp = rm.fetch_messages(fetch_req(-1, 0, epoch=None, max_wait_ms=0), T0)
    assert resp is not None and [b.base_offset for b in resp.partitions[TP].batches] == [0]
    resp = rm.fetch_messages(fetch_req(2, 2, max_wait_ms=0), T0)
    assert resp is not None and [b.base_offset for b in resp.partitions[TP].batches] == [2]


def test_fetch_errors_and_diverging_epoch_answer_immediately() -> None:
    """Errors and diverging epochs are answered at once, whatever maxWait says."""
    rm = leader_rm(isr=(1, 2))
    rm.append_records(TP, 2, 20, 1, 1, T0)
    resp = rm.fetch_messages(fetch_req(2, 0, epoch=0), T0)
    assert resp is not None and resp.partitions[TP].error == Errors.FENCED_LEADER_EPOCH
    assert resp.partitions[TP].high_watermark == -1
    resp = rm.fetch_messages(fetch_req(2, 3, epoch=1, last_fetched_epoch=1), T0)
    assert resp is not None and resp.partitions[TP].diverging_epoch is not None
    assert (resp.partitions[TP].diverging_epoch.leader_epoch, resp.partitions[TP].diverging_epoch.end_offset) == (1, 2)


def test_offsets_for_leader_epoch_and_list_offsets() -> None:
    """OffsetsForLeaderEpoch (v0 without epoch) and ListOffsets LATEST / EARLIEST on the leader."""
    rm = leader_rm(isr=(1,))
    rm.append_records(TP, 4, 40, 1, 1, T0)
    resp = rm.offsets_for_leader_epoch(OffsetsForLeaderEpochRequest(2, 3, {TP: EpochData(1, 1), TP1: EpochData(1, 0)}))
    assert isinstance(resp, OffsetsForLeaderEpochResponse)
    assert (resp.partitions[TP].leader_epoch, resp.partitions[TP].end_offset) == (1, 4)
    assert resp.partitions[TP1].error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    v0 = rm.offsets_for_leader_epoch(OffsetsForLeaderEpochRequest(2, 0, {TP: EpochData(1, 1)}))
    assert (v0.partitions[TP].leader_epoch, v0.partitions[TP].end_offset) == (-1, 4)
    assert rm.list_offsets(ListOffsetsRequest(2, TP, 1, LATEST)) == ListOffsetsResponse(Errors.NONE, 4, 1)
    assert rm.list_offsets(ListOffsetsRequest(2, TP, 1, EARLIEST)) == ListOffsetsResponse(Errors.NONE, 0, 1)
    assert rm.list_offsets(ListOffsetsRequest(2, TP, 0, LATEST)).error == Errors.FENCED_LEADER_EPOCH


# --- produce -----------------------------------------------------------------------------------------

def test_acks_all_completes_when_followers_catch_up() -> None:
    """appendRecords acks=-1: parked until HW >= last offset + 1 (DelayedProduce), acks=1 answered now;
    produce_ack events record both."""
    events = EventLog()
    rm = leader_rm(isr=(1, 2), events=events)
    res = rm.append_records(TP, 1, 10, 5, 1, T0, request_id="a1")
    assert res is not None and (res.error, res.base_offset, res.last_offset) == (Errors.NONE, 0, 0)
    assert rm.append_records(TP, 2, 20, 6, -1, T0, request_id="a2") is None
    rm.fetch_messages(fetch_req(2, 1), T0 + 1)
    assert rm.take_completed_produces() == []
    rm.fetch_messages(fetch_req(2, 3), T0 + 2)
    done = rm.take_completed_produces()
    assert [(d.request_id, d.error, d.base_offset, d.last_offset) for d in done] == [("a2", Errors.NONE, 1, 2)]
    acks = [(e["acks"], e["error"], e["last_offset"]) for e in events if e["event_type"] == "produce_ack"]
    assert acks == [(1, "NONE", 0), (-1, "NONE", 2)]


def test_a_request_of_several_partitions_is_answered_when_the_last_is_settled() -> None:
    """appendRecords(entriesPerPartition) with acks=-1: one DelayedProduce for the request; a partition refused at
    once (TP1, not hosted) and a partition whose HW passes its batch early wait for the last one, and the response
    gives every partition's answer, in request order, with their produce_ack events; the timeout answers the ones
    still unsettled REQUEST_TIMED_OUT. acks=1 answers at once."""
    events = EventLog()
    rm = leader_rm(isr=(1, 2), events=events)
    batches = [ProduceBatch(TP, 1, 10, 5), ProduceBatch(TP1, 1, 10, 6), ProduceBatch(TP, 2, 20, 7)]
    assert rm.append_records_to_partitions(batches, -1, T0, request_id="m") is None
    rm.fetch_messages(fetch_req(2, 1), T0 + 1)  # HW 1: the first batch is settled, the request is not
    assert rm.take_completed_produce_requests() == [] and rm.take_completed_produces() == []
    assert [e for e in events if e["event_type"] == "produce_ack"] == []
    rm.fetch_messages(fetch_req(2, 3), T0 + 2)
    ((request_id, results),) = rm.take_completed_produce_requests()
    refused = rm.append_records(TP1, 1, 10, 8, -1, T0 + 2)  # what the partition alone is answered
    assert refused is not None and refused.error != Errors.NONE
    assert request_id == "m" and [(r.tp, r.error, r.base_offset, r.last_offset) for r in results] == [
        (TP, Errors.NONE, 0, 0), (TP1, refused.error, -1, -1), (TP, Errors.NONE, 1, 2)]
    acks = [(e["ts_ms"], e["partition"], e["error"], e["batch_checksum"]) for e in events
            if e["event_type"] == "produce_ack"]
    assert acks[:3] == [(T0 + 2, TP.partition, "NONE", 5), (T0 + 2, TP1.partition, str(refused.error), 6),
                        (T0 + 2, TP.partition, "NONE", 7)]
    assert rm.append_records_to_partitions([ProduceBatch(TP, 1, 10, 9)], -1, T0 + 3, "x", timeout_ms=100) is None
    rm.tick(T0 + 102)
    assert rm.take_completed_produce_requests() == []
    rm.tick(T0 + 103)
    assert [(r.request_id, r.error) for c in rm.take_completed_produce_requests() for r in c.results] == [
        ("x", Errors.REQUEST_TIMED_OUT)]
    now = rm.append_records_to_partitions([ProduceBatch(TP, 1, 10, 10), ProduceBatch(TP1, 1, 10, 11)], 1, T0 + 4)
    assert now is not None and [r.error for r in now] == [Errors.NONE, refused.error]


def test_acks_all_min_isr_and_timeout() -> None:
    """NOT_ENOUGH_REPLICAS before the append under min ISR; REQUEST_TIMED_OUT when the HW never gets
    there; invalid acks rejected."""
    rm = leader_rm(isr=(1,), min_isr=2)
    res = rm.append_records(TP, 1, 10, 5, -1, T0)
    assert res is not None and res.error == Errors.NOT_ENOUGH_REPLICAS
    assert rm.append_records(TP, 1, 10, 5, 2, T0).error == Errors.INVALID_REQUIRED_ACKS  # type: ignore[union-attr]
    rm2 = leader_rm(isr=(1, 2), min_isr=2)
    assert rm2.append_records(TP, 1, 10, 5, -1, T0, request_id="t", timeout_ms=1000) is None
    rm2.tick(T0 + 1000)
    assert [(d.request_id, d.error) for d in rm2.take_completed_produces()] == [("t", Errors.REQUEST_TIMED_OUT)]


def test_acks_all_waits_while_under_min_isr_until_isr_restored() -> None:
    """3.7+ (KIP-966 part 1): after the ISR shrinks below min ISR the HW is frozen, so a parked acks=all
    produce waits even when a follower catches up; it completes once the expansion is committed."""
    rm = leader_rm(isr=(1, 2), min_isr=2)
    assert rm.append_records(TP, 1, 10, 5, -1, T0, request_id="s") is None
    rm.maybe_shrink_isr(T0 + 30_001)
    (req,) = rm.take_alter_partition_requests()
    rm.handle_alter_partition_response(req, LeaderAndIsr(1, 1, req.leader_and_isr.isr, 2), T0 + 30_002)
    p = rm.get_partition(TP)
    assert p is not None and p.isr == {1} and p.is_under_min_isr
    rm.fetch_messages(fetch_req(2, 1, max_wait_ms=0), T0 + 30_003)
    assert p.log.high_watermark == 0 and rm.take_completed_produces() == []
    (expand,) = rm.take_alter_partition_requests()
    rm.handle_alter_partition_response(expand, LeaderAndIsr(1, 1, expand.leader_and_isr.isr, 3), T0 + 30_004)
    assert p.isr == {1, 2} and p.log.high_watermark == 1
    assert [(d.request_id, d.error) for d in rm.take_completed_produces()] == [("s", Errors.NONE)]


# --- ISR expiration and AlterPartition -------------------------------------------------------------------

def test_isr_expiration_and_single_inflight_rpc() -> None:
    """isr-expiration shrinks lagging followers through AlterPartition; one RPC in flight per broker,
    and a second item for a partition already outstanding is refused (reset to committed)."""
    rm = ReplicaManager(1, ReplicationConfig())
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2, 3)), TP1: reg(1, 1, (1, 2))}), T0)
    rm.maybe_shrink_isr(T0 + 15_000)
    assert rm.take_alter_partition_requests() == []
    rm.maybe_shrink_isr(T0 + 30_001)
    batch = rm.take_alter_partition_requests()
    assert sorted((r.partition, r.leader_and_isr.isr) for r in batch) == [(0, (1,)), (1, (1,))]
    assert rm.take_alter_partition_requests() == []  # the RPC is in flight
    rm.handle_alter_partition_response(batch[0], LeaderAndIsr(1, 1, (1,), 2), T0 + 30_002)
    assert rm.get_partition(TP).isr == {1}  # type: ignore[union-attr]
    rm.handle_alter_partition_response(batch[1], Errors.NETWORK_EXCEPTION, T0 + 30_002)
    (retry,) = rm.take_alter_partition_requests()
    assert retry is batch[1] and rm.alter_partition_manager.rpcs_sent == 2


def test_partition_should_retry_alter_partition_request() -> None:
    """PartitionTest.testPartitionShouldRetryAlterPartitionRequest with the real manager: first answer
    UNKNOWN_SERVER_ERROR, second success -> ISR {1..4}, partition epoch 2, two RPCs sent."""
    sent: list[list[AlterPartitionRequest]] = []

    class Controller:
        def send_alter_partition(self, broker_id: int, requests: Sequence[AlterPartitionRequest], now_ms: int) -> None:
            sent.append(list(requests))

    rm = ReplicaManager(1, ReplicationConfig(), controller=Controller())
    rm.become_leader_or_follower(lai({TP: reg(1, 5, (1, 2, 3), replicas=(1, 2, 3, 4))}), T0)
    rm.fetch_messages(fetch_req(4, 0, epoch=5, max_wait_ms=0), T0)
    assert len(sent) == 1 and sent[0][0].leader_and_isr.isr == (1, 2, 3, 4)
    rm.handle_alter_partition_response(sent[0][0], Errors.UNKNOWN_SERVER_ERROR, T0)
    assert len(sent) == 2
    req = sent[1][0]
    rm.handle_alter_partition_response(req, LeaderAndIsr(1, 5, req.leader_and_isr.isr, 2), T0)
    p = rm.get_partition(TP)
    assert p is not None and p.isr == {1, 2, 3, 4} and p.partition_epoch == 2
    assert rm.alter_partition_manager.rpcs_sent == 2 and rm.alter_partition_manager.outstanding == 0


def test_alter_partition_rpc_failure_resends_items() -> None:
    """A failed AlterPartition RPC (e.g. NOT_CONTROLLER) keeps its items queued for the next RPC."""
    rm = ReplicaManager(1, ReplicationConfig())
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2))}), T0)
    rm.maybe_shrink_isr(T0 + 30_001)
    first = rm.take_alter_partition_requests()
    rm.handle_alter_partition_rpc_failure(T0 + 30_002)
    assert rm.take_alter_partition_requests() == first


def test_same_epoch_metadata_abandoning_a_pending_expansion_is_an_event() -> None:
    """PartitionTest.testAlterIsrLeaderAndIsrRace with events (nemesis-small seed 3): an expansion is in
    flight; a metadata update with the same leader epoch, a newer partition epoch and the *same* ISR
    reaches the leader (`makeLeader` -> `updateAssignmentAndIsr` sets `CommittedPartitionState`, so the
    proposal is abandoned). The follower's next fetch proposes the expansion again, which the manager
    refuses (the old item is still outstanding) and the partition resets. The event stream must show the
    abandonment (a committed `update`), or the checker sees two proposals with no end between them
    (isr_single_inflight)."""
    from replication_core.checker.checker import check_events

    events = EventLog()
    rm = leader_rm(isr=(1, 2), events=events)
    p = rm.get_partition(TP)
    assert p is not None
    rm.fetch_messages(fetch_req(3, 0, max_wait_ms=0), T0 + 1)
    (first,) = rm.take_alter_partition_requests()
    assert p.partition_state.is_inflight and p.maximal_isr == {1, 2, 3}

    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2), partition_epoch=3)}), T0 + 2)
    assert not p.partition_state.is_inflight and p.partition_epoch == 3 and p.maximal_isr == {1, 2}
    update = [e for e in events if e["event_type"] == "isr_change"][-1]
    assert (update["action"], update["isr_state"], update["reason"]) == ("update", "committed", "leader_and_isr")
    assert (update["old_isr"], update["isr"], update["partition_epoch"]) == ([1, 2], [1, 2], 3)

    rm.fetch_messages(fetch_req(3, 0, max_wait_ms=0), T0 + 3)  # refused: `first` is still outstanding
    assert not p.partition_state.is_inflight
    assert [(e["isr_state"], e.get("reason")) for e in events if e["event_type"] == "isr_change"][-2:] == [
        ("proposed", "follower_caught_up"), ("rejected", "reset_to_committed")]
    # The old item's answer is for a state that no longer exists: ignored; the next expansion goes out.
    rm.handle_alter_partition_response(first, Errors.INVALID_UPDATE_VERSION, T0 + 4)
    rm.fetch_messages(fetch_req(3, 0, max_wait_ms=0), T0 + 5)
    (second,) = rm.take_alter_partition_requests()
    assert second.leader_and_isr.partition_epoch == 3 and p.partition_state.is_inflight

    stamped = [{**ev, "schema_version": "1.1", "source": "engine", "run_id": "r", "event_id": i}
               for i, ev in enumerate(events)]
    result = check_events(stamped)
    assert [v for v in result.violations if v.invariant == "isr_single_inflight"] == []


def _expanded_by_answer(events: EventLog) -> tuple[ReplicaManager, Partition]:
    """Leader 1 of replicas 1-4, ISR {1, 2} at partition epoch 1; follower 3 catches up and the answer to
    the expansion commits ISR {1, 2, 3} at partition epoch 2, before any metadata says so."""
    rm = ReplicaManager(1, ReplicationConfig(), events=events)
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2), replicas=(1, 2, 3, 4))}), T0)
    p = rm.get_partition(TP)
    assert p is not None
    rm.fetch_messages(fetch_req(3, 0, max_wait_ms=0), T0 + 1)
    (expand,) = rm.take_alter_partition_requests()
    rm.handle_alter_partition_response(expand, LeaderAndIsr(1, 1, (1, 2, 3), 2), T0 + 2)
    assert p.isr == {1, 2, 3} and p.partition_epoch == 2 and not p.partition_state.is_inflight
    return rm, p


def test_metadata_with_the_answered_partition_epoch_abandons_a_later_proposal() -> None:
    """PartitionTest.testAlterIsrLeaderAndIsrRace through the ReplicaManager (KRaft `applyDelta` ->
    `applyLocalLeadersDelta` -> `makeLeader`): after the answer (partition epoch 2) the leader proposes
    adding 4; then the metadata carrying the answered registration arrives. It is a change for this broker
    (its image has partition epoch 1), and `makeLeader` accepts a partition epoch equal to its own, so the
    committed ISR becomes the registration's and the pending proposal is abandoned."""
    events = EventLog()
    rm, p = _expanded_by_answer(events)
    rm.fetch_messages(fetch_req(4, 0, max_wait_ms=0), T0 + 3)
    (expand4,) = rm.take_alter_partition_requests()
    assert p.partition_state.is_inflight and p.maximal_isr == {1, 2, 3, 4}

    answered = reg(1, 1, (1, 2, 3), replicas=(1, 2, 3, 4), partition_epoch=2)
    result = rm.become_leader_or_follower(lai({TP: answered}), T0 + 4)
    assert result.errors == {TP: Errors.NONE} and not result.new_leaders
    assert not p.partition_state.is_inflight and p.isr == {1, 2, 3} and p.partition_epoch == 2
    update = [e for e in events if e["event_type"] == "isr_change"][-1]
    assert (update["action"], update["isr_state"], update["reason"]) == ("update", "committed", "leader_and_isr")
    assert (update["old_isr"], update["isr"], update["partition_epoch"]) == ([1, 2, 3], [1, 2, 3], 2)
    # The abandoned proposal's answer is for a state that no longer exists: ignored.
    rm.handle_alter_partition_response(expand4, LeaderAndIsr(1, 1, (1, 2, 3, 4), 3), T0 + 5)
    assert p.isr == {1, 2, 3} and p.partition_epoch == 2


def test_unchanged_metadata_resend_leaves_a_pending_proposal_alone() -> None:
    """The simulator's controller resends a broker's registrations when the broker registers again or is
    unfenced (`_send_full_state`). In KRaft an unchanged registration is in no metadata delta, so it never
    reaches `makeLeader`: a registration equal to the last one this ReplicaManager received is refused
    (STALE_CONTROLLER_EPOCH, as for a same-epoch LeaderAndIsr) and a proposal started since stays in
    flight, with no event. (Accepting every equal partition epoch would abandon it.)"""
    events = EventLog()
    rm, p = _expanded_by_answer(events)
    answered = {TP: reg(1, 1, (1, 2, 3), replicas=(1, 2, 3, 4), partition_epoch=2)}
    assert rm.become_leader_or_follower(lai(answered), T0 + 3).errors == {TP: Errors.NONE}
    rm.fetch_messages(fetch_req(4, 0, max_wait_ms=0), T0 + 4)
    assert p.partition_state.is_inflight
    seen = len(events)

    result = rm.become_leader_or_follower(lai(answered), T0 + 5)
    assert result.errors == {TP: Errors.STALE_CONTROLLER_EPOCH}
    assert p.partition_state.is_inflight and p.maximal_isr == {1, 2, 3, 4} and events[seen:] == []


def test_a_new_replica_manager_applies_the_registration_its_predecessor_had() -> None:
    """A restarted broker's ReplicaManager starts from an empty image (KRaft: the first delta a broker
    applies is against the empty image, so every partition in it is a change): the registration the
    crashed process had applied is applied again, on the surviving log."""
    log = Log("orders", 0, 1)
    log.append_as_leader(2, 20, 7, 0)
    state = {TP: reg(1, 1, (1, 2))}
    ReplicaManager(1, ReplicationConfig(), logs={TP: log}).become_leader_or_follower(lai(state), T0)
    restarted = ReplicaManager(1, ReplicationConfig(), logs={TP: log})
    result = restarted.become_leader_or_follower(lai(state), T0 + 1)
    assert result.errors == {TP: Errors.NONE} and result.new_leaders == {TP}
    p = restarted.get_partition(TP)
    assert p is not None and p.is_leader and p.log is log


# --- end to end with the real fetcher ----------------------------------------------------------------

class LeaderAdapter:
    """Exposes a leader's ReplicaManager as the fetcher's synchronous `LeaderEndPoint`; a parked fetch
    is answered at its expiry (the follower would otherwise wait)."""

    def __init__(self, rm: ReplicaManager, clock: list[int]) -> None:
        self.rm = rm
        self.clock = clock

    def fetch(self, request: FetchRequest) -> FetchResponse:
        resp = self.rm.fetch_messages(request, self.clock[0], request_id="r")
        if resp is None:
            self.clock[0] += request.max_wait_ms
            self.rm.tick(self.clock[0])
            (done,) = self.rm.take_completed_fetches()
            resp = done.response
        return resp

    def fetch_epoch_end_offsets(self, request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        return self.rm.offsets_for_leader_epoch(request)

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        return self.rm.list_offsets(request)


def test_end_to_end_replication_and_divergence_with_real_fetcher() -> None:
    """Leader (1) and follower (2) ReplicaManagers with a ReplicaFetcherThread: the follower joins the
    ISR, HW propagates; after a leader change the old leader's unreplicated suffix is truncated from
    the new leader's DivergingEpoch (KIP-101 / KIP-595 flow) and the logs converge."""
    clock = [T0]
    cfg = ReplicationConfig()
    rm1, rm2 = ReplicaManager(1, cfg), ReplicaManager(2, cfg)
    rm1.become_leader_or_follower(lai({TP: reg(1, 1, (1,), replicas=(1, 2))}), clock[0])
    res = rm2.become_leader_or_follower(lai({TP: reg(1, 1, (1,), replicas=(1, 2))}), clock[0])

    def fetcher_for(rm: ReplicaManager, leader: int) -> ReplicaFetcherThread:
        return ReplicaFetcherThread(rm.broker_id, 0, BrokerEndPoint(leader), cfg,
                                    lambda tp: rm.get_partition(tp).log)  # type: ignore[union-attr]

    f2 = fetcher_for(rm2, 1)
    f2.add_partitions(res.fetchers_to_add, clock[0])
    for i in range(3):
        rm1.append_records(TP, 2, 20, 100 + i, 1, clock[0])
    for _ in range(3):
        f2.do_work(clock[0], LeaderAdapter(rm1, clock))
        for req in rm1.take_alter_partition_requests():
            rm1.handle_alter_partition_response(req, LeaderAndIsr(1, 1, req.leader_and_isr.isr, 2), clock[0])
    p1, p2 = rm1.get_partition(TP), rm2.get_partition(TP)
    assert p1 is not None and p2 is not None
    assert p1.isr == {1, 2} and p1.log.high_watermark == 6 and p2.log.high_watermark == 6
    assert p2.log.batches == p1.log.batches
    # Broker 1 appends two batches nobody replicates, then broker 2 is elected (epoch 2).
    rm1.append_records(TP, 1, 10, 200, 1, clock[0])
    rm1.append_records(TP, 1, 10, 201, 1, clock[0])
    new = {TP: reg(2, 2, (2, 1), replicas=(1, 2), partition_epoch=3)}
    rm2.become_leader_or_follower(lai(new), clock[0])
    res1 = rm1.become_leader_or_follower(lai(new), clock[0])
    rm2.append_records(TP, 1, 10, 300, 1, clock[0])
    f1 = fetcher_for(rm1, 2)
    f1.add_partitions(res1.fetchers_to_add, clock[0])
    for _ in range(4):
        f1.do_work(clock[0], LeaderAdapter(rm2, clock))
    assert [b.checksum for b in p1.log.batches] == [100, 101, 102, 300]
    assert p1.log.batches == p2.log.batches and p1.log.epoch_cache.entries == p2.log.epoch_cache.entries


def test_a_read_ending_inside_a_batch_counts_its_bytes_and_one_cutting_its_first_batch_is_empty() -> None:
    """`ReplicaManager.readFromLog` over `LogSegment.read`'s byte ranges, in a 300-byte response with
    `replica.fetch.max.bytes` 250: `orders-0` (100-byte batches) sends two batches and 50 bytes of the third, which
    count against the response; `orders-1` (100-byte batches) would get the 50 left, less than its first batch
    (no min one message after a partition with records): `checkFetchDataInfo` replaces that with an empty set
    (`firstEntryIncomplete`), which costs nothing, so `orders-2` (30-byte batches) gets the 50, one batch and 20
    bytes of the next. The follower appends the whole batches only, fetches on from the cut batch, and records the
    bytes the leader sent (Kafka's quotas count them) with the records of the whole batches. Later rounds fetch the
    rest."""
    clock = [T0]
    cfg = ReplicationConfig(replica_fetch_max_bytes=250, replica_fetch_response_max_bytes=300)
    tp2 = TopicPartition("orders", 2)
    parts = (TP, TP1, tp2)
    states = {tp: reg(1, 1, (1, 2), replicas=(1, 2)) for tp in parts}
    rm1, rm2 = ReplicaManager(1, cfg), ReplicaManager(2, cfg)
    rm1.become_leader_or_follower(lai(states), clock[0])
    res = rm2.become_leader_or_follower(lai(states), clock[0])
    for tp in parts:
        for i in range(3):
            rm1.append_records(tp, 2 if tp != tp2 else 1, 100 if tp != tp2 else 30, 10 * tp.partition + i, 1,
                               clock[0])
    leader = rm1.get_partition(TP1)
    assert leader is not None
    cut = leader.fetch_records(2, 0, 50, clock[0], current_leader_epoch=1, min_one_message=False,
                               update_fetch_state=False)
    assert (cut.batches, cut.size_bytes, cut.partial_bytes) == ((), 50, 50)  # LogSegment.read's range itself
    events = EventLog()
    fetcher = ReplicaFetcherThread(2, 0, BrokerEndPoint(1), cfg,
                                   lambda tp: rm2.get_partition(tp).log,  # type: ignore[union-attr]
                                   events=events)
    fetcher.add_partitions(res.fetchers_to_add, clock[0])
    rounds: list[list[tuple[int, int, int, int]]] = []
    for _ in range(4):
        events.clear()
        fetcher.do_work(clock[0], LeaderAdapter(rm1, clock))
        rounds.append([(int(e["partition"]), int(e["fetch_offset"]), int(e["bytes"]), int(e["record_count"]))
                       for e in events if e["event_type"] == "fetch_response"])
    # (partition, fetch offset, bytes, records): 2 whole batches + 50 bytes; nothing; 1 whole batch + 20 bytes.
    assert rounds[0] == [(0, 0, 250, 4), (1, 0, 0, 0), (2, 0, 50, 1)]
    # orders-2 gets no byte of the budget; having a lag and nothing appended, it keeps its place (no
    # updateAndMoveToEnd), so it is fetched first in the next round.
    assert rounds[1] == [(0, 4, 100, 2), (1, 0, 200, 4), (2, 1, 0, 0)]
    assert rounds[2] == [(2, 1, 60, 2), (0, 6, 0, 0), (1, 4, 100, 2)]
    for tp in parts:
        mine, theirs = rm2.get_partition(tp), rm1.get_partition(tp)
        assert mine is not None and theirs is not None and mine.log.batches == theirs.log.batches


def test_leader_quota_blanks_out_of_isr_throttled_follower() -> None:
    """§2.2 step 7 / KIP-73: an out-of-ISR follower of a throttled partition gets no records while the
    leader quota is exceeded (its fetch state is still updated); in-ISR followers are never throttled;
    throttled bytes are recorded against the leader quota."""
    from replication_core.quota import LEADER as QUOTA_LEADER
    from replication_core.quota import ReplicationQuotaManager

    events = EventLog()
    quota = ReplicationQuotaManager(QUOTA_LEADER, 1, emit=events.append)
    quota.mark_throttled("orders")
    rm = ReplicaManager(1, ReplicationConfig(), leader_quota=quota, events=events)
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2))}), T0)
    rm.append_records(TP, 3, 300, 1, 1, T0)
    r = rm.fetch_messages(fetch_req(3, 0, max_wait_ms=0), T0)  # quota not set: never exceeded
    assert r is not None and r.partitions[TP].size_bytes == 300
    assert quota.rate(T0) > 0
    quota.update_quota(1.0)  # far below what was just recorded
    r = rm.fetch_messages(fetch_req(3, 0, max_wait_ms=0), T0 + 10)
    assert r is not None and r.partitions[TP].batches == () and r.partitions[TP].error == Errors.NONE
    replica = rm.get_partition(TP).get_replica(3)  # type: ignore[union-attr]
    assert replica is not None and replica.last_fetch_time_ms == T0 + 10
    assert [e["follower_id"] for e in events if e["event_type"] == "quota_throttle"] == [3]
    r = rm.fetch_messages(fetch_req(2, 0, max_wait_ms=0), T0 + 20)  # in the ISR: not throttled
    assert r is not None and r.partitions[TP].size_bytes == 300


def test_leader_quota_records_the_fetch_response_size_of_throttled_partitions() -> None:
    """`KafkaApis.sizeOfThrottledPartitions`: after each follower fetch the leader records the size of a
    v12 fetch response holding only the throttled partitions (`FetchResponse.sizeOf`), not their record
    bytes. `orders-0` (throttled) carries 300 record bytes and `orders-1` (not throttled) 200: 16 (response)
    + 9 (topic "orders": name 1 + 6, partition count 1, tagged fields 1) + 338 (partition: 35 fixed, records
    length varint(301) 2, 300, tagged fields 1) = 363. A fetch of `orders-1` alone records the 16 bytes of a
    response with no topics (Kafka records it too)."""
    from replication_core.quota import LEADER as QUOTA_LEADER
    from replication_core.quota import ReplicationQuotaManager

    quota = ReplicationQuotaManager(QUOTA_LEADER, 1)
    quota.mark_throttled("orders", [0])
    rm = ReplicaManager(1, ReplicationConfig(), leader_quota=quota)
    rm.become_leader_or_follower(lai({TP: reg(1, 1, (1, 2)), TP1: reg(1, 1, (1, 2))}), T0)
    rm.append_records(TP, 3, 300, 1, 1, T0)
    rm.append_records(TP1, 2, 200, 2, 1, T0)
    both = {TP: FetchPartitionData(0, 0, 1_000_000, 1), TP1: FetchPartitionData(0, 0, 1_000_000, 1)}
    r = rm.fetch_messages(FetchRequest(2, -1, 0, 1, 10_000_000, both), T0)
    assert r is not None and [r.partitions[tp].size_bytes for tp in (TP, TP1)] == [300, 200]
    assert quota.rate(T0) == 363.0  # one sample, measured over one 1 s window
    unthrottled = {TP1: FetchPartitionData(2, 0, 1_000_000, 1)}
    assert rm.fetch_messages(FetchRequest(2, -1, 0, 1, 10_000_000, unthrottled), T0) is not None
    assert quota.rate(T0) == 363.0 + 16


def _check_event(ev: dict[str, Any]) -> None:
    """Schema contract of one engine event (required payload, allowed values, non-negative numbers)."""
    from schemas.events import payload_problems

    assert payload_problems(ev) == [], ev


def test_engine_events_conform_to_the_schema() -> None:
    """Every event of a replication run (leaders, followers, ISR changes, acks, truncation) carries its
    required columns with allowed values, and the batch converts to the arrow EVENT_SCHEMA."""
    import pyarrow as pa

    from schemas.events import EVENT_SCHEMA, SCHEMA_VERSION

    clock = [T0]
    events = EventLog()
    cfg = ReplicationConfig()
    rm1 = ReplicaManager(1, cfg, events=events)
    rm2 = ReplicaManager(2, cfg, events=events)
    states = {TP: reg(1, 1, (1,), replicas=(1, 2))}
    rm1.become_leader_or_follower(lai(states), clock[0])
    res = rm2.become_leader_or_follower(lai(states), clock[0])
    f2 = ReplicaFetcherThread(2, 0, BrokerEndPoint(1), cfg, lambda tp: rm2.get_partition(tp).log,  # type: ignore[union-attr]
                              events=events)
    f2.add_partitions(res.fetchers_to_add, clock[0])
    rm1.append_records(TP, 2, 20, 1, -1, clock[0], request_id="p")
    for _ in range(3):
        f2.do_work(clock[0], LeaderAdapter(rm1, clock))
        for req in rm1.take_alter_partition_requests():
            rm1.handle_alter_partition_response(req, LeaderAndIsr(1, 1, req.leader_and_isr.isr, 2), clock[0])
    rm1.append_records(TP, 1, 10, 2, 1, clock[0])  # follower 2 is no longer at the leader LEO
    rm1.maybe_shrink_isr(clock[0] + 60_000)
    for req in rm1.take_alter_partition_requests():
        rm1.handle_alter_partition_response(req, Errors.INVALID_UPDATE_VERSION, clock[0] + 60_000)
    rm2.get_partition(TP).truncate_to(1, clock[0], "high_watermark")  # type: ignore[union-attr]
    shrinks = [e for e in events if e["event_type"] == "isr_change" and e["action"] == "shrink"]
    assert [e["isr_state"] for e in shrinks] == ["proposed", "rejected"]
    assert shrinks[0]["out_of_sync_replicas"][0]["replica_id"] == 2
    kinds = {e["event_type"] for e in events}
    assert {"leadership_change", "append", "hw_change", "follower_fetch_state", "isr_change", "produce_ack",
            "truncation", "fetch", "fetch_response"} <= kinds
    for ev in events:
        _check_event(ev)
    rows = [dict(ev, schema_version=SCHEMA_VERSION, source="engine", run_id="r", event_id=i)
            for i, ev in enumerate(events)]
    table = pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)
    assert table.num_rows == len(events)


# --- EpochDrivenReplicationProtocolAcceptanceTest ports (reference §7.4), on a tiny in-test cluster -----

class MiniCluster:
    """Brokers = ReplicaManagers + the real fetcher threads; disks = the logs kept across restarts; the
    controller is this test code (elections and AlterPartition answers, ZK-style epoch bumps)."""

    def __init__(self, ids: Sequence[int], cfg: ReplicationConfig | None = None) -> None:
        self.cfg = cfg or ReplicationConfig()
        self.ids = tuple(ids)
        self.clock = [T0]
        self.disks: dict[int, dict[TopicPartition, Log]] = {b: {} for b in ids}
        self.rms: dict[int, ReplicaManager] = {}
        self.fetchers: dict[int, ReplicaFetcherThread] = {}
        self.leader: int | None = None
        self.epoch = -1
        self.partition_epoch = 0
        self.isr: tuple[int, ...] = ()
        self.checksum = 0

    def start(self, b: int) -> None:
        self.rms[b] = ReplicaManager(b, self.cfg, logs=self.disks[b])

    def stop(self, b: int, keep_flushed_only: bool = False) -> None:
        rm = self.rms.pop(b)
        self.fetchers.pop(b, None)
        for tp, p in rm.partitions.items():
            self.disks[b][tp] = p.log
            if keep_flushed_only:
                p.log.recover_to_flushed()

    def elect(self, leader: int, isr: Sequence[int]) -> None:
        """The controller's LeaderAndIsr to every live broker (new leader epoch)."""
        self.epoch += 1
        self.partition_epoch += 1
        self.leader, self.isr = leader, tuple(isr)
        self.inform(*self.rms)

    def inform(self, *brokers: int) -> None:
        """Send the current partition state (no epoch bump), e.g. to a broker that just restarted."""
        assert self.leader is not None
        state = PartitionRegistration(self.leader, self.epoch, self.isr, self.ids, self.partition_epoch)
        leader = self.leader
        for b in brokers:
            rm = self.rms[b]
            res = rm.become_leader_or_follower(lai({TP: state}, controller_epoch=1), self.clock[0])
            if b == leader:
                self.fetchers.pop(b, None)
            elif res.fetchers_to_add:
                f = ReplicaFetcherThread(b, 0, BrokerEndPoint(leader), self.cfg,
                                         lambda tp, rm=rm: rm.get_partition(tp).log)  # type: ignore[misc, union-attr]
                f.add_partitions(res.fetchers_to_add, self.clock[0])
                self.fetchers[b] = f

    def produce(self, n: int = 1, acks: int = -1, size: int = 10) -> None:
        assert self.leader is not None
        for _ in range(n):
            self.checksum += 1
            self.rms[self.leader].append_records(TP, 1, size, self.checksum, acks, self.clock[0])

    def replicate(self, rounds: int = 6) -> None:
        """Followers fetch; the controller answers AlterPartition (accepting current-epoch requests)."""
        assert self.leader is not None
        leader_rm = self.rms[self.leader]
        for _ in range(rounds):
            for b, f in list(self.fetchers.items()):
                if b in self.rms:
                    f.do_work(self.clock[0], LeaderAdapter(leader_rm, self.clock))
            for req in leader_rm.take_alter_partition_requests():
                sent = req.leader_and_isr
                if sent.leader_epoch != self.epoch:
                    leader_rm.handle_alter_partition_response(req, Errors.FENCED_LEADER_EPOCH, self.clock[0])
                    continue
                self.partition_epoch += 1
                self.isr = sent.isr
                leader_rm.handle_alter_partition_response(
                    req, LeaderAndIsr(sent.leader, sent.leader_epoch, sent.isr, self.partition_epoch), self.clock[0])
            leader_rm.take_completed_produces()

    def log(self, b: int) -> Log:
        rm = self.rms.get(b)
        p = rm.get_partition(TP) if rm is not None else None
        return p.log if p is not None else self.disks[b][TP]

    def cache(self, b: int) -> list[tuple[int, int]]:
        return [tuple(e) for e in self.log(b).epoch_cache.entries]  # type: ignore[misc]


def test_should_follow_leader_epoch_basic_workflow() -> None:
    """EpochDrivenReplicationProtocolAcceptanceTest.shouldFollowLeaderEpochBasicWorkflow, with trunk
    semantics: the leader caches its new epoch at makeLeader (KAFKA-7415), the follower only when a batch
    of that epoch arrives."""
    c = MiniCluster((100, 101))
    c.start(100)
    c.start(101)
    c.elect(100, (100, 101))
    c.produce()
    c.replicate()
    assert c.log(100).batches[-1].leader_epoch == 0 and c.log(101).batches[-1].leader_epoch == 0
    assert c.cache(100) == c.cache(101) == [(0, 0)]
    # Bounce the follower (the ZK controller bumps the leader epoch when it removes it from the ISR).
    c.stop(101)
    c.elect(100, (100,))
    c.start(101)
    c.inform(101)
    c.replicate()
    assert set(c.isr) == {100, 101}
    assert c.cache(100) == [(0, 0), (1, 1)] and c.cache(101) == [(0, 0)]
    c.produce()
    c.replicate()
    assert c.cache(100) == c.cache(101) == [(0, 0), (1, 1)]
    assert c.log(100).batches[-1].leader_epoch == c.log(101).batches[-1].leader_epoch == 1
    # Bounce the leader: 101 takes over at epoch 2.
    c.stop(100)
    c.elect(101, (101,))
    c.start(100)
    c.inform(100)
    c.replicate()
    assert set(c.isr) == {100, 101}
    assert c.cache(101) == [(0, 0), (1, 1), (2, 2)] and c.cache(100) == [(0, 0), (1, 1)]
    c.produce()
    c.replicate()
    assert c.log(100).batches[-1].leader_epoch == c.log(101).batches[-1].leader_epoch == 2
    assert c.cache(100) == c.cache(101) == [(0, 0), (1, 1), (2, 2)]


def test_should_not_allow_divergent_logs() -> None:
    """EpochDrivenReplicationProtocolAcceptanceTest.shouldNotAllowDivergentLogs: the leader crashes and
    loses its last 5 records, is re-elected and takes 10 new ones; the follower (which had all 10 old
    ones) truncates by epoch and the logs match."""
    c = MiniCluster((100, 101))
    c.start(100)
    c.start(101)
    c.elect(100, (100, 101))
    for _ in range(10):
        c.produce()
        c.replicate(2)
    assert c.log(101).log_end_offset == 10
    c.log(100).flush(5)
    c.stop(100, keep_flushed_only=True)
    c.stop(101)
    assert c.log(100).log_end_offset == 5
    c.start(100)
    c.elect(100, (100,))
    c.produce(10, acks=1, size=20)
    c.start(101)
    c.inform(101)
    c.replicate(10)
    assert c.log(100).batches == c.log(101).batches and c.log(101).log_end_offset == 15


def test_should_survive_fast_leader_change() -> None:
    """EpochDrivenReplicationProtocolAcceptanceTest.shouldSurviveFastLeaderChange: five rounds of
    write, bounce follower, bounce leader; no acknowledged record is lost."""
    c = MiniCluster((100, 101))
    c.start(100)
    c.start(101)
    c.elect(100, (100, 101))
    c.produce()
    c.replicate()
    written = 1
    for _ in range(5):
        leader = c.leader
        assert leader is not None
        follower = 101 if leader == 100 else 100
        c.produce()
        c.replicate()
        written += 1
        c.stop(follower)
        c.elect(leader, (leader,))
        c.start(follower)
        c.inform(follower)
        c.replicate()
        assert set(c.isr) == {100, 101}
        c.stop(leader)
        c.elect(follower, (follower,))
        c.start(leader)
        c.inform(leader)
        c.replicate()
        assert set(c.isr) == {100, 101}
        assert c.log(100).log_end_offset == c.log(101).log_end_offset == written


def test_logs_should_not_diverge_on_unclean_leader_elections() -> None:
    """EpochDrivenReplicationProtocolAcceptanceTest.logsShouldNotDivergeOnUncleanLeaderElections (the
    KIP-279 case): three unclean elections with acks=1, then both logs carry the same checksum sequence."""
    c = MiniCluster((100, 101), ReplicationConfig(unclean_leader_election_enable=True))
    c.start(100)
    c.start(101)
    c.elect(100, (100, 101))
    c.produce(acks=1)
    c.replicate()
    assert c.log(100).batches == c.log(101).batches
    c.stop(100)
    c.elect(101, (101,))
    c.produce(acks=1)
    c.stop(101)
    c.start(100)
    c.elect(100, (100,))  # unclean: 100 was not in the ISR
    c.produce(3, acks=1, size=20)
    c.stop(100)
    c.start(101)
    c.elect(101, (101,))  # unclean again
    c.produce(acks=1)
    c.stop(101)
    c.start(100)
    c.elect(100, (100,))
    c.produce(2, acks=1, size=20)
    c.start(101)
    c.inform(101)
    c.replicate(10)
    crc = [b.checksum for b in c.log(100).batches]
    assert crc == [b.checksum for b in c.log(101).batches]
    assert crc == [1, 3, 4, 5, 7, 8]


cluster_op = st.one_of(
    st.tuples(st.just("produce"), st.integers(1, 3)),
    st.tuples(st.just("replicate"), st.integers(1, 3)),
    st.tuples(st.just("stop"), st.sampled_from((100, 101, 102))),
    st.tuples(st.just("start"), st.sampled_from((100, 101, 102))),
    st.tuples(st.just("expire"), st.just(0)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(cluster_op, max_size=30))
def test_clean_elections_never_lose_acknowledged_writes(ops: list[tuple[str, int]]) -> None:
    """§11 invariants 3 and 4 on random runs (three brokers, clean elections, acks=all): every
    acknowledged record stays at its offset in the leader's log, and every live ISR member agrees with
    the leader below the leader's HW."""
    c = MiniCluster((100, 101, 102))
    for b in c.ids:
        c.start(b)
    c.elect(100, c.ids)
    acked: dict[int, int] = {}
    for kind, arg in ops:
        leader = c.leader
        if kind == "produce" and leader is not None and leader in c.rms:
            for _ in range(arg):
                c.checksum += 1
                res = c.rms[leader].append_records(TP, 1, 10, c.checksum, -1, c.clock[0], request_id=c.checksum)
                if res is not None and res.error == Errors.NONE:
                    acked[res.base_offset] = c.checksum
        elif kind == "replicate" and leader is not None and leader in c.rms:
            for _ in range(arg):
                c.replicate(1)
                for done in c.rms[leader].take_completed_produces():
                    if done.error == Errors.NONE:
                        acked[done.base_offset] = int(done.request_id)  # type: ignore[call-overload]
        elif kind == "stop" and arg in c.rms and len(c.rms) > 1:
            c.stop(arg)
            remaining = [b for b in c.isr if b != arg and b in c.rms]
            if arg == leader:
                if remaining:
                    c.elect(remaining[0], remaining)  # clean election from the ISR
                else:
                    c.leader = None  # offline: no ISR member alive
            elif leader is not None and arg in c.isr:
                c.elect(leader, [b for b in c.isr if b != arg])
        elif kind == "start" and arg not in c.rms:
            c.start(arg)
            if c.leader is None and arg in c.isr:
                c.elect(arg, (arg,))
            elif c.leader is not None:
                c.inform(arg)
        elif kind == "expire" and leader is not None and leader in c.rms:
            c.clock[0] += 30_001
            c.rms[leader].maybe_shrink_isr(c.clock[0])
            c.replicate(1)
        leader = c.leader
        if leader is None or leader not in c.rms:
            continue
        leader_log = c.log(leader)
        by_base = {b.base_offset: b.checksum for b in leader_log.batches}
        for offset, checksum in acked.items():
            assert by_base.get(offset) == checksum, f"acked record at {offset} lost or replaced"
        hw = leader_log.high_watermark
        committed = [b for b in leader_log.batches if b.last_offset < hw]
        for member in c.isr:
            if member != leader and member in c.rms:
                theirs = [b for b in c.log(member).batches if b.last_offset < hw]
                assert theirs == committed, f"ISR member {member} disagrees below HW {hw}"
