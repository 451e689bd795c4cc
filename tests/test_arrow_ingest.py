"""The ingest's whole-file path (`jobs.arrow_ingest`) gives exactly what the Spark path gives.

For any landing folder, `run_ingest(..., whole_files=True)` must commit the same bronze table, the
same quarantine table and the same counts as `whole_files=False` (Spark's per-record path, the
reference). Each comparison ingests one landing folder into two fresh lakes, one per mode
(`both`), and compares everything (`assert_same`); `result.whole_files` says the whole-file path
was really taken. `rewrite_file` and `segments_repeat` are also tested directly.
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import jobs.arrow_ingest as arrow_ingest
from jobs.arrow_ingest import RunSegment, partition_folder, rewrite_file, segments_repeat
from jobs.ingest import IngestResult, run_ingest
from jobs.lake import EmbeddedLake
from replication_core.sim.cli import load_scenario, simulate
from schemas.events import BRONZE_EVENTS_SCHEMA, EVENT_SCHEMA
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE
from tests.conftest import DROP, event

SCENARIOS = Path(__file__).resolve().parent.parent / "conf" / "scenarios"
NULLABLE = pa.schema([f.with_nullable(True) for f in EVENT_SCHEMA])
BRONZE_ORDER = ("run_id", "event_id", "_source_file", "_source_line")
QUARANTINE_ORDER = ("_source_file", "_source_line", "reason_code", "reason")


# --- helpers -------------------------------------------------------------------------------------


def _quiet(_message: str) -> None:
    pass


def ingest(spark: SparkSession, lake: EmbeddedLake, landing: Path, whole: bool,
           log: Callable[[str], None] = _quiet) -> IngestResult:
    """One ingest of `landing` in one mode."""
    return run_ingest(spark, lake, str(landing), log=log, whole_files=whole)


def both(spark: SparkSession, tmp_path: Path, landing: Path) -> tuple[IngestResult, IngestResult, EmbeddedLake,
                                                                       EmbeddedLake]:
    """Ingest `landing` into two fresh lakes: (result_whole, result_spark, lake_whole, lake_spark)."""
    tag = uuid.uuid4().hex[:8]
    lake_whole = EmbeddedLake(spark, str(tmp_path / f"lake-whole-{tag}"))
    lake_spark = EmbeddedLake(spark, str(tmp_path / f"lake-spark-{tag}"))
    result_whole = ingest(spark, lake_whole, landing, whole=True)
    result_spark = ingest(spark, lake_spark, landing, whole=False)
    return result_whole, result_spark, lake_whole, lake_spark


def bronze(lake: EmbeddedLake) -> DataFrame:
    """Bronze in a fixed order; the `config` map as JSON (keeps key order, which must match too)."""
    return lake.read(BRONZE_EVENTS).withColumn("config", F.to_json("config")).orderBy(*BRONZE_ORDER)


def quarantine(lake: EmbeddedLake) -> DataFrame:
    """The quarantine table in a fixed order."""
    return lake.read(BRONZE_QUARANTINE).orderBy(*QUARANTINE_ORDER)


def counts(r: IngestResult) -> dict[str, Any]:
    """What must agree between the modes (`_ingest_batch` is derived from the file set: the same too)."""
    return {"read": r.read, "kept": r.kept, "quarantined": r.quarantined, "duplicates": r.duplicates,
            "by_reason": r.by_reason, "batch_id": r.batch_id, "files_seen": r.files_seen,
            "files_ingested": r.files_ingested}


def assert_same(result_whole: IngestResult, result_spark: IngestResult, lake_whole: EmbeddedLake,
                lake_spark: EmbeddedLake) -> None:
    """Bronze equal, quarantine equal, counts equal, and both runs reconcile."""
    assert result_whole.reconciles, result_whole.summary()
    assert result_spark.reconciles, result_spark.summary()
    assert counts(result_whole) == counts(result_spark)
    assert_df_equality(bronze(lake_whole), bronze(lake_spark), ignore_nullable=True, allow_nan_equality=True)
    assert_df_equality(quarantine(lake_whole), quarantine(lake_spark), ignore_nullable=True)


def write_parquet(path: Path, events: list[dict[str, Any]], schema: pa.Schema = NULLABLE) -> Path:
    """`events` as one Parquet file of `schema` (fields the event lacks are null)."""
    pq.write_table(pa.Table.from_pylist([{n: e.get(n) for n in schema.names} for e in events], schema=schema), path)
    return path


def broker_config(event_id: int, run_id: str, config: Any) -> dict[str, Any]:
    """A valid broker_config event (not partition-scoped) carrying `config` as given."""
    return event(event_id, run_id=run_id, event_type="broker_config", topic=DROP, partition=DROP,
                 leader_epoch=DROP, role=DROP, old_hw=DROP, hw=DROP, config=config)


TIMINGS = ("read_s", "screen_s", "write_s")


def facts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rewrite_file`'s outcome rows without the task's timings and file names."""
    return [{k: v for k, v in r.items() if k not in (*TIMINGS, "files")} for r in rows]


