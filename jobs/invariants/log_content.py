"""Record-content invariants: what the replicas' logs hold at each offset, compared across replicas and time.

Mirrors the record-level checks of `replication_core.checker.checker` (record identity = base offset, last
offset, batch leader epoch, checksum of the `append` that wrote it): committed_prefix_agreement (§11.3),
isr_holds_committed (§11.3), inconsistent_offsets (§11.5), truncation_safety (§11.6), follower_log_matching
(§11.9, §8.1, §8.2), and event_stream_consistent (the events contract), which checks the very replay the
others read. The replay, without collecting anything:

* Contested offsets. Two records can only differ at an offset that two different batches of the partition
  cover. The distinct batches of a partition, sorted by base, overlap an earlier one where their base is at
  or below the running maximum of the earlier last offsets; those overlaps, merged into maximal ranges, are
  the partition's *islands* (a superset of the contested offsets, usually empty). Only appends touching an
  island are exploded to offsets (`contested writes`); everywhere else every record at an offset is the
  same record, so only presence matters, and presence is an interval.
* The replica replay (`annotated`): one window per replica ordered by event id, the rules of
  `jobs.invariants.replica_scan` for role, epoch, LEO, LSO, committed ISR, plus the HW, the followed leader
  and the crash marks. A replica's record at offset o before event e is its latest write at o before e,
  present when o lies in its replayed [LSO, LEO) before e (the replayed log is that contiguous range
  whenever the events are consistent, which `event_stream_consistent` checks).
* Another replica's state at e (HW, LSO, LEO, down, ...) comes from a *probe*: a row with event type
  `_probe` and the event id e added to that replica's window, so it sees the state before e like any event
  would. Probes are made for the events whose check reads another replica: HW rises touching an island,
  leader HW rises and committed ISR changes (their ISR members), follower appends at or just after an
  island (their leader); and for each acknowledged acks=all write, on the acking replica itself.
* isr_holds_committed: a member lacks the leader's records from its LEO on (an interval), and may differ
  from it at island offsets; the member skips of the checker (broker down, crashed since the leader last
  heard from it, not seen yet) only remove findings, so they are joined onto the candidates only.
* Committed records (`state.py`): a leader in tenure exposes [max(old HW, LSO), new HW) at an HW rise, and
  [LSO, HW) when it becomes leader (after the leadership_change reconciled its log). The committed record
  at a contested offset is the last exposed one (a window per (partition, offset) over the exposures at
  that offset), its commit id that of the first exposure of the latest run of equal records. Elsewhere an
  offset is committed once any exposure covered it: the exposures' running span [min start, max end) over
  the partition (a leader's log is contiguous, so the union of exposures is that span); the partition's
  committed HW is the running maximum of the exposed HWs.
* Excuses (excusable invariants, warning instead of error): the first `unclean` leader_election after the
  record's append / commit, and crash losses — `crash_removed` of the checker: a truncation while the
  broker is down marks the offsets it removed with its own id, a leadership_change that reports a LEO below
  the replay after a crash / restart marks them with that crash's id, among the offsets where the replica held
  a record (a hole left by a truncation inside a batch loses nothing); the latest marking wins. Both are
  joined onto the (few) violating rows only.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants import replica_scan
from jobs.invariants.base import PARTITION, Scan, ScanInputs, checkpointed, materialised, text, violation
from jobs.invariants.base import is_event as _is
from replication_core.checker.catalogue import BY_NAME, WARNING

REPLICA: tuple[str, ...] = replica_scan.REPLICA
PROBE = "_probe"
"""event_type of the probe rows added to a replica's window to read its replay state at another event."""

CPA, INCONSISTENT, TRUNCATION = "committed_prefix_agreement", "inconsistent_offsets", "truncation_safety"
ISR_HOLDS, FOLLOWER_MATCH = "isr_holds_committed", "follower_log_matching"
STREAM = "event_stream_consistent"
_FINDINGS = "array<struct<expected:bigint,actual:bigint,what:string>>"  # `_stream_checks`' type


def _rec() -> Column:
    """Record identity of an append row (equal structs = the same batch)."""
    return F.struct(F.col("base_offset").alias("base"), F.col("last_offset").alias("last"),
                    F.col("batch_leader_epoch").alias("epoch"), F.col("batch_checksum").alias("checksum"))


def appends_of(bronze: DataFrame) -> DataFrame:
    """Every replica append: partition, broker, event id, offsets and record identity."""
    scoped = F.col("broker_id").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
    return bronze.where(_is("append") & scoped).select(
        *PARTITION, "broker_id", "event_id", "base_offset", "last_offset", _rec().alias("_rec"))


def cuts_of(bronze: DataFrame, appends: DataFrame) -> DataFrame:
    """(partition, broker, event id, lo, hi): the records [lo, hi] below its target t that a truncation inside a
    batch removes (`Checker._cut_from`: `truncateTo(t)` drops the batch holding t whole, the LEO becomes t).
    The batch holding t is the replica's latest append covering t before the truncation, while still in the log.
    A follower that later fetches from inside such a gap of its leader appends above its LEO, leaving a gap too:
    those offsets lie in the leader's cut, an island, where `gap_writes` marks them empty."""
    scoped = F.col("broker_id").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
    every = bronze.where(_is("truncation") & scoped).select(
        *PARTITION, "broker_id", "event_id", "truncate_offset",
        F.coalesce(F.col("reason") == "full", F.lit(False)).alias("full"))
    return cuts_within(every.where(~F.col("full")).drop("full"), appends, every)


OFFSET_BUCKET_MASK = 1023
"""Offsets per bucket, less one (a power of two), of the equi-join key that pairs a truncation's target with the
batches that may hold it (`cuts_within`)."""


WIDE_BATCH_BUCKETS = 64
"""A batch spanning this many offset buckets or more is joined by range, not listed under each bucket."""


def _bucket(offset: str) -> Column:
    """The first offset of `offset`'s bucket (`OFFSET_BUCKET_MASK`)."""
    return F.col(offset).bitwiseAND(F.lit(~OFFSET_BUCKET_MASK).cast("long"))


def cuts_within(trunc: DataFrame, appends: DataFrame, truncations: DataFrame) -> DataFrame:
    """`cuts_of` for the partial truncations `trunc` (partition, broker, event id, truncate_offset), from
    `appends` (partition, broker, event id, base and last offset) and all the replicas' `truncations` (the same
    columns and `full`). The batch covering the target counts only while no truncation between it and this one
    removed the target (one at or below it, or a full one): inside a hole left by an earlier cut, nothing is
    held at the target and the truncation cuts nothing below it, as `Checker._cut_from` reads the record there."""
    # Keyed by the offset's bucket as well as the replica: a replica's truncations would otherwise be compared with
    # every append of its life (each batch is listed under the one or few buckets its offsets span). A batch wider
    # than WIDE_BATCH_BUCKETS buckets (valid, if no producer writes one) is met by the replica's range join instead of
    # being listed under millions of buckets.
    ap = _renamed(appends, "c", {"broker_id": "_c_b", "event_id": "_c_id", "base_offset": "_c_base",
                                 "last_offset": "_c_last"})
    width = (_bucket("_c_last") - _bucket("_c_base")) / (OFFSET_BUCKET_MASK + 1)
    narrow = ap.where(width < WIDE_BATCH_BUCKETS).withColumn(
        "_c_bk", F.explode(F.sequence(_bucket("_c_base"), _bucket("_c_last"),
                                      F.lit(OFFSET_BUCKET_MASK + 1).cast("long"))))
    covers = [F.col("_c_id") < F.col("event_id"), F.col("_c_base") <= F.col("truncate_offset"),
              F.col("truncate_offset") <= F.col("_c_last")]
    pairs = trunc.join(narrow, _on("c", F.col("broker_id") == F.col("_c_b"),
                                   _bucket("truncate_offset") == F.col("_c_bk"), *covers)).drop("_c_bk")
    pairs = pairs.unionByName(trunc.join(ap.where(width >= WIDE_BATCH_BUCKETS),
                                         _on("c", F.col("broker_id") == F.col("_c_b"), *covers)))
    held = pairs.groupBy(*trunc.columns).agg(
        F.max_by(F.struct(F.col("_c_base").alias("base"), F.col("_c_id").alias("id")), "_c_id").alias("_batch"))
    held = held.where(F.col("_batch.base") < F.col("truncate_offset"))
    tr = _renamed(truncations, "r", {"broker_id": "_r_b", "event_id": "_r_id", "truncate_offset": "_r_t",
                                     "full": "_r_full"})
    gone = held.join(tr, _on("r", F.col("broker_id") == F.col("_r_b"), F.col("_r_id") > F.col("_batch.id"),
                             F.col("_r_id") < F.col("event_id"),
                             F.col("_r_full") | (F.col("_r_t") <= F.col("truncate_offset"))), "left_semi")
    return held.join(gone.select(*PARTITION, "broker_id", "event_id"), [*PARTITION, "broker_id", "event_id"],
                     "left_anti").select(*PARTITION, "broker_id", "event_id", F.col("_batch.base").alias("lo"),
                                         (F.col("truncate_offset") - 1).alias("hi"))


