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

Limitation: the store lives on the driver's file system (a local checkpoint directory);
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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS state (
    node TEXT NOT NULL, key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB,
    PRIMARY KEY (node, key, version)
);
CREATE TABLE IF NOT EXISTS delivered (sink TEXT NOT NULL, batch INTEGER NOT NULL, PRIMARY KEY (sink, batch));
"""

_MISSING = object()


def key_bytes(key: Any) -> bytes:
    """The stored form of a state key (equal keys of the same type pickle identically)."""
    return pickle.dumps(key, protocol=5)


class StateStore:
    """The versioned state of one query."""

    def __init__(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            os.path.join(directory, "state.sqlite"), check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def begin(self, batch_id: int) -> BatchState:
        """Start batch `batch_id`: forget anything a failed attempt of it (or later) wrote."""
        with self._lock:
            self._db.execute("DELETE FROM state WHERE version >= ?", (batch_id,))
            self._db.execute("DELETE FROM delivered WHERE batch > ?", (batch_id,))
        return BatchState(self, batch_id)

    def blob_dir(self, node: str, batch_id: int) -> str:
        """A directory for bulk state of `node` at `batch_id` (deferred streams)."""
        return os.path.join(self.directory, "blobs", node.replace(":", "_"), str(batch_id))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------- sinks delivered once
    def delivered(self, sink: str, batch_id: int) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM delivered WHERE sink=? AND batch=?", (sink, batch_id)).fetchone()
        return row is not None

    def mark_delivered(self, sink: str, batch_id: int) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO delivered VALUES (?, ?)", (sink, batch_id))
            self._db.execute("DELETE FROM delivered WHERE sink=? AND batch < ?", (sink, batch_id - 100))

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

    def _commit(self, batch: int, writes: dict[tuple[str, bytes], bytes | None]) -> None:
        with self._lock:
            db = self._db
            db.execute("BEGIN")
            try:
                for (node, key), value in writes.items():
                    db.execute("INSERT OR REPLACE INTO state VALUES (?, ?, ?, ?)", (node, key, batch, value))
                    db.execute(
                        "DELETE FROM state WHERE node=? AND key=? AND version < ("
                        " SELECT MAX(version) FROM state WHERE node=? AND key=? AND version<?)",
                        (node, key, node, key, batch),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self._prune_blobs(batch, [n for (n, k), v in writes.items() if k == b"__blob__"])

    def _prune_blobs(self, batch: int, nodes: list[str]) -> None:
        for node in nodes:
            base = os.path.dirname(self.blob_dir(node, batch))
            for name in os.listdir(base) if os.path.isdir(base) else []:
                if name.isdigit() and int(name) < batch - 1:
                    shutil.rmtree(os.path.join(base, name), ignore_errors=True)


class BatchState:
    """Reads see the state as of the end of the previous batch; writes become version `batch`."""

    def __init__(self, store: StateStore, batch_id: int) -> None:
        self.store = store
        self.batch_id = batch_id
        self._writes: dict[tuple[str, bytes], bytes | None] = {}

    def get(self, node: str, key: bytes = b"") -> tuple[bool, Any]:
        v = self.store._get(node, key, self.batch_id)
        return (False, None) if v is _MISSING else (True, v)

    def get_many(self, node: str, keys: list[Any]) -> dict[Any, Any]:
        """The stored values of the keys that have one (keys are the decoded Python keys)."""
        out: dict[Any, Any] = {}
        for k in keys:
            v = self.store._get(node, key_bytes(k), self.batch_id)
            if v is not _MISSING:
                out[k] = v
        return out

    def scan(self, node: str) -> Iterator[tuple[Any, Any]]:
        """Every (key, value) of a keyed state, in a deterministic order."""
        for k, v in self.store._scan(node, self.batch_id):
            yield pickle.loads(k), v

    def put(self, node: str, value: Any, key: bytes = b"") -> None:
        self._writes[(node, key)] = pickle.dumps(value, protocol=5)

    def put_many(self, node: str, items: dict[Any, Any]) -> None:
        for k, v in items.items():
            self._writes[(node, key_bytes(k))] = pickle.dumps(v, protocol=5)

    def delete(self, node: str, key: bytes = b"") -> None:
        self._writes[(node, key)] = None

    def blob_dir(self, node: str) -> str:
        """Where to write bulk state for this batch; record it with `put_blob`."""
        return self.store.blob_dir(node, self.batch_id)

    def put_blob(self, node: str, path: str | None) -> None:
        self._writes[(node, b"__blob__")] = pickle.dumps(path, protocol=5)

    def get_blob(self, node: str) -> str | None:
        found, path = self.get(node, b"__blob__")
        return path if found else None

    def commit(self) -> None:
        self.store._commit(self.batch_id, self._writes)
        self._writes = {}
