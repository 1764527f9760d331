"""hydrolite's own remap log: tick (batch id) -> source offsets and files, for the whole run.

Spark keeps only the newest `spark.sql.streaming.minBatchesToRetain` (100) offset files of a
query and compacts and purges its file sources' logs, so its checkpoint alone cannot say
what tick 3 of a long run covered. Like Materialize's remap collection (its reclocking design: keep it,
compact it, never forget it), every micro-batch appends one entry to
`<checkpoint>/<query>/remap/` *before* any of its outputs is written:

    {"v": 1, "batch": 7, "ends": {"put": {"logOffset": 3}, "get": {"entries": 8}},
     "files": {"put": ["/data/put/a.json", "/data/put/b.json"]}}

`ends` copies Spark's offset log line of every input (the batch covered `(end of batch - 1,
end]`); `files` lists, for every file input, the files the batch read, in arrival order
(Spark's file source log order: modification time, then path; newest first with
`latestFirst`), as paths `spark.read` and `open` accept. Feeds and rate inputs have no files.

Layout (JSON lines, one entry per line):

* `<first>.live.jsonl` — the append-only segment of the newest batches. Appending batch `b`
  drops entries `>= b` first (a replay after a crash replaces the uncommitted entry rather
  than duplicating it: same batch id, same offsets, same entry).
* `<first>-<last>.L<k>.jsonl` — sealed, immutable segments written by tmp + rename. Before
  appending a batch, a live segment of `SEAL_EVERY` entries is sealed at level 0 (its
  batches are all committed: Spark runs batch `b` only after committing `b - 1`); whenever
  the newest `FANOUT` sealed segments share a level they are merged into one of the next
  level, so a run of N batches keeps O(FANOUT * log N) files and rewrites each entry
  O(log N) times. Nothing is ever dropped.

A crash between writing a merged segment and deleting its inputs leaves covered files
behind; readers dedupe by batch id (entries for one batch id are identical) and the writer
deletes covered files when it opens the log. A torn last line of the live segment (a crash
mid-append, before the batch's outputs) is ignored by readers and cut by the writer.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from .errors import SparkRunError

SEAL_EVERY = 100  # entries per sealed level-0 segment
FANOUT = 10  # sealed segments of one level merged into one of the next level
FORMAT_VERSION = 1
_SEALED = re.compile(r"^(\d{12})-(\d{12})\.L(\d+)\.jsonl$")
_LIVE = re.compile(r"^(\d{12})\.live\.jsonl$")


@dataclass(frozen=True)
class RemapEntry:
    """One tick of one query: the end offset of every input, and the files of file inputs."""

    batch_id: int
    ends: dict[str, Any]  # input -> Spark's end offset (JSON), None before the input's first data
    files: dict[str, list[str]]  # file input -> files read by this batch, in arrival order

    def to_json(self) -> str:
        return json.dumps(
            {"v": FORMAT_VERSION, "batch": self.batch_id, "ends": self.ends, "files": self.files},
            separators=(",", ":"),
            sort_keys=True,
        )

    @staticmethod
    def from_json(line: str) -> RemapEntry:
        obj = json.loads(line)
        if obj.get("v") != FORMAT_VERSION:
            raise SparkRunError(f"remap log entry of unknown format version {obj.get('v')!r}: {line[:200]}")
        return RemapEntry(int(obj["batch"]), dict(obj["ends"]), {k: list(v) for k, v in obj["files"].items()})


# ------------------------------------------------------------------ Spark's own logs
def parse_spark_offsets(path: str) -> list[Any]:
    """The end offsets in Spark's `offsets/<b>` file, one per source (None for `-`)."""
    with open(path) as fh:
        lines = fh.read().splitlines()
    return [None if line.strip() in ("", "-") else json.loads(line) for line in lines[2:]]  # version, metadata, offsets


def _log_offset(offset: Any) -> int:
    """A file source's offset (`{"logOffset": n}`, or a bare number in old checkpoints); -1 before any file."""
    if offset is None:
        return -1
    if isinstance(offset, dict):
        return int(offset["logOffset"])
    return int(offset)


