"""Finer asynchrony, behind flags because it multiplies executions (issue 12, item 6).

`Simulator(flow, interleavings=True)`: **per-edge interleavings**. Inside one location,
top-level operators are asynchronous and each edge is a FIFO stream, so an operator with
two inputs may see one path's delta before the other's, whatever order they were produced
in. By default the model propagates a delta through all top-level operators at once
(depth-first), so a fold over `a.merge_unordered(b)` where both come from one source sees
the left path's version first, always; and sends to two sources reach a join in the order
the test made them. With the flag, every push input of a top-level operator with two
inputs (merge_unordered, join, cross_product, cross_singleton, anti_join, zip, the keyed
lookups) goes through an `EdgeBufferOp`: a FIFO buffer whose head the scheduler delivers
as an action of its own, interleaved with every other action. A delta (one send, one tick
run's output, one new version) travels an edge as a unit, as everywhere in the model.
Inside a tick there is nothing to interleave: a run evaluates its body atomically (`chain`
exists only there).

`Simulator(flow, per_key_snapshots=True)`: **per-key snapshots**. A keyed singleton's
`snapshot(tick, nondet)` may see each key at its own version (never older than the one
that key showed before), not one version of the whole map (`KeyedSnapshotOp`). Aligned
snapshots (`snapshot_aligned`, and the entries the alignment pass creates) still read one
version of the whole map: that is what alignment promises. The Spark runtime reads one
consistent version per micro-batch, one of the behaviours explored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir.meta import Kind
from ..ir.roles import Role
from .ops_time import Entry, same_value
from .registry import Op
from .values import NOTHING, UNSET, _Sentinel, render

if TYPE_CHECKING:
    from ..ir.nodes import Snapshot
    from .world import World

ABSENT = _Sentinel("ABSENT")  # a key without a value in a version of a keyed singleton


class EdgeBufferOp(Op):
    """One push input of a two-input top-level operator, as a FIFO buffer (interleavings).

    Its node is the operator's (for sites); `port` is the operator input it feeds and
    `source` the node producing what it carries. The scheduler's release action delivers
    the oldest delta (see `World.release`)."""

    __slots__ = ("port", "source")

    def setup(self) -> None:
        self.port = 0
        self.source: Any = None

    def init_state(self) -> Any:
        return []

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        st[self.idx].append(delta)
        return NOTHING

    def release(self, w: World, st: list[Any]) -> Any:
        """Deliver the oldest buffered delta to the operator."""
        return st[self.idx].pop(0)

    def label(self) -> str:
        """What delivering from this buffer means, for traces and choices."""
        node, src = self.node, self.source
        return f"input {self.port + 1} of {node.op}() at {node.site} (from {src.op}() at {src.site})"


def buffer_edges(ops: list[Op]) -> list[EdgeBufferOp]:
    """Put an `EdgeBufferOp` on every push input of every top-level two-input operator
    (appended to `ops`); returns the buffers."""
    buffers: list[EdgeBufferOp] = []
    for op in list(ops):
        if op.role is not Role.TOP or len(op.ins) < 2:
            continue
        for port, i in enumerate(op.ins):
            child = ops[i]
            if (op, port) not in child.consumers:
                continue  # read at tick time or carried: not a push edge
            buf = EdgeBufferOp(op.node, len(ops), Role.TOP, (op.in_kinds[port],), (child.role,))
            buf.port, buf.source = port, child.node
            buf.ins = (child.idx,)
            buf.consumers = [(op, port)]
            child.consumers[child.consumers.index((op, port))] = (buf, 0)
            ops.append(buf)
            buffers.append(buf)
    return buffers


class KeyedSnapshotOp(Entry):
    """snapshot(tick) of a keyed singleton, per key (per_key_snapshots): each key enters the
    tick at any of its versions not older than the one it showed before.

    State: [the map released last (UNSET before the first run), key -> that key's values
    newer than released (ABSENT: the key was removed), the newest map pushed (None before
    any)]. Consecutive equal values of a key are one version. A run observes something new
    when some key advances, or at its first run (the first map it sees).
    """

    __slots__ = ()

    def init_state(self) -> Any:
        return [UNSET, {}, None]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        s = st[self.idx]
        prev: dict[Any, Any] = s[2] if s[2] is not None else {}
        pending: dict[Any, list[Any]] = s[1]
        for k in list(prev) + [k for k in delta if k not in prev]:
            new, old = delta.get(k, ABSENT), prev.get(k, ABSENT)
            if new is ABSENT and old is ABSENT:
                continue
            if new is ABSENT or old is ABSENT or not same_value(new, old):
                pending.setdefault(k, []).append(new)
        s[2] = delta
        return NOTHING

    def has_value(self, st: list[Any]) -> bool:
        return st[self.idx][2] is not None

    def can_advance(self, st: list[Any]) -> bool:
        last, pending, newest = st[self.idx]
        return (last is UNSET and newest is not None) or any(pending.values())

    def idle_value(self, st: list[Any]) -> Any:
        return st[self.idx][0]

    def mark(self, st: list[Any]) -> Any:
        return {k: len(vs) for k, vs in st[self.idx][1].items()}

    def grown(self, st: list[Any], mark: Any) -> bool:
        return any(len(vs) > mark.get(k, 0) for k, vs in st[self.idx][1].items())

    def decide(self, w: World, st: list[Any], force: bool, floor: Any = None) -> tuple[Any, bool]:
        s = st[self.idx]
        last, pending = s[0], s[1]
        fresh = last is UNSET and floor is None  # the first map this tick sees is new by itself
        fl: dict[Any, int] = floor or {}
        keys = [k for k, vs in pending.items() if vs]
        must = force and not fresh
        last_adv = max((i for i, k in enumerate(keys) if len(pending[k]) > fl.get(k, 0)), default=-1)
        out: dict[Any, Any] = {} if last is UNSET else dict(last)
        chosen = False
        notes: list[str] = []
        for i, k in enumerate(keys):
            vs = pending[k]
            m, f = len(vs), fl.get(k, 0)
            lo = f + 1 if must and not chosen and i == last_adv else 0
            c = lo + w.choose(m - lo + 1) if m > lo else lo  # c versions of this key consumed
            if c:
                v = vs[c - 1]
                pending[k] = vs[c:]
                if v is ABSENT:
                    out.pop(k, None)
                else:
                    out[k] = v
            chosen = chosen or c > f
            if w.trace is not None and m > c:
                notes.append(f"{render(k)}: {m - c} newer not taken")
        s[0] = out
        if w.trace is not None:
            w.note_release(self, out, "per key" + (f"; {', '.join(notes)}" if notes else ""))
        return out, fresh or chosen


def per_key_candidate(node: Snapshot, role: Role) -> bool:
    """Whether a snapshot reads per key under `per_key_snapshots`: an entry (not an aligned
    read inside its own tick) of a keyed singleton that no align point constrains."""
    return node.meta.kind is Kind.KEYED_SINGLETON and role is Role.ENTRY and node.align is None
