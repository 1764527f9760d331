"""The files that make the driver's state store (`state.py`) durable on a Hadoop file system.

SQLite needs a local file, so a store whose directory is a URI (`hdfs://`, `s3a://`,
`viewfs://` ...) keeps its SQLite database in a private local working directory and makes it
durable the way Spark's HDFS-backed state store does: a small file per batch, and every so
many batches a snapshot of the whole database. Layout under the store's directory `D`
(`<n>` and `<b>` are 20 digits, so a listing sorts by batch):

    D/snapshots/<n>.sqlite   the whole database as batch n starts (every commit of a batch < n)
    D/changes/<b>.pkl        the writes of batch b (b >= the newest snapshot's n)
    D/delivered/<b>.json     the callback sinks delivered for batch b
    D/blobs/<node>/<b>/      Parquet of deferred streams, written and read by Spark itself

Opening the store downloads the newest snapshot, applies the change files from its `n` on in
batch order (with the same SQL, hence the same pruning, as the commit that wrote them) and
then every delivered file in batch order. Ordering guarantees:

* a batch's change file is written before its local commit returns (Spark commits the
  micro-batch only after `foreachBatch` returns, so a committed batch has its change file);
  a delivered mark is durable before `mark_delivered` returns;
* `begin(b)` removes the files of batches `>= b` (delivered marks: `> b`), newest first, as
  the local DELETEs drop those rows. When the newest snapshot holds what `begin(b)` drops (a
  replay of a batch at or below it), a snapshot of the rolled-back database, named `b`, is
  written FIRST and the newer snapshots are removed after it. A crash anywhere in between
  leaves either the old files (the newest snapshot is still the newer one: opening gives the
  database as it was before `begin(b)`, and Spark's replay runs `begin(b)` again) or the new
  snapshot plus change files of batches `>= b`, which the replay's `begin(b)` drops again;
* a periodic snapshot (every `snapshot_every` change files) is written whole before the
  files it covers are removed (oldest first); a leftover older file is ignored on opening
  (change files below the newest snapshot's `n`) or harmless (a delivered file below it
  holds marks the snapshot has; applied in batch order, the same marks are pruned again);
* names of files that may exist are tracked in memory (added before a write is attempted,
  so a write that failed half-way is still removed by a later `begin`): a batch costs one
  write (its change file) and no listing.

Spark only ever replays the batch that was running when the driver stopped, so `begin(b)` is
called with `b` at most one past the last committed batch; that is the case these files
reproduce exactly (tests/spark/test_state_hadoop.py).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from . import ckfs

_NAME = re.compile(r"^(\d{20})\.(pkl|json|sqlite)$")
_FORMAT = 1

Writes = dict[tuple[str, bytes], bytes | None]


class RemoteFiles:
    """The snapshot, change and delivered files of one store under a URI directory."""

    def __init__(self, directory: str, snapshot_every: int) -> None:
        if snapshot_every < 1:
            raise ValueError(f"hydrolite: snapshot_every must be at least 1, not {snapshot_every}")
        self.directory = directory
        self.snapshot_every = snapshot_every
        self.snapshots = self._list("snapshots", "sqlite")
        self.changes = self._list("changes", "pkl")
        self.delivered = self._list("delivered", "json")
        # the newest delivered mark the newest snapshot holds (set by the store, which reads it)
        self.snapshot_delivered_max = -1

    # ------------------------------------------------------------- names
    def _path(self, sub: str, batch: int, ext: str) -> str:
        return ckfs.join(self.directory, sub, f"{batch:020d}.{ext}")

    def _list(self, sub: str, ext: str) -> set[int]:
        found: set[int] = set()
        for name in ckfs.list_names(ckfs.join(self.directory, sub)):
            m = _NAME.match(name)
            if m and m.group(2) == ext:
                found.add(int(m.group(1)))
        return found

    def newest_snapshot(self) -> int:
        """The newest snapshot's batch `n` (0 without a snapshot: every change file applies)."""
        return max(self.snapshots, default=0)

    # ------------------------------------------------------------- opening
    def download_snapshot(self, local_file: str) -> bool:
        """Copy the newest snapshot to `local_file`; False when there is none."""
        if not self.snapshots:
            return False
        path = self._path("snapshots", self.newest_snapshot(), "sqlite")
        if not ckfs.download(path, local_file):
            raise RuntimeError(f"hydrolite: the state snapshot {path} was listed, then gone")
        return True

    def changes_to_apply(self) -> Iterator[tuple[int, Writes]]:
        """(batch, writes) of every change file from the newest snapshot on, in batch order."""
        for b in sorted(c for c in self.changes if c >= self.newest_snapshot()):
            yield b, dict(self._record("changes", b, "pkl", pickle.loads)["writes"])

    def delivered_marks(self) -> Iterator[tuple[int, list[str]]]:
        """(batch, sinks) of every delivered file, in batch order."""
        for b in sorted(self.delivered):
            yield b, list(self._record("delivered", b, "json", json.loads)["sinks"])

    def _record(self, sub: str, batch: int, ext: str, parse: Callable[[bytes], Any]) -> dict[str, Any]:
        """The record in a listed change or delivered file, checked to be of `batch` and this format."""
        path = self._path(sub, batch, ext)
        data = ckfs.read_bytes(path)
        if data is None:
            raise RuntimeError(f"hydrolite: the state file {path} was listed, then gone")
        record = parse(data)
        if not isinstance(record, dict) or record.get("v") != _FORMAT or record.get("batch") != batch:
            raise RuntimeError(f"hydrolite: {path} is not a state {sub} file of batch {batch} (format {_FORMAT})")
        return record

    # ------------------------------------------------------------- per batch
    def record_changes(self, batch: int, writes: Writes) -> None:
        """Write batch `batch`'s change file (whole or not at all)."""
        self.changes.add(batch)  # before the write: a failed attempt may have left it
        record = {"v": _FORMAT, "batch": batch, "writes": list(writes.items())}
        ckfs.write_atomic(self._path("changes", batch, "pkl"), pickle.dumps(record, protocol=5))

    def record_delivered(self, batch: int, sinks: list[str]) -> None:
        """Write the sinks delivered for `batch` (all of them: the file replaces the last one)."""
        self.delivered.add(batch)
        record = {"v": _FORMAT, "batch": batch, "sinks": sinks}
        ckfs.write_atomic(self._path("delivered", batch, "json"), json.dumps(record))

    def snapshot_due(self) -> bool:
        n = self.newest_snapshot()
        return sum(1 for c in self.changes if c >= n) >= self.snapshot_every

    def roll_back(self, batch: int, copy_db: Callable[[str], int]) -> None:
        """Mirror `begin(batch)`: drop the files of batches `>= batch` (delivered: `> batch`).
        `copy_db(file)` writes a consistent copy of the (already rolled-back) database to a
        new local file and answers its newest delivered batch; it is called only when the
        newest snapshot holds something the rollback drops."""
        fresh = self.newest_snapshot() > batch or self.snapshot_delivered_max > batch
        if fresh:
            self.snapshot(batch, copy_db)
        for b in sorted((s for s in self.snapshots if s > batch), reverse=True):
            self._remove("snapshots", self.snapshots, b, "sqlite")
        for b in sorted((c for c in self.changes if c >= batch), reverse=True):
            self._remove("changes", self.changes, b, "pkl")
        for b in sorted((d for d in self.delivered if d > batch), reverse=True):
            self._remove("delivered", self.delivered, b, "json")
        if fresh:
            self.forget_before(batch)

    def snapshot(self, n: int, copy_db: Callable[[str], int]) -> None:
        """Write snapshot `n` (the database as batch `n` starts); `forget_before(n)` then
        removes what it covers."""
        work = tempfile.mkdtemp(prefix="hydrolite-snapshot-")
        try:
            local = os.path.join(work, "snapshot.sqlite")
            delivered_max = copy_db(local)
            self.snapshots.add(n)
            ckfs.upload_atomic(local, self._path("snapshots", n, "sqlite"))
        finally:
            shutil.rmtree(work)
        self.snapshot_delivered_max = delivered_max

    def forget_before(self, n: int) -> None:
        """Remove, oldest first, the files snapshot `n` covers: older snapshots, change files
        of batches `< n`, delivered files of batches `< n` (the snapshot holds their marks)."""
        for b in sorted(s for s in self.snapshots if s < n):
            self._remove("snapshots", self.snapshots, b, "sqlite")
        for b in sorted(c for c in self.changes if c < n):
            self._remove("changes", self.changes, b, "pkl")
        for b in sorted(d for d in self.delivered if d < n):
            self._remove("delivered", self.delivered, b, "json")

    def _remove(self, sub: str, names: set[int], batch: int, ext: str) -> None:
        ckfs.remove(self._path(sub, batch, ext))
        names.discard(batch)  # after the removal: a failed one is tried again later

    # ------------------------------------------------------------- blobs
    def prune_blobs(self, base: str, oldest: int) -> None:
        """Remove the blob directories under `base` of batches older than `oldest`."""
        for name in ckfs.list_names(base):
            if name.isdigit() and int(name) < oldest:
                ckfs.remove(ckfs.join(base, name))
