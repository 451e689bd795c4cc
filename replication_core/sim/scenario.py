"""Scenarios: YAML data loaded and validated into frozen dataclasses.

A scenario is data (issue 4): cluster size, topics, broker configs (Kafka names, Kafka defaults from
`ReplicationConfig`), truncation mode, workload, fault schedule or nemesis, duration and seed. Every
validation error is a `ScenarioError` naming the key path and the expected form, e.g.
`topics[0].replication_factor: expected an integer in 1..3 (the broker count), got 5`.

Times in a scenario (`faults[].at_ms`, `duration_ms`) are relative to the run start; the virtual clock
itself starts at `start_ms` (default well above `replica.lag.time.max.ms`: near 0, replicas that never
fetched would count as caught up).
"""

from __future__ import annotations

import builtins
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from replication_core.config import ConfigValueError, ReplicationConfig, TruncationMode
from replication_core.log import DEFAULT_SEGMENT_BYTES

DEFAULT_START_MS = 1_700_000_000_000
"""Virtual epoch of every run (2023-11-14), far above any lag bound."""

TOPIC_CONFIG_KEYS = (
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
"""Topic-level overrides (`TopicConfig`) a scenario may set."""

FAULT_ACTIONS = (
    "crash", "restart", "partition", "heal", "pause", "disk_stall", "controlled_shutdown", "reassign",
    "produce", "flush",
)
NEMESIS_FAULTS = ("crash", "partition", "pause", "disk_stall", "controlled_shutdown")
"""The nemesis's fault kinds by default."""
OPTIONAL_NEMESIS_FAULTS = ("correlated_crash", "reassign")
"""Kinds a scenario may also list in `nemesis.faults`. `correlated_crash`: two brokers' processes crash at the
same instant (a rack or zone losing power to its brokers but not their disks: the page cache is kept), each
restarted after its own drawn duration; with fewer than three brokers it is a single crash. `reassign`: one
partition is moved to as many brokers drawn at random, in random order (an operator's reassignment, possibly
back onto brokers it left; not undone, and it may start while an earlier one is still in progress)."""
CRASH_MODES = ("power", "process")
TOP_LEVEL_KEYS = (
    "name", "description", "seed", "duration_ms", "start_ms", "truncation_mode", "cluster", "broker_config",
    "topics", "network", "disk", "workload", "faults", "nemesis", "output",
)
"""The keys of a scenario document, checked before any is read: a misspelt key (`duraton_ms`) is then
reported as itself rather than as the required key it was meant to be."""


class ScenarioError(ValueError):
    """A scenario failed validation; the message names the key and the expected form."""

    def __init__(self, key: str, expected: str, got: object = None) -> None:
        shown = "" if got is None else f", got {got!r}"
        super().__init__(f"{key}: expected {expected}{shown}")
        self.key = key


def mode_from_text(text: str) -> TruncationMode:
    """`high-watermark` / `leader-epoch-v0` / `leader-epoch` / `diverging-epoch` (or with underscores)."""
    try:
        return TruncationMode(text.replace("-", "_"))
    except ValueError as exc:
        raise ScenarioError("truncation_mode", "one of " + ", ".join(m.value.replace("_", "-")
                                                                  for m in TruncationMode), text) from exc


def mode_to_text(mode: TruncationMode) -> str:
    """The CLI spelling of a truncation mode (`diverging-epoch`)."""
    return mode.value.replace("_", "-")


# --- value types ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Latency:
    """A link latency distribution in ms: `constant` (value), `uniform` (min..max), `exponential`
    (min + exponential with the given mean)."""

    dist: str = "uniform"
    value: float = 1.0
    min: float = 1.0
    max: float = 3.0
    mean: float = 1.0


@dataclass(frozen=True)
class LinkSpec:
    """A per-link override (directed: `from` -> `to`; node ids are broker ids or the controller id)."""

    src: int
    dst: int
    latency: Latency | None
    loss: float | None


@dataclass(frozen=True)
class NetworkSpec:
    """Default latency and loss of every link, plus overrides."""

    latency: Latency = field(default_factory=Latency)
    loss: float = 0.0
    links: tuple[LinkSpec, ...] = ()
    rpc_timeout_ms: int = 30000
    """Client `request.timeout.ms` of the controller channel and heartbeats (brokers' fetches use
    `replica.socket.timeout.ms`)."""


@dataclass(frozen=True)
class TopicSpec:
    """A topic: partitions, replication factor and its config overrides (Kafka names)."""

    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)
    assignment: tuple[tuple[int, ...], ...] = ()
    """Explicit replica lists per partition (first = preferred leader); empty = round robin."""


