"""Evaluators of element-wise and reshaping operators (no state across deltas, except keys()).

Each computes the same function of its input in every role: on a tick's whole value, on a
top-level delta (new stream elements) or on a new singleton version. What an operator does
to elements is its kernel's (`hydrolite.kernels`, shared with Spark's Python path); this
module only maps collection kinds onto kernel calls and reports failures at the site.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .. import kernels
from ..ir import nodes as n
from ..ir.meta import Kind
from ..kernels import KernelError
from .registry import Op, evaluator
from .values import EMPTY, NOTHING

if TYPE_CHECKING:
    from .world import World

Apply = Callable[["World", Any], Any]
Kernel = Callable[[Callable[..., Any], Sequence[Any]], Any]


def _no_semantics(op: Op) -> TypeError:
    return TypeError(f"{op.node.op}() has no simulator semantics for a {op.in_kinds[0].value} input")


class Stateless(Op):
    """An operator computing a function of one input value; `self.apply` is chosen by kind."""

    __slots__ = ("apply", "f")

    def setup(self) -> None:
        self.f: Callable[..., Any] = getattr(self.node, "f", None) or (lambda x: x)
        table: dict[Kind, Apply] = self.table()
        in_kind = self.in_kinds[0]
        if in_kind not in table:
            raise _no_semantics(self)
        self.apply: Apply = table[in_kind]

    def table(self) -> dict[Kind, Apply]:
        """Kind of the input -> the function computing the output."""
        raise NotImplementedError

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return self.apply(w, vals[self.ins[0]])

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        out = self.apply(w, delta)
        if self.streamlike and not out:
            return NOTHING
        return out


class _Elementwise(Op):
    """map / filter / filter_map / flat_map / inspect: the operator's kernels (`hydrolite.kernels`)
    over a stream, a keyed stream, a singleton (a batch of one value) or a keyed singleton.

    `KERNELS` are the kernels over values and over (key, value) pairs; `run` is the one for
    this input's kind, picked once. A failing user function (`KernelError`) is reported at
    this operator's site with the kernel's element.
    """

    __slots__ = ("f", "run")
    KERNELS: ClassVar[tuple[Kernel, Kernel]]

    def setup(self) -> None:
        node: Any = self.node
        # (map / filter_map: results held as the function's return annotation declares)
        self.f: Callable[..., Any] = node.run_fn() if isinstance(node, (n.Map, n.FilterMap)) else node.f
        run = self.by_kind().get(self.in_kinds[0])
        if run is None:
            raise _no_semantics(self)
        self.run: Kernel = run

    def by_kind(self) -> dict[Kind, Kernel]:
        """Kind of the input -> the kernel computing the output."""
        values, keyed = self.KERNELS
        one = _on_singleton(values)
        return {
            Kind.STREAM: values,
            Kind.KEYED_STREAM: keyed,
            Kind.SINGLETON: one,
            Kind.OPTIONAL: one,
            Kind.KEYED_SINGLETON: _on_map(keyed),
        }

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        try:
            return self.run(self.f, vals[self.ins[0]])
        except KernelError as e:
            raise self.fail(w, e.element, e.cause) from e.cause

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        try:
            out = self.run(self.f, delta)
        except KernelError as e:
            raise self.fail(w, e.element, e.cause) from e.cause
        if self.streamlike and not out:
            return NOTHING
        return out


def _on_singleton(kernel: Kernel) -> Kernel:
    """A kernel on a singleton's value, a batch of one; an empty result empties the singleton."""

    def run(f: Callable[..., Any], v: Any) -> Any:
        if v is EMPTY:
            return EMPTY
        out = kernel(f, [v])
        return out[0] if out else EMPTY

    return run


def _on_map(keyed: Kernel) -> Kernel:
    """A keyed kernel on a keyed singleton's map."""

    def run(f: Callable[..., Any], d: Any) -> Any:
        return dict(keyed(f, list(d.items())))

    return run


@evaluator(n.Map)
class MapOp(_Elementwise):
    """map(f): f applied to each element / value / version."""

    __slots__ = ()
    KERNELS = (kernels.map_values, kernels.map_keyed)


@evaluator(n.Filter)
class FilterOp(_Elementwise):
    """filter(f): keep elements / values where f holds; a singleton becomes empty otherwise."""

    __slots__ = ()
    KERNELS = (kernels.filter_values, kernels.filter_keyed)


