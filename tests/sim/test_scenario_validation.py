"""Scenarios are validated on load; every error names the key and the expected form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from replication_core.config import ReplicationConfig, TruncationMode
from replication_core.sim.scenario import NEMESIS_FAULTS, OPTIONAL_NEMESIS_FAULTS, ScenarioError, parse_scenario
from tests.sim.helpers import SCENARIOS, scenario

MINIMAL: dict[str, Any] = {
    "name": "m", "duration_ms": 1000, "cluster": {"brokers": 3},
    "topics": [{"name": "t", "partitions": 2, "replication_factor": 3}],
}


def _with(**changes: Any) -> dict[str, Any]:
    doc = yaml.safe_load(yaml.safe_dump(MINIMAL))
    doc.update(changes)
    return doc


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_scenario_loads(path: Path) -> None:
    """All files of conf/scenarios validate, and their name is their file name."""
    sc = scenario(path.stem)
    assert sc.name == path.stem


@pytest.mark.parametrize("path", sorted((SCENARIOS.parents[1] / "benchmarks" / "scenarios").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_benchmark_scenario_loads(path: Path) -> None:
    """The benchmarks' own scenarios (run by commands in benchmarks/README.md) validate too."""
    assert parse_scenario(yaml.safe_load(path.read_text())).name == path.stem


def test_a_segment_must_hold_a_produced_batch() -> None:
    """`disk.segment_bytes` below a producer's batch (`records_per_batch` x `record_bytes`) is refused:
    `UnifiedLog.append` refuses an append larger than a segment. A fetch size above it is fine: a leader's read ends
    at its segment's end."""
    def doc(segment_bytes: int) -> dict[str, Any]:
        return _with(disk={"segment_bytes": segment_bytes}, broker_config={"replica.fetch.max.bytes": 10**6},
                     workload={"producers": [{"topic": "t", "record_bytes": 100, "records_per_batch": 300}]})

    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc(29999))
    assert str(err.value) == ("disk.segment_bytes: expected an integer >= 30000 (the largest produced batch: Kafka "
                              "refuses an append larger than a segment), got 29999")
    assert parse_scenario(doc(30000)).disk.segment_bytes == 30000


def test_the_log_start_checkpoint_keys_default_to_kafkas_and_are_checked() -> None:
    """`disk.log_start_offset_checkpoint_interval_ms` (`log.flush.start.offset.checkpoint.interval.ms`, 60 s) and
    `disk.initial_task_delay_ms` (`log.initial.task.delay.ms`, 30 s) default to Kafka's; a bad value names its key."""
    disk = parse_scenario(_with()).disk
    assert (disk.log_start_offset_checkpoint_interval_ms, disk.initial_task_delay_ms) == (60000, 30000)
    set_ = parse_scenario(_with(disk={"log_start_offset_checkpoint_interval_ms": 500, "initial_task_delay_ms": 0}))
    assert (set_.disk.log_start_offset_checkpoint_interval_ms, set_.disk.initial_task_delay_ms) == (500, 0)
    with pytest.raises(ScenarioError, match=r"^disk\.log_start_offset_checkpoint_interval_ms: .*got 0$"):
        parse_scenario(_with(disk={"log_start_offset_checkpoint_interval_ms": 0}))
    with pytest.raises(ScenarioError, match=r"^disk\.initial_task_delay_ms: .*got -1$"):
        parse_scenario(_with(disk={"initial_task_delay_ms": -1}))


def test_defaults_are_kafkas() -> None:
    """Unset broker configs keep ReplicationConfig's (Kafka's) defaults; the clock starts far from 0."""
    sc = parse_scenario(_with())
    assert sc.broker_config == ReplicationConfig()
    assert sc.truncation_mode is TruncationMode.DIVERGING_EPOCH
    assert sc.start_ms > 10 * sc.broker_config.replica_lag_time_max_ms


