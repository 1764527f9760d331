"""Channels between queries and heartbeats of deferred streams with the checkpoint on a Hadoop
file system (a real `viewfs://` mount table over a local directory): their entries are
written there, read from the driver's local mirror, and a new runner resumes from the URI
alone (`feed_mirror.py`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hydrolite.planner.spark.faults import CrashOnce, InjectedFault
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.offsets import read_offset_log
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import Prim
from hydrolite.planner.spark.verify import unread_entries, verify_runner
from tests.differential.regressions.deferred_stream_runs_without_input import build as deferred
from tests.spark.runs import json_batches
from tests.spark.test_ckfs import viewfs_mount
from tests.spark.test_plan import two_ticks

pytestmark = pytest.mark.spark


def _entries(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if not p.name.startswith(".")) if d.is_dir() else []


def deferred_scenario(s: Any) -> None:
    """`deferred`: a deferred stream and a stream cycle, so each run of the tick that defers
    something needs another run without new input, which the query's heartbeat asks for."""
    s.sender("xs").send_many([1, 2])
    s.receiver("prev").assert_yields_only([1, 2])
    s.receiver("cycled").assert_yields_only([1, 2, 6, 7, 11])  # three runs of the tick for one input


def test_heartbeats_run_on_a_hadoop_checkpoint_as_on_a_local_one(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query whose deferred streams need its heartbeat: the answers of a local checkpoint
    (the scenario asserts them), every batch replays identically in the simulator, and the
    heartbeat's entries are Arrow files on the mounted disk (channels: the test below)."""
    monkeypatch.chdir(tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()
    h = SparkHarness(deferred(), spark, str(tmp_path / "io"), checkpoint=viewfs_mount(spark, disk))
    mirrors = h.runner.mirrors
    assert mirrors is not None
    h.run(deferred_scenario)
    report = verify_runner(h.runner)
    assert report.identical, str(report)
    assert mirrors.root is None  # stopping the runner removed its mirror
    beats = _entries(disk / "tick0" / "heartbeat")
    assert len(beats) >= 2 and all(b.endswith(".arrow") for b in beats), beats  # the tick ran 3 times for 1 input
    assert not any(n.endswith(":") for n in os.listdir(tmp_path))  # no directory named after the scheme


def _two_ticks(spark: SparkSession, d: Path, ck: str, fault: Any = None) -> FlowRunner:
    outs = {"counts": f"json:{d / 'counts'}", "doubled": f"json:{d / 'doubled'}"}
    return FlowRunner(
        two_ticks(), spark=spark, checkpoint=ck, inputs={"x": f"feed:{d / 'x'}"}, outputs=outs, fault=fault
    )


def ch_input(runner: FlowRunner) -> str:
    """The name of the consumer's channel input."""
    (consumer,) = [st for st in runner.stages if st.stage.name == "tick1"]
    (name,) = [i.name for i in consumer.inputs]
    return name


def test_a_consumer_crashed_mid_batch_resumes_from_the_hadoop_checkpoint_alone(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The channel's consumer crashes in its batch 2; a new runner (a new, empty mirror, as on
    another machine) copies only the entries from that batch's start on, replays the batch
    and goes on: every element is counted once, in the batches a run without the crash has."""
    disk = tmp_path / "disk"
    disk.mkdir()
    ck = viewfs_mount(spark, disk)
    x = FeedWriter(str(tmp_path / "x"), Prim(int))
    crash = CrashOnce("before_outputs", batch=2, query="tick1")

    first = _two_ticks(spark, tmp_path, ck, crash)
    first.start()
    try:
        for values in ([1, 2], [3]):  # the consumer's batch 0 has no data: entry 0 is its batch 1
            x.send_many(values)
            first.process_all_available()
        raise AssertionError("the consumer did not crash")
    except InjectedFault:
        assert crash.fired == [2]
    finally:
        first.stop()
    second = _two_ticks(spark, tmp_path, ck)
    mirrors = second.mirrors
    assert mirrors is not None
    (feed,) = mirrors.feeds.values()  # the channel (two_ticks defers nothing: no heartbeat)
    assert feed.base == 1  # the consumer's batch 2 started at entry 1
    second.start()
    try:
        assert _entries(Path(feed.local)) == [f"{1:012d}.arrow"]  # entry 0 is never read again
        second.process_all_available()
        for values in ([4, 5], [6]):
            x.send_many(values)
            second.process_all_available()
        assert unread_entries(second) == []
        # the mirror holds what the consumer's last batch read on (the highest entry at least);
        # older entries are gone from it, the URI keeps them all (below)
        (last,) = [t for t in read_offset_log(ck) if t.query == "tick1"][-1:]
        (start, _end) = last.inputs[ch_input(second)]
        first_kept = min(int(start["entries"]) if start else 0, 3)
        assert _entries(Path(feed.local)) == [f"{i:012d}.arrow" for i in range(first_kept, 4)], last
        report = verify_runner(second)
        assert report.identical, str(report)
    finally:
        second.stop()
    assert mirrors.root is None  # stopping the runner removed its mirror
    (ch,) = second.plan.channels  # one entry per batch of the producer, Arrow files on the mounted disk
    assert _entries(disk / "channels" / ch.name) == [f"{i:012d}.arrow" for i in range(4)]
    assert json_batches(tmp_path / "counts") == {1: [2], 2: [1], 3: [2], 4: [1]}
    doubled = json_batches(tmp_path / "doubled")
    assert sorted(v for rows in doubled.values() for v in rows) == [2, 4, 6, 8, 10, 12]
