"""Session helpers: scoped SQL confs and the storage level of event-sized caches."""

from __future__ import annotations

import pytest
from pyspark import StorageLevel

from jobs.session import EVENT_CACHE_CONF, event_cache_level, sql_conf


def test_event_cache_level_comes_from_the_spark_conf_and_rejects_unknown_names(spark) -> None:
    assert event_cache_level(spark) == StorageLevel.DISK_ONLY  # the default
    with sql_conf(spark, {EVENT_CACHE_CONF: "MEMORY_AND_DISK"}):
        assert event_cache_level(spark) == StorageLevel.MEMORY_AND_DISK
    with sql_conf(spark, {EVENT_CACHE_CONF: "MEMORY_PLENTY"}), pytest.raises(ValueError, match="MEMORY_PLENTY"):
        event_cache_level(spark)
    assert event_cache_level(spark) == StorageLevel.DISK_ONLY  # restored


def test_releasing_persisted_unpersists_what_the_block_persisted_and_nothing_else(spark) -> None:
    from jobs.session import releasing_persisted

    jsc = spark.sparkContext._jsc
    kept = spark.range(10).persist()
    kept.count()
    outside = set(jsc.getPersistentRDDs().keys())
    with releasing_persisted(spark):
        spark.range(100).localCheckpoint(eager=True)
        assert set(jsc.getPersistentRDDs().keys()) - outside  # the checkpoint is held in the block
    assert set(jsc.getPersistentRDDs().keys()) - outside == set()
    assert kept.storageLevel.useMemory, "what was persisted before the block stays"
    kept.unpersist()
