"""Landing files: discovery, identity, and reading them into one "candidate records" shape.

Both readers return the same columns, so validation does not care where a record came from:
the event columns (typed; null where absent or unreadable), `_source_file`, `_source_line`
(1-based), `raw` (the line, or the row as JSON), `_malformed` (why the record could not be
parsed at all, else null), `_type_errors` (fields present with a value of the wrong type),
`_wrong_type_fields` (their names) and `_unknown_fields` (fields the schema does not have).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, reduce
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.container_lines import is_part, part_chains, without_prefix
from jobs.lake import IdempotencyKey
from jobs.validate import sql_str
from replication_core.checker.reader import MANIFEST
from schemas.events import COLUMN_NAMES, COLUMNS, EVENT_SCHEMA
from schemas.spark import UnsupportedArrowTypeError, to_spark_schema, to_spark_type

JSONL_SUFFIXES = (".jsonl",)
PARQUET_SUFFIXES = (".parquet",)
BROKER_LOG = "kafka-log"
"""The kind of a real Kafka broker log file (`replog ingest --source kafka-logs`, read by `jobs.broker_logs`)."""
COMPRESSED_LOG_SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".zst": "zstd"}
"""Compressed rolled logs Spark's line reader inflates (by these suffixes, Hadoop's codecs), and their format's name:
log4j2 compresses rolled files by the suffix of its `filePattern` (`.gz`, `.bz2`, ...), logrotate by default and
people mostly with gzip (`server.log.1.gz`). A file whose data breaks off (copied while being written) is quarantined
whole."""
_ARCHIVE_SUFFIXES = (".xz", ".zip", ".7z", ".lz4", ".tar", ".tgz", ".deflate", ".pack200", ".z", ".part", ".tmp")
"""Suffixes that are not a rolled log's index or date: archives Spark cannot read as one log's lines, and files still
being written; such files are listed as ignored."""
_LOG_NAME = re.compile(r"\.log(\.[\w-]+|-\d[\d_.-]*)?(" + "|".join(map(re.escape, COMPRESSED_LOG_SUFFIXES)) + ")?$",
                       re.IGNORECASE)
CORRUPT = "_corrupt_record"
EVENT_SPARK_SCHEMA = to_spark_schema(EVENT_SCHEMA)
_TYPE_NAMES = {c.name: str(c.type) for c in COLUMNS}

CANDIDATE_SCHEMA_EXTRA = T.StructType(
    [
        T.StructField("_source_file", T.StringType(), False),
        T.StructField("_source_line", T.LongType(), True),
        T.StructField("raw", T.StringType(), True),
        T.StructField("_malformed", T.StringType(), True),
        T.StructField("_type_errors", T.ArrayType(T.StringType()), True),
        T.StructField("_wrong_type_fields", T.ArrayType(T.StringType()), True),
        T.StructField("_unknown_fields", T.ArrayType(T.StringType()), True),
    ]
)


class LandingError(FileNotFoundError):
    """The landing folder is missing or unreadable."""


@dataclass(frozen=True)
class LandingFile:
    """One landing file and the identity that makes its ingest exactly-once."""

    path: str
    size: int
    mtime_ns: int
    kind: str  # "jsonl" | "parquet" | "kafka-log"

    @property
    def key(self) -> IdempotencyKey:
        """The Delta app-transaction id of this file: path, size and modification time.

        Like Spark's file stream source, a file is identified by where it is and when it was
        written; rewriting a file in place makes it new.
        """
        ident = f"{self.path}\0{self.size}\0{self.mtime_ns}".encode()
        return IdempotencyKey(f"replog-ingest:{hashlib.sha256(ident).hexdigest()[:32]}", 1)


def is_broker_log(name: str) -> bool:
    """True for a Kafka log file name: `server.log`, `state-change.log`, log4j's rolled `server.log.2024-05-14-13`
    and `server.log.1`, logrotate's `server.log.1` and (with `dateext`) `server.log-20240514`, and those compressed
    by gzip, bzip2 or zstd (`server.log.1.gz`, `server.log-20240514.gz`, `server.log.1.bz2`)."""
    lower = name.lower()
    # A tarball of logs is many files in one (listed as ignored, to be unpacked), and `server.log.xz` is no rolled
    # `server.log.<index>` but a format Spark reads as binary lines.
    stem = lower.removesuffix(compression_suffix(lower) or "")
    return _LOG_NAME.search(name) is not None and not stem.endswith(_ARCHIVE_SUFFIXES)


# What log4j or logrotate adds to a log's name as it rolls it: a date or an index after `.log`
# (`server.log.2024-05-14-13`, `server.log.1`, log4j2's `server.log.2024-05-14-13.1`, logrotate's `dateext`
# `server.log-20240514`) or before it (`server-2024-05-14-1.log`; logrotate's `extension .log`: `server-20240514.log`),
# and compression.
_ROLL_DATE = r"-\d{4}-?\d{2}-?\d{2}\d*(?:[-_.]\d+)*"
_ROLL_AFTER = r"(?:-\d[\d_-]*)?(?:\.\d[\d_-]*)*"
_ROLLED = re.compile(f"({_ROLL_DATE})?\\.log{_ROLL_AFTER}("
                     + "|".join(map(re.escape, COMPRESSED_LOG_SUFFIXES)) + ")?$", re.IGNORECASE)


# A Kubernetes container's log, as the kubelet writes it: `<namespace>_<pod>_<pod uid>/<container>/<restarts>.log`
# (a static pod's uid is a 32-digit hash), rotated to `<restarts>.log.<yyyyMMdd-HHmmss>` and gzipped. Each start of
# the container after a crash writes a new file, numbered by the restarts before it.
_POD_LOG = (r"(?i)^(.*/[a-z0-9][a-z0-9-]*_[a-z0-9][a-z0-9.-]*_[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?"
            r"[0-9a-f]{12}/[^/]+/)(\d+)\.log(?:\.\d{8}-\d{6})?(?:\.gz)?$")


def rolled_log_of(path: str | Column) -> Column:
    """SQL: the log a Kafka log file was rolled from: its path without the date or index and compression suffix
    (`/b3/server.log.2024-05-14-13.gz` and `/b3/server.log` -> `/b3/server.log`), one process's log in every file.
    A name log4j would not give a rolled file (`server.log.broker1`) is a log of its own. A Kubernetes container's
    files (`_POD_LOG`: `0.log`, `1.log.20240514-120000.gz`) are one log, its folder, through the container's
    restarts: a broker killed in `0.log` starts again in `1.log`."""
    column = F.col(path) if isinstance(path, str) else path
    log = F.regexp_replace(column, "(?i)" + _ROLLED.pattern, ".log")
    # Kafka 4.0's log4j2.yaml rolls state-change.log as stage-change.log.<date>, a typo since fixed (KAFKA-19576).
    log = F.regexp_replace(log, r"(?i)(^|/)stage-change\.log$", "$1state-change.log")
    return F.when(column.rlike(_POD_LOG), F.regexp_extract(column, _POD_LOG, 1)).otherwise(log)


_ROLL_SUFFIX = re.compile(f"({_ROLL_DATE})?\\.log({_ROLL_AFTER})$", re.IGNORECASE)


def roll_order(path: str | Column) -> Column:
    """SQL: a key that sorts the files of one rolled log (`rolled_log_of`) oldest first, for the lines two files
    stamp with the same millisecond (a size-rolled log rolls between any two lines).

    The current file (`server.log`) is the newest. An indexed file (`server.log.1`, an index of up to three digits
    and nothing else) sorts by the index falling: log4j 1's RollingFileAppender and logrotate rename `.1` to `.2` as
    they roll, so `.1` is the newest rolled file (log4j2's index-only pattern with its default `fileIndex` "max"
    numbers the other way; Kafka ships neither). Any other rolled file is dated (`server.log.2024-05-14-13`,
    `server.log.20240514`, `server.log.2024-05`, log4j2's `server.log.2024-05-14-13.1` and `server-2024-05-14-1.log`,
    logrotate's `server.log-20240514` and `server-20240514.log`) and sorts by its numbers in order, a log4j2 index
    last (with "max", a period's files are numbered oldest first). A Kubernetes container's files (`_POD_LOG`) sort
    by its restarts first (`0.log` before `1.log`), then as the others (`0.log.20240514-120000.gz` before `0.log`)."""
    column = F.col(path) if isinstance(path, str) else path
    name = F.regexp_replace(F.regexp_extract(column, r"[^/]*$", 0),
                            "(?i)(" + "|".join(map(re.escape, COMPRESSED_LOG_SUFFIXES)) + ")$", "")
    suffix = "(?i)" + _ROLL_SUFFIX.pattern
    rolled = F.concat(F.regexp_extract(name, suffix, 1), F.regexp_extract(name, suffix, 2))
    # An undashed date (8+ digits) pads to the second, so a day's name sorts before its hours' (`-20240514` before
    # `-2024051409`) and after the day before's (`-2024051323`) where a log's date pattern changed.
    numbers = F.transform(F.regexp_extract_all(rolled, F.lit(r"(\d+)"), 1), lambda x: F.when(
        F.length(x) >= 8, F.rpad(x, 14, "0")).otherwise(x).try_cast("long"))
    kind = F.when(rolled == "", F.lit(2)).when(rolled.rlike(r"^\.\d{1,3}$"), F.lit(1)).otherwise(F.lit(0))
    restarts = F.when(column.rlike(_POD_LOG), F.regexp_extract(column, _POD_LOG, 2).try_cast("long"))
    return F.struct(F.coalesce(restarts, F.lit(0)).alias("restarts"), kind.alias("kind"),
                    F.when(kind == 1, F.transform(numbers, lambda x: -x)).otherwise(numbers).alias("numbers"))


def compression_suffix(name: str) -> str | None:
    """The suffix of `name` that says its data is compressed (one of `COMPRESSED_LOG_SUFFIXES`), or None."""
    lower = name.lower()
    return next((s for s in COMPRESSED_LOG_SUFFIXES if lower.endswith(s)), None)


def discover(landing: str | Path, ignored: list[str] | None = None, logs: bool = False) -> list[LandingFile]:
    """All JSON Lines and Parquet files below `landing` (with `logs`: all Kafka log files instead), in a stable
    order (hidden ones skipped); the other files' paths are appended to `ignored` when given (a user's
    `events.json` should not vanish silently)."""
    root = Path(landing)
    if not root.is_dir():
        raise LandingError(f"landing folder {root} does not exist or is not a folder")
    found: list[LandingFile] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if name.startswith((".", "_")):
                continue
            lower = name.lower()
            if logs:
                kind = BROKER_LOG if is_broker_log(name) else ""
            elif lower.endswith(JSONL_SUFFIXES):
                kind = "jsonl"
            else:
                kind = "parquet" if lower.endswith(PARQUET_SUFFIXES) else ""
            if kind:
                p = (Path(dirpath) / name).resolve()
                if str(p) in seen:  # a symlink to a file already found: one file, read once
                    continue
                seen.add(str(p))
                st = p.stat()
                found.append(LandingFile(str(p), st.st_size, st.st_mtime_ns, kind))
            elif ignored is not None and name != MANIFEST:  # a simulated run's manifest sits beside its events
                ignored.append(str(Path(dirpath) / name))
    return found


_GLOB = re.compile(r"([\\\[\]{}*?])")


def spark_path(path: str) -> str:
    """`path` as Spark's file readers take it: they read '[', ']', '{', '}', '*', '?' and '\\' as glob syntax, so
    those are escaped (a file named `x[1].parquet` is that file, not a pattern)."""
    return _GLOB.sub(r"\\\1", path)


def unopenable_by_spark(files: Sequence[LandingFile]) -> dict[str, str]:
    """path -> reason for the `files` Spark cannot open at all: Hadoop reads a ':' in a file's name as the end
    of a URI scheme. Such a file is quarantined whole (whichever path would read it), so renaming it makes it
    new and ingests it."""
    return {f.path: f"Spark (Hadoop paths) cannot open a file whose name contains ':'; rename {Path(f.path).name!r}"
            for f in files if ":" in Path(f.path).name}


def numbered_lines(spark: SparkSession, paths: Sequence[str], mark: Column | None = None, reach: int = 0,
                   tail: int = 0, log: bool = False) -> DataFrame:
    """Every line of the text files `paths` (blank ones too) with its file URI and path, and 0-based number.

    Spark's line reader splits big files and packs splits into tasks, so a line's number is
    rebuilt from its split: within one split the rows keep their order, so a line's
    `monotonically_increasing_id` minus that of the split's first line is its place in the split,
    and the lines of the file's earlier splits (ordered by byte offset) come before it. The
    per-split counts are one small aggregate, broadcast back; the files are read twice, but by
    the plain line reader, which is far cheaper than holding each file as one string. The local
    path (`_path`) is decoded from the URI once per split, not once per line.

    With `mark` (a cheap predicate over `line`, evaluated once per line in the counting pass), one more column,
    `_before_mark`: true for the `reach` lines before a marked line of the same file, in whichever split. With `tail`,
    `_in_tail`: true for the file's last `tail` lines. A caller that keeps a few lines finds the lines before rare
    ones, or a file's last lines, this way, without reading the files a third time or sorting all of them.

    With `log`, the files are logs that a container runtime may have written (`jobs.container_lines`): each line
    loses a trailing CR and the runtime's prefix, and a line the runtime wrote in parts is one line again, at its
    first part's number; `_last_pos` gives the number of its last part (of any other line, its own). The CR and the
    prefix go in the projection that numbers the lines, which Catalyst pushes no filter through (the line id is
    nondeterministic): a caller's tests of `line` then read a column, where a computed column is repeated in every
    test of a pushed-down filter (a hundred in the broker-log reader's). The parts are collected in the counting pass
    too and joined back by line number through a broadcast of their text; the counting pass then runs when this is
    called, not when the lines are read. Parts are few from containerd (lines over 16 KiB); CRI-O's conmon may cut
    one line at each 8 KiB it reads, which makes that broadcast about a hundredth of the logs' bytes.
    """
    value = F.col("value")
    if log:
        value = F.when(value.endswith("\r"), F.expr("substring(value, 1, length(value) - 1)")).otherwise(value)
    text = spark.read.option("lineSep", "\n").text([spark_path(p) for p in paths]).select(
        without_prefix(value).alias("line") if log else value.alias("line"),
        F.col("_metadata.file_path").alias("_uri"),
        F.col("_metadata.file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_row"),
        *([is_part(value).alias("_part")] if log else []),
    )
    earlier = Window.partitionBy("_uri").orderBy("_block").rowsBetween(Window.unboundedPreceding, -1)
    counts = [F.min("_row").alias("_first"), F.count(F.lit(1)).alias("_n")]
    if mark is not None:
        counts.append(F.collect_list(F.when(mark, F.col("_row"))).alias("_marked_rows"))
    if log:
        counts.append(F.collect_list(F.when(F.col("_part"), F.struct("_row", "line"))).alias("_part_rows"))
    splits = (
        text.groupBy("_uri", "_block")
        .agg(*counts)
        .withColumn("_before", F.coalesce(F.sum("_n").over(earlier), F.lit(0)))
        .withColumn("_path", _path_of("_uri"))
    )
    pos = F.col("_row") - F.col("_first") + F.col("_before")
    extra: list[Column] = []
    whole = Window.partitionBy("_uri")
    if tail or log:
        splits = splits.withColumn("_lines", F.sum("_n").over(whole))
    if log:
        splits = splits.withColumn("_cut_file", F.max(F.size("_part_rows")).over(whole) > 0)
        # Counted now, once: the cut lines are looked up in a second table made from the counts, and Spark does not
        # share a plan with a line id (nondeterministic) between the two, so each would read the files again.
        splits = splits.localCheckpoint(eager=True)
    if mark is not None:
        # Every marked line's number in its file, on each of the file's splits (a file has few).
        marks = F.transform("_marked_rows", lambda r: r - F.col("_first") + F.col("_before"))
        splits = splits.withColumn("_marks", F.flatten(F.collect_list(marks).over(whole)))
        # The lambda only where the file has marks: most have none.
        near = F.exists("_marks", lambda m: (pos < m) & (pos >= m - reach))
        extra.append(F.when(F.size("_marks") > 0, near).otherwise(F.lit(False)).alias("_before_mark"))
    if tail:
        extra.append((pos >= F.col("_lines") - tail).alias("_in_tail"))
    if not log:
        return text.join(F.broadcast(splits), ["_uri", "_block"]).select("_uri", "_path", pos.alias("pos"), "line",
                                                                           *extra)
    lines = text.join(F.broadcast(splits), ["_uri", "_block"]).select(
        "_uri", "_path", pos.alias("pos"), "line", *extra,
        # The key that finds a line among the cut ones: null in a file without parts, which skips the lookup.
        F.when(F.col("_cut_file"), F.col("_uri")).alias("_cut_uri"))
    parts = splits.select("_uri", "_lines", F.explode(F.transform("_part_rows", lambda p: F.struct(
        (p.getField("_row") - F.col("_first") + F.col("_before")).alias("pos"), p.getField("line").alias("line"))))
        .alias("_p")).select("_uri", "_lines", "_p.pos", "_p.line")
    chains = part_chains(parts).withColumnsRenamed({"_uri": "_chain_uri", "pos": "_chain_pos"})
    joined = lines.join(F.broadcast(chains), (F.col("_cut_uri") == F.col("_chain_uri"))
                        & (F.col("pos") == F.col("_chain_pos")), "left")
    return joined.where(~F.coalesce("_drop", F.lit(False))).select(
        "_uri", "_path", F.coalesce("_start", "pos").alias("pos"),
        F.when(F.col("_prefix").isNotNull(), F.concat("_prefix", "line")).otherwise(F.col("line")).alias("line"),
        *[c for c in lines.columns if c not in ("_uri", "_path", "pos", "line", "_cut_uri")],
        F.col("pos").alias("_last_pos"))


# The non-numeric numbers from_json reads (allowNonNumericNumbers) but json_array_length does not: replaced by
# a 0 for the structure check only.
_NON_NUMERIC = r"(?<=[:\[,])(\s*)(-?NaN|[+-]?Infinity|[+-]INF)(?=\s*[,\]}])"
_STRUCTURE = (f"CASE WHEN contains(line, 'NaN') OR contains(line, 'Inf') OR contains(line, 'INF') "
              f"THEN regexp_replace(line, {sql_str(_NON_NUMERIC)}, '$1 0') ELSE line END")
_ONE_VALUE_SQL = (f"json_array_length(concat('[', {_STRUCTURE}, ']')) <=> 1 AND "
                  f"json_array_length(concat('[', {_STRUCTURE}, ',0,0]')) <=> 3")
"""SQL true when the line is exactly one JSON value: as an array's only element it makes an array of one, and a
']' in it cannot close that array early (json_array_length stops at the first closing bracket, so the second
wrapping must count three). A token scan, cheap next to the parse."""


def read_jsonl(spark: SparkSession, files: Sequence[LandingFile]) -> DataFrame:
    """JSON Lines files as candidate records; every non-blank line is one record."""
    if not files:
        return _empty(spark)
    typed = T.StructType([*EVENT_SPARK_SCHEMA.fields, T.StructField(CORRUPT, T.StringType())])
    as_text = T.StructType([T.StructField(f.name, T.StringType()) for f in EVENT_SPARK_SCHEMA.fields])
    lines = (
        numbered_lines(spark, [f.path for f in files])
        .withColumn("line", F.when(F.endswith("line", F.lit("\r")), F.expr("substring(line, 1, length(line) - 1)"))
                    .otherwise(F.col("line")))
        # A UTF-8 byte-order mark at the start of a file is an encoding artefact, not data.
        .withColumn("line", F.when((F.col("pos") == 0) & F.startswith("line", F.lit("\ufeff")),
                                   F.expr("substring(line, 2)")).otherwise(F.col("line")))
        # Almost every line starts with '{': only the others pay for trim's copy of the line.
        .where(F.startswith("line", F.lit("{")) | (F.trim("line") != ""))
    )
    parsed = lines.select(
        "_path", "pos", "line",
        F.from_json("line", typed, {"columnNameOfCorruptRecord": CORRUPT, "mode": "PERMISSIVE"}).alias("t"),
    )
    # The key list costs a second parse, so it is read only where it can matter: a line the typed
    # parse rejected, or one with more ':' than parsed fields. Every key is followed by a ':', so a
    # line with a key outside the schema always has more; values holding ':' (a config map) only
    # cost this second look.
    # In bytes: ':' is one byte in UTF-8, and a string's byte length is known without a scan.
    colons = F.octet_length("line") - F.octet_length(F.replace(F.col("line"), F.lit(":"), F.lit("")))
    fields = reduce(lambda a, b: a + b, [F.col(f"t.{n}").isNotNull().cast("int") for n in COLUMN_NAMES])
    doubtful = F.col(f"t.{CORRUPT}").isNotNull() | (colons != fields)
    keyed = parsed.withColumn("_doubtful", F.coalesce(doubtful, F.lit(True))).withColumn(
        "_keys", F.when(F.col("_doubtful"), F.json_object_keys("line"))
    )
    # Only re-read the fields as text for records that failed typed parsing (rare, so cheap).
    # Aliased once, so the optimiser references it instead of copying the parse into every rule.
    with_text = keyed.withColumn(
        "_text",
        F.when(F.col(f"t.{CORRUPT}").isNotNull() & F.col("_keys").isNotNull(), F.from_json("line", as_text)),
    )
    # Both lists below are built only for the few lines that need them: evaluated on every line,
    # the field-by-field comparison and the set difference cost more than the parse itself.
    staged = with_text.selectExpr(
        "*", f"CASE WHEN _text IS NOT NULL THEN {_wrong_type_sql()} END AS _wrong"
    )
    return staged.select(
        *[F.col(f"t.{n}").alias(n) for n in COLUMN_NAMES],
        F.col("_path").alias("_source_file"),
        (F.col("pos") + 1).cast("long").alias("_source_line"),
        F.col("line").alias("raw"),
        F.when(
            F.col("t").isNull() | (F.col("_doubtful") & F.col("_keys").isNull())
            # from_json reads the line's first object and ignores what follows it (a second object, text).
            | ~F.expr(_ONE_VALUE_SQL),
            F.lit("malformed JSON: the line is not one complete JSON object"),
        ).alias("_malformed"),
        F.coalesce(F.col("_wrong.message"), F.array().cast("array<string>")).alias("_type_errors"),
        F.coalesce(F.col("_wrong.field"), F.array().cast("array<string>")).alias("_wrong_type_fields"),
        F.expr(f"CASE WHEN _keys IS NULL THEN array() "
               f"ELSE array_except(_keys, array({', '.join(map(sql_str, COLUMN_NAMES))})) END")
        .alias("_unknown_fields"),
    )


def record_keys(spark: SparkSession, files: Sequence[LandingFile],
                read_logs: Callable[[Sequence[str]], DataFrame] | None = None) -> DataFrame:
    """(run_id, event_id) of every record of `files`, read as cheaply as the format allows.

    For every record that validation keeps, the key is the one the full read gives it (Parquet: the
    same reader, pruned to two columns; JSON Lines: the same two fields, parsed alone, with a
    leading byte-order mark dropped as the full read does). Other records may get any key or none:
    the keys only decide which records the exact duplicate check has to look at.
    """
    frames = []
    jsonl = [f.path for f in files if f.kind == "jsonl"]
    if jsonl:
        line = F.col("value")
        line = F.when(F.startswith(line, F.lit("\ufeff")), F.expr("substring(value, 2)")).otherwise(line)
        key = F.from_json(line, "run_id string, event_id bigint")
        frames.append(spark.read.option("lineSep", "\n").text([spark_path(p) for p in jsonl])
                      .select(key.alias("k")).select("k.*"))
    parquet, _ = read_parquet(spark, [f for f in files if f.kind == "parquet"])
    frames.append(parquet.select("run_id", "event_id"))
    logs = [f.path for f in files if f.kind == BROKER_LOG]
    if logs and read_logs is not None:
        frames.append(read_logs(logs).select("run_id", "event_id"))
    return reduce(DataFrame.unionByName, frames)


@cache
def _wrong_type_sql() -> str:
    """SQL for the fields whose text parsed but whose typed value did not: (field, message) pairs."""
    cases = []
    for n in COLUMN_NAMES:
        # The value as written (quotes kept, so "12" reads as a string, not a number).
        pattern = '"' + n + r'"\s*:\s*("(?:[^"\\]|\\.)*"|\[[^\]]*\]|\{[^}]*\}|[^,}\s]+)'
        written = f"substring(regexp_extract(line, {sql_str(pattern)}, 1), 1, 80)"
        message = f"concat({sql_str(f'field {n!r} expected {_TYPE_NAMES[n]}, got ')}, {written})"
        cases.append(
            f"CASE WHEN _text.`{n}` IS NOT NULL AND t.`{n}` IS NULL "
            f"THEN named_struct('field', {sql_str(n)}, 'message', {message}) END"
        )
    return f"filter(array({', '.join(cases)}), x -> x IS NOT NULL)"


def _path_of(uri_col: str) -> Column:
    """A local path from Spark's `file:` URI (percent-decoding like java.net.URI does).

    Evaluated per record for Parquet, so it avoids the costly steps where they change nothing: the
    decoder only rewrites '%' escapes, and the `file:` prefix is cut without a regex.
    """
    # url_decode is form decoding: it also reads '+' as a space, which a URI path does not (a '+' in a
    # folder name is itself), so a '+' is escaped before decoding.
    decoded = (f"CASE WHEN contains({uri_col}, '%') OR contains({uri_col}, '+') "
               f"THEN url_decode(replace({uri_col}, '+', '%2B')) ELSE {uri_col} END")
    return F.expr(f"CASE WHEN startswith({decoded}, 'file://') THEN substr({decoded}, 8) "
                  f"WHEN startswith({decoded}, 'file:') THEN substr({decoded}, 6) ELSE {decoded} END")


def read_parquet(spark: SparkSession, files: Sequence[LandingFile],
                 broken: Mapping[str, str] | None = None) -> tuple[DataFrame, list[tuple[str, str]]]:
    """Parquet files as candidate records, plus (file, reason) for files that cannot be read at all.

    Files are grouped by their own schema (read from the footers on the driver: metadata only) and
    each group is read with that schema, so a file with a missing, extra or differently typed
    column yields per-record reasons instead of failing the job. `broken` (path -> reason, from
    `unreadable_data`) names files whose footer reads but whose data does not: they are not read.
    """
    groups: dict[tuple[tuple[str, str], ...], tuple[pa.Schema, list[str]]] = {}
    unreadable: list[tuple[str, str]] = []
    for f in files:
        if broken and f.path in broken:
            unreadable.append((f.path, broken[f.path]))
            continue
        try:
            schema = pq.read_schema(f.path)
        except Exception as e:  # any unreadable footer is the file's fault, not the job's
            unreadable.append((f.path, f"unreadable Parquet file: {type(e).__name__}: {e}"))
            continue
        sig = tuple((fld.name, str(fld.type)) for fld in schema)
        groups.setdefault(sig, (schema, []))[1].append(f.path)
    frames = []
    for schema, paths in groups.values():
        try:
            file_schema = to_spark_schema(schema)
        except UnsupportedArrowTypeError as e:
            unreadable.extend((p, f"Parquet file has a column type replog cannot read: {e}") for p in paths)
            continue
        frames.append(_parquet_group(spark, file_schema, paths))
    if not frames:
        return _empty(spark), unreadable
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out, unreadable


def unreadable_data(files: Sequence[LandingFile]) -> dict[str, str]:
    """path -> reason for the Parquet `files` whose data pyarrow cannot read to the end (a corrupt page behind
    an intact footer), and the compressed log files that do not inflate to their end, each streamed on the
    driver (bounded memory). Costly, so the ingest runs it only after Spark failed to read a file
    (`failed_read_file`)."""
    found: dict[str, str] = {}
    for f in files:
        try:
            if f.kind == "parquet":
                for _ in pq.ParquetFile(f.path).iter_batches(batch_size=65_536):
                    pass
            elif is_compressed_log(f):
                with inflated(f.path) as z:
                    while z.read(1 << 20):
                        pass
        except Exception as e:  # whatever the reader raised is the file's fault
            found[f.path] = f"{unreadable_what(f)}: {type(e).__name__}: {str(e).strip()[:300]}"
    return found


def inflated(path: str) -> BinaryIO:
    """A stream of the decompressed bytes of the compressed log file `path`."""
    suffix = compression_suffix(path)
    if suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]  # reads concatenated members, as Hadoop does
    if suffix == ".bz2":
        return bz2.open(path, "rb")  # type: ignore[return-value]  # and concatenated streams (pbzip2's output)
    return pa.CompressedInputStream(pa.OSFile(path), "zstd")  # type: ignore[return-value]


def is_compressed_log(f: LandingFile) -> bool:
    """Whether `f` is a Kafka log file compressed by gzip, bzip2 or zstd."""
    return f.kind == BROKER_LOG and compression_suffix(f.path) is not None


def unreadable_what(f: LandingFile) -> str:
    """The start of the reason a file Spark could not read to its end is quarantined with."""
    if is_compressed_log(f):
        return f"unreadable {COMPRESSED_LOG_SUFFIXES[compression_suffix(f.path) or '']} data"
    return "unreadable Parquet data"


_FAILED_READ = re.compile(r"\[FAILED_READ_FILE[.A-Z_]*\] Encountered error while reading file (\S+?)\.?\s+SQLSTATE")


def failed_read_file(error: BaseException) -> tuple[str, str] | None:
    """(local path, what went wrong) of the file a Spark job failed to read (its FAILED_READ_FILE error), else
    None."""
    text = str(error)
    m = _FAILED_READ.search(text)
    if m is None:
        return None
    uri = urlparse(m.group(1))
    path = unquote(uri.path) if uri.scheme in ("file", "") else m.group(1)
    causes = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("Caused by:")]
    detail = causes[0].removeprefix("Caused by:").strip() if causes else "FAILED_READ_FILE"
    return path, detail[:300]


def _parquet_group(spark: SparkSession, file_schema: T.StructType, paths: list[str]) -> DataFrame:
    df = spark.read.schema(file_schema).parquet(*[spark_path(p) for p in paths])
    present = {f.name: f.dataType for f in file_schema.fields}
    cols, wrong, messages = [], [], []
    for target in EVENT_SPARK_SCHEMA.fields:
        n = target.name
        if n not in present:
            cols.append(F.lit(None).cast(target.dataType).alias(n))
        elif present[n] == target.dataType:
            cols.append(F.col(n))
        else:
            casted = F.col(n).try_cast(target.dataType)
            bad = F.col(n).isNotNull() & casted.isNull()
            cols.append(casted.alias(n))
            wrong.append(F.when(bad, F.lit(n)))
            messages.append(
                F.when(bad, F.concat(F.lit(f"field '{n}' expected {_TYPE_NAMES[n]}, got "),
                                     F.substring(F.col(n).cast("string"), 1, 80)))
            )
    extra = [n for n in present if n not in COLUMN_NAMES]
    raw = F.to_json(F.struct(*[F.col(n) for n in present]))
    return df.select(
        *cols,
        _path_of("_metadata.file_path").alias("_source_file"),
        (F.col("_metadata.row_index") + 1).cast("long").alias("_source_line"),
        raw.alias("raw"),
        F.lit(None).cast("string").alias("_malformed"),
        F.filter(F.array(*messages), lambda x: x.isNotNull()).alias("_type_errors") if messages
        else F.array().cast("array<string>").alias("_type_errors"),
        F.filter(F.array(*wrong), lambda x: x.isNotNull()).alias("_wrong_type_fields") if wrong
        else F.array().cast("array<string>").alias("_wrong_type_fields"),
        F.array(*[F.lit(n) for n in extra]).cast("array<string>").alias("_unknown_fields"),
    )


def unreadable_files(spark: SparkSession, problems: Sequence[tuple[str, str]]) -> DataFrame:
    """One candidate record per file that could not be read, carrying the reason as malformed."""
    rows = [(path, reason) for path, reason in problems]
    small = spark.createDataFrame(rows, "_source_file string, _malformed string")
    return small.select(
        *[F.lit(None).cast(f.dataType).alias(f.name) for f in EVENT_SPARK_SCHEMA.fields],
        "_source_file",
        F.lit(None).cast("long").alias("_source_line"),
        F.lit(None).cast("string").alias("raw"),
        "_malformed",
        F.array().cast("array<string>").alias("_type_errors"),
        F.array().cast("array<string>").alias("_wrong_type_fields"),
        F.array().cast("array<string>").alias("_unknown_fields"),
    )


def _empty(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], T.StructType([*EVENT_SPARK_SCHEMA.fields, *CANDIDATE_SCHEMA_EXTRA.fields]))


def candidate_type(name: str) -> T.DataType:
    """Spark type of an event column in the candidate records."""
    return to_spark_type(EVENT_SCHEMA.field(name).type)
