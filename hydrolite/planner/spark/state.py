"""State across micro-batches, versioned by batch id (one SQLite file per query).

Why SQLite under the checkpoint directory rather than Spark's own state store: a tick's
body runs inside `foreachBatch` on batch DataFrames, where Spark's stateful operators do
not exist; what the body needs is "the value of this fold / these keys as of the end of
the previous batch", read and written by the driver in the same step that writes the
outputs. SQLite gives exactly that with a transaction per batch and an index on
(operator, key, version):

* batch `b` reads, for each key it touches, the newest version `< b` and writes version
  `b`; a replay of `b` (after a crash anywhere inside it) first drops versions `>= b`, so it
  reads the same inputs and produces the same outputs: replays are exact;
* per-batch work is proportional to the keys the batch touches (indexed point reads and
  writes), never to the history; after writing version `b` of a key, versions older than
  its previous one are deleted, so each key keeps at most two versions;
* values are pickled Python values (the same objects the user's functions see).

Where it lives: in a local directory, the SQLite file is the store (WAL, one transaction per
batch; nothing else is written). In a directory on a Hadoop file system (`hdfs://`, `s3a://`,
`viewfs://` ..., via `ckfs`), SQLite runs on a private local copy (removed on `close`) and
durability comes from files under the URI, as in Spark's HDFS-backed state store: each batch's
writes as one change file written before `commit` returns, each delivered mark before
`mark_delivered` returns, and every `snapshot_every` batches a snapshot of the whole database
after which the change files it covers are removed; opening loads the newest snapshot and
applies the later change files (`state_remote.py` has the layout and the ordering
guarantees). Opening such a store on a new driver costs reading one snapshot and up to
`snapshot_every` change files.

Limitation: the state is read and written by the driver (whatever file system holds it);
keyed state therefore has to fit through the driver per batch.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

from . import ckfs
from .grouping import GROUPING, group_bytes, stored_form
from .scratch import scratch_dir
from .state_remote import RemoteFiles, Writes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS state (
    node TEXT NOT NULL, key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB,
    PRIMARY KEY (node, key, version)
);
CREATE TABLE IF NOT EXISTS delivered (sink TEXT NOT NULL, batch INTEGER NOT NULL, PRIMARY KEY (sink, batch));
"""

_MISSING = object()
#: the node beside a by-value state that maps `group_bytes(key)` to the bytes its entry is kept under
_FORMS = "\x00forms"
#: (in that node: the index covers every key of the state, under this grouping's bytes; an index
#: of an earlier grouping is rebuilt from the entries on first use)
_INDEXED = f"__indexed__ {GROUPING}".encode()


def key_bytes(key: Any) -> bytes:
    """The stored form of a state key (equal keys of the same type pickle identically: 0.0
    and -0.0 too, `grouping.stored_form`)."""
    return pickle.dumps(stored_form(key), protocol=5)


