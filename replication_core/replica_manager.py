"""The broker's replica manager: partitions by topic-partition, leadership changes, fetch and produce.

Mirrors `kafka.server.ReplicaManager` (reference §2.2, §2.6, §5) together with the broker side of
AlterPartition (`DefaultAlterPartitionManager`) and `DelayedProduce`. Sans-I/O: every method takes
`now_ms` and its request; answers are returned or, when they complete later (delayed fetch / produce),
put in outboxes the driver drains (`take_completed_fetches`, `take_completed_produces`,
`take_completed_produce_requests`), like etcd-raft's
`Ready`. Nothing here owns a clock, thread or socket; the driver calls `maybe_shrink_isr` every
`isr_expiration_interval_ms` (the `isr-expiration` task) and `tick` to expire parked requests.

Collaborators are interfaces, not imports of their implementations:
* fetchers: `become_leader_or_follower` returns the fetcher changes to make (`LeaderAndIsrResult`), and
  also applies them to an injected `FetcherControl` (`add_fetcher_for_partitions` /
  `remove_fetcher_for_partitions`, the `AbstractFetcherManager` methods) when one is given;
* controller: AlterPartition requests leave through `take_alter_partition_requests` (or an injected
  `AlterPartitionChannel`), and answers come back through `handle_alter_partition_response`.
The fetch / OffsetsForLeaderEpoch / ListOffsets messages are the fetcher's value types
(`replication_core.leader_endpoint`), so a follower's request can be handed to the leader unchanged.

Events: the `EventLog` given at construction is shared with every Partition and Log created here;
ReplicaManager itself adds `produce_ack` events.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from replication_core.config import ReplicationConfig, TruncationMode
from replication_core.delayed_fetch import (
    DelayedFetch,
    DelayedFetchPurgatory,
    can_respond_immediately,
)
from replication_core.errors import (
    Errors,
    NotLeaderOrFollowerError,
    ReplogError,
    UnknownTopicOrPartitionError,
)
from replication_core.event_log import EventLog
from replication_core.events import make_event
from replication_core.fetch_response_size import fetch_response_size, size_of_throttled_partitions
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
from replication_core.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from replication_core.log import DEFAULT_SEGMENT_BYTES, FetchIsolation, Log, RecordBatch, new_tuple
from replication_core.partition import (
    NO_LEADER,
    AlterPartitionRequest,
    BrokerMetadata,
    LeaderAndIsr,
    Partition,
    PartitionRegistration,
    StaticBrokerMetadata,
)
from replication_core.partition_fetch_state import BrokerEndPoint, EpochEndOffset, InitialFetchState, TopicPartition

NO_EPOCH = -1
"""`LeaderAndIsr.NoEpoch`."""
EPOCH_DURING_DELETE = -2
"""`LeaderAndIsr.EpochDuringDelete`."""
DEFAULT_PRODUCE_TIMEOUT_MS = 30000
"""Producer `request.timeout.ms` default, used for acks=all waits."""


# --- interfaces --------------------------------------------------------------------------------------

class FetcherControl(Protocol):
    """What ReplicaManager asks of the fetcher manager (`AbstractFetcherManager`)."""

    def add_fetcher_for_partitions(self, initial: Mapping[TopicPartition, InitialFetchState],
                                   now_ms: int) -> None:
        """`addFetcherForPartitions`."""
        ...

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition], now_ms: int) -> object:
        """`removeFetcherForPartitions`."""
        ...


class LeaderQuota(Protocol):
    """The leader-side replication quota (`ReplicationQuotaManager` as a `ReplicaQuota`, KIP-73)."""

    def is_throttled(self, topic: str, partition: int) -> bool:
        """`isThrottled(tp)`."""
        ...

    def throttles_any(self) -> bool:
        """False when `is_throttled` is False for every partition (lets hot paths skip the test)."""
        ...

    def is_quota_exceeded(self, now_ms: int) -> bool:
        """`isQuotaExceeded`."""
        ...

    def record(self, num_bytes: int, now_ms: int) -> None:
        """`record(bytes)`."""
        ...

    def emit_throttle(self, now_ms: int, topic: str, partition: int, leader_epoch: int | None,
                      follower_id: int, num_bytes: int) -> None:
        """Report traffic held back (`quota_throttle` event)."""
        ...


class AlterPartitionChannel(Protocol):
    """The controller side of AlterPartition (`NodeToControllerChannelManager`)."""

    def send_alter_partition(self, broker_id: int, requests: Sequence[AlterPartitionRequest],
                             now_ms: int) -> None:
        """Send one AlterPartition RPC carrying `requests`."""
        ...


# --- requests and results ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LeaderAndIsrRequest:
    """A LeaderAndIsr request / KRaft metadata delta for this broker's partitions."""

    controller_id: int
    controller_epoch: int
    partition_states: Mapping[TopicPartition, PartitionRegistration]


@dataclass(frozen=True)
class LeaderAndIsrResult:
    """What `become_leader_or_follower` did: per-partition errors and the fetcher changes to make
    (removals first, then additions, as `makeFollowers` does)."""

    errors: Mapping[TopicPartition, Errors]
    new_leaders: frozenset[TopicPartition] = frozenset()
    new_followers: frozenset[TopicPartition] = frozenset()
    fetchers_to_remove: frozenset[TopicPartition] = frozenset()
    fetchers_to_add: Mapping[TopicPartition, InitialFetchState] = field(default_factory=dict)


class StopReplicaResult(NamedTuple):
    """`stopReplicas` outcome for one partition."""

    error: Errors
    fetcher_removed: bool
    deleted: bool


class ProduceResult(NamedTuple):
    """The produce response for one partition (`PartitionResponse`)."""

    request_id: Hashable
    tp: TopicPartition
    acks: int
    error: Errors
    base_offset: int
    last_offset: int


class ProduceBatch(NamedTuple):
    """One partition's records in a produce request of several partitions (an `entriesPerPartition` entry)."""

    tp: TopicPartition
    record_count: int
    size_bytes: int
    checksum: int


