"""`jobs.transforms.lag`'s ISR stretches of a follower: when it entered and left the committed ISR, from the
partition's state intervals holding it, against a plain reading on random partition histories."""

from __future__ import annotations

import random

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs.transforms.lag import _stretch_ends, _stretch_starts

ISRS = "isrs array<struct<valid_from_ms:bigint,valid_to_ms:bigint,isr:array<int>>>"


def _history(rng: random.Random) -> list[tuple[int, int | None, list[int]]]:
    """Contiguous state intervals (as `silver/partition_state` has them: no overlap, one start per millisecond), the
    last one open half the time, shuffled (a list built by `collect_list` has no order)."""
    t, out = rng.randint(-5, 100), []
    n = rng.randint(0, 12)
    for k in range(n):
        end = None if k == n - 1 and rng.random() < 0.5 else t + rng.randint(1, 20)
        out.append((t, end, [b for b in (1, 2, 3) if rng.random() < 0.6]))
        if end is None:
            break
        t = end
    rng.shuffle(out)
    return out


def _plain(history: list[tuple[int, int | None, list[int]]], follower: int) -> tuple[list, list]:
    """Starts: the holding intervals no holding interval ends at; ends: those none starts at (null last)."""
    holding = [(f, t) for f, t, isr in history if follower in isr]
    starts = sorted(f for f, _ in holding if not any(t2 == f for _, t2 in holding))
    ends = [t for _, t in holding if not any(f2 == t for f2, _ in holding)]
    return starts, sorted(e for e in ends if e is not None) + [None] * ends.count(None)


def test_stretches_are_found_between_neighbours_as_between_all_intervals(spark: SparkSession) -> None:
    rng = random.Random(75)
    cases = [(i, _history(rng)) for i in range(300)]
    holding = F.filter("isrs", lambda i: F.array_contains(i["isr"], F.lit(2)))
    got = {r["case"]: (r["starts"], r["ends"]) for r in spark.createDataFrame(cases, f"case int, {ISRS}").select(
        "case", _stretch_starts(holding).alias("starts"), _stretch_ends(holding).alias("ends")).collect()}
    assert {i: _plain(h, 2) for i, h in cases} == {i: (list(s), list(e)) for i, (s, e) in got.items()}
    assert sum(len(_plain(h, 2)[0]) > 1 for _, h in cases) > 50, "several stretches in many histories"
