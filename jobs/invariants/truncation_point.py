"""truncation_point (§11.9, §3.5): a follower truncates where getOffsetTruncationState says, and a leader's
DivergingEpoch answer is its epoch cache's answer.

Mirrors `Checker._check_truncation_point`, `_check_diverging_answer`, `_expect_diverging_truncation` and
`_settle_expected_truncation` (`replication_core.checker.checker`), with the epoch-cache rules of
`replication_core.checker.epochs`. Three findings, all of invariant truncation_point:

* truncation target — a follower `truncation` (its broker up) must go to: the DivergingEpoch answer's
  offset (reason diverging_epoch, when one is owed), getOffsetTruncationState of the leader's replayed
  epoch-cache answer and the follower's cache (leader_epoch; a v0 answer carries no epoch), the local HW
  (high_watermark) — the target itself, which `truncateTo` makes the LEO even inside a batch;
  out_of_range: at most the leader's LEO. Other reasons (`full`) are not checked.
* leader answer — a NONE fetch_response carrying a DivergingEpoch must be the named leader's epoch-cache
  answer for the fetch's LastFetchedEpoch (for its latest epoch: that epoch, and an end offset <= its LEO).
* owed truncation — after such an answer, the next fetch / fetch_response / append of the follower (or the
  end of the run, unless the answer's response was still being processed then) must find it truncated below
  the answer's offset, if that offset is below its LEO.

The replay, one window per replica (run_id, topic, partition, broker_id) ordered by event id as in
`jobs.invariants.replica_scan` (role, epoch, down, LEO from `replica_scan.marks`), plus:

* the owed truncation (`ExpectedTruncation`) — set by a NONE DivergingEpoch response, cleared by the next
  fetch / fetch_response / append (which settle it), a truncation, a leadership_change or a crash /
  shutdown / restart; the fetch in flight (`FetchSent`, with its LastFetchedEpoch) as in
  `jobs.invariants.fetch_rules`; the followed leader; the broker's replog.truncation.mode.
* the epoch cache (`LeaderEpochFileCache`): a stack whose pushes and pops depend on its own content, so it
  is folded, not windowed: each replica's cache-changing events (assigns — the appends that change the
  batch epoch, become_leader of a new epoch —, truncations, log start moves, LEO reconciliations, and the
  settlements of an owed truncation, which trim the cache to the LEO) are gathered in event order (a few
  per epoch, not per record) and folded with `aggregate` into the cache at the points a check reads it.
  The state of another replica (the leader) at an event comes from a *probe* row at that event id in the
  leader's window, as in `jobs.invariants.log_content`.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants import replica_scan
from jobs.invariants.base import PARTITION, Scan, ScanInputs, checkpointed, text, violation
from jobs.invariants.base import is_event as _is
from replication_core.config import ReplicationConfig
from replication_core.truncation import TruncationProtocol

INVARIANT = "truncation_point"
REPLICA: tuple[str, ...] = replica_scan.REPLICA
PROBE, END = "_probe", "_end"
"""event_type of the probe rows (another replica's state at an event) and of each replica's end-of-run row."""

_END_ID = 2**62  # after every event: the end-of-run settlement
_DEFAULT_MODE = ReplicationConfig().truncation_mode.value
_V0 = TruncationProtocol.LEADER_EPOCH_V0.value
_COLUMNS: tuple[str, ...] = (
    "run_id", "event_id", "ts_ms", "broker_id", "event_type", "topic", "partition", "leader_epoch", "action",
    "leader_id", "base_offset", "last_offset", "batch_leader_epoch", "leo", "hw", "log_start_offset",
    "old_log_start_offset", "old_leo",
    "truncate_offset", "reason", "fetch_offset", "error", "last_fetched_epoch", "diverging_epoch",
    "diverging_end_offset",
)
_EVENT_TYPES: tuple[str, ...] = (
    "leadership_change", "append", "truncation", "log_start_offset_change", "fetch", "fetch_response",
)
_ENTRY = "struct<e:bigint,s:bigint>"
_CACHE = f"array<{_ENTRY}>"
_OP = ("struct<id:bigint,p:int,k:string,ts:bigint,a:bigint,b:bigint,c:bigint,leo:bigint,bump:boolean,"
       "full:boolean,div:boolean,lead:boolean,ep:bigint>")
_EMIT = f"struct<op:{_OP},cache:{_CACHE},lso:bigint,eo:bigint,ei:bigint>"
_STATE = f"struct<cache:{_CACHE},lso:bigint,eo:bigint,ei:bigint,out:array<{_EMIT}>>"


# --- epoch-cache arithmetic (replication_core.checker.epochs) as column expressions -------------------------

def _entry(e: Column, s: Column) -> Column:
    return F.struct(e.cast("long").alias("e"), s.cast("long").alias("s"))


def _last(cache: Column) -> Column:
    """The latest entry (null for an empty cache)."""
    return F.try_element_at(cache, F.lit(-1))


def _first(cache: Column) -> Column:
    """The oldest entry (null for an empty cache)."""
    return F.try_element_at(cache, F.lit(1))


def _assign(cache: Column, epoch: Column, start: Column) -> Column:
    """`assign`: no-op when `epoch` is the latest and `start` not before its start; otherwise drop the tail
    entries with epoch >= `epoch` or start >= `start` (the cache is strictly increasing in both, so they are a
    suffix) and append."""
    last = _last(cache)
    noop = (F.size(cache) > 0) & (last["e"] == epoch) & (start >= last["s"])
    kept = F.filter(cache, lambda y: (y["e"] < epoch) & (y["s"] < start))
    return F.when(noop, cache).otherwise(F.concat(kept, F.array(_entry(epoch, start))))


def _truncate_from_end(cache: Column, end: Column) -> Column:
    """`truncate_from_end`: drop entries starting at or after `end`."""
    return F.filter(cache, lambda y: y["s"] < end)


def _truncate_from_start(cache: Column, start: Column) -> Column:
    """`truncate_from_start`: the entries starting at or before `start` collapse into the last of them,
    starting at `start`."""
    before = F.filter(cache, lambda y: y["s"] <= start)
    rest = F.filter(cache, lambda y: y["s"] > start)
    return F.when(F.size(before) == 0, cache).otherwise(
        F.concat(F.array(_entry(_last(before)["e"], start)), rest))


def _end_offset_for(cache: Column, requested: Column, leo: Column) -> Column:
    """`end_offset_for(cache, requested, leo)` -> struct(e, o); (-1, -1) when undefined."""
    higher = F.filter(cache, lambda y: y["e"] > requested)
    floor = F.filter(cache, lambda y: y["e"] <= requested)

    def answer(e: Column, o: Column) -> Column:
        return F.struct(e.cast("long").alias("e"), o.cast("long").alias("o"))

    undefined = answer(F.lit(-1), F.lit(-1))
    return (F.when((requested == -1) | (F.size(cache) == 0), undefined)
            .when(_last(cache)["e"] == requested, answer(requested, leo))
            .when(F.size(higher) == 0, undefined)
            .when(F.size(floor) == 0, answer(requested, F.try_element_at(higher, F.lit(1))["s"]))
            .otherwise(answer(_last(floor)["e"], F.try_element_at(higher, F.lit(1))["s"])))


def _truncation_state(leader_epoch: Column, leader_end: Column, follower_leo: Column, fetch_offset: Column,
                      cache: Column) -> Column:
    """`truncation_offset` (getOffsetTruncationState, §3.5) -> struct(o: the offset, done: truncation completed;
    not done in rule 3a, where the leader's epoch is unknown to the follower, which truncates and asks again)."""
    mine = _end_offset_for(cache, leader_epoch, follower_leo)
    offset = (F.when(leader_end == -1, fetch_offset)
              .when(leader_epoch == -1, F.least(leader_end, follower_leo))
              .when(mine["o"] == -1, F.least(leader_end, follower_leo))
              .when(mine["e"] != leader_epoch, F.least(mine["o"], follower_leo))
              .otherwise(F.least(mine["o"], leader_end, follower_leo))).cast("long")
    incomplete = (leader_end != -1) & (leader_epoch != -1) & (mine["o"] != -1) & (mine["e"] != leader_epoch)
    return F.struct(offset.alias("o"), (~incomplete).alias("done"))


def _truncation_offset(leader_epoch: Column, leader_end: Column, follower_leo: Column, fetch_offset: Column,
                       cache: Column) -> Column:
    """`truncation_offset`'s offset (`_truncation_state`'s `o`)."""
    return _truncation_state(leader_epoch, leader_end, follower_leo, fetch_offset, cache)["o"]


# --- the replica rows and their window ---------------------------------------------------------------------

def _rows(bronze: DataFrame) -> DataFrame:
    """Each replica's events (fetcher_change once per listed partition; lifecycle and config copied onto
    the broker's replicas), the probe rows, and one end-of-run row per replica."""
    scoped = (F.col("event_type").isin(*_EVENT_TYPES) & F.col("broker_id").isNotNull()
              & F.col("topic").isNotNull() & F.col("partition").isNotNull())
    # Every finding starts at a truncation or a DivergingEpoch answer, and a partition's replay reads only its
    # own events and its brokers' lifecycle: partitions with neither cannot break the invariant, and a run
    # in steady state has few others. The pruning is one narrow aggregate.
    relevant = bronze.where(scoped & (_is("truncation") | _diverging())).select(*PARTITION).distinct()
    part = bronze.where(scoped).join(relevant, list(PARTITION), "left_semi").select(*_COLUMNS)
    keys = part.select(*REPLICA).distinct()
    fetchers = (bronze.where(_is("fetcher_change") & F.col("broker_id").isNotNull())
                .select("run_id", "event_id", "ts_ms", "broker_id", "event_type", F.explode("partitions").alias("tp"))
                .select("run_id", "event_id", "ts_ms", "broker_id", "event_type", F.col("tp.topic").alias("topic"),
                        F.col("tp.partition").alias("partition")))
    life = bronze.where(F.col("event_type").isin("broker_lifecycle", "broker_config")
                        & F.col("broker_id").isNotNull()).select(
        "run_id", "broker_id", "event_id", "ts_ms", "event_type", "action", "config")
    # Probes: the named leader at each DivergingEpoch answer; every other replica at each truncation whose
    # check reads the followed leader (leader_epoch, out_of_range).
    answers = part.where(_diverging() & F.col("leader_id").isNotNull()).select(
        *PARTITION, F.col("leader_id").alias("broker_id"), "event_id")
    others = part.where(_is("truncation") & F.col("reason").isin("leader_epoch", "out_of_range")).select(
        *PARTITION, F.col("broker_id").alias("_f"), "event_id").join(keys, list(PARTITION)).where(
        F.col("broker_id") != F.col("_f")).drop("_f")
    last_ts = bronze.groupBy("run_id").agg(F.max_by("ts_ms", "event_id").alias("ts_ms"))
    probes = answers.unionByName(others).distinct().select("*", F.lit(PROBE).alias("event_type"), F.lit(1).alias("_p"))
    ends = keys.join(last_ts, "run_id").select(*REPLICA, F.lit(_END_ID).cast("long").alias("event_id"), "ts_ms",
                                               F.lit(END).alias("event_type"), F.lit(2).alias("_p"))
    return (part.withColumn("_p", F.lit(0))
            .unionByName(fetchers.join(keys, list(REPLICA), "left_semi").withColumn("_p", F.lit(0)),
                         allowMissingColumns=True)
            .unionByName(life.join(keys, ["run_id", "broker_id"]).withColumn("_p", F.lit(0)),
                         allowMissingColumns=True)
            .unionByName(probes, allowMissingColumns=True)
            .unionByName(ends, allowMissingColumns=True))


def _diverging() -> Column:
    """A NONE fetch_response carrying a DivergingEpoch (it owes a truncation check)."""
    return (_is("fetch_response") & (F.col("error") == "NONE")
            & (F.col("diverging_epoch").isNotNull() | F.col("diverging_end_offset").isNotNull()))


def _annotate(rows: DataFrame) -> DataFrame:
    """The replay state before each row (module docstring), all but the epoch cache."""
    w = Window.partitionBy(*REPLICA).orderBy("event_id", "_p")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    is_lc = _is("leadership_change")
    closes = _is("broker_lifecycle") & F.col("action").isin(*replica_scan.CLOSING_ACTIONS)
    role_mark, down_mark, leo_mark = replica_scan.marks()
    settles = F.col("event_type").isin("fetch", "fetch_response", "append")
    owed_mark = (F.when(_diverging(), F.col("event_id"))
                 .when(settles | _is("truncation") | is_lc | closes, F.lit(-1)))
    no_fetch = F.struct(*[F.lit(None).cast(t).alias(n) for n, t in
                          (("id", "long"), ("epoch", "int"), ("lfe", "int"))])
    sent_mark = (F.when(_is("fetch"), F.struct(F.col("event_id").alias("id"), F.col("leader_epoch").alias("epoch"),
                                               F.col("last_fetched_epoch").alias("lfe")))
                 .when(_is("fetch_response") | is_lc | closes | _is("fetcher_change"), no_fetch))
    mode = F.coalesce(F.col("config")["replog.truncation.mode"], F.lit(_DEFAULT_MODE))
    s1 = rows.select(
        "*",
        F.coalesce(F.last(role_mark, True).over(before), F.lit("none")).alias("_role"),
        F.coalesce(F.last(F.when(is_lc, F.col("leader_epoch")).when(closes, F.lit(-1)), True).over(before),
                   F.lit(-1)).cast("long").alias("_epoch"),
        F.coalesce(F.last(down_mark, True).over(before), F.lit(False)).alias("_down"),
        F.coalesce(F.last(leo_mark, True).over(before), F.lit(0)).cast("long").alias("_leo"),
        # r.leader_id: set by a become_follower only (-1: it named none).
        F.last(F.when(is_lc & (F.col("action") != "become_leader"), F.coalesce(F.col("leader_id"), F.lit(-1))),
               True).over(before).alias("_leader_mark"),
        F.last(F.when(_is("truncation"), F.col("event_id")), True).over(before).alias("_last_truncation"),
        # r.lso_raised_by: the last log start offset change that raised it.
        F.last(F.when(_is("log_start_offset_change") & F.coalesce(
            F.col("log_start_offset") > F.col("old_log_start_offset"), F.lit(True)), F.col("event_id")),
               True).over(before).alias("_lso_raised"),
        F.last(owed_mark, True).over(before).alias("_owed_mark"),
        F.last(sent_mark, True).over(before).alias("_sent"),
        F.coalesce(F.last(F.when(_is("broker_config"), mode), True).over(before), F.lit(_DEFAULT_MODE))
        .alias("_mode"),
    )
    # Rows the cache fold reads: every cache-changing event, every read of it, every settlement of an owed
    # truncation; appends only where they may change the latest epoch (after anything but an append of
    # the same batch epoch: an append always leaves its epoch the latest).
    settling = settles & (F.col("_owed_mark") >= 0)
    reads = (is_lc | _is("truncation") | _is("log_start_offset_change") | closes | _is(PROBE) | _is(END)
             | _diverging() | settling)
    prev = F.last(F.when(reads | _is("append"), F.struct(_is("append").alias("app"),
                                                         F.col("batch_leader_epoch").alias("e"))), True).over(before)
    s2 = s1.select("*", settling.alias("_settling"), reads.alias("_reads"), prev.alias("_prev"))
    kept_append = _is("append") & (F.col("_prev").isNull() | ~F.col("_prev.app")
                                   | (F.col("_prev.e") != F.col("batch_leader_epoch")))
    return s2.withColumn("_fold", F.col("_reads") | kept_append)


def _op() -> Column:
    """A fold row as the fold reads it (`_OP`): kind, parameters, the LEO before it, probe state."""
    k = (F.when(_is("append"), "append").when(_is("fetch"), "fetch").when(_is("fetch_response"), "resp")
         .when(_is("leadership_change"), "lc").when(_is("truncation"), "trunc")
         .when(_is("log_start_offset_change"), "lso").when(_is("broker_lifecycle"), "close")
         .otherwise(F.col("event_type")))
    is_lc = _is("leadership_change")
    bump = (is_lc & (F.col("action") == "become_leader")
            & (F.coalesce(F.col("leader_epoch").cast("long"), F.col("_epoch")) > F.col("_epoch")))
    a = (F.when(_is("append"), F.col("batch_leader_epoch")).when(is_lc, F.col("leader_epoch"))
         .when(_is("truncation"), F.col("truncate_offset")).when(_is("log_start_offset_change"),
                                                                 F.col("log_start_offset"))
         .when(_is("fetch_response"), F.coalesce(F.col("diverging_epoch"), F.lit(-1))))
    b = (F.when(_is("append"), F.col("base_offset")).when(is_lc, F.col("leo"))
         .when(_is("fetch_response"), F.coalesce(F.col("diverging_end_offset"), F.lit(-1))))
    full = _is("truncation") & ((F.col("reason") == "full") | (F.col("truncate_offset") > F.col("_leo")))
    return F.struct(
        F.col("event_id").alias("id"), F.col("_p").alias("p"), k.alias("k"), F.col("ts_ms").alias("ts"),
        a.alias("a"), b.alias("b"), F.col("fetch_offset").alias("c"), F.col("_leo").alias("leo"), bump.alias("bump"),
        full.alias("full"), _diverging().alias("div"), (F.col("_role") == "leader").alias("lead"),
        F.col("_epoch").alias("ep"),
    ).cast(_OP)


def _let(value: Column, body: Callable[[Column], Column]) -> Column:
    """`body(v)` with `v` bound to `value`, evaluated once.

    Column expressions are trees, not DAGs: a value used n times is copied n times, and the fold's step
    nests such uses (the cache in the assignment, the assignment in the truncation offset, ...), so the
    inlined step grew to tens of thousands of nodes, and Spark's analyzer and optimizer spent most of this
    scan's CPU walking them. A one-element `transform` binds the value to a lambda variable instead."""
    return F.element_at(F.transform(F.array(value), body), 1)


def _step(acc: Column, x: Column) -> Column:
    """One event of the cache fold (`_STATE`): settle an owed truncation, apply the event, emit what the
    checks read (the state before a truncation or at a probe, an owed truncation that did not happen)."""
    eo = acc["eo"]
    # `_settle_expected_truncation`: the target is below the LEO (a violation, emitted) or the cache is
    # trimmed to the LEO (`truncateTo` at or past it).
    settle = x["k"].isin("append", "fetch", "resp", END) & eo.isNotNull()
    owed = settle & (eo < x["leo"])
    trimmed = F.when(settle & ~owed, _truncate_from_end(acc["cache"], x["leo"])).otherwise(acc["cache"])
    # The settled cache is read by every branch below: bound once (`_let`), not copied into each.
    return _let(trimmed, lambda cache: _apply(acc, x, cache, settle, owed))


def _apply(acc: Column, x: Column, cache: Column, settle: Column, owed: Column) -> Column:
    """`_step` after the settlement: `cache` is the settled cache (a bound variable)."""
    lso, eo, ei, out = acc["lso"], acc["eo"], acc["ei"], acc["out"]
    k = x["k"]
    null = F.lit(None).cast("long")
    emit = F.struct(x.alias("op"), cache.alias("cache"), lso.alias("lso"), eo.alias("eo"), ei.alias("ei"))
    out = F.when(owed | k.isin("trunc", PROBE), F.concat(out, F.array(emit.cast(_EMIT)))).otherwise(out)
    eo = F.when(settle, null).otherwise(eo)
    ei = F.when(settle, null).otherwise(ei)
    # The event itself.
    reconciled = F.when(x["b"].isNotNull() & (x["b"] < x["leo"]), _truncate_from_end(cache, x["b"])).otherwise(cache)
    new_cache = (
        F.when((k == "append") & ~x["lead"], _let(_truncate_from_end(cache, x["leo"]), lambda c: _assign_new(c, x)))
        .when(k == "append", _assign_new(cache, x))
        .when((k == "lc") & x["bump"], _let(reconciled, lambda r: _assign(r, x["a"], F.coalesce(x["b"], x["leo"]))))
        .when(k == "lc", reconciled)
        .when((k == "trunc") & x["full"], F.array().cast(_CACHE))
        .when(k == "trunc", _truncate_from_end(cache, x["a"]))
        .when((k == "lso") & (x["a"] > lso), _truncate_from_start(cache, x["a"]))
        .otherwise(cache))
    new_lso = (F.when(k == "lso", x["a"])
               .when((k == "trunc") & (x["full"] | (x["a"] < lso)), x["a"])
               .when((k == "lc") & (x["b"] < lso), x["b"])  # a shorter log (crash loss, a new log) starts no later
               .otherwise(lso))
    clears = k.isin("trunc", "lc", "close")
    expect = (k == "resp") & x["div"]
    # A response leaves the cache as settled (new_cache is `cache` there), so the offset reads `cache`.
    new_eo = (F.when(expect, _truncation_offset(x["a"], x["b"], x["leo"], x["c"], cache))
              .when(clears, null).otherwise(eo))
    new_ei = F.when(expect, x["id"]).when(clears, null).otherwise(ei)
    return F.struct(new_cache.cast(_CACHE).alias("cache"), new_lso.cast("long").alias("lso"),
                    new_eo.cast("long").alias("eo"), new_ei.cast("long").alias("ei"), out.alias("out")).cast(_STATE)


def _assign_new(cache: Column, x: Column) -> Column:
    """An append's `assign`, when its batch epoch is not the latest of `cache`. A follower's cache is trimmed at
    its LEO first (by the caller): the fetcher's `truncateTo` at the LEO, which emits no event, drops an epoch the
    replica opened as a leader without appending (`Checker._on_append`)."""
    return F.when((F.size(cache) == 0) | (_last(cache)["e"] != x["a"]), _assign(cache, x["a"], x["b"])).otherwise(cache)


def _emits(rows: DataFrame) -> DataFrame:
    """Fold each replica's cache rows in event order; one row per emitted state (`_EMIT` fields)."""
    ops = rows.where(F.col("_fold")).groupBy(*REPLICA).agg(F.array_sort(F.collect_list(_op())).alias("_ops"))
    zero = F.struct(F.array().cast(_CACHE).alias("cache"), F.lit(0).cast("long").alias("lso"),
                    F.lit(None).cast("long").alias("eo"), F.lit(None).cast("long").alias("ei"),
                    F.array().cast(f"array<{_EMIT}>").alias("out")).cast(_STATE)
    folded = ops.select(*REPLICA, F.explode(F.aggregate("_ops", zero, _step, lambda acc: acc["out"])).alias("_x"))
    return folded.select(*REPLICA, F.col("_x.op.id").alias("event_id"), F.col("_x.op.k").alias("_k"),
                         F.col("_x.op.ts").alias("ts_ms"), F.col("_x.op.leo").alias("_leo"),
                         F.col("_x.op.lead").alias("_lead"), F.col("_x.op.ep").alias("_ep"),
                         F.col("_x.cache").alias("_cache"), F.col("_x.lso").alias("_lso"),
                         F.col("_x.eo").alias("_eo"), F.col("_x.ei").alias("_ei"))


def _candidate(df: DataFrame, kind: str, replica: Column, expected: Column, actual: Column, ids: list[Column],
               message: Column) -> DataFrame:
    return df.select(
        F.lit(kind).alias("_kind"), *PARTITION, replica.cast("int").alias("_replica"), "event_id", "ts_ms",
        expected.cast("long").alias("_expected"), actual.cast("long").alias("_actual"),
        F.array(*[c.cast("long") for c in ids]).alias("_ids"), message.alias("_msg"))


def build(inputs: ScanInputs) -> DataFrame:
    """One row per violation candidate (`_kind`: answer, target, owed) with the fields its check reports."""
    bronze = inputs.bronze
    rows = checkpointed(_annotate(_rows(bronze)))
    emits = checkpointed(_emits(rows))
    probes = emits.where(F.col("_k") == PROBE).select(
        *PARTITION, F.col("broker_id").alias("_l"), "event_id", F.col("_lead").alias("_l_lead"),
        F.col("_ep").alias("_l_epoch"), F.col("_leo").alias("_l_leo"), F.col("_cache").alias("_l_cache"))

    # Leader answer (`_check_diverging_answer`).
    answers = rows.where(_diverging() & (F.col("_p") == 0) & F.col("_sent.lfe").isNotNull()).select(
        *PARTITION, "event_id", "ts_ms", F.col("leader_id").alias("_l"), "_sent",
        F.coalesce("diverging_epoch", F.lit(-1)).alias("_got_e"), F.coalesce("diverging_end_offset", F.lit(-1))
        .alias("_got_o"))
    raised = rows.where(_is(PROBE)).select(*PARTITION, F.col("broker_id").alias("_l"), "event_id",
                                           F.col("_lso_raised").alias("_l_lso_raised"))
    on = [*PARTITION, "_l", "event_id"]
    led = answers.join(probes, on).join(raised, on, "left").where(
        F.col("_l_lead") & (F.col("_l_epoch") == F.col("_sent.epoch")) & (F.size("_l_cache") > 0))
    ans = _end_offset_for(F.col("_l_cache"), F.col("_sent.lfe").cast("long"), F.col("_l_leo"))
    led = led.select("*", ans.alias("_ans"))
    latest = F.col("_ans.e") == _last(F.col("_l_cache"))["e"]
    # An epoch older than every cached one is answered with the first entry's start, which retention moves up:
    # when the leader's log start rose after the fetch was sent, the answer is bounded by the start now (an
    # answer from before the rise may name the floor epoch that the rise collapsed).
    bounded = ((F.col("_sent.lfe").cast("long") < _first(F.col("_l_cache"))["e"])
               & F.coalesce(F.col("_l_lso_raised") > F.col("_sent.id"), F.lit(False)))
    same_epoch = F.col("_got_e") == F.col("_ans.e")
    ok = (F.when(bounded, (F.col("_got_e") <= F.col("_ans.e")) & (F.col("_got_o") <= F.col("_ans.o")))
          .when(latest, same_epoch & (F.col("_got_o") <= F.col("_l_leo")))
          .otherwise(same_epoch & (F.col("_got_o") == F.col("_ans.o"))))
    wrong = _candidate(
        led.where(~ok), "answer", F.col("_l"), F.col("_ans.o"), F.col("_got_o"), [F.col("_sent.id")],
        text("leader answered DivergingEpoch (", F.col("_got_e"), ", ", F.col("_got_o"), ") for LastFetchedEpoch ",
             F.col("_sent.lfe"), ", but its epoch cache gives ", F.when(bounded, F.lit("at most ")).otherwise(""),
             "(", F.col("_ans.e"), ", ", F.col("_ans.o"), ")"))

    # Truncation targets (`_check_truncation_point`), from the follower's state before its truncation.
    trunc = rows.where(_is("truncation") & ~F.col("_down")).select(
        *REPLICA, "event_id", "ts_ms", "reason", "truncate_offset", "old_leo", "hw", "_role", "_epoch",
        "_leader_mark", "_last_truncation", "_mode")
    trunc = trunc.join(emits.where(F.col("_k") == "trunc").select(*REPLICA, "event_id", "_cache", "_lso", "_leo",
                                                                   "_eo", "_ei"), [*REPLICA, "event_id"])
    following = (F.col("_role") == "follower") & (F.col("_leader_mark") >= 0)
    pr = probes.select(*[F.col(c).alias(f"_q_{c}") for c in (*PARTITION, "event_id")], "_l", "_l_lead", "_l_epoch",
                       "_l_leo", "_l_cache")
    on = F.col("_leader_mark") == F.col("_l")
    for c in (*PARTITION, "event_id"):
        on = on & (F.col(c) == F.col(f"_q_{c}"))
    trunc = trunc.join(pr, on, "left").where(
        ~F.col("reason").isin("leader_epoch", "out_of_range")
        | (following & F.col("_l_lead") & (F.col("_l_epoch") == F.col("_epoch"))))
    # `_protocol`: the mode the checker parsed (`TruncationMode` values, spelled exactly).
    v0 = F.col("_mode") == _V0
    old_leo = F.col("old_leo")

    def ask(df: DataFrame, cache: str, n: int) -> DataFrame:
        """One OffsetsForLeaderEpoch round for the follower's latest epoch in column `cache`, as columns
        `_req{n}` (epoch asked), `_ask{n}` (answer), `_le{n}` (the answer's epoch as the follower reads it) and
        `_st{n}` (the truncation state). One select per step: as nested expressions, each round repeats its
        inputs' trees, and the analyser spent ~20 s of a tiny audit on the resulting 300 kB expression."""
        df = df.select("*", _last(F.col(cache))["e"].alias(f"_req{n}"))
        df = df.select("*", _end_offset_for(F.col("_l_cache"), F.col(f"_req{n}"), F.col("_l_leo")).alias(f"_ask{n}"))
        df = df.select("*", F.when(v0, F.lit(-1).cast("long")).otherwise(F.col(f"_ask{n}.e")).alias(f"_le{n}"))
        return df.select("*", _truncation_state(F.col(f"_le{n}"), F.col(f"_ask{n}.o"), old_leo, old_leo,
                                                F.col(cache)).alias(f"_st{n}"))

    # Rule 3a at the LEO: no record changes and no event, but the cache is trimmed at the LEO and the follower
    # asks again for its latest epoch below it; that round cannot end at the LEO again (the checker's loop).
    asking = ask(trunc, "_cache", 1).select("*", _truncate_from_end(F.col("_cache"), old_leo).alias("_trimmed"))
    asking = asking.select("*", (~F.col("_st1.done") & (F.col("_st1.o") >= old_leo) & (F.size("_trimmed") > 0))
                           .alias("_again"))
    asking = ask(asking, "_trimmed", 2)
    again = F.col("_again")
    asked = F.when(again, F.col("_ask2")).otherwise(F.col("_ask1"))
    le = F.when(again, F.col("_le2")).otherwise(F.col("_le1"))
    by_leader = F.when(again, F.col("_st2.o")).otherwise(F.col("_st1.o"))
    reason = F.col("reason")
    # An epoch older than every entry of the leader's cache is answered with its first entry's start, which
    # retention moves up with the log start offset between the (unlogged) answer and the truncation: not
    # rebuildable, skipped as the checker does (in either round).
    first_cached = _first(F.col("_l_cache"))["e"]
    rebuildable = ~F.coalesce(F.col("_req1") < first_cached, F.lit(False)) & ~(
        again & F.coalesce(F.col("_req2") < first_cached, F.lit(False)))
    answered = (F.col("_ask1.o") != -1) & ~(again & (F.col("_ask2.o") == -1))
    target = (F.when(reason == "diverging_epoch", F.col("_eo"))
              .when((reason == "leader_epoch") & (F.size("_cache") > 0) & answered & rebuildable, by_leader)
              .when(reason == "high_watermark", F.least("hw", "old_leo")))
    # Materialised (one row per truncation): the filters below would otherwise be pushed through the
    # projections with `_o` substituted, an 800 kB predicate that took seconds to optimise and compile.
    targets = checkpointed(asking.select(
        *REPLICA, "event_id", "ts_ms", "reason", "truncate_offset", "old_leo", "_l", "_ei", "_last_truncation",
        le.alias("_le"), asked["o"].alias("_lo"), target.alias("_o"))).where(F.col("_o").isNotNull())
    why = (F.when(reason == "diverging_epoch", F.lit("the DivergingEpoch answer"))
           .when(reason == "leader_epoch", text("leader ", F.col("_l"), "'s answer (", F.col("_le"), ", ",
                                                F.col("_lo"), ")"))
           .otherwise(F.lit("the local high watermark")))
    missed = _candidate(
        targets.where(F.col("truncate_offset") != F.col("_o")), "target", F.col("broker_id"), F.col("_o"),
        F.col("truncate_offset"),
        [F.when(reason == "diverging_epoch", F.col("_ei")).otherwise(F.col("_last_truncation"))],
        text(reason, " truncation to ", F.col("truncate_offset"), ", but ", why, " gives ", F.col("_o"),
             " (LEO was ", F.col("old_leo"), ")"))
    beyond = _candidate(
        trunc.where((reason == "out_of_range") & (F.col("truncate_offset") > F.col("_l_leo"))), "target",
        F.col("broker_id"), F.col("_l_leo"), F.col("truncate_offset"), [],
        text("out-of-range truncation to ", F.col("truncate_offset"), " is above leader ", F.col("_l"),
             "'s LEO ", F.col("_l_leo")))

    # Owed truncations that did not happen (`_settle_expected_truncation`), except those the run ended before
    # they were due (`_still_processing`).
    owed = emits.where(F.col("_k").isin("append", "fetch", "resp", END)).select(
        *REPLICA, "event_id", "ts_ms", "_leo", "_ei", F.col("_eo").alias("_o"))
    at_end = F.col("event_id") == _END_ID
    if not owed.where(at_end).isEmpty():  # `emits` is checkpointed: a cheap look that spares two bronze scans
        owed = owed.join(_still_processing(bronze, owed.where(at_end)), ["run_id", "_ei"], "left").where(
            ~(at_end & F.coalesce(F.col("_not_due"), F.lit(False)))).drop("_not_due")
    kept = _candidate(
        owed.withColumn("event_id", F.when(at_end, F.lit(-1)).otherwise(F.col("event_id"))), "owed",
        F.col("broker_id"), F.col("_o"), F.col("_leo"), [F.col("_ei")],
        text("DivergingEpoch answer required truncation to ", F.col("_o"), " but the log kept LEO ",
             F.col("_leo")))
    return wrong.unionByName(missed).unionByName(beyond).unionByName(kept).localCheckpoint(eager=True)


def _still_processing(bronze: DataFrame, owed_at_end: DataFrame) -> DataFrame:
    """(run_id, _ei, _not_due) for the answers `_ei` of `owed_at_end` (owed truncations at the end of the run)
    whose fetch response was still being processed when the run ended (`Checker._still_processing`): a later
    answer of the same response (broker, fetcher, leader, response_received_ms) was OFFSET_OUT_OF_RANGE and the
    fetcher sent no fetch since. Every frame joined here is keyed by those few answers."""
    key = ["run_id", "broker_id", "fetcher_id", "leader_id"]
    responses = bronze.where(_is("fetch_response")).select(*key, "event_id", "response_received_ms", "error")
    answers = owed_at_end.select("run_id", F.col("_ei").alias("event_id")).distinct().join(
        responses.drop("error"), ["run_id", "event_id"])
    out_of_range = responses.where(F.col("error") == "OFFSET_OUT_OF_RANGE").select(
        *key, "response_received_ms", F.col("event_id").alias("_oor"))
    blocked = answers.join(out_of_range, [*key, "response_received_ms"]).where(
        F.col("_oor") > F.col("event_id")).select(*key, "event_id").distinct()
    fetches = bronze.where(_is("fetch")).select(*[F.col(k).alias(f"_f_{k}") for k in key],
                                                F.col("event_id").alias("_f_id"))
    since = F.col("_f_id") > F.col("event_id")
    for k in key:
        since = since & (F.col(k) == F.col(f"_f_{k}"))
    return blocked.join(fetches, since, "left_anti").select(
        "run_id", F.col("event_id").alias("_ei"), F.lit(True).alias("_not_due"))


def _check(kind: str) -> Column:
    """The violation struct of a candidate row of `kind` (one proving event besides the detecting one)."""
    return violation(INVARIANT, F.col("_kind") == kind, replica=F.col("_replica"), expected=F.col("_expected"),
                     actual=F.col("_actual"), evidence=[F.try_element_at(F.col("_ids"), F.lit(1))],
                     message=F.col("_msg"))


def leader_answer() -> Column:
    """truncation_point, leader half (§2.2 step 4, KIP-279): a DivergingEpoch is the named leader's epoch-cache
    answer for the fetch's LastFetchedEpoch (for its latest epoch: any end offset up to its LEO)."""
    return _check("answer")


def truncation_target() -> Column:
    """truncation_point (§11.9, §3.5): a follower truncation goes to getOffsetTruncationState's offset,
    rounded down to a batch start (out_of_range: at most the leader's LEO)."""
    return _check("target")


def owed_truncation() -> Column:
    """truncation_point (§3.5, §3.6): a DivergingEpoch answer below the LEO is followed by a truncation before
    the follower's next fetch, response or append (or the end of the run)."""
    return _check("owed")


SCAN = Scan("truncation_point", build, {INVARIANT: (leader_answer, truncation_target, owed_truncation)})
"""The truncation-point scan and its checks."""
