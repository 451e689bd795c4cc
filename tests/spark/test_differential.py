"""Differential test: the Spark audit and the reference checker agree exactly, run for run.

Every shipped scenario (shortened, except the KIP scenarios whose faults need their full length), the
KIP-101 / KIP-279 scenarios also in the protocol generation they describe and the KIP-966 one also without
eligible leader replicas (where the checker finds the loss, so the comparison is not vacuous), and seeded
random fault runs of `nemesis-small` (alternating the default mode and high-watermark truncation, which loses
data; most in the fault campaign's varied shapes, some with reassignments, a third with size-based retention)
are simulated; the checker reads their
files, and the same files go through ONE ingest and ONE audit (runs are partitioned by run_id, so the
Spark overhead is paid once). For each run, the violations of the invariants the Spark audit implements
must be the same set: (invariant, severity, topic, partition, replica, detecting event, time, offset, expected,
actual, evidence, message) as `replication_core.checker.violation.Violation` defines them: the message too, since
the report prints the audit's and an operator reads its cause (an unclean election, a crash loss). Any
disagreement is a bug in one of the two.

Opt-ins: REPLOG_DIFF_SEEDS=N (default 30) random fault runs; REPLOG_DIFF_FIRST_SEED=K (default 0) starts
them at seed K, so a long differential can look at seeds no earlier one did; REPLOG_DIFF_WIDE=1 draws them
as `tests.sim.campaign --wide` does (retention, unclean elections, min ISR 1, larger clusters, 10-30
virtual seconds); REPLOG_DIFF_DEEP=1 as `--deep` does (also replication factor 2 or 4, multi-record batches,
small fetch limits, acks=0, a second topic with its own min ISR); REPLOG_DIFF_CORRELATED=1 as `--correlated`
does (the deep shapes with two brokers' processes crashing at once); REPLOG_DIFF_OVERLAPPING=1 as
`--overlapping` does (those shapes with faults that overlap); REPLOG_DIFF_REASSIGNING=1 as `--reassigning` does
(overlapping, with reassignments drawn by the nemesis too); REPLOG_DIFF_POWER=1 as `--power` does (overlapping,
with power crashes too: committed records lost, so both sides report acked_write_lost, truncation_safety,
committed_prefix_agreement and inconsistent_offsets violations; with REPLOG_DIFF_REASSIGNING=1 too, both at once);
REPLOG_DIFF_THROTTLED=1 as `--throttled` does (the reassigning shapes with each drawn reassignment throttled by a
replication quota; with REPLOG_DIFF_POWER=1 too, power crashes as well);
REPLOG_DIFF_CAMPAIGN_MODE=1 keeps each seed's own
truncation mode, as the campaign runs it, instead of `high_watermark` for odd seeds (to compare a campaign
seed as found); REPLOG_DIFF_BEFORE_KIP903=1 runs the seeds without broker epochs
(`tests.sim.campaign.before_kip903`, to compare a seed found before the simulator modelled KIP-903 as found);
REPLOG_DIFF_BEFORE_METADATA_DELTAS=1 delivers metadata one update at a time
(`tests.sim.campaign.before_metadata_deltas`, to compare a seed found before session 66 as found);
REPLOG_DIFF_ELR=1 runs the seeds with eligible leader replicas (`tests.sim.campaign.with_elr`, KIP-966);
REPLOG_DIFF_LARGE=1 adds the heavy `large-30-brokers` scenario. The seeded runs' 1 s replica.socket.timeout.ms
is short enough that GC pauses and disk stalls push fetch answers past the audit's bound (it knows no network
delay): both sides must excuse the time those held each answer (`broker_fault`, schema 1.9).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from jobs.audit import AuditResult, run_audit
from jobs.ingest import run_ingest
from jobs.invariants import IMPLEMENTED
from jobs.lake import EmbeddedLake
from replication_core.checker.checker import check_events
from replication_core.checker.reader import read_events
from replication_core.config import TruncationMode
from replication_core.sim.cli import load_scenario, run_id_for, simulate
from replication_core.sim.scenario import Scenario
from schemas.audit import GOLD_INVARIANT_VIOLATIONS
from tests.sim.campaign import (
    before_kip903,
    before_metadata_deltas,
    correlated_scenario,
    deep_scenario,
    overlapping_scenario,
    power_reassigning_scenario,
    power_scenario,
    power_throttled_scenario,
    reassigning_scenario,
    throttled_scenario,
    wide_scenario,
    with_elr,
)
from tests.sim.test_fault_campaign import campaign_scenario, varied_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "conf" / "scenarios"
HEAVY = ("large-30-brokers",)
OLD_MODES: dict[str, TruncationMode] = {
    "kip-101-hw-truncation": TruncationMode.HIGH_WATERMARK,
    "kip-101-divergence": TruncationMode.HIGH_WATERMARK,
    "kip-279-fast-failover": TruncationMode.LEADER_EPOCH_V0,
}
# Run at full length, and also without eligible leader replicas (the Kafka before KIP-966 loses data there).
WITHOUT_ELR = ("kip-966-last-replica-standing",)
SHORT_MS = 15000
SEEDS = int(os.environ.get("REPLOG_DIFF_SEEDS", "30"))
FIRST_SEED = int(os.environ.get("REPLOG_DIFF_FIRST_SEED", "0"))
WIDE = os.environ.get("REPLOG_DIFF_WIDE") == "1"
DEEP = os.environ.get("REPLOG_DIFF_DEEP") == "1"
CORRELATED = os.environ.get("REPLOG_DIFF_CORRELATED") == "1"
OVERLAPPING = os.environ.get("REPLOG_DIFF_OVERLAPPING") == "1"
POWER = os.environ.get("REPLOG_DIFF_POWER") == "1"
REASSIGNING = os.environ.get("REPLOG_DIFF_REASSIGNING") == "1"
THROTTLED = os.environ.get("REPLOG_DIFF_THROTTLED") == "1"
LARGE = os.environ.get("REPLOG_DIFF_LARGE") == "1"
CAMPAIGN_MODE = os.environ.get("REPLOG_DIFF_CAMPAIGN_MODE") == "1"
BEFORE_KIP903 = os.environ.get("REPLOG_DIFF_BEFORE_KIP903") == "1"
ELR = os.environ.get("REPLOG_DIFF_ELR") == "1"
BEFORE_METADATA_DELTAS = os.environ.get("REPLOG_DIFF_BEFORE_METADATA_DELTAS") == "1"
if ELR and BEFORE_KIP903:
    raise ValueError("REPLOG_DIFF_ELR=1 needs broker epochs (Kafka 4 has them): unset REPLOG_DIFF_BEFORE_KIP903")

Key = tuple[str, str, str | None, int | None, int | None, int, int, int | None, int | None, int | None,
            tuple[int, ...]]


@dataclass(frozen=True)
class Case:
    """One simulated run of the comparison."""

    label: str
    scenario: Scenario
    old_mode: bool = False


def _cases() -> list[Case]:
    out: list[Case] = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        if path.stem in HEAVY and not LARGE:
            continue
        sc = load_scenario(path)
        if path.stem not in OLD_MODES and path.stem not in WITHOUT_ELR:
            sc = sc.with_overrides(duration_ms=min(sc.duration_ms, SHORT_MS))
        out.append(Case(path.stem, sc))
        if path.stem in WITHOUT_ELR:
            out.append(Case(f"{path.stem}@no-elr", sc.with_overrides(eligible_leader_replicas=False), old_mode=True))
        if path.stem in OLD_MODES:
            mode = OLD_MODES[path.stem]
            out.append(Case(f"{path.stem}@{mode.value}", sc.with_overrides(truncation_mode=mode), old_mode=True))
    for seed in range(FIRST_SEED, FIRST_SEED + SEEDS):
        mode = TruncationMode.HIGH_WATERMARK if seed % 2 and not CAMPAIGN_MODE else None
        # Two in three runs take the varied shapes (reassignments in some); one in three also has size-based
        # retention, whose log start offsets send new and lagging followers to truncateFullyAndStartAt.
        if THROTTLED:
            sc = power_throttled_scenario(seed) if POWER else throttled_scenario(seed)
        elif REASSIGNING and POWER:
            sc = power_reassigning_scenario(seed)
        elif REASSIGNING:
            sc = reassigning_scenario(seed)
        elif POWER:
            sc = power_scenario(seed)
        elif OVERLAPPING:
            sc = overlapping_scenario(seed)
        elif CORRELATED:
            sc = correlated_scenario(seed)
        elif DEEP:
            sc = deep_scenario(seed)
        elif WIDE:
            sc = wide_scenario(seed)
        else:
            sc = campaign_scenario(seed) if seed % 3 == 0 else varied_scenario(seed)
            if seed % 3 == 2:
                sc = sc.with_retention(3000, 1000, 500)
        if BEFORE_KIP903:
            sc = before_kip903(sc)
        if ELR:
            sc = with_elr(sc)
        if BEFORE_METADATA_DELTAS:
            sc = before_metadata_deltas(sc)
        out.append(Case(f"nemesis-s{seed}{'@high_watermark' if mode else ''}", sc.with_overrides(truncation_mode=mode)))
    return out


CASES = _cases()


@dataclass
class Outcome:
    """Both sides' violations per run_id, the checker's full counts, and the audit's result."""

    checker: dict[str, set[Key]] = field(default_factory=dict)
    spark: dict[str, set[Key]] = field(default_factory=dict)
    checker_all: dict[str, Counter[str]] = field(default_factory=dict)
    late_answers: dict[str, int] = field(default_factory=dict)
    """Per run: its NONE fetch answers that arrived after its socket timeout."""
    audit: AuditResult | None = None


