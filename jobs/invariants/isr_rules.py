"""The leader's view of its followers, folded into the replica scan: HW bound, ISR expansion and shrink.

A leader judges its followers by its view of each one (`Replica.scala`; the checker's `View`): the LEO it
last saw (the `fetch_offset` of its last `follower_fetch_state` for that follower), lastCaughtUpTimeMs,
and the event that set them. The replica scan (`jobs.invariants.replica_scan`) replays each replica's own
state; this stage adds the views, which are per (leader replica, follower), as a second window:

* one row per (leader replica event, follower `_f`): a follower_fetch_state goes to its follower; a
  leadership_change or a crash / shutdown / restart is copied to every follower the replica saw so far
  (`_fseen`) and to the ones it assigns; a check row is copied to the followers its check reads (the
  maximal ISR of a rising leader HW, the replica an expansion adds, the replicas a shrink removes). Every
  event also keeps its own row (`_f` null), on which the replica scan's checks run.
* window (replica, `_f`) by `event_id`, state before the row, replayed like the checker's leader-side
  state: a follower_fetch_state (while leading) sets the view; a become_leader that bumps the epoch
  resets it (`Replica.resetReplicaState`): an assigned follower keeps the LEO it had (-1 if none),
  lastCaughtUpTimeMs = the change's time if it is in the new ISR, else 0, and no event; a
  become_follower, a crash / shutdown / restart, or an epoch-bumping become_leader that no longer assigns
  the follower drops the view (LEO -1 for the bound).
* the HW bound takes, over the event's follower rows, the smallest (view LEO, follower): a range window on
  `event_id` within the replica scan's LSO segment, which shares that window's sort.
* whether the controller answered an expansion of a broker it held ISR-ineligible (a controlled_shutdown
  before the proposal, no start / restart since) comes from a small per-broker frame of lifecycle intervals
  broadcast onto the committed rows (`Checker._check_isr_expand_eligible`).

Invariants (§ of /work/shared/docs/kafka-replication.md): hw_bound_maximal_isr (§11.2, §2.3, §2.5),
isr_expand_legal (§11.7, §2.4), isr_shrink_legal (§11.7, §2.4).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants.base import Check, text, violation
from jobs.invariants.base import is_event as _is

INELIGIBLE_FROM: tuple[str, ...] = ("controlled_shutdown",)
"""broker_lifecycle actions after which the controller holds a broker ISR-ineligible until it starts again (a
crash makes it ineligible only once the controller fences it, which no event shows)."""
ELIGIBLE_FROM: tuple[str, ...] = ("start", "restart")
"""broker_lifecycle actions that end such ineligibility."""


def _empty() -> Column:
    return F.array().cast("array<int>")


def _set(column: str) -> Column:
    return F.array_distinct(F.coalesce(F.col(column), _empty()))


def fetch_state_rows(bronze: DataFrame) -> DataFrame:
    """The leaders' follower_fetch_state events, for the replica scan (the leader is the emitting broker)."""
    return bronze.where(_is("follower_fetch_state") & F.col("broker_id").isNotNull() & F.col("topic").isNotNull()
                        & F.col("partition").isNotNull() & F.col("follower_id").isNotNull()).select(
        "run_id", "event_id", "ts_ms", "broker_id", "event_type", "topic", "partition", "leader_epoch",
        "follower_id", "fetch_offset", "last_caught_up_time_ms")


def leader_hw_advance() -> Column:
    """A leader's hw_change inside its tenure and epoch that raises the HW (the checker's HW-advance point)."""
    return (_is("hw_change") & F.col("_leading") & (F.col("role") == "leader")
            & (F.col("leader_epoch").isNull() | (F.col("leader_epoch") == F.col("_epoch")))
            & (F.col("hw") > F.col("old_hw")))


def _proposed(action: str) -> Column:
    return (_is("isr_change") & F.col("_leading") & (F.col("isr_state") == "proposed")
            & (F.col("action") == action))


def _added() -> Column:
    return F.array_except(_set("isr"), _set("old_isr"))


def _removed() -> Column:
    return F.array_except(_set("old_isr"), _set("isr"))


