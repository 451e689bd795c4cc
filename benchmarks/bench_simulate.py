"""`replog simulate` benchmark: events per second and peak memory on the large scenario.

Runs `replication_core.sim.cli.simulate` on `conf/scenarios/large-30-brokers.yaml` (30 brokers, 3 000
partitions, RF 3) for each requested virtual duration, each in a fresh Python process so that its
peak resident memory (`resource.getrusage(RUSAGE_SELF).ru_maxrss`) is its own. Reported per run:
events written, wall seconds, events per wall second (the whole `simulate` call: engine + simulator +
Parquet writing), CPU seconds, the part of them spent writing events (`EventWriter.write`) with the
two rates it bounds (writing alone, engine + simulator alone), and peak RSS. Two durations show
whether memory grows with the run (events stream to rolled files in bounded batches; what still
grows is the replicas' logs, which keep one small tuple per record batch since retention is not
modelled).

Target (issue 4): >= 300 k events/s on one core, peak memory < 2 GiB for 10 virtual minutes.

Run from the repository root:
    python benchmarks/bench_simulate.py                         # 10 s and 30 s virtual (a few minutes)
    python benchmarks/bench_simulate.py --durations-ms 600000   # the 10-minute run (long)
    python benchmarks/bench_simulate.py --profile 5000          # cProfile top functions of a 5 s run
    python benchmarks/bench_simulate.py --ab HEAD~3,WORKTREE --durations-ms 30000   # lockstep A/B
    python benchmarks/bench_simulate.py --ab-build --durations-ms 30000   # interpreted vs compiled build
    python benchmarks/bench_simulate.py --ab-compiled 034cc62,WORKTREE --durations-ms 30000   # both compiled
Results are stored as JSON under `benchmarks/results/simulate-<UTC date>.json` (`--ab`: printed, and
stored only with `--out`).

`--ab A,B` compares two versions of the code (git revisions, or `WORKTREE` for the working tree), both
interpreted (`--ab-build` measures the compiled build), on a shared, busy machine: both run the same
scenario in separate processes, in alternating slices of virtual time (`--slice-ms`, 250 by default: A
runs a slice while B waits, then B, then A ...), so a change in the machine's load hits both alike;
which one goes first alternates between rounds (`--rounds`). Per round it reports each side's CPU
seconds (`time.process_time` over the whole `simulate` call) and their ratio B/A; the median ratio is
the figure to quote. Slicing changes when the event batches are flushed, not what is simulated or
written.

`--ab-build` compares the working tree's compiled build (`setup.py`, mypyc) with the same sources
interpreted (copied without the extensions): A = interpreted, B = compiled. A compiled `EventQueue`
cannot be patched, so the two alternate at every event batch handed to the (interpreted) writer instead
of every slice of virtual time; the ratio B/A is the compiled build's CPU per event against the
interpreted one's.

`--ab-compiled A,B` compares two versions as users run them, both compiled: a git revision is built the
way `pip install` builds it (a wheel from `git archive` of the revision, mypyc in pip's isolated build
environment, a minute or two each), `WORKTREE` is this tree's own compiled build (`pip install -e .` after
the last edit of a compiled module, or its import refuses); the two alternate at every event batch, as
with `--ab-build`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from _meta import commit_measured  # benchmarks/ is on sys.path when a script runs from it

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "conf" / "scenarios" / "large-30-brokers.yaml"
TARGET_EVENTS_PER_S = 300_000
TARGET_PEAK_BYTES = 2 * 1024**3


def child(duration_ms: int, fmt: str, scenario: Path) -> dict[str, Any]:
    """One measured run in this process (called in a fresh interpreter by `main`)."""
    sys.path.insert(0, str(ROOT))
    from replication_core.sim.cli import load_scenario, simulate
    from replication_core.sim.writer import EventWriter

    # The writer's share of the CPU: time spent in `EventWriter.write` (stamping, Python -> Arrow
    # conversion, Parquet / JSON encoding). Wrapped on the class in this child process only.
    write_cpu = [0.0]
    plain_write = EventWriter.write

    def timed_write(self: EventWriter, events: Any) -> None:
        c0 = time.process_time()
        plain_write(self, events)
        write_cpu[0] += time.process_time() - c0

    EventWriter.write = timed_write  # type: ignore[method-assign]
    sc = load_scenario(scenario).with_overrides(duration_ms=duration_ms, fmt=fmt)
    with tempfile.TemporaryDirectory(prefix="replog-bench-sim-") as out:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        manifest, _ = simulate(sc, out)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        size = sum(p.stat().st_size for p in Path(out).rglob("*") if p.is_file())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "duration_ms": duration_ms,
        "format": fmt,
        "events": manifest["events"],
        "files": len(manifest["files"]),
        "bytes_written": size,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "events_per_s": round(manifest["events"] / wall),
        "events_per_cpu_s": round(manifest["events"] / cpu),
        "write_cpu_s": round(write_cpu[0], 2),
        # Upper bounds: the rate if the engine and simulator cost nothing (writing only), and the
        # rate of the engine + simulator alone (if writing cost nothing).
        "events_per_write_cpu_s": round(manifest["events"] / write_cpu[0]) if write_cpu[0] else None,
        "events_per_sim_cpu_s": round(manifest["events"] / (cpu - write_cpu[0])),
        "peak_rss_bytes": peak_kib * 1024,
        "counts": manifest["counts"],
    }


def profile(duration_ms: int, scenario: Path) -> None:
    """Print the 25 most expensive functions (own time) of one run."""
    import cProfile
    import pstats

    sys.path.insert(0, str(ROOT))
    from replication_core.sim.cli import load_scenario, simulate

    sc = load_scenario(scenario).with_overrides(duration_ms=duration_ms)
    with tempfile.TemporaryDirectory(prefix="replog-bench-sim-") as out:
        prof = cProfile.Profile()
        prof.enable()
        simulate(sc, out)
        prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def lockstep_child(src: Path, duration_ms: int, slice_ms: int, scenario: Path, by_batch: bool = False) -> None:
    """One side of `--ab`: run `simulate` from the code in `src`, one slice of virtual time per line
    read from stdin; print `END <cpu seconds> <events>` at the end (called in a fresh interpreter).

    `by_batch` (`--ab-build`): a slice is the work up to and including the next event batch handed to the
    writer instead, since a compiled `EventQueue` cannot be patched (the writer is never compiled)."""
    sys.path.insert(0, str(src))
    from replication_core.sim import clock
    from replication_core.sim.cli import load_scenario, simulate
    from replication_core.sim.writer import EventWriter

    loaded = Path(sys.modules["replication_core"].__file__ or "").resolve()
    if not loaded.is_relative_to(src.resolve()):
        raise SystemExit(f"replication_core imported from {loaded}, not from {src}")
    if by_batch:
        plain_write = EventWriter.write

        def turn_write(self: EventWriter, events: Any) -> None:
            plain_write(self, events)
            print("slice", flush=True)
            sys.stdin.readline()  # wait for our next turn

        EventWriter.write = turn_write  # type: ignore[method-assign]
        sc = load_scenario(scenario).with_overrides(duration_ms=duration_ms)
        with tempfile.TemporaryDirectory(prefix="replog-bench-ab-") as out:
            sys.stdin.readline()  # the set-up signal
            sys.stdin.readline()  # our first turn
            cpu0 = time.process_time()
            manifest, _ = simulate(sc, out)
            print(f"END {time.process_time() - cpu0} {manifest['events']}", flush=True)
        return
    run_until = clock.EventQueue.run_until

    def sliced(self: clock.EventQueue, end_ms: int, on_step: Any = None, step_every: int = 4096) -> None:
        until = self.now_ms
        while until < end_ms:
            until = min(until + slice_ms, end_ms)
            sys.stdin.readline()  # wait for our turn
            run_until(self, until, on_step, step_every)
            print("slice", flush=True)
        self.now_ms = max(self.now_ms, end_ms)

    clock.EventQueue.run_until = sliced  # type: ignore[method-assign]
    sc = load_scenario(scenario).with_overrides(duration_ms=duration_ms)
    with tempfile.TemporaryDirectory(prefix="replog-bench-ab-") as out:
        sys.stdin.readline()
        cpu0 = time.process_time()
        manifest, _ = simulate(sc, out)
        print(f"END {time.process_time() - cpu0} {manifest['events']}", flush=True)


def _code_tree(rev: str, into: Path) -> Path:
    """The code of `rev` as a directory with `replication_core`, `schemas` and `conf`, extracted from `git
    archive` under `into`; `WORKTREE`: a copy of the working tree's sources without its compiled extensions,
    since a revision's archive has none (the tree as built against a revision interpreted measured the build,
    ~0.8 of the CPU, not the change)."""
    if rev == "WORKTREE":
        return _interpreted_tree(into)
    return _extract(rev, into / _dir_name(rev), ("replication_core", "schemas", "conf"))


def _dir_name(rev: str) -> str:
    """`rev` as a folder name."""
    return rev.replace("/", "_").replace("~", "_").replace("^", "_")


def _extract(rev: str, dest: Path, paths: tuple[str, ...] = ()) -> Path:
    """`git archive` of `paths` (default: everything) at `rev`, extracted into `dest`."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", rev, *paths], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _interpreted_tree(into: Path) -> Path:
    """The working tree's `replication_core`, `schemas` and `conf` under `into`, without the compiled
    extensions and their build record: the same sources, interpreted."""
    dest = into / "interpreted"
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "_compiled_sources.json")
    for name in ("replication_core", "schemas", "conf"):
        shutil.copytree(ROOT / name, dest / name, ignore=skip)
    return dest


