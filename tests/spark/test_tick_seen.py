"""What a `unique()`, `keys()` or keyed `enumerate()` of a computed stream saw, kept as a
Parquet table the tick updates on the executors (`tick_seen.py`).

Their input here is no chain of the query's inputs — a join's pairs re-keyed by city, words
through two `flat_map()`s — so Spark's state store cannot keep what they saw (SPARK-47960).
Under `keyed_state='executors'` the driver's store no longer does either. These tests pin
every batch's answers (worked by hand, equal to the driver path's and to the simulator's
replay), elements equal in Python (`1`, `1.0`, `True`) as one element in its first form, a
crash inside a batch, and a resume of a checkpoint that kept the state on the driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.metrics import RunMetrics
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import feed_end
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.state_homes import home_of
from hydrolite.planner.spark.upgrade import PlanChangedError
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import feeds, json_batches, run_once
from tests.spark.test_metrics import samples

pytestmark = pytest.mark.spark


class Town:
    """Tag of the town process."""


def forms(x: int) -> list[object]:
    """`x` in the forms Python holds equal to it (`True` for 1)."""
    return [x, float(x), True] if x == 1 else [x, float(x)]


def split(line: str) -> list[str]:
    """The line's words."""
    return line.split()


def cased(word: str) -> list[str]:
    """The word and its upper case."""
    return [word, word.upper()]


def by_letter(word: str) -> tuple[str, str]:
    """The word keyed by its first letter in lower case."""
    return word[0].lower(), word


def build() -> hl.Flow:
    """Visits joined with the cities people live in (both unbounded), re-keyed by city: the
    cities seen for the first time and the new (city, visit) pairs; words split and doubled
    in upper case: the new words and each word's index among those of its first letter; and
    numbers in several forms: the new numbers, in the form each came first."""
    flow = hl.FlowBuilder("town")
    p = flow.process(Town)
    pairs = p.source("visit", tuple[str, int]).join(p.source("home", tuple[str, str]))  # (who, (n, city))
    per_city = pairs.map(lambda kv: (kv[1][1], kv[1][0])).into_keyed()
    per_city.keys().sink("cities")
    per_city.unique().entries().sink("pairs")
    words = p.source("word", str).flat_map_ordered(split).flat_map_ordered(cased)
    words.unique().sink("words")
    words.map(by_letter).into_keyed().enumerate().entries().sink("numbered")
    numbers = p.source("n", int).flat_map_ordered(lambda x: [x]).flat_map_ordered(forms)
    numbers.unique().map(repr).sink("forms")
    return flow.finalize()


TYPES: dict[str, type] = {"visit": tuple[str, int], "home": tuple[str, str], "word": str, "n": int}
GIVEN: dict[str, list[list[Any]]] = {
    "visit": [[("ann", 1), ("bob", 2)], [("ann", 1)], [("cid", 3), ("bob", 2)], [("ann", 4)]],
    "home": [[("ann", "oslo")], [("bob", "oslo")], [("cid", "nice"), ("ann", "rome")], []],
    "word": [["a b", "a"], ["b c"], [], ["a"]],
    "n": [[1], [2, 1], [0], []],
}
SINKS = ("cities", "pairs", "words", "numbered", "forms")
#: every batch's new elements (worked by hand; a batch without any is left out)
EXPECTED = {
    # the join's pairs per batch: (oslo, 1); (oslo, 1), (oslo, 2); (nice, 3), (oslo, 2), (rome, 1) twice
    # (rome meets both of ann's visits); (oslo, 4), (rome, 4)
    "cities": {0: ["oslo"], 2: ["nice", "rome"]},
    "pairs": {0: [("oslo", 1)], 1: [("oslo", 2)], 2: [("nice", 3), ("rome", 1)], 3: [("oslo", 4), ("rome", 4)]},
    "words": {0: ["A", "B", "a", "b"], 1: ["C", "c"]},
    "numbered": {
        0: [("a", (0, "a")), ("a", (1, "A")), ("a", (2, "a")), ("a", (3, "A")), ("b", (0, "b")), ("b", (1, "B"))],
        1: [("b", (2, "b")), ("b", (3, "B")), ("c", (0, "c")), ("c", (1, "C"))],
        3: [("a", (4, "a")), ("a", (5, "A"))],
    },
    "forms": {0: ["1"], 1: ["2"], 2: ["0"]},  # (1.0 and True are 1; 2.0 is 2; 0.0 is 0)
}


