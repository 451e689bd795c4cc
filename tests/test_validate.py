"""The validation screen is sound: a record it passes breaks no rule.

`jobs.validate.classify` evaluates the exact rules only where the cheap screen fires. Here every
rule is also evaluated *without* the screen on a few hundred records, each the valid sample events
with one field broken (nulled, negative, out of its allowed set, swapped offsets, an unknown or
wrong-typed field, other schema versions), and the two must give the same reasons for every record.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.landing import CANDIDATE_SCHEMA_EXTRA, EVENT_SPARK_SCHEMA
from jobs.sample import sample_events
from jobs.validate import classify, problems_sql, rules, screen_sql
from schemas.events import COLUMN_BY_NAME, COLUMNS, EVENT_TYPES, SCHEMA_MAJOR, SCHEMA_MINOR

# Readers deliver every event column nullable (a bad record may lack any of them).
CANDIDATE_SCHEMA = T.StructType(
    [T.StructField(f.name, f.dataType, True) for f in [*EVENT_SPARK_SCHEMA.fields, *CANDIDATE_SCHEMA_EXTRA.fields]]
)


def _bad_values(c: Any, value: Any) -> list[Any]:
    out: list[Any] = [None]
    if c.non_negative:
        out.append(-1)
    if c.minimum is not None:
        out.append(c.minimum - 1)
    if c.allowed or c.allowed_by_type:
        out.append("no-such-value")
    if c.name == "schema_version":
        out += ["2.0", "0.9", "1.7", "one", "1"]
    if c.name == "acks":
        out.append(5)
    if c.name == "run_id":
        out += ["", "__HIVE_DEFAULT_PARTITION__"]
    if c.name in ("last_offset", "hw", "truncate_offset", "response_received_ms") and isinstance(value, int):
        out.append(value + 10**9)
    if c.name == "last_offset" and isinstance(value, int):
        out += [value + 2**31, 2**63 - 1]
    return out


def _valid_value(c: Any, event_type: str) -> Any:
    """A value of column `c` that no rule objects to in an event of `event_type`."""
    allowed = c.allowed_by_type.get(event_type, c.allowed)
    if allowed:
        return allowed[0]
    t = c.type
    if pa.types.is_list(t):
        item = t.value_type
        if pa.types.is_struct(item):
            return [{item.field(i).name: ("t" if pa.types.is_string(item.field(i).type) else 1)
                     for i in range(item.num_fields)}]
        return [1, 2]
    if pa.types.is_map(t):
        return [("k", "v")]
    if pa.types.is_string(t):
        return "x"
    if pa.types.is_floating(t):
        return 1.5
    return 1


def _base_events() -> list[dict[str, Any]]:
    """One valid event of every type: the sample's, and for the types it lacks, one made from the catalogue."""
    base: dict[str, dict[str, Any]] = {}
    for e in sample_events():
        base.setdefault(e["event_type"], e)
    envelope = next(iter(base.values()))
    for et in EVENT_TYPES.values():
        if et.name in base:
            continue
        e = {k: envelope[k] for k in ("schema_version", "source", "run_id", "event_id", "ts_ms", "broker_id")}
        e["event_type"] = et.name
        needed = list(et.requires) + (["topic", "partition"] if et.partition_scoped else [])
        for name in needed:
            e[name] = _valid_value(COLUMN_BY_NAME[name], et.name)
        if et.name == "truncation":
            e.update(old_leo=10, truncate_offset=5)
        base[et.name] = e
    return list(base.values())


def _mutants() -> list[dict[str, Any]]:
    base = _base_events()
    seen_types: set[str] = set()
    out: list[dict[str, Any]] = []
    for e in base:
        if e["event_type"] in seen_types:
            continue
        seen_types.add(e["event_type"])
        out.append(dict(e))
        for c in COLUMNS:
            for v in _bad_values(c, e.get(c.name)):
                m = dict(e)
                m[c.name] = v
                out.append(m)
    return out


def _candidates(spark: SparkSession) -> DataFrame:
    rows = []
    for i, m in enumerate(_mutants()):
        r = {f.name: m.get(f.name) for f in EVENT_SPARK_SCHEMA.fields}
        if r.get("config") is not None:
            r["config"] = dict(r["config"])
        r.update(_source_file="f", _source_line=i + 1, raw=None, _malformed=None, _type_errors=[],
                 _wrong_type_fields=[], _unknown_fields=[])
        # A few records carry reader-side findings too.
        if i % 17 == 3 and r.get("hw") is not None:  # not on a mutant whose hw is missing: it must stay missing
            r.update(_type_errors=["field 'hw' expected int64, got \"x\""], _wrong_type_fields=["hw"], hw=None)
        if i % 19 == 5:
            r["_unknown_fields"] = ["surprise"]
        if i % 23 == 7:
            r["_malformed"] = "malformed JSON: the line is not one complete JSON object"
        rows.append(r)
    return spark.createDataFrame(rows, CANDIDATE_SCHEMA)


def test_every_rule_has_a_screen_and_the_mutants_break_many_of_them(spark: SparkSession) -> None:
    """The test data is not vacuous: most records are bad, in many different ways."""
    cands = _candidates(spark)
    exact = cands.selectExpr("_source_line", f"{problems_sql()} AS p")
    codes = {r["c"] for r in exact.select(F.explode("p.message").alias("c")).distinct().collect()}
    assert len(codes) >= 60, len(codes)
    assert all(r.condition for r in rules())


