"""`replog report` on a hand-built lake: which partitions it flags and plots, what the report says, the caps.

The lake holds one run ("r1", 20 s) with three flagged partitions — t-0 an acked_write_lost error, t-1 an
hw_within_log warning, t-2 a lag incident with verdict missing — one clean partition (t-3) and a run-level
violation, written straight into the silver and gold tables (no ingest / timelines / audit, to stay fast).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.cli import main as cli_main
from jobs.config import ReportConfig
from jobs.fault_plot import FaultSpan
from jobs.incident_report import (
    FLAGGED_SCHEMA,
    ReportError,
    flagged_partitions,
    incident_fetch_failures,
    isr_series,
    leader_changes,
    loss_spans,
    offset_series,
    partition_pictures,
    plot_overviews,
    produce_outcomes,
    produce_silences,
    run_report,
    run_settings,
    section_settings,
    violations_naming,
    with_fetch_failures,
    with_leader_deposed,
    worst_first,
)
from jobs.lake import EmbeddedLake
from jobs.overview_plot import ClusterOverview
from jobs.plots import PartitionPlot, headline
from jobs.report_document import FaultRow
from jobs.runs import UnknownRunError
from replication_core.checker.checker import unclean_excuse_text
from schemas.audit import GOLD_AUDIT_RUNS, GOLD_INVARIANT_VIOLATIONS
from schemas.events import BRONZE_EVENTS_SCHEMA
from schemas.spark import to_spark_schema
from schemas.tables import (
    BRONZE_EVENTS,
    GOLD_LAG_INCIDENTS,
    SILVER_PARTITION_STATE,
    SILVER_REPLICA_OFFSETS,
    TableSpec,
)
from tests.spark.conftest import make_events

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
QUIET = {"log": lambda _: None}
T0 = 1_700_000_000_000
"""The run's first event (epoch ms): the report's times are seconds after it."""


def frame(spark: SparkSession, spec: TableSpec, rows: list[dict[str, Any]]) -> DataFrame:
    """`rows` as a DataFrame of the table's schema (missing columns null)."""
    schema = to_spark_schema(spec.schema)
    return spark.createDataFrame([{f.name: r.get(f.name) for f in schema} for r in rows], schema)


def _bronze(spark: SparkSession) -> DataFrame:
    rows = [
        dict(event_id=0, ts_ms=T0, broker_id=1, event_type="broker_lifecycle", action="start", topic=None,
             partition=None),
        dict(event_id=1, ts_ms=T0 + 1_000, broker_id=2, event_type="append", topic="t", partition=0, leader_epoch=1,
             base_offset=0, last_offset=4, leo=5),
        dict(event_id=2, ts_ms=T0 + 6_000, broker_id=2, event_type="broker_lifecycle", action="crash", topic=None,
             partition=None),
        dict(event_id=3, ts_ms=T0 + 20_000, broker_id=1, event_type="hw_change", topic="t", partition=0,
             leader_epoch=2, old_hw=3, hw=4),
        # Follower 2's fetches of t-2 from leader 1: one refused before its incident's last caught-up instant (6 s),
        # two unanswered after it.
        *[dict(event_id=4 + i, ts_ms=T0 + t, broker_id=2, event_type="fetch_response", topic="t", partition=2,
               leader_epoch=2, leader_id=1, fetcher_id=0, fetch_offset=5, error=e)
          for i, (t, e) in enumerate(((5_000, "NOT_LEADER_OR_FOLLOWER"), (7_000, "NETWORK_EXCEPTION"),
                                      (9_000, "NETWORK_EXCEPTION")))],
    ]
    df = make_events(spark, rows, run_id="r1")
    df = df.select("*", F.lit("test.jsonl").alias("_source_file"), (F.col("event_id") + 1).alias("_source_line"),
                   F.lit("batch-1").alias("_ingest_batch"))
    return df.select(*BRONZE_EVENTS_SCHEMA.names)


def _offsets(partition: int) -> list[dict[str, Any]]:
    """Leader 2 and follower 1 append five records; from 6 s broker 1 leads (epoch 2) and truncates to 3."""
    base = dict(run_id="r1", topic="t", partition=partition)
    steps = [(2, 0, 1_000, "leader", 1, 0, 5), (1, 0, 2_000, "follower", 1, 0, 5), (2, 1_000, None, "leader", 1, 5, 5),
             (1, 2_000, 6_000, "follower", 1, 5, 5), (1, 6_000, None, "leader", 2, 3, 3)]
    return [dict(base, replica_id=r, valid_from_ms=T0 + f, valid_to_ms=None if t is None else T0 + t, role=role,
                 leader_epoch=e, log_start_offset=0, high_watermark=hw, log_end_offset=leo, event_id=10 + i)
            for i, (r, f, t, role, e, hw, leo) in enumerate(steps)]


def _state(partition: int) -> list[dict[str, Any]]:
    base = dict(run_id="r1", topic="t", partition=partition, replicas=[1, 2], replication_factor=2)
    # At 6 s the controller elects broker 1 with ISR [1]: an ISR shrink no leader proposed.
    return [dict(base, valid_from_ms=T0, valid_to_ms=T0 + 6_000, leader_id=2, leader_epoch=1, isr=[1, 2], isr_size=2,
                 event_id=20, cause="leader_election:clean"),
            dict(base, valid_from_ms=T0 + 6_000, valid_to_ms=None, leader_id=1, leader_epoch=2, isr=[1], isr_size=1,
                 event_id=21, cause="leader_election:clean")]


def _violation(partition: int | None, invariant: str, severity: str, message: str, **over: Any) -> dict[str, Any]:
    return dict(dict(run_id="r1", invariant=invariant, severity=severity, topic=None if partition is None else "t",
                     partition=partition, replica=1, ts_ms=T0 + 20_000, event_id=3, offset=3, expected=4, actual=3,
                     evidence=[1, 3], message=message, audit_id="audit-test"), **over)


CHECKSUM = 1682153688901572302
VIOLATIONS = [
    # An end-of-run check, as the audit writes it: no detecting event (-1); the final leader lacks offset 3 (-1).
    _violation(0, "acked_write_lost", "error", "write acknowledged at 3..4 by broker 2 is not on final leader 1",
               event_id=-1, expected=CHECKSUM, actual=-1),
    _violation(1, "hw_within_log", "warning", "HW 6 above LEO 5 on broker 1", offset=None),
    _violation(None, "event_stream_consistent", "warning", "a run-level finding"),
]
INCIDENT = dict(run_id="r1", topic="t", partition=2, follower_id=2, leader_id=1, leader_epoch=2, start_ms=T0 + 8_000,
                end_ms=None, last_caught_up_time_ms=T0 + 6_000, lag_max_ms=2_000, deadline_ms=T0 + 9_000,
                peak_time_lag_ms=14_000, peak_message_lag=7, in_isr_at_start=True, verdict="missing")


def _audit_row(spark: SparkSession, errors: int, warnings: int) -> DataFrame:
    invariants = [dict(invariant="acked_write_lost", severity="error", evaluated=True, errors=errors, warnings=0,
                       note=None),
                  dict(invariant="truncation_safety", severity="error", evaluated=False, errors=0, warnings=0,
                       note="not implemented in the Spark audit yet")]
    return frame(spark, GOLD_AUDIT_RUNS, [dict(
        audit_id="audit-test", started_at_ms=T0, duration_ms=1, bronze_version=0, runs=["r1"], fail_on="error",
        exit_code=1 if errors else 0, errors=errors, warnings=warnings, invariants=invariants,
        not_evaluated=["truncation_safety"])])


@pytest.fixture(scope="module")
def flagged_lake(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> EmbeddedLake:
    """Three flagged partitions (t-0 error, t-1 warning, t-2 lag incident), t-3 clean, one run-level finding.

    Shared by the tests of this module (built once: six commits); they only read it.
    """
    lake = EmbeddedLake(spark, str(tmp_path_factory.mktemp("flagged") / "lake"))
    lake.append(BRONZE_EVENTS, _bronze(spark))
    lake.append(SILVER_REPLICA_OFFSETS, frame(spark, SILVER_REPLICA_OFFSETS,
                                              [r for p in range(4) for r in _offsets(p)]))
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, [r for p in range(4) for r in _state(p)]))
    lake.append(GOLD_INVARIANT_VIOLATIONS, frame(spark, GOLD_INVARIANT_VIOLATIONS, VIOLATIONS))
    lake.append(GOLD_LAG_INCIDENTS, frame(spark, GOLD_LAG_INCIDENTS, [INCIDENT]))
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, errors=1, warnings=2))
    return lake