def _read_source_log(path: str, log_offset: int) -> list[tuple[str, int]]:
    """(path URI, modification time ms) of the files Spark's file source logged for `log_offset`."""
    with open(path) as fh:
        lines = fh.read().split("\n")
    if not lines or lines[0] != "v1":
        raise SparkRunError(
            f"Spark's file source log {path} has an unknown version line {lines[0][:40] if lines else ''!r}"
        )
    out: list[tuple[str, int]] = []
    for line in lines[1:]:
        if line.strip():
            obj = json.loads(line)
            if int(obj["batchId"]) == log_offset:
                out.append((str(obj["path"]), int(obj["timestamp"])))
    return out


def source_files(source_dir: str, log_offset: int) -> list[tuple[str, int]]:
    """The files of one file-source batch, from Spark's compacted `sources/<i>` log.

    Spark writes `<n>` per file-source batch and, every `compactInterval` batches, an
    `<n>.compact` holding every entry so far; older plain files may then be deleted, so an
    entry missing as a plain file is in the first compact file at or after it.
    """
    plain = os.path.join(source_dir, str(log_offset))
    for path in (plain, plain + ".compact"):
        if os.path.exists(path):
            return _read_source_log(path, log_offset)
    names = os.listdir(source_dir) if os.path.isdir(source_dir) else []
    later = sorted(
        int(nm[: -len(".compact")]) for nm in names if nm.endswith(".compact") and nm[: -len(".compact")].isdigit()
    )
    later = [c for c in later if c >= log_offset]
    if not later:
        raise SparkRunError(f"Spark's file source log {source_dir} has no entry for its batch {log_offset}")
    return _read_source_log(os.path.join(source_dir, f"{later[0]}.compact"), log_offset)


def local_path(uri: str) -> str:
    """A logged file URI as a path `spark.read` and (for local files) `open` accept: decoded, no `file:`."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return unquote(parts.path)
    return f"{parts.scheme}://{parts.netloc}{unquote(parts.path)}"


def parquet_has_rows(uris: list[str]) -> bool:
    """Whether one of these local Parquet files has a row, from its footer (no Spark job).

    False means "not shown" (no local file, or every footer says zero rows), never "empty":
    a footer that cannot be read (a remote path, a broken file) shows nothing, and the caller
    asks Spark, whose read reports the broken file. The runtime uses it to skip the job
    that looks for an empty first batch.
    """
    import pyarrow.parquet as pq

    for uri in uris:
        if urlsplit(uri).scheme not in ("", "file"):
            continue
        try:
            if int(pq.read_metadata(local_path(uri)).num_rows) > 0:
                return True
        except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
            continue
    return False


def spark_uri_key(uri: str) -> str:
    """The form in which a logged URI and Spark's `_metadata.file_path` agree (`file:///x` -> `file:/x`)."""
    return re.sub(URI_EMPTY_AUTHORITY, r"\1:/", uri)


URI_EMPTY_AUTHORITY = r"^([A-Za-z][A-Za-z0-9+.\-]*):///"  # also used as a Spark regexp (same syntax)


# ------------------------------------------------------------------ reading
def _segments(remap_dir: str) -> list[tuple[int, int, int, str]]:
    """(first batch, kind: 0 sealed / 1 live, level, file name) of every segment, in reading order."""
    out: list[tuple[int, int, int, str]] = []
    if not os.path.isdir(remap_dir):
        return out
    for name in os.listdir(remap_dir):
        m = _SEALED.match(name)
        if m:
            out.append((int(m.group(1)), 0, int(m.group(3)), name))
            continue
        m = _LIVE.match(name)
        if m:
            out.append((int(m.group(1)), 1, 0, name))
    return sorted(out)


def _read_segment(path: str, live: bool) -> list[RemapEntry]:
    with open(path) as fh:
        text = fh.read()
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    elif live:
        lines.pop()  # a torn append: that batch never got past its first step and will be replayed
    else:
        raise SparkRunError(f"sealed remap segment {path} does not end with a newline")
    return [RemapEntry.from_json(line) for line in lines]


