"""The embedded Delta backend: every table operation, and the delta-rs gaps it closes itself."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality
from deltalake import DeltaTable

import jobs.lake.embedded as embedded
from jobs.lake import (
    ConcurrentCommitError,
    EmbeddedLake,
    IdempotencyKey,
    SchemaMismatchError,
    UnsupportedTableProtocolError,
)
from schemas.spark import to_spark_schema
from schemas.tables import TableSpec

SPEC = TableSpec(
    "silver/things",
    pa.schema([pa.field("run_id", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
               pa.field("v", pa.string())]),
    ("run_id",),
)
FLAT = TableSpec("gold/flat", pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())]))


def frame(spark, rows, spec=SPEC):
    return spark.createDataFrame(rows, to_spark_schema(spec.schema))


def test_append_then_read_returns_the_rows_with_the_table_schema(spark, lake: EmbeddedLake) -> None:
    rows = [("r1", 1, "a"), ("r1", 2, "b"), ("r2", 1, "c")]
    res = lake.append(SPEC, frame(spark, rows))
    assert res.version == 1 and res.files_added >= 2 and not res.skipped
    assert_df_equality(lake.read(SPEC), frame(spark, rows), ignore_row_order=True, ignore_nullable=True)
    assert DeltaTable(lake.path(SPEC)).version() == 1


def test_read_of_a_missing_table_is_empty_with_the_schema(spark, lake: EmbeddedLake) -> None:
    df = lake.read(SPEC)
    assert df.count() == 0
    assert [(f.name, f.dataType) for f in df.schema] == [(f.name, f.dataType) for f in to_spark_schema(SPEC.schema)]
    assert lake.version(SPEC) is None


def test_read_prunes_to_the_requested_partitions(spark, lake: EmbeddedLake) -> None:
    lake.append(SPEC, frame(spark, [("r1", 1, "a"), ("r2", 2, "b")]))
    assert_df_equality(lake.read(SPEC, [{"run_id": "r2"}]), frame(spark, [("r2", 2, "b")]), ignore_nullable=True)


TWO_LEVEL = TableSpec(
    "bronze/two_level",
    pa.schema([pa.field("run_id", pa.string(), nullable=False), pa.field("kind", pa.string()),
               pa.field("k", pa.int64(), nullable=False)]),
    ("run_id", "kind"),
)


def _scans(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_a_filter_on_a_partition_column_skips_the_other_partitions_files(spark, lake: EmbeddedLake) -> None:
    rows = [("007", "fetch", 1), ("007", "append", 2), ("r/2 x", "fetch", 3), ("r/2 x", None, 4)]
    lake.append(TWO_LEVEL, frame(spark, rows, TWO_LEVEL))
    # Every file sits in the folders of its logged values: one scan, values read back exactly
    # (a run id "007" stays a string, a null kind stays null).
    everything = lake.read(TWO_LEVEL)
    assert _scans(everything).count("FileScan") == 1
    assert_df_equality(everything, frame(spark, rows, TWO_LEVEL), ignore_row_order=True, ignore_nullable=True)
    fetches = everything.where("kind = 'fetch'")
    assert "PartitionFilters: [isnotnull(kind" in _scans(fetches)
    assert_df_equality(fetches, frame(spark, [rows[0], rows[2]], TWO_LEVEL), ignore_row_order=True,
                       ignore_nullable=True)


def test_a_selection_naming_some_partition_columns_reads_every_partition_below_them(spark, lake) -> None:
    rows = [("r1", "fetch", 1), ("r1", "append", 2), ("r2", "fetch", 3)]
    lake.append(TWO_LEVEL, frame(spark, rows, TWO_LEVEL))
    assert_df_equality(lake.read(TWO_LEVEL, [{"run_id": "r1"}]), frame(spark, rows[:2], TWO_LEVEL),
                       ignore_row_order=True, ignore_nullable=True)
    lake.overwrite_partitions(TWO_LEVEL, frame(spark, [("r1", "append", 9)], TWO_LEVEL), [{"run_id": "r1"}])
    assert_df_equality(lake.read(TWO_LEVEL), frame(spark, [("r1", "append", 9), rows[2]], TWO_LEVEL),
                       ignore_row_order=True, ignore_nullable=True)
    with pytest.raises(ValueError, match=r"partitioned by \['run_id', 'kind'\]; cannot select partitions by \['k'\]"):
        lake.read(TWO_LEVEL, [{"k": "1"}])


def test_files_outside_their_partition_folders_are_read_with_the_logged_values(spark, lake: EmbeddedLake) -> None:
    """Tables written before files were moved into place keep them below a batch folder
    (`b-<uuid>/run_id=.../`): the log's values, not the folders, say which partition a file holds."""
    from deltalake.transaction import AddAction

    root = Path(lake.path(SPEC))
    old = root / "b-old" / "run_id=r1" / "part-0.parquet"
    old.parent.mkdir(parents=True)
    _write(pa.table({"k": pa.array([1], pa.int64()), "v": ["a"]}), old)
    DeltaTable.create(str(root), SPEC.schema, partition_by=["run_id"])
    add = AddAction("b-old/run_id=r1/part-0.parquet", old.stat().st_size, {"run_id": "r1"}, 0, True,
                    json.dumps({"numRecords": 1}))
    DeltaTable(str(root)).create_write_transaction([add], mode="append", schema=SPEC.schema,
                                                   partition_by=["run_id"])
    lake.append(SPEC, frame(spark, [("r2", 2, "b")]))
    got = lake.read(SPEC)
    assert_df_equality(got, frame(spark, [("r1", 1, "a"), ("r2", 2, "b")]), ignore_row_order=True,
                       ignore_nullable=True)
    assert_df_equality(lake.read(SPEC, [{"run_id": "r1"}]), frame(spark, [("r1", 1, "a")]), ignore_nullable=True)


