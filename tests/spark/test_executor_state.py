"""Keyed state on the executors (`placement.py`, `keyed_state.py`) on real Spark.

The key-value store keeps its table in Spark's RocksDB state store, folded per key in a
`transformWithState` operator (PySpark's Row-based API). These tests pin what that must not change: the
answers equal the driver path's and the simulator's replay, a crash inside a batch replays
from the state version before it (exactly once), file inputs are folded in arrival order,
a failing function is reported like everywhere else, and a checkpoint is never resumed with
its state in the other place.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from examples import kvstore
from hydrolite import nondet
from hydrolite.planner.spark.errors import UserFunctionError
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.upgrade import KEYED_OPERATOR, PlanChangedError
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import json_batches, run_once

pytestmark = pytest.mark.spark

PUTS = [[("c1", "a", 1), ("c1", "b", 2), ("c2", "a", 3)], [("c1", "a", 10), ("c2", "c", 5)], [("c3", "b", 7)]]
GETS = [[("g1", "a"), ("g1", "z")], [("g2", "a"), ("g2", "b")], [("g3", "c"), ("g3", "b"), ("g3", "a")]]
# every get sees every put of its batch and before (the tick's snapshot is the end of the batch)
EXPECTED = {
    0: [("g1", "a", 3), ("g1", "z", None)],
    1: [("g2", "a", 10), ("g2", "b", 2)],
    2: [("g3", "a", 10), ("g3", "b", 7), ("g3", "c", 5)],
}


def _feeds(d: Path) -> dict[str, str]:
    if not (d / "put").exists():
        put = FeedWriter(str(d / "put"), from_python(tuple[str, str, int]))
        get = FeedWriter(str(d / "get"), from_python(tuple[str, str]))
        for p, g in zip(PUTS, GETS):
            put.send_many(p)
            get.send_many(g)
    cap = "?maxEntriesPerTrigger=1"  # one entry per micro-batch: batch ids are deterministic
    return {"put": f"feed:{d / 'put'}{cap}", "get": f"feed:{d / 'get'}{cap}"}


def _run(spark: SparkSession, d: Path, keyed_state: str = "executors", fault: Any = None) -> FlowRunner:
    runner = FlowRunner(
        kvstore.build(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=_feeds(d),
        outputs={"get_response": f"json:{d / 'out'}"},
        fault=fault,
        keyed_state=keyed_state,
    )
    return run_once(runner)


def _responses(d: Path) -> dict[int, list[tuple[Any, ...]]]:
    """batch id -> the (request id, key, value) responses, a missing value as None."""
    out = json_batches(d / "out")
    return {b: sorted(((r + (None,))[:3] for r in rows), key=repr) for b, rows in out.items()}


def test_store_on_the_executors_answers_like_the_driver_and_the_simulator(spark: SparkSession, tmp_path: Path) -> None:
    runner = _run(spark, tmp_path / "exec")
    placement = runner.plan.stages[0].placement
    assert placement is not None and placement.region is not None
    assert [p.executors for p in placement.placements] == [True]
    assert _responses(tmp_path / "exec") == EXPECTED
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _run(spark, tmp_path / "drv", keyed_state="driver")
    assert _responses(tmp_path / "drv") == EXPECTED
    # the driver's store holds nothing of the table: the state lives in Spark's checkpoint
    state_dir = tmp_path / "exec" / "ck" / "tick0" / "spark" / "state"
    assert state_dir.is_dir() and any(state_dir.rglob("*"))


@pytest.mark.parametrize("point", ["before_outputs", "after_sinks"])
def test_crash_inside_a_batch_replays_from_the_state_version_before_it(
    spark: SparkSession, tmp_path: Path, point: str
) -> None:
    fault = CrashOnce(point)
    with pytest.raises(Exception, match="crash at"):
        _run(spark, tmp_path, fault=fault)
    assert fault.fired == [1]
    _run(spark, tmp_path)  # batch 1 again: its state update must not be applied twice
    assert _responses(tmp_path) == EXPECTED


def _refused_on_executors(spark: SparkSession, tmp_path: Path) -> str:
    """The refusal of resuming the kvstore checkpoint under `tmp_path` with executor state."""
    with pytest.raises(PlanChangedError) as err:
        FlowRunner(
            kvstore.build(),
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs=_feeds(tmp_path),
            keyed_state="executors",
        )
    return str(err.value)


def test_resuming_with_the_state_elsewhere_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    _run(spark, tmp_path, keyed_state="driver")
    text = _refused_on_executors(spark, tmp_path)
    assert "adds Spark's keyed-state operator" in text
    assert "lives on the driver in this checkpoint" in text
    assert "--keyed-state driver" in text


def test_executor_state_of_the_pandas_operator_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    """A real run records its operator; a record without it (state written by
    transformWithStateInPandas, hydrolite before the Row-based operator) is refused before
    anything runs, rather than by Spark mid-run with its operator-mismatch error."""
    _run(spark, tmp_path)
    path = tmp_path / "ck" / "plan.json"
    record = json.loads(path.read_text())
    assert [q.get("keyed_operator") for q in record["queries"].values()] == [KEYED_OPERATOR]
    for q in record["queries"].values():
        del q["keyed_operator"]  # as the earlier hydrolite wrote it
    path.write_text(json.dumps(record))
    text = _refused_on_executors(spark, tmp_path)
    assert "written by Spark's transformWithStateInPandas operator" in text, text
    assert "start a new --checkpoint" in text


class Store:
    """Tag of the store process."""


def _store(f: Any) -> hl.Flow:
    """A keyed store whose values go through `f` on the way in."""
    flow = hl.FlowBuilder("store")
    p = flow.process(Store)
    puts = p.source("put", tuple[str, str, int])
    gets = p.source("get", tuple[str, str])
    align = p.local_align_point()
    table = puts.map(f).into_keyed().reduce(lambda _old, new: new)
    puts.release_aligned(align).sink("ack")
    tick = p.tick()
    snap = table.snapshot_aligned(tick, align, nondet("any version consistent with the acks"))
    asks = gets.batch(tick, nondet("any grouping")).map(lambda g: (g[1], g[0])).into_keyed()
    asks.lookup_keyed_singleton(snap).entries().all_ticks().sink("got")
    return flow.finalize()


def test_a_failing_function_names_operator_element_and_batch(spark: SparkSession, tmp_path: Path) -> None:
    flow = _store(lambda p: (p[1], 100 // p[2]))
    put = FeedWriter(str(tmp_path / "put"), from_python(tuple[str, str, int]))
    get = FeedWriter(str(tmp_path / "get"), from_python(tuple[str, str]))
    put.send_many([("c", "a", 5)])
    get.send_many([("g", "a")])
    put.send_many([("c", "b", 0)])
    get.send_many([("g", "b")])
    cap = "?maxEntriesPerTrigger=1"
    runner = FlowRunner(
        flow,
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"put": f"feed:{tmp_path / 'put'}{cap}", "get": f"feed:{tmp_path / 'get'}{cap}"},
        keyed_state="executors",
    )
    assert runner.plan.stages[0].placement is not None and runner.plan.stages[0].placement.region is not None
    with runner, pytest.raises(UserFunctionError) as err:
        runner.start()
        runner.process_all_available()
    text = str(err.value)
    assert "map() failed on element ('c', 'b', 0) in batch 1 of query 'tick0'" in text, text
    assert "ZeroDivisionError" in text and "test_executor_state.py" in text
    assert err.value.batch_id == 1


def test_file_inputs_fold_each_key_in_arrival_order(spark: SparkSession, tmp_path: Path) -> None:
    """Two files in one batch, the older one with the later name: last-write-wins must take
    the newer file's value (arrival order is modification time, then path)."""
    put_dir, get_dir = tmp_path / "puts", tmp_path / "gets"
    put_dir.mkdir()
    get_dir.mkdir()
    older, newer = put_dir / "z-older.json", put_dir / "a-newer.json"
    older.write_text('{"_1": "c", "_2": "k", "_3": 1}\n{"_1": "c", "_2": "j", "_3": 7}\n')
    newer.write_text('{"_1": "c", "_2": "k", "_3": 2}\n{"_1": "c", "_2": "k", "_3": 3}\n')
    os.utime(older, (1_700_000_000, 1_700_000_000))
    os.utime(newer, (1_700_000_100, 1_700_000_100))
    (get_dir / "g.json").write_text('{"_1": "g", "_2": "k"}\n{"_1": "g", "_2": "j"}\n')
    answers = {}
    for mode in ("executors", "driver"):
        runner = FlowRunner(
            _store(lambda p: (p[1], p[2])),
            spark=spark,
            checkpoint=str(tmp_path / mode),
            inputs={"put": f"json:{put_dir}", "get": f"json:{get_dir}"},
            keyed_state=mode,
        )
        with runner:
            runner.start()
            runner.process_all_available()
            answers[mode] = sorted(runner.memory("got").values())
    assert answers["executors"] == answers["driver"] == [("j", ("g", 7)), ("k", ("g", 3))]


