"""Bronze replication events -> the silver timelines (pure transforms; see `jobs.timelines` for the job).

Definitions (what operators read):

`silver/replica_offsets` — per (run, topic, partition, replica = emitting broker), intervals
`[valid_from_ms, valid_to_ms)` of constant (role, leader_epoch, log_start_offset, high_watermark,
log_end_offset). Sources, all emitted by the replica's own log / partition:
  * LEO: `append.leo`, `truncation.truncate_offset`, `leadership_change.leo`, `log_load.leo` (the log as its
    broker loaded it at a restart, read from broker logs: a crash's lost tail shows as a drop);
  * HW: `hw_change.hw`, `leadership_change.hw` (a truncation's `hw` is the HW *before* it, so it is not
    a source; the engine emits the following `hw_change` itself), never above the LEO: Kafka's truncation and
    log recovery lower the HW to the LEO, which broker logs do not print;
  * LSO: `log_start_offset_change.log_start_offset`, `log_load.log_start_offset` (which may be lower: Kafka
    reloads the last log-start-offset checkpoint, or the first segment's base), lowered to a later
    `leadership_change.leo` or `log_load.leo` below it (the new, empty log of a replica deleted and added back,
    or a crash's loss: Kafka keeps log start <= LEO);
  * role: `leadership_change.action` (become_leader / become_follower); `offline` from its broker's
    crash or shutdown (`broker_lifecycle`, a run-level event; replicas with a leadership change before
    it) until its next leadership change: a broker that is down leads nothing, whatever its last
    leadership change said, and the truncation its disk reports at a crash does not bring it back;
    `removed` (with null offsets: its broker deletes the log) from the first state that assigns the partition
    without it (see `partition_state`: an election, a partition change, a leader's registration; a reassignment's
    completion, after which no event of its own shows it) until its next leadership change (added back);
    Before any of those (a log cut mid-run), the role the replica's events carry;
  * leader_epoch: the envelope `leader_epoch` of the replica's events.
  Before the first event that sets a value, the value is taken from the "before" field of that first
  event (`old_hw`, `old_log_start_offset`, `old_leo`, or an append's `base_offset`), so a replica whose
  LSO never moves still shows the LSO it had; null means no event ever told it.

`silver/partition_state` — per (run, topic, partition), intervals of constant (leader, leader epoch, partition
epoch, committed ISR, eligible leader replicas, assigned replicas), as the controller and the leader state it:
`leader_election` (controller; leader_id null = offline election), `leadership_change` become_leader (the new
leader's registration), committed `isr_change` events (ISR and partition epoch, and the assignment where the event
states it: the leader's registration in its epoch; the leader is unchanged), `partition_change` (the controller's
change without an election, in runs with eligible leader replicas: ISR, ELR, assignment and partition epoch), and a
follower's `leadership_change` become_follower for the assignment alone, where it states a newer partition epoch
than any before and another assignment (a reassignment's new followers may learn it before the leader registers it;
the controller's record of it is no event in a run without eligible leader replicas). The ELR is null where no event
states it: a cluster without ELR, or, from logs, after an ISR change that no controller line shows (Kafka's INFO
lines print the ELR only at an election from it). An event stating an older partition epoch (or leader epoch) than
one already in force is stale and changes nothing, as Kafka fences it; an assignment older than one any replica
already stated changes nothing either, but a follower's registration fences nothing else (the leader's later commit
of the change before it still states the ISR). Derived flags follow Kafka's partition metrics, for a partition that
has a leader:
  * under_replicated: isr_size < replication_factor = the assigned replicas less those a reassignment is
    adding (`adding_replicas` of the leader's registration or the election; Kafka's
    `OngoingReassignmentState.replicationFactor`);
  * under_min_isr / at_min_isr: isr_size < / = effective_min_isr = min(min.insync.replicas, assigned
    replicas), with min.insync.replicas the topic's override (`topic.<name>.min.insync.replicas` in the
    leader's `broker_config` in force when the interval opened: its last at or before then, else its
    first; else in any broker's last of the run), else the leader's broker-wide value (the same way),
    else any broker's of the run, else the job default (1);
  * offline: no leader; null while no event has named the leader yet (a log cut mid-run).
  The ISR flags are null while no event has stated the ISR (a log line that does not print it).

`silver/isr_changes` — one row per ISR change a leader proposed or applied (the controller's own changes at
elections, registrations and partition changes are `silver/partition_state`'s): a leader's proposal
(`isr_state = proposed`) grouped with the outcomes that follow it from the same leader until its next proposal —
the commit, or the rejections (AlterPartition errors; `retry` and `awaiting_metadata` rejections leave it in flight,
and it may still commit). A committed `update` to exactly the ISR of the leader's open proposal is that proposal's
commit, learnt from the metadata log before (or instead of) the AlterPartition answer, as KRaft brokers do; any
other ISR the leader applied from the controller (`action = update`, committed without a proposal) is its own
change. A proposal without an answer is `superseded` at the first event after it where the leader's state moved on
without it — its next change, its next leadership change of the partition, its broker's crash, shutdown or restart:
Kafka discards the pending state there and ignores a later answer; `pending` only where nothing followed.

Shared conventions: events are ordered by (ts_ms, event_id). Several events at the same ms yield one
interval — the state after the last of them — so intervals never have zero length; an event that
does not change the state opens no interval. One window specification (partition key, ts_ms,
event_id) serves every running value of a table, so each table costs one sort.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.session import lookup
from jobs.transforms.segments import lowest_in_segment
from schemas.analytics import ISR_CHANGES_SCHEMA, PARTITION_STATE_SCHEMA, REPLICA_OFFSETS_SCHEMA
from schemas.events import (
    APPEND,
    BROKER_CONFIG,
    BROKER_LIFECYCLE,
    HW_CHANGE,
    ISR_CHANGE,
    LEADER_ELECTION,
    LEADERSHIP_CHANGE,
    LOG_LOAD,
    LOG_START_OFFSET_CHANGE,
    PARTITION_CHANGE,
    TRUNCATION,
)
from schemas.spark import to_spark_schema

PARTITION_KEY: tuple[str, ...] = ("run_id", "topic", "partition")
"""Columns naming one partition of one run: the unit the timelines are recomputed in."""

LAG_MAX_KEY = "replica.lag.time.max.ms"
MIN_ISR_KEY = "min.insync.replicas"

_UNBOUNDED = (Window.unboundedPreceding, Window.currentRow)

REMOVED = "removed"
"""`silver/replica_offsets` role of a replica its partition's assignment no longer names (log deleted)."""