def files_under(folder: Path) -> list[Path]:
    """Every file below `folder`, sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file())


# --- 1. simulated events -------------------------------------------------------------------------


def test_simulated_events_in_both_formats_are_taken_whole_and_give_the_same_tables(spark, tmp_path) -> None:
    """Simulated runs as Parquet and as JSON Lines (config maps, lists, structs): all taken whole, same tables."""
    landing = tmp_path / "landing"
    for fmt, seed in (("parquet", 13), ("jsonl", 14)):  # other seeds, other run_ids: no duplicates across formats
        for name, duration in (("unclean-election", 20_000), ("kip-101-divergence", None)):
            scenario = load_scenario(SCENARIOS / f"{name}.yaml").with_overrides(seed=seed, duration_ms=duration,
                                                                                 fmt=fmt)
            scenario = dataclasses.replace(scenario, writer=dataclasses.replace(scenario.writer,
                                                                                max_events_per_file=500))
            simulate(scenario, landing / fmt / name)
    n_files = len([p for p in files_under(landing) if p.suffix in (".parquet", ".jsonl")])
    assert n_files >= 8
    rw, rs, lw, ls = both(spark, tmp_path, landing)
    assert (rw.whole_files, rs.whole_files) == (n_files, 0)
    assert rw.quarantined == 0 and rw.read > 3000
    assert_same(rw, rs, lw, ls)
    # Not vacuous: in each format the map, struct and list columns are filled in some records.
    filled = lw.read(BRONZE_EVENTS).groupBy(F.regexp_extract("_source_file", r"\.(\w+)$", 1).alias("fmt")).agg(
        *[F.count(c).alias(c) for c in ("config", "out_of_sync_replicas", "partitions", "isr")])
    got = {r["fmt"]: r.asDict() for r in filled.collect()}
    assert set(got) == {"parquet", "jsonl"}
    assert all(n > 0 for r in got.values() for n in r.values() if isinstance(n, int)), got


# --- 2, 3, 4 and 8: one landing of cases ------------------------------------------------------
# Every case is one file (or three, for the bad record) with run_ids of its own, so no key repeats across
# cases and each case's rows are told apart by `_source_file`. They share one ingest per mode: an ingest
# costs seconds, a case file almost nothing.


def _line(e: dict[str, Any]) -> str:
    return json.dumps(e)


def _good(run: str, n: int = 2) -> list[str]:
    return [_line(event(i, run_id=run)) for i in range(1, n + 1)]


def _text(lines: list[str], end: str = "\n") -> str:
    return "".join(line + end for line in lines)


def _quota(run: str, rate: str) -> str:
    line = _line(event(3, run_id=run, event_type="quota_throttle", role="leader", old_hw=DROP, hw=DROP, bytes=10,
                       follower_id=2, measured_rate=1.5, quota_bound=2.0))
    return line.replace('"measured_rate": 1.5', f'"measured_rate": {rate}')


# JSON Lines edge cases: name -> (file content, taken whole by the Arrow path?).
JSONL_CASES: dict[str, tuple[str | bytes, bool]] = {
    "bom": ("\ufeff" + _text(_good("bom", 3)), False),
    "crlf": (_text(_good("crlf", 3), "\r\n"), False),
    "blank-line-in-the-middle": (_text([*_good("blank", 2), "", _line(event(3, run_id="blank"))]), False),
    "trailing-blank-line": (_text(_good("trail", 3)) + "\n", False),
    "number-for-string": (_text([*_good("numstr"), _line(event(3, run_id="numstr", topic=5))]), False),
    "string-for-number": (_text([*_good("strnum"), _line(event(3, run_id="strnum", hw="4"))]), False),
    "unknown-top-level-field": (_text([*_good("unk"), _line(event(3, run_id="unk", surprise=1))]), False),
    "unknown-nested-field": (_text([*_good("unkn"), _line(event(
        3, run_id="unkn", event_type="isr_change", role=DROP, old_hw=DROP, hw=DROP, action="shrink",
        old_isr=[1, 2, 3], isr=[1, 2], isr_state="proposed", reason="lagging",
        out_of_sync_replicas=[{"replica_id": 3, "leo": 30, "last_caught_up_time_ms": 7, "extra": 1}]))]), False),
    "repeated-key": (_text([*_good("rep"), _line(event(3, run_id="rep"))[:-1] + ', "topic": "other"}']), False),
    "explicit-nulls": (_text([*_good("nulls"), _line(event(
        3, run_id="nulls", event_type="broker_lifecycle", action="start", topic=None, partition=None,
        leader_epoch=None, role=None, old_hw=None, hw=None))]), True),
    # Arrow reads a config that is null on every line of the file as a column of type null: all null maps.
    "explicit-null-config": (_text([*_good("nullcfg"), _line(event(3, run_id="nullcfg", config=None))]), True),
    "config-a-string": (_text([*_good("cfgstr"), _line(broker_config(3, "cfgstr", "a=1"))]), False),
    "config-unsorted-with-null-value": (_text([*_good("cfg"), _line(broker_config(
        3, "cfg", {"z.last": "1", "a.first": None, "m.middle": "x"}))]), True),
    "config-numeric-value": (_text([*_good("cfgnum"), _line(broker_config(3, "cfgnum", {"b": 1, "a": "2"}))]),
                             False),
    "two-objects-on-one-line": (_text([*_good("two"), _line(event(3, run_id="two")) + _line(event(4, run_id="two"))]),
                                False),
    "not-json": (_text([*_good("nj"), "this is not json"]), False),
    # Spark reads NaN / Infinity / -Infinity as numbers, Arrow reads NaN / Inf / -NaN: Spark reads them all.
    "finite-rate": (_text([*_good("nf0"), _quota("nf0", "1.5")]), True),
    "non-finite-nan": (_text([*_good("nf1"), _quota("nf1", "NaN")]), False),
    "non-finite-infinity": (_text([*_good("nf2"), _quota("nf2", "Infinity")]), False),
    "non-finite-minus-infinity": (_text([*_good("nf3"), _quota("nf3", "-Infinity")]), False),
    "non-finite-inf": (_text([*_good("nf4"), _quota("nf4", "Inf")]), False),
    "non-finite-minus-nan": (_text([*_good("nf5"), _quota("nf5", "-NaN")]), False),
    # Longer than Jackson reads (1000 characters): Spark quarantines the line, Arrow would read 0.1.
    "long-number": (_text([*_good("long"), _quota("long", "0.1" + "0" * 1100)]), False),
    "bracket-after-the-object": (_text([*_good("brk"), _line(event(3, run_id="brk")) + "]"]), False),
    "bracket-and-object-after-the-object": (
        _text([*_good("brk2"), _line(event(3, run_id="brk2")) + '] {"event_id": 99}']), False),
    "empty-run-id": (_text([*_good("erun"), _line(event(3, run_id=""))]), False),
    "text-after-the-object": (_text([*_good("after"), _line(event(3, run_id="after")) + " x"]), False),
    "empty-object-after-the-object": (_text([*_good("emptyafter"), _line(event(3, run_id="emptyafter")) + "{}"]),
                                      False),
    "no-trailing-newline": ("\n".join(_good("ntn", 3)), True),
    "carriage-return-inside-a-line": (_text([*_good("cr"), _line(event(3, run_id="cr")).replace(', "ts_ms"',
                                                                                           ',\r"ts_ms"')]), True),
    "invalid-utf-8": (_text([*_good("utf")]).encode() + _line(event(3, run_id="utf", topic="t")).encode().replace(
        b'"topic": "t"', b'"topic": "t\xff"') + b"\n", False),
    "config-key-twice": (_text([*_good("cfg2"), _line(broker_config(3, "cfg2", {"a": "1"}))[:-1]
                                + ', "config": {"b": "2"}}']), False),
    "int32-overflow": (_text([*_good("big"), _line(event(3, run_id="big", partition=2**31))]), False),
    "empty": ("", True),
    "good-1": (_text(_good("good-1", 5)), True),
    "good-2": (_text(_good("good-2", 5)), True),
}

ESCAPED_RUN = "run/a b%c=d"
OLDER_MINOR = pa.schema([f for f in NULLABLE if f.name not in ("adding_replicas", "removing_replicas")])
PARTITION_INT64 = NULLABLE.set(NULLABLE.get_field_index("partition"), pa.field("partition", pa.int64()))


def _bad_record_files(landing: Path) -> None:
    for i in range(3):
        events = [event(e, run_id="bad") for e in range(3 * i + 1, 3 * i + 4)]
        if i == 1:
            events[1] = event(5, run_id="bad", old_hw=-1)
        write_parquet(landing / f"bad-{i}.parquet", events)


# Parquet cases: file name -> taken whole by the Arrow path? (all written by `_write_parquet_cases`).
PARQUET_CASES: dict[str, bool] = {
    "bad-0.parquet": True, "bad-1.parquet": False, "bad-2.parquet": True,
    "older-minor.parquet": True, "partition-int64.parquet": False, "escaped-run.parquet": True,
}


def _write_parquet_cases(landing: Path) -> None:
    _bad_record_files(landing)
    write_parquet(landing / "older-minor.parquet", [event(i, run_id="old", schema_version="1.0", replicas=[1, 2],
                                                          isr=[1]) for i in (1, 2, 3)], OLDER_MINOR)
    write_parquet(landing / "partition-int64.parquet", [event(i, run_id="wide", partition=i) for i in (1, 2, 3)],
                  PARTITION_INT64)
    write_parquet(landing / "escaped-run.parquet", [event(1, run_id=ESCAPED_RUN), event(2, run_id=ESCAPED_RUN)])


TAKEN: dict[str, bool] = {**{f"{n}.jsonl": taken for n, (_t, taken) in JSONL_CASES.items()}, **PARQUET_CASES}


class Cases:
    """The case files ingested once in each mode, with both tables' rows of both lakes at hand."""

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.landing = root / "landing"
        self.landing.mkdir()
        for name, (text, _taken) in JSONL_CASES.items():
            (self.landing / f"{name}.jsonl").write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        _write_parquet_cases(self.landing)
        assert sorted(p.name for p in files_under(self.landing)) == sorted(TAKEN)
        self.result_whole, self.result_spark, self.lake_whole, self.lake_spark = both(spark, root, self.landing)
        self.rows = {
            (mode, table): frame.collect()
            for mode, lake in (("whole", self.lake_whole), ("spark", self.lake_spark))
            for table, frame in (("bronze", bronze(lake)), ("quarantine", quarantine(lake)))
        }

    def of(self, mode: str, table: str, name: str) -> list[Row]:
        """The rows `mode`'s lake holds in `table` from the landing file `name`."""
        path = str(self.landing / name)
        return [r for r in self.rows[(mode, table)] if r["_source_file"] == path]


