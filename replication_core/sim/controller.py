"""The controller: broker liveness, leader election, AlterPartition, metadata propagation, reassignment.

Mirrors the KRaft `QuorumController` / `ReplicationControlManager` (reference §2.5, §8.4) with one
controller node that never fails:
* liveness: a broker is fenced when no heartbeat arrived for `broker.session.timeout.ms`; fencing
  removes it from every ISR it is in (never emptying an ISR, unless the cluster runs eligible leader
  replicas) and re-elects the partitions it led. KRaft (4.0+) checks eight times per session timeout, fencing
  one expired broker per check (the `maybeFenceStaleBroker` periodic task); the ZooKeeper-era mode
  (`cluster.fence_on_reregistration: false`) and `cluster.kraft_lifecycle: false` check every quarter session.
  KRaft refuses the registration of a new incarnation while the previous one's session is valid
  (`ClusterControlManager.registerBroker`: DUPLICATE_BROKER_REGISTRATION; the broker asks again every heartbeat
  interval), so a quick restart waits for the old session to expire (a registration after the expiry but before
  the check fences the old one itself, `handleBrokerShutdown`). An accepted registration
  leaves the broker fenced: it gets its partitions (and follows), and is unfenced by its first heartbeat
  without `wantFence`, sent once it has published that metadata (`BrokerHeartbeatManager
  .calculateNextBrokerState`). The ZooKeeper-era mode keeps its behaviour: a restart shorter than the
  session timeout goes unnoticed (KIP-101's scenario relies on it). Until its registration is through, a
  restarted broker ignores the partition metadata sent to its previous process: KRaft brokers publish
  metadata only once registered and caught up;
* elections (`PartitionChangeBuilder`): the first live, unfenced, not-shutting-down replica of the
  assignment that is in the ISR (clean); if none and the topic enables
  `unclean.leader.election.enable`, the first live replica at all (unclean, ISR = {leader}); else the
  partition goes offline (leader -1, ISR kept). Every election is a `leader_election` event emitted
  with `broker_id` = the controller id;
* eligible leader replicas (KIP-966, `cluster.eligible_leader_replicas`): `_change` replaces the above with
  Kafka 4.1's `PartitionChangeBuilder`: the ISR may become empty, replicas that left it below min ISR are
  eligible and elected before any unclean election, and a broker registering after an unclean shutdown
  leaves every ISR and ELR;
* AlterPartition (`validateAlterPartitionData`, checked in Kafka's order; KRaft rejects a proposed ISR
  member whose broker epoch is not its registration's, KIP-903) bumps the partition epoch
  and, like every other change, is published to the replicas' brokers as metadata (the
  `PartitionChangeRecord` every broker replays): a leader whose answer was lost still learns the
  committed ISR, and followers their new partition epoch;
* metadata reaches each broker through an ordered channel with network delay (KRaft brokers replay
  the metadata log in order): a cut link delays it, it is never reordered, and a broker that
  restarts is sent the full state of its partitions. In KRaft each delivery carries everything
  committed for the broker when it was sent, applied as one delta (`coalesce`): a broker fetches the
  metadata log from its offset, and `MetadataLoader.handleCommit` publishes one delta per read of
  committed batches, so after a lost fetch it does not apply a partition state that a record already
  committed when the read was sent had replaced. The ZooKeeper-era mode
  (`cluster.fence_on_reregistration: false`) sends one LeaderAndIsr at a time, as
  `ControllerChannelManager`'s `RequestSendThread` does, retrying the same request after a failed send
  (`cluster.metadata_deltas: false` does the same in KRaft mode).
  A partition left without a leader is published too: each replica that gets it, its last leader
  included, becomes a follower of nobody (`ReplicaManager.applyLocalFollowersDelta`; ZooKeeper's
  `removeReplicasFromIsr` sends the same LeaderAndIsr with leader -1), so it stops serving produce and
  fetch requests for it at once;
* controlled shutdown moves leadership away first and removes the broker from ISRs. Under KRaft's lifecycle the
  request rides the broker's heartbeats and the answer says when to stop (`_on_controlled_shutdown_heartbeat`):
  SHUTDOWN_NOW once the broker leads nothing and every active broker has reported, in its own heartbeats, the
  metadata offset of the leadership moves (`BrokerHeartbeatManager.calculateNextBrokerState`), so a crashed broker
  not yet fenced holds it up; the ZooKeeper-era mode and `kraft_lifecycle: false` stop the broker 200 ms after
  the request;
* auto leader rebalance (`auto.leader.rebalance.enable`): KRaft's `electPreferred` periodic task (Kafka 4.0+) runs
  every `leader.imbalance.check.interval.seconds` from the controller's start, and `ReplicationControlManager
  .maybeBalancePartitionLeaders` gives each partition led by other than its preferred replica a preferred election
  (`PartitionChangeBuilder.electPreferredLeader`: the preferred replica if it is an eligible ISR member, else the
  leader stays); the
  ZooKeeper-era mode runs `KafkaController.checkAndTriggerAutoLeaderRebalance`, 5 s after the controller starts and
  then every period, for the brokers whose preferred partitions are led elsewhere above
  `leader.imbalance.per.broker.percentage`;
* reassignment adds the target replicas (throttled through the topics' `*.replication.throttled.replicas`,
  which cover every move in progress as `kafka-reassign-partitions --execute --additional --throttle` sets
  them, and the brokers' throttled rates), and completes when every target replica is in the ISR, in the same
  change as the AlterPartition that made it so (a leader the move removes is answered NEW_LEADER_ELECTED): the
  replica set becomes the target, leadership moves if needed, removed replicas get StopReplica(delete), and
  once the topic has no move left its throttles are cleared (as the tool's `--verify` clears them). Epochs
  follow KRaft: each step bumps the partition epoch, and the leader epoch only when it removes a replica or
  changes the leader (ZooKeeper's controller also bumped it when the reassignment started).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from replication_core.errors import Errors
from replication_core.events import make_event
from replication_core.partition import NO_LEADER, AlterPartitionRequest, LeaderAndIsr, PartitionRegistration
from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.rpc import Call

if TYPE_CHECKING:
    from replication_core.sim.cluster import Cluster



def assign_replicas(partition: int, replication_factor: int, num_brokers: int) -> list[int]:
    """Broker indexes of a partition's replicas, as Kafka's rack-unaware
    `AdminUtils.assignReplicasToBrokers` places them (start index and first shift fixed at 0 instead of
    random): leaders round robin, followers shifted by a step that grows every `num_brokers`
    partitions, so each broker follows many leaders rather than its two neighbours."""
    first = partition % num_brokers
    if replication_factor == 1 or num_brokers == 1:
        return [first]
    shift = partition // num_brokers
    out = [first]
    for j in range(replication_factor - 1):
        out.append((first + 1 + (shift + j) % (num_brokers - 1)) % num_brokers)
    return out


@dataclass(frozen=True)
class MetadataUpdate:
    """What one delivery of the metadata channel carries to a broker."""

    states: Mapping[TopicPartition, PartitionRegistration]
    fenced: frozenset[int]
    shutting_down: frozenset[int]
    stop: tuple[tuple[TopicPartition, int], ...] = ()
    throttles: tuple[tuple[str, tuple[str, ...], tuple[str, ...], int | None], ...] = ()
    # The broker incarnation the controller had registered when it sent this (None: not checked, the
    # ZooKeeper-era `fence_on_reregistration: false`). A restarted process that has not registered yet
    # drops the partition states, StopReplicas and fencing of an update addressed to its predecessor (a
    # replica removed meanwhile then keeps its log on disk, unhosted, as a stray log would).
    incarnation: int | None = None
    # (broker, broker epoch) of every registered, unfenced broker: the metadata cache's
    # `getAliveBrokerEpoch` (KIP-903; empty in the ZooKeeper-era mode, which checks no broker epochs).
    broker_epochs: tuple[tuple[int, int], ...] = ()
    # The update carries every partition assigned to the broker (sent when it registers or is unfenced):
    # the first one a process applies is KRaft's first metadata publish, after which a broker deletes the
    # logs on its disk that the image does not assign to it (`BrokerMetadataPublisher`'s stray logs).
    full_state: bool = False
    # How many throttle changes the controller had made when it sent this (`Controller.throttle_version`): a process
    # that started after them read them at start, and applies only newer ones (`Broker._apply_throttles`).
    throttle_version: int = 0
    # The metadata log offset this update brings the broker to (`Controller.metadata_offset` of its flush): what the
    # broker's heartbeats report once it has applied it (`currentMetadataOffset`).
    offset: int = 0


def one_delta(updates: Sequence[MetadataUpdate], coalescing: bool) -> int:
    """How many updates from the head of `updates` one application takes: with KRaft's metadata deltas
    (`coalescing`) those addressed to the head's incarnation, else one (a LeaderAndIsr at a time)."""
    if not coalescing:
        return 1
    n = 1
    while n < len(updates) and updates[n].incarnation == updates[0].incarnation:
        n += 1
    return n


