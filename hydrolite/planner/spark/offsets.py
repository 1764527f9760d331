"""The offset log as a remap from ticks to source offsets (reclocking, as Materialize does it).

Spark writes, before running micro-batch `b`, the end offset of every input of the query
to `<checkpoint>/<query>/spark/offsets/b`, and `commits/b` once the batch finished. Batch
ids are totally ordered, source offsets only partially (one per input), and batch `b`
covers exactly the updates between the end offsets of `b - 1` and those of `b` — the remap
collection that reclocks the sources onto ticks. A replay after a crash reuses the logged
offsets, which is why a replayed tick sees exactly the same inputs.

Spark keeps only its newest 100 offset and commit files, so the runtime also copies every
batch's offsets (and the files of file inputs) into hydrolite's own compacted remap log
(`remap.py`), which covers the whole run. `read_offset_log` reads that log first and falls
back to Spark's offset files for batches it lacks (a batch planned but not yet started, or
a checkpoint written before the remap log existed).

Every file is reached through `ckfs`, so the checkpoint may be a local directory or a
Hadoop file system URI (`hdfs://`, `s3a://`, `viewfs://` ...).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from py4j.protocol import Py4JJavaError

from . import ckfs
from .errors import SparkRunError
from .remap import batch_files, parse_spark_offsets, read_existing, read_remap

__all__ = ["TickOffsets", "batch_files", "check_restart", "queries", "read_offset_log", "repair_offsets"]


@dataclass(frozen=True)
class TickOffsets:
    """One micro-batch (tick) of one query: the offsets it covered per input."""

    query: str
    batch_id: int
    committed: bool
    inputs: dict[str, tuple[Any, Any]]  # input -> (start offset exclusive, end offset inclusive)
    files: dict[str, list[str]] = field(default_factory=dict)  # file input -> files read, in arrival order

    def describe(self) -> str:
        parts = []
        for name, (a, b) in self.inputs.items():
            n = len(self.files[name]) if name in self.files else None
            parts.append(
                f"{name}: {_fmt(a)} -> {_fmt(b)}" + ("" if n is None else f" ({n} file{'' if n == 1 else 's'})")
            )
        state = "committed" if self.committed else "not committed (replayed on restart)"
        return f"{self.query} batch {self.batch_id} [{state}] " + "; ".join(parts)


def _fmt(offset: Any) -> str:
    if offset is None:
        return "start"
    if offset == "?":
        return "?"
    return json.dumps(offset, separators=(",", ":"), sort_keys=True)


def queries(checkpoint: str) -> list[str]:
    """The queries that have a checkpoint under `checkpoint`."""
    out = []
    for d in ckfs.list_names(checkpoint):  # [] when there is no such directory
        record = ckfs.join(checkpoint, d, "hydrolite.json")
        if ckfs.exists(record) and not ckfs.is_dir(record):
            out.append(d)
    return out


def numbered(directory: str) -> list[int]:
    """The numbered files of a Spark log directory (offsets/, commits/), in order."""
    return sorted(int(f) for f in ckfs.list_names(directory) if f.isdigit())


def _input_names(qdir: str) -> list[str]:
    """The query's inputs, in Spark's source order (its `hydrolite.json`)."""
    names: list[str] = json.loads(read_existing(ckfs.join(qdir, "hydrolite.json")))["inputs"]
    return names


def read_offset_log(checkpoint: str, query: str | None = None) -> list[TickOffsets]:
    """Every logged micro-batch of every query (or one query), in batch order.

    A batch is committed when Spark's `commits/<b>` exists or a later batch is committed
    (Spark commits batches in order and purges old commit files).
    """
    out: list[TickOffsets] = []
    for q in queries(checkpoint):
        if query is not None and q != query:
            continue
        qdir = ckfs.join(checkpoint, q)
        names = _input_names(qdir)
        ends: dict[int, dict[str, Any]] = {}
        files: dict[int, dict[str, list[str]]] = {}
        for b, entry in read_remap(qdir).items():
            ends[b] = {name: entry.ends.get(name) for name in names}
            files[b] = entry.files
        log = ckfs.join(qdir, "spark", "offsets")
        for b in numbered(log):
            if b not in ends:
                line = parse_spark_offsets(ckfs.join(log, str(b)))
                ends[b] = {name: line[i] if i < len(line) else None for i, name in enumerate(names)}
        commits = numbered(ckfs.join(qdir, "spark", "commits"))
        last_commit = commits[-1] if commits else -1
        for b in sorted(ends):
            if b - 1 in ends:
                starts = ends[b - 1]
            else:  # batch 0 starts at the beginning; an older batch missing from both logs is unknown
                starts = {name: None if b == 0 else "?" for name in names}
            inputs = {name: (starts[name], ends[b][name]) for name in names}
            out.append(TickOffsets(q, b, b <= last_commit, inputs, files.get(b, {})))
    return out


# ------------------------------------------------------------------ damaged logs: detect, explain, repair
def _damage(path: str, offsets: bool) -> str | None:
    """Why Spark could not read this offset (`offsets`) or commit log file, or None if it can.

    Spark writes `v<N>`, a metadata JSON object, then (offset files) one JSON offset or `-`
    per input; a file cut short by a crash or a full disk fails one of these. Through Hadoop,
    a file whose checksum no longer matches it fails to read at all: unreadable, as locally.
    """
    try:
        data = ckfs.read_bytes(path)
        if data is None:
            return "unreadable: no such file"
        lines = data.decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError, Py4JJavaError) as exc:
        return f"unreadable: {exc}"
    if not lines:
        return "empty"
    if not (lines[0].startswith("v") and lines[0][1:].isdigit()):
        return f"no version line (starts with {lines[0][:20]!r})"
    for k, line in enumerate(lines[1:], start=2):
        if k > 2 and line == "-":
            continue
        try:
            value = json.loads(line)
        except ValueError:
            return f"line {k} is not valid JSON ({line[:60]!r}{'...' if len(line) > 60 else ''}): cut short?"
        if k == 2 and not isinstance(value, dict):
            return "line 2 is not a metadata object"
    if len(lines) < (3 if offsets else 2):
        return "cut short: no offsets" if offsets and len(lines) == 2 else "cut short: no metadata"
    return None


def _crc(path: str) -> str:
    """The checksum file Hadoop keeps beside `path` (`dir/.name.crc`), for a path or a URI."""
    if ckfs.is_local(path):
        return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.crc")
    parent, name = path.rsplit("/", 1)
    return f"{parent}/.{name}.crc"


def check_restart(checkpoint: str, query: str) -> None:
    """Raise a `SparkRunError` saying what is wrong and how to recover when Spark could not
    restart `query` from its checkpoint because a log file it reads is damaged.

    On restart Spark reads the newest offset file, the one before it, and the newest commit
    file; a truncated one fails the query with a bare parse error ("Unexpected
    end-of-input", "Incomplete log file") after it started. Recoveries, each exact:

    * a commit file: delete it; Spark replays that batch from its logged offsets, and every
      output is idempotent by batch id;
    * an offset file of a batch hydrolite's remap log has (the batch started): rebuild it
      from that entry (`repair_offsets`, `hydrolite offsets CHECKPOINT --repair`);
    * the newest offset file of a batch that never started (no remap entry, not committed):
      delete it; Spark plans batch N again (nothing of it was written);
    * anything else: restore it from a backup of the checkpoint.
    """
    qdir = ckfs.join(checkpoint, query)
    log, commit_dir = ckfs.join(qdir, "spark", "offsets"), ckfs.join(qdir, "spark", "commits")
    batches, commits = numbered(log), numbered(commit_dir)
    head = f"query {query!r} cannot restart from checkpoint {checkpoint}"
    if commits:
        path = ckfs.join(commit_dir, str(commits[-1]))
        why = _damage(path, offsets=False)
        if why is not None:
            raise SparkRunError(
                f"{head}: Spark's commit log entry {path} is damaged ({why})\n  fix: delete it and its checksum "
                f"{_crc(path)}, then run again: Spark replays batch {commits[-1]} from its logged offsets "
                "(every output is idempotent by batch id)"
            )
    for b in batches[-2:][::-1]:
        path = ckfs.join(log, str(b))
        why = _damage(path, offsets=True)
        if why is None:
            continue
        started = b in read_remap(qdir)
        committed = bool(commits) and commits[-1] >= b
        if started:
            fix = (
                f"rebuild it from hydrolite's remap log, which recorded batch {b}'s offsets when the batch started: "
                f"hydrolite offsets {checkpoint} --repair; then run again"
            )
        elif b == batches[-1] and not committed:
            fix = (
                f"batch {b} never started (hydrolite's remap log has no entry for it), so nothing of it was written: delete it and "
                f"its checksum {_crc(path)}, then run again: Spark plans batch {b} again"
            )
        else:
            fix = f"restore it from a backup of the checkpoint (hydrolite's remap log has no entry for batch {b} to rebuild it from)"
        raise SparkRunError(f"{head}: Spark's offset log entry {path} is damaged ({why})\n  fix: {fix}")


def repair_offsets(checkpoint: str) -> list[str]:
    """Rewrite every damaged offset file that hydrolite's remap log can rebuild exactly; returns their paths.

    The remap entry of batch N holds the offset lines Spark wrote to `offsets/N` (parsed);
    the metadata line (watermark, batch time, SQL confs) is taken from the nearest readable
    offset file of the query — hydrolite uses neither watermarks nor the batch time. The file
    is replaced whole (`ckfs.write_atomic`); locally the checksum of the damaged content
    beside it is deleted (Spark would refuse the new content), through Hadoop the checksum
    is rewritten with the file.
    """
    repaired: list[str] = []
    for q in queries(checkpoint):
        qdir = ckfs.join(checkpoint, q)
        log = ckfs.join(qdir, "spark", "offsets")
        batches = numbered(log)
        damaged = [b for b in batches if _damage(ckfs.join(log, str(b)), offsets=True) is not None]
        if not damaged:
            continue
        entries = read_remap(qdir)
        names = _input_names(qdir)
        readable = [b for b in batches if b not in damaged]
        for b in damaged:
            if b not in entries:
                continue
            if readable:
                near = min(readable, key=lambda r: abs(r - b))
                version, meta = read_existing(ckfs.join(log, str(near))).splitlines()[:2]
            else:
                version, meta = (
                    "v1",
                    json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}}, separators=(",", ":")),
                )
            ends = entries[b].ends
            lines = ["-" if ends.get(nm) is None else json.dumps(ends[nm], separators=(",", ":")) for nm in names]
            path = ckfs.join(log, str(b))
            ckfs.write_atomic(path, "\n".join([version, meta, *lines]))
            if ckfs.is_local(path):  # the checksum of the damaged content
                ckfs.remove(_crc(path))
            repaired.append(path)
    return repaired
