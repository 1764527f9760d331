"""Arrival order of file inputs inside a micro-batch, and hydrolite's own remap log.

(A) A micro-batch that reads several files keeps file order (modification time, then path)
and then row order within each file, even when Spark splits the files into many partitions
(tiny `spark.sql.files.maxPartitionBytes`) and packs the splits largest first: a keyed
last-write-wins store answers with the newest put.

(B) Spark keeps only its newest `spark.sql.streaming.minBatchesToRetain` offset files (100 by
default; the test sets 10 so that a short run outlives them); hydrolite's compacted remap log
under `<checkpoint>/<query>/remap/` keeps every batch, so `read_offset_log` lists every tick
of a run of more micro-batches than Spark keeps, and a crash-and-replay leaves one entry per batch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import hydrolite as hl
from examples import kvstore
from hydrolite.planner.spark import remap
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.offsets import batch_files, queries, read_offset_log
from hydrolite.planner.spark.ports import FileInput
from hydrolite.planner.spark.remap import RemapLog, read_remap, source_files
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.session import query_conf
from hydrolite.planner.spark.types import Prim

pytestmark = pytest.mark.spark


class P:
    """Tag."""


def enumerate_program() -> hl.Flow:
    flow = hl.FlowBuilder("arrival")
    flow.process(P).source("x", int).enumerate().sink("enum")
    return flow.finalize()


def plus_one_program() -> hl.Flow:
    flow = hl.FlowBuilder("plus_one")
    flow.process(P).source("x", int).map(lambda x: x + 1).sink("out")
    return flow.finalize()


def write_file(path: Path, fmt: str, values: list[int], mtime: int) -> None:
    if fmt == "json":
        path.write_text("".join(json.dumps({"value": v}) + "\n" for v in values))
    elif fmt == "csv":
        path.write_text("value\n" + "".join(f"{v}\n" for v in values))
    else:
        pq.write_table(pa.table({"value": pa.array(values, type=pa.int64())}), str(path), row_group_size=16)
    os.utime(path, (mtime, mtime))


# ------------------------------------------------------------------ (A) arrival order
# name -> (modification time, rows); arrival order: c (oldest), a, then b and d (same time: by name)
FILES = {"a": (2_000, 60), "b": (3_000, 200), "c": (1_000, 30), "d": (3_000, 120)}
ARRIVAL = ["c", "a", "b", "d"]


def file_values(name: str) -> list[int]:
    base = {"a": 100_000, "b": 200_000, "c": 300_000, "d": 400_000}[name]
    return [base + i for i in range(FILES[name][1])]


@pytest.mark.parametrize("fmt,lookup", [("json", "map"), ("csv", "join"), ("parquet", "map")])
def test_files_in_one_batch_keep_file_then_row_order(
    fmt: str, lookup: str, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if lookup == "join":  # the path taken by batches of many files (a backlog)
        monkeypatch.setattr(FileInput, "MAP_LOOKUP_MAX_FILES", 0)
    src = tmp_path / "in"
    src.mkdir()
    for name, (mtime, _rows) in FILES.items():
        write_file(src / f"{name}.{fmt}", fmt, file_values(name), mtime)
    expected = [v for name in ARRIVAL for v in file_values(name)]
    ck = str(tmp_path / "ck")
    with query_conf(spark, "spark.sql.files.maxPartitionBytes", "256"):
        # sanity: Spark cuts these files into many splits, packed largest first, so the
        # position of a row in the batch is not its arrival position
        scan = (
            spark.read.schema("value long")
            .options(**({"header": "true"} if fmt == "csv" else {}))
            .format(fmt)
            .load(str(src))
        )
        by_position = [
            r["value"] for r in scan.select("value", F.monotonically_increasing_id().alias("i")).orderBy("i").collect()
        ]
        assert sorted(by_position) == sorted(expected) and by_position != expected
        # two files per micro-batch: [c, a] then [b, d]
        with FlowRunner(
            enumerate_program(), spark=spark, checkpoint=ck, inputs={"x": f"{fmt}:{src}?maxFilesPerTrigger=2"}
        ) as run:
            run.start(once=True)
            run.await_termination()
            assert run.memory("enum").values() == list(enumerate(expected))
    (query,) = queries(ck)
    ticks = read_offset_log(ck)
    assert [t.batch_id for t in ticks] == [0, 1]
    assert ticks[1].inputs["x"] == ({"logOffset": 0}, {"logOffset": 1})
    assert batch_files(ck, query, 0) == {"x": [str(src / f"{n}.{fmt}") for n in ("c", "a")]}
    assert batch_files(ck, query, 1) == {"x": [str(src / f"{n}.{fmt}") for n in ("b", "d")]}
    assert ticks[1].files == batch_files(ck, query, 1)
    assert 'x: {"logOffset":0} -> {"logOffset":1} (2 files)' in ticks[1].describe()
    # the logged files replay exactly what the batch read
    again = (
        spark.read.schema("value long")
        .options(**({"header": "true"} if fmt == "csv" else {}))
        .format(fmt)
        .load(batch_files(ck, query, 1)["x"])
    )
    assert sorted(r["value"] for r in again.collect()) == sorted(file_values("b") + file_values("d"))


def test_keyed_store_answers_the_newest_put_of_a_batch(spark: SparkSession, tmp_path: Path) -> None:
    puts, gets = tmp_path / "put", tmp_path / "get"
    puts.mkdir()
    # p1.json is newer (and larger, so Spark reads it first); p2.json is older but sorts later by name
    rows = [{"_1": "pad", "_2": f"other{i}", "_3": i} for i in range(300)] + [{"_1": "c2", "_2": "k", "_3": 2}]
    (puts / "p1.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.utime(puts / "p1.json", (2_000, 2_000))
    (puts / "p2.json").write_text(json.dumps({"_1": "c1", "_2": "k", "_3": 1}) + "\n")
    os.utime(puts / "p2.json", (1_000, 1_000))
    gets.mkdir()
    ck = str(tmp_path / "ck")
    with FlowRunner(
        kvstore.build(), spark=spark, checkpoint=ck, inputs={"put": f"json:{puts}", "get": f"json:{gets}"}
    ) as run:
        run.start()
        run.process_all_available()
        (gets / "g.json").write_text(json.dumps({"_1": "c3", "_2": "k"}) + "\n")
        run.process_all_available()
        assert run.memory("get_response").values() == [("c3", "k", 2)]
    # both inputs are files (the second one reads Spark's `sources/1` log): each batch's files
    files = [t.files for t in read_offset_log(ck)]
    assert files[0] == {"put": [str(puts / "p2.json"), str(puts / "p1.json")], "get": []}
    assert files[-1] == {"put": [], "get": [str(gets / "g.json")]}


# ------------------------------------------------------------------ (B) the remap log
def stored_batch_ids(query_dir: str | Path) -> list[int]:
    """Every entry line in every remap file of a query (duplicates included; the hidden
    checksum files Hadoop writes beside a file left out)."""
    out: list[int] = []
    for p in Path(query_dir, "remap").iterdir():
        if not p.name.startswith("."):
            out.extend(json.loads(line)["batch"] for line in p.read_text().splitlines() if line.strip())
    return sorted(out)


def test_remap_log_lists_every_tick_of_a_run_longer_than_spark_keeps(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remap, "SEAL_EVERY", 2)
    monkeypatch.setattr(remap, "FANOUT", 2)
    n = 14  # Spark keeps its newest 10 (+1) offset files: offsets/3..13 only
    feed = FeedWriter(str(tmp_path / "x"), Prim(int))
    for i in range(n):
        feed.send_many([i])
    ck = str(tmp_path / "ck")
    with (
        query_conf(spark, "spark.sql.streaming.minBatchesToRetain", "10"),
        FlowRunner(
            plus_one_program(),
            spark=spark,
            checkpoint=ck,
            inputs={"x": f"feed:{tmp_path / 'x'}?maxEntriesPerTrigger=1"},
        ) as run,
    ):
        run.start(once=True)
        run.await_termination()
        assert run.memory("out").values() == [i + 1 for i in range(n)]
    (query,) = queries(ck)
    qdir = os.path.join(ck, query)
    assert not os.path.exists(os.path.join(qdir, "spark", "offsets", "0"))  # purged by Spark
    ticks = read_offset_log(ck)
    assert [t.batch_id for t in ticks] == list(range(n))
    assert all(t.committed for t in ticks)
    assert [t.inputs["x"] for t in ticks] == [
        (None if b == 0 else {"entries": b}, {"entries": b + 1}) for b in range(n)
    ]
    assert stored_batch_ids(qdir) == list(range(n))  # each batch stored once
    # compacted: 6 sealed pairs merged into L2 (0-7) + L1 (8-11), then the live 12-13; without
    # merging there would be 7 files, one file per batch 14
    segments = sorted(os.listdir(os.path.join(qdir, "remap")))
    assert len(segments) <= 3 and any(".L2." in nm for nm in segments), segments
    assert batch_files(ck, query, 3) == {}  # a feed has no files
    with pytest.raises(KeyError, match="no remap entry for batch 500"):
        batch_files(ck, query, 500)


def test_a_replayed_batch_keeps_one_remap_entry(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remap, "SEAL_EVERY", 2)
    monkeypatch.setattr(remap, "FANOUT", 2)
    feed = FeedWriter(str(tmp_path / "x"), Prim(int))
    for i in range(6):
        feed.send_many([10 * i, 10 * i + 1])
    ck = str(tmp_path / "ck")
    inputs = {"x": f"feed:{tmp_path / 'x'}?maxEntriesPerTrigger=1"}
    out: list[tuple[int, list[Any]]] = []

    def fault(point: str, query: str, batch: int) -> None:
        if point == "after_sinks" and batch == 3:  # outputs written, batch not committed
            raise InjectedFault("crash after the sinks of batch 3")

    crashing = FlowRunner(
        plus_one_program(),
        spark=spark,
        checkpoint=ck,
        inputs=inputs,
        outputs={"out": lambda b, vs: out.append((b, vs))},
        fault=fault,
    )
    with pytest.raises(InjectedFault), crashing as run:
        run.start()
        run.process_all_available()
    (query,) = queries(ck)
    qdir = os.path.join(ck, query)
    assert max(read_remap(qdir)) == 3 and not read_offset_log(ck)[-1].committed
    with FlowRunner(
        plus_one_program(),
        spark=spark,
        checkpoint=ck,
        inputs=inputs,
        outputs={"out": lambda b, vs: out.append((b, vs))},
    ) as run:
        run.start()
        run.process_all_available()  # Spark replays batch 3, then runs 4 and 5
    assert [b for b, _ in out] == [0, 1, 2, 3, 4, 5]
    ticks = read_offset_log(ck)
    assert [(t.batch_id, t.committed) for t in ticks] == [(b, True) for b in range(6)]
    assert [t.inputs["x"][1] for t in ticks] == [{"entries": b + 1} for b in range(6)]
    assert stored_batch_ids(qdir) == list(range(6))


# ------------------------------------------------------------------ the log itself, without Spark
def fake_query(tmp_path: Path, batches: int) -> str:
    """A query checkpoint with Spark offset files for a feed input `x` and a file input `f`."""
    qdir = tmp_path / "q"
    (qdir / "spark" / "offsets").mkdir(parents=True)
    (qdir / "spark" / "sources" / "1").mkdir(parents=True)
    for b in range(batches):
        (qdir / "spark" / "offsets" / str(b)).write_text(f'v1\n{{}}\n{{"entries":{b + 1}}}\n{{"logOffset":{b}}}\n')
        files = [
            {"path": f"file:///d/{name}{b}%20x.json", "timestamp": ts, "batchId": b}
            for name, ts in (("late", 20), ("b", 10), ("a", 10))
        ]
        (qdir / "spark" / "sources" / "1" / str(b)).write_text("v1\n" + "\n".join(json.dumps(f) for f in files))
    return str(qdir)


def test_remap_log_replays_seals_merges_and_survives_torn_and_stale_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remap, "SEAL_EVERY", 2)
    monkeypatch.setattr(remap, "FANOUT", 2)
    qdir = fake_query(tmp_path, 12)
    log = RemapLog(qdir, ["x", "f"], {1: False})
    for b in range(10):
        uris = log.record(b)
        assert uris == {1: [f"file:///d/a{b}%20x.json", f"file:///d/b{b}%20x.json", f"file:///d/late{b}%20x.json"]}
    log.record(9)  # a replay of the uncommitted batch 9
    entries = read_remap(qdir)
    assert list(entries) == list(range(10)) and stored_batch_ids(qdir) == list(range(10))
    assert entries[4].ends == {"x": {"entries": 5}, "f": {"logOffset": 4}}
    assert entries[4].files == {"f": ["/d/a4 x.json", "/d/b4 x.json", "/d/late4 x.json"]}
    rdir = os.path.join(qdir, "remap")
    names = sorted(os.listdir(rdir))
    assert any(".L2." in nm for nm in names) and len(names) <= 4
    # a crash mid-append leaves a torn line; a crash mid-merge leaves covered segments behind
    live = next(nm for nm in names if nm.endswith(".live.jsonl"))
    with open(os.path.join(rdir, live), "a") as fh:
        fh.write('{"v":1,"batch":10,"en')
    merged = next(nm for nm in names if ".L2." in nm)
    stale = os.path.join(rdir, "000000000000-000000000001.L0.jsonl")
    with open(stale, "w") as fh:
        fh.write(entries[0].to_json() + "\n" + entries[1].to_json() + "\n")
    assert list(read_remap(qdir)) == list(range(10))  # readers ignore both
    restarted = RemapLog(qdir, ["x", "f"], {1: False})
    restarted.record(10)
    assert not os.path.exists(stale) and os.path.exists(os.path.join(rdir, merged))
    assert list(read_remap(qdir)) == list(range(11)) and stored_batch_ids(qdir) == list(range(11))


def test_latest_first_and_compacted_spark_source_logs(tmp_path: Path) -> None:
    qdir = fake_query(tmp_path, 3)
    src = os.path.join(qdir, "spark", "sources", "1")
    # Spark compacted batches 0..1 into 1.compact and deleted the plain files
    with open(os.path.join(src, "1.compact"), "w") as fh:
        fh.write(
            "v1\n"
            + "\n".join(json.dumps({"path": f"file:///d/{b}.json", "timestamp": 1, "batchId": b}) for b in (0, 1))
        )
    os.remove(os.path.join(src, "0"))
    os.remove(os.path.join(src, "1"))
    assert source_files(src, 0) == [("file:///d/0.json", 1)]
    with pytest.raises(SparkRunError, match="no entry for its batch 7"):
        source_files(src, 7)
    log = RemapLog(qdir, ["x", "f"], {1: True})
    log.record(0)
    log.record(1)
    assert log.record(2) == {1: ["file:///d/late2%20x.json", "file:///d/a2%20x.json", "file:///d/b2%20x.json"]}
    assert batch_files(str(tmp_path), "q", 0) == {"f": ["/d/0.json"]}


# ------------------------------------------------------------------ (C) an empty first batch
@pytest.mark.parametrize("first_rows", [0, 3])
def test_a_first_batch_without_rows_runs_no_tick(spark: SparkSession, tmp_path: Path, first_rows: int) -> None:
    """Batch 0 runs no tick when it has no rows. A Parquet footer with rows says so without a
    Spark job; a zero-row file still gets Spark's emptiness check, and its batch is skipped."""
    d = tmp_path / "x"
    d.mkdir()
    write_file(d / "a.parquet", "parquet", list(range(first_rows)), 1_000)
    write_file(d / "b.parquet", "parquet", [10, 11], 2_000)
    with FlowRunner(
        plus_one_program(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"x": f"parquet:{d}?maxFilesPerTrigger=1"},
    ) as run:
        run.start(once=True)
        run.await_termination()
        assert run.memory("out").values() == [*(i + 1 for i in range(first_rows)), 11, 12]
        ticks = [b for b, _ in run.stages[0].progress.durations_ms]
    assert ticks == ([0, 1] if first_rows else [1])


def test_parquet_footers_show_rows_only_when_they_can(tmp_path: Path) -> None:
    write_file(tmp_path / "rows.parquet", "parquet", [1, 2], 1_000)
    write_file(tmp_path / "none.parquet", "parquet", [], 1_000)
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    uri = (tmp_path / "rows.parquet").as_uri()
    assert remap.parquet_has_rows([uri])
    assert remap.parquet_has_rows([(tmp_path / "none.parquet").as_uri(), uri])
    # nothing shown: a zero-row footer, a broken file (Spark's read reports it), a path not on this machine
    assert not remap.parquet_has_rows([(tmp_path / "none.parquet").as_uri()])
    assert not remap.parquet_has_rows([(tmp_path / "broken.parquet").as_uri()])
    assert not remap.parquet_has_rows(["s3a://bucket/rows.parquet", "file:///no/such/file.parquet"])
