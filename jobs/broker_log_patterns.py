"""Which Kafka broker log lines carry replication events, and the event each one becomes: a table of data.

Each `LinePattern` reads one Kafka log message (the templates of `/work/shared/docs/kafka-replication.md` §6,
with the versions that print each form). `trigger` is a literal every such line contains: the regular expression
runs only on lines holding it, so the millions of other lines of a `server.log` cost one substring test each.
A line that holds a `strict` pattern's trigger but matches none of that trigger's expressions is a form of the
message this table does not know: it is quarantined with the reason, not dropped.

`columns` maps event columns to Spark SQL over the expression's groups, written `{1}`, `{2}`, ...: `int({1})`,
`ids({2})` and the like are shorthands expanded by `column_sql` (an empty group is null). A partition-scoped
pattern names its topic-partition with `tp` (SQL for the `topic-3` form) unless the line's prefix names it
(`[Partition t-3 broker=1]`, `[Log partition=t-3, dir=...]`), or names it by topic id with `topic_id` and
`id_partition` (the KRaft controller's lines), and its broker comes from the line's prefix or, failing that, from
the other lines of the same file (`jobs.broker_logs`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from jobs.validate import sql_str
from replication_core.config import ReplicationConfig


@dataclass(frozen=True)
class LinePattern:
    """One log message of a Kafka broker and the replication event it records."""

    name: str
    event_type: str
    kafka: str
    """The Kafka class / method that prints it, and the versions of each form."""
    trigger: str
    regex: str
    """Java regular expression searched in the message (the line after its level)."""
    columns: Mapping[str, str] = field(default_factory=dict)
    strict: bool = True
    """A line with the trigger that no expression of it matches is quarantined (else: not this event)."""
    broker: str = ""
    """SQL for the broker id when the message itself names it (else: the line prefix / the file)."""
    entries: str = ""
    """SQL for an array of structs when one line reports several partitions: one event per entry, whose fields
    the columns read as `_entry.<field>`."""
    hint: bool = False
    """The line is no event but explains one: the reason of the truncation the log layer prints next."""
    ignore: bool = False
    """The line is about nothing this table records (a log directory pending deletion, say): matched so that a strict
    pattern with the same trigger does not quarantine it as an unknown form, then dropped."""


_ISR_LIST = r"([\d, ]*)"
_TP = r"([^\s\[\],]+-\d+)"
_OLD_TP = r"\[([^,\]]+),(\d+)\]"
"""The `[topic,3]` form of a topic-partition (TopicAndPartition, <= 1.x)."""

EXCEPTION_ERRORS: Mapping[str, str] = {
    "CorruptRecord": "CORRUPT_MESSAGE",
    "InvalidMessage": "CORRUPT_MESSAGE",
    "NotLeaderForPartition": "NOT_LEADER_OR_FOLLOWER",
    "Timeout": "REQUEST_TIMED_OUT",
    "RecordTooLarge": "MESSAGE_TOO_LARGE",
    "MessageSizeTooLarge": "MESSAGE_TOO_LARGE",
    "KafkaStorage": "KAFKA_STORAGE_ERROR",
    "UnknownServer": "UNKNOWN_SERVER_ERROR",
    "OutOfOrderSequence": "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "DuplicateSequence": "DUPLICATE_SEQUENCE_NUMBER",
    **{name: "NETWORK_EXCEPTION" for name in ("IO", "EOF", "Socket", "SocketTimeout", "Connect", "NoRouteToHost",
                                              "PortUnreachable", "UnknownHost", "ClosedChannel", "Disconnect")},
}
"""Kafka's error names (`Errors`) where they are not the exception's class name in upper snake case
(UnknownTopicOrPartitionException is UNKNOWN_TOPIC_OR_PARTITION; CorruptRecordException is CORRUPT_MESSAGE).
NOT_LEADER_FOR_PARTITION was renamed NOT_LEADER_OR_FOLLOWER in 2.7 (same code 6); replog uses the new name. A
fetch request that failed in the network client (`java.io.IOException: Connection to 1 was disconnected before the
response was read`, `java.net.SocketTimeoutException: Failed to connect within 30000 ms`, a refused connection or
unknown host, an EOF, a closed channel, `DisconnectException`) is NETWORK_EXCEPTION, the name the engine gives a
request that got no answer."""


def _prefix_int(regex: str, group: int) -> str:
    return f"try_cast(nullif(regexp_extract(_msg, {sql_str(regex)}, {group}), '') AS INT)"


_NEW_FETCHER = r"^\[ReplicaFetcher replicaId=\d+, leaderId=(\d+), fetcherId=(\d+)\]"
_OLD_FETCHER = r"^\[ReplicaFetcherThread-(\d+)-(\d+)\]"
FETCHER_LEADER = f"coalesce({_prefix_int(_NEW_FETCHER, 1)}, {_prefix_int(_OLD_FETCHER, 2)})"
"""SQL: the leader a fetcher thread fetches from, from its line's prefix: '[ReplicaFetcher replicaId=1, leaderId=2,
fetcherId=0] ' (1.0+) or '[ReplicaFetcherThread-0-2], ' (<= 0.10; '...]: ' in 0.11: fetcher id, then leader id)."""
FETCHER_ID = f"coalesce({_prefix_int(_NEW_FETCHER, 2)}, {_prefix_int(_OLD_FETCHER, 1)})"
"""SQL: the fetcher id of a fetcher thread's line, from the same prefixes."""


def fetcher_columns(columns: Mapping[str, str]) -> dict[str, str]:
    """`columns` of a fetcher thread's line, with its leader and fetcher id from the thread's prefix unless they
    name their own."""
    return {"leader_id": FETCHER_LEADER, "fetcher_id": FETCHER_ID, **columns}


_SIMPLE_NAME = r"(\w+?)(?:Exception)?$"


def error_name_sql(exception: str) -> str:
    """SQL: Kafka's error name for the exception class named by SQL `exception` (the simple or the full class
    name, with or without 'Exception'; null stays null)."""
    simple = f"regexp_extract({exception}, {sql_str(_SIMPLE_NAME)}, 1)"
    known = " ".join(f"WHEN {sql_str(k)} THEN {sql_str(v)}" for k, v in EXCEPTION_ERRORS.items())
    return (f"CASE WHEN nullif({exception}, '') IS NULL THEN NULL ELSE CASE {simple} {known} "
            f"ELSE upper(regexp_replace({simple}, '([a-z0-9])([A-Z])', '$1_$2')) END END")


NEXT_LINE_EXCEPTIONS: tuple[str, ...] = ("org.apache.kafka.common.errors.", "org.apache.kafka.common.InvalidRecord",
                                         "java.io.", "java.net.", "java.nio.")
"""What the line after a message logged with its exception starts with (log4j prints the throwable there):
`jobs.broker_logs` hands it to the message as `_next_exception`, the class's full name. Kafka's own errors (and
InvalidRecordException, which sits outside their package), and the network client's IOException /
SocketTimeoutException / ClosedChannelException ... of a request that failed."""

KAFKA_ERROR_CLASS = ("(_next_exception LIKE 'org.apache.kafka.common.errors.%' "
                     "OR _next_exception = 'org.apache.kafka.common.InvalidRecordException')")
"""SQL: the next line's exception is one of Kafka's errors, which a broker answers by its name (`Errors.forException`);
any other class it answers UNKNOWN_SERVER_ERROR."""

_FAILED_REQUEST_COLUMNS = fetcher_columns({
    "tp": "_entry.tp", "fetch_offset": "_entry.fetch_offset", "leader_epoch": "_entry.leader_epoch",
    "error": error_name_sql("_next_exception")})
"""A failed fetch request's line: one fetch_response per partition it names (`request_entries_sql`), with the
exception of the next line."""

