"""Malformed input: every bad record lands in quarantine with a reason a person can act on.

All cases share one landing folder and one ingest (Spark jobs are slow to start, the cases are
independent: each has its own file and run_id); each test then asserts one case's records.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.ingest import IngestResult, run_ingest
from jobs.lake import EmbeddedLake
from schemas.events import EVENT_SCHEMA, SCHEMA_MAJOR, SCHEMA_MINOR, SCHEMA_VERSION
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE
from tests.conftest import DROP, event, write_jsonl

GOOD = json.dumps(event(1, run_id="trunc"))
NEWER_MINOR = f"{SCHEMA_MAJOR}.{SCHEMA_MINOR + 1}"
"""A minor version newer than this code's: its unknown fields are kept (a newer writer may add columns)."""


def _parquet(path: Path, rows: list[dict], schema: pa.Schema) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def write_cases(landing: Path) -> None:
    """One file per case; each case's run_id keeps its events apart from the others'."""
    write_jsonl(landing / "trunc.jsonl", [GOOD, GOOD[:-10], "not json at all", event(2, run_id="trunc")])
    write_jsonl(landing / "wrongtype.jsonl", [event(1, run_id="wt", old_hw="12")])
    write_jsonl(landing / "missing.jsonl", [event(1, run_id=DROP), event(2, run_id="miss", ts_ms=None)])
    write_jsonl(landing / "unknown-type.jsonl", [event(1, run_id="ut", event_type="hw_jump")])
    write_jsonl(landing / "negative.jsonl", [event(1, run_id="neg", old_hw=-5)])
    write_jsonl(landing / "last-before-base.jsonl", [event(
        1, run_id="lb", event_type="append", old_hw=DROP, hw=DROP, base_offset=10, last_offset=4, record_count=1,
        bytes=10, batch_leader_epoch=1, batch_checksum=3, leo=11)])
    write_jsonl(landing / "type-fields.jsonl", [event(1, run_id="tf", old_hw=DROP, topic=DROP)])
    write_jsonl(landing / "unknown-field.jsonl",
                [event(1, run_id="uf", surprise=1), event(2, run_id="uf", schema_version=NEWER_MINOR, surprise=1)])
    (landing / "empty.jsonl").write_text("", encoding="utf-8")
    write_jsonl(landing / "blank-lines.jsonl", ["", "   "])
    body = "\n".join(json.dumps(event(i, run_id="bom")) for i in (1, 2)) + "\r\n"
    (landing / "bom.jsonl").write_bytes("\ufeff".encode() + body.encode())
    _parquet(landing / "extra.parquet", [{**event(1, run_id="px"), "extra_col": 7}],
             EVENT_SCHEMA.append(pa.field("extra_col", pa.int64())))
    _parquet(landing / "missing-col.parquet", [event(1, run_id="pm"), event(2, run_id="pm")],
             pa.schema([f for f in EVENT_SCHEMA if f.name != "run_id"]))
    _parquet(landing / "typed.parquet",
             [{**event(1, run_id="pt"), "old_hw": "41"}, {**event(2, run_id="pt"), "old_hw": "x1"}],
             pa.schema([pa.field(f.name, pa.string()) if f.name == "old_hw" else f for f in EVENT_SCHEMA]))
    (landing / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    write_jsonl(landing / "dup-a.jsonl", [event(1, run_id="dup"), event(2, run_id="dup"), event(1, run_id="dup")])
    write_jsonl(landing / "dup-b.jsonl", [event(2, run_id="dup")])
    for i, v in enumerate(["one", "1", "0.9"]):
        write_jsonl(landing / f"version-{i}.jsonl", [event(1, run_id=f"ver{i}", schema_version=v)])


class Ingested:
    """The outcome of ingesting all the cases once."""

    def __init__(self, result: IngestResult, lake: EmbeddedLake) -> None:
        self.result = result
        self.quarantine = {
            (Path(r["_source_file"]).name, r["_source_line"]): r for r in lake.read(BRONZE_QUARANTINE).collect()
        }
        rows = lake.read(BRONZE_EVENTS).select("run_id", "event_id").collect()
        self.kept = {(r["run_id"], r["event_id"]) for r in rows}

    def q(self, file: str, line: int | None) -> dict:
        return self.quarantine[(file, line)].asDict()

    def kept_of(self, run_id: str) -> set[int]:
        return {e for r, e in self.kept if r == run_id}


@pytest.fixture(scope="module")
def ingested(spark, tmp_path_factory) -> Ingested:
    root = tmp_path_factory.mktemp("malformed")
    landing = root / "landing"
    landing.mkdir()
    write_cases(landing)
    lake = EmbeddedLake(spark, str(root / "lake"))
    result = run_ingest(spark, lake, str(landing), log=lambda _m: None)
    return Ingested(result, lake)


def test_counts_reconcile_over_all_cases(ingested: Ingested) -> None:
    r = ingested.result
    assert r.reconciles, r.summary()
    assert r.read == len(ingested.kept) + len(ingested.quarantine)
    assert r.kept == len(ingested.kept)
    assert r.files_ingested == r.files_seen == 20


def test_truncated_and_non_json_lines_are_quarantined_with_their_line_numbers(ingested: Ingested) -> None:
    assert ingested.kept_of("trunc") == {1, 2}
    assert ingested.q("trunc.jsonl", 2)["reason_code"] == "malformed_json"
    assert ingested.q("trunc.jsonl", 2)["raw"] == GOOD[:-10]
    assert ingested.q("trunc.jsonl", 3)["reason"] == "malformed JSON: the line is not one complete JSON object"
    assert ingested.q("trunc.jsonl", 3)["raw"] == "not json at all"


def test_a_string_offset_is_a_wrong_type_naming_field_and_value(ingested: Ingested) -> None:
    rec = ingested.q("wrongtype.jsonl", 1)
    assert rec["reason_code"] == "wrong_type"
    assert rec["reason"] == "field 'old_hw' expected int64, got \"12\""
    assert (rec["run_id"], rec["event_id"]) == ("wt", 1)
    assert ingested.kept_of("wt") == set()


def test_missing_envelope_field(ingested: Ingested) -> None:
    assert ingested.q("missing.jsonl", 1)["reason"] == "missing required field 'run_id'"
    assert ingested.q("missing.jsonl", 2)["reason"] == "missing required field 'ts_ms'"
    assert ingested.q("missing.jsonl", 2)["reason_code"] == "missing_field"
    assert ingested.kept_of("miss") == set()


def test_unknown_event_type(ingested: Ingested) -> None:
    rec = ingested.q("unknown-type.jsonl", 1)
    assert rec["reason_code"] == "invalid_value"
    assert rec["reason"].startswith("event_type must be one of ['leadership_change'")
    assert rec["reason"].endswith("got hw_jump")


def test_negative_offset(ingested: Ingested) -> None:
    assert ingested.q("negative.jsonl", 1)["reason"] == "old_hw must be >= 0, got -5"


def test_last_offset_before_base_offset(ingested: Ingested) -> None:
    assert ingested.q("last-before-base.jsonl", 1)["reason"] == (
        "last_offset must be >= base_offset, got last_offset 4 < base_offset 10"
    )


def test_fields_required_by_the_event_type(ingested: Ingested) -> None:
    assert ingested.q("type-fields.jsonl", 1)["reason"] == (
        "a hw_change event needs field 'old_hw'; a hw_change event needs field 'topic'"
    )


def test_unknown_field_is_quarantined_unless_a_newer_minor_version_added_it(ingested: Ingested) -> None:
    assert (ingested.q("unknown-field.jsonl", 1)["reason"]
            == f"unknown field(s) surprise: schema {SCHEMA_VERSION} has no such column")
    assert ingested.kept_of("uf") == {2}


def test_empty_file_and_blank_lines_hold_no_records(ingested: Ingested) -> None:
    assert not [k for k in ingested.quarantine if k[0] in ("empty.jsonl", "blank-lines.jsonl")]


def test_file_with_a_byte_order_mark_is_read_normally(ingested: Ingested) -> None:
    assert ingested.kept_of("bom") == {1, 2}
    assert not [k for k in ingested.quarantine if k[0] == "bom.jsonl"]


def test_parquet_with_an_extra_column(ingested: Ingested) -> None:
    rec = ingested.q("extra.parquet", 1)
    assert rec["reason"] == f"unknown field(s) extra_col: schema {SCHEMA_VERSION} has no such column"
    assert json.loads(rec["raw"])["extra_col"] == 7
    assert ingested.kept_of("px") == set()


def test_parquet_with_a_missing_column(ingested: Ingested) -> None:
    for line in (1, 2):
        assert ingested.q("missing-col.parquet", line)["reason"] == "missing required field 'run_id'"
    assert json.loads(ingested.q("missing-col.parquet", 2)["raw"])["event_id"] == 2


def test_parquet_with_a_column_of_another_type(ingested: Ingested) -> None:
    assert ingested.kept_of("pt") == {1}  # "41" is a faithful int64
    assert ingested.q("typed.parquet", 2)["reason"] == "field 'old_hw' expected int64, got x1"


def test_unreadable_parquet_file_is_one_quarantine_record(ingested: Ingested) -> None:
    rec = ingested.q("broken.parquet", None)
    assert rec["reason_code"] == "unreadable_file"
    assert rec["reason"].startswith("unreadable Parquet file: ")


def test_duplicate_events_within_and_across_files_are_kept_once(ingested: Ingested) -> None:
    assert ingested.kept_of("dup") == {1, 2}
    rec = ingested.q("dup-a.jsonl", 3)
    assert rec["reason"].startswith("duplicate event (run_id=dup, event_id=1) first seen at ")
    assert rec["reason"].endswith("dup-a.jsonl:1")
    assert ingested.q("dup-b.jsonl", 1)["reason_code"] == "duplicate"
    assert ingested.result.duplicates == 2


@pytest.mark.parametrize(("i", "bad_version"), [(0, "one"), (1, "1"), (2, "0.9")])
def test_unreadable_or_old_schema_version(ingested: Ingested, i: int, bad_version: str) -> None:
    rec = ingested.q(f"version-{i}.jsonl", 1)
    assert rec["reason_code"] == "bad_schema_version"
    assert bad_version in rec["reason"]


def test_duplicate_of_an_event_ingested_by_an_earlier_run(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1)])
    run_ingest(spark, lake, str(landing), log=lambda _m: None)
    write_jsonl(landing / "b.jsonl", [event(1), event(3)])
    result = run_ingest(spark, lake, str(landing), log=lambda _m: None)
    assert (result.files_ingested, result.read, result.kept, result.duplicates) == (1, 2, 1, 1)
    (rec,) = lake.read(BRONZE_QUARANTINE).collect()
    assert rec["reason"] == "duplicate event (run_id=run-a, event_id=1) is already in bronze"
    assert Path(rec["_source_file"]).name == "b.jsonl" and rec["_source_line"] == 1


