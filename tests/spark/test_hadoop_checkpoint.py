"""A whole checkpoint on a Hadoop file system: runs, crashes, resumes and the lease.

The file system is a real `viewfs://` mount table over a local directory (this machine
reaches no HDFS or S3), so Spark, hydrolite's own files (`ckfs`), the driver's versioned
store and the lease all go through Hadoop's FileSystem API exactly as for `hdfs://`. Each
resume uses a fresh runner whose driver-local working files are new, as on another machine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from examples import counter, kvstore
from hydrolite.cli import main
from hydrolite.planner.spark import ckfs, lease
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.lock import CheckpointLock, CheckpointLockedError, CheckpointPathError
from hydrolite.planner.spark.offsets import read_offset_log
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import NONE, Prim
from tests.spark.runs import run_once
from tests.spark.test_ckfs import viewfs_mount
from tests.spark.test_executor_state import EXPECTED, _feeds, _responses

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def _kv(spark: SparkSession, d: Path, ck: str, keyed_state: str, fault: Any = None) -> FlowRunner:
    runner = FlowRunner(
        kvstore.build(),
        spark=spark,
        checkpoint=ck,
        inputs=_feeds(d),
        outputs={"get_response": f"json:{d / 'out'}"},
        fault=fault,
        keyed_state=keyed_state,
    )
    return run_once(runner)


# the executor-state store's crash and resume runs on an S3 bucket (test_s3a_checkpoint.py)
@pytest.mark.parametrize(("keyed_state", "point"), [("driver", "after_sinks")])
def test_a_crash_resumes_from_the_hadoop_checkpoint_alone(
    spark: SparkSession, tmp_path: Path, keyed_state: str, point: str
) -> None:
    """A crash in batch 1, then a new runner: the driver's store is rebuilt from the files on
    the Hadoop file system, and the answers are those of a run without a crash."""
    disk = tmp_path / "disk"
    disk.mkdir()
    ck = viewfs_mount(spark, disk)
    fault = CrashOnce(point)
    with pytest.raises(Exception, match="crash at"):
        _kv(spark, tmp_path, ck, keyed_state, fault=fault)
    assert fault.fired == [1]
    _kv(spark, tmp_path, ck, keyed_state)
    assert _responses(tmp_path) == EXPECTED


def test_the_counter_resumes_from_a_hadoop_checkpoint_and_the_cli_reads_it(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The counter's count is driver state: a second runner on the same Hadoop checkpoint
    continues it, and the offset log reads back through the URI."""
    disk = tmp_path / "disk"
    disk.mkdir()
    ck = viewfs_mount(spark, disk)
    inc = FeedWriter(str(tmp_path / "inc"), NONE, Prim(str))
    qry = FeedWriter(str(tmp_path / "qry"), NONE, Prim(str))
    binds = {"increment": f"feed:{tmp_path}/inc", "query": f"feed:{tmp_path}/qry"}
    with FlowRunner(counter.build(), spark=spark, checkpoint=ck, inputs=binds) as run:
        run.start()
        inc.send_many([("a", None), ("b", None)])
        run.process_all_available()
        qry.send(("a", None))
        run.process_all_available()
        assert run.memory("query_response").values() == [("a", 2)]
    with FlowRunner(counter.build(), spark=spark, checkpoint=ck, inputs=binds) as run:
        assert run.resumed == {"tick0": 2}
        run.start()
        inc.send(("c", None))
        qry.send(("b", None))
        run.process_all_available()
        assert run.memory("query_response").values() == [("b", 3)]
    ticks = read_offset_log(ck)
    assert [(t.query, t.batch_id, t.committed) for t in ticks] == [("tick0", b, True) for b in range(3)]
    assert ticks[2].inputs == {"increment": ({"entries": 1}, {"entries": 2}), "query": ({"entries": 1}, {"entries": 2})}
    # the commands that read a checkpoint take the URI as `run` does (the session: the test's own)
    monkeypatch.setattr("hydrolite.planner.spark.session.spark_session", lambda *a, **k: spark)
    assert main(["offsets", ck]) == 0
    out = capsys.readouterr().out
    assert 'tick0 batch 2 [committed] increment: {"entries":1} -> {"entries":2}' in out
    assert main(["plan", str(ROOT / "examples" / "counter.py"), "--against", ck]) == 0
    assert main(["offsets", ck + "/elsewhere"]) == 1
    assert f"no offset log under {ck}/elsewhere" in capsys.readouterr().err
    assert os.listdir(tmp_path / "disk") and not any(n.endswith(":") for n in os.listdir(tmp_path))


