"""The broker's periodic tasks and its fetcher threads under GC pauses and disk stalls, as Kafka runs them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replication_core.sim.cluster import Cluster, ListSink
from replication_core.sim.scenario import DEFAULT_START_MS, Fault
from tests.sim.helpers import run, scenario, watch

START_MS = DEFAULT_START_MS


def _isr_changes(events: list[dict[str, Any]], partition: int) -> list[tuple[int, str, str]]:
    return [(e["ts_ms"] - START_MS, e["action"], e["isr_state"]) for e in events
            if e["event_type"] == "isr_change" and e["partition"] == partition]


def test_isr_expiration_keeps_its_fixed_rate_after_a_gc_pause() -> None:
    """`isr-expiration` is scheduled at fixed rate (`KafkaScheduler.schedule` → `scheduleAtFixedRate`), every
    `replica.lag.time.max.ms / 2` = 5 s from the broker's start. Leader 1 pauses 4-6.5 s, so the 5 s run happens
    at 6.5 s; the later runs stay at 10, 15, 20 s. Follower 3's disk stalls at 10 s; it was last caught up just
    before, so the first run that finds it lagging more than 10 s is the one at 20 s. Re-arming from the late run
    (fixed delay) would run at 11.5, 16.5, 21.5 s and shrink at 21.5 s."""
    sc = scenario("slow-follower")
    pause = Fault(at_ms=4000, action="pause", broker=1, duration_ms=2500)
    _, events, _ = run(replace(sc, faults=(*sc.faults, pause), duration_ms=25_000))
    shrinks = [c for c in _isr_changes(events, 0) if c[1] == "shrink"]
    assert shrinks[0] == (20_000, "shrink", "proposed")


def _fetch_times(events: list[dict[str, Any]], broker: int) -> list[int]:
    return [e["ts_ms"] - START_MS for e in events if e["event_type"] == "fetch" and e["broker_id"] == broker]


def test_a_stalled_follower_with_nothing_to_append_keeps_fetching() -> None:
    """Kafka's fetcher thread blocks on a stalled disk only where it writes the log (the append, a truncation):
    building a fetch and processing an answer without records stay in memory. With no producer, follower 3's
    disk stall (10-35 s) leaves its fetches going; so it stays in the ISR."""
    sc = scenario("slow-follower")
    sc = replace(sc, producers=(), duration_ms=40_000)
    _, events, _ = run(sc)
    during = [t for t in _fetch_times(events, 3) if 10_000 < t < 35_000]
    assert len(during) > 20
    assert not [c for c in _isr_changes(events, 0) if c[1] == "shrink"]


def test_a_stalled_follower_blocks_on_the_first_answer_with_records() -> None:
    """With the producer running, follower 3's first answer with records after 10 s blocks its thread in the
    append until the disk recovers at 35 s: no fetch in between."""
    _, events, _ = run(replace(scenario("slow-follower"), duration_ms=40_000))
    times = _fetch_times(events, 3)
    assert not [t for t in times if 10_100 < t < 35_000]
    assert [t for t in times if t >= 35_000]


def test_an_idle_fetcher_waits_its_whole_backoff() -> None:
    """`maybeFetch` with no partition ready awaits `partitionMapCond` for `replica.fetch.backoff.ms` (1 s here), and
    only `addPartitions` signals it: a backed-off partition becoming ready earlier does not end the wait. At 20 s
    every partition of follower 3's fetcher from leader 1 is backed off until 20.3 s; its round after the fetch in
    flight finds none ready, so its next fetch goes a whole backoff after that round, not at 20.3 s."""
    sc = replace(scenario("slow-follower"), faults=(), duration_ms=25_000)
    cluster = Cluster(sc)
    at = START_MS + 20_000

    def back_off() -> None:
        (thread,) = [a.thread for key, a in cluster.brokers[3].actors.items() if key[0] == 1]
        for tp, state in list(thread.partition_states.items()):
            thread.partition_states.update(tp, state.with_delay(at + 300, 1000))

    cluster.queue.at(at, back_off)
    sink = ListSink()
    cluster.run(sink)
    first_after = min(e["ts_ms"] for e in sink.events
                      if e["event_type"] == "fetch" and e["broker_id"] == 3 and e["leader_id"] == 1
                      and e["ts_ms"] > at)
    assert first_after - at >= 1000



def _checkpoint_writes(sc: Any, broker: int) -> tuple[list[int], list[dict[str, Any]]]:
    """The times (ms after the start) at which `broker`'s HW checkpoint file was seen to change (a write that leaves
    every HW as it was is not seen), and the run's events. A write at T is seen at T or T + 1."""
    changes, events, _ = watch(sc, lambda cluster: lambda: dict(cluster.brokers[broker].disk.hw_checkpoint))
    return [t for t, _ in changes], events


