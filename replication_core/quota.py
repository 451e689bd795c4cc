"""Replication quotas (KIP-73): Kafka's `ReplicationQuotaManager` and the two throttle predicates.

Contract (reference §4): the measured rate is a `SimpleRate` over a `WindowedSum` of windows of
`window_size_ms` (Kafka `SampledStat`, trunk): a record goes into the current sample and stamps its
`lastEventMs`; a new sample starts when the current one is at least one window old, in a ring of
`num_samples + 1` slots ("need to keep one extra sample"); before measuring, samples whose last
event is `num_samples x window` old or more are reset (a sample that started before the monitored
window but has an event inside it is kept), and the rate is the sum divided by
`max(now - oldest sample start, one window)`. The quota is exceeded only when the rate is
**strictly** above the bound; until a bound is set nothing is ever exceeded. Time is virtual:
every method that reads or records takes `now_ms`.

Who is throttled: the leader blanks records for `not in ISR and throttled and exceeded`
(`ReplicaManager.shouldLeaderThrottle`); the follower leaves a partition out of its fetch for
`not in sync (lag) and throttled and exceeded` (`ReplicaFetcherThread.shouldFollowerThrottle`).

What is recorded differs by side. The leader records, after every follower fetch response, the size of
a fetch response (of the request's version) holding only the throttled partitions, in-sync followers'
included: record bytes plus per-response, per-topic and per-partition framing, and a non-zero size even
when no partition is throttled (`KafkaApis.sizeOfThrottledPartitions` = `FetchResponse.sizeOf`, see
`fetch_response_size`). The follower records the record bytes of each throttled partition it receives
(`ReplicaFetcherThread.processPartitionData`: `records.sizeInBytes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mypy_extensions import mypyc_attr

from replication_core.config import ReplicationConfig
from replication_core.events import Event, make_event
from replication_core.fetch_response_size import size_of_throttled_partitions

LONG_MAX = 2**63 - 1
LEADER = "leader"
FOLLOWER = "follower"


@dataclass(frozen=True)
class QuotaConfig:
    """`ReplicationQuotaManagerConfig`: `replication.quota.window.num` and `.window.size.seconds`."""

    num_samples: int = 11
    window_size_ms: int = 1000

    def __post_init__(self) -> None:
        if self.num_samples < 1 or self.window_size_ms < 1:
            raise ValueError(f"quota windows must be positive, got {self}")

    @classmethod
    def from_replication_config(cls, config: ReplicationConfig) -> QuotaConfig:
        """`replication.quota.window.num` / `replication.quota.window.size.seconds` of a broker config."""
        return cls(config.replication_quota_window_num, config.replication_quota_window_size_seconds * 1000)


class _Sample:
    """`SampledStat.Sample`: a value, the start of its window and the time of its last event."""

    __slots__ = ("last_event_ms", "start_ms", "value")

    def __init__(self, start_ms: int) -> None:
        self.start_ms = start_ms
        self.last_event_ms = start_ms
        self.value = 0.0

    def reset(self, now_ms: int) -> None:
        """`Sample.reset(now)`: an empty sample starting (and last seen) at `now_ms`."""
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0


class SampledRate:
    """Kafka `SimpleRate` over `WindowedSum` (trunk `SampledStat`: a ring of `num_samples + 1` samples)."""

    def __init__(self, config: QuotaConfig) -> None:
        self._config = config
        self._samples: list[_Sample] = []
        self._current = 0

    def _current_sample(self, now_ms: int) -> _Sample:
        """`SampledStat.current(timeMs)`: the first sample is created on first use."""
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def record(self, value: float, now_ms: int) -> None:
        """`SampledStat.record`: add to the current sample (advancing when it is complete), stamp `lastEventMs`."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self._config.window_size_ms:  # Sample.isComplete (no event window)
            # SampledStat.advance: `maxSamples = config.samples() + 1` ("need to keep one extra sample").
            self._current = (self._current + 1) % (self._config.num_samples + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """`Rate.measure` with `SimpleRate.windowSize`: bytes per second over the retained samples."""
        # SampledStat.purgeObsoleteSamples: "samples overlapping the monitored window are kept, even if
        # they started before it" -- the age is that of the sample's last event, not of its start.
        expire_age = self._config.num_samples * self._config.window_size_ms
        for s in self._samples:
            if now_ms - s.last_event_ms >= expire_age:
                s.reset(now_ms)
        if not self._samples:
            # SampledStat.oldest() creates the first sample when measured before any record.
            self._samples.append(_Sample(now_ms))
        total = sum(s.value for s in self._samples)  # WindowedSum.combine
        oldest = min(s.start_ms for s in self._samples)  # SampledStat.oldest: by start time
        elapsed_ms = max(now_ms - oldest, self._config.window_size_ms)
        return total / (elapsed_ms / 1000.0)


def _parse_throttled(entries: Iterable[str], broker_id: int) -> list[int] | None:
    """`ConfigHandler.parseThrottledPartitions`: `*` -> None (all), else partitions led/followed here."""
    parts: list[int] = []
    for raw in entries:
        entry = raw.strip()
        if entry == "*":
            return None
        if not entry:
            continue
        partition, broker = entry.split(":")
        if int(broker) == broker_id:
            parts.append(int(partition))
    return parts


# Compiled with mypyc, a class that tests subclass in Python needs allow_interpreted_subclasses.
@mypyc_attr(allow_interpreted_subclasses=True)
class ReplicationQuotaManager:
    """Kafka `ReplicationQuotaManager` (`ReplicaQuota`): throttled-partition lists plus a byte-rate bound."""

    def __init__(self, side: str, broker_id: int, config: QuotaConfig | None = None,
                 emit: Callable[[Event], None] | None = None) -> None:
        if side not in (LEADER, FOLLOWER):
            raise ValueError(f"side must be {LEADER!r} or {FOLLOWER!r}, got {side!r}")
        self.side = side
        self.broker_id = broker_id
        self.config = config or QuotaConfig()
        self._rate = SampledRate(self.config)
        self._bound: float | None = None
        # None value = wildcard (Kafka's AllReplicas sentinel Seq(-1)).
        self._throttled: dict[str, frozenset[int] | None] = {}
        self._emit = emit

    @classmethod
    def from_config(cls, side: str, broker_id: int, config: ReplicationConfig,
                    emit: Callable[[Event], None] | None = None) -> ReplicationQuotaManager:
        """`QuotaFactory`: a manager with the broker's windows and its `*.replication.throttled.rate`."""
        manager = cls(side, broker_id, QuotaConfig.from_replication_config(config), emit)
        rate = (config.leader_replication_throttled_rate if side == LEADER
                else config.follower_replication_throttled_rate)
        manager.update_quota(float(rate))
        return manager

    # --- configuration ------------------------------------------------------------------------

    def update_quota(self, bound: float | None) -> None:
        """`updateQuota(Quota.upperBound(rate))`; None removes the quota (never exceeded)."""
        self._bound = bound

    def upper_bound(self) -> float:
        """`upperBound`: the bound, or `Long.MAX_VALUE` when none is set."""
        return float(LONG_MAX) if self._bound is None else self._bound

    def mark_throttled(self, topic: str, partitions: Iterable[int] | None = None) -> None:
        """`markThrottled(topic[, partitions])`: replace the topic's list; no partitions = wildcard `*`."""
        self._throttled[topic] = None if partitions is None else frozenset(partitions)

    def mark_throttled_from_config(self, topic: str, entries: Iterable[str]) -> None:
        """Apply a `*.replication.throttled.replicas` topic config (`partition:broker` list or `*`)."""
        entries = list(entries)
        if not any(e.strip() for e in entries):
            self.remove_throttle(topic)
            return
        parsed = _parse_throttled(entries, self.broker_id)
        self.mark_throttled(topic, parsed)

    def remove_throttle(self, topic: str) -> None:
        """`removeThrottle(topic)`."""
        self._throttled.pop(topic, None)

    # --- queries and recording ----------------------------------------------------------------

    def throttles_any(self) -> bool:
        """True if some topic has throttled replicas; when False, `is_throttled` is False for every
        partition (hot paths test this once per request instead of once per partition)."""
        return bool(self._throttled)

    def is_throttled(self, topic: str, partition: int) -> bool:
        """`isThrottled(tp)`: the topic's list is `*` or contains the partition."""
        if topic not in self._throttled:
            return False
        parts = self._throttled[topic]
        return parts is None or partition in parts

    def record(self, num_bytes: int, now_ms: int) -> None:
        """`record(value)`: add bytes to the rate; never fails, even above the quota."""
        self._rate.record(float(num_bytes), now_ms)

    def rate(self, now_ms: int) -> float:
        """Measured `byte-rate` at `now_ms`."""
        return self._rate.measure(now_ms)

    def is_quota_exceeded(self, now_ms: int) -> bool:
        """`isQuotaExceeded`: rate strictly above the bound (`Quota.acceptable` is `rate <= bound`)."""
        if self._bound is None:
            return False
        return not (self._rate.measure(now_ms) <= self._bound)

    def throttle_event(self, now_ms: int, topic: str, partition: int, leader_epoch: int | None,
                       follower_id: int, num_bytes: int) -> Event:
        """A `quota_throttle` event: traffic of `follower_id` held back on this side."""
        return make_event("quota_throttle", now_ms, self.broker_id, topic, partition, leader_epoch,
                          role=self.side, follower_id=follower_id, bytes=num_bytes,
                          measured_rate=self._rate.measure(now_ms), quota_bound=self.upper_bound())

    def emit_throttle(self, now_ms: int, topic: str, partition: int, leader_epoch: int | None,
                      follower_id: int, num_bytes: int) -> None:
        """Emit `throttle_event(...)` through this manager's sink (if it has one)."""
        if self._emit is not None:
            self._emit(self.throttle_event(now_ms, topic, partition, leader_epoch, follower_id, num_bytes))


def should_leader_throttle(quota: ReplicationQuotaManager, topic: str, partition: int, follower_in_isr: bool,
                           now_ms: int) -> bool:
    """`ReplicaManager.shouldLeaderThrottle`: out of ISR, throttled, and the leader quota exceeded."""
    return not follower_in_isr and quota.is_throttled(topic, partition) and quota.is_quota_exceeded(now_ms)


def should_follower_throttle(quota: ReplicationQuotaManager, topic: str, partition: int,
                             replica_in_sync: bool, now_ms: int) -> bool:
    """`ReplicaFetcherThread.shouldFollowerThrottle`: not in sync (lag), throttled, quota exceeded."""
    return not replica_in_sync and quota.is_throttled(topic, partition) and quota.is_quota_exceeded(now_ms)


def leader_throttled_partitions(quota: ReplicationQuotaManager, partitions: Iterable[tuple[str, int]],
                                follower_in_isr: bool, now_ms: int) -> list[bool]:
    """Per partition, in request order, whether the leader blanks its records for this follower fetch.

    `ReplicaManager.readFromLog` evaluates `shouldLeaderThrottle` partition by partition, so a quota
    that becomes exceeded part-way through a response blanks only the later throttled partitions.
    """
    return [should_leader_throttle(quota, topic, partition, follower_in_isr, now_ms)
            for topic, partition in partitions]


def record_leader_throttled_bytes(quota: ReplicationQuotaManager, version: int,
                                  partitions: Iterable[tuple[str, int, int, bool]], now_ms: int) -> int:
    """`KafkaApis.sizeOfThrottledPartitions` + `quotas.leader.record`: after a follower fetch response of
    `version` is built, record the size of a response holding only its throttled partitions (in-sync or
    not; framing included, see `fetch_response_size`); returns the size recorded. `partitions` are the
    response's (topic, partition, record bytes, whether a DivergingEpoch is set), in response order."""
    size = size_of_throttled_partitions(version, partitions, quota.is_throttled)
    quota.record(size, now_ms)
    return size