@pytest.fixture(scope="module")
def cases(spark, tmp_path_factory) -> Cases:
    return Cases(spark, tmp_path_factory.mktemp("cases"))


def test_all_cases_together_give_the_same_tables_and_counts(cases: Cases) -> None:
    """The whole landing of cases: same bronze, quarantine and counts; exactly the plain files taken whole."""
    assert_same(cases.result_whole, cases.result_spark, cases.lake_whole, cases.lake_spark)
    assert (cases.result_whole.whole_files, cases.result_spark.whole_files) == (sum(TAKEN.values()), 0)


@pytest.mark.parametrize("name", list(TAKEN))
def test_a_case_file_gives_the_same_rows_and_is_taken_only_when_plain(cases: Cases, tmp_path, name: str) -> None:
    """One case file: its bronze and quarantine rows are the same in both modes; Arrow takes it or leaves it."""
    for table in ("bronze", "quarantine"):
        # By repr: a NaN rate is equal to itself there, and chispa's row comparison has no NaN option.
        assert [repr(r) for r in cases.of("whole", table, name)] == [repr(r) for r in cases.of("spark", table, name)]
    if name != "empty.jsonl":  # not vacuous: the file's records are somewhere
        assert cases.of("spark", "bronze", name) or cases.of("spark", "quarantine", name)
    kind = "jsonl" if name.endswith(".jsonl") else "parquet"
    out = rewrite_file(str(cases.landing / name), kind, 0, str(tmp_path / "out"), "b", 1000, "snappy")
    assert out[0]["kept"] is TAKEN[name], out


