"""Spark's offset log and hydrolite's remap log read and written through a Hadoop file system.

`offsets.py` and `remap.py` reach every file through `ckfs`, so a checkpoint may be a URI
(`hdfs://`, `s3a://` ...). The Hadoop side here is real: a `viewfs://` mount over a local
directory (`viewfs_mount`), so every call goes through Hadoop's FileSystem and Spark's
CheckpointFileManager (with Hadoop's checksums) exactly as for HDFS.

* A checkpoint written by a real run on a local directory reads the same through the mount:
  the offset log, the remap log (sealed, merged and live segments), the files of each batch;
  a damaged offset file is explained and rebuilt through the mount, and Spark restarts on it.
* The remap writer on a URI (no append: one file per batch, sealed and merged) continues a
  log a local writer began, replaces a replayed batch's entry, and tolerates what a crash
  leaves (a torn newest entry file, covered files of an interrupted seal or merge, a Hadoop
  temporary); a local writer then continues the mixed log.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.planner.spark import ckfs, remap
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.offsets import (
    batch_files,
    check_restart,
    numbered,
    queries,
    read_offset_log,
    repair_offsets,
)
from hydrolite.planner.spark.remap import RemapLog, parse_spark_offsets, read_remap, source_files
from hydrolite.planner.spark.runtime import FlowRunner
from tests.spark.test_ckfs import viewfs_mount
from tests.spark.test_input_order_remap import stored_batch_ids

pytestmark = pytest.mark.spark


class P:
    """Tag."""


def plus_one() -> hl.Flow:
    flow = hl.FlowBuilder("plus_one_hadoop")
    flow.process(P).source("x", int).map(lambda x: x + 1).sink("out")
    return flow.finalize()


def publish(src: Path, i: int) -> None:
    path = src / f"f{i}.json"
    path.write_text("".join(json.dumps({"value": 10 * i + j}) + "\n" for j in range(2)))
    os.utime(path, (1000 + i, 1000 + i))


def run_local(spark: SparkSession, tmp_path: Path) -> list[int]:
    """Run `plus_one` over every file of `tmp_path/in`, one file per batch, on the local checkpoint."""
    with FlowRunner(
        plus_one(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"x": f"json:{tmp_path / 'in'}?maxFilesPerTrigger=1"},
    ) as run:
        run.start(once=True)
        run.await_termination()
        return list(run.memory("out").values())


# ------------------------------------------------------------------ a real run's local checkpoint, through viewfs
def test_a_local_checkpoint_reads_the_same_through_a_hadoop_uri_and_is_repaired_through_it(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remap, "SEAL_EVERY", 1)
    monkeypatch.setattr(remap, "FANOUT", 2)
    (tmp_path / "in").mkdir()
    for i in range(4):
        publish(tmp_path / "in", i)
    assert run_local(spark, tmp_path) == [10 * i + j + 1 for i in range(4) for j in range(2)]
    ck = str(tmp_path / "ck")
    uri = viewfs_mount(spark, tmp_path / "ck")
    (query,) = queries(ck)
    assert queries(uri) == [query]
    qdir, qdir_uri = ckfs.join(ck, query), ckfs.join(uri, query)
    # every layout of the local writer is there: a merged segment, a sealed one, the live one
    segments = sorted(os.listdir(tmp_path / "ck" / query / "remap"))
    assert [nm.split(".", 1)[1] for nm in segments] == ["L1.jsonl", "L0.jsonl", "live.jsonl"], segments

    ticks = read_offset_log(ck)
    assert [(t.batch_id, t.committed) for t in ticks] == [(b, True) for b in range(4)]
    assert read_offset_log(uri) == ticks and read_offset_log(uri, query) == ticks
    assert read_remap(qdir_uri) == read_remap(qdir) and list(read_remap(qdir)) == list(range(4))
    for b in range(4):
        assert batch_files(uri, query, b) == batch_files(ck, query, b) == {"x": [str(tmp_path / "in" / f"f{b}.json")]}
        assert source_files(ckfs.join(qdir_uri, "spark", "sources", "0"), b) == source_files(
            os.path.join(qdir, "spark", "sources", "0"), b
        )
    for log in ("offsets", "commits"):
        assert numbered(ckfs.join(qdir_uri, "spark", log)) == numbered(os.path.join(qdir, "spark", log)) == [0, 1, 2, 3]
    assert parse_spark_offsets(ckfs.join(qdir_uri, "spark", "offsets", "3")) == [{"logOffset": 3}]
    with pytest.raises(KeyError, match="no remap entry for batch 9"):
        batch_files(uri, query, 9)
    check_restart(uri, query)  # nothing damaged: no error
    assert repair_offsets(uri) == []

    # a damaged offset file (its Hadoop checksum now stale): explained and rebuilt through the URI
    disk = tmp_path / "ck" / query / "spark" / "offsets" / "3"
    text = disk.read_text()
    disk.write_text(text[: len(text) // 2])
    with pytest.raises(SparkRunError) as info:
        check_restart(uri, query)
    damaged = ckfs.join(qdir_uri, "spark", "offsets", "3")
    assert f"Spark's offset log entry {damaged} is damaged (unreadable:" in str(info.value)
    assert f"hydrolite offsets {uri} --repair" in str(info.value)
    assert repair_offsets(uri) == [damaged]
    assert disk.read_text().splitlines()[2] == text.splitlines()[2]  # the same end offset
    check_restart(uri, query)
    check_restart(ck, query)
    assert read_offset_log(uri) == ticks
    # Spark itself accepts the rebuilt file and the checksum written with it, and goes on
    publish(tmp_path / "in", 4)
    assert run_local(spark, tmp_path) == [41, 42]
    assert [t.batch_id for t in read_offset_log(uri)] == list(range(5))


# ------------------------------------------------------------------ the writer on a URI
def fake_query(qdir: Path, batches: int) -> None:
    """Spark's offset files for a feed input `x` and a file input `f` (its `sources/1` log)."""
    (qdir / "spark" / "offsets").mkdir(parents=True, exist_ok=True)
    (qdir / "spark" / "sources" / "1").mkdir(parents=True, exist_ok=True)
    for b in range(batches):
        (qdir / "spark" / "offsets" / str(b)).write_text(f'v1\n{{}}\n{{"entries":{b + 1}}}\n{{"logOffset":{b}}}\n')
        files = [
            {"path": f"file:///d/{name}{b}.json", "timestamp": ts, "batchId": b} for name, ts in (("b", 20), ("a", 10))
        ]
        (qdir / "spark" / "sources" / "1" / str(b)).write_text("v1\n" + "\n".join(json.dumps(f) for f in files))


