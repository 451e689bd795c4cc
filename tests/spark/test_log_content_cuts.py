"""`log_content.cuts_within` (a truncation inside a batch cuts the batch from its base) on batches that straddle the
offset buckets of its join key, worked out by hand."""

from __future__ import annotations

from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from jobs.invariants.log_content import OFFSET_BUCKET_MASK, WIDE_BATCH_BUCKETS, cuts_within

BUCKET = OFFSET_BUCKET_MASK + 1
REPLICA = ("r", "t", 0, 1)
APPEND = T.StructType([T.StructField(n, t) for n, t in (
    ("run_id", T.StringType()), ("topic", T.StringType()), ("partition", T.IntegerType()),
    ("broker_id", T.IntegerType()), ("event_id", T.LongType()), ("base_offset", T.LongType()),
    ("last_offset", T.LongType()))])
TRUNC = T.StructType([*APPEND.fields[:5], T.StructField("truncate_offset", T.LongType())])
ALL_TRUNC = T.StructType([*TRUNC.fields, T.StructField("full", T.BooleanType())])
CUT = T.StructType([*APPEND.fields[:5], T.StructField("lo", T.LongType()), T.StructField("hi", T.LongType())])


def test_a_truncation_cuts_the_batch_holding_its_target_from_the_batchs_base_across_offset_buckets(
        spark: SparkSession) -> None:
    """Replica 1's appends: event 1 [B-4, B+6] (straddling the first bucket boundary B), event 2 [B+7, B+16], event 6
    [2B-8, 2B+12] (straddling 2B). Truncations: event 3 at B+1 (inside event 1: cut B-4..B), event 4 at B+7 (event
    2's base: nothing below it to cut), event 7 at 2B+2 (inside event 6, whose base is a bucket below: cut 2B-8..2B+1),
    event 8 at B+1 again (event 1 is no longer there: truncation 3 cut it, and no batch holds B+1 since), event 5 at
    5B (no batch covers it). Another replica's batch at the same offsets changes nothing."""
    b = BUCKET
    appends = [(*REPLICA, 1, b - 4, b + 6), (*REPLICA, 2, b + 7, b + 16), (*REPLICA, 6, 2 * b - 8, 2 * b + 12),
               ("r", "t", 0, 2, 9, b - 100, 3 * b)]
    truncs = [(*REPLICA, 3, b + 1), (*REPLICA, 4, b + 7), (*REPLICA, 5, 5 * b), (*REPLICA, 7, 2 * b + 2),
              (*REPLICA, 8, b + 1)]
    every = [(*t, False) for t in truncs]
    got = cuts_within(spark.createDataFrame(truncs, TRUNC), spark.createDataFrame(appends, APPEND),
                      spark.createDataFrame(every, ALL_TRUNC))
    expected = spark.createDataFrame([(*REPLICA, 3, b - 4, b), (*REPLICA, 7, 2 * b - 8, 2 * b + 1)], CUT)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_a_batch_wider_than_the_bucket_limit_is_still_found(spark: SparkSession) -> None:
    """Event 1 appends [0, 2^31 - 1] (valid, if absurd: listed under each bucket it would make two million rows).
    Truncation 2 inside it cuts 0..its target - 1; truncation 3, above truncation 2's target, cuts nothing: the batch
    is gone from there."""
    top = 2**31 - 1
    at = 5 * BUCKET * WIDE_BATCH_BUCKETS
    appends = [(*REPLICA, 1, 0, top)]
    truncs = [(*REPLICA, 2, at), (*REPLICA, 3, top - 1)]
    got = cuts_within(spark.createDataFrame(truncs, TRUNC), spark.createDataFrame(appends, APPEND),
                      spark.createDataFrame([(*t, False) for t in truncs], ALL_TRUNC))
    expected = spark.createDataFrame([(*REPLICA, 2, 0, at - 1)], CUT)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
