"""One replica's log: record batches, log end offset, high watermark, log start offset, epoch cache.

Mirrors `kafka.log.UnifiedLog` (reference §2.7, §3) as a sans-I/O in-memory structure. A batch carries
identity, not payload: leader epoch, base/last offset, record count, size in bytes and a checksum.

Theory of operation
* Offsets are contiguous but for one gap Kafka allows: `truncateTo(t)` drops the batch holding `t` whole
  (`LogSegment.truncateTo` cuts at a batch boundary) yet sets the LEO to `t` (`LocalLog.truncateTo`), so a
  target inside a batch leaves no records in [its base, t). A read from inside a gap starts at the next batch
  (`LogSegment.read`), and a follower append may then start above the LEO (`appendAsFollower` rejects only
  a batch below it, raising `UnexpectedAppendOffsetError`; the fetcher checks that the fetch offset is the
  LEO, the `processPartitionData` sanity check). A restart recovers the LEO from the last batch
  (`LogLoader`), closing a gap at the end. Kafka's empty-log restart
  (`Partition.appendRecordsToFollowerOrFutureReplica`): an empty log whose LEO == LSO accepts a first batch
  that straddles the LSO by restarting at the batch's base offset.
* HW is kept in `[log_start_offset, log_end_offset]`: `maybe_increment_high_watermark` (leader) only moves
  forward and raises above the LEO; `update_high_watermark` (follower, load) clamps and may move back;
  truncation clamps it down.
* Segments (`LogSegments`): the batches lie in segments of at most `segment.bytes` (`log.segment.bytes`,
  1 GiB by default). An append rolls a new segment when it would not fit the active one (`maybeRoll`; a
  follower's whole fetched set is one append), a read never crosses a segment's end (`LocalLog.read`), and
  retention deletes whole segments (`deleteOldSegments`), only below the HW and only while at least
  `retention.bytes` remain; the log start offset then moves to the first remaining segment's base. Raising
  the log start offset alone deletes nothing: the batches below it stay in their segment, unreadable, until
  the next retention pass (`deleteLogStartOffsetBreachedSegments`).
* Durability: `flushed_offset` is the recovery point; `recover_to_flushed` models an unclean restart that
  loses everything after it (the simulator decides when to flush and when to crash).

Events: when constructed with an `EventLog` (`replication_core.event_log`), every state change adds one
schema event to it (`append`, `truncation`, `hw_change`, `log_start_offset_change`); with `events=None`
nothing is built, which keeps the hot path cheap. Mutating methods take `now_ms` for the event timestamp; `role`
says which side the replica plays (`leader` / `follower`). `leader_epoch` (set by the owning Partition)
fills the event envelope. The truncation event's `hw` is the HW *before* the truncation, so an audit can
tell a truncation below the HW from one above it (reference §3.4).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from enum import StrEnum
from typing import NamedTuple

from mypy_extensions import mypyc_attr

from replication_core.errors import (
    CorruptRecordError,
    IllegalArgumentError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from replication_core.event_log import EventLog
from replication_core.events import make_event
from replication_core.leader_epoch_cache import LeaderEpochCache

UNKNOWN_OFFSET = -1
"""`UnifiedLog.UnknownOffset`."""

DEFAULT_SEGMENT_BYTES = 1073741824
"""`log.segment.bytes` / `segment.bytes` default: 1 GiB."""

LEADER = "leader"
FOLLOWER = "follower"


class RecordBatch(NamedTuple):
    """A `RecordBatch` by identity: offsets, `partitionLeaderEpoch`, size and checksum (no payload).

    A NamedTuple rather than a frozen dataclass: batches are created on every append, and tuple
    construction is several times cheaper.
    """

    base_offset: int
    last_offset: int
    leader_epoch: int
    record_count: int
    size_bytes: int
    checksum: int

    @property
    def next_offset(self) -> int:
        """`nextOffset()`: the offset after the batch's last record."""
        return self.last_offset + 1


