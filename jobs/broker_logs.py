"""Real Kafka broker logs (`server.log`, `state-change.log`, rolled `*.log.*`, compressed too) read into candidate
events.

`replog ingest --source kafka-logs` reads every log file of a landing folder as one run (`--run-id`): the lines
that `jobs.broker_log_patterns` knows become events with `source = kafka-log`, in the candidate shape of
`jobs.landing` (so validation, quarantine, exactly-once commits and the duplicate check are the ingest's own).
Every other line is not a replication event and is only counted.

What a log line does not say is recovered where Kafka's logs allow it, and left null where they do not:
* the broker: from the line's own prefix (`[Partition t-0 broker=1]`, `[Broker id=1]`, ...), else from the other
  lines of the same file when they all name one broker (a `server.log` belongs to one broker; a controller's
  election lines belong to the controller), else, for a file whose lines name none, from the files rolled from the
  same log (same folder and name: `server.log`, `server.log.2024-05-14-11`, `server.log.1.gz`), of this batch or an
  earlier one, when they name one; a partition line whose broker stays unknown is quarantined, since every
  per-replica check needs it;
* the topic of a KRaft controller's line, which names it by topic id: from the lines that print a topic-partition
  with its id (3.3+ state-change lines), of the same files or of an earlier batch (the event keeps the id in
  `topic_id`); quarantined when none does;
* the settings of a broker_config: the tab-indented lines after its `KafkaConfig values:` header, which carry
  no timestamp (the block a line belongs to is the last header before it in its file); its broker from
  broker.id / node.id;
* the time: log4j prints the broker's local time without a zone: `--log-timezone` (config `ingest.log_timezone`,
  default UTC) names it, unless the line carries its own offset (`2024-05-14T12:51:42.342Z`);
* the leader epoch of an ISR change, truncation or log start move: the epoch of the broker's last leadership
  line for the partition; an ISR commit's action (shrink / expand / update) and old ISR: from the ISR the broker
  last logged; a rejection's action: from the proposal the line names, else the broker's last proposal. "Last"
  looks back into the run's events already in bronze too, so a later batch of rolled files continues where one
  ended;
* a truncation's reason: from the fetcher's line just before it about the same offset (high watermark or leader
  epoch); none where the fetcher printed none (Kafka 2.0-3.0 print no line for epoch-based truncation);
* the time of a crash, which Kafka logs only as the broker starts again (LogManager finds a log directory without
  its clean shutdown file): 1 ms after the crashed process's last line, the last stamped line before the next
  process's first line, in the same file or, where the log rolled as the broker started again, the file rolled
  before (`_with_crash_lines`; an earlier batch's file: its last lines, `jobs.crash_context`), and after the broker's
  lines in its other files (`_after_the_brokers_last_line`); the lines before each process's first line and each
  file's last lines are kept for it as the files are read (`numbered_lines`' marks and tails), so a process killed
  mid-sentence is dated past its stack trace;
* the epoch of an unclean election read from the new leader's RECOVERING line (KIP-704): that of the line the
  same makeLeader call prints next (the become-leader line, or "Skipped the become-leader ... with leader epoch E"
  when it already leads), none without it. An election is one event whichever of its lines the logs hold
  (`_unrepeated_elections`): a RECOVERING line that restates an earlier RECOVERING line, the controller's line or
  an event in bronze (same leader; same epoch, or, when a line gives none, stamped within `RESTATE_WINDOW_MS` and
  paired with it in time order, so that a second election whose controller line did not land stays one) is no
  second event, nor is a controller's line whose election bronze already holds, nor a controller's replay line
  ("UNCLEAN partition change", which every controller prints) of a record another replay line told of, nor the
  builder's line ("Setting new leader ...") of an election its replay line tells of; a controller's line without the
  epoch takes that of its leader's RECOVERING lines where that is unambiguous (below). Such lines are not records,
  like any other line that is no event. A RECOVERING line printed again in a new epoch (the controller moved the
  epoch, e.g. by a reassignment, before the leader's AlterPartition cleared the state) is no election either when
  the leader line after it names the broker itself as the previous leader (3.3+); before 3.3, whose leader line
  does not say, it reads as a second election.

`event_id` is `ts_ms * 2^20 + n`, n numbering the run's events of one millisecond in file and line order after
those bronze already holds (a log's rolled files before its newer ones, `jobs.landing.roll_order`, for the lines of
one millisecond a roll split; every "last" and "next" above reads that order too): ids follow time, as the audit's
orderings expect, and never repeat across batches.
A log file is identified like any landing file (path, size, modification time): land closed (rolled) files, as
a file that grows after its ingest is read again whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from jobs.broker_log_patterns import (
    BROKER_ID_KEYS,
    BROKER_PREFIXES,
    CLEAN_END,
    CONFIG_BLOCK,
    CONFIG_ENTRY,
    KAFKA_CONFIG_KEYS,
    LOAD_MILESTONES,
    NEXT_LINE_EXCEPTIONS,
    PATTERNS,
    PROCESS_FIRST_LINES,
    PROCESS_MILESTONES,
    TOPIC_ID,
    LinePattern,
    column_sql,
    tp_prefix_sql,
)
from jobs.container_lines import without_prefix
from jobs.landing import EVENT_SPARK_SCHEMA, numbered_lines, roll_order, rolled_log_of
from jobs.validate import sql_str
from schemas.events import EVENT_TYPES, KAFKA_LOG_SOURCE, SCHEMA_VERSION

ID_SEQUENCE_BITS = 20
"""Low bits of a kafka-log `event_id` that number the events of one millisecond."""

LINE_PREFIX = (r"^.*?(\d{4})[-/](\d{2})[-/](\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[,.](\d{1,9}))?"
                r"(Z|[+-]\d{2}:?\d{2})?\]?\s+(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+(.*)$")
"""A log4j line: timestamp (`[%d]`, ISO or with '/'), level, message; anything before the timestamp (a
container or Kubernetes prefix) is skipped."""
_BROKER_SCREEN = tuple(literal for literal, _ in BROKER_PREFIXES)


class BrokerLogOptionsError(ValueError):
    """Raised for a run id or time zone that cannot be used."""


@dataclass(frozen=True)
class BrokerLogOptions:
    """How to read one cluster's logs: the run they become and the zone their timestamps are in."""

    run_id: str
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        if not self.run_id or self.run_id.strip() != self.run_id or "/" in self.run_id:
            raise BrokerLogOptionsError(
                f"run id {self.run_id!r} cannot name a run: expected a non-empty name without '/' or surrounding "
                "spaces (it names bronze's partition folder)")


def _any_contains(col: str, literals: Sequence[str]) -> Column:
    return reduce(lambda a, b: a | b, [F.col(col).contains(x) for x in literals])


def _any_starts(col: str | Column, prefixes: Sequence[str]) -> Column:
    """Whether the column starts with any of `prefixes`."""
    column = F.col(col) if isinstance(col, str) else col
    return reduce(lambda a, b: a | b, [column.startswith(x) for x in prefixes])


def _first_group(col: str, screened: Sequence[tuple[str, str]]) -> Column:
    """The first group of the first (literal, regex) whose literal the column holds and whose regex matches, as an
    int (null when none does): each regex runs only on the lines holding its literal."""
    return F.coalesce(*[F.expr(f"CASE WHEN contains({col}, {sql_str(lit)}) THEN "
                               f"try_cast(nullif(regexp_extract({col}, {sql_str(r)}, 1), '') AS INT) END")
                        for lit, r in screened])


