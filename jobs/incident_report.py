"""The incident report: Markdown + HTML with a cluster overview per run and one PNG per flagged partition.

    replog report [--lake DIR] [--config FILE] [--out DIR] [--run RUN_ID ...]
    ./spark-submit.sh report

Reads what the other jobs wrote — `gold/audit_runs`, `gold/invariant_violations`, `gold/lag_incidents`,
`silver/replica_offsets`, `silver/partition_state` — and, from `bronze/replication_events`, the unclean
elections and the fetch errors (a follower's fetch responses and retried OffsetsForLeaderEpoch answers with an
error; counted per error name over the runs; per follower, leader and error for the plotted partitions), and writes
`report.md`, `report.html` and the PNGs into one folder (default `<lake>/reports/<audit id>/`, else
`report.out` of the config or `--out`).

Which runs: `--run` (repeatable), else the runs of the latest audit. The audit summary counts the
violations of those runs per invariant and severity, and names the invariants the audit did not
evaluate. A partition is *flagged* when it has a violation (an info finding too: an acks=1 write lost, which
Kafka allows, is still acknowledged data the producer believes written), a lag incident or an unclean election;
the worst `report.max_partitions` are plotted (errors, then warnings, then unclean elections, then late / missing /
premature incidents, then info findings, then other incidents), and the report says how many more were flagged.
Each run (up to `report.max_partitions` of them) also gets its cluster overview (`jobs.cluster_overview`,
`jobs.overview_plot`): partitions under-replicated / under min ISR / offline, lagging followers, ISR churn (the
leaders' shrinks and expands, and the controller's removals), broker crashes and elections over time.

Bounded on the driver whatever the size of the run: only aggregates (counts per invariant, per
verdict, one row per run), at most `max_rows` violations / incidents per list, and per plotted
partition series of at most `max_points` points per replica — Spark aggregates the silver intervals
into time buckets of `ceil(run span / max_points)` ms, keeping per bucket the last value and the
min..max range (so a truncation inside a bucket still shows). No table is collected, no Python UDF
runs on event-sized data.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path, PurePath
from typing import Any, NamedTuple

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from jobs.cluster_overview import (
    bucket_bounds,
    controller_isr_shrinks,
    down_buckets,
    elections,
    fault_marks,
    fault_spans,
    filled_counts,
    isr_churn,
    partition_counts,
    with_leader_deposed,
)
from jobs.config import ReportConfig
from jobs.fault_plot import FaultSpan, peer_names
from jobs.invariants.base import severity_order
from jobs.invariants.final_log import ACKS1 as ACKS1_WRITE_LOST
from jobs.invariants.final_log import INVARIANT as ACKED_WRITE_LOST
from jobs.invariants.final_log import loss_cause
from jobs.lake import Lake
from jobs.overview_plot import (
    CHURN_COLUMNS,
    CONTROLLER_COLUMNS,
    DOWN_COLUMNS,
    ELECTION_COLUMNS,
    ClusterOverview,
    plot_overview,
)
from jobs.plots import (
    ISR_COLUMNS,
    OFFSET_COLUMNS,
    EvidencePoint,
    FetchErrorMark,
    IncidentSpan,
    LeaderChange,
    LifecycleMark,
    LossSpan,
    PartitionPlot,
    ViolationMark,
    evidence_key,
    plot_partition,
    severity_rank,
)
from jobs.report_document import (
    BAD_VERDICTS,
    Evidence,
    FaultRow,
    FetchErrorRow,
    IncidentRow,
    InvariantCount,
    InvariantSpread,
    NumberedEvidence,
    OverviewSection,
    PartitionSection,
    ProduceRow,
    ReportDocument,
    ViolationRow,
    chain_hub,
    evidence_key_text,
    html_page,
    markdown,
)
from jobs.runs import bronze_runs
from jobs.transforms.lag import run_bounds
from jobs.transforms.timelines import PARTITION_KEY
from jobs.violation_streaks import violation_streaks
from replication_core.checker.catalogue import BY_NAME, ERROR, INFO, SEVERITIES, WARNING
from replication_core.sim.cli import folder_problem
from schemas.audit import GOLD_AUDIT_RUNS, GOLD_INVARIANT_VIOLATIONS
from schemas.events import (
    APPEND,
    BROKER_CONFIG,
    BROKER_LIFECYCLE,
    EPOCH_REQUEST_RETRY,
    FETCH_RESPONSE,
    KAFKA_LOG_SOURCE,
    LEADER_ELECTION,
    PARTITION_CHANGE,
    PRODUCE_ACK,
)
from schemas.spark import to_spark_schema
from schemas.tables import (
    BRONZE_EVENTS,
    GOLD_LAG_INCIDENTS,
    SILVER_ISR_CHANGES,
    SILVER_PARTITION_STATE,
    SILVER_REPLICA_OFFSETS,
)

KEY: list[str] = list(PARTITION_KEY)
EVIDENCE_KEPT = 20
"""Evidence ids fetched per violation (the report prints fewer); those of plotted violations are looked up."""

FLAGGED_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType(), False),
    T.StructField("topic", T.StringType(), False),
    T.StructField("partition", T.IntegerType(), False),
    T.StructField("errors", T.LongType(), False),
    T.StructField("warnings", T.LongType(), False),
    T.StructField("infos", T.LongType(), False),
    T.StructField("incidents", T.LongType(), False),
    T.StructField("bad_incidents", T.LongType(), False),
    T.StructField("unclean_elections", T.LongType(), False),
])
"""`flagged_partitions`: per partition with a violation, a lag incident or an unclean election, the counts that
rank it."""
COUNTS: tuple[str, ...] = tuple(f.name for f in FLAGGED_SCHEMA.fields[len(KEY):])
"""`FLAGGED_SCHEMA`'s counts."""


class ReportError(RuntimeError):
    """The report cannot be made (no audit yet, an output folder that is not local, ...)."""


@dataclass
class ReportResult:
    """What one `replog report` wrote."""

    out_dir: Path
    audit_id: str
    runs: list[str] = field(default_factory=list)
    flagged: int = 0
    plotted: int = 0
    """Pictures drawn: the flagged partitions within the cap, and those `--partition` named."""
    asked: int = 0
    """Of them, partitions drawn only because `--partition` named them: nothing flagged them, or the cap left them
    out."""
    not_plotted: int = 0
    """Flagged partitions not drawn (the `max_partitions` cap, and not named)."""
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    incidents: int = 0
    pngs: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def markdown_path(self) -> Path:
        """report.md."""
        return self.out_dir / "report.md"

    @property
    def html_path(self) -> Path:
        """report.html."""
        return self.out_dir / "report.html"

    def summary(self) -> str:
        """The lines printed at the end of a run."""
        return (
            f"report: audit {self.audit_id}, {len(self.runs)} run(s): {self.errors} errors, {self.warnings} warnings, "
            f"{self.infos} info, {self.incidents} lag incidents; {self.flagged} partitions flagged, "
            f"{self.plotted - self.asked} plotted"
            + (f" ({self.not_plotted} more not plotted)" if self.not_plotted else "")
            + (f", {self.asked} more drawn as asked (--partition)" if self.asked else "")
            + f" in {self.seconds:.1f}s\n"
            f"  {self.html_path}\n  {self.markdown_path}"
        )


# --- pure transforms (tested with chispa) --------------------------------------------------------------


def flagged_partitions(violations: DataFrame, incidents: DataFrame, elections: DataFrame | None = None) -> DataFrame:
    """Per (run, topic, partition) with a partition-scoped violation, a lag incident or an unclean election (a row
    of `elections` per election: run, topic, partition): error, warning, info, incident, bad-verdict (late /
    missing / premature) and unclean-election counts (schema `FLAGGED_SCHEMA`). An unclean election flags its
    partition on its own: it may have lost acknowledged data where no invariant can tell (a run read from broker
    logs); so does an info finding (an acks=1 write lost: allowed, but data the producer believes written). A
    severity the catalogue does not know counts as an error, so that it is not ranked out of sight."""
    scoped = violations.where(F.col("topic").isNotNull() & F.col("partition").isNotNull())
    known = F.col("severity").isin(WARNING, INFO)
    v = scoped.groupBy(*KEY).agg(
        F.count(F.when(~known, 1)).alias("errors"),
        F.count(F.when(F.col("severity") == WARNING, 1)).alias("warnings"),
        F.count(F.when(F.col("severity") == INFO, 1)).alias("infos"),
    )
    i = incidents.groupBy(*KEY).agg(
        F.count(F.lit(1)).alias("incidents"),
        F.count(F.when(F.col("verdict").isin(*sorted(BAD_VERDICTS)), 1)).alias("bad_incidents"),
    )
    joined = v.join(i, KEY, "full_outer")
    if elections is not None:
        joined = joined.join(elections.groupBy(*KEY).agg(F.count(F.lit(1)).alias("unclean_elections")), KEY,
                             "full_outer")
    else:
        joined = joined.withColumn("unclean_elections", F.lit(0))
    return joined.select(
        *[F.col(c) for c in KEY],
        *[F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c) for c in COUNTS],
    )


def unclean_elections(bronze: DataFrame) -> DataFrame:
    """The controllers' unclean elections in bronze: run, topic, partition, when, the new leader and epoch. Read
    from the events, not from `silver/partition_state`, whose intervals keep one state per millisecond and drop a
    state that changes nothing: an election logged after its new leader's own line (clocks differ) would vanish."""
    return bronze.where((F.col("event_type") == LEADER_ELECTION) & (F.col("action") == "unclean")
                        & F.col("topic").isNotNull() & F.col("partition").isNotNull()).select(
        *KEY, "ts_ms", "leader_id", "leader_epoch")


