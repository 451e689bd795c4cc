"""`tests.sim.campaign --power`: overlapping faults whose crashes may be power failures.

Overlapping power failures can lose every copy of a committed record, which replication does not promise to
survive: a replica whose crash recovery dropped committed records is then elected, and the others truncate to
it. The campaign explains a partition's errors from that election on (`power_lossy`) and judges the rest as
`--overlapping` does. These tests pin what `power_lossy` counts, that the explained errors are real checker
errors (so the variant is not vacuous), and that a short campaign shows nothing else.
"""

from __future__ import annotations

from typing import Any

from replication_core.checker.violation import Violation
from tests.sim.campaign import (
    before_kraft_lifecycle,
    before_metadata_deltas,
    power_lossy,
    power_lost_member,
    power_reassigning_scenario,
    power_scenario,
    problems,
    problems_in,
)
from tests.sim.helpers import check, recorded_run, run
from tests.sim.known_findings import EPOCH_START_RELOADED, known_finding


def _ev(event_type: str, broker: int, **fields: Any) -> dict[str, Any]:
    return {"event_type": event_type, "broker_id": broker, "topic": fields.pop("topic", "t"),
            "partition": fields.pop("partition", 0), "leader_epoch": fields.pop("leader_epoch", 1), **fields}


def _lifecycle(broker: int, action: str) -> dict[str, Any]:
    return {"event_type": "broker_lifecycle", "broker_id": broker, "topic": None, "partition": None,
            "action": action}


def test_a_partition_is_power_lossy_from_the_election_of_a_crash_recovered_replica_below_the_hw() -> None:
    events = [
        _lifecycle(2, "crash"),                                         # 0
        _ev("truncation", 2, truncate_offset=6),                        # 1: recovery drops 6.. (not yet committed)
        _ev("hw_change", 1, hw=10),                                     # 2: the leader commits 10 from 2's old LEO
        _ev("truncation", 2, truncate_offset=4, partition=1),           # 3: t-1 has nothing committed
        _lifecycle(2, "restart"),                                       # 4
        _ev("leadership_change", 2, action="become_leader", partition=1, leo=4),  # 5: nothing committed lost
        _ev("leadership_change", 3, action="become_leader", leo=3),     # 6: another replica: not lossy
        _ev("leadership_change", 2, action="become_leader", leo=6),     # 7: the replica that lost 6..9
        _ev("leadership_change", 2, action="become_leader", leo=6),     # 8: the first election counts
    ]
    assert power_lossy(events) == {("t", 0): 7}


def test_a_truncation_of_a_running_broker_or_a_refilled_log_is_not_a_power_loss() -> None:
    events = [
        _ev("hw_change", 1, hw=10),
        _ev("truncation", 2, truncate_offset=6),         # the broker is up: a fetcher's truncation, judged
        _lifecycle(3, "crash"),
        _ev("truncation", 3, truncate_offset=6),
        _lifecycle(3, "restart"),
        _ev("leadership_change", 2, action="become_leader", leo=6),
        _ev("leadership_change", 3, action="become_leader", leo=10),  # fetched the lost records back first
    ]
    assert power_lossy(events) == {}


def _zombie_commit(zombie_epoch: int) -> list[dict[str, Any]]:
    """Seed 533949's t-1, shortened: broker 3 loses 132.. to a power failure, is elected in epoch 5 with LEO
    132 (nothing above 102 was committed yet) and commits its own records; then leader 2, back from a pause
    in epoch `zombie_epoch`, raises its HW to 135 from the LEO broker 3 fetched to before the crash."""
    return [
        _ev("hw_change", 2, leader_epoch=2, hw=102),                    # 0
        _lifecycle(3, "crash"),                                         # 1
        _ev("truncation", 3, leader_epoch=2, truncate_offset=132),      # 2: recovery drops 132..134
        _lifecycle(3, "restart"),                                       # 3
        _ev("leadership_change", 3, action="become_leader", leader_epoch=5, leo=132),  # 4: above HW 102
        _ev("hw_change", 3, leader_epoch=5, hw=141),                    # 5: its own records: not lossy
        _ev("hw_change", 2, leader_epoch=zombie_epoch, hw=135),         # 6
    ]


