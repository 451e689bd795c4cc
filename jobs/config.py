"""Job configuration: `conf/local.yaml` (or `--config FILE`) loaded into frozen dataclasses."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "conf" / "local.yaml"
BACKENDS = ("auto", "embedded", "native")


class ConfigError(ValueError):
    """Raised when a config file is missing, unreadable, or has a key of the wrong form."""


@dataclass(frozen=True)
class SparkConfig:
    """How to build the SparkSession."""

    master: str | None = "local[2]"
    app_name: str = "replog"
    shuffle_partitions: int = 4
    driver_memory: str | None = None
    conf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportConfig:
    """What `replog report` draws and where it writes (the `report:` section of the config)."""

    max_partitions: int = 20
    """Partitions plotted at most (the worst first); the report says how many more were flagged."""
    max_points: int = 400
    """Points per plotted series at most: changes are aggregated into this many time buckets per run."""
    max_rows: int = 50
    """Violations / incidents listed at most per partition (and in the run-wide tables)."""
    out: str | None = None
    """Output folder; None = `<lake>/reports/<audit id>/`."""
    burst_gap_ms: int = 5000
    """Answers with one error more than this far apart are listed as separate bursts (first-last times each):
    one span across a quiet stretch read as one long outage."""
    silence_ms: int = 2000
    """A partition's stretches of at least this long without any produce answer are listed (the longest first):
    acks=all writes parked until the HW covers them or they time out, requests lost with a leader that had died, or
    writes held back while there was no leader show as such a gap (the last two leave no event at all)."""


@dataclass(frozen=True)
class IngestConfig:
    """How `replog ingest` reads landing files (the `ingest:` section of the config)."""

    whole_files: bool = True
    """Rewrite landing files in which no record may break a rule with Arrow in Spark tasks
    (`jobs.arrow_ingest`); false sends every file through Spark's per-record validation."""
    log_timezone: str = "UTC"
    """Time zone of the timestamps in real Kafka broker logs (log4j prints local time without a zone)."""


@dataclass(frozen=True)
class JobConfig:
    """Everything a replog job needs from configuration."""

    lake: str
    delta_backend: str = "auto"
    spark: SparkConfig = field(default_factory=SparkConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)


def _expect(cond: bool, key: str, expected: str, got: object, path: Path) -> None:
    if not cond:
        raise ConfigError(f"{path}: key '{key}' must be {expected}, got {got!r}")


def _known_keys(section: dict[str, Any], known: tuple[str, ...], where: str, path: Path) -> None:
    # A misspelt key would otherwise be ignored and its default used without a word.
    unknown = sorted(str(k) for k in section if k not in known)
    if unknown:
        name = f"{where}.{unknown[0]}" if where else unknown[0]
        raise ConfigError(f"{path}: unknown key '{name}'; known keys{' of ' + where if where else ''}: "
                          + ", ".join(known))


def load_config(path: str | Path | None = None, lake: str | None = None) -> JobConfig:
    """Load a config file (default: $REPLOG_CONFIG, else `conf/local.yaml`); `lake` overrides its lake root.

    A relative lake root in the file is taken relative to the current directory, as a user typing
    `replog ... --lake ./lake` would expect.
    """
    # REPLOG_CONFIG lets spark-submit.sh point jobs at the repository's conf/ from a packaged zip.
    p = Path(path or os.environ.get("REPLOG_CONFIG") or DEFAULT_CONFIG)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from e
    _expect(isinstance(raw, dict), "<top>", "a mapping", type(raw).__name__, p)
    _known_keys(raw, ("lake", "delta_backend", "spark", "report", "ingest"), "", p)
    lake_root = lake or raw.get("lake")
    _expect(isinstance(lake_root, str) and bool(lake_root), "lake", "a non-empty path or URI", lake_root, p)
    backend = raw.get("delta_backend", "auto")
    _expect(backend in BACKENDS, "delta_backend", f"one of {BACKENDS}", backend, p)
    s = raw.get("spark") or {}
    _expect(isinstance(s, dict), "spark", "a mapping", s, p)
    _known_keys(s, ("master", "app_name", "shuffle_partitions", "driver_memory", "conf"), "spark", p)
    shuffle = s.get("shuffle_partitions", 4)
    _expect(isinstance(shuffle, int) and shuffle > 0, "spark.shuffle_partitions", "a positive integer", shuffle, p)
    conf = s.get("conf") or {}
    _expect(isinstance(conf, dict), "spark.conf", "a mapping of Spark settings", conf, p)
    spark = SparkConfig(
        master=s.get("master", "local[2]"),
        app_name=s.get("app_name", "replog"),
        shuffle_partitions=shuffle,
        driver_memory=s.get("driver_memory"),
        conf={str(k): str(v) for k, v in conf.items()},
    )
    return JobConfig(lake=lake_root, delta_backend=backend, spark=spark, report=_report_config(raw, p),
                     ingest=_ingest_config(raw, p))


def _ingest_config(raw: dict[str, Any], p: Path) -> IngestConfig:
    """The `ingest:` section (every key optional)."""
    i = raw.get("ingest") or {}
    _expect(isinstance(i, dict), "ingest", "a mapping", i, p)
    _known_keys(i, ("whole_files", "log_timezone"), "ingest", p)
    whole = i.get("whole_files", IngestConfig.whole_files)
    _expect(isinstance(whole, bool), "ingest.whole_files", "true or false", whole, p)
    zone = i.get("log_timezone", IngestConfig.log_timezone)
    _expect(isinstance(zone, str) and is_time_zone(zone), "ingest.log_timezone",
            "a time zone name such as UTC or Europe/Paris, or an offset such as +02:00", zone, p)
    return IngestConfig(whole_files=whole, log_timezone=zone)


def is_time_zone(name: str) -> bool:
    """True for a zone Spark's make_timestamp accepts: an IANA name or a fixed offset."""
    if re.fullmatch(r"[+-]\d{2}:\d{2}", name):
        return True
    try:
        ZoneInfo(name)
    except (ValueError, KeyError, OSError):
        return False
    return True


def _report_config(raw: dict[str, Any], p: Path) -> ReportConfig:
    """The `report:` section (every key optional)."""
    r = raw.get("report") or {}
    _expect(isinstance(r, dict), "report", "a mapping", r, p)
    _known_keys(r, ("max_partitions", "max_points", "max_rows", "out", "burst_gap_ms", "silence_ms"), "report", p)
    default = ReportConfig()
    counts: dict[str, int] = {}
    for key in ("max_partitions", "max_points", "max_rows", "burst_gap_ms", "silence_ms"):
        value = r.get(key, getattr(default, key))
        # bool is an int in Python; `max_partitions: yes` is a typo, not a cap of 1.
        _expect(isinstance(value, int) and not isinstance(value, bool) and value > 0, f"report.{key}",
                "a positive integer", value, p)
        counts[key] = value
    out = r.get("out")
    _expect(out is None or (isinstance(out, str) and bool(out)), "report.out", "a folder path or null", out, p)
    return ReportConfig(out=out, **counts)