# ---------------------------------------------------------------- the lease
def lease_on_disk(path: Path) -> dict[str, Any]:
    """The lease file as its holder last wrote it. Hadoop's local file system replaces a file by
    deleting it, then renaming the new one in (HDFS renames atomically), so a read can fall
    between the two: read again."""
    for _ in range(50):
        try:
            return dict(json.loads(path.read_text()))
        except (FileNotFoundError, ValueError):
            time.sleep(0.02)
    raise AssertionError(f"{path} stayed missing or torn")


@pytest.fixture
def quick_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    """Renew every 0.2 s and take a lease over after 1.5 s without a renewal."""
    monkeypatch.setattr(lease, "RENEW_SECONDS", 0.2)
    monkeypatch.setattr(lease, "STALE_SECONDS", 1.5)


def test_a_lease_refuses_a_second_runner_is_renewed_and_is_gone_after_release(
    spark: SparkSession, tmp_path: Path, quick_lease: None
) -> None:
    ck = viewfs_mount(spark, tmp_path)
    first = CheckpointLock(ck + "/")
    assert first.checkpoint == ck and (tmp_path / "LOCK").is_file()
    with pytest.raises(CheckpointLockedError) as err:  # a live process of this host: at once
        CheckpointLock(ck)
    assert f"pid {os.getpid()}" in str(err.value) and "in use by another runner" in str(err.value)
    time.sleep(1.0)
    assert lease_on_disk(tmp_path / "LOCK")["renewals"] >= 2
    first.release()
    assert not (tmp_path / "LOCK").exists()
    CheckpointLock(ck).release()


