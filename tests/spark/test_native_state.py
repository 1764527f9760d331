"""Algebraic keyed state as Spark's native streaming aggregation (`native_state.py`) on real Spark.

The per-key running count (the benchmark's `build_keycount`) and its variants — an algebraic
fold, a sum, min/max in a tuple, a reduce, requests filtered or taken straight from the
stream — must answer what the simulator answers for the same batches (`verify_runner`
replays the run in the simulator) and what the driver store answers; a crash inside a batch
and a restart on more input must recover the aggregation's state from Spark's checkpoint
without counting anything twice; programs whose lookups may ask for keys the batch did not
update must not take the path; and a checkpoint never resumes with a state moved to or from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.native_state import WHY
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.upgrade import PlanChangedError
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import json_batches, run_once

pytestmark = pytest.mark.spark

BATCHES = [[("a", 1), ("b", 2), ("a", 3)], [("c", 5), ("a", -4)], [("b", 7), ("b", 1), ("d", 0)]]
MORE = [[("a", 2), ("e", 9)], [("c", 1)]]


class Counter:
    """Tag of the counting process."""


Agg = Callable[[Any], Any]  # KeyedStream -> KeyedSingleton
Ask = Callable[[Any], Any]  # the tick's batch of the stream -> the keyed requests


def _keys_asked(batch: Any) -> Any:
    return batch.keys().map(lambda k: (k, None)).into_keyed()


def _program(agg: Agg, ask: Ask = _keys_asked, keep_missing: bool = True) -> hl.Flow:
    """`agg` of a keyed source, read back in the same tick at the keys `ask` derives from the
    tick's batch of that source (the benchmark's running count when agg is count())."""
    flow = hl.FlowBuilder("native")
    node = flow.process(Counter)
    events = node.keyed_source("event", str, int)
    align = node.local_align_point()
    state = agg(events)
    tick = node.tick()
    batch = events.batch_aligned(tick, align, nondet("any grouping of events gives the same final values"))
    snap = state.snapshot_aligned(tick, align, nondet("the version that includes this batch's events"))
    requests = ask(batch)
    found = requests.lookup_keyed_singleton(snap) if keep_missing else snap.get_many_if_present(requests)
    found.entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("out")
    return flow.finalize()


def _feed(d: Path, batches: list[list[tuple[str, int]]]) -> str:
    w = FeedWriter(str(d / "event"), from_python(int), from_python(str))
    for b in batches:
        w.send_many(b)
    return f"feed:{d / 'event'}?maxEntriesPerTrigger=1"  # one entry per micro-batch


def _run(
    spark: SparkSession, flow: hl.Flow, d: Path, keyed_state: str = "executors", fault: Any = None, more: bool = False
) -> tuple[FlowRunner, list[Any]]:
    batches = MORE if more else [] if (d / "event").exists() else BATCHES  # appended to the feed
    url = _feed(d, batches)
    runner = FlowRunner(
        flow,
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs={"event": url},
        outputs={"out": f"json:{d / 'out'}"},
        fault=fault,
        keyed_state=keyed_state,
    )
    run_once(runner)
    return runner, _outputs(d)


def _outputs(d: Path) -> list[Any]:
    """(batch, key, value) of every row the run under `d` wrote (a null value, which Spark's
    JSON writer leaves out, as None)."""
    rows = [(b, r[0], r[1] if len(r) > 1 else None) for b, by in json_batches(d / "out").items() for r in by]
    return sorted(rows, key=repr)


def _expected(f: Callable[[list[int]], Any], batches: list[list[tuple[str, int]]]) -> list[Any]:
    """(batch, key, f(all values of key so far)) for every key a batch touched."""
    seen: dict[str, list[int]] = {}
    out = []
    for b, rows in enumerate(batches):
        for k, v in rows:
            seen.setdefault(k, []).append(v)
        out += [(b, k, f(seen[k])) for k in sorted({k for k, _ in rows})]
    return sorted(out, key=repr)


VARIANTS: dict[str, tuple[Agg, Callable[[list[int]], Any]]] = {
    "count": (lambda s: s.count(), len),
    "fold sum": (lambda s: s.fold(10, lambda acc, x: acc + x), lambda xs: 10 + sum(xs)),
    "fold count and max": (
        lambda s: s.fold((0, -100), lambda acc, x: (acc[0] + 1, max(acc[1], x))),
        lambda xs: (len(xs), max([-100, *xs])),
    ),
    "reduce min": (lambda s: s.reduce(lambda a, b: min(a, b)), min),
    "fold_commutative any": (
        lambda s: s.map(lambda x: x > 4).fold_commutative(False, lambda acc, x: acc or x),
        lambda xs: any(x > 4 for x in xs),
    ),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_native_aggregation_answers_like_the_simulator_and_the_driver(
    spark: SparkSession, tmp_path: Path, name: str
) -> None:
    agg, f = VARIANTS[name]
    runner, got = _run(spark, _program(agg), tmp_path / "native")
    placement = runner.plan.stages[0].placement
    assert placement is not None
    if name == "fold_commutative any":  # a map between the input and the state: not native, per key
        assert not placement.native and "passes through map()" in placement.placements[0].why
        # (its requests pass through the batch's keys(): a chain, each key asked once)
        assert placement.region is not None and placement.placements[0].executors, placement.placements
    else:
        assert len(placement.native) == 1 and placement.region is None, placement.placements
        assert placement.placements[0].why.startswith(WHY)
    assert got == _expected(f, BATCHES)
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    # one job (the file sink's write) reads a batch whose state the executors keep: not cached
    assert runner.stages[0].one_job
    if name in ("count", "fold_commutative any"):  # the driver's fold of a native and a Python state
        # (the others answer `_expected` on the native path already: a driver run of them costs
        # a query and checks what the differential tests check of the driver store)
        driver, on_driver = _run(spark, _program(agg), tmp_path / "driver", keyed_state="driver")
        assert on_driver == got
        assert not driver.stages[0].one_job  # the driver's fold collects the batch first: cached


def test_requests_straight_from_the_stream_or_filtered_take_the_native_path(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Each request's key is the key of one of the batch's elements: the stream itself, or its
    values filtered / mapped (a keyed map keeps the key), with or without keep_missing."""
    Rows = list[tuple[str, int]]
    asks: list[tuple[Ask, bool, Callable[[Rows], list[str]]]] = [  # requests, keep_missing, keys asked
        (lambda b: b, True, lambda rows: [k for k, _ in rows]),
        (lambda b: b.filter(lambda v: v > 1).map(lambda v: v * 2), False, lambda rows: [k for k, v in rows if v > 1]),
        (
            lambda b: b.keys().filter(lambda k: k != "a").map(lambda k: (k, 0)).into_keyed(),
            True,
            lambda rows: sorted({k for k, _ in rows} - {"a"}),
        ),
    ]
    for i, (ask, keep, asked) in enumerate(asks):
        runner, got = _run(spark, _program(lambda s: s.count(), ask, keep), tmp_path / str(i))
        placement = runner.plan.stages[0].placement
        assert placement is not None and len(placement.native) == 1, placement.placements
        seen: dict[str, int] = {}
        want = []
        for b, rows in enumerate(BATCHES):
            for k, _ in rows:
                seen[k] = seen.get(k, 0) + 1
            want += [(b, k, seen[k]) for k in asked(rows)]
        assert got == sorted(want, key=repr), i
        report = verify_runner(runner)
        assert report.identical, str(report)


