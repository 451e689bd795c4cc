"""The lake's tables: name, arrow schema and partition columns, in one place."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

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