def read_remap(query_dir: str) -> dict[int, RemapEntry]:
    """Every entry of a query's remap log, by batch id (ascending)."""
    remap_dir = os.path.join(query_dir, "remap")
    out: dict[int, RemapEntry] = {}
    for _first, kind, _level, name in _segments(remap_dir):
        for e in _read_segment(os.path.join(remap_dir, name), live=kind == 1):
            out[e.batch_id] = e
    return dict(sorted(out.items()))


def batch_files(checkpoint: str, query: str, batch_id: int) -> dict[str, list[str]]:
    """The files each file input of `query` read in micro-batch `batch_id`, in arrival order.

    Empty for a query without file inputs (feeds, rate sources). Reading these files again
    (`spark.read.json(files)`) replays exactly what the batch saw.
    """
    entries = read_remap(os.path.join(checkpoint, query))
    if batch_id not in entries:
        known = f"{min(entries)}..{max(entries)}" if entries else "none"
        raise KeyError(f"query {query!r} has no remap entry for batch {batch_id} (logged batches: {known})")
    return entries[batch_id].files


# ------------------------------------------------------------------ writing
def _write_atomic(path: str, entries: list[RemapEntry]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write("".join(e.to_json() + "\n" for e in entries))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class RemapLog:
    """The writer of one query's remap log (the runtime calls `record` at the start of every batch)."""

    def __init__(self, query_dir: str, inputs: list[str], file_inputs: dict[int, bool]) -> None:
        """`file_inputs`: index of every file input in `inputs` -> whether it reads newest files first."""
        self.query_dir = query_dir
        self.dir = os.path.join(query_dir, "remap")
        self.inputs = inputs
        self.file_inputs = file_inputs
        self._opened = False
        self._live: list[RemapEntry] = []
        self._live_name: str | None = None
        self._last_sealed: RemapEntry | None = None
        # file input -> (URI, modification time ms as Spark listed it) of the last recorded batch
        self.listed: dict[str, list[tuple[str, int]]] = {}

    # ---------------------------------------------------------- recording one batch
    def record(self, batch_id: int) -> dict[int, list[str]]:
        """Log batch `batch_id` from Spark's offset file; returns file input -> file URIs in order.

        The URIs are Spark's own (`file:///...`), for matching `_metadata.file_path`.
        """
        self._open()
        spark_dir = os.path.join(self.query_dir, "spark")
        offsets_path = os.path.join(spark_dir, "offsets", str(batch_id))
        if not os.path.exists(offsets_path):
            raise SparkRunError(f"Spark has no offset log entry {offsets_path} for the batch it is running")
        ends = parse_spark_offsets(offsets_path)
        prev = self._previous_ends(batch_id, spark_dir)
        uris: dict[int, list[str]] = {}
        files: dict[str, list[str]] = {}
        self.listed = {}
        for i, latest_first in sorted(self.file_inputs.items()):
            end = _log_offset(ends[i] if i < len(ends) else None)
            start = _log_offset(prev[i] if i < len(prev) else None)
            found: list[tuple[int, int, str, str, int]] = []
            for lo in range(start + 1, end + 1):
                for uri, ts in source_files(os.path.join(spark_dir, "sources", str(i)), lo):
                    found.append((lo, -ts if latest_first else ts, local_path(uri), uri, ts))
            found.sort()
            uris[i] = [f[3] for f in found]
            files[self.inputs[i]] = [f[2] for f in found]
            self.listed[self.inputs[i]] = [(f[3], f[4]) for f in found]
        by_name = {name: ends[i] if i < len(ends) else None for i, name in enumerate(self.inputs)}
        self._append(RemapEntry(batch_id, by_name, files))
        return uris

    def _previous_ends(self, batch_id: int, spark_dir: str) -> list[Any]:
        """The end offsets of batch `batch_id - 1` per input index (all None before batch 0).

        From this log, else from Spark's offset log, which always keeps the batch before the
        running one (a restart from an older hydrolite's checkpoint starts logging there).
        """
        if batch_id == 0:
            return [None] * len(self.inputs)
        last = next((e for e in reversed(self._live) if e.batch_id == batch_id - 1), None)
        if last is None and self._last_sealed is not None and self._last_sealed.batch_id == batch_id - 1:
            last = self._last_sealed
        if last is not None:
            return [last.ends.get(name) for name in self.inputs]
        path = os.path.join(spark_dir, "offsets", str(batch_id - 1))
        if not os.path.exists(path):
            raise SparkRunError(
                f"cannot tell where batch {batch_id} starts: neither {self.dir} nor Spark's offset log has batch {batch_id - 1}"
            )
        return parse_spark_offsets(path)

    def _append(self, entry: RemapEntry) -> None:
        if self._live and self._live[-1].batch_id >= entry.batch_id:  # a replay: replace, never duplicate
            self._live = [e for e in self._live if e.batch_id < entry.batch_id]
            assert self._live_name is not None
            _write_atomic(os.path.join(self.dir, self._live_name), self._live)
        elif len(self._live) >= SEAL_EVERY:  # all committed: Spark is running the next batch
            self._seal()
        if self._live_name is None:
            self._live_name = f"{entry.batch_id:012d}.live.jsonl"
        with open(os.path.join(self.dir, self._live_name), "a") as fh:
            fh.write(entry.to_json() + "\n")
        self._live.append(entry)

    def _seal(self) -> None:
        assert self._live_name is not None
        first, last = self._live[0].batch_id, self._live[-1].batch_id
        _write_atomic(os.path.join(self.dir, f"{first:012d}-{last:012d}.L0.jsonl"), self._live)
        os.remove(os.path.join(self.dir, self._live_name))
        self._last_sealed = self._live[-1]
        self._live, self._live_name = [], None
        self._merge()

    def _merge(self) -> None:
        """Merge the newest FANOUT sealed segments while they share a level."""
        while True:
            sealed = [(f, lvl, nm) for f, kind, lvl, nm in _segments(self.dir) if kind == 0]
            tail = sealed[-FANOUT:]
            if len(tail) < FANOUT or len({lvl for _f, lvl, _nm in tail}) != 1:
                return
            merged: dict[int, RemapEntry] = {}
            for _f, _lvl, nm in tail:
                for e in _read_segment(os.path.join(self.dir, nm), live=False):
                    merged[e.batch_id] = e
            entries = [merged[b] for b in sorted(merged)]
            name = f"{entries[0].batch_id:012d}-{entries[-1].batch_id:012d}.L{tail[0][1] + 1}.jsonl"
            _write_atomic(os.path.join(self.dir, name), entries)
            for _f, _lvl, nm in tail:
                os.remove(os.path.join(self.dir, nm))

    # ---------------------------------------------------------- opening after a restart
    def _open(self) -> None:
        """Load the live segment, delete files a crash left covered by newer ones, cut a torn line."""
        if self._opened:
            return
        os.makedirs(self.dir, exist_ok=True)
        for name in os.listdir(self.dir):
            if name.endswith(".tmp"):
                os.remove(os.path.join(self.dir, name))
        segs = _segments(self.dir)
        spans: dict[str, tuple[int, int, int]] = {}
        for _first, kind, level, name in segs:
            entries = _read_segment(os.path.join(self.dir, name), live=kind == 1)
            if entries:
                spans[name] = (entries[0].batch_id, entries[-1].batch_id, level if kind == 0 else -1)
            elif kind == 1:
                os.remove(os.path.join(self.dir, name))
        for name, (a, b, lvl) in list(spans.items()):
            if any(o != name and oa <= a and b <= ob and olvl > lvl for o, (oa, ob, olvl) in spans.items()):
                os.remove(os.path.join(self.dir, name))
                del spans[name]
        live = sorted(nm for nm in spans if _LIVE.match(nm))
        if len(live) > 1:
            raise SparkRunError(f"remap log {self.dir} has several live segments: {', '.join(live)}")
        if live:
            self._live_name = live[0]
            self._live = _read_segment(os.path.join(self.dir, live[0]), live=True)
            _write_atomic(os.path.join(self.dir, live[0]), self._live)  # cuts a torn last line
        sealed = sorted((spans[nm][1], nm) for nm in spans if _SEALED.match(nm))
        if sealed:
            self._last_sealed = _read_segment(os.path.join(self.dir, sealed[-1][1]), live=False)[-1]
        self._opened = True
