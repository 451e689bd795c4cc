"""The replication event schema: the one definition of what the engine writes and the jobs read.

Everything about an event column lives in one `Column` entry below: its arrow type, whether the
envelope requires it, which event types fill it, the values it may take, and its documentation.
`schemas.spark` and `schemas.jsonschema` derive the Spark and JSON Schema forms from this module,
and `schemas/README.md` is generated from it (`python -m schemas.docs`).

Versioning: `SCHEMA_VERSION` is "MAJOR.MINOR". A minor bump only adds nullable columns or enum
values; a major bump may change meaning. Readers accept any minor of their own major and reject a
newer major with `SchemaVersionError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

SCHEMA_VERSION = "1.13"
SCHEMA_MAJOR = 1
SCHEMA_MINOR = 13


class SchemaVersionError(ValueError):
    """Raised when data carries a schema major version this code cannot read."""

    def __init__(self, found: str, supported: str = SCHEMA_VERSION, where: str = "") -> None:
        super().__init__(
            f"schema_version {found!r} is newer than this code understands "
            f"(supports major {supported.split('.')[0]}, i.e. {supported.split('.')[0]}.x)"
            f"{' ' + where if where else ''}; upgrade replog to read it"
        )
        self.found = found


def parse_version(text: str) -> tuple[int, int]:
    """Split "MAJOR.MINOR" into ints; raises ValueError naming the expected form."""
    parts = text.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"schema_version must look like 'MAJOR.MINOR' (e.g. {SCHEMA_VERSION!r}), got {text!r}")
    return int(parts[0]), int(parts[1])


def check_readable(version: str) -> None:
    """Raise SchemaVersionError if `version` has a newer major than this code."""
    major, _ = parse_version(version)
    if major > SCHEMA_MAJOR:
        raise SchemaVersionError(version)


# --- event types -------------------------------------------------------------------------------

LEADERSHIP_CHANGE = "leadership_change"
APPEND = "append"
FETCH = "fetch"
FETCH_RESPONSE = "fetch_response"
FOLLOWER_FETCH_STATE = "follower_fetch_state"
HW_CHANGE = "hw_change"
LOG_START_OFFSET_CHANGE = "log_start_offset_change"
TRUNCATION = "truncation"
ISR_CHANGE = "isr_change"
PRODUCE_ACK = "produce_ack"
FETCHER_CHANGE = "fetcher_change"
QUOTA_THROTTLE = "quota_throttle"
BROKER_LIFECYCLE = "broker_lifecycle"
LEADER_ELECTION = "leader_election"
PARTITION_CHANGE = "partition_change"
BROKER_CONFIG = "broker_config"
EPOCH_REQUEST_RETRY = "epoch_request_retry"
BROKER_FAULT = "broker_fault"
LOG_LOAD = "log_load"

HOLDING_FAULTS: tuple[str, ...] = ("gc_pause", "disk_stall")
"""broker_fault actions that hold a running broker's threads for their duration (a network partition holds none)."""

ENGINE_SOURCE = "engine"
KAFKA_LOG_SOURCE = "kafka-log"


@dataclass(frozen=True)
class EventType:
    """One event type: its name, what it records, and the payload columns it must fill."""

    name: str
    doc: str
    requires: tuple[str, ...] = ()
    partition_scoped: bool = True
    log_requires: tuple[str, ...] | None = None
    """What an event read from real broker logs (source `kafka-log`) must fill, where Kafka's log lines carry
    less than the engine writes (None: the same as `requires`)."""

    def required_for(self, source: str | None) -> tuple[str, ...]:
        """The payload columns an event of this type from `source` must fill."""
        if source == KAFKA_LOG_SOURCE and self.log_requires is not None:
            return self.log_requires
        return self.requires


