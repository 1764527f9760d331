"""Operators on Spark, native and Python (Arrow) paths, state over time, cycles, channels, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.errors import BadDataError, SparkRunError, UserFunctionError
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.verify import unread_entries, verify_runner

pytestmark = pytest.mark.spark
ANY = nondet("the test sends one batch per step")


class P:
    """Tag."""


def digits_sorted(x: int) -> str:
    return "".join(sorted(str(x)))  # not translatable: runs through Arrow


def ops_program() -> hl.Flow:
    flow = hl.FlowBuilder("ops")
    p = flow.process(P)
    xs = p.source("x", int)
    t = p.tick()
    b = xs.batch(t, ANY)
    b.map(lambda x: x * 2).filter(lambda x: x % 3 != 0).all_ticks().sink("native")
    b.map(digits_sorted).all_ticks().sink("arrow_map")
    b.flat_map_ordered(lambda x: range(x % 3)).all_ticks().sink("flat")
    b.sort(key=lambda x: -x).enumerate().all_ticks().sink("sorted")
    b.fold(0, lambda acc, x: acc * 2 + x).into_stream().all_ticks().sink("tick_fold")
    keyed = xs.map(lambda x: (x % 2, x)).into_keyed().fold(0, lambda a, x: a * 10 + x)
    keyed.snapshot(t, ANY).entries().all_ticks().sink("keyed_fold")
    handle, prev = t.singleton_cycle(0)
    total = prev.zip(b.count()).map(lambda pc: pc[0] + pc[1])
    handle.complete_next_tick(total)
    total.into_stream().all_ticks().sink("cycle_total")
    b.defer_tick().all_ticks().sink("prev_batch")
    stream_handle, pending = t.stream_cycle(int)
    stream_handle.complete_next_tick(b.map(lambda x: x + 100))
    pending.all_ticks().sink("cycled")
    xs.unique().sink("unique")
    xs.enumerate().sink("enum")
    return flow.finalize()


def ops_scenario(s: Any) -> None:
    x = s.sender("x")
    x.send_many([3, 1, 3])
    s.receiver("native").assert_yields([2])
    x.send_many([5, 1])
    s.receiver("native").assert_yields_only([10, 2])
    s.receiver("arrow_map").assert_yields_only(["3", "1", "3", "5", "1"])
    s.receiver("flat").assert_yields_only([0, 0, 1, 0])
    s.receiver("sorted").assert_yields_only([(0, 3), (1, 3), (2, 1), (0, 5), (1, 1)])
    # each send's deferred elements (defer_tick, the stream cycle) make the tick run once more
    # without new input (the stage's heartbeat): an empty batch there
    s.receiver("tick_fold").assert_yields_only([17, 0, 11, 0])
    s.receiver("keyed_fold").assert_yields_only([(1, 313), (1, 313), (1, 31351), (1, 31351)])
    s.receiver("cycle_total").assert_yields_only([3, 3, 5, 5])
    s.receiver("prev_batch").assert_yields_only([3, 1, 3, 5, 1])
    s.receiver("cycled").assert_yields_only([103, 101, 103, 105, 101])
    s.receiver("unique").assert_yields_only([3, 1, 5])
    s.receiver("enum").assert_yields_only([(0, 3), (1, 1), (2, 3), (3, 5), (4, 1)])


def test_operators_native_python_and_stateful(spark: SparkSession, tmp_path: Path) -> None:
    h = SparkHarness(ops_program(), spark, str(tmp_path))
    h.run(ops_scenario)
    report = verify_runner(h.runner)
    assert report.identical, str(report)
    paths = {k: v for s in h.runner.stages for k, v in s.progress.fn_paths.items()}
    assert paths[f"map() test_operators.py:{line_of('b.map(lambda x: x * 2)')}"] == "native"
    assert paths[f"map() test_operators.py:{line_of('b.map(digits_sorted)')}"].startswith("arrow (call of 'sorted')")
    assert paths[f"fold() test_operators.py:{line_of('b.fold(0, lambda acc, x: acc * 2 + x)')}"].startswith(
        "arrow (sequential fold"
    )
    # deferred rows are where `hydrolite plan` says: Parquet the executors wrote, a directory
    # per batch id under the query's checkpoint (the driver's store holds only the path); only
    # the last two batches' stay (a replay of the newest reads the one before)
    deferred = [p for st in h.runner.plan.stages if st.placement is not None for p in st.placement.placements if p.rows]
    assert sorted(p.node.op for p in deferred) == ["cycle_sink", "defer_tick", "defer_tick"], deferred
    batches = sorted(tmp_path.glob("**/state/blobs/*/*/_SUCCESS"))
    by_operator: dict[str, set[int]] = {}
    for done in batches:
        by_operator.setdefault(done.parent.parent.name, set()).add(int(done.parent.name))
    last = max(st.progress.last_batch for st in h.runner.stages)
    assert last >= 3, last  # batches 0 and 1 wrote directories that are gone
    deferred_dirs = {k: ids for k, ids in by_operator.items() if k.startswith("defer_tick")}
    assert len(deferred_dirs) == 2 and all(ids == {last - 1, last} for ids in deferred_dirs.values()), (
        by_operator,
        last,
    )
    # the copy of the keyed fold read whole by `entries()` (executor state: `channel_versions.whole_table`),
    # a directory per batch that updated a key, of which the newest two stay
    copies = {k: ids for k, ids in by_operator.items() if k.startswith("whole_")}
    assert set(by_operator) == set(deferred_dirs) | set(copies), by_operator
    assert len(copies) == 1 and all(len(ids) <= 2 for ids in copies.values()), copies


def line_of(needle: str) -> int:
    return next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if needle in text)


def joins_program() -> hl.Flow:
    flow = hl.FlowBuilder("joins")
    p = flow.process(P)
    t = p.tick()
    a = p.source("a", tuple[str, int]).batch(t, ANY)
    b = p.source("b", tuple[str, str]).batch(t, ANY)
    a.join(b).all_ticks().sink("joined")
    a.anti_join(b.map(lambda kv: kv[0])).all_ticks().sink("anti")
    a.map(lambda kv: kv[0]).chain(b.map(lambda kv: kv[1])).all_ticks().sink("chained")
    a.map(lambda kv: kv[1]).cross_product(b.map(lambda kv: kv[0])).all_ticks().sink("crossed")
    a.into_keyed().reduce_commutative(lambda x, y: x + y).entries().all_ticks().sink("per_key")
    return flow.finalize()


def joins_scenario(s: Any) -> None:
    s.sender("a").send_many([("k", 1), ("j", 2), ("k", 3)])
    s.sender("b").send_many([("k", "x"), ("m", "y")])
    s.receiver("joined").assert_yields_only_unordered([("k", (1, "x")), ("k", (3, "x"))])
    s.receiver("anti").assert_yields_only([("j", 2)])
    s.receiver("chained").assert_yields_only(["k", "j", "k", "x", "y"])
    s.receiver("crossed").assert_yields_only_unordered([(v, k) for v in (1, 2, 3) for k in ("k", "m")])
    s.receiver("per_key").assert_yields_only_unordered([("k", 4), ("j", 2)])


def test_joins_chain_cross_and_keyed_reduce(spark: SparkSession, tmp_path: Path) -> None:
    SparkHarness(joins_program(), spark, str(tmp_path)).run(joins_scenario)


def three_ticks() -> hl.Flow:
    """Three unaligned ticks in a row: two channels, the middle query both consumer and producer."""
    flow = hl.FlowBuilder("three_ticks")
    p = flow.process(P)
    a, b, c = p.tick(), p.tick(), p.tick()
    doubled = p.source("x", int).batch(a, ANY).map(lambda x: x * 2).all_ticks()
    plus = doubled.batch(b, ANY).map(lambda x: x + 1).all_ticks()
    plus.batch(c, ANY).count().into_stream().all_ticks().sink("counts")
    plus.sink("plus")
    return flow.finalize()


def test_a_chain_of_three_queries_delivers_past_a_batch_that_ran_no_tick(spark: SparkSession, tmp_path: Path) -> None:
    """Unaligned ticks run as queries joined by channels. The middle query's first
    micro-batch has no data (Spark runs it anyway) and runs no tick, so its channel has no
    entry 0. The last query used to read entries 0, 1, ... only up
    to the first one missing: it waited for entry 0 for ever and `counts` stayed silent."""

    def scenario(s: Any) -> None:
        s.sender("x").send_many([1, 2, 3])
        s.receiver("plus").assert_yields([3, 5, 7])
        s.receiver("counts").assert_yields([3])
        s.sender("x").send(4)
        s.receiver("plus").assert_yields_only([9])
        s.receiver("counts").assert_yields_only([1])

    h = SparkHarness(three_ticks(), spark, str(tmp_path))
    h.run(scenario)
    assert [s.stage.name for s in h.runner.stages] == ["tick0", "tick1", "tick2"]
    # two ticks each (Spark's empty first batch of a reading query runs none)
    assert [s.progress.batches for s in h.runner.stages] == [2, 2, 2]
    assert unread_entries(h.runner) == []
    report = verify_runner(h.runner)
    assert report.identical, str(report)


def latest_program() -> hl.Flow:
    """A singleton computed by one tick (query) and snapshotted by another."""
    flow = hl.FlowBuilder("latest")
    p = flow.process(P)
    a, b = p.tick(), p.tick()
    size = p.source("x", int).batch(a, ANY).count().latest()
    queries = p.source("q", str).batch(b, ANY)
    queries.cross_singleton(size.snapshot(b, nondet("any recent size"))).all_ticks().sink("answers")
    return flow.finalize()


def test_singleton_crossing_queries(spark: SparkSession, tmp_path: Path) -> None:
    def scenario(s: Any) -> None:
        s.sender("x").send_many([1, 2, 3])
        s.receiver("answers").assert_no_more()
        s.sender("q").send("first")
        s.receiver("answers").assert_yields([("first", 3)])
        s.sender("x").send(7)
        s.receiver("answers").assert_no_more()
        s.sender("q").send("second")
        s.receiver("answers").assert_yields_only([("second", 1)])

    h = SparkHarness(latest_program(), spark, str(tmp_path))
    assert len(h.runner.plan.stages) == 2 and len(h.runner.plan.channels) == 1
    h.run(scenario)


def keyed_channel_program() -> hl.Flow:
    """A keyed stream of inferred types crossing from one query to another (carried pickled)."""
    flow = hl.FlowBuilder("keyed_channel")
    p = flow.process(P)
    a, b = p.tick(), p.tick()
    words = p.source("w", str).batch(a, ANY).map(lambda w: (w, len(w))).into_keyed().all_ticks()
    words.batch(b, ANY).fold_commutative(0, lambda c, n: c + n).entries().all_ticks().sink("lengths")
    return flow.finalize()


def test_keyed_stream_crossing_queries(spark: SparkSession, tmp_path: Path) -> None:
    def scenario(s: Any) -> None:
        s.sender("w").send_many(["ab", "c", "ab"])
        s.receiver("lengths").assert_yields_only_unordered([("ab", 4), ("c", 1)])

    SparkHarness(keyed_channel_program(), spark, str(tmp_path)).run(scenario)


def risky(x: int) -> int:
    if x == 3:
        raise ValueError("three is not allowed")
    return x


def failing_program(f: Any) -> hl.Flow:
    flow = hl.FlowBuilder("failing")
    p = flow.process(P)
    t = p.tick()
    p.source("x", int).batch(t, ANY).map(f).all_ticks().sink("out")
    return flow.finalize()


def test_failing_python_function_names_operator_line_element_and_batch(spark: SparkSession, tmp_path: Path) -> None:
    def scenario(s: Any) -> None:
        s.sender("x").send_many([1, 2])
        s.receiver("out").assert_yields([1, 2])
        s.sender("x").send_many([4, 3])
        s.receiver("out").next()

    with pytest.raises(UserFunctionError) as info:  # raised in a Python worker: its class and fields survive
        SparkHarness(failing_program(risky), spark, str(tmp_path)).run(scenario)
    err = info.value
    assert (err.code, err.op, err.batch_id, err.stage) == ("HL-USER-FUNCTION", "map", 1, "tick0")
    msg = str(err)
    assert "hydrolite-error" not in msg  # the machine-readable note is not part of the message
    assert "test_operators.py:" in msg and "map() failed on element 3 in batch 1 of query 'tick0'" in msg
    assert "ValueError: three is not allowed" in msg
    assert f"the function is defined at test_operators.py:{line_of('def risky(')}" in msg


def test_failing_native_expression_is_traced_to_its_element(spark: SparkSession, tmp_path: Path) -> None:
    def scenario(s: Any) -> None:
        s.sender("x").send_many([5, 0])
        s.receiver("out").next()

    with pytest.raises(SparkRunError) as info:
        SparkHarness(failing_program(lambda x: 10 // x), spark, str(tmp_path)).run(scenario)
    msg = str(info.value)
    assert "map() failed on element 0 in batch 0 of query 'tick0': ZeroDivisionError" in msg
    assert "batch(t, ANY).map(f)" in msg  # the operator's code line
    assert f"the function is defined at test_operators.py:{line_of('failing_program(lambda x: 10 // x)')}" in msg


def test_bad_input_data_names_the_port(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "1.json").write_text('{"value": 1}\n{"value": "not a number"}\n')
    with FlowRunner(
        failing_program(lambda x: x),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"x": f"json:{tmp_path / 'in'}"},
    ) as run:
        run.start()
        with pytest.raises(
            BadDataError,
            match=r"input 'x' \(json files in .*\) has data that does not match its declared type Stream\[int",
        ) as info:
            run.process_all_available()
    msg = str(info.value)
    assert f"test_operators.py:{line_of('def failing_program') + 4}: input 'x'" in msg  # where the port is declared
    assert "batch 0 of query 'tick0'" in msg and "not a number" in msg  # the offending value
    assert "\tat " not in msg  # no JVM stack trace
