"""HL020 (align point never used) and HL021 (align point that can only be a no-op).

From the alignment proposal: a point aligns nothing unless something reads at it
(batch_aligned / snapshot_aligned), and a lone aligned read with no release_aligned has
nothing to agree with. The lint counts uses syntactically and stays silent whenever the
point escapes (passed to a helper, returned, stored, used from a nested function),
because then it cannot see every use.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .findings import Issue
from .model import Binding, BindingKind, ModuleModel, ScopeKind
from .rules import ALIGN_FACTORY, ALIGN_RELEASE, ALIGN_TAG, ALIGNED_READS

_READ_HINT = "read at it with .snapshot_aligned(tick, align, nondet(...)) or .batch_aligned(...), or remove it"


@dataclass
class _Uses:
    reads: int = 0
    releases: int = 0
    tags: int = 0

    def add(self, method: str | None, times: int) -> bool:
        """Count one use by `method`; False when the use is not an align-point API call."""
        if method in ALIGNED_READS:
            self.reads += times
        elif method == ALIGN_RELEASE:
            self.releases += times
        elif method == ALIGN_TAG:
            self.tags += times
        else:
            return False
        return True


def check_align(model: ModuleModel) -> list[Issue]:
    """Every HL020/HL021 issue in the module."""
    issues: list[Issue] = []
    for call in model.calls:
        if call.method != ALIGN_FACTORY or call.node.args:
            continue
        if call.context == "assign":
            binding = model.assigned.get(id(call.node))
            if binding is not None:
                issues.extend(_check_binding(model, binding))
        elif call.slot is not None:
            uses = _Uses()
            if uses.add(call.slot.call.method, 1):  # a fresh point per evaluation: one use
                issues.extend(_verdict(uses, "this inline align point", call.node))
        elif call.context == "statement":
            issues.append(Issue("HL020", "align point is created and never used; " + _READ_HINT, call.node))
    return issues


def _check_binding(model: ModuleModel, binding: Binding) -> list[Issue]:
    scope = binding.scope
    if (
        scope.kind is ScopeKind.CLASS
        or len(scope.bindings[binding.name]) != 1
        or binding.name in scope.globals | scope.nonlocals
        or (scope.kind is ScopeKind.MODULE and binding.name in model.global_anywhere)
        or binding.kind is not BindingKind.ASSIGN
    ):
        return []
    uses = _Uses()
    found = model.uses_of(binding)
    for use in found:
        if use.scope is not scope or use.slot is None:
            return []  # escapes: we cannot see all of its uses
        times = 2 if set(use.loops) - set(binding.loops) else 1
        if not uses.add(use.slot.call.method, times):
            return []
    if not found:
        return [Issue("HL020", f"align point `{binding.name}` is never used; " + _READ_HINT, binding.node)]
    return _verdict(uses, f"align point `{binding.name}`", binding.node)


def _verdict(uses: _Uses, what: str, node: cst.CSTNode) -> list[Issue]:
    if uses.reads == 0:
        if uses.releases and uses.tags:
            used_by = "release_aligned and aligned_at"
        elif uses.releases:
            used_by = "release_aligned"
        else:
            used_by = "aligned_at"
        message = f"{what} can only be a no-op: only {used_by} use it and nothing reads at it; {_READ_HINT}"
        return [Issue("HL021", message, node)]
    if uses.reads == 1 and uses.releases == 0:
        message = (
            f"{what} can only be a no-op: one aligned read and no release_aligned; release the outputs the read "
            "must agree with via .release_aligned(align) (or align a second read), or use plain .snapshot()/.batch()"
        )
        return [Issue("HL021", message, node)]
    return []