def test_lookups_of_other_keys_do_not_take_the_native_path(spark: SparkSession) -> None:
    """Requests whose keys the batch may not have updated (a constant key, another source's
    keys, keys of a filtered stream the state does not read) stay on the other paths, and the
    plan says why; so do first()/last() and float sums."""
    from hydrolite.planner.spark.placement import place
    from hydrolite.planner.spark.stages import plan_flow

    programs = {
        "constant key": _program(lambda s: s.count(), lambda b: b.keys().map(lambda k: ("a", k)).into_keyed()),
        "state of a filtered stream": _program(
            lambda s: s.filter(lambda v: v > 1).count(), lambda b: b.keys().map(lambda k: (k, 0)).into_keyed()
        ),
        "last": _program(lambda s: s.last()),
        "float sum": _program(lambda s: s.map(float).fold(0.0, lambda acc, x: acc + x)),
    }
    for name, flow in programs.items():
        (stage,) = plan_flow(flow).stages
        p = place(stage)
        assert not p.native, name
        (only,) = p.placements
        assert f"not {WHY}" in only.why, (name, only.why)
    (stage,) = plan_flow(programs["constant key"]).stages
    assert "may ask for keys this batch did not update" in place(stage).placements[0].why


@pytest.mark.parametrize("point", ["before_outputs", "after_sinks"])
def test_a_crash_and_a_restart_recover_the_counts_from_sparks_checkpoint(
    spark: SparkSession, tmp_path: Path, point: str
) -> None:
    fault = CrashOnce(point)
    flow = _program(lambda s: s.count())
    with pytest.raises(Exception, match="crash at"):
        _run(spark, flow, tmp_path, fault=fault)
    assert fault.fired == [1]
    runner, got = _run(spark, flow, tmp_path, more=True)  # batch 1 again, from the state before it; then more
    assert got == _expected(len, BATCHES + MORE)
    assert runner.plan.stages[0].placement is not None and runner.plan.stages[0].placement.native
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


