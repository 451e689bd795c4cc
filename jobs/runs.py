"""Which runs a job may work on: the ones bronze holds, and for the lag job the ones timelines processed.

A job asked for a run that is not there must say so (exit 2), not report a clean result over nothing: a
scheduled audit with a typo in its run id would otherwise pass forever.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobs.lake import Lake
from schemas.tables import BRONZE_EVENTS, SILVER_TIMELINE_WATERMARKS, TableSpec

SHOWN = 10
"""Known runs named in an error message."""


class MissingInputError(RuntimeError):
    """A job's input table does not exist yet: the job that writes it has to run first."""


class UnknownRunError(ValueError):
    """A run id that the input table does not hold."""


def _runs_of(lake: Lake, spec: TableSpec) -> list[str]:
    # The distinct values of the table's partition column, from the log where the backend can.
    return lake.partition_values(spec, "run_id")


def require_table(lake: Lake, spec: TableSpec, produced_by: str) -> None:
    """Raise `MissingInputError` naming the command that writes `spec` when the lake lacks it."""
    if not lake.exists(spec):
        raise MissingInputError(f"no {spec.name} table in lake {lake.root}: run `{produced_by}` first")


def bronze_runs(lake: Lake, runs: Sequence[str] | None) -> list[str]:
    """`runs` (sorted, deduplicated), or every run in bronze when None or empty; raises when bronze is missing
    or lacks one of `runs`."""
    require_table(lake, BRONZE_EVENTS, "replog ingest")
    known = _runs_of(lake, BRONZE_EVENTS)
    if not runs:
        return known
    _check(sorted(set(runs)), known, f"{BRONZE_EVENTS.name} of lake {lake.root}")
    return sorted(set(runs))


def timelined_runs(lake: Lake, runs: Sequence[str] | None) -> list[str]:
    """`runs`, or every run the timelines job processed when None; raises when timelines never ran, or did not
    process one of `runs` (the lag job reads their tables, and reading none would judge every shrink missing)."""
    wanted = bronze_runs(lake, runs) if runs else None
    require_table(lake, SILVER_TIMELINE_WATERMARKS, "replog timelines")
    done = _runs_of(lake, SILVER_TIMELINE_WATERMARKS)
    if wanted is None:
        return done
    missing = [r for r in wanted if r not in done]
    if missing:
        raise MissingInputError(f"timelines have not processed run(s) {', '.join(missing)} in lake {lake.root}: "
                                f"run `replog timelines` first")
    return wanted


def _check(wanted: list[str], known: list[str], where: str) -> None:
    unknown = [r for r in wanted if r not in known]
    if unknown:
        shown = ", ".join(known[:SHOWN]) + (f" and {len(known) - SHOWN} more" if len(known) > SHOWN else "")
        raise UnknownRunError(f"no run {', '.join(repr(r) for r in unknown)} in {where}; "
                              f"it holds: {shown or 'no runs'}")
