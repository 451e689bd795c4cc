"""The simulator's broker faults (bronze `broker_fault`, schema 1.9) as spans with their ends, in Spark.

One definition of when a fault ended, read by the audit (`delayed_fetch_bound` allows for the time a GC pause or
disk stall held a fetch's answer) and by the report (the bars on the broker and replica lanes), so that what the
picture shows is what the audit allowed for. The reference checker keeps the same ends as it reads the events
(`replication_core.checker.checker.Checker._on_broker_fault`, `_end_holds`).

* A gc_pause or disk_stall lasts `duration_ms`, or until the broker's next crash, shutdown, restart or start if one
  comes first: the process is gone, and the simulator's `Broker.start` clears both. A controlled shutdown keeps
  the process (and its pause) until its shutdown, which is an event of its own.
* A network_partition that states `duration_ms` scheduled its own heal then; a heal of every link (no peers), or
  heals that restore all its links sooner, end it earlier. One that states none lasts until every link it cut is
  restored, as the simulator's `Network` counts them: per broker, peer and direction (a two-way partition or heal
  covers outbound and inbound), a partition counts one cut more, a heal one less, never below zero, and a heal of
  every link starts every count afresh; it ends when the last of its links counts none again, or at the next heal of
  every link. So two partitions of the same links without durations both last until the second heal, as the links
  do; a heal of the outbound links alone does not end a two-way partition; heals of its peers one by one end it at
  the last; a peer named twice is cut twice, and the broker itself among its peers is no link (a partition that cuts
  no link ends where it starts).
* A network_heal is no span of its own.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from replication_core.config import LONG_MAX
from schemas.events import BROKER_FAULT, BROKER_LIFECYCLE, HOLDING_FAULTS

PARTITION, HEAL = "network_partition", "network_heal"
DIRECTIONS: tuple[str, ...] = ("outbound", "inbound")
"""The two directions a partition's cuts are counted in; `both` covers the two."""
ENDING_ACTIONS: tuple[str, ...] = ("crash", "shutdown", "restart", "start")
"""broker_lifecycle actions that end a broker's pause or stall."""
FAULT_END_COLUMNS: tuple[str, ...] = ("run_id", "broker_id", "kind", "start_ms", "end_ms", "duration_ms", "peers",
                                      "direction", "event_id")
"""Columns of `fault_ends` (`end_ms` null: nothing in the run ended it)."""


def stated_end() -> Column:
    """`ts_ms + duration_ms`, Long.MAX past the range (a bad record's duration must not fail the job)."""
    return F.coalesce(F.try_add(F.col("ts_ms"), F.col("duration_ms")), F.lit(LONG_MAX))


