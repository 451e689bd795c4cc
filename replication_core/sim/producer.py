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

Batches go as `Sender.sendProducerData` sends them: each waits in its partition's queue (the `RecordAccumulator`) for
`linger.ms` unless a batch is queued behind it or it is a retry whose backoff ended; a broker with such a batch gets
one request (`ProduceBatches`) with the first batch of each of its partitions that is not backing off, up to
`max.request.size`, unless `max.in.flight.requests.per.connection` requests to it await answers; a request timeout
closes the connection and fails every request in flight to that broker. `batch_per_request` (and `fresh_metadata`)
producers send each batch as its own request instead, as replog did before session 95.

Batch identity: `batch_checksum` is a bijective 64-bit mix of a run-wide sequence number, masked to
63 bits (non-negative int64), so every produced batch has its own checksum.
"""

from __future__ import annotations

import math
import random
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

from replication_core.errors import Errors
from replication_core.partition_fetch_state import TopicPartition
from replication_core.replica_manager import ProduceResult
from replication_core.sim.scenario import ProducerSpec

if TYPE_CHECKING:
    from replication_core.sim.cluster import Cluster
    from replication_core.sim.rpc import Call

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

SYN_RETRANSMITS_MS = (1000, 3000, 7000)
"""When Linux retransmits an unanswered SYN (initial RTO 1 s, doubled): the connection set-up's chances to reach a
host that comes back within `socket.connection.setup.timeout.ms`."""

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


class ProduceBatches(NamedTuple):
    """A `ProduceRequest` of several partitions' batches: what the `Sender` drains for one broker."""

    batches: tuple[ProduceRequest, ...]
    acks: int
    timeout_ms: int


class ProduceAnswer(NamedTuple):
    """A produce response's partition that carries the leader the broker's metadata names (KIP-951 `CurrentLeader`,
    Kafka 3.7+): sent with NOT_LEADER_OR_FOLLOWER by a broker that knows the partition's leader."""

    result: ProduceResult
    leader_id: int
    leader_epoch: int


class _Batch:
    """A batch in the accumulator (`ProducerBatch`): when it may go (its linger or retry backoff ends), how many
    attempts it has had, retries left and its delivery deadline."""

    __slots__ = ("attempts", "deadline_ms", "ready_ms", "req", "retries_left")

    def __init__(self, req: ProduceRequest, retries_left: int, deadline_ms: int, ready_ms: int) -> None:
        self.req = req
        self.retries_left = retries_left
        self.deadline_ms = deadline_ms
        self.ready_ms = ready_ms
        self.attempts = 0


class _InFlight:
    """A produce request awaiting its answer (an `InFlightRequests` entry): its batches and the leader epochs the
    client's metadata had for them when it was sent."""

    __slots__ = ("batches", "call", "done", "epochs", "node")

    def __init__(self, node: int, batches: list[_Batch], epochs: list[int]) -> None:
        self.node = node
        self.batches = batches
        self.epochs = epochs
        self.call: Call | None = None
        self.done = False


