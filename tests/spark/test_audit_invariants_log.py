"""The record-content invariants (jobs.invariants.log_content) on tiny hand-built runs: violating and clean.

Each case puts its runs (run `bad`, run `ok`, sometimes a third) into the one audit of all hand-built cases
(`tests.spark.audit_cases`) and expects violations with the numbers `replication_core.checker` reports for the
same events (worked out by hand in each case, § of the reference in each invariant's docstring).
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame

from tests.spark.audit_cases import KEY_COLUMNS, Case, Rows, found, key_schema, reference, register, same_rows, timed

KEY_SCHEMA = key_schema(KEY_COLUMNS)

AUDIT_CASES: list[Case] = []
case = register(AUDIT_CASES)


def _runs(**runs: Rows) -> dict[str, Rows]:
    """Named runs, each event stamped 10 ms after the one before."""
    return {name: timed(rows) for name, rows in runs.items()}


def leader(broker: int = 1, epoch: int = 1, **kw: Any) -> dict[str, Any]:
    """A become_leader leadership_change (replicas 1, 2; empty log unless leo / hw are given)."""
    fields = dict(event_type="leadership_change", broker_id=broker, leader_epoch=epoch, action="become_leader",
                  leader_id=broker, isr=[1, 2], replicas=[1, 2], leo=0, hw=0)
    return {**fields, **kw}


def follower(broker: int = 2, epoch: int = 1, leader_id: int = 1, **kw: Any) -> dict[str, Any]:
    """A become_follower leadership_change."""
    return {**leader(broker, epoch), "action": "become_follower", "leader_id": leader_id, **kw}


def append(base: int, last: int, broker: int = 1, epoch: int = 1, checksum: int = 7, role: str = "leader") -> dict:
    """An append of [base, last] whose batch carries `epoch` and `checksum`."""
    return dict(event_type="append", broker_id=broker, leader_epoch=epoch, role=role, base_offset=base,
                last_offset=last, batch_leader_epoch=epoch, batch_checksum=checksum, leo=last + 1)


def hw(old: int, new: int, broker: int = 1, epoch: int = 1, role: str = "leader") -> dict[str, Any]:
    """An hw_change."""
    return dict(event_type="hw_change", broker_id=broker, leader_epoch=epoch, role=role, old_hw=old, hw=new)


def truncation(offset: int, old_leo: int, broker: int = 2, reason: str = "high_watermark",
               epoch: int = 1) -> dict[str, Any]:
    """A follower truncation to `offset`."""
    return dict(event_type="truncation", broker_id=broker, leader_epoch=epoch, truncate_offset=offset,
                old_leo=old_leo, reason=reason, hw=offset)


UNCLEAN = dict(event_type="leader_election", broker_id=0, leader_epoch=2, action="unclean", leader_id=2, isr=[2],
               replicas=[1, 2], partition_epoch=2)


@case
def committed_prefix_agreement_flags_replicas_differing_below_both_hws() -> Case:
    # Follower 2 holds another batch at 0..1 (checksum 8) and its HW covers it (event 4); when leader 1's HW
    # rises over 0..1 (event 5) the two committed prefixes differ from offset 0: expected = replica 2's
    # checksum, actual = replica 1's; evidence = 2's append, 1's append, 2's HW event, the rise.
    def run(follower_checksum: int) -> Rows:
        return [leader(), follower(), append(0, 1), append(0, 1, broker=2, checksum=follower_checksum,
                                                           role="follower"),
                hw(0, 2, broker=2, role="follower"), hw(0, 2)]

    runs = _runs(bad=run(8), ok=run(7))
    return Case("", "committed_prefix_agreement", runs,
                [("bad", "committed_prefix_agreement", "error", 1, 5, 0, 8, 7, [3, 2, 4, 5])])


@case
def committed_prefix_agreement_after_an_unclean_election_is_a_warning() -> Case:
    # The same divergence with an unclean election after both appends: reported, downgraded, election first.
    rows = [leader(), follower(), append(0, 1), append(0, 1, broker=2, checksum=8, role="follower"), UNCLEAN,
            hw(0, 2, broker=2, role="follower"), hw(0, 2)]
    return Case("", "committed_prefix_agreement", _runs(unc=rows),
                [("unc", "committed_prefix_agreement", "warning", 1, 6, 0, 8, 7, [4, 3, 2, 5, 6])])


@case
def inconsistent_offsets_flags_a_second_different_committed_record() -> Case:
    # Leader 1 commits (0..1, epoch 1, checksum 7) at event 2; broker 2, holding (0..1, epoch 2, checksum 9),
    # becomes leader with HW 2 at event 4 and so exposes a different record at 0: expected 7, actual 9,
    # evidence = the first record's append and commit, the new record's append, the leadership change.
    def run(checksum: int, epoch: int) -> Rows:
        return [leader(), append(0, 1), hw(0, 2), append(0, 1, broker=2, epoch=epoch, checksum=checksum,
                                                          role="follower"),
                leader(broker=2, epoch=2, isr=[2], leo=2, hw=2)]

    runs = _runs(bad=run(9, 2), ok=run(7, 1))
    return Case("", "inconsistent_offsets", runs,
                [("bad", "inconsistent_offsets", "error", 2, 4, 0, 7, 9, [1, 2, 3, 4])])


@case
def inconsistent_offsets_after_an_unclean_election_is_a_warning() -> Case:
    rows = [leader(), append(0, 1), hw(0, 2), append(0, 1, broker=2, epoch=2, checksum=9, role="follower"), UNCLEAN,
            leader(broker=2, epoch=2, isr=[2], leo=2, hw=2)]
    return Case("", "inconsistent_offsets", _runs(unc=rows),
                [("unc", "inconsistent_offsets", "warning", 2, 5, 0, 7, 9, [4, 1, 2, 3, 5])])


@case
def truncation_safety_flags_a_follower_removing_committed_records() -> Case:
    # bad: leader HW 4 commits its batch 0..3 (event 4); follower 2 then truncates to its own HW 2 (event 5).
    # Kafka's `truncateTo(2)` drops the batch holding 2 whole (the LEO becomes 2), removing its copies of the
    # committed records from 0: offset 0, expected = committed HW 4, actual = 2; evidence = the follower's
    # append, the commit.
    # ok: the follower's batch differs (checksum 8): removing a divergent record below the committed HW is
    # the cure, not a violation.
    def run(follower_checksum: int) -> Rows:
        return [leader(), follower(), append(0, 3), append(0, 3, broker=2, checksum=follower_checksum,
                                                           role="follower"),
                hw(0, 4), truncation(2, 4)]

    runs = _runs(bad=run(7), ok=run(8))
    return Case("", "truncation_safety", runs,
                [("bad", "truncation_safety", "error", 2, 5, 0, 4, 2, [3, 4, 5])])


@case
def an_unclean_election_excuses_only_what_happens_after_it() -> Case:
    # The violating truncation of the case above (event 5), with an unclean election after it (`later`) and
    # before it (`earlier`). The checker streams: at event 5 it knows only the elections before it, so the later
    # one excuses nothing (an error, as without it) and the earlier one downgrades the truncation to a warning
    # with the election leading the evidence. (Correlated-crash differential seed 340003@high_watermark: a
    # restarted follower truncated to its HW before the unclean election that followed.)
    base = [leader(), follower(), append(0, 3), append(0, 3, broker=2, role="follower"), hw(0, 4)]
    runs = _runs(later=[*base, truncation(2, 4), UNCLEAN], earlier=[*base, UNCLEAN, truncation(2, 4)])
    return Case("", "truncation_safety", runs,
                [("later", "truncation_safety", "error", 2, 5, 0, 4, 2, [3, 4, 5]),
                 ("earlier", "truncation_safety", "warning", 2, 6, 0, 4, 2, [5, 3, 4, 6])])


ACK = dict(event_type="produce_ack", broker_id=1, leader_epoch=1, acks=-1, error="NONE", base_offset=0, last_offset=1,
           batch_checksum=7)


def _stale_leader(election: dict[str, Any]) -> dict[str, Rows]:
    """The controller elects broker 2 into epoch 2 (event 2) while leader 1 (epoch 1) is paused or cut off;
    2 writes 0..1 (epoch 2, checksum 9, event 4) and commits it (5). Broker 1, not yet told, appends its own
    0..1 in epoch 1 (checksum 7, event 6), raises its HW over it (7) and acknowledges it (8), then follows 2 (9)
    and truncates it away (10). Overlapping-nemesis seeds 500048 and 500122 did this."""
    return [leader(), follower(), election,
            leader(broker=2, epoch=2, isr=[2], leo=0, hw=0), append(0, 1, broker=2, epoch=2, checksum=9),
            hw(0, 2, broker=2, epoch=2), append(0, 1), hw(0, 2), ACK,
            follower(broker=1, epoch=2, leader_id=2, leo=2, hw=2),
            dict(truncation(0, 2, broker=1, reason="leader_epoch"), leader_epoch=2)]


STALE_LEADER_RUNS = _runs(unclean=_stale_leader(UNCLEAN), clean=_stale_leader(dict(UNCLEAN, action="clean")))
"""Every record and acknowledgement of `_stale_leader`'s losses comes after the election in event order, so
the order alone excuses nothing. When the election was unclean, its epoch (2) lies after the older record's
epoch (1) and at or before the newer state's (2), which excuses the loss (warning, the election first in the
evidence); after a clean election each is an error."""


def _stale_leader_case(invariant: str, replica: int, event: int, expected: int, actual: int,
                       evidence: list[int]) -> Case:
    """`STALE_LEADER_RUNS`' violation of `invariant` at offset 0: a warning after the unclean election (2)."""
    return Case("", invariant, STALE_LEADER_RUNS,
                [("unclean", invariant, "warning", replica, event, 0, expected, actual, [2, *evidence]),
                 ("clean", invariant, "error", replica, event, 0, expected, actual, evidence)])


