"""Events from the fetcher, the fetcher manager and the quota conform to `schemas.events`."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pyarrow as pa
import pytest

from replication_core.config import ReplicationConfig
from replication_core.errors import Errors
from replication_core.event_log import EventLog
from replication_core.events import Event
from replication_core.fetcher import ReplicaFetcherThread
from replication_core.fetcher_manager import FetcherManager, replica_fetcher_factory
from replication_core.leader_endpoint import FetchRequest, FetchResponse, ListOffsetsRequest
from replication_core.log import Log
from replication_core.partition_fetch_state import BrokerEndPoint, InitialFetchState, TopicPartition
from replication_core.quota import ReplicationQuotaManager
from replication_core.truncation import TruncationProtocol
from schemas.events import COLUMN_BY_NAME, EVENT_SCHEMA, EVENT_TYPES
from tests.core.mock_leader import FollowerHarness, MockLeaderEndPoint, make_harness, mk_batch, mk_log, seed


def run_mixed_workload() -> list[Event]:
    """Fetch, diverge, truncate, fail, throttle and resize, collecting every event."""
    events = EventLog()
    tps = [TopicPartition("t", p) for p in range(3)]
    logs: dict[TopicPartition, Log] = {
        tps[0]: mk_log([mk_batch(0, 0), mk_batch(1, 2)], hw=1, tp=tps[0]),   # will diverge
        tps[1]: mk_log([], tp=tps[1]),                                       # catch-up, then fenced
        tps[2]: mk_log([], tp=tps[2]),                                       # throttled
    }
    for log in logs.values():
        log.events = events
    leader = MockLeaderEndPoint()
    leader.set_leader(tps[0], [mk_batch(0, 0), mk_batch(1, 1), mk_batch(2, 3)], 3, 3)
    fenced = leader.set_leader(tps[1], seed(0, 3, 3), 3, 3)
    leader.set_leader(tps[2], seed(0, 3, 3), 3, 3)
    quota = ReplicationQuotaManager("follower", 2)
    quota.mark_throttled("t", [2])
    config = ReplicationConfig(num_replica_fetchers=2)
    factory = replica_fetcher_factory(2, config, logs.__getitem__, quota=quota, events=events)
    mgr = FetcherManager.from_config(2, config, factory, events.append)
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(BrokerEndPoint(1), 3, logs[tp].log_end_offset)
                                    for tp in tps}, 0)
    now = 0
    for step in range(6):
        now += 1000
        if step == 2:
            quota.update_quota(1.0)
        if step == 4:
            fenced.become_leader(4)
        for fetcher in mgr.fetchers.values():
            assert isinstance(fetcher, ReplicaFetcherThread)
            fetcher.do_work(now, leader)
    mgr.resize_thread_pool(3, now)
    return events


def test_events_fill_required_columns_with_allowed_values() -> None:
    """Every event has its type's required columns, non-negative numbers and allowed enum values."""
    events = run_mixed_workload()
    kinds = {e["event_type"] for e in events}
    assert {"fetch", "fetch_response", "truncation", "append", "hw_change", "fetcher_change",
            "quota_throttle"} <= kinds
    assert any(e["event_type"] == "fetch_response" and e["error"] == "FENCED_LEADER_EPOCH" for e in events)
    for e in events:
        et = EVENT_TYPES[e["event_type"]]
        for name in et.requires:
            assert e.get(name) is not None, (e["event_type"], name, e)
        if et.partition_scoped:
            assert e["topic"] is not None and e["partition"] is not None
        for name, value in e.items():
            col = COLUMN_BY_NAME[name]
            if value is None:
                continue
            if col.non_negative:
                assert value >= 0, (name, e)
            allowed = col.allowed_by_type.get(e["event_type"], col.allowed)
            if allowed:
                assert value in allowed, (name, value, e)


def test_events_build_an_arrow_table_with_the_event_schema() -> None:
    """The events convert to `EVENT_SCHEMA` (types, list-of-struct partitions) without loss."""
    events = run_mixed_workload()
    rows = [{**{name: None for name in EVENT_SCHEMA.names}, "schema_version": "1.0", "source": "engine",
             "run_id": "r", "event_id": i, **e} for i, e in enumerate(events)]
    table = pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)
    assert table.num_rows == len(events)