def islands(appends: DataFrame, cuts: DataFrame) -> DataFrame:
    """(partition, lo, hi): maximal ranges of offsets covered by two different batches, or below the target of a
    truncation inside a batch (a replica holds no record there below its LEO), inclusive bounds."""
    batches = appends.select(*PARTITION, "base_offset", "last_offset", "_rec").distinct()
    w = Window.partitionBy(*PARTITION).orderBy("base_offset", "last_offset", "_rec")
    reach = batches.withColumn("_reach", F.max("last_offset").over(w.rowsBetween(Window.unboundedPreceding, -1)))
    overlaps = reach.where(F.col("base_offset") <= F.col("_reach")).select(
        *PARTITION, F.col("base_offset").alias("lo"), F.least("last_offset", "_reach").alias("hi")) \
        .unionByName(cuts.select(*PARTITION, "lo", "hi"))
    # Merge overlapping / adjacent overlaps so that the offset after an island is never contested.
    wm = Window.partitionBy(*PARTITION).orderBy("lo", "hi")
    prev = F.max("hi").over(wm.rowsBetween(Window.unboundedPreceding, -1))
    marked = overlaps.withColumn("_new", F.when(prev.isNull() | (F.col("lo") > prev + 1), 1).otherwise(0))
    grouped = marked.withColumn("_grp", F.sum("_new").over(wm.rowsBetween(Window.unboundedPreceding, 0)))
    return grouped.groupBy(*PARTITION, "_grp").agg(F.min("lo").alias("lo"), F.max("hi").alias("hi")).drop("_grp")


def contested_writes(appends: DataFrame, isl: DataFrame, cuts: DataFrame) -> DataFrame:
    """(partition, broker, offset, write id, record) for every write at an island offset, and a null record
    where a truncation inside a batch removed one below its target (`lookup` then finds none)."""
    lo = F.greatest("base_offset", "lo")
    hi = F.least("last_offset", "hi")
    writes = appends.join(isl, list(PARTITION)).where(lo <= hi).select(
        *PARTITION, "broker_id", F.col("event_id").alias("_w"), "_rec", F.explode(F.sequence(lo, hi)).alias("offset"))
    removed = cuts.select(*PARTITION, "broker_id", F.col("event_id").alias("_w"),
                          F.lit(None).cast(writes.schema["_rec"].dataType).alias("_rec"),
                          F.explode(F.sequence("lo", "hi")).alias("offset"))
    return writes.unionByName(removed)


def gap_writes(rows: DataFrame, isl: DataFrame) -> DataFrame:
    """`contested_writes` rows for the gaps of follower appends above the LEO (`rows` annotated): a null record
    at each island offset of [LEO, base), written by that append. A follower fetching inside a gap of its
    leader's log (left by a truncation inside a batch, an island) gets the leader's next batch and appends it
    above its LEO; the skipped offsets hold nothing, though an earlier write there (truncated since) is still
    the replica's latest write and the LEO now lies above it."""
    gaps = rows.where(_is("append") & (F.col("role") == "follower") & (F.col("base_offset") > F.col("_leo"))).select(
        *PARTITION, "broker_id", "event_id", "_leo", "base_offset")
    return _overlapping(gaps, isl, F.col("_leo"), F.col("base_offset")).select(
        *PARTITION, "broker_id", F.col("event_id").alias("_w"),
        F.lit(None).cast(rows.schema["_rec"].dataType).alias("_rec"), "offset")


def _renamed(df: DataFrame, tag: str, cols: dict[str, str]) -> DataFrame:
    """`df`'s partition columns and `cols` (name -> new name) under names no other frame uses (joins of
    frames of one lineage then need no DataFrame-bound columns)."""
    return df.select(*[F.col(k).alias(f"_{tag}_{k}") for k in PARTITION], *[F.col(k).alias(v) for k, v in cols.items()])


def _on(tag: str, *extra: Column) -> Column:
    """Join condition: same partition as the `_renamed(..., tag, ...)` side, and `extra`."""
    out = F.lit(True)
    for c in [*[F.col(k) == F.col(f"_{tag}_{k}") for k in PARTITION], *extra]:
        out = out & c
    return out


def lookup(queries: DataFrame, writes: DataFrame, broker: str, at: str, prefix: str) -> DataFrame:
    """Add `<prefix>` = struct(w, rec): the latest write of replica `broker` at `offset` before event `at`
    (null when none, or when a truncation inside a batch removed it); presence in the replayed [LSO, LEO) is the
    caller's to bound."""
    cw = _renamed(writes, "l", {"broker_id": "_l_b", "offset": "_l_o", "_w": "_l_w", "_rec": "_l_rec"})
    cond = _on("l", F.col(broker) == F.col("_l_b"), F.col("offset") == F.col("_l_o"),
                    F.col("_l_w") < F.col(at))
    found = F.max_by(F.struct(F.col("_l_w").alias("w"), F.col("_l_rec").alias("rec")), F.col("_l_w"))
    out = queries.join(cw, cond, "left").groupBy(*queries.columns).agg(found.alias(prefix))
    return out.withColumn(prefix, F.when(F.col(prefix)["rec"].isNotNull(), F.col(prefix)))



_COLUMNS: tuple[str, ...] = (
    "run_id", "event_id", "ts_ms", "broker_id", "event_type", "topic", "partition", "leader_epoch", "action",
    "role", "leader_id", "base_offset", "last_offset", "batch_leader_epoch", "batch_checksum", "leo", "hw",
    "old_hw", "log_start_offset", "old_leo", "truncate_offset", "reason", "isr", "isr_state", "old_isr",
    "adding_replicas",
)
_LOG_EVENTS: tuple[str, ...] = (
    "leadership_change", "append", "hw_change", "truncation", "log_start_offset_change", "isr_change",
)


def replica_events(bronze: DataFrame) -> DataFrame:
    """Each replica's log events plus its broker's lifecycle events (broker-wide, copied onto each replica of
    the broker), as in `replica_scan.replica_events`, with only the columns this replay reads."""
    scoped = (F.col("event_type").isin(*_LOG_EVENTS) & F.col("broker_id").isNotNull()
              & F.col("topic").isNotNull() & F.col("partition").isNotNull())
    part = bronze.where(scoped).select(*_COLUMNS)
    keys = part.select(*REPLICA).distinct()
    life = bronze.where(_is("broker_lifecycle") & F.col("broker_id").isNotNull()).select(
        "run_id", "broker_id", "event_id", "ts_ms", "event_type", "action")
    return part.unionByName(life.join(keys, ["run_id", "broker_id"]), allowMissingColumns=True)


def annotated(bronze: DataFrame, probes: DataFrame) -> DataFrame:
    """The replica replay over each replica's events plus its probe rows: the state *before* each row.

    The rules are `replica_scan.annotate`'s (role / epoch / down / LEO / LSO; LSO as a running "set" lowered by
    the partial truncations since), restricted to the log state this scan reads (that scan also carries the
    leader-side ISR state), plus the HW and the event that set it (hw_change, or a leadership_change that
    carries one), the followed leader (a become_follower's leader_id), and `_crash_mark`: the broker's last
    crash / restart since the replica's last leadership_change (`crashed_since_leadership`)."""
    rows = replica_events(bronze).unionByName(
        probes.select("*", F.lit(PROBE).alias("event_type")), allowMissingColumns=True)
    w = Window.partitionBy(*REPLICA).orderBy("event_id")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    upto = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    is_lc = _is("leadership_change")
    is_life = _is("broker_lifecycle")
    closes = is_life & F.col("action").isin(*replica_scan.CLOSING_ACTIONS)
    role_mark, down_mark, leo_mark = replica_scan.marks()
    sets_hw = _is("hw_change") | (is_lc & F.col("hw").isNotNull())
    # r.leader_id is only set by a become_follower (None when it names no leader: -1 here).
    leader_mark = F.when(is_lc & (F.col("action") != "become_leader"), F.coalesce(F.col("leader_id"), F.lit(-1)))
    crash_mark = F.when(is_lc, F.lit(-1)).when(is_life & F.col("action").isin("crash", "restart"), F.col("event_id"))
    s1 = rows.select(
        "*",
        F.coalesce(F.last(role_mark, True).over(before), F.lit("none")).alias("_role"),
        F.coalesce(F.last(F.when(is_lc, F.col("leader_epoch")).when(closes, F.lit(-1)), True).over(before),
                   F.lit(-1)).alias("_epoch"),
        F.coalesce(F.last(down_mark, True).over(before), F.lit(False)).alias("_down"),
        F.coalesce(F.last(leo_mark, True).over(before), F.lit(0)).cast("long").alias("_leo"),
        F.coalesce(F.last(F.when(sets_hw, F.col("hw")), True).over(before), F.lit(0)).cast("long").alias("_hw"),
        F.last(F.when(sets_hw, F.col("event_id")), True).over(before).alias("_hw_event"),
        # A struct, so that an HW event without an epoch clears it as `ReplicaState.hw_epoch` does.
        F.last(F.when(sets_hw, F.struct(F.col("leader_epoch").alias("e"))), True).over(before)["e"]
        .alias("_hw_epoch"),
        F.last(leader_mark, True).over(before).alias("_leader_mark"),
        F.last(F.when(_is("truncation"), F.col("event_id")), True).over(before).alias("_last_truncation"),
        F.last(crash_mark, True).over(before).alias("_crash_mark"),
    )
    full, lso_set, lso_min = replica_scan.lso_marks()
    s2 = s1.select(
        "*", (F.col("_role") == "leader").alias("_leading"), full.alias("_full"), lso_set.alias("_lso_set"),
        lso_min.alias("_lso_min"),
    ).withColumn("_lso_seg", F.count("_lso_set").over(upto))
    # Committed ISR (as `replica_scan`) and the last reset of the leader's follower views (`Replica` state is
    # rebuilt by a become_leader that bumps the epoch; dropped by a become_follower or a tenure-closing event).
    empty = F.array().cast("array<int>")
    isr_mark = (F.when(is_lc & (F.col("action") == "become_leader"), F.array_distinct(F.coalesce("isr", empty)))
                .when(is_lc | closes, empty)
                .when(_is("isr_change") & F.col("_leading") & (F.col("isr_state") == "committed"),
                      F.array_distinct(F.coalesce("isr", empty))))
    bumps = F.coalesce(F.col("leader_epoch"), F.col("_epoch")) > F.col("_epoch")
    reset_mark = F.when((is_lc & ((F.col("action") != "become_leader") | bumps)) | closes, F.col("event_id"))
    # The LSO before the row: after the previous row, whose segment is one less where this row opens one.
    previous_segment = F.col("_lso_seg") - F.when(F.col("_lso_set").isNotNull(), 1).otherwise(0)
    return s2.select("*", F.coalesce(F.last(isr_mark, True).over(before), empty).alias("_isr"),
                     F.last(reset_mark, True).over(before).alias("_view_reset"),
                     replica_scan.lso(before, previous_segment).alias("_lso"))