def conform(df: DataFrame, schema: T.StructType) -> DataFrame:
    """Select exactly `schema`'s columns, in order, cast to its types (the table's shape)."""
    return df.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])


def _scoped(events: DataFrame) -> Column:
    """Events that name their partition (real logs may lack the broker or the partition)."""
    return F.col("topic").isNotNull() & F.col("partition").isNotNull()


def _running(col: str | Column, w: Window) -> Column:
    """The last non-null value up to and including this row: a forward fill."""
    return F.last(col, ignorenulls=True).over(w.rowsBetween(*_UNBOUNDED))


def _initial(before: str, sets: str, w: Window) -> Column:
    """The `before` value of the first row that sets `sets`: the value in force before any change."""
    first_setter = F.when(F.col(sets).isNotNull(), F.struct("ts_ms", "event_id"))
    return F.min_by(before, first_setter).over(w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))


def _intervals(running: DataFrame, keys: Sequence[str], state: Sequence[str]) -> DataFrame:
    """Rows of running state (one per event, with `_next_ts` = next event's ts) -> change intervals.

    Keeps the last row of each ms, drops rows whose state equals the previous kept row's, and sets
    `valid_to_ms` to the next kept row's ts. The windows share `running`'s partitioning and order,
    so Spark adds no sort.
    """
    w = Window.partitionBy(*keys).orderBy("ts_ms", "event_id")
    s = F.struct(*state)
    last_at_ts = running.where(F.col("_next_ts").isNull() | (F.col("_next_ts") != F.col("ts_ms")))
    changed = last_at_ts.withColumn("_changed", ~s.eqNullSafe(F.lag(s).over(w)))
    return (
        changed.where("_changed")
        .withColumn("valid_to_ms", F.lead("ts_ms").over(w))
        .withColumnRenamed("ts_ms", "valid_from_ms")
    )


# --- settings ------------------------------------------------------------------------------------


def broker_settings(events: DataFrame) -> DataFrame:
    """Per `broker_config` event (run_id, broker_id, ts_ms, event_id): the broker-wide `min_isr` it states.

    Null where the config does not name it (or not as a number). A broker logs its config at every start (the
    engine) or when it changes: each setting holds from its event to the broker's next.
    """
    return _configs(events).select(
        "run_id", "broker_id", "ts_ms", "event_id",
        F.col("config").getItem(MIN_ISR_KEY).try_cast("int").alias("min_isr"),
    )