def failed_fetches(bronze: DataFrame) -> DataFrame:
    """The answers with an error that a follower (`broker_id`) logged for a partition: its fetch responses and the
    OffsetsForLeaderEpoch answers it retries (a follower stuck on those fetches nothing either)."""
    return bronze.where(F.col("event_type").isin(FETCH_RESPONSE, EPOCH_REQUEST_RETRY) & F.col("error").isNotNull()
                        & (F.col("error") != "NONE") & F.col("topic").isNotNull() & F.col("partition").isNotNull()
                        & F.col("broker_id").isNotNull())


def refused_produce(bronze: DataFrame) -> DataFrame:
    """The produce answers with an error a leader gave (or, from its log, the refusals it logged) for a partition."""
    return bronze.where((F.col("event_type") == PRODUCE_ACK) & F.col("error").isNotNull() & (F.col("error") != "NONE")
                        & F.col("topic").isNotNull() & F.col("partition").isNotNull())


def _per_error(answers: DataFrame) -> dict[str, tuple[int, int]]:
    """Per error name of `answers` (events with an error): how many, and how many partitions they concern (one row
    per error name collected)."""
    return {r["error"]: (int(r["answers"]), int(r["partitions"])) for r in answers.groupBy("error").agg(
        F.count(F.lit(1)).alias("answers"), F.count_distinct("run_id", "topic", "partition").alias("partitions")
    ).collect()}


def fetch_errors(bronze: DataFrame) -> DataFrame:
    """Per partition, follower (the broker that logged the response), leader and error: the fetch responses with
    an error, how many, the first and the last time. One row per group, so bounded by replicas x leaders x errors
    per partition, not by the events."""
    groups = failed_fetches(bronze).groupBy(*KEY, F.col("broker_id").alias("follower"),
                                            F.col("leader_id").alias("leader"), "error")
    return groups.agg(F.count(F.lit(1)).alias("responses"), F.min("ts_ms").alias("first_ms"),
                      F.max("ts_ms").alias("last_ms"))


ERROR_BURSTS_SHOWN = 4
"""Bursts of one produce error listed per partition and acks setting at most (the earliest); the rest are counted."""


def _error_bursts(answers: DataFrame, gap_ms: int) -> DataFrame:
    """Per (partition, acks, error) with an error: `bursts`, the first `ERROR_BURSTS_SHOWN` runs of those answers
    with no gap above `gap_ms` inside (first ms, last ms, answers), and `burst_count`, how many there were. A window
    per group: bounded by one partition's answers."""
    group = [*KEY, "acks", "error"]
    order = Window.partitionBy(*group).orderBy("ts_ms", "event_id")
    errs = answers.where(F.col("error") != "NONE").select(*group, "ts_ms", "event_id")
    new = F.coalesce(F.col("ts_ms") - F.lag("ts_ms").over(order) > F.lit(gap_ms), F.lit(True))
    numbered = errs.withColumn("_burst", F.sum(new.cast("int")).over(order.rowsBetween(Window.unboundedPreceding, 0)))
    runs = numbered.groupBy(*group, "_burst").agg(F.struct(
        F.min("ts_ms").alias("first_ms"), F.max("ts_ms").alias("last_ms"), F.count(F.lit(1)).alias("answers")
    ).alias("_run"))
    return runs.groupBy(*group).agg(
        F.slice(F.array_sort(F.collect_list("_run")), 1, ERROR_BURSTS_SHOWN).alias("bursts"),
        F.count(F.lit(1)).alias("burst_count"))


def produce_outcomes(bronze: DataFrame, selected: DataFrame, burst_gap_ms: int = 5000) -> DataFrame:
    """Per selected partition (`selected`: its KEY columns, a short list), acks setting and error: the produce
    answers its leaders gave (`answers`), and for the acks=all writes acknowledged with NONE how long each waited
    from its leader's append to the acknowledgement (Kafka's DelayedProduce: until the HW covers the batch) as
    `wait_p50_ms` / `wait_p99_ms` (approximate percentiles), `wait_max_ms` and when that write was acknowledged
    (`wait_max_ms_at`), over the `timed` ones whose append is in the data; `first_ms` / `last_ms`: the first and last
    answer, and for an error its `bursts` (`_error_bursts`: runs of answers no more than `burst_gap_ms` apart, so that
    two outages are not read as one) and `burst_count`. The append is the acknowledging
    broker's latest leader append of the same batch (offsets and checksum) up to the acknowledgement. One row per
    group: bounded by the partitions, not the events."""
    sel = F.broadcast(selected.select(*KEY))
    acks = bronze.where(F.col("event_type") == PRODUCE_ACK).join(sel, KEY, "left_semi").select(
        *KEY, "event_id", "ts_ms", "broker_id", "acks", "error", "base_offset", "batch_checksum")
    batch = [*KEY, "broker_id", "base_offset", "batch_checksum"]
    appends = bronze.where((F.col("event_type") == APPEND) & (F.col("role") == "leader")).join(
        sel, KEY, "left_semi").select(*batch, F.col("ts_ms").alias("_appended"))
    # An equi-join on the batch's columns (only answers with NONE get a wait), the appends after the answer (the
    # same batch written again after a truncation) dropped in the aggregate.
    waiting = (F.col("acks") == -1) & (F.col("error") == "NONE")
    per_ack = acks.join(appends, batch, "left").groupBy(*KEY, "event_id", "ts_ms", "acks", "error").agg(
        F.when(waiting, F.col("ts_ms") - F.max(F.when(F.col("_appended") <= F.col("ts_ms"), F.col("_appended"))))
        .alias("_wait"))
    outcomes = per_ack.groupBy(*KEY, "acks", "error").agg(
        F.count(F.lit(1)).alias("answers"),
        F.min("ts_ms").alias("first_ms"),
        F.max("ts_ms").alias("last_ms"),
        F.count("_wait").alias("timed"),
        F.percentile_approx("_wait", F.array(F.lit(0.5), F.lit(0.99))).alias("_pct"),
        F.max("_wait").alias("wait_max_ms"),
        F.max_by("ts_ms", F.struct("_wait", F.col("ts_ms"))).alias("wait_max_ms_at"),
    ).select(*KEY, "acks", "error", "answers", "first_ms", "last_ms", "timed", F.col("_pct")[0].alias("wait_p50_ms"),
             F.col("_pct")[1].alias("wait_p99_ms"), "wait_max_ms",
             F.when(F.col("wait_max_ms").isNotNull(), F.col("wait_max_ms_at")).alias("wait_max_ms_at"))
    # The bursts need no wait: counted on the answers themselves, not on the join with the appends. Null-safe on
    # the acks, which a refusal read from a broker log may leave unknown.
    group = [*KEY, "acks", "error"]
    bursts = _error_bursts(acks, burst_gap_ms).select(*[F.col(c).alias(f"_b_{c}") for c in group], "bursts",
                                                        "burst_count")
    on = [F.col(c).eqNullSafe(F.col(f"_b_{c}")) for c in group]
    return outcomes.join(bursts, on, "left").drop(*[f"_b_{c}" for c in group])


SILENCES_SHOWN = 3
"""Silences (`produce_silences`) listed per partition at most (the longest); the rest are counted."""


SETTINGS_SHOWN = ("replica.lag.time.max.ms", "replica.socket.timeout.ms", "min.insync.replicas",
                  "unclean.leader.election.enable", "replog.truncation.mode")
"""The configs a partition's section states: what its lag incidents, min ISR and elections are judged by, and how
long a follower waits on a fetch nobody answers (a follower cut off from its leader lags until then, past a heal)."""


def run_settings(bronze: DataFrame) -> DataFrame:
    """(run_id, name, value) of `SETTINGS_SHOWN` and their topic overrides (`topic.<topic>.<name>`) in the runs'
    `broker_config` events, distinct: a handful per run (more only where brokers or times differ)."""
    # A topic name may hold dots: an override is matched by its prefix and suffix.
    wanted = F.col("name").isin(*SETTINGS_SHOWN)
    for name in SETTINGS_SHOWN:
        wanted = wanted | (F.col("name").startswith("topic.") & F.col("name").endswith("." + name))
    return bronze.where(F.col("event_type") == BROKER_CONFIG).select(
        "run_id", F.explode("config").alias("name", "value")).where(wanted).distinct()


def section_settings(rows: Sequence[dict[str, Any]], topic: str) -> tuple[tuple[str, str], ...]:
    """A section's settings from its run's `run_settings` rows: each name's value, the topic's override where there
    is one (`(topic t)`), every distinct value where brokers or times gave several."""
    out = []
    for name in SETTINGS_SHOWN:
        override = sorted({r["value"] for r in rows if r["name"] == f"topic.{topic}.{name}"})
        broker = sorted({r["value"] for r in rows if r["name"] == name})
        values, scope = (override, f" (topic {topic})") if override else (broker, "")
        if values:
            out.append((name, " / ".join(values) + scope))
    return tuple(out)


LOST_WRITES = (ACKED_WRITE_LOST, ACKS1_WRITE_LOST)
"""The end-of-run checks whose violations are lost writes, one per acknowledgement at its first lost offset."""