def test_a_parquet_file_with_one_bad_record_goes_to_spark_and_its_neighbours_are_taken_whole(cases: Cases) -> None:
    """Of three Parquet files of a run, the one with a negative offset goes to Spark, which quarantines that record."""
    assert [TAKEN[f"bad-{i}.parquet"] for i in range(3)] == [True, False, True]
    q = [(Path(r["_source_file"]).name, r["_source_line"], r["event_id"], r["reason_code"])
         for r in cases.rows[("whole", "quarantine")] if r["run_id"] == "bad"]
    assert q == [("bad-1.parquet", 2, 5, "invalid_value")]
    kept = [r["event_id"] for r in cases.rows[("whole", "bronze")] if r["run_id"] == "bad"]
    assert kept == [1, 2, 3, 4, 6, 7, 8, 9]


def test_an_older_minor_schema_is_taken_whole_and_a_column_of_another_type_is_not(cases: Cases) -> None:
    """A 1.0 file without adding/removing_replicas is plain (taken, nulls); `partition` as int64 goes to Spark."""
    assert (TAKEN["older-minor.parquet"], TAKEN["partition-int64.parquet"]) == (True, False)
    older = cases.of("whole", "bronze", "older-minor.parquet")
    assert [(r["event_id"], r["adding_replicas"], r["removing_replicas"], r["replicas"]) for r in older] == [
        (i, None, None, [1, 2]) for i in (1, 2, 3)]
    wider = cases.of("whole", "bronze", "partition-int64.parquet")
    assert [(r["event_id"], r["partition"]) for r in wider] == [(1, 1), (2, 2), (3, 3)]


