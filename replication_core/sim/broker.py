"""A simulated broker: the engine's ReplicaManager and fetcher pool, driven by the virtual clock.

Mirrors `KafkaServer` / `BrokerServer` start-up and the threads around `ReplicaManager`:
* request handling (`KafkaApis`): follower Fetch (may park in the purgatory), OffsetsForLeaderEpoch,
  ListOffsets, Produce (acks=all may park as a `DelayedProduce`), and the controller's metadata
  (LeaderAndIsr / StopReplica / topic throttle configs);
* the scheduler tasks `isr-expiration` (every `replica.lag.time.max.ms / 2`, first run at start),
  `highwatermark-checkpoint` (every `replica.high.watermark.checkpoint.interval.ms`, first run as the process first
  applies partition metadata), `kafka-log-retention` (every
  `log.retention.check.interval.ms`) and `kafka-log-start-offset-checkpoint` (every
  `log.flush.start.offset.checkpoint.interval.ms`), the last two first run `log.initial.task.delay.ms` after start
  as `LogManager.startup` schedules them, each at fixed rate as `KafkaScheduler` runs them, the OS page-cache
  write-back (`disk.flush_interval_ms`), and the broker heartbeat to the controller;
* one actor per fetcher thread (`FetcherActor`), looping `doWork()` as `AbstractFetcherThread.run`
  does: after a round that sent a fetch at once (the leader's purgatory holds the fetch up to
  `replica.fetch.wait.max.ms` / `replica.fetch.min.bytes`), after an idle round after the backoff.

Crash and restart: every callback captures the broker's incarnation and is ignored once the broker
crashed; a crash throws the ReplicaManager and fetchers away and keeps only the `Disk`.

`partitionMapLock`: while a fetcher thread waits for a ListOffsets answer under its lock (OFFSET_OUT_OF_RANGE
handling, `ReplicaFetcherThread.partition_map_locked`), the metadata path that would take the lock
(`removeFetcherForPartitions` / `addFetcherForPartitions` / `shutdownIdleFetcherThreads`: any update with
partition states or StopReplica) waits, and so do the updates delivered after it (one metadata thread); the
metadata cache part of the blocked update (fenced / shutting-down brokers, throttle configs) is published first.
A GC pause stops everything (requests and tasks are held until it ends); a disk stall holds produce
requests, the scheduler tasks that write files, and a fetcher thread only where it writes its log (an answer
with records to append or a diverging epoch, an epoch or offset answer, a round that truncates to its HW):
a follower with nothing to append keeps fetching, as Kafka's thread does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from replication_core.config import ReplicationConfig
from replication_core.errors import Errors
from replication_core.event_log import EventLog
from replication_core.events import make_event
from replication_core.fetcher import ReplicaFetcherThread, Work, WorkResult
from replication_core.fetcher_manager import FetcherManager, replica_fetcher_factory
from replication_core.leader_endpoint import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from replication_core.log import DEFAULT_SEGMENT_BYTES, Log
from replication_core.partition import AlterPartitionRequest, BrokerMetadata, Partition, StaticBrokerMetadata
from replication_core.partition_fetch_state import BrokerEndPoint, FailedPartitions, TopicPartition
from replication_core.quota import FOLLOWER, LEADER, ReplicationQuotaManager
from replication_core.replica_manager import (
    AlterPartitionChannel,
    LeaderAndIsrRequest,
    LeaderQuota,
    ProduceBatch,
    ProduceResult,
    ReplicaManager,
)
from replication_core.sim.controller import coalesce, one_delta
from replication_core.sim.disk import Disk
from replication_core.sim.producer import ProduceAnswer, ProduceBatches
from replication_core.sim.rpc import Call

if TYPE_CHECKING:
    from replication_core.sim.cluster import Cluster
    from replication_core.sim.controller import MetadataUpdate
    from replication_core.sim.producer import ProduceRequest


# Read-only (an empty mapping proxy, frozen dataclasses): safe to share between calls and brokers.
_FETCH_NETWORK_ERROR = FetchResponse(MappingProxyType({}), error=Errors.NETWORK_EXCEPTION.value)
_EPOCHS_NETWORK_ERROR = OffsetsForLeaderEpochResponse(MappingProxyType({}), error=Errors.NETWORK_EXCEPTION.value)
_LIST_OFFSETS_NETWORK_ERROR = ListOffsetsResponse(error=Errors.NETWORK_EXCEPTION.value)
# `BrokerLifecycleManager`: the heartbeat period of a process still catching up with the metadata log (STARTING).
STARTING_HEARTBEAT_MS = 10
# `BrokerLifecycleManager`: the next heartbeat after the first answer to a controlled shutdown request that does not
# yet say shut down (PENDING_CONTROLLED_SHUTDOWN).
FIRST_PENDING_SHUTDOWN_HEARTBEAT_MS = 50


def _writes_log(response: Any) -> bool:
    """Whether processing `response` may write the follower's log (and so blocks on a stalled disk): a fetch
    answer with records to append or a diverging epoch to truncate at, any OffsetsForLeaderEpoch or ListOffsets
    answer that is not a failed call (a truncation may follow). HW and log-start updates stay in memory."""
    if isinstance(response, FetchResponse):
        return any(data.batches or data.diverging_epoch is not None for data in response.partitions.values())
    return bool(response.error == Errors.NONE.value)


class SimReplicaManager(ReplicaManager):
    """`ReplicaManager` whose partitions run with their topic's config (topic-level
    `min.insync.replicas` overrides) and whose logs live on the broker's `Disk`."""

    def __init__(self, broker_id: int, config: ReplicationConfig, disk: Disk,
                 topic_configs: dict[str, ReplicationConfig], *,
                 metadata: BrokerMetadata | None = None, events: EventLog | None = None,
                 controller: AlterPartitionChannel | None = None,
                 leader_quota: LeaderQuota | None = None, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        # The keywords are spelled out rather than forwarded as **kwargs: mypyc-compiled, a
        # `super().__init__(..., logs=..., **kwargs)` call passed them to the wrong parameters.
        super().__init__(broker_id, config, metadata=metadata, events=events, controller=controller,
                         leader_quota=leader_quota, logs=disk.logs, segment_bytes=segment_bytes)
        self._disk = disk
        self._topic_configs = topic_configs

    def get_or_create_partition(self, tp: TopicPartition) -> Partition:
        """`getOrCreatePartition`, registering the log on the disk and applying topic configs."""
        created = tp not in self.partitions
        p = super().get_or_create_partition(tp)
        if created:
            p.config = self._topic_configs.get(tp.topic, self.config)
            self._disk.logs[tp] = p.log
        return p


class FetcherActor:
    """The thread loop of one `ReplicaFetcherThread` (`ShutdownableThread.run` → `doWork`)."""

    __slots__ = ("_broker", "_busy", "_rerun", "_token", "_wake_at", "key", "thread")

    def __init__(self, broker: Broker, thread: ReplicaFetcherThread, key: tuple[int, int]) -> None:
        self._broker = broker
        self.thread = thread
        self.key = key
        self._busy = False
        self._rerun = False
        self._token = 0
        self._wake_at: int | None = None

    def wake(self, at_ms: int) -> None:
        """Run a `doWork` round at `at_ms` (now if it is in the past); one round in flight at a time."""
        if self.thread.is_shutdown:
            return
        if self._busy:
            self._rerun = True
            return
        if self._wake_at is not None and self._wake_at <= at_ms:
            return
        self._wake_at = at_ms
        self._token += 1
        b = self._broker
        b.queue.at(at_ms, self._run, self._token, b.incarnation)

    def _run(self, token: int, incarnation: int) -> None:
        b = self._broker
        if token != self._token or incarnation != b.incarnation or self.thread.is_shutdown:
            return
        self._wake_at = None
        now = b.queue.now_ms
        hold = b.paused_until
        if b.stalled_until > hold and self.thread.truncates_without_asking(now):
            hold = b.stalled_until
        if hold > now:
            self.wake(hold)
            return
        self._busy = True
        self._rerun = False
        gen = self.thread.work(now)
        self._step(gen, None, incarnation)

    def _step(self, gen: Work, reply: tuple[Any, int] | None, incarnation: int) -> None:
        thread = self.thread
        was_locked = thread.partition_map_locked
        try:
            request = next(gen) if reply is None else gen.send(reply)  # type: ignore[arg-type]
        except StopIteration as stop:
            self._busy = False
            if was_locked:
                self._broker.partition_map_lock_released()
            self._after(stop.value)
            return
        b = self._broker
        if was_locked and not thread.partition_map_locked:
            b.partition_map_lock_released()
        leader = b.cluster.brokers[self.thread.source_broker.id]
        # The error answer of a lost / timed-out call: immutable values, shared by every call.
        error: Any
        if isinstance(request, FetchRequest):
            error = _FETCH_NETWORK_ERROR
        elif isinstance(request, OffsetsForLeaderEpochRequest):
            error = _EPOCHS_NETWORK_ERROR
        else:
            error = _LIST_OFFSETS_NETWORK_ERROR

        # A partial, not a closure that names itself: a self-referencing closure is a reference cycle
        # that keeps the finished generator (and its request) alive until the cyclic GC finds it.
        b.cluster.rpc.call(b.broker_id, leader.broker_id, request, leader.handle_replica_request,
                           partial(self._on_reply, gen, incarnation), error, b.config.replica_socket_timeout_ms)

    def _on_reply(self, gen: Work, incarnation: int, response: Any, now_ms: int) -> None:
        """The leader's answer (or the call's error) reached this fetcher thread: resume `work()`."""
        b = self._broker
        if incarnation != b.incarnation:
            return  # this broker crashed meanwhile: the thread is gone
        hold = b.paused_until
        if b.stalled_until > hold and _writes_log(response):
            hold = b.stalled_until
        if hold > now_ms:
            # The thread is blocked (a GC pause, or a disk stall it writes into): it sees the answer when it resumes.
            b.queue.at(hold, self._on_reply, gen, incarnation, response, hold)
            return
        self._step(gen, (response, now_ms), incarnation)

    def _after(self, result: WorkResult) -> None:
        if self.thread.is_shutdown:
            return
        now = self._broker.queue.now_ms
        if result.fetch_sent or self._rerun:
            self.wake(now)
            return
        # `partitionMapCond.await(fetchBackOffMs)`: the whole backoff, unless partitions are added (`wake`).
        self.wake(now + (result.idle_backoff_ms or 0))


class Broker:
    """One broker process and its disk (`KafkaServer` with `ReplicaManager`, `ReplicaFetcherManager`,
    the replication quota managers and the `AlterPartitionManager` channel)."""

    def __init__(self, broker_id: int, cluster: Cluster) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        self.queue = cluster.queue
        self.config: ReplicationConfig = cluster.scenario.broker_config
        self.disk = Disk(broker_id)
        self.alive = False
        # The machine is up (False only after a power failure, until the process starts again): a dead process
        # on a live host refuses connections at once, a dead host never answers.
        self.host_up = True
        self.incarnation = 0
        self.paused_until = 0
        self.stalled_until = 0
        # The process has begun a controlled shutdown: its heartbeats say so (`wantShutDown`).
        self.wants_shutdown = False
        self.rm: SimReplicaManager | None = None
        self.fetchers: FetcherManager | None = None
        self.actors: dict[tuple[int, int], FetcherActor] = {}
        self.metadata = StaticBrokerMetadata()
        self.leader_quota: ReplicationQuotaManager | None = None
        self.follower_quota: ReplicationQuotaManager | None = None
        self._tick_at: int | None = None
        self._events: EventLog | None = cluster.events
        # Metadata updates waiting for a fetcher's partitionMapLock, oldest first, each with "its metadata
        # cache part is already applied".
        self._blocked_metadata: list[tuple[MetadataUpdate, bool]] = []
        # Metadata updates that came during a GC pause, oldest first (`_apply_paused_metadata`): one held call per
        # update is queued; each call takes one update, or with KRaft's metadata deltas every held update of one
        # incarnation (the later calls then find theirs taken). A restart empties it: what the old JVM held is
        # gone with it, and its calls, still queued, find nothing or take the new process's updates in order.
        self._paused_metadata: list[MetadataUpdate] = []
        # The controller's throttle changes this process has applied (`MetadataUpdate.throttle_version`).
        self._throttle_version = 0
        # No metadata published yet by this process (KRaft's `_firstPublish`): its first full state deletes the
        # stray logs on its disk (`_delete_stray_logs`).
        self._first_publish = True
        # This process's metadata cache holds every partition (`ReplicaManager.learn_partitions`), from its first
        # metadata delivery on.
        self._knows_cluster = False
        # KRaft's `BrokerLifecycleManager`: whether the controller accepted this process's registration, whether
        # it is ready to be unfenced (its first metadata publish is done, `setReadyToUnfence`), and the generation
        # of the scheduled heartbeat ("communication" is one deferred event that a reschedule replaces).
        self._registered = False
        self._ready_to_unfence = False
        self._heartbeat_seq = 0
        # The metadata log offset of the last update this process applied (its `currentMetadataOffset`, as far as
        # the updates addressed to it go), and whether the controller has answered its controlled shutdown request
        # (`gotControlledShutdownResponse`).
        self._metadata_offset = 0
        self._shutdown_answered = False
        # Whether this process's `highwatermark-checkpoint` task runs (`highWatermarkCheckPointThreadStarted`): from
        # its first application of partition metadata (`_start_hw_checkpoint`).
        self._hw_checkpoint_started = False

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self, action: str = "start") -> None:
        """Start (or restart) the broker process on its disk: emit `broker_lifecycle` and `broker_config`,
        build the ReplicaManager and fetcher manager, start the scheduler tasks, register."""
        now = self.queue.now_ms
        self.alive = True
        self.host_up = True
        self.incarnation += 1
        self.paused_until = self.stalled_until = 0
        self.wants_shutdown = False
        self._shutdown_answered = False
        self._metadata_offset = 0
        self.actors = {}
        self._tick_at = None
        self._blocked_metadata = []
        self._paused_metadata = []
        self._first_publish = True
        self._knows_cluster = False
        # The brokers of the first start are registered with the topics' creation (`Controller.create_topics`); a
        # process without the registration handshake (ZooKeeper era, `kraft_lifecycle: false`) is taken as
        # registered and ready from its start; a KRaft restart
        # registers and heartbeats only once the controller accepts it, and asks to stay fenced until its first
        # metadata publish.
        kraft_restart = action != "start" and self.cluster.scenario.cluster.registration_handshake
        self._registered = self._ready_to_unfence = not kraft_restart
        self._heartbeat_seq += 1
        events = self._events
        cfg = self.config
        if events is not None:
            events.append(make_event("broker_lifecycle", now, self.broker_id, action=action))
            events.append(make_event("broker_config", now, self.broker_id, config=self.cluster.config_map))
        emit = events.append if events is not None else None
        self.metadata = StaticBrokerMetadata()
        self.leader_quota = ReplicationQuotaManager.from_config(LEADER, self.broker_id, cfg, emit)
        self.follower_quota = ReplicationQuotaManager.from_config(FOLLOWER, self.broker_id, cfg, emit)
        controller = self.cluster.controller
        for topic, (leader_entries, follower_entries, rate) in controller.throttles.items():
            self.apply_throttle(topic, leader_entries, follower_entries, rate)
        self._throttle_version = controller.throttle_version
        rm = SimReplicaManager(self.broker_id, cfg, self.disk, self.cluster.topic_configs,
                               metadata=self.metadata, events=events, controller=self,
                               leader_quota=self.leader_quota,
                               segment_bytes=self.cluster.scenario.disk.segment_bytes)

        partitions = rm.partitions

        def logs(tp: TopicPartition) -> Log:
            # Hot path (several calls per partition per fetch round): a dict lookup, the engine's
            # UNKNOWN_TOPIC_OR_PARTITION error only when the partition is gone.
            p = partitions.get(tp)
            return p.log if p is not None else rm.get_partition_or_exception(tp).log

        # KRaft: fetches carry the broker epoch, which the controller takes from the registration of this
        # process (its incarnation); the leader stores it for the AlterPartition it may send (KIP-903).
        epoch = self.incarnation if self.cluster.scenario.cluster.checks_broker_epochs else -1
        base = replica_fetcher_factory(self.broker_id, cfg, logs, quota=self.follower_quota, events=events,
                                       broker_epoch=epoch)

        def create(fid: int, source: BrokerEndPoint, failed: FailedPartitions) -> ReplicaFetcherThread:
            thread = base(fid, source, failed)
            assert isinstance(thread, ReplicaFetcherThread)
            self.actors[(source.id, fid)] = FetcherActor(self, thread, (source.id, fid))
            return thread

        self.fetchers = FetcherManager.from_config(self.broker_id, cfg, create, emit)
        rm.fetcher_control = self.fetchers
        self.rm = rm
        inc = self.incarnation
        self.queue.at(now, self._isr_expiration, inc, now)
        self._hw_checkpoint_started = not self.cluster.scenario.cluster.hw_checkpoint_at_first_metadata
        if self._hw_checkpoint_started:
            hw_due = now + cfg.replica_high_watermark_checkpoint_interval_ms
            self.queue.at(hw_due, self._hw_checkpoint, inc, hw_due)
        if self.cluster.scenario.disk.flush_interval_ms > 0:
            self.queue.after(self.cluster.scenario.disk.flush_interval_ms, self._flush, inc)
        if self._registered:
            self.queue.at(now, self._heartbeat, inc, self._heartbeat_seq)
        disk = self.cluster.scenario.disk
        # `LogManager.startup` schedules retention and the log start checkpoint with the same initial delay.
        first_log_task = now + disk.initial_task_delay_ms
        if disk.retention_bytes is not None:
            self.queue.at(first_log_task, self._retention, inc, first_log_task)
        self.queue.at(first_log_task, self._log_start_checkpoint, inc, first_log_task)
        previous_epoch, self.disk.clean_shutdown_epoch = self.disk.clean_shutdown_epoch, -1
        self.cluster.controller.register_from(self.broker_id, inc, previous_epoch)

    def crash(self, lose_unflushed: bool) -> None:
        """Kill the process (power failure if `lose_unflushed`, else kill -9 with the page cache kept)."""
        if not self.alive:
            return
        now = self.queue.now_ms
        self.alive = False
        self.host_up = not lose_unflushed
        self.incarnation += 1
        if self._events is not None:
            self._events.append(make_event("broker_lifecycle", now, self.broker_id, action="crash"))
        self._drop_process()
        self.disk.crash(now, lose_unflushed, self._events)

    def shutdown(self) -> None:
        """Clean shutdown after a controlled shutdown: flush every log, write the HW and log start checkpoints,
        stop."""
        if not self.alive:
            return
        now = self.queue.now_ms
        rm = self.rm
        if rm is not None:
            self.disk.write_hw_checkpoint(rm.checkpoint_high_watermarks())
        self.disk.flush_all()
        self.disk.write_log_start_checkpoint()
        self.disk.clean_shutdown_epoch = self.incarnation
        self.alive = False
        self.incarnation += 1
        if self._events is not None:
            self._events.append(make_event("broker_lifecycle", now, self.broker_id, action="shutdown"))
        self._drop_process()
        self.disk.crash(now, False, self._events)

    def _drop_process(self) -> None:
        if self.host_up:
            # The kernel closes the dead process's connections: callers waiting on it see the disconnect.
            self.cluster.rpc.reset(self.broker_id)
        if self.fetchers is not None:
            self.fetchers.close_all_fetchers()
        self.fetchers = None
        self.rm = None
        self.actors = {}
        self._blocked_metadata = []

    def held_until(self, disk: bool = False) -> int:
        """End of a GC pause (and, for log writers, of a disk stall) in force now, else 0."""
        return max(self.paused_until, self.stalled_until) if disk else self.paused_until

    def pause(self, duration_ms: int) -> None:
        """A stop-the-world GC pause: nothing runs until it ends."""
        self.paused_until = max(self.paused_until, self.queue.now_ms + duration_ms)

    def disk_stall(self, duration_ms: int) -> None:
        """The log disk stops answering: appends (fetchers, produce) block until it ends."""
        self.stalled_until = max(self.stalled_until, self.queue.now_ms + duration_ms)

    def _held(self, fn: Callable[..., None], *args: Any, disk: bool = False) -> bool:
        """If paused, re-run `fn(*args)` when the pause ends and return True."""
        hold = self.held_until(disk)
        if hold > self.queue.now_ms:
            self.queue.at(hold, fn, *args)
            return True
        return False

    # --- scheduler tasks ---------------------------------------------------------------------------

    def _at_fixed_rate(self, task: Callable[[int, int], None], inc: int, due_ms: int, period_ms: int) -> None:
        """Queue `task`'s next run one period after the slot it was due at, not after when it ran: Kafka's
        `KafkaScheduler.schedule` with a period is `ScheduledThreadPoolExecutor.scheduleAtFixedRate`, so a run
        a GC pause or a disk stall made late keeps the later runs on their grid (and slots the pause swallowed
        run back to back when it ends)."""
        self.queue.at(due_ms + period_ms, task, inc, due_ms + period_ms)

    def _isr_expiration(self, inc: int, due_ms: int) -> None:
        """`isr-expiration` (`ReplicaManager.maybeShrinkIsr`), every `replica.lag.time.max.ms / 2` at fixed rate."""
        if inc != self.incarnation or self.rm is None:
            return
        if not self._held(self._isr_expiration, inc, due_ms):
            self.rm.maybe_shrink_isr(self.queue.now_ms)
            self._drain()
            self._at_fixed_rate(self._isr_expiration, inc, due_ms, self.config.isr_expiration_interval_ms)

    def _start_hw_checkpoint(self, now_ms: int) -> None:
        """`ReplicaManager.startHighWatermarkCheckPointThread`, at this process's first application of partition
        metadata (the ZooKeeper era's first LeaderAndIsr, KRaft's first publish; for the brokers of the cluster's
        creation, the delivery that creates the topics): the task's first run at once, then every period."""
        self._hw_checkpoint_started = True
        self.queue.at(now_ms, self._hw_checkpoint, self.incarnation, now_ms)

    def _hw_checkpoint(self, inc: int, due_ms: int) -> None:
        """`highwatermark-checkpoint` (`ReplicaManager.checkpointHighWatermarks`) at fixed rate."""
        if inc != self.incarnation or self.rm is None:
            return
        if not self._held(self._hw_checkpoint, inc, due_ms, disk=True):
            self.disk.write_hw_checkpoint(self.rm.checkpoint_high_watermarks())
            self._at_fixed_rate(self._hw_checkpoint, inc, due_ms,
                                self.config.replica_high_watermark_checkpoint_interval_ms)

    def _log_start_checkpoint(self, inc: int, due_ms: int) -> None:
        """`kafka-log-start-offset-checkpoint` (`LogManager.checkpointLogStartOffsets`) at fixed rate."""
        if inc != self.incarnation or self.rm is None:
            return
        if not self._held(self._log_start_checkpoint, inc, due_ms, disk=True):
            self.disk.write_log_start_checkpoint()
            self._at_fixed_rate(self._log_start_checkpoint, inc, due_ms,
                                self.cluster.scenario.disk.log_start_offset_checkpoint_interval_ms)

    def _flush(self, inc: int) -> None:
        if inc != self.incarnation:
            return
        if not self._held(self._flush, inc, disk=True):
            self.disk.flush_all()
            self.queue.after(self.cluster.scenario.disk.flush_interval_ms, self._flush, inc)

    def _retention(self, inc: int, due_ms: int) -> None:
        """`kafka-log-retention` (`LogManager.cleanupLogs` → `UnifiedLog.deleteOldSegments`): on every hosted
        log, leader's or follower's, delete the segments below its log start offset, then the oldest segments
        while `retention.bytes` would remain, all below the HW (`Log.delete_old_segments`)."""
        if inc != self.incarnation or self.rm is None:
            return
        if self._held(self._retention, inc, due_ms, disk=True):
            return
        disk = self.cluster.scenario.disk
        now = self.queue.now_ms
        for p in self.rm.partitions.values():
            p.log.delete_old_segments(disk.retention_bytes, now, "leader" if p.is_leader else "follower")
        self._at_fixed_rate(self._retention, inc, due_ms, disk.retention_check_interval_ms)

    def registration_answered(self, inc: int, accepted: bool, previous_epoch: int) -> None:
        """The controller's answer to this process's `BrokerRegistration` (`BrokerRegistrationResponseHandler`):
        accepted, heartbeat at once; refused (`DUPLICATE_BROKER_REGISTRATION`: the previous process's session is
        still valid), register again one `broker.heartbeat.interval.ms` later (`scheduleNextCommunicationAfterFailure`
        since KAFKA-19294; Kafka 3.x backed off exponentially from 100 ms)."""
        if inc != self.incarnation or not self.alive or self._registered:
            return
        if not accepted:
            self.queue.after(self.cluster.scenario.cluster.broker_heartbeat_interval_ms,
                             self.cluster.controller.register_from, self.broker_id, inc, previous_epoch)
            return
        self._registered = True
        self._heartbeat_now(inc)

    def begin_controlled_shutdown(self) -> None:
        """KRaft's `BrokerLifecycleManager.beginControlledShutdown`: PENDING_CONTROLLED_SHUTDOWN, a heartbeat with
        `wantShutDown` now and on every heartbeat after, until the controller answers `shouldShutDown`."""
        self.wants_shutdown = True
        self._shutdown_answered = False
        self._heartbeat_now(self.incarnation)

    def heartbeat_answered(self, inc: int, shut_down: bool) -> None:
        """The controller's answer to a heartbeat in PENDING_CONTROLLED_SHUTDOWN (`BrokerHeartbeatResponseHandler`):
        `shouldShutDown` stops the process cleanly; the first answer without it brings the next heartbeat forward to
        50 ms, so that a quick controlled shutdown ends sooner; later ones leave the schedule alone."""
        if inc != self.incarnation or not self.alive or not self.wants_shutdown:
            return
        if self._held(self.heartbeat_answered, inc, shut_down):
            return
        if shut_down:
            self.cluster.finish_controlled_shutdown(self.broker_id)
            return
        if not self._shutdown_answered:
            self._shutdown_answered = True
            self._heartbeat_seq += 1
            self.queue.after(FIRST_PENDING_SHUTDOWN_HEARTBEAT_MS, self._heartbeat, inc, self._heartbeat_seq)

    def _reported_metadata_offset(self) -> int:
        """`currentMetadataOffset` of a heartbeat: the whole log so far once this process has applied every update
        addressed to it (the records between concern other brokers, and a KRaft broker replays them all as they
        commit), else the offset of the last update it applied (one still in flight, held by a GC pause or waiting
        for a fetcher's lock)."""
        controller = self.cluster.controller
        if self._metadata_offset >= controller.sent_offset(self.broker_id):
            return controller.metadata_offset
        return self._metadata_offset

    def _heartbeat_now(self, inc: int) -> None:
        """`scheduleNextCommunicationImmediately`: the next heartbeat now, replacing the one scheduled."""
        self._heartbeat_seq += 1
        self.queue.at(self.queue.now_ms, self._heartbeat, inc, self._heartbeat_seq)

    def _heartbeat(self, inc: int, seq: int) -> None:
        if inc != self.incarnation or seq != self._heartbeat_seq:
            return
        if not self._held(self._heartbeat, inc, seq):
            self.cluster.controller.heartbeat_from(self.broker_id, inc, self.wants_shutdown,
                                                   not self._ready_to_unfence, self._reported_metadata_offset())
            # A starting process heartbeats every 10 ms until it has caught up (`BrokerLifecycleManager`'s
            # STARTING state), then every `broker.heartbeat.interval.ms`.
            interval = (STARTING_HEARTBEAT_MS if not self._ready_to_unfence
                        else self.cluster.scenario.cluster.broker_heartbeat_interval_ms)
            self.queue.after(interval, self._heartbeat, inc, seq)

    def _tick(self, inc: int) -> None:
        if inc != self.incarnation or self.rm is None:
            return
        self._tick_at = None
        if self._held(self._tick, inc):
            return
        self.rm.tick(self.queue.now_ms)
        self._drain()

    def _drain(self) -> None:
        """Route parked fetches / produces the ReplicaManager completed, and arm its expiry timer."""
        rm = self.rm
        if rm is None:
            return
        reply = self.cluster.rpc.reply
        for done in rm.take_completed_fetches():
            reply(done.request_id, done.response)  # type: ignore[arg-type]
        for res in rm.take_completed_produces():
            reply(res.request_id, self._produce_answer(res))  # type: ignore[arg-type]
        for answered in rm.take_completed_produce_requests():
            reply(answered.request_id, tuple([self._produce_answer(r) for r in answered.results]))  # type: ignore[arg-type]
        deadline = rm.next_deadline()
        if deadline is not None and (self._tick_at is None or deadline < self._tick_at):
            self._tick_at = deadline
            self.queue.at(deadline, self._tick, self.incarnation)

    # --- request handling (KafkaApis) ---------------------------------------------------------------

    def handle_replica_request(self, call: Call) -> None:
        """A follower's Fetch / OffsetsForLeaderEpoch / ListOffsets arrived."""
        if not self.alive or self.rm is None:
            # Nobody listening. A live host refuses the connection, so the fetcher's `awaitReady` fails at once
            # ("Connection to N failed") and the thread backs off; a host without power lets the caller time out.
            if self.host_up and not self.alive:
                self.cluster.rpc.refuse(call)
            return
        self._replica_request(call, self.incarnation)

    def _replica_request(self, call: Call, inc: int) -> None:
        # A request a GC pause holds belongs to the process that received it: a crash closes its connections, so a
        # restarted process never answers it; its caller had the disconnect at the crash (`RpcLayer.reset`), or
        # times out when the host lost power.
        if inc != self.incarnation or not self.alive or self.rm is None:
            return
        if self._held(self._replica_request, call, inc):
            return
        rm = self.rm
        now = self.queue.now_ms
        request = call.request
        if isinstance(request, FetchRequest):
            response = rm.fetch_messages(request, now, request_id=call)
            if response is not None:
                self.cluster.rpc.reply(call, response)
            self._drain()
        elif isinstance(request, OffsetsForLeaderEpochRequest):
            self.cluster.rpc.reply(call, rm.offsets_for_leader_epoch(request))
        elif isinstance(request, ListOffsetsRequest):
            self.cluster.rpc.reply(call, rm.list_offsets(request))

    def handle_produce(self, call: Call) -> None:
        """`handleProduceRequest` for one partition's batch, or several partitions' (`ProduceBatches`)."""
        if call.done or not self.alive or self.rm is None:
            # Arrived after its deadline (`RpcLayer._arrive` drops those), or nobody listening. Not refused, unlike a
            # fetch: a producer's `Sender` sends nothing to a node it cannot connect to (`Producer._attempt` holds the
            # batch), so only a request in flight when the process died (its caller had the disconnect then,
            # `RpcLayer.reset`) or a `fresh_metadata` producer's gets here, whose request timeout stands for that wait.
            return
        self._produce(call, call.request, self.incarnation)

    def _produce(self, call: Call, req: ProduceRequest | ProduceBatches, inc: int) -> None:
        # The request travels with the task, not in the call: a request that a GC pause or disk stall holds
        # past its producer's timeout is still handled when the broker resumes, as Kafka handles a request
        # already in its request channel ("timed out but written"); the producer has its timeout answer by
        # then and retries, and the late answer goes nowhere (`RpcLayer.reply` drops answers to finished
        # calls). A crash in between loses it with the connection (another incarnation).
        if inc != self.incarnation or not self.alive or self.rm is None:
            return
        if self._held(self._produce, call, req, inc, disk=True):
            return
        if isinstance(req, ProduceBatches):
            results = self.rm.append_records_to_partitions(
                [ProduceBatch(b.tp, b.records, b.size_bytes, b.checksum) for b in req.batches], req.acks,
                self.queue.now_ms, request_id=call, timeout_ms=req.timeout_ms)
            if results is not None:
                self.cluster.rpc.reply(call, tuple([self._produce_answer(r) for r in results]))
            self._drain()
            return
        res = self.rm.append_records(req.tp, req.records, req.size_bytes, req.checksum, req.acks,
                                     self.queue.now_ms, request_id=call, timeout_ms=req.timeout_ms)
        if res is not None:
            self.cluster.rpc.reply(call, self._produce_answer(res))
        self._drain()

    def _produce_answer(self, res: ProduceResult) -> ProduceResult | ProduceAnswer:
        """The partition's produce response: with NOT_LEADER_OR_FOLLOWER, the leader and epoch this broker's metadata
        names, when it knows one (`KafkaApis.handleProduceRequest`'s `CurrentLeader`, KIP-951; this broker's metadata
        covers the partitions it hosts)."""
        if res.error != Errors.NOT_LEADER_OR_FOLLOWER or self.rm is None:
            return res
        p = self.rm.partitions.get(res.tp)
        if p is None or p.leader_replica_id is None or p.leader_replica_id < 0 or p.leader_epoch < 0:
            return res
        return ProduceAnswer(res, p.leader_replica_id, p.leader_epoch)

    def apply_metadata(self, update: MetadataUpdate) -> None:
        """The controller's LeaderAndIsr / StopReplica / fencing / throttle changes for this broker."""
        if not self.alive or self.rm is None:
            return
        if update.incarnation is not None and update.incarnation != self.incarnation:
            # Sent while the controller still knew this broker's previous process (the restart's
            # registration is not through yet). A KRaft broker publishes no partition metadata before it
            # has registered and caught up (`BrokerLifecycleManager`); acting on it would let a process
            # that just lost its unflushed log lead in the ISR it was elected from. The full state
            # follows the registration; the dynamic throttle configs apply at once, as at start.
            self._apply_throttles(update)
            return
        if self.held_until() > self.queue.now_ms:
            self._paused_metadata.append(update)
            self._held(self._apply_paused_metadata)
            return
        if self._paused_metadata:
            # The pause ended this millisecond and its held calls have not all run yet: the metadata thread
            # resumes with that backlog, so this update queues behind it (one more call, as during the pause).
            self._paused_metadata.append(update)
            self.queue.at(self.queue.now_ms, self._apply_paused_metadata)
            return
        self._apply_unpaused(update)

    def _apply_unpaused(self, update: MetadataUpdate) -> None:
        if self._blocked_metadata:
            # The metadata thread is still blocked on an earlier update: this one queues behind it.
            self._blocked_metadata.append((update, False))
            return
        self._apply_metadata(update, False)

    def _apply_paused_metadata(self) -> None:
        # A GC pause held the updates, one call each. Each call applies the oldest update still held, not
        # its own: a call held to the first pause's end that a second pause extended is held again, behind
        # the calls of the updates that came during the extension, and applying its own update would apply
        # an older LeaderAndIsr after newer ones (a stale state then recreated a partition its StopReplica had
        # deleted, power seed 900428). Without an extension the calls come in order and each applies its own.
        if self._held(self._apply_paused_metadata) or not self.alive or self.rm is None:
            return
        held = self._paused_metadata
        if not held:
            return  # an earlier call took this one's update into its delta
        # KRaft: a paused JVM fetches nothing; what reached it meanwhile is applied as one delta. (A simplification:
        # Kafka's raft client would publish the fetch response already waiting on its own, then the rest of the log
        # from its next read; both happen at the pause's end.) ZooKeeper-era LeaderAndIsr requests: one at a time.
        n = one_delta(held, self.cluster.scenario.cluster.coalesces_metadata)
        taken, self._paused_metadata = held[:n], held[n:]
        # Straight on, past `apply_metadata`'s backlog check, which this very backlog would fail. Held updates are
        # this process's (`start` empties the list, and one for another incarnation is never held).
        self._apply_unpaused(coalesce(taken))

    def partition_map_lock_released(self) -> None:
        """A fetcher thread left its `partitionMapLock` section: the blocked metadata thread may go on."""
        if self._blocked_metadata:
            self.queue.at(self.queue.now_ms, self._resume_metadata, self.incarnation)

    def _resume_metadata(self, inc: int) -> None:
        if inc != self.incarnation or self.rm is None:
            return
        if self._held(self._resume_metadata, inc):
            return
        while self._blocked_metadata:
            update, cache_applied = self._blocked_metadata.pop(0)
            if not self._apply_metadata(update, cache_applied):
                return  # blocked again (another fetcher holds its lock): back at the head of the queue

    def _partition_map_locked(self) -> bool:
        """True if some fetcher thread of this broker holds its `partitionMapLock` (ListOffsets in flight)."""
        return any(actor.thread.partition_map_locked for actor in self.actors.values())

    def _apply_metadata(self, update: MetadataUpdate, cache_applied: bool) -> bool:
        """Apply one update; False if it must wait for a fetcher's `partitionMapLock` (it is then queued at
        the head of `_blocked_metadata` with its metadata cache part applied)."""
        rm = self.rm
        assert rm is not None
        now = self.queue.now_ms
        if not cache_applied:
            if not self._knows_cluster:
                # Caught up with the metadata: the cache holds every partition of the cluster.
                self._knows_cluster = True
                rm.learn_partitions(TopicPartition(t.name, i) for t in self.cluster.scenario.topics
                                    for i in range(t.partitions))
            self.metadata.fenced = set(update.fenced)
            self.metadata.shutting_down = set(update.shutting_down)
            self.metadata.epochs = dict(update.broker_epochs)
            self._apply_throttles(update)
        if (update.states or update.stop) and self._partition_map_locked():
            # removeFetcherForPartitions / addFetcherForPartitions / shutdownIdleFetcherThreads take every
            # fetcher's partitionMapLock (`removePartitions`, `addPartitions`, `partitionCount`): wait.
            self._blocked_metadata.insert(0, (update, True))
            return False
        if update.states:
            result = rm.become_leader_or_follower(
                LeaderAndIsrRequest(self.cluster.controller.node_id, 1, update.states), now,
                self.disk.hw_checkpoint)
            if not self._hw_checkpoint_started:
                self._start_hw_checkpoint(now)
            if result.fetchers_to_add and self.fetchers is not None:
                fm = self.fetchers
                for tp, init in result.fetchers_to_add.items():
                    actor = self.actors.get((init.leader.id, fm.get_fetcher_id(tp)))
                    if actor is not None:
                        actor.wake(now)
        for tp, epoch in update.stop:
            res = rm.stop_replica(tp, True, now, leader_epoch=epoch)
            if res.deleted:
                self.disk.forget(tp)
        if update.full_state and self._first_publish and update.incarnation is not None:
            self._first_publish = False
            self._delete_stray_logs(update, now)
            if not self._hw_checkpoint_started:
                self._start_hw_checkpoint(now)
            if not self._ready_to_unfence:
                # `BrokerServer.startup` after the first publish: `setReadyToUnfence`, which heartbeats at once
                # without `wantFence`; the controller unfences the broker on it.
                self._ready_to_unfence = True
                self._heartbeat_now(self.incarnation)
        if self.fetchers is not None and (update.states or update.stop):
            # End of `becomeLeaderOrFollower` / `stopReplicas`: `shutdownIdleFetcherThreads`.
            self.fetchers.shutdown_idle_fetcher_threads()
        self._metadata_offset = max(self._metadata_offset, update.offset)
        self._drain()
        return True

    def _delete_stray_logs(self, update: MetadataUpdate, now_ms: int) -> None:
        """KRaft's first metadata publish of a process (`BrokerMetadataPublisher.finishInitializingReplicaManager`,
        after the partition states are applied): delete every log on the disk whose partition the full state does
        not assign to this broker (`findStrayPartitions`), e.g. a replica reassigned away while the broker was down,
        whose StopReplica the dead process never got. Like a StopReplica deletion, it emits no event. The ZooKeeper
        era mode (`fence_on_reregistration: false`, updates without incarnation) keeps such logs."""
        rm = self.rm
        assert rm is not None
        states = update.states
        strays = [tp for tp in sorted(self.disk.logs)
                  if tp not in states or self.broker_id not in states[tp].replicas]
        for tp in rm.delete_stray_replicas(strays, now_ms):
            self.disk.forget(tp)

    def _apply_throttles(self, update: MetadataUpdate) -> None:
        # The process read every throttle change up to `_throttle_version` at start: an update sent before that
        # (still in the channel across a restart) would put an older config back until the next one came.
        if update.throttles and update.throttle_version > self._throttle_version:
            for topic, leader_entries, follower_entries, rate in update.throttles:
                self.apply_throttle(topic, leader_entries, follower_entries, rate)
            self._throttle_version = update.throttle_version

    def apply_throttle(self, topic: str, leader_entries: tuple[str, ...], follower_entries: tuple[str, ...],
                       rate: int | None) -> None:
        """Topic `*.replication.throttled.replicas` and broker `*.replication.throttled.rate` (KIP-73)."""
        lq, fq = self.leader_quota, self.follower_quota
        if lq is None or fq is None:
            return
        lq.mark_throttled_from_config(topic, leader_entries)
        fq.mark_throttled_from_config(topic, follower_entries)
        if rate is not None:
            lq.update_quota(float(rate))
            fq.update_quota(float(rate))
        else:
            lq.update_quota(float(self.config.leader_replication_throttled_rate))
            fq.update_quota(float(self.config.follower_replication_throttled_rate))

    # --- AlterPartitionChannel ------------------------------------------------------------------------

    def send_alter_partition(self, broker_id: int, requests: Sequence[AlterPartitionRequest], now_ms: int) -> None:
        """`AlterPartitionManager` → controller RPC; the answers go back to the ReplicaManager."""
        inc = self.incarnation
        ctrl = self.cluster.controller

        def on_reply(response: Any, now: int) -> None:
            if inc != self.incarnation or self.rm is None:
                return
            if self._held(on_reply, response, self.paused_until):
                return
            if isinstance(response, Errors):
                self.rm.handle_alter_partition_rpc_failure(now)
            else:
                for req, answer in response:
                    self.rm.handle_alter_partition_response(req, answer, now)
            self._drain()

        self.cluster.rpc.call(self.broker_id, ctrl.node_id, list(requests), ctrl.handle_alter_partition, on_reply,
                              Errors.NETWORK_EXCEPTION, self.cluster.scenario.network.rpc_timeout_ms)
