"""The lake's tables: name, arrow schema and partition columns, in one place."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from schemas.analytics import (
    FOLLOWER_LAG_SCHEMA,
    ISR_CHANGES_SCHEMA,
    LAG_INCIDENTS_SCHEMA,
    LAG_SUMMARY_SCHEMA,
    PARTITION_STATE_SCHEMA,
    REPLICA_OFFSETS_SCHEMA,
    RUN_PARTITION_BY,
    TIMELINE_WATERMARKS_SCHEMA,
)
from schemas.events import BRONZE_EVENTS_PARTITION_BY, BRONZE_EVENTS_SCHEMA, QUARANTINE_SCHEMA


@dataclass(frozen=True)
class TableSpec:
    """A lake table: its path below the lake root, schema and partition columns."""

    name: str
    schema: pa.Schema
    partition_by: tuple[str, ...] = ()

    @property
    def data_schema(self) -> pa.Schema:
        """The columns stored inside the data files (partition columns live in the Delta log)."""
        return pa.schema([f for f in self.schema if f.name not in self.partition_by])


BRONZE_EVENTS = TableSpec("bronze/replication_events", BRONZE_EVENTS_SCHEMA, BRONZE_EVENTS_PARTITION_BY)
BRONZE_QUARANTINE = TableSpec("bronze/quarantine", QUARANTINE_SCHEMA)

TABLES: dict[str, TableSpec] = {t.name: t for t in (BRONZE_EVENTS, BRONZE_QUARANTINE)}

# --- silver / gold tables of `replog timelines` and `replog lag` (schemas in schemas.analytics) -----

SILVER_REPLICA_OFFSETS = TableSpec("silver/replica_offsets", REPLICA_OFFSETS_SCHEMA, RUN_PARTITION_BY)
SILVER_PARTITION_STATE = TableSpec("silver/partition_state", PARTITION_STATE_SCHEMA, RUN_PARTITION_BY)
SILVER_ISR_CHANGES = TableSpec("silver/isr_changes", ISR_CHANGES_SCHEMA, RUN_PARTITION_BY)
SILVER_TIMELINE_WATERMARKS = TableSpec("silver/_timeline_watermarks", TIMELINE_WATERMARKS_SCHEMA, RUN_PARTITION_BY)
SILVER_FOLLOWER_LAG = TableSpec("silver/follower_lag", FOLLOWER_LAG_SCHEMA, RUN_PARTITION_BY)
GOLD_LAG_INCIDENTS = TableSpec("gold/lag_incidents", LAG_INCIDENTS_SCHEMA, RUN_PARTITION_BY)
GOLD_LAG_SUMMARY = TableSpec("gold/lag_summary", LAG_SUMMARY_SCHEMA, RUN_PARTITION_BY)

TABLES.update({
    t.name: t
    for t in (SILVER_REPLICA_OFFSETS, SILVER_PARTITION_STATE, SILVER_ISR_CHANGES, SILVER_TIMELINE_WATERMARKS,
              SILVER_FOLLOWER_LAG, GOLD_LAG_INCIDENTS, GOLD_LAG_SUMMARY)
})
