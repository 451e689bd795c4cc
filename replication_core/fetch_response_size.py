"""The size of a Fetch response, as Kafka's leader records it against its replication quota.

Contract (reference §4): after answering a follower fetch, `KafkaApis.handleFetchRequest` records
`KafkaApis.sizeOfThrottledPartitions(versionId, response, quotas.leader)` =
`FetchResponse.sizeOf(versionId, <the response's throttled partitions>)` in the leader quota, for every
follower fetch, even one with no throttled partition (then the size of a response with no topics).
`FetchResponse.sizeOf` builds a response from those partitions alone (`FetchResponse.toMessage`: adjacent
partitions of one topic share a topic entry, order kept) and returns `4 + FetchResponseData.size(version)`:
the message body plus 4 bytes, the response header's correlation id (the flexible v1 header's tagged-field
byte is not counted). So what is recorded is the record bytes plus the framing below, not the record
bytes alone.

Field widths by version, from `clients/src/main/resources/common/message/FetchResponse.json`
(flexible versions 12+: compact strings / arrays / records carry an unsigned varint length + 1, and every
struct ends with its tagged fields, one varint count byte when none is set):

| level     | field                               | versions | bytes                                     |
|-----------|-------------------------------------|----------|-------------------------------------------|
| response  | ThrottleTimeMs                      | 1+       | 4                                         |
|           | ErrorCode, SessionId                | 7+       | 2 + 4                                     |
|           | Responses (topics)                  | 0+       | int32 count; v12 varint(n + 1)            |
| topic     | Topic (name)                        | 0-12     | int16 / v12 varint(len + 1) length, UTF-8 |
|           | Partitions                          | 0+       | int32 count; v12 varint(n + 1)            |
| partition | PartitionIndex, ErrorCode, HW       | 0+       | 4 + 2 + 8                                 |
|           | LastStableOffset                    | 4+       | 8                                         |
|           | LogStartOffset                      | 5+       | 8                                         |
|           | AbortedTransactions (null, LOG_END) | 4+       | int32 -1 = 4; v12 varint 0 = 1            |
|           | PreferredReadReplica (-1)           | 11+      | 4                                         |
|           | Records                             | 0+       | int32 / v12 varint(size + 1) length, data |
|           | DivergingEpoch (tag 0), when set    | 12+      | tag 1 + length 1 + (4 + 8 + tags 1) = 15  |

`CurrentLeader` (tag 1) is set by `KafkaApis` only for v16+ (KIP-951) and `SnapshotId` (tag 2) only by
KRaft's own fetches, so neither is in a v12 response. Topic IDs replace names from v13; they need a
topic ID for every fetched partition, which replog's fetchers do not have, and then
`RemoteLeaderEndPoint.buildFetch` sends v12 whatever the metadata version: versions above 12 are refused
here. replog models no fetch sessions (KIP-227): every fetched partition is in the response, where an
incremental session would leave out the unchanged ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

MAX_VERSION = 12
"""The newest Fetch version sized here (the newest without topic IDs)."""
FIRST_FLEXIBLE_VERSION = 12
"""`"flexibleVersions": "12+"`."""
HEADER_BYTES = 4
"""The `4 +` of `FetchResponse.sizeOf`: the response header's correlation id."""
DIVERGING_EPOCH_BYTES = 15
"""A set DivergingEpoch tagged field: tag varint, size varint, Epoch int32 + EndOffset int64 + tag count."""


def unsigned_varint_size(value: int) -> int:
    """`ByteUtils.sizeOfUnsignedVarint`: bytes of `value` as an unsigned varint (7 bits a byte)."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def _length_size(n: int, flexible: bool) -> int:
    """Bytes of an array count or records length `n`: int32, or the compact varint of n + 1."""
    return unsigned_varint_size(n + 1) if flexible else 4


def fetch_response_size(version: int, partitions: Iterable[tuple[str, int, bool]]) -> int:
    """`FetchResponse.sizeOf(version, partitions)` for a follower fetch response (module table).

    `partitions` are the response's partitions, in response order, as (topic, record bytes, whether a
    DivergingEpoch is set); an empty iterable gives the size of a response with no topics."""
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"Fetch v{version} is not sized here (0..{MAX_VERSION}: replog's fetchers send "
                         "topic names)")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    total = HEADER_BYTES
    if version >= 1:
        total += 4  # ThrottleTimeMs
    if version >= 7:
        total += 2 + 4  # ErrorCode, SessionId
    if flexible:
        total += 1  # the response's tagged fields
    partition_fixed = 4 + 2 + 8  # PartitionIndex, ErrorCode, HighWatermark
    if version >= 4:
        partition_fixed += 8 + (1 if flexible else 4)  # LastStableOffset, null AbortedTransactions
    if version >= 5:
        partition_fixed += 8  # LogStartOffset
    if version >= 11:
        partition_fixed += 4  # PreferredReadReplica
    if flexible:
        partition_fixed += 1  # the partition's tagged fields count
    topics = 0
    current: str | None = None
    in_topic = 0
    for topic, record_bytes, diverging in partitions:
        if topic != current:
            if in_topic:
                total += _length_size(in_topic, flexible)  # the previous topic's Partitions count
            topics += 1
            current = topic
            in_topic = 0
            name = len(topic.encode("utf-8"))
            total += (unsigned_varint_size(name + 1) + 1 if flexible else 2) + name  # name (+ topic tags)
        in_topic += 1
        total += partition_fixed + _length_size(record_bytes, flexible) + record_bytes
        if diverging and flexible:
            total += DIVERGING_EPOCH_BYTES
    if in_topic:
        total += _length_size(in_topic, flexible)
    return total + _length_size(topics, flexible)


def size_of_throttled_partitions(version: int, partitions: Iterable[tuple[str, int, int, bool]],
                                 is_throttled: Callable[[str, int], bool]) -> int:
    """`KafkaApis.sizeOfThrottledPartitions`: `fetch_response_size` of the response's partitions that
    `is_throttled(topic, partition)` selects, in-sync followers' included ("traffic from both in-sync and
    out of sync replicas are accounted for"). `partitions` are (topic, partition, record bytes, whether a
    DivergingEpoch is set), in response order."""
    return fetch_response_size(version, [(topic, record_bytes, diverging)
                                         for topic, partition, record_bytes, diverging in partitions
                                         if is_throttled(topic, partition)])
