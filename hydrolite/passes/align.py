"""The alignment pass: merge aligned ticks and place shared upstreams inside them.

`align_flow(flow)` is a pure function from `Flow` to `Flow` whose output contract is in
`hydrolite/passes/__init__.py`. Analysis (uses, frontier, region, diagnostics) lives in
`align_analysis`; this module only rewrites the graph.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import nodes as n
from ..ir.graph import AlignedRegion, Flow, topo_order
from ..ir.ids import AlignId, LocId, TickId
from ..ir.union_find import UnionFind
from ..nondet import NonDet
from .align_analysis import AlignmentError, PointAnalysis, analyse

__all__ = ["AlignmentError", "align_flow", "carried", "describe_alignment", "merge_ticks"]


def merge_ticks(points: dict[AlignId, PointAnalysis]) -> dict[TickId, TickId]:
    """Map every tick read at an active align point to its merged representative."""
    uf: UnionFind[TickId] = UnionFind(rank=lambda t: t.index)  # the lowest tick represents a merge
    owner: dict[int, TickId] = {}
    for pa in points.values():
        if not pa.active:
            continue
        for t in pa.ticks:
            uf.union(pa.ticks[0], t)
        for node in pa.region:  # regions that overlap must live in one tick
            if id(node) in owner:
                uf.union(owner[id(node)], pa.ticks[0])
            owner[id(node)] = pa.ticks[0]
    return {t: uf.find(t) for t in uf.items()}


class _Rewriter:
    """Rebuilds the graph bottom-up; unchanged nodes keep their identity."""

    def __init__(self, points: dict[AlignId, PointAnalysis], tick_map: dict[TickId, TickId]) -> None:
        self.tick_map = tick_map
        self.region: dict[int, tuple[TickId, PointAnalysis]] = {}
        self.uses: dict[int, tuple[TickId, PointAnalysis]] = {}
        for pa in points.values():
            if not pa.active:
                continue
            tick = tick_map[pa.ticks[0]]
            self.region.update((id(x), (tick, pa)) for x in pa.region)
            self.uses.update((id(u), (tick, pa)) for u in pa.uses)
        self.new: dict[int, n.Node] = {}
        self.entries: dict[tuple[int, TickId], n.Node] = {}
        self.bridges: dict[int, n.Node] = {}
        self.pulled: dict[tuple[int, LocId], n.Node | None] = {}
        self.added: dict[AlignId, list[n.Node]] = {}

    def loc(self, loc: LocId) -> LocId:
        return self.tick_map.get(loc, loc) if isinstance(loc, TickId) else loc

    def run(self, roots: tuple[n.Node, ...]) -> tuple[n.Node, ...]:
        for node in topo_order(roots):
            self.new[id(node)] = self.rebuild(node)
        return tuple(self.new[id(r)] for r in roots)

    def rebuild(self, node: n.Node) -> n.Node:
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, n.Node):
                new_child = self.edge(value, node)
                if new_child is not value:
                    changes[f.name] = new_child
        meta = node.meta
        if id(node) in self.region:
            tick, pa = self.region[id(node)]
            meta = meta.but(loc=tick)
        elif meta.loc != self.loc(meta.loc):
            meta = meta.but(loc=self.loc(meta.loc))
        if meta is not node.meta:
            changes["meta"] = meta
        tick_field = getattr(node, "tick", None)
        if isinstance(tick_field, TickId) and self.loc(tick_field) != tick_field:
            changes["tick"] = self.loc(tick_field)
        if not changes:
            return node
        new = dataclasses.replace(node, **changes)
        if id(node) in self.region:
            self.added.setdefault(self.region[id(node)][1].info.id, []).append(new)
        return new

    def edge(self, child: n.Node, user: n.Node) -> n.Node:
        """The input `user` should read in place of `child`."""
        new_child = self.new[id(child)]
        if id(user) in self.region:
            tick, pa = self.region[id(user)]
            if id(child) not in self.region and not child.meta.in_tick:
                return self.entry(child, new_child, tick, pa)
            return new_child
        if id(user) in self.uses:
            tick, pa = self.uses[id(user)]
            if any(child is x for x in pa.entry_sources):
                return self.entry(child, new_child, tick, pa)
            if id(child) not in self.region or self.region[id(child)][0] == tick:
                return new_child  # an aligned read of a node in its own tick: identity
        if id(child) in self.region:
            tick = self.region[id(child)][0]
            if isinstance(user, (n.Batch, n.Snapshot)) and self.loc(user.tick) == tick:
                # a plain batch/snapshot of a carried node, taken in the node's own merged tick:
                # read the current version (one legal choice). Through a bridge it would read
                # only what earlier runs emitted, and its first run would wait for itself.
                return new_child
            return self.bridge(child, new_child)
        if isinstance(user, (n.Batch, n.Snapshot)) and not child.meta.in_tick:
            pulled = self.pull(child, self.loc(user.tick))
            if pulled is not None:
                return pulled
        return new_child

    def pull(self, node: n.Node, tick: LocId) -> n.Node | None:
        """`node` computed in `tick` from the tick's carried nodes, for a plain batch or
        snapshot into that tick; None unless every path from it reaches them through movable
        top-level operators only (a map of a carried count, a count of a carried stream ...).

        A top-level value the user derived from state the pass carries in a tick is, for a
        reader in that same tick, one more reading of that state: like a plain read of the
        carried node itself (above) it may read the current version, so the pass carries a
        copy of the derivation there too. Through a bridge the reader would see only what
        earlier runs published: on one micro-batch per run, the tick reading its own output."""
        key = (id(node), tick)
        if key in self.pulled:
            return self.pulled[key]
        if id(node) in self.region:
            return self.new[id(node)] if self.region[id(node)][0] == tick else None
        self.pulled[key] = None  # (also while its inputs are looked at: the graph has no cycle)
        if not node.movable or node.meta.in_tick or not node.children:
            return None
        changes: dict[str, Any] = {"meta": node.meta.but(loc=tick)}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, n.Node):
                inner = self.pull(value, tick)
                if inner is None:
                    return None
                changes[f.name] = inner
        pulled = dataclasses.replace(node, **changes)
        self.pulled[key] = pulled
        pa = next(pa for t, pa in self.region.values() if t == tick)
        self.added.setdefault(pa.info.id, []).append(pulled)
        return pulled

    def entry(self, child: n.Node, new_child: n.Node, tick: TickId, pa: PointAnalysis) -> n.Node:
        """One Batch (streams) or Snapshot (singletons) per (top-level node, merged tick)."""
        key = (id(child), tick)
        if key not in self.entries:
            info = pa.info
            where = child.site.label
            what = "any prefix of" if child.meta.kind.streamlike else "any version of"
            why = NonDet(f"{what} {child.op}() at {where} may enter the tick aligned at {info.id}", info.site)
            meta = child.meta.but(loc=tick, bounded=True)
            cls = n.Batch if child.meta.kind.streamlike else n.Snapshot
            node = cls(meta=meta, site=info.site, input=new_child, tick=tick, nondet=why, align=info.id)
            self.entries[key] = node
            self.added.setdefault(info.id, []).append(node)
        return self.entries[key]

    def bridge(self, child: n.Node, new_child: n.Node) -> n.Node:
        """Carry a region node's output back to top level for an unaligned consumer."""
        if id(child) not in self.bridges:
            outer = child.meta.loc
            cls = n.AllTicks if child.meta.kind.streamlike else n.Latest
            meta = new_child.meta.but(loc=outer, bounded=False)
            self.bridges[id(child)] = cls(meta=meta, site=child.site, input=new_child)
        return self.bridges[id(child)]


