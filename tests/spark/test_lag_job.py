"""`run_lag` end to end on an embedded lake, after `run_timelines`: tables written, reruns commit nothing."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from jobs.lag import OUTPUTS, run_lag
from jobs.lake import EmbeddedLake
from jobs.runs import MissingInputError, UnknownRunError
from jobs.timelines import run_timelines
from schemas.tables import GOLD_LAG_INCIDENTS, GOLD_LAG_SUMMARY, SILVER_FOLLOWER_LAG
from tests.spark.conftest import event_rows
from tests.spark.test_lag import scenario_a_rows
from tests.spark.test_timelines_job import _ingest


def test_lag_job_writes_tables_and_rerun_commits_nothing(spark: SparkSession, lake: EmbeddedLake) -> None:
    _ingest(spark, lake, event_rows(scenario_a_rows()), "b1")
    run_timelines(spark, lake, log=lambda _: None)
    result = run_lag(spark, lake, log=lambda _: None)
    assert result.runs == ["r"]
    assert result.verdicts == {"on_time": 1, "missing": 1, "not_in_isr": 1}
    assert "missing 1" in result.summary()
    verdicts = {r["follower_id"]: r["verdict"] for r in lake.read(GOLD_LAG_INCIDENTS).collect()}
    assert verdicts == {2: "on_time", 3: "missing", 4: "not_in_isr"}
    assert lake.read(SILVER_FOLLOWER_LAG).count() == 6
    scopes = sorted((r["scope"], r["broker_id"]) for r in lake.read(GOLD_LAG_SUMMARY).collect())
    assert scopes == [("broker", 1), ("broker", 2), ("broker", 3), ("broker", 4), ("partition", None)]
    versions = {s.name: lake.version(s) for s in OUTPUTS}

    again = run_lag(spark, lake, log=lambda _: None)
    assert again.runs == [] and again.runs_skipped == 1 and "nothing new" in again.summary()
    assert {s.name: lake.version(s) for s in OUTPUTS} == versions

    # A new run recomputes that run only: run r's inputs did not change.
    _ingest(spark, lake, event_rows(scenario_a_rows(), run_id="r2"), "b2")
    run_timelines(spark, lake, log=lambda _: None)
    third = run_lag(spark, lake, log=lambda _: None)
    assert (third.runs, third.runs_skipped) == (["r2"], 1)
    after = {(r["run_id"], r["follower_id"]): r["verdict"] for r in lake.read(GOLD_LAG_INCIDENTS).collect()}
    assert after == {(run, f): v for run in ("r", "r2") for f, v in verdicts.items()}


def test_lag_before_timelines_names_the_job_to_run_first(spark: SparkSession, lake: EmbeddedLake) -> None:
    # Without the timelines' tables every shrink would be judged missing: an error, not wrong verdicts.
    _ingest(spark, lake, event_rows(scenario_a_rows()), "b1")
    for runs in (None, ["r"]):
        with pytest.raises(MissingInputError, match=r"no silver/_timeline_watermarks table in lake .*: "
                                                    r"run `replog timelines` first"):
            run_lag(spark, lake, runs=runs, log=lambda _: None)
    run_timelines(spark, lake, log=lambda _: None)
    _ingest(spark, lake, event_rows(scenario_a_rows(), run_id="r2"), "b2")  # a run timelines has not seen
    with pytest.raises(MissingInputError, match=r"timelines have not processed run\(s\) r2 in lake .*: "
                                                r"run `replog timelines` first"):
        run_lag(spark, lake, runs=["r2"], log=lambda _: None)
    with pytest.raises(UnknownRunError, match=r"no run 'r9'"):
        run_lag(spark, lake, runs=["r9"], log=lambda _: None)
    assert not any(lake.exists(s) for s in OUTPUTS), "nothing was written"


def test_a_threshold_below_one_ms_is_refused_before_anything_is_written(
        spark: SparkSession, lake: EmbeddedLake, capsys: pytest.CaptureFixture[str]) -> None:
    from jobs import cli
    from jobs.config import ConfigError

    # An empty lake: the threshold is refused before the job looks for its inputs (else MissingInputError).
    for bad in (0, -1):
        with pytest.raises(ConfigError, match=rf"lag_max_ms \(replica.lag.time.max.ms\): expected an integer >= 1, "
                                              rf"got {bad}"):
            run_lag(spark, lake, lag_max_ms=bad, log=lambda _: None)
    for text in ("-1", "0", "abc"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["lag", "--lake", str(lake.root), "--lag-max-ms", text])
        assert exit_info.value.code == 2
        assert f"--lag-max-ms: expected an integer >= 1 (milliseconds), got '{text}'" in capsys.readouterr().err
    assert not any(lake.exists(s) for s in OUTPUTS), "nothing was written"
