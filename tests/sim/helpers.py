"""Helpers shared by the simulator tests: load a shipped scenario and run it in memory, or a recorded run."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from replication_core.config import TruncationMode
from replication_core.sim.cli import load_scenario
from replication_core.sim.cluster import Cluster, ListSink, RunStats
from replication_core.sim.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "conf" / "scenarios"
RECORDED_RUNS = Path(__file__).resolve().parents[1] / "data" / "sim-runs"


def scenario(name: str, **overrides: Any) -> Scenario:
    """A shipped scenario (`conf/scenarios/<name>.yaml`) with CLI-style overrides."""
    return load_scenario(SCENARIOS / f"{name}.yaml").with_overrides(**overrides)


def run(sc: Scenario) -> tuple[Cluster, list[dict[str, Any]], RunStats]:
    """Run a scenario in memory: the cluster (final engine state), its events, its stats."""
    cluster = Cluster(sc)
    sink = ListSink()
    stats = cluster.run(sink, batch_events=4096)
    return cluster, sink.events, stats


def watch(sc: Scenario, reader: Callable[[Cluster], Callable[[], Any]]
          ) -> tuple[list[tuple[int, Any]], list[dict[str, Any]], RunStats]:
    """Run `sc` in memory, reading a value of the cluster every virtual millisecond (`reader(cluster)` gives the
    function that reads it): the (ms after the start, value) of each look that found it changed since the look
    before (the first look compares with the value before the run), the events and the stats. A look at T runs
    before whatever else is queued for T later, so a change at T may be seen at T + 1."""
    cluster = Cluster(sc)
    read = reader(cluster)
    start, end = cluster.start_ms, cluster.start_ms + sc.duration_ms
    changes: list[tuple[int, Any]] = []
    last = [read()]

    def look(at: int) -> None:
        value = read()
        if value != last[0]:
            changes.append((at - start, value))
            last[0] = value
        if at + 1 < end:
            cluster.queue.at(at + 1, look, at + 1)

    cluster.queue.at(start + 1, look, start + 1)
    sink = ListSink()
    stats = cluster.run(sink)
    return changes, sink.events, stats


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


def recorded_run(name: str) -> tuple[list[dict[str, Any]], RunStats]:
    """A whole run an earlier simulator recorded (`tests/data/sim-runs/NAME.jsonl.gz`: a header line with its
    `RunStats`, then its events in order; `tests/data/sim-runs/README.md` says which code and command made each),
    kept for a shape today's simulator no longer draws from any seed searched."""
    with gzip.open(RECORDED_RUNS / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
        header = json.loads(f.readline())["run_stats"]
        events = [json.loads(line) for line in f]
    header["faults_applied"] = tuple(tuple(x) for x in header["faults_applied"])
    return events, RunStats(**header)


def check(events: list[dict[str, Any]], stats: RunStats, max_network_delay_ms: int | None = None) -> Any:
    """The reference checker's verdict on an in-memory run (envelope stamped as the writer does). The events
    record the run's GC pauses and disk stalls (`broker_fault`), so `delayed_fetch_bound` is judged; with the
    run's `max_network_delay_ms` (`sim.cli.max_network_delay_ms`) against maxWait + 2 x that delay, as
    `replog check` judges a simulated run, else against the socket timeout."""
    from replication_core.checker.checker import CheckOptions, check_events

    stamped = [dict(ev, schema_version="1.0", source="engine", run_id="run", event_id=i)
               for i, ev in enumerate(events)]
    return check_events(stamped, CheckOptions(max_network_delay_ms=max_network_delay_ms))
