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
  An lcu of 0 in a fetch state is Kafka's "never caught up under this leader" (`resetReplicaState` for a
  follower outside the ISR): it is kept as null, so its time lag is unknown (not counted, no incident).
  Besides the fetch states, an interval opens at the leader's `become_leader` for every ISR follower:
  Kafka resets lcu to that instant (`resetReplicaState`), so a follower that never fetches from the
  new leader still has a lag that grows (in runs with fetch states only: a run read from broker logs has
  none, so no interval at all). An interval ends at the first of: the next fetch state
  (`closed_by` fetch), the leader's crash or shutdown (leader_down), and the end of the leader's epoch
  as the leader itself learns it — its own next leadership change to a newer epoch, for a deposed
  leader keeps its view of the followers (and runs `isr-expiration`) until then; the controller's
  election of a newer epoch, or the leader's last act in its epoch after that election if later, stands in
  only when the data hold no such change of the leader (leader_change; a reassignment's StopReplica leaves
  none). Else it is open and the run's last event is the end of observation. `lag_max_ms` is
  replica.lag.time.max.ms in force on the leader when the interval opened: its last `broker_config` at or
  before then (Kafka reads the setting at the broker's start, and every start logs it), else its first one,
  else the largest of the run's brokers' last settings, else the job option, else 30000.

`gold/lag_incidents` — a follower is lagging from the first instant of an interval at which both its
time lag exceeds lag_max_ms (after lcu + lag_max_ms) and the leader LEO is ahead of it (Kafka's
`isCaughtUp` exempts a follower at the leader's LEO, however old its lcu: one that stopped fetching
there falls behind at the leader's next append past it; unknown message lag counts as ahead).
Consecutive lagging intervals with no gap form one incident: `start_ms` = that instant in the first,
`end_ms` = end of the last (null if open), peak time lag = largest time lag, peak message lag =
largest message lag. `deadline_ms` = start_ms + lag_max_ms / 2: `isr-expiration` runs every
lag_max_ms / 2, so the leader must have proposed the shrink by then (1.5 x lag_max_ms after lcu). Later in two
cases, as Kafka's `maybeShrinkIsr` only shrinks the committed ISR and nothing while an ISR change is in flight:
  * a follower outside the committed ISR is owed nothing, and is owed a shrink again from its return to it (a
    follower whose LEO reaches the HW is expanded however old its lcu): with a shrink, from the last return
    before it; without one, each stretch of the follower in the ISR during the incident owes a shrink a period
    after the later of start_ms and its return, and `deadline_ms` is that of the first stretch the follower is
    still in at its deadline with the incident still on (the leader's miss), else of the last stretch (the time
    before the partition's first known ISR, in a log that starts mid-run, counts as a stretch in it);
  * an AlterPartition of the leader in that epoch in flight when the follower became due (or an expansion
    proposed before the deadline so far, as the task may not have run yet) moves the deadline to a period after
    its answer (or the event that superseded it: `silver/isr_changes`' resolved_ms); one still pending at the end of
    the data leaves no deadline (null: nothing was due yet). A shrink
    proposal of another follower made after that is itself a run of the task and moves nothing.
The shrink is the first `shrink` proposal by the incident's leader removing the follower with
proposal <= end_ms, strictly after the threshold (lcu + lag max: Kafka's test is `now - lcu > lag max`) and
no earlier than the interval or the leader append that put the follower behind (the same millisecond counts:
a leader back from a pause appends, then runs isr-expiration). Verdicts:
  * on_time — shrink proposed by the deadline; late — after it (by the clock: a GC pause or disk stall of the
    leader, which holds back its `isr-expiration` task as in Kafka, makes a shrink late too; the report draws
    the pause on the leader's lane);
  * not_in_isr — no shrink, and the follower was not in the committed ISR during the incident, or left it by
    another route (a controller's update) before each deadline it owed and was not back in it at the end
    (nothing left to shrink);
  * recovered — no shrink, and the follower caught up (a fetch ended it) by the deadline;
  * leader_lost — no shrink, and the leader's epoch or the leader itself ended by the deadline;
  * ongoing — no shrink, and the data ends before the deadline: too early to judge;
  * missing — no shrink although the incident outlasted the deadline;
  * premature — a row of its own for a shrink that removed a follower outside every incident of it
    (start_ms = end_ms = the proposal; peak time lag from the lcu the shrink event reported). A shrink that
    reports lcu 0 for the follower (never caught up under this leader: its lag is unknown, so it has no
    incident) is Kafka's rule at work, not premature, and has no row. Judged so in runs that carry
    follower_fetch_state events; runs without them (real broker logs) by the shrink alone, where it reports the
    follower's lcu (Kafka 3.6+): premature when shrink - lcu <= lag_max_ms, no row otherwise (on time or late
    needs the leader's appends, which logs do not show).

`gold/lag_summary` — per partition (scope partition) and per broker (scope broker), over the run's
span `observed_ms` (first to last event): URP / under-min-ISR / offline minutes from
`silver/partition_state` (open intervals end at the run's last event), committed ISR shrinks and
expands (and per hour) from `silver/isr_changes`, the largest time and message lag, and incident
counts. Broker rows attribute partition state and ISR changes to the broker as leader (where Kafka
reports UnderReplicatedPartitions and IsrShrinksPerSec) and lag and incidents to it as follower
(where Kafka reports the fetcher's MaxLag). Three differences from those metrics: a crashed leader keeps
its partitions' minutes until the controller moves them (its gauges are gone meanwhile); a commit the leader
learnt from the metadata before the AlterPartition answer counts here, not in Kafka's meters (which mark only
on the answer); and the message lag is leader LEO - follower LEO, where MaxLag is the response's HW - the
follower's next offset.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.session import lookup
from jobs.transforms.timelines import (
    LAG_MAX_KEY,
    PARTITION_KEY,
    conform,
    setting_entry,
    setting_in_force,
    with_setting,
)
from replication_core.config import LONG_MAX
from schemas.analytics import FOLLOWER_LAG_SCHEMA, LAG_INCIDENTS_SCHEMA, LAG_SUMMARY_SCHEMA
from schemas.events import (
    APPEND,
    BROKER_CONFIG,
    BROKER_LIFECYCLE,
    FOLLOWER_FETCH_STATE,
    ISR_CHANGE,
    LEADER_ELECTION,
    LEADERSHIP_CHANGE,
)
from schemas.spark import to_spark_schema

LONG_MIN = -(2**63)
"""The smallest long: the start of an interval open to the past."""

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
    # lcu 0 is Kafka's "never caught up under this leader" (resetReplicaState's value for a follower outside
    # the ISR), not an instant: its time lag is unknown, not now - 0 (~1.7e12 ms on a real clock).
    lcu = F.col("last_caught_up_time_ms")
    samples = events.where((et == FOLLOWER_FETCH_STATE) & scoped & F.col("follower_id").isNotNull()
                           & F.col("broker_id").isNotNull()).select(
        *PARTITION_KEY, "follower_id", F.col("broker_id").alias("leader_id"), "leader_epoch", "ts_ms", "event_id",
        F.when(lcu != 0, lcu).alias("last_caught_up_time_ms"), F.col("fetch_offset").alias("follower_leo"),
        F.col("leo").alias("leader_leo"),
    )
    # resetReplicaState: a new leader (epoch) sets lcu := now for every follower in the ISR. Only in runs that
    # record the leader's view of its followers: without fetch states (real broker logs) nothing would ever
    # move lcu on, and every follower would seem to lag from its leader's start.
    observed = samples.select("run_id").distinct()
    resets = events.where(became_leader & scoped & F.col("broker_id").isNotNull()).join(
        F.broadcast(observed), "run_id", "left_semi").select(
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

    # Context as small tables, broadcast to the intervals (the per-epoch ones as `lookup`s, which a cluster leaves
    # to Spark's choice): per (run, broker) its lag settings and its
    # crash / shutdown instants, per run its end and largest setting, per leader epoch when the leader (or
    # else the controller) moved past it and its last LEO. Keyed by the leader, the array the higher-order
    # function below scans per row holds one broker's few crashes: Spark interprets those functions (no code
    # generation), and scanning the run's whole config and crash lists on every interval doubled the cost of
    # this frame; the epoch ends are joined as columns for the same reason.
    lag_cfg = F.col("config").getItem(LAG_MAX_KEY).try_cast("long")
    is_cfg = (et == BROKER_CONFIG) & lag_cfg.isNotNull()
    brokers = events.groupBy(F.col("run_id").alias("_b_run"), F.col("broker_id").alias("_b_broker")).agg(
        F.max("ts_ms").alias("_b_end"),
        F.array_sort(F.collect_list(F.when(is_cfg, setting_entry(lag_cfg)))).alias("_b_cfgs"),
        F.collect_list(F.when((et == BROKER_LIFECYCLE) & F.col("action").isin("crash", "shutdown"),
                              F.col("ts_ms"))).alias("_downs"),
    ).withColumn("_b_cfg", F.try_element_at("_b_cfgs", F.lit(-1))["v"])
    # The run's end and largest setting on every broker row (a window over a few rows per run, where a
    # second aggregate of `brokers` would scan the events again): every interval's leader emitted events,
    # so the join on (run, leader) below always finds its broker's row.
    in_run = Window.partitionBy("_b_run")
    brokers = brokers.select("*", F.max("_b_end").over(in_run).alias("_run_end"),
                             F.max("_b_cfg").over(in_run).alias("_run_cfg")).drop("_b_end")
    epoch_ends = _epoch_ends(events)
    election_ends = _election_ends(events)
    deposed_acts = _deposed_acts(events, election_ends)
    # The leader's last LEO per epoch and process: a leader that restarts into the same epoch (no fencing on
    # re-registration) appends again after its crash, which must not count as ahead of a follower before it.
    downs = brokers.select(F.col("_b_run").alias("_x_run"), F.col("_b_broker").alias("_x_broker"), "_downs")
    leader_last_leo = events.where((et == APPEND) & (F.col("role") == "leader") & scoped).join(
        F.broadcast(downs), (F.col("run_id") == F.col("_x_run")) & (F.col("broker_id") == F.col("_x_broker")), "left",
    ).groupBy(
        *[F.col(c).alias(f"_l_{c}") for c in PARTITION_KEY], F.col("broker_id").alias("_l_leader"),
        F.col("leader_epoch").alias("_l_epoch"),
        F.array_min(F.filter("_downs", lambda d: d >= F.col("ts_ms"))).alias("_l_down"),
    ).agg(F.max("leo").alias("_last_leo"))
    iv = (
        iv.join(F.broadcast(brokers), (F.col("run_id") == F.col("_b_run")) & (F.col("leader_id") == F.col("_b_broker")),
                "left")
        .join(lookup(epoch_ends), _same_partition("_o_") & (F.col("leader_id") == F.col("_o_leader"))
              & (F.col("leader_epoch") == F.col("_o_epoch")), "left")
        .join(lookup(election_ends), _same_partition("_n_") & (F.col("leader_epoch") == F.col("_n_epoch")),
              "left")
        .join(lookup(deposed_acts), _same_partition("_d_") & (F.col("leader_id") == F.col("_d_leader"))
              & (F.col("leader_epoch") == F.col("_d_epoch")), "left")
    )
    # The leader's own learning of a newer epoch, else (no such change in the data) the controller's election or
    # the leader's last act in its epoch after it, whichever is later; either only at or after the interval's start.
    learned = F.greatest("_election_end", "_deposed_last")
    epoch_end = F.coalesce(F.when(F.col("_own_end") >= F.col("ts_ms"), F.col("_own_end")),
                           F.when(learned >= F.col("ts_ms"), learned))
    down = F.array_min(F.filter("_downs", lambda d: d >= F.col("ts_ms")))
    # replica.lag.time.max.ms is read once, at the broker's start (a static config; every start logs its
    # config): the setting in force is the leader's last config at or before the interval opened.
    leaders_cfg = setting_in_force("_b_cfgs", "ts_ms")
    runs_cfg = F.col("_run_cfg")
    default = F.lit(lag_max_ms_default if lag_max_ms_default is not None else KAFKA_DEFAULT_LAG_MAX_MS).cast("long")
    iv = iv.select("*", epoch_end.alias("_epoch_end"), down.alias("_down")).join(
        lookup(leader_last_leo), _same_partition("_l_") & (F.col("leader_id") == F.col("_l_leader"))
        & (F.col("leader_epoch") == F.col("_l_epoch")) & F.col("_down").eqNullSafe(F.col("_l_down")), "left")

    # A crash ends the interval even when the leader resumes the same epoch after its restart (the next fetch
    # state then opens a new one); on a tie the fetch, then the epoch's end, is the cause.
    valid_to = F.least("_to", "_down", "_epoch_end")
    by_fetch = F.col("_to") == valid_to
    closed_by = (
        F.when(by_fetch, "fetch")
        .when((F.col("_down") == valid_to) & F.coalesce(F.col("_down") < F.col("_epoch_end"), F.lit(True)),
              "leader_down")
        .when(F.col("_epoch_end") == valid_to, "leader_change")
    )
    leader_leo_end = F.when(by_fetch, F.col("_next_leader_leo")).otherwise(F.greatest("leader_leo", "_last_leo"))
    out = iv.select(
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
        F.coalesce(leaders_cfg, runs_cfg, default).alias("lag_max_ms"),
        "event_id",
    )
    return conform(out, to_spark_schema(FOLLOWER_LAG_SCHEMA))


def _epoch_ends(events: DataFrame) -> DataFrame:
    """Per (partition, broker, leader epoch) in the broker's leadership changes: `_own_end`, when the broker
    itself next changed to a newer epoch (null if never). Small: one row per broker and epoch."""
    changes = events.where((F.col("event_type") == LEADERSHIP_CHANGE) & F.col("topic").isNotNull()
                           & F.col("partition").isNotNull() & F.col("broker_id").isNotNull())
    first = changes.groupBy(*[F.col(c).alias(f"_o_{c}") for c in PARTITION_KEY], F.col("broker_id").alias("_o_leader"),
                            F.col("leader_epoch").alias("_o_epoch")).agg(F.min("ts_ms").alias("_o_start"))
    later = Window.partitionBy(*[f"_o_{c}" for c in PARTITION_KEY], "_o_leader").orderBy("_o_epoch")
    return first.select("*", F.lead("_o_start").over(later).alias("_own_end")).drop("_o_start")


def _election_ends(events: DataFrame) -> DataFrame:
    """Per (partition, leader epoch) named by an election or a leadership change: `_election_end`, the first
    election of a newer epoch (null if none). Small: one row per partition and epoch."""
    scoped = F.col("topic").isNotNull() & F.col("partition").isNotNull()
    et = F.col("event_type")
    named = events.where(((et == LEADER_ELECTION) | (et == LEADERSHIP_CHANGE)) & scoped).groupBy(
        *[F.col(c).alias(f"_n_{c}") for c in PARTITION_KEY], F.col("leader_epoch").alias("_n_epoch")
    ).agg(F.min(F.when(et == LEADER_ELECTION, F.col("ts_ms"))).alias("_n_elected"))
    newer = Window.partitionBy(*[f"_n_{c}" for c in PARTITION_KEY]).orderBy("_n_epoch").rowsBetween(
        1, Window.unboundedFollowing)
    return named.select("*", F.min("_n_elected").over(newer).alias("_election_end")).drop("_n_elected")


def _deposed_acts(events: DataFrame, election_ends: DataFrame) -> DataFrame:
    """Per (partition, leader, leader epoch): `_deposed_last`, the leader's last act as that epoch's leader (an
    isr_change, a follower_fetch_state, or an event with role leader) at or after the controller's election of a
    newer epoch. A deposed leader keeps its view and runs isr-expiration until it learns; when the data hold no
    leadership change of its own (a reassignment's StopReplica leaves none), its last act is the latest instant
    it is known to have still led. Small: the events after an election, one row per leader and epoch."""
    et = F.col("event_type")
    acts = events.where(((F.col("role") == "leader") | et.isin(ISR_CHANGE, FOLLOWER_FETCH_STATE))
                        & F.col("topic").isNotNull() & F.col("partition").isNotNull() & F.col("broker_id").isNotNull())
    after = acts.join(lookup(election_ends.where(F.col("_election_end").isNotNull())),
                      _same_partition("_n_") & (F.col("leader_epoch") == F.col("_n_epoch"))
                      & (F.col("ts_ms") >= F.col("_election_end")))
    return after.groupBy(*[F.col(c).alias(f"_d_{c}") for c in PARTITION_KEY], F.col("broker_id").alias("_d_leader"),
                         F.col("leader_epoch").alias("_d_epoch")).agg(F.max("ts_ms").alias("_deposed_last"))


def _same_partition(prefix: str) -> Column:
    """Join condition: the row's (run, topic, partition) equals the `prefix`-renamed one."""
    return reduce(lambda a, b: a & b, [F.col(c) == F.col(f"{prefix}{c}") for c in PARTITION_KEY])


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
        F.col("replica").alias("follower_id"),
        "leader_id",
        "leader_epoch",
        F.col("proposed_ms").alias("shrink_ms"),
        F.when(F.col("outcome") == "committed", F.col("resolved_ms")).alias("shrink_committed_ms"),
        F.col("outcome").alias("shrink_outcome"),
        F.try_element_at(reported, F.lit(1)).getField("last_caught_up_time_ms").alias("reported_lcu"),
    )


def _ahead_from(follower_lag: DataFrame, events: DataFrame) -> DataFrame:
    """`follower_lag` with `_ahead_from`: the first instant of each interval at which the leader's LEO was
    above the follower's, where it matters (the interval outlasts the threshold).

    Kafka's `isCaughtUp` holds for a follower at the leader's LEO however old its lcu, so a follower that
    stopped fetching at the leader's LEO falls out of sync only when the leader next appends. At the fetch
    that opened the interval the leader was ahead if `message_lag` > 0 (or unknown: counted as ahead);
    else it got ahead at its first append in the interval past the follower's LEO. A leader LEO ahead at
    the interval's end with no such append in the data (a source without append events) counts from the
    interval's start, as an unknown lag does.
    """
    over = F.col("lag_max_ms") < F.col("time_lag_end_ms")
    caught_up_at_fetch = F.col("message_lag") <= 0
    key = [*_LAG_KEY, "valid_from_ms"]
    candidates = follower_lag.where(over & caught_up_at_fetch & (_peak_message_lag() > 0)).select(
        *key, "valid_to_ms", "follower_leo")
    appends = events.where((F.col("event_type") == APPEND) & (F.col("role") == "leader")).select(
        *[F.col(c).alias(f"_a_{c}") for c in PARTITION_KEY], F.col("broker_id").alias("_a_leader"),
        F.col("leader_epoch").alias("_a_epoch"), F.col("ts_ms").alias("_a_ts"), F.col("leo").alias("_a_leo"))
    hit = (_same_partition("_a_") & (F.col("leader_id") == F.col("_a_leader"))
           & (F.col("leader_epoch") == F.col("_a_epoch")) & (F.col("_a_ts") >= F.col("valid_from_ms"))
           & (F.col("valid_to_ms").isNull() | (F.col("_a_ts") < F.col("valid_to_ms")))
           & (F.col("_a_leo") > F.col("follower_leo")))
    first_append = candidates.join(appends, hit).groupBy(*key).agg(F.min("_a_ts").alias("_first_append"))
    ahead = (
        F.when(F.coalesce(~caught_up_at_fetch, F.lit(True)), F.col("valid_from_ms"))
        .when(F.col("_first_append").isNotNull(), F.col("_first_append"))
        .when(_peak_message_lag() > 0, F.col("valid_from_ms"))
    )
    # One row per interval over the threshold while caught up at its fetch (a stalled follower), far fewer
    # than the intervals: broadcast (`lookup`), so the join keeps the intervals where they are (no shuffle of them).
    return follower_lag.join(lookup(first_append), key, "left").select(
        *follower_lag.columns, ahead.alias("_ahead_from"))


def lag_incidents(
    follower_lag: DataFrame,
    isr_changes: DataFrame,
    partition_state: DataFrame,
    events: DataFrame,
    lag_max_ms_default: int | None = None,
) -> DataFrame:
    """`silver/follower_lag` + `silver/isr_changes` + `silver/partition_state` (+ the leader appends of bronze
    `events`) -> `gold/lag_incidents`."""
    lcu, lag_max = F.col("last_caught_up_time_ms"), F.col("lag_max_ms")
    # Saturating: a setting near Long.MAX ("never shrink") puts the threshold out of reach, not past overflow.
    threshold = F.when(lcu.isNotNull(), F.coalesce(F.try_add(lcu, lag_max), F.lit(LONG_MAX)))
    obs_end = lcu + F.col("time_lag_end_ms")
    lag_start = F.greatest("valid_from_ms", threshold, "_ahead_from")
    # The first instant a shrink is due: Kafka's out-of-sync test is now - lcu > lag max (strictly past the
    # threshold), while a leader append that puts the follower behind may come in the same millisecond as
    # the shrink (a leader back from a pause runs its produce and then isr-expiration).
    shrink_from = F.greatest("valid_from_ms", F.coalesce(F.try_add(threshold, F.lit(1)), F.lit(LONG_MAX)),
                             "_ahead_from")
    lagging = F.col("_ahead_from").isNotNull() & (lag_start < obs_end)
    w = Window.partitionBy(*_LAG_KEY).orderBy("valid_from_ms")
    annotated = _ahead_from(follower_lag, events)
    x = annotated.select(
        "*",
        lagging.alias("_lagging"),
        lag_start.alias("_lag_start"),
        shrink_from.alias("_shrink_from"),
        obs_end.alias("_obs_end"),
    )
    # An interval continues the previous one's incident only if it is lagging from its very start.
    continuing = F.coalesce(F.lag("_lagging").over(w), F.lit(False)) & (F.col("_lag_start") <= F.col("valid_from_ms"))
    x = x.withColumn("_new", F.col("_lagging") & ~continuing)
    x = x.withColumn("_incident", F.sum(F.col("_new").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0)))
    inc = x.where("_lagging").groupBy(*_LAG_KEY, "_incident").agg(
        F.min("_lag_start").alias("start_ms"),
        F.min("_shrink_from").alias("_shrink_from"),
        F.max_by("valid_to_ms", "valid_from_ms").alias("end_ms"),
        F.max_by("closed_by", "valid_from_ms").alias("_closed_by"),
        F.max("_obs_end").alias("_obs_end"),
        F.min_by("last_caught_up_time_ms", "valid_from_ms").alias("last_caught_up_time_ms"),
        F.max("lag_max_ms").alias("lag_max_ms"),
        F.max("time_lag_end_ms").alias("peak_time_lag_ms"),
        F.max(_peak_message_lag()).alias("peak_message_lag"),
    )

    # Small per-follower / per-partition lists, looked up with higher-order functions.
    fkey = [*PARTITION_KEY, "follower_id", "leader_id"]
    sh = shrinks(isr_changes)
    shrink_lists = sh.groupBy(*[F.col(c).alias(f"_s_{c}") for c in fkey]).agg(
        F.collect_list(F.struct("shrink_ms", "shrink_committed_ms", "shrink_outcome")).alias("_shrinks"))
    isr_lists = partition_state.groupBy(*[F.col(c).alias(f"_i_{c}") for c in PARTITION_KEY]).agg(
        F.collect_list(F.struct("valid_from_ms", "valid_to_ms", "isr")).alias("_isrs"))
    # Every ISR change the leader proposed in its epoch, in order: while one is in flight, isr-expiration shrinks
    # nothing (`maybeShrinkIsr` tests `partitionState.isInflight`).
    pkey = [*PARTITION_KEY, "leader_id", "leader_epoch"]
    proposal_lists = isr_changes.where(F.col("proposed_ms").isNotNull() & F.col("action").isin("shrink", "expand")
                                       ).groupBy(
        *[F.col(c).alias(f"_p_{c}") for c in pkey]).agg(
        F.array_sort(F.collect_list(F.struct("proposed_ms", "resolved_ms", (F.col("action") == "shrink").alias(
            "shrink")))).alias("_proposals"))
    same_follower = reduce(lambda a, b: a & b, [F.col(c) == F.col(f"_s_{c}") for c in fkey])
    same_leader_epoch = reduce(lambda a, b: a & b, [F.col(c) == F.col(f"_p_{c}") for c in pkey])
    judged = (
        inc.join(lookup(shrink_lists), same_follower, "left")
        .join(lookup(isr_lists), _same_partition("_i_"), "left")
        .join(lookup(proposal_lists), same_leader_epoch, "left")
    )
    start, end = F.col("start_ms"), F.col("end_ms")
    first_shrink = F.array_min(F.filter(
        "_shrinks", lambda s: (s["shrink_ms"] >= F.col("_shrink_from")) & (end.isNull() | (s["shrink_ms"] <= end))))
    def isr_at(t: Column) -> Column:
        return F.try_element_at(F.filter(
            "_isrs", lambda i: (i["valid_from_ms"] <= t) & (i["valid_to_ms"].isNull() | (t < i["valid_to_ms"]))),
            F.lit(1)).getField("isr")
    isr_at_start = isr_at(start)
    over = F.coalesce("end_ms", "_obs_end")
    # When the follower (re)entered the committed ISR: the start of each stretch of the partition's ISR intervals
    # that holds it (an interval holding it that no other such interval ends at).
    holding = F.filter("_isrs", lambda i: F.array_contains(i["isr"], F.col("follower_id")))
    judged = judged.select(
        "*",
        first_shrink.getField("shrink_ms").alias("shrink_ms"),
        first_shrink.getField("shrink_committed_ms").alias("shrink_committed_ms"),
        first_shrink.getField("shrink_outcome").alias("shrink_outcome"),
        F.array_contains(isr_at_start, F.col("follower_id")).alias("in_isr_at_start"),
        holding.alias("_holding"),
    ).withColumn("_entries", _stretch_starts(F.col("_holding")))
    # For the judgement without a shrink, the time before the partition's first known ISR (a log that starts
    # mid-run) counts as the follower in it: an interval holding it up to then, joining a first one that holds it.
    first_known = F.array_min(F.transform("_isrs", lambda i: i["valid_from_ms"]))
    before_known = F.array(F.struct(F.lit(LONG_MIN).alias("valid_from_ms"), first_known.alias("valid_to_ms"),
                                    F.array(F.col("follower_id")).alias("isr")))
    # No known ISR at all (no state of the partition): the follower counts as in it throughout.
    assumed = F.when(F.col("_holding").isNull(), before_known).otherwise(F.concat(before_known, F.col("_holding")))
    judged = judged.withColumn("_assumed", assumed).withColumn("_stretches", F.arrays_zip(
        _stretch_starts(F.col("_assumed")).alias("entry"), _stretch_ends(F.col("_assumed")).alias("exit")))
    shrink_ms = F.col("shrink_ms")
    period = F.floor(F.col("lag_max_ms") / 2).cast("long")
    # With a shrink, the leader owed it from the later of the incident's start and the follower's last return to
    # the ISR before the shrink.
    returned = F.array_max(F.filter("_entries", lambda t: t <= shrink_ms))
    # Without one, each stretch of the follower in the committed ISR during the incident owed a shrink a period after
    # the later of the start and its entry (`maybeShrinkIsr` sees only the committed ISR, and a follower whose LEO
    # reaches the HW is expanded back however old its lcu): the first stretch still holding the follower at its
    # deadline, with the incident still on, is the one the leader missed; else the last stretch decides (in the ISR
    # to the end: judged against its deadline; left it before then by the controller's hand: nothing to shrink).
    stretches = F.transform("_stretches", lambda st: F.struct(
        st["entry"].alias("entry"), st["exit"].alias("exit"), _shrink_due(F.greatest(start, st["entry"]), period)
        .alias("due")))
    during = F.filter(stretches, lambda st: (st["entry"] < over) & (st["exit"].isNull() | (st["exit"] > start)))
    missed = F.array_min(F.filter(during, lambda st: st["due"].isNotNull() & (st["due"] < over)
                                  & (st["exit"].isNull() | (st["exit"] > st["due"]))))
    judged = judged.withColumn("_missed", missed).withColumn("_last", F.array_max(during)).withColumn(
        "deadline_ms",
        F.when(shrink_ms.isNotNull(), _shrink_due(F.greatest(start, returned), period))
        .when(F.col("_missed").isNotNull(), F.col("_missed")["due"])
        .when(F.col("_last").isNotNull(), F.col("_last")["due"])
        .otherwise(_shrink_due(start, period)))
    # A proposal still in flight at the end of the data leaves no deadline: nothing was due yet.
    due = F.coalesce("deadline_ms", F.lit(LONG_MAX))
    last_exit = F.col("_last")["exit"]
    verdict = (
        F.when(shrink_ms.isNotNull(), F.when(shrink_ms <= due, "on_time").otherwise("late"))
        .when(F.col("_missed").isNotNull(), "missing")
        .when(F.col("_last").isNull(), "not_in_isr")  # never in the committed ISR during the incident
        .when(over <= due,
              F.when(F.col("_closed_by") == "fetch", "recovered")
              .when(F.col("end_ms").isNull(), "ongoing")
              .otherwise("leader_lost"))
        # Out of the ISR before its deadline by another route (the controller's update) and not back: nothing left
        # to shrink.
        .when(last_exit.isNotNull() & (last_exit < over), "not_in_isr")
        .otherwise("missing")
    )
    incidents = judged.withColumn("verdict", verdict)

    # Premature: a shrink inside no lagging stretch of that follower under that leader. Both inputs are
    # plain aggregates / filters of the follower lag rows: a list per follower (collect_list) would make
    # Spark aggregate every row through its object hash aggregate, which falls back to sorting them.
    renamed = [F.col(c).alias(f"_s_{c}") for c in fkey]
    stretches = annotated.where(lagging).select(
        *renamed, shrink_from.alias("_shrink_from"), "valid_to_ms")
    lag_max_of = follower_lag.groupBy(*renamed).agg(F.max("lag_max_ms").alias("_lag_max"))
    s_ms = F.col("shrink_ms")
    inside = same_follower & (F.col("_shrink_from") <= s_ms) & (
        F.col("valid_to_ms").isNull() | (s_ms <= F.col("valid_to_ms")))
    # A shrink that reports lcu 0 for the follower removed one its leader never saw caught up (resetReplicaState's
    # 0, kept unknown above): Kafka's out-of-sync test now - 0 > lag max holds, and an ISR expansion needs only
    # LEO >= HW, so a follower that never reaches the leader's LEO joins and is shrunk at the next isr-expiration
    # (the flapping of KAFKA-19996). No lagging stretch can hold it; it is not premature.
    # Judged so only in runs that record the leader's view of its followers: real broker logs have no
    # follower_fetch_state, so no shrink of theirs can be shown to fall outside a lagging stretch
    # (`_premature_by_report` judges theirs).
    observed = events.where(F.col("event_type") == "follower_fetch_state").select("run_id").distinct()
    premature = (
        sh.where(F.coalesce(F.col("reported_lcu") != 0, F.lit(True)))
        .join(F.broadcast(observed), "run_id", "left_semi")
        .join(stretches, inside, "left_anti")
        .join(lookup(lag_max_of), same_follower, "left")
    )
    # The setting of the pair's lag rows, else (a follower its leader never reported) the leader's in force then.
    premature = _leaders_setting(premature, events, lag_max_ms_default).select(
        *_premature_columns(F.coalesce("_lag_max", "lag_max_ms")))
    schema = to_spark_schema(LAG_INCIDENTS_SCHEMA)
    return (conform(incidents, schema).unionByName(conform(premature, schema))
            .unionByName(conform(_premature_by_report(sh, observed, events, lag_max_ms_default), schema)))


def _by_start(holding: Column) -> Column:
    """`holding`'s (from, to) in time order. A partition's state intervals neither overlap nor share a start
    (`_intervals` keeps one state per millisecond), so the interval ending where another starts, if any, is the one
    just before it: each stretch boundary is found against its neighbour, not against every interval (which was
    quadratic in a flapping partition's history, per incident)."""
    return F.array_sort(F.transform(holding, lambda i: F.struct(i["valid_from_ms"].alias("f"),
                                                                 i["valid_to_ms"].alias("t"))))


def _unjoined(holding: Column, step: int, own: str, other: str) -> Column:
    """The `own` bound ("f" from, "t" to) of each of `holding`'s intervals, in time order, whose neighbour `step` away
    does not meet it there with its `other` bound: where a stretch of them begins (step -1) or ends (step 1)."""
    iv = _by_start(holding)

    def mark(x: Column, k: Column) -> Column:
        met = F.coalesce(F.get(iv, k + step)[other] == x[own], F.lit(False))
        return F.struct(met.alias("joined"), x[own].alias("v"))

    return F.transform(F.filter(F.transform(iv, mark), lambda m: ~m["joined"]), lambda m: m["v"])


def _stretch_starts(holding: Column) -> Column:
    """When the follower (re)entered the committed ISR, in order: the start of each stretch of `holding` (the
    partition's ISR intervals that hold it), i.e. of each such interval that no other one ends at."""
    return _unjoined(holding, -1, "f", "t")


def _stretch_ends(holding: Column) -> Column:
    """When it left, in order: the end of each stretch of `holding` (null, sorted last: still in at the end)."""
    return F.array_sort(_unjoined(holding, 1, "t", "f"))


def _shrink_due(owed_from: Column, period: Column) -> Column:
    """The last instant an `isr-expiration` run (every `period` = lag_max_ms / 2) must have proposed a shrink owed
    from `owed_from`: `owed_from + period`, unless an ISR change of the leader was in flight then (`_proposals`,
    in proposal order): the task skips the partition until the answer, and the shrink is due a period after it.
    What blocks: a proposal made before the partition was free to shrink and answered after, or an expansion (a
    fetch makes those) made before the deadline so far, as the task may not have run yet. A shrink proposed later is
    itself a run of the task, which should have taken the follower too: it moves nothing. A blocking proposal still
    pending at the end of the data leaves no deadline (null)."""
    never = F.lit(LONG_MAX)
    free = F.aggregate(
        F.coalesce("_proposals", F.array().cast("array<struct<proposed_ms:bigint,resolved_ms:bigint,shrink:boolean>>")),
        owed_from,
        lambda acc, p: F.when(
            ((p["proposed_ms"] < acc)
             | (~p["shrink"] & (p["proposed_ms"] <= F.coalesce(F.try_add(acc, period), never))))
            & (F.coalesce(p["resolved_ms"], never) > acc), F.coalesce(p["resolved_ms"], never)).otherwise(acc))
    return F.when(free < never, F.try_add(free, period))


def _premature_by_report(sh: DataFrame, observed: DataFrame, events: DataFrame,
                         lag_max_ms_default: int | None) -> DataFrame:
    """Premature shrinks of runs without the leader's per-fetch view (real broker logs), judged on the shrink
    alone where the leader reported the follower's lcu (Kafka 3.6+ 'Shrinking ISR' lines): `isr-expiration`
    removes a follower only when now - lcu > replica.lag.time.max.ms, so a shrink at or below it is premature.
    The setting is the leader's in force at the shrink (its logged `KafkaConfig`), else the run's, else the job's,
    else Kafka's default. A shrink after lcu + the setting gets no row: on time or late cannot be told from the
    logs (a follower at the leader's LEO is caught up however old its lcu, so its lag starts at an append the logs
    do not show), nor can a lag below 0 (the log's time zone is not the leader's clock)."""
    lcu = F.col("reported_lcu")
    reported = sh.join(F.broadcast(observed), "run_id", "left_anti").where(lcu.isNotNull() & (lcu != 0))
    judged = _leaders_setting(reported, events, lag_max_ms_default)
    lag = F.col("shrink_ms") - lcu
    return judged.where((lag >= 0) & (lag <= F.col("lag_max_ms"))).select(*_premature_columns(F.col("lag_max_ms")))


def _leaders_setting(shrink_rows: DataFrame, events: DataFrame, lag_max_ms_default: int | None) -> DataFrame:
    """`shrink_rows` with `lag_max_ms`: replica.lag.time.max.ms of the shrinking leader in force at the shrink (its
    logged config), else the run's, else the job's, else Kafka's default."""
    lag_cfg = F.col("config").getItem(LAG_MAX_KEY).try_cast("long")
    settings = events.where((F.col("event_type") == BROKER_CONFIG) & lag_cfg.isNotNull()).select(
        "run_id", "broker_id", "ts_ms", "event_id", lag_cfg.alias("lag_max_ms"))
    default = F.lit(lag_max_ms_default if lag_max_ms_default is not None else KAFKA_DEFAULT_LAG_MAX_MS).cast("long")
    return with_setting(shrink_rows, settings, "leader_id", "lag_max_ms", default, at="shrink_ms")


def _premature_columns(lag_max: Column) -> list[Column]:
    """A premature row of `shrinks` (one instant: the proposal, its lag from the lcu the shrink reported)."""
    return [
        *[F.col(c) for c in PARTITION_KEY], F.col("follower_id"), F.col("leader_id"), F.col("leader_epoch"),
        F.col("shrink_ms").alias("start_ms"),
        F.col("shrink_ms").alias("end_ms"),
        F.col("reported_lcu").alias("last_caught_up_time_ms"),
        lag_max.alias("lag_max_ms"),
        F.lit(None).cast("long").alias("deadline_ms"),
        (F.col("shrink_ms") - F.col("reported_lcu")).alias("peak_time_lag_ms"),
        F.lit(None).cast("long").alias("peak_message_lag"),
        F.lit(True).alias("in_isr_at_start"),
        F.col("shrink_ms"),
        F.col("shrink_committed_ms"),
        F.col("shrink_outcome"),
        F.lit("premature").alias("verdict"),
    ]


# --- gold/lag_summary --------------------------------------------------------------------------------


def _minutes(flag: str, duration: Column) -> Column:
    return F.coalesce(F.sum(F.when(F.col(flag), duration)), F.lit(0)) / _MS_PER_MINUTE


_SCOPE_KEY = ["run_id", "scope", "_t", "_p", "_b"]


def _both_scopes(df: DataFrame, broker_col: str) -> DataFrame:
    """Each row twice: keyed by its partition (scope partition) and by `broker_col` (scope broker).

    One aggregate then serves both scopes. Keys use '' / -1 for "not this scope" so that the full
    outer joins below match them (null never equals null).
    """
    keys = F.array(
        F.struct(F.lit("partition").alias("scope"), F.col("topic").alias("_t"), F.col("partition").alias("_p"),
                 F.lit(-1).alias("_b")),
        F.struct(F.lit("broker").alias("scope"), F.lit("").alias("_t"), F.lit(-1).alias("_p"),
                 F.coalesce(F.col(broker_col), F.lit(-1)).alias("_b")),
    )
    out = df.select("*", F.explode(keys).alias("_k")).select("*", "_k.*").drop("_k")
    return out.where((F.col("scope") == "partition") | (F.col("_b") >= 0))


def lag_summary(
    partition_state: DataFrame,
    isr_changes: DataFrame,
    follower_lag: DataFrame,
    incidents: DataFrame,
    bounds: DataFrame,
) -> DataFrame:
    """Silver + gold -> `gold/lag_summary` (see the module docstring); `bounds` is `run_bounds(events)`."""
    ps = _both_scopes(partition_state, "leader_id").join(F.broadcast(bounds), "run_id")
    duration = F.coalesce("valid_to_ms", "end_ms") - F.col("valid_from_ms")
    a_ps = ps.groupBy(*_SCOPE_KEY).agg(
        _minutes("under_replicated", duration).alias("urp_minutes"),
        _minutes("under_min_isr", duration).alias("under_min_isr_minutes"),
        _minutes("offline", duration).alias("offline_minutes"),
    )
    committed = F.col("outcome") == "committed"
    a_ic = _both_scopes(isr_changes, "leader_id").groupBy(*_SCOPE_KEY).agg(
        F.count(F.when(committed & (F.col("action") == "shrink"), 1)).alias("isr_shrinks"),
        F.count(F.when(committed & (F.col("action") == "expand"), 1)).alias("isr_expands"),
    )
    a_fl = _both_scopes(follower_lag, "follower_id").groupBy(*_SCOPE_KEY).agg(
        F.max("time_lag_end_ms").alias("max_time_lag_ms"),
        F.max(_peak_message_lag()).alias("max_message_lag"),
    )
    v = F.col("verdict")
    a_inc = _both_scopes(incidents, "follower_id").groupBy(*_SCOPE_KEY).agg(
        F.count(F.when(v != "premature", 1)).alias("lag_incidents"),
        F.count(F.when(v == "late", 1)).alias("incidents_late"),
        F.count(F.when(v == "missing", 1)).alias("incidents_missing"),
        F.count(F.when(v == "premature", 1)).alias("premature_shrinks"),
    )
    joined = reduce(lambda a, b: a.join(b, _SCOPE_KEY, "full_outer"), [a_ps, a_ic, a_fl, a_inc])
    joined = joined.join(F.broadcast(bounds), "run_id", "left")
    observed = F.col("end_ms") - F.col("start_ms")

    def per_hour(c: str) -> Column:
        return F.when(observed > 0, F.col(c) * _MS_PER_HOUR / observed)

    counts = ["isr_shrinks", "isr_expands", "lag_incidents", "incidents_late", "incidents_missing",
              "premature_shrinks"]
    minutes = ["urp_minutes", "under_min_isr_minutes", "offline_minutes"]
    filled = joined.fillna(0, subset=counts).fillna(0.0, subset=minutes)
    broker = F.col("scope") == "broker"
    out = filled.select(
        "*",
        F.when(~broker, F.col("_t")).alias("topic"),
        F.when(~broker, F.col("_p")).alias("partition"),
        F.when(broker, F.col("_b")).alias("broker_id"),
        observed.alias("observed_ms"),
        per_hour("isr_shrinks").alias("isr_shrinks_per_hour"),
        per_hour("isr_expands").alias("isr_expands_per_hour"),
    )
    return conform(out, to_spark_schema(LAG_SUMMARY_SCHEMA))
