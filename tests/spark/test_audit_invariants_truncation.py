"""truncation_point (jobs.invariants.truncation_point) on tiny hand-built runs: each branch violated and clean.

The runs are those of the reference checker's own tests (`tests.checker.builder`,
`tests.checker.test_kip_shapes`): each case puts a violating run `bad` and its clean twin `ok` into the one
audit of all hand-built cases (`tests.spark.audit_cases`), expects the violation rows worked out by hand (§ of
the reference in each check's docstring), and runs the same events through the reference checker, which must
report exactly those rows. A last test compares both sides on simulated KIP runs and mutations of them (the
shipped simulations never violate truncation_point).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame

import jobs.invariants as inv
from replication_core.checker.checker import check_events
from replication_core.checker.reader import read_events
from replication_core.config import TruncationMode
from replication_core.sim.cli import load_scenario, simulate
from tests.checker.builder import Run, follower_behind_the_leaders_cache, follower_with_stale_epoch_records, healthy
from tests.checker.test_kip_shapes import kip279_fast_failover
from tests.spark import test_audit_invariants_log as logs
from tests.spark.audit_cases import Case, Rows, found, key_schema, reference, register, same_rows, timed
from tests.spark.conftest import make_events
from tests.spark.test_differential import SCENARIOS

KEY_COLUMNS = ("run_id", "invariant", "severity", "topic", "partition", "replica", "event_id", "offset", "expected",
               "actual", "evidence")
KEY_SCHEMA = key_schema(KEY_COLUMNS)
INVARIANT = "truncation_point"

AUDIT_CASES: list[Case] = []
case = register(AUDIT_CASES)


def _rows(run: Run) -> Rows:
    """The builder's events without their run id (`event_rows` stamps one)."""
    return [{k: v for k, v in e.items() if k != "run_id"} for e in run.events]


def _case(runs: dict[str, Run], expected: list[tuple]) -> Case:
    """`runs` in the shared audit, expecting `expected` (also from the reference checker, tested below)."""
    return Case("", INVARIANT, {name: _rows(run) for name, run in runs.items()}, expected, KEY_COLUMNS)


@case
def diverging_epoch_truncation_must_go_to_the_answer() -> Case:
    # Leader 2's cache gives (0, 2) for LastFetchedEpoch 0; the follower truncates to 3 instead of 2:
    # expected 2, actual 3, evidence = the answer, the truncation.
    bad, ok = follower_with_stale_epoch_records(), follower_with_stale_epoch_records()
    answer = bad.response(3, 2, 1, 4, diverging=(0, 2))
    eid = bad.truncate(3, 3, "diverging_epoch", 1)
    ok.response(3, 2, 1, 4, diverging=(0, 2))
    ok.truncate(3, 2, "diverging_epoch", 1)
    return _case({"bad": bad, "ok": ok},
                 [("bad", INVARIANT, "error", "t", 0, 3, eid, None, 2, 3, [answer, eid])])


@case
def a_wrong_diverging_epoch_answer_is_flagged_on_the_leader() -> Case:
    # The leader answers (0, 3) where its cache gives (0, 2): replica = the leader, expected 2, actual 3,
    # evidence = the fetch, the answer. The follower's truncation to 3 is right all the same: it is what (0, 3)
    # gives (truncateTo drops its batch [2, 3] whole, the LEO becomes 3). The twin answers (0, 2).
    bad, ok = follower_with_stale_epoch_records(), follower_with_stale_epoch_records()
    answer = bad.response(3, 2, 1, 4, diverging=(0, 3))
    bad.truncate(3, 3, "diverging_epoch", 1)
    ok.response(3, 2, 1, 4, diverging=(0, 2))
    ok.truncate(3, 2, "diverging_epoch", 1)
    return _case({"bad": bad, "ok": ok},
                 [("bad", INVARIANT, "error", "t", 0, 2, answer, None, 2, 3, [answer - 1, answer])])


