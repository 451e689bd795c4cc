"""FetcherManager: ports of Kafka's `AbstractFetcherManagerTest` plus grouping / endpoint-change rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from replication_core.events import Event
from replication_core.fetcher_manager import FetcherManager
from replication_core.java_hash import fetcher_id
from replication_core.partition_fetch_state import (
    BrokerEndPoint,
    FailedPartitions,
    InitialFetchState,
    PartitionFetchState,
    ReplicaState,
    TopicPartition,
)


class FakeFetcher:
    """Minimal stand-in for a fetcher thread: holds states, honours the failed set like Kafka's."""

    def __init__(self, fid: int, source: BrokerEndPoint, failed: FailedPartitions) -> None:
        self.fetcher_id = fid
        self.source_broker = source
        self.failed = failed
        self.states: dict[TopicPartition, PartitionFetchState] = {}
        self.is_shutdown = False

    def add_partitions(self, initial: Mapping[TopicPartition, InitialFetchState],
                       now_ms: int) -> set[TopicPartition]:
        self.failed.remove_all(initial)
        for tp, st in initial.items():
            self.states[tp] = PartitionFetchState(st.init_offset, st.current_leader_epoch,
                                                  ReplicaState.FETCHING)
        return set(initial)

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionFetchState]:
        return {tp: self.states.pop(tp) for tp in list(tps) if tp in self.states}

    def remove_all_partitions(self) -> dict[TopicPartition, PartitionFetchState]:
        out, self.states = self.states, {}
        return out

    def partition_count(self) -> int:
        return len(self.states)

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        return self.states.get(tp)

    def shutdown(self) -> None:
        self.is_shutdown = True


def make_manager(n: int, events: list[Event] | None = None) -> tuple[FetcherManager, list[FakeFetcher]]:
    created: list[FakeFetcher] = []

    def factory(fid: int, source: BrokerEndPoint, failed: FailedPartitions) -> FakeFetcher:
        f = FakeFetcher(fid, source, failed)
        created.append(f)
        return f

    return FetcherManager(broker_id=0, num_fetchers_per_broker=n, create_fetcher=factory,
                          emit=None if events is None else events.append), created


def test_add_and_remove_partition() -> None:
    """AbstractFetcherManagerTest.testAddAndRemovePartition."""
    events: list[Event] = []
    mgr, created = make_manager(1, events)
    tp = TopicPartition("topic", 0)
    leader = BrokerEndPoint(1, "localhost", 9092)
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(leader, 0, 1)}, now_ms=5)
    assert mgr.get_fetcher(tp) is created[0]
    removed = mgr.remove_fetcher_for_partitions({tp}, now_ms=6)
    assert removed[tp].fetch_offset == 1
    assert mgr.get_fetcher(tp) is None
    mgr.shutdown_idle_fetcher_threads()
    assert created[0].is_shutdown and mgr.fetchers == {}
    assert [(e["action"], e["fetcher_id"], e["leader_id"], e["partitions"]) for e in events] == [
        ("added", 0, 1, [{"topic": "topic", "partition": 0, "fetch_offset": 1}]),
        ("removed", 0, 1, [{"topic": "topic", "partition": 0, "fetch_offset": 1}]),
    ]
    assert events[0]["topic"] is None and events[0]["ts_ms"] == 5


def test_metric_failed_partition_count() -> None:
    """AbstractFetcherManagerTest.testMetricFailedPartitionCount: re-adding or removing clears a failure."""
    mgr, _ = make_manager(1)
    tp = TopicPartition("topic", 0)
    leader = BrokerEndPoint(1)
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(leader, 0, 1)}, 0)
    mgr.failed_partitions.add(tp)
    assert mgr.failed_partitions_count() == 1
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(leader, 1, 1)}, 0)
    assert mgr.failed_partitions_count() == 0
    mgr.failed_partitions.add(tp)
    mgr.remove_fetcher_for_partitions({tp}, 0)
    assert mgr.failed_partitions_count() == 0


def test_partitions_grouped_by_leader_and_fetcher_id() -> None:
    mgr, created = make_manager(3)
    l1, l2 = BrokerEndPoint(1), BrokerEndPoint(2)
    tps = [TopicPartition("t", p) for p in range(6)]
    mgr.add_fetcher_for_partitions(
        {tp: InitialFetchState(l1 if tp.partition % 2 else l2, 0, 0) for tp in tps}, 0)
    for tp in tps:
        f = mgr.get_fetcher(tp)
        assert f is not None
        assert f.source_broker == (l1 if tp.partition % 2 else l2)
        assert f.fetcher_id == fetcher_id("t", tp.partition, 3)
    assert len(created) == len({(f.source_broker.id, f.fetcher_id) for f in created})


def test_fetcher_reused_when_endpoint_unchanged_and_replaced_when_changed() -> None:
    events: list[Event] = []
    mgr, created = make_manager(1, events)
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    mgr.add_fetcher_for_partitions({a: InitialFetchState(BrokerEndPoint(1, "h1", 9092), 0, 0)}, 0)
    mgr.add_fetcher_for_partitions({b: InitialFetchState(BrokerEndPoint(1, "h1", 9092), 0, 0)}, 0)
    assert len(created) == 1 and created[0].partition_count() == 2
    # Same broker id, new host: the old thread is shut down (with its partitions) and replaced.
    mgr.add_fetcher_for_partitions({b: InitialFetchState(BrokerEndPoint(1, "h2", 9092), 1, 0)}, 0)
    assert len(created) == 2 and created[0].is_shutdown
    assert mgr.get_fetcher(b) is created[1] and mgr.get_fetcher(a) is None
    assert [e["action"] for e in events] == ["added", "added", "removed", "added"]


def _resize_case(before: int, after: int) -> None:
    mgr, _ = make_manager(before)
    leaders = [BrokerEndPoint(i) for i in range(6)]
    initial = {}
    for t in range(10):
        for p in range(100):
            tp = TopicPartition(f"topic-{t}", p)
            initial[tp] = InitialFetchState(leaders[(t * 100 + p) % 6], current_leader_epoch=3, init_offset=p)
    mgr.add_fetcher_for_partitions(initial, 0)
    failed = TopicPartition("failed-topic", 0)
    mgr.failed_partitions.add(failed)
    mgr.resize_thread_pool(after, 0)
    assert mgr.num_fetchers_per_broker == after
    for tp, st in initial.items():
        f = mgr.get_fetcher(tp)
        assert f is not None
        assert f.source_broker == st.leader
        assert f.fetcher_id == fetcher_id(tp.topic, tp.partition, after)
        fs = f.fetch_state(tp)
        assert fs is not None and (fs.fetch_offset, fs.current_leader_epoch) == (tp.partition, 3)
    assert all(fid < after for _, fid in mgr.fetchers)
    assert mgr.failed_partitions.contains(failed)


def test_expand_thread_pool() -> None:
    """AbstractFetcherManagerTest.testExpandThreadPool (10 -> 50)."""
    _resize_case(10, 50)


def test_shrink_thread_pool() -> None:
    """AbstractFetcherManagerTest.testShrinkThreadPool (50 -> 10)."""
    _resize_case(50, 10)


def test_resize_to_same_size_only_drops_idle_fetchers() -> None:
    mgr, created = make_manager(2)
    tp = TopicPartition("t", 0)
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(BrokerEndPoint(1), 0, 0)}, 0)
    mgr.remove_fetcher_for_partitions({tp}, 0)
    mgr.resize_thread_pool(2, 0)
    assert mgr.fetchers == {} and created[0].is_shutdown