def test_a_response_processed_after_a_list_offsets_carries_its_arrival_time() -> None:
    """`processFetchRequest` runs `fetchOffsetAndTruncate` (ListOffsets) for an out-of-range partition inside
    its loop over the response: the partitions after it are processed later, but the response arrived once.
    `ts_ms` is the processing time of each partition and `response_received_ms` the arrival of the response."""
    out_of_range, later = TopicPartition("t", 0), TopicPartition("t", 1)
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH)
    h.add(out_of_range, mk_log([mk_batch(0, 0)], hw=0, tp=out_of_range), fetch_offset=3, leader_epoch=4)
    h.add(later, mk_log([], tp=later), fetch_offset=0, leader_epoch=4)
    h.leader.set_leader(out_of_range, seed(5, 3, 4), leader_epoch=4, hw=8, log_start_offset=5)
    h.leader.set_leader(later, seed(0, 3, 4), leader_epoch=4, hw=3)
    work = h.fetcher.work(0)
    fetch = next(work)
    assert isinstance(fetch, FetchRequest) and list(fetch.partitions) == [out_of_range, later]
    latest = work.send((h.leader.fetch(fetch), 100))  # the response arrives at 100
    assert isinstance(latest, ListOffsetsRequest) and latest.tp == out_of_range
    earliest = work.send((h.leader.list_offsets(latest), 400))
    assert isinstance(earliest, ListOffsetsRequest)
    with pytest.raises(StopIteration):
        work.send((h.leader.list_offsets(earliest), 700))
    responses = {e["partition"]: (e["error"], e["ts_ms"], e["response_received_ms"])
                 for e in h.events if e["event_type"] == "fetch_response"}
    assert responses == {0: ("OFFSET_OUT_OF_RANGE", 100, 100), 1: ("NONE", 700, 100)}


def test_a_failed_fetch_request_gives_each_partition_it_carried_the_requests_error() -> None:
    """`processFetchRequest` catches the exception of `leader.fetch` ("Error in response for fetch request") and
    delays every partition of the thread; each partition the request carried records the request's error, at the
    offset and epoch it was fetched with, and without any leader figure (there was no answer)."""
    sent, removed = TopicPartition("t", 0), TopicPartition("t", 1)
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH, ReplicationConfig(replica_fetch_backoff_ms=250))
    for tp in (sent, removed):
        h.add(tp, mk_log([mk_batch(0, 0)], hw=0, tp=tp), fetch_offset=1, leader_epoch=4)
        h.leader.set_leader(tp, seed(0, 3, 4), leader_epoch=4, hw=3)
    work = h.fetcher.work(0)
    fetch = next(work)
    assert isinstance(fetch, FetchRequest) and list(fetch.partitions) == [sent, removed]
    h.fetcher.remove_partitions({removed})  # gone before the failure arrives: nothing to record for it
    with pytest.raises(StopIteration):
        work.send((FetchResponse({}, Errors.NETWORK_EXCEPTION), 100))
    responses = [e for e in h.events if e["event_type"] == "fetch_response"]
    assert [(e["partition"], e["error"], e["fetch_offset"], e["leader_epoch"], e["leader_id"], e["leader_hw"],
             e["bytes"], e["ts_ms"], e["response_received_ms"]) for e in responses] == [
        (0, "NETWORK_EXCEPTION", 1, 4, 1, None, 0, 100, 100)]
    assert h.state(sent).is_delayed(100) and not h.state(sent).is_delayed(350)


def _fetch_in_flight(protocol: TruncationProtocol, config: ReplicationConfig, tp: TopicPartition,
                     first_epoch: int) -> tuple[FollowerHarness, Generator[Any, Any, Any], FetchRequest]:
    """A follower at offset 1 (its batch 0 in `first_epoch`) of leader 1's epoch 4 (batches 0..2), with the
    thread's fetch request sent and not yet answered (after the OffsetsForLeaderEpoch round in leader-epoch mode)."""
    h = make_harness(protocol, config)
    h.add(tp, mk_log([mk_batch(0, first_epoch)], hw=0, tp=tp), fetch_offset=1, leader_epoch=4)
    h.leader.set_leader(tp, seed(0, 3, 4), leader_epoch=4, hw=3)
    work = h.fetcher.work(0)
    request = next(work)
    while not isinstance(request, FetchRequest):
        try:
            request = work.send((h.leader.fetch_epoch_end_offsets(request), 0))
        except StopIteration:
            work = h.fetcher.work(0)
            request = next(work)
    assert request.partitions[tp].current_leader_epoch == 4
    return h, work, request


@pytest.mark.parametrize(("protocol", "expected"), [
    # Re-added in epoch 5 at the same offset, ready for fetch: the failure is the request's, sent in epoch 4.
    (TruncationProtocol.DIVERGING_EPOCH, [(1, 4)]),
    # Re-added in epoch 5 and truncating first (OffsetsForLeaderEpoch): its answer would have been ignored.
    (TruncationProtocol.LEADER_EPOCH, []),
])
def test_a_failed_request_for_a_partition_re_added_meanwhile(protocol: TruncationProtocol,
                                                             expected: list[tuple[int, int]]) -> None:
    """makeFollower in a new epoch while the request is in flight: the partition gets the request's failure only
    where it would have taken the request's answer, and then at the epoch the request carried."""
    tp = TopicPartition("t", 0)
    h, work, request = _fetch_in_flight(protocol, ReplicationConfig(replica_fetch_backoff_ms=250), tp, 0)
    h.add(tp, h.logs[tp], fetch_offset=request.partitions[tp].fetch_offset, leader_epoch=5)
    with pytest.raises(StopIteration):
        work.send((FetchResponse({}, Errors.NETWORK_EXCEPTION), 100))
    assert [(e["fetch_offset"], e["leader_epoch"]) for e in h.events
            if e["event_type"] == "fetch_response"] == expected


