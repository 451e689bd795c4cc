"""FetcherManager: ports of Kafka's `AbstractFetcherManagerTest` plus grouping / endpoint-change rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from replication_core.config import ReplicationConfig
from replication_core.event_log import EventLog
from replication_core.fetcher import ReplicaFetcherThread, initial_fetch_offset
from replication_core.fetcher_manager import FetcherManager, replica_fetcher_factory
from replication_core.java_hash import fetcher_id
from replication_core.log import Log
from replication_core.partition_fetch_state import (
    BrokerEndPoint,
    FailedPartitions,
    InitialFetchState,
    PartitionFetchState,
    PartitionStates,
    ReplicaState,
    TopicPartition,
)
from replication_core.truncation import TruncationProtocol
from tests.core.mock_leader import MockLeaderEndPoint, mk_log, seed


class FakeFetcher:
    """Minimal stand-in for a fetcher thread: holds states, honours the failed set like Kafka's."""

    def __init__(self, fid: int, source: BrokerEndPoint, failed: FailedPartitions) -> None:
        self.fetcher_id = fid
        self.source_broker = source
        self.failed = failed
        self.partition_states = PartitionStates()
        self.is_shutdown = False

    def add_partitions(self, initial: Mapping[TopicPartition, InitialFetchState],
                       now_ms: int) -> set[TopicPartition]:
        """Add at the initial offsets, Fetching, clearing failures."""
        self.failed.remove_all(initial)
        for tp, st in initial.items():
            self.partition_states.update_and_move_to_end(
                tp, PartitionFetchState(st.init_offset, st.current_leader_epoch, ReplicaState.FETCHING))
        return set(initial)

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionFetchState]:
        """Remove and return the states held."""
        removed = {tp: self.partition_states.remove(tp) for tp in tps}
        return {tp: st for tp, st in removed.items() if st is not None}

    def remove_all_partitions(self) -> dict[TopicPartition, PartitionFetchState]:
        """Remove everything."""
        return self.remove_partitions(list(self.partition_states))

    def partition_count(self) -> int:
        """Number of partitions held."""
        return len(self.partition_states)

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        """State of `tp`, if held."""
        return self.partition_states.get(tp)

    def shutdown(self) -> None:
        """Mark stopped."""
        self.is_shutdown = True


def make_manager(n: int, events: EventLog | None = None) -> tuple[FetcherManager, list[FakeFetcher]]:
    """A manager over `FakeFetcher`s, plus the list of fetchers it created."""
    created: list[FakeFetcher] = []

    def factory(fid: int, source: BrokerEndPoint, failed: FailedPartitions) -> FakeFetcher:
        """Create and remember a `FakeFetcher`."""
        f = FakeFetcher(fid, source, failed)
        created.append(f)
        return f

    return FetcherManager(broker_id=0, num_fetchers_per_broker=n, create_fetcher=factory,
                          emit=None if events is None else events.append), created


def test_add_and_remove_partition() -> None:
    """AbstractFetcherManagerTest.testAddAndRemovePartition."""
    events = EventLog()
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
    """`addFetcherForPartitions` groups by (leader, `getFetcherId`)."""
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
    """Same endpoint: reuse the thread; same broker id, new endpoint: replace it."""
    events = EventLog()
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
    """`resizeThreadPool` to the same size only runs `shutdownIdleFetcherThreads`."""
    mgr, created = make_manager(2)
    tp = TopicPartition("t", 0)
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(BrokerEndPoint(1), 0, 0)}, 0)
    mgr.remove_fetcher_for_partitions({tp}, 0)
    mgr.resize_thread_pool(2, 0)
    assert mgr.fetchers == {} and created[0].is_shutdown


# --- with real ReplicaFetcherThreads ---------------------------------------------------------------


def _real_manager(protocol: TruncationProtocol, n: int, logs: dict[TopicPartition, Log],
                  events: EventLog) -> FetcherManager:
    config = ReplicationConfig(num_replica_fetchers=n)
    factory = replica_fetcher_factory(2, config, logs.__getitem__, protocol=protocol, events=events)
    return FetcherManager.from_config(2, config, factory, events.append)


def _work_all(mgr: FetcherManager, leaders: dict[int, MockLeaderEndPoint], now_ms: int = 0) -> None:
    for (leader_id, _), fetcher in mgr.fetchers.items():
        assert isinstance(fetcher, ReplicaFetcherThread)
        fetcher.do_work(now_ms, leaders[leader_id])


@pytest.mark.parametrize(("protocol", "extra_epoch_requests"),
                         [(TruncationProtocol.DIVERGING_EPOCH, 0), (TruncationProtocol.LEADER_EPOCH, 1)])