@case
def an_answer_for_the_leaders_latest_epoch_may_end_anywhere_up_to_its_leo() -> Case:
    # LastFetchedEpoch 1 is leader 2's latest epoch (LEO 3): (1, 3) is legal; (1, 4) is past its LEO and
    # (0, 3) names another epoch (expected = its LEO 3 both times). After (1, 4) nothing is owed below the
    # follower's LEO 4, so its next fetch only trims its cache; after (0, 3) and (1, 3) it truncates to 3.
    def run(answers: list[tuple[int, int]]) -> tuple[Run, list[int]]:
        r = follower_with_stale_epoch_records()
        r.response(3, 2, 1, 4, leader_hw=3)
        ids = []
        for a in answers:
            r.fetch(3, 2, 1, r.leo[3], last_fetched_epoch=1)
            ids.append(r.response(3, 2, 1, r.leo[3], diverging=a))
            if a[1] < 4:
                r.truncate(3, a[1], "diverging_epoch", 1)
        return r, ids

    (bad, ids), (ok, _) = run([(1, 4), (0, 3)]), run([(1, 3)])
    return _case({"bad": bad, "ok": ok},
                 [("bad", INVARIANT, "error", "t", 0, 2, ids[0], None, 3, 4, [ids[0] - 1, ids[0]]),
                  ("bad", INVARIANT, "error", "t", 0, 2, ids[1], None, 3, 3, [ids[1] - 1, ids[1]])])


@case
def an_answer_for_an_epoch_older_than_the_leaders_cache_is_bounded_after_retention() -> Case:
    # Leader 2 answers LastFetchedEpoch 0 from its cache {1: 3} (`follower_behind_the_leaders_cache`). With its
    # log start raised to 4 between the fetch and the response, the answer may predate that: (0, 3) is legal
    # (`ok`), (0, 5) is above the first start now (`bad`), (1, 3) names another epoch (`epoch`). Without the
    # raise the answer is exact: (0, 2) is below the first start 3 (`exact`). Replica = the leader, expected
    # its first start, evidence = the fetch, the answer; a follower owing a truncation truncates to the answer's
    # offset.
    def answered(answer: tuple[int, int], raised: bool) -> tuple[Run, int, int]:
        r = follower_behind_the_leaders_cache()
        fetch = len(r.events) - 1
        if raised:
            r.add("log_start_offset_change", 2, 1, role="leader", old_log_start_offset=3, log_start_offset=4)
        eid = r.response(3, 2, 1, 4, diverging=answer)
        if answer[1] < r.leo[3]:
            r.truncate(3, answer[1], "diverging_epoch", 1)
        return r, fetch, eid

    bad, bad_fetch, bad_id = answered((0, 5), True)
    epoch, epoch_fetch, epoch_id = answered((1, 3), True)
    exact, exact_fetch, exact_id = answered((0, 2), False)
    ok, _, _ = answered((0, 3), True)
    ok_exact, _, _ = answered((0, 3), False)
    return _case({"bad": bad, "epoch": epoch, "exact": exact, "ok": ok, "ok_exact": ok_exact},
                 [("bad", INVARIANT, "error", "t", 0, 2, bad_id, None, 4, 5, [bad_fetch, bad_id]),
                  ("epoch", INVARIANT, "error", "t", 0, 2, epoch_id, None, 4, 3, [epoch_fetch, epoch_id]),
                  ("exact", INVARIANT, "error", "t", 0, 2, exact_id, None, 3, 2, [exact_fetch, exact_id])])