class StateStore:
    """The versioned state of one query, in a local directory or under a Hadoop file system
    URI (then `snapshot_every` batches' change files are kept between snapshots)."""

    def __init__(self, directory: str, snapshot_every: int = 50) -> None:
        self._lock = threading.Lock()
        self._remote: RemoteFiles | None = None
        self._workdir: str | None = None
        if ckfs.is_local(directory):
            self.directory = ckfs.os_path(directory)
            os.makedirs(self.directory, exist_ok=True)
            self._db = _connect(os.path.join(self.directory, "state.sqlite"), "NORMAL")
            return
        self.directory = directory
        self._workdir = scratch_dir("state")  # a killed driver's is removed by the next one here
        try:
            self._remote = RemoteFiles(directory, snapshot_every)
            db_file = os.path.join(self._workdir, "state.sqlite")
            self._remote.download_snapshot(db_file)
            self._db = _connect(db_file, "OFF")  # a working copy: the files under the URI are durable
            try:
                self._load_remote(self._remote)
            except BaseException:
                self._db.close()
                raise
        except BaseException:
            shutil.rmtree(self._workdir)
            raise

    def _load_remote(self, remote: RemoteFiles) -> None:
        """Bring the downloaded snapshot up to date: the later change files in batch order,
        then every delivered mark in batch order (with the SQL of `_commit` and
        `mark_delivered`, so pruning is the same)."""
        db = self._db
        db.execute("BEGIN")
        try:
            remote.snapshot_delivered_max = _delivered_max(db)
            for batch, writes in remote.changes_to_apply():
                _apply_writes(db, batch, writes)
            for batch, sinks in remote.delivered_marks():
                for sink in sinks:
                    _apply_mark(db, sink, batch)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def begin(self, batch_id: int) -> BatchState:
        """Start batch `batch_id`: forget anything a failed attempt of it (or later) wrote."""
        with self._lock:
            self._db.execute("DELETE FROM state WHERE version >= ?", (batch_id,))
            self._db.execute("DELETE FROM delivered WHERE batch > ?", (batch_id,))
            if self._remote is not None:
                self._remote.roll_back(batch_id, self._copy_db)
        return BatchState(self, batch_id)

    def blob_dir(self, node: str, batch_id: int) -> str:
        """A directory for bulk state of `node` at `batch_id` (deferred streams); a URI under
        the store's directory when that is one (Spark writes and reads it)."""
        if self._remote is not None:
            return ckfs.join(self.directory, "blobs", node.replace(":", "_"), str(batch_id))
        return os.path.join(self.directory, "blobs", node.replace(":", "_"), str(batch_id))

    def close(self) -> None:
        with self._lock:
            self._db.close()
            if self._workdir is not None:
                shutil.rmtree(self._workdir)
                self._workdir = None

    def _copy_db(self, target: str) -> int:
        """A consistent copy of the database in the new file `target` (called with the lock
        held, outside a transaction); its newest delivered batch."""
        self._db.execute("VACUUM INTO ?", (target,))
        return _delivered_max(self._db)

    # ------------------------------------------------------------- sinks delivered once
    def delivered(self, sink: str, batch_id: int) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM delivered WHERE sink=? AND batch=?", (sink, batch_id)).fetchone()
        return row is not None

    def mark_delivered(self, sink: str, batch_id: int) -> None:
        """Record that `sink` ran for `batch_id` (durable when this returns: under a URI, its
        batch's delivered file is written first)."""
        with self._lock:
            if self._remote is not None:
                rows = self._db.execute("SELECT sink FROM delivered WHERE batch=?", (batch_id,)).fetchall()
                self._remote.record_delivered(batch_id, sorted({r[0] for r in rows} | {sink}))
            _apply_mark(self._db, sink, batch_id)

    # ------------------------------------------------------------- reads (as of before `batch`)
    def _get(self, node: str, key: bytes, batch: int) -> Any:
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM state WHERE node=? AND key=? AND version<? ORDER BY version DESC LIMIT 1",
                (node, key, batch),
            ).fetchone()
        if row is None or row[0] is None:
            return _MISSING
        return pickle.loads(row[0])

    def _scan(self, node: str, batch: int) -> Iterator[tuple[bytes, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT s.key, s.value FROM state s WHERE s.node=? AND s.version = ("
                " SELECT MAX(version) FROM state t WHERE t.node=s.node AND t.key=s.key AND t.version<?)"
                " ORDER BY s.key",
                (node, batch),
            ).fetchall()
        for k, v in rows:
            if v is not None:
                yield k, pickle.loads(v)

    def _commit(self, batch: int, writes: Writes, keep: dict[str, int] | None = None) -> None:
        """Write version `batch`; then remove each node's blob directories of batches before
        `keep[node]` (the batch whose blob a replay of this one reads)."""
        with self._lock:
            db = self._db
            if self._remote is not None and writes:
                self._remote.record_changes(batch, writes)  # durable before the local commit returns
            db.execute("BEGIN")
            try:
                _apply_writes(db, batch, writes)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            if self._remote is not None and self._remote.snapshot_due():
                self._remote.snapshot(batch + 1, self._copy_db)
                self._remote.forget_before(batch + 1)
        self._prune_blobs(batch, keep or {})

    def _prune_blobs(self, batch: int, keep: dict[str, int]) -> None:
        for node, oldest in keep.items():
            if self._remote is not None:
                self._remote.prune_blobs(ckfs.join(self.directory, "blobs", node.replace(":", "_")), oldest)
                continue
            base = os.path.dirname(self.blob_dir(node, batch))
            for name in os.listdir(base) if os.path.isdir(base) else []:
                if name.isdigit() and int(name) < oldest:
                    shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def _connect(db_file: str, synchronous: str) -> sqlite3.Connection:
    db = sqlite3.connect(db_file, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.executescript(_SCHEMA)
    return db


def _apply_writes(db: sqlite3.Connection, batch: int, writes: Writes) -> None:
    """Write version `batch` of each written key and keep only its previous version besides
    (inside the caller's transaction)."""
    for (node, key), value in writes.items():
        db.execute("INSERT OR REPLACE INTO state VALUES (?, ?, ?, ?)", (node, key, batch, value))
        db.execute(
            "DELETE FROM state WHERE node=? AND key=? AND version < ("
            " SELECT MAX(version) FROM state WHERE node=? AND key=? AND version<?)",
            (node, key, node, key, batch),
        )


def _apply_mark(db: sqlite3.Connection, sink: str, batch: int) -> None:
    """Mark `sink` delivered for `batch`; its marks 100 batches older are dropped."""
    db.execute("INSERT OR REPLACE INTO delivered VALUES (?, ?)", (sink, batch))
    db.execute("DELETE FROM delivered WHERE sink=? AND batch < ?", (sink, batch - 100))


def _delivered_max(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT MAX(batch) FROM delivered").fetchone()
    return -1 if row is None or row[0] is None else int(row[0])


class BatchState:
    """Reads see the state as of the end of the previous batch; writes become version `batch`."""

    def __init__(self, store: StateStore, batch_id: int) -> None:
        self.store = store
        self.batch_id = batch_id
        self._writes: dict[tuple[str, bytes], bytes | None] = {}
        self._keep: dict[str, int] = {}  # node -> its oldest blob directory still needed

    def get(self, node: str, key: bytes = b"") -> tuple[bool, Any]:
        v = self.store._get(node, key, self.batch_id)
        return (False, None) if v is _MISSING else (True, v)

    def get_many(self, node: str, keys: list[Any], by_value: bool = False) -> dict[Any, Any]:
        """The stored values of the keys that have one (keys are the decoded Python keys).

        `by_value`: keys are matched as Python compares them (`1` finds the entry `True` was
        stored under), for states whose keys Spark handed over as pickles of any form."""
        out: dict[Any, Any] = {}
        stored = self._stored_bytes(node, keys, False) if by_value else [key_bytes(k) for k in keys]
        for k, b in zip(keys, stored):
            v = self.store._get(node, b, self.batch_id) if b is not None else _MISSING
            if v is not _MISSING:
                out[k] = v
        return out

    def scan(self, node: str) -> Iterator[tuple[Any, Any]]:
        """Every (key, value) of a keyed state, in a deterministic order (a by-value state's
        keys in the form each first came in)."""
        for k, v in self.store._scan(node, self.batch_id):
            yield pickle.loads(k), v

    def put(self, node: str, value: Any, key: bytes = b"") -> None:
        self._writes[(node, key)] = pickle.dumps(value, protocol=5)

    def put_many(self, node: str, items: dict[Any, Any], by_value: bool = False) -> None:
        """Write each key's value; `by_value` (see `get_many`): under the entry of the first
        form an equal key was stored in, so one Python key keeps one entry across batches."""
        keys = list(items)
        stored = self._stored_bytes(node, keys, True) if by_value else [key_bytes(k) for k in keys]
        for k, b in zip(keys, stored):
            assert b is not None
            self._writes[(node, b)] = pickle.dumps(items[k], protocol=5)

    def first_forms(self, node: str, keys: list[Any]) -> list[Any]:
        """Each key in the form an equal key was first stored in by a by-value state (the key
        itself when none was): what a Python dict shows as the key, as the simulator's does."""
        stored = self._stored_bytes(node, keys, False)
        return [k if b is None else pickle.loads(b) for k, b in zip(keys, stored)]

    def _stored_bytes(self, node: str, keys: list[Any], add: bool) -> list[bytes | None]:
        """Each key's entry bytes in a by-value state: those of the first form of the key
        (found through the state's index, `_FORMS`), None for a new key unless `add` (then
        its own pickle, indexed from this batch on). A state written before the index existed
        (an older hydrolite's checkpoint) is indexed from its entries on first use."""
        index = node + _FORMS
        if not self._read(index, _INDEXED)[0]:
            for k, _ in self.store._scan(node, self.batch_id):
                self._writes[(index, group_bytes(pickle.loads(k)))] = pickle.dumps(k, protocol=5)
            self._writes[(index, _INDEXED)] = pickle.dumps(True, protocol=5)
        out: list[bytes | None] = []
        for k in keys:
            g = group_bytes(k)
            found, b = self._read(index, g)
            if not found and add:  # (its own bytes: `-0.0` is shown as it came, as a dict shows it)
                b = pickle.dumps(k, protocol=5)
                self._writes[(index, g)] = pickle.dumps(b, protocol=5)
            out.append(b if found or add else None)
        return out

    def _read(self, node: str, key: bytes) -> tuple[bool, Any]:
        """`get`, seeing this batch's own writes first."""
        pending = self._writes.get((node, key))
        return (True, pickle.loads(pending)) if pending is not None else self.get(node, key)

    def delete(self, node: str, key: bytes = b"") -> None:
        self._writes[(node, key)] = None

    def blob_dir(self, node: str) -> str:
        """Where to write bulk state for this batch; record it with `put_blob`."""
        return self.store.blob_dir(node, self.batch_id)

    def put_blob(self, node: str, path: str | None, previous: str | None = None) -> None:
        """Record `path` as `node`'s blob of this batch. When the batch commits, the node's
        blob directories older than the previous version's (`previous`, default the recorded
        blob) are removed: a replay of this batch reads that one, which is not always the
        previous batch's (a batch that ran no tick wrote none)."""
        previous = previous if previous is not None else self.get_blob(node)
        tail = previous.rstrip("/").rsplit("/", 1)[-1] if previous else ""
        self._keep[node] = int(tail) if tail.isdigit() else self.batch_id
        self._writes[(node, b"__blob__")] = pickle.dumps(path, protocol=5)

    def get_blob(self, node: str) -> str | None:
        found, path = self.get(node, b"__blob__")
        return path if found else None

    def commit(self) -> None:
        self.store._commit(self.batch_id, self._writes, self._keep)
        self._writes, self._keep = {}, {}
