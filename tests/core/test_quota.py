"""ReplicationQuotaManager (KIP-73): `ReplicationQuotaManagerTest` ports plus throttle predicates."""

from __future__ import annotations

import pytest

from replication_core.events import Event
from replication_core.quota import (
    LONG_MAX,
    QuotaConfig,
    ReplicationQuotaManager,
    leader_throttled_partitions,
    record_leader_throttled_bytes,
    should_follower_throttle,
    should_leader_throttle,
)


def test_should_throttle_only_defined_replicas() -> None:
    """ReplicationQuotaManagerTest.shouldThrottleOnlyDefinedReplicas."""
    q = ReplicationQuotaManager("follower", broker_id=1)
    q.mark_throttled("topic1", [1, 2, 3])
    assert [q.is_throttled("topic1", p) for p in (1, 2, 3, 4)] == [True, True, True, False]


def test_should_support_wildcard_throttled_replicas() -> None:
    """ReplicationQuotaManagerTest.shouldSupportWildcardThrottledReplicas."""
    q = ReplicationQuotaManager("leader", broker_id=1)
    q.mark_throttled("MyTopic")
    assert q.is_throttled("MyTopic", 0)
    assert not q.is_throttled("MyOtherTopic", 0)


def test_should_exceed_quota_then_return_back_below_bound_as_time_passes() -> None:
    """ReplicationQuotaManagerTest.shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses (10x1 s, 100 B/s)."""
    q = ReplicationQuotaManager("leader", 1, QuotaConfig(num_samples=10, window_size_ms=1000))
    q.update_quota(100.0)
    t = 0
    assert not q.is_quota_exceeded(t)
    t += 1500
    q.record(1, t)
    assert not q.is_quota_exceeded(t)
    q.record(149, t)                    # 150 B over 1.5 s = 100 B/s: at the bound, not above it
    assert q.rate(t) == pytest.approx(100.0)
    assert not q.is_quota_exceeded(t)
    q.record(1, t)                      # 151 / 1.5 = 100.67
    assert q.is_quota_exceeded(t)
    t += 500                            # 151 / 2 = 75.5
    assert q.rate(t) == pytest.approx(75.5)
    assert not q.is_quota_exceeded(t)
    t += 500
    q.record(99, t)                     # 250 / 2.5 = 100: bound inclusive
    assert not q.is_quota_exceeded(t)
    q.record(1, t)                      # 251 / 2.5
    assert q.is_quota_exceeded(t)
    t += 2000                           # 251 / 4.5
    assert not q.is_quota_exceeded(t)


def test_no_quota_set_is_never_exceeded_and_bound_is_long_max() -> None:
    """No quota set: never exceeded; `upperBound` is `Long.MAX_VALUE`."""
    q = ReplicationQuotaManager("follower", 1)
    q.record(10**12, 0)
    assert not q.is_quota_exceeded(0)
    assert q.upper_bound() == float(LONG_MAX)
    q.update_quota(5.0)
    assert q.upper_bound() == 5.0


def test_samples_older_than_all_windows_are_forgotten() -> None:
    """`purgeObsoleteSamples`: samples older than samples x window are reset."""
    q = ReplicationQuotaManager("leader", 1, QuotaConfig(num_samples=3, window_size_ms=1000))
    q.update_quota(10.0)
    q.record(1000, 0)
    assert q.is_quota_exceeded(500)       # 1000 B over the 1 s floor
    assert not q.is_quota_exceeded(3000)  # 3 windows later the sample is reset


