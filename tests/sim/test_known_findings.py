"""The known, Kafka-faithful findings (`tests.sim.known_findings`): recognised exactly, and reproduced by seeded runs.

The hand-built event lists hold only what each rule reads; every negative case removes or moves one link of the
chain, so a looser rule (one that would excuse a real bug of the same invariant) fails them. Seeds campaigns found
before session 92 run with `before_kraft_lifecycle` (and older ones with `before_metadata_deltas`, `before_kip903`),
which reproduces the runs they were found in.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from replication_core.checker.violation import Violation
from replication_core.sim.cli import max_network_delay_ms
from replication_core.sim.cluster import RunStats
from replication_core.sim.scenario import Fault, Scenario
from tests.sim.audit import audit
from tests.sim.campaign import (
    before_kip903,
    before_kraft_lifecycle,
    before_metadata_deltas,
    correlated_scenario,
    deep_scenario,
    overlapping_scenario,
    power_reassigning_scenario,
    power_scenario,
    problems,
    problems_in,
    reassigning_scenario,
    throttled_scenario,
    with_elr,
)
from tests.sim.helpers import check, recorded_run, run
from tests.sim.known_findings import (
    DIVERGENT_PREFIX_ELECTED,
    EPOCH_BOUNDARY_ERASED,
    EPOCH_START_RELOADED,
    HW_TRUNCATION_AFTER_READD,
    ISR_EXPANSION_RACE,
    STALE_HW_CHECKPOINT,
    known_finding,
)

Event = dict[str, Any]


def _ev(event_type: str, broker: int, topic: str = "u", partition: int = 1, **fields: Any) -> Event:
    return {"event_type": event_type, "broker_id": broker, "topic": topic, "partition": partition, **fields}


def _violation(invariant: str, topic: str, partition: int, replica: int, event_id: int, offset: int) -> Violation:
    return Violation(invariant, "error", "run", topic, partition, replica, 0, event_id, offset, None, None,
                     (event_id,), "")


def _errors(sc: Scenario, recorded: str | None = None) -> tuple[list[Event], RunStats, list[Violation]]:
    """One run of `sc` (or the run `recorded` under that name, `recorded_run`): its events, its stats and the
    checker's errors."""
    events, stats = run(sc)[1:] if recorded is None else recorded_run(recorded)
    return events, stats, [v for v in check(events, stats).violations if v.severity == "error"]


FILLER = _ev("produce_ack", 9, topic="other")


def _propose(state: str = "proposed") -> Event:
    return _ev("isr_change", 3, action="expand", isr_state=state, partition_epoch=9, old_isr=[1, 3], isr=[1, 2, 3],
               reason="follower_caught_up" if state == "proposed" else "reset_to_committed")


def _race(*, reset: bool = True, hw_before_reset: bool = False, reset_epoch: int = 9,
          retried: str | None = None, answered: str | None = None) -> list[Event]:
    """Leader 3 of u-1: proposes adding 2 at partition epoch 9, a metadata update at `reset_epoch` resets the ISR
    to [1, 3], the HW rises, and the metadata commit at epoch 10 adds 2 (seed 200475's sequence until the scheduler
    kept Kafka's fixed rate, shortened).
    `retried`: after the reset the leader proposes 2 again, and the AlterPartition manager rejects it at once
    ("rejected", deep seed 3061's sequence until reassignment epochs followed KRaft; no `--deep --before-kip903` seed
    of 950000-954999 whose only error is the race shows it; `--reassigning` seed 982174's t-0 does, its HW rising
    after the turned-back proposal) or it stays pending ("pending": then it is that proposal
    the commit answers, with no reset after it). `answered`: the first proposal's (resent) AlterPartition is answered
    before the reset with INVALID_UPDATE_VERSION, which leaves it pending ("awaiting_metadata", reassigning seed
    520021's sequence before reassignments kept every throttled move's replicas throttled), or with
    OPERATION_NOT_ATTEMPTED, which resets it ("reset_to_committed")."""
    reset_ev = _ev("isr_change", 3, action="update", isr_state="committed", partition_epoch=reset_epoch,
                   old_isr=[1, 3], isr=[1, 3], reason="leader_and_isr") if reset else FILLER
    hw = _ev("hw_change", 3, role="leader", old_hw=365, hw=375)
    commit = _ev("isr_change", 3, action="update", isr_state="committed", partition_epoch=10, old_isr=[1, 3],
                 isr=[1, 2, 3], reason="leader_and_isr")
    middle = [hw, reset_ev] if hw_before_reset else [reset_ev, hw]
    again = {None: [], "rejected": [_propose(), _propose("rejected")], "pending": [_propose()]}[retried]
    errors = {"awaiting_metadata": "INVALID_UPDATE_VERSION", "reset_to_committed": "OPERATION_NOT_ATTEMPTED"}
    answer = [] if answered is None else [dict(_propose("rejected"), reason=answered, error=errors[answered])]
    return [_ev("leadership_change", 3, action="become_leader"), _propose(), *answer, *middle, *again, commit]


def _race_violation(events: list[Event], replica: int = 2) -> Violation:
    return _violation("isr_holds_committed", "u", 1, replica, len(events) - 1, 365)


@pytest.mark.parametrize("retried", [None, "rejected"])
def test_the_isr_expansion_race_is_recognised(retried: str | None) -> None:
    events = _race(retried=retried)
    assert known_finding(_race_violation(events), events) == ISR_EXPANSION_RACE


def test_the_isr_expansion_race_is_recognised_when_a_resent_proposal_awaits_metadata() -> None:
    events = _race(answered="awaiting_metadata")
    assert known_finding(_race_violation(events), events) == ISR_EXPANSION_RACE


@pytest.mark.parametrize("events", [
    pytest.param(_race(reset=False), id="no-reset: the proposal was never abandoned"),
    pytest.param(_race(hw_before_reset=True), id="hw-rose-before-the-reset"),
    pytest.param(_race(reset_epoch=8), id="reset-at-another-partition-epoch"),
    pytest.param(_race(retried="pending"), id="the-commit-answers-a-proposal-made-after-the-reset"),
    pytest.param(_race(answered="reset_to_committed"), id="the-proposal-was-reset-before-the-metadata-reset"),
])
def test_an_isr_violation_without_the_whole_race_is_not_excused(events: list[Event]) -> None:
    assert known_finding(_race_violation(events), events) is None


def test_the_isr_race_rule_needs_the_commit_to_add_the_lacking_member() -> None:
    events = _race()
    assert known_finding(_race_violation(events, replica=1), events) is None  # 1 was in the ISR already
    assert known_finding(_violation("committed_prefix_agreement", "u", 1, 2, 4, 365), events) is None


def _race_elected(*, reset: bool = True, hw_before_reset: bool = False, action: str = "clean",
                  elected: int = 2) -> list[Event]:
    """Leader 3 of u-1 proposes adding 2 at partition epoch 9, a metadata update at 9 resets its ISR to [1, 3], its
    HW rises from 365 to 375, then 3 fails and the controller elects `elected` (LEO 365) from an ISR that holds
    2: the controller had committed the abandoned proposal, 3 never learned it (`--correlated` seed 561204's
    sequence, shortened)."""
    reset_ev = _ev("isr_change", 3, action="update", isr_state="committed", partition_epoch=9, old_isr=[1, 3],
                   isr=[1, 3], reason="leader_and_isr") if reset else FILLER
    hw = _ev("hw_change", 3, role="leader", old_hw=365, hw=375)
    middle = [hw, reset_ev] if hw_before_reset else [reset_ev, hw]
    election = _ev("leader_election", 1000, action=action, leader_id=elected, isr=[1, 2], partition_epoch=11)
    return [_ev("leadership_change", 3, action="become_leader", leo=300), _propose(), *middle, election,
            _ev("leadership_change", elected, action="become_leader", leo=365)]


@pytest.mark.parametrize("action", ["clean", "controlled_shutdown"])
@pytest.mark.parametrize("invariant", ["acked_write_lost", "truncation_safety", "inconsistent_offsets"])
def test_a_loss_from_electing_the_raced_follower_is_finding_a(invariant: str, action: str) -> None:
    events = _race_elected(action=action)
    event_id = -1 if invariant == "acked_write_lost" else len(events)
    events = [*events, FILLER]
    assert known_finding(_violation(invariant, "u", 1, 2, event_id, 370), events) == ISR_EXPANSION_RACE


@pytest.mark.parametrize(("events", "offset"), [
    pytest.param(_race_elected(reset=False), 370, id="no-reset: the proposal was never abandoned"),
    pytest.param(_race_elected(hw_before_reset=True), 370, id="hw-rose-before-the-reset"),
    pytest.param(_race_elected(action="unclean"), 370, id="unclean-election"),
    pytest.param(_race_elected(elected=1), 370, id="the-elected-replica-was-not-the-raced-one"),
    pytest.param(_race_elected(), 360, id="offset-below-the-elected-leo"),
    pytest.param(_race_elected(), 375, id="offset-at-the-committed-hw"),
])
def test_a_loss_without_the_raced_follower_elected_below_the_hw_is_not_excused(events: list[Event],
                                                                               offset: int) -> None:
    assert known_finding(_violation("acked_write_lost", "u", 1, 2, -1, offset), events) is None


def test_the_raced_followers_election_after_the_old_leader_follows_again_is_finding_a() -> None:
    """The old leader 3, back from a crash, becomes a follower before the controller elects 2: its race lies
    before that (`--correlated` seed 784244's sequence, shortened); without the race it is still no excuse."""
    *head, election, became = _race_elected()
    follows = _ev("leadership_change", 3, action="become_follower", leo=375)
    events = [*head, follows, election, became, FILLER]
    assert known_finding(_violation("truncation_safety", "u", 1, 2, len(events) - 1, 370), events) == \
        ISR_EXPANSION_RACE
    *head, election, became = _race_elected(reset=False)
    events = [*head, follows, election, became, FILLER]
    assert known_finding(_violation("truncation_safety", "u", 1, 2, len(events) - 1, 370), events) is None


def _elected_then_offline(election_action: str = "clean") -> list[Event]:
    """`_race_elected` where the controller elects 2 into epoch 7, then takes the partition offline (epoch 8) before
    2 has its epoch-7 metadata, and 2 becomes leader of epoch 7 (`--throttled` seed 682507's sequence, shortened;
    that seed's run changed when reassignments kept every throttled move's replicas throttled, and 6,700 throttled
    seeds after it showed no other run of it)."""
    *head, election, became = _race_elected(action=election_action)
    offline = _ev("leader_election", 1000, action="offline", leader_id=-1, isr=[], partition_epoch=12, leader_epoch=8)
    return [*head, dict(election, leader_epoch=7), offline, dict(became, leader_epoch=7), FILLER]


def test_the_election_of_the_epoch_the_raced_follower_takes_counts_not_the_latest_one() -> None:
    events = _elected_then_offline()
    assert known_finding(_violation("truncation_safety", "u", 1, 2, len(events) - 1, 370), events) == ISR_EXPANSION_RACE
    # Had epoch 7 been an unclean election, the loss would not be A's, whatever election came after it.
    unclean = _elected_then_offline("unclean")
    assert known_finding(_violation("truncation_safety", "u", 1, 2, len(unclean) - 1, 370), unclean) is None


