"""`replog check --events DIR [--json FILE] [--strict] [--max-network-delay-ms N]`.

Prints one line per violation (`Violation.line()`: invariant, severity, topic-partition, replica, ts,
offsets, evidence event ids, message) in detection order, then one summary line. One root cause can
repeat at every HW step (e.g. after an unclean election), so past `--max-per-group` (20) lines of one
(invariant, severity, partition, replica) group the rest is summarised in one "... N more" line; the
JSON output always lists every violation.

Exit codes: 0 — no violation of severity error (warnings are printed; `--strict` makes them fail too;
info findings, acks=1 writes lost, are printed and never fail); 1 — at least one error (or, with
`--strict`, any error or warning); 2 — the check could not run (missing folder,
no event files, an unreadable or malformed file, events out of order or duplicated, a newer schema major,
an event missing a field its type requires, a `run.json` field the checker reads of the wrong type, bad
arguments such as a negative `--max-network-delay-ms` or `--max-per-group`). Warnings exit 0 by design:
they are data loss Kafka's contract permits (after an unclean election or a whole-cluster power loss) or
replay disagreements, which a caller may want to see without failing a pipeline.

`--json FILE` writes {"runs", "events", "clean", "violations", "checked", "skipped", "manifest"}.
`--max-network-delay-ms` tightens `delayed_fetch_bound`; by default it is taken from the run manifest
(`run.json` key `max_network_delay_ms`) when present. The bound allows for the GC pauses and disk stalls
the events record (`broker_fault`, schema 1.9); a run written before them whose manifest's `faults_applied`
lists GC pauses or disk stalls skips `delayed_fetch_bound` (its stalls are not events).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from replication_core.checker.checker import CheckInputError, CheckOptions, CheckResult, check_events
from replication_core.checker.reader import MANIFEST, ReaderError, read_events, read_manifest
from replication_core.checker.violation import Violation
from schemas.events import parse_version

EXIT_CLEAN = 0
EXIT_VIOLATIONS = 1
EXIT_CANNOT_RUN = 2
DEFAULT_MAX_PER_GROUP = 20


class ManifestError(Exception):
    """A `run.json` field the checker reads has the wrong type (the message names field, value, type)."""


def _non_negative(what: str) -> Callable[[str], int]:
    """An argparse `type`: an integer >= 0. Negative values have no meaning for these options (a negative
    delay bound flags every fetch, a negative per-group limit used to mean "all" silently)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected an integer >= 0 ({what}), got {text!r}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="replog check", description="Check a run's events against the "
                                     "replication invariants (reference §11).")
    parser.add_argument("--events", required=True, help="folder of *.parquet / *.jsonl event files")
    parser.add_argument("--json", dest="json_out", help="also write the result as JSON to this file")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--max-network-delay-ms", type=_non_negative("milliseconds"), default=None,
                        help="one-way network delay bound of the run, >= 0 (tightens delayed_fetch_bound)")
    parser.add_argument("--max-per-group", type=_non_negative("0 prints all"), default=DEFAULT_MAX_PER_GROUP,
                        help="print at most N lines per (invariant, severity, partition, replica); 0 = all "
                             f"(default {DEFAULT_MAX_PER_GROUP}; --json always has every violation)")
    return parser


def printed_lines(violations: Sequence[Violation], max_per_group: int) -> list[str]:
    """The violation lines to print: every violation, in detection order, except that after
    `max_per_group` lines of one (invariant, severity, topic-partition, replica) group the rest of the
    group is summarised in one line at the end (one root cause, e.g. an unclean election, otherwise
    repeats at every HW step)."""
    counts: dict[tuple[str, str, str, int | None], int] = {}
    lines: list[str] = []
    for v in violations:
        key = (v.invariant, v.severity, v.topic_partition, v.replica)
        counts[key] = counts.get(key, 0) + 1
        if max_per_group <= 0 or counts[key] <= max_per_group:
            lines.append(v.line())
    for (invariant, severity, tp, replica), n in counts.items():
        if 0 < max_per_group < n:
            lines.append(f"{invariant} {severity} {tp} replica={'-' if replica is None else replica} "
                         f"... {n - max_per_group} more not shown (--json has all, --max-per-group 0 prints all)")
    return lines