def test_a_run_id_that_needs_escaping_in_a_folder_name_reads_back_exactly(cases: Cases) -> None:
    """A run_id with '/', ' ', '%' and '=' is taken whole into an escaped folder and reads back as written."""
    lake = cases.lake_whole
    assert TAKEN["escaped-run.parquet"]
    assert (Path(lake.path(BRONZE_EVENTS)) / partition_folder(ESCAPED_RUN)).is_dir()
    assert [r["run_id"] for r in cases.of("whole", "bronze", "escaped-run.parquet")] == [ESCAPED_RUN, ESCAPED_RUN]
    assert [r["run_id"] for r in lake.read(BRONZE_EVENTS, [{"run_id": ESCAPED_RUN}]).collect()] == [ESCAPED_RUN] * 2


@pytest.mark.parametrize("name", ["two-objects-on-one-line", "text-after-the-object", "empty-object-after-the-object",
                                  "bracket-after-the-object", "bracket-and-object-after-the-object"])
def test_a_line_with_more_than_one_object_is_quarantined_as_malformed(cases: Cases, name: str) -> None:
    """A line holding more than its one JSON object is a malformed record in quarantine, not its first object kept
    (from_json alone read the first object and dropped the rest without a trace)."""
    q = cases.of("spark", "quarantine", f"{name}.jsonl")
    assert [(r["_source_line"], r["reason_code"]) for r in q] == [(3, "malformed_json")]
    assert [r["_source_line"] for r in cases.of("spark", "bronze", f"{name}.jsonl")] == [1, 2]


# --- 5. duplicates -------------------------------------------------------------------------------


def test_overlapping_ids_and_ids_already_in_bronze_give_the_same_duplicates(spark, tmp_path) -> None:
    """Two files of one run with overlapping ids, then a new file whose ids are in bronze: same duplicates. Last,
    a file whose ids lie among bronze's but match none of them is no duplicate, and is written once."""
    landing = tmp_path / "landing"
    landing.mkdir()
    write_parquet(landing / "a.parquet", [event(i, run_id="dup") for i in range(1, 6)])
    write_parquet(landing / "odd.parquet", [event(i, run_id="gaps") for i in (1, 3, 5)])
    write_parquet(landing / "b.parquet", [event(i, run_id="dup") for i in range(4, 9)])
    said: list[str] = []
    lw = EmbeddedLake(spark, str(tmp_path / "lake-whole"))
    ls = EmbeddedLake(spark, str(tmp_path / "lake-spark"))
    rw, rs = ingest(spark, lw, landing, True, said.append), ingest(spark, ls, landing, False)
    assert any("writing again behind the exact duplicate check" in m for m in said)
    assert (rw.read, rw.kept, rw.duplicates, rw.whole_files) == (13, 11, 2, 0)
    assert_same(rw, rs, lw, ls)

    (landing / "later").mkdir()
    write_parquet(landing / "later" / "c.parquet", [event(i, run_id="dup") for i in range(7, 11)])
    rw, rs = ingest(spark, lw, landing, True), ingest(spark, ls, landing, False)
    assert (rw.files_ingested, rw.read, rw.kept, rw.duplicates, rw.whole_files) == (1, 4, 2, 2, 0)
    assert_same(rw, rs, lw, ls)

    (landing / "latest").mkdir()
    write_parquet(landing / "latest" / "even.parquet", [event(i, run_id="gaps") for i in (2, 4)])
    said.clear()
    rw, rs = ingest(spark, lw, landing, True, said.append), ingest(spark, ls, landing, False, said.append)
    assert not any("writing again" in m for m in said), said
    assert (rw.files_ingested, rw.read, rw.kept, rw.duplicates, rw.whole_files) == (1, 2, 2, 0, 1)
    assert_same(rw, rs, lw, ls)


