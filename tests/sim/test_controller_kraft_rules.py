"""Two rules of KRaft's controller that decide who leads: a controlled shutdown takes leadership away at once, and
a reassignment orders the replicas it merges as `PartitionReassignmentReplicas` does."""

from __future__ import annotations

import pytest

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import check, run

SOLE_ISR_LEADER = """
name: controlled-shutdown-of-a-sole-isr-leader
seed: 13
duration_ms: 30000
truncation_mode: diverging-epoch
cluster:
  brokers: 2
  broker_session_timeout_ms: 6000
broker_config:
  replica.lag.time.max.ms: 10000
  min.insync.replicas: 1
topics:
  - name: risky
    replication_factor: 2
    assignment: [[1, 2]]
    config:
      unclean.leader.election.enable: {unclean}
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: risky, rate_per_s: 200, acks: all, keys: 1, retries: 2, request_timeout_ms: 5000}}
faults:
  # Follower 2's disk stalls: the leader shrinks it out at about 15 s and leads alone.
  - {{at_ms: 5000, action: disk_stall, broker: 2, duration_ms: 20000}}
  - {{at_ms: 20000, action: controlled_shutdown, broker: 1, down_ms: 60000}}
"""


@pytest.mark.parametrize(("unclean", "action", "leader", "isr"), [
    ("false", "offline", None, [1]),
    ("true", "unclean", 2, [2]),
])
def test_a_controlled_shutdown_takes_leadership_from_a_sole_isr_leader_at_once(
        unclean: str, action: str, leader: int | None, isr: list[int]) -> None:
    """`ReplicationControlManager.handleBrokerInControlledShutdown` → `generateLeaderAndIsrUpdates(brokerToRemove)`:
    the broker may no longer lead, so a partition it leads alone goes offline when the request arrives (its ISR kept,
    the last member), or to an unclean election where the topic allows one; the leader stops acknowledging writes as
    soon as that metadata reaches it, not when its shutdown ends about 2 s later (granted at the heartbeat after the
    one 50 ms after the first answer, once broker 2 has reported the change in its heartbeat every 2 s)."""
    _, events, stats = run(parse_scenario_text(SOLE_ISR_LEADER.format(unclean=unclean)))
    shutdown = next(e for e in events if e["event_type"] == "broker_lifecycle" and e["action"] == "controlled_shutdown")
    stopped = next(e for e in events if e["event_type"] == "broker_lifecycle" and e["action"] == "shutdown")
    elections = [e for e in events if e["event_type"] == "leader_election" and e["ts_ms"] >= shutdown["ts_ms"]]
    assert [(e["ts_ms"] - shutdown["ts_ms"], e["action"], e.get("leader_id"), e["isr"], e["reason"])
            for e in elections][:1] == [(0, action, leader, isr, "controlled_shutdown")]
    assert 2050 < stopped["ts_ms"] - shutdown["ts_ms"] <= 2050 + 3 + 3 + 3
    # The metadata reaches broker 1 within the network's 3 ms: no acks=all write is acknowledged after that.
    late = [e for e in events if e["event_type"] == "produce_ack" and e["broker_id"] == 1 and e["error"] == "NONE"
            and e["ts_ms"] > shutdown["ts_ms"] + 3]
    assert late == []
    lost = [v for v in check(events, stats).violations if v.invariant == "acked_write_lost"]
    assert all(v.ts_ms <= shutdown["ts_ms"] + 3 for v in lost)
    assert (lost != []) == (action == "unclean")  # only the unclean election loses what 1 alone held


REASSIGN = """
name: reassignment-merged-order
seed: 5
duration_ms: 20000
truncation_mode: diverging-epoch
cluster:
  brokers: 4
  broker_session_timeout_ms: 6000
broker_config:
  min.insync.replicas: 1
topics:
  - name: t
    replication_factor: 3
    assignment: [[4, 3, 1]]
network:
  latency_ms: {dist: uniform, min: 1, max: 3}
workload:
  producers:
    - {topic: t, rate_per_s: 50, acks: all, keys: 1, retries: 5}
faults:
  # Throttled to a trickle, so the move is still in progress when its leader loses power.
  - {at_ms: 5000, action: reassign, topic: t, partition: 0, replicas: [2], throttle_rate: 10}
  - {at_ms: 8000, action: crash, broker: 4, mode: power}
"""


def test_a_reassignment_merges_the_removing_replicas_in_ascending_order() -> None:
    """`PartitionReassignmentReplicas`: removing = current - target and adding = target - current, each a TreeSet
    (ascending); the assignment during the move is the target followed by the removing replicas. An election while
    it is in progress tries them in that order: with [4, 3, 1] moving to [2], leader 4's failure elects 1, the first
    of [2, 1, 3, 4] in the ISR (2 has not caught up), not 3, the first in the assignment's old order."""
    _, events, _ = run(parse_scenario_text(REASSIGN))
    # The leader's view of the change that started the move (the metadata it applied).
    start = next(e for e in events if e["event_type"] == "isr_change" and e.get("adding_replicas"))
    assert (start["broker_id"], start["replicas"], start["adding_replicas"], start["removing_replicas"]) == (
        4, [2, 1, 3, 4], [2], [1, 3, 4])
    crash = next(e for e in events if e["event_type"] == "broker_lifecycle" and e["action"] == "crash")
    election = next(e for e in events if e["event_type"] == "leader_election" and e["ts_ms"] > crash["ts_ms"])
    assert (election["action"], election["leader_id"], election["replicas"]) == ("clean", 1, [2, 1, 3, 4])
