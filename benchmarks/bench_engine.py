"""Engine hot-path benchmark: leader append + follower fetch + HW update round trips per second.

One round trip = the leader appends a one-record batch (`Partition.append_records_to_leader`), the
follower fetches from its LEO (`Partition.fetch_records` on the leader: epoch checks, read, follower
state update, ISR check, leader HW advance), appends the batch (`Log.append_as_follower`) and applies
the leader's HW (`Log.update_high_watermark`). Measured on one core, single thread, for:

* `partition`   - the Partition/Log layer directly, events off (the state machines alone);
* `partition+events` - the same with a schema event list attached (every state change builds an event);
* `replica_manager` - through `ReplicaManager.append_records` / `fetch_messages` with the fetcher's
  request/response value types (the path the simulator drives), events off.

Timing uses `time.process_time()` (CPU seconds of this process), so a busy machine slows the figure
less than wall-clock timing would; the best of `--repeats` runs is printed.

Run: `python benchmarks/bench_engine.py [--rounds N] [--repeats R] [--out FILE]`. Prints one line per
variant and stores the figures (with the commit measured and the load average) as JSON in
`benchmarks/results/engine-<UTC date>.json` (or `--out`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _meta import commit_measured  # benchmarks/ is on sys.path when a script runs from it

from replication_core.config import ReplicationConfig
from replication_core.event_log import EventLog
from replication_core.leader_endpoint import FetchPartitionData, FetchRequest
from replication_core.log import Log
from replication_core.partition import Partition, PartitionRegistration
from replication_core.partition_fetch_state import TopicPartition
from replication_core.replica_manager import LeaderAndIsrRequest, ReplicaManager

ROOT = Path(__file__).resolve().parents[1]
TARGET_ROUND_TRIPS_PER_S = 200_000
LEADER, FOLLOWER = 1, 2
REG = PartitionRegistration(LEADER, 1, (LEADER, FOLLOWER), (LEADER, FOLLOWER), 1)


def partition_round_trips(rounds: int, with_events: bool) -> float:
    """Round trips per second through Partition (leader) and Log (follower)."""
    events = EventLog() if with_events else None
    cfg = ReplicationConfig()
    leader = Partition("bench", 0, LEADER, cfg, events=events)
    leader.make_leader(REG, 0)
    follower_log = Log("bench", 0, FOLLOWER, events=events)
    append = leader.append_records_to_leader
    fetch = leader.fetch_records
    f_append = follower_log.append_as_follower
    f_hw = follower_log.update_high_watermark
    now = 1_000_000
    start = time.process_time()
    for i in range(rounds):
        now += 1
        append(1, 100, i, 1, now)
        leo = follower_log.log_end_offset
        info = fetch(FOLLOWER, leo, 1_048_576, now, current_leader_epoch=1, last_fetched_epoch=1,
                     follower_log_start_offset=0)
        f_append(info.batches, now)
        f_hw(info.high_watermark, now)
        if events is not None and len(events) > 100_000:
            events.clear()  # a driver drains the log; keep memory flat
    elapsed = time.process_time() - start
    assert follower_log.log_end_offset == rounds and leader.log.high_watermark == rounds - 1
    return rounds / elapsed


def replica_manager_round_trips(rounds: int) -> float:
    """Round trips per second through ReplicaManager with FetchRequest / FetchResponse values."""
    tp = TopicPartition("bench", 0)
    rm = ReplicaManager(LEADER, ReplicationConfig())
    rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, {tp: REG}), 0)
    follower_log = Log("bench", 0, FOLLOWER)
    now = 1_000_000
    start = time.process_time()
    for i in range(rounds):
        now += 1
        rm.append_records(tp, 1, 100, i, 1, now)
        req = FetchRequest(FOLLOWER, -1, 0, 1, 10_485_760,
                           {tp: FetchPartitionData(follower_log.log_end_offset, 0, 1_048_576, 1, 1)})
        resp = rm.fetch_messages(req, now)
        assert resp is not None
        part = resp.partitions[tp]
        follower_log.append_as_follower(part.batches, now)
        follower_log.update_high_watermark(part.high_watermark, now)
    elapsed = time.process_time() - start
    assert follower_log.log_end_offset == rounds
    return rounds / elapsed


def best_of(fn: Callable[[], float], repeats: int) -> float:
    """Best of `repeats` runs (least disturbed by the machine)."""
    gc.collect()
    return max(fn() for _ in range(repeats))


def _commit() -> str | None:
    """The commit measured (see `_meta.commit_measured`)."""
    return commit_measured("replication_core")


def main() -> None:
    """Print round trips per second for each variant and store them as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="result JSON (default benchmarks/results/engine-<date>.json)")
    args = ap.parse_args()
    n = args.rounds
    load_start = os.getloadavg()
    commit = _commit()  # before the runs: the code measured
    print(f"rounds per run: {n}, best of {args.repeats}")
    figures: dict[str, float] = {}
    for name, fn in (("partition", lambda: partition_round_trips(n, False)),
                     ("partition+events", lambda: partition_round_trips(n, True)),
                     ("replica_manager", lambda: replica_manager_round_trips(n))):
        figures[name] = best_of(fn, args.repeats)
        print(f"{name:<17} {figures[name]:>12,.0f} round trips/s")
    load_end = os.getloadavg()
    verdict = "met" if figures["partition"] >= TARGET_ROUND_TRIPS_PER_S else "NOT met"
    print(f"target >= {TARGET_ROUND_TRIPS_PER_S:,} round trips/s (partition, CPU time): {verdict}")
    print(f"load average (1/5/15 min) at start {'/'.join(f'{x:.1f}' for x in load_start)}, "
          f"at end {'/'.join(f'{x:.1f}' for x in load_end)}")
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    result = {
        "benchmark": "engine",
        "date_utc": date,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "commit": commit,
        "command": " ".join(sys.argv),
        "rounds": n,
        "repeats": args.repeats,
        "round_trips_per_cpu_s": {k: round(v) for k, v in figures.items()},
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in load_end],
        "target_round_trips_per_s": TARGET_ROUND_TRIPS_PER_S,
    }
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"engine-{date}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
