"""One window pass over each replica's fetch traffic: the fetch in flight, the fetch lag, throttling.

Mirrors the follower-side replay of `replication_core.checker.checker` (`_on_fetch`, `_on_fetch_response`,
`_on_fetcher_change`, `_on_quota_throttle`) with the replica as the window partition (run_id, topic,
partition, broker_id) and `event_id` as the order; the state a check sees is the state *before* its event:

* fetch in flight (`FetchSent`) — the replica's last `fetch`; a `fetch_response` (any error), a
  `leadership_change`, a crash / shutdown / restart of its broker, or a `fetcher_change` listing the
  partition clears it. A response is judged only when the fetch in flight has the same fetch_offset.
* fetch lag (`ReplicaState.lag`, `ReplicaFetcherThread`'s lag) — set by a NONE response that carries a
  leader HW and no DivergingEpoch: HW - (fetch_offset + record_count) for a non-empty one, HW -
  fetch_offset for an empty one, but an empty one only sets it while it is unknown; a leadership_change
  or a fetcher_change listing the partition makes it unknown again, and so does an OFFSET_OUT_OF_RANGE
  response (the fetcher then sets it from the leader's end offset, which no event carries), after which
  only a non-empty response sets it. So the lag is that of the last non-empty response since the last
  reset, else that of the first response since a reset other than an out-of-range one.
* leader side (for a leader-side quota_throttle) — leading and the committed ISR, as `replica_scan`.
* config — the broker's last `broker_config` (Kafka's defaults before any): replica.socket.timeout.ms,
  replog.truncation.mode and the raw `topic.<t>.<side>.replication.throttled.replicas` lists.

The leader a response names lives in another replica's window, so its state comes from two small derived
frames broadcast onto the responses (no shuffle of the fetch rows), each matching at most one row:
`leader_segments` (one row per leadership_change / crash / shutdown / restart of a replica: the state it
starts, up to the next one) gives the leader's state at the response, and `leader_tenures` (its leader
tenures, each with the start of its next tenure in the same epoch) the last tenure in the fetch's epoch
that started before the response. Tenures of a replica are disjoint and ordered, so that one is the
only candidate: it overlaps the fetch's flight iff it had not ended by the time the fetch was sent.

Invariants (§ of /work/shared/docs/kafka-replication.md): fetch_epoch_fenced (§11.8, §8.3 KIP-320),
delayed_fetch_bound (§11.11, §5) and quota_throttle_legal (§11.10, §4).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.invariants.base import Scan, ScanInputs, text, violation
from jobs.invariants.base import is_event as _is
from jobs.invariants.replica_scan import CLOSING_ACTIONS, REPLICA
from jobs.session import lookup
from jobs.transforms.faults import fault_ends
from replication_core.config import LONG_MAX, ReplicationConfig
from replication_core.truncation import FLAGS
from schemas.events import HOLDING_FAULTS

FETCH_EVENT_TYPES: tuple[str, ...] = ("fetch", "fetch_response", "quota_throttle", "leadership_change", "isr_change")
"""Partition-scoped event types of this scan (plus fetcher_change, lifecycle and config, broker-wide)."""

_COLUMNS: tuple[str, ...] = (
    "run_id", "event_id", "ts_ms", "broker_id", "event_type", "topic", "partition", "leader_epoch", "action",
    "role", "isr", "isr_state", "leader_id", "fetch_offset", "error", "leader_hw", "record_count",
    "diverging_epoch", "diverging_end_offset", "response_received_ms", "follower_id", "measured_rate",
    "quota_bound",
)
_DEFAULTS = ReplicationConfig()
FENCING_MODES: tuple[str, ...] = tuple(p.value for p, flags in FLAGS.items() if flags.current_leader_epoch)
"""replog.truncation.mode values whose fetches carry KIP-320's CurrentLeaderEpoch (others are not judged)."""


