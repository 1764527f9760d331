"""How long a checkpoint keeps hydrolite's own feed entries: channels between queries, heartbeats.

Every batch of a query that feeds another writes one entry to the channel's directory under
the checkpoint, and a query with deferred streams writes heartbeat entries to its own. Kept
for ever, a pipeline running a batch a second would add ~86,000 entries a day per channel.
Spark bounds its own logs the same way (`spark.sql.streaming.minBatchesToRetain`, 100 by
default: offsets and commits of older batches are purged), so a runner keeps the entries the
newest `keep` batches of every reading query read, and removes older ones:

* when query `r` runs batch `b`, batch `b - 1` is committed (Spark runs a batch only after
  committing the one before), and a replay of `b` after a failure starts where `b` did: `r`
  never reads below the start of `b` again, and the newest `keep` batches of `r` read nothing
  below the start of batch `b - keep + 1`;
* an entry is removed once it is below that start for every reader of its feed (the plan
  says which queries read it), in steps of a tenth of the window — but the highest, since a feed's offset is one past its highest
  entry (`feed.feed_end`), and a heartbeat is appended there;
* before removing, `_removed_below` in the feed's directory records the bound, so that
  `verify` (which replays a run from its first batch) says which entries are gone instead of
  taking them for batches that wrote nothing.

The starts are learnt from this runner's own batches (`RemapLog.starts`): after a restart
nothing is removed until every reader has run `keep` batches again. `keep=None` keeps every
entry (`FlowRunner(channel_history="all")`): what `verify` needs for a long run.

    >>> r = FeedRetention(2, {"/ck/channels/c": {"/ck/t1"}})
    >>> r.low("/ck/channels/c") is None       # no batch seen yet: nothing may go
    True
    >>> r.note("/ck/channels/c", "/ck/t1", 3); r.note("/ck/channels/c", "/ck/t1", 5)
    >>> r.low("/ck/channels/c")               # the newest 2 batches start at 3 and 5
    3
"""

from __future__ import annotations

import os
import shutil
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from . import ckfs
from .errors import SparkRunError
from .feed_mirror import durable_dir, entries_at, remote_entries

__all__ = ["REMOVED_BELOW", "FeedRetention", "channel_history", "removed_below"]

REMOVED_BELOW = "_removed_below"  # in a feed directory: entries below this index were removed
SPARK_RETAIN = "spark.sql.streaming.minBatchesToRetain"


def channel_history(value: int | str | None, spark: Any) -> int | None:
    """How many of each reading query's newest batches keep their channel and heartbeat
    entries: `value` when an int >= 1, every entry for "all" (None), Spark's
    `spark.sql.streaming.minBatchesToRetain` of the session (100 by default) for None."""
    if value is None:
        value = int(spark.conf.get(SPARK_RETAIN, "100"))
    if value == "all":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SparkRunError(
            f"channel_history must be an int >= 1 or 'all', not {value!r}\n"
            "  fix: the number of newest batches of each reading query whose channel entries stay under the "
            f"checkpoint (default: Spark's {SPARK_RETAIN}), or 'all' to keep every entry (hydrolite verify needs "
            "them to replay a run from its first batch)"
        )
    return value


def removed_below(feed: str) -> int:
    """The bound below which entries of feed directory `feed` were removed (0: none were)."""
    text = ckfs.read_text(ckfs.join(feed, REMOVED_BELOW))
    return int(text.strip()) if text and text.strip().isdigit() else 0


class FeedRetention:
    """A runner's removal of the feed entries (`feed` -> its reading queries' directories)
    that the newest `keep` batches of every reader are past."""

    def __init__(self, keep: int | None, readers: Mapping[str, set[str]]) -> None:
        self.keep = keep
        self.readers = {feed: set(r) for feed, r in readers.items()}
        self._starts: dict[tuple[str, str], deque[int]] = {}
        self._done: dict[str, int] = {}  # feed -> the bound already applied by this runner
        #: entries the bound moves by before the next removal: one listing and one write of the
        #: bound per tenth of the window, not per batch (a listing costs a round trip on S3)
        self.step = max(1, (keep or 1) // 10)
        self._lock = threading.Lock()  # queries run their batches on their own threads
        self._feed_of: dict[int, str | None] = {}  # an `InputSpec` (by id) -> its feed, looked at once

    @classmethod
    def of(cls, keep: int | None, stages: Sequence[Any]) -> FeedRetention:
        """Over a runner's `StageRunner`s: every channel and heartbeat feed and who reads it."""
        readers: dict[str, set[str]] = {}
        for st in stages:
            for inp in st.inputs:
                feed = _own_feed(inp)
                if feed is not None:
                    readers.setdefault(feed, set()).add(st.dir)
        return cls(keep, readers)

    def note(self, feed: str, reader: str, start: int) -> None:
        """Query `reader` runs a batch of `feed` starting at entry `start`."""
        assert self.keep is not None
        self._starts.setdefault((feed, reader), deque(maxlen=self.keep)).append(start)

    def low(self, feed: str) -> int | None:
        """The lowest entry the newest `keep` batches of some reader read (None: not known yet)."""
        lows = []
        for reader in self.readers.get(feed, ()):
            seen = self._starts.get((feed, reader))
            if seen is None or len(seen) < (seen.maxlen or 0):
                return None
            lows.append(seen[0])
        return min(lows, default=None)

    def advance(self, reader: str, inputs: Sequence[Any], starts: Sequence[Any]) -> int:
        """Query `reader` (its directory) runs a batch whose inputs (`InputSpec`s) start at
        `starts` (Spark's offsets of the batch before; None before the first). Removes what no
        reader's newest `keep` batches read; returns how many entries it removed."""
        if self.keep is None:
            return 0
        removed = 0
        with self._lock:
            for position, inp in enumerate(inputs):
                if id(inp) not in self._feed_of:
                    self._feed_of[id(inp)] = _own_feed(inp)
                feed = self._feed_of[id(inp)]
                if feed is None:
                    continue
                self.note(feed, reader, entries_at(starts[position] if position < len(starts) else None))
                low = self.low(feed)
                if low is not None and low >= self._done.get(feed, 0) + self.step:
                    removed += _remove_below(feed, low)
                    self._done[feed] = low
        return removed


def _own_feed(inp: Any) -> str | None:
    """The durable directory of an input when it is hydrolite's own feed (a channel, the
    query's heartbeat), None for a port (a user's `feed:` directory is never touched)."""
    from .runtime import HEARTBEAT

    if not (inp.name.startswith("channel:") or inp.name == HEARTBEAT):
        return None
    return durable_dir(inp.binding)


def _remove_below(feed: str, low: int) -> int:
    """Record `low` in the feed, then remove its entries below `low` but the highest."""
    entries = remote_entries(feed)
    top = max(entries, default=-1)
    doomed = [name for index, name in sorted(entries.items()) if index < low and index != top]
    if not doomed:
        return 0
    ckfs.write_atomic(ckfs.join(feed, REMOVED_BELOW), str(low))
    for name in doomed:
        path = ckfs.join(feed, name)
        if ckfs.is_local(path) and os.path.isdir(ckfs.os_path(path)):  # a Parquet entry Spark wrote
            shutil.rmtree(ckfs.os_path(path), ignore_errors=False)
        else:
            ckfs.remove(path)
    return len(doomed)