EVENT_TYPES: dict[str, EventType] = {
    e.name: e
    for e in (
        EventType(
            LEADERSHIP_CHANGE,
            "A replica became leader or follower (Partition.makeLeader / makeFollower). "
            "`leader_epoch` is the new epoch.",
            ("action", "leader_id", "partition_epoch", "replicas", "leo", "hw"),
            log_requires=("action",),
        ),
        EventType(
            APPEND,
            "A batch was appended to a replica's log (UnifiedLog.appendAsLeader / appendAsFollower).",
            ("role", "base_offset", "last_offset", "record_count", "bytes", "batch_leader_epoch",
             "batch_checksum", "leo"),
        ),
        EventType(
            FETCH,
            "A follower sent a FetchRequest for this partition (AbstractFetcherThread.maybeFetch). "
            "`leader_epoch` is the CurrentLeaderEpoch sent.",
            ("leader_id", "fetcher_id", "fetch_offset"),
        ),
        EventType(
            FETCH_RESPONSE,
            "The follower processed the partition's fetch response "
            "(AbstractFetcherThread.processFetchRequest); when the whole request failed (leader.fetch threw), "
            "each partition it carried whose answer the thread would have processed gets the request's error "
            "(NETWORK_EXCEPTION), its fetch offset and CurrentLeaderEpoch as sent, and no leader_hw.",
            ("leader_id", "fetcher_id", "fetch_offset", "error"),
            # Kafka logs a partition's fetch errors only (never a NONE response), not always with the offset or
            # the thread (0.9 printed no prefix).
            log_requires=("error",),
        ),
        EventType(
            EPOCH_REQUEST_RETRY,
            "The follower's OffsetsForLeaderEpoch request got an error for the partition other than "
            "FENCED_LEADER_EPOCH: the partition backs off (replica.fetch.backoff.ms) and asks again "
            "(AbstractFetcherThread.maybeTruncateToEpochEndOffsets: 'Retrying leaderEpoch request'). When the whole "
            "request failed (the leader unreachable), each partition gets UNKNOWN_SERVER_ERROR, Kafka's error for "
            "the IOException the send threw. "
            "`leader_epoch` is the CurrentLeaderEpoch sent. Since 1.8.",
            ("leader_id", "fetcher_id", "error"),
            # The line names the partition and the error; the thread's prefix (0.11+) names the leader.
            log_requires=("error",),
        ),
        EventType(
            FOLLOWER_FETCH_STATE,
            "The leader updated its view of a follower after a fetch "
            "(Partition.updateFollowerFetchState / Replica.updateFetchStateOrThrow).",
            ("follower_id", "fetch_offset", "last_caught_up_time_ms", "leo"),
        ),
        EventType(
            HW_CHANGE,
            "A replica's high watermark moved (maybeIncrementLeaderHW on the leader, "
            "maybeUpdateHighWatermark on a follower; a follower's may move back). From broker logs (since 1.11): the "
            "HW a replica's partition starts with in a broker process (Partition.createLogIfNotExists, from the HW "
            "checkpoint), without role or old HW.",
            ("role", "old_hw", "hw"),
            log_requires=("hw",),
        ),
        EventType(
            LOG_START_OFFSET_CHANGE,
            "A replica's log start offset moved (retention, DeleteRecords, leader offset increment, a truncation "
            "below it; or, at a restart, back to records still on disk that a raise since the last checkpoint had "
            "hidden: reason log_load).",
            ("role", "old_log_start_offset", "log_start_offset"),
            log_requires=("log_start_offset",),
        ),
        EventType(
            TRUNCATION,
            "A replica truncated its log (UnifiedLog.truncateTo / truncateFullyAndStartAt).",
            ("old_leo", "truncate_offset", "reason", "hw"),
            log_requires=("truncate_offset",),
        ),
        EventType(
            ISR_CHANGE,
            "An ISR change was proposed by the leader, committed, or rejected (AlterPartition). "
            "`isr` is the proposed / committed ISR.",
            ("action", "old_isr", "isr", "isr_state"),
            log_requires=("action", "isr_state"),
        ),
        EventType(
            PRODUCE_ACK,
            "The leader answered a produce request (ReplicaManager.appendRecords + DelayedProduce). From broker "
            "logs only the refusals Kafka logs (an ERROR line per batch, e.g. NOT_ENOUGH_REPLICAS), without the "
            "batch, and the acks where the error implies it.",
            ("acks", "error"),
            log_requires=("error",),
        ),
        EventType(
            FETCHER_CHANGE,
            "A fetcher thread was given or lost partitions "
            "(AbstractFetcherManager.addFetcherForPartitions / removeFetcherForPartitions).",
            ("action", "fetcher_id", "leader_id", "partitions"),
            partition_scoped=False,
        ),
        EventType(
            QUOTA_THROTTLE,
            "Replication traffic of a throttled replica was held back by the quota (KIP-73).",
            ("role", "follower_id", "bytes", "measured_rate", "quota_bound"),
        ),
        EventType(
            BROKER_LIFECYCLE,
            "A broker started, crashed, restarted or began a controlled shutdown. Broker logs give start, "
            "controlled_shutdown, shutdown, and (since 1.12) a crash read from the next start's log recovery (no "
            "clean shutdown file), reason `unclean_start`, 1 ms after the crashed process's last line: it went down "
            "at some time between then and its next start.",
            ("action",),
            partition_scoped=False,
            log_requires=("action",),
        ),
        EventType(
            LEADER_ELECTION,
            "The controller elected a leader (clean from the ISR, from the eligible leader replicas when the ISR is "
            "empty, or unclean). `broker_id` is the controller (read from a new leader's KIP-704 RECOVERING line, "
            "where no controller line tells of the election or bronze held that line first: that leader, and "
            "`ts_ms` its time).",
            ("action", "partition_epoch", "isr", "replicas"),
            # Kafka logs only unclean elections (and, KRaft, elections from the ELR) at INFO, naming the new leader
            # (the ISR it forces is [leader]).
            log_requires=("action", "isr"),
        ),
        EventType(
            PARTITION_CHANGE,
            "The controller committed a change of a partition that elected no leader (a KRaft "
            "PartitionChangeRecord: an AlterPartition, a broker fenced, shutting down or back from an unclean "
            "shutdown, a reassignment step): `isr`, `elr` and `replicas` after it, `leader_id` the leader in force "
            "(absent when offline), `reason` what caused it. Emitted in runs with eligible leader replicas (KIP-966), "
            "whose ELR changes between elections nothing else records. Since 1.6.",
            ("partition_epoch", "isr", "elr", "replicas", "reason"),
        ),
        EventType(
            BROKER_CONFIG,
            "The replication configuration in force on a broker (emitted at start and on change).",
            ("config",),
            partition_scoped=False,
        ),
        EventType(
            BROKER_FAULT,
            "The simulator's fault injector applied a fault to this broker that Kafka itself records nowhere (its "
            "logs show only the consequences): a stop-the-world GC pause or a stalled log disk for `duration_ms` "
            "(only to a running broker: a restart ends both), or a network partition that cuts the broker's links "
            "to `peers` in `direction`, and the heal that restores them (one event on every broker on either "
            "side of the cut, each seen from that broker; the controller is a peer only). Crashes, restarts and "
            "controlled shutdowns are broker_lifecycle events. Engine only. Since 1.9.",
            ("action",),
            partition_scoped=False,
        ),
        EventType(
            LOG_LOAD,
            "A broker loaded a replica's log from its log directory (LogManager.loadLogs at startup, after recovering "
            "the unflushed segments when the last shutdown was not clean; up to Kafka 2.5 the same line for a log it "
            "creates empty): the log start offset and LEO it found on disk. A crash's lost tail shows here as an LEO "
            "below the one the replica had. Broker logs only: the engine records a crash's recovery at the crash "
            "(`truncation` and `hw_change` of its disk). Since 1.10.",
            ("log_start_offset", "leo"),
            # 0.9-0.10 print no log start offset (Kafka had none before 0.11).
            log_requires=("leo",),
        ),
    )
}


