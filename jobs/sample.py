"""A small, hand-made landing set: one partition replicated on three brokers, plus bad records.

It stands in for the simulator until `replog simulate` exists: a leader election, appends on the
leader, follower fetches and appends, HW advances, an ISR shrink and expand — and, in a separate
file, a few records that ingest must quarantine (so the demo shows both paths).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.events import EVENT_SCHEMA, SCHEMA_VERSION

RUN_ID = "sample-run-1"
TOPIC = "orders"


def sample_events() -> list[dict[str, Any]]:
    """The good events, in emission order, with the envelope filled."""
    evs: list[dict[str, Any]] = []

    def add(event_type: str, ts: int, broker: int, **payload: Any) -> None:
        base = {"event_type": event_type, "ts_ms": ts, "broker_id": broker, "topic": TOPIC, "partition": 0,
                "leader_epoch": 1}
        evs.append({**base, **payload})

    add("leader_election", 0, 0, action="clean", leader_id=1, partition_epoch=1, isr=[1, 2, 3], replicas=[1, 2, 3])
    add("leadership_change", 5, 1, action="become_leader", leader_id=1, partition_epoch=1, isr=[1, 2, 3],
        replicas=[1, 2, 3], leo=0, hw=0)
    for b in (2, 3):
        add("leadership_change", 6, b, action="become_follower", leader_id=1, partition_epoch=1,
            isr=[1, 2, 3], replicas=[1, 2, 3], leo=0, hw=0)
    hw = 0
    for i in range(10):
        t = 100 + i * 100
        base, last = i * 5, i * 5 + 4
        add("append", t, 1, role="leader", base_offset=base, last_offset=last, record_count=5, bytes=500,
            batch_leader_epoch=1, batch_checksum=1000 + i, leo=last + 1)
        add("produce_ack", t, 1, acks=-1, base_offset=base, last_offset=last, batch_checksum=1000 + i,
            error="NONE")
        followers = (2,) if i >= 6 else (2, 3)  # broker 3 stalls after batch 6
        for b in followers:
            add("fetch", t + 10, b, leader_id=1, fetcher_id=0, fetch_offset=base, last_fetched_epoch=1)
            add("follower_fetch_state", t + 11, 1, follower_id=b, fetch_offset=base, last_caught_up_time_ms=t,
                leo=last + 1)
            add("fetch_response", t + 12, b, leader_id=1, fetcher_id=0, fetch_offset=base, error="NONE",
                leader_hw=hw, leader_log_start_offset=0, bytes=500, record_count=5, response_received_ms=t + 12)
            add("append", t + 13, b, role="follower", base_offset=base, last_offset=last, record_count=5,
                bytes=500, batch_leader_epoch=1, batch_checksum=1000 + i, leo=last + 1)
        add("hw_change", t + 14, 1, role="leader", old_hw=hw, hw=last + 1)
        hw = last + 1
    add("isr_change", 31_000, 1, action="shrink", old_isr=[1, 2, 3], isr=[1, 2], isr_state="proposed",
        reason="lagging", out_of_sync_replicas=[{"replica_id": 3, "leo": 30, "last_caught_up_time_ms": 700}])
    add("isr_change", 31_050, 1, action="shrink", old_isr=[1, 2, 3], isr=[1, 2], isr_state="committed",
        partition_epoch=2, reason="lagging")
    for i, e in enumerate(evs):
        e.update({"schema_version": SCHEMA_VERSION, "source": "engine", "run_id": RUN_ID, "event_id": i})
    return evs


BAD_LINES = [
    '{"schema_version": "1.0", "source": "engine", "run_id": "sample-run-1", "event_id": 9001, "ts_ms": 5',
    "this is not json",
    json.dumps({"schema_version": "1.0", "source": "engine", "run_id": RUN_ID, "event_id": 9002, "ts_ms": 10,
                "broker_id": 1, "event_type": "append", "topic": TOPIC, "partition": 0, "leader_epoch": 1,
                "role": "leader", "base_offset": "12", "last_offset": 14, "record_count": 3, "bytes": 1,
                "batch_leader_epoch": 1, "batch_checksum": 7, "leo": 15}),
    json.dumps({"schema_version": "1.0", "source": "engine", "run_id": RUN_ID, "event_id": 9003, "ts_ms": 10,
                "broker_id": 1, "event_type": "hw_jump", "topic": TOPIC, "partition": 0}),
]


def write_sample(out: Path) -> list[Path]:
    """Write the sample as JSON Lines (first half, plus the bad file) and Parquet (second half)."""
    out.mkdir(parents=True, exist_ok=True)
    evs = sample_events()
    half = len(evs) // 2
    jsonl = out / "events-000.jsonl"
    jsonl.write_text("".join(json.dumps(e) + "\n" for e in evs[:half]), encoding="utf-8")
    parquet = out / "events-001.parquet"
    rows = [{c: e.get(c) for c in EVENT_SCHEMA.names} for e in evs[half:]]
    pq.write_table(pa.Table.from_pylist(rows, schema=EVENT_SCHEMA), parquet)
    bad = out / "events-bad.jsonl"
    bad.write_text("\n".join(BAD_LINES) + "\n", encoding="utf-8")
    return [jsonl, parquet, bad]
