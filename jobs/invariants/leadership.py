"""One pass over leadership events: leader_epoch_monotonic (§11.8) and isr_nonempty (§11.7, §9.1).

Rows are the replicas' `leadership_change` events (the leader is the emitting broker) and the controller's
`leader_election` events (the leader is `leader_id`, null when the partition went offline), ordered by
`event_id` within a partition. What the reference checker keeps and these windows rebuild:

* a replica's epoch at a leadership_change is its envelope `leader_epoch`, or its previous epoch when
  absent (-1 before any); its `max_epoch` is the maximum over its earlier leadership_changes;
* the partition's election epoch is the maximum epoch of the earlier elections that carry one, and the
  election that set it last is the evidence;
* "one leader per epoch": the first claim of an epoch (a become_leader, or an election with a leader and
  an epoch) names its leader; any later claim of that epoch by another leader is a violation (the first
  claim stays the reference, as `PartitionState.epoch_leader` is only set when empty).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants.base import PARTITION, Scan, ScanInputs, text, violation

ELECTION = "election"


def build(inputs: ScanInputs) -> DataFrame:
    """Leadership rows (kind = become_leader / become_follower / election) with the state the checks need."""
    bronze = inputs.bronze
    scoped = F.col("topic").isNotNull() & F.col("partition").isNotNull()
    lc = bronze.where((F.col("event_type") == "leadership_change") & scoped & F.col("broker_id").isNotNull()).select(
        *PARTITION, "event_id", "ts_ms", F.col("broker_id").alias("leader"), F.col("action").alias("kind"), "isr",
        "leader_epoch")
    wr = Window.partitionBy(*PARTITION, "leader").orderBy("event_id")
    before_r = wr.rowsBetween(Window.unboundedPreceding, -1)
    lc = lc.withColumn("epoch", F.coalesce(F.col("leader_epoch"), F.last("leader_epoch", True).over(before_r),
                                           F.lit(-1)))
    lc = lc.select("*", F.max("epoch").over(before_r).alias("_max_epoch"),
                   F.last("event_id").over(before_r).alias("_prev_change"))
    el = bronze.where((F.col("event_type") == "leader_election") & scoped).select(
        *PARTITION, "event_id", "ts_ms", F.col("leader_id").alias("leader"), F.lit(ELECTION).alias("kind"), "isr",
        "leader_epoch", F.col("leader_epoch").alias("epoch"))
    rows = lc.unionByName(el, allowMissingColumns=True)
    wp = Window.partitionBy(*PARTITION).orderBy("event_id").rowsBetween(Window.unboundedPreceding, -1)
    dated = (F.col("kind") == ELECTION) & F.col("epoch").isNotNull()
    claims = (F.col("kind") == "become_leader") | (dated & F.col("leader").isNotNull())
    we = Window.partitionBy(*PARTITION, "epoch").orderBy("event_id").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    return rows.select(
        "*",
        dated.alias("_dated_election"),
        claims.alias("_claim"),
        F.max(F.when(dated, F.col("epoch"))).over(wp).alias("_election_epoch"),
        F.last(F.when(dated, F.col("event_id")), True).over(wp).alias("_election_event"),
        F.first(F.when(claims, F.struct(F.col("leader").alias("leader"), F.col("event_id").alias("event_id"))),
                True).over(we).alias("_first_claim"),
    )


def replica_epoch_monotonic() -> Column:
    """leader_epoch_monotonic (§11.8): a replica's leadership_change epochs never go back."""
    change = F.col("kind").isin("become_leader", "become_follower")
    return violation(
        "leader_epoch_monotonic", change & (F.col("epoch") < F.col("_max_epoch")), replica=F.col("leader"),
        expected=F.col("_max_epoch"), actual=F.col("epoch"), evidence=[F.col("_prev_change")],
        message=text("replica went back from leader epoch ", F.col("_max_epoch"), " to ", F.col("epoch")),
    )


def election_epoch_monotonic() -> Column:
    """leader_epoch_monotonic (§11.8): elections strictly increase the leader epoch (an offline election
    may repeat it)."""
    prev = F.col("_election_epoch")
    bad = F.col("_dated_election") & prev.isNotNull() & (
        (F.col("epoch") < prev) | (F.col("leader").isNotNull() & (F.col("epoch") == prev)))
    return violation(
        "leader_epoch_monotonic", bad, replica=None, expected=prev, actual=F.col("epoch"),
        evidence=[F.col("_election_event")],
        message=text("election in epoch ", F.col("epoch"), " does not increase the previous epoch ", prev),
    )


def one_leader_per_epoch() -> Column:
    """leader_epoch_monotonic (§11.8): one leader per leader epoch."""
    first = F.col("_first_claim")
    return violation(
        "leader_epoch_monotonic", F.col("_claim") & (first["leader"] != F.col("leader")), replica=F.col("leader"),
        expected=first["leader"], actual=F.col("leader"), evidence=[first["event_id"]],
        message=text("two leaders in epoch ", F.col("epoch"), ": ", first["leader"], " and ", F.col("leader")),
    )


def isr_nonempty_leadership() -> Column:
    """isr_nonempty (§11.7, §9.1 LeaderInIsr): a become_leader, and an election with a leader, carry a
    non-empty ISR that contains the leader."""
    isr = F.array_distinct(F.coalesce(F.col("isr"), F.array().cast("array<int>")))
    # A null ISR is not known (a broker log line of a version that does not print it), not empty.
    applies = F.col("isr").isNotNull() & (
        (F.col("kind") == "become_leader") | ((F.col("kind") == ELECTION) & F.col("leader").isNotNull()))
    bad = (F.size(isr) == 0) | ~F.array_contains(isr, F.col("leader"))
    return violation(
        "isr_nonempty", applies & bad, replica=F.col("leader"), actual=F.size(isr),
        message=text("ISR ", F.array_join(F.array_sort(isr), ","), " is empty or lacks leader ", F.col("leader")),
    )


SCAN = Scan(
    "leadership",
    build,
    {
        "leader_epoch_monotonic": (replica_epoch_monotonic, election_epoch_monotonic, one_leader_per_epoch),
        "isr_nonempty": (isr_nonempty_leadership,),
    },
)
"""The leadership scan and the checks folded into it."""
