"""The ingest's whole-file path: landing files that break no rule, rewritten into bronze by Arrow.

Almost every landing file is good: the simulator's writer produced it with the event schema. For
such a file the ingest's Spark pass (read, ~130 validation rules, write) does work whose answer is
known once one screen has passed over every record, and most of its cost in a fresh JVM is compiling
that work. Here each Spark task takes whole files and, in its Python worker, reads one with pyarrow
(Parquet, or JSON Lines with Arrow's JSON reader, where it reads exactly as Spark's would),
evaluates `jobs.arrow_validate.screen` on every record batch, and writes the records with their
lineage as bronze's Parquet files (partition folders by `run_id`, as Spark's partitioned writer lays
them out), uncommitted. A file whose schema is not plain, which cannot be read, or in which any
record may break a rule is left untouched (what was written for it is deleted) and goes through
the exact Spark path (`jobs.landing` + `jobs.validate`) with every other file. No record crosses
between the JVM and Python: tasks get paths and return one small row per file written.

The rows written are the ones the Spark path writes for the same file (same columns, types, values
and lineage; `tests/test_arrow_ingest.py` compares both on simulated events); each task also
returns, per run, the first and last event id it wrote and whether the ids ascend, from which the
ingest decides whether a duplicate is possible without reading the keys again.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from jobs.arrow_validate import plain_schema_problem, screen
from jobs.lake import Lake, StagedWrite
from jobs.landing import LandingFile
from schemas.events import BRONZE_EVENTS_PARTITION_BY, BRONZE_EVENTS_SCHEMA, EVENT_SCHEMA
from schemas.spark import to_spark_schema
from schemas.tables import BRONZE_EVENTS

READ_BATCH_ROWS = 131_072
"""Records per Arrow batch a task reads, screens and writes at a time (one row group each): bounds its memory."""
READ_JSON_BYTES = 32 << 20
"""Bytes of JSON Lines a task parses at a time (whole lines): bounds its memory."""

_RUN = BRONZE_EVENTS_PARTITION_BY[0]
# Bronze's data files: every column but the partition column, all nullable, as Spark writes them.
_DATA_SCHEMA = pa.schema([f.with_nullable(True).remove_metadata() for f in BRONZE_EVENTS_SCHEMA if f.name != _RUN])

OUTCOME_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string(), nullable=False),
        pa.field("kept", pa.bool_(), nullable=False),
        pa.field("why", pa.string()),
        pa.field("run_id", pa.string()),
        pa.field("run_records", pa.int64()),
        pa.field("first_event_id", pa.int64()),
        pa.field("last_event_id", pa.int64()),
        pa.field("ascending", pa.bool_()),
        pa.field("files", pa.list_(pa.string())),  # the run's files written, relative to the output folder
        # Seconds the task spent on the file, on its first row only: reading (and parsing), the screen, writing.
        pa.field("read_s", pa.float64()),
        pa.field("screen_s", pa.float64()),
        pa.field("write_s", pa.float64()),
    ]
)
"""One row per (landing file, run) written, or one row for a file left to the Spark path (`kept` false)."""


@dataclass(frozen=True)
class RunSegment:
    """The records one landing file holds of one run: how many, and the event ids' range and order."""

    path: str
    run_id: str
    records: int
    first_event_id: int
    last_event_id: int
    ascending: bool
    """True when the ids strictly increase in file order (so none repeats within the segment)."""


@dataclass
class ArrowPass:
    """What the whole-file path did: files it wrote (staged, uncommitted) and files it left to Spark."""

    staged: StagedWrite | None
    kept: list[LandingFile]
    records: int
    segments: list[RunSegment]
    left: dict[str, str]
    """path -> why the file goes through the Spark path."""
    task_seconds: dict[str, float] = field(default_factory=dict)
    """Seconds the tasks spent reading, screening and writing, summed over files (tasks run in parallel)."""

    @classmethod
    def nothing(cls) -> ArrowPass:
        """No file taken by the whole-file path."""
        return cls(None, [], 0, [], {})


UNEXPECTED = "unexpected error: "
"""The start of a `left` reason that is an error of the whole-file path, not a verdict on the file."""


class _LeaveToSpark(Exception):
    """This file needs the exact path; the message says why."""