def test_ring_reuses_slots_after_num_samples_plus_one_windows() -> None:
    """`SampledStat.advance` (trunk): the ring has `samples() + 1` slots ("need to keep one extra sample"),
    reused in order; a slot is only overwritten `samples + 1` windows later."""
    q = ReplicationQuotaManager("leader", 1, QuotaConfig(num_samples=2, window_size_ms=1000))
    q.record(100, 0)
    q.record(100, 900)    # same sample: lastEventMs = 900
    q.record(100, 1000)
    q.record(100, 2000)   # third slot (a 2-slot ring overwrote the t=0 sample here)
    # The t=0 sample's last event (900) is 1.6 s old < 2 x 1 s: it still counts, and the window
    # starts at its start time: 400 B / 2.5 s.
    assert q.rate(2500) == pytest.approx(400 / 2.5)
    q.record(100, 3000)   # back to the first slot: the t=0 sample is recycled
    # The t=1000 sample's last event is now 2 windows old: purged; 200 B since t=2000.
    assert q.rate(3000) == pytest.approx(200 / 1.0)


def test_purge_keeps_samples_whose_last_event_is_inside_the_monitored_window() -> None:
    """`SampledStat.purgeObsoleteSamples` (trunk): a sample is reset when `now - lastEventMs >= samples x
    window`; "samples overlapping the monitored window are kept, even if they started before it"."""
    q = ReplicationQuotaManager("leader", 1, QuotaConfig(num_samples=11, window_size_ms=1000))
    q.update_quota(1000.0)
    q.record(1, 0)
    q.record(40_000, 950)   # same sample (started at 0), last event at 950
    # 11 s after the sample started but only 10.05 s after its last event: kept, 40001 B / 11 s.
    assert q.rate(11_000) == pytest.approx(40_001 / 11.0)
    assert q.is_quota_exceeded(11_000)
    assert not q.is_quota_exceeded(11_950)  # now 11 s after the last event: reset


def test_burst_then_trickle_stays_exceeded_with_the_extra_sample() -> None:
    """A 50 kB burst in the first window then 1 B a second: with `samples + 1` slots and purging by last
    event the burst still counts at t = 11.5 s (Kafka: 50012 B / 11.5 s, above a 3000 B/s bound)."""
    q = ReplicationQuotaManager("leader", 1, QuotaConfig(num_samples=11, window_size_ms=1000))
    q.update_quota(3000.0)
    q.record(50_000, 0)
    q.record(1, 900)
    for k in range(1, 12):
        q.record(1, 1000 * k)
    assert q.rate(11_500) == pytest.approx(50_012 / 11.5)
    assert q.is_quota_exceeded(11_500)


def test_throttled_replicas_config_keeps_only_this_broker_and_wildcard() -> None:
    """`ConfigHandler.parseThrottledPartitions`: own entries, `*`, empty removes."""
    q = ReplicationQuotaManager("leader", broker_id=101)
    q.mark_throttled_from_config("t", ["0:101", "1:102", "2:101"])
    assert [q.is_throttled("t", p) for p in range(3)] == [True, False, True]
    q.mark_throttled_from_config("t", ["*"])
    assert q.is_throttled("t", 7)
    q.mark_throttled_from_config("t", [])
    assert not q.is_throttled("t", 0)


def test_leader_throttle_never_applies_to_in_sync_replicas() -> None:
    """ReplicaManagerQuotasTest.shouldIncludeInSyncThrottledReplicas (predicate level)."""
    q = ReplicationQuotaManager("leader", 1)
    q.mark_throttled("t")
    q.update_quota(1.0)
    q.record(1000, 0)
    assert should_leader_throttle(q, "t", 0, follower_in_isr=False, now_ms=0)
    assert not should_leader_throttle(q, "t", 0, follower_in_isr=True, now_ms=0)
    assert not should_leader_throttle(q, "u", 0, follower_in_isr=False, now_ms=0)


def test_follower_throttle_uses_lag_not_isr_and_emits_event() -> None:
    """`shouldFollowerThrottle` uses the fetch-state lag; the event carries rate and bound."""
    events: list[Event] = []
    q = ReplicationQuotaManager("follower", 2, emit=events.append)
    q.mark_throttled("t", [0])
    assert not should_follower_throttle(q, "t", 0, replica_in_sync=False, now_ms=0)  # no bound yet
    q.update_quota(1.0)
    q.record(100, 0)
    assert should_follower_throttle(q, "t", 0, replica_in_sync=False, now_ms=0)
    assert not should_follower_throttle(q, "t", 0, replica_in_sync=True, now_ms=0)
    q.emit_throttle(0, "t", 0, 3, follower_id=2, num_bytes=0)
    (ev,) = events
    assert ev["event_type"] == "quota_throttle" and ev["role"] == "follower"
    assert ev["measured_rate"] == pytest.approx(100.0) and ev["quota_bound"] == 1.0


