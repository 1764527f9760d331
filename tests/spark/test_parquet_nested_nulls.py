"""Nulls inside Parquet records: where the type allows none, the batch fails naming the path
to the null (`tags[1]`, `attrs['y']`, `at.x`) and the file's row; where it allows one
(`Optional`), the record reads as None there.

The check (`strict_read.null_problem`) is built as SQL text, one expression per input; these
cases cover each of its branches (record field, list item, map value, optional, None) on real
Spark, against files pyarrow wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.errors import BadDataError
from hydrolite.planner.spark.runtime import FlowRunner

pytestmark = pytest.mark.spark


class P:
    """Tag."""


class Point(NamedTuple):
    x: int
    y: int | None


class Item(NamedTuple):
    name: str
    tags: list[int]
    attrs: dict[str, int]
    note: str | None
    at: Point
    maybe: list[int | None]


SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("tags", pa.list_(pa.int64())),
        ("attrs", pa.map_(pa.string(), pa.int64())),
        ("note", pa.string()),
        ("at", pa.struct([("x", pa.int64()), ("y", pa.int64())])),
        ("maybe", pa.list_(pa.int64())),
    ]
)
GOOD: dict[str, Any] = {
    "name": "a",
    "tags": [1, 2],
    "attrs": [("x", 1)],
    "note": None,
    "at": {"x": 1, "y": None},
    "maybe": [None, 3],
}


def program() -> hl.Flow:
    flow = hl.FlowBuilder("nested")
    flow.process(P).source("p", Item).sink("out")
    return flow.finalize()


def counted() -> hl.Flow:
    """A running count per name read back at an align point: only Spark's own aggregation
    reads the input, so the input is read without file metadata (`strict_read.unlocated`)
    and a refused record's file and row are found after the batch failed."""
    flow = hl.FlowBuilder("nested_count")
    node = flow.process(P)
    items = node.source("p", Item).map(lambda i: (i.name, i.at.x)).into_keyed()
    align, tick = node.local_align_point(), node.tick()
    touched = items.batch_aligned(tick, align, nondet("any grouping gives the same counts")).keys()
    snap = items.count().snapshot_aligned(tick, align, nondet("the version with this batch"))
    asked = touched.map(lambda k: (k, None)).into_keyed().lookup_keyed_singleton(snap)
    asked.entries().map(lambda e: (e[0], e[1][1])).all_ticks().sink("out")
    return flow.finalize()


PROGRAMS = {"stream": program, "native-count": counted}


def refusal(prog: str, spark: SparkSession, tmp_path: Path, src: Path) -> str:
    """The message of the `BadDataError` that program `prog` fails with over `src`."""
    with FlowRunner(
        PROGRAMS[prog](), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"parquet:{src}"}
    ) as run:
        run.start()
        with pytest.raises(BadDataError) as info:
            run.process_all_available()
    return str(info.value)


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)


def test_nulls_where_the_type_allows_them_read_as_none(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    write(src / "good.parquet", [GOOD, GOOD | {"name": "b", "note": "n", "at": {"x": 2, "y": 5}}])
    with FlowRunner(program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"parquet:{src}"}) as run:
        run.start()
        run.process_all_available()
        assert sorted(run.memory("out").values()) == [
            Item("a", [1, 2], {"x": 1}, None, Point(1, None), [None, 3]),
            Item("b", [1, 2], {"x": 1}, "n", Point(2, 5), [None, 3]),
        ]


# the second row's change -> the field path and what the message says was expected
BAD: dict[str, tuple[dict[str, Any], str, str]] = {
    "top-level": ({"name": None}, "name", "expected str"),
    "list-item": ({"tags": [1, None]}, "tags[1]", "expected int"),
    "list-itself": ({"tags": None}, "tags", "expected list[int]"),
    "map-value": ({"attrs": [("x", 1), ("y", None)]}, "attrs['y']", "expected int"),
    "record-field": ({"at": {"x": None, "y": 1}}, "at.x", "expected int"),
    "record-itself": ({"at": None}, "at", "expected Point{x: int, y: int | None}"),
}


@pytest.mark.parametrize("prog", list(PROGRAMS))
@pytest.mark.parametrize("case", list(BAD))
def test_a_null_inside_a_record_names_its_path_and_row(
    case: str, prog: str, spark: SparkSession, tmp_path: Path
) -> None:
    change, field, expected = BAD[case]
    src = tmp_path / "in"
    src.mkdir()
    bad = src / "bad.parquet"
    write(bad, [GOOD, GOOD | change])
    msg = refusal(prog, spark, tmp_path, src)
    assert f"{bad}, row 2: field '{field}': {expected}, found null" in msg, msg
    assert "record: {" in msg and "fix: " in msg, msg


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_the_refused_row_is_found_in_the_right_file_of_the_batch(
    prog: str, spark: SparkSession, tmp_path: Path
) -> None:
    """With several files in one batch, the message names the file and row of the refused
    record (read from Spark's `_metadata` of that row), not another file's."""
    src = tmp_path / "in"
    src.mkdir()
    write(src / "a.parquet", [GOOD] * 3)
    write(src / "b.parquet", [GOOD, GOOD, GOOD | {"tags": [None]}, GOOD | {"name": None}])
    msg = refusal(prog, spark, tmp_path, src)
    assert f"{src / 'b.parquet'}, row 3: field 'tags[0]': expected int, found null" in msg or (
        f"{src / 'b.parquet'}, row 4: field 'name': expected str, found null" in msg
    ), msg  # either refused record may stop the batch first; its own file and row are named


@pytest.mark.parametrize(("prog", "reads_metadata"), [("stream", True), ("native-count", False)])
def test_the_scan_reads_file_metadata_only_where_a_reader_needs_it(
    prog: str, reads_metadata: bool, spark: SparkSession, tmp_path: Path
) -> None:
    """A streaming scan builds Spark's whole `_metadata` struct for every row once the plan
    references it; an input only Spark's aggregation reads leaves it out (and counts right)."""
    src = tmp_path / "in"
    src.mkdir()
    write(src / "a.parquet", [GOOD, GOOD | {"name": "b"}, GOOD | {"at": {"x": 5, "y": None}}])
    with FlowRunner(
        PROGRAMS[prog](), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"parquet:{src}"}
    ) as run:
        run.start()
        run.process_all_available()
        plan = "\n".join(str(q._jsq.explainInternal(False)) for q in spark.streams.active)
        got = sorted(run.memory("out").values())
    assert ("file_path" in plan) is reads_metadata, plan
    if prog == "native-count":
        assert got == [("a", 2), ("b", 1)]
    else:
        assert len(got) == 3
