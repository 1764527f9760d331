"""The driver's state store (`state.py`) in a directory on a Hadoop file system
(`state_remote.py`): values, replays and delivered marks survive a new driver exactly as in
a local directory.

The Hadoop side is a real `viewfs://` mount of a local directory (as in test_ckfs.py): every
file goes through Hadoop's FileSystem and Spark's CheckpointFileManager over Py4J. A "crash"
is closing the store and opening a new one on the same directory: closing writes nothing
under the URI, it only drops the private local working copy, so the new store sees exactly
what a new driver machine would. Uncommitted writes of a batch live only in its BatchState.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from hydrolite.planner.spark import ckfs, state_remote
from hydrolite.planner.spark.state import StateStore, key_bytes
from tests.spark.test_ckfs import viewfs_mount

pytestmark = pytest.mark.spark


def _dirs(kind: str, disk: Path, spark: SparkSession) -> str:
    """The store's directory as hydrolite is given it; its files are under disk/state."""
    disk.mkdir(parents=True, exist_ok=True)
    if kind == "local":
        return str(disk / "state")
    return ckfs.join(viewfs_mount(spark, disk), "state")  # (a mount point itself takes no mkdirs)


@pytest.fixture(params=["local", "viewfs"])
def where(request: pytest.FixtureRequest, tmp_path: Path, spark: SparkSession) -> tuple[str, Path]:
    """(the store's directory, the local directory that holds its files)."""
    return _dirs(request.param, tmp_path / "ck", spark), tmp_path / "ck" / "state"


def _names(disk: Path, sub: str) -> list[str]:
    d = disk / sub
    return sorted(n for n in os.listdir(d) if not n.startswith(".")) if d.is_dir() else []


def _batches(disk: Path, sub: str) -> list[int]:
    return [int(n.split(".")[0]) for n in _names(disk, sub)]


def _run(
    store: StateStore, batch: int, puts: dict[Any, Any], deletes: tuple[Any, ...] = (), commit: bool = True
) -> None:
    """Batch `batch` writes the keyed state `kv` and the singleton `total`."""
    bs = store.begin(batch)
    bs.put_many("kv", puts)
    for k in deletes:
        bs.delete("kv", key_bytes(k))
    found, total = bs.get("total")
    bs.put("total", (total if found else 0) + sum(puts.values()))
    if commit:
        bs.commit()


def _view(store: StateStore, batch: int) -> tuple[Any, ...]:
    bs = store.begin(batch)
    return bs.get("total"), list(bs.scan("kv")), bs.get_many("kv", ["a", "b", "c", "zz"])


# ------------------------------------------------------------------ surviving a new driver


def test_values_survive_close_and_reopen_on_a_fresh_working_copy(where: tuple[str, Path]) -> None:
    directory, disk = where
    store = StateStore(directory)
    _run(store, 0, {"a": 1, "b": 2})
    _run(store, 1, {"b": 20, "c": 3}, deletes=("a",))
    _run(store, 3, {"c": 30})  # batch ids may skip (a batch without a tick commits nothing)
    expected = _view(store, 4)
    assert expected == ((True, 56), [("b", 20), ("c", 30)], {"b": 20, "c": 30})
    workdir = store._workdir
    store.close()
    again = StateStore(directory)
    assert _view(again, 4) == expected
    if directory.startswith("viewfs:"):
        assert workdir is not None and not os.path.exists(workdir)  # the old working copy is gone
        assert again._workdir is not None and again._workdir != workdir
        assert not (disk / "state.sqlite").exists()  # SQLite never runs on the URI
        assert _batches(disk, "changes") == [0, 1, 3] and _batches(disk, "snapshots") == []
    else:
        assert (disk / "state.sqlite").exists()
        assert not (disk / "changes").exists() and not (disk / "snapshots").exists()  # a local store is one file
    again.close()


