"""Value types of the follower fetcher: partition fetch state, initial state, truncation results.

Mirrors the small case classes at the end of Kafka's `AbstractFetcherThread.scala` (`PartitionFetchState`,
`OffsetTruncationState`, `InitialFetchState`, `FetchState`), `kafka.utils.DelayedItem`,
`org.apache.kafka.common.internals.PartitionStates` (insertion-ordered map with move-to-end) and
`kafka.server.FailedPartitions`. Time is virtual: a delay is the virtual-clock instant at which it
expires, so every "is it delayed?" question takes `now_ms`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from enum import Enum
from typing import NamedTuple

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class TopicPartition(NamedTuple):
    """Kafka `TopicPartition`; prints as `topic-3` like Kafka."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class BrokerEndPoint:
    """Kafka `BrokerEndPoint(id, host, port)`: the leader a fetcher thread fetches from."""

    id: int
    host: str = "localhost"
    port: int = 9092

    def __str__(self) -> str:
        return f"BrokerEndPoint(id={self.id}, host={self.host}:{self.port})"


class ReplicaState(Enum):
    """Kafka `ReplicaState` of a fetched partition: `Truncating` or `Fetching`."""

    TRUNCATING = "Truncating"
    FETCHING = "Fetching"


@dataclass(frozen=True)
class DelayedItem:
    """`kafka.utils.DelayedItem` on a virtual clock: delayed until `due_ms` (for `delay_ms` in all)."""

    due_ms: int
    delay_ms: int = 0

    def remaining_ms(self, now_ms: int) -> int:
        """Milliseconds left before the delay expires (0 once expired)."""
        return max(0, self.due_ms - now_ms)


@dataclass(frozen=True)
class PartitionFetchState:
    """`PartitionFetchState(topicId, fetchOffset, lag, currentLeaderEpoch, delay, state, lastFetchedEpoch)`.

    Frozen: every transition builds a new state, as Kafka does.
    """

    fetch_offset: int
    current_leader_epoch: int
    state: ReplicaState
    lag: int | None = None
    delay: DelayedItem | None = None
    last_fetched_epoch: int | None = None
    topic_id: str | None = None

    # An explicit __init__ because mypyc compiles it: the one @dataclass generates runs interpreted, and a
    # frozen one sets each field through object.__setattr__ (~0.6 us per object against ~0.04 compiled;
    # one or more of these per fetch). object.__setattr__ keeps the class frozen; mypyc makes it a slot store.
    def __init__(self, fetch_offset: int, current_leader_epoch: int, state: ReplicaState, lag: int | None = None,
                 delay: DelayedItem | None = None, last_fetched_epoch: int | None = None,
                 topic_id: str | None = None) -> None:
        object.__setattr__(self, "fetch_offset", fetch_offset)
        object.__setattr__(self, "current_leader_epoch", current_leader_epoch)
        object.__setattr__(self, "state", state)
        object.__setattr__(self, "lag", lag)
        object.__setattr__(self, "delay", delay)
        object.__setattr__(self, "last_fetched_epoch", last_fetched_epoch)
        object.__setattr__(self, "topic_id", topic_id)

    def is_delayed(self, now_ms: int) -> bool:
        """`isDelayed`: a backoff is pending at `now_ms`."""
        return self.delay is not None and self.delay.remaining_ms(now_ms) > 0

    def is_ready_for_fetch(self, now_ms: int) -> bool:
        """`isReadyForFetch`: Fetching and not delayed."""
        return self.state is ReplicaState.FETCHING and not self.is_delayed(now_ms)

    def is_truncating(self, now_ms: int) -> bool:
        """`isTruncating`: Truncating and not delayed."""
        return self.state is ReplicaState.TRUNCATING and not self.is_delayed(now_ms)

    @property
    def is_replica_in_sync(self) -> bool:
        """`isReplicaInSync`: the last response left no lag (used by the follower quota, §4)."""
        return self.lag is not None and self.lag <= 0

    def with_delay(self, due_ms: int, delay_ms: int = 0) -> PartitionFetchState:
        """A copy delayed until `due_ms` (`delayPartitions`; `delay_ms` is the backoff applied)."""
        return replace(self, delay=DelayedItem(due_ms, delay_ms))

    def __str__(self) -> str:
        def opt(value: object) -> str:
            """Scala `Option` rendering: `Some(x)` / `None`."""
            return "None" if value is None else f"Some({value})"

        delay_ms = self.delay.delay_ms if self.delay is not None else 0
        return (f"FetchState(topicId={opt(self.topic_id)}, fetchOffset={self.fetch_offset}, "
                f"currentLeaderEpoch={self.current_leader_epoch}, lastFetchedEpoch={opt(self.last_fetched_epoch)}, "
                f"state={self.state.value}, lag={opt(self.lag)}, delay={delay_ms}ms)")