@dataclass(frozen=True)
class ProducerSpec:
    """A producer: rate, key spread, acks, retries (`KafkaProducer` essentials)."""

    topic: str
    rate_per_s: float
    acks: int = -1
    keys: int = 1000
    records_per_batch: int = 1
    record_bytes: int = 100
    retries: int = 5
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    """`retry.backoff.max.ms` (KIP-580, Kafka 3.7+): a batch's retries back off exponentially from `retry_backoff_ms`
    (doubling, with ±20 % jitter) up to this; not above `retry_backoff_ms`, a fixed backoff."""
    request_timeout_ms: int = 30000
    start_ms: int = 1000
    """When it starts producing: by default one second in, once the brokers have their partitions
    (a client's first metadata request would otherwise find no leader yet)."""
    stop_ms: int | None = None
    metadata_max_age_ms: int = 300000
    """`metadata.max.age.ms`: the client sends to the leaders its metadata named at its last refresh, refreshed after
    an error that says the metadata is stale (NOT_LEADER_OR_FOLLOWER, a disconnect or timeout, ...) and at least this
    often."""
    delivery_timeout_ms: int = 120000
    """`delivery.timeout.ms`: a batch not acknowledged this long after it was made fails, whatever retries are left.
    A batch whose partition has no known leader, or whose leader's address refuses connections, waits for the
    metadata to name one without spending a retry."""
    fresh_metadata: bool = False
    """True: every attempt goes to the controller's current leader and spends a retry when there is none, a request
    to a dead process waits out its timeout, retries back off a fixed `retry_backoff_ms`, no delivery timeout
    applies, and a request is given up `request_timeout_ms` + 1 s after it was sent (so the broker's REQUEST_TIMED_OUT
    comes first), as replog's producers did before session 93 (tests pin seeds found then; scripted `produce`
    actions use it, so that they reach the current leader). It implies `batch_per_request`."""
    linger_ms: int = 5
    """`linger.ms` (5 since Kafka 4.0, KIP-1030): a new batch waits this long for company unless its partition has
    another batch queued behind it; a drain for its leader takes it earlier."""
    max_in_flight_requests_per_connection: int = 5
    """`max.in.flight.requests.per.connection`: produce requests awaiting an answer from one broker (acks=0 ones
    count only while they are sent); the `Sender` drains nothing for a broker at the limit."""
    max_request_size: int = 1048576
    """`max.request.size`: a drain stops adding batches to a broker's request at this many bytes (the first batch
    always goes)."""
    batch_per_request: bool = False
    """True: every batch goes as its own request the moment it is made or retried, with no in-flight limit, and a
    request timeout fails only its own batch, as replog's producers did before session 95 modelled the `Sender`
    (one request per broker with each ready partition's first batch). The seeds tests pinned before then reproduce
    their runs with it (`tests.sim.campaign.before_sender`)."""


@dataclass(frozen=True)
class Fault:
    """One scheduled fault or scripted action at `at_ms` (relative to the run start)."""

    at_ms: int
    action: str
    broker: int | None = None
    mode: str = "power"
    down_ms: int | None = None
    duration_ms: int = 0
    src: tuple[int, ...] = ()
    dst: tuple[int, ...] = ()
    two_way: bool = True
    topic: str | None = None
    partition: int | None = None
    replicas: tuple[int, ...] = ()
    throttle_rate: int | None = None
    acks: int = -1
    records: int = 1
    bytes: int = 100
    batches: int = 1


@dataclass(frozen=True)
class NemesisSpec:
    """Random faults drawn from the run's seeded RNG: one every `min_interval_ms..max_interval_ms`,
    each healed / restarted after `min_duration_ms..max_duration_ms`; the last `quiet_ms` of the run
    is fault-free and heals everything so the cluster can converge. By default a fault starts only after
    the previous one is undone and the cluster is fully replicated again; with `overlap` the next one is
    drawn an interval after the previous one's start and applied then, whatever state the cluster is in."""

    faults: tuple[str, ...] = NEMESIS_FAULTS
    min_interval_ms: int = 2000
    max_interval_ms: int = 8000
    min_duration_ms: int = 500
    max_duration_ms: int = 6000
    quiet_ms: int = 20000
    crash_modes: tuple[str, ...] = CRASH_MODES
    overlap: bool = False
    throttle_rates: tuple[int, ...] = ()
    """Replication quotas for the drawn reassignments (bytes per second): each is throttled at one of these,
    drawn with it, as `kafka-reassign-partitions --throttle` sets them; empty = unthrottled."""


