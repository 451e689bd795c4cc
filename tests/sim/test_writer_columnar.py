"""The writer's columnar conversion (`writer._payload_arrays`, and `stamped_table` of an `EventLog`'s
batches) gives exactly `Table.from_pylist`'s table, and the `EventLog`'s frequent kinds read back as
exactly `make_event`'s dicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from replication_core.event_log import EventBatch, EventLog
from replication_core.events import make_event
from replication_core.sim.cli import load_scenario
from replication_core.sim.cluster import Cluster
from replication_core.sim.writer import _PAYLOAD_SCHEMA, EventWriter, _payload_arrays, stamped_table
from tests.sim.helpers import SCENARIOS, run_named


def _from_pylist(events: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(events, schema=_PAYLOAD_SCHEMA)


def _columnar(events: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_arrays(_payload_arrays(events), schema=_PAYLOAD_SCHEMA)


def test_event_log_kinds_read_back_as_make_event_dicts() -> None:
    """Same keys in the same order (the JSON Lines field order) and the same values, in emission order
    with the dict events between them."""
    log = EventLog()
    log.add_append(5, 1, "t", 2, 3, "leader", 10, 14, 5, 500, 3, 99, 15)
    log.append(make_event("broker_lifecycle", 5, 1, action="start"))
    log.add_hw_change(5, 1, "t", 2, None, "follower", 3, 4)
    log.add_follower_fetch_state(5, 1, "t", 2, 3, 2, 40, 4, 41)
    log.add_fetch(5, 2, "t", 2, 3, 1, 0, 40, 3)
    log.add_fetch_response(5, 2, "t", 2, 3, 1, 0, 40, "NONE", 41, 0, 100, 1, None, None, 5)
    log.add_fetch(6, 2, "t", 3, 3, 1, 0, 7, None)
    expected = [
        make_event("append", 5, 1, "t", 2, 3, role="leader", base_offset=10, last_offset=14, record_count=5,
                   bytes=500, batch_leader_epoch=3, batch_checksum=99, leo=15),
        make_event("broker_lifecycle", 5, 1, action="start"),
        make_event("hw_change", 5, 1, "t", 2, None, role="follower", old_hw=3, hw=4),
        make_event("follower_fetch_state", 5, 1, "t", 2, 3, follower_id=2, fetch_offset=40,
                   last_caught_up_time_ms=4, leo=41),
        make_event("fetch", 5, 2, "t", 2, 3, leader_id=1, fetcher_id=0, fetch_offset=40, last_fetched_epoch=3),
        make_event("fetch_response", 5, 2, "t", 2, 3, leader_id=1, fetcher_id=0, fetch_offset=40, error="NONE",
                   leader_hw=41, leader_log_start_offset=0, bytes=100, record_count=1, diverging_epoch=None,
                   diverging_end_offset=None, response_received_ms=5),
        make_event("fetch", 6, 2, "t", 3, 3, leader_id=1, fetcher_id=0, fetch_offset=7, last_fetched_epoch=None),
    ]
    assert len(log) == len(expected)
    assert [list(ev.items()) for ev in log] == [list(ev.items()) for ev in expected]
    assert log[-1] == expected[-1] and log[1:3] == expected[1:3]
    batch = log.take()
    assert len(log) == 0 and not log and len(batch) == len(expected)
    assert batch.to_dicts() == expected


class _BatchSink:
    """Keeps the `EventBatch`es a run hands over, as the writer gets them."""

    def __init__(self) -> None:
        self.batches: list[EventBatch] = []

    def write(self, events: EventBatch) -> None:
        self.batches.append(events)


def test_event_log_batches_of_a_faulty_run_convert_like_from_pylist() -> None:
    """Every batch of a run with faults (the frequent kinds interleaved with dict events of every type,
    hw_change both ways) converts to the table `from_pylist` makes of its dicts; so do one-kind
    batches (no reordering) and a batch of dicts alone."""
    sink = _BatchSink()
    scenario = load_scenario(SCENARIOS / "leader-crash.yaml").with_overrides(duration_ms=30000)
    Cluster(scenario).run(sink, batch_events=5000)
    assert len(sink.batches) > 2
    for batch in sink.batches:
        dicts = batch.to_dicts()
        assert stamped_table(batch, "r", 0).select(_PAYLOAD_SCHEMA.names).equals(_from_pylist(dicts))
    one_kind = EventLog()
    for offset in range(3):
        one_kind.add_fetch(5, 2, "t", 0, 3, 1, 0, offset, None)
    dicts = list(one_kind)
    assert stamped_table(one_kind.take(), "r", 0).select(_PAYLOAD_SCHEMA.names).equals(_from_pylist(dicts))
    only_dicts = [make_event("broker_lifecycle", 1, 1, action="start")]
    assert stamped_table(EventBatch.of_dicts(only_dicts), "r", 0).select(_PAYLOAD_SCHEMA.names).equals(
        _from_pylist(only_dicts))


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
        make_event("fetch_response", 5 + i, 2, "t", i, 3, leader_id=1, fetcher_id=0, fetch_offset=40 + (i == 1),
                   error="NONE", leader_hw=41, leader_log_start_offset=0, bytes=100, record_count=1,
                   diverging_epoch=None, diverging_end_offset=None, response_received_ms=5)
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


def test_batches_and_their_dicts_write_the_same_files(tmp_path: Path) -> None:
    """An `EventLog`'s batches, cut across file boundaries, write the same bytes, counts and
    acknowledged records as their dicts, in both formats."""
    sink = _BatchSink()
    scenario = load_scenario(SCENARIOS / "steady-state.yaml").with_overrides(duration_ms=5000)
    Cluster(scenario).run(sink, batch_events=700)
    assert len(sink.batches) >= 3
    for fmt in ("parquet", "jsonl"):
        writers = {}
        for way in ("batches", "dicts"):
            writer = EventWriter(tmp_path / fmt / way, "r", fmt, max_events_per_file=1000)
            for batch in sink.batches:
                writer.write(batch if way == "batches" else batch.to_dicts())
            writer.close()
            writers[way] = writer
        a, b = writers["batches"], writers["dicts"]
        assert a.files == b.files and len(a.files) > 3
        for name in a.files:
            assert (tmp_path / fmt / "batches" / name).read_bytes() == (tmp_path / fmt / "dicts" / name).read_bytes()
        assert (a.counts, a.acked_records, a.next_event_id) == (b.counts, b.acked_records, b.next_event_id)
        assert sum(a.acked_records.values()) > 0
