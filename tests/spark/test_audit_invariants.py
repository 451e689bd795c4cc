"""Each Spark invariant on tiny hand-built event frames: a violating run and a near-identical clean run.

Every case puts a violating run `bad` and its clean twin `ok` into the one audit of all hand-built cases
(`tests.spark.audit_cases`) and expects violations from `bad` only, with the invariant's numbers as
`replication_core.checker` reports them (§ of the reference in each invariant's docstring).
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import jobs.invariants as inv
from tests.spark.audit_cases import KEY_COLUMNS, Case, Rows, found, key_schema, reference, same_rows, timed
from tests.spark.conftest import make_events

KEY_SCHEMA = key_schema(KEY_COLUMNS)


def _case(name: str, invariant: str, bad: Rows, ok: Rows, expected: list[tuple]) -> Case:
    return Case(name, invariant, {"bad": timed(bad), "ok": timed(ok)}, expected)


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


def _isr(state: str, old: list[int], new: list[int], action: str = "shrink") -> dict[str, Any]:
    return dict(event_type="isr_change", broker_id=1, leader_epoch=1, action=action, old_isr=old, isr=new,
                isr_state=state)


def _lso(old: int, new: int) -> dict[str, Any]:
    return dict(event_type="log_start_offset_change", broker_id=1, leader_epoch=1, role="follower",
                old_log_start_offset=old, log_start_offset=new)


_FOLLOWER = dict(leader(), action="become_follower", leader_id=2)
_ACK = dict(event_type="produce_ack", broker_id=1, leader_epoch=1, acks=-1, error="NONE", base_offset=0,
            last_offset=1, batch_checksum=11)
_UNCLEAN = dict(event_type="leader_election", broker_id=0, leader_epoch=2, action="unclean", leader_id=2,
                isr=[2], replicas=[1, 2], partition_epoch=2)
_ELECTION = dict(event_type="leader_election", broker_id=0, action="clean", partition_epoch=1, isr=[1, 2],
                 replicas=[1, 2])
_TRUNC_PARTIAL = dict(event_type="truncation", broker_id=1, leader_epoch=1, old_leo=5, truncate_offset=2,
                      reason="high_watermark", hw=0)
# A partial truncation lowers the LSO (3 -> 2); a later log_start_offset_change raises it again (4): the
# earlier lowering no longer counts, so an HW of 3 is below the log start.
_LSO_RAISED = [append(0, 4, role="follower"), _lso(0, 3), _TRUNC_PARTIAL, append(2, 6, role="follower"), _lso(2, 4)]
_LOG_START_3 = [_FOLLOWER, append(0, 4, role="follower"), _lso(0, 3)]
_LEADER_TRUNC = dict(event_type="truncation", broker_id=1, leader_epoch=1, old_leo=5, truncate_offset=3,
                     reason="high_watermark", hw=3)
_RESTART = dict(event_type="broker_lifecycle", broker_id=1, action="restart", topic=None, partition=None)
_MIN_ISR = dict(event_type="broker_config", broker_id=1, topic=None, partition=None,
                config={"min.insync.replicas": "2", "topic.t.min.insync.replicas": "3"})

AUDIT_CASES: list[Case] = [
    # The clean twin reports an unchanged HW once: not moving is not moving back.
    _case("hw_monotonic_leader_flags_a_leader_hw_moving_back", "hw_monotonic_leader",
          [leader(), append(0, 4), hw(0, 3), hw(3, 2)],
          [leader(), append(0, 4), hw(0, 3), hw(3, 3), hw(3, 4)],
          [("bad", "hw_monotonic_leader", "error", 1, 3, None, 3, 2, [0, 3])]),
    _case("hw_monotonic_leader_ignores_a_follower_hw_moving_back", "hw_monotonic_leader",
          [leader(), append(0, 4), hw(0, 3), hw(3, 2)],
          [_FOLLOWER, append(0, 4, role="follower"), hw(0, 3, role="follower"), hw(3, 2, role="follower")],
          [("bad", "hw_monotonic_leader", "error", 1, 3, None, 3, 2, [0, 3])]),
    _case("hw_within_log_flags_hw_above_leo_and_below_log_start", "hw_within_log",
          [append(0, 2, role="follower"), hw(0, 5, role="follower"), _lso(0, 2), hw(5, 1, role="follower")],
          [append(0, 2, role="follower"), hw(0, 3, role="follower"), _lso(0, 2), hw(3, 2, role="follower")],
          [("bad", "hw_within_log", "error", 1, 1, 5, 3, 5, [1]),
           ("bad", "hw_within_log", "error", 1, 3, 1, 2, 1, [3])]),
    _case("hw_within_log_reads_the_log_start_raised_after_a_partial_truncation", "hw_within_log",
          [*_LSO_RAISED, hw(0, 3, role="follower")], [*_LSO_RAISED, hw(0, 5, role="follower")],
          [("bad", "hw_within_log", "error", 1, 5, 3, 4, 3, [5])]),
    # Broker 1 is added back with a new log (its old replica, log start 3, was deleted without an event): the
    # new log starts at 0, so HW 1 on it is within the log. Found by the overlapping campaign (seed 510374).
    _case("hw_within_log_reads_the_new_log_of_a_replica_added_back", "hw_within_log",
          [*_LOG_START_3, hw(0, 1, role="follower")],
          [*_LOG_START_3, dict(_FOLLOWER, leader_epoch=2, leo=0, hw=0, adding_replicas=[1]),
           append(0, 0, epoch=2, role="follower"), hw(0, 1, epoch=2, role="follower")],
          [("bad", "hw_within_log", "error", 1, 3, 1, 3, 1, [3])]),
    _case("leader_no_truncation_flags_a_leader_truncating_but_not_after_a_restart", "leader_no_truncation",
          [leader(), append(0, 4), _LEADER_TRUNC], [leader(), append(0, 4), _RESTART, _LEADER_TRUNC],
          [("bad", "leader_no_truncation", "error", 1, 2, None, 5, 3, [0, 2])]),
    _case("isr_single_inflight_flags_a_second_proposal_while_one_is_pending", "isr_single_inflight",
          [leader(isr=[1, 2, 3]), _isr("proposed", [1, 2, 3], [1, 2]), _isr("proposed", [1, 2, 3], [1, 3])],
          [leader(isr=[1, 2, 3]), _isr("proposed", [1, 2, 3], [1, 2]), _isr("committed", [1, 2, 3], [1, 2]),
           _isr("proposed", [1, 2], [1])],
          [("bad", "isr_single_inflight", "error", 1, 2, None, 1, None, [1, 2])]),
    _case("isr_nonempty_flags_leaderless_and_empty_isrs", "isr_nonempty",
          [leader(isr=[2]), dict(_ELECTION, leader_epoch=2, leader_id=1, partition_epoch=2, isr=[]),
           _isr("committed", [2], [2])],
          [leader(isr=[1, 2]), dict(_ELECTION, leader_epoch=2, leader_id=1, partition_epoch=2, isr=[1]),
           _isr("committed", [1, 2], [1])],
          [("bad", "isr_nonempty", "error", 1, 0, None, None, 1, [0]),
           ("bad", "isr_nonempty", "error", 1, 1, None, None, 0, [1]),
           ("bad", "isr_nonempty", "error", 1, 2, None, None, 1, [2])]),
    _case("leader_epoch_monotonic_flags_repeated_election_epochs_and_two_leaders", "leader_epoch_monotonic",
          [dict(_ELECTION, leader_id=1, leader_epoch=2), dict(_ELECTION, leader_id=2, leader_epoch=2)],
          [dict(_ELECTION, leader_id=1, leader_epoch=2), dict(_ELECTION, leader_id=2, leader_epoch=3)],
          [("bad", "leader_epoch_monotonic", "error", None, 1, None, 2, 2, [0, 1]),
           ("bad", "leader_epoch_monotonic", "error", 2, 1, None, 1, 2, [0, 1])]),
    _case("leader_epoch_monotonic_flags_a_replica_going_back_in_epoch", "leader_epoch_monotonic",
          [leader(epoch=3), dict(_FOLLOWER, leader_epoch=2)], [leader(epoch=3), dict(_FOLLOWER, leader_epoch=4)],
          [("bad", "leader_epoch_monotonic", "error", 1, 1, None, 3, 2, [0, 1])]),
    _case("acked_write_lost_flags_an_ack_missing_on_the_final_leader", "acked_write_lost",
          [leader(), append(0, 1, checksum=11), _ACK, leader(broker=2, epoch=2)],
          [leader(), append(0, 1, checksum=11), _ACK, append(0, 1, broker=2, checksum=11, role="follower"),
           dict(leader(broker=2, epoch=2), leo=2)],
          [("bad", "acked_write_lost", "error", 2, -1, 0, 11, -1, [1, 2, 3])]),
    _case("acked_write_lost_after_an_unclean_election_is_a_warning", "acked_write_lost",
          [leader(), append(0, 1, checksum=11), _ACK, _UNCLEAN, leader(broker=2, epoch=2, isr=[2])],
          [leader(), append(0, 1, checksum=11), _ACK, dict(_UNCLEAN, action="clean"),
           leader(broker=2, epoch=2, isr=[2])],
          [("bad", "acked_write_lost", "warning", 2, -1, 0, 11, -1, [3, 1, 2, 4]),
           ("ok", "acked_write_lost", "error", 2, -1, 0, 11, -1, [1, 2, 4])]),
    # The final leader is the last become_leader of the highest epoch, not the last one: a broker whose
    # metadata was held up can apply an older epoch's LeaderAndIsr after the partition moved on. bad: the
    # epoch-3 leader (2) lacks the write, a stale epoch-2 become_leader of broker 1, which has it, comes last.
    # ok: the epoch-3 leader has it, a stale epoch-2 become_leader of broker 3, which has not, comes last.
    _case("acked_write_lost_takes_the_final_leader_of_the_highest_epoch", "acked_write_lost",
          [leader(), append(0, 1, checksum=11), _ACK, leader(broker=2, epoch=3), leader(epoch=2, leo=2)],
          [leader(), append(0, 1, checksum=11), _ACK, append(0, 1, broker=2, checksum=11, role="follower"),
           leader(broker=2, epoch=3, leo=2), leader(broker=3, epoch=2)],
          [("bad", "acked_write_lost", "error", 2, -1, 0, 11, -1, [1, 2, 3])]),
    # A truncation inside a batch removes the batch whole (LogSegment.truncateTo cuts at a batch boundary): the
    # final leader 2 holds no record at 0 after truncating its batch 0..3 to 1, so the ack is lost at 0 with
    # nothing there (-1), removed by the truncation (event 5). ok: the truncation falls on a batch boundary.
    # Found by the --reassigning --power differential (seed 532047 in the high-watermark mode).
    _case("acked_write_lost_reads_a_truncation_inside_a_batch_as_removing_the_batch", "acked_write_lost",
          [leader(), append(0, 1, checksum=11), _ACK, dict(_FOLLOWER, broker_id=2, leader_id=1),
           append(0, 3, broker=2, checksum=13, role="follower"), dict(_TRUNC_PARTIAL, broker_id=2, old_leo=4,
                                                                     truncate_offset=1),
           leader(broker=2, epoch=2, leo=1)],
          [leader(), append(0, 1, checksum=11), _ACK, dict(_FOLLOWER, broker_id=2, leader_id=1),
           append(0, 1, broker=2, checksum=11, role="follower"), append(2, 3, broker=2, checksum=13, role="follower"),
           dict(_TRUNC_PARTIAL, broker_id=2, old_leo=4), leader(broker=2, epoch=2, leo=2)],
          [("bad", "acked_write_lost", "error", 2, -1, 0, 11, -1, [1, 2, 6, 5])]),
    # A restart loads its log start offset from its checkpoint (reason log_load), which may be below the start it had:
    # what a raise since that checkpoint hid is the log's again. ok: DeleteRecords raised broker 1's start over the
    # acknowledged write (event 3), its crash (4) loaded it back at 0 (5), and it leads again with the write. bad: the
    # same crash also lost the write (a power failure's truncation, 5): lost at 0, a crash loss, so a warning.
    _case("acked_write_lost_reads_a_restarts_start_stepping_back_over_the_write", "acked_write_lost",
          [leader(), append(0, 1, checksum=11), _ACK, dict(_lso(0, 2), role="leader", reason="client_record_deletion"),
           dict(_RESTART, action="crash"), dict(_TRUNC_PARTIAL, old_leo=2, truncate_offset=0, reason="out_of_range"),
           dict(_lso(0, 0), reason="log_load"), _RESTART, leader(epoch=2, leo=0, isr=[1])],
          [leader(), append(0, 1, checksum=11), _ACK, dict(_lso(0, 2), role="leader", reason="client_record_deletion"),
           dict(_RESTART, action="crash"), dict(_lso(2, 0), reason="log_load"), _RESTART,
           leader(epoch=2, leo=2, isr=[1])],
          [("bad", "acked_write_lost", "warning", 1, -1, 0, 11, -1, [5, 1, 2])]),
    # An acks=1 write lost in a failover is an info finding, never excused (no unclean-election id leads its
    # evidence, unlike acked_write_lost's warning above); ok: the acks=1 write reached the next leader, and an
    # acks=all write lost there is acked_write_lost's, not this invariant's.
    _case("acks1_write_lost_is_an_info_finding_even_after_an_unclean_election", "acks1_write_lost",
          [leader(), append(0, 1, checksum=11), dict(_ACK, acks=1), _UNCLEAN, leader(broker=2, epoch=2, isr=[2])],
          [leader(), append(0, 1, checksum=11), dict(_ACK, acks=1), append(0, 1, broker=2, checksum=11,
                                                                            role="follower"),
           append(2, 2, checksum=12), dict(_ACK, base_offset=2, last_offset=2, batch_checksum=12),
           dict(leader(broker=2, epoch=2), leo=2)],
          [("bad", "acks1_write_lost", "info", 2, -1, 0, 11, -1, [1, 2, 4])]),
    _case("epoch_cache_monotonic_flags_a_batch_epoch_below_the_previous_record", "epoch_cache_monotonic",
          [dict(_FOLLOWER, leader_epoch=2), append(0, 1, epoch=2, role="follower"),
           append(2, 3, epoch=1, role="follower")],
          [dict(_FOLLOWER, leader_epoch=2), append(0, 1, epoch=2, role="follower"),
           append(2, 3, epoch=3, role="follower")],
          [("bad", "epoch_cache_monotonic", "error", 1, 2, 2, 2, 1, [1, 2])]),
    _case("epoch_cache_monotonic_flags_a_leader_stamping_another_epoch", "epoch_cache_monotonic",
          [leader(epoch=2), append(0, 1, epoch=1)], [leader(epoch=2), append(0, 1, epoch=2)],
          [("bad", "epoch_cache_monotonic", "error", 1, 1, 0, 2, 1, [0, 1])]),
    _case("hw_frozen_under_min_isr_flags_an_hw_advance_with_too_small_an_isr", "hw_frozen_under_min_isr",
          [_MIN_ISR, leader(isr=[1, 2], replicas=[1, 2, 3]), append(0, 1), hw(0, 2)],
          [_MIN_ISR, leader(isr=[1, 2, 3], replicas=[1, 2, 3]), append(0, 1), hw(0, 2)],
          [("bad", "hw_frozen_under_min_isr", "error", 1, 3, None, 3, 2, [0, 3])]),
    # Found at the end, dated when the write last left the leader in office (the latest become_leader of the highest
    # epoch; rows 10 ms apart from 1000), and naming that event after the ack. truncated: broker 2 truncated the write
    # while broker 1, in office, held it; it left with broker 2 taking office (event 7, 1070); crashed: the same through
    # broker 2's restart (event 6, 1060; a crash loss, so a warning); taken_over: broker 2 took office without it
    # (event 4, 1040); held_before: broker 2 held another record there from before the ack and took office after it
    # (event 6, 1060); no_election: no election is needed for a leader to take office (event 3, 1030);
    # removed_before_ack: broker 2 lost its copy before the ack (event 4) and took office after it (event 7, 1070).
    # left_before_the_final_leader: broker 2 took office without it (event 4, 1040), broker 3 after (event 6): the
    # first; back_on_the_leader: broker 1 took office again with it (event 5) and broker 2 without it after (event 6,
    # 1060): the last; leader_crash: broker 1, in office, lost it in its own crash (event 3, 1030), then took office
    # again without it (event 4); retained: retention on broker 1, in office, deleted it (event 3), which loses
    # nothing (the end-of-run check skips offsets below the final leader's log start); broker 2, its log empty, took
    # office without it (event 4, 1040); not_revived: broker 2 took office without it (event 3, 1030); its retention
    # past the offset (5) does not bring the write back: broker 3 taking office with an empty log (6) is not the loss.
    Case("acked_write_lost_is_dated_when_the_write_last_left_the_leader_in_office", "acked_write_lost", {
        "truncated": timed([leader(), append(0, 1, checksum=11), _ACK, dict(_FOLLOWER, broker_id=2, leader_id=1),
                            append(0, 1, broker=2, checksum=11, role="follower"),
                            dict(_TRUNC_PARTIAL, broker_id=2, old_leo=2, truncate_offset=0),
                            dict(_ELECTION, leader_id=2, leader_epoch=2, partition_epoch=2, isr=[2]),
                            leader(broker=2, epoch=2, leo=0, isr=[2])]),
        "crashed": timed([leader(), append(0, 1, checksum=11), _ACK, dict(_FOLLOWER, broker_id=2, leader_id=1),
                          append(0, 1, broker=2, checksum=11, role="follower"), dict(_RESTART, broker_id=2),
                          leader(broker=2, epoch=2, leo=0), hw(0, 0, broker=2, epoch=2)]),
        "taken_over": timed([leader(), append(0, 1, checksum=11), _ACK,
                             dict(_ELECTION, leader_id=2, leader_epoch=2, partition_epoch=2, isr=[2]),
                             leader(broker=2, epoch=2, isr=[2]), append(0, 0, broker=2, epoch=2, checksum=21),
                             hw(0, 1, broker=2, epoch=2)]),
        "held_before": timed([leader(broker=2), append(0, 0, broker=2, checksum=21), leader(epoch=2),
                              append(0, 1, epoch=2, checksum=11), dict(_ACK, leader_epoch=2),
                              dict(_ELECTION, leader_id=2, leader_epoch=3, partition_epoch=3, isr=[2]),
                              leader(broker=2, epoch=3, leo=1), hw(0, 1, broker=2, epoch=3)]),
        "no_election": timed([leader(), append(0, 1, checksum=11), _ACK, leader(broker=2, epoch=2),
                              hw(0, 0, broker=2, epoch=2)]),
        # It held the record but lost it (event 4) before the ack (5): not the loss of the acknowledged write, which
        # is its election (6).
        "removed_before_ack": timed([leader(), dict(_FOLLOWER, broker_id=2, leader_id=1), append(0, 0, checksum=11),
                                     append(0, 0, broker=2, checksum=11, role="follower"),
                                     dict(_TRUNC_PARTIAL, broker_id=2, old_leo=1, truncate_offset=0),
                                     dict(_ACK, last_offset=0),
                                     dict(_ELECTION, leader_id=2, leader_epoch=2, partition_epoch=2, isr=[2]),
                                     leader(broker=2, epoch=2, leo=0, isr=[2])]),
        "left_before_the_final_leader": timed([
            leader(), append(0, 1, checksum=11), _ACK,
            dict(_ELECTION, leader_id=2, leader_epoch=2, partition_epoch=2, isr=[2]),
            leader(broker=2, epoch=2, isr=[2]),
            dict(_ELECTION, leader_id=3, leader_epoch=3, partition_epoch=3, isr=[3]),
            leader(broker=3, epoch=3, isr=[3])]),
        "back_on_the_leader": timed([
            leader(), append(0, 1, checksum=11), _ACK, leader(broker=2, epoch=2, isr=[2]),
            append(0, 0, broker=2, epoch=2, checksum=21), leader(epoch=3, leo=2),
            leader(broker=2, epoch=4, isr=[2], leo=1)]),
        "leader_crash": timed([leader(), append(0, 1, checksum=11), _ACK, _RESTART, leader(epoch=2, leo=0)]),
        "retained": timed([leader(), append(0, 1, checksum=11), _ACK, dict(_lso(0, 2), role="leader"),
                           leader(broker=2, epoch=2, isr=[2]), append(0, 0, broker=2, epoch=2, checksum=21)]),
        "not_revived": timed([leader(), append(0, 1, checksum=11), _ACK, leader(broker=2, epoch=2, isr=[2]),
                              append(0, 2, broker=2, epoch=2, checksum=21),
                              dict(_lso(0, 3), broker_id=2, role="leader"), leader(broker=3, epoch=3, isr=[3])]),
    }, [("removed_before_ack", "error", 1070, -1, 0, -1, [2, 5, 7, 4]),
        ("truncated", "error", 1070, -1, 0, -1, [1, 2, 7, 5]),
        ("crashed", "warning", 1060, -1, 0, -1, [5, 1, 2, 6]),
        ("taken_over", "error", 1040, -1, 0, 21, [1, 2, 4, 5]),
        ("held_before", "error", 1060, -1, 0, 21, [3, 4, 6, 1]),
        ("no_election", "error", 1030, -1, 0, -1, [1, 2, 3]),
        ("left_before_the_final_leader", "error", 1040, -1, 0, -1, [1, 2, 4]),
        ("back_on_the_leader", "error", 1060, -1, 0, 21, [1, 2, 6, 4]),
        ("leader_crash", "warning", 1030, -1, 0, -1, [3, 1, 2]),
        ("retained", "error", 1040, -1, 0, 21, [1, 2, 4, 5]),
        ("not_revived", "error", 1030, -1, 0, -1, [1, 2, 3])],
        columns=("run_id", "severity", "ts_ms", "event_id", "offset", "actual", "evidence")),
    # An unclean election's excuse names the crash loss that took the record from the leader in office where there was
    # one: crash_then_unclean: leader 1 (the only copy) loses the write to its power failure (event 4), then broker 2
    # is elected unclean (5): the election alone would read as the cause of a tail lost whoever is elected next;
    # unclean_then_crash: broker 2, elected unclean (4) with the record, loses it in its own crash (7); unclean_only:
    # leader 1 crashes keeping the record and broker 2, elected unclean, lacks it.
    Case("acked_write_lost_names_the_crash_loss_beside_the_unclean_election", "acked_write_lost", {
        "crash_then_unclean": timed([leader(), append(0, 1, checksum=11), _ACK, dict(_RESTART, action="crash"),
                                     dict(_TRUNC_PARTIAL, old_leo=2, truncate_offset=0, reason="out_of_range"),
                                     _UNCLEAN, leader(broker=2, epoch=2, isr=[2])]),
        "unclean_then_crash": timed([leader(), append(0, 1, checksum=11), _ACK,
                                     append(0, 1, broker=2, checksum=11, role="follower"), _UNCLEAN,
                                     leader(broker=2, epoch=2, isr=[2], leo=2),
                                     dict(_RESTART, broker_id=2, action="crash"),
                                     dict(_TRUNC_PARTIAL, broker_id=2, leader_epoch=2, old_leo=2, truncate_offset=0,
                                          reason="out_of_range")]),
        "unclean_only": timed([leader(), append(0, 1, checksum=11), _ACK, dict(_RESTART, action="crash"), _UNCLEAN,
                               leader(broker=2, epoch=2, isr=[2])]),
    }, [("crash_then_unclean", "warning", 1040, [5, 1, 2, 4],
         "write acknowledged at 0..1 by broker 1 is not on final leader 2 at 0 (2 offsets) (the leader in office lost "
         "it with its unflushed tail at a crash, event 4, then unclean election event 5 elected a replica without it: "
         "allowed data loss)"),
        ("unclean_then_crash", "warning", 1070, [4, 1, 2, 7],
         "write acknowledged at 0..1 by broker 1 is not on final leader 2 at 0 (2 offsets) (after unclean election "
         "event 4, the leader in office lost it with its unflushed tail at a crash, event 7: allowed data loss)"),
        ("unclean_only", "warning", 1050, [4, 1, 2, 5],
         "write acknowledged at 0..1 by broker 1 is not on final leader 2 at 0 (2 offsets) (after unclean election "
         "event 4: allowed data loss)")],
        columns=("run_id", "severity", "ts_ms", "evidence", "message")),
    # A zombie leader's acknowledgement: broker 1, replaced by the election of broker 2 into epoch 2 (event 1),
    # acknowledges two acks=1 writes (1030, 1050) before broker 2 takes office (event 6, 1060) and one after it (1090):
    # the first two leave the leader in office when broker 2 takes it (1060), the third was never on it and is lost
    # when acknowledged (1090), naming the become_leader that put broker 2 in office (event 6).
    Case("acks1_write_lost_of_a_zombie_leader_leaves_the_leader_in_office_when_replaced", "acks1_write_lost", {
        "zombie": timed([leader(), dict(_ELECTION, leader_id=2, leader_epoch=2, partition_epoch=2, isr=[2]),
                         append(0, 0, checksum=11), dict(_ACK, acks=1, last_offset=0),
                         append(1, 1, checksum=12), dict(_ACK, acks=1, base_offset=1, batch_checksum=12),
                         leader(broker=2, epoch=2, isr=[2]), append(0, 1, broker=2, epoch=2, checksum=21),
                         append(2, 2, checksum=13), dict(_ACK, acks=1, base_offset=2, last_offset=2,
                                                         batch_checksum=13),
                         dict(_ELECTION, leader_id=2, leader_epoch=3, partition_epoch=3, isr=[2]),
                         leader(broker=2, epoch=3, isr=[2], leo=2)]),
    }, [("zombie", 1060, 0, 21, [2, 3, 6, 7]), ("zombie", 1060, 1, 21, [4, 5, 6, 7]),
        ("zombie", 1090, 2, -1, [8, 9, 6])],
        columns=("run_id", "ts_ms", "offset", "actual", "evidence")),
    # Where a deposed leader's acknowledged write went: broker 1 acknowledges an acks=1 write at 0 (events 2, 3) after
    # broker 2's election; broker 2 takes office without it (event 4, the loss) and writes its own record there (5);
    # broker 1 rejoins as a follower and truncates the write away (7) before fetching broker 2's record (8). The
    # evidence names that truncation after the takeover, as where the write left the leader that acknowledged it.
    Case("acks1_write_lost_names_where_the_write_left_the_deposed_leader_that_acknowledged_it", "acks1_write_lost", {
        "zombie": timed([leader(), dict(_ELECTION, leader_id=2, leader_epoch=2, partition_epoch=2, isr=[2]),
                         append(0, 0, checksum=11), dict(_ACK, acks=1, last_offset=0),
                         leader(broker=2, epoch=2, isr=[2]), append(0, 0, broker=2, epoch=2, checksum=21),
                         dict(_FOLLOWER, leader_epoch=2, leader_id=2, leo=1),
                         dict(event_type="truncation", broker_id=1, leader_epoch=2, truncate_offset=0, old_leo=1,
                              reason="diverging_epoch", hw=0),
                         append(0, 0, epoch=2, checksum=21, role="follower")]),
    }, [("zombie", 1040, 0, 21, [2, 3, 4, 7, 5])],
        columns=("run_id", "ts_ms", "offset", "actual", "evidence")),
    # An acknowledgement of 0..3 when the leader's append of its base wrote 0..1 (1) and another append 2..3 (2): no
    # engine sends it, but both sides must read it alike. Broker 1 is deposed and truncates to 2 (7); broker 2 leads
    # with 0..1 only, so the first lost offset is 2, which the acknowledged append never wrote: nothing removed that
    # append's record there, and the truncation is not named as where it left.
    Case("an_acknowledgement_beyond_its_append_names_no_removal_of_that_append", "acked_write_lost", {
        "wide": timed([leader(), append(0, 1, checksum=11), append(2, 3, checksum=12), dict(_ACK, last_offset=3),
                       append(0, 1, broker=2, checksum=11, role="follower"), leader(broker=2, epoch=2, leo=2, isr=[2]),
                       dict(_FOLLOWER, leader_epoch=2, leader_id=2, leo=4),
                       dict(event_type="truncation", broker_id=1, leader_epoch=2, truncate_offset=2, old_leo=4,
                            reason="diverging_epoch", hw=2)]),
    }, [("wide", 2, -1, [1, 3, 0])],
        columns=("run_id", "offset", "actual", "evidence")),
]



@pytest.mark.parametrize("case", AUDIT_CASES, ids=lambda c: c.name)
def test_invariant(case: Case, audited: DataFrame, expect) -> None:
    expect(found(audited, case), case.expected, key_schema(case.columns))


def test_an_invariant_function_evaluates_that_invariant_alone(spark: SparkSession, expect) -> None:
    # `inv.<name>(bronze)` is what notebooks call: its own invariant's rows only, although the acked
    # write lost in run `bad` is also an acked_write_lost violation of the same events.
    case = AUDIT_CASES[0]
    lost = [leader(), append(0, 1, checksum=11), _ACK, hw(0, 2), hw(2, 1), leader(broker=2, epoch=2)]
    df = make_events(spark, timed(lost), run_id="bad").unionByName(make_events(spark, case.runs["ok"], run_id="ok"))
    expect(inv.hw_monotonic_leader(df).select(*KEY_COLUMNS),
           [("bad", "hw_monotonic_leader", "error", 1, 4, None, 2, 1, [0, 4])], KEY_SCHEMA)


@pytest.mark.parametrize("case", AUDIT_CASES, ids=lambda c: c.name)
def test_the_reference_checker_finds_the_same(case: Case) -> None:
    assert same_rows(reference(case), case.expected), reference(case)
