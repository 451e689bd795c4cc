"""acked_write_lost (§11.4, Jepsen lost-write): every acks=all write acknowledged NONE is on the final leader;
acks1_write_lost: the acks=1 writes that are not (info: Kafka allows their loss), from the same replay.

Mirrors `Checker._check_acked_write_lost` (end of run): the final leader of a partition is the broker of
its last `become_leader` of the highest leader epoch (a broker whose metadata was held up can apply an older
epoch's LeaderAndIsr after the partition moved on); its final log is replayed from its events without collecting them:

* a write is an `append` row exploded to its offsets; the final record at an offset is the latest write
  there, unless a later removal covers it — a truncation (from 0 when `full`, else from its offset, or from
  the base of the batch holding it: `log_content.cuts_of`), a
  `leadership_change` whose LEO is below the replayed one (from that LEO: crash recovery), an append
  below the replayed LEO (from its base: a log has no tail beyond its last append), or a
  `log_start_offset_change` (below the new start). "Later" is a suffix minimum / maximum over the
  replica's window (a running frame over the reversed order), so no range join touches event-sized data;
* an acknowledged offset is lost when it is at or above the final leader's LSO and the final record there
  is absent (-1) or has another checksum. One violation per acknowledgement: the first lost offset, the
  count of lost offsets in the message; `event_id` is -1 (an end-of-run check) and `ts_ms` when the final
  leader lost it, as the checker dates it (`_lost_at`): the last removal of the acknowledged record from it
  when it held it and that removal came after the ack (a crash loss at the crash), else its takeover (its first
  election into an epoch after the ack's), not before the ack; the run's last event's time when neither is known.

Severity (excusable invariant): warning when an `unclean` leader_election of the partition follows the
acknowledgement, or was elected into an epoch after the acknowledging leader's and at or before the final
leader's (its id leads the evidence; `log_content.with_unclean`), else when the final leader's latest crash
loss of the lost offset (`crash_removed`: a truncation while its broker is down, or a leadership_change
reconciling the log after a crash / restart, which records the crash's id) is after the acknowledgement.
The evidence names that loss after the ack (the removal, or the takeover election: what the losses of one
truncation, crash or failover have in common).
Which removal removed a record still there is decided, for the few violating acknowledgements only, from
the final leader's events that write or remove the lost offset, in order: a removal counts when the event
before it wrote the offset (a truncation inside a batch removes records below its target, so the replayed
log [LSO, LEO) can have a hole, and a crash recovery that later cuts through the hole removes nothing).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants import log_content, replica_scan
from jobs.invariants.base import PARTITION, Scan, ScanInputs, text, violation
from replication_core.checker.catalogue import ERROR, INFO, WARNING

INVARIANT = "acked_write_lost"
ACKS1 = "acks1_write_lost"


def _final_replica_rows(rows: DataFrame) -> DataFrame:
    """The final leader's rows among the replica replay `rows`, with the suffix removal bounds after each row."""
    leaders = rows.where((F.col("event_type") == "leadership_change") & (F.col("action") == "become_leader"))
    final = leaders.groupBy(*PARTITION).agg(
        F.max_by("broker_id", F.struct("leader_epoch", "event_id")).alias("broker_id"),
        F.max("leader_epoch").alias("_final_epoch"))
    mine = rows.join(final, [*PARTITION, "broker_id"])
    w = Window.partitionBy(*replica_scan.REPLICA).orderBy("event_id")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    is_lc = F.col("event_type") == "leadership_change"
    # `crashed_since_leadership`: the last crash / restart of the broker after the replica's last
    # leadership_change; a leadership_change that then reports a shorter log is the crash's loss.
    crash_mark = F.when(is_lc, F.struct(F.lit(-1).cast("long").alias("id"), F.lit(None).cast("long").alias("ts"))).when(
        (F.col("event_type") == "broker_lifecycle") & F.col("action").isin("crash", "restart"),
        F.struct(F.col("event_id").alias("id"), F.col("ts_ms").alias("ts")))
    # "Every later row" as a running frame over the reversed order: Spark evaluates a frame ending at
    # unboundedFollowing afresh for every row (quadratic), a frame starting at unboundedPreceding once.
    after = Window.partitionBy(*replica_scan.REPLICA).orderBy(F.desc("event_id")).rowsBetween(
        Window.unboundedPreceding, -1)
    is_trunc = F.col("event_type") == "truncation"
    # A truncation inside a batch removes that batch whole (`Checker._cut_from`): from the batch's base.
    truncations = mine.where(is_trunc).select(*PARTITION, "broker_id", "event_id", "truncate_offset",
                                              F.col("_full").alias("full"))
    cuts = log_content.cuts_within(
        truncations.where(~F.col("full")).drop("full"),
        mine.where(F.col("event_type") == "append").select(
            *PARTITION, "broker_id", "event_id", "base_offset", "last_offset"),
        truncations)
    mine = mine.join(cuts.select(*PARTITION, "broker_id", "event_id", F.col("lo").alias("_cut")),
                     [*PARTITION, "broker_id", "event_id"], "left")
    hi = (F.when(is_trunc, F.when(F.col("_full"), F.lit(0)).otherwise(F.coalesce("_cut", "truncate_offset")))
          .when(is_lc & (F.col("leo") < F.col("_leo")), F.col("leo"))
          .when((F.col("event_type") == "append") & (F.col("base_offset") < F.col("_leo")), F.col("base_offset")))
    lo = F.when(F.col("event_type") == "log_start_offset_change", F.col("log_start_offset"))
    mine = mine.withColumn("_crashed", F.last(crash_mark, True).over(before))
    crashed = F.when(F.col("_crashed.id") >= 0, F.col("_crashed.id"))
    # A removal's "by" (ReplicaState.removed_by) and, when it is a crash loss, its crash_removed id: a
    # truncation while the broker is down, or a leadership_change reconciling a crashed replica's log
    # (both the crash event's id there).
    by = F.when(is_lc & crashed.isNotNull(), crashed).otherwise(F.col("event_id"))
    by_ts = F.when(is_lc & crashed.isNotNull(), F.col("_crashed.ts")).otherwise(F.col("ts_ms"))
    crash_by = (F.when(is_trunc & F.col("_down"), F.col("event_id"))
                .when(is_lc & (F.col("leo") < F.col("_leo")), crashed))
    return mine.select(
        "*",
        by.alias("_by"),
        by_ts.alias("_by_ts"),
        crash_by.alias("_crash_by"),
        hi.cast("long").alias("_drop_from"),
        lo.cast("long").alias("_drop_below"),
        F.min(hi).over(after).cast("long").alias("_later_drop_from"),
        F.max(lo).over(after).cast("long").alias("_later_drop_below"),
        F.first("_lso").over(after.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("_final_lso"),
    )


def _final_records(final_rows: DataFrame) -> DataFrame:
    """(partition, offset) -> the final leader's record there at the end of the run, if any."""
    writes = final_rows.where(F.col("event_type") == "append").select(
        *PARTITION, "event_id", "_later_drop_from", "_later_drop_below",
        F.explode(F.sequence(F.col("base_offset"), F.col("last_offset"))).alias("offset"))
    latest = writes.groupBy(*PARTITION, "offset").agg(
        F.max_by(F.struct("event_id", "_later_drop_from", "_later_drop_below"), "event_id").alias("w"))
    o = F.col("offset")
    alive = (F.col("w._later_drop_from").isNull() | (o < F.col("w._later_drop_from"))) & (
        F.col("w._later_drop_below").isNull() | (o >= F.col("w._later_drop_below")))
    return latest.where(alive).select(*PARTITION, "offset", F.col("w.event_id").alias("final_append"))


def build(inputs: ScanInputs) -> DataFrame:
    """One row per acknowledged acks=all or acks=1 write (`ack_acks`) of a partition with a final leader, with
    what was lost: both invariants read one replay and one explode of the acknowledged offsets."""
    bronze = inputs.bronze
    # Materialised once: the final leaders' rows feed three joins below, the violating acknowledgements
    # (a handful) three more; recomputing the window replay for each costs far more than keeping them.
    final_rows = _final_replica_rows(inputs.shared(replica_scan.replica_replay)).localCheckpoint(eager=True)
    appends = bronze.where(F.col("event_type") == "append").select(
        *PARTITION, F.col("broker_id").alias("_b"), F.col("event_id").alias("_append"),
        F.col("base_offset").alias("_ab"), F.col("last_offset").alias("_al"),
        F.col("batch_checksum").alias("_checksum"))
    records = _final_records(final_rows).join(
        appends.withColumnRenamed("_append", "final_append"), [*PARTITION, "final_append"]).select(
        *PARTITION, "offset", "final_append", F.col("_checksum").alias("final_checksum"))
    leader = final_rows.select(*PARTITION, F.col("broker_id").alias("final_leader"),
                               F.col("_final_lso").alias("final_lso"), "_final_epoch").distinct()
    acks = bronze.where((F.col("event_type") == "produce_ack") & F.col("acks").isin(-1, 1)
                        & (F.col("error") == "NONE") & F.col("base_offset").isNotNull()).select(
        *PARTITION, F.col("event_id").alias("ack_id"), F.col("acks").alias("ack_acks"),
        F.col("broker_id").alias("ack_leader"),
        F.col("base_offset").alias("ack_base"), F.col("last_offset").alias("ack_last"),
        F.col("batch_checksum").alias("ack_checksum"), F.col("leader_epoch").alias("ack_epoch"),
        F.col("ts_ms").alias("ack_ts"))
    per_offset = acks.join(leader, list(PARTITION)).select(
        "*", F.explode(F.sequence("ack_base", "ack_last")).alias("offset")).join(
        records, [*PARTITION, "offset"], "left")
    lost = (F.col("offset") >= F.col("final_lso")) & (
        F.coalesce(F.col("final_checksum"), F.lit(-1)) != F.col("ack_checksum"))
    per_ack = per_offset.groupBy(*PARTITION, "ack_id", "ack_acks", "ack_leader", "ack_base", "ack_last", "ack_checksum",
                                 "ack_epoch", "ack_ts", "final_leader", "_final_epoch").agg(
        F.count(F.when(lost, 1)).alias("lost_count"),
        F.min_by(F.struct("offset", "final_checksum", "final_append"),
                 F.when(lost, F.col("offset"))).alias("first_lost"))
    bad = per_ack.where(F.col("lost_count") > 0).select(
        "*", F.col("first_lost.offset").alias("lost_offset")).localCheckpoint(eager=True)
    return _excuses_and_evidence(bronze, bad, final_rows, appends)


def _excuses_and_evidence(bronze: DataFrame, bad: DataFrame, final_rows: DataFrame, appends: DataFrame) -> DataFrame:
    """Add, for the violating acknowledgements only, the unclean / crash excuses and the evidence ids."""
    o = F.col("lost_offset")
    drops = F.col("_drop_from").isNotNull() & (F.col("_drop_from") <= o)
    writes = (F.col("event_type") == "append") & (F.col("base_offset") <= o) & (o <= F.col("last_offset"))
    covers = drops | (F.col("_drop_below").isNotNull() & (F.col("_drop_below") > o))
    # The removals are few and joined on the partition; the plain appends (most rows) only at the lost offsets,
    # exploded so that the join is on equality, not a comparison of every append with every violation.
    removals = final_rows.where(F.col("_drop_from").isNotNull() | F.col("_drop_below").isNotNull()).select(
        *PARTITION, F.col("event_id").alias("_removal"), "event_type", "base_offset", "last_offset", "_drop_from",
        "_drop_below", "_by", "_by_ts", "_crash_by")
    plain_writes = final_rows.where((F.col("event_type") == "append") & F.col("_drop_from").isNull()).select(
        *PARTITION, F.col("event_id").alias("_removal"),
        F.explode(F.sequence("base_offset", "last_offset")).alias("lost_offset"))
    last_ts = bronze.groupBy("run_id").agg(F.max_by("ts_ms", "event_id").alias("_last_ts"))
    keys = [*PARTITION, "ack_id"]
    # An end-of-run check (event -1): every election of the run is known.
    at_end = bad.withColumn("event_id", F.lit(-1).cast("long"))
    with_unclean = log_content.with_unclean(at_end, log_content.unclean_elections(bronze), "ack_id", "unclean_id",
                                            (F.col("ack_epoch"), F.col("_final_epoch"))).drop("event_id")
    # The events that write or remove the lost offset on the final leader, in order: a removal took a record
    # away (`ReplicaState.removed_by`, `crash_removed`) only when the event before it wrote one there. A
    # truncation inside a batch cuts below its target, so a record can be gone below the replayed LEO.
    lost = bad.select(*keys, "lost_offset", "ack_checksum")
    at_o = lost.join(removals, list(PARTITION)).where(covers).select(
        *keys, "ack_checksum", "_removal", "_by", "_by_ts", "_crash_by", writes.alias("_writes"),
        drops.alias("_drops")).unionByName(
        lost.join(plain_writes, [*PARTITION, "lost_offset"]).select(
            *keys, "ack_checksum", "_removal", F.lit(None).cast("long").alias("_by"),
            F.lit(None).cast("long").alias("_by_ts"), F.lit(None).cast("long").alias("_crash_by"),
            F.lit(True).alias("_writes"), F.lit(False).alias("_drops")))
    # What each write put there (`ReplicaState.removed_record` keys a removal by the checksum it took away).
    at_o = at_o.join(appends.select(*PARTITION, F.col("_append").alias("_removal"), F.col("_checksum").alias("_ck")),
                     [*PARTITION, "_removal"], "left")
    order = Window.partitionBy(*keys).orderBy("_removal")
    held = F.coalesce(F.lag("_writes").over(order), F.lit(False))
    held_ack = F.lag(F.when(F.col("_writes"), F.col("_ck"))).over(order) == F.col("ack_checksum")
    removed = at_o.select("*", held.alias("_held"), held_ack.alias("_held_ack")).where(
        F.col("_held") & F.col("_drops")).groupBy(*keys).agg(
        F.max_by("_by", "_removal").alias("removed_by"),
        # `removed_record[(offset, acknowledged checksum)]`: the last removal of the acknowledged record itself.
        F.max_by(F.struct(F.col("_by").alias("id"), F.col("_by_ts").alias("ts")),
                 F.when(F.col("_held_ack"), F.col("_removal"))).alias("_lost_record"),
        # crash_removed[o] holds the id the latest crash loss of o wrote (processing order).
        F.max_by("_crash_by", F.when(F.col("_crash_by").isNotNull(), F.col("_removal"))).alias("crash_id"))
    acked_append = bad.select(*keys, "ack_leader", "ack_base").join(
        appends.withColumnRenamed("_b", "ack_leader"), [*PARTITION, "ack_leader"]).where(
        (F.col("_ab") <= F.col("ack_base")) & (F.col("ack_base") <= F.col("_al")) & (F.col("_append") < F.col("ack_id"))
    ).groupBy(*keys).agg(F.max("_append").alias("ack_append"))
    # `PartitionState.takeover`: the first election (event order) of the final leader into an epoch after the ack's.
    elections = bronze.where((F.col("event_type") == "leader_election") & F.col("leader_epoch").isNotNull()).select(
        *PARTITION, F.col("event_id").alias("_election"), F.col("leader_epoch").alias("_elected"),
        F.col("leader_id").alias("_elected_leader"), F.col("ts_ms").alias("_election_ts"))
    takeover = bad.select(*keys, "ack_epoch", "final_leader").join(elections, list(PARTITION)).where(
        (F.col("_elected") > F.col("ack_epoch")) & (F.col("_elected_leader") == F.col("final_leader"))).groupBy(
        *keys).agg(F.min_by(F.struct(F.col("_election").alias("id"), F.col("_election_ts").alias("ts")),
                            "_election").alias("_takeover"))
    return (with_unclean.join(removed, keys, "left").join(acked_append, keys, "left").join(takeover, keys, "left")
            .join(last_ts, ["run_id"], "left"))


def acked_write_lost_check() -> Column:
    """acked_write_lost (§11.4): an acknowledged acks=all write missing from the final leader's log."""
    crash = F.when(F.col("crash_id") > F.col("ack_id"), F.col("crash_id"))
    excuse = F.coalesce(F.col("unclean_id"), crash)
    suffix = (F.when(F.col("unclean_id").isNotNull(),
                     text(" (after unclean election event ", F.col("unclean_id"), ": allowed data loss)"))
              .when(crash.isNotNull(),
                    text(" (crash recovery event ", crash, " lost the committed record on that replica: "
                         "durability loss Kafka does not promise to survive)"))
              .otherwise(F.lit("")))
    return _lost(INVARIANT, "write", F.lit(-1), excuse, suffix,
                 F.when(excuse.isNotNull(), F.lit(WARNING)).otherwise(F.lit(ERROR)))


def acks1_write_lost_check() -> Column:
    """acks1_write_lost: an acknowledged acks=1 write missing from the final leader's log (info, never excused)."""
    return _lost(ACKS1, "acks=1 write", F.lit(1), F.lit(None), F.lit(""), F.lit(INFO))


def _lost(invariant: str, what: str, acks: Column, excuse: Column, suffix: Column, severity: Column) -> Column:
    """The violation of `invariant` for a lost acknowledgement of `acks`, as `Checker._check_acked_write_lost`."""
    return violation(
        invariant, (F.col("lost_count") > 0) & (F.col("ack_acks") == acks), replica=F.col("final_leader"),
        event_id=F.lit(-1), ts_ms=_lost_at(), offset=F.col("lost_offset"), expected=F.col("ack_checksum"),
        actual=F.coalesce(F.col("first_lost.final_checksum"), F.lit(-1)),
        evidence=[excuse, F.col("ack_append"), F.col("ack_id"), _loss("id"), F.col("removed_by"),
                  F.col("first_lost.final_append")],
        severity=severity,
        message=F.concat(text(f"{what} acknowledged at ", F.col("ack_base"), "..", F.col("ack_last"), " by broker ",
                              F.col("ack_leader"), " is not on final leader ", F.col("final_leader"), " at ",
                              F.col("lost_offset"), " (", F.col("lost_count"), " offsets)"), suffix),
    )


def _loss(field: str) -> Column:
    """`field` (`id` or `ts`) of the loss (`checker._loss`): the last removal of the acknowledged record from the
    final leader when it held it and that removal came after the ack, else the final leader's takeover; null when
    neither is known."""
    after_ack = F.when(F.col("_lost_record.id") > F.col("ack_id"), F.col(f"_lost_record.{field}"))
    return F.coalesce(after_ack, F.col(f"_takeover.{field}"))


def _lost_at() -> Column:
    """When the final leader lost the write (as the checker dates it): `_loss`, not before the acknowledgement; the
    run's last event's time when no loss is known."""
    return F.when(_loss("ts").isNotNull(), F.greatest(_loss("ts"), F.col("ack_ts"))).otherwise(F.col("_last_ts"))


SCAN = Scan("acked_write_lost", build, {INVARIANT: (acked_write_lost_check,), ACKS1: (acks1_write_lost_check,)})
"""The end-of-run replay of the final leaders' logs and the acknowledged writes checked against them."""
