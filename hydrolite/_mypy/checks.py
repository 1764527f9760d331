"""The mypy plugin: hydrolite's build-time rules, checked on static types, in hydrolite's words.

Without the plugin mypy still rejects every misuse the typing contract lists, but through
its generic machinery: an explicit self type fails as "Invalid self argument ... to
attribute function "fold" with type Callable[[Stream[T, L, B, TotalOrder], ...", and a
type variable solved from the receiver makes `batch()` inside a tick complain that it
"expected Tick[Tick[...]]". The plugin hooks each operator's signature (before mypy checks
the call's arguments), evaluates the operator's rules (`table.RULES`) on the receiver's and
the arguments' static types, and for every violated rule

* reports `<op>() requires <required>` with notes `found: <type>` and `fix: <fix>` (the
  texts of the run-time `BuildError`, from `hydrolite.live.rules`) under its own error code;
* withdraws the generic error mypy already reported for the receiver, and relaxes the
  parameter the rule is about, so mypy does not report the same misuse a second time.

Rules whose inputs are not known statically (a type variable, `Any`) are left to mypy.
The plugin touches two internals of mypy's `Errors`, its recorded errors and its stack of
error watchers: to withdraw a generic error, and to report `stream == 3` past the watcher
with which mypy tries `int.__eq__` next (and would drop the report). mypy is pinned (<2.5) and
tests/core/test_mypy_plugin.py snapshots every message, so an upgrade that changes them
fails loudly instead of silently doubling errors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from mypy.errorcodes import ErrorCode
from mypy.errors import ErrorInfo
from mypy.messages import format_type_bare
from mypy.nodes import (
    ARG_OPT,
    Context,
    Expression,
    MemberExpr,
    RefExpr,
    StrExpr,
    TypeInfo,
)
from mypy.plugin import MethodSigContext, Plugin, ReportConfigContext
from mypy.types import (
    AnyType,
    CallableType,
    FunctionLike,
    Instance,
    LiteralType,
    NoneType,
    ProperType,
    TupleType,
    TypeOfAny,
    UnionType,
    get_proper_type,
)

from ..live import rules as r
from .table import EQUALITY, RULES, TYPE_ARGS, OnArg, OnSelf, Rule

_CATEGORY = "hydrolite"
ORDER = ErrorCode("hydrolite-order", "An operator that observes order needs a TotalOrder collection", _CATEGORY)
BOUNDED = ErrorCode("hydrolite-bounded", "An operator that needs the whole input needs a Bounded collection", _CATEGORY)
TICK = ErrorCode("hydrolite-tick", "Entering, leaving and stepping ticks", _CATEGORY)
LOCATION = ErrorCode("hydrolite-location", "Both sides, ticks and align points at the collection's location", _CATEGORY)
NONDET = ErrorCode("hydrolite-nondet", 'A non-deterministic observation needs a nondet("why")', _CATEGORY)
ELEMENT = ErrorCode("hydrolite-elem", "Element types an operator needs (comparable, pairs)", _CATEGORY)
EQUALITY_CODE = ErrorCode("hydrolite-eq", "== and != on live collections", _CATEGORY)

_MARKERS = "hydrolite.locations.markers."
_LOCATIONS = "hydrolite.locations.locations."
# Live class -> positions of (element, location, boundedness, ordering) among its type arguments.
_SHAPES: dict[str, tuple[int, int, int, int | None]] = {
    "hydrolite.live.stream.Stream": (0, 1, 2, 3),
    "hydrolite.live.keyed_stream.KeyedStream": (1, 2, 3, 4),
    "hydrolite.live.singleton.Singleton": (0, 1, 2, None),
    "hydrolite.live.singleton.OptionalSingleton": (0, 1, 2, None),
    "hydrolite.live.keyed_singleton.KeyedSingleton": (1, 2, 3, None),
}


# ------------------------------------------------------------------ reading static types
@dataclass(frozen=True)
class LiveType:
    """What the rules need to know of a live collection's static type (None: not known)."""

    typ: Instance
    elem: ProperType
    loc: ProperType
    bounded: bool | None
    ordered: bool | None

    @property
    def place(self) -> str | None:
        """'tick' or 'top' when the location is known."""
        return _place(self.loc)

    @property
    def top(self) -> ProperType | None:
        """The top-level location (the tick's outer one inside a tick)."""
        if self.place == "top":
            return self.loc
        if self.place == "tick" and isinstance(self.loc, Instance) and self.loc.args:
            return get_proper_type(self.loc.args[0])
        return None