def test_auto_keeps_state_on_the_driver_on_a_local_master(spark: SparkSession, tmp_path: Path) -> None:
    """keyed_state='auto' (the default) chooses by measurement: on a local master the driver
    store is faster (placement.resolve_keyed_state), and the plan says why."""
    runner = FlowRunner(kvstore.build(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=_feeds(tmp_path))
    with runner:
        placement = runner.plan.stages[0].placement
        assert placement is not None and placement.region is None
        (p,) = placement.placements
        assert not p.executors and "keyed_state='auto' on the local master" in p.why


def test_auto_resumes_executor_state_where_its_checkpoint_keeps_it(spark: SparkSession, tmp_path: Path) -> None:
    """A checkpoint written with --keyed-state executors resumes under the default `auto` on
    a local master (which would keep a new store on the driver) with its table still in
    Spark's state store: the answers of the later batches see the puts of the earlier run
    (kept_homes.py). `--keyed-state driver` is still refused, naming both fixes."""
    put = FeedWriter(str(tmp_path / "put"), from_python(tuple[str, str, int]))
    get = FeedWriter(str(tmp_path / "get"), from_python(tuple[str, str]))
    for p, g in zip(PUTS[:2], GETS[:2]):
        put.send_many(p)
        get.send_many(g)
    _run(spark, tmp_path, keyed_state="executors")
    assert _responses(tmp_path) == {b: EXPECTED[b] for b in (0, 1)}
    with pytest.raises(PlanChangedError) as err:
        FlowRunner(
            kvstore.build(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=_feeds(tmp_path), keyed_state="driver"
        )
    assert "the default auto, which keeps a resumed state where its checkpoint has it" in str(err.value), str(err.value)
    put.send_many(PUTS[2])
    get.send_many(GETS[2])
    runner = _run(spark, tmp_path, keyed_state="auto")
    assert _responses(tmp_path) == EXPECTED  # batch 2 reads the puts of batches 0 and 1
    placement = runner.plan.stages[0].placement
    assert placement is not None and placement.region is not None
    (p,) = placement.placements
    assert p.executors and "kept on the executors, where the checkpoint keeps it" in p.why, p.why
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
