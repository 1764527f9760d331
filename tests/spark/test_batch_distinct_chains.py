"""Chains through a batch's `unique()` or `keys()` (within a tick) feed executor state and
ask it per key (`placement._Finder._in_batch`, `keyed_processor.first_occurrences`).

The common shape: at an align point, read the current value of every key the batch touched —
`ks.batch_aligned(t, al, ND).keys().map(lambda k: (k, 0)).into_keyed()` as the requests of
`lookup_keyed_singleton`. Each key must be asked once per batch however often it occurs (and
each distinct element once, through a `flat_map` after the `unique()`): the same answers as
the driver path (which computes the distinct step with Spark) and the simulator's replay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import run_to_json

pytestmark = pytest.mark.spark

ND = nondet("test: Spark's micro-batches are the batches")
XS = [[3, 3, 7, 4, 7], [7, 10, 3, 3], [1, 4, 4], [13, 1]]
KS = [[("a", 1), ("b", 2), ("a", 3)], [("a", 4), ("c", 5), ("c", 6), ("a", 7)], [("b", 8)], [("a", 9), ("a", 1)]]
PORTS = ("current", "distinct_asks")


class P:
    """Tag of the process."""


def _program() -> hl.Flow:
    flow = hl.FlowBuilder("batch_distinct")
    p = flow.process(P)
    t = p.tick()
    al = p.local_align_point()
    xs = p.source("xs", int)
    ks = p.keyed_source("ks", str, int)
    store = ks.fold(0, lambda a, v: a * 3 + v)  # (Python: not native)
    asked = ks.batch_aligned(t, al, ND).keys().map(lambda k: (k, 0)).into_keyed()
    current = asked.lookup_keyed_singleton(store.snapshot_aligned(t, al, ND))
    current.entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("current")
    # each distinct x of the batch asks for x and x + 3 (the same key x % 3) of a fold of all xs
    sums = xs.map(lambda x: (x % 3, x)).into_keyed().fold(0, lambda a, x: a * 2 + x)
    once = xs.batch_aligned(t, al, ND).unique().flat_map_ordered(lambda x: [x, x + 3])
    asks = once.map(lambda x: (x % 3, x)).into_keyed()
    sums.snapshot_aligned(t, al, ND).get_many_if_present(asks).entries().all_ticks().sink("distinct_asks")
    xs.release_aligned(al).sink("ack_x")
    ks.release_aligned(al).sink("ack_k")
    return flow.finalize()


def _run(spark: SparkSession, d: Path, keyed_state: str) -> tuple[FlowRunner, dict[str, dict[int, list[Any]]]]:
    inputs = {"xs": (int, None, XS), "ks": (int, str, KS)}
    return run_to_json(spark, _program(), d, inputs, PORTS, keyed_state, acks=("ack_x", "ack_k"))


def _expected() -> dict[str, dict[int, list[Any]]]:
    """Each batch: every key it touched, once, with its folded value so far; for each distinct
    x of the batch, x and x + 3 with the fold of all xs so far under x % 3."""
    want: dict[str, dict[int, list[Any]]] = {p: {} for p in PORTS}
    store: dict[str, int] = {}
    sums: dict[int, int] = {}
    for b, (xb, kb) in enumerate(zip(XS, KS, strict=True)):
        for k, v in kb:
            store[k] = store.get(k, 0) * 3 + v
        want["current"][b] = sorted((k, store[k]) for k in dict.fromkeys(k for k, _ in kb))
        for x in xb:
            sums[x % 3] = sums.get(x % 3, 0) * 2 + x
        want["distinct_asks"][b] = sorted((y % 3, (y, sums[y % 3])) for x in dict.fromkeys(xb) for y in (x, x + 3))
    return want


def test_requests_and_folds_through_a_batchs_distinct_step_stay_per_key_on_the_executors(
    spark: SparkSession, tmp_path: Path
) -> None:
    runner, got = _run(spark, tmp_path / "executors", "executors")
    placed = {p.node.op: p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements}
    assert set(placed) == {"fold"}, placed  # (both folds, nothing else keeps state)
    folds = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
    for p in folds:
        assert p.executors and not p.native and "read only per key" in p.why, p.describe()
    assert got == _expected()
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _, on_driver = _run(spark, tmp_path / "driver", "driver")
    assert on_driver == got
