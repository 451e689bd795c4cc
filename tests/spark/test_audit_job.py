"""`run_audit`: the gold tables it writes, reruns that replace, and the exit codes a scheduler acts on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import jobs.audit
from jobs.audit import exit_code_for, run_audit
from jobs.audit_watermarks import audit_signature, changed_runs, judged_marks, run_marks
from jobs.cli import main as cli_main
from jobs.invariants import IMPLEMENTED, NOT_IMPLEMENTED, SCANS
from jobs.lake import EmbeddedLake
from schemas.audit import GOLD_AUDIT_RUNS, GOLD_AUDIT_WATERMARKS, GOLD_INVARIANT_VIOLATIONS
from schemas.events import BRONZE_EVENTS_SCHEMA
from schemas.spark import to_spark_schema
from schemas.tables import BRONZE_EVENTS, TableSpec
from tests.spark.audit_cases import timed
from tests.spark.test_audit_invariants import append, leader

ACK = dict(event_type="produce_ack", broker_id=1, leader_epoch=1, acks=-1, error="NONE", base_offset=0,
           last_offset=1, batch_checksum=11)
UNCLEAN = dict(event_type="leader_election", broker_id=0, leader_epoch=2, action="unclean", leader_id=2, isr=[2],
               replicas=[1, 2], partition_epoch=2)
LOST = [leader(), append(0, 1, checksum=11), ACK, leader(broker=2, epoch=2)]
"""An acknowledged write the final leader does not hold: an acked_write_lost error."""
EXCUSED = [leader(), append(0, 1, checksum=11), ACK, UNCLEAN, leader(broker=2, epoch=2, isr=[2])]
"""The same loss after an unclean election: a warning."""
ACKS1_LOST = [leader(), append(0, 1, checksum=11), dict(ACK, acks=1), leader(broker=2, epoch=2)]
"""The same loss of an acks=1 write: an acks1_write_lost info finding, which Kafka allows."""


def _bronze(events: Callable[..., DataFrame], runs: dict[str, list[dict[str, Any]]]) -> DataFrame:
    frames = [events(timed(rows), run_id=run) for run, rows in runs.items()]
    df = frames[0]
    for f in frames[1:]:
        df = df.unionByName(f)
    df = df.select("*", F.lit("test.jsonl").alias("_source_file"), (F.col("event_id") + 1).alias("_source_line"),
                   F.lit("batch-1").alias("_ingest_batch"))
    return df.select(*BRONZE_EVENTS_SCHEMA.names)


def test_audit_writes_violations_and_its_run_record_and_a_rerun_replaces(events, lake: EmbeddedLake) -> None:
    lake.append(BRONZE_EVENTS, _bronze(events, {"lost": LOST, "excused": EXCUSED}))
    # Earlier tests' cached plans could be rebuilt by the audit's writes; this test is about its own.
    lake.spark.catalog.clearCache()
    persisted = set(lake.spark.sparkContext._jsc.getPersistentRDDs().keys())
    first = run_audit(lake.spark, lake, log=lambda _: None)
    assert (first.error, first.exit_code, first.errors, first.warnings) == (None, 1, 1, 1)
    # The scans' local checkpoints are released with the audit's caches, not left in the driver's heap
    # (older RDDs may go meanwhile: Spark's cleaner removes those nothing references).
    assert set(lake.spark.sparkContext._jsc.getPersistentRDDs().keys()) - persisted == set()
    assert first.runs == ["excused", "lost"] and first.not_evaluated == NOT_IMPLEMENTED
    # The rerun audits one run, whose only finding is a warning: fail-on warning turns it into exit 1, which
    # fail-on error (the default, checked on the same counts) would not (one audit fewer: they take a while).
    lines: list[str] = []
    again = run_audit(lake.spark, lake, runs=["excused"], fail_on="warning", log=lines.append)
    assert (again.error, again.exit_code, again.errors, again.warnings) == (None, 1, 0, 1)
    assert exit_code_for(again.errors, again.warnings, "error") == 0
    # Progress: a line as each scan finishes, in evaluation order, between the start line and the summary.
    progress = [line.split()[2].rstrip(":") for line in lines if line.startswith("  scan ")]
    assert progress == [s.name for s in SCANS], lines
    assert lines[0].startswith(f"audit {again.audit_id}:") and "scan" in lines[1]
    found = {(r["run_id"], r["invariant"], r["severity"], r["audit_id"])
             for r in lake.read(GOLD_INVARIANT_VIOLATIONS).collect()}
    assert found == {("lost", "acked_write_lost", "error", first.audit_id),
                     ("excused", "acked_write_lost", "warning", again.audit_id)}, \
        "a rerun replaces the rows of the runs it audits, and only those"
    audits = {r["audit_id"]: r for r in lake.read(GOLD_AUDIT_RUNS).collect()}
    assert set(audits) == {first.audit_id, again.audit_id}
    assert (audits[again.audit_id]["runs"], audits[again.audit_id]["fail_on"]) == (["excused"], "warning")
    row = audits[first.audit_id]
    assert (row["exit_code"], row["fail_on"], row["errors"], row["warnings"]) == (1, "error", 1, 1)
    assert row["bronze_version"] == lake.version(BRONZE_EVENTS)
    assert row["not_evaluated"] == list(NOT_IMPLEMENTED)
    per = {c["invariant"]: c for c in row["invariants"]}
    assert {n for n, c in per.items() if c["evaluated"]} == set(IMPLEMENTED)
    assert (per["acked_write_lost"]["errors"], per["acked_write_lost"]["warnings"]) == (1, 1)
    assert all(c["note"] for c in per.values() if not c["evaluated"]), "never-evaluated invariants say why"


def test_a_changed_audit_judges_only_the_runs_with_events_no_audit_of_this_code_judged(
        events, lake: EmbeddedLake, monkeypatch) -> None:
    # A scheduled audit of a growing lake: the runs nothing was added to keep their verdicts.
    lake.append(BRONZE_EVENTS, _bronze(events, {"lost": LOST, "excused": EXCUSED}))
    first = run_audit(lake.spark, lake, changed=True, log=lambda _: None)
    assert (first.runs, first.unchanged, first.errors, first.warnings, first.exit_code) == (
        ["excused", "lost"], [], 1, 1, 1), "never judged: every run"

    def marks() -> dict[str, tuple[int, int, str, str]]:
        return {r["run_id"]: (r["event_count"], r["max_event_id"], r["audit_id"], r["audit_signature"])
                for r in lake.read(GOLD_AUDIT_WATERMARKS).collect()}

    signature = audit_signature()
    # event ids are positions (tests/spark/conftest.py event_rows): 4 and 5 events
    assert marks() == {"lost": (4, 3, first.audit_id, signature), "excused": (5, 4, first.audit_id, signature)}
    tables = (GOLD_INVARIANT_VIOLATIONS, GOLD_AUDIT_RUNS, GOLD_AUDIT_WATERMARKS)
    versions = [lake.version(t) for t in tables]
    lines: list[str] = []
    idle = run_audit(lake.spark, lake, changed=True, log=lines.append)
    assert (idle.runs, idle.unchanged, idle.exit_code, idle.error) == ([], ["excused", "lost"], 0, None)
    assert [lake.version(t) for t in tables] == versions, "nothing new: nothing written"
    assert lines == ["audit: nothing new: 2 run(s) already judged at their current events by this code "
                     f"(bronze version {lake.version(BRONZE_EVENTS)}); nothing written, exit 0"]
    # A later batch adds an event to one run: it alone is judged again, and the exit code is its own.
    later = dict(event_type="broker_lifecycle", broker_id=1, action="start", topic=None, partition=None,
                 event_id=5, ts_ms=2000)
    lake.append(BRONZE_EVENTS, _bronze(events, {"excused": [later]}))
    again = run_audit(lake.spark, lake, changed=True, fail_on="warning", log=lambda _: None)
    assert (again.runs, again.unchanged, again.errors, again.warnings, again.exit_code) == (
        ["excused"], ["lost"], 0, 1, 1)
    found = {(r["run_id"], r["severity"], r["audit_id"]) for r in lake.read(GOLD_INVARIANT_VIOLATIONS).collect()}
    assert found == {("lost", "error", first.audit_id), ("excused", "warning", again.audit_id)}
    assert marks() == {"lost": (4, 3, first.audit_id, signature), "excused": (6, 5, again.audit_id, signature)}
    assert {r["audit_id"]: r["runs"] for r in lake.read(GOLD_AUDIT_RUNS).collect()} == {
        first.audit_id: ["excused", "lost"], again.audit_id: ["excused"]}
    # What another version of the audit's code judged does not count: every run would be judged again.
    assert set(judged_marks(lake, ["excused", "lost"], signature)) == {"excused", "lost"}
    assert judged_marks(lake, ["excused", "lost"], signature + "-other") == {}
    # An audit that fails once it has started judging a run leaves no watermark vouching for that run.
    def boom(*_: Any, **__: Any) -> DataFrame:
        raise RuntimeError("scan failed")

    monkeypatch.setattr(jobs.audit, "audit_violations", boom)
    failed = run_audit(lake.spark, lake, runs=["lost"], log=lambda _: None)
    assert (failed.exit_code, failed.error) == (2, "RuntimeError: scan failed")
    assert set(marks()) == {"excused"}
    assert changed_runs(run_marks(lake.read(BRONZE_EVENTS)), judged_marks(lake, ["excused", "lost"], signature)) == [
        "lost"]


def test_the_audit_signature_follows_the_sources_of_what_judges(tmp_path, monkeypatch) -> None:
    import importlib

    import jobs.audit_watermarks as watermarks

    package = tmp_path / "replog_signature_probe"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "rule.py").write_text("RULE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    signed = watermarks.SIGNED_SOURCES
    monkeypatch.setattr(watermarks, "SIGNED_SOURCES", (*signed, ("replog_signature_probe", "rule.py")))
    before = audit_signature()
    assert before == audit_signature(), "a signature is a function of the sources"
    (package / "rule.py").write_text("RULE = 2\n", encoding="utf-8")
    importlib.invalidate_caches()
    assert audit_signature() != before
    monkeypatch.setattr(watermarks, "SIGNED_SOURCES", (*signed, ("replog_signature_probe", "gone.py")))
    with pytest.raises(FileNotFoundError, match=r"no Python source gone\.py in package replog_signature_probe"):
        audit_signature()  # an unreadable source is not signed as if it were absent


def test_an_audit_whose_sources_cannot_be_read_runs_unsigned_and_vouches_for_nothing(monkeypatch) -> None:
    import jobs.audit_watermarks as watermarks

    def unreadable() -> str:
        raise FileNotFoundError("no Python source config.py in package replication_core")

    monkeypatch.setattr(jobs.audit, "audit_signature", unreadable)
    lines: list[str] = []
    assert jobs.audit._signature(lines.append) == watermarks.UNSIGNED
    assert lines == ["audit: cannot sign the audit's code (no Python source config.py in package replication_core); "
                     "its runs are recorded as unsigned"]
    assert judged_marks(None, ["r"], watermarks.UNSIGNED) == {}, "no lake is read: unsigned matches nothing"  # type: ignore[arg-type]


def test_the_audit_signs_every_module_the_invariants_take_a_rule_from() -> None:
    # A verdict can change with any module jobs.invariants imports; each is signed, or said to decide none.
    import ast
    from pathlib import Path

    import jobs.audit_watermarks as watermarks

    signed = {f"{pkg}.{name.removesuffix('.py')}" if name else pkg for pkg, name in watermarks.SIGNED_SOURCES}
    imported = set()
    for path in Path(watermarks.__file__).with_name("invariants").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
    ours = {m for m in imported if m.split(".")[0] in ("jobs", "replication_core", "schemas")}
    assert ours, "the walk found the invariants' imports"
    unsigned = {m for m in ours if not any(m == s or m.startswith(s + ".") for s in signed)}
    assert unsigned == set(watermarks.UNSIGNED_IMPORTS), unsigned


def test_an_acks1_loss_is_written_and_counted_as_info_and_never_fails(events, lake: EmbeddedLake) -> None:
    """Even with fail-on warning the audit of a run whose only finding is an acks=1 loss exits 0; the finding
    is in gold/invariant_violations with severity info, and gold/audit_runs counts it (`infos`, the note). The lake's
    gold/audit_runs was written before `infos` existed: the audit's row adds the column, the older row reads null."""
    lake.append(BRONZE_EVENTS, _bronze(events, {"acks1": ACKS1_LOST}))
    old = TableSpec(GOLD_AUDIT_RUNS.name, pa.schema([f for f in GOLD_AUDIT_RUNS.schema if f.name != "infos"]))
    lake.append(old, lake.spark.createDataFrame(
        [("before", 1, 2, 0, ["r"], "error", 0, 0, 0, [], [])], to_spark_schema(old.schema)))
    lines: list[str] = []
    result = run_audit(lake.spark, lake, fail_on="warning", log=lines.append)
    assert (result.error, result.exit_code, result.errors, result.warnings, result.infos) == (None, 0, 0, 0, 1)
    assert "0 errors, 0 warnings, 1 info, exit 0" in lines[-1].splitlines()[0]
    assert any(line.split()[:2] == ["acks1_write_lost", "errors=0"] and line.endswith("info=1")
               for line in lines[-1].splitlines()), lines[-1]
    [v] = lake.read(GOLD_INVARIANT_VIOLATIONS).collect()
    assert (v["invariant"], v["severity"], v["replica"], v["offset"], v["expected"], v["actual"]) == (
        "acks1_write_lost", "info", 2, 0, 11, -1)
    rows = {r["audit_id"]: r for r in lake.read(GOLD_AUDIT_RUNS).collect()}
    assert set(rows) == {"before", result.audit_id} and rows["before"]["infos"] is None
    row = rows[result.audit_id]
    assert (row["exit_code"], row["errors"], row["warnings"], row["infos"]) == (0, 0, 0, 1)
    per = {c["invariant"]: c for c in row["invariants"]}
    assert per["acks1_write_lost"]["note"].startswith("info=1 ")
    assert per["acked_write_lost"]["note"] is None