PATTERNS: tuple[LinePattern, ...] = (
    LinePattern(
        "isr_shrink", "isr_change",
        "Partition.maybeShrinkIsr: 'Shrinking ISR from {isr} to {newIsr}' (2.0-2.1); '. Leader: (highWatermark: "
        "{hw}, endOffset: {leo}). Out of sync replicas: (brokerId: {id}, endOffset: {leo}) ...' (2.2-3.5); with "
        "', lastCaughtUpTimeMs: {t}' per replica (3.6+); 'Partition [t,p] on broker {id}: Shrinking ISR from "
        "{isr} to {newIsr}' (0.9-1.0, the partition in the prefix); 'Shrinking ISR for partition [t,p] from' (0.8)",
        "Shrinking ISR ",
        r"Shrinking ISR (?:for partition \[([^,\]]+),(\d+)\] )?from ([\d,]*) to ([\d,]*)",
        {"tp": "tp({1}, {2})", "action": "'shrink'", "isr_state": "'proposed'", "old_isr": "ids({3})",
         "isr": "ids({4})", "out_of_sync_replicas": "out_of_sync()"},
    ),
    LinePattern(
        "isr_expand", "isr_change",
        "Partition.maybeExpandIsr: 'Expanding ISR from {isr} to {newIsr}' (INFO up to 2.7; DEBUG since 2.8, "
        "so newer logs show only the commit; 2.7 prints it for ZooKeeper writes only, not with AlterIsr, the "
        "inter-broker protocol 2.7's default); 'Partition [t,p] on broker {id}: Expanding ISR from' (0.9-1.0); "
        "'Expanding ISR for partition [t,p] from' (0.8)",
        "Expanding ISR ",
        r"Expanding ISR (?:for partition \[([^,\]]+),(\d+)\] )?from ([\d,]*) to ([\d,]*)",
        {"tp": "tp({1}, {2})", "action": "'expand'", "isr_state": "'proposed'", "old_isr": "ids({3})",
         "isr": "ids({4})"},
    ),
    LinePattern(
        "isr_committed", "isr_change",
        "Partition: 'ISR updated to [{isr}] and zkVersion updated to [{v}]' (ZK writes, <= 2.7); 'ISR updated to "
        "{isr} and version updated to [{v}]' (2.8-3.0), '... to {v}' (3.2-3.4), '{isr} (under-min-isr) and "
        "version updated to {v}' (3.5+)",
        "ISR updated to ",
        r"ISR updated to \[?([\d, ]*)\]?\s*(\(under-min-isr\))?\s*and (?:zkVersion|version) updated to \[?(\d+)\]?",
        # The action (shrink / expand / update) is derived from the ISR the broker last had (jobs.broker_logs).
        {"isr_state": "'committed'", "isr": "ids({1})", "partition_epoch": "int({3})"},
    ),
    LinePattern(
        "isr_leader_and_isr", "isr_change",
        "Partition.makeLeader with the leader epoch it has (the controller changed the ISR or the replicas of a "
        "sitting leader; the state-change log, 3.3+): 'Skipped the become-leader state change for {tp} with topic id "
        "{id} and partition state LeaderAndIsrPartitionState(..., partitionEpoch={p}, replicas=[..], "
        "addingReplicas=[..], removingReplicas=[..], ...) since it is already the leader with leader epoch {e}. "
        "Current high watermark {hw}, ISR [{isr}], ...': the committed ISR and assignment replace the broker's (a "
        "reassignment that adds or reorders replicas keeps the leader epoch), and a pending AlterPartition is "
        "abandoned (updateAssignmentAndIsr)",
        "Skipped the become-leader state change for ",
        r"Skipped the become-leader state change for " + _TP + r" with topic id \S+ and partition state .*?"
        r"partitionEpoch=(\d+)(?:, replicas=\[([\d, ]*)\], addingReplicas=\[([\d, ]*)\], removingReplicas="
        r"\[([\d, ]*)\])?.*? since it is already the leader with leader epoch (\d+)\. Current high watermark "
        r"\d+, ISR \[([\d, ]*)\]",
        {"tp": "{1}", "action": "'update'", "isr_state": "'committed'", "reason": "'leader_and_isr'",
         "partition_epoch": "int({2})", "replicas": "nonempty_ids({3})", "adding_replicas": "nonempty_ids({4})",
         "removing_replicas": "nonempty_ids({5})", "leader_epoch": "int({6})", "isr": "ids({7})"},
        strict=False,  # the older forms (2.x) print other sentences after the same words
    ),
    LinePattern(
        "isr_zk_version_conflict", "isr_change",
        "Partition.updateIsr (ZK, <= 2.7): 'Cached zkVersion [{v}] not equal to that in zookeeper, skip updating "
        "ISR': the conditional write failed, the leader keeps its committed ISR (AlterPartition's "
        "INVALID_UPDATE_VERSION since 2.7)",
        "Cached zkVersion ",
        r"Cached zkVersion \[?(\d+)\]? not equal to that in zookeeper, skip updating ISR",
        {"isr_state": "'rejected'", "error": "'INVALID_UPDATE_VERSION'", "reason": "'reset_to_committed'"},
    ),
    LinePattern(
        "isr_rejected", "isr_change",
        "Partition.handleAlterPartitionError (3.3+): 'Failed to alter partition to {proposed} since the controller "
        "rejected the request with {error}. Partition state has been reset to the latest committed state "
        "CommittedPartitionState(isr=Set(...), ...)' ('CommittedPartitionState[isr=[...], ...]' where Kafka's "
        "server module has it as a Java record)",
        "since the controller rejected the request with ",
        r"since the controller rejected the request with (\w+)\. Partition state has been reset to the latest "
        r"committed state CommittedPartitionState[(\[]isr=(?:(?:Hash)?Set\(|\[)([\d, ]*)[)\]]",
        {"isr_state": "'rejected'", "error": "{1}", "reason": "'reset_to_committed'", "isr": "ids({2})",
         "action": "CASE WHEN _msg LIKE '%to PendingExpandIsr%' THEN 'expand' "
                   "WHEN _msg LIKE '%to PendingShrinkIsr%' THEN 'shrink' END"},
    ),
    LinePattern(
        "isr_retry", "isr_change",
        "Partition.handleAlterPartitionError, any error it does not expect (the AlterPartition manager sends the "
        "proposal again): WARN 'Failed to update ISR to {PendingExpandIsr(...) | PendingShrinkIsr(...)} due to "
        "unexpected {error}. Retrying.' (2.8+; 2.7: 'Controller failed to update ISR to ...')",
        "due to unexpected ",
        r"(?:Controller failed|Failed) to update ISR to (.*) due to unexpected (\w+)\. Retrying\.",
        {"isr_state": "'rejected'", "error": "{2}", "reason": "'retry'",
         "action": "CASE WHEN {1} LIKE 'PendingExpandIsr%' THEN 'expand' "
                   "WHEN {1} LIKE 'PendingShrinkIsr%' THEN 'shrink' END"},
        strict=False,  # other components print 'due to unexpected' sentences
    ),
    LinePattern(
        "become_follower", "leadership_change",
        "Partition.makeFollower (state-change log): 'Follower {tp} starts at leader epoch {e} from offset {leo} "
        "with high watermark {hw}. ...' (2.6-3.2); '... with partition epoch {p} and high watermark {hw}. "
        "Current leader is {id}. ...' (3.3+)",
        "Follower ",
        r"Follower " + _TP + r" (?:with topic id \S+ )?starts at leader epoch (\d+) from offset (\d+) with "
        r"(?:partition epoch (\d+) and )?high watermark (\d+)\.(?: Current leader is (-?\d+)\.)?",
        {"tp": "{1}", "action": "'become_follower'", "leader_epoch": "int({2})", "leo": "long({3})",
         "partition_epoch": "int({4})", "hw": "long({5})", "leader_id": "int({6})"},
        strict=False,  # 'Follower ' alone is too common a word to quarantine every other line holding it
    ),
    LinePattern(
        "fetcher_added", "leadership_change",
        "AbstractFetcherManager.addFetcherForPartitions, called by ReplicaManager.makeFollowers: "
        "'[ReplicaFetcherManager on broker {id}] Added fetcher to broker {leader} for partitions Map({tp} -> "
        "InitialFetchState({topicId},BrokerEndPoint(id={leader}, host={h}:{p}),{epoch},{offset}), ...)' (2.8+); "
        "'... to broker BrokerEndPoint(id={leader}, host=...) for partitions Map({tp} -> (offset={o}, "
        "leaderEpoch={e}), ...)' (2.4-2.7; the later of these builds print the leader's id alone, 'to broker {leader} "
        "for partitions'); 'Added fetcher for partitions List([{tp}, initOffset {o} to broker "
        "BrokerEndPoint({leader},{host},{port})] , ...)' (0.10.1-2.3; '[[{t},{p}], initOffset {o} to broker "
        "BrokerEndPoint({leader},...)] ' before, 'to broker id:{leader},host:...' in 0.8). Versions before 2.6 print "
        "no follower line, so "
        "this is the only trace of the broker becoming a follower: one become_follower per partition listed",
        "] Added fetcher ",
        r"^\[ReplicaFetcherManager on broker \d+\] Added fetcher .*(?:-\d+ -> |\[\S+-\d+, initOffset "
        r"|\[\[[^,\]]+,\d+\], initOffset )",
        {"tp": "_entry.tp", "action": "'become_follower'", "leader_id": "_entry.leader_id",
         "leader_epoch": "_entry.leader_epoch"},
        strict=False,
        entries="fetcher_entries()",
    ),
    LinePattern(
        "become_leader", "leadership_change",
        "Partition.makeLeader: '{tp} starts at leader epoch {e} from offset {leo} with high watermark {hw}. ...' "
        "(2.5); 'Leader {tp} starts at leader epoch {e} from offset {leo} with high watermark {hw} ISR [..] "
        "addingReplicas [..] removingReplicas [..]. ...' (2.6-3.2); 'Leader {tp} with topic id {id} starts at "
        "leader epoch {e} from offset {leo} with partition epoch {p}, high watermark {hw}, ISR [..], adding "
        "replicas [..] and removing replicas [..] ...' (3.3+)",
        "starts at leader epoch ",
        r"(?:Leader )?" + _TP + r" (?:with topic id \S+ )?starts at leader epoch (\d+) from offset (\d+) with "
        r"(?:partition epoch (\d+), )?high watermark (\d+)(?:,? ISR \[([\d, ]*)\],? (?:adding replicas|addingReplicas)"
        r" \[([\d, ]*)\] (?:and removing replicas|removingReplicas) \[([\d, ]*)\])?"
        r"(?:.*?Previous leader (?:Some\((\d+)\)|None))?",
        # `previous_leader` is no event column: the leader the broker knew before (3.3+), which tells a new epoch of
        # a broker that already led (a RECOVERING line printed again) from an election (`jobs.broker_logs`).
        {"tp": "{1}", "action": "'become_leader'", "leader_epoch": "int({2})", "leo": "long({3})",
         "partition_epoch": "int({4})", "hw": "long({5})", "isr": "ids({6})", "adding_replicas": "nonempty_ids({7})",
         "removing_replicas": "nonempty_ids({8})", "leader_id": "broker()", "previous_leader": "int({9})"},
    ),
    LinePattern(
        "become_leader_2_0", "leadership_change",
        "Partition.makeLeader (2.0-2.4, and 0.11-1.x): '{tp} starts at Leader Epoch {e} from offset {leo}. "
        "Previous Leader Epoch was: {old}'",
        "starts at Leader Epoch ",
        _TP + r" starts at Leader Epoch (\d+) from offset (\d+)",
        {"tp": "{1}", "action": "'become_leader'", "leader_epoch": "int({2})", "leo": "long({3})",
         "leader_id": "broker()"},
    ),
    LinePattern(
        "truncation", "truncation",
        "Log / UnifiedLog.truncateTo: '[Log partition={tp}, dir={d}] Truncating to offset {o}' (the log layer's "
        "line for every truncation that removes records; 'has no effect' lines remove nothing and are no event)",
        "Truncating to offset ",
        r"Truncating to offset (\d+)",
        {"truncate_offset": "long({1})"},
    ),
    LinePattern(
        "log_start_incremented", "log_start_offset_change",
        "Log / UnifiedLog.maybeIncrementLogStartOffset (2.8+): '[UnifiedLog partition={tp}, dir={d}] Incremented log "
        "start offset to {o} due to {segment deletion | leader offset increment | client delete records request | "
        "snapshot generated}' (KIP-405's 'Incremented local log start offset' is the local tier's, not this); the "
        "reason is kept (segment_deletion, leader_offset_increment, client_record_deletion, snapshot_generated)",
        "Incremented log start offset to ",
        r"Incremented log start offset to (\d+)(?: due to (segment deletion|leader offset increment|client delete "
        r"records request|snapshot generated))?",
        {"log_start_offset": "long({1})",
         "reason": "CASE {2} WHEN 'segment deletion' THEN 'segment_deletion' WHEN 'leader offset increment' THEN "
                   "'leader_offset_increment' WHEN 'client delete records request' THEN 'client_record_deletion' "
                   "WHEN 'snapshot generated' THEN 'snapshot_generated' END"},
    ),
    LinePattern(
        "log_start_incrementing", "log_start_offset_change",
        "Log.maybeIncrementLogStartOffset: '[Log partition={tp}, dir={d}] Incrementing log start offset to {o}' "
        "(2.0-2.7); 'Incrementing log start offset of partition {tp} to {o} in dir {d}' (0.11-1.x)",
        "Incrementing log start offset ",
        r"Incrementing log start offset (?:of partition " + _TP + r" )?to (\d+)",
        {"tp": "coalesce({1}, _tp_prefix)", "log_start_offset": "long({2})"},
    ),
    LinePattern(
        "produce_error", "produce_ack",
        "ReplicaManager.appendToLocalLog (processFailedRecord), a leader refusing an append to a partition with an "
        "error it does not expect of a client, the exception on the next line: '[ReplicaManager broker={b}] Error "
        "processing append operation on partition {tp}' (1.0+; '{id}:{tp}' since KAFKA-10551 keys produce by topic "
        "id; at INFO for InvalidProducerEpoch), '[Replica Manager on Broker {b}]: Error processing append operation "
        "on partition [{t},{p}]' (0.9; '{tp}' in 0.10-0.11). One line per refused append: a producer's batch, and "
        "also the group coordinator's and the transaction markers' writes (to __consumer_offsets, say), which take "
        "the same call with acks -1. Partition.appendRecordsToLeader's NotEnoughReplicasException ('The size of the "
        "current ISR Set(1) is insufficient to satisfy the min.isr requirement of 2 for partition {tp}') is only "
        "thrown for acks=all: acks -1; any other error leaves the acks unknown. Kafka's errors are read by name "
        "(InvalidRecordException, outside their package, is INVALID_RECORD: the record validation KIP-467 logs "
        "here, as INVALID_TIMESTAMP); any other class, a java.io one included, is UNKNOWN_SERVER_ERROR, as "
        "Errors.forException answers it. The errors Kafka expects of a client and answers without a line (e.g. "
        "NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, "
        "CORRUPT_MESSAGE, KAFKA_STORAGE_ERROR) and every success leave none",
        "Error processing append operation on partition ",
        r"(?:\[Replica Manager on Broker (\d+)\]: )?Error processing append operation on partition (?:" + _OLD_TP
        + r"|(?:[\w-]+:)?(\S+-\d+))",
        {"tp": "coalesce(tp({2}, {3}), {4})",
         "error": f"CASE WHEN {KAFKA_ERROR_CLASS} THEN {error_name_sql('_next_exception')} "
                  "ELSE 'UNKNOWN_SERVER_ERROR' END",
         "acks": f"CASE WHEN {error_name_sql('_next_exception')} = 'NOT_ENOUGH_REPLICAS' THEN -1 END"},
        # 0.9-0.11's prefix names the broker on this thread's lines only: not a prefix that claims a file.
        broker="coalesce(int({1}), _broker_prefix, _file_broker)",
    ),
    LinePattern(
        "log_load_other_dir", "log_load",
        "The same lines for a log in a directory that is not the replica's: one pending deletion "
        "('{tp}.{uuid}-delete'), the target of an intra-broker move ('{tp}.{uuid}-future', 1.1+) or a stray log "
        "('{tp}.{uuid}-stray', 3.7+), which Kafka loads at start too. Before 2.0 the line names the directory, from "
        "2.6 its path: no event. 2.0-2.5 print the replica's own prefix for them, so those read as the replica's, "
        "except (2.4-2.5) a future log's, whose creation line follows it (`jobs.broker_logs`)",
        "Completed load of ",
        r"Completed load of (?:log \S+|Log\(dir=[^,]*)\.\w+-(?:delete|future|stray)[ ,]",
        strict=False,
        ignore=True,
    ),
    LinePattern(
        "log_load", "log_load",
        "UnifiedLog / Log.loadSegments, at a broker's start and (up to 2.5) for a log it creates: 'Completed load of "
        "log {tp} with log end offset {o}' (0.8); '... of log {tp} with {n} log segments and log end offset {o} in "
        "{ms} ms' (0.9-0.10, no log start offset yet); '... of log {tp} with {n} log segments, log start offset {s} "
        "and log end offset {o} in {ms} ms' (0.11-1.x); '[Log partition={tp}, dir={d}] Completed load of log with "
        "{n} segments, log start offset {s} and log end offset {o} in {ms} ms' (2.0-2.5, whose LogManager prints "
        "none; Confluent's tiered builds print 'log start offset (merged: {s}, local: {l})'). A 'local log start "
        "offset' is the local tier's: not read",
        "Completed load of log ",
        r"Completed load of log (?:(\S+-\d+) )?with (?:\d+ (?:log )?segments(?:, (local )?log start offset "
        r"(?:\(merged: )?(\d+)(?:, local: \d+\))?)? and )?log end offset (\d+)",
        {"tp": "coalesce({1}, _tp_prefix)", "log_start_offset": "CASE WHEN {2} IS NULL THEN long({3}) END",
         "leo": "long({4})"},
    ),
    LinePattern(
        "log_load_manager", "log_load",
        "LogManager.loadLogs (2.6+, which dropped the log's own line), once per log loaded at a broker's start: "
        "'Completed load of Log(dir={d}/{tp}, [topicId={id}, ]topic={t}, partition={p}, highWatermark={h}, "
        "lastStableOffset={l}, logStartOffset={s}, logEndOffset={o}) with {n} segments in {ms}ms ({k}/{m} loaded in "
        "{d})' (2.6-3.2; 3.3-3.5 end '({k}/{m} completed in {d})', 3.6+ '... with {n} segments, "
        "local-log-start-offset {s} and log-end-offset {o} in {ms}ms ({k}/{m} completed in {d})'). A log it creates "
        "prints only 'Created log for partition ...', no offsets. The printed highWatermark is the log's before its "
        "partition applies the checkpoint (its log start): not read",
        "Completed load of Log(",
        r"Completed load of Log\(dir=[^,]*-\d+, (?:topicId=[^,]*, )?topic=(.+?), partition=(\d+), "
        r"highWatermark=\d+, lastStableOffset=\d+, logStartOffset=(\d+), logEndOffset=(\d+)\)",
        {"tp": "tp({1}, {2})", "log_start_offset": "long({3})", "leo": "long({4})"},
    ),
    LinePattern(
        "initial_hw", "hw_change",
        "Partition.createLog (2.4+, prefix '[Partition {tp} broker={b}] '), when a partition first takes its "
        "replica's log in this process (its first LeaderAndIsr or metadata change after the broker's start, or a new "
        "log): 'Log loaded for partition {tp} with initial high watermark {hw}', the HW read from the "
        "replication-offset-checkpoint (0 after 'No checkpointed highwatermark is found'), as Log.updateHighWatermark "
        "(UnifiedLog 3.0+) clamps it into [log start, LEO]. A restart's reloaded HW: no role (the leadership line "
        "that follows gives it), no old HW, no epoch. An intra-broker move's future log prints the same line for its "
        "own HW later in the process: only a line after the broker loaded or created the replica's log is read "
        "(`jobs.broker_logs`)",
        "Log loaded for partition ",
        r"Log loaded for partition " + _TP + r" with initial high watermark (\d+)",
        {"tp": "{1}", "hw": "long({2})"},
    ),
    LinePattern(
        "log_created", "hw_change",
        "LogManager.getOrCreateLog, for a log it creates (not one it loaded at the start): 'Created log for partition "
        "{tp} in {dir} with properties {...}' ({dir} the log's own directory from 2.4, '{tp}.{uuid}-future' for an "
        "intra-broker move's future log; its parent before). No event: it tells whose the initial-HW line that "
        "follows is (a future log's when its directory is one, else the replica's new log: `jobs.broker_logs`)",
        "Created log for partition ",
        r"Created log for partition (?:" + _OLD_TP + r"|" + _TP + r") in (.+?) with properties",
        {"tp": "coalesce(tp({1}, {2}), {3})", "reason": "CASE WHEN {4} RLIKE '-future/?$' THEN 'future' END"},
        strict=False,
        hint=True,
    ),
    LinePattern(
        "initial_hw_replica", "hw_change",
        "The Replica constructor (1.0-2.3, no prefix): 'Replica loaded for partition {tp} with initial high "
        "watermark {hw}', printed for every Replica object a partition makes: its own replica's with the "
        "checkpointed HW, at most its LEO (min(checkpoint, LEO); no log-start bound before 2.4), each other "
        "replica's with 0, and (1.1+) a future log's with its own checkpointed HW. Read like initial_hw, only a "
        "positive HW: a line with 0 cannot say whose it is",
        "Replica loaded for partition ",
        r"Replica loaded for partition " + _TP + r" with initial high watermark ([1-9]\d*)",
        {"tp": "{1}", "hw": "long({2})"},
    ),
    LinePattern(
        "initial_hw_replica_unknown", "hw_change",
        "The Replica constructor's line with HW 0 (see initial_hw_replica): an other replica's, or the broker's own "
        "where its checkpoint had none (a restart's HW then stays the previous process's in the tables, until a "
        "leadership line states one): no event",
        "Replica loaded for partition ",
        r"Replica loaded for partition " + _TP + r" with initial high watermark 0(?!\d)",
        ignore=True,
    ),
    LinePattern(
        "truncation_reason", "truncation",
        "ReplicaFetcherThread, the line before the log layer's own: 'Truncating partition {tp} to local high "
        "watermark {hw}' (2.1-3.0); 'Truncating partition {tp} with TruncationState(offset={o}, completed={b}) due "
        "to local high watermark {hw}' / '... due to leader epoch and offset EpochEndOffset(...)' (3.1+, one line "
        "for the OffsetsForLeaderEpoch and the DivergingEpoch paths alike: recorded as leader_epoch); "
        "AbstractFetcherThread.truncateOnFetchResponse: 'Truncating partition {tp} to offset {o} due to diverging "
        "epoch {e}' (4.x, which has no OffsetsForLeaderEpoch path left: diverging_epoch)",
        "Truncating partition ",
        r"Truncating partition " + _TP + r" (?:to local high watermark (\d+)|with TruncationState\(offset=(\d+), "
        r"completed=\w+\) due to (local high watermark|leader epoch and offset)|to offset (\d+) due to diverging "
        r"epoch -?\d+)",
        {"tp": "{1}", "truncate_offset": "coalesce(long({2}), long({3}), long({5}))",
         "reason": "CASE WHEN {2} IS NOT NULL OR {4} = 'local high watermark' THEN 'high_watermark' "
                   "WHEN {5} IS NOT NULL THEN 'diverging_epoch' ELSE 'leader_epoch' END"},
        strict=False, hint=True,
    ),
    LinePattern(
        "truncation_reason_unknown_offset", "truncation",
        "The leader answered OffsetsForLeaderEpoch with an undefined end offset: WARN 'Based on follower's leader "
        "epoch, leader replied with an unknown offset in {tp}. High watermark {hw} will be used for truncation.' "
        "(0.11-1.0); '... The initial fetch offset {o} will be used for truncation.' (1.1-2.0; 'Based on replica's "
        "leader epoch' 2.1+, AbstractFetcherThread.getOffsetTruncationState): a follower's initial fetch offset is "
        "its high watermark. In 3.1+ the 'Truncating partition ... due to leader epoch and offset' line comes after "
        "it and explains the truncation instead",
        "will be used for truncation",
        r"unknown offset in " + _TP + r"\. (?:High watermark|The initial fetch offset) (\d+) will be used for "
        r"truncation",
        {"tp": "{1}", "truncate_offset": "long({2})", "reason": "'high_watermark'"},
        strict=False, hint=True,
    ),
    LinePattern(
        "fetch_error_received", "fetch_response",
        "AbstractFetcherThread.processFetchRequest: WARN 'Received {error} from the leader for partition {tp}. This "
        "error may be returned transiently when the partition is being created or deleted, but it is not expected to "
        "persist.' (UNKNOWN_TOPIC_OR_PARTITION 2.x+; UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID 3.x)",
        "from the leader for partition ",
        r"Received ([A-Z_]+) from the leader for partition " + _TP + r"\.",
        fetcher_columns({"tp": "{2}", "error": "{1}"}),
    ),
    LinePattern(
        "fetch_error", "fetch_response",
        "AbstractFetcherThread.processFetchRequest, any other partition error: ERROR 'Error for partition {tp} at "
        "offset {o}' with the error's exception on the next line (2.0+); 'Error for partition [{t},{p}] to broker "
        "{leader}:{exception}: {message}' (0.10-1.x; 0.8-0.9 print 'class {exception}')",
        "Error for partition ",
        r"Error for partition (?:" + _TP + r" at offset (\d+)|" + _OLD_TP + r" to broker (\d+):(?:class )?"
        r"([\w.$]+?)(?::|\s|$))",
        fetcher_columns({"tp": "coalesce({1}, tp({3}, {4}))", "fetch_offset": "long({2})",
                         "error": error_name_sql("coalesce({6}, _next_exception)"),
                         "leader_id": f"coalesce(int({{5}}), {FETCHER_LEADER})"}),
    ),
    LinePattern(
        "fetch_request_failed", "fetch_response",
        "AbstractFetcherThread.processFetchRequest when leader.fetch throws (leader unreachable, connection dropped), "
        "then every partition of the thread backs off: WARN 'Error in response for fetch request (type=FetchRequest, "
        "replicaId={id}, ..., fetchData={{tp}=PartitionData(topicId={id}, fetchOffset={o}, logStartOffset={s}, "
        "maxBytes={m}, currentLeaderEpoch=Optional[{e}], lastFetchedEpoch=...), ...}, ...)' (3.x; "
        "'{tp}=(fetchOffset={o}, logStartOffset={s}, maxBytes={m}, currentLeaderEpoch=Optional[{e}])' 2.1-2.x, "
        "'{tp}=(offset={o}, logStartOffset={s}, maxBytes={m})' 1.1-2.0), with the exception on the next line: one "
        "fetch_response per partition the request names, with that exception's error. A request of an incremental "
        "fetch session (1.1+) names only the partitions whose fetch state changed, often none ('fetchData={}'): no "
        "event then; the error closes the session (FetchSessionHandler.handleError), so the thread's next request "
        "is a full one that names every partition, and its failure is read. The FetchSessionHandler's INFO 'Error "
        "sending fetch request ...' before it is the same failure",
        "Error in response for fetch request ",
        # A replica fetcher's only: ReplicaAlterLogDirsThread (replicaId=-2) prints the same for a move between a
        # broker's own log dirs, which is no follower's fetch.
        r"^\[ReplicaFetcher(?: replicaId=\d+, leaderId=\d+, fetcherId=\d+\]|Thread-\d+-\d+\],?) Error in response "
        r"for fetch request .*fetchData=\{[^}]*-\d+=",
        _FAILED_REQUEST_COLUMNS,
        strict=False,  # a request that names no partition is no event
        entries="request_entries()",
    ),
    LinePattern(
        "fetch_request_failed_to_broker", "fetch_response",
        "AbstractFetcherThread.processFetchRequest when the fetch throws, before 'Error in response for fetch "
        "request' (0.11-1.x): WARN '[ReplicaFetcherThread-{f}-{leader}]: Error in fetch to broker {leader}, request "
        "(type=FetchRequest, ..., fetchData={{tp}=(offset={o}, logStartOffset={s}, maxBytes={m}), ...}, ...)' with "
        "the exception on the next line: read as fetch_request_failed. 0.10's 'Error in fetch "
        "kafka.server.ReplicaFetcherThread$FetchRequest@...' names no partition and is not read",
        "Error in fetch to broker ",
        r"^\[ReplicaFetcherThread-\d+-\d+\][,:]? Error in fetch to broker \d+, request .*fetchData=\{[^}]*-\d+=",
        _FAILED_REQUEST_COLUMNS,
        strict=False,
        entries="request_entries()",
    ),
    LinePattern(
        "fetch_invalid_records", "fetch_response",
        "AbstractFetcherThread.processFetchRequest, a CorruptRecordException / InvalidRecordException while "
        "appending: ERROR 'Found invalid messages during fetch for partition {tp} offset {o}' (2.0+, the exception "
        "on the next line); '... for partition [{t},{p}] offset {o} error {message}' (<= 1.x)",
        "Found invalid messages during fetch for partition ",
        r"Found invalid messages during fetch for partition (?:" + _OLD_TP + "|" + _TP + r") offset (\d+)",
        fetcher_columns({"tp": "coalesce(tp({1}, {2}), {3})", "fetch_offset": "long({4})",
                         "error": f"coalesce({error_name_sql('_next_exception')}, 'CORRUPT_MESSAGE')"}),
    ),
    LinePattern(
        "fetch_out_of_range", "fetch_response",
        "AbstractFetcherThread.handleOutOfRangeError's caller: INFO 'Current offset {o} for partition {tp} is out of "
        "range, which typically implies a leader change. Reset fetch offset to {n}' (2.0+); ERROR 'Current offset "
        "{o} for partition [{t},{p}] out of range; reset offset to {n}' (0.9-1.x)",
        "Current offset ",
        r"Current offset (\d+) for partition (?:" + _OLD_TP + "|" + _TP + r") (?:is )?out of range",
        fetcher_columns({"tp": "coalesce(tp({2}, {3}), {4})", "fetch_offset": "long({1})",
                         "error": "'OFFSET_OUT_OF_RANGE'"}),
        strict=False,  # consumers print other 'Current offset' sentences
    ),
    LinePattern(
        "fetch_truncation_not_allowed", "fetch_response",
        "ReplicaFetcherThread.handleOffsetOutOfRange (0.9-2.0) with unclean.leader.election.enable=false and the "
        "leader behind the follower: FATAL 'Exiting because log truncation is not allowed for partition {tp}, "
        "current leader's latest offset {le} is less than replica's latest offset {leo}' (1.0-2.0, naming neither "
        "broker); 'Current leader {id}'s ... replica {id}'s ...' with the partition (0.10.1-0.11; 'current' in 0.11), "
        "then the broker halts. The 0.9-0.10.0 form names the topic only ('... for topic {t},'): no partition, "
        "quarantined",
        "because log truncation is not allowed for ",
        r"because log truncation is not allowed for (?:partition (?:" + _OLD_TP + "|" + _TP + r")|topic \S+), "
        r"[Cc]urrent leader(?: (\d+))?'s latest offset \d+ is less than replica(?: \d+)?'s latest offset (\d+)",
        fetcher_columns({"tp": "coalesce(tp({1}, {2}), {3})", "fetch_offset": "long({5})",
                         "error": "'OFFSET_OUT_OF_RANGE'", "leader_id": f"coalesce(int({{4}}), {FETCHER_LEADER})"}),
    ),
    LinePattern(
        "fetch_fenced", "fetch_response",
        "AbstractFetcherThread.onPartitionFenced on FENCED_LEADER_EPOCH: INFO 'Partition {tp} has an older epoch ({e}) "
        "than the current leader. Will await the new LeaderAndIsr state before resuming fetching.' (2.1+; the "
        "request's epoch is this broker's); 'Partition {tp} has a newer epoch ({e}) than the current leader. Retry the "
        "partition later.' (3.4+; 2.5-3.3 'has an new epoch'; this broker has moved past the request's epoch). Both "
        "print the fetch state's currentLeaderEpoch: {e} is this broker's epoch now, never the request's. The same "
        "lines follow a fenced OffsetsForLeaderEpoch answer (maybeTruncateToEpochEndOffsets), which they do not tell "
        "apart: read as the fetch's",
        "than the current leader",
        r"Partition " + _TP + r" has an? (older|newer|new) epoch \((\d+)\) than the current leader",
        fetcher_columns({"tp": "{1}", "error": "'FENCED_LEADER_EPOCH'", "leader_epoch": "int({3})"}),
        strict=False,
    ),
    LinePattern(
        "fetch_not_leader", "fetch_response",
        "AbstractFetcherThread.processFetchRequest on NOT_LEADER_OR_FOLLOWER (NOT_LEADER_FOR_PARTITION before 2.7): "
        "'Remote broker is not the leader for partition {tp}, which could indicate that the partition is being "
        "moved' (INFO in 2.0-2.2, DEBUG since)",
        "Remote broker is not the leader for partition ",
        r"Remote broker is not the leader for partition " + _TP,
        fetcher_columns({"tp": "{1}", "error": "'NOT_LEADER_OR_FOLLOWER'"}),
        strict=False,
    ),
    LinePattern(
        "fetch_unknown_leader_epoch", "fetch_response",
        "AbstractFetcherThread.processFetchRequest on UNKNOWN_LEADER_EPOCH (the leader is behind): 'Remote broker "
        "has a smaller leader epoch for partition {tp} than this replica's current leader epoch of {e}.' (DEBUG)",
        "Remote broker has a smaller leader epoch for partition ",
        r"Remote broker has a smaller leader epoch for partition " + _TP + r" than this replica's current leader "
        r"epoch of (\d+)",
        fetcher_columns({"tp": "{1}", "error": "'UNKNOWN_LEADER_EPOCH'", "leader_epoch": "int({2})"}),
        strict=False,
    ),
    LinePattern(
        "epoch_request_retry", "epoch_request_retry",
        "AbstractFetcherThread.maybeTruncateToEpochEndOffsets (0.11+, ReplicaFetcherThread.maybeTruncate before 2.0), "
        "an OffsetsForLeaderEpoch answer with an error other than FENCED_LEADER_EPOCH: INFO 'Retrying leaderEpoch "
        "request for partition {tp} as the leader reported an error: {error}' (UNKNOWN_SERVER_ERROR for every "
        "partition of a request the leader never answered, after the WARN 'Error when sending leader epoch request')",
        "Retrying leaderEpoch request for partition ",
        r"Retrying leaderEpoch request for partition " + _TP + r" as the leader reported an error: ([A-Z_]+)",
        # Before 2.7 NOT_LEADER_OR_FOLLOWER was NOT_LEADER_FOR_PARTITION (`EXCEPTION_ERRORS`).
        fetcher_columns({"tp": "{1}", "error": "CASE WHEN {2} = 'NOT_LEADER_FOR_PARTITION' "
                                               "THEN 'NOT_LEADER_OR_FOLLOWER' ELSE {2} END"}),
    ),
    LinePattern(
        "unclean_election", "leader_election",
        "PartitionChangeBuilder.tryElection (KRaft controller; clean elections only at TRACE): 'Setting new leader "
        "for topicId {id}, partition {p} to {leader} using an unclean election' (3.x), with '. Previous partition: "
        "PartitionRegistration(replicas=[..], ..., leaderEpoch={e}, partitionEpoch={pe}), change record: ...' in "
        "the ELR-era builder; the record forces ISR = [leader], and the new registration has leader epoch e + 1 and "
        "partition epoch pe + 1. The line names the topic by id: `jobs.broker_logs` finds its name in the lines "
        "that print both ('Leader t-0 with topic id Some(id) ...')",
        "using an unclean election",
        r"Setting new leader for topicId ([^\s,]+), partition (\d+) to (\d+) using an unclean election(?:\. Previous "
        r"partition: PartitionRegistration\(replicas=\[([\d, ]*)\].*?, leaderEpoch=(\d+), partitionEpoch=(\d+)\))?",
        {"topic_id": "{1}", "id_partition": "int({2})", "action": "'unclean'", "leader_id": "int({3})",
         "isr": "array(int({3}))", "replicas": "nonempty_ids({4})", "leader_epoch": "try_add(int({5}), 1)",
         "partition_epoch": "try_add(int({6}), 1)"},
    ),
    LinePattern(
        "unclean_partition_change", "leader_election",
        "ReplicationControlManager.replay(PartitionChangeRecord) -> PartitionRegistration.maybeLogPartitionChange "
        "(KRaft controllers, active and standby, each as it replays the metadata log; '[QuorumController id={n}] ' "
        "prefix): 'UNCLEAN partition change for {topic}-{p} with topic ID {id}: {diff}' where the new leader was not "
        "in the previous ISR (other changes at DEBUG). The diff lists what changed, in this order: replicas, "
        "directories, isr, removingReplicas, addingReplicas, leader, leaderRecoveryState, leaderEpoch, elr (4.0+), "
        "lastKnownElr, partitionEpoch, each 'name: old -> new'. An election from the eligible leader replicas (the "
        "new leader in the old elr, KIP-966) prints it too: action 'elr'; `elr` is the new ELR where the line shows "
        "it changing (else unknown). A line whose leader did not change (no normal path prints one) is a form "
        "replog does not read",
        "UNCLEAN partition change for ",
        r"UNCLEAN partition change for " + _TP + r"(?: with topic ID [A-Za-z0-9_-]+)?: "
        r"(?:.*?\bisr: \[" + _ISR_LIST + r"\] -> \[" + _ISR_LIST + r"\])?"
        r".*?\bleader: (-?\d+) -> (-?\d+)"
        r"(?:.*?\bleaderEpoch: (-?\d+) -> (\d+))?"
        r"(?:.*?\b(elr): \[" + _ISR_LIST + r"\] -> \[" + _ISR_LIST + r"\])?"
        r"(?:.*?\bpartitionEpoch: (-?\d+) -> (\d+))?",
        # An empty list is an empty group: `elr` is known (maybe empty) where the diff names it.
        {"tp": "{1}", "action": "CASE WHEN array_contains(ids({9}), int({5})) THEN 'elr' ELSE 'unclean' END",
         "leader_id": "int({5})", "isr": "ids({3})", "leader_epoch": "int({7})", "partition_epoch": "int({12})",
         "elr": "CASE WHEN {8} IS NOT NULL THEN coalesce(ids({10}), array()) END"},
    ),
    LinePattern(
        "partition_created", "leader_election",
        "ReplicationControlManager.replay(PartitionRecord) for a partition it does not hold yet (KRaft controllers, "
        "active and standby, each as it replays the metadata log; '[QuorumController id={n}] ' prefix): 'Replayed "
        "PartitionRecord for new partition {topic}-{p} with topic ID {id} and PartitionRegistration(replicas=[..], "
        "[directories=[..], ]isr=[..], removingReplicas=[..], addingReplicas=[..], [elr=[..], lastKnownElr=[..], "
        "]leader={l}, leaderRecoveryState=RECOVERED, leaderEpoch={e}, partitionEpoch={pe}).' A topic's creation "
        "(or a partition added to it) writes the record with both epochs 0: the first leader, a clean election "
        "('topic_creation'). A controller loading a snapshot replays the partition as it stands then, in later "
        "epochs: that restates, it elects no one, and it is not read (nor is a record of a later epoch). A restarted "
        "controller replaying records after its snapshot prints creations again: `jobs.broker_logs` drops those",
        "PartitionRecord for new partition ",
        r"PartitionRecord for new partition " + _TP + r" with topic ID [A-Za-z0-9_-]+ and PartitionRegistration\("
        r"replicas=\[([\d, ]*)\].*?, isr=\[([\d, ]*)\](?:.*?, (elr)=\[([\d, ]*)\])?.*?, leader=(-?\d+), "
        r"leaderRecoveryState=\w+, leaderEpoch=0, partitionEpoch=0\)",
        # An empty list is an empty group: `elr` is known (maybe empty) where the registration prints it (4.0+).
        {"tp": "{1}", "action": "'clean'", "reason": "'topic_creation'", "leader_id": "nullif(int({6}), -1)",
         "isr": "coalesce(ids({3}), array())", "replicas": "ids({2})", "leader_epoch": "0", "partition_epoch": "0",
         "elr": "CASE WHEN {4} IS NOT NULL THEN coalesce(ids({5}), array()) END"},
        strict=False,
    ),
    LinePattern(
        "unclean_election_zk", "leader_election",
        "OfflinePartitionLeaderSelector.selectLeader (ZooKeeper controller, 0.8.1-1.0; 1.1+ print no line; 0.8.0's "
        "'No broker in ISR is alive, elected leader from the alive replicas is [{id}]' names no partition and is "
        "quarantined): 'No "
        "broker in ISR is alive for [{topic},{p}]. Elect leader {leader} from live brokers {ids}. There's potential "
        "data loss.' ('{topic}-{p}' where the controller uses TopicPartition); the new ISR is [leader]",
        "There's potential data loss",
        r"No broker in ISR is alive for (?:\[([^,\]]+),(\d+)\]|" + _TP + r")\. Elect leader (\d+) from live brokers",
        {"tp": "coalesce(tp({1}, {2}), {3})", "action": "'unclean'", "leader_id": "int({4})",
         "isr": "array(int({4}))"},
    ),
    LinePattern(
        "leader_recovering", "leader_election",
        "Partition.makeLeader (3.2+, KIP-704; state-change, prefix '[Broker id={b}] '): 'The topic partition {tp} "
        "was marked as RECOVERING. Marking the topic partition as RECOVERED.' The controller marks a partition "
        "RECOVERING when it elects an unclean leader (KRaft, and ZooKeeper with IBP 3.2+, whose controller logs "
        "no line for it since 1.1), so the new leader's line is the election's trace where the controller's is "
        "missing. The leader is the line's broker, the ISR [leader], the epoch that of the line makeLeader prints "
        "next (`jobs.broker_logs`); a line that restates an election already read is no second one",
        "was marked as RECOVERING",
        r"The topic partition " + _TP + r" was marked as RECOVERING",
        {"tp": "{1}", "action": "'unclean'", "leader_id": "coalesce(broker(), _file_broker)",
         "isr": "array(coalesce(broker(), _file_broker))"},
    ),
    LinePattern(
        "broker_config", "broker_config",
        "AbstractConfig.logAll at the broker's start: '[..] INFO KafkaConfig values: ', then one line per setting, "
        "'\t{name} = {value}', without a timestamp, then ' (kafka.server.KafkaConfig)' (' (org.apache.kafka.common."
        "config.AbstractConfig)' in recent KRaft builds; 0.8 logged no such block). The "
        "replication settings of the block (`KAFKA_CONFIG_KEYS`) become the event's config map, its broker.id "
        "(node.id in KRaft) its broker (`jobs.broker_logs`)",
        "KafkaConfig values:",
        r"^KafkaConfig values:",
        strict=False,
    ),
    LinePattern(
        "broker_started", "broker_lifecycle",
        "KafkaServer.startup (ZK mode): '[KafkaServer id={id}] started'",
        "[KafkaServer id=",
        r"\[KafkaServer id=(\d+)\] started",
        {"action": "'start'"}, strict=False, broker="int({1})",
    ),
    LinePattern(
        "broker_started_kraft", "broker_lifecycle",
        "BrokerServer.startup (KRaft): '[BrokerServer id={id}] Transition from STARTING to STARTED' (printed too when "
        "the startup fails, just before its FATAL 'Fatal error during broker startup'; KRaft's controlled shutdown, "
        "'[BrokerLifecycleManager id={id}] Beginning controlled shutdown.', is not read)",
        "Transition from STARTING to STARTED",
        r"\[BrokerServer id=(\d+)\] Transition from STARTING to STARTED",
        {"action": "'start'"}, strict=False, broker="int({1})",
    ),
    LinePattern(
        "broker_shutting_down", "broker_lifecycle",
        "KafkaServer / BrokerServer.shutdown: '[KafkaServer id={id}] shutting down'",
        "shutting down",
        r"\[(?:KafkaServer|BrokerServer) id=(\d+)\] shutting down",
        {"action": "'shutdown'"}, strict=False, broker="int({1})",
    ),
    LinePattern(
        "broker_controlled_shutdown", "broker_lifecycle",
        "KafkaServer.controlledShutdown (ZK mode): '[KafkaServer id={id}] Starting controlled shutdown'",
        "Starting controlled shutdown",
        r"\[KafkaServer id=(\d+)\] Starting controlled shutdown",
        {"action": "'controlled_shutdown'"}, strict=False, broker="int({1})",
    ),
    LinePattern(
        "unclean_shutdown", "broker_lifecycle",
        "LogManager.loadLogs at a broker's start, for a log directory without the clean shutdown file that a "
        "completed shutdown leaves: 'Attempting recovery for all logs in {dir} since no clean shutdown file was "
        "found' (2.6-3.4, printed for a new, empty directory too) or 'Recovering {n} logs from {dir} since no clean "
        "shutdown file was found' (3.5+; an empty directory prints 'No logs found to be loaded in {dir}'). Since 2.8 "
        "(KAFKA-10471) a start that died while loading leaves the next one unclean too. Releases before 2.6 print no "
        "such line. The previous process of the broker stopped without completing its shutdown (killed, out of "
        "memory, power lost): a crash, 1 ms after that process's last line (`jobs.broker_logs`). One per process "
        "(a line per directory); none for a first start, after a completed shutdown or where the crashed "
        "process's lines are not read",
        "since no clean shutdown file was found",
        r"^(?:Attempting recovery for all logs in .+|Recovering \d+ logs from .+) since no clean shutdown file was "
        r"found",
        {"action": "'crash'", "reason": "'unclean_start'"},
    ),
    LinePattern(
        "broker_lifecycle_0_x", "broker_lifecycle",
        "KafkaServer.startup / controlledShutdown / shutdown before 1.0, whose log prefix was '[Kafka Server {id}], ': "
        "'[Kafka Server {id}], started', '... Starting controlled shutdown', '... shutting down' (0.8-0.11)",
        "[Kafka Server ",
        r"^\[Kafka Server (\d+)\], (started|Starting controlled shutdown|shutting down)(?=\s|$)",
        {"action": "CASE {2} WHEN 'started' THEN 'start' WHEN 'shutting down' THEN 'shutdown' "
                   "ELSE 'controlled_shutdown' END"},
        strict=False, broker="int({1})",
    ),
)