@case
def a_stale_leaders_commit_after_an_unclean_election_is_excused_by_its_epoch() -> Case:
    # At 7 the stale leader exposes (0..1, epoch 1) where (0..1, epoch 2) was committed at 6: expected 9, actual
    # 7; evidence = the committed record's append and commit, the stale record's append.
    return _stale_leader_case("inconsistent_offsets", 1, 7, 9, 7, [4, 5, 6, 7])


@case
def a_stale_leaders_hw_over_a_divergent_prefix_is_excused_by_its_epoch() -> Case:
    # At 7 replica 1's HW (2) and replica 2's (2) cover different records at 0: expected = 2's checksum 9,
    # actual 7; evidence = 2's append, 1's append, 2's HW event.
    return _stale_leader_case("committed_prefix_agreement", 1, 7, 9, 7, [4, 6, 5, 7])


@case
def a_stale_leaders_isr_member_of_the_new_epoch_is_excused_by_its_epoch() -> Case:
    # At 7 member 2 of the stale leader's ISR holds another record at 0 (epoch 2): member 2, expected the stale
    # leader's checksum 7, actual 9; evidence = the leader's append, the member's.
    return _stale_leader_case("isr_holds_committed", 2, 7, 7, 9, [6, 4, 7])


@case
def truncating_a_stale_leaders_commit_is_excused_by_the_epoch_it_truncates_in() -> Case:
    # At 10 broker 1, now in epoch 2, truncates its (0..1, epoch 1), which its own HW rise committed at 7:
    # expected = committed HW 2, actual = 0; evidence = the removed record's append, its commit.
    return _stale_leader_case("truncation_safety", 1, 10, 2, 0, [6, 7, 10])


