"""The tests' session interprets expressions; `generated_code` gives the end-to-end tests the jobs' generated code."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession


def _executed_plan(df: DataFrame) -> str:
    """The physical plan Spark ran `df` with (no exchange here, so no adaptive wrapper hides the stages)."""
    df.collect()
    return df._jdf.queryExecution().executedPlan().toString()


def _query(spark: SparkSession) -> DataFrame:
    """A projection with a regular expression and a filter: 17 rows, the first x = 6."""
    return spark.range(20).selectExpr("id * 2 AS x", "regexp_extract(cast(id AS string), '([0-9])$', 1) AS d") \
        .where("x > 4")


def test_generated_code_gives_the_jobs_whole_stage_code(spark: SparkSession, generated_code: SparkSession) -> None:
    """Whole-stage code (`*(1) Project`) under `generated_code`, with the rows the interpreted session gives."""
    generated = _query(spark)
    assert "*(1) Project" in _executed_plan(generated)
    rows = sorted(generated.collect())
    assert len(rows) == 17 and rows[0].x == 6


def test_the_tests_session_runs_without_generated_code(spark: SparkSession) -> None:
    """The session default: no whole-stage code; the same rows as with it (checked above)."""
    interpreted = _query(spark)
    plan = _executed_plan(interpreted)
    assert "*(" not in plan and "Project" in plan
    rows = sorted(interpreted.collect())
    assert len(rows) == 17 and rows[0].x == 6
