"""Evaluators of ports, ticks, time and order: the operators where choices are made.

Choice points: `Batch` entries (a prefix of the pending elements per key, or any subset for
NoOrder), `Snapshot` entries (any version not older than the last one seen), and
`AssumeOrdering` (an order for the elements). Network delivery and which tick runs next
are scheduler choices (see `world.py`).
"""

from __future__ import annotations

import types
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from ..ir import nodes as n
from ..ir.meta import Kind
from ..ir.roles import Role
from ..port_values import holder
from .registry import Op, evaluator
from .values import EMPTY, NOTHING, UNSET

if TYPE_CHECKING:
    from .world import World


def empty_of(kind: Kind) -> Any:
    """The value a collection of this kind has before anything happened."""
    if kind.streamlike:
        return []
    return {} if kind is Kind.KEYED_SINGLETON else EMPTY


def same_value(a: Any, b: Any) -> bool:
    """Equality that treats a failing `==` as "different" (versions, carried values)."""
    try:
        return bool(a == b)
    except Exception:  # an element type whose == fails: treat versions as distinct
        return False


@evaluator(n.Source)
class SourceOp(Op):
    """A named input port: the test's senders push elements here (see `World.send`), each
    held as its declared type holds it (`port_values`: an int sent to a float port is a float,
    as in Spark's column)."""

    __slots__ = ("port", "convert")

    def setup(self) -> None:
        assert isinstance(self.node, n.Source)
        self.port = self.node.port
        meta = self.node.meta
        declared: Any = meta.elem
        if meta.kind is Kind.KEYED_STREAM:
            declared = types.GenericAlias(tuple, (meta.key, meta.elem))
        self.convert = holder(declared)


@evaluator(n.SourceIter)
class SourceIterOp(Op):
    """source_iter(values): a finite top-level input, all present from the start."""

    __slots__ = ()

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        assert isinstance(self.node, n.SourceIter)
        return list(self.node.values)


@evaluator(n.TickConstant)
class TickConstantOp(Op):
    """tick.singleton(value): the same value in every tick."""

    __slots__ = ()

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        assert isinstance(self.node, n.TickConstant)
        return self.node.value


@evaluator(n.DeferTick)
class DeferTickOp(Op):
    """defer_tick(): what the input held in the previous run of this tick (empty in the first)."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [empty_of(self.kind), UNSET, False]  # previous value, this run's value, ran before

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        s = st[self.idx]
        s[1] = vals[self.ins[0]]
        return s[0]

    def commit(self, st: list[Any]) -> None:
        """Make this run's value the one the next run sees (called when the tick completes)."""
        s = st[self.idx]
        if s[1] is not UNSET:
            s[0], s[1], s[2] = s[1], UNSET, True

    def pending(self, st: list[Any]) -> bool:
        """A deferred stream with elements makes the next run of its tick observable."""
        return self.streamlike and bool(st[self.idx][0])