@case
def a_stale_leaders_acknowledgement_is_excused_by_the_final_leaders_epoch() -> Case:
    # The stale leader's acks=all acknowledgement of 0..1 (8, epoch 1) is not on final leader 2 (epoch 2): end of
    # run (-1), expected 7, actual 9; evidence = the acknowledged append, the ack, broker 2's taking office before
    # it (3: the write was never on the leader in office), broker 1's truncation that removed it from the log of the
    # leader that acknowledged it (10), the final record's append; the unclean election that ended epoch 1 (2, the
    # excuse) leads in the unclean run.
    return Case("", "acked_write_lost", STALE_LEADER_RUNS,
                [("unclean", "acked_write_lost", "warning", 2, -1, 0, 7, 9, [2, 6, 8, 3, 10, 4]),
                 ("clean", "acked_write_lost", "error", 2, -1, 0, 7, 9, [6, 8, 3, 10, 4])])


def _crash_after_a_cut(cut: int) -> Rows:
    """Leader 1 writes 0..1 (event 2) and acknowledges it (3); follower 2 holds it (4) and truncates to `cut`
    (5: to 1 inside the batch, which removes it whole; to 2 at its end, which keeps it). Broker 2 crashes (6);
    its crash recovery cuts the log to 0 (7) and it leads epoch 2 with an empty log (8)."""
    crash = dict(event_type="broker_lifecycle", broker_id=2, action="crash", topic=None, partition=None)
    return [leader(), follower(), append(0, 1), ACK, append(0, 1, broker=2, role="follower"),
            truncation(cut, 2), crash, truncation(0, cut, reason="crash"), leader(broker=2, epoch=2, leo=0)]