def _configs(events: DataFrame) -> DataFrame:
    """The `broker_config` events that name their broker: (run_id, broker_id, ts_ms, event_id, config)."""
    cfg = events.where((F.col("event_type") == BROKER_CONFIG) & F.col("broker_id").isNotNull())
    return cfg.select("run_id", "broker_id", "ts_ms", "event_id", "config")


def topic_min_isr(events: DataFrame) -> DataFrame:
    """Per `broker_config` event and topic it overrides: the topic's `min.insync.replicas`.

    The engine writes a topic's configs into the broker's map as `topic.<name>.<config>`; a topic name
    may hold dots, so the name is what lies between the prefix and the config's name.
    """
    entries = _configs(events).select("run_id", "broker_id", "ts_ms", "event_id",
                                      F.explode("config").alias("_k", "_v"))
    topic = F.regexp_extract("_k", r"^topic\.(.+)\." + MIN_ISR_KEY.replace(".", r"\.") + "$", 1)
    return entries.where(topic != "").select(
        "run_id", "broker_id", "ts_ms", "event_id", topic.alias("topic"), F.col("_v").try_cast("int").alias("min_isr"))


def setting_entry(value: Column) -> Column:
    """One config event's setting, as `setting_in_force` looks it up: (ts, event id, value)."""
    return F.struct(F.col("ts_ms").alias("ts"), F.col("event_id").alias("id"), value.alias("v"))


def setting_in_force(settings: str, at: str) -> Column:
    """From array column `settings` (sorted `setting_entry`s of one broker): the value in force at column `at`,
    the last set at or before it; before the first, the first (the earliest known is the best guess)."""
    cfgs = F.col(settings)
    first = F.try_element_at(cfgs, F.lit(1))["v"]
    then = F.try_element_at(F.filter(cfgs, lambda c: c["ts"] <= F.col(at)), F.lit(-1))["v"]
    # One setting (no restart in the data) skips the lookup, which Spark interprets row by row.
    return F.when(F.size(cfgs) > 1, F.coalesce(then, first)).otherwise(first)


def with_setting(df: DataFrame, settings: DataFrame, broker_col: str, name: str, default: Column,
                 keys: tuple[str, ...] = (), at: str = "valid_from_ms") -> DataFrame:
    """Set column `name` from `settings` (rows per config event: run, broker, ts_ms, event_id, `keys`).

    The value is the broker's in force at column `at` (its last setting at or before then; before its first,
    the first), else the largest of the run's brokers' last settings, else `default`.
    """
    key_cols = [F.col(k).alias(f"_sk_{k}") for k in keys]
    by_broker = settings.where(F.col(name).isNotNull()).groupBy(
        F.col("run_id").alias("_sr"), F.col("broker_id").alias("_sb"), *key_cols
    ).agg(F.array_sort(F.collect_list(setting_entry(F.col(name)))).alias("_cfgs"))
    by_run = by_broker.groupBy(F.col("_sr").alias("_rr"), *[F.col(f"_sk_{k}").alias(f"_rk_{k}") for k in keys]).agg(
        F.max(F.try_element_at("_cfgs", F.lit(-1))["v"]).alias("_by_run"))
    on_broker = reduce(Column.__and__, [F.col("run_id") == F.col("_sr"), F.col(broker_col) == F.col("_sb"),
                                        *[F.col(k) == F.col(f"_sk_{k}") for k in keys]])
    on_run = reduce(Column.__and__, [F.col("run_id") == F.col("_rr"), *[F.col(k) == F.col(f"_rk_{k}") for k in keys]])
    joined = df.join(F.broadcast(by_broker), on_broker, "left").join(F.broadcast(by_run), on_run, "left")
    return joined.withColumn(name, F.coalesce(setting_in_force("_cfgs", at), "_by_run", default)).drop(
        "_sr", "_sb", "_cfgs", "_rr", *[f"_sk_{k}" for k in keys], *[f"_rk_{k}" for k in keys], "_by_run"
    )


# --- silver/replica_offsets --------------------------------------------------------------------------


