"""Pipeline benchmark: ingest -> timelines -> lag -> audit at scale, against one plain scan of bronze.

    python benchmarks/bench_pipeline.py                          # 1 M and 10 M events (long)
    python benchmarks/bench_pipeline.py --sizes 1000000          # 1 M events only
    python benchmarks/bench_pipeline.py --quick                  # 100 k events, smoke check
    python benchmarks/bench_pipeline.py --sizes 1000000 --scan-split --work /tmp/replog-bench-pipeline

What it does:
1. Simulates `conf/scenarios/large-30-brokers.yaml` (Parquet) for each size: ~87 k events per virtual
   second, so the virtual duration is size / 87,000 s and the event count is close to, not exactly,
   the size asked for (the report gives the real count). Generation is not measured; the event
   folders are kept under `--work` (default `/tmp/replog-bench-pipeline`) and reused by later runs.
2. For every size it starts a fresh worker process (fresh Python driver, fresh JVM: peak memory
   belongs to that run alone), builds the SparkSession from `conf/local.yaml`
   (`jobs.config.load_config` + `jobs.session.build_spark`), warms up by running the demo scenario
   (`conf/scenarios/steady-state.yaml`) through the same jobs and the baseline into a throwaway
   lake, then measures, one after the other in the same session and on a fresh lake:
   - ingest (`jobs.ingest.run_ingest`), timelines (`jobs.timelines.run_timelines`), lag
     (`jobs.lag.run_lag`), audit (`jobs.audit.run_audit`), as `replog ingest / timelines / lag /
     audit` run them;
   - the baseline: one plain Spark scan + aggregate of the same bronze table (read through the lake
     API: `groupBy(run_id, topic, partition, event_type)` with a count, `max(ts_ms)` and sums of
     offsets, into Spark's `noop` sink), once after the ingest and once after the audit; the faster
     of the two is the reference of the ratio;
   - with `--scan-split`, the audit's scans one by one over bronze, read as the audit reads it
     (`jobs.invariants.SCANS[i].run(bronze, inputs=inputs).count()`, sharing frames as the audit does),
     to show which one costs what;
   - the floor of any replay: one ordered pass over bronze, its five key columns (run, topic,
     partition, broker, event id) hashed by partition and sorted within each Spark partition, into
     `noop`. Every job here must see a partition's events in order, so no plan that sorts them costs
     less; its ratio to the scan + aggregate shows how far below that floor the 4x target lies.
   For every stage: wall seconds, CPU seconds (the driver's Python process plus its JVM and the
   JVM's child processes, from `/proc`; the machine has 2 cores and is shared, so CPU seconds are
   the steadier figure), the load average and the cores other processes took meanwhile, the Python
   driver's peak RSS (VmHWM, reset before the stage), the JVM heap's peak (memory-pool peaks) and the
   JVM heap in use after `System.gc()` before and after the stage (Python's garbage collected first:
   a dropped DataFrame's py4j proxy keeps its Java plan alive until then); before and after all the
   jobs also the JVM's live objects after a full GC (jcmd's class histogram), which "flat" judges.
3. Prints a table with the verdicts against the targets and writes every figure as JSON to
   `benchmarks/results/pipeline-<UTC date>.json` (or `--out`).

Targets (issue): timelines + lag + audit at 10 M events within 4x the plain scan + aggregate;
the time from 1 M to 10 M events grows at most 12x; driver memory flat.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from _meta import commit_measured, run_header  # noqa: E402  (benchmarks/ is on sys.path)
from bench_ingest import (  # noqa: E402
    JvmMemory,
    _machine_cpu,
    _proc_cpu_seconds,
    _proc_status_kb,
    _process_tree,
    _reset_peak_rss,
)

SCENARIO = ROOT / "conf" / "scenarios" / "large-30-brokers.yaml"
WARMUP_SCENARIO = ROOT / "conf" / "scenarios" / "steady-state.yaml"
EVENTS_PER_VIRTUAL_S = 87_000  # large-30-brokers: ~87 k events per virtual second (bench_simulate)
DEFAULT_SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (100_000,)
DEFAULT_WORK = Path("/tmp/replog-bench-pipeline")

TARGET_RATIO_TO_SCAN = 4.0  # (timelines + lag + audit) / scan at 10 M events
TARGET_GROWTH_PER_10X = 12.0  # time at 10 M / time at 1 M
FLAT_MEMORY_MAX_GROWTH = 1.25  # as in bench_ingest: 10x the events costs < 25 % more
JOBS = ("ingest", "timelines", "lag", "audit")
ANALYTICS = ("timelines", "lag", "audit")
MB = 1024 * 1024


# --- measurement helpers (worker side) ------------------------------------------------------------


def _jvm_tree_cpu(jvm_pid: int) -> tuple[float, float]:
    """(JVM, JVM's child processes) CPU seconds used so far (children: pyspark daemons, if any)."""
    jvm = _proc_cpu_seconds(jvm_pid) or 0.0
    kids = sum(_proc_cpu_seconds(p) or 0.0 for p in _process_tree(jvm_pid) if p != jvm_pid)
    return jvm, kids


class StageMeter:
    """Wall, CPU, contention and memory of one measured stage (see the module docstring)."""

    def __init__(self, jvm: JvmMemory) -> None:
        self.jvm = jvm

    def measure(self, fn: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
        """Run `fn` once; return its result and the stage's figures."""
        heap_before = self.jvm.heap_used_after_gc()
        py_reset = _reset_peak_rss("self")
        self.jvm.reset_peaks()
        gc0 = self.jvm.gc_totals()
        load0 = os.getloadavg()
        machine0 = _machine_cpu()
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        jvm0 = _jvm_tree_cpu(self.jvm.pid)
        t0 = time.perf_counter()
        value = fn()
        wall = time.perf_counter() - t0
        jvm1 = _jvm_tree_cpu(self.jvm.pid)
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        machine1 = _machine_cpu()
        load1 = os.getloadavg()
        py_peak = (_proc_status_kb("self", "VmHWM") or 0) * 1024 if py_reset else None
        heap_peak = self.jvm.heap_peak()
        jvm_rss_peak = self.jvm.rss_peak()
        gc1 = self.jvm.gc_totals()
        heap_after = self.jvm.heap_used_after_gc()
        py_cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
        jvm_cpu, kids_cpu = jvm1[0] - jvm0[0], max(jvm1[1] - jvm0[1], 0.0)
        cpu = py_cpu + jvm_cpu + kids_cpu
        fig: dict[str, Any] = {
            "wall_seconds": wall,
            "cpu_seconds": cpu,
            "python_cpu_seconds": py_cpu,
            "jvm_cpu_seconds": jvm_cpu,
            "jvm_children_cpu_seconds": kids_cpu,
            "cores_used": cpu / wall if wall else None,
            "loadavg_1m_start": load0[0],
            "loadavg_1m_end": load1[0],
            "jvm_gc_seconds": gc1[1] - gc0[1],
            "python_peak_rss_bytes": py_peak,
            "jvm_heap_peak_bytes": heap_peak,
            "jvm_rss_peak_bytes": jvm_rss_peak,
            "jvm_heap_after_gc_before_bytes": heap_before,
            "jvm_heap_after_gc_after_bytes": heap_after,
        }
        if machine0 and machine1 and wall:
            busy = machine1[0] - machine0[0]
            fig["machine_busy_cores"] = busy / wall
            fig["other_processes_cores"] = max(busy - cpu, 0.0) / wall
        return value, fig


def _scan_and_aggregate(lake: Any) -> None:
    """The baseline: one plain scan + aggregate of bronze (per run, partition and event type) into noop."""
    from pyspark.sql import functions as F

    from schemas.tables import BRONZE_EVENTS

    agg = lake.read(BRONZE_EVENTS).groupBy("run_id", "topic", "partition", "event_type").agg(
        F.count(F.lit(1)).alias("events"),
        F.max("ts_ms").alias("max_ts_ms"),
        F.sum("last_offset").alias("sum_last_offset"),
        F.sum("hw").alias("sum_hw"),
    )
    agg.write.format("noop").mode("overwrite").save()


def _ordered_pass(lake: Any) -> None:
    """The floor: one shuffle + sort of bronze's key columns by partition and replica order, into noop."""
    from schemas.tables import BRONZE_EVENTS

    part = ("run_id", "topic", "partition")
    keys = lake.read(BRONZE_EVENTS).select(*part, "broker_id", "event_id")
    ordered = keys.repartition(*part).sortWithinPartitions(*part, "broker_id", "event_id")
    ordered.write.format("noop").mode("overwrite").save()


def _pipeline(spark: Any, lake: Any, landing: str) -> dict[str, Callable[[], Any]]:
    """The four jobs as `replog ingest / timelines / lag / audit` call them, quiet, in order."""
    from jobs.audit import run_audit
    from jobs.ingest import run_ingest
    from jobs.lag import run_lag
    from jobs.timelines import run_timelines

    def quiet(_msg: str) -> None:
        return None

    return {
        "ingest": lambda: run_ingest(spark, lake, landing, log=quiet),
        "timelines": lambda: run_timelines(spark, lake, log=quiet),
        "lag": lambda: run_lag(spark, lake, log=quiet),
        "audit": lambda: run_audit(spark, lake, log=quiet),
    }


def _job_summary(name: str, r: Any) -> dict[str, Any]:
    """The few counts of a job's result worth keeping (and proof that it did the work)."""
    if name == "ingest":
        return {"read": r.read, "kept": r.kept, "quarantined": r.quarantined, "by_reason": r.by_reason,
                "bronze_version": r.bronze_version}
    if name == "timelines":
        return {"runs": len(r.runs), "partitions_recomputed": r.partitions_recomputed, "versions": r.versions}
    if name == "lag":
        return {"runs": len(r.runs), "verdicts": r.verdicts, "versions": r.versions}
    return {"runs": len(r.runs), "errors": r.errors, "warnings": r.warnings, "exit_code": int(r.exit_code),
            "error": r.error, "counts": r.counts}


def _scan_split(spark: Any, lake: Any, meter: StageMeter) -> list[dict[str, Any]]:
    """The audit's scans one at a time over bronze read as the audit reads it (not cached), sharing frames
    as the audit does: the first scan that reads a shared frame (the replica replay) pays for building it."""
    from jobs.invariants import SCANS
    from jobs.invariants.base import ScanInputs
    from schemas.tables import BRONZE_EVENTS

    bronze = lake.read(BRONZE_EVENTS)
    inputs = ScanInputs(bronze, materialise=True)
    n, fig = meter.measure(bronze.count)
    out = [{"scan": "(count bronze)", "rows": n, **fig}]
    for scan in SCANS:
        n, fig = meter.measure(lambda scan=scan: scan.run(bronze, inputs=inputs).count())
        out.append({"scan": scan.name, "rows": n, "invariants": list(scan.checks), **fig})
    return out


def run_worker(spec: dict[str, Any], partial_out: Path | None = None) -> dict[str, Any]:
    """Measure the pipeline on one event folder in this (fresh) process; returns the figures.

    After every stage the figures so far are written to `partial_out` (if given), so a run that fails
    (a job's exception, the JVM running out of heap) still leaves what it measured and why it stopped.
    """
    from jobs.config import load_config
    from jobs.lake import open_lake
    from jobs.session import build_spark

    work = Path(spec["work"])
    cfg = load_config(spec.get("config"), lake=str(work / "lake"))
    t = time.perf_counter()
    spark = build_spark(cfg.spark)
    startup = time.perf_counter() - t
    jvm = JvmMemory(spark)
    meter = StageMeter(jvm)

    # Warm-up: the demo scenario through the same jobs, the baseline (and the scans) on a throwaway lake.
    t = time.perf_counter()
    warm_cfg = load_config(spec.get("config"), lake=str(work / "warmup-lake"))
    warm_lake = open_lake(spark, warm_cfg)
    for name, fn in _pipeline(spark, warm_lake, spec["warmup_events"]).items():
        r = fn()
        if name == "audit" and int(r.exit_code) == 2:
            raise RuntimeError(f"warm-up audit failed: {r.error}")
    _scan_and_aggregate(warm_lake)
    _ordered_pass(warm_lake)
    if spec.get("scan_split"):
        _scan_split(spark, warm_lake, meter)
    warmup = time.perf_counter() - t
    shutil.rmtree(work / "warmup-lake", ignore_errors=True)

    lake = open_lake(spark, cfg)
    jobs = _pipeline(spark, lake, spec["events_dir"])
    stages: dict[str, dict[str, Any]] = {}
    results: dict[str, Any] = {}
    heap_start = jvm.heap_used_after_gc()
    live_start = jvm.live_heap()
    py_reset = _reset_peak_rss("self")
    py_rss_start = (_proc_status_kb("self", "VmRSS") or 0) * 1024
    def save_partial(failure: dict[str, Any] | None = None) -> None:
        if partial_out is not None:
            part = {"size": spec["size"], "events": spec["events"], "partial": True, "stages": stages,
                    "results": results, "failure": failure, "warmup_seconds": warmup}
            partial_out.write_text(json.dumps(part, indent=2), encoding="utf-8")

    for name in JOBS:
        print(f"[bench]   {name} ...", flush=True)
        t_stage = time.perf_counter()
        try:
            r, fig = meter.measure(jobs[name])
        except Exception as exc:
            msg = (str(exc).strip().splitlines() or [""])[0][:500]
            save_partial({"stage": name, "seconds_until_failure": time.perf_counter() - t_stage,
                          "error": f"{type(exc).__name__}: {msg}"})
            raise
        stages[name] = fig
        results[name] = _job_summary(name, r)
        print(f"[bench]   {name}: {fig['wall_seconds']:.1f} s wall, {fig['cpu_seconds']:.1f} CPU s", flush=True)
        if name == "ingest":
            _, stages["scan_1"] = meter.measure(lambda: _scan_and_aggregate(lake))
            print(f"[bench]   scan + aggregate: {stages['scan_1']['wall_seconds']:.1f} s wall", flush=True)
        save_partial()
    py_peak_all = (_proc_status_kb("self", "VmHWM") or 0) * 1024 if py_reset else None
    _, stages["scan_2"] = meter.measure(lambda: _scan_and_aggregate(lake))
    print(f"[bench]   scan + aggregate again: {stages['scan_2']['wall_seconds']:.1f} s wall", flush=True)
    _, stages["ordered"] = meter.measure(lambda: _ordered_pass(lake))
    print(f"[bench]   one ordered pass of the key columns: {stages['ordered']['wall_seconds']:.1f} s wall", flush=True)
    heap_end = jvm.heap_used_after_gc()
    live_end = jvm.live_heap()
    cached = [(int(i.memSize()), int(i.diskSize())) for i in spark.sparkContext._jsc.sc().getRDDStorageInfo()]
    split = _scan_split(spark, lake, meter) if spec.get("scan_split") else []
    if results["audit"]["exit_code"] == 2:
        print(f"[bench]   WARNING: the audit failed: {results['audit']['error']}", flush=True)
    out = {
        "size": spec["size"],
        "events": spec["events"],
        "lake_backend": type(lake).__name__,
        "spark_startup_seconds": startup,
        "warmup_seconds": warmup,
        "stages": stages,
        "results": results,
        "audit_scan_split": split,
        "memory": {
            "python_rss_start_bytes": py_rss_start,
            "python_peak_rss_jobs_bytes": py_peak_all,
            "python_peak_rss_process_lifetime_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "jvm_max_heap_bytes": jvm.max_heap,
            "jvm_heap_after_gc_start_bytes": heap_start,
            "jvm_heap_after_gc_end_bytes": heap_end,
            # the live objects after a full GC (jcmd's class histogram), with the largest classes: what the heap after
            # GC holds, without the regions G1 keeps (that figure moved by ~90 MB between identical runs)
            "jvm_live_heap_start_bytes": live_start and live_start["total_bytes"],
            "jvm_live_heap_end_bytes": live_end and live_end["total_bytes"],
            "jvm_live_heap_start": live_start,
            "jvm_live_heap_end": live_end,
            # what Spark's block manager still holds after the jobs (cached / checkpointed RDDs left behind)
            "spark_cached_rdds_after_jobs": len(cached),
            "spark_cached_memory_bytes_after_jobs": sum(m for m, _ in cached),
            "spark_cached_disk_bytes_after_jobs": sum(d for _, d in cached),
            "jvm_heap_peak_jobs_bytes": max(stages[n]["jvm_heap_peak_bytes"] for n in JOBS),
            "jvm_rss_peak_jobs_bytes": max(stages[n]["jvm_rss_peak_bytes"] or 0 for n in JOBS) or None,
        },
    }
    spark.stop()
    return out


# --- the driver of the benchmark --------------------------------------------------------------------


def _simulate(scenario: Path, out: Path, duration_ms: int | None) -> dict[str, Any]:
    """Simulate `scenario` into `out` as Parquet unless a finished earlier run is there (marker file)."""
    from replication_core.sim.cli import load_scenario, simulate

    marker = out.with_name(out.name + ".manifest.json")
    if marker.exists() and out.is_dir():
        return json.loads(marker.read_text(encoding="utf-8"))
    shutil.rmtree(out, ignore_errors=True)
    sc = load_scenario(scenario).with_overrides(duration_ms=duration_ms, fmt="parquet")
    t = time.perf_counter()
    manifest, _ = simulate(sc, out)
    manifest = {"scenario": scenario.name, "duration_ms": sc.duration_ms, "events": manifest["events"],
                "files": len(manifest["files"]), "run_id": manifest["run_id"],
                "bytes": sum(p.stat().st_size for p in out.rglob("*") if p.is_file()),
                "generate_seconds": time.perf_counter() - t}
    marker.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def _run_worker_process(spec: dict[str, Any]) -> dict[str, Any]:
    out = Path(spec["work"]) / "result.json"
    out.unlink(missing_ok=True)
    Path(str(out) + ".partial").unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec), "--worker-out", str(out)]
    # The worker's stderr (Spark's log) is passed through and watched for the JVM running out of heap.
    with subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(line)
            if "java.lang.OutOfMemoryError" in line:
                spec["jvm_out_of_memory"] = line.strip()[:300]
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return json.loads(out.read_text(encoding="utf-8"))