@case
def a_crash_recovery_through_a_hole_left_by_a_cut_excuses_no_loss() -> Case:
    # cut: the truncation inside the batch (5) removed the acknowledged 0..1 from broker 2, leaving a hole below
    # its LEO 1; the crash recovery's cut to 0 (7) removes nothing, so the loss is an error removed by 5:
    # end of run (-1), offset 0, expected 7, actual -1; evidence = the append, the ack, broker 2's taking office
    # without it (8: leader 1 held it until then), the truncation.
    # kept: the records were still there at the crash, whose recovery removed them: a warning, 7 first.
    # (Reassigning differential seed 692027@high_watermark: Spark excused a loss by a crash through the hole.)
    runs = _runs(cut=_crash_after_a_cut(1), kept=_crash_after_a_cut(2))
    return Case("", "acked_write_lost", runs,
                [("cut", "acked_write_lost", "error", 2, -1, 0, 7, -1, [2, 3, 8, 5]),
                 ("kept", "acked_write_lost", "warning", 2, -1, 0, 7, -1, [7, 2, 3, 8])])


def _committed_then_crash_after_a_cut(cut: int) -> Rows:
    """Leader 1 writes 0..1 (event 2), follower 2 holds it (3), leader 1's HW commits it (4); follower 2 truncates
    to `cut` (5: to 1 inside the batch, which removes it whole; to 2 at its end, which keeps it), crashes (6), its
    crash recovery cuts the log to 0 (7), and it leads epoch 2 (8), writes 0..1 anew (9, checksum 9) and commits
    them (10)."""
    crash = dict(event_type="broker_lifecycle", broker_id=2, action="crash", topic=None, partition=None)
    return [leader(), follower(), append(0, 1), append(0, 1, broker=2, role="follower"), hw(0, 2),
            truncation(cut, 2), crash, truncation(0, cut, reason="crash"), leader(broker=2, epoch=2, leo=0, isr=[2]),
            append(0, 1, broker=2, epoch=2, checksum=9), hw(0, 2, broker=2, epoch=2)]


@case
def inconsistent_offsets_is_not_excused_by_a_crash_recovery_through_a_hole() -> Case:
    # cut: the truncation inside the batch (5) had already removed the committed 0..1 from broker 2, so its crash
    # recovery (7) removed nothing and excuses nothing: offset 0 committed twice (7 at 4, then 9 at 10), an
    # error; evidence = the first append, its commit, the new append, the detecting HW rise. kept: the records
    # were there at the crash, whose recovery lost them: a warning, the recovery (7) first.
    # (Overlapping differential seed 1069021@high_watermark: Spark excused it by the crash through the hole.)
    runs = _runs(cut=_committed_then_crash_after_a_cut(1), kept=_committed_then_crash_after_a_cut(2))
    return Case("", "inconsistent_offsets", runs,
                [("cut", "inconsistent_offsets", "error", 2, 10, 0, 7, 9, [2, 4, 9, 10]),
                 ("kept", "inconsistent_offsets", "warning", 2, 10, 0, 7, 9, [7, 2, 4, 9, 10])])