def fetch_events(bronze: DataFrame) -> DataFrame:
    """Each replica's fetch-side events plus its broker's fetcher_change, lifecycle and config events."""
    scoped = (F.col("event_type").isin(*FETCH_EVENT_TYPES) & F.col("broker_id").isNotNull()
              & F.col("topic").isNotNull() & F.col("partition").isNotNull())
    part = bronze.where(scoped).select(*_COLUMNS)
    # A fetcher_change lists its partitions: one row per (broker, listed partition).
    fetchers = (bronze.where(_is("fetcher_change") & F.col("broker_id").isNotNull())
                .select("run_id", "event_id", "ts_ms", "broker_id", "event_type", F.explode("partitions").alias("tp"))
                .select("run_id", "event_id", "ts_ms", "broker_id", "event_type", F.col("tp.topic").alias("topic"),
                        F.col("tp.partition").alias("partition")))
    keys = part.select(*REPLICA).distinct()
    life = bronze.where(F.col("event_type").isin("broker_lifecycle", "broker_config")
                        & F.col("broker_id").isNotNull()).select(
        "run_id", "broker_id", "event_id", "ts_ms", "event_type", "action", "config")
    # Lifecycle and config are broker-wide: copy each onto the broker's replicas (keys are small).
    return (part.unionByName(fetchers, allowMissingColumns=True)
            .unionByName(life.join(keys, ["run_id", "broker_id"]), allowMissingColumns=True))


def _config_value(key: Column | str) -> Column:
    return F.col("config")[key]


def annotate(rows: DataFrame) -> DataFrame:
    """Add the replay state before each row (see the module docstring); rows from `fetch_events`."""
    w = Window.partitionBy(*REPLICA).orderBy("event_id")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    is_lc, is_resp, is_fc, is_cfg = _is("leadership_change"), _is("fetch_response"), _is("fetcher_change"), \
        _is("broker_config")
    closes = _is("broker_lifecycle") & F.col("action").isin(*CLOSING_ACTIONS)
    role_mark = (F.when(is_lc, F.when(F.col("action") == "become_leader", "leader").otherwise("follower"))
                 .when(closes, "none"))
    # A cleared fetch is a struct of nulls, so `last(..., ignorenulls)` still stops at it.
    sent_mark = (F.when(_is("fetch"), F.struct(F.col("event_id").alias("id"), F.col("ts_ms").alias("ts"),
                                               F.col("leader_epoch").cast("int").alias("epoch"),
                                               F.col("fetch_offset").alias("offset")))
                 .when(is_resp | is_lc | closes | is_fc,
                       F.struct(F.lit(None).cast("long").alias("id"), F.lit(None).cast("long").alias("ts"),
                                F.lit(None).cast("int").alias("epoch"), F.lit(None).cast("long").alias("offset"))))
    answered = (is_resp & (F.col("error") == "NONE") & F.col("diverging_epoch").isNull()
                & F.col("diverging_end_offset").isNull() & F.col("leader_hw").isNotNull())
    # validBytes > 0: whole batches to append (the start of a batch the leader's byte range cut counts in `bytes`).
    non_empty = F.coalesce(F.col("record_count"), F.lit(0)) > 0
    out_of_range = is_resp & (F.col("error") == "OFFSET_OUT_OF_RANGE")
    # try_add: past Long.MAX (a bad record) the next offset is above any HW, so the lag is 0, not a job failure.
    nxt = F.try_add(F.col("fetch_offset"),
                    F.when(non_empty, F.coalesce(F.col("record_count"), F.lit(0))).otherwise(0).cast("long"))
    lag = F.greatest(F.lit(0).cast("long"), F.col("leader_hw") - nxt)
    lag_struct = F.struct(F.col("event_id").alias("id"), lag.alias("lag"))
    topic_key = F.concat(F.lit("topic."), F.col("topic"), F.lit("."))
    s1 = rows.select(
        "*",
        (F.coalesce(F.last(role_mark, True).over(before), F.lit("none")) == "leader").alias("_leading"),
        F.last(sent_mark, True).over(before).alias("_sent"),
        F.last(F.when(is_lc | is_fc | out_of_range, F.col("event_id")), True).over(before).alias("_lag_reset"),
        F.last(F.when(is_lc | is_fc, F.lit(False)).when(out_of_range, F.lit(True)), True).over(before)
        .alias("_reset_out_of_range"),
        F.last(F.when(answered, F.col("event_id")), True).over(before).alias("_prev_answer"),
        F.last(F.when(answered & non_empty, lag_struct), True).over(before).alias("_last_non_empty"),
        answered.alias("_answered"),
        lag_struct.alias("_lag_struct"),
        # A broker_config rebuilds the whole config: a key it lacks is back at its default.
        F.coalesce(F.last(F.when(is_cfg, F.coalesce(
            _config_value(F.lit("replica.socket.timeout.ms")).try_cast("long"),
            F.lit(_DEFAULTS.replica_socket_timeout_ms))), True).over(before),
            F.lit(_DEFAULTS.replica_socket_timeout_ms)).alias("_socket_timeout"),
        F.coalesce(F.last(F.when(is_cfg, F.coalesce(_config_value(F.lit("replog.truncation.mode")),
                                                     F.lit(_DEFAULTS.truncation_mode.value))), True).over(before),
                   F.lit(_DEFAULTS.truncation_mode.value)).alias("_mode"),
        F.last(F.when(is_cfg, F.struct(
            _config_value(F.concat(topic_key, F.lit("leader.replication.throttled.replicas"))).alias("leader"),
            _config_value(F.concat(topic_key, F.lit("follower.replication.throttled.replicas"))).alias("follower"),
            F.col("event_id").alias("event_id"))), True).over(before).alias("_throttled"),
    )
    empty = F.array().cast("array<int>")
    leading_commit = _is("isr_change") & F.col("_leading") & (F.col("isr_state") == "committed")
    isr_mark = (F.when(is_lc & (F.col("action") == "become_leader"), F.array_distinct(F.coalesce("isr", empty)))
                .when(is_lc | closes, empty)
                .when(leading_commit, F.array_distinct(F.coalesce("isr", empty))))
    # The lag is unknown at an answer when no answer came since the last reset: that answer sets it even empty.
    first_since_reset = F.col("_answered") & (F.col("_prev_answer").isNull() | (
        F.col("_lag_reset").isNotNull() & (F.col("_prev_answer") < F.col("_lag_reset"))))
    s2 = s1.select(
        "*",
        F.coalesce(F.last(isr_mark, True).over(before), empty).alias("_isr"),
        F.last(F.when(first_since_reset, F.col("_lag_struct")), True).over(before).alias("_first_answer"),
    )

    def since_reset(c: str) -> Column:
        return F.col(c).isNotNull() & (F.col("_lag_reset").isNull() | (F.col(f"{c}.id") > F.col("_lag_reset")))

    lagged = s2.select(
        "*",
        F.when(since_reset("_last_non_empty"), F.col("_last_non_empty.lag"))
        .when(since_reset("_first_answer") & ~F.coalesce("_reset_out_of_range", F.lit(False)),
              F.col("_first_answer.lag")).alias("_lag"),
    )
    return lagged


