"""Run one generated program on Spark, replay the run in the simulator, compare every sink.

`run_case` is shared by the Hypothesis test (small budget, CI) and the long-run script
(`tests/differential/run_long.py`): it builds the program from its source text, runs the
inputs step by step on local Spark (each step is written as feed entries, then every
query processes what is available: Spark decides the micro-batches), and replays the run
from its offset log with `verify_runner`. The outcome says whether the outputs were
identical, or why not.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from hydrolite.errors import FlowError
from hydrolite.ir.graph import Flow
from hydrolite.planner.spark.harness import SparkHarness
from hydrolite.planner.spark.lock import CheckpointPathError
from hydrolite.planner.spark.stages import SparkPlanError
from hydrolite.planner.spark.verify import VerifyReport, unread_entries, verify_runner


@dataclass
class Outcome:
    """What happened to one case: identical | divergent | rejected (not a legal program) |
    refused (the Spark planner says, clearly, that it cannot run it) | error | timeout (ran
    longer than `run_long --timeout`)."""

    status: str
    detail: str = ""
    report: VerifyReport | None = None


#: where `load` writes the programs' module files (one directory per process, removed at exit)
_SOURCES: list[str] = []


def load(source: str) -> Flow:
    """Build the program whose module text is `source`, written to a real file and imported as
    a module of its own (the runner pickles its functions by value). A file, not an in-memory
    `exec`: the Spark planner reads a function's source to translate it into Spark columns or
    a native aggregation (`fn_source`), so the differential test covers those paths as a user's
    program runs them; without one, every function would count as opaque Python."""
    if not _SOURCES:
        _SOURCES.append(tempfile.mkdtemp(prefix="hl-gen-src-"))
        atexit.register(shutil.rmtree, _SOURCES[0], True)
    name = "hl_gen_" + hashlib.sha1(source.encode()).hexdigest()[:12]
    path = os.path.join(_SOURCES[0], f"{name}.py")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    flow: Flow = module.build()
    return flow


def run_case(
    spark: SparkSession,
    source: str,
    steps: list[dict[str, list[Any]]],
    checkpoint: Callable[[str], str] | None = None,
    keyed_state: str = "executors",
    resume_with: str | None = None,
) -> Outcome:
    """Run `source` on Spark with `steps` of inputs, then verify the run against the simulator.
    `checkpoint(directory)` names the run's checkpoint (a Hadoop URI, say) instead of a
    directory under the case's own; a program such a checkpoint cannot hold is "refused".
    `keyed_state` is FlowRunner's option: `executors` (the harness's default) or `driver`
    (where `auto` keeps Python keyed folds on a local master: what a user runs by default).
    With `resume_with`, the run stops after the first half of the steps (verified so far) and a
    new runner with that option resumes its checkpoint for the rest (the replay covers the whole
    run; each runner's memory sinks are compared over the batches it ran): under `auto`, every
    state must carry on where the first run kept it."""
    try:
        flow = load(source)
    except FlowError as exc:
        return Outcome("rejected", str(exc))
    directory = tempfile.mkdtemp(prefix="hl-diff-")
    try:
        try:
            h = SparkHarness(
                flow,
                spark,
                directory,
                keyed_state=keyed_state,
                checkpoint=checkpoint(directory) if checkpoint else None,
            )
        except (SparkPlanError, CheckpointPathError) as exc:
            return Outcome("refused", str(exc))
        half = max(1, len(steps) // 2) if resume_with is not None else len(steps)
        try:
            _feed(h, flow, steps[:half])
            report = verify_runner(h.runner)
            unread = unread_entries(h.runner)  # a stall: batches Spark never ran are missing on both sides
        finally:
            h.runner.stop()
        if resume_with is not None and report.identical and not unread:
            h = SparkHarness(flow, spark, directory, keyed_state=resume_with, checkpoint=h.runner.checkpoint)
            try:
                _feed(h, flow, steps[half:] or [{}])  # (at least one step: the resumed runner starts)
                report = verify_runner(h.runner)
                unread = unread_entries(h.runner)
            finally:
                h.runner.stop()
        if unread:
            return Outcome("divergent", "input left unread after the run:\n  " + "\n  ".join(unread), report)
        if report.identical:
            return Outcome("identical", str(report), report)
        return Outcome("divergent", str(report), report)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _feed(h: SparkHarness, flow: Flow, steps: list[dict[str, list[Any]]]) -> None:
    """Write each step's inputs, then let every query process what is available."""
    for step in steps:
        for port, values in step.items():
            if port in flow.sources and values:
                h.sender(port).send_many(values)
        h.step()
