"""hydrolite's checkpoint files (`ckfs`) behave the same on a local directory and on a Hadoop
file system.

The Hadoop side is real: a `viewfs://` mount table over a local directory, set in the test
session's Hadoop configuration, so every call goes through Hadoop's FileSystem and Spark's
CheckpointFileManager over Py4J exactly as it would for `hdfs://` or `s3a://` (this machine
reaches no HDFS or S3). Each case runs on both and checks the bytes on disk too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hydrolite.planner.spark import ckfs

pytestmark = pytest.mark.spark


def viewfs_mount(spark: SparkSession, target: Path) -> str:
    """A fresh `viewfs://` mount table whose `/ck` is `target`; the URI of `/ck`."""
    table = f"hl{uuid.uuid4().hex[:10]}"  # one per test: Hadoop caches a file system per authority
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    conf.set(f"fs.viewfs.mounttable.{table}.link./ck", target.as_uri())
    return f"viewfs://{table}/ck"


@pytest.fixture(params=["local", "viewfs"])
def root(request: pytest.FixtureRequest, tmp_path: Path, spark: SparkSession) -> Iterator[tuple[str, Path]]:
    """(the checkpoint as hydrolite is given it, the local directory that holds its files)."""
    disk = tmp_path / "ck"
    disk.mkdir()
    yield (str(disk) if request.param == "local" else viewfs_mount(spark, disk)), disk


def test_a_missing_file_reads_as_none_and_a_missing_directory_lists_empty(root: tuple[str, Path]) -> None:
    ck, _disk = root
    assert ckfs.read_bytes(ckfs.join(ck, "nope.json")) is None
    assert ckfs.read_text(ckfs.join(ck, "q", "nope.json")) is None
    assert ckfs.list_names(ckfs.join(ck, "nope")) == []
    assert not ckfs.exists(ckfs.join(ck, "nope")) and not ckfs.is_dir(ckfs.join(ck, "nope"))


def test_a_write_creates_its_directories_and_replaces_a_file_whole(root: tuple[str, Path]) -> None:
    ck, disk = root
    path = ckfs.join(ck, "q1", "sub", "plan.json")
    assert ckfs.write_atomic(path, '{"v": 1}')
    assert ckfs.write_atomic(path, '{"v": 2, "more": "text"}')
    assert ckfs.read_text(path) == '{"v": 2, "more": "text"}'
    assert (disk / "q1" / "sub" / "plan.json").read_text() == '{"v": 2, "more": "text"}'
    assert ckfs.is_dir(ckfs.join(ck, "q1")) and not ckfs.is_dir(path) and ckfs.exists(path)
    # no temporary or checksum file shows up as an entry
    assert ckfs.list_names(ckfs.join(ck, "q1", "sub")) == ["plan.json"]


def test_without_overwrite_the_first_writer_wins(root: tuple[str, Path]) -> None:
    ck, disk = root
    path = ckfs.join(ck, "q", "sink-identity.json")
    assert ckfs.write_atomic(path, b"first", overwrite=False)
    assert not ckfs.write_atomic(path, b"second", overwrite=False)
    assert ckfs.read_bytes(path) == b"first" and (disk / "q" / "sink-identity.json").read_bytes() == b"first"


def test_racing_exclusive_writers_leave_exactly_one_winner(root: tuple[str, Path]) -> None:
    ck, _disk = root
    path = ckfs.join(ck, "race", "id.json")
    ckfs.makedirs(ckfs.join(ck, "race"))
    wins: list[bytes] = []

    def write(data: bytes) -> None:
        if ckfs.write_atomic(path, data, overwrite=False):
            wins.append(data)

    threads = [threading.Thread(target=write, args=(f"w{i}".encode(),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and ckfs.read_bytes(path) == wins[0]


def test_listing_removing_and_binary_content(root: tuple[str, Path]) -> None:
    ck, disk = root
    blob = bytes(range(256)) * 3
    for name in ("b", "a", "10"):
        ckfs.write_atomic(ckfs.join(ck, "d", name), blob)
    ckfs.makedirs(ckfs.join(ck, "d", "sub"))
    assert ckfs.list_names(ckfs.join(ck, "d")) == ["10", "a", "b", "sub"]
    assert ckfs.read_bytes(ckfs.join(ck, "d", "a")) == blob
    ckfs.remove(ckfs.join(ck, "d", "a"))
    ckfs.remove(ckfs.join(ck, "d", "a"))  # already gone: fine
    assert ckfs.list_names(ckfs.join(ck, "d")) == ["10", "b", "sub"]
    # on disk, beside Hadoop's hidden checksum files
    assert sorted(n for n in os.listdir(disk / "d") if not n.startswith(".")) == ["10", "b", "sub"]


def test_local_paths_need_no_jvm_and_a_uri_without_a_session_is_refused_with_the_fix(tmp_path: Path) -> None:
    assert ckfs.is_local(str(tmp_path)) and ckfs.is_local(tmp_path.as_uri())
    assert not ckfs.is_local("s3a://bucket/ck") and not ckfs.is_local("viewfs://t/ck")
    assert ckfs.os_path(Path(tmp_path, "a b").as_uri()) == str(tmp_path / "a b")
    # a process with no SparkSession: local files work, a URI names what to do
    code = (
        "from hydrolite.planner.spark import ckfs\n"
        f"ckfs.write_atomic({str(tmp_path / 'x')!r}, b'1'); assert ckfs.read_bytes({str(tmp_path / 'x')!r}) == b'1'\n"
        "ckfs.read_bytes('hdfs://nn/ck/plan.json')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "hdfs://nn/ck/plan.json is on a Hadoop file system" in done.stderr and "start a SparkSession" in done.stderr


# ------------------------------------------------------------------ added for the control files


def test_is_file_tells_a_file_from_a_directory_and_a_missing_path(root: tuple[str, Path]) -> None:
    ck, disk = root
    ckfs.write_atomic(ckfs.join(ck, "q", "hydrolite.json"), b"{}")
    (disk / "d" / "hydrolite.json").mkdir(parents=True)  # a directory by a file's name
    assert ckfs.is_file(ckfs.join(ck, "q", "hydrolite.json"))
    assert not ckfs.is_file(ckfs.join(ck, "q")) and not ckfs.is_file(ckfs.join(ck, "d", "hydrolite.json"))
    assert not ckfs.is_file(ckfs.join(ck, "nope", "hydrolite.json"))


def test_absolute_makes_a_plain_path_absolute_and_keeps_a_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert ckfs.absolute("ck") == str(tmp_path / "ck") == ckfs.absolute(str(tmp_path / "x" / ".." / "ck"))
    for uri in ("hdfs://nn/ck", "s3a://bucket/ck/", "viewfs://t/ck", "file:///tmp/ck"):
        assert ckfs.absolute(uri) == uri


# ------------------------------------------------------------------ added for the remap log: append
def test_append_extends_a_local_file_and_a_uri_is_refused_untouched(root: tuple[str, Path]) -> None:
    ck, disk = root
    path = ckfs.join(ck, "log.jsonl")
    if not ckfs.is_local(ck):
        with pytest.raises(ValueError, match="has no append"):
            ckfs.append(path, "a\n")
        assert not ckfs.exists(path) and list(disk.iterdir()) == []
        return
    ckfs.append(path, "a\n")  # created
    ckfs.append(path, b"b\n")
    assert ckfs.read_text(path) == "a\nb\n" and (disk / "log.jsonl").read_bytes() == b"a\nb\n"
    with pytest.raises(FileNotFoundError):  # its directory is not created
        ckfs.append(ckfs.join(ck, "nope", "log.jsonl"), "a\n")


# ------------------------------------------------------------------ upload_atomic / download
# (added with the state store's snapshots on a Hadoop file system, state_remote.py)


def test_upload_and_download_move_a_file_larger_than_a_chunk_whole(
    root: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ck, disk = root
    monkeypatch.setattr(ckfs, "_CHUNK", 1000)  # many chunks, and a last short one
    data = os.urandom(4321)
    (tmp_path / "src.bin").write_bytes(data)
    path = ckfs.join(ck, "snap", "db.sqlite")
    ckfs.upload_atomic(str(tmp_path / "src.bin"), path)
    assert (disk / "snap" / "db.sqlite").read_bytes() == data
    assert ckfs.download(path, str(tmp_path / "back.bin")) and (tmp_path / "back.bin").read_bytes() == data
    (tmp_path / "src2.bin").write_bytes(b"replaced")
    ckfs.upload_atomic(str(tmp_path / "src2.bin"), path)  # replaces an existing file
    assert ckfs.read_bytes(path) == b"replaced"
    assert ckfs.list_names(ckfs.join(ck, "snap")) == ["db.sqlite"]  # no temporary left beside it
    (tmp_path / "empty.bin").write_bytes(b"")
    ckfs.upload_atomic(str(tmp_path / "empty.bin"), path)
    assert ckfs.download(path, str(tmp_path / "e.bin")) and (tmp_path / "e.bin").read_bytes() == b""


def test_download_of_a_missing_file_is_false_and_writes_nothing(root: tuple[str, Path], tmp_path: Path) -> None:
    ck, _disk = root
    assert not ckfs.download(ckfs.join(ck, "nope.sqlite"), str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()


def test_a_failed_upload_leaves_the_old_file(root: tuple[str, Path], tmp_path: Path) -> None:
    ck, _disk = root
    path = ckfs.join(ck, "d", "db.sqlite")  # (a viewfs mount point itself takes no mkdirs)
    ckfs.write_atomic(path, b"old")
    with pytest.raises(FileNotFoundError):
        ckfs.upload_atomic(str(tmp_path / "missing-source"), path)
    assert ckfs.read_bytes(path) == b"old" and ckfs.list_names(ckfs.join(ck, "d")) == ["db.sqlite"]


# ------------------------------------------------------------------ the checkpoint file manager of a query


def test_a_query_on_the_local_disk_logs_through_the_file_system_manager(tmp_path: Path, spark: SparkSession) -> None:
    """Spark's own offset and commit logs: the FileSystem-based manager on the local disk (its
    rename is the OS's atomic one), Spark's default elsewhere or where the user chose one."""
    from examples import counter
    from hydrolite.planner.spark.harness import SparkHarness

    fast = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
    assert ckfs.query_manager(spark, str(tmp_path)) == fast
    assert ckfs.query_manager(spark, tmp_path.as_uri()) == fast
    assert ckfs.query_manager(spark, viewfs_mount(spark, tmp_path)) is None
    spark.conf.set(ckfs.MANAGER_CONF, fast)  # the user's own choice is kept as it is
    try:
        assert ckfs.query_manager(spark, str(tmp_path)) is None
    finally:
        spark.conf.unset(ckfs.MANAGER_CONF)

    def used(checkpoint: str) -> str:
        h = SparkHarness(counter.build, spark, str(tmp_path / uuid.uuid4().hex), checkpoint=checkpoint)
        h.sender("increment").send(("a", None))
        h.step()
        try:
            (stage,) = h.runner.stages
            assert stage.query is not None
            log = stage.query._jsq.streamingQuery().offsetLog()  # Spark's offset log, as the query writes it
            return str(log.fileManager().getClass().getName())
        finally:
            h.runner.stop()

    assert used(str(tmp_path / "local-ck")) == fast
    (tmp_path / "vfs").mkdir()
    assert used(viewfs_mount(spark, tmp_path / "vfs")).endswith(".FileContextBasedCheckpointFileManager")
    assert spark.conf.get(ckfs.MANAGER_CONF, None) is None  # the session's own conf is left as it was


def test_a_checkpoint_continues_across_a_change_of_manager(tmp_path: Path, spark: SparkSession) -> None:
    """A checkpoint written by Spark's default manager (every earlier hydrolite) resumes under
    the FileSystem-based one and back again: logs, keyed state on the executors, answers."""
    from examples import kvstore
    from hydrolite.planner.spark.harness import SparkHarness

    default = "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
    got = []
    for run, manager in enumerate([default, None, default]):
        if manager is not None:
            spark.conf.set(ckfs.MANAGER_CONF, manager)
        try:
            h = SparkHarness(kvstore.build, spark, str(tmp_path / "in"), checkpoint=str(tmp_path / "ck"))
            h.sender("put").send(("c", f"k{run}", run))
            h.step()
            h.sender("get").send_many([("c", f"k{k}") for k in range(run + 2)])  # the earlier runs' keys too
            h.step()
            (stage,) = h.runner.stages
            assert stage.query is not None
            used = stage.query._jsq.streamingQuery().offsetLog().fileManager().getClass().getName()
            assert str(used).endswith(
                "FileContextBasedCheckpointFileManager" if manager else "FileSystemBasedCheckpointFileManager"
            )
            got += h.receiver("get_response").collect()
            h.runner.stop()
        finally:
            spark.conf.unset(ckfs.MANAGER_CONF)
    # each run reads every earlier run's value (the state came through), and no element twice
    assert got == [("c", f"k{k}", k if k <= run else None) for run in range(3) for k in range(run + 2)]
