"""Events the state machines emit: plain dicts keyed by the column names of `schemas.events`.

The state machines fill the partition-level fields; the simulator's event writer stamps the
run-level envelope (`schema_version`, `source`, `run_id`, `event_id`) when it writes them out.

`make_event` builds any event and checks its type and fields against the schema on every call. The
few event types emitted once per partition per fetch or append (`fetch`, `fetch_response`,
`follower_fetch_state`, `append`, `hw_change`) are not built as dicts on the hot path:
`replication_core.event_log.EventLog` keeps them as columns, its fields checked against `make_event`'s
at import, so the schema stays the contract.
"""

from __future__ import annotations

from typing import Any

from mypy_extensions import mypyc_attr

from schemas.events import COLUMN_NAMES, EVENT_TYPES

Event = dict[str, Any]

_PAYLOAD_NAMES = frozenset(COLUMN_NAMES) - {
    "schema_version", "source", "run_id", "event_id", "ts_ms", "broker_id", "event_type",
    "topic", "partition", "leader_epoch",
}


# A regular Python class when compiled: mypyc native classes cannot inherit from KeyError.
@mypyc_attr(native_class=False)
class UnknownEventFieldError(KeyError):
    """Raised when an event is built with a field the schema does not have."""


def make_event(
    event_type: str,
    ts_ms: int,
    broker_id: int,
    topic: str | None = None,
    partition: int | None = None,
    leader_epoch: int | None = None,
    **payload: Any,
) -> Event:
    """Build one event; rejects unknown event types and fields so the schema stays the contract."""
    if event_type not in EVENT_TYPES:
        raise UnknownEventFieldError(f"unknown event_type {event_type!r}; expected one of {sorted(EVENT_TYPES)}")
    # issuperset walks the keys without building a set: this runs for every event on the hot path.
    if not _PAYLOAD_NAMES.issuperset(payload):
        extra = sorted(payload.keys() - _PAYLOAD_NAMES)
        raise UnknownEventFieldError(f"{event_type}: fields {extra} are not in schemas.events")
    return {
        "event_type": event_type,
        "ts_ms": ts_ms,
        "broker_id": broker_id,
        "topic": topic,
        "partition": partition,
        "leader_epoch": leader_epoch,
        **payload,
    }
