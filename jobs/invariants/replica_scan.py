"""One window pass over each replica's events: leadership tenure, replayed LEO / LSO, pending AlterPartition.

Mirrors the replay of `replication_core.checker.state` / `checker.py` for the state these invariants need,
with the replica as the window partition (run_id, topic, partition, broker_id) and `event_id` as the
order. The state a check sees is the state *before* its event (`rowsBetween(unboundedPreceding, -1)`):

* tenure — the last `leadership_change` (become_leader -> leading, else following) unless a later
  `broker_lifecycle` crash / shutdown / restart of the broker closed it (`ReplicaState.close_tenure`);
  the replica's epoch `r.epoch` is the last non-null envelope epoch of its leadership_changes (-1 before
  any, and -1 again after a crash / shutdown / restart), the tenure start the last leadership_change's id.
  Lifecycle events are broker-wide, so they are joined onto every partition the broker holds a replica of.
* broker down — the last crash / shutdown (down) or start / restart (up) of the broker.
* LEO — the last of: append (last_offset + 1), truncation (truncate_offset), leadership_change (its leo:
  `_reconcile_log` aligns the replay with it both ways); 0 before any.
* LSO — `log_start_offset_change` sets it; a truncation sets it when `full` (reason `full`, or an offset
  past the replayed LEO), else lowers it to the truncation offset if below (`min`), as a leadership_change
  reporting a shorter log (a crash's loss, a broker added back with a new log) lowers it to its LEO. Computed
  as the value of the last "set" (a segment per set) lowered by the running minimum of the partial
  truncations since.
* pending AlterPartition — a `proposed` isr_change while leading sets it; a committed one, a rejection with
  reason `reset_to_committed` (both while leading), a leadership_change or a tenure-closing lifecycle event
  clears it. isr_change events outside a leader tenure are ignored, as the checker's handler returns early.

* committed ISR — a become_leader's ISR, a committed isr_change's while leading; emptied by a
  become_follower or a tenure-closing lifecycle event; assigned replicas from the last leadership_change, or
  committed isr_change while leading that states them (a registration of the leader's epoch: KRaft keeps the
  epoch when a reassignment adds replicas or reorders them);
  min.insync.replicas from the broker's last `broker_config` (topic override first), else the default.

* leader side, for `jobs.invariants.isr_rules` — the replayed HW (hw_change, or a leadership_change that
  carries one); the epoch start offset (the LEO at the last become_leader that bumped the epoch); the
  replica a pending expansion adds; replica.lag.time.max.ms of the broker's last broker_config; and the
  followers seen so far (`_fseen`: assigned by a leadership_change or named by a follower_fetch_state).

Invariants folded into this pass (§ of /work/shared/docs/kafka-replication.md): hw_monotonic_leader
(§11.1, §2.3), hw_frozen_under_min_isr (§11.2, §2.3), hw_within_log (§11.1, §2.7), leader_no_truncation
(Appendix A, §2.6), isr_single_inflight (§11.7, §2.5) and the committed-isr_change half of isr_nonempty
(§11.7, §9.1); and, through the leader's view of its followers (`jobs.invariants.isr_rules`, which adds
the follower_fetch_state rows and a per-follower window), hw_bound_maximal_isr (§11.2, §2.3, §2.5),
isr_expand_legal and isr_shrink_legal (§11.7, §2.4). Append and broker_config rows are dropped after the
replay (no check reads them): a check on them must change `build`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants import isr_rules
from jobs.invariants.base import PARTITION, Scan, ScanInputs, text, violation
from jobs.invariants.base import is_event as _is
from jobs.transforms.segments import lowest_in_segment
from replication_core.config import ReplicationConfig

REPLICA: tuple[str, ...] = (*PARTITION, "broker_id")
"""A replica: the window partition of this scan."""

REPLICA_EVENT_TYPES: tuple[str, ...] = (
    "leadership_change", "append", "hw_change", "truncation", "log_start_offset_change", "isr_change",
)
CLOSING_ACTIONS: tuple[str, ...] = ("crash", "shutdown", "restart")
"""broker_lifecycle actions that end every tenure of the broker (`_on_broker_lifecycle`)."""

_COLUMNS: tuple[str, ...] = (
    "run_id", "event_id", "ts_ms", "broker_id", "event_type", "topic", "partition", "leader_epoch", "action",
    "role", "isr", "base_offset", "last_offset", "batch_leader_epoch", "leo", "hw", "old_hw", "log_start_offset",
    "old_leo", "truncate_offset", "reason", "isr_state", "replicas", "old_isr",
)
_DEFAULT_MIN_ISR = ReplicationConfig().min_insync_replicas  # a broker without broker_config runs defaults
_DEFAULT_LAG_MAX = ReplicationConfig().replica_lag_time_max_ms
_NO_LSO_LIMIT = 2**62  # larger than any offset: "no partial truncation since the last LSO set"


def replica_events(bronze: DataFrame) -> DataFrame:
    """Each replica's events plus its broker's lifecycle events, one row per (replica, event)."""
    scoped = (F.col("event_type").isin(*REPLICA_EVENT_TYPES) & F.col("broker_id").isNotNull()
              & F.col("topic").isNotNull() & F.col("partition").isNotNull())
    part = bronze.where(scoped).select(*_COLUMNS)
    keys = part.select(*REPLICA).distinct()
    life = bronze.where(F.col("event_type").isin("broker_lifecycle", "broker_config")
                        & F.col("broker_id").isNotNull()).select(
        "run_id", "broker_id", "event_id", "ts_ms", "event_type", "action", "config")
    # Lifecycle and config are broker-wide: copy each event onto the broker's replicas (keys are small).
    return part.unionByName(life.join(keys, ["run_id", "broker_id"]), allowMissingColumns=True)


def annotate(rows: DataFrame) -> DataFrame:
    """Add the replay state before each row (see the module docstring); rows from `replica_events`."""
    return _with_pending(_replay(rows))


REPLAY_COLUMNS: tuple[str, ...] = (
    *REPLICA, "event_id", "ts_ms", "event_type", "action", "leader_epoch", "role", "leo", "truncate_offset",
    "base_offset", "last_offset", "batch_leader_epoch", "log_start_offset", "_leading", "_epoch", "_tenure_start",
    "_down", "_leo", "_lso", "_full", "reason",
)
"""The columns of `replica_replay`: what `jobs.invariants.epoch_cache` and `jobs.invariants.final_log` read (the
latter a log start change's `reason`: whether the records below it are gone or only hidden)."""


def replica_replay(bronze: DataFrame) -> DataFrame:
    """Every replica event of `bronze` with the replay state before it: `annotate(replica_events(bronze))`.

    The epoch-cache and acknowledged-write scans both read it, so an audit builds it once
    (`ScanInputs.shared`), with only the columns they read: the ISR and replica arrays and the broker
    config map would more than double what is written to the block store and read back."""
    return annotate(replica_events(bronze)).select(*REPLAY_COLUMNS)


def _closes() -> Column:
    return _is("broker_lifecycle") & F.col("action").isin(*CLOSING_ACTIONS)


def marks() -> tuple[Column, Column, Column]:
    """The replay's (role, down, LEO) marks: what each event sets, null where it sets nothing.

    role: a leadership_change's role, "none" when a lifecycle event closes the tenure; down: a crash /
    shutdown (True) or start / restart (False); LEO: append last_offset + 1, truncation offset, or a
    leadership_change's leo. Carried forward with `last(..., ignorenulls)` over the replica window.
    """
    is_lc = _is("leadership_change")
    is_life = _is("broker_lifecycle")
    role = F.when(is_lc, F.when(F.col("action") == "become_leader", "leader").otherwise("follower")).when(
        _closes(), "none")
    down = (F.when(is_life & F.col("action").isin("crash", "shutdown"), F.lit(True))
            .when(is_life & F.col("action").isin("restart", "start"), F.lit(False)))
    leo = (F.when(_is("append"), F.col("last_offset") + 1)
           .when(_is("truncation"), F.col("truncate_offset"))
           .when(is_lc, F.col("leo")))
    return role, down, leo


def lso_marks() -> tuple[Column, Column, Column]:
    """(full, set, lowered): a truncation that empties the log (reason `full`, or an offset past the replayed
    LEO `_leo`); the LSO a row sets (a log_start_offset_change's, a full truncation's offset); the offset a
    partial truncation or a shorter leadership_change LEO lowers it to if below. `lso` reads the last two as
    `_lso_set` and `_lso_min`."""
    is_trunc = _is("truncation")
    full = is_trunc & ((F.col("reason") == "full") | (F.col("truncate_offset") > F.col("_leo")))
    lso_set = F.when(_is("log_start_offset_change"), F.col("log_start_offset")).when(full, F.col("truncate_offset"))
    # A leadership_change reporting a shorter log (crash loss, or the new log of a broker added back) lowers
    # the LSO as a partial truncation does (`_reconcile_log`).
    shorter = _is("leadership_change") & (F.col("leo") < F.col("_leo"))
    return full, lso_set, F.when(is_trunc & ~full, F.col("truncate_offset")).when(shorter, F.col("leo"))


def lso(frame: Window, segment: Column) -> Column:
    """The replayed LSO after the last row of `frame` (a replica window ordered by `event_id`), whose LSO
    segment is `segment`; rows carry `_lso_set`, `_lso_min` and `_lso_seg` (see `_replay`).

    The segment's opening "set" (0 in the first segment) lowered by the partial truncations since
    (`lowest_in_segment`): no window per segment and no sort of its own, only the replica window the rest of
    the replay reads."""
    opened = F.coalesce(F.last("_lso_set", True).over(frame), F.lit(0))
    lowered = lowest_in_segment(F.col("_lso_min"), segment, frame)
    return F.least(opened, F.coalesce(lowered, F.lit(_NO_LSO_LIMIT))).cast("long")


def _replay(rows: DataFrame, leader_view: bool = False) -> DataFrame:
    """The replay state before each row from the replica window (the LSO after it, `lso`); with
    `leader_view`, also the leader-side state `isr_rules` reads (rows then carry follower_fetch_state)."""
    w = Window.partitionBy(*REPLICA).orderBy("event_id")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    upto = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    is_lc = _is("leadership_change")
    closes = _closes()
    role_mark, down_mark, leo_mark = marks()
    # r.epoch: set by a leadership_change that carries one, reset to -1 when the broker's process goes.
    lc_epoch = F.when(is_lc, F.col("leader_epoch")).when(closes, F.lit(-1))
    s1 = rows.select(
        "*",
        (F.coalesce(F.last(role_mark, True).over(before), F.lit("none")) == "leader").alias("_leading"),
        F.coalesce(F.last(lc_epoch, True).over(before), F.lit(-1)).alias("_epoch"),
        F.last(F.when(is_lc, F.col("event_id")), True).over(before).alias("_tenure_start"),
        F.coalesce(F.last(down_mark, True).over(before), F.lit(False)).alias("_down"),
        F.coalesce(F.last(leo_mark, True).over(before), F.lit(0)).cast("long").alias("_leo"),
    )
    full, lso_set, lso_min = lso_marks()
    leading_isr = _is("isr_change") & F.col("_leading")
    clears = (leading_isr & ((F.col("isr_state") == "committed")
                             | ((F.col("isr_state") == "rejected") & (F.col("reason") == "reset_to_committed"))))
    pending_mark = (F.when(leading_isr & (F.col("isr_state") == "proposed"), F.col("event_id"))
                    .when(clears | is_lc | closes, F.lit(-1)))
    empty = F.array().cast("array<int>")
    committed_isr = leading_isr & (F.col("isr_state") == "committed")
    isr_mark = (F.when(is_lc & (F.col("action") == "become_leader"), F.array_distinct(F.coalesce("isr", empty)))
                .when(is_lc | closes, empty)
                .when(committed_isr, F.array_distinct(F.coalesce("isr", empty))))
    is_cfg = _is("broker_config")
    topic_key = F.concat(F.lit("topic."), F.col("topic"), F.lit(".min.insync.replicas"))
    min_isr_mark = F.when(is_cfg, F.coalesce(F.col("config")[topic_key].try_cast("int"),
                                             F.col("config")["min.insync.replicas"].try_cast("int"),
                                             F.lit(_DEFAULT_MIN_ISR)))
    lag_max_mark = F.when(is_cfg, F.coalesce(F.col("config")["replica.lag.time.max.ms"].try_cast("long"),
                                             F.lit(_DEFAULT_LAG_MAX)))
    bumps = (is_lc & (F.col("action") == "become_leader")
             & (F.coalesce(F.col("leader_epoch"), F.col("_epoch")) > F.col("_epoch")))
    added = F.array_except(F.array_distinct(F.coalesce("isr", empty)), F.array_distinct(F.coalesce("old_isr", empty)))
    proposed = leading_isr & (F.col("isr_state") == "proposed")
    # The replica a pending expansion adds (-1: none), cleared where the pending proposal is.
    added_mark = (F.when(proposed & (F.col("action") == "expand"),
                         F.when(F.size(added) == 1, added[0]).otherwise(F.lit(-1)))
                  .when(proposed & (F.col("action") == "shrink"), F.lit(-1))
                  .when(clears | is_lc | closes, F.lit(-1)))
    s2 = s1.select(
        "*",
        F.coalesce(F.last(isr_mark, True).over(before), empty).alias("_isr"),
        F.coalesce(F.last(F.when(is_lc, F.coalesce("replicas", empty))
                          .when(committed_isr & F.col("replicas").isNotNull(), F.col("replicas")), True)
                   .over(before), empty).alias("_replicas"),
        F.coalesce(F.last(min_isr_mark, True).over(before), F.lit(_DEFAULT_MIN_ISR)).alias("_min_isr_config"),
        F.last(F.when(is_cfg, F.col("event_id")), True).over(before).alias("_config_event"),
        full.alias("_full"),
        lso_set.alias("_lso_set"),
        lso_min.alias("_lso_min"),
        F.last(pending_mark, True).over(before).alias("_pending_mark"),
        *([
            F.coalesce(F.last(F.when(_is("hw_change") | is_lc, F.col("hw")), True).over(before), F.lit(0))
            .cast("long").alias("_hw"),
            F.array_distinct(F.flatten(F.collect_set(
                F.when(_is("follower_fetch_state"), F.array(F.col("follower_id")))
                .when(is_lc, F.coalesce(F.col("replicas"), empty))).over(before))).alias("_fseen"),
            F.coalesce(F.last(lag_max_mark, True).over(before), F.lit(_DEFAULT_LAG_MAX)).alias("_lag_max"),
            F.last(F.when(bumps, F.coalesce(F.col("leo"), F.col("_leo"))), True).over(before).alias("_epoch_start"),
            F.last(added_mark, True).over(before).alias("_added_mark"),
        ] if leader_view else []),
    ).withColumn("_lso_seg", F.count("_lso_set").over(upto))
    # The LSO after each row (`lso`); the segment columns are not needed past it.
    s2 = s2.withColumn("_lso", lso(upto, F.col("_lso_seg"))).drop("_lso_set", "_lso_min", "_lso_seg")
    if not leader_view:
        return s2
    return s2.withColumn("_pending_added", F.when(F.col("_added_mark") >= 0, F.col("_added_mark")))


def _with_pending(s2: DataFrame) -> DataFrame:
    """Add the pending proposal (`_pending`) to `_replay`'s rows."""
    return s2.withColumn("_pending", F.when(F.col("_pending_mark") >= 0, F.col("_pending_mark")))


def build(inputs: ScanInputs) -> DataFrame:
    """The annotated replica rows this scan's checks read: each event once (`_f` null) plus its copies per
    follower with the leader's view of that follower (`jobs.invariants.isr_rules`)."""
    bronze = inputs.bronze
    rows = replica_events(bronze).unionByName(isr_rules.fetch_state_rows(bronze), allowMissingColumns=True)
    replayed = _replay(rows, leader_view=True).where(~F.col("event_type").isin("append", "broker_config"))
    viewed = isr_rules.with_views(replayed, REPLICA, _closes())
    checked = isr_rules.with_eligibility(_with_pending(viewed), isr_rules.broker_states(bronze))
    return isr_rules.with_bound(checked, Window.partitionBy(*REPLICA).orderBy("event_id"))


def _own(event_type: str) -> Column:
    # The event's own row: its per-follower copies belong to the isr_rules checks.
    return _is(event_type) & F.col("_f").isNull()


def hw_monotonic_leader() -> Column:
    """hw_monotonic_leader (§11.1, §2.3): a leader's hw_change inside its tenure, in its epoch, never lowers
    the HW (`Checker._check_hw_monotonic_leader`)."""
    in_tenure = (_own("hw_change") & F.col("_leading") & (F.col("role") == "leader")
                 & (F.col("leader_epoch").isNull() | (F.col("leader_epoch") == F.col("_epoch"))))
    return violation(
        "hw_monotonic_leader", in_tenure & (F.col("hw") < F.col("old_hw")),
        expected=F.col("old_hw"), actual=F.col("hw"), evidence=[F.col("_tenure_start")],
        message=text("leader HW moved back from ", F.col("old_hw"), " to ", F.col("hw"), " in epoch ",
                     F.col("_epoch")),
    )


def hw_frozen_under_min_isr() -> Column:
    """hw_frozen_under_min_isr (§11.2, §2.3): a leader in tenure advances its HW only while its committed
    ISR has at least min(min.insync.replicas, replication factor) members; the topic's
    `topic.<t>.min.insync.replicas` in the broker's last broker_config wins over the broker value."""
    in_tenure = (_own("hw_change") & F.col("_leading") & (F.col("role") == "leader")
                 & (F.col("leader_epoch").isNull() | (F.col("leader_epoch") == F.col("_epoch"))))
    rf = F.when(F.size("_replicas") > 0, F.size("_replicas")).otherwise(F.size("_isr"))
    min_isr = F.least(F.col("_min_isr_config"), F.greatest(rf, F.lit(1)))
    return violation(
        "hw_frozen_under_min_isr", in_tenure & (F.col("hw") > F.col("old_hw")) & (F.size("_isr") < min_isr),
        expected=min_isr, actual=F.size("_isr"), evidence=[F.col("_config_event")],
        message=text("leader HW advanced to ", F.col("hw"), " with committed ISR ",
                     F.array_join(F.array_sort("_isr"), ","), " below min ISR ", min_isr),
    )


def hw_within_log() -> Column:
    """hw_within_log (§11.1, §2.7): after every hw_change, LSO <= HW <= LEO of the replayed log."""
    is_hw = _own("hw_change")
    above = F.col("hw") > F.col("_leo")
    below = F.col("hw") < F.col("_lso")
    return violation(
        "hw_within_log", is_hw & (above | below),
        offset=F.col("hw"), expected=F.when(above, F.col("_leo")).otherwise(F.col("_lso")), actual=F.col("hw"),
        message=F.when(above, text("HW ", F.col("hw"), " is above the LEO ", F.col("_leo")))
        .otherwise(text("HW ", F.col("hw"), " is below the log start offset ", F.col("_lso"))),
    )


def leader_no_truncation() -> Column:
    """leader_no_truncation (Appendix A, §2.6): no truncation from a replica inside a leader tenure; a
    truncation while its broker is down is crash recovery and is not judged."""
    return violation(
        "leader_no_truncation", _own("truncation") & ~F.col("_down") & F.col("_leading"),
        expected=F.col("old_leo"), actual=F.col("truncate_offset"), evidence=[F.col("_tenure_start")],
        message=text("leader of epoch ", F.col("_epoch"), " truncated its log from ",
                     F.coalesce(F.col("old_leo").cast("string"), F.lit("an end its log did not print")), " to ",
                     F.col("truncate_offset")),
    )


def isr_single_inflight() -> Column:
    """isr_single_inflight (§11.7, §2.5): no AlterPartition proposed while the leader has one pending."""
    proposed = _own("isr_change") & F.col("_leading") & (F.col("isr_state") == "proposed")
    return violation(
        "isr_single_inflight", proposed & F.col("_pending").isNotNull(),
        expected=F.col("_pending"), evidence=[F.col("_pending")],
        message=text("ISR ", F.col("action"), " proposed while proposal ", F.col("_pending"), " is still pending"),
    )


def isr_nonempty_committed() -> Column:
    """isr_nonempty (§11.7, §9.1 LeaderInIsr), committed-ISR half: a committed isr_change of a leader in
    tenure carries a non-empty ISR containing the leader."""
    isr = F.array_distinct(F.coalesce(F.col("isr"), F.array().cast("array<int>")))
    committed = _own("isr_change") & F.col("_leading") & (F.col("isr_state") == "committed") & F.col("isr").isNotNull()
    bad = (F.size(isr) == 0) | ~F.array_contains(isr, F.col("broker_id"))
    return violation(
        "isr_nonempty", committed & bad, actual=F.size(isr),
        message=text("ISR ", F.array_join(F.array_sort(isr), ","), " is empty or lacks leader ", F.col("broker_id")),
    )


SCAN = Scan(
    "replica",
    build,
    {
        "hw_monotonic_leader": (hw_monotonic_leader,),
        "hw_within_log": (hw_within_log,),
        "hw_frozen_under_min_isr": (hw_frozen_under_min_isr,),
        "leader_no_truncation": (leader_no_truncation,),
        "isr_single_inflight": (isr_single_inflight,),
        "isr_nonempty": (isr_nonempty_committed,),
        **isr_rules.CHECKS,
    },
)
"""The replica scan and the checks folded into it."""
