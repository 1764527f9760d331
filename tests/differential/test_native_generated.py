"""Differential test of the native aggregation path (`native_state.py`): generated programs
with an algebraic keyed aggregate of a keyed source, read back in the same tick at keys the
batch provably updated, next to random other operators (whose state may take the
transformWithState path or the driver in the same query), run on Spark and replayed in the
simulator. A planning test (no Spark) pins that every generated store really takes the
native path, so the differential test cannot silently stop covering it.

The generator reuses `progen`'s program builder; only the store is new (`_native_store`).
The program is loaded from a real file (`harness.load`): the native path needs the lambdas'
source, which `fn_source.function_ast` reads from the file.
"""

from __future__ import annotations

import random
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.native_state import OCCURRENCES, WHY
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.verify import verify_runner
from tests.differential.harness import load
from tests.differential.progen import Draw, HypothesisDraw, Program, RandomDraw, Var, _one_op, _sinks, inputs
from tests.differential.test_differential import EXAMPLES

#: aggregates of (str key, int value) one native aggregation computes exactly
NATIVE_AGGREGATES = [
    "count()",
    "fold(0, lambda a, x: a + x)",
    "fold_commutative(5, lambda a, x: x + a)",
    "fold((0, 0, 100), lambda a, x: (a[0] + 1, max(a[1], x), min(a[2], x)))",
    "fold(0, lambda a, x: a - x)",
    "reduce(lambda a, b: max(a, b))",
    "reduce_commutative(lambda a, b: a + b)",
]
#: the store's keyed input: the keyed source itself, or it through projections and simple
#: predicates the aggregation computes from the source's columns (`projection.py`; str keys, int values either way).
#: `entries()` loses the order across keys: `assume_ordering` restores it for the folds (every
#: aggregate here gives the same result in any order)
INPUTS = [
    "ks",
    "ks",
    "ks.entries().map(lambda e: (e[0], e[1])).into_keyed().assume_ordering(ND)",
    "ks.map(lambda v: (v, True, 'x')).map(lambda t: t[0])",
    "ks.entries().map(lambda e: ((e[1], e[0]), 7)).map(lambda p: (p[0][1], (p[1], p[0][0]))).into_keyed()"
    ".assume_ordering(ND).map(lambda v: v[-1])",
    "xs.map(lambda x: ('k', x)).into_keyed()",
    "ks.filter(lambda v: v > 2)",
    "ks.entries().filter(lambda e: e[0] != 'b' and not 1 <= e[1] < 4).into_keyed().assume_ordering(ND)",
]
#: top-level counts of occurrences over chains of `xs` (native too; keys() / enumerate() also after
#: value maps that are not projections: they count keys only), sunk as they are
OCCURRING = [
    "xs.map(lambda x: (x, x)).into_keyed().keys()",
    "xs.map(lambda x: (x, 1)).into_keyed().enumerate().entries()",
    "xs.map(lambda x: (x, 1)).map(lambda t: t[0]).unique()",
    "xs.map(lambda x: (x, (x, True))).into_keyed().values().map(lambda v: v[0]).unique()",
    "xs.filter(lambda x: x >= 2 or x == 0).map(lambda x: (x, x)).into_keyed().enumerate().entries()",
    "xs.map(lambda x: (x, x)).into_keyed().map(lambda v: v * 3 + 1).enumerate().entries()",
    "xs.map(lambda x: (x, x)).into_keyed().inspect(lambda v: None).map(lambda v: -v).keys()",
]
#: requests derived from the tick's batch `b` of the same source: every key one of its elements has
REQUESTS = [
    "{b}",
    "{b}.filter(lambda v: v > 3)",
    "{b}.map(lambda v: v * 2)",
    "{b}.keys().map(lambda k: (k, len(k))).into_keyed()",
    "{b}.keys().filter(lambda k: k != 'a').map(lambda k: (k, 0)).into_keyed()",
]