def loss_spans(violations: DataFrame) -> DataFrame:
    """Per partition, lost-write invariant, severity and instant the writes left the leader in office (`ts_ms`): how
    many (`count`) and their offsets' range (`first_offset`, `last_offset`). One row per such instant: an unclean
    election's hundreds of lost writes are one row."""
    return violations.where(F.col("invariant").isin(*LOST_WRITES) & F.col("offset").isNotNull()).groupBy(
        *KEY, "invariant", "severity", "ts_ms").agg(F.count(F.lit(1)).alias("count"),
                                                    F.min("offset").alias("first_offset"),
                                                    F.max("offset").alias("last_offset"))


def produce_silences(bronze: DataFrame, selected: DataFrame, silence_ms: int, ends: DataFrame | None = None
                     ) -> DataFrame:
    """Per selected partition (`selected`: its KEY columns, a short list) with any: `silences`, the
    `SILENCES_SHOWN` longest stretches of at least `silence_ms` between two consecutive produce answers (any acks,
    any error), or from the last answer to the run's end (`ends`: run_id, end_ms; `until_end` true), as (ms,
    from_ms, to_ms, until_end), longest first, and `silence_count`, how many there were. Writes parked until
    the HW covers them or they time out, a request to a leader that had died, or a write held back while the partition
    had no leader make such a gap (the last two leave no event at all).
    A window per partition: bounded by one partition's answers. Only the engine's answers: a broker log prints
    refusals alone, so the stretches between them say nothing of the answers."""
    sel = F.broadcast(selected.select(*KEY))
    answers = bronze.where((F.col("event_type") == PRODUCE_ACK) & (F.col("source") != KAFKA_LOG_SOURCE)).join(
        sel, KEY, "left_semi").select(
        *KEY, "ts_ms", "event_id")
    order = Window.partitionBy(*KEY).orderBy("ts_ms", "event_id")
    gaps = answers.select(*KEY, F.lag("ts_ms").over(order).alias("from_ms"), F.col("ts_ms").alias("to_ms"),
                          F.lit(False).alias("until_end"))
    if ends is not None:
        # A leader that died for good, or producers that stopped, leave no answer to close the last stretch.
        gaps = gaps.unionByName(answers.groupBy(*KEY).agg(F.max("ts_ms").alias("from_ms")).join(
            F.broadcast(ends), "run_id").select(*KEY, "from_ms", F.col("end_ms").alias("to_ms"),
                                                F.lit(True).alias("until_end")))
    gaps = gaps.where(F.col("to_ms") - F.col("from_ms") >= F.lit(silence_ms))
    gap = F.struct((F.col("to_ms") - F.col("from_ms")).alias("ms"), "from_ms", "to_ms", "until_end")
    return gaps.groupBy(*KEY).agg(F.slice(F.sort_array(F.collect_list(gap), asc=False), 1, SILENCES_SHOWN)
                                  .alias("silences"), F.count(F.lit(1)).alias("silence_count"))


INCIDENT_KEY: list[str] = [*KEY, "follower_id", "leader_id", "leader_epoch", "start_ms"]
"""A lag incident (`gold/lag_incidents`' key): the same follower may lag behind two leaders from one instant."""


def incident_fetch_failures(incidents: DataFrame, bronze: DataFrame) -> DataFrame:
    """Per lag incident (INCIDENT_KEY): the follower's fetch responses with an error for the partition from its last
    caught-up instant (else the start less lag_max_ms) to the incident's end, how many (`failed_fetches`) and their
    error names (`fetch_errors`, sorted): the first cause an operator looks for, a follower whose requests got no
    answer (NETWORK_EXCEPTION) or were refused. Incidents without any have no row. `incidents` is the report's
    short list, broadcast onto the failed responses."""
    since = F.coalesce("last_caught_up_time_ms", F.col("start_ms") - F.col("lag_max_ms"))
    spans = incidents.select(*INCIDENT_KEY, since.alias("_from"), F.col("end_ms").alias("_to"))
    failed = failed_fetches(bronze).select(*KEY, F.col("broker_id").alias("follower_id"), "ts_ms", "error")
    within = failed.join(F.broadcast(spans), [*KEY, "follower_id"]).where(
        (F.col("ts_ms") >= F.col("_from")) & (F.col("_to").isNull() | (F.col("ts_ms") <= F.col("_to"))))
    return within.groupBy(*INCIDENT_KEY).agg(F.count(F.lit(1)).alias("failed_fetches"),
                                             F.array_sort(F.collect_set("error")).alias("fetch_errors"))


def with_fetch_failures(incidents: DataFrame, bronze: DataFrame) -> DataFrame:
    """`incidents` (a short list) with `incident_fetch_failures`' two columns (0 and [] where there were none).

    The list is materialised first: it is read twice (the spans and the rows), and an order-and-limit cut with ties
    could otherwise pick different incidents each time."""
    listed = incidents.localCheckpoint(eager=True)
    counts = incident_fetch_failures(listed, bronze)
    counts = counts.select(*[F.col(c).alias(f"_k_{c}") for c in INCIDENT_KEY], "failed_fetches", "fetch_errors")
    same = [listed[c].eqNullSafe(counts[f"_k_{c}"]) for c in INCIDENT_KEY]  # a null leader epoch is a key too
    return listed.join(counts, same, "left").drop(*[f"_k_{c}" for c in INCIDENT_KEY]).withColumns({
        "failed_fetches": F.coalesce("failed_fetches", F.lit(0).cast("long")),
        "fetch_errors": F.coalesce("fetch_errors", F.array().cast("array<string>"))})


def fetch_error_times(bronze: DataFrame, selected: DataFrame, limit: int) -> DataFrame:
    """Per selected partition (KEY + start_ms + bucket_ms) and follower: the first fetch error of each time bucket
    (`ts_ms`), at most `limit` per follower (the earliest)."""
    marks = bucketed(failed_fetches(bronze), "ts_ms", selected).groupBy(
        *KEY, F.col("broker_id").alias("follower"), "_bucket").agg(F.min("ts_ms").alias("ts_ms")).drop("_bucket")
    return first_rows(marks, [F.col("ts_ms")], limit, by=[*KEY, "follower"])


def worst_first() -> list[Column]:
    """The ranking of flagged partitions: errors, warnings, unclean elections, bad incidents, info findings (acks=1
    writes lost: allowed, so below everything the leader or the controller did wrong, but acknowledged data gone,
    so above a follower that lagged and was handled as it should), incidents, then the key."""
    return [F.col("errors").desc(), F.col("warnings").desc(), F.col("unclean_elections").desc(),
            F.col("bad_incidents").desc(), F.col("infos").desc(), F.col("incidents").desc(),
            *[F.col(c).asc() for c in KEY]]


def bucketed(df: DataFrame, ts: str, selected: DataFrame) -> DataFrame:
    """`df` restricted to the `selected` partitions (columns KEY + start_ms + bucket_ms), with `_bucket`, the
    time bucket of `ts`."""
    joined = df.join(F.broadcast(selected.select(*KEY, "start_ms", "bucket_ms")), KEY, "inner")
    return joined.withColumn("_bucket", F.floor((F.col(ts) - F.col("start_ms")) / F.col("bucket_ms")))


def offset_series(replica_offsets: DataFrame, selected: DataFrame) -> DataFrame:
    """Per selected partition, replica and time bucket: the first change's time (`ts_ms`), the HW and LEO at
    the end of the bucket and their min / max inside it (≤ `max_points` rows per replica)."""
    b = bucketed(replica_offsets, "valid_from_ms", selected)
    order = F.struct("valid_from_ms", "event_id")
    return b.groupBy(*KEY, F.col("replica_id").alias("replica"), "_bucket").agg(
        F.min("valid_from_ms").alias("ts_ms"),
        F.max_by("high_watermark", order).alias("hw"),
        F.max_by("log_end_offset", order).alias("leo"),
        F.min("high_watermark").alias("hw_min"), F.max("high_watermark").alias("hw_max"),
        F.min("log_end_offset").alias("leo_min"), F.max("log_end_offset").alias("leo_max"),
    ).drop("_bucket")


def isr_series(partition_state: DataFrame, selected: DataFrame) -> DataFrame:
    """Per selected partition, replica (every replica it was ever assigned) and time bucket: the first
    change's time, ISR membership at the end of the bucket (`in_isr`), whether the replica stayed in the ISR
    through the bucket, i.e. no state that began in it took out a member (`in_isr_whole`: with `in_isr`, false
    means it left and rejoined within the bucket; a replica out before the bucket that rejoins in it did not leave
    in it), and ELR membership at the end of the bucket (`in_elr`)."""
    ps = partition_state.join(F.broadcast(selected.select(*KEY)), KEY, "left_semi")
    everyone = ps.groupBy(*KEY).agg(F.array_distinct(F.flatten(F.collect_list(
        F.coalesce("replicas", F.array().cast("array<int>"))))).alias("_all"))
    b = bucketed(ps.join(everyone, KEY), "valid_from_ms", selected)
    member = F.coalesce(F.array_contains("isr", F.col("replica")), F.lit(False))
    eligible = F.coalesce(F.array_contains("elr", F.col("replica")), F.lit(False))
    exploded = (b.select("*", F.explode("_all").alias("replica")).withColumn("_member", member)
                .withColumn("_eligible", eligible))
    # A state that takes out a member: the replica was in the state before it (the partition's states of the
    # selected partitions: a short list per replica).
    before = F.lag("_member").over(Window.partitionBy(*KEY, "replica").orderBy("valid_from_ms", "event_id"))
    exploded = exploded.withColumn("_left", ~F.col("_member") & F.coalesce(before, F.lit(False)))
    last = F.struct("valid_from_ms", "event_id")
    return exploded.groupBy(*KEY, "replica", "_bucket").agg(
        F.min("valid_from_ms").alias("ts_ms"),
        F.max_by("_member", last).alias("in_isr"),
        (~F.max(F.col("_left").cast("int")).cast("boolean")).alias("in_isr_whole"),
        F.max_by("_eligible", last).alias("in_elr"),
    ).drop("_bucket")


