"""Helpers shared by the simulator tests: load a shipped scenario and run it in memory."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from replication_core.config import TruncationMode
from replication_core.sim.cli import load_scenario
from replication_core.sim.cluster import Cluster, ListSink, RunStats
from replication_core.sim.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "conf" / "scenarios"


def scenario(name: str, **overrides: Any) -> Scenario:
    """A shipped scenario (`conf/scenarios/<name>.yaml`) with CLI-style overrides."""
    return load_scenario(SCENARIOS / f"{name}.yaml").with_overrides(**overrides)


def run(sc: Scenario) -> tuple[Cluster, list[dict[str, Any]], RunStats]:
    """Run a scenario in memory: the cluster (final engine state), its events, its stats."""
    cluster = Cluster(sc)
    sink = ListSink()
    stats = cluster.run(sink, batch_events=4096)
    return cluster, sink.events, stats


@cache
def _run_named(name: str, mode: TruncationMode | None, overrides: tuple[tuple[str, Any], ...]
               ) -> tuple[Cluster, list[dict[str, Any]], RunStats]:
    return run(scenario(name, truncation_mode=mode, **dict(overrides)))


def run_named(name: str, mode: TruncationMode | None = None, **overrides: Any) -> tuple[Cluster, list[dict[str, Any]],
                                                                                        RunStats]:
    """`run(scenario(name, truncation_mode=mode, ...))`, memoised for the test session: runs are
    deterministic, so the outcome tests and the checker tests share one run per (scenario, mode).
    Callers must not mutate what they get."""
    return _run_named(name, mode, tuple(sorted(overrides.items())))


def check(events: list[dict[str, Any]], stats: RunStats) -> Any:
    """The reference checker's verdict on an in-memory run (envelope stamped as the writer does)."""
    from replication_core.checker.checker import CheckOptions, check_events

    stamped = [dict(ev, schema_version="1.0", source="engine", run_id="run", event_id=i)
               for i, ev in enumerate(events)]
    stalls = any(kind in ("pause", "disk_stall") for _, kind in stats.faults_applied)
    return check_events(stamped, CheckOptions(processing_stalls=stalls))
