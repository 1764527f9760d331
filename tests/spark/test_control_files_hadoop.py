"""hydrolite's small control files under a checkpoint (sink types, bindings, the plan record,
sink identities, held batches) read and written the same through a Hadoop URI as through
the local directory that holds them.

Each case works on one directory reached two ways: a real `viewfs://` mount of it
(`test_ckfs.viewfs_mount`: every call goes through Hadoop's FileSystem and Spark's
CheckpointFileManager over Py4J, as for `hdfs://` or `s3a://`) and its local path. What one
side writes, the other reads back identically, and the bytes on disk are the same.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pyspark.sql import SparkSession

from hydrolite.cli import _checkpoint_found
from hydrolite.planner.spark import ckfs
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.held import HeldBatches
from hydrolite.planner.spark.port_api import query_identity
from hydrolite.planner.spark.ports import FeedInput, FileInput, FileOutput, MemorySink
from hydrolite.planner.spark.run_support import record_bindings, record_sink_type
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.types import from_python
from hydrolite.planner.spark.upgrade import (
    PLAN_FILE,
    PlanChangedError,
    _legacy,
    committed,
    read_record,
    reconcile,
    recorded_members,
    write_record,
)
from hydrolite.planner.spark.values import SFrame
from hydrolite.planner.spark.verify import _recorded_bindings, _sink_types, binding_spec, read_outputs
from tests.core.test_upgrade import counter
from tests.spark.test_ckfs import viewfs_mount

pytestmark = pytest.mark.spark


@dataclass
class Both:
    """One checkpoint directory as a viewfs URI and as its local path."""

    uri: str
    local: str
    disk: Path


def both(spark: SparkSession, disk: Path) -> Both:
    """`disk` (made) as a directory inside a viewfs mount of its parent: the mount point itself
    is a read-only directory of the mount table (Hadoop refuses a `mkdirs` of it, which a
    write directly under it makes), where a real file system's checkpoint is a directory."""
    disk.mkdir(parents=True, exist_ok=True)
    return Both(ckfs.join(viewfs_mount(spark, disk.parent), disk.name), str(disk), disk)


def test_sink_types_written_one_way_read_the_other(spark: SparkSession, tmp_path: Path) -> None:
    a, b = both(spark, tmp_path / "a"), both(spark, tmp_path / "b")
    vt, kt = from_python(int), from_python(str)
    assert vt is not None and kt is not None
    sf = cast(SFrame, SimpleNamespace(vt=vt, kt=kt))
    record_sink_type(a.uri, "out", sf)
    record_sink_type(b.local, "out", sf)
    assert (a.disk / "sink_types" / "out.pkl").read_bytes() == (b.disk / "sink_types" / "out.pkl").read_bytes()
    sink = cast(Any, SimpleNamespace(port="out"))
    assert _sink_types(a.local, sink) == _sink_types(b.uri, sink) == (vt, kt)
    # written once per run: a second call keeps the first file
    record_sink_type(a.uri, "out", cast(SFrame, SimpleNamespace(vt=kt, kt=None)))
    assert _sink_types(a.uri, sink) == (vt, kt)
    assert ckfs.list_names(ckfs.join(a.uri, "sink_types")) == ["out.pkl"]


def test_bindings_written_one_way_read_the_other(spark: SparkSession, tmp_path: Path) -> None:
    a, b = both(spark, tmp_path / "a"), both(spark, tmp_path / "b")
    inputs = {"xs": FeedInput(str(tmp_path / "feed")), "files": FileInput(str(tmp_path / "in"), "json")}
    outputs = {"out": FileOutput("viewfs://elsewhere/out", "parquet"), "mem": MemorySink()}
    record_bindings(a.uri, inputs, outputs)  # type: ignore[arg-type]
    record_bindings(b.local, inputs, outputs)  # type: ignore[arg-type]
    assert (a.disk / "bindings.json").read_bytes() == (b.disk / "bindings.json").read_bytes()
    got = _recorded_bindings(a.local)
    assert got == _recorded_bindings(b.uri)
    assert got["outputs"] == {"out": "parquet:viewfs://elsewhere/out"}  # a URI stays a URI
    assert got["inputs"]["xs"] == f"feed:{tmp_path / 'feed'}"
    empty = both(spark, tmp_path / "none")
    assert _recorded_bindings(empty.uri) == _recorded_bindings(empty.local) == {"inputs": {}, "outputs": {}}