# The characters Spark's partitioned writer escapes in a folder name (ExternalCatalogUtils.escapePathName), and NUL;
# Spark's partition discovery unescapes each %XX as one character, so anything else (non-ASCII text
# included) is written as itself, as Spark writes it.
_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset('"#%\'*/:=?\\\x7f{[]^')


def partition_folder(run_id: str) -> str:
    """The folder of a run's files, `run_id=<value>`, escaped as Spark's partitioned writer escapes it."""
    value = "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in run_id)
    return f"{_RUN}={value}"


class _RunFiles:
    """The open output file(s) of one run of one landing file, rolled at `max_rows` records."""

    def __init__(self, folder: Path, stem: str, max_rows: int, codec: str) -> None:
        self.folder, self.stem, self.max_rows, self.codec = folder, stem, max_rows, codec
        self.paths: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.in_file = 0
        self.records = 0
        self.first: int | None = None
        self.last: int | None = None
        self.ascending = True

    def write(self, table: pa.Table, ids: np.ndarray) -> None:
        if self.last is not None and ids[0] <= self.last:
            self.ascending = False
        if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            self.ascending = False
        self.first = int(ids[0]) if self.first is None else self.first
        self.last = int(ids[-1])
        self.records += table.num_rows
        start = 0
        while start < table.num_rows:
            if self.writer is None or self.in_file >= self.max_rows:
                self.close()
                self.folder.mkdir(parents=True, exist_ok=True)
                path = self.folder / f"{self.stem}-{len(self.paths):03d}.parquet"
                self.paths.append(path)
                self.writer = pq.ParquetWriter(path, _DATA_SCHEMA, compression=self.codec)
                self.in_file = 0
            take = min(table.num_rows - start, self.max_rows - self.in_file)
            self.writer.write_table(table.slice(start, take))
            self.in_file += take
            start += take

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _bronze_rows(batch: pa.RecordBatch, path: str, first_line: int, ingest_batch: str) -> pa.Table:
    """`batch`'s records with bronze's data columns: missing event columns null, lineage added."""
    n = batch.num_rows
    names = set(batch.schema.names)
    arrays = []
    for f in _DATA_SCHEMA:
        if f.name == "_source_file":
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([path]))
                          .cast(pa.string()))
        elif f.name == "_source_line":
            arrays.append(pa.array(np.arange(first_line, first_line + n, dtype=np.int64)))
        elif f.name == "_ingest_batch":
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([ingest_batch]))
                          .cast(pa.string()))
        elif f.name in names:
            arrays.append(batch.column(f.name).cast(f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=_DATA_SCHEMA)


def _parquet_batches(path: str) -> Iterator[pa.RecordBatch]:
    """A landing Parquet file's records in bounded batches, if its schema is plain (else `_LeaveToSpark`)."""
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # whatever the reader raised, the Spark path reports it per file
        raise _LeaveToSpark(f"unreadable: {type(e).__name__}") from e
    why = plain_schema_problem(pf.schema_arrow)
    if why:
        raise _LeaveToSpark(why)
    yield from pf.iter_batches(batch_size=READ_BATCH_ROWS)


_JSON_SCHEMA = pa.schema([f.with_nullable(True) for f in EVENT_SCHEMA if f.name != "config"])
_JSON_FLOATS = tuple(f.name for f in _JSON_SCHEMA if pa.types.is_floating(f.type))
# Jackson's longest number; only a float can be written that long and still be read by Arrow (an integer
# overflows int64 first). Searched for only in a chunk with a line that long: the scan costs 10 ms per MB.
_LONG_NUMBER_CHARS = 1000
_LONG_NUMBER = re.compile(rb"[0-9.eE+-]{%d}" % _LONG_NUMBER_CHARS)


def _longest_line(chunk: bytes) -> int:
    """Bytes in the chunk's longest line."""
    ends = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends, [len(chunk)]))
    return int((stops - starts).max()) if len(starts) else 0
_CONFIG_TYPE = EVENT_SCHEMA.field("config").type


def _line_chunks(path: str, size: int) -> Iterator[bytes]:
    """The file's bytes in chunks of whole lines of about `size` bytes (a line longer than that is one chunk)."""
    with open(path, "rb") as fh:
        rest = b""
        while True:
            block = fh.read(size)
            if not block:
                break
            data = rest + block
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            yield data[:cut]
            rest = data[cut:]
        if rest:
            yield rest


