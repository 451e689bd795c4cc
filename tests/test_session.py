"""Session helpers: scoped SQL confs, the storage level of event-sized caches and the lookup tables' broadcast."""

from __future__ import annotations

import pytest
from pyspark import StorageLevel

from jobs.session import BROADCAST_LOOKUPS_CONF, EVENT_CACHE_CONF, event_cache_level, lookup, sql_conf


def test_event_cache_level_comes_from_the_spark_conf_and_rejects_unknown_names(spark) -> None:
    assert event_cache_level(spark) == StorageLevel.DISK_ONLY  # the default
    with sql_conf(spark, {EVENT_CACHE_CONF: "MEMORY_AND_DISK"}):
        assert event_cache_level(spark) == StorageLevel.MEMORY_AND_DISK
    with sql_conf(spark, {EVENT_CACHE_CONF: "MEMORY_PLENTY"}), pytest.raises(ValueError, match="MEMORY_PLENTY"):
        event_cache_level(spark)
    assert event_cache_level(spark) == StorageLevel.DISK_ONLY  # restored


def test_a_lookup_is_broadcast_unless_the_conf_leaves_it_to_spark(spark) -> None:
    """`spark.replog.broadcastLookups` (default true) decides whether a lookup table carries the broadcast hint; the
    join's answer is the same either way."""
    events = spark.range(100).withColumnRenamed("id", "k")
    table = spark.range(0, 100, 10).withColumnRenamed("id", "k")

    def hinted() -> tuple[bool, int]:
        joined = events.join(lookup(table), "k")
        return "strategy=broadcast" in joined._jdf.queryExecution().analyzed().toString(), joined.count()

    assert hinted() == (True, 10)
    with sql_conf(spark, {BROADCAST_LOOKUPS_CONF: "false"}):
        assert hinted() == (False, 10)
    with sql_conf(spark, {BROADCAST_LOOKUPS_CONF: "sometimes"}), pytest.raises(ValueError, match="sometimes"):
        lookup(table)


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


def test_jvm_log_level_quiets_the_rdd_loggers_for_the_block_only(spark) -> None:
    """The audit releases its local checkpoints without Spark's per-RDD warning, and leaves logging as it was."""
    from jobs.session import RDD_LOGGER, jvm_log_level

    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    child = f"{RDD_LOGGER}.MapPartitionsRDD"  # the logger of the RDDs the warning came from
    before = str(log4j.LogManager.getLogger(child).getLevel())
    assert before == "WARN"
    with jvm_log_level(spark, RDD_LOGGER, "ERROR"):
        assert str(log4j.LogManager.getLogger(child).getLevel()) == "ERROR"
    assert str(log4j.LogManager.getLogger(child).getLevel()) == before