@dataclass(frozen=True)
class ClusterSpec:
    """Cluster shape and controller timing (KRaft `broker.session.timeout.ms` etc.)."""

    brokers: int
    controller_id: int = 1000
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    controller_retry_ms: int = 100
    fence_on_reregistration: bool = True
    """KRaft: a broker registering with a new incarnation is fenced (leaves every ISR) first; false =
    ZooKeeper-era behaviour, a restart shorter than the session timeout goes unnoticed."""
    broker_epochs: bool = True
    """KRaft, KIP-903 (Kafka 3.5+): fetches carry the broker epoch, the leader's AlterPartition the epoch
    each ISR member fetched with, and the controller rejects a member whose epoch is not its registration's;
    false = no broker epochs (as Kafka 3.3-3.4), and the controller checks only the ISR members a proposal adds
    for fencing, as replog did before it modelled KIP-903 (tests pin seeds found then). No effect with
    `fence_on_reregistration: false` (ZooKeeper mode sends no epochs)."""
    metadata_deltas: bool = True
    """KRaft: each metadata delivery to a broker carries everything committed for it when it was sent, applied
    as one delta (a broker reads the metadata log from its offset; `MetadataLoader.handleCommit` publishes one
    delta per read), and a broker back from a GC pause applies what reached it during the pause as one delta too.
    false = one update per delivery, in order, the head again alone after a lost one (as the
    ZooKeeper-era controller's LeaderAndIsr requests go, and as replog's KRaft mode did before session 66:
    tests pin seeds found then). No effect with `fence_on_reregistration: false`, which always sends one at a
    time."""
    kraft_lifecycle: bool = True
    """KRaft's broker lifecycle (Kafka 4.x; no effect with `fence_on_reregistration: false`): the controller checks
    sessions eight times per session timeout, refuses a new incarnation's registration while the previous one's
    session is valid (the broker asks again every heartbeat interval), and registers it fenced, unfencing it on its
    first heartbeat after its first metadata publish. A controlled shutdown (since session 93) is asked for in the
    broker's heartbeats and ends when the controller answers SHUTDOWN_NOW: once the broker leads nothing and every
    active broker has reported the metadata that moved its leadership (at most 5 minutes). false = as replog did
    before session 92 (tests pin seeds found then): sessions checked every quarter session, a new incarnation
    fenced and unfenced as its registration arrives, a controlled shutdown stopping the broker 200 ms after the
    request."""
    hw_checkpoint_at_first_metadata: bool = True
    """A broker process starts its `highwatermark-checkpoint` task when it first applies partition metadata (KRaft:
    its first metadata publish, `BrokerMetadataPublisher.finishInitializingReplicaManager`; the ZooKeeper era: its
    first LeaderAndIsr, `becomeLeaderOrFollower`): one checkpoint at once, then every
    `replica.high.watermark.checkpoint.interval.ms` (`ReplicaManager.startHighWatermarkCheckPointThread`). false = the
    first one interval after the process start, as replog did before session 94 (tests pin seeds found then)."""
    auto_leader_rebalance_enable: bool = True
    """`auto.leader.rebalance.enable`: the controller moves leadership back to each partition's preferred replica
    (the first of its assignment) once that replica is an eligible ISR member again."""
    leader_imbalance_check_interval_ms: int = 300000
    """`leader.imbalance.check.interval.seconds` (300) in milliseconds: KRaft (4.0+) checks every period from the
    controller's start; the ZooKeeper-era mode (`fence_on_reregistration: false`) 5 s after it, then every period."""
    leader_imbalance_per_broker_percentage: int = 10
    """`leader.imbalance.per.broker.percentage`: ZooKeeper-era mode only, the share of a broker's preferred
    partitions led elsewhere above which it gets them back (KRaft ignores it and balances any imbalance)."""
    eligible_leader_replicas: bool = False
    """KRaft, KIP-966 (`eligible.leader.replicas.version=1`: Kafka 4.0 opt-in, on for new clusters from 4.1):
    replicas that leave an ISR below min ISR become eligible leader replicas, the ISR may become empty, a leader
    is elected from them before any unclean election, and a broker that restarts after an unclean shutdown
    leaves them. Off by default, as in a cluster upgraded to 4.x without the feature; needs KRaft with broker
    epochs (`fence_on_reregistration` and `broker_epochs` true)."""

    @property
    def checks_broker_epochs(self) -> bool:
        """Whether broker epochs are sent and checked (KRaft with KIP-903)."""
        return self.fence_on_reregistration and self.broker_epochs

    @property
    def registration_handshake(self) -> bool:
        """Whether a restart goes through KRaft's registration handshake and exact session checks."""
        return self.fence_on_reregistration and self.kraft_lifecycle

    @property
    def coalesces_metadata(self) -> bool:
        """Whether a metadata delivery carries every queued update as one delta (KRaft's metadata log)."""
        return self.fence_on_reregistration and self.metadata_deltas


@dataclass(frozen=True)
class DiskSpec:
    """`flush_interval_ms`: how often dirty pages reach the disk (0 = only on clean shutdown or an
    explicit `flush` action); Kafka itself never fsyncs by default."""

    flush_interval_ms: int = 5000
    retention_bytes: int | None = None
    """`retention.bytes` per partition log (None = Kafka's -1, unlimited)."""
    retention_check_interval_ms: int = 300000
    """`log.retention.check.interval.ms`: period of the `kafka-log-retention` task (first run at
    `initial_task_delay_ms`)."""
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    """`log.segment.bytes`: retention deletes whole segments, so with `retention_bytes` set this decides how far
    and how often a log start offset moves. Smaller than Kafka allows (14 bytes before 4.0, 1 MiB since) only as
    a scale knob; it must hold the largest produced batch (`Scenario.check_segment_bytes`)."""
    log_start_offset_checkpoint_interval_ms: int = 60000
    """`log.flush.start.offset.checkpoint.interval.ms`: period of the `kafka-log-start-offset-checkpoint` task, whose
    file a restart loads its log start offsets from."""
    initial_task_delay_ms: int = 30000
    """`log.initial.task.delay.ms` (internal, `LogManager`'s `InitialTaskDelayMs`): when, after a start, the
    retention task and the log start checkpoint first run."""


