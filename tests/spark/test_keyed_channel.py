"""A keyed singleton read by another query (`channel_versions.py`): each version crosses as
one channel entry, the reader keeps the newest under its own state, and a tick that needs
a first version waits for it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.ir.graph import Flow
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.placement import place_all
from hydrolite.planner.spark.render import render_text
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.stages import SparkPlanError, plan_flow
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


def test_plan_says_where_the_table_lives_and_refuses_a_partial_one() -> None:
    """The producer keeps a crossing table on the driver, whole, and says so; a placement that
    would keep it where a batch sees only the keys it updated is refused with the fix."""
    plan = plan_flow(counts_read_elsewhere())
    place_all(plan, "executors", "local-cluster[2,1,1024]")
    text = render_text(plan)
    assert "is read by another query, each version whole" in text, text
    producer = next(st for st in plan.stages if st.channels_out)
    assert producer.placement is not None
    moved = tuple(dataclasses.replace(p, executors=True) for p in producer.placement.placements)
    producer.placement = dataclasses.replace(producer.placement, placements=moved)
    from hydrolite.planner.spark.channel_versions import check_whole

    with pytest.raises(
        SparkPlanError, match=r"(?s)read by another query.*lives on the executors.*keyed_state='driver'"
    ):
        check_whole(plan)
