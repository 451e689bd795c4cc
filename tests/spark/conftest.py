"""Fixtures of the Spark transform tests: small event frames built inline with the bronze event schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from schemas.events import EVENT_SCHEMA, SCHEMA_VERSION
from schemas.spark import to_spark_schema

EventsFactory = Callable[..., DataFrame]


def event_rows(rows: list[dict[str, Any]], run_id: str = "r", topic: str = "t", partition: int = 0) -> list[dict]:
    """Fill the envelope of hand-written events: event_id = position unless given, run/topic/partition defaults.

    A row may set `topic=None` / `partition=None` (run-level events such as broker_config).
    """
    out = []
    for i, r in enumerate(rows):
        full: dict[str, Any] = {c: None for c in EVENT_SCHEMA.names}
        full.update(schema_version=SCHEMA_VERSION, source="engine", run_id=run_id, event_id=i, topic=topic,
                    partition=partition)
        full.update(r)
        out.append(full)
    return out


def make_events(spark: SparkSession, rows: list[dict[str, Any]], **kw: Any) -> DataFrame:
    """A DataFrame with the event schema from hand-written rows (see `event_rows` for `kw`), checkpointed.

    Checkpointed because the lag transforms scan their events a score of times, and a frame made from Python rows
    is unpickled and converted again at every scan: `tests/spark/test_lag.py` took 153 s instead of 183 s."""
    return spark.createDataFrame(event_rows(rows, **kw), to_spark_schema(EVENT_SCHEMA)).localCheckpoint()


@pytest.fixture
def events(spark: SparkSession) -> EventsFactory:
    """`events(rows, run_id=..., topic=..., partition=...)` -> a DataFrame with the event schema."""

    def make(rows: list[dict[str, Any]], **kw: Any) -> DataFrame:
        return make_events(spark, rows, **kw)

    return make


@pytest.fixture
def expect(spark: SparkSession) -> Callable[[DataFrame, list[tuple], pa.Schema], None]:
    """`expect(actual, rows, arrow_schema)`: chispa equality with hand-written rows (any row order)."""

    def check(actual: DataFrame, rows: list[tuple], schema: pa.Schema) -> None:
        expected = spark.createDataFrame(rows, to_spark_schema(schema))
        assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)

    return check


@pytest.fixture(scope="session")
def audited(spark: SparkSession, request: pytest.FixtureRequest) -> DataFrame:
    """The `AUDIT_CASES` (`tests.spark.audit_cases`) of every collected test module, in one audit."""
    from tests.spark.audit_cases import audit_all  # it imports this module's helpers

    modules = {item.module for item in request.session.items
               if isinstance(item, pytest.Function) and hasattr(item.module, "AUDIT_CASES")}
    return audit_all(spark, [c for m in sorted(modules, key=lambda m: m.__name__) for c in m.AUDIT_CASES])
