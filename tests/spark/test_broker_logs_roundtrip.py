"""Simulated runs read back from the broker logs Kafka would print for them (`tests/spark/kafka_log_render.py`).

Every replication event the engine emits that Kafka logs at INFO is written as its log line (Kafka 3.6 and 2.4
forms), read back by `jobs.broker_logs`, and compared with the engine's own event: what the line carries must come
back exactly, and what the reader derives from earlier lines (the leader epoch of an ISR change or truncation, a
commit's shrink / expand and the ISR it replaces) must be what the engine knew.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pyspark.sql import DataFrame, SparkSession

import jobs.invariants as inv
from jobs.broker_logs import BrokerLogOptions, read_broker_logs
from jobs.validate import classify
from replication_core.checker.catalogue import CATALOGUE, KAFKA_LOG
from replication_core.checker.checker import check_events
from replication_core.checker.reader import read_events
from replication_core.sim.cli import load_scenario, simulate
from replication_core.sim.scenario import Scenario, TruncationMode
from tests.sim.helpers import run
from tests.sim.test_fault_campaign import varied_scenario
from tests.spark.kafka_log_render import Expected, render

SCENARIOS = Path(__file__).resolve().parents[2] / "conf" / "scenarios"
FIELDS = ("ts_ms", "event_type", "topic", "partition", "action", "leader_epoch", "leader_id", "isr", "isr_state",
          "partition_epoch", "truncate_offset", "config", "fetcher_id", "fetch_offset", "error", "log_start_offset",
          "elr")


def _crash_with_an_epoch_request_retry() -> Scenario:
    """The leader crash with size-based retention, which moves the log start offsets (leaders' and followers' own,
    followers' to the leader's), truncating by OffsetsForLeaderEpoch (IBP before 2.7), where a follower may ask the
    new leader before it knows its epoch and retry (an epoch_request_retry): a race, so the run is the first seed's
    from 1 that draws it (the shipped seed 3 did until session 94, seed 8 until session 95: every change to what
    the producers send moves the network's draws)."""
    base = load_scenario(SCENARIOS / "leader-crash.yaml").with_retention(3000, 2000, 5000)
    for seed in range(1, 60):
        sc = base.with_overrides(truncation_mode=TruncationMode.LEADER_EPOCH, seed=seed)
        if any(e["event_type"] == "epoch_request_retry" for e in run(sc)[1]):
            return sc
    raise AssertionError("no seed of 1-59 draws an OffsetsForLeaderEpoch retry in the leader crash")


def _runs(tmp: Path) -> list[list[dict[str, Any]]]:
    crash = _crash_with_an_epoch_request_retry()
    scenarios = [crash, load_scenario(SCENARIOS / "slow-follower.yaml"),
                 load_scenario(SCENARIOS / "unclean-election.yaml"), *[varied_scenario(seed) for seed in (11, 12, 13)],
                 load_scenario(SCENARIOS / "kip-966-last-replica-standing.yaml")]
    runs = []
    for i, sc in enumerate(scenarios):
        simulate(sc, tmp / f"run-{i}")
        runs.append(list(read_events(tmp / f"run-{i}")))
    return runs


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> list[list[dict[str, Any]]]:
    """Seven runs: three shipped scenarios (one with an unclean election, one with size-based retention and
    truncation by OffsetsForLeaderEpoch), three seeded fault runs, and KIP-966's scenario with eligible leader
    replicas (an election from the ELR)."""
    return _runs(tmp_path_factory.mktemp("roundtrip"))


def _has_unclean_election(events: list[dict[str, Any]]) -> bool:
    return any(ev["event_type"] == "leader_election" and ev.get("action") == "unclean" for ev in events)


class Form(NamedTuple):
    """One way a cluster's logs can look (`render`'s parameters)."""

    style: str
    controller_log: bool
    ahead_ms: int = 0
    elr_parity: int = 1
    replay: bool = False

    def renders(self, events: list[dict[str, Any]]) -> bool:
        """Whether this form reads the run of `events`: a form whose lines differ from the first's only in the
        unclean elections reads only the runs that have one."""
        return (self.controller_log and self.elr_parity == 1 and not self.replay) or _has_unclean_election(events)


FORMS = [Form("3.6", True, 50), Form("3.6", False), Form("3.6", True, 0, elr_parity=0), Form("2.4", True),
         Form("3.6", True, 20, replay=True)]
"""The logs a cluster leaves: Kafka 3.6 with the controller's log (its clock 50 ms ahead of the brokers', so that
its election lines are often stamped after the new leader's), without it (the brokers' only), with it and its
elections in the other form (with or without the epochs), Kafka 2.4, and Kafka 3.6 with the lines the active and a
standby controller print as they replay each unclean election's record."""


class Read(NamedTuple):
    """One run's logs in one form, read back: the rendered files, what each event must read back as, and the
    classified records (computed once)."""

    files: dict[str, str]
    expected: list[Expected]
    got: DataFrame


class ReadBack:
    """Each run's logs in each form, rendered and read back at most once for the module: the read-back tests and the
    clean-runs audit ask for the same folders, and each read plans and runs the reader's deep plan."""

    def __init__(self, spark: SparkSession, root: Path, simulated: list[list[dict[str, Any]]]) -> None:
        self._spark, self._root, self._simulated = spark, root, simulated
        self._reads: dict[tuple[int, int], Read] = {}

    def read(self, i: int, form: Form) -> Read:
        """Run `i` rendered in `form`, its records classified (run id `r<i>-<form index>`), computed once."""
        k = FORMS.index(form)
        if (i, k) not in self._reads:
            files, expected = render(self._simulated[i], *form)
            folder = self._root / f"logs-{i}-{k}"
            folder.mkdir()
            for name, text in files.items():
                (folder / name).write_text(text, encoding="utf-8")
            got = classify(read_broker_logs(self._spark, sorted(str(p) for p in folder.iterdir()),
                                            BrokerLogOptions(f"r{i}-{k}")))
            self._reads[(i, k)] = Read(files, expected, got.localCheckpoint(eager=True))
        return self._reads[(i, k)]


@pytest.fixture(scope="module")
def read_back(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory,
              simulated: list[list[dict[str, Any]]]) -> ReadBack:
    """The module's reads of the simulated runs' logs (`ReadBack`)."""
    return ReadBack(spark, tmp_path_factory.mktemp("logs"), simulated)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f.style}-{f.controller_log}-{f.ahead_ms}-{f.elr_parity}"
                                                      + ("-replay" if f.replay else ""))
