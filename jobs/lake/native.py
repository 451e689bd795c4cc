"""Native Delta backend: `format("delta")` through delta-spark, for clusters and Databricks.

Selected when delta-spark's JVM jars are on the classpath (`spark-submit --packages
io.delta:delta-spark_2.13:4.4.1`, Databricks runtimes). Idempotency keys are written as the
commit's `userMetadata` (delta-spark takes one `txnAppId` per write, a batch may carry several
keys) and looked up in the table history; delta-spark serialises conflicting commits itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.lake.api import CommitResult, IdempotencyKey, Lake, PartitionValues
from jobs.lake.selection import selection_column, selection_sql
from schemas.spark import to_spark_schema
from schemas.tables import TableSpec

KEYS_FIELD = "replog.keys"


class NativeLake(Lake):
    """Delta tables through delta-spark (needs its JVM jars; not available on these machines)."""

    backend = "native"

    def _delta_table(self, spec: TableSpec) -> Any:
        from delta.tables import DeltaTable  # imported late: the module needs the JVM classes

        return DeltaTable.forPath(self.spark, self.path(spec))

    def exists(self, spec: TableSpec) -> bool:
        """True if the table has been created."""
        from delta.tables import DeltaTable

        return bool(DeltaTable.isDeltaTable(self.spark, self.path(spec)))

    def version(self, spec: TableSpec) -> int | None:
        """The table's current version, or None if it does not exist."""
        if not self.exists(spec):
            return None
        return int(self._delta_table(spec).history(1).select("version").first()[0])

    def read(self, spec: TableSpec, partitions: Sequence[PartitionValues] | None = None) -> DataFrame:
        """The current snapshot with the spec's schema."""
        schema = to_spark_schema(spec.schema)
        if not self.exists(spec):
            return self.spark.createDataFrame([], schema)
        df = self.spark.read.format("delta").load(self.path(spec))
        if partitions is not None:
            df = df.where(selection_column(partitions))
        # A table of an older minor schema version lacks the newer (nullable) columns until its next write.
        have = set(df.columns)
        return df.select(*[(F.col(f.name) if f.name in have else F.lit(None)).cast(f.dataType).alias(f.name)
                           for f in schema.fields])

    def committed(self, spec: TableSpec, keys: Sequence[IdempotencyKey]) -> set[IdempotencyKey]:
        """Keys found in the `userMetadata` of the table's commits (history is metadata-sized)."""
        if not keys or not self.exists(spec):
            return set()
        seen: set[tuple[str, int]] = set()
        for row in self._delta_table(spec).history().select("userMetadata").collect():
            if row[0]:
                try:
                    seen.update((k, v) for k, v in json.loads(row[0]).get(KEYS_FIELD, []))
                except (ValueError, AttributeError):
                    continue
        return {k for k in keys if (k.app_id, k.version) in seen}

    def _writer(self, spec: TableSpec, df: DataFrame, keys: Sequence[IdempotencyKey],
                metadata: Mapping[str, Any] | None) -> Any:
        schema = to_spark_schema(spec.schema)
        meta = {**(metadata or {}), KEYS_FIELD: [[k.app_id, k.version] for k in keys]}
        w = df.select(*[F.col(f.name).cast(f.dataType) for f in schema.fields]).write.format("delta")
        # A table written by an older minor schema version lacks the newer nullable columns: let the write
        # add them (delta-spark's schema evolution) instead of failing on the mismatch.
        w = w.option("userMetadata", json.dumps(meta)).option("mergeSchema", "true")
        return w.partitionBy(*spec.partition_by) if spec.partition_by else w

    def append(self, spec: TableSpec, df: DataFrame, keys: Sequence[IdempotencyKey] = (),
               metadata: Mapping[str, Any] | None = None) -> CommitResult:
        """Append in one delta-spark commit, once per set of keys."""
        if self.already_committed(spec, keys):
            return CommitResult(spec.name, None, skipped=True)
        self._writer(spec, df, keys, metadata).mode("append").save(self.path(spec))
        return CommitResult(spec.name, self.version(spec), metadata=dict(metadata or {}))

    def overwrite_partitions(self, spec: TableSpec, df: DataFrame, partitions: Sequence[PartitionValues],
                             keys: Sequence[IdempotencyKey] = (),
                             metadata: Mapping[str, Any] | None = None) -> CommitResult:
        """Replace the listed partitions with `replaceWhere` in one commit."""
        if self.already_committed(spec, keys):
            return CommitResult(spec.name, None, skipped=True)
        w = self._writer(spec, df, keys, metadata).mode("overwrite")
        if spec.partition_by:
            w = w.option("replaceWhere", selection_sql(partitions))
        w.save(self.path(spec))
        return CommitResult(spec.name, self.version(spec), metadata=dict(metadata or {}))
