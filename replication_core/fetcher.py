"""The follower's fetcher thread: Kafka's `AbstractFetcherThread` + `ReplicaFetcherThread`, sans-I/O.

Theory of operation (reference §3). A fetcher owns the fetch state of the partitions it replicates
from one leader (`PartitionStates`, insertion-ordered). One `work(now_ms)` is one Kafka `doWork()`:

1. partitions added with a negative offset are placed with ListOffsets (`fetchOffsetAndTruncate`);
2. `maybeTruncate`: `Truncating` partitions with a known latest epoch ask the leader
   OffsetsForLeaderEpoch and truncate by `getOffsetTruncationState` (`truncation.py`); the others
   truncate to their high watermark (the initial fetch offset);
3. `maybeFetch`: one FetchRequest for the ready, non-delayed, non-throttled partitions; the
   response is processed partition by partition (§3.3 error table), DivergingEpoch truncations run
   after the loop, errored partitions back off (`DelayedItem` on the virtual clock).

How the fetcher talks to its leader: `work()` is a generator. It *yields* a request value
(`leader_endpoint.FetchRequest`, `OffsetsForLeaderEpochRequest` or `ListOffsetsRequest`) and is
resumed with `gen.send((response, now_ms))`, `now_ms` being the virtual time the response arrived;
its return value (`StopIteration.value`) is a `WorkResult`. A simulator can therefore hold the
generator while a response crosses a simulated network, and interleave other events (a partition
removed, a leader epoch bumped) exactly where Kafka's fetcher thread would be blocked in an RPC.
`do_work(now_ms, endpoint)` drives the same generator synchronously through a `LeaderEndPoint`.
This keeps Kafka's sequential control flow (ListOffsets in the middle of response processing, a
second epoch request after a failed round) in one readable place instead of a callback web.

Driving contract: at most one `work()` of a fetcher is in flight (a Kafka fetcher thread is blocked in
its RPC); a lost or timed-out RPC is answered with an error response (`FetchResponse(error=...)`,
`OffsetsForLeaderEpochResponse(error=...)`, `ListOffsetsResponse(error=...)`), never by abandoning the
generator. After a round that sent a fetch, call `work()` again at once (the leader's purgatory is the
wait); after an idle round (`WorkResult.idle_backoff_ms`), call it again after that whole backoff or when
partitions are added: Kafka's thread waits on `partitionMapCond` for `replica.fetch.backoff.ms`, and only
`addPartitions` signals it, not a backed-off partition becoming ready.

`partitionMapLock`: Kafka processes a fetch response's partitions inside `inLock(partitionMapLock)`,
and an OFFSET_OUT_OF_RANGE there (`handleOutOfRangeError` → `fetchOffsetAndTruncate`) sends its
ListOffsets RPCs and truncates with the lock held (as `addPartitions` does for a negative initial
offset). `removePartitions`, `addPartitions`, `maybeUpdateTopicIds` and `partitionCount` take the same
lock, so the ReplicaManager (`removeFetcherForPartitions` before `makeLeader`, `addFetcherForPartitions`,
`shutdownIdleFetcherThreads`) waits until the truncation is done. `partition_map_locked` is True while
`work()` waits for such a ListOffsets answer: a driver must hold back those calls (and whatever follows
them on the metadata path) until it is False again. The other RPCs (Fetch, OffsetsForLeaderEpoch) are
sent without the lock; their answers are re-checked against the current partition states. A driver
that breaks the rule anyway gets the Kafka outcome for the partition it removed: once removed from
this fetcher, a partition is never truncated by it (the ListOffsets answer is dropped).

The follower's own replicas are reached through `logs(tp) -> Log` (the `UnifiedLog` of
`replication_core.log`, which emits the `append` / `truncation` / `hw_change` /
`log_start_offset_change` events itself) and `on_hw_updated(tps)` (Kafka's
`completeDelayedFetchRequests`). The fetcher emits `fetch`, `fetch_response`, `quota_throttle` (a
throttled partition left out of a fetch) and, when it marks a partition failed, `fetcher_change`
(removed), all into the injected `EventLog` (None = build nothing: the hot path stays cheap).

`protocol` (`truncation.TruncationProtocol`, default from `ReplicationConfig.truncation_mode`)
selects the Kafka generation replayed; see `truncation.py` for the table.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, replace

from replication_core.config import ReplicationConfig
from replication_core.errors import (
    CorruptRecordError,
    Errors,
    IllegalStateError,
    OffsetMismatchError,
    ReplogError,
)
from replication_core.event_log import EventLog
from replication_core.events import make_event
from replication_core.leader_endpoint import (
    EARLIEST,
    LATEST,
    EpochData,
    FetchPartitionData,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    LeaderEndPoint,
    LeaderRequest,
    LeaderResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    call_leader,
)
from replication_core.log import EMPTY_APPEND, FOLLOWER, Log, LogAppendInfo, new_tuple
from replication_core.partition_fetch_state import (
    UNDEFINED_EPOCH,
    BrokerEndPoint,
    EpochEndOffset,
    FailedPartitions,
    InitialFetchState,
    OffsetTruncationState,
    PartitionFetchState,
    PartitionStates,
    ReplicaState,
    TopicPartition,
)
from replication_core.quota import ReplicationQuotaManager, should_follower_throttle
from replication_core.truncation import FLAGS, TruncationProtocol, offset_truncation_state, truncation_protocol

NONE = Errors.NONE.value
NETWORK_EXCEPTION = Errors.NETWORK_EXCEPTION.value
UNKNOWN_SERVER_ERROR = Errors.UNKNOWN_SERVER_ERROR.value
FETCHING = ReplicaState.FETCHING
TRUNCATING = ReplicaState.TRUNCATING

Reply = tuple[LeaderResponse, int]
"""What the driver sends back into `work()`: the leader's response and the virtual arrival time."""
Work = Generator[LeaderRequest, Reply, "WorkResult"]


