"""Helpers of the Spark tests that run a program to the end and read its `json:` sinks back.

A run is `start()`, `process_all_available()`, `stop()` (also when processing raises, so a
crashed run releases its checkpoint for the restart that follows). A `json:` sink writes one
`batch_id=N` directory per micro-batch; `json_batches` reads them back as Python values:
Spark writes a scalar as `{"value": x}`, a tuple as a struct `{"_1": .., "_2": ..}` and leaves
out null fields, a list as a JSON array.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hydrolite.ir.graph import Flow
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.offsets import read_offset_log
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.upgrade import PlanChangedError

_FIELD = re.compile(r"_([1-9][0-9]*)")


def feeds(d: Path, entries: Mapping[str, tuple[type, type | None, Sequence[Sequence[Any]]]]) -> dict[str, str]:
    """Append to a feed under `d` per port (`port: (value type, key type or None, entries)`)
    each entry — an empty one too: the ports stay aligned by batch — and return the inputs
    reading every port's feed one entry per micro-batch."""
    for port, (vt, kt, batches) in entries.items():
        w = FeedWriter(str(d / port), from_python(vt), from_python(kt) if kt is not None else None)
        for entry in batches:
            w.send_many(list(entry))
    return {port: f"feed:{d / port}?maxEntriesPerTrigger=1" for port in entries}


def channel_entries(ck: str, producer: str = "tick0", port: str = "x") -> list[int]:
    """The entries a channel's producer query wrote under checkpoint `ck`: one per batch that
    read elements from `port`, numbered by its batch id (a batch without elements writes
    none; how many such batches run depends on the schedule), from Spark's offset log."""
    out = []
    for t in read_offset_log(ck):
        if t.query == producer:
            start, end = t.inputs[port]
            if int(end["entries"]) > (int(start["entries"]) if start else 0):
                out.append(t.batch_id)
    return out


def run_once(runner: FlowRunner) -> FlowRunner:
    """Process everything available to `runner`, then stop it (also when a batch raised)."""
    try:
        runner.start()
        runner.process_all_available()
    finally:
        runner.stop()
    return runner


def run_to_json(
    spark: SparkSession,
    flow: Flow,
    d: Path,
    entries: Mapping[str, tuple[type, type | None, Sequence[Sequence[Any]]]],
    ports: Sequence[str],
    keyed_state: str,
    acks: Sequence[str] = (),
) -> tuple[FlowRunner, dict[str, dict[int, list[Any]]]]:
    """Run `flow` once over feeds of `entries` (`feeds`) under `d`, each port of `ports` and
    `acks` to a `json:` sink; the runner and, per port of `ports`, each batch's rows sorted."""
    runner = FlowRunner(
        flow,
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=feeds(d, entries),
        outputs={p: f"json:{d / p}_out" for p in (*ports, *acks)},
        keyed_state=keyed_state,
    )
    run_once(runner)
    return runner, {p: {b: sorted(v) for b, v in json_batches(d / f"{p}_out").items()} for p in ports}


def plain(v: Any) -> Any:
    """A JSON value written by Spark back as Python: structs of `_1.._n` (a null field left
    out reads as None) and arrays as tuples, `{"value": x}` as x."""
    if isinstance(v, dict):
        if set(v) == {"value"}:
            return plain(v["value"])
        fields = [_FIELD.fullmatch(k) for k in v]
        if v and all(fields):
            n = max(int(m.group(1)) for m in fields if m)
            return tuple(plain(v.get(f"_{i + 1}")) for i in range(n))
        return {k: plain(x) for k, x in v.items()}
    return tuple(plain(x) for x in v) if isinstance(v, list) else v


def json_batches(d: Path) -> dict[int, list[Any]]:
    """batch id -> the rows a `json:` sink wrote to `d` in that batch, in file order (batches
    without rows left out)."""
    out: dict[int, list[Any]] = {}
    for part in sorted(d.glob("batch_id=*/part-*.json")):
        rows = out.setdefault(int(part.parent.name.split("=")[1]), [])
        rows += [plain(json.loads(line)) for line in part.read_text().splitlines()]
    return {b: rows for b, rows in out.items() if rows}


def first_batch(got: dict[str, dict[int, list[Any]]]) -> dict[str, dict[int, list[Any]]]:
    """The outputs by port of batch 0 only (ports without rows in it: empty)."""
    return {p: {b: v for b, v in by.items() if b == 0} for p, by in got.items()}


def assert_driver_checkpoint_refused(spark: SparkSession, flow: Flow, checkpoint: Path, ops: Iterable[str]) -> None:
    """Resuming, on the native path (`--keyed-state executors`: `auto` keeps them where they
    are, kept_homes.py), a checkpoint whose states `ops` (`op@file` names) lived in the
    driver's store is refused before anything runs: they would start from nothing."""
    with pytest.raises(PlanChangedError) as err:
        inputs = {s: f"feed:/{s}" for s in flow.sources}
        FlowRunner(flow, spark=spark, checkpoint=str(checkpoint), inputs=inputs, keyed_state="executors")
    text = str(err.value)
    assert "lives on the driver in this checkpoint" in text and "--keyed-state driver" in text, text
    for op in ops:
        assert op in text, text