class FetchIsolation(StrEnum):
    """`org.apache.kafka.server.storage.log.FetchIsolation`: how far a read may go."""

    LOG_END = "log_end"
    """Followers: up to the log end offset."""
    HIGH_WATERMARK = "high_watermark"
    """Consumers with read_uncommitted: up to the HW."""
    TXN_COMMITTED = "txn_committed"
    """read_committed: up to the last stable offset, which equals the HW here (no transactions)."""


class LogAppendInfo(NamedTuple):
    """`LogAppendInfo` of an append: offsets, last batch epoch, records and valid bytes."""

    first_offset: int
    last_offset: int
    last_leader_epoch: int | None
    record_count: int
    valid_bytes: int


class FetchDataInfo(NamedTuple):
    """`FetchDataInfo` of a read: the whole batches in the byte range read, the range's size
    (`records.sizeInBytes()`) and how many of its bytes are the start of a batch the range cut."""

    fetch_offset: int
    batches: tuple[RecordBatch, ...]
    size_bytes: int
    partial_bytes: int = 0

    @property
    def record_count(self) -> int:
        """Records in the returned batches."""
        return sum(b.record_count for b in self.batches)


new_tuple = tuple.__new__
"""`new_tuple(SomeNamedTuple, values)` builds the same value as `SomeNamedTuple(*values)` without the
Python-level `__new__` NamedTuple generates (about half the cost). Used only on the per-append and
per-fetch paths, with every field given."""

EMPTY_APPEND = LogAppendInfo(UNKNOWN_OFFSET, UNKNOWN_OFFSET, None, 0, 0)
"""What `append_as_follower` returns for no batches (callers with nothing to append use it directly)."""