class CompletedProduceRequest(NamedTuple):
    """A parked produce request of several partitions, answered: every partition's result, in request order."""

    request_id: Hashable
    results: list[ProduceResult]


class _ReadResult(NamedTuple):
    """What `_read_from_log` produced: responses plus the totals the immediate-answer test needs."""

    partitions: dict[TopicPartition, FetchPartitionResponse]
    hw_moved: list[TopicPartition]
    bytes_readable: int
    any_error: bool
    any_diverging: bool
    all_caught_up: bool


class CompletedFetch(NamedTuple):
    """A parked fetch answered later (early completion or expiry)."""

    request_id: Hashable
    response: FetchResponse


# --- AlterPartition manager ---------------------------------------------------------------------------

class AlterPartitionManager:
    """`DefaultAlterPartitionManager`: one outstanding item per partition, one RPC in flight per broker
    carrying every queued item; a second submit for a partition is refused (OPERATION_NOT_ATTEMPTED)."""

    def __init__(self) -> None:
        self._outstanding: dict[TopicPartition, AlterPartitionRequest] = {}
        self._inflight: set[TopicPartition] = set()
        self.rpcs_sent = 0

    def submit(self, request: AlterPartitionRequest) -> bool:
        """`submit`: False if an item for the partition is already outstanding."""
        tp = TopicPartition(request.topic, request.partition)
        if tp in self._outstanding:
            return False
        self._outstanding[tp] = request
        return True

    def take_batch(self) -> list[AlterPartitionRequest]:
        """`maybePropagateIsrChanges`: every outstanding item, if no RPC is in flight."""
        if self._inflight or not self._outstanding:
            return []
        self._inflight = set(self._outstanding)
        self.rpcs_sent += 1
        return list(self._outstanding.values())

    def on_response(self, request: AlterPartitionRequest) -> None:
        """The item's answer arrived: forget it (before the partition's callback may resubmit)."""
        tp = TopicPartition(request.topic, request.partition)
        if self._outstanding.get(tp) is request:
            del self._outstanding[tp]
        self._inflight.discard(tp)

    def on_rpc_failure(self) -> None:
        """The whole RPC failed (timeout, NOT_CONTROLLER): items stay queued and are resent."""
        self._inflight.clear()

    @property
    def outstanding(self) -> int:
        """Items submitted and not answered."""
        return len(self._outstanding)


@dataclass(eq=False)
class _DelayedProduce:
    """`DelayedProduce` for one partition of an acks=all request."""

    request_id: Hashable
    tp: TopicPartition
    required_offset: int
    deadline_ms: int
    base_offset: int
    last_offset: int
    checksum: int
    completed: bool = False
    request: _DelayedProduceRequest | None = None
    """The request of several partitions this partition belongs to (answered when all of them are), or None."""
    error: Errors = Errors.NONE
    """The partition's answer once `completed` (kept for its request's response)."""

    # Compiled (one per partition of an acks=all produce): the __init__ @dataclass generates runs interpreted.
    def __init__(self, request_id: Hashable, tp: TopicPartition, required_offset: int, deadline_ms: int,
                 base_offset: int, last_offset: int, checksum: int, completed: bool = False,
                 request: _DelayedProduceRequest | None = None) -> None:
        self.request_id = request_id
        self.tp = tp
        self.required_offset = required_offset
        self.deadline_ms = deadline_ms
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.checksum = checksum
        self.completed = completed
        self.request = request
        self.error = Errors.NONE


class _DelayedProduceRequest:
    """`DelayedProduce` of a request with several partitions: each partition's status is settled when its HW
    reaches the batch (or fails), and the one response goes when the last is settled or at the common timeout."""

    def __init__(self, request_id: Hashable, acks: int) -> None:
        self.request_id = request_id
        self.acks = acks
        # In request order: a partition answered at once (its result, not yet sent) or parked (its delayed produce).
        self.parts: list[ProduceResult | _DelayedProduce] = []
        self.checksums: list[int] = []
        # The leader epoch each partition's answer was settled in (-1: not hosted, or not settled yet).
        self.epochs: list[int] = []
        self.pending = 0


# --- the replica manager --------------------------------------------------------------------------------

