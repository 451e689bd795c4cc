"""Simulated runs written out as the broker logs Kafka would print for them (test support for `jobs.broker_logs`).

`render(events, style)` turns one engine run's events into one `server.log` per broker, each replication event as
the INFO line the broker would print (the templates of the reference §6) in the forms of Kafka 3.6 (`"3.6"`: the
state-change leader / follower lines, AlterPartition commits and rejections, no expansion proposal at INFO) or of
Kafka 2.4 (`"2.4"`: Partition-logger leader lines without the ISR, the fetcher line as the only trace of a follower
transition, ZooKeeper commits). The controller's unclean elections go to its own log in the 3.6 (KRaft) form, which
names the topic by id (read back with the epoch of the new leader's RECOVERING line where that is unambiguous:
`_lend_epochs`), every other one in the ELR-era form that gives the epochs (or nowhere, `controller_log=False`, as
when only the brokers' logs were collected; `controller_ahead_ms` sets the controller's clock ahead of the
brokers'); in 3.6 the new leader prints KIP-704's RECOVERING line before its become-leader line; a 2.x ZooKeeper
controller prints no line for them. It returns the texts and, per rendered event, its file and line and what reading
the line back must give (`Expected`). What Kafka prints nothing for at INFO is not rendered: a crash as it happens
(the process just stops; in 3.6 the broker's restart prints its first line and LogManager's 'Recovering N logs from
... since no clean shutdown file was found', which reads back as the crash, 1 ms after the broker's last line),
the recovery of a crashed log, a truncation that removes nothing, a full truncation (DEBUG) and the log
start move of a truncation, clean elections (TRACE), fetches, appends and HW moves, and the fetch errors Kafka logs
at DEBUG (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH); the others are the fetcher's WARN / INFO / ERROR lines (an
ERROR with its exception on the next line); a fetch request that got no answer is the session handler's INFO and
the fetcher's WARN naming the request's partitions (in the 2.4 form, the requests whose first event id is even are
an incremental session's, which name none and read back as nothing). A leader's NOT_ENOUGH_REPLICAS answer is
ReplicaManager's ERROR line with the exception (the other produce answers leave none). A broker's configuration is its
startup `KafkaConfig values:` block (the static replication settings). Before a replica's first leadership line in a
broker process, its partition prints the HW it starts with ('Log loaded for partition ... with initial high
watermark', the leadership change's HW), after LogManager's line for the log the process loaded at its start when it
had one (the leadership change's LEO, the log start the engine last moved it to): lines for state the engine states in
the leadership change itself, which read back as a role-less `hw_change` and a `log_load`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from jobs.broker_log_patterns import KAFKA_CONFIG_KEYS
from jobs.broker_logs import RESTATE_WINDOW_MS


def topic_id(topic: str) -> str:
    """A topic's id as Kafka prints a Uuid (22 characters of URL-safe base64), one per topic name."""
    return base64.urlsafe_b64encode(hashlib.sha256(topic.encode()).digest()).decode()[:22]


@dataclass(frozen=True)
class Expected:
    """What the reader must find for one rendered event (None: the line does not carry it)."""

    event_id: int
    file: str
    line: int
    broker_id: int
    ts_ms: int
    event_type: str
    topic: str | None
    partition: int | None
    action: str | None
    leader_epoch: int | None
    leader_id: int | None
    isr: tuple[int, ...] | None
    isr_state: str | None
    partition_epoch: int | None
    truncate_offset: int | None
    config: dict[str, str] | None = None
    fetcher_id: int | None = None
    fetch_offset: int | None = None
    error: str | None = None
    log_start_offset: int | None = None
    reason: str | None = None
    elr: tuple[int, ...] | None = None
    hw: int | None = None
    leo: int | None = None


LOG_START_REASONS = {"segment_deletion": "segment deletion", "leader_offset_increment": "leader offset increment",
                     "client_record_deletion": "client delete records request",
                     "snapshot_generated": "snapshot generated"}
"""What `LogStartOffsetIncrementReason` prints for each reason of an engine event (2.8+)."""