def _erased(*, fetch_offset: int = 2300, new_log_start: int = 2300, between: bool = False,
            truncated: bool = True) -> list[Event]:
    """Follower 3 of t-1 truncates to 2300 (the leader's answer; or not at all, `truncated=False`), fetches from
    `fetch_offset` and gets the leader's log start offset 2300, appends, raises its HW, then its log start offset
    to `new_log_start` (seed 200347's sequence until the scheduler kept Kafka's fixed rate, shortened); `between` puts
    another of its events between the last two."""
    step = [
        _ev("fetch_response", 3, topic="t", fetch_offset=fetch_offset, leader_log_start_offset=2300, error="NONE"),
        _ev("append", 3, topic="t", role="follower", base_offset=fetch_offset, last_offset=fetch_offset + 9),
        _ev("hw_change", 3, topic="t", role="follower", old_hw=2230, hw=2310),
        _ev("log_start_offset_change", 3, topic="t", role="follower", log_start_offset=new_log_start),
    ]
    if between:
        step.insert(3, _ev("append", 3, topic="t", role="follower", base_offset=2310, last_offset=2319))
    truncation = _ev("truncation", 3, topic="t", truncate_offset=2300, old_leo=2460, reason="diverging_epoch")
    return [truncation if truncated else FILLER, *step]


@pytest.mark.parametrize("truncated", [True, False])
def test_the_erased_epoch_boundary_is_recognised(truncated: bool) -> None:
    events = _erased(truncated=truncated)
    assert known_finding(_violation("committed_prefix_agreement", "t", 1, 3, 3, 2270), events) == EPOCH_BOUNDARY_ERASED


@pytest.mark.parametrize("events", [
    pytest.param(_erased(new_log_start=2260), id="log-start-stays-below-the-divergent-offset"),
    pytest.param(_erased(fetch_offset=2320), id="old-records-above-the-leaders-log-start-stay-readable"),
    pytest.param(_erased(between=True), id="log-start-not-raised-in-the-same-step"),
])
def test_a_prefix_violation_without_the_erased_boundary_is_not_excused(events: list[Event]) -> None:
    assert known_finding(_violation("committed_prefix_agreement", "t", 1, 3, 3, 2270), events) is None


def test_the_erased_boundary_rule_reads_the_detecting_followers_own_step() -> None:
    events = _erased()
    assert known_finding(_violation("committed_prefix_agreement", "t", 1, 4, 3, 2270), events) is None
    assert known_finding(_violation("committed_prefix_agreement", "t", 1, 3, 2, 2270), events) is None


def _stale_checkpoint(raised_to: int = 295, same_instant: bool = True, action: str = "crash") -> list[Event]:
    """Broker 1 crashes (event 0) and its recovery raises its t-0 HW from 292 to `raised_to` (event 1); broker 3
    then writes its own 293 (event 2) and its HW rises over it (event 3)."""
    life = {"event_type": "broker_lifecycle", "broker_id": 1, "action": action, "ts_ms": 100}
    hw = _ev("hw_change", 1, topic="t", partition=0, role="follower", old_hw=292, hw=raised_to,
             ts_ms=100 if same_instant else 101)
    return [life, hw, _ev("append", 3, topic="t", partition=0, base_offset=293, last_offset=293),
            _ev("hw_change", 3, topic="t", partition=0, role="leader", old_hw=293, hw=294)]


def _cpa_against(hw_event: int, offset: int = 293) -> Violation:
    return replace(_violation("committed_prefix_agreement", "t", 0, 3, 3, offset), evidence=(0, 2, hw_event, 3))


def test_a_stale_hw_checkpoint_is_recognised() -> None:
    assert known_finding(_cpa_against(1), _stale_checkpoint()) == STALE_HW_CHECKPOINT


def test_a_stale_hw_checkpoint_is_recognised_on_the_recovering_replicas_own_hw_change() -> None:
    """The checker may find the disagreement on the recovering replica's own HW change: the recovery is then
    `v.event_id`, and the third evidence id is the other replica's HW event (`power` seed 851310's shape until the
    KRaft reassignment change moved its run; no seed of 11,000 searched since shows it)."""
    named = replace(_violation("committed_prefix_agreement", "t", 0, 1, 1, 293), evidence=(0, 2, 3, 1))
    assert known_finding(named, _stale_checkpoint()) == STALE_HW_CHECKPOINT
    assert known_finding(named, _stale_checkpoint(action="restart")) is None


@pytest.mark.parametrize(("events", "violation"), [
    pytest.param(_stale_checkpoint(), _cpa_against(2), id="the-other-replicas-hw-was-not-set-by-the-recovery"),
    pytest.param(_stale_checkpoint(raised_to=293), _cpa_against(1), id="divergent-offset-above-the-recovered-hw"),
    pytest.param(_stale_checkpoint(), _cpa_against(1, offset=291), id="divergent-offset-below-the-hw-it-had"),
    pytest.param(_stale_checkpoint(same_instant=False), _cpa_against(1), id="hw-raised-after-the-crash-instant"),
    pytest.param(_stale_checkpoint(action="restart"), _cpa_against(1), id="no-crash-before-it"),
])
def test_a_prefix_violation_without_a_stale_checkpoint_is_not_excused(events: list[Event],
                                                                        violation: Violation) -> None:
    assert known_finding(violation, events) is None


def test_the_overlapping_campaign_seed_reproduces_the_stale_checkpoint() -> None:
    """`python -m tests.sim.campaign --seeds 921359-921359 --overlapping --before-kip903 --before-metadata-deltas`:
    broker 1 had checkpointed HW 517 before it crashed; back as a follower of leader 5 (unclean, epoch 7) it truncated
    t-0 to 415 (event 8052) and fetched to LEO 431 while 5's HW stayed at 418; it crashed 261 ms after the truncation,
    before its next checkpoint, and recovered HW min(517, 431) = 431 (event 8241), over records 418..430 nobody
    committed. 5 crashed too, and 2 (LEO 421) was elected cleanly in epoch 8 (9289): 2's own records at 421.. then sit
    below 2's HW (9308) and its follower 5's (9321), against 1's. Recorded (`recorded_run`): since the scheduler kept
    Kafka's fixed rate the seed's run goes another way, and of about 3,200 seeds of the same flags searched
    (920000-922200, 835400-836399) only two show a stale checkpoint, both through a restated HW (835576, the test
    below)."""
    sc = before_metadata_deltas(before_kip903(overlapping_scenario(921359)))
    events, _stats, errors = _errors(sc, recorded="overlapping-921359")
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("committed_prefix_agreement", "t", 0, 2, 9308, 421), ("committed_prefix_agreement", "t", 0, 5, 9321, 421)]
    assert {known_finding(v, events) for v in errors} == {STALE_HW_CHECKPOINT}
    assert [v.evidence[2] for v in errors] == [8241, 8241]
    trunc = events[8052]
    assert (trunc["event_type"], trunc["broker_id"], trunc["old_leo"], trunc["truncate_offset"],
            trunc["leader_epoch"]) == ("truncation", 1, 517, 415, 7)
    crash, recovered = events[8240], events[8241]
    assert (crash["event_type"], crash["broker_id"], crash["action"], crash["ts_ms"] - trunc["ts_ms"]) == (
        "broker_lifecycle", 1, "crash", 261)
    assert (recovered["event_type"], recovered["broker_id"], recovered["old_hw"], recovered["hw"]) == (
        "hw_change", 1, 418, 431)
    election, elected = events[9289], events[9295]
    assert (election["action"], election["leader_id"], election["leader_epoch"]) == ("clean", 2, 8)
    assert (elected["broker_id"], elected["action"], elected["leo"]) == (2, "become_leader", 421)


def _readded(mode: str = "leader_epoch", readd: bool = True, reason: str = "high_watermark") -> list[Event]:
    """Broker 2 (truncation mode `mode`) has t-2 placed in a fetcher (event 1), appends 0..79 (2), has t-2 added to
    a fetcher again (3, when `readd`) and truncates to 70 (4)."""
    added = {"event_type": "fetcher_change", "broker_id": 2, "action": "added", "fetcher_id": 0, "leader_id": 3,
             "partitions": [{"topic": "t", "partition": 2, "fetch_offset": 70}]}
    return [{"event_type": "broker_config", "broker_id": 2, "config": {"replog.truncation.mode": mode}}, added,
            _ev("append", 2, topic="t", partition=2, role="follower", base_offset=0, last_offset=79),
            added if readd else FILLER,
            _ev("truncation", 2, topic="t", partition=2, truncate_offset=70, old_leo=80, reason=reason)]


def test_a_high_watermark_truncation_after_a_readd_is_recognised() -> None:
    violation = _violation("truncation_safety", "t", 2, 2, 4, 70)
    assert known_finding(violation, _readded()) == HW_TRUNCATION_AFTER_READD
    assert known_finding(violation, _readded(mode="leader_epoch_v0")) == HW_TRUNCATION_AFTER_READD


@pytest.mark.parametrize("events", [
    pytest.param(_readded(readd=False), id="no-add-after-the-last-append"),
    pytest.param(_readded(mode="high_watermark"), id="a-mode-that-truncates-to-the-hw-anyway"),
    pytest.param(_readded(reason="leader_epoch"), id="an-epoch-truncation"),
])
def test_a_truncation_without_the_readd_race_is_not_excused(events: list[Event]) -> None:
    assert known_finding(_violation("truncation_safety", "t", 2, 2, 4, 70), events) is None


def test_the_overlapping_campaign_seed_reproduces_the_readd_race() -> None:
    """`--seeds 507946-507946 --overlapping --before-kip903` (leader_epoch mode): broker 2's t-2 fetcher to leader 3
    made its split while the restarted log was empty and waited on an OffsetsForLeaderEpoch round; meanwhile the log
    took 0..79 from leader 1, and epoch 2 added t-2 back to that fetcher at its HW 70 (event 452). When the round
    ended, the old epoch-less list sent it to `truncateToHighWatermark` (520), removing 70..79, which leader 1 had
    committed. Recorded (`recorded_run`): the run of commit 32fd916's engine; since crashed processes reset their
    connections the seed's run goes another way, and no seed of the same flags searched on today's engine
    (507646-508246, 1119980-1122479) shows finding D."""
    events, stats = recorded_run("overlapping-507946")
    errors = [v for v in check(events, stats).violations if v.severity == "error"]
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("truncation_safety", "t", 2, 2, 520, 70)]
    assert known_finding(errors[0], events) == HW_TRUNCATION_AFTER_READD
    assert events[452]["event_type"] == "fetcher_change" and events[452]["partitions"][0]["fetch_offset"] == 70


def test_the_race_run_on_the_deposed_leader_after_the_election_is_finding_a() -> None:
    """`--seeds 1070007-1070007 --throttled --before-metadata-deltas` (diverging-epoch mode): the commit of leader 1's
    proposal adding 5 (epoch 29) completed t-4's reassignment to [5, 4] and elected 5 with LEO 372 (15460, 15485),
    answering 1 NEW_LEADER_ELECTED; a resent, older epoch-29 update (ISR [1, 4]) then reached 1 (15678), whose HW rose
    to 393 (15679) before it learnt it was removed; 5's follower 4 truncated 372..392 (15700) and 5 committed other
    records there. Every error is A's; an offset below 5's LEO at its election is not. Recorded (`recorded_run`):
    since the scheduler kept Kafka's fixed rate the seed's run has no error, and no seed of 1068600-1071599 shows this
    form."""
    sc = before_metadata_deltas(throttled_scenario(1070007))
    events, stats = recorded_run("throttled-1070007")
    errors = [v for v in check(events, stats, max_network_delay_ms(sc)).violations if v.severity == "error"]
    assert len(errors) == 22 and {(v.topic, v.partition) for v in errors} == {("t", 4)}
    assert (errors[0].invariant, errors[0].replica, errors[0].event_id, errors[0].offset) == (
        "truncation_safety", 4, 15700, 372)
    assert {known_finding(v, events) for v in errors} == {ISR_EXPANSION_RACE}
    assert (events[15678]["reason"], events[15678]["partition_epoch"], events[15679]["hw"]) == (
        "leader_and_isr", 29, 393)
    assert known_finding(replace(errors[0], offset=371), events) is None
    assert problems_in(sc, events, stats)[0] == []


