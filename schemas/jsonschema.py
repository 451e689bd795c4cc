"""JSON Schema (draft 2020-12) for one landing event, derived from `schemas.events`.

`schemas/event.schema.json` is this document written out (`python -m schemas.jsonschema`), for
tools outside Python; a test keeps the file and the code in step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.events import ACKS_ALLOWED, COLUMNS, EVENT_TYPES, KAFKA_LOG_SOURCE, SCHEMA_VERSION, Column

SCHEMA_FILE = Path(__file__).with_name("event.schema.json")


def _type_of(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_string(t):
        return {"type": "string"}
    if pa.types.is_integer(t):
        info = {8: (-(2**7), 2**7 - 1), 16: (-(2**15), 2**15 - 1), 32: (-(2**31), 2**31 - 1),
                64: (-(2**63), 2**63 - 1)}[t.bit_width]
        return {"type": "integer", "minimum": info[0], "maximum": info[1]}
    if pa.types.is_floating(t):
        return {"type": "number"}
    if pa.types.is_boolean(t):
        return {"type": "boolean"}
    if pa.types.is_list(t):
        return {"type": "array", "items": _type_of(t.value_type)}
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return {
            "type": "object",
            "properties": {f.name: _nullable(_type_of(f.type), f.nullable) for f in fields},
            "required": [f.name for f in fields if not f.nullable],
            "additionalProperties": False,
        }
    if pa.types.is_map(t):
        return {"type": "object", "additionalProperties": _type_of(t.item_type)}
    raise TypeError(f"no JSON Schema type for arrow type {t}")


def _nullable(s: dict[str, Any], nullable: bool) -> dict[str, Any]:
    return {"anyOf": [s, {"type": "null"}]} if nullable else s


def _column(c: Column) -> dict[str, Any]:
    s = _type_of(c.type)
    if c.non_negative:
        s["minimum"] = 0
    if c.minimum is not None:
        s["minimum"] = c.minimum
    if c.allowed:
        s["enum"] = list(c.allowed)
    if c.name == "acks":
        s["enum"] = list(ACKS_ALLOWED)
    s = _nullable(s, not c.required)
    s["description"] = c.doc + (f" Unit: {c.unit}." if c.unit else "")
    return s


def _requires_rule(event_type: str, from_logs: bool = False) -> dict[str, Any]:
    et = EVENT_TYPES[event_type]
    own = et.required_for(KAFKA_LOG_SOURCE if from_logs else None)
    required = list(own) + (["topic", "partition"] if et.partition_scoped else [])
    source = {"const": KAFKA_LOG_SOURCE} if from_logs else {"not": {"const": KAFKA_LOG_SOURCE}}
    return {
        "if": {"properties": {"event_type": {"const": event_type}, "source": source}, "required": ["event_type"]},
        "then": {
            "required": required,
            "properties": {name: {"not": {"type": "null"}} for name in required},
        },
    }


def event_json_schema() -> dict[str, Any]:
    """The JSON Schema document for one event object (one JSON Lines line)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"replog/replication_event/{SCHEMA_VERSION}",
        "title": "replog replication event",
        "description": f"One replication event, schema version {SCHEMA_VERSION}.",
        "type": "object",
        "properties": {c.name: _column(c) for c in COLUMNS},
        "required": [c.name for c in COLUMNS if c.required],
        "additionalProperties": False,
        "allOf": [_requires_rule(name) for name in EVENT_TYPES]
        + [_requires_rule(name, from_logs=True) for name, et in EVENT_TYPES.items() if et.log_requires is not None],
    }


def render() -> str:
    """The schema document as the text stored in `schemas/event.schema.json`."""
    return json.dumps(event_json_schema(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(render(), encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
