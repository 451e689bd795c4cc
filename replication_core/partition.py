"""One partition on one broker: leader-side ISR / HW / AlterPartition logic and the follower-side hooks.

Mirrors `kafka.cluster.Partition` (reference §2). Sans-I/O: time (`now_ms`) and requests are inputs; the
AlterPartition request the leader wants to send is an *output* (`AlterPartitionRequest`) that the caller
hands to its controller channel, and the controller's answer comes back through
`handle_alter_partition_response`. Nothing here sends, sleeps or reads a clock.

Theory of operation
* `partition_state` is one of `CommittedPartitionState`, `PendingExpandIsr`, `PendingShrinkIsr`
  (reference §2.5). `isr` is always the last committed ISR; `maximal_isr` adds a pending expansion (a
  pending shrink is not applied until committed). While a change is in flight no other is computed.
* Leader HW = min LEO over the leader, the maximal ISR and caught-up ISR-eligible followers; never
  advanced while the committed ISR is below the effective min ISR (3.7+, reference §2.3).
* Follower fetch on the leader (`fetch_records`), in Appendix A order: epoch checks -> capture HW/LSO/LEO
  -> diverging-epoch check -> read -> update follower state -> maybe expand ISR -> maybe advance HW.
* A follower keeps no remote replica state and no ISR; `make_follower` never truncates.

Events: the `EventLog` given at construction receives schema events (`leadership_change`, `isr_change`,
`follower_fetch_state`, plus the log's `append` / `hw_change` / `truncation` / `log_start_offset_change`);
`events=None` disables them. Callers drain the log.
`isr_change` carries `isr_state` proposed / committed / rejected and a `reason`: `follower_caught_up`
(expand proposed), `follower_lagging` (shrink proposed, with `out_of_sync_replicas`),
`alter_partition` (committed by the controller), `leader_and_isr` (ISR replaced by a LeaderAndIsr with
the same leader epoch, also when only a pending proposal is thereby abandoned), and for rejections
`reset_to_committed`, `awaiting_metadata`, `retry` or `stale_response`, with the AlterPartition `error`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple, Protocol

from mypy_extensions import mypyc_attr

from replication_core.config import ReplicationConfig
from replication_core.errors import (
    Errors,
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from replication_core.event_log import EventLog
from replication_core.events import make_event
from replication_core.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from replication_core.log import LEADER, FetchIsolation, Log, LogAppendInfo, RecordBatch, new_tuple
from replication_core.replica import Replica

RECOVERED = "RECOVERED"
RECOVERING = "RECOVERING"


# --- metadata the leader consults (KRaft metadata cache / ZK alive brokers) ------------------------------

class BrokerMetadata(Protocol):
    """What `Partition.isReplicaIsrEligible` asks the metadata cache (`KRaftMetadataCache`)."""

    def is_broker_fenced(self, broker_id: int) -> bool:
        """True if the broker is fenced (or, ZK mode, not alive)."""
        ...

    def is_broker_shutting_down(self, broker_id: int) -> bool:
        """True if the broker is in controlled shutdown."""
        ...

    def broker_epoch(self, broker_id: int) -> int | None:
        """The alive broker epoch (`getAliveBrokerEpoch`); None when the broker has none (unregistered or
        fenced in KRaft) or when the cache tracks no broker epochs (ZK mode)."""
        ...

    def tracks_broker_epochs(self) -> bool:
        """True for a KRaft metadata cache (`KRaftMetadataCache`: broker epochs are checked and a broker
        without an alive epoch is not ISR-eligible); False for ZK mode (`ZkMetadataCache`: no epoch checks)."""
        ...


# Compiled with mypyc, a class that tests subclass in Python needs allow_interpreted_subclasses.
@mypyc_attr(allow_interpreted_subclasses=True)
@dataclass
class StaticBrokerMetadata:
    """A mutable `BrokerMetadata` for tests and the simulator: sets of fenced / shutting-down brokers and
    an optional broker-epoch table (empty table = ZK-style, no epoch checks)."""

    fenced: set[int] = field(default_factory=set)
    shutting_down: set[int] = field(default_factory=set)
    epochs: dict[int, int] = field(default_factory=dict)

    def is_broker_fenced(self, broker_id: int) -> bool:
        """See `BrokerMetadata`."""
        return broker_id in self.fenced

    def is_broker_shutting_down(self, broker_id: int) -> bool:
        """See `BrokerMetadata`."""
        return broker_id in self.shutting_down

    def broker_epoch(self, broker_id: int) -> int | None:
        """See `BrokerMetadata`."""
        return self.epochs.get(broker_id) if self.epochs else None

    def tracks_broker_epochs(self) -> bool:
        """See `BrokerMetadata`: a non-empty epoch table stands for a KRaft metadata cache."""
        return bool(self.epochs)


# --- requests and states ---------------------------------------------------------------------------------

NO_LEADER = -1
"""`LeaderAndIsr.NoLeader`: the leader of a partition none of whose ISR members is alive."""


@dataclass(frozen=True)
class PartitionRegistration:
    """The partition state of a LeaderAndIsr request / KRaft `PartitionRegistration`."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader_recovery_state: str = RECOVERED
    controller_epoch: int = 0


