"""Line/column of the few nodes that carry findings, computed only when there are findings.

libcst's PositionProvider records a position for every node of the module (about as
costly as parsing it again). We only need the reported nodes, so we regenerate the code
through libcst's codegen hook - the same one PositionProvider uses - note where each
target starts, and stop as soon as the last one has been seen.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

# The codegen state lives in a private libcst module: a libcst that moved it fails here, at import.
from libcst._nodes.internal import CodegenState


class _Done(Exception):
    pass


def positions(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """Map id(node) to its 1-based (line, column) for every node in `nodes`.

    Like libcst's PositionProvider, a parenthesized expression starts after its parentheses.
    """
    if not nodes:
        return {}
    before: dict[int, int] = {}
    after: dict[int, int] = {}
    for node in nodes:
        lpar = getattr(node, "lpar", None)
        if lpar:
            after[id(lpar[-1])] = id(node)
        else:
            before[id(node)] = id(node)
    state = _Locator(module, before, after)
    try:
        module._codegen(state)
    except _Done:
        pass
    return state.found


class _Locator(CodegenState):
    def __init__(self, module: cst.Module, before: dict[int, int], after: dict[int, int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.before = before  # id(trigger) -> id(target): the target starts where the trigger starts
        self.after = after  # ... or where the trigger (the last opening parenthesis) ends
        self.wanted = len(set(before.values()) | set(after.values()))
        self.found: dict[int, tuple[int, int]] = {}
        self.seen = 0  # tokens already counted
        self.line = 1
        self.col = 1

    def before_codegen(self, node: cst.CSTNode) -> None:
        target = self.before.get(id(node))
        if target is not None and target not in self.found:
            self.record(target)

    def after_codegen(self, node: cst.CSTNode) -> None:
        target = self.after.get(id(node))
        if target is not None and target not in self.found:
            self.record(target)

    def record(self, target: int) -> None:
        text = "".join(self.tokens[self.seen :])
        self.seen = len(self.tokens)
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        newlines = text.count("\n")
        if newlines:
            self.line += newlines
            self.col = len(text) - text.rfind("\n")
        else:
            self.col += len(text)
        self.found[target] = (self.line, self.col)
        if len(self.found) == self.wanted:
            raise _Done