def fault_ends(bronze: DataFrame) -> DataFrame:
    """Every pause, stall and network partition of a broker with the ms it ended (see the module docstring);
    columns `FAULT_END_COLUMNS`. Reads only the run's broker_fault and broker_lifecycle events (a few per run)."""
    faults = bronze.where((F.col("event_type") == BROKER_FAULT) & F.col("broker_id").isNotNull()).select(
        "run_id", "broker_id", "ts_ms", "event_id", "action", "duration_ms", "peers", "direction",
        F.lit(False).alias("_life"))
    life = bronze.where((F.col("event_type") == BROKER_LIFECYCLE) & F.col("broker_id").isNotNull()
                        & F.col("action").isin(*ENDING_ACTIONS)).select(
        "run_id", "broker_id", "ts_ms", "event_id", "action", F.lit(None).cast("long").alias("duration_ms"),
        F.lit(None).cast("array<int>").alias("peers"), F.lit(None).cast("string").alias("direction"),
        F.lit(True).alias("_life"))
    rows = faults.unionByName(life)
    broker = Window.partitionBy("run_id", "broker_id").orderBy("ts_ms", "event_id")
    later = broker.rowsBetween(1, Window.unboundedFollowing)
    is_heal = (F.col("action") == HEAL) & ~F.col("_life")
    is_heal_all = is_heal & F.col("peers").isNull()
    stated = F.when(F.col("duration_ms").isNotNull(), stated_end())
    # F.least skips nulls: a span ends at the first of its ends that exists; all null is a partition still open.
    # The ends are computed over every row before the heals and lifecycle events are dropped: a filter first
    # would leave the windows nothing to find.
    heal_all = F.min(F.when(is_heal_all, F.col("ts_ms"))).over(later)
    rows = rows.select(
        "*",
        F.when(F.col("action") == PARTITION, F.least(stated, heal_all))
        .otherwise(F.least(stated, F.min(F.when(F.col("_life"), F.col("ts_ms"))).over(later))).alias("_end"),
        # A heal of every link starts the count of every link afresh (an era) and ends every partition before it.
        F.sum(is_heal_all.cast("int")).over(broker.rowsBetween(Window.unboundedPreceding, 0)).alias("_era"))
    rows = _with_links_restored(rows)
    # A partition of peers that cuts no link (only the broker itself, or none named) ends where it starts.
    restored = F.when(F.col("_restored").isNull() & F.col("peers").isNotNull(), F.col("ts_ms")).when(
        F.col("_restored") < LONG_MAX, F.col("_restored"))
    ends = F.when(F.col("action") == PARTITION, F.least(restored, F.col("_end"))).otherwise(F.col("_end"))
    return rows.select(
        "run_id", "broker_id", F.col("action").alias("kind"), F.col("ts_ms").alias("start_ms"),
        ends.alias("end_ms"), "duration_ms", "peers", "direction", "event_id", "_life").where(
        ~F.col("_life") & F.col("kind").isin(*HOLDING_FAULTS, PARTITION)).select(*FAULT_END_COLUMNS)


def _with_links_restored(rows: DataFrame) -> DataFrame:
    """`rows` (one per event) with `_restored`: for a network_partition with peers, the ms its last link was restored
    (Long.MAX: some link never was within its era), else null. Each partition and heal is spread over the links
    (peer) and directions it covers (both is outbound and inbound), counted as the simulator's `Network` counts its
    cuts, and gathered back by event (event ids are unique within a run in bronze): one lineage of the few fault
    rows, no join."""
    own_dir = F.coalesce(F.col("direction"), F.lit("both"))
    on_links = F.col("action").isin(PARTITION, HEAL) & ~F.col("_life") & F.col("peers").isNotNull()
    links = rows.select(
        # Each peer as often as it is named (`Network` cuts a link once per mention) and never the broker itself
        # (a link to itself is never cut).
        "*", F.explode_outer(F.when(on_links, F.filter("peers", lambda p: p != F.col("broker_id")))).alias("_peer"),
        F.when(on_links, F.when(own_dir == "both", F.array(*(F.lit(d) for d in DIRECTIONS)))
               .otherwise(F.array(own_dir))).alias("_dirs"),
    ).select("*", F.explode_outer("_dirs").alias("_dir"))
    link = Window.partitionBy("run_id", "broker_id", "_era", "_peer", "_dir").orderBy("ts_ms", "event_id")
    so_far = link.rowsBetween(Window.unboundedPreceding, 0)
    linked = F.col("_peer").isNotNull() & F.col("_dir").isNotNull()
    cut = linked & (F.col("action") == PARTITION)
    links = links.withColumn("_sum", F.sum(F.when(cut, 1).when(linked, -1).otherwise(0)).over(so_far))
    # A heal of an uncut link does nothing: the running sum less its lowest point so far (when below zero) is the
    # count held at zero from below.
    links = links.withColumn("_cuts", F.col("_sum") - F.least(F.lit(0), F.min("_sum").over(so_far)))
    healed = F.min(F.when(linked & ~cut & (F.col("_cuts") == 0), F.col("ts_ms"))).over(
        link.rowsBetween(1, Window.unboundedFollowing))
    kept = [c for c in rows.columns if c not in ("run_id", "broker_id", "event_id")]
    return links.withColumn("_healed", healed).groupBy("run_id", "broker_id", "event_id").agg(
        *(F.any_value(c).alias(c) for c in kept),
        F.max(F.when(cut, F.coalesce("_healed", F.lit(LONG_MAX)))).alias("_restored"))
