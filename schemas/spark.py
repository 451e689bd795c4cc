"""Spark StructTypes derived from the pyarrow schemas in `schemas.events` (never written by hand)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T


class UnsupportedArrowTypeError(TypeError):
    """Raised when an arrow type has no Spark counterpart in this mapping."""


_SCALARS: dict[pa.DataType, T.DataType] = {
    pa.string(): T.StringType(),
    pa.large_string(): T.StringType(),
    pa.int8(): T.ByteType(),
    pa.int16(): T.ShortType(),
    pa.int32(): T.IntegerType(),
    pa.int64(): T.LongType(),
    pa.float32(): T.FloatType(),
    pa.float64(): T.DoubleType(),
    pa.bool_(): T.BooleanType(),
    pa.binary(): T.BinaryType(),
}


def type_identity(t: pa.DataType) -> str:
    """An arrow type's identity as Spark reads it: list/map item names, large strings and nullability ignored."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{type_identity(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{type_identity(t.key_type)},{type_identity(t.item_type)}>"
    if pa.types.is_struct(t):
        inner = ",".join(f"{t.field(i).name}:{type_identity(t.field(i).type)}" for i in range(t.num_fields))
        return f"struct<{inner}>"
    if pa.types.is_large_string(t):
        return "string"
    return str(t)


def to_spark_type(t: pa.DataType) -> T.DataType:
    """Map one arrow type to the Spark type with the same values."""
    if t in _SCALARS:
        return _SCALARS[t]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return T.ArrayType(to_spark_type(t.value_type), containsNull=t.value_field.nullable)
    if pa.types.is_struct(t):
        return T.StructType([to_spark_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return T.MapType(to_spark_type(t.key_type), to_spark_type(t.item_type),
                         valueContainsNull=t.item_field.nullable)
    if pa.types.is_timestamp(t):
        return T.TimestampType()
    raise UnsupportedArrowTypeError(f"no Spark type for arrow type {t}")


def to_spark_field(f: pa.Field) -> T.StructField:
    """Map one arrow field, keeping nullability and its doc as Spark column metadata."""
    meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
    return T.StructField(f.name, to_spark_type(f.type), nullable=f.nullable, metadata=meta)


def to_spark_schema(schema: pa.Schema) -> T.StructType:
    """Map an arrow schema to a Spark StructType."""
    return T.StructType([to_spark_field(f) for f in schema])
