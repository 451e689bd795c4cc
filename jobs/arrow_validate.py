"""The validation screen of `jobs.validate` in Arrow compute, for whole landing files.

`jobs.validate` decides, record by record and in Spark SQL, what is wrong with a record. Almost
every landing file has nothing wrong with it, and for such a file Spark's work (a fresh JVM compiles
the ~130 rules before it is fast) buys nothing. `screen(batch)` is the same screen as
`validate.screen_sql`, built from the same catalogue (`schemas.events`), evaluated by Arrow's
vectorised kernels: true for every record that may break a rule. A file in which it is false for
every record breaks no rule; any other file goes through Spark's exact rules. The screen may flag
good records (they only cost the exact path), never miss a bad one: `tests/test_arrow_validate.py`
checks that on every rule, against Spark's verdicts.

`plain_schema_problem(schema)` says why a Parquet file's own schema needs Spark's per-record reading
(a wrong type, an unknown column), or None when its columns are event columns of their exact types.
"""

from __future__ import annotations

from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc

from jobs.validate import INT32_MAX, READABLE_VERSIONS, UNUSABLE_RUN_IDS
from replication_core.config import LONG_MAX
from schemas.events import ACKS_ALLOWED, COLUMNS, ENVELOPE_REQUIRED, EVENT_SCHEMA, EVENT_TYPES
from schemas.spark import type_identity

# The batch-span rule subtracts two int64s; in float64 the difference is off by at most 2^11 near
# 2^63, so flagging from this far below the bound flags every record the exact rule would.
_SPAN_FLAG = float(INT32_MAX - 4096)


_EVENT_TYPES_BY_NAME = {f.name: type_identity(f.type) for f in EVENT_SCHEMA}


def plain_schema_problem(schema: pa.Schema) -> str | None:
    """Why a landing Parquet schema needs Spark's per-record path, or None when every column is an event
    column of its own type (columns of a newer minor's or missing ones are read as Spark reads them: null)."""
    names = schema.names
    if len(set(names)) != len(names):
        return "a column name repeats"
    for f in schema:
        want = _EVENT_TYPES_BY_NAME.get(f.name)
        if want is None:
            return f"column {f.name!r} is not an event column"
        if type_identity(f.type) != want:
            return f"column {f.name!r} is {f.type}, the schema says {want}"
    return None


def _or(terms: list[pa.Array | pa.ChunkedArray], n: int) -> pa.Array | pa.ChunkedArray:
    # Each term counts only where it is true (a null comparison breaks no rule, as in the SQL screen).
    filled = [pc.fill_null(t, False) for t in terms]
    return reduce(pc.or_, filled) if filled else pa.array([False] * n, pa.bool_())


def screen(batch: pa.RecordBatch | pa.Table) -> pa.Array | pa.ChunkedArray:
    """True for every record of `batch` that may break a rule of `jobs.validate` (see the module doc).

    `batch` has event columns of their own types (`plain_schema_problem` is None); a column it lacks
    is null in every record, as Spark reads it.
    """
    n = batch.num_rows

    def col(name: str) -> pa.Array | pa.ChunkedArray:
        i = batch.schema.get_field_index(name)
        return batch.column(i) if i >= 0 else pa.nulls(n, EVENT_SCHEMA.field(name).type)

    def absent(name: str) -> pa.Array | pa.ChunkedArray:
        return pc.is_null(col(name))

    def outside(name: str, values: tuple[object, ...]) -> pa.Array | pa.ChunkedArray:
        c = col(name)
        return pc.and_(pc.is_valid(c), pc.invert(pc.is_in(c, pa.array(values, c.type))))

    event_type = col("event_type")
    terms = [
        # Versions other than the readable ones: bad, older or newer (the latter fails the job in Spark).
        pc.invert(pc.fill_null(pc.is_in(col("schema_version"), pa.array(READABLE_VERSIONS)), False)),
        *[absent(name) for name in ENVELOPE_REQUIRED],
        pc.and_(pc.equal(col("source"), "engine"), absent("broker_id")),
        outside("acks", ACKS_ALLOWED),
        pc.is_in(col("run_id"), pa.array(UNUSABLE_RUN_IDS)),
        pc.less(col("last_offset"), col("base_offset")),
        pc.greater(pc.subtract(pc.cast(col("last_offset"), pa.float64(), safe=False),
                               pc.cast(col("base_offset"), pa.float64(), safe=False)),
                   _SPAN_FLAG),
        pc.greater_equal(col("last_offset"), LONG_MAX),
        pc.and_(pc.equal(event_type, "leadership_change"), pc.greater(col("hw"), col("leo"))),
        pc.and_(pc.and_(pc.equal(event_type, "truncation"), pc.greater(col("truncate_offset"), col("old_leo"))),
                pc.invert(pc.fill_null(pc.equal(col("reason"), "full"), False))),
        pc.and_(pc.equal(event_type, "fetch_response"), pc.greater(col("response_received_ms"), col("ts_ms"))),
    ]
    for c in COLUMNS:
        if c.allowed:
            terms.append(outside(c.name, c.allowed))
        for et, values in c.allowed_by_type.items():
            terms.append(pc.and_(pc.equal(event_type, et), outside(c.name, values)))
        if c.minimum is not None:
            terms.append(pc.less(col(c.name), c.minimum))
        if c.non_negative:
            terms.append(pc.less(col(c.name), 0))
    for et in EVENT_TYPES.values():
        needed = list(et.requires) + (["topic", "partition"] if et.partition_scoped else [])
        terms.append(pc.and_(pc.equal(event_type, et.name), _or([absent(x) for x in needed], n)))
    return _or(terms, n)