def _stage(r: dict[str, Any], name: str, key: str) -> float:
    """A stage's figure; `analytics` and `pipeline` are sums, `scan` the faster of the two scans."""
    st = r["stages"]
    if name == "analytics":
        return sum(st[n][key] for n in ANALYTICS)
    if name == "pipeline":
        return sum(st[n][key] for n in JOBS)
    if name == "scan":
        return min(st["scan_1"][key], st["scan_2"][key])
    return float(st[name][key])


def _derive(doc: dict[str, Any]) -> None:
    """Ratios to the scan per size, growth between the smallest and largest size, memory growth."""
    runs = [doc["runs"][k] for k in sorted(doc["runs"], key=int)]
    for r in runs:
        r["ratio_analytics_to_scan"] = {k: _stage(r, "analytics", f"{k}_seconds") / _stage(r, "scan", f"{k}_seconds")
                                        for k in ("wall", "cpu")}
        r["ratio_pipeline_to_scan"] = {k: _stage(r, "pipeline", f"{k}_seconds") / _stage(r, "scan", f"{k}_seconds")
                                       for k in ("wall", "cpu")}
        if "ordered" in r["stages"]:  # results written before session 11 lack the floor
            r["ratio_ordered_to_scan"] = {k: _stage(r, "ordered", f"{k}_seconds") / _stage(r, "scan", f"{k}_seconds")
                                          for k in ("wall", "cpu")}
    if len(runs) >= 2:
        small, large = runs[0], runs[-1]
        growth: dict[str, Any] = {"from_size": small["size"], "to_size": large["size"],
                                  "events_ratio": large["events"] / small["events"]}
        for name in (*JOBS, "analytics", "pipeline", "scan"):
            growth[name] = {k: _stage(large, name, f"{k}_seconds") / _stage(small, name, f"{k}_seconds")
                            for k in ("wall", "cpu")}
        doc["growth"] = growth
        mem: dict[str, Any] = {}
        for key in ("python_peak_rss_jobs_bytes", "jvm_heap_after_gc_end_bytes", "jvm_live_heap_end_bytes",
                    "jvm_heap_peak_jobs_bytes"):
            a, b = small["memory"].get(key), large["memory"].get(key)
            mem[key] = None if not a or b is None else b / a
        doc["memory_growth"] = mem