def crash_removals(rows: DataFrame) -> DataFrame:
    """(replica, removal id, crash id, [c_lo, c_hi)): offsets a crash loss removed (`crash_removed`)."""
    trunc = rows.where(_is("truncation") & F.col("_down")).select(
        *REPLICA, F.col("event_id").alias("_removal"), F.col("event_id").alias("_crash"),
        F.greatest("_lso", F.when(F.col("_full"), F.lit(0)).otherwise(F.col("truncate_offset"))).alias("_c_lo"),
        F.col("_leo").alias("_c_hi"))
    crashed = F.when(F.col("_crash_mark") >= 0, F.col("_crash_mark"))
    lc = rows.where(_is("leadership_change") & (F.col("leo") < F.col("_leo")) & crashed.isNotNull()).select(
        *REPLICA, F.col("event_id").alias("_removal"), crashed.alias("_crash"),
        F.greatest("_lso", "leo").alias("_c_lo"), F.col("_leo").alias("_c_hi"))
    return trunc.unionByName(lc)


def with_crash(df: DataFrame, cr: DataFrame, cw: DataFrame, broker: str, at: str, offset: str,
               alias: str) -> DataFrame:
    """Add `alias`: the crash id of replica `broker`'s latest crash loss of `offset` at or before `at`.

    A crash removal covering the offset lost a record there only when the replica held one just before it
    (`crash_removed` marks the offsets of `r.records`): a truncation inside a batch earlier can have left a hole
    in [LSO, LEO), and a crash recovery cutting through the hole removes nothing. `offset` is an island offset
    (two different records were there), so `cw` (`contested_writes`) knows what the replica held."""
    k = {c: f"_k_{c}" for c in PARTITION}
    keys = df.select(*[F.col(c).alias(k[c]) for c in PARTITION], F.col(broker).alias("_k_b"),
                     F.col(at).alias("_k_at"), F.col(offset).alias("_k_o")).distinct()
    c = _renamed(cr, "c", {"broker_id": "_c_b", "_removal": "_c_removal", "_crash": "_c_crash", "_c_lo": "_c_lo",
                           "_c_hi": "_c_hi"})
    same = reduce(lambda x, y: x & y, [F.col(k[p]) == F.col(f"_c_{p}") for p in PARTITION])
    covering = keys.join(c, same & (F.col("_k_b") == F.col("_c_b")) & (F.col("_c_removal") <= F.col("_k_at"))
                         & (F.col("_c_lo") <= F.col("_k_o")) & (F.col("_k_o") < F.col("_c_hi"))).select(
        *[F.col(k[p]).alias(p) for p in PARTITION], "_k_b", "_k_at", F.col("_k_o").alias("offset"), "_c_removal",
        "_c_crash")
    held = lookup(covering, cw, "_k_b", "_c_removal", "_held").where(F.col("_held").isNotNull())
    lost = held.groupBy(*[F.col(p).alias(k[p]) for p in PARTITION], "_k_b", "_k_at", F.col("offset").alias("_k_o")) \
        .agg(F.max_by("_c_crash", "_c_removal").alias(alias))
    on = reduce(lambda x, y: x & y, [F.col(p) == F.col(k[p]) for p in PARTITION]) & (
        F.col(broker) == F.col("_k_b")) & (F.col(at) == F.col("_k_at")) & (F.col(offset) == F.col("_k_o"))
    return df.join(lost, on, "left").drop(*k.values(), "_k_b", "_k_at", "_k_o")


def epoch_of(event: bool = True) -> Column:
    """`Checker._epoch_of`: the leader epoch a replica is in at a row: with `event`, the row's `leader_epoch` when
    it has one, else (and without `event`) the replayed `_epoch`; null when there is none."""
    replayed = F.when(F.col("_epoch") >= 0, F.col("_epoch"))
    return F.coalesce(F.col("leader_epoch"), replayed) if event else replayed


def unclean_elections(bronze: DataFrame) -> DataFrame:
    """The partitions' unclean elections: `_unclean` (event id) and `_unclean_epoch` (the epoch elected)."""
    return bronze.where(_is("leader_election") & (F.col("action") == "unclean")).select(
        *PARTITION, F.col("event_id").alias("_unclean"), F.col("leader_epoch").alias("_unclean_epoch"))


def with_unclean(df: DataFrame, unclean: DataFrame, after: str, alias: str,
                 epochs: tuple[Column, ...] = ()) -> DataFrame:
    """Add `alias` (`PartitionState.unclean_excuse`): of the partition's unclean elections before the row's
    detecting `event_id` (the checker streams: it knows only the elections it has read; any when the row was
    detected at the end of the run, event -1), the first after event `after` (`unclean_after`), else, given
    the leader `epochs` the violation sets against each other (nulls ignored), the first elected into an epoch
    after the lowest and at or before the highest (`unclean_between`)."""
    u = _renamed(unclean, "u", {"_unclean": "_u_id", "_unclean_epoch": "_u_epoch"})
    cond = _on("u", (F.col("_u_id") < F.col("event_id")) | (F.col("event_id") < 0))
    first_after = F.min(F.when(F.col("_u_id") > F.col(after), F.col("_u_id")))
    if not epochs:
        return df.join(u, cond, "left").groupBy(*df.columns).agg(first_after.alias(alias))
    # least / greatest skip nulls (null only when every epoch is null, and then nothing is between).
    lo, hi = (F.least(*epochs), F.greatest(*epochs)) if len(epochs) > 1 else (epochs[0], epochs[0])
    between = (F.col("_u_epoch") > lo) & (F.col("_u_epoch") <= hi)
    first_between = F.min(F.when(between, F.col("_u_id")))
    return df.join(u, cond, "left").groupBy(*df.columns).agg(F.coalesce(first_after, first_between).alias(alias))


def _overlapping(df: DataFrame, isl: DataFrame, lo: Column, hi: Column) -> DataFrame:
    """Rows of `df` exploded to `offset` over [lo, hi) intersected with the partition's islands."""
    a = F.greatest(lo, F.col("lo"))
    b = F.least(hi, F.col("hi") + 1)
    return df.join(isl, list(PARTITION)).where(a < b).select(
        *df.columns, F.explode(F.sequence(a, b - 1)).alias("offset"))


def _first_bad(df: DataFrame, keys: list[str], bad: Column, first: dict[str, Column]) -> DataFrame:
    """Group offset rows by `keys`: `_n` bad offsets and, at the first bad offset, the columns of `first`."""
    picked = F.min_by(F.struct(*[c.alias(n) for n, c in first.items()]), F.when(bad, F.col("offset")))
    return df.groupBy(*keys).agg(F.count(F.when(bad, 1)).alias("_n"), picked.alias("_f")).where(F.col("_n") > 0)