@dataclass(frozen=True)
class LeaderAndIsr:
    """`LeaderAndIsr`: what an AlterPartition proposes and what the controller answers with.

    `broker_epochs` is aligned with `isr` (`isrWithBrokerEpoch`, -1 when unknown)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    leader_recovery_state: str = RECOVERED
    broker_epochs: tuple[int, ...] = ()


# Regular Python classes when compiled: mypyc's native dataclasses treat the `is_inflight` ClassVar
# as a field and fail to build them.
@mypyc_attr(native_class=False)
@dataclass(frozen=True)
class CommittedPartitionState:
    """`CommittedPartitionState(isr, leaderRecoveryState)`: no AlterPartition in flight.

    `maximal_isr` (= `isr`) and `is_inflight` are plain attributes, not properties: the HW rule reads
    them on every fetch and append."""

    isr: frozenset[int]
    leader_recovery_state: str = RECOVERED
    maximal_isr: frozenset[int] = field(init=False, repr=False, compare=False)
    is_inflight: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "maximal_isr", self.isr)


# A regular Python class when compiled (see CommittedPartitionState).
@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False)
class PendingExpandIsr:
    """`PendingExpandIsr`: one replica being added; counted in the maximal ISR right away.

    `isr` is the last committed ISR; `maximal_isr` adds the replica being added (a stricter HW
    condition)."""

    new_in_sync_replica_id: int
    sent_leader_and_isr: LeaderAndIsr
    last_committed_state: CommittedPartitionState
    isr: frozenset[int] = field(init=False, repr=False)
    maximal_isr: frozenset[int] = field(init=False, repr=False)
    leader_recovery_state: str = field(init=False, repr=False)
    is_inflight: ClassVar[bool] = True

    def __post_init__(self) -> None:
        last = self.last_committed_state
        object.__setattr__(self, "isr", last.isr)
        object.__setattr__(self, "maximal_isr", last.isr | {self.new_in_sync_replica_id})
        object.__setattr__(self, "leader_recovery_state", last.leader_recovery_state)


# A regular Python class when compiled (see CommittedPartitionState).
@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False)
class PendingShrinkIsr:
    """`PendingShrinkIsr`: replicas being removed; NOT removed from the maximal ISR until committed.

    `isr` and `maximal_isr` are both the last committed ISR (a shrink is applied only once confirmed)."""

    out_of_sync_replica_ids: frozenset[int]
    sent_leader_and_isr: LeaderAndIsr
    last_committed_state: CommittedPartitionState
    isr: frozenset[int] = field(init=False, repr=False)
    maximal_isr: frozenset[int] = field(init=False, repr=False)
    leader_recovery_state: str = field(init=False, repr=False)
    is_inflight: ClassVar[bool] = True

    def __post_init__(self) -> None:
        last = self.last_committed_state
        object.__setattr__(self, "isr", last.isr)
        object.__setattr__(self, "maximal_isr", last.isr)
        object.__setattr__(self, "leader_recovery_state", last.leader_recovery_state)


PartitionState = CommittedPartitionState | PendingExpandIsr | PendingShrinkIsr


@dataclass(frozen=True, eq=False)
class AlterPartitionRequest:
    """One partition's entry of an AlterPartition request (`AlterPartitionItem`), output by the leader.

    `proposed_state` is the pending state that produced it; the response is matched against it."""

    topic: str
    partition: int
    broker_id: int
    leader_and_isr: LeaderAndIsr
    proposed_state: PendingExpandIsr | PendingShrinkIsr


class AlterPartitionOutcome(NamedTuple):
    """What handling an AlterPartition answer did: a request to resubmit (retriable error) and whether
    the leader HW moved (then delayed operations should be re-checked)."""

    retry: AlterPartitionRequest | None
    hw_incremented: bool


class EpochEndOffset(NamedTuple):
    """`OffsetForLeaderEpochResponseData.EpochEndOffset`: (error, leader epoch, end offset)."""

    error: Errors
    leader_epoch: int
    end_offset: int


class LogReadInfo(NamedTuple):
    """`LogReadInfo` of a leader-side read plus what the fetch changed.

    `high_watermark` / `log_start_offset` / `log_end_offset` / `last_stable_offset` are captured before
    this fetch's own state update (the values the response carries)."""

    fetch_offset: int
    batches: tuple[RecordBatch, ...]
    size_bytes: int
    diverging_epoch: tuple[int, int] | None
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    hw_incremented: bool = False
    alter_partition: AlterPartitionRequest | None = None
    partial_bytes: int = 0
    """Of `size_bytes`, the bytes of a batch the read's byte range cut (`FetchDataInfo.partial_bytes`)."""


class AppendResult(NamedTuple):
    """`LogAppendInfo` of a leader append plus whether the HW moved (`appendRecordsToLeader`)."""

    batch: RecordBatch
    hw_incremented: bool


# AlterPartition errors (reference §2.5): reset to the committed state / stay pending / retry.
_RESET_ERRORS = frozenset({Errors.OPERATION_NOT_ATTEMPTED, Errors.INELIGIBLE_REPLICA})
_STAY_PENDING_ERRORS = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID, Errors.FENCED_LEADER_EPOCH,
    Errors.INVALID_UPDATE_VERSION, Errors.INVALID_REQUEST, Errors.NEW_LEADER_ELECTED,
})


