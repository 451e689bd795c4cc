"""The one schema source and its derived forms agree."""

from __future__ import annotations

import json

import jsonschema
import pyarrow as pa
import pytest
from pyspark.sql import types as T

from jobs.sample import sample_events
from schemas import docs
from schemas import jsonschema as js
from schemas.events import (
    COLUMNS,
    EVENT_SCHEMA,
    EVENT_TYPES,
    SchemaVersionError,
    check_readable,
    parse_version,
)
from schemas.spark import to_spark_schema


def test_spark_schema_has_every_arrow_column_with_matching_types() -> None:
    spark_schema = to_spark_schema(EVENT_SCHEMA)
    assert spark_schema.names == EVENT_SCHEMA.names
    expect = {"event_id": T.LongType(), "partition": T.IntegerType(), "acks": T.ByteType(),
              "measured_rate": T.DoubleType(), "isr": T.ArrayType(T.IntegerType(), True),
              "config": T.MapType(T.StringType(), T.StringType(), True)}
    for name, t in expect.items():
        assert spark_schema[name].dataType == t, name
    assert not spark_schema["run_id"].nullable and spark_schema["topic"].nullable
    assert spark_schema["hw"].metadata["doc"].startswith("High watermark")


def test_spark_schema_round_trips_through_arrow_data(spark) -> None:
    rows = [{c: e.get(c) for c in EVENT_SCHEMA.names} for e in sample_events()[:5]]
    table = pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)
    df = spark.createDataFrame(table.to_pandas(), schema=to_spark_schema(EVENT_SCHEMA))
    assert df.count() == 5
    assert df.schema == to_spark_schema(EVENT_SCHEMA)


def test_json_schema_lists_every_column_and_requires_the_envelope() -> None:
    doc = js.event_json_schema()
    assert list(doc["properties"]) == [c.name for c in COLUMNS]
    assert set(doc["required"]) == {"schema_version", "source", "run_id", "event_id", "ts_ms", "event_type"}
    assert doc["properties"]["source"]["enum"] == ["engine", "kafka-log"]


def test_every_sample_event_is_valid_under_the_json_schema() -> None:
    validator = jsonschema.Draft202012Validator(js.event_json_schema())
    for e in sample_events():
        validator.validate(e)


@pytest.mark.parametrize(
    ("change", "message_part"),
    [
        ({"base_offset": "12"}, "'12' is not valid under any of the given schemas"),
        ({"event_type": "hw_jump"}, "'hw_jump' is not one of"),
        ({"leo": -1}, "-1 is not valid under any of the given schemas"),
        ({"surprise": 1}, "Additional properties are not allowed"),
    ],
)
def test_json_schema_rejects_what_ingest_rejects(change: dict, message_part: str) -> None:
    e = next(x for x in sample_events() if x["event_type"] == "append")
    errors = list(jsonschema.Draft202012Validator(js.event_json_schema()).iter_errors({**e, **change}))
    assert any(message_part in err.message for err in errors), [err.message for err in errors]


def test_json_schema_requires_the_fields_of_each_event_type() -> None:
    e = next(x for x in sample_events() if x["event_type"] == "hw_change")
    del e["old_hw"]
    errors = list(jsonschema.Draft202012Validator(js.event_json_schema()).iter_errors(e))
    assert any("'old_hw' is a required property" in err.message for err in errors)


def test_generated_files_are_in_step_with_the_code() -> None:
    assert js.SCHEMA_FILE.read_text(encoding="utf-8") == js.render(), "run: python -m schemas.jsonschema"
    assert docs.README.read_text(encoding="utf-8") == docs.render(), "run: python -m schemas.docs"
    json.loads(js.SCHEMA_FILE.read_text(encoding="utf-8"))


def test_every_event_type_is_documented_with_its_required_columns() -> None:
    text = docs.render()
    for name, et in EVENT_TYPES.items():
        assert f"| `{name}` |" in text
        for col in et.requires:
            assert f"`{col}`" in text


def test_version_rules() -> None:
    assert parse_version("1.0") == (1, 0)
    check_readable("1.8")  # newer minor of our major is readable
    with pytest.raises(SchemaVersionError, match=r"'2\.0' is newer"):
        check_readable("2.0")
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
        parse_version("v1")


def test_payload_problems_names_each_broken_rule() -> None:
    from schemas.events import payload_problems

    good = next(x for x in sample_events() if x["event_type"] == "append")
    assert payload_problems(good) == []
    bad = {**good, "leo": -1, "role": "observer", "batch_checksum": None, "topic": None}
    assert payload_problems(bad) == [
        "append without batch_checksum",
        "append without topic/partition",
        "role='observer' not in ('leader', 'follower') (append)",
        "leo=-1 negative (append)",
    ]