def _one_object_per_line(chunk: bytes, first: bool) -> int:
    """The chunk's line count, if each line is one JSON object alone: starts with '{', ends with '}', no blank
    line, no byte-order mark, no carriage return (else `_LeaveToSpark`: Spark's reader handles those)."""
    ends = chunk.count(b"\n")
    lines = ends + (0 if chunk.endswith(b"\n") else 1)
    starts_ok = chunk.startswith(b"{") and chunk.count(b"\n{") == lines - 1
    ends_ok = chunk.count(b"}\n") == ends and (chunk.endswith(b"\n") or chunk.endswith(b"}"))
    if not (starts_ok and ends_ok):
        where = "the file's start" if first and not chunk.startswith(b"{") else "a line"
        raise _LeaveToSpark(f"{where} is not one JSON object alone on its line")
    return lines


def _check_utf8(chunk: bytes) -> None:
    """`_LeaveToSpark` unless the chunk is valid UTF-8: Arrow's JSON reader would keep invalid bytes in a
    string, where Spark's parser rejects the line (so the record is quarantined there)."""
    offsets = pa.array([0, len(chunk)], pa.int64()).buffers()[1]
    text = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(chunk)])
    try:
        text.validate(full=True)
    except pa.ArrowInvalid as e:
        raise _LeaveToSpark("bytes that are not UTF-8") from e


def _config_map(chunk: bytes, config: pa.Array, lines: int) -> pa.Array:
    """The `config` map of each line, read with Python's json for the few lines that have one, keeping the
    key order as written (Arrow's JSON reader cannot read a map). `_LeaveToSpark` unless every value is a
    string or null and no key repeats: Spark's reading of anything else differs."""
    valid = np.flatnonzero(config.is_valid().to_numpy(zero_copy_only=False))
    out: list[list[tuple[str, str | None]] | None] = [None] * lines
    if len(valid):
        ends = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
        for i in valid:
            start = 0 if i == 0 else int(ends[i - 1]) + 1
            stop = int(ends[i]) if i < len(ends) else len(chunk)
            pairs = json.loads(chunk[start:stop], object_pairs_hook=lambda kv: kv)
            entries = next((v for k, v in pairs if k == "config"), None)
            if not isinstance(entries, list) or len({k for k, _ in entries}) != len(entries) or any(
                    v is not None and not isinstance(v, str) for _, v in entries):
                raise _LeaveToSpark("a config map with a repeated key or a value that is not a string")
            out[i] = entries
    return pa.array(out, _CONFIG_TYPE)


