"""The catalogue is importable without heavy dependencies, consistent with the checker, and documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from replication_core.checker import catalogue
from replication_core.checker.catalogue import BY_NAME, CATALOGUE, SEVERITIES, catalogue_markdown
from schemas.events import EVENT_TYPES

README = Path(catalogue.__file__).with_name("README.md")
MARKER = "<!-- generated from catalogue.py"


def test_catalogue_imports_nothing_heavy() -> None:
    """Importing the catalogue in a fresh interpreter loads neither pyarrow nor pyspark nor the engine (the
    package's build check, `replication_core._native_guard`, is not the engine: it reads and hashes files)."""
    code = ("import sys, replication_core.checker.catalogue\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'pyspark', 'pandas')"
            " or m.startswith('replication_core.') and not m.startswith('replication_core.checker')"
            " and m != 'replication_core._native_guard')\n"
            "assert not bad, bad\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr


def test_entries_are_well_formed() -> None:
    """Unique names, known severities and event types, a rule section and what is checked."""
    assert len(BY_NAME) == len(CATALOGUE)
    for inv in CATALOGUE:
        assert inv.severity in SEVERITIES, inv.name
        assert set(inv.requires) <= set(EVENT_TYPES), inv.name
        assert inv.section and inv.rule and inv.checks and inv.offsets, inv.name


def test_every_invariant_is_implemented_by_a_check() -> None:
    """Each catalogue name is flagged somewhere in the checker (no dead entry)."""
    source = (Path(catalogue.__file__).with_name("checker.py")).read_text(encoding="utf-8")
    assert [inv.name for inv in CATALOGUE if f'"{inv.name}"' not in source] == []


def test_readme_table_is_generated_from_the_catalogue() -> None:
    """README.md ends with catalogue_markdown(); regenerate it if this fails."""
    text = README.read_text(encoding="utf-8")
    generated = text[text.index(MARKER):].split("\n", 1)[1]
    assert generated == catalogue_markdown(), "regenerate the README table with catalogue_markdown()"