@case
def a_truncation_inside_a_hole_cuts_nothing_below_its_target() -> Case:
    # hole: follower 2 holds 0..1 (2), truncates to 0 (3: all gone), refetches 0..0 (4, checksum 7, acknowledged
    # at 5), then appends 3..4 above its LEO 1 (6: 1..2 hold nothing) and truncates to 1 (7). Nothing is held at
    # 1, so the truncation cuts from 1 (`Checker._cut_from`), not from the base of the long-gone batch 0..1: 2
    # leads with 0 kept, the acknowledgement holds. kept: 0..1 still held at the truncation to 1 (4), which cuts
    # the batch from 0: the acknowledgement (3) is lost at 0, removed by 4; leader 1 never held it (a hand-built
    # shortcut), so it was never on the leader in office, which took office at 0.
    # (A review of the cut rule found the hole case; the Spark side cut from 0.)
    ack = dict(ACK, last_offset=0)
    hole = [leader(), follower(), append(0, 1, broker=2, role="follower", checksum=5), truncation(0, 2),
            append(0, 0, broker=2, role="follower"), ack, append(3, 4, broker=2, role="follower", checksum=8),
            truncation(1, 5), leader(broker=2, epoch=2, leo=1)]
    kept = [leader(), follower(), append(0, 1, broker=2, role="follower"), ack, truncation(1, 2),
            leader(broker=2, epoch=2, leo=1)]
    return Case("", "acked_write_lost", _runs(hole=hole, kept=kept),
                [("kept", "acked_write_lost", "error", 2, -1, 0, 7, -1, [3, 0, 4])])


def _stopped_replica_hw(election: dict[str, Any]) -> Rows:
    """Leader 3 holds 0..1 of epoch 0 (event 1); broker 1 leads epoch 1 cut off (2). The controller elects 3 into
    epoch 2 (3); follower 2 fetches 3's epoch-0 records (6), sets its HW to 2 in epoch 2 (7) and shuts down (8).
    Stale leader 1 then writes its own 0..1 in epoch 1 (9) and raises its HW over them (10). Every record is
    appended after the election, and stopped replica 2 is in no epoch: only its HW's epoch (2) places its state
    after an unclean election. Overlapping-nemesis seed 505189 did this."""
    replicas = [1, 2, 3]
    stop = dict(event_type="broker_lifecycle", broker_id=2, action="shutdown", topic=None, partition=None)
    return [leader(broker=3, epoch=0, isr=replicas, replicas=replicas), append(0, 1, broker=3, epoch=0),
            leader(broker=1, epoch=1, isr=[1], replicas=replicas), election,
            leader(broker=3, epoch=2, isr=[3], replicas=replicas, leo=2, hw=0),
            follower(broker=2, epoch=2, leader_id=3, replicas=replicas),
            append(0, 1, broker=2, epoch=0, role="follower"),
            hw(0, 2, broker=2, epoch=2, role="follower"), stop, append(0, 1, broker=1, epoch=1, checksum=8), hw(0, 2)]


@case
def a_stopped_replicas_hw_counts_with_the_epoch_that_set_it() -> Case:
    # At 10 replica 1 (HW 2) and stopped replica 2 (HW 2, set at 7 in epoch 2) differ at 0: expected = 2's
    # checksum 7, actual 8; evidence = 2's append, 1's append, 2's HW event. After the unclean election (3) a
    # warning led by it; after a clean one an error.
    election = dict(UNCLEAN, leader_id=3, isr=[3], replicas=[1, 2, 3])
    runs = _runs(unclean=_stopped_replica_hw(election), clean=_stopped_replica_hw(dict(election, action="clean")))
    return Case("", "committed_prefix_agreement", runs,
                [("unclean", "committed_prefix_agreement", "warning", 1, 10, 0, 7, 8, [3, 6, 9, 7, 10]),
                 ("clean", "committed_prefix_agreement", "error", 1, 10, 0, 7, 8, [6, 9, 7, 10])])