def leader_segments(bronze: DataFrame) -> DataFrame:
    """One row per leadership_change / closing lifecycle event of a replica with a leadership_change: the
    state it starts up to the next such event (`_s_start`, `_s_end`), the replica's epoch then (-1 after a
    crash / shutdown / restart), whether it leads, and whether any leadership_change came so far — the
    checker's `ReplicaState.tenures`, cut at every state change."""
    is_lc = _is("leadership_change")
    closes = _is("broker_lifecycle") & F.col("action").isin(*CLOSING_ACTIONS)
    scoped = F.col("topic").isNotNull() & F.col("partition").isNotNull() & F.col("broker_id").isNotNull()
    lc = bronze.where(is_lc & scoped).select(*REPLICA, "event_id", "event_type", "action", "leader_epoch")
    keys = lc.select(*REPLICA).distinct()
    life = bronze.where(closes & F.col("broker_id").isNotNull()).select(
        "run_id", "broker_id", "event_id", "event_type", "action")
    # Crashes are broker-wide: copy each onto the broker's replicas that ever had a leadership_change.
    bounds = lc.unionByName(life.join(keys, ["run_id", "broker_id"]), allowMissingColumns=True)
    w = Window.partitionBy(*REPLICA).orderBy("event_id")
    upto = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return bounds.select(
        *[F.col(c).alias(f"_s_{c}") for c in REPLICA],
        F.col("event_id").alias("_s_start"),
        F.lead("event_id").over(w).alias("_s_end"),
        F.coalesce(F.last(F.when(is_lc, F.col("leader_epoch")).when(closes, F.lit(-1)), True).over(upto),
                   F.lit(-1)).alias("_s_epoch"),
        (is_lc & (F.col("action") == "become_leader")).alias("_s_leading"),
        (F.max(is_lc.cast("int")).over(upto) > 0).alias("_s_seen"),
    )


