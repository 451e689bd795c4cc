"""The follower's pool of fetcher threads: Kafka's `AbstractFetcherManager` / `ReplicaFetcherManager`.

Contract (reference §3.10): one fetcher per (leader broker id, fetcher id), fetcher id =
`Utils.abs(31 * topic.hashCode + partition) % num_fetchers_per_broker` with Java semantics
(`replication_core.java_hash`). Fetchers are created through an injected factory so the manager
neither knows how a fetcher reaches its leader nor owns any clock: every mutator takes `now_ms`
only to stamp the `fetcher_change` events it emits. The manager owns the `FailedPartitions` set
and hands it to every fetcher it creates (as Kafka does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from replication_core.config import ReplicationConfig
from replication_core.event_log import EventLog
from replication_core.events import Event, make_event
from replication_core.fetcher import ReplicaFetcherThread
from replication_core.java_hash import fetcher_id as java_fetcher_id
from replication_core.log import Log
from replication_core.partition_fetch_state import (
    BrokerEndPoint,
    FailedPartitions,
    InitialFetchState,
    PartitionFetchState,
    PartitionStates,
    TopicPartition,
)
from replication_core.quota import ReplicationQuotaManager
from replication_core.truncation import TruncationProtocol

EventSink = Callable[[Event], None]


class FetcherThreadLike(Protocol):
    """What the manager needs from a fetcher thread (`AbstractFetcherThread`'s pool-facing methods)."""

    @property
    def fetcher_id(self) -> int:
        """Fetcher id within the source broker."""
        ...

    @property
    def source_broker(self) -> BrokerEndPoint:
        """The leader endpoint this thread fetches from (`leader.brokerEndPoint()`)."""
        ...

    @property
    def partition_states(self) -> PartitionStates:
        """The fetch states, in fetch order (`partitionStates`)."""
        ...

    def add_partitions(self, initial: Mapping[TopicPartition, InitialFetchState],
                       now_ms: int) -> set[TopicPartition]:
        """`addPartitions`; returns the partitions added."""
        ...

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionFetchState]:
        """`removePartitions`; returns the removed fetch states."""
        ...

    def remove_all_partitions(self) -> dict[TopicPartition, PartitionFetchState]:
        """`removeAllPartitions`."""
        ...

    def partition_count(self) -> int:
        """`partitionCount`."""
        ...

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        """`fetchState(tp)`."""
        ...

    def shutdown(self) -> None:
        """`shutdown`: stop doing work (no thread here; just marks the fetcher stopped)."""
        ...


FetcherFactory = Callable[[int, BrokerEndPoint, FailedPartitions], FetcherThreadLike]
"""`createFetcherThread(fetcherId, sourceBroker)`, plus the manager's failed-partitions set."""


def _partitions_payload(states: Mapping[TopicPartition, int]) -> list[dict[str, object]]:
    return [{"topic": tp.topic, "partition": tp.partition, "fetch_offset": off} for tp, off in states.items()]


def replica_fetcher_factory(broker_id: int, config: ReplicationConfig, logs: Callable[[TopicPartition], Log], *,
                            protocol: TruncationProtocol | str | None = None,
                            quota: ReplicationQuotaManager | None = None,
                            on_hw_updated: Callable[[frozenset[TopicPartition]], None] | None = None,
                            events: EventLog | None = None, broker_epoch: int = -1) -> FetcherFactory:
    """`ReplicaFetcherManager.createFetcherThread`: build `ReplicaFetcherThread`s sharing these settings."""

    def create(fid: int, source: BrokerEndPoint, failed: FailedPartitions) -> FetcherThreadLike:
        """`createFetcherThread(fetcherId, sourceBroker)`."""
        return ReplicaFetcherThread(broker_id, fid, source, config, logs, failed, protocol=protocol, quota=quota,
                                    on_hw_updated=on_hw_updated, events=events, broker_epoch=broker_epoch)

    return create


