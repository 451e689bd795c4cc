"""The simulator's broker faults (bronze `broker_fault`, schema 1.9) as spans with their ends, in Spark.

One definition of when a fault ended, read by the audit (`delayed_fetch_bound` allows for the time a GC pause or
disk stall held a fetch's answer) and by the report (the bars on the broker and replica lanes), so that what the
picture shows is what the audit allowed for. The reference checker keeps the same ends as it reads the events
(`replication_core.checker.checker.Checker._on_broker_fault`, `_end_holds`).

* A gc_pause or disk_stall lasts `duration_ms`, or until the broker's next crash, shutdown, restart or start if one
  comes first: the process is gone, and the simulator's `Broker.start` clears both. A controlled shutdown keeps
  the process (and its pause) until its shutdown, which is an event of its own.
* A network_partition that states `duration_ms` scheduled its own heal then; a heal of every link (no peers) ends
  it earlier. One that states none lasts until the links it cut are all restored, as the simulator's `Network`
  counts them: per broker and set of peers (in any order), each direction a partition covers (both is outbound and
  inbound) counts one cut more, each heal covering it one less, never below zero; it ends at the first later heal
  of those peers after which every direction it covers counts none, or at the next heal of every link. So two
  partitions of the same links without durations both last until the second heal, as the links do, and a heal of
  the outbound links alone does not end a two-way partition. A heal of other peers (a subset, say) ends nothing.
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
    rows = faults.unionByName(life).withColumn("_peers", F.array_sort("peers"))
    order = ["ts_ms", "event_id"]
    later = Window.partitionBy("run_id", "broker_id").orderBy(*order).rowsBetween(1, Window.unboundedFollowing)
    # The cuts are counted per set of sorted peers (a null list is its own group), afresh after each heal of every
    # link (the era), which ends every partition before it and is looked for across groups.
    is_heal = (F.col("action") == HEAL) & ~F.col("_life")
    is_heal_all = is_heal & F.col("peers").isNull()
    rows = rows.withColumn("_era", F.sum(is_heal_all.cast("int")).over(
        Window.partitionBy("run_id", "broker_id").orderBy(*order).rowsBetween(Window.unboundedPreceding, 0)))
    same_links = Window.partitionBy("run_id", "broker_id", "_peers", "_era").orderBy(*order)
    so_far = same_links.rowsBetween(Window.unboundedPreceding, 0)
    own_dir = F.coalesce(F.col("direction"), F.lit("both"))
    step = F.when(F.col("action") == PARTITION, 1).when(is_heal, -1).otherwise(0)
    for d in DIRECTIONS:
        # A heal of an uncut link does nothing: the running sum less its lowest point so far (when below zero) is
        # the count held at zero from below.
        rows = rows.withColumn(f"_sum_{d}", F.sum(F.when(own_dir.isin("both", d), step).otherwise(0)).over(so_far))
        rows = rows.withColumn(f"_cuts_{d}", F.col(f"_sum_{d}")
                               - F.least(F.lit(0), F.min(f"_sum_{d}").over(so_far)))
    # The first later heal of these peers after which each direction the partition covers counts no cut.
    after = same_links.rowsBetween(1, Window.unboundedFollowing)
    healed = {d: is_heal & (F.col(f"_cuts_{d}") == 0) for d in DIRECTIONS}
    heal_same = (F.when(own_dir == "outbound", F.min(F.when(healed["outbound"], F.col("ts_ms"))).over(after))
                 .when(own_dir == "inbound", F.min(F.when(healed["inbound"], F.col("ts_ms"))).over(after))
                 .otherwise(F.min(F.when(healed["outbound"] & healed["inbound"], F.col("ts_ms"))).over(after)))
    heal_all = F.min(F.when(is_heal_all, F.col("ts_ms"))).over(later)
    life_next = F.min(F.when(F.col("_life"), F.col("ts_ms"))).over(later)
    stated = F.when(F.col("duration_ms").isNotNull(), stated_end())
    # F.least skips nulls: a span ends at the first of its ends that exists; all null is a partition still open.
    ends = (F.when(F.col("action") == PARTITION,
                   F.when(F.col("duration_ms").isNotNull(), F.least(stated, heal_all))
                   .otherwise(F.least(heal_same, heal_all)))
            .otherwise(F.least(stated, life_next)))
    # The ends are computed over every row before the heals and lifecycle events are dropped: a filter first
    # would leave the windows nothing to find.
    return rows.select(
        "run_id", "broker_id", F.col("action").alias("kind"), F.col("ts_ms").alias("start_ms"),
        ends.alias("end_ms"), "duration_ms", "peers", "direction", "event_id", "_life").where(
        ~F.col("_life") & F.col("kind").isin(*HOLDING_FAULTS, PARTITION)).select(*FAULT_END_COLUMNS)
