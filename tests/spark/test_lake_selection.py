"""`jobs.lake.selection`: a partition selection as a row filter, a SQL predicate and a file test, each the same as
the plain reading (a row is selected when one map agrees with it on every column that map names)."""

from __future__ import annotations

import random

from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.lake.selection import selection_column, selection_matcher, selection_sql

RUNS = ["a", "b", "c", "it's", None]
DAYS = ["d1", "d2", None]
ROWS = [(r, d, i) for i, (r, d) in enumerate((r, d) for r in RUNS for d in DAYS)]


def _plain(row: dict, partitions: list[dict]) -> bool:
    return any(all(row[c] == v for c, v in p.items()) for p in partitions)


def _selections() -> list[list[dict]]:
    rng = random.Random(7)
    drawn: list[list[dict]] = [[], [{}], [{"run_id": None}], [{"run_id": "a"}, {"run_id": "a"}],
                               [{"run_id": "a"}, {"run_id": "b", "day": "d2"}, {"day": None}]]
    for _ in range(25):
        maps = []
        for _ in range(rng.randint(1, 6)):
            cols = rng.choice([("run_id",), ("day",), ("run_id", "day")])
            maps.append({c: rng.choice(RUNS if c == "run_id" else DAYS) for c in cols})
        drawn.append(maps)
    return drawn


def test_a_selection_filters_rows_as_its_maps_say(spark: SparkSession) -> None:
    df = spark.createDataFrame(ROWS, "run_id string, day string, id int")
    for partitions in _selections():
        wanted = spark.createDataFrame([r for r in ROWS if _plain({"run_id": r[0], "day": r[1]}, partitions)],
                                       df.schema)
        assert_df_equality(df.where(selection_column(partitions)), wanted, ignore_row_order=True)
        # A quote is dropped from a SQL literal (partition values are run ids): those selections are left out.
        if all("'" not in str(v) for p in partitions for v in p.values()):
            assert_df_equality(df.where(F.expr(selection_sql(partitions))), wanted, ignore_row_order=True)
        matches = selection_matcher(partitions)
        assert sorted(r[2] for r in ROWS if matches({"run_id": r[0], "day": r[1]})) == sorted(
            r[2] for r in wanted.collect())


def test_many_runs_are_one_in_list_not_a_chain_of_ors() -> None:
    runs = [{"run_id": f"run-{i}"} for i in range(3000)]
    assert selection_sql(runs).count(" OR ") == 0 and selection_sql(runs).startswith("(`run_id` IN ('run-0', ")
    assert selection_sql([]) == "false"
    assert selection_sql([{"run_id": "x"}, {"run_id": None}]) == "(`run_id` IN ('x') OR `run_id` IS NULL)"
    assert selection_sql([{"run_id": "it's"}]) == "(`run_id` IN ('its'))"