def _settled_race_then_zombie_rise(settled: bool) -> list[Event]:
    """Leader 1 proposes adding 2 at partition epoch 5 and a same-epoch update resets its ISR to [1]; with `settled`,
    2 is committed into its ISR at epoch 6 before 2's clean election with LEO 10, else the reset comes after it (A's
    race run on the deposed leader). Leader 1, still in epoch 1, then raises its HW to 15 and follower 3 of 2
    truncates 10..14."""
    reset = _ev("isr_change", 1, "t", 0, isr=[1], isr_state="committed", partition_epoch=5, reason="leader_and_isr")
    election = [_ev("leader_election", 1000, "t", 0, action="clean", leader_epoch=2),
                _ev("leadership_change", 2, "t", 0, action="become_leader", leader_epoch=2, leo=10)]
    race = ([reset, _ev("isr_change", 1, "t", 0, action="expand", isr=[1, 2], isr_state="committed",
                        partition_epoch=6, reason="alter_partition"), *election] if settled else [*election, reset])
    return [_ev("leader_election", 1000, "t", 0, action="clean", leader_epoch=1),
            _ev("leadership_change", 1, "t", 0, action="become_leader", leader_epoch=1, leo=0),
            _ev("isr_change", 1, "t", 0, action="expand", isr=[1, 2], isr_state="proposed", partition_epoch=5,
                reason="follower_caught_up"),
            *race,
            _ev("hw_change", 1, "t", 0, leader_epoch=1, old_hw=8, hw=15, role="leader"),
            _ev("truncation", 3, "t", 0, leader_epoch=2, truncate_offset=10, old_leo=15, reason="diverging_epoch")]


@pytest.mark.parametrize("settled", [False, True])
def test_the_race_after_the_election_needs_the_reset_after_it(settled: bool) -> None:
    """A's race on the deposed leader is recognised only when its reset comes after the new leader's election: a
    race settled before it (2 committed into the ISR) does not explain the deposed leader's later HW rise."""
    events = _settled_race_then_zombie_rise(settled)
    v = _violation("truncation_safety", "t", 0, 3, len(events) - 1, 12)
    assert known_finding(v, events) == (None if settled else ISR_EXPANSION_RACE)


@pytest.mark.parametrize(("settled", "at_rise", "offset", "expected"), [
    pytest.param(False, True, 12, ISR_EXPANSION_RACE, id="the-deposed-leaders-rise"),
    pytest.param(True, True, 12, None, id="a-race-settled-before-the-election"),
    pytest.param(False, False, 12, None, id="detected-at-another-event"),
    pytest.param(False, True, 9, None, id="below-the-elected-leaders-leo"),
])
def test_the_race_after_the_election_is_recognised_at_the_deposed_leaders_own_rise(
        settled: bool, at_rise: bool, offset: int, expected: str | None) -> None:
    """`isr_holds_committed` at the deposed leader's HW rise (its ISR holding a member that has since truncated under
    the new leader) is the same race, and only that rise: not a race settled before the election, not another event,
    not an offset the elected leader still held."""
    events = _settled_race_then_zombie_rise(settled)
    rise = len(events) - 2
    assert events[rise]["event_type"] == "hw_change"
    v = _violation("isr_holds_committed", "t", 0, 3, rise if at_rise else len(events) - 1, offset)
    assert known_finding(v, events) == expected


def test_the_overlapping_seed_whose_deposed_leader_raised_its_hw_over_a_truncated_member_is_finding_a() -> None:
    """`--seeds 836029-836029 --overlapping --before-kip903 --before-metadata-deltas` (found by this session's campaign
    of 835400-836399): leader 4 of t-1 (epoch 2), moving to [3, 5, 1], proposes adding 3 at partition epoch 15 (event
    3209); the controller's commit completes the reassignment and elects 3 with LEO 339 (3214, 3232), answering 4
    NEW_LEADER_ELECTED (3221). Broker 1 follows 3 and truncates from 359 to 339 (3241). The epoch-15 metadata update
    (ISR [1, 4, 5], without 3) then reaches 4 (3263), which raises its HW to 349 over it (3264): the checker's
    `isr_holds_committed` there (member 1 lacks 339..348) is the race's rise itself. 3's follower 5 truncates 339..421
    (3586) and 3 commits other records at 339 (3598). Every error is A's. Recorded (`recorded_run`): the run of
    commit 32fd916's engine; since crashed processes reset their connections the seed's run goes another way, and no
    seed of the same flags searched on today's engine (835276-836329, 1118480-1119979) shows this form."""
    sc = before_metadata_deltas(before_kip903(overlapping_scenario(836029)))
    events, stats, errors = _errors(sc, recorded="overlapping-836029")
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("isr_holds_committed", "t", 1, 1, 3264, 339), ("truncation_safety", "t", 1, 5, 3586, 339),
        ("inconsistent_offsets", "t", 1, 3, 3598, 339), ("committed_prefix_agreement", "t", 1, 3, 3598, 339),
        ("committed_prefix_agreement", "t", 1, 5, 3606, 339), ("committed_prefix_agreement", "t", 1, 1, 3633, 339)]
    assert {known_finding(v, events) for v in errors} == {ISR_EXPANSION_RACE}
    proposed, election, refused = events[3209], events[3214], events[3221]
    assert (proposed["broker_id"], proposed["isr_state"], proposed["partition_epoch"], proposed["isr"]) == (
        4, "proposed", 15, [1, 3, 4, 5])
    assert (election["action"], election["leader_id"], election["reason"], election["leader_epoch"]) == (
        "clean", 3, "reassignment", 3)
    assert (events[3232]["broker_id"], events[3232]["action"], events[3232]["leo"]) == (3, "become_leader", 339)
    assert (refused["broker_id"], refused["isr_state"], refused["error"]) == (4, "rejected", "NEW_LEADER_ELECTED")
    truncated, reset, rise = events[3241], events[3263], events[3264]
    assert (truncated["broker_id"], truncated["old_leo"], truncated["truncate_offset"]) == (1, 359, 339)
    assert (reset["broker_id"], reset["reason"], reset["partition_epoch"], reset["isr"]) == (
        4, "leader_and_isr", 15, [1, 4, 5])
    assert (rise["broker_id"], rise["leader_epoch"], rise["old_hw"], rise["hw"]) == (4, 2, 339, 349)
    assert problems_in(sc, events, stats)[0] == []


def test_the_losses_of_electing_a_replica_finding_d_truncated_are_finding_d() -> None:
    """`--seeds 1070113-1070113 --throttled` (leader-epoch mode): broker 3's fetcher split its partitions while u-0's
    log was empty and its OffsetsForLeaderEpoch round to the dead leader 2 timed out; by then u-0 held 0..5 and had
    been added back at its HW 5, so `truncateToHighWatermark` removed the committed offset 5 (event 463: D). Broker
    3 was then elected from the ISR with LEO 5 (487), brokers 2 and 1 truncated to its epoch-1 end 5 (502, 504), and
    broker 2, leader of epoch 4, committed another record at 5 (1803). Every error is D's; an offset below 3's LEO at
    its election is not. Recorded (`recorded_run`): the run of commit 32fd916's engine; since crashed processes reset
    their connections (a round to a dead process on a live host is refused at once, not timed out) the seed's run
    goes another way, and no seed of the same flags searched on today's engine (1069813-1070413, 1118480-1123479)
    shows finding D."""
    sc = throttled_scenario(1070113)
    events, stats = recorded_run("throttled-1070113")
    errors = [v for v in check(events, stats, max_network_delay_ms(sc)).violations if v.severity == "error"]
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("truncation_safety", "u", 0, 3, 463, 5), ("truncation_safety", "u", 0, 2, 502, 5),
        ("truncation_safety", "u", 0, 1, 504, 5), ("inconsistent_offsets", "u", 0, 2, 1803, 5)]
    assert {known_finding(v, events) for v in errors} == {HW_TRUNCATION_AFTER_READD}
    assert (events[487]["event_type"], events[487]["broker_id"], events[487]["leo"]) == ("leadership_change", 3, 5)
    assert known_finding(replace(errors[1], offset=4), events) is None
    assert problems_in(sc, events, stats)[0] == []


@pytest.mark.parametrize("committed_first", [True, False])
def test_d_s_loss_needs_its_truncation_to_remove_a_committed_record(committed_first: bool) -> None:
    """Broker 3's HW truncation after a re-add (D's shape) removes 3..5, and broker 3 is elected from the ISR with
    LEO 3 after the partition's HW reached 6. Only when the HW was 6 before the truncation did D remove committed
    records; when it reached 6 afterwards (another cause), the loss at 4 is not D's."""
    hw_rise = _ev("hw_change", 1, "u", 0, leader_epoch=1, old_hw=3, hw=6, role="leader")
    events = [{"event_type": "broker_config", "broker_id": 3, "config": {"replog.truncation.mode": "leader_epoch"}},
              _ev("hw_change", 1, "u", 0, leader_epoch=1, old_hw=0, hw=3, role="leader"),
              *([hw_rise] if committed_first else []),
              _ev("append", 3, "u", 0, leader_epoch=1, base_offset=0, last_offset=5, role="follower"),
              {"event_type": "fetcher_change", "broker_id": 3, "action": "added",
               "partitions": [{"topic": "u", "partition": 0}]},
              _ev("truncation", 3, "u", 0, leader_epoch=1, truncate_offset=3, old_leo=6, reason="high_watermark"),
              *([] if committed_first else [hw_rise]),
              _ev("leader_election", 1000, "u", 0, action="clean", leader_epoch=2),
              _ev("leadership_change", 3, "u", 0, action="become_leader", leader_epoch=2, leo=3),
              _ev("truncation", 2, "u", 0, leader_epoch=2, truncate_offset=3, old_leo=6, reason="diverging_epoch")]
    v = _violation("truncation_safety", "u", 0, 2, len(events) - 1, 4)
    assert known_finding(v, events) == (HW_TRUNCATION_AFTER_READD if committed_first else None)


