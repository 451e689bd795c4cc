"""JSON Lines reading: the key list is read only for doubtful lines, and no unknown key slips by.

`jobs.landing.read_jsonl` parses each line once with the schema and lists a line's keys (a second
parse) only when the typed parse failed or the line has more ':' than parsed fields. These lines
probe that screen: unknown keys written every way JSON allows must still be reported.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.landing import discover, numbered_lines, read_jsonl
from tests.conftest import event, write_jsonl


def _unknown_by_line(spark: SparkSession, landing: Path, lines: list[str]) -> dict[int, list[str]]:
    write_jsonl(landing / "a.jsonl", lines)
    df = read_jsonl(spark, discover(landing))
    return {r["_source_line"]: sorted(r["_unknown_fields"]) for r in df.collect()}


def test_unknown_keys_are_found_however_they_are_written(spark: SparkSession, landing: Path) -> None:
    """Spaces around ':', a null value, a nested value, a key after a value holding ':' all count."""
    good = json.dumps(event(1))
    lines = [
        good,
        good[:-1] + ', "extra" : 1}',
        good[:-1] + ', "extra":null}',
        good[:-1] + ', "nested": {"a": 1}}',
        json.dumps(event(5, topic="a:b:c")),
        json.dumps(event(6, topic="a:b"))[:-1] + ', "z":2}',
        json.dumps({**event(7), "topic": None}),
    ]
    found = _unknown_by_line(spark, landing, lines)
    assert found == {1: [], 2: ["extra"], 3: ["extra"], 4: ["nested"], 5: [], 6: ["z"], 7: []}


def test_a_good_line_is_not_malformed_and_a_broken_one_is(spark: SparkSession, landing: Path) -> None:
    """The malformed verdict does not depend on the key list being read."""
    good = json.dumps(event(1))
    write_jsonl(landing / "a.jsonl", [good, good[:-1], "[1, 2]", "{}"])
    df = read_jsonl(spark, discover(landing))
    got = {r["_source_line"]: r["_malformed"] is not None for r in df.collect()}
    assert got == {1: False, 2: True, 3: True, 4: False}


def test_line_numbers_survive_files_split_across_tasks(spark: SparkSession, tmp_path: Path) -> None:
    """With splits of ~1 kB, big files span many tasks (packed out of order); numbers stay exact."""
    files = []
    for k, n in ((0, 300), (1, 7), (2, 120)):
        p = tmp_path / f"f{k}.txt"
        body = "".join(("" if i % 13 == 5 else f"file {k} line {i} " + "x" * (i % 40)) + "\n" for i in range(n))
        p.write_text(body, encoding="utf-8")
        files.append(p)
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "1024")
    try:
        got = numbered_lines(spark, [str(p) for p in files]).collect()
        splits = spark.read.text([str(p) for p in files]).rdd.getNumPartitions()
    finally:
        spark.conf.set(key, before)
    assert splits > 10  # the files really were split
    expected = {
        (p.name, i, line) for p in files for i, line in enumerate(p.read_text(encoding="utf-8").split("\n")[:-1])
    }
    assert {(r["_uri"].rsplit("/", 1)[1], r["pos"], r["line"]) for r in got} == expected


def test_the_lines_before_a_marked_line_are_found_across_splits(spark: SparkSession, tmp_path: Path) -> None:
    """`mark` flags the `reach` lines before each marked line of its file (`_before_mark`), however many splits they
    span, and `tail` the file's last lines (`_in_tail`)."""
    files = []
    for k, n in ((0, 400), (1, 9)):
        p = tmp_path / f"g{k}.txt"
        p.write_text("".join(("MARK " if i % 97 == 3 else "") + f"file {k} line {i} " + "x" * (i % 40) + "\n"
                             for i in range(n)), encoding="utf-8")
        files.append(p)
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "1024")
    try:
        got = numbered_lines(spark, [str(p) for p in files], mark=F.col("line").startswith("MARK"), reach=90,
                             tail=5).collect()
        splits = spark.read.text(str(files[0])).rdd.getNumPartitions()
    finally:
        spark.conf.set(key, before)
    assert splits > 10  # 90 lines span several 1 kB splits
    expected = set()
    for p in files:
        lines = p.read_text(encoding="utf-8").split("\n")[:-1]
        marked = [i for i, line in enumerate(lines) if line.startswith("MARK")]
        expected |= {(p.name, i, any(i < m <= i + 90 for m in marked), i >= len(lines) - 5) for i in range(len(lines))}
    assert {(r["_uri"].rsplit("/", 1)[1], r["pos"], r["_before_mark"], r["_in_tail"]) for r in got} == expected
    # g0's marks at 3, 100, 197, 294 and 391, g1's at 3.
    assert sum(1 for r in got if r["_before_mark"]) == 3 + 4 * 90 + 3


def _cri(tag: str, text: str) -> str:
    return f"2024-05-14T10:00:00.000000001Z stdout {tag} {text}"


def test_log_lines_are_whole_again_across_splits(spark: SparkSession, tmp_path: Path) -> None:
    """With `log`, a line loses a trailing CR and a container runtime's prefix, and the P parts of a long line and the
    F line after them are one line at the first part's number, whatever splits they span; `_last_pos` is the number
    of its last part. A file ending in parts keeps them as one line; lines without the runtime's prefix are read as
    they are."""
    pod = tmp_path / "0.log"
    lines = [_cri("F", "first"), _cri("P", "a" * 700), _cri("P", "b" * 700), _cri("F", "c" * 10),
             _cri("F", "after"), _cri("P", "d" * 5), _cri("F", "e" * 5), "plain P line", _cri("P", "f" * 600),
             _cri("P", "g")]
    pod.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    plain = tmp_path / "server.log"
    plain.write_bytes(b"one\r\n[2024-05-14 10:00:00,000] INFO stdout P two (k)\nthree\n")
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "512")
    try:
        got = numbered_lines(spark, [str(pod), str(plain)], tail=2, log=True).collect()
        splits = spark.read.text(str(pod)).rdd.getNumPartitions()
    finally:
        spark.conf.set(key, before)
    assert splits >= 4  # the long line's parts are in different splits
    expected = {
        ("0.log", 0, 0, "first", False),
        ("0.log", 1, 3, "a" * 700 + "b" * 700 + "c" * 10, False),
        ("0.log", 4, 4, "after", False),
        ("0.log", 5, 6, "d" * 5 + "e" * 5, False),
        ("0.log", 7, 7, "plain P line", False),
        # The file's last two lines are parts of one line whose rest was never written.
        ("0.log", 8, 9, "f" * 600 + "g", True),
        ("server.log", 0, 0, "one", False),
        # Not the runtime's prefix, whatever the line says.
        ("server.log", 1, 1, "[2024-05-14 10:00:00,000] INFO stdout P two (k)", True),
        ("server.log", 2, 2, "three", True),
    }
    assert {(r["_uri"].rsplit("/", 1)[1], r["pos"], r["_last_pos"], r["line"], r["_in_tail"]) for r in got} == expected