def _committed_in_two_epochs(*tail: dict[str, Any]) -> Rows:
    """Leader 1 writes 0..1 and 2..3 in epoch 1 (events 3, 4), followers 2 and 3 copy them (5-8), and 1 commits
    0..1 (9). Broker 3 is elected into epoch 2 (10) and commits 2..3 (11); follower 2 has not heard of epoch 2."""
    replicas = [1, 2, 3]
    copies = [append(lo, lo + 1, broker=b, role="follower") for b in (2, 3) for lo in (0, 2)]
    return [leader(isr=replicas, replicas=replicas), follower(replicas=replicas),
            follower(broker=3, replicas=replicas), append(0, 1), append(2, 3), *copies, hw(0, 2),
            leader(broker=3, epoch=2, isr=[3], replicas=replicas, leo=4, hw=2), hw(2, 4, broker=3, epoch=2), *tail]


@case
def truncation_safety_judges_a_follower_by_the_commits_of_its_epoch() -> Case:
    # Follower 2, still in epoch 1, acts on a DivergingEpoch answer of epoch-1 leader 1 (event 12):
    # stale: it removes 2..3, which only epoch 2 exposed: no violation (Kafka does this; the epoch-2 commit counted
    # no replica still in epoch 1). With a divergent batch at 2..3 later (`_contested`), the contested offsets
    # are judged alike. mixed: it removes 0..3, and 0..1 were committed in epoch 1: offset 0, expected = committed
    # HW 4, actual 0; evidence = its append of 0..1, the epoch-1 commit. current: in epoch 2 (13) removing 2..3 is
    # an error: offset 2, evidence = its append of 2..3, the epoch-2 commit. Overlapping seed 506027 did `stale`.
    divergent = append(2, 3, broker=2, checksum=9, role="follower")
    current = [follower(epoch=2, leader_id=3, replicas=[1, 2, 3], leo=4, hw=2),
               truncation(2, 4, reason="diverging_epoch", epoch=2)]
    runs = _runs(stale=_committed_in_two_epochs(truncation(2, 4, reason="diverging_epoch")),
                 stale_contested=_committed_in_two_epochs(truncation(2, 4, reason="diverging_epoch"), divergent),
                 mixed=_committed_in_two_epochs(truncation(0, 4, reason="diverging_epoch")),
                 current=_committed_in_two_epochs(*current),
                 current_contested=_committed_in_two_epochs(*current, divergent))
    return Case("", "truncation_safety", runs,
                [("mixed", "truncation_safety", "error", 2, 12, 0, 4, 0, [5, 9, 12]),
                 ("current", "truncation_safety", "error", 2, 13, 2, 4, 2, [6, 11, 13]),
                 ("current_contested", "truncation_safety", "error", 2, 13, 2, 4, 2, [6, 11, 13])])


@case
def a_member_holds_nothing_below_a_truncation_inside_a_batch() -> Case:
    # Follower 2 truncates to 2 inside its copy of batch 0..3 (event 4): LEO 2, and no record at 0..1. Leader 1's
    # HW rise to 2 (5) finds ISR member 2 without offset 0: expected 7, actual -1; evidence = 1's append.
    rows = [leader(), follower(), append(0, 3), append(0, 3, broker=2, role="follower"), truncation(2, 4), hw(0, 2)]
    return Case("", "isr_holds_committed", _runs(cut=rows), [("cut", "isr_holds_committed", "error", 2, 5, 0, 7, -1,
                                                               [2, 5])])


@case
def truncation_safety_ignores_records_above_the_committed_hw() -> Case:
    # A follower truncation to 2 between batches 0..1 and 2..3, the leader having committed 0..1 only: nothing
    # committed is removed; a
    # truncation while the broker is down (crash recovery) is not judged either.
    crash = dict(event_type="broker_lifecycle", broker_id=2, action="crash", topic=None, partition=None)
    both = [leader(), follower(), append(0, 1), append(2, 3), append(0, 1, broker=2, role="follower"),
            append(2, 3, broker=2, role="follower")]
    ok = [*both, hw(0, 2), truncation(2, 4)]
    down = [*both, hw(0, 4), crash, truncation(2, 4, reason="crash")]
    return Case("", "truncation_safety", _runs(ok=ok, down=down), [])