def test_a_restart_restating_the_recovered_hw_is_the_stale_checkpoint_too() -> None:
    """`--seeds 835341-835341 --overlapping --before-kip903 --before-metadata-deltas`: broker 4, t-2's leader of epoch
    5, crashed with HW 465 (event 11551) and its recovery kept 465 (min(checkpoint, LEO 478): its checkpoint held
    465); back (12001, become_follower with HW 465 at 12005), it truncated t-2 from 478 to 365 under the unclean
    leader 3 of epoch 6 (12026) and copied epoch-6 records to LEO 415, its HW 405, and crashed before its next
    checkpoint (one every 500 ms; it ran 422 ms, 12237). The recovery set HW min(465, 415) = 415 (12240), over
    records from 405 that leader 3 never committed (its HW stopped at 405; 3 crashed with 4); back again (12593), 4
    became a follower of 3 (12599) and then, when 1 (LEO 405) was elected cleanly in epoch 7 (12823, 12831), of 1,
    whose become_follower restated that HW (12826), which is what the checker names as replica 4's HW event against
    the epoch-7 records at 405.. of 1 and of its follower 3. (Seed 835883 showed this until the scheduler kept
    Kafka's fixed rate, then 835576 until crashed processes reset their connections; of 835276-836329, searched
    since, 835341 shows it.)"""
    _, events, stats = run(before_kraft_lifecycle(before_metadata_deltas(before_kip903(overlapping_scenario(835341)))))
    errors = [v for v in check(events, stats).violations if v.severity == "error"]
    restated = [v for v in errors if (v.topic, v.partition) == ("t", 2)]
    assert restated and {(v.invariant, v.replica, v.offset, v.evidence[2]) for v in restated} == {
        ("committed_prefix_agreement", 1, 405, 12826), ("committed_prefix_agreement", 3, 405, 12826),
        ("committed_prefix_agreement", 1, 406, 12826), ("committed_prefix_agreement", 3, 406, 12826)}
    assert {known_finding(v, events) for v in restated} == {STALE_HW_CHECKPOINT}
    assert [known_finding(v, events) for v in errors if v not in restated] == []
    assert (events[12026]["event_type"], events[12026]["broker_id"], events[12026]["old_leo"],
            events[12026]["truncate_offset"], events[12026]["leader_epoch"]) == ("truncation", 4, 478, 365, 6)
    assert (events[12001]["event_type"], events[12001]["broker_id"], events[12001]["action"]) == (
        "broker_lifecycle", 4, "restart")
    assert (events[12005]["action"], events[12005]["broker_id"], events[12005]["hw"]) == ("become_follower", 4, 465)
    assert (events[12237]["event_type"], events[12237]["broker_id"], events[12237]["action"],
            events[12237]["ts_ms"] - events[12001]["ts_ms"]) == ("broker_lifecycle", 4, "crash", 422)
    assert (events[12240]["event_type"], events[12240]["broker_id"], events[12240]["old_hw"], events[12240]["hw"],
            events[12240]["ts_ms"]) == ("hw_change", 4, 405, 415, events[12237]["ts_ms"])
    assert max(e["hw"] for e in events[:12237] if e["event_type"] == "hw_change" and e["broker_id"] == 3
               and e["leader_epoch"] == 6 and (e["topic"], e["partition"]) == ("t", 2)) == 405
    election, elected, restating = events[12823], events[12831], events[12826]
    assert (election["action"], election["leader_id"], election["leader_epoch"]) == ("clean", 1, 7)
    assert (elected["broker_id"], elected["action"], elected["leo"]) == (1, "become_leader", 405)
    assert (restating["event_type"], restating["broker_id"], restating["leader_id"], restating["hw"]) == (
        "leadership_change", 4, 1, 415)


def _elected(*, between: Event | None = None, answer_start: int = 73, reason: str = "diverging_epoch",
             follower_reason: str = "diverging_epoch") -> list[Event]:
    """Seed 901773's t-5, shortened: leader 4 (log start 73) answers broker 3's fetch at 75 with DivergingEpoch
    (5, 73) (event 0); broker 3 truncates to 73 (1), `between` happens (2), broker 3 becomes leader (3), answers
    broker 5 with (5, 73) (4), and broker 5 truncates to 51 (5)."""
    def answer(broker: int, leader: int, fetch_offset: int) -> Event:
        return _ev("fetch_response", broker, topic="t", partition=5, leader_id=leader, error="NONE",
                   fetch_offset=fetch_offset, diverging_epoch=5, diverging_end_offset=73,
                   leader_log_start_offset=answer_start)

    return [answer(3, 4, 75),
            _ev("truncation", 3, topic="t", partition=5, reason=reason, truncate_offset=73, old_leo=75),
            between or FILLER,
            _ev("leadership_change", 3, topic="t", partition=5, action="become_leader"),
            answer(5, 3, 73),
            _ev("truncation", 5, topic="t", partition=5, reason=follower_reason, truncate_offset=51, old_leo=73)]


def test_an_elected_divergent_prefix_is_recognised() -> None:
    violation = _violation("truncation_safety", "t", 5, 5, 5, 51)
    assert known_finding(violation, _elected()) == DIVERGENT_PREFIX_ELECTED
    lost = _ev("fetch_response", 3, topic="t", partition=5, leader_id=1, error="NOT_LEADER_OR_FOLLOWER")
    assert known_finding(violation, _elected(between=lost)) == DIVERGENT_PREFIX_ELECTED


@pytest.mark.parametrize(("events", "offset"), [
    pytest.param(_elected(between=_ev("fetch_response", 3, topic="t", partition=5, leader_id=4, error="NONE",
                                      fetch_offset=73, leader_log_start_offset=73)), 51,
                 id="a-processed-response-raised-the-log-start"),
    pytest.param(_elected(between=_ev("log_start_offset_change", 3, topic="t", partition=5, log_start_offset=73)),
                 51, id="the-log-start-was-raised"),
    pytest.param(_elected(answer_start=42), 51, id="the-answer-was-not-the-old-leaders-log-start"),
    pytest.param(_elected(reason="high_watermark"), 51, id="the-new-leader-truncated-to-its-hw"),
    pytest.param(_elected(follower_reason="high_watermark"), 51, id="the-follower-truncated-to-its-hw"),
    pytest.param(_elected(), 73, id="committed-records-above-the-kept-prefix"),
])
def test_a_truncation_without_an_elected_divergent_prefix_is_not_excused(events: list[Event], offset: int) -> None:
    assert known_finding(_violation("truncation_safety", "t", 5, 5, 5, offset), events) is None


def test_the_power_campaign_seed_reproduces_the_elected_divergent_prefix() -> None:
    """`--seeds 833649-833649 --power --before-kip903 --before-metadata-deltas`: leader 3's t-0 log start had reached
    238 (event 1303), so it answered broker 2 (back with epoch-3 records to 730) with DivergingEpoch (3, 238) (1554);
    broker 2 kept 157..237 of epoch 3. Leader 3 added it to the ISR on its next fetch (proposed 1576, committed 1580),
    whose response never reached it; broker 2 was elected cleanly, alone in the ISR, in epoch 7 (1719), and leading
    again in epoch 11 it answered broker 1 with the same (3, 238): broker 1, whose log started at 208 with epoch-5
    records, truncated to 208 (2571), below the committed HW 238. Recorded (`recorded_run`), as the next test's run:
    since the scheduler kept Kafka's fixed rate no seed of 833600-836700 or 1100000-1100999 (4,100 runs of the same
    flags) shows finding E."""
    sc = before_metadata_deltas(before_kip903(power_scenario(833649)))
    events, stats, errors = _errors(sc, recorded="power-833649")
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("truncation_safety", "t", 0, 1, 2571, 208)]
    assert known_finding(errors[0], events) == DIVERGENT_PREFIX_ELECTED
    assert (events[1554]["broker_id"], events[1554]["leader_id"], events[1554]["diverging_epoch"]) == (2, 3, 3)
    assert events[1554]["diverging_end_offset"] == events[1554]["leader_log_start_offset"] == 238
    proposed, added = events[1576], events[1580]
    assert (proposed["event_type"], proposed["isr_state"], proposed["isr"]) == ("isr_change", "proposed", [1, 2, 3])
    assert (added["event_type"], added["isr_state"], added["isr"]) == ("isr_change", "committed", [1, 2, 3])
    answers = [e for e in events[1573:1657] if e["event_type"] == "fetch_response" and e["broker_id"] == 2
               and (e["topic"], e["partition"]) == ("t", 0)]
    fetch, follows = events[1573], events[1657]
    assert (fetch["event_type"], fetch["broker_id"], fetch["leader_id"], fetch["fetch_offset"]) == ("fetch", 2, 3, 238)
    assert (follows["broker_id"], follows["action"], follows["leader_id"]) == (2, "become_follower", 1)
    assert answers == []  # nothing answered the fetch leader 3 added it on before 2 left leader 3
    election = events[1719]
    assert (election["action"], election["leader_id"], election["isr"], election["leader_epoch"]) == (
        "clean", 2, [2], 7)
    assert problems_in(sc, events, stats)[0] == []


def _committed_by_the_elected(*, between: Event | None = None, follower_of: int = 3) -> list[Event]:
    """`_elected`'s first four events, then broker 3 leads alone: it raises its HW over its kept records (event 4),
    broker 5 follows `follower_of` (5) and raises its HW over the records it copied (6)."""
    return [*_elected(between=between)[:4],
            _ev("hw_change", 3, topic="t", partition=5, role="leader", old_hw=42, hw=73),
            _ev("leadership_change", 5, topic="t", partition=5, action="become_follower", leader_id=follower_of),
            _ev("hw_change", 5, topic="t", partition=5, role="follower", old_hw=42, hw=60)]


def test_records_an_elected_divergent_prefix_commits_are_recognised() -> None:
    events = _committed_by_the_elected()
    assert known_finding(_violation("inconsistent_offsets", "t", 5, 3, 4, 51), events) == DIVERGENT_PREFIX_ELECTED
    assert known_finding(_violation("committed_prefix_agreement", "t", 5, 5, 6, 51),
                         events) == DIVERGENT_PREFIX_ELECTED
    # The checker judges acknowledged writes at the end of the run (event -1), on the final leader.
    assert known_finding(_violation("acked_write_lost", "t", 5, 3, -1, 51), events) == DIVERGENT_PREFIX_ELECTED


@pytest.mark.parametrize(("events", "violation"), [
    pytest.param(_committed_by_the_elected(), _violation("inconsistent_offsets", "t", 5, 3, 4, 73),
                 id="an-offset-above-the-kept-prefix"),
    pytest.param(_committed_by_the_elected(follower_of=4), _violation("committed_prefix_agreement", "t", 5, 5, 6, 51),
                 id="a-follower-of-another-leader"),
    pytest.param(_committed_by_the_elected(between=_ev("log_start_offset_change", 3, topic="t", partition=5,
                                                       log_start_offset=73)),
                 _violation("inconsistent_offsets", "t", 5, 3, 4, 51), id="the-log-start-was-raised"),
    pytest.param(_committed_by_the_elected(), _violation("acked_write_lost", "t", 5, 3, -1, 73),
                 id="an-acknowledged-write-lost-above-the-kept-prefix"),
    pytest.param(_committed_by_the_elected(), _violation("acked_write_lost", "t", 5, 5, -1, 51),
                 id="an-acknowledged-write-lost-on-a-replica-not-the-final-leader"),
    pytest.param(_committed_by_the_elected(between=_ev("fetch_response", 3, topic="t", partition=5, leader_id=4,
                                                       error="NONE", fetch_offset=73, leader_log_start_offset=73)),
                 _violation("acked_write_lost", "t", 5, 3, -1, 51), id="an-acknowledged-write-lost-after-a-response"),
    pytest.param(_committed_by_the_elected()[:3] + _committed_by_the_elected()[4:],
                 _violation("inconsistent_offsets", "t", 5, 3, 3, 51), id="before-the-election"),
])
def test_errors_without_an_elected_divergent_prefix_are_not_excused(events: list[Event], violation: Violation) -> None:
    assert known_finding(violation, events) is None


def _told_twice(*, between: Event | None = None) -> list[Event]:
    """`_committed_by_the_elected`, after an earlier answer of finding B to broker 3: leader 2 (log start 80) told it
    DivergingEpoch (5, 80) at its fetch at 85 (event 0), it truncated to 80 (1), `between` happened (2); then leader
    4's answer at 73 and the rest (3 onwards: the elected broker 3 raises its HW to 73 at event 6)."""
    return [_ev("fetch_response", 3, topic="t", partition=5, leader_id=2, error="NONE", fetch_offset=85,
                diverging_epoch=5, diverging_end_offset=80, leader_log_start_offset=80),
            _ev("truncation", 3, topic="t", partition=5, reason="diverging_epoch", truncate_offset=80, old_leo=85),
            between or FILLER,
            *_committed_by_the_elected()]


def test_two_answers_of_finding_b_in_a_row_excuse_the_offsets_up_to_the_first() -> None:
    """Broker 3 was told B's answer twice, by two leaders, with no response processed between: at 80, then at 73.
    Elected, it commits again offsets up to 80, the first answer's log start, where it had been counted caught up
    (`--throttled` seed 1164628); a response processed between the two answers ends the chain at 73."""
    above_the_second = _violation("inconsistent_offsets", "t", 5, 3, 6, 75)
    assert known_finding(above_the_second, _told_twice()) == DIVERGENT_PREFIX_ELECTED
    assert known_finding(_violation("inconsistent_offsets", "t", 5, 3, 6, 80), _told_twice()) is None
    processed = _ev("fetch_response", 3, topic="t", partition=5, leader_id=2, error="NONE", fetch_offset=80,
                    leader_log_start_offset=80)
    assert known_finding(above_the_second, _told_twice(between=processed)) is None
    assert known_finding(_violation("inconsistent_offsets", "t", 5, 3, 6, 51),
                         _told_twice(between=processed)) == DIVERGENT_PREFIX_ELECTED


