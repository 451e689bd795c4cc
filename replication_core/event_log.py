"""EventLog: the events the state machines emit, in emission order, the most frequent types kept as columns.

Five event types are most of a run's events: one `fetch`, `follower_fetch_state` and `fetch_response` per
partition per fetch round, one `append` and `hw_change` per batch replicated. Building a dict per event and
then, in the writer, reading every dict back column by column cost more than everything else the writer
does. So the log keeps each of these types as one flat list of its field values, row after row (with k
fields per row, field j of every event is `values[j::k]`, a C-level slice), and every other event as its
dict (`make_event`). `kinds` records the type of each event in emission order (0 = a dict), so the
order, and with it the `event_id` the writer stamps, stays that of emission.

`take()` hands the events gathered so far to the writer as an `EventBatch` and starts afresh (the
simulator calls it every `batch_events` events, so memory stays bounded). Tests and other readers that
want dicts iterate the log (or call `EventBatch.to_dicts`): the dicts are those `make_event` builds,
same keys in the same order (the JSON Lines field order), checked at import.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from replication_core.events import Event, UnknownEventFieldError, make_event

GENERIC: Final = 0
FETCH: Final = 1
FETCH_RESPONSE: Final = 2
FOLLOWER_FETCH_STATE: Final = 3
APPEND: Final = 4
HW_CHANGE: Final = 5

_ENVELOPE_FIELDS = ("ts_ms", "broker_id", "topic", "partition", "leader_epoch")

HOT_TYPES: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("fetch", (*_ENVELOPE_FIELDS, "leader_id", "fetcher_id", "fetch_offset", "last_fetched_epoch")),
    ("fetch_response", (*_ENVELOPE_FIELDS, "leader_id", "fetcher_id", "fetch_offset", "error", "leader_hw",
                        "leader_log_start_offset", "bytes", "record_count", "diverging_epoch",
                        "diverging_end_offset", "response_received_ms")),
    ("follower_fetch_state", (*_ENVELOPE_FIELDS, "follower_id", "fetch_offset", "last_caught_up_time_ms", "leo")),
    ("append", (*_ENVELOPE_FIELDS, "role", "base_offset", "last_offset", "record_count", "bytes",
                "batch_leader_epoch", "batch_checksum", "leo")),
    ("hw_change", (*_ENVELOPE_FIELDS, "role", "old_hw", "hw")),
)
"""(event type, fields after `event_type`) of kinds 1..5, in the order `make_event` puts them."""


class EventBatch:
    """A batch of events in emission order: `kinds[i]` is event i's kind; a dict for each kind-0 event in
    `generic`; for each hot kind k, the flat row-major values of its events in `columns[k - 1]`."""

    def __init__(self, kinds: list[int], generic: list[Event], columns: list[list[Any]]) -> None:
        self.kinds = kinds
        self.generic = generic
        self.columns = columns

    @staticmethod
    def of_dicts(events: list[Event]) -> EventBatch:
        """A batch of events given as dicts (all kept as dicts)."""
        return EventBatch([GENERIC] * len(events), list(events), [[] for _ in HOT_TYPES])

    def __len__(self) -> int:
        return len(self.kinds)

    def to_dicts(self) -> list[Event]:
        """Every event as the dict `make_event` builds, in emission order."""
        out: list[Event] = []
        at = [0] * (len(HOT_TYPES) + 1)
        for kind in self.kinds:
            if kind == GENERIC:
                out.append(self.generic[at[0]])
                at[0] += 1
                continue
            event_type, names = HOT_TYPES[kind - 1]
            row = at[kind]
            values = self.columns[kind - 1][row * len(names):(row + 1) * len(names)]
            ev: Event = {"event_type": event_type}
            for name, value in zip(names, values, strict=True):
                ev[name] = value
            out.append(ev)
            at[kind] = row + 1
        return out


class EventLog:
    """Where the engine's events go (see module docstring): `append` takes any event as a dict, the `add_*`
    methods the five frequent types field by field; `len`, iteration (dicts) and `clear` as a list's."""

    def __init__(self) -> None:
        self.kinds: list[int] = []
        self.generic: list[Event] = []
        self.fetches: list[Any] = []
        self.fetch_responses: list[Any] = []
        self.follower_fetch_states: list[Any] = []
        self.appends: list[Any] = []
        self.hw_changes: list[Any] = []

    def __len__(self) -> int:
        return len(self.kinds)

    def __bool__(self) -> bool:
        return len(self.kinds) > 0

    def append(self, event: Event) -> None:
        """Any event, as the dict `make_event` builds."""
        self.kinds.append(GENERIC)
        self.generic.append(event)

    def add_fetch(self, ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None,
                  leader_id: int, fetcher_id: int, fetch_offset: int, last_fetched_epoch: int | None) -> None:
        """A `fetch` event: one partition of a follower's FetchRequest."""
        self.kinds.append(FETCH)
        self.fetches.extend((ts_ms, broker_id, topic, partition, leader_epoch, leader_id, fetcher_id,
                             fetch_offset, last_fetched_epoch))

    def add_fetch_response(self, ts_ms: int, broker_id: int, topic: str, partition: int,
                           leader_epoch: int | None, leader_id: int, fetcher_id: int, fetch_offset: int,
                           error: str, leader_hw: int | None, leader_log_start_offset: int | None,
                           size_bytes: int, record_count: int, diverging_epoch: int | None,
                           diverging_end_offset: int | None, response_received_ms: int) -> None:
        """A `fetch_response` event: one partition of a FetchResponse as the follower processed it."""
        self.kinds.append(FETCH_RESPONSE)
        self.fetch_responses.extend((ts_ms, broker_id, topic, partition, leader_epoch, leader_id, fetcher_id,
                                     fetch_offset, error, leader_hw, leader_log_start_offset, size_bytes,
                                     record_count, diverging_epoch, diverging_end_offset, response_received_ms))

    def add_follower_fetch_state(self, ts_ms: int, broker_id: int, topic: str, partition: int,
                                 leader_epoch: int | None, follower_id: int, fetch_offset: int,
                                 last_caught_up_time_ms: int, leo: int) -> None:
        """A `follower_fetch_state` event (`Partition.updateFollowerFetchState`)."""
        self.kinds.append(FOLLOWER_FETCH_STATE)
        self.follower_fetch_states.extend((ts_ms, broker_id, topic, partition, leader_epoch, follower_id,
                                           fetch_offset, last_caught_up_time_ms, leo))

    def add_append(self, ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None,
                   role: str, base_offset: int, last_offset: int, record_count: int, size_bytes: int,
                   batch_leader_epoch: int, batch_checksum: int, leo: int) -> None:
        """An `append` event (`UnifiedLog.append`)."""
        self.kinds.append(APPEND)
        self.appends.extend((ts_ms, broker_id, topic, partition, leader_epoch, role, base_offset, last_offset,
                             record_count, size_bytes, batch_leader_epoch, batch_checksum, leo))

    def add_hw_change(self, ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None,
                      role: str, old_hw: int, hw: int) -> None:
        """An `hw_change` event (`UnifiedLog` high watermark update)."""
        self.kinds.append(HW_CHANGE)
        self.hw_changes.extend((ts_ms, broker_id, topic, partition, leader_epoch, role, old_hw, hw))

    def batch(self) -> EventBatch:
        """The events gathered so far (the log keeps them)."""
        return EventBatch(self.kinds, self.generic, [self.fetches, self.fetch_responses,
                                                     self.follower_fetch_states, self.appends, self.hw_changes])

    def take(self) -> EventBatch:
        """The events gathered so far; the log starts afresh."""
        out = self.batch()
        self.kinds, self.generic = [], []
        self.fetches, self.fetch_responses, self.follower_fetch_states = [], [], []
        self.appends, self.hw_changes = [], []
        return out

    def clear(self) -> None:
        """Drop every event."""
        self.take()

    def __iter__(self) -> Iterator[Event]:
        return iter(self.batch().to_dicts())

    def __getitem__(self, index: Any) -> Any:
        """An event (or a list of them, for a slice) as dicts."""
        return self.batch().to_dicts()[index]


def _check_hot_types() -> None:
    """Each hot kind's fields are those `make_event` accepts for its type, in its order."""
    log = EventLog()
    log.add_fetch(0, 0, "t", 0, None, 1, 0, 0, None)
    log.add_fetch_response(0, 0, "t", 0, None, 1, 0, 0, "NONE", None, None, 0, 0, None, None, 0)
    log.add_follower_fetch_state(0, 0, "t", 0, None, 1, 0, 0, 0)
    log.add_append(0, 0, "t", 0, None, "leader", 0, 0, 1, 1, 0, 0, 1)
    log.add_hw_change(0, 0, "t", 0, None, "leader", 0, 1)
    envelope = {"event_type", *_ENVELOPE_FIELDS}
    for ev in log:
        payload = {k: v for k, v in ev.items() if k not in envelope}
        if list(ev) != list(make_event(ev["event_type"], 0, 0, **payload)):
            raise UnknownEventFieldError(f"{ev['event_type']}: EventLog fields {list(ev)} differ from make_event's")


_check_hot_types()