PROCESS_FIRST_LINES: tuple[str, ...] = ("kafka.Log4jController",)
"""Literals of the line a broker process prints first, once: Log4jControllerRegistration's 'Registered
kafka:type=kafka.Log4jController MBean' (1.0+, ZooKeeper and KRaft; 4.3 quotes the name in backticks). Releases
before 1.0 print 'KafkaConfig values:' (0.9-0.10) or 'Verifying properties' (0.8) first, and none of them the unclean
line whose crash a first line dates."""
PROCESS_MILESTONES: tuple[tuple[str, str], ...] = (
    ("started", r"\[(?:KafkaServer id=\d+|Kafka Server \d+)\],? started|Kafka Server started"),
    ("STARTED", r"Transition from STARTING to STARTED"),
    ("shutting down", r"\[(?:(?:KafkaServer|BrokerServer) id=\d+\]|Kafka Server \d+\],) shutting down"),
    ("shut down completed", r"\[(?:(?:KafkaServer|BrokerServer) id=\d+\]|Kafka Server \d+\],) shut down completed"),
    ("clean shutdown file was found", r"since (?:no )?clean shutdown file was found"),
    ("No logs found to be loaded", r"No logs found to be loaded in "),
)
"""(literal, regex) of the lines a broker process prints once it is past its first line: its log directories
loaded (clean or not), its start completed, its shutdown begun or completed."""
LOAD_MILESTONES: tuple[str, ...] = ("clean shutdown file was found", "No logs found to be loaded")
"""The milestones of a process that loaded its logs (one line per log directory; 2.6+); the only milestones that
neither a pattern's trigger nor a broker prefix screens in already."""
CLEAN_END = "shut down completed"
"""The milestone of a completed shutdown, which leaves each log directory its clean shutdown file."""

