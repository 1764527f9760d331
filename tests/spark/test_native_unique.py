"""A top-level `unique()` / `keys()` / keyed `enumerate()` kept by Spark's own streaming
aggregation (issue 14).

The elements (keys) seen so far live in Spark's RocksDB state store as occurrence counts
(`native_state._unique_of`), not in the driver's store. The new elements of each batch, in
the order of their first occurrence, and each key's indexes continuing across batches must
be what Python computes, what the simulator gives for the same batches (`verify_runner`)
and, on a first batch, what the driver store gives; a crash inside a batch and a restart must neither repeat nor lose an element
nor an index; and what cannot be counted exactly (elements that went through a function,
floats) is not native, with the reason (the executor region keeps it:
`test_executor_seen.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.ir import nodes as n
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.native_state import WHY
from hydrolite.planner.spark.placement import SEEN_WHY, place
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import assert_driver_checkpoint_refused, first_batch, json_batches, run_once

pytestmark = pytest.mark.spark

XS = [[3, 1, 3, 2], [2, 5, 1, 5, 4], [9, 3], [7, 7, 4, 8]]
KS = [[("a", 1), ("b", 1), ("a", 1)], [("a", 2), ("b", 1)], [("c", 3), ("a", 2), ("c", 3)], [("d", 0)]]
MORE_XS, MORE_KS = [[8, 10, 10, 6]], [[("a", 1), ("e", 5)]]
PORTS = ("new_xs", "new_pairs", "new_keys", "indexed")


class P:
    """Tag of the process."""


def _program() -> hl.Flow:
    flow = hl.FlowBuilder("seen")
    p = flow.process(P)
    xs = p.source("xs", int)
    ks = p.keyed_source("ks", str, int)
    xs.unique().sink("new_xs")
    ks.unique().entries().sink("new_pairs")
    ks.keys().sink("new_keys")
    ks.enumerate().entries().sink("indexed")
    return flow.finalize()


def _run(
    spark: SparkSession,
    d: Path,
    keyed_state: str = "auto",
    fault: Any = None,
    more: bool = False,
    memory: bool = True,
    batches: int = len(XS),
) -> tuple[FlowRunner, dict[str, dict[int, list[Any]]]]:
    """Run on the feeds under `d` (written first: the first `batches` of XS and KS, or MORE_*
    when `more`); the outputs by port and batch. With `memory`, `new_xs` goes to a memory
    sink, which keeps each batch in the stream's order (a file's rows have none) but only
    this run's batches."""
    if more or not (d / "xs").exists():
        xw, kw = (
            FeedWriter(str(d / "xs"), from_python(int)),
            FeedWriter(str(d / "ks"), from_python(int), from_python(str)),
        )
        for xb, kb in zip(MORE_XS if more else XS[:batches], MORE_KS if more else KS[:batches], strict=True):
            xw.send_many(xb)
            kw.send_many(kb)
    runner = FlowRunner(
        _program(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs={p: f"feed:{d / p}?maxEntriesPerTrigger=1" for p in ("xs", "ks")},  # one entry per micro-batch
        outputs={p: f"json:{d / p}_out" for p in PORTS} | ({"new_xs": "memory"} if memory else {}),
        fault=fault,
        keyed_state=keyed_state,
    )
    run_once(runner)
    got = {p: json_batches(d / f"{p}_out") for p in PORTS}
    if memory:
        got["new_xs"] = {b: v for b, v in runner.memory("new_xs").batches.items() if v}
    return runner, got


def _expected(xs: list[list[int]], ks: list[list[tuple[str, int]]]) -> dict[str, dict[int, list[Any]]]:
    """Per batch: the elements (pairs, keys) not seen in an earlier batch, first occurrence
    first; and each pair as (key, (its index within the key over all batches, value))."""
    want: dict[str, dict[int, list[Any]]] = {"new_xs": {}, "new_pairs": {}, "new_keys": {}, "indexed": {}}
    seen: dict[str, set[Any]] = {p: set() for p in want}
    count: dict[str, int] = {}
    for b, (xb, kb) in enumerate(zip(xs, ks, strict=True)):
        for port, items in (("new_xs", xb), ("new_pairs", kb), ("new_keys", [k for k, _ in kb])):
            new = [x for i, x in enumerate(items) if x not in seen[port] and x not in items[:i]]
            seen[port] |= set(items)
            if new:
                want[port][b] = new
        for k, v in kb:
            want["indexed"].setdefault(b, []).append((k, (count.get(k, 0), v)))
            count[k] = count.get(k, 0) + 1
    return want


def _unordered(got: dict[str, dict[int, list[Any]]], ordered: str = "new_xs") -> dict[str, dict[int, list[Any]]]:
    """Batches as sorted lists, but `ordered`'s (from a memory sink: first occurrence first);
    new_pairs and new_keys are NoOrder streams (entries / keys), and a file's rows have no order."""
    return {p: {b: v if p == ordered else sorted(v) for b, v in by.items()} for p, by in got.items()}


def test_unique_and_keys_count_on_spark_and_answer_like_the_simulator_and_the_driver(
    spark: SparkSession, tmp_path: Path
) -> None:
    runner, got = _run(spark, tmp_path / "native")
    placements = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
    assert sorted(p.node.op for p in placements) == ["enumerate", "keys", "unique", "unique"], placements
    assert all(p.native and p.why.startswith(WHY) for p in placements), placements
    assert _unordered(got) == _unordered(_expected(XS, KS))
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    # the driver store's answers to a first batch are the same
    _, on_driver = _run(spark, tmp_path / "driver", keyed_state="driver", batches=1)
    assert _unordered(on_driver) == _unordered(first_batch(got))
    # Before the native path, the elements seen lived in the driver's store: that checkpoint
    # resumed natively would start counting from nothing and repeat every element
    ops = [f"{op}@test_native_unique.py" for op in ("unique", "keys", "enumerate")]
    assert_driver_checkpoint_refused(spark, _program(), tmp_path / "driver" / "ck", ops)


def test_a_crash_and_a_restart_neither_repeat_nor_lose_an_element(spark: SparkSession, tmp_path: Path) -> None:
    """A crash after the sinks wrote batch 1, before Spark committed it: the restart runs
    batch 1 again from the counts before it (rewriting the same outputs), then more input.
    Two batches before the crash are enough (the later ones are the first test's).
    (A crash before the outputs: test_native_chains.py, whose states include these.)"""
    fault = CrashOnce("after_sinks")
    with pytest.raises(Exception, match="crash at"):
        _run(spark, tmp_path, fault=fault, memory=False, batches=2)
    assert fault.fired == [1]
    runner, got = _run(spark, tmp_path, more=True, memory=False)  # batch 1 again, then the new input
    assert _unordered(got, "") == _unordered(_expected(XS[:2] + MORE_XS, KS[:2] + MORE_KS), "")
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


def test_elements_not_counted_exactly_are_kept_per_key_by_python_with_the_reason() -> None:
    """Not Spark's aggregation: the executor region's processor keeps them per element
    (`test_executor_seen.py`), and the reason says why the native path could not."""
    flow = hl.FlowBuilder("driver_seen")
    p = flow.process(P)
    p.source("xs", int).map(lambda x: x % 3).unique().sink("mapped")
    p.source("fs", float).unique().sink("floats")
    plan = plan_flow(flow.finalize())
    whys = {}
    for st in plan.stages:
        placed = place(st)
        whys.update({x.node.site.label: (x.native, x.why) for x in placed.placements})
    assert len(whys) == 2, whys
    for native, why in whys.values():
        assert not native and why.startswith(SEEN_WHY[n.Unique]), why
    text = " | ".join(why for _, why in whys.values())
    assert "passes through map()" in text and "elements (float) are not ints" in text, text


def test_keys_and_indexes_after_a_value_map_are_counted_by_spark(spark: SparkSession, tmp_path: Path) -> None:
    """A value map keeps each element's key (one element out per element in), so `keys()`
    and `enumerate()` of `ks.map(f)` count the keys of `ks` natively; a filter drops
    elements: the count of `ks.filter(p)` is native when Spark evaluates `p` itself (a simple
    comparison, `projection.predicate`) and stays on the driver otherwise, with the reason."""
    flow = hl.FlowBuilder("seen_mapped")
    p = flow.process(P)
    ks = p.keyed_source("ks", str, int)
    ks.map(lambda v: v * 10).enumerate().entries().sink("indexed")
    ks.inspect(lambda v: None).map(lambda v: -v).keys().sink("new_keys")
    ks.filter(lambda v: v > 1).enumerate().entries().sink("filtered")
    ks.filter(lambda v: v % 2 == 1).enumerate().entries().sink("odd")
    kw = FeedWriter(str(tmp_path / "ks"), from_python(int), from_python(str))
    for kb in KS:
        kw.send_many(kb)
    ports = ("indexed", "new_keys", "filtered", "odd")
    runner = FlowRunner(
        flow.finalize(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"ks": f"feed:{tmp_path / 'ks'}?maxEntriesPerTrigger=1"},
        outputs={port: f"json:{tmp_path / port}" for port in ports},
    )
    run_once(runner)
    placed = {
        x.node.site.line: x for st in runner.plan.stages if st.placement is not None for x in st.placement.placements
    }
    (indexed, new_keys, filtered, odd) = (placed[line] for line in sorted(placed))
    assert indexed.native and new_keys.native and filtered.native, placed
    assert " through filter() " in filtered.why, filtered.why
    assert not odd.native and "filter() test_native_unique.py" in odd.why and "not a simple comparison" in odd.why
    want = _expected(XS, KS)
    got = {port: json_batches(tmp_path / port) for port in ports}
    tens = {b: sorted((k, (i, v * 10)) for k, (i, v) in rows) for b, rows in want["indexed"].items()}
    assert {b: sorted(v) for b, v in got["indexed"].items()} == tens
    assert {b: sorted(v) for b, v in got["new_keys"].items()} == {b: sorted(v) for b, v in want["new_keys"].items()}
    for port, keep in (("filtered", lambda v: v > 1), ("odd", lambda v: v % 2 == 1)):
        count: dict[str, int] = {}
        kept: dict[int, list[Any]] = {}
        for b, kb in enumerate(KS):
            for k, v in kb:
                if keep(v):
                    kept.setdefault(b, []).append((k, (count.get(k, 0), v)))
                    count[k] = count.get(k, 0) + 1
        assert {b: sorted(v) for b, v in got[port].items()} == {b: sorted(v) for b, v in kept.items()}, port
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
