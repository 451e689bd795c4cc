# Databricks notebook source
# MAGIC %md
# MAGIC # replog — investigate an incident
# MAGIC Three questions an operator asks after a broker failure, answered from the lake's tables:
# MAGIC 1. **Did it lose acknowledged data?** Which acknowledged writes are gone (acks=all and acks=1 apart), and
# MAGIC    which election lost them.
# MAGIC 2. **Which followers fell behind beyond `replica.lag.time.max.ms`**, and did the leader shrink the ISR
# MAGIC    when (and only when) it should?
# MAGIC 3. **How did HW and LEO move** on the partition at the centre of it?
# MAGIC
# MAGIC The jobs must have run first: `replog demo` does all of them, or `replog ingest` → `timelines` → `lag` →
# MAGIC `audit`. Parameters (environment variables, or edit the cell): `REPLOG_LAKE` (the lake root, default
# MAGIC `./lake`), `REPLOG_RUN` (default: the runs of the latest audit), `REPLOG_TOPIC` + `REPLOG_PARTITION` (default:
# MAGIC the worst flagged partition), `REPLOG_OUT` (where the picture goes, default `<lake>/reports/notebook`).
# MAGIC Every cell shows aggregates or a bounded number of rows, whatever the size of the run.

# COMMAND ----------

import os
from dataclasses import asdict
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.config import JobConfig, load_config
from jobs.incident_report import (
    flagged_partitions,
    latest_audit,
    partition_pictures,
    plot_overviews,
    unclean_elections,
    worst_first,
)
from jobs.investigate import lost_per_partition, lost_writes, offsets_at_moments
from jobs.lake import open_lake
from jobs.report_document import BAD_VERDICTS
from jobs.runs import bronze_runs
from jobs.session import build_spark
from schemas.audit import GOLD_INVARIANT_VIOLATIONS
from schemas.tables import (
    BRONZE_EVENTS,
    GOLD_LAG_INCIDENTS,
    GOLD_LAG_SUMMARY,
    SILVER_ISR_CHANGES,
    SILVER_REPLICA_OFFSETS,
)

lake_root = os.environ.get("REPLOG_LAKE", "./lake")
# The running session where there is one (Databricks, a test); run as a script, one built as the jobs build theirs
# (conf/local.yaml: UTC times, no progress bars between the tables, warnings only).
spark = SparkSession.getActiveSession() or build_spark(load_config(lake=lake_root).spark)
lake = open_lake(spark, JobConfig(lake=lake_root))
ROWS = 20  # rows shown per table


def show(df: DataFrame, rows: int = ROWS) -> None:
    """Databricks' `display` where there is one, else the first `rows` rows as text."""
    shown = df.limit(rows)
    if "dbutils" in globals():
        display(shown)  # noqa: F821 - Databricks' notebook builtin
    else:
        shown.show(rows, truncate=False)


# The run asked for (an error if bronze does not hold it), else the runs of the latest audit.
runs = (bronze_runs(lake, [os.environ["REPLOG_RUN"]]) if os.environ.get("REPLOG_RUN")
        else sorted(latest_audit(lake, None)["runs"]))
print(f"lake {lake_root}, runs: {', '.join(runs)}")
parts = [{"run_id": r} for r in runs]
bronze = lake.read(BRONZE_EVENTS, parts)
violations = lake.read(GOLD_INVARIANT_VIOLATIONS, parts)
incidents = lake.read(GOLD_LAG_INCIDENTS, parts)

# COMMAND ----------

# MAGIC %md
# MAGIC ## The cluster through the incident
# MAGIC Each run as a broker dashboard would have shown it (the incident report's overview): partitions
# MAGIC under-replicated, under min ISR and offline, followers lagging beyond `replica.lag.time.max.ms`, ISR shrinks
# MAGIC and expands, and one lane per broker with its crashes, restarts and the elections that made it leader (and,
# MAGIC in a simulated run, its GC pauses, disk stalls and network partitions as thin bars, listed below it with the
# MAGIC peers each partition cut the broker off from).

# COMMAND ----------

out_dir = Path(os.environ.get("REPLOG_OUT") or Path(lake_root) / "reports" / "notebook")


def show_picture(path: Path) -> None:
    """Inline in Jupyter and Databricks; a plain script gets the path printed by the caller."""
    try:
        from IPython import get_ipython
        from IPython.display import Image
        from IPython.display import display as show_image
    except ImportError:
        return
    if get_ipython() is not None:
        show_image(Image(filename=str(path)))


