"""Kafka log files read on the driver, and which file of an earlier batch was rolled just before a file of this one.

A batch of rolled logs may begin where the one before ended, with a broker starting again after a crash: the
crashed process's last lines, which date the crash, are in the earlier batch's file (`jobs.crash_context`). The
driver reads such a file as a stream of lines, in bounded memory, decompressing it where its name says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from jobs.landing import compression_suffix, inflated, roll_order, rolled_log_of

_CHUNK = 1 << 20


def _open(path: str) -> BinaryIO:
    """The bytes of the log file `path`, decompressed where its name says it is compressed."""
    return inflated(path) if compression_suffix(path) else open(path, "rb")  # the caller closes it


def scan(path: str, line_bytes: int) -> Iterator[tuple[list[bytes], int]]:
    """The lines of the log file `path` (decompressed), a chunk's whole lines at a time, with the bytes read so far:
    split as Spark's line reader splits them (a final newline ends the last line and makes no empty one after it),
    each cut to its first `line_bytes` bytes, so that a line tens of megabytes long (a DEBUG request dump) costs no
    more memory than that."""
    with _open(path) as f:
        rest, read = b"", 0
        while data := f.read(_CHUNK):
            read += len(data)
            parts = (rest + data).split(b"\n")
            rest = parts.pop()[:line_bytes]
            yield [p[:line_bytes] for p in parts], read
        if rest:
            yield [rest], read


def text(line: bytes) -> str:
    """A line as Spark's text reader gives it (UTF-8, malformed bytes replaced), without its carriage return."""
    return line.decode("utf-8", errors="replace").removesuffix("\r")


def files_rolled_before(spark: SparkSession, paths: Sequence[str], earlier: Sequence[str],
                        landed: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(earlier file, new files) for each run of files of `paths` that follow one another in their log's roll order
    (`rolled_log_of`, `roll_order`), among all the `landed` files, right after one of `earlier` (read by an earlier
    batch): the file rolled just before the run, and the run in roll order. None where the file before a run was
    landed but not read (neither new nor earlier: it could not be read), nor where a file shares its place in the
    roll order with another (the same rolled file landed twice, before and after its compression). A file that never
    landed, or left the landing folder, is not known: the file before it stands in. Computed by Spark over the names
    of the files in the new files' folders (a log's files share one), one row per file."""
    if not paths or not earlier:
        return []
    folders = {os.path.dirname(p) for p in paths}
    new, done = set(paths), set(earlier)
    rows = [(p, "new" if p in new else "earlier" if p in done else "other")
            for p in sorted(new | {p for p in (*earlier, *landed) if os.path.dirname(p) in folders})]
    names = spark.createDataFrame(rows, "path string, status string")
    files = names.select(rolled_log_of("path").alias("log"), roll_order("path").alias("roll"), "path", "status")
    files = files.withColumn("twin", F.count(F.lit(1)).over(Window.partitionBy("log", "roll")) > 1)
    in_order = Window.partitionBy("log").orderBy("roll", "path")
    # The file before each new file's run: the last before it that is not new (or is a twin, which cuts the run).
    before = F.last(F.when((F.col("status") != "new") | F.col("twin"), F.struct("path", "status", "twin")),
                    ignorenulls=True).over(
        in_order.rowsBetween(Window.unboundedPreceding, -1))
    runs = (files.select("path", "status", "twin", before.alias("before"), F.row_number().over(in_order).alias("n"))
            .where((F.col("status") == "new") & (F.col("before.status") == "earlier") & ~F.col("twin")
                   & ~F.col("before.twin"))
            .select(F.col("before.path").alias("before"), "path", "n"))
    # At most one row per new file: bounded by the number of files, like the landing listing itself.
    found: dict[str, list[tuple[int, str]]] = {}
    for r in runs.collect():
        found.setdefault(r.before, []).append((r.n, r.path))
    return sorted((b, [p for _, p in sorted(run)]) for b, run in found.items())