@case
def isr_holds_committed_flags_a_member_missing_or_differing_below_the_hw() -> Case:
    # missing: leader 1 holds 0..1 and 2..3, ISR member 2 only 0..1 when the HW rises to 4 (event 5): first
    # missing offset 2, expected the leader's checksum, actual -1, evidence = the leader's append of 2..3.
    # differing: member 2 holds another batch at 0..1 (checksum 8): offset 0, actual 8.
    # ok: the member holds everything; crashed: the member's broker crashed and restarted after the leader
    # last heard from it, so the checker skips it.
    lifecycle = [dict(event_type="broker_lifecycle", broker_id=2, action=a, topic=None, partition=None)
                 for a in ("crash", "start")]
    head = [leader(), follower(), append(0, 1), append(2, 3)]
    runs = _runs(missing=[*head, append(0, 1, broker=2, role="follower"), hw(0, 4)],
                 differing=[*head, append(0, 1, broker=2, checksum=8, role="follower"),
                            append(2, 3, broker=2, role="follower"), hw(0, 4)],
                 ok=[*head, append(0, 1, broker=2, role="follower"), append(2, 3, broker=2, role="follower"), hw(0, 4)],
                 crashed=[*head, append(0, 1, broker=2, role="follower"), *lifecycle, hw(0, 4)])
    return Case("", "isr_holds_committed", runs,
                [("missing", "isr_holds_committed", "error", 2, 5, 2, 7, -1, [3, 5]),
                 ("differing", "isr_holds_committed", "error", 2, 6, 0, 7, 8, [2, 4, 6])])


@case
def follower_log_matching_flags_a_divergent_batch_or_prefix() -> Case:
    # batch: follower 2 appends 0..1 with checksum 8 while its leader holds 0..1 with checksum 7 (event 3):
    # offset 0, expected 7, actual 8, evidence = the leader's append.
    # prefix: follower 2 wrote 0..1 (checksum 8) before its leader held anything there, then appends 2..3
    # matching the leader's (event 5): the record below, offset 1, differs; evidence = both appends.
    batch = [leader(), follower(), append(0, 1), append(0, 1, broker=2, checksum=8, role="follower")]
    prefix = [leader(), follower(), append(0, 1, broker=2, checksum=8, role="follower"), append(0, 1), append(2, 3),
              append(2, 3, broker=2, role="follower")]
    ok = [leader(), follower(), append(0, 1, broker=2, role="follower"), append(0, 1), append(2, 3),
          append(2, 3, broker=2, role="follower")]
    return Case("", "follower_log_matching", _runs(batch=batch, prefix=prefix, ok=ok),
                [("batch", "follower_log_matching", "error", 2, 3, 0, 7, 8, [2, 3]),
                 ("prefix", "follower_log_matching", "error", 2, 5, 1, 7, 8, [2, 3, 5])])


@case
def event_stream_consistent_warns_where_the_events_disagree_with_the_replay() -> Case:
    # bad: an append at 3 while the replayed LEO is 2 (event 2), an hw_change from old_hw 1 while the replayed
    # HW is 0 (event 3), an acknowledgement of checksum 9 where the leader's log holds checksum 7 (event 4),
    # a leadership_change reporting LEO 9 above the replayed 5 (event 5). ok: the same, consistent.
    def ack(checksum: int) -> dict[str, Any]:
        return dict(event_type="produce_ack", broker_id=1, leader_epoch=1, acks=-1, error="NONE", base_offset=0,
                    last_offset=1, batch_checksum=checksum)

    bad = [leader(), append(0, 1), append(3, 4), hw(1, 2), ack(9), leader(epoch=2, leo=9, hw=2)]
    ok = [leader(), append(0, 1), append(2, 3), hw(0, 2), ack(7), leader(epoch=2, leo=4, hw=2)]
    return Case("", "event_stream_consistent", _runs(bad=bad, ok=ok),
                [("bad", "event_stream_consistent", "warning", 1, 2, None, 2, 3, [2]),
                 ("bad", "event_stream_consistent", "warning", 1, 3, None, 0, 1, [3]),
                 ("bad", "event_stream_consistent", "warning", 1, 4, None, 9, 7, [4]),
                 ("bad", "event_stream_consistent", "warning", 1, 5, None, 5, 9, [5])])



