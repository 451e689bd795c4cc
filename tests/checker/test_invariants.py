"""One violating and one near-identical clean event sequence per invariant of the catalogue.

Every pair differs in the one event the invariant is about, so neither test can pass vacuously: the
clean twin proves the checker does not flag the shape, the violating one pins the exact violation
(invariant, replica, offsets, evidence).
"""

from __future__ import annotations

from pathlib import Path

from replication_core.checker.catalogue import CATALOGUE
from tests.checker.builder import (
    Run,
    follower_behind_the_leaders_cache,
    follower_with_stale_epoch_records,
    healthy,
    names,
    only,
)


def test_healthy_baseline_is_clean_and_checks_every_core_invariant() -> None:
    """The shared starting point has no violation, and the core checks actually ran on it."""
    result = healthy().check()
    assert result.violations == ()
    for name in ("hw_bound_maximal_isr", "committed_prefix_agreement", "isr_holds_committed",
                 "inconsistent_offsets", "acked_write_lost", "follower_log_matching"):
        assert result.checked.get(name, 0) > 0, name


# --- §11.1 -----------------------------------------------------------------------------------------

def test_leader_hw_moving_back_in_its_epoch_is_flagged() -> None:
    """hw_monotonic_leader: a leader HW 2 -> 1 inside epoch 0."""
    run = healthy()
    eid = run.hw(1, 1, "leader", 0)
    [v] = only(run.check(), "hw_monotonic_leader")
    assert (v.replica, v.expected, v.actual, v.event_id) == (1, 2, 1, eid)
    assert v.evidence[-1] == eid and v.severity == "error"


def test_follower_hw_moving_back_is_allowed() -> None:
    """A follower HW may move back (§2.7): the same move on broker 2 is clean."""
    run = healthy()
    run.hw(2, 1, "follower", 0)
    assert run.check().violations == ()


def test_hw_above_the_leo_is_flagged() -> None:
    """hw_within_log: a follower HW beyond its LEO."""
    run = healthy()
    eid = run.hw(2, 5, "follower", 0)
    [v] = only(run.check(), "hw_within_log")
    assert (v.replica, v.offset, v.expected, v.actual, v.event_id) == (2, 5, 2, 5, eid)


def test_hw_at_the_leo_is_clean() -> None:
    """HW == LEO is the normal caught-up state."""
    run = healthy()
    run.append(2, 1, 0, 1002)
    run.hw(2, 3, "follower", 0)
    assert run.check().violations == ()


# --- §11.2 -----------------------------------------------------------------------------------------

def test_leader_hw_above_a_maximal_isr_member_is_flagged() -> None:
    """hw_bound_maximal_isr: the leader advances to 3 while its view of replica 3 is still 2."""
    run = healthy()
    run.append(1, 1, 0, 1002, role="leader")
    run.append(2, 1, 0, 1002)
    view = run.fetch_state(1, 2, 3, 0)
    eid = run.hw(1, 3, "leader", 0)
    [v] = only(run.check(), "hw_bound_maximal_isr")
    assert (v.replica, v.expected, v.actual, v.event_id) == (1, 2, 3, eid)
    assert view not in v.evidence  # the binding replica is 3, whose last fetch state is earlier
    assert "replica 3" in v.message


def test_leader_hw_after_every_isr_member_fetched_is_clean() -> None:
    """The same advance after replica 3 fetched at 3 too."""
    run = healthy()
    run.append(1, 1, 0, 1002, role="leader")
    run.append(2, 1, 0, 1002)
    run.append(3, 1, 0, 1002)
    run.fetch_state(1, 2, 3, 0)
    run.fetch_state(1, 3, 3, 0)
    run.hw(1, 3, "leader", 0)
    assert run.check().violations == ()


def test_pending_expansion_counts_in_the_maximal_isr() -> None:
    """A replica being added holds the HW back (§2.5): advancing past it is flagged."""
    run = healthy()
    run.isr(1, "update", "committed", [1, 2, 3], [1, 2], 0, reason="leader_and_isr")
    run.append(1, 1, 0, 1002, role="leader")
    run.append(2, 1, 0, 1002)
    run.fetch_state(1, 2, 3, 0)
    run.isr(1, "expand", "proposed", [1, 2], [1, 2, 3], 0, reason="follower_caught_up")
    eid = run.hw(1, 3, "leader", 0)
    [v] = only(run.check(), "hw_bound_maximal_isr")
    assert (v.expected, v.actual, v.event_id) == (2, 3, eid)


def test_hw_advance_under_min_isr_is_flagged() -> None:
    """hw_frozen_under_min_isr: min.insync.replicas=2, committed ISR {1}, the HW moves."""
    run = healthy()
    cfg = run.config(1, min_insync_replicas="2")
    run.isr(1, "update", "committed", [1, 2, 3], [1], 0, reason="leader_and_isr")
    run.append(1, 1, 0, 1002, role="leader")
    eid = run.hw(1, 3, "leader", 0)
    [v] = only(run.check(), "hw_frozen_under_min_isr")
    assert (v.replica, v.expected, v.actual, v.evidence) == (1, 2, 1, (cfg, eid))