def _sections(md: str) -> list[str]:
    return re.findall(r"^### (.*)$", md, re.M)


def test_report_plots_exactly_the_flagged_partitions_worst_first(flagged_lake: EmbeddedLake) -> None:
    result = run_report(flagged_lake.spark, flagged_lake, ReportConfig(), **QUIET)
    assert result.out_dir == Path(flagged_lake.root) / "reports" / "audit-test"
    assert (result.flagged, result.plotted, result.errors, result.warnings, result.infos, result.incidents) == (
        3, 3, 1, 2, 0, 1)
    md = result.markdown_path.read_text(encoding="utf-8")
    assert _sections(md) == ["t-0 (run r1)", "t-1 (run r1)", "t-2 (run r1)"], "errors, then warnings, then lag"
    for v in VIOLATIONS:
        assert v["message"] in md
    assert "| acked_write_lost | error | yes | 1 | 0 | 0 |" in md
    # No detecting event: a dash, not -1; the checksum as the message and `replog check` print it.
    assert (f"| acked_write_lost | error | 1 | 20.000 (found at the end of the run) | – | 3 | {CHECKSUM} | -1 "
            "| 1 (append") in md
    assert "| truncation_safety | error | no | – | – | – |" in md and "`truncation_safety`" in md
    # The follower's last caught-up instant and the shrink's deadline beside the incident; the run's origin in UTC.
    assert "| missing | 1 |" in md
    assert "| r1 | t-2 | 2 | 1 (2) | 6.000 | 8.000 | ongoing | 14,000 | 7 | 2,000 | 9.000 | – | missing |" in md
    assert "Times are seconds since each run's first event: r1 at 2023-11-14 22:13:20 UTC." in md
    # What the follower's fetches met since it was last caught up: two requests without an answer.
    assert md.count("| missing | 2 (NETWORK_EXCEPTION) |") == 2, "in the run's list and in t-2's section"
    # Evidence looked up in bronze, with times relative to the run's first event.
    assert "1 (append by broker 2 at 1.000 s); 3 (hw_change by broker 1 at 20.000 s)" in md
    # Under the pictures of t-0 and t-1, the key to their numbered evidence rings.
    assert md.count("Numbered evidence in the picture: 1. append by broker 2 at 1.000 s, event 1; 2. hw_change by "
                    "broker 1 at 20.000 s, event 3.") == 2
    assert "No violations" not in md
    # The run's cluster overview first, then one picture per flagged partition.
    assert [p.name for p in result.pngs] == ["overview-001-r1.png", "p001-r1-t-0.png", "p002-r1-t-1.png",
                                             "p003-r1-t-2.png"]
    assert md.index("## Cluster overview") < md.index("## Audit summary")
    assert "![Cluster overview of run r1](overview-001-r1.png)" in md
    for png in result.pngs:
        assert png.parent == result.out_dir and png.name in md
        data = png.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 20_000
    page = result.html_path.read_text(encoding="utf-8")
    assert page.count("<img ") == 4 and "HW 6 above LEO 5 on broker 1" in page
    assert '<img src="overview-001-r1.png" alt="Cluster overview of run r1">' in page
    assert str(result.html_path) in result.summary()


def test_partition_cap_is_honoured_and_reported(flagged_lake: EmbeddedLake, tmp_path: Path) -> None:
    out = tmp_path / "capped"
    result = run_report(flagged_lake.spark, flagged_lake, ReportConfig(max_partitions=1, max_rows=1), out=out,
                        **QUIET)
    assert result.out_dir == out and (result.flagged, result.plotted) == (3, 1)
    assert sorted(p.name for p in out.glob("*.png")) == ["overview-001-r1.png", "p001-r1-t-0.png"]
    md = result.markdown_path.read_text(encoding="utf-8")
    assert _sections(md) == ["t-0 (run r1)"]
    assert "3 partition(s) have a violation, a lag incident or an unclean election; 1 plotted" in md
    assert "2 more flagged partition(s) not plotted (cap report.max_partitions = 1)" in md
    assert "(2 more not plotted)" in result.summary()


def test_the_partitions_named_on_the_command_line_are_drawn_too(flagged_lake: EmbeddedLake, tmp_path: Path,
                                                                capsys) -> None:
    # `replog report --partition t-3 --partition t-0`: the flagged ones worst first, then clean t-3 (named twice,
    # drawn once); t-0, flagged and named, says so.
    result = run_report(flagged_lake.spark, flagged_lake, ReportConfig(), out=tmp_path / "asked",
                        partitions=[("t", 3), ("t", 0), ("t", 3)], **QUIET)
    assert (result.flagged, result.plotted, result.asked) == (3, 4, 1)
    md = result.markdown_path.read_text(encoding="utf-8")
    assert _sections(md) == ["t-0 (run r1)", "t-1 (run r1)", "t-2 (run r1)", "t-3 (run r1)"]
    assert [p.name for p in result.pngs][-1] == "p004-r1-t-3.png"
    assert ("3 partition(s) have a violation, a lag incident or an unclean election; 3 plotted (worst first, cap "
            "report.max_partitions = 20); 1 partition(s) nothing flagged drawn as asked (--partition).") in md
    t3 = md[md.index("### t-3 (run r1)"):]
    assert t3.startswith("### t-3 (run r1)\n\n0 error(s), 0 warning(s), 0 lag incident(s).\n\nDrawn as asked "
                         "(`--partition`): nothing flagged it (no violation, lag incident or unclean election).")
    assert md.count("Drawn as asked") == 2 and "Drawn as asked (`--partition`).\n" in md  # t-0's
    assert "3 plotted, 1 more drawn as asked (--partition)" in result.summary()
    assert "nothing flagged it" in result.html_path.read_text(encoding="utf-8")
    # Beyond the cap: a flagged partition named is drawn, and no longer counted as left out.
    capped = run_report(flagged_lake.spark, flagged_lake, ReportConfig(max_partitions=1), out=tmp_path / "capped",
                        partitions=[("t", 2)], **QUIET)
    assert (capped.plotted, capped.asked, capped.not_plotted) == (2, 1, 1)
    md = capped.markdown_path.read_text(encoding="utf-8")
    assert _sections(md) == ["t-0 (run r1)", "t-2 (run r1)"]
    assert ("3 partition(s) have a violation, a lag incident or an unclean election; 1 plotted (worst first, cap "
            "report.max_partitions = 1), 1 more drawn as asked (--partition), 1 more not plotted.") in md
    assert "1 more flagged partition(s) not plotted" in md
    assert "1 plotted (1 more not plotted), 1 more drawn as asked (--partition)" in capped.summary()
    # A partition no reported run has is an error before anything is drawn; so is a malformed name.
    with pytest.raises(ReportError, match=r"--partition t-9, u-0: no timeline of it in the reported run\(s\) r1 "):
        run_report(flagged_lake.spark, flagged_lake, ReportConfig(), out=tmp_path / "typo",
                   partitions=[("t", 9), ("t", 0), ("u", 0)], **QUIET)
    assert not list((tmp_path / "typo").glob("*"))
    for name in ("orders", "orders-99999999999", "orders-\u0663"):
        with pytest.raises(SystemExit) as exit_info:
            cli_main(["report", "--partition", name])
        assert exit_info.value.code == 2
        assert (f"argument --partition: expected TOPIC-PARTITION, e.g. orders-3 (partition 0 to 2147483647), got "
                f"{name!r}") in capsys.readouterr().err


