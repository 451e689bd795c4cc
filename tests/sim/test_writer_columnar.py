"""The writer's columnar conversion (`writer._payload_arrays`) gives exactly `Table.from_pylist`'s table,
and the hot event builders (`replication_core.events`) build exactly `make_event`'s dicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from replication_core.events import (
    append_event,
    fetch_event,
    fetch_response_event,
    follower_fetch_state_event,
    hw_change_event,
    make_event,
)
from replication_core.sim.writer import _PAYLOAD_SCHEMA, EventWriter, _payload_arrays
from tests.sim.helpers import run_named


def _from_pylist(events: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(events, schema=_PAYLOAD_SCHEMA)


def _columnar(events: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_arrays(_payload_arrays(events), schema=_PAYLOAD_SCHEMA)


def test_hot_builders_build_the_same_dict_as_make_event() -> None:
    """Same keys in the same order (the JSON Lines field order) and the same values."""
    pairs = [
        (append_event(5, 1, "t", 2, 3, "leader", 10, 14, 5, 500, 3, 99, 15),
         make_event("append", 5, 1, "t", 2, 3, role="leader", base_offset=10, last_offset=14, record_count=5,
                    bytes=500, batch_leader_epoch=3, batch_checksum=99, leo=15)),
        (hw_change_event(5, 1, "t", 2, None, "follower", 3, 4),
         make_event("hw_change", 5, 1, "t", 2, None, role="follower", old_hw=3, hw=4)),
        (follower_fetch_state_event(5, 1, "t", 2, 3, 2, 40, 4, 41),
         make_event("follower_fetch_state", 5, 1, "t", 2, 3, follower_id=2, fetch_offset=40,
                    last_caught_up_time_ms=4, leo=41)),
        (fetch_event(5, 2, "t", 2, 3, 1, 0, 40, 3),
         make_event("fetch", 5, 2, "t", 2, 3, leader_id=1, fetcher_id=0, fetch_offset=40, last_fetched_epoch=3)),
        (fetch_response_event(5, 2, "t", 2, 3, 1, 0, 40, "NONE", 41, 0, 100, 1, None, None, 5),
         make_event("fetch_response", 5, 2, "t", 2, 3, leader_id=1, fetcher_id=0, fetch_offset=40, error="NONE",
                    leader_hw=41, leader_log_start_offset=0, bytes=100, record_count=1, diverging_epoch=None,
                    diverging_end_offset=None, response_received_ms=5)),
    ]
    for fast, slow in pairs:
        assert list(fast.items()) == list(slow.items())


def test_columnar_conversion_equals_from_pylist_on_a_simulated_run() -> None:
    """Every event type of a faulty run (lists, structs, the config map, optional fields) converts the same."""
    _, events, _ = run_named("leader-crash", duration_ms=30000)
    assert len({ev["event_type"] for ev in events}) > 8
    assert _columnar(events).equals(_from_pylist(events))
    assert _columnar(events[:1]).equals(_from_pylist(events[:1]))


def test_columnar_conversion_handles_mixed_key_sets_unknown_keys_and_no_events() -> None:
    """One type with two key sets (a produce ack with and without offsets), a key outside the schema
    (ignored, as from_pylist does), interleaved types, and an empty batch."""
    events = [
        make_event("produce_ack", 1, 1, "t", 0, 1, acks=-1, error="NONE", batch_checksum=7, base_offset=0,
                   last_offset=4),
        make_event("broker_lifecycle", 1, 2, action="start"),
        make_event("produce_ack", 2, 1, "t", 0, 1, acks=1, error="NOT_LEADER_OR_FOLLOWER", batch_checksum=8),
        {**make_event("broker_lifecycle", 3, 3, action="crash"), "not_a_column": 1},
        make_event("produce_ack", 4, 1, "t", 1, None, acks=0, error="NONE", batch_checksum=9, base_offset=5,
                   last_offset=5),
    ]
    assert _columnar(events).equals(_from_pylist(events))
    assert _columnar([]).equals(_from_pylist([]))


def test_written_parquet_equals_the_events(tmp_path: Path) -> None:
    """What EventWriter writes reads back as the events, the envelope stamped in order."""
    _, events, _ = run_named("steady-state", duration_ms=5000)
    writer = EventWriter(tmp_path, "r", "parquet", max_events_per_file=1000)
    writer.write(events[:1500])
    writer.write(events[1500:])
    writer.close()
    table = pq.read_table(tmp_path / "events")
    assert table.column("event_id").to_pylist() == list(range(len(events)))
    assert table.select(_PAYLOAD_SCHEMA.names).to_pylist() == _from_pylist(events).to_pylist()
    assert sum(writer.counts.values()) == len(events)


def test_columnar_conversion_regroups_a_type_with_several_key_sets() -> None:
    """Grouping by event type is only a first try: one type whose events have the same number of keys
    but different ones, or different numbers (alone in the batch or not), converts like from_pylist."""
    same_len: list[dict[str, Any]] = [
        {"event_type": "truncation", "ts_ms": 1, "broker_id": 1, "old_leo": 5, "truncate_offset": 3},
        {"event_type": "truncation", "ts_ms": 2, "broker_id": 1, "old_leo": 5, "reason": "r"},
    ]
    more_keys_later = [
        make_event("produce_ack", 1, 1, "t", 0, 1, acks=1, error="NOT_LEADER_OR_FOLLOWER", batch_checksum=8),
        make_event("produce_ack", 2, 1, "t", 0, 1, acks=-1, error="NONE", batch_checksum=7, base_offset=0,
                   last_offset=4),
    ]
    others = [make_event("broker_lifecycle", 0, 2, action="start")]
    for events in (same_len, more_keys_later, same_len + others, others + more_keys_later + same_len):
        assert _columnar(events).equals(_from_pylist(events))


def test_columnar_conversion_of_constant_columns_equals_from_pylist() -> None:
    """Columns whose values are all equal (a string, an int, all None) are built as one repeated value;
    a column whose first and last values are equal but not the others is converted cell by cell."""
    events = [
        fetch_response_event(5 + i, 2, "t", i, 3, 1, 0, 40 + (i == 1), "NONE", 41, 0, 100, 1, None, None, 5)
        for i in range(3)
    ]
    assert _columnar(events).equals(_from_pylist(events))
    assert _columnar(events[:1]).equals(_from_pylist(events[:1]))


def test_columnar_conversion_with_groups_of_no_or_one_own_column() -> None:
    """Two types with the same keys (no column of their own) and a type with one column of its own."""
    events: list[dict[str, Any]] = [
        {"event_type": "broker_lifecycle", "ts_ms": 1, "broker_id": 1},
        {"event_type": "broker_config", "ts_ms": 2, "broker_id": 2},
        {"event_type": "truncation", "ts_ms": 3, "broker_id": 1, "old_leo": 5},
        {"event_type": "broker_lifecycle", "ts_ms": 4, "broker_id": 3},
    ]
    assert _columnar(events).equals(_from_pylist(events))