def _pattern_case(patterns: Sequence[LinePattern]) -> Column:
    branches = " ".join(
        f"WHEN contains(_msg, {sql_str(p.trigger)}) AND _msg RLIKE {sql_str(p.regex)} THEN {sql_str(p.name)}"
        for p in patterns)
    return F.expr(f"CASE {branches} END")


def _unknown_form(patterns: Sequence[LinePattern]) -> Column:
    strict = sorted({p.trigger for p in patterns if p.strict})
    branches = " ".join(f"WHEN contains(_msg, {sql_str(t)}) THEN {sql_str(t)}" for t in strict)
    return F.expr(f"CASE {branches} END")


def _by_pattern(patterns: Sequence[LinePattern], column: str, default: str = "NULL") -> Column:
    """SQL CASE over `_pattern` giving `column` as each pattern defines it."""
    branches = [f"WHEN {sql_str(p.name)} THEN {column_sql(p, p.columns[column])}"
                for p in patterns if column in p.columns]
    return F.expr(f"CASE _pattern {' '.join(branches)} ELSE {default} END" if branches else default)


def _timestamp_ms(timezone: str, line: str = "line") -> Column:
    """Epoch milliseconds of the log4j stamp at the start of column `line` (null without one)."""
    g = [F.expr(f"regexp_extract({line}, {sql_str(LINE_PREFIX)}, {i})") for i in range(1, 9)]
    fraction = F.rpad(F.when(g[6] == "", F.lit("0")).otherwise(g[6]), 6, "0").substr(1, 6)
    seconds = F.concat(g[5], F.lit("."), fraction).cast("decimal(8,6)")
    zone = F.when(g[7] == "Z", F.lit("UTC")).when(g[7] != "", g[7]).otherwise(F.lit(timezone))
    # try_: a garbled stamp (month 13) is a line without a time, quarantined, not a failed job.
    ts = F.try_make_timestamp(g[0].cast("int"), g[1].cast("int"), g[2].cast("int"), g[3].cast("int"),
                              g[4].cast("int"), seconds, zone)
    return F.unix_millis(ts)


