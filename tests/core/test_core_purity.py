"""The state machines in `replication_core` stay sans-I/O: no Spark/Delta, no files, sockets, clocks,
threads or processes (checked on the source with `ast`, and by importing them in a fresh interpreter).

Scope, two tiers:
* `replication_core/*.py` (the state machines): fully pure, as below.
* `replication_core/sim/**` (simulator) and `replication_core/checker/**` (reference checker): the same
  rules except that they may import `random`, and only to build a seeded `random.Random` instance
  (no module-level `random.random()`, `random.seed()`, `random.choice()`...); they may also import the
  third-party packages in `SIM_ALLOWED_NON_STDLIB`. File I/O only in the modules of `IO_ALLOWED`,
  each with its own explicit extra allow-list (`IO_EXTRA_MODULES`): the writers/readers may use
  `open`, paths and pyarrow; the CLIs may also use `time` (progress display rate), `sys` and `os`
  (the `CI` variable). No module anywhere uses threads, sockets or subprocesses.
`replication_core/events.py` imports `schemas.events`, which imports pyarrow for the schema definition:
`schemas` is on the explicit third-party allow-list, pyarrow is not imported by any state machine itself.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "replication_core"
SIM_PACKAGES = ("sim", "checker")
"""Sub-packages (relative to replication_core/) of the second tier: simulator and reference checker."""
IO_ALLOWED = {"sim/writer.py", "sim/cli.py", "checker/reader.py", "checker/cli.py"}
"""Paths (relative to replication_core/) of the only modules allowed to touch files."""
_FILE_MODULES = frozenset({"os", "io", "pathlib", "glob", "pyarrow"})
IO_EXTRA_MODULES: dict[str, frozenset[str]] = {
    "sim/writer.py": _FILE_MODULES | {"shutil", "filecmp"},  # publishes a run's files, keeping unchanged ones
    "checker/reader.py": _FILE_MODULES,
    "sim/cli.py": _FILE_MODULES | {"sys", "time"},
    "checker/cli.py": _FILE_MODULES | {"sys", "time"},
}
"""What each I/O module may import beyond the second tier's rules."""
IO_EXTRA_CALLS = frozenset({"open", "print"})
ALLOWED_NON_STDLIB = {"replication_core", "schemas", "mypy_extensions"}
"""Non-standard-library top-level packages a state machine may import (mypy_extensions: the
`mypyc_attr` class decorator for the mypyc build, no I/O)."""
SIM_ALLOWED_NON_STDLIB = ALLOWED_NON_STDLIB | {"yaml"}
"""Non-standard-library packages the simulator / checker may import (yaml: scenario files)."""
NEVER = frozenset({"socket", "ssl", "select", "selectors", "threading", "_thread", "multiprocessing",
                   "concurrent", "asyncio", "subprocess"})
"""No module of any tier may import these: no threads, sockets or processes."""
FORBIDDEN_MODULES = {
    "os", "io", "sys", "socket", "ssl", "select", "selectors", "threading", "_thread", "multiprocessing",
    "concurrent", "asyncio", "subprocess", "time", "datetime", "random", "secrets", "pathlib", "shutil",
    "tempfile", "glob", "logging", "urllib", "http", "requests", "sqlite3", "pickle", "shelve",
    "pyspark", "deltalake", "delta", "pandas", "pyarrow",
}
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "breakpoint", "__import__"}
FORBIDDEN_ATTRIBUTES = {("time", "time"), ("time", "monotonic"), ("time", "sleep"), ("datetime", "now"),
                        ("os", "environ")}


BUILD_GUARD = "_native_guard.py"
"""The build check `replication_core/__init__.py` runs on import (compiled extensions against their
sources): not a state machine; it may read the package's own files (`test_build_guard_reads_only_files`)."""
BUILD_GUARD_MODULES = frozenset({"__future__", "hashlib", "importlib", "json", "os", "replication_core"})
PROVENANCE = "provenance.py"
"""Which code produced a result (`code_version`): not a state machine; it reads the packages' own sources
through `importlib.resources` (`test_provenance_reads_only_sources`)."""
PROVENANCE_MODULES = frozenset({"__future__", "collections", "hashlib", "importlib"})


def state_machine_files() -> list[Path]:
    """Every module of the first tier (the pure state machines)."""
    return sorted(f for f in PACKAGE.rglob("*.py") if not _in_sim_tier(f) and f.name not in (BUILD_GUARD, PROVENANCE))


