"""Planning (no Spark needed): stages = queries, fusion, channels, and the `plan` printouts."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

import hydrolite as hl
from examples import bank, counter, counter_naive, kvstore
from hydrolite import nondet
from hydrolite.cli import main
from hydrolite.ir import nodes as n
from hydrolite.planner.spark.render import render_dot, render_mermaid, render_text
from hydrolite.planner.spark.stages import SparkPlanError, plan_flow


class Server:
    """Tag."""


def test_aligned_counter_is_one_query() -> None:
    plan = plan_flow(counter.build())
    assert len(plan.stages) == 1
    (q,) = plan.stages
    assert [s.port for s in q.sources] == ["increment", "query"]
    assert sorted(s.port for s in q.sinks) == ["increment_ack", "query_response"]
    assert [x.op for x in q.stateful] == ["fold"]  # the carried fold keeps versioned state
    assert len(q.regions) == 1 and q.tick is not None


def test_naive_counter_is_two_queries() -> None:
    plan = plan_flow(counter_naive.build())
    assert [s.name for s in plan.stages] == ["tick0", "pipeline0"]
    tick, acks = plan.stages
    # the query tick reads queries and increments (the top-level fold is fused into it)
    assert [s.port for s in tick.sources] == ["increment", "query"]
    assert [s.port for s in tick.sinks] == ["query_response"]
    assert [x.op for x in tick.stateful] == ["fold"]
    # the ack pipeline crosses no tick: its own query, reading increments on its own
    assert [s.port for s in acks.sources] == ["increment"] and [s.port for s in acks.sinks] == ["increment_ack"]
    assert acks.tick is None and not acks.stateful


@pytest.mark.parametrize("build", [kvstore.build, bank.build], ids=["kvstore", "bank"])
def test_examples_with_align_points_are_one_query(build: Callable[[], hl.Flow]) -> None:
    assert len(plan_flow(build()).stages) == 1


def test_plan_text_shows_queries_merged_ticks_and_regions() -> None:
    text = render_text(plan_flow(counter.build()))
    assert text.startswith("plan of 'counter': 1 query")
    assert "merged ticks: Tick#0[Process[Server]]" in text
    assert "aligned region align#0[Process[Server]]" in text
    assert (
        "reads: increment (counter.py:26), query (counter.py:27)  [one streaming DataFrame, tagged by source]" in text
    )
    assert "state (versioned by batch id; where it lives and why):" in text
    assert "fold() counter.py:30: driver (versioned SQLite store): not keyed: one value" in text
    kv = render_text(plan_flow(kvstore.build()))
    assert (
        "reduce() kvstore.py:29: executors (Spark state store, RocksDB): keyed, fed per element and read only "
        "per key (by lookup_keyed_singleton() kvstore.py:36)" in kv
    )
    naive = render_text(plan_flow(counter_naive.build()))
    assert naive.startswith("plan of 'counter_naive': 2 queries")
    assert "query 1 'pipeline0': streaming query for a top-level pipeline (crosses no tick)" in naive


def test_plan_pictures() -> None:
    plan = plan_flow(counter_naive.build())
    dot = render_dot(plan)
    assert dot.startswith('digraph "counter_naive"') and dot.count("subgraph cluster_") == 2
    mer = render_mermaid(plan)
    assert mer.startswith("flowchart LR") and 'subgraph q1["query 1: pipeline0"]' in mer


def two_ticks() -> hl.Flow:
    """Tick A's output is batched into tick B: two unaligned queries joined by a channel."""
    flow = hl.FlowBuilder("two_ticks")
    p = flow.process(Server)
    xs = p.source("x", int)
    a, b = p.tick(), p.tick()
    doubled = xs.batch(a, nondet("any grouping")).map(lambda x: x * 2).all_ticks()
    doubled.batch(b, nondet("any grouping")).count().into_stream().all_ticks().sink("counts")
    doubled.sink("doubled")
    return flow.finalize()