def test_hw_advance_with_isr_at_min_isr_one_is_clean() -> None:
    """The same with min.insync.replicas=1 (the HW may move with ISR = {leader})."""
    run = healthy()
    run.config(1, min_insync_replicas="1")
    run.isr(1, "update", "committed", [1, 2, 3], [1], 0, reason="leader_and_isr")
    run.append(1, 1, 0, 1002, role="leader")
    run.hw(1, 3, "leader", 0)
    assert run.check().violations == ()


# --- §11.3 -----------------------------------------------------------------------------------------

def _divergent_follower(checksum: int) -> tuple[Run, int, int]:
    """Leader writes 1002 at offset 2; follower 3 writes `checksum` at 2 (it should be 1002)."""
    run = healthy()
    run.append(1, 1, 0, 1002, role="leader")
    leader_append = run.append(2, 1, 0, 1002)
    follower_append = run.append(3, 1, 0, checksum)
    run.fetch_state(1, 2, 3, 0)
    run.fetch_state(1, 3, 3, 0)
    return run, leader_append, follower_append


def test_isr_member_holding_a_different_record_below_the_hw_is_flagged() -> None:
    """isr_holds_committed: the leader commits offset 2 while ISR member 3 holds another record there."""
    run, _, bad = _divergent_follower(7777)
    eid = run.hw(1, 3, "leader", 0)
    [v] = only(run.check(), "isr_holds_committed")
    assert (v.replica, v.offset, v.expected, v.actual) == (3, 2, 1002, 7777)
    assert bad in v.evidence and v.evidence[-1] == eid


def test_isr_member_holding_the_same_record_is_clean() -> None:
    """The same with member 3 holding the leader's record."""
    run, _, _ = _divergent_follower(1002)
    run.hw(1, 3, "leader", 0)
    assert run.check().violations == ()


def test_two_replicas_disagreeing_below_both_hws_is_flagged() -> None:
    """committed_prefix_agreement: follower 3's HW passes offset 2 where it differs from follower 2."""
    run, _, _ = _divergent_follower(7777)
    run.add("isr_change", 1, 0, action="shrink", isr_state="committed", old_isr=[1, 2, 3], isr=[1, 2],
            partition_epoch=1, reason="leader_and_isr", error="NONE")
    hw1 = run.hw(1, 3, "leader", 0)
    hw2 = run.hw(2, 3, "follower", 0)
    eid = run.hw(3, 3, "follower", 0)
    violations = only(run.check(), "committed_prefix_agreement")
    assert [(v.replica, v.offset, v.expected, v.actual, v.event_id) for v in violations] == [
        (3, 2, 1002, 7777, eid), (3, 2, 1002, 7777, eid)]  # against replica 1 and replica 2
    # The other replica's HW says where it was set: a crashed replica's would otherwise read as current.
    assert [v.message.split(" (1 offsets)")[0] for v in violations] == [
        f"replica 3 (HW 3) and replica 1 (HW 3 since event {hw1}) hold different records at 2: epoch 0 on replica 3 "
        "vs 0 on replica 1",
        f"replica 3 (HW 3) and replica 2 (HW 3 since event {hw2}) hold different records at 2: epoch 0 on replica 3 "
        "vs 0 on replica 2"]


def test_replicas_agreeing_below_both_hws_is_clean() -> None:
    """The same HW moves with identical records."""
    run, _, _ = _divergent_follower(1002)
    run.hw(1, 3, "leader", 0)
    run.hw(2, 3, "follower", 0)
    run.hw(3, 3, "follower", 0)
    assert run.check().violations == ()


# --- §11.5 -----------------------------------------------------------------------------------------

def _new_leader_writes(at_offset: int) -> tuple[Run, int]:
    """Leader 1 dies; 2 is elected cleanly in epoch 1 and writes checksum 2000 at `at_offset`."""
    run = healthy()
    run.lifecycle(1, "crash")
    run.election(2, 1, [2, 3])
    run.become_leader(2, 1, [2, 3])
    run.become_follower(3, 1, 2)
    if at_offset < run.leo[2]:
        run.truncate(2, at_offset, "diverging_epoch", 1)  # (a leader truncating is flagged separately)
    append_id, _ = run.produce(2, [3], 1, 1, 2000)
    return run, append_id


def test_an_offset_committed_twice_with_different_records_is_flagged() -> None:
    """inconsistent_offsets: offset 1 committed as 1001 in epoch 0, then as 2000 in epoch 1."""
    run, append_id = _new_leader_writes(1)
    result = run.check()
    [v] = only(result, "inconsistent_offsets")
    assert (v.replica, v.offset, v.expected, v.actual, v.severity) == (2, 1, 1001, 2000, "error")
    assert append_id in v.evidence


def test_a_new_leader_committing_new_offsets_is_clean() -> None:
    """The same new leader writing at offset 2 commits nothing twice."""
    run, _ = _new_leader_writes(2)
    assert run.check().violations == ()


# --- §11.6 -----------------------------------------------------------------------------------------

