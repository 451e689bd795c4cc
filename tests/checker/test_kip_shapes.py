"""The KIP-101 and KIP-279 failure shapes of reference §8 as hand-built event sequences.

Each shape is built twice: as the broken protocol generation behaves (the checker must name the
invariant, partition, replica and offsets of the loss / divergence) and as the fixed generation behaves
on the same history (no error).
"""

from __future__ import annotations

from tests.checker.builder import Run, names, only

AB = (1, 2)


def kip101_hw_truncation(truncate_to_hw: bool) -> tuple[Run, dict[str, int]]:
    """KIP-101 problem 1 (§8.1): B (2) leads, A (1) follows; m1@0, m2@1 acked with B's HW 2 while A's HW
    is still 1; A restarts and (pre-KIP-101) truncates to its HW; B dies; A is elected cleanly and
    writes m3 — at offset 1 if it truncated."""
    run = Run()
    mode = "high_watermark" if truncate_to_hw else "leader_epoch"
    run.config(1, replog_truncation_mode=mode)
    run.config(2, replog_truncation_mode=mode)
    run.election(2, 0, AB, replicas=AB)
    run.become_leader(2, 0, AB, replicas=AB)
    run.become_follower(1, 0, 2, replicas=AB)
    run.produce(2, [1], 1, 0, 101)
    ids = {"m2_append": run.append(2, 1, 0, 102, role="leader")}
    run.append(1, 1, 0, 102)
    run.fetch_state(2, 1, 2, 0)
    run.hw(2, 2, "leader", 0)
    ids["m2_ack"] = run.ack(2, 1, 1, 102, 0)
    run.lifecycle(1, "crash")
    run.lifecycle(1, "restart")
    run.become_follower(1, 0, 2, replicas=AB)
    if truncate_to_hw:
        ids["truncation"] = run.truncate(1, 1, "high_watermark", 0)
    run.lifecycle(2, "crash")
    ids["election"] = run.election(1, 1, [1], replicas=AB)
    ids["takes_office"] = run.become_leader(1, 1, [1], replicas=AB)
    ids["m3_append"], _ = run.produce(1, [], 1, 1, 103)
    return run, ids


def test_kip101_acknowledged_write_lost_after_hw_truncation() -> None:
    """Pre-KIP-101: m2 (acked at offset 1) is gone from the final leader A, replaced by m3."""
    run, ids = kip101_hw_truncation(truncate_to_hw=True)
    result = run.check()
    assert names(result) == ["truncation_safety", "inconsistent_offsets", "committed_prefix_agreement",
                             "acked_write_lost"]
    assert all(v.severity == "error" and (v.topic, v.partition) == ("t", 0) for v in result.violations)
    [trunc] = only(result, "truncation_safety")
    assert (trunc.replica, trunc.offset, trunc.expected, trunc.actual, trunc.event_id) == (
        1, 1, 2, 1, ids["truncation"])
    [lost] = only(result, "acked_write_lost")
    assert (lost.replica, lost.offset, lost.expected, lost.actual) == (1, 1, 102, 103)
    # A truncated m2 to the HW while B, the leader in office, still held it: m2 was lost when A took office without
    # it (its become_leader after the election). The evidence names that, then the truncation that removed m2 from A,
    # then A's append of m3.
    assert lost.evidence == (ids["m2_append"], ids["m2_ack"], ids["takes_office"], ids["truncation"],
                             ids["m3_append"])
    assert lost.ts_ms == run.events[ids["takes_office"]]["ts_ms"] > run.events[ids["truncation"]]["ts_ms"]
    [twice] = only(result, "inconsistent_offsets")
    assert (twice.replica, twice.offset, twice.expected, twice.actual) == (1, 1, 102, 103)


def test_kip101_same_history_with_epoch_truncation_loses_nothing() -> None:
    """KIP-101 fix: A asks B for the end of epoch 0 (2), truncates nothing; m3 lands at offset 2."""
    run, _ = kip101_hw_truncation(truncate_to_hw=False)
    result = run.check()
    assert result.violations == ()
    assert result.checked["acked_write_lost"] == 3