def _partition_number(tp: TopicPartition) -> int:
    return tp.partition


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
        # Batches waiting for their partition's leader to be known and reachable (`batch_per_request`).
        self._held: dict[TopicPartition, list[tuple[ProduceRequest, int, int]]] = {}
        # The `Sender`'s state: the accumulator's queue per partition, the requests in flight per broker, brokers
        # whose connection was refused and when to try again, connections being set up to hosts that do not answer
        # (when the attempt started, when to look next), where each broker's last drain stopped, and when the sender
        # next looks (None: nothing scheduled).
        self._queues: dict[TopicPartition, deque[_Batch]] = {}
        self._in_flight: dict[int, list[_InFlight]] = {}
        self._blocked_until: dict[int, int] = {}
        self._connecting: dict[int, tuple[int, int]] = {}
        self._drain_from: dict[int, int] = {}
        self._wake_ms: int | None = None

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
        spec = self.spec
        req = ProduceRequest(tp, records, size_bytes, self.cluster.next_checksum(), acks, spec.request_timeout_ms)
        self.sent += 1
        now = self.cluster.queue.now_ms
        if spec.fresh_metadata or spec.batch_per_request or acks != spec.acks:
            self._attempt(req, retries, now + spec.delivery_timeout_ms)
            return
        # `RecordAccumulator.append`: the batch joins its partition's queue; the sender looks when it may go.
        dq = self._queues.get(tp)
        if dq is None:
            dq = self._queues[tp] = deque()
        dq.append(_Batch(req, retries, now + spec.delivery_timeout_ms, now + spec.linger_ms))
        self._wake(now if len(dq) > 1 else now + spec.linger_ms)

    # --- the Sender ---------------------------------------------------------------------------------------------------

    def _wake(self, at_ms: int) -> None:
        """Have the sender look again at `at_ms` (`Sender.wakeup`, or its poll timeout), unless it looks sooner."""
        if self._wake_ms is not None and self._wake_ms <= at_ms:
            return
        self._wake_ms = at_ms
        self.cluster.queue.at(at_ms, self._sender_wakeup, at_ms)

    def _sender_wakeup(self, at_ms: int) -> None:
        if self._wake_ms != at_ms:
            return  # superseded by an earlier look, which scheduled what it still needed
        self._wake_ms = None
        self._send_producer_data()

    def _send_producer_data(self) -> None:
        """`Sender.sendProducerData`: fail the batches past `delivery.timeout.ms` at the head of their queues
        (`expiredBatches`); find the brokers with a sendable batch (`RecordAccumulator.ready`: a batch that lingered
        `linger.ms`, or has a batch queued behind it, or a retry whose backoff ended; a partition without a known
        leader asks for a metadata refresh); skip the brokers that cannot take a request (`NetworkClient.ready`: a
        failed connection, `max.in.flight.requests.per.connection` reached); and drain one request for each of the
        others with the first batch of each of its partitions that is not backing off, up to `max.request.size`."""
        q = self.cluster.queue
        now = q.now_ms
        spec = self.spec
        next_ms = -1
        by_node: dict[int, list[TopicPartition]] = {}
        ready: list[int] = []
        for tp in list(self._queues):
            dq = self._queues[tp]
            while dq and dq[0].deadline_ms <= now:
                dq.popleft()
                self.failed += 1
            if not dq:
                del self._queues[tp]
                continue
            head = dq[0]
            if next_ms < 0 or head.deadline_ms < next_ms:
                next_ms = head.deadline_ms
            leader = self._leader(tp)
            if leader < 0:
                # The batch waits, spending no retry, until a refresh names a leader; it looks when one may go.
                self._update_requested = True
                wait = max(self._refresh_allowed_ms(now), now + 1)
                next_ms = wait if next_ms < 0 or wait < next_ms else next_ms
                continue
            parts = by_node.get(leader)
            if parts is None:
                parts = by_node[leader] = []
            parts.append(tp)
            if head.ready_ms > now and (head.attempts > 0 or len(dq) == 1):
                next_ms = head.ready_ms if next_ms < 0 or head.ready_ms < next_ms else next_ms
            elif leader not in ready:
                ready.append(leader)
        for node in ready:
            wait = self._connect(node, now)
            if wait > now:
                next_ms = wait if next_ms < 0 or wait < next_ms else next_ms
                continue
            if len(self._in_flight.get(node, ())) >= spec.max_in_flight_requests_per_connection:
                continue  # an answer wakes the sender
            if self._drain(node, sorted(by_node[node], key=_partition_number), now):
                next_ms = now  # batches left behind by `max.request.size`: another request when the sender looks
        if next_ms >= 0:
            self._wake(max(next_ms, now))

    def _connect(self, node: int, now: int) -> int:
        """`NetworkClient.ready` for the connection to `node`: `now` when a request may go, else when to look again.
        A live host without the process refuses at once (a reset): the disconnect asks for a metadata refresh
        (`handleServerDisconnect`) and the client tries again after `retry.backoff.ms`. A host that does not answer
        leaves the connection being set up: it is made at the first of the kernel's SYN retransmissions (1, 3, 7 s
        after the attempt) that finds the process listening, or fails after `socket.connection.setup.timeout.ms`
        (10 s), which asks for a refresh and starts another attempt."""
        blocked = self._blocked_until.get(node, 0)
        if blocked > now:
            return blocked
        broker = self.cluster.brokers[node]
        connecting = self._connecting.get(node)
        if connecting is not None:
            started, look = connecting
            if now < look:
                return look
            if broker.alive:
                del self._connecting[node]
                return now
            later = [started + t for t in SYN_RETRANSMITS_MS if started + t > now]
            if later:
                self._connecting[node] = (started, later[0])
                return later[0]
            if now < started + CONNECTION_SETUP_TIMEOUT_MS:
                self._connecting[node] = (started, started + CONNECTION_SETUP_TIMEOUT_MS)
                return started + CONNECTION_SETUP_TIMEOUT_MS
            del self._connecting[node]
            self._update_requested = True
        if broker.alive:
            return now
        if broker.host_up:
            self._update_requested = True
            blocked = self._blocked_until[node] = now + max(1, self.spec.retry_backoff_ms)
            return blocked
        self._connecting[node] = (now, now + SYN_RETRANSMITS_MS[0])
        return now + SYN_RETRANSMITS_MS[0]

    def _drain(self, node: int, parts: list[TopicPartition], now: int) -> bool:
        """`RecordAccumulator.drainBatchesForOneNode`: from the partition after the one the broker's last drain
        stopped at, the first batch of each partition that is not backing off, until `max.request.size`; sent as
        one request. Returns whether a batch was left behind for the size."""
        spec = self.spec
        start_after = self._drain_from.get(node, -1)
        first = next((i for i, tp in enumerate(parts) if tp.partition > start_after), 0)
        order = parts[first:] + parts[:first]
        taken: list[_Batch] = []
        size = 0
        left = False
        for tp in order:
            dq = self._queues[tp]
            head = dq[0]
            if head.attempts > 0 and head.ready_ms > now:
                continue
            if taken and size + head.req.size_bytes > spec.max_request_size:
                left = True
                break
            dq.popleft()
            if not dq:
                del self._queues[tp]
            taken.append(head)
            size += head.req.size_bytes
            self._drain_from[node] = tp.partition
        if taken:
            self._send_request(node, taken)
        return left

    def _send_request(self, node: int, batches: list[_Batch]) -> None:
        """`Sender.sendProduceRequest`: one request of the drained batches; acks=0 expects no answer."""
        spec = self.spec
        cluster = self.cluster
        for b in batches:
            b.attempts += 1
        flight = _InFlight(node, batches, [self._epochs.get(b.req.tp, -1) for b in batches])
        if spec.acks != 0:
            self._in_flight.setdefault(node, []).append(flight)
        request = ProduceBatches(tuple([b.req for b in batches]), spec.acks, spec.request_timeout_ms)

        def on_reply(response: Any, now_ms: int) -> None:
            self._handle_produce_response(flight, response, now_ms)

        flight.call = cluster.rpc.call(self.node_id, node, request, cluster.brokers[node].handle_produce, on_reply,
                                       Errors.NETWORK_EXCEPTION.value, spec.request_timeout_ms)

    def _handle_produce_response(self, flight: _InFlight, response: Any, now_ms: int) -> None:
        """`Sender.handleProduceResponse` / `completeBatch` for each partition; a disconnect or a request timeout
        (`NetworkClient` closes the connection after `request.timeout.ms`) fails every request in flight to the
        broker (`handleDisconnections`) and asks for a metadata refresh."""
        if flight.done or self.spec.acks == 0:
            return
        flight.done = True
        pending = self._in_flight.get(flight.node)
        if pending is not None and flight in pending:
            pending.remove(flight)
        if isinstance(response, tuple):
            for b, epoch, answer in zip(flight.batches, flight.epochs, response, strict=True):
                self._complete_batch(b, epoch, answer, now_ms)
        else:
            for b, epoch in zip(flight.batches, flight.epochs, strict=True):
                self._complete_batch(b, epoch, response, now_ms)
            for other in list(self._in_flight.get(flight.node, ())):
                if other.call is not None:
                    other.call.finish(response, now_ms)
        self._wake(now_ms)

    def _complete_batch(self, b: _Batch, sent_epoch: int, answer: Any, now_ms: int) -> None:
        """`Sender.completeBatch`: acknowledged, failed, or back at the head of its partition's queue to retry
        (`canRetry`: retries left, `delivery.timeout.ms` not reached) after its backoff, or at once when the
        partition's leader epoch changed since the attempt (KIP-951's `shouldBackoff`)."""
        tp = b.req.tp
        error = self._read_answer(tp, answer, True)
        if error == Errors.NONE.value:
            self.acked += 1
            return
        if error not in RETRIABLE or b.retries_left <= 0 or now_ms >= b.deadline_ms:
            self.failed += 1
            return
        changed = self._epochs.get(tp, -1) > sent_epoch
        b.ready_ms = now_ms if changed else now_ms + max(1, self._retry_backoff_ms(self.spec.retries - b.retries_left))
        b.retries_left -= 1
        dq = self._queues.get(tp)
        if dq is None:
            dq = self._queues[tp] = deque()
        dq.appendleft(b)

    # --- one request per batch (`batch_per_request`, `fresh_metadata`) -------------------------------------------

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
            error = self._read_answer(req.tp, response, not spec.fresh_metadata)
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

    def _read_answer(self, tp: TopicPartition, answer: Any, learn: bool) -> str:
        """A partition's answer (or the request's error) as an error name; takes the leader a NOT_LEADER_OR_FOLLOWER
        answer names when `learn`, and asks for a metadata refresh after an error that says the metadata is stale."""
        if isinstance(answer, ProduceAnswer):
            if learn:
                self._learn_leader(tp, answer.leader_id, answer.leader_epoch)
            answer = answer.result
        error = answer.error if isinstance(answer, ProduceResult) else str(answer)
        if error in STALE_METADATA:
            self._update_requested = True
        return error

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