def test_follower_truncating_a_committed_record_is_flagged() -> None:
    """truncation_safety: follower 3 truncates to 1, removing committed record 1001 at offset 1."""
    run = healthy()
    eid = run.truncate(3, 1, "high_watermark", 0)
    [v] = only(run.check(), "truncation_safety")
    assert (v.replica, v.offset, v.expected, v.actual, v.event_id) == (3, 1, 2, 1, eid)


def test_follower_truncating_an_uncommitted_divergent_record_is_clean() -> None:
    """A follower removing a record that is not the committed one (the cure, not the disease)."""
    run = healthy()
    run.append(3, 1, 0, 9999)  # never committed: the leader has nothing at 2
    run.truncate(3, 2, "diverging_epoch", 0)
    result = run.check()
    assert only(result, "truncation_safety") == []


def test_truncation_after_an_unclean_election_is_a_warning() -> None:
    """The same committed-record truncation after an unclean election is reported as a warning."""
    run = healthy()
    unclean = run.election(2, 1, [2], action="unclean")
    run.truncate(3, 1, "high_watermark", 0)
    [v] = only(run.check(), "truncation_safety")
    assert v.severity == "warning" and v.evidence[0] == unclean


def test_leader_truncating_its_log_is_flagged() -> None:
    """leader_no_truncation: the leader of epoch 0 truncates."""
    run = healthy()
    run.append(1, 1, 0, 1002, role="leader")  # uncommitted: only the leader rule fires
    eid = run.truncate(1, 2, "diverging_epoch", 0)
    [v] = only(run.check(), "leader_no_truncation")
    assert (v.replica, v.expected, v.actual, v.event_id) == (1, 3, 2, eid)


def test_follower_truncating_above_the_hw_is_clean() -> None:
    """The same truncation on follower 2 (uncommitted tail) is clean."""
    run = healthy()
    run.append(2, 1, 0, 1002)
    run.truncate(2, 2, "diverging_epoch", 0)
    assert only(run.check(), "leader_no_truncation") == []


# --- §11.7 -----------------------------------------------------------------------------------------

def _shrunk_to_1_2() -> Run:
    run = healthy()
    run.isr(1, "update", "committed", [1, 2, 3], [1, 2], 0, reason="leader_and_isr")
    return run


def test_expanding_with_a_follower_below_the_hw_is_flagged() -> None:
    """isr_expand_legal: replica 3 last fetched at 1 < leader HW 2."""
    run = _shrunk_to_1_2()
    view = run.fetch_state(1, 3, 1, 0)
    eid = run.isr(1, "expand", "proposed", [1, 2], [1, 2, 3], 0, reason="follower_caught_up")
    [v] = only(run.check(), "isr_expand_legal")
    assert (v.replica, v.expected, v.actual, v.evidence) == (3, 2, 1, (view, eid))


def test_expanding_with_a_caught_up_follower_is_clean() -> None:
    """Replica 3 fetched at 2 = leader HW."""
    run = _shrunk_to_1_2()
    run.fetch_state(1, 3, 2, 0)
    run.isr(1, "expand", "proposed", [1, 2], [1, 2, 3], 0, reason="follower_caught_up")
    assert run.check().violations == ()


def test_shrinking_a_caught_up_follower_is_flagged() -> None:
    """isr_shrink_legal: replica 3 caught up 1 ms ago is removed."""
    run = healthy()
    eid = run.isr(1, "shrink", "proposed", [1, 2, 3], [1, 2], 0, reason="follower_lagging")
    [v] = only(run.check(), "isr_shrink_legal")
    assert (v.replica, v.expected, v.event_id) == (3, 30000, eid)
    assert v.actual is not None and v.actual <= 30000


def test_shrinking_a_lagging_follower_is_clean() -> None:
    """The same shrink after replica 3 fell behind for longer than replica.lag.time.max.ms."""
    run = healthy()
    run.append(1, 1, 0, 1002, role="leader")
    run.add("isr_change", 1, 0, ts=run.ts + 30_002, action="shrink", isr_state="proposed", old_isr=[1, 2, 3],
            isr=[1, 2], partition_epoch=0, reason="follower_lagging", error="NONE")
    assert run.check().violations == ()


def test_shrink_removing_the_leader_is_flagged() -> None:
    """isr_shrink_legal: the leader never removes itself."""
    run = healthy()
    run.append(1, 1, 0, 1002, role="leader")
    eid = run.add("isr_change", 1, 0, ts=run.ts + 30_002, action="shrink", isr_state="proposed",
                  old_isr=[1, 2, 3], isr=[2, 3], partition_epoch=0, reason="follower_lagging", error="NONE")
    [v] = only(run.check(), "isr_shrink_legal")
    assert (v.replica, v.event_id) == (1, eid)


def test_second_proposal_while_one_is_pending_is_flagged() -> None:
    """isr_single_inflight: a shrink proposed while an expansion is pending."""
    run = _shrunk_to_1_2()
    run.fetch_state(1, 3, 2, 0)
    first = run.isr(1, "expand", "proposed", [1, 2], [1, 2, 3], 0, reason="follower_caught_up")
    eid = run.add("isr_change", 1, 0, ts=run.ts + 30_002, action="shrink", isr_state="proposed", old_isr=[1, 2],
                  isr=[1], partition_epoch=0, reason="follower_lagging", error="NONE")
    [v] = only(run.check(), "isr_single_inflight")
    assert (v.replica, v.expected, v.evidence) == (1, first, (first, eid))


