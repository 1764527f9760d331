"""Alignment analysis: for each align point, its uses, shared upstreams and region.

Pure functions over a finished `Flow` (docs/design.md §2):

1. the *uses* of a point are its aligned reads (`batch_aligned` / `snapshot_aligned`) and its
   releases (`release_aligned`);
2. a node is *shared* when it is upstream of at least two uses; walking upstream stops at a
   network `Send` (alignment is local) and at the outputs of other ticks;
3. the *frontier* is the shared nodes whose consumers are no longer shared by the same set
   of uses; the *region* is the frontier plus every node on a path from it to a use;
4. explicit mode (`aligned_at` used with the point): only nodes at or below an `aligned_at`
   marker count as shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from .._site import CallSite
from ..errors import FlowError, format_at
from ..ir import nodes as n
from ..ir.graph import AlignPointInfo, Diagnostic, Flow, parents_of
from ..ir.ids import AlignId, TickId


class AlignmentError(FlowError):
    """An align point cannot be compiled (no shared upstream, alignment across the network)."""

    code: ClassVar[str] = "HL-ALIGN"

    def __init__(self, message: str, *, site: CallSite, fix: str, details: Iterable[str] = ()) -> None:
        self.site = site
        ValueError.__init__(self, format_at(site, message, *details, f"fix: {fix}"))


@dataclass
class PointAnalysis:
    """What the pass learned about one align point."""

    info: AlignPointInfo
    reads: list[n.Batch | n.Snapshot] = field(default_factory=list)  # with align=point
    releases: list[n.ReleaseAligned] = field(default_factory=list)
    markers: list[n.AlignedAt] = field(default_factory=list)
    frontier: list[n.Node] = field(default_factory=list)
    region: list[n.Node] = field(default_factory=list)  # movable nodes, topological order
    entry_sources: list[n.Node] = field(default_factory=list)  # unmovable frontier nodes
    ticks: list[TickId] = field(default_factory=list)
    active: bool = False  # False: the point is a no-op and the graph is left alone

    @property
    def uses(self) -> list[n.Batch | n.Snapshot | n.ReleaseAligned]:
        return [*self.reads, *self.releases]


def collect_uses(flow: Flow) -> dict[AlignId, PointAnalysis]:
    """Group the aligned reads, releases and markers of the flow by align point."""
    points = {info.id: PointAnalysis(info) for info in flow.align_points}
    for node in flow.nodes():
        if isinstance(node, n.AlignedAt):
            points[node.align].markers.append(node)
        if isinstance(node, n.ReleaseAligned):
            points[node.align].releases.append(node)
        elif isinstance(node, (n.Batch, n.Snapshot)) and node.align is not None:
            pa = points[node.align]
            pa.reads.append(node)
            if node.tick not in pa.ticks:
                pa.ticks.append(node.tick)
    return points


def _upstream(start: n.Node) -> tuple[set[int], set[int], dict[int, n.Node]]:
    """(local upstream ids, ids behind a network edge, id -> node) of a use's input."""
    local: set[int] = set()
    remote: set[int] = set()
    nodes: dict[int, n.Node] = {}
    stack: list[tuple[n.Node, bool]] = [(start, False)]
    while stack:
        node, behind = stack.pop()
        bucket = remote if behind else local
        if id(node) in bucket:
            continue
        bucket.add(id(node))
        nodes[id(node)] = node
        if isinstance(node, (n.AllTicks, n.Latest)):
            continue  # the output of another tick: a top-level value, not its insides
        crossing = behind or isinstance(node, n.Send)
        stack.extend((c, crossing) for c in node.children)
    return local, remote, nodes


def _noop_warning(pa: PointAnalysis) -> Diagnostic | None:
    site = pa.info.site
    if not pa.reads and not pa.releases:
        return Diagnostic("warning", "align-unused", f"align point {pa.info.id} is never used", site)
    if not pa.reads:
        return Diagnostic(
            "warning",
            "align-noop",
            f"align point {pa.info.id} is only used by release_aligned(): with no batch_aligned()/"
            "snapshot_aligned() there is nothing to align with, so the release is immediate",
            site,
        )
    if len(pa.reads) == 1 and not pa.releases:
        return Diagnostic(
            "warning",
            "align-noop",
            f"align point {pa.info.id} has a single aligned read and no release_aligned(): "
            "one use is always consistent with itself, so the point does nothing",
            site,
        )
    return None


def _describe(uses: Sequence[n.Node]) -> list[str]:
    return [f"use: {u.op}() at {u.site}" for u in uses]


