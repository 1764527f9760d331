"""Inputs given as Python values: written to replayable feeds for a Spark run.

`hydrolite run` binds every source port it was not given to demo data (the program's
`demo_inputs()` or a few generated elements of the port's type); `hydrolite.notebook.run`
also takes batches typed in a notebook. Both write each port's batches to a feed directory
(`planner/spark/feed.py`), one entry per batch, read one entry per micro-batch. A feed
already written by an earlier run with the same checkpoint is left alone: the run resumes
instead of reading the batches twice. Under a checkpoint on a Hadoop file system each entry
is written whole there through Spark's session (which must be active), and the runner reads
them from its local mirror (`planner/spark/feed_mirror.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import HydroliteError
from .ir.graph import Flow

DEMO_BATCHES = 5  # generated demo data: this many batches of ...
DEMO_BATCH_SIZE = 4  # ... this many elements per port


class InputError(HydroliteError):
    """Inputs given as Python values do not have the expected shape."""

    code = "HL-INPUT"


def check_batches(port: str, batches: object) -> list[list[Any]]:
    """`batches` as a list of lists of elements, or a clear error about its shape."""
    fix = f"  fix: give a list of batches, each a list of elements, e.g. {port}=[[e1, e2], [e3]]"
    if not isinstance(batches, (list, tuple)):
        raise InputError(f"inputs for port {port!r} must be a list of batches, got {type(batches).__name__}\n{fix}")
    for i, batch in enumerate(batches):
        if not isinstance(batch, list):
            raise InputError(
                f"inputs for port {port!r}: batch {i} must be a list of elements, got {batch!r} "
                f"({type(batch).__name__}); a flat list of elements is not a list of batches\n{fix}"
            )
    return [list(b) for b in batches]


def demo_batches(flow: Flow, port: str) -> list[list[Any]]:
    """A few generated elements of the port's type (deterministic), in batches."""
    from .planner.spark.ports import demo_value
    from .planner.spark.types import OPAQUE, from_python

    src = flow.sources[port]
    vt = from_python(src.meta.elem) or OPAQUE
    kt = (from_python(src.meta.key) or OPAQUE) if src.meta.kind.keyed else None
    return [
        [
            demo_value(vt, DEMO_BATCH_SIZE * b + i, port)
            if kt is None
            else (demo_value(kt, i, port), demo_value(vt, DEMO_BATCH_SIZE * b + i, port))
            for i in range(DEMO_BATCH_SIZE)
        ]
        for b in range(DEMO_BATCHES)
    ]


def feed_inputs(
    flow: Flow, ports: Sequence[str], directory: str, given: Mapping[str, object] | None = None
) -> dict[str, str]:
    """Write each port's batches (`given`, else generated) to a feed under `directory`;
    returns port -> input spec (`feed:DIR?maxEntriesPerTrigger=1`: one batch per micro-batch)."""
    from .planner.spark import ckfs
    from .planner.spark.feed import FeedWriter, arrow_bytes, entry_name, entry_table, feed_end
    from .planner.spark.types import OPAQUE, from_python

    given = dict(given or {})
    unknown = sorted(set(given) - set(flow.sources))
    if unknown:
        raise InputError(
            f"inputs for unknown ports {unknown}; {flow.name!r} has sources {sorted(flow.sources)}\n"
            "  fix: name a source port of the program"
        )
    checked = {port: check_batches(port, given[port]) for port in ports if port in given}  # all, before writing
    out: dict[str, str] = {}
    for port in ports:
        batches = checked[port] if port in checked else demo_batches(flow, port)
        src = flow.sources[port]
        vt = from_python(src.meta.elem) or OPAQUE
        kt = (from_python(src.meta.key) or OPAQUE) if src.meta.kind.keyed else None
        path = ckfs.join(directory, port)
        out[port] = f"feed:{path}?maxEntriesPerTrigger=1"
        if not ckfs.is_local(path):  # written whole through Spark's session; the runner mirrors them (feed_mirror.py)
            for i, batch in enumerate(batches):  # an entry already there (an earlier run's) is kept
                entry = arrow_bytes(entry_table(batch, vt, kt))
                ckfs.write_atomic(ckfs.join(path, entry_name(i, "arrow")), entry, overwrite=False)
            continue
        if feed_end(path):  # written by an earlier run with this checkpoint: resume, do not duplicate
            continue
        writer = FeedWriter(path, vt, kt)
        for batch in batches:
            writer.send_many(batch)
    return out