def leader_tenures(segments: DataFrame) -> DataFrame:
    """The leader tenures among `leader_segments` (`_t_*`), each with the start of the replica's next leader
    tenure in the same epoch (`_t_next`, null if none)."""
    keys = [f"_s_{c}" for c in REPLICA]
    w = Window.partitionBy(*keys, "_s_epoch").orderBy("_s_start")
    return segments.where(F.col("_s_leading")).select(
        *[F.col(k).alias(k.replace("_s_", "_t_", 1)) for k in keys],
        F.col("_s_epoch").alias("_t_epoch"), F.col("_s_start").alias("_t_start"), F.col("_s_end").alias("_t_end"),
        F.lead("_s_start").over(w).alias("_t_next"))


def _judged(sent_matches: Column) -> Column:
    return _is("fetch_response") & (F.col("error") == "NONE") & sent_matches


def _sent_matches() -> Column:
    return F.col("_sent.id").isNotNull() & (F.col("_sent.offset") == F.col("fetch_offset"))


def _with_leader(rows: DataFrame, segments: DataFrame) -> DataFrame:
    """Add the named leader's segment at the response (`_s_*`) and its last tenure in the fetch's epoch
    started before the response (`_t_*`) to the fenced-checkable responses (`_probe_leader` not null)."""
    # Only fenced-checkable responses probe (others carry a null key); both frames are small: broadcast.
    fenced = (_judged(_sent_matches()) & F.lower(F.regexp_replace(F.trim("_mode"), "-", "_")).isin(*FENCING_MODES)
              & F.col("_sent.epoch").isNotNull())
    probed = rows.withColumn("_probe_leader", F.when(fenced, F.col("leader_id")))
    s, t = segments, leader_tenures(segments)
    at = probed["event_id"]
    on_s = ((probed["run_id"] == s["_s_run_id"]) & (probed["topic"] == s["_s_topic"])
            & (probed["partition"] == s["_s_partition"]) & (probed["_probe_leader"] == s["_s_broker_id"])
            & (s["_s_start"] < at) & (s["_s_end"].isNull() | (s["_s_end"] > at)))
    with_s = probed.join(lookup(s), on_s, "left")
    on_t = ((with_s["run_id"] == t["_t_run_id"]) & (with_s["topic"] == t["_t_topic"])
            & (with_s["partition"] == t["_t_partition"]) & (with_s["_probe_leader"] == t["_t_broker_id"])
            & (with_s["_sent"]["epoch"] == t["_t_epoch"])
            & (t["_t_start"] < with_s["event_id"]) & (t["_t_next"].isNull() | (t["_t_next"] > with_s["event_id"])))
    return with_s.join(lookup(t), on_t, "left")


def broker_holds(bronze: DataFrame) -> DataFrame:
    """One row per (run, broker) with GC pauses or disk stalls (`broker_fault`, schema 1.9): `_h_holds`, their
    (start, end, action), each ended by the broker's next crash or restart if one came first
    (`jobs.transforms.faults.fault_ends`) — the checker's `BrokerState.holds`. Small: a handful of faults per run."""
    faults = fault_ends(bronze).where(F.col("kind").isin(*HOLDING_FAULTS) & F.col("duration_ms").isNotNull())
    hold = F.struct(F.col("start_ms").alias("start"), F.col("end_ms").alias("end"), F.col("kind").alias("action"))
    return faults.groupBy(F.col("run_id").alias("_h_run_id"), F.col("broker_id").alias("_h_broker_id")).agg(
        F.collect_list(hold).alias("_h_holds"))


def _arrival() -> Column:
    # Arrival, not processing: an earlier partition's ListOffsets may hold the rest of the response back.
    return F.coalesce(F.col("response_received_ms"), F.col("ts_ms"))


