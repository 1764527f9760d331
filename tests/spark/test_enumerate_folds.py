"""Keyed aggregates of a keyed `enumerate()`'s output, kept with the enumerate on the executors
(`kept_with.py`, `keyed_processor.Processor._enumerate`).

Before, such a state stayed on the driver: it would have been a second stateful operator in
the query (SPARK-47960). Now the enumerate's own `transformWithState` processor folds each
key's new (index, element) pairs, in arrival order, next to the key's count: an
order-sensitive fold, a count, a lookup of one and one read whole; and what each key's group
passed on, for a `unique()` / `keys()` of the pairs (`JoinedSeen`). These tests pin the
answers (worked by hand, equal to the driver path's and to the simulator's replay), the plan's
reasons, and that a crash inside a batch neither repeats nor loses an element.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import feeds, json_batches, run_once, run_to_json

pytestmark = pytest.mark.spark

ND = nondet("test: Spark's micro-batches are the batches")
DISTINCT = ("unique", "keys")
EVENTS = [[("a", 5), ("b", 1), ("a", 7)], [("b", 2)], [("a", 1), ("c", 4), ("c", 6)]]
ASKS = [["a", "z"], ["b"], ["a", "c"]]
PORTS = ("trail", "counts", "asked", "parities", "users", "sizes")


class P:
    """Tag of the process."""


def build() -> hl.Flow:
    """Per user: a trail of index:value strings (an order-sensitive fold of the enumerate's
    pairs, read whole), and how many events with a value over 1 it had (a count of them,
    looked up per ask)."""
    flow = hl.FlowBuilder("enumerate_folds")
    p = flow.process(P)
    t, al = p.tick(), p.local_align_point()
    events = p.source("events", tuple[str, int])
    numbered = events.into_keyed().enumerate()  # (user, (index, value))
    trail = numbered.map(lambda iv: f"{iv[0]}:{iv[1]}").fold("", lambda s, x: s + x + ";")
    trail.snapshot_aligned(t, al, ND).entries().all_ticks().sink("trail")
    big = numbered.filter(lambda iv: iv[1] > 1).count()
    asks = p.source("asks", str).batch_aligned(t, al, ND).map(lambda u: (u, 0)).into_keyed()
    asks.lookup_keyed_singleton(big.snapshot_aligned(t, al, ND)).entries().map(
        lambda e: (e[0], e[1][1])
    ).all_ticks().sink("asked")
    big.snapshot_aligned(t, al, ND).entries().all_ticks().sink("counts")
    # what the enumerate's groups saw: new (user, parity) pairs, new users, new (user, big?)
    numbered.map(lambda iv: iv[1] % 2).unique().entries().sink("parities")
    numbered.keys().sink("users")
    numbered.entries().map(lambda kv: (kv[0], kv[1][1] > 4)).unique().sink("sizes")
    events.release_aligned(al).sink("ack")
    return flow.finalize()


#: every batch's answers (one feed entry of each input per batch)
EXPECTED: dict[str, dict[int, list[Any]]] = {
    "trail": {0: [("a", "0:5;1:7;"), ("b", "0:1;")], 1: [("a", "0:5;1:7;"), ("b", "0:1;1:2;")]},
    "counts": {0: [("a", 2)], 1: [("a", 2), ("b", 1)], 2: [("a", 2), ("b", 1), ("c", 2)]},
    "asked": {0: [("a", 2), ("z",)], 1: [("b", 1)], 2: [("a", 2), ("c", 2)]},
}
EXPECTED["trail"][2] = [("a", "0:5;1:7;2:1;"), ("b", "0:1;1:2;"), ("c", "0:4;1:6;")]
EXPECTED["parities"] = {0: [("a", 1), ("b", 1)], 1: [("b", 0)], 2: [("c", 0)]}  # (a's 1 in batch 2: seen)
EXPECTED["users"] = {0: ["a", "b"], 2: ["c"]}
EXPECTED["sizes"] = {0: [("a", True), ("b", False)], 2: [("a", False), ("c", False), ("c", True)]}


def _entries() -> dict[str, tuple[type, type | None, list[list[Any]]]]:
    return {"events": (tuple[str, int], None, EVENTS), "asks": (str, None, ASKS)}


def _answers(got: dict[str, dict[int, list[Any]]]) -> dict[str, dict[int, list[Any]]]:
    return {p: {b: sorted(rows, key=repr) for b, rows in got[p].items()} for p in PORTS}


def test_folds_of_an_enumerate_stay_with_it_and_answer_like_the_driver(spark: SparkSession, tmp_path: Path) -> None:
    runner, got = run_to_json(spark, build(), tmp_path / "ex", _entries(), PORTS, "executors", acks=("ack",))
    placed = {p.node.op: p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements}
    assert placed["enumerate"].executors and not placed["enumerate"].native, placed["enumerate"].describe()
    for op in ("fold", "count"):
        assert placed[op].executors, placed[op].describe()
        assert "folded by enumerate() " in placed[op].why and "new (index, element) pairs" in placed[op].why
    seen = [p for st in runner.plan.stages if st.placement for p in st.placement.placements if p.node.op in DISTINCT]
    assert len(seen) == 3 and all(p.executors and "kept by enumerate() " in p.why for p in seen), seen
    assert _answers(got) == EXPECTED
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    on_driver_runner, on_driver = run_to_json(spark, build(), tmp_path / "dr", _entries(), PORTS, "driver", ("ack",))
    assert not any(
        p.executors for st in on_driver_runner.plan.stages if st.placement is not None for p in st.placement.placements
    )
    assert _answers(on_driver) == EXPECTED


def test_a_crash_inside_a_batch_neither_repeats_nor_loses_an_index(spark: SparkSession, tmp_path: Path) -> None:
    """The process stops after the processor folded batch 1 and before Spark committed it:
    the new runner replays the batch from the state before it."""
    ck = str(tmp_path / "ck")
    outputs = {p: f"json:{tmp_path / p}" for p in (*PORTS, "ack")}
    inputs = feeds(tmp_path, _entries())
    fault = CrashOnce("after_sinks", 1)
    with pytest.raises(Exception, match="crash at"):
        run_once(
            FlowRunner(
                build(),
                spark=spark,
                checkpoint=ck,
                inputs=inputs,
                outputs=outputs,
                keyed_state="executors",
                fault=fault,
            )
        )
    assert fault.fired == [1]
    again = FlowRunner(build(), spark=spark, checkpoint=ck, inputs=inputs, outputs=outputs, keyed_state="executors")
    run_once(again)
    got = {p: json_batches(tmp_path / p) for p in PORTS}
    assert _answers(got) == EXPECTED
