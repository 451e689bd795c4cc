"""Delayed fetch and its purgatory: fetches parked on the leader until data arrives or time runs out.

Mirrors `kafka.server.DelayedFetch` and `DelayedOperationPurgatory` (reference §5) without threads or a
timer wheel: time is an input. `can_respond_immediately` is the immediate-answer test of
`ReplicaManager.fetchMessages`; `DelayedFetch.try_complete` is `DelayedFetch.tryComplete` (cases A-H);
the purgatory watches operations by topic-partition (`checkAndComplete`) and expires them at their
deadline (`expire`). Completing an operation only marks it; the owner (ReplicaManager) re-reads the
log and builds the response, as `DelayedFetch.onComplete` does with `readFromPurgatory = true`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from replication_core.errors import (
    FencedLeaderEpochError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from replication_core.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from replication_core.partition import Partition

PartitionLookup = Callable[[Hashable], Partition]
"""Returns the hosted partition for a key or raises `UnknownTopicOrPartitionError` /
`NotLeaderOrFollowerError` / `KafkaStorageError` (`ReplicaManager.getPartitionOrException`)."""


class FetchPartitionStatus(NamedTuple):
    """`FetchPartitionStatus`: where one partition's read started and what was asked.

    A NamedTuple (immutable and cheap to build): one per partition of every parked fetch."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int | None = None
    last_fetched_epoch: int | None = None


class FetchInfo(Protocol):
    """What `tryComplete` reads of one partition of a parked fetch: a `FetchPartitionStatus`, or the
    request's own partition data (`FetchRequest.PartitionData`, Kafka's `FetchPartitionStatus.fetchInfo`)."""

    @property
    def fetch_offset(self) -> int: ...

    @property
    def max_bytes(self) -> int: ...

    @property
    def current_leader_epoch(self) -> int | None: ...

    @property
    def last_fetched_epoch(self) -> int | None: ...


def can_respond_immediately(max_wait_ms: int, partition_count: int, bytes_readable: int, min_bytes: int,
                            any_error: bool, any_diverging: bool) -> bool:
    """`ReplicaManager.fetchMessages` immediate-answer test (reference §5 items 1-5)."""
    return (max_wait_ms <= 0 or partition_count == 0 or bytes_readable >= min_bytes or any_error
            or any_diverging)


@dataclass(eq=False)
class DelayedFetch:
    """`DelayedFetch`: a parked fetch with its per-partition start positions and deadline.

    `is_follower` selects the end offset that counts (LEO for followers, HW for consumers);
    `is_throttled(key, now_ms)` says whether a partition's bytes do not count right now (the leader-side
    replication quota, `shouldLeaderThrottle`, case G)."""

    request_id: Hashable
    replica_id: int
    min_bytes: int
    deadline_ms: int
    # Keyed by the partition key the lookup takes (a TopicPartition in the ReplicaManager); `Any` because
    # Mapping is invariant in its key type, so Mapping[Hashable, ...] would not accept Mapping[TopicPartition, ...].
    statuses: Mapping[Any, FetchInfo]
    is_throttled: Callable[[Hashable, int], bool] | None = None
    payload: Any = None  # `object` here makes the mypyc-compiled dataclass fail at import (KeyError)
    # The segment base offset of each partition's read position when the fetch arrived (the segment half of
    # Kafka's `FetchPartitionStatus.startOffsetMetadata`); None: the segment the position is in now.
    start_segments: Mapping[Any, int] | None = None
    completed: bool = field(default=False, init=False)

    # An explicit __init__ because mypyc compiles it (one parked fetch per follower fetch round): the one
    # @dataclass generates runs interpreted. It also sets `completed`, which mypyc's compiled dataclass
    # leaves unset for an `init=False` field with a default.
    def __init__(self, request_id: Hashable, replica_id: int, min_bytes: int, deadline_ms: int,
                 statuses: Mapping[Any, FetchInfo], is_throttled: Callable[[Hashable, int], bool] | None = None,
                 payload: Any = None, start_segments: Mapping[Any, int] | None = None) -> None:
        self.request_id = request_id
        self.replica_id = replica_id
        self.min_bytes = min_bytes
        self.deadline_ms = deadline_ms
        self.statuses = statuses
        self.is_throttled = is_throttled
        self.payload = payload
        self.start_segments = start_segments
        self.completed = False

    @property
    def is_follower(self) -> bool:
        """Fetch from a follower replica (`FetchParams.isFromFollower`)."""
        return self.replica_id >= 0

    def try_complete(self, lookup: PartitionLookup, now_ms: int = 0) -> bool:
        """`tryComplete` at `now_ms`: True if the fetch can be answered now (the caller completes it).

        Runs for every parked fetch each time one of its partitions gets data, once per partition of
        the fetch: the common case (this broker leads the partition in the fetch's epoch) reads the
        log's offsets and epoch cache directly; any other case goes through `fetchOffsetSnapshot` /
        `lastOffsetForLeaderEpoch`, whose exceptions and errors decide it."""
        accumulated = 0
        is_follower = self.replica_id >= 0
        is_throttled = self.is_throttled
        min_bytes = self.min_bytes
        starts = self.start_segments
        for key, st in self.statuses.items():
            current_epoch = st.current_leader_epoch
            try:
                partition = lookup(key)
                if partition.leader_replica_id == partition.broker_id and (
                        current_epoch is None or current_epoch == partition.leader_epoch
                        or current_epoch == UNDEFINED_EPOCH):
                    # fetchOffsetSnapshot's checks pass (leader, epoch matches or absent): read directly.
                    log = partition.log
                    hw = log._hw
                    leo = log._leo
                else:
                    _, hw, _, leo = partition.fetch_offset_snapshot(current_epoch, True)
                    log = partition.log
            except (NotLeaderOrFollowerError, UnknownTopicOrPartitionError, KafkaStorageError,
                    FencedLeaderEpochError):
                return True  # cases A-E: the partition moved away or the request is fenced
            fetch_offset = st.fetch_offset
            end = leo if is_follower else hw
            if end < fetch_offset:
                return True  # case F: the leader truncated below the fetch position
            if end > fetch_offset:
                # Case F/G by the positions' segments: the fetch position on an older segment than the end
                # offset (the follower fell behind, or the leader rolled since the fetch arrived) completes
                # unless throttled; only on the same segment do the bytes between them count (`positionDiff`).
                start_segment = starts.get(key) if starts is not None else None
                if start_segment is None:
                    start_segment = log.segment_base_offset(fetch_offset)
                end_segment = log.segment_base_offset(end)
                if start_segment < end_segment:
                    if is_throttled is None or not is_throttled(key, now_ms):
                        return True
                elif start_segment == end_segment:
                    if is_throttled is None:
                        accumulated += log.bytes_between(fetch_offset, end, st.max_bytes)
                        if accumulated >= min_bytes:
                            # Every later case returns True too, so the answer is known: stop here rather
                            # than walk the rest of the fetch (most parked fetches wake on one partition).
                            return True
                    elif not is_throttled(key, now_ms):
                        accumulated += log.bytes_between(fetch_offset, end, st.max_bytes)
            last_fetched = st.last_fetched_epoch
            if last_fetched is not None and last_fetched != UNDEFINED_EPOCH:
                # lastOffsetForLeaderEpoch(current, lastFetched, fetchOnlyFromLeader=false): its epoch check
                # passed above, so it is the epoch cache's end offset (UNDEFINED when unknown).
                eo_epoch, eo_end = log.epoch_cache.end_offset_for(last_fetched, log._leo)
                if (eo_end == UNDEFINED_EPOCH_OFFSET or eo_epoch == UNDEFINED_EPOCH
                        or eo_epoch < last_fetched or eo_end < fetch_offset):
                    return True  # case H: the follower's log now diverges
        return accumulated >= min_bytes  # case G


