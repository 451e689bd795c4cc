"""The event writer: the only module that writes a run's files.

Layout of an output folder:
    DIR/events/part-00000.parquet   (or .jsonl) rolled every `max_events_per_file` events
    DIR/events/part-00001.parquet
    DIR/run.json                    the manifest (see `write_manifest`)
`replog ingest --landing DIR/events` reads the event files (the manifest is kept outside the landing
folder because ingest treats every `*.json` file as JSON Lines).

Every event gets the envelope here: `schema_version`, `source="engine"`, the run's `run_id`, and an
`event_id` increasing from 0 in emission order. Files are deterministic: no timestamps or host names,
Parquet written with fixed settings (zstd, dictionary, statistics, one row group per batch), JSON Lines
with the envelope first, then the event's fields in emission order, nulls left out.

Files are written into `DIR/events/.writing/` and moved into `events/` by `close`; a file whose bytes equal
those of the file already there (a rerun of the same scenario, seed and code) is not replaced, so it keeps
its modification time and `replog ingest` sees nothing new instead of a run of duplicates.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from collections import Counter
from collections.abc import Hashable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from replication_core.events import Event
from schemas.events import EVENT_SCHEMA, SCHEMA_VERSION

STAGING = ".writing"
"""The folder under `events/` that holds a run's files until they are complete."""

# Dictionary pages for the string columns only (event type, topic, role, error, ... : a handful of
# values each). The integer columns (offsets, ids, times) are mostly distinct within a row group, where
# a dictionary costs index pages and encoding time and saves nothing: on event batches of the benchmark
# scenario, strings only wrote 1.16 MB against 1.71 MB with every column, and encoded ~8 % faster.
_PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": [f.name for f in EVENT_SCHEMA if pa.types.is_string(f.type)],
    "write_statistics": True,
    "version": "2.6",
    "data_page_version": "1.0",
}


_EVENT_TYPE = itemgetter("event_type")
_ENVELOPE = ("schema_version", "source", "run_id", "event_id")
_PAYLOAD_SCHEMA = pa.schema([f for f in EVENT_SCHEMA if f.name not in _ENVELOPE])


def events_to_table(events: list[Event]) -> pa.Table:
    """Events (with their envelope) as an arrow table of `EVENT_SCHEMA` (missing fields are null)."""
    return pa.Table.from_pylist(events, schema=EVENT_SCHEMA)


_SCALAR_COLUMNS = frozenset(f.name for f in _PAYLOAD_SCHEMA
                            if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
                            or pa.types.is_string(f.type))
"""Payload columns of one primitive value per cell: the ones `_column` may build as a repeated scalar."""


def _column(values: list[Any], name: str, type_: pa.DataType) -> pa.Array:
    """`pa.array(values, type_)`, except that a scalar column whose values are all equal (within one
    batch or group: one topic, fetcher 0, error NONE, no diverging epoch, one leader epoch between
    elections) is one value repeated in C++ (or typed nulls), skipping the conversion of every cell.
    The test costs nothing when the first and last values differ, and one C-level `list.count`
    (identity first, then ==) otherwise; the cells, and so the written bytes, are the same."""
    first = values[0]
    if values[-1] == first and name in _SCALAR_COLUMNS and values.count(first) == len(values):
        return pa.nulls(len(values), type_) if first is None else pa.repeat(pa.scalar(first, type_), len(values))
    return pa.array(values, type_)


def _payload_arrays(events: list[Event]) -> list[pa.Array]:
    """The payload columns of `events` as arrow arrays in `_PAYLOAD_SCHEMA` order (missing fields null).

    Columnar on purpose: `Table.from_pylist` looks up every one of the ~44 payload columns in every
    event dict, although an event fills only the dozen columns of its type. Here the events are
    grouped so that every event of a group has the same keys, and each group's columns are read
    event by event in blocks (see `_group_columns`), then converted a column at a time.

    Grouping is first tried by event type alone (one dict lookup of an interned string per event;
    a tuple of each event's keys costs several times more to build and hash): events of one type
    are built by one call site and share their keys. When a type turns out to have several key
    sets (a produce ack with and without offsets), the batch is grouped by its exact key tuples
    instead. The values, and so the written bytes, are the same as `from_pylist`'s."""
    n = len(events)
    if not n:
        return [pa.nulls(0, f.type) for f in _PAYLOAD_SCHEMA]
    arrays = _grouped_arrays(events, map(_EVENT_TYPE, events), by_type=True)
    if arrays is None:
        arrays = _grouped_arrays(events, map(tuple, events), by_type=False)
        assert arrays is not None  # groups of equal key tuples always have equal keys
    return arrays


_BLOCK_EVENTS = 1024
"""Events read per block by `_group_columns`: their row tuples stay in the CPU caches until transposed,
and only this many (GC-tracked) tuples are alive at once."""


