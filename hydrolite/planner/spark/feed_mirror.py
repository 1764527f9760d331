"""Feeds under a checkpoint on a Hadoop file system: durable entries there, a local mirror read.

A query's channels from other queries and its heartbeat are *feeds* (`feed.py`): numbered
entries read by the `hydrolite_feed` Python data source. That source runs in Python processes
Spark starts (offsets and partitions on the driver's host, `read` on the executors), which
have no Hadoop client. So with a checkpoint on a URI (`hdfs://`, `s3a://`, `viewfs://` ...):

* each entry is written by the driver, first to the URI (the durable copy: it is what a driver
  restarted elsewhere reads), then to a private local directory of this driver, the *mirror*;
* the feed source lists the mirror for its offsets and, with `embed`, puts each entry's bytes
  into its partition, so executors on any machine read them without touching a file system;
* when a runner starts, it copies into its mirror the entries a query can still read: from the
  start of the newest batch in that query's offset log (a replay of it reads from there) on.
  Older entries count as present (`base`) and are never read again;
* as the queries' batches go on, entries every reading query is past are removed from the
  mirror (`FeedMirror.advance`): it holds what they have yet to read, the URI the history.

On a URI every entry is one Arrow IPC file written whole (`NNN.arrow`), a channel's included
(locally a channel entry is a Parquet directory Spark writes). A channel's batch therefore
passes through the driver's memory on a URI checkpoint, once when written and once when read.

    >>> from hydrolite.planner.spark.feed_mirror import needed_from
    >>> needed_from([{"entries": 4}, {"entries": 9}], [{"entries": 2}, None], 0)
    2
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from . import ckfs
from .feed import entry_name, feed_end, list_entries
from .scratch import scratch_dir

__all__ = ["FeedMirror", "FeedMirrors", "durable_dir", "mirror_inputs", "needed_from", "read_entry", "remote_entries"]


def needed_from(newest: list[Any] | None, before: list[Any] | None, position: int) -> int:
    """The first entry of input `position` a query may still read: where the newest batch of
    its offset log started (the end of the batch before it; 0 without one). `newest` and
    `before` are the end offsets of those two batches, one per input (None when missing)."""
    if newest is None or before is None or position >= len(before):
        return 0
    return entries_at(before[position])


def durable_dir(binding: Any) -> str:
    """Where a feed input's entries are kept for good: on a URI checkpoint the URI its mirror
    copies (`mirror_inputs` sets `durable`), else the directory the query reads."""
    path: str = binding.options.get("durable") or binding.path
    return path


def entries_at(offset: Any) -> int:
    """The entry a feed's offset (`{"entries": n}`, as Spark logs it) points at; 0 for none."""
    return int(offset["entries"]) if isinstance(offset, dict) and "entries" in offset else 0


