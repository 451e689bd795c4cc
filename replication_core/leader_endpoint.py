"""The follower-to-leader messages of the fetcher, as plain values (Kafka's `LeaderEndPoint` interface).

Contract: the fetcher never calls a leader. It yields one of the requests below and receives the
matching response (reference §3.2-§3.7): `FetchRequest` -> `FetchResponse`,
`OffsetsForLeaderEpochRequest` -> `OffsetsForLeaderEpochResponse`, `ListOffsetsRequest` ->
`ListOffsetsResponse`. `LeaderEndPoint` is the synchronous shape of the same exchange (Kafka's
`LeaderEndPoint` / `RemoteLeaderEndPoint`), used by `call_leader` to drive a fetcher in tests or by a
simulator with zero network delay. A request-level (transport) failure is a response whose `error`
is not NONE, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from replication_core.log import RecordBatch
from replication_core.partition_fetch_state import EpochEndOffset, TopicPartition

NONE = "NONE"
LATEST = "latest"
EARLIEST = "earliest"


class FetchPartitionData(NamedTuple):
    """`FetchRequest.PartitionData` a follower sends for one partition (reference §3.2).

    A NamedTuple (immutable, like the frozen dataclasses around it): one is built per partition of
    every fetch, and tuple construction is about three times cheaper than a frozen dataclass's."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int | None
    last_fetched_epoch: int | None = None
    topic_id: str | None = None


@dataclass(frozen=True, eq=False)
class FetchRequest:
    """`FetchRequest.Builder.forReplica(version, ...)`: the follower's fetch, partitions in fetch order.

    `version` is the request's API version (the fetcher's `ProtocolFlags.fetch_version`); the leader sizes
    its response in that version for the replication quota (`fetch_response_size`). The default, 12, is
    what a fetcher of metadata version 2.7-IV1 or later sends without topic IDs."""

    replica_id: int
    replica_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partitions: Mapping[TopicPartition, FetchPartitionData]
    version: int = 12

    # An explicit __init__ because mypyc compiles it: the one @dataclass generates runs interpreted, and a
    # frozen one sets each field through object.__setattr__ (~0.6 us per object against ~0.04 compiled;
    # one per fetch). object.__setattr__ keeps the class frozen; mypyc makes it a slot store.
    def __init__(self, replica_id: int, replica_epoch: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
                 partitions: Mapping[TopicPartition, FetchPartitionData], version: int = 12) -> None:
        object.__setattr__(self, "replica_id", replica_id)
        object.__setattr__(self, "replica_epoch", replica_epoch)
        object.__setattr__(self, "max_wait_ms", max_wait_ms)
        object.__setattr__(self, "min_bytes", min_bytes)
        object.__setattr__(self, "max_bytes", max_bytes)
        object.__setattr__(self, "partitions", partitions)
        object.__setattr__(self, "version", version)


class FetchPartitionResponse(NamedTuple):
    """`FetchResponseData.PartitionData` for one partition (HW/LSO as the leader captured them).

    A NamedTuple for the same reason as `FetchPartitionData` (one per partition of every response)."""

    error: str = NONE
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1
    batches: tuple[RecordBatch, ...] = ()
    diverging_epoch: EpochEndOffset | None = None
    partial_bytes: int = 0
    """Bytes after `batches` of a batch the leader's byte-range read cut (`FetchDataInfo.partial_bytes`):
    sent and counted, never appended. Never without batches: a read that cut its first batch is answered
    empty."""

    @property
    def size_bytes(self) -> int:
        """`records.sizeInBytes()`: the whole batches and the cut one's bytes."""
        return sum(b.size_bytes for b in self.batches) + self.partial_bytes

    @property
    def record_count(self) -> int:
        """Number of records carried."""
        return sum(b.record_count for b in self.batches)


@dataclass(frozen=True, eq=False)
class FetchResponse:
    """`FetchResponse`; `error` != NONE models an exception from `leader.fetch` (whole request failed)."""

    partitions: Mapping[TopicPartition, FetchPartitionResponse] = field(default_factory=dict)
    error: str = NONE

    # Compiled like FetchRequest's (one per fetch); no partitions means an empty dict, as the field's default.
    def __init__(self, partitions: Mapping[TopicPartition, FetchPartitionResponse] | None = None,
                 error: str = NONE) -> None:
        object.__setattr__(self, "partitions", {} if partitions is None else partitions)
        object.__setattr__(self, "error", error)


@dataclass(frozen=True)
class EpochData:
    """`OffsetForLeaderPartition`: the follower's current leader epoch and the epoch it asks about."""

    current_leader_epoch: int | None
    leader_epoch: int


@dataclass(frozen=True, eq=False)
class OffsetsForLeaderEpochRequest:
    """`OffsetsForLeaderEpochRequest` (replica id = this broker); v0 answers carry no epoch."""

    replica_id: int
    version: int
    partitions: Mapping[TopicPartition, EpochData]


@dataclass(frozen=True, eq=False)
class OffsetsForLeaderEpochResponse:
    """Per-partition `EpochEndOffset`; `error` != NONE models a transport failure of the whole request."""

    partitions: Mapping[TopicPartition, EpochEndOffset] = field(default_factory=dict)
    error: str = NONE


@dataclass(frozen=True)
class ListOffsetsRequest:
    """`ListOffsets` for one partition (`fetchLatestOffset` / `fetchEarliestOffset`)."""

    replica_id: int
    tp: TopicPartition
    current_leader_epoch: int | None
    spec: str  # LATEST or EARLIEST


@dataclass(frozen=True)
class ListOffsetsResponse:
    """`OffsetAndEpoch` or the error the leader threw."""

    error: str = NONE
    offset: int = -1
    leader_epoch: int = -1


LeaderRequest = FetchRequest | OffsetsForLeaderEpochRequest | ListOffsetsRequest
LeaderResponse = FetchResponse | OffsetsForLeaderEpochResponse | ListOffsetsResponse


class LeaderEndPoint(Protocol):
    """Kafka `LeaderEndPoint`: the synchronous way to answer a fetcher's requests."""

    def fetch(self, request: FetchRequest) -> FetchResponse:
        """`fetch(fetchRequest)`."""
        ...

    def fetch_epoch_end_offsets(self, request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        """`fetchEpochEndOffsets(partitions)`."""
        ...

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        """`fetchLatestOffset` / `fetchEarliestOffset`."""
        ...


def call_leader(endpoint: LeaderEndPoint, request: LeaderRequest) -> LeaderResponse:
    """Answer `request` synchronously through `endpoint` (dispatch on the request type)."""
    if isinstance(request, FetchRequest):
        return endpoint.fetch(request)
    if isinstance(request, OffsetsForLeaderEpochRequest):
        return endpoint.fetch_epoch_end_offsets(request)
    return endpoint.list_offsets(request)
