"""Evaluators of two-input operators: crosses, joins, chain, merge, zip and keyed lookups.

Inside a tick they combine the two inputs' tick values. At top level (and when carried) they
keep what each side has produced so far: a new element on one side meets everything the
other side has produced (symmetric joins), and a bounded side is held as its latest value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir import nodes as n
from ..ir.roles import Role
from .errors import SimUsageError
from .registry import Op, evaluator
from .values import EMPTY, NOTHING, UNSET

if TYPE_CHECKING:
    from .world import World

_BOUNDED = (Role.BODY, Role.STATIC, Role.ENTRY)


def _await_right(s: list[Any], port: int, delta: Any) -> list[Any] | None:
    """Top level, stream x changing value: which left elements to emit now, if any.

    `s` is [right's latest value or UNSET, left elements waiting for a first value]. Left
    elements wait until the right side has a value; a right update releases those waiting.
    """
    if port == 1:
        s[0] = delta
        if not s[1]:
            return None
        waiting: list[Any] = s[1]
        s[1] = []
        return waiting
    if s[0] is UNSET:
        s[1].extend(delta)
        return None
    return list(delta)


@evaluator(n.CrossSingleton)
class CrossSingletonOp(Op):
    """cross_singleton(): (x, value) for each element x; nothing while an optional is empty."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [UNSET, []]  # the singleton's latest value, left elements waiting for one

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        r = vals[self.ins[1]]
        return [] if r is EMPTY else [(x, r) for x in vals[self.ins[0]]]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        s = st[self.idx]
        left = _await_right(s, port, delta)
        if left is None or s[0] is EMPTY:
            return NOTHING
        r = s[0]
        return [(x, r) for x in left] or NOTHING


@evaluator(n.CrossProduct)
class CrossProductOp(Op):
    """cross_product(): every pair (x, y); at top level each new element meets the other side so far."""

    __slots__ = ()

    def init_state(self) -> Any:
        return ([], [])

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return [(x, y) for x in vals[self.ins[0]] for y in vals[self.ins[1]]]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        lefts, rights = st[self.idx]
        if port == 0:
            out = [(x, y) for x in delta for y in rights]
            lefts.extend(delta)
        else:
            out = [(x, y) for x in lefts for y in delta]
            rights.extend(delta)
        return out or NOTHING


def _index(kvs: list[Any]) -> dict[Any, list[Any]]:
    idx: dict[Any, list[Any]] = {}
    for k, v in kvs:
        idx.setdefault(k, []).append(v)
    return idx


@evaluator(n.Join)
class JoinOp(Op):
    """join(): (k, (v1, v2)) for every pair of elements with equal keys (a symmetric hash join).
    The pair's key is the left element's, as that element holds it: keys equal in Python may
    come in two forms (`1` and `1.0`), and which side arrived last must not decide which."""

    __slots__ = ()

    def init_state(self) -> Any:
        return ({}, {})  # per side: key -> [(the element's own key, value)]

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        right = _index(self._pairs(w, vals[self.ins[1]]))
        return [(k, (v1, v2)) for k, v1 in self._pairs(w, vals[self.ins[0]]) for v2 in right.get(k, ())]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        mine, other = st[self.idx][port], st[self.idx][1 - port]
        out = []
        for k, v in self._pairs(w, delta):
            mine.setdefault(k, []).append((k, v))
            for ok, o in other.get(k, ()):
                out.append((k, (v, o)) if port == 0 else (ok, (o, v)))
        return out or NOTHING

    def _pairs(self, w: World, xs: list[Any]) -> list[Any]:
        for x in xs:
            if type(x) is not tuple or len(x) != 2:
                raise self.fail(w, x, TypeError("join() needs (key, value) tuples on both sides"))
        return xs


@evaluator(n.AntiJoin)
class AntiJoinOp(Op):
    """anti_join(): the (k, v) elements of the left side whose k is not among the right side's keys."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [UNSET, []]  # the key set, left elements waiting for it

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        keys = self._keys(w, vals[self.ins[1]])
        return [kv for kv in vals[self.ins[0]] if kv[0] not in keys]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        s = st[self.idx]
        if port == 1:
            new = self._keys(w, delta)
            # a bounded right side is replaced by its latest value; an unbounded one grows
            s[0] = new if self.in_roles[1] in _BOUNDED or s[0] is UNSET else s[0] | new
            if not s[1]:
                return NOTHING
            delta, s[1] = s[1], []
        elif s[0] is UNSET:
            s[1].extend(delta)
            return NOTHING
        keys = s[0]
        return [kv for kv in delta if kv[0] not in keys] or NOTHING

    def _keys(self, w: World, xs: list[Any]) -> set[Any]:
        try:
            return set(xs)
        except TypeError as e:
            raise self.fail(w, xs, e) from e


@evaluator(n.Chain)
class ChainOp(Op):
    """chain(): all of the left batch, then all of the right one."""

    __slots__ = ()

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return vals[self.ins[0]] + vals[self.ins[1]]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        raise SimUsageError(
            f"chain() at {self.node.site} received an unbounded input; chain is only defined on "
            "bounded streams (one batch of a tick, or a finite source)"
        )


@evaluator(n.MergeUnordered)
class MergeOp(Op):
    """merge_unordered(): the elements of both sides, as they arrive."""

    __slots__ = ()

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return vals[self.ins[0]] + vals[self.ins[1]]

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        return delta


@evaluator(n.Zip)
class ZipOp(Op):
    """zip(): (a, b) of two singletons; empty while either optional side is empty."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [UNSET, UNSET]

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        a, b = vals[self.ins[0]], vals[self.ins[1]]
        return EMPTY if a is EMPTY or b is EMPTY else (a, b)

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        s = st[self.idx]
        s[port] = delta
        a, b = s
        if a is UNSET or b is UNSET:
            return NOTHING
        return EMPTY if a is EMPTY or b is EMPTY else (a, b)


@evaluator(n.KeyedLookup)
class KeyedLookupOp(Op):
    """lookup_keyed_singleton / get_many_if_present: (k, (v, table[k])) for each request (k, v)."""

    __slots__ = ("keep",)

    def setup(self) -> None:
        assert isinstance(self.node, n.KeyedLookup)
        self.keep: bool = self.node.keep_missing

    def init_state(self) -> Any:
        return [UNSET, []]

    def _lookup(self, table: dict[Any, Any], kvs: list[Any]) -> list[Any]:
        out = []
        for k, v in kvs:
            if k in table:
                out.append((k, (v, table[k])))
            elif self.keep:
                out.append((k, (v, None)))
        return out

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return self._lookup(vals[self.ins[1]], vals[self.ins[0]])

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        s = st[self.idx]
        left = _await_right(s, port, delta)
        return NOTHING if left is None else self._lookup(s[0], left) or NOTHING


@evaluator(n.KeyedGet)
class KeyedGetOp(Op):
    """get(): the keyed singleton's value at the key held by a singleton (empty when absent)."""

    __slots__ = ()

    def init_state(self) -> Any:
        return [UNSET, UNSET]

    def _get(self, w: World, table: dict[Any, Any], key: Any) -> Any:
        if key is EMPTY:
            return EMPTY
        try:
            return table.get(key, EMPTY)
        except TypeError as e:  # an unhashable key
            raise self.fail(w, key, e) from e

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        return self._get(w, vals[self.ins[0]], vals[self.ins[1]])

    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        s = st[self.idx]
        s[port] = delta
        if s[0] is UNSET or s[1] is UNSET:
            return NOTHING
        return self._get(w, s[0], s[1])