def read_broker_logs(spark: SparkSession, paths: Sequence[str], options: BrokerLogOptions,
                     existing: DataFrame | None = None, earlier: DataFrame | None = None) -> DataFrame:
    """The replication events of the log files `paths`, as candidate records (see the module docstring).

    `existing` holds the run's events already in bronze (`event_id` at least), whose ids the new ones follow;
    `earlier` lines of files an earlier batch read (`jobs.crash_context.earlier_lines`), which only date crashes.
    Every cast is a `try_cast`: a garbled number is a null that validation names, never a failed job.
    """
    starts = _any_contains("line", PROCESS_FIRST_LINES)
    # The lines before a process's start lines come along (`_before_mark`), and each file's last lines (`_in_tail`):
    # the last of them date a crash.
    # Read as logs: without a CRLF file's CR and a container runtime's prefix (a config block's settings and a stack
    # trace are then the lines they are in a broker's own files), a line the runtime cut in parts whole again.
    lines = numbered_lines(spark, paths, mark=starts, reach=START_REACH, tail=TAIL_LINES, log=True).select(
        "_path", "pos", "_last_pos", "line", "_before_mark", "_in_tail", F.lit(False).alias("_earlier"))
    if earlier is not None:
        # An earlier batch's lines, as `jobs.crash_context` read them: only their container runtime's prefix is left.
        lines = lines.unionByName(earlier.select("_path", "pos", F.col("pos").alias("_last_pos"),
                                                 without_prefix(F.col("line")).alias("line"),
                                                 F.lit(False).alias("_before_mark"), "_in_tail",
                                                 F.lit(True).alias("_earlier")))
    triggers = sorted({p.trigger for p in PATTERNS})
    # A setting line of a config block: tab-indented, no timestamp (stack-trace lines are '\tat ...').
    setting = F.col("line").startswith("\t") & F.col("line").contains(" = ")
    header = F.col("line").contains(CONFIG_BLOCK)
    exception = _any_starts("line", NEXT_LINE_EXCEPTIONS)
    # The other milestones' lines hold a trigger or a broker prefix already.
    milestone = _any_contains("line", LOAD_MILESTONES)
    near = F.col("_before_mark") | F.col("_in_tail")
    relevant = lines.where(_any_contains("line", triggers) | _any_contains("line", _BROKER_SCREEN) | setting
                           | header | exception | starts | milestone | near).select(
        "_path", "pos", "_last_pos", "line", "_earlier", _first_group("line", BROKER_PREFIXES).alias("_broker_prefix"),
        _any_contains("line", triggers).alias("_hit"), setting.alias("_setting"), header.alias("_header"),
        starts.alias("_start"), _milestone().alias("_milestone"), F.col("line").rlike(LINE_PREFIX).alias("_stamped"),
        near.alias("_near"))
    # The file's broker: the one broker its lines name (a prefix, or the broker.id of its KafkaConfig block), if they
    # name exactly one; and the config block a setting line belongs to: the last block header before it. Windows
    # over the file, not aggregates joined back, so the files are scanned once for all.
    # One ordering for both, so that Spark sorts the file's lines once for the two frames.
    in_order = Window.partitionBy("_path").orderBy("pos")
    whole_file = in_order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    block = F.last(F.when(F.col("_header"), F.struct(
        F.col("pos").alias("pos"), F.col("line").contains("Kafka" + CONFIG_BLOCK).alias("kafka"))),
        ignorenulls=True).over(in_order.rowsBetween(Window.unboundedPreceding, 0))
    in_kafka_block = F.col("_block").getField("kafka")
    names_broker = F.coalesce("_broker_prefix", F.when(F.col("_setting") & in_kafka_block, _config_broker(
        F.regexp_extract("line", CONFIG_ENTRY, 1), F.regexp_extract("line", CONFIG_ENTRY, 2)).cast("string")))
    lo, hi = F.min("_names_broker").over(whole_file), F.max("_names_broker").over(whole_file)
    stamped = F.col("_stamped")
    # The exception log4j prints on the line after a message logged with one ('Error for partition t-0 at offset 5'
    # names its error only there).
    after = F.lead(F.struct("pos", "line")).over(in_order)
    next_exception = F.when((after.pos == F.col("_last_pos") + 1) & _any_starts(after.line, NEXT_LINE_EXCEPTIONS),
                            F.regexp_extract(after.line, r"^([\w.]+\.\w+)(?::|\s|$)", 1))
    # A file's first line stays until its log's broker is known (`_with_rolled_log_broker`): a rolled file whose
    # lines name the broker but hold no event still names it for the log's other files.
    hits = (
        relevant.withColumn("_block", block).withColumn("_names_broker", names_broker)
        .withColumn("_file_lo", lo).withColumn("_file_hi", hi).withColumn("_file_broker", F.when(lo == hi, lo))
        .withColumn("_next_exception", next_exception)
        .withColumn("_cfg_block", F.when(F.col("_setting") & ~F.col("_hit") & in_kafka_block,
                                         F.col("_block").getField("pos")))
        .withColumn("_first", F.row_number().over(in_order) == 1)
        # The lines that show a process's life stay for `_with_crash_lines`: its first line, its milestones and
        # the stamped lines before a first line or at a file's end, one of which is a crashed process's last.
        .where(F.col("_hit") | F.col("_cfg_block").isNotNull() | F.col("_first") | F.col("_start")
               | F.col("_milestone").isNotNull() | F.col("_near") & stamped)
        .withColumn("_msg", F.when(stamped, F.expr(f"regexp_extract(line, {sql_str(LINE_PREFIX)}, 10)"))
                    .otherwise(F.col("line")))
        .withColumn("_pattern", _pattern_case(PATTERNS))
        .withColumn("_unknown", F.when(F.col("_pattern").isNull(), _unknown_form(PATTERNS)))
        .withColumn("_tp_prefix", F.expr(tp_prefix_sql("line")))
    )
    # An unclean start's line is a crash only where its crashed process's last line is known.
    ignored = F.coalesce(F.col("_pattern").isin(*[p.name for p in PATTERNS if p.ignore])
                         | (F.col("_pattern") == UNCLEAN_START) & F.col("_crash_line").isNull(), F.lit(False))
    # An earlier batch's lines only date crashes: their events are that batch's.
    hits = (_with_rolled_log_broker(hits, existing).transform(_with_crash_lines, earlier is not None)
            .where(((F.col("_hit") & (F.col("_pattern").isNotNull() | F.col("_unknown").isNotNull()) & ~ignored)
                    | F.col("_cfg_block").isNotNull()) & ~F.col("_earlier"))
            .drop("_first", "_names_broker", "_start", "_milestone", "_near", "_earlier"))
    event_type = F.expr("CASE _pattern " + " ".join(
        f"WHEN {sql_str(p.name)} THEN {sql_str(p.event_type)}" for p in PATTERNS) + " END")
    broker = F.expr("CASE _pattern " + " ".join(
        f"WHEN {sql_str(p.name)} THEN {column_sql(p, p.broker)}" for p in PATTERNS if p.broker)
        + " ELSE coalesce(_broker_prefix, _file_broker) END")
    payload = [f for f in EVENT_SPARK_SCHEMA.fields if f.name not in _ENVELOPE]
    # A line that reports several partitions becomes one row per partition (`_entry`); any other line stays one.
    entries = F.expr("CASE _pattern " + " ".join(
        f"WHEN {sql_str(p.name)} THEN {column_sql(p, p.entries)}" for p in PATTERNS if p.entries) + " END")
    hits = hits.select("*", F.posexplode_outer(entries).alias("_entry_pos", "_entry"))
    parsed = hits.select(
        "_path", F.struct("_log", "_roll_file").alias("_roll"), "pos",
        F.coalesce("_entry_pos", F.lit(0)).alias("_entry_pos"), "line", "_pattern", "_unknown",
        # A crash happened after its process's last line: 1 ms after (`_after_the_brokers_last_line` may move it).
        F.when(F.col("_pattern") == UNCLEAN_START, _timestamp_ms(options.timezone, "_crash_line") + 1)
        .when(stamped, _timestamp_ms(options.timezone)).alias("ts_ms"),
        F.when(F.col("_pattern") == UNCLEAN_START, _timestamp_ms(options.timezone, "_restart_line"))
        .alias("_restart_ms"),
        event_type.alias("event_type"), broker.cast("int").alias("broker_id"),
        _by_pattern(PATTERNS, "tp", default="_tp_prefix").alias("_tp"),
        _by_pattern(PATTERNS, "topic_id").alias("_topic_id"),
        F.when(F.col("_pattern") == "broker_config", F.col("pos")).otherwise(F.col("_cfg_block")).alias("_cfg_block"),
        F.when(F.col("_cfg_block").isNotNull(), F.expr(f"regexp_extract(line, {sql_str(CONFIG_ENTRY)}, 1)"))
        .alias("_cfg_key"),
        F.when(F.col("_cfg_block").isNotNull(), F.expr(f"regexp_extract(line, {sql_str(CONFIG_ENTRY)}, 2)"))
        .alias("_cfg_value"),
        _by_pattern(PATTERNS, "id_partition").cast("int").alias("_id_partition"),
        _by_pattern(PATTERNS, "previous_leader").cast("int").alias("_previous_leader"),
        F.when(F.col("_msg").contains("with topic id ") | F.col("_msg").contains("with topic ID "),
               F.expr(f"nullif(regexp_extract(_msg, {sql_str(TOPIC_ID)}, 1), '')")).alias("_names_topic_id"),
        *[_by_pattern(PATTERNS, f.name).cast(f.dataType).alias(f.name) for f in payload],
    )
    topic_partition = r"^(.+)-([0-9]+)$"  # Kafka prints a TopicPartition as `orders-3`
    # Independent columns in one `withColumns`: PySpark analyses the whole plan at every call.
    located = parsed.withColumns({
        "partition": F.expr(f"try_cast(nullif(regexp_extract(_tp, {sql_str(topic_partition)}, 2), '') AS INT)"),
        "topic_id": F.coalesce("topic_id", "_names_topic_id"),
    }).withColumn("topic", F.when(F.col("partition").isNotNull(), F.regexp_extract("_tp", topic_partition, 1)))
    located = _across_lines(located, _topic_names(existing)).withColumn("_context", F.lit(False))
    if existing is not None:
        # The run's earlier batches stand in for the lines before these files: an hour's rolled server.log holds ISR
        # changes whose leader epoch and previous ISR were logged in an earlier hour, elections that a line of
        # this hour restates, and the HW line after which another one is a future log's. They only inform, and go.
        informs = (F.col("event_type").isin("leadership_change", "isr_change", "log_load", "hw_change")
                   | _logged_election())
        context = existing.where(informs).select(
            F.lit("").alias("_path"), F.col("event_id").alias("pos"), F.lit(0).alias("_entry_pos"), "ts_ms",
            "event_type", "broker_id", "topic", "partition", "leader_epoch", "partition_epoch", "action", "isr",
            "old_isr", "isr_state", "leader_id", "reason", "topic_id", F.lit(True).alias("_context"))
        located = located.unionByName(context, allowMissingColumns=True)
    located = _after_the_brokers_last_line(located)
    events = _unrepeated_elections(_from_earlier_lines(located)).where(~F.col("_context")).drop("_context")
    return _as_candidates(events, options, existing)


def _milestone() -> Column:
    """Which `PROCESS_MILESTONES` line this is (its literal), or null; each expression runs only on the lines that
    hold its literal."""
    branches = " ".join(f"WHEN contains(line, {sql_str(lit)}) AND line RLIKE {sql_str(regex)} THEN {sql_str(lit)}"
                        for lit, regex in PROCESS_MILESTONES)
    return F.expr(f"CASE {branches} END")


