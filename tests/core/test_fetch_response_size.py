"""`FetchResponse.sizeOf` (what the leader records in its replication quota), against figures worked by
hand from `FetchResponse.json`.

Fetch v12 (flexible), field by field:
* header + response: correlation id 4, ThrottleTimeMs 4, ErrorCode 2, SessionId 4, Responses count
  varint(n + 1), tagged fields 1 -> 16 bytes for no topics (n = 0);
* a topic "orders": name varint(6 + 1) = 1 + 6, Partitions count varint(n + 1) = 1, tagged fields 1 -> 9;
* a partition: PartitionIndex 4, ErrorCode 2, HighWatermark 8, LastStableOffset 8, LogStartOffset 8,
  AbortedTransactions null = 1, PreferredReadReplica 4, Records varint(size + 1) + size, tagged fields 1
  -> 37 with no records, 338 with 300 record bytes (varint(301) takes 2 bytes); a DivergingEpoch adds
  tag 1 + length 1 + (Epoch 4 + EndOffset 8 + tagged fields 1) = 15.
"""

from __future__ import annotations

import pytest

from replication_core.fetch_response_size import (
    fetch_response_size,
    size_of_throttled_partitions,
    unsigned_varint_size,
)


def test_v12_empty_response_is_not_zero_bytes() -> None:
    """A follower fetch with no throttled partition still records a response with no topics."""
    assert fetch_response_size(12, []) == 4 + 4 + 2 + 4 + 1 + 1 == 16


def test_v12_one_partition_with_records() -> None:
    """16 (empty response) + 9 (topic "orders") + 338 (partition with 300 record bytes)."""
    assert fetch_response_size(12, [("orders", 300, False)]) == 16 + 9 + 338 == 363


def test_v12_partition_without_records_and_with_a_diverging_epoch() -> None:
    """A blanked (throttled) or caught-up partition still costs its 37 bytes of framing; a DivergingEpoch 15 more."""
    assert fetch_response_size(12, [("orders", 0, False)]) == 16 + 9 + 37 == 62
    assert fetch_response_size(12, [("orders", 0, True)]) == 62 + 15 == 77


def test_v12_records_length_varint_grows_at_128() -> None:
    """Records length is varint(size + 1): 126 bytes -> one length byte, 127 -> two."""
    assert fetch_response_size(12, [("orders", 127, False)]) - fetch_response_size(12, [("orders", 126, False)]) == 2
    assert [unsigned_varint_size(v) for v in (0, 127, 128, 16_383, 16_384)] == [1, 1, 2, 2, 3]


def test_v12_only_adjacent_partitions_of_a_topic_share_a_topic_entry() -> None:
    """`toMessage` batches a partition into the previous topic entry only if it is the same topic.
    Topics "a" / "b": name 1 + 1, Partitions count 1, tagged fields 1 = 4 bytes per entry."""
    grouped = fetch_response_size(12, [("a", 0, False), ("a", 0, False), ("b", 0, False)])
    assert grouped == 16 + 2 * 4 + 3 * 37 == 135
    interleaved = fetch_response_size(12, [("a", 0, False), ("b", 0, False), ("a", 0, False)])
    assert interleaved == 16 + 3 * 4 + 3 * 37 == 139


def test_topic_name_length_is_in_utf8_bytes() -> None:
    """"é" is two bytes in UTF-8: one more than "e"."""
    assert fetch_response_size(12, [("é", 0, False)]) == fetch_response_size(12, [("e", 0, False)]) + 1


@pytest.mark.parametrize(("version", "expected"), [
    # response part + topic "orders" (int16 length 2 + 6, Partitions int32 4 = 12) + partition with 300 bytes
    (11, (4 + 4 + 2 + 4 + 4) + 12 + (4 + 2 + 8 + 8 + 8 + 4 + 4 + 4 + 300)),  # 18 + 12 + 342 = 372
    (7, 18 + 12 + (4 + 2 + 8 + 8 + 8 + 4 + 4 + 300)),                        # no PreferredReadReplica: 368
    (5, (4 + 4 + 4) + 12 + 338),                                             # no ErrorCode / SessionId: 362
    (4, 12 + 12 + (4 + 2 + 8 + 8 + 4 + 4 + 300)),                            # no LogStartOffset: 354
    (3, 12 + 12 + (4 + 2 + 8 + 4 + 300)),                                    # no LSO, no aborted txns: 342
    (0, (4 + 4) + 12 + 318),                                                 # no ThrottleTimeMs: 338
])
def test_non_flexible_versions(version: int, expected: int) -> None:
    """Fixed-width lengths (int16 strings, int32 arrays and records) and the fields each version has."""
    assert fetch_response_size(version, [("orders", 300, False)]) == expected


def test_versions_with_topic_ids_are_refused() -> None:
    """v13+ carries topic IDs, which replog's fetchers never send."""
    with pytest.raises(ValueError, match="v13"):
        fetch_response_size(13, [])


def test_size_of_throttled_partitions_keeps_only_throttled_ones_in_order() -> None:
    """`KafkaApis.sizeOfThrottledPartitions`: the response rebuilt from its throttled partitions only."""
    throttled = {("t", 0), ("t", 2)}
    rows = [("t", 0, 100, False), ("t", 1, 500, False), ("u", 0, 7, False), ("t", 2, 0, True)]
    size = size_of_throttled_partitions(12, rows, lambda topic, p: (topic, p) in throttled)
    assert size == fetch_response_size(12, [("t", 100, False), ("t", 0, True)])
    # 16 + topic "t" 4 + (37 + 100: varint(101) is still one byte) + (37 + 15)
    assert size == 16 + 4 + 137 + 52 == 209
    assert size_of_throttled_partitions(12, rows, lambda topic, p: False) == 16
