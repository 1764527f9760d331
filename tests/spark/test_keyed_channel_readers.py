"""Readers of keyed tables from another query, beyond the plain case of
`test_keyed_channel.py`: a table filtered on the way (its deltas carry tombstones) and a
reading query that keeps keyed state of its own on the executors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.ir.graph import Flow
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.placement import place_all
from hydrolite.planner.spark.render import render_text
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.test_keyed_channel import ND, P, _answers, _plain_answers, filtered_read_elsewhere

pytestmark = pytest.mark.spark


def _gone(runner: FlowRunner, port_of_table: str) -> list[tuple[list[Any], list[Any]]]:
    """Per channel entry of the table a sink reads: its keys with values, its tombstones."""
    from hydrolite.planner.spark.feed_mirror import read_entry, remote_entries

    ch = next(c for c in runner.plan.channels if port_of_table in c.name)
    path = runner.channel_dir(ch)
    out = []
    for _, name in sorted(remote_entries(path).items()):
        t = read_entry(path, name).to_pylist()
        out.append((sorted(r["k"] for r in t if not r["gone"]), sorted(r["k"] for r in t if r["gone"])))
    return out


def test_a_filtered_table_crosses_with_tombstones(spark: SparkSession, tmp_path: Path) -> None:
    """A key the filter drops in a batch leaves the reader's version (a tombstone in the
    entry), and comes back when it passes again. (The same program with its states on the
    driver, whole versions, answers the same: the generated programs of `tests/differential`
    draw this shape in both modes; `test_keyed_channel.py` restarts a delta reader.)"""
    puts = FeedWriter(str(tmp_path / "puts"), from_python(tuple[str, int]))
    gets = FeedWriter(str(tmp_path / "gets"), from_python(str))
    runner = FlowRunner(
        filtered_read_elsewhere(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"puts": f"feed:{tmp_path / 'puts'}", "gets": f"feed:{tmp_path / 'gets'}"},
        outputs={"even": f"json:{tmp_path / 'even'}", "odd": f"json:{tmp_path / 'odd'}"},
        keyed_state="executors",
        channel_history="all",
    ).start()
    try:
        for sent, values in (
            (puts, [("a", 1), ("b", 2), ("a", 3)]),  # a: 2, 13; b: 1, 2
            (gets, ["a", "b"]),
            (puts, [("a", 4), ("b", 5)]),  # a: 3, 134 (gone from both); b: 2, 25
            (gets, ["a", "b"]),
            (puts, [("a", 5)]),  # a: 4, 1345 (back in both)
            (gets, ["a", "b", "c"]),
        ):
            sent.send_many(values)
            runner.process_all_available()
    finally:
        runner.stop()

    def answers(port: str) -> list[Any]:
        return _plain_answers(tmp_path / port)

    assert answers("even") == [("a", 2), ("b",), ("a",), ("b", 2), ("a", 4), ("b", 2), ("c",)]
    assert answers("odd") == [("a", 1300), ("b",), ("a",), ("b", 2500), ("a", 134500), ("b", 2500), ("c",)]
    assert _gone(runner, "map") == [(["a"], ["b"]), (["b"], ["a"]), (["a"], [])]
    assert _gone(runner, "filter") == [(["a"], ["b"]), (["b"], ["a"]), (["a"], [])]
    report = verify_runner(runner)
    assert report.identical, str(report)


def reader_with_state_of_its_own(first_version_needed: bool = False) -> Flow:
    """Tick `b` reads tick `a`'s per-key count of puts and its total (a singleton: 0 before
    any put) from another query, and keeps a running per-key count of its own gets, read
    back aligned for the keys each batch asked: neither version it reads can make a batch of
    `b` wait, so its count is Spark's streaming aggregation too. With
    `first_version_needed`, the total is `latest()` of `a`'s batch count, which has no
    version before `a` runs."""
    fb = hl.FlowBuilder("reader-state")
    p = fb.process(P)
    a, b = p.tick(), p.tick()
    batch = p.source("puts", tuple[str, int]).batch(a, ND)
    puts = batch.all_ticks()
    table, total = puts.into_keyed().count(), batch.count().latest() if first_version_needed else puts.count()
    gets = p.keyed_source("gets", str, int)
    align = p.local_align_point()
    asked = gets.batch_aligned(b, align, ND).keys().map(lambda k: (k, None)).into_keyed()
    mine = asked.lookup_keyed_singleton(gets.count().snapshot_aligned(b, align, ND))
    both = mine.lookup_keyed_singleton(table.snapshot(b, ND)).entries()
    answers = both.map(lambda e: (e[0], e[1][0][1], e[1][1])).cross_singleton(total.snapshot(b, ND))
    answers.map(lambda t: (*t[0], t[1])).all_ticks().sink("answers")
    return fb.finalize()


def test_a_query_reading_versions_keeps_its_own_state_on_the_executors(spark: SparkSession, tmp_path: Path) -> None:
    """A query that reads a keyed table and a singleton from another query, both with a
    version before anything ran, never waits, so its own keyed count lives in Spark's state
    store; one with a version that may not exist yet keeps its state on the driver."""
    flow = reader_with_state_of_its_own()
    plan = plan_flow(flow)
    place_all(plan, "executors", "local-cluster[2,1,1024]")
    reader = next(st for st in plan.stages if st.channels_in)
    assert reader.placement is not None and [p.native for p in reader.placement.placements if p.table is None] == [True]
    puts = FeedWriter(str(tmp_path / "puts"), from_python(tuple[str, int]))
    gets = FeedWriter(str(tmp_path / "gets"), from_python(int), from_python(str))
    runner = FlowRunner(
        flow,
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"puts": f"feed:{tmp_path / 'puts'}", "gets": f"feed:{tmp_path / 'gets'}"},
        outputs={"answers": f"json:{tmp_path / 'answers'}"},
        keyed_state="executors",
        channel_history="all",
    ).start()
    try:
        gets.send_many([("a", 1)])  # nothing put yet: the empty table and a total of 0
        runner.process_all_available()
        puts.send_many([("a", 1), ("b", 2), ("a", 3)])
        runner.process_all_available()
        gets.send_many([("a", 2), ("b", 3), ("a", 4)])
        runner.process_all_available()
    finally:
        runner.stop()
    assert sorted(map(tuple, _answers(tmp_path))) == [("a", 1, None, 0), ("a", 3, 2, 3), ("b", 1, 1, 3)]
    report = verify_runner(runner)
    assert report.identical, str(report)

    waits = plan_flow(reader_with_state_of_its_own(first_version_needed=True))
    place_all(waits, "executors", "local-cluster[2,1,1024]")
    text = render_text(waits)
    assert "that has no first version before it runs: a batch may have to wait for it" in text, text
