"""Leader-epoch arithmetic the checker needs, written independently of the engine (it is the oracle).

An epoch cache is a tuple of `(epoch, start_offset)` pairs, strictly increasing in both; every function
here is pure and returns a new tuple. The rules are those of `LeaderEpochFileCache` (reference §2.7) and
`AbstractFetcherThread.getOffsetTruncationState` (§3.5). The Spark audit must use the same rules.
"""

from __future__ import annotations

EpochCache = tuple[tuple[int, int], ...]
UNDEFINED = -1


def assign(cache: EpochCache, epoch: int, start: int) -> EpochCache:
    """`assign(epoch, startOffset)`: no-op when `epoch` is the latest and `start` is not before its start;
    otherwise drop tail entries with epoch >= `epoch` or start >= `start`, then append."""
    if cache and cache[-1][0] == epoch and start >= cache[-1][1]:
        return cache
    kept = list(cache)
    while kept and (kept[-1][0] >= epoch or kept[-1][1] >= start):
        kept.pop()
    kept.append((epoch, start))
    return tuple(kept)


def truncate_from_end(cache: EpochCache, end_offset: int) -> EpochCache:
    """`truncateFromEnd(endOffset)`: drop entries starting at or after `end_offset`."""
    return tuple(e for e in cache if e[1] < end_offset)


def truncate_from_start(cache: EpochCache, start_offset: int) -> EpochCache:
    """`truncateFromStart(startOffset)`: entries starting at or before the new start collapse into one
    entry (the last of them) starting at `start_offset`."""
    before = [e for e in cache if e[1] <= start_offset]
    if not before:
        return cache
    return ((before[-1][0], start_offset), *(e for e in cache if e[1] > start_offset))


def end_offset_for(cache: EpochCache, requested: int, leo: int) -> tuple[int, int]:
    """`endOffsetFor(requestedEpoch, LEO)` -> (epoch, end offset), (-1, -1) when undefined (§2.7)."""
    if requested == UNDEFINED or not cache:
        return UNDEFINED, UNDEFINED
    if cache[-1][0] == requested:
        return requested, leo
    higher = [e for e in cache if e[0] > requested]
    if not higher:
        return UNDEFINED, UNDEFINED
    floor = [e for e in cache if e[0] <= requested]
    if not floor:
        return requested, higher[0][1]
    return floor[-1][0], higher[0][1]


def truncation_offset(leader_epoch: int, leader_end: int, follower_leo: int, fetch_offset: int,
                      follower_cache: EpochCache) -> tuple[int, bool]:
    """`getOffsetTruncationState` (§3.5): (offset, truncation completed) from the leader's
    (epoch, end offset) answer, the follower's LEO, its current fetch offset and its epoch cache."""
    if leader_end == UNDEFINED:
        return fetch_offset, True  # rule 1: unknown offset -> the initial fetch offset
    if leader_epoch == UNDEFINED:
        return min(leader_end, follower_leo), True  # rule 2: v0 answer carries no epoch (KIP-101)
    f_epoch, f_end = end_offset_for(follower_cache, leader_epoch, follower_leo)
    if f_end == UNDEFINED:
        return min(leader_end, follower_leo), True  # rule 3c: leader's epoch below all of ours
    if f_epoch != leader_epoch:
        return min(f_end, follower_leo), False  # rule 3a: epoch unknown here, ask again
    return min(f_end, leader_end, follower_leo), True  # rule 3b (KIP-279)