def build(inputs: ScanInputs) -> DataFrame:
    """One row per violation candidate (`_kind` names the invariant) with the fields its check reports."""
    bronze = inputs.bronze
    # Every append, read from bronze once: the islands, the contested writes and four of the checks below
    # join it, and each would otherwise filter all of bronze again.
    appends = materialised(appends_of(bronze))
    # Islands and contested writes are usually none (a clean run): `checkpointed` lets the optimiser drop what
    # joins them.
    cuts = checkpointed(cuts_of(bronze, appends))
    isl = checkpointed(islands(appends, cuts))
    cw = checkpointed(contested_writes(appends, isl, cuts))
    scoped = F.col("broker_id").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
    keys = bronze.where(F.col("event_type").isin(*_LOG_EVENTS) & scoped).select(*REPLICA).distinct()
    # Probes: every other replica of the partition at each event whose check reads another replica's state:
    # an HW rise touching an island (committed_prefix_agreement), a leader HW rise or a committed ISR change
    # (isr_holds_committed: the members), a follower append at or just after an island (follower_log_matching).
    hw_rises = bronze.where(_is("hw_change") & (F.col("hw") > F.col("old_hw")) & scoped)
    touching = hw_rises.join(isl, list(PARTITION)).where(
        (F.col("lo") < F.col("hw")) & (F.col("hi") >= F.col("old_hw")))
    follower_appends = bronze.where(_is("append") & (F.col("role") == "follower") & scoped).join(
        isl, list(PARTITION)).where((F.col("lo") <= F.col("base_offset")) & (F.col("hi") >= F.col("base_offset") - 1))
    triggers = (touching.select(*PARTITION, "broker_id", "event_id")
                .unionByName(hw_rises.where(F.col("role") == "leader").select(*PARTITION, "broker_id", "event_id"))
                .unionByName(bronze.where(_is("isr_change") & (F.col("isr_state") == "committed") & scoped)
                             .select(*PARTITION, "broker_id", "event_id"))
                .unionByName(follower_appends.select(*PARTITION, "broker_id", "event_id")))
    probes = triggers.select(*PARTITION, F.col("broker_id").alias("_a"), "event_id").distinct().join(
        keys, list(PARTITION)).where(F.col("broker_id") != F.col("_a")).select(*REPLICA, "event_id")
    # The acking replica's own state at each acknowledged acks=all write (event_stream_consistent).
    acks = bronze.where(_is("produce_ack") & (F.col("acks") == -1) & (F.col("error") == "NONE") & scoped
                        & F.col("base_offset").isNotNull()).select(
        *REPLICA, "event_id", "ts_ms", "base_offset", "batch_checksum", F.lit(True).alias("_ack"))
    probes = probes.unionByName(acks, allowMissingColumns=True)
    needed = ("hw_change", "truncation", "leadership_change", "isr_change", PROBE)
    rows = annotated(bronze, probes)
    rows = rows.withColumn("_esc", _stream_checks())
    kept = (F.col("event_type").isin(*needed) | (_is("append") & (F.col("role") == "follower"))
            | (F.size("_esc") > 0))
    rows = checkpointed(rows.where(kept).select(
        *REPLICA, "event_id", "ts_ms", "event_type", "action", "role", "leader_epoch", "hw", "old_hw", "leo",
        "truncate_offset", "old_leo", "reason", "isr", "isr_state", "base_offset", "last_offset", _rec().alias("_rec"),
        "_leading", "_epoch", "_down", "_leo", "_lso", "_full", "_hw", "_hw_event", "_hw_epoch", "_crash_mark", "_role",
        "_leader_mark", "_last_truncation", "_isr", "_view_reset", "_esc", "_ack", "batch_checksum",
    ))
    cw = checkpointed(cw.unionByName(gap_writes(rows, isl)))
    cr = checkpointed(crash_removals(rows))
    unclean = unclean_elections(bronze)
    parts = [
        _cpa(rows, isl, cw, cr, unclean),
        *_exposure_checks(rows, isl, cw, cr, unclean, appends, cuts),
        _isr_holds(bronze, rows, isl, cw, unclean, appends),
        _follower_log_matching(rows, isl, cw),
        _stream(rows),
        _acks_in_log(rows, isl, cw, appends),
    ]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p, allowMissingColumns=True)
    # A handful of rows behind a large plan: materialised, so that the audit's union of every scan (and
    # its cache lookups, which canonicalise whole plans in the driver) sees one small relation.
    return out.localCheckpoint(eager=True)


def _cpa(rows: DataFrame, isl: DataFrame, cw: DataFrame, cr: DataFrame, unclean: DataFrame) -> DataFrame:
    """committed_prefix_agreement candidates: an HW rise of a vs each other replica b (`_check_committed_
    prefix_agreement`), at the island offsets of [max(old, LSO_a, LSO_b), min(new, HW_b))."""
    rises = rows.where(_is("hw_change") & (F.col("hw") > F.col("old_hw"))).select(
        *PARTITION, F.col("broker_id").alias("_a"), "event_id", "ts_ms", F.col("old_hw").alias("_old"),
        F.col("hw").alias("_new"), F.col("_lso").alias("_a_lso"), F.col("_leo").alias("_a_leo"),
        epoch_of().alias("_a_epoch"))
    state = rows.where(_is(PROBE)).select(
        *PARTITION, F.col("broker_id").alias("_b"), "event_id", F.col("_hw").alias("_b_hw"),
        F.col("_hw_event").alias("_b_hw_event"), F.col("_lso").alias("_b_lso"), F.col("_leo").alias("_b_leo"),
        epoch_of(event=False).alias("_b_epoch"), F.col("_hw_epoch").alias("_b_hw_epoch"))
    pairs = rises.join(state, [*PARTITION, "event_id"]).where(F.col("_a") != F.col("_b"))
    lo = F.greatest("_old", "_a_lso", "_b_lso")
    hi = F.least("_new", "_b_hw", "_a_leo", "_b_leo")
    offs = _overlapping(pairs, isl, lo, hi)
    offs = lookup(offs, cw, "_a", "event_id", "_sa")
    offs = lookup(offs, cw, "_b", "event_id", "_sb")
    bad = F.col("_sa").isNotNull() & F.col("_sb").isNotNull() & (F.col("_sa.rec") != F.col("_sb.rec"))
    found = _first_bad(offs, [*PARTITION, "_a", "_b", "event_id", "ts_ms", "_new", "_b_hw", "_b_hw_event", "_a_epoch",
                              "_b_epoch", "_b_hw_epoch"], bad,
                       {"o": F.col("offset"), "sa": F.col("_sa"), "sb": F.col("_sb")})
    found = checkpointed(found.select("*", F.col("_f.o").alias("_o"),
                                      F.least("_f.sa.w", "_f.sb.w").alias("_first_append")))
    found = with_unclean(found, unclean, "_first_append", "_unclean_id",
                         (F.col("_f.sa.rec.epoch"), F.col("_f.sb.rec.epoch"), F.col("_a_epoch"), F.col("_b_epoch"),
                          F.col("_b_hw_epoch")))
    found = with_crash(found, cr, cw, "_a", "event_id", "_o", "_crash_a")
    found = with_crash(found, cr, cw, "_b", "event_id", "_o", "_crash_b")
    return found.select(
        F.lit(CPA).alias("_kind"), *PARTITION, F.col("_a").alias("broker_id"), "event_id", "ts_ms",
        F.col("_o").alias("_offset"), F.col("_f.sb.rec.checksum").alias("_expected"),
        F.col("_f.sa.rec.checksum").alias("_actual"), "_unclean_id",
        # `_crash_after(a, o, -1) or _crash_after(b, o, -1)`
        F.when(F.col("_crash_a") > 0, F.col("_crash_a")).otherwise(
            F.when(F.col("_crash_b") > 0, F.col("_crash_b"))).alias("_crash_id"),
        F.array(F.col("_f.sb.w"), F.col("_f.sa.w"), F.col("_b_hw_event")).alias("_ids"),
        F.concat(text("replica ", F.col("_a"), " (HW ", F.col("_new"), ") and replica ", F.col("_b"), " (HW ",
                      F.col("_b_hw")),
                 # As the checker: where b's HW was set (a crashed replica's is old, and read as current).
                 F.when(F.col("_b_hw_event").isNotNull(), text(" since event ", F.col("_b_hw_event")))
                 .otherwise(F.lit("")),
                 text(") hold different records at ", F.col("_o"), ": epoch ", F.col("_f.sa.rec.epoch"),
                      " on replica ", F.col("_a"), " vs ", F.col("_f.sb.rec.epoch"), " on replica ", F.col("_b"),
                      " (", F.col("_n"), " offsets)")).alias("_msg"),
    )


def exposures(rows: DataFrame) -> DataFrame:
    """Every exposure (`Checker._expose`): leader r at event e commits its records in [lo, hi) present below
    `_pres` (its LEO after the event); `_chw` is the HW it exposes (the committed HW candidate)."""
    hw_rise = (_is("hw_change") & F.col("_leading") & (F.col("role") == "leader") & (F.col("hw") > F.col("old_hw"))
               & (F.col("leader_epoch").isNull() | (F.col("leader_epoch") == F.col("_epoch"))))
    becomes = _is("leadership_change") & (F.col("action") == "become_leader")
    leader_hw = F.coalesce(F.col("hw"), F.col("_hw"))
    return rows.where(hw_rise | becomes).select(
        *PARTITION, "broker_id", "event_id", "ts_ms", epoch_of().alias("_x_epoch"),
        F.when(hw_rise, F.greatest("old_hw", "_lso")).otherwise(F.col("_lso")).alias("_x_lo"),
        F.when(hw_rise, F.col("hw")).otherwise(leader_hw).alias("_x_hi"),
        F.when(hw_rise, F.col("_leo")).otherwise(F.least("_leo", F.coalesce("leo", "_leo"))).alias("_pres"),
    )