def test_invariants_a_runs_source_cannot_show_are_not_applicable_there_not_passed(events, lake: EmbeddedLake) -> None:
    """A broker log has no appends or acks: acked_write_lost cannot be judged on a `kafka-log` run. Audited with an
    engine run, it is judged on that one only (counted, said so); audited alone, it is n/a, not a clean 0, in the
    printout and in gold/audit_runs. An invariant that applies to broker logs stays judged."""
    bronze = _bronze(events, {"engine": LOST, "logs": LOST})
    lake.append(BRONZE_EVENTS, bronze.withColumn(
        "source", F.when(F.col("run_id") == "logs", F.lit("kafka-log")).otherwise(F.col("source"))))
    lines: list[str] = []
    both = run_audit(lake.spark, lake, fail_on="never", log=lines.append)
    assert both.sources == {"engine": "engine", "logs": "kafka-log"} and both.errors == 1
    assert both.not_applicable["acked_write_lost"] == ["logs"] and "hw_monotonic_leader" not in both.not_applicable
    summary = lines[-1].splitlines()
    assert any(line.split()[:2] == ["acked_write_lost", "errors=1"]
               and line.endswith("(not judged on 1 kafka-log run(s))") for line in summary), lines[-1]
    alone = run_audit(lake.spark, lake, runs=["logs"], fail_on="never", log=lines.append)
    assert alone.errors == 0 and alone.judged_nowhere("acked_write_lost")
    assert not alone.judged_nowhere("hw_monotonic_leader")
    start, summary = [line for line in lines if "invariants evaluated" in line][-1], lines[-1].splitlines()
    nowhere = sum(alone.judged_nowhere(n) for n in IMPLEMENTED)
    assert f"{len(IMPLEMENTED) - nowhere} invariants evaluated" in start
    assert f"{nowhere} not applicable to these runs' sources" in start
    assert any(line.split() == ["acked_write_lost", "n/a", "(kafka-log", "runs", "cannot", "show", "it)"]
               for line in summary), summary
    assert any(line.split()[:2] == ["hw_monotonic_leader", "errors=0"] for line in summary)
    rows = {r["audit_id"]: {c["invariant"]: c for c in r["invariants"]} for r in lake.read(GOLD_AUDIT_RUNS).collect()}
    partly, na = rows[both.audit_id]["acked_write_lost"], rows[alone.audit_id]["acked_write_lost"]
    assert partly["evaluated"] and partly["errors"] == 1
    assert partly["note"].startswith("not applicable to 1 of the 2 audited runs (kafka-log")
    assert not na["evaluated"] and na["note"].startswith("not applicable to the audited runs (kafka-log")
    assert rows[alone.audit_id]["hw_monotonic_leader"]["evaluated"]
    assert rows[alone.audit_id]["hw_monotonic_leader"]["note"] is None


