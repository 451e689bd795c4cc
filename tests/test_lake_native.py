"""The native delta-spark backend: same API, run only where delta-spark's JVM jars are loaded."""

from __future__ import annotations

import pytest

from jobs.config import JobConfig
from jobs.lake import IdempotencyKey, NativeLake, open_lake
from jobs.session import native_delta_available, resolve_backend
from schemas.spark import to_spark_schema
from tests.test_lake_embedded import SPEC

NO_JARS = (
    "delta-spark JVM jars are not on this session's classpath (no Maven access here); run with "
    "spark-submit --packages io.delta:delta-spark_2.13:4.4.1 on a cluster to exercise the native backend"
)


@pytest.fixture
def native_lake(spark, tmp_path):
    if not native_delta_available(spark):
        pytest.skip(NO_JARS)
    return NativeLake(spark, str(tmp_path / "lake"))


def test_auto_falls_back_to_embedded_when_the_jars_are_absent(spark, tmp_path) -> None:
    cfg = JobConfig(lake=str(tmp_path), delta_backend="auto")
    expected = "native" if native_delta_available(spark) else "embedded"
    assert resolve_backend(cfg, spark) == expected
    assert open_lake(spark, cfg).backend == expected


def test_native_requested_without_jars_fails_fast_with_the_fix(spark, tmp_path) -> None:
    if native_delta_available(spark):
        pytest.skip("the jars are present, so native is available")
    with pytest.raises(RuntimeError, match=r"--packages io\.delta:delta-spark"):
        resolve_backend(JobConfig(lake=str(tmp_path), delta_backend="native"), spark)


@pytest.mark.native_delta
def test_native_append_is_idempotent_and_readable(spark, native_lake: NativeLake) -> None:
    df = spark.createDataFrame([("r1", 1, "a")], to_spark_schema(SPEC.schema))
    key = IdempotencyKey("job:1")
    native_lake.append(SPEC, df, keys=[key])
    assert native_lake.append(SPEC, df, keys=[key]).skipped
    assert native_lake.read(SPEC).count() == 1


@pytest.mark.native_delta
def test_native_overwrite_partitions(spark, native_lake: NativeLake) -> None:
    schema = to_spark_schema(SPEC.schema)
    native_lake.append(SPEC, spark.createDataFrame([("r1", 1, "a"), ("r2", 1, "b")], schema))
    native_lake.overwrite_partitions(SPEC, spark.createDataFrame([("r1", 2, "c")], schema), [{"run_id": "r1"}])
    assert sorted(r["k"] for r in native_lake.read(SPEC).collect()) == [1, 2]
