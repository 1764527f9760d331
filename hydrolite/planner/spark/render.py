"""`hydrolite plan` output: stages (queries), merged ticks and aligned regions as text, DOT or Mermaid."""

from __future__ import annotations

from ...ir import nodes as n
from ...ir.graph import dump_nodes
from ...ir.ids import ProcessId, TickId
from .stages import Channel, Plan, Stage


def _kind(stage: Stage) -> str:
    if not stage.streaming:
        return "batch job (no unbounded input)"
    if stage.tick is not None:
        return f"streaming query running {stage.tick}"
    if stage.channels_in:
        return "streaming query joining the outputs of other queries"
    return "streaming query for a top-level pipeline (crosses no tick)"


def _deltas(c: Channel, what: str = "") -> str:
    """How a keyed singleton channel crosses, when as deltas (`channel_versions.py`)."""
    if not c.deltas:
        return ""
    gone = f"; tombstones: the keys {c.gone_from.op}() updated that a filter drops" if c.gone_from is not None else ""
    return f" (deltas{what}{gone})"


def _port(x: n.Source | n.Sink) -> str:
    return f"{x.port} ({x.site.label})"


def render_text(plan: Plan) -> str:
    """A deterministic description of the plan (what `hydrolite plan` prints)."""
    count = len(plan.stages)
    lines = [f"plan of {plan.flow.name!r}: {count} {'query' if count == 1 else 'queries'}"]
    lifted = {f"{tag}*{size}": tag for tag, size in plan.cluster_members.items()}
    for tag, size in plan.cluster_members.items():
        lines.append(
            f"cluster Cluster[{tag}]: {size} members, run as Process[{tag}*{size}]: its collections and state are "
            "keyed by the member index (0..N-1) and all members' ticks run in the same micro-batch"
        )
    for s in plan.stages:
        lines.append("")
        lines.append(f"query {s.index} {s.name!r}: {_kind(s)}")
        if s.tick is not None:
            lines.append("  merged ticks: " + ", ".join(str(t) for t in s.merged_ticks))
        for r in s.regions:
            site = r.site.label
            members = ", ".join(f"{x.op}() {x.site.label}" for x in r.nodes)
            lines.append(f"  aligned region {r.align} (created at {site}): {members}")
        reads = [_port(x) for x in s.sources] + [
            f"channel {c.name} from query {c.producer}{_deltas(c, ': the keys each batch updated')}"
            for c in s.channels_in
        ]
        if reads:
            suffix = "  [one streaming DataFrame, tagged by source]" if len(reads) > 1 else ""
            lines.append("  reads: " + ", ".join(reads) + suffix)
        writes = [_port(x) for x in s.sinks] + [
            f"channel {c.name} to queries {c.consumers}{_deltas(c)}" for c in s.channels_out
        ]
        if writes:
            lines.append("  writes (same micro-batch, idempotent by batch id): " + ", ".join(writes))
        tables = [p for p in s.placement.placements if p.table is not None] if s.placement is not None else []
        if s.stateful or tables:
            lines.append("  state (versioned by batch id; where it lives and why):")
            lines.extend(f"    {p.describe()}" for p in tables)
            for x in s.stateful:
                p = s.placement.of(x) if s.placement is not None else None
                text = p.describe() if p is not None else f"{x.op}() {x.site.label}: driver"
                top = x.meta.loc.outer if isinstance(x.meta.loc, TickId) else x.meta.loc
                if isinstance(top, ProcessId) and top.tag in lifted:
                    text += f" [Cluster[{lifted[top.tag]}]: one entry per member, keyed by member index]"
                lines.append(f"    {text}")
        lines.append("  body (foreachBatch):")
        lines.extend("    " + line for line in dump_nodes(s.nodes).splitlines())
    for d in plan.flow.diagnostics:
        lines.append(str(d))
    return "\n".join(lines)


def _label(x: n.Node) -> str:
    extra = f" [{x.port}]" if isinstance(x, (n.Source, n.Sink)) else ""
    return f"{x.op}(){extra}\\n{x.site.label}"


def _edges(plan: Plan, ids: dict[tuple[int, int], str]) -> list[tuple[str, str, str | None]]:
    """(source id, target id, channel name or None) for every edge of the plan's picture.

    Edges inside a query connect its own nodes; an input read from another query through a
    channel connects the producing query's node and carries the channel's name.
    """
    edges: list[tuple[str, str, str | None]] = []
    for s in plan.stages:
        for x in s.nodes:
            dst = ids[(s.index, id(x))]
            for c in x.children:
                if (s.index, id(c)) in ids:
                    edges.append((ids[(s.index, id(c))], dst, None))
                    continue
                ch = next((k for k in s.channels_in if k.node is c), None)
                if ch is not None and (ch.producer, id(c)) in ids:
                    edges.append((ids[(ch.producer, id(c))], dst, ch.name))
    return edges


def render_dot(plan: Plan) -> str:
    """Graphviz: one cluster per query; dashed edges are channels between queries."""
    out = [f'digraph "{plan.flow.name}" {{', "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    ids: dict[tuple[int, int], str] = {}
    for s in plan.stages:
        out.append(f"  subgraph cluster_{s.index} {{")
        out.append(f'    label="query {s.index}: {s.name}";')
        for j, x in enumerate(s.nodes):
            nid = f"q{s.index}_{j}"
            ids[(s.index, id(x))] = nid
            style = ', style=filled, fillcolor="#dde8ff"' if any(x is y for r in s.regions for y in r.nodes) else ""
            out.append(f'    {nid} [label="{_label(x)}"{style}];')
        out.append("  }")
    for src, dst, channel in _edges(plan, ids):
        if channel is None:
            out.append(f"  {src} -> {dst};")
        else:
            out.append(f'  {src} -> {dst} [style=dashed, label="{channel}"];')
    out.append("}")
    return "\n".join(out)


def render_mermaid(plan: Plan) -> str:
    """Mermaid flowchart: one subgraph per query; dotted edges are channels."""
    out = ["flowchart LR"]
    ids: dict[tuple[int, int], str] = {}
    for s in plan.stages:
        out.append(f'  subgraph q{s.index}["query {s.index}: {s.name}"]')
        for j, x in enumerate(s.nodes):
            nid = f"q{s.index}_{j}"
            ids[(s.index, id(x))] = nid
            out.append(f'    {nid}["{_label(x).replace(chr(92) + "n", "<br/>")}"]')
        out.append("  end")
    for src, dst, channel in _edges(plan, ids):
        out.append(f"  {src} --> {dst}" if channel is None else f"  {src} -.->|{channel}| {dst}")
    for s in plan.stages:
        for r in s.regions:
            members = [ids[(s.index, id(x))] for x in r.nodes if (s.index, id(x)) in ids]
            if members:
                out.append(f"  style {members[0]} fill:#dde8ff")
                out.extend(f"  style {m} fill:#dde8ff" for m in members[1:])
    return "\n".join(out)


RENDERERS = {"text": render_text, "dot": render_dot, "mermaid": render_mermaid}