def live_type(t: ProperType) -> LiveType | None:
    """The receiver or argument as a live collection, or None when it is not one."""
    if not isinstance(t, Instance) or t.type.fullname not in _SHAPES or len(t.args) < 3:
        return None
    e, loc, b, o = _SHAPES[t.type.fullname]
    args = [get_proper_type(a) for a in t.args]
    return LiveType(
        t,
        args[e],
        args[loc],
        _flag(args[b], "Bounded", "Unbounded"),
        None if o is None else _flag(args[o], "TotalOrder", "NoOrder"),
    )


def _flag(t: ProperType, yes: str, no: str) -> bool | None:
    if isinstance(t, Instance):
        if t.type.fullname == _MARKERS + yes:
            return True
        if t.type.fullname == _MARKERS + no:
            return False
    return None


def _place(loc: ProperType) -> str | None:
    if isinstance(loc, Instance):
        name = loc.type.fullname
        if name == _LOCATIONS + "Tick":
            return "tick"
        if name in (_LOCATIONS + "Process", _LOCATIONS + "Cluster"):
            return "top"
    return None


def _instance_of(t: ProperType, name: str) -> Instance | None:
    return t if isinstance(t, Instance) and t.type.fullname == _LOCATIONS + name else None


def _known(t: ProperType) -> bool:
    """A concrete location type (no type variables or Any inside), so two can be compared."""
    return isinstance(t, Instance) and all(_known(get_proper_type(a)) for a in t.args)


def _comparable(t: ProperType) -> bool | None:
    """Whether values of type t support `<`; None when unknown (Any, type variables)."""
    if isinstance(t, LiteralType):
        t = t.fallback
    if isinstance(t, TupleType):
        return True
    if isinstance(t, NoneType):
        return False
    if isinstance(t, UnionType):
        parts = [_comparable(get_proper_type(i)) for i in t.items]
        return False if False in parts else (None if None in parts else True)
    if isinstance(t, Instance):
        return any(b.fullname != "builtins.object" and ("__lt__" in b.names or "__gt__" in b.names) for b in t.type.mro)
    return None


def _is_pair(t: ProperType) -> bool | None:
    if isinstance(t, TupleType):
        return len(t.items) == 2
    if isinstance(t, Instance):
        return None if t.type.fullname == "builtins.tuple" or t.type.has_base("builtins.tuple") else False
    return None


# ------------------------------------------------------------------ violations
@dataclass(frozen=True)
class Violation:
    """One broken rule, with the run-time BuildError's texts."""

    code: ErrorCode
    required: str
    found: str
    fix: str
    node: Context


