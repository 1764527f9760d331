"""A function's results keep their Python type on Spark, as in the simulator.

A Spark column holds one type. Before, a function whose results differ in numeric kind had
them converted silently — `True if x == 1 else x` came back as `1`, `x / 2 if x == 0 else x`
as `1.0`, `max(x, 0.5)` as `1.0` — and a later `repr()` (or `str()`, `isinstance`, a list
index, a JSON sink) answered differently from the simulator, which keeps each result as the
function returned it. Now (`lambdas.MixedTypes`, `types.exact_numbers`): results whose types
may differ are kept pickled, exactly; a function typed by a trial call that returns another
kind later fails naming the element and the fix, never converting it; an annotation with
several types (`-> int | bool`) keeps them pickled too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.errors import UserFunctionError
from hydrolite.planner.spark.lambdas import MixedTypes, NotTranslatable, TExpr, translate
from hydrolite.planner.spark.types import Prim
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import run_to_json

pytestmark = pytest.mark.spark

ND = nondet("test: Spark's micro-batches are the batches")
PORTS = ("bool_def", "bool_lambda", "half_def", "half_lambda", "max", "annotated", "looked_up", "mapped")


class P:
    """Tag of the process."""


def bool_or_int(x):  # type: ignore[no-untyped-def]  # (unannotated on purpose: typed by Spark)
    return True if x == 1 else x


def half_or_int(x):  # type: ignore[no-untyped-def]
    return x / 2 if x == 0 else x


def annotated(x: int) -> int | bool:
    if x == 1:  # (two statements: no expression hydrolite could type)
        return True
    return x


def build() -> hl.Flow:
    flow = hl.FlowBuilder("numeric_kinds")
    p = flow.process(P)
    t = p.tick()
    xs = p.source("xs", int)
    xs.map(bool_or_int).map(repr).sink("bool_def")
    xs.map(lambda x: True if x == 1 else x).map(repr).sink("bool_lambda")
    xs.map(half_or_int).map(repr).sink("half_def")
    xs.map(lambda x: x / 2 if x == 0 else x).map(repr).sink("half_lambda")
    xs.map(lambda x: max(x, 0.5)).map(repr).sink("max")
    xs.map(annotated).map(repr).sink("annotated")
    # a keyed state fed by such a function (on the executors under `executors`), looked up
    table = xs.map(lambda x: (x % 2, True if x == 1 else x)).into_keyed().last()
    asks = p.source("asks", int).batch(t, ND).map(lambda a: (a, 0)).into_keyed()
    looked = asks.lookup_keyed_singleton(table.snapshot(t, ND)).entries().map(lambda e: (e[0], repr(e[1][1])))
    looked.all_ticks().sink("looked_up")
    # a keyed singleton's values mapped (on the driver's store under `driver`), read whole
    typed = xs.map(lambda x: (x % 2, x)).into_keyed().last()  # (int values)
    mapped = typed.snapshot(t, ND).map(lambda v: True if v == 1 else v).entries()
    mapped.map(lambda e: f"{e[0]}:{e[1]!r}").all_ticks().sink("mapped")
    return flow.finalize()


EXPECTED = {
    "bool_def": {0: ["0", "2", "True"]},
    "bool_lambda": {0: ["0", "2", "True"]},
    "half_def": {0: ["0.0", "1", "2"]},
    "half_lambda": {0: ["0.0", "1", "2"]},
    "max": {0: ["0.5", "1", "2"]},
    "annotated": {0: ["0", "2", "True"]},
    "looked_up": {0: [(0, "2"), (1, "True")]},
    "mapped": {0: ["0:2", "1:True"]},
}


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
def test_results_keep_their_type_as_in_the_simulator(spark: SparkSession, tmp_path: Path, keyed_state: str) -> None:
    entries = {"xs": (int, None, [[0, 1, 2]]), "asks": (int, None, [[1, 0]])}
    runner, got = run_to_json(spark, build(), tmp_path, entries, PORTS, keyed_state)
    assert got == EXPECTED
    if keyed_state == "executors":  # (the fed state really is on the executors)
        placed = [p for st in runner.plan.stages if st.placement for p in st.placement.placements]
        assert any(p.node.op == "last" and p.executors for p in placed), placed
    report = verify_runner(runner)
    assert report.identical, str(report)


def two_kinds(x):  # type: ignore[no-untyped-def]
    if x == 1:  # (no expression to type: its type comes from a trial call, an int)
        return True
    return x


@pytest.mark.parametrize("where", ["stream", "store_table"])
def test_a_result_of_another_kind_fails_naming_the_element_and_the_fix(
    spark: SparkSession, tmp_path: Path, where: str
) -> None:
    """On a stream (Arrow batches) and on a keyed singleton in the driver's store (its values
    mapped as they are read): the trial call typed the results `int`; `True` does not fit."""
    flow = hl.FlowBuilder("two_kinds")
    p = flow.process(P)
    xs = p.source("xs", int)
    if where == "stream":
        xs.map(two_kinds).sink("out")
    else:
        table = xs.map(lambda x: (x % 2, x)).into_keyed().last().snapshot(p.tick(), ND)
        table.map(two_kinds).entries().all_ticks().sink("out")
    with pytest.raises(UserFunctionError) as err:
        run_to_json(spark, flow.finalize(), tmp_path, {"xs": (int, None, [[0, 1, 2]])}, ("out",), "driver")
    text = str(err.value)
    element = "element 1 in batch 0" if where == "stream" else "element (1, 1) in batch 0"
    assert f"map() failed on {element}" in text, text
    assert "True is a bool, where the column holds int: Spark would return it as 1" in text, text
    assert "fix: return values of one type" in text and "-> int | bool" in text, text


def test_the_translator_refuses_results_of_two_kinds(spark: SparkSession) -> None:
    x = TExpr(F.col("v"), Prim(int))
    for f in (lambda v: True if v == 1 else v, lambda v: v / 2 if v == 0 else v, lambda v: max(v, 0.5)):
        with pytest.raises(MixedTypes):
            translate(f, [x])
    assert translate(lambda v: max(v, 2), [x]).t == Prim(int)  # (one kind: native, as before)
    assert translate(lambda v: v / 2 if v > 0 else 0.0, [x]).t == Prim(float)
    with pytest.raises(NotTranslatable) as other:
        translate(lambda v: v.bit_length(), [x])
    assert not isinstance(other.value, MixedTypes)  # (another reason: typed as before)


def test_a_step_typed_by_a_trial_call_on_the_executors_fails_naming_it(spark: SparkSession, tmp_path: Path) -> None:
    """A lookup's requests through `two_kinds` on the executors (its chain runs in the state's
    processor, its results kept pickled there): the answers' column is typed by the trial
    call, and `True` fails naming the step rather than coming back as `1`."""
    flow = hl.FlowBuilder("two_kinds_executors")
    p = flow.process(P)
    t = p.tick()
    table = p.source("xs", int).map(lambda x: (x % 2, x)).into_keyed().last()
    asks = p.source("asks", int).batch(t, ND).map(two_kinds).map(lambda a: (a % 2, a)).into_keyed()
    asks.lookup_keyed_singleton(table.snapshot(t, ND)).entries().all_ticks().sink("out")
    entries = {"xs": (int, None, [[0, 1, 2]]), "asks": (int, None, [[2, 1]])}
    with pytest.raises(UserFunctionError) as err:
        run_to_json(spark, flow.finalize(), tmp_path, entries, ("out",), "executors")
    text = str(err.value)
    assert "map() failed on element (True, 1) in batch 0" in text, text  # (the request, the value found)
    assert "the value True is not int, the type a trial call of its function gave it" in text, text
    assert "fix: return values of one type" in text, text


def key_or_true(x):  # type: ignore[no-untyped-def]
    if x == 1:  # (typed by a trial call: tuple[int, int])
        return (True, x)
    return (x, x)


def trial_typed(where: str) -> hl.Flow:
    """`two_kinds` / `key_or_true` feeding what the executors answer with: a state's keys read
    by another query, a stateful `unique()`'s elements, a join's pairs, a `last()` table's
    values as a lookup answers them."""
    flow = hl.FlowBuilder(f"trial_{where}")
    p = flow.process(P)
    t = p.tick()
    xs = p.source("xs", int)
    if where == "keys":
        xs.map(key_or_true).into_keyed().last().snapshot(t, ND).entries().map(repr).all_ticks().sink("out")
    elif where == "unique":
        xs.map(two_kinds).unique().map(repr).sink("out")
    elif where == "join":
        xs.map(key_or_true).join(xs.map(lambda x: (x, -x))).map(repr).sink("out")
    else:
        table = xs.map(lambda x: (x % 2, two_kinds(x))).into_keyed().last()
        asks = p.source("asks", int).batch(t, ND).map(lambda a: (a, 0)).into_keyed()
        asks.lookup_keyed_singleton(table.snapshot(t, ND)).entries().map(repr).all_ticks().sink("out")
    return flow.finalize()


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
@pytest.mark.parametrize(
    ("where", "bad"),
    [("keys", "True"), ("unique", "True"), ("join", "(True, (1, -1))"), ("looked_up", "True")],
)
def test_what_a_trial_typed_step_feeds_is_never_converted(
    spark: SparkSession, tmp_path: Path, keyed_state: str, where: str, bad: str
) -> None:
    """The simulator answers `(True, 1)`, `True`, `(True, (1, -1))`, `(0, True)`; Spark's
    columns, typed by the trial call as ints, would hold `1`. Before, the executors wrote that
    `1` (a key, a `unique()`'s element, a join's pair, a looked-up value); now both paths fail
    naming the step, the value and the fix."""
    entries = {"xs": (int, None, [[0, 1, 2]]), "asks": (int, None, [[1, 0]])}
    with pytest.raises(UserFunctionError) as err:
        run_to_json(spark, trial_typed(where), tmp_path, entries, ("out",), keyed_state)
    text = str(err.value)
    assert "map() failed on element" in text and "in batch 0 of query" in text, text
    if keyed_state == "executors":  # (the value the processor answered, as the check saw it)
        assert f"the value {bad} is not" in text and "the type a trial call of its function gave it" in text, text
    else:  # (the step itself, as it ran on the driver's rows)
        assert "does not fit" in text and "the type its results have on Spark" in text, text
    assert "True is a bool, where the column holds int: Spark would return it as 1" in text, text
    assert "fix: return values of one type" in text, text
