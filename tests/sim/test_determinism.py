"""Same scenario and seed, byte-identical files; a different seed, different events."""

from __future__ import annotations

from pathlib import Path

import pytest

from replication_core.sim.cli import main
from tests.sim.helpers import SCENARIOS


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("name", "fmt", "extra"), [
    ("steady-state", "parquet", ["--duration-ms", "8000"]),
    ("steady-state", "jsonl", ["--duration-ms", "8000"]),
    ("kip-279-fast-failover", "parquet", ["--truncation-mode", "leader-epoch-v0"]),
    ("leader-crash", "jsonl", ["--duration-ms", "20000"]),
    ("nemesis-small", "parquet", ["--duration-ms", "30000", "--seed", "7"]),
])
def test_reruns_are_byte_identical(tmp_path: Path, name: str, fmt: str, extra: list[str]) -> None:
    """Two runs of one scenario and seed write the same bytes (events and run.json)."""
    args = ["--scenario", str(SCENARIOS / f"{name}.yaml"), "--format", fmt, *extra]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert sorted(a) == sorted(b) and any(k.startswith("events/") for k in a)
    for k in a:
        assert a[k] == b[k], f"{k} differs between reruns"


def test_another_seed_gives_other_events(tmp_path: Path) -> None:
    """The seed drives the network latencies and the producers."""
    base = ["--scenario", str(SCENARIOS / "steady-state.yaml"), "--format", "jsonl", "--duration-ms", "3000"]
    assert main([*base, "--seed", "1", "--out", str(tmp_path / "a")]) == 0
    assert main([*base, "--seed", "2", "--out", str(tmp_path / "b")]) == 0
    assert _files(tmp_path / "a")["events/part-00000.jsonl"] != _files(tmp_path / "b")["events/part-00000.jsonl"]


def test_reruns_in_fresh_interpreters_with_other_hash_seeds_are_byte_identical(tmp_path: Path) -> None:
    """String hashing is randomised per interpreter (PYTHONHASHSEED): nothing may depend on set order of
    (topic, partition) keys. Two topics, a crash and a controlled shutdown remove several partitions from
    fetchers at once (the `fetcher_change` payload order once depended on it)."""
    import os
    import subprocess
    import sys

    scenario = tmp_path / "two-topics-faults.yaml"
    scenario.write_text((SCENARIOS / "steady-state.yaml").read_text() + (
        "faults:\n"
        "  - {at_ms: 5000, action: crash, broker: 1, mode: power, down_ms: 4000}\n"
        "  - {at_ms: 12000, action: controlled_shutdown, broker: 2, down_ms: 2000}\n"))
    outputs = []
    for seed in ("1", "5"):
        out = tmp_path / f"h{seed}"
        subprocess.run([sys.executable, "-m", "replication_core.sim.cli", "--scenario", str(scenario), "--out",
                        str(out), "--format", "jsonl", "--duration-ms", "14000"], check=True, capture_output=True,
                       env={**os.environ, "PYTHONHASHSEED": seed, "CI": "1"},
                       cwd=Path(__file__).resolve().parents[2])
        outputs.append(_files(out))
    assert outputs[0] == outputs[1]
