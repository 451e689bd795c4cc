"""The run-wide series of the report's cluster overview (`jobs.overview_plot`), aggregated in Spark.

Each run's span (its first to last event) is cut into `buckets` equal time buckets; every series is one
row per bucket at most, so what reaches the driver is bounded by the bucket count, not by the run:

* `partition_counts`: per bucket, the most partitions under-replicated, under min ISR and offline at once
  (from `silver/partition_state`) and the most followers lagging beyond replica.lag.time.max.ms at once
  (open `gold/lag_incidents`, premature shrinks left out: those are not lag; each only while its leader was in
  office, `in_office`). Each interval adds one at
  its start and takes one away at its end; a running sum in time order gives the count after every
  change, and a bucket's most is the larger of the count it starts with and the counts reached in it;
* `isr_churn`: the leaders' committed ISR shrinks and expands per bucket (`silver/isr_changes`, at their commit):
  what Kafka's `IsrShrinksPerSec` / `IsrExpandsPerSec` count (`Partition.maybeShrinkIsr` / `maybeExpandIsr`), plus
  the commits a leader learnt from the metadata before the AlterPartition answer (the meters mark only on the answer);
* `controller_isr_shrinks`: per bucket, the ISR changes that removed a replica without a leader proposing it —
  the controller's elections and LeaderAndIsr / PartitionChangeRecord changes (`silver/partition_state`),
  which those metrics do not count but which make partitions under-replicated all the same;
* `elections`: per bucket and new leader, the clean and unclean elections (bronze `leader_election`);
* `down_buckets`: per broker, the buckets in which it was down at some time: from a crash or shutdown to its
  next start or restart (bronze `broker_lifecycle`), or to the end of the run;
* `fault_spans`: per broker, the faults the simulator's injector held it in (bronze `broker_fault`: GC pause, disk
  stall, network partition) from start to end in ms (`jobs.transforms.faults`), not bucketed but capped like the
  lifecycle marks: the first `limit` of the run, with the run's `total`. `fault_marks` turns one run's rows into
  the plot's `FaultSpan`s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.fault_plot import FaultSpan
from jobs.overview_plot import COUNT_SERIES
from jobs.plots import DOWN_ACTIONS as STOPPED_ACTIONS
from jobs.plots import UNSURE_DOWN, UP_ACTIONS
from jobs.transforms.faults import fault_ends
from jobs.transforms.timelines import PARTITION_KEY
from schemas.events import BROKER_LIFECYCLE, LEADER_ELECTION

SERIES: tuple[str, ...] = tuple(c for c, *_ in COUNT_SERIES)
# The overview's buckets count a broker down from its controlled shutdown on: it is moving its leaderships away.
DOWN_ACTIONS: tuple[str, ...] = (*STOPPED_ACTIONS, "controlled_shutdown")
FAULT_SPAN_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType(), False),
    T.StructField("broker_id", T.IntegerType(), False),
    T.StructField("kind", T.StringType(), False),
    T.StructField("start_ms", T.LongType(), False),
    T.StructField("end_ms", T.LongType(), False),
    T.StructField("open", T.BooleanType(), False),
    T.StructField("peers", T.ArrayType(T.IntegerType()), True),
    T.StructField("direction", T.StringType(), True),
    T.StructField("event_id", T.LongType(), False),
    T.StructField("total", T.LongType(), False),
])
"""Columns of `fault_spans` (`open`: nothing in the run ended it, so it is drawn to the run's last event)."""


def bucket_bounds(bounds: DataFrame, buckets: int) -> DataFrame:
    """Per run (`run_id`, `start_ms`, `end_ms`): `bucket_ms`, so that `buckets` buckets cover the span."""
    span = F.col("end_ms") - F.col("start_ms") + 1
    return bounds.select("run_id", "start_ms", "end_ms",
                         F.greatest(F.lit(1), F.ceil(span / F.lit(buckets))).cast("long").alias("bucket_ms"))


def _bucket(ts: Column) -> Column:
    return F.floor((ts - F.col("start_ms")) / F.col("bucket_ms")).cast("long").alias("bucket")


def _deltas(intervals: DataFrame, flags: dict[str, Column]) -> DataFrame:
    """+1 at each interval's start and -1 at its end (none while it is open) for every flag it holds."""
    ends = [F.struct(F.col("valid_from_ms").alias("ts"),
                     *[F.when(f, 1).otherwise(0).alias(n) for n, f in flags.items()]),
            F.struct(F.col("valid_to_ms").alias("ts"),
                     *[F.when(f, -1).otherwise(0).alias(n) for n, f in flags.items()])]
    return intervals.select("run_id", F.explode(F.array(*ends)).alias("d")).select("run_id", "d.*").where(
        F.col("ts").isNotNull())


def partition_counts(partition_state: DataFrame, incidents: DataFrame, buckets: DataFrame) -> DataFrame:
    """Per run and bucket with a change: `<series>_max` (the most reached in it) and `<series>_last` (the count
    after its last change), for each of `SERIES`; `buckets` is `bucket_bounds`."""
    flags = {"under_replicated": F.coalesce("under_replicated", F.lit(False)),
             "under_min_isr": F.coalesce("under_min_isr", F.lit(False)),
             "offline": F.coalesce("offline", F.lit(False)), "lagging": F.lit(False)}
    states = _deltas(partition_state, flags)
    lag = in_office(incidents.where(F.col("verdict") != "premature"), partition_state).select(
        "run_id", F.col("start_ms").alias("valid_from_ms"), F.col("end_ms").alias("valid_to_ms"))
    lagging = _deltas(lag, {n: F.lit(n == "lagging") for n in SERIES})
    per_ts = states.unionByName(lagging).groupBy("run_id", "ts").agg(*[F.sum(n).alias(n) for n in SERIES])
    placed = per_ts.join(F.broadcast(buckets), "run_id").select(
        "run_id", _bucket(F.col("ts")), "ts", *SERIES, "start_ms", "bucket_ms")
    # The running count in two steps, so that no window holds a whole run's changes (one task per run): within each
    # bucket from its start, then the buckets' totals before it (one row per bucket: at most `buckets` per run).
    upto = Window.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    in_bucket = placed.select("run_id", "bucket", "ts", "start_ms", "bucket_ms", *[
        F.sum(n).over(upto.partitionBy("run_id", "bucket").orderBy("ts")).alias(n) for n in SERIES])
    edge = F.col("start_ms") + F.col("bucket") * F.col("bucket_ms")
    per_bucket = in_bucket.groupBy("run_id", "bucket").agg(
        *[F.max(n).alias(f"_max_{n}") for n in SERIES], *[F.max_by(n, "ts").alias(f"_last_{n}") for n in SERIES],
        # A change at the bucket's first millisecond: the count before it held for no time in this bucket.
        (F.min("ts") == F.first(edge)).alias("starts_at_edge"))
    before = Window.partitionBy("run_id").orderBy("bucket").rowsBetween(Window.unboundedPreceding, -1)
    with_base = per_bucket.select("*", *[F.coalesce(F.sum(f"_last_{n}").over(before), F.lit(0)).alias(f"_base_{n}")
                                         for n in SERIES])
    return with_base.select(
        "run_id", "bucket",
        *[(F.col(f"_base_{n}") + F.col(f"_max_{n}")).alias(f"{n}_max") for n in SERIES],
        *[(F.col(f"_base_{n}") + F.col(f"_last_{n}")).alias(f"{n}_last") for n in SERIES],
        "starts_at_edge")


def with_leader_deposed(incidents: DataFrame, partition_state: DataFrame) -> DataFrame:
    """`incidents` with `leader_deposed_ms`: when the controller's state of the partition first named a leader epoch
    newer than the incident's (null: not in the data, or no epoch). A leader cut off from the controller learns of
    it only later, and until then judges its followers in the old epoch (`jobs.transforms.lag`). An equi-join on
    (partition, epoch), whatever the number of incidents: the newer epochs' first state is a running minimum over
    the partition's epochs, newest first, to which the incidents' own epochs are added (an epoch no state names is
    deposed by the next one that does)."""
    key = [*PARTITION_KEY, "leader_epoch"]
    firsts = partition_state.where(F.col("leader_epoch").isNotNull()).groupBy(*key).agg(
        F.min("valid_from_ms").alias("_from"))
    asked = incidents.where(F.col("leader_epoch").isNotNull()).select(*key).distinct().withColumn(
        "_from", F.lit(None).cast("long"))
    newer = Window.partitionBy(*PARTITION_KEY).orderBy(-F.col("leader_epoch")).rangeBetween(
        Window.unboundedPreceding, -1)
    deposed = firsts.unionByName(asked).select(*key, F.min("_from").over(newer).alias("_deposed")).groupBy(
        *key).agg(F.min("_deposed").alias("leader_deposed_ms"))
    return incidents.join(deposed, key, "left").select(*incidents.columns, "leader_deposed_ms")


def in_office(incidents: DataFrame, partition_state: DataFrame) -> DataFrame:
    """`incidents` cut to their leader's time in office: each ends (if not before) when the controller's state of the
    partition first named a newer leader epoch (`with_leader_deposed`), and one that began after that is left out.
    Its view is the lag table's ("deposed at"), but counted on the overview it showed followers lagging behind a
    leader the cluster had already replaced."""
    cut = with_leader_deposed(incidents, partition_state)
    deposed = F.col("leader_deposed_ms")
    return cut.where(deposed.isNull() | (deposed > F.col("start_ms"))).withColumn(
        "end_ms", F.least("end_ms", deposed)).drop("leader_deposed_ms")


def isr_churn(isr_changes: DataFrame, buckets: DataFrame) -> DataFrame:
    """Per run and bucket with any: the leaders' committed ISR `shrinks` and `expands` (a controller's `update` is
    neither: see `controller_isr_shrinks`)."""
    committed = isr_changes.where((F.col("outcome") == "committed") & F.col("action").isin("shrink", "expand"))
    placed = committed.join(F.broadcast(buckets), "run_id").select("run_id", _bucket(F.col("resolved_ms")), "action")
    return placed.groupBy("run_id", "bucket").agg(
        F.count(F.when(F.col("action") == "shrink", 1)).alias("shrinks"),
        F.count(F.when(F.col("action") == "expand", 1)).alias("expands"))


def controller_isr_shrinks(partition_state: DataFrame, isr_changes: DataFrame, buckets: DataFrame) -> DataFrame:
    """Per run and bucket with any: `shrinks`, the partitions' committed ISR changes that removed a replica and
    were not a leader's own AlterPartition (a committed `shrink` of `silver/isr_changes`, whose commit opened the
    state): the controller's, e.g. the clean election that leaves a dead leader out of the ISR (a ZooKeeper
    controller's LeaderAndIsr, a KRaft controller's PartitionChangeRecord). Read from `silver/partition_state`:
    each state is compared with the partition's one before it, and is attributed to the last event of its
    millisecond (`cause`, `event_id`)."""
    order = Window.partitionBy("run_id", "topic", "partition").orderBy("valid_from_ms", "event_id")
    removed = F.array_except(F.lag("isr").over(order), F.col("isr"))
    # An ISR no event stated (a log line without it) is unknown, not empty: it removes nobody.
    shrunk = partition_state.select(
        "run_id", "topic", "partition", "valid_from_ms", "event_id", "cause",
        F.coalesce(F.size(removed) > 0, F.lit(False)).alias("_removes")).where(F.col("_removes"))
    # A leader may learn its own commit from the metadata before the AlterPartition answer (a committed `update`,
    # KRaft): `silver/isr_changes` groups that with the proposal, whose resolution is then the state's event.
    own = isr_changes.where((F.col("outcome") == "committed") & F.col("action").isin("shrink", "expand")).select(
        "run_id", "topic", "partition", F.col("resolved_event_id").alias("event_id"))
    by_controller = shrunk.where(~F.coalesce(F.col("cause") == "isr_change:shrink", F.lit(False))).join(
        own, ["run_id", "topic", "partition", "event_id"], "left_anti")
    placed = by_controller.join(F.broadcast(buckets), "run_id").select("run_id", _bucket(F.col("valid_from_ms")))
    return placed.groupBy("run_id", "bucket").agg(F.count(F.lit(1)).alias("shrinks"))


def elections(bronze: DataFrame, buckets: DataFrame) -> DataFrame:
    """Per run, bucket and new leader: its clean, unclean (`unclean`) and eligible-leader-replica (`from_elr`,
    KIP-966) elections."""
    chosen = bronze.where((F.col("event_type") == LEADER_ELECTION) & F.col("leader_id").isNotNull())
    placed = chosen.join(F.broadcast(buckets), "run_id").select(
        "run_id", _bucket(F.col("ts_ms")), "leader_id", (F.col("action") == "unclean").alias("unclean"),
        (F.col("action") == "elr").alias("from_elr"))
    return placed.groupBy("run_id", "bucket", "leader_id", "unclean", "from_elr").agg(
        F.count(F.lit(1)).alias("elections"))


def down_buckets(bronze: DataFrame, buckets: DataFrame) -> DataFrame:
    """Per run and broker, the buckets (`bucket`) in which it was down at some time; `buckets` is `bucket_bounds`.

    A down stretch starts at a crash or shutdown that follows an up state and lasts until the broker's next
    start or restart (exclusive), else to the run's last event. One row per broker and bucket at most, `unsure`
    where every stretch in it opens with a crash of unknown time (`UNSURE_DOWN`: the broker went down at some time
    in the stretch).
    """
    life = bronze.where(F.col("event_type") == BROKER_LIFECYCLE).select("run_id", "broker_id", "ts_ms", "event_id",
                                                                        "action", "reason")
    order = Window.partitionBy("run_id", "broker_id").orderBy("ts_ms", "event_id")
    after = order.rowsBetween(1, Window.unboundedFollowing)
    is_down = F.col("action").isin(*DOWN_ACTIONS)
    stretches = life.select(
        "run_id", "broker_id", "ts_ms", is_down.alias("down"),
        F.coalesce(F.lag("action").over(order).isin(*DOWN_ACTIONS), F.lit(False)).alias("was_down"),
        F.min(F.when(F.col("action").isin(*UP_ACTIONS), F.col("ts_ms"))).over(after).alias("up_ms"),
        ((F.col("action") == "crash") & F.coalesce(F.col("reason") == UNSURE_DOWN, F.lit(False))).alias("unsure"),
    ).where(F.col("down") & ~F.col("was_down"))
    placed = stretches.join(F.broadcast(buckets), "run_id")
    first = _bucket(F.col("ts_ms"))
    last = F.floor((F.coalesce(F.col("up_ms") - 1, F.col("end_ms")) - F.col("start_ms")) / F.col("bucket_ms"))
    spanned = placed.where(F.coalesce(F.col("up_ms"), F.col("end_ms") + 1) > F.col("ts_ms")).select(
        "run_id", "broker_id", F.explode(F.sequence(first, F.greatest(first, last.cast("long")))).alias("bucket"),
        "unsure")
    return spanned.groupBy("run_id", "broker_id", "bucket").agg(F.bool_and("unsure").alias("unsure"))


def fault_spans(bronze: DataFrame, buckets: DataFrame, limit: int, per: Sequence[str] = ("run_id",)) -> DataFrame:
    """Per run (or per group of `per`, e.g. run and broker), its first `limit` broker faults (by start, then event
    id) as spans, with the group's `total`; columns `FAULT_SPAN_SCHEMA`, `buckets` is `bucket_bounds` (for the run's
    end). When each ended is `jobs.transforms.faults.fault_ends`, as the audit reads it; one nothing ended is open
    to the run's last event."""
    spans = fault_ends(bronze)
    group = Window.partitionBy(*per)
    ranked = spans.select(
        "*", F.row_number().over(group.orderBy("start_ms", "event_id")).alias("_n"),
        F.count(F.lit(1)).over(group).alias("total"))
    # The cap is applied in Spark: what reaches the driver is `limit` rows per group however many faults it had.
    placed = ranked.where(F.col("_n") <= limit).join(F.broadcast(buckets.select("run_id", F.col("end_ms").alias(
        "_run_end"))), "run_id")
    out = placed.select(
        "run_id", "broker_id", "kind", "start_ms",
        F.coalesce("end_ms", F.greatest("_run_end", "start_ms")).alias("end_ms"),
        F.col("end_ms").isNull().alias("open"), "peers", "direction", "event_id", "total")
    return out.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in FAULT_SPAN_SCHEMA.fields])