def test_exit_code_for_counts_warnings_only_when_told() -> None:
    assert [exit_code_for(0, 1, f) for f in ("error", "warning", "never")] == [0, 1, 0]
    assert [exit_code_for(1, 0, f) for f in ("error", "warning", "never")] == [1, 1, 0]
    assert [exit_code_for(0, 0, f) for f in ("error", "warning", "never")] == [0, 0, 0]


def test_a_bad_fail_on_option_is_a_job_failure_and_writes_nothing(events, lake: EmbeddedLake) -> None:
    # fail-on warning on a warnings-only run is part of the rerun test above (audits take a while).
    lake.append(BRONZE_EVENTS, _bronze(events, {"excused": EXCUSED}))
    failed = run_audit(lake.spark, lake, fail_on="sometimes", log=lambda _: None)
    assert failed.exit_code == 2 and failed.error is not None and "fail_on" in failed.error
    assert not lake.exists(GOLD_AUDIT_RUNS) and not lake.exists(GOLD_INVARIANT_VIOLATIONS), "nothing was written"


def test_an_unknown_run_or_a_lake_without_bronze_fails_the_audit(events, lake: EmbeddedLake) -> None:
    # A scheduled audit with a typo in its run id or lake path must fail, not pass as a clean audit of nothing.
    lines: list[str] = []
    empty = run_audit(lake.spark, lake, log=lines.append)
    assert empty.exit_code == 2 and empty.error is not None
    assert "no bronze/replication_events table in lake" in empty.error and "run `replog ingest` first" in empty.error
    assert not any("Traceback" in line for line in lines), "the one-line reason, not a traceback"
    lake.append(BRONZE_EVENTS, _bronze(events, {"lost": LOST}))
    typo = run_audit(lake.spark, lake, runs=["lsot"], fail_on="never", log=lambda _: None)
    assert typo.exit_code == 2
    assert typo.error == (f"UnknownRunError: no run 'lsot' in bronze/replication_events of lake {lake.root}; "
                          "it holds: lost")
    assert not lake.exists(GOLD_AUDIT_RUNS) and not lake.exists(GOLD_INVARIANT_VIOLATIONS), "nothing was written"