def replica_offsets(events: DataFrame, state_events: DataFrame | None = None) -> DataFrame:
    """Bronze events -> `silver/replica_offsets` (see the module docstring for the definition); `state_events`:
    `partition_state_events(events)`, if the caller has them (the job computes them once for two tables)."""
    et = F.col("event_type")
    ev = events.where(
        et.isin(APPEND, TRUNCATION, HW_CHANGE, LOG_START_OFFSET_CHANGE, LEADERSHIP_CHANGE, LOG_LOAD)
        & _scoped(events)
        & F.col("broker_id").isNotNull()
    ).select(
        *PARTITION_KEY,
        F.col("broker_id").alias("replica_id"),
        "ts_ms",
        "event_id",
        F.when(et == LEADERSHIP_CHANGE,
               F.when(F.col("action") == "become_leader", "leader").otherwise("follower")).alias("_role"),
        F.when(et != LEADERSHIP_CHANGE, F.col("role")).alias("_event_role"),
        F.col("leader_epoch").alias("_epoch"),
        F.when(et.isin(APPEND, LEADERSHIP_CHANGE, LOG_LOAD), F.col("leo"))
        .when(et == TRUNCATION, F.col("truncate_offset")).alias("_leo"),
        F.when(et == APPEND, F.col("base_offset")).when(et == TRUNCATION, F.col("old_leo")).alias("_leo0"),
        F.when(et.isin(HW_CHANGE, LEADERSHIP_CHANGE), F.col("hw")).alias("_hw"),
        F.when(et == HW_CHANGE, F.col("old_hw")).alias("_hw0"),
        F.when(et.isin(LOG_START_OFFSET_CHANGE, LOG_LOAD), F.col("log_start_offset")).alias("_lso"),
        F.when(et == LOG_START_OFFSET_CHANGE, F.col("old_log_start_offset")).alias("_lso0"),
        F.when(et.isin(LEADERSHIP_CHANGE, LOG_LOAD), F.col("leo")).alias("_lso_low"),
        F.when(et == LEADERSHIP_CHANGE, F.lit(False)).alias("_gone"),
    )
    keys = [*PARTITION_KEY, "replica_id"]
    # A crash or shutdown of a broker marks each replica it hosted by then: one whose leadership it had been
    # told before (every replica of the engine's is, at its broker's first LeaderAndIsr). Those few events,
    # not every offset event, say which replicas a broker hosts.
    down = events.where((et == BROKER_LIFECYCLE) & F.col("action").isin("crash", "shutdown")
                        & F.col("broker_id").isNotNull()).select(
        "run_id", F.col("broker_id").alias("replica_id"), "ts_ms", "event_id")
    hosted = events.where((et == LEADERSHIP_CHANGE) & _scoped(events) & F.col("broker_id").isNotNull()).groupBy(
        *PARTITION_KEY, F.col("broker_id").alias("replica_id")).agg(F.min("ts_ms").alias("_first_ts"))
    nothing = [F.lit(None).cast(ev.schema[c].dataType).alias(c)
               for c in ("_event_role", "_epoch", "_leo", "_leo0", "_hw", "_hw0", "_lso", "_lso0", "_lso_low")]
    offline = down.join(hosted, ["run_id", "replica_id"]).where(F.col("_first_ts") < F.col("ts_ms")).select(
        *keys, "ts_ms", "event_id", F.lit("offline").alias("_role"), *nothing,
        F.lit(None).cast("boolean").alias("_gone"))
    # A replica hosted before a state that assigns the partition without it (a reassignment's completion, as the
    # controller or the new leader records it) is removed: its broker deletes the log when it learns the change.
    # Those states are a few rows per partition, joined with its few replicas.
    states = partition_state_events(events) if state_events is None else state_events
    assigned = states.where(F.col("_replicas").isNotNull()).select(
        *PARTITION_KEY, "ts_ms", "event_id", "_replicas")
    removed = assigned.join(lookup(hosted), list(PARTITION_KEY)).where(
        (F.col("_first_ts") < F.col("ts_ms")) & ~F.array_contains("_replicas", F.col("replica_id"))).select(
        *keys, "ts_ms", "event_id", F.lit(None).cast("string").alias("_role"), *nothing, F.lit(True).alias("_gone"))
    w = Window.partitionBy(*keys).orderBy("ts_ms", "event_id")
    upto = w.rowsBetween(*_UNBOUNDED)
    # The LSO's segments: each log_start_offset_change opens one (the same window: no sort of its own).
    ev = ev.unionByName(offline).unionByName(removed).withColumn("_lso_seg", F.count("_lso").over(upto))
    lso = F.coalesce(_running("_lso", w), _initial("_lso0", "_lso", w))
    running = ev.select(
        *keys,
        "ts_ms",
        "event_id",
        # The role a leadership change or an outage states wins over the role an event carries: the
        # recovery truncation a crashed broker's disk reports is not the replica coming back as a follower.
        # Removed stays removed through its broker's crashes and restarts: the log is gone.
        F.when(F.coalesce(_running("_gone", w), F.lit(False)), F.lit(REMOVED))
        .otherwise(F.coalesce(_running("_role", w), _running("_event_role", w))).alias("role"),
        _running("_epoch", w).alias("leader_epoch"),
        # A leadership change reporting a log that ends below the LSO (a new, empty log of a replica added
        # back after its deletion; a crash's loss) lowers it, as `jobs.invariants.replica_scan` replays it:
        # Kafka keeps log start <= LEO. A log_load does the same here; the audit's replays and the checker do not
        # read it (a broker log's restart informs the picture, no invariant). `least` skips the null of a segment
        # with no such change.
        F.when(lso.isNotNull(), F.least(lso, lowest_in_segment(F.col("_lso_low"), F.col("_lso_seg"), upto)))
        .alias("log_start_offset"),
        F.coalesce(_running("_hw", w), _initial("_hw0", "_hw", w)).alias("high_watermark"),
        F.coalesce(_running("_leo", w), _initial("_leo0", "_leo", w)).alias("log_end_offset"),
        F.lead("ts_ms").over(w).alias("_next_ts"),
    )
    # A removed replica's log is gone: no offsets until it is assigned again (with a new log). The HW never
    # exceeds the LEO: a truncation or recovery that cuts below it lowers it (`UnifiedLog.truncateTo`, the HW
    # checkpoint clamped on load), which a broker log does not print.
    kept = F.coalesce(F.col("role") != REMOVED, F.lit(True))
    hw, leo = F.col("high_watermark"), F.col("log_end_offset")
    # Not `least`, which skips a null: an HW no event told stays unknown, whatever the LEO.
    running = running.withColumn("high_watermark", F.when(hw > leo, leo).otherwise(hw)).select(
        *keys, "ts_ms", "event_id", "role", "leader_epoch", "_next_ts", *[
            F.when(kept, F.col(c)).alias(c) for c in ("log_start_offset", "high_watermark", "log_end_offset")])
    out = _intervals(running, keys, ["role", "leader_epoch", "log_start_offset", "high_watermark", "log_end_offset"])
    return conform(out, to_spark_schema(REPLICA_OFFSETS_SCHEMA))