def _exposure_checks(rows: DataFrame, isl: DataFrame, cw: DataFrame, cr: DataFrame, unclean: DataFrame,
                     appends: DataFrame, cuts: DataFrame) -> list[DataFrame]:
    """inconsistent_offsets and truncation_safety candidates, both read off the committed records."""
    exp = exposures(rows)
    # Contested offsets: each exposure's record per island offset, and each truncation's removed record.
    exp_offs = _overlapping(exp, isl, F.col("_x_lo"), F.least("_x_hi", "_pres"))
    exp_offs = lookup(exp_offs, cw, "broker_id", "event_id", "_s").where(F.col("_s").isNotNull())
    # `_cut`: the first offset the truncation removes (below its target when the target is inside a batch).
    trunc = rows.where(_is("truncation") & ~F.col("_down")).join(
        cuts.select(*PARTITION, "broker_id", "event_id", F.col("lo").alias("_cut_lo")),
        [*PARTITION, "broker_id", "event_id"], "left").select(
        *PARTITION, "broker_id", "event_id", "ts_ms", "truncate_offset", "old_leo", "reason", "_lso", "_leo",
        epoch_of().alias("_t_epoch"), F.coalesce("_cut_lo", "truncate_offset").alias("_cut"))
    t_lo = F.greatest("_cut", "_lso")
    t_hi = F.least("old_leo", "_leo")
    t_offs = lookup(_overlapping(trunc, isl, t_lo, t_hi), cw, "broker_id", "event_id", "_s").where(
        F.col("_s").isNotNull())
    # The committed record at (partition, offset): the last exposed record; its commit = first exposure of
    # the latest run of equal records (`Commit` is replaced only by a different record).
    marks = exp_offs.select(*PARTITION, "offset", "event_id", "broker_id", "ts_ms", "_s", "_x_epoch",
                            F.lit(None).cast("int").alias("_t_epoch"), F.lit(True).alias("_x")) \
        .unionByName(t_offs.select(*PARTITION, "offset", "event_id", "broker_id", "ts_ms", "_s",
                                   F.lit(None).cast("int").alias("_x_epoch"), "_t_epoch", F.lit(False).alias("_x")))
    wo = Window.partitionBy(*PARTITION, "offset").orderBy("event_id")
    before = wo.rowsBetween(Window.unboundedPreceding, -1)
    prev_rec = F.last(F.when(F.col("_x"), F.col("_s.rec")), True).over(before)
    marks = marks.withColumn("_prev_rec", prev_rec)
    starts = F.col("_x") & (F.col("_prev_rec").isNull() | (F.col("_prev_rec") != F.col("_s.rec")))
    commit = F.struct(F.col("_s.rec").alias("rec"), F.col("event_id").alias("commit_id"),
                      F.col("_s.w").alias("append_id"), F.col("_x_epoch").alias("epoch"))
    marks = marks.withColumn("_run", F.last(F.when(starts, commit), True).over(
        wo.rowsBetween(Window.unboundedPreceding, 0)))
    # The commit in force before the row: the run of the last exposure strictly before it, and the lowest
    # epoch that exposed it in that run (`Commit.known_from`).
    marks = marks.withColumn("_prior", F.last(F.when(F.col("_x"), F.col("_run")), True).over(before))
    in_run = Window.partitionBy(*PARTITION, "offset", F.col("_run.commit_id")).orderBy("event_id") \
        .rowsBetween(Window.unboundedPreceding, -1)
    marks = marks.withColumn("_known_from", F.min(F.when(F.col("_x"), _epoch_or_any("_x_epoch"))).over(in_run))
    inconsistent = _inconsistent(marks.where(F.col("_x")), cr, cw, unclean)
    safety = _truncation_safety(rows, exp, trunc, isl, marks.where(~F.col("_x")), unclean, appends)
    return [inconsistent, safety]


def _inconsistent(marks: DataFrame, cr: DataFrame, cw: DataFrame, unclean: DataFrame) -> DataFrame:
    """inconsistent_offsets candidates (`_check_inconsistent_offsets`): an exposure of a record different from
    the committed one at the offset."""
    bad = F.col("_prior").isNotNull() & (F.col("_prior.rec") != F.col("_s.rec"))
    found = _first_bad(marks, [*PARTITION, "broker_id", "event_id", "ts_ms", "_x_epoch"], bad,
                       {"o": F.col("offset"), "s": F.col("_s"), "prior": F.col("_prior")})
    found = found.select("*", F.col("_f.o").alias("_o"), F.col("_f.prior.commit_id").alias("_commit_id"))
    found = checkpointed(found)
    found = with_unclean(found, unclean, "_commit_id", "_unclean_id",
                         (F.col("_f.prior.rec.epoch"), F.col("_f.prior.epoch"), F.col("_f.s.rec.epoch"),
                          F.col("_x_epoch")))
    found = with_crash(found, cr, cw, "broker_id", "event_id", "_o", "_crash")
    prior, s = F.col("_f.prior"), F.col("_f.s")
    return found.select(
        F.lit(INCONSISTENT).alias("_kind"), *PARTITION, "broker_id", "event_id", "ts_ms",
        F.col("_o").alias("_offset"), prior["rec"]["checksum"].alias("_expected"),
        s["rec"]["checksum"].alias("_actual"),
        "_unclean_id", F.when(F.col("_crash") > F.col("_commit_id"), F.col("_crash")).alias("_crash_id"),
        F.array(prior["append_id"], prior["commit_id"], s["w"]).alias("_ids"),
        text("offset ", F.col("_o"), " committed twice: epoch ", prior["rec"]["epoch"], " checksum ",
             prior["rec"]["checksum"], ", now epoch ", s["rec"]["epoch"], " checksum ", s["rec"]["checksum"], " (",
             F.col("_n"), " offsets)").alias("_msg"),
    )


def _truncation_safety(rows: DataFrame, exp: DataFrame, trunc: DataFrame, isl: DataFrame, t_marks: DataFrame,
                       unclean: DataFrame, appends: DataFrame) -> DataFrame:
    """truncation_safety candidates (`_check_truncation_safety`): a follower truncation removing a record
    equal to the committed one at its offset."""
    # Committed HW before each truncation: running over the partition's exposures; the committed span, over
    # those of leaders of the follower's epoch or earlier ones.
    eff_hi = F.least("_x_hi", "_pres")
    span = exp.where(F.col("_x_lo") < eff_hi).select(
        *PARTITION, "event_id", "_x_epoch", F.col("_x_lo").alias("_c_lo"), eff_hi.alias("_c_hi"),
        F.col("_x_hi").alias("_chw"), F.lit(True).alias("_x"))
    span = span.unionByName(exp.where(F.col("_x_lo") >= eff_hi).select(
        *PARTITION, "event_id", F.col("_x_hi").alias("_chw"), F.lit(True).alias("_x")), allowMissingColumns=True)
    timeline = span.unionByName(trunc.select(*PARTITION, "event_id", F.lit(False).alias("_x")),
                                allowMissingColumns=True)
    wp = Window.partitionBy(*PARTITION).orderBy("event_id").rowsBetween(Window.unboundedPreceding, -1)
    at_trunc = timeline.select(
        *PARTITION, "event_id", "_x", F.coalesce(F.max("_chw").over(wp), F.lit(0)).alias("_committed_hw"),
    ).where(~F.col("_x")).drop("_x")
    t = trunc.join(at_trunc, [*PARTITION, "event_id"]).join(_known_spans(span, trunc), [*PARTITION, "event_id"],
                                                            "left")
    # Non-contested part: [u, v) = the removed present records within the committed span, minus islands.
    # (greatest / least skip nulls: no exposure yet means nothing committed, an empty [u, v).)
    u = F.greatest("_cut", "_lso", "_span_lo")
    v = F.when(F.col("_span_hi").isNotNull(), F.least("old_leo", "_leo", "_span_hi")).otherwise(F.lit(-1))
    t = t.select("*", u.alias("_u"), v.alias("_v"))
    il = isl.select(*PARTITION, F.col("lo").alias("_ilo"), F.col("hi").alias("_ihi"))
    ov = F.when(F.col("_ilo").isNotNull(),
                F.greatest(F.lit(0), F.least("_v", F.col("_ihi") + 1) - F.greatest("_u", "_ilo")))
    tcols = [t[c] for c in t.columns]
    t = t.join(il, list(PARTITION), "left").groupBy(*tcols).agg(
        F.coalesce(F.sum(ov), F.lit(0)).alias("_in_islands"),
        F.max(F.when((F.col("_ilo") <= F.col("_u")) & (F.col("_u") <= F.col("_ihi")), F.col("_ihi") + 1))
        .alias("_skip"))
    first_plain = F.coalesce("_skip", "_u")
    t = t.select("*", F.when((F.col("_u") < F.col("_v")) & (first_plain < F.col("_v")), first_plain)
                 .alias("_plain_o"),
                 F.when(F.col("_u") < F.col("_v"), F.col("_v") - F.col("_u") - F.col("_in_islands"))
                 .otherwise(F.lit(0)).alias("_plain_n"))
    # Contested part: the removed record equals the committed record (the last exposure before), exposed by a
    # leader of the truncating follower's epoch or an earlier one.
    bad = F.col("_prior").isNotNull() & (F.col("_prior.rec") == F.col("_s.rec")) \
        & (F.col("_t_epoch").isNull() | (F.col("_known_from") <= F.col("_t_epoch")))
    ck = t_marks.groupBy(*PARTITION, "event_id").agg(
        F.count(F.when(bad, 1)).alias("_c_n"),
        F.min_by(F.struct(F.col("offset").alias("o"), F.col("_s.w").alias("w"),
                          F.col("_prior.commit_id").alias("commit_id"), F.col("_s.rec.epoch").alias("epoch"),
                          F.col("_prior.epoch").alias("commit_epoch")),
                 F.when(bad, F.col("offset"))).alias("_c"))
    t = t.join(ck, [*PARTITION, "event_id"], "left")
    n = F.col("_plain_n") + F.coalesce("_c_n", F.lit(0))
    plain_first = F.col("_plain_o").isNotNull() & (F.col("_c.o").isNull() | (F.col("_plain_o") < F.col("_c.o")))
    found = checkpointed(t.where(n > 0).select(
        "*", n.alias("_n"), plain_first.alias("_plain_first"),
        F.when(plain_first, F.col("_plain_o")).otherwise(F.col("_c.o")).alias("_o")))
    # Evidence of a non-contested first offset: the replica's write there and the first exposure covering it.
    found = _latest_append(found, appends, "broker_id", "event_id", "_o", "_pl")
    ex = _renamed(exp.withColumn("_x_end", F.least("_x_hi", "_pres")), "e",
                  {"event_id": "_e_id", "_x_lo": "_e_lo", "_x_end": "_e_end", "_x_epoch": "_e_epoch"})
    cond = _on("e", F.col("_e_id") < F.col("event_id"), F.col("_e_lo") <= F.col("_o"),
                    F.col("_o") < F.col("_e_end"))
    found = found.join(ex, cond, "left").groupBy(*found.columns).agg(
        F.min("_e_id").alias("_plain_commit"), F.min_by("_e_epoch", "_e_id").alias("_plain_commit_epoch"))
    commit_id = F.when(F.col("_plain_first"), F.col("_plain_commit")).otherwise(F.col("_c.commit_id"))
    commit_epoch = F.when(F.col("_plain_first"), F.col("_plain_commit_epoch")).otherwise(F.col("_c.commit_epoch"))
    found = found.select("*", commit_id.alias("_commit_id"),
                         F.when(F.col("_plain_first"), F.col("_pl.w")).otherwise(F.col("_c.w")).alias("_slot_w"),
                         F.when(F.col("_plain_first"), F.col("_pl.epoch")).otherwise(F.col("_c.epoch"))
                         .alias("_slot_e"), commit_epoch.alias("_commit_e"))
    found = with_unclean(found, unclean, "_commit_id", "_unclean_id",
                         (F.col("_slot_e"), F.col("_commit_e"), F.col("_t_epoch")))
    return found.select(
        F.lit(TRUNCATION).alias("_kind"), *PARTITION, "broker_id", "event_id", "ts_ms",
        F.col("_o").alias("_offset"), F.col("_committed_hw").alias("_expected"),
        F.col("truncate_offset").alias("_actual"), "_unclean_id", F.lit(None).cast("long").alias("_crash_id"),
        F.array(F.col("_slot_w"), F.col("_commit_id"), F.lit(None).cast("long")).alias("_ids"),
        text("truncation (", F.col("reason"), ") to ", F.col("truncate_offset"), " removed committed records from ",
             F.col("_o"), " (", F.col("_n"), " offsets; committed HW ", F.col("_committed_hw"), ")").alias("_msg"),
    )