# --- 6. rewrite_file -----------------------------------------------------------------------------


def test_rewrite_file_rolls_files_per_run_and_reports_each_runs_ids(tmp_path) -> None:
    """Two interleaved runs with max_rows=3: files of 3, 3, 1 and 3, 2 rows, with each run's id range."""
    landing = tmp_path / "landing"
    landing.mkdir()
    events = [event(i, run_id="run-a") for i in range(1, 8)]
    events[3:3] = [event(i, run_id="run-b") for i in range(10, 15)]
    path = write_parquet(landing / "two-runs.parquet", events)
    out = tmp_path / "out"
    rows = rewrite_file(str(path), "parquet", 4, str(out), "batch-x", 3, "snappy")
    assert all(rows[0][k] >= 0 for k in TIMINGS) and not any(k in rows[1] for k in TIMINGS)  # the file's, once
    assert facts(rows) == [
        {"path": str(path), "kept": True, "run_id": "run-a", "run_records": 7, "first_event_id": 1,
         "last_event_id": 7, "ascending": True},
        {"path": str(path), "kept": True, "run_id": "run-b", "run_records": 5, "first_event_id": 10,
         "last_event_id": 14, "ascending": True},
    ]
    written = {p.relative_to(out).as_posix(): pq.read_table(p) for p in files_under(out)}
    assert sorted(written) == sorted(f for r in rows for f in r["files"])  # each run reports its own files
    # Names: landing file index, the call's own token (a retried attempt writes other files), run, roll.
    token = {re.sub(r"^.*/part-00004-([0-9a-f]{8})-.*$", r"\1", n) for n in written}
    assert len(token) == 1
    tok = token.pop()
    assert {name.replace(f"-{tok}-", "-T-"): t.num_rows for name, t in written.items()} == {
        "run_id=run-a/part-00004-T-000-000.parquet": 3, "run_id=run-a/part-00004-T-000-001.parquet": 3,
        "run_id=run-a/part-00004-T-000-002.parquet": 1,
        "run_id=run-b/part-00004-T-001-000.parquet": 3, "run_id=run-b/part-00004-T-001-001.parquet": 2,
    }
    data_columns = [f.name for f in BRONZE_EVENTS_SCHEMA if f.name != "run_id"]
    assert all(t.column_names == data_columns for t in written.values())
    a = pa.concat_tables(t for n, t in sorted(written.items()) if n.startswith("run_id=run-a"))
    b = pa.concat_tables(t for n, t in sorted(written.items()) if n.startswith("run_id=run-b"))
    assert a.column("event_id").to_pylist() == list(range(1, 8))
    assert a.column("_source_line").to_pylist() == [1, 2, 3, 9, 10, 11, 12]
    assert b.column("_source_line").to_pylist() == [4, 5, 6, 7, 8]
    assert set(a.column("_source_file").to_pylist()) == {str(path)}
    assert set(a.column("_ingest_batch").to_pylist()) == {"batch-x"}


def test_rewrite_file_reports_ids_that_do_not_ascend(tmp_path) -> None:
    """Ids that go down, or repeat, within a run are reported as not ascending."""
    path = write_parquet(tmp_path / "down.parquet", [event(i, run_id="down") for i in (3, 2, 1)])
    rows = rewrite_file(str(path), "parquet", 0, str(tmp_path / "out1"), "b", 100, "snappy")
    assert [(r["first_event_id"], r["last_event_id"], r["ascending"]) for r in rows] == [(3, 1, False)]
    path = write_parquet(tmp_path / "repeat.parquet", [event(i, run_id="rep") for i in (1, 2, 2, 3)])
    rows = rewrite_file(str(path), "parquet", 0, str(tmp_path / "out2"), "b", 100, "snappy")
    assert [(r["first_event_id"], r["last_event_id"], r["ascending"]) for r in rows] == [(1, 3, False)]


