"""The JVM classes PySpark looks up on every call, remembered on the driver's py4j view.

Each `pyspark.sql.functions` call, and each column named by a string, asks the JVM over py4j for the
class `functions` (by its full name, or by its short name through the view's imported packages) and
then for the method, before it makes the call: three round trips where one would do. A short name costs
the JVM most (0.25 ms of CPU for `sc._jvm.functions` against 0.07 ms for the full name): py4j tries names
that are not classes before the one that is, and each miss is looked for in every jar on the classpath
(`ZipFile$Source.getEntryPos` under py4j's `TypeUtil.forName` in a JFR profile). Building the audit's
record-content scan once made 3,325 such class lookups and 3,324 method lookups (out of ~20 k round
trips); the profile put the class lookups at ~12 % of the JVM's samples on the thread that serves py4j.

`remember_hot_classes` asks py4j once for each class in `HOT_CLASSES` and sets the answer on the view,
where the view's `__getattr__` (the lookup) no longer runs; the class remembers its static methods the
same way (`StaticMethods`). Calls go to the same JVM methods as before.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView
from py4j.protocol import Py4JError

HOT_CLASSES: tuple[str, ...] = (
    "functions",  # pyspark.sql.classic.column: col(name), lit(value)
    "org.apache.spark.sql.functions",  # pyspark.sql.functions: every function
    "PythonUtils",  # pyspark.sql.classic.column._to_seq: every list of columns
    "PythonSQLUtils",  # pyspark.sql.functions: the helpers of a few functions
    "org.apache.spark.sql.classic.SparkSession",  # SparkSession.getActiveSession
)
"""Names PySpark reads from `SparkContext._jvm` per call (counted while building an audit scan)."""


class StaticMethods(JavaClass):
    """A py4j `JavaClass` that asks the JVM about each static method once and then reuses the answer.

    A `JavaMember` of a static method holds only its class name, its method name and the gateway
    client, so one instance serves every later call. Fields and nested classes are still asked for
    each time (their values can change)."""

    def __getattr__(self, name: str) -> Any:
        member = super().__getattr__(name)
        if isinstance(member, JavaMember):
            # In the instance dict, `name` is found before `__getattr__` is ever consulted again.
            self.__dict__[name] = member
        return member


def remember_hot_classes(jvm: JVMView) -> list[str]:
    """Resolve each of `HOT_CLASSES` once through py4j and keep it on `jvm` as `StaticMethods`; returns
    the names kept (a name that is not a class in this JVM is left to py4j as before)."""
    kept: list[str] = []
    for name in HOT_CLASSES:
        if isinstance(jvm.__dict__.get(name), StaticMethods):
            kept.append(name)
            continue
        try:
            found = getattr(jvm, name)
        except Py4JError:  # the JVM could not answer; an unknown name comes back as a package (below)
            continue
        if isinstance(found, JavaClass):
            # The class py4j answered, so the short names resolve exactly as its imports resolve them.
            setattr(jvm, name, StaticMethods(found._fqn, jvm._gateway_client))
            kept.append(name)
    return kept
