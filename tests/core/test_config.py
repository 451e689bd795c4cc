"""ReplicationConfig defaults and validation (reference §1)."""

from __future__ import annotations

import pytest

from replication_core.config import ReplicationConfig, TruncationMode
from replication_core.errors import Errors, FencedLeaderEpochError, error_for


def test_defaults_match_kafka_trunk() -> None:
    """ReplicationConfigs / QuotaConfig defaults."""
    c = ReplicationConfig()
    assert c.replica_lag_time_max_ms == 30000 and c.replica_fetch_wait_max_ms == 500
    assert c.replica_fetch_max_bytes == 1048576 and c.replica_fetch_response_max_bytes == 10485760
    assert c.replica_fetch_backoff_ms == 1000 and c.num_replica_fetchers == 1
    assert c.min_insync_replicas == 1 and c.unclean_leader_election_enable is False
    assert c.replication_quota_window_num == 11 and c.isr_expiration_interval_ms == 15000
    assert c.truncation_mode is TruncationMode.DIVERGING_EPOCH


def test_fetch_wait_must_not_exceed_lag() -> None:
    """KafkaConfig require: replica.fetch.wait.max.ms <= replica.lag.time.max.ms."""
    with pytest.raises(ValueError, match=r"replica\.fetch\.wait\.max\.ms"):
        ReplicationConfig(replica_lag_time_max_ms=100, replica_fetch_wait_max_ms=500)


def test_kafka_map_round_trip() -> None:
    """as_kafka_map / from_kafka_map use Kafka config names."""
    c = ReplicationConfig(min_insync_replicas=2, truncation_mode="leader_epoch",
                          leader_replication_throttled_replicas=("0:101", "1:102"))
    m = c.as_kafka_map()
    assert m["min.insync.replicas"] == "2" and m["unclean.leader.election.enable"] == "false"
    assert ReplicationConfig.from_kafka_map(m) == c
    with pytest.raises(KeyError):
        ReplicationConfig.from_kafka_map({"no.such.config": "1"})


def test_error_for_exception() -> None:
    """Errors.forException mapping."""
    assert error_for(FencedLeaderEpochError("x")) is Errors.FENCED_LEADER_EPOCH
    assert error_for(RuntimeError("x")) is Errors.UNKNOWN_SERVER_ERROR