def _scramble_data_pages(path: Path) -> None:
    """Overwrite everything between the magic bytes and the footer: the footer still reads, the pages don't."""
    data = bytearray(path.read_bytes())
    footer_len = struct.unpack("<I", data[-8:-4])[0]
    rng = random.Random(7)
    for i in range(4, len(data) - 8 - footer_len):
        data[i] = rng.randrange(256)
    path.write_bytes(bytes(data))


def test_a_parquet_file_with_corrupt_pages_is_quarantined_and_the_others_are_ingested(spark, lake, landing) -> None:
    _parquet(landing / "good.parquet", [event(i, run_id="good") for i in (1, 2, 3)], EVENT_SCHEMA)
    bad = landing / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([event(i, run_id="bad") for i in range(1, 200)], schema=EVENT_SCHEMA), bad,
                   compression="zstd")
    _scramble_data_pages(bad)
    assert pq.read_schema(bad).names == EVENT_SCHEMA.names  # the footer check up front passes it
    lines: list[str] = []
    result = run_ingest(spark, lake, str(landing), log=lines.append)
    assert (result.read, result.kept, result.quarantined, result.by_reason) == (4, 3, 1, {"unreadable_file": 1})
    assert any("1 Parquet file(s) unreadable past their footer" in line and str(bad) in line for line in lines)
    (rec,) = lake.read(BRONZE_QUARANTINE).collect()
    assert rec["_source_file"] == str(bad) and rec["_source_line"] is None
    assert rec["reason"].startswith("unreadable Parquet data: ")
    assert {r["event_id"] for r in lake.read(BRONZE_EVENTS).collect()} == {1, 2, 3}
    # Nothing of the failed first attempt is left in the table folder.
    assert not list((Path(lake.root) / BRONZE_EVENTS.name / "_staging").glob("*"))
    again = run_ingest(spark, lake, str(landing), log=lambda _m: None)
    assert again.files_ingested == 0, "both files are done: the unreadable one is not retried forever"
