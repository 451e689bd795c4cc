"""Follower lag as the leader sees it, lag incidents and their verdicts, and the operator summary.

Definitions (what operators read):

`silver/follower_lag` — per (run, topic, partition, follower, leader, leader epoch), intervals between
the leader's updates of its view of the follower (`follower_fetch_state`, Kafka's
`Replica.updateFetchStateOrThrow`). In an interval `[valid_from_ms, valid_to_ms)` the leader holds
`last_caught_up_time_ms` (lcu) and the follower LEO (its last fetch offset) constant, so:
  * time lag at instant t = t - lcu: it grows with the clock and is largest at the interval's end
    (`time_lag_end_ms`); at the start it is `time_lag_ms`;
  * message lag = leader LEO - follower LEO: `message_lag` at the fetch (leader LEO captured before
    the read), `message_lag_end` just before the next fetch (that fetch's leader LEO) — for the
    last interval of an epoch, the leader's last LEO in the epoch.
  Besides the fetch states, an interval opens at the leader's `become_leader` for every ISR follower:
  Kafka resets lcu to that instant (`resetReplicaState`), so a follower that never fetches from the
  new leader still has a lag that grows. An interval ends at the next fetch state (`closed_by`
  fetch), else at the first election / become_leader of a newer epoch (leader_change), else — if
  the leader crashed or shut down first — at that instant (leader_down); else it is open and the
  run's last event is the end of observation. `lag_max_ms` is replica.lag.time.max.ms of the
  leader's last `broker_config`, else the run's largest, else the job option, else 30000.

`gold/lag_incidents` — a follower is lagging in an interval when its time lag exceeds lag_max_ms
there (lcu + lag_max_ms < end) and the leader LEO is ahead of it (Kafka's `isCaughtUp` exempts a
follower at the leader's LEO; unknown message lag counts as ahead). Consecutive lagging intervals
with no gap form one incident: `start_ms` = lcu + lag_max_ms of the first (or its start, if already
over), `end_ms` = end of the last (null if open), peak time lag = largest time lag, peak message lag =
largest message lag. `deadline_ms` = start_ms + lag_max_ms / 2: `isr-expiration` runs every
lag_max_ms / 2, so the leader must have proposed the shrink by then (1.5 x lag_max_ms after lcu).
The shrink is the first `shrink` proposal by the incident's leader removing the follower with
start_ms < proposal <= end_ms. Verdicts:
  * on_time — shrink proposed by the deadline; late — after it;
  * not_in_isr — no shrink, and the follower was not in the committed ISR at start_ms (nothing to do);
  * recovered — no shrink, and the follower caught up (a fetch ended it) by the deadline;
  * leader_lost — no shrink, and the leader's epoch or the leader itself ended by the deadline;
  * missing — no shrink although the incident outlasted the deadline;
  * premature — a row of its own for a shrink that removed a follower outside every incident of it
    (start_ms = end_ms = the proposal; peak time lag from the lcu the shrink event reported).

`gold/lag_summary` — per partition (scope partition) and per broker (scope broker), over the run's
span `observed_ms` (first to last event): URP / under-min-ISR / offline minutes from
`silver/partition_state` (open intervals end at the run's last event), committed ISR shrinks and
expands (and per hour) from `silver/isr_changes`, the largest time and message lag, and incident
counts. Broker rows attribute partition state and ISR changes to the broker as leader (where Kafka
reports UnderReplicatedPartitions and IsrShrinksPerSec) and lag and incidents to it as follower
(where Kafka reports the fetcher's MaxLag).
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.transforms.timelines import PARTITION_KEY, broker_settings, conform, with_setting
from schemas.analytics import FOLLOWER_LAG_SCHEMA, LAG_INCIDENTS_SCHEMA, LAG_SUMMARY_SCHEMA
from schemas.events import (
    APPEND,
    BROKER_LIFECYCLE,
    FOLLOWER_FETCH_STATE,
    LEADER_ELECTION,
    LEADERSHIP_CHANGE,
)
from schemas.spark import to_spark_schema

KAFKA_DEFAULT_LAG_MAX_MS = 30000
"""replica.lag.time.max.ms default since Kafka 2.5 (KIP-537)."""

_LAG_KEY = [*PARTITION_KEY, "follower_id", "leader_id", "leader_epoch"]
_MS_PER_MINUTE = 60_000.0
_MS_PER_HOUR = 3_600_000.0


def run_bounds(events: DataFrame) -> DataFrame:
    """Per run: `start_ms` and `end_ms`, the first and last event ts (the span that was observed)."""
    return events.groupBy("run_id").agg(F.min("ts_ms").alias("start_ms"), F.max("ts_ms").alias("end_ms"))


# --- silver/follower_lag -----------------------------------------------------------------------------


def follower_lag(events: DataFrame, lag_max_ms_default: int | None = None) -> DataFrame:
    """Bronze events -> `silver/follower_lag` (see the module docstring for the definition)."""
    et = F.col("event_type")
    scoped = F.col("topic").isNotNull() & F.col("partition").isNotNull()
    became_leader = (et == LEADERSHIP_CHANGE) & (F.col("action") == "become_leader")
    samples = events.where((et == FOLLOWER_FETCH_STATE) & scoped & F.col("follower_id").isNotNull()
                           & F.col("broker_id").isNotNull()).select(
        *PARTITION_KEY, "follower_id", F.col("broker_id").alias("leader_id"), "leader_epoch", "ts_ms", "event_id",
        "last_caught_up_time_ms", F.col("fetch_offset").alias("follower_leo"), F.col("leo").alias("leader_leo"),
    )
    # resetReplicaState: a new leader (epoch) sets lcu := now for every follower in the ISR.
    resets = events.where(became_leader & scoped & F.col("broker_id").isNotNull()).select(
        *PARTITION_KEY, F.explode("isr").alias("follower_id"), F.col("broker_id").alias("leader_id"),
        "leader_epoch", "ts_ms", "event_id", F.col("ts_ms").alias("last_caught_up_time_ms"),
        F.lit(None).cast("long").alias("follower_leo"), F.col("leo").alias("leader_leo"),
    ).where(F.col("follower_id") != F.col("leader_id"))
    w = Window.partitionBy(*_LAG_KEY).orderBy("ts_ms", "event_id")
    points = samples.unionByName(resets).withColumn("_next_ts", F.lead("ts_ms").over(w))
    # One interval per ms (the state after the last update at that ms); same window, no new sort.
    last = points.where(F.col("_next_ts").isNull() | (F.col("_next_ts") != F.col("ts_ms")))
    iv = last.select(
        "*", F.lead("ts_ms").over(w).alias("_to"), F.lead("leader_leo").over(w).alias("_next_leader_leo"),
    )

    # Only the last interval of each (follower, epoch) can end otherwise than by a fetch: they are
    # one row per follower and epoch, so the joins below stay small.
    epoch_starts = events.where(((et == LEADER_ELECTION) | became_leader) & scoped).groupBy(
        *PARTITION_KEY, F.col("leader_epoch").alias("_e2")).agg(F.min("ts_ms").alias("_s2"))
    downs = events.where((et == BROKER_LIFECYCLE) & F.col("action").isin("crash", "shutdown")).select(
        F.col("run_id").alias("_dr"), F.col("broker_id").alias("_db"), F.col("ts_ms").alias("_down"))
    leader_last_leo = events.where((et == APPEND) & (F.col("role") == "leader") & scoped).groupBy(
        *PARTITION_KEY, F.col("broker_id").alias("leader_id"), "leader_epoch").agg(F.max("leo").alias("_last_leo"))
    tails = iv.where(F.col("_to").isNull()).select(*_LAG_KEY, "ts_ms")
    epoch_end = tails.join(epoch_starts, [*PARTITION_KEY], "inner").where(
        F.col("_e2") > F.col("leader_epoch")).groupBy(*_LAG_KEY).agg(F.min("_s2").alias("_epoch_end"))
    down = tails.join(downs, (F.col("run_id") == F.col("_dr")) & (F.col("leader_id") == F.col("_db"))
                      & (F.col("_down") >= F.col("ts_ms"))).groupBy(*_LAG_KEY).agg(F.min("_down").alias("_down"))
    tail_info = (
        tails.select(*_LAG_KEY).join(epoch_end, _LAG_KEY, "left").join(down, _LAG_KEY, "left")
        .join(leader_last_leo, ["run_id", "topic", "partition", "leader_id", "leader_epoch"], "left")
        # Renamed: joined back to the frame it was derived from, so names must not collide.
        .select(*[F.col(c).alias(f"_t_{c}") for c in _LAG_KEY], "_epoch_end", "_down", "_last_leo")
    )
    null_safe = reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(f"_t_{c}")) for c in _LAG_KEY])
    iv = iv.join(F.broadcast(tail_info), null_safe & F.col("_to").isNull(), "left").drop(
        *[f"_t_{c}" for c in _LAG_KEY])

    cap = F.least("_epoch_end", "_down")
    valid_to = F.coalesce("_to", cap)
    closed_by = (
        F.when(F.col("_to").isNotNull(), "fetch")
        .when(F.col("_down").isNotNull() & (F.col("_epoch_end").isNull() | (F.col("_down") < F.col("_epoch_end"))),
              "leader_down")
        .when(F.col("_epoch_end").isNotNull(), "leader_change")
    )
    leader_leo_end = F.when(F.col("_to").isNotNull(), F.col("_next_leader_leo")).otherwise(
        F.greatest("leader_leo", "_last_leo"))
    bounds = run_bounds(events).select(F.col("run_id").alias("_rb"), F.col("end_ms").alias("_run_end"))
    out = iv.join(F.broadcast(bounds), F.col("run_id") == F.col("_rb"), "left").select(
        *_LAG_KEY,
        F.col("ts_ms").alias("valid_from_ms"),
        valid_to.alias("valid_to_ms"),
        "last_caught_up_time_ms",
        "follower_leo",
        "leader_leo",
        (F.col("leader_leo") - F.col("follower_leo")).alias("message_lag"),
        (leader_leo_end - F.col("follower_leo")).alias("message_lag_end"),
        (F.col("ts_ms") - F.col("last_caught_up_time_ms")).alias("time_lag_ms"),
        (F.coalesce(valid_to, "_run_end") - F.col("last_caught_up_time_ms")).alias("time_lag_end_ms"),
        closed_by.alias("closed_by"),
        "event_id",
    )
    default = F.lit(lag_max_ms_default if lag_max_ms_default is not None else KAFKA_DEFAULT_LAG_MAX_MS)
    out = with_setting(out, broker_settings(events), "leader_id", "lag_max_ms", default.cast("long"))
    return conform(out, to_spark_schema(FOLLOWER_LAG_SCHEMA))


# --- gold/lag_incidents ------------------------------------------------------------------------------


def _peak_message_lag() -> Column:
    return F.greatest("message_lag", "message_lag_end")


def shrinks(isr_changes: DataFrame) -> DataFrame:
    """One row per (shrink proposal, removed replica): when, by which leader, its outcome, and the
    lcu the leader reported for the replica."""
    sh = isr_changes.where((F.col("action") == "shrink") & F.col("proposed_ms").isNotNull())
    sh = sh.select("*", F.explode("removed_replicas").alias("replica"))
    reported = F.filter("out_of_sync_replicas", lambda r: r["replica_id"] == F.col("replica"))
    return sh.select(
        *PARTITION_KEY,
        F.col("replica").alias("_replica"),
        F.col("leader_id").alias("_shrink_leader"),
        F.col("leader_epoch").alias("_shrink_epoch"),
        F.col("proposed_ms").alias("shrink_ms"),
        F.when(F.col("outcome") == "committed", F.col("resolved_ms")).alias("shrink_committed_ms"),
        F.col("outcome").alias("shrink_outcome"),
        F.element_at(reported, 1).getField("last_caught_up_time_ms").alias("_reported_lcu"),
    )


def lag_incidents(
    follower_lag: DataFrame,
    isr_changes: DataFrame,
    partition_state: DataFrame,
    lag_max_ms_default: int | None = None,
) -> DataFrame:
    """`silver/follower_lag` + `silver/isr_changes` + `silver/partition_state` -> `gold/lag_incidents`."""
    lcu, lag_max = F.col("last_caught_up_time_ms"), F.col("lag_max_ms")
    threshold = lcu + lag_max
    obs_end = lcu + F.col("time_lag_end_ms")
    lagging = (threshold < obs_end) & F.coalesce(_peak_message_lag() > 0, F.lit(True))
    w = Window.partitionBy(*_LAG_KEY).orderBy("valid_from_ms")
    x = follower_lag.select(
        "*",
        lagging.alias("_lagging"),
        F.greatest("valid_from_ms", threshold).alias("_lag_start"),
        obs_end.alias("_obs_end"),
    )
    continuing = F.coalesce(F.lag("_lagging").over(w), F.lit(False)) & (threshold <= F.col("valid_from_ms"))
    x = x.withColumn("_new", F.col("_lagging") & ~continuing)
    x = x.withColumn("_incident", F.sum(F.col("_new").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0)))
    inc = x.where("_lagging").groupBy(*_LAG_KEY, "_incident").agg(
        F.min("_lag_start").alias("start_ms"),
        F.max_by("valid_to_ms", "valid_from_ms").alias("end_ms"),
        F.max_by("closed_by", "valid_from_ms").alias("_closed_by"),
        F.max("_obs_end").alias("_obs_end"),
        F.min_by("last_caught_up_time_ms", "valid_from_ms").alias("last_caught_up_time_ms"),
        F.max("lag_max_ms").alias("lag_max_ms"),
        F.max("time_lag_end_ms").alias("peak_time_lag_ms"),
        F.max(_peak_message_lag()).alias("peak_message_lag"),
    ).withColumn("deadline_ms", F.col("start_ms") + F.floor(F.col("lag_max_ms") / 2).cast("long"))

    sh = shrinks(isr_changes)
    in_incident = (
        (F.col("_shrink_leader") == F.col("leader_id")) & (F.col("_replica") == F.col("follower_id"))
        & (F.col("shrink_ms") > F.col("start_ms"))
        & (F.col("end_ms").isNull() | (F.col("shrink_ms") <= F.col("end_ms")))
    )
    # An incident is named by (partition, follower, leader, start): incidents of one follower under
    # one leader never overlap. (leader_epoch may be null in real logs, so it is not a join key.)
    ikey = [*PARTITION_KEY, "follower_id", "leader_id", "start_ms"]
    first_shrink = inc.select(*ikey, "end_ms").join(sh, [*PARTITION_KEY]).where(in_incident).groupBy(*ikey).agg(
        F.min_by(F.struct("shrink_ms", "shrink_committed_ms", "shrink_outcome"), "shrink_ms").alias("_s"))
    ps = partition_state.select(
        *[F.col(c).alias(f"_ps_{c}") for c in PARTITION_KEY], "valid_from_ms", "valid_to_ms", "isr")
    at_start = inc.select(*ikey).join(
        ps,
        reduce(lambda a, b: a & b, [F.col(c) == F.col(f"_ps_{c}") for c in PARTITION_KEY])
        & (F.col("valid_from_ms") <= F.col("start_ms"))
        & (F.col("valid_to_ms").isNull() | (F.col("start_ms") < F.col("valid_to_ms"))),
    ).select(*ikey, F.array_contains("isr", F.col("follower_id")).alias("in_isr_at_start"))
    judged = inc.join(first_shrink, ikey, "left").join(at_start, ikey, "left")
    judged = judged.select("*", "_s.*").drop("_s")
    end = F.coalesce("end_ms", "_obs_end")
    verdict = (
        F.when(F.col("shrink_ms").isNotNull(),
               F.when(F.col("shrink_ms") <= F.col("deadline_ms"), "on_time").otherwise("late"))
        .when(~F.coalesce("in_isr_at_start", F.lit(True)), "not_in_isr")
        .when(end <= F.col("deadline_ms"),
              F.when(F.col("_closed_by") == "fetch", "recovered").otherwise("leader_lost"))
        .otherwise("missing")
    )
    incidents = judged.withColumn("verdict", verdict)

    thresholds = follower_lag.groupBy("run_id", F.col("leader_id").alias("_shrink_leader")).agg(
        F.max("lag_max_ms").alias("lag_max_ms"))
    covered = incidents.select(*PARTITION_KEY, "follower_id", "leader_id", "start_ms", "end_ms")
    premature = (
        sh.join(covered, [*PARTITION_KEY], "left")
        .withColumn("_in", F.coalesce(in_incident, F.lit(False)))
        .groupBy(*PARTITION_KEY, "_replica", "_shrink_leader", "_shrink_epoch", "shrink_ms", "shrink_committed_ms",
                 "shrink_outcome", "_reported_lcu")
        .agg(F.max("_in").alias("_covered"))
        .where(~F.col("_covered"))
        .join(thresholds, ["run_id", "_shrink_leader"], "left")
        .select(
            *PARTITION_KEY,
            F.col("_replica").alias("follower_id"),
            F.col("_shrink_leader").alias("leader_id"),
            F.col("_shrink_epoch").alias("leader_epoch"),
            F.col("shrink_ms").alias("start_ms"),
            F.col("shrink_ms").alias("end_ms"),
            F.col("_reported_lcu").alias("last_caught_up_time_ms"),
            F.coalesce("lag_max_ms", F.lit(lag_max_ms_default or KAFKA_DEFAULT_LAG_MAX_MS).cast("long"))
            .alias("lag_max_ms"),
            F.lit(None).cast("long").alias("deadline_ms"),
            (F.col("shrink_ms") - F.col("_reported_lcu")).alias("peak_time_lag_ms"),
            F.lit(None).cast("long").alias("peak_message_lag"),
            F.lit(True).alias("in_isr_at_start"),
            "shrink_ms",
            "shrink_committed_ms",
            "shrink_outcome",
            F.lit("premature").alias("verdict"),
        )
    )
    schema = to_spark_schema(LAG_INCIDENTS_SCHEMA)
    return conform(incidents, schema).unionByName(conform(premature, schema))


# --- gold/lag_summary --------------------------------------------------------------------------------


def _minutes(flag: str, duration: Column) -> Column:
    return F.coalesce(F.sum(F.when(F.col(flag), duration)), F.lit(0)) / _MS_PER_MINUTE


def _summary(keys: list[str], ps_key: str | None, ic_key: str | None, lag_key: str | None,
             partition_state: DataFrame, isr_changes: DataFrame, follower_lag: DataFrame, incidents: DataFrame,
             bounds: DataFrame) -> DataFrame:
    """One scope of the summary: aggregates keyed by `keys`, each input's key column renamed to them."""
    def keyed(df: DataFrame, col: str | None) -> DataFrame:
        return df if col is None else df.withColumnRenamed(col, keys[-1])

    ps = keyed(partition_state, ps_key).join(bounds, "run_id")
    duration = F.coalesce("valid_to_ms", "end_ms") - F.col("valid_from_ms")
    a_ps = ps.groupBy(*keys).agg(
        _minutes("under_replicated", duration).alias("urp_minutes"),
        _minutes("under_min_isr", duration).alias("under_min_isr_minutes"),
        _minutes("offline", duration).alias("offline_minutes"),
    )
    committed = F.col("outcome") == "committed"
    a_ic = keyed(isr_changes, ic_key).groupBy(*keys).agg(
        F.count(F.when(committed & (F.col("action") == "shrink"), 1)).alias("isr_shrinks"),
        F.count(F.when(committed & (F.col("action") == "expand"), 1)).alias("isr_expands"),
    )
    a_fl = keyed(follower_lag, lag_key).groupBy(*keys).agg(
        F.max("time_lag_end_ms").alias("max_time_lag_ms"),
        F.max(_peak_message_lag()).alias("max_message_lag"),
    )
    v = F.col("verdict")
    a_inc = keyed(incidents, lag_key).groupBy(*keys).agg(
        F.count(F.when(v != "premature", 1)).alias("lag_incidents"),
        F.count(F.when(v == "late", 1)).alias("incidents_late"),
        F.count(F.when(v == "missing", 1)).alias("incidents_missing"),
        F.count(F.when(v == "premature", 1)).alias("premature_shrinks"),
    )
    joined = reduce(lambda a, b: a.join(b, keys, "full_outer"), [a_ps, a_ic, a_fl, a_inc])
    joined = joined.where(F.col(keys[-1]).isNotNull()).join(bounds, "run_id", "left")
    observed = F.col("end_ms") - F.col("start_ms")

    def per_hour(c: str) -> Column:
        return F.when(observed > 0, F.col(c) * _MS_PER_HOUR / observed)

    zero = ["isr_shrinks", "isr_expands", "lag_incidents", "incidents_late", "incidents_missing",
            "premature_shrinks"]
    filled = joined.fillna(0, subset=zero).fillna(0.0, subset=["urp_minutes", "under_min_isr_minutes",
                                                               "offline_minutes"])
    return filled.select(
        "*",
        observed.alias("observed_ms"),
        per_hour("isr_shrinks").alias("isr_shrinks_per_hour"),
        per_hour("isr_expands").alias("isr_expands_per_hour"),
    )