def test_tick_to_tick_edges_become_channels() -> None:
    plan = plan_flow(two_ticks())
    assert [s.name for s in plan.stages] == ["tick0", "tick1"]
    (ch,) = plan.channels
    assert isinstance(ch.node, n.AllTicks) and ch.producer == 0 and ch.consumers == [1]
    assert [s.port for s in plan.stages[0].sinks] == ["doubled"]  # tick A's outputs stay in its query
    assert plan.stages[1].sources == [] and plan.stages[1].channels_in == [ch]
    assert re.search(r"channel ch_all_ticks-[0-9a-f]{10} from query 0", render_text(plan))  # named by its stable id


def test_clusters_are_planned_as_member_keyed_processes() -> None:
    flow = hl.FlowBuilder("cl")
    c = flow.cluster(Server)
    c.source("x", int).sink("y")
    plan = plan_flow(flow.finalize(), {"Server": 3})  # tests/spark/test_cluster_lift.py has the rest
    assert plan.cluster_members == {"Server": 3} and plan.cluster_ports == {"x": "Server", "y": "Server"}
    assert str(plan.flow.sources["x"].meta.loc) == "Process[Server*3]"


def test_cli_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "examples/counter.py"]) == 0
    assert "plan of 'counter': 1 query" in capsys.readouterr().out
    assert main(["plan", "examples/counter_naive.py", "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    assert out.count("subgraph q") == 2
    assert main(["plan", "examples/counter_naive.py", "--format", "dot"]) == 0
    assert capsys.readouterr().out.count("subgraph cluster_") == 2


PROG = """
import hydrolite as hl
from hydrolite import nondet


class Tag:
    "The program's process."


def build() -> hl.Flow:
    return other("main_flow")


def other(name: str = "other_flow") -> hl.Flow:
    flow = hl.FlowBuilder(name)
    proc = flow.process(Tag)
    xs = proc.source("xs", int)
    xs.batch(proc.tick(), nondet("any batching")).map(lambda x: x + 1).all_ticks().sink("n")
    return flow.finalize()
"""


def test_cli_names_the_program_as_a_file_a_module_or_module_colon_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "prog_by_name.py").write_text(PROG)
    (tmp_path / "prog_broken.py").write_text("import no_such_dependency_here\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    for mod in ("prog_by_name", "prog_broken"):
        monkeypatch.delitem(__import__("sys").modules, mod, raising=False)
    for spec, name in [
        ("prog_by_name", "main_flow"),  # a module in the current directory, as `python -m` finds it (first:
        ("prog_by_name.py", "main_flow"),  # loading a file puts its directory on sys.path)
        ("prog_by_name:other", "other_flow"),
        (f"{tmp_path}/prog_by_name.py:other", "other_flow"),
    ]:
        assert main(["plan", spec]) == 0, spec
        assert capsys.readouterr().out.startswith(f"plan of {name!r}"), spec
    with pytest.raises(SystemExit, match="cannot import the program 'nothing_here': no module named 'nothing_here'"):
        main(["plan", "nothing_here"])
    with pytest.raises(SystemExit, match=r"prog_by_name has no nope\(\) function"):
        main(["plan", "prog_by_name:nope"])
    with pytest.raises(SystemExit, match="no such program file: missing.py"):
        main(["plan", "missing.py"])
    # a module the program itself imports is missing: its own error, not "cannot import the program"
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_here"):
        main(["plan", "prog_broken"])


def test_plan_says_deferred_rows_live_in_parquet_the_executors_write_and_one_value_on_the_driver() -> None:
    from hydrolite.planner.spark.placement import place_all

    flow = hl.FlowBuilder("deferred")
    proc = flow.process(Server)
    tick = proc.tick()
    b = proc.source("xs", int).batch(tick, nondet("any batching"))
    handle, previous = tick.stream_cycle(int)
    handle.complete_next_tick(b.map(lambda x: x * 10))
    previous.all_ticks().sink("cycle")
    b.map(lambda x: ("k", x)).into_keyed().defer_tick().entries().all_ticks().sink("keyed")
    b.map(lambda x: (x % 2, x)).into_keyed().count().defer_tick().entries().all_ticks().sink("keyed_singleton")
    b.count().defer_tick().into_stream().all_ticks().sink("one")
    plan = plan_flow(flow.finalize())
    for option in ("auto", "executors", "driver"):
        place_all(plan, option, "local[2]")
        (stage,) = plan.stages
        assert stage.placement is not None
        lines = {p.node.op + str(p.node.site.line): p.describe() for p in stage.placement.placements}
        deferred = [v for k, v in lines.items() if k.startswith("defer_tick")]
        parquet = [v for v in deferred if "executors (Parquet files under the query's checkpoint)" in v]
        assert len(deferred) == 4 and len(parquet) == 3, option  # a stream, a keyed stream, a keyed singleton
        assert all("the driver keeps only the path" in v for v in parquet)
        (one,) = set(deferred) - set(parquet)
        assert "driver (versioned SQLite store)" in one
        (cycle,) = [v for k, v in lines.items() if k.startswith("cycle_sink")]
        assert "the stream cycle's elements for the next batch, kept by defer_tick()" in cycle


def test_each_state_gives_the_reason_that_decides_its_home() -> None:
    """The keyed-state option's reason only where the option decides: a non-keyed fold and a
    non-keyed enumerate() stay on the driver whatever it says; a keyed enumerate() of a
    source is counted natively unless the run asks for driver state."""
    from hydrolite.planner.spark.placement import place_all

    flow = hl.FlowBuilder("reasons")
    proc = flow.process(Server)
    proc.source("xs", int).enumerate().sink("indexed")
    proc.keyed_source("ks", str, int).enumerate().entries().sink("indexed_by_key")
    proc.source("ys", int).fold(lambda: 0, lambda a, y: a + y).snapshot(
        proc.tick(), nondet("any")
    ).into_stream().all_ticks().sink("sum")
    plan = plan_flow(flow.finalize())
    for option, keyed_why in (("auto", "native streaming aggregation"), ("driver", "the run asked for driver state")):
        place_all(plan, option, "local[2]")
        whys = {
            p.node.op + ("k" if p.node.children[0].meta.kind.keyed else ""): p
            for s in plan.stages
            for p in (s.placement.placements if s.placement is not None else ())
        }
        assert whys["enumeratek"].why.startswith(keyed_why), (option, whys["enumeratek"].why)
        assert whys["enumeratek"].native == (option == "auto")
        assert whys["enumerate"].why.startswith("enumerate() state is not a keyed aggregate"), whys["enumerate"].why
        assert whys["fold"].why.startswith("not keyed: one value"), whys["fold"].why


def test_cli_plan_into_a_closed_pipe_ends_quietly() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = "import sys; from hydrolite.cli import main; sys.exit(main(['plan', 'examples/counter.py']))"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the plan is printed (`| head` that already quit)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and b"BrokenPipeError" not in err and b"Traceback" not in err


def test_every_node_class_has_a_spark_translation() -> None:
    from hydrolite.planner.spark import ops, ops_state  # noqa: F401  (registers the handlers)
    from hydrolite.planner.spark.exec import HANDLERS

    missing = [c.__name__ for c in n.node_classes() if c not in HANDLERS]
    assert missing == []


def test_unbounded_join_is_placed_per_key_or_with_its_history() -> None:
    flow = hl.FlowBuilder("j")
    p = flow.process(Server)
    p.source("a", tuple[str, int]).join(p.source("b", tuple[str, int])).sink("out")
    plan = plan_flow(flow.finalize())
    (placed,) = [x for s in plan.stages if s.placement is not None for x in s.placement.placements]
    assert placed.executors and "both sides kept per key" in placed.why
    # a side through unique(): each key keeps the elements it saw (region.Chain.kept)
    flow = hl.FlowBuilder("j1")
    p = flow.process(Server)
    p.source("a", int).unique().map(lambda c: (c, c)).join(p.source("b", tuple[int, int])).sink("out")
    stages = plan_flow(flow.finalize()).stages
    (placed,) = [x for s in stages if s.placement is not None for x in s.placement.placements if x.node.op == "join"]
    assert placed.executors and "keeps the elements unique() test_plan.py:" in placed.why, placed.why
    # a side that is not a chain from the query's inputs (here: through an enumerate(), which
    # counts across batches): its history as Parquet (history.py); before, refused at plan time
    flow = hl.FlowBuilder("j2")
    p = flow.process(Server)
    counted = p.source("a", int).enumerate().map(lambda ic: (ic[1], ic[0]))
    counted.join(p.source("b", tuple[int, int])).sink("out")
    plan = plan_flow(flow.finalize())
    placed = next(
        x for s in plan.stages if s.placement is not None for x in s.placement.placements if x.node.op == "join"
    )
    assert placed.rows and not placed.executors, placed
    assert "its left side" in placed.why and "history.py" in placed.why, placed.why
    from hydrolite.planner.spark.state_homes import home_of

    (stage,) = plan.stages  # recorded as its own home: a resume that would move it is refused
    assert home_of(stage, placed.node) == "history"


def fold_two_ticks() -> hl.Flow:
    """One fold snapshotted aligned in two ticks (tests/passes/programs.py): the ticks merge."""
    flow = hl.FlowBuilder("fold_two_ticks")
    p = flow.process(Server)
    total = p.source("xs", int).fold(0, lambda a, x: a + x)
    align = p.local_align_point()
    t1, t2 = p.tick(), p.tick()
    total.snapshot_aligned(
        t1, align, nondet("any version, as long as both reads agree")
    ).into_stream().all_ticks().sink("a")
    total.snapshot_aligned(
        t2, align, nondet("any version, as long as both reads agree")
    ).into_stream().all_ticks().sink("b")
    return flow.finalize()


def test_ticks_merged_by_an_align_point_are_one_query() -> None:
    plan = plan_flow(fold_two_ticks())
    (q,) = plan.stages
    assert q.merged_ticks == tuple(plan.flow.regions[0].merged_ticks) and len(q.merged_ticks) == 2
    assert sorted(s.port for s in q.sinks) == ["a", "b"]
    assert "merged ticks: Tick#0[Process[Server]], Tick#1[Process[Server]]" in render_text(plan)


def test_a_top_level_anti_join_takes_keys_of_literals_and_stateless_operators_only() -> None:
    """Each batch evaluates a top-level `anti_join`'s keys whole (`exec.whole`): keys through
    map/chain plan, keys through unique() (state across batches) are refused at plan time."""
    flow = hl.FlowBuilder("anti")
    p = flow.process(Server)
    p.source("a", tuple[int, str]).anti_join(p.source_iter([1]).chain(p.source_iter([2])).map(lambda k: k)).sink("o")
    assert len(plan_flow(flow.finalize()).stages) == 1
    flow = hl.FlowBuilder("anti2")
    p = flow.process(Server)
    p.source("a", tuple[int, str]).anti_join(p.source_iter([1, 1]).unique()).sink("o")
    with pytest.raises(
        SparkPlanError,
        match=r"test_plan.py:\d+: anti_join\(\) at top level needs all its keys in every micro-batch, and they pass "
        r"through unique\(\) \(at .*test_plan.py:\d+\).*\n.*fix: build the keys from source_iter\(\)",
    ):
        plan_flow(flow.finalize())


def test_a_cross_product_of_unbounded_streams_keeps_its_history_on_the_executors() -> None:
    flow = hl.FlowBuilder("x")
    p = flow.process(Server)
    p.source("a", int).cross_product(p.source("b", str).map(lambda s: s + "!")).sink("out")
    (placed,) = [
        x for s in plan_flow(flow.finalize()).stages if s.placement is not None for x in s.placement.placements
    ]
    assert placed.executors and "whole history kept under one key" in placed.why
    flow = hl.FlowBuilder("x2")
    p = flow.process(Server)
    p.source("a", int).enumerate().cross_product(p.source("b", str)).sink("out")
    plan = plan_flow(flow.finalize())  # a side Spark's state cannot take: its history as Parquet (history.py)
    placed = next(
        x
        for s in plan.stages
        if s.placement is not None
        for x in s.placement.placements
        if x.node.op == "cross_product"
    )
    assert placed.rows and "its left side" in placed.why and "history.py" in placed.why, placed.why
