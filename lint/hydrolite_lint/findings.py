"""Findings: an `Issue` is anchored at a node while checking; a `Finding` has its position."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst


@dataclass(frozen=True, eq=False)
class Fix:
    """A safe rewrite: replace nodes (by identity) and remove whole statements from their block."""

    description: str
    replace: tuple[tuple[cst.CSTNode, cst.CSTNode], ...] = ()
    remove: tuple[cst.CSTNode, ...] = ()

    def touched(self) -> list[cst.CSTNode]:
        return [old for old, _ in self.replace] + list(self.remove)


@dataclass(frozen=True, eq=False)
class Issue:
    """A rule violation found by a check, anchored at the node its position comes from."""

    code: str
    message: str
    node: cst.CSTNode
    fix: Fix | None = None


@dataclass(frozen=True, order=True)
class Finding:
    """A reported violation: `path:line:col: CODE message` (line and column are 1-based)."""

    path: str
    line: int
    col: int
    code: str
    message: str
    fixable: bool = False

    def format(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.col,
            "code": self.code,
            "message": self.message,
            "fixable": self.fixable,
        }
