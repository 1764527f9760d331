"""Whether a type is a guess: of a fold's values (`guessed_type`), the one question the driver
and executor paths both ask before storing accumulators in a typed column; of a chain's
elements (`chain_types`), which step typed them by a trial call.

A Python fold's accumulators are stored pickled, exactly; only their *view* as a column is
typed — from `acc_type=`, or else from `init` and the function. When nothing proves that
every accumulator has that type, a value of another numeric kind must be kept or refused,
never converted: the simulator holds each value as the fold made it.
"""

from __future__ import annotations

import typing
from collections import abc
from typing import Any

from pyspark.sql import functions as F

from ...ir import nodes as n
from .lambdas import MixedTypes, NotTranslatable, TExpr, translate
from .region import Chain
from .types import (
    OPAQUE,
    HType,
    ListT,
    NoneT,
    TupleT,
    declared_result,
    fold_type,
    from_python,
    infer_result,
    of_value,
    strip_optional,
)


def guessed_type(node: n.Node, chain_vt: HType) -> bool:
    """Whether a fold's or reduce's value type is a guess — no `acc_type=`, and no translation
    of its function proving that each result has that type — so that a value of another
    numeric kind (`0` where the type says float, after `a + x / 2 if x > 3 else a`) must be
    kept or refused, never converted: the simulator holds each value as the function made it."""
    if isinstance(node, n.Fold):
        if node.declared_acc():  # (`acc_type=`: every backend holds each accumulator as declared)
            return False
        t = fold_type(node.init, node.meta.elem)
    elif isinstance(node, n.Reduce):
        t = chain_vt
    else:
        return False
    if t == OPAQUE:
        return False
    try:
        got = translate(node.f, [TExpr(F.col("_a"), t), TExpr(F.col("_x"), chain_vt)])
    except NotTranslatable:
        return True
    return got.t != t


# ------------------------------------------------------------------ a chain's types, as the driver path derives them
def _step_type(op: n.Node, vt: HType, trial: list[n.Node] | None = None) -> HType:
    """The step's result type (as the driver path types it); a step typed by a trial call (a
    guess from one sample) is appended to `trial`."""
    f = getattr(op, "f", None)
    if isinstance(op, n.Filter) or f is None:
        return vt
    try:
        t = translate(f, [TExpr(F.col("v"), vt)]).t
        if isinstance(op, n.FlatMap):
            if isinstance(t, ListT):
                return t.item
            raise NotTranslatable("not a list")
        return strip_optional(t) if isinstance(op, n.FilterMap) else t
    except MixedTypes:  # (results that may differ in type are kept pickled, as the tick keeps them)
        return OPAQUE
    except NotTranslatable:
        pass
    if isinstance(op, n.FlatMap):
        if trial is not None:
            trial.append(op)
        return flat_item_type(f, vt)
    if trial is not None and declared_result(f) is None:
        trial.append(op)
    t = infer_result(f, [vt])
    return strip_optional(t) if isinstance(op, n.FilterMap) else t


def chain_types(
    chain: Chain, vt: HType, kt: HType | None, trial: list[n.Node] | None = None
) -> tuple[HType, HType | None]:
    """The (value, key) types at the end of `chain`, from its input's types (`trial`: gets
    the steps typed by a trial call)."""
    for op in chain.ops:
        if isinstance(op, n.IntoKeyed):
            kt, vt = (vt.items[0], vt.items[1]) if isinstance(vt, TupleT) and len(vt.items) == 2 else (OPAQUE, OPAQUE)
        elif isinstance(op, (n.Entries, n.Values)):  # a keyed stream's elements, unkeyed
            vt, kt = (TupleT((kt or OPAQUE, vt)) if isinstance(op, n.Entries) else vt), None
        elif isinstance(op, n.Keys):  # a batch's keys, as a stream
            vt, kt = kt or OPAQUE, None
        elif isinstance(op, n.Unique):  # (a batch's first occurrences: the same types)
            continue
        else:
            vt = _step_type(op, vt, trial)
    return vt, kt


def state_type(node: n.Node, chain_vt: HType) -> HType:
    """The type of a keyed aggregate's values (as `ops_state._spec` derives it)."""
    if isinstance(node, n.Count):
        return of_value(0) or OPAQUE
    if isinstance(node, n.Fold):
        return fold_type(node.init, node.meta.elem)
    return chain_vt


def flat_item_type(f: Any, vt: HType) -> HType:
    """The type of the items a `flat_map()` function returns for elements of `vt`: what its
    return annotation says the iterable holds (`-> list[int]`; `-> list[object]`, or items of
    several types: pickled, each as it is), else the type of the first item of a trial call."""
    if declared_result(f) is not None:  # (annotated, and not `-> Any`)
        ret = typing.get_type_hints(f)["return"]
        origin, args = typing.get_origin(ret), typing.get_args(ret)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis or _iterable(origin) and len(args) == 1:
            return from_python(args[0]) or OPAQUE
        return OPAQUE  # (`-> object`, a tuple of fixed places ...: items of any type)
    try:
        items = list(f(vt.sample()))
    except Exception:  # the sample was not a meaningful input
        return OPAQUE
    t = of_value(items[0]) if items else None
    return t if t is not None and not isinstance(t, NoneT) else OPAQUE


def _iterable(origin: Any) -> bool:
    """Whether a generic's origin is a collection of one item type (list, set, Iterator ...)."""
    return isinstance(origin, type) and issubclass(origin, abc.Iterable) and not issubclass(origin, (abc.Mapping, str))