@case
def an_answer_from_a_leader_added_back_reads_its_new_logs_start() -> Case:
    # Broker 2's first replica (epoch-0 records 0..4, log start 3) is deleted and broker 2 added back: its
    # become_follower reports LEO 0, a new log starting at 0. Elected in epoch 2 it writes 0..4, and retention
    # moves its log start to 2: its cache is {2: 2}. Follower 3 fetches at 5 with LastFetchedEpoch 0, which
    # the leader answers (0, 2) (`ok`); (0, 0) (`bad`) is below the first start: expected 2, actual 0,
    # evidence = the fetch, the answer. Overlapping seed 510374: a replay that kept the deleted replica's log
    # start (3) did not trim the cache at the raise to 2, and flagged the right answer.
    def run(answer: tuple[int, int]) -> tuple[Run, int, int]:
        r = Run()
        r.election(1, 0, [1, 2, 3])
        r.become_leader(1, 0, [1, 2, 3])
        r.become_follower(2, 0, 1)
        r.become_follower(3, 0, 1)
        r.produce(1, [2, 3], 5, 0, 1000, acks=1)
        r.add("log_start_offset_change", 2, 0, role="follower", old_log_start_offset=0, log_start_offset=3)
        r.leo[2], r.hws[2] = 0, 0
        r.add("leadership_change", 2, 1, action="become_follower", leader_id=1, partition_epoch=1,
              replicas=[1, 2, 3], isr=[], leo=0, hw=0, adding_replicas=[2])
        r.election(2, 2, [2], action="unclean")
        r.become_leader(2, 2, [2])
        r.become_follower(3, 2, 2)
        r.append(2, 5, 2, 2000, role="leader")
        r.add("log_start_offset_change", 2, 2, role="leader", old_log_start_offset=0, log_start_offset=2)
        fetch = r.fetch(3, 2, 2, 5, last_fetched_epoch=0)
        eid = r.response(3, 2, 2, 5, diverging=answer)
        r.truncate(3, answer[1], "diverging_epoch", 2)
        return r, fetch, eid

    (bad, fetch, eid), (ok, _, _) = run((0, 0)), run((0, 2))
    return _case({"bad": bad, "ok": ok}, [("bad", INVARIANT, "error", "t", 0, 2, eid, None, 2, 0, [fetch, eid])])


@case
def a_floor_epoch_answer_from_before_retention_collapsed_it_is_legal() -> Case:
    # Broker 1 leads epoch 0 and commits 0..14 on all three replicas. Broker 3 leads epoch 1 and writes 15..19
    # alone; broker 2 is elected into epoch 2 with ISR {1, 2} and commits 15..19 of epoch 2 with broker 1: its
    # cache is (0, 0), (2, 15). Follower 3 (cache (0, 0), (1, 15), LEO 20) fetches at 20 with LastFetchedEpoch 1,
    # between the leader's entries: `endOffsetFor` answers the floor entry's epoch, 0, with the next entry's
    # start, 15. The answer reaches 3 at once but is processed 6 ms after the fetch; in between the leader's
    # retention moves its log start from 0 to 15, and `truncateFromStart(15)` drops (0, 0) and moves nothing, as
    # (2, 15) already starts there: the cache is (2, 15), in which epoch 1 is older than every entry. The answer
    # (0, 15) names the floor epoch that rise removed; with (0, 0) of its own, 3 truncates to min(15, 15) = 15
    # (`ok`). Without the rise (`ok_exact`) (0, 15) is exactly the cache's answer. With the rise before the fetch
    # (`early`) the leader's cache never had epoch 0 when it answered, which would have been (1, 15): flagged on
    # the leader, expected 15, actual 15, evidence = the fetch, the answer. Seed 1158060 of `--overlapping`
    # showed it in simulated runs until session 91 (and 500448 before that).
    def run(rise: str | None) -> tuple[Run, int, int]:
        r = Run()
        r.election(1, 0, [1, 2, 3])
        r.become_leader(1, 0, [1, 2, 3])
        r.become_follower(2, 0, 1)
        r.become_follower(3, 0, 1)
        r.produce(1, [2, 3], 15, 0, 1000)
        r.election(3, 1, [1, 2, 3])
        r.become_leader(3, 1, [1, 2, 3])
        r.append(3, 5, 1, 2000, role="leader")
        r.election(2, 2, [1, 2])
        r.become_leader(2, 2, [1, 2])
        r.become_follower(1, 2, 2)
        r.become_follower(3, 2, 2)
        r.produce(2, [1], 5, 2, 3000)

        def retention(ts: int | None = None) -> int:
            return r.add("log_start_offset_change", 2, 2, ts=ts, role="leader", old_log_start_offset=0,
                         log_start_offset=15)

        if rise == "early":
            retention()
        fetch = r.fetch(3, 2, 2, 20, last_fetched_epoch=1)
        sent = r.ts
        if rise == "between":
            retention(sent + 3)
        eid = r.response(3, 2, 2, 20, diverging=(0, 15), received=sent + 1, ts=sent + 6)
        r.truncate(3, 15, "diverging_epoch", 2)
        return r, fetch, eid

    (ok, _, _), (ok_exact, _, _), (early, fetch, eid) = run("between"), run(None), run("early")
    return _case({"ok": ok, "ok_exact": ok_exact, "early": early},
                 [("early", INVARIANT, "error", "t", 0, 2, eid, None, 15, 15, [fetch, eid])])


