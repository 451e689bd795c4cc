"""Log (UnifiedLog): appends, reads, HW, log start offset, truncation, durability, events."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replication_core.errors import (
    IllegalArgumentError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from replication_core.event_log import EventLog
from replication_core.leader_epoch_cache import EpochEntry
from replication_core.log import FetchIsolation, Log, RecordBatch


def seeded(n: int, epoch: int = 0, size: int = 10) -> Log:
    """`seedLogData(log, n, epoch)`: n single-record batches."""
    log = Log()
    for i in range(n):
        log.append_as_leader(1, size, 1000 + i, epoch)
    return log


def batch(base: int, count: int, epoch: int, size: int = 10) -> RecordBatch:
    return RecordBatch(base, base + count - 1, epoch, count, size, base * 7 + 1)


def test_append_as_leader_assigns_offsets_and_epoch_cache() -> None:
    """UnifiedLog.appendAsLeader assigns offsets from the LEO and one cache entry per new epoch."""
    log = Log()
    b1 = log.append_as_leader(2, 100, 1, leader_epoch=0)
    b2 = log.append_as_leader(3, 100, 2, leader_epoch=3)
    assert (b1.base_offset, b1.last_offset, b2.base_offset, b2.last_offset) == (0, 1, 2, 4)
    assert log.log_end_offset == 5
    assert log.epoch_cache.entries == (EpochEntry(0, 0), EpochEntry(3, 2))
    assert log.high_watermark == 0


def test_append_as_follower_offset_rules() -> None:
    """PartitionTest.testAppendRecordsAsFollowerBelowLogStartOffset (log part): LSO 5 empty log."""
    log = Log()
    log.truncate_fully_and_start_at(5)
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower([batch(3, 1, 1)])
    assert log.log_end_offset == 5
    log.append_as_follower([batch(4, 3, 1)])  # straddles the LSO: the empty log restarts at 4
    assert (log.log_start_offset, log.log_end_offset) == (4, 7)
    log.append_as_follower([batch(7, 1, 1)])
    assert log.log_end_offset == 8
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower([batch(3, 2, 1)])
    assert log.log_end_offset == 8
    log.append_as_follower([batch(8, 1, 1)])
    assert (log.log_start_offset, log.log_end_offset) == (4, 9)


def test_truncation_inside_a_batch_drops_it_whole_and_sets_the_leo_to_the_target() -> None:
    """LocalLog.truncateTo: `LogSegment.truncateTo(t)` cuts at the batch holding t, `updateLogEndOffset(t)` sets
    the LEO to t: [2, 4) holds no record. A read there starts at the next batch (LogSegment.read), a follower
    append may start above the LEO (appendAsFollower refuses only one below it), and a restart reads the LEO
    off the last batch (LogLoader)."""
    log = Log()
    log.append_as_follower([batch(0, 2, 0), batch(2, 5, 0)])  # offsets 0-1, 2-6
    assert log.truncate_to(4) is True
    assert ([(b.base_offset, b.last_offset) for b in log.batches], log.log_end_offset) == ([(0, 1)], 4)
    assert log.batch_containing(2) is None
    log.append_as_follower([batch(4, 3, 1)])  # 4-6 after the gap
    assert log.log_end_offset == 7
    assert [b.base_offset for b in log.read(2, 1000).batches] == [4]
    assert log.bytes_between(2, 7) == 10
    gapped = Log()
    gapped.append_as_follower([batch(0, 2, 0), batch(2, 5, 0)])
    gapped.flush()
    gapped.truncate_to(4)
    assert gapped.recover_to_flushed() == 2
    assert gapped.log_end_offset == 2


def test_read_bounds_isolation_and_min_one_message() -> None:
    """UnifiedLog.read: first batch even if larger than max bytes (KIP-74); HW isolation for consumers."""
    log = Log()
    for i in range(5):
        log.append_as_leader(2, 100, i, 0)  # offsets 0-9
    log.maybe_increment_high_watermark(4)
    assert [b.base_offset for b in log.read(0, 50).batches] == [0]
    assert [b.base_offset for b in log.read(0, 250).batches] == [0, 2]
    assert log.read(0, 50, min_one_message=False).batches == ()
    assert [b.base_offset for b in log.read(3, 10_000).batches] == [2, 4, 6, 8]
    assert [b.base_offset for b in log.read(0, 10_000, FetchIsolation.HIGH_WATERMARK).batches] == [0, 2]
    assert log.read(10, 100).batches == ()
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100)


def test_read_is_a_byte_range_that_may_end_inside_a_batch() -> None:
    """LogSegment.read: `min(maxPosition - start, adjustedMaxSize)` bytes from the first batch; a range ending
    inside a batch counts its bytes but returns only the whole batches before it."""
    log = Log()
    for i in range(5):
        log.append_as_leader(2, 100, i, 0)  # offsets 0-9, batches of 100 bytes
    log.maybe_increment_high_watermark(4)
    two_and_a_half = log.read(0, 250)
    assert [b.base_offset for b in two_and_a_half.batches] == [0, 2]
    assert (two_and_a_half.size_bytes, two_and_a_half.partial_bytes, two_and_a_half.record_count) == (250, 50, 4)
    # KIP-74: the first batch is read whole when larger than max bytes; nothing of the next.
    assert log.read(0, 50)[1:] == (log.batches[:1], 100, 0)
    # Without min one message a range shorter than the first batch returns its bytes and no batch (the
    # ReplicaManager then answers an empty set: `firstEntryIncomplete`).
    assert log.read(2, 50, min_one_message=False)[1:] == ((), 50, 50)
    assert log.read(2, 0, min_one_message=False)[1:] == ((), 0, 0)
    # The range ends at the isolation's end offset: no cut batch past the HW, nor past the LEO.
    assert log.read(0, 10_000, FetchIsolation.HIGH_WATERMARK)[1:] == (log.batches[:2], 200, 0)
    assert log.read(6, 10_000)[1:] == (log.batches[3:], 200, 0)
    with pytest.raises(IllegalArgumentError, match="Invalid max size -1"):
        log.read(0, -1)


def test_high_watermark_rules() -> None:
    """maybeIncrementHighWatermark only forward and never past the LEO; updateHighWatermark clamps."""
    log = seeded(5)
    assert log.maybe_increment_high_watermark(3) == 0
    assert log.maybe_increment_high_watermark(2) is None
    assert log.high_watermark == 3
    with pytest.raises(IllegalArgumentError):
        log.maybe_increment_high_watermark(6)
    assert log.update_high_watermark(100) == 5
    assert log.update_high_watermark(1) == 1  # follower HW may move back


def test_truncate_to_clamps_hw_and_trims_epoch_cache() -> None:
    """UnifiedLog.truncateTo: HW clamps down, epoch cache truncated from the end; no-op past the LEO."""
    log = Log()
    log.append_as_leader(2, 10, 1, 0)
    log.append_as_leader(2, 10, 2, 2)
    log.append_as_leader(2, 10, 3, 4)
    log.maybe_increment_high_watermark(5)
    assert log.truncate_to(6) is False
    assert log.truncate_to(4) is True
    assert (log.log_end_offset, log.high_watermark) == (4, 4)
    assert log.epoch_cache.entries == (EpochEntry(0, 0), EpochEntry(2, 2))
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(2) == (2, 4)
    assert log.end_offset_for_epoch(7) is None


def test_log_start_offset_increment() -> None:
    """maybeIncrementLogStartOffset: only forward, not past the HW; epoch cache truncated from the start."""
    log = Log()
    log.append_as_leader(3, 10, 1, 1)
    log.append_as_leader(3, 10, 2, 2)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(4)
    log.maybe_increment_high_watermark(6)
    assert log.maybe_increment_log_start_offset(4)
    assert not log.maybe_increment_log_start_offset(2)
    assert log.log_start_offset == 4
    assert log.epoch_cache.entries == (EpochEntry(2, 4),)
    assert [b.base_offset for b in log.batches] == [3]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)


def test_flush_and_recover_loses_unflushed_batches() -> None:
    """An unclean restart loses data after the recovery point; HW comes from the checkpoint, clamped."""
    log = seeded(3)
    log.flush()
    log.append_as_leader(1, 10, 9, 1)
    log.maybe_increment_high_watermark(4)
    assert log.recover_to_flushed(high_watermark_checkpoint=4) == 1
    assert (log.log_end_offset, log.high_watermark, log.latest_epoch) == (3, 3, 0)


def test_events_emitted_with_role() -> None:
    """append / hw_change / truncation events carry the schema's required payload."""
    events = EventLog()
    log = Log("tp", 3, 101, events=events)
    log.leader_epoch = 2
    log.append_as_leader(2, 10, 1, 2, now_ms=5)
    log.maybe_increment_high_watermark(2, now_ms=6)
    log.truncate_to(1, now_ms=7, reason="diverging_epoch")
    kinds = [(e["event_type"], e.get("role")) for e in events]
    assert kinds == [("append", "leader"), ("hw_change", "leader"), ("truncation", "follower"),
                     ("hw_change", "follower")]
    assert events[2]["hw"] == 2 and events[2]["truncate_offset"] == 1  # the target, inside the batch (0, 1)
    assert all(e["leader_epoch"] == 2 and e["partition"] == 3 for e in events)