class Checker:
    """Evaluates one call's rules; `fmt` renders types as mypy does in its own messages."""

    def __init__(self, ctx: MethodSigContext, recv: LiveType) -> None:
        self.ctx = ctx
        self.recv = recv
        callee = getattr(ctx.context, "callee", None)  # the `recv.method` of a call expression
        self.callee: Context = callee if isinstance(callee, MemberExpr) else ctx.context

    def fmt(self, t: ProperType) -> str:
        return format_type_bare(t, self.ctx.api.options)

    def passed(self, param: str) -> bool:
        """Whether the call gives an argument for `param` (its type is not needed)."""
        names = self.ctx.default_signature.arg_names
        return param in names and bool(self.ctx.args[names.index(param)])

    def arg(self, param: str) -> tuple[Expression, ProperType] | None:
        """The argument for `param` and its type (checked now: hooks run before the arguments)."""
        names = self.ctx.default_signature.arg_names
        if param not in names:
            return None
        exprs = self.ctx.args[names.index(param)]
        if len(exprs) != 1:
            return None
        return exprs[0], get_proper_type(self.ctx.api.get_expression_type(exprs[0]))

    def on_self(self, rule: OnSelf) -> Violation | None:
        """The violation of a rule on the receiver, reported where mypy reports the method."""
        recv, found = self.recv, self.fmt(self.recv.typ)
        if rule.kind == "ordered" and recv.ordered is False:
            return Violation(ORDER, r.ORDERED, found, rule.fix, self.callee)
        if rule.kind == "bounded" and recv.bounded is False:
            return Violation(BOUNDED, r.BOUNDED, found, rule.fix or r.FIX_BATCH, self.callee)
        if rule.kind == "in_tick" and recv.place == "top":
            return Violation(TICK, r.IN_TICK, found, r.FIX_ENTER_TICK, self.callee)
        if rule.kind == "top" and recv.place == "tick":
            return Violation(TICK, r.TOP_LEVEL, found, rule.fix or r.FIX_LEAVE_TICK, self.callee)
        if rule.kind == "comparable" and not self.passed("key") and _comparable(recv.elem) is False:
            return Violation(
                ELEMENT, r.COMPARABLE, f"elements of type {self.fmt(recv.elem)}: {found}", r.FIX_COMPARABLE, self.callee
            )
        if rule.kind == "pairs" and _is_pair(recv.elem) is False:
            return Violation(ELEMENT, r.PAIRS, found, r.FIX_PAIRS, self.callee)
        return None

    def on_arg(self, rule: OnArg) -> Violation | None:
        """The violation of a rule on an argument, reported at the argument."""
        got = self.arg(rule.param)
        if got is None or isinstance(got[1], AnyType):
            return None
        expr, t = got
        other, recv = live_type(t), self.recv
        if (
            rule.kind == "same_location"
            and other is not None
            and _known(recv.loc)
            and _known(other.loc)
            and self.fmt(recv.loc) != self.fmt(other.loc)
        ):
            found = f"{self.fmt(other.loc)}: {self.fmt(t)}"
            return Violation(LOCATION, r.same_location(self.fmt(recv.loc)), found, r.FIX_SAME_LOCATION, expr)
        if rule.kind == "bounded" and other is not None and other.bounded is False:
            return Violation(BOUNDED, r.BOUNDED, self.fmt(t), rule.fix or r.FIX_BATCH, expr)
        if rule.kind == "tick_of" and (tick := _instance_of(t, "Tick")) is not None and tick.args:
            outer = get_proper_type(tick.args[0])
            if recv.place == "top" and _known(recv.loc) and _known(outer) and self.fmt(outer) != self.fmt(recv.loc):
                loc = self.fmt(recv.loc)
                return Violation(TICK, r.tick_of(loc), f"a tick of {self.fmt(outer)}", r.fix_tick_of(loc), expr)
        if rule.kind == "align_of" and (point := _instance_of(t, "LocalAlignPoint")) is not None and point.args:
            at, top = get_proper_type(point.args[0]), recv.top
            if top is not None and _known(top) and _known(at) and self.fmt(at) != self.fmt(top):
                loc = self.fmt(top)
                return Violation(
                    LOCATION,
                    r.align_point_of(loc),
                    f"an align point of {self.fmt(at)}",
                    r.fix_align_point_of(loc),
                    expr,
                )
        if rule.kind == "nondet" and not (isinstance(t, Instance) and t.type.fullname == "hydrolite.nondet.NonDet"):
            found = f"str {expr.value!r}" if isinstance(expr, StrExpr) else self.fmt(t)
            return Violation(NONDET, r.NONDET, found, r.FIX_NONDET, expr)
        if rule.kind in ("process", "cluster"):
            want = "Process" if rule.kind == "process" else "Cluster"
            wrong = "Cluster" if want == "Process" else "Process"
            if _instance_of(t, wrong) is not None:
                return Violation(LOCATION, r.destination(want), self.fmt(t), r.FIX_DESTINATION, expr)
        return None


def check_call(op: str, rules: tuple[Rule, ...], ctx: MethodSigContext) -> FunctionLike:
    """The method signature hook: report violated rules, return the signature to check with."""
    sig = ctx.default_signature
    recv = live_type(get_proper_type(ctx.type))
    if recv is None:
        return sig
    checker = Checker(ctx, recv)
    relaxed: set[str | int] = set()
    broke_self = False
    for rule in rules:
        v = checker.on_self(rule) if isinstance(rule, OnSelf) else checker.on_arg(rule)
        if isinstance(rule, OnSelf) and rule.kind == "top" and recv.place == "tick":
            # The location parameter P was solved to the tick: relax what depends on it.
            relaxed.update(x.param for x in rules if isinstance(x, OnArg) and x.kind != "nondet")
        if v is None:
            continue
        report(ctx, op, v)
        if isinstance(rule, OnSelf):
            broke_self = True
            if rule.kind == "comparable":
                relaxed.add("key")
        else:
            relaxed.add(rule.param)
    if broke_self:
        withdraw_invalid_self(ctx, checker.callee, op.rstrip("()"))
    return relax(sig, relaxed, optional={"key"}) if relaxed else sig


def relax(sig: CallableType, params: set[str | int], optional: set[str] | None = None) -> CallableType:
    """The signature with `params` (names or positions) typed Any, and `optional` ones optional.

    So mypy does not report again what the plugin just reported in hydrolite's words (a
    `sort()` of incomparable elements: the overload left requires `key`).
    """
    hit = [name in params or i in params for i, name in enumerate(sig.arg_names)]
    any_t = AnyType(TypeOfAny.special_form)
    types = [any_t if h else t for h, t in zip(hit, sig.arg_types)]
    kinds = [
        ARG_OPT if h and name in (optional or set()) and k.is_positional() else k
        for h, name, k in zip(hit, sig.arg_names, sig.arg_kinds)
    ]
    return sig.copy_modified(arg_types=types, arg_kinds=kinds)


