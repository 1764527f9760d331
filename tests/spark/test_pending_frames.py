"""Pending frames (`values.SFrame`): chains of translated operators build one DataFrame.

Each DataFrame transformation costs a JVM analysis over Py4J, so translated `map` /
`filter` / `filter_map`, `entries` and `values` compose into one pending projection. These
tests check that (a) a chain composed that way holds exactly the elements, in the order, that
the operators' kernels give one step at a time, for keyed and ordered frames; (b) building it
costs one `select` (plus one `filter` when a step filters), not one per operator; and (c) the
running count's tick (the benchmark's program, native aggregation) builds one DataFrame per
batch (the sink's select over the batch: the aggregation is the query's only branch, so no
filter on `_src` either), not one per operator, and still answers what the simulator answers;
(d) its functions are translated in the first batch only (`reuse.py`), while (e) a function
whose global changed between batches is translated again, with the new value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import hydrolite as hl
from hydrolite import kernels
from hydrolite.planner.spark import lambdas, ops
from hydrolite.planner.spark.exec import BatchCtx
from hydrolite.planner.spark.lambdas import TExpr, translate
from hydrolite.planner.spark.port_api import collect_values, external_df
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.types import Prim
from hydrolite.planner.spark.values import SFrame, frame_of
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import run_once
from tests.spark.test_lambdas import _Names

pytestmark = pytest.mark.spark
INT, STR = Prim(int), Prim(str)


@contextmanager
def counted() -> Iterator[dict[str, int]]:
    """Count `select` / `filter` calls on (classic) DataFrames while the block runs."""
    from pyspark.sql.classic.dataframe import DataFrame as Classic

    calls = {"select": 0, "filter": 0}
    saved = {name: getattr(Classic, name) for name in calls}

    def counting(name: str) -> Any:
        def wrapped(self: DataFrame, *a: Any, **kw: Any) -> Any:
            calls[name] += 1
            return saved[name](self, *a, **kw)

        return wrapped

    try:
        for name in calls:
            setattr(Classic, name, counting(name))
        yield calls
    finally:
        for name, f in saved.items():
            setattr(Classic, name, f)


def native(kind: str, f: Callable[..., Any], sf: SFrame) -> SFrame:
    """One translated element-wise operator over `sf`, as `ops.apply_stream` applies it."""
    v = F.col("v") if kind == "flat_map" else sf.col("v")
    return ops._native(_Names(), kind, translate(f, [TExpr(v, sf.vt)]), sf)


KEYS = ["a", "b", "c", "d", "e", "f", "g"]
VALS = [5, -3, 12, 0, 7, 8, -1]


def test_a_keyed_chain_answers_like_the_kernels_with_one_select(spark: SparkSession) -> None:
    start = frame_of(spark, VALS, INT, KEYS, STR)  # ordered (_o0) and keyed
    start.df.count()  # built before counting
    with counted() as calls:
        sf = native("map", lambda x: x * 3, start)
        sf = native("filter", lambda x: x > 0, sf)
        sf = native("filter_map", lambda x: x - 1 if x % 2 == 0 else None, sf)
        sf = native("map", lambda x: (x, x + 1), sf)
        assert sf.df is not None
    assert calls == {"select": 1, "filter": 1}, calls
    step = kernels.map_values(lambda x: x * 3, VALS)
    pairs = list(zip(KEYS, step, strict=True))
    pairs = [(k, v) for k, v in pairs if v > 0]
    pairs = [(k, v - 1) for k, v in pairs if v % 2 == 0]
    assert collect_values(sf) == [(k, (v, v + 1)) for k, v in pairs]


def test_entries_values_and_a_sink_build_one_select(spark: SparkSession) -> None:
    start = frame_of(spark, VALS, INT, KEYS, STR, ordered=False)
    start.df.count()
    ctx: Any = BatchCtx.__new__(BatchCtx)  # entries / values read nothing of the context
    with counted() as calls:
        pairs = ops.entries(ctx, None, [native("map", lambda x: x + 100, start)])  # type: ignore[arg-type]
        assert isinstance(pairs, SFrame)
        swapped = native("map", lambda e: (e[1], e[0]), pairs)
        out = external_df(swapped)
    assert calls == {"select": 1, "filter": 0}, calls
    got = sorted((r["_1"], r["_2"]) for r in out.collect())
    assert got == sorted((v + 100, k) for k, v in zip(KEYS, VALS, strict=True))
    with counted() as calls:
        vals = ops.values(ctx, None, [native("filter", lambda x: x < 6, start)])  # type: ignore[arg-type]
        assert isinstance(vals, SFrame)
        got_vals = sorted(collect_values(vals))
    assert calls["select"] == 1 and calls["filter"] == 1, calls
    assert got_vals == sorted(v for v in VALS if v < 6)


def test_a_pending_frame_read_twice_gives_the_same_rows(spark: SparkSession) -> None:
    """Two readers of one pending frame (`df` and a sink's select) see the same elements."""
    sf = native("map", lambda x: x * x, frame_of(spark, VALS, INT))
    assert collect_values(sf) == [x * x for x in VALS]
    assert sorted(r["value"] for r in external_df(sf).collect()) == sorted(x * x for x in VALS)
    assert [r["v"] for r in sf.df.orderBy("_o0").collect()] == [x * x for x in VALS]


def test_the_running_count_builds_one_dataframe_per_batch(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.spark.test_native_state import BATCHES, _expected, _feed, _outputs, _program

    flow = _program(lambda s: s.count())
    runner = FlowRunner(
        flow,
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs={"event": _feed(tmp_path, BATCHES)},
        outputs={"out": f"json:{tmp_path / 'out'}"},
        keyed_state="executors",
    )
    per_batch: list[dict[str, int]] = []
    (stage,) = runner.stages
    orig, translate_now = stage._process, lambdas.translate

    def process(df: DataFrame, batch_id: int) -> None:
        with counted() as calls:
            orig(df, batch_id)
        per_batch.append(dict(calls) | {"translate": translations.pop("n", 0)})

    translations: dict[str, int] = {}

    def counting_translate(f: Any, args: Any) -> TExpr:
        translations["n"] = translations.get("n", 0) + 1
        return translate_now(f, args)

    monkeypatch.setattr(stage, "_process", process)
    monkeypatch.setattr(lambdas, "translate", counting_translate)
    run_once(runner)
    assert _outputs(tmp_path) == _expected(len, BATCHES)
    assert len(per_batch) == len(BATCHES), per_batch
    # the first batch translates the requests' map (native_state) and the sink's; the others
    # reuse their Columns (reuse.py)
    assert per_batch[0] == {"select": 1, "filter": 0, "translate": 2}, per_batch
    assert all(c == {"select": 1, "filter": 0, "translate": 0} for c in per_batch[1:]), per_batch
    assert verify_runner(runner).identical


OFFSET = 1


class Adder:
    """Tag."""


def test_a_changed_global_is_translated_again(spark: SparkSession, tmp_path: Path) -> None:
    """A translated function embeds its globals' values: reused Columns must not keep a
    value the global no longer has (the simulator and the Arrow path read it per call)."""
    global OFFSET
    flow = hl.FlowBuilder("offset")
    # unordered: the source's rows stay a pending frame, whose Columns are the same every batch
    flow.process(Adder).source("n", int).weaken_ordering().map(lambda v: v + OFFSET).sink("out")
    src = tmp_path / "in"
    src.mkdir()
    with FlowRunner(flow.finalize(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={"n": f"json:{src}"}) as run:
        run.start()
        try:
            (src / "0.json").write_text('{"value": 10}\n')
            run.process_all_available()
            OFFSET = 100
            (src / "1.json").write_text('{"value": 20}\n')
            run.process_all_available()
            (src / "2.json").write_text('{"value": 30}\n')
            run.process_all_available()
        finally:
            OFFSET = 1
        assert sorted(run.memory("out").values()) == [11, 120, 130]
        paths = {k: v for st in run.stages for k, v in st.progress.fn_paths.items()}
        assert set(paths.values()) == {"native"}, paths  # translated, not run in Python


def test_fields_of_structs_hydrolite_built_are_their_own_columns(spark: SparkSession) -> None:
    """`entries()` then `lambda e: (e[1], e[0][0] if ...)`: the composed expression holds no
    struct-of-struct field access (`reuse.field_of`), and answers what the kernels answer."""
    start = frame_of(spark, VALS, INT, KEYS, STR, ordered=False)
    ctx: Any = BatchCtx.__new__(BatchCtx)
    pairs = ops.entries(ctx, None, [start])  # type: ignore[arg-type]
    assert isinstance(pairs, SFrame)
    nested = native("map", lambda e: ((e[1], e[0]), e[1] * 2), pairs)
    out = native("map", lambda p: (p[0][1], p[1] + p[0][0]), nested)
    text = str(out.col("v"))
    assert "['" not in text, text  # no `struct(...)['_1']` left
    got = sorted((r["_1"], r["_2"]) for r in external_df(out).collect())
    assert got == sorted((k, v * 3) for k, v in zip(KEYS, VALS, strict=True))