def _epoch_or_any(col: str) -> Column:
    """`checker._epoch_or_any`: an exposure's epoch, -1 (binding on every epoch) when it has none."""
    return F.coalesce(F.col(col), F.lit(-1))


def _known_spans(span: DataFrame, trunc: DataFrame) -> DataFrame:
    """Per truncation, `_span_lo` / `_span_hi`: the committed span of the exposures before it by leaders of its
    epoch or earlier ones (`Commit.known_from`), or null when there is none. Each epoch's exposures run in
    their own window; the truncation joins the windows of the epochs up to its own."""
    ex = span.where(F.col("_c_lo").isNotNull()).select(*PARTITION, "event_id", _epoch_or_any("_x_epoch").alias("_k"),
                                                       "_c_lo", "_c_hi")
    epochs = ex.select(*PARTITION, "_k").distinct()
    asks = trunc.select(*PARTITION, "event_id", "_t_epoch").join(epochs, list(PARTITION)).where(
        F.col("_t_epoch").isNull() | (F.col("_k") <= F.col("_t_epoch"))).drop("_t_epoch")
    timeline = ex.withColumn("_x", F.lit(True)).unionByName(asks.withColumn("_x", F.lit(False)),
                                                            allowMissingColumns=True)
    wk = Window.partitionBy(*PARTITION, "_k").orderBy("event_id").rowsBetween(Window.unboundedPreceding, -1)
    at = timeline.select(*PARTITION, "event_id", "_x", F.min("_c_lo").over(wk).alias("_lo"),
                         F.max("_c_hi").over(wk).alias("_hi")).where(~F.col("_x"))
    return at.groupBy(*PARTITION, "event_id").agg(F.min("_lo").alias("_span_lo"), F.max("_hi").alias("_span_hi"))


def _plain(df: DataFrame, isl: DataFrame, lo: str, hi: str, prefix: str) -> DataFrame:
    """Add `<prefix>_o` (the first offset of [lo, hi) outside the islands, or null) and `<prefix>_n` (how
    many offsets of [lo, hi) lie outside the islands): the non-contested part of an offset range."""
    il = isl.select(*PARTITION, F.col("lo").alias("_ilo"), F.col("hi").alias("_ihi"))
    ov = F.when(F.col("_ilo").isNotNull(),
                F.greatest(F.lit(0), F.least(hi, F.col("_ihi") + 1) - F.greatest(lo, "_ilo")))
    inside = (F.col("_ilo") <= F.col(lo)) & (F.col(lo) <= F.col("_ihi"))
    out = df.join(il, list(PARTITION), "left").groupBy(*df.columns).agg(
        F.coalesce(F.sum(ov), F.lit(0)).alias("_in_islands"), F.max(F.when(inside, F.col("_ihi") + 1)).alias("_skip"))
    # Islands are merged maximal ranges, so the offset after the one holding `lo` is outside every island.
    first = F.coalesce("_skip", lo)
    nonempty = F.col(lo) < F.col(hi)
    return out.select(
        *df.columns, F.when(nonempty & (first < F.col(hi)), first).alias(f"{prefix}_o"),
        F.when(nonempty, F.col(hi) - F.col(lo) - F.col("_in_islands")).otherwise(F.lit(0)).alias(f"{prefix}_n"))


def _latest_append(df: DataFrame, appends: DataFrame, broker: str, at: str, offset: str, alias: str) -> DataFrame:
    """Add `alias` = struct(w, checksum, epoch): replica `broker`'s latest append covering `offset` before `at`
    (for the few violating rows only)."""
    ap = _renamed(appends, "p", {"broker_id": "_p_b", "event_id": "_p_w", "base_offset": "_p_base",
                                 "last_offset": "_p_last", "_rec": "_p_rec"})
    cond = _on("p", F.col(broker) == F.col("_p_b"), F.col("_p_w") < F.col(at), F.col("_p_base") <= F.col(offset),
               F.col(offset) <= F.col("_p_last"))
    found = F.max_by(F.struct(F.col("_p_w").alias("w"), F.col("_p_rec.checksum").alias("checksum"),
                              F.col("_p_rec.epoch").alias("epoch")), F.col("_p_w"))
    return df.join(ap, cond, "left").groupBy(*df.columns).agg(found.alias(alias))


def _isr_holds(bronze: DataFrame, rows: DataFrame, isl: DataFrame, cw: DataFrame, unclean: DataFrame,
               appends: DataFrame) -> DataFrame:
    """isr_holds_committed candidates (`_check_isr_holds_committed`): at a leader HW rise each committed-ISR
    member, at a committed expansion each added member, holds the leader's records in [lo, hi).

    Members whose broker is down, or crashed after the leader last heard from them (no follower_fetch_state
    of the member at the leader since the crash and since the leader's views were last reset), are skipped;
    that only removes findings, so it is applied to the (few) candidates."""
    hw_rise = (_is("hw_change") & F.col("_leading") & (F.col("role") == "leader") & (F.col("hw") > F.col("old_hw"))
               & (F.col("leader_epoch").isNull() | (F.col("leader_epoch") == F.col("_epoch"))))
    expansion = _is("isr_change") & F.col("_leading") & (F.col("isr_state") == "committed")
    empty = F.array().cast("array<int>")
    added = F.array_except(F.array_distinct(F.coalesce("isr", empty)), F.col("_isr"))
    trig = rows.where(hw_rise | expansion).select(
        *PARTITION, F.col("broker_id").alias("_r"), "event_id", "ts_ms", "_view_reset",
        F.when(hw_rise, F.col("old_hw")).otherwise(F.col("_lso")).alias("_lo"),
        F.when(hw_rise, F.col("hw")).otherwise(F.col("_hw")).alias("_hi"),
        F.col("_lso").alias("_r_lso"), F.col("_leo").alias("_r_leo"), epoch_of().alias("_r_epoch"),
        F.explode(F.when(hw_rise, F.col("_isr")).otherwise(added)).alias("_m"))
    state = rows.where(_is(PROBE)).select(
        *PARTITION, F.col("broker_id").alias("_m"), "event_id", F.col("_lso").alias("_m_lso"),
        F.col("_leo").alias("_m_leo"), F.col("_down").alias("_m_down"),
        epoch_of(event=False).alias("_m_epoch"))
    pairs = trig.where(F.col("_m") != F.col("_r")).join(state, [*PARTITION, "_m", "event_id"])
    # Offsets the leader holds: [x, y); the member holds nothing from its LEO on.
    pairs = pairs.select("*", F.greatest("_lo", "_r_lso", "_m_lso").alias("_x"), F.least("_hi", "_r_leo").alias("_y"))
    pairs = pairs.select("*", F.greatest("_x", "_m_leo").alias("_gap"))
    keys = [*PARTITION, "_r", "_m", "event_id"]
    extra = ["ts_ms", "_hi", "_view_reset", "_m_down", "_m_epoch", "_r_epoch"]
    # A member almost always holds all the leader exposes: only pairs with a gap [member LEO, leader end)
    # are counted (a grouping), the rest can only differ at island offsets.
    gapped = pairs.where(F.col("_gap") < F.col("_y")).select(*keys, *extra, "_gap", "_y")
    plain = _plain(gapped, isl, "_gap", "_y", "_pl").where(F.col("_pl_n") > 0).select(
        *keys, *extra, "_pl_o", "_pl_n")
    offs = _overlapping(pairs, isl, F.col("_x"), F.col("_y"))
    offs = lookup(lookup(offs, cw, "_r", "event_id", "_ls"), cw, "_m", "event_id", "_ms")
    ms = F.when(F.col("offset") < F.col("_m_leo"), F.col("_ms"))
    bad = F.col("_ls").isNotNull() & (ms.isNull() | (ms["rec"] != F.col("_ls.rec")))
    contested = offs.groupBy(*keys).agg(
        F.count(F.when(bad, 1)).alias("_c_n"),
        F.min_by(F.struct(F.col("offset").alias("o"), F.col("_ls").alias("ls"), ms.alias("ms")),
                 F.when(bad, F.col("offset"))).alias("_c"),
        *[F.first(c).alias(f"_cx{c}") for c in extra]).where(F.col("_c_n") > 0)
    both = plain.join(contested, keys, "full").select(
        *keys, *[F.coalesce(c, f"_cx{c}").alias(c) for c in extra], "_pl_o", "_pl_n", "_c", "_c_n")
    n = F.coalesce("_pl_n", F.lit(0)) + F.coalesce("_c_n", F.lit(0))
    plain_first = F.col("_pl_o").isNotNull() & (F.col("_c.o").isNull() | (F.col("_pl_o") < F.col("_c.o")))
    found = checkpointed(both.select(
        *keys, *extra, "_c", n.alias("_n"), plain_first.alias("_plain_first"),
        F.when(plain_first, F.col("_pl_o")).otherwise(F.col("_c.o")).alias("_o")))
    found = _skip_crashed_members(bronze, found)
    found = _latest_append(found, appends, "_r", "event_id", "_o", "_pa")
    ls_w = F.when(F.col("_plain_first"), F.col("_pa.w")).otherwise(F.col("_c.ls.w"))
    ls_epoch = F.when(F.col("_plain_first"), F.col("_pa.epoch")).otherwise(F.col("_c.ls.rec.epoch"))
    found = found.select("*", ls_w.alias("_ls_w"))
    ms_epoch = F.when(~F.col("_plain_first"), F.col("_c.ms.rec.epoch"))
    found = with_unclean(found, unclean, "_ls_w", "_unclean_id", (ls_epoch, F.col("_r_epoch"), ms_epoch,
                                                                   F.col("_m_epoch")))
    return found.select(
        F.lit(ISR_HOLDS).alias("_kind"), *PARTITION, F.col("_m").alias("broker_id"), "event_id", "ts_ms",
        F.col("_o").alias("_offset"),
        F.when(F.col("_plain_first"), F.col("_pa.checksum")).otherwise(F.col("_c.ls.rec.checksum")).alias("_expected"),
        F.when(F.col("_plain_first"), F.lit(-1)).otherwise(F.coalesce(F.col("_c.ms.rec.checksum"), F.lit(-1)))
        .alias("_actual"),
        "_unclean_id", F.lit(None).cast("long").alias("_crash_id"),
        F.array(F.col("_ls_w"), F.when(~F.col("_plain_first"), F.col("_c.ms.w")), F.lit(None).cast("long"))
        .alias("_ids"),
        text("ISR member ", F.col("_m"), " lacks the leader's record at ", F.col("_o"), " below HW ", F.col("_hi"),
             " (", F.col("_n"), " offsets)").alias("_msg"),
    )


