"""PartitionTest conformance scenarios (reference §7.3), written as data under scenarios/partition/.

Each YAML document is one Kafka test: `kafka_test` names it, `steps` is a script of operations on one
`Partition` (brokerId 101, remotes 102..., replica.lag.time.max.ms 30000) and each step may carry
`expect:` checks evaluated right after it. The interpreter below is the whole DSL:

  seed: {records: n, epoch: e} | {batches: [[count, epoch], ...]}    seedLogData / log.appendAsLeader
  make_leader / make_follower: {leader, epoch, isr, replicas, partition_epoch, adding, hw_checkpoint}
  append: {records: n, acks: 0|1|-1}           appendRecordsToLeader
  append_follower: {base, count, epoch}         appendRecordsToFollowerOrFutureReplica
  fetch: {replica, offset, epoch, last_fetched_epoch, broker_epoch, lso}    fetchFollower
  update_fetch_state: {replica, offset, leader_end_offset}                  updateFollowerFetchState
  shrink: {}                                    maybeShrinkIsr (request goes to the mock manager)
  complete: {partition_epoch} | fail: {error}   MockAlterPartitionManager.completeIsrUpdate / failIsrUpdate
  sleep: ms | fence / unfence / shutdown / restart: broker id
  set_hw: n | log_start_offset: n | truncate_fully_and_start_at: n
  list_offsets: {latest: bool, isolation: null|read_uncommitted}           fetchOffsetForTimestamp
  last_offset_for_leader_epoch: {current, epoch}

`lcu` (lastCaughtUpTimeMs) values are ms after the scenario start (Kafka's MockTime starts at the wall clock, so
a never-caught-up replica, lastCaughtUpTimeMs = 0, is reported as `never`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from replication_core.config import ReplicationConfig
from replication_core.errors import Errors, ReplogError
from replication_core.event_log import EventLog
from replication_core.log import RecordBatch
from replication_core.partition import (
    AlterPartitionRequest,
    CommittedPartitionState,
    LeaderAndIsr,
    Partition,
    PartitionRegistration,
    PendingExpandIsr,
    StaticBrokerMetadata,
)

BROKER_ID = 101
T0 = 1_000_000  # scenario start; large enough that "0" is long ago, like Kafka's MockTime
SCENARIO_DIR = Path(__file__).parent / "scenarios" / "partition"


def default_broker_epoch(broker_id: int) -> int:
    """PartitionTest.defaultBrokerEpoch."""
    return broker_id + 1000


class MockAlterPartitionManager:
    """PartitionTest's MockAlterPartitionManager: one outstanding item per partition; a second submit
    is answered at once with OPERATION_NOT_ATTEMPTED (DefaultAlterPartitionManager.submit)."""

    def __init__(self, partition: Partition, now: list[int]) -> None:
        self.partition = partition
        self.now = now
        self.isr_updates: list[AlterPartitionRequest] = []
        self.submitted = 0

    def submit(self, request: AlterPartitionRequest | None) -> None:
        if request is None:
            return
        self.submitted += 1
        if self.isr_updates:
            self.partition.handle_alter_partition_response(request, Errors.OPERATION_NOT_ATTEMPTED, self.now[0])
            return
        self.isr_updates.append(request)

    def complete(self, partition_epoch: int) -> None:
        req = self.isr_updates.pop(0)
        sent = req.leader_and_isr
        answer = LeaderAndIsr(sent.leader, sent.leader_epoch, sent.isr, partition_epoch,
                              sent.leader_recovery_state, sent.broker_epochs)
        out = self.partition.handle_alter_partition_response(req, answer, self.now[0])
        self.submit(out.retry)

    def fail(self, error: Errors) -> None:
        req = self.isr_updates.pop(0)
        out = self.partition.handle_alter_partition_response(req, error, self.now[0])
        self.submit(out.retry)


class Runner:
    """Interprets one scenario document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        setup = doc.get("setup", {})
        self.config = ReplicationConfig(**doc.get("config", {}))
        self.metadata = StaticBrokerMetadata()
        if setup.get("broker_epochs"):
            self.metadata.epochs = {b: default_broker_epoch(b) for b in setup["broker_epochs"]}
        self.events = EventLog()
        self.partition = Partition("test-topic", 0, BROKER_ID, self.config, metadata=self.metadata,
                                   events=self.events)
        self.now = [T0]
        self.manager = MockAlterPartitionManager(self.partition, self.now)
        self.last: dict[str, Any] = {}

    # --- operations --------------------------------------------------------------------------------

    def _reg(self, a: dict[str, Any], default_leader: int) -> PartitionRegistration:
        replicas = tuple(a["replicas"])
        return PartitionRegistration(
            leader=a.get("leader", default_leader), leader_epoch=a["epoch"],
            isr=tuple(a.get("isr", replicas)), replicas=replicas,
            partition_epoch=a.get("partition_epoch", 1), adding_replicas=tuple(a.get("adding", ())),
            removing_replicas=tuple(a.get("removing", ())))

    def run_step(self, op: str, a: Any) -> None:
        p = self.partition
        now = self.now[0]
        self.last = {}
        try:
            if op == "seed":
                batches = a.get("batches") or [[1, a["epoch"]]] * a["records"]
                for count, epoch in batches:
                    p.log.append_as_leader(count, 10 * count, 0, epoch, now)
            elif op == "make_leader":
                self.last["result"] = p.make_leader(self._reg(a, BROKER_ID), now, a.get("hw_checkpoint"))
            elif op == "make_follower":
                self.last["result"] = p.make_follower(self._reg(a, a.get("leader", BROKER_ID + 1)), now)
            elif op == "append":
                res = p.append_records_to_leader(a.get("records", 1), 10, 0, a.get("acks", 0), now)
                self.last["result"] = [res.batch.base_offset, res.batch.last_offset]
            elif op == "append_follower":
                base, count = a["base"], a["count"]
                p.append_records_to_follower(
                    [RecordBatch(base, base + count - 1, a.get("epoch", 0), count, 10 * count, 0)], now)
            elif op == "fetch":
                info = p.fetch_records(
                    a["replica"], a["offset"], a.get("max_bytes", 2**31 - 1), now,
                    current_leader_epoch=a.get("epoch"), last_fetched_epoch=a.get("last_fetched_epoch"),
                    follower_log_start_offset=a.get("lso", 0),
                    broker_epoch=a.get("broker_epoch", self._default_fetch_epoch(a["replica"])))
                self.last["diverging"] = list(info.diverging_epoch) if info.diverging_epoch else None
                self.last["read_leo"] = info.log_end_offset
                self.last["response_hw"] = info.high_watermark
                self.manager.submit(info.alter_partition)
            elif op == "update_fetch_state":
                replica = p.get_replica(a["replica"])
                assert replica is not None
                _, alter = p.update_follower_fetch_state(replica, a["offset"], a.get("lso", 0), now,
                                                         a["leader_end_offset"])
                self.manager.submit(alter)
            elif op == "shrink":
                self.manager.submit(p.maybe_shrink_isr(now))
            elif op == "complete":
                self.manager.complete(a["partition_epoch"])
            elif op == "fail":
                self.manager.fail(Errors[a["error"]])
            elif op == "sleep":
                self.now[0] += int(a)
            elif op == "fence":
                self.metadata.fenced.add(a)
            elif op == "unfence":
                self.metadata.fenced.discard(a)
            elif op == "shutdown":
                self.metadata.shutting_down.add(a)
            elif op == "restart":
                self.metadata.shutting_down.discard(a)
            elif op == "set_hw":
                p.log.update_high_watermark(a, now)
            elif op == "log_start_offset":
                p.log.maybe_increment_log_start_offset(a, now, role="leader", reason="client_record_deletion")
            elif op == "truncate_fully_and_start_at":
                p.truncate_fully_and_start_at(a, now)
            elif op == "list_offsets":
                if a.get("latest", True):
                    self.last["result"] = p.fetch_latest_offset(a.get("isolation"), p.leader_epoch)
                else:
                    self.last["result"] = p.fetch_earliest_offset(p.leader_epoch)
            elif op == "last_offset_for_leader_epoch":
                eo = p.last_offset_for_leader_epoch(a.get("current"), a["epoch"], a.get("leader_only", True))
                self.last["result"] = [eo.leader_epoch, eo.end_offset]
                self.last["error"] = str(eo.error)
            else:
                raise AssertionError(f"unknown scenario op {op!r}")
            self.last.setdefault("error", "NONE")
        except ReplogError as exc:
            self.last["error"] = str(exc.error)
            self.last["exception"] = type(exc).__name__

    def _default_fetch_epoch(self, replica: int) -> int:
        # PartitionTest.fetchFollower sends the replica's default broker epoch when the metadata has one.
        return default_broker_epoch(replica) if self.metadata.epochs else -1

    # --- observations ----------------------------------------------------------------------------------

    def observe(self, key: str) -> Any:
        p = self.partition
        state = p.partition_state
        head = self.manager.isr_updates[0] if self.manager.isr_updates else None
        simple: dict[str, Any] = {
            "hw": lambda: p.log.high_watermark,
            "leo": lambda: p.log.log_end_offset,
            "lso": lambda: p.log.log_start_offset,
            "isr": lambda: sorted(state.isr),
            "maximal_isr": lambda: sorted(state.maximal_isr),
            "inflight": lambda: state.is_inflight,
            "state": lambda: ("committed" if isinstance(state, CommittedPartitionState) else
                              "pending_expand" if isinstance(state, PendingExpandIsr) else "pending_shrink"),
            "partition_epoch": lambda: p.partition_epoch,
            "leader_epoch": lambda: p.leader_epoch,
            "is_leader": lambda: p.is_leader,
            "leader": lambda: p.leader_replica_id,
            "epoch_start_offset": lambda: p.leader_epoch_start_offset,
            "epoch_cache": lambda: [list(e) for e in p.log.epoch_cache.entries],
            "pending_requests": lambda: len(self.manager.isr_updates),
            "submitted": lambda: self.manager.submitted,
            "sent_isr": lambda: list(head.leader_and_isr.isr) if head else None,
            "sent_broker_epochs": lambda: list(head.leader_and_isr.broker_epochs) if head else None,
            "under_min_isr": lambda: p.is_under_min_isr,
            "at_min_isr": lambda: p.is_at_min_isr,
            "under_replicated": lambda: p.is_under_replicated,
            "remote_replicas": lambda: sorted(p.remote_replicas),
            "replicas": lambda: list(p.replicas),
            "out_of_sync": lambda: sorted(p.get_out_of_sync_replicas(self.now[0])),
        }
        if key in self.last:
            return self.last[key]
        if key in simple:
            return simple[key]()
        if key in ("result", "error", "diverging"):
            return self.last.get(key)
        raise AssertionError(f"unknown expectation {key!r}")

    def check(self, expect: dict[str, Any], where: str) -> None:
        for key, want in expect.items():
            if key == "replica":
                for rid, fields in want.items():
                    r = self.partition.get_replica(int(rid))
                    assert r is not None, f"{where}: no replica state for {rid}"
                    got = {
                        "lcu": "never" if r.last_caught_up_time_ms == 0 else r.last_caught_up_time_ms - T0,
                        "leo": r.log_end_offset, "lso": r.log_start_offset, "broker_epoch": r.broker_epoch,
                    }
                    for f, v in fields.items():
                        assert got[f] == v, f"{where}: replica {rid} {f} = {got[f]!r}, expected {v!r}"
                continue
            got = self.observe(key)
            assert got == want, f"{where}: {key} = {got!r}, expected {want!r}"


def load_scenarios() -> list[Any]:
    params = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            params.append(pytest.param(doc, id=doc["kafka_test"].split(".")[-1]))
    return params


@pytest.mark.parametrize("doc", load_scenarios())
def test_partition_scenario(doc: dict[str, Any]) -> None:
    """Runs one PartitionTest port; the Kafka test it mirrors is the scenario's `kafka_test`."""
    runner = Runner(doc)
    for i, step in enumerate(doc["steps"]):
        step = dict(step)
        expect = step.pop("expect", {})
        assert len(step) == 1, f"step {i} must have one operation, got {sorted(step)}"
        (op, arg), = step.items()
        runner.run_step(op, arg if arg is not None else {})
        runner.check(expect, f"{doc['kafka_test']} step {i} ({op})")
