"""The offset log as a remap from ticks to source offsets (seed 003's reclocking).

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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from .remap import batch_files, parse_spark_offsets, read_remap

__all__ = ["TickOffsets", "batch_files", "queries", "read_offset_log"]


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
            parts.append(f"{name}: {_fmt(a)} -> {_fmt(b)}" + ("" if n is None else f" ({n} file{'' if n == 1 else 's'})"))
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
    if not os.path.isdir(checkpoint):
        return []
    return sorted(d for d in os.listdir(checkpoint) if os.path.isfile(os.path.join(checkpoint, d, "hydrolite.json")))


def _numbered(directory: str) -> list[int]:
    return sorted(int(f) for f in os.listdir(directory) if f.isdigit()) if os.path.isdir(directory) else []


def read_offset_log(checkpoint: str, query: str | None = None) -> list[TickOffsets]:
    """Every logged micro-batch of every query (or one query), in batch order.

    A batch is committed when Spark's `commits/<b>` exists or a later batch is committed
    (Spark commits batches in order and purges old commit files).
    """
    out: list[TickOffsets] = []
    for q in queries(checkpoint):
        if query is not None and q != query:
            continue
        qdir = os.path.join(checkpoint, q)
        with open(os.path.join(qdir, "hydrolite.json")) as fh:
            names: list[str] = json.load(fh)["inputs"]
        ends: dict[int, dict[str, Any]] = {}
        files: dict[int, dict[str, list[str]]] = {}
        for b, entry in read_remap(qdir).items():
            ends[b] = {name: entry.ends.get(name) for name in names}
            files[b] = entry.files
        log = os.path.join(qdir, "spark", "offsets")
        for b in _numbered(log):
            if b not in ends:
                line = parse_spark_offsets(os.path.join(log, str(b)))
                ends[b] = {name: line[i] if i < len(line) else None for i, name in enumerate(names)}
        commits = _numbered(os.path.join(qdir, "spark", "commits"))
        last_commit = commits[-1] if commits else -1
        for b in sorted(ends):
            if b - 1 in ends:
                starts = ends[b - 1]
            else:  # batch 0 starts at the beginning; an older batch missing from both logs is unknown
                starts = {name: None if b == 0 else "?" for name in names}
            inputs = {name: (starts[name], ends[b][name]) for name in names}
            out.append(TickOffsets(q, b, b <= last_commit, inputs, files.get(b, {})))
    return out
