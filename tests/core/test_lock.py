"""One writer per checkpoint: the lock with real processes (no Spark needed).

The Spark side (two runners on one checkpoint, outputs identical to one runner) is in
tests/spark/test_upgrade.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hydrolite.planner.spark.lock import CheckpointLock, CheckpointLockedError

HOLD = """
import sys, time
from hydrolite.planner.spark.lock import CheckpointLock
lock = CheckpointLock(sys.argv[1])
print("locked", flush=True)
time.sleep(120)
"""


def _holder(ck: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(ck)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_runner_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first = CheckpointLock(str(tmp_path))
    with pytest.raises(CheckpointLockedError) as info:
        CheckpointLock(str(tmp_path))
    msg = str(info.value)
    assert f"checkpoint {tmp_path} is in use by another runner" in msg
    assert f"host {socket.gethostname()}, pid {os.getpid()}, started " in msg
    assert "fix: stop that run first" in msg
    first.release()
    CheckpointLock(str(tmp_path)).release()  # free again


def test_a_live_holder_in_another_process_is_named_and_a_killed_one_is_taken_over(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(CheckpointLockedError, match=f"pid {proc.pid}, started "):
            CheckpointLock(str(tmp_path))
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # kill -9: no cleanup, the lock file keeps its content
        proc.wait()
    lock = CheckpointLock(str(tmp_path))  # the kernel dropped the flock with the process
    try:
        assert lock.previous is not None and lock.previous["pid"] == proc.pid
        assert (
            f"taking over the lock of a runner that stopped without releasing it (host {socket.gethostname()}, pid {proc.pid}"
            in capfd.readouterr().err
        )
    finally:
        lock.release()


def test_a_released_lock_is_taken_quietly(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    CheckpointLock(str(tmp_path)).release()
    lock = CheckpointLock(str(tmp_path))
    lock.release()
    assert "taking over" not in capfd.readouterr().err


def test_a_dropped_lock_object_releases(tmp_path: Path) -> None:
    lock = CheckpointLock(str(tmp_path))
    del lock
    start = time.monotonic()
    CheckpointLock(str(tmp_path)).release()
    assert time.monotonic() - start < 5


def test_a_checkpoint_is_a_path_a_file_uri_or_a_hadoop_uri_and_the_root_of_a_file_system_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hydrolite.planner.spark.lock import CheckpointPathError, checkpoint_dir

    monkeypatch.chdir(tmp_path)
    assert checkpoint_dir("ck") == str(tmp_path / "ck")
    assert checkpoint_dir(f"file://{tmp_path}/a%20b") == str(tmp_path / "a b")
    assert checkpoint_dir(f"file:{tmp_path}/c") == str(tmp_path / "c")
    assert checkpoint_dir("odd:name") == str(tmp_path / "odd:name")  # a colon without // is a file name
    lock = CheckpointLock(f"file://{tmp_path}/d")
    assert lock.checkpoint == str(tmp_path / "d") and os.path.isfile(tmp_path / "d" / "LOCK")
    lock.release()
    # a Hadoop URI stays a URI (Spark and ckfs open it), never a relative directory named hdfs:
    assert checkpoint_dir("hdfs://namenode:8020/ck/") == "hdfs://namenode:8020/ck"
    assert checkpoint_dir("s3a://bucket/runs/ck") == "s3a://bucket/runs/ck"
    for root in ("hdfs://namenode:8020/", "s3a://bucket", "hdfs:///"):
        with pytest.raises(CheckpointPathError, match="names the root of a file system") as err:
            checkpoint_dir(root)
        assert "fix: name a directory under it" in str(err.value)
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_offsets_takes_a_file_uri_as_its_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hydrolite.cli import main

    (tmp_path / "ck 1").mkdir()
    assert main(["offsets", f"file://{tmp_path}/ck%201"]) == 1
    assert f"no offset log under {tmp_path / 'ck 1'}" in capsys.readouterr().err