def _one_added() -> Column:
    return (F.size(_added()) == 1) & (F.size(_removed()) == 0)


def _maximal_isr() -> Column:
    pending = F.when(F.col("_pending_added").isNotNull(), F.array(F.col("_pending_added"))).otherwise(_empty())
    return F.array_union(F.col("_isr"), pending)


def with_views(rows: DataFrame, replica: Sequence[str], closes: Column) -> DataFrame:
    """Rows of the replica replay (partitioned by `replica`, with `_leading`, `_epoch`, `_isr`,
    `_pending_added`, `_fseen`) -> one row per (event, follower `_f`) plus the event's own row (`_f` null),
    with the leader's view of `_f` before the event: `_v_exists`, `_v_leo`, `_v_caught_up`, `_v_event`."""
    is_lc = _is("leadership_change")
    follower_of = (F.when(_is("follower_fetch_state"), F.when(F.col("_leading"), F.array(F.col("follower_id")))
                          .otherwise(_empty()))
                   .otherwise(F.concat(F.array(F.lit(None).cast("int")), (
                       F.when(is_lc, F.array_distinct(F.concat(F.col("_fseen"), _set("replicas"))))
                       .when(closes, F.col("_fseen"))
                       .when(leader_hw_advance(), F.array_except(_maximal_isr(), F.array(F.col("broker_id"))))
                       .when(_proposed("expand") & _one_added(), _added())
                       .when(_proposed("shrink"), _removed())
                       .otherwise(_empty())))))
    spread = rows.select("*", F.explode(follower_of).alias("_f"))
    f = F.col("_f")
    bumps = (is_lc & (F.col("action") == "become_leader")
             & (F.coalesce(F.col("leader_epoch"), F.col("_epoch")) > F.col("_epoch")))
    keeps = bumps & F.array_contains(_set("replicas"), f) & (f != F.col("broker_id"))
    drops = (is_lc & ~bumps & (F.col("action") != "become_leader")) | (bumps & ~keeps) | closes
    seen = F.struct(F.lit(True).alias("exists"), F.col("last_caught_up_time_ms").alias("caught_up"),
                    F.col("event_id").alias("event"))
    reset = F.struct(F.lit(True).alias("exists"),
                     F.when(F.array_contains(_set("isr"), f), F.col("ts_ms")).otherwise(F.lit(0)).cast("long")
                     .alias("caught_up"), F.lit(None).cast("long").alias("event"))
    gone = F.struct(F.lit(False).alias("exists"), F.lit(None).cast("long").alias("caught_up"),
                    F.lit(None).cast("long").alias("event"))
    is_state = _is("follower_fetch_state")
    view_mark = F.when(f.isNotNull(), F.when(is_state, seen).when(keeps, reset).when(drops, gone))
    # The reset keeps the LEO it had: no LEO mark, so the last one (or -1 after a drop) carries over.
    leo_mark = F.when(f.isNotNull(), F.when(is_state, F.col("fetch_offset")).when(drops, F.lit(-1).cast("long")))
    before = Window.partitionBy(*replica, "_f").orderBy("event_id").rowsBetween(Window.unboundedPreceding, -1)
    viewed = spread.select(
        "*",
        F.last(view_mark, True).over(before).alias("_view"),
        F.last(leo_mark, True).over(before).alias("_view_leo"),
    )
    exists = F.coalesce(F.col("_view.exists"), F.lit(False))
    return viewed.select(
        *[c for c in viewed.columns if c not in ("_view", "_view_leo")],
        exists.alias("_v_exists"),
        F.when(exists, F.coalesce(F.col("_view_leo"), F.lit(-1))).otherwise(F.lit(-1)).cast("long").alias("_v_leo"),
        F.when(exists, F.col("_view.caught_up")).alias("_v_caught_up"),
        F.when(exists, F.col("_view.event")).alias("_v_event"),
    )