BROKER_PREFIXES: tuple[tuple[str, str], ...] = (
    ("[Partition ", r"\[Partition \S+ broker=(\d+)\]"),
    ("[Broker id=", r"\[Broker id=(\d+)\]"),
    ("[ReplicaFetcher replicaId=", r"\[ReplicaFetcher replicaId=(\d+),"),
    ("[ReplicaFetcherManager on broker ", r"\[ReplicaFetcherManager on broker (\d+)\]"),
    ("[ReplicaManager broker=", r"\[ReplicaManager broker=(\d+)\]"),
    ("Server id=", r"\[(?:KafkaServer|BrokerServer) id=(\d+)\]"),
    ("[KafkaRaftServer nodeId=", r"\[KafkaRaftServer nodeId=(\d+)\]"),
    ("[QuorumController id=", r"\[QuorumController id=(\d+)\]"),
    ("[Controller id=", r"\[Controller id=(\d+)[ \]]"),
    ("[Controller ", r"\[Controller (\d+)\]:"),
    ("[Kafka Server ", r"\[Kafka Server (\d+)\], "),
    ("] on broker ", r"Partition \[[^,\]]+,\d+\] on broker (\d+):"),
)
"""Line prefixes by which a broker names itself (reference §6), each with a literal its lines hold (the cheap
screen in front of the expression); the first that matches gives the broker id."""

