"""Small human-readable summaries of what is in the lake (aggregates only, never raw rows)."""

from __future__ import annotations

from pyspark.sql import functions as F

from jobs.lake import Lake
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE


def landed_summary(lake: Lake, max_rows: int = 40) -> str:
    """Events per run and type in bronze, and quarantined records per reason code."""
    events = (
        lake.read(BRONZE_EVENTS)
        .groupBy("run_id", "event_type")
        .agg(F.count(F.lit(1)).alias("events"), F.countDistinct("broker_id").alias("brokers"))
        .orderBy("run_id", "event_type")
        .limit(max_rows)
        .collect()
    )
    quarantine = (
        lake.read(BRONZE_QUARANTINE)
        .groupBy("reason_code")
        .agg(F.count(F.lit(1)).alias("records"), F.first("reason").alias("example"))
        .orderBy("reason_code")
        .collect()
    )
    lines = [f"bronze/replication_events (version {lake.version(BRONZE_EVENTS)}):"]
    lines += [f"  {r['run_id']:<40} {r['event_type']:<24} {r['events']:>9} events from {r['brokers']} brokers"
              for r in events]
    lines.append(f"bronze/quarantine (version {lake.version(BRONZE_QUARANTINE)}):")
    lines += [f"  {r['reason_code']:<20} {r['records']:>6}  e.g. {r['example'][:100]}" for r in quarantine]
    if not quarantine:
        lines.append("  (empty)")
    return "\n".join(lines)