def test_the_writer_on_a_uri_writes_a_file_per_batch_seals_merges_replays_and_survives_crash_leftovers(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remap, "SEAL_EVERY", 3)
    monkeypatch.setattr(remap, "FANOUT", 2)
    qdir = tmp_path / "ck" / "q"
    fake_query(qdir, 23)
    rdir = qdir / "remap"
    uri = ckfs.join(viewfs_mount(spark, tmp_path / "ck"), "q")
    # a local writer begins the log (sealed 0-2, live 3-4); the URI writer goes on from there
    local = RemapLog(str(qdir), ["x", "f"], {1: False})
    for b in range(5):
        local.record(b)
    assert sorted(os.listdir(rdir)) == ["000000000000-000000000002.L0.jsonl", "000000000003.live.jsonl"]
    log = RemapLog(uri, ["x", "f"], {1: False})
    for b in range(5, 19):
        assert log.record(b) == {1: [f"file:///d/a{b}.json", f"file:///d/b{b}.json"]}
    # a replay of batch 18 (its offset file changed here only to tell the two entries apart)
    (qdir / "spark" / "offsets" / "18").write_text('v1\n{}\n{"entries":999}\n{"logOffset":18}\n')
    log.record(18)
    for b in (19, 20):
        log.record(b)
    names = sorted(n for n in os.listdir(rdir) if not n.startswith("."))
    # no live segment (no append on a URI): sealed and merged segments, then one file per unsealed batch
    assert not any(".live." in n for n in names) and any(".L2." in n for n in names), names
    assert [n for n in names if n.endswith(".entry.jsonl")] == [
        "000000000018.entry.jsonl",
        "000000000019.entry.jsonl",
        "000000000020.entry.jsonl",
    ]
    assert len(names) <= 7, names
    entries = read_remap(uri)
    assert list(entries) == list(range(21)) and read_remap(str(qdir)) == entries
    assert stored_batch_ids(rdir.parent) == list(range(21))  # each batch stored once
    assert entries[18].ends == {"x": {"entries": 999}, "f": {"logOffset": 18}}  # the replay's entry
    assert entries[17].ends == {"x": {"entries": 18}, "f": {"logOffset": 17}}
    assert entries[4].files == {"f": ["/d/a4.json", "/d/b4.json"]}

    # what crashes leave: a torn newest entry file (batch 21 never got past its first step),
    # an entry file and a segment a finished seal and merge cover, a Hadoop temporary
    (rdir / "000000000021.entry.jsonl").write_text('{"v":1,"batch":21,"en')
    (rdir / "000000000003.entry.jsonl").write_text(entries[3].to_json() + "\n")
    (rdir / "000000000000-000000000002.L0.jsonl").write_text("".join(entries[b].to_json() + "\n" for b in range(3)))
    (rdir / ".000000000021.entry.jsonl.1234.tmp").write_text('{"v":1,"batch":21}')
    assert read_remap(uri) == entries and read_remap(str(qdir)) == entries  # readers ignore all of it
    restarted = RemapLog(uri, ["x", "f"], {1: False})
    restarted.record(21)
    assert read_remap(uri) == read_remap(str(qdir)) and list(read_remap(uri)) == list(range(22))
    assert stored_batch_ids(rdir.parent) == list(range(22))  # torn and covered files are gone
    assert sorted(n for n in os.listdir(rdir) if not n.startswith(".")) == [
        "000000000000-000000000011.L2.jsonl",
        "000000000012-000000000017.L1.jsonl",
        "000000000018-000000000020.L0.jsonl",
        "000000000021.entry.jsonl",
    ]
    # a torn entry file that is not the newest cannot come from a crash: refused
    (rdir / "000000000019.entry.jsonl").write_text('{"v":1,"batch":19')
    with pytest.raises(
        SparkRunError, match=r"remap entry file \(not the newest\) .*000000000019.entry.jsonl does not end"
    ):
        read_remap(uri)
    os.remove(rdir / "000000000019.entry.jsonl")

    # a local writer continues the mixed log: its live segment after the URI's entry files
    again = RemapLog(str(qdir), ["x", "f"], {1: False})
    again.record(22)
    # Hadoop's checksums (appends would falsify them) and its temporary are gone
    assert not any(n.endswith((".crc", ".tmp")) for n in os.listdir(rdir)), os.listdir(rdir)
    assert read_remap(uri) == read_remap(str(qdir)) and list(read_remap(uri)) == list(range(23))
    assert stored_batch_ids(rdir.parent) == list(range(23))
    assert [b for b, _ in read_remap(uri).items() if b >= 18] == [18, 19, 20, 21, 22]