def _with_crash_lines(hits: DataFrame, earlier: bool = False) -> DataFrame:
    """`hits` (with `_start`, `_milestone`, `_stamped` and `_log`) with what dates the crash an unclean start's line
    tells of (`UNCLEAN_START`): `_crash_line`, the last stamped line the crashed process printed; `_restart_line`,
    the first line of the process after it (the one that printed the unclean line, or a start that failed before
    it); and `_roll_file`, the key that orders a log's files (`roll_order`). Windows over each log's lines in order,
    its rolled files one after the other, on the few lines `read_broker_logs` keeps for them, not on every line.

    A process starts at its first line (`PROCESS_FIRST_LINES`: every release that prints the unclean line prints its
    MBean line first; a start whose first line is not read dates no crash). The crashed process is the last one
    before that loaded its logs (printed a `LOAD_MILESTONES` line, or started before the log's first file read
    begins): a start that failed before it loaded them (a missing meta.properties, a KRaft broker that never got its
    metadata) served nothing, and its lines do not date the crash. Its last stamped line is the last before the
    next process's first line, in the same file or, where the log rolled as the broker started again, in the file
    rolled before. No crash where the unclean line is not its process's first (the line of its second log
    directory) or comes after the process started or began to shut down, where the crashed process completed its
    shutdown after it loaded its logs (a directory replaced after a clean stop), or where no line of it is read. The
    log's files are read as one run of lines: a file missing between a process's first line and its unclean line
    (not landed) can date the crash of an earlier process instead. With `earlier` (lines of files an earlier batch
    read, `_earlier`), each such file begins a run of its own: what came before it in the log (a late older file of
    this batch) is cut from it by the lines no batch reads here."""
    hits = hits.withColumn("_roll_file", roll_order("_path"))
    files = Window.partitionBy("_log").orderBy("_roll_file", "_path", "pos")
    if earlier:
        hits = hits.withColumn("_run", F.sum(F.when(F.col("_earlier") & F.col("_first"), 1).otherwise(0)).over(
            files.rowsBetween(Window.unboundedPreceding, 0)))
        files = Window.partitionBy("_log", "_run").orderBy("_roll_file", "_path", "pos")
    before = files.rowsBetween(Window.unboundedPreceding, -1)
    # A line's place in its log: positions restart in each file.
    hits = hits.withColumn("_seq", F.row_number().over(files))
    milestone = F.col("_milestone")
    loading = F.coalesce(milestone.isin(*LOAD_MILESTONES), F.lit(False))
    unclean = F.col("line").contains(UNCLEAN_LITERAL)

    def last_seq(which: Column) -> Column:
        return F.last(F.when(which, F.col("_seq")), ignorenulls=True).over(before)

    hits = hits.withColumns({
        "_alive": F.last(F.when(F.col("_stamped"), F.col("line")), ignorenulls=True).over(before),
        "_last_load": last_seq(loading), "_last_clean": last_seq(F.coalesce(milestone == CLEAN_END, F.lit(False))),
        "_last_life": last_seq(milestone.isNotNull() & ~loading), "_last_unclean": last_seq(unclean),
        "_prev_start": last_seq(F.col("_start")),
    })
    # The first start after the last process that loaded its logs (the log's first start if none read did).
    after_load = F.col("_start") & (F.col("_prev_start").isNull()
                                    | F.coalesce(F.col("_prev_start") < F.col("_last_load"), F.lit(False)))
    clean = F.coalesce(F.col("_last_clean") > F.coalesce(F.col("_last_load"), F.lit(-1)), F.lit(False))
    crashed = F.last(F.when(after_load, F.struct(F.col("_alive").alias("line"), clean.alias("clean"),
                                                 F.col("line").alias("next"))), ignorenulls=True).over(before)
    own_start = (unclean & F.col("_prev_start").isNotNull()
                 & F.coalesce(F.col("_last_life") < F.col("_prev_start"), F.lit(True))
                 & F.coalesce(F.col("_last_unclean") < F.col("_prev_start"), F.lit(True)))
    hits = hits.withColumn("_crashed", F.when(own_start, crashed))
    known = F.col("_crashed").isNotNull() & ~F.coalesce(F.col("_crashed.clean"), F.lit(False))
    return (hits.withColumns({"_crash_line": F.when(known, F.col("_crashed.line")),
                              "_restart_line": F.when(known, F.col("_crashed.next"))})
            .drop("_seq", "_alive", "_last_load", "_last_clean", "_last_life", "_last_unclean", "_prev_start",
                  "_crashed", "_run"))


def _after_the_brokers_last_line(events: DataFrame) -> DataFrame:
    """`events` with each crash read at a restart moved after every event of its broker logged before the next
    process's first line (`_restart_ms`), from any of its files: the crashed process may have printed its last
    state-change or controller line after its last server.log line."""
    crash = F.coalesce(F.col("_pattern") == UNCLEAN_START, F.lit(False))
    when = F.when(crash, F.col("_restart_ms")).otherwise(F.col("ts_ms"))
    # Strictly earlier milliseconds: the next process's own lines of its first millisecond are not the crashed one's.
    earlier = Window.partitionBy("broker_id").orderBy(when).rangeBetween(Window.unboundedPreceding, -1)
    last = F.max(F.when(~crash, F.col("ts_ms"))).over(earlier)
    return events.withColumn("ts_ms", F.when(crash & (last >= F.col("ts_ms")), last + 1).otherwise(F.col("ts_ms")))


def _with_rolled_log_broker(hits: DataFrame, existing: DataFrame | None) -> DataFrame:
    """`hits` whose file names no broker take the broker of the log the file was rolled from (`rolled_log_of`), if
    that log's files, here or in the run's earlier batches in bronze, name exactly one: an hour's `server.log` that
    holds only retention lines is the broker's whose earlier hours name it."""
    hits = hits.withColumn("_log", rolled_log_of("_path"))
    by_log = Window.partitionBy("_log")
    lo, hi = F.min("_file_lo").over(by_log), F.max("_file_hi").over(by_log)
    if existing is not None:
        held = (existing.where(F.col("_source_file").isNotNull() & F.col("broker_id").isNotNull())
                .groupBy(rolled_log_of("_source_file").alias("_log"))
                .agg(F.min("broker_id").alias("_held_lo"), F.max("broker_id").alias("_held_hi")))
        hits = hits.join(F.broadcast(held), "_log", "left")
        lo, hi = F.least(lo, F.col("_held_lo")), F.greatest(hi, F.col("_held_hi"))
    # A file that names several brokers stays without one: its log names several too.
    return hits.withColumn("_file_broker", F.when(F.col("_file_lo").isNull() & (lo == hi), lo)
                           .otherwise(F.col("_file_broker")))


def _config_broker(key: Column, value: Column) -> Column:
    """The broker a `KafkaConfig` setting names, if it is broker.id or node.id (KRaft); broker.id is -1 where
    ZooKeeper assigns it, which names none."""
    return F.when(key.isin(*BROKER_ID_KEYS) & (value != "-1"), value.try_cast("int"))


def _topic_names(existing: DataFrame | None) -> DataFrame | None:
    """The topic ids the run's events in bronze name (one row per id and topic), for the controller lines of a later
    batch that give only the id."""
    if existing is None:
        return None
    return (existing.where(F.col("topic_id").isNotNull() & F.col("topic").isNotNull())
            .select(F.col("topic_id").alias("_names_topic_id"), "topic").distinct())


def _across_lines(located: DataFrame, names: DataFrame | None = None) -> DataFrame:
    """What one line takes from lines elsewhere, in one window over a key (not a join: the files are not read
    again): the topic of a line that gives only its topic id (the KRaft controller's), from the lines that print
    both (`TOPIC_ID`) and from `names` (bronze's, `_topic_names`); the settings of a `KafkaConfig values:` block,
    from its setting lines, which then go. Lines about neither are spread over their own keys (a single null key
    would gather them all in one task)."""
    if names is not None:
        located = located.unionByName(names, allowMissingColumns=True)
    key = F.coalesce("_topic_id", "_names_topic_id",
                     F.when(F.col("_cfg_block").isNotNull(), F.concat(F.lit("cfg:"), F.col("_path"), F.lit(":"),
                                                                        F.col("_cfg_block").cast("string"))),
                     F.concat(F.lit("#"), F.col("_path"), F.lit(":"), F.col("pos").cast("string")))
    # A column, not the expression: each window over an expression is planned with its own alias of it, and so
    # with its own shuffle (three here).
    located = located.withColumn("_across", key)
    w = Window.partitionBy("_across")
    named = F.max(F.when(F.col("_names_topic_id").isNotNull(), F.col("topic"))).over(w)
    # One max per setting rather than a list of all (collect_list is not code-generated, and this window runs
    # over every replication line, most of them alone in their key).
    values = [F.max(F.when(F.col("_cfg_key") == k, F.col("_cfg_value"))).over(w) for k in KAFKA_CONFIG_KEYS]
    pairs = F.map_filter(F.create_map(*[x for k, v in zip(KAFKA_CONFIG_KEYS, values, strict=True)
                                        for x in (F.lit(k), v)]), lambda _k, v: v.isNotNull())
    broker = F.max(_config_broker(F.col("_cfg_key"), F.col("_cfg_value"))).over(w)
    by_id = F.col("_topic_id").isNotNull()
    is_config = F.col("_pattern") == "broker_config"
    return (located
            .withColumns({"topic": F.when(by_id, named).otherwise(F.col("topic")),
                          "_settings": F.when(is_config, pairs),
                          "broker_id": F.when(is_config, F.coalesce(broker, F.col("broker_id")))
                          .otherwise(F.col("broker_id"))})
            .withColumns({"partition": F.when(by_id & F.col("topic").isNotNull(), F.col("_id_partition"))
                          .otherwise(F.col("partition")),
                          "config": F.when(is_config & (F.size("_settings") > 0), F.col("_settings"))
                          .otherwise(F.col("config"))})
            .drop("_settings", "_across")
            # A setting line is no event: its block's header carries it now; nor is a name from bronze.
            .where(F.col("_pattern").isNotNull() | F.col("_unknown").isNotNull()))


