"""The tests' session interprets expressions; `generated_code` gives the end-to-end tests the jobs' generated code."""

from __future__ import annotations

from pyspark.sql import DataFrame, Row, SparkSession


def _run(spark: SparkSession) -> tuple[str, list[Row]]:
    """A projection with a regular expression and a filter, run once: the physical plan Spark ran it with (no
    exchange here, so no adaptive wrapper hides the stages) and its rows, sorted."""
    df: DataFrame = spark.range(20).selectExpr("id * 2 AS x",
                                               "regexp_extract(cast(id AS string), '([0-9])$', 1) AS d").where("x > 4")
    rows = sorted(df.collect())
    return df._jdf.queryExecution().executedPlan().toString(), rows


def test_generated_code_gives_the_jobs_whole_stage_code(generated_code: SparkSession) -> None:
    """Whole-stage code (`*(1) Project`) under `generated_code`, with the rows the interpreted session gives."""
    plan, rows = _run(generated_code)
    assert "*(1) Project" in plan
    assert len(rows) == 17 and rows[0].x == 6
    assert generated_code.conf.get("spark.sql.adaptive.enabled") == "true"  # the jobs' planning, too


def test_the_tests_session_runs_without_generated_code(spark: SparkSession) -> None:
    """The session default: no whole-stage code, no adaptive execution; the same rows as with both (above)."""
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
    plan, rows = _run(spark)
    assert "*(" not in plan and "Project" in plan
    assert len(rows) == 17 and rows[0].x == 6
