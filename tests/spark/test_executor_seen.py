"""`unique()`, the stateful `keys()` and a keyed `enumerate()` of elements that went through
Python functions, kept per key in Spark's state store (`region.ExecutorSeen`, issue 14).

Spark's own aggregation counts these only for elements it can compute itself
(`test_native_unique.py`); through any other function each element's key is known only in
Python, so the executor region's chains compute it and the `transformWithState` processor
keeps, per key, whether it was seen (or, for `enumerate()`, how many elements it had). Each
batch's new elements, in arrival order, must be what Python computes and what the simulator
gives for the same batches; a crash inside a batch must neither repeat nor lose an element or
an index; the driver store answers a first batch the same; and a checkpoint whose state lives
on the driver is refused by `--keyed-state executors` rather than started empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.placement import SEEN_WHY
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import assert_driver_checkpoint_refused, feeds, first_batch, json_batches, run_once

pytestmark = pytest.mark.spark

XS = [[3, 11, 7, 2], [6, 5, 1, 15, 4], [9, 13], [7, 17, 4, 8]]
YS = [[1], [], [21, 2], [30]]
KS = [[("a", 1), ("b", 4), ("a", 7)], [("a", 2), ("b", 1)], [("c", 3), ("a", 9), ("c", 5)], [("d", 0)]]
MORE = {"xs": [[10, 19, 19, 6]], "ys": [[0]], "ks": [[("a", 4), ("e", 5)]]}
PORTS = ("mod", "merged", "pairs", "odd_keys", "odd_indexed")


class P:
    """Tag of the process."""


def _program() -> hl.Flow:
    flow = hl.FlowBuilder("seen_py")
    p = flow.process(P)
    xs, ys = p.source("xs", int), p.source("ys", int)
    ks = p.keyed_source("ks", str, int)
    xs.map(lambda x: x % 4).unique().sink("mod")  # (a function Spark does not compute)
    xs.map(lambda x: x % 5).merge_unordered(ys.filter(lambda y: y % 3 != 0)).unique().sink("merged")
    ks.map(lambda v: v % 3).unique().entries().sink("pairs")
    odd = ks.filter(lambda v: v % 2 == 1)
    odd.keys().sink("odd_keys")
    odd.enumerate().entries().sink("odd_indexed")
    return flow.finalize()


def _run(
    spark: SparkSession,
    d: Path,
    keyed_state: str = "executors",
    fault: Any = None,
    more: bool = False,
    batches: int = 4,
) -> tuple[FlowRunner, dict[str, dict[int, list[Any]]]]:
    """Run on the feeds under `d` (written first: the first `batches` of the inputs, or MORE);
    the outputs by port and batch (`mod` from a memory sink: this run's batches, in order)."""
    steps = MORE if more else {"xs": XS[:batches], "ys": YS[:batches], "ks": KS[:batches]}
    if not more and (d / "xs").exists():  # (a rerun on what is there)
        steps = {"xs": [], "ys": [], "ks": []}
    inputs = feeds(d, {"xs": (int, None, steps["xs"]), "ys": (int, None, steps["ys"]), "ks": (int, str, steps["ks"])})
    runner = FlowRunner(
        _program(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=inputs,
        outputs={p: f"json:{d / p}_out" for p in PORTS} | {"mod": "memory"},
        fault=fault,
        keyed_state=keyed_state,
    )
    run_once(runner)
    got = {p: json_batches(d / f"{p}_out") for p in PORTS if p != "mod"}
    got["mod"] = {b: v for b, v in runner.memory("mod").batches.items() if v}
    return runner, got


def _new(items: list[Any], seen: set[Any]) -> list[Any]:
    out = [x for i, x in enumerate(items) if x not in seen and x not in items[:i]]
    seen |= set(items)
    return out


def _expected(xs: list[list[int]], ys: list[list[int]], ks: list[list[tuple[str, int]]]) -> dict[str, dict[int, Any]]:
    """Per batch: the new elements (pairs, keys) in order of first occurrence, and the odd
    values' (key, (index within the key over all batches, value))."""
    want: dict[str, dict[int, Any]] = {p: {} for p in PORTS}
    seen: dict[str, set[Any]] = {p: set() for p in PORTS}
    count: dict[str, int] = {}
    for b, (xb, yb, kb) in enumerate(zip(xs, ys, ks, strict=True)):
        odd = [(k, v) for k, v in kb if v % 2 == 1]
        news = {
            "mod": _new([x % 4 for x in xb], seen["mod"]),
            "merged": sorted(_new([x % 5 for x in xb] + [y for y in yb if y % 3 != 0], seen["merged"])),
            "pairs": sorted(_new([(k, v % 3) for k, v in kb], seen["pairs"])),
            "odd_keys": sorted(_new([k for k, _ in odd], seen["odd_keys"])),
        }
        indexed = []
        for k, v in odd:
            indexed.append((k, (count.get(k, 0), v)))
            count[k] = count.get(k, 0) + 1
        news["odd_indexed"] = sorted(indexed)
        for port, new in news.items():
            if new:
                want[port][b] = new
    return want


def _sorted(got: dict[str, dict[int, list[Any]]]) -> dict[str, dict[int, list[Any]]]:
    """Batches as sorted lists but `mod`'s (a memory sink keeps the stream's order; the
    others are NoOrder streams or files, whose rows have none)."""
    return {p: {b: v if p == "mod" else sorted(v) for b, v in by.items()} for p, by in got.items()}


def test_elements_seen_per_key_on_the_executors_answer_like_python_the_simulator_and_the_driver(
    spark: SparkSession, tmp_path: Path
) -> None:
    runner, got = _run(spark, tmp_path / "executors")
    placed = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
    assert sorted(p.node.op for p in placed) == ["enumerate", "keys", "unique", "unique", "unique"], placed
    for p in placed:
        assert p.executors and not p.native and p.why.startswith(SEEN_WHY[type(p.node)]), p.describe()
        assert "(not native streaming aggregation (RocksDB): " in p.why, p.why  # (and why not)
    assert _sorted(got) == _expected(XS, YS, KS)
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _, on_driver = _run(spark, tmp_path / "driver", keyed_state="driver", batches=1)
    assert _sorted(on_driver) == _sorted(first_batch(got))
    # a checkpoint whose seen elements live on the driver would start empty on the executors
    ops = [f"{op}@test_executor_seen.py" for op in ("unique", "keys", "enumerate")]
    assert_driver_checkpoint_refused(spark, _program(), tmp_path / "driver" / "ck", ops)


def test_a_crash_inside_a_batch_neither_repeats_nor_loses_an_element(spark: SparkSession, tmp_path: Path) -> None:
    """A crash inside batch 1 after its state was updated and its sinks wrote, before Spark
    committed it: the restart runs batch 1 again from the state version before it (the
    processor's state rolls back with Spark's), then more input. (A crash before the outputs,
    for every executor state: `test_native_chains.py`, `test_executor_state.py`.)"""
    fault = CrashOnce("after_sinks")
    with pytest.raises(Exception, match="crash at"):
        _run(spark, tmp_path, fault=fault, batches=2)
    assert fault.fired == [1]
    runner, got = _run(spark, tmp_path, more=True)
    want = _expected(XS[:2] + MORE["xs"], YS[:2] + MORE["ys"], KS[:2] + MORE["ks"])
    got.pop("mod")  # (a memory sink holds only this run's batches)
    assert _sorted(got) == {p: by for p, by in want.items() if p != "mod"}
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