def _shown(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def _records_stalls(manifest: dict[str, Any]) -> bool:
    """Whether the run's events record its GC pauses and disk stalls: schema 1.9+ (`broker_fault`)."""
    version = manifest.get("schema_version")
    if version is None:
        return False
    if isinstance(version, str):
        try:
            return parse_version(version) >= (1, 9)
        except ValueError:
            pass
    raise ManifestError(f"field schema_version: expected 'MAJOR.MINOR' or null, got {_shown(version)}")


def options_from(manifest: dict[str, Any] | None, max_network_delay_ms: int | None) -> CheckOptions:
    """CheckOptions from the flags and the run manifest: `max_network_delay_ms`, and whether
    `faults_applied` lists GC pauses or disk stalls in a run written before schema 1.9, whose events do not
    record them (then delayed_fetch_bound is skipped).

    Both fields are validated (null counts as absent): a hand-edited manifest must not crash the checker
    or be half-ignored, since a wrong delay bound or a missed stall changes the verdict. Raises
    `ManifestError`."""
    manifest = manifest or {}
    declared = manifest.get("max_network_delay_ms")
    if declared is not None and (isinstance(declared, bool) or not isinstance(declared, int) or declared < 0):
        raise ManifestError(f"field max_network_delay_ms: expected an integer >= 0 or null, got {_shown(declared)}")
    delay = max_network_delay_ms if max_network_delay_ms is not None else declared
    faults = manifest.get("faults_applied")
    if faults is None:
        faults = []
    if not isinstance(faults, list | tuple):  # tuple: a manifest built in memory (tests, notebooks)
        raise ManifestError(f"field faults_applied: expected a list of [at_ms, action] pairs, got {_shown(faults)}")
    for i, fault in enumerate(faults):
        # The simulator writes [virtual ms since the start, action name] (sim.cli `faults_applied`).
        if not isinstance(fault, list | tuple) or len(fault) < 2 or not isinstance(fault[1], str):
            raise ManifestError(f"field faults_applied[{i}]: expected an [at_ms, action] pair, got {_shown(fault)}")
    stalls = any(f[1] in ("pause", "disk_stall") for f in faults) and not _records_stalls(manifest)
    return CheckOptions(max_network_delay_ms=delay, processing_stalls=stalls)


def summary(result: CheckResult) -> str:
    """The summary line."""
    skipped = sum(n for reasons in result.skipped.values() for n in reasons.values())
    # What was skipped most, so that a count does not leave the reader guessing (`--json` has every reason).
    most = max(((n, inv, why) for inv, reasons in result.skipped.items() for why, n in reasons.items()), default=None)
    why = "" if most is None else f" (most: {most[0]} {most[1]}, {most[2]}; every reason in --json)"
    return (f"checked {result.events} events of {len(result.runs)} run(s) "
            f"{','.join(result.runs) or '-'}: {len(result.errors)} error(s), {len(result.warnings)} warning(s), "
            f"{len(result.infos)} info, "
            f"{sum(result.checked.values())} checks, {skipped} skipped{why}")


def _json_out_problem(path: str) -> str | None:
    """Why the `--json` file cannot be written, when that can be told without writing it; else None."""
    target = Path(path)
    if target.is_dir():
        return "expected a file path, but it is an existing folder"
    parent = target.parent
    if not parent.is_dir():
        return f"expected an existing folder to write it in, but {parent} " + (
            "is a file" if parent.exists() else "does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        return "not writable"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the checker; returns the exit code (0 clean, 1 violations, 2 could not run)."""
    try:
        args = _parser().parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:
        return EXIT_CLEAN if exc.code == 0 else EXIT_CANNOT_RUN
    problem = _json_out_problem(args.json_out) if args.json_out else None
    if problem is not None:  # found before a long check runs, not after it
        print(f"replog check: cannot run: --json {args.json_out}: {problem}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    try:
        manifest = read_manifest(args.events) if Path(args.events).is_dir() else None
        try:
            options = options_from(manifest, args.max_network_delay_ms)
        except ManifestError as exc:
            raise ReaderError(f"{Path(args.events) / MANIFEST}: {exc}") from exc
        result = check_events(read_events(args.events), options)
    except (ReaderError, CheckInputError) as exc:
        print(f"replog check: cannot run: {exc}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    for line in printed_lines(result.violations, args.max_per_group):
        print(line)
    print(summary(result))
    failed = bool(result.errors or (args.strict and result.warnings))
    if args.json_out:
        doc = {
            "runs": list(result.runs), "events": result.events, "clean": not failed,
            "violations": [v.to_dict() for v in result.violations],
            "checked": dict(result.checked), "skipped": {k: dict(v) for k, v in result.skipped.items()},
            "manifest": manifest,
        }
        try:
            Path(args.json_out).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            print(f"replog check: cannot write {args.json_out}: {exc}", file=sys.stderr)
            return EXIT_CANNOT_RUN
    return EXIT_VIOLATIONS if failed else EXIT_CLEAN


if __name__ == "__main__":
    raise SystemExit(main())
