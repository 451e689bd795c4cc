"""Record validation: every rule of `schemas.events` as Spark SQL, with a cheap screen in front.

`classify(candidates)` adds `_reason` (every problem found, '; '-separated, naming the offending
value and what was expected), `_reason_code` (the first problem's class, null when the record is
good) and `_newer_major` (true when the record needs a newer replog: a job failure, not a bad
record). No Python UDF. The rules are generated from the schema catalogue as SQL text, so the
whole rule set reaches the JVM as one expression (one parse, not thousands of py4j calls).

Almost every record is good, so the exact rules (which build messages, look fields up in the
wrong-type list and parse the version with a regex) run only behind a *screen*: one boolean per
record, true whenever any rule may be broken. Each rule carries its own screen term, implied by
its condition by construction (a field "absent" is screened as merely null, a version as "not the
current one"), and the per-event-type rules are grouped under one `CASE event_type`, so a good
record costs a few comparisons per field instead of ~130 rule evaluations.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from pyspark.sql import DataFrame

from replication_core.config import LONG_MAX
from schemas.events import (
    ACKS_ALLOWED,
    COLUMNS,
    ENVELOPE_REQUIRED,
    EVENT_TYPES,
    KAFKA_LOG_SOURCE,
    SCHEMA_MAJOR,
    SCHEMA_MINOR,
)

# Precedence of reason codes: the first rule broken names the record's class.
MALFORMED = "malformed_json"
UNREADABLE = "unreadable_file"  # a landing file that cannot be read at all: one record for the whole file
UNREAD_LOG_LINE = "unread_log_line"  # a broker log line about replication that jobs.broker_logs cannot use
WRONG_TYPE = "wrong_type"
UNKNOWN_FIELD = "unknown_field"
BAD_VERSION = "bad_schema_version"
MISSING = "missing_field"
INVALID = "invalid_value"
DUPLICATE = "duplicate"

_VERSION_RE = "^([0-9]+)[.]([0-9]+)$"
# Every minor of the current major up to this one: files written before a minor bump are not suspects.
READABLE_VERSIONS = tuple(f"{SCHEMA_MAJOR}.{m}" for m in range(SCHEMA_MINOR + 1))
INT32_MAX = 2**31 - 1
UNUSABLE_RUN_IDS = ("", "__HIVE_DEFAULT_PARTITION__")
"""run_ids that cannot name a partition folder: Spark and delta-rs read both back as null."""
_WRONG_TYPE_FIELDS = "coalesce(_wrong_type_fields, array())"


def sql_str(text: str) -> str:
    """`text` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _c(name: str) -> str:
    return f"`{name}`"


def _shown(expr: str) -> str:
    return f"coalesce(cast({expr} AS STRING), 'null')"


def _in(values: tuple[object, ...]) -> str:
    return ", ".join(sql_str(v) if isinstance(v, str) else str(v) for v in values)


def _absent(name: str) -> str:
    # A field of the wrong type is reported as such, not also as missing.
    return f"({_c(name)} IS NULL AND NOT array_contains({_WRONG_TYPE_FIELDS}, {sql_str(name)}))"


def _null(name: str) -> str:
    # The screen of `_absent`: implied by it, and without the list look-up.
    return f"{_c(name)} IS NULL"


@dataclass(frozen=True)
class Rule:
    """One validation rule: broken where `condition` holds (for `event_type`'s events only, if set).

    `screen` is a cheaper condition that `condition` implies (default: the condition itself); a
    record none of whose screens hold breaks no rule. The rules "column >= 0" name their column in
    `non_negative` instead: the screen checks them all at once (`least` of the columns).
    """

    code: str
    condition: str
    message: str
    event_type: str | None = None
    screen: str | None = None
    non_negative: str | None = None

    @property
    def broken(self) -> str:
        """SQL true exactly where the rule is broken."""
        cond = f"({self.condition})"
        return f"event_type = {sql_str(self.event_type)} AND {cond}" if self.event_type else cond

    @property
    def screened(self) -> str:
        """SQL of the screen term, without the event-type guard."""
        return f"({self.screen if self.screen is not None else self.condition})"


