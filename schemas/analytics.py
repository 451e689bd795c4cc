"""Arrow schemas of the silver and gold tables that `replog timelines` and `replog lag` write.

One source, as for the events: each column is declared once here with its documentation; the Spark
StructTypes derive from these through `schemas.spark.to_spark_schema`, and the transforms in
`jobs.transforms` produce exactly these columns. Every table is partitioned by `run_id`.

Conventions shared by all interval tables: an interval is `[valid_from_ms, valid_to_ms)`; a null
`valid_to_ms` means the state was still in force at the end of the data.
"""

from __future__ import annotations

import pyarrow as pa

from schemas.events import INT_LIST, OUT_OF_SYNC_REPLICA

RUN_PARTITION_BY: tuple[str, ...] = ("run_id",)
"""Partition columns of every analytics table."""


def _f(name: str, t: pa.DataType, doc: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable=nullable, metadata={"doc": doc})


def _keys(*, replica: str | None = None) -> list[pa.Field]:
    out = [
        _f("run_id", pa.string(), "Run the events belong to.", nullable=False),
        _f("topic", pa.string(), "Topic.", nullable=False),
        _f("partition", pa.int32(), "Partition index.", nullable=False),
    ]
    if replica:
        out.append(_f(replica, pa.int32(), f"The {replica.removesuffix('_id')} (broker id).", nullable=False))
    return out


def _interval() -> list[pa.Field]:
    return [
        _f("valid_from_ms", pa.int64(), "Start of the interval (ts_ms of the event that opened it).", nullable=False),
        _f("valid_to_ms", pa.int64(), "End of the interval (exclusive): ts_ms of the next change; null = still "
           "in force at the end of the data."),
    ]


REPLICA_OFFSETS_SCHEMA = pa.schema(
    [
        *_keys(replica="replica_id"),
        *_interval(),
        _f("role", pa.string(), "leader / follower, from the last leadership_change or role-carrying event; "
           "offline from the broker's crash or shutdown until the next; removed (offsets null: the log is "
           "deleted) from a state of the partition that no longer assigns the replica until the next."),
        _f("leader_epoch", pa.int32(), "Leader epoch the replica had (envelope leader_epoch of its events)."),
        _f("log_start_offset", pa.int64(), "Log start offset; null = no event has told it yet."),
        _f("high_watermark", pa.int64(), "High watermark (exclusive)."),
        _f("log_end_offset", pa.int64(), "Log end offset (exclusive)."),
        _f("event_id", pa.int64(), "Bronze event that opened the interval (the last one at valid_from_ms).",
           nullable=False),
    ]
)
"""`silver/replica_offsets`: per replica, intervals of constant (role, epoch, LSO, HW, LEO)."""

PARTITION_STATE_SCHEMA = pa.schema(
    [
        *_keys(),
        *_interval(),
        _f("leader_id", pa.int32(), "Leader broker; null = no leader (offline)."),
        _f("leader_epoch", pa.int32(), "Leader epoch."),
        _f("partition_epoch", pa.int32(), "Partition epoch (KRaft) / zkVersion."),
        _f("isr", INT_LIST, "Committed ISR, sorted."),
        _f("elr", INT_LIST, "Eligible leader replicas (KIP-966), sorted; null where no event states them (a "
           "cluster without ELR; from logs, after an ISR change no controller line shows). Since schema 1.6."),
        _f("replicas", INT_LIST, "Assigned replicas."),
        _f("isr_size", pa.int32(), "size(isr); null while no event has stated the ISR (and so are the flags "
           "comparing it)."),
        _f("replication_factor", pa.int32(), "size(replicas) less the replicas a reassignment is adding "
           "(Kafka's replicationFactor)."),
        _f("effective_min_isr", pa.int32(), "min(min.insync.replicas, size(replicas)) (Kafka 3.7+)."),
        _f("under_replicated", pa.bool_(), "Led and isr_size < replication_factor (UnderReplicatedPartitions)."),
        _f("under_min_isr", pa.bool_(), "Led and isr_size < effective_min_isr (UnderMinIsrPartitionCount)."),
        _f("at_min_isr", pa.bool_(), "Led and isr_size = effective_min_isr (AtMinIsrPartitionCount)."),
        _f("offline", pa.bool_(), "No leader (OfflinePartitionsCount); null while no event has named the leader "
           "yet (a log cut mid-run)."),
        _f("cause", pa.string(), "What opened the interval: event_type:action of its last event."),
        _f("event_id", pa.int64(), "Bronze event that opened the interval.", nullable=False),
    ]
)
"""`silver/partition_state`: per partition, intervals of constant leadership / ISR / assignment."""