def test_rewrite_file_across_batches_reports_a_step_down_between_batches(tmp_path, monkeypatch) -> None:
    """With two-record batches, a step down from one batch to the next is still not ascending."""
    monkeypatch.setattr(arrow_ingest, "READ_BATCH_ROWS", 2)
    path = write_parquet(tmp_path / "step.parquet", [event(i, run_id="s") for i in (1, 5, 4, 6)])
    rows = rewrite_file(str(path), "parquet", 0, str(tmp_path / "out"), "b", 100, "snappy")
    assert [(r["run_records"], r["first_event_id"], r["last_event_id"], r["ascending"]) for r in rows] == [
        (4, 1, 6, False)]


def test_rewrite_file_leaves_no_file_behind_for_a_file_left_to_spark(tmp_path, monkeypatch) -> None:
    """A bad record after batches already written, or a JSON Lines BOM, leaves no file in the out folder."""
    monkeypatch.setattr(arrow_ingest, "READ_BATCH_ROWS", 2)
    events = [event(i, run_id="later-bad") for i in range(1, 7)]
    events[5] = event(6, run_id="later-bad", hw=-1)
    path = write_parquet(tmp_path / "later-bad.parquet", events)
    out = tmp_path / "out"
    rows = rewrite_file(str(path), "parquet", 0, str(out), "b", 1, "snappy")
    assert facts(rows) == [{"path": str(path), "kept": False, "why": "a record may break a validation rule"}]
    assert files_under(out) == []
    events[5] = event(6, run_id="later-bad")  # the control: without the bad record, six one-row files
    good = write_parquet(tmp_path / "all-good.parquet", events)
    assert [r["run_records"] for r in rewrite_file(str(good), "parquet", 0, str(tmp_path / "control"), "b", 1,
                                                   "snappy")] == [6]
    assert len(files_under(tmp_path / "control")) == 6
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes("\ufeff".encode() + _text(_good("bom")).encode())
    rows = rewrite_file(str(bom), "jsonl", 1, str(out), "b", 1, "snappy")
    assert [r["kept"] for r in rows] == [False] and files_under(out) == []


# --- 7. segments_repeat --------------------------------------------------------------------------


def _seg(run: str, first: int, last: int, ascending: bool = True, path: str = "f") -> RunSegment:
    return RunSegment(path, run, last - first + 1, first, last, ascending)


@pytest.mark.parametrize(("segments", "repeat"), [
    ([], False),
    ([_seg("r", 1, 5)], False),
    ([_seg("r", 1, 5), _seg("r", 5, 9, path="g")], True),  # share id 5
    ([_seg("r", 1, 5), _seg("r", 3, 4, path="g")], True),  # one inside the other
    ([_seg("r", 6, 9), _seg("r", 1, 5, path="g")], False),  # touching, disjoint, out of order
    ([_seg("r", 1, 5), _seg("s", 1, 5, path="g")], False),  # same ids, different runs
    ([_seg("r", 1, 10), _seg("r", 20, 30, path="g"), _seg("r", 5, 6, path="h")], True),  # not adjacent in the input
    ([_seg("r", 1, 5, ascending=False)], True),  # one file alone, ids not ascending
    ([_seg("r", 1, 5), _seg("s", 10, 20, ascending=False, path="g")], True),
], ids=["none", "one", "overlap-by-one", "nested", "touching", "other-run", "unsorted-overlap", "not-ascending",
        "not-ascending-other-run"])
def test_segments_repeat(segments: list[RunSegment], repeat: bool) -> None:
    """An id may repeat when two segments of a run overlap or one does not ascend; touching ranges are fine."""
    assert segments_repeat(segments) is repeat


# --- 8. run_ids and landing file names (the escaped run_id is a case above) ---------------------


def test_a_non_ascii_run_id_taken_whole_reads_back_exactly(spark, tmp_path) -> None:
    """A non-ASCII run_id taken whole reads back as written, as it does when the Spark path writes it."""
    run_id = "rün-é"
    landing = tmp_path / "landing"
    landing.mkdir()
    write_parquet(landing / "a.parquet", [event(1, run_id=run_id), event(2, run_id=run_id)])
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    r = ingest(spark, lake, landing, whole=True)
    assert r.whole_files == 1
    assert [x["run_id"] for x in lake.read(BRONZE_EVENTS).collect()] == [run_id, run_id]