def test_partition_values_with_path_special_characters_survive(spark, lake: EmbeddedLake) -> None:
    odd = "run 1:a=b/c%d#e"
    lake.append(SPEC, frame(spark, [(odd, 1, "x"), ("plain", 2, "y")]))
    expected = frame(spark, [(odd, 1, "x"), ("plain", 2, "y")])
    assert_df_equality(lake.read(SPEC), expected, ignore_row_order=True, ignore_nullable=True)
    got = DeltaTable(lake.path(SPEC)).to_pyarrow_table().to_pylist()
    assert sorted(r["run_id"] for r in got) == sorted([odd, "plain"])


def test_partition_values_come_from_the_log_as_a_scan_would_find_them(spark, lake: EmbeddedLake) -> None:
    """The runs a table holds, read from the add actions (no data file opened), are those a scan finds: r2, emptied
    by an overwrite, is gone from both, and so is r9, whose only file (committed by another writer) holds no row."""
    from deltalake.transaction import AddAction

    from jobs.lake.api import Lake

    assert lake.partition_values(SPEC, "run_id") == []
    lake.append(SPEC, frame(spark, [("r1", 1, "a"), ("r2", 2, "b"), ("r3", 3, "c")]))
    assert lake.partition_values(SPEC, "run_id") == ["r1", "r2", "r3"]
    lake.overwrite_partitions(SPEC, frame(spark, []), [{"run_id": "r2"}])
    empty = Path(lake.path(SPEC)) / "run_id=r9" / "empty.parquet"
    empty.parent.mkdir()
    pq.write_table(SPEC.data_schema.empty_table(), empty)
    DeltaTable(lake.path(SPEC)).create_write_transaction(
        [AddAction("run_id=r9/empty.parquet", empty.stat().st_size, {"run_id": "r9"}, 0, True,
                   json.dumps({"numRecords": 0}))], mode="append", schema=SPEC.schema, partition_by=["run_id"])
    assert lake.partition_values(SPEC, "run_id") == Lake.partition_values(lake, SPEC, "run_id") == ["r1", "r3"]
    with pytest.raises(ValueError, match="not by 'k'"):
        lake.partition_values(SPEC, "k")


