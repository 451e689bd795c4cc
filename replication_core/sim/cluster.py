"""The simulated cluster: wires clock, network, brokers, controller, producers and faults, and runs.

Determinism: the only randomness is one `random.Random(scenario.seed)` created here and handed to
the network, the producers and the nemesis; the event queue breaks ties by scheduling order; every
collection iterated to make a decision is ordered (sorted ids, insertion-ordered dicts of ints and
tuples). The same scenario and seed therefore emit the same events in the same order.

Events: every component appends to one shared `EventLog` (`Cluster.events`), in emission order; `run`
hands it to an `EventSink` (the writer) in bounded batches, so memory does not grow with the run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from replication_core.config import ReplicationConfig
from replication_core.event_log import EventBatch, EventLog
from replication_core.events import Event, make_event
from replication_core.sim.broker import Broker
from replication_core.sim.clock import EventQueue
from replication_core.sim.controller import Controller
from replication_core.sim.nemesis import FaultInjector, draw_faults
from replication_core.sim.network import Network
from replication_core.sim.producer import Producer, batch_checksum
from replication_core.sim.rpc import RpcLayer
from replication_core.sim.scenario import ProducerSpec, Scenario

CONTROLLED_SHUTDOWN_GRACE_MS = 200
"""Without KRaft's lifecycle (ZooKeeper era, `kraft_lifecycle: false`): the time a broker in controlled shutdown keeps
running so the leadership moves reach everyone. KRaft's lifecycle waits for the controller's `SHUTDOWN_NOW`."""

CONTROLLED_SHUTDOWN_TIMEOUT_MS = 300_000
"""How long a broker waits for the controller to approve its controlled shutdown before it stops anyway
(`BrokerServer.shutdown`: `controlledShutdownFuture.get(5L, TimeUnit.MINUTES)`)."""


class EventSink(Protocol):
    """Where a run's events go (the writer, or a list in tests)."""

    def write(self, events: EventBatch) -> None:
        """Take a batch of events in emission order."""
        ...


@dataclass
class ListSink:
    """An in-memory sink (tests, small runs)."""

    events: list[Event] = field(default_factory=list)

    def write(self, events: EventBatch) -> None:
        """See `EventSink`: keeps the events as dicts."""
        self.events.extend(events.to_dicts())


@dataclass(frozen=True)
class RunStats:
    """What a finished run reports (besides its events)."""

    virtual_ms: int
    callbacks: int
    produced_batches: int
    acked_batches: int
    failed_batches: int
    faults_applied: tuple[tuple[int, str], ...]
    controller: dict[str, object]
    messages_sent: int
    messages_dropped: int


def topic_config_map(scenario: Scenario) -> dict[str, str]:
    """The `broker_config` event's map: the broker's replication configs (Kafka names) plus each topic's
    overrides as `topic.<name>.<config>`."""
    out = dict(scenario.broker_config.as_kafka_map())
    for t in scenario.topics:
        for k, v in sorted(t.config.items()):
            out[f"topic.{t.name}.{k}"] = v
    return out


