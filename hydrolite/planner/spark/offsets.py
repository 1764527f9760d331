"""The offset log as a remap from ticks to source offsets (seed 003's reclocking).

Spark writes, before running micro-batch `b`, the end offset of every input of the query
to `<checkpoint>/<query>/spark/offsets/b`, and `commits/b` once the batch finished. Batch
ids are totally ordered, source offsets only partially (one per input), and batch `b`
covers exactly the updates between the end offsets of `b - 1` and those of `b` — the remap
collection that reclocks the sources onto ticks. A replay after a crash reuses the logged
offsets, which is why a replayed tick sees exactly the same inputs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TickOffsets:
    """One micro-batch (tick) of one query: the offsets it covered per input."""

    query: str
    batch_id: int
    committed: bool
    inputs: dict[str, tuple[Any, Any]]  # input -> (start offset exclusive, end offset inclusive)

    def describe(self) -> str:
        parts = [f"{name}: {_fmt(a)} -> {_fmt(b)}" for name, (a, b) in self.inputs.items()]
        state = "committed" if self.committed else "not committed (replayed on restart)"
        return f"{self.query} batch {self.batch_id} [{state}] " + "; ".join(parts)


def _fmt(offset: Any) -> str:
    if offset is None:
        return "start"
    if offset == "?":
        return "?"
    return json.dumps(offset, separators=(",", ":"), sort_keys=True)


def _parse(path: str) -> list[Any]:
    with open(path) as fh:
        lines = fh.read().splitlines()
    out: list[Any] = []
    for line in lines[2:]:  # version, batch metadata, then one offset per input
        out.append(None if line.strip() in ("", "-") else json.loads(line))
    return out


def queries(checkpoint: str) -> list[str]:
    """The queries that have a checkpoint under `checkpoint`."""
    if not os.path.isdir(checkpoint):
        return []
    return sorted(d for d in os.listdir(checkpoint) if os.path.isfile(os.path.join(checkpoint, d, "hydrolite.json")))


def read_offset_log(checkpoint: str, query: str | None = None) -> list[TickOffsets]:
    """Every logged micro-batch of every query (or one query), in batch order."""
    out: list[TickOffsets] = []
    for q in queries(checkpoint):
        if query is not None and q != query:
            continue
        with open(os.path.join(checkpoint, q, "hydrolite.json")) as fh:
            names: list[str] = json.load(fh)["inputs"]
        log = os.path.join(checkpoint, q, "spark", "offsets")
        commits = os.path.join(checkpoint, q, "spark", "commits")
        if not os.path.isdir(log):
            continue
        batches = sorted(int(f) for f in os.listdir(log) if f.isdigit())
        prev: list[Any] | None = None
        prev_id: int | None = None
        for b in batches:
            ends = _parse(os.path.join(log, str(b)))
            if prev is not None and prev_id == b - 1:
                starts = prev
            else:  # batch 0 starts at the beginning; older logs may have been purged by Spark
                starts = [None if b == 0 else "?"] * len(ends)
            inputs = {name: (starts[i] if i < len(starts) else None, ends[i] if i < len(ends) else None) for i, name in enumerate(names)}
            out.append(TickOffsets(q, b, os.path.exists(os.path.join(commits, str(b))), inputs))
            prev, prev_id = ends, b
    return out
