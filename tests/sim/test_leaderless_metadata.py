"""A partition left without a leader is published to its replicas (controller `_mark`).

Kafka tells every replica it can reach that a partition has no leader: KRaft's `PartitionChangeRecord` with
leader -1, which `ReplicaManager.applyLocalFollowersDelta` applies as a follower of nobody (no fetcher:
"Unable to start fetching ... because it is not alive"); ZooKeeper's `removeReplicasFromIsr` sends the
replicas a LeaderAndIsr with `NoLeader`. The last leader, fenced but still reachable, stops acting as one at
once. These runs fail on a controller that keeps such changes to itself: there broker 1 goes on leading the
partition it lost and broker 2 goes on fetching from it.
"""

from __future__ import annotations

from typing import Any

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import check, run

HEADER = """
name: leaderless-{name}
seed: 7
duration_ms: {duration}
truncation_mode: diverging-epoch
cluster: {{brokers: 2, broker_session_timeout_ms: 6000, eligible_leader_replicas: {elr}}}
broker_config: {{replica.lag.time.max.ms: 6000, replica.socket.timeout.ms: 3000, min.insync.replicas: {min_isr}}}
topics:
  - {{name: t, replication_factor: 2, assignment: [[1, 2]]}}
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 20, acks: 1, keys: 1, retries: 2, request_timeout_ms: 5000}}
faults:
  - {{at_ms: 5000, action: partition, from: [2], to: [1], two_way: true}}
"""

# Broker 1 leads alone from 12 s (broker 2 is cut off from it). At 20 s its heartbeats stop reaching the
# controller (id 1000), which still reaches broker 1: at 25.5 s it is fenced and, as the only ISR member, leaves
# the partition without a leader. Broker 2 can reach broker 1 again from 30 s; broker 1's heartbeats get
# through from 40 s, and the controller elects it again (clean: it is still the ISR).
FENCED_LEADER = HEADER.format(name="fenced-leader", duration=50000, elr="false", min_isr=1) + """
  - {at_ms: 20000, action: partition, from: [1], to: [1000], two_way: false}
  - {at_ms: 30000, action: heal, from: [2], to: [1]}
  - {at_ms: 40000, action: heal}
"""

# Eligible leader replicas, min ISR 2: broker 1 leads alone from 12 s (broker 2 in the ELR), broker 2's process
# crashes at 15 s, and broker 1 asks for a controlled shutdown at 25 s. Leaving the ISR empties it, and no
# eligible replica is up: no leader until broker 1, back from its clean shutdown, is elected from the ELR.
SHUTDOWN_WITH_ELR = HEADER.format(name="elr-shutdown", duration=40000, elr="true", min_isr=2) + """
  - {at_ms: 15000, action: crash, broker: 2, mode: process}
  - {at_ms: 25000, action: controlled_shutdown, broker: 1}
"""


def _of(events: list[dict[str, Any]], event_type: str, **fields: Any) -> list[int]:
    return [i for i, e in enumerate(events)
            if e["event_type"] == event_type and all(e.get(k) == v for k, v in fields.items())]


def test_a_fenced_leader_that_still_gets_metadata_stops_leading_when_its_partition_has_no_leader() -> None:
    _, events, stats = run(parse_scenario_text(FENCED_LEADER))
    elections = _of(events, "leader_election")
    offline = _of(events, "leader_election", action="offline")
    assert len(offline) == 1
    off = events[offline[0]]
    assert (off["reason"], off["isr"], off["leader_epoch"]) == ("session_timeout", [1], 1)
    back = next(i for i in elections if i > offline[0])
    again = events[back]
    assert (again["action"], again["leader_id"], again["reason"]) == ("clean", 1, "broker_unfenced")

    # Both replicas follow nobody in the offline election's epoch, the fenced leader included.
    stepped_down = [(events[i]["broker_id"], events[i]["leader_epoch"])
                    for i in _of(events, "leadership_change", action="become_follower", leader_id=-1)]
    assert sorted(stepped_down) == [(1, 1), (2, 1)]
    first = min(_of(events, "leadership_change", action="become_follower", leader_id=-1))
    assert offline[0] < first < back

    # Until the next election nobody acts for the partition: broker 1 appends nothing as leader and proposes no
    # ISR change (it would have taken broker 2 back once they could talk again, at 30 s), broker 2 fetches nothing.
    between = events[first:back]
    assert not [e for e in between if e["event_type"] == "append" and e.get("role") == "leader"]
    assert not [e for e in between if e["event_type"] == "isr_change"]
    assert not [e for e in between if e["event_type"] == "fetch" and e["broker_id"] == 2]
    # Broker 2 fetches again once broker 1 leads again, and the run is clean.
    assert [i for i in _of(events, "fetch") if i > back and events[i]["broker_id"] == 2]
    assert not check(events, stats).violations


def test_a_controlled_shutdown_that_empties_the_isr_stops_the_leader_before_the_broker_stops() -> None:
    _, events, stats = run(parse_scenario_text(SHUTDOWN_WITH_ELR))
    shutdown = _of(events, "broker_lifecycle", broker_id=1, action="shutdown")
    offline = _of(events, "leader_election", action="offline")
    assert len(shutdown) == 1 and len(offline) == 1
    off = events[offline[0]]
    assert (off["reason"], off["isr"], off["elr"]) == ("controlled_shutdown", [], [1, 2])
    # Broker 1 follows nobody as soon as the controller's change reaches it, not when its process stops
    # (the controlled shutdown's grace, 200 ms later).
    stepped_down = _of(events, "leadership_change", broker_id=1, action="become_follower", leader_id=-1)
    assert offline[0] < stepped_down[0] < shutdown[0]
    assert events[stepped_down[0]]["ts_ms"] < events[shutdown[0]]["ts_ms"]
    # Back from a clean shutdown, broker 1 is elected from the ELR. Its new process registers fenced and follows
    # nobody from its first metadata publish until the heartbeat that unfences it elects it: the only other time.
    elr = _of(events, "leader_election", action="elr")
    assert len(elr) == 1 and events[elr[0]]["leader_id"] == 1 and elr[0] > shutdown[0]
    assert len(stepped_down) == 2 and shutdown[0] < stepped_down[1] < elr[0]
    assert [v for v in check(events, stats).violations if v.severity == "error"] == []