def coalesce(updates: list[MetadataUpdate]) -> MetadataUpdate:
    """The one delta a KRaft broker applies for several metadata updates read together, oldest first
    (`MetadataBatchLoader` replays every record into one `MetadataDelta`): per partition the last
    registration or StopReplica wins, the broker sets (fenced, shutting down, epochs) are the newest, and
    throttle changes keep their order. All of `updates` must be addressed to the same incarnation."""
    if len(updates) == 1:
        return updates[0]
    last = updates[-1]
    states: dict[TopicPartition, PartitionRegistration] = {}
    stops: dict[TopicPartition, int] = {}
    throttles: list[tuple[str, tuple[str, ...], tuple[str, ...], int | None]] = []
    full_state = False
    for u in updates:
        if u.incarnation != last.incarnation:
            raise ValueError(f"coalesce: updates for incarnations {u.incarnation} and {last.incarnation}; "
                             "expected one incarnation")
        for tp, reg in u.states.items():
            stops.pop(tp, None)
            states[tp] = reg
        for tp, epoch in u.stop:
            # A replica removed after a registration: the delta shows the partition without this broker.
            states.pop(tp, None)
            stops[tp] = epoch
        throttles.extend(u.throttles)
        full_state = full_state or u.full_state
    return MetadataUpdate(states, last.fenced, last.shutting_down, tuple(stops.items()), tuple(throttles),
                          last.incarnation, last.broker_epochs, full_state, max(u.throttle_version for u in updates),
                          last.offset)


