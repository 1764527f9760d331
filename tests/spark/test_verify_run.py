"""`verify-run`: a Spark run replayed in the simulator from its offset log, sink by sink.

Identical on the examples' runs (test_conformance.py verifies every scenario's run), on a run crashed inside a micro-batch and resumed, and
through the CLI; a tampered output file is reported as the first divergence with the
sink, the batch id, the element and the operator chain at the user's lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from examples import counter, kvstore
from hydrolite.cli import main
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.verify import verify_run
from tests.spark.test_exactly_once import _inputs as feed_inputs
from tests.spark.test_exactly_once import outputs, write_feeds

pytestmark = pytest.mark.spark


def test_crashed_and_resumed_run_replays_identically(spark: SparkSession, tmp_path: Path) -> None:
    def crash(point: str, query: str, batch: int) -> None:
        if point == "between_sinks" and batch == 1:
            raise InjectedFault("crash between the two sinks of batch 1")

    with FlowRunner(
        counter.build(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs=write_feeds(tmp_path),
        outputs=outputs(tmp_path),
        fault=crash,
    ) as run:
        run.start()
        with pytest.raises(Exception, match="crash between the two sinks"):
            run.process_all_available()
    with FlowRunner(
        counter.build(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs=feed_inputs(tmp_path),
        outputs=outputs(tmp_path),
    ) as run:
        run.start()
        run.process_all_available()
    report = verify_run(counter.build(), str(tmp_path / "ck"), spark)
    assert report.identical, str(report)
    assert report.ticks == 3 and report.outputs == 10, str(report)


def _tamper(path: Path) -> None:
    part = next(p for p in sorted(path.glob("batch_id=2/part-*.json")) if p.read_text().strip())
    rows = [json.loads(line) for line in part.read_text().splitlines() if line.strip()]
    rows[0]["_2"] = 99
    part.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (part.parent / f".{part.name}.crc").unlink()  # Hadoop's checksum would refuse the edited file


def test_cli_reports_identical_then_the_first_divergence(spark: SparkSession, tmp_path: Path, capsys: Any) -> None:
    inputs = write_feeds(tmp_path)
    ck = str(tmp_path / "ck")
    args = ["run", "examples/counter.py", "--checkpoint", ck, "--once"]
    for port, spec in inputs.items():
        args += ["--input", f"{port}={spec}"]
    for port, spec in outputs(tmp_path).items():
        args += ["--output", f"{port}={spec}"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["verify-run", "examples/counter.py", ck]) == 0
    assert "3 ticks, 10 outputs, identical" in capsys.readouterr().out
    _tamper(tmp_path / "out" / "resp")
    assert main(["verify-run", "examples/counter.py", ck]) == 2
    text = capsys.readouterr().out
    assert "divergence in sink 'query_response' (query 'tick0'), batch 2" in text
    assert "99" in text and "produced by: sink() at counter.py:" in text


def test_cli_says_when_no_sink_can_be_read_back(spark: SparkSession, tmp_path: Path, capsys: Any) -> None:
    ck = str(tmp_path / "ck")
    args = ["run", "examples/counter.py", "--checkpoint", ck, "--once"]
    for port, spec in write_feeds(tmp_path).items():
        args += ["--input", f"{port}={spec}"]
    assert main(args) == 0  # sinks default to the console
    capsys.readouterr()
    assert main(["verify-run", "examples/counter.py", ck]) == 0
    text = capsys.readouterr().out
    assert "3 ticks, nothing compared (no sink could be read back" in text
    assert "not compared: sink 'query_response' (console) cannot be read back" in text


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
def test_checkpoint_replays_with_keyed_state_where_the_run_kept_it(
    keyed_state: str, spark: SparkSession, tmp_path: Path
) -> None:
    """`plan_flow` puts the store's reduce on the executors; a run that kept it on the driver
    must verify from its checkpoint too (not be refused as a change of the state's home)."""
    put = FeedWriter(str(tmp_path / "put"), from_python(tuple[str, str, int]))
    get = FeedWriter(str(tmp_path / "get"), from_python(tuple[str, str]))
    for puts, gets in [([("c1", "k", 5)], [("g0", "k")]), ([("c2", "k", 7)], [("g1", "k"), ("g1", "nope")])]:
        put.send_many(puts)
        get.send_many(gets)
    cap = "?maxEntriesPerTrigger=1"
    with FlowRunner(
        kvstore.build(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"put": f"feed:{tmp_path / 'put'}{cap}", "get": f"feed:{tmp_path / 'get'}{cap}"},
        outputs={"put_ack": f"json:{tmp_path / 'acks'}", "get_response": f"json:{tmp_path / 'resp'}"},
        keyed_state=keyed_state,
    ) as run:
        run.start()
        run.process_all_available()
    report = verify_run(kvstore.build(), str(tmp_path / "ck"), spark)
    assert report.identical and report.ticks == 2 and report.outputs == 5, str(report)
