"""The reference checker: one streaming pass over a run's events against the catalogue of §11.

`check_events(events)` replays the events in `event_id` order (the reader guarantees it) and returns a
`CheckResult`. Pure: no I/O, no clock; the events are the only input. Each invariant is one `_check_*`
method whose docstring names the rule; the `_on_<event_type>` handlers update the replay state
(`state.py`) and call the checks in a fixed order (checks that need the state *before* the event run
first). End-of-run checks run in `finish()`.

Semantic choices the Spark audit must mirror:
* Ordering: events of a run are processed in `event_id` order; runs are independent.
* Leadership: a tenure runs from a replica's `leadership_change` to its next one or its broker's
  crash / shutdown; "the leader" of a check is the emitting replica inside a `become_leader` tenure whose
  epoch equals the event's envelope `leader_epoch`. HW events outside a tenure (the HW checkpoint loaded
  just before `become_leader`) are not leader HW moves.
* Committed: see `state.py` — exposed by a leader in tenure; `committed HW` = the highest leader HW.
* Unclean elections: `leader_election` with action `unclean`. A violation of an `excusable` invariant is
  reported with severity `warning` (and the election among its evidence) when an unclean election of the
  partition happened after the record involved was committed / acknowledged / appended — data loss
  Kafka's contract allows, reported rather than passed.
* Crash losses: likewise downgraded when the replica that exposes / holds the conflicting record itself
  lost the committed record in a crash recovery (power failure, unflushed tail) — KIP-966's "last replica
  standing": Kafka does not promise durability when every copy's page cache is lost.
* Crash recovery: a `truncation` emitted while its broker is down (after a `broker_lifecycle` crash or
  shutdown, before the next start / restart) is the unflushed tail lost by the crash; it is replayed but
  is not a follower truncation (truncation_safety / truncation_point / leader_no_truncation skip it).
  Lost committed data then shows up where it matters: acked_write_lost, inconsistent_offsets.
* Config: each broker's last `broker_config`, defaults of `ReplicationConfig` when none was seen.
* Record identity: (base offset, last offset, batch leader epoch, batch checksum).
* One violation per detecting event and replica pair: the first offending offset is reported, the
  count of offending offsets is in the message.
* Where a rule needs what the events do not carry, the check is skipped for that event and counted in
  `CheckResult.skipped` (invariant -> reason -> count), never silently passed. A run's `source` is that of
  its first event; findings of invariants whose catalogue `sources` exclude it (record-level invariants on
  `kafka-log` runs, which have no append events) are counted as skipped, not reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from replication_core.checker.catalogue import BY_NAME, ERROR, INFO, WARNING
from replication_core.checker.epochs import (
    assign,
    end_offset_for,
    truncate_from_end,
    truncate_from_start,
    truncation_offset,
)
from replication_core.checker.state import (
    Ack,
    BrokerState,
    Commit,
    ExpectedTruncation,
    FetchSent,
    PartitionState,
    Rec,
    ReplicaState,
    Slot,
    Tenure,
    View,
    Watch,
    fetcher_key,
)
from replication_core.checker.violation import Violation
from replication_core.config import ReplicationConfig
from replication_core.truncation import FLAGS, TruncationProtocol, truncation_protocol
from schemas.events import HOLDING_FAULTS

Event = Mapping[str, Any]
_KNOWN_CONFIGS = frozenset(ReplicationConfig().as_kafka_map())


class CheckInputError(ValueError):
    """An event lacks a field its type requires (schemas/README.md): the run cannot be checked."""


@dataclass(frozen=True)
class CheckOptions:
    """Knobs the events cannot supply. `max_network_delay_ms`: one-way delay bound of the simulated
    network (tightens `delayed_fetch_bound`); None = unknown. `processing_stalls`: the run had GC pauses
    or disk stalls that are not events (written before schema 1.9's `broker_fault`), which delay a response
    by any amount, so `delayed_fetch_bound` cannot be judged and is skipped."""

    max_network_delay_ms: int | None = None
    processing_stalls: bool = False


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: violations in detection order plus what was checked and skipped."""

    violations: tuple[Violation, ...]
    runs: tuple[str, ...]
    events: int
    checked: Mapping[str, int] = field(default_factory=dict)
    skipped: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @property
    def errors(self) -> tuple[Violation, ...]:
        """Violations of severity error."""
        return tuple(v for v in self.violations if v.severity == ERROR)

    @property
    def warnings(self) -> tuple[Violation, ...]:
        """Violations of severity warning."""
        return tuple(v for v in self.violations if v.severity == WARNING)

    @property
    def infos(self) -> tuple[Violation, ...]:
        """Findings of severity info: losses Kafka's contract allows (acks=1 writes), never a failure."""
        return tuple(v for v in self.violations if v.severity == INFO)

    @property
    def problems(self) -> tuple[Violation, ...]:
        """Violations of severity error or warning: a run without them is clean (info findings are losses
        Kafka's contract allows)."""
        return tuple(v for v in self.violations if v.severity != INFO)


def check_events(events: Iterable[Event], options: CheckOptions | None = None) -> CheckResult:
    """Check an iterable of event dicts (already in event_id order per run) and return the result."""
    checker = Checker(options or CheckOptions())
    for ev in events:
        checker.feed(ev)
    return checker.finish()


class Checker:
    """Streaming checker over any number of runs (state is kept per run_id)."""

    def __init__(self, options: CheckOptions | None = None) -> None:
        self.options = options or CheckOptions()
        self._runs: dict[str, _RunChecker] = {}
        self._events = 0

    def feed(self, ev: Event) -> None:
        """Process one event; raises `CheckInputError` for an event missing a field its type needs."""
        self._events += 1
        run_id = str(ev.get("run_id") or "")
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _RunChecker(run_id, self.options, str(ev.get("source") or "engine"))
        event_id = ev.get("event_id")
        if not isinstance(event_id, int) or (run.last_event_id is not None and event_id <= run.last_event_id):
            raise CheckInputError(f"run {run_id}: event_id {event_id!r} after {run.last_event_id}: events must come "
                                  "in strictly increasing event_id order")
        run.last_event_id = event_id
        try:
            run.feed(ev)
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckInputError(f"run {run_id} event {ev.get('event_id')} ({ev.get('event_type')}): missing or "
                                  f"invalid field: {exc!r}") from exc

    def finish(self) -> CheckResult:
        """Run the end-of-run checks and return the result."""
        violations: list[Violation] = []
        checked: dict[str, int] = {}
        skipped: dict[str, dict[str, int]] = {}
        for run in self._runs.values():
            run.finish()
            violations.extend(run.violations)
            for k, n in run.checked.items():
                checked[k] = checked.get(k, 0) + n
            for k, reasons in run.skipped.items():
                into = skipped.setdefault(k, {})
                for reason, n in reasons.items():
                    into[reason] = into.get(reason, 0) + n
        return CheckResult(tuple(violations), tuple(self._runs), self._events, checked, skipped)


def delayed_fetch_message(elapsed: int, bound: int, held: int) -> str:
    """The delayed_fetch_bound message (the Spark audit builds the same text)."""
    stalls = f" ({held} ms of it GC pauses and disk stalls)" if held else ""
    return f"fetch answered after {elapsed} ms, more than the {bound} ms bound{stalls}"


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values] if values is not None else []


def _loss(p: PartitionState, offset: int, ack: Ack) -> tuple[int | None, int | None]:
    """(event, ts_ms) of the loss of acknowledged write `ack` at `offset`: the last time after the ack that its record
    stopped being on the partition's leader in office (`Watch.left`: a leader without it taking office, or its
    removal from the leader in office, a crash loss dated at the crash); when it was never on it from the ack on (a
    replaced leader acknowledged it), the become_leader of the leader in office at the ack; never before the ack.
    (None, None) when neither is known: the violation is then dated at the run's end."""
    w = p.watches.get((ack.event_id, offset))
    loss = None if w is None else (w.left or w.office_since)
    return (None, None) if loss is None else (loss[0], max(loss[1], ack.ts_ms))


def _lost_in_crash(p: PartitionState, offset: int, ack: Ack) -> int | None:
    """The crash loss that dates the loss of `ack` at `offset` (`_loss`), if it is one."""
    w = p.watches.get((ack.event_id, offset))
    return w.left[0] if w is not None and w.left is not None and w.left_in_crash else None


def unclean_excuse_text(unclean: int, lost_in_crash: int | None = None) -> str:
    """The message's note on an unclean election that excuses a loss, naming the crash loss that took the record from
    the leader in office when there was one: a leader's unflushed tail lost at its power failure is gone whichever
    replica is elected next, so the election alone would read as the cause."""
    if lost_in_crash is None:
        return f" (after unclean election event {unclean}: allowed data loss)"
    if lost_in_crash < unclean:
        return (f" (the leader in office lost it with its unflushed tail at a crash, event {lost_in_crash}, then "
                f"unclean election event {unclean} elected a replica without it: allowed data loss)")
    return (f" (after unclean election event {unclean}, the leader in office lost it with its unflushed tail at a "
            f"crash, event {lost_in_crash}: allowed data loss)")


