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
from collections.abc import Callable, Hashable, Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from replication_core.event_log import HOT_TYPES, EventBatch
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


def _batch_payload_arrays(batch: EventBatch) -> list[pa.Array]:
    """The payload columns of `batch` in `_PAYLOAD_SCHEMA` order (missing fields null).

    The batch's dict events go through `_payload_arrays`; each frequent type's columns are C-level
    slices of its flat value list (`replication_core.event_log`). The parts are concatenated kind by
    kind (dicts first), then put back in emission order by one `take`: a stable sort of the events'
    kinds gives each event's row in the concatenation."""
    n = len(batch.kinds)
    if not n:
        return [pa.nulls(0, f.type) for f in _PAYLOAD_SCHEMA]
    # (row count, column arrays by name) of each kind present, dicts first.
    segments: list[tuple[int, dict[str, pa.Array]]] = []
    if batch.generic:
        segments.append((len(batch.generic), dict(zip(_PAYLOAD_SCHEMA.names, _payload_arrays(batch.generic),
                                                      strict=True))))
    for (event_type, names), flat in zip(HOT_TYPES, batch.columns, strict=True):
        stride = len(names)
        rows = len(flat) // stride
        if rows:
            arrays = {name: _column(flat[j::stride], name, _PAYLOAD_SCHEMA.field(name).type)
                      for j, name in enumerate(names)}
            arrays["event_type"] = _repeated(event_type, rows)
            segments.append((rows, arrays))
    if len(segments) == 1:
        only = segments[0][1]
        return [only[f.name] if f.name in only else pa.nulls(n, f.type) for f in _PAYLOAD_SCHEMA]
    order = pc.sort_indices(pa.array(batch.kinds, pa.int8()))  # stable: emission order within a kind
    back = pc.sort_indices(order)
    out: list[pa.Array] = []
    for f in _PAYLOAD_SCHEMA:
        if not any(f.name in arrays for _, arrays in segments):
            out.append(pa.nulls(n, f.type))
            continue
        parts = [arrays[f.name] if f.name in arrays else pa.nulls(rows, f.type) for rows, arrays in segments]
        if all(part.null_count == len(part) for part in parts):
            # Nothing to put in order (most columns only rarer events fill, absent from most batches): the
            # same nulls without a concatenation and a take.
            out.append(pa.nulls(n, f.type))
            continue
        out.append(pa.concat_arrays(parts).take(back))
    return out


def stamped_table(events: list[Event] | EventBatch, run_id: str, first_event_id: int) -> pa.Table:
    """Engine events (no envelope) as an `EVENT_SCHEMA` table with the run's envelope: the payload is
    converted column by column (`_batch_payload_arrays`) and the envelope added as whole columns built
    in C++ (repeated strings, a cumulative sum for the ids), which is several times cheaper than
    building one stamped dict per event."""
    batch = events if isinstance(events, EventBatch) else EventBatch.of_dicts(events)
    payload = dict(zip(_PAYLOAD_SCHEMA.names, _batch_payload_arrays(batch), strict=True))
    n = len(batch)
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

    def write(self, events: list[Event] | EventBatch) -> None:
        """Stamp the envelope and append `events` (dicts, or an `EventLog`'s batch) to the current file,
        rolling as needed."""
        if not len(events):
            return
        if self.fmt == "parquet":
            # The whole batch converted at once; a file boundary inside it cuts the table (zero-copy).
            table = stamped_table(events, self.run_id, self.next_event_id)
            self._tally(table)
            self._in_chunks(table.num_rows, lambda start, size: self._write_table(table.slice(start, size)))
        else:
            dicts = events.to_dicts() if isinstance(events, EventBatch) else events
            self._tally_dicts(dicts)
            self._in_chunks(len(dicts), lambda start, size: self._write_lines(dicts[start:start + size],
                                                                              self.next_event_id))

    def _in_chunks(self, n: int, write_chunk: Callable[[int, int], None]) -> None:
        """Call `write_chunk(start, size)` for the pieces of `n` events that fill the current file and the
        next ones, opening and closing files as they fill."""
        start = 0
        while start < n:
            if self._parquet is None and self._jsonl is None:
                self._open()
            size = min(self.max_events_per_file - self._in_file, n - start)
            write_chunk(start, size)
            start += size
            self.next_event_id += size
            self._in_file += size
            if self._in_file >= self.max_events_per_file:
                self._close()

    def _tally(self, table: pa.Table) -> None:
        """Add a stamped table's events to `counts` (per event type) and `acked_records` (records of
        successful produce acks, per acks setting), in C++."""
        tallied = pc.value_counts(table.column("event_type"))
        self._add_counts(zip(tallied.field("values").to_pylist(), tallied.field("counts").to_pylist(), strict=True))
        acked = table.filter(pc.and_(pc.equal(table.column("event_type"), "produce_ack"),
                                     pc.and_(pc.equal(table.column("error"), "NONE"),
                                             pc.is_valid(table.column("base_offset")))))
        if acked.num_rows:
            records = pc.add(pc.subtract(acked.column("last_offset"), acked.column("base_offset")), 1)
            sums = pa.table({"acks": acked.column("acks"), "records": records}).group_by("acks").aggregate(
                [("records", "sum")])
            for acks, n in zip(sums.column("acks").to_pylist(), sums.column("records_sum").to_pylist(), strict=True):
                self.acked_records[str(acks)] = self.acked_records.get(str(acks), 0) + n

    def _tally_dicts(self, events: list[Event]) -> None:
        """`_tally` over events as dicts (JSON Lines)."""
        self._add_counts(Counter(map(_EVENT_TYPE, events)).items())
        acked = self.acked_records
        for ev in events:
            if (ev["event_type"] == "produce_ack" and ev.get("error") == "NONE"
                    and ev.get("base_offset") is not None):
                key = str(ev["acks"])
                acked[key] = acked.get(key, 0) + ev["last_offset"] - ev["base_offset"] + 1

    def _add_counts(self, batch_counts: Iterable[tuple[str, int]]) -> None:
        counts = self.counts
        for et, n in batch_counts:
            counts[et] = counts.get(et, 0) + n

    def _write_table(self, table: pa.Table) -> None:
        assert self._parquet is not None
        self._parquet.write_table(table, row_group_size=table.num_rows)

    def _write_lines(self, chunk: list[Event], first_id: int) -> None:
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
