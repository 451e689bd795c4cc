"""The table API every replog job uses, whatever Delta backend sits behind it.

A table is named by its path below the lake root (`bronze/replication_events`) and described by a
`schemas.tables.TableSpec`. Writes take idempotency keys: a commit whose keys are already in the
table is skipped, so a job that is rerun, or resumed after a crash, commits each batch once.
"""

from __future__ import annotations

import abc
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from schemas.spark import to_spark_schema
from schemas.tables import TableSpec

PartitionValues = Mapping[str, str | None]


def check_partition_column(spec: TableSpec, column: str) -> None:
    """Raise `ValueError` unless `spec` is partitioned by `column`."""
    if column not in spec.partition_by:
        raise ValueError(f"{spec.name} is partitioned by {list(spec.partition_by)}, not by {column!r}")


@dataclass(frozen=True)
class IdempotencyKey:
    """An application transaction (Delta `txn` action): `app_id` committed at `version`."""

    app_id: str
    version: int = 1


@dataclass(frozen=True)
class CommitResult:
    """What a write did: the table version it made (None when skipped) and the files it added.

    `rows_added` is the number of records in the added files, from their Parquet footers, where the
    backend reads them (embedded); None where it does not (native).
    """

    table: str
    version: int | None
    files_added: int = 0
    rows_added: int | None = None
    files_removed: int = 0
    skipped: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StagedWrite:
    """Records written by Spark but not yet committed: invisible to readers until `Lake.commit_staged`.

    `handle` is the backend's own: the embedded backend's `add` actions of files already in the table
    folder, or the generic staging folder whose Parquet a later append copies in.
    """

    table: TableSpec
    handle: Any


class Lake(abc.ABC):
    """A lake of Delta tables under one root, read and written through Spark."""

    backend: str = "abstract"

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self.root = root.rstrip("/")

    def path(self, spec: TableSpec) -> str:
        """The table's location."""
        return f"{self.root}/{spec.name}"

    @abc.abstractmethod
    def exists(self, spec: TableSpec) -> bool:
        """True if the table has been created."""

    @abc.abstractmethod
    def version(self, spec: TableSpec) -> int | None:
        """The table's current version, or None if it does not exist."""

    @abc.abstractmethod
    def read(self, spec: TableSpec, partitions: Sequence[PartitionValues] | None = None) -> DataFrame:
        """The table's current snapshot as a DataFrame with the spec's schema (empty if absent).

        `partitions` restricts the read to those partition values (pruning, not filtering); each names
        some or all of the partition columns, and a file matches when it agrees on those.
        """

    def partition_values(self, spec: TableSpec, column: str) -> list[str]:
        """The distinct non-null values of partition column `column` among the table's rows, sorted (a scan of that
        column; a backend that knows its files' partition values and row counts answers from its log)."""
        check_partition_column(spec, column)
        rows = self.read(spec).select(column).where(F.col(column).isNotNull()).distinct().collect()
        return sorted(str(r[0]) for r in rows)

    @abc.abstractmethod
    def committed(self, spec: TableSpec, keys: Sequence[IdempotencyKey]) -> set[IdempotencyKey]:
        """Which of `keys` the table has already committed."""

    def already_committed(self, spec: TableSpec, keys: Sequence[IdempotencyKey]) -> bool:
        """True when a write carrying `keys` is already in the table (so it must be skipped)."""
        return bool(keys) and len(self.committed(spec, keys)) == len(keys)

    @abc.abstractmethod
    def append(
        self,
        spec: TableSpec,
        df: DataFrame,
        keys: Sequence[IdempotencyKey] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> CommitResult:
        """Append `df` in one commit; skipped if every key is already committed."""

    def stage(self, spec: TableSpec, df: DataFrame) -> StagedWrite:
        """Run the Spark job that writes `df` now, commit it later (`commit_staged`) or never (`discard`).

        A job can so learn what it wrote (e.g. `Observation` metrics of the same pass) before it
        commits. The default writes Parquet to `<root>/_staging/` and appends it at commit time, which
        every backend supports; a backend that can commit files it already wrote does better.
        """
        folder = f"{self.root}/_staging/{spec.name.replace('/', '.')}-{uuid.uuid4().hex}"
        df.write.mode("error").parquet(folder)
        return StagedWrite(spec, folder)

    stages_files = False
    """True when `stage_files` and `join_staged` work: the backend commits Parquet files it did not write."""

    def stage_files(self, spec: TableSpec, write: Callable[[Path], None]) -> StagedWrite:
        """Stage the Parquet files `write(folder)` writes (partition folders, data columns): where
        `stages_files`, jobs may write a table's files by other means than a Spark DataFrame writer."""
        raise NotImplementedError(f"the {type(self).__name__} backend does not commit files it did not write")

    def join_staged(self, parts: Sequence[StagedWrite]) -> StagedWrite:
        """One staged write holding `parts` (all of one table), committed together."""
        if len(parts) == 1:
            return parts[0]
        raise NotImplementedError(f"the {type(self).__name__} backend cannot join staged writes")

    def read_staged(self, staged: StagedWrite) -> DataFrame:
        """What `stage` wrote, read back before it is committed (no reader of the table sees it yet)."""
        return self.spark.read.schema(to_spark_schema(staged.table.schema)).parquet(staged.handle)

    def commit_staged(
        self,
        staged: StagedWrite,
        keys: Sequence[IdempotencyKey] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> CommitResult:
        """Append what `stage` wrote in one commit; skipped if every key is already committed."""
        spec = staged.table
        df = self.spark.read.schema(to_spark_schema(spec.schema)).parquet(staged.handle)
        try:
            return self.append(spec, df, keys, metadata)
        finally:
            shutil.rmtree(staged.handle, ignore_errors=True)

    def discard(self, staged: StagedWrite) -> None:
        """Forget a staged write that will not be committed."""
        shutil.rmtree(staged.handle, ignore_errors=True)

    @abc.abstractmethod
    def overwrite_partitions(
        self,
        spec: TableSpec,
        df: DataFrame,
        partitions: Sequence[PartitionValues],
        keys: Sequence[IdempotencyKey] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> CommitResult:
        """Replace the listed partitions' content with `df` in one commit."""

    def merge(
        self,
        spec: TableSpec,
        df: DataFrame,
        on: Sequence[str],
        keys: Sequence[IdempotencyKey] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> CommitResult:
        """Upsert `df` by the columns `on`: rows of `df` replace rows with the same key, others stay.

        The default rewrites the partitions `df` touches (existing rows minus replaced ones, plus
        `df`) in one overwrite commit, which every backend supports; a backend may do better.
        """
        missing = [c for c in spec.partition_by if c not in on]
        if missing:
            raise ValueError(f"merge keys {list(on)} must include the partition columns {missing}")
        touched = _distinct_partitions(df, spec.partition_by)
        existing = self.read(spec, touched if spec.partition_by else None)
        kept = existing.join(df.select(*on), on=list(on), how="left_anti")
        return self.overwrite_partitions(spec, kept.unionByName(df), touched, keys, metadata)


def _distinct_partitions(df: DataFrame, cols: Sequence[str]) -> list[dict[str, str | None]]:
    """The partition values present in `df` (one small row per partition, safe to collect)."""
    if not cols:
        return []
    rows = df.select(*cols).distinct().collect()
    return [{c: (None if r[c] is None else str(r[c])) for c in cols} for r in rows]