def _verdict(doc: dict[str, Any]) -> dict[str, str]:
    """met / NOT met per target, from what this run measured (a target needing a size not run says so)."""
    runs = doc["runs"]
    out: dict[str, str] = {}
    big = max((runs[k] for k in runs), key=lambda r: r["events"], default=None)
    if big is None:
        return {"all": "no run finished"}
    ratio = big["ratio_analytics_to_scan"]
    at_10m = big["size"] >= 10_000_000
    verdict = "met" if ratio["cpu"] <= TARGET_RATIO_TO_SCAN and ratio["wall"] <= TARGET_RATIO_TO_SCAN else (
        "NOT met" if ratio["cpu"] > TARGET_RATIO_TO_SCAN and ratio["wall"] > TARGET_RATIO_TO_SCAN
        else "met on one measure only")
    failed_10m = next((f for k, f in doc["failed"].items() if int(k) >= 10_000_000), None)
    if failed_10m is not None and not at_10m:
        why = failed_10m.get("failure") or {}
        verdict = f"NOT met (the 10 M run failed in {why.get('stage')}: {why.get('error')})"
        at_10m = True
    floor = big.get("ratio_ordered_to_scan")
    out["timelines+lag+audit <= 4x scan"] = (
        f"{verdict if at_10m else 'not measured at 10 M'}: at {big['events']:,} events "
        f"{ratio['wall']:.1f}x (wall), {ratio['cpu']:.1f}x (CPU)"
        + (f"; one ordered pass of the key columns alone: {floor['wall']:.1f}x / {floor['cpu']:.1f}x" if floor else "")
    )
    g = doc.get("growth")
    if g:
        allowed = TARGET_GROWTH_PER_10X * g["events_ratio"] / 10
        parts = []
        for name in ("analytics", "pipeline"):
            w, c = g[name]["wall"], g[name]["cpu"]
            ok = "met" if max(w, c) <= allowed else "NOT met" if min(w, c) > allowed else "met on one measure only"
            label = "timelines+lag+audit" if name == "analytics" else "ingest+timelines+lag+audit"
            parts.append(f"{label} {w:.1f}x wall / {c:.1f}x CPU: {ok}")
        is_issue = g["from_size"] == 1_000_000 and g["to_size"] == 10_000_000
        out[f"growth {g['from_size']:,} -> {g['to_size']:,}"] = (
            f"{'' if is_issue else '(issue target is 1 M -> 10 M) '}events x{g['events_ratio']:.2f}, "
            f"allowed <= {allowed:.1f}x; " + "; ".join(parts))
        m = doc["memory_growth"]
        labels = {"python_peak_rss_jobs_bytes": "Python peak RSS", "jvm_heap_after_gc_end_bytes": "JVM heap after GC",
                  "jvm_live_heap_end_bytes": "JVM live objects after full GC",
                  "jvm_heap_peak_jobs_bytes": "JVM heap peak (incl. executor task memory, informative)"}
        # The JVM is judged on its live objects where both sizes counted them (jcmd), else on the heap after GC.
        jvm_key = "jvm_live_heap_end_bytes" if m.get("jvm_live_heap_end_bytes") else "jvm_heap_after_gc_end_bytes"
        flat = all(m.get(k) is not None and m[k] < FLAT_MEMORY_MAX_GROWTH
                   for k in ("python_peak_rss_jobs_bytes", jvm_key))
        judged = f" (judged on the Python peak RSS and the {labels[jvm_key]})"
        out["driver memory flat"] = ("met" if flat else "NOT met") + judged + ": " + "; ".join(
            f"{labels[k]} x{v:.2f}" for k, v in m.items() if v is not None and k in labels)
    elif failed_10m is not None:
        out["growth 1 M -> 10 M"] = "NOT met: the 10 M run did not finish (see its failure)"
        oom = failed_10m.get("jvm_out_of_memory")
        out["driver memory flat"] = (f"NOT met: the driver JVM ran out of heap at 10 M ({oom})" if oom
                                     else "not measured: the 10 M run did not finish (see its failure)")
    else:
        out["growth 1 M -> 10 M"] = "not measured (needs two sizes)"
        out["driver memory flat"] = "not measured (needs two sizes)"
    return out