def test_a_replay_after_a_crash_reads_as_of_before_the_batch_and_writes_the_same(where: tuple[str, Path]) -> None:
    directory, _disk = where
    store = StateStore(directory)
    _run(store, 0, {"a": 1})
    _run(store, 1, {"a": 2, "b": 5})
    before_2 = _view(store, 2)
    # crash inside batch 2 before its state was committed
    _run(store, 2, {"a": 100}, commit=False)
    store.close()
    store = StateStore(directory)
    assert _view(store, 2) == before_2
    # crash after batch 2 committed its state, before Spark committed the batch: replayed
    _run(store, 2, {"a": 3})
    after_2 = _view(store, 3)
    store.close()
    store = StateStore(directory)
    assert _view(store, 2) == before_2  # the replay of 2 reads as of before 2
    _run(store, 2, {"a": 3})  # and writes the same
    store.close()
    store = StateStore(directory)
    assert _view(store, 3) == after_2 == ((True, 11), [("a", 3), ("b", 5)], {"a": 3, "b": 5})
    store.close()


def test_delivered_marks_survive_and_are_dropped_by_an_earlier_begin_as_locally(where: tuple[str, Path]) -> None:
    directory, disk = where
    store = StateStore(directory)
    for b in range(3):
        _run(store, b, {"a": b})
        store.mark_delivered("out", b)
        store.mark_delivered("cb", b)
    store.close()
    store = StateStore(directory)
    assert all(store.delivered(s, b) for s in ("out", "cb") for b in range(3))
    store.begin(2)  # a replay of 2 keeps 2's marks (its callbacks ran: at most once)
    assert store.delivered("out", 2) and store.delivered("cb", 2)
    store.begin(1)  # (not what Spark does; as locally) marks after 1 are dropped
    assert store.delivered("out", 1) and not store.delivered("out", 2) and not store.delivered("cb", 2)
    if directory.startswith("viewfs:"):
        assert _batches(disk, "delivered") == [0, 1]
    store.close()
    store = StateStore(directory)
    assert store.delivered("cb", 1) and not store.delivered("cb", 2)
    store.close()


def test_delivered_marks_are_pruned_after_100_batches_as_locally(where: tuple[str, Path]) -> None:
    directory, _disk = where
    store = StateStore(directory, snapshot_every=1000)
    store.mark_delivered("cb", 0)
    store.mark_delivered("other", 1)
    store.mark_delivered("cb", 101)  # drops cb's mark of batch 0
    store.close()
    store = StateStore(directory)
    assert not store.delivered("cb", 0) and store.delivered("other", 1) and store.delivered("cb", 101)
    store.close()


# ------------------------------------------------------------------ snapshots


def test_snapshots_replace_change_files_and_reopening_applies_the_later_ones(
    tmp_path: Path, spark: SparkSession
) -> None:
    disk = tmp_path / "ck" / "state"
    directory = _dirs("viewfs", tmp_path / "ck", spark)
    store = StateStore(directory, snapshot_every=3)
    for b in range(2):
        _run(store, b, {"a": b, f"k{b}": b})
        store.mark_delivered("cb", b)
    assert _batches(disk, "changes") == [0, 1] and _batches(disk, "snapshots") == []
    _run(store, 2, {"a": 2})  # the third change file: a snapshot as batch 3 starts, covering 0..2
    assert _batches(disk, "snapshots") == [3] and _batches(disk, "changes") == []
    assert _batches(disk, "delivered") == []  # the snapshot holds the marks of 0 and 1
    store.mark_delivered("cb", 2)
    for b in range(3, 8):
        _run(store, b, {"a": b}, deletes=("k0",) if b == 4 else ())
        store.mark_delivered("cb", b)
    assert _batches(disk, "snapshots") == [6] and _batches(disk, "changes") == [6, 7]
    assert _batches(disk, "delivered") == [5, 6, 7]  # 5's mark came after snapshot 6
    expected = _view(store, 8)
    assert expected == ((True, 0 + 2 + 2 + 25), [("a", 7), ("k1", 1)], {"a": 7})
    store.close()
    store = StateStore(directory, snapshot_every=3)  # snapshot 6, then changes 6 and 7
    assert _view(store, 8) == expected
    assert all(store.delivered("cb", b) for b in range(8))
    store.close()