def test_a_partition_is_power_lossy_from_an_older_epochs_hw_passing_an_elected_crash_recovered_replica() -> None:
    assert power_lossy(_zombie_commit(2)) == {("t", 0): 6}
    assert power_lossy(_zombie_commit(5)) == {}  # the elected replica's own epoch commits what it holds
    assert power_lossy(_zombie_commit(2)[:6]) == {}


def test_power_failures_really_lose_acknowledged_writes_and_only_those_errors_are_explained() -> None:
    # Seed 850360 (`--before-metadata-deltas`): broker 3, alone in u-0's ISR (min.insync.replicas 1), acknowledges
    # 8..32 (events 1401..1927) and loses them to a power failure (1954: its log cut from 33 to 8); elected again with
    # LEO 8 (2513), it writes other records there, and the acknowledged writes are not on u-0's final leader 1. (Seeds
    # 850224, until the scheduler kept Kafka's fixed rate, and 900077 of the first `--power` campaign, before the
    # controller published leaderless partitions, showed this.)
    sc = before_kraft_lifecycle(before_metadata_deltas(power_scenario(850360)))
    assert sc.nemesis is not None and "power" in sc.nemesis.crash_modes
    _, events, stats = run(sc)
    errors = [v for v in check(events, stats).violations if v.severity == "error"]
    lost = [v for v in errors if v.invariant == "acked_write_lost"]
    assert lost and {(v.topic, v.partition) for v in lost} == {("u", 0)}
    assert [v.offset for v in lost] == list(range(8, 33))
    assert ("u", 0) in power_lossy(events)
    cut = events[1954]
    assert (cut["event_type"], cut["broker_id"], cut["old_leo"], cut["truncate_offset"]) == ("truncation", 3, 33, 8)
    assert problems_in(sc, events, stats) == ([], [])


def test_a_short_power_campaign_shows_no_problem_beyond_the_known_findings() -> None:
    # Without `power_lossy`, seeds 900021 and 900030 report errors of partitions a power failure had led from.
    reported = {seed: found for seed in range(900000, 900040) if (found := problems(power_scenario(seed))[0])}
    assert reported == {}


def test_the_reassigning_power_seed_whose_paused_leader_committed_lost_records_is_explained() -> None:
    """`--seeds 533949-533949 --reassigning --power --before-metadata-deltas`: `_zombie_commit` as it ran (t-1, HW
    change 1668). Broker 3 loses 132..134 to a power failure (event 1380) and is elected in epoch 5 with LEO 132 (1534;
    nothing above 102 was committed yet), and commits its own records; leader 2, back from a pause in epoch 2 (no event
    of 2 from 5066 to 7015 virtual ms), applies epoch 8's ISR [2, 3] (1667) and raises its HW from 102 to 135 (1668),
    the LEO broker 3 fetched to before the crash; as a follower of epoch 5 it then truncates to 132 (1748), below that
    HW. (Event ids as of schema 1.9, whose broker_fault events record the nemesis's pauses, stalls and partitions.)
    Recorded (`recorded_run`): since the scheduler kept Kafka's fixed rate the seed's run has no error, and of
    532000-536499 (4,500 seeds) the six runs where an older epoch's HW change makes a partition power-lossy have no
    error there."""
    sc = before_metadata_deltas(power_reassigning_scenario(533949))
    events, stats = recorded_run("reassigning-power-533949")
    errors = [v for v in check(events, stats).violations if v.severity == "error"]
    assert {(v.invariant, v.topic, v.partition) for v in errors} == {
        ("inconsistent_offsets", "t", 1), ("committed_prefix_agreement", "t", 1), ("truncation_safety", "t", 1)}
    assert power_lossy(events)[("t", 1)] == 1668 == min(v.event_id for v in errors)
    lost, elected = events[1380], events[1534]
    assert (lost["event_type"], lost["broker_id"], lost["old_leo"], lost["truncate_offset"]) == (
        "truncation", 3, 135, 132)
    assert (elected["broker_id"], elected["action"], elected["leader_epoch"], elected["leo"], elected["hw"]) == (
        3, "become_leader", 5, 132, 102)
    zombie = events[1668]
    assert (zombie["broker_id"], zombie["leader_epoch"], zombie["old_hw"], zombie["hw"]) == (2, 2, 102, 135)
    assert problems_in(sc, events, stats) == ([], [])