def check_equality(op: str, ctx: MethodSigContext) -> FunctionLike:
    """`==`/`!=` on a live collection: always a misuse (it compares build-time handles)."""
    recv = live_type(get_proper_type(ctx.type))
    if recv is None:
        return ctx.default_signature
    found = f"{op} on {format_type_bare(recv.typ, ctx.api.options)}"
    # mypy tries `a.__eq__(b)` and then `b.__eq__(a)` with errors held back, and keeps
    # whichever succeeds (for `stream == 3`, int's): report past those watchers.
    with _unwatched(ctx):
        report(
            ctx,
            f"{op} on a live collection",
            Violation(EQUALITY_CODE, r.NO_EQUALITY, found, r.FIX_EQUALITY, ctx.context),
        )
    return relax(ctx.default_signature, {0})  # operator signatures carry no parameter names


def check_type_args(op: str, params: tuple[str, ...], ctx: MethodSigContext) -> FunctionLike:
    """`source(name, tuple)`: a bare generic class as an element type means `tuple[Any, ...]`."""
    sig = ctx.default_signature
    for param in params:
        if param not in sig.arg_names:
            continue
        for expr in ctx.args[sig.arg_names.index(param)]:
            if isinstance(expr, RefExpr) and isinstance(expr.node, TypeInfo) and expr.node.type_vars:
                found = f"{expr.node.name} (that is, {expr.node.name}[{', '.join('Any' for _ in expr.node.type_vars)}{', ...' if expr.node.fullname == 'builtins.tuple' else ''}])"
                report(ctx, op, Violation(ELEMENT, r.SPELLED_TYPE, found, r.FIX_SPELLED_TYPE, expr))
    return sig


def report(ctx: MethodSigContext, op: str, v: Violation) -> None:
    """One error with `found`/`fix` notes, all under the rule's code (so one ignore covers them)."""
    err = ctx.api.msg.fail(f"{op} requires {v.required}", v.node, code=v.code)
    ctx.api.msg.note(f"found: {v.found}", v.node, code=v.code, parent_error=err)
    ctx.api.msg.note(f"fix: {v.fix}", v.node, code=v.code, parent_error=err)


def withdraw_invalid_self(ctx: MethodSigContext, callee: Context, name: str) -> None:
    """Drop mypy's "Invalid self argument" error for this call: the plugin reported it better.

    Also dropped: the notes attached to it, such as "Error code "misc" not covered by
    "type: ignore[hydrolite-order]" comment" on a line that ignores the plugin's code.
    """
    errors = ctx.api.msg.errors

    def here(info: ErrorInfo) -> bool:
        return info.line == callee.line and info.column == callee.column

    def generic(info: ErrorInfo) -> bool:
        return here(info) and info.message.startswith("Invalid self argument") and f'"{name}"' in info.message

    def stale_note(info: ErrorInfo) -> bool:
        return here(info) and info.severity == "note" and info.message.startswith('Error code "misc" not covered')

    def keep(infos: list[ErrorInfo]) -> list[ErrorInfo]:
        dropped = [i for i in infos if generic(i)]
        if not dropped:
            return infos
        return [i for i in infos if not generic(i) and i.parent_error not in dropped and not stale_note(i)]

    recorded = errors.error_info_map.get(errors.file)
    if recorded is not None:
        recorded[:] = keep(recorded)
    for watcher in errors._watchers:
        held = watcher._filtered
        if held is not None:
            held[:] = keep(held)


@contextmanager
def _unwatched(ctx: MethodSigContext) -> Iterator[None]:
    errors = ctx.api.msg.errors
    saved = errors._watchers
    errors._watchers = []
    try:
        yield
    finally:
        errors._watchers = saved


class HydrolitePlugin(Plugin):
    """Enable with `plugins = ["hydrolite.mypy_plugin"]` in the `[tool.mypy]` section."""

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        cls, _, method = fullname.rpartition(".")
        rules = RULES.get(cls, {}).get(method)
        if rules is not None:
            return partial(check_call, f"{method}()", rules)
        # Operators are looked up on the receiver's class, not on Live where they are defined.
        if method in EQUALITY and cls in RULES:
            return partial(check_equality, EQUALITY[method])
        params = TYPE_ARGS.get(cls, {}).get(method)
        if params is not None:
            return partial(check_type_args, f"{method}()", params)
        return None

    def report_config_data(self, ctx: ReportConfigContext) -> str:
        """A fingerprint of the plugin's sources: mypy rechecks cached modules when it changes."""
        return _FINGERPRINT


def _fingerprint() -> str:
    here = Path(__file__).resolve()
    sources = sorted(here.parent.glob("*.py")) + [
        here.parents[1] / "live" / "rules.py",
        here.parents[1] / "mypy_plugin.py",
    ]
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()[:16]


_FINGERPRINT = _fingerprint()