def _skip_crashed_members(bronze: DataFrame, found: DataFrame) -> DataFrame:
    """Drop candidate (leader `_r`, member `_m`, event) rows the checker skips: the member's broker is down,
    or it crashed / restarted after the leader's last follower_fetch_state of it (since the views' reset);
    and members the checker has not seen yet (no event of theirs before)."""
    crashes = _renamed(bronze.where(_is("broker_lifecycle") & F.col("action").isin("crash", "restart")).select(
        "run_id", "broker_id", "event_id", F.lit(None).alias("topic"), F.lit(None).alias("partition")), "k",
        {"broker_id": "_k_b", "event_id": "_k_id"})
    found = found.join(crashes, (F.col("run_id") == F.col("_k_run_id")) & (F.col("_m") == F.col("_k_b"))
                       & (F.col("_k_id") < F.col("event_id")), "left").groupBy(*found.columns).agg(
        F.max("_k_id").alias("_m_crash"))
    views = _renamed(bronze.where(_is("follower_fetch_state")), "v",
                     {"broker_id": "_v_r", "follower_id": "_v_m", "event_id": "_v_id"})
    cond = _on("v", F.col("_r") == F.col("_v_r"), F.col("_m") == F.col("_v_m"), F.col("_v_id") < F.col("event_id"),
               F.col("_view_reset").isNull() | (F.col("_v_id") > F.col("_view_reset")))
    found = found.join(views, cond, "left").groupBy(*found.columns).agg(F.max("_v_id").alias("_view"))
    creating = ("leadership_change", "append", "hw_change", "truncation", "log_start_offset_change", "isr_change",
                "follower_fetch_state", "produce_ack", "fetch", "fetch_response")
    seen = _renamed(bronze.where(F.col("event_type").isin(*creating)), "s", {"broker_id": "_s_b", "event_id": "_s_id"})
    cond = _on("s", F.col("_m") == F.col("_s_b"), F.col("_s_id") < F.col("event_id"))
    found = found.join(seen, cond, "left_semi")
    crashed = F.col("_m_crash").isNotNull() & (F.col("_view").isNull() | (F.col("_m_crash") > F.col("_view")))
    return found.where(~F.col("_m_down") & ~crashed)


def _follower_log_matching(rows: DataFrame, isl: DataFrame, cw: DataFrame) -> DataFrame:
    """follower_log_matching candidates (`_check_follower_log_matching`): a follower append from the leader it
    follows (leading in the follower's epoch) must equal the leader's batch at its base, and the record just
    below it must equal the leader's. Only island offsets can differ."""
    fa = rows.where(_is("append") & (F.col("role") == "follower") & (F.col("_role") == "follower")
                    & (F.col("_leader_mark") >= 0) & (F.col("_leader_mark") != F.col("broker_id"))).select(
        *PARTITION, F.col("broker_id").alias("_f"), "event_id", "ts_ms", "base_offset", "_rec",
        F.col("_leader_mark").alias("_l"), F.col("_epoch").alias("_f_epoch"), F.col("_lso").alias("_f_lso"),
        F.col("_leo").alias("_f_leo"), "_last_truncation")
    il = _renamed(isl, "i", {"lo": "_i_lo", "hi": "_i_hi"})
    near = fa.join(il, _on("i", F.col("_i_lo") <= F.col("base_offset"), F.col("_i_hi") >= F.col("base_offset") - 1),
                   "left_semi")
    state = rows.where(_is(PROBE)).select(
        *PARTITION, F.col("broker_id").alias("_l"), "event_id", F.col("_leading").alias("_l_leading"),
        F.col("_epoch").alias("_l_epoch"), F.col("_lso").alias("_l_lso"), F.col("_leo").alias("_l_leo"))
    led = near.join(state, [*PARTITION, "_l", "event_id"]).where(
        F.col("_l_leading") & (F.col("_l_epoch") == F.col("_f_epoch")))
    at_base = led.withColumn("offset", F.col("base_offset"))
    at_base = lookup(at_base, cw, "_l", "event_id", "_own")
    own = F.when((F.col("_l_lso") <= F.col("offset")) & (F.col("offset") < F.col("_l_leo")), F.col("_own"))
    at_base = at_base.withColumn("_own", own).withColumn("offset", F.col("base_offset") - 1)
    prev = lookup(lookup(at_base, cw, "_f", "event_id", "_fs"), cw, "_l", "event_id", "_ls")
    o = F.col("offset")
    fs = F.when((F.col("_f_lso") <= o) & (o < F.col("_f_leo")), F.col("_fs"))
    ls = F.when((F.col("_l_lso") <= o) & (o < F.col("_l_leo")), F.col("_ls"))
    bad_own = F.col("_own").isNotNull() & (F.col("_own.rec") != F.col("_rec"))
    checked_prev = o >= F.greatest("_f_lso", "_l_lso", F.lit(0))
    bad_prev = ~bad_own & checked_prev & fs.isNotNull() & ls.isNotNull() & (fs["rec"] != ls["rec"])
    cand = prev.select("*", fs.alias("_fs_v"), ls.alias("_ls_v"), bad_own.alias("_bad_own"),
                       bad_prev.alias("_bad_prev")).where(F.col("_bad_own") | F.col("_bad_prev"))
    return cand.select(
        F.lit(FOLLOWER_MATCH).alias("_kind"), *PARTITION, F.col("_f").alias("broker_id"), "event_id", "ts_ms",
        F.when(F.col("_bad_own"), F.col("base_offset")).otherwise(o).alias("_offset"),
        F.when(F.col("_bad_own"), F.col("_own.rec.checksum")).otherwise(F.col("_ls_v.rec.checksum")).alias("_expected"),
        F.when(F.col("_bad_own"), F.col("_rec.checksum")).otherwise(F.col("_fs_v.rec.checksum")).alias("_actual"),
        F.lit(None).cast("long").alias("_unclean_id"), F.lit(None).cast("long").alias("_crash_id"),
        F.when(F.col("_bad_own"), F.array(F.col("_own.w"), F.lit(None).cast("long"), F.lit(None).cast("long")))
        .otherwise(F.array(F.col("_fs_v.w"), F.col("_ls_v.w"), F.col("_last_truncation"))).alias("_ids"),
        F.when(F.col("_bad_own"), text("follower appended a batch at ", F.col("base_offset"),
                                       " that differs from leader ", F.col("_l"), "'s"))
        .otherwise(text("follower appends at ", F.col("base_offset"), " after a record that differs from leader ",
                        F.col("_l"), "'s at ", o, " (epoch ", F.col("_fs_v.rec.epoch"), " vs ",
                        F.col("_ls_v.rec.epoch"), "): the logs diverge")).alias("_msg"),
    )


