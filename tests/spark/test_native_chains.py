"""Native aggregation through projections (`projection.py`, `native_state.py`) on real Spark.

Most programs key their events with a map first: `events.map(lambda e: (e.user, e.amount))
.into_keyed().fold(...)`. When each map only picks fields by constant index or name and
builds tuples of them and constants, Spark's streaming aggregation computes the maps itself
from the input's columns and keeps the state in its state store. A keyed fold, a count, a
`unique()`, `keys()` and a keyed `enumerate()` over such chains (from a tuple source and from
a NamedTuple source, through `entries()` / `values()` too) must answer what Python computes,
what the simulator answers for the same batches and (on a first batch) what the driver store
answers, across a crash inside a batch and a restart (neither losing nor repeating
anything); and a map that is anything more than a projection keeps the other paths, with
the reason in the plan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.native_state import WHY
from hydrolite.planner.spark.placement import place
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import assert_driver_checkpoint_refused, first_batch, json_batches, run_once

pytestmark = pytest.mark.spark


class Pay(NamedTuple):
    user: str
    amount: int


Ev = tuple[str, int, bool]  # (user, amount, flag)
EVS: list[list[Ev]] = [
    [("a", 1, True), ("b", 2, False), ("a", 3, True)],
    [("b", 5, True)],
    [("c", 1, False), ("a", 10, True)],
]
PAYS: list[list[Pay]] = [[Pay("x", 2)], [Pay("y", 1), Pay("x", 4), Pay("x", 1)], [Pay("z", 0)]]
MORE_EVS: list[list[Ev]] = [[("a", 1, False), ("d", 4, True)]]
MORE_PAYS: list[list[Pay]] = [[Pay("y", 3)]]
PORTS = ("totals", "pay_counts", "new_users", "indexed", "flag_keys", "big_flagged")
LIMIT = 10


class P:
    """Tag of the process."""


def _program() -> hl.Flow:
    flow = hl.FlowBuilder("chains")
    p = flow.process(P)
    ev = p.source("ev", Ev)
    pays = p.source("pay", Pay)
    align = p.local_align_point()
    tick = p.tick()
    # a sum per user through a projection, read back at the keys the batch touched
    kv = ev.map(lambda e: (e[0], e[1])).into_keyed()
    total = kv.fold(0, lambda a, x: a + x)
    touched = kv.batch_aligned(tick, align, nondet("any grouping gives the same sums")).keys()
    snap = total.snapshot_aligned(tick, align, nondet("the version with this batch"))
    asked = touched.map(lambda k: (k, None)).into_keyed().lookup_keyed_singleton(snap)
    asked.entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("totals")
    # a count per NamedTuple field (attribute access), through entries() and values() on the way
    by_user = pays.map(lambda r: (r.user, (r.amount, r))).into_keyed().values().map(lambda v: (v[1].user, v[0]))
    keyed_pays = by_user.into_keyed()
    counts = keyed_pays.count()
    batch = keyed_pays.batch_aligned(tick, align, nondet("any grouping gives the same counts"))
    seen = counts.snapshot_aligned(tick, align, nondet("the version with this batch"))
    batch.lookup_keyed_singleton(seen).entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("pay_counts")
    # counts of occurrences at the top level
    ev.map(lambda e: e[0]).unique().sink("new_users")
    ev.filter(lambda e: e[2] and e[1] >= 2).map(lambda e: e[0]).unique().sink("big_flagged")
    ev.map(lambda e: (e[0], e[2])).into_keyed().enumerate().entries().sink("indexed")
    ev.map(lambda e: ((e[0], e[2]), e)).into_keyed().entries().map(lambda e: (e[0], 1)).into_keyed().keys().sink(
        "flag_keys"
    )
    return flow.finalize()


def _expected(evs: list[list[Ev]], pays: list[list[Pay]]) -> dict[str, dict[int, list[Any]]]:
    want: dict[str, dict[int, list[Any]]] = {p: {} for p in PORTS}
    total: dict[str, int] = {}
    paid: dict[str, int] = {}
    index: dict[str, int] = {}
    users: set[str] = set()
    flags: set[tuple[str, bool]] = set()
    big: set[str] = set()
    for b, (eb, pb) in enumerate(zip(evs, pays, strict=True)):
        for user, amount, flag in eb:
            total[user] = total.get(user, 0) + amount
            want["indexed"].setdefault(b, []).append((user, (index.get(user, 0), flag)))
            index[user] = index.get(user, 0) + 1
        want["totals"][b] = sorted((u, total[u]) for u in {e[0] for e in eb})
        for pay in pb:
            paid[pay.user] = paid.get(pay.user, 0) + 1
        want["pay_counts"][b] = sorted((pay.user, paid[pay.user]) for pay in pb)  # one answer per element
        new = sorted({e[0] for e in eb} - users)
        users |= {e[0] for e in eb}
        new_flags = sorted({(e[0], e[2]) for e in eb} - flags)
        flags |= {(e[0], e[2]) for e in eb}
        want["new_users"][b], want["flag_keys"][b] = new, new_flags
        flagged = {e[0] for e in eb if e[2] and e[1] >= 2}
        want["big_flagged"][b] = sorted(flagged - big)
        big |= flagged
    return {p: {b: sorted(v) for b, v in by.items() if v} for p, by in want.items()}


def _run(
    spark: SparkSession,
    d: Path,
    keyed_state: str = "auto",
    fault: Any = None,
    more: bool = False,
    batches: int = len(EVS),
) -> tuple[FlowRunner, dict[str, dict[int, list[Any]]]]:
    """Run on the feeds under `d` (written first: the first `batches` of EVS and PAYS, or
    MORE_* when `more`); the outputs by port and batch, sorted."""
    if more or not (d / "ev").exists():
        ew, pw = FeedWriter(str(d / "ev"), from_python(Ev)), FeedWriter(str(d / "pay"), from_python(Pay))
        for eb, pb in zip(MORE_EVS if more else EVS[:batches], MORE_PAYS if more else PAYS[:batches], strict=True):
            ew.send_many(eb)
            pw.send_many(pb)
    runner = run_once(
        FlowRunner(
            _program(),
            spark=spark,
            checkpoint=str(d / "ck"),
            inputs={p: f"feed:{d / p}?maxEntriesPerTrigger=1" for p in ("ev", "pay")},
            outputs={p: f"json:{d / p}_out" for p in PORTS},
            fault=fault,
            keyed_state=keyed_state,
        )
    )
    return runner, {p: {b: sorted(rows) for b, rows in json_batches(d / f"{p}_out").items()} for p in PORTS}


def test_states_through_projections_are_native_and_answer_like_the_simulator_and_the_driver(
    spark: SparkSession, tmp_path: Path
) -> None:
    """One run that crashes inside batch 1 (before its outputs) and restarts on more input: it
    must neither lose nor repeat anything (batch 1 again, from the aggregates before it), and
    answer what Python computes and what the simulator replays. (One run: a clean run of the
    same batches would cost as much and check a subset of this.)"""
    fault = CrashOnce("before_outputs")
    with pytest.raises(Exception, match="crash at"):
        _run(spark, tmp_path / "native", fault=fault)
    assert fault.fired == [1]
    runner, got = _run(spark, tmp_path / "native", more=True)
    placements = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
    ops = ["count", "enumerate", "fold", "keys", "unique", "unique"]
    assert sorted(p.node.op for p in placements) == ops, placements
    for p in placements:
        assert p.native and p.why.startswith(WHY) and " through " in p.why and "map() " in p.why, p.why
    assert any(" through filter() " in p.why for p in placements), placements
    assert got == _expected(EVS + MORE_EVS, PAYS + MORE_PAYS)
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    # Before projections were native, these states lived in the driver's store: resumed
    # natively, they would start from nothing (sums and counts from zero, every user new).
    # One batch on the driver makes such a checkpoint (and answers as the native path did).
    _, on_driver = _run(spark, tmp_path / "driver", keyed_state="driver", batches=1)
    assert on_driver == first_batch(got)
    ops = [f"{op}@test_native_chains.py" for op in ("fold", "count", "unique", "enumerate", "keys")]
    assert_driver_checkpoint_refused(spark, _program(), tmp_path / "driver" / "ck", ops)


OFFSET = 3
#: maps before into_keyed() that are not projections: the aggregation cannot compute them
NOT_PROJECTIONS: dict[str, Any] = {
    "a method": lambda e: (e[0].upper(), e[1]),
    "arithmetic": lambda e: (e[0], e[1] * 2),
    "a global": lambda e: (e[0], OFFSET),  # its value may change between batches
    "a float": lambda e: (e[0], 1.5),
    "out of range": lambda e: (e[0], e[3]),  # Python raises IndexError
    "a slice": lambda e: (e[0], e[1:]),
    "two parameters": lambda e, x=1: (e[0], x),
}


#: filters before into_keyed() that are not simple predicates: Spark might not evaluate them as Python does
NOT_SIMPLE: dict[str, Any] = {
    "arithmetic": lambda e: e[1] % 2 == 0,
    "int against str": lambda e: e[0] < e[1],  # Python raises TypeError
    "int against bool": lambda e: e[1] == True,  # noqa: E712 - 1 == True in Python
    "truthiness of an int": lambda e: e[1],
    "a method": lambda e: e[0].startswith("a"),
    "membership": lambda e: e[1] in (1, 2),
    "a float": lambda e: e[1] > 1.5,
}


@pytest.mark.parametrize("what", sorted(NOT_SIMPLE))
def test_filters_that_are_not_simple_predicates_keep_the_other_paths_with_the_reason(what: str) -> None:
    flow = hl.FlowBuilder("not_simple")
    p = flow.process(P)
    ev = p.source("ev", Ev)
    ev.filter(NOT_SIMPLE[what]).map(lambda e: (e[0], e[1])).into_keyed().enumerate().entries().sink("indexed")
    ev.filter(lambda e: not e[2] or "a" <= e[0] < "c" != e[0]).map(lambda e: e[0]).unique().sink("users")
    placed = {x.node.site.line: x for st in plan_flow(flow.finalize()).stages for x in place(st).placements}
    mine, users = (placed[line] for line in sorted(placed))
    assert not mine.native and "a predicate that is not a simple comparison" in mine.why, mine.why
    assert users.native and " through filter() " in users.why, users.why  # a simple one, for contrast


@pytest.mark.parametrize("what", sorted(NOT_PROJECTIONS))
def test_maps_that_are_not_projections_keep_the_other_paths_with_the_reason(what: str) -> None:
    flow = hl.FlowBuilder("not_projections")
    p = flow.process(P)
    p.source("ev", Ev).map(NOT_PROJECTIONS[what]).into_keyed().enumerate().entries().sink("indexed")
    p.source("pay", Pay).map(lambda r: (r[0], r.amount)).into_keyed().enumerate().entries().sink("pays")
    placed = {x.node.site.line: x for st in plan_flow(flow.finalize()).stages for x in place(st).placements}
    assert len(placed) == 2, placed
    mine, pays = (placed[line] for line in sorted(placed))
    assert not mine.native and "a function that is not a projection" in mine.why, mine.why
    assert "map() test_native_chains.py" in mine.why, mine.why
    assert pays.native, pays.why  # a NamedTuple by index and by name, the same projection