def test_every_logged_event_reads_back_as_the_engine_emitted_it(simulated: list[list[dict[str, Any]]],
                                                                read_back: ReadBack, form: Form) -> None:
    style, controller_log = form.style, form.controller_log
    checked: dict[str, int] = defaultdict(int)
    for i, events in enumerate(simulated):
        if not form.renders(events):
            continue  # the same lines as with the controller's log, which holds only unclean elections
        files, expected, got = read_back.read(i, form)
        rows = got.select("_source_file", "_source_line", "_reason", "broker_id", "reason", "replicas",
                          "adding_replicas", "removing_replicas", "hw", "leo", *FIELDS).collect()
        assert [r["_reason"] for r in rows if r["_reason"]] == []
        # A failed fetch request's line names each partition of the request: one event per partition.
        at_line = {(e.file, e.line, e.topic, e.partition): e for e in expected}
        by_id = {ev["event_id"]: ev for ev in events}
        assert len(rows) == len(expected) == len(at_line)
        for r in rows:
            want = at_line[(Path(r["_source_file"]).name, r["_source_line"], r["topic"], r["partition"])]
            broker = want.broker_id
            engine = by_id[want.event_id]
            got_row = {f: (tuple(r[f]) if f in ("isr", "elr") and r[f] is not None else r[f]) for f in FIELDS}
            wanted = {f: getattr(want, f) for f in FIELDS}
            if want.event_type == "isr_change" and want.isr_state == "committed":
                # Derived from the broker's earlier lines: the engine's own action.
                wanted["action"] = engine["action"]
            assert (r["broker_id"], got_row) == (broker, wanted), (style, i, engine)
            if want.event_type == "isr_change" and engine.get("reason") == "leader_and_isr":
                # The leader's registration in its epoch states the assignment (a reassignment keeps the epoch).
                for f in ("replicas", "adding_replicas", "removing_replicas"):
                    assert tuple(r[f] or ()) == tuple(engine.get(f) or ()), (style, i, engine)
                checked["assignment"] += 1
                checked["reassigning"] += bool(engine.get("adding_replicas") or engine.get("removing_replicas"))
            if want.event_type in ("hw_change", "log_load"):  # a replica's log taken in a (re)started process
                assert (r["hw"], r["leo"]) == (want.hw, want.leo), (style, i, engine)
            if want.event_type == "broker_lifecycle" and want.action == "crash":  # read at the restart
                assert r["reason"] == want.reason == "unclean_start", (style, i, engine)
                # Dated after the broker's last line, never after the engine's crash.
                assert want.ts_ms <= engine["ts_ms"], (style, i, engine)
            if want.event_type == "log_start_offset_change":  # what moved it, where the line says (2.8+)
                assert r["reason"] == want.reason, (style, i, engine)
                checked[f"log_start_reason_{want.reason}"] += 1
            checked[want.event_type] += 1
            checked["request_failed"] += want.error == "NETWORK_EXCEPTION"
            # An election line without the epochs that read back with the new leader's epoch.
            checked["lent_epoch"] += (want.event_type == "leader_election" and want.partition_epoch is None
                                      and want.leader_epoch is not None and controller_log)
            checked["replayed"] += want.event_type == "leader_election" and "UNCLEAN" in files[want.file].split(
                "\n")[want.line - 1] and want.action == "unclean"
            checked["from_elr"] += want.action == "elr"
            checked["crash"] += want.event_type == "broker_lifecycle" and want.action == "crash"
            checked["created"] += want.event_type == "leader_election" and engine.get("reason") == "topic_creation"
    if form.elr_parity == 0:
        assert checked["lent_epoch"] > 0, checked
    elif form.replay:  # each election once, read from the active controller's replay line
        assert checked["replayed"] == checked["leader_election"] - checked["created"] > 0, checked
    elif controller_log:  # every run
        assert checked["leadership_change"] > 0 and checked["isr_change"] > 0 and checked["truncation"] > 0, checked
        # KRaft's controllers tell of an election from the ELR in their replay lines only.
        assert (checked["from_elr"] > 0) == (style == "3.6"), checked
        # and each partition's first leader in the lines they print as they replay its creation.
        assert (checked["created"] > 0) == (style == "3.6"), checked
        if style == "3.6":  # a sitting leader's registration states the assignment, a move in progress included
            assert checked["assignment"] > 0 and checked["reassigning"] > 0, checked
        assert checked["fetch_response"] > 0, checked  # the fetch errors Kafka logs at INFO and above
        assert checked["request_failed"] > 0, checked  # the partitions of requests that got no answer
        assert checked["log_start_offset_change"] > 0, checked
        # Each replica's HW as its partition takes the log in a process, and the logs a restart loads.
        assert checked["hw_change"] > 0 and checked["log_load"] > 0, checked
        # A crash, from the restart's unclean log directory (2.6+), dated at the broker's last line before it.
        assert (checked["crash"] > 0) == (style == "3.6"), checked
        assert checked["epoch_request_retry"] > 0, checked  # the OffsetsForLeaderEpoch errors a follower retries
        assert checked["produce_ack"] > 0, checked  # the leaders' NOT_ENOUGH_REPLICAS refusals
        if style == "3.6":  # the leaders' retention and the followers' increments to their leader's start
            assert checked["log_start_reason_segment_deletion"] > 0, checked
            assert checked["log_start_reason_leader_offset_increment"] > 0, checked
    # Only the KRaft controller logs its unclean elections (the 2.x ZooKeeper controller prints no line); without
    # its log, the new leaders' RECOVERING lines (3.2+) tell of them.
    assert (checked["leader_election"] > 0) == (style == "3.6"), checked


