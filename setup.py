"""Build hook: compiles the replication engine and the simulator's hot modules with mypyc.

`pyproject.toml` holds the project's metadata; setuptools runs this file only for the extension
modules. The modules in `COMPILED` are compiled as one mypyc group (`replication_core._native`), so
calls between them are native C calls. Everything else stays interpreted: the package `__init__`s,
the checker, the CLI, scenario loading, the Parquet / JSON writer, `config.py` (its dataclass takes
strings where a field is typed `TruncationMode` and converts them after init, which a compiled class
refuses), `errors.py` (exceptions with two builtin bases, which mypyc classes cannot have; raised only
off the hot path), and `events.py`: a dict display of more than five keys compiled by mypyc is built
presized with CPython's general key table instead of the str-only one, which makes every later lookup
in those event dicts slower (when the frequent events were such dicts, writing alone went from ~290 k
to ~174 k events per CPU second in a 10 virtual s run). `event_log.py`, which keeps the frequent events
as columns, is compiled: the engine's calls into it are native.

Set `REPLOG_PURE_PYTHON=1` when installing (`REPLOG_PURE_PYTHON=1 pip install -e .`) to build no
extension: the same sources then run interpreted, and extensions of an earlier compiled build in the
source tree are removed so that none shadows the `.py` files.

A compiled build writes `replication_core/_compiled_sources.json`: the sha256 of every compiled
source. `replication_core/__init__.py` refuses to import (ImportError naming the module and the
rebuild command) when an extension sits next to a source that no longer matches it, e.g. after an
edit in an editable install.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "replication_core"
MANIFEST = PACKAGE / "_compiled_sources.json"
GROUP = "replication_core._native"

COMPILED = [
    "replication_core/java_hash.py",
    "replication_core/truncation.py",
    "replication_core/replica.py",
    "replication_core/leader_epoch_cache.py",
    "replication_core/event_log.py",
    "replication_core/log.py",
    "replication_core/partition.py",
    "replication_core/partition_fetch_state.py",
    "replication_core/fetch_response_size.py",
    "replication_core/quota.py",
    "replication_core/delayed_fetch.py",
    "replication_core/leader_endpoint.py",
    "replication_core/fetcher.py",
    "replication_core/fetcher_manager.py",
    "replication_core/replica_manager.py",
    "replication_core/sim/clock.py",
    "replication_core/sim/disk.py",
    "replication_core/sim/network.py",
    "replication_core/sim/rpc.py",
    "replication_core/sim/producer.py",
    "replication_core/sim/controller.py",
    "replication_core/sim/broker.py",
    "replication_core/sim/cluster.py",
]


def _pure_python() -> bool:
    return os.environ.get("REPLOG_PURE_PYTHON", "").strip().lower() not in ("", "0", "false", "no")


def _remove_stale_extensions() -> None:
    """Delete extensions and the manifest an earlier compiled build left in the source tree."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for path in PACKAGE.rglob("*"):
        if path.is_file() and path.name.endswith(suffixes):
            path.unlink()
    MANIFEST.unlink(missing_ok=True)


def _write_manifest() -> None:
    sources = {}
    for rel in COMPILED:
        module = rel[: -len(".py")].replace("/", ".")
        sources[module] = hashlib.sha256((ROOT / rel).read_bytes()).hexdigest()
    MANIFEST.write_text(json.dumps({"group": GROUP, "sources": sources}, indent=1, sort_keys=True) + "\n")


def _extensions() -> list:
    if _pure_python():
        _remove_stale_extensions()
        return []
    from mypyc.build import mypycify

    os.chdir(ROOT)  # mypyc takes the paths relative to the project root
    extensions = mypycify(
        [*COMPILED, "--ignore-missing-imports"],
        group_name=GROUP,
        opt_level="3",
    )
    _write_manifest()
    return extensions


setup(ext_modules=_extensions())