_NOT_STATIC = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
               "leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
KAFKA_CONFIG_KEYS: tuple[str, ...] = tuple(k for k in ReplicationConfig().as_kafka_map()
                                           if not k.startswith("replog.") and k not in _NOT_STATIC)
"""The settings a `KafkaConfig values:` block gives a broker_config event: the static replication configs of
reference §1 (the throttle rates are dynamic broker configs and the throttled-replica lists topic configs, which
the block does not print)."""
CONFIG_BLOCK = "Config values:"
"""What starts any config block of a log (`KafkaConfig`, `ProducerConfig`, ...): a setting line belongs to the block
whose header is the last one before it in its file."""
CONFIG_ENTRY = r"^\t([A-Za-z0-9._-]+) = (.*?)\s*$"
"""One setting line of a config block (tab-indented, no timestamp)."""
BROKER_ID_KEYS: tuple[str, ...] = ("broker.id", "node.id")
"""The block's settings that name its broker (broker.id is -1 when ZooKeeper assigns it; node.id is KRaft's)."""

TOPIC_ID = r"with topic (?:id|ID) (?:Some\()?([A-Za-z0-9_-]{22})(?![A-Za-z0-9_-])"
"""Where a line names both a topic-partition and its topic id (the 3.3+ state-change lines, 'with topic id'; the
KRaft controller's partition change lines, 'with topic ID'): the id's name."""