def _first_metadata_ms(events: list[dict[str, Any]], broker: int, after_ms: int = 0) -> int:
    """When `broker` first applied partition states at or after `after_ms`: its first `leadership_change` then."""
    return min(e["ts_ms"] - START_MS for e in events
               if e["event_type"] == "leadership_change" and e["broker_id"] == broker
               and e["ts_ms"] - START_MS >= after_ms)


def _on_grid(seen: list[int], anchor_ms: int) -> bool:
    """Whether every change seen was written at `anchor_ms` + k x 5 s (seen then or a millisecond later)."""
    return all((t - anchor_ms) % 5_000 <= 1 for t in seen)


def test_the_hw_checkpoint_task_starts_at_the_first_metadata_and_keeps_its_period() -> None:
    """`ReplicaManager.startHighWatermarkCheckPointThread` schedules `highwatermark-checkpoint` with no delay and a
    period of `replica.high.watermark.checkpoint.interval.ms` (5 s) when the broker first applies partition
    metadata, not at the process start: broker 2's checkpoint is written a network trip after the start (the
    delivery creating the topic) and then every 5 s from there (the producers move the HWs, so each write changes
    it). With `hw_checkpoint_at_first_metadata: false` (replog before session 94) the first write came 5 s after
    the start."""
    sc = replace(scenario("leader-crash"), faults=(), duration_ms=16_000)
    seen, events = _checkpoint_writes(sc, 2)
    first = _first_metadata_ms(events, 2)
    assert 2 <= first < 100
    assert len(seen) == 4 and seen[0] - first <= 1 and _on_grid(seen, first)
    old_seen, _ = _checkpoint_writes(replace(sc, cluster=replace(sc.cluster, hw_checkpoint_at_first_metadata=False)), 2)
    assert len(old_seen) == 3 and old_seen[0] - 5_000 <= 1 and _on_grid(old_seen, 0)


def test_a_restarted_broker_checkpoints_from_its_first_metadata_publish() -> None:
    """After broker 1's power loss at 10 s and restart at 22 s, the new process's task starts at its first metadata
    publish (KRaft's `finishInitializingReplicaManager`, after the registration round trips), not 5 s after the
    restart: its checkpoint changes on that grid; with `hw_checkpoint_at_first_metadata: false` on the grid of the
    process start."""
    sc = replace(scenario("leader-crash"), duration_ms=40_000)
    seen, events = _checkpoint_writes(sc, 1)
    published = _first_metadata_ms(events, 1, after_ms=22_000)
    assert published >= 22_002
    after = [t for t in seen if t > 22_000]
    assert len(after) >= 2 and _on_grid(after, published)
    old = replace(sc, cluster=replace(sc.cluster, hw_checkpoint_at_first_metadata=False))
    old_seen, _ = _checkpoint_writes(old, 1)
    old_after = [t for t in old_seen if t > 22_000]
    assert len(old_after) >= 2 and _on_grid(old_after, 22_000)
