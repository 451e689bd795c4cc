"""Every event the simulator writes satisfies the event schema (`schemas.events`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from replication_core.sim.cli import main
from replication_core.sim.writer import events_to_table
from schemas.events import ENVELOPE_REQUIRED, EVENT_SCHEMA, SCHEMA_VERSION, payload_problems
from tests.sim.helpers import SCENARIOS, run_named


def check_event(ev: dict[str, Any]) -> None:
    """Required columns of the envelope and of the event type, allowed values, non-negative numbers."""
    for name in ENVELOPE_REQUIRED:
        assert ev.get(name) is not None, f"envelope without {name}: {ev}"
    assert ev.get("broker_id") is not None, ev
    assert payload_problems(ev) == [], ev


@pytest.mark.parametrize("name", ["leader-crash", "kip-279-fast-failover", "throttled-reassignment"])
def test_written_parquet_has_the_event_schema_and_required_fields(tmp_path: Path, name: str) -> None:
    """Parquet files carry EVENT_SCHEMA; every row passes `check_event`; event ids run 0..n-1."""
    assert main(["--scenario", str(SCENARIOS / f"{name}.yaml"), "--out", str(tmp_path), "--duration-ms",
                 "20000"]) == 0
    table = pq.read_table(tmp_path / "events")
    assert table.schema.remove_metadata().equals(EVENT_SCHEMA.remove_metadata())
    rows = table.to_pylist()
    assert [r["event_id"] for r in rows] == list(range(len(rows)))
    assert {r["schema_version"] for r in rows} == {SCHEMA_VERSION} and {r["source"] for r in rows} == {"engine"}
    for r in rows:
        check_event({k: (dict(v) if k == "config" and v is not None else v) for k, v in r.items()})
    types = {r["event_type"] for r in rows}
    assert {"broker_config", "broker_lifecycle", "leader_election", "produce_ack", "append", "hw_change"} <= types


def test_events_convert_to_an_arrow_table_of_the_schema() -> None:
    """An in-memory run's events (envelope added) convert with EVENT_SCHEMA, per event type."""
    _, events, _ = run_named("leader-crash", duration_ms=30000)
    stamped = [dict(ev, schema_version=SCHEMA_VERSION, source="engine", run_id="r", event_id=i)
               for i, ev in enumerate(events)]
    table = events_to_table(stamped)
    assert table.schema.equals(EVENT_SCHEMA) and table.num_rows == len(events)
    for ev in stamped:
        check_event(ev)


def test_acks_all_acknowledgements_carry_the_checksum_the_replicas_appended() -> None:
    """Each acknowledged acks=all batch's checksum is on the leader's and the followers' append events."""
    _, events, _ = run_named("steady-state", duration_ms=5000)
    appended: dict[tuple[str, int, int], set[int]] = {}
    for ev in events:
        if ev["event_type"] == "append":
            appended.setdefault((ev["topic"], ev["partition"], ev["batch_checksum"]), set()).add(ev["broker_id"])
    acks = [ev for ev in events if ev["event_type"] == "produce_ack" and ev["acks"] == -1 and ev["error"] == "NONE"]
    assert acks
    for ack in acks:
        replicas = appended[(ack["topic"], ack["partition"], ack["batch_checksum"])]
        assert len(replicas) >= 2, ack  # min.insync.replicas=2: leader + at least one follower
