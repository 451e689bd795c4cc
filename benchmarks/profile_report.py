"""Where `replog report` spends its time on a lake: its phases, its collected queries, its bronze reads.

    python benchmarks/profile_report.py --lake LAKE --out DIR [--json FILE]

Runs the report once (as `replog report --lake LAKE --out DIR` does) with timers around its phases — the plotted
partitions' sections (their queries and pictures), matplotlib alone, the cluster overviews — and around each query
the sections collect, and counts the reads of `bronze/replication_events`. Prints one line per figure and, with
`--json`, writes them. A profile, not a benchmark with a target: build the lake first (see benchmarks/README.md,
"The report at scale").
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jobs.incident_report as report
from jobs.cli import main as cli_main
from jobs.lake import embedded
from schemas.tables import BRONZE_EVENTS


def _timed(name: str, fn: Callable[..., Any], seconds: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
    return wrapper


def profile(lake: str, out: str) -> dict[str, Any]:
    """Run the report of `lake` into `out` with the timers and counters in place; its figures."""
    seconds: dict[str, float] = {}
    queries: list[float] = []
    bronze_reads = 0
    read, rows_by = embedded.EmbeddedLake.read, report._rows_by

    def counting_read(self: embedded.EmbeddedLake, spec: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal bronze_reads
        bronze_reads += spec is BRONZE_EVENTS
        return read(self, spec, *args, **kwargs)

    def timed_rows_by(df: Any, *key: str) -> Any:
        start = time.perf_counter()
        try:
            return rows_by(df, *key)
        finally:
            queries.append(time.perf_counter() - start)

    patched = {"_sections": report._sections, "plot_overviews": report.plot_overviews,
               "plot_partition": report.plot_partition}
    report._sections = _timed("sections (queries and pictures)", report._sections, seconds)
    report.plot_overviews = _timed("cluster overviews", report.plot_overviews, seconds)
    report.plot_partition = _timed("partition pictures (matplotlib)", report.plot_partition, seconds)
    report._rows_by = timed_rows_by
    embedded.EmbeddedLake.read = counting_read  # type: ignore[method-assign]
    start = time.perf_counter()
    try:
        code = cli_main(["report", "--lake", lake, "--out", out])
    finally:
        for name, fn in patched.items():
            setattr(report, name, fn)
        report._rows_by = rows_by
        embedded.EmbeddedLake.read = read  # type: ignore[method-assign]
    return {"lake": lake, "exit_code": code, "total_s": round(time.perf_counter() - start, 2),
            "phases_s": {k: round(v, 2) for k, v in seconds.items()}, "bronze_reads": bronze_reads,
            "collected_queries": len(queries), "collected_queries_s": round(sum(queries), 2),
            "query_s": [round(q, 2) for q in queries]}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    figures = profile(args.lake, args.out)
    for key, value in figures.items():
        print(f"{key}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return int(figures["exit_code"])


if __name__ == "__main__":
    raise SystemExit(main())
