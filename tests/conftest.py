"""Shared fixtures: one SparkSession for the whole run (per pytest-xdist worker), a fresh embedded lake per test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from jobs.config import SparkConfig
from jobs.lake import EmbeddedLake
from jobs.session import build_spark, sql_conf

INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
               "spark.sql.adaptive.enabled": "false"}
GENERATED = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK",
             "spark.sql.adaptive.enabled": "true"}
"""The tests' session evaluates expressions interpreted and plans each query once (no adaptive execution); the
jobs (Spark's defaults) generate code and re-plan at each shuffle."""


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """local[2], two shuffle partitions, no UI, the driver memory of conf/local.yaml; the parallel collector.

    On tiny frames the driver's planning dominates, and G1's concurrent threads compete with it for the two
    cores: ParallelGC made a warm audit of a hand-built frame ~25 % faster here (44-49 s -> 33-35 s). Without
    PySpark's call-site capture (conf/local.yaml says why) the same audit took ~25 % less again. The suite
    runs a dozen audits with the same plans: a generated-code cache of 2 000 classes instead of 100 keeps their
    compiled stages (warm audits of five hand-built cases, two JVMs each way: ~10 % less JVM CPU).

    Code generation is off (`NO_CODEGEN`: expressions interpreted, no whole-stage code): on frames of a few
    hundred rows the generated classes run a handful of times, and compiling them (Janino, then the JIT's
    compiler threads, a quarter of each test JVM's CPU) costs more than they save. The jobs' own setting is on;
    `generated_code` turns it back on for the test that runs every job end to end (`tests/test_demo.py`; the log
    runs' pipeline test takes it for its ingest; benchmarks/README.md "Test suite").

    Adaptive execution is off too: it makes each shuffle a job of its own and plans the rest of the query again
    after it, which on frames this small buys nothing. Seven Spark-heavy modules took 441 s instead of 556 s
    (session 59); the jobs' setting (on) comes back with `generated_code`.
    """
    session = build_spark(
        SparkConfig(master="local[2]", app_name="replog-tests", shuffle_partitions=2, driver_memory="2g",
                    conf={"spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC",
                          "spark.default.parallelism": "2", "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
                          "spark.python.sql.dataFrameDebugging.enabled": "false",
                          "spark.sql.codegen.cache.maxEntries": "2000", **INTERPRETED})
    )
    yield session
    session.stop()


@pytest.fixture
def generated_code(spark: SparkSession) -> Iterator[SparkSession]:
    """The session with the jobs' code generation (whole-stage code, generated expressions) for one test; the
    settings in force before come back after it."""
    with sql_conf(spark, GENERATED):
        yield spark


@pytest.fixture
def lake(spark: SparkSession, tmp_path: Path) -> EmbeddedLake:
    """An empty embedded lake under the test's tmp_path."""
    return EmbeddedLake(spark, str(tmp_path / "lake"))


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    """An empty landing folder."""
    p = tmp_path / "landing"
    p.mkdir()
    return p


def event(event_id: int, run_id: str = "run-a", **over: Any) -> dict[str, Any]:
    """A valid hw_change event; keyword arguments override or add fields."""
    base: dict[str, Any] = {
        "schema_version": "1.0", "source": "engine", "run_id": run_id, "event_id": event_id,
        "ts_ms": 1000 + event_id, "broker_id": 1, "event_type": "hw_change", "topic": "t", "partition": 0,
        "leader_epoch": 1, "role": "leader", "old_hw": event_id, "hw": event_id + 1,
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()
DROP: Any = _DROP
"""Pass as a field's value to `event` to leave the field out entirely."""


def write_jsonl(path: Path, records: list[dict[str, Any] | str]) -> Path:
    """Write records (dicts as JSON, strings verbatim) one per line."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n 2 --dist loadgroup`), keep each module on one worker, and the modules of the
    shared hand-built audit (`audited`) together, so that no module- or session-scoped Spark fixture runs twice."""
    for item in items:
        module = getattr(item, "module", None)
        if module is None or item.get_closest_marker("xdist_group"):
            continue
        group = "audit_cases" if hasattr(module, "AUDIT_CASES") else module.__name__
        item.add_marker(pytest.mark.xdist_group(group))