TP_PREFIXES: tuple[str, ...] = (
    r"\[Partition ([^\s\]]+-\d+) broker=\d+\]",
    r"\[(?:Log|UnifiedLog|MergedLog) partition=([^,\]]+-\d+), dir=",
    r"Partition \[([^,\]]+),(\d+)\] on broker \d+: ",
)
"""Line prefixes that name the topic-partition a message is about: one group (`t-3`), or two (topic, partition)
for 0.9-1.0's `Partition [t,3] on broker 2: ` (Partition's logIdent then)."""


def tp_prefix_sql(line: str) -> str:
    """SQL: the topic-partition the prefix of SQL `line` names (`TP_PREFIXES`), or null."""
    forms = []
    for regex in TP_PREFIXES:
        parts = [f"regexp_extract({line}, {sql_str(regex)}, {g})" for g in range(1, re.compile(regex).groups + 1)]
        joined = parts[0] if len(parts) == 1 else f"concat_ws('-', {', '.join(parts)})"
        forms.append(f"nullif({joined}, '{'' if len(parts) == 1 else '-'}')")
    return f"coalesce({', '.join(forms)})"

_OUT_OF_SYNC = r"\(brokerId: (\d+), endOffset: (-?\d+|unknown)(?:, lastCaughtUpTimeMs: (-?\d+|unknown))?\)"