def _stream_checks() -> Column:
    """`_check_consistent` findings of an annotated row (a replica event against the replay before it): an
    array of struct(expected, actual, what), empty when the event agrees with the replay."""
    empty = F.array().cast("array<int>")
    crashed = F.col("_crash_mark") >= 0
    is_lc = _is("leadership_change")
    old_isr = F.array_sort(F.array_distinct(F.coalesce("old_isr", empty)))
    isr = F.array_sort(F.col("_isr"))

    conditions: list[Column] = []

    def finding(when: Column, expected: Column, actual: Column, what: Column | str) -> Column:
        conditions.append(when)
        what_col = F.lit(what) if isinstance(what, str) else what
        return F.when(when, F.struct(expected.cast("long").alias("expected"), actual.cast("long").alias("actual"),
                                     what_col.alias("what")))

    def listed(a: Column) -> Column:
        return F.concat(F.lit("["), F.array_join(a, ", "), F.lit("]"))

    found = F.array(
        # Not for a broker a reassignment adds back: its earlier replica was deleted (no event), its log is new.
        finding(is_lc & (F.col("leo") < F.col("_leo")) & ~crashed
                & ~F.coalesce(F.array_contains("adding_replicas", F.col("broker_id")), F.lit(False)),
                F.col("_leo"), F.col("leo"), "leadership_change reports a LEO below the replayed log without a crash"),
        finding(is_lc & (F.col("leo") > F.col("_leo")), F.col("_leo"), F.col("leo"),
                "leadership_change reports a LEO above the replayed log (appends missing)"),
        # A follower's append may start above its LEO, over a gap of its leader's log (`Checker._on_append`).
        finding(_is("append") & ((F.col("base_offset") < F.col("_leo"))
                                 | ((F.col("base_offset") > F.col("_leo")) & (F.col("role") != "follower"))),
                F.col("_leo"), F.col("base_offset"), "append base_offset is not the replayed LEO"),
        finding(_is("append") & (F.col("leo") != F.col("last_offset") + 1), F.col("last_offset") + 1, F.col("leo"),
                "append leo disagrees with the batch"),
        finding(_is("hw_change") & (F.col("old_hw") != F.col("_hw")), F.col("_hw"), F.col("old_hw"),
                "hw_change old_hw is not the replayed HW"),
        finding(_is("truncation") & (F.col("old_leo") != F.col("_leo")), F.col("_leo"), F.col("old_leo"),
                "truncation old_leo is not the replayed LEO"),
        finding(_is("isr_change") & F.col("_leading") & (F.col("isr_state") == "proposed") & (old_isr != isr),
                F.size(isr), F.size(old_isr),
                F.concat(F.lit("proposal's old_isr "), listed(old_isr), F.lit(" is not the committed ISR "),
                         listed(isr))),
    )
    # The higher-order `filter` is interpreted, not code-generated: evaluated only on the (rare) rows where a
    # finding holds; any other row has none (a null condition makes a null finding too).
    any_finding = reduce(lambda a, b: a | b, conditions)
    return F.when(any_finding, F.filter(found, lambda x: x.isNotNull())).otherwise(
        F.array().cast(_FINDINGS))


def _stream(rows: DataFrame) -> DataFrame:
    """event_stream_consistent candidates from the replica events (`_stream_checks`), one per finding."""
    return rows.where(F.size("_esc") > 0).select(*PARTITION, "broker_id", "event_id", "ts_ms",
                                                 F.explode("_esc").alias("_e")).select(
        F.lit(STREAM).alias("_kind"), *PARTITION, "broker_id", "event_id", "ts_ms",
        F.lit(None).cast("long").alias("_offset"), F.col("_e.expected").alias("_expected"),
        F.col("_e.actual").alias("_actual"), F.lit(None).cast("long").alias("_unclean_id"),
        F.lit(None).cast("long").alias("_crash_id"), F.array(*[F.lit(None).cast("long")] * 3).alias("_ids"),
        text(F.col("_e.what"), ": replay has ", F.col("_e.expected"), ", event says ", F.col("_e.actual"))
        .alias("_msg"))


def _acks_in_log(rows: DataFrame, isl: DataFrame, cw: DataFrame, appends: DataFrame) -> DataFrame:
    """event_stream_consistent candidates of acknowledged acks=all writes: the acking leader's replayed log
    holds a record with the acknowledged checksum at the acknowledged base offset. Outside the islands the
    record there is the one batch written at that offset (found by its base); inside, the latest write."""
    acks = rows.where(_is(PROBE) & F.col("_ack")).select(
        *PARTITION, "broker_id", "event_id", "ts_ms", F.col("base_offset").alias("offset"), "_lso", "_leo",
        F.col("batch_checksum").alias("_ck"))
    il = _renamed(isl, "i", {"lo": "_i_lo", "hi": "_i_hi"})
    in_isl = acks.join(il, _on("i", F.col("_i_lo") <= F.col("offset"), F.col("offset") <= F.col("_i_hi")),
                       "left_semi")
    contested = lookup(in_isl, cw, "broker_id", "event_id", "_cs").select(
        *acks.columns, F.col("_cs.rec.checksum").alias("_slot"))
    ap = _renamed(appends, "p", {"broker_id": "_p_b", "event_id": "_p_w", "base_offset": "_p_base", "_rec": "_p_rec"})
    cond = _on("p", F.col("broker_id") == F.col("_p_b"), F.col("offset") == F.col("_p_base"),
               F.col("_p_w") < F.col("event_id"))
    plain = acks.join(in_isl, [*PARTITION, "broker_id", "event_id"], "left_anti").join(ap, cond, "left").groupBy(
        *acks.columns).agg(F.max_by(F.col("_p_rec.checksum"), F.col("_p_w")).alias("_slot"))
    both = contested.unionByName(plain)
    present = (F.col("_lso") <= F.col("offset")) & (F.col("offset") < F.col("_leo"))
    slot = F.when(present, F.col("_slot"))
    return both.where(slot.isNull() | (slot != F.col("_ck"))).select(
        F.lit(STREAM).alias("_kind"), *PARTITION, "broker_id", "event_id", "ts_ms",
        F.lit(None).cast("long").alias("_offset"), F.col("_ck").alias("_expected"),
        F.coalesce(slot, F.lit(-1)).alias("_actual"), F.lit(None).cast("long").alias("_unclean_id"),
        F.lit(None).cast("long").alias("_crash_id"), F.array(*[F.lit(None).cast("long")] * 3).alias("_ids"),
        text("acknowledged write at ", F.col("offset"), " is not in the acking leader's log: replay has ",
             F.col("_ck"), ", event says ", F.coalesce(slot, F.lit(-1))).alias("_msg"))


def _check(kind: str) -> Column:
    """The violation struct of a candidate row of `kind`: severity warning when excused (an unclean election
    first, else a crash loss), the excuse leading the evidence and explained at the end of the message."""
    unclean, crash = F.col("_unclean_id"), F.col("_crash_id")
    excuse = F.coalesce(unclean, crash)
    suffix = (F.when(unclean.isNotNull(), text(" (after unclean election event ", unclean, ": allowed data loss)"))
              .when(crash.isNotNull(), text(" (crash recovery event ", crash, " lost the committed record on that "
                                                                              "replica: durability loss Kafka does "
                                                                              "not promise to survive)"))
              .otherwise(F.lit("")))
    ids = [excuse, *[F.col("_ids")[i] for i in range(3)]]
    return violation(
        kind, F.col("_kind") == kind, offset=F.col("_offset"), expected=F.col("_expected"),
        actual=F.col("_actual"), evidence=ids,
        severity=F.when(excuse.isNotNull(), F.lit(WARNING)).otherwise(F.lit(BY_NAME[kind].severity)),
        message=F.concat(F.col("_msg"), suffix),
    )


def committed_prefix_agreement() -> Column:
    """committed_prefix_agreement (§11.3 LogMatching): records below min(HW_a, HW_b) are identical; checked
    at every HW rise of a against every other replica b (excusable: unclean election, crash loss)."""
    return _check(CPA)


def inconsistent_offsets() -> Column:
    """inconsistent_offsets (§11.5, Jepsen inconsistent-offsets): an offset never holds two different committed
    records (excusable: unclean election after the first commit, crash loss on the exposing replica)."""
    return _check(INCONSISTENT)


def truncation_safety() -> Column:
    """truncation_safety (§11.6): no follower truncation removes a record equal to the committed one at its
    offset (excusable: an unclean election after the commit)."""
    return _check(TRUNCATION)


def isr_holds_committed() -> Column:
    """isr_holds_committed (§11.3 StrongIsr / WeakIsr): every record below a leader's HW is present, identical,
    on every committed-ISR member (excusable: an unclean election after the leader's append)."""
    return _check(ISR_HOLDS)


def follower_log_matching() -> Column:
    """follower_log_matching (§11.9 second clause, §8.1, §8.2): a follower only extends a prefix it shares with
    its leader (never excused)."""
    return _check(FOLLOWER_MATCH)


def event_stream_consistent() -> Column:
    """event_stream_consistent (events contract, schemas/README.md): the events agree with the replay — append
    base / leo, truncation old_leo, hw_change old_hw, leadership_change LEO, proposal old_isr, acknowledged
    writes in the acking leader's log (a warning: the other findings of an inconsistent run are suspect)."""
    return _check(STREAM)


SCAN = Scan("log_content", build, {CPA: (committed_prefix_agreement,), INCONSISTENT: (inconsistent_offsets,),
                                   TRUNCATION: (truncation_safety,), ISR_HOLDS: (isr_holds_committed,),
                                   FOLLOWER_MATCH: (follower_log_matching,), STREAM: (event_stream_consistent,)})
"""The record-content scan: contested offsets, probes into the replica replay, committed records."""
