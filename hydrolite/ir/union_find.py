"""Disjoint sets with a deterministic representative, for grouping parts of a graph.

Used where a pass merges things that must end up together: the alignment pass merges the
ticks of one align point (`passes/align.py`), and the Spark planner groups top-level sink
pipelines that share an upstream into one query (`planner/spark/stages.py`). The
representative of a set is its least member by `rank`, so the grouping - and every name
derived from it - does not depend on the order in which unions happen.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

H = TypeVar("H", bound=Hashable)


class UnionFind(Generic[H]):
    """Disjoint sets of hashable items; `find` gives the set's least item by `rank`."""

    def __init__(self, rank: Callable[[H], int]) -> None:
        self.rank = rank
        self.parent: dict[H, H] = {}  # every item seen, in first-seen order

    def find(self, x: H) -> H:
        """The representative of `x`'s set (a new item is a set of its own)."""
        root = x
        while self.parent.setdefault(root, root) != root:
            root = self.parent[root]
        while x != root:  # path compression: later finds are short
            up = self.parent[x]
            self.parent[x] = root
            x = up
        return root

    def union(self, a: H, b: H) -> None:
        """Merge the sets of `a` and `b`."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            lo, hi = (ra, rb) if self.rank(ra) <= self.rank(rb) else (rb, ra)
            self.parent[hi] = lo

    def items(self) -> list[H]:
        """Every item seen so far, in the order it was first seen."""
        return list(self.parent)