class Cluster:
    """Brokers + controller + producers + faults on one virtual clock (see module docstring)."""

    def __init__(self, scenario: Scenario, events_enabled: bool = True) -> None:
        # A scenario built in code (campaigns, tests) gets the loader's segment-size check too.
        scenario.check_segment_bytes()
        self.scenario = scenario
        self.rng = random.Random(scenario.seed)
        self.start_ms = scenario.start_ms
        self.queue = EventQueue(scenario.start_ms)
        self.network = Network(scenario.network, self.rng)
        self.rpc = RpcLayer(self.queue, self.network)
        self.events: EventLog | None = EventLog() if events_enabled else None
        self.topic_configs: dict[str, ReplicationConfig] = {t.name: scenario.topic_config(t.name)
                                                            for t in scenario.topics}
        self.config_map = topic_config_map(scenario)
        self.brokers: dict[int, Broker] = {b: Broker(b, self) for b in range(1, scenario.cluster.brokers + 1)}
        self.controller = Controller(self)
        self.producers = [Producer(i, spec, self, self.rng) for i, spec in enumerate(scenario.producers)]
        # The scenario's scripted writes go to the partition's current leader: a client with fresh metadata.
        self.script_producer = Producer(len(self.producers),
                                        ProducerSpec(scenario.topics[0].name, 0.0, retries=0, fresh_metadata=True),
                                        self, self.rng)
        self.injector = FaultInjector(self)
        self._checksum_seq = 0
        # How long each broker in a KRaft controlled shutdown stays down once it stops.
        self._down_ms: dict[int, int] = {}

    def next_checksum(self) -> int:
        """The checksum of the next produced batch (unique within the run)."""
        self._checksum_seq += 1
        return batch_checksum(self._checksum_seq)

    def controlled_shutdown(self, broker_id: int, down_ms: int, waited_ms: int = 0) -> None:
        """`kafka-server-stop` with `controlled.shutdown.enable`: leadership moves first, then a clean stop,
        then a start after `down_ms`. KRaft's lifecycle: `_kraft_controlled_shutdown`.

        Without it (ZooKeeper era, `kraft_lifecycle: false`), the broker stops `CONTROLLED_SHUTDOWN_GRACE_MS` after
        the controller took the request. While the broker and the controller cannot reach each other, it keeps
        running and asks again every heartbeat interval, for at most `CONTROLLED_SHUTDOWN_TIMEOUT_MS`; meanwhile its
        session may expire, and a fenced broker stops at once (below)."""
        b = self.brokers[broker_id]
        if not b.alive:
            return
        if self.scenario.cluster.registration_handshake:
            self._kraft_controlled_shutdown(broker_id, down_ms)
            return
        inc = b.incarnation
        b.wants_shutdown = True
        controller_id = self.controller.node_id
        if waited_ms < CONTROLLED_SHUTDOWN_TIMEOUT_MS and (self.network.is_blocked(broker_id, controller_id)
                                                           or self.network.is_blocked(controller_id, broker_id)):
            interval = self.scenario.cluster.broker_heartbeat_interval_ms

            def ask_again() -> None:
                if b.incarnation == inc:
                    self.controlled_shutdown(broker_id, down_ms, waited_ms + interval)

            self.queue.after(interval, ask_again)
            return

        def restart() -> None:
            if not b.alive:
                b.start("restart")

        if not self.controller.is_running(broker_id, inc):
            # Not registered yet (a restarted process) or fenced: `BrokerLifecycleManager` skips the controlled
            # shutdown outside RUNNING, and the controller answers a fenced broker SHUTDOWN_NOW. A plain clean
            # stop; the controller fences a registered process when its session expires.
            b.shutdown()
            self.queue.after(down_ms, restart)
            return
        if self.events is not None:
            self.events.append(make_event("broker_lifecycle", self.queue.now_ms, broker_id,
                                          action="controlled_shutdown"))
        self.controller.controlled_shutdown(broker_id)

        def stop() -> None:
            if b.incarnation == inc and b.alive:
                b.shutdown()
                self.controller.broker_stopped(broker_id)
                self.queue.after(down_ms, restart)

        self.queue.after(CONTROLLED_SHUTDOWN_GRACE_MS, stop)

    def _kraft_controlled_shutdown(self, broker_id: int, down_ms: int) -> None:
        """KRaft (`BrokerServer.shutdown` with `controlled.shutdown.enable`): a RUNNING broker asks in its heartbeats
        (`Broker.begin_controlled_shutdown`) and stops when the controller answers `shouldShutDown`
        (`Controller._on_controlled_shutdown_heartbeat`), or after `CONTROLLED_SHUTDOWN_TIMEOUT_MS` without that
        answer ("Unable to complete controlled shutdown"; still a clean stop). A process not RUNNING (not
        registered yet, or fenced) skips the controlled shutdown and stops cleanly at once."""
        b = self.brokers[broker_id]
        if b.wants_shutdown:
            return  # already shutting down
        inc = b.incarnation
        self._down_ms[broker_id] = down_ms
        if not self.controller.is_running(broker_id, inc):
            self.finish_controlled_shutdown(broker_id)
            return
        b.begin_controlled_shutdown()

        def give_up() -> None:
            if b.incarnation == inc:
                self.finish_controlled_shutdown(broker_id)

        self.queue.after(CONTROLLED_SHUTDOWN_TIMEOUT_MS, give_up)

    def finish_controlled_shutdown(self, broker_id: int) -> None:
        """The end of a KRaft controlled shutdown: a clean stop, then a start after the fault's down time."""
        b = self.brokers[broker_id]
        if not b.alive:
            return
        b.shutdown()

        def restart() -> None:
            if not b.alive:
                b.start("restart")

        self.queue.after(self._down_ms.pop(broker_id, 0), restart)

    def run(self, sink: EventSink | None = None, batch_events: int = 65536,
            on_progress: Callable[[Cluster], None] | None = None) -> RunStats:
        """Start everything, run the scenario's virtual duration, hand events to `sink` in batches."""
        sc = self.scenario
        for b in sorted(self.brokers):
            self.brokers[b].start("start")
        self.controller.create_topics()
        for p in self.producers:
            p.start()
        self.injector.schedule(list(sc.faults), gated=False)
        if sc.nemesis is not None:
            movable = tuple((t.name, p, t.replication_factor) for t in sc.topics for p in range(t.partitions))
            drawn = draw_faults(sc.nemesis, tuple(sorted(self.brokers)), sc.cluster.controller_id, sc.duration_ms,
                                self.rng, movable)
            # An overlapping nemesis applies each fault at its instant, whatever the cluster's state.
            self.injector.schedule(drawn, gated=not sc.nemesis.overlap)
        events = self.events

        def step() -> None:
            if events is not None and sink is not None and len(events) >= batch_events:
                sink.write(events.take())  # in place: every component holds this very log
            if on_progress is not None:
                on_progress(self)

        self.queue.run_until(self.start_ms + sc.duration_ms, step, step_every=1024)
        if events is not None and sink is not None and events:
            sink.write(events.take())
        producers = [*self.producers, self.script_producer]
        return RunStats(
            virtual_ms=sc.duration_ms,
            callbacks=self.queue.processed,
            produced_batches=sum(p.sent for p in producers),
            acked_batches=sum(p.acked for p in producers),
            failed_batches=sum(p.failed for p in producers),
            faults_applied=tuple(self.injector.applied),
            controller=self.controller.snapshot(),
            messages_sent=self.network.sent,
            messages_dropped=self.network.dropped,
        )