def test_rerun_with_the_same_key_adds_nothing(spark, lake: EmbeddedLake) -> None:
    key = IdempotencyKey("job:batch-1")
    first = lake.append(SPEC, frame(spark, [("r1", 1, "a")]), keys=[key])
    second = lake.append(SPEC, frame(spark, [("r1", 1, "a")]), keys=[key])
    assert first.version == 1 and second.skipped and second.version is None
    assert lake.read(SPEC).count() == 1
    assert lake.committed(SPEC, [key, IdempotencyKey("job:batch-2")]) == {key}


def test_key_committed_between_write_and_commit_is_not_committed_twice(spark, lake, monkeypatch) -> None:
    """delta-rs does not refuse a duplicate app transaction: the layer re-checks under its lock."""
    key = IdempotencyKey("job:race")
    real_write = EmbeddedLake._write_files
    raced = []

    def write_then_race(self, spec, df):
        adds = real_write(self, spec, df)
        if not raced:  # another writer commits the same batch while this one was writing
            raced.append(True)
            lake.append(SPEC, frame(spark, [("r1", 9, "other")]), keys=[key])
        return adds

    monkeypatch.setattr(EmbeddedLake, "_write_files", write_then_race)
    res = lake.append(SPEC, frame(spark, [("r1", 1, "mine")]), keys=[key])
    assert res.skipped
    assert lake.read(SPEC).count() == 1


def test_partly_committed_key_set_is_a_clear_error(spark, lake: EmbeddedLake, monkeypatch) -> None:
    a, b = IdempotencyKey("job:a"), IdempotencyKey("job:b")
    real_write = EmbeddedLake._write_files
    raced = []

    def write_then_race(self, spec, df):
        adds = real_write(self, spec, df)
        if not raced:
            raced.append(True)
            lake.append(SPEC, frame(spark, [("r1", 9, "other")]), keys=[a])
        return adds

    monkeypatch.setattr(EmbeddedLake, "_write_files", write_then_race)
    with pytest.raises(ConcurrentCommitError, match="1 of 2 idempotency keys"):
        lake.append(SPEC, frame(spark, [("r1", 1, "mine")]), keys=[a, b])


def test_files_with_another_schema_are_refused_before_commit(spark, lake: EmbeddedLake, tmp_path: Path) -> None:
    lake.append(FLAT, spark.createDataFrame([(1, "a")], to_spark_schema(FLAT.schema)))
    bad = pa.table({"k": pa.array(["not-an-int"]), "v": ["x"]})
    with pytest.raises(SchemaMismatchError, match="k: expected int64, file has string"):
        embedded._check_file_schema(_write(bad, tmp_path / "bad.parquet"), FLAT.data_schema)
    extra = pa.table({"k": pa.array([1], pa.int64()), "v": ["x"], "w": [1]})
    with pytest.raises(SchemaMismatchError, match="w: expected absent"):
        embedded._check_file_schema(_write(extra, tmp_path / "extra.parquet"), FLAT.data_schema)


def _write(table: pa.Table, path: Path) -> Path:
    import pyarrow.parquet as pq

    pq.write_table(table, path)
    return path


def test_overwrite_partitions_replaces_only_those_partitions(spark, lake: EmbeddedLake) -> None:
    lake.append(SPEC, frame(spark, [("r1", 1, "old"), ("r2", 1, "keep")]))
    res = lake.overwrite_partitions(SPEC, frame(spark, [("r1", 5, "new")]), [{"run_id": "r1"}])
    assert res.files_removed >= 1
    expected = frame(spark, [("r1", 5, "new"), ("r2", 1, "keep")])
    assert_df_equality(lake.read(SPEC), expected, ignore_row_order=True, ignore_nullable=True)


def test_overwrite_of_an_unpartitioned_table_replaces_everything(spark, lake: EmbeddedLake) -> None:
    schema = to_spark_schema(FLAT.schema)
    lake.append(FLAT, spark.createDataFrame([(1, "a"), (2, "b")], schema))
    lake.overwrite_partitions(FLAT, spark.createDataFrame([(3, "c")], schema), [])
    assert_df_equality(lake.read(FLAT), spark.createDataFrame([(3, "c")], schema), ignore_nullable=True)


