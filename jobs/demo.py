"""`replog demo`: the main job end to end on the embedded default.

    simulate a scenario -> ingest its events into bronze -> reference check
        -> timelines (silver) -> lag (gold) -> Spark audit (gold) -> incident report -> summary

Each stage prints a numbered header, so a newcomer can follow what happens and rerun any stage
on its own with the command shown.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from jobs.config import IngestConfig, ReportConfig
from jobs.ingest import run_ingest
from jobs.lake import Lake
from jobs.report import landed_summary

DEFAULT_SCENARIO = Path(__file__).resolve().parent.parent / "conf" / "scenarios" / "steady-state.yaml"


def run_demo(
    session: Callable[[], tuple[SparkSession, Lake]],
    scenario: Path,
    out: Path,
    log: Callable[[str], None] = print,
    report: ReportConfig | None = None,
    ingest: IngestConfig | None = None,
) -> int:
    """Run the pipeline; `session` starts Spark lazily (after the pure-Python stages).

    `report` and `ingest` are the config's sections of those names (the incident report's caps and
    output folder; how landing files are read).
    """
    from jobs.audit import run_audit
    from jobs.incident_report import run_report
    from jobs.lag import run_lag
    from jobs.timelines import run_timelines
    from replication_core.checker.checker import check_events
    from replication_core.checker.cli import DEFAULT_MAX_PER_GROUP, printed_lines
    from replication_core.checker.cli import summary as check_summary
    from replication_core.checker.reader import read_events
    from replication_core.sim.cli import read_scenario, reusable_run, simulate

    loaded = read_scenario(scenario)  # a bad file fails here, naming itself, before any stage starts
    stages = 7
    log(f"[1/{stages}] simulate {scenario}  (replog simulate --scenario {scenario} --out {out})")
    # A demo run again keeps its files: simulated anew they would be the same events in new files, which ingest
    # would read and quarantine as duplicates.
    manifest = reusable_run(loaded, out)
    if manifest is None:
        manifest, _ = simulate(loaded, out)
    else:
        log(f"      {out} already holds this run, simulated by this code: not simulated again "
            "(remove the folder to simulate it anew)")
    log(f"      {manifest['events']:,} events of run {manifest['run_id']} in {len(manifest['files'])} file(s)")

    run = manifest["run_id"]
    spark, lake = session()
    # The commands that repeat a stage on its own, for this lake and this run.
    where, only = f" --lake {lake.root}", f" --lake {lake.root} --run {run}"
    log(f"[2/{stages}] ingest {out} into bronze  (replog ingest --landing {out}{where})")
    result = run_ingest(spark, lake, str(out), log=lambda m: log("      " + m),
                        whole_files=(ingest or IngestConfig()).whole_files)
    log("\n".join("      " + line for line in result.summary().splitlines()))

    log(f"[3/{stages}] reference check  (replog check --events {out})")
    checked = check_events(read_events(out))
    # As `replog check` prints them: one root cause can repeat at every HW step, so a group stops at 20 lines.
    for line in printed_lines(checked.violations, DEFAULT_MAX_PER_GROUP):
        log("      " + line)
    log("      " + check_summary(checked))

    def indent(message: str) -> None:
        # Every line under its stage's header: the audit's summary has one line per invariant.
        log("      " + message.replace("\n", "\n      "))

    # This run only: a lake an earlier demo left runs in must not decide this demo's exit code.
    log(f"[4/{stages}] timelines  (replog timelines{only})")
    log("      " + run_timelines(spark, lake, runs=[run], log=indent).summary().replace("\n", "\n      "))
    log(f"[5/{stages}] lag  (replog lag{only})")
    log("      " + run_lag(spark, lake, runs=[run], log=indent).summary().replace("\n", "\n      "))
    log(f"[6/{stages}] audit  (replog audit{only})")
    audit = run_audit(spark, lake, runs=[run], log=indent)  # logs its own summary
    log(f"[7/{stages}] report  (replog report{only})")
    made = None
    if audit.error is None:
        made = run_report(spark, lake, report, runs=[run], log=indent)
        log("      " + made.summary().replace("\n", "\n      "))
    else:
        log("      skipped: the audit failed, there is nothing new to report")

    log("")
    log(landed_summary(lake))
    if made is not None:
        log(f"report: {made.html_path}")
    return int(audit.exit_code)
