"""HL030-HL032 (inconsistent reads from the alignment proposal) and HL040 (legacy atomic).

These follow values through method chains and through names bound once by plain
assignment, within one module; they never guess across function calls.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import libcst as cst

from .findings import Issue
from .model import BindingKind, CallInfo, ModuleModel, Scope, dotted
from .rules import SINGLETON_PASSTHROUGH, STATE_READS

_MAX_DEPTH = 32
_ALIGN_FIX = (
    "keep the state at top level and read it with .snapshot_aligned(tick, align, nondet(...)) at an align point "
    "(align = <location>.local_align_point()), releasing the outputs it must agree with via .release_aligned(align)"
)


def check_flow(model: ModuleModel) -> list[Issue]:
    """Every HL030/HL031/HL032/HL040 issue in the module."""
    issues: list[Issue] = []
    consumed_end_atomic: set[int] = set()
    for call in model.calls:
        method = call.method
        func = call.node.func
        if method == "snapshot" and isinstance(func, cst.Attribute):
            origin = _read_back_origin(model, func.value, call.scope, call.order)
            if origin == "latest":
                issues.append(
                    Issue(
                        "HL030",
                        "`.latest()` then `.snapshot(...)` reads a tick's value back asynchronously, so it may see an older version than that tick's outputs; "
                        + _ALIGN_FIX,
                        func.attr,
                    )
                )
            elif origin == "end_atomic":
                if isinstance(func.value, cst.Call):
                    consumed_end_atomic.add(id(func.value))
                issues.append(
                    Issue(
                        "HL031",
                        "`.end_atomic().snapshot(...)` is asynchronous after end_atomic(), so it is not consistent with the atomic section (and hydrolite has no atomic()); "
                        + _ALIGN_FIX,
                        func.attr,
                    )
                )
    for call in model.calls:
        issue = _legacy_atomic(model, call, consumed_end_atomic)
        if issue is not None:
            issues.append(issue)
    issues.extend(_Entanglement(model).issues())
    issues.extend(_MultiRead(model).issues())
    return issues


def _read_back_origin(model: ModuleModel, expr: cst.BaseExpression, scope: Scope, order: int) -> str | None:
    """ "latest" / "end_atomic" when `expr` is (an element-wise map of) such a call."""
    for _ in range(_MAX_DEPTH):
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method in ("latest", "end_atomic"):
                return method
            if method not in SINGLETON_PASSTHROUGH:
                return None
            expr = expr.func.value
        elif isinstance(expr, cst.Name):
            binding = model.resolve(expr.value, scope, order)
            if binding is None or binding.kind is not BindingKind.ASSIGN or binding.value is None:
                return None
            expr, scope, order = binding.value, binding.scope, binding.order
        else:
            return None
    return None


def _legacy_atomic(model: ModuleModel, call: CallInfo, consumed: set[int]) -> Issue | None:
    func = call.node.func
    qualname = model.qualname(func, call.scope, call.order)
    name = qualname.rsplit(".", 1)[-1] if qualname is not None and qualname.startswith("hydrolite.") else None
    if name is None and isinstance(func, cst.Attribute):
        receiver = model.qualname(func.value, call.scope, call.order)
        if receiver is not None and not receiver.startswith("hydrolite"):
            return None  # e.g. django.db.transaction.atomic(...)
        args = call.node.args
        if func.attr.value == "atomic" and len(args) == 1 and args[0].keyword is None and not args[0].star:
            name = "atomic"
        elif func.attr.value == "end_atomic" and not args and id(call.node) not in consumed:
            name = "end_atomic"
    anchor = func.attr if isinstance(func, cst.Attribute) else func
    if name == "atomic":
        return Issue(
            "HL040", "`.atomic(tick)` is Hydro's legacy API and does not exist in hydrolite; " + _ALIGN_FIX, anchor
        )
    if name == "end_atomic":
        return Issue(
            "HL040",
            "`.end_atomic()` does not exist in hydrolite (there is no atomic section to end); release the stream with .release_aligned(align) where it must agree with aligned reads",
            anchor,
        )
    return None


# ---------------------------------------------------------------------- HL032
@dataclass(frozen=True, eq=False)
class _Batch:
    """A `.batch(tick, ...)` call: which tick, and which stream (its root) it batches."""

    node: cst.Call
    tick: Hashable
    tick_text: str
    root: Hashable
    root_text: str


class _Entanglement:
    """HL032: a query batched into a tick only to read state another stream builds there.

    Flagged at `Q.batch(t, ...)` when, in one module:
      1. a state read `R` (`x.cross_singleton(y)`, `x.lookup_keyed_singleton(y)`, or
         `y.get_many_if_present(x)`) has its query side `x` derived from `Q.batch(t, ...)`;
      2. its state side `y` is derived from `S.batch(t, ...)` on the same tick `t`, where
         `S` and `Q` have different roots and neither batch feeds the other side of `R`;
      3. the `S` batch also leaves the tick through `.all_ticks()` by a path that does not
         involve the `Q` batch: the tick is shared so that the query agrees with `S`'s
         outputs, which is what an align point expresses without entangling the two.
    "Derived" follows receivers and arguments of calls and names bound by plain
    assignment; lambdas are not followed. Plain `.snapshot(t, ...)` of top-level state
    into a query's own tick is the normal pattern and never matches.
    """

    entry = "batch"  # the tick entry whose calls `derive` collects

    def __init__(self, model: ModuleModel) -> None:
        self.model = model
        self.calls = {id(c.node): c for c in model.calls}
        self.memo: dict[int, frozenset[_Batch]] = {}
        self.batches: dict[int, _Batch] = {}
        self.released: dict[int, set[_Batch]] = {}

    def issues(self) -> list[Issue]:
        flagged: dict[int, Issue] = {}
        for call in self.model.calls:
            side = STATE_READS.get(call.method or "")
            if side is None or not call.node.args:
                continue
            func = call.node.func
            assert isinstance(func, cst.Attribute)
            receiver, argument = func.value, call.node.args[0].value
            query_expr, state_expr = (receiver, argument) if side == "receiver" else (argument, receiver)
            queries = self.derive(query_expr, call.scope, call.order, 0)
            states = self.derive(state_expr, call.scope, call.order, 0)
            for q in queries:
                for s in states:
                    if q.tick != s.tick or q.root == s.root or s in queries or q in states or id(q.node) in flagged:
                        continue
                    if s in self.released_batches(q):
                        flagged[id(q.node)] = self.issue(q, s)
        return list(flagged.values())

    def issue(self, q: _Batch, s: _Batch) -> Issue:
        message = (
            f"`{q.root_text}` is batched into tick `{q.tick_text}` only to read state built there from "
            f"`{s.root_text}`'s batch, entangling the two; give `{q.root_text}` its own tick and read the state "
            f"with .snapshot_aligned(its_tick, align, nondet(...)), releasing `{s.root_text}`'s outputs "
            "with .release_aligned(align)"
        )
        return Issue("HL032", message, _anchor(q.node))

    def released_batches(self, query: _Batch) -> set[_Batch]:
        """Batches that reach an `.all_ticks()` other than through `query`."""
        cached = self.released.get(id(query.node))
        if cached is not None:
            return cached
        out = self.released[id(query.node)] = set()
        for call in self.model.calls:
            func = call.node.func
            if call.method == "all_ticks" and isinstance(func, cst.Attribute):
                reached = self.derive(func.value, call.scope, call.order, 0)
                if query not in reached:
                    out.update(reached)
        return out

    def derive(self, expr: cst.BaseExpression, scope: Scope, order: int, depth: int) -> frozenset[_Batch]:
        """The `.batch(...)` calls (`.snapshot(...)` for `_MultiRead`) `expr` is computed from."""
        if depth > _MAX_DEPTH:
            return frozenset()
        if isinstance(expr, cst.Name):
            binding = self.model.resolve(expr.value, scope, order)
            if binding is None or binding.kind not in (BindingKind.ASSIGN, BindingKind.UNPACK) or binding.value is None:
                return frozenset()
            key = id(binding)
            if key not in self.memo:
                self.memo[key] = frozenset()  # cycle guard
                self.memo[key] = self.derive(binding.value, binding.scope, binding.order, depth + 1)
            return self.memo[key]
        parts: list[cst.BaseExpression] = []
        found: set[_Batch] = set()
        if isinstance(expr, cst.Call):
            call = self.calls.get(id(expr))
            if call is not None:
                scope, order = call.scope, call.order
            parts.extend(a.value for a in expr.args if not isinstance(a.value, cst.Lambda))
            func = expr.func
            parts.append(func.value if isinstance(func, cst.Attribute) else func)
            if isinstance(func, cst.Attribute) and func.attr.value == self.entry and expr.args:
                found.add(self.batch(expr, func, scope, order))
        elif isinstance(expr, (cst.Attribute, cst.Subscript)):
            parts.append(expr.value)
        elif isinstance(expr, (cst.Tuple, cst.List)):
            parts.extend(e.value for e in expr.elements)
        elif isinstance(expr, cst.IfExp):
            parts.extend((expr.body, expr.orelse))
        for part in parts:
            found.update(self.derive(part, scope, order, depth + 1))
        return frozenset(found)

    def batch(self, node: cst.Call, func: cst.Attribute, scope: Scope, order: int) -> _Batch:
        cached = self.batches.get(id(node))
        if cached is None:
            tick_arg = next(
                (a.value for a in node.args if a.keyword is not None and a.keyword.value == "tick"), node.args[0].value
            )
            tick, tick_text = self.key(tick_arg, scope, order)
            root, root_text = self.root(func.value, scope, order)
            cached = self.batches[id(node)] = _Batch(node, tick, tick_text, root, root_text)
        return cached

    def key(self, expr: cst.BaseExpression, scope: Scope, order: int) -> tuple[Hashable, str]:
        text = dotted(expr) or _shorten(self.model.module.code_for_node(expr))
        if isinstance(expr, cst.Name):
            binding = self.model.resolve(expr.value, scope, order)
            return (("binding", id(binding)) if binding is not None else ("name", text)), text
        return (("text", text) if dotted(expr) else ("node", id(expr))), text

    def root(self, expr: cst.BaseExpression, scope: Scope, order: int) -> tuple[Hashable, str]:
        """The stream a chain starts from, following names bound by plain assignment."""
        for _ in range(_MAX_DEPTH):
            while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
                if isinstance(expr, cst.Call):
                    if not isinstance(expr.func, cst.Attribute) or _is_source(expr):
                        break
                    expr = expr.func.value
                else:
                    expr = expr.value
            if not isinstance(expr, cst.Name):
                break
            binding = self.model.resolve(expr.value, scope, order)
            if binding is None or binding.kind is not BindingKind.ASSIGN or binding.value is None:
                break
            if not isinstance(binding.value, (cst.Call, cst.Attribute, cst.Subscript, cst.Name)):
                break
            if isinstance(binding.value, cst.Call) and _is_source(binding.value):
                break
            expr, scope, order = binding.value, binding.scope, binding.order
        return self.key(expr, scope, order)


# ---------------------------------------------------------------------- HL033
_COMBINE = ("zip", "cross_singleton")


class _MultiRead(_Entanglement):
    """HL033: two plain `.snapshot(t, ...)`s of state with a common upstream, combined in
    tick `t` (`a.zip(b)`, `a.cross_singleton(b)`).

    Each plain snapshot may independently see any version of its state, so the pair can
    show two versions that never existed together (a count that includes an element next
    to a sum that does not): the inconsistent multi-read align points exist for. Both
    sides must derive from snapshots on the same tick whose receivers start from the same
    stream (see `_Entanglement.root`); aligned reads never match."""

    entry = "snapshot"

    def issues(self) -> list[Issue]:
        flagged: dict[int, Issue] = {}
        for call in self.model.calls:
            if call.method not in _COMBINE or not call.node.args:
                continue
            func = call.node.func
            assert isinstance(func, cst.Attribute)
            left = self.derive(func.value, call.scope, call.order, 0)
            right = self.derive(call.node.args[0].value, call.scope, call.order, 0)
            pair = next(
                ((a, b) for a in left for b in right if a is not b and a.tick == b.tick and a.root == b.root), None
            )
            if pair is not None and id(call.node) not in flagged:
                flagged[id(call.node)] = self.multi_read(call, *pair)
        return list(flagged.values())

    def multi_read(self, call: CallInfo, a: _Batch, b: _Batch) -> Issue:
        message = (
            f"`.{call.method}(...)` combines two plain snapshots in tick `{a.tick_text}` of state computed from "
            f"`{a.root_text}`: each may see a different version, so together they can show a state that never "
            f"existed; create align = <location>.local_align_point() and read both with "
            f".snapshot_aligned({a.tick_text}, align, nondet(...))"
        )
        return Issue("HL033", message, _anchor(call.node))


def _anchor(call: cst.Call) -> cst.CSTNode:
    """Where a finding about `call` points: the method's name in `x.method(...)`, else the call."""
    return call.func.attr if isinstance(call.func, cst.Attribute) else call


def _is_source(call: cst.Call) -> bool:
    """A location's source(...) / keyed_source(...) call: the stream itself starts here."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in ("source", "keyed_source", "source_iter")


def _shorten(code: str) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= 40 else flat[:37] + "..."
