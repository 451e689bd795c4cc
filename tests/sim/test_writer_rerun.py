"""A rerun into the same folder: unchanged files keep their modification time (so `replog ingest` sees nothing
new), changed ones are replaced, and files the new run does not write are removed."""

from __future__ import annotations

import os
from pathlib import Path

from replication_core.sim.cli import load_scenario, simulate
from replication_core.sim.writer import STAGING

SCENARIO = Path(__file__).resolve().parents[2] / "conf" / "scenarios" / "steady-state.yaml"
OLD_NS = 1_000_000_000  # 1970-01-01T00:00:01: a time no write of this test can give a file


def _parts(out: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted((out / "events").glob("part-*"))}


def _age(out: Path) -> None:
    for p in (out / "events").glob("part-*"):
        os.utime(p, ns=(OLD_NS, OLD_NS))


def test_a_rerun_keeps_identical_files_untouched_and_replaces_changed_ones(tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIO).with_overrides(duration_ms=500)
    simulate(scenario, tmp_path)
    _age(tmp_path)
    first = _parts(tmp_path)
    assert first and all(ns == OLD_NS for ns, _ in first.values())

    simulate(scenario, tmp_path)
    assert _parts(tmp_path) == first, "same scenario and seed: same bytes, file left as it was"
    assert not (tmp_path / "events" / STAGING).exists()

    _age(tmp_path)
    simulate(scenario.with_overrides(seed=scenario.seed + 1), tmp_path)
    other = _parts(tmp_path)
    assert other.keys() == first.keys()
    assert all(ns != OLD_NS and data != first[name][1] for name, (ns, data) in other.items())


def test_a_rerun_removes_the_files_it_does_not_write(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "part-00007.parquet").write_bytes(b"an earlier, longer run's last file")
    simulate(load_scenario(SCENARIO).with_overrides(duration_ms=300), tmp_path)
    assert sorted(_parts(tmp_path)) == ["part-00000.parquet"]
