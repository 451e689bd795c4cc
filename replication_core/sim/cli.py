"""`replog simulate`: run a scenario and write its event files plus a `run.json` manifest.

    replog simulate --scenario conf/scenarios/steady-state.yaml --out out/steady \
        [--seed N] [--duration-ms N] [--truncation-mode high-watermark|leader-epoch-v0|leader-epoch|diverging-epoch] \
        [--eligible-leader-replicas on|off] [--format parquet|jsonl]

Exit codes: 0 success, 2 invalid arguments or scenario (the message names the key and the expected
form), or an output folder that cannot take the run's files (checked before simulating; an OSError while
writing exits 2 as well). Faults scheduled after the run's end (e.g. with a shorter `--duration-ms`) are
not applied: a warning on stderr names them, and the summary counts them. A progress line (events,
virtual time, events/s) goes to stderr only when stderr is a terminal and `CI` is not set; a summary is
printed at the end. Wall-clock time is used only for that display.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replication_core import provenance
from replication_core._native_guard import core_compiled
from replication_core.sim.cluster import Cluster, RunStats
from replication_core.sim.scenario import (
    Fault,
    Scenario,
    ScenarioError,
    mode_from_text,
    mode_to_text,
    parse_scenario_text,
)
from replication_core.sim.writer import EventWriter
from schemas.events import SCHEMA_VERSION

MODES = ("high-watermark", "leader-epoch-v0", "leader-epoch", "diverging-epoch")


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (raises `ScenarioError`, or OSError if unreadable)."""
    return parse_scenario_text(Path(path).read_text(encoding="utf-8"))


class ScenarioFileError(ValueError):
    """A scenario file that cannot be read or is no valid scenario; the message names the file."""