def test_second_proposal_after_the_first_resolved_is_clean() -> None:
    """The same, with the expansion rejected and reset first."""
    run = _shrunk_to_1_2()
    run.fetch_state(1, 3, 2, 0)
    run.isr(1, "expand", "proposed", [1, 2], [1, 2, 3], 0, reason="follower_caught_up")
    run.isr(1, "expand", "rejected", [1, 2], [1, 2, 3], 0, reason="reset_to_committed")
    run.append(1, 1, 0, 1002, role="leader")
    run.add("isr_change", 1, 0, ts=run.ts + 30_002, action="shrink", isr_state="proposed", old_isr=[1, 2],
            isr=[1], partition_epoch=0, reason="follower_lagging", error="NONE")
    assert run.check().violations == ()


def test_committed_isr_without_the_leader_is_flagged() -> None:
    """isr_nonempty: a committed ISR that lacks the leader."""
    run = healthy()
    eid = run.isr(1, "shrink", "committed", [1, 2, 3], [2, 3], 0)
    [v] = only(run.check(), "isr_nonempty")
    assert (v.replica, v.actual, v.event_id) == (1, 2, eid)


def test_committed_isr_with_the_leader_is_clean() -> None:
    """The same commit keeping the leader."""
    run = healthy()
    run.isr(1, "shrink", "committed", [1, 2, 3], [1, 2], 0)
    assert run.check().violations == ()


# --- §11.8 -----------------------------------------------------------------------------------------

def test_election_not_bumping_the_epoch_is_flagged() -> None:
    """leader_epoch_monotonic: a second election in epoch 0."""
    run = healthy()
    eid = run.election(2, 0, [2, 3])
    violations = only(run.check(), "leader_epoch_monotonic")
    assert [(v.expected, v.actual, v.event_id) for v in violations] == [(0, 0, eid), (1, 2, eid)]
    assert violations[1].message.startswith("two leaders in epoch 0")


def test_election_bumping_the_epoch_is_clean() -> None:
    """The same election in epoch 1."""
    run = healthy()
    run.election(2, 1, [2, 3])
    assert run.check().violations == ()


def test_two_leaders_in_one_epoch_are_flagged() -> None:
    """leader_epoch_monotonic: replica 2 also becomes leader in epoch 0."""
    run = healthy()
    eid = run.become_leader(2, 0, [1, 2, 3])
    [v] = only(run.check(), "leader_epoch_monotonic")
    assert (v.replica, v.expected, v.actual, v.event_id) == (2, 1, 2, eid)


def test_older_epoch_batch_after_a_newer_one_is_flagged() -> None:
    """epoch_cache_monotonic: a follower appends an epoch-0 batch after an epoch-1 batch."""
    run = healthy()
    run.append(2, 1, 1, 1002)
    eid = run.append(2, 1, 0, 1003)
    [v] = only(run.check(), "epoch_cache_monotonic")
    assert (v.replica, v.offset, v.expected, v.actual, v.event_id) == (2, 3, 1, 0, eid)


def test_newer_epoch_batch_after_an_older_one_is_clean() -> None:
    """Epoch 0 then epoch 1."""
    run = healthy()
    run.append(2, 1, 0, 1002)
    run.append(2, 1, 1, 1003)
    assert only(run.check(), "epoch_cache_monotonic") == []


def test_leader_stamping_a_foreign_epoch_is_flagged() -> None:
    """epoch_cache_monotonic: the epoch-0 leader appends a batch stamped epoch 3."""
    run = healthy()
    eid = run.append(1, 1, 3, 1002, role="leader", epoch=0)
    [v] = only(run.check(), "epoch_cache_monotonic")
    assert (v.replica, v.expected, v.actual, v.event_id) == (1, 0, 3, eid)


def test_fetch_answered_by_a_leader_of_another_epoch_is_flagged() -> None:
    """fetch_epoch_fenced: follower 3 fetches in epoch 0 after leader 1 moved to epoch 1; answered NONE."""
    run = healthy()
    run.election(1, 1, [1, 2, 3])
    run.become_leader(1, 1, [1, 2, 3])
    fetch = run.fetch(3, 1, 0, 2)
    eid = run.response(3, 1, 0, 2, leader_hw=2)
    [v] = only(run.check(), "fetch_epoch_fenced")
    assert (v.replica, v.expected, v.actual, v.evidence) == (3, 0, 1, (fetch, eid))


def test_fetch_answered_in_its_epoch_is_clean() -> None:
    """The same fetch before the epoch bump."""
    run = healthy()
    run.fetch(3, 1, 0, 2)
    run.response(3, 1, 0, 2, leader_hw=2)
    run.election(1, 1, [1, 2, 3])
    run.become_leader(1, 1, [1, 2, 3])
    assert run.check().violations == ()