def test_a_lease_left_by_a_dead_process_of_this_host_is_taken_over_at_once(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ck = viewfs_mount(spark, tmp_path)
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(done.stdout)  # that process has exited
    left = f'{{"host": "{socket.gethostname()}", "pid": {dead}, "started": "then", "command": "x", "token": "t"}}'
    ckfs.write_atomic(ckfs.join(ck, "LOCK"), left)
    lock = CheckpointLock(ck)  # with the default 60 s staleness: no waiting here
    assert lock.previous is not None and lock.previous["pid"] == dead
    assert "taking over the lease" in capfd.readouterr().err
    assert lease_on_disk(tmp_path / "LOCK")["pid"] == os.getpid()
    lock.release()


def test_a_lease_of_another_host_is_taken_over_only_when_nobody_renews_it(
    spark: SparkSession, tmp_path: Path, quick_lease: None, capfd: pytest.CaptureFixture[str]
) -> None:
    ck = viewfs_mount(spark, tmp_path)
    other = {"host": "elsewhere.example", "pid": 1, "started": "then", "command": "hydrolite run", "token": "t"}

    def write(n: int) -> None:  # replaced atomically, as HDFS renames (Hadoop's local file system deletes first)
        (tmp_path / "LOCK.new").write_text(json.dumps(other | {"renewals": n}))
        os.replace(tmp_path / "LOCK.new", tmp_path / "LOCK")

    write(0)
    stop = threading.Event()

    def renew() -> None:  # the other host's runner, alive
        n = 0
        while not stop.wait(0.2):
            n += 1
            write(n)

    alive = threading.Thread(target=renew)
    alive.start()
    try:
        with pytest.raises(CheckpointLockedError, match="host elsewhere.example.*renewed its lease"):
            CheckpointLock(ck)
    finally:
        stop.set()
        alive.join()
    assert "watching it for up to 2 s" in capfd.readouterr().err
    start = time.monotonic()
    lock = CheckpointLock(ck)  # now nobody renews it: taken over after the staleness period
    assert time.monotonic() - start >= 1.5
    assert lock.previous is not None and lock.previous["host"] == "elsewhere.example"
    assert lease_on_disk(tmp_path / "LOCK")["token"] == lock.info["token"]
    lock.release()


def test_a_runner_whose_lease_was_taken_over_stops_before_its_next_batch(
    spark: SparkSession, tmp_path: Path, quick_lease: None
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    ck = viewfs_mount(spark, disk)
    runner = FlowRunner(kvstore.build(), spark=spark, checkpoint=ck, inputs=_feeds(tmp_path), keyed_state="driver")
    try:
        runner.start()
        runner.process_all_available()
        theirs = {"host": "elsewhere.example", "pid": 1, "started": "now", "command": "hydrolite run", "token": "x"}
        # another runner took it over and renews it (a renewal of ours in flight may overwrite
        # it once: lease.py's module docstring); ours must notice within a few renewals
        deadline = time.monotonic() + 20
        while runner.lock.lost is None and time.monotonic() < deadline:
            ckfs.write_atomic(ckfs.join(ck, "LOCK"), json.dumps(theirs))
            time.sleep(0.2)
        assert runner.lock.lost is not None
        with pytest.raises(SparkRunError, match="no longer holds checkpoint .*another runner took its lease"):
            runner.process_all_available()
    finally:
        runner.stop()
    assert lease_on_disk(disk / "LOCK")["token"] == "x"  # theirs is left alone


def test_the_root_of_a_file_system_is_refused(spark: SparkSession) -> None:
    with pytest.raises(CheckpointPathError, match="names the root of a file system"):
        CheckpointLock("viewfs://anything/")


def test_notebook_values_and_demo_inputs_run_under_a_uri_and_a_feed_writer_refuses_one(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The notebook's Python-value inputs and `run`'s demo inputs are written as feed entries
    under a Hadoop checkpoint (through Spark) and read from the runner's mirror; `FeedWriter`,
    which writes by local path, refuses a URI instead of making a directory named after the
    scheme."""
    from hydrolite import notebook

    monkeypatch.chdir(tmp_path)
    (tmp_path / "disk").mkdir()
    ck = viewfs_mount(spark, tmp_path / "disk")
    with pytest.raises(ValueError, match="a feed is a local directory") as err:
        FeedWriter(ck + "/inputs/x", NONE, Prim(str))
    assert "fix: give the feed a local directory" in str(err.value)
    handle = notebook.run(
        counter.build,
        {"increment": [[("a", None), ("b", None)], [("a", None)]], "query": [[("a", None)], [("a", None)]]},
        spark=spark,
        checkpoint=ck + "/nb",
    )
    handle.wait(idle_seconds=1.0)
    assert handle.status == "stopped" and handle.error is None
    assert sorted(handle.outputs("query_response")) == [("a", 2), ("a", 3)]  # the count of all increments
    entries = sorted(os.listdir(tmp_path / "disk" / "nb" / "notebook-inputs" / "increment"))
    assert [e for e in entries if not e.startswith(".")] == [f"{i:012d}.arrow" for i in range(2)]
    monkeypatch.setattr("hydrolite.planner.spark.session.spark_session", lambda *a, **k: spark)
    assert main(["run", str(ROOT / "examples" / "counter.py"), "--checkpoint", ck + "/cli", "--once"]) == 0
    out = capsys.readouterr().out
    assert "demo data for unbound ports: increment, query" in out
    assert (tmp_path / "disk" / "cli" / "demo-inputs" / "query").is_dir()
    assert not (tmp_path / "disk" / "cli" / "LOCK").exists()  # the lease it took was released
    assert not any(n.endswith(":") for n in os.listdir(tmp_path))