def fault_marks(rows: Sequence[dict[str, Any]], start_ms: int) -> tuple[tuple[FaultSpan, ...], int]:
    """One run's `fault_spans` rows as the overview's spans (seconds since `start_ms`, by start) and the run's
    total of faults (more than the spans when the cap cut them)."""
    ordered = sorted(rows, key=lambda r: (r["start_ms"], r["event_id"]))
    marks = tuple(FaultSpan((r["start_ms"] - start_ms) / 1000.0, (r["end_ms"] - start_ms) / 1000.0,
                            int(r["broker_id"]), str(r["kind"]), bool(r["open"]),
                            tuple(int(p) for p in r["peers"] or ()), r["direction"]) for r in ordered)
    return marks, max((int(r["total"]) for r in rows), default=0)


def filled_counts(rows: list[dict[str, Any]], buckets: int) -> pd.DataFrame:
    """One run's `partition_counts` rows as one row per bucket 0 .. buckets - 1 with the most of each series:
    a bucket without a change keeps the count the previous one ended with, and one with changes starts with it
    unless its first change is at its first millisecond."""
    by_bucket = {int(r["bucket"]): r for r in rows}
    carried = dict.fromkeys(SERIES, 0)
    out = []
    for b in range(buckets):
        r = by_bucket.get(b)
        start = dict.fromkeys(SERIES, 0) if r and r.get("starts_at_edge") else carried
        most = {n: max(start[n], int(r[f"{n}_max"])) if r else carried[n] for n in SERIES}
        if r:
            carried = {n: int(r[f"{n}_last"]) for n in SERIES}
        out.append({"bucket": b, **most})
    return pd.DataFrame(out, columns=["bucket", *SERIES])
