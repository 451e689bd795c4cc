"""The `replog` command: the front door to every job.

    replog demo    [--scenario FILE] [--out DIR] [--lake DIR]  simulate -> ingest -> check -> timelines -> lag
                                                               -> audit -> report, for that one run
    replog ingest  --landing DIR [--lake DIR] [--config FILE]
    replog ingest  --source kafka-logs --landing DIR [--run-id ID] [--log-timezone TZ]   real broker logs
    replog sample  --out DIR                                   write the sample landing files only
    replog simulate --scenario FILE --out DIR [...]            run a scenario on the simulated cluster
    replog check   --events DIR [--json FILE]                  the reference invariant checker
    replog timelines / lag / audit [--run ID] [--lake DIR]     the Spark analytics over bronze
    replog audit --changed [--fail-on error|warning|never]     only runs with events not yet audited (schedules)
    replog report  [--out DIR] [--run ID] [--partition T-N]    Markdown + HTML incident report with PNG plots

Exit codes: 0 success (even with quarantined records), 2 the job failed (one-line reason on
stderr), and 1 for audit violations at or above `--fail-on` (the demo: errors). A job asked for a run id its input
does not hold, or run before the job that writes its input, fails (2) and says which. Every job is
also reachable through `./spark-submit.sh <command> ...`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 2


def _topic_partition(text: str) -> tuple[str, int]:
    """An argparse type: a partition named as Kafka prints it, TOPIC-N (the topic may hold '-')."""
    topic, _, number = text.rpartition("-")
    # ASCII digits only (str.isdigit takes other scripts' too), and a Java int, as Kafka's partition ids are.
    if not topic or not re.fullmatch(r"[0-9]{1,10}", number) or int(number) >= 2**31:
        raise argparse.ArgumentTypeError(f"expected TOPIC-PARTITION, e.g. orders-3 (partition 0 to 2147483647), "
                                         f"got {text!r}")
    return topic, int(number)


def _positive_ms(text: str) -> int:
    """An argparse type: a duration in milliseconds, at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 (milliseconds), got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replog", description="Kafka replication engine and its Spark audit.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--lake", help="lake root (overrides the config's `lake`)")
        sp.add_argument("--config", help="config file (default conf/local.yaml)")

    ing = sub.add_parser("ingest", help="ingest landing files into bronze (with quarantine)")
    ing.add_argument("--landing", required=True, help="folder of *.jsonl / *.parquet event files (recursive), or "
                     "with --source kafka-logs of Kafka broker logs (*.log, *.log.*; .gz, .bz2, .zst too)")
    ing.add_argument("--source", choices=("events", "kafka-logs"), default="events",
                     help="events: files written by `replog simulate` (default); kafka-logs: real broker logs")
    ing.add_argument("--run-id", default=None,
                     help="with --source kafka-logs: the run the logs become (default: the landing folder's name)")
    ing.add_argument("--log-timezone", default=None,
                     help="with --source kafka-logs: zone of the logs' timestamps (default: config "
                     "ingest.log_timezone, UTC)")
    common(ing)

    tl = sub.add_parser("timelines", help="silver HW/LEO timelines, partition state and ISR changes from bronze")
    tl.add_argument("--run", action="append", dest="runs", help="only this run_id (repeatable)")
    common(tl)

    lag = sub.add_parser("lag", help="follower lag and gold/lag_incidents, gold/lag_summary")
    lag.add_argument("--run", action="append", dest="runs", help="only this run_id (repeatable)")
    lag.add_argument("--lag-max-ms", type=_positive_ms, default=None,
                     help="replica.lag.time.max.ms when the events carry no broker_config (default 30000)")
    common(lag)

    audit = sub.add_parser("audit", help="check the invariant catalogue on bronze; gold/invariant_violations")
    audit.add_argument("--run", action="append", dest="runs", help="only this run_id (repeatable)")
    audit.add_argument("--changed", action="store_true",
                       help="only the runs whose events changed since an audit of this code judged them "
                            "(scheduled audits of a growing lake); nothing changed: nothing written, exit 0")
    audit.add_argument("--fail-on", choices=("warning", "error", "never"), default="error",
                       help="exit 1 on violations of this severity or worse (default error); info findings "
                            "(acks=1 writes lost, which Kafka allows) never fail")
    common(audit)

    rep = sub.add_parser("report", help="Markdown + HTML incident report: a cluster overview per run and a PNG "
                                        "per flagged partition")
    rep.add_argument("--out", default=None,
                     help="output folder (default: the config's report.out, else <lake>/reports/<audit id>)")
    rep.add_argument("--run", action="append", dest="runs", help="only this run_id (repeatable; default: the "
                     "runs of the latest audit)")
    rep.add_argument("--partition", action="append", dest="partitions", type=_topic_partition, default=[],
                     metavar="TOPIC-N", help="also draw this partition, flagged or not, in every reported run that "
                     "has it (repeatable): the partitions of an incident read from broker logs, where few findings "
                     "flag one")
    common(rep)

    demo = sub.add_parser("demo", help="end to end on the embedded default: simulate -> ingest -> check -> "
                          "timelines -> lag -> audit -> report")
    demo.add_argument("--scenario", default=None, help="scenario file (default conf/scenarios/steady-state.yaml)")
    demo.add_argument("--out", default=None, help="where the simulated event files go (default ./out/demo/ and the "
                      "scenario file's name: each scenario's run in its own folder)")
    common(demo)

    smp = sub.add_parser("sample", help="write the sample landing files (JSON Lines + Parquet)")
    smp.add_argument("--out", required=True, help="folder the sample landing files are written to")
    for name, (_, help_text) in PASSTHROUGH.items():
        sub.add_parser(name, help=help_text + f" (see: replog {name} --help)", add_help=False)
    # `replog <command> --help` opens with what the command does, as `replog --help` lists it.
    for action in sub._choices_actions:
        parser = sub.choices[action.dest]
        if parser.description is None:
            parser.description = action.help
    return p


def _session_and_lake(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from jobs.config import load_config
    from jobs.lake import open_lake
    from jobs.session import build_spark

    cfg = load_config(args.config, lake=args.lake)
    spark = build_spark(cfg.spark)
    return spark, open_lake(spark, cfg)


def _cmd_report(args: argparse.Namespace) -> int:
    from jobs.config import load_config
    from jobs.incident_report import run_report

    spark, lake = _session_and_lake(args)
    cfg = load_config(args.config, lake=args.lake)
    print(run_report(spark, lake, cfg.report, runs=args.runs, out=args.out, partitions=args.partitions).summary())
    return EXIT_OK


def _cmd_ingest(args: argparse.Namespace) -> int:
    from jobs.broker_logs import BrokerLogOptions
    from jobs.config import ConfigError, is_time_zone, load_config
    from jobs.ingest import run_ingest
    from jobs.landing import discover

    cfg = load_config(args.config, lake=args.lake)
    logs = None
    if args.source == "kafka-logs":
        zone = args.log_timezone or cfg.ingest.log_timezone
        if not is_time_zone(zone):
            raise ConfigError(f"--log-timezone {zone!r}: expected a time zone name such as UTC or Europe/Paris, "
                              "or an offset such as +02:00")
        logs = BrokerLogOptions(args.run_id or Path(args.landing).resolve().name, zone)
    elif args.run_id or args.log_timezone:
        raise ConfigError("--run-id and --log-timezone apply to --source kafka-logs only")
    # A missing landing folder is reported before Spark starts (~10 s).
    discover(args.landing, logs=logs is not None)
    spark, lake = _session_and_lake(args)
    result = run_ingest(spark, lake, args.landing, whole_files=cfg.ingest.whole_files, logs=logs)
    print(result.summary())
    return EXIT_OK


def _cmd_timelines(args: argparse.Namespace) -> int:
    from jobs.timelines import run_timelines

    spark, lake = _session_and_lake(args)
    print(run_timelines(spark, lake, runs=args.runs).summary())
    return EXIT_OK


def _cmd_lag(args: argparse.Namespace) -> int:
    from jobs.lag import run_lag

    spark, lake = _session_and_lake(args)
    print(run_lag(spark, lake, runs=args.runs, lag_max_ms=args.lag_max_ms).summary())
    return EXIT_OK


def _cmd_audit(args: argparse.Namespace) -> int:
    from jobs.audit import run_audit

    spark, lake = _session_and_lake(args)
    # It prints its own summary.
    result = run_audit(spark, lake, runs=args.runs, fail_on=args.fail_on, changed=args.changed)
    if result.reason is not None:
        print(f"replog audit: failed: {result.reason}", file=sys.stderr)
    return int(result.exit_code)


def _cmd_sample(args: argparse.Namespace) -> int:
    from jobs.sample import write_sample
    from replication_core.sim.cli import folder_problem

    problem = folder_problem(args.out, "the sample landing files")
    if problem is not None:
        print(f"replog sample: failed: --out {args.out}: {problem}", file=sys.stderr)
        return EXIT_FAILED
    files = write_sample(Path(args.out))
    print(f"wrote {len(files)} sample landing files to {args.out}")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from jobs.demo import DEFAULT_SCENARIO, run_demo

    scenario = Path(args.scenario) if args.scenario else DEFAULT_SCENARIO
    from jobs.config import load_config

    cfg = load_config(args.config, lake=args.lake)
    out = Path(args.out) if args.out else Path("out") / "demo" / scenario.stem
    return run_demo(lambda: _session_and_lake(args), scenario, out, report=cfg.report, ingest=cfg.ingest)


COMMANDS = {
    "ingest": _cmd_ingest, "timelines": _cmd_timelines, "lag": _cmd_lag, "audit": _cmd_audit,
    "demo": _cmd_demo, "sample": _cmd_sample, "report": _cmd_report,
}

# Commands with their own argument parsers, in the engine package (no Spark needed to run them).
PASSTHROUGH = {
    "simulate": ("replication_core.sim.cli", "run a scenario on the simulated cluster"),
    "check": ("replication_core.checker.cli", "check a run's events against the invariant catalogue"),
}


def _passthrough(command: str, rest: list[str]) -> int:
    import importlib

    module_name, _ = PASSTHROUGH[command]
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        if type(e).__name__ == "StaleCompiledModuleError":  # replication_core/_native_guard.py: says what to run
            print(f"replog {command}: failed: {e}", file=sys.stderr)
        else:
            print(f"replog {command}: failed: this build has no {module_name} ({e})", file=sys.stderr)
        return EXIT_FAILED
    return int(module.main(rest))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one replog command; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        return _passthrough(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("replog: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except Exception as e:  # the one-line reason a scheduler logs; details with REPLOG_DEBUG=1
        import os

        if os.environ.get("REPLOG_DEBUG"):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"replog {args.command}: failed: {type(e).__name__}: {first}", file=sys.stderr)
        return EXIT_FAILED


def _import_from_checkout() -> None:
    """Run as a script (spark-submit.sh's driver): import replog from the checkout that holds this file.

    spark-submit puts the `--py-files` zip first on the driver's path. Imported from it, the engine runs
    interpreted (Python loads no compiled extension from a zip) and paths derived from `__file__` (the
    demo's default scenario) point into the zip. The checkout is the code the zip was built from; the
    executors keep the zip. Where this file is not in a checkout (a cluster-mode driver), nothing changes.
    The script's own folder (`jobs/`) leaves the path: its modules are not top-level modules.
    """
    here = Path(__file__).resolve().parent
    root = here.parent
    if (root / "jobs" / "__init__.py").is_file() and (root / "replication_core" / "__init__.py").is_file():
        sys.path[:] = [str(root), *(p for p in sys.path if Path(p or ".").resolve() not in (here, root))]


if __name__ == "__main__":
    _import_from_checkout()
    sys.exit(main())