def lag_summary(
    partition_state: DataFrame,
    isr_changes: DataFrame,
    follower_lag: DataFrame,
    incidents: DataFrame,
    bounds: DataFrame,
) -> DataFrame:
    """Silver + gold -> `gold/lag_summary` (see the module docstring); `bounds` is `run_bounds(events)`."""
    ps_leader = partition_state.where(F.col("leader_id").isNotNull())
    by_partition = _summary(list(PARTITION_KEY), None, None, None, partition_state, isr_changes, follower_lag,
                            incidents, bounds).select(
        "*", F.lit("partition").alias("scope"), F.lit(None).cast("int").alias("broker_id"))
    by_broker = _summary(["run_id", "broker_id"], "leader_id", "leader_id", "follower_id",
                         ps_leader.drop("topic", "partition"), isr_changes.drop("topic", "partition"),
                         follower_lag.drop("topic", "partition", "leader_id"),
                         incidents.drop("topic", "partition", "leader_id"), bounds).select(
        "*", F.lit("broker").alias("scope"), F.lit(None).cast("string").alias("topic"),
        F.lit(None).cast("int").alias("partition"))
    schema = to_spark_schema(LAG_SUMMARY_SCHEMA)
    return conform(by_partition, schema).unionByName(conform(by_broker, schema))
