"""Hand-built audit cases evaluated together: one Spark audit for all of them instead of one per test.

A `Case` is a few named runs of hand-written events, the invariant it is about and the violations worked out
by hand. A test module lists its cases as `AUDIT_CASES`; the session fixture `audited`
(`tests/spark/conftest.py`) hands every collected module's cases to `audit_all`, which puts them into one
bronze frame (run ids `<case>/<run>`, so no two cases share a window) and evaluates the invariants they
name in one `jobs.invariants.evaluate`; each test then reads its own case's rows back with `found`. Every
scan partitions by run, so a case's verdict does not depend on the others in the frame, and the audit's
plan-and-schedule cost (tens of seconds even on tiny data) is paid once rather than once per test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import jobs.invariants as inv
from replication_core.checker.checker import check_events
from schemas.audit import VIOLATION_SCHEMA
from schemas.events import EVENT_SCHEMA
from schemas.spark import to_spark_schema
from tests.spark.conftest import event_rows

Rows = list[dict[str, Any]]

KEY_COLUMNS: tuple[str, ...] = ("run_id", "invariant", "severity", "replica", "event_id", "offset", "expected",
                                "actual", "evidence")
"""The violation columns most cases compare (run ids as the case names its runs)."""


def timed(rows: Rows) -> Rows:
    """`rows` stamped 10 ms apart from ts 1000 (a row's own `ts_ms` wins)."""
    return [{"ts_ms": 1000 + 10 * i, **r} for i, r in enumerate(rows)]


def key_schema(columns: Sequence[str]) -> pa.Schema:
    """The violation schema narrowed to `columns`."""
    return pa.schema([VIOLATION_SCHEMA.field(c) for c in columns])


@dataclass(frozen=True)
class Case:
    """Named runs of hand-written events, the invariant under test and its expected violation rows."""

    name: str
    invariant: str
    runs: Mapping[str, Rows]
    expected: list[tuple]
    columns: tuple[str, ...] = KEY_COLUMNS

    def run_id(self, run: str) -> str:
        """The run id this case's run `run` gets in the shared frame."""
        return f"{self.name}/{run}"


def register(cases: list[Case]) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    """A decorator: the Case its function builds joins `cases`, named after the function."""
    def add(build: Callable[[], Case]) -> Callable[[], Case]:
        cases.append(replace(build(), name=build.__name__))
        return build
    return add


def audit_all(spark: SparkSession, cases: Sequence[Case]) -> DataFrame:
    """Every case's runs in one frame, the invariants they name evaluated in one audit (materialised)."""
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"case names must be unique, got {sorted(n for n in names if names.count(n) > 1)}")
    rows = [e for c in cases for run, events in c.runs.items() for e in event_rows(events, run_id=c.run_id(run))]
    # One local relation, not a union of one per run: the scans join bronze with itself, and a plan with a
    # hundred leaves per reference took the analyser minutes.
    bronze = spark.createDataFrame(rows, to_spark_schema(EVENT_SCHEMA))
    wanted = sorted({c.invariant for c in cases})
    return inv.evaluate(bronze, wanted).localCheckpoint(eager=True)


def found(violations: DataFrame, case: Case) -> DataFrame:
    """`case`'s rows of the shared audit, its invariant only, run ids as the case names them."""
    prefix = f"{case.name}/"
    mine = violations.where((F.col("invariant") == case.invariant) & F.col("run_id").startswith(prefix))
    return mine.withColumn("run_id", F.substring("run_id", len(prefix) + 1, 1 << 16)).select(*case.columns)


def reference(case: Case) -> list[tuple]:
    """The reference checker's rows of `case.invariant` on the same runs, in `case.columns`."""
    rows = [e for run, events in case.runs.items() for e in event_rows(events, run_id=run)]
    found_ = [v for v in check_events(rows).violations if v.invariant == case.invariant]
    return [tuple(list(getattr(v, c)) if c == "evidence" else getattr(v, c) for c in case.columns) for v in found_]


def same_rows(a: list[tuple], b: list[tuple]) -> bool:
    """The same rows in any order (sequences such as evidence compared as lists)."""
    def norm(rows: list[tuple]) -> list[tuple]:
        return sorted((tuple(list(v) if isinstance(v, tuple | list) else v for v in r) for r in rows), key=repr)
    return norm(a) == norm(b)
