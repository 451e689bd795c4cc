"""A reassignment that adds no replica completes when the ISR already holds its target: at once.

Kafka's controller completes a reassignment in the change that starts it when there is nothing to catch up: KRaft's
`changePartitionReassignment` builds one `PartitionChangeRecord` whose builder completes the reassignment when the
ISR, less the removed replicas, holds every target replica (`PartitionReassignmentReplicas.maybeCompleteReassignment`);
ZooKeeper's `onPartitionReassignment` goes straight to its phase B. The engine used to wait for the next
AlterPartition, so lowering a partition's replication factor in a quiet cluster never finished, and a new order of
the same replicas was ignored. Also here: completing a reassignment of a partition without a leader, when no target
replica may lead, still commits the new assignment and bumps the epochs. Epochs follow KRaft's
`PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded`: a step bumps the leader epoch only when it removes a replica
or changes the leader.
"""

from __future__ import annotations

from typing import Any

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import check, run

BODY = """
name: {name}
seed: 8
duration_ms: {duration}
cluster: {{brokers: {brokers}}}
broker_config: {{replica.lag.time.max.ms: 1000}}
topics:
  - {{name: t, replication_factor: 3, assignment: [[1, 2, 3]]}}
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 40, acks: all, keys: 10, batch_per_request: true}}
faults:
"""
"""`brokers` brokers, t-0 on 1, 2, 3 led by broker 1, acks=all writes, followers out of the ISR after 1 s behind;
each test adds its name, duration and faults (also `tests/sim/test_reassign_completion.py`). The producer sends each
batch as its own request, as before session 95 (`batch_per_request`): the tests' times were read from those runs."""


def _run(name: str, duration: int, faults: str) -> tuple[int, list[dict[str, Any]]]:
    """Run the scenario; its start time and events, after asserting the checker finds nothing."""
    sc = parse_scenario_text(BODY.format(name=name, duration=duration, brokers=3) + faults)
    _, events, stats = run(sc)
    assert check(events, stats).violations == ()
    return sc.start_ms, events


def _changes(start: int, events: list[dict[str, Any]]) -> list[tuple[int, int, str, int, list[int], list[int]]]:
    """(virtual ms, broker, action, leader epoch, replicas, removing replicas) of every leadership change."""
    return [(e["ts_ms"] - start, e["broker_id"], e["action"], e["leader_epoch"], e["replicas"],
             e.get("removing_replicas") or []) for e in events if e["event_type"] == "leadership_change"]


def _updates(start: int, events: list[dict[str, Any]]) -> list[tuple[int, int, int, int, list[int], list[int]]]:
    """(virtual ms, broker, leader epoch, partition epoch, replicas, removing replicas) of every registration a
    sitting leader applied in its epoch (`isr_change` update, `leader_and_isr`)."""
    return [(e["ts_ms"] - start, e["broker_id"], e["leader_epoch"], e["partition_epoch"], e["replicas"],
             e.get("removing_replicas") or []) for e in events
            if e["event_type"] == "isr_change" and e["reason"] == "leader_and_isr"]


def test_a_lower_replication_factor_takes_effect_at_once() -> None:
    start, events = _run("rf-down", 6000, """
  - {at_ms: 3000, action: reassign, topic: t, partition: 0, replicas: [2, 1]}
""")
    assert _changes(start, events)[3:] == [  # after the three of topic creation
        (3002, 1, "become_leader", 1, [2, 1], []), (3002, 2, "become_follower", 1, [2, 1], [])]
    stopped = next(i for i, e in enumerate(events) if e["event_type"] == "fetcher_change" and e["broker_id"] == 3
                   and e["action"] == "removed")
    assert events[stopped]["ts_ms"] - start == 3001  # broker 3 got its StopReplica with the same change
    assert not any(e["event_type"] == "fetch" and e["broker_id"] == 3 for e in events[stopped:])
    assert not any(e["event_type"] == "leader_election" and e["reason"] == "reassignment" for e in events)


def test_a_new_order_of_the_same_replicas_takes_effect_at_once() -> None:
    start, events = _run("reorder", 6000, """
  - {at_ms: 3000, action: reassign, topic: t, partition: 0, replicas: [3, 1, 2]}
""")
    # No replica leaves, so the leader epoch stays (KRaft): the leader applies the new order in its epoch, and the
    # followers, whose leader and epoch did not change, go on fetching.
    assert _changes(start, events)[3:] == []
    assert _updates(start, events) == [(3002, 1, 0, 1, [3, 1, 2], [])]


def test_a_removal_waits_for_a_target_replica_out_of_the_isr() -> None:
    """Broker 3 pauses from 2 s to 6 s and leaves the ISR at 3 s; the move to [1, 3] at 4.5 s first widens the
    assignment (removing 2; the leader epoch stays) and completes only once broker 3 is back in the ISR: the
    AlterPartition that adds it completes the move in the same change, in a new leader epoch that fences broker 2, so
    [1, 2, 3] is never committed."""
    start, events = _run("removal-waits", 12000, """
  - {at_ms: 2000, action: pause, broker: 3, duration_ms: 4000}
  - {at_ms: 4500, action: reassign, topic: t, partition: 0, replicas: [1, 3]}
""")
    back = [(e["ts_ms"] - start, e["isr_state"]) for e in events if e["event_type"] == "isr_change"
            and e["isr"] == [1, 2, 3]]
    assert back == [(6004, "proposed")]
    assert _updates(start, events) == [(4502, 1, 0, 2, [1, 3, 2], [2])]
    assert _changes(start, events)[3:] == [(6007, 1, "become_leader", 1, [1, 3], []),
                                           (6007, 3, "become_follower", 1, [1, 3], [])]


def test_completing_a_move_of_a_partition_without_a_leader_bumps_its_epochs() -> None:
    """Brokers 2 and 3 stop at 2 s and leave the ISR; broker 1 stops at 15 s and the partition is offline with ISR
    [1] (epoch 1). The move to [1] at 30 s completes at once with no replica able to lead, yet it is a committed
    change (leader epoch 2, partition epoch 3): broker 1, back at 35 s, is elected in epoch 3 over replicas [1] when
    its first heartbeat after registering unfences it. Broker 1's session expires 9 s after its last heartbeat
    reached the controller (14.001 s); the controller looks every 1,125 ms, and again 10 ms after a look that fenced
    someone, so fencing brokers 2 and 3 one look apart moved its looks 20 ms: the offline election is at
    23.645 s."""
    start, events = _run("leaderless", 45000, """
  - {at_ms: 2000, action: crash, broker: 2, mode: process}
  - {at_ms: 2000, action: crash, broker: 3, mode: process}
  - {at_ms: 15000, action: crash, broker: 1, mode: process}
  - {at_ms: 30000, action: reassign, topic: t, partition: 0, replicas: [1]}
  - {at_ms: 35000, action: restart, broker: 1}
""")
    elections = [(e["ts_ms"] - start, e["action"], e["leader_epoch"], e["partition_epoch"], e["isr"], e["replicas"])
                 for e in events if e["event_type"] == "leader_election"]
    assert elections[1:] == [(23645, "offline", 1, 2, [1], [1, 2, 3]), (35005, "clean", 3, 4, [1], [1])]