# --- columns -----------------------------------------------------------------------------------

# Nested fields are nullable: Spark cannot cast a nullable nested value to a non-nullable one,
# so declaring them required would only make every write fail; validation checks them instead.
INT_LIST = pa.list_(pa.field("element", pa.int32()))

OUT_OF_SYNC_REPLICA = pa.struct(
    [
        pa.field("replica_id", pa.int32()),
        pa.field("leo", pa.int64()),
        pa.field("last_caught_up_time_ms", pa.int64()),
    ]
)

TOPIC_PARTITION_OFFSET = pa.struct(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("fetch_offset", pa.int64()),
    ]
)


@dataclass(frozen=True)
class Column:
    """One column of the event table: type, constraints, and documentation."""

    name: str
    type: pa.DataType
    doc: str
    unit: str = ""
    required: bool = False
    used_by: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    non_negative: bool = False
    allowed_by_type: dict[str, tuple[str, ...]] = field(default_factory=dict)
    minimum: int | None = None
    """A lower bound other than 0 (`non_negative`): -1 for a broker id where Kafka's -1 means "none"."""


ENVELOPE: tuple[Column, ...] = (
    Column("schema_version", pa.string(), "Schema version 'MAJOR.MINOR' the writer used.", required=True),
    Column("source", pa.string(), "Who produced the event.", required=True, allowed=(ENGINE_SOURCE, KAFKA_LOG_SOURCE)),
    Column("run_id", pa.string(), "One simulation run, or one ingested set of cluster logs.", required=True),
    Column("event_id", pa.int64(), "Unique within a run; increases in emission order.", required=True,
           non_negative=True),
    Column("ts_ms", pa.int64(), "When the event happened (virtual clock for the engine).", "ms since epoch",
           required=True, non_negative=True),
    Column("broker_id", pa.int32(), "Broker that emitted the event (for leader_election: the controller, or the "
           "new leader whose log line tells of it). "
           "Required for source=engine; real logs do not always name it.", non_negative=True),
    Column("event_type", pa.string(), "What happened; one of the event types below.", required=True,
           allowed=tuple(EVENT_TYPES)),
    Column("topic", pa.string(), "Topic; required for partition-scoped event types."),
    Column("partition", pa.int32(), "Partition index; required for partition-scoped event types.",
           non_negative=True),
    Column("leader_epoch", pa.int32(), "Leader epoch the emitting broker had for the partition at the time.",
           non_negative=True),
)

