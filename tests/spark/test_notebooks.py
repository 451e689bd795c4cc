"""The notebooks in `notebooks/`, run as the scripts they are, against a lake the jobs built from a simulated
unclean election: each answers its questions, and the answers agree with the reference checker."""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.audit import run_audit
from jobs.ingest import run_ingest
from jobs.lag import run_lag
from jobs.lake import EmbeddedLake
from jobs.timelines import run_timelines
from replication_core.checker.checker import check_events
from replication_core.checker.reader import read_events
from replication_core.sim.cli import load_scenario, run_id_for, simulate
from schemas.audit import GOLD_INVARIANT_VIOLATIONS
from schemas.spark import to_spark_schema

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SCENARIO = Path(__file__).resolve().parents[2] / "conf" / "scenarios" / "unclean-election.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
QUIET = {"log": lambda _: None}


@pytest.fixture(scope="module")
def incident(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The unclean-election scenario cut at 40 s (its crash at 30 s, the unclean election at 34.5 s), through
    ingest, timelines, lag and audit; with the reference checker's lost offsets."""
    root = tmp_path_factory.mktemp("notebooks")
    scenario = load_scenario(SCENARIO).with_overrides(duration_ms=40_000)
    simulate(scenario, root / "events")
    lake = EmbeddedLake(spark, str(root / "lake"))
    run_ingest(spark, lake, str(root / "events"), **QUIET)
    run_timelines(spark, lake, **QUIET)
    run_lag(spark, lake, **QUIET)
    assert run_audit(spark, lake, fail_on="never", **QUIET).exit_code == 0
    lost = {(v.topic, v.partition, v.offset) for v in check_events(read_events(root / "events")).violations
            if v.invariant == "acked_write_lost"}
    return {"root": root, "lake": root / "lake", "run_id": run_id_for(scenario), "lost": lost}


def _run(name: str, incident: dict[str, Any], monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    monkeypatch.setenv("REPLOG_LAKE", str(incident["lake"]))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return runpy.run_path(str(NOTEBOOKS / name), run_name="__main__")


def test_every_notebook_is_tested() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.py")) == ["bronze_overview.py", "incident_investigation.py"]


def test_bronze_overview_counts_what_landed(incident: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run("bronze_overview.py", incident, monkeypatch)
    per_type = {(r["run_id"], r["event_type"]): r["events"] for r in ns["per_type"].collect()}
    events = ns["lake"].read(ns["BRONZE_EVENTS"])
    assert sum(per_type.values()) == events.count()
    assert per_type[(incident["run_id"], "leader_election")] == 2  # the topic's creation, the unclean election


def test_incident_notebook_answers_the_three_questions(incident: dict[str, Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    out = incident["root"] / "pictures"
    ns = _run("incident_investigation.py", incident, monkeypatch, REPLOG_OUT=str(out))
    run = incident["run_id"]
    assert ns["runs"] == [run]
    # The cluster through the incident: the report's overview of the run.
    (overview,) = ns["overviews"]
    assert overview.parent == out and overview.name.startswith("overview-001-")
    assert overview.read_bytes()[:8] == PNG_MAGIC
    # Its lanes' faults, listed under it: the scenario's 30 s disk stall of broker 2 from 5 s.
    (drawn,) = ns["drawn"]
    assert [(f.broker, f.kind, f.start_s, f.end_s, f.open) for f in drawn.faults] == [(2, "disk_stall", 5.0, 35.0,
                                                                                        False)]

    # 1. Lost acknowledged writes: exactly the checker's, one row per offset, and the election behind them.
    lost = {(r["topic"], r["partition"], r["offset"]) for r in ns["lost"].collect()}
    assert lost and lost == incident["lost"]
    assert ns["lost_total"] == len(lost)
    elections = [(r["election"], r["leader_id"]) for r in ns["elections"].collect()]
    assert elections == [("clean", 1), ("unclean", 2)]
    acked = ns["acked"].where((F.col("acks") == -1) & (F.col("error") == "NONE")).collect()
    assert acked and acked[0]["records_acknowledged"] >= len(lost)

    # 2. Broker 2's stalled disk: one lag incident, shrunk on time, nothing late, missing or premature.
    assert [(r["verdict"], r["incidents"]) for r in ns["verdicts"].collect()] == [("on_time", 1)]
    assert ns["attention"].count() == 0

    # 3. The partition: at the unclean election the old leader is offline and the new one lacks the lost writes.
    assert ns["focus"] == (run, "risky", 0)
    at_election = {r["replica_id"]: r for r in ns["story"].collect() if r["moment"].startswith("unclean election")}
    assert at_election[1]["role"] == "offline"
    assert at_election[2]["log_end_offset"] <= min(offset for _, _, offset in lost) < at_election[1]["log_end_offset"]
    picture = ns["pictures"][0]
    assert picture.parent == out and picture.read_bytes()[:8] == PNG_MAGIC
    # Printed under it, the key to its numbered evidence rings, as the report prints it.
    key = ns["partition_picture"].key_text()
    assert key.startswith("Numbered evidence in the picture: 1. ") and ", event " in key

    # In short. The scenario has no acks=1 producer: none of its writes to lose.
    assert ns["conclusion"] == [
        f"acks=all writes acknowledged and lost: {len(lost)} on 1 partition(s); acks=1: 0 on 0 partition(s) (Kafka "
        "allows it: severity info, never a failure; acks=0 writes are not checked); unclean elections: 1.",
        "Lag incidents: 1, of which late, missing or premature: 0.",
        f"Partition risky-0 of run {run}: {picture}",
    ]


def test_incident_notebook_plots_the_partition_it_is_given(incident: dict[str, Any],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ns = _run("incident_investigation.py", incident, monkeypatch, REPLOG_OUT=str(incident["root"] / "given"),
              REPLOG_RUN=incident["run_id"], REPLOG_TOPIC="risky", REPLOG_PARTITION="0")
    assert ns["focus"] == (incident["run_id"], "risky", 0)
    assert ns["pictures"][0].name.endswith("-risky-0.png")


def test_incident_notebook_counts_acks1_losses_apart(spark: SparkSession, incident: dict[str, Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the lake with three acks=1 writes lost on risky-0, as the audit's acks1_write_lost writes them
    (severity info; the scenario has no acks=1 producer): the notebook counts them apart from the acks=all ones."""
    root = incident["root"] / "acks1"
    shutil.copytree(incident["lake"], root / "lake")
    lake = EmbeddedLake(spark, str(root / "lake"))
    fields = to_spark_schema(GOLD_INVARIANT_VIOLATIONS.schema)
    rows = [dict(run_id=incident["run_id"], invariant="acks1_write_lost", severity="info", topic="risky",
                 partition=partition, replica=2, ts_ms=0, event_id=-1, offset=offset, expected=1, actual=-1,
                 evidence=[], message=f"acks=1 write acknowledged at {offset}..{offset} by broker 1 is not on final "
                                      f"leader 2 at {offset} (1 offsets)", audit_id="audit-acks1")
            for partition, offset in ((0, 900), (0, 901), (0, 902))]
    lake.append(GOLD_INVARIANT_VIOLATIONS, spark.createDataFrame([{f.name: r.get(f.name) for f in fields}
                                                                  for r in rows], fields))
    ns = _run("incident_investigation.py", dict(incident, lake=root / "lake"), monkeypatch,
              REPLOG_OUT=str(root / "pictures"))
    lost = {(r["topic"], r["partition"], r["offset"]) for r in ns["lost"].collect()}
    assert lost == incident["lost"], "acks=all losses only"
    per_partition = {(r["partition"], r["acks"]): r["writes_lost"] for r in ns["lost_by_partition"].collect()}
    assert per_partition == {(0, "all"): len(lost), (0, "1"): 3}
    assert ns["focus"] == (incident["run_id"], "risky", 0)
    assert ns["conclusion"][0] == (
        f"acks=all writes acknowledged and lost: {len(lost)} on 1 partition(s); acks=1: 3 on 1 partition(s) (Kafka "
        "allows it: severity info, never a failure; acks=0 writes are not checked); unclean elections: 1.")