def test_resuming_with_the_state_moved_to_or_from_the_native_path_is_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    flow = _program(lambda s: s.count())
    _run(spark, flow, tmp_path, keyed_state="driver")
    with pytest.raises(PlanChangedError) as err:
        FlowRunner(
            flow,
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs={"event": "feed:/nonexistent"},
            keyed_state="executors",
        )
    text = str(err.value)
    assert "lives on the driver in this checkpoint" in text and "keep it in a native streaming aggregation" in text, (
        text
    )
    assert "native streaming aggregations would change" in text, text
    other = tmp_path / "other"
    _run(spark, flow, other, keyed_state="executors")
    with pytest.raises(PlanChangedError) as err:
        FlowRunner(flow, spark=spark, checkpoint=str(other / "ck"), inputs={"event": "feed:/x"}, keyed_state="driver")
    text = str(err.value)
    assert "lives in a native streaming aggregation in this checkpoint" in text, text
    assert "--keyed-state executors (or the default auto, which keeps a resumed state where its checkpoint" in text, (
        text
    )


def test_auto_resumes_a_count_where_its_checkpoint_keeps_it(spark: SparkSession, tmp_path: Path) -> None:
    """A count the checkpoint keeps on the driver (a run with --keyed-state driver) resumes
    under the default `auto` on the driver, though `auto` would start a new count as a native
    aggregation: the count carries on from the driver's store (kept_homes.py)."""
    flow = _program(lambda s: s.count())
    _, first = _run(spark, flow, tmp_path, keyed_state="driver")
    assert first == _expected(len, BATCHES)
    runner, got = _run(spark, flow, tmp_path, keyed_state="auto", more=True)
    assert got == _expected(len, BATCHES + MORE)
    placement = runner.plan.stages[0].placement
    assert placement is not None and not placement.native and len(placement.placements) == 1, placement
    (p,) = placement.placements
    assert not p.executors and "kept on the driver, where the checkpoint keeps it" in p.why, p.why
    fresh = FlowRunner(flow, spark=spark, checkpoint=str(tmp_path / "new"), inputs={"event": "feed:/x"})
    assert fresh.plan.stages[0].placement is not None and fresh.plan.stages[0].placement.native  # a new count: native
    fresh.lock.release()
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


