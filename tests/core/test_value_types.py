"""The per-fetch value types with hand-written initialisers (compiled by mypyc) behave as the dataclasses
they are declared as: every field set, defaults as declared, frozen ones refuse assignment and copy with
`dataclasses.replace`, equality where the dataclass has it, and a fresh default dict per response."""

from __future__ import annotations

import dataclasses

import pytest

from replication_core.delayed_fetch import DelayedFetch
from replication_core.errors import Errors
from replication_core.fetcher import WorkResult
from replication_core.leader_endpoint import FetchPartitionData, FetchRequest, FetchResponse
from replication_core.partition_fetch_state import (
    DelayedItem,
    PartitionFetchState,
    ReplicaState,
    TopicPartition,
)
from replication_core.replica_manager import _DelayedProduce

TP = TopicPartition("t", 0)


def _fields(obj: object) -> dict[str, object]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]


def test_partition_fetch_state_fields_defaults_equality_and_frozen() -> None:
    st = PartitionFetchState(5, 2, ReplicaState.FETCHING)
    assert _fields(st) == {"fetch_offset": 5, "current_leader_epoch": 2, "state": ReplicaState.FETCHING,
                           "lag": None, "delay": None, "last_fetched_epoch": None, "topic_id": None}
    full = PartitionFetchState(fetch_offset=7, current_leader_epoch=3, state=ReplicaState.TRUNCATING, lag=1,
                               delay=DelayedItem(9, 4), last_fetched_epoch=2, topic_id="id")
    assert _fields(full) == {"fetch_offset": 7, "current_leader_epoch": 3, "state": ReplicaState.TRUNCATING,
                             "lag": 1, "delay": DelayedItem(9, 4), "last_fetched_epoch": 2, "topic_id": "id"}
    assert st == PartitionFetchState(5, 2, ReplicaState.FETCHING) and st != full
    assert hash(st) == hash(PartitionFetchState(5, 2, ReplicaState.FETCHING))
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.fetch_offset = 6  # type: ignore[misc]
    delayed = st.with_delay(100, 50)
    assert delayed.delay == DelayedItem(100, 50) and delayed.fetch_offset == 5 and st.delay is None


def test_fetch_request_and_response_fields_and_defaults() -> None:
    parts = {TP: FetchPartitionData(3, 0, 1024, 1)}
    req = FetchRequest(1, 7, 500, 1, 4096, parts)
    assert _fields(req) == {"replica_id": 1, "replica_epoch": 7, "max_wait_ms": 500, "min_bytes": 1,
                            "max_bytes": 4096, "partitions": parts, "version": 12}
    assert FetchRequest(1, 7, 500, 1, 4096, parts, version=3).version == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.version = 1  # type: ignore[misc]
    a, b = FetchResponse(), FetchResponse()
    assert a.partitions == {} and a.error == "NONE"
    assert a.partitions is not b.partitions  # default_factory=dict: one dict per response
    assert FetchResponse(error="NETWORK_EXCEPTION").error == "NETWORK_EXCEPTION"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.error = "X"  # type: ignore[misc]


def test_work_result_delayed_fetch_and_delayed_produce() -> None:
    wr = WorkResult(1, True, frozenset({TP}), None)
    assert _fields(wr) == {"epoch_requests": 1, "fetch_sent": True, "hw_updated": frozenset({TP}),
                           "idle_backoff_ms": None}
    assert wr == WorkResult(1, True, frozenset({TP}), None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        wr.fetch_sent = False  # type: ignore[misc]
    op = DelayedFetch("req", 2, 1, 600, {})
    assert (op.request_id, op.replica_id, op.min_bytes, op.deadline_ms, op.statuses) == ("req", 2, 1, 600, {})
    assert op.is_throttled is None and op.payload is None and op.completed is False
    assert op.is_follower and not DelayedFetch("c", -1, 1, 600, {}).is_follower
    dp = _DelayedProduce("req", TP, 11, 900, 5, 10, 42)
    assert _fields(dp) == {"request_id": "req", "tp": TP, "required_offset": 11, "deadline_ms": 900,
                           "base_offset": 5, "last_offset": 10, "checksum": 42, "completed": False,
                           "request": None, "error": Errors.NONE}
