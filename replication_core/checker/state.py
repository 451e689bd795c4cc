"""What the checker remembers while it replays one run: per replica, per partition, per broker.

Replay rules (the Spark audit must build the same state):
* A replica is (run_id, topic, partition, broker_id). Its log is replayed from `append` (offset ->
  record identity `Rec(base, last, epoch, checksum)` and the appending event), `truncation` (drop
  offsets >= truncate_offset; a `full` truncation or one past the LEO drops everything; LEO :=
  truncate_offset), `log_start_offset_change` (drop offsets below the new start) and crash recovery: a
  `leadership_change` whose `leo` is below the replay after the broker crashed drops the tail (the
  engine's recovery emits no truncation event; `log.recover_to_flushed`).
* The epoch cache is replayed like `LeaderEpochFileCache`: `assign(batch epoch, base)` on append when
  the epoch differs from the latest, `assign(epoch, LEO)` on a become_leader that bumps the epoch
  (KAFKA-7415), trimmed on truncation / log start movement.
* A leadership tenure starts at a `leadership_change` and ends at the replica's next one or at its
  broker's crash / shutdown. Leader-side state (committed ISR, pending AlterPartition, epoch start offset,
  the leader's view of each follower: LEO = last fetch_offset, lastCaughtUpTimeMs) lives in the tenure and
  is reset like `Replica.resetReplicaState` when the epoch is bumped (§2.1).
* A record is *committed* when a leader in tenure exposes it: its HW passes the offset or it becomes
  leader with a HW above it. The partition's *committed HW* is the highest HW any leader exposed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from replication_core.checker.epochs import EpochCache
from replication_core.config import ReplicationConfig


class Rec(NamedTuple):
    """Identity of the record batch at an offset: the same batch is equal on every replica."""

    base: int
    last: int
    epoch: int
    checksum: int


class Slot(NamedTuple):
    """A record in a replayed log and the `append` event that wrote it."""

    rec: Rec
    append_id: int


class View(NamedTuple):
    """The leader's view of one follower (`Replica.scala`): LEO, lastCaughtUpTimeMs, and the event."""

    leo: int
    last_caught_up_ms: int
    event_id: int | None


class Tenure(NamedTuple):
    """One leadership tenure of a replica: [start_id, end_id) in event ids, epoch and role."""

    start_id: int
    end_id: int | None
    epoch: int
    role: str


class FetchSent(NamedTuple):
    """The last `fetch` a follower sent for a partition."""

    event_id: int
    ts_ms: int
    epoch: int | None
    fetch_offset: int
    leader_id: int | None
    last_fetched_epoch: int | None


class ExpectedTruncation(NamedTuple):
    """A truncation the follower owes after a DivergingEpoch answer (§3.6); `response` is the answer's
    `fetcher_key` and its response_received_ms, when the event names them."""

    offset: int
    event_id: int
    response: tuple[tuple[int, int, int], int] | None = None