def _has_compiled_build(tree: Path) -> bool:
    """Whether `tree` holds compiled engine extensions (a `pip install` without REPLOG_PURE_PYTHON)."""
    return bool(list((tree / "replication_core").glob("replica_manager.*.so")))


def _compiled_tree(rev: str, into: Path) -> Path:
    """The code of `rev` compiled, as `pip install` builds it, unpacked under `into`: `git archive` of the
    revision built into a wheel by pip (mypyc runs in pip's isolated build environment); `WORKTREE`: this
    tree with its own compiled build."""
    if rev == "WORKTREE":
        if not _has_compiled_build(ROOT):
            raise SystemExit("--ab-compiled WORKTREE: no compiled build in this tree (pip install -e .)")
        return ROOT
    name = _dir_name(rev)
    src = _extract(rev, into / f"{name}-src")
    print(f"building {rev} (mypyc, as pip install does) ...", flush=True)
    wheels = into / f"{name}-wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(src)],
                   check=True)
    [wheel] = wheels.glob("*.whl")
    dest = into / name
    with zipfile.ZipFile(wheel) as whl:
        whl.extractall(dest)
    if not _has_compiled_build(dest):
        raise SystemExit(f"--ab-compiled {rev}: its wheel holds no compiled engine (a revision before mypyc?)")
    return dest


