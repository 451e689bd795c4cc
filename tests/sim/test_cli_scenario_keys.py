"""Scenario key typos, as `replog simulate` reports them: an unknown key is named as itself (with the
known keys and, when difflib finds one, the closest), never as the required key it was meant to be, and
never as a doubly escaped repr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from replication_core.sim.cli import main
from replication_core.sim.scenario import ScenarioError, parse_scenario
from tests.sim.helpers import SCENARIOS

STEADY = str(SCENARIOS / "steady-state.yaml")
MINIMAL: dict[str, Any] = {
    "name": "m", "duration_ms": 1000, "cluster": {"brokers": 3},
    "topics": [{"name": "t", "partitions": 2, "replication_factor": 3}],
}


def test_top_level_typo_names_the_unknown_key() -> None:
    """`duraton_ms:` is reported as an unknown key (with the known keys and the likely intended one),
    not as a missing `duration_ms`."""
    doc = {k: v for k, v in MINIMAL.items() if k != "duration_ms"} | {"duraton_ms": 1000}
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    message = str(err.value)
    assert message.startswith("duraton_ms: expected no such key (did you mean 'duration_ms'?); known keys: "), message
    assert "broker_config, cluster, description, disk, duration_ms, faults," in message


def test_nested_typo_of_a_required_key_hints_at_it() -> None:
    """A missing required key with a near spelling in its mapping says so (`cluster: {brokres: 3}`)."""
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINIMAL | {"cluster": {"brokres": 3}})
    assert str(err.value) == ("cluster.brokers: expected an integer in 1..999 (required; "
                              "found cluster.brokres: a typo?)")


def test_unknown_nested_key_suggests_the_closest() -> None:
    """Unknown keys of nested sections list the known keys and, when one is close, suggest it."""
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINIMAL | {"cluster": {"brokers": 3, "controler_id": 1000}})
    assert str(err.value).startswith("cluster.controler_id: expected no such key (did you mean 'controller_id'?); "
                                     "known keys: auto_leader_rebalance_enable, broker_epochs, "
                                     "broker_heartbeat_interval_ms, ")


def test_unknown_broker_config_is_a_plain_message() -> None:
    """An unknown broker config: its name, the closest known name and the known names, without the
    doubly escaped repr of a KeyError."""
    with pytest.raises(ScenarioError) as err:
        parse_scenario(MINIMAL | {"broker_config": {"replica.lag.tme.max.ms": 5}})
    message = str(err.value)
    assert message.startswith("broker_config: expected Kafka replication config names (reference §1); "
                              "no such key 'replica.lag.tme.max.ms' (did you mean 'replica.lag.time.max.ms'?); "
                              "known keys: fetch.max.bytes, "), message
    assert "\\" not in message and '"' not in message and "replica.socket.timeout.ms" in message


def test_invalid_scenario_message_reaches_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the CLI: exit 2, one line naming the file and the unknown key."""
    bad = tmp_path / "typo.yaml"
    bad.write_text(Path(STEADY).read_text().replace("duration_ms:", "duraton_ms:"))
    assert main(["--scenario", str(bad), "--out", str(tmp_path / "o")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("replog simulate: error:")]
    assert len(lines) == 1 and lines[0].startswith(
        f"replog simulate: error: {bad}: duraton_ms: expected no such key (did you mean")


def test_the_known_top_level_keys_are_exactly_the_ones_the_parser_reads(monkeypatch) -> None:
    # TOP_LEVEL_KEYS is checked before any key is read; a key the parser reads but the list lacks would
    # reject a valid scenario, and one the list has but nothing reads would be accepted and ignored.
    import replication_core.sim.scenario as scenario

    read: set[str] = set()
    original = scenario._Reader.raw

    def recording(self, name, default=None):  # type: ignore[no-untyped-def]
        if self.path == "":
            read.add(name)
        return original(self, name, default)

    monkeypatch.setattr(scenario._Reader, "raw", recording)
    parse_scenario(MINIMAL)
    # `nemesis` is read only when present: the shipped nemesis scenario has it.
    parse_scenario(yaml.safe_load((SCENARIOS / "nemesis-small.yaml").read_text(encoding="utf-8")))
    assert read == set(scenario.TOP_LEVEL_KEYS)
