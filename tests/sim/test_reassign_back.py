"""A replica moved away by a reassignment and later moved back starts from a new, empty log.

Found by a seeded campaign with reassignments: completing the first reassignment deletes broker 1's replica
(StopReplica with delete, which emits no event); the second adds broker 1 back, and its become_follower
reports LEO 0 under the 40-odd records the replay still held. The checker (and the Spark audit) warned
`event_stream_consistent` ("a LEO below the replayed log without a crash"). The leadership_change lists the
broker among `adding_replicas`, which tells the replays the log is new.
"""

from __future__ import annotations

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.audit import audit
from tests.sim.helpers import check, run

BODY = """
seed: 8
cluster:
  brokers: 4
broker_config:
  min.insync.replicas: 2
topics:
  - name: t
    replication_factor: 3
    assignment: [[{assignment}]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
workload:
  producers:
    - {{topic: t, rate_per_s: 40, acks: all, keys: 10}}
"""
"""Four brokers, partition t-0 on three of them (`assignment`, e.g. "1, 2, 3"), acks=all writes: the scenarios of
the reassignment tests add their name, duration and faults."""

SCENARIO = """
name: reassign-away-and-back
description: partition 0 moves from brokers 1-3 to 2-4, then back to 1-3
duration_ms: 12000
faults:
  - {at_ms: 3000, action: reassign, topic: t, partition: 0, replicas: [2, 3, 4]}
  - {at_ms: 6000, action: reassign, topic: t, partition: 0, replicas: [1, 2, 3]}
""" + BODY.format(assignment="1, 2, 3")


def test_a_replica_moved_away_and_back_replays_from_its_new_log() -> None:
    _, events, stats = run(parse_scenario_text(SCENARIO))
    elections = [e for e in events if e["event_type"] == "leader_election" and e["reason"] == "reassignment"]
    assert any(e["replicas"] == [2, 3, 4] for e in elections), elections  # broker 1 was removed ...
    back = next(i for i, e in enumerate(events) if e["event_type"] == "leadership_change" and e["broker_id"] == 1
                and 1 in (e.get("adding_replicas") or []))
    assert events[back]["leo"] == 0, events[back]  # ... and came back with an empty log,
    held = [e["leo"] for e in events[:back] if e["event_type"] == "append" and e["broker_id"] == 1]
    assert held and max(held) > 0  # while the replay still held the deleted replica's records
    a = audit(events)
    assert a.inconsistencies == [] and a.lost_acked_writes() == [] and a.divergences() == [], a.inconsistencies[:3]
    result = check(events, stats)
    assert result.violations == (), result.violations[:3]
