"""`replog check` (`replication_core.checker.cli.main`): exit codes 0 / 1 / 2, output and JSON, on
Parquet and JSON Lines files written to tmp_path; and the reader's ordering / version rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from replication_core.checker.cli import main
from replication_core.checker.reader import ReaderError, read_events
from schemas.events import EVENT_SCHEMA
from tests.checker.builder import healthy
from tests.checker.test_kip_shapes import kip101_hw_truncation


def write_parquet(path: Path, events: list[dict[str, Any]]) -> None:
    """Events as one Parquet file with the landing schema."""
    rows = [dict(e, config=list(e["config"].items())) if e.get("config") else e for e in events]
    pq.write_table(pa.Table.from_pylist(rows, schema=EVENT_SCHEMA), path)


def write_jsonl(path: Path, events: list[dict[str, Any]]) -> None:
    """Events as one JSON Lines file."""
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_clean_run_in_parquet_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A clean run: exit 0, only the summary line, and a JSON document saying clean."""
    write_parquet(tmp_path / "part-00000.parquet", healthy().events)
    out = tmp_path / "result.json"
    assert main(["--events", str(tmp_path), "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("checked 22 events of 1 run(s) r: 0 error(s), 0 warning(s)")
    doc = json.loads(out.read_text())
    assert doc["clean"] is True and doc["violations"] == [] and doc["runs"] == ["r"]


def test_a_json_path_that_cannot_be_written_is_refused_before_the_check(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 with one line naming the path and why, and no check output (a long check is not wasted)."""
    write_parquet(tmp_path / "part-00000.parquet", healthy().events)
    (tmp_path / "a-file").write_text("x")
    cases = [(tmp_path, "expected a file path, but it is an existing folder"),
             (tmp_path / "no" / "r.json", f"expected an existing folder to write it in, but {tmp_path / 'no'} "
                                          "does not exist"),
             (tmp_path / "a-file" / "r.json", f"expected an existing folder to write it in, but "
                                              f"{tmp_path / 'a-file'} is a file")]
    for path, why in cases:
        assert main(["--events", str(tmp_path), "--json", str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"replog check: cannot run: --json {path}: {why}\n"


def test_lossy_run_in_jsonl_exits_1_with_one_line_per_violation(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The KIP-101 loss: exit 1, one line per violation naming invariant, partition, offsets, evidence."""
    events = kip101_hw_truncation(truncate_to_hw=True)[0].events
    write_jsonl(tmp_path / "events.jsonl", events)
    out = tmp_path / "result.json"
    assert main(["--events", str(tmp_path), "--json", str(out)]) == 1
    lines = capsys.readouterr().out.splitlines()
    lost = [line for line in lines if line.startswith("acked_write_lost ")]
    assert len(lost) == 1
    assert lost[0].startswith("acked_write_lost error t-0 replica=1 ts=")
    assert " offset=1 expected=102 actual=103 evidence=[" in lost[0]
    assert lines[-1].endswith("0 skipped") and "4 error(s)" in lines[-1]
    doc = json.loads(out.read_text())
    assert doc["clean"] is False
    assert [v["invariant"] for v in doc["violations"]] == [line.split()[0] for line in lines[:-1]]


def test_files_are_merged_by_event_id(tmp_path: Path) -> None:
    """Two rolled files (Parquet then JSON Lines) are read back as one ordered stream."""
    events = healthy().events
    write_parquet(tmp_path / "part-00000.parquet", events[:10])
    write_jsonl(tmp_path / "part-00001.jsonl", events[10:])
    assert [e["event_id"] for e in read_events(tmp_path)] == list(range(len(events)))
    assert main(["--events", str(tmp_path)]) == 0


def test_missing_folder_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No such folder: exit 2 with a message on stderr."""
    assert main(["--events", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_empty_folder_exits_2(tmp_path: Path) -> None:
    """A folder without event files cannot be checked."""
    assert main(["--events", str(tmp_path)]) == 2


def test_out_of_order_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file whose event_ids go backwards: exit 2, the message names the ids."""
    events = healthy().events
    write_jsonl(tmp_path / "events.jsonl", [events[1], events[0], *events[2:]])
    assert main(["--events", str(tmp_path)]) == 2
    assert "event_id 0 after 1" in capsys.readouterr().err


def test_duplicate_event_across_files_exits_2(tmp_path: Path) -> None:
    """The same event_id of one run in two files is an error, not silently merged."""
    events = healthy().events
    write_jsonl(tmp_path / "a.jsonl", events[:5])
    write_jsonl(tmp_path / "b.jsonl", events[4:])
    with pytest.raises(ReaderError, match="appears twice"):
        list(read_events(tmp_path))
    assert main(["--events", str(tmp_path)]) == 2


def test_newer_schema_major_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """schema_version 2.0 is newer than this code: exit 2 naming it."""
    events = [dict(e, schema_version="2.0") for e in healthy().events]
    write_jsonl(tmp_path / "events.jsonl", events)
    assert main(["--events", str(tmp_path)]) == 2
    assert "'2.0' is newer" in capsys.readouterr().err


def test_newer_minor_is_read(tmp_path: Path) -> None:
    """A newer minor of the same major is readable."""
    write_jsonl(tmp_path / "events.jsonl", [dict(e, schema_version="1.7") for e in healthy().events])
    assert main(["--events", str(tmp_path)]) == 0


def test_malformed_json_and_unreadable_parquet_exit_2(tmp_path: Path) -> None:
    """A broken line, or a file that is not Parquet, makes the run uncheckable."""
    bad_json = tmp_path / "j"
    bad_json.mkdir()
    (bad_json / "events.jsonl").write_text('{"event_id": 0,\n')
    assert main(["--events", str(bad_json)]) == 2
    bad_parquet = tmp_path / "p"
    bad_parquet.mkdir()
    (bad_parquet / "part-00000.parquet").write_bytes(b"not parquet")
    assert main(["--events", str(bad_parquet)]) == 2


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    """argparse errors are 'could not run', not a crash."""
    assert main([]) == 2
    assert main(["--events", str(tmp_path), "--max-network-delay-ms", "soon"]) == 2


def test_warnings_exit_0_unless_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run with only a warning exits 0; --strict makes it 1."""
    run = healthy()
    run.append(1, 1, 0, 1002, role="leader", base=5)  # a replay disagreement: event_stream_consistent (warning)
    write_jsonl(tmp_path / "events.jsonl", run.events)
    assert main(["--events", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("event_stream_consistent warning t-0 replica=1")
    assert main(["--events", str(tmp_path), "--strict"]) == 1


def test_manifest_network_delay_tightens_the_fetch_bound(tmp_path: Path) -> None:
    """run.json `max_network_delay_ms` is used when the flag is absent."""
    run = healthy()
    run.fetch(2, 1, 0, 2, ts=2_000_000)
    run.response(2, 1, 0, 2, leader_hw=2, ts=2_000_600)
    write_jsonl(tmp_path / "events.jsonl", run.events)
    assert main(["--events", str(tmp_path)]) == 0
    (tmp_path / "run.json").write_text(json.dumps({"schema_version": "1.0", "max_network_delay_ms": 5}))
    assert main(["--events", str(tmp_path)]) == 1


def test_manifest_stalls_skip_the_fetch_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GC pauses / disk stalls listed in run.json faults_applied make delayed_fetch_bound a counted skip."""
    run = healthy()
    run.fetch(2, 1, 0, 2, ts=2_000_000)
    run.response(2, 1, 0, 2, leader_hw=2, ts=2_040_000)  # later than the 30 s socket timeout
    write_jsonl(tmp_path / "events.jsonl", run.events)
    assert main(["--events", str(tmp_path)]) == 1
    (tmp_path / "run.json").write_text(json.dumps({"faults_applied": [[1000, "disk_stall"]]}))
    out = tmp_path / "result.json"
    assert main(["--events", str(tmp_path), "--json", str(out)]) == 0
    skipped = json.loads(out.read_text())["skipped"]["delayed_fetch_bound"]
    assert skipped == {"the run has GC pauses / disk stalls, which are not events": 1}
    # Written since schema 1.9, the run's events record its stalls (none here): the bound is judged again.
    (tmp_path / "run.json").write_text(json.dumps({"schema_version": "1.9",
                                                   "faults_applied": [[1000, "disk_stall"]]}))
    assert main(["--events", str(tmp_path), "--json", str(out)]) == 1
    assert "delayed_fetch_bound" not in json.loads(out.read_text())["skipped"]


def test_repeated_violations_are_summarised_past_max_per_group(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Three violations of one group with --max-per-group 2: two lines, then one '... 1 more' line; the
    JSON keeps all three."""
    run = healthy()
    for hw in (5, 6, 7):
        run.hw(2, hw, "follower", 0)
    write_jsonl(tmp_path / "events.jsonl", run.events)
    out = tmp_path / "result.json"
    assert main(["--events", str(tmp_path), "--max-per-group", "2", "--json", str(out)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["hw_within_log", "hw_within_log"]
    assert lines[2] == ("hw_within_log error t-0 replica=2 ... 1 more not shown "
                        "(--json has all, --max-per-group 0 prints all)")
    assert len(json.loads(out.read_text())["violations"]) == 3
    assert main(["--events", str(tmp_path), "--max-per-group", "0"]) == 1
    assert len(capsys.readouterr().out.splitlines()) == 4


def test_parquet_config_maps_reach_the_checker(tmp_path: Path) -> None:
    """A broker_config map read back from Parquet configures the checks (min ISR 2 freezes the HW)."""
    run = healthy()
    run.config(1, min_insync_replicas="2")
    run.isr(1, "update", "committed", [1, 2, 3], [1], 0, reason="leader_and_isr")
    run.append(1, 1, 0, 1002, role="leader")
    run.hw(1, 3, "leader", 0)
    write_parquet(tmp_path / "part-00000.parquet", run.events)
    [config] = [e for e in read_events(tmp_path) if e["event_type"] == "broker_config"]
    assert config["config"] == {"min.insync.replicas": "2"}
    assert main(["--events", str(tmp_path)]) == 1


def test_event_missing_a_required_field_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An append without base_offset cannot be replayed: exit 2 naming the event."""
    events = healthy().events
    broken = [dict(e) for e in events]
    del broken[5]["base_offset"]
    write_jsonl(tmp_path / "events.jsonl", broken)
    assert main(["--events", str(tmp_path)]) == 2
    assert f"event 5 ({broken[5]['event_type']})" in capsys.readouterr().err


def test_replay_findings_do_not_apply_to_kafka_log_runs(tmp_path: Path) -> None:
    """A kafka-log run has no append events: hw_within_log is counted as skipped, not reported; a rule
    that applies to real logs (hw_monotonic_leader) still fires."""
    run = healthy()
    run.hw(1, 1, "leader", 0)
    events = [dict(e, source="kafka-log") for e in run.events if e["event_type"] != "append"]
    write_jsonl(tmp_path / "events.jsonl", events)
    out = tmp_path / "result.json"
    assert main(["--events", str(tmp_path), "--json", str(out)]) == 1
    doc = json.loads(out.read_text())
    assert {v["invariant"] for v in doc["violations"]} == {"hw_monotonic_leader"}
    assert doc["skipped"]["hw_within_log"] == {"not applicable to source kafka-log": 7}  # every HW move


def test_a_kafka_log_hw_without_role_or_old_hw_is_replayed(tmp_path: Path) -> None:
    """The HW a partition starts with, read from a broker log ('Log loaded for partition ... with initial high
    watermark'), has no role and no old HW: the replayed HW stands in for the old one, no leader rule judges it,
    and the run checks clean (a missing old_hw is no unreadable event)."""
    run = healthy()
    run.add("hw_change", 2, 0, hw=1)  # broker 2's checkpoint was behind its HW of 2
    events = [dict(e, source="kafka-log") for e in run.events if e["event_type"] != "append"]
    assert events[-1].get("old_hw") is None and events[-1].get("role") is None
    write_jsonl(tmp_path / "events.jsonl", events)
    out = tmp_path / "result.json"
    assert main(["--events", str(tmp_path), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["violations"] == []
    assert doc["skipped"]["hw_within_log"] == {"not applicable to source kafka-log": 7}  # six moves and this one


@pytest.mark.parametrize(("flag", "value", "expected"), [
    ("--max-network-delay-ms", "-3", "expected an integer >= 0 (milliseconds), got '-3'"),
    ("--max-per-group", "-3", "expected an integer >= 0 (0 prints all), got '-3'"),
    ("--max-per-group", "two", "expected an integer >= 0 (0 prints all), got 'two'"),
])
def test_negative_limits_are_rejected(flag: str, value: str, expected: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A negative delay bound (false delayed_fetch_bound errors) or per-group limit (silently "all") is
    a usage error: exit 2 saying what is accepted."""
    write_jsonl(tmp_path / "events.jsonl", healthy().events)
    assert main(["--events", str(tmp_path), flag, value]) == 2
    captured = capsys.readouterr()
    assert f"argument {flag}: {expected}" in captured.err and captured.out == ""
    assert main(["--events", str(tmp_path), flag, "0"]) == 0  # 0 is meaningful for both


@pytest.mark.parametrize(("manifest", "message"), [
    ({"faults_applied": 3},
     "field faults_applied: expected a list of [at_ms, action] pairs, got 3 (int)"),
    ({"faults_applied": [[1000, "pause"], "pause"]},
     "field faults_applied[1]: expected an [at_ms, action] pair, got 'pause' (str)"),
    ({"faults_applied": [[1000, 7]]},
     "field faults_applied[0]: expected an [at_ms, action] pair, got [1000, 7] (list)"),
    ({"schema_version": 1.9, "faults_applied": [[1000, "pause"]]},
     "field schema_version: expected 'MAJOR.MINOR' or null, got 1.9 (float)"),
    ({"max_network_delay_ms": "5"},
     "field max_network_delay_ms: expected an integer >= 0 or null, got '5' (str)"),
    ({"max_network_delay_ms": -1},
     "field max_network_delay_ms: expected an integer >= 0 or null, got -1 (int)"),
    ({"max_network_delay_ms": True},
     "field max_network_delay_ms: expected an integer >= 0 or null, got True (bool)"),
])
def test_manifest_fields_of_the_wrong_type_exit_2(manifest: dict[str, Any], message: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A hand-edited run.json whose fields the checker reads have the wrong type: exit 2 naming the
    field, the value and the expected type (not a TypeError, not silently ignored)."""
    write_jsonl(tmp_path / "events.jsonl", healthy().events)
    (tmp_path / "run.json").write_text(json.dumps(manifest))
    assert main(["--events", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"replog check: cannot run: {tmp_path / 'run.json'}: {message}\n"


def test_manifest_nulls_are_absent_values(tmp_path: Path) -> None:
    """null fields (an unbounded network delay is written as null) are accepted."""
    write_jsonl(tmp_path / "events.jsonl", healthy().events)
    (tmp_path / "run.json").write_text(json.dumps({"faults_applied": None, "max_network_delay_ms": None}))
    assert main(["--events", str(tmp_path)]) == 0


def test_the_summary_says_what_was_skipped_most() -> None:
    """A count of skipped checks names its largest reason (a KIP-101 run in the high-watermark mode: the follower
    sends no last fetched epoch, so each fetch's fencing check is skipped); `--json` has them all."""
    from replication_core.checker.checker import CheckResult
    from replication_core.checker.cli import summary

    result = CheckResult((), ("r",), 136, {"acked_write_lost": 9},
                         {"fetch_epoch_fenced": {"follower protocol predates KIP-320": 29}, "quota": {"other": 2}})
    assert summary(result).endswith(", 9 checks, 31 skipped (most: 29 fetch_epoch_fenced, follower protocol "
                                    "predates KIP-320; every reason in --json)")
    assert summary(CheckResult((), ("r",), 1, {}, {})).endswith(", 0 checks, 0 skipped")