def generate_native(d: Draw, max_ops: int = 4) -> Program:
    """A random program around one native store (plus, sometimes, a second source and ops)."""
    prog = Program()
    prog.lines += ['flow = hl.FlowBuilder("gen")', "p = flow.process(P)", "t1 = p.tick()"]
    prog.lines.append('xs = p.source("xs", int)')
    prog.vars.append(Var("xs", "stream", None, source="xs"))
    prog.lines.append('ks = p.keyed_source("ks", str, int)')
    prog.vars.append(Var("ks", "keyed", None, source="ks", key="str"))
    prog.lines.append("al = p.local_align_point()")
    _native_store(prog, d)
    for _ in range(d.int(0, max_ops)):
        _one_op(prog, d, ["t1"])
    _sinks(prog, d)
    return prog


def _native_store(prog: Program, d: Draw) -> None:
    agg = d.choice(NATIVE_AGGREGATES)
    prog.lines.append(f"kin = {d.choice(INPUTS)}")
    prog.lines.append(f"store = kin.{agg}")
    prog.lines.append("snap = store.snapshot_aligned(t1, al, ND)")
    prog.lines.append("b = kin.batch_aligned(t1, al, ND)")
    if d.bool():
        prog.sinks.append(f'{d.choice(OCCURRING)}.sink("occurring")')
    req = d.choice(REQUESTS).format(b="b")
    if d.bool():
        how = f"({req}).lookup_keyed_singleton(snap)"
    else:
        how = f"snap.get_many_if_present({req})"
    prog.sinks.append(f'{how}.entries().map(lambda t: (t[0], t[1][0], t[1][1])).all_ticks().sink("lookups")')


def test_every_generated_store_takes_the_native_path() -> None:
    chained = 0
    for seed in range(40):
        source = generate_native(RandomDraw(random.Random(seed))).source()
        flow = load(source)
        placements = [p for s in plan_flow(flow).stages if s.placement is not None for p in s.placement.placements]
        # the store, and any top-level unique() / keys() / keyed enumerate() of a source (counted
        # natively too), and other algebraic folds the ops drew that are read whole (native too,
        # with a copy of the table: `NativeState.whole`)
        native = [p for p in placements if p.native and not isinstance(p.node, OCCURRENCES)]
        whole = [p for p in native if "read whole by" in p.why]
        assert all("Parquet" in p.why for p in whole), whole
        # the store itself (the plain generator's ops may draw another native state beside it,
        # such as a count read by the batch's keys)
        at = next(i + 1 for i, text in enumerate(source.splitlines()) if text.lstrip().startswith("store = "))
        stores = [p for p in native if p not in whole and p.node.site.line == at]
        assert len(stores) == 1 and stores[0].why.startswith(WHY), f"seed {seed}:\n{source}\n{placements}"
        if '.sink("occurring")' in source:  # the count of occurrences over the chain too
            line = next(i + 1 for i, text in enumerate(source.splitlines()) if '.sink("occurring")' in text)
            counted = [p for p in placements if isinstance(p.node, OCCURRENCES) and p.node.site.line == line]
            assert counted and all(p.native for p in counted), f"seed {seed}:\n{source}\n{placements}"
        chained += "kin = ks\n" not in source
    assert chained >= 10, chained  # the chains of projections are drawn, not only the source itself


@pytest.mark.spark
@settings(
    max_examples=max(2, EXAMPLES // 4),  # each example is a Spark run; HYDROLITE_DIFF_EXAMPLES scales it
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
@given(st.data())
def test_native_stores_match_the_simulator(spark: SparkSession, data: st.DataObject) -> None:
    d = HypothesisDraw(data)
    source = generate_native(d).source()
    steps = inputs(d, ["xs", "ks"])
    note(source)
    note(f"STEPS = {steps!r}")
    directory = tempfile.mkdtemp(prefix="hl-native-")
    try:
        h = SparkHarness(load(source), spark, f"{directory}/run")
        placement = h.runner.plan.stages[0].placement
        assert placement is not None and sum(not x.occurrences for x in placement.native) == 1, placement
        try:
            for step in steps:
                for port, values in step.items():
                    if values:
                        h.sender(port).send_many(values)
                h.step()
            report = verify_runner(h.runner)
        finally:
            h.runner.stop()
        assert report.identical, str(report)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
