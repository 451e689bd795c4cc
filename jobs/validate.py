"""Record validation as Column expressions: every rule of `schemas.events` in one projection.

`classify(candidates)` adds `_reason` (every problem found, '; '-separated, naming the offending
value and what was expected), `_reason_code` (the first problem's class, null when the record is
good) and `_newer_major` (true when the record needs a newer replog: a job failure, not a bad
record). No Python UDF: the checks are built once, from the schema catalogue, as Spark columns.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from schemas.events import (
    ACKS_ALLOWED,
    COLUMNS,
    ENVELOPE_REQUIRED,
    EVENT_TYPES,
    SCHEMA_MAJOR,
    SCHEMA_MINOR,
)

# Precedence of reason codes: the first that applies names the record's class.
MALFORMED = "malformed_json"
WRONG_TYPE = "wrong_type"
UNKNOWN_FIELD = "unknown_field"
BAD_VERSION = "bad_schema_version"
MISSING = "missing_field"
INVALID = "invalid_value"
DUPLICATE = "duplicate"

_VERSION_RE = r"^([0-9]+)\.([0-9]+)$"


def _msg(text: str, value: Column | None = None) -> Column:
    return F.lit(text) if value is None else F.concat(F.lit(text), F.coalesce(value.cast("string"), F.lit("null")))


def _rules() -> Iterator[tuple[str, Column, Column]]:
    """(reason code, condition that is true when the rule is broken, message) for every rule."""
    wrong_type = F.coalesce(F.col("_wrong_type_fields"), F.array().cast("array<string>"))

    def absent(name: str) -> Column:
        # A field of the wrong type is reported as such, not also as missing.
        return F.col(name).isNull() & ~F.array_contains(wrong_type, name)

    yield WRONG_TYPE, F.size(wrong_type) > 0, F.array_join(F.col("_type_errors"), "; ")

    version = F.col("schema_version")
    major = F.regexp_extract(version, _VERSION_RE, 1).try_cast("int")
    minor = F.regexp_extract(version, _VERSION_RE, 2).try_cast("int")
    newer_minor = (major == SCHEMA_MAJOR) & (minor > SCHEMA_MINOR)
    unknown = F.coalesce(F.col("_unknown_fields"), F.array().cast("array<string>"))
    # Fields added by a newer minor version are expected: minor versions only add columns.
    yield (
        UNKNOWN_FIELD,
        (F.size(unknown) > 0) & ~F.coalesce(newer_minor, F.lit(False)),
        F.concat(F.lit("unknown field(s) "), F.array_join(unknown, ", "),
                 F.lit(f": schema {SCHEMA_MAJOR}.{SCHEMA_MINOR} has no such column")),
    )
    yield (
        BAD_VERSION,
        version.isNotNull() & (major.isNull() | minor.isNull()),
        _msg("schema_version must look like 'MAJOR.MINOR', got ", version),
    )
    yield (
        BAD_VERSION,
        major < SCHEMA_MAJOR,
        _msg(f"schema_version major is older than {SCHEMA_MAJOR}, which replog no longer reads: ", version),
    )

    for name in ENVELOPE_REQUIRED:
        yield MISSING, absent(name), F.lit(f"missing required field '{name}'")
    yield (
        MISSING,
        (F.col("source") == "engine") & absent("broker_id"),
        F.lit("missing field 'broker_id' (required when source is 'engine')"),
    )

    event_type = F.col("event_type")
    for c in COLUMNS:
        if c.allowed:
            yield (
                INVALID,
                F.col(c.name).isNotNull() & ~F.col(c.name).isin(*c.allowed),
                _msg(f"{c.name} must be one of {list(c.allowed)}, got ", F.col(c.name)),
            )
        for et, values in c.allowed_by_type.items():
            yield (
                INVALID,
                (event_type == et) & F.col(c.name).isNotNull() & ~F.col(c.name).isin(*values),
                _msg(f"{c.name} of a {et} event must be one of {list(values)}, got ", F.col(c.name)),
            )
        if c.non_negative:
            yield INVALID, F.col(c.name) < 0, _msg(f"{c.name} must be >= 0, got ", F.col(c.name))
    yield (
        INVALID,
        F.col("acks").isNotNull() & ~F.col("acks").isin(*ACKS_ALLOWED),
        _msg(f"acks must be one of {list(ACKS_ALLOWED)}, got ", F.col("acks")),
    )

    for et in EVENT_TYPES.values():
        needed = list(et.requires) + (["topic", "partition"] if et.partition_scoped else [])
        for name in needed:
            yield (
                MISSING,
                (event_type == et.name) & absent(name),
                F.lit(f"a {et.name} event needs field '{name}'"),
            )

    yield (
        INVALID,
        F.col("last_offset") < F.col("base_offset"),
        F.concat(_msg("last_offset must be >= base_offset, got last_offset ", F.col("last_offset")),
                 _msg(" < base_offset ", F.col("base_offset"))),
    )
    yield (
        INVALID,
        (event_type == "leadership_change") & (F.col("hw") > F.col("leo")),
        F.concat(_msg("hw must be <= leo, got hw ", F.col("hw")), _msg(" > leo ", F.col("leo"))),
    )
    yield (
        INVALID,
        (event_type == "truncation") & (F.col("truncate_offset") > F.col("old_leo")),
        F.concat(_msg("truncate_offset must be <= old_leo, got ", F.col("truncate_offset")),
                 _msg(" > ", F.col("old_leo"))),
    )


def classify(candidates: DataFrame) -> DataFrame:
    """Add `_reason`, `_reason_code` and `_newer_major` to candidate records (see module doc)."""
    problems = F.array(
        *[
            F.when(F.coalesce(cond, F.lit(False)), F.struct(F.lit(code).alias("code"), msg.alias("message")))
            for code, cond, msg in _rules()
        ]
    )
    malformed = F.col("_malformed").isNotNull()
    major = F.regexp_extract(F.col("schema_version"), _VERSION_RE, 1).try_cast("int")
    # Each rule is evaluated once, into `_problems`; reason and code are read off that array.
    staged = candidates.withColumn("_problems", F.filter(problems, lambda p: p.isNotNull()))
    found = F.size("_problems") > 0
    return staged.select(
        *candidates.columns,
        F.when(malformed, F.col("_malformed"))
        .when(found, F.array_join(F.col("_problems.message"), "; "))
        .alias("_reason"),
        F.when(malformed, F.lit(MALFORMED)).when(found, F.col("_problems")[0]["code"]).alias("_reason_code"),
        (~malformed & F.coalesce(major > SCHEMA_MAJOR, F.lit(False))).alias("_newer_major"),
    )
