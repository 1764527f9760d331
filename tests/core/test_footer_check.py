"""What a Parquet footer shows about nulls (`footer_check`), against files pyarrow wrote.

The runtime lets a batch's files skip the in-scan null check only when `footer_shows` is
True, so every case where a null could hide (a null in a field, a missing record, a
missing column, statistics not written, a column named in another case, a remote path)
must answer False; those files then go through the in-scan check (tests/spark).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hydrolite.planner.spark.footer_check import NO_NULLS, ONLY_NULLS, footer_rules, footer_shows
from hydrolite.planner.spark.types import DictT, ListT, NoneT, OptT, Prim, RecordT, TupleT, from_python


class Point(NamedTuple):
    x: int
    y: str


POINT = pa.struct([("x", pa.int64()), ("y", pa.string())])


def write(tmp: Path, columns: dict[str, Any], schema: pa.Schema | None = None, **kw: Any) -> str:
    path = tmp / "f.parquet"
    table = pa.table(columns, schema=schema) if schema is not None else pa.table(columns)
    pq.write_table(table, path, row_group_size=2, **kw)
    return str(path)


def test_rules_of_the_types_footers_decide() -> None:
    assert footer_rules(Prim(int), Prim(str)) == {"key": NO_NULLS, "value": NO_NULLS}
    assert footer_rules(NoneT(), Prim(str)) == {"key": NO_NULLS, "value": ONLY_NULLS}
    assert footer_rules(OptT(Prim(int)), None) == {}
    rec = from_python(Point)
    assert isinstance(rec, RecordT)
    assert footer_rules(rec, None) == {"x": NO_NULLS, "y": NO_NULLS}  # a record's fields are its columns
    assert footer_rules(TupleT((Prim(int), rec)), Prim(str)) == {
        "key": NO_NULLS,
        "value._1": NO_NULLS,
        "value._2.x": NO_NULLS,
        "value._2.y": NO_NULLS,
    }


@pytest.mark.parametrize(
    "vt",
    [
        ListT(Prim(int)),
        DictT(Prim(str), Prim(int)),
        OptT(ListT(Prim(int))),
        TupleT((Prim(int), OptT(Prim(int)))),  # a null leaf: the field's, or the record's?
        TupleT((Prim(int), NoneT())),
    ],
    ids=lambda t: t.describe(),
)
def test_types_footers_cannot_decide_keep_the_scan_check(vt: Any) -> None:
    assert footer_rules(vt, Prim(str)) is None


def test_flat_columns(tmp_path: Path) -> None:
    rules = {"key": NO_NULLS, "value": NO_NULLS}
    assert footer_shows(write(tmp_path, {"key": ["a", "b", "c"], "value": [1, 2, 3]}), rules)
    assert not footer_shows(write(tmp_path, {"key": ["a", "b", "c"], "value": [1, None, 3]}), rules)
    assert not footer_shows(write(tmp_path, {"key": ["a", "b", "c"]}), rules)  # `value` missing
    assert not footer_shows(write(tmp_path, {"key": ["a"], "VALUE": [1]}), rules)  # Spark may match it
    good = write(tmp_path, {"key": ["a", "b", "c"], "value": [1, 2, 3]}, write_statistics=False)
    assert not footer_shows(good, rules)  # no null counts: not shown
    required = pa.schema([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.int64(), False)])
    good = write(tmp_path, {"key": ["a", "b", "c"], "value": [1, 2, 3]}, required, write_statistics=False)
    assert footer_shows(good, rules)  # `required` columns hold no null, statistics or not


def test_a_null_in_any_row_group(tmp_path: Path) -> None:
    rules = {"value": NO_NULLS}
    assert footer_shows(write(tmp_path, {"value": [1, 2, 3, 4, 5]}), rules)
    assert not footer_shows(write(tmp_path, {"value": [1, 2, 3, 4, None]}), rules)  # third row group


def test_records(tmp_path: Path) -> None:
    rules = {"at.x": NO_NULLS, "at.y": NO_NULLS}
    schema = pa.schema([("at", POINT)])
    assert footer_shows(write(tmp_path, {"at": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}]}, schema), rules)
    assert not footer_shows(write(tmp_path, {"at": [{"x": 1, "y": "a"}, None]}, schema), rules)  # the record
    assert not footer_shows(write(tmp_path, {"at": [{"x": 1, "y": "a"}, {"x": None, "y": "b"}]}, schema), rules)


def test_none_columns_hold_only_nulls_or_are_absent(tmp_path: Path) -> None:
    rules = {"key": NO_NULLS, "value": ONLY_NULLS}
    assert footer_shows(write(tmp_path, {"key": ["a", "b", "c"]}), rules)
    assert footer_shows(write(tmp_path, {"key": ["a", "b", "c"], "value": pa.array([None] * 3, pa.int64())}), rules)
    assert not footer_shows(write(tmp_path, {"key": ["a", "b", "c"], "value": [None, 1, None]}), rules)
    assert not footer_shows(write(tmp_path, {"key": ["a"], "Value": [1]}), rules)  # Spark may read it as `value`


def test_what_is_not_a_local_file_is_not_shown(tmp_path: Path) -> None:
    path = write(tmp_path, {"value": [1]})
    assert footer_shows(f"file://{path}", {"value": NO_NULLS})
    assert not footer_shows(f"hdfs://nn{path}", {"value": NO_NULLS})
    assert not footer_shows(str(tmp_path / "missing.parquet"), {"value": NO_NULLS})
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    assert not footer_shows(str(tmp_path / "broken.parquet"), {"value": NO_NULLS})