drawn = plot_overviews(spark, lake, runs, out_dir, log=lambda _: None)
overviews = [o.path for o in drawn]
for o in drawn:
    print("cluster overview:", o.path)
    show_picture(o.path)
    # The faults on its lanes, with the peers each network partition cut the broker off from (the first max_rows).
    if o.faults:
        print(f"broker faults of {o.run_id} ({len(o.faults)} of {o.faults_total}):")
        print(pd.DataFrame([asdict(f) for f in o.faults]).to_string(index=False))

# COMMAND ----------

# MAGIC %md
# MAGIC ## 1. Did it lose acknowledged data?
# MAGIC Produce acknowledgements per `acks` setting and outcome: only `acks=all` writes acknowledged `NONE` are
# MAGIC promised to survive the failure of any ISR member but the last. The audit's `acked_write_lost` lists each
# MAGIC such write that is missing from the partition's final leader log, offset by offset. An `acks=1` write is
# MAGIC acknowledged by the leader alone and may be lost when it fails or is deposed (Kafka promises it nothing
# MAGIC more): the audit's `acks1_write_lost` lists those missing from the final leader log as findings of
# MAGIC severity `info` — counted, never a failure, but data the producer believes written. The tables below
# MAGIC count both, per `acks` setting (`all` or `1`; an `acks=0` producer reads no answer: its writes are not
# MAGIC checked).

# COMMAND ----------

acked = (bronze.where(F.col("event_type") == "produce_ack")
         .groupBy("run_id", "topic", "acks", "error")
         .agg(F.count(F.lit(1)).alias("requests"),
              F.sum(F.when(F.col("error") == "NONE", F.col("last_offset") - F.col("base_offset") + 1))
              .alias("records_acknowledged"))
         .orderBy("run_id", "topic", "acks", "error"))
show(acked, 100)

# Every acknowledged write missing from its partition's final leader log, with the producer's acks.
lost_any = lost_writes(violations)
lost = lost_any.where(F.col("acks") == "all").orderBy("run_id", "topic", "partition", "offset")
lost_by_partition = lost_per_partition(lost_any).orderBy(F.col("acks") != "all", F.col("writes_lost").desc(),
                                                         "run_id", "topic", "partition")
# At most two rows: per acks setting, the writes lost and the partitions they were lost on.
lost_counts = {r["acks"]: (int(r["writes"]), int(r["partitions"])) for r in lost_by_partition.groupBy("acks").agg(
    F.sum("writes_lost").alias("writes"), F.count(F.lit(1)).alias("partitions")).collect()}
lost_total, partitions_lost = lost_counts.get("all", (0, 0))
acks1_total, acks1_partitions = lost_counts.get("1", (0, 0))
print(f"acknowledged writes lost: acks=all {lost_total}; acks=1 {acks1_total} (allowed by Kafka: info)")
show(lost_by_partition)

# The elections of the partitions that lost writes: an unclean one is the usual cause of a lost acks=all write, a
# clean failover away from an isolated leader enough to lose acks=1 ones.
elections = (bronze.where(F.col("event_type") == "leader_election")
             .join(lost_by_partition.select("run_id", "topic", "partition").distinct(),
                   ["run_id", "topic", "partition"], "left_semi")
             .select("run_id", "topic", "partition", "ts_ms", F.col("action").alias("election"), "leader_id",
                     "leader_epoch", "isr", "reason")
             .orderBy("run_id", "topic", "partition", "ts_ms"))
show(elections)

# COMMAND ----------

# MAGIC %md
# MAGIC ## 2. Which followers fell behind, and did the leader shrink the ISR in time?
# MAGIC A lag incident is an interval in which a follower's time lag (now − `lastCaughtUpTimeMs`, as its leader
# MAGIC sees it) exceeded `replica.lag.time.max.ms`. Kafka's `isr-expiration` task runs every half of that
# MAGIC setting, so a shrink is *on time* within 1.5 × the setting. *Late*, *missing* and *premature* (a shrink of
# MAGIC a follower that was not lagging) are what to look at; *recovered*, *leader_lost*, *not_in_isr* and *ongoing*
# MAGIC say why no shrink was due (see `jobs/transforms/lag.py`).

# COMMAND ----------

verdicts = (incidents.groupBy("run_id", "verdict")
            .agg(F.count(F.lit(1)).alias("incidents"), F.max("peak_time_lag_ms").alias("max_time_lag_ms"),
                 F.max("peak_message_lag").alias("max_message_lag"))
            .orderBy("run_id", "verdict"))
show(verdicts)

