"""A restarted broker acts on partition metadata only once its registration is through.

Found by a seeded fault campaign (3 brokers, leader-epoch mode): a follower in the ISR lost power, and with
it its unflushed log; it restarted within the session timeout, so the controller still held it as live
and in the ISR. Its registration was delayed, and meanwhile a controlled shutdown of the leader elected it
(first in the assignment, in the ISR). The new process acted on that metadata with an empty log and became
leader: both other replicas truncated to 0 and acknowledged acks=all writes were lost. In KRaft the
restarted process publishes no partition metadata before it has registered and caught up, and the
controller refuses its registration while the previous incarnation's session is valid
(DUPLICATE_BROKER_REGISTRATION); the session expires, the controller fences the previous incarnation (which
removes it from the ISR), and the leadership goes to a replica that has the data. (Before session 92 replog
accepted the registration at once and fenced the previous incarnation then, as `kraft_lifecycle: false` still
does.)
"""

from __future__ import annotations

import pytest

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.audit import audit
from tests.sim.helpers import check, run

# Broker 2 never flushes (flush interval beyond the run), loses power at 3 s and restarts at 3.3 s, well
# within the 9 s session timeout. Its link to the controller (1000) is cut from 3.29 s to 3.6 s, so its
# registration waits; the controlled shutdown of the leader, broker 1, comes at 3.4 s in between.
SCENARIO = """
name: restart-before-registration
description: a follower restarts with an empty log and is elected before its registration arrives
seed: 5
duration_ms: 20000
truncation_mode: {mode}
cluster:
  brokers: 3
  broker_session_timeout_ms: 9000
  kraft_lifecycle: {kraft}
broker_config:
  min.insync.replicas: 2
topics:
  - name: t
    replication_factor: 3
    assignment: [[1, 2, 3]]
network:
  latency_ms: {{dist: uniform, min: 1, max: 3}}
disk:
  flush_interval_ms: 600000
workload:
  producers:
    - {{topic: t, rate_per_s: 50, acks: all, keys: 10, retries: 20}}
faults:
  - {{at_ms: 3000, action: crash, broker: 2, mode: power}}
  - {{at_ms: 3290, action: partition, from: [2], to: [1000], two_way: false, duration_ms: 310}}
  - {{at_ms: 3300, action: restart, broker: 2}}
  - {{at_ms: 3400, action: controlled_shutdown, broker: 1, down_ms: 1000}}
"""


def _run(mode: str, kraft: bool) -> tuple[list[dict[str, object]], object]:
    _, events, stats = run(parse_scenario_text(SCENARIO.format(mode=mode, kraft=str(kraft).lower())))
    return events, stats


@pytest.mark.parametrize("kraft", [True, False])
@pytest.mark.parametrize("mode", ["diverging-epoch", "leader-epoch"])
def test_the_restarted_broker_is_fenced_before_it_leads_and_no_acknowledged_write_is_lost(mode: str,
                                                                                          kraft: bool) -> None:
    events, stats = _run(mode, kraft)
    elections = [e for e in events if e["event_type"] == "leader_election" and e["action"] != "offline"]
    # The shutdown elected broker 2 (its previous process was still registered and in the ISR) ...
    shutdown = next(e for e in elections if e["reason"] == "controlled_shutdown")
    assert shutdown["leader_id"] == 2 and 2 in shutdown["isr"], shutdown
    # ... then the controller fenced that process: leadership moved to broker 3, which has the data. KRaft waits for
    # its session to expire (9 s after the last heartbeat it sent, at about 2 s) and fences it at the next of its
    # checks, every 1,125 ms, refusing the new process's registrations meanwhile; without the handshake the
    # registration itself fenced it as it arrived (3.6 s).
    fenced = next(e for e in elections if e["ts_ms"] > shutdown["ts_ms"])
    assert fenced["leader_id"] == 3 and fenced["isr"] == [3], fenced
    start = min(int(e["ts_ms"]) for e in events)
    if kraft:
        assert fenced["reason"] == "session_timeout", fenced
        assert fenced["ts_ms"] - start == 11250, fenced
    else:
        assert fenced["reason"] == "broker_reregistered", fenced
        assert 3600 <= fenced["ts_ms"] - start < 3700, fenced
    # The new process of broker 2 never became leader in the epoch it was elected in before registering, and acted on
    # no partition metadata before the previous process was fenced.
    assert not any(e["event_type"] == "leadership_change" and e["broker_id"] == 2
                   and e["action"] == "become_leader" and e["leader_epoch"] == shutdown["leader_epoch"]
                   for e in events)
    restart = next(e["ts_ms"] for e in events if e["event_type"] == "broker_lifecycle" and e["action"] == "restart")
    assert all(e["ts_ms"] >= fenced["ts_ms"] for e in events if e["event_type"] == "leadership_change"
               and e["broker_id"] == 2 and e["ts_ms"] > restart)
    a = audit(events)
    assert a.acked
    assert a.lost_acked_writes() == [], a.lost_acked_writes()[:3]
    assert a.divergences() == []
    result = check(events, stats)
    assert result.violations == (), result.violations[:3]