class ReplicaManager:
    """`ReplicaManager`: hosts Partitions and routes leadership changes, fetches and produces to them."""

    def __init__(
        self,
        broker_id: int,
        config: ReplicationConfig,
        *,
        metadata: BrokerMetadata | None = None,
        events: EventLog | None = None,
        fetcher_control: FetcherControl | None = None,
        controller: AlterPartitionChannel | None = None,
        leader_quota: LeaderQuota | None = None,
        logs: Mapping[TopicPartition, Log] | None = None,
        endpoints: Mapping[int, BrokerEndPoint] | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.broker_id = broker_id
        self.segment_bytes = segment_bytes
        self.config = config
        self.metadata: BrokerMetadata = metadata if metadata is not None else StaticBrokerMetadata()
        self.events = events
        self.fetcher_control = fetcher_control
        self.controller = controller
        self.leader_quota = leader_quota
        self.controller_epoch = 0
        self.partitions: dict[TopicPartition, Partition] = {}
        # The last registration received per partition: this broker's metadata image (KRaft `MetadataImage`),
        # against which `become_leader_or_follower` decides what changed. A new ReplicaManager (a restarted
        # broker) starts empty, as a KRaft broker's first delta is against the empty image.
        self._image: dict[TopicPartition, PartitionRegistration] = {}
        # The partitions this broker's metadata cache holds (`MetadataCache.contains`): every partition state it
        # was sent, and every partition of the cluster once its metadata has caught up (`learn_partitions`).
        self._known: set[TopicPartition] = set()
        # Logs that survive a restart (the simulator's disks); used when a partition is first hosted.
        self._logs: dict[TopicPartition, Log] = dict(logs or {})
        self._endpoints = dict(endpoints or {})
        self.alter_partition_manager = AlterPartitionManager()
        self.fetch_purgatory = DelayedFetchPurgatory()
        self._produce_waiting: dict[TopicPartition, list[_DelayedProduce]] = {}
        self._produce_deadlines: list[tuple[int, int, _DelayedProduce]] = []
        self._seq = 0
        self._completed_fetches: list[CompletedFetch] = []
        self._completed_produces: list[ProduceResult] = []
        self._completed_produce_requests: list[CompletedProduceRequest] = []

    # --- partitions ---------------------------------------------------------------------------------

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        """`getPartition` (online partitions only)."""
        return self.partitions.get(tp)

    def get_partition_or_exception(self, tp: Hashable) -> Partition:
        """`getPartitionOrException`: the hosted partition, else the error `not_hosted_error` names."""
        p = self.partitions.get(tp)  # type: ignore[call-overload]
        if p is None:
            raise self._not_hosted(tp)  # type: ignore[arg-type]
        return p

    def learn_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """The metadata cache now holds these partitions (a KRaft broker's image after its initial catch-up, or the
        ZooKeeper era's UpdateMetadata): those this broker does not host are NOT_LEADER_OR_FOLLOWER."""
        self._known.update(tps)

    def not_hosted_error(self, tp: TopicPartition) -> Errors:
        """`getPartitionOrError` for a partition not hosted here: NOT_LEADER_OR_FOLLOWER when the metadata cache
        knows it ("this broker is no longer a replica of it", e.g. after a reassignment deleted the replica),
        else UNKNOWN_TOPIC_OR_PARTITION."""
        if tp in self._known:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.UNKNOWN_TOPIC_OR_PARTITION

    def _not_hosted(self, tp: TopicPartition) -> ReplogError:
        known = self.not_hosted_error(tp) is Errors.NOT_LEADER_OR_FOLLOWER
        return (NotLeaderOrFollowerError if known else UnknownTopicOrPartitionError)(
            f"Partition {tp} is not hosted on broker {self.broker_id}")

    def get_or_create_partition(self, tp: TopicPartition) -> Partition:
        """`getOrCreatePartition`: host the partition, reusing a surviving log if there is one."""
        p = self.partitions.get(tp)
        if p is None:
            log = self._logs.get(tp)
            if log is None:
                log = Log(tp.topic, tp.partition, self.broker_id, events=self.events, segment_bytes=self.segment_bytes)
                self._logs[tp] = log
            p = Partition(tp.topic, tp.partition, self.broker_id, self.config, log=log,
                          metadata=self.metadata, events=self.events)
            self.partitions[tp] = p
        return p

    def leader_partitions(self) -> list[Partition]:
        """Partitions this broker leads."""
        return [p for p in self.partitions.values() if p.is_leader]

    def checkpoint_high_watermarks(self) -> dict[TopicPartition, int]:
        """`checkpointHighWatermarks`: HW of every hosted log (the `replication-offset-checkpoint`)."""
        return {tp: p.log.high_watermark for tp, p in self.partitions.items()}

    def _endpoint(self, broker_id: int) -> BrokerEndPoint:
        return self._endpoints.get(broker_id) or BrokerEndPoint(broker_id)

    def initial_fetch_offset(self, log: Log) -> int:
        """`initialFetchOffset`: LEO with truncation-on-fetch (MV >= 2.7-IV1) and a known epoch, else HW."""
        if self.config.truncation_mode is TruncationMode.DIVERGING_EPOCH and log.latest_epoch is not None:
            return log.log_end_offset
        return log.high_watermark

    # --- leadership -----------------------------------------------------------------------------------

    def become_leader_or_follower(self, request: LeaderAndIsrRequest, now_ms: int,
                                  high_watermark_checkpoints: Mapping[TopicPartition, int] | None = None
                                  ) -> LeaderAndIsrResult:
        """Apply a metadata update for this broker's partitions, as KRaft's `ReplicaManager.applyDelta` ->
        `applyLocalLeadersDelta` / `applyLocalFollowersDelta` (the simulator's controller is KRaft-like;
        the name and the request shape are ZK's `becomeLeaderOrFollower`).

        A stale controller epoch rejects the request. Per partition, a registration reaches
        `Partition.make_leader` / `make_follower` iff it is a *change*: it differs from the last one this
        broker received (its metadata image). KRaft's `TopicDelta.localChanges` takes a partition whose
        partition epoch differs from the image's, and every controller change bumps the partition epoch;
        the simulator's controller also resends unchanged registrations (`_send_full_state`), which no
        KRaft delta would carry, so those are refused (STALE_CONTROLLER_EPOCH, as a same-epoch
        LeaderAndIsr). A change with the same leader epoch is applied even when its partition epoch only
        equals the Partition's: a successful AlterPartition answer advances the Partition's partition epoch
        before the metadata carrying it arrives, and `makeLeader` then commits the registration's ISR,
        abandoning any proposal made since (PartitionTest `testAlterIsrLeaderAndIsrRace`). A partition
        epoch below the Partition's (`makeLeader` / `makeFollower` would skip it) and an older leader epoch
        (a reordered ZK LeaderAndIsr; KRaft metadata never goes back) are refused as stale. Then
        `makeLeaders` (fetchers removed first) and `makeFollowers` (fetchers restarted for every partition
        whose leader epoch increased, KAFKA-7164)."""
        states = request.partition_states
        if request.controller_epoch < self.controller_epoch:
            return LeaderAndIsrResult({tp: Errors.STALE_CONTROLLER_EPOCH for tp in states})
        self.controller_epoch = request.controller_epoch
        errors: dict[TopicPartition, Errors] = {}
        to_lead: dict[TopicPartition, PartitionRegistration] = {}
        to_follow: dict[TopicPartition, PartitionRegistration] = {}
        image = self._image
        known = self._known
        for tp, st in states.items():
            known.add(tp)
            if self.broker_id not in st.replicas:
                errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            existing = self.partitions.get(tp)
            cur_epoch = existing.leader_epoch if existing is not None else -1
            cur_pe = existing.partition_epoch if existing is not None else -1
            if st.leader_epoch < cur_epoch or image.get(tp) == st:
                errors[tp] = Errors.STALE_CONTROLLER_EPOCH
                continue
            # A change: the image moves on even if the Partition skips it (KRaft publishes every delta).
            image[tp] = st
            if st.leader_epoch > cur_epoch or st.partition_epoch >= cur_pe:
                (to_lead if st.leader == self.broker_id else to_follow)[tp] = st
                errors[tp] = Errors.NONE
            else:
                errors[tp] = Errors.STALE_CONTROLLER_EPOCH
        checkpoints = high_watermark_checkpoints or {}
        new_leaders: set[TopicPartition] = set()
        removed: set[TopicPartition] = set()
        if to_lead:
            removed |= set(to_lead)
            if self.fetcher_control is not None:
                self.fetcher_control.remove_fetcher_for_partitions(list(to_lead), now_ms)
            for tp, st in to_lead.items():
                created = tp not in self.partitions
                p = self.get_or_create_partition(tp)
                old_hw = p.log.high_watermark
                # The checkpointed HW initialises a log only when it is first loaded (createLogIfNotExists).
                if p.make_leader(st, now_ms, checkpoints.get(tp) if created else None):
                    new_leaders.add(tp)
                if p.log.high_watermark != old_hw:
                    self._try_complete_delayed(tp, now_ms)
        new_followers: set[TopicPartition] = set()
        restart: list[TopicPartition] = []
        for tp, st in to_follow.items():
            created = tp not in self.partitions
            p = self.get_or_create_partition(tp)
            if created and tp in checkpoints:
                p.log.update_high_watermark(checkpoints[tp], now_ms)
            if p.make_follower(st, now_ms):
                new_followers.add(tp)
                restart.append(tp)
        to_add: dict[TopicPartition, InitialFetchState] = {}
        if restart:
            removed |= set(restart)
            if self.fetcher_control is not None:
                self.fetcher_control.remove_fetcher_for_partitions(restart, now_ms)
            for tp in restart:
                leader = to_follow[tp].leader
                if leader == NO_LEADER:
                    # "Unable to start fetching ... because it is not alive": an offline partition's
                    # follower fetches from nobody until an election names a leader (a new leader epoch).
                    continue
                p = self.partitions[tp]
                to_add[tp] = InitialFetchState(self._endpoint(leader), p.leader_epoch,
                                               self.initial_fetch_offset(p.log))
            if self.fetcher_control is not None and to_add:
                self.fetcher_control.add_fetcher_for_partitions(to_add, now_ms)
        for tp in to_follow:
            # completeDelayedFetchOrProduceRequests: parked leader-side requests now fail fast.
            self._try_complete_delayed(tp, now_ms)
        return LeaderAndIsrResult(errors, frozenset(new_leaders), frozenset(new_followers),
                                  frozenset(removed), to_add)

    def stop_replica(self, tp: TopicPartition, delete: bool, now_ms: int,
                     leader_epoch: int = NO_EPOCH, controller_epoch: int | None = None) -> StopReplicaResult:
        """`stopReplicas` for one partition: FENCED_LEADER_EPOCH unless the request epoch is newer (or
        -1 / -2); otherwise remove the fetcher, delete the partition and its log if `delete`, and
        complete parked requests."""
        if controller_epoch is not None and controller_epoch < self.controller_epoch:
            return StopReplicaResult(Errors.STALE_CONTROLLER_EPOCH, False, False)
        p = self.partitions.get(tp)
        if p is not None and leader_epoch not in (NO_EPOCH, EPOCH_DURING_DELETE) and leader_epoch <= p.leader_epoch:
            return StopReplicaResult(Errors.FENCED_LEADER_EPOCH, False, False)
        if self.fetcher_control is not None:
            self.fetcher_control.remove_fetcher_for_partitions([tp], now_ms)
        deleted = False
        if delete:
            if p is not None:
                del self.partitions[tp]
                # Hosted again later, the partition is new to this broker (KRaft: a delete, then a new replica).
                self._image.pop(tp, None)
                deleted = True
            # `stopPartitions` deletes the log whether or not the partition is hosted (a log left on disk by a
            # replica removed while its broker was down).
            if self._logs.pop(tp, None) is not None:
                deleted = True
        self._try_complete_delayed(tp, now_ms)
        return StopReplicaResult(Errors.NONE, True, deleted)

    def delete_stray_replicas(self, tps: Iterable[TopicPartition], now_ms: int) -> list[TopicPartition]:
        """`deleteStrayReplicas`: stop and delete the logs the metadata image does not assign to this broker
        (`BrokerMetadataPublisher.finishInitializingReplicaManager`, at a process's first metadata publish);
        returns the partitions whose logs were deleted."""
        return [tp for tp in tps if self.stop_replica(tp, True, now_ms).deleted]

    # --- AlterPartition ---------------------------------------------------------------------------------

    def _submit_alter(self, request: AlterPartitionRequest, now_ms: int) -> None:
        if not self.alter_partition_manager.submit(request):
            p = self.partitions.get(TopicPartition(request.topic, request.partition))
            if p is not None:
                p.handle_alter_partition_response(request, Errors.OPERATION_NOT_ATTEMPTED, now_ms)
            return
        self._maybe_send_alter(now_ms)

    def _maybe_send_alter(self, now_ms: int) -> None:
        if self.controller is not None:
            batch = self.alter_partition_manager.take_batch()
            if batch:
                self.controller.send_alter_partition(self.broker_id, batch, now_ms)

    def take_alter_partition_requests(self) -> list[AlterPartitionRequest]:
        """The next AlterPartition RPC to send (empty while one is in flight or nothing is queued)."""
        return self.alter_partition_manager.take_batch()

    def handle_alter_partition_response(self, request: AlterPartitionRequest,
                                        response: LeaderAndIsr | Errors, now_ms: int) -> None:
        """The controller's answer for one item: hand it to the partition, resubmit retriable failures,
        re-check parked requests if the HW moved, and send the next RPC if one is due."""
        self.alter_partition_manager.on_response(request)
        tp = TopicPartition(request.topic, request.partition)
        p = self.partitions.get(tp)
        if p is not None:
            outcome = p.handle_alter_partition_response(request, response, now_ms)
            if outcome.hw_incremented:
                self._try_complete_delayed(tp, now_ms)
            if outcome.retry is not None:
                self._submit_alter(outcome.retry, now_ms)
        self._maybe_send_alter(now_ms)

    def handle_alter_partition_rpc_failure(self, now_ms: int) -> None:
        """The AlterPartition RPC itself failed: its items are sent again with the next RPC."""
        self.alter_partition_manager.on_rpc_failure()
        self._maybe_send_alter(now_ms)

    def maybe_shrink_isr(self, now_ms: int) -> None:
        """The `isr-expiration` task (`ReplicaManager.maybeShrinkIsr`), run every lag/2 by the driver."""
        for p in self.partitions.values():
            if p.is_leader:
                req = p.maybe_shrink_isr(now_ms)
                if req is not None:
                    self._submit_alter(req, now_ms)

    # --- fetch -----------------------------------------------------------------------------------------

    def _read_from_log(self, request: FetchRequest, now_ms: int, from_purgatory: bool) -> _ReadResult:
        """`readFromLog`: read every partition within the response budget (first non-empty partition
        may exceed it, KIP-74); errors become per-partition error codes.

        One loop per request does, for the common partition of a follower fetch, what Kafka spreads
        over `ReplicaManager.readFromLog` -> `Partition.fetchRecords` (`readRecords`) ->
        `Partition.updateFollowerFetchState` (-> `Replica.updateFetchStateOrThrow`, `maybeExpandIsr`,
        `maybeIncrementLeaderHW`): this broker leads the partition in the request's epoch, the follower
        is in the assignment and its last fetched epoch does not diverge. That is most partitions of
        most fetches, and the per-partition calls, keyword packing and `LogReadInfo` tuple cost more
        than the work itself. Any other partition (consumer, fenced or unknown epoch, not leader,
        unknown replica, divergence or an offset out of range on the epoch check) goes through
        `Partition.fetch_records`, which raises or answers exactly as Kafka does; the fast path reads
        nothing it could not redo, so the fallback sees the same state.

        `all_caught_up` in the result: every partition took that fast path with its fetch offset at the
        leader's LEO (what `fetchMessages` needs to know that `DelayedFetch.tryComplete` is false)."""
        limit = min(request.max_bytes, self.config.fetch_max_bytes)
        min_one = True
        out: dict[TopicPartition, FetchPartitionResponse] = {}
        hw_moved: list[TopicPartition] = []
        total = 0
        any_error = False
        any_diverging = False
        partitions = self.partitions
        replica_id = request.replica_id
        replica_epoch = request.replica_epoch
        update_fetch_state = not from_purgatory
        is_follower = replica_id >= 0
        leader_quota = self.leader_quota
        none = Errors.NONE
        log_end = FetchIsolation.LOG_END
        caught_up = 0
        for tp, pd in request.partitions.items():
            p = partitions.get(tp)
            if p is None:
                out[tp] = FetchPartitionResponse(error=self.not_hosted_error(tp))
                any_error = True
                continue
            max_bytes = pd.max_bytes
            if max_bytes > limit:
                max_bytes = limit
            fetch_offset = pd.fetch_offset
            current_epoch = pd.current_leader_epoch
            last_fetched = pd.last_fetched_epoch
            replica = None
            fast = False
            if is_follower and p.leader_replica_id == p.broker_id and (
                    current_epoch is None or current_epoch == p.leader_epoch or current_epoch == UNDEFINED_EPOCH):
                # fetchRecords' epoch and leadership checks pass; followerReplicaOrThrow's lookup.
                replica = p.remote_replicas.get(replica_id)
                fast = replica is not None
            try:
                if fast:
                    assert replica is not None
                    log = p.log
                    hw = log._hw
                    lso = log._log_start_offset
                    leo = log._leo
                    if last_fetched is not None and last_fetched != UNDEFINED_EPOCH:
                        # fetchRecords' lastOffsetForLeaderEpoch check: anything but "no divergence"
                        # (an error or a DivergingEpoch) is left to Partition.fetch_records.
                        eo_epoch, eo_end = log.epoch_cache.end_offset_for(last_fetched, leo)
                        if (eo_end == UNDEFINED_EPOCH_OFFSET or eo_epoch == UNDEFINED_EPOCH or fetch_offset < lso
                                or eo_epoch < last_fetched or eo_end < fetch_offset):
                            fast = False
                if fast:
                    assert replica is not None
                    if fetch_offset == leo:
                        # A caught-up follower: `UnifiedLog.read` returns nothing at the LEO.
                        batches: tuple[RecordBatch, ...] = ()
                        size = partial = 0
                        caught_up += 1
                    else:
                        _, batches, size, partial = log.read(fetch_offset, max_bytes, log_end, min_one)
                    div = None
                    last_stable = hw
                    hw_incremented = False
                    alter = None
                    if update_fetch_state:
                        # updateFollowerFetchState: record the fetch, maybe expand the ISR, and advance
                        # the HW if the follower's LEO changed (same steps and order as the method).
                        follower_id = replica.broker_id
                        prev_leo = replica.log_end_offset
                        replica.update_fetch_state(
                            fetch_offset, pd.log_start_offset, now_ms, leo, replica_epoch,
                            None if replica_epoch == -1 else p.metadata.broker_epoch(follower_id))
                        events = p.events
                        if events is not None:
                            epoch = p.leader_epoch
                            events.add_follower_fetch_state(
                                now_ms, p.broker_id, p.topic, p.partition, epoch if epoch >= 0 else None,
                                follower_id, fetch_offset, replica.last_caught_up_time_ms, leo)
                        state = p.partition_state
                        if not state.is_inflight and follower_id not in state.isr:
                            alter = p.maybe_expand_isr(follower_id, now_ms)
                        hw_incremented = prev_leo != fetch_offset and p.maybe_increment_leader_hw(now_ms)
                else:
                    info = p.fetch_records(
                        replica_id, fetch_offset, max_bytes, now_ms,
                        current_leader_epoch=current_epoch, last_fetched_epoch=last_fetched,
                        follower_log_start_offset=pd.log_start_offset, broker_epoch=replica_epoch,
                        min_one_message=min_one, update_fetch_state=update_fetch_state)
                    # LogReadInfo unpacked at once (one tuple walk instead of ten attribute lookups).
                    _, batches, size, div, hw, lso, _, last_stable, hw_incremented, alter, partial = info
            except ReplogError as exc:
                out[tp] = FetchPartitionResponse(error=exc.error)
                any_error = True
                continue
            if partial and not batches:
                # checkFetchDataInfo: a range that cut its first batch (`firstEntryIncomplete`, fetch v3+) is
                # replaced by an empty set, which costs the request's budget nothing.
                size = partial = 0
            if size and leader_quota is not None and self._should_leader_throttle(p, tp, replica_id, now_ms):
                # §2.2 step 7: the follower state was updated above, but no records go back.
                leader_quota.emit_throttle(now_ms, tp.topic, tp.partition, p.leader_epoch, replica_id, size)
                batches = ()
                size = partial = 0
            if size:
                min_one = False
                limit = max(0, limit - size)
                total += size
            # Every field given: tuple.__new__ skips the NamedTuple's Python-level __new__, and the
            # enum member is read once per request (an `Errors.NONE` lookup costs ~0.1 us).
            if div is None:
                out[tp] = new_tuple(FetchPartitionResponse, (none, hw, lso, last_stable, batches, None, partial))
            else:
                any_diverging = True
                out[tp] = new_tuple(FetchPartitionResponse, (none, hw, lso, last_stable, batches,
                                                             EpochEndOffset(none, div[0], div[1]), partial))
            if alter is not None:
                self._submit_alter(alter, now_ms)
            if hw_incremented:
                hw_moved.append(tp)
        return new_tuple(_ReadResult, (out, hw_moved, total, any_error, any_diverging, caught_up == len(out)))

    def fetch_messages(self, request: FetchRequest, now_ms: int,
                       request_id: Hashable = None) -> FetchResponse | None:
        """`fetchMessages`: read, update follower state (then HW), and answer now or park the fetch
        in the purgatory (returns None; the answer later appears in `take_completed_fetches`)."""
        read = self._read_from_log(request, now_ms, from_purgatory=False)
        for tp in read.hw_moved:
            self._try_complete_delayed(tp, now_ms)
        # KafkaApis.handleFetchRequest: `fetchMinBytes = min(minBytes, fetchMaxBytes)`, the request's max bytes
        # capped by `fetch.max.bytes` (a follower has no quota window to cap it further).
        min_bytes = min(request.min_bytes, request.max_bytes, self.config.fetch_max_bytes)
        if can_respond_immediately(request.max_wait_ms, len(request.partitions), read.bytes_readable,
                                   min_bytes, read.any_error, read.any_diverging):
            return self._respond(request, read.partitions, now_ms)
        replica_id = request.replica_id
        is_throttled = None
        if self.leader_quota is not None and replica_id >= 0:
            def is_throttled(key: Hashable, at_ms: int) -> bool:
                p = self.partitions.get(key)  # type: ignore[call-overload]
                return p is not None and self._should_leader_throttle(p, key, replica_id, at_ms)

        # The request's partition data are the statuses (Kafka's `FetchPartitionStatus.fetchInfo`): they
        # carry the fetch offset, max bytes and epochs `tryComplete` reads, so none are copied. The segment of
        # each read position is kept apart (`startOffsetMetadata`): a roll after now must not move it.
        partitions = self.partitions
        starts: dict[TopicPartition, int] = {}
        for tp, pd in request.partitions.items():
            p = partitions.get(tp)
            if p is not None:
                starts[tp] = p.log.segment_base_offset(pd.fetch_offset)
        op = DelayedFetch(request_id, replica_id, min_bytes, now_ms + request.max_wait_ms,
                          request.partitions, is_throttled=is_throttled, payload=request, start_segments=starts)
        purgatory = self.fetch_purgatory
        if read.all_caught_up:
            # tryCompleteElseWatch without its tryComplete, whose answer is known to be false: every
            # partition was read just now as led here in the request's epoch, with no divergence and
            # the fetch offset at the LEO, and nothing since (the HW-triggered completions above only
            # re-read) changed a leader, epoch, LEO or epoch cache. So no case A-F or H applies and no
            # partition has bytes beyond its fetch offset: 0 < min_bytes (case G), or the fetch would
            # have been answered above.
            purgatory.watch(op)
            return None
        if purgatory.try_complete_else_watch(op, self.get_partition_or_exception, now_ms):
            return self._complete_fetch(op, now_ms)
        return None

    def _complete_fetch(self, op: DelayedFetch, now_ms: int) -> FetchResponse:
        """`DelayedFetch.onComplete`: re-read with `readFromPurgatory` (no second follower update)."""
        request = op.payload
        assert isinstance(request, FetchRequest)
        return self._respond(request, self._read_from_log(request, now_ms, from_purgatory=True).partitions, now_ms)

    def _should_leader_throttle(self, p: Partition, tp: Hashable, replica_id: int, now_ms: int) -> bool:
        """`shouldLeaderThrottle`: an out-of-ISR follower, a throttled partition, the quota exceeded."""
        quota = self.leader_quota
        return (quota is not None and replica_id >= 0 and replica_id not in p.partition_state.isr
                and quota.is_throttled(tp[0], tp[1]) and quota.is_quota_exceeded(now_ms))  # type: ignore[index]

    def _respond(self, request: FetchRequest, partitions: dict[TopicPartition, FetchPartitionResponse],
                 now_ms: int) -> FetchResponse:
        """Build the response; for a follower, record in the leader quota the size of a fetch response of
        the request's version holding only its throttled partitions, framing included
        (`KafkaApis.sizeOfThrottledPartitions` = `FetchResponse.sizeOf` + `quotas.leader.record`)."""
        quota = self.leader_quota
        if quota is not None and request.replica_id >= 0:
            if quota.throttles_any():
                size = size_of_throttled_partitions(
                    request.version,
                    [(tp.topic, tp.partition, r.size_bytes, r.diverging_epoch is not None)
                     for tp, r in partitions.items()],
                    quota.is_throttled)
            else:
                # No partition can be throttled: skip the per-partition test. Kafka records even then,
                # the size of a response with no topics.
                size = fetch_response_size(request.version, ())
            quota.record(size, now_ms)
        return FetchResponse(partitions)

    def take_completed_fetches(self) -> list[CompletedFetch]:
        """Parked fetches answered since the last call, in completion order."""
        out = self._completed_fetches
        self._completed_fetches = []
        return out

    def offsets_for_leader_epoch(self, request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        """`lastOffsetForLeaderEpoch` for every requested partition (OffsetsForLeaderEpoch API)."""
        out: dict[TopicPartition, EpochEndOffset] = {}
        for tp, data in request.partitions.items():
            p = self.partitions.get(tp)
            if p is None:
                out[tp] = EpochEndOffset(self.not_hosted_error(tp))
                continue
            eo = p.last_offset_for_leader_epoch(data.current_leader_epoch, data.leader_epoch, True)
            epoch = eo.leader_epoch if request.version > 0 else -1
            out[tp] = EpochEndOffset(eo.error, epoch, eo.end_offset)
        return OffsetsForLeaderEpochResponse(out)

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        """`fetchOffsetForTimestamp` LATEST / EARLIEST for a replica (no isolation level)."""
        p = self.partitions.get(request.tp)
        if p is None:
            return ListOffsetsResponse(self.not_hosted_error(request.tp))
        try:
            if request.spec == LATEST:
                offset = p.fetch_latest_offset(None, request.current_leader_epoch)
            else:
                offset = p.fetch_earliest_offset(request.current_leader_epoch)
        except ReplogError as exc:
            return ListOffsetsResponse(exc.error)
        return ListOffsetsResponse(Errors.NONE, offset, p.leader_epoch)

    # --- produce ---------------------------------------------------------------------------------------

    def append_records(self, tp: TopicPartition, record_count: int, size_bytes: int, checksum: int,
                       acks: int, now_ms: int, request_id: Hashable = None,
                       timeout_ms: int = DEFAULT_PRODUCE_TIMEOUT_MS) -> ProduceResult | None:
        """`appendRecords` for one partition's batch. acks 0/1 (and acks=all already satisfied) answer
        now; acks=all otherwise parks a `DelayedProduce` until HW >= last offset + 1
        (`checkEnoughReplicasReachOffset`) or `timeout_ms` (REQUEST_TIMED_OUT); the answer then
        appears in `take_completed_produces`."""
        if acks not in (-1, 0, 1):
            return self._ack(request_id, tp, acks, Errors.INVALID_REQUIRED_ACKS, -1, -1, checksum, now_ms)
        p = self.partitions.get(tp)
        try:
            if p is None:
                raise self._not_hosted(tp)
            res = p.append_records_to_leader(record_count, size_bytes, checksum, acks, now_ms)
        except ReplogError as exc:
            return self._ack(request_id, tp, acks, exc.error, -1, -1, checksum, now_ms)
        batch = res.batch
        # Release followers parked for new data (and, if the HW moved, parked produces).
        self._try_complete_delayed(tp, now_ms)
        if acks == -1:
            done, error = p.check_enough_replicas_reach_offset(batch.last_offset + 1)
            if not done:
                op = _DelayedProduce(request_id, tp, batch.last_offset + 1, now_ms + timeout_ms,
                                     batch.base_offset, batch.last_offset, checksum)
                self._produce_waiting.setdefault(tp, []).append(op)
                self._seq += 1
                heapq.heappush(self._produce_deadlines, (op.deadline_ms, self._seq, op))
                return None
            return self._ack(request_id, tp, acks, error, batch.base_offset, batch.last_offset, checksum, now_ms)
        return self._ack(request_id, tp, acks, Errors.NONE, batch.base_offset, batch.last_offset, checksum, now_ms)

    def append_records_to_partitions(self, batches: Sequence[ProduceBatch], acks: int, now_ms: int,
                                     request_id: Hashable = None,
                                     timeout_ms: int = DEFAULT_PRODUCE_TIMEOUT_MS) -> list[ProduceResult] | None:
        """`appendRecords(entriesPerPartition)` for a request of several partitions, answered as one: every batch is
        appended (or refused) now; with acks=all, partitions whose HW is short of their batch park one
        `DelayedProduce` that answers when the last of them is settled or after `timeout_ms` (REQUEST_TIMED_OUT for
        those not settled), in `take_completed_produce_requests`. Every partition's `produce_ack` is emitted when the
        response goes, in request order."""
        op = _DelayedProduceRequest(request_id, acks)
        deadline = now_ms + timeout_ms
        parked: list[_DelayedProduce] = []
        for b in batches:
            tp = b.tp
            op.checksums.append(b.checksum)
            p = self.partitions.get(tp)
            op.epochs.append(p.leader_epoch if p is not None else -1)
            if acks not in (-1, 0, 1):
                op.parts.append(ProduceResult(request_id, tp, acks, Errors.INVALID_REQUIRED_ACKS, -1, -1))
                continue
            try:
                if p is None:
                    raise self._not_hosted(tp)
                res = p.append_records_to_leader(b.record_count, b.size_bytes, b.checksum, acks, now_ms)
            except ReplogError as exc:
                op.parts.append(ProduceResult(request_id, tp, acks, exc.error, -1, -1))
                continue
            batch = res.batch
            self._try_complete_delayed(tp, now_ms)
            error = Errors.NONE
            if acks == -1:
                done, error = p.check_enough_replicas_reach_offset(batch.last_offset + 1)
                if not done:
                    delayed = _DelayedProduce(request_id, tp, batch.last_offset + 1, deadline, batch.base_offset,
                                              batch.last_offset, b.checksum, request=op)
                    op.parts.append(delayed)
                    parked.append(delayed)
                    continue
            op.parts.append(ProduceResult(request_id, tp, acks, error, batch.base_offset, batch.last_offset))
        if not parked:
            return self._answer_request(op, now_ms)
        op.pending = len(parked)
        for delayed in parked:
            self._produce_waiting.setdefault(delayed.tp, []).append(delayed)
            self._seq += 1
            heapq.heappush(self._produce_deadlines, (deadline, self._seq, delayed))
        return None

    def _answer_request(self, op: _DelayedProduceRequest, now_ms: int) -> list[ProduceResult]:
        """The response of a produce request of several partitions: each partition's `produce_ack`, in order."""
        results: list[ProduceResult] = []
        for part, checksum, epoch in zip(op.parts, op.checksums, op.epochs, strict=True):
            if isinstance(part, _DelayedProduce):
                results.append(self._ack(op.request_id, part.tp, -1, part.error, part.base_offset, part.last_offset,
                                         checksum, now_ms, epoch))
            else:
                results.append(self._ack(op.request_id, part.tp, part.acks, part.error, part.base_offset,
                                         part.last_offset, checksum, now_ms, epoch))
        # The parked partitions name their request until their deadline pops them: drop the way back, so that an
        # answered request is freed by reference counting (no cycle for the collector).
        op.parts = []
        return results

    def _settle(self, produce: _DelayedProduce, error: Errors, now_ms: int) -> None:
        """One parked partition of a request of several is settled; the response goes with the last one."""
        op = produce.request
        assert op is not None
        produce.error = error
        p = self.partitions.get(produce.tp)
        # An answer settled by the leader in office carries its epoch; a NOT_LEADER_OR_FOLLOWER settled by a
        # leadership change, the new one (as a request answered at once would).
        op.epochs[op.parts.index(produce)] = p.leader_epoch if p is not None else -1
        op.pending -= 1
        if op.pending == 0:
            self._completed_produce_requests.append(
                CompletedProduceRequest(op.request_id, self._answer_request(op, now_ms)))

    def _ack(self, request_id: Hashable, tp: TopicPartition, acks: int, error: Errors, base: int, last: int,
             checksum: int, now_ms: int, epoch: int = -1) -> ProduceResult:
        """The partition's answer and its `produce_ack` event, in the leader epoch the answer was settled in (`epoch`,
        for a partition of a request answered later than that), else the partition's current one."""
        if self.events is not None:
            if epoch < 0:
                p = self.partitions.get(tp)
                epoch = p.leader_epoch if p is not None else -1
            payload: dict[str, object] = {"acks": acks, "error": str(error), "batch_checksum": checksum}
            if base >= 0:
                payload["base_offset"] = base
                payload["last_offset"] = last
            self.events.append(make_event("produce_ack", now_ms, self.broker_id, tp.topic, tp.partition,
                                          epoch if epoch >= 0 else None, **payload))
        return ProduceResult(request_id, tp, acks, error, base, last)

    def take_completed_produces(self) -> list[ProduceResult]:
        """acks=all produces answered since the last call, in completion order."""
        out = self._completed_produces
        self._completed_produces = []
        return out

    def take_completed_produce_requests(self) -> list[CompletedProduceRequest]:
        """Produce requests of several partitions answered since the last call, in completion order."""
        out = self._completed_produce_requests
        self._completed_produce_requests = []
        return out

    # --- delayed operations --------------------------------------------------------------------------

    def _try_complete_delayed(self, tp: TopicPartition, now_ms: int) -> None:
        """`tryCompleteDelayedRequests` / `checkAndComplete(TopicPartitionOperationKey)`."""
        if not self.fetch_purgatory.is_watched(tp) and tp not in self._produce_waiting:
            return  # the common case on the hot path: nothing parked on this partition
        for op in self.fetch_purgatory.check_and_complete(tp, self.get_partition_or_exception, now_ms):
            self._completed_fetches.append(CompletedFetch(op.request_id, self._complete_fetch(op, now_ms)))
        waiting = self._produce_waiting.get(tp)
        if waiting:
            p = self.partitions.get(tp)
            keep = []
            for produce in waiting:
                if produce.completed:
                    continue
                if p is None:
                    done, error = True, Errors.NOT_LEADER_OR_FOLLOWER
                else:
                    done, error = p.check_enough_replicas_reach_offset(produce.required_offset)
                if done or error is not Errors.NONE:
                    produce.completed = True
                    if produce.request is not None:
                        self._settle(produce, error, now_ms)
                        continue
                    self._completed_produces.append(
                        self._ack(produce.request_id, tp, -1, error, produce.base_offset, produce.last_offset,
                                  produce.checksum, now_ms))
                else:
                    keep.append(produce)
            if keep:
                self._produce_waiting[tp] = keep
            else:
                del self._produce_waiting[tp]

    def tick(self, now_ms: int) -> None:
        """Expire parked fetches (answered with what is there now) and produces (REQUEST_TIMED_OUT)."""
        for op in self.fetch_purgatory.expire(now_ms):
            self._completed_fetches.append(CompletedFetch(op.request_id, self._complete_fetch(op, now_ms)))
        heap = self._produce_deadlines
        while heap and heap[0][0] <= now_ms:
            _, _, prod = heapq.heappop(heap)
            if prod.completed:
                continue
            prod.completed = True
            if prod.request is not None:
                self._settle(prod, Errors.REQUEST_TIMED_OUT, now_ms)
            else:
                self._completed_produces.append(
                    self._ack(prod.request_id, prod.tp, -1, Errors.REQUEST_TIMED_OUT, prod.base_offset,
                              prod.last_offset, prod.checksum, now_ms))
            waiting = self._produce_waiting.get(prod.tp)
            if waiting is not None:
                live = [o for o in waiting if not o.completed]
                if live:
                    self._produce_waiting[prod.tp] = live
                else:
                    del self._produce_waiting[prod.tp]

    def next_deadline(self) -> int | None:
        """Earliest deadline of a parked fetch or produce (for the driver's timer), or None."""
        heap = self._produce_deadlines
        while heap and heap[0][2].completed:
            heapq.heappop(heap)
        fetch = self.fetch_purgatory.next_deadline()
        if not heap:
            return fetch
        produce = heap[0][0]
        return produce if fetch is None or produce < fetch else fetch
