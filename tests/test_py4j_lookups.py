"""The driver's py4j view remembers the JVM classes PySpark looks up per call (`jobs.py4j_lookups`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from py4j.java_gateway import GatewayClient, JavaMember, JVMView
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs import py4j_lookups
from jobs.py4j_lookups import HOT_CLASSES, StaticMethods, remember_hot_classes


@contextmanager
def py4j_commands(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Count the py4j commands sent inside the block by kind (their first two lines, e.g. "r/u")."""
    seen: Counter[str] = Counter()
    send = GatewayClient.send_command

    def counting(self: GatewayClient, command: str, *args: Any, **kwargs: Any) -> Any:
        seen["/".join(command.split("\n")[:2])] += 1
        return send(self, command, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(GatewayClient, "send_command", counting)
        yield seen


def test_hot_classes_are_the_classes_py4j_resolves(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    for name in HOT_CLASSES:
        kept = jvm.__dict__[name]
        assert isinstance(kept, StaticMethods), name
        # JVMView.__getattr__ is py4j's own lookup (what every access made before).
        assert kept._fqn == JVMView.__getattr__(jvm, name)._fqn, name
    assert jvm.functions._fqn == "org.apache.spark.sql.functions"


def test_building_columns_makes_no_lookup_round_trips(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    def build() -> None:
        df = spark.range(3).select(F.col("id"), F.lit(1).alias("one"))
        df.where(F.col("id") > 0).groupBy(F.col("one")).agg(F.sum("id"), F.max_by("id", "id"))

    build()  # every method used once: StaticMethods asks the JVM about it then
    with py4j_commands(monkeypatch) as seen:
        build()
    assert seen["r/u"] == 0 and seen["r/m"] == 0, seen  # class lookups, method lookups
    assert seen["c/z:org.apache.spark.sql.functions"] > 0, seen  # the calls themselves still go to the JVM

    # Without the kept classes, the same frames cost one class and one method lookup per function call.
    jvm = spark.sparkContext._jvm
    for name in HOT_CLASSES:
        monkeypatch.delitem(jvm.__dict__, name)
    with py4j_commands(monkeypatch) as seen:
        build()
    assert seen["r/u"] > 0 and seen["r/m"] > 0, seen


def test_static_methods_are_kept_and_fields_are_not(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    integer = StaticMethods("java.lang.Integer", jvm._gateway_client)
    assert integer.parseInt("42") == 42
    assert isinstance(integer.__dict__["parseInt"], JavaMember)
    assert integer.parseInt("-7") == -7  # the kept member serves later calls
    assert integer.MAX_VALUE == 2**31 - 1
    assert "MAX_VALUE" not in integer.__dict__


def test_a_name_the_jvm_lacks_is_left_to_py4j(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    jvm = spark.sparkContext._jvm
    monkeypatch.setattr(py4j_lookups, "HOT_CLASSES", ("functions", "org.example.NoSuchClass"))
    assert remember_hot_classes(jvm) == ["functions"]
    assert "org.example.NoSuchClass" not in jvm.__dict__