PAYLOAD: tuple[Column, ...] = (
    Column("action", pa.string(), "Sub-kind of the event.",
           used_by=(LEADERSHIP_CHANGE, ISR_CHANGE, FETCHER_CHANGE, BROKER_LIFECYCLE, LEADER_ELECTION, BROKER_FAULT),
           allowed_by_type={
               LEADERSHIP_CHANGE: ("become_leader", "become_follower"),
               ISR_CHANGE: ("shrink", "expand", "update"),
               FETCHER_CHANGE: ("added", "removed"),
               BROKER_LIFECYCLE: ("start", "crash", "restart", "controlled_shutdown", "shutdown"),
               LEADER_ELECTION: ("clean", "unclean", "controlled_shutdown", "preferred", "offline", "elr"),
               BROKER_FAULT: ("gc_pause", "disk_stall", "network_partition", "network_heal"),
           }),
    Column("role", pa.string(), "Role of the emitting replica (for quota_throttle: which side throttled).",
           used_by=(APPEND, HW_CHANGE, LOG_START_OFFSET_CHANGE, TRUNCATION, QUOTA_THROTTLE),
           allowed=("leader", "follower")),
    Column("leader_id", pa.int32(), "The partition leader (fetch: the broker fetched from; fetcher_change: "
           "the fetcher's source broker; leader_election: the new leader, absent when offline; become_follower: -1 "
           "when the partition has no leader, as Kafka's LeaderAndIsr says it).",
           used_by=(LEADERSHIP_CHANGE, FETCH, FETCH_RESPONSE, FETCHER_CHANGE, LEADER_ELECTION, PARTITION_CHANGE,
                    EPOCH_REQUEST_RETRY),
           minimum=-1),
    Column("partition_epoch", pa.int32(), "Partition epoch (KRaft) / zkVersion after the change.",
           used_by=(LEADERSHIP_CHANGE, ISR_CHANGE, LEADER_ELECTION, PARTITION_CHANGE), non_negative=True),
    Column("isr", INT_LIST, "ISR: at a leadership change / election, the new ISR; for isr_change the "
           "proposed (or committed) ISR; for partition_change the ISR after it.",
           used_by=(LEADERSHIP_CHANGE, ISR_CHANGE, LEADER_ELECTION, PARTITION_CHANGE)),
    Column("old_isr", INT_LIST, "Committed ISR before the change.", used_by=(ISR_CHANGE,)),
    Column("replicas", INT_LIST, "Assigned replicas. On an isr_change, a sitting leader's registration in its own "
           "epoch (committed update, reason leader_and_isr: KRaft keeps the leader epoch when a reassignment adds "
           "or reorders replicas); since 1.7.",
           used_by=(LEADERSHIP_CHANGE, LEADER_ELECTION, PARTITION_CHANGE, ISR_CHANGE)),
    Column("adding_replicas", INT_LIST, "Replicas an ongoing reassignment is adding (LeaderAndIsr "
           "addingReplicas, KIP-455); absent when none. Kafka's replication factor excludes them. Since 1.1 "
           "(isr_change: 1.7).",
           used_by=(LEADERSHIP_CHANGE, LEADER_ELECTION, PARTITION_CHANGE, ISR_CHANGE)),
    Column("removing_replicas", INT_LIST, "Replicas an ongoing reassignment is removing (LeaderAndIsr "
           "removingReplicas); absent when none. Since 1.1 (isr_change: 1.7).",
           used_by=(LEADERSHIP_CHANGE, LEADER_ELECTION, PARTITION_CHANGE, ISR_CHANGE)),
    Column("elr", INT_LIST, "Eligible leader replicas after the election or partition change (KIP-966, Kafka 4.0+ with "
           "eligible.leader.replicas.version=1): replicas that left an ISR below min ISR and still hold every "
           "committed record; an `elr` election took its leader from them. Absent when the cluster does not run "
           "ELR, and from a controller's log line that does not show it changing. Since 1.5.",
           used_by=(LEADER_ELECTION, PARTITION_CHANGE)),
    Column("topic_id", pa.string(), "Kafka's topic id (KIP-516: a UUID, printed as 22 URL-safe base64 "
           "characters) where a broker log line prints it: a 3.3+ leader or follower line ('Leader t-3 with topic "
           "id Some(<id>) ...'), the sitting leader's 'Skipped the become-leader state change for t-3 with topic "
           "id ...' (an ISR commit), a KRaft controller's election line. Null from the engine, which has no topic "
           "ids. It tells a topic from a deleted and re-created one of the same name, and names the topic of a "
           "later batch's controller line that gives only the id. Since 1.3.",
           used_by=(LEADERSHIP_CHANGE, LEADER_ELECTION, ISR_CHANGE)),
    Column("base_offset", pa.int64(), "First offset of the batch.", "offset",
           used_by=(APPEND, PRODUCE_ACK), non_negative=True),
    Column("last_offset", pa.int64(), "Last offset of the batch (inclusive; >= base_offset).", "offset",
           used_by=(APPEND, PRODUCE_ACK), non_negative=True),
    Column("record_count", pa.int32(), "Records in the batch / in the fetched data's whole batches.", "records",
           used_by=(APPEND, FETCH_RESPONSE), non_negative=True),
    Column("bytes", pa.int64(), "Size of the batch / fetched data (its whole batches and the start of one the "
           "leader's byte range cut) / throttled data.", "bytes",
           used_by=(APPEND, FETCH_RESPONSE, QUOTA_THROTTLE), non_negative=True),
    Column("batch_leader_epoch", pa.int32(), "partitionLeaderEpoch stamped in the batch.",
           used_by=(APPEND,), non_negative=True),
    Column("batch_checksum", pa.int64(), "Identity of the batch's content (CRC32C-style, unsigned); the same "
           "batch has the same checksum on every replica.", used_by=(APPEND, PRODUCE_ACK), non_negative=True),
    Column("leo", pa.int64(), "Log end offset (exclusive): after the append, at the leadership change, as the log "
           "was loaded, or the leader's LEO when it recorded a follower's fetch state.", "offset",
           used_by=(LEADERSHIP_CHANGE, APPEND, FOLLOWER_FETCH_STATE, LOG_LOAD), non_negative=True),
    Column("hw", pa.int64(), "High watermark (exclusive): the new HW, or the HW at the moment.", "offset",
           used_by=(LEADERSHIP_CHANGE, HW_CHANGE, TRUNCATION), non_negative=True),
    Column("old_hw", pa.int64(), "High watermark before the change.", "offset", used_by=(HW_CHANGE,),
           non_negative=True),
    Column("log_start_offset", pa.int64(), "Log start offset after the change, or as the log was loaded.",
           "offset", used_by=(LOG_START_OFFSET_CHANGE, LOG_LOAD), non_negative=True),
    Column("old_log_start_offset", pa.int64(), "Log start offset before the change.", "offset",
           used_by=(LOG_START_OFFSET_CHANGE,), non_negative=True),
    Column("fetcher_id", pa.int32(), "Fetcher thread id (hash of topic and partition modulo "
           "num.replica.fetchers).", used_by=(FETCH, FETCH_RESPONSE, FETCHER_CHANGE, EPOCH_REQUEST_RETRY),
           non_negative=True),
    Column("fetch_offset", pa.int64(), "Offset fetched from; on the leader's follower_fetch_state it is the "
           "leader's notion of the follower's LEO.", "offset",
           used_by=(FETCH, FETCH_RESPONSE, FOLLOWER_FETCH_STATE), non_negative=True),
    Column("last_fetched_epoch", pa.int32(), "LastFetchedEpoch sent with the fetch (fetch v12+).",
           used_by=(FETCH,), non_negative=True),
    Column("error", pa.string(), "Kafka error name ('NONE' on success), e.g. OFFSET_OUT_OF_RANGE, "
           "NOT_ENOUGH_REPLICAS; for a rejected isr_change the AlterPartition error; for epoch_request_retry the "
           "OffsetsForLeaderEpoch answer's.",
           used_by=(FETCH_RESPONSE, PRODUCE_ACK, ISR_CHANGE, EPOCH_REQUEST_RETRY)),
    Column("leader_hw", pa.int64(), "HighWatermark in the fetch response (the leader's HW before this "
           "fetch's own update).", "offset", used_by=(FETCH_RESPONSE,), non_negative=True),
    Column("leader_log_start_offset", pa.int64(), "LogStartOffset in the fetch response.", "offset",
           used_by=(FETCH_RESPONSE,), non_negative=True),
    Column("diverging_epoch", pa.int32(), "DivergingEpoch.epoch in the fetch response, if any.",
           used_by=(FETCH_RESPONSE,), non_negative=True),
    Column("diverging_end_offset", pa.int64(), "DivergingEpoch.endOffset in the fetch response, if any.",
           "offset", used_by=(FETCH_RESPONSE,), non_negative=True),
    Column("response_received_ms", pa.int64(), "When the follower received the fetch response this partition "
           "came in; `ts_ms` is when the partition was processed, later when the fetcher blocked on a "
           "ListOffsets for an earlier partition of the same response (fetchOffsetAndTruncate). Since 1.2.",
           "ms since epoch", used_by=(FETCH_RESPONSE,), non_negative=True),
    Column("follower_id", pa.int32(), "The follower concerned (follower_fetch_state; quota_throttle: the "
           "throttled replica).", used_by=(FOLLOWER_FETCH_STATE, QUOTA_THROTTLE), non_negative=True),
    Column("last_caught_up_time_ms", pa.int64(), "The leader's lastCaughtUpTimeMs for the follower.",
           "ms since epoch", used_by=(FOLLOWER_FETCH_STATE,), non_negative=True),
    Column("old_leo", pa.int64(), "Log end offset before the truncation.", "offset", used_by=(TRUNCATION,),
           non_negative=True),
    Column("truncate_offset", pa.int64(), "Offset truncated to (the new LEO).", "offset",
           used_by=(TRUNCATION,), non_negative=True),
    Column("reason", pa.string(), "Why: truncation reason; ISR change reason; election or partition change "
           "reason; what moved a log start offset (Kafka's LogStartOffsetIncrementReason: segment_deletion by "
           "retention, leader_offset_increment on a follower, client_record_deletion (DeleteRecords), "
           "snapshot_generated; or truncation, a truncation below it or truncateFullyAndStartAt; or, since 1.13, "
           "log_load, the start a restart loaded, the larger of its log-start-offset-checkpoint and its first "
           "segment's base, which may be below the start it had; since 1.4, null from a log line that does not "
           "say); how a crash was read (unclean_start: from broker logs at the next "
           "start, dated after the crashed process's last line; since 1.12).",
           used_by=(TRUNCATION, ISR_CHANGE, LEADER_ELECTION, LOG_START_OFFSET_CHANGE, PARTITION_CHANGE,
                    BROKER_LIFECYCLE),
           allowed_by_type={
               TRUNCATION: ("high_watermark", "leader_epoch", "diverging_epoch", "out_of_range", "full"),
               LOG_START_OFFSET_CHANGE: ("segment_deletion", "leader_offset_increment", "client_record_deletion",
                                         "snapshot_generated", "truncation", "log_load"),
               PARTITION_CHANGE: ("alter_partition", "session_timeout", "controlled_shutdown", "broker_reregistered",
                                  "unclean_shutdown", "reassignment"),
               BROKER_LIFECYCLE: ("unclean_start",),
           }),
    Column("isr_state", pa.string(), "State of the ISR change.", used_by=(ISR_CHANGE,),
           allowed=("proposed", "committed", "rejected")),
    Column("out_of_sync_replicas", pa.list_(pa.field("element", OUT_OF_SYNC_REPLICA)),
           "For a shrink: the replicas removed, with their LEO and lastCaughtUpTimeMs as the leader saw them.",
           used_by=(ISR_CHANGE,)),
    Column("acks", pa.int8(), "acks of the produce request: -1 (all), 0 or 1.", used_by=(PRODUCE_ACK,)),
    Column("partitions", pa.list_(pa.field("element", TOPIC_PARTITION_OFFSET)),
           "Partitions added to / removed from the fetcher (with the initial fetch offset when added).",
           used_by=(FETCHER_CHANGE,)),
    Column("measured_rate", pa.float64(), "Measured replication rate over the quota windows.", "bytes/s",
           used_by=(QUOTA_THROTTLE,)),
    Column("quota_bound", pa.float64(), "The throttled-rate bound in force.", "bytes/s",
           used_by=(QUOTA_THROTTLE,)),
    Column("config", pa.map_(pa.string(), pa.string()), "Replication configs in force (name -> value).",
           used_by=(BROKER_CONFIG,)),
    Column("duration_ms", pa.int64(), "How long the fault lasts: a gc_pause or disk_stall, or a network_partition "
           "scheduled with its heal (which is also an event); null for a partition that a later network_heal "
           "ends. Since 1.9.", "ms", used_by=(BROKER_FAULT,), non_negative=True),
    Column("peers", INT_LIST, "Nodes on the other side of a network_partition or network_heal: broker ids, and "
           "the controller's node id (scenario cluster.controller_id, 1000 by default); null for a heal of every "
           "link. Since 1.9.", used_by=(BROKER_FAULT,)),
    Column("direction", pa.string(), "Which of the broker's links to `peers` the partition cuts (or the heal "
           "restores): outbound (what it sends them is lost: a one-way partition from it), inbound (what they "
           "send it is lost), both. Since 1.9.", used_by=(BROKER_FAULT,), allowed=("outbound", "inbound", "both")),
)

