"""Producers: a rate of batches, keys spread over partitions, acks 0 / 1 / all, retries.

Mirrors the parts of `KafkaProducer` / `Sender` that matter to replication: a batch is sent to the
partition leader named by the client's metadata (`Metadata`): the leaders as of its last refresh, which
happens before the first send, after an error that marks the metadata stale (`InvalidMetadataException`:
NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR; a disconnect or a request timeout,
`NetworkClient`'s `requestUpdate`; a partition without a leader, LEADER_NOT_AVAILABLE in the answer) and every
`metadata.max.age.ms`, but never sooner than `Metadata.timeToAllowUpdate` allows: `retry.backoff.ms` after the
last refresh, and while refreshes bring no newer leader epoch (equivalent responses, KIP-580) a backoff that
doubles up to `retry.backoff.max.ms`, with jitter. A refresh reads the controller's current view (a metadata
request to any broker, whose cache is a few ms behind at most). So a leader cut off from the controller but not
from its clients keeps getting writes until it learns it was replaced, as in Kafka. acks=0 does not wait, acks=1 /
all wait for the answer, and a
retriable error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, a lost request) is
retried up to `retries` times with the same batch (same checksum), after a backoff that doubles from
`retry.backoff.ms` to `retry.backoff.max.ms` with ±20 % jitter (KIP-580), or at once when a NOT_LEADER_OR_FOLLOWER
answer named a newer leader (KIP-951, `ProduceAnswer`), so a retried batch may appear twice in a log, as without
idempotence. Every answer the leader gives is a
`produce_ack` event emitted by the engine's ReplicaManager, whether or not it reaches the producer.

Batch identity: `batch_checksum` is a bijective 64-bit mix of a run-wide sequence number, masked to
63 bits (non-negative int64), so every produced batch has its own checksum.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Any, NamedTuple

from replication_core.errors import Errors
from replication_core.partition_fetch_state import TopicPartition
from replication_core.replica_manager import ProduceResult
from replication_core.sim.scenario import ProducerSpec

if TYPE_CHECKING:
    from replication_core.sim.cluster import Cluster

CLIENT_ID_BASE = 2000
"""Network node ids of producers (brokers are 1..N, the controller 1000+)."""

RETRIABLE = frozenset({
    Errors.NOT_LEADER_OR_FOLLOWER.value, Errors.NOT_ENOUGH_REPLICAS.value,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND.value, Errors.REQUEST_TIMED_OUT.value,
    Errors.NETWORK_EXCEPTION.value, Errors.UNKNOWN_TOPIC_OR_PARTITION.value, Errors.KAFKA_STORAGE_ERROR.value,
})


BACKOFF_MULTIPLIER = 2
BACKOFF_JITTER = 0.2
"""`CommonClientConfigs.RETRY_BACKOFF_EXP_BASE` and `RETRY_BACKOFF_JITTER` (KIP-580)."""

CONNECTION_SETUP_TIMEOUT_MS = 10000
"""`socket.connection.setup.timeout.ms`: how long a client waits for a connection to a host that does not answer."""

STALE_METADATA = frozenset({
    Errors.NOT_LEADER_OR_FOLLOWER.value, Errors.UNKNOWN_TOPIC_OR_PARTITION.value, Errors.KAFKA_STORAGE_ERROR.value,
    Errors.NETWORK_EXCEPTION.value,
})
"""Errors after which the client refreshes its metadata: the `InvalidMetadataException`s `Sender.completeBatch`
answers with `requestUpdate`, and this simulator's answer to a disconnect or a request timeout."""


class ProduceRequest(NamedTuple):
    """One partition's batch of a `ProduceRequest`."""

    tp: TopicPartition
    records: int
    size_bytes: int
    checksum: int
    acks: int
    timeout_ms: int