def series_lengths(replica_offsets: DataFrame, partition_state: DataFrame, keys: DataFrame) -> DataFrame:
    """Per partition of `keys`: `n`, the most intervals of one replica in `replica_offsets` or of the partition
    in `partition_state` (the longest series its picture would draw)."""
    k = F.broadcast(keys.select(*KEY))
    ro = replica_offsets.join(k, KEY, "left_semi").groupBy(*KEY, "replica_id").agg(F.count(F.lit(1)).alias("n"))
    ps = partition_state.join(k, KEY, "left_semi").groupBy(*KEY).agg(F.count(F.lit(1)).alias("n"))
    return ro.drop("replica_id").unionByName(ps).groupBy(*KEY).agg(F.max("n").alias("n"))


def leader_changes(partition_state: DataFrame, selected: DataFrame, limit: int) -> DataFrame:
    """Per selected partition, the intervals that changed the leader or its epoch (the first one too), at
    most `limit` per partition (the earliest), with `changes`, the partition's total, `unclean`: the
    interval was opened by an unclean election (drawn from bronze instead: `unclean_elections`), and `from_elr`:
    by an election from the eligible leader replicas (KIP-966)."""
    ps = partition_state.join(F.broadcast(selected.select(*KEY)), KEY, "left_semi")
    w = Window.partitionBy(*KEY).orderBy("valid_from_ms", "event_id")
    prev_leader, prev_epoch = F.lag("leader_id").over(w), F.lag("leader_epoch").over(w)
    first = F.row_number().over(w) == 1
    moved = first | ~prev_leader.eqNullSafe(F.col("leader_id")) | ~prev_epoch.eqNullSafe(F.col("leader_epoch"))
    changed = ps.select(*KEY, "valid_from_ms", "event_id", "leader_id", "leader_epoch", "cause",
                        moved.alias("_changed")).where("_changed")
    whole = Window.partitionBy(*KEY)
    return changed.select(*KEY, F.col("valid_from_ms").alias("ts_ms"), "leader_id", "leader_epoch",
                          (F.col("cause") == "leader_election:unclean").alias("unclean"),
                          (F.col("cause") == "leader_election:elr").alias("from_elr"),
                          F.row_number().over(w).alias("_n"), F.count(F.lit(1)).over(whole).alias("changes")
                          ).where(F.col("_n") <= limit).drop("_n")


def evidence_events(bronze: DataFrame, wanted: DataFrame) -> DataFrame:
    """The bronze events named by `wanted` (run_id, event_id): when, which broker, what kind."""
    return bronze.join(F.broadcast(wanted.select("run_id", "event_id").distinct()), ["run_id", "event_id"]).select(
        "run_id", "event_id", "ts_ms", "broker_id", "event_type", "action", "source", "_source_file", "_source_line")


def lifecycle_events(bronze: DataFrame, limit: int) -> DataFrame:
    """Per run, the first `limit` broker crashes, restarts and shutdowns, with the run's `total`. A broker's first
    start is left out (every broker starts at the beginning); a later one is its restart (broker logs print
    `started` again)."""
    life = bronze.where(F.col("event_type") == BROKER_LIFECYCLE).select(
        "run_id", "ts_ms", "event_id", "broker_id", "action", "reason")
    earlier = F.lag("action").over(Window.partitionBy("run_id", "broker_id").orderBy("ts_ms", "event_id"))
    life = life.withColumn("_earlier", earlier).where((F.col("action") != "start") | F.col("_earlier").isNotNull())
    life = life.drop("_earlier").withColumn("total", F.count(F.lit(1)).over(Window.partitionBy("run_id")))
    return first_rows(life, [F.col("ts_ms"), F.col("event_id")], limit, by=["run_id"])


def election_controllers(bronze: DataFrame) -> DataFrame:
    """Per run, the node ids that elected a leader (`run_id`, `broker_id`): its controllers, one row each (as
    many as the run had controllers, not events)."""
    return bronze.where((F.col("event_type") == LEADER_ELECTION) & F.col("broker_id").isNotNull()).select(
        "run_id", "broker_id").distinct()


def first_rows(df: DataFrame, order: Sequence[Column], limit: int, by: Sequence[str] = KEY) -> DataFrame:
    """At most `limit` rows per `by` group, the first by `order`."""
    w = Window.partitionBy(*by).orderBy(*order)
    return df.withColumn("_n", F.row_number().over(w)).where(F.col("_n") <= limit).drop("_n")


# --- the job -------------------------------------------------------------------------------------------


def _rows_by(df: DataFrame, *key: str) -> dict[Any, list[dict[str, Any]]]:
    """`df` collected (callers pass bounded frames) and grouped by `key`: the value, or a tuple of several."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for r in df.collect():
        d = r.asDict()
        out.setdefault(d[key[0]] if len(key) == 1 else tuple(d[k] for k in key), []).append(d)
    return out


def _local_dir(location: str, what: str) -> Path:
    """A local folder from a path or a file: URI; anything else cannot be written by the driver's Python."""
    if location.startswith("file:"):
        location = re.sub(r"^file:(//)?", "", location)
    elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:/", location):
        raise ReportError(f"{what} {location!r} is not a local folder: pass --out DIR or set report.out")
    return Path(location)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80]


def _seconds(ts_ms: int | None, start_ms: int) -> float | None:
    return None if ts_ms is None else (ts_ms - start_ms) / 1000.0


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def latest_audit(lake: Lake, runs: Sequence[str] | None) -> dict[str, Any]:
    """The newest `gold/audit_runs` row (of `runs`, when given) as a dict; `ReportError` when there is none."""
    audits = lake.read(GOLD_AUDIT_RUNS)
    if runs:
        audits = audits.where(F.arrays_overlap("runs", F.array(*[F.lit(r) for r in runs])))
    # One row: the newest audit (of the requested runs).
    latest = audits.orderBy(F.col("started_at_ms").desc(), F.col("audit_id").desc()).limit(1).collect()
    if not latest:
        which = f" of run(s) {', '.join(runs)}" if runs else ""
        raise ReportError(f"no audit{which} in the lake at {lake.root}: run `replog audit` first")
    return latest[0].asDict(recursive=True)


def _what(e: dict[str, Any]) -> str:
    """`truncation by broker 1`, `leader_election unclean by controller 1000` (only a controller elects)."""
    kind = e["event_type"] + (f" {e['action']}" if e["action"] else "")
    node = "controller" if e["event_type"] == LEADER_ELECTION else "broker"
    return kind + ("" if e["broker_id"] is None else f" by {node} {e['broker_id']}")


def _log_line(e: dict[str, Any]) -> str | None:
    """`server.log:812` for an event read from a broker log line (the line an operator opens), else None."""
    if e.get("source") != KAFKA_LOG_SOURCE or e.get("_source_file") is None:
        return None
    return f"{PurePath(e['_source_file']).name}:{e['_source_line']}"


def _violation_row(r: dict[str, Any], start_ms: int,
                   looked_up: dict[tuple[str, int], dict[str, Any]] | None = None) -> ViolationRow:
    found = looked_up or {}
    evidence = tuple(
        Evidence(int(i), _seconds(found[(r["run_id"], i)]["ts_ms"], start_ms), _what(found[(r["run_id"], i)]),
                 _log_line(found[(r["run_id"], i)]), found[(r["run_id"], i)]["event_type"])
        if (r["run_id"], i) in found else Evidence(int(i)) for i in (r["evidence"] or ()))
    count = int(r.get("streak_count") or 1)
    return ViolationRow(r["run_id"], r["invariant"], r["severity"], r["topic"], r["partition"], r["replica"],
                        _seconds(r["ts_ms"], start_ms) or 0.0, r["event_id"], r["offset"], r["expected"],
                        r["actual"], evidence, r["message"], count,
                        (int(r["first_offset"]), int(r["last_offset"]))
                        if count > 1 and r.get("first_offset") is not None else None,
                        _seconds(r.get("last_ts_ms"), start_ms) if count > 1 else None)


def _incident_row(r: dict[str, Any], start_ms: int) -> IncidentRow:
    return IncidentRow(r["run_id"], r["topic"], r["partition"], r["follower_id"], r["leader_id"], r["leader_epoch"],
                       _seconds(r["start_ms"], start_ms) or 0.0, _seconds(r["end_ms"], start_ms),
                       r["peak_time_lag_ms"], r["peak_message_lag"], r["lag_max_ms"],
                       _seconds(r["shrink_ms"], start_ms), r["verdict"], int(r.get("failed_fetches") or 0),
                       tuple(r.get("fetch_errors") or ()), r.get("shrink_outcome"),
                       _seconds(r.get("leader_deposed_ms"), start_ms),
                       _seconds(r.get("last_caught_up_time_ms"), start_ms), _seconds(r.get("deadline_ms"), start_ms))


def _violation_cols(evidence: int = EVIDENCE_KEPT) -> list[Column]:
    return [F.col(c) for c in ("run_id", "invariant", "severity", "topic", "partition", "replica", "ts_ms",
                               "event_id", "offset", "expected", "actual", "message")] + [
        F.slice(F.coalesce("evidence", F.array().cast("array<bigint>")), 1, evidence).alias("evidence")]