# --- silver/partition_state --------------------------------------------------------------------------


def partition_state_events(events: DataFrame) -> DataFrame:
    """The events that state a partition's leader, ISR, ELR or assignment, as `partition_state` marks, stale
    ones dropped; `_replicas` is the assignment an event states (null where it states none or an older one)."""
    et, action = F.col("event_type"), F.col("action")
    election = et == LEADER_ELECTION
    became_leader = (et == LEADERSHIP_CHANGE) & (action == "become_leader")
    # A follower's registration states the assignment (and partition epoch) the controller sent it, nothing else:
    # where a reassignment's new followers learn it before the leader does, they are the first to show it.
    became_follower = (et == LEADERSHIP_CHANGE) & (action == "become_follower") & F.col("replicas").isNotNull()
    committed = (et == ISR_CHANGE) & (F.col("isr_state") == "committed")
    change = et == PARTITION_CHANGE
    sets_leader = election | became_leader
    # The controller's records state the assignment and the ELR; a leader's registration the assignment, in a new
    # epoch or in its own (a committed update that states it: KRaft keeps the epoch when replicas are added).
    registers = sets_leader | change | (committed & F.col("replicas").isNotNull())
    assigns = registers | became_follower
    ev = events.where((election | became_leader | committed | change | became_follower) & _scoped(events)).select(
        *PARTITION_KEY,
        "ts_ms",
        "event_id",
        # Wrapped in a struct so that "no leader" (an offline election) is a value the forward fill
        # carries, not a gap it skips.
        F.when(sets_leader, F.struct(
            F.when(election, F.col("leader_id")).otherwise(F.coalesce("leader_id", "broker_id")).alias("v")
        )).alias("_leader"),
        F.when(sets_leader, F.col("leader_epoch")).alias("_epoch"),
        F.when(~became_follower, F.col("partition_epoch")).alias("_pepoch"),
        F.col("partition_epoch").alias("_any_pepoch"),
        F.when(assigns, F.col("partition_epoch")).alias("_assign_epoch"),
        F.when(~became_follower & F.col("isr").isNotNull(), F.array_sort("isr")).alias("_isr"),
        F.when(assigns, F.col("replicas")).alias("_replicas"),
        # Absent (data before schema 1.1, or no reassignment): none being added.
        F.when(assigns, F.coalesce("adding_replicas", F.array().cast("array<int>"))).alias("_adding"),
        # In a struct, like the leader: an election that does not state the ELR makes it unknown.
        F.when(election | change, F.struct(F.array_sort("elr").alias("v"))).alias("_elr_said"),
        F.concat_ws(":", et, action).alias("_cause"),
        became_follower.alias("_follower"),
    )
    w = Window.partitionBy(*PARTITION_KEY).orderBy("ts_ms", "event_id")
    # A state older than the one in force changes nothing (a deposed leader's late commit or registration):
    # Kafka fences it by the partition epoch, and a leader's registration by the leader epoch as well. An
    # assignment older than one already stated (by anyone) is stale too.
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    stale = (F.col("_pepoch") < F.max("_pepoch").over(before)) | (F.col("_epoch") < F.max("_epoch").over(before))
    old_assignment = F.coalesce(F.col("_assign_epoch") < F.max("_assign_epoch").over(before), F.lit(False))
    # A follower's registration counts only where it is news: a partition epoch above every one stated before, with
    # an assignment other than the last stated (most repeat what the leader registered first; a restarted follower
    # learns a later epoch whose ISR it does not state, and says nothing of it).
    assignment = F.struct("_replicas", "_adding")
    news = (F.coalesce(F.col("_any_pepoch") > F.max("_any_pepoch").over(before), F.lit(True))
            & ~assignment.eqNullSafe(F.last(F.when(F.col("_replicas").isNotNull(), assignment), ignorenulls=True)
                                     .over(before)))
    ev = ev.withColumn("_old_assignment", old_assignment).withColumn(
        "_stale", F.coalesce(stale, F.lit(False)) | (F.col("_follower") & ~news))
    return ev.where(~F.col("_stale")).select(
        *PARTITION_KEY, "ts_ms", "event_id", "_leader", "_epoch", "_pepoch", "_isr",
        *[F.when(~F.col("_old_assignment"), F.col(c)).alias(c) for c in ("_replicas", "_adding")],
        "_elr_said", "_cause")