_PLACEHOLDER = re.compile(r"\{(\d+)\}")
_CALL = re.compile(r"\b(int|long|ids|nonempty_ids|tp)\(")


def _group(regex: str, n: int) -> str:
    return f"nullif(regexp_extract(_msg, {sql_str(regex)}, {n}), '')"


def ids_sql(text: str) -> str:
    """SQL: a comma-separated list of broker ids as array<int> (empty text: an empty array; null: null)."""
    return (f"CASE WHEN {text} IS NULL THEN NULL ELSE filter(transform(split({text}, ','), "
            f"x -> try_cast(trim(x) AS INT)), x -> x IS NOT NULL) END")


def column_sql(pattern: LinePattern, expr: str) -> str:
    """`expr` of `pattern.columns` as Spark SQL over the line's `_msg`, `_tp_prefix` and `_broker_prefix`."""
    sql = _PLACEHOLDER.sub(lambda m: f"__G{m.group(1)}__", expr)
    sql = (sql.replace("out_of_sync()", _out_of_sync_sql()).replace("broker()", "_broker_prefix")
           .replace("fetcher_entries()", fetcher_entries_sql()).replace("request_entries()", request_entries_sql()))
    for _ in range(3):  # the shorthands nest at most this deep
        sql = re.sub(r"\bnonempty_ids\(([^()]*)\)", lambda m: f"nullif({ids_sql(m.group(1))}, array())", sql)
        sql = re.sub(r"\bids\(([^()]*)\)", lambda m: ids_sql(m.group(1)), sql)
        sql = re.sub(r"\bint\(([^()]*)\)", lambda m: f"try_cast({m.group(1)} AS INT)", sql)
        sql = re.sub(r"\blong\(([^()]*)\)", lambda m: f"try_cast({m.group(1)} AS BIGINT)", sql)
        sql = re.sub(r"\btp\(([^(),]*),([^(),]*)\)",
                     lambda m: f"coalesce(concat({m.group(1)}, '-', {m.group(2)}), _tp_prefix)", sql)
    if _CALL.search(sql.replace("try_cast", "").replace("nullif", "")):
        raise ValueError(f"pattern {pattern.name}: unexpanded shorthand in {expr!r} -> {sql!r}")
    return re.sub(r"__G(\d+)__", lambda m: _group(pattern.regex, int(m.group(1))), sql)