def test_a_log_start_offset_change_records_what_moved_it() -> None:
    """The event of each log start move names its cause: maybeIncrementLogStartOffset's reason (retention, the
    leader's log start, DeleteRecords), or a truncation below the log start (truncateTo / truncateFullyAndStartAt,
    which Kafka does without that method)."""
    events = EventLog()
    log = Log("tp", 3, 101, events=events)
    for epoch in (1, 1, 2):
        log.append_as_leader(2, 10, 1, epoch)
    log.maybe_increment_high_watermark(6)
    log.maybe_increment_log_start_offset(2, 1, role="leader", reason="segment_deletion")
    log.maybe_increment_log_start_offset(3)  # a follower taking its leader's, the default
    log.maybe_increment_log_start_offset(4, 2, role="leader", reason="client_record_deletion")
    log.truncate_to(1, 3)  # below the log start 4
    log.truncate_fully_and_start_at(10, 4)
    moves = [(e["old_log_start_offset"], e["log_start_offset"], e["reason"]) for e in events
             if e["event_type"] == "log_start_offset_change"]
    assert moves == [(0, 2, "segment_deletion"), (2, 3, "leader_offset_increment"), (3, 4, "client_record_deletion"),
                     (4, 1, "truncation"), (1, 10, "truncation")]