_ENVELOPE = frozenset({"schema_version", "source", "run_id", "event_id", "ts_ms", "broker_id", "event_type",
                       "topic", "partition"})
HINT_WINDOW_MS = 1000
"""How far apart two lines of one Kafka call may be stamped and still be read together: a fetcher's truncation line
and the log layer's (which takes its reason), a new leader's RECOVERING line and its become-leader line (whose
epoch the election takes)."""
RECOVERING = "leader_recovering"
"""The pattern of a new leader's KIP-704 line, which stands for the controller's unclean election."""
LEADER_AND_ISR_SKIP = "isr_leader_and_isr"
"""The pattern of a sitting leader's "Skipped the become-leader state change ... with leader epoch E" line."""
REPLAY = "unclean_partition_change"
"""The pattern of a KRaft controller's line as it replays the election's record, which each controller prints."""
ZK_ELECTION = "unclean_election_zk"
"""The pattern of a ZooKeeper controller's (0.8-1.0) unclean election line."""
RESTATE_WINDOW_MS = 60_000
"""How far apart in time two lines of one unclean election may be stamped when one of them gives no epoch: the
controller's and the new leader's (the time the election takes to reach the leader, and the skew between the two
hosts' clocks), or two of the leader's RECOVERING lines."""
INITIAL_HW: tuple[str, ...] = ("initial_hw", "initial_hw_replica")
"""The patterns of the HW a partition starts with in a broker process. Such a line is its replica's after the broker
loaded the partition's log (log_load) or created a new one for it; after it created a future log (an intra-broker
move, which prints the same line under the same prefix), or after another such line with neither in between, it is the
future log's."""
LOG_CREATED = "log_created"
"""The pattern of LogManager's 'Created log for partition' line (no event), `reason` 'future' for a future log."""
UNCLEAN_START = "unclean_shutdown"
"""The pattern of LogManager's line for a log directory without its clean shutdown file: a crash, if dated."""
UNCLEAN_LITERAL = "since no clean shutdown file was found"
START_REACH = 4096
"""How many lines before each process start line come along to date a crash: past a stack trace the previous process
printed last (a StackOverflowError prints 1024 frames), to its last stamped line. A process whose last stamped line
is further back is dated at an earlier line kept for another reason, or not at all."""
TAIL_LINES = 4096
"""How many of each file's last lines come along, for the crash of a process whose log rolled as it started again
(from a file of an earlier batch too: `jobs.crash_context`)."""
_UNKNOWN_ISR = "array(-1)"
"""Stands for "the broker's ISR is not known here" (a follower, or a leader line that does not print it)."""


def _from_earlier_lines(events: DataFrame) -> DataFrame:
    """Fill what a line leaves out from the same broker's earlier lines about the partition (module docstring)."""
    order = ["ts_ms", "_roll", "_path", "pos", "_entry_pos"]
    upto = Window.partitionBy("broker_id", "topic", "partition").orderBy(*order)
    before = upto.rowsBetween(Window.unboundedPreceding, -1)
    isr_after = F.expr(
        "CASE WHEN event_type = 'leadership_change' THEN coalesce(CASE WHEN action = 'become_leader' THEN isr END, "
        f"{_UNKNOWN_ISR}) WHEN isr_state = 'committed' THEN isr WHEN isr_state = 'proposed' THEN old_isr "
        "WHEN isr_state = 'rejected' THEN isr END")
    last_isr = F.last(isr_after, ignorenulls=True).over(before)
    known = F.when(last_isr != F.expr(_UNKNOWN_ISR), last_isr)
    proposed_action = F.last(F.when(F.col("isr_state") == "proposed", F.col("action")), ignorenulls=True).over(before)
    epoch = F.last(F.when(F.col("event_type") == "leadership_change", F.col("leader_epoch")),
                   ignorenulls=True).over(upto.rowsBetween(Window.unboundedPreceding, 0))
    # A RECOVERING line's election is in the epoch of the line makeLeader prints right after it (the next line of
    # the broker about the partition): "Leader t-3 ... starts at leader epoch E", or, when Kafka prints it again
    # for a broker that already leads (until its AlterPartition says RECOVERED), "Skipped the become-leader state
    # change ... already the leader with leader epoch E"; none other is known.
    # The lines of a log being taken (`loading`: its load at the broker's start, its creation, the HW its partition
    # starts with) are skipped: makeLeader prints the creation and the HW of a log it attaches (the partition's first
    # call in this process) between the two. Three leads, not a frame to the partition's end, which Spark recomputes
    # for every row. An earlier batch's (bronze's) role-less HW is an initial-HW line: the only HW change a broker
    # log gives.
    initial_hw = (F.coalesce(F.col("_pattern").isin(*INITIAL_HW), F.lit(False))
                  | F.col("_context") & F.coalesce(F.col("event_type") == "hw_change", F.lit(False)))
    created = F.coalesce(F.col("_pattern") == LOG_CREATED, F.lit(False))
    future = created & F.coalesce(F.col("reason") == "future", F.lit(False))
    loading = initial_hw | created | F.coalesce(F.col("event_type") == "log_load", F.lit(False))
    said = F.struct("ts_ms", "leader_epoch", (
        (F.col("event_type") == "leadership_change") & (F.col("action") == "become_leader")
        | (F.col("_pattern") == LEADER_AND_ISR_SKIP)).alias("says_epoch"), "_previous_leader",
        loading.alias("loading"), future.alias("future"))
    ahead = [F.lead(said, n).over(upto) for n in (1, 2, 3)]
    next_line = (F.when(~F.coalesce(ahead[0].loading, F.lit(False)), ahead[0])
                 .when(~F.coalesce(ahead[1].loading, F.lit(False)), ahead[1]).otherwise(ahead[2]))
    same_call = next_line.says_epoch & (next_line.ts_ms - F.col("ts_ms") <= HINT_WINDOW_MS)
    recovered_epoch = F.when(same_call, next_line.leader_epoch)
    # A leader line that names this broker as the previous leader (3.3+) is a new epoch of a leader that kept
    # leading: its RECOVERING line is Kafka's reprint of a state its AlterPartition had not cleared yet (the
    # controller moved the epoch, e.g. for a reassignment), no election. An elected broker is a new leader: one the
    # controller may elect uncleanly is out of the ISR, so it was not leading in this process.
    reprinted = F.coalesce((F.col("_pattern") == RECOVERING) & same_call
                           & (next_line._previous_leader == F.col("broker_id")), F.lit(False))
    hint = F.col("_pattern").isin(*[p.name for p in PATTERNS if p.hint])
    # A fetcher's line names the reason of the truncation the log layer then prints (same offset, within 1 s).
    reasons = F.col("_pattern").isin(*[p.name for p in PATTERNS if p.hint and p.event_type == "truncation"])
    last_hint = F.last(F.when(reasons, F.struct("ts_ms", "truncate_offset", "reason")), ignorenulls=True).over(before)
    explained = (~hint & (F.col("event_type") == "truncation") & (last_hint.truncate_offset == F.col("truncate_offset"))
                 & (F.col("ts_ms") - last_hint.ts_ms <= HINT_WINDOW_MS))
    follow = F.col("isr_state").isin("committed", "rejected")
    # The partition's replica is created before a future log in the same process (Partition.maybeCreateFutureReplica
    # assumes it), and a broker's start loads the current log (log_load) before any partition takes it.
    previous = F.last(F.when(loading, F.struct(initial_hw.alias("hw"), future.alias("future"))),
                      ignorenulls=True).over(before)
    # 2.4-2.5 print a future log's load under the replica's prefix too, just before its creation line.
    future_load = (F.coalesce(F.col("event_type") == "log_load", F.lit(False)) & F.coalesce(
        ahead[0].future & (ahead[0].ts_ms - F.col("ts_ms") <= HINT_WINDOW_MS), F.lit(False)))
    future_log = initial_hw & F.coalesce(previous.hw | previous.future, F.lit(False)) | future_load
    derived = (events
               .withColumns({"reason": F.when(explained, last_hint.reason).otherwise(F.col("reason")),
                             "_known_isr": F.when(follow, known),
                             "_proposed_action": F.when(F.col("isr_state") == "rejected", proposed_action),
                             "_reprinted": reprinted, "_future_log": future_log}))
    grew = F.expr("size(array_except(isr, _known_isr)) > 0")
    shrank = F.expr("size(array_except(_known_isr, isr)) > 0")
    committed_action = (F.when(F.col("_known_isr").isNull() | F.col("isr").isNull(), F.lit("update"))
                        .when(shrank & ~grew, F.lit("shrink")).when(grew & ~shrank, F.lit("expand"))
                        .otherwise(F.lit("update")))
    return (derived
            # An election is the controller's line: the epoch it opens is its own (or unknown), not one it logged.
            .withColumns({
                "leader_epoch": F.when(F.col("_pattern") == RECOVERING, recovered_epoch)
                .when(F.col("event_type").isin("leadership_change", "leader_election"), F.col("leader_epoch"))
                # A log loaded or a partition created in a new process has no epoch until its leadership line (a
                # new Partition starts below the initial epoch): not the one the previous process had.
                .when(loading, F.lit(None).cast("int"))
                .otherwise(F.coalesce("leader_epoch", epoch)),
                "old_isr": F.when(follow, F.coalesce("old_isr", "_known_isr")).otherwise(F.col("old_isr")),
                "action": F.when(F.col("isr_state") == "committed", F.coalesce("action", committed_action))
                .when(F.col("isr_state") == "rejected", F.coalesce("action", "_proposed_action", F.lit("update")))
                .otherwise(F.col("action"))})
            .where((~hint | F.col("_pattern").isNull()) & ~F.col("_reprinted") & ~F.col("_future_log"))
            .drop("_known_isr", "_proposed_action", "_reprinted", "_future_log"))


