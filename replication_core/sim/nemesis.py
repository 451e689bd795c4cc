"""Faults: the scenario's schedule, or random ones drawn from the run's seeded RNG (a Jepsen 'nemesis').

`draw_faults` turns a `NemesisSpec` into an explicit fault list up front (so a run's faults are part of
its determinism and can be printed), one fault at a time: each fault is undone (restart / heal) before
the next one starts, and the next one waits until the cluster is fully replicated again (checked when
it is applied, see `FaultInjector`), because losing every replica of a write at once is outside
what Kafka's replication promises. The last `quiet_ms` of the run are fault-free.

With `NemesisSpec.overlap` faults start an interval after the previous one started, whether or not it
is undone, and are applied without waiting for a healthy cluster: a partition during a crash, a pause
of the only ISR member left, a crash of a broker already down (nothing happens; its restart still
comes). Give such a nemesis process crashes only (`crash_modes: [process]`): with power crashes,
overlapping ones can lose every copy of a write, which replication does not promise to survive.

`FaultInjector` applies faults at their instant: crash (power: lose unflushed data; process: keep the
page cache), a correlated crash of two brokers' processes (drawn only when a scenario lists
`correlated_crash`), restart, network partition (one- or two-way) and heal, GC pause, disk stall,
controlled shutdown, reassignment (scheduled, or drawn when a scenario lists `reassign`, throttled at one of
`nemesis.throttle_rates` when it lists any), scripted produce, flush. The faults Kafka has no event for (GC
pause, disk stall, partition, heal) it records as `broker_fault` events (`fault_events`).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import TYPE_CHECKING

from replication_core.events import Event, make_event
from replication_core.partition_fetch_state import TopicPartition
from replication_core.sim.scenario import Fault, NemesisSpec

if TYPE_CHECKING:
    from replication_core.sim.cluster import Cluster

DEFAULT_DOWN_MS = 3000
HEALTH_RETRY_MS = 500


def draw_faults(spec: NemesisSpec, brokers: tuple[int, ...], controller_id: int, duration_ms: int,
                rng: random.Random, partitions: tuple[tuple[str, int, int], ...] = ()) -> list[Fault]:
    """A random fault schedule: (fault, undo) pairs, which overlap only with `spec.overlap`. `partitions`
    ((topic, partition, replication factor) of every partition) are what a `reassign` may move."""
    if "reassign" in spec.faults and not partitions:
        raise ValueError("a nemesis that draws 'reassign' needs the partitions it may move, got none")
    out: list[Fault] = []
    t = rng.randint(spec.min_interval_ms, spec.max_interval_ms)
    end = duration_ms - spec.quiet_ms
    while t < end:
        kind = rng.choice(spec.faults)
        length = rng.randint(spec.min_duration_ms, spec.max_duration_ms)
        length = min(length, max(1, end - t))
        b = rng.choice(brokers)
        if kind == "crash":
            mode = rng.choice(spec.crash_modes)
            out.append(Fault(t, "crash", b, mode=mode, down_ms=length))
        elif kind == "correlated_crash":
            # Process crashes only: two replicas losing unflushed data at once is outside what replication
            # promises (see the module docstring); two processes dying together is not.
            others = tuple(x for x in brokers if x != b)
            if len(others) < 2:
                out.append(Fault(t, "crash", b, mode="process", down_ms=length))
            else:
                second = rng.choice(others)
                second_length = min(rng.randint(spec.min_duration_ms, spec.max_duration_ms), max(1, end - t))
                out.append(Fault(t, "correlated_crash", src=(b, second), mode="process",
                                 down_ms=length, duration_ms=second_length))
                length = max(length, second_length)
        elif kind == "controlled_shutdown":
            out.append(Fault(t, "controlled_shutdown", b, down_ms=length))
        elif kind in ("pause", "disk_stall"):
            out.append(Fault(t, kind, b, duration_ms=length))
        elif kind == "reassign":
            # The drawn broker `b` is not used: a reassignment names its own replicas (the first prefers leading).
            topic, partition, rf = rng.choice(partitions)
            target = rng.sample(brokers, min(rf, len(brokers)))
            # Drawn only when rates are listed, so that an unthrottled nemesis draws what it always drew.
            rate = rng.choice(spec.throttle_rates) if spec.throttle_rates else None
            out.append(Fault(t, "reassign", topic=topic, partition=partition, replicas=tuple(target),
                             throttle_rate=rate))
        else:
            others = tuple(x for x in brokers if x != b)
            shape = rng.randrange(3)
            if shape == 0:  # isolate b from every other broker and the controller, both ways
                out.append(Fault(t, "partition", src=(b,), dst=(*others, controller_id), two_way=True,
                                 duration_ms=length))
            elif shape == 1:  # b cut off from the other brokers but still talking to the controller
                out.append(Fault(t, "partition", src=(b,), dst=others, two_way=True, duration_ms=length))
            else:  # one-way: b cannot reach the others (its answers and fetches are lost)
                out.append(Fault(t, "partition", src=(b,), dst=others, two_way=False, duration_ms=length))
        gap = rng.randint(spec.min_interval_ms, spec.max_interval_ms)
        t += gap if spec.overlap else length + gap
    return out


def fault_events(f: Fault, now_ms: int, brokers: tuple[int, ...], alive: frozenset[int]) -> list[Event]:
    """The `broker_fault` events of fault `f` applied at `now_ms` (none for faults with their own events).

    A pause or disk stall of a broker that is down does nothing (a restart clears both), so it has no event.
    A partition or heal is recorded on every broker whose links it cuts or restores, seen from that broker:
    on each broker of its `from` side with the `to` side as peers (outbound, or both when two-way), then on
    each broker of its `to` side with the `from` side as peers (inbound, or both). The controller is a peer,
    never a broker with an event of its own. A heal of every link is recorded on every broker, without peers."""
    if f.action in ("pause", "disk_stall"):
        assert f.broker is not None
        if f.broker not in alive:
            return []
        kind = "gc_pause" if f.action == "pause" else "disk_stall"
        return [make_event("broker_fault", now_ms, f.broker, action=kind, duration_ms=f.duration_ms)]
    if f.action not in ("partition", "heal"):
        return []
    kind = "network_partition" if f.action == "partition" else "network_heal"
    # A scheduled heal carries no duration: only the partition that schedules its own heal states one.
    duration = f.duration_ms if f.action == "partition" and f.duration_ms else None
    if not f.src and not f.dst:
        return [make_event("broker_fault", now_ms, b, action=kind) for b in brokers]
    sides = ([(b, list(f.dst), "both" if f.two_way else "outbound") for b in f.src if b in brokers]
             + [(b, list(f.src), "both" if f.two_way else "inbound") for b in f.dst if b in brokers])
    return [make_event("broker_fault", now_ms, b, action=kind, duration_ms=duration, peers=peers,
                       direction=direction) for b, peers, direction in sides]


class FaultInjector:
    """Applies faults to the cluster at their virtual instant."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.applied: list[tuple[int, str]] = []

    def schedule(self, faults: list[Fault], gated: bool) -> None:
        """Queue every fault at `start + at_ms`; `gated` faults wait for a healthy cluster."""
        start = self.cluster.start_ms
        for f in faults:
            self.cluster.queue.at(start + f.at_ms, self.apply, f, gated)

    def _healthy(self) -> bool:
        c = self.cluster
        return (all(b.alive for b in c.brokers.values()) and not c.network.partitioned
                and c.controller.snapshot()["under_replicated_partitions"] == 0
                and all(b.paused_until <= c.queue.now_ms and b.stalled_until <= c.queue.now_ms
                        for b in c.brokers.values()))

    def apply(self, f: Fault, gated: bool = False) -> None:
        """Apply one fault now; a `gated` (nemesis) fault first waits for a healthy cluster and is
        dropped if the fault-free tail of the run begins meanwhile."""
        c = self.cluster
        q = c.queue
        if gated and not self._healthy():
            end = c.start_ms + c.scenario.duration_ms - (c.scenario.nemesis.quiet_ms if c.scenario.nemesis else 0)
            if q.now_ms + HEALTH_RETRY_MS < end:
                q.after(HEALTH_RETRY_MS, self.apply, f, True)
            return
        self.applied.append((q.now_ms - c.start_ms, f.action))
        if c.events is not None:
            alive = frozenset(b for b, broker in c.brokers.items() if broker.alive)
            for ev in fault_events(f, q.now_ms, tuple(c.brokers), alive):
                c.events.append(ev)
        a = f.action
        if a == "crash":
            assert f.broker is not None
            c.brokers[f.broker].crash(lose_unflushed=f.mode == "power")
            if f.down_ms is not None:
                q.after(f.down_ms, self.apply, replace(f, action="restart"))
        elif a == "correlated_crash":
            # Both at this instant (a gated fault waits for a healthy cluster once, not between the two);
            # the first restarts after `down_ms`, the second after `duration_ms`.
            for broker, down in zip(f.src, (f.down_ms, f.duration_ms), strict=True):
                c.brokers[broker].crash(lose_unflushed=f.mode == "power")
                if down:
                    q.after(down, self.apply, replace(f, action="restart", broker=broker, src=()))
        elif a == "restart":
            assert f.broker is not None
            b = c.brokers[f.broker]
            if not b.alive:
                b.start("restart")
        elif a == "controlled_shutdown":
            assert f.broker is not None
            c.controlled_shutdown(f.broker, f.down_ms if f.down_ms is not None else DEFAULT_DOWN_MS)
        elif a == "partition":
            c.network.partition(f.src, f.dst, f.two_way)
            if f.duration_ms:
                q.after(f.duration_ms, self.apply, replace(f, action="heal"))
        elif a == "heal":
            c.network.heal(f.src, f.dst, f.two_way)
        elif a == "pause":
            assert f.broker is not None
            c.brokers[f.broker].pause(f.duration_ms)
        elif a == "disk_stall":
            assert f.broker is not None
            c.brokers[f.broker].disk_stall(f.duration_ms)
        elif a == "flush":
            assert f.broker is not None
            c.brokers[f.broker].disk.flush_all()
        elif a == "reassign":
            assert f.topic is not None and f.partition is not None
            c.controller.reassign(TopicPartition(f.topic, f.partition), list(f.replicas), f.throttle_rate)
        elif a == "produce":
            assert f.topic is not None and f.partition is not None
            for _ in range(f.batches):
                c.script_producer.send(TopicPartition(f.topic, f.partition), f.acks, f.records, f.bytes, 0)
