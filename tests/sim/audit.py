"""A small event-log audit for the simulator tests: rebuild every replica's log from events alone and
check the two safety properties the scenarios are about (reference §11 invariants 3 and 4).

* lost acknowledged writes: an acks=all `produce_ack` with error NONE whose batch (checksum) is not
  at its acknowledged offset in the final leader's log;
* divergence: two replicas of a partition's final assignment holding different batches at the same offset
  below both of their high watermarks (a replica a reassignment removed had its log deleted, which no event
  shows).

This is the tests' own direct reading of the events (the reference checker lives in
`replication_core/checker/`); it also lets a test compare the rebuilt logs with the engine's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

Batch = tuple[int, int, int, int]
"""(base_offset, last_offset, batch_leader_epoch, batch_checksum)."""
Replica = tuple[int, str, int]
"""(broker_id, topic, partition)."""


@dataclass
class Audit:
    """What the events say happened."""

    logs: dict[Replica, list[Batch]] = field(default_factory=dict)
    hw: dict[Replica, int] = field(default_factory=dict)
    log_start: dict[Replica, int] = field(default_factory=dict)
    below_start: dict[Replica, list[Batch]] = field(default_factory=dict)
    """Batches a raised log start hides without deleting them (a follower takes its leader's start; its own next
    retention pass deletes them): a restart that loads an earlier start from the checkpoint makes them readable
    again (`log_load`), as the reference checker's `ReplicaState.below_start` does."""
    leo: dict[Replica, int] = field(default_factory=dict)
    """The log end offset, which a truncation inside a batch sets above the last batch (Kafka's truncateTo)."""
    acked: list[dict[str, Any]] = field(default_factory=list)
    leaders: dict[tuple[str, int], int | None] = field(default_factory=dict)
    assigned: dict[tuple[str, int], tuple[int, frozenset[int]]] = field(default_factory=dict)
    """(topic, partition) -> (partition epoch, replicas less those a reassignment is removing) of the newest
    assignment a leader_election, leadership_change or committed isr_change stated."""

    def _assign(self, ev: dict[str, Any]) -> None:
        if not ev.get("replicas") or ev.get("partition_epoch") is None:
            return
        key = (ev["topic"], ev["partition"])
        target = frozenset(ev["replicas"]) - set(ev.get("removing_replicas") or ())
        if key not in self.assigned or ev["partition_epoch"] >= self.assigned[key][0]:
            self.assigned[key] = (ev["partition_epoch"], target)

    def _skips_leader_gap(self, ev: dict[str, Any], leo: int) -> bool:
        """Whether a follower append above its LEO copies the leader's next batch over a gap of the leader's log:
        a truncation inside a batch leaves one below the LEO (Kafka's `truncateTo`), the leader's read from
        the follower's fetch offset returns its first batch after it, and a follower append is only refused
        below the LEO (`UnifiedLog.append`'s UnexpectedAppendOffsetException), so the follower gets the gap too
        (`--overlapping` seed 590308, kept as recorded in tests/data/sim-runs)."""
        leader = self.leaders.get((ev["topic"], ev["partition"]))
        if ev.get("role") != "follower" or ev["base_offset"] < leo or leader is None:
            return False
        held = self.logs.get((leader, ev["topic"], ev["partition"]), [])
        batch = (ev["base_offset"], ev["last_offset"], ev["batch_leader_epoch"], ev["batch_checksum"])
        return batch in held and not any(b[1] >= leo and b[0] < ev["base_offset"] for b in held)

    elections: list[dict[str, Any]] = field(default_factory=list)
    isr_changes: list[dict[str, Any]] = field(default_factory=list)
    lifecycle: list[dict[str, Any]] = field(default_factory=list)
    truncations: list[dict[str, Any]] = field(default_factory=list)
    inconsistencies: list[str] = field(default_factory=list)

    def lost_acked_writes(self) -> list[dict[str, Any]]:
        """acks=all acknowledged batches missing from their offset in the final leader's log."""
        lost = []
        for ack in self.acked:
            leader = self.leaders.get((ack["topic"], ack["partition"]))
            if leader is None:
                continue
            replica = (leader, ack["topic"], ack["partition"])
            if ack["base_offset"] < self.log_start.get(replica, 0):
                continue  # deleted by retention, as the checker skips it
            log = {b[0]: b[3] for b in self.logs.get(replica, [])}
            if log.get(ack["base_offset"]) != ack["batch_checksum"]:
                lost.append(ack)
        return lost

    def divergences(self) -> list[tuple[Replica, Replica, int]]:
        """(replica a, replica b, offset) where both replicas of the final assignment hold different batches below
        both HWs."""
        out = []
        by_tp: dict[tuple[str, int], list[Replica]] = {}
        for r in sorted(self.logs):
            final = self.assigned.get((r[1], r[2]))
            if final is None or r[0] in final[1]:
                by_tp.setdefault((r[1], r[2]), []).append(r)
        for reps in by_tp.values():
            for i, a in enumerate(reps):
                for b in reps[i + 1:]:
                    bound = min(self.hw.get(a, 0), self.hw.get(b, 0))
                    # Below either log start offset (retention) one of them no longer holds the batch.
                    start = max(self.log_start.get(a, 0), self.log_start.get(b, 0))
                    la = {x[0]: x for x in self.logs[a] if start <= x[0] and x[1] < bound}
                    lb = {x[0]: x for x in self.logs[b] if start <= x[0] and x[1] < bound}
                    for off in sorted(set(la) | set(lb)):
                        if la.get(off) != lb.get(off):
                            out.append((a, b, off))
                            break
        return out

    def _drop_hidden_from(self, r: Replica, offset: int) -> None:
        """A truncation (or a crash's lost tail) below the log start takes hidden batches from `offset` on too."""
        if r in self.below_start:
            self.below_start[r] = [x for x in self.below_start[r] if x[1] < offset]

    def _move_log_start(self, r: Replica, start: int, reason: str | None) -> None:
        """A start that deletes (segment deletion, a restart's load, or one with no reason) forgets what lies below
        it, a restart's earlier start brings back the hidden batches above it, and any other raise hides the
        batches it passes."""
        log = self.logs.get(r, [])
        hidden = self.below_start.get(r, [])
        passed = [x for x in log if x[1] < start]
        if reason in (None, "segment_deletion", "log_load"):
            hidden = [x for x in hidden if x[1] >= start]
            if reason == "log_load":
                log, hidden = hidden + log, []
        else:
            hidden = hidden + passed
        self.below_start[r] = hidden
        self.log_start[r] = start
        self.logs[r] = [x for x in log if x[1] >= start]

    def unclean_elections(self) -> list[dict[str, Any]]:
        """`leader_election` events flagged unclean."""
        return [e for e in self.elections if e["action"] == "unclean"]


