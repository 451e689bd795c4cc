"""Log files read on the driver (`jobs.log_tails`): the lines Spark's line reader would give, from a plain or a
compressed file; and the file of an earlier batch rolled just before each new one."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.log_tails import files_rolled_before, scan, text

_POD = "/l/kafka_kafka-0_0b5a3d0e-1c2f-4a5b-9c8d-7e6f5a4b3c2d/kafka"


def _lines(n: int) -> list[str]:
    """`n` lines of uneven length, a few blank, so that chunks end mid-line."""
    return ["" if i % 97 == 0 else f"[2024-05-14 12:00:00,{i % 1000:03d}] INFO line {i} " + "x" * (i * 37 % 3000)
            for i in range(n)]


def _read(path: Path, line_bytes: int = 1 << 20) -> list[str]:
    return [text(line) for lines, _ in scan(str(path), line_bytes) for line in lines]


@pytest.mark.parametrize("ending", ["\n", "", "\r\n"])
def test_a_files_lines_are_split_as_sparks_reader_splits_them(tmp_path: Path, ending: str) -> None:
    """A final newline ends the last line and makes no empty one; a carriage return is not part of a line; blank
    lines stay; an empty file has no line."""
    lines = _lines(2000)
    path = tmp_path / "server.log"
    path.write_bytes((ending or "\n").join(lines).encode() + ending.encode())
    assert _read(path) == lines
    (tmp_path / "empty.log").write_bytes(b"")
    assert _read(tmp_path / "empty.log") == []
    (tmp_path / "blank.log").write_bytes(b"\n\n")
    assert _read(tmp_path / "blank.log") == ["", ""]


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress])
def test_a_compressed_files_lines_are_its_inflated_lines(tmp_path: Path, compress) -> None:  # type: ignore[no-untyped-def]
    lines = _lines(1500)
    path = tmp_path / f"server.log.2024-05-14-12{'.gz' if compress is gzip.compress else '.bz2'}"
    path.write_bytes(compress("\n".join(lines).encode() + b"\n"))
    assert _read(path) == lines


def test_a_long_line_keeps_only_its_start(tmp_path: Path) -> None:
    """A line longer than a chunk, cut to its first bytes; the lines around it whole."""
    long = "[2024-05-14 12:00:00,000] DEBUG " + "t-0, " * 500_000
    path = tmp_path / "server.log"
    path.write_text(f"first\n{long}\nlast\n")
    assert _read(path, 4096) == ["first", long[:4096], "last"]


def test_the_bytes_read_are_counted_before_the_lines_are_cut(tmp_path: Path) -> None:
    path = tmp_path / "server.log.gz"
    data = b"x" * 3_000_000 + b"\nlast\n"
    path.write_bytes(gzip.compress(data))
    assert [n for _, n in scan(str(path), 10)][-1] == len(data)


def test_the_file_rolled_just_before_each_run_of_new_ones(spark: SparkSession) -> None:
    """Per run of new files, the file before it in its log's roll order among all landed files, where an earlier
    batch read it: not an older one, not another log's; none where the file before is broken or not landed, nor
    where the same rolled file landed twice (compressed after its first landing)."""
    new = ["/l/b1/server.log", "/l/b2/server.log.2024-05-14-13", "/l/b2/server.log", "/l/b3/server.log",
           "/l/b4/server.log.2", "/l/b4/server.log.1", "/l/b5/server.log", "/l/b6/server.log.2024-05-14-11",
           "/l/b6/server.log.2024-05-14-13", "/l/b7/server.log-20240514.gz", "/l/b7/server.log",
           f"{_POD}/1.log", f"{_POD}/2.log.20240514-130000.gz", f"{_POD}/2.log"]
    earlier = ["/l/b1/server.log.2024-05-14-11", "/l/b1/server.log.2024-05-14-12.gz", "/l/b2/server.log.2024-05-14-12",
               "/l/b2/state-change.log.2024-05-14-12", "/l/b4/server.log.3", "/l/b4/server.log.10",
               "/l/b5/server.log.2024-05-14-12", "/l/b6/server.log.2024-05-14-12", "/l/b7/server.log-20240514",
               "/l/b8/server.log.2024-05-14-12", "/l/b9/server.log.2024-05-14-11", f"{_POD}/0.log"]
    # b5's hour 14 is landed but was not read (broken, or not ingested yet); b9's hour 12 is not among the new.
    landed = [*new, *earlier, "/l/b5/server.log.2024-05-14-14", "/l/b9/server.log.2024-05-14-12.gz"]
    assert files_rolled_before(spark, new, earlier, landed) == [
        ("/l/b1/server.log.2024-05-14-12.gz", ["/l/b1/server.log"]),
        ("/l/b2/server.log.2024-05-14-12", ["/l/b2/server.log.2024-05-14-13", "/l/b2/server.log"]),
        ("/l/b4/server.log.3", ["/l/b4/server.log.2", "/l/b4/server.log.1"]),
        # An older file landed late does not hide the one read before from its successor.
        ("/l/b6/server.log.2024-05-14-12", ["/l/b6/server.log.2024-05-14-13"]),
        # A Kubernetes container's restarts, each in a file of its own.
        (f"{_POD}/0.log", [f"{_POD}/1.log", f"{_POD}/2.log.20240514-130000.gz", f"{_POD}/2.log"]),
    ]
    assert files_rolled_before(spark, new, [], landed) == []