def test_a_landing_file_name_with_glob_characters_gives_the_same_tables(spark, tmp_path) -> None:
    """A Parquet file named x[1].parquet ingests the same in both modes."""
    landing = tmp_path / "landing"
    landing.mkdir()
    write_parquet(landing / "x[1].parquet", [event(1, run_id="glob")])
    assert_same(*both(spark, tmp_path, landing))


def test_a_landing_file_whose_name_has_a_colon_is_quarantined_whole_in_both_modes(spark, tmp_path) -> None:
    """Hadoop paths cannot name a file with ':' in its name: the file is one unreadable_file record saying so,
    and the other files go in (before, the Spark path failed the whole job)."""
    landing = tmp_path / "landing"
    landing.mkdir()
    write_parquet(landing / "t12:00:00.parquet", [event(1, run_id="colon")])
    (landing / "t12:00:01.jsonl").write_text(json.dumps(event(2, run_id="colon")) + "\n", encoding="utf-8")
    write_parquet(landing / "fine.parquet", [event(3, run_id="colon")])
    rw, rs, lw, ls = both(spark, tmp_path, landing)
    assert_same(rw, rs, lw, ls)
    assert (rw.read, rw.kept, rw.by_reason, rw.whole_files) == (3, 1, {"unreadable_file": 2}, 1)
    reasons = sorted(r["reason"] for r in lw.read(BRONZE_QUARANTINE).collect())
    assert all("cannot open a file whose name contains ':'" in r for r in reasons), reasons


@pytest.mark.parametrize("name", ["nan", "infinity", "minus-infinity"])
def test_a_non_finite_rate_that_spark_reads_is_kept(cases: Cases, name: str) -> None:
    """NaN and Infinity are numbers to Spark's JSON reader: the line-structure check must not call them malformed."""
    assert [r["_source_line"] for r in cases.of("spark", "bronze", f"non-finite-{name}.jsonl")] == [1, 2, 3]


def test_an_empty_run_id_is_quarantined_not_committed(cases: Cases) -> None:
    """An empty run_id would name Hive's null folder and leave bronze unreadable: it is an invalid value."""
    q = cases.of("whole", "quarantine", "empty-run-id.jsonl")
    assert [(r["_source_line"], r["reason_code"]) for r in q] == [(3, "invalid_value")]
    assert "run_id must name a run" in q[0]["reason"]


def test_a_symlink_to_a_landing_file_is_read_once(spark, tmp_path) -> None:
    """A symlink in the landing folder to one of its files is the same file: its rows are kept once."""
    landing = tmp_path / "landing"
    landing.mkdir()
    target = write_parquet(landing / "a.parquet", [event(1, run_id="link"), event(2, run_id="link")])
    (landing / "also-a.parquet").symlink_to(target)
    rw, rs, lw, ls = both(spark, tmp_path, landing)
    assert_same(rw, rs, lw, ls)
    assert (rw.files_seen, rw.read, rw.kept, rw.duplicates) == (1, 2, 2, 0)


def test_only_the_files_the_tasks_reported_are_staged(spark, tmp_path, monkeypatch) -> None:
    """A file in the output folder that no successful task reported (a failed or speculative attempt's) is
    deleted, not committed."""
    landing = tmp_path / "landing"
    landing.mkdir()
    write_parquet(landing / "a.parquet", [event(1, run_id="kept"), event(2, run_id="kept")])
    real = EmbeddedLake.stage_files

    def with_a_stray(self, spec, write):
        if spec != BRONZE_EVENTS:
            return real(self, spec, write)

        def write_after_a_failed_attempt(folder: Path) -> None:
            (folder / "run_id=stray").mkdir(parents=True)
            stray = pa.Table.from_pylist([{"event_id": 99}], schema=arrow_ingest._DATA_SCHEMA)
            pq.write_table(stray, folder / "run_id=stray" / "part-00000-deadbeef-000-000.parquet")
            write(folder)
        return real(self, spec, write_after_a_failed_attempt)

    monkeypatch.setattr(EmbeddedLake, "stage_files", with_a_stray)
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    r = ingest(spark, lake, landing, whole=True)
    assert (r.whole_files, r.kept) == (1, 2) and r.reconciles, r.summary()
    got = sorted((x["run_id"], x["event_id"]) for x in lake.read(BRONZE_EVENTS).collect())
    assert got == [("kept", 1), ("kept", 2)]