@pytest.mark.parametrize("raw_reader", [False, True])
def test_input_rows_are_counted_once_though_every_state_scans_the_input(
    spark: SparkSession, tmp_path: Path, raw_reader: bool
) -> None:
    """Two native states read the input in two more branches of the query (and the tick reads
    it too when a live node needs its elements); Spark's progress counts a row once per scan,
    the progress line once per row."""
    from hydrolite.progress import LineProgress

    flow = hl.FlowBuilder("native2")
    node = flow.process(Counter)
    events = node.keyed_source("event", str, int)
    align = node.local_align_point()
    counts, sums = events.count(), events.fold(0, lambda acc, x: acc + x)
    tick = node.tick()
    batch = events.batch_aligned(tick, align, nondet("any grouping of events gives the same final values"))
    for state, port in ((counts, "out"), (sums, "sums")):
        snap = state.snapshot_aligned(tick, align, nondet("the version that includes this batch's events"))
        _keys_asked(batch).lookup_keyed_singleton(snap).entries().all_ticks().sink(port)
    # a second input the tick reads, after `event` in the union's order (Spark's offsets are positional)
    node.source("tail", str).batch(tick, nondet("any grouping")).all_ticks().sink("tails")
    outputs = {"out": "memory", "sums": "memory", "tails": "memory"}
    if raw_reader:
        batch.entries().all_ticks().sink("seen")
        outputs["seen"] = "memory"
    runner = FlowRunner(
        flow.finalize(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"event": _feed(tmp_path, BATCHES), "tail": _tail_feed(tmp_path)},
        outputs=outputs,
        keyed_state="executors",
    )
    progress = LineProgress(runner)
    try:
        runner.start()
        runner.process_all_available()
    finally:
        runner.stop()
    progress.show(runner, final=True)
    (stage,) = runner.stages
    assert stage.native is not None and len(stage.native.states) == 2
    # both lookups answer from the aggregate rows; the tick reads the input's rows only for `seen`
    assert len(stage.native.in_place) == 2
    assert [i.name for i in stage.inputs] == ["event", "tail"]
    assert stage.in_tick == [raw_reader, True] and stage.scans == [2 + raw_reader, 3]
    (stats,) = progress.stats()
    events = sum(map(len, BATCHES))
    assert stats.rows == events + 3 and stats.per_input == f" (event={events}, tail=3)", stats
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


def _tail_feed(d: Path) -> str:
    w = FeedWriter(str(d / "tail"), from_python(str))
    for b in (["x"], [], ["y", "z"]):
        w.send_many(b)
    return f"feed:{d / 'tail'}?maxEntriesPerTrigger=1"


@pytest.mark.parametrize(
    "before", [None, "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"]
)
def test_the_state_is_in_rocksdb_and_the_sessions_own_store_setting_is_left_alone(
    spark: SparkSession, tmp_path: Path, before: str | None
) -> None:
    """hydrolite's queries keep their state in RocksDB, while the user's other queries in the
    same session keep the provider the session names (or Spark's default)."""
    from hydrolite.planner.spark.keyed_state import ROCKSDB
    from hydrolite.planner.spark.session import STATE_STORE, query_conf

    with query_conf(
        spark, STATE_STORE, "-"
    ):  # a placeholder: on the way out the test session gets its own setting back
        if before is None:
            spark.conf.unset(STATE_STORE)
        else:
            spark.conf.set(STATE_STORE, before)
        runner, got = _run(spark, _program(lambda s: s.count()), tmp_path)
        assert spark.conf.get(STATE_STORE, None) == before
    assert got == _expected(len, BATCHES)
    offsets = sorted((tmp_path / "ck").glob("*/spark/offsets/0"))
    assert len(offsets) == 1
    metadata = json.loads(offsets[0].read_text().splitlines()[1])
    assert metadata["conf"][STATE_STORE] == ROCKSDB  # what a restart resumes with
    state = offsets[0].parent.parent / "state"
    assert list(state.rglob("*.zip")), sorted(p.name for p in state.rglob("*"))  # RocksDB's snapshots
