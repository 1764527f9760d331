"""Strict input by default: every record of a file input is checked against the port's type.

The user's report (issue 10): a keyed `str -> int` port bound to JSON / CSV / Parquet files
dropped records missing their key, coerced `123` to `"123"`, read CSV columns by position,
let a missing `int` through as None, and failed on a broken file with a JVM stack trace.
Each of those now fails the batch with a `BadDataError` naming the port (and the line that
declared it), the file, the line, the field, what was expected and what was found, and the
fix — or, with `?onBadRecord=quarantine:DIR`, sets the record aside in a dead-letter
directory, once per batch even across a crash and replay, and counts it in the progress.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.errors import BadDataError, SparkRunError
from hydrolite.planner.spark.faults import InjectedFault
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.verify import verify_runner

pytestmark = pytest.mark.spark
ANY = nondet("the test reads one batch of files at a time")


class P:
    """Tag."""


def keyed_program() -> hl.Flow:
    flow = hl.FlowBuilder("strict")
    flow.process(P).keyed_source("p", str, int).entries().sink("out")
    return flow.finalize()


def three_ports_program() -> hl.Flow:
    """One query (one tick) reading a JSON, a CSV and a Parquet input."""
    flow = hl.FlowBuilder("quarantine")
    p = flow.process(P)
    t = p.tick()
    for port in ("j", "c", "q"):
        p.keyed_source(port, str, int).entries().batch(t, ANY).all_ticks().sink(f"{port}_out")
    return flow.finalize()


PORT_LINE = 'keyed_source("p", str, int)'


def line_of(needle: str) -> int:
    return next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if needle in text)


def parquet_bytes(table: Any) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


GOOD = b'{"key": "a", "value": 1}\n'
BIG = 25 * 1024 * 1024
# id -> (format, file content, where: "line N" / "row N" / None, field, expected, found)
CASES: dict[str, tuple[str, bytes, str | None, str, str, str]] = {
    "json-missing-key": (
        "json",
        GOOD + b'{"value": 2}\n',
        "line 2",
        "key",
        "expected str",
        "found nothing (the field is missing)",
    ),
    "json-null-key": ("json", GOOD + b'{"key": null, "value": 2}\n', "line 2", "key", "expected str", "found null"),
    "json-wrong-field-names": (
        "json",
        GOOD + b'{"k": "b", "v": 2}\n',
        "line 2",
        "k",
        "expected only the fields key, value",
        "found an unknown field",
    ),
    "json-int-for-str": (
        "json",
        GOOD + b'{"key": 123, "value": 2}\n',
        "line 2",
        "key",
        "expected str",
        "found int 123",
    ),
    "json-object-for-str": (
        "json",
        GOOD + b'{"key": {"a": 1}, "value": 2}\n',
        "line 2",
        "key",
        "expected str",
        'found object {"a": 1}',
    ),
    "json-array-line": (
        "json",
        GOOD + b'["b", 2]\n',
        "line 2",
        "",
        "expected a JSON object with the fields key, value",
        'found array ["b", 2]',
    ),
    "json-trailing-garbage": (
        "json",
        GOOD + b'{"key": "b", "value": 2} oops\n',
        "line 2",
        "",
        "expected one JSON object",
        "found more text after the record at column 26: 'oops'",
    ),
    "json-missing-int": (
        "json",
        GOOD + b'{"key": "b"}\n',
        "line 2",
        "value",
        "expected int",
        "found nothing (the field is missing)",
    ),
    "json-str-for-int": (
        "json",
        GOOD + b'{"key": "b", "value": "1"}\n',
        "line 2",
        "value",
        "expected int",
        'found str "1"',
    ),
    "json-float-for-int": (
        "json",
        GOOD + b'{"key": "b", "value": 1.5}\n',
        "line 2",
        "value",
        "expected int",
        "found float 1.5",
    ),
    "json-bool-for-int": (
        "json",
        GOOD + b'{"key": "b", "value": true}\n',
        "line 2",
        "value",
        "expected int",
        "found bool true",
    ),
    "json-broken-line": (
        "json",
        GOOD + b'{"key": "b", "value": }\n' + GOOD,
        "line 2",
        "",
        "expected one JSON object",
        "found invalid JSON at column 23: Expecting value",
    ),
    "json-truncated-last-line": (
        "json",
        GOOD * 2 + b'{"key": "b", "val',
        "line 3",
        "",
        "expected one JSON object",
        "found a record cut off before its end",
    ),
    "json-not-utf8": (
        "json",
        GOOD + b'{"key": "caf\xe9", "value": 2}\n',
        "line 2",
        "",
        "expected utf-8 text",
        "found the byte 0xe9 at byte 13 of the line",
    ),
    "json-25mb-line": (
        "json",
        GOOD + b'{"key": "' + b"x" * BIG + b'", "value": 2}\n',
        "line 2",
        "",
        "expected a record of at most 16777216 bytes (maxRecordBytes)",
        f"found a line of {BIG + 23} bytes",
    ),
    "json-explicit-fail": (
        "json",
        GOOD + b'{"key": "b", "value": null}\n',
        "line 2",
        "value",
        "expected int",
        "found null",
    ),
    "csv-no-header": (
        "csv",
        b"a,1\nb,2\n",
        "line 1",
        "key",
        "expected a header line naming the columns key, value",
        "(a file without a header line?)",
    ),
    "csv-missing-column": (
        "csv",
        b"key\na\n",
        "line 1",
        "value",
        "expected a header line naming the columns key, value",
        "no column value",
    ),
    "csv-unknown-column": (
        "csv",
        b"key,value,extra\na,1,x\n",
        "line 1",
        "extra",
        "expected a header line naming the columns key, value",
        "unknown column 'extra'",
    ),
    "csv-float-for-int": ("csv", b"key,value\na,1\nb,1.5\n", "line 3", "value", "expected int", "found '1.5'"),
    "csv-empty-key": ("csv", b"key,value\n,1\n", "line 2", "key", "expected str", "found nothing (an empty field)"),
    "parquet-type-mismatch": (
        "parquet",
        parquet_bytes(pa.table({"key": pa.array([1, 2]), "value": pa.array([1, 2])})),
        None,
        "key",
        "expected string",
        "found Parquet type INT64",
    ),
    "parquet-missing-column": (
        "parquet",
        parquet_bytes(pa.table({"k": pa.array(["a"]), "value": pa.array([1])})),
        "row 1",
        "key",
        "expected str",
        "found null (or no such column) (the file's columns are k, value)",
    ),
    "parquet-null-value": (
        "parquet",
        parquet_bytes(pa.table({"key": pa.array(["a", "b"]), "value": pa.array([1, None])})),
        "row 2",
        "value",
        "expected int",
        "found null",
    ),
    "parquet-not-parquet": ("parquet", b"this is not a parquet file" * 4, None, "", "", "the file cannot be read: "),
    "json-gz-corrupt": ("json", gzip.compress(GOOD * 100)[:60], None, "", "", "the file cannot be read"),
}
EXTENSION = {"json-gz-corrupt": "json.gz"}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_record_fails_the_batch_naming_port_file_line_field_expected_found(
    case: str, spark: SparkSession, tmp_path: Path
) -> None:
    fmt, content, where, field, expected, found = CASES[case]
    src = tmp_path / "in"
    src.mkdir()
    bad = src / f"bad.{EXTENSION.get(case, fmt)}"
    bad.write_bytes(content)
    options = "?onBadRecord=fail" if case == "json-explicit-fail" else ""
    with FlowRunner(
        keyed_program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"{fmt}:{src}{options}"}
    ) as run:
        run.start()
        with pytest.raises(BadDataError) as info:
            run.process_all_available()
    msg = str(info.value)
    head = f"test_bad_records.py:{line_of(PORT_LINE)}: input 'p' ({fmt} files in {src})"
    assert msg.startswith(head), msg  # the port, and the line that declared it
    assert "declared type KeyedStream[str, int" in msg and "(batch 0 of query " in msg
    assert f"{bad}, {where}: " in msg if where else f"{bad}" in msg, msg  # the file (full path), the line
    if field:
        assert f"field {field!r}: " in msg, msg
    assert expected in msg and found in msg, msg
    assert "fix: " in msg and ("?onBadRecord=quarantine:" in msg or "ignoreCorruptFiles" in msg)
    assert (
        "\tat " not in msg and "Traceback" not in msg and "java." not in msg.split("\n  record:")[0]
    )  # no JVM / Python frames
    assert len(msg) < 2000


def test_csv_columns_are_matched_by_name(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "reordered.csv").write_text('value,key\n1,a\n2,"b,c"\n3,""\n')
    with FlowRunner(keyed_program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"csv:{src}"}) as run:
        run.start()
        run.process_all_available()
        # what the well-formed `key,value` file gives (the CSV unit tests read both layouts)
        assert run.memory("out").values() == [("a", 1), ("b,c", 2), ("", 3)]


def test_lines_are_numbered_in_every_split_of_a_file(spark: SparkSession, tmp_path: Path) -> None:
    src, dead = tmp_path / "in", tmp_path / "dead"
    src.mkdir()
    lines = [
        f'{{"key": "k{i}", "value": {i}}}' if i not in (3, 150) else f'{{"key": "k{i}", "value": "v{i}"}}'
        for i in range(1, 201)
    ]
    (src / "big.json").write_text("\n".join(lines) + "\n")
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "512")  # about 15 splits, read by different tasks
    try:
        with FlowRunner(
            keyed_program(),
            spark=spark,
            checkpoint=str(tmp_path / "ck"),
            inputs={"p": f"json:{src}?onBadRecord=quarantine:{dead}"},
        ) as run:
            run.start()
            run.process_all_available()
            assert run.memory("out").values() == [
                (f"k{i}", i) for i in range(1, 201) if i not in (3, 150)
            ]  # file order
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)
    assert [(r["line"], r["raw"]) for r in dead_letters(dead)[0]] == [(3, lines[2]), (150, lines[149])]


def test_unusable_options_are_refused_before_the_run(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for query, needle in (
        ("onBadRecord=skip", "is not 'fail' or 'quarantine:DIR'"),
        ("mode=DROPMALFORMED", "would drop or null out bad records silently"),
        ("allowComments=true", "option 'allowComments' is not supported"),
    ):
        with (
            FlowRunner(
                keyed_program(),
                spark=spark,
                checkpoint=str(tmp_path / "ck"),
                inputs={"p": f"json:{tmp_path / 'in'}?{query}"},
            ) as run,
            pytest.raises(SparkRunError, match=needle),
        ):
            run.start()


# ------------------------------------------------------------------ quarantine
def dead_letters(d: Path) -> dict[int, list[dict[str, Any]]]:
    """batch id -> the records written there (every part file, duplicates kept)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for part in sorted(d.glob("batch_id=*/part-*.json")):
        rows = [json.loads(line) for line in part.read_text().splitlines() if line.strip()]
        out.setdefault(int(part.parent.name.split("=")[1]), []).extend(rows)
    return out


