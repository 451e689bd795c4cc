"""The stale-extension guard: a compiled module whose source changed since the build refuses to import.

In an editable install Python imports `partition.cpython-311-....so` rather than `partition.py`, so an
edit to the source would silently not run. `replication_core._native_guard.check_compiled_build` (run
by `replication_core/__init__.py`) compares each compiled source with the sha256 the build recorded.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from replication_core._native_guard import (
    MANIFEST_NAME,
    StaleCompiledModuleError,
    check_compiled_build,
    compiled_extensions,
    core_compiled,
)
from replication_core.replica_manager import ReplicaManager

PACKAGE = Path(__file__).resolve().parents[2] / "replication_core"
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _fake_build(tmp_path: Path, sources: dict[str, str], record: bool = True) -> Path:
    """A package `pkg` with the given sources, an (empty) extension next to each and, if `record`, the
    build record of their hashes, as `setup.py` writes it."""
    pkg = tmp_path / "pkg"
    recorded = {}
    for rel, text in sources.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.with_name(path.stem + SUFFIX).write_bytes(b"")
        recorded["pkg." + rel[:-3].replace("/", ".")] = hashlib.sha256(text.encode()).hexdigest()
    (pkg / ("_native__mypyc" + SUFFIX)).write_bytes(b"")  # the group's library: no source of its own
    (pkg / "__init__.py").write_text("")
    if record:
        (pkg / MANIFEST_NAME).write_text(json.dumps({"group": "pkg._native", "sources": recorded}))
    return pkg


def test_matching_build_passes(tmp_path: Path) -> None:
    """Every extension recorded with its source's current hash: no error; modules found in sub-packages."""
    pkg = _fake_build(tmp_path, {"log.py": "A = 1\n", "sim/broker.py": "B = 2\n"})
    assert set(compiled_extensions(str(pkg))) == {"pkg.log", "pkg.sim.broker"}
    check_compiled_build(str(pkg))


def test_edited_source_is_reported_with_the_rebuild_command(tmp_path: Path) -> None:
    """A source edited after the build: ImportError naming the module and how to rebuild."""
    pkg = _fake_build(tmp_path, {"log.py": "A = 1\n", "sim/broker.py": "B = 2\n"})
    (pkg / "sim" / "broker.py").write_text("B = 3\n")
    with pytest.raises(ImportError, match=r"pkg\.sim\.broker: broker\.py changed") as info:
        check_compiled_build(str(pkg))
    assert isinstance(info.value, StaleCompiledModuleError) and info.value.name == "pkg.sim.broker"
    assert "pip install -e" in str(info.value) and "REPLOG_PURE_PYTHON=1" in str(info.value)


def test_extension_without_build_record_is_refused(tmp_path: Path) -> None:
    """Extensions but no record of what they were built from: refused, not trusted."""
    pkg = _fake_build(tmp_path, {"log.py": "A = 1\n"}, record=False)
    with pytest.raises(StaleCompiledModuleError, match=r"pkg\.log: a compiled extension without a build record"):
        check_compiled_build(str(pkg))


def test_extension_missing_from_the_record_is_refused(tmp_path: Path) -> None:
    """An extension the last build did not produce (left over from an older build): refused."""
    pkg = _fake_build(tmp_path, {"log.py": "A = 1\n"})
    (pkg / "quota.py").write_text("Q = 1\n")
    (pkg / ("quota" + SUFFIX)).write_bytes(b"")
    with pytest.raises(StaleCompiledModuleError, match=r"pkg\.quota"):
        check_compiled_build(str(pkg))


def test_interpreted_tree_needs_no_record(tmp_path: Path) -> None:
    """No extension at all (REPLOG_PURE_PYTHON=1, or never built): nothing to check."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "log.py").write_text("A = 1\n")
    assert compiled_extensions(str(pkg)) == {}
    check_compiled_build(str(pkg))


def test_core_compiled_says_whether_the_engine_is_an_extension() -> None:
    """`core_compiled` (run.json's `core_compiled`) agrees with what was imported: a mypyc-compiled class's
    methods are not Python functions."""
    assert core_compiled() is not isinstance(ReplicaManager.fetch_messages, types.FunctionType)


@pytest.mark.skipif(not compiled_extensions(), reason="interpreted build: no compiled extension to go stale")
def test_importing_a_stale_compiled_package_fails(tmp_path: Path) -> None:
    """On a copy of this compiled build: it imports as is; after an edit to one compiled source, importing
    `replication_core` fails with the guard's message."""
    shutil.copytree(PACKAGE, tmp_path / "replication_core", ignore=shutil.ignore_patterns("__pycache__"))
    code = "import replication_core.sim.broker, replication_core._native_guard as g; print(g.core_compiled())"
    # `-c` puts the copy's folder first on sys.path; the project's other packages (`schemas`) come from the
    # project root behind it, whichever checkout the editable install points at.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE.parent),
                                                                      os.environ.get("PYTHONPATH")]))}
    ok = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                        check=False)
    assert ok.returncode == 0 and ok.stdout.strip() == "True", ok.stderr
    target = tmp_path / "replication_core" / "partition.py"
    target.write_text(target.read_text() + "\n# edited after the build\n")
    stale = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                           check=False)
    assert stale.returncode != 0
    assert "StaleCompiledModuleError: replication_core.partition: partition.py changed" in stale.stderr


def test_replog_simulate_reports_a_stale_build_as_such(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`replog simulate` on a stale build prints the guard's message (module, rebuild command), not
    "this build has no replication_core.sim.cli"."""
    import importlib

    from jobs import cli

    def stale_import(name: str) -> object:
        raise StaleCompiledModuleError("replication_core.fetcher: fetcher.py changed since it was compiled",
                                       name="replication_core.fetcher")

    monkeypatch.setattr(importlib, "import_module", stale_import)
    assert cli.main(["simulate", "--help"]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert "replog simulate: failed: replication_core.fetcher: fetcher.py changed" in err
    assert "this build has no" not in err