def broker_states(bronze: DataFrame) -> DataFrame:
    """Per broker, the intervals between its controlled shutdowns and starts, and whether the controller holds
    it ISR-ineligible in each (small)."""
    life = bronze.where(_is("broker_lifecycle") & F.col("broker_id").isNotNull()
                        & F.col("action").isin(*INELIGIBLE_FROM, *ELIGIBLE_FROM)).select(
        "run_id", "broker_id", "event_id", "action")
    w = Window.partitionBy("run_id", "broker_id").orderBy("event_id")
    return life.select(
        F.col("run_id").alias("_b_run"), F.col("broker_id").alias("_b_broker"),
        F.col("event_id").alias("_b_start"), F.lead("event_id").over(w).alias("_b_end"),
        F.col("action").isin(*INELIGIBLE_FROM).alias("_b_ineligible"))


def _answered_expansion() -> Column:
    """The controller's answer (committed, alter_partition) to the pending expansion, which it commits: the
    event's own row (`_f` null) inside a tenure, the replica the pending proposal adds not yet in the ISR."""
    added = F.col("_pending_added")
    return (_is("isr_change") & F.col("_f").isNull() & F.col("_leading") & (F.col("isr_state") == "committed")
            & (F.col("reason") == "alter_partition") & F.col("_pending").isNotNull() & added.isNotNull()
            & ~F.array_contains(F.col("_isr"), added) & F.array_contains(_set("isr"), added))


def with_eligibility(rows: DataFrame, states: DataFrame) -> DataFrame:
    """Add `_b_ineligible` / `_b_start` (the broker's interval at the event) for the replica a committed
    answer adds to the ISR (null elsewhere). `rows` carry the pending proposal (`_pending`, `_pending_added`)."""
    probed = rows.withColumn("_b_probe", F.when(_answered_expansion(), F.col("_pending_added")))
    s = states
    cond = ((probed["run_id"] == s["_b_run"]) & (probed["_b_probe"] == s["_b_broker"])
            & (s["_b_start"] < probed["event_id"]) & (s["_b_end"].isNull() | (s["_b_end"] > probed["event_id"])))
    # A handful of lifecycle intervals: broadcast, so the replica rows keep their partitioning.
    return probed.join(F.broadcast(s), cond, "left").drop("_b_run", "_b_broker", "_b_end")


def with_bound(rows: DataFrame, window: Window) -> DataFrame:
    """Add `_bound_min`: over the follower rows of a rising leader HW event, the smallest (view LEO, follower,
    view event). `window` is partitioned within the replica and ordered by `event_id` alone, so a range frame
    of 0 is exactly the event's rows (the replica scan passes its replica window)."""
    same_event = window.rangeBetween(0, 0)
    candidate = F.when(F.col("_f").isNotNull() & leader_hw_advance(), F.struct(
        F.col("_v_leo").alias("leo"), F.col("_f").alias("f"), F.col("_v_event").alias("event")))
    return rows.withColumn("_bound_min", F.min(candidate).over(same_event))


def hw_bound_maximal_isr() -> Column:
    """hw_bound_maximal_isr (§11.2, §2.3, §2.5): at a leader HW advance, HW <= min(leader LEO, the leader's
    view of the LEO of each follower of the maximal ISR — committed ISR plus a pending expansion)."""
    binding = F.col("_bound_min.leo") < F.col("_leo")
    bound = F.when(binding, F.col("_bound_min.leo")).otherwise(F.col("_leo"))
    who = F.when(binding, text("replica ", F.col("_bound_min.f"), "'s LEO as the leader saw it")).otherwise(
        F.lit("the leader's LEO"))
    return violation(
        "hw_bound_maximal_isr", F.col("_f").isNull() & leader_hw_advance() & (F.col("hw") > bound),
        expected=bound, actual=F.col("hw"), evidence=[F.when(binding, F.col("_bound_min.event"))],
        message=text("leader HW advanced to ", F.col("hw"), " above ", who, " (", bound, "); maximal ISR ",
                     F.array_join(F.array_sort(_maximal_isr()), ", ")),
    )


def isr_expand_size() -> Column:
    """isr_expand_legal (§11.7, §2.4): an expansion adds exactly one replica and removes none."""
    return violation(
        "isr_expand_legal", F.col("_f").isNull() & _proposed("expand") & ~_one_added(), actual=F.size(_added()),
        message=text("expansion must add exactly one replica, ", F.array_join(F.array_sort(_set("old_isr")), ","),
                     " -> ", F.array_join(F.array_sort(_set("isr")), ",")),
    )