def _elapsed() -> Column:
    return _arrival() - F.col("_sent.ts")


def _with_holds(rows: DataFrame, holds: DataFrame) -> DataFrame:
    """Add `_held`: for a response over the socket timeout, how long between its fetch and its arrival the
    follower was in a GC pause or disk stall or the leader it names in a GC pause (the checker's `_held_ms`: the
    length of their union); null on every other row, which does not probe (null join keys)."""
    over = _judged(_sent_matches()) & (_elapsed() > F.col("_socket_timeout"))
    probed = rows.select("*", F.when(over, F.col("broker_id")).alias("_probe_follower"),
                         F.when(over, F.col("leader_id")).alias("_probe_fetched"))
    mine = holds.select(F.col("_h_run_id").alias("_hf_run_id"), F.col("_h_broker_id").alias("_hf_broker_id"),
                        F.col("_h_holds").alias("_hf_holds"))
    theirs = holds.select(F.col("_h_run_id").alias("_hl_run_id"), F.col("_h_broker_id").alias("_hl_broker_id"),
                          F.filter("_h_holds", lambda h: h["action"] == "gc_pause").alias("_hl_holds"))
    joined = (probed
              .join(F.broadcast(mine), (F.col("run_id") == F.col("_hf_run_id"))
                    & (F.col("_probe_follower") == F.col("_hf_broker_id")), "left")
              .join(F.broadcast(theirs), (F.col("run_id") == F.col("_hl_run_id"))
                    & (F.col("_probe_fetched") == F.col("_hl_broker_id")), "left"))
    sent, arrival = F.col("_sent.ts"), _arrival()
    # Both brokers' holds clipped to [sent, arrival], by start; the fold keeps how far the union reaches so far
    # and adds only what a hold covers beyond it.
    both = F.concat(F.coalesce(F.col("_hf_holds"), F.array()), F.coalesce(F.col("_hl_holds"), F.array()))
    clipped = F.array_sort(F.transform(both, lambda h: F.struct(F.greatest(h["start"], sent).alias("start"),
                                                                F.least(h["end"], arrival).alias("end"))))
    union = F.aggregate(
        clipped, F.struct(sent.alias("reach"), F.lit(0).cast("long").alias("held")),
        lambda acc, h: F.struct(F.greatest(acc["reach"], h["end"]).alias("reach"),
                                (acc["held"] + F.greatest(F.lit(0).cast("long"),
                                                          h["end"] - F.greatest(h["start"], acc["reach"])))
                                .alias("held")))
    return joined.withColumn("_held", F.when(over, union["held"]))


def build(inputs: ScanInputs) -> DataFrame:
    """The annotated fetch rows this scan's checks read."""
    bronze = inputs.bronze
    return _with_holds(_with_leader(annotate(fetch_events(bronze)), leader_segments(bronze)), broker_holds(bronze))


def fetch_epoch_fenced() -> Column:
    """fetch_epoch_fenced (§11.8, §8.3 KIP-320): a NONE response to a fetch in epoch E comes from a broker that
    led the partition in epoch E at some moment between the fetch and the response; not judged for follower
    modes before KIP-320 or when the named leader had no leadership_change yet."""
    epoch = F.col("_sent.epoch")
    led = F.col("_t_start").isNotNull() & (F.col("_t_end").isNull() | (F.col("_t_end") > F.col("_sent.id")))
    actual = F.when(F.col("_s_leading"), F.col("_s_epoch")).otherwise(F.lit(-1))
    return violation(
        "fetch_epoch_fenced", F.col("_probe_leader").isNotNull() & F.col("_s_seen") & ~led,
        expected=epoch, actual=actual, evidence=[F.col("_sent.id")],
        message=text("fetch in epoch ", epoch, " answered NONE by broker ", F.col("leader_id"),
                     ", which did not lead epoch ", epoch, " meanwhile"),
    )