def align_flow(flow: Flow) -> Flow:
    """Compile align points into merged ticks (see the contract in `hydrolite.passes`).

    Raises `AlignmentError` (with the user's file:line) for a point that needs alignment but
    has nothing local to align; no-op points become warnings in `Flow.diagnostics`.
    """
    if flow.aligned:
        return flow
    points, warnings = analyse(flow)
    tick_map = merge_ticks(points)
    rw = _Rewriter(points, tick_map)
    roots = rw.run(flow.roots)
    sinks = {r.port: r for r in roots if isinstance(r, n.Sink)}
    regions = tuple(
        AlignedRegion(
            align=aid,
            tick=tick_map[pa.ticks[0]],
            merged_ticks=tuple(t for t, rep in tick_map.items() if rep == tick_map[pa.ticks[0]]),
            nodes=tuple(x for x in topo_order(roots) if any(x is y for y in rw.added.get(aid, ()))),
            site=pa.info.site,
        )
        for aid, pa in points.items()
        if pa.active
    )
    return dataclasses.replace(
        flow,
        roots=roots,
        sinks=sinks,
        ticks=tuple(t for t in flow.ticks if tick_map.get(t, t) == t),
        aligned=True,
        regions=regions,
        diagnostics=tuple(warnings),
        _order=[],
    )


def carried(node: n.Node) -> bool:
    """A top-level operator the pass placed in a tick: in a tick, yet unbounded (role CARRIED)."""
    from ..ir.roles import Role, role_of

    return role_of(node) is Role.CARRIED


def describe_alignment(flow: Flow) -> str:
    """Merged ticks, aligned regions and diagnostics of an aligned flow, one per line."""
    lines: list[str] = []
    for r in flow.regions:
        where = r.site.label
        merged = ", ".join(str(t) for t in r.merged_ticks)
        lines.append(f"region {r.align} (created at {where}) in {r.tick}; merged ticks: {merged}")
        for x in r.nodes:
            kind = "entry" if isinstance(x, (n.Batch, n.Snapshot)) else "carried"
            lines.append(f"  {kind}: {x.op}() at {x.site.label} : {x.meta.type_str()}")
    for d in flow.diagnostics:
        lines.append(f"{d.level} [{d.code}] {d.site.label}: {d.message}")
    return "\n".join(lines)
