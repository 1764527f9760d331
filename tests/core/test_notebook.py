"""Notebooks (issue 15, item 5): what a `Flow`, a Spark plan and a simulator result show in
Jupyter (their MIME bundles, by content), and docs/notebook.ipynb executed in a real kernel."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

import hydrolite as hl
from examples import counter, counter_naive
from hydrolite import nondet, notebook
from hydrolite.ir.mermaid import escape, flow_mermaid
from hydrolite.sim import SimulationFailure
from hydrolite.sim_view import report_html, report_markdown, split_report

ROOT = Path(__file__).resolve().parents[2]


def scenario(s: Any) -> None:
    s.sender("increment").send(("c1", None))
    s.receiver("increment_ack").next()
    s.sender("query").send(("c1", None))
    s.receiver("query_response").assert_yields([("c1", 1)])


def boxes(chart: str) -> dict[str, str]:
    """node id -> label, for every box of a chart (rectangles and rounded ports)."""
    return dict(re.findall(r'^\s+(n\d+)\(?\["(.*)"\]\)?$', chart, re.M))


def test_a_flow_shows_its_ir_graph_as_mermaid_and_text() -> None:
    flow = counter.build()
    bundle = flow._repr_mimebundle_()
    assert set(bundle) == {"text/vnd.mermaid", "text/markdown", "text/plain"}
    chart = bundle["text/vnd.mermaid"]
    assert bundle["text/markdown"].endswith(f"```mermaid\n{chart}\n```\n")
    assert bundle["text/plain"] == (
        "Flow 'counter': 14 operators; sources ['increment', 'query']; sinks ['increment_ack', 'query_response']\n"
        + flow.dump()
    )
    nodes = flow.nodes()
    labels = boxes(chart)
    assert len(labels) == len(nodes)  # one box per operator ...
    for i, x in enumerate(nodes):  # ... labelled with the operator and the user's line
        assert f"{x.site.line}" in labels[f"n{i}"] and x.op in labels[f"n{i}"]
    edges = re.findall(r"^  (n\d+) --> (n\d+)$", chart, re.M)
    assert len(edges) == sum(len(x.children) for x in nodes)
    ids = {x: f"n{i}" for i, x in enumerate(nodes)}
    # where things run: the process, and the tick inside it holding the batch and the snapshot
    assert chart.index('subgraph loc0["Process[Server]"]') < chart.index('subgraph loc0_tick0["tick 0"]')
    tick_part = chart.split('subgraph loc0_tick0["tick 0"]')[1].split("    end")[0]
    assert "batch()<br/>counter.py:35" in tick_part and "snapshot()<br/>counter.py:39" in tick_part
    assert "fold()" not in tick_part  # the fold is top-level (unbounded), outside the tick
    by_op = {x.op + (f":{x.site.line}"): ids[x] for x in nodes}
    assert f"class {by_op['fold:30']} state" in chart  # the only state kept across ticks
    assert (by_op["fold:30"], by_op["snapshot:39"]) in edges
    nd = re.search(r"class ([\w,]+) nondet", chart)
    assert nd is not None and set(nd.group(1).split(",")) == {by_op["batch:35"], by_op["snapshot:39"]}
    assert "nondet: queries may be answered in any grouping" in labels[by_op["batch:35"]]
    ports = re.search(r"class ([\w,]+) port", chart)
    assert ports is not None and len(ports.group(1).split(",")) == 4  # two sources, two sinks


def test_labels_are_escaped_for_mermaid() -> None:
    class P: ...

    fb = hl.FlowBuilder("quotes")
    p = fb.process(P)
    p.source("xs", int).batch(p.tick(), nondet('say "why" <here> #1')).all_ticks().sink("out")
    chart = flow_mermaid(fb.finalize())
    (label,) = [v for v in boxes(chart).values() if v.startswith("batch()")]
    assert label.endswith("nondet: say #quot;why#quot; #lt;here#gt; #35;1")
    assert '"' not in label and "<" not in label.replace("<br/>", "")
    assert escape('a"b') == "a#quot;b"


def test_the_spark_plan_shows_as_plan_mermaid() -> None:
    from hydrolite.planner.spark.placement import place
    from hydrolite.planner.spark.render import render_mermaid, render_text
    from hydrolite.planner.spark.stages import plan_flow

    view = notebook.plan(counter.build)
    bundle = view._repr_mimebundle_()
    expected = plan_flow(counter.build())
    for stage in expected.stages:
        stage.placement = place(stage, executors=True)
    assert bundle["text/vnd.mermaid"] == render_mermaid(expected)
    assert bundle["text/markdown"] == f"```mermaid\n{render_mermaid(expected)}\n```\n"
    assert bundle["text/plain"] == render_text(expected)
    assert 'subgraph q0["query 0: tick0"]' in bundle["text/vnd.mermaid"]
    with pytest.raises(notebook.NotebookError, match="keyed_state must be 'executors' or 'driver', not 'gpu'"):
        notebook.plan(counter.build, keyed_state="gpu")
    with pytest.raises(notebook.NotebookError, match="expected a hydrolite.Flow or a function returning one, got int"):
        notebook.plan(lambda: 3)  # type: ignore[arg-type,return-value]  # the misuse under test


def test_a_passing_simulation_shows_its_executions() -> None:
    result = notebook.simulate(counter.build, scenario)
    assert result.passed and result.failure is None and result.executions >= 1
    assert result.check() is result
    html = result._repr_html_()
    assert "&#10003; counter: passed" in html and f"{result.executions} exhaustive execution" in html
    assert repr(result) == f"counter: passed {result.executions} exhaustive execution(s)"
    fuzzed = notebook.simulate(counter.build, scenario, fuzz=25, seed=3)
    assert fuzzed.passed and fuzzed.mode == "fuzz" and fuzzed.executions == 25


def test_a_failed_simulation_shows_its_report_laid_out() -> None:
    result = notebook.simulate(counter_naive.build, scenario)
    assert not result.passed and isinstance(result.failure, SimulationFailure)
    report = result.failure.report
    html = result._repr_html_()
    assert html == result.failure._repr_html_()  # a caught failure shows the same
    assert repr(result) == report
    parts = split_report(report)
    assert parts is not None
    assert parts.headline.startswith("hydrolite simulation failed: exhaustive exploration")
    assert parts.error == [
        "AssertionError: 'query_response' yielded ('c1', 0), expected ('c1', 1) (item 1 of [('c1', 1)])"
    ]
    assert parts.steps_title.startswith("Steps and choices that led here")
    assert parts.replay[0].startswith("Replay this execution: ")
    # every part, escaped, in its place
    assert '<div style="font-weight: bold; color: #c92a2a">hydrolite simulation failed' in html
    assert "AssertionError: &#x27;query_response&#x27; yielded (&#x27;c1&#x27;, 0)" in html
    assert re.search(r'<span style="color: #1c64b0">\s+--&gt; \S*counter_naive\.py:34  batch\(\)', html), html
    assert re.search(r'<span style="color: #2b8a3e">\s+\|  \^ released 0', html), html
    assert re.search(r'<span style="font-weight: bold">\s+\* ran Tick#0', html), html
    assert f"<code>{parts.replay[0].replace(chr(39), '&#x27;')}" in html.replace("&lt;", "<").replace("&gt;", ">")
    with pytest.raises(SimulationFailure) as raised:
        result.check()
    assert raised.value is result.failure


def test_reports_of_another_shape_are_shown_whole() -> None:
    odd = "something <odd>\nwithout the usual parts"
    assert split_report(odd) is None
    assert report_html(odd).endswith(">something &lt;odd&gt;\nwithout the usual parts</pre>")
    md = report_markdown("head line\n\nAssertionError: x\n\nReplay this execution: r")
    assert md == "**head line**\n\n```text\nAssertionError: x\n\nReplay this execution: r\n```\n"
    assert "````text" in report_markdown("h\n\nan ``` inside")


def test_the_docs_notebook_runs_in_a_real_kernel() -> None:
    import nbformat  # the dev extra: nbformat, nbclient and ipykernel
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "docs" / "notebook.ipynb", as_version=4)
    nb.cells = [c for c in nb.cells if "spark" not in c.metadata.get("tags", [])]  # Spark: tests/spark
    start = time.monotonic()
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "docs")}}
    ).execute()
    took = time.monotonic() - start
    results = [o["data"] for c in nb.cells if c.cell_type == "code" for o in c.outputs if "data" in o]
    flow, plan, passed, failed = results
    assert flow["text/vnd.mermaid"].startswith("flowchart LR") and "fold()" in flow["text/vnd.mermaid"]
    assert flow["text/plain"].startswith("Flow 'counter': 14 operators")
    assert 'subgraph q0["query 0: tick0"]' in plan["text/vnd.mermaid"]
    assert "counter: passed" in passed["text/html"]
    assert "hydrolite simulation failed" in failed["text/html"] and "--&gt;" in failed["text/html"]
    print(f"notebook executed in {took:.1f} s")
