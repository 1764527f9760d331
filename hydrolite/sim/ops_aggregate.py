"""Evaluators of aggregations: fold, reduce, count, first, last, enumerate, unique.

Inside a tick they aggregate the tick's batch from scratch. At top level (and when carried)
they keep their accumulator across deltas and emit one new version per delta. What each
computes is its kernel's (`hydrolite.kernels`, shared with Spark's Python path); kernels
never mutate what they are given (mutable accumulators are copied on write), so the version
history a snapshot chooses from stays intact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import kernels
from ..ir import nodes as n
from ..ir.meta import Kind
from ..kernels import KernelError
from .registry import Op, evaluator
from .values import EMPTY, NOTHING

if TYPE_CHECKING:
    from .world import World


class Aggregate(Op):
    """Shared shape: `keyed` tells a per-key aggregation (keyed stream input) from a whole one."""

    __slots__ = ("keyed",)

    def setup(self) -> None:
        self.keyed = self.in_kinds[0] is Kind.KEYED_STREAM

    def initial(self, st: list[Any]) -> Any:
        return st[self.idx]


class _Folding(Aggregate):
    """fold / reduce: `kernels.fold_values` (whole) or `kernels.fold_keyed` (per key) from
    `init` (`has_init`; a reduce has none). Kernels never mutate a version (copy-on-write)."""

    __slots__ = ("f", "has_init", "init")

    def setup(self) -> None:
        super().setup()
        node: Any = self.node
        self.has_init: bool = isinstance(node, n.Fold)
        # (a fold's accumulators held as `acc_type=` declares)
        self.f: Callable[[Any, Any], Any] = node.run_fn() if self.has_init else node.f
        self.init: Any = node.run_init() if self.has_init else EMPTY

    def init_state(self) -> Any:
        return {} if self.keyed else kernels.private(self.init) if self.has_init else EMPTY

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        try:
            if self.keyed:
                return kernels.fold_keyed(self.f, {}, self.init, self.has_init, xs)
            has, acc = kernels.fold_values(self.f, self.init, self.has_init, xs)
        except KernelError as e:
            raise self.fail(w, e.element, e.cause) from e.cause
        return acc if has else EMPTY

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        old = st[self.idx]
        new: Any
        try:
            if self.keyed:
                new = dict(old)
                new.update(kernels.fold_keyed(self.f, old, self.init, self.has_init, delta))
            else:
                has, new = kernels.fold_values(self.f, old, old is not EMPTY, delta)
                if not has:
                    new = EMPTY
        except KernelError as e:
            raise self.fail(w, e.element, e.cause) from e.cause
        st[self.idx] = new
        return new


@evaluator(n.Fold)
class FoldOp(_Folding):
    """fold(init, f): acc = f(acc, x) from init (per key for keyed streams)."""

    __slots__ = ()


@evaluator(n.Reduce)
class ReduceOp(_Folding):
    """reduce(f): combine elements pairwise; empty until the first element."""

    __slots__ = ()


@evaluator(n.Count)
class CountOp(Aggregate):
    """count(): the number of elements (per key for keyed streams)."""

    __slots__ = ()

    def init_state(self) -> Any:
        return {} if self.keyed else 0

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        return kernels.count_keyed({}, xs) if self.keyed else kernels.count_values(0, xs)

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        old = st[self.idx]
        new: Any
        if self.keyed:
            new = dict(old)
            new.update(kernels.count_keyed(old, delta))
        else:
            new = kernels.count_values(old, delta)
        st[self.idx] = new
        return new


@evaluator(n.First)
class FirstOp(Aggregate):
    """first(): the first element ever seen (per key); later elements change nothing."""

    __slots__ = ()

    def init_state(self) -> Any:
        return {} if self.keyed else EMPTY

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        if self.keyed:
            return kernels.first_keyed({}, xs)
        has, v = kernels.first_values(False, EMPTY, xs)
        return v if has else EMPTY

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        old = st[self.idx]
        if self.keyed:
            found = kernels.first_keyed(old, delta)
            if not found:
                return NOTHING
            new = dict(old)
            new.update(found)
            st[self.idx] = new
            return new
        has, v = kernels.first_values(old is not EMPTY, old, delta)
        if not has or v is old:  # no element yet, or the first one was already emitted
            return NOTHING
        st[self.idx] = v
        return v


@evaluator(n.Last)
class LastOp(Aggregate):
    """last(): the most recent element (per key)."""

    __slots__ = ()

    def init_state(self) -> Any:
        return {} if self.keyed else EMPTY

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        xs = vals[self.ins[0]]
        if self.keyed:
            return kernels.last_keyed(xs)
        has, v = kernels.last_values(False, EMPTY, xs)
        return v if has else EMPTY

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        if not delta:
            return NOTHING
        old = st[self.idx]
        if self.keyed:
            new = {**old, **kernels.last_keyed(delta)}
        else:
            new = kernels.last_values(old is not EMPTY, old, delta)[1]
        st[self.idx] = new
        return new


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
            return kernels.enumerate_keyed(counter, xs)
        out = kernels.enumerate_values(counter[0], xs)
        counter[0] += len(xs)
        return out

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return self._run({} if self.keyed else [0], vals[self.ins[0]])

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        return self._run(st[self.idx], delta) or NOTHING


@evaluator(n.Unique)
class UniqueOp(Op):
    """unique(): drop elements (keyed: (k, v) pairs) seen before: in the batch, or ever at top level."""

    __slots__ = ()

    def init_state(self) -> Any:
        return kernels.Seen()

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return kernels.unique_values(kernels.Seen(), vals[self.ins[0]])

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        return kernels.unique_values(st[self.idx], delta) or NOTHING