@pytest.mark.parametrize(("doc", "key", "form"), [
    (_with(duration_ms="long"), "duration_ms", "an integer >= 1"),
    (_with(cluster={"brokers": 0}), "cluster.brokers", "an integer in 1..999"),
    (_with(topics=[{"name": "t", "replication_factor": 5}]), "topics[0].replication_factor", "1..3"),
    (_with(topics=[{"name": "t", "config": {"retention.ms": 1}}]), "topics[0].config.retention.ms", "one of"),
    (_with(truncation_mode="zookeeper"), "truncation_mode", "high-watermark"),
    (_with(broker_config={"replica.lag.time.max": 5}), "broker_config", "Kafka replication config names"),
    (_with(network={"latency_ms": {"dist": "normal"}}), "network.latency_ms.dist", "constant, uniform"),
    (_with(faults=[{"at_ms": 5, "action": "explode"}]), "faults[0].action", "one of crash"),
    (_with(faults=[{"at_ms": 5, "action": "crash", "broker": 9}]), "faults[0].broker", "1..3"),
    (_with(faults=[{"at_ms": 5, "action": "partition", "from": [1], "to": "x"}]), "faults[0].to",
     "a list of integers"),
    (_with(workload={"producers": [{"topic": "nope"}]}), "workload.producers[0].topic", "one of t"),
    (_with(workload={"producers": [{"topic": "t", "acks": 2}]}), "workload.producers[0].acks", "acks as all"),
    (_with(nemesis={"faults": ["meteor"]}), "nemesis.faults", "a non-empty list drawn from"),
    (_with(nemesis={"faults": ["reassign"], "throttle_rates": [0]}), "nemesis.throttle_rates",
     "a list of integers >= 1"),
    (_with(nemesis={"faults": ["reassign"], "throttle_rates": 500}), "nemesis.throttle_rates",
     "a list of integers >= 1"),
    (_with(nemesis={"faults": ["crash"], "throttle_rates": [500]}), "nemesis.throttle_rates",
     "only with 'reassign'"),
    (_with(colour="blue"), "colour", "no such key"),
    (_with(broker_config={"replica.lag.time.max.ms": "abc"}), "broker_config.replica.lag.time.max.ms",
     "expected an integer >= 0, got 'abc'"),
    (_with(broker_config={"replica.lag.time.max.ms": -5}), "broker_config.replica.lag.time.max.ms",
     "expected an integer >= 0, got -5"),
    (_with(broker_config={"replica.fetch.wait.max.ms": 1.5}), "broker_config.replica.fetch.wait.max.ms",
     "got 1.5"),
    (_with(broker_config={"num.replica.fetchers": True}), "broker_config.num.replica.fetchers", "got True"),
    (_with(broker_config={"num.replica.fetchers": 0}), "broker_config.num.replica.fetchers",
     "expected an integer >= 1, got 0"),
    (_with(broker_config={"unclean.leader.election.enable": "yes"}),
     "broker_config.unclean.leader.election.enable", "expected true or false, got 'yes'"),
    (_with(broker_config={"replica.lag.time.max.ms": 400}), "broker_config",
     "replica.fetch.wait.max.ms (500) should always be less than or equal to replica.lag.time.max.ms (400)"),
    (_with(topics=[{"name": "t", "config": {"min.insync.replicas": "two"}}]),
     "topics[0].config.min.insync.replicas", "expected an integer >= 0, got 'two'"),
])
def test_errors_name_the_key_and_the_expected_form(doc: dict[str, Any], key: str, form: str) -> None:
    """The message starts with the key path and says what was expected."""
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    assert str(err.value).startswith(f"{key}:"), str(err.value)
    assert form in str(err.value)


def test_cli_overrides() -> None:
    """--seed / --duration-ms / --truncation-mode / --format replace the scenario's values."""
    sc = parse_scenario(_with()).with_overrides(seed=9, duration_ms=5, truncation_mode=TruncationMode.HIGH_WATERMARK,
                                                fmt="jsonl")
    assert (sc.seed, sc.duration_ms, sc.truncation_mode, sc.writer.format) == (
        9, 5, TruncationMode.HIGH_WATERMARK, "jsonl")


@pytest.mark.parametrize("kind", OPTIONAL_NEMESIS_FAULTS)
def test_scenarios_may_list_an_optional_nemesis_fault_the_default_nemesis_does_not_draw(kind: str) -> None:
    """`correlated_crash` and `reassign` are drawn only when a scenario lists them."""
    doc = _with(nemesis={"faults": ["crash", kind]})
    assert parse_scenario(doc).nemesis.faults == ("crash", kind)
    assert kind not in NEMESIS_FAULTS  # existing seeded runs keep their fault sequences


def test_a_nemesis_may_throttle_the_reassignments_it_draws() -> None:
    """`nemesis.throttle_rates` lists the replication quotas a drawn reassignment is throttled at."""
    doc = _with(nemesis={"faults": ["crash", "reassign"], "throttle_rates": [500, 30000]})
    assert parse_scenario(doc).nemesis.throttle_rates == (500, 30000)
    assert parse_scenario(_with(nemesis={"faults": ["reassign"]})).nemesis.throttle_rates == ()


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\n  bad: : [\n",
     "<document>: expected valid YAML (line 2, column 6: mapping values are not allowed here)"),
    ("", "<document>: expected a mapping of scenario keys (name, duration_ms, cluster, topics, ...), got an empty "
         "document"),
])
def test_yaml_that_is_no_scenario_is_named_in_one_line(text: str, message: str) -> None:
    """A syntax error says where (line, column) and what on one line; an empty file says it is empty."""
    from replication_core.sim.scenario import parse_scenario_text

    with pytest.raises(ScenarioError) as err:
        parse_scenario_text(text)
    assert str(err.value) == message
