"""The Arrow screen of the whole-file ingest path flags every record that Spark's rules find bad.

`jobs.arrow_validate.screen` decides which landing files skip Spark's exact validation, so it must
never pass a record that breaks a rule. The records are `tests/test_validate.py`'s mutants: the
sample's valid events with one field broken in every way a rule can see.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.arrow_validate import plain_schema_problem, screen
from jobs.sample import sample_events
from jobs.validate import problems_sql, rules
from schemas.events import EVENT_SCHEMA, SCHEMA_MAJOR, SCHEMA_MINOR
from tests.test_validate import CANDIDATE_SCHEMA, _candidates, _mutants

NULLABLE = pa.schema([f.with_nullable(True) for f in EVENT_SCHEMA])


def _arrow(events: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([{n: e.get(n) for n in NULLABLE.names} for e in events], schema=NULLABLE)


def test_the_arrow_screen_flags_every_record_a_rule_finds_bad(spark: SparkSession) -> None:
    mutants = _mutants()
    rows = []
    for i, m in enumerate(mutants):
        r = {f.name: m.get(f.name) for f in CANDIDATE_SCHEMA.fields}
        r.update(_source_file="f", _source_line=i, _type_errors=[], _wrong_type_fields=[], _unknown_fields=[])
        if r.get("config") is not None:
            r["config"] = dict(r["config"])
        rows.append(r)
    exact = spark.createDataFrame(rows, CANDIDATE_SCHEMA).selectExpr("_source_line", f"{problems_sql()} AS p")
    bad = {r["_source_line"] for r in exact.where(F.size("p") > 0).select("_source_line").collect()}
    flagged = screen(_arrow(mutants)).to_pylist()
    assert len(bad) > len(mutants) // 2  # not vacuous: most mutants break a rule
    missed = sorted(i for i in bad if not flagged[i])
    assert missed == [], [mutants[i] for i in missed[:3]]


@pytest.mark.parametrize("version", [f"{SCHEMA_MAJOR}.{m}" for m in range(SCHEMA_MINOR + 1)])
def test_valid_events_pass_the_arrow_screen(version: str) -> None:
    events = [{**e, "schema_version": version} for e in sample_events()]
    assert not any(screen(_arrow(events)).to_pylist())


@pytest.mark.parametrize("version", ["2.0", f"{SCHEMA_MAJOR}.{SCHEMA_MINOR + 1}", "one", None])
def test_other_schema_versions_are_left_to_spark(version: str | None) -> None:
    """A newer major fails the job and a newer minor may carry fields this replog drops: Spark decides."""
    events = [{**e, "schema_version": version} for e in sample_events()[:3]]
    assert all(screen(_arrow(events)).to_pylist())


def test_a_batch_spanning_more_than_an_int32_is_flagged() -> None:
    e = next(e for e in sample_events() if e["event_type"] == "append")
    spans = [(5, 5 + 2**31), (0, 2**63 - 1), (2**62, 2**62 + 2**31 + 10)]
    assert all(screen(_arrow([{**e, "base_offset": b, "last_offset": last} for b, last in spans])).to_pylist())


def test_a_missing_column_is_null_in_every_record() -> None:
    """A file without `event_type` (say) breaks the envelope rule in every record."""
    t = _arrow(sample_events()[:4]).drop_columns(["event_type"])
    assert screen(t).to_pylist() == [True] * 4


def test_plain_schema() -> None:
    assert plain_schema_problem(EVENT_SCHEMA) is None
    older = pa.schema([f for f in EVENT_SCHEMA if f.name not in ("adding_replicas", "removing_replicas")])
    assert plain_schema_problem(older) is None
    item_named = EVENT_SCHEMA.set(EVENT_SCHEMA.get_field_index("isr"), pa.field("isr", pa.list_(pa.int32())))
    assert plain_schema_problem(item_named) is None
    wider = EVENT_SCHEMA.set(EVENT_SCHEMA.get_field_index("partition"), pa.field("partition", pa.int64()))
    assert plain_schema_problem(wider) == "column 'partition' is int64, the schema says int32"
    assert plain_schema_problem(EVENT_SCHEMA.append(pa.field("surprise", pa.string()))) == (
        "column 'surprise' is not an event column")


def test_every_rule_is_broken_by_some_mutant(spark: SparkSession) -> None:
    """So a rule added to `jobs.validate` without mutants that break it (and so without a check that the Arrow
    screen flags it) fails here: the mutants must reach every rule."""
    all_rules = list(rules())
    hits = _candidates(spark).selectExpr(
        *[f"sum(CASE WHEN coalesce({r.broken}, false) THEN 1 ELSE 0 END) AS r{i}" for i, r in enumerate(all_rules)]
    ).first()
    unbroken = [(r.code, r.event_type, r.condition[:80]) for i, r in enumerate(all_rules) if not hits[f"r{i}"]]
    assert unbroken == []


def test_a_full_truncation_past_the_old_end_passes_the_arrow_screen() -> None:
    e = next(e for e in _mutants() if e["event_type"] == "truncation")
    flagged = screen(_arrow([{**e, "reason": r, "old_leo": 0, "truncate_offset": 51, "hw": 0}
                             for r in ("full", "leader_epoch", None)])).to_pylist()
    assert flagged == [False, True, True]