class ProduceAnswer(NamedTuple):
    """A produce response's partition that carries the leader the broker's metadata names (KIP-951 `CurrentLeader`,
    Kafka 3.7+): sent with NOT_LEADER_OR_FOLLOWER by a broker that knows the partition's leader."""

    result: ProduceResult
    leader_id: int
    leader_epoch: int


def batch_checksum(seq: int) -> int:
    """A checksum-looking unique id for batch number `seq` (splitmix64 finaliser, 63 bits)."""
    z = (seq + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFF


class Producer:
    """A client producing at `rate_per_s` batches per second (Poisson arrivals from the seeded RNG)."""

    def __init__(self, index: int, spec: ProducerSpec, cluster: Cluster, rng: random.Random) -> None:
        self.node_id = CLIENT_ID_BASE + index
        self.spec = spec
        self.cluster = cluster
        self.rng = rng
        self.partitions = next(t.partitions for t in cluster.scenario.topics if t.name == spec.topic)
        self.sent = 0
        self.acked = 0
        self.failed = 0
        # The client's metadata: the leaders of its last refresh (partitions of other topics, which only scripted
        # writes use, as first looked up since), when that was (`lastRefreshMs`, 0 before the first), and whether
        # an error asked for a refresh.
        self._leaders: dict[TopicPartition, int] = {}
        self.refreshed_ms = 0
        self._update_requested = True
        # `Metadata`'s backoff state: the leader epochs of the last refresh (`lastSeenLeaderEpochs`), how many
        # refreshes in a row brought no newer one (`equivalentResponseCount`), and when the refresh wanted now may go
        # (drawn once per wanted refresh, as the client's `timeToAllowUpdate` would find it; None: not drawn yet).
        self._epochs: dict[TopicPartition, int] = {}
        self._equivalent = 0
        self._allowed_ms: int | None = None
        # Batches waiting for their partition's leader to be known and reachable (the accumulator's queues).
        self._held: dict[TopicPartition, list[tuple[ProduceRequest, int, int]]] = {}

    def start(self) -> None:
        """Schedule the first batch."""
        if self.spec.rate_per_s > 0:
            self.cluster.queue.at(self.cluster.start_ms + self.spec.start_ms, self._tick)

    def _tick(self) -> None:
        q = self.cluster.queue
        spec = self.spec
        if spec.stop_ms is not None and q.now_ms >= self.cluster.start_ms + spec.stop_ms:
            return
        key = self.rng.randrange(spec.keys)
        # Keyed partitioning: a fixed multiplicative hash of the key (murmur2 in Kafka; any fixed hash
        # spreads keys the same way for this purpose).
        partition = ((key * 2654435761) & 0xFFFFFFFF) % self.partitions
        self.send(TopicPartition(spec.topic, partition), spec.acks, spec.records_per_batch,
                  spec.records_per_batch * spec.record_bytes, spec.retries)
        gap = self.rng.expovariate(spec.rate_per_s / 1000.0)
        q.after(max(1, int(gap)), self._tick)

    def send(self, tp: TopicPartition, acks: int, records: int, size_bytes: int, retries: int) -> None:
        """Send one new batch (also used for scripted `produce` actions)."""
        req = ProduceRequest(tp, records, size_bytes, self.cluster.next_checksum(), acks,
                             self.spec.request_timeout_ms)
        self.sent += 1
        self._attempt(req, retries, self.cluster.queue.now_ms + self.spec.delivery_timeout_ms)

    def _leader(self, tp: TopicPartition) -> int:
        """The partition's leader as the client's metadata names it, refreshed first if it is stale or too old."""
        controller = self.cluster.controller
        if self.spec.fresh_metadata:
            return controller.leader_of(tp)
        now = self.cluster.queue.now_ms
        if ((self._update_requested or now - self.refreshed_ms >= self.spec.metadata_max_age_ms)
                and now >= self._refresh_allowed_ms(now)):
            self._refresh(now)
        leader = self._leaders.get(tp)
        if leader is None:
            leader = self._leaders[tp] = controller.leader_of(tp)
        return leader

    def _refresh(self, now_ms: int) -> None:
        """`Metadata.update` with the controller's view of the topic: every partition's leader; the equivalent
        response count grows unless a partition shows a newer leader epoch (`updateLatestMetadata`), and a partition
        without a leader (LEADER_NOT_AVAILABLE) asks for the next refresh at once (`requestUpdate(false)`)."""
        partitions = self.cluster.controller.partitions
        topic = self.spec.topic
        self._equivalent += 1
        self._leaders = {}
        epochs = self._epochs
        leaderless = False
        for p in range(self.partitions):
            part = TopicPartition(topic, p)
            info = partitions[part]
            self._leaders[part] = info.leader
            leaderless = leaderless or info.leader < 0
            if info.leader_epoch > epochs.get(part, -1):
                epochs[part] = info.leader_epoch
                self._equivalent = 0
        self.refreshed_ms = now_ms
        self._allowed_ms = None
        self._update_requested = leaderless

    def _refresh_allowed_ms(self, now_ms: int) -> int:
        """`Metadata.timeToAllowUpdate` as a time: `retry.backoff.ms` after the last refresh (the attempts' backoff,
        with no failed attempt), or later after `n` equivalent responses in a row, the `n - 1`th step of the
        exponential backoff; the count starts again once the metadata has expired (`metadata.max.age.ms`). Drawn
        when a refresh is first wanted after the last one (the draws come from the run's RNG, so a run whose
        producers never need a refresh draws nothing)."""
        if self._allowed_ms is None:
            if self.refreshed_ms == 0:
                self._allowed_ms = 0
            else:
                if now_ms - self.refreshed_ms >= self.spec.metadata_max_age_ms:
                    self._equivalent = 0
                wait = self._retry_backoff_ms(0)
                if self._equivalent > 0:
                    wait = max(wait, self._retry_backoff_ms(self._equivalent - 1))
                self._allowed_ms = self.refreshed_ms + wait
        return self._allowed_ms

    def _attempt(self, req: ProduceRequest, retries_left: int, deadline_ms: int) -> None:
        cluster = self.cluster
        spec = self.spec
        if not spec.fresh_metadata and cluster.queue.now_ms >= deadline_ms:
            # `RecordAccumulator.expiredBatches`: `delivery.timeout.ms` since the batch was made.
            self.failed += 1
            return
        leader = self._leader(req.tp)
        if leader < 0:
            if spec.fresh_metadata:
                self._retry_or_fail(req, retries_left, deadline_ms)
                return
            # No leader known: the batch stays in the accumulator, spending no retry, until a metadata refresh names one
            # (`RecordAccumulator.ready`'s unknown leader topics): it looks again when the next refresh may go.
            now = cluster.queue.now_ms
            self._hold(req, retries_left, deadline_ms, self._refresh_allowed_ms(now) - now)
            return
        broker = cluster.brokers[leader]
        if not spec.fresh_metadata and not broker.alive:
            # Nothing listens at the leader's address: the connection is refused at once by a live host, or its set-up
            # times out (`socket.connection.setup.timeout.ms`) on a dead one. The batch is not sent (`client.ready`
            # is false), and the disconnect asks for a metadata refresh (`handleServerDisconnect`).
            self._hold(req, retries_left, deadline_ms,
                       spec.retry_backoff_ms if broker.host_up else CONNECTION_SETUP_TIMEOUT_MS)
            return

        # The leader epoch the client's metadata had for the partition when it sent this attempt (the batch's
        # `currentLeaderEpoch`).
        sent_epoch = self._epochs.get(req.tp, -1)

        def on_reply(response: Any, now_ms: int) -> None:
            if req.acks == 0:
                return
            if isinstance(response, ProduceAnswer):
                if not spec.fresh_metadata:
                    self._learn_leader(req.tp, response.leader_id, response.leader_epoch)
                response = response.result
            error = response.error if isinstance(response, ProduceResult) else str(response)
            if error in STALE_METADATA:
                self._update_requested = True
            if error == Errors.NONE.value:
                self.acked += 1
            elif error in RETRIABLE:
                # `RecordAccumulator.shouldBackoff` (KIP-951): no backoff for a retry whose partition's leader epoch
                # changed in the metadata since the attempt.
                changed = not spec.fresh_metadata and self._epochs.get(req.tp, -1) > sent_epoch
                self._retry_or_fail(req, retries_left, deadline_ms, backoff=not changed)
            else:
                self.failed += 1

        # `NetworkClient` gives up on a request `request.timeout.ms` after sending it, the same time the broker's
        # DelayedProduce waits from its arrival: the client's timeout (a disconnect) comes before the broker's
        # REQUEST_TIMED_OUT can arrive. A `fresh_metadata` client waits a second more, as replog's did before.
        timeout_ms = spec.request_timeout_ms + 1000 if spec.fresh_metadata else spec.request_timeout_ms
        cluster.rpc.call(self.node_id, leader, req, broker.handle_produce, on_reply, Errors.NETWORK_EXCEPTION.value,
                         timeout_ms)

    def _hold(self, req: ProduceRequest, retries_left: int, deadline_ms: int, wait_ms: int) -> None:
        """Keep the batch in the partition's queue of the accumulator and look again after `wait_ms`: one look per
        partition sends (or expires) every batch it holds, in order."""
        self._update_requested = True
        held = self._held.get(req.tp)
        if held is None:
            held = self._held[req.tp] = []
            self.cluster.queue.after(max(1, wait_ms), self._release, req.tp)
        held.append((req, retries_left, deadline_ms))

    def _release(self, tp: TopicPartition) -> None:
        for req, retries_left, deadline_ms in self._held.pop(tp, []):
            self._attempt(req, retries_left, deadline_ms)

    def _learn_leader(self, tp: TopicPartition, leader_id: int, leader_epoch: int) -> None:
        """`Metadata.updatePartitionLeadership`: take the leader a response names when its epoch is newer than the one
        the metadata has (no refresh: the equivalent response count stays)."""
        if leader_id >= 0 and leader_epoch > self._epochs.get(tp, -1):
            self._epochs[tp] = leader_epoch
            self._leaders[tp] = leader_id

    def _retry_or_fail(self, req: ProduceRequest, retries_left: int, deadline_ms: int, backoff: bool = True) -> None:
        """`Sender.canRetry`: retries left (and, with the client's metadata, `delivery.timeout.ms` not reached, which
        `_attempt` checks when the backoff ends); the retry goes after the backoff, or at once (`backoff` false)."""
        if retries_left <= 0:
            self.failed += 1
            return
        if not backoff:
            self.cluster.queue.at(self.cluster.queue.now_ms, self._attempt, req, retries_left - 1, deadline_ms)
            return
        self.cluster.queue.after(max(1, self._retry_backoff_ms(self.spec.retries - retries_left)), self._attempt, req,
                                 retries_left - 1, deadline_ms)

    def _retry_backoff_ms(self, spent: int) -> int:
        """The wait before a batch's retry after `spent` earlier ones: KIP-580's `ExponentialBackoff` (Kafka 3.7+):
        `retry.backoff.ms` doubled per retry, times a jitter drawn from [0.8, 1.2), capped at `retry.backoff.max.ms`;
        fixed when the cap is not above the base (and for `fresh_metadata`, as replog's producers did before)."""
        spec = self.spec
        base, cap = spec.retry_backoff_ms, spec.retry_backoff_max_ms
        if spec.fresh_metadata or cap <= base or base <= 0:
            return base
        exp_max = math.log(cap / base) / math.log(BACKOFF_MULTIPLIER)
        term = base * BACKOFF_MULTIPLIER ** min(max(spent, 0), exp_max)
        value = int(self.rng.uniform(1 - BACKOFF_JITTER, 1 + BACKOFF_JITTER) * term)
        return min(value, cap)