def read_scenario(path: str | Path) -> Scenario:
    """`load_scenario` with every failure a `ScenarioFileError` naming the file (what the commands print)."""
    try:
        return load_scenario(path)
    except ScenarioError as exc:
        raise ScenarioFileError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise ScenarioFileError(f"cannot read scenario {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ScenarioFileError(f"cannot read scenario {path}: not UTF-8 text (byte {exc.start})") from exc


def code_version() -> str:
    """Package version plus a digest of the engine and simulator sources (what produced the events)."""
    return provenance.code_version([("replication_core", None)])


def max_network_delay_ms(scenario: Scenario) -> int | None:
    """Upper bound of one message's latency (None when a distribution is unbounded), for the checker."""
    net = scenario.network
    bounds = []
    for lat in [net.latency, *(link.latency for link in net.links if link.latency is not None)]:
        if lat.dist == "exponential":
            return None
        bounds.append(int(lat.value if lat.dist == "constant" else lat.max))
    return max(bounds)


def output_dir_problem(out: str | Path) -> str | None:
    """Why `out` cannot take a run's files (`events/` and `run.json`), or None when it can.

    Checked before simulating so that a long run is not lost to a typo in `--out`."""
    return folder_problem(out, "the run's files", "events")


def folder_problem(out: str | Path, what: str, inner: str | None = None) -> str | None:
    """Why `out` (and its subfolder `inner`) cannot take `what`, or None when it can; both are created.

    Creating them is the test: only the OS can tell for sure whether a folder can be made (procfs,
    read-only mounts, permissions, which root bypasses for `os.access`)."""
    out = Path(out)
    folders = (out,) if inner is None else (out, out / inner)
    for path in folders:
        if path.exists() and not path.is_dir():
            return f"expected a directory for {what}, but {path} is an existing file"
    # A file further up makes mkdir fail with a bare "Not a directory"; name the file instead.
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"expected a directory for {what}, but {parent} is an existing file, not a directory"
            break
    try:
        folders[-1].mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the directory {exc.filename or folders[-1]}: {exc.strerror or exc}"
    for path in folders:
        if not os.access(path, os.W_OK | os.X_OK):
            return f"expected a writable directory, but {path} is not writable"
    return None


def faults_after_end(scenario: Scenario) -> list[tuple[int, Fault]]:
    """The scripted faults (index in `faults`, fault) scheduled after the run's end: the clock stops at
    `duration_ms` (callbacks at exactly that time still run), so these are never applied."""
    return [(i, f) for i, f in enumerate(scenario.faults) if f.at_ms > scenario.duration_ms]


def describe_fault(index: int, fault: Fault) -> str:
    """`faults[0] crash broker 1 at_ms 10000`: the scenario key, the action, its target and its time."""
    if fault.broker is not None:
        target = f" broker {fault.broker}"
    elif fault.topic is not None:
        target = f" {fault.topic}-{fault.partition}"
    elif fault.src or fault.dst:
        target = f" {list(fault.src)} -> {list(fault.dst)}"
    else:
        target = ""
    return f"faults[{index}] {fault.action}{target} at_ms {fault.at_ms}"


def run_id_for(scenario: Scenario) -> str:
    """Deterministic run id: scenario, truncation mode, seed and duration, and `.elr` when the cluster runs
    eligible leader replicas (so a scenario run both ways gives two runs in one lake)."""
    elr = ".elr" if scenario.cluster.eligible_leader_replicas else ""
    return f"{scenario.name}.{mode_to_text(scenario.truncation_mode)}.s{scenario.seed}.d{scenario.duration_ms}{elr}"


def scenario_digest(scenario: Scenario) -> str:
    """A digest of everything the scenario sets (its dataclasses' repr is deterministic): two runs with the same
    digest and code version write the same event files."""
    return hashlib.sha256(repr(scenario).encode()).hexdigest()[:16]


def reusable_run(scenario: Scenario, out: str | Path) -> dict[str, Any] | None:
    """The manifest of the run `out` already holds, where it is `scenario`'s run by this code with every event file
    in place (a rerun would write the same bytes); None otherwise, or where `run.json` cannot be read."""
    try:
        manifest = json.loads((Path(out) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    same = (manifest.get("run_id") == run_id_for(scenario) and manifest.get("code_version") == code_version()
            and manifest.get("scenario_digest") == scenario_digest(scenario))
    files = manifest.get("files")
    if not same or not isinstance(files, list) or not all((Path(out) / str(f)).is_file() for f in files):
        return None
    return manifest


GC_GEN0_THRESHOLD = 200_000
"""Allocations between young-generation collections during a run (CPython's default is 700). 200k, not
50k: on the large scenario the collector's time fell from about 6.5 % of the run's CPU to 1.5 % (each
young collection costs about as much whatever the threshold, and every tenth one is a gen-1 pass over
what the previous ones kept), with the same peak memory."""


@contextmanager
def _fewer_gc_passes() -> Iterator[None]:
    """Run with a larger young-generation threshold, restoring the previous thresholds afterwards.

    A run allocates millions of short-lived objects (requests, responses, batches) and keeps a
    batch of up to `batch_events` events alive between flushes, so with the default threshold the
    cyclic collector keeps re-scanning live objects (about a fifth of the CPU time of the benchmark
    scenario). The simulator's hot paths create no reference cycles, so collecting less often frees
    the same memory; the collector stays enabled for the cycles rarer paths may leave. GC timing has
    no influence on the simulation (no finalizers or weak references), so outputs are unchanged."""
    old = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def simulate(scenario: Scenario, out: str | Path, progress: bool = False) -> tuple[dict[str, Any], RunStats]:
    """Run `scenario`, write its files under `out`, return (manifest, stats)."""
    with _fewer_gc_passes():
        return _simulate(scenario, out, progress)


def _simulate(scenario: Scenario, out: str | Path, progress: bool) -> tuple[dict[str, Any], RunStats]:
    writer = EventWriter(out, run_id_for(scenario), scenario.writer.format, scenario.writer.max_events_per_file)
    cluster = Cluster(scenario)
    started = time.monotonic()
    last = [started]

    def on_progress(c: Cluster) -> None:
        now = time.monotonic()
        if now - last[0] < 0.5:
            return
        last[0] = now
        done = writer.next_event_id + len(c.events or ())
        virtual_s = (c.queue.now_ms - c.start_ms) / 1000
        rate = done / max(now - started, 1e-9)
        frac = (c.queue.now_ms - c.start_ms) / max(scenario.duration_ms, 1)
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\r[{bar:<30}] {done:>11,} events  {virtual_s:8.1f} s virtual  {rate:>10,.0f} events/s")
        sys.stderr.flush()

    try:
        stats = cluster.run(writer, scenario.writer.batch_events, on_progress if progress else None)
    finally:
        writer.close()
    if progress:
        sys.stderr.write("\n")
    manifest = {
        "run_id": writer.run_id,
        "scenario": scenario.name,
        "scenario_digest": scenario_digest(scenario),
        "description": scenario.description,
        "seed": scenario.seed,
        "truncation_mode": mode_to_text(scenario.truncation_mode),
        "eligible_leader_replicas": scenario.cluster.eligible_leader_replicas,
        "duration_ms": scenario.duration_ms,
        "start_ms": scenario.start_ms,
        "code_version": code_version(),
        "core_compiled": core_compiled(),
        "schema_version": SCHEMA_VERSION,
        "format": scenario.writer.format,
        "files": writer.files,
        "events": writer.next_event_id,
        "counts": dict(sorted(writer.counts.items())),
        "acknowledged_records": {"acks_all": writer.acked_records.get("-1", 0),
                                 "acks_1": writer.acked_records.get("1", 0),
                                 "acks_0": writer.acked_records.get("0", 0)},
        "produced_batches": stats.produced_batches,
        "acked_batches_seen_by_producers": stats.acked_batches,
        "failed_batches": stats.failed_batches,
        "faults_applied": [list(f) for f in stats.faults_applied],
        "controller": stats.controller,
        "max_network_delay_ms": max_network_delay_ms(scenario),
        "brokers": scenario.cluster.brokers,
        "partitions": sum(t.partitions for t in scenario.topics),
    }
    writer.write_manifest(manifest)
    return manifest, stats


PROG = "replog simulate"
"""How the command names itself: the prefix of its error lines, as argparse's own errors have it."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Run a replication scenario on the "
                                "deterministic simulator and write its event files.")
    p.add_argument("--scenario", required=True, help="scenario YAML (conf/scenarios/*.yaml)")
    p.add_argument("--out", required=True, help="output folder (events/ and run.json)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--duration-ms", type=int, help="override the scenario's virtual duration")
    p.add_argument("--truncation-mode", choices=MODES, help="override the follower truncation protocol")
    p.add_argument("--eligible-leader-replicas", choices=("on", "off"),
                   help="override cluster.eligible_leader_replicas (KIP-966, KRaft scenarios only)")
    p.add_argument("--format", choices=("parquet", "jsonl"), help="event file format (default: the scenario's)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `replog simulate`; returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    if args.duration_ms is not None and args.duration_ms <= 0:
        sys.stderr.write(f"{PROG}: error: --duration-ms: expected a positive integer, got {args.duration_ms}\n")
        return 2
    if args.seed is not None and args.seed < 0:
        sys.stderr.write(f"{PROG}: error: --seed: expected a non-negative integer, got {args.seed}\n")
        return 2
    try:
        scenario = read_scenario(args.scenario)
        scenario = scenario.with_overrides(
            seed=args.seed, duration_ms=args.duration_ms,
            truncation_mode=mode_from_text(args.truncation_mode) if args.truncation_mode else None,
            fmt=args.format,
            eligible_leader_replicas=None if args.eligible_leader_replicas is None
            else args.eligible_leader_replicas == "on")
    except ScenarioFileError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    except ScenarioError as exc:  # an override the scenario does not allow
        sys.stderr.write(f"{PROG}: error: {args.scenario}: {exc}\n")
        return 2
    problem = output_dir_problem(args.out)
    if problem is not None:
        sys.stderr.write(f"{PROG}: error: --out {args.out}: {problem}\n")
        return 2
    # Shortening a run is legitimate, so not an error; but a fault silently left out (the crash a
    # scenario is about) would make the run look like a pass.
    late = faults_after_end(scenario)
    if late:
        sys.stderr.write(f"{PROG}: warning: {len(late)} scheduled fault(s) fall after the run's end (duration_ms "
                         f"{scenario.duration_ms}) and will not be applied: "
                         + ", ".join(describe_fault(i, f) for i, f in late) + "\n")
    progress = sys.stderr.isatty() and not os.environ.get("CI")
    started = time.monotonic()
    try:
        manifest, stats = simulate(scenario, args.out, progress)
    except OSError as exc:  # disk full, folder removed meanwhile: a user's problem, not a crash
        where = f"{exc.filename}: " if exc.filename else ""
        ends_bar = "\n" if progress else ""  # the progress bar's line has no newline yet
        sys.stderr.write(f"{ends_bar}{PROG}: error: --out {args.out}: cannot write the run's files: "
                         f"{where}{exc.strerror or exc}\n")
        return 2
    wall = time.monotonic() - started
    acked = manifest["acknowledged_records"]
    dropped = f" ({len(late)} scheduled after the run's end, not applied)" if late else ""
    elr = ", eligible leader replicas" if scenario.cluster.eligible_leader_replicas else ""
    sys.stderr.write(
        f"simulated {scenario.name} ({manifest['truncation_mode']}{elr}, seed {scenario.seed}): "
        f"{manifest['events']:,} events in {len(manifest['files'])} file(s), "
        f"{scenario.duration_ms / 1000:.1f} s virtual in {wall:.1f} s wall "
        f"({manifest['events'] / max(wall, 1e-9):,.0f} events/s)\n"
        f"  batches produced {stats.produced_batches:,}, acknowledged records acks=all {acked['acks_all']:,} "
        f"acks=1 {acked['acks_1']:,} acks=0 {acked['acks_0']:,}; elections {stats.controller['elections']}; "
        f"faults {len(stats.faults_applied)}{dropped}\n"
        f"  wrote {Path(args.out) / 'run.json'}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
