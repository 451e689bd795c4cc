"""The KIP-101 / KIP-279 scenarios lose or diverge in the protocol generation they describe and are
clean in the default (diverging-epoch) mode, judged from the events alone (reference §8.1, §8.2)."""

from __future__ import annotations

import pytest

from replication_core.config import TruncationMode
from tests.sim.audit import audit
from tests.sim.helpers import check, run_named

DEFAULT = TruncationMode.DIVERGING_EPOCH


def test_kip_101_hw_truncation_loses_an_acknowledged_write_only_under_hw_truncation() -> None:
    """Problem 1: the acks=all m2 at offset 1 is gone from the final leader with HW truncation."""
    _, events, _ = run_named("kip-101-hw-truncation", TruncationMode.HIGH_WATERMARK)
    a = audit(events)
    lost = a.lost_acked_writes()
    assert [x["base_offset"] for x in lost] == [1]
    assert not a.unclean_elections(), "the loss happens with clean elections only"
    assert any(t["reason"] == "high_watermark" and t["truncate_offset"] == 1 for t in a.truncations)
    for mode in (DEFAULT, TruncationMode.LEADER_EPOCH, TruncationMode.LEADER_EPOCH_V0):
        clean = audit(run_named("kip-101-hw-truncation", mode)[1])
        assert clean.lost_acked_writes() == [] and clean.divergences() == [], mode


def test_kip_101_divergence_diverges_only_under_hw_truncation() -> None:
    """Problem 2: A keeps m2 at offset 1 where B has m3; both HWs are above offset 1."""
    a = audit(run_named("kip-101-divergence", TruncationMode.HIGH_WATERMARK)[1])
    assert [(x, y, off) for x, y, off in a.divergences()] == [((1, "kip101", 0), (2, "kip101", 0), 1)]
    assert not a.unclean_elections()
    for mode in (DEFAULT, TruncationMode.LEADER_EPOCH):
        clean = audit(run_named("kip-101-divergence", mode)[1])
        assert clean.divergences() == [] and clean.lost_acked_writes() == [], mode


def test_kip_279_diverges_with_offsets_for_leader_epoch_v0_and_not_with_epochs() -> None:
    """B keeps its epoch-1 records 11-15 where A has epoch-0 records: divergence at 11 under v0."""
    a = audit(run_named("kip-279-fast-failover", TruncationMode.LEADER_EPOCH_V0)[1])
    assert [off for _, _, off in a.divergences()] == [11]
    assert len(a.unclean_elections()) == 1, "the scenario needs (and flags) one unclean election"
    # B's truncation point was min(21, its LEO 16) = 16, a no-op: the v0 answer carried no epoch, so
    # B never truncated below 16.
    assert not any(t["broker_id"] == 2 and t["truncate_offset"] < 16 for t in a.truncations)
    for mode in (DEFAULT, TruncationMode.LEADER_EPOCH):
        clean = audit(run_named("kip-279-fast-failover", mode)[1])
        assert clean.divergences() == [], mode
        assert len(clean.unclean_elections()) == 1


@pytest.mark.parametrize(("name", "mode"), [
    ("kip-101-hw-truncation", TruncationMode.HIGH_WATERMARK),
    ("kip-101-divergence", TruncationMode.HIGH_WATERMARK),
    ("kip-279-fast-failover", TruncationMode.LEADER_EPOCH_V0),
    ("leader-crash", DEFAULT),
    ("nemesis-small", DEFAULT),
])
def test_logs_rebuilt_from_events_match_the_engine(name: str, mode: TruncationMode) -> None:
    """Every replica's log and HW, rebuilt from append / truncation / hw_change events (crash losses
    included), equals the engine's own at the end of the run: the events are complete enough for a
    checker."""
    cluster, events, _ = run_named(name, mode)
    a = audit(events)
    assert a.inconsistencies == []
    for b, broker in cluster.brokers.items():
        for tp, log in broker.disk.logs.items():
            key = (b, tp.topic, tp.partition)
            assert a.logs.get(key, []) == [(x.base_offset, x.last_offset, x.leader_epoch, x.checksum)
                                           for x in log.batches], key
            assert a.hw.get(key, 0) == log.high_watermark, key


@pytest.mark.parametrize(("name", "old_mode", "expected"), [
    ("kip-101-hw-truncation", TruncationMode.HIGH_WATERMARK, {"acked_write_lost", "truncation_safety"}),
    ("kip-101-divergence", TruncationMode.HIGH_WATERMARK, {"follower_log_matching"}),
    ("kip-279-fast-failover", TruncationMode.LEADER_EPOCH_V0, {"follower_log_matching"}),
])
def test_reference_checker_agrees(name: str, old_mode: TruncationMode, expected: set[str]) -> None:
    """`replication_core.checker` finds errors in the old mode and none in the default mode (only the
    excusable warnings of the scenario's power failure / unclean election)."""
    _, events, stats = run_named(name, old_mode)
    old = check(events, stats)
    assert expected <= {v.invariant for v in old.errors}
    _, events, stats = run_named(name, DEFAULT)
    new = check(events, stats)
    assert new.errors == (), new.errors[:3]
