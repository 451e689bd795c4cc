"""`violation_streaks`: alike violations at consecutive offsets become one row, worked out by hand."""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from jobs.violation_streaks import violation_streaks
from replication_core.checker.checker import unclean_excuse_text
from schemas.audit import SPARK_VIOLATION_SCHEMA

STREAK = T.StructType([*SPARK_VIOLATION_SCHEMA.fields, *(T.StructField(n, T.LongType()) for n in (
    "streak_count", "first_offset", "last_offset", "first_ts_ms", "last_ts_ms"))])


def _lost(offset: int, ts: int, n: int = 1, broker: int = 1, event: int = 9, crash: int | None = None) -> str:
    return (f"write acknowledged at {offset}..{offset + n - 1} by broker {broker} is not on final leader 2 at "
            f"{offset} ({n} offsets){unclean_excuse_text(event, crash)}")


def _row(invariant: str, replica: int | None, ts: int, event: int, offset: int | None, message: str,
         partition: int = 0, severity: str = "warning") -> tuple:
    return ("r", invariant, severity, "t", partition, replica, ts, event, offset, offset, -1 if offset else None,
            [event], message)


def test_alike_violations_at_following_offsets_are_one_streak_and_anything_else_breaks_it(
        spark: SparkSession) -> None:
    """Replica 2's lost writes: acks at 10 (3 offsets: 10..12), 13, 14 (all at 5000 ms, end of run) and 15 found at
    5200 ms follow one another: one streak of 4 covering 10..15, found 5000-5200 ms, its row the earliest (10; ties
    on time broken by event, then offset). 17 leaves a gap (16 is not lost): a streak of its own. 18 with another
    excuse wording (a crash) is alike in numbers only if the words match: `(lost with its unflushed tail)` is other
    words, so its own streak. Replica 3's loss at 11 is another replica's; partition 1's at 13 another partition's.
    A committed_prefix_agreement finding at 12 is another invariant. A violation with no offset stands alone, even
    next to an alike one. Losses at 20 and 25 found at one instant (6000 ms) by one check are one streak across the
    gap (21..24 were not lost: never acknowledged, say). Losses at 30 and 31 excused by two elections (events 9 and
    20) are two streaks, and so are 32 and 33 lost to one election after two crashes (events 5 and 7): the numbers of
    the events that excuse them are not masked."""
    rows = [
        _row("acked_write_lost", 2, 5000, -1, 13, _lost(13, 5000)),
        _row("acked_write_lost", 2, 5000, -1, 10, _lost(10, 5000, n=3)),
        _row("acked_write_lost", 2, 5000, -1, 14, _lost(14, 5000)),
        _row("acked_write_lost", 2, 5200, -1, 15, _lost(15, 5200, broker=3)),
        _row("acked_write_lost", 2, 5300, -1, 17, _lost(17, 5300)),
        _row("acked_write_lost", 2, 5000, -1, 18, _lost(18, 5000).replace("after unclean election event 9",
                                                                          "lost with its unflushed tail")),
        _row("acked_write_lost", 3, 5000, -1, 11, _lost(11, 5000)),
        _row("acked_write_lost", 2, 5000, -1, 13, _lost(13, 5000), partition=1),
        _row("committed_prefix_agreement", 2, 4000, 40, 12, "replica 2 (HW 13) and replica 1 (HW 20) hold "
             "different records at 12 (1 offsets)"),
        _row("acked_write_lost", 2, 6000, -1, 25, _lost(25, 6000)),
        _row("acked_write_lost", 2, 6000, -1, 20, _lost(20, 6000)),
        _row("acked_write_lost", 2, 7000, -1, 30, _lost(30, 7000)),
        _row("acked_write_lost", 2, 7000, -1, 31, _lost(31, 7000, event=20)),
        _row("acked_write_lost", 2, 7000, -1, 32, _lost(32, 7000, crash=5)),
        _row("acked_write_lost", 2, 7000, -1, 33, _lost(33, 7000, crash=7)),
        _row("isr_nonempty", None, 3000, 30, None, "ISR of epoch 4 is empty"),
        _row("isr_nonempty", None, 3100, 31, None, "ISR of epoch 5 is empty"),
    ]
    got = violation_streaks(spark.createDataFrame(rows, SPARK_VIOLATION_SCHEMA))

    def streak(row: tuple, count: int, lo: int | None, hi: int | None, first: int, last: int) -> tuple:
        return (*row, count, lo, hi, first, last)

    expected = spark.createDataFrame([
        streak(rows[1], 4, 10, 15, 5000, 5200),  # 15 is the highest offset named (not 10's 10..12 + 3)
        streak(rows[4], 1, 17, 17, 5300, 5300),
        streak(rows[5], 1, 18, 18, 5000, 5000),
        streak(rows[6], 1, 11, 11, 5000, 5000),
        streak(rows[7], 1, 13, 13, 5000, 5000),
        streak(rows[8], 1, 12, 12, 4000, 4000),
        streak(rows[15], 1, None, None, 3000, 3000),
        streak(rows[16], 1, None, None, 3100, 3100),
        streak(rows[10], 2, 20, 25, 6000, 6000),
        *(streak(rows[k], 1, o, o, 7000, 7000) for k, o in ((11, 30), (12, 31), (13, 32), (14, 33))),
    ], STREAK)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_a_violation_found_again_within_the_offsets_of_an_earlier_one_continues_its_streak(
        spark: SparkSession) -> None:
    """ISR member 3 lacks the leader's records from 40 (10 offsets found) at the HW move of event 50, then from 41
    (1 offset) at event 51, from 45 at event 52 (past 41's, within 40's: continues), from 50 at 53 (right after
    40's: continues) and from 52 at 54 (51 left out: a streak of its own). The first streak names 40..50."""
    def lacks(o: int, n: int, hw: int) -> str:
        return f"ISR member 3 lacks the leader's record at {o} below HW {hw} ({n} offsets)"

    rows = [_row("isr_holds_committed", 3, 100, 50, 40, lacks(40, 10, 50), severity="error"),
            _row("isr_holds_committed", 3, 110, 51, 41, lacks(41, 1, 50), severity="error"),
            _row("isr_holds_committed", 3, 120, 52, 45, lacks(45, 1, 50), severity="error"),
            _row("isr_holds_committed", 3, 130, 53, 50, lacks(50, 1, 51), severity="error"),
            _row("isr_holds_committed", 3, 140, 54, 52, lacks(52, 1, 53), severity="error")]
    got = violation_streaks(spark.createDataFrame(rows, SPARK_VIOLATION_SCHEMA))
    expected = spark.createDataFrame([(*rows[0], 4, 40, 50, 100, 130), (*rows[4], 1, 52, 52, 140, 140)], STREAK)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
