"""Differential test: generated programs run on Spark equal their replay in the simulator.

Hypothesis draws a program (`progen`) and inputs split into steps; the program runs on
local Spark (Spark chooses the micro-batches), then the run is replayed in the simulator
from its offset log and every sink of every batch is compared (`verify_runner`). A
failure is shrunk by Hypothesis and prints the program's source and inputs. The budget
here is small (CI); `python -m tests.differential.run_long --programs 1000` runs long.
Every divergence found is kept in `regressions/` and replayed by `test_regressions`. Keyed
state lives on the executors or on the driver, drawn with the program (the driver is where
`auto` keeps Python keyed folds on a local master: what a user runs by default).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from tests.differential.harness import run_case
from tests.differential.progen import HypothesisDraw, generate, inputs
from tests.differential.run_long import KEYED_STATES
from tests.spark.test_ckfs import viewfs_mount

pytestmark = pytest.mark.spark
REGRESSIONS = os.path.join(os.path.dirname(__file__), "regressions")
EXAMPLES = int(os.environ.get("HYDROLITE_DIFF_EXAMPLES", "8"))


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
)
@given(st.data())
def test_generated_programs_match_the_simulator(spark: SparkSession, data: st.DataObject) -> None:
    d = HypothesisDraw(data)
    prog = generate(d)
    source = prog.source()
    steps = inputs(d, ["xs", "ys", "ks", "ws"])
    keyed_state = d.choice(KEYED_STATES)  # the executors, or the driver (`auto` on a local master)
    note(source)
    note(f"STEPS = {steps!r}")
    note(f"KEYED_STATE = {keyed_state!r}")
    out = run_case(spark, source, steps, keyed_state=keyed_state)
    assert out.status in ("identical", "refused"), out.detail


def _store(data: st.DataObject) -> tuple[str, list[dict[str, list[Any]]]]:
    """A generated program with a keyed store read per key, and its inputs (noted for a failure)."""
    d = HypothesisDraw(data)
    source = generate(d, max_ops=4, store=True).source()
    steps = inputs(d, ["xs", "ys", "ks", "ws"])
    note(source)
    note(f"STEPS = {steps!r}")
    return source, steps


SMALL = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)


@settings(SMALL, max_examples=max(2, EXAMPLES // 2))
@given(st.data())
def test_keyed_stores_on_the_executors_match_the_simulator(spark: SparkSession, data: st.DataObject) -> None:
    """Programs with a keyed store read per key: Spark keeps that state on the executors
    (`placement.py`, `keyed_state.py`), folded per key in arrival order; the simulator is the
    reference for every aggregate, lookup form and function path."""
    out = run_case(spark, *_store(data))
    assert out.status == "identical", out.detail


@settings(SMALL, max_examples=max(2, EXAMPLES // 4))
@given(st.data())
def test_resumed_under_auto_every_state_carries_on_where_the_checkpoint_keeps_it(
    spark: SparkSession, data: st.DataObject
) -> None:
    """A keyed store run on the executors for half its steps, then resumed under the default
    `auto` on this local master (which would place a new store on the driver): every state
    stays where the checkpoint keeps it (`kept_homes.py`), and the whole run equals the
    simulator's replay."""
    out = run_case(spark, *_store(data), keyed_state="executors", resume_with="auto")
    assert out.status == "identical", out.detail


def test_generated_programs_on_a_hadoop_checkpoint_match_the_simulator(spark: SparkSession) -> None:
    """The same programs with their checkpoint on a Hadoop file system (a `viewfs://` mount
    table over the case's directory): Spark's state store, the driver's store, the remap log
    and hydrolite's own files all go through Hadoop's client, and the run still replays in the
    simulator identically (channels and heartbeats through the driver's local mirrors of
    their entries, `feed_mirror.py`). Some of the drawn programs must run (identical), or the
    test would check nothing."""
    seen: list[str] = []

    @settings(
        max_examples=max(2, EXAMPLES // 4),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    @given(st.data())
    def case(data: st.DataObject) -> None:
        d = HypothesisDraw(data)
        prog = generate(d, max_ops=5, store=data.draw(st.booleans(), label="store"))
        source = prog.source()
        steps = inputs(d, ["xs", "ys", "ks", "ws"])
        note(source)
        note(f"STEPS = {steps!r}")
        out = run_case(spark, source, steps, checkpoint=lambda where: viewfs_mount(spark, Path(where)) + "/ck")
        assert out.status in ("identical", "refused"), out.detail
        seen.append(out.status)

    case()
    assert "identical" in seen, seen


def _regressions() -> list[str]:
    return sorted(f for f in os.listdir(REGRESSIONS) if f.endswith(".py") and not f.startswith("_"))


@pytest.mark.parametrize("name", _regressions())
def test_regressions(spark: SparkSession, name: str) -> None:
    """Each kept reproducer (a program plus its `STEPS`, `KEYED_STATE` when it is not the
    executors, and `RESUME_WITH` when the run resumes halfway with that option) runs
    identically on both backends."""
    with open(os.path.join(REGRESSIONS, name)) as fh:
        source = fh.read()
    values = {
        t.id: ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name) and t.id in ("STEPS", "KEYED_STATE", "RESUME_WITH")
    }
    where = values.get("KEYED_STATE", "executors")
    out = run_case(spark, source, values["STEPS"], keyed_state=where, resume_with=values.get("RESUME_WITH"))
    assert out.status == "identical", out.detail