def isr_expand_member() -> Column:
    """isr_expand_legal (§11.7, §2.4): the added replica is assigned, not in the committed ISR, and its LEO
    (leader's view) >= max(leader HW, epoch start offset)."""
    f = F.col("_f")
    need = F.greatest(F.col("_hw"), F.coalesce(F.col("_epoch_start"), F.lit(0))).cast("long")
    unassigned = (F.size("_replicas") > 0) & ~F.array_contains("_replicas", f)
    in_isr = F.array_contains("_isr", f)
    behind = F.col("_v_leo") < need
    problem = (F.when(unassigned, text("replica ", f, " is not assigned"))
               .when(in_isr, text("replica ", f, " is already in the committed ISR"))
               .when(behind, text("replica ", f, "'s LEO ", F.col("_v_leo"), " is below max(leader HW ",
                                  F.col("_hw"), ", epoch start offset ", F.col("_epoch_start"), ")")))
    return violation(
        "isr_expand_legal", f.isNotNull() & _proposed("expand") & _one_added() & problem.isNotNull(),
        replica=f, expected=need, actual=F.col("_v_leo"), evidence=[F.col("_v_event")],
        message=text("illegal ISR expansion: ", problem),
    )


def isr_expand_eligible() -> Column:
    """isr_expand_legal (§11.7, §2.4), eligibility: the controller does not commit an expansion of a broker in
    controlled shutdown since before the proposal, not started since (`Checker._check_isr_expand_eligible`)."""
    f = F.col("_pending_added")
    return violation(
        "isr_expand_legal", _answered_expansion() & F.coalesce(F.col("_b_ineligible"), F.lit(False))
        & (F.col("_b_start") < F.col("_pending")),
        replica=f, evidence=[F.col("_b_start"), F.col("_pending")],
        message=text("illegal ISR expansion: the controller committed broker ", f, ", in controlled shutdown since "
                     "event ", F.col("_b_start"), ", proposed at event ", F.col("_pending"), " (not ISR-eligible)"),
    )


def isr_shrink_leader() -> Column:
    """isr_shrink_legal (§11.7, §2.4): a shrink never removes the leader."""
    return violation(
        "isr_shrink_legal",
        F.col("_f").isNull() & _proposed("shrink") & ~F.array_contains(_set("isr"), F.col("broker_id")),
        message=text("shrink ", F.array_join(F.array_sort(_set("old_isr")), ","), " -> ",
                     F.array_join(F.array_sort(_set("isr")), ","), " removes the leader"),
    )


def isr_shrink_member() -> Column:
    """isr_shrink_legal (§11.7, §2.4): a removed follower the leader has a view of was out of sync: its LEO
    differs from the leader's and it last caught up more than replica.lag.time.max.ms ago."""
    behind = F.col("ts_ms") - F.col("_v_caught_up")
    caught_up = (F.col("_v_leo") == F.col("_leo")) | (behind <= F.col("_lag_max"))
    return violation(
        "isr_shrink_legal",
        F.col("_f").isNotNull() & _proposed("shrink") & F.array_contains(_set("isr"), F.col("broker_id"))
        & F.col("_v_exists") & caught_up,
        replica=F.col("_f"), expected=F.col("_lag_max"), actual=behind, evidence=[F.col("_v_event")],
        message=text("replica ", F.col("_f"), " removed from the ISR while caught up (LEO ", F.col("_v_leo"),
                     " vs leader LEO ", F.col("_leo"), ", last caught up ", behind, " ms ago)"),
    )


CHECKS: dict[str, tuple[Check, ...]] = {
    "hw_bound_maximal_isr": (hw_bound_maximal_isr,),
    "isr_expand_legal": (isr_expand_size, isr_expand_member, isr_expand_eligible),
    "isr_shrink_legal": (isr_shrink_leader, isr_shrink_member),
}
"""The checks of this stage, by invariant (registered in the replica scan)."""
