"""Transforms behind `notebooks/incident_investigation.py`: one partition's story around an incident.

`partition_moments` lists the moments that change a partition's replication — the controller's leader
elections and its other partition changes (runs with eligible leader replicas: the ISR and ELR it committed), the
committed ISR changes, the crashes, restarts and shutdowns of its replicas' brokers and the faults the simulator
held them in (`broker_fault`: a GC pause, a disk stall, a network partition and its heal) — and
`offsets_at_moments` gives every replica's role, epoch, HW and LEO in force at each of them, from
`silver/replica_offsets`. Read down the table to see, for instance, how far the new leader's LEO was behind
the old leader's HW when an unclean election made it leader. `lost_writes` and `lost_per_partition` answer the
notebook's first question: which acknowledged writes are gone, acks=all (Kafka promised to keep them) and acks=1
(it did not) apart.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from schemas.events import BROKER_FAULT, BROKER_LIFECYCLE, ISR_CHANGE, LEADER_ELECTION, PARTITION_CHANGE

LOST_WRITE_INVARIANTS: dict[str, str] = {"acked_write_lost": "all", "acks1_write_lost": "1"}
"""The invariants that find an acknowledged write missing from its partition's final leader log, by the producer's
`acks`: acks=all writes, which Kafka promises to keep (an error; a warning where an unclean election or a crash
explains the loss), and acks=1 writes, which it does not (info: counted, never a failure)."""

MOMENT_COLUMNS: tuple[str, ...] = ("ts_ms", "event_id", "broker_id", "kind", "moment")
"""`partition_moments`: time, bronze event id, the broker it concerns, kind, and a one-line description."""


def _ids(c: str) -> Column:
    return F.concat(F.lit("["), F.array_join(F.col(c), ", "), F.lit("]"))


def _elr() -> Column:
    """', ELR [..]' where the event states the eligible leader replicas (KIP-966), else nothing."""
    return F.when(F.col("elr").isNotNull(), F.concat(F.lit(", ELR "), _ids("elr"))).otherwise(F.lit(""))


def _reason() -> Column:
    return F.when(F.col("reason").isNotNull(), F.concat(F.lit(" ("), F.col("reason"), F.lit(")"))).otherwise(F.lit(""))


BROKER_KINDS: tuple[str, ...] = ("broker", "fault")
"""The kinds of moment that concern a broker rather than the partition: `offsets_at_moments` keeps those of the
partition's own replicas."""


def _fault() -> Column:
    """A broker_fault as a moment: `broker 1 cut off from [2, 1000] (outbound) for 2426 ms`, `broker 2 GC pause
    for 500 ms`, `broker 1 network heal of [2, 1000]` (`of every link` when it names no peers)."""
    broker = F.concat(F.lit("broker "), F.col("broker_id").cast("string"))
    lasting = F.when(F.col("duration_ms").isNotNull(),
                     F.concat(F.lit(" for "), F.col("duration_ms").cast("string"), F.lit(" ms"))).otherwise(F.lit(""))
    peers = F.when(F.col("peers").isNotNull(), _ids("peers")).otherwise(F.lit("every link"))
    direction = F.when(F.col("direction").isNotNull(),
                       F.concat(F.lit(" ("), F.col("direction"), F.lit(")"))).otherwise(F.lit(""))
    action = F.col("action")
    return (F.when(action == "network_partition",
                   F.concat(broker, F.lit(" cut off from "), peers, direction,
                            F.when(F.col("duration_ms").isNotNull(), lasting).otherwise(F.lit(" until a heal"))))
            .when(action == "network_heal", F.concat(broker, F.lit(" network heal of "), peers, direction))
            .otherwise(F.concat(broker, F.lit(" "), F.regexp_replace(F.regexp_replace(action, "^gc_", "GC "), "_", " "),
                                lasting)))


def partition_moments(bronze: DataFrame, run_id: str, topic: str, partition: int) -> DataFrame:
    """The partition's leader elections, the controller's other changes of it (`partition_change`, runs with
    eligible leader replicas) and its committed ISR changes, and every crash, restart, shutdown and simulated fault
    of the run's brokers (columns `MOMENT_COLUMNS`, in event order); `offsets_at_moments` keeps the broker moments
    (`BROKER_KINDS`) of the partition's own replicas."""
    run = bronze.where(F.col("run_id") == run_id)
    mine = (F.col("topic") == topic) & (F.col("partition") == partition)
    election = run.where(mine & (F.col("event_type") == LEADER_ELECTION)).select(
        "ts_ms", "event_id", F.col("leader_id").alias("broker_id"), F.lit("election").alias("kind"),
        F.concat(F.col("action"), F.lit(" election: leader "), F.coalesce(F.col("leader_id").cast("string"),
                                                                           F.lit("none")),
                 # A controller's log line may not give the epoch it opens (jobs.broker_logs).
                 F.when(F.col("leader_epoch").isNotNull(),
                        F.concat(F.lit(" in epoch "), F.col("leader_epoch").cast("string"))).otherwise(F.lit("")),
                 F.lit(", ISR "), _ids("isr"), _elr(), _reason()).alias("moment"))
    change = run.where(mine & (F.col("event_type") == PARTITION_CHANGE)).select(
        "ts_ms", "event_id", F.col("leader_id").alias("broker_id"), F.lit("change").alias("kind"),
        F.concat(F.lit("partition change: ISR "), _ids("isr"), _elr(), _reason()).alias("moment"))
    isr = run.where(mine & (F.col("event_type") == ISR_CHANGE) & (F.col("isr_state") == "committed")).select(
        "ts_ms", "event_id", "broker_id", F.lit("isr").alias("kind"),
        F.concat(F.lit("ISR "), F.col("action"), F.lit(" committed by leader "), F.col("broker_id").cast("string"),
                 F.lit(": "), _ids("old_isr"), F.lit(" -> "), _ids("isr")).alias("moment"))
    life = run.where((F.col("event_type") == BROKER_LIFECYCLE) & (F.col("action") != "start")
                     & F.col("broker_id").isNotNull()).select(
        "ts_ms", "event_id", "broker_id", F.lit("broker").alias("kind"),
        F.concat(F.lit("broker "), F.col("broker_id").cast("string"), F.lit(" "), F.col("action")).alias("moment"))
    fault = run.where((F.col("event_type") == BROKER_FAULT) & F.col("broker_id").isNotNull()).select(
        "ts_ms", "event_id", "broker_id", F.lit("fault").alias("kind"), _fault().alias("moment"))
    return (election.unionByName(change).unionByName(isr).unionByName(life).unionByName(fault)
            .select(*MOMENT_COLUMNS))


def offsets_at_moments(bronze: DataFrame, replica_offsets: DataFrame, run_id: str, topic: str,
                       partition: int) -> DataFrame:
    """Per moment of `partition_moments` and replica of the partition: the replica's role, leader epoch, HW
    and LEO in force at that instant (the interval with valid_from_ms <= ts_ms < valid_to_ms), ordered by
    moment then replica. A replica with no interval yet at a moment has no row for it; a moment at which no
    replica has one (the topic's creation) has one row with null replica columns."""
    offsets = replica_offsets.where((F.col("run_id") == run_id) & (F.col("topic") == topic)
                                    & (F.col("partition") == partition))
    replicas = offsets.select(F.col("replica_id").alias("broker_id")).distinct()
    moments = partition_moments(bronze, run_id, topic, partition)
    # A broker's crash or fault matters here only if it holds a replica of the partition.
    ours = F.col("kind").isin(*BROKER_KINDS)
    moments = moments.where(~ours).unionByName(moments.where(ours).join(replicas, "broker_id", "left_semi"))
    m, o = moments.alias("m"), offsets.alias("o")
    in_force = (F.col("o.valid_from_ms") <= F.col("m.ts_ms")) & (
        F.col("o.valid_to_ms").isNull() | (F.col("m.ts_ms") < F.col("o.valid_to_ms")))
    # A partition's moments are few (elections, ISR changes, crashes): broadcast them onto its intervals.
    state = ("replica_id", "role", "leader_epoch", "high_watermark", "log_end_offset")
    matched = o.join(F.broadcast(m), in_force).select(
        "m.ts_ms", "m.event_id", "m.moment", *[F.col(f"o.{c}") for c in state])
    # A moment before any replica's first interval (the topic's creation) still shows, without offsets.
    unmatched = moments.join(matched.select("event_id"), "event_id", "left_anti").select(
        "ts_ms", "event_id", "moment", *[F.lit(None).cast(offsets.schema[c].dataType).alias(c) for c in state])
    return (matched.unionByName(unmatched).orderBy("ts_ms", "event_id", F.col("replica_id").asc_nulls_first())
            .drop("event_id"))


def lost_writes(violations: DataFrame) -> DataFrame:
    """The acknowledged writes missing from their partition's final leader log at the end of a run: the rows of
    `LOST_WRITE_INVARIANTS` in `gold/invariant_violations`, one per lost acknowledgement, with `acks` (`all` or
    `1`), the first lost offset, the severity, when it was lost (`ts_ms`: when the write last left the leader in
    office, as the end-of-run check dates each loss, `jobs.invariants.final_log`) and its message."""
    acks = F.create_map(*[F.lit(x) for item in LOST_WRITE_INVARIANTS.items() for x in item])[F.col("invariant")]
    return violations.where(F.col("invariant").isin(*LOST_WRITE_INVARIANTS)).select(
        "run_id", "topic", "partition", acks.alias("acks"), "offset", "severity", "ts_ms", "message")


def lost_per_partition(lost: DataFrame) -> DataFrame:
    """Per run, topic, partition and `acks` of `lost_writes`: how many acknowledged writes are gone (`writes_lost`)
    and the lowest and highest first lost offset."""
    return lost.groupBy("run_id", "topic", "partition", "acks").agg(
        F.count(F.lit(1)).alias("writes_lost"), F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"))
