"""Kafka error names and the exceptions the replication engine raises.

Mirrors `org.apache.kafka.common.protocol.Errors` (the wire error names that appear in fetch, produce and
AlterPartition responses and in the event schema's `error` column) and the `ApiException` subclasses the
broker throws internally. Every exception carries the `Errors` member it maps to, so a response builder can
do `error_for(exc)` exactly like Kafka's `Errors.forException`.
"""

from __future__ import annotations

from enum import StrEnum


class Errors(StrEnum):
    """Kafka protocol error names used by the replication paths (`org.apache.kafka.common.protocol.Errors`)."""

    NONE = "NONE"
    UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"
    OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
    CORRUPT_MESSAGE = "CORRUPT_MESSAGE"
    UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
    NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
    REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
    REPLICA_NOT_AVAILABLE = "REPLICA_NOT_AVAILABLE"
    NETWORK_EXCEPTION = "NETWORK_EXCEPTION"
    NOT_CONTROLLER = "NOT_CONTROLLER"
    INVALID_REQUIRED_ACKS = "INVALID_REQUIRED_ACKS"
    NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"
    KAFKA_STORAGE_ERROR = "KAFKA_STORAGE_ERROR"
    FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
    UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
    OFFSET_NOT_AVAILABLE = "OFFSET_NOT_AVAILABLE"
    STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
    INVALID_REQUEST = "INVALID_REQUEST"
    INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
    OPERATION_NOT_ATTEMPTED = "OPERATION_NOT_ATTEMPTED"
    INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
    NEW_LEADER_ELECTED = "NEW_LEADER_ELECTED"
    UNKNOWN_TOPIC_ID = "UNKNOWN_TOPIC_ID"
    INCONSISTENT_TOPIC_ID = "INCONSISTENT_TOPIC_ID"
    OFFSET_MOVED_TO_TIERED_STORAGE = "OFFSET_MOVED_TO_TIERED_STORAGE"
    RECORD_LIST_TOO_LARGE = "RECORD_LIST_TOO_LARGE"


class ReplogError(Exception):
    """Base of every engine exception; `error` is the wire error it maps to (`Errors.forException`)."""

    error: Errors = Errors.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(ReplogError):
    """`OffsetOutOfRangeException`: fetch offset below the log start offset or above the log end offset."""

    error = Errors.OFFSET_OUT_OF_RANGE


class NotLeaderOrFollowerError(ReplogError):
    """`NotLeaderOrFollowerException`: this broker does not lead (or host) the partition as asked."""

    error = Errors.NOT_LEADER_OR_FOLLOWER


class UnknownLeaderEpochError(ReplogError):
    """`UnknownLeaderEpochException`: the request's leader epoch is newer than the local one."""

    error = Errors.UNKNOWN_LEADER_EPOCH


class FencedLeaderEpochError(ReplogError):
    """`FencedLeaderEpochException`: the request's leader epoch is older than the local one."""

    error = Errors.FENCED_LEADER_EPOCH


class UnknownTopicOrPartitionError(ReplogError):
    """`UnknownTopicOrPartitionException`: the broker does not host the partition."""

    error = Errors.UNKNOWN_TOPIC_OR_PARTITION


class NotEnoughReplicasError(ReplogError):
    """`NotEnoughReplicasException`: acks=all produce while the committed ISR is below min.insync.replicas."""

    error = Errors.NOT_ENOUGH_REPLICAS


class OffsetNotAvailableError(ReplogError):
    """`OffsetNotAvailableException`: the leader HW lags the start of its epoch (KIP-207)."""

    error = Errors.OFFSET_NOT_AVAILABLE


class KafkaStorageError(ReplogError):
    """`KafkaStorageException`: the log directory is offline."""

    error = Errors.KAFKA_STORAGE_ERROR


class CorruptRecordError(ReplogError):
    """`CorruptRecordException` / `InvalidRecordException`: batches are malformed or out of order."""

    error = Errors.CORRUPT_MESSAGE


class RecordBatchTooLargeError(ReplogError):
    """`RecordBatchTooLargeException`: an append larger than the log's `segment.bytes` (`UnifiedLog.append`)."""

    error = Errors.RECORD_LIST_TOO_LARGE


class UnexpectedAppendOffsetError(ReplogError):
    """`UnexpectedAppendOffsetException`: a follower batch starts below the log end offset.

    `first_offset` / `last_offset` are the offending batch's range (Kafka uses them to decide whether an
    empty log may restart at the batch's base offset, `Partition.appendRecordsToFollowerOrFutureReplica`).
    """

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class OffsetMismatchError(ReplogError):
    """The `IllegalStateException("Offset mismatch ...")` of `ReplicaFetcherThread.processPartitionData`."""


class IllegalArgumentError(ReplogError, ValueError):
    """`IllegalArgumentException`, e.g. a high watermark above the log end offset."""


class IllegalStateError(ReplogError, RuntimeError):
    """`IllegalStateException`: a call that the current state does not allow."""


class OperationNotAttemptedError(ReplogError):
    """`OperationNotAttemptedException`: AlterPartition not enqueued (one already in flight for the partition)."""

    error = Errors.OPERATION_NOT_ATTEMPTED


def error_for(exc: BaseException) -> Errors:
    """The wire error for an exception (`Errors.forException`); unknown exceptions map to UNKNOWN_SERVER_ERROR."""
    if isinstance(exc, ReplogError):
        return exc.error
    return Errors.UNKNOWN_SERVER_ERROR