def _logged_election() -> Column:
    """An election log lines tell of: an unclean one, one from the eligible leader replicas (only a KRaft
    controller's `REPLAY` line tells of those), or a partition's first leader (its `partition_created` line)."""
    return (F.col("event_type") == "leader_election") & (
        F.col("action").isin("unclean", "elr") | (F.col("reason") == "topic_creation"))


def _unrepeated_elections(events: DataFrame) -> DataFrame:
    """Without the unclean elections that restate one already read, so that an election is one event whichever of
    its lines the logs hold (a row's `_context` marks an event of an earlier batch, in bronze):

    * a new leader's RECOVERING line (`RECOVERING`) restates an earlier RECOVERING line of the same leader with
      the same epoch, or, when either gives no epoch, stamped within `RESTATE_WINDOW_MS` of it (Kafka prints it
      again until the leader's AlterPartition says RECOVERED); else an election a controller's line (one not
      restating another) or an earlier batch's event tells of: the one of the same leader and epoch, or, when
      either gives no epoch, the one time order pairs it with among those of the leader within the window,
      before or after (clocks of two hosts; `_paired_in_time_order`);
    * a controller's line restates an earlier batch's event of the same leader on the same terms (the brokers'
      logs were ingested before the controller's), where one of them gives no epoch only if each is the other's
      nearest match (the controllers' replay lines of one record counting as one line); but a builder's line never
      restates an earlier builder's line (bronze's event told by a controller without the partition epoch), unless
      it is that line landed again (the same stamp): the active controller prints one per election;
    * a controller's replay line (`REPLAY`) restates an earlier one of the same leader and epoch: each controller,
      active or standby, prints one per record; and one stamped more than `RESTATE_WINDOW_MS` after an election of
      a later epoch is a reprint (a restarted controller replays the log since its snapshot);
    * the builder's line of this batch restates the replay line of its election: the same leader and epoch, or,
      the builder's line giving none, the replay line of that leader nearest to it within `RESTATE_WINDOW_MS`, to
      which it is the nearest builder's line of that leader. The replay line is kept: it gives the epochs;
    * a controller's creation line (`partition_created`) restates an earlier one of the partition with the same
      topic id or an earlier batch's creation event: each controller prints one per record; and one stamped more
      than `RESTATE_WINDOW_MS` after a leader line of that topic id in a later epoch is a reprint (a restarted
      controller replaying the records after its snapshot).

    Before that, a controller's line that gives no epoch takes the one its leader's RECOVERING lines of the same
    batch give, if those within `RESTATE_WINDOW_MS` give one epoch, each of them is nearer to this election than
    to any other of the leader's, and no election gives that epoch; otherwise it stays unknown (elections of one
    leader close together, or clocks skewed by half the time between them, leave no line clearly its own). An
    earlier batch's event cannot be rewritten: a RECOVERING line read after its election went in lends it nothing.

    Windows per partition over the elections lines tell of (`_logged_election`), which they list (they are few),
    and one per partition and topic id over its creation lines, which it lists, and the leader lines naming that
    id, of which it keeps the earliest time of a later epoch; every other row is alone in its own key. A row without
    a time or partition (quarantined later) restates nothing and is kept."""
    recovering = F.coalesce(F.col("_pattern") == RECOVERING, F.lit(False))
    replay = F.coalesce(F.col("_pattern") == REPLAY, F.lit(False))
    elected = F.coalesce(_logged_election(), F.lit(False))
    located = F.col("ts_ms").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
    placed = elected & located
    created = placed & F.coalesce(F.col("reason") == "topic_creation", F.lit(False))
    # A leader line of a later epoch that names the topic id (3.3+ brokers print it): a creation line of that
    # incarnation of the partition stamped well after it is a reprint.
    witness = F.coalesce((F.col("event_type") == "leadership_change") & (F.col("leader_epoch") > 0)
                         & F.col("topic_id").isNotNull() & located, F.lit(False))
    partition = F.concat_ws("-", "topic", F.col("partition").cast("string"))
    # A partition's creation lines share no window with its other elections: one per topic id (a topic deleted
    # and created again is a new partition), with the leader lines of that id.
    key = (F.when(created | witness, F.concat(partition, F.lit("#"), F.coalesce("topic_id", F.lit(""))))
           .when(placed, partition)
           .otherwise(F.concat(F.lit("#"), F.col("_path"), F.lit(":"), F.col("pos").cast("string"), F.lit(":"),
                               F.col("_entry_pos").cast("string"))))
    kind = F.when(witness, 3).when(F.col("_context"), 0).when(~recovering, 1).otherwise(2)  # bronze, controller, leader
    order = Window.partitionBy("_key").orderBy("ts_ms", "_kind", "_roll", "_path", "pos", "_entry_pos")
    listed = (events.select("*", key.alias("_key"), kind.alias("_kind"))
              .withColumns({"_ord": F.row_number().over(order),
                            "_first_later": F.min(F.when(F.col("_kind") == 3, F.col("ts_ms")))
                            .over(Window.partitionBy("_key"))}))
    row = F.struct(F.col("_ord").alias("ord"), F.col("ts_ms").alias("ts"), F.col("leader_id").alias("leader"),
                   F.col("leader_epoch").alias("epoch"), F.col("_kind").alias("kind"), replay.alias("replay"),
                   F.col("partition_epoch").alias("pepoch"), F.col("broker_id").alias("broker"),
                   F.col("action").alias("action"), F.col("topic_id").alias("topic_id"))
    listed = listed.withColumn("_elections", F.collect_list(F.when(placed, row)).over(Window.partitionBy("_key")))
    w = RESTATE_WINDOW_MS

    def nearest(among: str, ts: str) -> str:
        """The `ord` of the listed row `y` satisfying `among` nearest in time to `ts` (the earlier on a tie)."""
        return (f"array_min(transform(filter(_elections, y -> {among}), "
                f"y -> struct(abs(y.ts - {ts}) AS d, y.ord AS ord))).ord")
    # A controller's line without the epoch (KRaft before the ELR-era form) takes the one its leader's RECOVERING
    # lines give (the epoch of the become-leader line after each) when that is unambiguous: the leader's RECOVERING
    # lines within the window all give one epoch, each of them is nearer to this election than to any other of the
    # leader's, and no election of the leader gives that epoch. Otherwise none: a leader elected twice within the
    # window, or clocks skewed by more than half the time between two of its elections, must not lend one election
    # the other's epoch.
    undated = placed & ~recovering & ~F.col("_context") & F.col("leader_epoch").isNull()
    lines = f"filter(_elections, x -> x.kind = 2 AND x.leader = leader_id AND abs(x.ts - ts_ms) <= {w})"
    epochs = f"array_distinct(transform({lines}, x -> x.epoch))"
    epoch = f"try_element_at({epochs}, 1)"
    lent = F.when(undated, F.expr(
        f"CASE WHEN size({epochs}) = 1 AND {epoch} IS NOT NULL "
        f"AND forall({lines}, x -> {nearest('y.kind < 2 AND y.leader = leader_id AND y.action = action', 'x.ts')} "
        f"= _ord) "
        f"AND NOT exists(_elections, y -> y.kind < 2 AND y.leader = leader_id AND y.epoch IS NOT NULL "
        f"AND y.epoch = {epoch}) THEN {epoch} END"))
    listed = listed.withColumn("leader_epoch", F.coalesce("leader_epoch", lent))
    # An unclean election's lines (the builder's, RECOVERING) never tell of one from the ELR, and the other way round.
    same = (f"x.leader = leader_id AND x.action = action AND (x.epoch = leader_epoch OR (x.epoch IS NULL OR "
            f"leader_epoch IS NULL) AND abs(x.ts - ts_ms) <= {w})")

    def other_builder(v: str) -> str:
        """Bronze's event `v` is another election told by a controller's line, which this line never restates.

        A builder's line names the topic by id (a RECOVERING line does not) or was printed by a controller that is
        not its leader, and lacks the partition epoch, which a replay line always gives; ZooKeeper's controller
        line (0.8-1.0) comes from an era without RECOVERING lines. The active controller prints one such line per
        election, so another one (with an epoch or without) is another election, unless it is the same line
        landed again (the same stamp)."""
        told = (f"({v}.pepoch IS NULL AND ({v}.topic_id IS NOT NULL OR NOT coalesce({v}.broker = {v}.leader, false)) "
                f"OR _pattern = {sql_str(ZK_ELECTION)})")
        return f"(_pattern <> {sql_str(REPLAY)} AND {told} AND {v}.ts <> ts_ms)"
    # Without an epoch on one side, a controller's line restates bronze's event only if each is the other's nearest
    # match: a second election of the leader within the window is its own (it would otherwise be lost). Bronze's
    # events of other controller lines count as matches here though the line never restates them: one of those
    # nearer than the broker's line it would restate is the election this line follows, or clocks skewed by half
    # the time between the two, where keeping the line (an election too many, without an epoch) loses nothing.
    nearest_line = nearest("y.kind = 1 AND y.leader = x.leader AND y.action = x.action AND (y.epoch IS NULL "
                           "OR x.epoch IS NULL OR y.epoch = x.epoch)", "x.ts")
    nearest_held = nearest("y.kind = 0 AND y.leader = leader_id AND y.action = action AND (y.epoch IS NULL "
                           "OR leader_epoch IS NULL OR y.epoch = leader_epoch)", "ts_ms")
    # The controllers' replay lines of one record are one line here: any of them may be the nearest.
    controller_nearest = (f"({nearest_line} = _ord OR _pattern = {sql_str(REPLAY)} AND exists(_elections, z -> "
                          f"z.replay AND z.leader = leader_id AND z.epoch = leader_epoch AND z.ord = {nearest_line})) "
                          f"AND {nearest_held} = x.ord")
    # A controller's replay line restates an earlier one of the same record (each controller replays the metadata
    # log), and one stamped well after an election of a later epoch is a late reprint (a restarted controller
    # replaying the log since its snapshot, or a standby catching up): its record is old. The builder's line
    # restates the replay line of its election: same epoch, or, its own unknown, each the other's nearest of the
    # leader's within the window.
    replayed = (f"exists(_elections, x -> x.replay AND x.ord < _ord AND x.leader = leader_id "
                f"AND x.epoch = leader_epoch OR x.epoch > leader_epoch AND x.ts + {w} < ts_ms)")
    # Kafka logs the builder's line of an election from the ELR at TRACE only: no replay line of one is restated.
    built = (f"exists(_elections, x -> x.replay AND x.leader = leader_id AND x.action = action AND (x.epoch = "
             f"leader_epoch OR leader_epoch IS NULL AND abs(x.ts - ts_ms) <= {w} "
             f"AND {nearest('y.replay AND y.leader = leader_id AND y.action = action', 'ts_ms')} = x.ord "
             f"AND {nearest('y.kind = 1 AND NOT y.replay AND y.leader = x.leader', 'x.ts')} = _ord))")
    # A creation line restates an earlier one of the partition (each controller replays the record) or bronze's;
    # one stamped well after a leader line of a later epoch is a restarted controller's reprint.
    created_again = (F.expr("exists(_elections, x -> x.kind = 0 OR x.ord < _ord)")
                     | F.coalesce(F.col("_first_later") + w < F.col("ts_ms"), F.lit(False)))
    restated = F.when(created, created_again).when(placed & ~recovering & ~F.col("_context"), F.expr(
        f"exists(_elections, x -> x.kind = 0 AND {same} AND (x.epoch = leader_epoch OR {controller_nearest}) "
        f"AND NOT {other_builder('x')}) "
        f"OR CASE WHEN _pattern = {sql_str(REPLAY)} THEN {replayed} ELSE {built} END"))
    # A RECOVERING line printed again (Kafka reprints it until the leader's AlterPartition says RECOVERED).
    reprinted = placed & recovering & F.expr(f"exists(_elections, x -> x.kind = 2 AND x.ord < _ord AND {same})")
    listed = (listed.withColumn("_restated", F.coalesce(restated, F.lit(False)) | F.coalesce(reprinted, F.lit(False)))
              .withColumn("_standing", F.collect_list(F.when(placed & ~F.col("_restated"), row))
                          .over(Window.partitionBy("_key"))))
    # The other RECOVERING lines restate an election a controller's line or bronze tells of: the one of the same
    # epoch, or else the one time order pairs them with (`_paired_in_time_order`).
    def unmatched(kind: str, other: str) -> str:
        """This leader's standing lines of `kind` that no standing line of `other` kind tells with the same epoch,
        in time order."""
        return (f"array_sort(filter(_standing, x -> x.kind {kind} AND x.leader = leader_id AND x.action = action "
                f"AND NOT exists(_standing, y -> y.kind {other} AND y.leader = x.leader AND y.action = x.action "
                "AND coalesce(y.epoch = x.epoch, false))))")
    pending = placed & recovering & ~F.col("_restated")
    listed = listed.withColumns({"_heads": F.when(pending, F.expr(unmatched("= 2", "< 2"))),
                                 "_told": F.when(pending, F.expr(unmatched("< 2", "= 2")))})
    # A pending line missing from `_heads` has an election of its epoch told.
    paired = F.expr("NOT exists(_heads, x -> x.ord = _ord) "
                    f"OR size(_told) > 0 AND array_contains({_paired_in_time_order('_heads', '_told', w)}, _ord)")
    restates = F.col("_restated") | F.coalesce(pending & paired, F.lit(False))
    return (listed.where(~restates)
            .drop("_key", "_kind", "_ord", "_elections", "_first_later", "_restated", "_standing", "_heads", "_told"))


