"""Heartbeats of deferred streams with the checkpoint on a Hadoop file system (a real
`viewfs://` mount table over a local directory): their entries are written there and read
from the driver's local mirror (`feed_mirror.py`). A channel between queries whose consumer
crashes and resumes from the URI alone, with the mirror's copying and dropping of entries,
runs on an S3 bucket (test_s3a_checkpoint.py); the generated programs on a Hadoop checkpoint
(tests/differential) may chain queries by channels on `viewfs://`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.verify import verify_runner
from tests.differential.regressions.deferred_stream_runs_without_input import build as deferred
from tests.spark.test_ckfs import viewfs_mount

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


def test_heartbeats_the_query_is_past_are_removed_from_the_uri(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the newest batch's entries kept only (`channel_history=1`), the heartbeat's older
    entries leave the mounted disk (the highest stays: the next one is appended after it), the
    answers are the scenario's, and `verify` still replays the run: a heartbeat carries no
    elements, so a replay never reads one."""
    monkeypatch.chdir(tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()
    h = SparkHarness(deferred(), spark, str(tmp_path / "io"), checkpoint=viewfs_mount(spark, disk), channel_history=1)
    h.run(deferred_scenario)
    beats = _entries(disk / "tick0" / "heartbeat")
    assert beats[-1] == "_removed_below" and beats[:-1] == ["000000000001.arrow"], beats
    assert (disk / "tick0" / "heartbeat" / "_removed_below").read_text() == "1"
    report = verify_runner(h.runner)
    assert report.identical, str(report)