def _lacking(events: list[dict[str, Any]], offset: int = 1805) -> Violation:
    """isr_holds_committed: ISR member 1 of t-0 lacks `offset`, detected at the last event."""
    return Violation("isr_holds_committed", "error", "run", "t", 0, 1, 0, len(events) - 1, offset, None, None,
                     (len(events) - 1,), "")


def _lost_member(*, crashed: bool = True, refilled: bool = False, truncated_again: bool = False,
                 readded: bool = False) -> list[dict[str, Any]]:
    """Seed 597684's u-0, shortened: follower 1 loses 1700..1809 to a power failure, restarts, and its paused
    leader 3 raises the HW to 1810 from the fetch 1 sent before the crash. `readded`: 1 was out of the ISR and
    a commit adds it back after the crash (seed 850794 without broker epochs: KIP-903's bug, reported)."""
    events = [_lifecycle(1, "crash") if crashed else _ev("hw_change", 1, hw=1800),
              _ev("truncation", 1, truncate_offset=1700, old_leo=1810), _lifecycle(1, "restart")]
    if readded:
        events.append(_ev("isr_change", 3, isr_state="committed", old_isr=[3], isr=[1, 3]))
    if refilled:
        events.append(_ev("append", 1, base_offset=1805, last_offset=1809))
    if truncated_again:
        events.append(_ev("truncation", 1, truncate_offset=1690, old_leo=1700))
    return [*events, _ev("hw_change", 3, hw=1810)]


def test_an_isr_member_lacking_what_its_power_failure_took_is_explained() -> None:
    events = _lost_member()
    assert power_lost_member(_lacking(events), events)
    assert not power_lost_member(_lacking(events, offset=1690), events)  # below what the crash took
    for other in (_lost_member(crashed=False), _lost_member(refilled=True), _lost_member(truncated_again=True),
                  _lost_member(readded=True)):
        assert not power_lost_member(_lacking(other), other)