def _report(doc: dict[str, Any]) -> str:
    """The printed table."""
    keys = sorted(doc["runs"], key=int)
    runs = [doc["runs"][k] for k in keys]
    lines = [f"\n== pipeline benchmark: {doc['machine']['cpus']} cores, Spark {doc['versions']['pyspark']}, "
             f"scenario {SCENARIO.name} =="]
    head = "".join(f"{r['events']:>22,}" for r in runs) + ("   growth wall / CPU" if doc.get("growth") else "")
    lines.append(f"{'seconds: wall / CPU (Python + JVM)':40}{head}")
    names = [*JOBS, "analytics", "pipeline", "scan_1", "scan_2", "ordered"]
    labels = {"analytics": "timelines + lag + audit", "pipeline": "ingest + timelines + lag + audit",
              "scan_1": "scan + aggregate (after ingest)", "scan_2": "scan + aggregate (after audit)",
              "ordered": "one ordered pass (key columns)"}
    for name in names:
        if not all(name in r["stages"] or name in ("analytics", "pipeline") for r in runs):
            continue
        cells = "".join(
            f"{_stage(r, name, 'wall_seconds'):>12.1f} /{_stage(r, name, 'cpu_seconds'):>8.1f}" for r in runs)
        g = doc.get("growth", {}).get(name)
        if g:
            cells += f"   {g['wall']:6.2f}x / {g['cpu']:.2f}x"
        lines.append(f"{labels.get(name, name):40}{cells}")
    for label, key in (("timelines+lag+audit / scan", "ratio_analytics_to_scan"),
                       ("whole pipeline / scan", "ratio_pipeline_to_scan"),
                       ("one ordered pass / scan", "ratio_ordered_to_scan")):
        if not all(key in r for r in runs):
            continue
        lines.append(f"{label:40}" + "".join(f"{r[key]['wall']:>11.1f}x /{r[key]['cpu']:>7.1f}x" for r in runs))
    loads = [" ".join(f"{r['stages'][n]['loadavg_1m_start']:.1f}" for n in JOBS) for r in runs]
    lines.append(f"{'load avg 1 min at start of each job':40}" + "".join(f"{x:>22}" for x in loads))
    lines.append(f"{'other processes, cores (mean of stages)':40}" + "".join(
        f"{sum(r['stages'][n].get('other_processes_cores') or 0 for n in JOBS) / len(JOBS):>22.2f}" for r in runs))
    lines.append("\nmemory (MB)")
    for label, key in (("Python driver peak RSS during the jobs", "python_peak_rss_jobs_bytes"),
                       ("JVM heap after GC, before the jobs", "jvm_heap_after_gc_start_bytes"),
                       ("JVM heap after GC, after the jobs", "jvm_heap_after_gc_end_bytes"),
                       ("JVM live objects, before the jobs", "jvm_live_heap_start_bytes"),
                       ("JVM live objects, after the jobs", "jvm_live_heap_end_bytes"),
                       ("JVM heap peak during the jobs", "jvm_heap_peak_jobs_bytes"),
                       ("JVM process peak RSS during the jobs", "jvm_rss_peak_jobs_bytes")):
        vals = [r["memory"].get(key) for r in runs]
        cells = "".join(f"{'-' if v is None else f'{v / MB:,.0f}':>22}" for v in vals)
        g = doc.get("memory_growth", {}).get(key)
        lines.append(f"{label:40}{cells}" + (f"   x{g:.2f}" if g else ""))
    lines.append(f"{'per stage: Python peak RSS / JVM heap peak':40}")
    for n in JOBS:
        cells = [(r["stages"][n]["python_peak_rss_bytes"] or 0, r["stages"][n]["jvm_heap_peak_bytes"]) for r in runs]
        lines.append(f"  {n:38}" + "".join(f"{py / MB:>14,.0f} / {heap / MB:>5,.0f}" for py, heap in cells))
    for r in runs:
        if r["audit_scan_split"]:
            lines.append(f"\naudit scans one by one at {r['events']:,} events (cached bronze; count of violations)")
            for s in r["audit_scan_split"]:
                lines.append(f"  {s['scan']:38}{s['wall_seconds']:>10.1f} s wall{s['cpu_seconds']:>10.1f} CPU s"
                             f"{s['rows']:>12,} rows")
    lines.append("")
    for r in runs:
        res = r["results"]
        lines.append(f"{r['events']:,} events: ingest kept {res['ingest']['kept']:,} / quarantined "
                     f"{res['ingest']['quarantined']:,}; timelines {res['timelines']['partitions_recomputed']:,} "
                     f"partitions; lag verdicts {res['lag']['verdicts']}; audit errors {res['audit']['errors']}, "
                     f"warnings {res['audit']['warnings']}, exit code {res['audit']['exit_code']}")
    lines.append("")
    for name, v in doc["verdict"].items():
        lines.append(f"{name}: {v}")
    return "\n".join(lines)


