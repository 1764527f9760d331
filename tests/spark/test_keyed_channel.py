"""A keyed singleton read by another query (`channel_versions.py`): each version crosses as
one channel entry (whole, or the keys a batch updated when the producer's state is on the
executors), the reader keeps the newest under its own state, and a tick that needs a first
version waits for it."""

from __future__ import annotations

import base64
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.ir.graph import Flow
from hydrolite.planner.spark.errors import UserFunctionError
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.placement import place_all
from hydrolite.planner.spark.render import render_text
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import json_batches
from tests.spark.test_ckfs import viewfs_mount

pytestmark = pytest.mark.spark

ND = nondet("test: any version of the table answers a get")


class P:
    """The test's process."""


def counts_read_elsewhere(first_version_needed: bool = False) -> Flow:
    """Tick `a` passes puts on; their per-key count is read by tick `b`, another query. With
    `first_version_needed`, the table is `latest()` of a count in `a` (no version before `a`
    runs) instead of a top-level count (the empty table from the start)."""
    fb = hl.FlowBuilder("keyed-channel")
    p = fb.process(P)
    a, b = p.tick(), p.tick()
    puts = p.source("puts", tuple[str, int]).batch(a, ND)
    if first_version_needed:
        table = puts.into_keyed().count().latest()
    else:
        table = puts.map(lambda kv: kv).all_ticks().into_keyed().count()
    gets = p.source("gets", str).batch(b, ND).map(lambda k: (k, 0)).into_keyed()
    gets.lookup_keyed_singleton(table.snapshot(b, ND)).entries().map(lambda t: (t[0], t[1][1])).all_ticks().sink(
        "answers"
    )
    return fb.finalize()


def _runner(spark: SparkSession, d: Path, flow: Flow, checkpoint: str | None = None) -> FlowRunner:
    return FlowRunner(
        flow,
        spark=spark,
        checkpoint=checkpoint or str(d / "ck"),
        inputs={"puts": f"feed:{d / 'puts'}", "gets": f"feed:{d / 'gets'}"},
        outputs={"answers": f"json:{d / 'answers'}"},
    )


def _answers(d: Path) -> list[Any]:
    return [r for _, rows in sorted(json_batches(d / "answers").items()) for r in rows]


