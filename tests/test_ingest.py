"""Ingest as a job: reconciled counts, exactly-once reruns, incremental runs, crash recovery, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chispa import assert_df_equality
from deltalake import DeltaTable
from pyspark.sql import functions as F

import jobs.lake.embedded as embedded
from jobs import cli
from jobs.ingest import duplicate_flags, run_ingest
from schemas.events import EVENT_SCHEMA, SchemaVersionError
from schemas.tables import BRONZE_EVENTS, BRONZE_QUARANTINE
from tests.conftest import event, write_jsonl


def quiet(spark, lake, landing: Path):
    return run_ingest(spark, lake, str(landing), log=lambda _m: None)


def test_good_and_bad_records_reconcile_and_land_in_their_tables(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2), "garbage", event(3, leo=-1)])
    r = quiet(spark, lake, landing)
    assert (r.read, r.kept, r.quarantined) == (4, 2, 2) and r.reconciles
    expected = spark.createDataFrame(
        [("run-a", 1, 1, 2), ("run-a", 2, 2, 3)], "run_id string, event_id long, old_hw long, hw long"
    )
    got = lake.read(BRONZE_EVENTS).select("run_id", "event_id", "old_hw", "hw")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True)
    lineage = lake.read(BRONZE_EVENTS).select("_source_line", "_ingest_batch").distinct().collect()
    assert {row["_source_line"] for row in lineage} == {1, 2}
    assert {row["_ingest_batch"] for row in lineage} == {r.batch_id}


def test_rerun_with_the_same_files_adds_nothing(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), "garbage"])
    first = quiet(spark, lake, landing)
    versions = (lake.version(BRONZE_EVENTS), lake.version(BRONZE_QUARANTINE))
    second = quiet(spark, lake, landing)
    assert first.files_ingested == 1 and second.files_ingested == 0 and second.read == 0
    assert (lake.version(BRONZE_EVENTS), lake.version(BRONZE_QUARANTINE)) == versions
    assert lake.read(BRONZE_EVENTS).count() == 1 and lake.read(BRONZE_QUARANTINE).count() == 1


def test_incremental_run_reads_only_the_new_files(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2)])
    quiet(spark, lake, landing)
    (landing / "later").mkdir()
    write_jsonl(landing / "later" / "b.jsonl", [event(3)])
    r = quiet(spark, lake, landing)
    assert (r.files_seen, r.files_ingested, r.read, r.kept) == (2, 1, 1, 1)
    assert sorted(x["event_id"] for x in lake.read(BRONZE_EVENTS).collect()) == [1, 2, 3]


def test_one_commit_per_ingest_batch_with_counts_in_the_history(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), "garbage"])
    quiet(spark, lake, landing)
    write_jsonl(landing / "b.jsonl", [event(2)])
    r = quiet(spark, lake, landing)
    history = DeltaTable(lake.path(BRONZE_EVENTS)).history()
    batches = [h for h in history if "replog.batch" in h]
    assert len(batches) == 2  # plus the table creation
    assert batches[0]["replog.batch"] == r.batch_id
    assert json.loads(batches[0]["replog.records_read"]) == 1
    assert json.loads(batches[1]["replog.records_quarantined"]) == 1


def test_crash_between_writing_and_committing_leaves_nothing_and_the_rerun_completes(
    spark, lake, landing, monkeypatch
) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2), "garbage"])

    def crash(*_a, **_k):
        raise RuntimeError("injected: driver died before the Delta commit")

    monkeypatch.setattr(embedded, "_commit_actions", crash)
    with pytest.raises(RuntimeError, match="injected"):
        quiet(spark, lake, landing)
    monkeypatch.undo()
    assert lake.read(BRONZE_EVENTS).count() == 0 and lake.read(BRONZE_QUARANTINE).count() == 0
    r = quiet(spark, lake, landing)
    assert (r.files_ingested, r.kept, r.quarantined) == (1, 2, 1)
    assert lake.read(BRONZE_EVENTS).count() == 2 and lake.read(BRONZE_QUARANTINE).count() == 1


def test_crash_after_the_quarantine_commit_resumes_with_bronze_only(spark, lake, landing, monkeypatch) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2), "garbage"])
    real = embedded._commit_actions

    def crash_on_bronze(dt, actions, spec, props):
        if spec.name == BRONZE_EVENTS.name:
            raise RuntimeError("injected: died between the two commits")
        real(dt, actions, spec, props)

    monkeypatch.setattr(embedded, "_commit_actions", crash_on_bronze)
    with pytest.raises(RuntimeError, match="between the two commits"):
        quiet(spark, lake, landing)
    monkeypatch.undo()
    assert lake.read(BRONZE_QUARANTINE).count() == 1 and lake.read(BRONZE_EVENTS).count() == 0
    q_version = lake.version(BRONZE_QUARANTINE)
    r = quiet(spark, lake, landing)
    assert r.files_ingested == 1 and r.reconciles
    assert lake.version(BRONZE_QUARANTINE) == q_version  # not written twice
    assert lake.read(BRONZE_QUARANTINE).count() == 1
    assert sorted(x["event_id"] for x in lake.read(BRONZE_EVENTS).collect()) == [1, 2]


def test_a_newer_schema_major_fails_the_job_and_commits_nothing(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2, schema_version="2.0")])
    with pytest.raises(SchemaVersionError, match=r"'2\.0' is newer than this code understands"):
        quiet(spark, lake, landing)
    assert lake.version(BRONZE_EVENTS) is None and lake.version(BRONZE_QUARANTINE) is None


def test_cli_exit_codes_and_one_line_reasons(spark, tmp_path, landing, capsys) -> None:
    lake_dir = str(tmp_path / "lake")
    assert cli.main(["ingest", "--landing", str(tmp_path / "nope"), "--lake", lake_dir]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("replog ingest: failed: LandingError: landing folder ")
    write_jsonl(landing / "a.jsonl", [event(1), "garbage"])
    assert cli.main(["ingest", "--landing", str(landing), "--lake", lake_dir]) == 0
    out = capsys.readouterr().out
    assert "records read 2 = kept 1 + quarantined 1" in out and "[reconciled]" in out
    write_jsonl(landing / "b.jsonl", [event(5, schema_version="3.1")])
    assert cli.main(["ingest", "--landing", str(landing), "--lake", lake_dir]) == 2
    assert "SchemaVersionError" in capsys.readouterr().err
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text("lake: /x\ndelta_backend: maybe\n", encoding="utf-8")
    assert cli.main(["ingest", "--landing", str(landing), "--config", str(bad_cfg)]) == 2
    assert "key 'delta_backend' must be one of" in capsys.readouterr().err


def test_bronze_tables_open_with_deltalake(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2, run_id="run-b")])
    quiet(spark, lake, landing)
    t = DeltaTable(lake.path(BRONZE_EVENTS))
    assert t.metadata().partition_columns == ["run_id"]
    assert sorted(t.to_pyarrow_table(columns=["run_id"]).column("run_id").to_pylist()) == ["run-a", "run-b"]
    assert lake.read(BRONZE_EVENTS).where(F.col("run_id") == "run-b").count() == 1


def test_a_bad_record_does_not_make_a_good_one_with_its_key_a_duplicate(spark, lake, landing) -> None:
    # (run-a, 1) is in the file twice, but only the second record is kept: no duplicate.
    write_jsonl(landing / "a.jsonl", [event(1, leo=-1), event(1), event(2)])
    r = quiet(spark, lake, landing)
    assert (r.read, r.kept, r.quarantined, r.duplicates) == (3, 2, 1, 0) and r.reconciles
    assert r.by_reason == {"invalid_value": 1}
    assert sorted(x["_source_line"] for x in lake.read(BRONZE_EVENTS).collect()) == [2, 3]


def test_a_first_line_behind_a_byte_order_mark_is_found_as_the_first_of_a_duplicate(spark, lake, landing) -> None:
    body = "\n".join(json.dumps(event(i)) for i in (7, 8, 7)) + "\n"
    (landing / "bom.jsonl").write_bytes("\ufeff".encode() + body.encode())
    r = quiet(spark, lake, landing)
    assert (r.read, r.kept, r.duplicates) == (3, 2, 1) and r.reconciles
    q = lake.read(BRONZE_QUARANTINE).select("_source_line", "reason_code").collect()
    assert [(x["_source_line"], x["reason_code"]) for x in q] == [(3, "duplicate")]


def test_duplicate_flags_keep_the_first_good_record_and_name_bronze_before_the_batch(spark) -> None:
    """Worked by hand: which good records are duplicates, and which reason each one gets."""
    verdicts = spark.createDataFrame([
        ("r", 1, "a", 1, None), ("r", 1, "b", 2, None),  # key 1 twice, and in bronze: both are duplicates
        ("r", 2, "b", 1, None), ("r", 2, "a", 2, None),  # key 2 twice: a:2 comes first (file, then line)
        ("r", 3, "a", 3, "invalid_value"), ("r", 3, "b", 3, None),  # a bad record is no first occurrence
        ("r", 4, "a", 4, None),  # once, not in bronze
    ], "run_id string, event_id long, _source_file string, _source_line long, _reason_code string")
    existing = spark.createDataFrame([("r", 1), ("r", 9)], "run_id string, event_id long")
    expected = spark.createDataFrame([
        ("a", 1, "duplicate event (run_id=r, event_id=1) is already in bronze"),
        ("b", 2, "duplicate event (run_id=r, event_id=1) is already in bronze"),
        ("b", 1, "duplicate event (run_id=r, event_id=2) first seen at a:2"),
    ], "_source_file string, _source_line long, _dup string")
    assert_df_equality(duplicate_flags(verdicts, existing), expected, ignore_row_order=True, ignore_nullable=True)


def test_a_batch_with_duplicates_is_written_again_leaving_only_committed_files(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2), event(1)])
    said: list[str] = []
    r = run_ingest(spark, lake, str(landing), log=said.append)
    assert (r.read, r.kept, r.duplicates) == (3, 2, 1) and r.reconciles
    assert any("writing again behind the exact duplicate check" in m for m in said)
    assert "exact_duplicates_write" in r.seconds
    # The first write, made before the keys were checked, was dropped: every file on disk is in the log.
    table_dir = Path(lake.path(BRONZE_EVENTS))
    on_disk = {p.relative_to(table_dir).as_posix() for p in table_dir.rglob("*.parquet")}
    assert on_disk == {rel for rel, _ in embedded._snapshot_files(DeltaTable(str(table_dir)), ["run_id"])}
    assert sorted(x["_source_line"] for x in lake.read(BRONZE_EVENTS).collect()) == [1, 2]


def test_a_batch_without_duplicates_is_written_once(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2), "garbage"])
    said: list[str] = []
    r = run_ingest(spark, lake, str(landing), log=said.append)
    assert (r.read, r.kept, r.quarantined, r.duplicates) == (3, 2, 1, 0) and r.reconciles
    assert not any("writing again" in m for m in said) and "exact_duplicates_write" not in r.seconds


def test_a_failed_run_leaves_no_staged_files_behind(spark, lake, landing) -> None:
    write_jsonl(landing / "a.jsonl", [event(1), event(2, schema_version="2.0")])
    with pytest.raises(SchemaVersionError):
        quiet(spark, lake, landing)
    table_dir = Path(lake.path(BRONZE_EVENTS))
    assert not list(table_dir.rglob("*.parquet"))
    assert lake.read(BRONZE_EVENTS).count() == 0


def test_the_generic_staging_path_commits_once_and_cleans_up(spark, lake, landing) -> None:
    # What the native backend uses: stage to <lake>/_staging, append it at commit time.
    from jobs.lake import IdempotencyKey, Lake

    df = spark.createDataFrame([("x", 1)], "_source_file string, _source_line long")
    df = df.select("_source_file", "_source_line", *[F.lit(None).cast(t).alias(c) for c, t in (
        ("raw", "string"), ("reason", "string"), ("reason_code", "string"), ("run_id", "string"),
        ("event_id", "long"), ("_ingest_batch", "string"))])
    staged = Lake.stage(lake, BRONZE_QUARANTINE, df)
    assert lake.version(BRONZE_QUARANTINE) is None  # written, not visible, but readable by its job:
    assert_df_equality(Lake.read_staged(lake, staged), df, ignore_nullable=True, ignore_metadata=True)
    key = IdempotencyKey("generic-staging-test")
    first = Lake.commit_staged(lake, staged, keys=[key])
    assert first.version is not None and not Path(staged.handle).exists()
    assert lake.read(BRONZE_QUARANTINE).count() == 1
    again = Lake.commit_staged(lake, Lake.stage(lake, BRONZE_QUARANTINE, df), keys=[key])
    assert again.skipped and lake.read(BRONZE_QUARANTINE).count() == 1


def test_a_landing_folder_without_event_files_says_so_and_names_what_it_ignored(spark, lake, landing) -> None:
    (landing / "events.json").write_text(json.dumps(event(1)) + "\n", encoding="utf-8")  # .json is not .jsonl
    (landing / "run.json").write_text("{}\n", encoding="utf-8")  # a simulated run's manifest: expected there
    lines: list[str] = []
    result = run_ingest(spark, lake, str(landing), log=lines.append)
    assert (result.files_seen, result.read, lake.exists(BRONZE_EVENTS)) == (0, 0, False)
    assert result.summary() == (f"ingest: nothing to do: no *.jsonl / *.parquet files under {landing} "
                                f"(1 other file(s) ignored: {landing / 'events.json'})")
    assert lines == [f"ingest: 1 file(s) ignored, not *.jsonl / *.parquet files: {landing / 'events.json'}"]


def test_a_landing_folder_without_broker_logs_names_the_log_files_it_looked_for(spark, lake, landing) -> None:
    from jobs.broker_logs import BrokerLogOptions

    (landing / "events.jsonl").write_text(json.dumps(event(1)) + "\n", encoding="utf-8")  # events, not logs
    lines: list[str] = []
    result = run_ingest(spark, lake, str(landing), log=lines.append, logs=BrokerLogOptions("incident", "UTC"))
    assert (result.files_seen, result.read, lake.exists(BRONZE_EVENTS)) == (0, 0, False)
    assert result.summary() == (f"ingest: nothing to do: no Kafka log (*.log, *.log.*, also .gz / .bz2 / .zst) "
                                f"files under {landing} (1 other file(s) ignored: {landing / 'events.jsonl'})")


def test_a_missing_landing_folder_fails_before_spark_starts(tmp_path: Path, capsys, monkeypatch) -> None:
    def no_spark(*_a, **_k):  # the check must come first: starting Spark takes ~10 s
        raise AssertionError("Spark was started")

    monkeypatch.setattr(cli, "_session_and_lake", no_spark)
    assert cli.main(["ingest", "--landing", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"replog ingest: failed: LandingError: landing folder {tmp_path / 'nope'} "
                   "does not exist or is not a folder")


@pytest.mark.parametrize("whole_files", [False, True])
def test_a_landing_path_with_plus_space_and_percent_keeps_every_record_and_its_file(
    spark, lake, landing, whole_files: bool
) -> None:
    """Spark's file URI is decoded as a URI: a '+' in a folder name is a '+', not a space (records were lost)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = landing / "a+b c%41"
    folder.mkdir()
    write_jsonl(folder / "x.jsonl", [event(1), event(2)])
    schema = pa.schema([f.with_nullable(True) for f in EVENT_SCHEMA])
    pq.write_table(pa.Table.from_pylist([event(3), event(4)], schema=schema), folder / "y.parquet")
    r = run_ingest(spark, lake, str(landing), log=lambda _m: None, whole_files=whole_files)
    assert (r.read, r.kept, r.whole_files) == (4, 4, 2 if whole_files else 0) and r.reconciles, r.summary()
    got = {(x["event_id"], x["_source_file"]) for x in lake.read(BRONZE_EVENTS).collect()}
    assert got == {(1, str(folder / "x.jsonl")), (2, str(folder / "x.jsonl")),
                   (3, str(folder / "y.parquet")), (4, str(folder / "y.parquet"))}
