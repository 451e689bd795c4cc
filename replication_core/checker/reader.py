"""Reading a run's landing files for the checker: the only module of the checker that opens files.

`read_events(directory)` streams the events of every `*.parquet` (batch by batch, pyarrow) and `*.jsonl`
(line by line) file below `directory` (hidden and `_`-prefixed entries skipped), merged by `event_id`.
Every file must be in strictly increasing `event_id` order (the writer rolls files in emission order);
the merge then yields each run's events in order, and a repeated or decreasing `event_id` within a run
is an error. Every event's `schema_version` must be readable (`schemas.events.check_readable`).
`read_manifest(directory)` returns the optional `run.json`. Problems raise `ReaderError`, which the CLI
turns into exit code 2.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from schemas.events import SchemaVersionError, check_readable

MANIFEST = "run.json"
Event = dict[str, Any]


class ReaderError(Exception):
    """The events could not be read (missing folder, unreadable file, bad order, newer schema)."""


def discover(directory: str | Path) -> list[Path]:
    """Landing files below `directory`, in a stable (sorted) order."""
    root = Path(directory)
    if not root.is_dir():
        raise ReaderError(f"events folder {root} does not exist or is not a folder")
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if name.startswith((".", "_")):
                continue
            if name.endswith((".parquet", ".jsonl")):
                found.append(Path(dirpath) / name)
    return found


def read_manifest(directory: str | Path) -> dict[str, Any] | None:
    """The run manifest `run.json`, or None when absent; its schema_version (if any) must be readable."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReaderError(f"{path}: unreadable manifest: {exc}") from exc
    if not isinstance(manifest, dict):
        raise ReaderError(f"{path}: manifest must be a JSON object")
    version = manifest.get("schema_version")
    if version is not None:
        _check_version(str(version), str(path))
    return manifest


def _check_version(version: str, where: str) -> None:
    try:
        check_readable(version)
    except SchemaVersionError as exc:
        raise ReaderError(f"{where}: {exc}") from exc
    except ValueError as exc:
        raise ReaderError(f"{where}: {exc}") from exc


def _normalise(row: dict[str, Any]) -> Event:
    # Parquet maps come back as lists of (key, value) pairs; the checker wants a dict.
    config = row.get("config")
    if isinstance(config, list):
        row["config"] = dict(config)
    return row


def _rows(path: Path) -> Iterator[Event]:
    """Raw rows of one file, in file order."""
    try:
        if path.suffix == ".parquet":
            for batch in pq.ParquetFile(path).iter_batches():
                yield from batch.to_pylist()
        else:
            with path.open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                    except ValueError as exc:
                        raise ReaderError(f"{path}:{n}: malformed JSON: {exc}") from exc
                    if not isinstance(row, dict):
                        raise ReaderError(f"{path}:{n}: an event must be a JSON object")
                    yield row
    except ReaderError:
        raise
    except Exception as exc:  # pyarrow / OS errors: the file cannot be read
        raise ReaderError(f"{path}: unreadable: {exc}") from exc


def _file_events(path: Path) -> Iterator[tuple[int, int, Event]]:
    """(event_id, sequence, event) of one file, checking version and per-file order."""
    last: int | None = None
    for seq, row in enumerate(_rows(path)):
        event_id = row.get("event_id")
        if not isinstance(event_id, int):
            raise ReaderError(f"{path}: row {seq + 1} has no integer event_id")
        _check_version(str(row.get("schema_version") or ""), f"{path}: event {event_id}")
        if last is not None and event_id <= last:
            raise ReaderError(f"{path}: events out of order: event_id {event_id} after {last}")
        last = event_id
        yield event_id, seq, _normalise(row)


def read_events(directory: str | Path) -> Iterator[Event]:
    """All events below `directory`, merged across files by event_id; raises `ReaderError`."""
    files = discover(directory)
    if not files:
        raise ReaderError(f"no *.parquet or *.jsonl event files in {directory}")
    streams = [((eid, i, seq, ev) for eid, seq, ev in _file_events(path)) for i, path in enumerate(files)]
    last_by_run: dict[str, int] = {}
    for eid, _, _, ev in heapq.merge(*streams, key=lambda item: (item[0], item[1], item[2])):
        run = str(ev.get("run_id"))
        prev = last_by_run.get(run)
        if prev is not None and eid <= prev:
            raise ReaderError(f"run {run}: event_id {eid} appears twice (or out of order) across files")
        last_by_run[run] = eid
        yield ev