@dataclass(frozen=True)
class WriterSpec:
    """Output: format and roll size."""

    format: str = "parquet"
    max_events_per_file: int = 1_000_000
    batch_events: int = 65536


@dataclass(frozen=True)
class Scenario:
    """A whole scenario (see module docstring)."""

    name: str
    description: str
    seed: int
    duration_ms: int
    start_ms: int
    cluster: ClusterSpec
    broker_config: ReplicationConfig
    topics: tuple[TopicSpec, ...]
    network: NetworkSpec
    disk: DiskSpec
    producers: tuple[ProducerSpec, ...]
    faults: tuple[Fault, ...]
    nemesis: NemesisSpec | None
    writer: WriterSpec

    @property
    def truncation_mode(self) -> TruncationMode:
        """The truncation protocol generation the brokers run."""
        return self.broker_config.truncation_mode

    def with_overrides(self, *, seed: int | None = None, duration_ms: int | None = None,
                       truncation_mode: TruncationMode | None = None, fmt: str | None = None,
                       eligible_leader_replicas: bool | None = None) -> Scenario:
        """The CLI overrides (`--seed`, `--duration-ms`, `--truncation-mode`, `--format`,
        `--eligible-leader-replicas`)."""
        out = self
        if eligible_leader_replicas is not None:
            if eligible_leader_replicas and not out.cluster.checks_broker_epochs:
                raise ScenarioError("--eligible-leader-replicas", "off for a scenario with "
                                    "cluster.fence_on_reregistration or cluster.broker_epochs false (ELR is a "
                                    "Kafka 4 KRaft feature, with broker epochs)", "on")
            out = replace(out, cluster=replace(out.cluster, eligible_leader_replicas=eligible_leader_replicas))
        if seed is not None:
            out = replace(out, seed=seed)
        if duration_ms is not None:
            out = replace(out, duration_ms=duration_ms)
        if truncation_mode is not None:
            out = replace(out, broker_config=replace(out.broker_config, truncation_mode=truncation_mode))
        if fmt is not None:
            out = replace(out, writer=replace(out.writer, format=fmt))
        return out

    def with_retention(self, retention_bytes: int, segment_bytes: int, check_interval_ms: int) -> Scenario:
        """Size-based retention, scaled down: `retention.bytes`, `segment.bytes`, the retention task's period, and
        its first run one period after a start (Kafka's 30 s `log.initial.task.delay.ms` outlasts most short runs;
        the log start checkpoint shares that delay)."""
        return replace(self, disk=replace(self.disk, retention_bytes=retention_bytes, segment_bytes=segment_bytes,
                                          retention_check_interval_ms=check_interval_ms,
                                          initial_task_delay_ms=check_interval_ms))

    def check_segment_bytes(self) -> None:
        """Raise `ScenarioError` unless `disk.segment_bytes` holds every batch the producers send: `UnifiedLog.append`
        refuses an append larger than a segment (`RecordBatchTooLargeException`), so every batch of such a producer
        would fail. A follower's fetched set always fits: a leader's read never crosses its segment's end."""
        need = max((p.records_per_batch * p.record_bytes for p in self.producers), default=0)
        if self.disk.segment_bytes < need:
            raise ScenarioError("disk.segment_bytes", f"an integer >= {need} (the largest produced batch: Kafka "
                                "refuses an append larger than a segment)", self.disk.segment_bytes)

    def topic_config(self, topic: str) -> ReplicationConfig:
        """The broker config with the topic's overrides applied (what a Partition of it runs with)."""
        for t in self.topics:
            if t.name == topic:
                return _apply_topic_config(self.broker_config, t.config)
        raise KeyError(topic)


def _apply_topic_config(base: ReplicationConfig, overrides: Mapping[str, str]) -> ReplicationConfig:
    if not overrides:
        return base
    merged = dict(base.as_kafka_map())
    merged.update(overrides)
    return ReplicationConfig.from_kafka_map(merged, non_negative=True)


# --- loading ---------------------------------------------------------------------------------------------

