"""A reassignment completes in the AlterPartition change that brings its last target replica into the ISR.

KRaft's `ReplicationControlManager.alterPartition` builds one `PartitionChangeRecord` for the proposed ISR, and
`PartitionChangeBuilder.build` completes an ongoing reassignment in that same record when the ISR then holds every
target replica (`completeReassignmentIfNeeded`). The answer states the partition after the record: a leader that the
target leaves out gets NEW_LEADER_ELECTED and stays pending until the metadata tells it (reference §2.5); a leader that
stays gets the new epochs, and a leader epoch moved by a removed replica makes it ignore the answer and wait for the
metadata too. Only a change that removes a replica or the leader bumps the leader epoch
(`triggerLeaderEpochBumpIfNeeded`), so a move that only adds replicas completes in the leader's epoch.
"""

from __future__ import annotations

from typing import Any

from replication_core.sim.scenario import parse_scenario_text
from tests.sim.helpers import check, run
from tests.sim.test_reassign_without_adding import BODY

MOVE = "  - {{at_ms: 3000, action: reassign, topic: t, partition: 0, replicas: {target}}}\n"
"""At 3 s, t-0 (on 1, 2, 3, led by broker 1, in `BODY` with four brokers) moves to `target`."""

Row = tuple[int, int, str, str | None, int, int, list[int], list[int] | None, str | None, str | None]


def _moves(target: str) -> list[Row]:
    """(virtual ms, broker, event type, action, leader epoch, partition epoch, isr, replicas, reason, error) of the
    elections, leadership changes and ISR changes from the move on, after asserting the checker finds nothing."""
    sc = parse_scenario_text(BODY.format(name="move", duration=8000, brokers=4) + MOVE.format(target=target))
    _, events, stats = run(sc)
    assert check(events, stats).violations == ()

    def row(e: dict[str, Any]) -> Row:
        return (e["ts_ms"] - sc.start_ms, e["broker_id"], e["event_type"], e.get("action"), e["leader_epoch"],
                e["partition_epoch"], e["isr"], e.get("replicas"), e.get("reason"), e.get("error"))

    return [row(e) for e in events if e["ts_ms"] - sc.start_ms >= 3000
            and e["event_type"] in ("leader_election", "leadership_change", "isr_change")]


def test_a_move_off_the_leader_answers_new_leader_elected() -> None:
    """[1, 2, 3] -> [4, 2, 3]: broker 4 joins as a follower in epoch 0; the expansion that adds it completes the move in
    one change that elects broker 4 (epoch 1), and leader 1 is told NEW_LEADER_ELECTED and keeps its proposal pending
    until the metadata removes it."""
    assert _moves("[4, 2, 3]") == [
        (3002, 1, "isr_change", "update", 0, 1, [1, 2, 3], [4, 2, 3, 1], "leader_and_isr", "NONE"),
        (3002, 4, "leadership_change", "become_follower", 0, 1, [], [4, 2, 3, 1], None, None),
        (3006, 1, "isr_change", "expand", 0, 1, [1, 2, 3, 4], None, "follower_caught_up", "NONE"),
        (3008, 1000, "leader_election", "clean", 1, 2, [2, 3, 4], [4, 2, 3], "reassignment", None),
        (3009, 1, "isr_change", "expand", 0, 1, [1, 2, 3, 4], None, "awaiting_metadata", "NEW_LEADER_ELECTED"),
        (3009, 3, "leadership_change", "become_follower", 1, 2, [], [4, 2, 3], None, None),
        (3010, 2, "leadership_change", "become_follower", 1, 2, [], [4, 2, 3], None, None),
        (3010, 4, "leadership_change", "become_leader", 1, 2, [2, 3, 4], [4, 2, 3], None, None),
    ]


def test_a_move_that_only_adds_completes_in_the_leaders_epoch() -> None:
    """[1, 2, 3] -> [1, 2, 3, 4]: the expansion that adds broker 4 completes the move; no replica left, so the answer
    commits in epoch 0 with partition epoch 2, and the metadata then states the assignment without adding replicas."""
    assert _moves("[1, 2, 3, 4]") == [
        (3002, 1, "isr_change", "update", 0, 1, [1, 2, 3], [1, 2, 3, 4], "leader_and_isr", "NONE"),
        (3002, 4, "leadership_change", "become_follower", 0, 1, [], [1, 2, 3, 4], None, None),
        (3006, 1, "isr_change", "expand", 0, 1, [1, 2, 3, 4], None, "follower_caught_up", "NONE"),
        (3009, 1, "isr_change", "expand", 0, 2, [1, 2, 3, 4], None, "alter_partition", "NONE"),
        (3009, 1, "isr_change", "update", 0, 2, [1, 2, 3, 4], [1, 2, 3, 4], "leader_and_isr", "NONE"),
    ]


def test_a_move_that_removes_a_follower_bumps_the_leader_epoch_in_the_same_change() -> None:
    """[1, 2, 3] -> [1, 2, 4]: the expansion that adds broker 4 also removes broker 3, so the one change bumps the
    leader epoch as well: leader 1 sets the answer of epoch 1 aside (its proposal stays pending) and learns the change
    from the metadata, a new epoch over [1, 2, 4]; broker 3 gets StopReplica."""
    assert _moves("[1, 2, 4]") == [
        (3002, 1, "isr_change", "update", 0, 1, [1, 2, 3], [1, 2, 4, 3], "leader_and_isr", "NONE"),
        (3002, 4, "leadership_change", "become_follower", 0, 1, [], [1, 2, 4, 3], None, None),
        (3006, 1, "isr_change", "expand", 0, 1, [1, 2, 3, 4], None, "follower_caught_up", "NONE"),
        (3009, 1, "isr_change", "expand", 0, 1, [1, 2, 4], None, "stale_response", "NONE"),
        (3009, 1, "leadership_change", "become_leader", 1, 2, [1, 2, 4], [1, 2, 4], None, None),
        (3010, 2, "leadership_change", "become_follower", 1, 2, [], [1, 2, 4], None, None),
        (3010, 4, "leadership_change", "become_follower", 1, 2, [], [1, 2, 4], None, None),
    ]
