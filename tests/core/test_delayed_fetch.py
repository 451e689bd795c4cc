"""DelayedFetch and its purgatory (reference §5): ports of DelayedFetchTest plus purgatory behaviour."""

from __future__ import annotations

import pytest

from replication_core.config import ReplicationConfig
from replication_core.delayed_fetch import (
    DelayedFetch,
    DelayedFetchPurgatory,
    FetchPartitionStatus,
    can_respond_immediately,
)
from replication_core.errors import UnknownTopicOrPartitionError
from replication_core.log import Log
from replication_core.partition import Partition, PartitionRegistration

TP = ("topic", 0)


def leader(epoch: int = 10, batches: tuple[tuple[int, int], ...] = ((500, 9),)) -> Partition:
    """A leader for TP on broker 1 with the given (record count, epoch) batches."""
    p = Partition("topic", 0, 1, ReplicationConfig())
    for count, e in batches:
        p.log.append_as_leader(count, 100, 0, e)
    p.make_leader(PartitionRegistration(1, epoch, (1, 2), (1, 2), 1), 0)
    return p


def lookup_for(p: Partition | None):  # type: ignore[no-untyped-def]
    def lookup(key):  # type: ignore[no-untyped-def]
        if p is None:
            raise UnknownTopicOrPartitionError(str(key))
        return p
    return lookup


def follower_fetch(fetch_offset: int = 500, epoch: int | None = 10, last_fetched_epoch: int | None = None,
                   min_bytes: int = 1, replica_id: int = 2) -> DelayedFetch:
    return DelayedFetch("req", replica_id, min_bytes, 500,
                        {TP: FetchPartitionStatus(fetch_offset, 1000, epoch, last_fetched_epoch)})


def test_fetch_with_fenced_epoch() -> None:
    """DelayedFetchTest.testFetchWithFencedEpoch: the request's epoch 10 is now fenced -> complete."""
    p = leader(epoch=11)
    assert follower_fetch(epoch=10).try_complete(lookup_for(p))


def test_not_leader_or_follower() -> None:
    """DelayedFetchTest.testNotLeaderOrFollower: the partition is no longer led here -> complete."""
    p = leader()
    p.make_follower(PartitionRegistration(2, 11, (1, 2), (1, 2), 2), 0)
    assert follower_fetch(epoch=None).try_complete(lookup_for(p))
    assert follower_fetch(epoch=None).try_complete(lookup_for(None))


def test_diverging_epoch() -> None:
    """DelayedFetchTest.testDivergingEpoch: lastFetchedEpoch 9 but epoch 9 ends at 499 < 500 -> complete."""
    p = leader(epoch=10, batches=((499, 9), (1, 10)))
    assert p.log.end_offset_for_epoch(9) == (9, 499)
    assert follower_fetch(fetch_offset=500, last_fetched_epoch=9).try_complete(lookup_for(p))


def test_waits_when_caught_up_and_completes_on_new_data() -> None:
    """tryComplete case G: nothing between the fetch offset and the LEO -> wait; one append -> complete."""
    p = leader()
    op = follower_fetch(fetch_offset=500)
    assert not op.try_complete(lookup_for(p))
    p.append_records_to_leader(1, 100, 0, 1, 0)
    assert op.try_complete(lookup_for(p))


@pytest.mark.parametrize(("start_segment", "throttled", "completes"), [
    (0, False, True), (0, True, False), (500, False, False), (None, False, False)])
def test_a_fetch_position_on_an_older_segment_completes_unless_throttled(
        start_segment: int | None, throttled: bool, completes: bool) -> None:
    """DelayedFetchTest / tryComplete case F: fetch offset 500 read on segment 0, the LEO now on segment 500 (the
    leader rolled) -> complete whatever min_bytes says, but not for a throttled follower (nor do its bytes count);
    read on segment 500 (the same as the LEO) -> only its 100 bytes count, short of min_bytes. Without a recorded
    start segment, the segment holding the fetch offset now is taken (500 here)."""
    p = Partition("topic", 0, 1, ReplicationConfig())
    p.log = Log("topic", 0, 1, segment_bytes=1000)
    for count, size in ((500, 950), (1, 100)):
        p.log.append_as_leader(count, size, 0, 9)
    p.make_leader(PartitionRegistration(1, 10, (1, 2), (1, 2), 1), 0)
    assert p.log.segments == ((0, 950), (500, 100))
    op = DelayedFetch("req", 2, 10**6, 500, {TP: FetchPartitionStatus(500, 10**6, 10, None)},
                      is_throttled=(lambda key, now: throttled),
                      start_segments=None if start_segment is None else {TP: start_segment})
    assert op.try_complete(lookup_for(p)) is completes