def sim_tier_files() -> list[Path]:
    """Every module of the second tier (simulator and checker), I/O modules included."""
    return sorted(f for f in PACKAGE.rglob("*.py") if _in_sim_tier(f))


def _in_sim_tier(path: Path) -> bool:
    return path.relative_to(PACKAGE).parts[0] in SIM_PACKAGES


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


def test_build_guard_reads_only_files() -> None:
    """The build guard imports only what reading and hashing the package's files needs, and no state
    machine imports it (only the package `__init__` and the simulator's CLI, for run.json)."""
    guard = PACKAGE / BUILD_GUARD
    assert guard.is_file()
    mods = imported_modules(ast.parse(guard.read_text(), filename=str(guard)))
    assert mods <= BUILD_GUARD_MODULES, sorted(mods - BUILD_GUARD_MODULES)
    users = {f.relative_to(PACKAGE).as_posix() for f in PACKAGE.rglob("*.py")
             if "_native_guard" in f.read_text() and f.name != BUILD_GUARD}
    assert users == {"__init__.py", "sim/cli.py"}


def test_provenance_reads_only_sources() -> None:
    """The provenance module imports only what reading and hashing sources needs, and among the engine's
    modules only the simulator's CLI uses it (for run.json; the audit's signature is outside the package)."""
    path = PACKAGE / PROVENANCE
    mods = imported_modules(ast.parse(path.read_text(), filename=str(path)))
    assert mods <= PROVENANCE_MODULES, sorted(mods - PROVENANCE_MODULES)
    users = {f.relative_to(PACKAGE).as_posix() for f in PACKAGE.rglob("*.py")
             if "provenance" in f.read_text() and f.name != PROVENANCE}
    assert users == {"sim/cli.py"}


def test_the_simulator_and_checker_tier_exists() -> None:
    """The second tier below is not vacuous: the simulator and the checker are there to be checked."""
    names = {p.relative_to(PACKAGE).parts[0] for p in sim_tier_files()}
    assert names == {"sim", "checker"}


@pytest.mark.parametrize("path", sim_tier_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_simulator_and_checker_modules_do_no_hidden_io(path: Path) -> None:
    """Second tier: seeded `random.Random` only, no wall clock, threads, sockets or processes; file I/O,
    `time`, `sys` and `os` only in the explicitly listed I/O modules."""
    rel = path.relative_to(PACKAGE).as_posix()
    extra = IO_EXTRA_MODULES.get(rel, frozenset())
    tree = ast.parse(path.read_text(), filename=str(path))
    mods = imported_modules(tree)
    assert not mods & NEVER, f"{rel} imports {sorted(mods & NEVER)}"
    forbidden = (FORBIDDEN_MODULES - {"random"} - extra)
    assert not mods & forbidden, f"{rel} imports {sorted(mods & forbidden)}"
    non_stdlib = {m for m in mods if m not in sys.stdlib_module_names and m != "__future__"}
    allowed = SIM_ALLOWED_NON_STDLIB | (extra - set(sys.stdlib_module_names))
    assert non_stdlib <= allowed, f"{rel} imports {sorted(non_stdlib - allowed)}"
    calls = FORBIDDEN_CALLS - (IO_EXTRA_CALLS if rel in IO_ALLOWED else frozenset())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in calls, f"{rel}:{node.lineno} calls {node.func.id}()"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            pair = (node.value.id, node.attr)
            if "time" not in extra:
                assert pair not in FORBIDDEN_ATTRIBUTES, f"{rel}:{node.lineno} uses {pair[0]}.{pair[1]}"
            assert pair not in {("datetime", "now"), ("time", "sleep")}, f"{rel}:{node.lineno} uses {pair}"
            # Module-level random functions share hidden global state: only random.Random(seed) is allowed.
            assert not (node.value.id == "random" and node.attr != "Random"), (
                f"{rel}:{node.lineno} uses random.{node.attr}; use a seeded random.Random instance")
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            names = {a.name for a in node.names}
            assert names <= {"Random"}, f"{rel} imports {sorted(names)} from random"
        if isinstance(node, ast.Attribute) and node.attr in ("write_text", "write_bytes", "read_text",
                                                               "read_bytes", "unlink", "mkdir"):
            assert rel in IO_ALLOWED, f"{rel}:{node.lineno} touches files (.{node.attr})"


def test_importing_the_engine_loads_no_spark_or_delta() -> None:
    """Importing every state machine, simulator and checker module in a fresh interpreter pulls in neither
    pyspark nor deltalake."""
    names = [
        "replication_core." + f.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")
        for f in state_machine_files() + sim_tier_files() if f.name != "__init__.py"
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