ISR_CHANGES_SCHEMA = pa.schema(
    [
        *_keys(),
        _f("leader_id", pa.int32(), "Leader that proposed (or applied) the change.", nullable=False),
        _f("leader_epoch", pa.int32(), "Leader epoch of the proposal."),
        _f("action", pa.string(), "shrink / expand / update (update = ISR replaced by a LeaderAndIsr)."),
        _f("reason", pa.string(), "Reason of the proposal (follower_lagging, follower_caught_up, leader_and_isr)."),
        _f("old_isr", INT_LIST, "Committed ISR before the change."),
        _f("proposed_isr", INT_LIST, "ISR the leader proposed."),
        _f("removed_replicas", INT_LIST, "old_isr minus proposed_isr."),
        _f("added_replicas", INT_LIST, "proposed_isr minus old_isr."),
        _f("out_of_sync_replicas", pa.list_(pa.field("element", OUT_OF_SYNC_REPLICA)),
           "For a shrink: the removed replicas with LEO and lastCaughtUpTimeMs as the leader saw them."),
        _f("proposed_ms", pa.int64(), "When the leader proposed (null if only the outcome was seen)."),
        _f("proposed_event_id", pa.int64(), "Bronze event of the proposal."),
        _f("outcome", pa.string(), "committed / rejected (rejected and never committed) / superseded (no answer "
           "before the leader's state moved on: its next ISR change, leadership change or restart) / pending (no "
           "answer, nothing after it).", nullable=False),
        _f("resolved_ms", pa.int64(), "When it was committed, else when last rejected, else superseded; null if "
           "pending."),
        _f("resolved_event_id", pa.int64(), "Bronze event of that resolution."),
        _f("committed_isr", INT_LIST, "ISR the controller committed (null unless committed)."),
        _f("partition_epoch", pa.int32(), "Partition epoch after the commit."),
        _f("rejections", pa.int32(), "Rejected attempts (AlterPartition errors) before the outcome.",
           nullable=False),
        _f("last_error", pa.string(), "Error of the last rejection."),
        _f("last_rejection_reason", pa.string(), "reset_to_committed / awaiting_metadata / retry / stale_response."),
        _f("latency_ms", pa.int64(), "resolved_ms - proposed_ms."),
    ]
)
"""`silver/isr_changes`: one row per ISR change a leader proposed or applied, its proposal joined with its outcome."""

TIMELINE_WATERMARKS_SCHEMA = pa.schema(
    [
        _f("run_id", pa.string(), "Run.", nullable=False),
        _f("topic", pa.string(), "Topic; '' for the run-level (not partition-scoped) events.", nullable=False),
        _f("partition", pa.int32(), "Partition; -1 for the run-level events.", nullable=False),
        _f("max_event_id", pa.int64(), "Largest bronze event_id processed.", nullable=False),
        _f("event_count", pa.int64(), "Bronze events processed.", nullable=False),
        _f("bronze_version", pa.int64(), "bronze/replication_events version they were read at.", nullable=False),
    ]
)
"""`silver/_timeline_watermarks`: what `replog timelines` has processed, per partition."""

FOLLOWER_LAG_SCHEMA = pa.schema(
    [
        *_keys(replica="follower_id"),
        _f("leader_id", pa.int32(), "Leader that recorded the fetch state.", nullable=False),
        _f("leader_epoch", pa.int32(), "Leader epoch of the leader."),
        *_interval(),
        _f("last_caught_up_time_ms", pa.int64(), "The leader's lastCaughtUpTimeMs for the follower."),
        _f("follower_leo", pa.int64(), "Follower LEO as the leader knows it (fetch offset of the last fetch)."),
        _f("leader_leo", pa.int64(), "Leader LEO when it recorded the fetch."),
        _f("message_lag", pa.int64(), "leader_leo - follower_leo at the fetch."),
        _f("message_lag_end", pa.int64(), "Leader LEO at valid_to_ms (next fetch, else the leader's last LEO in "
           "the epoch) - follower_leo: the lag just before the next fetch."),
        _f("time_lag_ms", pa.int64(), "valid_from_ms - last_caught_up_time_ms."),
        _f("time_lag_end_ms", pa.int64(), "Time lag at the end of the interval (valid_to_ms, or the run's last "
           "event if open) - the largest in the interval, since it grows with the clock."),
        _f("closed_by", pa.string(), "What ended the interval: fetch (the next fetch state), leader_change (a "
           "newer leader epoch), leader_down (the leader crashed / shut down); null = open."),
        _f("lag_max_ms", pa.int64(), "replica.lag.time.max.ms in force on the leader when the interval opened.",
           nullable=False),
        _f("event_id", pa.int64(), "The follower_fetch_state event (or the leader's become_leader for the "
           "interval that opens at the leader change).", nullable=False),
    ]
)
"""`silver/follower_lag`: per follower, intervals between the leader's fetch-state updates."""

