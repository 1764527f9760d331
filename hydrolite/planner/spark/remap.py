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

* `<batch>.entry.jsonl` — on a Hadoop file system (a checkpoint URI: `hdfs://`, `s3a://`
  ...), which has no append, the newest batches are one file each, written whole
  (`ckfs.write_atomic`) instead of a live segment; a replay rewrites its batch's file. They
  are sealed and merged exactly like the live segment's entries. A local checkpoint keeps
  the live segment (one append per batch, no rename); readers and the writer accept both
  layouts in one directory, so a checkpoint copied between the two still reads and grows.

Every file is reached through `ckfs`, so the log lives wherever the checkpoint does.
A crash between writing a merged segment and deleting its inputs leaves covered files
behind; readers dedupe by batch id (entries for one batch id are identical) and the writer
deletes covered files when it opens the log. A torn last line of the live segment (a crash
mid-append, before the batch's outputs) is ignored by readers and cut by the writer; so is
a torn newest `.entry.jsonl` file (a file system whose writes are not whole).
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from . import ckfs
from .errors import SparkRunError

SEAL_EVERY = 100  # entries per sealed level-0 segment
FANOUT = 10  # sealed segments of one level merged into one of the next level
FORMAT_VERSION = 1
_SEALED = re.compile(r"^(\d{12})-(\d{12})\.L(\d+)\.jsonl$")
_LIVE = re.compile(r"^(\d{12})\.live\.jsonl$")
_ENTRY = re.compile(r"^(\d{12})\.entry\.jsonl$")
_CHECKSUM = re.compile(r"^\..*\.crc$")  # Hadoop's checksum beside a file it wrote
SEALED, LIVE, ENTRY = 0, 1, 2  # kinds of remap files, in reading order for one first batch


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
def read_existing(path: str) -> str:
    """A file's text (local path or URI) that must be there: FileNotFoundError if it is not."""
    text = ckfs.read_text(path)
    if text is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    return text


def parse_spark_offsets(path: str) -> list[Any]:
    """The end offsets in Spark's `offsets/<b>` file, one per source (None for `-`)."""
    return offset_lines(read_existing(path))


def offset_lines(text: str) -> list[Any]:
    """The end offsets in the text of a Spark `offsets/<b>` file (see `parse_spark_offsets`)."""
    lines = text.splitlines()
    return [None if line.strip() in ("", "-") else json.loads(line) for line in lines[2:]]  # version, metadata, offsets


def _log_offset(offset: Any) -> int:
    """A file source's offset (`{"logOffset": n}`, or a bare number in old checkpoints); -1 before any file."""
    if offset is None:
        return -1
    if isinstance(offset, dict):
        return int(offset["logOffset"])
    return int(offset)


def _read_source_log(path: str, text: str, log_offset: int) -> list[tuple[str, int]]:
    """(path URI, modification time ms) of the files Spark's file source logged for `log_offset`
    in its log file `path`, whose content is `text`."""
    lines = text.split("\n")
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
    plain = ckfs.join(source_dir, str(log_offset))
    for path in (plain, plain + ".compact"):
        text = ckfs.read_text(path)
        if text is not None:
            return _read_source_log(path, text, log_offset)
    names = ckfs.list_names(source_dir)
    later = sorted(
        int(nm[: -len(".compact")]) for nm in names if nm.endswith(".compact") and nm[: -len(".compact")].isdigit()
    )
    later = [c for c in later if c >= log_offset]
    if not later:
        raise SparkRunError(f"Spark's file source log {source_dir} has no entry for its batch {log_offset}")
    path = ckfs.join(source_dir, f"{later[0]}.compact")
    return _read_source_log(path, read_existing(path), log_offset)


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
    """(first batch, kind: SEALED / LIVE / ENTRY, level, file name) of every remap file, in reading order."""
    out: list[tuple[int, int, int, str]] = []
    for name in ckfs.list_names(remap_dir):
        m = _SEALED.match(name)
        if m:
            out.append((int(m.group(1)), SEALED, int(m.group(3)), name))
            continue
        m = _LIVE.match(name) or _ENTRY.match(name)
        if m:
            out.append((int(m.group(1)), LIVE if m.re is _LIVE else ENTRY, 0, name))
    return sorted(out)


def _may_be_torn(segments: list[tuple[int, int, int, str]]) -> set[str]:
    """The files a crash can leave with a torn last line: the live segment (mid-append) and
    the newest entry file (a file system whose writes are not whole). Every other file was
    complete before a later batch started."""
    entries = [name for _first, kind, _level, name in segments if kind == ENTRY]
    return {name for _first, kind, _level, name in segments if kind == LIVE} | set(entries[-1:])


def _read_segment(remap_dir: str, name: str, torn_ok: bool) -> list[RemapEntry]:
    """The entries of one remap file; a torn last line is dropped when `torn_ok`, else refused."""
    path = ckfs.join(remap_dir, name)
    lines = read_existing(path).split("\n")
    if lines[-1] == "":
        lines.pop()
    elif torn_ok:
        lines.pop()  # a torn write: that batch never got past its first step and will be replayed
    else:
        what = "sealed remap segment" if _SEALED.match(name) else "remap entry file (not the newest)"
        raise SparkRunError(f"{what} {path} does not end with a newline")
    entries = [RemapEntry.from_json(line) for line in lines]
    single = _ENTRY.match(name)
    if single and entries and [e.batch_id for e in entries] != [int(single.group(1))]:
        raise SparkRunError(f"remap entry file {path} does not hold exactly the entry of batch {int(single.group(1))}")
    return entries


def read_remap(query_dir: str) -> dict[int, RemapEntry]:
    """Every entry of a query's remap log, by batch id (ascending)."""
    remap_dir = ckfs.join(query_dir, "remap")
    segments = _segments(remap_dir)
    torn_ok = _may_be_torn(segments)
    out: dict[int, RemapEntry] = {}
    for _first, _kind, _level, name in segments:
        for e in _read_segment(remap_dir, name, torn_ok=name in torn_ok):
            out[e.batch_id] = e
    return dict(sorted(out.items()))


def batch_files(checkpoint: str, query: str, batch_id: int) -> dict[str, list[str]]:
    """The files each file input of `query` read in micro-batch `batch_id`, in arrival order.

    Empty for a query without file inputs (feeds, rate sources). Reading these files again
    (`spark.read.json(files)`) replays exactly what the batch saw.
    """
    entries = read_remap(ckfs.join(checkpoint, query))
    if batch_id not in entries:
        known = f"{min(entries)}..{max(entries)}" if entries else "none"
        raise KeyError(f"query {query!r} has no remap entry for batch {batch_id} (logged batches: {known})")
    return entries[batch_id].files


# ------------------------------------------------------------------ writing
def _write_atomic(path: str, entries: list[RemapEntry]) -> None:
    ckfs.write_atomic(path, "".join(e.to_json() + "\n" for e in entries))


def _entry_name(batch_id: int) -> str:
    return f"{batch_id:012d}.entry.jsonl"


class RemapLog:
    """The writer of one query's remap log (the runtime calls `record` at the start of every batch)."""

    def __init__(self, query_dir: str, inputs: list[str], file_inputs: dict[int, bool]) -> None:
        """`file_inputs`: index of every file input in `inputs` -> whether it reads newest files first."""
        self.query_dir = query_dir
        self.dir = ckfs.join(query_dir, "remap")
        self.inputs = inputs
        self.file_inputs = file_inputs
        # a local checkpoint appends to its live segment; a Hadoop one writes a file per batch
        self.appends = ckfs.is_local(query_dir)
        self._opened = False
        self._live: list[RemapEntry] = []
        self._live_name: str | None = None
        self._single: list[RemapEntry] = []  # batches in their own `.entry.jsonl` file, in order
        self._last_sealed: RemapEntry | None = None
        # file input -> (URI, modification time ms as Spark listed it) of the last recorded batch
        self.listed: dict[str, list[tuple[str, int]]] = {}
        # where the last recorded batch started: Spark's offsets of the batch before, per input
        self.starts: list[Any] = []
        self.ends: list[Any] = []  # the newest recorded batch's end offsets, one per input

    # ---------------------------------------------------------- recording one batch
    def record(self, batch_id: int) -> dict[int, list[str]]:
        """Log batch `batch_id` from Spark's offset file; returns file input -> file URIs in order.

        The URIs are Spark's own (`file:///...`), for matching `_metadata.file_path`.
        """
        self._open()
        spark_dir = ckfs.join(self.query_dir, "spark")
        offsets_path = ckfs.join(spark_dir, "offsets", str(batch_id))
        text = ckfs.read_text(offsets_path)
        if text is None:
            raise SparkRunError(f"Spark has no offset log entry {offsets_path} for the batch it is running")
        ends = self.ends = offset_lines(text)
        prev = self.starts = self._previous_ends(batch_id, spark_dir)
        uris: dict[int, list[str]] = {}
        files: dict[str, list[str]] = {}
        self.listed = {}
        for i, latest_first in sorted(self.file_inputs.items()):
            end = _log_offset(ends[i] if i < len(ends) else None)
            start = _log_offset(prev[i] if i < len(prev) else None)
            found: list[tuple[int, int, str, str, int]] = []
            for lo in range(start + 1, end + 1):
                for uri, ts in source_files(ckfs.join(spark_dir, "sources", str(i)), lo):
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
        if last is None:
            last = next((e for e in reversed(self._single) if e.batch_id == batch_id - 1), None)
        if last is None and self._last_sealed is not None and self._last_sealed.batch_id == batch_id - 1:
            last = self._last_sealed
        if last is not None:
            return [last.ends.get(name) for name in self.inputs]
        path = ckfs.join(spark_dir, "offsets", str(batch_id - 1))
        text = ckfs.read_text(path)
        if text is None:
            raise SparkRunError(
                f"cannot tell where batch {batch_id} starts: neither {self.dir} nor Spark's offset log has batch {batch_id - 1}"
            )
        return offset_lines(text)

    def _append(self, entry: RemapEntry) -> None:
        newest = max((e.batch_id for e in (*self._live[-1:], *self._single[-1:])), default=-1)
        if newest >= entry.batch_id:  # a replay: replace, never duplicate
            self._drop_from(entry.batch_id)
        elif len(self._live) + len(self._single) >= SEAL_EVERY:  # all committed: Spark is running the next batch
            self._seal()
        line = entry.to_json() + "\n"
        if self.appends:
            if self._live_name is None:
                self._live_name = f"{entry.batch_id:012d}.live.jsonl"
            ckfs.append(ckfs.join(self.dir, self._live_name), line)
            self._live.append(entry)
        else:  # written whole; a replay's file replaces the one its first run wrote
            ckfs.write_atomic(ckfs.join(self.dir, _entry_name(entry.batch_id)), line)
            self._single.append(entry)

    def _drop_from(self, batch_id: int) -> None:
        """Forget the entries of batches `>= batch_id` (a replay of `batch_id` writes its own)."""
        if self._live and self._live[-1].batch_id >= batch_id:
            self._live = [e for e in self._live if e.batch_id < batch_id]
            assert self._live_name is not None
            _write_atomic(ckfs.join(self.dir, self._live_name), self._live)
        for e in self._single:
            if e.batch_id > batch_id or (e.batch_id == batch_id and self.appends):  # else overwritten whole
                ckfs.remove(ckfs.join(self.dir, _entry_name(e.batch_id)))
        self._single = [e for e in self._single if e.batch_id < batch_id]

    def _seal(self) -> None:
        pending = sorted([*self._live, *self._single], key=lambda e: e.batch_id)
        first, last = pending[0].batch_id, pending[-1].batch_id
        _write_atomic(ckfs.join(self.dir, f"{first:012d}-{last:012d}.L0.jsonl"), pending)
        # a crash below leaves files the sealed segment covers: `_open` deletes them
        if self._live_name is not None:
            ckfs.remove(ckfs.join(self.dir, self._live_name))
        for e in self._single:
            ckfs.remove(ckfs.join(self.dir, _entry_name(e.batch_id)))
        self._last_sealed = pending[-1]
        self._live, self._live_name, self._single = [], None, []
        self._merge()

    def _merge(self) -> None:
        """Merge the newest FANOUT sealed segments while they share a level."""
        while True:
            sealed = [(f, lvl, nm) for f, kind, lvl, nm in _segments(self.dir) if kind == SEALED]
            tail = sealed[-FANOUT:]
            if len(tail) < FANOUT or len({lvl for _f, lvl, _nm in tail}) != 1:
                return
            merged: dict[int, RemapEntry] = {}
            for _f, _lvl, nm in tail:
                for e in _read_segment(self.dir, nm, torn_ok=False):
                    merged[e.batch_id] = e
            entries = [merged[b] for b in sorted(merged)]
            name = f"{entries[0].batch_id:012d}-{entries[-1].batch_id:012d}.L{tail[0][1] + 1}.jsonl"
            _write_atomic(ckfs.join(self.dir, name), entries)
            for _f, _lvl, nm in tail:
                ckfs.remove(ckfs.join(self.dir, nm))

    # ---------------------------------------------------------- opening after a restart
    def _open(self) -> None:
        """Load the unsealed entries, delete files a crash left covered by newer ones, cut a torn line."""
        if self._opened:
            return
        ckfs.makedirs(self.dir)
        if self.appends:
            # an interrupted write's temporary; a checksum a Hadoop writer left, which appends would falsify.
            # (A Hadoop file system hides both from listings and from every reader.)
            for name in ckfs.list_names(self.dir):
                if name.endswith(".tmp") or _CHECKSUM.match(name):
                    ckfs.remove(ckfs.join(self.dir, name))
        segments = _segments(self.dir)
        torn_ok = _may_be_torn(segments)
        spans: dict[str, tuple[int, int, int]] = {}
        unsealed: dict[str, list[RemapEntry]] = {}
        last_of: dict[str, RemapEntry] = {}
        for _first, kind, level, name in segments:
            entries = _read_segment(self.dir, name, torn_ok=name in torn_ok)
            if entries:
                spans[name] = (entries[0].batch_id, entries[-1].batch_id, level if kind == SEALED else -1)
                if kind == SEALED:
                    last_of[name] = entries[-1]
                else:
                    unsealed[name] = entries
            elif kind != SEALED:  # empty, or only a torn line
                ckfs.remove(ckfs.join(self.dir, name))
        for name, (a, b, lvl) in list(spans.items()):
            if any(o != name and oa <= a and b <= ob and olvl > lvl for o, (oa, ob, olvl) in spans.items()):
                ckfs.remove(ckfs.join(self.dir, name))
                del spans[name]
        live = sorted(nm for nm in spans if _LIVE.match(nm))
        if len(live) > 1:
            raise SparkRunError(f"remap log {self.dir} has several live segments: {', '.join(live)}")
        if live:
            self._live_name = live[0]
            self._live = unsealed[live[0]]
            _write_atomic(ckfs.join(self.dir, live[0]), self._live)  # cuts a torn last line
        self._single = [unsealed[nm][0] for nm in sorted(spans) if _ENTRY.match(nm)]
        sealed = sorted((spans[nm][1], nm) for nm in spans if _SEALED.match(nm))
        if sealed:
            self._last_sealed = last_of[sealed[-1][1]]
        self._opened = True