def audit(events: Iterable[dict[str, Any]]) -> Audit:
    """Replay the events in order."""
    a = Audit()
    for ev in events:
        et = ev["event_type"]
        if et == "append":
            r = (ev["broker_id"], ev["topic"], ev["partition"])
            log = a.logs.setdefault(r, [])
            leo = a.leo.get(r, log[-1][1] + 1 if log else None)
            if leo is not None and ev["base_offset"] != leo and not a._skips_leader_gap(ev, leo):
                a.inconsistencies.append(f"append at {ev['base_offset']} on {r} with LEO {leo}")
            log.append((ev["base_offset"], ev["last_offset"], ev["batch_leader_epoch"], ev["batch_checksum"]))
            a.leo[r] = ev["last_offset"] + 1
        elif et == "truncation":
            r = (ev["broker_id"], ev["topic"], ev["partition"])
            a.truncations.append(ev)
            target = ev["truncate_offset"]
            log = a.logs.setdefault(r, [])
            if ev["reason"] == "full":
                log.clear()
                a.below_start.pop(r, None)
                a.log_start[r] = target
            else:  # the batch holding the target goes whole
                while log and log[-1][1] >= target:
                    log.pop()
                a._drop_hidden_from(r, target)
            a.leo[r] = target
        elif et == "leadership_change" and ev.get("leo") is not None:
            a._assign(ev)
            # A crash's lost tail, or a deleted replica that a reassignment adds back: the log restarts there.
            log = a.logs.setdefault((ev["broker_id"], ev["topic"], ev["partition"]), [])
            while log and log[-1][1] >= ev["leo"]:
                log.pop()
            a._drop_hidden_from((ev["broker_id"], ev["topic"], ev["partition"]), ev["leo"])
            a.leo[(ev["broker_id"], ev["topic"], ev["partition"])] = ev["leo"]
            if ev.get("hw") is not None:
                a.hw[(ev["broker_id"], ev["topic"], ev["partition"])] = ev["hw"]
        elif et == "log_start_offset_change":
            a._move_log_start((ev["broker_id"], ev["topic"], ev["partition"]), ev["log_start_offset"], ev.get("reason"))
        elif et == "hw_change":
            a.hw[(ev["broker_id"], ev["topic"], ev["partition"])] = ev["hw"]
        elif et == "produce_ack":
            if ev["acks"] == -1 and ev["error"] == "NONE":
                a.acked.append(ev)
        elif et == "leader_election":
            a.elections.append(ev)
            a.leaders[(ev["topic"], ev["partition"])] = ev.get("leader_id")
            a._assign(ev)
        elif et == "isr_change":
            a.isr_changes.append(ev)
            if ev.get("isr_state") == "committed":
                a._assign(ev)  # a leader's registration in its epoch states the assignment (KRaft reassignment)
        elif et == "broker_lifecycle":
            a.lifecycle.append(ev)
    return a
