"""Checks that the mypyc-compiled modules of `replication_core` match their sources.

A compiled build (`setup.py`) places one extension module next to each compiled source (e.g.
`partition.cpython-311-x86_64-linux-gnu.so` next to `partition.py`) and records the sha256 of every
compiled source in `_compiled_sources.json`. Python imports the extension, not the `.py`, so after
an edit in an editable install the old compiled code would keep running. `check_compiled_build`
(run by `replication_core/__init__.py`) raises an ImportError naming the stale module and the
rebuild command instead. Not a Kafka class: build plumbing only (this module is interpreted).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
MANIFEST_NAME = "_compiled_sources.json"
REBUILD_HINT = ("rebuild the compiled core with `python3 -m pip install -e '.[dev]'` (or "
                "`REPLOG_PURE_PYTHON=1 python3 -m pip install -e '.[dev]'` to run it interpreted)")
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


class StaleCompiledModuleError(ImportError):
    """A compiled extension no longer matches the source next to it (or was not recorded by the build)."""


def compiled_extensions(package_dir: str = PACKAGE_DIR) -> dict[str, str]:
    """Module name -> source path, for every module of the package that has an extension next to its `.py`."""
    found: dict[str, str] = {}
    base = os.path.basename(package_dir)
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        names = set(files)
        for name in files:
            if not name.endswith(_SUFFIXES):
                continue
            stem = name.split(".", 1)[0]
            if stem + ".py" not in names:
                continue  # the group's shared library (`_native__mypyc`), which has no source of its own
            rel = os.path.relpath(os.path.join(folder, stem), package_dir).replace(os.sep, ".")
            found[f"{base}.{rel}"] = os.path.join(folder, stem + ".py")
    return found


def check_compiled_build(package_dir: str = PACKAGE_DIR) -> None:
    """Raise `StaleCompiledModuleError` if an extension in the package does not match its source."""
    extensions = compiled_extensions(package_dir)
    if not extensions:
        return  # interpreted build
    try:
        with open(os.path.join(package_dir, MANIFEST_NAME), encoding="utf-8") as f:
            recorded = json.load(f)["sources"]
    except (OSError, ValueError, KeyError):
        recorded = {}
    for module, source in sorted(extensions.items()):
        expected = recorded.get(module)
        if expected is None:
            raise StaleCompiledModuleError(
                f"{module}: a compiled extension without a build record ({MANIFEST_NAME}); {REBUILD_HINT}",
                name=module)
        with open(source, "rb") as f:
            actual = hashlib.sha256(f.read()).hexdigest()
        if actual != expected:
            raise StaleCompiledModuleError(
                f"{module}: {os.path.basename(source)} changed since it was compiled, so the compiled "
                f"extension next to it is stale; {REBUILD_HINT}", name=module)


def core_compiled() -> bool:
    """True when the engine runs mypyc-compiled (its `ReplicaManager` module is an extension)."""
    from replication_core import replica_manager

    return (replica_manager.__file__ or "").endswith(_SUFFIXES)