def delayed_fetch_bound() -> Column:
    """delayed_fetch_bound (§11.11, §5): a NONE response arrives within the bound of its fetch; without a known
    network delay (the audit has no run.json) the bound is the follower's replica.socket.timeout.ms, plus the
    time GC pauses and disk stalls held the answer (`_held`). Arrival is `response_received_ms` where the event
    has it (schema 1.2), else `ts_ms`, as in the checker."""
    elapsed = _elapsed()
    held = F.coalesce(F.col("_held"), F.lit(0).cast("long"))
    bound = F.col("_socket_timeout") + held
    stalls = F.when(held > 0, text(" (", held, " ms of it GC pauses and disk stalls)")).otherwise(F.lit(""))
    return violation(
        "delayed_fetch_bound", _judged(_sent_matches()) & (elapsed > bound),
        expected=bound, actual=elapsed, evidence=[F.col("_sent.id")],
        message=text("fetch answered after ", elapsed, " ms, more than the ", bound, " ms bound", stalls),
    )


def _throttled() -> Column:
    return F.coalesce(F.col("follower_id"), F.col("broker_id"))


def _rate() -> Column:
    return F.coalesce(F.col("measured_rate"), F.lit(0.0))


def _bound() -> Column:
    return F.coalesce(F.col("quota_bound"), F.lit(float("inf")))


def quota_over_bound() -> Column:
    """quota_throttle_legal (§11.10, §4): a throttle only while the measured rate exceeds the bound."""
    bound = F.when(_bound() >= F.lit(float(LONG_MAX)), F.lit(LONG_MAX)).otherwise(_bound().try_cast("long"))
    return violation(
        "quota_throttle_legal", _is("quota_throttle") & ~(_rate() > _bound()), replica=_throttled(),
        expected=bound, actual=_rate().try_cast("long"),
        message=text("throttled at measured rate ", F.format_string("%.2f", _rate()), " B/s, not above the bound ",
                     F.format_string("%.2f", _bound()), " B/s"),
    )


def quota_leader_in_sync() -> Column:
    """quota_throttle_legal (§11.10, §4): a leader never throttles a replica of its committed ISR."""
    bad = (_is("quota_throttle") & (F.col("role") == "leader") & F.col("_leading")
           & F.array_contains("_isr", _throttled()))
    return violation(
        "quota_throttle_legal", bad, replica=_throttled(),
        message=text("leader throttled in-sync replica ", _throttled(), " (ISR ",
                     F.array_join(F.array_sort("_isr"), ", "), ")"),
    )


def quota_follower_in_sync() -> Column:
    """quota_throttle_legal (§11.10, §4): a follower never throttles a partition it knows to be in sync."""
    bad = _is("quota_throttle") & (F.col("role") == "follower") & F.col("_lag").isNotNull() & (F.col("_lag") <= 0)
    return violation(
        "quota_throttle_legal", bad, replica=_throttled(), actual=F.col("_lag"),
        message=F.lit("follower throttled a partition that is in sync (lag 0)"),
    )


def quota_listed() -> Column:
    """quota_throttle_legal (§11.10, §4): when the broker's config carries the topic's
    `<side>.replication.throttled.replicas`, the throttled partition is in it (`*` or `partition:broker`)."""
    listed = (F.when(F.col("role") == "leader", F.col("_throttled.leader"))
              .when(F.col("role") == "follower", F.col("_throttled.follower")))
    entries = F.filter(F.transform(F.split(listed, ","), lambda e: F.trim(e)), lambda e: e != "")
    me = F.concat(F.col("partition").cast("string"), F.lit(":"), F.col("broker_id").cast("string"))
    bad = (_is("quota_throttle") & listed.isNotNull() & ~F.array_contains(entries, "*")
           & ~F.array_contains(entries, me))
    return violation(
        "quota_throttle_legal", bad, replica=_throttled(), evidence=[F.col("_throttled.event_id")],
        message=text("partition is not in broker ", F.col("broker_id"), "'s ", F.col("role"),
                     ".replication.throttled.replicas ", F.array_join(entries, ", ")),
    )


SCAN = Scan(
    "fetch",
    build,
    {
        "fetch_epoch_fenced": (fetch_epoch_fenced,),
        "delayed_fetch_bound": (delayed_fetch_bound,),
        "quota_throttle_legal": (quota_over_bound, quota_leader_in_sync, quota_follower_in_sync, quota_listed),
    },
)
"""The fetch scan and the checks folded into it."""
