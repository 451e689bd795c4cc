"""`replog simulate` (replication_core.sim.cli.main): files, manifest, exit codes, progress, rolling."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from replication_core.replica_manager import ReplicaManager
from replication_core.sim.cli import main
from tests.sim.helpers import SCENARIOS

STEADY = str(SCENARIOS / "steady-state.yaml")


def test_writes_rolled_files_and_a_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Event files under events/, run.json with counts, acknowledged records, code version; a summary."""
    scenario = tmp_path / "small.yaml"
    text = Path(STEADY).read_text() + "output:\n  max_events_per_file: 1000\n  batch_events: 400\n"
    scenario.write_text(text.replace("name: steady-state", "name: small"))
    assert main(["--scenario", str(scenario), "--out", str(tmp_path / "out"), "--duration-ms", "3000",
                 "--format", "jsonl"]) == 0
    manifest = json.loads((tmp_path / "out" / "run.json").read_text())
    files = sorted((tmp_path / "out" / "events").iterdir())
    assert [f"events/{f.name}" for f in files] == manifest["files"] and len(files) >= 2
    lines = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert all(len(f.read_text().splitlines()) <= 1000 for f in files)
    assert len(lines) == manifest["events"] == sum(manifest["counts"].values())
    assert [e["event_id"] for e in lines] == list(range(len(lines)))
    assert {e["run_id"] for e in lines} == {manifest["run_id"]}
    assert manifest["seed"] == 1 and manifest["truncation_mode"] == "diverging-epoch"
    assert all(n > 0 for n in manifest["acknowledged_records"].values()) and manifest["code_version"]
    assert manifest["max_network_delay_ms"] == 4
    # Whether the engine ran mypyc-compiled: compiled methods are not Python functions.
    assert manifest["core_compiled"] is not isinstance(ReplicaManager.fetch_messages, types.FunctionType)
    err = capsys.readouterr().err
    assert "simulated small" in err and "\r" not in err  # no progress bar when stderr is not a terminal


@pytest.mark.parametrize("argv", [
    ["--out", "x"],
    ["--scenario", STEADY, "--out", "x", "--truncation-mode", "zk"],
    ["--scenario", STEADY, "--out", "x", "--duration-ms", "0"],
    ["--scenario", "/nonexistent.yaml", "--out", "x"],
])
def test_bad_arguments_exit_2(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Usage errors, bad values and unreadable scenarios exit with 2."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2


@pytest.mark.parametrize(("argv", "message"), [
    (["--seed", "-1"], "replog simulate: error: --seed: expected a non-negative integer, got -1"),
    (["--duration-ms", "0"], "replog simulate: error: --duration-ms: expected a positive integer, got 0"),
])
def test_bad_values_are_named(argv: list[str], message: str, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """A refused option value is shown in the message."""
    assert main(["--scenario", STEADY, "--out", str(tmp_path / "o"), *argv]) == 2
    assert capsys.readouterr().err.strip() == message


def test_unreadable_scenarios_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing file, a folder and a binary file each give one line naming the file and why."""
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"name: \xff\xfe\n")
    cases = [(tmp_path / "nope.yaml", "No such file or directory"), (tmp_path, "Is a directory"),
             (binary, "not UTF-8 text (byte 6)")]
    for path, why in cases:
        assert main(["--scenario", str(path), "--out", str(tmp_path / "o")]) == 2
        assert capsys.readouterr().err == f"replog simulate: error: cannot read scenario {path}: {why}\n"


def test_invalid_scenario_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A scenario error is reported with its key path."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nduration_ms: 10\ncluster: {brokers: 2}\ntopics: [{name: t, replication_factor: 4}]\n")
    assert main(["--scenario", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "topics[0].replication_factor: expected an integer in 1..2" in capsys.readouterr().err


def test_a_run_already_in_its_folder_is_reusable_only_as_this_code_and_scenario_wrote_it(tmp_path: Path) -> None:
    """The demo run again keeps the files `reusable_run` vouches for: the same run id, code version and scenario
    digest, every event file in place; another seed, a changed setting, a missing file or an unreadable run.json
    means simulating again."""
    from dataclasses import replace

    from replication_core.sim.cli import load_scenario, reusable_run, simulate

    scenario = load_scenario(Path(STEADY)).with_overrides(duration_ms=500)
    out = tmp_path / "out"
    assert reusable_run(scenario, out) is None, "nothing there yet"
    manifest, _ = simulate(scenario, out)
    assert reusable_run(scenario, out) == json.loads((out / "run.json").read_text())
    assert manifest["scenario_digest"] == reusable_run(scenario, out)["scenario_digest"]
    assert reusable_run(scenario.with_overrides(seed=2), out) is None
    changed = replace(scenario, broker_config=replace(scenario.broker_config, replica_lag_time_max_ms=12345))
    assert reusable_run(changed, out) is None, "same run id, another scenario"
    (out / manifest["files"][0]).unlink()
    assert reusable_run(scenario, out) is None
    simulate(scenario, out)
    (out / "run.json").write_text("{not json")
    assert reusable_run(scenario, out) is None