def _runner(spark: SparkSession, d: Path, keyed_state: str, upto: int = 4, **kw: Any) -> FlowRunner:
    """A runner over the feeds' first `upto` entries (appending those not written yet)."""
    given = {p: (t, None, GIVEN[p][feed_end(str(d / p)) : upto]) for p, t in TYPES.items()}
    return FlowRunner(
        build(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=feeds(d, given),
        outputs={s: f"json:{d / s}" for s in SINKS},
        keyed_state=keyed_state,
        **kw,
    )


def _run(spark: SparkSession, d: Path, keyed_state: str, upto: int = 4, **kw: Any) -> FlowRunner:
    return run_once(_runner(spark, d, keyed_state, upto, **kw))


def _outputs(d: Path) -> dict[str, dict[int, list[Any]]]:
    return {s: {b: sorted(rows, key=repr) for b, rows in json_batches(d / s).items()} for s in SINKS}


def _homes(runner: FlowRunner) -> dict[str, str]:
    return {
        f"{x.op}:{x.site.line}": home_of(stage, x)
        for stage in runner.plan.stages
        for x in stage.stateful
        if x.op in ("unique", "keys", "enumerate")
    }


def test_what_a_computed_stream_saw_lives_in_the_ticks_table(spark: SparkSession, tmp_path: Path) -> None:
    """Under `executors` all five states are the tick's tables (home `table`, counted by the
    state-rows metric) and answer every batch as worked by hand, as the simulator's replay
    and as the driver's store does."""
    runner = _runner(spark, tmp_path / "exec", "executors")
    metrics = RunMetrics(runner)
    run_once(runner)
    assert metrics.wait_for_end()
    metrics.close()
    # each table's rows at the end: 3 cities, 6 pairs, 6 words, 3 letters counted, 3 numbers
    got = samples(metrics.text())
    tables = [(dict(ls)["operator"].split("@")[0], v) for (name, ls), v in got.items() if ("placement", "table") in ls]
    assert sorted(tables) == [("enumerate", 3), ("keys", 3), ("unique", 3), ("unique", 6), ("unique", 6)], got
    homes = _homes(runner)
    assert len(homes) == 5 and set(homes.values()) == {"table"}, homes
    for stage in runner.plan.stages:
        for p in stage.placement.placements if stage.placement is not None else ():
            if p.tick_table:
                assert "kept by the tick" in p.describe() and "fed by what the tick computes (" in p.why, p.why
    assert _outputs(tmp_path / "exec") == EXPECTED
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    driver = _run(spark, tmp_path / "driver", "driver")
    assert set(_homes(driver).values()) == {"driver"}
    assert _outputs(tmp_path / "driver") == EXPECTED


def test_a_crash_inside_a_batch_repeats_it_exactly(spark: SparkSession, tmp_path: Path) -> None:
    """A batch whose sinks were written and whose state was not committed, and one whose
    table was written before its outputs, run again from the table the batch before kept."""
    for point, batch in (("after_sinks", 1), ("before_outputs", 3)):
        fault = CrashOnce(point, batch)
        with pytest.raises(Exception, match="crash at"):
            _run(spark, tmp_path, "executors", fault=fault)
        assert batch in fault.fired
    _run(spark, tmp_path, "executors")
    assert _outputs(tmp_path) == EXPECTED


def test_a_checkpoint_keeps_such_state_where_it_is(spark: SparkSession, tmp_path: Path) -> None:
    """A checkpoint written with these states on the driver: `executors` refuses to start them
    empty in a table, `auto` resumes them on the driver."""
    _run(spark, tmp_path, "driver", upto=2)
    with pytest.raises(PlanChangedError, match="would keep it as a Parquet table under the checkpoint"):
        _run(spark, tmp_path, "executors")
    runner = _run(spark, tmp_path, "auto")
    assert set(_homes(runner).values()) == {"driver"}
    assert _outputs(tmp_path) == EXPECTED