@evaluator(n.CycleSink)
class CycleSinkOp(Op):
    """The write side of a tick cycle; `CycleSourceOp` reads what it received."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [empty_of(self.in_kinds[0]), UNSET, False]

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        st[self.idx][1] = vals[self.ins[0]]
        return NOTHING

    def commit(self, st: list[Any]) -> None:
        s = st[self.idx]
        if s[1] is not UNSET:
            s[0], s[1], s[2] = s[1], UNSET, True


@evaluator(n.CycleSource)
class CycleSourceOp(Op):
    """The read side of a tick cycle: the previous run's value of what completes the cycle.

    `link` is set by the compiler: the `DeferTick` feeding the cycle's sink (its stored
    previous value is exactly this run's cycle value) or, without one, the sink itself.
    """

    __slots__ = ("link",)

    def setup(self) -> None:
        self.link: Op | None = None

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        assert self.link is not None, f"cycle at {self.node.site} was never linked to its sink"
        prev, _, ran = st[self.link.idx]
        node: Any = self.node
        if not ran:
            return node.initial if node.has_initial else empty_of(self.kind)
        return prev


class Entry(Op, ABC):
    """A choice point into a tick (role ENTRY), or an aligned identity read (role BODY)."""

    __slots__ = ()

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return vals[self.ins[0]]  # aligned read of a node of the same tick: no choice

    def has_value(self, st: list[Any]) -> bool:
        return True

    @abstractmethod
    def can_advance(self, st: list[Any]) -> bool:
        """Whether a run of the tick could take something this entry has not released yet."""

    @abstractmethod
    def idle_value(self, st: list[Any]) -> Any:
        """What this entry releases into a run that takes nothing new (UNSET: impossible)."""

    @abstractmethod
    def decide(self, w: World, st: list[Any], force: bool, floor: Any = None) -> tuple[Any, bool]:
        """Choose what enters this run of the tick; returns (value, released something new).

        `force` demands something new. With a `floor` (a `mark` taken when partial-order
        reduction put the tick to sleep), "new" means appended after the mark: the options
        that take nothing newer were explored in the sibling branch."""

    @abstractmethod
    def mark(self, st: list[Any]) -> Any:
        """How much is pending now (see `decide`'s floor)."""

    @abstractmethod
    def grown(self, st: list[Any], mark: Any) -> bool:
        """Whether something was appended since `mark`."""


@evaluator(n.Batch)
class BatchOp(Entry):
    """batch(tick): a prefix of the pending elements (per key for keyed streams), or any
    subset of them for NoOrder streams, enters the tick."""

    __slots__ = ("subset", "keyed")

    def setup(self) -> None:
        self.subset = not self.node.meta.ordered
        self.keyed = self.kind is Kind.KEYED_STREAM

    def init_state(self) -> Any:
        return []

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        st[self.idx].extend(delta)
        return NOTHING

    def can_advance(self, st: list[Any]) -> bool:
        return bool(st[self.idx])

    def idle_value(self, st: list[Any]) -> Any:
        return []

    def _sizes(self, pending: list[Any]) -> dict[Any, int]:
        sizes: dict[Any, int] = {}
        for kv in pending:
            sizes[kv[0]] = sizes.get(kv[0], 0) + 1
        return sizes

    def mark(self, st: list[Any]) -> Any:
        pending: list[Any] = st[self.idx]
        return self._sizes(pending) if self.keyed and not self.subset else len(pending)

    def grown(self, st: list[Any], mark: Any) -> bool:
        pending: list[Any] = st[self.idx]
        if self.keyed and not self.subset:
            return any(m > mark.get(k, 0) for k, m in self._sizes(pending).items())
        return len(pending) > int(mark)

    def decide(self, w: World, st: list[Any], force: bool, floor: Any = None) -> tuple[Any, bool]:
        pending: list[Any] = st[self.idx]
        if self.subset:
            out, rest, new = self._subset(w, pending, force, floor or 0)
        elif self.keyed:
            out, rest, new = self._key_prefixes(w, pending, force, floor or {})
        else:
            fl = floor or 0
            lo = fl + 1 if force and len(pending) > fl else 0
            k = lo + w.choose(len(pending) - lo + 1) if len(pending) > lo else lo
            out, rest, new = pending[:k], pending[k:], k > fl
        st[self.idx] = rest
        if w.trace is not None:
            w.note_release(self, out, f"{len(rest)} still pending" if rest else "")
        return out, new

    @staticmethod
    def _subset(w: World, pending: list[Any], force: bool, fl: int) -> tuple[list[Any], list[Any], bool]:
        out: list[Any] = []
        rest: list[Any] = []
        new = False
        last = len(pending) - 1
        for i, x in enumerate(pending):
            take = (force and not new and i == last) or w.choose(2) == 1
            (out if take else rest).append(x)
            new = new or (take and i >= fl)
        return out, rest, new

    def _key_prefixes(
        self, w: World, pending: list[Any], force: bool, floor: dict[Any, int]
    ) -> tuple[list[Any], list[Any], bool]:
        sizes = self._sizes(pending)
        take: dict[Any, int] = {}
        chosen = False
        last = max((i for i, (k, m) in enumerate(sizes.items()) if m > floor.get(k, 0)), default=-1)
        for i, (key, m) in enumerate(sizes.items()):
            fl = floor.get(key, 0)
            lo = fl + 1 if force and not chosen and i == last else 0
            c = lo + w.choose(m - lo + 1) if m > lo else lo
            take[key] = c
            chosen = chosen or c > fl
        out: list[Any] = []
        rest: list[Any] = []
        for kv in pending:
            k = kv[0]
            if take[k] > 0:
                take[k] -= 1
                out.append(kv)
            else:
                rest.append(kv)
        return out, rest, chosen


@evaluator(n.Snapshot)
class SnapshotOp(Entry):
    """snapshot(tick): some version of the changing value, never older than the last one seen.

    State: the last version released and the versions produced since (consecutive equal
    versions are one version). Re-releasing the last version is an option only when the
    tick observes something new elsewhere (otherwise the run is not forced to happen).
    """

    __slots__ = ()

    def init_state(self) -> Any:
        return [UNSET, []]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        last, pending = st[self.idx]
        prev = pending[-1] if pending else last
        if prev is UNSET or not same_value(prev, delta):
            pending.append(delta)
        return NOTHING

    def has_value(self, st: list[Any]) -> bool:
        last, pending = st[self.idx]
        return last is not UNSET or bool(pending)

    def can_advance(self, st: list[Any]) -> bool:
        return bool(st[self.idx][1])

    def idle_value(self, st: list[Any]) -> Any:
        return st[self.idx][0]

    def mark(self, st: list[Any]) -> Any:
        return len(st[self.idx][1])

    def grown(self, st: list[Any], mark: Any) -> bool:
        return len(st[self.idx][1]) > int(mark)

    def decide(self, w: World, st: list[Any], force: bool, floor: Any = None) -> tuple[Any, bool]:
        s = st[self.idx]
        last, pending = s
        fl = floor or 0
        keep = 1 if last is not UNSET and not force else 0  # option 0: the last version again
        lo = fl if force else 0  # forced: one of the versions newer than the floor
        options = len(pending) - lo + keep
        c = w.choose(options) if options > 1 else 0
        if c < keep:
            if w.trace is not None:
                w.note_release(self, last, "unchanged" + (f"; newer versions not taken: {pending}" if pending else ""))
            return last, False
        i = lo + c - keep
        value, skipped, newer = pending[i], pending[:i], pending[i + 1 :]
        s[0], s[1] = value, newer
        if w.trace is not None:
            notes = ([f"skipping {skipped}"] if skipped else []) + (
                [f"newer versions not taken: {newer}"] if newer else []
            )
            w.note_release(self, value, "; ".join(notes))
        return value, i >= fl


@evaluator(n.AllTicks, n.ReleaseAligned)
class AllTicksOp(Op):
    """all_ticks() / release_aligned(): a tick's stream batch emitted at top level after the tick.

    A `ReleaseAligned` whose input is still top-level (its point aligns nothing) passes
    elements through unchanged.
    """

    __slots__ = ()

    def exit(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return vals[self.ins[0]] or NOTHING

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return vals[self.ins[0]]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        return delta


@evaluator(n.Latest)
class LatestOp(Op):
    """latest(): a tick's singleton value as a top-level version, emitted when it changes."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [UNSET]

    def exit(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        v = vals[self.ins[0]]
        s = st[self.idx]
        if s[0] is not UNSET and same_value(s[0], v):
            return NOTHING
        s[0] = v
        return v

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        return delta


@evaluator(n.AssumeOrdering)
class AssumeOrderingOp(Op):
    """assume_ordering(nondet): the order seen is a choice.

    In a tick (or on a carried delta): any permutation of the batch (within each key for
    keyed streams). At top level: arriving elements wait in a buffer and the scheduler
    releases them one at a time, choosing which one comes next.
    """

    __slots__ = ()

    def init_state(self) -> Any:
        return [] if self.role is Role.TOP else None

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return self._permute(w, vals[self.ins[0]])

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        if self.role is not Role.TOP:
            return self._permute(w, delta) or NOTHING
        st[self.idx].extend(delta)
        return NOTHING

    def release(self, w: World, st: list[Any]) -> list[Any]:
        """Scheduler action: take the element that comes next (a choice among the buffer)."""
        buf: list[Any] = st[self.idx]
        i = w.choose(len(buf)) if len(buf) > 1 else 0
        x = buf.pop(i)
        if w.trace is not None:
            w.note_release(self, x, f"{len(buf)} still buffered" if buf else "")
        return [x]

    def _permute(self, w: World, xs: list[Any]) -> list[Any]:
        if len(xs) < 2:
            return list(xs)
        if self.kind is Kind.KEYED_STREAM:
            groups: dict[Any, list[Any]] = {}
            for kv in xs:
                groups.setdefault(kv[0], []).append(kv)
            out = [kv for g in groups.values() for kv in _shuffle(w, g)]
        else:
            out = _shuffle(w, list(xs))
        if w.trace is not None:
            w.note_release(self, out, "order chosen")
        return out


def _shuffle(w: World, xs: list[Any]) -> list[Any]:
    """A chosen permutation (Fisher-Yates: choice i picks the element for position i)."""
    for i in range(len(xs) - 1):
        j = i + w.choose(len(xs) - i)
        xs[i], xs[j] = xs[j], xs[i]
    return xs


@evaluator(n.Sink)
class SinkOp(Op):
    """A named output port: elements are buffered for the test's receivers."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [[], 0]  # outputs, how many the receiver has read

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        st[self.idx][0].extend(delta)
        return NOTHING


@evaluator(n.Send)
class SendOp(Op):
    """send / broadcast / demux: elements enter per-(sender, receiver) FIFO channels; the
    scheduler delivers channel heads in any interleaving (see `World.deliver`)."""

    __slots__ = ("mode", "dest")

    def setup(self) -> None:
        assert isinstance(self.node, n.Send)
        self.mode: n.SendMode = self.node.mode
        self.dest = self.node.dest

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        w.enqueue(self, p, delta)
        return NOTHING