def _invariant_count(name: str, severity: str, evaluated: bool, found: dict[str, int],
                     note: str | None = None) -> InvariantCount:
    """An audit summary row from the invariant's violations per severity (`found`); a severity the catalogue does
    not know is counted with the errors, as `flagged_partitions` ranks it."""
    unknown = sum(n for s, n in found.items() if s not in SEVERITIES)
    return InvariantCount(name, severity, evaluated, found.get(ERROR, 0) + unknown, found.get(WARNING, 0), note,
                          found.get(INFO, 0))


def _fallback_severity(name: str, found: dict[str, int]) -> str:
    """The severity of an invariant the audit row does not list: the catalogue's, else the gravest one found."""
    if name in BY_NAME:
        return BY_NAME[name].severity
    return min(found, key=severity_rank, default=ERROR)


def _incident_order() -> list[Column]:
    """Incidents listed bad verdicts first, then by time (built per call: a Column needs a running Spark)."""
    return [F.when(F.col("verdict").isin(*sorted(BAD_VERDICTS)), 0).otherwise(1), F.col("start_ms"),
            F.col("follower_id")]


def run_report(
    spark: SparkSession,
    lake: Lake,
    cfg: ReportConfig | None = None,
    runs: Sequence[str] | None = None,
    out: str | Path | None = None,
    log: Callable[[str], None] = print,
    partitions: Sequence[tuple[str, int]] = (),
) -> ReportResult:
    """Write the report of `runs` (default: the latest audit's); see the module docstring. `partitions` (topic,
    partition) are drawn too, in every reported run that has a timeline of them, flagged or not."""
    t0 = time.perf_counter()
    cfg = cfg or ReportConfig()
    if runs:
        runs = bronze_runs(lake, runs)  # a run id bronze does not hold is an error, not an empty report
    audit = latest_audit(lake, runs)
    runs = sorted(runs) if runs else sorted(audit["runs"] or [])
    out_dir = _local_dir(str(out), "--out") if out else (
        _local_dir(cfg.out, "report.out") if cfg.out else
        _local_dir(lake.root, "the lake") / "reports" / _safe(audit["audit_id"]))
    # Before any plot is drawn: a folder that cannot be made is named now, not as a raw OSError at the end.
    problem = folder_problem(out_dir, "the report")
    if problem is not None:
        raise ReportError(f"{'--out' if out else 'report.out' if cfg.out else 'the report folder'} {out_dir}: "
                          f"{problem}")
    result = ReportResult(out_dir, audit["audit_id"], list(runs))
    # Before the aggregates: a name no run has is a usage error, not minutes of work first.
    named = named_partitions(spark, lake, runs, partitions)
    parts = [{"run_id": r} for r in runs]
    log(f"report: audit {audit['audit_id']}, {len(runs)} run(s) -> {out_dir}")

    violations = lake.read(GOLD_INVARIANT_VIOLATIONS, parts) if parts else lake.read(GOLD_INVARIANT_VIOLATIONS).limit(0)
    incidents = lake.read(GOLD_LAG_INCIDENTS, parts) if parts else lake.read(GOLD_LAG_INCIDENTS).limit(0)
    bounds = _run_bounds(lake, parts)

    def start(run: str) -> int:
        return bounds.get(run, (0, 0))[0]

    # Aggregates: a handful of rows each (one per invariant, verdict, fetch error name).
    counts: dict[str, dict[str, int]] = {}
    loss_causes: dict[str, int] = {}
    cause = F.when(F.col("invariant") == ACKED_WRITE_LOST, loss_cause(F.col("message"))).alias("cause")
    for r in violations.groupBy("invariant", "severity", cause).count().collect():
        found = counts.setdefault(r["invariant"], {})
        found[r["severity"]] = found.get(r["severity"], 0) + int(r["count"])
        if r["cause"] is not None:
            loss_causes[r["cause"]] = loss_causes.get(r["cause"], 0) + int(r["count"])
    verdicts = {r["verdict"]: int(r["count"]) for r in incidents.groupBy("verdict").count().collect()}
    catalogue = audit["invariants"] or []
    known = {c["invariant"] for c in catalogue}
    invariants = tuple(_invariant_count(c["invariant"], c["severity"], bool(c["evaluated"]),
                                        counts.get(c["invariant"], {}), c["note"]) for c in catalogue)
    # Violations of an invariant the audit row does not list (an older catalogue) are still counted.
    invariants += tuple(_invariant_count(n, _fallback_severity(n, c), True, c)
                        for n, c in sorted(counts.items()) if n not in known)

    unscoped = violations.where(F.col("topic").isNull() | F.col("partition").isNull())
    run_level = [r.asDict() for r in unscoped.select(*_violation_cols()).orderBy("run_id", "ts_ms", "event_id",
                                                                           F.col("offset").asc_nulls_first())
                 .limit(cfg.max_rows).collect()]
    run_level_total = unscoped.count() if len(run_level) >= cfg.max_rows else len(run_level)
    listed = incidents.orderBy(*_incident_order(), *KEY).limit(cfg.max_rows)
    if parts:
        listed = with_fetch_failures(listed, lake.read(BRONZE_EVENTS, parts))
        if lake.exists(SILVER_PARTITION_STATE):
            listed = with_leader_deposed(listed, lake.read(SILVER_PARTITION_STATE, parts))
    incident_list = [r.asDict() for r in listed.orderBy(*_incident_order(), *KEY).collect()]

    fetch_error_counts = _per_error(failed_fetches(lake.read(BRONZE_EVENTS, parts))) if parts else {}
    produce_error_counts = _per_error(refused_produce(lake.read(BRONZE_EVENTS, parts))) if parts else {}
    elections = unclean_elections(lake.read(BRONZE_EVENTS, parts)) if parts else None
    flagged = flagged_partitions(violations, incidents, elections).cache()
    try:
        flagged_total = flagged.count()
        chosen = flagged.orderBy(*worst_first()).limit(cfg.max_partitions).collect()
        named_rows = with_flags(spark, named, flagged)
    finally:
        flagged.unpersist()
    picked = {(c["run_id"], c["topic"], c["partition"]) for c in chosen}
    extra = [r for r in named_rows if (r["run_id"], r["topic"], r["partition"]) not in picked]
    sections, pngs = _sections(spark, lake, cfg, [*chosen, *extra], violations, incidents, bounds, out_dir, log)
    flags = {(r["run_id"], r["topic"], r["partition"]): bool(r["_flagged"]) for r in named_rows}
    sections = [s if (s.run_id, s.topic, s.partition) not in flags else
                replace(s, asked=True, flagged=flags[(s.run_id, s.topic, s.partition)]) for s in sections]
    drawn = plot_overviews(spark, lake, runs, out_dir, cfg, log, bounds=bounds, clear=True)
    overviews = [OverviewSection(o.run_id, o.path.name, o.faults, o.faults_total) for o in drawn]
    overview_pngs = [o.path for o in drawn]

    doc = ReportDocument(
        generated_at=_iso(int(time.time() * 1000)), lake=lake.root, audit_id=audit["audit_id"],
        audit_started_at=_iso(audit["started_at_ms"]), bronze_version=audit["bronze_version"], runs=tuple(runs),
        invariants=invariants, not_evaluated=tuple(audit["not_evaluated"] or ()),
        run_level=tuple(_violation_row(r, start(r["run_id"])) for r in run_level), run_level_total=run_level_total,
        verdicts=verdicts, incidents=tuple(_incident_row(r, start(r["run_id"])) for r in incident_list),
        incidents_total=sum(verdicts.values()), flagged_total=flagged_total, sections=tuple(sections),
        max_partitions=cfg.max_partitions, max_rows=cfg.max_rows, fetch_errors=fetch_error_counts,
        produce_errors=produce_error_counts,
        loss_causes=loss_causes, silence_ms=cfg.silence_ms,
        overviews=tuple(overviews), overviews_capped=max(0, len(runs) - cfg.max_partitions),
        run_starts={r: _iso(bounds[r][0]) for r in runs if r in bounds},
        bucket_note=f"Series with more than {cfg.max_points} changes are aggregated into {cfg.max_points} time "
                    "buckets per run (last value, with the bucket's min..max range shaded).",
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    result.markdown_path.write_text(markdown(doc), encoding="utf-8")
    result.html_path.write_text(html_page(doc), encoding="utf-8")
    result.flagged, result.plotted, result.pngs = flagged_total, len(sections), [*overview_pngs, *pngs]
    result.asked, result.not_plotted = len(extra), doc.not_plotted
    result.errors, result.warnings, result.infos = doc.errors, doc.warnings, doc.infos
    result.incidents = doc.incidents_total
    result.seconds = time.perf_counter() - t0
    return result


def named_partitions(spark: SparkSession, lake: Lake, runs: Sequence[str],
                     partitions: Sequence[tuple[str, int]]) -> list[tuple[str, str, int]]:
    """The (run, topic, partition) keys of the partitions `replog report --partition` names, in each of `runs` that
    has a timeline of them (HW and LEO, or ISR and leaders): by run, then in the order named. A partition that no
    run has is an error (a typo is not an empty report)."""
    wanted = list(dict.fromkeys((str(t), int(p)) for t, p in partitions))
    if not wanted:
        return []
    named = ", ".join(f"{t}-{p}" for t, p in wanted)
    missing_tables = [s.name for s in (SILVER_REPLICA_OFFSETS, SILVER_PARTITION_STATE) if not lake.exists(s)]
    if missing_tables:
        raise ReportError(f"--partition {named}: no {' or '.join(missing_tables)} in lake {lake.root}: run "
                          "`replog timelines` first")
    if not runs:
        raise ReportError(f"--partition {named}: no run to draw it from (no audit yet, and no --run)")
    parts = [{"run_id": r} for r in runs]
    keys = spark.createDataFrame([(r, t, p) for r in runs for t, p in wanted],
                                 "run_id string, topic string, partition int")
    topics = sorted({t for t, _ in wanted})
    timelines = reduce(DataFrame.unionByName, [
        lake.read(spec, parts).where(F.col("topic").isin(*topics)).select(*KEY)
        for spec in (SILVER_REPLICA_OFFSETS, SILVER_PARTITION_STATE)])
    # One row per named partition of each run that has it: bounded by what the command line names.
    held = {(r["run_id"], r["topic"], r["partition"]) for r in keys.join(timelines, KEY, "left_semi").collect()}
    missing = [f"{t}-{p}" for t, p in wanted if not any((r, t, p) in held for r in runs)]
    if missing:
        raise ReportError(f"--partition {', '.join(missing)}: no timeline of it in the reported run(s) "
                          f"{', '.join(runs)} ({SILVER_REPLICA_OFFSETS.name} and {SILVER_PARTITION_STATE.name} of "
                          f"lake {lake.root}); a partition is named TOPIC-N, e.g. orders-3")
    return [(r, t, p) for r in runs for t, p in wanted if (r, t, p) in held]


def with_flags(spark: SparkSession, keys: Sequence[tuple[str, str, int]], flagged: DataFrame) -> list[Any]:
    """`keys` (in their order) with their `flagged` counts, 0 where nothing flagged them, and `_flagged`: whether
    `flagged_partitions` holds them."""
    if not keys:
        return []
    frame = spark.createDataFrame(list(keys), "run_id string, topic string, partition int")
    rows = frame.join(flagged.withColumn("_flagged", F.lit(True)), KEY, "left").na.fill(0, list(COUNTS)).na.fill(
        False, ["_flagged"]).collect()
    found = {(r["run_id"], r["topic"], r["partition"]): r for r in rows}
    return [found[k] for k in keys]


@dataclass(frozen=True)
class PartitionPicture:
    """One partition's picture and the key to its numbered evidence rings (what the report prints under it)."""

    png: Path
    evidence_key: tuple[NumberedEvidence, ...] = ()

    def key_text(self) -> str | None:
        """The key as the report prints it (`evidence_key_text`), None when the picture has no numbered ring."""
        return evidence_key_text(self.evidence_key)


def partition_pictures(
    spark: SparkSession,
    lake: Lake,
    partitions: Sequence[tuple[str, str, int]],
    out_dir: str | Path,
    cfg: ReportConfig | None = None,
    log: Callable[[str], None] = print,
) -> list[PartitionPicture]:
    """The report's picture of any partitions, flagged or not: one PNG per (run, topic, partition), in the
    order given, with HW and LEO per replica, ISR bands, leader changes, and the partition's violations and
    lag incidents marked when the audit and lag jobs have run, each with the key to its numbered evidence rings (a
    notebook prints it under the picture, as the report does). Bounded like the report (`cfg`'s caps)."""
    cfg = cfg or ReportConfig()
    wanted = list(dict.fromkeys((str(r), str(t), int(p)) for r, t, p in partitions))
    if not wanted:
        return []
    missing = [s.name for s in (SILVER_REPLICA_OFFSETS, SILVER_PARTITION_STATE) if not lake.exists(s)]
    if missing:
        raise ReportError(f"no {' or '.join(missing)} in lake {lake.root}: run `replog timelines` first")
    parts = [{"run_id": r} for r in bronze_runs(lake, sorted({w[0] for w in wanted}))]
    keys = spark.createDataFrame(wanted, "run_id string, topic string, partition int")
    # One row per requested partition that has no timeline: a typo is an error, not an empty picture.
    unknown = [tuple(r) for r in keys.join(lake.read(SILVER_REPLICA_OFFSETS, parts), KEY, "left_anti").collect()]
    if unknown:
        raise ReportError(f"no timeline for {', '.join(f'{t}-{p} of run {r}' for r, t, p in unknown)} in "
                          f"{SILVER_REPLICA_OFFSETS.name} of lake {lake.root}")
    # A job that has not run yet marks nothing: an empty frame of its table.
    violations, incidents = (lake.read(s, parts) if lake.exists(s) else
                             spark.createDataFrame([], to_spark_schema(s.schema))
                             for s in (GOLD_INVARIANT_VIOLATIONS, GOLD_LAG_INCIDENTS))
    elections = unclean_elections(lake.read(BRONZE_EVENTS, parts))
    chosen = with_flags(spark, wanted, flagged_partitions(violations, incidents, elections))
    sections, pngs = _sections(spark, lake, cfg, chosen, violations, incidents, _run_bounds(lake, parts),
                               Path(out_dir), log, clear=False)
    return [PartitionPicture(png, s.evidence_key) for png, s in zip(pngs, sections, strict=True)]


def _run_bounds(lake: Lake, parts: Sequence[dict[str, str]]) -> dict[str, tuple[int, int]]:
    """Per run (one row each): the first and last event time, the origin and the end of every time axis."""
    if not parts:
        return {}
    return {r["run_id"]: (r["start_ms"], r["end_ms"]) for r in run_bounds(lake.read(BRONZE_EVENTS, parts)).collect()}


class DrawnOverview(NamedTuple):
    """A run's cluster overview as `plot_overviews` drew it: the PNG, and the faults on its lanes as the report
    lists them (the run's first max_rows; `faults_total` counts them all)."""

    run_id: str
    path: Path
    faults: tuple[FaultRow, ...] = ()
    faults_total: int = 0


def fault_rows(spans: Sequence[FaultSpan], controllers: Sequence[int]) -> tuple[FaultRow, ...]:
    """Drawn faults as the report's table rows, a network partition's peers named (`controller 1000` for the
    node ids in `controllers`)."""
    return tuple(FaultRow(f.broker, f.kind, f.start_s, f.end_s, f.open,
                          peer_names(f.peers, controllers) if f.kind == "network_partition" else "", f.direction)
                 for f in spans)


def plot_overviews(
    spark: SparkSession,
    lake: Lake,
    runs: Sequence[str],
    out_dir: str | Path,
    cfg: ReportConfig | None = None,
    log: Callable[[str], None] = print,
    bounds: dict[str, tuple[int, int]] | None = None,
    clear: bool = False,
) -> list[DrawnOverview]:
    """The report's cluster overview of each of `runs` (the first `max_partitions`) as a PNG in `out_dir`, in
    that order; none before `replog timelines` has run. Every frame collected is per time bucket (at most
    `max_points` rows per run and series); `bounds` are the runs' (first, last) event times when known, and
    `clear` removes the folder's earlier overviews first (a report written again)."""
    cfg = cfg or ReportConfig()
    out_dir = Path(out_dir)
    for old in out_dir.glob("overview-*.png") if clear else ():
        old.unlink()
    if runs and bounds is None:
        bounds = _run_bounds(lake, [{"run_id": r} for r in bronze_runs(lake, runs)])
    bounds = bounds or {}
    drawn = [r for r in runs if r in bounds][: cfg.max_partitions]
    if not drawn or not lake.exists(SILVER_PARTITION_STATE):
        return []
    parts = [{"run_id": r} for r in drawn]
    spans = spark.createDataFrame([(r, *bounds[r]) for r in drawn], "run_id string, start_ms long, end_ms long")
    buckets = bucket_bounds(spans, cfg.max_points)
    widths = {r["run_id"]: int(r["bucket_ms"]) for r in buckets.collect()}
    state = lake.read(SILVER_PARTITION_STATE, parts)
    incidents = (lake.read(GOLD_LAG_INCIDENTS, parts) if lake.exists(GOLD_LAG_INCIDENTS)
                 else spark.createDataFrame([], to_spark_schema(GOLD_LAG_INCIDENTS.schema)))
    changes = (lake.read(SILVER_ISR_CHANGES, parts) if lake.exists(SILVER_ISR_CHANGES)
               else spark.createDataFrame([], to_spark_schema(SILVER_ISR_CHANGES.schema)))
    bronze = lake.read(BRONZE_EVENTS, parts)

    def by_run(df: DataFrame) -> dict[Any, list[dict[str, Any]]]:
        return _rows_by(df, "run_id")

    counts = by_run(partition_counts(state, incidents, buckets))
    down = by_run(down_buckets(bronze, buckets))
    churn = by_run(isr_churn(changes, buckets))
    by_controller = by_run(controller_isr_shrinks(state, changes, buckets))
    elected = by_run(elections(bronze, buckets))
    life = by_run(lifecycle_events(bronze, cfg.max_rows))
    faults = by_run(fault_spans(bronze, buckets, cfg.max_rows))
    controllers = by_run(election_controllers(bronze))
    # One row per run: its partitions and brokers (a broker count, not an event count): those its events name
    # (the controller's elections and partition changes name the controller, no broker), and those the assignment
    # names (a broker that logged nothing; broker logs often state no assignment).
    controller = F.col("event_type").isin(LEADER_ELECTION, PARTITION_CHANGE)
    # Two distinct selections, not one aggregation: a set of brokers grouped per partition or per run (collect_set
    # over every event) took 9-12 s at 10 M events, the distinct pairs ~1 s each.
    partitions = {r["run_id"]: int(r["count"]) for r in bronze.where(
        F.col("topic").isNotNull() & F.col("partition").isNotNull()).select(
        "run_id", "topic", "partition").distinct().groupBy("run_id").count().collect()}
    named_brokers_of = {r["run_id"]: r["brokers"] for r in bronze.where(
        ~controller & F.col("broker_id").isNotNull()).select("run_id", "broker_id").distinct().groupBy(
        "run_id").agg(F.collect_list("broker_id").alias("brokers")).collect()}
    assigned = {r["run_id"]: r["brokers"] for r in state.groupBy("run_id").agg(
        F.array_distinct(F.flatten(F.collect_set("replicas"))).alias("brokers")).collect()}
    listed: list[DrawnOverview] = []
    for run in drawn:
        start_ms, end_ms = bounds[run]
        marks = tuple(LifecycleMark((r["ts_ms"] - start_ms) / 1000.0, int(r["broker_id"]), r["action"], r["reason"])
                      for r in sorted(life.get(run, []), key=lambda r: (r["ts_ms"], r["event_id"]))
                      if r["broker_id"] is not None)
        spans_f, faults_total = fault_marks(faults.get(run, []), start_ms)
        if run not in assigned and not marks and not spans_f and not elected.get(run) and not down.get(run):
            log(f"report: no cluster overview of {run}: no partition state, election, broker crash or fault to draw")
            continue
        # The lanes: brokers of the assignment and those with a crash, restart or fault to draw.
        brokers = ({int(b) for b in (assigned.get(run) or [])} | {m.broker for m in marks}
                   | {f.broker for f in spans_f})
        named_brokers = brokers | {int(b) for b in named_brokers_of.get(run, [])}
        data = ClusterOverview(
            run_id=run, end_s=(end_ms - start_ms) / 1000.0, bucket_ms=widths[run], brokers=tuple(sorted(brokers)),
            partitions=partitions.get(run, 0),
            counts=filled_counts(counts.get(run, []), cfg.max_points),
            down=pd.DataFrame(down.get(run, []), columns=["run_id", *DOWN_COLUMNS]),
            churn=pd.DataFrame(churn.get(run, []), columns=["run_id", *CHURN_COLUMNS]),
            elections=pd.DataFrame(elected.get(run, []), columns=["run_id", *ELECTION_COLUMNS]),
            controller_shrinks=pd.DataFrame(by_controller.get(run, []), columns=["run_id", *CONTROLLER_COLUMNS]),
            lifecycle=marks, lifecycle_total=max((int(r["total"]) for r in life.get(run, [])), default=0),
            faults=spans_f, faults_total=faults_total, broker_count=len(named_brokers))
        name = f"overview-{len(listed) + 1:03d}-{_safe(run)}.png"
        rows = fault_rows(spans_f, sorted(int(r["broker_id"]) for r in controllers.get(run, [])))
        listed.append(DrawnOverview(run, plot_overview(data, out_dir / name), rows, faults_total))
        log(f"report: cluster overview of {run} -> {name}")
    return listed


def _sections(
    spark: SparkSession,
    lake: Lake,
    cfg: ReportConfig,
    chosen: Sequence[Any],
    violations: DataFrame,
    incidents: DataFrame,
    bounds: dict[str, tuple[int, int]],
    out_dir: Path,
    log: Callable[[str], None],
    clear: bool = True,
) -> tuple[list[PartitionSection], list[Path]]:
    """The plotted partitions' sections and PNGs; every frame collected here is bounded by the caps."""
    if not chosen:
        return [], []
    parts = [{"run_id": r} for r in sorted({c["run_id"] for c in chosen})]
    ro = lake.read(SILVER_REPLICA_OFFSETS, parts)
    ps = lake.read(SILVER_PARTITION_STATE, parts)
    keys = spark.createDataFrame([(c["run_id"], c["topic"], c["partition"]) for c in chosen],
                                 "run_id string, topic string, partition int")
    # Per chosen partition (one row each): its longest series. Up to max_points changes are drawn exactly
    # (1 ms buckets: intervals never start twice in one ms); beyond, the run is cut into max_points buckets.
    longest = {(r["run_id"], r["topic"], r["partition"]): r["n"] for r in series_lengths(ro, ps, keys).collect()}
    rows = []
    for c in chosen:
        start_ms, end_ms = bounds.get(c["run_id"], (0, 0))
        exact = longest.get((c["run_id"], c["topic"], c["partition"]), 0) <= cfg.max_points
        bucket = 1 if exact else max(1, math.ceil((end_ms - start_ms + 1) / cfg.max_points))
        rows.append((c["run_id"], c["topic"], c["partition"], start_ms, bucket))
    selected = spark.createDataFrame(rows, "run_id string, topic string, partition int, start_ms long, bucket_ms long")

    def grouped(df: DataFrame) -> dict[Any, list[dict[str, Any]]]:
        return _rows_by(df, *KEY)

    sel = F.broadcast(selected.select(*KEY))
    offsets = grouped(offset_series(ro, selected))
    isr = grouped(isr_series(ps, selected))
    leaders = grouped(leader_changes(ps, selected, cfg.max_points))
    uncleans = grouped(first_rows(unclean_elections(lake.read(BRONZE_EVENTS, parts)).join(sel, KEY, "left_semi"),
                                  [F.col("ts_ms")], cfg.max_points))
    # Errors first, then warnings, then info findings (an acks=1 loss never takes an error's place); within a
    # severity the invariants take turns (each one's earliest, then each one's second, ...), so a
    # flood of one invariant does not hide the first violation of another behind the max_rows cap.
    # Offsets break ties: an end-of-run check's violations share event -1 and often one time (the writes one
    # truncation lost), and would come in any order.
    nth = F.row_number().over(Window.partitionBy(*KEY, "invariant").orderBy("ts_ms", "event_id",
                                                                            F.col("offset").asc_nulls_first()))
    # A streak of alike violations at consecutive offsets is one row (`jobs.violation_streaks`).
    viols = grouped(first_rows(violation_streaks(violations.join(sel, KEY, "left_semi").select(
        *_violation_cols())).withColumn("_nth", nth), [severity_order(), F.col("_nth"), F.col("ts_ms"),
                       F.col("event_id"), F.col("invariant"), F.col("offset").asc_nulls_first()], cfg.max_rows))
    incs = grouped(with_leader_deposed(with_fetch_failures(first_rows(
        incidents.join(sel, KEY, "left_semi"), [F.col("start_ms"), F.col("follower_id")], cfg.max_rows),
        lake.read(BRONZE_EVENTS, parts)), ps))
    failed = fetch_errors(lake.read(BRONZE_EVENTS, parts)).join(sel, KEY, "left_semi").withColumn(
        "groups", F.count(F.lit(1)).over(Window.partitionBy(*KEY)))
    fetch_failures = grouped(first_rows(failed, [F.col("first_ms"), F.col("follower"), F.col("leader"),
                                                 F.col("error")], cfg.max_rows))
    fetch_marks = grouped(fetch_error_times(lake.read(BRONZE_EVENTS, parts), selected, cfg.max_points))
    produce = grouped(produce_outcomes(lake.read(BRONZE_EVENTS, parts), selected, cfg.burst_gap_ms))
    ends = spark.createDataFrame([(r, bounds.get(r, (0, 0))[1]) for r in sorted({c["run_id"] for c in chosen})],
                                 "run_id string, end_ms long")
    silences = grouped(produce_silences(lake.read(BRONZE_EVENTS, parts), selected, cfg.silence_ms, ends))
    # Per plotted partition and invariant: how many in all (the marks above stop at max_rows).
    totals = grouped(violations.join(sel, KEY, "left_semi").groupBy(*KEY, "severity", "invariant").agg(
        F.count(F.lit(1)).alias("count"), F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset")))
    settings = _rows_by(run_settings(lake.read(BRONZE_EVENTS, parts)), "run_id")
    losses = grouped(first_rows(loss_spans(violations.join(sel, KEY, "left_semi")),
                                [F.col("count").desc(), F.col("ts_ms")], cfg.max_rows))
    life: dict[str, list[dict[str, Any]]] = {}
    life.update(_rows_by(lifecycle_events(lake.read(BRONZE_EVENTS, parts), cfg.max_points), "run_id"))
    # The plotted partitions' replicas' faults, the first max_points of each broker: a busy run's other brokers
    # cannot push a replica's faults past the cap.
    brokers = F.broadcast(ps.join(sel, KEY, "left_semi").select(
        "run_id", F.explode("replicas").alias("broker_id")).distinct())
    faults = _rows_by(fault_spans(lake.read(BRONZE_EVENTS, parts).join(brokers, ["run_id", "broker_id"], "left_semi"),
                                  ends, cfg.max_points, per=("run_id", "broker_id")), "run_id")
    controllers = _rows_by(election_controllers(lake.read(BRONZE_EVENTS, parts)), "run_id")
    # The listed violations' evidence events: at most max_partitions x max_rows x EVIDENCE_KEPT rows.
    wanted = sorted({(r["run_id"], int(e)) for rows in viols.values() for r in rows for e in (r["evidence"] or ())})
    looked_up: dict[tuple[str, int], dict[str, Any]] = {}
    if wanted:
        ids = spark.createDataFrame(wanted, "run_id string, event_id long")
        looked_up = {(r["run_id"], r["event_id"]): r.asDict()
                     for r in evidence_events(lake.read(BRONZE_EVENTS, parts), ids).collect()}

    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("p[0-9][0-9][0-9]-*.png") if clear else ():  # this report's PNGs from an earlier run
        old.unlink()
    sections, pngs = [], []
    for n, (c, (run, topic, partition, start_ms, bucket)) in enumerate(zip(chosen, rows, strict=True), 1):
        key = (run, topic, partition)
        end_s = max(0.0, (bounds.get(run, (0, 0))[1] - start_ms) / 1000.0)
        v_rows = [_violation_row(r, start_ms, looked_up) for r in sorted(viols.get(key, []), key=lambda r: (
            severity_rank(r["severity"]), r["ts_ms"], r["event_id"], r["invariant"],
            -1 if r["offset"] is None else r["offset"]))]
        i_rows = [_incident_row(r, start_ms) for r in sorted(incs.get(key, []), key=lambda r: (
            r["start_ms"], r["follower_id"]))]
        lead = sorted(leaders.get(key, []), key=lambda r: r["ts_ms"])
        notes = []
        if lead and lead[0]["changes"] > len(lead):
            notes.append(f"first {len(lead)} of {lead[0]['changes']} leader changes drawn")
        found = c["errors"] + c["warnings"] + c["infos"]
        listed = sum(v.count for v in v_rows)
        if listed < found:
            notes.append(f"{listed} of {found} violations marked, each invariant's earliest first")
        drawn_faults = fault_marks(faults.get(run, []), start_ms)[0]
        replicas = tuple(sorted({r["replica"] for r in isr.get(key, []) + offsets.get(key, [])}))
        # Each broker's row carries its own total (the rows stop at max_points per broker).
        fault_totals = {int(r["broker_id"]): int(r["total"]) for r in faults.get(run, [])}
        replica_faults = [f for f in drawn_faults if f.broker in replicas]
        replica_total = sum(fault_totals.get(b, 0) for b in replicas)
        data = PartitionPlot(
            run_id=run, topic=topic, partition=partition, end_s=end_s,
            replicas=replicas,
            offsets=_frame(offsets.get(key, []), OFFSET_COLUMNS, start_ms),
            isr=_frame(isr.get(key, []), ISR_COLUMNS, start_ms),
            leaders=tuple(LeaderChange((r["ts_ms"] - start_ms) / 1000.0, r["leader_id"], r["leader_epoch"],
                                       False, r["from_elr"]) for r in lead if not r["unclean"])
            # Every unclean election, from bronze (see `unclean_elections`), whatever the limit: they are the
            # changes that may have lost data.
            + tuple(LeaderChange((r["ts_ms"] - start_ms) / 1000.0, r["leader_id"], r["leader_epoch"], True)
                    for r in sorted(uncleans.get(key, []), key=lambda r: r["ts_ms"])),
            violations=tuple(ViolationMark(v.time_s, v.invariant, v.severity, v.replica, v.offset, tuple(
                EvidencePoint(e.time_s, e.what, e.event_id) for e in v.evidence if e.time_s is not None and e.what),
                v.event_id < 0, None if v.offsets is None else (*v.offsets, v.count)) for v in v_rows),
            incidents=tuple(IncidentSpan(i.start_s, i.end_s, i.follower, i.verdict, i.leader, i.lag_max_ms,
                                         i.shrink_outcome, i.zombie) for i in i_rows),
            lifecycle=tuple(LifecycleMark((r["ts_ms"] - start_ms) / 1000.0, r["broker_id"], r["action"], r["reason"])
                            for r in life.get(run, []) if r["broker_id"] is not None),
            faults=drawn_faults, faults_total=replica_total,
            controllers=tuple(sorted(int(r["broker_id"]) for r in controllers.get(run, []))),
            fetch_errors=tuple(FetchErrorMark((r["ts_ms"] - start_ms) / 1000.0, r["follower"])
                               for r in sorted(fetch_marks.get(key, []), key=lambda r: (r["ts_ms"], r["follower"]))),
            bucket_ms=bucket, notes=tuple(notes),
            violation_totals=tuple(sorted((t["severity"], t["invariant"], int(t["count"]))
                                          for t in totals.get(key, []))),
            loss_spans=tuple(LossSpan((r["ts_ms"] - start_ms) / 1000.0, r["invariant"], r["severity"],
                                      int(r["first_offset"]), int(r["last_offset"]), int(r["count"]))
                             for r in sorted(losses.get(key, []), key=lambda r: (-r["count"], r["ts_ms"]))),
        )
        name = f"p{n:03d}-{_safe(run)}-{_safe(topic)}-{partition}.png"
        pngs.append(plot_partition(data, out_dir / name))
        log(f"report: plotted {topic}-{partition} of {run} -> {name}")
        rules = tuple((n, BY_NAME[n].rule, BY_NAME[n].offsets) for n in sorted({v.invariant for v in v_rows})
                      if n in BY_NAME)
        # A 0.9 line names no leader; broker 0 is a broker like any other.
        fails = sorted(fetch_failures.get(key, []), key=lambda r: (
            r["first_ms"], r["follower"], -1 if r["leader"] is None else r["leader"], r["error"]))
        listed_faults = fault_rows(replica_faults[:cfg.max_rows], data.controllers)
        sections.append(PartitionSection(run, topic, partition, int(c["errors"]), int(c["warnings"]),
                                         int(c["incidents"]), tuple(v_rows), tuple(i_rows), name, rules,
                                         int(c["unclean_elections"]),
                                         tuple(FetchErrorRow(r["follower"], r["leader"], r["error"],
                                                             int(r["responses"]), (r["first_ms"] - start_ms) / 1000.0,
                                                             (r["last_ms"] - start_ms) / 1000.0) for r in fails),
                                         int(fails[0]["groups"]) if fails else 0, listed_faults, replica_total,
                                         tuple(InvariantSpread(t["invariant"], t["severity"], int(t["count"]),
                                                               t["first_offset"], t["last_offset"])
                                               for t in sorted(totals.get(key, []), key=lambda t: (
                                                   severity_rank(t["severity"]), t["invariant"]))),
                                         infos=int(c["infos"]),
                                         produce=tuple(_produce_row(r, start_ms) for r in produce.get(key, [])),
                                         **_silences(silences.get(key, []), start_ms),
                                         settings=section_settings(settings.get(run, []), topic),
                                         evidence_key=evidence_key(data)))
    return _with_naming(spark, sections, violations), pngs


def violations_naming(violations: DataFrame, wanted: DataFrame) -> DataFrame:
    """Per (run_id, topic, partition, event_id) of `wanted` (a short list): how many of the partition's violations
    name that event, as detecting event or evidence (`naming`), whether the report lists them or not."""
    named = violations.select(*KEY, F.explode(F.array_distinct(F.concat(
        F.coalesce("evidence", F.array().cast("array<bigint>")), F.array("event_id")))).alias("event_id"))
    return named.join(F.broadcast(wanted), [*KEY, "event_id"]).groupBy(*KEY, "event_id").agg(
        F.count(F.lit(1)).alias("naming"))


def _with_naming(spark: SparkSession, sections: list[PartitionSection],
                 violations: DataFrame) -> list[PartitionSection]:
    """`sections` with, for each chain's event, how many of its partition's violations name it (one small query)."""
    wanted = sorted({(s.run_id, s.topic, s.partition, chain_hub(c)[0]) for s in sections for c in s.chains})
    if not wanted:
        return sections
    hubs = spark.createDataFrame(wanted, "run_id string, topic string, partition int, event_id long")
    counts: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    for r in violations_naming(violations, hubs).collect():
        counts.setdefault((r["run_id"], r["topic"], r["partition"]), []).append((int(r["event_id"]), int(r["naming"])))
    return [replace(s, naming=tuple(sorted(counts.get((s.run_id, s.topic, s.partition), []))))
            if s.chains else s for s in sections]


def _produce_row(r: dict[str, Any], start_ms: int) -> ProduceRow:
    """A `produce_outcomes` row for the report (times in seconds since the run's first event)."""
    bursts = tuple((_seconds(b["first_ms"], start_ms), _seconds(b["last_ms"], start_ms), int(b["answers"]))
                   for b in r["bursts"] or ())
    return ProduceRow(None if r["acks"] is None else int(r["acks"]), str(r["error"]), int(r["answers"]),
                      r["wait_p50_ms"], r["wait_p99_ms"],
                      r["wait_max_ms"], _seconds(r["wait_max_ms_at"], start_ms), int(r["timed"]),
                      _seconds(r["first_ms"], start_ms), _seconds(r["last_ms"], start_ms), bursts,
                      int(r["burst_count"] or 0))


def _silences(rows: list[dict[str, Any]], start_ms: int) -> dict[str, Any]:
    """A `produce_silences` row (at most one) as PartitionSection's two fields, in seconds since the run's start."""
    if not rows:
        return {}
    (r,) = rows
    return {"produce_silences": tuple((_seconds(g["from_ms"], start_ms), _seconds(g["to_ms"], start_ms),
                                       bool(g["until_end"])) for g in r["silences"] or ()),
            "produce_silence_count": int(r["silence_count"])}


def _frame(rows: list[dict[str, Any]], columns: Sequence[str], start_ms: int) -> pd.DataFrame:
    """A plot series from collected rows: `ts_ms` becomes `t_s`, seconds since the run's first event."""
    frame = pd.DataFrame.from_records(rows, columns=[c for c in columns if c != "t_s"] + ["ts_ms"])
    frame["t_s"] = (frame["ts_ms"].astype("float64") - start_ms) / 1000.0
    return frame[list(columns)].sort_values(["replica", "t_s"], kind="stable").reset_index(drop=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `spark-submit jobs/incident_report.py` (the `replog report` subcommand)."""
    from jobs.cli import main as cli_main

    return cli_main(["report", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":
    sys.exit(main())