def test_overwrite_does_not_lose_an_append_committed_meanwhile(spark, lake: EmbeddedLake, monkeypatch) -> None:
    """delta-rs lets a stale overwrite win over a concurrent append; the layer serialises them."""
    lake.append(SPEC, frame(spark, [("r1", 1, "old")]))
    real_write = EmbeddedLake._write_files
    raced = []

    def write_then_append(self, spec, df):
        adds = real_write(self, spec, df)
        if not raced:
            raced.append(True)
            lake.append(SPEC, frame(spark, [("r2", 7, "concurrent")]))
        return adds

    monkeypatch.setattr(EmbeddedLake, "_write_files", write_then_append)
    lake.overwrite_partitions(SPEC, frame(spark, [("r1", 2, "new")]), [{"run_id": "r1"}])
    assert_df_equality(lake.read(SPEC), frame(spark, [("r1", 2, "new"), ("r2", 7, "concurrent")]),
                       ignore_row_order=True, ignore_nullable=True)


def test_concurrent_appends_from_two_threads_both_land(spark, lake: EmbeddedLake) -> None:
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            lake.append(SPEC, frame(spark, [(f"r{i}", i, "x")]), keys=[IdempotencyKey(f"t:{i}")])
        except BaseException as e:  # surfaced by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert lake.read(SPEC).count() == 2
    assert lake.version(SPEC) == 2


def test_merge_upserts_by_key(spark, lake: EmbeddedLake) -> None:
    lake.append(SPEC, frame(spark, [("r1", 1, "a"), ("r1", 2, "b"), ("r2", 1, "z")]))
    lake.merge(SPEC, frame(spark, [("r1", 2, "B"), ("r1", 3, "c")]), on=["run_id", "k"])
    expected = frame(spark, [("r1", 1, "a"), ("r1", 2, "B"), ("r1", 3, "c"), ("r2", 1, "z")])
    assert_df_equality(lake.read(SPEC), expected, ignore_row_order=True, ignore_nullable=True)


def test_merge_needs_the_partition_columns_in_its_keys(spark, lake: EmbeddedLake) -> None:
    with pytest.raises(ValueError, match="partition columns"):
        lake.merge(SPEC, frame(spark, [("r1", 1, "a")]), on=["k"])


def test_commit_metadata_and_one_commit_per_write_are_in_the_history(spark, lake: EmbeddedLake) -> None:
    lake.append(SPEC, frame(spark, [("r1", 1, "a")]), metadata={"replog.batch": "b1", "replog.count": 1})
    lake.append(SPEC, frame(spark, [("r1", 2, "a")]), metadata={"replog.batch": "b2"})
    hist = DeltaTable(lake.path(SPEC)).history()
    writes = [h for h in hist if h.get("replog.batch")]
    assert [h["replog.batch"] for h in writes] == ["b2", "b1"]
    assert json.loads(writes[1]["replog.count"]) == 1


def test_a_table_of_an_older_minor_schema_gains_the_new_columns(spark, lake: EmbeddedLake) -> None:
    # A lake written before a minor schema bump: the next write adds the new nullable column to the logged
    # schema (delta-rs alone would keep the old one), and the earlier rows read it as null.
    old = TableSpec(SPEC.name, pa.schema([f for f in SPEC.schema if f.name != "v"]), SPEC.partition_by)
    lake.append(old, spark.createDataFrame([("r1", 1)], to_spark_schema(old.schema)))
    assert [f.name for f in DeltaTable(lake.path(SPEC)).schema().fields] == ["run_id", "k"]
    lake.append(SPEC, frame(spark, [("r1", 2, "b")]))
    assert [f.name for f in DeltaTable(lake.path(SPEC)).schema().fields] == ["run_id", "k", "v"]
    assert_df_equality(lake.read(SPEC), frame(spark, [("r1", 1, None), ("r1", 2, "b")]), ignore_row_order=True,
                       ignore_nullable=True)