@pytest.mark.parametrize(("hw", "completes"), [(0, True), (500, False)])
def test_consumer_fetch_with_high_watermark_end(hw: int, completes: bool) -> None:
    """DelayedFetchTest.testDelayedFetchWithMessageOnlyHighWatermark, adapted: a consumer at 450 whose end
    offset (the HW) is 0 completes (the leader truncated, case F); with HW 500 it waits while fewer than
    min_bytes are readable (replog offsets always carry positions, so 'message-only' metadata cannot
    occur; the waiting half is kept through min_bytes)."""
    p = leader(batches=((1000, 9),))
    p.log.update_high_watermark(hw)
    op = DelayedFetch("c", -1, 10**9, 500, {TP: FetchPartitionStatus(450, 10**9, None, None)})
    assert op.try_complete(lookup_for(p)) is completes


def test_immediate_answer_rules() -> None:
    """ReplicaManager.fetchMessages immediate cases: maxWait <= 0, no partitions, enough bytes, error,
    diverging epoch."""
    assert can_respond_immediately(0, 1, 0, 1, False, False)
    assert can_respond_immediately(500, 0, 0, 1, False, False)
    assert can_respond_immediately(500, 1, 1, 1, False, False)
    assert can_respond_immediately(500, 1, 0, 1, True, False)
    assert can_respond_immediately(500, 1, 0, 1, False, True)
    assert not can_respond_immediately(500, 1, 0, 1, False, False)


def test_purgatory_watch_complete_and_expire() -> None:
    """DelayedOperationPurgatory: watch by key, complete on checkAndComplete, expire at the deadline."""
    p = leader()
    purgatory = DelayedFetchPurgatory()
    op1 = follower_fetch()
    op2 = DelayedFetch("late", 3, 1, 900, {TP: FetchPartitionStatus(500, 1000, 10, None)})
    assert not purgatory.try_complete_else_watch(op1, lookup_for(p))
    assert not purgatory.try_complete_else_watch(op2, lookup_for(p))
    assert len(purgatory) == 2 and purgatory.watched(TP) == 2 and purgatory.next_deadline() == 500
    assert purgatory.check_and_complete(TP, lookup_for(p)) == []
    assert purgatory.expire(499) == []
    assert purgatory.expire(500) == [op1] and op1.completed
    assert len(purgatory) == 1 and purgatory.next_deadline() == 900
    p.append_records_to_leader(1, 100, 0, 1, 0)
    assert purgatory.check_and_complete(TP, lookup_for(p)) == [op2]
    assert len(purgatory) == 0 and purgatory.expire(10_000) == [] and purgatory.next_deadline() is None


def test_try_complete_else_watch_completes_immediately() -> None:
    """tryCompleteElseWatch: an operation completable at once is never watched."""
    p = leader()
    p.append_records_to_leader(1, 100, 0, 1, 0)
    purgatory = DelayedFetchPurgatory()
    assert purgatory.try_complete_else_watch(follower_fetch(), lookup_for(p))
    assert len(purgatory) == 0 and purgatory.watched(TP) == 0


def test_try_complete_answers_at_the_first_partition_that_fills_min_bytes() -> None:
    """tryComplete is true once min_bytes are readable: every later case would be true as well, so the
    partitions after the one that filled it are not looked up; below min_bytes every partition is."""
    ready, idle = leader(), leader()
    ready.append_records_to_leader(1, 100, 0, 1, 0)
    seen: list[object] = []

    def lookup(key):  # type: ignore[no-untyped-def]
        seen.append(key)
        return ready if key == ("topic", 1) else idle

    statuses = {("topic", p): FetchPartitionStatus(500, 1000, 10, None) for p in range(4)}
    assert DelayedFetch("req", 2, 1, 500, statuses).try_complete(lookup)
    assert seen == [("topic", 0), ("topic", 1)]
    seen.clear()
    assert not DelayedFetch("req", 2, 10**6, 500, statuses).try_complete(lookup)
    assert seen == [("topic", p) for p in range(4)]


def test_each_partition_counts_at_most_its_max_bytes_toward_min_bytes() -> None:
    """tryComplete case G adds `min(positionDiff, maxBytes)` per partition: two 80-byte batches behind a
    partition asked for at most 100 bytes count 100, short of 150; a second partition's 80 fill it."""
    a, b = leader(), leader()
    for p in (a, b):
        p.append_records_to_leader(1, 80, 0, 1, 0)
    a.append_records_to_leader(1, 80, 0, 1, 0)
    statuses = {("topic", 0): FetchPartitionStatus(500, 100, 10, None),
                ("topic", 1): FetchPartitionStatus(501, 100, 10, None)}
    parts = {("topic", 0): a, ("topic", 1): b}
    assert a.log.bytes_between(500, 502, 100) == 100 and a.log.bytes_between(500, 502) == 160
    assert not DelayedFetch("req", 2, 150, 500, {("topic", 0): statuses[("topic", 0)]}).try_complete(
        lookup_for(a))
    b.append_records_to_leader(1, 80, 0, 1, 0)
    assert DelayedFetch("req", 2, 150, 500, statuses).try_complete(parts.__getitem__)
