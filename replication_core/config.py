"""Replication configuration: the broker/topic configs of reference §1 with Kafka's trunk defaults.

Mirrors `ReplicationConfigs`, `QuotaConfig`, `ServerLogConfigs` and `TopicConfig` (`min.insync.replicas`,
`unclean.leader.election.enable`). One frozen value, passed into every state machine that needs it; nothing
reads configuration from anywhere else. `truncation_mode` selects which generation of the follower
truncation protocol the fetchers follow (reference §3.4-§3.6, Appendix B).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

LONG_MAX = 2**63 - 1
"""Java `Long.MAX_VALUE`, the default (unbounded) replication throttle rate."""


class ConfigValueError(ValueError):
    """A config value of the wrong form; names the Kafka config, the form expected and the value given."""

    def __init__(self, name: str, expected: str, got: object) -> None:
        super().__init__(f"{name}: expected {expected}, got {got!r}")
        self.name = name
        self.expected = expected
        self.got = got


class TruncationMode(StrEnum):
    """How a follower finds its truncation point (reference §3.4-§3.6)."""

    DIVERGING_EPOCH = "diverging_epoch"
    """MV >= 2.7-IV1: truncate on fetch from the leader's DivergingEpoch (KIP-595 / KAFKA-10554, 2.8+)."""
    LEADER_EPOCH = "leader_epoch"
    """IBP 2.0 .. 2.6: OffsetsForLeaderEpoch v1+ answers carry the epoch; multi-round truncation (KIP-279)."""
    LEADER_EPOCH_V0 = "leader_epoch_v0"
    """IBP 0.11.0-IV2 .. 1.1: OffsetsForLeaderEpoch v0 answers an end offset only (KIP-101, before KIP-279)."""
    HIGH_WATERMARK = "high_watermark"
    """Pre-KIP-101: truncate to the local high watermark when (re)starting to follow."""


# Kafka config name for every field; used for `broker_config` events and for building from a Kafka map.
_KAFKA_NAMES: dict[str, str] = {
    "replica_lag_time_max_ms": "replica.lag.time.max.ms",
    "replica_fetch_wait_max_ms": "replica.fetch.wait.max.ms",
    "replica_fetch_min_bytes": "replica.fetch.min.bytes",
    "replica_fetch_max_bytes": "replica.fetch.max.bytes",
    "replica_fetch_response_max_bytes": "replica.fetch.response.max.bytes",
    "fetch_max_bytes": "fetch.max.bytes",
    "replica_fetch_backoff_ms": "replica.fetch.backoff.ms",
    "num_replica_fetchers": "num.replica.fetchers",
    "replica_high_watermark_checkpoint_interval_ms": "replica.high.watermark.checkpoint.interval.ms",
    "replica_socket_timeout_ms": "replica.socket.timeout.ms",
    "min_insync_replicas": "min.insync.replicas",
    "unclean_leader_election_enable": "unclean.leader.election.enable",
    "unclean_leader_election_interval_ms": "unclean.leader.election.interval.ms",
    "leader_replication_throttled_rate": "leader.replication.throttled.rate",
    "follower_replication_throttled_rate": "follower.replication.throttled.rate",
    "leader_replication_throttled_replicas": "leader.replication.throttled.replicas",
    "follower_replication_throttled_replicas": "follower.replication.throttled.replicas",
    "replication_quota_window_num": "replication.quota.window.num",
    "replication_quota_window_size_seconds": "replication.quota.window.size.seconds",
    "truncation_mode": "replog.truncation.mode",
}