def kip279_fast_failover(v0: bool) -> tuple[Run, dict[str, int]]:
    """KIP-279 (§8.2): A (1) leads epoch 1 with 0-1 committed and 2, 3 only on A; B (2) leads epoch 2 and
    commits 601@2; A is elected uncleanly in epoch 3 and writes 701@4; B follows A. With
    OffsetsForLeaderEpoch v0, A answers "end of epoch 2 = 4" and B (LEO 3) keeps 601@2; with epochs,
    A answers (1, 4), B truncates to its own end of epoch 1 = 2."""
    run = Run()
    mode = "leader_epoch_v0" if v0 else "leader_epoch"
    for b in AB:
        run.config(b, replog_truncation_mode=mode, unclean_leader_election_enable="true")
    run.election(1, 1, AB, replicas=AB)
    run.become_leader(1, 1, AB, replicas=AB)
    run.become_follower(2, 1, 1, replicas=AB)
    run.produce(1, [2], 2, 1, 501)
    ids = {"a_at_2": run.append(1, 1, 1, 502, role="leader")}
    run.append(1, 1, 1, 503, role="leader")
    run.lifecycle(1, "crash")
    run.election(2, 2, [2], replicas=AB)
    run.become_leader(2, 2, [2], replicas=AB)
    ids["b_at_2"], _ = run.produce(2, [], 1, 2, 601)
    run.lifecycle(2, "crash")
    run.lifecycle(1, "restart")
    ids["unclean"] = run.election(1, 3, [1], action="unclean", replicas=AB)
    run.become_leader(1, 3, [1], replicas=AB)
    run.produce(1, [], 1, 3, 701)
    run.lifecycle(2, "restart")
    run.become_follower(2, 3, 1, replicas=AB)
    if not v0:
        ids["truncation"] = run.truncate(2, 2, "leader_epoch", 3)
        run.append(2, 1, 1, 502)
    ids["b_append_3"] = run.append(2, 1, 1, 503)
    run.append(2, 1, 3, 701)
    return run, ids


def test_kip279_v0_answer_leaves_divergent_logs() -> None:
    """Pre-KIP-279: B appends A's 503@3 right after its own 601@2 where A has 502@2."""
    run, ids = kip279_fast_failover(v0=True)
    result = run.check()
    [div] = only(result, "follower_log_matching")
    assert (div.severity, div.topic, div.partition, div.replica, div.offset, div.expected, div.actual) == (
        "error", "t", 0, 2, 2, 502, 601)
    assert div.event_id == ids["b_append_3"] and ids["b_at_2"] in div.evidence and ids["a_at_2"] in div.evidence
    [epochs] = only(result, "epoch_cache_monotonic")
    assert (epochs.replica, epochs.offset, epochs.expected, epochs.actual) == (2, 3, 2, 1)
    assert {v.invariant for v in result.errors} == {"follower_log_matching", "epoch_cache_monotonic"}


def test_kip279_epoch_answer_truncates_to_the_divergence_point() -> None:
    """KIP-279: B truncates to 2 (the truncation point check agrees); what remains are warnings that the
    unclean election explains: B's acknowledged 601@2 is lost and offset 2 was committed twice."""
    run, ids = kip279_fast_failover(v0=False)
    result = run.check()
    assert result.errors == ()
    assert only(result, "truncation_point") == [] and result.checked["truncation_point"] == 1
    warned = {v.invariant for v in result.warnings}
    assert warned == {"acked_write_lost", "inconsistent_offsets", "committed_prefix_agreement"}
    [lost] = only(result, "acked_write_lost")
    assert (lost.replica, lost.offset, lost.expected, lost.actual) == (1, 2, 601, 502)
    assert all(v.evidence[0] == ids["unclean"] for v in result.warnings)


def test_kip279_wrong_truncation_point_is_flagged_in_leader_epoch_mode() -> None:
    """truncation_point: in leader_epoch mode B truncating to 3 (what a v0 answer gives) is wrong: the
    leader's epoch cache answers (1, 4) and B's own end of epoch 1 is 2."""
    good, ids = kip279_fast_failover(v0=False)
    events = [dict(e) for e in good.events]
    events[ids["truncation"]]["truncate_offset"] = 3
    run = Run()
    run.events = events
    [v] = only(run.check(), "truncation_point")
    assert (v.replica, v.expected, v.actual, v.event_id) == (2, 2, 3, ids["truncation"])