@dataclass(frozen=True)
class InitialFetchState:
    """`InitialFetchState(topicId, leader, currentLeaderEpoch, initOffset)` passed to `addPartitions`."""

    leader: BrokerEndPoint
    current_leader_epoch: int
    init_offset: int
    topic_id: str | None = None


@dataclass(frozen=True)
class OffsetTruncationState:
    """`OffsetTruncationState(offset, truncationCompleted)`; prints like Kafka's `TruncationState(...)`."""

    offset: int
    truncation_completed: bool

    def __str__(self) -> str:
        return f"TruncationState(offset={self.offset}, completed={str(self.truncation_completed).lower()})"


@dataclass(frozen=True)
class EpochEndOffset:
    """`OffsetForLeaderEpochResponseData.EpochEndOffset`: the leader's answer for one partition.

    Also the shape of a fetch response's `DivergingEpoch` (error NONE).
    """

    error: str = "NONE"
    leader_epoch: int = UNDEFINED_EPOCH
    end_offset: int = UNDEFINED_EPOCH_OFFSET

    def __str__(self) -> str:
        return (f"EpochEndOffset(errorCode={self.error}, leaderEpoch={self.leader_epoch}, "
                f"endOffset={self.end_offset})")


class PartitionStates:
    """`PartitionStates<PartitionFetchState>`: insertion-ordered, `update_and_move_to_end` for fairness."""

    def __init__(self) -> None:
        self._map: dict[TopicPartition, PartitionFetchState] = {}

    def __contains__(self, tp: object) -> bool:
        return tp in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(list(self._map))

    def get(self, tp: TopicPartition) -> PartitionFetchState | None:
        """The state of `tp`, or None (`stateValue`)."""
        return self._map.get(tp)

    def items(self) -> list[tuple[TopicPartition, PartitionFetchState]]:
        """A snapshot of (partition, state) in map order (`partitionStateMap`)."""
        return list(self._map.items())

    def update(self, tp: TopicPartition, state: PartitionFetchState) -> None:
        """Replace the state keeping the position (`update`); adds at the end if new."""
        self._map[tp] = state

    def update_and_move_to_end(self, tp: TopicPartition, state: PartitionFetchState) -> None:
        """`updateAndMoveToEnd`: re-insert at the tail so the partition goes last in the next fetch."""
        self._map.pop(tp, None)
        self._map[tp] = state

    def set_all(self, states: dict[TopicPartition, PartitionFetchState]) -> None:
        """`set(map)`: replace every state; Kafka rebuilds the map grouped by topic (first-seen order)."""
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in states:
            by_topic.setdefault(tp.topic, []).append(tp)
        self._map = {tp: states[tp] for tps in by_topic.values() for tp in tps}

    def remove(self, tp: TopicPartition) -> PartitionFetchState | None:
        """Remove and return the state of `tp` (`remove`)."""
        return self._map.pop(tp, None)


class FailedPartitions:
    """`kafka.server.FailedPartitions`: the manager-wide set of partitions marked failed."""

    def __init__(self) -> None:
        self._set: set[TopicPartition] = set()

    def add(self, tp: TopicPartition) -> None:
        """Mark `tp` failed."""
        self._set.add(tp)

    def remove_all(self, tps: Iterable[TopicPartition]) -> None:
        """Forget `tps` (re-added by a new leader / epoch, or removed from fetching)."""
        self._set.difference_update(tps)

    def contains(self, tp: TopicPartition) -> bool:
        """Whether `tp` is failed."""
        return tp in self._set

    def __len__(self) -> int:
        return len(self._set)
