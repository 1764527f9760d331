"""A program's IR graph as a Mermaid flowchart: how a `Flow` shows itself in Jupyter.

What is drawn is the program as written (the IR graph the simulator runs), not the Spark
plan: one box per operator at your file:line, grouped by where it runs (a subgraph per
process or cluster, a nested one per tick), ports as rounded boxes, operators that keep
state across ticks shaded, and operators that consume a `nondet(...)` outlined with their
reason. That is what a reader of the program needs to see, on both backends; how Spark
cuts it into queries is `hydrolite.notebook.plan(flow)` (the picture `hydrolite plan
--format mermaid` prints, `planner/spark/render.py`).

Jupyter picks the richest type it renders from `Flow._repr_mimebundle_`: JupyterLab (4.1
and later) draws `text/vnd.mermaid`; front-ends that render Mermaid in Markdown draw the
fenced block of `text/markdown`; anything else shows `text/plain` (the numbered dump).

    >>> import hydrolite as hl
    >>> class P: ...
    >>> fb = hl.FlowBuilder("tiny")
    >>> _ = fb.process(P).source("xs", int).map(abs).sink("out")
    >>> text = flow_mermaid(fb.finalize())
    >>> text.splitlines()[0], 'subgraph loc0["Process[P]"]' in text, "n0 --> n1" in text
    ('flowchart LR', True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ids import TickId, TopId, top_of
from .nodes import Node, Sink, Source

if TYPE_CHECKING:
    from .graph import Flow

NONDET_CHARS = 48  # a reason longer than this is cut in the picture (the dump has it whole)
CLASSES = (
    "  classDef port fill:#eaf5ea,stroke:#3a7d3a",
    "  classDef state fill:#fff3d6,stroke:#b07d00",
    "  classDef nondet stroke:#d9480f,stroke-width:2px,stroke-dasharray:5 3",
)


def escape(text: str) -> str:
    """Text safe inside a quoted Mermaid label (its entity codes, not HTML's)."""
    return text.replace("#", "#35;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def _label(node: Node) -> str:
    site = node.site.label
    head = f"{node.op} {node.port}" if isinstance(node, (Source, Sink)) else f"{node.op}()"
    parts = [escape(head), escape(site)]
    nd = getattr(node, "nondet", None)
    if nd is not None:
        reason = str(nd.reason)
        cut = reason if len(reason) <= NONDET_CHARS else reason[: NONDET_CHARS - 1] + "…"
        parts.append(escape(f"nondet: {cut}"))
    return "<br/>".join(parts)


def _box(node_id: str, node: Node) -> str:
    label = _label(node)
    return f'{node_id}(["{label}"])' if isinstance(node, (Source, Sink)) else f'{node_id}["{label}"]'


def flow_mermaid(flow: Flow) -> str:
    """The flowchart (Mermaid source) of `flow`'s IR graph, deterministic for a given program."""
    from .roles import classify

    nodes = flow.nodes()
    roles = classify(flow)
    ids = {id(x): f"n{i}" for i, x in enumerate(nodes)}
    tops: list[TopId] = []
    ticks: dict[TopId, list[TickId]] = {}
    for x in nodes:
        top = top_of(x.meta.loc)
        if top not in tops:
            tops.append(top)
        if isinstance(x.meta.loc, TickId) and x.meta.loc not in ticks.setdefault(top, []):
            ticks[top].append(x.meta.loc)
    out = ["flowchart LR"]
    for t, top in enumerate(tops):
        out.append(f'  subgraph loc{t}["{escape(str(top))}"]')
        out.extend(f"    {_box(ids[id(x)], x)}" for x in nodes if x.meta.loc == top)
        for k, tick in enumerate(ticks.get(top, [])):
            out.append(f'    subgraph loc{t}_tick{k}["{escape(f"tick {tick.index}")}"]')
            out.extend(f"      {_box(ids[id(x)], x)}" for x in nodes if x.meta.loc == tick)
            out.append("    end")
        out.append("  end")
    out.extend(f"  {ids[id(c)]} --> {ids[id(x)]}" for x in nodes for c in x.children if id(c) in ids)
    out.extend(CLASSES)
    for cls, members in (
        ("port", [x for x in nodes if isinstance(x, (Source, Sink))]),
        ("state", [x for x in nodes if roles.stateful(x)]),
        ("nondet", [x for x in nodes if getattr(x, "nondet", None) is not None]),
    ):
        if members:
            out.append(f"  class {','.join(ids[id(x)] for x in members)} {cls}")
    return "\n".join(out)


def flow_text(flow: Flow) -> str:
    """The plain-text form: a one-line summary, then the numbered dump of the graph."""
    nodes = flow.nodes()
    head = f"Flow {flow.name!r}: {len(nodes)} operators; sources {sorted(flow.sources)}; sinks {sorted(flow.sinks)}"
    return head + "\n" + flow.dump()


def flow_mimebundle(flow: Flow) -> dict[str, str]:
    """What Jupyter may show of `flow`: Mermaid (native and as Markdown) and plain text."""
    chart = flow_mermaid(flow)
    return {
        "text/vnd.mermaid": chart,
        "text/markdown": f"**{escape_markdown(flow.name)}** (hydrolite flow)\n\n```mermaid\n{chart}\n```\n",
        "text/plain": flow_text(flow),
    }


def escape_markdown(text: str) -> str:
    """Text shown literally in Markdown (backslash before each punctuation mark it could mean)."""
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!|<>" else c for c in text)