def test_the_audit_command_prints_its_summary_once_and_a_failure_on_stderr(events, lake: EmbeddedLake,
                                                                           tmp_path, capsys) -> None:
    config = tmp_path / "conf.yaml"
    config.write_text(f"lake: {lake.root}\ndelta_backend: embedded\nspark:\n  shuffle_partitions: 2\n"
                      "  conf:\n    spark.sql.session.timeZone: UTC\n", encoding="utf-8")
    lake.append(BRONZE_EVENTS, _bronze(events, {"lost": LOST}))
    assert cli_main(["audit", "--config", str(config), "--run", "lost"]) == 1
    out = capsys.readouterr().out
    assert out.count("acked_write_lost") >= 1 and out.count(" 1 runs, bronze version ") == 2  # start + summary
    assert out.count("exit 1 (fail-on error)") == 1, "the summary is printed once"
    # The run was judged by this code at these events: a scheduled `--changed` audit has nothing to do.
    assert cli_main(["audit", "--config", str(config), "--run", "lost", "--changed"]) == 0
    assert "audit: nothing new: 1 run(s) already judged" in capsys.readouterr().out
    assert cli_main(["audit", "--config", str(config), "--run", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"replog audit: failed: UnknownRunError: no run 'nope' in bronze/replication_events of lake {lake.root}; "
        "it holds: lost"]
    assert "Traceback" not in captured.out and captured.out.count("FAILED") == 1