def test_files_written_but_never_committed_are_invisible(spark, lake: EmbeddedLake, monkeypatch) -> None:
    lake.append(SPEC, frame(spark, [("r1", 1, "a")]))

    def crash(*_a, **_k):
        raise RuntimeError("injected crash before commit")

    monkeypatch.setattr(embedded, "_commit_actions", crash)
    with pytest.raises(RuntimeError, match="injected crash"):
        lake.append(SPEC, frame(spark, [("r1", 2, "lost")]))
    monkeypatch.undo()
    batches = {f.name.split("-part-")[0] for f in Path(lake.path(SPEC)).rglob("b-*.parquet")}
    assert len(batches) == 2  # the orphan batch is on disk
    assert_df_equality(lake.read(SPEC), frame(spark, [("r1", 1, "a")]), ignore_nullable=True)
    assert lake.version(SPEC) == 1


def test_staged_files_are_read_back_with_their_partition_values_before_the_commit(spark, lake: EmbeddedLake) -> None:
    lake.append(SPEC, frame(spark, [("r1", 1, "a")]))
    rows = [("r1", 2, "b"), ("r/2 x", 1, None)]
    staged = lake.stage(SPEC, frame(spark, rows))
    assert_df_equality(lake.read_staged(staged), frame(spark, rows), ignore_nullable=True, ignore_row_order=True)
    assert_df_equality(lake.read(SPEC), frame(spark, [("r1", 1, "a")]), ignore_nullable=True)  # not committed
    lake.discard(staged)
    assert lake.read(SPEC).count() == 1


def test_table_needing_reader_features_is_refused(spark, lake: EmbeddedLake) -> None:
    lake.append(SPEC, frame(spark, [("r1", 1, "a")]))
    log = Path(lake.path(SPEC)) / "_delta_log" / "00000000000000000002.json"
    protocol = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                             "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}
    commit = {"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}
    log.write_text(json.dumps(commit) + "\n" + json.dumps(protocol) + "\n", encoding="utf-8")
    with pytest.raises(UnsupportedTableProtocolError, match="reader version 3"):
        lake.read(SPEC)


def test_files_staged_by_other_writers_are_checked_moved_and_committed_together(spark, lake: EmbeddedLake) -> None:
    """`stage_files`: Parquet written into the staging folder by any writer (here pyarrow), joined with a
    Spark-staged write, commits as one append; a file of another schema is refused and nothing is left."""
    import pyarrow.parquet as pq

    data = pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.string())])

    def write(folder: Path) -> None:
        (folder / "run_id=r%2F1").mkdir(parents=True)
        pq.write_table(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=data), folder / "run_id=r%2F1" / "p.parquet")

    by_arrow = lake.stage_files(SPEC, write)
    by_spark = lake.stage(SPEC, frame(spark, [("r2", 3, "c")]))
    assert lake.version(SPEC) is None
    res = lake.commit_staged(lake.join_staged([by_arrow, by_spark]), keys=[IdempotencyKey("both")])
    assert (res.files_added, res.rows_added) == (2, 3)
    got = lake.read(SPEC).select("run_id", "k", "v")
    assert_df_equality(got, frame(spark, [("r/1", 1, "a"), ("r/1", 2, "b"), ("r2", 3, "c")]),
                       ignore_row_order=True, ignore_nullable=True)

    def wrong(folder: Path) -> None:
        (folder / "run_id=r3").mkdir(parents=True)
        pq.write_table(pa.table({"k": ["not a number"]}), folder / "run_id=r3" / "p.parquet")

    with pytest.raises(SchemaMismatchError, match="k: expected int64, file has string"):
        lake.stage_files(SPEC, wrong)
    table_dir = Path(lake.path(SPEC))
    assert not (table_dir / "run_id=r3").exists() or not list((table_dir / "run_id=r3").iterdir())
    assert not list((table_dir / embedded.STAGING_DIR).iterdir())
    with pytest.raises(ValueError, match="different tables"):
        lake.join_staged([by_spark, lake.stage(FLAT, frame(spark, [(1, "x")], FLAT))])