def test_an_epoch_request_error_is_recorded_per_partition_that_will_ask_again() -> None:
    """`maybeTruncateToEpochEndOffsets`: an answer with an error other than FENCED_LEADER_EPOCH is logged ("Retrying
    leaderEpoch request for partition ...") and backs the partition off; a failed request gives every partition it
    asked for the error of what the send threw. A fenced answer, and a truncated one, record no retry."""
    retried, fenced, answered = (TopicPartition("t", p) for p in range(3))
    h = make_harness(TruncationProtocol.LEADER_EPOCH, ReplicationConfig(replica_fetch_backoff_ms=250))
    for tp in (retried, fenced, answered):
        h.add(tp, mk_log([mk_batch(0, 0), mk_batch(1, 2)], hw=0, tp=tp), fetch_offset=2, leader_epoch=4)
        h.leader.set_leader(tp, seed(0, 3, 4), leader_epoch=4, hw=3)
    h.leader.epoch_errors[retried] = Errors.NOT_LEADER_OR_FOLLOWER.value
    h.leader.epoch_errors[fenced] = Errors.FENCED_LEADER_EPOCH.value
    h.do_work(1000)

    def retries() -> list[tuple]:
        return [(e["ts_ms"], e["partition"], e["error"], e["leader_epoch"], e["leader_id"], e["fetcher_id"])
                for e in h.events if e["event_type"] == "epoch_request_retry"]
    assert retries() == [(1000, 0, "NOT_LEADER_OR_FOLLOWER", 4, 1, 0)]
    assert h.state(retried).is_delayed(1000) and not h.state(retried).is_delayed(1250)
    assert [e["partition"] for e in h.events if e["event_type"] == "truncation"] == [2]
    # The leader unreachable: the send throws an IOException, which Errors.forException makes UNKNOWN_SERVER_ERROR.
    h.leader.epoch_request_error = Errors.NETWORK_EXCEPTION.value
    h.do_work(250)
    assert retries()[1:] == [(1250, 0, "UNKNOWN_SERVER_ERROR", 4, 1, 0)]


@pytest.mark.parametrize(("protocol", "appended"), [
    # Re-added in epoch 5 at the offset the epoch-4 request asked for, ready for fetch: the answer is ignored
    # (KAFKA-18991); the next request, in epoch 5, fetches the records.
    (TruncationProtocol.DIVERGING_EPOCH, []),
    # Truncating first after the re-add (OffsetsForLeaderEpoch): ignored as not ready for fetch.
    (TruncationProtocol.LEADER_EPOCH, []),
])
def test_an_answer_to_a_request_of_an_older_leader_epoch_is_not_appended(protocol: TruncationProtocol,
                                                                         appended: list[int]) -> None:
    """`processFetchRequest` processes a partition's answer only when the fetch state still asks for the offset
    and the leader epoch the request carried: a follower re-added in a newer epoch of the same leader at the same
    offset (a GC pause across two elections) does not append what the leader held in the older epoch."""
    tp = TopicPartition("t", 0)
    h, work, request = _fetch_in_flight(protocol, ReplicationConfig(), tp, 4)
    answer = h.leader.fetch(request)
    assert [b.base_offset for b in answer.partitions[tp].batches] == [1]
    h.add(tp, h.logs[tp], fetch_offset=request.partitions[tp].fetch_offset, leader_epoch=5)
    with pytest.raises(StopIteration):
        work.send((answer, 10))
    assert [e["base_offset"] for e in h.events if e["event_type"] == "append"] == appended
    assert h.logs[tp].log_end_offset == 1
    assert h.state(tp).current_leader_epoch == 5


def test_an_answer_in_the_epoch_the_fetch_state_still_has_is_appended() -> None:
    """The same race without an epoch change (re-added in epoch 4, the state kept): the answer is appended."""
    tp = TopicPartition("t", 0)
    h = make_harness(TruncationProtocol.DIVERGING_EPOCH, ReplicationConfig())
    h.add(tp, mk_log([mk_batch(0, 4)], hw=0, tp=tp), fetch_offset=1, leader_epoch=4)
    h.leader.set_leader(tp, seed(0, 3, 4), leader_epoch=4, hw=3)
    work = h.fetcher.work(0)
    request = next(work)
    assert isinstance(request, FetchRequest)
    h.add(tp, h.logs[tp], fetch_offset=1, leader_epoch=4)
    with pytest.raises(StopIteration):
        work.send((h.leader.fetch(request), 10))
    assert h.logs[tp].log_end_offset == 2
