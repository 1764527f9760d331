"""Parquet inputs whose nulls the footers decide are checked per batch from their files'
footers (footer_check.py), not in the scan: the streaming plan holds no check, a file the
footer cannot vouch for is checked by a batch read before the batch computes anything, and
a bad record is refused with the same message (file, row, field) as by the in-scan check.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite.planner.spark.errors import BadDataError
from hydrolite.planner.spark.runtime import FlowRunner

pytestmark = pytest.mark.spark


class P:
    """Tag."""


class Reading(NamedTuple):
    sensor: str
    value: int


def program() -> hl.Flow:
    flow = hl.FlowBuilder("footers")
    flow.process(P).source("p", Reading).map(lambda r: (r.sensor, r.value * 10)).sink("out")
    return flow.finalize()


def listed_program() -> hl.Flow:
    """A type the footers cannot decide (a list): the check stays in the scan."""
    flow = hl.FlowBuilder("in_scan")
    flow.process(P).keyed_source("p", str, list[int]).entries().sink("out")
    return flow.finalize()


def plan_of(spark: SparkSession) -> str:
    return "\n".join(str(q._jsq.explainInternal(False)) for q in spark.streams.active)


def write(path: Path, sensors: list[str | None], values: list[int | None], stats: bool = True) -> None:
    table = pa.table({"sensor": pa.array(sensors, pa.string()), "value": pa.array(values, pa.int64())})
    pq.write_table(table, path, write_statistics=stats)


def test_the_plan_holds_no_null_check_and_good_files_pass(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    write(src / "a.parquet", ["s1", "s2"], [1, 2])
    write(src / "b.parquet", ["s3"], [3], stats=False)  # no null counts: checked by a batch read, passes
    with FlowRunner(program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"parquet:{src}"}) as run:
        run.start()
        run.process_all_available()
        plan = plan_of(spark)
        assert sorted(run.memory("out").values()) == [("s1", 10), ("s2", 20), ("s3", 30)]
    assert "raise_error" not in plan and "found null" not in plan, plan


def test_the_scan_keeps_the_check_for_types_footers_cannot_decide(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    table = pa.table({"key": ["a"], "value": pa.array([[1, 2]], pa.list_(pa.int64()))})
    pq.write_table(table, src / "a.parquet")
    with FlowRunner(
        listed_program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"parquet:{src}"}
    ) as run:
        run.start()
        run.process_all_available()
        plan = plan_of(spark)
        assert run.memory("out").values() == [("a", [1, 2])]
    assert "raise_error" in plan, plan


@pytest.mark.parametrize("stats", [True, False], ids=["footer-shows-a-null", "no-statistics"])
def test_a_null_fails_its_batch_before_any_output_naming_file_and_row(
    stats: bool, spark: SparkSession, tmp_path: Path
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    write(src / "a.parquet", ["s1"], [1])
    with FlowRunner(program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"parquet:{src}"}) as run:
        run.start()
        run.process_all_available()
        bad = src / "b.parquet"
        write(bad, ["s2", "s3", "s4"], [2, None, 4], stats=stats)
        with pytest.raises(BadDataError) as info:
            run.process_all_available()
        assert run.memory("out").values() == [("s1", 10)]  # nothing of the refused batch
    msg = str(info.value)
    assert "input 'p' (parquet files in" in msg and "(batch 1 of query " in msg, msg
    assert f"{bad}, row 2: field 'value': expected int, found null" in msg, msg
    assert '"sensor":"s3"' in msg and "fix: " in msg, msg


def test_a_missing_column_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    bad = src / "a.parquet"
    pq.write_table(pa.table({"sensor": ["s1"]}), bad)
    with FlowRunner(program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"p": f"parquet:{src}"}) as run:
        run.start()
        with pytest.raises(BadDataError) as info:
            run.process_all_available()
    msg = str(info.value)
    assert f"{bad}, row 1: field 'value': expected int, found null (or no such column)" in msg, msg
