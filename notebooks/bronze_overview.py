# Databricks notebook source
# MAGIC %md
# MAGIC # replog — what landed in bronze
# MAGIC Events per run and type, the quarantine by reason, and the ingest history of the bronze table.
# MAGIC Set `lake` to the lake root (the `lake:` of your replog config). Uses the same table API as the jobs,
# MAGIC so it runs on Databricks (native Delta) and locally (embedded delta-rs) alike.

# COMMAND ----------

import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.config import JobConfig, load_config
from jobs.lake import open_lake
from jobs.session import build_spark
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE

lake_root = os.environ.get("REPLOG_LAKE", "./lake")
# The running session where there is one (Databricks, a test); run as a script, one built as the jobs build theirs
# (conf/local.yaml: UTC times, no progress bars between the tables, warnings only).
spark = SparkSession.getActiveSession() or build_spark(load_config(lake=lake_root).spark)
lake = open_lake(spark, JobConfig(lake=lake_root))

# COMMAND ----------

# Events per run and type (an aggregate: safe to display whatever the table's size).
events = lake.read(BRONZE_EVENTS)
per_type = events.groupBy("run_id", "event_type").agg(F.count(F.lit(1)).alias("events"))
display_df = per_type.orderBy("run_id", "event_type")
display_df.show(100, truncate=False)

# COMMAND ----------

# Quarantine by reason, with one example each.
(
    lake.read(BRONZE_QUARANTINE)
    .groupBy("reason_code")
    .agg(F.count(F.lit(1)).alias("records"), F.first("reason").alias("example"), F.first("_source_file").alias("file"))
    .orderBy(F.desc("records"))
    .show(truncate=False)
)

# COMMAND ----------

# MAGIC %md
# MAGIC Each ingest batch is one commit; its counts (read / kept / quarantined / duplicates) are in the commit metadata.
