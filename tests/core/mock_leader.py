"""A leader for fetcher tests, like Kafka's `MockLeaderEndPoint`, but answering with the real rules.

The leader's partitions are real `Log`s (real `LeaderEpochCache`), so OffsetsForLeaderEpoch answers,
DivergingEpoch checks (reference §2.2 step 4) and reads follow the engine's rules rather than the
Kafka mock's shortcuts (reference §7: re-derive intermediate offsets with the real rules). Like the
Kafka mock it returns at most `batches_per_fetch` (default one) batch per partition per fetch and
lets a test set the leader HW directly, inject errors and count requests.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from replication_core.config import ReplicationConfig
from replication_core.errors import Errors, KafkaStorageError
from replication_core.event_log import EventLog
from replication_core.fetcher import ReplicaFetcherThread, WorkResult
from replication_core.leader_endpoint import (
    LATEST,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from replication_core.log import Log, LogAppendInfo, RecordBatch
from replication_core.partition_fetch_state import (
    BrokerEndPoint,
    EpochEndOffset,
    FailedPartitions,
    InitialFetchState,
    PartitionFetchState,
    TopicPartition,
)
from replication_core.quota import ReplicationQuotaManager
from replication_core.truncation import TruncationProtocol

RECORD_BYTES = 10
LEADER_ID = 1
FOLLOWER_ID = 2
TP0 = TopicPartition("topic", 0)


def mk_batch(base_offset: int, leader_epoch: int, records: int = 1, tag: str = "") -> RecordBatch:
    """Kafka test `mkBatch(baseOffset, leaderEpoch, records...)`: identity depends on offset and epoch."""
    checksum = zlib.crc32(f"{base_offset}/{leader_epoch}/{records}/{tag}".encode())
    return RecordBatch(base_offset, base_offset + records - 1, leader_epoch, records, records * RECORD_BYTES,
                       checksum)


def seed(start: int, count: int, leader_epoch: int) -> list[RecordBatch]:
    """`count` single-record batches from `start` at `leader_epoch` (PartitionTest `seedLogData`)."""
    return [mk_batch(o, leader_epoch) for o in range(start, start + count)]


def log_signature(log: Log) -> list[tuple[int, int, int, int]]:
    """What two logs must agree on to be 'equal': (base, last, epoch, checksum) per batch."""
    return [(b.base_offset, b.last_offset, b.leader_epoch, b.checksum) for b in log.batches]


class InstrumentedLog(Log):
    """A follower log counting truncations / appends, failing with `KafkaStorageError` on demand."""

    def __init__(self, topic: str = "t", partition: int = 0, broker_id: int = 0, *,
                 log_start_offset: int = 0, events: EventLog | None = None) -> None:
        super().__init__(topic, partition, broker_id, log_start_offset=log_start_offset, events=events)
        self.failing_append = False
        self.failing_truncate = False
        self.truncate_calls: list[int] = []
        self.append_calls = 0

    def append_as_follower(self, batches: Sequence[RecordBatch], now_ms: int = 0) -> LogAppendInfo:
        """Count, and raise while `failing_append`."""
        self.append_calls += 1
        if self.failing_append:
            raise KafkaStorageError("disk failure during append")
        return super().append_as_follower(batches, now_ms)

    def truncate_to(self, target_offset: int, now_ms: int = 0, reason: str = "diverging_epoch",
                    role: str = "follower") -> bool:
        """Count, and raise while `failing_truncate`."""
        self.truncate_calls.append(target_offset)
        if self.failing_truncate:
            raise KafkaStorageError("disk failure during truncation")
        return super().truncate_to(target_offset, now_ms, reason, role)


def mk_log(batches: Iterable[RecordBatch], hw: int | None = None, log_start_offset: int | None = None,
           tp: TopicPartition = TP0, broker_id: int = FOLLOWER_ID) -> InstrumentedLog:
    """A log holding `batches` (offsets and epochs as given) with high watermark `hw` (default 0)."""
    batches = list(batches)
    start = log_start_offset if log_start_offset is not None else (batches[0].base_offset if batches else 0)
    log = InstrumentedLog(tp.topic, tp.partition, broker_id, log_start_offset=start)
    if batches:
        log.append_as_follower(batches)
    log.update_high_watermark(hw if hw is not None else start)
    log.append_calls = 0
    return log


@dataclass
class LeaderState:
    """Kafka test `PartitionState(log, leaderEpoch, highWatermark)` on the leader."""

    log: Log
    leader_epoch: int

    def __post_init__(self) -> None:
        self.become_leader(self.leader_epoch)

    def become_leader(self, epoch: int) -> None:
        """Set the leader epoch; a new epoch is cached at the LEO as `Partition.makeLeader` does."""
        self.leader_epoch = epoch
        latest = self.log.latest_epoch
        if latest is None or epoch > latest:
            self.log.maybe_assign_epoch_start_offset(epoch, self.log.log_end_offset)

    def set_epoch_without_cache(self, epoch: int) -> None:
        """Change the epoch only (a leader that moves back, as in the UNKNOWN_LEADER_EPOCH tests)."""
        self.leader_epoch = epoch


@dataclass
class MockLeaderEndPoint:
    """Kafka `MockLeaderEndPoint`: answers fetch / OffsetsForLeaderEpoch / ListOffsets from `partitions`."""

    partitions: dict[TopicPartition, LeaderState] = field(default_factory=dict)
    batches_per_fetch: int = 1
    fetch_errors: dict[TopicPartition, str] = field(default_factory=dict)
    epoch_errors: dict[TopicPartition, str] = field(default_factory=dict)
    list_offsets_errors: dict[TopicPartition, list[str | None]] = field(default_factory=dict)
    request_error: str | None = None
    epoch_request_error: str | None = None
    scripted_epoch_answers: dict[TopicPartition, list[EpochEndOffset]] = field(default_factory=dict)
    corrupt_next: set[TopicPartition] = field(default_factory=set)
    fetch_count: int = 0
    epoch_request_count: int = 0
    list_offsets_count: int = 0
    fetch_requests: list[FetchRequest] = field(default_factory=list)
    epoch_requests: list[OffsetsForLeaderEpochRequest] = field(default_factory=list)

    def set_leader(self, tp: TopicPartition, batches: Iterable[RecordBatch], leader_epoch: int, hw: int,
                   log_start_offset: int | None = None) -> LeaderState:
        """Install a leader partition holding `batches`, at `leader_epoch`, with HW `hw`."""
        log = mk_log(batches, None, log_start_offset, tp, LEADER_ID)
        state = LeaderState(log, leader_epoch)
        log.update_high_watermark(hw, role="leader")
        self.partitions[tp] = state
        return state

    def _check_epoch(self, tp: TopicPartition, current_epoch: int | None) -> str | None:
        state = self.partitions.get(tp)
        if state is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if current_epoch is not None:
            if current_epoch < state.leader_epoch:
                return Errors.FENCED_LEADER_EPOCH
            if current_epoch > state.leader_epoch:
                return Errors.UNKNOWN_LEADER_EPOCH
        return None

    def fetch(self, request: FetchRequest) -> FetchResponse:
        """`fetch`: per partition epoch check, divergence check, then at most `batches_per_fetch` batches."""
        self.fetch_count += 1
        self.fetch_requests.append(request)
        if self.request_error is not None:
            return FetchResponse({}, self.request_error)
        out: dict[TopicPartition, FetchPartitionResponse] = {}
        for tp, data in request.partitions.items():
            error = self.fetch_errors.get(tp) or self._check_epoch(tp, data.current_leader_epoch)
            if error is not None:
                out[tp] = FetchPartitionResponse(error)
                continue
            log = self.partitions[tp].log
            hw, lso = log.high_watermark, log.log_start_offset
            if data.last_fetched_epoch is not None:
                found = log.end_offset_for_epoch(data.last_fetched_epoch)
                if found is None or data.fetch_offset < lso:
                    out[tp] = FetchPartitionResponse(Errors.OFFSET_OUT_OF_RANGE)
                    continue
                epoch, end = found
                if epoch < data.last_fetched_epoch or end < data.fetch_offset:
                    out[tp] = FetchPartitionResponse(Errors.NONE, hw, lso, hw,
                                                     diverging_epoch=EpochEndOffset(Errors.NONE, epoch, end))
                    continue
            if data.fetch_offset < lso or data.fetch_offset > log.log_end_offset:
                out[tp] = FetchPartitionResponse(Errors.OFFSET_OUT_OF_RANGE)
                continue
            batches: list[RecordBatch] = []
            offset = data.fetch_offset
            while len(batches) < self.batches_per_fetch:
                got = log.read(offset, 1).batches  # max_bytes 1: exactly one whole batch (KIP-74)
                if not got:
                    break
                batches.append(got[0])
                offset = got[0].next_offset
            if tp in self.corrupt_next and batches:
                self.corrupt_next.discard(tp)
                b = batches[0]
                # A batch whose offsets run backwards fails follower validation (CorruptRecordException).
                batches = [b._replace(last_offset=b.base_offset - 1)]
            out[tp] = FetchPartitionResponse(Errors.NONE, hw, lso, hw, tuple(batches))
        return FetchResponse(out)

    def fetch_epoch_end_offsets(self, request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        """`fetchEpochEndOffsets`: the leader's `endOffsetForEpoch`; v0 answers carry no epoch."""
        self.epoch_request_count += 1
        self.epoch_requests.append(request)
        if self.epoch_request_error is not None:
            return OffsetsForLeaderEpochResponse({}, self.epoch_request_error)
        out: dict[TopicPartition, EpochEndOffset] = {}
        for tp, data in request.partitions.items():
            error = self.epoch_errors.get(tp) or self._check_epoch(tp, data.current_leader_epoch)
            if error is not None:
                out[tp] = EpochEndOffset(error)
                continue
            found = self.partitions[tp].log.end_offset_for_epoch(data.leader_epoch)
            epoch, end = found if found is not None else (-1, -1)
            out[tp] = EpochEndOffset(Errors.NONE, -1 if request.version == 0 else epoch, end)
        for tp, script in self.scripted_epoch_answers.items():
            # Scripted answers replace the computed ones, one per request; the last one repeats.
            out[tp] = script.pop(0) if len(script) > 1 else script[0]
        return OffsetsForLeaderEpochResponse(out)

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        """`fetchLatestOffset` (LEO) / `fetchEarliestOffset` (log start offset)."""
        self.list_offsets_count += 1
        queued = self.list_offsets_errors.get(request.tp)
        injected = queued.pop(0) if queued else None  # None in the queue = answer normally
        if injected is not None:
            return ListOffsetsResponse(injected)
        error = self._check_epoch(request.tp, request.current_leader_epoch)
        if error is not None:
            return ListOffsetsResponse(error)
        state = self.partitions[request.tp]
        log = state.log
        offset = log.log_end_offset if request.spec == LATEST else log.log_start_offset
        return ListOffsetsResponse(Errors.NONE, offset, state.leader_epoch)


