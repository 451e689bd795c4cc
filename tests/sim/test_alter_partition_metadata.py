"""The controller publishes a committed AlterPartition as metadata (KRaft `PartitionChangeRecord`).

In KRaft the controller's answer to AlterPartition is not the only way the leader learns the new ISR:
the change is a record of the metadata log, which every broker replays (`BrokerMetadataPublisher` ->
`ReplicaManager.applyDelta` -> `Partition.makeLeader` / `makeFollower` with the new registration).
A leader whose answer is lost therefore leaves its pending state one metadata delivery later
(`makeLeader` with the same leader epoch and a newer partition epoch: `updateAssignmentAndIsr` sets
`CommittedPartitionState`), instead of staying pending (INVALID_UPDATE_VERSION on the retry, "awaiting
new the latest metadata") until some unrelated change reaches it.
"""

from __future__ import annotations

from typing import Any

from replication_core.partition import CommittedPartitionState
from replication_core.partition_fetch_state import TopicPartition
from tests.sim.helpers import check, run, scenario

START = 1_700_000_000_000


def _isr_changes(events: list[dict[str, Any]], since: int) -> list[tuple[Any, ...]]:
    return [(e["broker_id"], e["partition"], e["action"], e["isr_state"], e["reason"], e["isr"], e["partition_epoch"])
            for e in events[since:] if e["event_type"] == "isr_change"]


def test_leader_whose_alter_partition_answer_is_lost_commits_from_metadata() -> None:
    """slow-follower: broker 3's disk stalls from 10 s, so leader 1 of events-0 proposes to shrink it out at
    20 s. The controller -> broker 1 link is cut (one way: broker 1 still heartbeats and its request gets
    through), so the controller commits the shrink but its answer is lost, and the metadata delivery of
    the change waits (`controller_retry_ms`). Once the link is back, the next delivery carries the
    new registration and the leader commits the shrink from it (an `isr_change` update, reason
    `leader_and_isr`), long before its AlterPartition RPC times out (30 s). Before the controller
    published AlterPartition changes, the leader stayed pending here."""
    sc = scenario("slow-follower", duration_ms=16_000)
    cluster, events, stats = run(sc)
    tp = TopicPartition("events", 0)
    leader = cluster.brokers[1]
    assert leader.rm is not None
    p = leader.rm.partitions[tp]
    info = cluster.controller.partitions[tp]
    assert p.is_leader and not p.is_inflight and sorted(p.isr) == [1, 2, 3] and info.partition_epoch == 0

    ctrl = cluster.controller.node_id
    cluster.network.partition([ctrl], [1], two_way=False)
    seen: dict[str, int] = {}

    def step() -> None:
        now = cluster.queue.now_ms
        if "proposed" not in seen and p.is_inflight:
            seen["proposed"] = now
        if "committed" not in seen and info.partition_epoch == 1:
            seen["committed"] = now
            cluster.network.heal([ctrl], [1], two_way=False)  # the answer is already lost
        if "resolved" not in seen and "committed" in seen and not p.is_inflight:
            seen["resolved"] = now

    assert cluster.events is not None and len(cluster.events) == 0  # the run handed its events to the sink
    cluster.queue.run_until(START + 25_000, step, step_every=1)
    events = [*events, *cluster.events]
    assert "proposed" in seen and "committed" in seen and sorted(info.isr) == [1, 2]
    # One metadata delivery after the cut: the blocked delivery is retried after controller_retry_ms and
    # then takes one network latency (1-3 ms).
    assert "resolved" in seen
    assert seen["resolved"] - seen["committed"] <= sc.cluster.controller_retry_ms + 3
    assert isinstance(p.partition_state, CommittedPartitionState)
    assert sorted(p.isr) == [1, 2] and p.partition_epoch == info.partition_epoch == 1
    changes = [c for c in _isr_changes(events, 0) if c[:2] == (1, 0)]
    assert changes[:2] == [(1, 0, "shrink", "proposed", "follower_lagging", [1, 2], 0),
                           (1, 0, "update", "committed", "leader_and_isr", [1, 2], 1)]
    # The follower took the new partition epoch from the same record (makeFollower, no restart).
    follower = cluster.brokers[2].rm
    assert follower is not None and follower.partitions[tp].partition_epoch == 1
    assert check(events, stats).errors == ()


def test_metadata_equal_to_the_answer_changes_nothing_on_the_leader() -> None:
    """With the answer received first (constant 1 ms latency: answer and metadata leave the controller at
    the same instant, the answer first), the published registration carries the partition epoch the
    leader already has: nothing changes and no event is emitted. kip-101-hw-truncation's events are the
    same as before the controller published AlterPartition changes: one expansion, committed by its answer."""
    _, events, _ = run(scenario("kip-101-hw-truncation"))
    changes = [(c[2], c[3], c[4]) for c in _isr_changes(events, 0)]
    assert ("update", "committed", "leader_and_isr") not in changes
    assert changes == [("expand", "proposed", "follower_caught_up"), ("expand", "committed", "alter_partition")]