def _ack_invariant(ack: Ack) -> str:
    """The invariant an acknowledgement's loss breaks: acked_write_lost for acks=all, else acks1_write_lost."""
    return "acked_write_lost" if ack.acks == -1 else "acks1_write_lost"


def _crash_after(r: ReplicaState, offset: int, since_id: int) -> int | None:
    """The crash-recovery truncation that removed `offset` from `r` after `since_id`, if any."""
    crash = r.crash_removed.get(offset)
    return crash if crash is not None and crash > since_id else None


def _epoch_of(ev: Event | None, r: ReplicaState) -> int | None:
    """The leader epoch replica `r` is in at event `ev` (the event's own, else the replayed one; None if none)."""
    if ev is not None and ev.get("leader_epoch") is not None:
        return int(ev["leader_epoch"])
    return r.epoch if r.epoch >= 0 else None


def _epoch_or_any(epoch: int | None) -> int:
    """An exposure's epoch for `Commit.known_from`: -1 (binding on every epoch) when the event has none."""
    return -1 if epoch is None else epoch


def _checksum(slot: Slot | None) -> int:
    return -1 if slot is None else slot.rec.checksum


class _RunChecker:
    """All state and checks of one run."""

    def __init__(self, run_id: str, options: CheckOptions, source: str) -> None:
        self.run_id = run_id
        self.options = options
        self.source = source
        self.last_event_id: int | None = None
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.brokers: dict[int, BrokerState] = {}
        self.violations: list[Violation] = []
        self.checked: dict[str, int] = {}
        self.skipped: dict[str, dict[str, int]] = {}
        self.last_ts = 0
        # Per fetcher thread (`fetcher_key`): its last fetch, and its last OFFSET_OUT_OF_RANGE answer (response
        # received_ms, event id), which tell an owed truncation the run ended before (`_still_processing`).
        self._last_fetch: dict[tuple[int, int, int], int] = {}
        self._last_out_of_range: dict[tuple[int, int, int], tuple[int, int]] = {}
        self._handlers: dict[str, Callable[[Event], None]] = {
            "leadership_change": self._on_leadership_change,
            "leader_election": self._on_leader_election,
            "append": self._on_append,
            "hw_change": self._on_hw_change,
            "truncation": self._on_truncation,
            "log_start_offset_change": self._on_log_start_offset_change,
            "isr_change": self._on_isr_change,
            "follower_fetch_state": self._on_follower_fetch_state,
            "produce_ack": self._on_produce_ack,
            "fetch": self._on_fetch,
            "fetch_response": self._on_fetch_response,
            "quota_throttle": self._on_quota_throttle,
            "fetcher_change": self._on_fetcher_change,
            "broker_lifecycle": self._on_broker_lifecycle,
            "broker_config": self._on_broker_config,
            "broker_fault": self._on_broker_fault,
        }

    # --- plumbing --------------------------------------------------------------------------------

    def feed(self, ev: Event) -> None:
        """Dispatch one event to its handler."""
        self.last_ts = int(ev.get("ts_ms") or 0)
        handler = self._handlers.get(str(ev.get("event_type")))
        if handler is not None:
            handler(ev)

    def _partition(self, ev: Event) -> PartitionState:
        key = (str(ev["topic"]), int(ev["partition"]))
        p = self.partitions.get(key)
        if p is None:
            p = self.partitions[key] = PartitionState()
        return p

    def _broker(self, broker: int) -> BrokerState:
        b = self.brokers.get(broker)
        if b is None:
            b = self.brokers[broker] = BrokerState()
        return b

    def _count(self, invariant: str) -> None:
        self.checked[invariant] = self.checked.get(invariant, 0) + 1

    def _skip(self, invariant: str, reason: str) -> None:
        reasons = self.skipped.setdefault(invariant, {})
        reasons[reason] = reasons.get(reason, 0) + 1

    def _flag(self, invariant: str, ev: Event | None, replica: int | None, *, offset: int | None = None,
              expected: int | None = None, actual: int | None = None, evidence: Iterable[int | None] = (),
              message: str, excused_by: int | None = None, crash_excuse: int | None = None,
              lost_in_crash: int | None = None, topic: str | None = None, partition: int | None = None,
              ts_ms: int | None = None) -> None:
        """Record a violation; `excused_by` (an unclean election) or `crash_excuse` (a crash recovery that
        lost the committed record on the replica concerned) downgrades an `excusable` one to a warning;
        `lost_in_crash`, the crash loss that took the record from the leader in office, is named beside the unclean
        election. Without a detecting event `ev` (an end-of-run check) it is dated `ts_ms`, else at the last event."""
        inv = BY_NAME[invariant]
        if self.source not in inv.sources:
            # e.g. real broker logs carry no append events: a replay-based finding would be an artefact.
            self._skip(invariant, f"not applicable to source {self.source}")
            return
        severity = inv.severity
        ids = [e for e in evidence if e is not None]
        if excused_by is not None and inv.excusable:
            severity = WARNING
            message += unclean_excuse_text(excused_by, lost_in_crash)
            ids.insert(0, excused_by)
        elif crash_excuse is not None and inv.excusable:
            severity = WARNING
            message += (f" (crash recovery event {crash_excuse} lost the committed record on that replica: "
                        "durability loss Kafka does not promise to survive)")
            ids.insert(0, crash_excuse)
        if ev is not None:
            event_id = int(ev["event_id"])
            ids.append(event_id)
            ts = int(ev["ts_ms"])
            topic = ev.get("topic", topic)
            partition = ev.get("partition", partition)
        else:
            event_id, ts = -1, self.last_ts if ts_ms is None else ts_ms
        ordered = tuple(dict.fromkeys(ids))
        self.violations.append(Violation(invariant, severity, self.run_id, topic, partition, replica, ts,
                                         event_id, offset, expected, actual, ordered, message))

    def _config(self, broker: int) -> ReplicationConfig:
        return self._broker(broker).config

    def _topic_config(self, broker: int, topic: str, name: str) -> str | None:
        """A topic override `topic.<topic>.<name>` from the broker's config map, if present."""
        return self._broker(broker).raw_config.get(f"topic.{topic}.{name}")

    def _protocol(self, broker: int) -> TruncationProtocol:
        return truncation_protocol(self._config(broker).truncation_mode)

    # --- replay helpers ---------------------------------------------------------------------------

    @staticmethod
    def _drop_from(r: ReplicaState, offset: int, by: int) -> list[int]:
        """Remove records at or above `offset` (truncation / crash loss) by event `by`; the offsets removed."""
        removed = [o for o in r.records if o >= offset]
        for o in removed:
            r.removed_write[(o, r.records.pop(o).append_id)] = by
            r.removed_by[o] = by
        for o in [o for o in r.below_start if o >= offset]:
            # Hidden below the log start but still on disk: a restart's start could have brought it back.
            r.removed_write[(o, r.below_start.pop(o).append_id)] = by
            r.removed_by[o] = by
        return removed

    @staticmethod
    def _changed(p: PartitionState, r: ReplicaState, offsets: Iterable[int], by: int, at_ms: int,
                 old_lso: int | None = None, crash: bool = False) -> None:
        """Records at `offsets` of `r` changed by event `by` (at `at_ms`; `crash`: a crash loss), and its log start
        offset moved from `old_lso` (None: it did not): re-read the watches there, and between the two log starts,
        when `r` is the leader in office (`PartitionState.rewatch`)."""
        if r.broker != p.last_leader or not p.watched:
            return
        p.rewatch(offsets, by, at_ms, crash)
        if old_lso is not None and old_lso != r.lso:
            lo, hi = sorted((old_lso, r.lso))
            # A retention moves a log start by a segment, while the watches grow with the run: walk the shorter.
            p.rewatch(range(lo, hi) if hi - lo <= len(p.watched) else [o for o in p.watched if lo <= o < hi],
                      by, at_ms, crash)

    @staticmethod
    def _cut_from(r: ReplicaState, target: int) -> int:
        """The first offset `truncateTo(target)` removes: the start of the batch holding `target` when it starts
        below it (`LogSegment.truncateTo` cuts at a batch boundary; the LEO still becomes `target`)."""
        slot = r.records.get(target)
        return slot.rec.base if slot is not None and slot.rec.base < target else target

    def _leader_of(self, p: PartitionState, f: ReplicaState) -> ReplicaState | None:
        """The leader `f` follows, if it is leading in `f`'s epoch right now."""
        if f.role != "follower" or f.leader_id is None:
            return None
        leader = p.replicas.get(f.leader_id)
        if leader is None or not leader.is_leading or leader.epoch != f.epoch:
            return None
        return leader

    def _expose(self, p: PartitionState, r: ReplicaState, lo: int, hi: int, ev: Event) -> None:
        """Offsets [lo, hi) of leader `r` become committed; runs `_check_inconsistent_offsets`."""
        p.committed_hw = max(p.committed_hw, hi)
        self._check_inconsistent_offsets(p, r, max(lo, r.lso), hi, ev)

    # --- handlers ----------------------------------------------------------------------------------

    def _on_broker_config(self, ev: Event) -> None:
        raw = ev.get("config") or {}
        values = dict(raw.items()) if isinstance(raw, Mapping) else dict(raw)
        known = {k: v for k, v in values.items() if k in _KNOWN_CONFIGS}
        b = self._broker(int(ev["broker_id"]))
        b.raw_config = {str(k): str(v) for k, v in values.items()}
        try:
            b.config = ReplicationConfig.from_kafka_map(known)
        except (ValueError, TypeError, KeyError):
            self._skip("event_stream_consistent", "unparsable broker_config (defaults kept)")
            return
        b.config_event = int(ev["event_id"])

    def _on_broker_fault(self, ev: Event) -> None:
        action, duration = ev.get("action"), ev.get("duration_ms")
        if action in HOLDING_FAULTS and duration is not None:
            start = int(ev["ts_ms"])
            self._broker(int(ev["broker_id"])).holds.append((start, start + int(duration), str(action)))

    def _held_ms(self, follower: int, leader: int | None, sent_ms: int, arrival_ms: int) -> int:
        """How long, between a fetch and its answer's arrival, its leader was in a GC pause (which holds its
        request handling and its purgatory) or its follower in a GC pause or disk stall (which holds the
        answer's receipt: `response_received_ms` is when the thread resumes): the length of the union of
        those faults within [sent, arrival]. A union, as the simulator's holds overlap: a pause and a stall
        at once, or the leader and the follower paused together, hold the answer once."""
        spans = []
        for broker, kinds in ((follower, HOLDING_FAULTS), (leader, ("gc_pause",))):
            if broker is None or broker not in self.brokers:
                continue
            spans += [(max(start, sent_ms), min(end, arrival_ms)) for start, end, action in self.brokers[broker].holds
                      if action in kinds]
        held, reach = 0, sent_ms
        for start, end in sorted(spans):
            held += max(0, end - max(start, reach))
            reach = max(reach, end)
        return held

    def _end_holds(self, b: BrokerState, at_ms: int) -> None:
        """A crash, shutdown or (re)start ends the broker's pause and stall in force (the simulator's
        `Broker.start` clears both; a stopped process holds nothing)."""
        b.holds = [(start, min(end, at_ms), action) for start, end, action in b.holds]

    def _on_broker_lifecycle(self, ev: Event) -> None:
        broker = int(ev["broker_id"])
        action = ev.get("action")
        b = self._broker(broker)
        eid = int(ev["event_id"])
        if action in ("crash", "shutdown", "restart", "start"):
            self._end_holds(b, int(ev["ts_ms"]))
        if action in ("crash", "shutdown", "restart"):
            if action in ("crash", "restart"):
                b.last_crash = eid
            b.down = action != "restart"
            if action == "restart":
                b.shutdown_since = None
            for p in self.partitions.values():
                r = p.replicas.get(broker)
                if r is not None:
                    # The process's Partition objects are gone: the next leadership_change starts from
                    # epoch -1 with fresh follower state (Kafka re-creates Partition / Replica on start).
                    r.close_tenure(eid)
                    r.epoch = -1
                    r.views = {}
                    r.isr = frozenset()
                    r.pending = None
                    r.pending_added = None
                    r.fetch_sent = None
                    r.expected_truncation = None
                    if action in ("crash", "restart"):
                        r.crashed_since_leadership = eid
                        r.crashed_at = self.last_ts
        elif action == "controlled_shutdown":
            b.shutdown_since = eid
        elif action == "start":
            b.down = False
            b.shutdown_since = None

    def _on_leadership_change(self, ev: Event) -> None:
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        eid = int(ev["event_id"])
        epoch = int(ev["leader_epoch"]) if ev.get("leader_epoch") is not None else r.epoch
        self._check_replica_epoch(ev, r, epoch)
        self._reconcile_log(ev, r)
        r.close_tenure(eid)
        r.crashed_since_leadership = None
        new_epoch = epoch > r.epoch
        was_leader = bool(r.tenures) and r.tenures[-1].role == "leader" and r.tenures[-1].end_id == eid
        r.replicas = tuple(_ints(ev.get("replicas")))
        r.fetch_sent = None
        r.expected_truncation = None
        r.lag = None
        r.lag_after_out_of_range = False
        r.pending = None
        r.pending_added = None
        if ev.get("action") == "become_leader":
            self._check_one_leader_per_epoch(ev, p, r.broker, epoch)
            isr = frozenset(_ints(ev.get("isr")))
            self._check_isr_nonempty(ev, r.broker, isr)
            if new_epoch:
                r.cache = assign(r.cache, epoch, r.leo)
                r.epoch_start = r.leo
                ts = int(ev["ts_ms"])
                views: dict[int, View] = {}
                for f in r.replicas:
                    if f == r.broker:
                        continue
                    prev = r.views.get(f)
                    keep = was_leader and prev is not None
                    views[f] = View(prev.leo if keep and prev else -1, ts if f in isr else 0, None)
                r.views = views
            r.role = "leader"
            r.isr = isr
            # The final leader is the latest become_leader of the highest epoch: a broker whose metadata was
            # held up can still apply an older epoch's LeaderAndIsr after the partition moved on.
            if epoch >= p.last_leader_epoch:
                p.last_leader, p.last_leader_epoch, p.last_leader_since = r.broker, epoch, (eid, self.last_ts)
                p.rewatch(p.watched, eid, self.last_ts)
        else:
            r.role = "follower"
            r.leader_id = int(ev["leader_id"]) if ev.get("leader_id") is not None else None
            r.views = {}
            r.isr = frozenset()
        r.epoch = epoch
        r.max_epoch = max(r.max_epoch, epoch)
        r.tenures.append(Tenure(eid, None, epoch, r.role))
        if r.role == "leader":
            self._expose(p, r, r.lso, r.hw, ev)

    def _reconcile_log(self, ev: Event, r: ReplicaState) -> None:
        """Align the replay with the LEO / HW a leadership_change reports (crash recovery emits no event)."""
        p = self._partition(ev)
        leo = ev.get("leo")
        if leo is not None:
            leo = int(leo)
            if leo < r.leo:
                if r.crashed_since_leadership is not None:
                    for o in r.records:
                        if o >= leo:
                            r.crash_removed[o] = r.crashed_since_leadership
                    removed = self._drop_from(r, leo, r.crashed_since_leadership)
                    by, at_ms, crash = r.crashed_since_leadership, r.crashed_at, True
                else:
                    # A broker being added back by a reassignment hosts a new log: its earlier replica was
                    # deleted when it was removed (StopReplica with delete, which emits no event).
                    if r.broker not in _ints(ev.get("adding_replicas")):
                        self._check_consistent(ev, r.broker, r.leo, leo,
                                               "leadership_change reports a LEO below the replayed log without a crash")
                    removed = self._drop_from(r, leo, int(ev["event_id"]))
                    by, at_ms, crash = int(ev["event_id"]), self.last_ts, False
                r.cache = truncate_from_end(r.cache, leo)
                r.leo = leo
                # A log never starts past its end: a new log (a broker added back) starts at 0, not at the
                # deleted replica's log start offset, and a later retention must trim its epoch cache.
                old_lso, r.lso = r.lso, min(r.lso, leo)
                self._changed(p, r, removed, by, at_ms, old_lso, crash)
            elif leo > r.leo:
                self._check_consistent(ev, r.broker, r.leo, leo,
                                       "leadership_change reports a LEO above the replayed log (appends missing)")
                r.leo = leo
        if ev.get("hw") is not None:
            r.hw = int(ev["hw"])
            r.hw_event = int(ev["event_id"])
            r.hw_epoch = None if ev.get("leader_epoch") is None else int(ev["leader_epoch"])

    def _on_leader_election(self, ev: Event) -> None:
        p = self._partition(ev)
        eid = int(ev["event_id"])
        if ev.get("action") == "unclean":
            p.unclean_elections.append(eid)
            if ev.get("leader_epoch") is not None:
                p.unclean_epochs.append((eid, int(ev["leader_epoch"])))
        leader = ev.get("leader_id")
        epoch = ev.get("leader_epoch")
        if epoch is not None:
            self._check_election_epoch(ev, p, int(epoch), leader is not None)
            if leader is not None:
                self._check_one_leader_per_epoch(ev, p, int(leader), int(epoch))
        if leader is not None:
            self._check_isr_nonempty(ev, int(leader), frozenset(_ints(ev.get("isr"))))

    def _on_append(self, ev: Event) -> None:
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        eid = int(ev["event_id"])
        rec = Rec(int(ev["base_offset"]), int(ev["last_offset"]), int(ev["batch_leader_epoch"]),
                  int(ev["batch_checksum"]))
        self._settle_expected_truncation(ev, r)
        # A follower may append above its LEO: fetching inside a gap of its leader's log (a truncation inside a
        # batch leaves one), it gets the leader's next batch, and `UnifiedLog.append` refuses only offsets below
        # the LEO. The offsets skipped hold no record (`r.records` has none at or above the LEO).
        if rec.base < r.leo or (rec.base > r.leo and ev.get("role") != "follower"):
            self._check_consistent(ev, r.broker, r.leo, rec.base, "append base_offset is not the replayed LEO")
        self._check_epoch_cache_monotonic(ev, r, rec)
        if ev.get("role") == "follower":
            self._check_follower_log_matching(ev, p, r, rec)
        if rec.base < r.leo:
            # (already reported) a log has no tail beyond its last append
            self._drop_from(r, rec.base, eid)
        slot = Slot(rec, eid)
        for o in range(rec.base, rec.last + 1):
            r.records[o] = slot
        # What the append changed: the batch's offsets, and any tail above it that it overwrote.
        self._changed(p, r, range(rec.base, max(rec.last + 1, r.leo)), eid, self.last_ts)
        if ev.get("role") == "follower":
            # Before a follower fetches, its fetcher truncates (OffsetsForLeaderEpoch, DivergingEpoch or the HW),
            # and `UnifiedLog.truncateTo` at the LEO changes no record and emits no event but trims the epoch
            # cache there: an epoch this replica opened as a leader without appending is gone before the append
            # (the entry `assign` would otherwise find, taking an older epoch's start with it).
            r.cache = truncate_from_end(r.cache, r.leo)
        r.leo = rec.last + 1
        if not r.cache or r.cache[-1][0] != rec.epoch:
            r.cache = assign(r.cache, rec.epoch, rec.base)
        if ev.get("leo") is not None and int(ev["leo"]) != r.leo:
            self._check_consistent(ev, r.broker, r.leo, int(ev["leo"]), "append leo disagrees with the batch")

    def _on_hw_change(self, ev: Event) -> None:
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        # A broker log's line for the HW a partition starts with prints no old one: the replayed HW stands in.
        logged_old = ev.get("old_hw")
        old, new = r.hw if logged_old is None else int(logged_old), int(ev["hw"])
        if old != r.hw:
            self._check_consistent(ev, r.broker, r.hw, old, "hw_change old_hw is not the replayed HW")
        in_tenure = (r.is_leading and ev.get("role") == "leader"
                     and (ev.get("leader_epoch") is None or int(ev["leader_epoch"]) == r.epoch))
        if in_tenure:
            self._check_hw_monotonic_leader(ev, r, old, new)
        r.hw = new
        r.hw_event = int(ev["event_id"])
        r.hw_epoch = None if ev.get("leader_epoch") is None else int(ev["leader_epoch"])
        self._check_hw_within_log(ev, r, new)
        if in_tenure and new > old:
            self._check_hw_bound_maximal_isr(ev, r, new)
            self._check_hw_frozen_under_min_isr(ev, r)
            self._check_isr_holds_committed(ev, p, r, r.isr - {r.broker}, old, new)
            self._expose(p, r, old, new, ev)
        if new > old:
            self._check_committed_prefix_agreement(ev, p, r, old, new)

    def _on_truncation(self, ev: Event) -> None:
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        eid = int(ev["event_id"])
        t = int(ev["truncate_offset"])
        # Real broker logs do not print the LEO a truncation starts from: the replayed one stands in.
        logged_leo = ev.get("old_leo")
        old_leo = r.leo if logged_leo is None else int(logged_leo)
        if old_leo != r.leo:
            self._check_consistent(ev, r.broker, r.leo, old_leo, "truncation old_leo is not the replayed LEO")
        full = ev.get("reason") == "full" or t > r.leo
        # A full truncation (truncateFullyAndStartAt) empties the log; only its records from `t` on were still
        # the replica's to keep (below it the leader's log start had passed them).
        cut = t if full else self._cut_from(r, t)
        removed_from = 0 if full else cut
        down = self._broker(r.broker).down
        if down:
            # Crash recovery (the simulator's Disk.crash reports the lost unflushed tail as a truncation
            # right after the crash event): a durability loss, not a follower truncation decision.
            for name in ("truncation_safety", "truncation_point", "leader_no_truncation"):
                self._skip(name, "crash recovery of a down broker")
            for o in (*r.records, *r.below_start):
                if o >= removed_from:
                    r.crash_removed[o] = eid
        else:
            self._check_leader_no_truncation(ev, r, t, None if logged_leo is None else old_leo)
            self._check_truncation_safety(ev, p, r, t, cut, old_leo)
            self._check_truncation_point(ev, p, r, t, old_leo)
        removed = self._drop_from(r, removed_from, eid)
        r.cache = () if full else truncate_from_end(r.cache, t)
        r.leo = t
        old_lso = r.lso
        if full or t < r.lso:
            r.lso = t
        self._changed(p, r, removed, eid, self.last_ts, old_lso, down)
        r.last_truncation = eid
        r.expected_truncation = None

    def _on_log_start_offset_change(self, ev: Event) -> None:
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        new = int(ev["log_start_offset"])
        deleted: list[int] = []
        if new > r.lso:
            deleted = [o for o in r.records if o < new]
            for o in deleted:
                r.below_start[o] = r.records.pop(o)
            r.cache = truncate_from_start(r.cache, new)
        if ev.get("reason") in (None, "segment_deletion", "log_load"):
            # Below a start that segment deletion or a restart set, no record is on disk any more (nor, as
            # before 1.13, below one a log line gives no reason for); above a restart's, the records that a raise
            # since the last checkpoint hid are readable again.
            for o in [o for o in r.below_start if o < new]:
                del r.below_start[o]
            for o in [o for o in r.below_start if o >= new]:
                r.records[o] = r.below_start.pop(o)
        old = ev.get("old_log_start_offset")
        if old is None or new > int(old):
            r.lso_raised_by = int(ev["event_id"])
        old_lso, r.lso = r.lso, new
        self._changed(p, r, deleted, int(ev["event_id"]), self.last_ts, old_lso)

    def _on_isr_change(self, ev: Event) -> None:
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        if not r.is_leading:
            self._skip("isr_expand_legal", "isr_change from a replica outside a leader tenure")
            return
        eid = int(ev["event_id"])
        state, action = ev.get("isr_state"), ev.get("action")
        old_isr, isr = frozenset(_ints(ev.get("old_isr"))), frozenset(_ints(ev.get("isr")))
        if state == "proposed":
            if old_isr != r.isr:
                self._check_consistent(ev, r.broker, len(r.isr), len(old_isr),
                                       f"proposal's old_isr {sorted(old_isr)} is not the committed ISR "
                                       f"{sorted(r.isr)}")
            self._check_isr_single_inflight(ev, r)
            if action == "expand":
                self._check_isr_expand_legal(ev, r, old_isr, isr)
                added = isr - old_isr
                r.pending_added = next(iter(added)) if len(added) == 1 else None
            elif action == "shrink":
                self._check_isr_shrink_legal(ev, r, old_isr, isr)
                r.pending_added = None
            r.pending = eid
        elif state == "committed":
            self._check_isr_nonempty(ev, r.broker, isr)
            self._check_isr_expand_eligible(ev, r, isr)
            added = isr - r.isr
            r.isr = isr
            r.pending = None
            r.pending_added = None
            if ev.get("replicas") is not None:
                # The leader applied a registration of its epoch (a reassignment step that removes no replica).
                r.replicas = tuple(_ints(ev.get("replicas")))
            if added:
                self._check_isr_holds_committed(ev, p, r, added, r.lso, r.hw)
        elif state == "rejected" and ev.get("reason") == "reset_to_committed":
            r.pending = None
            r.pending_added = None

    def _on_follower_fetch_state(self, ev: Event) -> None:
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        if not r.is_leading:
            return
        r.views[int(ev["follower_id"])] = View(int(ev["fetch_offset"]), int(ev["last_caught_up_time_ms"]),
                                                int(ev["event_id"]))

    def _on_produce_ack(self, ev: Event) -> None:
        acks = None if ev.get("acks") is None else int(ev["acks"])
        if acks not in (-1, 1) or ev.get("error") != "NONE" or ev.get("base_offset") is None:
            return
        p = self._partition(ev)
        r = p.replica(int(ev["broker_id"]))
        base, last, checksum = int(ev["base_offset"]), int(ev["last_offset"]), int(ev["batch_checksum"])
        slot = r.records.get(base)
        if acks == -1 and (slot is None or slot.rec.checksum != checksum):
            self._check_consistent(ev, r.broker, checksum, _checksum(slot),
                                   f"acknowledged write at {base} is not in the acking leader's log")
        eid = int(ev["event_id"])
        p.acks.append(Ack(eid, r.broker, base, last, checksum, None if slot is None else slot.append_id,
                          None if ev.get("leader_epoch") is None else int(ev["leader_epoch"]), acks, self.last_ts))
        # Followed from here for `_loss` (a replaced leader's acknowledgement is not on the leader in office).
        for o in range(base, last + 1):
            w = Watch(eid, checksum, p.on_leader(o, checksum)[0], office_since=p.last_leader_since)
            p.watched.setdefault(o, []).append(w)
            p.watches[(eid, o)] = w

    def _on_fetch(self, ev: Event) -> None:
        p = self._partition(ev)
        f = p.replica(int(ev["broker_id"]))
        self._settle_expected_truncation(ev, f)
        key = fetcher_key(ev)
        if key is not None:
            self._last_fetch[key] = int(ev["event_id"])
        f.fetch_sent = FetchSent(int(ev["event_id"]), int(ev["ts_ms"]),
                                 None if ev.get("leader_epoch") is None else int(ev["leader_epoch"]),
                                 int(ev["fetch_offset"]),
                                 None if ev.get("leader_id") is None else int(ev["leader_id"]),
                                 None if ev.get("last_fetched_epoch") is None else int(ev["last_fetched_epoch"]))

    def _on_fetch_response(self, ev: Event) -> None:
        p = self._partition(ev)
        f = p.replica(int(ev["broker_id"]))
        self._settle_expected_truncation(ev, f)
        sent = f.fetch_sent
        f.fetch_sent = None
        if ev.get("error") == "OFFSET_OUT_OF_RANGE":
            key = fetcher_key(ev)
            if key is not None and ev.get("response_received_ms") is not None:
                self._last_out_of_range[key] = (int(ev["response_received_ms"]), int(ev["event_id"]))
            # fetchOffsetAndTruncate sets the lag to the leader's end offset - the offset to fetch.
            f.lag, f.lag_after_out_of_range = None, True
        if ev.get("error") != "NONE":
            return
        if sent is not None and sent.fetch_offset == int(ev["fetch_offset"]):
            self._check_fetch_epoch_fenced(ev, p, f, sent)
            self._check_delayed_fetch_bound(ev, f, sent)
        else:
            self._skip("fetch_epoch_fenced", "fetch_response without its fetch")
        if ev.get("diverging_epoch") is not None or ev.get("diverging_end_offset") is not None:
            self._check_diverging_answer(ev, p, sent)
            self._expect_diverging_truncation(ev, f)
            return
        # validBytes: the whole batches' records (a response's bytes may also hold the start of a batch the
        # leader's byte range cut, which the follower does not append).
        records = int(ev.get("record_count") or 0)
        if (records > 0 or (f.lag is None and not f.lag_after_out_of_range)) and ev.get("leader_hw") is not None:
            # ReplicaFetcherThread: nextOffset = lastOffset + 1 for a non-empty response, lag = HW - next.
            nxt = int(ev["fetch_offset"]) + max(records, 0)  # as the Spark rule: a bad negative count adds nothing
            f.lag, f.lag_after_out_of_range = max(0, int(ev["leader_hw"]) - nxt), False

    def _on_quota_throttle(self, ev: Event) -> None:
        self._check_quota_throttle_legal(ev, self._partition(ev))

    def _on_fetcher_change(self, ev: Event) -> None:
        broker = int(ev["broker_id"])
        for item in ev.get("partitions") or ():
            key = (str(item["topic"]), int(item["partition"]))
            p = self.partitions.get(key)
            if p is not None and broker in p.replicas:
                f = p.replicas[broker]
                f.lag = None
                f.lag_after_out_of_range = False
                f.fetch_sent = None

    # --- end of run --------------------------------------------------------------------------------

    def finish(self) -> None:
        """End-of-run checks: owed truncations, acknowledged writes on the final leader."""
        for tp, p in self.partitions.items():
            for r in p.replicas.values():
                if r.expected_truncation is not None and self._still_processing(r.expected_truncation):
                    r.expected_truncation = None
                    self._skip("truncation_point", "the run ended before an owed truncation was due")
                    continue
                self._settle_expected_truncation(None, r, tp)
        for (topic, partition), p in self.partitions.items():
            self._check_acked_write_lost(topic, partition, p)

    # --- invariant checks --------------------------------------------------------------------------

    def _check_consistent(self, ev: Event, replica: int, expected: int, actual: int, what: str) -> None:
        """event_stream_consistent: the events agree with the checker's replay (schemas/README.md)."""
        self._count("event_stream_consistent")
        self._flag("event_stream_consistent", ev, replica, expected=expected, actual=actual,
                   message=f"{what}: replay has {expected}, event says {actual}")

    def _check_hw_monotonic_leader(self, ev: Event, r: ReplicaState, old: int, new: int) -> None:
        """hw_monotonic_leader (§11.1, §2.3): a leader's HW never moves back within its epoch."""
        self._count("hw_monotonic_leader")
        if new < old:
            self._flag("hw_monotonic_leader", ev, r.broker, expected=old, actual=new,
                       evidence=[r.tenures[-1].start_id],
                       message=f"leader HW moved back from {old} to {new} in epoch {r.epoch}")

    def _check_hw_within_log(self, ev: Event, r: ReplicaState, hw: int) -> None:
        """hw_within_log (§11.1, §2.7): log start offset <= HW <= LEO on every replica."""
        self._count("hw_within_log")
        if hw > r.leo:
            self._flag("hw_within_log", ev, r.broker, offset=hw, expected=r.leo, actual=hw,
                       message=f"HW {hw} is above the LEO {r.leo}")
        elif hw < r.lso:
            self._flag("hw_within_log", ev, r.broker, offset=hw, expected=r.lso, actual=hw,
                       message=f"HW {hw} is below the log start offset {r.lso}")

    def _check_hw_bound_maximal_isr(self, ev: Event, r: ReplicaState, hw: int) -> None:
        """hw_bound_maximal_isr (§11.2, §2.3, §2.5): HW <= min LEO over the leader and the maximal ISR, using
        the leader's view of each follower (its last follower_fetch_state fetch_offset)."""
        self._count("hw_bound_maximal_isr")
        maximal = set(r.isr)
        if r.pending_added is not None:
            maximal.add(r.pending_added)
        bound, binding = r.leo, None
        for f in sorted(maximal - {r.broker}):
            view = r.views.get(f)
            leo = view.leo if view is not None else -1
            if leo < bound:
                bound, binding = leo, f
        if hw > bound:
            view = r.views.get(binding) if binding is not None else None
            who = "the leader's LEO" if binding is None else f"replica {binding}'s LEO as the leader saw it"
            self._flag("hw_bound_maximal_isr", ev, r.broker, expected=bound, actual=hw,
                       evidence=[view.event_id if view else None],
                       message=f"leader HW advanced to {hw} above {who} ({bound}); maximal ISR {sorted(maximal)}")

    def _check_hw_frozen_under_min_isr(self, ev: Event, r: ReplicaState) -> None:
        """hw_frozen_under_min_isr (§11.2, §2.3): no HW advance while committed ISR < effective min ISR."""
        self._count("hw_frozen_under_min_isr")
        rf = len(r.replicas) if r.replicas else len(r.isr)
        override = self._topic_config(r.broker, str(ev["topic"]), "min.insync.replicas")
        configured = int(override) if override is not None else self._config(r.broker).min_insync_replicas
        min_isr = min(configured, max(rf, 1))
        if len(r.isr) < min_isr:
            self._flag("hw_frozen_under_min_isr", ev, r.broker, expected=min_isr, actual=len(r.isr),
                       evidence=[self._broker(r.broker).config_event],
                       message=f"leader HW advanced to {ev['hw']} with committed ISR {sorted(r.isr)} below "
                               f"min ISR {min_isr}")

    def _check_isr_holds_committed(self, ev: Event, p: PartitionState, r: ReplicaState, members: Iterable[int],
                                   lo: int, hi: int) -> None:
        """isr_holds_committed (§11.3, TLA StrongIsr / WeakIsr): every committed-ISR member holds the leader's
        records below the HW. Members that crashed after the leader last heard from them are skipped."""
        for m in sorted(members):
            member = p.replicas.get(m)
            if member is None or m == r.broker:
                continue
            view = r.views.get(m)
            crash = self._broker(m).last_crash
            if self._broker(m).down or (crash is not None and (view is None or view.event_id is None
                                                               or crash > view.event_id)):
                self._skip("isr_holds_committed", "member crashed or down")
                continue
            self._count("isr_holds_committed")
            bad: list[int] = []
            for o in range(max(lo, r.lso, member.lso), hi):
                ls = r.records.get(o)
                if ls is None:
                    continue
                ms = member.records.get(o)
                if ms is None or ms.rec != ls.rec:
                    bad.append(o)
            if bad:
                o = bad[0]
                ls, ms = r.records[o], member.records.get(o)
                self._flag("isr_holds_committed", ev, m, offset=o, expected=ls.rec.checksum, actual=_checksum(ms),
                           evidence=[ls.append_id, None if ms is None else ms.append_id],
                           excused_by=p.unclean_excuse(ls.append_id, ls.rec.epoch, _epoch_of(ev, r),
                                                       None if ms is None else ms.rec.epoch, _epoch_of(None, member)),
                           message=f"ISR member {m} lacks the leader's record at {o} below HW {hi} "
                                   f"({len(bad)} offsets)")

    def _check_committed_prefix_agreement(self, ev: Event, p: PartitionState, a: ReplicaState, old: int,
                                          new: int) -> None:
        """committed_prefix_agreement (§11.3, LogMatching): records below min(HW_a, HW_b) are identical."""
        for b in sorted(p.replicas.values(), key=lambda x: x.broker):
            if b is a:
                continue
            self._count("committed_prefix_agreement")
            bad: list[int] = []
            for o in range(max(old, a.lso, b.lso), min(new, b.hw)):
                sa, sb = a.records.get(o), b.records.get(o)
                if sa is not None and sb is not None and sa.rec != sb.rec:
                    bad.append(o)
            if bad:
                o = bad[0]
                sa, sb = a.records[o], b.records[o]
                self._flag("committed_prefix_agreement", ev, a.broker, offset=o, expected=sb.rec.checksum,
                           actual=sa.rec.checksum, evidence=[sb.append_id, sa.append_id, b.hw_event],
                           excused_by=p.unclean_excuse(min(sa.append_id, sb.append_id), sa.rec.epoch, sb.rec.epoch,
                                                       _epoch_of(ev, a), _epoch_of(None, b), b.hw_epoch),
                           crash_excuse=_crash_after(a, o, -1) or _crash_after(b, o, -1),
                           # Where b's HW was set: a crashed or cut-off replica's is old, and read as current.
                           message=f"replica {a.broker} (HW {new}) and replica {b.broker} (HW {b.hw}"
                                   f"{'' if b.hw_event is None else f' since event {b.hw_event}'}) hold "
                                   f"different records at {o}: epoch {sa.rec.epoch} on replica {a.broker} vs "
                                   f"{sb.rec.epoch} on replica {b.broker} "
                                   f"({len(bad)} offsets)")

    def _check_inconsistent_offsets(self, p: PartitionState, r: ReplicaState, lo: int, hi: int, ev: Event) -> None:
        """inconsistent_offsets (§11.5): one offset never holds two different committed records."""
        eid = int(ev["event_id"])
        epoch = _epoch_of(ev, r)
        bad: list[tuple[int, Commit, Slot]] = []
        for o in range(lo, hi):
            slot = r.records.get(o)
            if slot is None:
                continue
            self._count("inconsistent_offsets")
            prior = p.committed.get(o)
            if prior is not None and prior.rec != slot.rec:
                bad.append((o, prior, slot))
            if prior is None or prior.rec != slot.rec:
                p.committed[o] = Commit(slot.rec, eid, slot.append_id, epoch, _epoch_or_any(epoch))
            elif _epoch_or_any(epoch) < prior.known_from:
                p.committed[o] = prior._replace(known_from=_epoch_or_any(epoch))
        if bad:
            o, prior, slot = bad[0]
            self._flag("inconsistent_offsets", ev, r.broker, offset=o, expected=prior.rec.checksum,
                       actual=slot.rec.checksum, evidence=[prior.append_id, prior.commit_id, slot.append_id],
                       excused_by=p.unclean_excuse(prior.commit_id, prior.rec.epoch, prior.epoch, slot.rec.epoch,
                                                   epoch),
                       crash_excuse=_crash_after(r, o, prior.commit_id),
                       message=f"offset {o} committed twice: epoch {prior.rec.epoch} checksum "
                               f"{prior.rec.checksum}, now epoch {slot.rec.epoch} checksum {slot.rec.checksum} "
                               f"({len(bad)} offsets)")

    def _check_truncation_safety(self, ev: Event, p: PartitionState, r: ReplicaState, t: int, cut: int,
                                 old_leo: int) -> None:
        """truncation_safety (§11.6): a truncation to `t` (removing the records from `cut`) never removes a
        committed record."""
        self._count("truncation_safety")
        epoch = _epoch_of(ev, r)
        bad: list[tuple[int, Commit, Slot]] = []
        for o in range(cut, old_leo):
            slot, commit = r.records.get(o), p.committed.get(o)
            # A record that only leaders of later epochs exposed is not judged: the answer the follower acts on
            # is its own epoch's leader's, and the later commit counted no replica still in an earlier epoch.
            if slot is not None and commit is not None and commit.rec == slot.rec \
                    and (epoch is None or commit.known_from <= epoch):
                bad.append((o, commit, slot))
        if bad:
            o, commit, slot = bad[0]
            self._flag("truncation_safety", ev, r.broker, offset=o, expected=p.committed_hw, actual=t,
                       evidence=[slot.append_id, commit.commit_id],
                       excused_by=p.unclean_excuse(commit.commit_id, slot.rec.epoch, commit.epoch, epoch),
                       message=f"truncation ({ev.get('reason')}) to {t} removed committed records from {o} "
                               f"({len(bad)} offsets; committed HW {p.committed_hw})")

    def _check_leader_no_truncation(self, ev: Event, r: ReplicaState, t: int, old_leo: int | None) -> None:
        """leader_no_truncation (Appendix A, §2.6): a leader never truncates its own log (`old_leo` None: the
        event does not say where the log ended)."""
        self._count("leader_no_truncation")
        if r.is_leading:
            self._flag("leader_no_truncation", ev, r.broker, expected=old_leo, actual=t,
                       evidence=[r.tenures[-1].start_id],
                       message=f"leader of epoch {r.epoch} truncated its log from "
                               f"{'an end its log did not print' if old_leo is None else old_leo} to {t}")

    def _check_diverging_answer(self, ev: Event, p: PartitionState, sent: FetchSent | None) -> None:
        """truncation_point, leader half (§2.2 step 4, KIP-279): a DivergingEpoch is the leader's epoch-cache
        answer for the fetch's LastFetchedEpoch — (largest epoch <= it, that epoch's end offset). For the
        leader's latest epoch the end offset is its LEO when it answered, so any value <= the LEO now."""
        if sent is None or sent.last_fetched_epoch is None:
            self._skip("truncation_point", "DivergingEpoch without the fetch's LastFetchedEpoch")
            return
        leader = p.replicas.get(int(ev["leader_id"]))
        if leader is None or not leader.is_leading or leader.epoch != sent.epoch or not leader.cache:
            self._skip("truncation_point", "DivergingEpoch from a leader that left the fetch's epoch")
            return
        self._count("truncation_point")
        le, lo = end_offset_for(leader.cache, sent.last_fetched_epoch, leader.leo)
        got_epoch = -1 if ev.get("diverging_epoch") is None else int(ev["diverging_epoch"])
        got_end = -1 if ev.get("diverging_end_offset") is None else int(ev["diverging_end_offset"])
        # endOffsetFor answers an epoch older than every cached one with the first entry's start, which
        # truncateFromStart moves up with the log start offset. When the leader's log start rose after the fetch
        # was sent, the (unlogged) answer may predate the rise, which may also have collapsed the entry that was
        # the floor then: the answer is the asked epoch, or the floor epoch below it from before the rise, with an
        # end at or below the first start now.
        bounded = sent.last_fetched_epoch < leader.cache[0][0] and leader.lso_raised_by > sent.event_id
        if bounded:
            ok = got_epoch <= le and got_end <= lo
        elif le == leader.cache[-1][0]:
            ok = got_epoch == le and got_end <= leader.leo
        else:
            ok = (got_epoch, got_end) == (le, lo)
        if not ok:
            gives = f"at most ({le}, {lo})" if bounded else f"({le}, {lo})"
            self._flag("truncation_point", ev, leader.broker, expected=lo, actual=got_end, evidence=[sent.event_id],
                       message=f"leader answered DivergingEpoch ({got_epoch}, {got_end}) for LastFetchedEpoch "
                               f"{sent.last_fetched_epoch}, but its epoch cache gives {gives}")

    def _expect_diverging_truncation(self, ev: Event, f: ReplicaState) -> None:
        """truncation_point, DivergingEpoch half (§3.5, §3.6): what the follower owes after this answer."""
        le = -1 if ev.get("diverging_epoch") is None else int(ev["diverging_epoch"])
        lo = -1 if ev.get("diverging_end_offset") is None else int(ev["diverging_end_offset"])
        offset, _ = truncation_offset(le, lo, f.leo, int(ev["fetch_offset"]), f.cache)
        key = fetcher_key(ev)
        received = ev.get("response_received_ms")
        response = None if key is None or received is None else (key, int(received))
        f.expected_truncation = ExpectedTruncation(offset, int(ev["event_id"]), response)

    def _still_processing(self, exp: ExpectedTruncation) -> bool:
        """Whether the run ended while the answer's fetch response was still being processed: a later answer of
        the same response was OFFSET_OUT_OF_RANGE and its fetcher sent no fetch since. `processFetchRequest`
        handles such a partition (`handleOutOfRangeError`: ListOffsets to the leader, which may wait for its
        request timeout) before `truncateOnFetchResponse`, so the truncation was not yet due."""
        if exp.response is None:
            return False
        key, received = exp.response
        out_of_range = self._last_out_of_range.get(key)
        return (out_of_range is not None and out_of_range[0] == received and out_of_range[1] > exp.event_id
                and self._last_fetch.get(key, -1) < exp.event_id)

    def _settle_expected_truncation(self, ev: Event | None, f: ReplicaState,
                                    tp: tuple[str, int] | None = None) -> None:
        """truncation_point: a DivergingEpoch answer below the LEO must have been followed by a truncation."""
        exp = f.expected_truncation
        if exp is None:
            return
        f.expected_truncation = None
        self._count("truncation_point")
        target = exp.offset
        if target < f.leo:
            self._flag("truncation_point", ev, f.broker, expected=target, actual=f.leo, evidence=[exp.event_id],
                       message=f"DivergingEpoch answer required truncation to {target} but the log kept LEO "
                               f"{f.leo}", topic=tp[0] if tp else None, partition=tp[1] if tp else None)
        else:
            # truncateTo at or past the LEO still trims the epoch cache (UnifiedLog.truncateTo).
            f.cache = truncate_from_end(f.cache, f.leo)

    def _check_truncation_point(self, ev: Event, p: PartitionState, f: ReplicaState, t: int, old_leo: int) -> None:
        """truncation_point (§11.9, §3.5): the truncation offset is getOffsetTruncationState's answer."""
        reason = ev.get("reason")
        expected: int | None = None
        evidence: list[int | None] = [f.last_truncation]
        why = ""
        if reason == "diverging_epoch":
            exp = f.expected_truncation
            if exp is None:
                self._skip("truncation_point", "diverging_epoch truncation without a DivergingEpoch answer")
                return
            expected, why = exp.offset, "the DivergingEpoch answer"
            evidence = [exp.event_id]
        elif reason == "leader_epoch":
            leader = self._leader_of(p, f)
            if leader is None or not f.cache:
                self._skip("truncation_point", "leader_epoch truncation: leader left the follower's epoch")
                return
            cache = f.cache
            for _round in range(2):
                requested = cache[-1][0]
                if leader.cache and requested < leader.cache[0][0]:
                    # endOffsetFor answers the start of the leader's first cached epoch, which truncateFromStart
                    # moves up with the log start offset: retention between the answer and this truncation
                    # (neither the request nor the answer is an event) changes what the answer was.
                    self._skip("truncation_point", "leader_epoch truncation: epoch older than the leader's cache")
                    return
                le, lo = end_offset_for(leader.cache, requested, leader.leo)
                if self._protocol(f.broker) is TruncationProtocol.LEADER_EPOCH_V0:
                    le = -1  # OffsetsForLeaderEpoch v0 answers carry no epoch (KIP-101, before KIP-279)
                if lo == -1:
                    self._skip("truncation_point", "leader_epoch truncation: unknown leader offset (rule 1)")
                    return
                offset, done = truncation_offset(le, lo, old_leo, old_leo, cache)
                if done or offset < old_leo or not truncate_from_end(cache, old_leo):
                    break
                # Rule 3a at the LEO: truncateTo changes no record and emits no event, but trims the epoch cache
                # at the LEO, and the follower asks again for its latest epoch below it. That round cannot be a
                # no-op again (the leader answers an epoch below the one asked), so two rounds suffice.
                cache = truncate_from_end(cache, old_leo)
            expected, why = offset, f"leader {leader.broker}'s answer ({le}, {lo})"
        elif reason == "high_watermark":
            expected, why = min(int(ev["hw"]), old_leo), "the local high watermark"
        elif reason == "out_of_range":
            leader = self._leader_of(p, f)
            if leader is None:
                self._skip("truncation_point", "out_of_range truncation: leader unknown")
                return
            self._count("truncation_point")
            if t > leader.leo:
                self._flag("truncation_point", ev, f.broker, expected=leader.leo, actual=t,
                           message=f"out-of-range truncation to {t} is above leader {leader.broker}'s LEO "
                                   f"{leader.leo}")
            return
        else:
            self._skip("truncation_point", f"{reason} truncation target is not checkable")
            return
        self._count("truncation_point")
        if t != expected:
            self._flag("truncation_point", ev, f.broker, expected=expected, actual=t, evidence=evidence,
                       message=f"{reason} truncation to {t}, but {why} gives {expected} (LEO was {old_leo})")

    def _check_follower_log_matching(self, ev: Event, p: PartitionState, f: ReplicaState, rec: Rec) -> None:
        """follower_log_matching (§11.9 second clause, §8.1/§8.2): a follower only extends a prefix it shares
        with its leader — the appended batch and the record before it equal the leader's."""
        leader = self._leader_of(p, f)
        if leader is None:
            self._skip("follower_log_matching", "follower's leader is not leading in its epoch")
            return
        self._count("follower_log_matching")
        own = leader.records.get(rec.base)
        if own is not None and own.rec != rec:
            self._flag("follower_log_matching", ev, f.broker, offset=rec.base, expected=own.rec.checksum,
                       actual=rec.checksum, evidence=[own.append_id],
                       message=f"follower appended a batch at {rec.base} that differs from leader "
                               f"{leader.broker}'s")
            return
        prev = rec.base - 1
        if prev < max(f.lso, leader.lso, 0):
            return
        fs, ls = f.records.get(prev), leader.records.get(prev)
        if fs is not None and ls is not None and fs.rec != ls.rec:
            self._flag("follower_log_matching", ev, f.broker, offset=prev, expected=ls.rec.checksum,
                       actual=fs.rec.checksum, evidence=[fs.append_id, ls.append_id, f.last_truncation],
                       message=f"follower appends at {rec.base} after a record that differs from leader "
                               f"{leader.broker}'s at {prev} (epoch {fs.rec.epoch} vs {ls.rec.epoch}): "
                               "the logs diverge")

    def _check_isr_single_inflight(self, ev: Event, r: ReplicaState) -> None:
        """isr_single_inflight (§11.7, §2.5): no proposal while one is pending."""
        self._count("isr_single_inflight")
        if r.pending is not None:
            self._flag("isr_single_inflight", ev, r.broker, expected=r.pending, evidence=[r.pending],
                       message=f"ISR {ev.get('action')} proposed while proposal {r.pending} is still pending")

    def _check_isr_expand_legal(self, ev: Event, r: ReplicaState, old_isr: frozenset[int],
                                isr: frozenset[int]) -> None:
        """isr_expand_legal (§11.7, §2.4): one eligible, assigned, caught-up replica is added."""
        self._count("isr_expand_legal")
        added, removed = isr - old_isr, old_isr - isr
        if len(added) != 1 or removed:
            self._flag("isr_expand_legal", ev, r.broker, actual=len(added),
                       message=f"expansion must add exactly one replica, {sorted(old_isr)} -> {sorted(isr)}")
            return
        f = next(iter(added))
        view = r.views.get(f)
        leo = view.leo if view is not None else -1
        need = max(r.hw, r.epoch_start if r.epoch_start is not None else 0)
        problem = ""
        if r.replicas and f not in r.replicas:
            problem = f"replica {f} is not assigned {list(r.replicas)}"
        elif f in r.isr:
            problem = f"replica {f} is already in the committed ISR"
        elif leo < need:
            problem = (f"replica {f}'s LEO {leo} is below max(leader HW {r.hw}, epoch start offset "
                       f"{r.epoch_start})")
        if problem:
            self._flag("isr_expand_legal", ev, f, expected=need, actual=leo,
                       evidence=[view.event_id if view else None], message=f"illegal ISR expansion: {problem}")

    def _check_isr_expand_eligible(self, ev: Event, r: ReplicaState, isr: frozenset[int]) -> None:
        """isr_expand_legal (§11.7, §2.4), eligibility: the controller does not commit an expansion of a broker
        that was in controlled shutdown before the proposal was sent and has not started since.

        Judged at the controller's answer, not at the proposal: the leader proposes from its metadata, which
        may not yet know of the shutdown (the controller then answers INELIGIBLE_REPLICA), and a crash makes a
        broker ineligible only once the controller fences it, which is controller state, not an event."""
        f = r.pending_added
        if (ev.get("reason") != "alter_partition" or r.pending is None or f is None or f in r.isr
                or f not in isr):
            return
        since = self._broker(f).shutdown_since
        if since is not None and since < r.pending:
            self._flag("isr_expand_legal", ev, f, evidence=[since, r.pending],
                       message=f"illegal ISR expansion: the controller committed broker {f}, in controlled "
                               f"shutdown since event {since}, proposed at event {r.pending} (not ISR-eligible)")

    def _check_isr_shrink_legal(self, ev: Event, r: ReplicaState, old_isr: frozenset[int],
                                isr: frozenset[int]) -> None:
        """isr_shrink_legal (§11.7, §2.4): only out-of-sync followers leave; never the leader."""
        self._count("isr_shrink_legal")
        if r.broker not in isr:
            self._flag("isr_shrink_legal", ev, r.broker, message=f"shrink {sorted(old_isr)} -> {sorted(isr)} "
                                                                  "removes the leader")
            return
        lag_max = self._config(r.broker).replica_lag_time_max_ms
        now = int(ev["ts_ms"])
        for m in sorted(old_isr - isr):
            view = r.views.get(m)
            if view is None:
                continue  # unknown replica: out of sync by definition
            behind = now - view.last_caught_up_ms
            if view.leo == r.leo or behind <= lag_max:
                self._flag("isr_shrink_legal", ev, m, expected=lag_max, actual=behind,
                           evidence=[view.event_id],
                           message=f"replica {m} removed from the ISR while caught up (LEO {view.leo} vs leader "
                                   f"LEO {r.leo}, last caught up {behind} ms ago)")

    def _check_isr_nonempty(self, ev: Event, leader: int, isr: frozenset[int]) -> None:
        """isr_nonempty (§11.7, LeaderInIsr): the ISR is non-empty and contains the leader. An event without an
        ISR (a broker log line of a version that does not print it) says nothing about it."""
        if ev.get("isr") is None:
            return
        self._count("isr_nonempty")
        if not isr or leader not in isr:
            self._flag("isr_nonempty", ev, leader, actual=len(isr),
                       message=f"ISR {sorted(isr)} is empty or lacks leader {leader}")

    def _check_replica_epoch(self, ev: Event, r: ReplicaState, epoch: int) -> None:
        """leader_epoch_monotonic (§11.8): a replica's leadership_change epochs never go back."""
        self._count("leader_epoch_monotonic")
        if epoch < r.max_epoch:
            self._flag("leader_epoch_monotonic", ev, r.broker, expected=r.max_epoch, actual=epoch,
                       evidence=[r.tenures[-1].start_id if r.tenures else None],
                       message=f"replica went back from leader epoch {r.max_epoch} to {epoch}")

    def _check_election_epoch(self, ev: Event, p: PartitionState, epoch: int, has_leader: bool) -> None:
        """leader_epoch_monotonic (§11.8): elections strictly increase the leader epoch."""
        self._count("leader_epoch_monotonic")
        prev = p.election_epoch
        if prev is not None and (epoch < prev or (has_leader and epoch == prev)):
            self._flag("leader_epoch_monotonic", ev, None, expected=prev, actual=epoch,
                       evidence=[p.election_event],
                       message=f"election in epoch {epoch} does not increase the previous epoch {prev}")
        p.election_epoch = epoch if prev is None else max(prev, epoch)
        p.election_event = int(ev["event_id"])

    def _check_one_leader_per_epoch(self, ev: Event, p: PartitionState, leader: int, epoch: int) -> None:
        """leader_epoch_monotonic (§11.8): one leader per leader epoch."""
        self._count("leader_epoch_monotonic")
        seen = p.epoch_leader.get(epoch)
        if seen is None:
            p.epoch_leader[epoch] = (leader, int(ev["event_id"]))
        elif seen[0] != leader:
            self._flag("leader_epoch_monotonic", ev, leader, expected=seen[0], actual=leader, evidence=[seen[1]],
                       message=f"two leaders in epoch {epoch}: {seen[0]} and {leader}")

    def _check_epoch_cache_monotonic(self, ev: Event, r: ReplicaState, rec: Rec) -> None:
        """epoch_cache_monotonic (§11.8, §2.7): batch epochs never decrease with offset; a leader stamps its
        own epoch."""
        self._count("epoch_cache_monotonic")
        prev = r.records.get(rec.base - 1)
        if prev is not None and rec.epoch < prev.rec.epoch:
            self._flag("epoch_cache_monotonic", ev, r.broker, offset=rec.base, expected=prev.rec.epoch,
                       actual=rec.epoch, evidence=[prev.append_id],
                       message=f"batch of epoch {rec.epoch} appended after a batch of epoch {prev.rec.epoch}")
        elif ev.get("role") == "leader" and r.is_leading and rec.epoch != r.epoch:
            self._flag("epoch_cache_monotonic", ev, r.broker, offset=rec.base, expected=r.epoch, actual=rec.epoch,
                       evidence=[r.tenures[-1].start_id],
                       message=f"leader of epoch {r.epoch} stamped epoch {rec.epoch} on its batch")

    def _check_fetch_epoch_fenced(self, ev: Event, p: PartitionState, f: ReplicaState, sent: FetchSent) -> None:
        """fetch_epoch_fenced (§11.8, KIP-320): a fetch is answered only by a leader in the fetch's epoch."""
        if not FLAGS[self._protocol(f.broker)].current_leader_epoch or sent.epoch is None:
            self._skip("fetch_epoch_fenced", "follower protocol predates KIP-320")
            return
        leader = p.replicas.get(int(ev["leader_id"]))
        if leader is None or not leader.tenures:
            self._skip("fetch_epoch_fenced", "leader never seen")
            return
        self._count("fetch_epoch_fenced")
        eid = int(ev["event_id"])
        for t in leader.tenures:
            if (t.role == "leader" and t.epoch == sent.epoch and t.start_id < eid
                    and (t.end_id is None or t.end_id > sent.event_id)):
                return
        actual = leader.epoch if leader.is_leading else -1
        self._flag("fetch_epoch_fenced", ev, f.broker, expected=sent.epoch, actual=actual, evidence=[sent.event_id],
                   message=f"fetch in epoch {sent.epoch} answered NONE by broker {leader.broker}, which did not "
                           f"lead epoch {sent.epoch} meanwhile")

    def _check_delayed_fetch_bound(self, ev: Event, f: ReplicaState, sent: FetchSent) -> None:
        """delayed_fetch_bound (§11.11, §5): a parked fetch is answered within maxWaitMs (+ network), plus the
        time its leader or follower was held by a GC pause or disk stall meanwhile (`_held_ms`)."""
        if self.options.processing_stalls:
            self._skip("delayed_fetch_bound", "the run has GC pauses / disk stalls, which are not events")
            return
        self._count("delayed_fetch_bound")
        cfg = self._config(f.broker)
        delay = self.options.max_network_delay_ms
        bound = (cfg.replica_fetch_wait_max_ms + 2 * delay if delay is not None
                 else cfg.replica_socket_timeout_ms)
        # Arrival, not processing: an earlier partition's ListOffsets may hold the rest of the response back.
        received = ev.get("response_received_ms")
        arrival = int(ev["ts_ms"] if received is None else received)
        elapsed = arrival - sent.ts_ms
        leader = ev.get("leader_id")
        held = self._held_ms(f.broker, None if leader is None else int(leader), sent.ts_ms, arrival)
        if elapsed > bound + held:
            self._flag("delayed_fetch_bound", ev, f.broker, expected=bound + held, actual=elapsed,
                       evidence=[sent.event_id], message=delayed_fetch_message(elapsed, bound + held, held))

    def _check_quota_throttle_legal(self, ev: Event, p: PartitionState) -> None:
        """quota_throttle_legal (§11.10, §4): throttle only out-of-sync, throttled replicas over the bound."""
        self._count("quota_throttle_legal")
        broker, role = int(ev["broker_id"]), ev.get("role")
        follower = int(ev["follower_id"]) if ev.get("follower_id") is not None else broker
        rate = float(ev.get("measured_rate") or 0.0)
        bound = float(ev["quota_bound"]) if ev.get("quota_bound") is not None else float("inf")
        if not rate > bound:
            self._flag("quota_throttle_legal", ev, follower, expected=int(min(bound, 2**63 - 1)), actual=int(rate),
                       message=f"throttled at measured rate {rate:.2f} B/s, not above the bound {bound:.2f} B/s")
        r = p.replicas.get(broker)
        if role == "leader" and r is not None and r.is_leading and follower in r.isr:
            self._flag("quota_throttle_legal", ev, follower, message=f"leader throttled in-sync replica {follower} "
                                                                     f"(ISR {sorted(r.isr)})")
        if role == "follower" and r is not None and r.lag is not None and r.lag <= 0:
            self._flag("quota_throttle_legal", ev, follower, actual=r.lag,
                       message="follower throttled a partition that is in sync (lag 0)")
        b = self._broker(broker)
        name = f"{role}.replication.throttled.replicas"
        listed = self._topic_config(broker, str(ev["topic"]), name)
        if listed is None:
            # Reassignment throttles are set dynamically and are not events: the list is unknown.
            self._skip("quota_throttle_legal", "throttled-replica list of the topic not in broker_config")
            return
        entries = [e.strip() for e in listed.split(",") if e.strip()]
        if "*" not in entries and f"{ev['partition']}:{broker}" not in entries:
            self._flag("quota_throttle_legal", ev, follower, evidence=[b.config_event],
                       message=f"partition is not in broker {broker}'s {role}.replication.throttled.replicas "
                               f"{list(entries)}")

    def _check_acked_write_lost(self, topic: str, partition: int, p: PartitionState) -> None:
        """acked_write_lost (§11.4): every acks=all write is on the final leader at its offsets; an acks=1
        write that is not is an `acks1_write_lost` finding (info: Kafka allows it)."""
        if not p.acks:
            return
        if p.last_leader is None:
            for name in dict.fromkeys(_ack_invariant(a) for a in p.acks):
                self._skip(name, "no leader ever seen")
            return
        final = p.replicas[p.last_leader]
        for ack in p.acks:
            name = _ack_invariant(ack)
            self._count(name)
            lost = [o for o in range(ack.base, ack.last + 1)
                    if o >= final.lso and _checksum(final.records.get(o)) != ack.checksum]
            if not lost:
                continue
            o = lost[0]
            now = final.records.get(o)
            what = "write" if ack.acks == -1 else "acks=1 write"
            # Found at the end, dated at the loss (`_loss`), which the evidence names after the ack.
            lost_by, lost_at = _loss(p, o, ack)
            acking = p.replicas.get(ack.leader)
            # Where the write left the log of the leader that acknowledged it: for a deposed leader, the truncation
            # as it rejoined as a follower, which the takeover (`lost_by`) alone does not show.
            left_acking = None if acking is None or ack.append_id is None else acking.removed_write.get(
                (o, ack.append_id))
            self._flag(name, None, final.broker, topic=topic, partition=partition, offset=o, ts_ms=lost_at,
                       expected=ack.checksum, actual=_checksum(now),
                       evidence=[ack.append_id, ack.event_id, lost_by, left_acking, final.removed_by.get(o),
                                 None if now is None else now.append_id],
                       excused_by=p.unclean_excuse(ack.event_id, ack.epoch, p.last_leader_epoch),
                       crash_excuse=_crash_after(final, o, ack.event_id), lost_in_crash=_lost_in_crash(p, o, ack),
                       message=f"{what} acknowledged at {ack.base}..{ack.last} by broker {ack.leader} is not on "
                               f"final leader {final.broker} at {o} ({len(lost)} offsets)")