class FeedMirror:
    """One feed: its durable directory `uri` and its local mirror `local`."""

    def __init__(self, uri: str, local: str) -> None:
        self.uri = uri
        self.local = local
        self.readers: dict[str, int] = {}  # reading query -> the first entry it may still read
        self._lock = threading.Lock()  # one runner's queries append from their own threads
        os.makedirs(local, exist_ok=True)

    @property
    def base(self) -> int | None:
        """The lowest entry a reader may still read (None: no reader)."""
        return min(self.readers.values(), default=None)

    def want_from(self, base: int, reader: str) -> None:
        """Query `reader` may read entries from `base` on."""
        self.readers[reader] = min(self.readers.get(reader, base), base)

    def advance(self, reader: str, start: int) -> int:
        """Query `reader` runs a batch that starts at entry `start`: it never reads an entry
        below it again (Spark's offsets only grow, and a replay of this batch after a failure
        starts where it did; a new runner syncs its own mirror from the URI). Removes the
        entries no reader of this runner may read any more, but the highest (the feed's offset
        is one past it): a long run's mirror holds what its queries have yet to read, not the
        whole history, which stays on the URI. Returns how many entries it removed."""
        with self._lock:
            self.readers[reader] = max(self.readers.get(reader, start), start)
            low = self.base or 0
            have = list_entries(self.local)
            top = max(have, default=-1)
            removed = 0
            for index, name in have.items():
                if index < low and index != top:
                    path = os.path.join(self.local, name)
                    if os.path.isdir(path):  # a Parquet entry copied from a run by local path
                        shutil.rmtree(path)
                    else:
                        os.unlink(path)
                    removed += 1
            return removed

    def sync(self) -> int:
        """Copy into the mirror every durable entry from `base` on that it lacks; returns how many."""
        base = self.base or 0
        have = list_entries(self.local)
        copied = 0
        for index, name in remote_entries(self.uri).items():
            if index < base or index in have:
                continue
            tmp = os.path.join(self.local, f".{uuid.uuid4().hex}.tmp")
            src = ckfs.join(self.uri, name)
            if ckfs.is_dir(src):  # a Parquet entry Spark wrote when this checkpoint was run by local path
                _copy_parquet_dir(src, tmp)
            elif not ckfs.download(src, tmp):
                continue
            os.replace(tmp, os.path.join(self.local, name))
            copied += 1
        return copied

    def write(self, index: int, make: Callable[[], bytes | None]) -> bool:
        """Entry `index`: its bytes (`make()`; None: no entry) to the URI unless there already (a
        replayed batch makes the same ones), then the URI's copy to the mirror. Whether this
        call wrote it to the URI."""
        path = ckfs.join(self.uri, entry_name(index, "arrow"))
        data = ckfs.read_bytes(path)
        written = data is None
        if data is None:
            data = make()
            if data is None:
                return False
            if not ckfs.write_atomic(path, data, overwrite=False):
                written, data = False, ckfs.read_bytes(path) or data  # another writer's is kept
        tmp = os.path.join(self.local, f".{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, os.path.join(self.local, entry_name(index, "arrow")))
        return written

    def append(self, data: bytes) -> int:
        """A new entry after the last one (a heartbeat); returns its index."""
        with self._lock:
            index = feed_end(self.local, self.base or 0)
            while not self.write(index, lambda: data):  # taken on the URI by a run this mirror did not see
                index += 1
            return index


class FeedMirrors:
    """A runner's mirrors, under one private temporary directory removed when it stops."""

    def __init__(self) -> None:
        self.root: str | None = None
        self.feeds: dict[str, FeedMirror] = {}

    def get(self, uri: str) -> FeedMirror:
        found = self.feeds.get(uri)
        if found is None:
            if self.root is None:
                self.root = scratch_dir("feeds")  # a killed driver's is removed by the next one here
            found = self.feeds[uri] = FeedMirror(uri, os.path.join(self.root, str(len(self.feeds))))
        return found

    def sync(self) -> None:
        for mirror in self.feeds.values():
            mirror.sync()

    def advance(self, reader: str, inputs: Sequence[Any], starts: Sequence[Any]) -> int:
        """Query `reader` (its directory) runs a batch whose inputs (`InputSpec`s) start at
        `starts` (Spark's offsets of the batch before, one per input; None before the first):
        `FeedMirror.advance` for each of its mirrored feeds. Returns the entries removed."""
        removed = 0
        for position, inp in enumerate(inputs):
            durable = getattr(inp.binding, "options", {}).get("durable")
            mirror = self.feeds.get(durable) if durable is not None else None
            if mirror is not None:
                removed += mirror.advance(reader, entries_at(starts[position] if position < len(starts) else None))
        return removed

    def close(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
            self.feeds.clear()


def remote_entries(uri: str) -> dict[int, str]:
    """index -> entry name of a feed directory on a Hadoop file system, or a local one (as
    `feed.list_entries`, which the feed source uses: it cannot import `ckfs`)."""
    out = {}
    for name in ckfs.list_names(uri):
        head, _, ext = name.partition(".")
        if head.isdigit() and len(head) == 12 and ext in ("arrow", "parquet"):
            out[int(head)] = name
    return out


def read_entry(uri: str, name: str) -> pa.Table:
    """Entry `name` of the feed directory `uri` (an Arrow file, or a Parquet directory a run by
    local path wrote) as a table, read through the checkpoint's file system (a local one
    directly)."""
    path = ckfs.join(uri, name)
    if ckfs.is_local(path) and name.endswith(".parquet"):
        return pq.read_table(ckfs.os_path(path))
    if name.endswith(".arrow"):
        data = ckfs.read_bytes(path)
        if data is None:
            raise FileNotFoundError(f"feed entry {path} is not there")
        return ipc.open_file(pa.py_buffer(data)).read_all()
    with tempfile.TemporaryDirectory(prefix="hydrolite-entry-") as tmp:
        _copy_parquet_dir(path, tmp)
        return pq.read_table(tmp)


def _copy_parquet_dir(path: str, local: str) -> None:
    os.makedirs(local, exist_ok=True)
    for part in ckfs.list_names(path):
        if part.endswith(".parquet"):
            ckfs.download(ckfs.join(path, part), os.path.join(local, part))


def mirror_inputs(inputs: Sequence[Any], query_dir: str, mirrors: FeedMirrors) -> None:
    """Point each of a query's feeds on a Hadoop file system (its channels, its heartbeat) at
    its mirror, which will hold the entries from where the newest batch of the query's offset
    log started (`inputs`: the query's `InputSpec`s, in Spark's source order)."""
    from .offsets import numbered
    from .ports import FeedInput
    from .remap import parse_spark_offsets

    log = ckfs.join(query_dir, "spark", "offsets")
    batches = numbered(log)
    newest = parse_spark_offsets(ckfs.join(log, str(batches[-1]))) if batches else None
    before = None
    if len(batches) > 1 and batches[-2] == batches[-1] - 1:
        before = parse_spark_offsets(ckfs.join(log, str(batches[-2])))
    for position, inp in enumerate(inputs):
        binding = inp.binding
        if not isinstance(binding, FeedInput) or ckfs.is_local(binding.path):
            continue  # a feed the user gave by local path is read where it is
        mirror = mirrors.get(binding.path)
        base = needed_from(newest, before, position)
        mirror.want_from(base, query_dir)
        options = {**binding.options, "base": str(base), "embed": "true", "durable": binding.path}
        inp.binding = FeedInput(mirror.local, options, binding.gone)
