"""A selection of table partitions (`Lake.read(spec, partitions)`) as a filter, whatever the number of runs.

A selection is a list of partition-value maps, e.g. one `{"run_id": r}` per audited run. Spelt as a chain of
`OR`s it grows one level per run: thousands of runs made a plan (and a `replaceWhere`) whose depth grew with
them, and a per-file check against every map. Selections naming the same columns are grouped instead: one
column becomes one `IN` (a set lookup), several a set of value tuples.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from jobs.lake.api import PartitionValues


def _groups(partitions: Sequence[PartitionValues]) -> dict[tuple[str, ...], set[tuple[str | None, ...]]]:
    """The selection's value tuples, grouped by the columns (sorted) each map names."""
    groups: dict[tuple[str, ...], set[tuple[str | None, ...]]] = {}
    for p in partitions:
        cols = tuple(sorted(p))
        groups.setdefault(cols, set()).add(tuple(p[c] for c in cols))
    return groups


def _in(col: str, values: set[str | None]) -> Column:
    """`col` is one of `values` (a null among them: or is null)."""
    present = sorted(v for v in values if v is not None)
    term = F.col(col).isin(present) if present else F.lit(False)
    return term | F.col(col).isNull() if None in values else term


def selection_column(partitions: Sequence[PartitionValues]) -> Column:
    """A row filter true for the rows of the selected partitions (a map naming no column selects every row)."""
    terms: list[Column] = []
    for cols, tuples in _groups(partitions).items():
        if not cols:
            terms.append(F.lit(True))
        elif len(cols) == 1:
            terms.append(_in(cols[0], {t[0] for t in tuples}))
        else:
            for t in sorted(tuples, key=repr):
                terms.append(reduce(lambda a, b: a & b, [F.col(c).isNull() if v is None else F.col(c) == F.lit(v)
                                                         for c, v in zip(cols, t, strict=True)]))
    return reduce(lambda a, b: a | b, terms, F.lit(False))


def _sql_value(v: str) -> str:
    # Partition values are run ids and the like; a quote would end the literal, so it is dropped as before.
    return "'" + str(v).replace("'", "") + "'"


def selection_sql(partitions: Sequence[PartitionValues]) -> str:
    """The same filter as a SQL predicate (`replaceWhere`): `false` for an empty selection."""
    terms: list[str] = []
    for cols, tuples in _groups(partitions).items():
        if not cols:
            terms.append("true")
        elif len(cols) == 1:
            values = {t[0] for t in tuples}
            present = sorted(v for v in values if v is not None)
            parts = [f"`{cols[0]}` IN ({', '.join(_sql_value(v) for v in present)})"] if present else []
            parts += [f"`{cols[0]}` IS NULL"] if None in values else []
            terms.append("(" + " OR ".join(parts) + ")")
        else:
            for t in sorted(tuples, key=repr):
                terms.append("(" + " AND ".join(f"`{c}` IS NULL" if v is None else f"`{c}` = {_sql_value(v)}"
                                                for c, v in zip(cols, t, strict=True)) + ")")
    return " OR ".join(terms) or "false"


def selection_matcher(partitions: Sequence[PartitionValues]) -> Callable[[Mapping[str, str | None]], bool]:
    """A test of a file's partition values against the selection: one set lookup per group of maps."""
    groups = list(_groups(partitions).items())

    def matches(values: Mapping[str, str | None]) -> bool:
        return any(tuple(values.get(c) for c in cols) in tuples for cols, tuples in groups)

    return matches