def test_a_clean_run_draws_only_the_partitions_named(spark: SparkSession, tmp_path: Path) -> None:
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lake.append(BRONZE_EVENTS, _bronze(spark))
    lake.append(SILVER_REPLICA_OFFSETS, frame(spark, SILVER_REPLICA_OFFSETS, _offsets(0)))
    # t-1 has only its ISR and leaders (a broker log with ISR lines alone): it has a picture all the same.
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, _state(0) + _state(1)))
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, errors=0, warnings=0))
    result = run_report(spark, lake, ReportConfig(), out=tmp_path / "out", partitions=[("t", 0), ("t", 1)], **QUIET)
    assert (result.flagged, result.plotted, result.asked) == (0, 2, 2)
    md = result.markdown_path.read_text(encoding="utf-8")
    assert ("No violations, lag incidents or unclean elections in a partition: 2 partition(s) nothing flagged drawn "
            "as asked (--partition).") in md
    assert "No violations and no lag incidents in any partition." in md
    assert _sections(md) == ["t-0 (run r1)", "t-1 (run r1)"]
    assert "![t-0 (run r1)](p001-r1-t-0.png)" in md


def test_a_flood_of_one_invariant_does_not_hide_another_behind_the_cap(spark: SparkSession, tmp_path: Path) -> None:
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lake.append(BRONZE_EVENTS, _bronze(spark))
    lake.append(SILVER_REPLICA_OFFSETS, frame(spark, SILVER_REPLICA_OFFSETS, _offsets(0)))
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, _state(0)))
    # Three hw_within_log at offsets apart (three streaks); two alike lost writes at 3 and 4, one streak (one row).
    flood = [_violation(0, "hw_within_log", "warning", f"HW above LEO #{i}", ts_ms=T0 + 1_000 * i, event_id=i,
                        offset=10 * i) for i in range(1, 4)]
    lost = [_violation(0, "acked_write_lost", "warning", f"the write that matters at {o} (1 offsets)",
                       ts_ms=T0 + 10_000, event_id=-1, offset=o) for o in (3, 4)]
    lake.append(GOLD_INVARIANT_VIOLATIONS, frame(spark, GOLD_INVARIANT_VIOLATIONS, [*flood, *lost]))
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, errors=0, warnings=5))
    result = run_report(spark, lake, ReportConfig(max_rows=2), out=tmp_path / "out", **QUIET)
    md = result.markdown_path.read_text(encoding="utf-8")
    # Two rows: each invariant's earliest, although three hw_within_log come before the acked_write_lost.
    assert "HW above LEO #1" in md and "the write that matters at 3" in md and "HW above LEO #2" not in md
    assert "| 3..4 (2 violations) |" in md
    assert "2 more violations not listed (cap report.max_rows; each invariant's earliest are listed first)." in md


def test_partition_pictures_draws_any_partition_in_the_order_given(flagged_lake: EmbeddedLake, tmp_path: Path) -> None:
    out = tmp_path / "chosen"
    pngs = [p.png for p in partition_pictures(flagged_lake.spark, flagged_lake,
                                              [("r1", "t", 3), ("r1", "t", 0), ("r1", "t", 3)], out, **QUIET)]
    # t-3 has no violation and no incident, and is drawn all the same; the repeated key is drawn once.
    assert [p.name for p in pngs] == ["p001-r1-t-3.png", "p002-r1-t-0.png"]
    assert all(p.parent == out and p.read_bytes()[:8] == PNG_MAGIC for p in pngs)
    assert partition_pictures(flagged_lake.spark, flagged_lake, [], out, **QUIET) == []
    # With the keys to their numbered evidence: none on clean t-3; t-0's violation cites events 1 and 3.
    clean, flagged = partition_pictures(flagged_lake.spark, flagged_lake, [("r1", "t", 3), ("r1", "t", 0)], out,
                                        **QUIET)
    assert (clean.png.name, clean.evidence_key, clean.key_text()) == ("p001-r1-t-3.png", (), None)
    assert [(r.number, r.label, r.event_ids) for r in flagged.evidence_key] == [
        (1, "append by broker 2", (1,)), (2, "hw_change by broker 1", (3,))]


def test_a_run_bronze_does_not_hold_is_an_error(flagged_lake: EmbeddedLake, tmp_path: Path) -> None:
    with pytest.raises(UnknownRunError, match=r"no run 'r2' in bronze/replication_events of lake .*; it holds: r1"):
        run_report(flagged_lake.spark, flagged_lake, ReportConfig(), runs=["r1", "r2"], out=tmp_path / "x", **QUIET)


def test_partition_pictures_of_an_unknown_run_or_partition_is_an_error(flagged_lake: EmbeddedLake,
                                                                       tmp_path: Path) -> None:
    with pytest.raises(UnknownRunError, match=r"no run 'r9'"):
        partition_pictures(flagged_lake.spark, flagged_lake, [("r9", "t", 0)], tmp_path, **QUIET)
    with pytest.raises(ReportError, match=r"no timeline for t-9 of run r1 in silver/replica_offsets of lake "):
        partition_pictures(flagged_lake.spark, flagged_lake, [("r1", "t", 0), ("r1", "t", 9)], tmp_path, **QUIET)
    assert not list(tmp_path.glob("*.png"))


def test_partition_pictures_needs_the_timelines(spark: SparkSession, tmp_path: Path) -> None:
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lake.append(BRONZE_EVENTS, _bronze(spark))
    with pytest.raises(ReportError, match=r"no silver/replica_offsets or silver/partition_state in lake .*: "
                                          r"run `replog timelines` first"):
        partition_pictures(spark, lake, [("r1", "t", 0)], tmp_path / "out", **QUIET)


def test_a_lake_without_violations_or_incidents_says_so(spark: SparkSession, tmp_path: Path) -> None:
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lake.append(BRONZE_EVENTS, _bronze(spark))
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, errors=0, warnings=0))
    result = run_report(spark, lake, ReportConfig(), out=tmp_path / "clean", **QUIET)
    assert (result.flagged, result.plotted, result.pngs) == (0, 0, [])
    md = result.markdown_path.read_text(encoding="utf-8")
    assert "No violations, lag incidents or unclean elections in a partition: nothing to plot." in md
    assert "No lag incidents." in md and _sections(md) == []
    assert "nothing to plot" in result.html_path.read_text(encoding="utf-8")


def test_the_overview_shows_the_isr_shrinks_by_the_controllers_elections(
        flagged_lake: EmbeddedLake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[ClusterOverview] = []
    monkeypatch.setattr("jobs.incident_report.plot_overview", lambda data, path: drawn.append(data) or path)
    plot_overviews(flagged_lake.spark, flagged_lake, ["r1"], tmp_path, **QUIET)
    (data,) = drawn
    # The four partitions' election at 6 s removed broker 2 from their ISR; no leader shrank one.
    assert [(int(r.bucket) * data.bucket_ms <= 6_000 < (int(r.bucket) + 1) * data.bucket_ms, int(r.shrinks))
            for r in data.controller_shrinks.itertuples()] == [(True, 4)]
    assert data.churn.empty
    # The title's counts: the partitions bronze names (t-0 and t-2; a broker's start or crash names none) and the
    # brokers (1 and 2, named by their events; the state's assignment names no other).
    assert (data.partitions, data.broker_count) == (2, 2)


def test_a_run_with_no_state_election_or_crash_gets_no_overview(spark: SparkSession, tmp_path: Path) -> None:
    # A run read from logs that tell only of failed fetches: an empty dashboard would say nothing.
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lake.append(BRONZE_EVENTS, frame(spark, BRONZE_EVENTS, [dict(
        run_id="quiet", schema_version="1.4", source="kafka-log", event_id=0, ts_ms=T0, broker_id=1,
        event_type="fetch_response", topic="t", partition=0, error="NETWORK_EXCEPTION", _source_file="server.log",
        _source_line=1, _ingest_batch="b")]))
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, [dict(
        run_id="other", topic="t", partition=0, valid_from_ms=T0, leader_id=1, leader_epoch=1, isr=[1],
        replicas=[1], event_id=0)]))
    lines: list[str] = []
    assert plot_overviews(spark, lake, ["quiet"], tmp_path / "out", log=lines.append) == []
    assert lines == ["report: no cluster overview of quiet: no partition state, election, broker crash or fault "
                     "to draw"]