@case
def a_missing_truncation_after_a_diverging_answer_is_flagged() -> Case:
    # The follower fetches again without truncating after (0, 2): expected 2, actual its LEO 4, evidence =
    # the answer, the fetch. A second answer still owed at the end of the run is flagged with event -1.
    # The twin truncates to 2 first.
    bad, ok = follower_with_stale_epoch_records(), follower_with_stale_epoch_records()
    answer = bad.response(3, 2, 1, 4, diverging=(0, 2))
    again = bad.fetch(3, 2, 1, 4, last_fetched_epoch=0)
    last = bad.response(3, 2, 1, 4, diverging=(0, 2))
    ok.response(3, 2, 1, 4, diverging=(0, 2))
    ok.truncate(3, 2, "diverging_epoch", 1)
    ok.fetch(3, 2, 1, 2, last_fetched_epoch=0)
    return _case({"bad": bad, "ok": ok},
                 [("bad", INVARIANT, "error", "t", 0, 3, again, None, 2, 4, [answer, again]),
                  ("bad", INVARIANT, "error", "t", 0, 3, -1, None, 2, 4, [last])])


@case
def a_truncation_owed_while_its_response_is_still_being_processed_at_the_end_is_not_flagged() -> Case:
    # The answer's response also answered t-1 OFFSET_OUT_OF_RANGE, whose ListOffsets was in flight when the
    # run ended (the truncation of t-0 comes after it): not flagged. The twin's fetcher fetched again after
    # that response, so the truncation was due: flagged at the end, with event -1 (seed 538945).
    def run(fetched_since: bool) -> tuple[Run, int]:
        r = follower_with_stale_epoch_records()
        answer = r.response(3, 2, 1, 4, diverging=(0, 2), received=500)
        other = r.response(3, 2, 1, 9, error="OFFSET_OUT_OF_RANGE", received=500)
        r.events[other]["partition"] = 1
        if fetched_since:
            again = r.fetch(3, 2, 1, 9)
            r.events[again]["partition"] = 1
        return r, answer

    (ok, _), (bad, answer) = run(False), run(True)
    return _case({"bad": bad, "ok": ok}, [("bad", INVARIANT, "error", "t", 0, 3, -1, None, 2, 4, [answer])])


@case
def high_watermark_truncation_must_go_to_the_local_hw() -> Case:
    # Follower 2 with HW 2 truncating to 1 is wrong (expected 2, actual 1; it never truncated before, so the
    # evidence is the truncation only); to 2 is right.
    bad, ok = healthy(), healthy()
    bad.append(2, 1, 0, 1002)
    eid = bad.truncate(2, 1, "high_watermark", 0)
    ok.append(2, 1, 0, 1002)
    ok.truncate(2, 2, "high_watermark", 0)
    return _case({"bad": bad, "ok": ok},
                 [("bad", INVARIANT, "error", "t", 0, 2, eid, None, 2, 1, [eid])])


