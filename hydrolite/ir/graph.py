"""A finished program (`Flow`) and graph utilities: traversal, parents, text dump."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._site import CallSite
from ..nondet import NonDet
from .ids import AlignId, TickId
from .nodes import Node, Sink, Source


def topo_order(roots: tuple[Node, ...]) -> list[Node]:
    """Every node reachable from `roots`, inputs before users, in a deterministic order."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children) if id(c) not in seen)
    return order


def parents_of(nodes: list[Node]) -> dict[int, list[Node]]:
    """Map id(node) -> the nodes that use it as an input (deterministic order)."""
    parents: dict[int, list[Node]] = {id(n): [] for n in nodes}
    for n in nodes:
        for c in n.children:
            parents[id(c)].append(n)
    return parents


@dataclass(frozen=True)
class AlignPointInfo:
    """An align point declared in the program, with where it was created."""

    id: AlignId
    site: CallSite


@dataclass(frozen=True)
class Diagnostic:
    """A compiler warning or note about the user's program, pointing at their source."""

    level: str  # "warning" | "note"
    code: str  # e.g. "align-noop"
    message: str
    site: CallSite

    def __str__(self) -> str:
        return f"{self.site}: {self.level}: {self.message} [{self.code}]"


@dataclass(frozen=True)
class AlignedRegion:
    """Nodes the alignment pass placed into one merged tick for one align point."""

    align: AlignId
    tick: TickId
    merged_ticks: tuple[TickId, ...]  # the user's ticks that now run as `tick`
    nodes: tuple[Node, ...]  # carried nodes and entry batches, inputs first
    site: CallSite  # where the align point was created


@dataclass(frozen=True)
class Flow:
    """A finished program: the roots (sinks and cycle sinks) of its IR graph and its ports."""

    roots: tuple[Node, ...]
    sources: Mapping[str, Source]
    sinks: Mapping[str, Sink]
    ticks: tuple[TickId, ...] = ()
    align_points: tuple[AlignPointInfo, ...] = ()
    name: str = "flow"
    aligned: bool = False  # True once the alignment pass has run
    regions: tuple[AlignedRegion, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    _order: list[Node] = field(default_factory=list, compare=False, repr=False)

    def nodes(self) -> list[Node]:
        """All nodes, inputs first (computed once)."""
        if not self._order:
            self._order.extend(topo_order(self.roots))
        return self._order

    def dump(self) -> str:
        """A deterministic text rendering of the graph, for snapshot tests and `plan`."""
        return dump_nodes(self.nodes())

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """Jupyter shows the graph as a Mermaid picture, else as text (`ir/mermaid.py`)."""
        from .mermaid import flow_mimebundle

        return flow_mimebundle(self)


def _fn_name(f: Any) -> str:
    code = getattr(f, "__code__", None)
    name = getattr(f, "__qualname__", None) or type(f).__name__
    if code is not None and name.endswith("<lambda>"):
        return f"<lambda@{CallSite(code.co_filename, code.co_firstlineno).label}>"
    return str(name)


def render_value(v: Any) -> str:
    """Render a node parameter deterministically (no memory addresses)."""
    if callable(v) and not isinstance(v, type):
        return _fn_name(v)
    if isinstance(v, NonDet):
        return f"nondet({v.reason!r})"
    if isinstance(v, tuple):
        return "(" + ", ".join(render_value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if hasattr(v, "value") and type(v).__module__.endswith("nodes"):  # enums of the IR
        return str(v.value)
    if isinstance(v, (str, int, float, bool)) or v is None:
        return repr(v)
    if getattr(type(v), "__repr__") is object.__repr__:  # noqa: B009  (mypy rejects comparing the methods directly)
        return f"<{type(v).__name__}>"
    return str(v)


def dump_nodes(nodes: list[Node]) -> str:
    """Render nodes (inputs first) as numbered lines: id, operator, inputs, params, type, site."""
    ids = {id(n): i for i, n in enumerate(nodes)}
    width = len(str(max(len(nodes) - 1, 0)))
    lines = []
    for i, n in enumerate(nodes):
        args = [f"%{ids[id(c)]}" for c in n.children if id(c) in ids]
        args += [
            f"{k}={render_value(v)}"
            for k, v in n.params().items()
            if not (k == "initial" and render_value(v).startswith("<object")) and not (k == "align" and v is None)
        ]
        site = n.site.label
        lines.append(f"%{i:<{width}} = {n.op}({', '.join(args)}) : {n.meta.type_str()}  @ {site}")
    return "\n".join(lines)


def walk_up(node: Node) -> Iterator[Node]:
    """The node and all its transitive inputs (each once)."""
    return iter(topo_order((node,)))