def test_the_overview_lanes_get_the_runs_broker_faults(spark: SparkSession, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Only faults to draw (no partition state, crash or election in this run): a pause of broker 2, a partition
    # of broker 1 from broker 3 that nothing heals, and a last event at 10 s that ends the run.
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    base = dict(run_id="faulty", schema_version="1.9", source="engine", topic=None, partition=None,
                _source_file="events.jsonl", _ingest_batch="b")
    lake.append(BRONZE_EVENTS, frame(spark, BRONZE_EVENTS, [
        dict(base, event_id=0, ts_ms=T0, broker_id=1, event_type="broker_lifecycle", action="start", _source_line=1),
        dict(base, event_id=1, ts_ms=T0 + 1_000, broker_id=2, event_type="broker_fault", action="gc_pause",
             duration_ms=500, _source_line=2),
        dict(base, event_id=2, ts_ms=T0 + 2_000, broker_id=1, event_type="broker_fault", action="network_partition",
             peers=[3], direction="both", _source_line=3),
        dict(base, event_id=3, ts_ms=T0 + 10_000, broker_id=3, event_type="broker_lifecycle", action="start",
             _source_line=4)]))
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, [dict(
        run_id="other", topic="t", partition=0, valid_from_ms=T0, leader_id=1, leader_epoch=1, isr=[1],
        replicas=[1], event_id=0)]))
    drawn: list[ClusterOverview] = []
    monkeypatch.setattr("jobs.incident_report.plot_overview", lambda data, path: drawn.append(data) or path)
    (overview,) = plot_overviews(spark, lake, ["faulty"], tmp_path / "out", **QUIET)
    (data,) = drawn
    assert data.faults == (FaultSpan(1.0, 1.5, 2, "gc_pause"),
                           FaultSpan(2.0, 10.0, 1, "network_partition", open=True, peers=(3,), direction="both"))
    assert data.faults_total == 2 and data.brokers == (1, 2)  # a start is no mark: broker 3 has nothing to draw
    assert data.broker_count == 3, "but the run names it: the title counts it"
    # The report lists them under the picture, with the partition's peers (no election: no node is known to be a
    # controller).
    assert overview.run_id == "faulty" and overview.faults_total == 2
    assert overview.faults == (FaultRow(2, "gc_pause", 1.0, 1.5),
                               FaultRow(1, "network_partition", 2.0, 10.0, True, "3", "both"))


def test_a_partitions_picture_and_section_get_its_replicas_broker_faults(spark: SparkSession, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # t-0's replicas are brokers 1 and 2. Controller 1000 elects broker 2 at 0 s; broker 2 pauses at 3 s for 500 ms;
    # broker 1 is cut off from broker 2 and the controller at 4 s (what it sends is lost) until its heal at 5 s;
    # broker 9, no replica of t-0, pauses at 3.5 s. The run ends at 20 s.
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    faults = make_events(spark, [
        dict(event_id=100, ts_ms=T0, broker_id=1000, event_type="leader_election", action="clean", topic="t",
             partition=0, leader_id=2, leader_epoch=1),
        dict(event_id=101, ts_ms=T0 + 3_000, broker_id=2, event_type="broker_fault", action="gc_pause",
             duration_ms=500),
        dict(event_id=102, ts_ms=T0 + 3_500, broker_id=9, event_type="broker_fault", action="gc_pause",
             duration_ms=200),
        dict(event_id=103, ts_ms=T0 + 4_000, broker_id=1, event_type="broker_fault", action="network_partition",
             peers=[1000, 2], direction="outbound"),
        dict(event_id=104, ts_ms=T0 + 5_000, broker_id=1, event_type="broker_fault", action="network_heal",
             peers=[2, 1000], direction="outbound")], run_id="r1").select(
        "*", F.lit("test.jsonl").alias("_source_file"), (F.col("event_id") + 1).alias("_source_line"),
        F.lit("batch-1").alias("_ingest_batch")).select(*BRONZE_EVENTS_SCHEMA.names)
    lake.append(BRONZE_EVENTS, _bronze(spark).unionByName(faults))
    lake.append(SILVER_REPLICA_OFFSETS, frame(spark, SILVER_REPLICA_OFFSETS, _offsets(0)))
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, _state(0)))
    lake.append(GOLD_INVARIANT_VIOLATIONS, frame(spark, GOLD_INVARIANT_VIOLATIONS, VIOLATIONS[:1]))
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, errors=1, warnings=0))
    drawn: list[PartitionPlot] = []
    monkeypatch.setattr("jobs.incident_report.plot_partition", lambda data, path: drawn.append(data) or path)
    result = run_report(spark, lake, ReportConfig(), out=tmp_path / "out", **QUIET)
    (data,) = drawn
    # The replicas' faults go to the picture, the heal ending the partition; broker 9's does not; 1000 elected.
    assert data.faults == (FaultSpan(3.0, 3.5, 2, "gc_pause"),
                           FaultSpan(4.0, 5.0, 1, "network_partition", peers=(1000, 2), direction="outbound"))
    assert (data.faults_total, data.controllers) == (2, (1000,))
    md = result.markdown_path.read_text(encoding="utf-8")
    overview, section = md.split("\n### t-0 (run ")
    assert "| broker | fault | start (s) | end (s) | lasted (ms) | cut off from | direction |" in section
    assert "| 2 | gc pause | 3.000 | 3.500 | 500 | – | – |" in section
    assert "| 1 | network partition | 4.000 | 5.000 | 1,000 | 2, controller 1000 | outbound |" in section
    assert "| 9 |" not in section
    # The cluster overview lists every broker's faults, broker 9's too.
    assert "| 9 | gc pause | 3.500 | 3.700 | 200 | – | – |" in overview
    assert "| 1 | network partition | 4.000 | 5.000 | 1,000 | 2, controller 1000 | outbound |" in overview


