"""The `report:` section of the config (`jobs.config.ReportConfig`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.config import DEFAULT_CONFIG, ConfigError, IngestConfig, ReportConfig, load_config


def test_shipped_configs_carry_the_report_caps() -> None:
    assert load_config(DEFAULT_CONFIG).report == ReportConfig(max_partitions=20, max_points=400, max_rows=50, out=None,
                                                              burst_gap_ms=5000)
    cluster = load_config(DEFAULT_CONFIG.parent / "cluster.example.yaml").report
    assert cluster.out == "/tmp/replog-report", "a remote lake needs a local output folder"


def test_report_section_is_optional_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lake: ./lake\n", encoding="utf-8")
    assert load_config(path).report == ReportConfig()
    path.write_text("lake: ./lake\nreport:\n  max_partitions: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"key 'report.max_partitions' must be a positive integer, got 0"):
        load_config(path)
    path.write_text("lake: ./lake\nreport:\n  burst_gap_ms: -5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'report.burst_gap_ms' must be a positive integer, got -5"):
        load_config(path)
    path.write_text("lake: ./lake\nreport:\n  max_points: yes\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'report.max_points' must be a positive integer, got True"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lake: ./lake\ndelta_backed: native\n",
         r"unknown key 'delta_backed'; known keys: lake, delta_backend, spark, report, ingest"),
        ("lake: ./lake\nspark:\n  shuffle_partition: 8\n",
         r"unknown key 'spark.shuffle_partition'; known keys of spark: master, app_name, shuffle_partitions"),
        ("lake: ./lake\nreport:\n  max_point: 10\n",
         r"unknown key 'report.max_point'; known keys of report: max_partitions, max_points, max_rows, out, "
         r"burst_gap_ms"),
        ("lake: ./lake\ningest:\n  whole_file: false\n",
         r"unknown key 'ingest.whole_file'; known keys of ingest: whole_files, log_timezone"),
    ],
)
def test_a_misspelt_key_is_an_error_that_names_it(tmp_path: Path, text: str, message: str) -> None:
    # Ignored, the misspelt setting would silently leave its default in force.
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_ingest_section_is_optional_and_checked(tmp_path: Path) -> None:
    """`ingest.whole_files` defaults to true (the shipped config says so too) and must be a boolean."""
    assert load_config(DEFAULT_CONFIG).ingest == IngestConfig(whole_files=True)
    path = tmp_path / "c.yaml"
    path.write_text("lake: ./lake\n", encoding="utf-8")
    assert load_config(path).ingest == IngestConfig()
    path.write_text("lake: ./lake\ningest:\n  whole_files: false\n", encoding="utf-8")
    assert load_config(path).ingest == IngestConfig(whole_files=False)
    path.write_text("lake: ./lake\ningest:\n  whole_files: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"key 'ingest.whole_files' must be true or false, got 0"):
        load_config(path)


def test_log_timezone_is_a_zone(tmp_path: Path) -> None:
    """`ingest.log_timezone` (real broker logs' zone) defaults to UTC; an IANA name or +HH:MM is accepted."""
    assert load_config(DEFAULT_CONFIG).ingest.log_timezone == "UTC"
    path = tmp_path / "c.yaml"
    for zone in ("Europe/Paris", "+05:30"):
        path.write_text(f"lake: ./lake\ningest:\n  log_timezone: '{zone}'\n", encoding="utf-8")
        assert load_config(path).ingest.log_timezone == zone
    path.write_text("lake: ./lake\ningest:\n  log_timezone: CEST+2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"key 'ingest.log_timezone' must be a time zone name such as UTC"):
        load_config(path)
