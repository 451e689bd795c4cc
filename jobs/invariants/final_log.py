"""acked_write_lost (§11.4, Jepsen lost-write): every acks=all write acknowledged NONE is on the final leader;
acks1_write_lost: the acks=1 writes that are not (info: Kafka allows their loss), from the same replay.

Mirrors `Checker._check_acked_write_lost` (end of run): the final leader of a partition is the broker of
its last `become_leader` of the highest leader epoch (a broker whose metadata was held up can apply an older
epoch's LeaderAndIsr after the partition moved on); its final log is replayed from its events without collecting them:

* a write is an `append` row exploded to its offsets; the final record at an offset is the latest write
  there, unless a later removal covers it — a truncation (from 0 when `full`, else from its offset, or from
  the base of the batch holding it: `log_content.cuts_of`), a
  `leadership_change` whose LEO is below the replayed one (from that LEO: crash recovery), an append
  below the replayed LEO (from its base: a log has no tail beyond its last append), or the last later
  `log_start_offset_change` (below its start: a restart's may step back to records a raise had hidden). "Later"
  is a suffix minimum / last value over the replica's window (a running frame over the reversed order), so no
  range join touches event-sized data;
* an acknowledged offset is lost when it is at or above the final leader's LSO and the final record there
  is absent (-1) or has another checksum. One violation per acknowledgement: the first lost offset, the
  count of lost offsets in the message; `event_id` is -1 (an end-of-run check) and `ts_ms` when the write
  last left the leader in office after the ack, as the checker dates it (`_lost_at`, `_office_loss`): a leader
  without it taking office (the latest become_leader of the highest epoch so far), or its removal from the leader
  in office (a truncation, an overwrite, a crash loss dated at the crash; retention is no loss: a write on the
  leader stays on while the leader's log starts above its offset, but only the record itself brings back one that
  left); when it was never on the leader in office from the ack on (a replaced leader acknowledged it), at the ack,
  naming the become_leader that put the leader in office; the run's last event's time when no leader was in office
  at the ack.

Severity (excusable invariant): warning when an `unclean` leader_election of the partition follows the
acknowledgement, or was elected into an epoch after the acknowledging leader's and at or before the final
leader's (its id leads the evidence; `log_content.with_unclean`), else when the final leader's latest crash
loss of the lost offset (`crash_removed`: a truncation while its broker is down, or a leadership_change
reconciling the log after a crash / restart, which records the crash's id) is after the acknowledgement.
The evidence names that loss after the ack (the removal, or the become_leader: what the losses of one
crash or failover have in common), and where the record left the log of the leader that acknowledged it
(`_acking_leader_removal`: a deposed leader's truncation as it rejoined as a follower).
Which removal removed a record still there is decided, for the few violating acknowledgements only, from
the final leader's events that write or remove the lost offset, in order: a removal counts when the event
before it wrote the offset (a truncation inside a batch removes records below its target, so the replayed
log [LSO, LEO) can have a hole, and a crash recovery that later cuts through the hole removes nothing).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants import log_content, replica_scan
from jobs.invariants.base import PARTITION, Scan, ScanInputs, checkpointed, text, violation
from replication_core.checker.catalogue import ERROR, INFO, WARNING

INVARIANT = "acked_write_lost"
ACKS1 = "acks1_write_lost"


def _become_leader() -> Column:
    return (F.col("event_type") == "leadership_change") & (F.col("action") == "become_leader")


def _final_replica_rows(rows: DataFrame) -> DataFrame:
    """The final leader's rows among the replica replay `rows`, with the suffix removal bounds after each row."""
    final = rows.where(_become_leader()).groupBy(*PARTITION).agg(
        F.max_by("broker_id", F.struct("leader_epoch", "event_id")).alias("broker_id"),
        F.max("leader_epoch").alias("_final_epoch"))
    mine = _with_removals(rows.join(final, [*PARTITION, "broker_id"]))
    # "Every later row" as a running frame over the reversed order: Spark evaluates a frame ending at
    # unboundedFollowing afresh for every row (quadratic), a frame starting at unboundedPreceding once.
    after = Window.partitionBy(*replica_scan.REPLICA).orderBy(F.desc("event_id")).rowsBetween(
        Window.unboundedPreceding, -1)
    return mine.select(
        "*",
        F.min("_drop_from").over(after).alias("_later_drop_from"),
        # The last later start, not the highest: a restart's start (reason log_load) may step back to records a
        # raise had hidden, which are the log's again.
        F.first("_start_at", ignorenulls=True).over(after).alias("_later_drop_below"),
        F.first("_lso").over(after.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("_final_lso"),
    )


def _with_removals(rows: DataFrame) -> DataFrame:
    """Replica replay `rows` with what each removes from its replica's log (`Checker._drop_from` and the log start
    offset's deletion): records from `_drop_from` up, below `_drop_below` (a start that segment deletion or a restart
    set: below a raised one, `_start_at`, the records are only hidden); `_by` / `_by_ts` the removal's event and
    time as the checker records them (a crash loss: the crash's), `_crash_by` its `crash_removed` id."""
    w = Window.partitionBy(*replica_scan.REPLICA).orderBy("event_id")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    is_lc = F.col("event_type") == "leadership_change"
    # `crashed_since_leadership`: the last crash / restart of the broker after the replica's last
    # leadership_change; a leadership_change that then reports a shorter log is the crash's loss.
    crash_mark = F.when(is_lc, F.struct(F.lit(-1).cast("long").alias("id"), F.lit(None).cast("long").alias("ts"))).when(
        (F.col("event_type") == "broker_lifecycle") & F.col("action").isin("crash", "restart"),
        F.struct(F.col("event_id").alias("id"), F.col("ts_ms").alias("ts")))
    is_trunc = F.col("event_type") == "truncation"
    # A truncation inside a batch removes that batch whole (`Checker._cut_from`): from the batch's base.
    truncations = rows.where(is_trunc).select(*PARTITION, "broker_id", "event_id", "truncate_offset",
                                              F.col("_full").alias("full"))
    cuts = log_content.cuts_within(
        truncations.where(~F.col("full")).drop("full"),
        rows.where(F.col("event_type") == "append").select(
            *PARTITION, "broker_id", "event_id", "base_offset", "last_offset"),
        truncations)
    rows = rows.join(cuts.select(*PARTITION, "broker_id", "event_id", F.col("lo").alias("_cut")),
                     [*PARTITION, "broker_id", "event_id"], "left")
    hi = (F.when(is_trunc, F.when(F.col("_full"), F.lit(0)).otherwise(F.coalesce("_cut", "truncate_offset")))
          .when(is_lc & (F.col("leo") < F.col("_leo")), F.col("leo"))
          .when((F.col("event_type") == "append") & (F.col("base_offset") < F.col("_leo")), F.col("base_offset")))
    starts = F.col("event_type") == "log_start_offset_change"
    # A raise hides the records below it, which a restart's start (log_load) may bring back; below a start that
    # segment deletion or a restart set, they are gone (`ReplicaState.below_start`). A log line may not say why.
    forgets = starts & (F.col("reason").isNull() | F.col("reason").isin("segment_deletion", "log_load"))
    rows = rows.withColumn("_crashed", F.last(crash_mark, True).over(before))
    crashed = F.when(F.col("_crashed.id") >= 0, F.col("_crashed.id"))
    # A removal's "by" (ReplicaState.removed_by) and, when it is a crash loss, its crash_removed id: a
    # truncation while the broker is down, or a leadership_change reconciling a crashed replica's log
    # (both the crash event's id there).
    by = F.when(is_lc & crashed.isNotNull(), crashed).otherwise(F.col("event_id"))
    by_ts = F.when(is_lc & crashed.isNotNull(), F.col("_crashed.ts")).otherwise(F.col("ts_ms"))
    crash_by = (F.when(is_trunc & F.col("_down"), F.col("event_id"))
                .when(is_lc & (F.col("leo") < F.col("_leo")), crashed))
    return rows.select(
        "*",
        by.alias("_by"),
        by_ts.alias("_by_ts"),
        crash_by.alias("_crash_by"),
        hi.cast("long").alias("_drop_from"),
        F.when(forgets, F.col("log_start_offset")).cast("long").alias("_drop_below"),
        F.when(starts, F.col("log_start_offset")).cast("long").alias("_start_at"),
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
    replay = inputs.shared(replica_scan.replica_replay)
    final_rows = checkpointed(_final_replica_rows(replay))
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
    # Usually none (a clean run): `checkpointed` lets the optimiser drop the evidence's joins below.
    bad = checkpointed(per_ack.where(F.col("lost_count") > 0).select(
        "*", F.col("first_lost.offset").alias("lost_offset")))
    keys = [*PARTITION, "ack_id"]
    # The acknowledging leader's append of each violating acknowledgement: the latest append of the leader that wrote
    # the acknowledged base offset before the ack (`_ack_append_last`: the last offset it wrote).
    acked_append = bad.select(*keys, "ack_leader", "ack_base").join(
        appends.withColumnRenamed("_b", "ack_leader"), [*PARTITION, "ack_leader"]).where(
        (F.col("_ab") <= F.col("ack_base")) & (F.col("ack_base") <= F.col("_al")) & (F.col("_append") < F.col("ack_id"))
    ).groupBy(*keys).agg(F.max("_append").alias("ack_append"), F.max_by("_al", "_append").alias("_ack_append_last"))
    evidence = _excuses_and_evidence(bronze, bad, final_rows).join(acked_append.drop("_ack_append_last"), keys, "left")
    return evidence.join(_office_loss(bad, replay, appends, acked_append), keys, "left")


def _excuses_and_evidence(bronze: DataFrame, bad: DataFrame, final_rows: DataFrame) -> DataFrame:
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
    order = Window.partitionBy(*keys).orderBy("_removal")
    held = F.coalesce(F.lag("_writes").over(order), F.lit(False))
    removed = at_o.select("*", held.alias("_held")).where(F.col("_held") & F.col("_drops")).groupBy(*keys).agg(
        F.max_by("_by", "_removal").alias("removed_by"),
        # crash_removed[o] holds the id the latest crash loss of o wrote (processing order).
        F.max_by("_crash_by", F.when(F.col("_crash_by").isNotNull(), F.col("_removal"))).alias("crash_id"))
    return with_unclean.join(removed, keys, "left").join(last_ts, ["run_id"], "left")


def _loss_struct(event: Column, ts: Column, crash: Column | None = None) -> Column:
    """(id, ts, crash) of an event that can take a write from the leader in office; `crash`: a crash loss
    (`Watch.left_in_crash`)."""
    return F.struct(event.alias("id"), ts.alias("ts"),
                    (F.lit(False) if crash is None else crash).alias("crash"))


def _office_loss(bad: DataFrame, replay: DataFrame, appends: DataFrame, acked_append: DataFrame) -> DataFrame:
    """Per violating acknowledgement, when its record at the lost offset last left the leader in office after the ack
    (`_left`, `Watch.left`) and the become_leader that put the leader in office at the ack (`_office_since`), both
    (id, ts) structs, as the checker follows them.

    The leader in office after an event is the broker of the latest become_leader of the highest epoch so far
    (`PartitionState.last_leader`); the write is on it after an event when its latest write or removal at the
    offset up to that event wrote the acknowledged checksum, or when the write was on it before and its log start
    offset (`_lso` after its latest row that moved it) is above the offset: retention deletes nothing that counts
    as lost, but only the record itself brings back a write that left (`PartitionState.rewatch`).
    The record left it at an event when it was there before and is not after: dated by the removal (`_by`,
    `_by_ts`: a crash loss at the crash) when the event removed it from the leader in office (every move of a log
    start across the offset is such an event), else by the event (a leader without it taking office). Few rows:
    the violating acknowledgements' partitions, the events at their lost offsets and the log start moves."""
    keys = [*PARTITION, "ack_id"]
    lost = bad.select(*keys, "lost_offset", "ack_checksum")
    # Materialised here and below: the frames each step reads several times, which as one plan ran ~100 broadcast jobs.
    rows = checkpointed(replay.join(F.broadcast(bad.select(*PARTITION).distinct()), list(PARTITION), "left_semi"))
    # The become_leaders that put a leader in office: at or above every earlier one's epoch.
    earlier = Window.partitionBy(*PARTITION).orderBy("event_id").rowsBetween(Window.unboundedPreceding, -1)
    office = rows.where(_become_leader()).select(
        *PARTITION, "event_id", "broker_id", "ts_ms", "leader_epoch",
        F.max("leader_epoch").over(earlier).alias("_top")).where(
        F.col("_top").isNull() | (F.col("leader_epoch") >= F.col("_top"))).select(
        *PARTITION, F.col("event_id").alias("_at"), F.col("broker_id").alias("_leader"),
        F.col("ts_ms").alias("_since_ts"))
    o = F.col("lost_offset")
    writes = (F.col("event_type") == "append") & (F.col("base_offset") <= o) & (o <= F.col("last_offset"))
    removes = (F.col("_drop_from") <= o) | (F.col("_drop_below") > o)
    replayed = _with_removals(rows)
    touches = checkpointed(lost.join(replayed, list(PARTITION)).where(writes | removes).join(
        appends.select(*PARTITION, F.col("_append").alias("event_id"), "_checksum"), [*PARTITION, "event_id"], "left"
    ).select(*keys, F.col("event_id").alias("_at"), F.col("broker_id").alias("_on"),
             F.coalesce(writes & (F.col("_checksum") == F.col("ack_checksum")), F.lit(False)).alias("_holds"),
             F.when(writes, _loss_struct(F.col("event_id"), F.col("ts_ms"))).otherwise(
                 _loss_struct(F.col("_by"), F.col("_by_ts"), F.col("_crash_by").isNotNull())).alias("_removal")))
    # Every row that moved a replica's log start offset (`_lso` after it), 0 before any.
    replica = Window.partitionBy(*replica_scan.REPLICA).orderBy("event_id")
    moves = rows.select(*PARTITION, "broker_id", "event_id", "ts_ms", "_lso",
                        F.coalesce(F.lag("_lso").over(replica), F.lit(0)).alias("_was")).where(
        F.col("_lso") != F.col("_was")).select(
        *PARTITION, F.col("broker_id").alias("_mover"), F.col("event_id").alias("_t"), "_lso", "_was",
        _loss_struct(F.col("event_id"), F.col("ts_ms")).alias("_move"))
    # The moves across a lost offset (most are also removals there; one that lowers a log start is not).
    across = lost.join(moves, list(PARTITION)).where(
        (F.least("_lso", "_was") <= o) & (o < F.greatest("_lso", "_was"))).select(
        *keys, F.col("_t").alias("_at"), "_mover", "_move")
    # The points where the write can leave the leader in office: the ack, then every office, touch or move after it.
    office_at = lost.join(office, list(PARTITION))
    points = bad.select(*keys, F.col("ack_id").alias("_at")).unionByName(
        office_at.select(*keys, "_at").unionByName(touches.select(*keys, "_at")).unionByName(
            across.select(*keys, "_at")).where(F.col("_at") > F.col("ack_id"))).distinct()
    # As of each point: the leader in office, then whether it holds the record.
    in_office = points.join(office_at.withColumnRenamed("_at", "_o"), keys).where(F.col("_o") <= F.col("_at")).groupBy(
        *keys, "_at").agg(F.max_by(F.struct("_leader", F.col("_o").alias("id"), F.col("_since_ts").alias("ts")),
                                   "_o").alias("_office"))
    points = checkpointed(points.join(in_office, [*keys, "_at"], "left"))
    held = points.join(touches.withColumnRenamed("_at", "_t").drop("_removal"), keys).where(
        (F.col("_on") == F.col("_office._leader")) & (F.col("_t") <= F.col("_at"))).groupBy(*keys, "_at").agg(
        F.max_by("_holds", "_t").alias("_held"))
    # The leader in office's log start offset as of each point.
    starts = points.join(moves, list(PARTITION)).where(
        (F.col("_mover") == F.col("_office._leader")) & (F.col("_t") <= F.col("_at"))).groupBy(*keys, "_at").agg(
        F.max_by("_lso", "_t").alias("_start"))
    order = Window.partitionBy(*keys).orderBy("_at")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    holds = F.coalesce(F.col("_held"), F.lit(False))
    below_start = F.col("lost_offset") < F.coalesce(F.col("_start"), F.lit(0))
    # On after a point (`PartitionState.rewatch`): the leader held the record at the latest point where it did, and at
    # every point since its log start was above the offset (what retention deleted is kept, but only the record
    # itself brings a write that left back). The ack's point is on when the leader holds the record.
    last_held = F.max(F.when(holds, F.col("_at"))).over(upto)
    last_out = F.max(F.when(~holds & ~below_start, F.col("_at"))).over(upto)
    points = points.join(held, [*keys, "_at"], "left").join(starts, [*keys, "_at"], "left").join(
        lost.select(*keys, "lost_offset"), keys).select(
        *keys, "_at", "_office", (last_held.isNotNull() & (last_out.isNull() | (last_held > last_out))).alias("_held")
    ).join(touches.select(*keys, "_at", "_on", "_removal"), [*keys, "_at"], "left").join(
        across, [*keys, "_at"], "left")
    was_held = F.coalesce(F.lag("_held").over(order), F.lit(False))
    was_leader = F.lag("_office._leader").over(order)
    # Removed from the leader in office by the event (or its log start lowered past it), or a leader without it
    # took office there.
    why = (F.when(F.col("_on") == was_leader, F.col("_removal")).when(F.col("_mover") == was_leader, F.col("_move"))
           .otherwise(_loss_struct(F.col("_at"), F.col("_office.ts"))))
    left = was_held & ~F.col("_held")
    steps = points.select(*keys, "_at", "_office", left.alias("_left"), why.alias("_why"))
    return steps.groupBy(*keys).agg(
        F.max_by("_why", F.when(F.col("_left"), F.col("_at"))).alias("_left"),
        F.max_by(F.struct(F.col("_office.id").alias("id"), F.col("_office.ts").alias("ts")),
                 F.when(F.col("_at") == F.col("ack_id"), F.lit(1))).alias("_office_since")).join(
        _acking_leader_removal(bad, replayed, acked_append), keys, "left")


def _acking_leader_removal(bad: DataFrame, replayed: DataFrame, acked_append: DataFrame) -> DataFrame:
    """Per violating acknowledgement, `_ack_removed`: the event that removed the acknowledged record at the lost offset
    from the log of the leader that acknowledged it (`ReplicaState.removed_write`): the first removal there after its
    append (a record is removed once), by `_by` as `removed_by` records it; none when retention deleted it first.
    For a deposed leader, the truncation as it rejoined as a follower. None when that append did not write the lost
    offset (an acknowledgement beyond its batch, which the engine never sends). `replayed`: the replica replay of the
    violating partitions with what each row removes (`_with_removals`)."""
    keys = [*PARTITION, "ack_id"]
    o = F.col("lost_offset")
    drops = F.col("_drop_from").isNotNull() & (F.col("_drop_from") <= o)
    return bad.select(*keys, "ack_leader", "lost_offset").join(acked_append, keys).where(
        F.col("_ack_append_last") >= o).join(
        replayed.select(*PARTITION, F.col("broker_id").alias("ack_leader"), "event_id", "_drop_from", "_drop_below",
                        "_by"), [*PARTITION, "ack_leader"]).where(
        (F.col("event_id") > F.col("ack_append")) & (drops | (F.col("_drop_below") > o))).groupBy(*keys).agg(
        F.min_by(F.when(drops, F.col("_by")), "event_id").alias("_ack_removed"))


LOSS_CAUSES: tuple[str, ...] = ("unclean_election", "crash_and_unclean_election", "crash_recovery")
"""What an excused acked_write_lost names as its cause (`loss_cause`), in the order the report lists them."""


def loss_cause(message: Column) -> Column:
    """The cause an acked_write_lost `message` names (one of `LOSS_CAUSES`; null where it names none: an error).

    Read from the message because the message is where both the audit and the checker (`unclean_excuse_text`) say it:
    the crash loss of the leader in office beside the unclean election, or the election alone, or a crash recovery."""
    unclean = message.contains("unclean election event")
    return (F.when(unclean & message.contains("unflushed tail at a crash"), F.lit(LOSS_CAUSES[1]))
            .when(unclean, F.lit(LOSS_CAUSES[0]))
            .when(message.contains("crash recovery event"), F.lit(LOSS_CAUSES[2])))


def acked_write_lost_check() -> Column:
    """acked_write_lost (§11.4): an acknowledged acks=all write missing from the final leader's log."""
    crash = F.when(F.col("crash_id") > F.col("ack_id"), F.col("crash_id"))
    excuse = F.coalesce(F.col("unclean_id"), crash)
    unclean, lost_in_crash = F.col("unclean_id"), F.when(F.col("_left.crash"), F.col("_left.id"))
    # As `checker.unclean_excuse_text`: the crash loss that took the record from the leader in office is named
    # beside the election, which alone would read as the cause of a tail lost at a power failure.
    suffix = (F.when(unclean.isNotNull() & lost_in_crash.isNull(),
                     text(" (after unclean election event ", unclean, ": allowed data loss)"))
              .when(unclean.isNotNull() & (lost_in_crash < unclean),
                    text(" (the leader in office lost it with its unflushed tail at a crash, event ", lost_in_crash,
                         ", then unclean election event ", unclean,
                         " elected a replica without it: allowed data loss)"))
              .when(unclean.isNotNull(),
                    text(" (after unclean election event ", unclean,
                         ", the leader in office lost it with its unflushed tail at a crash, event ", lost_in_crash,
                         ": allowed data loss)"))
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
        evidence=[excuse, F.col("ack_append"), F.col("ack_id"), _loss("id"), F.col("_ack_removed"),
                  F.col("removed_by"), F.col("first_lost.final_append")],
        severity=severity,
        message=F.concat(text(f"{what} acknowledged at ", F.col("ack_base"), "..", F.col("ack_last"), " by broker ",
                              F.col("ack_leader"), " is not on final leader ", F.col("final_leader"), " at ",
                              F.col("lost_offset"), " (", F.col("lost_count"), " offsets)"), suffix),
    )


def _loss(field: str) -> Column:
    """`field` (`id` or `ts`) of the loss (`checker._loss`): when the record last left the leader in office after the
    ack, else the become_leader of the leader in office at the ack; null when neither is known."""
    return F.coalesce(F.col(f"_left.{field}"), F.col(f"_office_since.{field}"))


def _lost_at() -> Column:
    """When the write was lost (as the checker dates it): `_loss`, not before the acknowledgement; the run's last
    event's time when no loss is known."""
    return F.when(_loss("ts").isNotNull(), F.greatest(_loss("ts"), F.col("ack_ts"))).otherwise(F.col("_last_ts"))


SCAN = Scan("acked_write_lost", build, {INVARIANT: (acked_write_lost_check,), ACKS1: (acks1_write_lost_check,)})
"""The end-of-run replay of the final leaders' logs and the acknowledged writes checked against them."""