def test_resize_rehomes_real_fetch_states(protocol: TruncationProtocol, extra_epoch_requests: int) -> None:
    """`resizeThreadPool` with real fetchers: offsets and epochs move with the partitions.

    With truncate-on-fetch the re-added partition is Fetching at once (no re-truncation); with
    OffsetsForLeaderEpoch (IBP < 2.7) a fresh thread starts it Truncating, so one more epoch round
    runs, truncating nothing.
    """
    events = EventLog()
    logs: dict[TopicPartition, Log] = {}
    leaders = {1: MockLeaderEndPoint(), 3: MockLeaderEndPoint()}
    tps = [TopicPartition("t", p) for p in range(6)]
    initial = {}
    for tp in tps:
        leader_id = 1 if tp.partition % 2 else 3
        logs[tp] = mk_log(seed(0, 2, 4), hw=2, tp=tp)
        leaders[leader_id].set_leader(tp, seed(0, 5, 4), leader_epoch=4, hw=5)
        initial[tp] = InitialFetchState(BrokerEndPoint(leader_id), 4,
                                        initial_fetch_offset(logs[tp], protocol))
    mgr = _real_manager(protocol, 1, logs, events)
    mgr.add_fetcher_for_partitions(initial, 0)
    _work_all(mgr, leaders)
    before: dict[TopicPartition, int] = {}
    for tp in tps:
        holder = mgr.get_fetcher(tp)
        state = holder.fetch_state(tp) if holder is not None else None
        assert state is not None
        before[tp] = state.fetch_offset
    requests_before = sum(ldr.epoch_request_count for ldr in leaders.values())
    mgr.resize_thread_pool(3, 10)
    for tp in tps:
        fetcher = mgr.get_fetcher(tp)
        assert fetcher is not None and fetcher.fetcher_id == fetcher_id(tp.topic, tp.partition, 3)
        state = fetcher.fetch_state(tp)
        assert state is not None
        assert (state.fetch_offset, state.current_leader_epoch) == (before[tp], 4)
    _work_all(mgr, leaders, 10)
    after = sum(ldr.epoch_request_count for ldr in leaders.values())
    fetchers_per_leader = {lid for lid, _ in mgr.fetchers}
    assert after - requests_before == extra_epoch_requests * len(mgr.fetchers)
    assert fetchers_per_leader == {1, 3}
    assert all(logs[tp].log_end_offset == 4 for tp in tps)
    assert all(call == [] or set(call) <= {2, 3} for call in (logs[tp].truncate_calls for tp in tps))
    actions = [e["action"] for e in events if e["event_type"] == "fetcher_change"]
    assert actions.count("removed") >= 1 and actions.count("added") >= 3


def test_fenced_partition_is_failed_in_the_manager_until_re_added() -> None:
    """A FENCED_LEADER_EPOCH at the same epoch lands in the manager's failed set; a new epoch revives it."""
    events = EventLog()
    tp = TopicPartition("t", 0)
    logs: dict[TopicPartition, Log] = {tp: mk_log([], tp=tp)}
    leader = MockLeaderEndPoint()
    state = leader.set_leader(tp, seed(0, 3, 0), 0, 3)
    mgr = _real_manager(TruncationProtocol.DIVERGING_EPOCH, 1, logs, events)
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(BrokerEndPoint(1), 0, 0)}, 0)
    _work_all(mgr, {1: leader})
    assert mgr.max_lag() == 2  # one batch per fetch: 1 of 3 replicated, leader HW 3
    state.become_leader(1)
    _work_all(mgr, {1: leader})
    assert mgr.failed_partitions_count() == 1 and mgr.get_fetcher(tp) is None
    mgr.shutdown_idle_fetcher_threads()
    assert mgr.fetchers == {}
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(BrokerEndPoint(1), 1, 1)}, 5)
    assert mgr.failed_partitions_count() == 0
    for _ in range(3):
        _work_all(mgr, {1: leader}, 5)
    assert logs[tp].log_end_offset == 3 and mgr.max_lag() == 0


def test_consumer_lag_removed_with_partition() -> None:
    """AbstractFetcherThreadTest.testConsumerLagRemovedWithPartition: the lag goes with the partition."""
    events = EventLog()
    tp = TopicPartition("topic", 0)
    logs: dict[TopicPartition, Log] = {tp: mk_log([], tp=tp)}
    leader = MockLeaderEndPoint()
    leader.set_leader(tp, seed(0, 5, 0), 0, 5)
    mgr = _real_manager(TruncationProtocol.DIVERGING_EPOCH, 1, logs, events)
    mgr.add_fetcher_for_partitions({tp: InitialFetchState(BrokerEndPoint(1), 0, 0)}, 0)
    _work_all(mgr, {1: leader})
    assert mgr.max_lag() == 4
    mgr.remove_fetcher_for_partitions({tp}, 1)
    assert mgr.max_lag() == 0