def test_clean_runs_read_from_logs_stay_clean_and_the_audit_agrees(simulated: list[list[dict[str, Any]]],
                                                                    read_back: ReadBack) -> None:
    """Runs the checker finds clean stay clean read back from their logs (every form): the invariants that
    apply to logs find nothing the engine's events did not show, in the Spark audit and the checker alike."""
    for_logs = sorted(i.name for i in CATALOGUE if KAFKA_LOG in i.sources and i.name in inv.IMPLEMENTED)
    assert for_logs
    frames = []
    for i, events in enumerate(simulated):
        assert [v for v in check_events(events).violations if v.invariant in for_logs] == []
        for form in FORMS:
            if not form.renders(events):
                continue
            # The folders the read-back tests read (each alone: one plan of all the readers' deep plans took Spark a
            # third longer to run), their kept events.
            got = read_back.read(i, form).got.where("_reason_code IS NULL")
            frames.append(got.select(*[c for c in got.columns if not c.startswith("_") and c != "raw"]))
    events_df = frames[0]
    for f in frames[1:]:
        events_df = events_df.unionByName(f)
    rows = [r.asDict(recursive=True) for r in events_df.orderBy("run_id", "event_id").collect()]
    reference = [(v.run_id, v.invariant) for v in check_events(rows).violations if v.invariant in for_logs]
    audit = [(r["run_id"], r["invariant"]) for r in inv.evaluate(events_df, for_logs).collect()]
    assert reference == audit == []
