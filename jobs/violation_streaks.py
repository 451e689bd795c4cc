"""Alike violations at consecutive offsets, listed as one row: a flood read as the few losses it is.

An unclean election that drops 500 acknowledged writes is found 500 times (`acked_write_lost` once per produce
acknowledgement), and the new leader's records then disagree with the old one's at every offset it commits
(`committed_prefix_agreement`, `inconsistent_offsets` once per HW move). The gold table keeps every violation (the
differential compares them one by one); the report lists them by *streak*: violations of one partition, invariant,
severity and replica whose messages read the same but for their numbers, at offsets that follow one another (each
violation's message says how many offsets it covers, `(N offsets)`, so the next may start right after them or
within them). A streak's row is its earliest violation, with how many it stands for, the offsets they cover and
when they were found.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

STREAK_KEY: tuple[str, ...] = ("run_id", "topic", "partition", "invariant", "severity", "replica")
"""What the violations of one streak share, besides their message's wording."""

SPAN_PATTERN = r"\((\d+) offsets\)"
"""How a violation's message says how many offsets it covers (checker and audit write it alike)."""


def _span() -> F.Column:
    """The offsets a violation covers, from its message; 1 where it does not say."""
    said = F.regexp_extract("message", SPAN_PATTERN, 1)
    return F.greatest(F.coalesce(F.when(said != "", said.cast("long")), F.lit(1)), F.lit(1))


def violation_streaks(violations: DataFrame) -> DataFrame:
    """One row per streak of `violations`: the streak's earliest violation (by time, event, offset) with
    `streak_count`, `first_offset` / `last_offset` (the offsets all of them cover) and `first_ts_ms` /
    `last_ts_ms`. A violation without an offset is a streak of its own."""
    wording = F.regexp_replace("message", "[0-9]+", "#")
    df = violations.withColumns({"_wording": wording, "_span": _span()})
    w = Window.partitionBy(*STREAK_KEY, "_wording").orderBy(F.col("offset").asc_nulls_first(), "ts_ms", "event_id")
    prev_end = F.lag(F.col("offset") + F.col("_span"), 1).over(w)
    # Ordered by offset, a violation continues the streak when it starts within or right after the previous one.
    joins = F.col("offset").isNotNull() & prev_end.isNotNull() & (F.col("offset") <= prev_end)
    df = df.withColumn("_starts", F.when(joins, 0).otherwise(1)).withColumn(
        "_streak", F.sum("_starts").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    first = F.min_by(F.struct(*violations.columns), F.struct(F.col("ts_ms"), F.col("event_id"), F.col("offset")))
    return df.groupBy(*STREAK_KEY, "_wording", "_streak").agg(
        first.alias("_first"),
        F.count(F.lit(1)).alias("streak_count"),
        F.min("offset").alias("first_offset"),
        F.max(F.col("offset") + F.col("_span") - 1).alias("last_offset"),
        F.min("ts_ms").alias("first_ts_ms"),
        F.max("ts_ms").alias("last_ts_ms"),
    ).select("_first.*", "streak_count", "first_offset", "last_offset", "first_ts_ms", "last_ts_ms")