def analyse_point(pa: PointAnalysis, parents: dict[int, list[n.Node]]) -> Diagnostic | None:
    """Fill in frontier and region of one point; return a warning when it is a no-op.

    Raises AlignmentError when the point has uses that need alignment but nothing to align.
    """
    warning = _noop_warning(pa)
    if warning is not None:
        return warning
    uses = pa.uses
    ups = [_upstream(u.input) for u in uses]
    by_id: dict[int, n.Node] = {}
    for _, _, nodes in ups:
        by_id.update(nodes)
    sets: dict[int, frozenset[int]] = {}
    for i, (local, _, _) in enumerate(ups):
        for nid in local:
            sets[nid] = sets.get(nid, frozenset()) | {i}
    marked = _marked_region(pa, by_id, parents)
    _check_markers(pa, ups)
    shared = {nid for nid, s in sets.items() if len(s) >= 2 and (marked is None or nid in marked)}
    if not shared:
        _raise_unshared(pa, ups)
    use_ids = {id(u) for u in uses}
    frontier = [
        by_id[nid]
        for nid in sorted(shared, key=lambda i: _order_key(by_id[i]))
        if all(id(p) in use_ids or sets.get(id(p)) != sets[nid] for p in parents[nid])
    ]
    pa.frontier = frontier
    _fill_region(pa, frontier, sets, parents, use_ids)
    pa.active = True
    return None


def _order_key(node: n.Node) -> tuple[str, int, str]:
    return (node.site.file, node.site.line, node.op)


def _marked_region(pa: PointAnalysis, by_id: dict[int, n.Node], parents: dict[int, list[n.Node]]) -> set[int] | None:
    """Explicit mode: ids of nodes at or below an aligned_at marker of this point."""
    if not pa.markers:
        return None
    out: set[int] = set()
    stack: list[n.Node] = list(pa.markers)
    while stack:
        node = stack.pop()
        if id(node) in out:
            continue
        out.add(id(node))
        stack.extend(p for p in parents[id(node)] if id(p) in by_id)
    return out


def _check_markers(pa: PointAnalysis, ups: list[tuple[set[int], set[int], dict[int, n.Node]]]) -> None:
    """Explicit mode: an aligned_at reached only through the network is an error."""
    for marker in pa.markers:
        local = any(id(marker) in loc for loc, _, _ in ups)
        remote = any(id(marker) in rem for _, rem, _ in ups)
        if remote and not local:
            raise AlignmentError(
                f"aligned_at({pa.info.id}) marks a collection that reaches the uses of the point "
                "only through the network; alignment cannot cross the network",
                site=marker.site,
                fix="align on the receiving location: call aligned_at() after the send(), on the "
                "stream that arrived, or create the align point on the sending location",
                details=_describe(pa.uses),
            )


def _raise_unshared(pa: PointAnalysis, ups: list[tuple[set[int], set[int], dict[int, n.Node]]]) -> None:
    seen: dict[int, int] = {}
    for local, remote, _ in ups:
        for nid in local | remote:
            seen[nid] = seen.get(nid, 0) + 1
    behind_network = any(c >= 2 for c in seen.values())
    hint = (
        "the uses do share an upstream, but only behind a network send: alignment cannot cross "
        "the network (it is local to one location)"
        if behind_network
        else "the uses read unrelated inputs"
    )
    raise AlignmentError(
        f"align point {pa.info.id} has no shared upstream on {pa.info.id.loc}: {hint}",
        site=pa.info.site,
        fix="use the point only with collections derived from a common input on this location"
        + (", e.g. align where the data arrives after the send()" if behind_network else "; or remove it"),
        details=_describe(pa.uses),
    )


def _fill_region(
    pa: PointAnalysis,
    frontier: list[n.Node],
    sets: dict[int, frozenset[int]],
    parents: dict[int, list[n.Node]],
    use_ids: set[int],
) -> None:
    """Region = movable frontier nodes + nodes on paths from the frontier to a use."""
    below: dict[int, n.Node] = {}
    stack = list(frontier)
    while stack:
        node = stack.pop()
        if id(node) in below:
            continue
        below[id(node)] = node
        stack.extend(p for p in parents[id(node)] if id(p) in sets and id(p) not in use_ids)
    region = [node for nid, node in below.items() if node.movable]
    pa.entry_sources = [f for f in frontier if not f.movable]  # `Node.movable`: inputs, arrivals, tick outputs
    pa.region = region


def analyse(flow: Flow) -> tuple[dict[AlignId, PointAnalysis], list[Diagnostic]]:
    """Analyse every align point of the flow (see module docstring)."""
    points = collect_uses(flow)
    parents = parents_of(flow.nodes())
    warnings = [w for pa in points.values() if (w := analyse_point(pa, parents)) is not None]
    return points, warnings
