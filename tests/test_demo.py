"""The README's main command, end to end on a short scenario, ending in the incident report."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pyspark.sql import SparkSession

from jobs.demo import DEFAULT_SCENARIO, run_demo
from jobs.lake import EmbeddedLake
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE


def test_demo_simulates_ingests_and_checks_a_clean_run(spark, generated_code: SparkSession, tmp_path: Path) -> None:
    """The main command with the jobs' own code generation (the tests' session interprets: tests/conftest.py)."""
    scenario = yaml.safe_load(DEFAULT_SCENARIO.read_text(encoding="utf-8"))
    scenario["duration_ms"] = 3000  # the shipped scenario, shortened
    short = tmp_path / "steady.yaml"
    short.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lines: list[str] = []
    assert run_demo(lambda: (spark, lake), short, tmp_path / "out", log=lines.append) == 0
    text = "\n".join(lines)
    assert "[reconciled]" in text and "quarantined 0" in text
    assert ": 0 error(s), 0 warning(s), 0 info," in text  # the reference checker
    assert "0 errors, 0 warnings, 0 info, exit 0" in text  # the Spark audit
    assert "[7/7] report" in text
    assert "0 errors, 0 warnings, 0 info, 0 lag incidents; 0 partitions flagged, 0 plotted" in text
    # The audit's per-invariant lines stay under its stage's header, acks1_write_lost (info) among them.
    assert re.search(r"^ {8}acks1_write_lost +errors=0 warnings=0 info=0$", text, re.M)
    # Each stage names the command that repeats it, for this lake and this run.
    run = next(line.split(" of run ")[1].split()[0] for line in lines if " of run " in line)
    assert f"[6/7] audit  (replog audit --lake {lake.root} --run {run})" in lines
    html = tmp_path / "lake" / "reports"
    assert lines[-1] == f"report: {next(html.glob('audit-*/report.html'))}", "the demo ends naming the report"
    assert "nothing to plot" in next(html.glob("audit-*/report.md")).read_text(encoding="utf-8")
    events = lake.read(BRONZE_EVENTS)
    assert events.count() > 1000
    assert lake.read(BRONZE_QUARANTINE).count() == 0
    types = {r["event_type"] for r in events.select("event_type").distinct().collect()}
    assert {"append", "fetch", "hw_change", "leader_election", "produce_ack", "broker_config"} <= types


def test_demo_with_a_bad_scenario_names_the_file_before_any_stage(tmp_path: Path, capsys) -> None:
    """Exit 2, one line naming the file and the problem, as `replog simulate` says it; no stage started."""
    from jobs import cli

    wrong_key = tmp_path / "wrongkey.yaml"
    wrong_key.write_text("name: w\nduration_ms: 1000\nclustr: {brokers: 3}\ntopics: [{name: t}]\n", encoding="utf-8")
    cases = [(tmp_path / "nope.yaml", f"cannot read scenario {tmp_path / 'nope.yaml'}: No such file or directory"),
             (wrong_key, f"{wrong_key}: clustr: expected no such key (did you mean 'cluster'?); known keys: "
                         "broker_config, cluster, description, disk, duration_ms, faults, name, nemesis, network, "
                         "output, seed, start_ms, topics, truncation_mode, workload")]
    for scenario, message in cases:
        argv = ["demo", "--scenario", str(scenario), "--out", str(tmp_path / "out"), "--lake", str(tmp_path / "lake")]
        assert cli.main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"replog demo: failed: ScenarioFileError: {message}\n"
    assert not (tmp_path / "out").exists() and not (tmp_path / "lake").exists()
