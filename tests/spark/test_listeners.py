"""`JsonEventListener` (listeners.py): the same events as PySpark's own listener, read from
the event's JSON, without the Py4J exceptions PySpark's object walk raises in the JVM."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors.exceptions import captured
from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import (
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from hydrolite.planner.spark.listeners import JsonEventListener

pytestmark = pytest.mark.spark


class _Record:
    """What a listener saw of one run: its events, in order, and the thread they came on."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.threads: set[str] = set()
        self.done = threading.Event()

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        self.events.append(("started", event))

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        self.threads.add(threading.current_thread().name)
        self.events.append(("progress", event.progress))

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        self.events.append(("terminated", event))
        self.done.set()


class Ours(_Record, JsonEventListener):
    """Events as JSON (`listeners.py`)."""


class PySparks(_Record, StreamingQueryListener):
    """Events through PySpark's own object walk."""


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """How many JVM exceptions PySpark converted, per thread kind (a counting wrapper)."""
    seen = {"listener": 0}
    convert = captured.convert_exception

    def counting(e: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            seen["listener"] += 1
        return convert(e)

    monkeypatch.setattr(captured, "convert_exception", counting)
    yield seen


def _run(spark: SparkSession, tmp_path: Path, listener: StreamingQueryListener, name: str) -> list[Any]:
    """Three files, one micro-batch each, through a file source into a no-op sink."""
    src = tmp_path / name
    src.mkdir()
    for i in range(3):
        (src / f"{i}.json").write_text("".join(json.dumps({"x": i * 10 + j}) + "\n" for j in range(i + 1)))
    spark.streams.addListener(listener)
    try:
        q = (
            spark.readStream.schema("x long")
            .option("maxFilesPerTrigger", 1)
            .json(str(src))
            .writeStream.format("noop")
            .queryName(name)
            .option("checkpointLocation", str(tmp_path / f"{name}-ck"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)
        assert isinstance(listener, _Record)
        assert listener.done.wait(30), "no termination event"
    finally:
        spark.streams.removeListener(listener)
    return q.recentProgress


def test_a_json_listener_sees_what_pyspark_reports(spark: SparkSession, tmp_path: Path) -> None:
    ours = Ours()
    recent = _run(spark, tmp_path, ours, "json_listener")
    kinds = [k for k, _ in ours.events]
    assert kinds[0] == "started" and kinds[-1] == "terminated" and kinds.count("progress") == 3
    started, terminated = ours.events[0][1], ours.events[-1][1]
    assert started.name == "json_listener" and started.runId == terminated.runId and terminated.exception is None
    got = [p for k, p in ours.events if k == "progress"]
    assert [p.batchId for p in got] == [p.batchId for p in recent] == [0, 1, 2]
    assert [p.numInputRows for p in got] == [p.numInputRows for p in recent]
    assert sorted(p.numInputRows for p in got) == [1, 2, 3]  # one file a batch (in Spark's file order)
    for mine, theirs in zip(got, recent):
        assert mine.json == theirs.json  # every field, as Spark wrote it
        assert mine.sources[0].numInputRows == theirs.sources[0].numInputRows
        assert set(mine.durationMs) == set(theirs.durationMs) and "triggerExecution" in mine.durationMs


def test_a_json_listener_raises_no_jvm_exception_per_event(
    spark: SparkSession, tmp_path: Path, conversions: dict[str, int]
) -> None:
    """PySpark's own listener reads each Java map of an event with an iterator that ends in a
    JVM exception; ours reads one JSON string."""
    pyspark_listener = PySparks()
    _run(spark, tmp_path, pyspark_listener, "pyspark_listener")
    time.sleep(0.5)  # (the events of that run are all in: its termination came last)
    assert conversions["listener"] > 0  # the cost this module avoids is still there in PySpark
    conversions["listener"] = 0
    ours = Ours()
    _run(spark, tmp_path, ours, "json_listener")
    assert [k for k, _ in ours.events].count("progress") == 3
    assert conversions["listener"] == 0