@evaluator(n.FilterMap)
class FilterMapOp(_Elementwise):
    """filter_map(f): f applied, None results dropped (a singleton becomes empty)."""

    __slots__ = ()
    KERNELS = (kernels.filter_map_values, kernels.filter_map_keyed)


@evaluator(n.FlatMap)
class FlatMapOp(_Elementwise):
    """flat_map(f): every element of f(x), in the iterable's order (a singleton's: a stream)."""

    __slots__ = ()
    KERNELS = (kernels.flat_map_values, kernels.flat_map_keyed)

    def by_kind(self) -> dict[Kind, Kernel]:
        values, keyed = self.KERNELS

        def one(f: Callable[..., Any], v: Any) -> Any:
            return [] if v is EMPTY else values(f, [v])

        return {Kind.STREAM: values, Kind.KEYED_STREAM: keyed, Kind.SINGLETON: one, Kind.OPTIONAL: one}


@evaluator(n.Inspect)
class InspectOp(_Elementwise):
    """inspect(f): call f on each element / value for its side effect."""

    __slots__ = ()
    KERNELS = (kernels.inspect_values, kernels.inspect_keyed)


@evaluator(n.UnwrapOr, n.IntoSingleton)
class UnwrapOp(Stateless):
    """unwrap_or(default) / into_singleton(): an empty optional becomes default / None."""

    __slots__ = ("default",)

    def table(self) -> dict[Kind, Apply]:
        self.default = getattr(self.node, "default", None)
        return {Kind.OPTIONAL: self._one, Kind.SINGLETON: self._one}

    def _one(self, w: World, v: Any) -> Any:
        return self.default if v is EMPTY else v


@evaluator(n.IntoStream)
class IntoStreamOp(Stateless):
    """into_stream(): this tick's value as a stream of zero or one element."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {Kind.SINGLETON: self._one, Kind.OPTIONAL: self._one}

    def _one(self, w: World, v: Any) -> list[Any]:
        return [] if v is EMPTY else [v]


@evaluator(n.IntoKeyed)
class IntoKeyedOp(Stateless):
    """into_keyed(): (k, v) pairs as a keyed stream; anything else is an error at this site."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {Kind.STREAM: self._pairs}

    def _pairs(self, w: World, xs: list[Any]) -> list[Any]:
        try:
            return kernels.split_pairs(xs)
        except KernelError as e:
            raise self.fail(w, e.element, e.cause) from e.cause


@evaluator(n.Entries)
class EntriesOp(Stateless):
    """entries(): a keyed collection as (k, v) pairs."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {Kind.KEYED_STREAM: lambda w, kvs: kvs, Kind.KEYED_SINGLETON: lambda w, d: list(d.items())}


@evaluator(n.Values)
class ValuesOp(Stateless):
    """values(): the values of a keyed collection, keys dropped."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {
            Kind.KEYED_STREAM: lambda w, kvs: [kv[1] for kv in kvs],
            Kind.KEYED_SINGLETON: lambda w, d: list(d.values()),
        }


@evaluator(n.WeakenOrdering, n.AlignedAt)
class IdentityOp(Stateless):
    """weaken_ordering() / aligned_at(): the same elements (only the type changes)."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        def same(w: World, v: Any) -> Any:
            return v

        return dict.fromkeys(Kind, same)


@evaluator(n.Sort)
class SortOp(Stateless):
    """sort(key): the bounded stream sorted (stable)."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {Kind.STREAM: self._sort}

    def _sort(self, w: World, xs: list[Any]) -> list[Any]:
        try:
            return kernels.sort_values(getattr(self.node, "key", None), xs)
        except KernelError as e:
            raise self.fail(w, e.element, e.cause) from e.cause


@evaluator(n.Keys)
class KeysOp(Op):
    """keys(): each key once (a keyed stream's first appearance; a keyed singleton's keys)."""

    __slots__ = ()

    def init_state(self) -> Any:
        return set() if self.in_kinds[0] is Kind.KEYED_STREAM else None

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        v = vals[self.ins[0]]
        if self.in_kinds[0] is Kind.KEYED_SINGLETON:
            return list(v)
        return list(dict.fromkeys(kv[0] for kv in v))

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        if self.in_kinds[0] is Kind.KEYED_SINGLETON:
            return list(delta)
        seen: set[Any] = st[self.idx]
        out = []
        for kv in delta:
            if kv[0] not in seen:
                seen.add(kv[0])
                out.append(kv[0])
        return out or NOTHING