def test_binding_specs_and_absolute_paths_keep_uris() -> None:
    assert binding_spec(FileOutput("s3a://bucket/out", "json")) == "json:s3a://bucket/out"
    assert binding_spec(FileInput("hdfs://nn/in", "csv", {"header": "true"})) == "csv:hdfs://nn/in?header=true"
    assert binding_spec(FileOutput("rel/out", "json")) == f"json:{Path('rel/out').absolute()}"
    assert ckfs.absolute("viewfs://t/ck") == "viewfs://t/ck" and ckfs.absolute("ck") == str(Path("ck").absolute())


def test_the_plan_record_and_reconciliation_through_a_uri(spark: SparkSession, tmp_path: Path) -> None:
    a, b = both(spark, tmp_path / "a"), both(spark, tmp_path / "b")
    assert read_record(a.uri) is None and reconcile(plan_flow(counter()), a.uri).fresh
    for ck in (a.uri, b.local):
        recon = reconcile(plan_flow(counter()), ck)
        recon.apply()
        write_record(ck, recon.record())
        assert recon.checkpoint == ck  # a URI is not made a local path
    assert (a.disk / PLAN_FILE).read_bytes() == (b.disk / PLAN_FILE).read_bytes()
    assert read_record(a.local) == read_record(b.uri) is not None
    assert recorded_members(a.uri) == recorded_members(b.local)
    for d in (a.disk, b.disk):  # every query committed (a batch query's marker); a stray directory
        for q in json.loads((d / PLAN_FILE).read_text())["queries"]:
            (d / q).mkdir()
            (d / q / "batch-job-committed").write_text("")
        (d / "pipeline0").mkdir()
    assert committed(a.uri, "tick0") == committed(b.local, "tick0") == 1
    assert committed(a.uri, "nope") == committed(b.local, "nope") == 0
    edited = [reconcile(plan_flow(counter(extra_pipeline_first=True, second_fold=True)), ck) for ck in (a.uri, b.local)]
    assert edited[0].lines == edited[1].lines and edited[0].refusals == edited[1].refusals
    assert edited[0].names == edited[1].names and edited[0].refused
    assert any("+ query pipeline0-v2" in ln for ln in edited[0].lines), edited[0].render()  # the stray one is skipped
    assert edited[0].render().splitlines()[0] == f"plan check against {a.uri}:"
    (b.disk / PLAN_FILE).write_text("{not json")
    with pytest.raises(PlanChangedError, match="is unreadable"):
        read_record(b.uri)
    with pytest.raises(FileNotFoundError):
        recorded_members(both(spark, tmp_path / "none").uri)


def test_query_directories_of_an_old_checkpoint_are_listed_alike(spark: SparkSession, tmp_path: Path) -> None:
    c = both(spark, tmp_path / "ck")
    (c.disk / "q1").mkdir()
    (c.disk / "q1" / "hydrolite.json").write_text("{}")
    (c.disk / "q2").mkdir()  # no hydrolite.json: not a query
    (c.disk / "q3" / "hydrolite.json").mkdir(parents=True)  # a directory by that name: not a query
    (c.disk / "loose").write_text("x")
    (c.disk / "a0").mkdir()
    (c.disk / "a0" / "hydrolite.json").write_text("{}")
    assert _legacy(c.uri) == _legacy(c.local) == ["a0", "q1"]
    assert _legacy(ckfs.join(c.uri, "missing")) == _legacy(ckfs.join(c.local, "missing")) == []
    refused = [reconcile(plan_flow(counter()), ck) for ck in (c.uri, c.local)]
    assert (
        refused[0].refusals == refused[1].refusals
        and "queries ['a0', 'q1'] but no plan record" in (refused[0].refusals[0])
    )


