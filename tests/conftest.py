"""Shared fixtures: the simulator's pytest plugin, and one SparkSession for the whole test
session (local mode, 2 shuffle partitions, no UI), created only when a test asks for it."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ["hydrolite.sim.pytest_plugin", "pytester"]

# Every driver JVM the tests start (this session's, and those of the CLI runs, notebook kernels
# and local-cluster applications they start as subprocesses, which inherit the environment)
# compiles with C1 only and collects with one thread: a test's JVM lives for seconds to a
# minute, and Spark's JIT and GC threads compete with it on small machines
# (tests/spark/test_cluster.py: 93 s instead of 111 s on 2 cores). Semantics do not change.
# Spark's launcher adds SPARK_SUBMIT_OPTS to the driver's command line.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def _compile_our_packages() -> None:
    """Write hydrolite's and the linter's bytecode once, before the workers start.

    Where the environment sets PYTHONDONTWRITEBYTECODE (as CI machines and containers often
    do), no Python process writes `__pycache__`, and every process the suite starts (xdist
    workers, CLI runs, notebook kernels, the import-order test's 130 fresh imports) compiles
    the ~30k lines it imports anew: ~0.5 s of CPU each. Reading bytecode is not affected by
    the setting; `compileall` writes it regardless, only for files whose bytecode is stale
    (tests/core/test_import_first.py: 30.7 s -> 15.8 s on an idle 2-core machine)."""
    import compileall

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for package in ("hydrolite", os.path.join("lint", "hydrolite_lint")):
        compileall.compile_dir(os.path.join(root, package), quiet=1)


if "PYTEST_XDIST_WORKER" not in os.environ:  # once, in the process that starts the workers
    _compile_our_packages()


def pytest_collection_finish(session: pytest.Session) -> None:
    """When Spark tests were selected, every JVM started from here on maps the classes of a
    class-data-sharing archive (tests/jvm_archive.py: halves a SparkSession's start)."""
    opts = os.environ["SPARK_SUBMIT_OPTS"]
    if "SharedArchiveFile" in opts or not any(item.get_closest_marker("spark") for item in session.items):
        return
    from jvm_archive import start  # tests/ is on sys.path (rootdir conftest)

    cache = getattr(session.config, "cache", None)
    if cache is None:  # `-p no:cacheprovider`: no place to keep the archive
        archive, why = None, "pytest's cache is turned off (-p no:cacheprovider)"
    else:
        archive, why = start(cache.mkdir("hydrolite-jvm"), opts)
    if archive is None:
        warnings.warn(f"Spark JVMs start without a class archive: {why}", pytest.PytestWarning, stacklevel=1)
        return
    os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} -XX:SharedArchiveFile={archive}"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from session_conf import INTERPRETED  # tests/ is on sys.path (rootdir conftest)

    from hydrolite.planner.spark.session import QUIET_LOG4J, spark_session

    jvm = f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}"  # the JIT and GC flags: SPARK_SUBMIT_OPTS above
    conf = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false", "spark.driver.extraJavaOptions": jvm}
    conf.update(INTERPRETED)
    session = spark_session("local[2]", conf, app_name="hydrolite-tests")
    yield session
    session.stop()


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadfile` handing out the longest test files first (tests/xdist_order.py)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist_order import LongestFileFirst  # tests/ is on sys.path (rootdir conftest)

    return LongestFileFirst(config, log)