def written(d: Path) -> dict[int, list[tuple[str, int]]]:
    """batch id -> the (key, value) pairs a JSON sink wrote (batches with none left out)."""
    out: dict[int, list[tuple[str, int]]] = {}
    for part in sorted(d.glob("batch_id=*/part-*.json")):
        for line in part.read_text().splitlines():
            row = json.loads(line)
            out.setdefault(int(part.parent.name.split("=")[1]), []).append((row["_1"], row["_2"]))
    return out


def write_quarantine_inputs(tmp: Path) -> dict[str, str]:
    """Two files per input, the second newer (one file per batch: batch 0, then batch 1)."""
    files: dict[str, list[bytes]] = {
        "j": [
            GOOD + b'{"key": 7, "value": 2}\n{"key": "b", "value": 2}\n',
            b'{"key": "c", "value": 3}\n{"key": "d"}\n\xff\n',
        ],
        "c": [b"key,value\nx,1\ny,oops\n", b"value,key\n2,z\n"],
        "q": [
            parquet_bytes(pa.table({"key": pa.array(["p", None]), "value": pa.array([1, 2])})),
            parquet_bytes(pa.table({"key": pa.array(["r"]), "value": pa.array([None], pa.int64())})),
        ],
    }
    fmt = {"j": "json", "c": "csv", "q": "parquet"}
    specs = {}
    for port, contents in files.items():
        d = tmp / port
        d.mkdir()
        for n, content in enumerate(contents):
            f = d / f"{n}.{fmt[port]}"
            f.write_bytes(content)
            os.utime(f, (1000 + n, 1000 + n))
        dead = tmp / ("dead-q" if port == "q" else "dead")  # j and c share one directory
        specs[port] = f"{fmt[port]}:{d}?maxFilesPerTrigger=1&onBadRecord=quarantine:{dead}"
    return specs


