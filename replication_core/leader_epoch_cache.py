"""The leader epoch cache: which leader epoch started at which offset in one replica's log.

Mirrors `org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache` (reference §2.7) without the
checkpoint file: entries are `(epoch, start_offset)` kept strictly increasing in both fields. The leader
assigns an entry for its own epoch at `makeLeader` (even with no records, KAFKA-7415); followers get entries
from the batches they append; truncations trim it from either end.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import NamedTuple

UNDEFINED_EPOCH = -1
"""`RecordBatch.NO_PARTITION_LEADER_EPOCH` / `UNDEFINED_EPOCH`."""
UNDEFINED_EPOCH_OFFSET = -1
"""`EpochEndOffset.UNDEFINED_EPOCH_OFFSET`."""


class EpochEntry(NamedTuple):
    """`EpochEntry(epoch, startOffset)`: the first offset written under a leader epoch."""

    epoch: int
    start_offset: int


class LeaderEpochCache:
    """`LeaderEpochFileCache` in memory: assign, end-offset lookup, truncation from either end."""

    __slots__ = ("_entries", "_epochs")

    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self._entries: list[EpochEntry] = []
        # Parallel list of epochs for bisect; kept in lock-step with `_entries`.
        self._epochs: list[int] = []
        for e in entries or ():
            self.assign(e.epoch, e.start_offset)

    # --- queries -----------------------------------------------------------------------------------

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        """All entries, oldest first (`LeaderEpochFileCache.epochEntries`)."""
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        """The newest epoch, or None when empty (`latestEpoch`)."""
        return self._epochs[-1] if self._epochs else None

    @property
    def latest_entry(self) -> EpochEntry | None:
        """The newest entry, or None when empty (`latestEntry`)."""
        return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        """The oldest entry, or None when empty (`earliestEntry`)."""
        return self._entries[0] if self._entries else None

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"LeaderEpochCache({[tuple(e) for e in self._entries]})"

    def epoch_for_offset(self, offset: int) -> int | None:
        """Epoch of the entry covering `offset` (`epochForOffset`); None if before the first entry."""
        best: int | None = None
        for e in self._entries:
            if e.start_offset <= offset:
                best = e.epoch
            else:
                break
        return best

    def previous_epoch(self, epoch: int) -> int | None:
        """The largest cached epoch strictly below `epoch` (`previousEpoch`)."""
        i = bisect_left(self._epochs, epoch)
        return self._epochs[i - 1] if i > 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """`endOffsetFor(requestedEpoch, logEndOffset)` -> (epoch, end offset), reference §2.7.

        * requested == -1 -> (-1, -1); requested == latest epoch -> (requested, LEO);
        * no entry with a larger epoch -> (-1, -1);
        * no entry with epoch <= requested -> (requested, start of the first larger entry);
        * else (floor entry's epoch, start of the first larger entry).
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        epochs = self._epochs
        if epochs and epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        hi = bisect_right(epochs, requested_epoch)
        if hi == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher = self._entries[hi]
        if hi == 0:
            return requested_epoch, higher.start_offset
        return epochs[hi - 1], higher.start_offset

    # --- mutations ---------------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """`assign(epoch, startOffset)`; returns True if the cache changed.

        No-op if `epoch` is the latest epoch and `start_offset` is not before its start; otherwise removes,
        from the tail, every entry with `epoch >= new.epoch or start_offset >= new.start_offset`, then appends.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset}): both must be >= 0")
        entries = self._entries
        if entries:
            last = entries[-1]
            if last.epoch == epoch and start_offset >= last.start_offset:
                return False
            while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
                entries.pop()
                self._epochs.pop()
        entries.append(EpochEntry(epoch, start_offset))
        self._epochs.append(epoch)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """`truncateFromEnd(endOffset)`: drop entries starting at or after `end_offset`."""
        entries = self._entries
        while entries and entries[-1].start_offset >= end_offset:
            entries.pop()
            self._epochs.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """`truncateFromStart(startOffset)`: drop entries starting at or before `start_offset` and re-insert
        the last dropped epoch at `start_offset` (the new log start)."""
        entries = self._entries
        removed: EpochEntry | None = None
        n = 0
        while n < len(entries) and entries[n].start_offset <= start_offset:
            removed = entries[n]
            n += 1
        if removed is None:
            return
        del entries[:n]
        del self._epochs[:n]
        entries.insert(0, EpochEntry(removed.epoch, start_offset))
        self._epochs.insert(0, removed.epoch)

    def clear(self) -> None:
        """`clearAndFlush`: remove every entry (used by `truncateFullyAndStartAt`)."""
        self._entries.clear()
        self._epochs.clear()

    def copy(self) -> LeaderEpochCache:
        """An independent copy (for snapshots in the simulator and tests)."""
        c = LeaderEpochCache()
        c._entries = list(self._entries)
        c._epochs = list(self._epochs)
        return c