class Partition:
    """`kafka.cluster.Partition`: leader/follower state, ISR, HW and AlterPartition for one replica."""

    def __init__(
        self,
        topic: str,
        partition: int,
        broker_id: int,
        config: ReplicationConfig,
        *,
        log: Log | None = None,
        metadata: BrokerMetadata | None = None,
        events: EventLog | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        self.config = config
        self.events = events
        self.metadata: BrokerMetadata = metadata if metadata is not None else StaticBrokerMetadata()
        self.log = log if log is not None else Log(topic, partition, broker_id, events=events)
        if log is not None and events is not None and log.events is None:
            log.events = events
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.leader_replica_id: int | None = None
        self.leader_epoch_start_offset: int | None = None
        self.controller_epoch = 0
        self.partition_state: PartitionState = CommittedPartitionState(frozenset())
        self.replicas: tuple[int, ...] = ()
        self.adding_replicas: tuple[int, ...] = ()
        self.removing_replicas: tuple[int, ...] = ()
        self.remote_replicas: dict[int, Replica] = {}
        self._max_lag_ms = config.replica_lag_time_max_ms
        self._effective_min_isr = 1

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition} broker={self.broker_id} leader={self.leader_replica_id} "
                f"epoch={self.leader_epoch} state={self.partition_state})")

    # --- simple queries ----------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """`isLeader`: this broker leads the partition."""
        return self.leader_replica_id == self.broker_id

    @property
    def isr(self) -> frozenset[int]:
        """`partitionState.isr`: the committed ISR (empty on a follower)."""
        return self.partition_state.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        """`partitionState.maximalIsr`."""
        return self.partition_state.maximal_isr

    @property
    def is_inflight(self) -> bool:
        """`partitionState.isInflight`: an AlterPartition is outstanding."""
        return self.partition_state.is_inflight

    def get_replica(self, replica_id: int) -> Replica | None:
        """`getReplica`: the leader's state for a remote replica."""
        return self.remote_replicas.get(replica_id)

    def effective_min_isr(self) -> int:
        """`effectiveMinIsr`: min.insync.replicas capped at the replica count (3.7+)."""
        return self._effective_min_isr

    @property
    def is_under_min_isr(self) -> bool:
        """`isUnderMinIsr`: leader whose committed ISR is below the effective min ISR."""
        return self.is_leader and len(self.partition_state.isr) < self.effective_min_isr()

    @property
    def is_at_min_isr(self) -> bool:
        """`isAtMinIsr`: leader whose committed ISR size equals the effective min ISR."""
        return self.is_leader and len(self.partition_state.isr) == self.effective_min_isr()

    @property
    def is_under_replicated(self) -> bool:
        """`isUnderReplicated`: leader with ISR smaller than the replication factor (adding replicas
        excluded from the replication factor)."""
        rf = len(self.replicas) - len(self.adding_replicas)
        return self.is_leader and rf - len(self.partition_state.isr) > 0

    # --- events --------------------------------------------------------------------------------------

    def _emit(self, event_type: str, now_ms: int, **payload: object) -> None:
        if self.events is not None:
            epoch = self.leader_epoch if self.leader_epoch >= 0 else None
            self.events.append(make_event(event_type, now_ms, self.broker_id, self.topic, self.partition,
                                          epoch, **payload))

    def _emit_leadership(self, action: str, now_ms: int) -> None:
        if self.events is not None:
            self._emit("leadership_change", now_ms, action=action, leader_id=self.leader_replica_id,
                       partition_epoch=self.partition_epoch, replicas=list(self.replicas),
                       isr=sorted(self.partition_state.isr), leo=self.log.log_end_offset,
                       hw=self.log.high_watermark, **self._reassignment())

    def _reassignment(self) -> dict[str, object]:
        """The reassignment in progress as event fields: most events have neither list (the fields stay
        absent)."""
        fields: dict[str, object] = {}
        if self.adding_replicas:
            fields["adding_replicas"] = list(self.adding_replicas)
        if self.removing_replicas:
            fields["removing_replicas"] = list(self.removing_replicas)
        return fields

    # --- epoch checks ----------------------------------------------------------------------------------

    def check_current_leader_epoch(self, current_leader_epoch: int | None) -> Errors:
        """`checkCurrentLeaderEpoch`: FENCED if older, UNKNOWN if newer, NONE if equal or absent."""
        if current_leader_epoch is None or current_leader_epoch == UNDEFINED_EPOCH:
            return Errors.NONE
        if current_leader_epoch < self.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        return Errors.NONE

    def local_log_with_epoch_or_throw(self, current_leader_epoch: int | None, require_leader: bool) -> Log:
        """`localLogWithEpochOrThrow`: epoch check first, then the leadership check."""
        err = self.check_current_leader_epoch(current_leader_epoch)
        if err is Errors.FENCED_LEADER_EPOCH:
            raise FencedLeaderEpochError(
                f"The leader epoch {current_leader_epoch} of {self.topic}-{self.partition} is older than the "
                f"current leader epoch {self.leader_epoch} on broker {self.broker_id}")
        if err is Errors.UNKNOWN_LEADER_EPOCH:
            raise UnknownLeaderEpochError(
                f"The leader epoch {current_leader_epoch} of {self.topic}-{self.partition} is newer than the "
                f"current leader epoch {self.leader_epoch} on broker {self.broker_id}")
        if require_leader and not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"Leader not local for partition {self.topic}-{self.partition} on broker {self.broker_id}")
        return self.log

    # --- leadership transitions ------------------------------------------------------------------------

    def _update_assignment_and_isr(self, reg: PartitionRegistration, is_leader: bool, isr: frozenset[int],
                                   leader_recovery_state: str) -> None:
        """`updateAssignmentAndIsr`: create/drop remote replicas (leader only) and commit the ISR."""
        if is_leader:
            followers = [r for r in reg.replicas if r != self.broker_id]
            for r in followers:
                if r not in self.remote_replicas:
                    self.remote_replicas[r] = Replica(r)
            for r in [r for r in self.remote_replicas if r not in followers]:
                del self.remote_replicas[r]
        else:
            self.remote_replicas.clear()
        self._effective_min_isr = min(self.config.min_insync_replicas, len(self.remote_replicas) + 1)
        self.replicas = tuple(reg.replicas)
        self.adding_replicas = tuple(reg.adding_replicas)
        self.removing_replicas = tuple(reg.removing_replicas)
        self.partition_state = CommittedPartitionState(isr, leader_recovery_state)

    def make_leader(self, reg: PartitionRegistration, now_ms: int,
                    high_watermark_checkpoint: int | None = None) -> bool:
        """`makeLeader`: returns True if this broker was not the leader before (`isNewLeader`).

        Ignored (returns False) if `reg.partition_epoch` is older than the current one. Replica state and
        the epoch start offset are reset only when the leader epoch increases; the epoch cache gets an
        entry for the new epoch at the LEO even with no records (KAFKA-7415). `high_watermark_checkpoint`
        initialises the HW of a freshly loaded log (clamped to [LSO, LEO]). Any pending AlterPartition is
        abandoned (`updateAssignmentAndIsr`); with the same leader epoch that is an `isr_change` update
        (committed, `leader_and_isr`, with the assignment) when the ISR or the assignment differs or a proposal
        was pending.
        """
        if reg.partition_epoch < self.partition_epoch:
            return False
        self.controller_epoch = reg.controller_epoch
        is_new_leader = not self.is_leader
        is_new_leader_epoch = reg.leader_epoch > self.leader_epoch
        old_isr = self.partition_state.isr
        was_inflight = self.partition_state.is_inflight
        old_assignment = (self.replicas, self.adding_replicas, self.removing_replicas)
        isr = frozenset(reg.isr)
        self._update_assignment_and_isr(reg, True, isr, RECOVERED)
        log = self.log
        if high_watermark_checkpoint is not None:
            log.update_high_watermark(high_watermark_checkpoint, now_ms, role="leader")
        if is_new_leader_epoch:
            start = log.log_end_offset
            log.maybe_assign_epoch_start_offset(reg.leader_epoch, start)
            for replica in self.remote_replicas.values():
                replica.reset_replica_state(now_ms, start, is_new_leader, replica.broker_id in isr)
            self.leader_epoch = reg.leader_epoch
            self.leader_epoch_start_offset = start
        self.partition_epoch = reg.partition_epoch
        self.leader_replica_id = self.broker_id
        log.leader_epoch = self.leader_epoch
        if is_new_leader or is_new_leader_epoch:
            self._emit_leadership("become_leader", now_ms)
        elif old_isr != isr or was_inflight or old_assignment != (self.replicas, self.adding_replicas,
                                                                  self.removing_replicas):
            # `updateAssignmentAndIsr` set CommittedPartitionState: a pending AlterPartition is abandoned
            # even when the ISR is unchanged (PartitionTest.testAlterIsrLeaderAndIsrRace). Without an event
            # here a reader of the events would still see that proposal pending (isr_single_inflight) and
            # count its replica in the maximal ISR (hw_bound_maximal_isr). It states the assignment too: a
            # reassignment step that removes no replica keeps the leader epoch (KRaft), so this is where the
            # leader's new followers show (Kafka's "Skipped the become-leader state change" line).
            self._emit("isr_change", now_ms, action="update", old_isr=sorted(old_isr), isr=sorted(isr),
                       isr_state="committed", partition_epoch=self.partition_epoch, reason="leader_and_isr",
                       error="NONE", replicas=list(self.replicas), **self._reassignment())
        # The ISR may have shrunk to the leader alone: the HW may move now (callers compare HW before
        # and after to decide whether delayed operations need a re-check, as tryCompleteDelayedRequests).
        self.maybe_increment_leader_hw(now_ms)
        return is_new_leader

    def make_follower(self, reg: PartitionRegistration, now_ms: int) -> bool:
        """`makeFollower`: returns True if the leader epoch increased (the fetcher must restart).

        Never truncates (truncation is the fetcher's job); keeps no ISR and no remote replica state.
        Ignored (returns False) if `reg.partition_epoch` is older than the current one."""
        if reg.partition_epoch < self.partition_epoch:
            return False
        self.controller_epoch = reg.controller_epoch
        is_new_leader_epoch = reg.leader_epoch > self.leader_epoch
        self.leader_replica_id = reg.leader
        self.leader_epoch = reg.leader_epoch
        self.leader_epoch_start_offset = None
        self.partition_epoch = reg.partition_epoch
        self._update_assignment_and_isr(reg, False, frozenset(), reg.leader_recovery_state)
        self.log.leader_epoch = self.leader_epoch
        if is_new_leader_epoch:
            self._emit_leadership("become_follower", now_ms)
        return is_new_leader_epoch

    # --- ISR eligibility, HW ---------------------------------------------------------------------------

    def is_replica_isr_eligible(self, replica_id: int) -> bool:
        """`isReplicaIsrEligible`: replica known, broker not fenced / shutting down, broker epoch matches.

        KRaft (`kRaftMetadataCache` branch): `isBrokerEpochIsrEligible(storedBrokerEpoch, cachedBrokerEpoch)`
        = `stored.isDefined && cached.isDefined && (stored.get == -1 || stored == cached)`, the cached
        epoch being `getAliveBrokerEpoch` (None for a broker the cache has no alive registration of).
        ZK (`zkMetadataCache.hasAliveBroker`): alive is enough."""
        replica = self.remote_replicas.get(replica_id)
        if replica is None:
            return False
        md = self.metadata
        if md.is_broker_fenced(replica_id) or md.is_broker_shutting_down(replica_id):
            return False
        cached = md.broker_epoch(replica_id)
        if cached is None:
            return not md.tracks_broker_epochs()  # KRaft: no alive epoch -> not eligible; ZK: alive is enough
        stored = replica.broker_epoch
        return stored is not None and (stored == -1 or stored == cached)

    def maybe_increment_leader_hw(self, now_ms: int) -> bool:
        """`maybeIncrementLeaderHW`: new HW = min LEO over the leader, the maximal ISR and caught-up
        eligible replicas; not advanced under min ISR. Returns True if the HW moved."""
        if self.leader_replica_id != self.broker_id:
            return False
        state = self.partition_state
        if len(state.isr) < self._effective_min_isr:
            return False
        log = self.log
        leader_leo = log._leo
        if log._hw >= leader_leo:
            return False  # nothing above the HW: it cannot move
        new_hw = leader_leo
        maximal = state.maximal_isr
        max_lag = self._max_lag_ms
        for rid, r in self.remote_replicas.items():
            leo = r.log_end_offset
            if leo < new_hw and (
                rid in maximal
                # Replica.isCaughtUp inlined (hot path); the LEO-equality clause cannot hold here.
                or (now_ms - r.last_caught_up_time_ms <= max_lag and self.is_replica_isr_eligible(rid))
            ):
                new_hw = leo
        # log.maybeIncrementHighWatermark inlined: new_hw <= leader LEO by construction (its only error
        # case), so the HW moves iff new_hw is above it.
        if new_hw > log._hw:
            log._set_hw(new_hw, LEADER, now_ms)
            return True
        return False

    # --- ISR changes -------------------------------------------------------------------------------------

    def _isr_with_broker_epochs(self, isr: frozenset[int]) -> LeaderAndIsr:
        ids = tuple(sorted(isr))
        epochs: list[int] = []
        for i in ids:
            if i == self.broker_id:
                e = self.metadata.broker_epoch(i)
                epochs.append(-1 if e is None else e)
            else:
                r = self.remote_replicas.get(i)
                epochs.append(-1 if r is None or r.broker_epoch is None else r.broker_epoch)
        return LeaderAndIsr(self.broker_id, self.leader_epoch, ids, self.partition_epoch,
                            self.partition_state.leader_recovery_state, tuple(epochs))

    def can_add_replica_to_isr(self, replica_id: int) -> bool:
        """`canAddReplicaToIsr`: nothing in flight, not already in the ISR, and eligible."""
        state = self.partition_state
        return (not state.is_inflight and replica_id not in state.isr
                and self.is_replica_isr_eligible(replica_id))

    def is_follower_in_sync(self, replica: Replica) -> bool:
        """`isFollowerInSync`: follower LEO >= leader HW and >= the current epoch's start offset."""
        start = self.leader_epoch_start_offset
        leo = replica.log_end_offset
        return start is not None and leo >= self.log.high_watermark and leo >= start

    def maybe_expand_isr(self, replica_id: int, now_ms: int) -> AlterPartitionRequest | None:
        """`maybeExpandIsr`: propose adding a caught-up follower (one at a time); returns the request."""
        replica = self.remote_replicas.get(replica_id)
        if replica is None or not self.is_leader:
            return None
        if not (self.can_add_replica_to_isr(replica_id) and self.is_follower_in_sync(replica)):
            return None
        committed = self.partition_state
        assert isinstance(committed, CommittedPartitionState)
        new_isr = committed.isr | {replica_id}
        sent = self._isr_with_broker_epochs(new_isr)
        pending = PendingExpandIsr(replica_id, sent, committed)
        self.partition_state = pending
        self._emit("isr_change", now_ms, action="expand", old_isr=sorted(committed.isr), isr=list(sent.isr),
                   isr_state="proposed", partition_epoch=self.partition_epoch, reason="follower_caught_up",
                   error="NONE")
        return AlterPartitionRequest(self.topic, self.partition, self.broker_id, sent, pending)

    def get_out_of_sync_replicas(self, now_ms: int, max_lag_ms: int | None = None) -> frozenset[int]:
        """`getOutOfSyncReplicas`: ISR followers not caught up within `max_lag_ms` (default
        replica.lag.time.max.ms); empty while an AlterPartition is in flight. Never the leader."""
        state = self.partition_state
        if state.is_inflight or not self.is_leader:
            return frozenset()
        lag = self._max_lag_ms if max_lag_ms is None else max_lag_ms
        leader_leo = self.log.log_end_offset
        out = []
        for rid in state.isr:
            if rid == self.broker_id:
                continue
            r = self.remote_replicas.get(rid)
            if r is None or not r.is_caught_up(leader_leo, now_ms, lag):
                out.append(rid)
        return frozenset(out)

    def maybe_shrink_isr(self, now_ms: int) -> AlterPartitionRequest | None:
        """`maybeShrinkIsr` (the `isr-expiration` task): propose removing out-of-sync followers."""
        out_of_sync = self.get_out_of_sync_replicas(now_ms)
        if not out_of_sync:
            return None
        committed = self.partition_state
        assert isinstance(committed, CommittedPartitionState)
        sent = self._isr_with_broker_epochs(committed.isr - out_of_sync)
        pending = PendingShrinkIsr(out_of_sync, sent, committed)
        self.partition_state = pending
        if self.events is not None:
            oos = []
            for rid in sorted(out_of_sync):
                r = self.remote_replicas.get(rid)
                oos.append({"replica_id": rid,
                            "leo": None if r is None or r.log_end_offset < 0 else r.log_end_offset,
                            "last_caught_up_time_ms": None if r is None else r.last_caught_up_time_ms})
            self._emit("isr_change", now_ms, action="shrink", old_isr=sorted(committed.isr),
                       isr=list(sent.isr), isr_state="proposed", partition_epoch=self.partition_epoch,
                       reason="follower_lagging", error="NONE", out_of_sync_replicas=oos)
        return AlterPartitionRequest(self.topic, self.partition, self.broker_id, sent, pending)

    def handle_alter_partition_response(
        self, request: AlterPartitionRequest, response: LeaderAndIsr | Errors, now_ms: int
    ) -> AlterPartitionOutcome:
        """The `submitAlterPartition` callback: `handleAlterPartitionUpdate` on success,
        `handleAlterPartitionError` on error (reference §2.5 table)."""
        proposed = request.proposed_state
        action = "expand" if isinstance(proposed, PendingExpandIsr) else "shrink"
        old_isr = sorted(proposed.last_committed_state.isr)
        if self.partition_state is not proposed:
            # A LeaderAndIsr / metadata update replaced the state meanwhile: nothing to do.
            return AlterPartitionOutcome(None, False)
        if isinstance(response, LeaderAndIsr):
            if response.leader_epoch != self.leader_epoch or response.partition_epoch < self.partition_epoch:
                self._emit("isr_change", now_ms, action=action, old_isr=old_isr, isr=list(response.isr),
                           isr_state="rejected", partition_epoch=self.partition_epoch,
                           reason="stale_response", error="NONE")
                return AlterPartitionOutcome(None, False)
            self.partition_state = CommittedPartitionState(frozenset(response.isr),
                                                           response.leader_recovery_state)
            self.partition_epoch = response.partition_epoch
            self._emit("isr_change", now_ms, action=action, old_isr=old_isr, isr=sorted(response.isr),
                       isr_state="committed", partition_epoch=self.partition_epoch,
                       reason="alter_partition", error="NONE")
            return AlterPartitionOutcome(None, self.maybe_increment_leader_hw(now_ms))
        error = Errors(response)
        if error in _RESET_ERRORS:
            self.partition_state = proposed.last_committed_state
            reason = "reset_to_committed"
            retry = None
        elif error in _STAY_PENDING_ERRORS:
            reason = "awaiting_metadata"
            retry = None
        else:
            reason = "retry"
            retry = request
        self._emit("isr_change", now_ms, action=action, old_isr=old_isr, isr=list(request.leader_and_isr.isr),
                   isr_state="rejected", partition_epoch=self.partition_epoch, reason=reason,
                   error=str(error))
        return AlterPartitionOutcome(retry, False)

    # --- leader-side follower fetch ------------------------------------------------------------------

    def follower_replica_or_throw(self, replica_id: int, current_leader_epoch: int | None) -> Replica:
        """`followerReplicaOrThrow`: UNKNOWN_LEADER_EPOCH if the request has an epoch, else
        NOT_LEADER_OR_FOLLOWER, for a replica outside the assignment."""
        replica = self.remote_replicas.get(replica_id)
        if replica is None:
            if current_leader_epoch is not None and current_leader_epoch != UNDEFINED_EPOCH:
                raise UnknownLeaderEpochError(
                    f"Replica {replica_id} is not in the assignment of {self.topic}-{self.partition}")
            raise NotLeaderOrFollowerError(
                f"Replica {replica_id} is not in the assignment of {self.topic}-{self.partition}")
        return replica

    def update_follower_fetch_state(
        self, replica: Replica, fetch_offset: int, follower_log_start_offset: int, fetch_time_ms: int,
        leader_end_offset: int, broker_epoch: int = -1,
    ) -> tuple[bool, AlterPartitionRequest | None]:
        """`updateFollowerFetchState`: record the fetch, maybe expand the ISR, and advance the HW if the
        follower's LEO changed. Returns (HW moved, AlterPartition request to send)."""
        prev_leo = replica.log_end_offset
        cached_epoch = None if broker_epoch == -1 else self.metadata.broker_epoch(replica.broker_id)
        replica.update_fetch_state(fetch_offset, follower_log_start_offset, fetch_time_ms, leader_end_offset,
                                   broker_epoch, cached_epoch)
        events = self.events
        if events is not None:
            epoch = self.leader_epoch
            events.add_follower_fetch_state(
                fetch_time_ms, self.broker_id, self.topic, self.partition, epoch if epoch >= 0 else None,
                replica.broker_id, fetch_offset, replica.last_caught_up_time_ms, leader_end_offset)
        alter = None
        state = self.partition_state
        if not state.is_inflight and replica.broker_id not in state.isr:
            alter = self.maybe_expand_isr(replica.broker_id, fetch_time_ms)
        hw_moved = prev_leo != fetch_offset and self.maybe_increment_leader_hw(fetch_time_ms)
        return hw_moved, alter

    def fetch_records(
        self,
        replica_id: int,
        fetch_offset: int,
        max_bytes: int,
        now_ms: int,
        *,
        current_leader_epoch: int | None = None,
        last_fetched_epoch: int | None = None,
        follower_log_start_offset: int = -1,
        broker_epoch: int = -1,
        isolation: FetchIsolation | None = None,
        fetch_only_from_leader: bool = True,
        min_one_message: bool = True,
        update_fetch_state: bool = True,
    ) -> LogReadInfo:
        """`fetchRecords` + `readRecords`: the leader side of one partition of a fetch (reference §2.2).

        `replica_id >= 0` is a follower (isolation LOG_END, follower state updated unless the read
        diverged or `update_fetch_state` is False, as for purgatory re-reads); `replica_id < 0` is a
        consumer (isolation HIGH_WATERMARK by default). Raises the Kafka exceptions of §2.2."""
        is_follower = replica_id >= 0
        if (current_leader_epoch is not None and current_leader_epoch != self.leader_epoch
                and current_leader_epoch != UNDEFINED_EPOCH) or (
                fetch_only_from_leader and self.leader_replica_id != self.broker_id):
            self.local_log_with_epoch_or_throw(current_leader_epoch, fetch_only_from_leader)  # raises
        log = self.log
        replica = None
        if is_follower:
            replica = self.remote_replicas.get(replica_id)
            if replica is None:
                self.follower_replica_or_throw(replica_id, current_leader_epoch)  # raises
        # Read the log's fields directly: this method runs once per partition of every fetch.
        hw = log._hw
        lso = log._log_start_offset
        leo = log._leo
        if last_fetched_epoch is not None and last_fetched_epoch != UNDEFINED_EPOCH:
            # lastOffsetForLeaderEpoch without its epoch check: local_log_with_epoch_or_throw did it.
            eo_epoch, eo_end = log.epoch_cache.end_offset_for(last_fetched_epoch, leo)
            if eo_end == UNDEFINED_EPOCH_OFFSET or eo_epoch == UNDEFINED_EPOCH:
                raise OffsetOutOfRangeError(
                    f"Could not determine the end offset of the last fetched epoch {last_fetched_epoch} "
                    f"from the request")
            if fetch_offset < lso:
                raise OffsetOutOfRangeError(
                    f"Received request for offset {fetch_offset} for partition {self.topic}-{self.partition}, "
                    f"but we only have log segments starting from offset: {lso}.")
            if eo_epoch < last_fetched_epoch or eo_end < fetch_offset:
                return LogReadInfo(fetch_offset, (), 0, (eo_epoch, eo_end), hw, lso, leo, hw)
        if fetch_offset == leo:
            # A caught-up follower (most partitions of most fetches): `UnifiedLog.read` returns nothing
            # at the LEO whatever the isolation, so skip the call and its result tuple.
            batches: tuple[RecordBatch, ...] = ()
            size = partial = 0
        else:
            if isolation is None:
                isolation = FetchIsolation.LOG_END if is_follower else FetchIsolation.HIGH_WATERMARK
            _, batches, size, partial = log.read(fetch_offset, max_bytes, isolation, min_one_message)
        if replica is not None and update_fetch_state:
            hw_moved, alter = self.update_follower_fetch_state(
                replica, fetch_offset, follower_log_start_offset, now_ms, leo, broker_epoch)
            return new_tuple(LogReadInfo, (fetch_offset, batches, size, None, hw, lso, leo, hw, hw_moved, alter,
                                           partial))
        return new_tuple(LogReadInfo, (fetch_offset, batches, size, None, hw, lso, leo, hw, False, None, partial))

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int | None, leader_epoch: int, fetch_only_from_leader: bool = True
    ) -> EpochEndOffset:
        """`lastOffsetForLeaderEpoch` (OffsetsForLeaderEpoch and the divergence check): errors are
        returned, not raised; an unknown epoch gives (NONE, -1, -1)."""
        err = self.check_current_leader_epoch(current_leader_epoch)
        if err is not Errors.NONE:
            return EpochEndOffset(err, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if fetch_only_from_leader and not self.is_leader:
            return EpochEndOffset(Errors.NOT_LEADER_OR_FOLLOWER, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        found = self.log.end_offset_for_epoch(leader_epoch)
        if found is None:
            return EpochEndOffset(Errors.NONE, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        return EpochEndOffset(Errors.NONE, found[0], found[1])

    def fetch_offset_snapshot(self, current_leader_epoch: int | None,
                              fetch_only_from_leader: bool) -> tuple[int, int, int, int]:
        """`fetchOffsetSnapshot`: (log start, HW, last stable, LEO) after the epoch checks."""
        log = self.local_log_with_epoch_or_throw(current_leader_epoch, fetch_only_from_leader)
        return log.log_start_offset, log.high_watermark, log.high_watermark, log.log_end_offset

    def fetch_latest_offset(self, isolation: str | None, current_leader_epoch: int | None = None,
                            fetch_only_from_leader: bool = True) -> int:
        """`fetchOffsetForTimestamp(LATEST_TIMESTAMP, isolationLevel)`: LEO without isolation, else the HW
        (read_uncommitted) / LSO (read_committed); `OffsetNotAvailableError` for a client while the HW
        lags the start of the current leader epoch (KIP-207)."""
        log = self.local_log_with_epoch_or_throw(current_leader_epoch, fetch_only_from_leader)
        start = self.leader_epoch_start_offset
        if isolation is not None and start is not None and start > log.high_watermark:
            raise OffsetNotAvailableError(
                f"Failed to fetch offsets for partition {self.topic}-{self.partition} with leader epoch "
                f"{self.leader_epoch} as this partition's high watermark ({log.high_watermark}) is lagging "
                f"behind the start offset from the beginning of this epoch ({start}).")
        return log.log_end_offset if isolation is None else log.high_watermark

    def fetch_earliest_offset(self, current_leader_epoch: int | None = None,
                              fetch_only_from_leader: bool = True) -> int:
        """`fetchOffsetForTimestamp(EARLIEST_TIMESTAMP)`: the log start offset."""
        return self.local_log_with_epoch_or_throw(current_leader_epoch, fetch_only_from_leader).log_start_offset

    # --- produce -----------------------------------------------------------------------------------------

    def append_records_to_leader(self, record_count: int, size_bytes: int, checksum: int,
                                 required_acks: int, now_ms: int) -> AppendResult:
        """`appendRecordsToLeader`: NOT_ENOUGH_REPLICAS for acks=all when the committed ISR is below the
        effective min ISR (checked before the append), then append and maybe advance the HW."""
        if self.leader_replica_id != self.broker_id:
            raise NotLeaderOrFollowerError(
                f"Leader not local for partition {self.topic}-{self.partition} on broker {self.broker_id}")
        min_isr = self._effective_min_isr
        if required_acks == -1 and len(self.partition_state.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {sorted(self.partition_state.isr)} is insufficient to satisfy "
                f"the min.isr requirement of {min_isr} for partition {self.topic}-{self.partition}")
        batch = self.log.append_as_leader(record_count, size_bytes, checksum, self.leader_epoch, now_ms)
        return new_tuple(AppendResult, (batch, self.maybe_increment_leader_hw(now_ms)))

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, Errors]:
        """`checkEnoughReplicasReachOffset` (acks=all completion): done once HW >= `required_offset`;
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR is then below the effective min ISR."""
        if not self.is_leader:
            return False, Errors.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if self.effective_min_isr() <= len(self.partition_state.maximal_isr):
                return True, Errors.NONE
            return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, Errors.NONE

    # --- follower side -----------------------------------------------------------------------------------

    def append_records_to_follower(self, batches: list[RecordBatch] | tuple[RecordBatch, ...],
                                   now_ms: int) -> LogAppendInfo:
        """`appendRecordsToFollowerOrFutureReplica`: `appendAsFollower` (with the empty-log restart)."""
        return self.log.append_as_follower(batches, now_ms)

    def update_follower_high_watermark(self, leader_high_watermark: int, now_ms: int) -> bool:
        """Follower HW := min(leader HW, LEO) clamped at the LSO (`maybeUpdateHighWatermark`); may move
        back. Returns True if it changed."""
        old = self.log.high_watermark
        return self.log.update_high_watermark(leader_high_watermark, now_ms, role="follower") != old

    def maybe_increment_log_start_offset(self, leader_log_start_offset: int, now_ms: int) -> bool:
        """`maybeIncrementLogStartOffset(.., LeaderOffsetIncremented)` on a follower."""
        return self.log.maybe_increment_log_start_offset(leader_log_start_offset, now_ms, role="follower")

    def truncate_to(self, offset: int, now_ms: int, reason: str) -> bool:
        """`Partition.truncateTo` -> `UnifiedLog.truncateTo` (follower)."""
        return self.log.truncate_to(offset, now_ms, reason=reason, role="follower")

    def truncate_fully_and_start_at(self, offset: int, now_ms: int, reason: str = "full") -> None:
        """`Partition.truncateFullyAndStartAt` -> `UnifiedLog.truncateFullyAndStartAt`."""
        self.log.truncate_fully_and_start_at(offset, now_ms, reason=reason, role="follower")
