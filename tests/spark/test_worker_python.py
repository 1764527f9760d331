"""Spark's Python workers run the driver's interpreter and import the installed pyspark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": c, "type": "long", "nullable": True, "metadata": {}} for c in ("v", "_seq")]}
)


def _where() -> tuple[str, str, list[str]]:
    import pyspark

    archives = [p for p in sys.path if p.endswith((".zip", ".jar")) and os.path.isfile(p)]
    return sys.executable, pyspark.__file__ or "", archives


def test_workers_run_this_interpreter_and_the_compiled_pyspark(spark: SparkSession) -> None:
    """The session (tests/conftest.py, through `spark_session`) starts its workers with the
    launcher of `worker_python`: the same interpreter, and pyspark from the installation
    rather than from SPARK_HOME's zip (which Python compiles again at every start), and
    without Spark's zips and jar on the path (read again before every function Spark runs)."""
    import pyspark
    from pyspark.cloudpickle import register_pickle_by_value

    register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests/ modules
    (python, module, archives), *_ = spark.sparkContext.parallelize([0], 1).map(lambda _: _where()).collect()
    assert os.path.realpath(python) == os.path.realpath(sys.executable)
    assert archives == [], archives
    assert ".zip" not in module, module
    assert os.path.dirname(module) == os.path.dirname(pyspark.__file__ or "")


def _transport() -> str:
    return os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED", "false").lower()


def test_workers_talk_to_the_jvm_over_a_unix_domain_socket(spark: SparkSession) -> None:
    """`spark_session` turns Spark's Unix domain socket on: each run of a Python function
    (once per partition of a tick's batch) costs fewer round trip delays than over TCP
    (benchmarks/bench_batch_overhead.py)."""
    from pyspark.cloudpickle import register_pickle_by_value

    register_pickle_by_value(sys.modules[__name__])
    assert spark.conf.get("spark.python.unix.domain.socket.enabled") == "true"
    assert spark.sparkContext.parallelize([0, 1], 2).map(lambda _: _transport()).collect() == ["true", "true"]


def test_a_feeds_reader_process_does_not_import_hydrolite(spark: SparkSession, tmp_path: Path) -> None:
    """Spark starts a Python process per feed at every query start; the session pickles the
    feed's data source by value, so that process rebuilds it without importing hydrolite."""
    from pyspark.cloudpickle import dumps

    from hydrolite.planner.spark.feed import FeedDataSource, FeedWriter
    from hydrolite.planner.spark.types import from_python

    FeedWriter(str(tmp_path / "in"), from_python(int)).send_many([1, 2])
    (tmp_path / "source.pkl").write_bytes(dumps(FeedDataSource))
    probe = f"""
import pickle, sys
class NoHydrolite:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "hydrolite":
            raise ImportError("hydrolite imported by " + name)
sys.meta_path.insert(0, NoHydrolite())
cls = pickle.loads(open({str(tmp_path / "source.pkl")!r}, "rb").read())
source = cls({{"path": {str(tmp_path / "in")!r}, "schema": {SCHEMA!r}}})
reader = source.streamReader(source.schema())
print(reader.latestOffset({{"entries": 0}}, None))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{'entries': 1}"


class _ParentProbe:
    """A Python streaming source whose offsets are asked for in the process Spark starts per
    source at every query start: it notes that process's parent (pickled by value)."""

    @staticmethod
    def source() -> type:
        from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

        class Reader(DataSourceStreamReader):
            def __init__(self, out: str) -> None:
                self.out = out

            def initialOffset(self) -> dict[str, int]:
                parent = os.getppid()
                with open(f"/proc/{parent}/cmdline", "rb") as fh:
                    cmd = fh.read().decode().split("\0")
                with open(self.out, "a") as fh:
                    fh.write(json.dumps({"parent": parent, "cmd": cmd}) + "\n")
                return {"n": 0}

            def latestOffset(self) -> dict[str, int]:
                return {"n": 1}

            def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
                return [InputPartition(0)] if start != end else []

            def read(self, partition: InputPartition) -> Any:
                yield (1,)

        class Source(DataSource):
            @classmethod
            def name(cls) -> str:
                return "hl_parent_probe"

            def schema(self) -> str:
                return "v long"

            def streamReader(self, schema: Any) -> DataSourceStreamReader:
                return Reader(self.options["out"])

        return Source


def test_query_start_processes_are_forked_by_the_jvms_fork_server(spark: SparkSession, tmp_path: Path) -> None:
    """Once the session's JVM has a fork server (hydrolite/planner/spark/forkserver.py: its
    first such process starts it), a query start's source process is a child of that server,
    not a fresh interpreter; its query runs as before."""
    import time

    from pyspark.cloudpickle import register_pickle_by_value

    from hydrolite.planner.spark.worker_python import _private_dir

    register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(_ParentProbe.source())
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
    out = tmp_path / "parents.jsonl"

    def run(name: str) -> dict[str, Any]:
        df = spark.readStream.format("hl_parent_probe").option("out", str(out)).load()
        q = df.writeStream.format("memory").queryName(name).start()
        q.processAllAvailable()
        q.stop()
        assert spark.table(name).collect() == [(1,)]
        return dict(json.loads(out.read_text().splitlines()[-1]))

    run("hl_parent_probe_first")
    deadline = time.monotonic() + 60
    while not list(Path(_private_dir()).glob(f"fs-{jvm}-*.sock")):
        assert time.monotonic() < deadline, "no fork server started for this session's JVM"
        time.sleep(0.1)
    seen = run("hl_parent_probe_second")
    assert "hydrolite.planner.spark.forkserver" in seen["cmd"] and str(jvm) in seen["cmd"], seen