def test_fencing_is_not_required_before_kip_320() -> None:
    """With replog.truncation.mode=high_watermark the fetch carries no fenced epoch: skipped, counted."""
    run = healthy()
    run.config(3, replog_truncation_mode="high_watermark")
    run.election(1, 1, [1, 2, 3])
    run.become_leader(1, 1, [1, 2, 3])
    run.fetch(3, 1, 0, 2)
    run.response(3, 1, 0, 2, leader_hw=2)
    result = run.check()
    assert only(result, "fetch_epoch_fenced") == []
    assert result.skipped["fetch_epoch_fenced"] == {"follower protocol predates KIP-320": 1}


# --- §11.9 -----------------------------------------------------------------------------------------

def test_truncating_to_the_wrong_diverging_point_is_flagged() -> None:
    """truncation_point: DivergingEpoch (0, 2) means truncate to 2; the follower truncates to 3."""
    run = follower_with_stale_epoch_records()
    answer = run.response(3, 2, 1, 4, diverging=(0, 2))
    eid = run.truncate(3, 3, "diverging_epoch", 1)
    [v] = only(run.check(), "truncation_point")
    assert (v.replica, v.expected, v.actual, v.evidence) == (3, 2, 3, (answer, eid))


def test_truncating_to_the_diverging_point_is_clean() -> None:
    """The same answer followed by truncation to 2."""
    run = follower_with_stale_epoch_records()
    run.response(3, 2, 1, 4, diverging=(0, 2))
    run.truncate(3, 2, "diverging_epoch", 1)
    result = run.check()
    assert result.violations == ()
    assert result.checked["truncation_point"] == 2  # the leader's answer and the follower's truncation


def test_a_wrong_diverging_epoch_answer_is_flagged() -> None:
    """truncation_point: leader 2's cache gives (0, 2) for LastFetchedEpoch 0; it answered (0, 3)."""
    run = follower_with_stale_epoch_records()
    answer = run.response(3, 2, 1, 4, diverging=(0, 3))
    run.truncate(3, 3, "diverging_epoch", 1)  # (0, 3) -> 3: what the follower owes after that answer
    [v] = only(run.check(), "truncation_point")
    assert (v.replica, v.expected, v.actual, v.event_id) == (2, 2, 3, answer)


def _answered(answer: tuple[int, int], retention_after_fetch: bool) -> tuple[Run, int]:
    """`follower_behind_the_leaders_cache` answered with `answer` (the follower truncating where it owes it),
    the leader's retention moving its log start from 3 to 4 between the fetch and the response, or not."""
    run = follower_behind_the_leaders_cache()
    if retention_after_fetch:
        run.add("log_start_offset_change", 2, 1, role="leader", old_log_start_offset=3, log_start_offset=4)
    eid = run.response(3, 2, 1, 4, diverging=answer)
    if answer[1] < run.leo[3]:
        run.truncate(3, answer[1], "diverging_epoch", 1)
    return run, eid


def test_an_answer_for_an_epoch_older_than_the_leaders_cache_is_bounded_after_retention() -> None:
    """truncation_point: the leader answered (0, 3) when its cache was {1: 3}; retention then moved its log start
    to 4 before the follower read the answer. Rebuilt now the answer would be (0, 4): (0, 3) is legal (the start
    only moves up), (0, 5) is above any start the cache had, and (1, 3) names the wrong epoch."""
    ok, _ = _answered((0, 3), retention_after_fetch=True)
    result = ok.check()
    assert only(result, "truncation_point") == []
    assert result.checked["truncation_point"] == 2  # the leader's answer and the follower's truncation
    for answer in ((0, 5), (1, 3)):
        bad, eid = _answered(answer, retention_after_fetch=True)
        [v] = only(bad.check(), "truncation_point")
        assert (v.replica, v.event_id, v.expected, v.actual) == (2, eid, 4, answer[1])
        assert "gives at most (0, 4)" in v.message


def test_an_answer_for_an_epoch_older_than_the_leaders_cache_is_exact_without_retention() -> None:
    """Without a log start rise after the fetch the cache the leader answered from is the one replayed: (0, 3)
    is its answer, and (0, 2), below the first start, is flagged."""
    ok, _ = _answered((0, 3), retention_after_fetch=False)
    assert only(ok.check(), "truncation_point") == []
    bad, eid = _answered((0, 2), retention_after_fetch=False)
    [v] = only(bad.check(), "truncation_point")
    assert (v.replica, v.event_id, v.expected, v.actual) == (2, eid, 3, 2)
    assert "gives (0, 3)" in v.message


def test_a_missing_diverging_truncation_is_flagged() -> None:
    """truncation_point: the follower fetches again without truncating after a DivergingEpoch answer."""
    run = follower_with_stale_epoch_records()
    answer = run.response(3, 2, 1, 4, diverging=(0, 2))
    eid = run.fetch(3, 2, 1, 4, last_fetched_epoch=0)
    [v] = only(run.check(), "truncation_point")
    assert (v.replica, v.expected, v.actual, v.evidence) == (3, 2, 4, (answer, eid))


