"""The session's JVM view keeps the classes it looked up (hydrolite/planner/spark/jvm_view.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from py4j.java_gateway import JavaClass, JavaPackage
from pyspark.sql import SparkSession

from hydrolite.planner.spark.jvm_view import RememberingJVMView, remember_classes

pytestmark = pytest.mark.spark


@contextmanager
def lookups_of(jvm: Any, name: str) -> Iterator[list[str]]:
    """The Py4J commands sent while the block runs that name `name` (other threads' commands,
    e.g. a listener's, are not counted)."""
    client = jvm._gateway_client
    sent: list[str] = []
    real = client.send_command

    def counting(command: str, *args: Any, **kwargs: Any) -> Any:
        if name in command:
            sent.append(command)
        return real(command, *args, **kwargs)

    client.send_command = counting
    try:
        yield sent
    finally:
        del client.send_command  # the class's method again


def test_a_class_is_looked_up_in_the_jvm_once(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert type(jvm) is RememberingJVMView  # spark_session() made the test session
    name = "java.util.StringJoiner"  # named by nothing else in the suite
    with lookups_of(jvm, name) as first:
        found = getattr(jvm, name)
    with lookups_of(jvm, name) as again:
        assert getattr(jvm, name) is found
    assert isinstance(found, JavaClass) and len(first) == 1 and again == []
    joined = found(",").add("a").add("b")  # still a live class: constructed in the JVM
    assert joined.toString() == "a,b"
    with lookups_of(jvm, "PythonUtils") as short:  # a short name through PySpark's imports
        assert jvm.PythonUtils is jvm.PythonUtils
    assert len(short) <= 1


def test_packages_and_names_of_no_class_are_asked_every_time(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    with lookups_of(jvm, "java.util.concurrent") as sent:
        assert isinstance(getattr(jvm, "java.util.concurrent"), JavaPackage)
        assert isinstance(getattr(jvm, "java.util.concurrent"), JavaPackage)
    assert len(sent) == 2 and "java.util.concurrent" not in vars(jvm)
    missing = "org.example.hydrolite.NotAClass"  # Py4J answers a name that is no class as a package
    with lookups_of(jvm, missing) as asked:  # a jar added later may bring it: never remembered
        assert isinstance(getattr(jvm, missing), JavaPackage)
        assert isinstance(getattr(jvm, missing), JavaPackage)
    assert len(asked) == 2
    assert missing not in vars(jvm)


def test_remembering_again_changes_nothing(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    kept = dict(vars(jvm))
    remember_classes(spark)
    assert type(jvm) is RememberingJVMView and dict(vars(jvm)) == kept
    s = spark.range(3).selectExpr("id * 2 AS v")
    assert [r.v for r in s.collect()] == [0, 2, 4]
