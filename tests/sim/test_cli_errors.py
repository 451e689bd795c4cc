"""`replog simulate` input handling: an unusable output folder, write failures, faults scheduled after the
run's end. User errors exit 2 with one line naming the value and what was expected."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
import yaml

from replication_core.sim import cli
from replication_core.sim.cli import main
from replication_core.sim.writer import EventWriter
from tests.sim.helpers import SCENARIOS

STEADY = str(SCENARIOS / "steady-state.yaml")
LEADER_CRASH = str(SCENARIOS / "leader-crash.yaml")


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("replog simulate: error:")]


def test_out_is_an_existing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--out naming a regular file: exit 2 before simulating, one line naming the path."""
    afile = tmp_path / "afile"
    afile.write_text("keep me\n")
    assert main(["--scenario", STEADY, "--out", str(afile), "--duration-ms", "500"]) == 2
    err = capsys.readouterr().err
    assert _error_lines(err) == [f"replog simulate: error: --out {afile}: expected a directory for the run's files, "
                                 f"but {afile} is an existing file"]
    assert "simulated" not in err and afile.read_text() == "keep me\n"


def test_out_below_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--out below a regular file cannot be created: the message names the file in the way."""
    afile = tmp_path / "afile"
    afile.write_text("")
    assert main(["--scenario", STEADY, "--out", str(afile / "sub"), "--duration-ms", "500"]) == 2
    assert _error_lines(capsys.readouterr().err) == [
        f"replog simulate: error: --out {afile / 'sub'}: expected a directory for the run's files, but {afile} is "
        "an existing file, not a directory"]


def test_events_subfolder_is_a_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An `events` file where the event files' folder goes is named too."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "events").write_text("")
    assert main(["--scenario", STEADY, "--out", str(tmp_path / "out"), "--duration-ms", "500"]) == 2
    assert _error_lines(capsys.readouterr().err) == [
        f"replog simulate: error: --out {tmp_path / 'out'}: expected a directory for the run's files, but "
        f"{tmp_path / 'out' / 'events'} is an existing file"]


def test_out_that_cannot_be_created_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A folder the OS refuses to create (here: a simulated read-only file system; `/proc/nope` in the
    review) exits 2 naming the path and the OS's reason."""
    out = tmp_path / "ro" / "out"

    def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert main(["--scenario", STEADY, "--out", str(out), "--duration-ms", "500"]) == 2
    assert _error_lines(capsys.readouterr().err) == [
        f"replog simulate: error: --out {out}: cannot create the directory {out / 'events'}: Read-only file system"]


def test_write_failure_during_the_run_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An OSError while writing (disk full) is one clear line and exit 2, not a traceback."""
    class FullDisk(EventWriter):
        def write(self, events: list[dict[str, Any]]) -> None:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.events_dir / "part-00000.jsonl"))

    monkeypatch.setattr(cli, "EventWriter", FullDisk)
    out = tmp_path / "out"
    assert main(["--scenario", STEADY, "--out", str(out), "--duration-ms", "500", "--format", "jsonl"]) == 2
    assert _error_lines(capsys.readouterr().err) == [
        f"replog simulate: error: --out {out}: cannot write the run's files: {out / 'events' / 'part-00000.jsonl'}: "
        "No space left on device"]


def test_faults_after_the_end_are_named_in_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--duration-ms shorter than the fault schedule: still a run (exit 0), but a warning names each
    fault left out and the summary says how many."""
    assert main(["--scenario", LEADER_CRASH, "--out", str(tmp_path / "o"), "--duration-ms", "3000",
                 "--format", "jsonl"]) == 0
    err = capsys.readouterr().err
    assert ("replog simulate: warning: 2 scheduled fault(s) fall after the run's end (duration_ms 3000) and will not "
            "be applied: faults[0] crash broker 1 at_ms 10000, faults[1] restart broker 1 at_ms 22000\n") in err
    assert "faults 0 (2 scheduled after the run's end, not applied)" in err


def test_no_warning_when_every_fault_is_within_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fault at exactly the run's end is applied (the clock runs callbacks at the end time): no warning."""
    scenario = tmp_path / "edge.yaml"
    doc = yaml.safe_load(Path(LEADER_CRASH).read_text())
    doc["faults"] = [{"at_ms": 2000, "action": "crash", "broker": 1}]
    scenario.write_text(yaml.safe_dump(doc))
    assert main(["--scenario", str(scenario), "--out", str(tmp_path / "o"), "--duration-ms", "2000",
                 "--format", "jsonl"]) == 0
    err = capsys.readouterr().err
    assert not any(line.startswith("replog simulate: warning:") for line in err.splitlines()) and "; faults 1\n" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs procfs")
def test_out_under_proc_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """The review's case: procfs refuses new folders (even to root)."""
    assert main(["--scenario", STEADY, "--out", "/proc/nope", "--duration-ms", "500"]) == 2
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith(
        "replog simulate: error: --out /proc/nope: cannot create the directory /proc/nope")
