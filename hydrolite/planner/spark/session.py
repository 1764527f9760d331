"""The SparkSession hydrolite runs on: embedded `local[*]` by default, or a cluster / Spark Connect."""

from __future__ import annotations

import importlib.util
import os
import socket
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.cloudpickle import register_pickle_by_value
from pyspark.sql import SparkSession

from .jvm_view import remember_classes
from .worker_python import worker_python

DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "2g",
    # PySpark records the Python call stack of every Column it builds (for error contexts);
    # a tick body builds hundreds per batch, and hydrolite reports errors at the user's line itself
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
if hasattr(socket, "AF_UNIX"):
    # The JVM talks to its Python workers over a Unix domain socket instead of TCP on
    # localhost (Spark 4.1+; ignored before): every Python function of a tick runs once per
    # partition, and each run pays a few round trips (30 one-row partitions through
    # `mapInArrow`, one after another: ~1,600 ms over TCP, 725-815 ms over the socket;
    # benchmarks/bench_batch_overhead.py). Not on Windows (no AF_UNIX).
    DEFAULT_CONF["spark.python.unix.domain.socket.enabled"] = "true"


def quiet_python_warnings() -> None:
    """PySpark warns about pandas 3 on every Arrow function; hydrolite does not use pandas there."""
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)


QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")


def spark_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "hydrolite",
    *,
    verbose: bool = False,
) -> SparkSession:
    """Get or create the session: `local[*]` when `master` is None, `sc://...` for Spark Connect.

    Unless `verbose`, the driver JVM logs errors only (`log4j2-quiet.properties`): Spark's
    start-up warnings (native Hadoop library, loopback address) would drown hydrolite's own
    lines. A user's own `spark.driver.extraJavaOptions` is left as given.

    Spark's Python processes run this interpreter (`worker_python`: on a local master, unless
    `PYSPARK_PYTHON` says otherwise), importing the installed pyspark rather than SPARK_HOME's
    zip, which Python compiles anew at every start."""
    from . import feed

    remote = master is not None and master.startswith("sc://")
    quiet_python_warnings()
    builder = SparkSession.builder.appName(app_name)
    if remote:
        assert master is not None
        if importlib.util.find_spec("grpc") is None:  # pyspark would exit the process instead
            from .errors import SparkRunError

            raise SparkRunError(
                f"cannot connect to {master}: the Spark Connect client needs grpcio\n  fix: pip install 'pyspark[connect]'"
            )
        builder = builder.remote(master)
    else:
        builder = builder.master(master or "local[*]")
    quiet = {} if verbose else {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}"}
    for k, v in {**DEFAULT_CONF, **quiet, **(conf or {})}.items():
        builder = builder.config(k, v)
    python = None if remote else worker_python(master, conf or {})
    if python is None:
        spark = builder.getOrCreate()
    else:  # PySpark reads the workers' Python from the environment when the context starts
        os.environ["PYSPARK_PYTHON"] = python
        try:
            spark = builder.getOrCreate()
        finally:
            del os.environ["PYSPARK_PYTHON"]
    if not remote:
        spark.sparkContext.setLogLevel("ERROR")
        remember_classes(spark)  # PySpark names JVM classes on every DataFrame call (jvm_view.py)
    # pickled by value: Spark's Python processes for a feed (one per feed at each query start)
    # then rebuild the reader without importing hydrolite (0.12 s of each start; feed.py)
    register_pickle_by_value(feed)
    spark.dataSource.register(feed.FeedDataSource)
    return spark


STATE_STORE = "spark.sql.streaming.stateStore.providerClass"


@contextmanager
def query_conf(spark: SparkSession, key: str, value: str | None) -> Iterator[None]:
    """Set a SQL conf for the streaming queries started inside the block, and leave the
    session's own setting as it was: the user's other queries keep theirs.

    Spark copies the session's SQL conf into a query when the query is created (and records
    some, the state store provider among them, in its offset log for every restart).
    `value=None` changes nothing. hydrolite starts each stateful query with RocksDB:

    >>> from hydrolite.planner.spark.keyed_state import ROCKSDB
    >>> spark = spark_session("local[1]")  # doctest: +SKIP
    >>> with query_conf(spark, STATE_STORE, ROCKSDB):  # doctest: +SKIP
    ...     query = df.writeStream.foreachBatch(write).start()
    """
    if value is None:
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