@dataclass(frozen=True)
class WorkResult:
    """Outcome of one `doWork`: what was sent and what the caller should do next."""

    epoch_requests: int
    fetch_sent: bool
    hw_updated: frozenset[TopicPartition]
    idle_backoff_ms: int | None
    """`replica.fetch.backoff.ms` when no fetch could be built (Kafka waits on its condition)."""

    # Compiled (one per doWork): see PartitionFetchState.__init__.
    def __init__(self, epoch_requests: int, fetch_sent: bool, hw_updated: frozenset[TopicPartition],
                 idle_backoff_ms: int | None) -> None:
        object.__setattr__(self, "epoch_requests", epoch_requests)
        object.__setattr__(self, "fetch_sent", fetch_sent)
        object.__setattr__(self, "hw_updated", hw_updated)
        object.__setattr__(self, "idle_backoff_ms", idle_backoff_ms)


class _ListOffsetsFailed(Exception):
    """A ListOffsets answer carried an error (Kafka: the exception thrown by `fetchLatestOffset`)."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def initial_fetch_offset(log: Log, protocol: TruncationProtocol | str) -> int:
    """`ReplicaManager.initialFetchOffset`: LEO with truncate-on-fetch and a known epoch, else the HW."""
    if FLAGS[truncation_protocol(protocol)].truncate_on_fetch and log.latest_epoch is not None:
        return log.log_end_offset
    return log.high_watermark


class ReplicaFetcherThread:
    """`ReplicaFetcherThread` (an `AbstractFetcherThread`): replicate partitions from one leader."""

    def __init__(
        self,
        broker_id: int,
        fetcher_id: int,
        source_broker: BrokerEndPoint,
        config: ReplicationConfig,
        logs: Callable[[TopicPartition], Log],
        failed_partitions: FailedPartitions | None = None,
        *,
        protocol: TruncationProtocol | str | None = None,
        quota: ReplicationQuotaManager | None = None,
        on_hw_updated: Callable[[frozenset[TopicPartition]], None] | None = None,
        events: EventLog | None = None,
        broker_epoch: int = -1,
    ) -> None:
        self.broker_id = broker_id
        self.fetcher_id = fetcher_id
        self.source_broker = source_broker
        self.config = config
        self.protocol = truncation_protocol(protocol if protocol is not None else config.truncation_mode)
        self.flags = FLAGS[self.protocol]
        self.partition_states = PartitionStates()
        self.failed_partitions = failed_partitions if failed_partitions is not None else FailedPartitions()
        self.broker_epoch = broker_epoch
        self.is_shutdown = False
        self._logs = logs
        self._quota = quota
        self._on_hw_updated = on_hw_updated
        self._events = events
        self._now = 0
        self._hw_updated: set[TopicPartition] = set()
        self.partition_map_locked = False
        """True while `work()` waits for a ListOffsets answer under Kafka's `partitionMapLock` (see module doc)."""

    def __repr__(self) -> str:
        return f"ReplicaFetcherThread-{self.fetcher_id}-{self.source_broker.id}"

    # --- pool-facing API (AbstractFetcherManager) -------------------------------------------------

    def add_partitions(self, initial: Mapping[TopicPartition, InitialFetchState],
                       now_ms: int) -> set[TopicPartition]:
        """`addPartitions`: clear failures and (re)place each partition by `partitionFetchState`."""
        self.failed_partitions.remove_all(initial)
        for tp, init in initial.items():
            current = self.partition_states.get(tp)
            self.partition_states.update_and_move_to_end(tp, self._initial_state(tp, init, current))
        return set(initial)

    def _initial_state(self, tp: TopicPartition, init: InitialFetchState,
                       current: PartitionFetchState | None) -> PartitionFetchState:
        if current is not None and current.current_leader_epoch == init.current_leader_epoch:
            # Same epoch: keep the state, no new truncation (testTruncationSkippedIfNoEpochChange).
            return current
        if init.init_offset < 0:
            # Kafka runs fetchOffsetAndTruncate here; it needs the leader, so work() does it next.
            return PartitionFetchState(-1, init.current_leader_epoch, TRUNCATING, topic_id=init.topic_id)
        if self.flags.truncate_on_fetch:
            last_epoch = self._latest_epoch(tp)
            state = FETCHING if last_epoch is not None and last_epoch != UNDEFINED_EPOCH else TRUNCATING
            return PartitionFetchState(init.init_offset, init.current_leader_epoch, state,
                                       last_fetched_epoch=last_epoch, topic_id=init.topic_id)
        return PartitionFetchState(init.init_offset, init.current_leader_epoch, TRUNCATING,
                                   topic_id=init.topic_id)

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionFetchState]:
        """`removePartitions`: drop the partitions and return the states they had."""
        removed: dict[TopicPartition, PartitionFetchState] = {}
        for tp in tps:
            state = self.partition_states.remove(tp)
            if state is not None:
                removed[tp] = state
        return removed

    def remove_all_partitions(self) -> dict[TopicPartition, PartitionFetchState]:
        """`removeAllPartitions`."""
        return self.remove_partitions(list(self.partition_states))

    def partition_count(self) -> int:
        """`partitionCount`."""
        return len(self.partition_states)

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        """`fetchState(tp)`."""
        return self.partition_states.get(tp)

    def maybe_update_topic_ids(self, tps: Iterable[TopicPartition],
                               topic_ids: Callable[[str], str | None]) -> None:
        """`maybeUpdateTopicIds`: set the topic id of held partitions in place (no move, no reset)."""
        for tp in tps:
            state = self.partition_states.get(tp)
            if state is not None:
                self.partition_states.update(tp, replace(state, topic_id=topic_ids(tp.topic)))

    def shutdown(self) -> None:
        """`shutdown`: later `work()` calls do nothing."""
        self.is_shutdown = True

    def truncates_without_asking(self, now_ms: int) -> bool:
        """Whether the next `work()` truncates a log before its first request (`truncateToHighWatermark` for a
        truncating partition without a leader epoch to ask about): a simulator holds such a round during a
        disk stall, as the log write would block Kafka's thread."""
        return bool(self._truncation_plan(now_ms)[2])

    # --- doWork ---------------------------------------------------------------------------------

    def do_work(self, now_ms: int, leader: LeaderEndPoint) -> WorkResult:
        """One `doWork()` with the leader answered synchronously (zero network delay)."""
        work = self.work(now_ms)
        try:
            request = next(work)
            while True:
                request = work.send((call_leader(leader, request), now_ms))
        except StopIteration as stop:
            result: WorkResult = stop.value
            return result

    def work(self, now_ms: int) -> Work:
        """`ReplicaFetcherThread.doWork` as a generator: yields requests, receives (response, now_ms)."""
        self._now = now_ms
        self._hw_updated = set()
        if self.is_shutdown:
            return WorkResult(0, False, frozenset(), None)
        yield from self._maybe_reset_unknown_offsets()
        epoch_requests = yield from self._maybe_truncate()
        fetch_sent = yield from self._maybe_fetch()
        updated = frozenset(self._hw_updated)
        if updated and self._on_hw_updated is not None:
            self._on_hw_updated(updated)
        return WorkResult(epoch_requests, fetch_sent, updated,
                          None if fetch_sent else self.config.replica_fetch_backoff_ms)

    def _ask(self, request: LeaderRequest) -> Generator[LeaderRequest, Reply, LeaderResponse]:
        response, now_ms = yield request
        self._now = now_ms
        return response

    # --- truncation phase -----------------------------------------------------------------------

    def _maybe_reset_unknown_offsets(self) -> Generator[LeaderRequest, Reply, None]:
        # Runs every round over every partition and almost never finds one: filter with a list
        # comprehension first (same snapshot, same order; states are immutable).
        unknown = [(tp, state) for tp, state in self.partition_states.items() if state.fetch_offset < 0]
        for tp, state in unknown:
            if state.is_delayed(self._now):
                continue
            try:
                new_state = yield from self._fetch_offset_and_truncate(tp, state)
            except (_ListOffsetsFailed, ReplogError):
                if self.partition_states.get(tp) is state:
                    self._delay_partitions([tp])
                continue
            if new_state is not None and self.partition_states.get(tp) is state:
                self.partition_states.update_and_move_to_end(tp, new_state)

    def _truncation_plan(self, now_ms: int) -> tuple[dict[TopicPartition, EpochData], dict[TopicPartition, int],
                                                      list[TopicPartition]]:
        """`maybeTruncate`'s split of the truncating partitions: those with a latest epoch to ask the leader about
        (with the epochs asked for) and those truncated to their HW."""
        with_epochs: dict[TopicPartition, EpochData] = {}
        requested_epochs: dict[TopicPartition, int] = {}
        without_epochs: list[TopicPartition] = []
        # As above: a cheap filter on the state first, the full `isTruncating` test on the few left.
        truncating = [(tp, state) for tp, state in self.partition_states.items() if state.state is TRUNCATING]
        for tp, state in truncating:
            if not state.is_truncating(now_ms) or state.fetch_offset < 0:
                continue
            latest = self._latest_epoch(tp)
            if latest is not None and self.flags.offsets_for_leader_epoch:
                current = state.current_leader_epoch if self.flags.current_leader_epoch else None
                with_epochs[tp] = EpochData(current, latest)
                requested_epochs[tp] = state.current_leader_epoch
            else:
                without_epochs.append(tp)
        return with_epochs, requested_epochs, without_epochs

    def _maybe_truncate(self) -> Generator[LeaderRequest, Reply, int]:
        """`maybeTruncate`: epoch-based truncation for partitions with a latest epoch, else HW."""
        with_epochs, requested_epochs, without_epochs = self._truncation_plan(self._now)
        requests = 0
        if with_epochs:
            requests = 1
            yield from self._truncate_to_epoch_end_offsets(with_epochs, requested_epochs)
        if without_epochs:
            self._truncate_to_high_watermark(without_epochs)
        return requests

    def _truncate_to_epoch_end_offsets(self, partitions: dict[TopicPartition, EpochData],
                                       requested_epochs: dict[TopicPartition, int]
                                       ) -> Generator[LeaderRequest, Reply, None]:
        """`truncateToEpochEndOffsets`: one OffsetsForLeaderEpoch round, then truncate what is still ours."""
        request = OffsetsForLeaderEpochRequest(self.broker_id, self.flags.epoch_request_version, partitions)
        response = yield from self._ask(request)
        assert isinstance(response, OffsetsForLeaderEpochResponse)
        if response.error != NONE:
            # RemoteLeaderEndPoint.fetchEpochEndOffsets gives every partition `Errors.forException` of what the send
            # threw: for the leader unreachable (the simulator's NETWORK_EXCEPTION) an IOException, which maps to
            # UNKNOWN_SERVER_ERROR, as Kafka's "Retrying leaderEpoch request" lines then say.
            error = UNKNOWN_SERVER_ERROR if response.error == NETWORK_EXCEPTION else response.error
            answers = {tp: EpochEndOffset(error) for tp in partitions}
        else:
            answers = dict(response.partitions)
        kept: dict[TopicPartition, EpochEndOffset] = {}
        for tp, answer in answers.items():
            if tp not in partitions:
                raise IllegalStateError(
                    f"Leader replied with partition {tp} not requested in OffsetsForLeaderEpoch request")
            state = self.partition_states.get(tp)
            # The epoch may have moved (or the partition gone) while the request was in flight.
            if state is not None and state.current_leader_epoch == requested_epochs[tp]:
                if self.flags.epoch_request_version == 0:
                    answer = EpochEndOffset(answer.error, UNDEFINED_EPOCH, answer.end_offset)
                kept[tp] = answer
        fetch_offsets, errors = self._maybe_truncate_to_epoch_end_offsets(kept, requested_epochs,
                                                                          "leader_epoch")
        self._delay_partitions(errors)
        self._update_fetch_offset_and_maybe_mark_truncation_complete(fetch_offsets)

    def _maybe_truncate_to_epoch_end_offsets(
        self, fetched: Mapping[TopicPartition, EpochEndOffset], requested_epochs: Mapping[TopicPartition, int],
        reason: str,
    ) -> tuple[dict[TopicPartition, OffsetTruncationState], list[TopicPartition]]:
        """`maybeTruncateToEpochEndOffsets`: apply §3.5 per partition; collect fenced/errored ones."""
        fetch_offsets: dict[TopicPartition, OffsetTruncationState] = {}
        errors: list[TopicPartition] = []
        for tp, answer in fetched.items():
            state = self.partition_states.get(tp)
            if state is None:
                continue  # removed from this fetcher while the answer was in flight
            if answer.error == NONE:
                try:
                    log = self._logs(tp)
                    truncation, _ = offset_truncation_state(answer, log.log_end_offset, state.fetch_offset,
                                                            log.end_offset_for_epoch)
                except ReplogError:
                    self._mark_partition_failed(tp)
                    continue
                if self._do_truncate(tp, truncation, reason):
                    fetch_offsets[tp] = truncation
            elif answer.error == Errors.FENCED_LEADER_EPOCH:
                if self._on_partition_fenced(tp, requested_epochs.get(tp)):
                    errors.append(tp)
            else:
                # Kafka logs "Retrying leaderEpoch request for partition {tp} as the leader reported an error".
                events = self._events
                if events is not None:
                    events.append(make_event("epoch_request_retry", self._now, self.broker_id, tp.topic, tp.partition,
                                             requested_epochs.get(tp, state.current_leader_epoch),
                                             leader_id=self.source_broker.id, fetcher_id=self.fetcher_id,
                                             error=str(answer.error)))
                errors.append(tp)
        return fetch_offsets, errors

    def _truncate_to_high_watermark(self, tps: Iterable[TopicPartition]) -> None:
        """`truncateToHighWatermark`: truncate to the initial fetch offset (the local HW)."""
        fetch_offsets: dict[TopicPartition, OffsetTruncationState] = {}
        for tp in tps:
            state = self.partition_states.get(tp)
            if state is None:
                continue
            truncation = OffsetTruncationState(state.fetch_offset, True)
            if self._do_truncate(tp, truncation, "high_watermark"):
                fetch_offsets[tp] = truncation
        self._update_fetch_offset_and_maybe_mark_truncation_complete(fetch_offsets)

    def _do_truncate(self, tp: TopicPartition, truncation: OffsetTruncationState, reason: str) -> bool:
        """`doTruncate`: a failed truncation marks the partition failed."""
        try:
            self._logs(tp).truncate_to(truncation.offset, self._now, reason=reason, role=FOLLOWER)
        except ReplogError:
            self._mark_partition_failed(tp)
            return False
        return True

    def _update_fetch_offset_and_maybe_mark_truncation_complete(
            self, fetch_offsets: Mapping[TopicPartition, OffsetTruncationState]) -> None:
        """`updateFetchOffsetAndMaybeMarkTruncationComplete`; states are re-set grouped by topic."""
        new_states: dict[TopicPartition, PartitionFetchState] = {}
        for tp, state in self.partition_states.items():
            truncation = fetch_offsets.get(tp)
            if truncation is not None:
                done = self.flags.truncate_on_fetch or truncation.truncation_completed
                state = PartitionFetchState(truncation.offset, state.current_leader_epoch,
                                            FETCHING if done else TRUNCATING, state.lag, state.delay,
                                            self._latest_epoch(tp), state.topic_id)
            new_states[tp] = state
        self.partition_states.set_all(new_states)

    # --- fetch phase ----------------------------------------------------------------------------

    def _maybe_fetch(self) -> Generator[LeaderRequest, Reply, bool]:
        """`maybeFetch`: build one request, send it, process the response."""
        request, errors = self._build_fetch()
        self._delay_partitions(errors)
        if request is None:
            return False
        if self._events is not None:
            self._emit_fetches(request)
        response = yield from self._ask(request)
        assert isinstance(response, FetchResponse)
        yield from self._process_fetch_response(request, response, self._now)
        return True

    def _build_fetch(self) -> tuple[FetchRequest | None, list[TopicPartition]]:
        """`RemoteLeaderEndPoint.buildFetch`: ready, non-delayed, non-throttled partitions in map order."""
        now, cfg, flags = self._now, self.config, self.flags
        partitions: dict[TopicPartition, FetchPartitionData] = {}
        errors: list[TopicPartition] = []
        max_bytes = cfg.replica_fetch_max_bytes
        send_current_epoch, send_last_fetched = flags.current_leader_epoch, flags.truncate_on_fetch
        quota = self._quota
        if quota is not None and not quota.throttles_any():
            quota = None  # no partition can be throttled in this round: skip the per-partition test
        logs = self._logs
        for tp, state in self.partition_states.items():
            # isReadyForFetch inlined (every partition, every round): Fetching and no backoff pending.
            delay = state.delay
            if state.state is not FETCHING or (delay is not None and delay.due_ms > now):
                continue
            if quota is not None and should_follower_throttle(quota, tp.topic, tp.partition,
                                                              state.is_replica_in_sync, now):
                if self._events is not None:
                    self._events.append(quota.throttle_event(now, tp.topic, tp.partition, state.current_leader_epoch,
                                                    self.broker_id, 0))
                continue
            try:
                log_start = logs(tp)._log_start_offset  # the field, not the property: every partition
            except ReplogError:
                errors.append(tp)
                continue
            # Every field given: tuple.__new__ skips the NamedTuple's Python-level __new__.
            partitions[tp] = new_tuple(FetchPartitionData, (
                state.fetch_offset, log_start, max_bytes,
                state.current_leader_epoch if send_current_epoch else None,
                state.last_fetched_epoch if send_last_fetched else None, state.topic_id))
        if not partitions:
            return None, errors
        return FetchRequest(self.broker_id, self.broker_epoch, cfg.replica_fetch_wait_max_ms,
                            cfg.replica_fetch_min_bytes, cfg.replica_fetch_response_max_bytes,
                            partitions, flags.fetch_version), errors

    def _process_fetch_response(self, request: FetchRequest, response: FetchResponse,
                                received_ms: int) -> Generator[LeaderRequest, Reply, None]:
        """`processFetchRequest`: the §3.3 error table, then DivergingEpoch truncation, then backoff.

        `received_ms` is when the response arrived: a partition's ListOffsets (out of range) blocks the
        loop, so the partitions after it are processed later than that."""
        states = self.partition_states
        errors: list[TopicPartition] = []
        diverging: dict[TopicPartition, EpochEndOffset] = {}
        if response.error != NONE:
            # leader.fetch threw ("Error in response for fetch request"): Kafka backs off every partition of the
            # thread. The partitions whose answer it would have processed record the request's error, so that a
            # follower cut off from its leader shows in its partitions' fetch history, not only as a gap in it.
            if self._events is not None:
                self._emit_request_error(request, response.error, received_ms)
            self._delay_partitions(list(states))
            return
        sent_partitions = request.partitions
        events = self._events
        truncate_on_fetch = self.flags.truncate_on_fetch
        for tp, data in response.partitions.items():
            state = states.get(tp)
            sent = sent_partitions.get(tp)
            # A partition removed, re-added or truncated meanwhile ignores the stale answer, and so does one re-added
            # in another leader epoch at the same offset (KAFKA-18991, trunk since March 2025: the request's
            # CurrentLeaderEpoch, where it sent one, must be the fetch state's; before it, such an answer from the
            # leader's older epoch was appended, or its diverging epoch truncated the log).
            if state is None or sent is None or sent.fetch_offset != state.fetch_offset:
                continue
            sent_epoch = sent.current_leader_epoch
            if sent_epoch is not None and sent_epoch != state.current_leader_epoch:
                continue
            delay = state.delay  # isReadyForFetch inlined, as in _build_fetch
            if state.state is not FETCHING or (delay is not None and delay.due_ms > self._now):
                continue
            if events is not None:
                self._emit_fetch_response(tp, state, data, received_ms)
            error = data.error
            if error == NONE:
                if truncate_on_fetch and data.diverging_epoch is not None:
                    diverging[tp] = EpochEndOffset(NONE, data.diverging_epoch.leader_epoch,
                                                   data.diverging_epoch.end_offset)
                    continue
                try:
                    info = self._process_partition_data(tp, state.fetch_offset, data)
                except CorruptRecordError:
                    errors.append(tp)  # "Found invalid messages during fetch": retry after backoff
                    continue
                except ReplogError:
                    self._mark_partition_failed(tp)  # storage or unexpected error: partition failed
                    continue
                valid = info.valid_bytes
                next_offset = info.last_offset + 1 if valid > 0 else state.fetch_offset
                lag = max(0, data.high_watermark - next_offset)
                if (valid > 0 or state.lag is None) and tp in states:
                    last_epoch = (info.last_leader_epoch if info.last_leader_epoch is not None
                                  else state.last_fetched_epoch)
                    states.update_and_move_to_end(tp, PartitionFetchState(
                        next_offset, state.current_leader_epoch, FETCHING, lag, None, last_epoch,
                        state.topic_id))
            elif error == Errors.OFFSET_OUT_OF_RANGE:
                handled = yield from self._handle_out_of_range(tp, state, sent.current_leader_epoch)
                if not handled:
                    errors.append(tp)
            elif error == Errors.FENCED_LEADER_EPOCH:
                if self._on_partition_fenced(tp, sent.current_leader_epoch):
                    errors.append(tp)
            else:
                # UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
                # INCONSISTENT_TOPIC_ID and anything else: retry after the backoff.
                errors.append(tp)
        if diverging:
            self._truncate_on_fetch_response(diverging)
        self._delay_partitions(errors)

    def _process_partition_data(self, tp: TopicPartition, fetch_offset: int,
                                data: FetchPartitionResponse) -> LogAppendInfo:
        """`ReplicaFetcherThread.processPartitionData`: append, follower HW, log start offset, quota."""
        log = self._logs(tp)
        now = self._now
        # The log's fields read directly (as Partition.fetch_records does): this runs once per partition
        # of every response, and most responses carry no batches (appendAsFollower of nothing is a no-op).
        if fetch_offset != log._leo:
            raise OffsetMismatchError(f"Offset mismatch for partition {tp}: fetched offset = {fetch_offset}, "
                                      f"log end offset = {log._leo}.")
        batches = data.batches
        info = log.append_as_follower(batches, now) if batches else EMPTY_APPEND
        old_hw = log._hw
        if log.update_high_watermark(data.high_watermark, now, FOLLOWER) != old_hw:
            self._hw_updated.add(tp)
        if data.log_start_offset > log._log_start_offset:
            # maybeIncrementLogStartOffset only ever moves forward: the call is a no-op otherwise.
            log.maybe_increment_log_start_offset(data.log_start_offset, now, FOLLOWER)
        quota = self._quota
        if quota is not None and quota.throttles_any() and quota.is_throttled(tp.topic, tp.partition):
            quota.record(data.size_bytes, now)
        return info

    def _truncate_on_fetch_response(self, diverging: Mapping[TopicPartition, EpochEndOffset]) -> None:
        """`truncateOnFetchResponse`: §3.5 rules on the DivergingEpoch; the partition stays Fetching."""
        fetch_offsets, errors = self._maybe_truncate_to_epoch_end_offsets(diverging, {}, "diverging_epoch")
        self._delay_partitions(errors)
        self._update_fetch_offset_and_maybe_mark_truncation_complete(fetch_offsets)

    # --- out of range, fencing, failure, backoff ------------------------------------------------

    def _handle_out_of_range(self, tp: TopicPartition, state: PartitionFetchState,
                             request_epoch: int | None) -> Generator[LeaderRequest, Reply, bool]:
        """`handleOutOfRangeError`: reset the fetch offset from the leader's offsets (§3.7). Returns False
        when the partition should back off, as Kafka's does (its caller then adds it to `partitionsWithError`)."""
        try:
            new_state = yield from self._fetch_offset_and_truncate(tp, state)
        except _ListOffsetsFailed as failure:
            if self.partition_states.get(tp) is not state:
                return True  # no longer ours (driver ignored partition_map_locked): nothing to back off
            if failure.error == Errors.FENCED_LEADER_EPOCH:
                return self._on_partition_fenced(tp, request_epoch)
            return False  # "Could not fetch offset for ..." / "Error getting offset for partition ..."
        except ReplogError:
            return self.partition_states.get(tp) is not state
        if new_state is not None and self.partition_states.get(tp) is state:
            self.partition_states.update_and_move_to_end(tp, new_state)
        return True

    def _fetch_offset_and_truncate(
            self, tp: TopicPartition, state: PartitionFetchState,
    ) -> Generator[LeaderRequest, Reply, PartitionFetchState | None]:
        """`fetchOffsetAndTruncate`: compare the leader's latest/earliest offsets with the local LEO.

        Kafka runs it under `partitionMapLock` (from `processFetchRequest`'s locked response loop or from
        `addPartitions`): `partition_map_locked` is set while each ListOffsets is in flight. None = the
        partition was removed or replaced meanwhile (a driver that did not wait for the lock): its log is
        not this fetcher's to truncate any more, the answer is dropped."""
        epoch = state.current_leader_epoch
        replica_end = self._logs(tp).log_end_offset
        leader_end = yield from self._list_offsets(tp, epoch, LATEST)
        if self.partition_states.get(tp) is not state:
            return None
        log = self._logs(tp)
        if leader_end < replica_end:
            # Leader is behind us (e.g. unclean election): truncate to its end.
            log.truncate_to(leader_end, self._now, reason="out_of_range", role=FOLLOWER)
            return PartitionFetchState(leader_end, epoch, FETCHING, 0, None, self._latest_epoch(tp), state.topic_id)
        leader_start = yield from self._list_offsets(tp, epoch, EARLIEST)
        if self.partition_states.get(tp) is not state:
            return None
        log = self._logs(tp)
        if leader_start > replica_end:
            log.truncate_fully_and_start_at(leader_start, self._now, reason="full", role=FOLLOWER)
            offset_to_fetch = leader_start
        else:
            offset_to_fetch = replica_end
        return PartitionFetchState(offset_to_fetch, epoch, FETCHING, leader_end - offset_to_fetch, None,
                                   self._latest_epoch(tp), state.topic_id)

    def _list_offsets(self, tp: TopicPartition, epoch: int, spec: str) -> Generator[LeaderRequest, Reply, int]:
        """`leader.fetchLatestOffset` / `fetchEarliestOffset`, sent with `partitionMapLock` held."""
        current = epoch if self.flags.current_leader_epoch else None
        self.partition_map_locked = True
        try:
            response = yield from self._ask(ListOffsetsRequest(self.broker_id, tp, current, spec))
        finally:
            self.partition_map_locked = False
        assert isinstance(response, ListOffsetsResponse)
        if response.error != NONE:
            raise _ListOffsetsFailed(response.error)
        return response.offset

    def _on_partition_fenced(self, tp: TopicPartition, request_epoch: int | None) -> bool:
        """`onPartitionFenced`: same epoch -> failed (await new state); newer epoch here -> retry later."""
        state = self.partition_states.get(tp)
        if state is None:
            return False
        if request_epoch is not None and request_epoch == state.current_leader_epoch:
            self._mark_partition_failed(tp)
            return False
        return True

    def _mark_partition_failed(self, tp: TopicPartition) -> None:
        """`markPartitionFailed`: add to the manager's failed set and stop fetching the partition."""
        self.failed_partitions.add(tp)
        state = self.partition_states.remove(tp)
        if state is not None and self._events is not None:
            self._events.append(make_event("fetcher_change", self._now, self.broker_id, action="removed",
                                  fetcher_id=self.fetcher_id, leader_id=self.source_broker.id,
                                  partitions=[{"topic": tp.topic, "partition": tp.partition,
                                               "fetch_offset": state.fetch_offset}]))

    def _delay_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """`delayPartitions(tps, replica.fetch.backoff.ms)`: back off and move to the end."""
        backoff = self.config.replica_fetch_backoff_ms
        for tp in tps:
            state = self.partition_states.get(tp)
            if state is not None and not state.is_delayed(self._now):
                self.partition_states.update_and_move_to_end(tp, state.with_delay(self._now + backoff, backoff))

    def _latest_epoch(self, tp: TopicPartition) -> int | None:
        """`latestEpoch(tp)`; None under the pre-KIP-101 protocol (old message format: no epochs)."""
        if not self.flags.uses_log_epochs:
            return None
        try:
            return self._logs(tp).latest_epoch
        except ReplogError:
            return None

    # --- events ---------------------------------------------------------------------------------

    def _emit_fetches(self, request: FetchRequest) -> None:
        events = self._events
        assert events is not None
        leader, fetcher_id, broker_id, now = self.source_broker.id, self.fetcher_id, self.broker_id, self._now
        get_state = self.partition_states.get
        for tp, data in request.partitions.items():
            state = get_state(tp)
            events.add_fetch(now, broker_id, tp.topic, tp.partition,
                             state.current_leader_epoch if state is not None else None,
                             leader, fetcher_id, data.fetch_offset, data.last_fetched_epoch)

    def _emit_request_error(self, request: FetchRequest, error: str, received_ms: int) -> None:
        """A `fetch_response` with the request's error, at the offset and CurrentLeaderEpoch sent (the thread's epoch
        where none was sent), for each partition it carried whose answer the thread would have processed: still
        this thread's, at the offset sent, ready for fetch (a partition removed, re-added at another offset or
        truncating meanwhile gets none, though Kafka's WARN line names every partition of the request)."""
        events = self._events
        assert events is not None
        states = self.partition_states
        leader, fetcher = self.source_broker.id, self.fetcher_id
        for tp, sent in request.partitions.items():
            state = states.get(tp)
            if state is None or sent.fetch_offset != state.fetch_offset or not state.is_ready_for_fetch(self._now):
                continue
            epoch = sent.current_leader_epoch if sent.current_leader_epoch is not None else state.current_leader_epoch
            events.add_fetch_response(
                self._now, self.broker_id, tp.topic, tp.partition, epoch, leader, fetcher, sent.fetch_offset,
                str(error), None, None, 0, 0, None, None, received_ms)

    def _emit_fetch_response(self, tp: TopicPartition, state: PartitionFetchState,
                             data: FetchPartitionResponse, received_ms: int) -> None:
        events = self._events
        assert events is not None
        div = data.diverging_epoch
        batches = data.batches
        # Most responses of a fetch round carry no batches: skip the two sums over nothing. `bytes` is what the
        # leader sent (with the start of a batch its byte range cut after them), `record_count` what the follower
        # can append.
        size, records = (data.size_bytes, data.record_count) if batches else (0, 0)
        hw, lso = data.high_watermark, data.log_start_offset
        events.add_fetch_response(
            self._now, self.broker_id, tp.topic, tp.partition, state.current_leader_epoch,
            self.source_broker.id, self.fetcher_id, state.fetch_offset, str(data.error),
            hw if hw >= 0 else None, lso if lso >= 0 else None, size, records,
            div.leader_epoch if div is not None and div.leader_epoch >= 0 else None,
            div.end_offset if div is not None and div.end_offset >= 0 else None, received_ms)