attention = (incidents.where(F.col("verdict").isin(*sorted(BAD_VERDICTS)))
             .select("run_id", "topic", "partition", "follower_id", "leader_id", "start_ms", "end_ms",
                     "lag_max_ms", "peak_time_lag_ms", "peak_message_lag", "shrink_ms", "verdict")
             .orderBy("run_id", "start_ms", "topic", "partition", "follower_id"))
print(f"lag incidents: {incidents.count()}, of which late, missing or premature: {attention.count()}")
show(attention)

# Per broker: under-replicated minutes, ISR churn and the worst lag (the operator's dashboard row).
brokers = (lake.read(GOLD_LAG_SUMMARY, parts).where(F.col("scope") == "broker")
           .select("run_id", "broker_id", "urp_minutes", "isr_shrinks", "isr_expands", "max_time_lag_ms",
                   "max_message_lag", "lag_incidents", "incidents_late", "incidents_missing", "premature_shrinks")
           .orderBy("run_id", "broker_id"))
show(brokers, 100)

# COMMAND ----------

# MAGIC %md
# MAGIC ## 3. How did HW and LEO move?
# MAGIC The partition at the centre of the incident (the worst flagged one unless `REPLOG_TOPIC` and
# MAGIC `REPLOG_PARTITION` name another): every replica's role, HW and LEO at each moment that changed the
# MAGIC partition's replication (leader elections, committed ISR changes, crashes and restarts of its brokers, and in
# MAGIC a simulated run the GC pauses, disk stalls and network partitions the simulator held them in), the
# MAGIC ISR changes with their proposals and outcomes, and the picture the incident report draws — HW and LEO per
# MAGIC replica over time, ISR membership bands, leader changes, violations and lag incidents marked. The interval
# MAGIC tables behind them are `silver/replica_offsets` and `silver/partition_state`.

# COMMAND ----------

if os.environ.get("REPLOG_TOPIC") and os.environ.get("REPLOG_PARTITION"):
    focus = (os.environ.get("REPLOG_RUN") or runs[0], os.environ["REPLOG_TOPIC"], int(os.environ["REPLOG_PARTITION"]))
else:
    # One row: the partition with the most errors, then warnings, unclean elections, late / missing / premature
    # incidents, then acks=1 writes lost (info).
    worst = flagged_partitions(violations, incidents, unclean_elections(bronze)).orderBy(*worst_first()).limit(
        1).collect()
    focus = (worst[0]["run_id"], worst[0]["topic"], worst[0]["partition"]) if worst else None
print("partition:", "none flagged (set REPLOG_TOPIC and REPLOG_PARTITION)" if focus is None
      else f"{focus[1]}-{focus[2]} of run {focus[0]}")

if focus is not None:
    run, topic, partition = focus
    in_focus = (F.col("run_id") == run) & (F.col("topic") == topic) & (F.col("partition") == partition)
    # Every replica's HW and LEO at each election, committed ISR change, crash / restart and fault of its broker.
    story = offsets_at_moments(bronze, lake.read(SILVER_REPLICA_OFFSETS, [{"run_id": run}]), run, topic, partition)
    show(story, 100)
    isr_history = (lake.read(SILVER_ISR_CHANGES, [{"run_id": run}]).where(in_focus)
                   .select("proposed_ms", "leader_id", "leader_epoch", "action", "reason", "old_isr", "proposed_isr",
                           "outcome", "committed_isr", "latency_ms")
                   .orderBy("proposed_ms"))
    show(isr_history, 50)
    (partition_picture,) = partition_pictures(spark, lake, [focus], out_dir)
    pictures = [partition_picture.png]
    print("picture:", pictures[0])
    show_picture(pictures[0])
    # The key to the picture's numbered evidence rings (a crowded picture shows some as their number alone).
    print(partition_picture.key_text() or "no numbered evidence in the picture")

# COMMAND ----------

# MAGIC %md
# MAGIC ## In short

# COMMAND ----------

# One row each: the counts behind the answers above.
unclean = bronze.where((F.col("event_type") == "leader_election") & (F.col("action") == "unclean")).count()
bad_incidents = attention.count()
conclusion = [
    f"acks=all writes acknowledged and lost: {lost_total} on {partitions_lost} partition(s); acks=1: {acks1_total} "
    f"on {acks1_partitions} partition(s) (Kafka allows it: severity info, never a failure; acks=0 writes are not "
    f"checked); unclean elections: {unclean}.",
    f"Lag incidents: {incidents.count()}, of which late, missing or premature: {bad_incidents}.",
]
if focus is not None:
    conclusion.append(f"Partition {focus[1]}-{focus[2]} of run {focus[0]}: {pictures[0]}")
print("\n".join(conclusion))