_FETCH_STATE = (r"([^\s,\[\]()]+-\d+) -> InitialFetchState\((?:Some\([^)]*\)|None)?,?BrokerEndPoint\(id=(\d+),"
                r"[^)]*\),(\d+),(\d+)\)")
_OFFSET_AND_EPOCH = r"([^\s,\[\]()]+-\d+) -> \(offset=(\d+), leaderEpoch=(\d+)\)"
_INIT_OFFSET = r"\[\[?([^\s,\[\]]+[-,]\d+)\]?, initOffset (-?\d+) to broker (?:BrokerEndPoint\(|id:)(\d+),"
"""`[t-0, initOffset 5 to broker BrokerEndPoint(1,...)]`; before 0.10.1 `[[t,0], ...`, whose `t,0` the entries turn
into `t-0` (a topic name has no comma), and 0.8 prints the broker as `id:1,host:...`."""


def _zipped(regex: str, fields: Mapping[str, tuple[str, int | str]]) -> str:
    """SQL: every match of `regex` in `_msg` as a struct; `fields` maps a name to (SQL type, group number or an
    SQL expression of the whole line). Each group's matches are extracted once and zipped, and a whole-line value is
    computed once and repeated: reading them per entry would scan the line once per entry, quadratic in a line that
    names hundreds of partitions (a failed fetch request's, an 'Added fetcher' line's)."""
    def extract(n: int) -> str:
        return f"regexp_extract_all(_msg, {sql_str(regex)}, {n})"

    count = f"size({extract(1)})"
    columns = [extract(src) if isinstance(src, int) else f"array_repeat(try_cast({src} AS {kind}), {count})"
               for kind, src in fields.values()]
    values = ", ".join(f"{sql_str(name)}, try_cast(x['{k}'] AS {kind})"
                       for k, (name, (kind, _src)) in enumerate(fields.items()))
    return f"transform(arrays_zip({', '.join(columns)}), x -> named_struct({values}))"


def fetcher_entries_sql() -> str:
    """SQL: the partitions of an 'Added fetcher' line, as (tp, leader_id, leader_epoch, fetch_offset) structs (any
    form; the entries of every multi-partition line have one type, and this one reads no fetch offset)."""
    leader_in_line = f"regexp_extract(_msg, {sql_str(r'to broker (?:BrokerEndPoint[(]id=)?([0-9]+)')}, 1)"
    forms = [
        _zipped(_FETCH_STATE, {"tp": ("STRING", 1), "leader_id": ("INT", 2), "leader_epoch": ("INT", 3),
                               "fetch_offset": ("BIGINT", "NULL")}),
        _zipped(_OFFSET_AND_EPOCH, {"tp": ("STRING", 1), "leader_id": ("INT", leader_in_line),
                                    "leader_epoch": ("INT", 3), "fetch_offset": ("BIGINT", "NULL")}),
        "transform(" + _zipped(_INIT_OFFSET, {"tp": ("STRING", 1), "leader_id": ("INT", 3),
                                              "leader_epoch": ("INT", "NULL"), "fetch_offset": ("BIGINT", "NULL")})
        + ", e -> named_struct('tp', replace(e.tp, ',', '-'), 'leader_id', e.leader_id, 'leader_epoch', "
          "e.leader_epoch, 'fetch_offset', e.fetch_offset))",
    ]
    return f"concat({', '.join(forms)})"


_REQUEST_PARTITION = (r"([^\s,{}=:]+-\d+)=(?:PartitionData)?\((?:topicId=[^,]*, )?(?:fetchOffset|offset)=(\d+), "
                      r"logStartOffset=-?\d+, maxBytes=\d+(?:, currentLeaderEpoch=Optional(?:\[(\d+)\]|\.empty))?")


def request_entries_sql() -> str:
    """SQL: the partitions a failed fetch request names in its `fetchData`, as `fetcher_entries_sql`'s structs
    (leader_epoch: the CurrentLeaderEpoch sent, null where empty or not printed; the leader is the thread's)."""
    return _zipped(_REQUEST_PARTITION, {"tp": ("STRING", 1), "leader_id": ("INT", "NULL"),
                                        "leader_epoch": ("INT", 3), "fetch_offset": ("BIGINT", 2)})


def _out_of_sync_sql() -> str:
    # Kafka prints one '(brokerId: .., endOffset: .., lastCaughtUpTimeMs: ..)' per removed replica, in one order:
    # the three extracted lists line up by position.
    lists = [f"regexp_extract_all(_msg, {sql_str(_OUT_OF_SYNC)}, {i})" for i in (1, 2, 3)]
    # sequence(1, 0) counts down, hence the guard for a line without the list (2.0-2.1).
    return (f"CASE WHEN size({lists[0]}) = 0 THEN NULL ELSE transform(sequence(1, size({lists[0]})), "
            f"i -> named_struct('replica_id', try_cast(element_at({lists[0]}, i) AS INT), "
            f"'leo', try_cast(element_at({lists[1]}, i) AS BIGINT), "
            f"'last_caught_up_time_ms', try_cast(element_at({lists[2]}, i) AS BIGINT))) END")