def test_a_diverging_truncation_still_owed_at_the_end_is_flagged() -> None:
    """truncation_point at the end of the run names the partition (no detecting event: event_id -1)."""
    run = follower_with_stale_epoch_records()
    answer = run.response(3, 2, 1, 4, diverging=(0, 2))
    [v] = only(run.check(), "truncation_point")
    assert (v.topic, v.partition, v.replica, v.event_id, v.expected, v.actual, v.evidence) == (
        "t", 0, 3, -1, 2, 4, (answer,))


def _owed_when_the_run_ends(*, out_of_range_after: bool, fetched_since: bool) -> list:
    """A DivergingEpoch answer for t-0 in a response that arrived at 500, then (`out_of_range_after`) the same
    response's OFFSET_OUT_OF_RANGE answer for t-1, whose ListOffsets `processFetchRequest` waits for before it
    truncates t-0; then (`fetched_since`) another fetch of that fetcher; then the run ends."""
    run = follower_with_stale_epoch_records()
    run.response(3, 2, 1, 4, diverging=(0, 2), received=500)
    if out_of_range_after:
        other = run.response(3, 2, 1, 9, error="OFFSET_OUT_OF_RANGE", received=500)
        run.events[other]["partition"] = 1
    if fetched_since:
        again = run.fetch(3, 2, 1, 9)
        run.events[again]["partition"] = 1
    return only(run.check(), "truncation_point")


def test_a_truncation_owed_while_the_response_is_still_being_processed_at_the_end_is_not_flagged() -> None:
    """Seed 538945 of `tests.sim.campaign --reassigning --power`: the run ended while ListOffsets for another
    partition of the answer's response was in flight, so the owed truncation was not yet due."""
    assert _owed_when_the_run_ends(out_of_range_after=True, fetched_since=False) == []
    # The fetcher fetched again, so it had finished that response: the truncation was due and did not happen.
    [v] = _owed_when_the_run_ends(out_of_range_after=True, fetched_since=True)
    assert (v.event_id, v.expected, v.actual) == (-1, 2, 4)
    [v] = _owed_when_the_run_ends(out_of_range_after=False, fetched_since=False)
    assert (v.event_id, v.expected, v.actual) == (-1, 2, 4)


def test_hw_truncation_must_go_to_the_local_hw() -> None:
    """truncation_point (high_watermark): follower 2 with HW 2 truncating to 1 is wrong; to 2 is right."""
    bad = healthy()
    bad.append(2, 1, 0, 1002)
    eid = bad.truncate(2, 1, "high_watermark", 0)
    [v] = only(bad.check(), "truncation_point")
    assert (v.replica, v.expected, v.actual, v.event_id) == (2, 2, 1, eid)
    good = healthy()
    good.append(2, 1, 0, 1002)
    good.truncate(2, 2, "high_watermark", 0)
    assert only(good.check(), "truncation_point") == []


def test_follower_appending_after_a_divergent_record_is_flagged() -> None:
    """follower_log_matching: follower 3 keeps stale 3000@2 and appends the leader's batch at 4."""
    run = follower_with_stale_epoch_records()
    run.response(3, 2, 1, 4, leader_hw=3, records=1)
    run.produce(2, [1], 1, 1, 2002)  # leader now has 2001@2, 2002@3 ... and 4 below
    run.produce(2, [1], 1, 1, 2003)
    eid = run.append(3, 1, 1, 2003, base=4)
    [v] = only(run.check(), "follower_log_matching")
    assert (v.replica, v.offset, v.expected, v.actual, v.event_id) == (3, 3, 2002, 3000, eid)


def test_follower_appending_after_truncation_is_clean() -> None:
    """The same follower after truncating to 2 appends the leader's records from 2."""
    run = follower_with_stale_epoch_records()
    run.response(3, 2, 1, 4, diverging=(0, 2))
    run.truncate(3, 2, "diverging_epoch", 1)
    run.append(3, 1, 1, 2001)
    assert run.check().violations == ()


# --- §11.10 / §11.11 -------------------------------------------------------------------------------

def _throttle(rate: float, bound: float, follower: int, role: str = "leader", listed: str = "*") -> Run:
    run = healthy()
    run.config(1, leader_replication_throttled_rate="100", topic_t_leader_replication_throttled_replicas=listed)
    run.isr(1, "update", "committed", [1, 2, 3], [1, 2], 0, reason="leader_and_isr")
    run.add("quota_throttle", 1, 0, role=role, follower_id=follower, bytes=500, measured_rate=rate,
            quota_bound=bound)
    return run


def test_throttling_below_the_bound_is_flagged() -> None:
    """quota_throttle_legal: throttled at 80 B/s with a 100 B/s bound."""
    [v] = only(_throttle(80.0, 100.0, 3).check(), "quota_throttle_legal")
    assert (v.replica, v.expected, v.actual) == (3, 100, 80)


def test_throttling_an_out_of_sync_replica_above_the_bound_is_clean() -> None:
    """Replica 3 (out of ISR) throttled at 150 B/s with a 100 B/s bound."""
    assert _throttle(150.0, 100.0, 3).check().violations == ()