def rules() -> Iterator[Rule]:
    """Every rule, in precedence order (the first broken one names the record's reason code)."""
    yield Rule(WRONG_TYPE, f"size({_WRONG_TYPE_FIELDS}) > 0", "array_join(_type_errors, '; ')",
               screen="NOT (size(_wrong_type_fields) <=> 0)")

    major = f"try_cast(regexp_extract(schema_version, {sql_str(_VERSION_RE)}, 1) AS INT)"
    minor = f"try_cast(regexp_extract(schema_version, {sql_str(_VERSION_RE)}, 2) AS INT)"
    # Any version other than the current major's known ones (null included) is screened; the regex runs only then.
    other_version = f"NOT coalesce(schema_version IN ({_in(READABLE_VERSIONS)}), false)"
    # Fields added by a newer minor version are expected: minor versions only add columns.
    newer_minor = f"coalesce({major} = {SCHEMA_MAJOR} AND {minor} > {SCHEMA_MINOR}, false)"
    unknown = "coalesce(_unknown_fields, array())"
    yield Rule(
        UNKNOWN_FIELD,
        f"size({unknown}) > 0 AND NOT {newer_minor}",
        f"concat('unknown field(s) ', array_join({unknown}, ', '), "
        f"{sql_str(f': schema {SCHEMA_MAJOR}.{SCHEMA_MINOR} has no such column')})",
        screen="NOT (size(_unknown_fields) <=> 0)",
    )
    yield Rule(
        BAD_VERSION,
        f"schema_version IS NOT NULL AND ({major} IS NULL OR {minor} IS NULL)",
        f"concat('schema_version must look like \\'MAJOR.MINOR\\', got ', {_shown('schema_version')})",
        screen=other_version,
    )
    yield Rule(
        BAD_VERSION,
        f"{major} < {SCHEMA_MAJOR}",
        f"concat({sql_str(f'schema_version major is older than {SCHEMA_MAJOR}, which replog no longer reads: ')}, "
        f"{_shown('schema_version')})",
        screen=other_version,
    )

    for name in ENVELOPE_REQUIRED:
        yield Rule(MISSING, _absent(name), sql_str(f"missing required field '{name}'"), screen=_null(name))
    yield Rule(
        MISSING,
        f"source = 'engine' AND {_absent('broker_id')}",
        sql_str("missing field 'broker_id' (required when source is 'engine')"),
        screen=f"source = 'engine' AND {_null('broker_id')}",
    )

    for c in COLUMNS:
        col = _c(c.name)
        if c.allowed:
            yield Rule(
                INVALID,
                f"{col} IS NOT NULL AND {col} NOT IN ({_in(c.allowed)})",
                f"concat({sql_str(f'{c.name} must be one of {list(c.allowed)}, got ')}, {_shown(col)})",
            )
        for et, values in c.allowed_by_type.items():
            yield Rule(
                INVALID,
                f"{col} IS NOT NULL AND {col} NOT IN ({_in(values)})",
                f"concat({sql_str(f'{c.name} of a {et} event must be one of {list(values)}, got ')}, {_shown(col)})",
                event_type=et,
            )
        if c.non_negative:
            yield Rule(INVALID, f"{col} < 0", f"concat({sql_str(f'{c.name} must be >= 0, got ')}, {_shown(col)})",
                       non_negative=c.name)
        if c.minimum is not None:
            yield Rule(INVALID, f"{col} < {c.minimum}",
                       f"concat({sql_str(f'{c.name} must be >= {c.minimum}, got ')}, {_shown(col)})")
    # run_id names bronze's partition folder: an empty one is written as Hive's null folder, which reads back as
    # a null in a non-null column and leaves the table unreadable to delta-rs.
    yield Rule(
        INVALID,
        f"run_id IN ({_in(UNUSABLE_RUN_IDS)})",
        f"concat('run_id must name a run (it names the partition folder), got ', {sql_str(chr(39))}, run_id, "
        f"{sql_str(chr(39))})",
    )
    yield Rule(
        INVALID,
        f"acks IS NOT NULL AND acks NOT IN ({_in(ACKS_ALLOWED)})",
        f"concat({sql_str(f'acks must be one of {list(ACKS_ALLOWED)}, got ')}, {_shown('acks')})",
    )

    for et in EVENT_TYPES.values():
        needed = list(et.requires) + (["topic", "partition"] if et.partition_scoped else [])
        from_logs = set(et.required_for(KAFKA_LOG_SOURCE)) | {"topic", "partition"}
        for name in needed:
            if name in from_logs:
                yield Rule(MISSING, _absent(name), sql_str(f"a {et.name} event needs field '{name}'"),
                           event_type=et.name, screen=_null(name))
            else:
                # Kafka's own log lines do not carry it (schemas.events.EventType.log_requires).
                yield Rule(MISSING, f"NOT (source <=> {sql_str(KAFKA_LOG_SOURCE)}) AND {_absent(name)}",
                           sql_str(f"a {et.name} event needs field '{name}'"), event_type=et.name,
                           screen=_null(name))

    yield Rule(
        INVALID,
        "last_offset < base_offset",
        f"concat('last_offset must be >= base_offset, got last_offset ', {_shown('last_offset')}, "
        f"' < base_offset ', {_shown('base_offset')})",
    )
    # Kafka's record batch stores its last offset as base offset + lastOffsetDelta, an int32; and a log end
    # offset of last + 1 must exist. Beyond either, the record is not a batch (and the audit could not
    # replay its offsets).
    yield Rule(
        INVALID,
        f"try_subtract(last_offset, base_offset) > {INT32_MAX}",
        f"concat('a batch spans at most {INT32_MAX + 1} offsets (lastOffsetDelta is an int32), got base_offset ', "
        f"{_shown('base_offset')}, ' to last_offset ', {_shown('last_offset')})",
    )
    yield Rule(
        INVALID,
        f"last_offset >= {LONG_MAX}",
        f"concat('last_offset must be < {LONG_MAX} (the next offset must exist), got ', {_shown('last_offset')})",
    )
    yield Rule(
        INVALID,
        "hw > leo",
        f"concat('hw must be <= leo, got hw ', {_shown('hw')}, ' > leo ', {_shown('leo')})",
        event_type="leadership_change",
    )
    # A `full` truncation is `truncateFullyAndStartAt(offset)`: the log restarts at `offset`, which may lie
    # past its old end (a new or lagging follower starting at the leader's log start offset).
    yield Rule(
        INVALID,
        "truncate_offset > old_leo and (reason is null or reason != 'full')",
        f"concat('truncate_offset must be <= old_leo unless the truncation is full, got ', "
        f"{_shown('truncate_offset')}, ' > ', {_shown('old_leo')})",
        event_type="truncation",
    )
    # The partitions of a fetch response are processed when it arrives or later (after a ListOffsets).
    yield Rule(
        INVALID,
        "response_received_ms > ts_ms",
        f"concat('response_received_ms must be <= ts_ms (a response is processed once it has arrived), got ', "
        f"{_shown('response_received_ms')}, ' > ', {_shown('ts_ms')})",
        event_type="fetch_response",
    )


