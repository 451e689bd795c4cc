"""Engine fixes the simulator needed (each the smallest change, tested here)."""

from __future__ import annotations

from replication_core.config import ReplicationConfig
from replication_core.fetcher_manager import FetcherManager, replica_fetcher_factory
from replication_core.log import Log
from replication_core.partition_fetch_state import BrokerEndPoint, InitialFetchState, TopicPartition


def test_remove_fetcher_for_partitions_keeps_the_callers_order() -> None:
    """`removeFetcherForPartitions` emits the removed partitions in the order it was given them, not in
    a set's hash order (which varies with PYTHONHASHSEED and broke byte-identical reruns)."""
    events: list[dict[str, object]] = []
    logs = {tp: Log(tp.topic, tp.partition, 2) for tp in
            (TopicPartition("orders", 0), TopicPartition("clicks", 1), TopicPartition("zebra", 7))}
    cfg = ReplicationConfig()
    fm = FetcherManager.from_config(2, cfg, replica_fetcher_factory(2, cfg, logs.__getitem__), events.append)
    leader = BrokerEndPoint(1)
    fm.add_fetcher_for_partitions({tp: InitialFetchState(leader, 0, 0) for tp in logs}, 0)
    for order in (list(logs), list(reversed(logs))):
        fm.add_fetcher_for_partitions({tp: InitialFetchState(leader, 0, 0) for tp in logs}, 0)
        events.clear()
        fm.remove_fetcher_for_partitions(order, 1)
        (removed,) = [e for e in events if e["action"] == "removed"]
        assert [(p["topic"], p["partition"]) for p in removed["partitions"]] == [tuple(tp) for tp in order]  # type: ignore[union-attr]