def _scenario_of(tree: Path, scenario: Path) -> Path:
    """The revision's own copy of a scenario file of this repository (its keys follow the code that reads them:
    an older revision refuses a key added since), in its tree or the sources its wheel was built from, else the
    file as given."""
    try:
        rel = scenario.resolve().relative_to(ROOT)
    except ValueError:
        return scenario
    for root in (tree, tree.parent / f"{tree.name}-src"):
        if (root / rel).exists():
            return root / rel
    return scenario


def lockstep_ab(revs: list[str], duration_ms: int, slice_ms: int, rounds: int, scenario: Path,
                mode: str = "interpreted") -> dict[str, Any]:
    """`--ab`: run the two code versions in alternating slices of virtual time, `rounds` times.

    `mode` "build" (`--ab-build`): the two sides are the working tree interpreted (a copy of its sources)
    and as built (its compiled extensions); "compiled" (`--ab-compiled`): both revisions compiled. Both
    alternate at every event batch (a compiled `EventQueue` cannot be sliced)."""
    cpu: dict[str, list[float]] = {rev: [] for rev in revs}
    events: dict[str, int] = {}
    by_batch = mode != "interpreted"
    with tempfile.TemporaryDirectory(prefix="replog-bench-ab-code-") as tmp:
        if mode == "build":
            trees = {revs[0]: _interpreted_tree(Path(tmp)), revs[1]: ROOT}
        elif mode == "compiled":
            trees = {rev: _compiled_tree(rev, Path(tmp)) for rev in revs}
        else:
            trees = {rev: _code_tree(rev, Path(tmp)) for rev in revs}
        for r in range(rounds):
            order = revs if r % 2 == 0 else revs[::-1]
            procs = {rev: subprocess.Popen(
                [sys.executable, __file__, "--lockstep-child", str(trees[rev]), "--durations-ms", str(duration_ms),
                 "--slice-ms", str(slice_ms), "--scenario", str(_scenario_of(trees[rev], scenario)),
                 *(["--by-batch"] if by_batch else [])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp, env={**os.environ, "CI": "1"})
                for rev in order}
            for rev in order:  # set-up (cluster, brokers) of both, then the slices one at a time
                procs[rev].stdin.write("go\n")  # type: ignore[union-attr]
                procs[rev].stdin.flush()  # type: ignore[union-attr]
            live = list(order)
            while live:
                for rev in list(live):
                    proc = procs[rev]
                    try:
                        proc.stdin.write("go\n")  # type: ignore[union-attr]
                        proc.stdin.flush()  # type: ignore[union-attr]
                    except BrokenPipeError:
                        pass
                    line = proc.stdout.readline()  # type: ignore[union-attr]
                    if line.startswith("END"):
                        _, seconds, count = line.split()
                        cpu[rev].append(float(seconds))
                        events[rev] = int(count)
                        live.remove(rev)
                    elif not line:
                        raise SystemExit(f"{rev}: the child process ended without a result")
            for proc in procs.values():
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait()
            a, b = revs
            print(f"round {r + 1}: {a} {cpu[a][-1]:.2f} s, {b} {cpu[b][-1]:.2f} s CPU, "
                  f"B/A {cpu[b][-1] / cpu[a][-1]:.3f}", flush=True)
    a, b = revs
    ratios = [y / x for x, y in zip(cpu[a], cpu[b], strict=True)]
    for rev in revs:
        med = statistics.median(cpu[rev])
        print(f"{rev}: {events[rev]:,} events, CPU s per round {[round(x, 2) for x in cpu[rev]]}, median {med:.2f} s "
              f"= {events[rev] / med:,.0f} events per CPU second")
    print(f"B/A CPU ratio per round {[round(x, 3) for x in ratios]}, median {statistics.median(ratios):.3f}")
    return {"revisions": revs, "duration_ms": duration_ms, "slice_ms": slice_ms, "events": events, "cpu_s": cpu,
            "ratio_b_over_a": ratios, "median_ratio": statistics.median(ratios)}


def _commit() -> str | None:
    """The commit measured (see `_meta.commit_measured`)."""
    return commit_measured("replication_core")


def main() -> int:
    """Run every duration in a child process, print a table, store the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--durations-ms", default="10000,30000", help="virtual durations, comma separated")
    ap.add_argument("--format", default="parquet", choices=("parquet", "jsonl"))
    ap.add_argument("--scenario", default=str(SCENARIO))
    ap.add_argument("--out", default=None, help="result JSON (default benchmarks/results/simulate-<date>.json)")
    ap.add_argument("--profile", type=int, metavar="DURATION_MS", help="profile one run instead")
    ap.add_argument("--ab", metavar="REV_A,REV_B",
                    help="lockstep A/B of two git revisions (or WORKTREE) at the first duration instead")
    ap.add_argument("--ab-build", action="store_true",
                    help="lockstep A/B of this tree interpreted (A) against its compiled build (B), "
                         "alternating at every event batch, at the first duration instead")
    ap.add_argument("--ab-compiled", metavar="REV_A,REV_B",
                    help="lockstep A/B of two git revisions (or WORKTREE), both compiled, alternating at every "
                         "event batch, at the first duration instead")
    ap.add_argument("--slice-ms", type=int, default=250, help="--ab: virtual ms per alternating slice")
    ap.add_argument("--rounds", type=int, default=4, help="--ab: runs of each side")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--lockstep-child", help=argparse.SUPPRESS)
    ap.add_argument("--by-batch", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.lockstep_child is not None:
        lockstep_child(Path(args.lockstep_child), int(args.durations_ms.split(",")[0]), args.slice_ms,
                       Path(args.scenario), by_batch=args.by_batch)
        return 0
    if sum((args.ab is not None, args.ab_build, args.ab_compiled is not None)) > 1:
        ap.error("--ab, --ab-build and --ab-compiled are alternatives: give one")
    if args.ab is not None or args.ab_build or args.ab_compiled is not None:
        mode = "build" if args.ab_build else "compiled" if args.ab_compiled is not None else "interpreted"
        revs = ["interpreted", "compiled"] if args.ab_build else (args.ab_compiled or args.ab).split(",")
        if len(revs) != 2:
            ap.error("--ab / --ab-compiled take two revisions separated by a comma")
        if args.ab_build and not _has_compiled_build(ROOT):
            ap.error("--ab-build: no compiled build in this tree (pip install -e . without REPLOG_PURE_PYTHON)")
        load_start = os.getloadavg()
        result = lockstep_ab(revs, int(args.durations_ms.split(",")[0]), args.slice_ms, args.rounds,
                             Path(args.scenario), mode=mode)
        result["load_average_start"] = [round(x, 2) for x in load_start]
        result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        result["command"] = " ".join(sys.argv)
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {args.out}")
        return 0
    if args.child is not None:
        print(json.dumps(child(args.child, args.format, Path(args.scenario))))
        return 0
    if args.profile is not None:
        profile(args.profile, Path(args.scenario))
        return 0
    runs = []
    load_start = os.getloadavg()
    commit = _commit()  # before the runs: the code measured
    for d in (int(x) for x in args.durations_ms.split(",")):
        proc = subprocess.run([sys.executable, __file__, "--child", str(d), "--format", args.format,
                               "--scenario", args.scenario], capture_output=True, text=True, check=True,
                              env={**os.environ, "CI": "1"})
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"{'virtual s':>9} {'events':>12} {'wall s':>8} {'events/s':>10} {'events/cpu-s':>12} "
          f"{'write share':>11} {'peak RSS':>10}")
    for r in runs:
        print(f"{r['duration_ms'] / 1000:>9.0f} {r['events']:>12,} {r['wall_s']:>8.1f} {r['events_per_s']:>10,} "
              f"{r['events_per_cpu_s']:>12,} {r['write_cpu_s'] / r['cpu_s']:>10.0%} "
              f"{r['peak_rss_bytes'] / 2**20:>8.0f} MiB")
    for r in runs:
        print(f"  {r['duration_ms'] / 1000:.0f} virtual s: writing alone {r['events_per_write_cpu_s']:,} events per "
              f"CPU second, engine + simulator alone {r['events_per_sim_cpu_s']:,}")
    best = max(r["events_per_cpu_s"] for r in runs)
    peak = max(r["peak_rss_bytes"] for r in runs)
    verdict = "met" if best >= TARGET_EVENTS_PER_S else "NOT met"
    print(f"target >= {TARGET_EVENTS_PER_S:,} events/s on one core: {verdict} (best {best:,} events per CPU second)")
    print(f"target peak memory < 2 GiB: {'met' if peak < TARGET_PEAK_BYTES else 'NOT met'} for the durations run")
    print(f"load average (1/5/15 min) at start {load_start[0]:.1f}/{load_start[1]:.1f}/{load_start[2]:.1f}, "
          f"at end {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    result = {
        "benchmark": "simulate",
        "scenario": Path(args.scenario).name,
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "commit": commit,
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "command": " ".join(sys.argv),
        "runs": runs,
        "targets": {"events_per_s": TARGET_EVENTS_PER_S, "peak_rss_bytes": TARGET_PEAK_BYTES},
    }
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"simulate-{result['date_utc']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