def test_throttling_an_in_sync_replica_is_flagged() -> None:
    """quota_throttle_legal: the leader throttles replica 2, an ISR member."""
    [v] = only(_throttle(150.0, 100.0, 2).check(), "quota_throttle_legal")
    assert v.replica == 2 and "in-sync" in v.message


def test_throttling_a_partition_outside_the_throttled_list_is_flagged() -> None:
    """quota_throttle_legal: the topic throttles only partition 0 on broker 2, yet leader 1 throttles."""
    [v] = only(_throttle(150.0, 100.0, 3, listed="0:2").check(), "quota_throttle_legal")
    assert v.replica == 3 and "throttled.replicas" in v.message
    assert _throttle(150.0, 100.0, 3, listed="0:1").check().violations == ()


def test_topic_min_isr_override_is_used() -> None:
    """hw_frozen_under_min_isr reads `topic.<t>.min.insync.replicas` from broker_config when present."""
    for topic_min, expected in (("2", ["hw_frozen_under_min_isr"]), ("1", [])):
        run = healthy()
        run.config(1, min_insync_replicas="1", topic_t_min_insync_replicas=topic_min)
        run.isr(1, "update", "committed", [1, 2, 3], [1], 0, reason="leader_and_isr")
        run.append(1, 1, 0, 1002, role="leader")
        run.hw(1, 3, "leader", 0)
        assert names(run.check()) == expected


def test_late_fetch_answer_is_flagged() -> None:
    """delayed_fetch_bound: with a 5 ms network bound, an answer 600 ms after the fetch (> 500 + 10)."""
    from replication_core.checker.checker import CheckOptions

    run = healthy()
    fetch = run.fetch(2, 1, 0, 2, ts=2_000_000)
    eid = run.response(2, 1, 0, 2, leader_hw=2, ts=2_000_600)
    [v] = only(run.check(CheckOptions(max_network_delay_ms=5)), "delayed_fetch_bound")
    assert (v.replica, v.expected, v.actual, v.evidence) == (2, 510, 600, (fetch, eid))
    assert run.check().violations == ()  # without a network bound only the socket timeout applies


def test_fetch_bound_allows_for_the_pauses_and_stalls_that_held_the_answer() -> None:
    """delayed_fetch_bound with a 5 ms network bound (510 ms) on an answer 900 ms after its fetch: a 300 ms
    disk stall of the follower and a 200 ms GC pause of the leader inside the flight widen it to 1010 ms;
    the leader's disk stall does not hold its answers and a pause before the fetch does not overlap it, so
    those two add nothing. With only 50 ms of the pause inside the flight the bound is 860 ms: flagged. A pause
    within the stall (from 2 000 100) adds nothing to it: the bound is 810 ms, flagged too."""
    from replication_core.checker.checker import CheckOptions

    options = CheckOptions(max_network_delay_ms=5)
    for pause_start, flagged in ((2_000_400, None), (2_000_850, 860), (2_000_100, 810)):
        run = healthy()
        run.fault(2, "gc_pause", 1_000, ts=1_990_000)  # over before the fetch
        fetch = run.fetch(2, 1, 0, 2, ts=2_000_000)
        run.fault(2, "disk_stall", 300, ts=2_000_050)
        run.fault(1, "disk_stall", 400, ts=2_000_060)
        run.fault(1, "gc_pause", 200, ts=pause_start)
        eid = run.response(2, 1, 0, 2, leader_hw=2, ts=2_000_900 if flagged is None else 2_000_950,
                           received=2_000_900)
        found = only(run.check(options), "delayed_fetch_bound")
        if flagged is None:
            assert found == []
        else:
            [v] = found
            assert (v.replica, v.expected, v.actual, v.evidence) == (2, flagged, 900, (fetch, eid))
            assert v.message == (f"fetch answered after 900 ms, more than the {flagged} ms bound "
                                 f"({flagged - 510} ms of it GC pauses and disk stalls)")


def test_parked_fetch_answered_at_max_wait_is_clean() -> None:
    """An answer 505 ms after the fetch is within 500 + 2 x 5."""
    from replication_core.checker.checker import CheckOptions

    run = healthy()
    run.fetch(2, 1, 0, 2, ts=2_000_000)
    run.response(2, 1, 0, 2, leader_hw=2, ts=2_000_505)
    assert run.check(CheckOptions(max_network_delay_ms=5)).violations == ()


# --- replay consistency ----------------------------------------------------------------------------

def test_append_not_at_the_replayed_leo_is_reported_as_a_warning() -> None:
    """event_stream_consistent: a leader append at 5 when its log ends at 2, or a follower's at 1; a follower's
    at 5 is consistent (fetching inside a gap of its leader's log, it appends the leader's next batch there)."""
    for broker, role, base in ((1, "leader", 5), (2, "follower", 1)):
        run = healthy()
        eid = run.append(broker, 1, 0, 1002, role=role, base=base)
        [v] = only(run.check(), "event_stream_consistent")
        assert (v.severity, v.replica, v.expected, v.actual, v.event_id) == ("warning", broker, 2, base, eid)
    run = healthy()
    run.append(2, 1, 0, 1002, base=5)
    assert only(run.check(), "event_stream_consistent") == []