LAG_INCIDENTS_SCHEMA = pa.schema(
    [
        *_keys(replica="follower_id"),
        _f("leader_id", pa.int32(), "Leader during the incident.", nullable=False),
        _f("leader_epoch", pa.int32(), "Leader epoch during the incident."),
        _f("start_ms", pa.int64(), "When the follower fell out of sync (Kafka's isCaughtUp): the first instant its "
           "time lag exceeded lag_max_ms (after lastCaughtUpTimeMs + lag_max_ms) while the leader's LEO was ahead "
           "of it; for premature: the shrink.", nullable=False),
        _f("end_ms", pa.int64(), "The fetch that brought the time lag back under the bound, or the end of the "
           "leader epoch; null = ongoing at the end of the data."),
        _f("last_caught_up_time_ms", pa.int64(), "lastCaughtUpTimeMs at the start."),
        _f("lag_max_ms", pa.int64(), "replica.lag.time.max.ms in force.", nullable=False),
        _f("deadline_ms", pa.int64(), "start_ms + lag_max_ms / 2: the last isr-expiration run that must have "
           "seen it (removal is due by 1.5 x lag_max_ms after the last caught-up instant); from the follower's "
           "return to the ISR if it was out at the start, a period after the answer to an ISR change of the leader "
           "in flight then; null while one is still pending at the end of the data."),
        _f("peak_time_lag_ms", pa.int64(), "Largest time lag (now - lastCaughtUpTimeMs) during the incident."),
        _f("peak_message_lag", pa.int64(), "Largest leader LEO - follower LEO seen during the incident."),
        _f("in_isr_at_start", pa.bool_(), "The follower was in the committed ISR when the incident started."),
        _f("shrink_ms", pa.int64(), "When the leader proposed removing the follower (first during the incident)."),
        _f("shrink_committed_ms", pa.int64(), "When that shrink was committed."),
        _f("shrink_outcome", pa.string(), "committed / rejected / pending."),
        _f("verdict", pa.string(), "on_time / late / missing / recovered / leader_lost / ongoing / not_in_isr / "
           "premature (see jobs.transforms.lag).",
           nullable=False),
    ]
)
"""`gold/lag_incidents`: every interval in which a follower's time lag exceeded the bound, judged."""

LAG_SUMMARY_SCHEMA = pa.schema(
    [
        _f("run_id", pa.string(), "Run.", nullable=False),
        _f("scope", pa.string(), "partition (one partition) or broker (one broker over all partitions).",
           nullable=False),
        _f("topic", pa.string(), "Topic (partition scope)."),
        _f("partition", pa.int32(), "Partition (partition scope)."),
        _f("broker_id", pa.int32(), "Broker (broker scope)."),
        _f("observed_ms", pa.int64(), "The run's span: last - first event ts_ms."),
        _f("urp_minutes", pa.float64(), "Minutes under-replicated (broker: summed over the partitions it led, as "
           "the controller's records name the leader: a crashed leader keeps them until the controller moves "
           "its leaderships, though its own UnderReplicatedPartitions gauge is gone meanwhile)."),
        _f("under_min_isr_minutes", pa.float64(), "Minutes under min ISR (same attribution)."),
        _f("offline_minutes", pa.float64(), "Minutes without a leader (partition scope; broker: 0)."),
        _f("isr_shrinks", pa.int64(), "Committed ISR shrinks (broker: as leader). At most what "
           "IsrShrinksPerSec counts: Kafka marks the meter only when the AlterPartition answer commits the "
           "change, not when the metadata delivered the commit first (KRaft), which this counts too."),
        _f("isr_expands", pa.int64(), "Committed ISR expansions (broker: as leader); IsrExpandsPerSec as for "
           "isr_shrinks."),
        _f("isr_shrinks_per_hour", pa.float64(), "isr_shrinks per hour of observed_ms."),
        _f("isr_expands_per_hour", pa.float64(), "isr_expands per hour of observed_ms."),
        _f("max_time_lag_ms", pa.int64(), "Largest follower time lag (broker: as follower)."),
        _f("max_message_lag", pa.int64(), "Largest follower message lag, leader LEO - follower LEO (broker: as "
           "follower). Not the fetcher's MaxLag gauge, which is the leader's HW in a response - the follower's "
           "next offset, so it leaves out what the ISR has not committed yet."),
        _f("lag_incidents", pa.int64(), "Incidents (premature shrinks excluded)."),
        _f("incidents_late", pa.int64(), "Incidents with verdict late."),
        _f("incidents_missing", pa.int64(), "Incidents with verdict missing."),
        _f("premature_shrinks", pa.int64(), "Shrinks of a follower that was not lagging."),
    ]
)
"""`gold/lag_summary`: operator numbers per partition and per broker."""
