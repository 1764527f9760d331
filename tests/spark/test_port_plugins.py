"""A port plugin installed as a distribution runs a program on Spark (issue 15, item 3).

The example plugin of docs/ports.md (`numbers:DIR` source, `jsonl:DIR` sink) is put on
`sys.path` with a `.dist-info` declaring its entry points, exactly as `pip install` would
leave it; hydrolite knows nothing else about it. A run reads three files one per batch, is
crashed after the sink of batch 1 (the file is written, Spark has not committed the batch),
and resumed: every batch's file holds its elements once. A line that is not an integer
fails the batch with the plugin's own message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.runtime import FlowRunner
from tests.core.port_dists import doc_example, install_plugin

pytestmark = pytest.mark.spark


class P:
    """Tag."""


def tripled_program() -> hl.Flow:
    flow = hl.FlowBuilder("plugin_ports")
    flow.process(P).source("amounts", int).map(lambda x: x * 3).sink("tripled")
    return flow.finalize()


def publish(directory: Path, name: str, lines: list[str], mtime: int) -> None:
    """Write a file under a hidden name and rename it into place (what file sources require)."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{name}"
    tmp.write_text("".join(f"{line}\n" for line in lines))
    os.utime(tmp, (mtime, mtime))
    os.rename(tmp, directory / name)


def read_jsonl(directory: Path) -> dict[int, list[Any]]:
    return {
        int(p.stem.split("-")[1]): [json.loads(line) for line in p.read_text().splitlines()]
        for p in sorted(directory.glob("batch-*.jsonl"))
    }


def test_an_installed_plugin_binds_ports_exactly_once(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(
        tmp_path / "site",
        monkeypatch,
        "hydrolite-example-ports",
        {"numbers": "hydrolite_example_ports:NumbersPort", "jsonl": "hydrolite_example_ports:JsonlPort"},
        {"hydrolite_example_ports": doc_example()},
    )
    inbox, out = tmp_path / "in", tmp_path / "out"
    for i, lines in enumerate([["1", "2"], ["3"], [" 4", "5", "6"]]):
        publish(inbox, f"part-{i}.txt", lines, 1_700_000_000 + i)
    fired: list[int] = []

    def crash(point: str, query: str, batch: int) -> None:
        if point == "after_sinks" and batch == 1 and not fired:
            fired.append(batch)
            raise InjectedFault("crash after the sink of batch 1")

    def run(fault: Any = None) -> None:
        with FlowRunner(
            tripled_program(),
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs={"amounts": f"numbers:{inbox}?filesPerBatch=1"},
            outputs={"tripled": f"jsonl:{out}"},
            fault=fault,
        ) as r:
            assert r.inputs["amounts"].describe() == f"numbers in {inbox}"
            r.start()
            r.process_all_available()

    with pytest.raises(InjectedFault):
        run(crash)
    assert sorted(read_jsonl(out)) == [0, 1]
    (out / "batch-000000001.jsonl").write_text("[]\n")  # marks the file: a replay must not rewrite it
    run()
    assert read_jsonl(out) == {0: [3, 6], 1: [[]], 2: [12, 15, 18]}

    publish(inbox, "part-3.txt", ["7", "eight"], 1_700_000_010)
    with pytest.raises(SparkRunError, match="input 'amounts': not an integer: eight"):
        run()