def _kip279(truncate_to: int, mode: str = "leader_epoch") -> tuple[Run, dict[str, int]]:
    """KIP-279's fast failover (`kip279_fast_failover`, leader_epoch mode), B's truncation moved to
    `truncate_to` and both brokers' replog.truncation.mode set to `mode`."""
    good, ids = kip279_fast_failover(v0=False)
    run = Run()
    run.events = [dict(e) for e in good.events]
    run.events[ids["truncation"]]["truncate_offset"] = truncate_to
    for e in run.events:
        if e["event_type"] == "broker_config":
            e["config"] = {**e["config"], "replog.truncation.mode": mode}
    return run, ids


@case
def leader_epoch_truncation_follows_the_leaders_epoch_cache() -> Case:
    # Leader A's cache answers (1, 4) for B's latest epoch; B's own end of epoch 1 is 2, so truncating to 3
    # (what a v0 answer gives) is wrong. Evidence: B's truncation only (it never truncated before).
    bad, ids = _kip279(3)
    ok, _ = _kip279(2)
    eid = ids["truncation"]
    return _case({"bad": bad, "ok": ok},
                 [("bad", INVARIANT, "error", "t", 0, 2, eid, None, 2, 3, [eid])])


@case
def leader_epoch_v0_answers_carry_no_epoch() -> Case:
    # With OffsetsForLeaderEpoch v0 the answer is the end offset only: min(4, B's LEO 3) = 3, so the
    # truncation to 2 that is right with epochs is wrong, and 3 is right.
    bad, ids = _kip279(2, "leader_epoch_v0")
    ok, _ = _kip279(3, "leader_epoch_v0")
    eid = ids["truncation"]
    return _case({"bad": bad, "ok": ok},
                 [("bad", INVARIANT, "error", "t", 0, 2, eid, None, 3, 2, [eid])])


@case
def a_leader_epoch_round_that_ends_at_the_leo_is_followed_by_another() -> Case:
    # Follower 2 led epoch 0 (0..8) and, cut off, epoch 2 without appending: cache (0, 0), (2, 9), LEO 9.
    # Leader 1 holds 0..4 of epoch 0 and 5..11 of epoch 1 and leads epoch 3: cache (0, 0), (1, 5), (3, 12).
    # Asked for epoch 2 it answers (1, 12); epoch 1 is unknown to the follower, whose end of epoch 0 is its
    # LEO 9: truncateTo(9) changes no record (no event) but trims (2, 9), and the follower asks for epoch 0:
    # (0, 5), so it truncates to 5 (event 10). `bad` truncates to 0: expected 5, actual 0. Overlapping-nemesis
    # seeds 500288, 500368, 500676 and 501101, in leader-epoch mode, did the two rounds.
    def run(to: int) -> Rows:
        return [logs.leader(broker=2, epoch=0), logs.follower(broker=1, epoch=0, leader_id=2),
                logs.append(0, 4, broker=2, epoch=0), logs.append(0, 4, broker=1, epoch=0, role="follower"),
                logs.append(5, 8, broker=2, epoch=0), logs.leader(broker=1, epoch=1, leo=5, hw=0),
                logs.append(5, 11, broker=1, epoch=1), logs.leader(broker=2, epoch=2, leo=9, hw=0),
                logs.leader(broker=1, epoch=3, leo=12, hw=0),
                logs.follower(broker=2, epoch=3, leader_id=1, leo=9, hw=0),
                dict(event_type="truncation", broker_id=2, leader_epoch=3, truncate_offset=to, old_leo=9,
                     reason="leader_epoch", hw=0)]

    return Case("", INVARIANT, {"ok": timed(run(5)), "bad": timed(run(0))},
                [("bad", INVARIANT, "error", "t", 0, 2, 10, None, 5, 0, [10])], KEY_COLUMNS)