class FetcherManager:
    """`AbstractFetcherManager` (as `ReplicaFetcherManager`): fetchers keyed by (leader id, fetcher id)."""

    def __init__(self, broker_id: int, num_fetchers_per_broker: int, create_fetcher: FetcherFactory,
                 emit: EventSink | None = None) -> None:
        if num_fetchers_per_broker <= 0:
            raise ValueError(f"num_fetchers_per_broker must be positive, got {num_fetchers_per_broker}")
        self.broker_id = broker_id
        self.num_fetchers_per_broker = num_fetchers_per_broker
        self.failed_partitions = FailedPartitions()
        self._create = create_fetcher
        self._emit = emit
        self._fetchers: dict[tuple[int, int], FetcherThreadLike] = {}

    @classmethod
    def from_config(cls, broker_id: int, config: ReplicationConfig, create_fetcher: FetcherFactory,
                    emit: EventSink | None = None) -> FetcherManager:
        """A manager sized by `num.replica.fetchers`."""
        return cls(broker_id, config.num_replica_fetchers, create_fetcher, emit)

    # --- queries ------------------------------------------------------------------------------

    def get_fetcher_id(self, tp: TopicPartition) -> int:
        """`getFetcherId(tp)` with Java `String.hashCode` and 32-bit overflow."""
        return java_fetcher_id(tp.topic, tp.partition, self.num_fetchers_per_broker)

    @property
    def fetchers(self) -> dict[tuple[int, int], FetcherThreadLike]:
        """`fetcherThreadMap`: (leader broker id, fetcher id) -> fetcher (a copy)."""
        return dict(self._fetchers)

    def get_fetcher(self, tp: TopicPartition) -> FetcherThreadLike | None:
        """`getFetcher(tp)`: the fetcher currently holding `tp`, if any."""
        for fetcher in self._fetchers.values():
            if fetcher.fetch_state(tp) is not None:
                return fetcher
        return None

    def failed_partitions_count(self) -> int:
        """Gauge `FailedPartitionsCount`."""
        return len(self.failed_partitions)

    def max_lag(self) -> int:
        """Gauge `MaxLag`: the largest known lag over all fetched partitions (0 if none known)."""
        lags = [0]
        for fetcher in self._fetchers.values():
            lags.extend(s.lag for _, s in fetcher.partition_states.items() if s.lag is not None)
        return max(lags)

    # --- mutators -----------------------------------------------------------------------------

    def add_fetcher_for_partitions(self, initial: Mapping[TopicPartition, InitialFetchState],
                                   now_ms: int) -> None:
        """`addFetcherForPartitions`: group by (leader endpoint, fetcher id), reuse or replace the fetcher."""
        groups: dict[tuple[BrokerEndPoint, int], dict[TopicPartition, InitialFetchState]] = {}
        for tp, state in initial.items():
            groups.setdefault((state.leader, self.get_fetcher_id(tp)), {})[tp] = state
        for (leader, fid), states in groups.items():
            key = (leader.id, fid)
            fetcher = self._fetchers.get(key)
            if fetcher is None or fetcher.source_broker != leader:
                if fetcher is not None:
                    # Same broker id, new endpoint: Kafka shuts the old thread down with its partitions.
                    self._emit_removed(fetcher, fetcher.remove_all_partitions(), now_ms)
                    fetcher.shutdown()
                fetcher = self._create(fid, leader, self.failed_partitions)
                self._fetchers[key] = fetcher
            self.failed_partitions.remove_all(states)
            added = fetcher.add_partitions(states, now_ms)
            if added and self._emit is not None:
                payload = {tp: states[tp].init_offset for tp in states if tp in added}
                self._emit(make_event("fetcher_change", now_ms, self.broker_id, action="added",
                                      fetcher_id=fid, leader_id=leader.id,
                                      partitions=_partitions_payload(payload)))

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition],
                                      now_ms: int) -> dict[TopicPartition, PartitionFetchState]:
        """`removeFetcherForPartitions`: drop `tps` from every fetcher and from the failed set."""
        # Caller's order, not a set's: set order of (str, int) keys depends on PYTHONHASHSEED, and the
        # order becomes the `fetcher_change` payload, which must be identical across runs.
        wanted = list(dict.fromkeys(tps))
        removed: dict[TopicPartition, PartitionFetchState] = {}
        for fetcher in self._fetchers.values():
            states = fetcher.remove_partitions(wanted)
            self._emit_removed(fetcher, states, now_ms)
            removed.update(states)
        self.failed_partitions.remove_all(wanted)
        return removed

    def shutdown_idle_fetcher_threads(self) -> None:
        """`shutdownIdleFetcherThreads`: shut down and forget fetchers without partitions."""
        for key, fetcher in list(self._fetchers.items()):
            if fetcher.partition_count() <= 0:
                fetcher.shutdown()
                del self._fetchers[key]

    def resize_thread_pool(self, new_size: int, now_ms: int) -> None:
        """`resizeThreadPool`: re-home every partition with its epoch and offset; drop idle fetchers."""
        if new_size <= 0:
            raise ValueError(f"num_fetchers_per_broker must be positive, got {new_size}")
        if new_size != self.num_fetchers_per_broker:
            self.num_fetchers_per_broker = new_size
            moved: dict[TopicPartition, InitialFetchState] = {}
            for (_, fid), fetcher in list(self._fetchers.items()):
                states = fetcher.remove_all_partitions()
                self._emit_removed(fetcher, states, now_ms)
                if fid >= new_size:
                    fetcher.shutdown()
                for tp, st in states.items():
                    moved[tp] = InitialFetchState(fetcher.source_broker, st.current_leader_epoch,
                                                  st.fetch_offset, st.topic_id)
            self.add_fetcher_for_partitions(moved, now_ms)
        self.shutdown_idle_fetcher_threads()

    def close_all_fetchers(self) -> None:
        """`closeAllFetchers`: shut every fetcher down and forget them."""
        for fetcher in self._fetchers.values():
            fetcher.shutdown()
        self._fetchers.clear()

    def _emit_removed(self, fetcher: FetcherThreadLike, states: Mapping[TopicPartition, PartitionFetchState],
                      now_ms: int) -> None:
        if states and self._emit is not None:
            payload = {tp: st.fetch_offset for tp, st in states.items()}
            self._emit(make_event("fetcher_change", now_ms, self.broker_id, action="removed",
                                  fetcher_id=fetcher.fetcher_id, leader_id=fetcher.source_broker.id,
                                  partitions=_partitions_payload(payload)))