def _stamp(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def _last_stamp(lines: list[str]) -> int | None:
    """The time of the last stamped line of `lines` (a log file as written so far), if any."""
    for line in reversed(lines):
        if line.startswith("[") and line[24:25] == "]":
            return int(datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp() * 1000)
    return None


def _ids(values: Iterable[int] | None) -> str:
    return ",".join(str(v) for v in (values or ()))


def _line(ev: Mapping[str, Any], logger: str, text: str, level: str = "INFO") -> str:
    return f"[{_stamp(int(ev['ts_ms']))}] {level} {text} ({logger})"


_EXCEPTIONS = {"CORRUPT_MESSAGE": "CorruptRecord", "KAFKA_STORAGE_ERROR": "KafkaStorage",
               "UNKNOWN_SERVER_ERROR": "UnknownServer", "REQUEST_TIMED_OUT": "Timeout",
               "MESSAGE_TOO_LARGE": "RecordTooLarge"}
_RECEIVED = ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID", "INCONSISTENT_TOPIC_ID")
_DEBUG_ONLY = ("NOT_LEADER_OR_FOLLOWER", "UNKNOWN_LEADER_EPOCH")


def _exception(error: str) -> str:
    """The class Kafka's `Errors.exception` is for `error` (UNKNOWN_TOPIC_ID -> UnknownTopicIdException)."""
    name = _EXCEPTIONS.get(error) or "".join(w.capitalize() for w in error.split("_"))
    return f"org.apache.kafka.common.errors.{name}Exception"


def _fetcher_prefix(ev: Mapping[str, Any]) -> str:
    """The log prefix of the fetcher thread that handled `ev` (1.0+)."""
    return f"[ReplicaFetcher replicaId={ev['broker_id']}, leaderId={ev['leader_id']}, fetcherId={ev['fetcher_id']}]"


def _fetch_error_lines(ev: Mapping[str, Any], tp: str, request_epoch: int | None, next_offset: int | None) -> list[str]:
    """What AbstractFetcherThread.processFetchRequest prints at INFO and above for a partition's error (reference
    §3.3): nothing for the DEBUG ones."""
    error, offset = str(ev["error"]), ev["fetch_offset"]
    prefix = _fetcher_prefix(ev)
    logger = "kafka.server.ReplicaFetcherThread"
    if error in _DEBUG_ONLY:
        return []
    if error in _RECEIVED:
        return [_line(ev, logger, f"{prefix} Received {error} from the leader for partition {tp}. This error may be "
                                  "returned transiently when the partition is being created or deleted, but it is "
                                  "not expected to persist.", "WARN")]
    if error == "OFFSET_OUT_OF_RANGE":
        return [_line(ev, logger, f"{prefix} Current offset {offset} for partition {tp} is out of range, which "
                                  f"typically implies a leader change. Reset fetch offset to "
                                  f"{offset if next_offset is None else next_offset}")]
    if error == "FENCED_LEADER_EPOCH":
        # onPartitionFenced: the request's epoch is the fetcher's own (older) or one it has moved past (newer);
        # both lines print the fetch state's epoch, the broker's own.
        epoch = ev["leader_epoch"]
        if request_epoch is None or request_epoch == epoch:
            return [_line(ev, logger, f"{prefix} Partition {tp} has an older epoch ({epoch}) than the current leader. "
                                      "Will await the new LeaderAndIsr state before resuming fetching.")]
        return [_line(ev, logger, f"{prefix} Partition {tp} has a newer epoch ({epoch}) than the current "
                                  "leader. Retry the partition later.")]
    return [_line(ev, logger, f"{prefix} Error for partition {tp} at offset {offset}", "ERROR"),
            f"{_exception(error)}: rendered by replog's tests"]


REQUEST_FAILED = "NETWORK_EXCEPTION"
"""The error the engine gives each partition of a fetch request that got no answer."""


def _request_failure_lines(group: list[Mapping[str, Any]], new: bool, incremental: bool) -> tuple[list[str], bool]:
    """What a fetcher prints when `leader.fetch` throws for the request of `group` (its partitions' responses): the
    session handler's INFO and processFetchRequest's WARN, each with the IOException, the WARN line last but two;
    and whether that line names the partitions (an `incremental` session request names none here)."""
    ev = group[0]
    leader = ev["leader_id"]
    prefix = _fetcher_prefix(ev)
    cause = f"java.io.IOException: Connection to {leader} was disconnected before the response was read"
    trace = "\tat org.apache.kafka.clients.NetworkClientUtils.sendAndReceive(NetworkClientUtils.java:99)"
    session = "(sessionId=1234, epoch=7)" if incremental else "(sessionId=INVALID, epoch=INITIAL)"
    head = f"(type=FetchRequest, replicaId={ev['broker_id']}, maxWait=500, minBytes=1, maxBytes=10485760, fetchData="
    sending = f"{prefix} Error sending fetch request {session} to node {leader}:"
    if new:
        data = ", ".join(f"{e['topic']}-{e['partition']}=PartitionData(topicId={topic_id(e['topic'])}, fetchOffset="
                         f"{e['fetch_offset']}, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional["
                         f"{e['leader_epoch']}], lastFetchedEpoch=Optional.empty)" for e in group)
        request = (f"{head}{{{data}}}, isolationLevel=READ_UNCOMMITTED, removed=, replaced=, metadata={session}, "
                   "rackId=)")
        lines = [_line(ev, "org.apache.kafka.clients.FetchSessionHandler", sending), cause, trace]
    else:
        data = "" if incremental else ", ".join(
            f"{e['topic']}-{e['partition']}=(fetchOffset={e['fetch_offset']}, logStartOffset=0, maxBytes=1048576, "
            f"currentLeaderEpoch=Optional[{e['leader_epoch']}])" for e in group)
        request = f"{head}{{{data}}}, isolationLevel=READ_UNCOMMITTED, toForget=, metadata={session})"
        lines = [_line(ev, "org.apache.kafka.clients.FetchSessionHandler", f"{sending} {cause}.")]
    lines += [_line(ev, "kafka.server.ReplicaFetcherThread", f"{prefix} Error in response for fetch request {request}",
                    "WARN"), cause, trace]
    return lines, bool(data)


def _ids_list(values: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _replay_lines(ev: Mapping[str, Any], controller: int, before: tuple[int, tuple[int, ...], tuple[int, ...]],
                  files: dict[str, list[str]], unclean: bool) -> str:
    """The line the active controller prints as it replays the election `ev` ("UNCLEAN partition change ..."),
    whose leader was not in the ISR; a standby's copy, 3 ms later, goes to its own log. `before` is the partition's
    (leader, ISR, ELR) before it; an `unclean` election marks the partition RECOVERING, one from the ELR changes
    the ELR."""
    leader, epoch, pepoch = int(ev["leader_id"]), int(ev["leader_epoch"]), int(ev["partition_epoch"])
    was_leader, was_isr, was_elr = before
    recovery = "leaderRecoveryState: RECOVERED -> RECOVERING, " if unclean else ""
    elr = "" if unclean else f"elr: {_ids_list(was_elr)} -> {_ids_list(sorted(ev['elr']))}, "
    text = (f"UNCLEAN partition change for {ev['topic']}-{ev['partition']} with topic ID {topic_id(ev['topic'])}: "
            f"isr: {_ids_list(was_isr)} -> [{leader}], leader: {was_leader} -> {leader}, {recovery}leaderEpoch: "
            f"{epoch - 1} -> {epoch}, {elr}partitionEpoch: {pepoch - 1} -> {pepoch}")
    logger = "org.apache.kafka.controller.ReplicationControlManager"
    files.setdefault("controller-standby.server.log", []).append(
        _line({"ts_ms": int(ev["ts_ms"]) + 3}, logger, f"[QuorumController id={controller + 1}] {text}"))
    return _line(ev, logger, f"[QuorumController id={controller}] {text}")


def created_text(tp: str, topic: str, replicas: Iterable[int], isr: Iterable[int], leader: int, *, epoch: int = 0,
                 kafka4: bool = False) -> str:
    """What a KRaft controller prints as it replays a partition's record that it does not hold yet: the topic's
    creation (both epochs 0), or, loading a snapshot, the partition as it stands (`epoch`, and one more partition
    epoch); `kafka4`: the registration of Kafka 4 (directories and the eligible leader replicas)."""
    dirs = "directories=[AAAAAAAAAAAAAAAAAAAAAA], " if kafka4 else ""
    elr = "elr=[], lastKnownElr=[], " if kafka4 else ""
    return (f"Replayed PartitionRecord for new partition {tp} with topic ID {topic} and PartitionRegistration("
            f"replicas={_ids_list(replicas)}, {dirs}isr={_ids_list(isr)}, removingReplicas=[], addingReplicas=[], "
            f"{elr}leader={leader}, leaderRecoveryState=RECOVERED, leaderEpoch={epoch}, "
            f"partitionEpoch={epoch + 1 if epoch else 0}).")


def _created_lines(ev: Mapping[str, Any], controller: int, files: dict[str, list[str]]) -> str:
    """The line the active controller prints as it replays the creation `ev` of a partition, in Kafka 4's form where
    the run has eligible leader replicas; a standby's copy, 3 ms later, goes to its own log."""
    text = created_text(f"{ev['topic']}-{ev['partition']}", topic_id(ev["topic"]), ev["replicas"], ev["isr"],
                        int(ev["leader_id"]), kafka4=ev.get("elr") is not None)
    logger = "org.apache.kafka.controller.ReplicationControlManager"
    files.setdefault("controller-standby.server.log", []).append(
        _line({"ts_ms": int(ev["ts_ms"]) + 3}, logger, f"[QuorumController id={controller + 1}] {text}"))
    return _line(ev, logger, f"[QuorumController id={controller}] {text}")


def render(events: Iterable[Mapping[str, Any]], style: str, controller_log: bool = True,
           controller_ahead_ms: int = 0, elr_parity: int = 1,
           replay: bool = False) -> tuple[dict[str, str], list[Expected]]:
    """(file name -> log text, what each rendered event must read back as) for one run's events in `style`;
    without `controller_log`, as when only the brokers' logs were collected; with the controller's clock
    `controller_ahead_ms` ahead of the brokers' (its election lines may then be stamped after the new leader's);
    every other unclean election in the ELR-era form, the others without the epochs: the first, third, ... when
    `elr_parity` is 1, the second, fourth, ... when it is 0.
    With `replay`, each unclean election's builder line is followed by the line the controller prints as it
    replays the election's record ("UNCLEAN partition change for ..."), which a standby controller prints too, 3 ms
    later in its own log: the election reads back from the active controller's replay line, with its epochs. In 3.6
    with the controller's log, each partition's creation is the line the active controller (and a standby, 3 ms
    later) prints as it replays the partition's record: its first leader."""
    if style not in ("3.6", "2.4"):
        raise ValueError(f"style must be '3.6' or '2.4', got {style!r}")
    new = style == "3.6"
    # The unclean elections whose new leader has not yet become leader in the epoch they open: (topic, partition)
    # -> (leader, epoch, election event id). Its become-leader line follows 3.6's RECOVERING line.
    recovering: dict[tuple[str, int], tuple[int, int, int]] = {}
    recovering_lines: list[tuple[str, int, int, int, int]] = []  # (topic, partition, ts, leader, epoch) as written
    unclean_builder_lines = 0  # alternates their form (by count, not event id, which a new event type shifts)
    files: dict[str, list[str]] = {}
    expected: list[Expected] = []
    down: set[int] = set()
    crashed: dict[int, int] = {}  # broker -> its crash's event id, until it restarts
    events = list(events)
    # Per fetch_response with an error: the epoch of its request (the broker's last fetch of the partition) and
    # the offset the follower fetches next (its next fetch), which the lines about the error print.
    last_fetch: dict[tuple[int, str, int], int | None] = {}
    request_epoch: dict[int, int | None] = {}
    next_offset: dict[int, int] = {}
    waiting: dict[tuple[int, str, int], int] = {}
    for ev in events:
        key = (ev.get("broker_id"), ev.get("topic"), ev.get("partition"))
        if ev["event_type"] == "fetch":
            last_fetch[key] = ev.get("leader_epoch")
            if key in waiting:
                next_offset[waiting.pop(key)] = int(ev["fetch_offset"])
        elif ev["event_type"] == "fetch_response" and ev.get("error") not in (None, "NONE"):
            request_epoch[int(ev["event_id"])] = last_fetch.get(key)
            waiting[key] = int(ev["event_id"])
    # The failed fetch requests: the engine gives each partition a request carried its own NETWORK_EXCEPTION
    # response, one after another; Kafka prints one line for the request, naming them all.
    requests: dict[int, list[Mapping[str, Any]]] = {}
    request_key: tuple[Any, ...] | None = None
    for ev in events:
        if ev["event_type"] == "fetch_response" and ev.get("error") == REQUEST_FAILED:
            key = (ev["broker_id"], ev["leader_id"], ev["fetcher_id"], ev["ts_ms"], ev["response_received_ms"])
            if key != request_key:
                first = int(ev["event_id"])
                requests[first] = []
            requests[first].append(ev)
            request_key = key
        else:
            request_key = None
    request_of = {int(e["event_id"]): first for first, group in requests.items() for e in group}
    request_line: dict[int, tuple[str, int] | None] = {}  # first event id -> (file, line) of its WARN line, if any
    # The epoch of each replica's last leadership line as written: all a log start move's line can be read with (a
    # 2.x follower that loses its leader prints no line, so its next epoch is not in the log).
    logged_epoch: dict[tuple[int, Any, Any], int | None] = {}
    # Per election event id, the partition's (leader, ISR, ELR) before it, which the controller's replay line prints.
    registration: dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
    current: dict[tuple[Any, Any], tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
    for ev in events:
        at = (ev.get("topic"), ev.get("partition"))
        if ev["event_type"] == "leader_election":
            registration[int(ev["event_id"])] = current.get(at, (-1, (), ()))
            current[at] = (-1 if ev.get("leader_id") is None else int(ev["leader_id"]), tuple(ev.get("isr") or ()),
                           tuple(ev.get("elr") or ()))
        elif ev["event_type"] == "partition_change" and at in current:
            current[at] = (current[at][0], tuple(ev["isr"]), tuple(ev.get("elr") or ()))
        elif ev["event_type"] == "isr_change" and ev.get("isr_state") == "committed" and at in current:
            current[at] = (current[at][0], tuple(ev["isr"]), current[at][2])
    # The replicas whose partition took its log in the broker's current process (Partition.createLogIfNotExists
    # prints the HW it starts with once per process), those that had a log before (a restart loads it: LogManager's
    # line), and each replica's log start as the engine moved it.
    attached: set[tuple[int, Any, Any]] = set()
    hosted: set[tuple[int, Any, Any]] = set()
    log_start: dict[tuple[int, Any, Any], int] = {}

    def attach(ev: Mapping[str, Any], replica: tuple[int, Any, Any], written: list[str], base: dict[str, Any],
               tp: str) -> None:
        """The lines a replica's first leadership change in a process prints before its own (3.6 and 2.4 alike):
        the log's load at the broker's start, if it had one, then the HW its partition starts with."""
        if replica in attached:
            return
        attached.add(replica)
        b, at = replica[0], {**base, "action": None, "leader_epoch": None}
        if replica in hosted:
            written.append(_line(ev, "kafka.log.LogManager",
                                 f"Completed load of Log(dir=/var/lib/kafka/data/{tp}, topic={ev['topic']}, partition="
                                 f"{ev['partition']}, highWatermark=0, lastStableOffset=0, logStartOffset="
                                 f"{log_start.get(replica, 0)}, logEndOffset={ev['leo']}) with 1 segments in 1ms (1/1 "
                                 "loaded in /var/lib/kafka/data)"))
            expected.append(Expected(**{**at, "event_type": "log_load", "log_start_offset": log_start.get(replica, 0),
                                        "leo": int(ev["leo"])}))
            base["line"] += 1
            at["line"] += 1
        hosted.add(replica)
        written.append(_line(ev, "kafka.cluster.Partition", f"[Partition {tp} broker={b}] Log loaded for partition "
                                                             f"{tp} with initial high watermark {ev['hw']}"))
        expected.append(Expected(**{**at, "event_type": "hw_change", "hw": int(ev["hw"])}))
        base["line"] += 1

    for ev in events:
        kind, b = ev["event_type"], ev.get("broker_id")
        if b is None:
            continue
        b = int(b)
        replica = (b, ev.get("topic"), ev.get("partition"))
        if kind == "log_start_offset_change":
            log_start[replica] = int(ev["log_start_offset"])
        elif kind == "broker_lifecycle" and ev.get("action") in ("start", "restart"):
            attached.difference_update({r for r in attached if r[0] == b})
        tp = f"{ev.get('topic')}-{ev.get('partition')}"
        action = ev.get("action")
        out: list[str] = []
        exp: Expected | None = None
        name = f"broker-{b}.server.log"
        if kind == "leader_election" and action == "unclean":
            recovering[(ev["topic"], ev["partition"])] = (int(ev["leader_id"]), ev["leader_epoch"], int(ev["event_id"]))
            if not controller_log:
                continue
        if kind == "leader_election":
            # PartitionChangeBuilder's lines carry no prefix: the controller's other lines place its log.
            ev = {**ev, "ts_ms": int(ev["ts_ms"]) + controller_ahead_ms}
            name = f"controller-{b}.server.log"
            if name not in files and new:
                files[name] = [_line(ev, "org.apache.kafka.controller.QuorumController",
                                     f"[QuorumController id={b}] Becoming the active controller at epoch 1, next "
                                     "write offset 1.")]
        written = files.setdefault(name, [])
        base = {"event_id": int(ev["event_id"]), "file": name, "line": len(written) + 1, "broker_id": b,
                "ts_ms": int(ev["ts_ms"]), "event_type": kind, "topic": ev.get("topic"),
                "partition": ev.get("partition"), "action": action,
                "leader_epoch": ev.get("leader_epoch"), "leader_id": None, "isr": None, "isr_state": None,
                "partition_epoch": None, "truncate_offset": None}
        if kind == "broker_config":
            # AbstractConfig.logAll: the header, one tab-indented line per setting (sorted), the logger last.
            settings = {k: str(v) for k, v in dict(ev["config"]).items() if k in KAFKA_CONFIG_KEYS}
            out.append(_line(ev, "kafka.server.KafkaConfig", "KafkaConfig values: ").rsplit(" (", 1)[0])
            out += [f"\t{k} = {v}" for k, v in sorted({**settings, "broker.id": str(b)}.items())]
            out.append(" (kafka.server.KafkaConfig)")
            exp = Expected(**{**base, "topic": None, "partition": None, "leader_epoch": None,
                              "config": settings})
        elif kind == "broker_lifecycle":
            base.update(topic=None, partition=None, leader_epoch=None)
            if action == "crash":
                down.add(b)
                crashed[b] = int(ev["event_id"])
            elif action in ("start", "restart"):
                down.discard(b)
                crash, last = crashed.pop(b, None), _last_stamp(written)
                if new and crash is not None and last is not None:
                    # The new process's first line, then LogManager's for the directory the crash left without its
                    # clean shutdown file (3.5+): the crash, 1 ms after the broker's last line.
                    written.append(_line(ev, "kafka.utils.Log4jControllerRegistration$",
                                         "Registered kafka:type=kafka.Log4jController MBean"))
                    written.append(_line(ev, "kafka.log.LogManager",
                                         f"Recovering {sum(r[0] == b for r in hosted)} logs from /var/lib/kafka/data "
                                         "since no clean shutdown file was found"))
                    expected.append(Expected(**{**base, "event_id": crash, "line": base["line"] + 1,
                                                "ts_ms": last + 1, "action": "crash", "reason": "unclean_start"}))
                    base["line"] += 2
                out.append(_line(ev, "kafka.server.KafkaServer", f"[KafkaServer id={b}] started"))
                exp = Expected(**{**base, "action": "start"})
            elif action in ("controlled_shutdown", "shutdown"):
                text = "Starting controlled shutdown" if action == "controlled_shutdown" else "shutting down"
                out.append(_line(ev, "kafka.server.KafkaServer", f"[KafkaServer id={b}] {text}"))
                exp = Expected(**base)
        elif kind == "leadership_change" and action == "become_leader":
            epoch, leo, hw = ev["leader_epoch"], ev["leo"], ev["hw"]
            election = recovering.get((ev["topic"], ev["partition"]))
            if new and election is not None and election[:2] == (b, epoch):
                # KIP-704: makeLeader of a partition the controller marked RECOVERING. With the controller's line
                # it restates that election and reads back as nothing; without, it is the election.
                del recovering[(ev["topic"], ev["partition"])]
                written.append(_line(ev, "state.change.logger",
                                     f"[Broker id={b}] The topic partition {tp} was marked as RECOVERING. Marking "
                                     "the topic partition as RECOVERED."))
                if not controller_log:
                    expected.append(Expected(**{**base, "event_id": election[2], "event_type": "leader_election",
                                                "action": "unclean", "leader_id": b, "isr": (b,)}))
                recovering_lines.append((ev["topic"], ev["partition"], int(ev["ts_ms"]), b, epoch))
                base["line"] += 1
            attach(ev, replica, written, base, tp)
            if new:
                out.append(_line(ev, "state.change.logger",
                                 f"[Broker id={b}] Leader {tp} with topic id Some({topic_id(ev['topic'])}) starts at "
                                 f"leader epoch {epoch} from offset {leo} with partition epoch "
                                 f"{ev['partition_epoch']}, high watermark {hw}, ISR [{_ids(ev['isr'])}], adding "
                                 f"replicas [{_ids(ev.get('adding_replicas'))}] and removing replicas "
                                 f"[{_ids(ev.get('removing_replicas'))}] . Previous leader None and previous leader "
                                 f"epoch was {epoch}."))
                exp = Expected(**{**base, "leader_id": b, "isr": tuple(ev["isr"]),
                                  "partition_epoch": ev["partition_epoch"]})
            else:
                out.append(_line(ev, "kafka.cluster.Partition",
                                 f"[Partition {tp} broker={b}] {tp} starts at Leader Epoch {epoch} from offset {leo}. "
                                 f"Previous Leader Epoch was: -1"))
                exp = Expected(**{**base, "leader_id": b})
        elif kind == "leadership_change" and action == "become_follower":
            attach(ev, replica, written, base, tp)
            leader = ev.get("leader_id")
            leader = -1 if leader is None else int(leader)  # Kafka's NO_LEADER
            if new:
                current = leader
                out.append(_line(ev, "state.change.logger",
                                 f"[Broker id={b}] Follower {tp} starts at leader epoch {ev['leader_epoch']} from "
                                 f"offset {ev['leo']} with partition epoch {ev['partition_epoch']} and high "
                                 f"watermark {ev['hw']}. Current leader is {current}. Previous leader None and "
                                 f"previous leader epoch was {ev['leader_epoch']}."))
                exp = Expected(**{**base, "leader_id": leader, "partition_epoch": ev["partition_epoch"]})
            elif leader >= 0:  # Kafka adds no fetcher without a leader
                out.append(_line(ev, "kafka.server.ReplicaFetcherManager",
                                 f"[ReplicaFetcherManager on broker {b}] Added fetcher to broker BrokerEndPoint(id="
                                 f"{leader}, host=kafka{leader}:9092) for partitions Map({tp} -> (offset={ev['leo']}, "
                                 f"leaderEpoch={ev['leader_epoch']}))"))
                exp = Expected(**{**base, "leader_id": leader})
        elif kind == "isr_change":
            state = ev["isr_state"]
            if state == "proposed" and action == "shrink":
                out.append(_line(ev, "kafka.cluster.Partition",
                                 f"[Partition {tp} broker={b}] Shrinking ISR from {_ids(ev['old_isr'])} to "
                                 f"{_ids(ev['isr'])}. Leader: (highWatermark: 0, endOffset: 0). Out of sync "
                                 "replicas: ."))
                exp = Expected(**{**base, "isr": tuple(ev["isr"]), "isr_state": state})
            elif state == "proposed" and action == "expand" and not new:
                out.append(_line(ev, "kafka.cluster.Partition",
                                 f"[Partition {tp} broker={b}] Expanding ISR from {_ids(ev['old_isr'])} to "
                                 f"{_ids(ev['isr'])}"))
                exp = Expected(**{**base, "isr": tuple(ev["isr"]), "isr_state": state})
            elif state == "rejected" and new and ev.get("reason") == "reset_to_committed":
                pending = "PendingExpandIsr" if action == "expand" else "PendingShrinkIsr"
                committed = ", ".join(str(r) for r in ev["old_isr"])
                out.append(_line(ev, "kafka.cluster.Partition",
                                 f"[Partition {tp} broker={b}] Failed to alter partition to {pending}(...) since the "
                                 f"controller rejected the request with {ev['error']}. Partition state has been "
                                 f"reset to the latest committed state CommittedPartitionState(isr=Set({committed}), "
                                 "leaderRecoveryState=RECOVERED)."))
                exp = Expected(**{**base, "isr": tuple(ev["old_isr"]), "isr_state": state, "error": ev["error"]})
            elif state == "committed" and ev.get("reason") == "leader_and_isr" and new:
                adding, removing = ev.get("adding_replicas") or [], ev.get("removing_replicas") or []
                out.append(_line(ev, "state.change.logger",
                                 f"[Broker id={b}] Skipped the become-leader state change for {tp} with topic id "
                                 f"{topic_id(ev['topic'])} and partition state LeaderAndIsrPartitionState(topicName="
                                 f"'{ev['topic']}', partitionIndex={ev['partition']}, controllerEpoch=-1, leader={b}, "
                                 f"leaderEpoch={ev['leader_epoch']}, isr={_ids_list(ev['isr'])}, partitionEpoch="
                                 f"{ev['partition_epoch']}, replicas={_ids_list(ev['replicas'])}, addingReplicas="
                                 f"{_ids_list(adding)}, removingReplicas={_ids_list(removing)}, isNew=false, "
                                 f"leaderRecoveryState=0) since it is already the leader with leader epoch "
                                 f"{ev['leader_epoch']}. Current high watermark 0, ISR [{_ids(ev['isr'])}], adding "
                                 f"replicas [{_ids(adding)}] and removing replicas [{_ids(removing)}]."))
                exp = Expected(**{**base, "isr": tuple(ev["isr"]), "isr_state": state,
                                  "partition_epoch": ev["partition_epoch"]})
            # An AlterPartition answer (a LeaderAndIsr that changes a 2.x leader's ISR prints no line).
            elif state == "committed" and ev.get("reason") == "alter_partition":
                isr, pe = _ids(ev["isr"]), ev["partition_epoch"]
                text = (f"ISR updated to {isr}  and version updated to {pe}" if new
                        else f"ISR updated to [{isr}] and zkVersion updated to [{pe}]")
                out.append(_line(ev, "kafka.cluster.Partition", f"[Partition {tp} broker={b}] {text}"))
                exp = Expected(**{**base, "action": None, "isr": tuple(ev["isr"]), "isr_state": state,
                                  "partition_epoch": pe})
        elif kind == "leader_election" and action == "unclean" and new:
            leader = int(ev["leader_id"])
            # Every other election in the ELR-era form, which prints the registration it replaces (the epochs).
            elr = (unclean_builder_lines + 1) % 2 == elr_parity
            unclean_builder_lines += 1
            previous = (f". Previous partition: PartitionRegistration(replicas=[{', '.join(map(str, ev['replicas']))}]"
                        f", isr=[], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=-1, "
                        f"leaderRecoveryState=RECOVERED, leaderEpoch={ev['leader_epoch'] - 1}, partitionEpoch="
                        f"{ev['partition_epoch'] - 1}), change record: PartitionChangeRecord(partitionId="
                        f"{ev['partition']})") if elr else ""
            out.append(_line(ev, "org.apache.kafka.controller.PartitionChangeBuilder",
                             f"Setting new leader for topicId {topic_id(ev['topic'])}, partition {ev['partition']} "
                             f"to {leader} using an unclean election{previous}"))
            exp = Expected(**{**base, "leader_epoch": ev["leader_epoch"] if elr else None, "leader_id": leader,
                              "isr": (leader,), "partition_epoch": ev["partition_epoch"] if elr else None})
            if replay:
                out.append(_replay_lines(ev, b, registration[int(ev["event_id"])], files, unclean=True))
                exp = replace(exp, line=exp.line + 1, leader_epoch=ev["leader_epoch"],
                              partition_epoch=ev["partition_epoch"])
        elif kind == "leader_election" and action == "elr" and new and controller_log:
            # KIP-966: only the controllers' replay lines tell of an election from the ELR (its leader was not in the
            # ISR, so the line says UNCLEAN); the active controller's, and a standby's 3 ms later.
            leader = int(ev["leader_id"])
            out.append(_replay_lines(ev, b, registration[int(ev["event_id"])], files, unclean=False))
            exp = Expected(**{**base, "leader_id": leader, "isr": (leader,), "partition_epoch": ev["partition_epoch"],
                              "elr": tuple(sorted(ev["elr"]))})
        elif kind == "leader_election" and ev.get("reason") == "topic_creation" and new and controller_log:
            # Each KRaft controller prints a partition's first leader as it replays the topic's creation.
            out.append(_created_lines(ev, b, files))
            exp = Expected(**{**base, "leader_id": int(ev["leader_id"]), "isr": tuple(ev["isr"]), "partition_epoch": 0,
                              "elr": () if ev.get("elr") is not None else None})
        elif kind == "truncation" and b not in down and ev.get("reason") != "full" \
                and int(ev["truncate_offset"]) < int(ev["old_leo"]):
            prefix = "UnifiedLog" if new else "Log"
            out.append(_line(ev, f"kafka.log.{prefix}",
                             f"[{prefix} partition={tp}, dir=/var/lib/kafka/data] Truncating to offset "
                             f"{ev['truncate_offset']}"))
            exp = Expected(**{**base, "action": None, "truncate_offset": int(ev["truncate_offset"])})
        elif kind == "log_start_offset_change" and b not in down and ev.get("reason") in LOG_START_REASONS:
            # maybeIncrementLogStartOffset (a truncation's own log start move prints no line of its own): 2.8+ says
            # why, 2.x before it does not.
            if new:
                text = f"[UnifiedLog partition={tp}, dir=/var/lib/kafka/data] Incremented log start offset to " \
                       f"{ev['log_start_offset']} due to {LOG_START_REASONS[ev['reason']]}"
            else:
                text = f"[Log partition={tp}, dir=/var/lib/kafka/data] Incrementing log start offset to " \
                       f"{ev['log_start_offset']}"
            out.append(_line(ev, "kafka.log.UnifiedLog" if new else "kafka.log.Log", text))
            exp = Expected(**{**base, "action": None, "log_start_offset": int(ev["log_start_offset"]),
                              "leader_epoch": logged_epoch.get(replica), "reason": ev["reason"] if new else None})
        elif kind == "fetch_response" and ev.get("error") == REQUEST_FAILED and b not in down:
            first = request_of[int(ev["event_id"])]
            if first == int(ev["event_id"]):
                lines, names = _request_failure_lines(requests[first], new, incremental=not new and first % 2 == 0)
                written.extend(lines)
                request_line[first] = (name, len(written) - 2) if names else None
            at = request_line[first]
            if at is not None:
                expected.append(Expected(**{**base, "file": at[0], "line": at[1], "leader_id": int(ev["leader_id"]),
                                            "fetcher_id": int(ev["fetcher_id"]),
                                            "fetch_offset": int(ev["fetch_offset"]), "error": REQUEST_FAILED}))
            continue
        elif kind == "fetch_response" and ev.get("error") not in (None, "NONE") and b not in down:
            out += _fetch_error_lines(ev, tp, request_epoch.get(int(ev["event_id"])),
                                      next_offset.get(int(ev["event_id"])))
            carries_offset = ev["error"] not in (*_RECEIVED, "FENCED_LEADER_EPOCH")
            exp = Expected(**{**base, "leader_id": int(ev["leader_id"]), "fetcher_id": int(ev["fetcher_id"]),
                              "fetch_offset": int(ev["fetch_offset"]) if carries_offset else None,
                              "error": str(ev["error"])})
        elif kind == "epoch_request_retry" and b not in down:
            out.append(_line(ev, "kafka.server.ReplicaFetcherThread",
                             f"{_fetcher_prefix(ev)} Retrying leaderEpoch request for partition {tp} as the leader "
                             f"reported an error: {ev['error']}"))
            exp = Expected(**{**base, "leader_id": int(ev["leader_id"]), "fetcher_id": int(ev["fetcher_id"]),
                              "error": str(ev["error"])})
        elif kind == "produce_ack" and ev.get("error") == "NOT_ENOUGH_REPLICAS" and b not in down:
            # ReplicaManager.appendToLocalLog logs this refusal at ERROR with its exception; the engine's other
            # answers (successes, DelayedProduce's timeouts, NOT_LEADER_OR_FOLLOWER) are ones Kafka logs no line for.
            out.append(_line(ev, "kafka.server.ReplicaManager", f"[ReplicaManager broker={b}] Error processing append "
                                                                f"operation on partition {tp}", level="ERROR"))
            out.append(f"{_exception('NOT_ENOUGH_REPLICAS')}: The size of the current ISR is insufficient to satisfy "
                       f"the min.isr requirement for partition {tp}")
            exp = Expected(**{**base, "action": None, "leader_epoch": logged_epoch.get(replica),
                              "error": "NOT_ENOUGH_REPLICAS"})
        if out and exp is not None:
            written.extend(out)
            expected.append(exp)
            if kind == "leadership_change":
                logged_epoch[replica] = exp.leader_epoch
    if controller_log:
        expected = _lend_epochs(expected, recovering_lines)
    return {name: "\n".join(text) + "\n" for name, text in sorted(files.items()) if text}, expected


def _lend_epochs(expected: list[Expected], recovering_lines: list[tuple[str, int, int, int, int]]) -> list[Expected]:
    """`expected` with the epoch each undated controller election reads back with: that of its leader's RECOVERING
    lines within `RESTATE_WINDOW_MS` when they give one epoch, each is nearer to it than to the leader's other
    elections, and no election line gives that epoch (the reader's rule, `jobs.broker_logs._unrepeated_elections`,
    here over the lines as rendered)."""
    elections = [(k, x) for k, x in enumerate(expected) if x.event_type == "leader_election"]
    out = list(expected)
    for k, c in elections:
        if c.leader_epoch is not None:
            continue
        mine = [(t, e) for tp, p, t, b, e in recovering_lines
                if (tp, p, b) == (c.topic, c.partition, c.leader_id) and abs(t - c.ts_ms) <= RESTATE_WINDOW_MS]
        rivals = [(j, x) for j, x in elections if (x.topic, x.partition, x.leader_id) == (c.topic, c.partition,
                                                                                       c.leader_id)]
        epochs = {e for _, e in mine}
        if len(epochs) != 1 or any(x.leader_epoch in epochs for _, x in rivals):
            continue
        if all(min(rivals, key=lambda jx: (abs(jx[1].ts_ms - t), jx[1].ts_ms, jx[0]))[0] == k for t, _ in mine):
            out[k] = replace(c, leader_epoch=epochs.pop())
    return out
