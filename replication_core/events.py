"""Events the state machines emit: plain dicts keyed by the column names of `schemas.events`.

The state machines fill the partition-level fields; the simulator's event writer stamps the
run-level envelope (`schema_version`, `source`, `run_id`, `event_id`) when it writes them out.

`make_event` builds any event and checks its type and fields against the schema on every call. The
few event types emitted once per partition per fetch or append (`fetch`, `fetch_response`,
`follower_fetch_state`, `append`, `hw_change`) also have positional builders below that build the
same dict (same keys, same order) as a literal: they are most of a run's events, and the keyword
packing plus the per-call field check cost more than the dict itself. Their field lists are checked
against the schema once, at import (`_check_hot_builders`), so the schema stays the contract.
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


# --- positional builders of the hot event types (same dict as make_event, see module docstring) ---------

def append_event(ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None, role: str,
                 base_offset: int, last_offset: int, record_count: int, size_bytes: int,
                 batch_leader_epoch: int, batch_checksum: int, leo: int) -> Event:
    """`make_event("append", ..., role=, base_offset=, last_offset=, record_count=, bytes=,
    batch_leader_epoch=, batch_checksum=, leo=)` (`UnifiedLog.append`)."""
    return {"event_type": "append", "ts_ms": ts_ms, "broker_id": broker_id, "topic": topic,
            "partition": partition, "leader_epoch": leader_epoch, "role": role, "base_offset": base_offset,
            "last_offset": last_offset, "record_count": record_count, "bytes": size_bytes,
            "batch_leader_epoch": batch_leader_epoch, "batch_checksum": batch_checksum, "leo": leo}


def hw_change_event(ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None, role: str,
                    old_hw: int, hw: int) -> Event:
    """`make_event("hw_change", ..., role=, old_hw=, hw=)` (`UnifiedLog` high watermark update)."""
    return {"event_type": "hw_change", "ts_ms": ts_ms, "broker_id": broker_id, "topic": topic,
            "partition": partition, "leader_epoch": leader_epoch, "role": role, "old_hw": old_hw, "hw": hw}


def follower_fetch_state_event(ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None,
                               follower_id: int, fetch_offset: int, last_caught_up_time_ms: int,
                               leo: int) -> Event:
    """`make_event("follower_fetch_state", ..., follower_id=, fetch_offset=, last_caught_up_time_ms=, leo=)`
    (`Partition.updateFollowerFetchState`)."""
    return {"event_type": "follower_fetch_state", "ts_ms": ts_ms, "broker_id": broker_id, "topic": topic,
            "partition": partition, "leader_epoch": leader_epoch, "follower_id": follower_id,
            "fetch_offset": fetch_offset, "last_caught_up_time_ms": last_caught_up_time_ms, "leo": leo}


def fetch_event(ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None,
                leader_id: int, fetcher_id: int, fetch_offset: int, last_fetched_epoch: int | None) -> Event:
    """`make_event("fetch", ..., leader_id=, fetcher_id=, fetch_offset=, last_fetched_epoch=)`
    (one partition of a follower's FetchRequest)."""
    return {"event_type": "fetch", "ts_ms": ts_ms, "broker_id": broker_id, "topic": topic,
            "partition": partition, "leader_epoch": leader_epoch, "leader_id": leader_id,
            "fetcher_id": fetcher_id, "fetch_offset": fetch_offset, "last_fetched_epoch": last_fetched_epoch}


def fetch_response_event(ts_ms: int, broker_id: int, topic: str, partition: int, leader_epoch: int | None,
                         leader_id: int, fetcher_id: int, fetch_offset: int, error: str, leader_hw: int | None,
                         leader_log_start_offset: int | None, size_bytes: int, record_count: int,
                         diverging_epoch: int | None, diverging_end_offset: int | None,
                         response_received_ms: int) -> Event:
    """`make_event("fetch_response", ..., leader_id=, fetcher_id=, fetch_offset=, error=, leader_hw=,
    leader_log_start_offset=, bytes=, record_count=, diverging_epoch=, diverging_end_offset=,
    response_received_ms=)`."""
    return {"event_type": "fetch_response", "ts_ms": ts_ms, "broker_id": broker_id, "topic": topic,
            "partition": partition, "leader_epoch": leader_epoch, "leader_id": leader_id,
            "fetcher_id": fetcher_id, "fetch_offset": fetch_offset, "error": error, "leader_hw": leader_hw,
            "leader_log_start_offset": leader_log_start_offset, "bytes": size_bytes,
            "record_count": record_count, "diverging_epoch": diverging_epoch,
            "diverging_end_offset": diverging_end_offset, "response_received_ms": response_received_ms}


def _check_hot_builders() -> None:
    """Build one event with every positional builder and check it as `make_event` would."""
    samples = (
        append_event(0, 0, "t", 0, None, "leader", 0, 0, 1, 1, 0, 0, 1),
        hw_change_event(0, 0, "t", 0, None, "leader", 0, 1),
        follower_fetch_state_event(0, 0, "t", 0, None, 1, 0, 0, 0),
        fetch_event(0, 0, "t", 0, None, 1, 0, 0, None),
        fetch_response_event(0, 0, "t", 0, None, 1, 0, 0, "NONE", None, None, 0, 0, None, None, 0),
    )
    for ev in samples:
        payload = {k: v for k, v in ev.items() if k in _PAYLOAD_NAMES}
        if list(ev) != list(make_event(ev["event_type"], 0, 0, **payload)):
            raise UnknownEventFieldError(f"{ev['event_type']}: builder fields {list(ev)} are not in schemas.events")


_check_hot_builders()
