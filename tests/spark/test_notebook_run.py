"""A Spark run started and watched from a notebook (issue 15, item 5): `hydrolite.notebook.run`
on real Spark, what its handle shows, and docs/notebook.ipynb with its Spark cells in a real
kernel."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from examples import counter
from hydrolite import nondet, notebook
from hydrolite.input_feeds import InputError

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

INCREMENTS = [[("c1", None), ("c2", None)], [("c1", None)]]
QUERIES = [[("c1", None)], [("c1", None), ("c2", None)]]


def test_run_from_python_batches_then_show_progress_and_outputs(spark: SparkSession, tmp_path: Path) -> None:
    handle = notebook.run(
        counter.build,
        inputs={"increment": INCREMENTS, "query": QUERIES},
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
    )
    assert handle.status == "running"
    handle.wait(idle_seconds=1.0)
    assert handle.status == "stopped" and handle.error is None
    # batch 0: two increments, c1 asks (count 2); batch 1: one more, c1 and c2 ask (count 3)
    assert sorted(handle.outputs("query_response")) == [("c1", 2), ("c1", 3), ("c2", 3)]
    assert sorted(handle.outputs("increment_ack")) == [("c1", None), ("c1", None), ("c2", None)]
    (q,) = handle.progress()
    assert (q.name, q.batches, q.last_batch, q.rows) == ("tick0", 2, 1, 6)
    html = handle._repr_html_()
    assert "<b>hydrolite run</b> &#x27;counter&#x27;" in html and ">stopped</span>" in html
    row = '<td style="padding: 2px 8px; text-align: left; border-bottom: 1px solid #ddd">'
    assert f"{row}tick0</td>{row}2</td>{row}#1</td>" in html
    assert f"{row}6 (increment=3, query=3)</td>" in html
    assert "<b>query_response</b>: 3 values</summary>" in html and "<code>(&#x27;c1&#x27;, 2)</code>" in html
    assert "hydrolite run 'counter': stopped" in repr(handle)
    with pytest.raises(notebook.NotebookError, match=r"no sink 'nope'; the program's sinks are"):
        handle.outputs("nope")


def test_a_failed_run_shows_its_error(spark: SparkSession, tmp_path: Path) -> None:
    class P: ...

    fb = hl.FlowBuilder("divides")
    p = fb.process(P)
    p.source("xs", int).batch(p.tick(), nondet("any grouping")).map(lambda x: 10 // x).all_ticks().sink("out")
    handle = notebook.run(fb.finalize(), inputs={"xs": [[5, 0]]}, spark=spark, checkpoint=str(tmp_path / "ck"))
    with pytest.raises(Exception, match="ZeroDivisionError"):
        handle.wait(idle_seconds=1.0)
    assert handle.status == "failed" and "ZeroDivisionError" in str(handle.error)
    html = handle._repr_html_()
    assert ">failed</span>" in html and "ZeroDivisionError" in html.split("border-left: 3px solid #c92a2a")[1]


def test_misused_inputs_are_clear_errors(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(notebook.NotebookError, match=r"unknown ports \['incr'\]; 'counter' has sources"):
        notebook.run(counter.build, inputs={"incr": []}, spark=spark, checkpoint=str(tmp_path / "a"))
    with pytest.raises(InputError, match=r"batch 0 must be a list of elements, got \('c1', None\).*flat list"):
        notebook.run(counter.build, inputs={"increment": [("c1", None)]}, spark=spark, checkpoint=str(tmp_path / "b"))


def test_the_docs_notebook_runs_spark_in_a_real_kernel() -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "docs" / "notebook.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "docs")}}
    ).execute()
    spark_cells = [c for c in nb.cells if "spark" in c.metadata.get("tags", [])]
    run_cell, outputs_cell = spark_cells
    shown = [o for o in run_cell.outputs if o.output_type in ("display_data", "update_display_data")]
    assert shown and ">stopped</span>" in shown[-1]["data"]["text/html"]  # the live display, finally redrawn
    (result,) = [o for o in outputs_cell.outputs if o.output_type == "execute_result"]
    assert sorted(eval(result["data"]["text/plain"])) == [("c1", 2), ("c1", 3), ("c2", 3)]