@dataclass
class FollowerHarness:
    """A fetcher thread plus the follower's logs: Kafka's `MockFetcherThread` set-up."""

    fetcher: ReplicaFetcherThread
    logs: dict[TopicPartition, Log]
    leader: MockLeaderEndPoint
    events: EventLog
    now_ms: int = 0

    def add(self, tp: TopicPartition, log: Log, fetch_offset: int, leader_epoch: int) -> None:
        """`addPartitions(Map(tp -> initialFetchState(fetchOffset, leaderEpoch)))`."""
        self.logs[tp] = log
        if log.events is None:
            log.events = self.events  # the log emits append / truncation / hw_change itself
        self.fetcher.add_partitions({tp: InitialFetchState(BrokerEndPoint(LEADER_ID), leader_epoch,
                                                           fetch_offset)}, self.now_ms)

    def state(self, tp: TopicPartition) -> PartitionFetchState:
        """The fetch state of `tp`; fails the test if the fetcher does not hold it."""
        st = self.fetcher.fetch_state(tp)
        assert st is not None, f"{tp} is not in the fetcher"
        return st

    def do_work(self, advance_ms: int = 0) -> WorkResult:
        """One `doWork()`, optionally after advancing the virtual clock."""
        self.now_ms += advance_ms
        return self.fetcher.do_work(self.now_ms, self.leader)

    def converge(self, tp: TopicPartition, max_rounds: int = 50, step_ms: int = 0) -> int:
        """Run doWork until the follower log equals the leader's (Kafka `TestUtils.waitUntilTrue` loop)."""
        leader_log = self.leader.partitions[tp].log
        for i in range(max_rounds):
            if log_signature(self.logs[tp]) == log_signature(leader_log) and \
                    self.logs[tp].high_watermark == leader_log.high_watermark:
                return i
            self.do_work(step_ms)
        raise AssertionError(f"logs did not converge: follower {self.logs[tp].batches} "
                             f"leader {leader_log.batches}")


def make_harness(protocol: TruncationProtocol | str = TruncationProtocol.DIVERGING_EPOCH,
                 config: ReplicationConfig | None = None, leader: MockLeaderEndPoint | None = None, *,
                 quota: ReplicationQuotaManager | None = None,
                 on_hw_updated: Callable[[frozenset[TopicPartition]], None] | None = None) -> FollowerHarness:
    """A follower (broker 2) fetching from the mock leader (broker 1) with `protocol`."""
    logs: dict[TopicPartition, Log] = {}
    events = EventLog()

    def log_for(tp: TopicPartition) -> Log:
        """`replicaMgr.localLogOrException(tp)`."""
        if tp not in logs:
            raise KafkaStorageError(f"no local log for {tp}")
        return logs[tp]

    fetcher = ReplicaFetcherThread(FOLLOWER_ID, 0, BrokerEndPoint(LEADER_ID), config or ReplicationConfig(),
                                   log_for, FailedPartitions(), protocol=protocol, events=events,
                                   quota=quota, on_hw_updated=on_hw_updated)
    return FollowerHarness(fetcher, logs, leader or MockLeaderEndPoint(), events)