@case
def an_epoch_a_follower_opened_as_leader_without_appending_is_trimmed_before_its_next_append() -> Case:
    # Broker 1 holds 0..4 (epoch 0), 5..6 (epoch 1), 7..8 (epoch 2, from leader 4), and leads epoch 3 at its LEO 9
    # without appending: cache (0, 0), (1, 5), (2, 7), (3, 9). Following 4 in epoch 4, its fetcher's truncateTo(9)
    # changes no record (no event) but trims (3, 9); it then appends 9..11 of epoch 2, its latest epoch again, so
    # the cache stays (0, 0), (1, 5), (2, 7). (Without the trim, assign(2, 9) would drop (2, 7) with (3, 9).)
    # Leading epoch 5, broker 1 answers follower 3 (epoch 1's 5..9 from leader 2, LEO 10) with (1, 7): 3 truncates
    # to 7 (event 26). `bad` truncates to 9: expected 7, actual 9. Power seed 597433 did this in leader-epoch mode.
    four = dict(replicas=[1, 2, 3, 4], isr=[1, 2, 3, 4])

    def run(to: int) -> Rows:
        def lead(broker: int, epoch: int, leo: int) -> dict[str, Any]:
            return logs.leader(broker=broker, epoch=epoch, leo=leo, **four)

        def follow(broker: int, epoch: int, leader: int, leo: int) -> dict[str, Any]:
            return logs.follower(broker=broker, epoch=epoch, leader_id=leader, leo=leo, **four)

        def copy(base: int, last: int, broker: int, epoch: int) -> dict[str, Any]:
            return logs.append(base, last, broker=broker, epoch=epoch, role="follower")

        return [lead(2, 0, 0), follow(1, 0, 2, 0), follow(3, 0, 2, 0), follow(4, 0, 2, 0),
                logs.append(0, 4, broker=2, epoch=0), copy(0, 4, 1, 0), copy(0, 4, 3, 0), copy(0, 4, 4, 0),
                lead(2, 1, 5), follow(1, 1, 2, 5), follow(3, 1, 2, 5), follow(4, 1, 2, 5),
                logs.append(5, 9, broker=2, epoch=1), copy(5, 9, 3, 1), copy(5, 6, 4, 1), copy(5, 6, 1, 1),
                lead(4, 2, 7), follow(1, 2, 4, 7), logs.append(7, 11, broker=4, epoch=2), copy(7, 8, 1, 2),
                lead(1, 3, 9), lead(4, 4, 12), follow(1, 4, 4, 9), dict(copy(9, 11, 1, 2), leader_epoch=4),
                lead(1, 5, 12), follow(3, 5, 1, 10),
                dict(event_type="truncation", broker_id=3, leader_epoch=5, truncate_offset=to, old_leo=10,
                     reason="leader_epoch", hw=0)]

    return Case("", INVARIANT, {"ok": timed(run(7)), "bad": timed(run(9))},
                [("bad", INVARIANT, "error", "t", 0, 3, 26, None, 7, 9, [26])], KEY_COLUMNS)


@case
def out_of_range_truncation_is_bounded_by_the_leaders_leo() -> Case:
    # Leader 1's LEO is 2: an out-of-range truncation of follower 2 to 3 is above it (expected 2, actual 3,
    # evidence the truncation only); to 2 is within. A follower whose leader is not leading in its epoch is
    # not judged (run `skip`).
    def run(to: int, epoch: int = 0) -> tuple[Run, int]:
        r = healthy()
        if epoch:
            r.become_follower(2, epoch, 1)
        return r, r.truncate(2, to, "out_of_range", epoch)

    (bad, eid), (ok, _), (skip, _) = run(3), run(2), run(5, epoch=1)
    return _case({"bad": bad, "ok": ok, "skip": skip},
                 [("bad", INVARIANT, "error", "t", 0, 2, eid, None, 2, 3, [eid])])



