"""`hydrolite run`'s progress on a real run: the live table and the final lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from rich.console import Console

from examples import counter
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.progress import LiveProgress, QueryStats, make_progress
from tests.spark.test_exactly_once import write_feeds

pytestmark = pytest.mark.spark


def test_live_table_then_final_lines(spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = write_feeds(tmp_path)
    screen = io.StringIO()
    with FlowRunner(counter.build(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=inputs) as run:
        progress = LiveProgress(run, console=Console(file=screen, width=160, force_terminal=True, color_system=None))
        run.start()
        run.process_all_available()
        progress.show(run)
        run.stop()
        progress.show(run, final=True)  # waits for the last progress events: exact counts
    (q,) = progress.stats()
    assert (q.name, q.batches, q.last_batch) == ("tick0", 3, 2)
    assert q.rows == 10 and "increment=6" in q.per_input and "query=4" in q.per_input  # every input row, per input
    assert "query_response=4" in q.outputs
    assert "tick0" in screen.getvalue()  # the table was drawn on the terminal
    final = capsys.readouterr().out
    assert "hydrolite done: query tick0: 3 batches (last #2" in final and "10 input rows" in final


def test_lines_when_not_a_terminal(spark: SparkSession, tmp_path: Path) -> None:
    with FlowRunner(counter.build(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=write_feeds(tmp_path)) as run:
        progress = make_progress(run, "auto")  # pytest's stdout is not a terminal
        assert not isinstance(progress, LiveProgress)
        progress.counter.detach()


def test_a_line_names_rejects_only_when_there_are_some() -> None:
    q = QueryStats("tick0", 1, 0, 5.0, 10, 2.0, "out=3", "")
    assert q.line("progress").endswith("outputs: out=3")
    assert q.line("done").endswith("rejected (quarantined): x=2") is False
    assert QueryStats("tick0", 1, 0, 5.0, 10, 2.0, "out=3", "x=2").line("done").endswith("rejected (quarantined): x=2")