log_ops = st.lists(
    st.one_of(
        st.tuples(st.just("lead"), st.integers(1, 4), st.integers(0, 6)),
        st.tuples(st.just("follow"), st.integers(1, 4), st.integers(0, 6)),
        st.tuples(st.just("trunc"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("hw"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("fhw"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("lso"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("full"), st.integers(0, 40), st.just(0)),
    ),
    max_size=40,
)


@given(log_ops)
def test_log_invariants_after_any_sequence(seq: list[tuple[str, int, int]]) -> None:
    """Property: offsets contiguous but for the gaps truncations inside a batch leave, LSO <= HW <= LEO, epoch
    cache strictly increasing and within the log."""
    log = Log()
    epoch = 0
    cuts: set[tuple[int, int]] = set()  # (base of a batch a truncation cut, its target): the gaps allowed
    for op, a, b in seq:
        if op == "lead":
            epoch = max(epoch, b)
            log.append_as_leader(a, 10, 0, epoch)
        elif op == "follow":
            epoch = max(epoch, b)
            leo = log.log_end_offset
            log.append_as_follower([RecordBatch(leo, leo + a - 1, epoch, a, 10, 0)])
        elif op == "trunc":
            held = log.batch_containing(a)
            if held is not None and held.base_offset < a < log.log_end_offset:
                cuts.add((held.base_offset, a))
            log.truncate_to(a)
        elif op == "hw":
            if a <= log.log_end_offset:
                log.maybe_increment_high_watermark(a)
        elif op == "fhw":
            log.update_high_watermark(a)
        elif op == "lso":
            if a <= log.high_watermark:
                log.maybe_increment_log_start_offset(a)
        else:
            log.truncate_fully_and_start_at(a)
        bs = log.batches
        assert all(x.next_offset == y.base_offset or (x.next_offset, y.base_offset) in cuts
                   for x, y in itertools.pairwise(bs))
        if bs:
            assert bs[-1].next_offset == log.log_end_offset or (bs[-1].next_offset, log.log_end_offset) in cuts
            assert bs[0].base_offset <= log.log_start_offset <= bs[0].last_offset or (
                bs[0].base_offset >= log.log_start_offset)
        assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
        es = log.epoch_cache.entries
        assert all(x.epoch < y.epoch and x.start_offset < y.start_offset for x, y in itertools.pairwise(es))
        assert all(e.start_offset < log.log_end_offset or e == es[-1] for e in es)


# --- segments ------------------------------------------------------------------------------------------

def segmented(sizes: list[int], segment_bytes: int) -> Log:
    """A leader log of one-record batches of the given sizes, epoch 0, with `segment.bytes` = `segment_bytes`."""
    log = Log(segment_bytes=segment_bytes)
    for i, size in enumerate(sizes):
        log.append_as_leader(1, size, 1000 + i, 0)
    return log


def test_an_append_rolls_a_segment_when_it_would_not_fit() -> None:
    """`LogSegment.shouldRoll`: `size > segment.bytes - messagesSize`, so a segment may fill exactly; the new segment
    starts at the LEO (`LocalLog.roll`)."""
    log = segmented([100, 100, 50, 100, 250], 250)
    assert log.segments == ((0, 250), (3, 100), (4, 250))
    assert log.size_bytes == 600
    with pytest.raises(RecordBatchTooLargeError, match="exceeds the maximum configured segment size of 250"):
        log.append_as_leader(1, 251, 9, 0)
    assert log.log_end_offset == 5 and log.segments[-1] == (4, 250)


def test_a_follower_appends_its_fetched_set_to_one_segment() -> None:
    """`appendAsFollower`: one roll check for the whole set (`maybeRoll(validBytes)`), so a set that does not fit
    the active segment goes whole into a new one starting at its first offset; a set larger than a segment is
    refused (`RecordBatchTooLargeException`) and nothing is appended."""
    log = Log(segment_bytes=300)
    log.append_as_follower([batch(0, 1, 1, 100)])
    log.append_as_follower([batch(1, 1, 1, 100), batch(2, 2, 1, 100)])
    assert log.segments == ((0, 300),)
    log.append_as_follower([batch(4, 1, 1, 100), batch(5, 1, 1, 100)])
    assert log.segments == ((0, 300), (4, 200))
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_follower([batch(6, 1, 1, 200), batch(7, 1, 1, 200)])
    assert log.log_end_offset == 6 and log.segments == ((0, 300), (4, 200))


def test_a_read_ends_at_its_segments_end() -> None:
    """`LocalLog.read` reads one segment: the first whose batches reach the fetch offset, up to its end, however
    many bytes were asked for; `segment_base_offset` names the segment a read position is in."""
    log = segmented([100] * 5, 200)  # segments [0, 1] [2, 3] [4]
    assert [b.base_offset for b in log.read(0, 10_000).batches] == [0, 1]
    assert log.read(1, 10_000)[1:] == (log.batches[1:2], 100, 0)
    assert [b.base_offset for b in log.read(2, 10_000).batches] == [2, 3]
    assert [b.base_offset for b in log.read(4, 10_000).batches] == [4]
    assert [log.segment_base_offset(o) for o in range(6)] == [0, 0, 2, 2, 4, 4]


def test_retention_deletes_whole_segments_below_the_hw_while_retention_bytes_remain() -> None:
    """`deleteRetentionSizeBreachedSegments` through `deletableSegments`: the oldest segments go while at least
    `retention.bytes` would remain and only where they end at or below the HW; the log start offset moves to the
    first remaining segment's base (`SegmentDeletion`)."""
    events = EventLog()
    log = Log(events=events, segment_bytes=200)
    for i in range(9):
        log.append_as_leader(1, 100, i, 0)  # segments [0, 1] [2, 3] [4, 5] [6, 7] [8]
    log.maybe_increment_high_watermark(3)
    assert log.delete_old_segments(retention_bytes=450, now_ms=5) == 1  # [2, 3] ends at 4 > HW 3
    assert (log.log_start_offset, log.segments[0], log.size_bytes) == (2, (2, 200), 700)
    log.maybe_increment_high_watermark(9)
    assert log.delete_old_segments(retention_bytes=450, now_ms=6) == 1  # 700 - 200 = 500 >= 450; 300 < 450
    assert (log.log_start_offset, log.size_bytes) == (4, 500)
    assert log.delete_old_segments(retention_bytes=450) == 0
    assert log.delete_old_segments(retention_bytes=None) == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    moves = [e for e in events if e["event_type"] == "log_start_offset_change"]
    assert [(e["ts_ms"], e["old_log_start_offset"], e["log_start_offset"], e["reason"]) for e in moves] == [
        (5, 0, 2, "segment_deletion"), (6, 2, 4, "segment_deletion")]


def test_deleting_every_segment_rolls_a_new_one_at_the_leo() -> None:
    """`deleteSegments`: when retention takes every segment (the HW at the LEO), a new empty segment is rolled at
    the LEO first, and the log starts there; an empty active segment is never deleted."""
    log = segmented([100] * 3, 200)  # [0, 1] [2]
    log.maybe_increment_high_watermark(3)
    assert log.delete_old_segments(retention_bytes=0) == 2
    assert (log.segments, log.log_start_offset, log.log_end_offset, log.batches) == (((3, 0),), 3, 3, ())
    assert log.delete_old_segments(retention_bytes=0) == 0
    log.append_as_leader(1, 100, 9, 0)
    assert log.segments == ((3, 100),)


def test_a_raised_log_start_offset_deletes_nothing_until_retention_runs() -> None:
    """`maybeIncrementLogStartOffset` only moves the start (a follower taking its leader's): the segments below it
    stay, counted in the log's size, until `deleteLogStartOffsetBreachedSegments` deletes those that end at or
    below it; the batches below the start are not readable meanwhile."""
    log = segmented([100] * 5, 200)  # [0, 1] [2, 3] [4]
    log.maybe_increment_high_watermark(5)
    assert log.maybe_increment_log_start_offset(3)
    assert (log.size_bytes, len(log.segments)) == (500, 3)
    assert [b.base_offset for b in log.batches] == [3, 4]
    assert log.delete_old_segments() == 1  # [2, 3] ends at 4 > 3: it stays
    assert (log.segments, log.log_start_offset, log.size_bytes) == (((2, 200), (4, 100)), 3, 300)


def test_truncation_deletes_the_segments_above_the_target_and_cuts_the_one_holding_it() -> None:
    """`LocalLog.truncateTo`: segments starting above the target go, the one holding it is cut at the batch
    boundary (a segment starting at the target stays, empty); below the first segment's base the log is
    truncated fully (`truncateFullyAndStartAt`)."""
    log = segmented([100] * 6, 200)  # [0, 1] [2, 3] [4, 5]
    assert log.truncate_to(3)
    assert log.segments == ((0, 200), (2, 100))
    assert log.truncate_to(2)
    assert log.segments == ((0, 200), (2, 0))
    log.append_as_leader(1, 100, 9, 0)
    assert log.segments == ((0, 200), (2, 100))
    log.maybe_increment_high_watermark(3)
    log.delete_old_segments(retention_bytes=100)
    assert (log.segments, log.log_start_offset) == (((2, 100),), 2)
    assert log.truncate_to(1)
    assert (log.segments, log.log_start_offset, log.log_end_offset) == (((1, 0),), 1, 1)


def test_recovery_keeps_segment_boundaries_and_drops_the_unflushed_segments() -> None:
    """`LogLoader` recovery: the segments below the recovery point keep their boundaries; the one holding it is
    cut, and the later unflushed ones are deleted."""
    log = segmented([100] * 6, 200)  # [0, 1] [2, 3] [4, 5]
    log.flush(3)
    assert log.recover_to_flushed() == 3
    assert (log.segments, log.log_end_offset) == (((0, 200), (2, 100)), 3)
    log.flush(3)
    log.append_as_leader(1, 100, 9, 0)
    log.append_as_leader(1, 100, 10, 0)
    assert log.segments == ((0, 200), (2, 200), (4, 100))
    assert log.recover_to_flushed() == 2
    assert log.segments == ((0, 200), (2, 100))


def test_recovery_below_the_log_start_restarts_the_log_empty_there() -> None:
    """`LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd`: when no record at or above the log start survives a
    crash, every segment goes and the log restarts empty at its log start offset, its epoch cache cleared."""
    log = Log(segment_bytes=10)
    log.append_as_leader(5, 6, 1, 0)
    log.append_as_leader(5, 6, 2, 0)  # rolls at 5
    log.maybe_increment_high_watermark(10)
    log.maybe_increment_log_start_offset(7)  # the recovery point follows it to 7, inside the second batch
    assert log.recover_to_flushed(10) == 3
    assert (log.segments, log.log_start_offset, log.log_end_offset, log.high_watermark) == (((7, 0),), 7, 7, 7)
    assert (log.batches, log.size_bytes, log.epoch_cache.entries) == ((), 0, ())


def test_a_restart_loads_its_log_start_offset_from_the_checkpoint_or_its_first_segment() -> None:
    """`LogLoader.load`: the start is max(log-start-offset-checkpoint, first segment's base). A start raised since the
    checkpoint (a follower following its leader's) deleted nothing, so it steps back and those records are readable
    again; the epoch cache keeps the start `truncateFromStart` gave its first entry (the loader trims it only to the
    checkpoint)."""
    log = Log(segment_bytes=200)
    for i in range(6):  # segments [0, 1] [2, 3] [4, 5]
        log.append_as_leader(1, 100, 1000 + i, leader_epoch=i // 2)
    log.maybe_increment_high_watermark(6)
    log.maybe_increment_log_start_offset(5)
    assert [b.base_offset for b in log.batches] == [5]
    log.flush()  # a process crash: the page cache survives
    assert log.recover_to_flushed(6, log_start_checkpoint=0) == 0
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 6, 6)
    assert [b.base_offset for b in log.batches] == [0, 1, 2, 3, 4, 5]
    assert log.epoch_cache.entries == (EpochEntry(2, 5),)
    # A checkpoint above the first segment's base wins; after retention deleted segments, their base does.
    log.maybe_increment_log_start_offset(5)
    assert log.recover_to_flushed(6, log_start_checkpoint=3) == 0
    assert log.log_start_offset == 3
    log.maybe_increment_log_start_offset(5)
    log.delete_old_segments()
    assert log.first_segment_base == 4
    assert log.recover_to_flushed(6, log_start_checkpoint=3) == 0
    assert (log.log_start_offset, [b.base_offset for b in log.batches]) == (4, [4, 5])


def test_a_restart_whose_recovered_log_ends_below_the_checkpointed_start_restarts_empty_there() -> None:
    """`deleteSegmentsIfLogStartGreaterThanLogEnd` reads the checkpoint: a log truncated fully to a lower offset after
    its start was checkpointed comes back empty at the checkpointed start (`truncateFullyAndStartAt` writes no log
    start checkpoint)."""
    log = seeded(4)
    log.maybe_increment_high_watermark(4)
    log.truncate_fully_and_start_at(2)
    assert log.recover_to_flushed(2, log_start_checkpoint=3) == 0
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark, log.segments) == (3, 3, 3, ((3, 0),))