def test_a_sink_identity_is_made_once_and_the_first_writer_wins(spark: SparkSession, tmp_path: Path) -> None:
    c = both(spark, tmp_path / "ck")
    made = query_identity(ckfs.join(c.uri, "q"))  # makes the query directory too
    assert json.loads((c.disk / "q" / "sink-identity.json").read_text()) == {"query": made}
    assert query_identity(ckfs.join(c.local, "q")) == made == query_identity(ckfs.join(c.uri, "q"))
    (c.disk / "r").mkdir()
    (c.disk / "r" / "sink-identity.json").write_text(json.dumps({"query": "theirs"}))
    assert query_identity(ckfs.join(c.uri, "r")) == "theirs"  # an existing one is kept
    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(query_identity(ckfs.join(c.uri, "s")))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and len(set(got)) == 1 and query_identity(ckfs.join(c.local, "s")) == got[0]
    assert ckfs.list_names(ckfs.join(c.uri, "s")) == ["sink-identity.json"]  # no temporary left
    (c.disk / "d").mkdir()
    (c.disk / "d" / "sink-identity.json").write_text("{}")
    with pytest.raises(SparkRunError, match="is damaged"):
        query_identity(ckfs.join(c.uri, "d"))


@dataclass
class _State:
    """The state store calls `HeldBatches` makes (get / put / commit)."""

    data: dict[str, Any] = field(default_factory=dict)
    commits: int = 0

    def get(self, key: str) -> tuple[bool, Any]:
        return (key in self.data, self.data.get(key))

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value

    def commit(self) -> None:
        self.commits += 1


def _held(spark: SparkSession, query_dir: str) -> HeldBatches:
    held = HeldBatches()
    held.runner = cast(Any, SimpleNamespace(spark=spark))
    held.stage = cast(Any, SimpleNamespace(name="q"))
    held.inputs = []
    held.dir = query_dir
    held.progress = cast(Any, SimpleNamespace(held=1))  # not the first: nothing printed
    return held


def test_held_batches_are_kept_and_read_back_through_a_uri(spark: SparkSession, tmp_path: Path) -> None:
    a, b = both(spark, tmp_path / "a"), both(spark, tmp_path / "b")
    rows = spark.range(1, 3).withColumnRenamed("id", "v")  # JVM-only rows: no Python worker to start
    for where, disk in ((a.uri, a.disk), (b.local, b.disk)):
        state = _State()
        _held(spark, ckfs.join(where, "q"))._hold(rows, {0: ["f1"]}, 3, state)
        assert state.data["held-batches"] == ([ckfs.join(where, "q", "held", "3")], {0: ["f1"]})
        assert state.commits == 1 and (disk / "q" / "held" / "3" / "_SUCCESS").exists()  # Spark wrote it there
        later = spark.range(3, 4).withColumnRenamed("id", "v")
        merged, files = _held(spark, ckfs.join(where, "q"))._with_held(later, {0: ["f2"]}, state)
        assert sorted(r.v for r in merged.collect()) == [1, 2, 3] and files == {0: ["f1", "f2"]}
        merged.unpersist()
    assert ckfs.list_names(ckfs.join(a.uri, "q", "held")) == ckfs.list_names(ckfs.join(b.local, "q", "held")) == ["3"]


def test_a_file_sink_under_a_uri_is_read_back_by_verify(spark: SparkSession, tmp_path: Path) -> None:
    c = both(spark, tmp_path / "out")
    for b, (lo, hi) in ((0, (1, 3)), (1, (3, 4))):
        spark.range(lo, hi).withColumnRenamed("id", "value").write.json(str(c.disk / f"batch_id={b}"))
    (c.disk / "_SUCCESS").write_text("")
    sink = cast(Any, SimpleNamespace(port="out", meta=SimpleNamespace(elem=int, kind=SimpleNamespace(keyed=False))))
    ck = both(spark, tmp_path / "ck")
    got = [read_outputs(spark, sink, FileOutput(path, "json"), ck.uri) for path in (c.uri, c.local)]
    assert got[0] == got[1] and got[0] is not None
    assert {b: sorted(v) for b, v in got[0].items()} == {0: [1, 2], 1: [3]}


def test_the_cli_finds_a_checkpoint_through_a_uri(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str | None] = []

    def session(master: str | None, conf: dict[str, str]) -> SparkSession:
        started.append(master)  # the shared test session is kept as it is (no conf of a run)
        return spark

    monkeypatch.setattr("hydrolite.planner.spark.session.spark_session", session)
    c = both(spark, tmp_path / "ck")
    assert _checkpoint_found(c.local, None) and not _checkpoint_found(str(tmp_path / "nope"), None)
    assert started == []  # a local checkpoint starts no session
    assert _checkpoint_found(c.uri, "local[2]") and not _checkpoint_found(ckfs.join(c.uri, "nope"), None)
    assert started == ["local[2]", None]