def test_the_throttled_campaign_seed_elects_a_follower_told_finding_b_by_two_leaders() -> None:
    """`--seeds 1164628-1164628 --throttled`. Broker 1, back from a crash with its epoch-0 records to 289 and epoch 1's
    to 569, follows t-0's leader 5 of epoch 2 (log start 100 by retention): DivergingEpoch (1, 100) (event 1070), it
    truncates to 100 (1071) and keeps 50..99 of epoch 0, where epoch 2 committed others. Its next fetch, at 100,
    makes leader 5 add it to the ISR (1074, committed 1075); the answer never comes: the reassignment moves leadership
    to broker 2 (1213). Leader 2, whose log start retention had moved to 80, answers its fetch at 100 with
    DivergingEpoch (0, 80) (1219): broker 1 truncates to 80 (1220), below leader 2's HW 100, still in the ISR, and
    its next fetches fail once 2 crashes (1554). Elected alone from the ISR in epoch 4 with LEO 80 (1787, 1790), it
    appends its own records at 80 (1799) and commits its kept 50..79 and the new 80..99 over epoch 2's: three
    `inconsistent_offsets`, all finding E, the one at 80 and 90 through the chain of the two answers (session 83's
    campaign found it reported before `_kept_prefix_end` followed the chain)."""
    sc = before_kraft_lifecycle(throttled_scenario(1164628))
    events, stats, errors = _errors(sc)
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("inconsistent_offsets", "t", 0, 1, 1825, 50), ("inconsistent_offsets", "t", 0, 1, 1831, 80),
        ("inconsistent_offsets", "t", 0, 1, 1838, 90)]
    assert {known_finding(v, events) for v in errors} == {DIVERGENT_PREFIX_ELECTED}
    first, second = events[1070], events[1219]
    assert (first["broker_id"], first["leader_id"], first["diverging_epoch"], first["diverging_end_offset"],
            first["leader_log_start_offset"]) == (1, 5, 1, 100, 100)
    assert (events[1071]["event_type"], events[1071]["truncate_offset"]) == ("truncation", 100)
    added = events[1075]
    assert (added["broker_id"], added["isr_state"], added["isr"]) == (5, "committed", [1, 2, 5])
    assert (events[1213]["broker_id"], events[1213]["action"], events[1213]["leader_id"]) == (1, "become_follower", 2)
    assert (events[1554]["event_type"], events[1554]["broker_id"], events[1554]["action"]) == (
        "broker_lifecycle", 2, "crash")
    assert (second["broker_id"], second["leader_id"], second["diverging_epoch"], second["diverging_end_offset"],
            second["leader_log_start_offset"], second["leader_hw"]) == (1, 2, 0, 80, 80, 100)
    assert (events[1220]["event_type"], events[1220]["truncate_offset"]) == ("truncation", 80)
    between = [e for e in events[1071:1790] if e["event_type"] in ("fetch_response", "log_start_offset_change")
               and e["broker_id"] == 1 and (e["topic"], e["partition"]) == ("t", 0)]
    assert [(e["event_type"], e.get("error"), e.get("diverging_end_offset")) for e in between] == [
        ("fetch_response", "NONE", 80)] + [("fetch_response", "NETWORK_EXCEPTION", None)] * 9
    election, elected = events[1787], events[1790]
    assert (election["action"], election["leader_id"], election["leader_epoch"], election["isr"]) == (
        "clean", 1, 4, [1])
    assert (elected["broker_id"], elected["action"], elected["leo"]) == (1, "become_leader", 80)
    assert (events[1799]["event_type"], events[1799]["base_offset"], events[1799]["batch_leader_epoch"]) == (
        "append", 80, 4)
    assert problems_in(sc, events, stats)[0] == []


def test_the_power_campaign_seed_commits_the_elected_divergent_prefix() -> None:
    """`--seeds 943902-943902 --power --before-kip903 --before-metadata-deltas`: broker 1, t-2's leader in epoch 2, is
    back from a pause as a follower of epoch 3's leader 3 (log start 286 since event 7394), which had committed its own
    records at 283..285 (HW 286, 7299). Leader 3 answered broker 1 (epoch-2 records to 379) with DivergingEpoch (2, 286)
    (7732); broker 1 truncated to 286 (7733) and kept 283..285 of epoch 2. Leader 3 added it to the ISR on its next
    fetch (7736; proposed 7743, committed 8463), whose response the network lost. 3's controlled shutdown moved
    leadership to 4 (8600, ISR [1, 4]), down since its crash (7362); when 4's session expired the controller elected
    broker 1, the only other ISR member (9259). Leading, broker 1 told the restarted 4, which held epoch 3's 283..285,
    to truncate to 283, below the committed HW 286 (9291), and committed its kept records over epoch 3's once broker 3
    (log start 286) rejoined (10114). Recorded (`recorded_run`), as the test before's run."""
    sc = before_metadata_deltas(before_kip903(power_scenario(943902)))
    events, stats, errors = _errors(sc, recorded="power-943902")
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("truncation_safety", "t", 2, 4, 9291, 283), ("inconsistent_offsets", "t", 2, 1, 10114, 283)]
    assert {known_finding(v, events) for v in errors} == {DIVERGENT_PREFIX_ELECTED}
    committed, log_start = events[7299], events[7394]
    assert (committed["broker_id"], committed["leader_epoch"], committed["hw"]) == (3, 3, 286)
    assert (log_start["broker_id"], log_start["log_start_offset"]) == (3, 286)
    answer, truncation, fetch = events[7732], events[7733], events[7736]
    assert (answer["broker_id"], answer["leader_id"], answer["diverging_epoch"]) == (1, 3, 2)
    assert answer["diverging_end_offset"] == answer["leader_log_start_offset"] == 286
    assert (truncation["broker_id"], truncation["reason"], truncation["old_leo"], truncation["truncate_offset"]) == (
        1, "diverging_epoch", 379, 286)
    assert (fetch["event_type"], fetch["broker_id"], fetch["leader_id"], fetch["fetch_offset"]) == ("fetch", 1, 3, 286)
    proposed, added = events[7743], events[8463]
    assert (proposed["isr_state"], proposed["isr"], added["isr_state"], added["isr"]) == (
        "proposed", [1, 3, 4], "committed", [1, 3, 4])
    answers = [e for e in events[7734:9261] if e["event_type"] == "fetch_response" and e["broker_id"] == 1
               and (e["topic"], e["partition"]) == ("t", 2)]
    assert answers == []  # no response raised its log start offset over the kept records before its election
    crash, shutdown = events[7362], events[8600]
    assert (crash["broker_id"], crash["action"]) == (4, "crash")
    assert (shutdown["action"], shutdown["leader_id"], shutdown["isr"]) == ("controlled_shutdown", 4, [1, 4])
    assert [e["action"] for e in events[7363:9259] if e["event_type"] == "broker_lifecycle" and e["broker_id"] == 4
            ] == []  # 4 is still down when the controlled shutdown picks it
    election, elected = events[9259], events[9261]
    assert (election["action"], election["leader_id"], election["isr"]) == ("clean", 1, [1])
    assert (elected["broker_id"], elected["action"], elected["leo"]) == (1, "become_leader", 286)
    told, truncated = events[9290], events[9291]
    assert (told["broker_id"], told["leader_id"], told["diverging_epoch"], told["diverging_end_offset"]) == (
        4, 1, 2, 286)
    assert (truncated["broker_id"], truncated["old_leo"], truncated["truncate_offset"]) == (4, 286, 283)
    assert (events[10114]["event_type"], events[10114]["old_hw"], events[10114]["hw"]) == ("hw_change", 283, 286)
    assert problems_in(sc, events, stats)[0] == []


def _elected_by_offsets_for_leader_epoch(*, leader_log_start: int = 73, between: Event | None = None) -> list[Event]:
    """`_elected` in the leader-epoch mode (seed 534728's t-3, shortened): broker 3 follows leader 4 (event 0),
    whose log start is `leader_log_start` (1); OffsetsForLeaderEpoch, which leaves no event, sends broker 3 to
    73 (2); `between` happens (3); broker 3 becomes leader (4); broker 5 follows it (5) and truncates to 51 (6)."""
    def ev(event_type: str, broker: int, **fields: Any) -> Event:
        return _ev(event_type, broker, topic="t", partition=5, **fields)

    return [ev("leadership_change", 3, action="become_follower", leader_id=4),
            ev("log_start_offset_change", 4, log_start_offset=leader_log_start),
            ev("truncation", 3, reason="leader_epoch", truncate_offset=73, old_leo=75),
            between or FILLER,
            ev("leadership_change", 3, action="become_leader", leader_id=3),
            ev("leadership_change", 5, action="become_follower", leader_id=3),
            ev("truncation", 5, reason="leader_epoch", truncate_offset=51, old_leo=73)]


def test_an_elected_divergent_prefix_is_recognised_in_the_leader_epoch_mode() -> None:
    violation = _violation("truncation_safety", "t", 5, 5, 6, 51)
    assert known_finding(violation, _elected_by_offsets_for_leader_epoch()) == DIVERGENT_PREFIX_ELECTED
    assert known_finding(_violation("inconsistent_offsets", "t", 5, 3, 6, 51),
                         _elected_by_offsets_for_leader_epoch()) == DIVERGENT_PREFIX_ELECTED


@pytest.mark.parametrize(("events", "offset"), [
    pytest.param(_elected_by_offsets_for_leader_epoch(leader_log_start=42), 51, id="not-the-leaders-log-start"),
    pytest.param(_elected_by_offsets_for_leader_epoch(between=_ev(
        "fetch_response", 3, topic="t", partition=5, leader_id=4, error="NONE", fetch_offset=73)), 51,
        id="a-processed-response-raised-the-log-start"),
    pytest.param(_elected_by_offsets_for_leader_epoch(), 73, id="committed-records-above-the-kept-prefix"),
])
def test_a_leader_epoch_truncation_without_an_elected_divergent_prefix_is_not_excused(events: list[Event],
                                                                                        offset: int) -> None:
    assert known_finding(_violation("truncation_safety", "t", 5, 5, 6, offset), events) is None


def _elected_untruncated(*, leo: int = 73, leader_log_start: int = 73, between: Event | None = None) -> list[Event]:
    """`--elr --overlapping` seed 894993's t-8, shortened: broker 3 follows leader 4 with LEO `leo` (event 0), 4's
    log start is `leader_log_start` (1), 4 adds 3 to the ISR (2) from a fetch whose answer, no divergence at all,
    never reaches 3; `between` happens (3); 3 becomes leader (4) and answers broker 5 with (5, 51), and 5
    truncates to 51 (5, 6)."""
    def ev(event_type: str, broker: int, **fields: Any) -> Event:
        return _ev(event_type, broker, topic="t", partition=5, **fields)

    return [ev("leadership_change", 3, action="become_follower", leader_id=4, leo=leo),
            ev("log_start_offset_change", 4, log_start_offset=leader_log_start),
            ev("isr_change", 4, action="expand", isr_state="committed", old_isr=[4], isr=[3, 4]),
            between or FILLER,
            ev("leadership_change", 3, action="become_leader", leader_id=3),
            ev("fetch_response", 5, leader_id=3, error="NONE", diverging_epoch=5, diverging_end_offset=51),
            ev("truncation", 5, reason="diverging_epoch", truncate_offset=51, old_leo=73)]