def fetcher_key(ev: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """(broker, fetcher id, leader) of a fetch / fetch_response event: one fetcher thread's requests."""
    if ev.get("fetcher_id") is None or ev.get("leader_id") is None:
        return None
    return int(ev["broker_id"]), int(ev["fetcher_id"]), int(ev["leader_id"])


class Commit(NamedTuple):
    """The committed record at an offset: the record, the exposing event, the appending event, the epoch of
    the leader that exposed it, and the lowest epoch of the leaders that exposed it since (-1 for an exposure
    without an epoch), which says from which epoch on a follower must hold it."""

    rec: Rec
    commit_id: int
    append_id: int
    epoch: int | None = None
    known_from: int = -1


class Ack(NamedTuple):
    """An acknowledged write (acks=all, or acks=1 with `acks` 1)."""

    event_id: int
    leader: int
    base: int
    last: int
    checksum: int
    append_id: int | None
    epoch: int | None = None  # the acking leader's epoch
    acks: int = -1
    ts_ms: int = 0


@dataclass(slots=True)
class Watch:
    """One offset of an acknowledged write, followed from its acknowledgement: is its record (`checksum`) on the
    partition's leader in office (`PartitionState.last_leader` as the replay stands), and when did it last stop
    being there."""

    ack_id: int
    checksum: int
    on_leader: bool
    # (event, ts_ms) of the last time the record stopped being on the leader in office after the ack: a leader
    # without it taking office, or its removal from the leader in office (a crash loss: the crash's event and time;
    # retention is none, see `PartitionState.rewatch`).
    left: tuple[int, int] | None = None
    # Whether `left` is a crash loss (the leader in office lost the record in a crash): named beside an unclean
    # election that excuses the loss, which otherwise reads as its only cause.
    left_in_crash: bool = False
    # (event, ts_ms) of the become_leader that put the leader in office at the acknowledgement: a replaced leader's
    # acknowledgement was never on the leader in office.
    office_since: tuple[int, int] | None = None


@dataclass
class ReplicaState:
    """One replica's replayed log and its leadership / fetch state."""

    broker: int
    records: dict[int, Slot] = field(default_factory=dict)
    leo: int = 0
    hw: int = 0
    lso: int = 0
    lso_raised_by: int = -1  # event_id of the last log start offset change that raised it (-1: none)
    hw_event: int | None = None
    hw_epoch: int | None = None  # the `leader_epoch` of the event that set `hw` (one of `unclean_between`'s epochs)
    cache: EpochCache = ()
    removed_by: dict[int, int] = field(default_factory=dict)
    # (offset, id of the append that wrote it) -> the event that removed that record (as `removed_by`): a record is
    # removed once, so this is where a deposed leader's acknowledged write left its log (retention removes none).
    removed_write: dict[tuple[int, int], int] = field(default_factory=dict)
    crash_removed: dict[int, int] = field(default_factory=dict)
    # Records below the log start offset that are still on disk: a restart loads the start from its checkpoint and
    # may step back to them (a `log_start_offset_change` with reason `log_load`). Segment deletion, a restart's
    # start and truncations forget them; a follower whose own retention deletes only below the start its leader
    # gave it (no event) keeps them until the next start of those kinds.
    below_start: dict[int, Slot] = field(default_factory=dict)
    role: str | None = None
    epoch: int = -1
    max_epoch: int = -1
    leader_id: int | None = None
    tenures: list[Tenure] = field(default_factory=list)
    replicas: tuple[int, ...] = ()
    crashed_since_leadership: int | None = None
    crashed_at: int = 0  # ts_ms of the crash / restart in crashed_since_leadership
    # leader side
    isr: frozenset[int] = frozenset()
    pending: int | None = None
    pending_added: int | None = None
    epoch_start: int | None = None
    views: dict[int, View] = field(default_factory=dict)
    # follower side
    fetch_sent: FetchSent | None = None
    expected_truncation: ExpectedTruncation | None = None
    lag: int | None = None
    # After OFFSET_OUT_OF_RANGE the fetcher's lag comes from the leader's end offset (ListOffsets, no event):
    # unknown here until a response with records sets it (an empty one does not replace a set lag).
    lag_after_out_of_range: bool = False
    last_truncation: int | None = None

    @property
    def is_leading(self) -> bool:
        """Inside a leader tenure."""
        return self.role == "leader"

    def close_tenure(self, event_id: int) -> None:
        """End the current tenure (if any) at `event_id`."""
        if self.tenures and self.tenures[-1].end_id is None:
            self.tenures[-1] = self.tenures[-1]._replace(end_id=event_id)
        self.role = None


@dataclass
class PartitionState:
    """One partition of one run: its replicas and the partition-wide history."""

    replicas: dict[int, ReplicaState] = field(default_factory=dict)
    committed: dict[int, Commit] = field(default_factory=dict)
    committed_hw: int = 0
    unclean_elections: list[int] = field(default_factory=list)
    unclean_epochs: list[tuple[int, int]] = field(default_factory=list)  # (event, leader epoch) of each
    election_epoch: int | None = None
    election_event: int | None = None
    epoch_leader: dict[int, tuple[int, int]] = field(default_factory=dict)
    acks: list[Ack] = field(default_factory=list)
    # offset -> the acknowledged writes' watches there; (ack event, offset) -> its watch
    watched: dict[int, list[Watch]] = field(default_factory=dict)
    watches: dict[tuple[int, int], Watch] = field(default_factory=dict)
    last_leader: int | None = None
    last_leader_epoch: int = -1
    last_leader_since: tuple[int, int] | None = None  # (event, ts_ms) of its become_leader

    def replica(self, broker: int) -> ReplicaState:
        """The replica on `broker`, created on first sight."""
        r = self.replicas.get(broker)
        if r is None:
            r = self.replicas[broker] = ReplicaState(broker)
        return r

    def unclean_after(self, event_id: int | None) -> int | None:
        """The first unclean election after `event_id` (None = any), or None."""
        for e in self.unclean_elections:
            if event_id is None or e > event_id:
                return e
        return None

    def unclean_between(self, *epochs: int | None) -> int | None:
        """The first unclean election (of those read so far) into an epoch after the lowest of the leader epochs
        a violation sets against each other (its records' batch epochs and the epochs of the leaders and
        replicas that hold, commit or lack them; None ones ignored) and at or before the highest, or None: it
        separates the states of the one side from the other's. A leader that the controller replaced while it
        was paused or cut off keeps committing (and acknowledging) in its old epoch after the election, so the
        event order alone cannot tell."""
        known = [e for e in epochs if e is not None]
        if not known:
            return None
        lo, hi = min(known), max(known)
        for e, epoch in self.unclean_epochs:
            if lo < epoch <= hi:
                return e
        return None

    def on_leader(self, offset: int, checksum: int) -> tuple[bool, bool]:
        """Whether the leader in office (`last_leader`: the latest become_leader of the highest epoch so far) holds
        the record with `checksum` at `offset` in its replayed log, and whether its log starts above `offset`."""
        r = None if self.last_leader is None else self.replicas.get(self.last_leader)
        if r is None:
            return False, False
        slot = r.records.get(offset)
        return slot is not None and slot.rec.checksum == checksum, offset < r.lso

    def rewatch(self, offsets: Iterable[int], event: int, ts_ms: int, crash: bool = False) -> None:
        """Re-read, after `event` (at `ts_ms`; `crash`: a crash loss), whether the watched writes at `offsets` are on
        the leader in office; one that was and no longer is left it at that event. A write on it stays on while the
        leader's log starts above its offset (what retention deleted is not lost, as the end-of-run check skips
        offsets below the final leader's log start), but only the record itself brings back one that left."""
        for o in offsets:
            for w in self.watched.get(o, ()):
                held, below_start = self.on_leader(o, w.checksum)
                on = held or (w.on_leader and below_start)
                if w.on_leader and not on:
                    w.left = (event, ts_ms)
                    w.left_in_crash = crash
                w.on_leader = on

    def unclean_excuse(self, after: int | None, *epochs: int | None) -> int | None:
        """The unclean election that excuses a loss: the first after event `after` (`unclean_after`), else the
        first between the epochs (`unclean_between`); None when neither exists."""
        found = self.unclean_after(after)
        return found if found is not None else self.unclean_between(*epochs)


@dataclass
class BrokerState:
    """One broker: its replication config (plus the raw map, which may carry topic overrides as
    `topic.<name>.<config>`) and lifecycle."""

    config: ReplicationConfig = field(default_factory=ReplicationConfig)
    raw_config: dict[str, str] = field(default_factory=dict)
    config_event: int | None = None
    down: bool = False
    # The controlled_shutdown event after which the controller holds the broker ISR-ineligible (shutting down,
    # then fenced by its clean stop) until its process starts again; None when it is not.
    shutdown_since: int | None = None
    last_crash: int | None = None
    # Its GC pauses and disk stalls (broker_fault, schema 1.9): (start ms, end ms, action), in event order.
    holds: list[tuple[int, int, str]] = field(default_factory=list)