@cache
def screen_sql() -> str:
    """SQL true for every record that may break a rule (false positives only cost the exact check)."""
    all_rules = list(rules())
    general = [r.screened for r in all_rules if r.event_type is None and r.non_negative is None]
    non_negative = [_c(r.non_negative) for r in all_rules if r.non_negative is not None]
    if non_negative:
        # One comparison instead of one per column: least() skips nulls.
        general.append(f"coalesce(least({', '.join(non_negative)}) < 0, false)")
    by_type: dict[str, list[str]] = {}
    for r in all_rules:
        if r.event_type is not None:
            by_type.setdefault(r.event_type, []).append(r.screened)
    branches = " ".join(
        f"WHEN {sql_str(et)} THEN {' OR '.join(f'coalesce({t}, false)' for t in ts)}" for et, ts in by_type.items()
    )
    terms = ["_malformed IS NOT NULL", *general, f"CASE event_type {branches} ELSE false END"]
    # A null term would make the whole disjunction null for good records (e.g. `last_offset <
    # base_offset` on a fetch): each term counts only when true, as each rule does.
    return " OR ".join(f"coalesce({t}, false)" for t in terms)


@cache
def problems_sql() -> str:
    """The SQL expression of the `_problems` array: one (code, message) struct per broken rule."""
    cases = ",\n".join(
        f"CASE WHEN coalesce({r.broken}, false) "
        f"THEN named_struct('code', {sql_str(r.code)}, 'message', {r.message}) END"
        for r in rules()
    )
    # `filter` with a lambda is not code-generated, so this projection is evaluated outside Spark's
    # whole-stage code: tried with array_except instead (generated, one stage from scan to write),
    # the ingest got slower (1 M Parquet events, warm, alternating: ~14 -> ~17 CPU s), presumably as
    # the one huge generated method with ~130 rules inlined is compiled worse by the JIT.
    return f"filter(array({cases}), p -> p IS NOT NULL)"


def reason_codes() -> tuple[str, ...]:
    """Every `_reason_code` a record can get, in precedence order (duplicates are found last)."""
    return (MALFORMED, UNREADABLE, UNREAD_LOG_LINE, *dict.fromkeys(r.code for r in rules()), DUPLICATE)


def classify(candidates: DataFrame) -> DataFrame:
    """Add `_reason`, `_reason_code` and `_newer_major` to candidate records (see module doc)."""
    major = f"try_cast(regexp_extract(schema_version, {sql_str(_VERSION_RE)}, 1) AS INT)"
    screened = candidates.selectExpr("*", f"{screen_sql()} AS _suspect")
    # The exact rules only where the screen fires: everywhere else no rule is broken.
    staged = screened.selectExpr("*", f"CASE WHEN _suspect THEN {problems_sql()} END AS _problems")
    return staged.selectExpr(
        *[_c(c) for c in candidates.columns],
        "CASE WHEN _malformed IS NOT NULL THEN _malformed "
        "WHEN size(_problems) > 0 THEN array_join(_problems.message, '; ') END AS _reason",
        # A file's record (no line) is the whole file unreadable; a line's, that line not JSON.
        f"CASE WHEN _malformed IS NOT NULL AND _source_line IS NULL THEN {sql_str(UNREADABLE)} "
        f"WHEN _malformed IS NOT NULL AND source <=> {sql_str(KAFKA_LOG_SOURCE)} THEN {sql_str(UNREAD_LOG_LINE)} "
        f"WHEN _malformed IS NOT NULL THEN {sql_str(MALFORMED)} "
        # get(), not [0]: a filter on the code can be rewritten to evaluate this branch for good records too,
        # and ANSI mode fails an out-of-bounds [0] where get() gives null.
        "WHEN size(_problems) > 0 THEN get(_problems, 0).code END AS _reason_code",
        f"(_suspect AND _malformed IS NULL AND coalesce({major} > {SCHEMA_MAJOR}, false)) AS _newer_major",
    )