def partition_state(events: DataFrame, min_isr_default: int = 1, state_events: DataFrame | None = None) -> DataFrame:
    """Bronze events -> `silver/partition_state` (see the module docstring for the definition); `state_events` as
    for `replica_offsets`."""
    ev = partition_state_events(events) if state_events is None else state_events
    w = Window.partitionBy(*PARTITION_KEY).orderBy("ts_ms", "event_id")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    # An ISR that the controller's records did not state (a leader's commit or registration read from logs, which
    # print the ELR only at an election) leaves the ELR unknown: Kafka moves the ELR with the ISR. One that repeats
    # the ISR in force (the leader learning the controller's change) leaves it as it was.
    isr_news = F.col("_isr").isNotNull() & ~F.col("_isr").eqNullSafe(F.last("_isr", ignorenulls=True).over(before))
    unknown = F.struct(F.lit(None).cast("array<int>").alias("v"))
    ev = ev.withColumn("_elr", F.coalesce("_elr_said", F.when(isr_news, unknown)))
    running = ev.select(
        *PARTITION_KEY,
        "ts_ms",
        "event_id",
        _running("_leader", w).getField("v").alias("leader_id"),
        # No leader event yet (a log cut mid-run) is "leader not known", not an offline partition.
        _running("_leader", w).isNotNull().alias("_leader_known"),
        _running("_epoch", w).alias("leader_epoch"),
        _running("_pepoch", w).alias("partition_epoch"),
        _running("_isr", w).alias("isr"),
        _running("_elr", w).getField("v").alias("elr"),
        _running("_replicas", w).alias("replicas"),
        _running("_adding", w).alias("_adding"),
        F.col("_cause").alias("cause"),
        F.lead("ts_ms").over(w).alias("_next_ts"),
    )
    out = _intervals(running, PARTITION_KEY,
                     ["leader_id", "_leader_known", "leader_epoch", "partition_epoch", "isr", "elr", "replicas",
                      "_adding"])
    out = with_setting(out, broker_settings(events), "leader_id", "min_isr", F.lit(min_isr_default))
    # A topic's override before the broker-wide value (topic configs are cluster-wide in Kafka: any broker's).
    out = with_setting(out, topic_min_isr(events), "leader_id", "min_isr", F.col("min_isr"), keys=("topic",))
    # An ISR no event has stated (a 2.0-2.4 leader line prints none) is unknown: its size and the flags that
    # compare it are null, not those of an empty ISR (which read as under min ISR for the whole run).
    isr_size = F.when(F.col("isr").isNotNull(), F.size("isr"))
    # Kafka's replicationFactor during a reassignment leaves out the replicas being added (they are not
    # expected in the ISR yet); effectiveMinIsr caps min.insync.replicas at every assigned replica.
    rf = F.size("replicas") - F.coalesce(F.size("_adding"), F.lit(0))
    led = F.col("leader_id").isNotNull()
    out = (
        out.withColumn("isr_size", isr_size)
        .withColumn("replication_factor", rf)
        .withColumn("effective_min_isr", F.least(F.col("min_isr"), F.size("replicas")))
        .withColumn("under_replicated", led & (isr_size < rf))
        .withColumn("under_min_isr", led & (isr_size < F.col("effective_min_isr")))
        .withColumn("at_min_isr", led & (isr_size == F.col("effective_min_isr")))
        .withColumn("offline", F.when(F.col("_leader_known"), ~led))
    )
    return conform(out, to_spark_schema(PARTITION_STATE_SCHEMA))