@dataclass(frozen=True)
class ReplicationConfig:
    """Replication configs in force on a broker (`ReplicationConfigs` / `QuotaConfig` defaults, trunk).

    The throttled-replica lists keep Kafka's string form (`"partition:broker"` entries or `"*"`).
    """

    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1048576
    replica_fetch_response_max_bytes: int = 10485760
    fetch_max_bytes: int = 57671680
    replica_fetch_backoff_ms: int = 1000
    num_replica_fetchers: int = 1
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    replica_socket_timeout_ms: int = 30000
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    unclean_leader_election_interval_ms: int = 300000
    leader_replication_throttled_rate: int = LONG_MAX
    follower_replication_throttled_rate: int = LONG_MAX
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    replication_quota_window_num: int = 11
    replication_quota_window_size_seconds: int = 1
    truncation_mode: TruncationMode = TruncationMode.DIVERGING_EPOCH

    def __post_init__(self) -> None:
        # KafkaConfig's `require`s: a fetch that parks longer than the lag bound would flap the ISR.
        if self.replica_fetch_wait_max_ms > self.replica_lag_time_max_ms:
            raise ValueError(f"replica.fetch.wait.max.ms ({self.replica_fetch_wait_max_ms}) should always be less "
                             f"than or equal to replica.lag.time.max.ms ({self.replica_lag_time_max_ms}) to prevent "
                             "frequent changes in ISR")
        if self.replica_fetch_wait_max_ms > self.replica_socket_timeout_ms:
            raise ValueError(f"replica.socket.timeout.ms ({self.replica_socket_timeout_ms}) should always be at least "
                             f"replica.fetch.wait.max.ms ({self.replica_fetch_wait_max_ms}) to prevent unnecessary "
                             "socket timeouts")
        if self.min_insync_replicas < 1:
            raise ConfigValueError("min.insync.replicas", "an integer >= 1", self.min_insync_replicas)
        if self.num_replica_fetchers < 1:
            raise ConfigValueError("num.replica.fetchers", "an integer >= 1", self.num_replica_fetchers)
        # Accept the plain string form too, so configs read from YAML need no conversion.
        object.__setattr__(self, "truncation_mode", TruncationMode(self.truncation_mode))

    @property
    def isr_expiration_interval_ms(self) -> int:
        """Period of the `isr-expiration` task (`ReplicaManager.startup`: `replicaLagTimeMaxMs / 2`)."""
        return self.replica_lag_time_max_ms // 2

    def effective_min_isr(self, replication_factor: int) -> int:
        """`Partition.effectiveMinIsr` (3.7+): min.insync.replicas capped at the replication factor."""
        return min(self.min_insync_replicas, replication_factor)

    def as_kafka_map(self) -> dict[str, str]:
        """The configs as Kafka names and string values (the `config` column of `broker_config` events)."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, tuple):
                text = ",".join(value)
            else:
                text = str(value)
            out[_KAFKA_NAMES[f.name]] = text
        return out

    @classmethod
    def from_kafka_map(cls, values: dict[str, Any], non_negative: bool = False) -> ReplicationConfig:
        """Build from Kafka config names (`replica.lag.time.max.ms` ...); unknown names raise KeyError, a value
        of the wrong form `ConfigValueError` (with `non_negative`, also a negative number: scenarios)."""
        by_kafka = {v: k for k, v in _KAFKA_NAMES.items()}
        kwargs: dict[str, Any] = {}
        for name, raw in values.items():
            if name not in by_kafka:
                raise KeyError(f"unknown replication config {name!r}; known: {sorted(by_kafka)}")
            field_name = by_kafka[name]
            default = getattr(cls, field_name)
            if isinstance(default, bool):
                # Kafka's BOOLEAN type takes "true" / "false" in any case and nothing else.
                text = str(raw).strip().lower()
                if not isinstance(raw, bool) and text not in ("true", "false"):
                    raise ConfigValueError(name, "true or false", raw)
                kwargs[field_name] = raw if isinstance(raw, bool) else text == "true"
            elif isinstance(default, tuple):
                kwargs[field_name] = tuple(raw) if not isinstance(raw, str) else tuple(
                    p.strip() for p in raw.split(",") if p.strip())
            elif isinstance(default, int):
                kwargs[field_name] = _int_value(name, raw, 0 if non_negative else None)
            else:
                kwargs[field_name] = raw
        return cls(**kwargs)


def _int_value(name: str, raw: object, lo: int | None) -> int:
    """An INT / LONG config value: an integer or its decimal text (not a bool, not a fraction)."""
    expected = "an integer" if lo is None else f"an integer >= {lo}"
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise ConfigValueError(name, expected, raw)
    try:
        value = int(raw)
    except ValueError:
        raise ConfigValueError(name, expected, raw) from None
    if lo is not None and value < lo:
        raise ConfigValueError(name, expected, raw)
    return value