@pytest.mark.parametrize("where", ["local", "viewfs"])
def test_a_keyed_count_read_by_another_query(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Gets answered from the newest version kept from an earlier batch and, after a
    restart, from the one kept under the reader's checkpoint: on a local directory and on a
    Hadoop file system (a `viewfs://` mount table; versions cross as Arrow entries there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ck").mkdir()
    checkpoint = str(tmp_path / "ck") if where == "local" else viewfs_mount(spark, tmp_path / "ck")
    puts = FeedWriter(str(tmp_path / "puts"), from_python(tuple[str, int]))
    gets = FeedWriter(str(tmp_path / "gets"), from_python(str))
    runner = _runner(spark, tmp_path, counts_read_elsewhere(), checkpoint).start()
    try:
        gets.send_many(["a"])  # before any put: the empty table (a count starts empty)
        runner.process_all_available()
        puts.send_many([("a", 1), ("b", 2), ("a", 3)])
        runner.process_all_available()  # the version {a: 2, b: 1} reaches the reader alone
        gets.send_many(["a", "b", "c"])
        runner.process_all_available()
        puts.send_many([("b", 4)])
        runner.process_all_available()
    finally:
        runner.stop()
    resumed = _runner(spark, tmp_path, counts_read_elsewhere(), checkpoint).start()
    try:
        gets.send_many(["b"])  # no new version since the restart: the one the reader kept
        resumed.process_all_available()
    finally:
        resumed.stop()
    got = _answers(tmp_path)
    assert got == [("a",), ("a", 2), ("b", 1), ("c",), ("b", 2)], got  # (a null field is left out)
    report = verify_runner(resumed)
    assert report.identical, str(report)
    # the reader keeps versions as Parquet under its state: the newest ones only
    kept = sorted(p.name for p in tmp_path.glob("ck/*/state/blobs/*/*") if p.is_dir())
    assert 1 <= len(kept) <= 2, kept


def test_a_tick_waits_for_a_first_version(spark: SparkSession, tmp_path: Path) -> None:
    """`latest()` of a tick's keyed count has no version before that tick runs: the reading
    tick holds its gets until one arrives, then answers them from it (never from an empty
    table it never had)."""
    puts = FeedWriter(str(tmp_path / "puts"), from_python(tuple[str, int]))
    gets = FeedWriter(str(tmp_path / "gets"), from_python(str))
    runner = _runner(spark, tmp_path, counts_read_elsewhere(first_version_needed=True)).start()
    try:
        gets.send_many(["a"])
        runner.process_all_available()
        assert _answers(tmp_path) == []
        assert sum(st.progress.held for st in runner.stages) == 1
        puts.send_many([("a", 7), ("a", 8)])
        runner.process_all_available()
    finally:
        runner.stop()
    assert _answers(tmp_path) == [("a", 2)]
    report = verify_runner(runner)
    assert report.identical, str(report)


def deltas_read_elsewhere() -> Flow:
    """Tick `a` passes puts on; their per-key count (Spark's streaming aggregation) and a
    Python fold of them whose result depends on arrival order (the executor region) are read
    by tick `b`, another query, the fold through a value `map()`."""
    fb = hl.FlowBuilder("keyed-deltas")
    p = fb.process(P)
    a, b = p.tick(), p.tick()
    puts = p.source("puts", tuple[str, int]).batch(a, ND).all_ticks().into_keyed()
    counts = puts.count()
    digits = puts.fold(0, lambda acc, x: acc * 10 + x).map(lambda d: (d, d % 7))
    gets = p.source("gets", str).batch(b, ND).map(lambda k: (k, 0)).into_keyed()
    for table, port in ((counts, "counts"), (digits, "digits")):
        answers = gets.lookup_keyed_singleton(table.snapshot(b, ND)).entries()
        answers.map(lambda t: (t[0], t[1][1])).all_ticks().sink(port)
    return fb.finalize()


def _entries(runner: FlowRunner, port_of_table: str) -> list[dict[Any, Any]]:
    """The channel entries of the table a sink reads, in entry order, as dicts."""
    from hydrolite.planner.spark.feed_mirror import read_entry, remote_entries

    ch = next(c for c in runner.plan.channels if port_of_table in c.name)
    path = runner.channel_dir(ch)
    out = []
    for _, name in sorted(remote_entries(path).items()):
        table = read_entry(path, name)
        out.append(dict(zip(table.column("k").to_pylist(), table.column("v").to_pylist())))
    return out


def _plain_answers(d: Path) -> list[Any]:
    """A json sink's rows in batch order, by key within a batch (the answers' `entries()` have
    no order across keys); a value whose type was not declared (a map's result) crosses
    pickled, written as base64: decoded."""

    def plain(v: Any) -> Any:
        return pickle.loads(base64.b64decode(v)) if isinstance(v, str) else v

    out: list[Any] = []
    for _, rows in sorted(json_batches(d).items()):
        out += sorted(((r[0], *(plain(v) for v in r[1:])) for r in rows), key=lambda r: (r[0], repr(r[1:])))
    return out


def test_deltas_cross_from_the_executors(spark: SparkSession, tmp_path: Path) -> None:
    """With the producer's states on the executors, each channel entry holds only the keys its
    batch updated; the reader applies the entries in order to the version it keeps (also after
    a restart), so a get of a key no recent batch touched still finds its value."""
    puts = FeedWriter(str(tmp_path / "puts"), from_python(tuple[str, int]))
    gets = FeedWriter(str(tmp_path / "gets"), from_python(str))
    outputs = {"counts": f"json:{tmp_path / 'counts'}", "digits": f"json:{tmp_path / 'digits'}"}

    def runner() -> FlowRunner:
        return FlowRunner(
            deltas_read_elsewhere(),
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs={"puts": f"feed:{tmp_path / 'puts'}", "gets": f"feed:{tmp_path / 'gets'}"},
            outputs=outputs,
            keyed_state="executors",
            channel_history="all",
        )

    first = runner()
    text = render_text(first.plan)
    assert "count() " in text and "another query reading map()" not in text, text
    assert text.count("as deltas") + text.count("as the keys each batch updated") == 2, text
    assert [c.deltas for c in first.plan.channels] == [True, True]
    # the reader keeps each version per key in its executor region: its gets are the lookups
    assert text.count("read through channel ch_") == 2 and text.count("applied as puts to the key's state") == 2, text
    first.start()
    try:
        gets.send_many(["a"])
        first.process_all_available()
        puts.send_many([("a", 1), ("b", 2), ("a", 3)])
        first.process_all_available()
        puts.send_many([("b", 4)])  # an entry with b alone
        first.process_all_available()
    finally:
        first.stop()
    resumed = runner().start()
    try:
        gets.send_many(["a", "b", "c"])  # a: kept from before the restart, b: applied after it
        resumed.process_all_available()
        puts.send_many([("c", 5)])
        resumed.process_all_available()
        gets.send_many(["a", "c"])
        resumed.process_all_available()
    finally:
        resumed.stop()

    def answers(port: str) -> list[Any]:
        return _plain_answers(tmp_path / port)

    assert answers("counts") == [("a",), ("a", 2), ("b", 2), ("c",), ("a", 2), ("c", 1)]
    assert answers("digits") == [("a",), ("a", (13, 6)), ("b", (24, 3)), ("c",), ("a", (13, 6)), ("c", (5, 5))]
    assert _entries(resumed, "count") == [{"a": 2, "b": 1}, {"b": 2}, {"c": 1}]
    assert [sorted(e) for e in _entries(resumed, "map")] == [["a", "b"], ["b"], ["c"]]
    report = verify_runner(resumed)
    assert report.identical, str(report)


def halves_read_elsewhere(declared: bool) -> Flow:
    """Tick `a` passes puts on; each key's sum of halves (an undeclared fold from `0`: its
    values become floats), or the same fold declaring `acc_type=int | float`, is read by tick
    `b`, another query."""
    fb = hl.FlowBuilder("keyed-channel-halves")
    p = fb.process(P)
    a, b = p.tick(), p.tick()
    puts = p.source("puts", tuple[str, int]).batch(a, ND).map(lambda kv: kv).all_ticks().into_keyed()
    if declared:
        table = puts.fold_commutative(0, lambda s, x: s + x / 2, acc_type=int | float)  # type: ignore[arg-type]
    else:
        table = puts.fold_commutative(0, lambda s, x: s + x / 2)  # type: ignore[arg-type]
    gets = p.source("gets", str).batch(b, ND).map(lambda k: (k, 0)).into_keyed()
    gets.lookup_keyed_singleton(table.snapshot(b, ND)).entries().map(lambda t: (t[0], t[1][1])).all_ticks().sink(
        "answers"
    )
    return fb.finalize()


def test_a_value_that_leaves_the_channels_type_fails_naming_the_fold(spark: SparkSession, tmp_path: Path) -> None:
    """The channel carries the fold's values in the type its init gives (int); a value kept
    as it is (`1.5`, pickled by the batch) that is not of that type fails naming the fold, the
    value, the batch and `acc_type=` — before, Spark's analysis failed on a cast of the pickles
    ("cannot cast BINARY to BIGINT"). Declared, the values cross pickled, each as it is."""
    for declared in (False, True):
        d = tmp_path / str(declared)
        FeedWriter(str(d / "puts"), from_python(tuple[str, int])).send_many([("a", 3), ("b", 4)])
        FeedWriter(str(d / "gets"), from_python(str)).send_many([])
        runner = _runner(spark, d, halves_read_elsewhere(declared)).start()
        try:
            if not declared:
                with pytest.raises(UserFunctionError) as err:
                    runner.process_all_available()
                text = str(err.value)
                assert re.search(r"fold\(\) failed on element (1\.5|2\.0) in batch 0 of query", text), text
                assert "the type it crosses to another query in (channel " in text and "acc_type=" in text, text
                assert "test_keyed_channel.py" in text and err.value.batch_id == 0
                continue
            runner.process_all_available()
            FeedWriter(str(d / "gets"), from_python(str)).send_many(["a", "b", "c"])
            runner.process_all_available()
        finally:
            runner.stop()
        got = _plain_answers(d / "answers")  # (declared `int | float`: each value pickled, as it is)
        assert [repr(r) for r in got] == ["('a', 1.5)", "('b', 2.0)", "('c',)"], got
        assert verify_runner(runner).identical


def test_plan_says_where_the_table_lives() -> None:
    """On the executors the producer's state says it is read by another query as deltas; on
    the driver the table crosses whole. Behind a step that may drop a key (a filter) the
    state stays on the executors too, and the channel says it carries tombstones."""
    plan = plan_flow(counts_read_elsewhere())
    place_all(plan, "executors", "local-cluster[2,1,1024]")
    text = render_text(plan)
    assert "another query reading count() " in text and " as deltas" in text, text  # (its map is a projection)
    assert [(c.deltas, c.gone_from) for c in plan.channels] == [(True, None)]
    assert "from query 0 (deltas: the keys each batch updated)" in text and "to queries [1] (deltas)" in text, text
    place_all(plan, "driver", "local[2]")
    assert [c.deltas for c in plan.channels] == [False]

    filtered = plan_flow(filtered_read_elsewhere())
    place_all(filtered, "executors", "local-cluster[2,1,1024]")
    text = render_text(filtered)
    assert "read whole" not in text, text
    assert "another query reading filter() " in text and "by another query, as the keys each batch updated" in text, (
        text
    )
    assert [c.deltas for c in filtered.channels] == [True, True]
    assert sorted(c.gone_from.op for c in filtered.channels if c.gone_from is not None) == ["count", "fold"]
    assert text.count("updated that a filter drops)") == 4, text  # (each channel: where it is written and read)
    place_all(filtered, "driver", "local[2]")
    assert [(c.deltas, c.gone_from) for c in filtered.channels] == [(False, None), (False, None)]


def filtered_read_elsewhere() -> Flow:
    """Tick `a` passes puts on; tick `b`, another query, reads their per-key count through a
    `filter` (even counts only) and a Python fold of them through a `filter` (odd digit
    strings only) and a `map`: a key enters, leaves and comes back as its count and digits grow."""
    fb = hl.FlowBuilder("keyed-tombstones")
    p = fb.process(P)
    a, b = p.tick(), p.tick()
    puts = p.source("puts", tuple[str, int]).batch(a, ND).all_ticks().into_keyed()
    even = puts.count().filter(lambda c: c % 2 == 0)
    odd = puts.fold(0, lambda acc, x: acc * 10 + x).filter(lambda d: d % 2 == 1).map(lambda d: d * 100)
    gets = p.source("gets", str).batch(b, ND).map(lambda k: (k, 0)).into_keyed()
    for table, port in ((even, "even"), (odd, "odd")):
        answers = gets.lookup_keyed_singleton(table.snapshot(b, ND)).entries()
        answers.map(lambda t: (t[0], t[1][1])).all_ticks().sink(port)
    return fb.finalize()
