"""Whether a fold's value type is a guess (`guessed_type`): the one question the driver and
executor paths both ask before storing accumulators in a typed column.

A Python fold's accumulators are stored pickled, exactly; only their *view* as a column is
typed — from `acc_type=`, or else from `init` and the function. When nothing proves that
every accumulator has that type, a value of another numeric kind must be kept or refused,
never converted: the simulator holds each value as the fold made it.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from ...ir import nodes as n
from .lambdas import NotTranslatable, TExpr, translate
from .types import OPAQUE, HType, fold_type


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
