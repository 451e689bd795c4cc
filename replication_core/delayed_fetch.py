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

from replication_core.errors import (
    Errors,
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


@dataclass(frozen=True)
class FetchPartitionStatus:
    """`FetchPartitionStatus`: where one partition's read started and what was asked."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int | None = None
    last_fetched_epoch: int | None = None


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
    statuses: Mapping[Hashable, FetchPartitionStatus]
    is_throttled: Callable[[Hashable, int], bool] | None = None
    payload: object = None
    completed: bool = field(default=False, init=False)

    @property
    def is_follower(self) -> bool:
        """Fetch from a follower replica (`FetchParams.isFromFollower`)."""
        return self.replica_id >= 0

    def try_complete(self, lookup: PartitionLookup, now_ms: int = 0) -> bool:
        """`tryComplete` at `now_ms`: True if the fetch can be answered now (the caller completes it)."""
        accumulated = 0
        for key, st in self.statuses.items():
            try:
                partition = lookup(key)
                _, hw, _, leo = partition.fetch_offset_snapshot(st.current_leader_epoch, True)
            except (NotLeaderOrFollowerError, UnknownTopicOrPartitionError, KafkaStorageError,
                    FencedLeaderEpochError):
                return True  # cases A-E: the partition moved away or the request is fenced
            end = leo if self.is_follower else hw
            if end < st.fetch_offset:
                return True  # case F: the leader truncated below the fetch position
            if end > st.fetch_offset and (self.is_throttled is None or not self.is_throttled(key, now_ms)):
                accumulated += partition.log.bytes_between(st.fetch_offset, end, st.max_bytes)
            if st.last_fetched_epoch is not None and st.last_fetched_epoch != UNDEFINED_EPOCH:
                eo = partition.last_offset_for_leader_epoch(st.current_leader_epoch, st.last_fetched_epoch, False)
                if (eo.error is not Errors.NONE or eo.end_offset == UNDEFINED_EPOCH_OFFSET
                        or eo.leader_epoch == UNDEFINED_EPOCH or eo.leader_epoch < st.last_fetched_epoch
                        or eo.end_offset < st.fetch_offset):
                    return True  # case H: the follower's log now diverges
        return accumulated >= self.min_bytes  # case G


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
        for key in op.statuses:
            self._watchers.setdefault(key, []).append(op)
        self._seq += 1
        heapq.heappush(self._deadlines, (op.deadline_ms, self._seq, op))
        self._pending += 1
        return False

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