def _git_dirty(*paths: str) -> list[str]:
    try:
        return subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return []


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {p: version(p) for p in ("pyspark", "deltalake", "pyarrow")}


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                   help="events per run, comma separated (default 1000000,10000000)")
    p.add_argument("--quick", action="store_true", help="smoke check: 100,000 events only")
    p.add_argument("--work", default=str(DEFAULT_WORK),
                   help=f"where simulated events (kept, reused) and lakes (removed) go (default {DEFAULT_WORK})")
    p.add_argument("--scan-split", action="store_true", help="also time the audit's scans one by one")
    p.add_argument("--config", help="replog config file (default conf/local.yaml)")
    p.add_argument("--out", help="results JSON (default benchmarks/results/pipeline-<UTC date>.json)")
    p.add_argument("--with-runs", metavar="FILE",
                   help="take the runs of sizes not run now from an earlier results JSON (marked as such)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        res = run_worker(json.loads(args.worker), Path(args.worker_out + ".partial"))
        Path(args.worker_out).write_text(json.dumps(res, indent=2), encoding="utf-8")
        return 0

    sizes = sorted(set(QUICK_SIZES if args.quick else (int(s) for s in args.sizes.split(",") if s)))
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.UTC)
    doc: dict[str, Any] = {
        **run_header("pipeline", started),
        "sizes": sizes,
        "scenario": SCENARIO.name,
        "versions": _versions(),
        "targets": {"ratio_to_scan_at_10m": TARGET_RATIO_TO_SCAN, "growth_1m_to_10m": TARGET_GROWTH_PER_10X,
                    "flat_memory_max_growth": FLAT_MEMORY_MAX_GROWTH},
        "commit": commit_measured("jobs"),
        "uncommitted_at_start": _git_dirty("jobs", "schemas", "replication_core"),
        "load_average_start": list(os.getloadavg()),
        "events": {},
        "runs": {},
        "failed": {},
    }
    print(f"[bench] warm-up events: {WARMUP_SCENARIO.name}", flush=True)
    warm = work / "events-warmup"
    _simulate(WARMUP_SCENARIO, warm, None)
    for n in sizes:
        d = work / f"events-{n}"
        duration_ms = math.ceil(n / EVENTS_PER_VIRTUAL_S * 1000)
        print(f"[bench] events for {n:,}: {SCENARIO.name}, {duration_ms / 1000:.1f} virtual s -> {d}", flush=True)
        m = _simulate(SCENARIO, d, duration_ms)
        doc["events"][str(n)] = m
        print(f"[bench]   {m['events']:,} events in {m['files']} files, {m['bytes'] / MB:.1f} MB", flush=True)
    for n in sizes:
        run = work / f"run-{n}"
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir(parents=True)
        spec = {"size": n, "events": doc["events"][str(n)]["events"], "events_dir": str(work / f"events-{n}"),
                "warmup_events": str(warm), "work": str(run), "config": args.config,
                "scan_split": args.scan_split}
        print(f"[bench] pipeline @ {spec['events']:,} events (fresh worker process) ...", flush=True)
        t = time.perf_counter()
        try:
            doc["runs"][str(n)] = _run_worker_process(spec)
        except subprocess.CalledProcessError as e:
            partial = run / "result.json.partial"
            doc["failed"][str(n)] = json.loads(partial.read_text(encoding="utf-8")) if partial.exists() else {}
            doc["failed"][str(n)]["exit_code"] = e.returncode
            doc["failed"][str(n)]["jvm_out_of_memory"] = spec.get("jvm_out_of_memory")
            print(f"[bench]   FAILED: worker exited with {e.returncode}: {doc['failed'][str(n)].get('failure')}",
                  flush=True)
        print(f"[bench]   worker took {time.perf_counter() - t:.0f} s", flush=True)
        shutil.rmtree(run / "lake", ignore_errors=True)
    if args.with_runs:
        earlier = json.loads(Path(args.with_runs).read_text(encoding="utf-8"))
        for k, r in earlier["runs"].items():
            if k not in doc["runs"] and k not in doc["failed"]:
                doc["runs"][k] = {**r, "from_file": args.with_runs, "from_run_started_utc": earlier["started_utc"],
                                  "from_commit": earlier.get("commit")}
                doc["events"][k] = earlier["events"][k]
                print(f"[bench] size {int(k):,} taken from {args.with_runs} (run {earlier['started_utc']})")
    doc["finished_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    doc["load_average_end"] = list(os.getloadavg())
    doc["uncommitted_at_end"] = _git_dirty("jobs", "schemas", "replication_core")
    if doc["runs"]:
        _derive(doc)
        doc["verdict"] = _verdict(doc)
        print(_report(doc))
    for k, f in doc["failed"].items():
        print(f"\nFAILED at {int(k):,} ({f.get('events', 0):,} events): {f.get('failure')}")
        for name, fig in f.get("stages", {}).items():
            print(f"  {name:38}{fig['wall_seconds']:>10.1f} s wall{fig['cpu_seconds']:>10.1f} CPU s")
        doc.setdefault("verdict", {})[f"run at {int(k):,}"] = (
            f"FAILED in {(f.get('failure') or {}).get('stage')}: {(f.get('failure') or {}).get('error')}")
    print(f"load average (1/5/15 min) at start {'/'.join(f'{x:.1f}' for x in doc['load_average_start'])}, "
          f"at end {'/'.join(f'{x:.1f}' for x in doc['load_average_end'])}")
    out = Path(args.out) if args.out else BENCH_DIR / "results" / f"pipeline-{started.date().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"\n[bench] figures written to {out}")
    return 1 if doc["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