def _no_such_key(name: str, known: Iterable[str], named: bool = False) -> str:
    """`no such key (did you mean 'x'?); known keys: a, b` (the suggestion when difflib finds a close one);
    `named` also quotes `name`, for errors keyed by the section rather than by the key itself."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    subject = f"no such key {name!r}" if named else "no such key"
    return f"{subject}{hint}; known keys: " + ", ".join(known)


class _Reader:
    """Typed access to one mapping of the YAML document, with key paths for error messages."""

    def __init__(self, data: object, path: str) -> None:
        if not isinstance(data, Mapping):
            raise ScenarioError(path or "<document>", "a mapping", type(data).__name__)
        self.data = data
        self.path = path
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def _required(self, name: str) -> str:
        """` (required)`, naming a near spelling of `name` among this mapping's keys not read so far: a
        typo (`brokres`) is the likelier cause of a missing required key."""
        others = [str(k) for k in self.data if k not in self.used]
        close = difflib.get_close_matches(name, others, n=1)
        return f" (required; found {self.key(close[0])}: a typo?)" if close else " (required)"

    def only(self, known: tuple[str, ...]) -> None:
        """Reject keys outside `known` before reading any (see `TOP_LEVEL_KEYS`)."""
        extra = sorted(str(k) for k in self.data if k not in known)
        if extra:
            raise ScenarioError(self.key(extra[0]), _no_such_key(extra[0], known))

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str, default: object = None) -> object:
        self.used.add(name)
        return self.data.get(name, default)

    def int(self, name: str, default: int | None = None, lo: int | None = None, hi: int | None = None,
            required: bool = False) -> int:
        value = self.raw(name)
        if value is None:
            if required or default is None:
                raise ScenarioError(self.key(name), _int_form(lo, hi) + self._required(name))
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(self.key(name), _int_form(lo, hi), value)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ScenarioError(self.key(name), _int_form(lo, hi), value)
        return value

    def opt_int(self, name: str, lo: builtins.int | None = None) -> builtins.int | None:
        if self.raw(name) is None:
            return None
        return self.int(name, 0, lo=lo)

    def float(self, name: str, default: float, lo: float | None = None, hi: float | None = None) -> float:
        value = self.raw(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScenarioError(self.key(name), "a number", value)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ScenarioError(self.key(name), f"a number in [{lo}, {hi}]", value)
        return float(value)

    def str(self, name: str, default: str | None = None, choices: tuple[str, ...] = ()) -> str:
        value = self.raw(name)
        if value is None:
            if default is None:
                raise ScenarioError(self.key(name), "a string" + self._required(name))
            return default
        if not isinstance(value, str):
            raise ScenarioError(self.key(name), "a string", value)
        if choices and value not in choices:
            raise ScenarioError(self.key(name), "one of " + ", ".join(choices), value)
        return value

    def bool(self, name: builtins.str, default: builtins.bool) -> builtins.bool:
        value = self.raw(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ScenarioError(self.key(name), "true or false", value)
        return value

    def int_list(self, name: builtins.str) -> tuple[builtins.int, ...]:
        value = self.raw(name)
        if value is None:
            return ()
        if isinstance(value, int) and not isinstance(value, bool):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ScenarioError(self.key(name), "an integer or a list of integers", value)
        return tuple(value)

    def sub(self, name: builtins.str) -> _Reader:
        return _Reader(self.raw(name, {}) or {}, self.key(name))

    def list(self, name: builtins.str) -> builtins.list[object]:
        value = self.raw(name, [])
        if value is None:
            return []
        if not isinstance(value, list):
            raise ScenarioError(self.key(name), "a list", value)
        return value

    def done(self) -> None:
        extra = sorted(str(k) for k in self.data if k not in self.used)
        if extra:
            raise ScenarioError(self.key(extra[0]), _no_such_key(extra[0], self.used))


def _int_form(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"an integer in {lo}..{hi}"
    if lo is not None:
        return f"an integer >= {lo}"
    return "an integer"


def _latency(data: object, path: str) -> Latency:
    if isinstance(data, int | float) and not isinstance(data, bool):
        return Latency("constant", value=float(data))
    r = _Reader(data, path)
    dist = r.str("dist", "uniform", ("constant", "uniform", "exponential"))
    out = Latency(dist, value=r.float("value", 1.0, lo=0), min=r.float("min", 1.0, lo=0),
                  max=r.float("max", 3.0, lo=0), mean=r.float("mean", 1.0, lo=0))
    if out.max < out.min:
        raise ScenarioError(f"{path}.max", f"a number >= min ({out.min})", out.max)
    r.done()
    return out


def _acks(value: object, key: str) -> int:
    if value in ("all", -1, "-1"):
        return -1
    if value in (0, 1, "0", "1"):
        return int(value)  # type: ignore[arg-type]
    raise ScenarioError(key, "acks as all, -1, 0 or 1", value)


def _broker_config(data: object, mode: TruncationMode | None) -> ReplicationConfig:
    r = _Reader(data or {}, "broker_config")
    values = dict(r.data)
    r.used.update(values)
    # Checked here rather than by from_kafka_map, whose KeyError text would be shown as a repr of a repr.
    known = ReplicationConfig().as_kafka_map()
    for name in sorted(map(str, values)):
        if name not in known:
            raise ScenarioError("broker_config", "Kafka replication config names (reference §1); "
                                + _no_such_key(name, known, named=True))
    try:
        cfg = ReplicationConfig.from_kafka_map(values, non_negative=True)
    except ConfigValueError as exc:
        raise ScenarioError(f"broker_config.{exc.name}", exc.expected, exc.got) from exc
    except (TypeError, ValueError) as exc:
        raise ScenarioError("broker_config", f"valid values ({exc})") from exc
    if mode is not None:
        cfg = replace(cfg, truncation_mode=mode)
    return cfg


def parse_scenario(doc: object) -> Scenario:
    """Validate a parsed YAML document into a `Scenario` (raises `ScenarioError`)."""
    r = _Reader(doc, "")
    r.only(TOP_LEVEL_KEYS)
    name = r.str("name")
    description = r.str("description", "")
    seed = r.int("seed", 1, lo=0)
    duration = r.int("duration_ms", required=True, lo=1)
    start = r.int("start_ms", DEFAULT_START_MS, lo=0)
    mode_text = r.raw("truncation_mode")
    mode = mode_from_text(mode_text) if isinstance(mode_text, str) else None
    if mode_text is not None and not isinstance(mode_text, str):
        raise ScenarioError("truncation_mode", "a string such as diverging-epoch", mode_text)

    c = r.sub("cluster")
    cluster = ClusterSpec(
        brokers=c.int("brokers", required=True, lo=1, hi=999),
        controller_id=c.int("controller_id", 1000, lo=1000),
        broker_session_timeout_ms=c.int("broker_session_timeout_ms", 9000, lo=1),
        broker_heartbeat_interval_ms=c.int("broker_heartbeat_interval_ms", 2000, lo=1),
        controller_retry_ms=c.int("controller_retry_ms", 100, lo=1),
        fence_on_reregistration=c.bool("fence_on_reregistration", True),
        broker_epochs=c.bool("broker_epochs", True),
        metadata_deltas=c.bool("metadata_deltas", True),
        kraft_lifecycle=c.bool("kraft_lifecycle", True),
        hw_checkpoint_at_first_metadata=c.bool("hw_checkpoint_at_first_metadata", True),
        auto_leader_rebalance_enable=c.bool("auto_leader_rebalance_enable", True),
        leader_imbalance_check_interval_ms=c.int("leader_imbalance_check_interval_ms", 300000, lo=1),
        leader_imbalance_per_broker_percentage=c.int("leader_imbalance_per_broker_percentage", 10, lo=0, hi=100),
        eligible_leader_replicas=c.bool("eligible_leader_replicas", False),
    )
    if cluster.eligible_leader_replicas and not cluster.checks_broker_epochs:
        raise ScenarioError(c.key("eligible_leader_replicas"), "false when cluster.fence_on_reregistration or "
                            "cluster.broker_epochs is false (ELR is a Kafka 4 KRaft feature, with broker epochs)", True)
    c.done()
    broker_ids = tuple(range(1, cluster.brokers + 1))
    cfg = _broker_config(r.raw("broker_config"), mode)

    topics: list[TopicSpec] = []
    for i, item in enumerate(r.list("topics")):
        t = _Reader(item, f"topics[{i}]")
        rf = t.int("replication_factor", 1, lo=1, hi=cluster.brokers)
        tconf_raw = t.raw("config") or {}
        if not isinstance(tconf_raw, Mapping):
            raise ScenarioError(t.key("config"), "a mapping of topic configs", tconf_raw)
        tconf: dict[str, str] = {}
        for k, v in tconf_raw.items():
            if k not in TOPIC_CONFIG_KEYS:
                raise ScenarioError(f"{t.key('config')}.{k}", "one of " + ", ".join(TOPIC_CONFIG_KEYS))
            tconf[str(k)] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        assignment_raw = t.list("assignment")
        parts = t.int("partitions", len(assignment_raw) or 1, lo=1)
        assignment: list[tuple[int, ...]] = []
        for j, reps in enumerate(assignment_raw):
            key = f"{t.key('assignment')}[{j}]"
            if (not isinstance(reps, list) or len(reps) != rf or len(set(reps)) != rf
                    or not all(isinstance(b, int) and b in broker_ids for b in reps)):
                raise ScenarioError(key, f"a list of {rf} distinct broker ids in 1..{cluster.brokers}", reps)
            assignment.append(tuple(reps))
        if assignment and len(assignment) != parts:
            raise ScenarioError(t.key("assignment"), f"one replica list per partition ({parts})")
        spec = TopicSpec(t.str("name"), parts, rf, tconf, tuple(assignment))
        t.done()
        try:
            _apply_topic_config(cfg, tconf)
        except ConfigValueError as exc:
            raise ScenarioError(f"{t.key('config')}.{exc.name}", exc.expected, exc.got) from exc
        except (KeyError, ValueError) as exc:
            raise ScenarioError(t.key("config"), f"valid topic configs ({exc})") from exc
        topics.append(spec)
    if not topics:
        raise ScenarioError("topics", "a non-empty list of topics")
    names = [t.name for t in topics]
    if len(set(names)) != len(names):
        raise ScenarioError("topics", "distinct topic names", names)

    n = r.sub("network")
    links: list[LinkSpec] = []
    for i, item in enumerate(n.list("links")):
        lr = _Reader(item, f"network.links[{i}]")
        lat = lr.raw("latency_ms")
        links.append(LinkSpec(lr.int("from", required=True, lo=1), lr.int("to", required=True, lo=1),
                              _latency(lat, lr.key("latency_ms")) if lat is not None else None,
                              lr.float("loss", -1.0, lo=0, hi=1) if lr.has("loss") else None))
        lr.done()
    lat_raw = n.raw("latency_ms")
    network = NetworkSpec(
        latency=_latency(lat_raw, "network.latency_ms") if lat_raw is not None else Latency(),
        loss=n.float("loss", 0.0, lo=0.0, hi=0.5),
        links=tuple(links),
        rpc_timeout_ms=n.int("rpc_timeout_ms", 30000, lo=1),
    )
    n.done()

    d = r.sub("disk")
    disk = DiskSpec(flush_interval_ms=d.int("flush_interval_ms", 5000, lo=0),
                    retention_bytes=d.opt_int("retention_bytes", lo=1),
                    retention_check_interval_ms=d.int("retention_check_interval_ms", 300000, lo=1),
                    segment_bytes=d.int("segment_bytes", DEFAULT_SEGMENT_BYTES, lo=1),
                    log_start_offset_checkpoint_interval_ms=d.int(
                        "log_start_offset_checkpoint_interval_ms", 60000, lo=1),
                    initial_task_delay_ms=d.int("initial_task_delay_ms", 30000, lo=0))
    d.done()

    w = r.sub("workload")
    producers: list[ProducerSpec] = []
    for i, item in enumerate(w.list("producers")):
        p = _Reader(item, f"workload.producers[{i}]")
        topic = p.str("topic", choices=tuple(names))
        producers.append(ProducerSpec(
            topic=topic,
            rate_per_s=p.float("rate_per_s", 10.0, lo=0.0),
            acks=_acks(p.raw("acks", "all"), p.key("acks")),
            keys=p.int("keys", 1000, lo=1),
            records_per_batch=p.int("records_per_batch", 1, lo=1),
            record_bytes=p.int("record_bytes", 100, lo=1),
            retries=p.int("retries", 5, lo=0),
            retry_backoff_ms=p.int("retry_backoff_ms", 100, lo=0),
            retry_backoff_max_ms=p.int("retry_backoff_max_ms", 1000, lo=0),
            request_timeout_ms=p.int("request_timeout_ms", 30000, lo=1),
            start_ms=p.int("start_ms", 1000, lo=0),
            stop_ms=p.opt_int("stop_ms", lo=0),
            metadata_max_age_ms=p.int("metadata_max_age_ms", 300000, lo=0),
            delivery_timeout_ms=p.int("delivery_timeout_ms", 120000, lo=1),
            fresh_metadata=p.bool("fresh_metadata", False),
            linger_ms=p.int("linger_ms", 5, lo=0),
            max_in_flight_requests_per_connection=p.int("max_in_flight_requests_per_connection", 5, lo=1),
            max_request_size=p.int("max_request_size", 1048576, lo=1),
            batch_per_request=p.bool("batch_per_request", False),
        ))
        p.done()
    w.done()

    faults = tuple(_fault(item, f"faults[{i}]", broker_ids, cluster.controller_id, topics)
                   for i, item in enumerate(r.list("faults")))
    nemesis = None
    if r.has("nemesis") and r.raw("nemesis") is not None:
        nr = r.sub("nemesis")
        kinds = nr.raw("faults", list(NEMESIS_FAULTS))
        known = NEMESIS_FAULTS + OPTIONAL_NEMESIS_FAULTS
        if not isinstance(kinds, list) or not all(k in known for k in kinds) or not kinds:
            raise ScenarioError("nemesis.faults", "a non-empty list drawn from " + ", ".join(known), kinds)
        modes = nr.raw("crash_modes", list(CRASH_MODES))
        if not isinstance(modes, list) or not modes or not all(m in CRASH_MODES for m in modes):
            raise ScenarioError("nemesis.crash_modes", "a non-empty list drawn from power, process", modes)
        nemesis = NemesisSpec(
            faults=tuple(kinds),
            min_interval_ms=nr.int("min_interval_ms", 2000, lo=1),
            max_interval_ms=nr.int("max_interval_ms", 8000, lo=1),
            min_duration_ms=nr.int("min_duration_ms", 500, lo=1),
            max_duration_ms=nr.int("max_duration_ms", 6000, lo=1),
            quiet_ms=nr.int("quiet_ms", 20000, lo=0),
            crash_modes=tuple(modes),
            overlap=nr.bool("overlap", False),
            throttle_rates=_throttle_rates(nr.raw("throttle_rates", []), kinds),
        )
        if nemesis.max_interval_ms < nemesis.min_interval_ms:
            raise ScenarioError("nemesis.max_interval_ms", f"an integer >= min_interval_ms ({nemesis.min_interval_ms})")
        if nemesis.max_duration_ms < nemesis.min_duration_ms:
            raise ScenarioError("nemesis.max_duration_ms", f"an integer >= min_duration_ms ({nemesis.min_duration_ms})")
        nr.done()

    o = r.sub("output")
    writer = WriterSpec(
        format=o.str("format", "parquet", ("parquet", "jsonl")),
        max_events_per_file=o.int("max_events_per_file", 1_000_000, lo=1),
        batch_events=o.int("batch_events", 65536, lo=1),
    )
    o.done()
    r.done()
    scenario = Scenario(name, description, seed, duration, start, cluster, cfg, tuple(topics), network, disk,
                        tuple(producers), faults, nemesis, writer)
    scenario.check_segment_bytes()
    return scenario


def _throttle_rates(rates: object, kinds: list[str]) -> tuple[int, ...]:
    """`nemesis.throttle_rates`: positive integers (bytes per second), only with `reassign` among the faults."""
    if not isinstance(rates, list) or not all(type(x) is int and x >= 1 for x in rates):
        raise ScenarioError("nemesis.throttle_rates", "a list of integers >= 1 (bytes per second)", rates)
    if rates and "reassign" not in kinds:
        raise ScenarioError("nemesis.throttle_rates", "only with 'reassign' in nemesis.faults", rates)
    return tuple(rates)


def _fault(item: object, path: str, broker_ids: tuple[int, ...], controller_id: int,
           topics: list[TopicSpec]) -> Fault:
    f = _Reader(item, path)
    action = f.str("action", choices=FAULT_ACTIONS)
    at = f.int("at_ms", required=True, lo=0)
    nodes = (*broker_ids, controller_id)

    def broker(required: bool = True) -> int | None:
        if not required and f.raw("broker") is None:
            return None
        return f.int("broker", required=True, lo=1, hi=len(broker_ids))

    def node_list(name: str) -> tuple[int, ...]:
        ids = f.int_list(name)
        if not ids or not all(i in nodes for i in ids):
            raise ScenarioError(f.key(name), f"broker ids in 1..{len(broker_ids)} or the controller id "
                                f"{controller_id}", f.raw(name))
        return ids

    def topic_partition() -> tuple[str, int]:
        names = tuple(t.name for t in topics)
        topic = f.str("topic", names[0] if len(names) == 1 else None, names)
        spec = next(t for t in topics if t.name == topic)
        return topic, f.int("partition", 0, lo=0, hi=spec.partitions - 1)

    out: Fault
    if action == "crash":
        out = Fault(at, action, broker(), mode=f.str("mode", "power", CRASH_MODES),
                    down_ms=f.opt_int("down_ms", lo=0))
    elif action in ("restart", "flush", "controlled_shutdown"):
        out = Fault(at, action, broker(), down_ms=f.opt_int("down_ms", lo=0) if action != "flush" else None)
    elif action in ("pause", "disk_stall"):
        out = Fault(at, action, broker(), duration_ms=f.int("duration_ms", required=True, lo=1))
    elif action == "partition":
        out = Fault(at, action, src=node_list("from"), dst=node_list("to"), two_way=f.bool("two_way", True),
                    duration_ms=f.int("duration_ms", 0, lo=0))
    elif action == "heal":
        src = node_list("from") if f.raw("from") is not None else ()
        dst = node_list("to") if f.raw("to") is not None else ()
        out = Fault(at, action, src=src, dst=dst, two_way=f.bool("two_way", True))
    elif action == "reassign":
        topic, part = topic_partition()
        reps = f.int_list("replicas")
        if not reps or len(set(reps)) != len(reps) or not all(b in broker_ids for b in reps):
            raise ScenarioError(f.key("replicas"), "a list of distinct broker ids", f.raw("replicas"))
        out = Fault(at, action, topic=topic, partition=part, replicas=reps,
                    throttle_rate=f.opt_int("throttle_rate", lo=1))
    else:  # produce
        topic, part = topic_partition()
        out = Fault(at, action, topic=topic, partition=part, acks=_acks(f.raw("acks", "all"), f.key("acks")),
                    records=f.int("records", 1, lo=1), bytes=f.int("bytes", 100, lo=1),
                    batches=f.int("batches", 1, lo=1))
    f.done()
    return out


def parse_scenario_text(text: str) -> Scenario:
    """Parse YAML text and validate it (`cli.load_scenario` reads the file)."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError("<document>", f"valid YAML ({_yaml_problem(exc)})") from exc
    if doc is None:
        raise ScenarioError("<document>", "a mapping of scenario keys (name, duration_ms, cluster, topics, ...), "
                                          "got an empty document")
    return parse_scenario(doc)


def _yaml_problem(exc: Exception) -> str:
    """PyYAML's error on one line: where (1-based line and column) and what, without its source excerpt."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    what = f"{context}: {problem}" if context else problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {what}" if mark is not None else what