def _group_columns(group: tuple[Event, ...] | list[Event], names: list[str]) -> dict[str, list[Any]]:
    """The values of `names` over `group` as one list per name (KeyError if an event lacks a name).

    Each event dict is read once (one C-level `itemgetter(*names)` per event), a block at a time,
    and the block's row tuples transposed with `zip`. Reading a column at a time instead visits every
    dict once per column: in a run the dicts lie scattered over the heap, and those passes cost about
    1.5x this one (measured in the benchmark scenario; on freshly copied, contiguous dicts the two
    cost the same). Blocks, not the whole group, so that no more than a block of row tuples is alive
    at once (a tuple per event alive at once made the young GC run twice as often)."""
    if len(names) <= 1:  # itemgetter of one name gives no tuple, of none it cannot be built
        return {name: list(map(itemgetter(name), group)) for name in names}
    get = itemgetter(*names)
    columns: list[list[Any]] = [[] for _ in names]
    for at in range(0, len(group), _BLOCK_EVENTS):
        rows = list(map(get, group[at:at + _BLOCK_EVENTS]))
        for column, values in zip(columns, zip(*rows, strict=True), strict=True):
            column.extend(values)
    return dict(zip(names, columns, strict=True))


def _grouped_arrays(events: list[Event], group_keys: Iterator[Hashable], by_type: bool) -> list[pa.Array] | None:
    """`_payload_arrays` with the events grouped by `group_keys` (one per event), or None when the
    events of some group do not all have the same keys (the caller then groups more finely).
    `by_type`: the group keys are the event types, so the `event_type` column is each group's key
    repeated (built in C++, not read and converted cell by cell).

    A group's columns are its first event's keys. The check is cheap and exact: every event of the
    group has as many keys as the first (one `len` pass) and every key of the first (a missing one
    makes the group's itemgetter raise KeyError). A column no group has is one typed null array; any
    other is converted group by group (nulls for the groups lacking it), concatenated in group order,
    and put back in emission order by one `take` (none when the batch is one group)."""
    n = len(events)
    # Group id of each event = index of the first event of its group: one C-level pass
    # (dict.setdefault), no Python loop per event.
    first_of_group: dict[Hashable, int] = {}
    first = list(map(first_of_group.setdefault, group_keys, range(n)))
    back: pa.Array | None = None
    grouped: tuple[Event, ...] | list[Event] = events
    if len(first_of_group) > 1:
        # Groups in order of first appearance; a stable sort keeps emission order inside each group.
        order = pc.sort_indices(pa.array(first, pa.int64()))
        grouped = itemgetter(*order.to_pylist())(events)
        # Row k of the grouped order is event order[k]; the inverse permutation restores emission order.
        back = pc.sort_indices(order)
    sizes = Counter(first)
    groups: list[tuple[str, int, dict[str, list[Any]]]] = []
    at = 0
    try:
        for start in first_of_group.values():
            group = grouped[at:at + sizes[start]]
            at += len(group)
            if len(set(map(len, group))) != 1:
                return None
            names = [k for k in group[0] if not (by_type and k == "event_type")]
            groups.append((group[0]["event_type"], len(group), _group_columns(group, names)))
    except KeyError:  # an event lacks a key of its group's first event
        return None
    arrays: list[pa.Array] = []
    for f in _PAYLOAD_SCHEMA:
        name = f.name
        if by_type and name == "event_type":
            parts = [_repeated(event_type, size) for event_type, size, _ in groups]
        elif any(name in columns for _, _, columns in groups):
            parts = [_column(columns[name], name, f.type) if name in columns else pa.nulls(size, f.type)
                     for _, size, columns in groups]
        else:
            arrays.append(pa.nulls(n, f.type))
            continue
        array = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
        arrays.append(array if back is None else array.take(back))
    return arrays


def _repeated(value: str, n: int) -> pa.Array:
    """`n` copies of `value` as a string array, built in C++ (no list of `n` Python references)."""
    return pa.repeat(pa.scalar(value, pa.string()), n)


def stamped_table(events: list[Event], run_id: str, first_event_id: int) -> pa.Table:
    """Engine events (no envelope) as an `EVENT_SCHEMA` table with the run's envelope: the payload is
    converted column by column (`_payload_arrays`) and the envelope added as whole columns built in
    C++ (repeated strings, a cumulative sum for the ids), which is several times cheaper than
    building one stamped dict per event."""
    payload = dict(zip(_PAYLOAD_SCHEMA.names, _payload_arrays(events), strict=True))
    n = len(events)
    # event_id = first_event_id, first_event_id + 1, ...: a running sum of ones, with no Python int per row.
    ids = pc.add(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), first_event_id - 1)
    envelope = {
        "schema_version": _repeated(SCHEMA_VERSION, n),
        "source": _repeated("engine", n),
        "run_id": _repeated(run_id, n),
        "event_id": ids,
    }
    arrays = [envelope[f.name] if f.name in envelope else payload[f.name] for f in EVENT_SCHEMA]
    return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA)


