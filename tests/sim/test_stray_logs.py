"""A KRaft broker deletes, at its first metadata publish after a restart, the logs the image no longer assigns to it.

Partition 0 is reassigned from brokers 1-3 to 2-4 while broker 1 is down, so the StopReplica that would delete
broker 1's replica never reaches a live process: the log stays on its disk. Kafka's KRaft broker finds such stray
logs when it first publishes the metadata image (`BrokerMetadataPublisher.finishInitializingReplicaManager` ->
`findStrayPartitions` -> `ReplicaManager.deleteStrayReplicas`) and deletes them. Reassigned back later, broker 1
then starts from a new, empty log. The ZooKeeper-era mode (`fence_on_reregistration: false`) keeps the stray log,
and the replica moved back reuses it.

Broker 1 restarts at 12 s, once the controller has fenced its crashed process (its session expires 9 s after its
last heartbeat, at about 11 s): a KRaft controller refuses a restarted broker's registration while the previous
process's session is valid, so an earlier restart would wait for it, with a backoff that could reach past the move
back. Registered at once, broker 1 publishes the image that no longer assigns it partition 0 before the move back.
"""

from __future__ import annotations

from dataclasses import replace

from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.scenario import Scenario, parse_scenario_text
from tests.sim.audit import audit
from tests.sim.helpers import check, run
from tests.sim.test_reassign_back import BODY

SCENARIO = """
name: reassign-away-while-down
description: follower 1 is down while partition 0 moves from 2-1-3 to 2-3-4, restarts, then it moves back
duration_ms: 19000
faults:
  - {at_ms: 2500, action: crash, broker: 1, mode: process}
  - {at_ms: 3000, action: reassign, topic: t, partition: 0, replicas: [2, 3, 4]}
  - {at_ms: 12000, action: restart, broker: 1}
  - {at_ms: 14000, action: reassign, topic: t, partition: 0, replicas: [2, 1, 3]}
""" + BODY.format(assignment="2, 1, 3")

T0 = TopicPartition("t", 0)


def _run(sc: Scenario) -> tuple[int, bool, list[dict]]:
    """(broker 1's LEO when the partition moves back to it, whether its log survived the restart, the events)."""
    # Stop just after the restart to look at broker 1's disk, then run the whole scenario.
    early, _, _ = run(replace(sc, duration_ms=13000))
    kept = T0 in early.brokers[1].disk.logs
    _, events, stats = run(sc)
    t0 = events[0]["ts_ms"]  # the scenario's clock starts at this epoch time
    removed = [e for e in events if e["event_type"] == "leadership_change" and e["broker_id"] == 2
               and e["replicas"] == [2, 3, 4]]
    assert removed and removed[0]["ts_ms"] - t0 < 12000, removed  # the reassignment completed while broker 1 was down
    back = next(e for e in events if e["event_type"] == "leadership_change" and e["broker_id"] == 1
                and e["ts_ms"] - t0 >= 14000)
    a = audit(events)
    assert a.inconsistencies == [] and a.lost_acked_writes() == [] and a.divergences() == [], a.inconsistencies[:3]
    result = check(events, stats)
    assert result.violations == (), result.violations[:3]
    return back["leo"], kept, events


def test_a_restarted_kraft_broker_deletes_the_log_of_a_replica_removed_while_it_was_down() -> None:
    sc = parse_scenario_text(SCENARIO)
    leo, kept, events = _run(sc)
    t0 = events[0]["ts_ms"]
    held = [e["leo"] for e in events if e["event_type"] == "append" and e["broker_id"] == 1 and e["ts_ms"] - t0 < 2500]
    assert held and max(held) > 0  # broker 1 had records before the crash ...
    assert not kept  # ... its stray log is gone once it has published its first metadata ...
    assert leo == 0  # ... and the replica moved back starts from an empty log


def test_the_zookeeper_era_mode_keeps_the_stray_log_and_reuses_it() -> None:
    sc = parse_scenario_text(SCENARIO)
    zk = replace(sc, cluster=replace(sc.cluster, fence_on_reregistration=False))
    leo, kept, _ = _run(zk)
    assert kept
    assert leo > 0