def test_an_elected_prefix_a_follower_never_had_to_truncate_is_recognised() -> None:
    """Finding E without a truncation: B's answer for the follower's older epoch was the leader's log start
    offset, which was its LEO, so nothing told it to truncate, and no response raised its log start offset."""
    assert known_finding(_violation("truncation_safety", "t", 5, 5, 6, 51),
                         _elected_untruncated()) == DIVERGENT_PREFIX_ELECTED
    own_retention = _ev("log_start_offset_change", 3, topic="t", partition=5, log_start_offset=42)
    assert known_finding(_violation("truncation_safety", "t", 5, 5, 6, 51),
                         _elected_untruncated(between=own_retention)) == DIVERGENT_PREFIX_ELECTED


@pytest.mark.parametrize(("events", "offset"), [
    pytest.param(_elected_untruncated(leo=75), 51, id="its-leo-was-not-the-leaders-log-start"),
    pytest.param(_elected_untruncated(leader_log_start=42), 51, id="the-leaders-log-start-was-below-its-leo"),
    pytest.param(_elected_untruncated(between=_ev("fetch_response", 3, topic="t", partition=5, leader_id=4,
                                                  error="NONE", fetch_offset=73)), 51,
                 id="a-processed-response-raised-the-log-start"),
    pytest.param(_elected_untruncated(between=_ev("log_start_offset_change", 3, topic="t", partition=5,
                                                  log_start_offset=73)), 51, id="the-log-start-was-raised"),
    pytest.param(_elected_untruncated(), 73, id="committed-records-above-the-kept-prefix"),
])
def test_an_untruncated_election_without_a_kept_prefix_is_not_excused(events: list[Event], offset: int) -> None:
    assert known_finding(_violation("truncation_safety", "t", 5, 5, 6, offset), events) is None


def test_the_elr_overlapping_seed_elects_a_prefix_its_follower_never_truncated() -> None:
    """`--seeds 894993-894993 --elr --overlapping --before-metadata-deltas`: broker 1, t-3's leader in epoch 12, wrote
    80..89 (event 14782) as its controlled shutdown moved leadership to 2, whose epoch 13 committed other records there
    (15218, HW 90 at 15236). Broker 1 came back (16059) with LEO 90 and followed leader 2 (16070), whose retention then
    moved its log start to 90 (16584). One-way partitions (1's outbound, then 2's) left every fetch of broker 1
    unanswered (NETWORK_EXCEPTION each time); its fetch at 90 after the retention was one leader 2 answers without
    divergence, so 2 added it to the ISR (17129). It was elected in epoch 14 (19166) with LEO 90 and HW 80, answered
    broker 2 (LEO 640) with DivergingEpoch (12, 90) (19335), so 2 kept epoch 13's 80..89, and when 2 rejoined it
    committed its own 80..89 over epoch 13's (19361). Finding B shows on t-6 and on t-3's broker 5 (epoch 11 at 80).
    (Until the scheduler kept Kafka's fixed rate, this seed's t-8 also had the elected follower tell another to truncate
    below the committed HW; no `--elr --overlapping --before-metadata-deltas` seed of 894000-896999 shows E
    otherwise.) Recorded (`recorded_run`): the run of commit 32fd916's engine; since crashed processes reset their
    connections the seed's run goes another way, and no seed of the same flags searched on today's engine
    (894693-895293, 1118480-1122479) shows E."""
    sc = before_metadata_deltas(with_elr(overlapping_scenario(894993)))
    events, stats, errors = _errors(sc, recorded="elr-overlapping-894993")
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("committed_prefix_agreement", "t", 6, 1, 19347, 90), ("inconsistent_offsets", "t", 3, 1, 19361, 80),
        ("committed_prefix_agreement", "t", 3, 1, 19361, 80), ("committed_prefix_agreement", "t", 3, 5, 20532, 80),
        ("committed_prefix_agreement", "t", 3, 5, 20532, 80)]
    assert [known_finding(v, events) for v in errors] == [
        EPOCH_BOUNDARY_ERASED, DIVERGENT_PREFIX_ELECTED, DIVERGENT_PREFIX_ELECTED, EPOCH_BOUNDARY_ERASED,
        EPOCH_BOUNDARY_ERASED]
    own, other = events[14782], events[15218]
    assert (own["broker_id"], own["base_offset"], own["batch_leader_epoch"]) == (1, 80, 12)
    assert (other["broker_id"], other["base_offset"], other["batch_leader_epoch"]) == (2, 80, 13)
    assert (events[15236]["broker_id"], events[15236]["hw"]) == (2, 90)
    follows, retention, added = events[16070], events[16584], events[17129]
    assert (follows["broker_id"], follows["action"], follows["leader_id"], follows["leo"]) == (
        1, "become_follower", 2, 90)
    assert (retention["broker_id"], retention["log_start_offset"], retention["reason"]) == (2, 90, "segment_deletion")
    assert (added["broker_id"], added["isr_state"], added["old_isr"], added["isr"]) == (2, "committed", [2], [1, 2])
    answers = {e["error"] for e in events[16070:19166] if e["event_type"] == "fetch_response"
               and e["broker_id"] == 1 and (e["topic"], e["partition"]) == ("t", 3)}
    assert answers == {"NETWORK_EXCEPTION"}
    election, elected = events[19166], events[19175]
    assert (election["action"], election["leader_id"], election["leader_epoch"]) == ("clean", 1, 14)
    assert (elected["broker_id"], elected["action"], elected["leo"], elected["hw"]) == (1, "become_leader", 90, 80)
    told, committed = events[19335], events[19361]
    assert (told["broker_id"], told["leader_id"], told["diverging_epoch"], told["diverging_end_offset"]) == (
        2, 1, 12, 90)
    assert (committed["broker_id"], committed["old_hw"], committed["hw"]) == (1, 80, 90)
    assert problems_in(sc, events, stats)[0] == []


@pytest.mark.parametrize(("seed", "finding", "where"), [
    (1152946, ISR_EXPANSION_RACE, ("isr_holds_committed", "t", 1, 3, 135)),
    (950073, ISR_EXPANSION_RACE, ("isr_holds_committed", "t", 4, 2, 312)),  # reset by a late same-epoch update
    (1151179, EPOCH_BOUNDARY_ERASED, ("committed_prefix_agreement", "t", 1, 2, 218)),
    # B without a truncation (the follower's LEO was the leader's log start offset) lost its seed, 202143, to the KRaft
    # reassignment change (6,000 runs from 970000 show B only after a truncation): `test_the_erased_epoch_boundary_is
    # _recognised[False]` keeps the case, and E's seed 894993 shows an untruncated follower from a run.
])
def test_deep_campaign_seeds_reproduce_each_finding_and_nothing_else(seed: int, finding: str,
                                                                      where: tuple[Any, ...]) -> None:
    """`python -m tests.sim.campaign --seeds SEED-SEED --deep --before-kip903 --before-metadata-deltas` lists the run as
    known, not reported. Seed 950073 (for 3061, whose run changed when reassignment epochs followed KRaft): leader 5 of
    t-4, its ISR [3, 5] committed at partition epoch 40 by an AlterPartition answer (event 9390), proposes adding 2
    (9395); epoch 40's metadata, arriving 100 ms after that answer, resets its ISR to [3, 5] (9532), the HW rises from
    309 to 315 (10305), and the controller's commit of the proposal at epoch 41 puts 2, lacking 312..314, in the ISR
    (10320). Seed 1152946: leader 2 of t-1, its ISR [1, 2] committed at partition epoch 4 by an AlterPartition answer
    (event 3731), proposes adding 3, whose fetch offset is the HW, 135, 1 ms later (3733); epoch 4's metadata, 3 ms
    after the answer, resets its ISR to [1, 2] (3739), the HW rises to 139 (3746), and the controller's commit at
    epoch 5 puts 3, lacking 135..138, in the ISR (3750). (Seed 200475 showed the race until the scheduler kept
    Kafka's fixed rate, seed 200230 until a leader's read became a byte range that may end inside a batch, seed 200344
    until retention deleted whole segments; of seeds 1151000-1153999 on today's engine, eight show it alone, 1152946
    with the plainest sequence.) B's seed 200127 showed it until retention deleted whole segments; of the same seeds,
    1151179, 1152179, 1152240, 1152351 and 1153458 show B alone."""
    sc = before_kraft_lifecycle(before_metadata_deltas(before_kip903(deep_scenario(seed))))
    events, _stats, errors = _errors(sc)
    assert [(v.invariant, v.topic, v.partition, v.replica, v.offset) for v in errors] == [where]
    assert known_finding(errors[0], events) == finding
    found, known = problems(sc)
    assert found == [] and len(known) == 1 and known[0].startswith(f"{finding}: {where[0]}")


def test_finding_a_needs_no_resend_the_metadata_deltas_still_race_the_answer() -> None:
    """`--seeds 1154905-1154905 --throttled` (leader-epoch truncation mode), with KRaft's metadata deltas: leader 1 of
    t-8 (epoch 4) proposed adding 4 at partition epoch 11 (event 3942); the AlterPartition answer commits [1, 4] at
    partition epoch 12 (3981) and 1 proposes adding 5, whose fetch offset is the HW, 3, 2 ms later (3994). The
    metadata delta of epoch 12 is applied 3 ms after that answer and resets its ISR to [1, 4] (3997), abandoning the
    proposal; the HW rises to 6 over [1, 4] (4000), and the controller's commit of the proposal at epoch 13, 4 ms
    after the rise, puts 5, lacking 3, in the ISR (4025). One delivery, no resend: the race is between the answer and
    the metadata log, which Kafka's broker receives on two channels. (Seed 1072647 showed this until the scheduler kept
    Kafka's fixed rate, seed 1072977 until a dead process's connections were reset, seed 1073052 until a leader's read
    became a byte range that may end inside a batch, seed 1073674 until a read that cut its first batch was answered
    empty, seed 1143154 until retention deleted whole segments; of seeds 1154000-1156999 on today's engine, 1154905
    shows it, and 1154772 with the metadata 101 ms after the answer. Since a controlled shutdown takes a sole-ISR
    leader's leadership at once and reassignment orders its differences as Kafka's TreeSet (session 91), the same run,
    with the same event ids here, later also shows finding B on t-7, event 8854.)"""
    sc = before_kraft_lifecycle(throttled_scenario(1154905))
    assert sc.cluster.coalesces_metadata
    events, _stats, errors = _errors(sc)
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("isr_holds_committed", "t", 8, 5, 4025, 3), ("committed_prefix_agreement", "t", 7, 3, 8854, 52)]
    assert known_finding(errors[0], events) == ISR_EXPANSION_RACE
    assert known_finding(errors[1], events) == EPOCH_BOUNDARY_ERASED
    first, answer, proposal, reset, hw = events[3942], events[3981], events[3994], events[3997], events[4000]
    assert (first["action"], first["isr_state"], first["isr"], first["partition_epoch"]) == (
        "expand", "proposed", [1, 4], 11)
    assert [e["isr_state"] for e in events[3942:3982] if e["event_type"] == "isr_change"
            and (e["topic"], e["partition"]) == ("t", 8)] == ["proposed", "committed"]  # answered once, no retry
    assert (answer["reason"], answer["isr_state"], answer["isr"], answer["partition_epoch"]) == (
        "alter_partition", "committed", [1, 4], 12)
    assert (proposal["action"], proposal["isr_state"], proposal["isr"]) == ("expand", "proposed", [1, 4, 5])
    assert proposal["ts_ms"] - answer["ts_ms"] == 2
    assert (events[3993]["event_type"], events[3993]["follower_id"], events[3993]["fetch_offset"]) == (
        "follower_fetch_state", 5, 3)
    assert (reset["reason"], reset["isr"], reset["partition_epoch"]) == ("leader_and_isr", [1, 4], 12)
    assert reset["ts_ms"] - answer["ts_ms"] == 3
    assert (hw["broker_id"], hw["role"], hw["old_hw"], hw["hw"]) == (1, "leader", 3, 6)
    assert [e["isr_state"] for e in events[3994:4026] if e["event_type"] == "isr_change"
            and (e["topic"], e["partition"]) == ("t", 8)] == ["proposed", "committed", "committed"]  # no answer to it
    assert (events[4025]["isr"], events[4025]["partition_epoch"]) == ([1, 4, 5], 13)
    assert events[4025]["ts_ms"] - hw["ts_ms"] == 4
    found, known = problems(sc)
    assert found == [] and len(known) == 2 and known[0].startswith("isr_expansion_race: isr_holds_committed t-8")
    assert known[1].startswith("epoch_boundary_erased: committed_prefix_agreement t-7")


