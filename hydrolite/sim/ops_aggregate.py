"""Evaluators of aggregations: fold, reduce, count, first, last, enumerate, unique.

Inside a tick they aggregate the tick's batch from scratch. At top level (and when carried)
they keep their accumulator across deltas and emit one new version per delta; versions are
never mutated afterwards (mutable accumulators are copied before each update), so the
version history a snapshot chooses from stays intact.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Callable

from ..ir import nodes as n
from ..ir.meta import Kind
from .registry import Op, evaluator
from .values import EMPTY, NOTHING, fresh, immutable

if TYPE_CHECKING:
    from .world import World


class Aggregate(Op):
    """Shared shape: `keyed` tells a per-key aggregation (keyed stream input) from a whole one."""

    __slots__ = ("keyed",)

    def setup(self) -> None:
        self.keyed = self.in_kinds[0] is Kind.KEYED_STREAM

    def initial(self, st: list[Any]) -> Any:
        return st[self.idx]


@evaluator(n.Fold)
class FoldOp(Aggregate):
    """fold(init, f): acc = f(acc, x) from init (per key for keyed streams)."""

    __slots__ = ("f", "init", "shared")

    def setup(self) -> None:
        super().setup()
        node: Any = self.node
        self.f: Callable[[Any, Any], Any] = node.f
        self.init: Any = node.init
        self.shared = immutable(node.init)  # accumulators can be shared without copying

    def init_state(self) -> Any:
        return {} if self.keyed else fresh(self.init)

    def _run(self, w: World, acc: Any, xs: list[Any]) -> Any:
        f = self.f
        try:
            for x in xs:
                acc = f(acc, x)
        except Exception as e:
            raise self.fail(w, x, e) from e
        return acc

    def _run_keyed(self, w: World, d: dict[Any, Any], kvs: list[Any]) -> dict[Any, Any]:
        f, init = self.f, self.init
        try:
            for kv in kvs:
                k = kv[0]
                d[k] = f(d[k] if k in d else fresh(init), kv[1])
        except Exception as e:
            raise self.fail(w, kv, e) from e
        return d

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        return self._run_keyed(w, {}, xs) if self.keyed else self._run(w, fresh(self.init), xs)

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        old = st[self.idx]
        if self.keyed:
            new = self._run_keyed(w, dict(old) if self.shared else copy.deepcopy(old), delta)
        else:
            new = self._run(w, old if self.shared else copy.deepcopy(old), delta)
        st[self.idx] = new
        return new


@evaluator(n.Reduce)
class ReduceOp(Aggregate):
    """reduce(f): combine elements pairwise; empty until the first element."""

    __slots__ = ("f",)

    def setup(self) -> None:
        super().setup()
        self.f: Callable[[Any, Any], Any] = getattr(self.node, "f")

    def init_state(self) -> Any:
        return {} if self.keyed else EMPTY

    def _step(self, w: World, acc: Any, x: Any) -> Any:
        if acc is EMPTY:
            return x
        try:
            return self.f(acc if immutable(acc) else copy.deepcopy(acc), x)
        except Exception as e:
            raise self.fail(w, x, e) from e

    def _run_keyed(self, w: World, d: dict[Any, Any], kvs: list[Any]) -> dict[Any, Any]:
        for k, v in kvs:
            d[k] = self._step(w, d.get(k, EMPTY), v)
        return d

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        if self.keyed:
            return self._run_keyed(w, {}, xs)
        acc: Any = EMPTY
        for x in xs:
            acc = self._step(w, acc, x)
        return acc

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        if self.keyed:
            st[self.idx] = self._run_keyed(w, dict(st[self.idx]), delta)
        else:
            acc = st[self.idx]
            for x in delta:
                acc = self._step(w, acc, x)
            st[self.idx] = acc
        return st[self.idx]


@evaluator(n.Count)
class CountOp(Aggregate):
    """count(): the number of elements (per key for keyed streams)."""

    __slots__ = ()

    def init_state(self) -> Any:
        return {} if self.keyed else 0

    def _keyed(self, d: dict[Any, Any], kvs: list[Any]) -> dict[Any, Any]:
        for kv in kvs:
            d[kv[0]] = d.get(kv[0], 0) + 1
        return d

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        return self._keyed({}, xs) if self.keyed else len(xs)

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        old = st[self.idx]
        st[self.idx] = self._keyed(dict(old), delta) if self.keyed else old + len(delta)
        return st[self.idx]


@evaluator(n.First)
class FirstOp(Aggregate):
    """first(): the first element ever seen (per key); later elements change nothing."""

    __slots__ = ()

    def init_state(self) -> Any:
        return {} if self.keyed else EMPTY

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        if self.keyed:
            d: dict[Any, Any] = {}
            for k, v in xs:
                d.setdefault(k, v)
            return d
        return xs[0] if xs else EMPTY

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        old = st[self.idx]
        if self.keyed:
            new_keys = [kv for kv in delta if kv[0] not in old]
            if not new_keys:
                return NOTHING
            d = dict(old)
            for k, v in new_keys:
                d.setdefault(k, v)
            st[self.idx] = d
            return d
        if old is not EMPTY or not delta:
            return NOTHING
        st[self.idx] = delta[0]
        return delta[0]


@evaluator(n.Last)
class LastOp(Aggregate):
    """last(): the most recent element (per key)."""

    __slots__ = ()

    def init_state(self) -> Any:
        return {} if self.keyed else EMPTY

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        if self.keyed:
            return dict(xs)
        return xs[-1] if xs else EMPTY

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        if not delta:
            return NOTHING
        st[self.idx] = {**st[self.idx], **dict(delta)} if self.keyed else delta[-1]
        return st[self.idx]


@evaluator(n.Enumerate)
class EnumerateOp(Op):
    """enumerate(): (index, x), the index counting per key for keyed streams."""

    __slots__ = ("keyed",)

    def setup(self) -> None:
        self.keyed = self.in_kinds[0] is Kind.KEYED_STREAM

    def init_state(self) -> Any:
        return {} if self.keyed else [0]

    def _run(self, counter: Any, xs: list[Any]) -> list[Any]:
        if self.keyed:
            out = []
            for k, v in xs:
                i = counter.get(k, 0)
                counter[k] = i + 1
                out.append((k, (i, v)))
            return out
        start = counter[0]
        counter[0] = start + len(xs)
        return list(enumerate(xs, start))

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return self._run({} if self.keyed else [0], vals[self.ins[0]])

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        return self._run(st[self.idx], delta) or NOTHING


class _Seen:
    """A set that also accepts unhashable elements (compared by equality)."""

    __slots__ = ("hashed", "other")

    def __init__(self) -> None:
        self.hashed: set[Any] = set()
        self.other: list[Any] = []

    def add(self, x: Any) -> bool:
        """Record x; True when it was new."""
        try:
            if x in self.hashed:
                return False
            self.hashed.add(x)
            return True
        except TypeError:
            if x in self.other:
                return False
            self.other.append(x)
            return True


@evaluator(n.Unique)
class UniqueOp(Op):
    """unique(): drop elements (keyed: (k, v) pairs) seen before: in the batch, or ever at top level."""

    __slots__ = ()

    def init_state(self) -> Any:
        return _Seen()

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        seen = _Seen()
        return [x for x in vals[self.ins[0]] if seen.add(x)]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        seen: _Seen = st[self.idx]
        return [x for x in delta if seen.add(x)] or NOTHING
