"""The driver's view of the JVM, remembering the classes it has looked up.

PySpark names JVM classes through Py4J's `JVMView` on every DataFrame call:
`sc._jvm.PythonUtils` for each list of columns, `functions` for each `col`/`lit`,
`PythonSQLUtils` for each Arrow batch, `org.apache.spark.sql.functions` for each built-in
function. Py4J answers each with a round trip, and the JVM resolves a short name by trying
it in every imported package in turn: each miss searches all of pyspark's ~280 jars
(`Class.forName` on the Py4J thread, 0.2-0.8 ms per lookup on an idle 2-core machine; a
Java Flight Recorder profile of a 48-batch test run found ~7% of the JVM's samples there).
A tick body builds hundreds of columns per batch.

`remember_classes(spark)` makes the session's `JVMView` keep every *class* it found under the
name it was asked for, so the next lookup of that name is an attribute read in Python.
Packages and misses are not kept (a package is a prefix, not an answer; a miss may be a class
that a later `java_import` or jar brings). A class never changes in a running JVM; what
could change the answer for a short name is a `java_import` that shadows it, which PySpark
does only when the gateway starts.

    >>> from hydrolite.planner.spark.session import spark_session
    >>> spark = spark_session("local[1]")  # doctest: +SKIP
    >>> remember_classes(spark)  # doctest: +SKIP
    >>> spark.sparkContext._jvm.PythonUtils is spark.sparkContext._jvm.PythonUtils  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JVMView
from pyspark.sql import SparkSession


class RememberingJVMView(JVMView):
    """A `JVMView` that keeps each class it looked up as an attribute of itself."""

    def __getattr__(self, name: str) -> Any:
        found = super().__getattr__(name)
        if isinstance(found, JavaClass):
            self.__dict__[name] = found  # found by ordinary attribute lookup from now on
        return found


def remember_classes(spark: SparkSession) -> None:
    """Let the driver's `JVMView` keep the classes it looks up (idempotent). Spark Connect has
    no JVM on the client: nothing to do there."""
    jvm = getattr(spark, "_jvm", None)  # the context's view; a Connect session has none
    if type(jvm) is JVMView:  # a subclass of the user's own is left alone
        jvm.__class__ = RememberingJVMView