def _jsonl_batches(path: str) -> Iterator[pa.RecordBatch]:
    """A landing JSON Lines file's records in bounded batches, parsed by Arrow against the event schema.

    `_LeaveToSpark` at the first thing Arrow's reader would read differently from Spark's (or not at
    all): a line not one object alone, an unknown field, a value of another type (Arrow's reader does
    not convert; Spark's turns a number into a string), a repeated key.
    """
    first = True
    for chunk in _line_chunks(path, READ_JSON_BYTES):
        lines = _one_object_per_line(chunk, first)
        _check_utf8(chunk)
        first = False
        try:
            table = pj.read_json(
                pa.BufferReader(chunk),
                read_options=pj.ReadOptions(use_threads=False, block_size=max(len(chunk), 1 << 20)),
                parse_options=pj.ParseOptions(explicit_schema=_JSON_SCHEMA, unexpected_field_behavior="infer"),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise _LeaveToSpark(f"Arrow's JSON reader: {str(e)[:200]}") from e
        extra = [n for n in table.column_names if n not in _JSON_SCHEMA.names]
        if [n for n in extra if n != "config"] or table.num_rows != lines:
            raise _LeaveToSpark("an unknown field, or a line that is not one object")
        if table.select(_JSON_SCHEMA.names).schema != _JSON_SCHEMA:
            raise _LeaveToSpark("an unknown field inside a nested value")
        for name in _JSON_FLOATS:
            # NaN / Infinity tokens: the two readers accept different spellings of them (Arrow '-NaN', 'Inf';
            # Spark '+Infinity', '-INF'), so Spark reads every line that has one.
            if pc.any(pc.invert(pc.is_finite(table.column(name))), min_count=0).as_py():
                raise _LeaveToSpark(f"a non-finite {name}")
        if _longest_line(chunk) >= _LONG_NUMBER_CHARS and _LONG_NUMBER.search(chunk):
            raise _LeaveToSpark("a number longer than Jackson's 1000 characters (Spark quarantines its line)")
        config_type = table.column("config").type if "config" in extra else pa.null()
        if pa.types.is_struct(config_type):
            config = _config_map(chunk, table.column("config").combine_chunks(), lines)
        elif pa.types.is_null(config_type):  # absent, or null on every line of the chunk
            config = pa.nulls(lines, _CONFIG_TYPE)
        else:
            raise _LeaveToSpark("a config that is not a JSON object")
        table = table.drop_columns(extra).append_column(pa.field("config", _CONFIG_TYPE), config)
        yield from table.select(EVENT_SCHEMA.names).to_batches(max_chunksize=READ_BATCH_ROWS)


def rewrite_file(path: str, kind: str, index: int, out_dir: str, ingest_batch: str, max_rows: int,
                 codec: str) -> list[dict[str, object]]:
    """Rewrite one landing file into `out_dir` as bronze's files, or leave it to Spark (see module doc).

    Returns the file's outcome rows (`OUTCOME_SCHEMA`). Runs in a Spark task's Python worker.
    """
    runs: dict[str, _RunFiles] = {}
    line = 1
    clock = {"read_s": 0.0, "screen_s": 0.0, "write_s": 0.0}
    # Names of this call's own: a retried or speculative attempt of the task writes other files, and the
    # driver keeps only those the successful attempt reported.
    attempt = uuid.uuid4().hex[:8]
    t = time.perf_counter()
    try:
        for batch in _parquet_batches(path) if kind == "parquet" else _jsonl_batches(path):
            t = _lap(clock, "read_s", t)
            if batch.num_rows == 0:
                continue
            suspect = pc.any(screen(batch)).as_py()
            t = _lap(clock, "screen_s", t)
            if suspect:
                raise _LeaveToSpark("a record may break a validation rule")
            rows = _bronze_rows(batch, path, line, ingest_batch)
            run_col = batch.column(_RUN)
            ids = batch.column("event_id")
            batch_runs = pc.unique(run_col).to_pylist()
            for run in batch_runs:
                if run not in runs:
                    folder = Path(out_dir) / partition_folder(run)
                    runs[run] = _RunFiles(folder, f"part-{index:05d}-{attempt}-{len(runs):03d}", max_rows, codec)
                if len(batch_runs) == 1:
                    part, part_ids = rows, ids
                else:
                    mask = pc.equal(run_col, run)
                    part, part_ids = rows.filter(mask), ids.filter(mask)
                runs[run].write(part, part_ids.to_numpy(zero_copy_only=False))
            line += batch.num_rows
            t = _lap(clock, "write_s", t)
        for r in runs.values():
            r.close()
        _lap(clock, "write_s", t)
    except Exception as e:
        for r in runs.values():
            r.close()
            for p in r.paths:
                p.unlink(missing_ok=True)
        # Anything else is not the file's verdict but a failure of this path (a bug, a full disk): the file
        # still goes to Spark, and the reason says so (the ingest logs it).
        why = str(e) if isinstance(e, _LeaveToSpark) else f"{UNEXPECTED}{type(e).__name__}: {e}"
        return [{"path": path, "kept": False, "why": why[:300], **clock}]
    if not runs:
        return [{"path": path, "kept": True, **clock}]
    return [
        {"path": path, "kept": True, "run_id": run, "run_records": r.records,
         "first_event_id": r.first, "last_event_id": r.last, "ascending": r.ascending,
         "files": [f.relative_to(out_dir).as_posix() for f in r.paths], **(clock if i == 0 else {})}
        for i, (run, r) in enumerate(runs.items())
    ]


def _lap(clock: dict[str, float], key: str, since: float) -> float:
    now = time.perf_counter()
    clock[key] += now - since
    return now


def _rewrite_partition(batches: Iterator[pa.RecordBatch], out_dir: str, ingest_batch: str, max_rows: int,
                       codec: str) -> Iterator[pa.RecordBatch]:
    for b in batches:
        cols = (b.column("path").to_pylist(), b.column("kind").to_pylist(), b.column("index").to_pylist())
        for path, kind, index in zip(*cols, strict=True):
            rows = rewrite_file(path, kind, index, out_dir, ingest_batch, max_rows, codec)
            yield pa.RecordBatch.from_pylist(rows, schema=OUTCOME_SCHEMA)


# Spark's Parquet codec names -> pyarrow's (Spark's lzo has no pyarrow writer: that setting keeps the Spark path).
_ARROW_CODECS = {"none": "none", "uncompressed": "none", "snappy": "snappy", "gzip": "gzip", "zstd": "zstd",
                 "lz4": "lz4", "lz4raw": "lz4", "lz4_raw": "lz4", "brotli": "brotli"}


def arrow_pass(spark: SparkSession, lake: Lake, files: Sequence[LandingFile], ingest_batch: str) -> ArrowPass:
    """Rewrite the landing `files` that break no rule into bronze (staged); the others are `left` to Spark."""
    if not files:
        return ArrowPass.nothing()
    left: dict[str, str] = {}
    max_rows = int(spark.conf.get("spark.sql.files.maxRecordsPerFile", "0") or 0) or 2**62
    spark_codec = (spark.conf.get("spark.sql.parquet.compression.codec", "snappy") or "snappy").lower()
    codec = _ARROW_CODECS.get(spark_codec)
    if codec is None:
        return ArrowPass(None, [], 0, [], {f.path: f"pyarrow cannot write the {spark_codec} codec" for f in files})
    slices = min(len(files), 16 * spark.sparkContext.defaultParallelism)
    outcomes: list[T.Row] = []

    def write(out_dir: Path) -> None:
        todo = spark.sparkContext.parallelize([(f.path, f.kind, i) for i, f in enumerate(files)], slices)
        paths = spark.createDataFrame(todo, "path string, kind string, index int")
        target = str(out_dir)
        outcomes.extend(paths.mapInArrow(
            lambda it: _rewrite_partition(it, target, ingest_batch, max_rows, codec), to_spark_schema(OUTCOME_SCHEMA)
        ).collect())  # one row per (file, run) written: grows with files, not records
        # Only what the successful task attempts reported is staged: a failed or speculative attempt's files go.
        reported = {f for r in outcomes if r["kept"] for f in r["files"] or ()}
        for written in out_dir.rglob("*.parquet"):
            if written.relative_to(out_dir).as_posix() not in reported:
                written.unlink()

    staged = lake.stage_files(BRONZE_EVENTS, write)
    kept_paths = {r["path"] for r in outcomes if r["kept"]}
    left.update({r["path"]: r["why"] for r in outcomes if not r["kept"]})
    segments = [
        RunSegment(r["path"], r["run_id"], r["run_records"], r["first_event_id"], r["last_event_id"], r["ascending"])
        for r in outcomes if r["kept"] and r["run_id"] is not None
    ]
    records = sum(s.records for s in segments)
    kept = [f for f in files if f.path in kept_paths]
    task_seconds = {k: sum(r[k] or 0.0 for r in outcomes) for k in ("read_s", "screen_s", "write_s")}
    return ArrowPass(staged, kept, records, segments, left, task_seconds)


def left_summary(left: dict[str, str], shown: int = 3) -> list[str]:
    """Log lines saying why files went to the Spark pass: one per reason (count, a few files), errors first."""
    by_reason: dict[str, list[str]] = {}
    for path, why in sorted(left.items()):
        by_reason.setdefault(why, []).append(path)
    order = sorted(by_reason.items(), key=lambda kv: (not kv[0].startswith(UNEXPECTED), -len(kv[1]), kv[0]))
    return [f"{len(paths)} file(s): {why} (e.g. {', '.join(paths[:shown])})" for why, paths in order]


def segments_repeat(segments: Sequence[RunSegment]) -> bool:
    """True when an event id may repeat among `segments`: one does not ascend, or two of a run overlap."""
    by_run: dict[str, list[RunSegment]] = {}
    for s in segments:
        if not s.ascending:
            return True
        by_run.setdefault(s.run_id, []).append(s)
    for segs in by_run.values():
        segs.sort(key=lambda s: s.first_event_id)
        if any(b.first_event_id <= a.last_event_id for a, b in pairwise(segs)):
            return True
    return False
