"""SparkSession construction and the probe that picks the Delta backend.

The native backend needs delta-spark's JVM classes on the driver's classpath. We never ask Maven
for them (these machines cannot reach it, and `configure_spark_with_delta_pip` would fail): we
only look for the class in the running JVM, so the probe answers in milliseconds either way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.config import JobConfig, SparkConfig
from jobs.py4j_lookups import remember_hot_classes

DELTA_CATALOG_CLASS = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
LOG4J_CONF = Path(__file__).resolve().parent.parent / "conf" / "log4j2.properties"
"""The driver's logging when `replog` starts its own JVM, as `spark-submit.sh` uses it (warnings only)."""


def build_spark(cfg: SparkConfig) -> SparkSession:
    """Get or create the SparkSession described by `cfg` (reused if one is already running)."""
    # Executors must run the same interpreter as the driver (pip installs into it).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(cfg.app_name)
    # Under spark-submit (spark-submit.sh sets REPLOG_SUBMITTED) the submit command owns the master
    # and the driver's memory; the config only fills them in for `replog` run directly.
    submitted = bool(os.environ.get("REPLOG_SUBMITTED"))
    if cfg.master and not submitted:
        builder = builder.master(cfg.master)
        # A local driver binds to loopback instead of guessing an interface (and warning about it).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if cfg.driver_memory and not submitted:
        builder = builder.config("spark.driver.memory", cfg.driver_memory)
    builder = builder.config("spark.sql.shuffle.partitions", str(cfg.shuffle_partitions))
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for k, v in cfg.conf.items():
        builder = builder.config(k, v)
    # The JVM `replog` launches logs as spark-submit.sh's does, from its first line, unless the config's Java
    # options or a SPARK_CONF_DIR set the driver's logging (a JVM already running keeps its own).
    java_options = str(cfg.conf.get("spark.driver.extraJavaOptions", ""))
    own_logging = "log4j2.configurationFile" in java_options or (
        Path(os.environ.get("SPARK_CONF_DIR", "/nonexistent")) / "log4j2.properties").is_file()
    if not submitted and not own_logging and LOG4J_CONF.is_file():
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"{java_options} -Dlog4j2.configurationFile=file:{LOG4J_CONF}".strip())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    remember_hot_classes(spark.sparkContext._jvm)
    return spark


def native_delta_available(spark: SparkSession) -> bool:
    """True when delta-spark's JVM classes are loadable in this session's driver."""
    jvm = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName(DELTA_CATALOG_CLASS, False, jvm.Thread.currentThread().getContextClassLoader())
    except Exception:  # py4j wraps ClassNotFoundException
        return False
    return True


def resolve_backend(cfg: JobConfig, spark: SparkSession) -> str:
    """Pick "native" or "embedded" from the config and what the classpath holds."""
    if cfg.delta_backend == "embedded":
        return "embedded"
    available = native_delta_available(spark)
    if cfg.delta_backend == "native":
        if not available:
            raise RuntimeError(
                f"delta_backend: native, but {DELTA_CATALOG_CLASS} is not on the classpath; submit with "
                "--packages io.delta:delta-spark_2.13:4.4.1 or set delta_backend: embedded"
            )
        return "native"
    return "native" if available else "embedded"


@contextmanager
def sql_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set runtime SQL confs for the block, restoring the previous values (or unsetting) after it."""
    before = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


BROADCAST_LOOKUPS_CONF = "spark.replog.broadcastLookups"


def lookup(df: DataFrame) -> DataFrame:
    """`df`, a lookup table joined to event-sized rows (one row per partition, leader epoch or stalled interval),
    hinted to be broadcast where `spark.replog.broadcastLookups` is true (the default; conf/local.yaml): on one
    machine they are small, and a broadcast keeps the event-sized side where it is. A cluster sets it false
    (conf/cluster.example.yaml): they grow with partitions x epochs x runs, and a forced broadcast ignores
    `spark.sql.autoBroadcastJoinThreshold`, so Spark's adaptive planning chooses by their measured size instead."""
    value = (df.sparkSession.conf.get(BROADCAST_LOOKUPS_CONF, "true") or "true").strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{BROADCAST_LOOKUPS_CONF} = {value!r}: expected true or false")
    return F.broadcast(df) if value == "true" else df


EVENT_CACHE_CONF = "spark.replog.eventCacheLevel"


def event_cache_level(spark: SparkSession) -> StorageLevel:
    """The storage level of caches that grow with the events (`spark.replog.eventCacheLevel`, default DISK_ONLY).

    A memory level unrolls each cached partition in the heap before it can spill it; a partition of
    millions of events (one read split, or one shuffle partition) outgrew a 2 GB driver at 10 M
    events. On disk a partition is streamed to the block store, so the heap holds what one task
    works on, however many events there are.
    """
    name = spark.conf.get(EVENT_CACHE_CONF, "DISK_ONLY") or "DISK_ONLY"
    level = getattr(StorageLevel, name, None)
    if not isinstance(level, StorageLevel):
        raise ValueError(f"{EVENT_CACHE_CONF} = {name!r}: expected a pyspark StorageLevel name such as "
                         "DISK_ONLY or MEMORY_AND_DISK")
    return level


@contextmanager
def releasing_persisted(spark: SparkSession) -> Iterator[None]:
    """Unpersist, when the block ends, every RDD persisted inside it (local checkpoints included).

    `DataFrame.localCheckpoint` keeps its blocks until the driver happens to garbage-collect the RDD,
    so a job that checkpoints intermediate results (the audit's scans) left them in the driver's heap
    after it returned. Meant for a job's own body: an RDD another thread persists meanwhile in the
    same session is released too.
    """
    jsc = spark.sparkContext._jsc
    before = set(jsc.getPersistentRDDs().keys())
    try:
        yield
    finally:
        # Spark warns, once per RDD, that a released local checkpoint cannot be recomputed: true and
        # intended here (the job is done with it), and an audit releases dozens of them.
        with jvm_log_level(spark, RDD_LOGGER, "ERROR"):
            for rdd_id, rdd in jsc.getPersistentRDDs().items():
                if rdd_id not in before:
                    rdd.unpersist(False)


RDD_LOGGER = "org.apache.spark.rdd"
"""The log4j logger of Spark's RDD classes (each RDD logs under its class name, below this one)."""


@contextmanager
def jvm_log_level(spark: SparkSession, logger: str, level: str) -> Iterator[None]:
    """Set the driver JVM's log4j `logger` (and the loggers below it) to `level` for the block, then back
    to the level it had."""
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    previous = log4j.LogManager.getLogger(logger).getLevel()
    log4j.core.config.Configurator.setLevel(logger, log4j.Level.toLevel(level))
    try:
        yield
    finally:
        log4j.core.config.Configurator.setLevel(logger, previous)