def test_the_screen_passes_no_record_that_breaks_a_rule(spark: SparkSession) -> None:
    """classify (screened) == the rules evaluated on every record, record by record."""
    cands = _candidates(spark)
    screened = classify(cands).select("_source_line", "_reason", "_reason_code")
    unscreened = cands.selectExpr("_source_line", "_malformed", f"{problems_sql()} AS _problems").selectExpr(
        "_source_line",
        "CASE WHEN _malformed IS NOT NULL THEN _malformed "
        "WHEN size(_problems) > 0 THEN array_join(_problems.message, '; ') END AS _reason",
        "CASE WHEN _malformed IS NOT NULL AND _source_line IS NULL THEN 'unreadable_file' "
        "WHEN _malformed IS NOT NULL THEN 'malformed_json' "
        "WHEN size(_problems) > 0 THEN _problems[0].code END AS _reason_code",
    )
    assert_df_equality(screened, unscreened, ignore_row_order=True, ignore_nullable=True)
    missed = cands.selectExpr("_source_line", f"{screen_sql()} AS s", f"size({problems_sql()}) AS n").where(
        "n > 0 AND NOT s")
    assert missed.count() == 0


@pytest.mark.parametrize("version", [f"{SCHEMA_MAJOR}.{m}" for m in range(SCHEMA_MINOR + 1)])
def test_a_good_record_is_not_suspect(spark: SparkSession, version: str) -> None:
    """The sample's valid events pass the screen (so they skip the exact rules)."""
    rows = []
    for i, e in enumerate(sample_events()):
        r = {f.name: e.get(f.name) for f in EVENT_SPARK_SCHEMA.fields}
        r.update(schema_version=version, _source_file="f", _source_line=i + 1, raw=None, _malformed=None,
                 _type_errors=[], _wrong_type_fields=[], _unknown_fields=[])
        rows.append(r)
    df = spark.createDataFrame(rows, CANDIDATE_SCHEMA)
    assert df.where(screen_sql()).count() == 0


def test_an_append_that_is_no_kafka_batch_is_invalid(spark: SparkSession) -> None:
    """A batch spans at most 2^31 offsets (Kafka's int32 lastOffsetDelta) and its next offset must exist."""
    e = next(e for e in sample_events() if e["event_type"] == "append")
    rows = []
    for i, (base, last) in enumerate([(5, 5 + 2**31 - 1), (5, 5 + 2**31), (0, 2**63 - 1)]):
        r = {f.name: e.get(f.name) for f in EVENT_SPARK_SCHEMA.fields}
        r.update(base_offset=base, last_offset=last, _source_file="f", _source_line=i + 1, raw=None, _malformed=None,
                 _type_errors=[], _wrong_type_fields=[], _unknown_fields=[])
        rows.append(r)
    got = classify(spark.createDataFrame(rows, CANDIDATE_SCHEMA)).select("_source_line", "_reason_code", "_reason")
    expected = spark.createDataFrame([
        (1, None, None),
        (2, "invalid_value", "a batch spans at most 2147483648 offsets (lastOffsetDelta is an int32), got base_offset 5"
                             " to last_offset 2147483653"),
        (3, "invalid_value", "a batch spans at most 2147483648 offsets (lastOffsetDelta is an int32), got base_offset 0"
                             " to last_offset 9223372036854775807; last_offset must be < 9223372036854775807 (the next"
                             " offset must exist), got 9223372036854775807"),
    ], "_source_line long, _reason_code string, _reason string")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_only_a_full_truncation_may_restart_the_log_past_its_old_end(spark: SparkSession) -> None:
    """`truncateFullyAndStartAt(51)` on an empty follower (the leader's log starts at 51) is a `full` truncation
    from old_leo 0 to 51, as the engine emits it; a partial truncation can only shorten the log."""
    e = next(e for e in _base_events() if e["event_type"] == "truncation")
    rows = []
    for i, reason in enumerate(["full", "leader_epoch", "out_of_range"]):
        r = {f.name: e.get(f.name) for f in EVENT_SPARK_SCHEMA.fields}
        r.update(reason=reason, old_leo=0, truncate_offset=51, hw=0, _source_file="f", _source_line=i + 1, raw=None,
                 _malformed=None, _type_errors=[], _wrong_type_fields=[], _unknown_fields=[])
        rows.append(r)
    got = classify(spark.createDataFrame(rows, CANDIDATE_SCHEMA)).select("_source_line", "_reason_code", "_reason")
    bad = "truncate_offset must be <= old_leo unless the truncation is full, got 51 > 0"
    expected = spark.createDataFrame([(1, None, None), (2, "invalid_value", bad), (3, "invalid_value", bad)],
                                     "_source_line long, _reason_code string, _reason string")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_a_follower_of_a_partition_without_leader_is_kept(spark: SparkSession) -> None:
    """The engine's become_follower of an offline partition names leader -1, as Kafka's LeaderAndIsr does: kept.
    Below -1 is no broker at all. (A simulated reassignment run lost such events to quarantine before.)"""
    e = next(e for e in _base_events() if e["event_type"] == "leadership_change")
    rows = []
    for i, leader in enumerate([-1, -2, 3]):
        r = {f.name: e.get(f.name) for f in EVENT_SPARK_SCHEMA.fields}
        r.update(action="become_follower", leader_id=leader, _source_file="f", _source_line=i + 1, raw=None,
                 _malformed=None, _type_errors=[], _wrong_type_fields=[], _unknown_fields=[])
        rows.append(r)
    got = classify(spark.createDataFrame(rows, CANDIDATE_SCHEMA)).select("_source_line", "_reason_code", "_reason")
    expected = spark.createDataFrame([(1, None, None), (2, "invalid_value", "leader_id must be >= -1, got -2"),
                                      (3, None, None)], "_source_line long, _reason_code string, _reason string")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