def test_invalid_side_rejected() -> None:
    """Only leader and follower managers exist here."""
    with pytest.raises(ValueError, match="side"):
        ReplicationQuotaManager("consumer", 1)


class _ScriptedQuota(ReplicationQuotaManager):
    """A quota whose `isQuotaExceeded` answers follow a script (ReplicaManagerQuotasTest's mock)."""

    def __init__(self, answers: list[bool]) -> None:
        super().__init__("leader", 1)
        self.answers = answers
        self.mark_throttled("topic")

    def is_quota_exceeded(self, now_ms: int) -> bool:
        """The next scripted answer."""
        return self.answers.pop(0)


@pytest.mark.parametrize(("exceeded", "blanked"), [
    ([False, True], [False, True]),    # shouldExcludeSubsequentThrottledPartitions
    ([True, True], [True, True]),      # shouldGetNoMessagesIfQuotasExceededOnSubsequentPartitions
    ([False, False], [False, False]),  # shouldGetBothMessagesIfQuotasAllow
])
def test_replica_manager_quotas_per_partition_order(exceeded: list[bool], blanked: list[bool]) -> None:
    """ReplicaManagerQuotasTest: the leader checks the quota per partition, in request order."""
    quota = _ScriptedQuota(exceeded)
    parts = [("topic", 0), ("topic", 1)]
    assert leader_throttled_partitions(quota, parts, follower_in_isr=False, now_ms=0) == blanked


def test_replica_manager_quotas_include_in_sync_throttled_replicas() -> None:
    """ReplicaManagerQuotasTest.shouldIncludeInSyncThrottledReplicas: an ISR follower is never blanked."""
    quota = _ScriptedQuota([True, True])
    assert leader_throttled_partitions(quota, [("topic", 0), ("topic", 1)], True, 0) == [False, False]


def test_leader_records_the_response_size_of_throttled_partitions_only() -> None:
    """`sizeOfThrottledPartitions`: the size of a fetch response (v12) holding the throttled partitions
    only, in-sync or not, framing included: a 16-byte response, topic "t" (name 1 + 1, partition count 1,
    tagged fields 1 = 4) and its partition 0 with 300 record bytes (35 fixed + records length varint(301)
    2 + 300 + tagged fields 1 = 338); not the 300 record bytes alone."""
    q = ReplicationQuotaManager("leader", 1)
    q.mark_throttled("t", [0])
    rows = [("t", 0, 300, False), ("t", 1, 500, False), ("u", 0, 7, False)]
    assert record_leader_throttled_bytes(q, 12, rows, 0) == 16 + 4 + 338 == 358
    assert q.rate(0) == pytest.approx(358.0)


def test_from_config_uses_broker_windows_and_side_rate() -> None:
    """`QuotaFactory` + dynamic `leader./follower.replication.throttled.rate`."""
    from replication_core.config import ReplicationConfig

    cfg = ReplicationConfig(replication_quota_window_num=4, replication_quota_window_size_seconds=2,
                            leader_replication_throttled_rate=50, follower_replication_throttled_rate=70)
    leader = ReplicationQuotaManager.from_config("leader", 1, cfg)
    follower = ReplicationQuotaManager.from_config("follower", 1, cfg)
    assert leader.config == QuotaConfig(4, 2000)
    assert (leader.upper_bound(), follower.upper_bound()) == (50.0, 70.0)
    default = ReplicationQuotaManager.from_config("leader", 1, ReplicationConfig())
    default.record(10**15, 0)
    assert not default.is_quota_exceeded(0)  # Long.MAX_VALUE bound
