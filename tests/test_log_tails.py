"""The ends of log files read on the driver (`jobs.log_tails`): what Spark's line reader would give for the same
lines, from a plain file's end or a compressed file streamed through; and the file of an earlier batch rolled just
before a log's first new one."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.log_tails import files_rolled_before, head_lines, tail_lines


def _lines(n: int) -> list[str]:
    """`n` lines of uneven length, a few blank, so that reads from the end cross many blocks mid-line."""
    return ["" if i % 97 == 0 else f"[2024-05-14 12:00:00,{i % 1000:03d}] INFO line {i} " + "x" * (i * 37 % 300)
            for i in range(n)]


@pytest.mark.parametrize("ending", ["\n", "", "\r\n"])
def test_the_last_lines_of_a_plain_file_are_its_last_lines(tmp_path: Path, ending: str) -> None:
    """Read back from the end: the last `count` lines, whatever the blocks cut; a final newline makes no empty line,
    and a carriage return is not part of a line."""
    lines = _lines(5000)
    path = tmp_path / "server.log"
    path.write_bytes((ending or "\n").join(lines).encode() + ending.encode())
    for count in (1, 7, 4096, 5000, 9000):
        assert tail_lines(str(path), count) == lines[-count:]
    assert tail_lines(str(path), 0) == []


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress])
def test_the_last_lines_of_a_compressed_file_are_its_last_lines(tmp_path: Path, compress) -> None:  # type: ignore[no-untyped-def]
    lines = _lines(3000)
    suffix = ".gz" if compress is gzip.compress else ".bz2"
    path = tmp_path / f"server.log.2024-05-14-12{suffix}"
    path.write_bytes(compress("\n".join(lines).encode() + b"\n"))
    assert tail_lines(str(path), 4096) == lines
    assert tail_lines(str(path), 10) == lines[-10:]
    assert head_lines(str(path), 1 << 20) == lines


def test_the_first_lines_stop_at_the_last_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"first\nsecond\nthird line\n")
    assert head_lines(str(path), 15) == ["first", "second"]
    assert head_lines(str(path), 1 << 20) == ["first", "second", "third line"]
    assert head_lines(str(path), 13) == ["first", "second"]


def test_the_file_rolled_just_before_a_logs_first_new_one(spark: SparkSession) -> None:
    """Per log, the earlier batch's file right before this batch's first in roll order: not an older one, not one
    of another log, none where this batch's first file is the log's first or the file before it is new too."""
    new = ["/l/b1/server.log", "/l/b2/server.log.2024-05-14-13", "/l/b2/server.log", "/l/b3/server.log",
           "/l/b4/server.log.2", "/l/b4/server.log.1", "/l/b5/server.log"]
    earlier = ["/l/b1/server.log.2024-05-14-11", "/l/b1/server.log.2024-05-14-12.gz", "/l/b2/server.log.2024-05-14-12",
               "/l/b2/state-change.log.2024-05-14-12", "/l/b4/server.log.3", "/l/b4/server.log.10",
               "/l/b5/server.log.2024-05-14-12", "/l/b5/server.log.2024-05-14-14", "/l/b6/server.log.2024-05-14-12"]
    assert files_rolled_before(spark, new, earlier) == [
        ("/l/b1/server.log.2024-05-14-12.gz", "/l/b1/server.log"),
        ("/l/b2/server.log.2024-05-14-12", "/l/b2/server.log.2024-05-14-13"),
        ("/l/b4/server.log.3", "/l/b4/server.log.2"),
        ("/l/b5/server.log.2024-05-14-14", "/l/b5/server.log"),
    ]
    assert files_rolled_before(spark, new, []) == []