COLUMNS: tuple[Column, ...] = ENVELOPE + PAYLOAD
COLUMN_BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
ENVELOPE_REQUIRED: tuple[str, ...] = tuple(c.name for c in ENVELOPE if c.required)
ACKS_ALLOWED: tuple[int, ...] = (-1, 0, 1)


def _check_catalogue() -> None:
    # Keep the catalogue honest at import: every required payload column must list the type.
    for et in EVENT_TYPES.values():
        for name in et.requires:
            col = COLUMN_BY_NAME[name]
            if et.name not in col.used_by:
                raise AssertionError(f"{et.name} requires {name} but {name}.used_by omits it")
        if not set(et.log_requires or ()) <= set(et.requires):
            raise AssertionError(f"{et.name}: log_requires must be a subset of requires")


_check_catalogue()


def _arrow_field(c: Column) -> pa.Field:
    return pa.field(c.name, c.type, nullable=not c.required, metadata={"doc": c.doc})


EVENT_SCHEMA: pa.Schema = pa.schema(
    [_arrow_field(c) for c in COLUMNS], metadata={"schema_version": SCHEMA_VERSION}
)
"""Arrow schema of one event as the engine writes it (landing files)."""

LINEAGE: tuple[Column, ...] = (
    Column("_source_file", pa.string(), "Landing file the event was read from.", required=True),
    Column("_source_line", pa.int64(), "1-based line (JSON Lines) or row (Parquet) in that file.",
           required=True),
    Column("_ingest_batch", pa.string(), "Ingest batch that committed the event.", required=True),
)