_PAIR_SCORE = 1_000_000_000
"""What one more pair is worth in `_paired_in_time_order`, above any sum of the pairs' distances in ms."""


def _paired_in_time_order(heads: str, told: str, window_ms: int) -> str:
    """SQL: the `ord`s of the RECOVERING lines in array `heads` that pair with an election in array `told` (both in
    time order; a pair is within `window_ms`, and one of the two gives no epoch), pairing in time order as many as
    can be, and of those pairings the one of the least total distance.

    Time order keeps two elections of one leader apart when a controller's clock is off by more than half the time
    between them (nearest pairing would give the same line twice), and a leader's second election whose controller
    line did not land stays an election (any pairing within the window would drop it). The pairing is a dynamic
    programme over the two short lists: `prev[j]` is the best pairing of the heads so far with the first `j`
    elections told, as (score, the heads it pairs)."""
    c = f"{told}[j - 1]"
    pair = (f"CASE WHEN abs(r.ts - {c}.ts) <= {window_ms} AND (r.epoch IS NULL OR {c}.epoch IS NULL) "
            f"THEN named_struct('score', prev[j - 1].score + {_PAIR_SCORE} - abs(r.ts - {c}.ts), "
            f"'matched', concat(prev[j - 1].matched, array(r.ord))) END")
    step = (f"aggregate(sequence(1, size({told})), slice(prev, 1, 1), (acc, j) -> "
            f"concat(acc, array(array_max(array(prev[j], acc[j - 1], {pair})))))")
    none = (f"array_repeat(named_struct('score', CAST(0 AS BIGINT), 'matched', CAST(array() AS ARRAY<INT>)), "
            f"size({told}) + 1)")
    return f"element_at(aggregate({heads}, {none}, (prev, r) -> {step}), -1).matched"


