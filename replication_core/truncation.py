"""Where a follower truncates: the truncation protocols by Kafka version and `getOffsetTruncationState`.

Contract (reference §3.4-§3.6, §8): `TruncationProtocol` names the four generations a fetcher can
replay, and `ProtocolFlags` says what each one does on the wire:

| protocol          | Kafka   | how the truncation point is found                                   |
|-------------------|---------|---------------------------------------------------------------------|
| `high_watermark`  | < 0.11  | truncate to the local HW when (re)starting to follow (KIP-101 bug)  |
| `leader_epoch_v0` | 0.11-1.1| OffsetsForLeaderEpoch v0: the leader answers an end offset only, so  |
|                   |         | a fast double fail-over can leave divergent logs (KIP-279 bug)      |
| `leader_epoch`    | 2.0-2.7 | OffsetsForLeaderEpoch with the epoch in the answer, multi-round      |
| `diverging_epoch` | 2.8+    | truncate on fetch from the DivergingEpoch of the fetch response      |

`offset_truncation_state` is Kafka's `AbstractFetcherThread.getOffsetTruncationState`, rule for rule,
as a pure function of the leader's answer and the follower's own log; it is shared by the
OffsetsForLeaderEpoch path and the DivergingEpoch path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from replication_core.partition_fetch_state import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEndOffset,
    OffsetTruncationState,
)


class TruncationProtocol(StrEnum):
    """The follower truncation generation to replay (values match `config.TruncationMode` names)."""

    HIGH_WATERMARK = "high_watermark"
    LEADER_EPOCH_V0 = "leader_epoch_v0"
    LEADER_EPOCH = "leader_epoch"
    DIVERGING_EPOCH = "diverging_epoch"


def truncation_protocol(mode: str) -> TruncationProtocol:
    """Normalise a configured mode (`config.TruncationMode`, `"leader-epoch-v0"`, ...) to a protocol."""
    return TruncationProtocol(str(mode).strip().lower().replace("-", "_"))


@dataclass(frozen=True)
class ProtocolFlags:
    """What a protocol generation sends and expects (`LeaderEndPoint.isTruncationOnFetchSupported`, IBP checks)."""

    offsets_for_leader_epoch: bool
    """`isOffsetForLeaderEpochSupported` (IBP >= 0.11.0-IV2)."""
    truncate_on_fetch: bool
    """`isTruncationOnFetchSupported` (MV >= 2.7-IV1): LastFetchedEpoch / DivergingEpoch."""
    epoch_request_version: int
    """OffsetsForLeaderEpoch version; v0 answers carry no epoch (reference §3.5 rule 2)."""
    current_leader_epoch: bool
    """KIP-320 `CurrentLeaderEpoch` fencing in Fetch / ListOffsets / OffsetsForLeaderEpoch."""
    uses_log_epochs: bool
    """Whether the local log's epoch cache is consulted (`latestEpoch`); False = old message format."""
    fetch_version: int
    """The Fetch version the fetcher sends (`MetadataVersion.fetchRequestVersion` at the generation's last
    IBP): 3 (0.10.2), 7 (1.1), 11 (2.3-IV1 .. 2.6), 12 (2.7-IV1+: v13+ needs topic IDs, which replog's
    fetchers do not send, and `RemoteLeaderEndPoint.buildFetch` falls back to 12 without them)."""


FLAGS: dict[TruncationProtocol, ProtocolFlags] = {
    TruncationProtocol.HIGH_WATERMARK: ProtocolFlags(False, False, 0, False, False, 3),
    TruncationProtocol.LEADER_EPOCH_V0: ProtocolFlags(True, False, 0, False, True, 7),
    TruncationProtocol.LEADER_EPOCH: ProtocolFlags(True, False, 3, True, True, 11),
    TruncationProtocol.DIVERGING_EPOCH: ProtocolFlags(True, True, 4, True, True, 12),
}

EndOffsetForEpoch = Callable[[int], "tuple[int, int] | None"]
"""The follower's `endOffsetForEpoch(epoch)` -> (epoch found, end offset), None when undefined."""


def offset_truncation_state(leader: EpochEndOffset, follower_leo: int, initial_fetch_offset: int,
                            end_offset_for_epoch: EndOffsetForEpoch) -> tuple[OffsetTruncationState, str]:
    """`AbstractFetcherThread.getOffsetTruncationState`: (truncation state, Kafka's log line for it).

    `leader` is the leader's (epoch, end offset) for the follower's last epoch; `follower_leo` the
    follower's log end offset; `initial_fetch_offset` the partition's current fetch offset.
    """
    lo, le = leader.end_offset, leader.leader_epoch
    if lo == UNDEFINED_EPOCH_OFFSET:
        return (OffsetTruncationState(initial_fetch_offset, True),
                "Based on replica's leader epoch, leader replied with an unknown offset. The initial fetch "
                f"offset {initial_fetch_offset} will be used for truncation.")
    if le == UNDEFINED_EPOCH:
        return (OffsetTruncationState(min(lo, follower_leo), True),
                "Leader or replica is on protocol version where leader epoch is not considered in the "
                f"OffsetsForLeaderEpoch response. The leader's offset {lo} will be used for truncation.")
    found = end_offset_for_epoch(le)
    if found is None:
        return (OffsetTruncationState(min(lo, follower_leo), True),
                f"Based on replica's leader epoch, leader replied with epoch {le} below any replica's "
                f"tracked epochs. The leader's offset only {lo} will be used for truncation.")
    follower_epoch, follower_end = found
    if follower_epoch != le:
        offset = min(follower_end, follower_leo)
        return (OffsetTruncationState(offset, False),
                f"Based on replica's leader epoch, leader replied with epoch {le} unknown to the replica. "
                f"Will truncate to {offset} and send another leader epoch request to the leader.")
    return OffsetTruncationState(min(follower_end, lo, follower_leo), True), ""