def test_every_catalogue_entry_has_a_test_above() -> None:
    """Each invariant name is asserted on by this module or the KIP-shape tests (no entry is untested)."""
    here = Path(__file__).resolve().parent
    source = "".join((here / name).read_text(encoding="utf-8") for name in ("test_invariants.py",
                                                                             "test_kip_shapes.py"))
    assert [inv.name for inv in CATALOGUE if f'"{inv.name}"' not in source] == []
    assert names(healthy().check()) == []


# --- excuses -------------------------------------------------------------------------------------------

def _all_replicas_lose_offset_1(power_loss: bool) -> tuple[Run, int]:
    """Every replica loses committed, acknowledged 1001@1 — by power-failure recovery (truncations while
    the brokers are down) or, in the twin, by truncations of running brokers; broker 1 then leads epoch 1
    and writes 2000@1."""
    run = healthy()
    for b in (1, 2, 3):
        if power_loss:
            run.lifecycle(b, "crash")
            run.truncate(b, 1, "out_of_range", 0)
            run.lifecycle(b, "restart")
        else:
            run.truncate(b, 1, "out_of_range", 0)
    run.election(1, 1, [1, 2, 3])
    run.become_leader(1, 1, [1, 2, 3])
    run.become_follower(2, 1, 1)
    run.become_follower(3, 1, 1)
    _, ack = run.produce(1, [2, 3], 1, 1, 2000)
    return run, ack


def test_acked_write_lost_to_a_power_failure_of_every_copy_is_a_warning() -> None:
    """acked_write_lost: the final leader itself lost 1001@1 in crash recovery: excused, a warning whose
    evidence starts with the crash-recovery truncation."""
    run, _ = _all_replicas_lose_offset_1(power_loss=True)
    [lost] = only(run.check(), "acked_write_lost")
    assert (lost.severity, lost.replica, lost.offset, lost.expected, lost.actual) == ("warning", 1, 1, 1001, 2000)
    assert run.events[lost.evidence[0]]["event_type"] == "truncation"


def test_acked_write_truncated_by_running_brokers_is_an_error() -> None:
    """The same loss through truncations of running brokers is not excused."""
    run, _ = _all_replicas_lose_offset_1(power_loss=False)
    [lost] = only(run.check(), "acked_write_lost")
    assert (lost.severity, lost.replica, lost.offset) == ("error", 1, 1)
    assert {v.invariant for v in run.check().errors} >= {"truncation_safety", "acked_write_lost"}


def _acks1_write_then_failover(replicated: bool) -> tuple[Run, int, int]:
    """Leader 1 appends 3000@2 and acknowledges it with acks=1 (replicated to 2 and 3 or not); broker 2 then
    leads epoch 1 with ISR {2, 3} and writes 2001@2. Returns (run, the acks=1 append, its ack)."""
    run = healthy()
    if replicated:
        append_id, ack_id = run.produce(1, [2, 3], 1, 0, 3000, acks=1)
    else:
        append_id = run.append(1, 1, 0, 3000, role="leader")
        ack_id = run.ack(1, 2, 2, 3000, 0, acks=1)
    run.election(2, 1, [2, 3])
    run.become_leader(2, 1, [2, 3])
    run.become_follower(3, 1, 2)
    run.become_follower(1, 1, 2)
    if not replicated:
        run.truncate(1, 2, "diverging_epoch", 1)
    run.produce(2, [3], 1, 1, 2001)
    return run, append_id, ack_id


def test_acks1_write_lost_in_a_failover_is_an_info_finding() -> None:
    """acks1_write_lost: the acks=1 write 3000@2 only its leader had is not on final leader 2 (2001 is there):
    an info finding naming the offset, both checksums and the append and ack; the run stays clean."""
    run, append_id, ack_id = _acks1_write_then_failover(replicated=False)
    result = run.check()
    [lost] = only(result, "acks1_write_lost")
    assert (lost.severity, lost.replica, lost.offset, lost.expected, lost.actual, lost.event_id) == (
        "info", 2, 2, 3000, 2001, -1)
    assert lost.evidence[:2] == (append_id, ack_id)
    assert lost.message.startswith("acks=1 write acknowledged at 2..2 by broker 1 is not on final leader 2")
    assert result.problems == () and result.infos == (lost,)
    assert result.checked["acks1_write_lost"] == 1 and result.checked["acked_write_lost"] == 3


def test_acks1_write_replicated_before_the_failover_is_not_flagged() -> None:
    """The twin: the acks=1 write reached the new leader before the election, so nothing was lost."""
    run, _, _ = _acks1_write_then_failover(replicated=True)
    result = run.check()
    assert result.violations == () and result.checked["acks1_write_lost"] == 1


def test_in_memory_events_must_be_in_event_id_order() -> None:
    """check_events refuses a stream whose event_ids go backwards within a run (never a silent replay)."""
    import pytest

    from replication_core.checker.checker import CheckInputError, check_events

    events = healthy().events
    with pytest.raises(CheckInputError, match="strictly increasing"):
        check_events([events[1], events[0]])