# --- silver/isr_changes ------------------------------------------------------------------------------


def isr_changes(events: DataFrame) -> DataFrame:
    """Bronze events -> `silver/isr_changes` (see the module docstring for the definition)."""
    state = F.col("isr_state")
    # The leader's own leadership changes of the partition ride along in the same window (one scan, one sort): each
    # row learns the first one after it (`_moved`, see `_with_superseded`); they form no change themselves.
    is_lc = F.col("event_type") == LEADERSHIP_CHANGE
    rows = events.where(F.col("event_type").isin(ISR_CHANGE, LEADERSHIP_CHANGE) & _scoped(events)
                        & F.col("broker_id").isNotNull())
    order = Window.partitionBy(*PARTITION_KEY, "broker_id").orderBy("ts_ms", "event_id")
    w = order.rowsBetween(*_UNBOUNDED)
    moved = F.min(F.when(is_lc, F.struct("ts_ms", "event_id"))).over(order.rowsBetween(1, Window.unboundedFollowing))
    ic = rows.withColumn("_moved_after", moved).where(~is_lc)
    # The leader's proposal still open before this event (a commit or a final rejection closes it). In KRaft
    # the leader may learn its commit from the metadata log (an `update`, committed, in the proposal's leader
    # epoch) before, or instead of, the AlterPartition answer: an update to exactly the open proposal's ISR
    # in its epoch is that proposal's commit. A proposal of an earlier epoch is never closed this way.
    final_rejection = (state == "rejected") & ~F.coalesce(F.col("reason").isin("retry", "awaiting_metadata"),
                                                          F.lit(False))
    mark = (F.when(state == "proposed", F.struct(F.col("leader_epoch").alias("epoch"),
                                                 F.array_sort("isr").alias("isr")))
            .when((state == "committed") | final_rejection,
                  F.struct(F.lit(None).cast("int").alias("epoch"), F.lit(None).cast("array<int>").alias("isr"))))
    open_p = F.last(mark, ignorenulls=True).over(order.rowsBetween(Window.unboundedPreceding, -1))
    commits_open = ((state == "committed") & (open_p.getField("epoch") == F.col("leader_epoch"))
                    & (F.array_sort("isr") == open_p.getField("isr")))
    ic = ic.withColumn("_starts", (state == "proposed") | (
        (F.col("action") == "update") & ~F.coalesce(commits_open, F.lit(False))))
    starts = F.col("_starts")
    ic = ic.withColumn("_grp", F.sum(F.when(starts, 1).otherwise(0)).over(w))
    row = F.struct("ts_ms", "event_id", "leader_epoch", "action", "reason", "old_isr", "isr", "partition_epoch",
                   "error", "out_of_sync_replicas")
    rejected = state == "rejected"
    g = ic.groupBy(*PARTITION_KEY, "broker_id", "_grp").agg(
        F.min_by(row, F.when(starts, F.col("event_id"))).alias("p"),
        F.min_by(row, F.when(state == "committed", F.col("event_id"))).alias("c"),
        F.max_by(row, F.when(rejected, F.col("event_id"))).alias("r"),
        F.count(F.when(rejected, 1)).alias("rejections"),
        # Outcomes seen before any proposal (data cut mid-change) still form a change of their own.
        F.min_by(row, F.col("event_id")).alias("first"),
        # The first leadership change after the group's first row (the earliest of its rows' firsts after them).
        F.min("_moved_after").alias("_moved"),
    )
    g = _with_superseded(g, events)
    old_isr = F.array_sort(F.coalesce("p.old_isr", "first.old_isr"))
    proposed_isr = F.array_sort("p.isr")
    answer = F.coalesce("c", "r")
    resolved = F.struct(F.coalesce(answer.getField("ts_ms"), F.col("_superseded.ts_ms")).alias("ts_ms"),
                        F.coalesce(answer.getField("event_id"), F.col("_superseded.event_id")).alias("event_id"))
    out = g.select(
        *PARTITION_KEY,
        F.col("broker_id").alias("leader_id"),
        F.coalesce("p.leader_epoch", "first.leader_epoch").alias("leader_epoch"),
        F.coalesce("p.action", "first.action").alias("action"),
        F.col("p.reason").alias("reason"),
        old_isr.alias("old_isr"),
        proposed_isr.alias("proposed_isr"),
        F.array_except(old_isr, proposed_isr).alias("removed_replicas"),
        F.array_except(proposed_isr, old_isr).alias("added_replicas"),
        F.col("p.out_of_sync_replicas").alias("out_of_sync_replicas"),
        F.col("p.ts_ms").alias("proposed_ms"),
        F.col("p.event_id").alias("proposed_event_id"),
        F.when(F.col("c").isNotNull(), "committed").when(F.col("r").isNotNull(), "rejected")
        .when(F.col("_superseded").isNotNull(), "superseded").otherwise("pending").alias("outcome"),
        resolved.getField("ts_ms").alias("resolved_ms"),
        resolved.getField("event_id").alias("resolved_event_id"),
        F.array_sort("c.isr").alias("committed_isr"),
        F.col("c.partition_epoch").alias("partition_epoch"),
        "rejections",
        F.col("r.error").alias("last_error"),
        F.col("r.reason").alias("last_rejection_reason"),
        (resolved.getField("ts_ms") - F.col("p.ts_ms")).alias("latency_ms"),
    )
    return conform(out, to_spark_schema(ISR_CHANGES_SCHEMA))


