"""Each Spark invariant on tiny hand-built event frames: a violating run and a near-identical clean run.

Every test builds both runs into one frame (run `bad`, run `ok`) and expects violations from `bad` only,
with the invariant's numbers as `replication_core.checker` reports them (§ of the reference in each
invariant's docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

import jobs.invariants as inv
from schemas.audit import VIOLATION_SCHEMA

KEY_COLUMNS = ("run_id", "invariant", "severity", "replica", "event_id", "offset", "expected", "actual", "evidence")
KEY_SCHEMA = pa.schema([VIOLATION_SCHEMA.field(c) for c in KEY_COLUMNS])

Rows = list[dict[str, Any]]


def _timed(rows: Rows) -> Rows:
    return [{"ts_ms": 1000 + 10 * i, **r} for i, r in enumerate(rows)]


def _two_runs(events: Callable[..., DataFrame], bad: Rows, ok: Rows) -> DataFrame:
    return events(_timed(bad), run_id="bad").unionByName(events(_timed(ok), run_id="ok"))


def _keys(df: DataFrame) -> DataFrame:
    return df.select(*KEY_COLUMNS)


def leader(broker: int = 1, epoch: int = 1, isr: list[int] | None = None, **kw: Any) -> dict[str, Any]:
    """A become_leader leadership_change."""
    fields = dict(event_type="leadership_change", broker_id=broker, leader_epoch=epoch, action="become_leader",
                  leader_id=broker, isr=isr if isr is not None else [1, 2], replicas=[1, 2], leo=0, hw=0)
    return {**fields, **kw}


def append(base: int, last: int, broker: int = 1, epoch: int = 1, checksum: int = 7, role: str = "leader") -> dict:
    """An append of [base, last]."""
    return dict(event_type="append", broker_id=broker, leader_epoch=epoch, role=role, base_offset=base,
                last_offset=last, batch_leader_epoch=epoch, batch_checksum=checksum, leo=last + 1)


def hw(old: int, new: int, broker: int = 1, epoch: int = 1, role: str = "leader") -> dict[str, Any]:
    """An hw_change."""
    return dict(event_type="hw_change", broker_id=broker, leader_epoch=epoch, role=role, old_hw=old, hw=new)


def test_hw_monotonic_leader_flags_a_leader_hw_moving_back(events, expect) -> None:
    df = _two_runs(events,
                   [leader(), append(0, 4), hw(0, 3), hw(3, 2)],
                   [leader(), append(0, 4), hw(0, 3), hw(3, 4)])
    expect(_keys(inv.hw_monotonic_leader(df)),
           [("bad", "hw_monotonic_leader", "error", 1, 3, None, 3, 2, [0, 3])], KEY_SCHEMA)


def test_hw_monotonic_leader_ignores_a_follower_hw_moving_back(events, expect) -> None:
    follower = dict(leader(), action="become_follower", leader_id=2)
    df = _two_runs(events, [leader(), append(0, 4), hw(0, 3), hw(3, 2)],
                   [follower, append(0, 4, role="follower"), hw(0, 3, role="follower"), hw(3, 2, role="follower")])
    expect(_keys(inv.hw_monotonic_leader(df)),
           [("bad", "hw_monotonic_leader", "error", 1, 3, None, 3, 2, [0, 3])], KEY_SCHEMA)


def test_hw_within_log_flags_hw_above_leo_and_below_log_start(events, expect) -> None:
    lso = dict(event_type="log_start_offset_change", broker_id=1, leader_epoch=1, role="follower",
               old_log_start_offset=0, log_start_offset=2)
    df = _two_runs(events,
                   [append(0, 2, role="follower"), hw(0, 5, role="follower"), lso, hw(5, 1, role="follower")],
                   [append(0, 2, role="follower"), hw(0, 3, role="follower"), lso, hw(3, 2, role="follower")])
    expect(_keys(inv.hw_within_log(df)),
           [("bad", "hw_within_log", "error", 1, 1, 5, 3, 5, [1]),
            ("bad", "hw_within_log", "error", 1, 3, 1, 2, 1, [3])], KEY_SCHEMA)


def test_hw_within_log_reads_the_log_start_raised_after_a_partial_truncation(events, expect) -> None:
    # A partial truncation lowers the LSO (3 -> 2); a later log_start_offset_change raises it again (4): the
    # earlier lowering no longer counts, so an HW of 3 is below the log start.
    def lso(old: int, new: int) -> dict[str, Any]:
        return dict(event_type="log_start_offset_change", broker_id=1, leader_epoch=1, role="follower",
                    old_log_start_offset=old, log_start_offset=new)
    trunc = dict(event_type="truncation", broker_id=1, leader_epoch=1, old_leo=5, truncate_offset=2,
                 reason="high_watermark", hw=0)
    head = [append(0, 4, role="follower"), lso(0, 3), trunc, append(2, 6, role="follower"), lso(2, 4)]
    df = _two_runs(events, [*head, hw(0, 3, role="follower")], [*head, hw(0, 5, role="follower")])
    expect(_keys(inv.hw_within_log(df)),
           [("bad", "hw_within_log", "error", 1, 5, 3, 4, 3, [5])], KEY_SCHEMA)


def test_leader_no_truncation_flags_a_leader_truncating_but_not_after_a_restart(events, expect) -> None:
    trunc = dict(event_type="truncation", broker_id=1, leader_epoch=1, old_leo=5, truncate_offset=3,
                 reason="high_watermark", hw=3)
    restart = dict(event_type="broker_lifecycle", broker_id=1, action="restart", topic=None, partition=None)
    df = _two_runs(events, [leader(), append(0, 4), trunc], [leader(), append(0, 4), restart, trunc])
    expect(_keys(inv.leader_no_truncation(df)),
           [("bad", "leader_no_truncation", "error", 1, 2, None, 5, 3, [0, 2])], KEY_SCHEMA)


def _isr(state: str, old: list[int], new: list[int], action: str = "shrink") -> dict[str, Any]:
    return dict(event_type="isr_change", broker_id=1, leader_epoch=1, action=action, old_isr=old, isr=new,
                isr_state=state)


def test_isr_single_inflight_flags_a_second_proposal_while_one_is_pending(events, expect) -> None:
    df = _two_runs(events,
                   [leader(isr=[1, 2, 3]), _isr("proposed", [1, 2, 3], [1, 2]), _isr("proposed", [1, 2, 3], [1, 3])],
                   [leader(isr=[1, 2, 3]), _isr("proposed", [1, 2, 3], [1, 2]), _isr("committed", [1, 2, 3], [1, 2]),
                    _isr("proposed", [1, 2], [1])])
    expect(_keys(inv.isr_single_inflight(df)),
           [("bad", "isr_single_inflight", "error", 1, 2, None, 1, None, [1, 2])], KEY_SCHEMA)


def test_isr_nonempty_flags_leaderless_and_empty_isrs(events, expect) -> None:
    election = dict(event_type="leader_election", broker_id=0, leader_epoch=2, action="clean", leader_id=1,
                    partition_epoch=2, replicas=[1, 2])
    df = _two_runs(events,
                   [leader(isr=[2]), dict(election, isr=[]), _isr("committed", [2], [2])],
                   [leader(isr=[1, 2]), dict(election, isr=[1]), _isr("committed", [1, 2], [1])])
    expect(_keys(inv.isr_nonempty(df)),
           [("bad", "isr_nonempty", "error", 1, 0, None, None, 1, [0]),
            ("bad", "isr_nonempty", "error", 1, 1, None, None, 0, [1]),
            ("bad", "isr_nonempty", "error", 1, 2, None, None, 1, [2])], KEY_SCHEMA)


def test_leader_epoch_monotonic_flags_repeated_election_epochs_and_two_leaders(events, expect) -> None:
    election = dict(event_type="leader_election", broker_id=0, action="clean", partition_epoch=1, isr=[1, 2],
                    replicas=[1, 2])
    df = _two_runs(events,
                   [dict(election, leader_id=1, leader_epoch=2), dict(election, leader_id=2, leader_epoch=2)],
                   [dict(election, leader_id=1, leader_epoch=2), dict(election, leader_id=2, leader_epoch=3)])
    expect(_keys(inv.leader_epoch_monotonic(df)),
           [("bad", "leader_epoch_monotonic", "error", None, 1, None, 2, 2, [0, 1]),
            ("bad", "leader_epoch_monotonic", "error", 2, 1, None, 1, 2, [0, 1])], KEY_SCHEMA)


def test_leader_epoch_monotonic_flags_a_replica_going_back_in_epoch(events, expect) -> None:
    follower = dict(leader(), action="become_follower", leader_id=2)
    df = _two_runs(events, [leader(epoch=3), dict(follower, leader_epoch=2)],
                   [leader(epoch=3), dict(follower, leader_epoch=4)])
    expect(_keys(inv.leader_epoch_monotonic(df)),
           [("bad", "leader_epoch_monotonic", "error", 1, 1, None, 3, 2, [0, 1])], KEY_SCHEMA)


def test_acked_write_lost_flags_an_ack_missing_on_the_final_leader(events, expect) -> None:
    ack = dict(event_type="produce_ack", broker_id=1, leader_epoch=1, acks=-1, error="NONE", base_offset=0,
               last_offset=1, batch_checksum=11)
    new_leader = leader(broker=2, epoch=2)
    bad = [leader(), append(0, 1, checksum=11), ack, new_leader]
    ok = [leader(), append(0, 1, checksum=11), ack, append(0, 1, broker=2, checksum=11, role="follower"),
          dict(new_leader, leo=2)]
    expect(_keys(inv.acked_write_lost(_two_runs(events, bad, ok))),
           [("bad", "acked_write_lost", "error", 2, -1, 0, 11, -1, [1, 2])], KEY_SCHEMA)


def test_acked_write_lost_after_an_unclean_election_is_a_warning(events, expect) -> None:
    ack = dict(event_type="produce_ack", broker_id=1, leader_epoch=1, acks=-1, error="NONE", base_offset=0,
               last_offset=1, batch_checksum=11)
    unclean = dict(event_type="leader_election", broker_id=0, leader_epoch=2, action="unclean", leader_id=2,
                   isr=[2], replicas=[1, 2], partition_epoch=2)
    bad = [leader(), append(0, 1, checksum=11), ack, unclean, leader(broker=2, epoch=2, isr=[2])]
    ok = [leader(), append(0, 1, checksum=11), ack, dict(unclean, action="clean"), leader(broker=2, epoch=2, isr=[2])]
    expect(_keys(inv.acked_write_lost(_two_runs(events, bad, ok))),
           [("bad", "acked_write_lost", "warning", 2, -1, 0, 11, -1, [3, 1, 2]),
            ("ok", "acked_write_lost", "error", 2, -1, 0, 11, -1, [1, 2])], KEY_SCHEMA)


def test_epoch_cache_monotonic_flags_a_batch_epoch_below_the_previous_record(events, expect) -> None:
    follower = dict(leader(epoch=2), action="become_follower", leader_id=2)
    df = _two_runs(events,
                   [follower, append(0, 1, epoch=2, role="follower"), append(2, 3, epoch=1, role="follower")],
                   [follower, append(0, 1, epoch=2, role="follower"), append(2, 3, epoch=3, role="follower")])
    expect(_keys(inv.epoch_cache_monotonic(df)),
           [("bad", "epoch_cache_monotonic", "error", 1, 2, 2, 2, 1, [1, 2])], KEY_SCHEMA)


def test_epoch_cache_monotonic_flags_a_leader_stamping_another_epoch(events, expect) -> None:
    df = _two_runs(events, [leader(epoch=2), append(0, 1, epoch=1)], [leader(epoch=2), append(0, 1, epoch=2)])
    expect(_keys(inv.epoch_cache_monotonic(df)),
           [("bad", "epoch_cache_monotonic", "error", 1, 1, 0, 2, 1, [0, 1])], KEY_SCHEMA)


def test_hw_frozen_under_min_isr_flags_an_hw_advance_with_too_small_an_isr(events, expect) -> None:
    config = dict(event_type="broker_config", broker_id=1, topic=None, partition=None,
                  config={"min.insync.replicas": "2", "topic.t.min.insync.replicas": "3"})
    df = _two_runs(events,
                   [config, leader(isr=[1, 2], replicas=[1, 2, 3]), append(0, 1), hw(0, 2)],
                   [config, leader(isr=[1, 2, 3], replicas=[1, 2, 3]), append(0, 1), hw(0, 2)])
    expect(_keys(inv.hw_frozen_under_min_isr(df)),
           [("bad", "hw_frozen_under_min_isr", "error", 1, 3, None, 3, 2, [0, 3])], KEY_SCHEMA)
