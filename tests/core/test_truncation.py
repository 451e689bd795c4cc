"""`getOffsetTruncationState` rule by rule (reference §3.5) and the truncation-protocol table (§8)."""

from __future__ import annotations

import pytest

from replication_core.config import ReplicationConfig, TruncationMode
from replication_core.fetcher import initial_fetch_offset
from replication_core.leader_epoch_cache import LeaderEpochCache
from replication_core.partition_fetch_state import EpochEndOffset, OffsetTruncationState
from replication_core.truncation import (
    FLAGS,
    EndOffsetForEpoch,
    TruncationProtocol,
    offset_truncation_state,
    truncation_protocol,
)
from tests.core.mock_leader import mk_log, seed


def follower_lookup(entries: list[tuple[int, int]], leo: int) -> EndOffsetForEpoch:
    """A follower's `endOffsetForEpoch` over a real cache holding `entries`."""
    cache = LeaderEpochCache()
    for epoch, start in entries:
        cache.assign(epoch, start)

    def lookup(epoch: int) -> tuple[int, int] | None:
        """`UnifiedLog.endOffsetForEpoch`: None when the offset is undefined."""
        found_epoch, offset = cache.end_offset_for(epoch, leo)
        return None if offset == -1 else (found_epoch, offset)

    return lookup


def truncate_at(answer: EpochEndOffset, lookup: EndOffsetForEpoch) -> OffsetTruncationState:
    """The truncation state for a follower with LEO 200 and fetch offset 0."""
    return offset_truncation_state(answer, 200, 0, lookup)[0]


def test_undefined_offset_truncates_to_initial_fetch_offset() -> None:
    """Rule 1: `endOffset == UNDEFINED_EPOCH_OFFSET` -> (fetchOffset, completed)."""
    lookup = follower_lookup([(5, 0)], 200)
    state, msg = offset_truncation_state(EpochEndOffset("NONE", -1, -1), 200, 100, lookup)
    assert state == OffsetTruncationState(100, True)
    assert "unknown offset" in msg


def test_v0_answer_without_epoch_uses_min_of_leader_offset_and_leo() -> None:
    """Rule 2: `leaderEpoch == UNDEFINED_EPOCH` (v0) -> (min(Lo, F), completed)."""
    lookup = follower_lookup([(5, 0)], 200)
    assert truncate_at(EpochEndOffset("NONE", -1, 155), lookup) == OffsetTruncationState(155, True)
    assert truncate_at(EpochEndOffset("NONE", -1, 250), lookup) == OffsetTruncationState(200, True)


def test_epoch_unknown_to_follower_truncates_to_end_of_floor_epoch_not_completed() -> None:
    """Rule 3a: follower's floor epoch != Le -> (min(Fo, F), not completed): another round follows."""
    lookup = follower_lookup([(3, 0), (5, 120)], 200)
    state, msg = offset_truncation_state(EpochEndOffset("NONE", 4, 155), 200, 0, lookup)
    assert state == OffsetTruncationState(120, False)
    assert "unknown to the replica" in msg


def test_epoch_known_to_both_truncates_to_min_of_three() -> None:
    """Rule 3b: Fe == Le -> (min(Fo, Lo, F), completed)."""
    lookup = follower_lookup([(3, 0), (5, 120)], 200)
    assert truncate_at(EpochEndOffset("NONE", 5, 156), lookup) == OffsetTruncationState(156, True)
    assert truncate_at(EpochEndOffset("NONE", 3, 101), lookup) == OffsetTruncationState(101, True)
    assert truncate_at(EpochEndOffset("NONE", 3, 130), lookup) == OffsetTruncationState(120, True)


def test_follower_tracking_no_epoch_uses_leader_offset() -> None:
    """Rule 3c: follower has no entry <= Le -> (min(Lo, F), completed)."""
    state, msg = offset_truncation_state(EpochEndOffset("NONE", 4, 202), 200, 0, lambda epoch: None)
    assert state == OffsetTruncationState(200, True)
    assert "below any replica's tracked epochs" in msg


def test_truncation_state_prints_like_kafka() -> None:
    """`OffsetTruncationState.toString`."""
    assert str(OffsetTruncationState(5, True)) == "TruncationState(offset=5, completed=true)"


@pytest.mark.parametrize(("mode", "expected"), [
    (TruncationMode.DIVERGING_EPOCH, TruncationProtocol.DIVERGING_EPOCH),
    (TruncationMode.LEADER_EPOCH, TruncationProtocol.LEADER_EPOCH),
    (TruncationMode.HIGH_WATERMARK, TruncationProtocol.HIGH_WATERMARK),
    ("leader-epoch-v0", TruncationProtocol.LEADER_EPOCH_V0),
    ("Diverging-Epoch", TruncationProtocol.DIVERGING_EPOCH),
])
def test_truncation_protocol_accepts_config_modes_and_kafka_spellings(mode: str,
                                                                      expected: TruncationProtocol) -> None:
    """Config modes and dashed spellings map to protocols."""
    assert truncation_protocol(mode) is expected


def test_protocol_flags_follow_the_version_table() -> None:
    """Wire features per protocol generation (module table)."""
    hw, v0, le, de = (FLAGS[p] for p in TruncationProtocol.__members__.values())
    assert (hw.offsets_for_leader_epoch, hw.truncate_on_fetch, hw.uses_log_epochs) == (False, False, False)
    assert (v0.offsets_for_leader_epoch, v0.epoch_request_version, v0.truncate_on_fetch) == (True, 0, False)
    assert (le.offsets_for_leader_epoch, le.epoch_request_version, le.truncate_on_fetch) == (True, 3, False)
    assert (de.truncate_on_fetch, de.current_leader_epoch) == (True, True)
    # MetadataVersion.fetchRequestVersion at 0.10.2, 1.1, 2.3-IV1 .. 2.6, and 2.7-IV1+ without topic IDs.
    assert [f.fetch_version for f in (hw, v0, le, de)] == [3, 7, 11, 12]


def test_default_config_replays_the_current_protocol() -> None:
    """The default config replays 2.8+ (truncate on fetch)."""
    assert truncation_protocol(ReplicationConfig().truncation_mode) is TruncationProtocol.DIVERGING_EPOCH


def test_initial_fetch_offset_is_leo_only_with_truncate_on_fetch_and_known_epoch() -> None:
    """`ReplicaManager.initialFetchOffset`: LEO if MV >= 2.7-IV1 and latestEpoch defined, else HW."""
    log = mk_log(seed(0, 10, 3), hw=4)
    assert initial_fetch_offset(log, TruncationProtocol.DIVERGING_EPOCH) == 10
    assert initial_fetch_offset(log, TruncationProtocol.LEADER_EPOCH) == 4
    assert initial_fetch_offset(mk_log([], hw=0), TruncationProtocol.DIVERGING_EPOCH) == 0
