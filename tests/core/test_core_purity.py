"""The state machines in `replication_core` stay sans-I/O: no Spark/Delta, no files, sockets, clocks,
threads or processes (checked on the source with `ast`, and by importing them in a fresh interpreter).

Scope: every module under `replication_core/`. The only modules allowed to do I/O are the simulator's
event writers listed in `IO_ALLOWED` (they may not exist yet). `replication_core/events.py` imports
`schemas.events`, which imports pyarrow for the schema definition: `schemas` is on the explicit
third-party allow-list, pyarrow is not imported by any state machine itself.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "replication_core"
IO_ALLOWED = {"sim/writer.py", "sim/event_writer.py"}
"""Paths (relative to replication_core/) of the modules allowed to write files: the simulator writers."""
ALLOWED_NON_STDLIB = {"replication_core", "schemas"}
"""Non-standard-library top-level packages a state machine may import."""
FORBIDDEN_MODULES = {
    "os", "io", "sys", "socket", "ssl", "select", "selectors", "threading", "_thread", "multiprocessing",
    "concurrent", "asyncio", "subprocess", "time", "datetime", "random", "secrets", "pathlib", "shutil",
    "tempfile", "glob", "logging", "urllib", "http", "requests", "sqlite3", "pickle", "shelve",
    "pyspark", "deltalake", "delta", "pandas", "pyarrow",
}
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "breakpoint", "__import__"}
FORBIDDEN_ATTRIBUTES = {("time", "time"), ("time", "monotonic"), ("time", "sleep"), ("datetime", "now"),
                        ("os", "environ")}


def state_machine_files() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    return [f for f in files if f.relative_to(PACKAGE).as_posix() not in IO_ALLOWED]


def imported_modules(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("path", state_machine_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_module_does_no_io(path: Path) -> None:
    """No forbidden import, no I/O builtin call, no wall clock or environment access."""
    tree = ast.parse(path.read_text(), filename=str(path))
    mods = imported_modules(tree)
    assert not mods & FORBIDDEN_MODULES, f"{path.name} imports {sorted(mods & FORBIDDEN_MODULES)}"
    non_stdlib = {m for m in mods if m not in sys.stdlib_module_names and m != "__future__"}
    assert non_stdlib <= ALLOWED_NON_STDLIB, f"{path.name} imports {sorted(non_stdlib - ALLOWED_NON_STDLIB)}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno} calls {node.func.id}()"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert (node.value.id, node.attr) not in FORBIDDEN_ATTRIBUTES, (
                f"{path.name}:{node.lineno} uses {node.value.id}.{node.attr}")


def test_importing_the_engine_loads_no_spark_or_delta() -> None:
    """Importing every state machine in a fresh interpreter pulls in neither pyspark nor deltalake."""
    names = [
        "replication_core." + f.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")
        for f in state_machine_files() if f.name != "__init__.py"
    ]
    code = (
        "import sys\n"
        + "".join(f"import {n}\n" for n in names)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'deltalake', 'delta', 'py4j'))\n"
        + "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                            cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr
