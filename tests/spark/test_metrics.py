"""Prometheus metrics of a run (issue 15, item 4): scraped over HTTP during a real
`hydrolite run`, and read in process for what a CLI run cannot show (a failure, a resume,
state on the executors)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession

from examples import counter
from hydrolite.metrics import MetricsError, RunMetrics, driver_state_rows
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.runtime import FlowRunner
from tests.spark.test_exactly_once import write_feeds
from tests.spark.test_executor_state import GETS, PUTS
from tests.spark.test_executor_state import _feeds as kv_feeds

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(got: Samples, name: str, **labels: str) -> float:
    return got[(name, tuple(sorted(labels.items())))]


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200
        return samples(resp.read().decode())


def _read_lines(stream: Any, into: list[str]) -> None:
    for line in stream:
        into.append(line)


def run_and_scrape(cmd: list[str]) -> tuple[list[Samples], list[str], subprocess.Popen[str]]:
    """Start the CLI, scrape its endpoint until the run ends; every scrape, and its stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    errors: list[str] = []
    readers = [
        threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True),
        threading.Thread(target=_read_lines, args=(proc.stderr, errors), daemon=True),
    ]
    for t in readers:
        t.start()
    deadline = time.monotonic() + 600  # a guard against a hung run, not a timing assertion
    url = None
    scrapes: list[Samples] = []
    closed = False
    while proc.poll() is None and not closed and time.monotonic() < deadline:
        if url is None:
            found = [m.group(0) for line in list(lines) if (m := re.search(r"http://\S+/metrics", line))]
            url = found[0] if found else None
        if url is not None:
            try:
                scrapes.append(scrape(url))
            except OSError:  # the run finished and closed its endpoint (the process exits next)
                closed = True
        time.sleep(0.25)
    if not closed and proc.poll() is None:
        proc.kill()
    proc.wait(timeout=120)
    for t in readers:
        t.join()
    assert proc.returncode == 0, "".join(errors)[-3000:]
    assert url is not None and scrapes, "".join(lines)
    return scrapes, lines, proc


def test_scraped_during_a_cli_run_and_matching_its_final_figures(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "hydrolite.cli", "run", "examples/counter.py", "--metrics-port", "0"]
    cmd += ["--progress", "lines", "--checkpoint", str(tmp_path / "ck"), "--conf", "spark.sql.shuffle.partitions=2"]
    scrapes, lines, _ = run_and_scrape(cmd)
    (done,) = [line for line in lines if line.startswith("hydrolite done: query tick0:")]
    m = re.search(r": (\d+) batches \(last #(\d+).*?(\d+) input rows \(increment=(\d+), query=(\d+)\)", done)
    assert m is not None, done
    batches, last, rows, inc, qry = (int(x) for x in m.groups())
    outs = dict(re.findall(r"(\w+)=(\d+)", done.split("outputs:")[1]))
    assert batches == 5 and rows == 40  # the demo data: 5 batches of 4 elements on each port

    series = [value(s, "hydrolite_batches_total", query="tick0") for s in scrapes]
    assert series == sorted(series) and len(set(series)) >= 2, series  # it moved, never back
    final = scrapes[-1]  # taken while the run waited to be idle: after its last batch
    q = {"query": "tick0"}
    assert value(final, "hydrolite_batches_total", **q) == batches
    assert value(final, "hydrolite_input_rows_total", port="increment", **q) == inc
    assert value(final, "hydrolite_input_rows_total", port="query", **q) == qry
    assert value(final, "hydrolite_output_rows_total", port="increment_ack", **q) == int(outs["increment_ack"])
    assert value(final, "hydrolite_output_rows_total", port="query_response", **q) == int(outs["query_response"])
    assert value(final, "hydrolite_last_committed_batch", **q) == last
    assert value(final, "hydrolite_batch_duration_seconds_count", **q) == batches
    assert value(final, "hydrolite_batch_duration_seconds_sum", **q) > 0
    assert value(final, "hydrolite_failures_total", **q) == 0
    # the count is one value: one live row in the driver's store
    assert value(final, "hydrolite_state_rows", operator="fold@counter.py:30", placement="driver", **q) == 1
    # the first scrape came before any batch committed
    assert value(scrapes[0], "hydrolite_last_committed_batch", **q) == -1