@dataclass
class PartitionInfo:
    """The controller's record of one partition (`PartitionRegistration`)."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    target: list[int] | None = None
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)

    def registration(self) -> PartitionRegistration:
        """The LeaderAndIsr partition state."""
        return PartitionRegistration(self.leader, self.leader_epoch, tuple(self.isr), tuple(self.replicas),
                                     self.partition_epoch, tuple(self.adding), tuple(self.removing))


# `ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE`: preferred elections per balancing pass; the rest go to a
# pass 10 ms later (`PeriodicTask`'s immediate period, `AGAIN_MS`, which also follows a run that fenced a broker).
MAX_ELECTIONS_PER_IMBALANCE = 1000
AGAIN_MS = 10
# `KafkaController.onControllerFailover`: the ZooKeeper-era controller's first auto-rebalance check.
ZK_FIRST_REBALANCE_CHECK_MS = 5000


class Controller:
    """The active controller (see module docstring)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.queue = cluster.queue
        spec = cluster.scenario.cluster
        self.node_id = spec.controller_id
        self.session_timeout_ms = spec.broker_session_timeout_ms
        self.retry_ms = spec.controller_retry_ms
        self.fence_on_reregistration = spec.fence_on_reregistration
        self.coalesces_metadata = spec.coalesces_metadata
        self.broker_epochs = spec.checks_broker_epochs
        self.elr_enabled = spec.eligible_leader_replicas
        self.handshake = spec.registration_handshake
        self.partitions: dict[TopicPartition, PartitionInfo] = {}
        self.by_broker: dict[int, list[TopicPartition]] = {}
        self.last_heartbeat: dict[int, int] = {}
        self.incarnations: dict[int, int] = {}
        self.fenced: set[int] = set()
        self.shutting_down: set[int] = set()
        self.throttles: dict[str, tuple[tuple[str, ...], tuple[str, ...], int | None]] = {}
        self._channels: dict[int, deque[MetadataUpdate]] = {}
        self._inflight: set[int] = set()
        self._dirty: dict[int, dict[TopicPartition, PartitionRegistration]] = {}
        self._dirty_stop: dict[int, list[tuple[TopicPartition, int]]] = {}
        self._dirty_throttles: list[tuple[str, tuple[str, ...], tuple[str, ...], int | None]] = []
        # Throttle changes made so far (each one is in `throttles` at once, and in the next flush's updates).
        self.throttle_version = 0
        self._full_state: set[int] = set()
        self._flush_scheduled = False
        self.rebalance = spec.auto_leader_rebalance_enable
        self.imbalance_check_ms = spec.leader_imbalance_check_interval_ms
        self.imbalance_per_broker_pct = spec.leader_imbalance_per_broker_percentage
        # Partitions led by other than their preferred replica (`imbalancedPartitions`).
        self._imbalanced: set[TopicPartition] = set()
        self.elections = {"clean": 0, "unclean": 0, "offline": 0, "controlled_shutdown": 0}
        # The metadata log as offsets: one per flush (a committed batch of records), the offset of the last update
        # queued for each broker, and the offset each broker last reported in a heartbeat (`BrokerHeartbeatManager`'s
        # `metadataOffset`).
        self.metadata_offset = 0
        self._sent_offset: dict[int, int] = {}
        self._reported_offset: dict[int, int] = {}
        # Brokers in KRaft's CONTROLLED_SHUTDOWN state, each with the offset of the records that moved its leadership
        # away (`controlledShutdownOffset`): granted SHUTDOWN_NOW once every active broker has reported that offset.
        self._shutdown_offsets: dict[int, int] = {}

    # --- set-up ---------------------------------------------------------------------------------------

    def create_topics(self) -> None:
        """Create every topic of the scenario: replicas round robin (or as assigned), ISR = replicas,
        leader = first replica, then start the liveness check."""
        brokers = sorted(self.cluster.brokers)
        n = len(brokers)
        start = 0
        for t in self.cluster.scenario.topics:
            for p in range(t.partitions):
                if t.assignment:
                    replicas = list(t.assignment[p])
                else:
                    replicas = [brokers[i] for i in assign_replicas(start + p, t.replication_factor, n)]
                tp = TopicPartition(t.name, p)
                info = PartitionInfo(replicas, list(replicas), replicas[0])
                self.partitions[tp] = info
                for b in replicas:
                    self.by_broker.setdefault(b, []).append(tp)
                self._emit_election(tp, info, "clean", "topic_creation")
                self._mark(tp, info)
            start += t.partitions
        for b in brokers:
            self.last_heartbeat[b] = self.queue.now_ms
            self.incarnations[b] = self.cluster.brokers[b].incarnation
            # Every broker's metadata image holds the new topics (a broker no partition is assigned to gets no
            # delivery here, but KRaft's brokers all replay the records; a restarted process learns them again
            # from its first delivery).
            rm = self.cluster.brokers[b].rm
            if rm is not None:
                rm.learn_partitions(self.partitions)
        if self.handshake:
            self.queue.after(self._fence_check_period_ms(), self._maybe_fence_one_stale_broker)
        else:
            self.queue.after(self.session_timeout_ms // 4 or 1, self._check_sessions)
        if self.rebalance and self.fence_on_reregistration:
            self.queue.after(self.imbalance_check_ms, self._maybe_balance_partition_leaders)
        elif self.rebalance:
            self.queue.after(ZK_FIRST_REBALANCE_CHECK_MS, self._check_and_trigger_auto_leader_rebalance)

    # --- liveness ---------------------------------------------------------------------------------------

    def heartbeat_from(self, broker_id: int, incarnation: int, wants_shutdown: bool = False,
                       want_fence: bool = False, metadata_offset: int = 0) -> None:
        """A broker's heartbeat leaves it (over the network), with its `wantShutDown` and `wantFence` flags and
        `currentMetadataOffset`. Only a heartbeat that asks for a controlled shutdown under KRaft's lifecycle
        gets an answer that matters (`_on_controlled_shutdown_heartbeat`); the others are one-way."""
        self.cluster.rpc.send(broker_id, self.node_id, self._on_heartbeat, broker_id, incarnation, wants_shutdown,
                              want_fence, metadata_offset)

    def sent_offset(self, broker_id: int) -> int:
        """The metadata offset of the last update queued for the broker (0 if none)."""
        return self._sent_offset.get(broker_id, 0)

    def register_from(self, broker_id: int, incarnation: int, previous_epoch: int = -1) -> None:
        """A (re)starting broker registers; retried until it gets through (`BrokerRegistration`, with the
        broker epoch its clean shutdown file holds as `previousBrokerEpoch`, -1 after a crash)."""
        broker = self.cluster.brokers[broker_id]
        if broker.incarnation != incarnation or not broker.alive:
            return
        if not self.cluster.rpc.send(broker_id, self.node_id, self._on_register, broker_id, incarnation,
                                     previous_epoch):
            self.queue.after(self.retry_ms, self.register_from, broker_id, incarnation, previous_epoch)

    def _on_heartbeat(self, broker_id: int, incarnation: int, wants_shutdown: bool = False,
                      want_fence: bool = False, metadata_offset: int = 0) -> None:
        if self.incarnations.get(broker_id) != incarnation:
            return  # a heartbeat of an incarnation that has not registered (or a stale one)
        self.last_heartbeat[broker_id] = self.queue.now_ms
        self._reported_offset[broker_id] = metadata_offset
        if wants_shutdown and self.handshake:
            self._on_controlled_shutdown_heartbeat(broker_id, incarnation)
            return
        # A fenced broker that wants to shut down is told to stop now and stays fenced
        # (`BrokerHeartbeatManager.calculateNextBrokerState`: FENCED + wantShutDown -> SHUTDOWN_NOW); one that
        # still wants to be fenced (a starting process before its first metadata publish) stays fenced.
        if broker_id in self.fenced and broker_id not in self.shutting_down and not wants_shutdown and not want_fence:
            self._unfence(broker_id)

    def _session_expired(self, broker_id: int) -> bool:
        """`BrokerHeartbeatTracker.isExpired`: not heard from for longer than the session timeout."""
        return self.queue.now_ms - self.last_heartbeat[broker_id] > self.session_timeout_ms

    def _session_valid(self, broker_id: int) -> bool:
        """`BrokerHeartbeatManager.hasValidSession`: unfenced, and its session not expired."""
        return broker_id not in self.fenced and not self._session_expired(broker_id)

    def _answer_registration(self, broker_id: int, incarnation: int, accepted: bool, previous_epoch: int) -> None:
        """The BrokerRegistration response travels back; a lost one makes the broker ask again (its request
        times out; replog retries after `controller_retry_ms`)."""
        broker = self.cluster.brokers[broker_id]
        if not self.cluster.rpc.send(self.node_id, broker_id, broker.registration_answered, incarnation, accepted,
                                     previous_epoch):
            self.queue.after(self.retry_ms, self.register_from, broker_id, incarnation, previous_epoch)

    def _on_register(self, broker_id: int, incarnation: int, previous_epoch: int = -1) -> None:
        previous = self.incarnations.get(broker_id)
        if not self.handshake:
            self._on_register_at_once(broker_id, incarnation, previous, previous_epoch)
            return
        if previous == incarnation:
            # Known already: a broker of the first start (registered with the topics), or an answer that was lost.
            self._answer_registration(broker_id, incarnation, True, previous_epoch)
            return
        if previous is not None and broker_id not in self.fenced:
            if self._session_valid(broker_id):
                self._answer_registration(broker_id, incarnation, False, previous_epoch)
                return
            # Expired, and the periodic check has not fenced it yet: the registration's `handleBrokerShutdown` takes it
            # out of every ISR and leadership as fencing would (`generateLeaderAndIsrUpdates` with it to remove).
            self._fence(broker_id, "broker_reregistered")
        self.incarnations[broker_id] = incarnation
        self.last_heartbeat[broker_id] = self.queue.now_ms
        if self.elr_enabled and previous is not None and previous_epoch != previous:
            # `ClusterControlManager.registerBroker` -> `handleBrokerShutdown`: a previous broker epoch other than
            # the last registration's means no clean shutdown (its log may lack what it acknowledged): out of
            # every ISR and ELR.
            self._unclean_shutdown(broker_id)
        self.shutting_down.discard(broker_id)
        # Registered fenced (`RegisterBrokerRecord.fenced`): its partitions reach it, and it follows, but it may not
        # lead nor join an ISR until a heartbeat unfences it.
        self.fenced.add(broker_id)
        self._send_full_state(broker_id)
        self._answer_registration(broker_id, incarnation, True, previous_epoch)

    def _on_register_at_once(self, broker_id: int, incarnation: int, previous: int | None,
                             previous_epoch: int) -> None:
        """Without the handshake: a new incarnation takes over as its registration arrives. The ZooKeeper-era mode
        leaves a restart within the session unnoticed; `kraft_lifecycle: false` fences the previous incarnation
        first and unfences the new one at once."""
        if previous == incarnation:
            return  # already known (the brokers present at topic creation)
        self.incarnations[broker_id] = incarnation
        self.last_heartbeat[broker_id] = self.queue.now_ms
        if previous is not None and broker_id not in self.fenced and self.fence_on_reregistration:
            self._fence(broker_id, "broker_reregistered")
        if self.elr_enabled and previous is not None and previous_epoch != previous:
            self._unclean_shutdown(broker_id)
        self.shutting_down.discard(broker_id)
        if broker_id in self.fenced:
            self._unfence(broker_id)
        else:
            self._send_full_state(broker_id)

    def _check_sessions(self) -> None:
        """Without the handshake (ZooKeeper era, `kraft_lifecycle: false`): every quarter session, fence each broker not
        heard from for longer than the session timeout."""
        now = self.queue.now_ms
        for b in sorted(self.last_heartbeat):
            if b not in self.fenced and now - self.last_heartbeat[b] > self.session_timeout_ms:
                self._fence(b, "session_timeout")
        self.queue.after(self.session_timeout_ms // 4 or 1, self._check_sessions)

    def _fence_check_period_ms(self) -> int:
        """`QuorumController.maybeFenceStaleBrokerPeriodNs`: eight checks per session timeout (Kafka 4.0+, KAFKA-17793),
        so a broker is fenced within 112.5% of it."""
        return max(1, self.session_timeout_ms // 8)

    def _maybe_fence_one_stale_broker(self) -> None:
        """The `maybeFenceStaleBroker` periodic task (`ReplicationControlManager.maybeFenceOneStaleBroker`): fence at
        most one expired broker, so that the next check sees its effect, and run again 10 ms later if it fenced one.
        Which of several expired brokers goes first is the tracker's hash order in Kafka; here the lowest id."""
        stale = next((b for b in sorted(self.last_heartbeat) if b not in self.fenced and self._session_expired(b)),
                     None)
        if stale is not None:
            self._fence(stale, "session_timeout")
        self.queue.after(AGAIN_MS if stale is not None else self._fence_check_period_ms(),
                         self._maybe_fence_one_stale_broker)

    def is_running(self, broker_id: int, incarnation: int) -> bool:
        """Whether the broker process `incarnation` is registered and unfenced (Kafka's RUNNING broker state,
        the only one from which `beginControlledShutdown` asks the controller for a controlled shutdown)."""
        return self.incarnations.get(broker_id) == incarnation and broker_id not in self.fenced

    def _eligible(self, b: int) -> bool:
        return b not in self.fenced and b not in self.shutting_down

    def _fence(self, broker_id: int, reason: str) -> None:
        """`handleBrokerFenced`: out of every ISR (never emptying one); re-elect what it led. A fenced broker leaves
        controlled shutdown (`BrokerHeartbeatManager.touch`): its next heartbeat is told to shut down now."""
        self.fenced.add(broker_id)
        self._shutdown_offsets.pop(broker_id, None)
        for tp in self.by_broker.get(broker_id, ()):
            info = self.partitions[tp]
            if broker_id not in info.isr:
                continue
            if self.elr_enabled:
                self._change(tp, info, [b for b in info.isr if b != broker_id], reason, remove=broker_id)
            elif info.leader == broker_id:
                self._elect(tp, info, exclude=broker_id, reason=reason)
            elif len(info.isr) > 1:
                info.isr.remove(broker_id)
                info.partition_epoch += 1
                self._mark(tp, info)
        self._mark_all_brokers()

    def _unfence(self, broker_id: int) -> None:
        """The broker is back: send it its partitions, elect it where a partition is offline."""
        self.fenced.discard(broker_id)
        for tp in self.by_broker.get(broker_id, ()):
            info = self.partitions[tp]
            if info.leader == NO_LEADER:
                if self.elr_enabled:
                    self._change(tp, info, list(info.isr), "broker_unfenced")
                else:
                    self._elect(tp, info, exclude=None, reason="broker_unfenced")
        self._mark_all_brokers()
        self._send_full_state(broker_id)

    # --- elections -------------------------------------------------------------------------------------

    def _unclean_allowed(self, topic: str) -> bool:
        return self.cluster.topic_configs[topic].unclean_leader_election_enable

    def _elect(self, tp: TopicPartition, info: PartitionInfo, exclude: int | None, reason: str,
               action: str = "clean") -> None:
        """`PartitionChangeBuilder.electLeader`: clean from the ISR, else unclean if enabled, else offline."""
        candidates = [b for b in info.replicas if b != exclude and self._eligible(b)]
        new_leader = next((b for b in candidates if b in info.isr), None)
        if new_leader is not None:
            if exclude is not None and exclude in info.isr and len(info.isr) > 1:
                info.isr.remove(exclude)
        elif candidates and self._unclean_allowed(tp.topic):
            new_leader = candidates[0]
            info.isr = [new_leader]
            action = "unclean"
        else:
            # Offline: KRaft keeps the last ISR member so it can come back as a clean leader.
            if info.leader != NO_LEADER:
                info.leader = NO_LEADER
                info.leader_epoch += 1
                info.partition_epoch += 1
                self._emit_election(tp, info, "offline", reason)
                self._mark(tp, info)
            return
        info.leader = new_leader
        info.leader_epoch += 1
        info.partition_epoch += 1
        self._emit_election(tp, info, action, reason)
        self._mark(tp, info)

    # --- auto leader rebalance ----------------------------------------------------------------------------

    def _maybe_balance_partition_leaders(self) -> None:
        """The `electPreferred` periodic task, every `leader.imbalance.check.interval.seconds` from the controller's
        start (Kafka 4.0+; `ReplicationControlManager.maybeBalancePartitionLeaders`): a preferred election for each
        imbalanced partition, up to `MAX_ELECTIONS_PER_IMBALANCE` of them (Kafka counts the records written: the
        elections that changed something), the rest 10 ms later."""
        elected = 0
        for tp in sorted(self._imbalanced):
            if elected >= MAX_ELECTIONS_PER_IMBALANCE:
                break
            if self._elect_preferred(tp, self.partitions[tp]):
                elected += 1
        self.queue.after(AGAIN_MS if elected >= MAX_ELECTIONS_PER_IMBALANCE else self.imbalance_check_ms,
                         self._maybe_balance_partition_leaders)

    def _elect_preferred(self, tp: TopicPartition, info: PartitionInfo) -> bool:
        """`PartitionChangeBuilder` with `Election.PREFERRED` on the ISR as it is: the preferred replica if it may
        lead, else the leader if it may, else the next replica of the assignment that may. Whether the leader
        changed. (With eligible leader replicas, a partition whose ISR and ELR are both empty is left alone here:
        Kafka's last-known-leader election for it belongs to `_change`.)"""
        def valid(b: int) -> bool:
            return ((b in info.isr or (not info.isr and b in info.elr)) and b in self.incarnations
                    and self._eligible(b))

        preferred = info.replicas[0]
        if info.leader == preferred:
            return False
        if valid(preferred):
            winner = preferred
        elif info.leader != NO_LEADER and valid(info.leader):
            return False
        else:
            winner = next((b for b in info.replicas[1:] if valid(b)), NO_LEADER)
            if winner == NO_LEADER:
                return False
        action = "preferred"
        if not info.isr and winner in info.elr:
            info.isr, info.elr, action = [winner], [b for b in info.elr if b != winner], "elr"
        info.leader = winner
        info.last_known_elr = []
        info.leader_epoch += 1
        info.partition_epoch += 1
        self._emit_election(tp, info, action, "leader_imbalance")
        self._mark(tp, info)
        return True

    def _check_and_trigger_auto_leader_rebalance(self) -> None:
        """`KafkaController.checkAndTriggerAutoLeaderRebalance` (ZooKeeper era), then again a check interval later:
        per preferred broker, when more than `leader.imbalance.per.broker.percentage` of its partitions are led by
        another broker (or none), a preferred election for each of them whose preferred replica is live, not shutting
        down and in the ISR (`PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection`); the ISR is
        kept, the leader epoch bumped."""
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp, info in self.partitions.items():
            by_preferred.setdefault(info.replicas[0], []).append(tp)
        for broker in sorted(by_preferred):
            tps = by_preferred[broker]
            away = [tp for tp in sorted(tps) if self.partitions[tp].leader != broker]
            if len(away) / len(tps) <= self.imbalance_per_broker_pct / 100:
                continue
            for tp in away:
                info = self.partitions[tp]
                if broker in info.isr and self._eligible(broker):
                    info.leader = broker
                    info.leader_epoch += 1
                    info.partition_epoch += 1
                    self._emit_election(tp, info, "preferred", "leader_imbalance")
                    self._mark(tp, info)
        self.queue.after(self.imbalance_check_ms, self._check_and_trigger_auto_leader_rebalance)

    # --- eligible leader replicas (KIP-966) ----------------------------------------------------------------

    def _min_isr(self, topic: str) -> int:
        """`getTopicEffectiveMinIsr`: the topic's min.insync.replicas capped at its replication factor, which
        Kafka reads as partition 0's current replica count (replicas being added or removed included)."""
        return min(self.cluster.topic_configs[topic].min_insync_replicas,
                   len(self.partitions[TopicPartition(topic, 0)].replicas))

    def _target_elr(self, tp: TopicPartition, info: PartitionInfo, target_isr: list[int],
                    unclean: int | None) -> list[int]:
        """`PartitionChangeBuilder.maybePopulateTargetElr`: none while the new ISR holds min ISR; below it, the
        ELR keeps its members and gains those leaving the ISR, less the new ISR and a broker back from an
        unclean shutdown. A replica that left while the ISR was below min ISR has every committed record: the
        HW does not move below min ISR (KIP-966 part 1, `Partition.maybeIncrementLeaderHW`)."""
        if len(target_isr) >= self._min_isr(tp.topic):
            return []
        candidates = set(info.elr) | set(info.isr)
        return sorted(b for b in candidates if b not in target_isr and b != unclean)

    def _change(self, tp: TopicPartition, info: PartitionInfo, target_isr: list[int], reason: str, *,
                remove: int | None = None, unclean: int | None = None, action: str = "clean") -> None:
        """One partition of `ReplicationControlManager.generateLeaderAndIsrUpdates` with ELR enabled:
        `PartitionChangeBuilder.build` on the target ISR (`remove` and `unclean` may not lead).

        The leader stays if it may; else the first replica of the assignment in the new ISR, or, when the ISR is
        empty, in the ELR (the new ISR is then that leader alone); else the last known leader when ISR and ELR
        are both empty and it may lead (`canElectLastKnownLeader` as fixed in Kafka 4.1, KAFKA-19522: an unclean
        election whatever the topic says); else, when the topic allows it, an unclean election; else no leader.
        The ISR may become empty. `last_known_elr` holds the last leader from the moment the ISR empties until
        the partition has a leader again (`maybeUpdateLastKnownLeader`)."""

        def acceptable(b: int) -> bool:
            # `LeaderAcceptor` / `isActive`: a registered broker, not fenced nor shutting down (never -1, which an
            # ISR emptied while the partition had no leader leaves as its last known leader).
            return b != remove and b != unclean and b in self.incarnations and self._eligible(b)

        elr = self._target_elr(tp, info, target_isr, unclean)

        def valid(b: int) -> bool:
            return (b in target_isr or (not target_isr and b in elr)) and acceptable(b)

        old_leader = info.leader
        new_leader, forced = old_leader, False
        if old_leader == NO_LEADER or not valid(old_leader):
            new_leader = next((b for b in info.replicas if valid(b)), NO_LEADER)
            last = info.last_known_elr
            if new_leader == NO_LEADER and not elr and not target_isr and len(last) == 1 and acceptable(last[0]):
                new_leader, forced = last[0], True
            elif new_leader == NO_LEADER and self._unclean_allowed(tp.topic):
                new_leader = next((b for b in info.replicas if acceptable(b)), NO_LEADER)
                forced = new_leader != NO_LEADER
        if new_leader != old_leader:
            if forced:
                # Unclean whatever the winner was (`maybeUpdateRecordElr` clears the ELR of an unclean change).
                target_isr, elr, action = [new_leader], [], "unclean"
            elif new_leader in elr:
                target_isr, elr, action = [new_leader], [b for b in elr if b != new_leader], "elr"
            elif new_leader == NO_LEADER:
                action = "offline"
        if new_leader != NO_LEADER:
            last_known = []
        elif not target_isr and target_isr != info.isr:
            last_known = [old_leader]
        else:
            last_known = info.last_known_elr
        if (new_leader == old_leader and target_isr == info.isr and elr == info.elr
                and last_known == info.last_known_elr):
            return
        info.isr, info.elr, info.last_known_elr = list(target_isr), elr, last_known
        info.partition_epoch += 1
        if new_leader != old_leader:
            info.leader = new_leader
            info.leader_epoch += 1
            self._emit_election(tp, info, action, reason)
        else:
            self._emit_change(tp, info, reason)
        self._mark(tp, info)

    def _unclean_shutdown(self, broker_id: int) -> None:
        """`handleBrokerUncleanShutdown`: the broker leaves every ISR and ELR it is in and may not lead them now."""
        for tp in self.by_broker.get(broker_id, ()):
            info = self.partitions[tp]
            if broker_id in info.isr or broker_id in info.elr:
                self._change(tp, info, [b for b in info.isr if b != broker_id], "unclean_shutdown",
                             unclean=broker_id)

    def _emit_election(self, tp: TopicPartition, info: PartitionInfo, action: str, reason: str) -> None:
        self.elections[action] = self.elections.get(action, 0) + 1
        events = self.cluster.events
        if events is not None:
            ev = make_event(
                "leader_election", self.queue.now_ms, self.node_id, tp.topic, tp.partition, info.leader_epoch,
                action=action, leader_id=info.leader if info.leader != NO_LEADER else None,
                partition_epoch=info.partition_epoch, isr=sorted(info.isr), replicas=list(info.replicas),
                reason=reason)
            if info.adding:
                ev["adding_replicas"] = list(info.adding)
            if info.removing:
                ev["removing_replicas"] = list(info.removing)
            if self.elr_enabled:
                ev["elr"] = list(info.elr)
            events.append(ev)

    def _emit_change(self, tp: TopicPartition, info: PartitionInfo, reason: str) -> None:
        """A committed `PartitionChangeRecord` that elected no leader, as a `partition_change` event: in runs with
        eligible leader replicas only, whose ELR changes nothing else records (other runs keep their event ids)."""
        events = self.cluster.events
        if events is None or not self.elr_enabled:
            return
        ev = make_event(
            "partition_change", self.queue.now_ms, self.node_id, tp.topic, tp.partition, info.leader_epoch,
            leader_id=info.leader if info.leader != NO_LEADER else None, partition_epoch=info.partition_epoch,
            isr=sorted(info.isr), elr=list(info.elr), replicas=list(info.replicas), reason=reason)
        if info.adding:
            ev["adding_replicas"] = list(info.adding)
        if info.removing:
            ev["removing_replicas"] = list(info.removing)
        events.append(ev)

    def leader_of(self, tp: TopicPartition) -> int:
        """The current leader (what a client's metadata request would say), -1 if offline."""
        return self.partitions[tp].leader

    # --- AlterPartition ----------------------------------------------------------------------------------

    def handle_alter_partition(self, call: Call) -> None:
        """`ReplicationControlManager.alterPartition`: validate each item, commit (publishing the change as
        metadata), answer the batch."""
        answers: list[tuple[AlterPartitionRequest, LeaderAndIsr | Errors]] = []
        for req in call.request:
            answers.append((req, self._alter_one(req)))
        self.cluster.rpc.reply(call, answers)

    def _alter_one(self, req: AlterPartitionRequest) -> LeaderAndIsr | Errors:
        tp = TopicPartition(req.topic, req.partition)
        info = self.partitions.get(tp)
        sent = req.leader_and_isr
        if info is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if sent.leader_epoch > info.leader_epoch or sent.partition_epoch > info.partition_epoch:
            return Errors.NOT_CONTROLLER
        if sent.leader_epoch < info.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if req.broker_id != info.leader:
            return Errors.INVALID_REQUEST
        if sent.partition_epoch < info.partition_epoch:
            return Errors.INVALID_UPDATE_VERSION
        if info.leader not in sent.isr or not set(sent.isr) <= set(info.replicas):
            return Errors.INVALID_REQUEST
        if self._ineligible_in(sent, info):
            return Errors.INELIGIBLE_REPLICA
        target = [b for b in info.replicas if b in sent.isr]
        if info.target is not None and set(info.target) <= set(target):
            # The change completes the reassignment in the same record (`PartitionChangeBuilder.build` ->
            # `completeReassignmentIfNeeded`): the answer states the partition after it, whose leader epoch is new
            # when a replica left (the leader then ignores it and waits for the metadata), and a leader the target
            # leaves out learns that the change elected another (`ReplicationControlManager.alterPartition`).
            info.isr = target
            self._complete_reassignment(tp)
            if info.leader != req.broker_id:
                return Errors.NEW_LEADER_ELECTED
            return LeaderAndIsr(info.leader, info.leader_epoch, tuple(info.isr), info.partition_epoch)
        if self.elr_enabled:
            # The leader, in the ISR it sent and not fenced (else its epoch would be stale), keeps leading.
            info.elr = self._target_elr(tp, info, target, None)
            info.last_known_elr = []
        info.isr = target
        info.partition_epoch += 1
        self._emit_change(tp, info, "alter_partition")
        # The PartitionChangeRecord goes to the metadata log, which every broker replays
        # (`ReplicaManager.applyDelta`): the leader's `makeLeader` with the new partition epoch resolves
        # a proposal still pending because this answer is lost (it then stays pending on
        # INVALID_UPDATE_VERSION, "awaiting new the latest metadata"); the followers' `makeFollower`
        # takes the new partition epoch. A leader that got the answer first already has this epoch; its
        # `makeLeader` (equal partition epoch) then abandons any proposal it made since the answer.
        self._mark(tp, info)
        return LeaderAndIsr(info.leader, info.leader_epoch, tuple(info.isr), info.partition_epoch)

    def _ineligible_in(self, sent: LeaderAndIsr, info: PartitionInfo) -> bool:
        """`ineligibleReplicasForIsr`: a member of the proposed ISR is fenced or shutting down, or (KRaft,
        KIP-903) the leader sent a broker epoch other than the broker's registration: its fetch state dates
        from an earlier process, whose log the restart may have lost. Without broker epochs
        (`cluster.broker_epochs: false`) only the members the proposal adds are checked, as replog's
        controller did before it modelled KIP-903, so that seeds pinned then keep their runs."""
        epochs = sent.broker_epochs if len(sent.broker_epochs) == len(sent.isr) else (-1,) * len(sent.isr)
        for b, epoch in zip(sent.isr, epochs, strict=True):
            if (self.broker_epochs or b not in info.isr) and not self._eligible(b):
                return True
            if self.broker_epochs and epoch != -1 and epoch != self.incarnations.get(b):
                return True
        return False

    # --- controlled shutdown ----------------------------------------------------------------------------

    def controlled_shutdown(self, broker_id: int) -> None:
        """`ControlledShutdown`: move leadership away, leave the ISRs, then let the broker stop cleanly."""
        self.shutting_down.add(broker_id)
        for tp in self.by_broker.get(broker_id, ()):
            info = self.partitions[tp]
            if self.elr_enabled:
                # KRaft's `handleBrokerInControlledShutdown`: out of every ISR; a partition it leads alone gets a
                # leader from the ELR, else goes offline (the replica joins the ELR and can lead again after a
                # clean restart).
                if broker_id in info.isr:
                    self._change(tp, info, [b for b in info.isr if b != broker_id], "controlled_shutdown",
                                 remove=broker_id, action="controlled_shutdown")
            elif info.leader == broker_id:
                # `generateLeaderAndIsrUpdates` with the broker to remove: it may not lead, so a partition it leads
                # alone goes offline now (its ISR kept), or to an unclean election where the topic allows one,
                # rather than at the end of the shutdown.
                self._elect(tp, info, exclude=broker_id, reason="controlled_shutdown", action="controlled_shutdown")
            elif broker_id in info.isr and len(info.isr) > 1:
                info.isr.remove(broker_id)
                info.partition_epoch += 1
                self._mark(tp, info)
        self._mark_all_brokers()

    def _on_controlled_shutdown_heartbeat(self, broker_id: int, incarnation: int) -> None:
        """KRaft: a heartbeat with `wantShutDown` (`BrokerHeartbeatManager.calculateNextBrokerState`, then
        `ReplicationControlManager.processBrokerHeartbeat`), answered with `shouldShutDown`.

        FENCED -> SHUTDOWN_NOW. UNFENCED -> CONTROLLED_SHUTDOWN if it leads a partition: leadership moves away and it
        leaves the ISRs (`controlled_shutdown`), and its controlled shutdown offset is the batch of those records;
        else SHUTDOWN_NOW. CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW once it leads nothing and every active broker
        (unfenced, not shutting down) has reported that offset (`lowestActiveOffset`). SHUTDOWN_NOW fences it
        (`handleBrokerFenced`)."""
        if broker_id in self.fenced:
            shut_down = True
        elif broker_id not in self._shutdown_offsets:
            if self.cluster.events is not None:
                self.cluster.events.append(make_event("broker_lifecycle", self.queue.now_ms, broker_id,
                                                      action="controlled_shutdown"))
            shut_down = not self._has_leaderships(broker_id)
            if not shut_down:
                self.controlled_shutdown(broker_id)
                # The records just made go out in the flush queued for this instant.
                self._shutdown_offsets[broker_id] = self.metadata_offset + 1
        else:
            shut_down = (not self._has_leaderships(broker_id)
                         and self._shutdown_offsets[broker_id] <= self._lowest_active_offset())
        if shut_down and broker_id not in self.fenced:
            self._fence(broker_id, "controlled_shutdown")
        broker = self.cluster.brokers[broker_id]
        self.cluster.rpc.send(self.node_id, broker_id, broker.heartbeat_answered, incarnation, shut_down)

    def _has_leaderships(self, broker_id: int) -> bool:
        """`BrokerToIsrs.hasLeaderships`: the broker leads some partition."""
        return any(self.partitions[tp].leader == broker_id for tp in self.by_broker.get(broker_id, ()))

    def _lowest_active_offset(self) -> int | float:
        """`BrokerHeartbeatManager.lowestActiveOffset`: the lowest metadata offset reported by an active broker
        (registered, unfenced, not in controlled shutdown); infinite if there is none. A crashed broker stays active,
        with the offset it last reported, until its session expires and it is fenced."""
        offsets = [self._reported_offset.get(b, 0) for b in self.incarnations
                   if b not in self.fenced and b not in self._shutdown_offsets]
        return min(offsets) if offsets else float("inf")

    def broker_stopped(self, broker_id: int) -> None:
        """The broker finished its clean shutdown: fence it without waiting for the session to expire."""
        if broker_id not in self.fenced:
            self._fence(broker_id, "controlled_shutdown")

    # --- reassignment -----------------------------------------------------------------------------------

    def reassign(self, tp: TopicPartition, target: list[int], throttle_rate: int | None) -> None:
        """`alterPartitionReassignments`: add the target replicas (throttled) and complete once the ISR holds the
        target, at once when there is nothing to add and it already does."""
        info = self.partitions[tp]
        # `PartitionReassignmentReplicas`: both differences in ascending order (a TreeSet), the merged assignment
        # the target followed by the removing replicas, which is the order elections try them in.
        adding = sorted(b for b in target if b not in info.replicas)
        removing = sorted(b for b in info.replicas if b not in target)
        if list(target) == info.replicas:
            return
        if not adding and set(target) <= set(info.isr):
            # Nothing to add and the ISR holds every target replica (fewer replicas, or the same in another order):
            # the change that starts the reassignment completes it (KRaft `PartitionChangeBuilder.build` completes
            # it in the same record; ZooKeeper's `onPartitionReassignment` goes straight to its phase B).
            info.adding, info.removing, info.target = [], removing, list(target)
            self._complete_reassignment(tp)
            return
        info.replicas = list(target) + removing
        info.adding, info.removing, info.target = adding, removing, list(target)
        # Widening the assignment bumps the partition epoch only (KRaft `PartitionChangeBuilder
        # .triggerLeaderEpochBumpIfNeeded`: no replica leaves it): the leader learns its new followers from the
        # metadata at its epoch (`Partition.makeLeader`, `updateAssignmentAndIsr`), and the adding replicas start
        # fetching in that epoch. ZooKeeper's controller bumped the leader epoch here as well.
        info.partition_epoch += 1
        for b in adding:
            self.by_broker.setdefault(b, []).append(tp)
        self._emit_change(tp, info, "reassignment")
        if throttle_rate is not None:
            # `kafka-reassign-partitions --execute --additional --throttle` sets the throttled-replica lists of every
            # topic with a move in progress, over all of its moves (calculateProposedMoveMap), not this one alone.
            for topic, (leader_entries, follower_entries) in self._move_throttles().items():
                self._set_throttle(topic, leader_entries, follower_entries, throttle_rate)
        self._mark(tp, info)

    def _move_throttles(self) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
        """`calculateLeaderThrottles` / `calculateFollowerThrottles` over the moves in progress: per topic, the
        `partition:broker` entries of each move's sources (its replicas but the adding ones) and of its adding
        replicas, sorted as Kafka's TreeSet sorts them."""
        leaders: dict[str, set[str]] = {}
        followers: dict[str, set[str]] = {}
        for tp, info in self.partitions.items():
            if info.target is None:
                continue
            sources = [b for b in info.replicas if b not in info.adding]
            leaders.setdefault(tp.topic, set()).update(f"{tp.partition}:{b}" for b in sources)
            followers.setdefault(tp.topic, set()).update(f"{tp.partition}:{b}" for b in info.adding)
        return {t: (tuple(sorted(leaders[t])), tuple(sorted(followers.get(t, set())))) for t in sorted(leaders)}

    def _complete_reassignment(self, tp: TopicPartition) -> None:
        """`PartitionChangeBuilder.completeReassignmentIfNeeded` once the ISR holds the target: the assignment becomes
        the target, a leader it leaves out gives way to an election, removed replicas get StopReplica(delete). One
        change, with the ISR change that made it possible when an AlterPartition did."""
        info = self.partitions[tp]
        target = info.target
        if target is None or not set(target) <= set(info.isr):
            return
        removed = list(info.removing)
        info.replicas = list(target)
        info.isr = [b for b in target if b in info.isr]
        # The ISR holds every target replica, so min ISR is met and there is no ELR (unless partition 0 of the topic,
        # whose replica count caps min ISR, is itself mid-reassignment with more replicas: an edge left out).
        info.elr, info.last_known_elr = [], []
        info.adding, info.removing, info.target = [], [], None
        epoch = info.partition_epoch
        if info.leader not in target:
            self._elect(tp, info, exclude=info.leader, reason="reassignment")
        if info.partition_epoch == epoch:
            # No election (the leader stays, or there was none and none is eligible now): the change commits the new
            # assignment. Removing replicas bumps the leader epoch, fencing the removed ones; a completion that
            # removes none (more replicas, or the same in another order) bumps the partition epoch only
            # (`PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded`).
            if removed:
                info.leader_epoch += 1
            info.partition_epoch += 1
            self._emit_change(tp, info, "reassignment")
            self._mark(tp, info)
        for b in removed:
            self.by_broker[b] = [x for x in self.by_broker.get(b, []) if x != tp]
            self._dirty_stop.setdefault(b, []).append((tp, info.leader_epoch))
        if tp.topic in self.throttles and not any(p.target for t, p in self.partitions.items()
                                                  if t.topic == tp.topic):
            self._set_throttle(tp.topic, (), (), None)
        self._schedule_flush()

    def _set_throttle(self, topic: str, leader_entries: tuple[str, ...], follower_entries: tuple[str, ...],
                      rate: int | None) -> None:
        if leader_entries or follower_entries:
            self.throttles[topic] = (leader_entries, follower_entries, rate)
        else:
            self.throttles.pop(topic, None)
        self._dirty_throttles.append((topic, leader_entries, follower_entries, rate))
        self.throttle_version += 1
        self._schedule_flush()

    # --- metadata propagation ----------------------------------------------------------------------------

    def _mark(self, tp: TopicPartition, info: PartitionInfo) -> None:
        """Queue the partition's registration for every replica's broker (leaderless ones too)."""
        reg = info.registration()
        for b in info.replicas:
            self._dirty.setdefault(b, {})[tp] = reg
        if info.leader == info.replicas[0]:
            self._imbalanced.discard(tp)
        else:
            self._imbalanced.add(tp)
        self._schedule_flush()

    def _mark_all_brokers(self) -> None:
        # Fencing state changed: every broker's metadata cache needs it (ISR eligibility).
        for b in self.cluster.brokers:
            self._dirty.setdefault(b, {})
        self._schedule_flush()

    def _send_full_state(self, broker_id: int) -> None:
        dirty = self._dirty.setdefault(broker_id, {})
        for tp in self.by_broker.get(broker_id, ()):
            dirty[tp] = self.partitions[tp].registration()
        self._full_state.add(broker_id)
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.queue.at(self.queue.now_ms, self._flush)

    def _flush(self) -> None:
        """One metadata delivery per broker for everything changed at this instant (one batch of the metadata log)."""
        self._flush_scheduled = False
        self.metadata_offset += 1
        offset = self.metadata_offset
        fenced, shutting = frozenset(self.fenced), frozenset(self.shutting_down)
        throttles = tuple(self._dirty_throttles)
        targets = sorted(set(self._dirty) | set(self._dirty_stop) | (set(self.cluster.brokers) if throttles else set()))
        epochs = (tuple(sorted((b, e) for b, e in self.incarnations.items() if b not in self.fenced))
                  if self.broker_epochs else ())
        for b in targets:
            update = MetadataUpdate(self._dirty.get(b, {}), fenced, shutting, tuple(self._dirty_stop.get(b, ())),
                                    throttles, self.incarnations.get(b) if self.fence_on_reregistration else None,
                                    epochs, b in self._full_state, self.throttle_version, offset)
            self._sent_offset[b] = offset
            self._channels.setdefault(b, deque()).append(update)
            self._pump(b)
        self._dirty = {}
        self._dirty_stop = {}
        self._full_state = set()
        self._dirty_throttles = []

    def _pump(self, broker_id: int) -> None:
        channel = self._channels.get(broker_id)
        if not channel or broker_id in self._inflight:
            return
        delay = self.cluster.network.delay(self.node_id, broker_id)
        if delay is None:
            self._inflight.add(broker_id)
            self.queue.after(self.retry_ms, self._retry, broker_id)
            return
        self._inflight.add(broker_id)
        # What this send carries: KRaft, everything committed for the broker so far; ZooKeeper, one LeaderAndIsr.
        self.queue.after(delay, self._deliver, broker_id, one_delta(channel, self.coalesces_metadata))

    def _retry(self, broker_id: int) -> None:
        self._inflight.discard(broker_id)
        self._pump(broker_id)

    def _deliver(self, broker_id: int, count: int) -> None:
        self._inflight.discard(broker_id)
        channel = self._channels[broker_id]
        update = coalesce([channel.popleft() for _ in range(count)])
        self.cluster.brokers[broker_id].apply_metadata(update)
        self._pump(broker_id)

    def snapshot(self) -> dict[str, Any]:
        """Final controller view for the run summary."""
        offline = sum(1 for info in self.partitions.values() if info.leader == NO_LEADER)
        under = sum(1 for info in self.partitions.values() if len(info.isr) < len(info.replicas))
        return {"offline_partitions": offline, "under_replicated_partitions": under,
                "elections": dict(self.elections)}
