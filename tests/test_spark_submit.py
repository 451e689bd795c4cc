"""`./spark-submit.sh`: a command submitted through Spark runs the checkout's code, as `replog` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from replication_core._native_guard import core_compiled
from replication_core.sim.cli import code_version

ROOT = Path(__file__).resolve().parents[1]


def test_a_submitted_command_runs_the_checkouts_code_not_the_zips(tmp_path: Path) -> None:
    # spark-submit puts the --py-files zip first on the driver's path; imported from it, the engine ran
    # interpreted (no extension loads from a zip), run.json's code_version digested no source, and the
    # demo looked for its default scenario inside the zip. The driver now imports the checkout.
    env = {**os.environ, "PYTHON": sys.executable, "MASTER": "local[1]"}
    env.pop("REPLOG_CONFIG", None)
    done = subprocess.run(
        [str(ROOT / "spark-submit.sh"), "simulate", "--scenario", str(ROOT / "conf/scenarios/steady-state.yaml"),
         "--out", str(tmp_path / "out"), "--duration-ms", "2000"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "run.json").read_text())
    assert manifest["code_version"] == code_version()
    assert manifest["core_compiled"] is core_compiled()
    assert (ROOT / "build" / "replog.zip").is_file(), "the executors' zip was still built and shipped"


def test_a_failed_submitted_job_exits_2_with_its_reason_and_no_info_lines(tmp_path: Path) -> None:
    # Spark's default log4j profile logs ~45 INFO lines at every SparkContext start, burying the one line
    # that says why a job failed; conf/log4j2.properties keeps warnings and errors. PythonRunner merges
    # the driver's stderr into its stdout, so the reason arrives there.
    env = {**os.environ, "PYTHON": sys.executable, "MASTER": "local[1]"}
    env.pop("REPLOG_CONFIG", None)
    env.pop("SPARK_CONF_DIR", None)
    done = subprocess.run([str(ROOT / "spark-submit.sh"), "timelines", "--lake", str(tmp_path / "no-lake")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stderr[-3000:]
    assert (f"replog timelines: failed: MissingInputError: no bronze/replication_events table in lake "
            f"{tmp_path / 'no-lake'}: run `replog ingest` first") in done.stdout
    assert [line for line in done.stderr.splitlines() if " INFO " in line] == []
