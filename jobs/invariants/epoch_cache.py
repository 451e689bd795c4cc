"""epoch_cache_monotonic (§11.8, §2.7): batch epochs never decrease with offset; a leader stamps its epoch.

Mirrors `Checker._check_epoch_cache_monotonic`, run at every `append` against the state before it:

* the record just below the batch (`base_offset - 1`) in the replica's replayed log, if any, must not
  carry a higher batch epoch. That record is the latest earlier write at that offset of the same replica
  (appends exploded to their offsets, joined on (replica, offset) — a handful of writes per offset), and it
  is live when the offset lies in the replayed [LSO, LEO) before the append (`jobs.invariants.replica_scan`):
  the replayed log is that contiguous range whenever the events are consistent (`event_stream_consistent`);
* otherwise, a leader append inside a leader tenure must carry the tenure's epoch.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.invariants import replica_scan
from jobs.invariants.base import Scan, ScanInputs, text, violation

REPLICA = replica_scan.REPLICA
INVARIANT = "epoch_cache_monotonic"


def build(inputs: ScanInputs) -> DataFrame:
    """Append rows with the replay state before them and the record below the batch (`_prev_*`)."""
    rows = inputs.shared(replica_scan.replica_replay)
    appends = rows.where(F.col("event_type") == "append").select(
        *REPLICA, "event_id", "ts_ms", "role", "base_offset", "last_offset", "batch_leader_epoch", "_leading",
        "_epoch", "_tenure_start", "_leo", "_lso")
    writes = appends.select(
        *REPLICA, F.col("event_id").alias("_w"), F.col("batch_leader_epoch").alias("_w_epoch"),
        F.explode(F.sequence("base_offset", "last_offset")).alias("_below"))
    below = F.col("base_offset") - 1
    asks = appends.where((below >= F.col("_lso")) & (below < F.col("_leo"))).select(
        *REPLICA, "event_id", below.alias("_below"))
    prev = asks.join(writes, [*REPLICA, "_below"]).where(F.col("_w") < F.col("event_id")).groupBy(
        *REPLICA, "event_id").agg(F.max_by(F.struct("_w", "_w_epoch"), "_w").alias("_prev"))
    return appends.join(prev, [*REPLICA, "event_id"], "left")


def epoch_cache_monotonic() -> Column:
    """epoch_cache_monotonic (§11.8, §2.7): no batch epoch below the previous record's; a leader in tenure
    stamps its own epoch."""
    prev_epoch = F.col("_prev._w_epoch")
    epoch = F.col("batch_leader_epoch")
    backwards = prev_epoch.isNotNull() & (epoch < prev_epoch)
    foreign = ~backwards & (F.col("role") == "leader") & F.col("_leading") & (epoch != F.col("_epoch"))
    return violation(
        INVARIANT, backwards | foreign, offset=F.col("base_offset"),
        expected=F.when(backwards, prev_epoch).otherwise(F.col("_epoch")), actual=epoch,
        evidence=[F.when(backwards, F.col("_prev._w")).otherwise(F.col("_tenure_start"))],
        message=F.when(backwards, text("batch of epoch ", epoch, " appended after a batch of epoch ", prev_epoch))
        .otherwise(text("leader of epoch ", F.col("_epoch"), " stamped epoch ", epoch, " on its batch")),
    )


SCAN = Scan("epoch_cache", build, {INVARIANT: (epoch_cache_monotonic,)})
"""The append scan and its check."""