def test_the_isr_expansion_race_loses_acknowledged_writes_when_the_other_isr_members_fail() -> None:
    """Finding A is more than a state the checker flags. Deep seed 1125039 (`--before-metadata-deltas`) has it on t-2,
    moving from [5, 3, 4] to [2, 1, 5]: leader 3 proposes adding 4 (event 1623) right after the AlterPartition answer
    committing [2, 3] at partition epoch 5, and epoch 5's metadata resets its ISR to {2, 3} (1624), while the
    controller commits the proposal at epoch 6. 3 raises the HW to 14 over {2, 3} and acknowledges the acks=all writes
    at 12 and 13 (1930, 1931) with 4, LEO 13, below the second (the HW then reaches 17). Crashing brokers 2 and 3 right
    then (5 064 ms, where the run applies the commit) leaves 4 the only live member of the controller's ISR: it is
    elected cleanly with LEO 13, 5 and 1 (outside the ISR) truncate to 13, and the acknowledged write at 13 is gone,
    without any unclean election. (Deep seed 201577 showed this on t-9 until a dead process's connections were reset,
    seed 1125039 until retention deleted whole segments.) Recorded (`recorded_run`): commit 2961b98's engine's run of
    this scenario (`deep-1125039`) and of it with the crash (`deep-1125039-crash-2-3`). On today's engine the seed
    does not race; of seeds 1151000-1153999, eight race (`--deep --before-metadata-deltas`), and crashing the raced
    leader's other ISR members at the commit, 1 ms before it, 1..12 ms after it, just after the last HW rise before it
    or just after an acks=all acknowledgement between the proposal and the commit leaves no `acked_write_lost` in any:
    the window between the reset and the commit is a few milliseconds or holds no acknowledged acks=all write."""
    base = before_metadata_deltas(deep_scenario(1125039))
    events, stats = recorded_run("deep-1125039")
    race = [v for v in check(events, stats).violations if known_finding(v, events) == ISR_EXPANSION_RACE]
    assert ("t", 2, 4) in [(v.topic, v.partition, v.replica) for v in race]

    crash = tuple(Fault(5064, "crash", broker, mode="process", down_ms=3000) for broker in (2, 3))
    events, stats = recorded_run("deep-1125039-crash-2-3")  # the run of replace(base, faults=base.faults + crash)
    assert [(e["ts_ms"] - base.start_ms, e["action"], e["broker_id"]) for e in events
            if e["event_type"] == "broker_lifecycle" and e["action"] != "start"] == [
        *((f.at_ms, "crash", f.broker) for f in crash), *((f.at_ms + 3000, "restart", f.broker) for f in crash)]
    lost = [v for v in check(events, stats).violations
            if v.invariant == "acked_write_lost" and (v.topic, v.partition) == ("t", 2)]
    assert [(v.severity, v.topic, v.partition, v.replica, v.offset) for v in lost] == [("error", "t", 2, 2, 13)]
    t2 = [e for e in events if (e.get("topic"), e.get("partition")) == ("t", 2)]
    acked = [(e["ts_ms"] - base.start_ms, e["acks"], e["error"], e["base_offset"], e["last_offset"]) for e in t2
             if e["event_type"] == "produce_ack" and e["broker_id"] == 3 and e.get("base_offset") in (12, 13)]
    assert acked == [(4944, -1, "NONE", 12, 12), (4944, -1, "NONE", 13, 13)]
    elections = [e for e in t2 if e["event_type"] == "leader_election"]
    after = [e for e in elections if e["ts_ms"] > base.start_ms + 5064]
    assert (after[0]["action"], after[0]["leader_id"], after[0]["isr"]) == ("clean", 4, [4])
    assert [e["leo"] for e in t2 if e["event_type"] == "leadership_change" and e["broker_id"] == 4
            and e["action"] == "become_leader" and e["ts_ms"] > base.start_ms + 5064][:1] == [13]
    assert all(e["action"] != "unclean" for e in elections)
    assert {known_finding(v, events) for v in lost} == {ISR_EXPANSION_RACE}  # finding A's loss, not a new bug


def test_the_correlated_campaign_seed_elects_the_raced_follower_after_an_election_of_a_crashed_broker() -> None:
    """`--seeds 784244-784244 --correlated --before-metadata-deltas`: finding A, the old leader following again before
    the raced follower's election. Leader 2 of t-6 proposed adding 5 (event 2109); the same-epoch metadata reset its ISR
    to [2, 4] (2178), the HW rose to 92 past 5's LEO 72, and then it learned the committed [2, 4, 5] (2766). 4 and 2
    crashed together; 2 came back and became a follower of 4, whom the controller, not yet aware of 4's crash, elected
    in epoch 1; then it elected 5, alone in the ISR, cleanly (epoch 2): 4 and 2 truncate the committed 72..91 and 5
    commits other records there. (Resetting a dead process's connections left the run as it was up to the crashes,
    events 2858 and 2865, and moved the event ids after them: 4's election is 2976, 5's 3172.) Recorded
    (`recorded_run`): the run of commit 6b3ba2b's engine; since a leader's read became a byte range that may end inside
    a batch the seed's run has no error, and no seed of the same flags searched on today's engine (784245-784744,
    1144530-1146529) shows this shape: the only loss of finding A among them, seed 784294's on t-0, comes with no crash
    at all, on a topic whose min ISR is 1."""
    sc = before_metadata_deltas(correlated_scenario(784244))
    events, stats, errors = _errors(sc, recorded="correlated-784244")
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("isr_holds_committed", "t", 6, 5, 2766, 72),
        ("truncation_safety", "t", 6, 4, 3209, 72), ("truncation_safety", "t", 6, 2, 3290, 72),
        ("inconsistent_offsets", "t", 6, 5, 4469, 72), ("inconsistent_offsets", "t", 6, 5, 4965, 82),
        ("acked_write_lost", "t", 6, 5, -1, 72), ("acked_write_lost", "t", 6, 5, -1, 82)]
    assert {known_finding(v, events) for v in errors} == {ISR_EXPANSION_RACE}
    assert problems_in(sc, events, stats)[0] == []
    reset, follows, election = events[2178], events[2998], events[3172]
    assert (reset["reason"], reset["isr"]) == ("leader_and_isr", [2, 4])
    assert (follows["broker_id"], follows["action"], follows["leader_id"]) == (2, "become_follower", 4)
    assert (election["action"], election["leader_id"], election["isr"]) == ("clean", 5, [5])
    assert events[3201]["leo"] == 72


def test_the_campaign_reads_the_simulator_audits_loss_from_the_raced_election_as_finding_a() -> None:
    """Seed 784244 with process crashes only and t without unclean elections (min ISR 2): no power loss at all, the
    same race and the same loss, on a topic that does not allow it, so the campaign judges the simulator audit's
    losses too, and lists them under the checker's finding A rather than reporting the run. (Seed 561204 showed it
    with one crash before a reassignment that adds no replica completed at once.) Recorded (`recorded_run`): this
    scenario's run of commit 6b3ba2b's engine (`correlated-784244-process-only`); since a leader's read became a byte
    range that may end inside a batch the seed's run of it loses nothing, and of the seeds of 784245-784744 and
    1144530-1146529 whose `--correlated --before-metadata-deltas` run shows the race on today's engine, only 784294's
    scenario so changed loses acknowledged writes, on a topic whose min ISR 1 allows it."""
    base = before_metadata_deltas(correlated_scenario(784244))
    assert base.nemesis is not None
    topics = tuple(replace(t, config={k: v for k, v in t.config.items() if k != "unclean.leader.election.enable"})
                   if t.name == "t" else t for t in base.topics)
    sc = replace(base, topics=topics, nemesis=replace(base.nemesis, crash_modes=("process",)))
    events, stats = recorded_run("correlated-784244-process-only")
    assert [(x["topic"], x["partition"], x["base_offset"]) for x in audit(events).lost_acked_writes()] == [
        ("t", 6, 72), ("t", 6, 82)]
    found, known = problems_in(sc, events, stats)
    assert found == []
    assert sum(k.startswith("isr_expansion_race: acked_write_lost t-6 replica 5") for k in known) == 2


def test_the_reassigning_campaign_seed_elects_the_raced_follower_by_completing_the_reassignment() -> None:
    """`--seeds 982174-982174 --reassigning --before-metadata-deltas`: finding A's loss with no failure at all, the
    raced commit itself electing the follower. u-0 (min ISR 3) moves from [1, 3] to [2, 4] (partition epoch 5, event
    2102); leader 1's ISR is [1, 3, 4], committed at epoch 9 by the AlterPartition answer (3962), when it proposes
    adding 2, whose LEO is 38 = the HW (3968, epoch 9). Epoch 9's metadata, arriving after that answer, resets its ISR
    to [1, 3, 4] (3996), the HW rises from 38 to 45 over that ISR (4002), and the acks=all writes at 38..44 are
    acknowledged (4003-4009). The controller commits the proposal at epoch 10: the ISR [1, 2, 3, 4] holds the target, so
    the same change completes the reassignment, leader 1 leaves, and the first target replica in the ISR, 2, is elected
    cleanly (4038, leader epoch 1) with LEO 38 (4047), although 4 held every record. 4 truncates 38..44 (4094) and 2
    commits other records there; the acknowledged 38..44 are lost. On t-0 the same leader raced the same way at the same
    time, its second proposal turned back at once while the first was in flight (4028, 4029), and the commit put 2 in
    the ISR below the HW (4066), which is all. Recorded (`recorded_run`): the run of commit 32fd916's engine; since
    crashed processes reset their connections the seed's run has no error, and no seed of the same flags searched on
    today's engine (981874-982474, 1123480-1126679) shows finding A's loss at all."""
    sc = before_metadata_deltas(reassigning_scenario(982174))
    events, stats, errors = _errors(sc, recorded="reassigning-982174")
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors[:2]] == [
        ("isr_holds_committed", "t", 0, 2, 4066, 190), ("truncation_safety", "u", 0, 4, 4094, 38)]
    assert [(v.replica, v.offset) for v in errors if v.invariant == "acked_write_lost"] == [
        (2, offset) for offset in range(38, 45)]
    assert {(v.invariant, v.topic, v.partition) for v in errors[2:]} == {
        ("inconsistent_offsets", "u", 0), ("committed_prefix_agreement", "u", 0), ("acked_write_lost", "u", 0)}
    assert len(errors) == 24 and all(v.offset is not None and 38 <= v.offset < 45 for v in errors[1:])
    assert {known_finding(v, events) for v in errors} == {ISR_EXPANSION_RACE}
    assert problems_in(sc, events, stats)[0] == []

    moving = events[2102]
    assert (moving["broker_id"], moving["partition_epoch"], moving["replicas"], moving["adding_replicas"],
            moving["removing_replicas"]) == (1, 5, [2, 4, 1, 3], [2, 4], [1, 3])
    answer, lagging, proposal, reset, hw = events[3962], events[3967], events[3968], events[3996], events[4002]
    assert (answer["reason"], answer["partition_epoch"], answer["isr"]) == ("alter_partition", 9, [1, 3, 4])
    assert (lagging["follower_id"], lagging["fetch_offset"]) == (2, 38)
    assert (proposal["broker_id"], proposal["isr_state"], proposal["partition_epoch"], proposal["isr"]) == (
        1, "proposed", 9, [1, 2, 3, 4])
    assert (reset["reason"], reset["partition_epoch"], reset["isr"]) == ("leader_and_isr", 9, [1, 3, 4])
    assert (hw["broker_id"], hw["old_hw"], hw["hw"]) == (1, 38, 45)
    assert [(e["event_type"], e["acks"], e["error"], e["base_offset"]) for e in events[4003:4010]] == [
        ("produce_ack", -1, "NONE", offset) for offset in range(38, 45)]
    election, elected, truncation = events[4038], events[4047], events[4094]
    assert (election["action"], election["reason"], election["leader_id"], election["leader_epoch"],
            election["partition_epoch"], election["replicas"], election["isr"]) == (
        "clean", "reassignment", 2, 1, 10, [2, 4], [2, 4])
    assert (elected["broker_id"], elected["action"], elected["leo"]) == (2, "become_leader", 38)
    assert (truncation["broker_id"], truncation["old_leo"], truncation["truncate_offset"], truncation["reason"]) == (
        4, 45, 38, "leader_epoch")
    assert not [e for e in events[3968:4047] if e["event_type"] == "broker_lifecycle"]  # no crash, no shutdown
    turned_back = events[4029]
    assert (turned_back["topic"], turned_back["isr_state"], turned_back["error"]) == (
        "t", "rejected", "OPERATION_NOT_ATTEMPTED")