def test_no_audit_is_a_one_line_failure_with_exit_code_2(spark: SparkSession, tmp_path: Path, capsys) -> None:
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    with pytest.raises(ReportError, match=r"no audit in the lake at .*: run `replog audit` first"):
        run_report(spark, lake, ReportConfig(), **QUIET)
    # Through the CLI, with the test session's own settings (getOrCreate reuses it).
    config = tmp_path / "conf.yaml"
    config.write_text(f"lake: {tmp_path / 'lake'}\ndelta_backend: embedded\nspark:\n  shuffle_partitions: 2\n"
                      "  conf:\n    spark.sql.session.timeZone: UTC\n", encoding="utf-8")
    assert cli_main(["report", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"replog report: failed: ReportError: no audit in the lake at {tmp_path / 'lake'}: "
                   "run `replog audit` first"]


def test_a_remote_lake_needs_a_local_output_folder(flagged_lake: EmbeddedLake) -> None:
    with pytest.raises(ReportError, match=r"'s3a://bucket/reports' is not a local folder"):
        run_report(flagged_lake.spark, flagged_lake, ReportConfig(out="s3a://bucket/reports"), **QUIET)


def test_an_output_folder_that_cannot_be_made_is_named_before_any_plot(flagged_lake: EmbeddedLake,
                                                                       tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    for out, why in [(tmp_path / "a-file", "is an existing file"),
                     (tmp_path / "a-file" / "report", "is an existing file, not a directory")]:
        with pytest.raises(ReportError, match=rf"^--out {out}: expected a directory for the report, but "
                                              rf"{tmp_path / 'a-file'} {why}$"):
            run_report(flagged_lake.spark, flagged_lake, ReportConfig(), out=str(out), **QUIET)
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"], "no plot was drawn"


def _acks1_lost(partition: int, offset: int) -> dict[str, Any]:
    """An acks=1 write lost at `offset`, as the audit's end-of-run check writes it (severity info)."""
    return _violation(partition, "acks1_write_lost", "info", f"acks=1 write acknowledged at {offset}..{offset} by "
                      f"broker 2 is not on final leader 1 at {offset} (1 offsets)", event_id=-1, offset=offset,
                      expected=CHECKSUM, actual=-1)


def test_flagged_partitions_counts_errors_warnings_infos_and_bad_incidents(spark: SparkSession) -> None:
    violations = frame(spark, GOLD_INVARIANT_VIOLATIONS, [*VIOLATIONS, _violation(0, "hw_within_log", "error", "m"),
                                                          _acks1_lost(0, 3)])
    incidents = frame(spark, GOLD_LAG_INCIDENTS, [INCIDENT, dict(INCIDENT, partition=0, verdict="recovered")])
    # (errors, warnings, infos, incidents, bad incidents, unclean elections)
    expected = spark.createDataFrame([("r1", "t", 0, 2, 0, 1, 1, 0, 0), ("r1", "t", 1, 0, 1, 0, 0, 0, 0),
                                      ("r1", "t", 2, 0, 0, 0, 1, 1, 0)], FLAGGED_SCHEMA)
    assert_df_equality(flagged_partitions(violations, incidents), expected, ignore_row_order=True,
                       ignore_nullable=True)
    # An unclean election flags its partition on its own (t-3), and counts where there is more (t-0, twice).
    elections = spark.createDataFrame([("r1", "t", 0), ("r1", "t", 0), ("r1", "t", 3)],
                                      "run_id string, topic string, partition int")
    expected = spark.createDataFrame([("r1", "t", 0, 2, 0, 1, 1, 0, 2), ("r1", "t", 1, 0, 1, 0, 0, 0, 0),
                                      ("r1", "t", 2, 0, 0, 0, 1, 1, 0), ("r1", "t", 3, 0, 0, 0, 0, 0, 1)],
                                     FLAGGED_SCHEMA)
    assert_df_equality(flagged_partitions(violations, incidents, elections), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_an_acks1_loss_flags_its_partition_below_bad_incidents_and_above_other_incidents(
        spark: SparkSession) -> None:
    # t-0: one acks=1 write lost (info); t-1: a follower that lagged and caught up (recovered); t-2: a missing
    # shrink (bad); t-3: a severity this code does not know, counted as an error so that it is not ranked away.
    violations = frame(spark, GOLD_INVARIANT_VIOLATIONS, [_acks1_lost(0, 3), _violation(3, "future_check", "notice",
                                                                                         "m")])
    incidents = frame(spark, GOLD_LAG_INCIDENTS, [dict(INCIDENT, partition=1, verdict="recovered"), INCIDENT])
    flagged = flagged_partitions(violations, incidents)
    expected = spark.createDataFrame([("r1", "t", 0, 0, 0, 1, 0, 0, 0), ("r1", "t", 1, 0, 0, 0, 1, 0, 0),
                                      ("r1", "t", 2, 0, 0, 0, 1, 1, 0), ("r1", "t", 3, 1, 0, 0, 0, 0, 0)],
                                     FLAGGED_SCHEMA)
    assert_df_equality(flagged, expected, ignore_row_order=True, ignore_nullable=True)
    assert [r["partition"] for r in flagged.orderBy(*worst_first()).collect()] == [3, 2, 0, 1]


def test_an_incidents_failed_fetches_are_its_followers_since_it_was_last_caught_up(spark: SparkSession) -> None:
    # Follower 2 of t-2 last caught up at 6 s, lagging from 8 s to 10 s; again from 30 s to 31 s, last caught up
    # at 29 s; follower 3 of t-2 from 8 s (open), its last caught-up instant unknown (then: the start less
    # lag.max, 6 s).
    incidents = frame(spark, GOLD_LAG_INCIDENTS, [
        dict(INCIDENT, end_ms=T0 + 10_000),
        dict(INCIDENT, start_ms=T0 + 30_000, end_ms=T0 + 31_000, last_caught_up_time_ms=T0 + 29_000),
        dict(INCIDENT, follower_id=3, last_caught_up_time_ms=None)])

    def fetched(event_id: int, t: int, broker: int, error: str, partition: int = 2) -> dict[str, Any]:
        return dict(event_id=event_id, ts_ms=T0 + t, broker_id=broker, event_type="fetch_response", topic="t",
                    partition=partition, leader_id=1, fetcher_id=0, fetch_offset=5, error=error)

    bronze = make_events(spark, [
        fetched(0, 5_000, 2, "NETWORK_EXCEPTION"),  # before 6 s: not this incident's
        fetched(1, 7_000, 2, "NETWORK_EXCEPTION"), fetched(2, 9_000, 2, "OFFSET_OUT_OF_RANGE"),
        fetched(3, 9_500, 2, "NONE"),  # answered: no failure
        fetched(4, 9_600, 2, "NETWORK_EXCEPTION", partition=3),  # another partition
        fetched(5, 30_500, 2, "NETWORK_EXCEPTION"), fetched(6, 31_500, 2, "NETWORK_EXCEPTION"),  # after its end
        fetched(7, 6_000, 3, "FENCED_LEADER_EPOCH"), fetched(8, 5_999, 3, "NETWORK_EXCEPTION"),
        # An OffsetsForLeaderEpoch answer the follower retries is a failure too.
        dict(fetched(9, 9_800, 2, "UNKNOWN_LEADER_EPOCH"), event_type="epoch_request_retry", fetch_offset=None),
    ], run_id="r1")
    expected = spark.createDataFrame(
        [("r1", "t", 2, 2, 1, 2, T0 + 8_000, 3, ["NETWORK_EXCEPTION", "OFFSET_OUT_OF_RANGE", "UNKNOWN_LEADER_EPOCH"]),
         ("r1", "t", 2, 2, 1, 2, T0 + 30_000, 1, ["NETWORK_EXCEPTION"]),
         ("r1", "t", 2, 3, 1, 2, T0 + 8_000, 1, ["FENCED_LEADER_EPOCH"])],
        "run_id string, topic string, partition int, follower_id int, leader_id int, leader_epoch int, start_ms long, "
        "failed_fetches long, fetch_errors array<string>")
    actual = incident_fetch_failures(incidents, bronze).withColumn("fetch_errors",
                                                                   F.col("fetch_errors").cast("array<string>"))
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    # Without any, an incident keeps its row with 0 and no error names.
    quiet = with_fetch_failures(incidents, bronze.where("event_id = 3")).select("start_ms", "failed_fetches",
                                                                                "fetch_errors").collect()
    assert sorted((r[0] - T0, r[1], r[2]) for r in quiet) == [(8_000, 0, []), (8_000, 0, []), (30_000, 0, [])]
    # Follower 2 lagging from 8 s behind two leaders at once (an isolated old leader 4 without an epoch, and 1):
    # each incident counts each failure once.
    both = frame(spark, GOLD_LAG_INCIDENTS, [dict(INCIDENT, end_ms=T0 + 10_000),
                                            dict(INCIDENT, end_ms=T0 + 10_000, leader_id=4, leader_epoch=None)])
    counted = with_fetch_failures(both, bronze).select("leader_id", "failed_fetches").collect()
    assert sorted((r[0], r[1]) for r in counted) == [(1, 3), (4, 3)]


def test_produce_outcomes_count_the_answers_and_time_the_acks_all_writes_from_their_leaders_append(
        spark: SparkSession) -> None:
    # t-2, leader 1: acks=all batches at 10 and 11 appended at 1.000 s and acknowledged at 1.004 s and 6.000 s
    # (waits 4 and 5,000 ms); one timed out; acks=1 acknowledged at once. Offset 12 was written twice by leader 1
    # (a truncation between): the ack at 9.000 s waited from the second append, 8.500 s (500 ms), not the first.
    # The append of another broker or partition with the same offsets and checksum does not count. first_ms / last_ms:
    # the group's first and last answer; an error's bursts split where answers are more than 5 s apart.
    def append(event_id: int, t: int, base: int, checksum: int, broker: int = 1, partition: int = 2,
               role: str = "leader") -> dict[str, Any]:
        return dict(event_id=event_id, ts_ms=T0 + t, broker_id=broker, event_type="append", topic="t",
                    partition=partition, leader_epoch=3, role=role, base_offset=base, last_offset=base,
                    record_count=1, bytes=100, batch_leader_epoch=3, batch_checksum=checksum, leo=base + 1)

    def ack(event_id: int, t: int, acks: int, error: str, base: int | None = None, checksum: int = 7,
            partition: int = 2) -> dict[str, Any]:
        offsets = {} if base is None else dict(base_offset=base, last_offset=base)
        return dict(event_id=event_id, ts_ms=T0 + t, broker_id=1, event_type="produce_ack", topic="t",
                    partition=partition, leader_epoch=3, acks=acks, error=error, batch_checksum=checksum, **offsets)

    bronze = make_events(spark, [
        append(0, 1_000, 10, 70), append(1, 1_000, 11, 71), append(2, 1_000, 13, 73),
        append(3, 900, 10, 70, broker=2), append(4, 1_000, 11, 71, role="follower", broker=3),
        ack(5, 1_004, -1, "NONE", 10, 70), ack(6, 6_000, -1, "NONE", 11, 71),
        ack(7, 31_000, -1, "REQUEST_TIMED_OUT", 13, 73), ack(8, 1_001, 1, "NONE", 13, 73),
        append(9, 2_000, 12, 72), append(10, 8_500, 12, 72), append(11, 9_500, 12, 72),
        ack(12, 9_000, -1, "NONE", 12, 72),
        ack(13, 9_100, -1, "NOT_ENOUGH_REPLICAS"),
        append(14, 1_000, 10, 70, partition=3), ack(15, 1_010, -1, "NONE", 10, 70, partition=3),
        ack(16, 1_020, -1, "NONE", 10, 70, partition=4),  # a partition not selected
        # Two more timeouts: 4 s after the first (the same burst), then 9 s later (a second one).
        ack(17, 35_000, -1, "REQUEST_TIMED_OUT", 13, 73), ack(18, 44_000, -1, "REQUEST_TIMED_OUT", 13, 73),
        # t-3's refusals read from a broker log: no batch, the acks unknown (the error does not imply them).
        dict(ack(19, 2_000, -1, "OUT_OF_ORDER_SEQUENCE_NUMBER", partition=3), acks=None, batch_checksum=None,
             source="kafka-log"),
        dict(ack(20, 2_500, -1, "OUT_OF_ORDER_SEQUENCE_NUMBER", partition=3), acks=None, batch_checksum=None,
             source="kafka-log"),
    ], run_id="r1")
    selected = spark.createDataFrame([("r1", "t", 2), ("r1", "t", 3)], "run_id string, topic string, partition int")
    expected = spark.createDataFrame([
        ("r1", "t", 2, -1, "NONE", 3, T0 + 1_004, T0 + 9_000, 3, 500, 5_000, 5_000, T0 + 6_000, None, None),
        ("r1", "t", 2, -1, "REQUEST_TIMED_OUT", 3, T0 + 31_000, T0 + 44_000, 0, None, None, None, None,
         [(T0 + 31_000, T0 + 35_000, 2), (T0 + 44_000, T0 + 44_000, 1)], 2),
        ("r1", "t", 2, -1, "NOT_ENOUGH_REPLICAS", 1, T0 + 9_100, T0 + 9_100, 0, None, None, None, None,
         [(T0 + 9_100, T0 + 9_100, 1)], 1),
        ("r1", "t", 2, 1, "NONE", 1, T0 + 1_001, T0 + 1_001, 0, None, None, None, None, None, None),
        ("r1", "t", 3, -1, "NONE", 1, T0 + 1_010, T0 + 1_010, 1, 10, 10, 10, T0 + 1_010, None, None),
        ("r1", "t", 3, None, "OUT_OF_ORDER_SEQUENCE_NUMBER", 2, T0 + 2_000, T0 + 2_500, 0, None, None, None, None,
         [(T0 + 2_000, T0 + 2_500, 2)], 1),
    ], "run_id string, topic string, partition int, acks byte, error string, answers long, first_ms long, "
       "last_ms long, timed long, wait_p50_ms long, wait_p99_ms long, wait_max_ms long, wait_max_ms_at long, "
       "bursts array<struct<first_ms:long,last_ms:long,answers:long>>, burst_count long")
    assert_df_equality(produce_outcomes(bronze, selected), expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_metadata=True, ignore_column_order=True)


def test_a_sections_settings_are_its_runs_broker_configs_with_its_topics_overrides(spark: SparkSession) -> None:
    """Brokers 1 and 2 of run r1 report replica.lag.time.max.ms 10000 and 30000 (a restart changed broker 2's), min
    ISR 2 with topic `a.b` (dotted) overriding it to 1, unclean elections off with `t` overriding them on; other
    configs and other runs' are not shown."""
    def config(event_id: int, broker: int, run: str = "r1", **extra: str) -> dict[str, Any]:
        base = {"replica.lag.time.max.ms": "10000", "min.insync.replicas": "2",
                "unclean.leader.election.enable": "false", "replica.fetch.max.bytes": "1048576",
                "replica.socket.timeout.ms": "30000",
                "topic.a.b.min.insync.replicas": "1", "topic.t.unclean.leader.election.enable": "true"}
        return dict(event_id=event_id, ts_ms=T0 + event_id, broker_id=broker, event_type="broker_config",
                    config={**base, **extra})

    bronze = make_events(spark, [config(1, 1), config(2, 2), config(3, 2, **{"replica.lag.time.max.ms": "30000"})],
                         run_id="r1").unionByName(make_events(spark, [config(4, 1, **{
                             "min.insync.replicas": "3"})], run_id="r2"))
    rows = [r.asDict() for r in run_settings(bronze).where(F.col("run_id") == "r1").collect()]
    assert sorted((r["name"], r["value"]) for r in rows) == [
        ("min.insync.replicas", "2"), ("replica.lag.time.max.ms", "10000"), ("replica.lag.time.max.ms", "30000"),
        ("replica.socket.timeout.ms", "30000"), ("topic.a.b.min.insync.replicas", "1"),
        ("topic.t.unclean.leader.election.enable", "true"), ("unclean.leader.election.enable", "false")]
    assert section_settings(rows, "t") == (("replica.lag.time.max.ms", "10000 / 30000"),
                                           ("replica.socket.timeout.ms", "30000"), ("min.insync.replicas", "2"),
                                           ("unclean.leader.election.enable", "true (topic t)"))
    assert section_settings(rows, "a.b") == (("replica.lag.time.max.ms", "10000 / 30000"),
                                             ("replica.socket.timeout.ms", "30000"),
                                             ("min.insync.replicas", "1 (topic a.b)"),
                                             ("unclean.leader.election.enable", "false"))
    assert section_settings([], "t") == ()


def test_loss_spans_group_the_lost_writes_by_the_instant_they_left_the_leader(spark: SparkSession) -> None:
    """t-0: acked_write_lost at offsets 5, 6, 9 left at 20 s, 12 at 25 s, acks1_write_lost 7 at 20 s; another
    invariant's violation and one without an offset are no loss."""
    rows = [_violation(0, "acked_write_lost", "warning", "lost", offset=o, ts_ms=T0 + 20_000) for o in (9, 5, 6)]
    rows += [_violation(0, "acked_write_lost", "warning", "lost", offset=12, ts_ms=T0 + 25_000),
             _violation(0, "acks1_write_lost", "info", "lost", offset=7, ts_ms=T0 + 20_000),
             _violation(0, "hw_within_log", "error", "HW above LEO", offset=3, ts_ms=T0 + 20_000),
             _violation(0, "acked_write_lost", "warning", "lost", offset=None, ts_ms=T0 + 20_000)]
    violations = frame(spark, GOLD_INVARIANT_VIOLATIONS, rows)
    expected = spark.createDataFrame([
        ("r1", "t", 0, "acked_write_lost", "warning", T0 + 20_000, 3, 5, 9),
        ("r1", "t", 0, "acked_write_lost", "warning", T0 + 25_000, 1, 12, 12),
        ("r1", "t", 0, "acks1_write_lost", "info", T0 + 20_000, 1, 7, 7),
    ], "run_id string, topic string, partition int, invariant string, severity string, ts_ms long, count long, "
       "first_offset long, last_offset long")
    assert_df_equality(loss_spans(violations), expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_metadata=True)


def test_produce_silences_are_the_longest_stretches_without_any_answer(spark: SparkSession) -> None:
    """t-2's engine answers (any acks or error) at 0, 0.1, 0.2, 4.7, 4.8, 9.0, 9.1, 12.0, 14.5 and 20.0 s: at least 2 s
    apart are 0.2-4.7 (4.5 s), 4.8-9.0 (4.2 s), 9.1-12.0 (2.9 s), 12.0-14.5 (2.5 s) and 14.5-20.0 (5.5 s): the three
    longest listed, five counted. t-3 answered every 1.9 s: no row. t-4 is not selected. With the run's end at 27 s,
    t-2's last answer leaves 7 s to it (the longest), t-3's 19.4 s (its only one)."""
    def ack(event_id: int, t: int, partition: int = 2, acks: int = -1, error: str = "NONE") -> dict[str, Any]:
        return dict(event_id=event_id, ts_ms=T0 + t, broker_id=1, event_type="produce_ack", topic="t",
                    partition=partition, leader_epoch=3, acks=acks, error=error, batch_checksum=7)

    times = [0, 100, 200, 4_700, 4_800, 9_000, 9_100, 12_000, 14_500, 20_000]
    rows = [ack(k, t, acks=1 if k % 3 == 0 else -1, error="REQUEST_TIMED_OUT" if k == 4 else "NONE")
            for k, t in enumerate(times)]
    rows += [ack(100 + k, 1_900 * k, partition=3) for k in range(5)]
    rows += [ack(200, 0, partition=4), ack(201, 10_000, partition=4)]
    # A refusal read from a broker log inside t-2's longest stretch: a log prints refusals alone, so it splits none.
    rows += [dict(ack(300, 17_000, error="NOT_ENOUGH_REPLICAS"), source="kafka-log")]
    bronze = make_events(spark, rows, run_id="r1")
    selected = spark.createDataFrame([("r1", "t", 2), ("r1", "t", 3)], "run_id string, topic string, partition int")
    schema = ("run_id string, topic string, partition int, silences array<struct<ms:long,from_ms:long,to_ms:long,"
              "until_end:boolean>>, silence_count long")
    expected = spark.createDataFrame([
        ("r1", "t", 2, [(5_500, T0 + 14_500, T0 + 20_000, False), (4_500, T0 + 200, T0 + 4_700, False),
                        (4_200, T0 + 4_800, T0 + 9_000, False)], 5)], schema)
    assert_df_equality(produce_silences(bronze, selected, 2_000), expected, ignore_row_order=True,
                       ignore_nullable=True, ignore_metadata=True)
    ends = spark.createDataFrame([("r1", T0 + 27_000)], "run_id string, end_ms long")
    expected = spark.createDataFrame([
        ("r1", "t", 2, [(7_000, T0 + 20_000, T0 + 27_000, True), (5_500, T0 + 14_500, T0 + 20_000, False),
                        (4_500, T0 + 200, T0 + 4_700, False)], 6),
        ("r1", "t", 3, [(19_400, T0 + 7_600, T0 + 27_000, True)], 1)], schema)
    assert_df_equality(produce_silences(bronze, selected, 2_000, ends), expected, ignore_row_order=True,
                       ignore_nullable=True, ignore_metadata=True)


def test_violations_naming_counts_each_wanted_event_over_all_the_partitions_violations(spark: SparkSession) -> None:
    # t-0: event 7 is the evidence of two violations and the detecting event of a third (which names it twice);
    # event 9 of one; t-1's violation names 7 too, but t-1 is not asked about; event 8 is named by none.
    violations = frame(spark, GOLD_INVARIANT_VIOLATIONS, [
        _violation(0, "acked_write_lost", "warning", "a", event_id=-1, evidence=[7, 2]),
        _violation(0, "acked_write_lost", "warning", "b", event_id=-1, evidence=[7, 9]),
        _violation(0, "inconsistent_offsets", "warning", "c", event_id=7, evidence=[7, 4]),
        _violation(1, "inconsistent_offsets", "warning", "d", event_id=5, evidence=[7]),
    ])
    wanted = spark.createDataFrame([("r1", "t", 0, 7), ("r1", "t", 0, 9), ("r1", "t", 0, 8)],
                                   "run_id string, topic string, partition int, event_id long")
    expected = spark.createDataFrame([("r1", "t", 0, 7, 3), ("r1", "t", 0, 9, 1)],
                                     "run_id string, topic string, partition int, event_id long, naming long")
    assert_df_equality(violations_naming(violations, wanted), expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_metadata=True)


def test_offset_series_keeps_the_last_value_and_the_range_of_each_bucket(spark: SparkSession) -> None:
    # Broker 1: ten changes in the first second (a dip to 2 among them), then one at 1.5 s.
    values = [5, 6, 2, 7, 8, 8, 9, 9, 9, 10]
    rows = [dict(run_id="r1", topic="t", partition=0, replica_id=1, valid_from_ms=T0 + 100 * i, role="leader",
                 leader_epoch=1, high_watermark=v - 1, log_end_offset=v, event_id=i) for i, v in enumerate(values)]
    rows.append(dict(rows[-1], valid_from_ms=T0 + 1_500, high_watermark=11, log_end_offset=12, event_id=10))
    selected = spark.createDataFrame([("r1", "t", 0, T0, 1_000)],
                                     "run_id string, topic string, partition int, start_ms long, bucket_ms long")
    expected = spark.createDataFrame(
        [("r1", "t", 0, 1, T0, 9, 10, 1, 9, 2, 10), ("r1", "t", 0, 1, T0 + 1_500, 11, 12, 11, 11, 12, 12)],
        "run_id string, topic string, partition int, replica int, ts_ms long, hw long, leo long, hw_min long, "
        "hw_max long, leo_min long, leo_max long")
    actual = offset_series(frame(spark, SILVER_REPLICA_OFFSETS, rows), selected).select(*expected.columns)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)


def test_isr_series_and_leader_changes_of_a_selected_partition(spark: SparkSession) -> None:
    # t-0: broker 2 leads with ISR [1, 2]; at 6 s broker 1 takes over and the ISR shrinks to [1]; at 6.5 s
    # (same 1 s bucket) broker 2 rejoins; at 8 s it leaves again, below min ISR, so it is an eligible leader replica
    # (KIP-966). At 9 s a change keeps it out (the partition epoch moves) and at 9.5 s it rejoins: in that bucket it
    # did not leave, so it was in the ISR "whole" (no left-and-rejoined hatching). t-1 is not selected.
    states = [*_state(0), *_state(1),
              dict(_state(0)[1], valid_from_ms=T0 + 6_500, isr=[1, 2], isr_size=2, elr=[], event_id=22),
              dict(_state(0)[1], valid_from_ms=T0 + 8_000, isr=[1], isr_size=1, elr=[2], event_id=23),
              dict(_state(0)[1], valid_from_ms=T0 + 9_000, isr=[1], isr_size=1, elr=[2], event_id=24),
              dict(_state(0)[1], valid_from_ms=T0 + 9_500, isr=[1, 2], isr_size=2, elr=[], event_id=25)]
    ps = frame(spark, SILVER_PARTITION_STATE, states)
    selected = spark.createDataFrame([("r1", "t", 0, T0, 1_000)],
                                     "run_id string, topic string, partition int, start_ms long, bucket_ms long")
    expected = spark.createDataFrame(
        [("r1", "t", 0, 1, T0, True, True, False), ("r1", "t", 0, 2, T0, True, True, False),
         ("r1", "t", 0, 1, T0 + 6_000, True, True, False), ("r1", "t", 0, 2, T0 + 6_000, True, False, False),
         ("r1", "t", 0, 1, T0 + 8_000, True, True, False), ("r1", "t", 0, 2, T0 + 8_000, False, False, True),
         ("r1", "t", 0, 1, T0 + 9_000, True, True, False), ("r1", "t", 0, 2, T0 + 9_000, True, True, False)],
        "run_id string, topic string, partition int, replica int, ts_ms long, in_isr boolean, in_isr_whole boolean, "
        "in_elr boolean")
    actual = isr_series(ps, selected).select(*expected.columns)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)

    expected = spark.createDataFrame([("r1", "t", 0, T0, 2, 1, 2), ("r1", "t", 0, T0 + 6_000, 1, 2, 2)],
                                     "run_id string, topic string, partition int, ts_ms long, leader_id int, "
                                     "leader_epoch int, changes long")
    actual = leader_changes(ps, selected, limit=5).select(*expected.columns)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    capped = leader_changes(ps, selected, limit=1).collect()
    assert [(r["ts_ms"], r["changes"]) for r in capped] == [(T0, 2)], "the earliest, and the total it was cut from"


def test_an_incident_learns_when_the_controller_deposed_its_leaders_epoch(spark: SparkSession) -> None:
    # t-0: leader 1 in epoch 0 from 0 s (two state intervals), leader 2 in epoch 1 from 51 s, leader 3 in epoch 3
    # from 70 s (epoch 2 never reached the controller's state). t-1 stays in epoch 0.
    state = spark.createDataFrame(
        [("r", "t", 0, 0, 0), ("r", "t", 0, 0, 20_000), ("r", "t", 0, 1, 51_000), ("r", "t", 0, 3, 70_000),
         ("r", "t", 1, 0, 0)],
        "run_id string, topic string, partition int, leader_epoch int, valid_from_ms long")
    incidents = spark.createDataFrame(
        [("r", "t", 0, 2, 0), ("r", "t", 0, 3, 1), ("r", "t", 0, 2, 2), ("r", "t", 0, 1, 3), ("r", "t", 1, 2, 0),
         ("r", "t", 0, 2, None)],
        "run_id string, topic string, partition int, follower_id int, leader_epoch int")
    expected = spark.createDataFrame(
        [("r", "t", 0, 2, 0, 51_000), ("r", "t", 0, 3, 1, 70_000), ("r", "t", 0, 2, 2, 70_000),
         ("r", "t", 0, 1, 3, None), ("r", "t", 1, 2, 0, None), ("r", "t", 0, 2, None, None)],
        "run_id string, topic string, partition int, follower_id int, leader_epoch int, leader_deposed_ms long")
    # Epoch 2, absent from the controller's state, was deposed by epoch 3; the newest epoch, never.
    assert_df_equality(with_leader_deposed(incidents, state), expected, ignore_row_order=True,
                       ignore_nullable=True)


def test_an_end_of_run_checks_violations_are_listed_lowest_offset_first_with_their_spread(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve acknowledged writes lost, found at one instant by one end-of-run check (one time, event -1): the
    report's three rows are the lowest offsets, not any three, a line gives all twelve's offsets, and the picture
    counts all twelve."""
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lake.append(BRONZE_EVENTS, _bronze(spark))
    lake.append(SILVER_REPLICA_OFFSETS, frame(spark, SILVER_REPLICA_OFFSETS, _offsets(0)))
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, _state(0)))
    # Written in an order of their own, over several files, as a shuffle would leave them.
    # Their messages name their causes as the audit and the checker write them (`unclean_excuse_text`): three an
    # unclean election alone, three a crash loss beside one (either order), two a crash recovery, four none.
    crash = (" (crash recovery event 70 lost the committed record on that replica: durability loss Kafka does not "
             "promise to survive)")
    excuses = [unclean_excuse_text(90)] * 3 + [unclean_excuse_text(90, 80)] * 2 + [unclean_excuse_text(90, 95),
                                                                                   crash, crash] + [""] * 4
    lost = [_violation(0, "acked_write_lost", "warning", f"offset {o} lost{why}", event_id=-1, offset=o, expected=o,
                       actual=-1) for o, why in zip((17, 5, 11, 9, 20, 8, 13, 6, 19, 7, 15, 10), excuses, strict=True)]
    for chunk in (lost[:4], lost[4:8], lost[8:]):
        lake.append(GOLD_INVARIANT_VIOLATIONS, frame(spark, GOLD_INVARIANT_VIOLATIONS, chunk))
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, errors=0, warnings=12))
    drawn: list[PartitionPlot] = []
    monkeypatch.setattr("jobs.incident_report.plot_partition", lambda data, path: drawn.append(data) or path)
    result = run_report(spark, lake, ReportConfig(max_rows=3), out=tmp_path / "out", **QUIET)
    (data,) = drawn
    assert data.violation_totals == (("warning", "acked_write_lost", 12),)
    md = result.markdown_path.read_text(encoding="utf-8")
    section = md.split("\n### t-0 (run ")[1]
    # Streaks (one instant, one wording each): the unclean election's 5, 11, 17, the crash recovery's 6, 13, the
    # unexcused 7, 10, 15, 19; each row its lowest offset.
    assert re.findall(r"\| (?:the earliest of \d+: )?offset (\d+) lost[^|]*\|", section) == ["5", "6", "7"]
    assert "| 5..17 (3 violations over 13 offsets) |" in section
    assert "| 7..19 (4 violations over 13 offsets) |" in section
    assert "All of them, per invariant: acked_write_lost (warning): 12 at offsets 5..20." in section
    assert ("12 warning(s): 3 lost to an unclean election alone, 3 lost both with a crashed leader's unflushed tail "
            "and to an unclean election, 2 lost with a crashed replica's unflushed data (its crash recovery), 4 other)"
            ) in md


def test_acks1_losses_are_reported_as_info_counted_and_plotted_never_as_errors(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """t-0 lost two acks=1 writes (info), t-2 has a missing shrink: both flagged, the bad incident first. The audit
    row predates acks1_write_lost (it lists two invariants): its count still shows, with the catalogue's severity."""
    lake = EmbeddedLake(spark, str(tmp_path / "lake"))
    lake.append(BRONZE_EVENTS, _bronze(spark))
    lake.append(SILVER_REPLICA_OFFSETS, frame(spark, SILVER_REPLICA_OFFSETS, [*_offsets(0), *_offsets(2)]))
    lake.append(SILVER_PARTITION_STATE, frame(spark, SILVER_PARTITION_STATE, [*_state(0), *_state(2)]))
    lake.append(GOLD_INVARIANT_VIOLATIONS, frame(spark, GOLD_INVARIANT_VIOLATIONS, [_acks1_lost(0, 4),
                                                                                    _acks1_lost(0, 3)]))
    lake.append(GOLD_LAG_INCIDENTS, frame(spark, GOLD_LAG_INCIDENTS, [INCIDENT]))
    lake.append(GOLD_AUDIT_RUNS, _audit_row(spark, errors=0, warnings=0))
    drawn: list[PartitionPlot] = []
    monkeypatch.setattr("jobs.incident_report.plot_partition", lambda data, path: drawn.append(data) or path)
    result = run_report(spark, lake, ReportConfig(), out=tmp_path / "out", **QUIET)
    assert (result.flagged, result.errors, result.warnings, result.infos, result.incidents) == (2, 0, 0, 2, 1)
    assert "0 errors, 0 warnings, 2 info, 1 lag incidents; 2 partitions flagged" in result.summary()
    md = result.markdown_path.read_text(encoding="utf-8")
    assert _sections(md) == ["t-2 (run r1)", "t-0 (run r1)"], "a missing shrink ranks above an allowed loss"
    assert "0 error(s), 0 warning(s) and 2 info (acks=1 writes lost, which Kafka allows" in md
    assert "| acks1_write_lost | info | yes | 0 | 0 | 2 |" in md, "the catalogue's severity, not error"
    section = md.split("\n### t-0 (run ")[1]
    assert "0 error(s), 0 warning(s), 2 info, 0 lag incident(s)." in section
    # Alike losses at 3 and 4: one row (a streak), the lowest offset's.
    assert re.findall(r"\| the earliest of 2: acks=1 write acknowledged at (\d+)\.\.", section) == ["3"], \
        "lowest offset first"
    assert "| 3..4 (2 violations) |" in section
    t0 = next(d for d in drawn if d.partition == 0)
    assert t0.violation_totals == (("info", "acks1_write_lost", 2),)
    assert [(v.severity, v.offset) for v in t0.violations] == [("info", 3)]
    assert headline(t0) == "2 info (acks1_write_lost)"
    page = result.html_path.read_text(encoding="utf-8")
    assert '<tr class="info"><td>acks1_write_lost</td><td>info</td><td>yes</td>' in page
