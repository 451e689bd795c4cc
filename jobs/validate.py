"""Record validation: every rule of `schemas.events` as one Spark SQL projection.

`classify(candidates)` adds `_reason` (every problem found, '; '-separated, naming the offending
value and what was expected), `_reason_code` (the first problem's class, null when the record is
good) and `_newer_major` (true when the record needs a newer replog: a job failure, not a bad
record). No Python UDF. The rules are generated from the schema catalogue as SQL text, so the
whole rule set reaches the JVM as one expression (one parse, not thousands of py4j calls) and
every rule is evaluated once per record, into the `_problems` array.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from pyspark.sql import DataFrame

from schemas.events import (
    ACKS_ALLOWED,
    COLUMNS,
    ENVELOPE_REQUIRED,
    EVENT_TYPES,
    SCHEMA_MAJOR,
    SCHEMA_MINOR,
)

# Precedence of reason codes: the first rule broken names the record's class.
MALFORMED = "malformed_json"
WRONG_TYPE = "wrong_type"
UNKNOWN_FIELD = "unknown_field"
BAD_VERSION = "bad_schema_version"
MISSING = "missing_field"
INVALID = "invalid_value"
DUPLICATE = "duplicate"

_VERSION_RE = "^([0-9]+)[.]([0-9]+)$"


def sql_str(text: str) -> str:
    """`text` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _c(name: str) -> str:
    return f"`{name}`"


def _shown(expr: str) -> str:
    return f"coalesce(cast({expr} AS STRING), 'null')"


def _in(values: tuple[object, ...]) -> str:
    return ", ".join(sql_str(v) if isinstance(v, str) else str(v) for v in values)


def _rules() -> Iterator[tuple[str, str, str]]:
    """(reason code, SQL condition true when the rule is broken, SQL message) for every rule."""
    wrong_type = "coalesce(_wrong_type_fields, array())"

    def absent(name: str) -> str:
        # A field of the wrong type is reported as such, not also as missing.
        return f"({_c(name)} IS NULL AND NOT array_contains({wrong_type}, {sql_str(name)}))"

    yield WRONG_TYPE, f"size({wrong_type}) > 0", "array_join(_type_errors, '; ')"

    major = f"try_cast(regexp_extract(schema_version, {sql_str(_VERSION_RE)}, 1) AS INT)"
    minor = f"try_cast(regexp_extract(schema_version, {sql_str(_VERSION_RE)}, 2) AS INT)"
    # Fields added by a newer minor version are expected: minor versions only add columns.
    newer_minor = f"coalesce({major} = {SCHEMA_MAJOR} AND {minor} > {SCHEMA_MINOR}, false)"
    unknown = "coalesce(_unknown_fields, array())"
    yield (
        UNKNOWN_FIELD,
        f"size({unknown}) > 0 AND NOT {newer_minor}",
        f"concat('unknown field(s) ', array_join({unknown}, ', '), "
        f"{sql_str(f': schema {SCHEMA_MAJOR}.{SCHEMA_MINOR} has no such column')})",
    )
    yield (
        BAD_VERSION,
        f"schema_version IS NOT NULL AND ({major} IS NULL OR {minor} IS NULL)",
        f"concat('schema_version must look like \\'MAJOR.MINOR\\', got ', {_shown('schema_version')})",
    )
    yield (
        BAD_VERSION,
        f"{major} < {SCHEMA_MAJOR}",
        f"concat({sql_str(f'schema_version major is older than {SCHEMA_MAJOR}, which replog no longer reads: ')}, "
        f"{_shown('schema_version')})",
    )

    for name in ENVELOPE_REQUIRED:
        yield MISSING, absent(name), sql_str(f"missing required field '{name}'")
    yield (
        MISSING,
        f"source = 'engine' AND {absent('broker_id')}",
        sql_str("missing field 'broker_id' (required when source is 'engine')"),
    )

    for c in COLUMNS:
        col = _c(c.name)
        if c.allowed:
            yield (
                INVALID,
                f"{col} IS NOT NULL AND {col} NOT IN ({_in(c.allowed)})",
                f"concat({sql_str(f'{c.name} must be one of {list(c.allowed)}, got ')}, {_shown(col)})",
            )
        for et, values in c.allowed_by_type.items():
            yield (
                INVALID,
                f"event_type = {sql_str(et)} AND {col} IS NOT NULL AND {col} NOT IN ({_in(values)})",
                f"concat({sql_str(f'{c.name} of a {et} event must be one of {list(values)}, got ')}, {_shown(col)})",
            )
        if c.non_negative:
            yield INVALID, f"{col} < 0", f"concat({sql_str(f'{c.name} must be >= 0, got ')}, {_shown(col)})"
    yield (
        INVALID,
        f"acks IS NOT NULL AND acks NOT IN ({_in(ACKS_ALLOWED)})",
        f"concat({sql_str(f'acks must be one of {list(ACKS_ALLOWED)}, got ')}, {_shown('acks')})",
    )

    for et in EVENT_TYPES.values():
        needed = list(et.requires) + (["topic", "partition"] if et.partition_scoped else [])
        for name in needed:
            yield MISSING, f"event_type = {sql_str(et.name)} AND {absent(name)}", sql_str(
                f"a {et.name} event needs field '{name}'"
            )

    yield (
        INVALID,
        "last_offset < base_offset",
        f"concat('last_offset must be >= base_offset, got last_offset ', {_shown('last_offset')}, "
        f"' < base_offset ', {_shown('base_offset')})",
    )
    yield (
        INVALID,
        "event_type = 'leadership_change' AND hw > leo",
        f"concat('hw must be <= leo, got hw ', {_shown('hw')}, ' > leo ', {_shown('leo')})",
    )
    yield (
        INVALID,
        "event_type = 'truncation' AND truncate_offset > old_leo",
        f"concat('truncate_offset must be <= old_leo, got ', {_shown('truncate_offset')}, ' > ', {_shown('old_leo')})",
    )


@cache
def problems_sql() -> str:
    """The SQL expression of the `_problems` array: one (code, message) struct per broken rule."""
    cases = ",\n".join(
        f"CASE WHEN coalesce({cond}, false) THEN named_struct('code', {sql_str(code)}, 'message', {msg}) END"
        for code, cond, msg in _rules()
    )
    return f"filter(array({cases}), p -> p IS NOT NULL)"


def classify(candidates: DataFrame) -> DataFrame:
    """Add `_reason`, `_reason_code` and `_newer_major` to candidate records (see module doc)."""
    major = f"try_cast(regexp_extract(schema_version, {sql_str(_VERSION_RE)}, 1) AS INT)"
    staged = candidates.selectExpr("*", f"{problems_sql()} AS _problems")
    return staged.selectExpr(
        *[_c(c) for c in candidates.columns],
        "CASE WHEN _malformed IS NOT NULL THEN _malformed "
        "WHEN size(_problems) > 0 THEN array_join(_problems.message, '; ') END AS _reason",
        f"CASE WHEN _malformed IS NOT NULL THEN {sql_str(MALFORMED)} "
        "WHEN size(_problems) > 0 THEN _problems[0].code END AS _reason_code",
        f"(_malformed IS NULL AND coalesce({major} > {SCHEMA_MAJOR}, false)) AS _newer_major",
    )
