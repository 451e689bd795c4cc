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

Run: `python benchmarks/bench_engine.py [--rounds N] [--repeats R]`. Prints one line per variant.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

from replication_core.config import ReplicationConfig
from replication_core.leader_endpoint import FetchPartitionData, FetchRequest
from replication_core.log import Log
from replication_core.partition import Partition, PartitionRegistration
from replication_core.partition_fetch_state import TopicPartition
from replication_core.replica_manager import LeaderAndIsrRequest, ReplicaManager

LEADER, FOLLOWER = 1, 2
REG = PartitionRegistration(LEADER, 1, (LEADER, FOLLOWER), (LEADER, FOLLOWER), 1)


def partition_round_trips(rounds: int, with_events: bool) -> float:
    """Round trips per second through Partition (leader) and Log (follower)."""
    events: list[Any] | None = [] if with_events else None
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
            events.clear()  # a driver drains the list; keep memory flat
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


def main() -> None:
    """Print round trips per second for each variant."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n = args.rounds
    print(f"rounds per run: {n}, best of {args.repeats}")
    print(f"partition         {best_of(lambda: partition_round_trips(n, False), args.repeats):>12,.0f} round trips/s")
    print(f"partition+events  {best_of(lambda: partition_round_trips(n, True), args.repeats):>12,.0f} round trips/s")
    print(f"replica_manager   {best_of(lambda: replica_manager_round_trips(n), args.repeats):>12,.0f} round trips/s")


if __name__ == "__main__":
    main()