def test_quarantine_sets_bad_records_aside_once_per_batch_across_a_crash(spark: SparkSession, tmp_path: Path) -> None:
    specs = write_quarantine_inputs(tmp_path)
    ck = str(tmp_path / "ck")
    outputs = {f"{p}_out": f"json:{tmp_path / 'out' / p}" for p in ("j", "c", "q")}

    def crash(point: str, query: str, batch: int) -> None:
        if point == "after_sinks" and batch == 1:  # dead letters and outputs written, batch not committed
            raise InjectedFault("crash after the sinks of batch 1")

    with (
        pytest.raises(InjectedFault),
        FlowRunner(
            three_ports_program(), spark=spark, checkpoint=ck, inputs=specs, outputs=outputs, fault=crash
        ) as run,
    ):
        run.start()
        run.process_all_available()
    assert run.stages[0].progress.rejected == {"j": 3, "c": 1, "q": 2}  # batches 0 and 1 (set aside before the crash)
    assert set(dead_letters(tmp_path / "dead")) == {0, 1}  # batch 1's were written before the crash
    with FlowRunner(three_ports_program(), spark=spark, checkpoint=ck, inputs=specs, outputs=outputs) as run:
        run.start()
        run.process_all_available()  # Spark replays batch 1
        assert run.stages[0].progress.rejected == {"j": 2, "c": 0, "q": 1}  # the replayed batch 1
        report = verify_runner(run)  # the model replay reads the files as the run did: bad records left out
        assert report.identical, str(report)
    assert written(tmp_path / "out" / "j") == {0: [("a", 1), ("b", 2)], 1: [("c", 3)]}
    assert written(tmp_path / "out" / "c") == {0: [("x", 1)], 1: [("z", 2)]}
    assert written(tmp_path / "out" / "q") == {0: [("p", 1)]}
    j, c, q = (str(tmp_path / p) for p in ("j", "c", "q"))
    assert dead_letters(tmp_path / "dead") == {
        0: [
            {
                "port": "c",
                "file": f"{c}/0.csv",
                "line": 3,
                "reason": "field 'value': expected int, found 'oops'",
                "raw": "y,oops",
            },
            {
                "port": "j",
                "file": f"{j}/0.json",
                "line": 2,
                "reason": "field 'key': expected str, found int 7",
                "raw": '{"key": 7, "value": 2}',
            },
        ],
        1: [  # once, though batch 1 ran twice
            {
                "port": "j",
                "file": f"{j}/1.json",
                "line": 2,
                "reason": "field 'value': expected int, found nothing (the field is missing)",
                "raw": '{"key": "d"}',
            },
            {
                "port": "j",
                "file": f"{j}/1.json",
                "line": 3,
                "reason": "expected utf-8 text, found the byte 0xff at byte 1 of the line, which is not utf-8",
                "raw": "\ufffd",
            },
        ],
    }
    assert dead_letters(tmp_path / "dead-q") == {
        0: [
            {
                "port": "q",
                "file": f"{q}/0.parquet",
                "line": 2,
                "reason": "field 'key': expected str, found null (or no such column)",
                "raw": '{"value":2}',
            }
        ],
        1: [
            {
                "port": "q",
                "file": f"{q}/1.parquet",
                "line": 1,
                "reason": "field 'value': expected int, found null (or no such column)",
                "raw": '{"key":"r"}',
            }
        ],
    }
