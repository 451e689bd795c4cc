"""Alike violations at consecutive offsets, listed as one row: a flood read as the few losses it is.

An unclean election that drops 500 acknowledged writes is found 500 times (`acked_write_lost` once per produce
acknowledgement), and the new leader's records then disagree with the old one's at every offset it commits
(`committed_prefix_agreement`, `inconsistent_offsets` once per HW move). The gold table keeps every violation (the
differential compares them one by one); the report lists them by *streak*: violations of one partition, invariant,
severity and replica whose messages read the same but for their numbers — bar the events that excuse them (an
unclean election, a crash): two elections' losses are two streaks — at offsets that follow one another (each
violation's message says how many offsets it found, `(N offsets)`, so the next may start right after them or
within them) or found at one instant by one event (an end-of-run check's losses of one instant, which writes never
acknowledged may leave gaps between: the row's count then falls short of its range). A streak's row is its
earliest violation, with how many it stands for, the lowest and highest offset they name and when they were found.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

STREAK_KEY: tuple[str, ...] = ("run_id", "topic", "partition", "invariant", "severity", "replica")
"""What the violations of one streak share, besides their message's wording."""

SPAN_PATTERN = r"\((\d+) offsets\)"
"""How a violation's message says how many offsets it found from its own (checker and audit write it alike)."""

EXCUSE_EVENT_WORDS: tuple[str, ...] = ("election event ", "crash, event ", "recovery event ")
"""The words before an excusing event's id in a message (`replication_core.checker.checker.unclean_excuse_text`, the
crash recovery note): those numbers stay in a streak's wording."""

_NUMBERS = "".join(f"(?<!{w})" for w in EXCUSE_EVENT_WORDS) + "(?<![0-9])[0-9]+"
"""Every whole number of a message but an excusing event's id (Java regex: fixed-length look-behinds)."""


def _span() -> F.Column:
    """The offsets a violation covers, from its message; 1 where it does not say."""
    said = F.regexp_extract("message", SPAN_PATTERN, 1)
    return F.greatest(F.coalesce(F.when(said != "", said.cast("long")), F.lit(1)), F.lit(1))


def violation_streaks(violations: DataFrame) -> DataFrame:
    """One row per streak of `violations`: the streak's earliest violation (by time, event, offset) with
    `streak_count`, `first_offset` / `last_offset` (the lowest and highest offset they name) and `first_ts_ms` /
    `last_ts_ms`. A violation without an offset is a streak of its own."""
    wording = F.regexp_replace("message", _NUMBERS, "#")
    df = violations.withColumns({"_wording": wording, "_span": _span()})
    w = Window.partitionBy(*STREAK_KEY, "_wording").orderBy(F.col("offset").asc_nulls_first(), "ts_ms", "event_id")
    # The furthest any earlier violation of the group reached (not only the previous one: a wide one may cover
    # several that follow).
    prev_end = F.max(F.col("offset") + F.col("_span")).over(w.rowsBetween(Window.unboundedPreceding, -1))
    same_instant = (F.lag("ts_ms", 1).over(w) == F.col("ts_ms")) & (F.lag("event_id", 1).over(w) == F.col("event_id"))
    # Ordered by offset, a violation continues the streak when it starts within or right after the previous one, or
    # was found when and by what the previous one was.
    joins = F.col("offset").isNotNull() & prev_end.isNotNull() & ((F.col("offset") <= prev_end) | same_instant)
    df = df.withColumn("_starts", F.when(joins, 0).otherwise(1)).withColumn(
        "_streak", F.sum("_starts").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    first = F.min_by(F.struct(*violations.columns),
                     F.struct(F.col("ts_ms"), F.col("event_id"), F.col("offset"), F.col("message")))
    return df.groupBy(*STREAK_KEY, "_wording", "_streak").agg(
        first.alias("_first"),
        F.count(F.lit(1)).alias("streak_count"),
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
        F.min("ts_ms").alias("first_ts_ms"),
        F.max("ts_ms").alias("last_ts_ms"),
    ).select("_first.*", "streak_count", "first_offset", "last_offset", "first_ts_ms", "last_ts_ms")
