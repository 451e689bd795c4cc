"""A controlled shutdown asked of a restarted broker before its registration is through is a plain stop.

Found by a wide fault campaign (`python -m tests.sim.campaign --seeds 70679-70679 --wide`, 5 brokers): a
broker crashed, restarted, and a controlled shutdown came 2 ms later. The simulator handed it to the
controller at once, which took the broker out of the ISRs as shutting down; the new process's registration
then arrived and cleared that state (a new process is a fresh start), so the leader expanded the ISR with a
broker that was shutting down and the controller committed it (`isr_expand_legal`). In Kafka the request
for a controlled shutdown is a heartbeat flag of a registered, RUNNING broker:
`BrokerLifecycleManager.beginControlledShutdown` in any other state logs "Skipping controlled shutdown" and
shuts down without it, and the controller fences the registered process when its session expires.
"""

from __future__ import annotations

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.audit import audit
from tests.sim.helpers import check, run

# Broker 2 crashes at 3 s and restarts at 3.1 s, well within the session timeout; the controlled shutdown
# comes 1 ms after the restart, while its registration (1-3 ms of latency) is still on the way. Before the
# fix this run had the controller commit [1, 2, 3] at 3.113 s and the checker report isr_expand_legal.
SCENARIO = """
name: shutdown-before-registration
description: a controlled shutdown of a restarted broker that has not registered yet
seed: 3
duration_ms: 8000
cluster:
  brokers: 3
  broker_session_timeout_ms: 9000
broker_config:
  min.insync.replicas: 2
topics:
  - name: t
    replication_factor: 3
    assignment: [[1, 2, 3]]
network:
  latency_ms: {dist: uniform, min: 1, max: 3}
workload:
  producers:
    - {topic: t, rate_per_s: 50, acks: all, keys: 10, retries: 20}
faults:
  - {at_ms: 3000, action: crash, broker: 2}
  - {at_ms: 3100, action: restart, broker: 2}
  - {at_ms: 3101, action: controlled_shutdown, broker: 2, down_ms: 500}
"""


def test_a_shutdown_before_registration_skips_the_controlled_part() -> None:
    _, events, stats = run(parse_scenario_text(SCENARIO))
    t0 = events[0]["ts_ms"]
    life = [(e["ts_ms"] - t0, e["action"]) for e in events
            if e["event_type"] == "broker_lifecycle" and e["broker_id"] == 2]
    # No controlled shutdown: the restarted process stops at once and starts again 500 ms later.
    assert life == [(0, "start"), (3000, "crash"), (3100, "restart"), (3101, "shutdown"), (3601, "restart")], life
    # Broker 2 is never added back to the ISR by a process that was asked to shut down.
    expansions = [e for e in events if e["event_type"] == "isr_change" and e["action"] == "expand"
                  and 3000 <= e["ts_ms"] - t0 < 3601]
    assert expansions == [], expansions[:2]
    a = audit(events)
    assert a.acked
    assert a.lost_acked_writes() == [] and a.divergences() == [] and a.inconsistencies == []
    result = check(events, stats)
    assert result.violations == (), result.violations[:3]
