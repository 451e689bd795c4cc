"""Which runs an incremental audit (`replog audit --changed`) must judge, and what each audit judged.

A run's violations depend only on its own bronze events and on the audit's code, so a run needs judging
again only when one of the two changed. Bronze is append-only (an ingest adds events, never rewrites
them), so a run's event count and largest event id tell whether it got new events; the code is named by
`audit_signature`. Every audit records both for the runs it judged in `gold/_audit_watermarks`, after
its other writes, so an audit that failed half-way leaves its runs still to do.
"""

from __future__ import annotations

import hashlib
import importlib.util
import pkgutil
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import jobs.invariants
from jobs.lake import Lake
from schemas.audit import GOLD_AUDIT_WATERMARKS
from schemas.spark import to_spark_schema

SIGNED_MODULES: tuple[str, ...] = ("replication_core.checker.catalogue",)
"""Modules besides `jobs.invariants` whose source decides a verdict (the catalogue's severities and rules)."""


@dataclass(frozen=True)
class RunMark:
    """What bronze holds of one run: its event count and largest event id."""

    event_count: int
    max_event_id: int


def audit_signature() -> str:
    """replog's version plus a digest of the invariants' sources: another value means other verdicts may follow.

    Sources are read through their module loaders, so the digest is the same when the code runs from a
    `--py-files` zip (spark-submit) as from the checkout.
    """
    names = ["jobs.invariants", *sorted(f"jobs.invariants.{m.name}" for m in pkgutil.iter_modules(
        jobs.invariants.__path__)), *SIGNED_MODULES]
    digest = hashlib.sha256()
    for name in names:
        spec = importlib.util.find_spec(name)
        source = spec.loader.get_source(name) if spec is not None and spec.loader is not None else None  # type: ignore[attr-defined]
        if source is None:
            raise RuntimeError(f"cannot read the source of {name} to sign the audit: expected a .py module")
        digest.update(name.encode())
        digest.update(source.encode())
    return f"{_package_version()}+{digest.hexdigest()[:12]}"


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("replog")
    except Exception:  # not installed (a zip on a cluster's driver): the digest still names the code
        return "0+unknown"


def run_marks(bronze: DataFrame) -> dict[str, RunMark]:
    """Per run in `bronze`, its event count and largest event id (one small row per run reaches the driver)."""
    rows = bronze.groupBy("run_id").agg(F.count(F.lit(1)).alias("n"), F.max("event_id").alias("m")).collect()
    return {r["run_id"]: RunMark(int(r["n"]), int(r["m"])) for r in rows}


def judged_marks(lake: Lake, runs: Sequence[str], signature: str) -> dict[str, RunMark]:
    """What the last audit of each of `runs` judged, where that audit ran with `signature`."""
    if not runs or not lake.exists(GOLD_AUDIT_WATERMARKS):
        return {}
    rows = (lake.read(GOLD_AUDIT_WATERMARKS, [{"run_id": r} for r in runs])
            .where(F.col("audit_signature") == signature)
            .select("run_id", "event_count", "max_event_id").collect())
    return {r["run_id"]: RunMark(int(r["event_count"]), int(r["max_event_id"])) for r in rows}


def changed_runs(current: dict[str, RunMark], judged: dict[str, RunMark]) -> list[str]:
    """The runs of `current` whose events differ from what was judged (or that were never judged), sorted."""
    return sorted(r for r, mark in current.items() if judged.get(r) != mark)


def record_judged(lake: Lake, marks: dict[str, RunMark], signature: str, audit_id: str,
                  bronze_version: int | None) -> None:
    """Replace the watermarks of the runs in `marks` with what this audit judged."""
    if not marks:
        return
    rows = [(run, m.event_count, m.max_event_id, signature, audit_id, bronze_version)
            for run, m in sorted(marks.items())]
    df = lake.spark.createDataFrame(rows, to_spark_schema(GOLD_AUDIT_WATERMARKS.schema))
    lake.overwrite_partitions(GOLD_AUDIT_WATERMARKS, df, [{"run_id": r} for r in sorted(marks)],
                              metadata={"replog.audit": audit_id})
