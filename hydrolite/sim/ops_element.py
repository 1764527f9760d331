"""Evaluators of element-wise and reshaping operators (no state across deltas, except keys()).

Each computes the same function of its input in every role: on a tick's whole value, on a
top-level delta (new stream elements) or on a new singleton version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..ir import nodes as n
from ..ir.meta import Kind
from .registry import Op, evaluator
from .values import EMPTY, NOTHING

if TYPE_CHECKING:
    from .world import World

Apply = Callable[["World", Any], Any]


class Stateless(Op):
    """An operator computing a function of one input value; `self.apply` is chosen by kind."""

    __slots__ = ("apply", "f")

    def setup(self) -> None:
        self.f: Callable[..., Any] = getattr(self.node, "f", None) or (lambda x: x)
        table: dict[Kind, Apply] = self.table()
        in_kind = self.in_kinds[0]
        if in_kind not in table:
            raise TypeError(f"{self.node.op}() has no simulator semantics for a {in_kind.value} input")
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


_DROP: Any = object()  # "no output for this element"


class _PerElement(Stateless):
    """map / filter / filter_map: at most one output per element, value or version.

    Subclasses only say what one element becomes (`one`, or `_DROP`); the loops over each
    kind of input are shared, so the three operators cannot drift apart.
    """

    __slots__ = ("one",)

    def table(self) -> dict[Kind, Apply]:
        self.one: Callable[[Any], Any] = self.per_element(self.f)
        return {
            Kind.STREAM: self._stream,
            Kind.KEYED_STREAM: self._keyed,
            Kind.SINGLETON: self._scalar,
            Kind.OPTIONAL: self._scalar,
            Kind.KEYED_SINGLETON: self._map,
        }

    @staticmethod
    def per_element(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """What one element becomes: a value, or `_DROP`."""
        raise NotImplementedError

    def _stream(self, w: World, xs: list[Any]) -> list[Any]:
        one, out = self.one, []
        try:
            for x in xs:
                r = one(x)
                if r is not _DROP:
                    out.append(r)
        except Exception as e:
            raise self.fail(w, x, e) from e
        return out

    def _keyed(self, w: World, kvs: list[Any]) -> list[Any]:
        one, out = self.one, []
        try:
            for kv in kvs:
                r = one(kv[1])
                if r is not _DROP:
                    out.append((kv[0], r))
        except Exception as e:
            raise self.fail(w, kv, e) from e
        return out

    def _scalar(self, w: World, v: Any) -> Any:
        if v is EMPTY:
            return EMPTY
        try:
            r = self.one(v)
        except Exception as e:
            raise self.fail(w, v, e) from e
        return EMPTY if r is _DROP else r

    def _map(self, w: World, d: dict[Any, Any]) -> dict[Any, Any]:
        return dict(self._keyed(w, list(d.items())))


@evaluator(n.Map)
class MapOp(_PerElement):
    """map(f): f applied to each element / value / version."""

    __slots__ = ()

    @staticmethod
    def per_element(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return f


@evaluator(n.Filter)
class FilterOp(_PerElement):
    """filter(f): keep elements / values where f holds; a singleton becomes empty otherwise."""

    __slots__ = ()

    @staticmethod
    def per_element(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda x: x if f(x) else _DROP


@evaluator(n.FilterMap)
class FilterMapOp(_PerElement):
    """filter_map(f): f applied, None results dropped (a singleton becomes empty)."""

    __slots__ = ()

    @staticmethod
    def per_element(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def one(x: Any) -> Any:
            r = f(x)
            return _DROP if r is None else r

        return one


@evaluator(n.FlatMap)
class FlatMapOp(Stateless):
    """flat_map(f): every element of f(x), in the iterable's order."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {Kind.STREAM: self._stream, Kind.KEYED_STREAM: self._keyed, Kind.SINGLETON: self._one, Kind.OPTIONAL: self._one}

    def _stream(self, w: World, xs: list[Any]) -> list[Any]:
        f, out = self.f, []
        try:
            for x in xs:
                out.extend(f(x))
        except Exception as e:
            raise self.fail(w, x, e) from e
        return out

    def _keyed(self, w: World, kvs: list[Any]) -> list[Any]:
        f, out = self.f, []
        try:
            for kv in kvs:
                out.extend([(kv[0], u) for u in f(kv[1])])
        except Exception as e:
            raise self.fail(w, kv, e) from e
        return out

    def _one(self, w: World, v: Any) -> list[Any]:
        return [] if v is EMPTY else self._stream(w, [v])


@evaluator(n.Inspect)
class InspectOp(Stateless):
    """inspect(f): call f on each element / value for its side effect."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {
            Kind.STREAM: self._stream,
            Kind.KEYED_STREAM: self._keyed,
            Kind.SINGLETON: self._one,
            Kind.OPTIONAL: self._one,
            Kind.KEYED_SINGLETON: self._map,
        }

    def _stream(self, w: World, xs: list[Any]) -> list[Any]:
        f = self.f
        try:
            for x in xs:
                f(x)
        except Exception as e:
            raise self.fail(w, x, e) from e
        return xs

    def _keyed(self, w: World, kvs: list[Any]) -> list[Any]:
        self._stream(w, [kv[1] for kv in kvs])
        return kvs

    def _one(self, w: World, v: Any) -> Any:
        if v is not EMPTY:
            self._stream(w, [v])
        return v

    def _map(self, w: World, d: dict[Any, Any]) -> dict[Any, Any]:
        self._stream(w, list(d.values()))
        return d


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
        for x in xs:
            if type(x) is not tuple or len(x) != 2:
                raise self.fail(w, x, TypeError("into_keyed() needs (key, value) tuples"))
        return xs


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
        return {Kind.KEYED_STREAM: lambda w, kvs: [kv[1] for kv in kvs], Kind.KEYED_SINGLETON: lambda w, d: list(d.values())}


@evaluator(n.WeakenOrdering, n.AlignedAt)
class IdentityOp(Stateless):
    """weaken_ordering() / aligned_at(): the same elements (only the type changes)."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        same: Apply = lambda w, v: v  # noqa: E731
        return {k: same for k in Kind}


@evaluator(n.Sort)
class SortOp(Stateless):
    """sort(key): the bounded stream sorted (stable)."""

    __slots__ = ()

    def table(self) -> dict[Kind, Apply]:
        return {Kind.STREAM: self._sort}

    def _sort(self, w: World, xs: list[Any]) -> list[Any]:
        key: Any = getattr(self.node, "key", None)
        try:
            return sorted(xs, key=key)
        except Exception as e:
            raise self.fail(w, xs, e) from e


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