def _as_candidates(events: DataFrame, options: BrokerLogOptions, existing: DataFrame | None) -> DataFrame:
    """`events` in the candidate shape of `jobs.landing`, with ids, envelope and the reason a line is unusable."""
    scoped = [name for name, et in EVENT_TYPES.items() if et.partition_scoped]
    malformed = (
        F.when(F.col("_pattern").isNull(), F.concat(
            F.lit("a Kafka log line holding '"), F.col("_unknown"),
            F.lit("' in a form replog does not read (jobs/broker_log_patterns.py lists the forms it reads)")))
        .when(F.col("ts_ms").isNull(), F.lit(
            "no log4j timestamp and level at the start of the line, or an impossible date (expected e.g. "
            "'[2024-05-14 12:51:42,342] INFO ...')"))
        .when((F.col("_pattern") == "broker_config") & F.col("config").isNull(), F.lit(
            "a 'KafkaConfig values:' block without a replication setting line after it (expected e.g. "
            "'\treplica.lag.time.max.ms = 30000'): was the file cut inside the block?"))
        .when(F.col("_topic_id").isNotNull() & F.col("topic").isNull(), F.concat(
            F.lit("topic id "), F.col("_topic_id"), F.lit(
                " is named by no line of these files nor by the run's events in bronze (expected a state-change "
                "line such as 'Leader orders-3 with topic id Some(<id>) starts at leader epoch ...': ingest the "
                "brokers' logs of Kafka 3.3+ with or before the controller's)")))
        .when(F.col("event_type").isin(*scoped) & F.col("partition").isNull(), F.lit(
            "the line names no topic-partition (expected e.g. '[Partition orders-3 broker=2]' or "
            "'[Log partition=orders-3, dir=...]')"))
        # An election names its leader; which controller logged it no check needs (a rolled controller.log may
        # hold no line that names it).
        .when(F.col("broker_id").isNull() & (F.col("event_type") != "leader_election"), F.lit(
            "the line does not name its broker (e.g. '[Partition orders-3 broker=2]') and the other lines of its "
            "file, and of the files rolled from its log, name none or several"))
    )
    per_ms = Window.partitionBy("ts_ms").orderBy("_roll", "_path", "pos", "_entry_pos")
    seq = F.row_number().over(per_ms) - 1
    numbered = events.withColumn("_malformed", malformed)
    if existing is not None:
        mask = (1 << ID_SEQUENCE_BITS) - 1
        held = (existing.select(F.shiftright("event_id", ID_SEQUENCE_BITS).alias("ts_ms"),
                                F.col("event_id").bitwiseAND(F.lit(mask)).alias("_n"))
                .groupBy("ts_ms").agg((F.max("_n") + 1).alias("_base")))
        numbered = numbered.join(held, "ts_ms", "left")
        seq = seq + F.coalesce("_base", F.lit(0))
    numbered = numbered.withColumn("_seq", F.when(F.col("ts_ms").isNotNull(), seq))
    too_many = F.col("_seq") >= (1 << ID_SEQUENCE_BITS)
    event_id = F.when(~too_many, F.shiftleft(F.col("ts_ms"), ID_SEQUENCE_BITS) + F.col("_seq"))
    values = {
        "schema_version": F.lit(SCHEMA_VERSION), "source": F.lit(KAFKA_LOG_SOURCE), "run_id": F.lit(options.run_id),
        "event_id": event_id,
    }
    return numbered.select(
        *[(values.get(f.name, F.col(f.name))).cast(f.dataType).alias(f.name) for f in EVENT_SPARK_SCHEMA.fields],
        F.col("_path").alias("_source_file"),
        (F.col("pos") + 1).cast("long").alias("_source_line"),
        F.col("line").alias("raw"),
        F.coalesce("_malformed", F.when(too_many, F.lit(
            f"more than {1 << ID_SEQUENCE_BITS} events of the run in one millisecond: no event id left"))
        ).alias("_malformed"),
        F.array().cast("array<string>").alias("_type_errors"),
        F.array().cast("array<string>").alias("_wrong_type_fields"),
        F.array().cast("array<string>").alias("_unknown_fields"),
    )