@pytest.mark.parametrize("case", AUDIT_CASES, ids=lambda c: c.name)
def test_spark_finds_the_violations_worked_out_by_hand(case: Case, audited: DataFrame, expect) -> None:
    expect(found(audited, case), case.expected, KEY_SCHEMA)


@pytest.mark.parametrize("case", AUDIT_CASES, ids=lambda c: c.name)
def test_the_reference_checker_finds_the_same(case: Case) -> None:
    assert same_rows(reference(case), case.expected), reference(case)


def _mutations(events: Rows, run_id: str) -> dict[str, Rows]:
    """Variants of a simulated run that break truncation_point: every truncation one offset further, every
    DivergingEpoch end offset one further, the diverging_epoch truncations dropped (owed, never done)."""
    def variant(name: str, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Rows:
        out = [change(dict(e, run_id=f"{run_id}#{name}")) for e in events]
        return [e for e in out if e is not None]

    def later(e: dict[str, Any]) -> dict[str, Any]:
        return dict(e, truncate_offset=e["truncate_offset"] + 1) if e["event_type"] == "truncation" else e

    def wrong_answer(e: dict[str, Any]) -> dict[str, Any]:
        if e["event_type"] == "fetch_response" and e.get("diverging_end_offset") is not None:
            return dict(e, diverging_end_offset=e["diverging_end_offset"] + 1)
        return e

    def no_truncation(e: dict[str, Any]) -> dict[str, Any] | None:
        return None if e["event_type"] == "truncation" and e.get("reason") == "diverging_epoch" else e

    return {name: variant(name, f) for name, f in
            (("later", later), ("wrong_answer", wrong_answer), ("no_truncation", no_truncation))}


def test_spark_and_checker_agree_on_mutated_simulated_runs(spark, tmp_path) -> None:
    # Simulated KIP-101 / KIP-279 runs in the diverging-epoch, leader-epoch and high-watermark generations,
    # each also with its truncations moved, its DivergingEpoch answers wrong and its diverging truncations
    # dropped: the same truncation_point rows (evidence included) on both sides, and some in each branch.
    modes = {"kip-279-fast-failover": (None, TruncationMode.LEADER_EPOCH),
             "kip-101-divergence": (None,), "kip-101-hw-truncation": (TruncationMode.HIGH_WATERMARK,)}
    runs: dict[str, Rows] = {}
    for stem, generations in modes.items():
        for mode in generations:
            label = f"{stem}@{mode.value if mode else 'default'}"
            simulate(load_scenario(SCENARIOS / f"{stem}.yaml").with_overrides(truncation_mode=mode),
                     tmp_path / label)
            events = [dict(e, run_id=label) for e in read_events(tmp_path / label)]
            runs[label] = events
            runs.update({f"{label}#{k}": v for k, v in _mutations(events, label).items()})
    reference = {(v.run_id, v.replica, v.event_id, v.expected, v.actual, v.evidence, v.message.split(" ")[0])
                 for rows in runs.values() for v in check_events(rows).violations if v.invariant == INVARIANT}
    df = make_events(spark, [e for rows in runs.values() for e in rows])
    # A few dozen violation rows, not events: compared in the driver.
    found = {(r["run_id"], r["replica"], r["event_id"], r["expected"], r["actual"], tuple(r["evidence"]),
              r["message"].split(" ")[0]) for r in inv.truncation_point(df).collect()}
    assert found == reference, {"only_checker": sorted(reference - found), "only_spark": sorted(found - reference)}
    kinds = {k for *_, k in reference}
    assert {"diverging_epoch", "leader_epoch", "high_watermark", "leader", "DivergingEpoch"} <= kinds, kinds
