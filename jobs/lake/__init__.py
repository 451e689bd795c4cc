"""The Delta table layer: one small API (`Lake`), two backends (embedded delta-rs, native delta-spark)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from jobs.config import JobConfig
from jobs.lake.api import CommitResult, IdempotencyKey, Lake, PartitionValues, StagedWrite
from jobs.lake.embedded import EmbeddedLake
from jobs.lake.errors import (
    ConcurrentCommitError,
    LakeError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedTableProtocolError,
)
from jobs.lake.native import NativeLake
from jobs.session import resolve_backend

__all__ = [
    "CommitResult", "ConcurrentCommitError", "EmbeddedLake", "IdempotencyKey", "Lake", "LakeError",
    "NativeLake", "PartitionValues", "SchemaMismatchError", "StagedWrite", "TableNotFoundError",
    "UnsupportedTableProtocolError", "open_lake",
]


def open_lake(spark: SparkSession, cfg: JobConfig) -> Lake:
    """The lake at `cfg.lake`, on the backend the config and the classpath select."""
    backend = resolve_backend(cfg, spark)
    return NativeLake(spark, cfg.lake) if backend == "native" else EmbeddedLake(spark, cfg.lake)