class EventWriter:
    """Rolled event files with the run envelope (see module docstring); also counts what it wrote."""

    def __init__(self, out_dir: str | Path, run_id: str, fmt: str = "parquet",
                 max_events_per_file: int = 1_000_000) -> None:
        if fmt not in ("parquet", "jsonl"):
            raise ValueError(f"format must be parquet or jsonl, got {fmt!r}")
        self.out_dir = Path(out_dir)
        self.events_dir = self.out_dir / "events"
        self.events_dir.mkdir(parents=True, exist_ok=True)
        # Hidden from the ingest (it skips dot folders) until `close` publishes the files.
        self._staging = self.events_dir / STAGING
        shutil.rmtree(self._staging, ignore_errors=True)  # what an interrupted run left
        self._staging.mkdir()
        self.run_id = run_id
        self.fmt = fmt
        self.max_events_per_file = max_events_per_file
        self.next_event_id = 0
        self.files: list[str] = []
        self.counts: dict[str, int] = {}
        self.acked_records: dict[str, int] = {"-1": 0, "0": 0, "1": 0}
        self._in_file = 0
        self._parquet: pq.ParquetWriter | None = None
        self._jsonl: Any = None

    def _open(self) -> None:
        name = f"part-{len(self.files):05d}.{self.fmt}"
        path = self._staging / name
        self.files.append(f"events/{name}")
        self._in_file = 0
        if self.fmt == "parquet":
            self._parquet = pq.ParquetWriter(str(path), EVENT_SCHEMA, **_PARQUET_OPTIONS)
        else:
            self._jsonl = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 (kept open across batches)

    def _close(self) -> None:
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None
        if self._jsonl is not None:
            self._jsonl.close()
            self._jsonl = None

    def write(self, events: list[Event]) -> None:
        """Stamp the envelope and append `events` to the current file, rolling as needed."""
        start = 0
        while start < len(events):
            if self._parquet is None and self._jsonl is None:
                self._open()
            room = self.max_events_per_file - self._in_file
            chunk = events[start:start + room]
            start += len(chunk)
            self._write_chunk(chunk, self.next_event_id)
            self.next_event_id += len(chunk)
            self._in_file += len(chunk)
            if self._in_file >= self.max_events_per_file:
                self._close()

    def _tally(self, events: list[Event], event_types: pa.ChunkedArray | None) -> None:
        """Add `events` to `counts` (per event type) and `acked_records` (records of successful
        produce acks, per acks setting). With the chunk's `event_type` column at hand (Parquet) the
        types are counted in C++ and only the produce acks' rows are visited in Python; otherwise
        (JSON Lines) a Counter over the events at C speed, then a pass over the events if any is an ack."""
        if event_types is None:
            batch_counts: dict[str, int] = Counter(map(_EVENT_TYPE, events))
            acks: list[Event] = events if "produce_ack" in batch_counts else []
        else:
            tallied = pc.value_counts(event_types)
            batch_counts = dict(zip(tallied.field("values").to_pylist(), tallied.field("counts").to_pylist(),
                                    strict=True))
            acks = []
            if "produce_ack" in batch_counts:
                rows = pc.indices_nonzero(pc.equal(event_types, "produce_ack")).to_pylist()
                acks = [events[i] for i in rows]
        counts = self.counts
        for et, n in batch_counts.items():
            counts[et] = counts.get(et, 0) + n
        acked = self.acked_records
        for ev in acks:
            if (ev["event_type"] == "produce_ack" and ev.get("error") == "NONE"
                    and ev.get("base_offset") is not None):
                key = str(ev["acks"])
                acked[key] = acked.get(key, 0) + ev["last_offset"] - ev["base_offset"] + 1

    def _write_chunk(self, chunk: list[Event], first_id: int) -> None:
        if self._parquet is not None:
            table = stamped_table(chunk, self.run_id, first_id)
            self._tally(chunk, table.column("event_type"))
            self._parquet.write_table(table, row_group_size=len(chunk))
            return
        self._tally(chunk, None)
        dumps = json.dumps
        # The envelope first, then the event's own fields in emission order, nulls left out.
        head = dumps({"schema_version": SCHEMA_VERSION, "source": "engine", "run_id": self.run_id},
                     separators=(",", ":"))[:-1] + ',"event_id":'
        lines = []
        for i, ev in enumerate(chunk, first_id):
            body = dumps({k: v for k, v in ev.items() if v is not None}, separators=(",", ":"))
            lines.append(f"{head}{i},{body[1:]}\n")
        self._jsonl.write("".join(lines))

    def close(self) -> None:
        """Finish the current file and publish the run's files into `events/` (see the module docstring)."""
        self._close()
        written = {Path(f).name for f in self.files}
        for old in self.events_dir.glob("part-*"):
            if old.name not in written:
                old.unlink()  # a rerun into the same folder replaces the previous run's files
        for name in sorted(written):
            new, there = self._staging / name, self.events_dir / name
            if there.is_file() and filecmp.cmp(new, there, shallow=False):
                new.unlink()
            else:
                os.replace(new, there)
        self._staging.rmdir()

    def write_manifest(self, manifest: dict[str, Any]) -> Path:
        """Write `run.json` (sorted keys, fixed indentation: deterministic bytes)."""
        path = self.out_dir / "run.json"
        path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path
