"""A keyed fold whose accumulator changes numeric kind from key to key keeps each value as the
fold made it, on Spark as in the simulator.

`fold(0, lambda a, x: a + x / 2 if x > 3 else a)` holds `0` (an int) for a key whose elements
are small and `2.5` for another. Before, the driver path typed the table from the batch's
first value and converted the rest (`0` read back as `0.0`), silently; the executor path
converted the other way or failed without naming the operator. Now (`kinds.guessed_type`,
`values.frame_of(exact=)`): a type that is only a guess from `init` is checked — the driver
path keeps the values pickled when they differ in kind, the executor path (whose column type is
fixed when the query starts) fails naming the fold and the fix; with `acc_type=int | float`
both keep every value as it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.errors import UserFunctionError
from hydrolite.planner.spark.kinds import guessed_type
from hydrolite.planner.spark.types import Prim
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import run_to_json

pytestmark = pytest.mark.spark

ND = nondet("test: Spark's micro-batches are the batches")


class P:
    """Tag of the process."""


def build(guessed: bool, declared: bool) -> hl.Flow:
    flow = hl.FlowBuilder("fold_kinds")
    p = flow.process(P)
    t = p.tick()
    ks = p.source("ks", tuple[str, int]).into_keyed()
    asks = p.source("asks", str).batch(t, ND).map(lambda k: (k, 0)).into_keyed()
    if guessed:  # the accumulator's type is a guess from init: an int
        folded = ks.fold(0, lambda a, x: a + x / 2 if x > 3 else a)
        whole = folded.snapshot(t, ND).entries().map(lambda e: f"{e[0]}:{e[1]!r}")
        whole.all_ticks().sink("whole")
        looked = asks.lookup_keyed_singleton(folded.snapshot(t, ND)).entries()
        looked.map(lambda e: f"{e[0]}:{e[1][1]!r}").all_ticks().sink("looked")
    if declared:
        kinds = ks.fold(0, lambda a, x: a + x / 2 if x > 3 else a, acc_type=int | float)
        kinds.snapshot(t, ND).entries().map(lambda e: f"{e[0]}:{e[1]!r}").all_ticks().sink("declared")
    return flow.finalize()


#: a: 1 then 7 (0, then 0 + 3.5); b: 5 (2.5); c: 2 (0)
ENTRIES = {
    "ks": (tuple[str, int], None, [[("a", 1), ("b", 5)], [("a", 7), ("c", 2)]]),
    "asks": (str, None, [["a"], ["c", "b"]]),
}
WHOLE = {0: ["a:0", "b:2.5"], 1: ["a:3.5", "b:2.5", "c:0"]}
LOOKED = {0: ["a:0"], 1: ["b:2.5", "c:0"]}


def test_the_driver_path_keeps_each_value_as_the_fold_made_it(spark: SparkSession, tmp_path: Path) -> None:
    runner, got = run_to_json(spark, build(True, True), tmp_path, ENTRIES, ("whole", "looked", "declared"), "driver")
    assert got == {"whole": WHOLE, "looked": LOOKED, "declared": WHOLE}
    report = verify_runner(runner)
    assert report.identical, str(report)


def test_the_executor_path_keeps_declared_kinds_and_refuses_a_guess(spark: SparkSession, tmp_path: Path) -> None:
    runner, got = run_to_json(spark, build(False, True), tmp_path / "declared", ENTRIES, ("declared",), "executors")
    placed = [p for st in runner.plan.stages if st.placement for p in st.placement.placements]
    assert any(p.node.op == "fold" and p.executors for p in placed), placed
    assert got == {"declared": WHOLE}
    with pytest.raises(UserFunctionError) as err:
        run_to_json(spark, build(True, False), tmp_path / "guessed", ENTRIES, ("whole", "looked"), "executors")
    text = str(err.value)
    assert "fold() failed" in text and "test_fold_kinds.py" in text, text
    assert "the value 2.5 is not int, the type its init" in text and "acc_type=int | float" in text, text


def test_which_accumulator_types_are_guesses(spark: SparkSession) -> None:
    class Q:
        """Tag of the process."""

    p = hl.FlowBuilder("guesses").process(Q)
    xs = p.source("xs", int).map(lambda x: (x % 2, x)).into_keyed()
    ints = Prim(int)
    assert not guessed_type(xs.fold(0, lambda a, x: a + x)._node, ints)  # int + int: proven int
    assert guessed_type(xs.fold(0, lambda a, x: a + x / 2)._node, ints)  # float results from an int init
    assert guessed_type(xs.fold(0, lambda a, x: a + x / 2 if x > 3 else a)._node, ints)  # two kinds
    assert guessed_type(xs.fold(0, lambda a, x: a + x.bit_length())._node, ints)  # not translated
    assert not guessed_type(xs.fold(0.0, lambda a, x: a + x, acc_type=float)._node, ints)  # declared
    assert not guessed_type(xs.reduce(lambda a, b: max(a, b))._node, ints)
    assert guessed_type(xs.reduce(lambda a, b: a / b)._node, ints)


def half(x: int) -> float:
    return x // 2  # (an int: held as the float the annotation declares)


def nonzero(x: int) -> float | None:
    return None if x == 0 else x


def build_declared() -> hl.Flow:
    """Declared types are the user's word on both backends: a map's return annotation and a
    fold's `acc_type=` hold each result as declared (the simulator converts as Spark's column
    does), on the translated, the Arrow, the native and the executor paths."""
    flow = hl.FlowBuilder("declared_kinds")
    p = flow.process(P)
    t = p.tick()
    xs = p.source("xs", int)
    xs.map(half).map(repr).sink("half")  # translatable, but the annotation differs: held as float
    xs.filter_map(nonzero).map(repr).sink("nonzero")
    ks = xs.map(lambda x: (x % 2, x)).into_keyed()
    summed = ks.fold(0, lambda a, x: a + x, acc_type=float)  # native (algebraic)
    summed.snapshot(t, ND).entries().map(lambda e: f"{e[0]}:{e[1]!r}").all_ticks().sink("summed")
    folded = ks.fold(0, lambda a, x: a * 3 + x, acc_type=float)  # Python (executors under `executors`)
    asks = p.source("asks", int).batch(t, ND).map(lambda a: (a, 0)).into_keyed()
    looked = asks.lookup_keyed_singleton(folded.snapshot(t, ND)).entries()
    looked.map(lambda e: f"{e[0]}:{e[1][1]!r}").all_ticks().sink("folded")
    return flow.finalize()


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
def test_declared_types_hold_on_both_backends(spark: SparkSession, tmp_path: Path, keyed_state: str) -> None:
    entries = {"xs": (int, None, [[0, 1, 2, 3]]), "asks": (int, None, [[0, 1]])}
    ports = ("half", "nonzero", "summed", "folded")
    runner, got = run_to_json(spark, build_declared(), tmp_path, entries, ports, keyed_state)
    assert got == {
        "half": {0: ["0.0", "0.0", "1.0", "1.0"]},
        "nonzero": {0: ["1.0", "2.0", "3.0"]},
        "summed": {0: ["0:2.0", "1:4.0"]},
        "folded": {0: ["0:2.0", "1:6.0"]},  # key 0: 0.0 * 3 + 0, * 3 + 2; key 1: 1.0 * 3 + 3
    }
    report = verify_runner(runner)  # the simulator's replay holds the same values
    assert report.identical, str(report)