def test_a_failure_then_a_resume(spark: SparkSession, tmp_path: Path) -> None:
    def crash(point: str, query: str, batch: int) -> None:
        if point == "after_sinks" and batch == 1:
            raise InjectedFault(f"injected at {point} of batch {batch}")

    inputs = write_feeds(tmp_path)
    runner = FlowRunner(counter.build(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=inputs, fault=crash)
    metrics = RunMetrics(runner)
    try:
        runner.start()
        with pytest.raises(InjectedFault):
            runner.process_all_available()
    finally:
        runner.stop()
    assert metrics.wait_for_end()
    metrics.close()
    got = samples(metrics.text())
    assert value(got, "hydrolite_failures_total", query="tick0") == 1
    assert value(got, "hydrolite_last_committed_batch", query="tick0") == 0  # batch 1 never committed
    assert value(got, "hydrolite_batches_total", query="tick0") == 1  # only batch 0 ran to the end

    resumed = FlowRunner(counter.build(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=inputs)
    metrics = RunMetrics(resumed)
    before = samples(metrics.text())
    assert value(before, "hydrolite_last_committed_batch", query="tick0") == 0  # from the checkpoint
    assert value(before, "hydrolite_state_rows", query="tick0", operator="fold@counter.py:30", placement="driver") == 1
    try:
        resumed.start()
        resumed.process_all_available()
    finally:
        resumed.stop()
    assert metrics.wait_for_end()
    metrics.close()
    after = samples(metrics.text())
    assert value(after, "hydrolite_last_committed_batch", query="tick0") == 2
    assert value(after, "hydrolite_batches_total", query="tick0") == 2  # batch 1 replayed, then batch 2
    assert value(after, "hydrolite_failures_total", query="tick0") == 0
    assert value(after, "hydrolite_input_rows_total", query="tick0", port="increment") == 4  # 1 + 3 increments


@pytest.mark.parametrize("placement", ["driver", "executors"])
def test_state_size_of_a_keyed_store(spark: SparkSession, tmp_path: Path, placement: str) -> None:
    from examples import kvstore

    runner = FlowRunner(
        kvstore.build(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs=kv_feeds(tmp_path),
        outputs={"get_response": "memory"},
        keyed_state=placement,
    )
    metrics = RunMetrics(runner)
    try:
        runner.start()
        runner.process_all_available()
    finally:
        runner.stop()
    assert metrics.wait_for_end()
    metrics.close()
    got = samples(metrics.text())
    state = {labels: v for (name, labels), v in got.items() if name == "hydrolite_state_rows"}
    (row,) = state.items()
    labels = dict(row[0])
    assert labels["placement"] == placement
    assert row[1] == 3  # keys a, b and c were put
    # each input row once, though the executor path's plan scans each input twice (Spark counts both)
    assert value(got, "hydrolite_input_rows_total", query="tick0", port="put") == sum(map(len, PUTS))
    assert value(got, "hydrolite_input_rows_total", query="tick0", port="get") == sum(map(len, GETS))
    if placement == "driver":
        assert labels["operator"] == "reduce@kvstore.py:29"
        (stage,) = runner.stages
        # the runtime's own bookkeeping (held batches) is in the store too, but is no operator's state
        assert driver_state_rows(stage.store.directory)[stage.keys[id(stage.stage.stateful[0])]] == 3


def test_a_port_in_use_is_a_clear_error(spark: SparkSession, tmp_path: Path) -> None:
    runner = FlowRunner(counter.build(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs=write_feeds(tmp_path))
    first, second = RunMetrics(runner), RunMetrics(runner)
    try:
        port = first.serve(0)
        with pytest.raises(
            MetricsError, match=f"(?s)cannot serve metrics on 127.0.0.1:{port}: .*in use.*fix: choose a free port"
        ):
            second.serve(port)
        with pytest.raises(MetricsError, match="metrics port must be 0-65535"):
            second.serve(70000)
    finally:
        first.close()
        second.close()
        runner.stop()