def test_a_truncation_inside_a_divergent_batch_leaves_the_leo_at_the_target() -> None:
    """`python -m tests.sim.campaign --seeds 1190553-1190553 --overlapping --before-kip903 --before-metadata-deltas`.
    Leader 1 of t-0 (epoch 3, which it began at offset 952, event 4044) had its log start moved to 1095 by retention
    (4871, a whole segment deleted: finding B's erased boundary), so it answers follower 3, restarted (4895) with its
    epoch-2 records to 1163, with DivergingEpoch (2, 1095) (4905), inside 3's divergent batch 1094..1103 (3746,
    appended when 3 led epoch 2). Kafka's `truncateTo(1095)` drops that batch whole (`LogSegment.truncateTo`) and sets
    the LEO to 1095 (`LocalLog.truncateTo`) (4906); the follower fetches from 1095 (4907), appends there (4911), and
    raises its log start to the leader's (4913), past its divergent records: finding B's one step, nothing more. The
    engine used to set the LEO to the batch's start: the next response then failed the "Offset mismatch" check, the
    follower kept its divergent records, and a clean election could make them committed. (Seed 830521 showed this until
    the scheduler kept Kafka's fixed rate, then with other offsets and event ids until a dead process's connections were
    reset; seed 830373 until a leader's read became a byte range that may end inside a batch; seed 1147231 until
    retention deleted whole segments; seed 1156389 (leader 4 of t-1 answering follower 2 with (13, 1988)), its ids
    moved once when a restart loaded its log start from its checkpoint, until the fetcher ignored answers to an older
    epoch's request and a controlled shutdown took a sole-ISR leader's leadership at once (session 91); of seeds
    1190000-1190699 on that engine, 1190553 is one that shows it with finding B as its only error.)"""
    sc = before_kraft_lifecycle(before_metadata_deltas(before_kip903(overlapping_scenario(1190553))))
    _, events, _stats = run(sc)
    batch, answer, trunc, fetch = events[3746], events[4905], events[4906], events[4907]
    assert (batch["event_type"], batch["broker_id"], batch["base_offset"], batch["last_offset"],
            batch["batch_leader_epoch"]) == ("append", 3, 1094, 1103, 2)
    assert (events[4044]["action"], events[4044]["broker_id"], events[4044]["leader_epoch"], events[4044]["leo"]) == (
        "become_leader", 1, 3, 952)
    assert (events[4871]["broker_id"], events[4871]["log_start_offset"], events[4871]["reason"]) == (
        1, 1095, "segment_deletion")
    assert (events[4895]["event_type"], events[4895]["broker_id"], events[4895]["action"]) == (
        "broker_lifecycle", 3, "restart")
    assert (answer["broker_id"], answer["leader_id"], answer["diverging_epoch"], answer["diverging_end_offset"],
            answer["leader_log_start_offset"]) == (3, 1, 2, 1095, 1095)
    assert (trunc["event_type"], trunc["broker_id"], trunc["truncate_offset"]) == ("truncation", 3, 1095)
    assert (fetch["event_type"], fetch["broker_id"], fetch["fetch_offset"]) == ("fetch", 3, 1095)
    assert (events[4911]["event_type"], events[4911]["broker_id"], events[4911]["base_offset"]) == ("append", 3, 1095)
    assert (events[4913]["event_type"], events[4913]["broker_id"], events[4913]["log_start_offset"]) == (
        "log_start_offset_change", 3, 1095)
    found, known = problems(sc)
    assert found == []
    assert [k.split(":")[0] for k in known] == [EPOCH_BOUNDARY_ERASED]


def _reloaded(broker: int = 4, loaded: int = 776, had: int = 787) -> list[Event]:
    """Broker `broker`'s restart loads t-1's log start `loaded`, below the `had` its leader had raised it to."""
    return [FILLER, _ev("log_start_offset_change", broker, topic="t", role="follower", old_log_start_offset=had,
                        log_start_offset=loaded, reason="log_load"), FILLER]


@pytest.mark.parametrize(("invariant", "replica", "offset", "events", "expected"), [
    pytest.param("committed_prefix_agreement", 2, 776, _reloaded(), EPOCH_START_RELOADED, id="at-the-loaded-start"),
    pytest.param("committed_prefix_agreement", 2, 786, _reloaded(), EPOCH_START_RELOADED, id="below-the-old-start"),
    pytest.param("committed_prefix_agreement", 2, 787, _reloaded(), None, id="at-the-old-start"),
    pytest.param("committed_prefix_agreement", 2, 775, _reloaded(), None, id="below-the-loaded-start"),
    pytest.param("truncation_safety", 4, 780, _reloaded(), EPOCH_START_RELOADED, id="the-reloading-replica-truncates"),
    pytest.param("truncation_safety", 2, 780, _reloaded(), None, id="another-replica-truncates"),
    pytest.param("epoch_cache_monotonic", 4, 787, _reloaded(), EPOCH_START_RELOADED, id="appended-after-the-stretch"),
    pytest.param("epoch_cache_monotonic", 4, 788, _reloaded(), None, id="appended-past-the-stretch"),
    pytest.param("follower_log_matching", 2, 780, _reloaded(), EPOCH_START_RELOADED,
                 id="appended-after-kept-records-the-leaders-reload-left"),
    pytest.param("follower_log_matching", 2, 787, _reloaded(), None, id="appended-past-the-leaders-stretch"),
    pytest.param("committed_prefix_agreement", 2, 780,
                 [FILLER, dict(_reloaded()[1], reason="leader_offset_increment"), FILLER], None,
                 id="a-raise-is-not-a-load"),
    pytest.param("isr_holds_committed", 2, 780, _reloaded(), EPOCH_START_RELOADED, id="a-member-holds-its-own-stretch"),
    pytest.param("isr_holds_committed", 2, 787, _reloaded(), None, id="a-member-differs-above-the-stretch"),
    pytest.param("inconsistent_offsets", 2, 776, _reloaded(), EPOCH_START_RELOADED,
                 id="committed-twice-in-the-stretch"),
    pytest.param("inconsistent_offsets", 2, 775, _reloaded(), None, id="committed-twice-below-the-stretch"),
    pytest.param("isr_holds_committed", 2, 780, [FILLER] * 3, None, id="no-load-before"),
])
def test_a_restart_loading_its_log_start_below_the_start_it_had_is_finding_f(
        invariant: str, replica: int, offset: int, events: list[Event], expected: str | None) -> None:
    assert known_finding(_violation(invariant, "t", 1, replica, 2, offset), events) == expected


@pytest.mark.parametrize(("seed", "violations"), [
    # Broker 4's restart (event 11871) loaded t-1's start 776 below the 787 its leader had given it; led again, it
    # answered broker 2 (epoch 5 records from 776) with epoch 6's start 787: 2 kept 776..786.
    (0, {("committed_prefix_agreement", "t", 1, 2, 776)}),
    # Broker 3's power failure cut t-1 to 1790, its raised start, and its restart loaded 1519: its epoch cache empty,
    # it truncates to its HW 1529 as a follower.
    (120, {("truncation_safety", "t", 1, 3, 1529)}),
    # Broker 3's restart (event 12701) loaded t-1's start 54 below 105; its leader 2's epoch-0 batch goes after its
    # kept epoch-1 record at 84. (Seed 386 showed this, with `epoch_cache_monotonic` too, until session 91's fetcher
    # and controller changes; session 91's `--power` campaign 1175300-1177299 found this seed.)
    (1176489, {("follower_log_matching", "t", 1, 3, 84)}),
])
def test_the_power_campaign_seeds_of_finding_f(seed: int, violations: set[tuple[str, str, int, int, int]]) -> None:
    """`python -m tests.sim.campaign --seeds SEED-SEED --power` (found by session 90's campaigns, the first once a
    restart loaded its log start offsets from the checkpoint): every error the checker finds is finding F, and the ones
    listed are among them."""
    events, _stats, errors = _errors(before_kraft_lifecycle(power_scenario(seed)))
    stamped = [dict(e, event_id=i) for i, e in enumerate(events)]
    reloaded = [v for v in errors if known_finding(v, stamped) == EPOCH_START_RELOADED]
    assert violations <= {(v.invariant, v.topic, v.partition, v.replica, v.offset) for v in reloaded}, reloaded
    found, _known = problems(before_kraft_lifecycle(power_scenario(seed)))
    assert found == []


def test_the_reassigning_power_seed_of_finding_f_rejoins_the_isr() -> None:
    """`python -m tests.sim.campaign --seeds 1174614-1174614 --reassigning --power` (session 91): broker 1's restart
    (event 5218) loaded t-4's start 61 below the 81 its leader had given it; led again (epoch 8, event 6054), it
    answered broker 5's epoch 3 with 81, so 5 kept its epoch-3 records of 71..80, where 1 holds epoch 4's. Added back
    to the ISR (event 6207), 5 lacks the leader's record at 71 below the HW. (Until session 91's fetcher and
    controller changes, 5 was later elected and committed its own records a second time, `inconsistent_offsets`,
    events 6196 and 8532.)"""
    sc = before_kraft_lifecycle(power_reassigning_scenario(1174614))
    events, _stats, errors = _errors(sc)
    load = events[5218]
    assert (load["event_type"], load["broker_id"], load["partition"], load["reason"],
            load["old_log_start_offset"], load["log_start_offset"]) == ("log_start_offset_change", 1, 4, "log_load",
                                                                        81, 61)
    assert (events[6207]["event_type"], events[6207]["broker_id"], events[6207]["isr"]) == ("isr_change", 1, [1, 5])
    stamped = [dict(e, event_id=i) for i, e in enumerate(events)]
    reloaded = {(v.invariant, v.topic, v.partition, v.replica, v.offset)
                for v in errors if known_finding(v, stamped) == EPOCH_START_RELOADED}
    assert {("isr_holds_committed", "t", 4, 5, 71), ("committed_prefix_agreement", "t", 4, 5, 71)} <= reloaded, reloaded
    found, _known = problems(sc)
    assert found == []