def test_the_power_seed_whose_paused_leader_counted_a_crashed_followers_old_fetch_is_explained() -> None:
    """`--seeds 597684-597684 --power --before-metadata-deltas`: leader 3 of u-0 pauses (a 789 ms GC pause from 19005
    virtual ms, event 12476: no other event of 3 from 19003 until the pause ends at 19794) just after it answered
    follower 1's fetch at 1750 (12473); 2 ms into the pause 1 takes that answer (12477) and sends a fetch at 1755
    (12480); 1 then loses power (12556), and its recovery drops 1640..1754 (12559); leader 3, back, processes that
    fetch from before the crash (12658), raises the HW from 1750 to 1755 (12659), over records 1 no longer has,
    acknowledges the acks=all write of 1750..1754 (12660) and times out its other waiting produce requests
    (12663..12700). Since a restart loads its log start offset from its checkpoint, the run also shows finding F on u-0
    (event 1003). (Until the fetcher ignored answers to an older epoch's request and a controlled shutdown took a
    sole-ISR leader's leadership at once (session 91), 1 sent a fetch at 1750 in the pause's first ms and 3 timed out
    its waiting produce requests before it processed that fetch, events 12122..12364; until a restart loaded its log
    start offset from its checkpoint, the same four event ids earlier; until retention deleted whole segments, the same
    seed did this with a fetch at 1780, events 13192..13402; until the scheduler kept Kafka's fixed rate, with a fetch
    at 1810, events 13005..13203; until a dead process's connections were reset, with a fetch at 1825, events
    13099..13283.)"""
    sc = before_kraft_lifecycle(before_metadata_deltas(power_scenario(597684)))
    _, events, stats = run(sc)
    errors = [v for v in check(events, stats).violations if v.severity == "error"]
    assert [(v.invariant, v.topic, v.partition, v.replica, v.event_id, v.offset) for v in errors] == [
        ("truncation_safety", "u", 0, 3, 1003, 20), ("isr_holds_committed", "u", 0, 1, 12659, 1750)]
    assert known_finding(errors[0], events) == EPOCH_START_RELOADED
    pause, sent, crash, lost = events[12476], events[12480], events[12556], events[12559]
    assert (events[12473]["event_type"], events[12473]["broker_id"], events[12473]["follower_id"],
            events[12473]["fetch_offset"]) == ("follower_fetch_state", 3, 1, 1750)
    taken = events[12477]
    assert (taken["event_type"], taken["broker_id"], taken["leader_id"], taken["fetch_offset"]) == (
        "fetch_response", 1, 3, 1750)
    assert (sent["event_type"], sent["broker_id"], sent["leader_id"], sent["fetch_offset"]) == ("fetch", 1, 3, 1755)
    assert (pause["event_type"], pause["broker_id"], pause["action"], pause["duration_ms"]) == (
        "broker_fault", 3, "gc_pause", 789)
    assert taken["ts_ms"] - pause["ts_ms"] == sent["ts_ms"] - pause["ts_ms"] == 2
    assert events[12475]["broker_id"] == 3 and pause["ts_ms"] - events[12475]["ts_ms"] == 2
    assert not [e for e in events[12477:12658] if e["broker_id"] == 3]
    assert (crash["broker_id"], crash["action"]) == (1, "crash")
    assert (lost["event_type"], lost["broker_id"], lost["topic"], lost["partition"], lost["old_leo"],
            lost["truncate_offset"]) == ("truncation", 1, "u", 0, 1755, 1640)
    fetched, raised, acked = events[12658], events[12659], events[12660]
    assert (fetched["event_type"], fetched["follower_id"], fetched["fetch_offset"]) == ("follower_fetch_state", 1, 1755)
    assert fetched["ts_ms"] - pause["ts_ms"] == 789
    assert (raised["broker_id"], raised["old_hw"], raised["hw"]) == (3, 1750, 1755)
    assert (acked["event_type"], acked["broker_id"], acked["topic"], acked["partition"], acked["acks"], acked["error"],
            acked["base_offset"], acked["last_offset"]) == ("produce_ack", 3, "u", 0, -1, "NONE", 1750, 1754)
    timed_out = events[12663:12701]
    assert {(e["event_type"], e["broker_id"], e["topic"], e["partition"], e["error"], e["ts_ms"] - pause["ts_ms"])
            for e in timed_out} == {("produce_ack", 3, "u", 0, "REQUEST_TIMED_OUT", 789)}
    assert power_lost_member(errors[1], events)
    found, known = problems_in(sc, events, stats)
    assert found == [] and [k.split(":")[0] for k in known] == [EPOCH_START_RELOADED], known


def test_the_power_seed_whose_leader_trimmed_an_empty_epoch_truncates_its_follower_right() -> None:
    """`--seeds 597433-597433 --power --before-metadata-deltas` (leader-epoch mode): broker 1 led t-0's epoch 5 at its
    LEO 267 without appending (event 7805), then followed epoch 6 (7807), where its fetcher's truncateTo(267) trimmed
    that entry (no event) before it appended epoch-4 batches at 267 (7937); leading epoch 7 (8040), it answered follower
    3 (latest epoch 3, LEO 243) with (3, 179), the start of its epoch 4, and 3 truncated to 179 (event 8168). The
    checker, which kept (5, 267) and let `assign(4, 267)` drop (4, 179) with it, expected (3, 267): no truncation below
    the LEO 243. Recorded (`recorded_run`): since the scheduler kept Kafka's fixed rate no seed of about 8,600 searched
    (596000-596449, 597000-602549, 610000-610999, 620000-620499, 852000-852599) shows the whole shape (a copy of the
    checker without the fix reporting `truncation_point` where the checker does not)."""
    sc = before_metadata_deltas(power_scenario(597433))
    events, stats = recorded_run("power-597433")
    trunc = events[8168]
    assert (trunc["broker_id"], trunc["reason"], trunc["old_leo"], trunc["truncate_offset"]) == (
        3, "leader_epoch", 243, 179)
    assert [v for v in check(events, stats).violations if v.invariant == "truncation_point"] == []
    assert problems_in(sc, events, stats) == ([], [])