BRONZE_EVENTS_SCHEMA: pa.Schema = pa.schema(
    [_arrow_field(c) for c in COLUMNS + LINEAGE], metadata={"schema_version": SCHEMA_VERSION}
)
"""Arrow schema of `bronze/replication_events`: the event columns plus lineage."""

BRONZE_EVENTS_PARTITION_BY: tuple[str, ...] = ("run_id",)

QUARANTINE_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("_source_file", pa.string(), nullable=False, metadata={"doc": "Landing file."}),
        pa.field("_source_line", pa.int64(), metadata={"doc": "1-based line / row; null if unknown."}),
        pa.field("raw", pa.string(), metadata={"doc": "The raw line, or the raw row as JSON."}),
        pa.field("reason", pa.string(), nullable=False, metadata={"doc": "Why it was not kept."}),
        pa.field("reason_code", pa.string(), nullable=False,
                 metadata={"doc": "Machine-readable class: malformed_json, unreadable_file, invalid_value, "
                                  "duplicate, ..."}),
        pa.field("run_id", pa.string(), metadata={"doc": "run_id if it could be read."}),
        pa.field("event_id", pa.int64(), metadata={"doc": "event_id if it could be read."}),
        pa.field("_ingest_batch", pa.string(), nullable=False, metadata={"doc": "Ingest batch."}),
    ],
    metadata={"schema_version": SCHEMA_VERSION},
)
"""Arrow schema of `bronze/quarantine`: every record that was read but not kept, and why."""


def payload_problems(ev: dict) -> list[str]:
    """What an event dict breaks of its type's rules: required payload columns, topic/partition for a
    partition-scoped type, allowed values, non-negative numbers (envelope presence is not checked)."""
    et = EVENT_TYPES[ev["event_type"]]
    problems = [f"{et.name} without {name}" for name in et.required_for(ev.get("source")) if ev.get(name) is None]
    if et.partition_scoped and (ev.get("topic") is None or ev.get("partition") is None):
        problems.append(f"{et.name} without topic/partition")
    for name, value in ev.items():
        if value is None:
            continue
        col = COLUMN_BY_NAME[name]
        allowed = col.allowed_by_type.get(et.name, col.allowed)
        if allowed and value not in allowed:
            problems.append(f"{name}={value!r} not in {allowed} ({et.name})")
        if col.non_negative and value < 0:
            problems.append(f"{name}={value!r} negative ({et.name})")
        if col.minimum is not None and value < col.minimum:
            problems.append(f"{name}={value!r} below {col.minimum} ({et.name})")
    return problems