@case
def event_stream_consistent_accepts_a_new_log_for_a_replica_a_reassignment_adds_back() -> Case:
    # Follower 2 holds 0..1; a become_follower then reports LEO 0. plain: nothing explains the shorter log
    # (event 4: replayed 2, reported 0). readded: the reassignment lists broker 2 among the replicas it is
    # adding, so its earlier replica was deleted (StopReplica, no event) and the log is new: no warning.
    def run(**kw: Any) -> Rows:
        return [leader(), follower(), append(0, 1), append(0, 1, broker=2, role="follower"),
                follower(epoch=2, leo=0, hw=0, **kw)]

    return Case("", "event_stream_consistent", _runs(plain=run(), readded=run(adding_replicas=[2])),
                [("plain", "event_stream_consistent", "warning", 2, 4, None, 2, 0, [4])])


@case
def a_follower_holds_nothing_in_the_gap_an_append_above_its_leo_skips() -> Case:
    # Followers 2 and 3 hold different batches at 2..3 (checksums 8 and 9, events 6, 7) and truncate to 2
    # (8, 9); leader 1's log has a gap there, so their next fetch at 2 gets its batch 4..5, which they append
    # above their LEO (11, 12). Both HWs then pass 2..3 (13, 14): neither holds a record there, nothing to
    # compare (seed 597433 of `--power` in the high-watermark mode). kept: without the truncations they keep
    # their batches and differ at 2 when 2's HW passes it (event 12): expected 9 (3's), actual 8 (2's).
    three = dict(replicas=[1, 2, 3], isr=[1, 2, 3])

    def run(truncated: bool) -> Rows:
        cut = [truncation(2, 4, broker=2), truncation(2, 4, broker=3)] if truncated else []
        return [leader(**three), follower(**three), follower(broker=3, **three), append(0, 1),
                append(0, 1, broker=2, role="follower"), append(0, 1, broker=3, role="follower"),
                append(2, 3, broker=2, checksum=8, role="follower"),
                append(2, 3, broker=3, checksum=9, role="follower"), *cut, append(4, 5),
                append(4, 5, broker=2, role="follower"), append(4, 5, broker=3, role="follower"),
                hw(0, 6, broker=3, role="follower"), hw(0, 6, broker=2, role="follower")]

    return Case("", "committed_prefix_agreement", _runs(gap=run(True), kept=run(False)),
                [("kept", "committed_prefix_agreement", "error", 2, 12, 2, 9, 8, [7, 6, 11, 12])])


@case
def event_stream_consistent_accepts_a_follower_append_above_its_leo() -> Case:
    # follower: follower 2 appends 0..1, then 4..5 over a gap (its leader's log may have one): consistent.
    # leader: a leader appending 4..5 at LEO 2 (event 2: expected 2, actual 4); below: a follower appending 2..3
    # at LEO 4 (event 3: expected 4, actual 2).
    runs = _runs(
        follower=[leader(), follower(), append(0, 1), append(0, 1, broker=2, role="follower"),
                  append(4, 5, broker=2, role="follower")],
        leader=[leader(), append(0, 1), append(4, 5)],
        below=[leader(), follower(), append(0, 3, broker=2, role="follower"),
               append(2, 3, broker=2, role="follower")])
    return Case("", "event_stream_consistent", runs,
                [("leader", "event_stream_consistent", "warning", 1, 2, None, 2, 4, [2]),
                 ("below", "event_stream_consistent", "warning", 2, 3, None, 4, 2, [3])])


@pytest.mark.parametrize("case", AUDIT_CASES, ids=lambda c: c.name)
def test_invariant(case: Case, audited: DataFrame, expect) -> None:
    expect(found(audited, case), case.expected, KEY_SCHEMA)


@pytest.mark.parametrize("case", AUDIT_CASES, ids=lambda c: c.name)
def test_the_reference_checker_finds_the_same(case: Case) -> None:
    """The rows worked out by hand are the reference checker's too."""
    assert same_rows(reference(case), case.expected), reference(case)
