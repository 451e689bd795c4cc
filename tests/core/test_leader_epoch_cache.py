"""LeaderEpochCache: ports of LeaderEpochFileCacheTest (reference §7.4) plus hypothesis properties."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from replication_core.leader_epoch_cache import EpochEntry, LeaderEpochCache


def cache_of(*pairs: tuple[int, int]) -> LeaderEpochCache:
    c = LeaderEpochCache()
    for epoch, offset in pairs:
        c.assign(epoch, offset)
    return c


def test_end_offset_for_epoch_below_all_entries_returns_requested_epoch_and_first_start() -> None:
    """LeaderEpochFileCacheTest.shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch."""
    c = cache_of((5, 11), (6, 12), (7, 13))
    assert c.end_offset_for(4, 0) == (4, 11)


def test_assign_lower_start_offset_truncates_conflicting_entries() -> None:
    """LeaderEpochFileCacheTest.shouldTruncateIfMatchingEpochButEarlierStartingOffset."""
    c = cache_of((5, 11), (6, 12), (7, 13))
    c.assign(7, 12)
    assert c.entries == (EpochEntry(5, 11), EpochEntry(7, 12))
    assert c.end_offset_for(5, 0) == (5, 12)
    assert c.end_offset_for(6, 0) == (5, 12)


def test_end_offset_of_middle_epoch_is_start_of_next() -> None:
    """LeaderEpochFileCacheTest.shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested."""
    c = cache_of((1, 11), (2, 13), (3, 15))
    assert c.end_offset_for(2, 17) == (2, 15)


def test_end_offset_for_missing_epoch_uses_floor_entry() -> None:
    """LeaderEpochFileCacheTest.shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested and
    shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch."""
    c = cache_of((0, 10), (2, 13), (4, 17))
    assert c.end_offset_for(1, 20) == (0, 13)
    assert c.end_offset_for(2, 20) == (2, 17)
    assert c.end_offset_for(3, 20) == (2, 17)
    assert c.end_offset_for(4, 20) == (4, 20)


def test_epoch_above_latest_is_undefined() -> None:
    """LeaderEpochFileCacheTest.shouldReturnUnsupportedIfRequestedEpochIsGreaterThanLatest... (2,100) -> (3)."""
    c = cache_of((2, 100))
    assert c.end_offset_for(3, 200) == (-1, -1)


def test_new_epoch_at_same_offset_replaces_old() -> None:
    """LeaderEpochFileCacheTest.shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned variant:
    (2,9) then (3,9) keeps only (3,9)."""
    c = cache_of((2, 9), (3, 9))
    assert c.entries == (EpochEntry(3, 9),)


def test_same_epoch_later_offset_is_noop() -> None:
    """LeaderEpochFileCacheTest.shouldNotUpdateEpochAndStartOffsetIfItDidNotChange: (2,11),(2,12), LEO 14."""
    c = cache_of((2, 11))
    assert c.assign(2, 12) is False
    assert c.entries == (EpochEntry(2, 11),)
    assert c.end_offset_for(2, 14) == (2, 14)


def test_undefined_and_empty() -> None:
    """LeaderEpochFileCacheTest.shouldReturnUnsupportedIfNoEpochRecorded / ...UndefinedEpochRequested."""
    assert LeaderEpochCache().end_offset_for(0, 5) == (-1, -1)
    assert cache_of((1, 0)).end_offset_for(-1, 5) == (-1, -1)
    assert LeaderEpochCache().latest_epoch is None


def test_truncate_from_end_and_start() -> None:
    """LeaderEpochFileCacheTest.shouldTruncateFromEnd / shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest."""
    c = cache_of((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(9)
    assert c.entries == (EpochEntry(2, 6), EpochEntry(3, 8))
    c = cache_of((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(9)
    assert c.entries == (EpochEntry(3, 9), EpochEntry(4, 11))
    c.truncate_from_start(2)  # before the first entry: nothing to do
    assert c.entries == (EpochEntry(3, 9), EpochEntry(4, 11))
    c.clear()
    assert c.entries == ()


def test_epoch_for_offset_and_previous_epoch() -> None:
    """LeaderEpochFileCacheTest.testPreviousEpoch / epochForOffset."""
    c = cache_of((2, 6), (3, 8), (4, 11))
    assert c.previous_epoch(4) == 3
    assert c.previous_epoch(2) is None
    assert c.epoch_for_offset(9) == 3
    assert c.epoch_for_offset(5) is None


ops = st.lists(
    st.one_of(
        st.tuples(st.just("assign"), st.integers(0, 20), st.integers(0, 100)),
        st.tuples(st.just("end"), st.integers(0, 100), st.just(0)),
        st.tuples(st.just("start"), st.integers(0, 100), st.just(0)),
    ),
    max_size=40,
)


@given(ops)
def test_entries_strictly_increasing_after_any_operations(seq: list[tuple[str, int, int]]) -> None:
    """Property: epochs and start offsets stay strictly increasing whatever is assigned or truncated."""
    c = LeaderEpochCache()
    for op, a, b in seq:
        if op == "assign":
            c.assign(a, b)
        elif op == "end":
            c.truncate_from_end(a)
        else:
            c.truncate_from_start(a)
        es = c.entries
        assert all(x.epoch < y.epoch and x.start_offset < y.start_offset for x, y in itertools.pairwise(es))
        assert c.latest_epoch == (es[-1].epoch if es else None)
