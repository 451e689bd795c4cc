"""Ingest benchmark: events/s from Parquet and from JSON Lines landing files, with the time split.

    python benchmarks/bench_ingest.py                 # 1,000,000 events (memory compared at 100,000)
    python benchmarks/bench_ingest.py --small         # 100,000 events (memory compared at 10,000)
    python benchmarks/bench_ingest.py --events 500000 --rows-per-file 50000 --no-stages

What it does:
1. Generates landing files (`benchmarks/_gen.py`: valid events of every type, deterministic with
   `--seed`, rolled into files of `--rows-per-file` events), the same events as Parquet and as JSON
   Lines, at two sizes: N events (`--events`) and N/10 (for the memory comparison). Generation is
   not measured.
2. For every (size, format) it starts a fresh worker process (fresh Python driver and fresh JVM, so
   peak memory belongs to that run alone), builds the SparkSession from `conf/local.yaml`
   (`jobs.config.load_config` + `jobs.session.build_spark`, local[2]), warms up with an ingest of the
   small sample landing set into a throwaway lake, then in the same session measures:
   - baselines: a plain Spark read of the same landing Parquet + count (the reference the ingest time
     is given as a ratio of), a full read of every Parquet column (noop sink), a full typed read of
     the JSON Lines files (noop sink), and a plain Spark copy of the Parquet partitioned by run_id
     (the floor of any ingest that has Spark write the files);
   - `jobs.ingest.run_ingest` into a fresh temp lake (embedded Delta backend), timed end to end and
     split with `IngestResult.seconds` plus wrappers installed by this script around functions of
     `jobs` (nothing in `jobs/` is edited): discovery and idempotency look-ups; the whole-file path
     (files that break no rule, rewritten by pyarrow in Spark tasks) with its tasks' read / screen /
     write seconds summed over files (`IngestResult.task_seconds`); the Spark pass
     (read + validate + count + write bronze's files, uncommitted); the duplicate check over the keys
     of the files it wrote (run ids, repeats, id ranges against bronze); the exact duplicate check and
     second write, only where that check found a key that can be a duplicate; the quarantine pass
     where anything is quarantined; Spark's Parquet write per table; the footer checks; the delta-rs
     commit; plus the JVM's GC time during the ingest;
   - optionally (`--stages`, default on at the large size) stage ablations, each a separate pass into
     a noop sink: read only, read without the `raw` column, read + classify, the duplicate check's key
     aggregate (over bronze's files after the ingest: the files the ingest wrote), and the landing key
     pass + suspect-key aggregate that the exact check runs only when a key can be a duplicate;
   - the same landing through the Spark pass alone (`whole_files=False`), into another lake in the same
     JVM after the measured ingest, as the comparison (`--no-spark-path` skips it);
   - driver memory: peak RSS of the Python driver (`/proc/self/status` VmHWM, reset after warm-up,
     and `resource.getrusage`), the JVM's heap used after `System.gc()` before and after the ingest,
     the JVM heap peak during the ingest (memory-pool peaks), the JVM process peak RSS, and the size
     of the DataFrame cache the ingest persisted (in local mode that cache lives in the driver JVM); and
     the peak RSS of the JVM's Python workers, where the whole-file path runs (executor side). CPU
     figures count the JVM's whole process tree, those workers included.
3. Prints a table and writes every figure as JSON to `benchmarks/results/ingest-<date>.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from _meta import run_header  # noqa: E402  (benchmarks/ is on sys.path)

TARGET_EVENTS_PER_S = {"parquet": 250_000, "jsonl": 100_000}
FLAT_MEMORY_MAX_GROWTH = 1.25  # memory counts as flat if 10x the events costs < 25 % more
FORMATS = ("parquet", "jsonl")
MB = 1024 * 1024


# --- measurement helpers (worker side) ------------------------------------------------------------


def _proc_status_kb(pid: int | str, key: str) -> int | None:
    """A `kB` field of /proc/<pid>/status (VmRSS, VmHWM), or None where /proc is unavailable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss(pid: int | str) -> bool:
    """Reset a process's VmHWM (Linux: write 5 to clear_refs); False if the kernel refuses."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _proc_cpu_seconds(pid: int | str) -> float | None:
    """User + system CPU seconds a process has used (from /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _process_tree(root: int) -> list[int]:
    """`root` and every process below it (by parent pid, from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of `pid` and every descendant, living or exited and waited for (the JVM and the Python
    workers its tasks start: the whole-file ingest path does its work in those workers)."""
    total = 0.0
    hz = os.sysconf("SC_CLK_TCK")
    for i, p in enumerate(_process_tree(pid)):
        try:
            with open(f"/proc/{p}/stat", encoding="ascii") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            if i == 0:
                return None
            continue
        # utime + stime of the process, cutime + cstime of its exited children it waited for.
        total += (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / hz
    return total


def _workers_peak_rss(jvm_pid: int, reset: bool = False) -> int | None:
    """Largest peak RSS among the JVM's Python workers (reset their peaks first when `reset`)."""
    peaks = []
    for p in _process_tree(jvm_pid)[1:]:
        if reset:
            _reset_peak_rss(p)
        kb = _proc_status_kb(p, "VmHWM")
        if kb:
            peaks.append(kb * 1024)
    return max(peaks) if peaks else None


def _machine_cpu() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine since boot (from /proc/stat)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            ticks = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / hz, sum(ticks[:8]) / hz


class CpuMeter:
    """CPU used by this benchmark's driver (Python + JVM + the JVM's Python workers) and by the whole machine
    over a window.

    Other processes on the machine compete for its 2 cores; the figures say how much CPU the ingest
    got, how much everything else took meanwhile, and so how contended a wall-clock figure is.
    """

    def __init__(self, jvm_pid: int) -> None:
        self.jvm_pid = jvm_pid

    def _sample(self) -> tuple[float, float, float | None, tuple[float, float] | None]:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter(), ru.ru_utime + ru.ru_stime, _tree_cpu_seconds(self.jvm_pid), _machine_cpu()

    def start(self) -> None:
        """Open the window."""
        self.t0 = self._sample()
        self.load_start = os.getloadavg()

    def stop(self) -> dict[str, Any]:
        """Close the window; return its figures."""
        t1 = self._sample()
        wall = t1[0] - self.t0[0]
        py = t1[1] - self.t0[1]
        jvm = None if t1[2] is None or self.t0[2] is None else t1[2] - self.t0[2]
        ours = py + (jvm or 0.0)
        out: dict[str, Any] = {
            "wall_seconds": wall,
            "python_cpu_seconds": py,
            # the JVM with its Python workers (where the whole-file path runs)
            "jvm_cpu_seconds": jvm,
            "driver_cpu_seconds": ours,
            "driver_cores_used": ours / wall if wall else None,
            "loadavg_1m_start": self.load_start[0],
            "loadavg_1m_end": os.getloadavg()[0],
        }
        if t1[3] and self.t0[3]:
            busy = t1[3][0] - self.t0[3][0]
            out["machine_busy_cores"] = busy / wall if wall else None
            out["other_processes_cores"] = max(busy - ours, 0.0) / wall if wall else None
        return out


class Timeline:
    """Durations recorded by the wrappers this script installs around `jobs` functions."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str, float, float]] = []  # (name, label, start, end)

    def clear(self) -> None:
        """Forget everything recorded so far (after the warm-up)."""
        self.spans.clear()

    def total(self, name: str, label: str | None = None) -> float:
        """Sum of the durations of `name` (optionally only those with `label`)."""
        return sum(e - s for n, lab, s, e in self.spans if n == name and (label is None or lab == label))


def _wrap_span(owner: Any, attr: str, name: str, tl: Timeline, label_of: Callable[..., str] | None = None) -> None:
    orig = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return orig(*args, **kwargs)
        finally:
            tl.spans.append((name, label_of(*args) if label_of else "", t, time.perf_counter()))

    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    setattr(owner, attr, wrapper)


def _install_probes(spark: Any, tl: Timeline, cache_sizes: list[dict[str, int]]) -> None:
    """Time the ingest's parts from outside: wrap functions of `jobs` (their code is not changed)."""
    import jobs.lake.embedded as embedded

    def table_of(_self: Any, spec: Any, *_a: Any) -> str:
        return str(spec.name)

    _wrap_span(embedded.EmbeddedLake, "_write_files", "write_files", tl, table_of)
    _wrap_span(embedded.EmbeddedLake, "_commit", "commit", tl, table_of)
    _wrap_span(embedded.EmbeddedLake, "committed", "committed_lookup", tl, table_of)
    _wrap_span(embedded, "_commit_actions", "commit_actions", tl, lambda _dt, _a, spec, _p: str(spec.name))
    _wrap_span(embedded, "_check_file_schema", "check_file_schema", tl)

    # Record how big Spark's cache is whenever the ingest unpersists one of its DataFrames.
    df_cls = type(spark.range(1))
    orig_unpersist = df_cls.unpersist
    jsc = spark.sparkContext._jsc

    def unpersist(self: Any, *args: Any, **kwargs: Any) -> Any:
        mem = disk = 0
        for info in jsc.sc().getRDDStorageInfo():
            mem += int(info.memSize())
            disk += int(info.diskSize())
        cache_sizes.append({"memory_bytes": mem, "disk_bytes": disk})
        return orig_unpersist(self, *args, **kwargs)

    df_cls.unpersist = unpersist


class JvmMemory:
    """The driver JVM's heap (after a GC), heap-pool peaks, and process RSS, through py4j."""

    def __init__(self, spark: Any) -> None:
        self.jvm = spark.sparkContext._jvm
        self.pid = int(self.jvm.java.lang.ProcessHandle.current().pid())
        self.max_heap = int(self.jvm.java.lang.Runtime.getRuntime().maxMemory())

    def heap_used_after_gc(self) -> int:
        """Heap in use after `System.gc()` (twice, with a pause, so finalised objects are gone too), Python's garbage
        collected first: a DataFrame dropped in a reference cycle still holds its Java plan until Python's cyclic
        collector frees its py4j proxy, which may not have run yet (plan trees of ~70 MB were seen left that way)."""
        gc.collect()
        rt = self.jvm.java.lang.Runtime.getRuntime()
        for _ in range(2):
            self.jvm.java.lang.System.gc()
            time.sleep(0.3)
        return int(rt.totalMemory()) - int(rt.freeMemory())

    def live_heap(self, top: int = 20) -> dict[str, Any] | None:
        """The live objects after a full GC (`jcmd PID GC.class_histogram`): their total bytes and instances and the
        `top` classes by bytes; None without jcmd. Unlike `heap_used_after_gc`, which counts the heap regions in use
        after `System.gc()` and moved by ~90 MB between identical runs, this counts objects only."""
        gc.collect()  # as `heap_used_after_gc`
        try:
            out = subprocess.run(["jcmd", str(self.pid), "GC.class_histogram"], capture_output=True,
                                 text=True, timeout=120, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        rows, total = [], None
        for line in out.splitlines():
            m = re.match(r"\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)", line)
            if m:
                rows.append({"class": m.group(3), "instances": int(m.group(1)), "bytes": int(m.group(2))})
            elif (t := re.match(r"Total\s+(\d+)\s+(\d+)", line)) is not None:
                total = {"instances": int(t.group(1)), "bytes": int(t.group(2))}
        if total is None:
            return None
        return {"total_bytes": total["bytes"], "instances": total["instances"], "top": rows[:top]}

    def _heap_pools(self) -> Iterator[Any]:
        for pool in self.jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
            if str(pool.getType().toString()) == "Heap memory":
                yield pool

    def reset_peaks(self) -> None:
        """Start a new peak window for the heap pools and the process RSS."""
        for pool in self._heap_pools():
            pool.resetPeakUsage()
        _reset_peak_rss(self.pid)

    def heap_peak(self) -> int:
        """Sum of the heap pools' peaks since `reset_peaks` (an upper bound of the heap's peak)."""
        return sum(int(pool.getPeakUsage().getUsed()) for pool in self._heap_pools())

    def gc_totals(self) -> tuple[int, float]:
        """(collections, seconds) summed over the JVM's garbage collectors since it started."""
        count, ms = 0, 0
        for bean in self.jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans():
            count += max(int(bean.getCollectionCount()), 0)
            ms += max(int(bean.getCollectionTime()), 0)
        return count, ms / 1000

    def rss_peak(self) -> int | None:
        """The JVM process's peak RSS (bytes) since `reset_peaks`."""
        kb = _proc_status_kb(self.pid, "VmHWM")
        return None if kb is None else kb * 1024


@contextmanager
def _stopwatch(out: dict[str, float], key: str) -> Iterator[None]:
    t = time.perf_counter()
    try:
        yield
    finally:
        out[key] = time.perf_counter() - t


# --- the worker: one (size, format) in a fresh process --------------------------------------------


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def _baselines(spark: Any, parquet_files: list[str], jsonl_files: list[str], copy_dir: str) -> dict[str, float]:
    from jobs.landing import EVENT_SPARK_SCHEMA

    out: dict[str, float] = {}
    with _stopwatch(out, "parquet_read_count"):
        n = spark.read.parquet(*parquet_files).count()
    with _stopwatch(out, "parquet_read_all_columns"):
        _noop(spark.read.schema(EVENT_SPARK_SCHEMA).parquet(*parquet_files))
    with _stopwatch(out, "jsonl_read_all_columns"):
        _noop(spark.read.schema(EVENT_SPARK_SCHEMA).json(jsonl_files))
    with _stopwatch(out, "parquet_copy_partitioned"):
        # The floor of "Spark writes Parquet": the same records read and written again, partitioned
        # as bronze is, with no validation, counting or commit.
        spark.read.schema(EVENT_SPARK_SCHEMA).parquet(*parquet_files).write.mode("overwrite").partitionBy(
            "run_id").parquet(copy_dir)
    out["parquet_rows"] = float(n)
    return out


def _stages(spark: Any, lake: Any, landing: str) -> dict[str, float]:
    """Separate passes into a noop sink over growing prefixes of the ingest's plan (not additive)."""
    import jobs.ingest as ingest
    from jobs.landing import discover, record_keys
    from jobs.validate import classify
    from schemas.tables import BRONZE_EVENTS

    files = discover(landing)
    out: dict[str, float] = {}
    cand = ingest.read_candidates(spark, files)
    with _stopwatch(out, "read"):
        _noop(cand)
    with _stopwatch(out, "read_without_raw"):
        _noop(cand.drop("raw"))
    classified = classify(cand)
    with _stopwatch(out, "read_classify"):
        _noop(classified)
    with _stopwatch(out, "duplicate_check_keys"):
        # the key aggregate of the common case, over the files the ingest wrote: runs, repeats, id ranges
        ingest.run_keys(lake.read(BRONZE_EVENTS).select("run_id", "event_id"))
    keys = record_keys(spark, files)
    with _stopwatch(out, "landing_key_pass_runs"):
        # the exact check's first step: the same aggregate over every landing record's key
        ingest.run_keys(keys)
    existing = lake.read(BRONZE_EVENTS, []).select("run_id", "event_id")
    with _stopwatch(out, "key_pass_suspects"):
        # the exact suspect-key check, run only when a key repeats or bronze overlaps the ranges
        _noop(ingest.suspect_keys(keys, existing))
    return out


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Measure one ingest (see the module docstring); returns the figures as a dict."""
    from jobs.config import load_config
    from jobs.ingest import run_ingest
    from jobs.lake import EmbeddedLake
    from jobs.sample import write_sample
    from jobs.session import build_spark

    fmt: str = spec["format"]
    work = Path(spec["work"])
    landing = spec["landing"][fmt]
    cfg = load_config(spec.get("config"), lake=str(work / "lake"))
    t = time.perf_counter()
    spark = build_spark(cfg.spark)
    startup = time.perf_counter() - t
    jvm = JvmMemory(spark)
    tl = Timeline()
    cache_sizes: list[dict[str, int]] = []
    _install_probes(spark, tl, cache_sizes)
    quiet: Callable[[str], None] = lambda _msg: None  # noqa: E731

    # Warm-up: the same code paths on the small sample (both formats, with bad records).
    timings: dict[str, float] = {}
    with _stopwatch(timings, "warmup"):
        sample_dir = work / "warmup-landing"
        write_sample(sample_dir)
        run_ingest(spark, EmbeddedLake(spark, str(work / "warmup-lake")), str(sample_dir), log=quiet)
    tl.clear()
    cache_sizes.clear()

    parquet_files = sorted(str(p) for p in Path(spec["landing"]["parquet"]).glob("*.parquet"))
    jsonl_files = sorted(str(p) for p in Path(spec["landing"]["jsonl"]).glob("*.jsonl"))
    baselines = _baselines(spark, parquet_files, jsonl_files, str(work / "baseline-copy"))

    heap_before = jvm.heap_used_after_gc()
    py_reset = _reset_peak_rss("self")
    py_rss_before = (_proc_status_kb("self", "VmRSS") or 0) * 1024
    jvm.reset_peaks()
    _workers_peak_rss(jvm.pid, reset=True)
    gc_before = jvm.gc_totals()
    lake = EmbeddedLake(spark, cfg.lake)
    cpu = CpuMeter(jvm.pid)
    cpu.start()
    t0 = time.perf_counter()
    result = run_ingest(spark, lake, landing, log=quiet, whole_files=cfg.ingest.whole_files)
    total = time.perf_counter() - t0
    cpu_figures = cpu.stop()
    workers_peak = _workers_peak_rss(jvm.pid)
    t_end = t0 + total
    py_peak = (_proc_status_kb("self", "VmHWM") or 0) * 1024 if py_reset else None
    heap_peak = jvm.heap_peak()
    gc_after = jvm.gc_totals()
    jvm_rss_peak = jvm.rss_peak()
    heap_after = jvm.heap_used_after_gc()

    seconds = result.seconds
    split = {
        # discovery, idempotency look-ups, planning
        "discover": seconds.get("discover", float("nan")),
        # the one full pass: read + validate + count every record + write bronze's files (uncommitted)
        "validate_write_bronze": seconds.get("validate_write", 0.0),
        # the whole-file path: files in which no record may break a rule, rewritten by Arrow in Spark tasks
        "whole_files": seconds.get("whole_files", 0.0),
        # inside it, summed over the files its tasks took (two tasks run at once on 2 cores: not wall time)
        **{f"whole_files_tasks_{k}": v for k, v in result.task_seconds.items()},
        # the keys of the files written: repeats, id ranges, bronze rows in those ranges
        "duplicate_check": seconds.get("duplicate_check", float("nan")),
        # only where that check found a possible duplicate: the exact check and the second write
        "exact_duplicates_write": seconds.get("exact_duplicates_write", 0.0),
        "write_bronze": tl.total("write_files", "bronze/replication_events"),
        # the quarantine pass (only when something is quarantined) and both commits
        "quarantine_commit": seconds.get("quarantine_commit", float("nan")),
        "write_quarantine": tl.total("write_files", "bronze/quarantine"),
        "write_footer_checks": tl.total("check_file_schema"),
        "commit_bronze": tl.total("commit", "bronze/replication_events"),
        "commit_quarantine": tl.total("commit", "bronze/quarantine"),
        "commit_delta_rs_call": tl.total("commit_actions"),
        "after": t_end - (t0 + sum(seconds.values())),
        # not a part of the sum: JVM garbage collection during the ingest (all threads, all collectors)
        "jvm_gc_during_ingest": gc_after[1] - gc_before[1],
    }
    stages = _stages(spark, lake, landing) if spec.get("stages") else {}
    spark_path: dict[str, Any] = {}
    if spec.get("spark_path") and result.whole_files:
        # The same landing through Spark's per-record path alone, in this JVM after the measured ingest.
        t = time.perf_counter()
        alone = run_ingest(spark, EmbeddedLake(spark, str(work / "lake-spark-path")), landing, log=quiet,
                           whole_files=False)
        spark_path = {"seconds": time.perf_counter() - t, "kept": alone.kept, "quarantined": alone.quarantined}
    events = int(spec["events"])
    out = {
        "format": fmt,
        "events": events,
        "spark_startup_seconds": startup,
        "warmup_seconds": timings["warmup"],
        "ingest_seconds": total,
        "events_per_second": events / total,
        "split_seconds": split,
        "cpu": cpu_figures,
        "events_per_driver_cpu_second": events / cpu_figures["driver_cpu_seconds"]
        if cpu_figures["driver_cpu_seconds"] else None,
        "baseline_seconds": baselines,
        "ratio_to_parquet_read_count": total / baselines["parquet_read_count"],
        "ratio_to_parquet_read_all_columns": total / baselines["parquet_read_all_columns"],
        "ratio_to_jsonl_read_all_columns": total / baselines["jsonl_read_all_columns"],
        "stage_ablation_seconds": stages,
        "spark_path_alone": spark_path,
        "result": {
            "whole_files": result.whole_files,
            "read": result.read,
            "kept": result.kept,
            "quarantined": result.quarantined,
            "by_reason": result.by_reason,
            "reconciles": result.reconciles,
            "bronze_version": result.bronze_version,
            "quarantine_version": result.quarantine_version,
        },
        "memory": {
            "python_rss_before_bytes": py_rss_before,
            "python_peak_rss_during_ingest_bytes": py_peak,
            "python_peak_rss_process_lifetime_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "jvm_max_heap_bytes": jvm.max_heap,
            "jvm_heap_used_after_gc_before_ingest_bytes": heap_before,
            "jvm_heap_used_after_gc_after_ingest_bytes": heap_after,
            "jvm_heap_peak_during_ingest_bytes": heap_peak,
            "jvm_rss_peak_during_ingest_bytes": jvm_rss_peak,
            # largest total of Spark's cache seen at any unpersist() of the ingest
            "ingest_cache_bytes": max(cache_sizes, key=lambda c: c["memory_bytes"] + c["disk_bytes"])
            if cache_sizes else None,
            "jvm_gc_collections_during_ingest": gc_after[0] - gc_before[0],
            # executor side in local mode: the Python workers of the whole-file path (not the driver)
            "python_workers_peak_rss_during_ingest_bytes": workers_peak,
        },
    }
    spark.stop()
    return out


# --- the driver of the benchmark --------------------------------------------------------------


def _generate(work: Path, events: int, rows_per_file: int, seed: int) -> dict[str, Any]:
    from _gen import write_landing

    t = time.perf_counter()
    manifest = write_landing(work / "parquet", work / "jsonl", events, rows_per_file, seed)
    manifest["generate_seconds"] = time.perf_counter() - t
    return manifest


def _run_worker_process(spec: dict[str, Any]) -> dict[str, Any]:
    out = Path(spec["work"]) / "result.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec), "--worker-out", str(out)]
    subprocess.run(cmd, check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def _fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:8.2f}"


def _fmt_mb(x: float | None) -> str:
    return "-" if x is None else f"{x / MB:8.0f}"


def _growth(small: float | None, large: float | None) -> float | None:
    return None if not small or large is None else large / small


def _report(doc: dict[str, Any]) -> str:
    lines = []
    big = doc["events"]
    runs = doc["runs"]
    lines.append(f"\n== ingest benchmark: {big:,} events, {doc['machine']['cpus']} cores, "
                 f"backend embedded, Spark {doc['versions']['pyspark']} ==")
    lines.append(f"{'':44}{'parquet':>12}{'jsonl':>12}")

    def row(label: str, get: Callable[[dict[str, Any]], Any], fmt: Callable[[Any], str]) -> None:
        vals = [runs.get(f"{f}@{big}") for f in FORMATS]
        lines.append(f"{label:44}" + "".join(f"{(fmt(get(v)) if v else '-'):>12}" for v in vals))

    row("events/s (wall clock)", lambda r: r["events_per_second"], lambda x: f"{x:,.0f}")
    row("target events/s", lambda r: TARGET_EVENTS_PER_S[r["format"]], lambda x: f"{x:,.0f}")
    row("events per CPU-second (JVM + Python)", lambda r: r["events_per_driver_cpu_second"], lambda x: f"{x:,.0f}")
    row("  x2 = events/s bound on 2 idle cores", lambda r: 2 * r["events_per_driver_cpu_second"],
        lambda x: f"{x:,.0f}")
    row("cores the ingest got (CPU s / wall s)", lambda r: r["cpu"]["driver_cores_used"], lambda x: f"{x:.2f}")
    row("cores other processes took meanwhile", lambda r: r["cpu"].get("other_processes_cores"),
        lambda x: f"{x:.2f}")
    row("load average (1 min) at start", lambda r: r["cpu"]["loadavg_1m_start"], lambda x: f"{x:.1f}")
    row("ingest total (s)", lambda r: r["ingest_seconds"], _fmt_s)
    row("  discovery, idempotency look-ups (s)", lambda r: r["split_seconds"].get("discover"), _fmt_s)
    row("  whole-file path: Arrow in tasks (s)", lambda r: r["split_seconds"].get("whole_files"), _fmt_s)
    row("    files taken whole", lambda r: r["result"].get("whole_files"), str)
    row("    in tasks, summed: read / parse (s)", lambda r: r["split_seconds"].get("whole_files_tasks_read_s"), _fmt_s)
    row("    in tasks, summed: validate (screen) (s)", lambda r: r["split_seconds"].get("whole_files_tasks_screen_s"),
        _fmt_s)
    row("    in tasks, summed: write bronze files (s)", lambda r: r["split_seconds"].get("whole_files_tasks_write_s"),
        _fmt_s)
    row("  Spark pass: read+validate+count, write (s)", lambda r: r["split_seconds"]["validate_write_bronze"], _fmt_s)
    row("  duplicate check on written keys (s)", lambda r: r["split_seconds"].get("duplicate_check"), _fmt_s)
    row("  exact duplicates + second write (s)", lambda r: r["split_seconds"].get("exact_duplicates_write"), _fmt_s)
    row("  quarantine pass + commits (s)", lambda r: r["split_seconds"]["quarantine_commit"], _fmt_s)
    row("    Spark write quarantine", lambda r: r["split_seconds"]["write_quarantine"], _fmt_s)
    row("    (footer schema checks, both tables)", lambda r: r["split_seconds"]["write_footer_checks"], _fmt_s)
    row("    commit bronze + quarantine", lambda r: r["split_seconds"]["commit_bronze"]
        + r["split_seconds"]["commit_quarantine"], _fmt_s)
    row("    (of which delta-rs commit call)", lambda r: r["split_seconds"]["commit_delta_rs_call"], _fmt_s)
    row("JVM GC time during ingest (s, overlaps)", lambda r: r["split_seconds"].get("jvm_gc_during_ingest"), _fmt_s)
    row("baseline: Parquet read + count (s)", lambda r: r["baseline_seconds"]["parquet_read_count"], _fmt_s)
    row("baseline: Parquet read, all columns (s)", lambda r: r["baseline_seconds"]["parquet_read_all_columns"],
        _fmt_s)
    row("baseline: JSONL typed read, all columns (s)", lambda r: r["baseline_seconds"]["jsonl_read_all_columns"],
        _fmt_s)
    row("baseline: Parquet copy, partitioned (s)", lambda r: r["baseline_seconds"].get("parquet_copy_partitioned"),
        _fmt_s)
    row("ingest / Parquet copy partitioned", lambda r: r["ingest_seconds"] / copy
        if (copy := r["baseline_seconds"].get("parquet_copy_partitioned")) else None, lambda x: f"{x:.1f}x")
    row("Spark path alone, same JVM after (s)", lambda r: r["spark_path_alone"].get("seconds"), _fmt_s)
    row("ingest / Spark path alone", lambda r: r["ingest_seconds"] / sp
        if (sp := r["spark_path_alone"].get("seconds")) else None, lambda x: f"{x:.2f}x")
    row("ingest / Parquet read+count", lambda r: r["ratio_to_parquet_read_count"], lambda x: f"{x:.1f}x")
    row("ingest / Parquet read all columns", lambda r: r["ratio_to_parquet_read_all_columns"], lambda x: f"{x:.1f}x")
    row("ingest / JSONL read all columns", lambda r: r["ratio_to_jsonl_read_all_columns"], lambda x: f"{x:.1f}x")
    row("kept / quarantined", lambda r: f"{r['result']['kept']}/{r['result']['quarantined']}", str)
    if any(runs[k]["stage_ablation_seconds"] for k in runs):
        lines.append("stage ablation (separate passes into a noop sink, not additive):")
        for st in ("read", "read_without_raw", "read_classify", "duplicate_check_keys", "landing_key_pass_runs",
                   "key_pass_suspects"):
            row(f"  {st} (s)", lambda r, st=st: r["stage_ablation_seconds"].get(st), _fmt_s)

    small = doc["memory_small_events"]
    lines.append(f"\n== driver memory: {small:,} vs {big:,} events (growth = large / small; flat if "
                 f"< {FLAT_MEMORY_MAX_GROWTH}) ==")
    lines.append(f"{'MB':44}" + "".join(f"{f + '@' + s:>14}" for f in FORMATS for s in ("small", "large"))
                 + f"{'growth pq':>11}{'growth js':>11}")
    for label, key in (
        ("Python driver peak RSS during ingest", "python_peak_rss_during_ingest_bytes"),
        ("Python driver peak RSS (process lifetime)", "python_peak_rss_process_lifetime_bytes"),
        ("JVM heap used after GC, before ingest", "jvm_heap_used_after_gc_before_ingest_bytes"),
        ("JVM heap used after GC, after ingest", "jvm_heap_used_after_gc_after_ingest_bytes"),
        ("JVM heap peak during ingest", "jvm_heap_peak_during_ingest_bytes"),
        ("JVM process peak RSS during ingest", "jvm_rss_peak_during_ingest_bytes"),
        ("Spark cache held by the ingest (max), memory", "ingest_cache_memory_bytes"),
        ("Python workers' peak RSS (executor side)", "python_workers_peak_rss_during_ingest_bytes"),
    ):
        vals = []
        for f in FORMATS:
            for n in (small, big):
                r = runs.get(f"{f}@{n}")
                vals.append(None if r is None else _mem(r, key))
        cells = "".join(f"{_fmt_mb(v):>14}" for v in vals)
        g = [_growth(vals[0], vals[1]), _growth(vals[2], vals[3])]
        cells += "".join(f"{('-' if x is None else f'{x:.2f}x'):>11}" for x in g)
        lines.append(f"{label:44}{cells}")
    lines.append("")
    for name, verdict in doc["verdict"].items():
        lines.append(f"{name}: {verdict}")
    return "\n".join(lines)


def _mem(r: dict[str, Any], key: str) -> float | None:
    m = r["memory"]
    if key == "ingest_cache_memory_bytes":
        return None if not m.get("ingest_cache_bytes") else m["ingest_cache_bytes"]["memory_bytes"]
    return m.get(key)


def _verdict(doc: dict[str, Any]) -> dict[str, str]:
    big, small = doc["events"], doc["memory_small_events"]
    out = {}
    for f in FORMATS:
        r = doc["runs"].get(f"{f}@{big}")
        if r:
            eps, target = r["events_per_second"], TARGET_EVENTS_PER_S[f]
            bound = 2 * (r.get("events_per_driver_cpu_second") or 0)
            out[f"throughput {f}"] = (
                f"{eps:,.0f} events/s vs target {target:,}: {'MET' if eps >= target else 'MISSED'} "
                f"(bound on 2 idle cores from CPU time: {bound:,.0f}: {'MET' if bound >= target else 'MISSED'}; "
                f"other processes took {r['cpu'].get('other_processes_cores') or 0:.2f} cores meanwhile)"
            )
        rs = doc["runs"].get(f"{f}@{small}")
        if r and rs:
            parts = []
            for label, key in (
                ("Python peak RSS", "python_peak_rss_during_ingest_bytes"),
                ("JVM heap after GC", "jvm_heap_used_after_gc_after_ingest_bytes"),
                ("JVM heap peak", "jvm_heap_peak_during_ingest_bytes"),
            ):
                g = _growth(_mem(rs, key), _mem(r, key))
                if g is not None:
                    parts.append(f"{label} x{g:.2f} {'flat' if g < FLAT_MEMORY_MAX_GROWTH else 'GROWS'}")
            out[f"driver memory {f}"] = "; ".join(parts)
    return out


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {p: version(p) for p in ("pyspark", "deltalake", "pyarrow")}


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000, help="events per format (default 1,000,000)")
    p.add_argument("--small", action="store_true", help="quick run: 100,000 events")
    p.add_argument("--memory-small", type=int, help="smaller size for the memory comparison (default events/10)")
    p.add_argument("--rows-per-file", type=int, default=100_000, help="events per landing file (default 100,000)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--formats", default=",".join(FORMATS), help="comma-separated: parquet,jsonl")
    p.add_argument("--config", help="replog config file (default conf/local.yaml)")
    p.add_argument("--stages", dest="stages", action="store_true", default=True,
                   help="run the stage ablations at the large size (default)")
    p.add_argument("--no-stages", dest="stages", action="store_false")
    p.add_argument("--no-spark-path", dest="spark_path", action="store_false", default=True,
                   help="skip the comparison ingest through Spark's per-record path alone")
    p.add_argument("--workdir", help="where landing files and lakes go (default: a temp dir, removed)")
    p.add_argument("--out", help="results JSON (default benchmarks/results/ingest-<UTC date>.json)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        res = run_worker(json.loads(args.worker))
        Path(args.worker_out).write_text(json.dumps(res, indent=2), encoding="utf-8")
        return 0

    events = 100_000 if args.small else args.events
    small = args.memory_small or max(events // 10, 1)
    formats = [f for f in args.formats.split(",") if f]
    for f in formats:
        if f not in FORMATS:
            p.error(f"unknown format {f!r}")
    base = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="replog-bench-ingest-"))
    base.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.UTC)
    doc: dict[str, Any] = {
        **run_header("ingest", started),
        "events": events,
        "memory_small_events": small,
        "versions": _versions(),
        "targets_events_per_second": TARGET_EVENTS_PER_S,
        "code_at_start": _code_version(),
        "landing": {},
        "runs": {},
    }
    doc["machine"]["mem_total_kb"] = _meminfo_total_kb()
    try:
        for n in sorted({small, events}):
            land = base / f"landing-{n}"
            print(f"[bench] generating {n:,} events into {land} ...", flush=True)
            doc["landing"][str(n)] = _generate(land, n, min(args.rows_per_file, n), args.seed)
            m = doc["landing"][str(n)]
            print(f"[bench]   {m['files']} files, Parquet {m['parquet_bytes'] / MB:.1f} MB, "
                  f"JSONL {m['jsonl_bytes'] / MB:.1f} MB, {m['generate_seconds']:.1f} s", flush=True)
        for n in sorted({small, events}):
            for f in formats:
                work = base / f"run-{f}-{n}"
                if work.exists():
                    shutil.rmtree(work)
                work.mkdir(parents=True)
                spec = {
                    "format": f, "events": n, "work": str(work), "config": args.config,
                    "stages": bool(args.stages and n == events),
                    "spark_path": bool(args.spark_path and n == events),
                    "landing": {k: str(base / f"landing-{n}" / k) for k in FORMATS},
                }
                print(f"[bench] ingest {f} @ {n:,} events (fresh worker process) ...", flush=True)
                r = _run_worker_process(spec)
                doc["runs"][f"{f}@{n}"] = r
                print(f"[bench]   {r['events_per_second']:,.0f} events/s in {r['ingest_seconds']:.1f} s "
                      f"(kept {r['result']['kept']}, quarantined {r['result']['quarantined']})", flush=True)
                shutil.rmtree(work / "lake", ignore_errors=True)
    finally:
        if not args.workdir:
            shutil.rmtree(base, ignore_errors=True)
    doc["finished_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    doc["code_at_end"] = _code_version()
    doc["verdict"] = _verdict(doc)
    print(_report(doc))
    out = Path(args.out) if args.out else BENCH_DIR / "results" / f"ingest-{started.date().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"\n[bench] figures written to {out}")
    return 0


def _code_version() -> dict[str, Any]:
    """The commit measured, and which measured files (jobs/, schemas/) differ from it."""

    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    return {
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": git("status", "--porcelain", "--", "jobs", "schemas").splitlines(),
    }


def _meminfo_total_kb() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            return int(fh.readline().split()[1])
    except (OSError, ValueError, IndexError):
        return None


if __name__ == "__main__":
    sys.exit(main())
