"""Deterministic generator of realistic landing files for the ingest benchmark.

It plays the part of the simulator: a few topics of a few partitions each, replicated on three
brokers, and for every partition the replication flow the engine emits (leader append, produce
ack, follower fetch / fetch response / follower append / follower fetch state, HW advance), with
the rarer events mixed in (quota throttling, log start offset moves, ISR shrink and expand, leader
elections with leadership changes, follower truncation and fetcher changes, broker lifecycle and
config). Every event is valid under `schemas.events` and `jobs.validate`, so an ingest of these
files keeps every record: the benchmark measures the good path.

The same events are written twice, rolled into files of `rows_per_file` events: as Parquet (with
pyarrow and `schemas.events.EVENT_SCHEMA`) and as JSON Lines (stdlib `json`, absent fields left out
as the engine writes them). Same seed, same bytes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.events import EVENT_SCHEMA, SCHEMA_VERSION

TOPICS = ("orders", "payments", "clicks", "inventory")
PARTITIONS_PER_TOPIC = 4
BROKERS = (1, 2, 3)
CONTROLLER = 1
NUM_FETCHERS = 2
START_TS_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
REPLICA_CONFIG = {
    "replica.lag.time.max.ms": "30000",
    "num.replica.fetchers": str(NUM_FETCHERS),
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
}

Event = dict[str, Any]


@dataclass
class _Partition:
    """The replication state of one partition, as far as the events need it."""

    topic: str
    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    leo: int = 0
    hw: int = 0
    log_start: int = 0
    checksum: int = 0

    @property
    def followers(self) -> list[int]:
        """The in-sync followers (the ones that fetch and append in this model)."""
        return [b for b in self.isr if b != self.leader]


class EventGenerator:
    """An endless, deterministic stream of valid replication events (see the module docstring)."""

    def __init__(self, seed: int = 42, events_per_run: int = 250_000) -> None:
        self.rng = random.Random(seed)
        self.events_per_run = events_per_run
        self.run = 0
        self.event_id = 0
        self.ts = START_TS_MS
        self.partitions: list[_Partition] = []
        for t, topic in enumerate(TOPICS):
            for i in range(PARTITIONS_PER_TOPIC):
                leader = BROKERS[(t + i) % len(BROKERS)]
                replicas = [leader, *[b for b in BROKERS if b != leader]]
                self.partitions.append(_Partition(topic, i, replicas, leader, isr=list(replicas)))

    # --- envelope -----------------------------------------------------------------------------

    def _emit(self, event_type: str, broker: int, p: _Partition | None, **payload: Any) -> Event:
        if self.event_id >= self.events_per_run:
            self.run += 1
            self.event_id = 0
        self.ts += self.rng.randint(0, 3)
        ev: Event = {
            "schema_version": SCHEMA_VERSION,
            "source": "engine",
            "run_id": f"bench-run-{self.run:03d}",
            "event_id": self.event_id,
            "ts_ms": self.ts,
            "broker_id": broker,
            "event_type": event_type,
        }
        if p is not None:
            ev.update(topic=p.topic, partition=p.index, leader_epoch=p.leader_epoch)
        ev.update(payload)
        self.event_id += 1
        return ev

    def _fetcher_id(self, p: _Partition) -> int:
        return (TOPICS.index(p.topic) * 31 + p.index) % NUM_FETCHERS

    # --- flows --------------------------------------------------------------------------------

    def _batch(self, p: _Partition) -> Iterator[Event]:
        """One produced batch: leader append, ack, and each in-sync follower replicating it."""
        rng = self.rng
        n = rng.randint(1, 200)
        size = n * rng.randint(80, 1200)
        base, last = p.leo, p.leo + n - 1
        p.checksum = rng.getrandbits(32)
        p.leo = last + 1
        yield self._emit("append", p.leader, p, role="leader", base_offset=base, last_offset=last, record_count=n,
                         bytes=size, batch_leader_epoch=p.leader_epoch, batch_checksum=p.checksum, leo=p.leo)
        acks = rng.choice((-1, -1, -1, 1, 0))
        yield self._emit("produce_ack", p.leader, p, acks=acks, base_offset=base, last_offset=last,
                         batch_checksum=p.checksum, error="NONE")
        fid = self._fetcher_id(p)
        for b in p.followers:
            yield self._emit("fetch", b, p, leader_id=p.leader, fetcher_id=fid, fetch_offset=base,
                             last_fetched_epoch=p.leader_epoch)
            yield self._emit("fetch_response", b, p, leader_id=p.leader, fetcher_id=fid, fetch_offset=base,
                             error="NONE", leader_hw=p.hw, leader_log_start_offset=p.log_start, bytes=size,
                             record_count=n)
            yield self._emit("append", b, p, role="follower", base_offset=base, last_offset=last, record_count=n,
                             bytes=size, batch_leader_epoch=p.leader_epoch, batch_checksum=p.checksum, leo=p.leo)
            yield self._emit("follower_fetch_state", p.leader, p, follower_id=b, fetch_offset=p.leo,
                             last_caught_up_time_ms=self.ts, leo=p.leo)
        if len(p.isr) > 1:
            old = p.hw
            p.hw = p.leo
            yield self._emit("hw_change", p.leader, p, role="leader", old_hw=old, hw=p.hw)
            for b in p.followers:
                yield self._emit("hw_change", b, p, role="follower", old_hw=old, hw=p.hw)

    def _throttle(self, p: _Partition) -> Iterator[Event]:
        for b in p.followers[:1]:
            bound = float(self.rng.choice((1_000_000, 5_000_000, 10_000_000)))
            yield self._emit("quota_throttle", b, p, role="follower", follower_id=b,
                             bytes=self.rng.randint(1_000, 1_000_000), measured_rate=bound * self.rng.uniform(1.0, 1.5),
                             quota_bound=bound)

    def _retention(self, p: _Partition) -> Iterator[Event]:
        if p.hw <= p.log_start:
            return
        old = p.log_start
        p.log_start = self.rng.randint(old + 1, p.hw)
        for b in p.isr:
            role = "leader" if b == p.leader else "follower"
            yield self._emit("log_start_offset_change", b, p, role=role, old_log_start_offset=old,
                             log_start_offset=p.log_start)

    def _isr_shrink_expand(self, p: _Partition) -> Iterator[Event]:
        if not p.followers:
            return
        out = p.followers[-1]
        old = list(p.isr)
        new = [b for b in old if b != out]
        oos = [{"replica_id": out, "leo": p.leo, "last_caught_up_time_ms": self.ts - 30_000}]
        yield self._emit("isr_change", p.leader, p, action="shrink", old_isr=old, isr=new, isr_state="proposed",
                         reason="lagging", out_of_sync_replicas=oos)
        p.partition_epoch += 1
        p.isr = new
        yield self._emit("isr_change", p.leader, p, action="shrink", old_isr=old, isr=new, isr_state="committed",
                         partition_epoch=p.partition_epoch, reason="lagging", out_of_sync_replicas=oos)
        yield from self._batch(p)
        back = [b for b in p.replicas if b in new or b == out]
        yield self._emit("isr_change", p.leader, p, action="expand", old_isr=new, isr=back, isr_state="proposed",
                         reason="caught_up")
        p.partition_epoch += 1
        p.isr = back
        yield self._emit("isr_change", p.leader, p, action="expand", old_isr=new, isr=back, isr_state="committed",
                         partition_epoch=p.partition_epoch, reason="caught_up")

    def _election(self, p: _Partition) -> Iterator[Event]:
        old_leader = p.leader
        candidates = [b for b in p.isr if b != old_leader] or [old_leader]
        p.leader = self.rng.choice(candidates)
        p.leader_epoch += 1
        p.partition_epoch += 1
        yield self._emit("leader_election", CONTROLLER, p, action=self.rng.choice(("clean", "preferred")),
                         leader_id=p.leader, partition_epoch=p.partition_epoch, isr=list(p.isr),
                         replicas=list(p.replicas), reason="election")
        for b in p.replicas:
            action = "become_leader" if b == p.leader else "become_follower"
            yield self._emit("leadership_change", b, p, action=action, leader_id=p.leader,
                             partition_epoch=p.partition_epoch, isr=list(p.isr), replicas=list(p.replicas),
                             leo=p.leo, hw=p.hw)
        if p.leo > p.hw:  # the old leader's unreplicated tail goes away
            yield self._emit("truncation", old_leader, p, old_leo=p.leo, truncate_offset=p.hw,
                             reason="high_watermark", hw=p.hw)
            p.leo = p.hw
        fid = self._fetcher_id(p)
        tp = [{"topic": p.topic, "partition": p.index, "fetch_offset": p.leo}]
        for b in p.followers:
            yield self._emit("fetcher_change", b, None, action="added", fetcher_id=fid, leader_id=p.leader,
                             partitions=tp)

    def _broker(self) -> Iterator[Event]:
        b = self.rng.choice(BROKERS)
        yield self._emit("broker_lifecycle", b, None, action=self.rng.choice(("start", "restart")))
        yield self._emit("broker_config", b, None, config=dict(REPLICA_CONFIG))

    def events(self) -> Iterator[Event]:
        """The stream: broker configs first, then batches with the rare events mixed in."""
        for b in BROKERS:
            yield self._emit("broker_config", b, None, config=dict(REPLICA_CONFIG))
        rng = self.rng
        while True:
            p = rng.choice(self.partitions)
            r = rng.random()
            if r < 0.02:
                yield from self._throttle(p)
            elif r < 0.03:
                yield from self._retention(p)
            elif r < 0.035:
                yield from self._isr_shrink_expand(p)
            elif r < 0.038:
                yield from self._election(p)
            elif r < 0.0385:
                yield from self._broker()
            yield from self._batch(p)


def _to_arrow(chunk: list[Event]) -> pa.Table:
    arrays = []
    for f in EVENT_SCHEMA:
        values = [e.get(f.name) for e in chunk]
        if f.name == "config":
            values = [None if v is None else list(v.items()) for v in values]
        arrays.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA)


def write_landing(
    parquet_dir: Path, jsonl_dir: Path, events: int, rows_per_file: int = 100_000, seed: int = 42
) -> dict[str, Any]:
    """Write `events` events as rolled Parquet files and the same events as rolled JSON Lines files.

    Returns a small manifest: counts, files, bytes, and how many events of each type.
    """
    parquet_dir.mkdir(parents=True, exist_ok=True)
    jsonl_dir.mkdir(parents=True, exist_ok=True)
    stream = EventGenerator(seed).events()
    by_type: dict[str, int] = {}
    runs: set[str] = set()
    written = 0
    files = 0
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    while written < events:
        n = min(rows_per_file, events - written)
        chunk = [next(stream) for _ in range(n)]
        for e in chunk:
            by_type[e["event_type"]] = by_type.get(e["event_type"], 0) + 1
            runs.add(e["run_id"])
        name = f"events-{files:05d}"
        pq.write_table(_to_arrow(chunk), parquet_dir / f"{name}.parquet")
        with open(jsonl_dir / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(dumps(e) + "\n" for e in chunk)
        written += n
        files += 1
    return {
        "events": written,
        "files": files,
        "rows_per_file": rows_per_file,
        "seed": seed,
        "runs": len(runs),
        "parquet_bytes": sum(p.stat().st_size for p in parquet_dir.glob("*.parquet")),
        "jsonl_bytes": sum(p.stat().st_size for p in jsonl_dir.glob("*.jsonl")),
        "by_type": dict(sorted(by_type.items())),
    }