def _with_superseded(groups: DataFrame, events: DataFrame) -> DataFrame:
    """`_superseded` on each ISR change group of `isr_changes`: the first event after its start at which the
    leader's state moved on without an answer to it: its next change (a new proposal, an ISR update it applied),
    its next leadership change of the partition (`_moved`, from the groups' window), or its broker's crash,
    shutdown or restart. Kafka discards a pending proposal there (`partitionState` replaced) and ignores any later
    answer. Null where none follows."""
    et = F.col("event_type")
    key = [*PARTITION_KEY, "broker_id", "_grp"]
    start = F.coalesce("p", "first")
    groups = groups.withColumn("_start", F.struct(start.getField("ts_ms").alias("ts_ms"),
                                                  start.getField("event_id").alias("event_id")))
    groups = groups.withColumn("_next", F.lead("_start").over(
        Window.partitionBy(*PARTITION_KEY, "broker_id").orderBy("_grp")))
    # A broker's crashes, shutdowns and restarts are few: broadcast onto the groups of its partitions.
    ends = events.where((et == BROKER_LIFECYCLE) & F.col("action").isin("crash", "shutdown", "restart")
                        & F.col("broker_id").isNotNull()).select("run_id", "broker_id",
                                                                 F.struct("ts_ms", "event_id").alias("_at"))
    ended = groups.select(*key, "_start").join(F.broadcast(ends), ["run_id", "broker_id"]).where(
        F.col("_at") > F.col("_start")).groupBy(*key).agg(F.min("_at").alias("_ended"))
    return groups.join(ended, key, "left").withColumn("_superseded", F.least("_next", "_moved", "_ended")).drop(
        "_start", "_next", "_moved", "_ended")