# Compiled with mypyc, a class that tests subclass in Python needs allow_interpreted_subclasses.
@mypyc_attr(allow_interpreted_subclasses=True)
class Log:
    """`UnifiedLog`: batches, LEO, HW, log start offset, leader epoch cache and a recovery point."""

    def __init__(
        self,
        topic: str = "t",
        partition: int = 0,
        broker_id: int = 0,
        *,
        log_start_offset: int = 0,
        events: EventLog | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        if segment_bytes < 1:
            raise IllegalArgumentError(f"segment.bytes must be at least 1, got {segment_bytes}")
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        self.events = events
        # Envelope leader epoch of emitted events; the owning Partition keeps it current.
        self.leader_epoch: int | None = None
        self.epoch_cache = LeaderEpochCache()
        self._batches: list[RecordBatch] = []
        # Base offsets of `_batches`, kept in lock-step: bisect on plain ints is much cheaper than
        # bisect with a key function on the hot read path.
        self._bases: list[int] = []
        self._segment_bytes = segment_bytes
        # The segments as two parallel lists, oldest first, the last one active: base offsets and sizes in
        # bytes. A batch lies in the last segment whose base offset is at or below its own.
        self._seg_bases: list[int] = [log_start_offset]
        self._seg_sizes: list[int] = [0]
        self._log_start_offset = log_start_offset
        self._leo = log_start_offset
        self._hw = log_start_offset
        self._flushed = log_start_offset

    # --- queries -----------------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        """`logEndOffset`: the next offset to be written (exclusive end)."""
        return self._leo

    @property
    def high_watermark(self) -> int:
        """`highWatermark` (exclusive)."""
        return self._hw

    @property
    def log_start_offset(self) -> int:
        """`logStartOffset`: the first offset a reader may fetch."""
        return self._log_start_offset

    @property
    def flushed_offset(self) -> int:
        """`recoveryPoint`: everything below it survives an unclean restart."""
        return self._flushed

    @property
    def batches(self) -> tuple[RecordBatch, ...]:
        """The readable batches, oldest first: those ending at or above the log start offset."""
        lso = self._log_start_offset
        batches = self._batches
        if not batches or batches[0].last_offset >= lso:
            return tuple(batches)
        return tuple(b for b in batches if b.last_offset >= lso)

    @property
    def segment_bytes(self) -> int:
        """`segment.bytes`: the size at which an append rolls a new segment."""
        return self._segment_bytes

    @property
    def segments(self) -> tuple[tuple[int, int], ...]:
        """(base offset, size in bytes) of every segment, oldest first; the last is the active one."""
        return tuple(zip(self._seg_bases, self._seg_sizes, strict=True))

    @property
    def first_segment_base(self) -> int:
        """The oldest segment's base offset (`logSegments.head.baseOffset`)."""
        return self._seg_bases[0]

    @property
    def size_bytes(self) -> int:
        """`UnifiedLog.size`: the bytes of all segments, batches below the log start offset included."""
        return sum(self._seg_sizes)

    def segment_base_offset(self, offset: int) -> int:
        """`LogOffsetMetadata.segmentBaseOffset` of the position a read at `offset` returns (`LocalLog.read`'s
        `fetchOffsetMetadata`): the segment holding the first batch ending at or after `offset`, or the active
        segment at or past the LEO (or past the last batch)."""
        seg_bases = self._seg_bases
        if offset >= self._leo:
            return seg_bases[-1]
        batches = self._batches
        i = self._first_batch_at(offset)
        if i >= len(batches):
            return seg_bases[-1]
        return seg_bases[bisect_right(seg_bases, batches[i].base_offset) - 1]

    def _first_batch_at(self, offset: int) -> int:
        """Index of the first batch ending at or after `offset` (`LogSegment.translateOffset`; an offset in a gap a
        truncation left finds the next batch), or the number of batches if there is none."""
        batches = self._batches
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        if batches[i].last_offset < offset:
            i += 1
        return i

    @property
    def latest_epoch(self) -> int | None:
        """`latestEpoch`: newest epoch in the epoch cache (None if empty)."""
        return self.epoch_cache.latest_epoch

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition} broker={self.broker_id} lso={self._log_start_offset} "
                f"hw={self._hw} leo={self._leo} batches={len(self._batches)})")

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        """`endOffsetForEpoch(epoch)` -> (epoch found, end offset), or None if the offset is undefined."""
        found_epoch, offset = self.epoch_cache.end_offset_for(epoch, self._leo)
        if offset == UNKNOWN_OFFSET:
            return None
        return found_epoch, offset

    def batch_containing(self, offset: int) -> RecordBatch | None:
        """The batch holding `offset`, or None (`LogSegment.translateOffset`)."""
        i = bisect_right(self._bases, offset) - 1
        if i >= 0:
            b = self._batches[i]
            if b.last_offset >= offset:
                return b
        return None

    def bytes_between(self, start_offset: int, end_offset: int, cap: int | None = None) -> int:
        """Bytes of the whole batches in [start_offset, end_offset) (`LogOffsetMetadata.positionDiff`),
        counted from the batch holding `start_offset`, at most `cap` (`DelayedFetch.tryComplete` takes
        `min(positionDiff, maxBytes)` per partition)."""
        if end_offset <= start_offset:
            return 0
        batches = self._batches
        i = self._first_batch_at(start_offset)
        total = 0
        n = len(batches)
        while i < n:
            b = batches[i]
            if b.last_offset >= end_offset:
                break
            total += b.size_bytes
            if cap is not None and total >= cap:
                return cap
            i += 1
        return total

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: FetchIsolation = FetchIsolation.LOG_END,
        min_one_message: bool = True,
    ) -> FetchDataInfo:
        """`UnifiedLog.read` / `LogSegment.read`: the byte range from the batch holding `fetch_offset`, at most
        `max_bytes` long (at least the first batch when `min_one_message`, KIP-74) and ending at the isolation's
        end offset (LEO or HW) or the end of that batch's segment, whichever comes first. The range may end
        inside a batch (`log.slice(startPosition, fetchSize)`): its bytes count in `size_bytes` and
        `partial_bytes`, but the batch is not returned, as a reader's batch iterator stops at an incomplete batch
        (a range with no whole batch is `firstEntryIncomplete`, which the ReplicaManager answers empty).
        Raises `OffsetOutOfRangeError` outside [LSO, LEO]."""
        leo = self._leo
        if fetch_offset == leo:  # caught-up follower: the common case, no search
            return FetchDataInfo(fetch_offset, (), 0)
        if fetch_offset < self._log_start_offset or fetch_offset > leo:
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {self.topic}-{self.partition}, "
                f"but we only have log segments in the range {self._log_start_offset} to {leo}.")
        if max_bytes < 0:
            raise IllegalArgumentError(f"Invalid max size {max_bytes} for log read from {self.topic}-{self.partition}")
        upper = leo if isolation is FetchIsolation.LOG_END else self._hw
        batches = self._batches
        i = self._first_batch_at(fetch_offset)
        n = len(batches)
        if i >= n:
            return new_tuple(FetchDataInfo, (fetch_offset, (), 0, 0))
        seg_bases = self._seg_bases
        if len(seg_bases) > 1:
            # `maxPosition` is at most the segment's size: a read ends where the next segment starts.
            k = bisect_right(seg_bases, batches[i].base_offset)
            if k < len(seg_bases) and seg_bases[k] < upper:
                upper = seg_bases[k]
        first_size = batches[i].size_bytes
        budget = max_bytes if not min_one_message or max_bytes >= first_size else first_size
        out: list[RecordBatch] = []
        size = 0
        partial = 0
        while i < n:
            b = batches[i]
            if b.last_offset >= upper:
                break  # `maxPosition`: the range ends where the isolation's end offset starts
            if size + b.size_bytes > budget:
                partial = budget - size
                break
            out.append(b)
            size += b.size_bytes
            i += 1
        return new_tuple(FetchDataInfo, (fetch_offset, tuple(out), size + partial, partial))

    # --- appends -----------------------------------------------------------------------------------

    def append_as_leader(
        self,
        record_count: int,
        size_bytes: int,
        checksum: int,
        leader_epoch: int,
        now_ms: int = 0,
    ) -> RecordBatch:
        """`appendAsLeader`: assign offsets from the LEO and stamp `leader_epoch`; returns the batch."""
        if record_count <= 0:
            raise CorruptRecordError(f"a batch needs at least one record, got {record_count}")
        base = self._leo
        batch = new_tuple(RecordBatch, (base, base + record_count - 1, leader_epoch, record_count, size_bytes,
                                        checksum))
        self._maybe_roll(base, size_bytes)
        self._append(batch, LEADER, now_ms)
        return batch

    def append_as_follower(self, batches: Sequence[RecordBatch], now_ms: int = 0) -> LogAppendInfo:
        """`appendAsFollower`: append batches carrying their own offsets and epochs (each assigns an
        epoch-cache entry). Empty input is a no-op. See the module docstring for the offset rules."""
        if not batches:
            return EMPTY_APPEND
        first = batches[0]
        expected = first.base_offset
        size = 0
        for b in batches:
            if b.base_offset != expected or b.last_offset < b.base_offset:
                raise CorruptRecordError(
                    f"Out of order offsets in batches for {self.topic}-{self.partition}: batch "
                    f"[{b.base_offset}, {b.last_offset}] where {expected} was expected")
            expected = b.last_offset + 1
            size += b.size_bytes
        leo = self._leo
        if first.base_offset < leo:
            if (not self._batches and leo == self._log_start_offset
                    and batches[-1].last_offset >= leo):
                # Partition.appendRecordsToFollowerOrFutureReplica: an empty log restarts at the batch.
                self.truncate_fully_and_start_at(first.base_offset, now_ms, reason="full", role=FOLLOWER)
            else:
                raise UnexpectedAppendOffsetError(
                    f"Unexpected offset in append to {self.topic}-{self.partition}. First offset "
                    f"{first.base_offset} is less than the next offset {leo}.",
                    first.base_offset, batches[-1].last_offset)
        # One roll check for the whole fetched set, which goes into one segment (`maybeRoll(validBytes)`).
        self._maybe_roll(first.base_offset, size)
        records = 0
        for b in batches:
            self._append(b, FOLLOWER, now_ms)
            records += b.record_count
        last = batches[-1]
        return new_tuple(LogAppendInfo, (first.base_offset, last.last_offset, last.leader_epoch, records, size))

    def _maybe_roll(self, first_offset: int, messages_size: int) -> None:
        """`UnifiedLog.maybeRoll` / `LogSegment.shouldRoll`, by size (`segment.ms` and full indexes are not
        modelled): roll when the active segment's size exceeds `segment.bytes - messages_size`. The new
        segment starts at `max(first_offset, LEO)` (`LocalLog.roll`); rolling an empty active segment at its
        own base offset replaces it with an identical one, so nothing changes. An append larger than a
        segment raises `RecordBatchTooLargeError`, as `UnifiedLog.append` does before it rolls."""
        if messages_size > self._segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {messages_size} bytes in append to partition {self.topic}-{self.partition}, "
                f"which exceeds the maximum configured segment size of {self._segment_bytes}.")
        sizes = self._seg_sizes
        if sizes[-1] > self._segment_bytes - messages_size:
            leo = self._leo
            new_base = first_offset if first_offset > leo else leo
            if new_base != self._seg_bases[-1]:
                self._seg_bases.append(new_base)
                sizes.append(0)

    def _append(self, batch: RecordBatch, role: str, now_ms: int) -> None:
        # One unpacking instead of a named-field lookup per use (every append, leader and follower).
        base, last, epoch, record_count, size_bytes, checksum = batch
        cache = self.epoch_cache
        # UnifiedLog.append: every v2 batch may open a new epoch (assign is a no-op within an epoch).
        if cache.latest_epoch != epoch:
            cache.assign(epoch, base)
        self._batches.append(batch)
        self._bases.append(base)
        self._seg_sizes[-1] += size_bytes
        self._leo = last + 1
        if self.events is not None:
            self.events.add_append(
                now_ms, self.broker_id, self.topic, self.partition, self.leader_epoch, role, base, last,
                record_count, size_bytes, epoch, checksum, last + 1)

    def maybe_assign_epoch_start_offset(self, epoch: int, start_offset: int) -> bool:
        """`maybeAssignEpochStartOffset`: cache entry for a new leader epoch even with no records."""
        return self.epoch_cache.assign(epoch, start_offset)

    # --- high watermark ------------------------------------------------------------------------------

    def maybe_increment_high_watermark(self, new_hw: int, now_ms: int = 0) -> int | None:
        """`maybeIncrementHighWatermark` (leader): move the HW forward only; returns the old HW if it
        moved, else None. Raises `IllegalArgumentError` if `new_hw` > LEO."""
        if new_hw > self._leo:
            raise IllegalArgumentError(
                f"High watermark {new_hw} update exceeds current log end offset {self._leo}")
        old = self._hw
        if new_hw <= old:
            return None
        self._set_hw(new_hw, LEADER, now_ms)
        return old

    def update_high_watermark(self, hw: int, now_ms: int = 0, role: str = FOLLOWER) -> int:
        """`updateHighWatermark` / `maybeUpdateHighWatermark`: set the HW clamped to [LSO, LEO]; may move
        back (followers after a leader change, logs at load). Returns the new HW."""
        if hw < self._log_start_offset:
            hw = self._log_start_offset
        elif hw > self._leo:
            hw = self._leo
        if hw != self._hw:
            self._set_hw(hw, role, now_ms)
        return hw

    def _set_hw(self, new_hw: int, role: str, now_ms: int) -> None:
        old = self._hw
        self._hw = new_hw
        if self.events is not None:
            self.events.add_hw_change(now_ms, self.broker_id, self.topic, self.partition,
                                      self.leader_epoch, role, old, new_hw)

    # --- log start offset --------------------------------------------------------------------------

    def maybe_increment_log_start_offset(
        self, new_log_start_offset: int, now_ms: int = 0, role: str = FOLLOWER,
        reason: str = "leader_offset_increment",
    ) -> bool:
        """`maybeIncrementLogStartOffset(offset, reason)`: only increases; raises
        `OffsetOutOfRangeError` above the HW; trims the epoch cache from the start and deletes nothing.
        `reason` mirrors `LogStartOffsetIncrementReason` (segment_deletion, leader_offset_increment,
        client_record_deletion, snapshot_generated): the event records it."""
        if new_log_start_offset > self._hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {new_log_start_offset} of partition "
                f"{self.topic}-{self.partition} since it is larger than the high watermark {self._hw} "
                f"({reason})")
        old = self._log_start_offset
        if new_log_start_offset <= old:
            return False
        self._log_start_offset = new_log_start_offset
        # Nothing is deleted here: the segments below the new start go in the next retention pass
        # (`delete_old_segments`), and reads refuse offsets below it meanwhile.
        self.epoch_cache.truncate_from_start(new_log_start_offset)
        if self._flushed < new_log_start_offset:
            self._flushed = new_log_start_offset
        if self.events is not None:
            self.events.append(make_event(
                "log_start_offset_change", now_ms, self.broker_id, self.topic, self.partition,
                self.leader_epoch, role=role, old_log_start_offset=old,
                log_start_offset=new_log_start_offset, reason=reason))
        return True

    # --- retention ---------------------------------------------------------------------------------

    def delete_old_segments(self, retention_bytes: int | None = None, now_ms: int = 0, role: str = FOLLOWER) -> int:
        """`UnifiedLog.deleteOldSegments` (`cleanup.policy=delete`; `retention.ms` is not modelled): first the
        segments wholly below the log start offset (`deleteLogStartOffsetBreachedSegments`), then, with
        `retention_bytes` (`retention.bytes`, None = -1), the oldest segments while at least that many bytes
        would remain (`deleteRetentionSizeBreachedSegments`). Either only below the HW (`deletableSegments`).
        Returns the number of segments deleted."""
        deleted = self._delete_segments(self._log_start_breached(), now_ms, role)
        if retention_bytes is not None:
            deleted += self._delete_segments(self._retention_size_breached(retention_bytes), now_ms, role)
        return deleted

    def _deletable(self, k: int) -> bool:
        """`deletableSegments`' bounds for segment `k`: its end (the next segment's base, or the LEO for the last)
        at or below the HW, and not an empty last segment."""
        seg_bases = self._seg_bases
        last = k + 1 == len(seg_bases)
        if last and self._seg_sizes[k] == 0:
            return False
        return self._hw >= (self._leo if last else seg_bases[k + 1])

    def _log_start_breached(self) -> int:
        """How many of the oldest segments end at or below the log start offset."""
        seg_bases = self._seg_bases
        k = 0
        while k + 1 < len(seg_bases) and self._deletable(k) and seg_bases[k + 1] <= self._log_start_offset:
            k += 1
        return k

    def _retention_size_breached(self, retention_bytes: int) -> int:
        """How many of the oldest segments can go while `retention_bytes` remain (`diff - segment.size >= 0`)."""
        size = sum(self._seg_sizes)
        if retention_bytes < 0 or size < retention_bytes:
            return 0
        diff = size - retention_bytes
        sizes = self._seg_sizes
        k = 0
        while k < len(sizes) and self._deletable(k) and diff - sizes[k] >= 0:
            diff -= sizes[k]
            k += 1
        return k

    def _delete_segments(self, count: int, now_ms: int, role: str) -> int:
        """`deleteSegments`: drop the `count` oldest segments (rolling a new one at the LEO first when that is all
        of them) and move the log start offset to the first remaining segment's base (`SegmentDeletion`)."""
        if count == 0:
            return 0
        seg_bases = self._seg_bases
        sizes = self._seg_sizes
        if count == len(seg_bases):
            if seg_bases[-1] == self._leo:
                count -= 1  # the last one is where the new segment would start: it stays
            else:
                seg_bases.append(self._leo)
                sizes.append(0)
        if count == 0:
            return 0
        cut = bisect_left(self._bases, seg_bases[count])
        del self._batches[:cut]
        del self._bases[:cut]
        del seg_bases[:count]
        del sizes[:count]
        self.maybe_increment_log_start_offset(seg_bases[0], now_ms, role, reason="segment_deletion")
        return count

    # --- truncation --------------------------------------------------------------------------------

    def truncate_to(self, target_offset: int, now_ms: int = 0, reason: str = "diverging_epoch",
                    role: str = FOLLOWER) -> bool:
        """`truncateTo(targetOffset)`: drop everything at or after `target_offset`; returns True if the
        log changed. A target at or past the LEO only trims the epoch cache (Kafka does the same).
        `reason` is one of high_watermark, leader_epoch, diverging_epoch, out_of_range, full."""
        if target_offset < 0:
            raise IllegalArgumentError(f"Cannot truncate partition {self.topic}-{self.partition} to a "
                                       f"negative offset ({target_offset}).")
        if target_offset >= self._leo:
            self.epoch_cache.truncate_from_end(self._leo)
            return False
        batches = self._batches
        seg_bases = self._seg_bases
        if seg_bases[0] > target_offset:
            # The first segment starts after the target: Kafka truncates fully and restarts there.
            self.truncate_fully_and_start_at(target_offset, now_ms, reason=reason, role=role)
            return True
        old_leo = self._leo
        old_hw = self._hw
        # LogSegment.truncateTo cuts at the start of the batch holding target_offset, and LocalLog.truncateTo
        # then sets the LEO to target_offset itself: a target inside a batch leaves a gap below the LEO.
        i = bisect_right(self._bases, target_offset - 1)
        while i > 0 and batches[i - 1].last_offset >= target_offset:
            i -= 1
        new_leo = target_offset
        del batches[i:]
        del self._bases[i:]
        # LocalLog.truncateTo: the segments starting above the target go, the one holding it is cut.
        k = bisect_right(seg_bases, target_offset)
        del seg_bases[k:]
        del self._seg_sizes[k:]
        self._resize_active_segment()
        self._leo = new_leo
        self.epoch_cache.truncate_from_end(new_leo)
        if self._flushed > new_leo:
            self._flushed = new_leo
        old_lso = self._log_start_offset
        if new_leo < old_lso:
            self._log_start_offset = new_leo
        if self.events is not None:
            self.events.append(make_event(
                "truncation", now_ms, self.broker_id, self.topic, self.partition, self.leader_epoch,
                role=role, old_leo=old_leo, truncate_offset=new_leo, reason=reason, hw=old_hw))
            if new_leo < old_lso:
                self.events.append(make_event(
                    "log_start_offset_change", now_ms, self.broker_id, self.topic, self.partition,
                    self.leader_epoch, role=role, old_log_start_offset=old_lso, log_start_offset=new_leo,
                    reason="truncation"))
        if old_hw > new_leo:
            self._set_hw(new_leo, role, now_ms)
        return True

    def truncate_fully_and_start_at(self, new_offset: int, now_ms: int = 0, reason: str = "full",
                                    role: str = FOLLOWER) -> None:
        """`truncateFullyAndStartAt(newOffset)`: empty the log, clear the epoch cache, and set
        LSO = HW = LEO = `new_offset`."""
        if new_offset < 0:
            raise IllegalArgumentError(f"invalid start offset {new_offset}")
        old_leo, old_hw, old_lso = self._leo, self._hw, self._log_start_offset
        self._empty_at(new_offset)
        self._log_start_offset = new_offset
        if self.events is not None:
            self.events.append(make_event(
                "truncation", now_ms, self.broker_id, self.topic, self.partition, self.leader_epoch,
                role=role, old_leo=old_leo, truncate_offset=new_offset, reason=reason, hw=old_hw))
            if old_lso != new_offset:
                self.events.append(make_event(
                    "log_start_offset_change", now_ms, self.broker_id, self.topic, self.partition,
                    self.leader_epoch, role=role, old_log_start_offset=old_lso, log_start_offset=new_offset,
                    reason="truncation"))
        if old_hw != new_offset:
            self._set_hw(new_offset, role, now_ms)

    def _resize_active_segment(self) -> None:
        """Recount the last segment's bytes from its batches (after a truncation or a recovery cut it)."""
        start = bisect_left(self._bases, self._seg_bases[-1])
        self._seg_sizes[-1] = sum(b.size_bytes for b in self._batches[start:])

    # --- durability --------------------------------------------------------------------------------

    def flush(self, offset: int | None = None) -> int:
        """`UnifiedLog.flush(offset)`: make everything below `offset` (default: the LEO) durable; the
        recovery point only moves forward and never past the LEO. Returns the recovery point."""
        target = self._leo if offset is None else min(offset, self._leo)
        if target > self._flushed:
            self._flushed = target
        return self._flushed

    def recover_to_flushed(self, high_watermark_checkpoint: int | None = None,
                           log_start_checkpoint: int | None = None) -> int:
        """Unclean restart (`LogLoader.load`): lose every batch at or after the recovery point, then load the log
        start offset and the HW. The start is the larger of `log_start_checkpoint` (the log's entry in
        `log-start-offset-checkpoint`, 0 when it has none; None: the start the log has, as if checkpointed just
        now) and the first segment's base, so a start raised since the last checkpoint steps back to records
        still on disk; a log whose recovered end is below the checkpoint restarts empty at it
        (`deleteSegmentsIfLogStartGreaterThanLogEnd`). The HW comes from its checkpoint (clamped to [LSO, LEO],
        `updateHighWatermark`), or the current one is clamped. Emits no event: the simulator reports the
        crash. Returns the number of offsets lost."""
        ckpt = self._log_start_offset if log_start_checkpoint is None else log_start_checkpoint
        target = self._flushed
        batches = self._batches
        seg_bases = self._seg_bases
        old_leo = self._leo
        lso = max(ckpt, seg_bases[0])
        # LogLoader reads the LEO off the last batch, so a gap a truncation left at the end closes too.
        end = max(batches[-1].last_offset + 1, lso) if batches else max(target, lso)
        lost = old_leo - min(target, end)
        if lost > 0:
            while batches and batches[-1].last_offset >= target:
                batches.pop()
                self._bases.pop()
            self._leo = max(batches[-1].last_offset + 1, lso) if batches else max(target, lso)
            if batches and batches[-1].last_offset < lso:
                # Nothing readable survived: every segment goes and the log restarts empty at its start offset.
                self._empty_at(lso)
            else:
                # Recovery keeps the segments' boundaries and deletes the unflushed segments past the lost data.
                k = max(bisect_right(seg_bases, self._leo), 1)
                del seg_bases[k:]
                del self._seg_sizes[k:]
                self._resize_active_segment()
            self._flushed = min(self._flushed, self._leo)
            self.epoch_cache.truncate_from_end(self._leo)
            lost = old_leo - self._leo
        elif self._leo < ckpt:
            # A log truncated fully below its checkpointed start since the checkpoint: LogLoader trusts the file.
            self._empty_at(ckpt)
        self._log_start_offset = max(ckpt, seg_bases[0])
        hw = self._hw if high_watermark_checkpoint is None else high_watermark_checkpoint
        self._hw = min(max(hw, self._log_start_offset), self._leo)
        return max(lost, 0)

    def _empty_at(self, offset: int) -> None:
        """Drop every segment and the epoch cache, leaving one empty segment at `offset`, which is the LEO and the
        recovery point (`truncateFullyAndStartAt`, `deleteSegmentsIfLogStartGreaterThanLogEnd`)."""
        self._batches.clear()
        self._bases.clear()
        self._seg_bases[:] = [offset]
        self._seg_sizes[:] = [0]
        self.epoch_cache.clear()
        self._leo = offset
        self._flushed = offset
