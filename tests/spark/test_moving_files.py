"""File inputs whose files move, change or never arrive, and a damaged Spark checkpoint.

Each case either ends with outputs identical to an uninterrupted run, or fails with an
error that names the input, the file (or directory) and the way out — which is then taken
and must lead to the uninterrupted run's outputs. See hydrolite/planner/spark/files.py.

The program adds one to every element of file input `x` and writes a JSON file sink (which
keeps every batch across restarts). Three files, one per micro-batch
(`maxFilesPerTrigger=1`, modification times 1000 s, 1001 s, 1002 s), so batch ids are
deterministic: batch i holds file fi.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.files import NOT_TEMP_GLOB, TEMP_SUFFIXES
from hydrolite.planner.spark.offsets import queries, repair_offsets
from hydrolite.planner.spark.runtime import FlowRunner

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

ROWS = 3
EXPECTED = [(i, 10 * i + j + 1) for i in range(3) for j in range(ROWS)]  # (batch, value) of an uninterrupted run
PROGRAM = '''
import hydrolite as hl


class P:
    """Tag."""


def build() -> hl.Flow:
    flow = hl.FlowBuilder("plus_one")
    flow.process(P).source("x", int).map(lambda x: x + 1).sink("out")
    return flow.finalize()
'''


class P:
    """Tag."""


def plus_one() -> hl.Flow:
    flow = hl.FlowBuilder("plus_one")
    flow.process(P).source("x", int).map(lambda x: x + 1).sink("out")
    return flow.finalize()


def lines(i: int, rows: range = range(ROWS)) -> str:
    return "".join(json.dumps({"value": 10 * i + j}) + "\n" for j in rows)


def publish(src: Path, i: int) -> Path:
    """File fi, complete, with its fixed modification time."""
    path = src / f"f{i}.json"
    path.write_text(lines(i))
    os.utime(path, (1000 + i, 1000 + i))
    return path


def run(
    spark: SparkSession,
    d: Path,
    spec: str = "?maxFilesPerTrigger=1",
    fault: Callable[[str, str, int], None] | None = None,
) -> None:
    """Run to the end of the input (from the checkpoint `d/ck`, if any)."""
    with FlowRunner(
        plus_one(),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs={"x": f"json:{d / 'in'}{spec}"},
        outputs={"out": f"json:{d / 'out'}"},
        fault=fault,
    ) as r:
        r.start()
        r.process_all_available()


def outputs(d: Path) -> list[tuple[int, int]]:
    rows: list[tuple[int, int]] = []
    for part in (d / "out").glob("batch_id=*/part-*.json"):
        batch = int(part.parent.name.split("=")[1])
        rows += [(batch, json.loads(line)["value"]) for line in part.read_text().splitlines() if line.strip()]
    return sorted(rows)


def spark_log(d: Path, kind: str, batch: int) -> Path:
    (query,) = queries(str(d / "ck"))
    return d / "ck" / query / "spark" / kind / str(batch)


def crash_at(point: str, batch: int, action: Callable[[], None] | None = None) -> Callable[[str, str, int], None]:
    """A fault hook: at `point` of `batch` (first attempt only) run `action`, then crash."""
    fired: list[int] = []

    def hook(p: str, _q: str, b: int) -> None:
        if p == point and b == batch and not fired:
            fired.append(b)
            if action is not None:
                action()
            raise InjectedFault(f"crash at {p} of batch {b}")

    return hook


def test_uninterrupted_run(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for i in range(3):
        publish(tmp_path / "in", i)
    run(spark, tmp_path)
    assert outputs(tmp_path) == EXPECTED


# ------------------------------------------------------------------ publishing: temporary and hidden names
def test_temporary_and_hidden_names_are_not_read_and_reported_once(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    publish(src, 0)
    (src / "f1.json.tmp").write_text(lines(1))  # being written now: skipped, not reported
    (src / ".f2.json").write_text(lines(2))
    for name in ("_notes.json", "old.json.inprogress", "_SUCCESS"):  # left over long ago
        (src / name).write_text(lines(9))
        os.utime(src / name, (1000, 1000))
    run(spark, tmp_path)
    assert outputs(tmp_path) == EXPECTED[:ROWS]
    err = capsys.readouterr().err
    assert (
        err.count(
            "hydrolite: input 'x': skipping hidden file _notes.json (names starting with _ or . are not read; rename it to read it)"
        )
        == 1
    )
    assert err.count("skipping temporary file old.json.inprogress") == 1
    assert "f1.json.tmp" not in err and ".f2.json" not in err and "_SUCCESS" not in err  # in progress / Hadoop's marker
    # the producer renames its files into place: they are read as they arrive
    os.rename(src / "f1.json.tmp", src / "f1.json")
    os.utime(src / "f1.json", (1001, 1001))
    os.rename(src / ".f2.json", src / "f2.json")
    os.utime(src / "f2.json", (1002, 1002))
    run(spark, tmp_path)
    assert outputs(tmp_path) == EXPECTED


def test_the_glob_accepts_exactly_the_names_without_a_temporary_suffix() -> None:
    """The `pathGlobFilter` spelled out as a suffix trie (Spark applied it in the test above)."""
    alternatives = [a.replace("[^", "[!") for a in NOT_TEMP_GLOB[1:-1].split(",")]  # fnmatch negates with !
    names = ["".join(p) for n in range(1, 6) for p in itertools.product(".tmpsx", repeat=n)]
    names += [
        "a.json.inprogress",
        "inprogress",
        ".inprogress",
        "a.inprogres",
        "a.nprogress",
        "x.tmp.json",
        "f.json.tmp",
        "tmp",
    ]
    for name in names:
        accepted = any(fnmatch.fnmatchcase(name, a) for a in alternatives)
        assert accepted == (not name.endswith(TEMP_SUFFIXES)), name


# ------------------------------------------------------------------ a file written to after Spark listed it
def test_file_changed_after_listing_fails_the_batch_until_accepted(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        publish(src, i)
    f1 = src / "f1.json"
    f1.write_text(lines(1, range(1)))  # the producer has written one row of three so far
    os.utime(f1, (1001, 1001))

    def finish_writing() -> None:  # ... and writes the rest while batch 1 runs, after Spark read the file
        with open(f1, "a") as fh:
            fh.write(lines(1, range(1, ROWS)))

    fired: list[int] = []

    def writer(p: str, _q: str, b: int) -> None:
        if p == "after_sinks" and b == 1 and not fired:
            fired.append(b)
            finish_writing()

    with pytest.raises(SparkRunError) as info:
        run(spark, tmp_path, fault=writer)
    msg = str(info.value)
    assert f"input 'x': file {f1} changed after Spark listed it for batch 1 of query" in msg
    assert "rows written after the listing would be lost" in msg
    assert "publish files atomically: write each file under a hidden or temporary name" in msg
    assert "run again with ?acceptChangedFiles=true on this input: batch 1 was not committed" in msg
    assert not spark_log(tmp_path, "commits", 1).exists()  # not committed: before the fix, 1 row of 3 was
    # a restart replays batch 1, whose listing still has the old modification time
    with pytest.raises(
        SparkRunError,
        match=r"file .*f1\.json changed after Spark listed it for batch 1 .*listed with modification time",
    ):
        run(spark, tmp_path)
    capsys.readouterr()
    run(spark, tmp_path, "?maxFilesPerTrigger=1&acceptChangedFiles=true")  # the documented way out
    assert "read as it is now (acceptChangedFiles=true)" in capsys.readouterr().err
    assert outputs(tmp_path) == EXPECTED


# ------------------------------------------------------------------ a missing input directory
def test_missing_directory_is_an_error_before_any_query_starts(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    with FlowRunner(
        plus_one(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"x": f"json:{tmp_path / 'inn'}"}
    ) as r:
        with pytest.raises(SparkRunError) as info:
            r.start()
        assert all(s.query is None for s in r.stages)
    msg = str(info.value)
    assert f"input 'x': directory {tmp_path / 'inn'} does not exist" in msg
    assert f"did you mean {tmp_path / 'in'}?" in msg
    assert "add ?waitForDirectory=true to the input to wait for it" in msg
    assert not (tmp_path / "inn").exists()  # not created


def test_wait_for_directory(spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def arrive() -> None:
        staging = tmp_path / "_staging"
        staging.mkdir()
        for i in range(3):
            publish(staging, i)
        os.rename(staging, tmp_path / "in")

    timer = threading.Timer(1.0, arrive)
    timer.start()
    try:
        run(spark, tmp_path, "?maxFilesPerTrigger=1&waitForDirectory=true")
    finally:
        timer.join()
    assert outputs(tmp_path) == EXPECTED
    err = capsys.readouterr().err
    assert f"input 'x': waiting for directory {tmp_path / 'in'} to appear" in err and "is there" in err


# ------------------------------------------------------------------ a file of an uncommitted batch deleted
def test_file_of_an_uncommitted_batch_deleted_before_replay(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        publish(src, i)
    with pytest.raises(InjectedFault):
        run(spark, tmp_path, fault=crash_at("before_state", 1))
    shutil.copy2(src / "f1.json", tmp_path / "backup.json")
    os.remove(src / "f1.json")
    # before: the replay of batch 1 silently read nothing (Spark drops a missing path from a
    # replayed batch's file list) and the run ended with f0 and f2 only
    with pytest.raises(SparkRunError) as info:
        run(spark, tmp_path)
    msg = str(info.value)
    assert f"input 'x': file {src / 'f1.json'} of batch 1 of query" in msg and "is gone" in msg
    assert "put the file back unchanged, with its modification time (cp -p" in msg
    assert "run again with ?ignoreMissingFiles=true on this input" in msg
    shutil.copy2(tmp_path / "backup.json", src / "f1.json")  # restored as it was
    run(spark, tmp_path)
    assert outputs(tmp_path) == EXPECTED


# ------------------------------------------------------------------ a damaged Spark checkpoint
def test_truncated_offsets_file_is_explained_and_rebuilt(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        publish(src, i)
    with pytest.raises(InjectedFault):
        run(spark, tmp_path, fault=crash_at("before_state", 1))
    offsets = spark_log(tmp_path, "offsets", 1)
    text = offsets.read_text()
    offsets.write_text(text[: len(text) // 2])  # what a crash of the disk leaves
    with pytest.raises(SparkRunError) as info:
        run(spark, tmp_path)
    msg = str(info.value)
    assert f"Spark's offset log entry {offsets} is damaged (line 2 is not valid JSON" in msg
    assert (
        f"rebuild it from hydrolite's remap log, which recorded batch 1's offsets when the batch started: hydrolite offsets {tmp_path / 'ck'} --repair"
        in msg
    )
    assert repair_offsets(str(tmp_path / "ck")) == [str(offsets)]
    assert offsets.read_text().splitlines()[2] == text.splitlines()[2]  # the same end offset
    run(spark, tmp_path)
    assert outputs(tmp_path) == EXPECTED


def test_truncated_commit_file_is_explained(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        publish(src, i)
    run(spark, tmp_path)
    commit = spark_log(tmp_path, "commits", 2)
    commit.write_text('v1\n{"nextBatch')
    with pytest.raises(SparkRunError) as info:
        run(spark, tmp_path)
    crc = commit.parent / f".{commit.name}.crc"
    assert f"Spark's commit log entry {commit} is damaged" in str(info.value)
    assert f"delete it and its checksum {crc}, then run again: Spark replays batch 2" in str(info.value)
    os.remove(commit)
    os.remove(crc)
    run(spark, tmp_path)
    assert outputs(tmp_path) == EXPECTED


# ------------------------------------------------------------------ the CLI: input rows and --until-idle
def test_cli_counts_every_input_row_and_stops_when_idle(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(200):
        (src / f"f{i:03d}.json").write_text("".join(json.dumps({"value": 20 * i + j}) + "\n" for j in range(20)))
    (src / "_x.json").write_text(lines(9))
    os.utime(src / "_x.json", (1000, 1000))
    (tmp_path / "prog.py").write_text(PROGRAM)
    idle = 2.0
    cmd = [
        sys.executable,
        "-m",
        "hydrolite.cli",
        "run",
        str(tmp_path / "prog.py"),
        "--until-idle",
        str(idle),
        "--checkpoint",
        str(tmp_path / "ck"),
        "--input",
        f"x=json:{src}?maxFilesPerTrigger=40",
        "--output",
        f"out=json:{tmp_path / 'out'}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        # Spark keeps 2 progresses: rows were counted from them (800 of 4000 with --once)
        "--conf",
        "spark.sql.streaming.numRecentProgressUpdates=2",
    ]
    res = subprocess.run(
        cmd,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    ended = time.time()
    assert res.returncode == 0, res.stderr[-3000:]
    (query,) = queries(str(tmp_path / "ck"))
    assert f"hydrolite done: query {query}: 5 batches" in res.stdout
    assert " 4000 input rows, " in res.stdout.split("hydrolite done:")[1], res.stdout[-2000:]
    assert res.stderr.count("skipping hidden file _x.json") == 1
    last_commit = tmp_path / "ck" / query / "spark" / "commits" / "4"
    assert ended - last_commit.stat().st_mtime < idle + 30  # was 86 s after the last commit on 200 files