class DelayedFetchPurgatory:
    """`DelayedOperationPurgatory[DelayedFetch]`: watchers per partition key plus a deadline queue."""

    def __init__(self) -> None:
        self._watchers: dict[Hashable, list[DelayedFetch]] = {}
        self._deadlines: list[tuple[int, int, DelayedFetch]] = []
        self._seq = 0
        self._pending = 0

    def __len__(self) -> int:
        """Operations parked and not yet completed (`numDelayed`)."""
        return self._pending

    def is_watched(self, key: Hashable) -> bool:
        """True if some operation watches `key` (cheap check before `check_and_complete`)."""
        return key in self._watchers

    def watched(self, key: Hashable) -> int:
        """Operations watching `key` (`watched`), completed ones excluded."""
        return sum(1 for op in self._watchers.get(key, ()) if not op.completed)

    def try_complete_else_watch(self, op: DelayedFetch, lookup: PartitionLookup, now_ms: int = 0) -> bool:
        """`tryCompleteElseWatch`: complete now if possible, otherwise watch every key of `op`.
        Returns True if completed (the caller answers at once)."""
        if op.try_complete(lookup, now_ms):
            op.completed = True
            return True
        self.watch(op)
        return False

    def watch(self, op: DelayedFetch) -> None:
        """The watch half of `tryCompleteElseWatch`: watch every key of `op` and its deadline, for a
        caller that already knows `tryComplete` is false."""
        watchers = self._watchers
        for key in op.statuses:
            ops = watchers.get(key)
            if ops is None:
                watchers[key] = [op]
            else:
                ops.append(op)
        self._seq += 1
        heapq.heappush(self._deadlines, (op.deadline_ms, self._seq, op))
        self._pending += 1

    def check_and_complete(self, key: Hashable, lookup: PartitionLookup, now_ms: int = 0) -> list[DelayedFetch]:
        """`checkAndComplete(key)`: re-run `try_complete` for operations watching `key`; returns
        those completed now, in the order they were parked."""
        ops = self._watchers.get(key)
        if not ops:
            return []
        done: list[DelayedFetch] = []
        keep: list[DelayedFetch] = []
        for op in ops:
            if op.completed:
                continue
            if op.try_complete(lookup, now_ms):
                op.completed = True
                self._pending -= 1
                done.append(op)
            else:
                keep.append(op)
        if keep:
            self._watchers[key] = keep
        else:
            del self._watchers[key]
        return done

    def expire(self, now_ms: int) -> list[DelayedFetch]:
        """Complete every operation whose deadline is at or before `now_ms` (the timer's `run`)."""
        expired: list[DelayedFetch] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now_ms:
            _, _, op = heapq.heappop(heap)
            if op.completed:
                continue
            op.completed = True
            self._pending -= 1
            expired.append(op)
        if expired:
            for key in {k for op in expired for k in op.statuses}:
                live = [op for op in self._watchers.get(key, ()) if not op.completed]
                if live:
                    self._watchers[key] = live
                else:
                    self._watchers.pop(key, None)
        return expired

    def next_deadline(self) -> int | None:
        """Earliest deadline among parked operations (for a driver's timer), or None."""
        heap = self._deadlines
        while heap and heap[0][2].completed:
            heapq.heappop(heap)
        return heap[0][0] if heap else None