@pytest.fixture(scope="module")
def outcome(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """Simulate every case, check it with the reference checker, then one ingest + one audit of all."""
    root = tmp_path_factory.mktemp("differential")
    landing = root / "landing"
    out = Outcome()
    for case in CASES:
        run_dir = landing / case.label.replace("@", "-")
        simulate(case.scenario, run_dir)
        events = list(read_events(run_dir))
        result = check_events(events)
        run_id = run_id_for(case.scenario)
        out.late_answers[run_id] = _answers_past(events, case.scenario.broker_config.replica_socket_timeout_ms)
        out.checker[run_id] = {
            (v.invariant, v.severity, v.topic, v.partition, v.replica, v.event_id, v.ts_ms, v.offset, v.expected,
             v.actual, tuple(v.evidence), v.message)
            for v in result.violations if v.invariant in IMPLEMENTED
        }
        out.checker_all[run_id] = Counter(v.invariant for v in result.violations)
        out.spark[run_id] = set()
    lake = EmbeddedLake(spark, str(root / "lake"))
    run_ingest(spark, lake, str(landing), log=lambda _: None)
    out.audit = run_audit(spark, lake, fail_on="never", log=lambda _: None)
    # The violations only (a handful per run), not events: small enough to compare in the driver.
    for r in lake.read(GOLD_INVARIANT_VIOLATIONS).collect():
        out.spark.setdefault(r["run_id"], set()).add(
            (r["invariant"], r["severity"], r["topic"], r["partition"], r["replica"], r["event_id"], r["ts_ms"],
             r["offset"], r["expected"], r["actual"], tuple(r["evidence"]), r["message"]))
    return out


def test_the_audit_of_every_run_succeeds(outcome: Outcome) -> None:
    """One ingest + one audit over all runs; fail_on=never so violations do not change the exit code."""
    assert outcome.audit is not None and outcome.audit.error is None, outcome.audit and outcome.audit.error
    assert outcome.audit.exit_code == 0
    assert sorted(outcome.audit.runs) == sorted(outcome.checker)


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_spark_audit_agrees_with_the_reference_checker(outcome: Outcome, case: Case) -> None:
    """Same (invariant, severity, partition, replica, event, time, offsets, evidence, message) on both sides for this
    run (the time matters for the end-of-run checks, which have no event: both date a lost write at its loss; the
    evidence, the proving event ids in the checker's order, is what the report links and draws)."""
    run_id = run_id_for(case.scenario)
    checker, spark = outcome.checker[run_id], outcome.spark.get(run_id, set())
    assert spark == checker, {"only_checker": sorted(checker - spark, key=repr),
                              "only_spark": sorted(spark - checker, key=repr)}


def test_old_protocol_generations_lose_data_so_the_comparison_is_not_vacuous(outcome: Outcome) -> None:
    """KIP-101 / KIP-279 in their old mode, KIP-966 without ELR: the checker finds violations, some among the
    compared ones."""
    old = [run_id_for(c.scenario) for c in CASES if c.old_mode]
    assert old and all(outcome.checker_all[r] for r in old), {r: outcome.checker_all[r] for r in old}
    assert any(outcome.checker[r] for r in old), "no compared invariant fires in any old-mode run"


def test_acks1_losses_are_compared_so_that_comparison_is_not_vacuous(outcome: Outcome) -> None:
    """Scenarios and seeded runs with an acks=1 producer lose acks=1 writes in failovers: the checker's
    acks1_write_lost info findings are among the compared ones, in several runs."""
    found = {r: n for r, keys in outcome.checker.items()
             if (n := sum(1 for k in keys if k[:2] == ("acks1_write_lost", "info")))}
    assert len(found) >= 3, found


def _answers_past(events: list[dict], bound_ms: int) -> int:
    """NONE fetch answers that arrived more than `bound_ms` after the fetch they answer."""
    sent: dict[tuple, int] = {}
    late = 0
    for ev in events:
        key = (ev["broker_id"], ev.get("topic"), ev.get("partition"))
        if ev["event_type"] == "fetch":
            sent[key] = ev["ts_ms"]
        elif ev["event_type"] == "fetch_response" and ev.get("error") == "NONE" and key in sent:
            late += (ev.get("response_received_ms") or ev["ts_ms"]) - sent.pop(key) > bound_ms
    return late


def test_answers_held_past_the_socket_timeout_by_pauses_and_stalls_are_no_violation(outcome: Outcome) -> None:
    """The comparison of `delayed_fetch_bound` is not vacuous: seeded runs have NONE answers later than their
    socket timeout, held by GC pauses and disk stalls, which the checker (and so the audit) excuses."""
    seeded = [run_id_for(c.scenario) for c in CASES if c.label.startswith("nemesis-s")]
    assert sum(outcome.late_answers[r] for r in seeded) > 0
    assert [k for r in seeded for k in outcome.checker[r] if k[0] == "delayed_fetch_bound"] == []


def test_at_least_thirty_random_fault_runs_are_compared() -> None:
    """The issue asks for >= 30 seeded fault runs (REPLOG_DIFF_SEEDS may only raise it)."""
    if SEEDS < 30:
        pytest.skip(f"REPLOG_DIFF_SEEDS={SEEDS} lowers the campaign below the required 30")
    assert sum(c.label.startswith("nemesis-s") for c in CASES) >= 30
