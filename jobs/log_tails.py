"""The ends of Kafka log files read on the driver: a file's first lines and its last ones, and which file of an
earlier batch was rolled just before a log's first file of this one.

A batch of rolled logs may begin where the one before ended, with a broker starting again after a crash: the
crashed process's last lines, which date the crash, are in the earlier batch's file (`jobs.broker_logs`). Reading
that whole file again would double every later batch's read for a rare case, so only its last lines are read, and
only where this batch's first file of the log tells of a crash. Both reads are bounded: a plain file is read from
its end, a compressed one is streamed through keeping only its last lines.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import BinaryIO

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from jobs.landing import compression_suffix, inflated, roll_order, rolled_log_of

_BLOCK = 1 << 16


def _open(path: str) -> BinaryIO:
    """The bytes of the log file `path`, decompressed where its name says it is compressed."""
    return inflated(path) if compression_suffix(path) else open(path, "rb")  # the caller closes it


def _text(line: bytes) -> str:
    """A line as Spark's text reader gives it (UTF-8, malformed bytes replaced), without a carriage return."""
    return line.decode("utf-8", errors="replace").removesuffix("\r")


def head_lines(path: str, max_bytes: int) -> list[str]:
    """The whole lines within the first `max_bytes` bytes of the log file `path` (decompressed)."""
    with _open(path) as f:
        data = f.read(max_bytes)
    lines = data.split(b"\n")
    # The last piece is cut where the read stopped, or is what follows the file's last newline.
    if len(data) == max_bytes or lines[-1] == b"":
        lines.pop()
    return [_text(x) for x in lines]


def tail_lines(path: str, count: int) -> list[str]:
    """The last `count` lines of the log file `path` (decompressed), as Spark's line reader splits them: a final
    newline ends the last line, and makes no empty line after it."""
    if count <= 0:
        return []
    with _open(path) as f:
        if compression_suffix(path):
            kept: deque[bytes] = deque(maxlen=count)
            rest = b""
            while chunk := f.read(1 << 20):
                parts = (rest + chunk).split(b"\n")
                rest = parts.pop()
                kept.extend(parts)
            if rest:
                kept.append(rest)
            return [_text(x) for x in kept]
        end = f.seek(0, 2)
        start, data, step = end, b"", _BLOCK
        # Back from the end, twice as far each time, until the read holds `count` whole lines (one more newline
        # than that, or a trailing one) or the file's start.
        while start > 0 and data.count(b"\n") <= count:
            start, step = max(0, start - step), step * 2
            f.seek(start)
            data = f.read(end - start)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if start > 0:
        lines = lines[1:]  # cut where the read began
    return [_text(x) for x in lines[-count:]]


def files_rolled_before(spark: SparkSession, paths: Sequence[str], earlier: Sequence[str]) -> list[tuple[str, str]]:
    """(earlier file, first file) for each log (`rolled_log_of`) of `paths` whose first file in roll order
    (`roll_order`) comes right after one of `earlier`: the file an earlier batch read that was rolled just before
    this batch's first of the log. Computed by Spark over the file names (one row per file, not per line), with the
    same roll order the lines are read in."""
    if not paths or not earlier:
        return []
    names = spark.createDataFrame([(p, True) for p in paths] + [(p, False) for p in earlier],
                                  "path string, new boolean")
    files = names.select(rolled_log_of("path").alias("log"), roll_order("path").alias("roll"), "path", "new")
    in_order = Window.partitionBy("log").orderBy("roll", "path")
    key = F.struct("roll", "path")
    first_new = F.min(F.when(F.col("new"), key)).over(Window.partitionBy("log"))
    before = F.lag(F.struct("path", "new")).over(in_order)
    pairs = (files.select("path", (key == first_new).alias("first"), before.alias("before"))
             .where(F.col("first") & ~F.col("before.new")).select("before.path", "path"))
    # One row per log of `paths`: bounded by the number of files, like the landing listing itself.
    return sorted((r[0], r[1]) for r in pairs.collect())
