"""Apply `Fix`es to a module: node replacements by identity and statement removals."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from .findings import Fix
from .walker import fields_of


def apply_fixes(module: cst.Module, fixes: Sequence[Fix]) -> tuple[cst.Module, int]:
    """Apply the fixes that touch disjoint nodes; return the new module and how many applied."""
    touched: set[int] = set()
    chosen: list[Fix] = []
    for fix in fixes:
        ids = {id(n) for n in fix.touched()}
        if ids & touched:
            continue  # overlapping fixes wait for the next round
        touched |= ids
        chosen.append(fix)
    if not chosen:
        return module, 0
    spine: set[int] = set()
    _mark_spine(module, touched, spine)
    return module.visit(_Apply(chosen, spine)), len(chosen)


def _mark_spine(node: cst.CSTNode, targets: set[int], spine: set[int]) -> bool:
    """Collect the ids of `node`'s descendants (and itself) that contain a target."""
    hit = id(node) in targets
    for name in fields_of(type(node)):
        value = getattr(node, name)
        children = value if isinstance(value, (tuple, list)) else (value,)
        for child in children:
            if isinstance(child, cst.CSTNode) and _mark_spine(child, targets, spine):
                hit = True
    if hit:
        spine.add(id(node))
    return hit


class _Apply(cst.CSTTransformer):
    """Rebuilds only the nodes on the way to a fix (libcst rebuilds every node it enters)."""

    def __init__(self, fixes: Sequence[Fix], spine: set[int]) -> None:
        super().__init__()
        self.replace = {id(old): new for fix in fixes for old, new in fix.replace}
        self.remove = {id(node) for fix in fixes for node in fix.remove}
        self.spine = spine

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self.spine

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        new = self.replace.get(id(original_node))
        return new if isinstance(new, cst.BaseExpression) else updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = _without(original_node.body, updated_node.body, self.remove)
        return updated_node if body is None else updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = _without(original_node.body, updated_node.body, self.remove)
        return updated_node if body is None else updated_node.with_changes(body=body)


def _without(
    original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement], remove: set[int]
) -> list[cst.BaseStatement] | None:
    """Drop removed statements, keeping their leading comments on the next statement."""
    if not remove or not any(id(old) in remove for old in original):
        return None
    body: list[cst.BaseStatement] = []
    carry: list[cst.EmptyLine] = []
    for old, new in zip(original, updated):
        if not isinstance(new, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            body.append(new)
            continue
        if id(old) in remove:
            carry.extend(new.leading_lines)
            continue
        if carry:
            new = new.with_changes(leading_lines=(*carry, *new.leading_lines))
            carry = []
        body.append(new)
    return body