def test_a_replay_at_the_snapshot_batch_rolls_the_snapshot_back(tmp_path: Path, spark: SparkSession) -> None:
    disk = tmp_path / "ck" / "state"
    directory = _dirs("viewfs", tmp_path / "ck", spark)
    store = StateStore(directory, snapshot_every=3)
    for b in range(3):
        _run(store, b, {"a": b + 1, "b": 10 * b})
        store.mark_delivered("cb", b)
    assert _batches(disk, "snapshots") == [3]  # it holds batch 2's writes
    before_2 = ((True, 1 + 12), [("a", 2), ("b", 10)], {"a": 2, "b": 10})
    store.close()  # crash before Spark committed batch 2: it is replayed
    store = StateStore(directory, snapshot_every=3)
    assert _view(store, 2) == before_2
    # the rolled-back database became snapshot 2 (written first), snapshot 3 is gone
    assert _batches(disk, "snapshots") == [2] and _batches(disk, "changes") == []
    assert store.delivered("cb", 2) and store.delivered("cb", 1)
    store.close()  # a crash again, inside the replay, before its commit
    store = StateStore(directory, snapshot_every=3)
    assert _view(store, 2) == before_2
    _run(store, 2, {"a": 99})  # this time the batch writes something else
    after = _view(store, 3)
    assert after == ((True, 1 + 12 + 99), [("a", 99), ("b", 10)], {"a": 99, "b": 10})
    store.close()
    store = StateStore(directory, snapshot_every=3)
    assert _view(store, 3) == after and store.delivered("cb", 2)
    store.close()


def test_a_crash_between_the_rollback_snapshot_and_removing_the_newer_one(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = tmp_path / "ck" / "state"
    directory = _dirs("viewfs", tmp_path / "ck", spark)
    store = StateStore(directory, snapshot_every=2)
    _run(store, 0, {"a": 1})
    _run(store, 1, {"a": 2, "b": 1})  # snapshot 2; then a crash before Spark committed batch 1
    store.close()
    store = StateStore(directory, snapshot_every=2)

    def crash(*args: object) -> None:
        raise OSError("the driver died")

    monkeypatch.setattr(state_remote.RemoteFiles, "_remove", crash)
    with pytest.raises(OSError, match="the driver died"):
        store.begin(1)  # replay of 1, at or below snapshot 2
    monkeypatch.undo()
    assert _batches(disk, "snapshots") == [1, 2]
    store.close()
    store = StateStore(directory, snapshot_every=2)  # opens snapshot 2, as before the replay
    assert _view(store, 1) == ((True, 1), [("a", 1)], {"a": 1})
    assert _batches(disk, "snapshots") == [1]
    _run(store, 1, {"a": 2, "b": 1})
    store.close()
    store = StateStore(directory, snapshot_every=2)
    assert _view(store, 2) == ((True, 4), [("a", 2), ("b", 1)], {"a": 2, "b": 1})
    store.close()


# ------------------------------------------------------------------ blobs


def test_blob_directories_are_under_the_store_and_pruned_there(where: tuple[str, Path], spark: SparkSession) -> None:
    directory, disk = where
    store = StateStore(directory)
    for b in range(4):
        bs = store.begin(b)
        path = bs.blob_dir("defer:3")
        assert path.startswith(directory) and ckfs.is_local(path) == ckfs.is_local(directory)
        spark.range(b + 1).write.mode("overwrite").parquet(path)  # Spark writes it, as ops_state does
        bs.put_blob("defer:3", path)
        bs.commit()
    assert _names(disk / "blobs", "defer_3") == ["2", "3"]  # older than the previous batch: removed
    store.close()
    store = StateStore(directory)
    found = store.begin(4).get_blob("defer:3")
    assert found is not None and spark.read.parquet(found).count() == 4
    store.begin(4).commit()  # batches 4 and 5 ran no tick: no blob written
    store.begin(5).commit()
    bs = store.begin(6)
    path = bs.blob_dir("defer:3")
    spark.range(7).write.mode("overwrite").parquet(path)
    bs.put_blob("defer:3", path)
    bs.commit()
    # a replay of batch 6 reads the version before it, batch 3's: kept, only 2 removed
    assert _names(disk / "blobs", "defer_3") == ["3", "6"]
    replayed = store.begin(6).get_blob("defer:3")
    assert replayed is not None and spark.read.parquet(replayed).count() == 4
    # the version a replay reads, given by the caller (a checkpoint of an earlier version has
    # its operator's own record of it, not the blob record): kept too
    bs = store.begin(7)
    path = bs.blob_dir("defer:3")
    spark.range(8).write.mode("overwrite").parquet(path)
    bs.put_blob("defer:3", path, previous=replayed)
    bs.commit()
    assert _names(disk / "blobs", "defer_3") == ["3", "6", "7"]
    store.close()


# ------------------------------------------------------------------ the URI store answers as the local one


_KEYS = st.sampled_from(["a", "b", "c", "d"])
_STEP = st.fixed_dictionaries(
    {
        "gap": st.integers(1, 2),
        "puts": st.dictionaries(_KEYS, st.integers(-5, 5), max_size=3),
        "deletes": st.lists(_KEYS, max_size=2),
        "mark": st.booleans(),
        # "ok", or a crash before the state commit / after it (then the batch is replayed,
        # with other writes: a replay need not repeat them for the stores to agree)
        "fate": st.sampled_from(["ok", "ok", "ok", "before_commit", "after_commit"]),
        "replay_puts": st.dictionaries(_KEYS, st.integers(-5, 5), max_size=3),
    }
)


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,  # the same cases on every run (CI); widen with a local run of more examples
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(_STEP, min_size=1, max_size=5), every=st.integers(1, 3))
def test_the_uri_store_answers_every_read_as_the_local_store(
    tmp_path_factory: pytest.TempPathFactory, spark: SparkSession, steps: list[dict[str, Any]], every: int
) -> None:
    base = tmp_path_factory.mktemp("prop")
    dirs = {"local": _dirs("local", base / "local", spark), "viewfs": _dirs("viewfs", base / "remote", spark)}
    stores = {k: StateStore(d, snapshot_every=every) for k, d in dirs.items()}

    def reopen() -> None:
        for k, d in dirs.items():
            stores[k].close()
            stores[k] = StateStore(d, snapshot_every=every)

    def same(batch: int) -> None:
        views = {}
        for k, s in stores.items():
            bs = s.begin(batch)
            views[k] = (
                bs.get("total"),
                list(bs.scan("kv")),
                [bs.get("kv", key_bytes(key)) for key in "abcd"],
                [s.delivered(sink, b) for sink in ("x", "y") for b in range(batch + 1)],
            )
        assert views["viewfs"] == views["local"]

    def attempt(batch: int, puts: dict[str, int], deletes: list[str], mark: bool, commit: bool) -> None:
        for s in stores.values():
            _run(s, batch, puts, tuple(deletes), commit=commit)
            if commit and mark:
                s.mark_delivered("x" if batch % 2 else "y", batch)

    batch = -1
    try:
        for step in steps:
            batch += step["gap"]
            same(batch)
            if step["fate"] == "before_commit":
                attempt(batch, step["puts"], step["deletes"], step["mark"], commit=False)
                reopen()
                same(batch)
            elif step["fate"] == "after_commit":
                attempt(batch, step["puts"], step["deletes"], step["mark"], commit=True)
                reopen()
                same(batch)
            attempt(batch, step["replay_puts"] or step["puts"], step["deletes"], step["mark"], commit=True)
        same(batch + 1)
        reopen()
        same(batch + 1)
    finally:
        for s in stores.values():
            s.close()
