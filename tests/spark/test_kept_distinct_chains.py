"""Chains through a *stateful* `unique()` or `keys()` feed executor state and ask it per key
(`region.Chain.kept`, `keyed_processor.first_occurrences` with the group's `MapState`).

"Distinct values per key" — `ks.unique().count()` — is a fold of a stateful operator's
output: Spark cannot chain a second stateful operator after `transformWithState`, so the
count's processor keeps, per key, the values that key already passed on, and counts only the
others. The same holds for a fold keyed by a function of the distinct element
(`xs.unique().map(...).into_keyed().fold(...)`, in order of first occurrence), for requests
that pass through a stateful `keys()` (each key asks once ever) and for a `unique()` of
another's output. Each must answer what Python computes, what the driver path answers and
what the simulator's replay gives, also across a crash inside a batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.upgrade import PlanChangedError
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import feeds, json_batches, run_once

pytestmark = pytest.mark.spark

ND = nondet("test: Spark's micro-batches are the batches")
XS = [[3, 3, 7, 4, 7], [7, 10, 3, 5], [1, 4, 4, 11], [13, 1, 10]]
KS = [[("a", 1), ("b", 2), ("a", 1)], [("a", 4), ("c", 5), ("c", 5), ("a", 1)], [("b", 2)], [("a", 9), ("d", 1)]]
MORE = {"xs": [[2, 13, 6]], "ks": [[("b", 3), ("e", 1), ("a", 9)]]}
PORTS = ("sums", "first_seen", "halves")


class P:
    """Tag of the process."""


def _program(read_pairs: bool = False) -> hl.Flow:
    flow = hl.FlowBuilder("kept_distinct")
    p = flow.process(P)
    t = p.tick()
    al = p.local_align_point()
    xs = p.source("xs", int)
    ks = p.keyed_source("ks", str, int)
    pairs = ks.unique()
    distinct = pairs.count()  # distinct values per key
    sums = xs.unique().map(lambda x: (x % 3, x)).into_keyed().fold(0, lambda a, x: a * 2 + x)  # (ordered)
    sums.snapshot_aligned(t, al, ND).entries().all_ticks().sink("sums")
    firsts = ks.keys().batch_aligned(t, al, ND).map(lambda k: (k, 0)).into_keyed()  # a key's first batch
    firsts.lookup_keyed_singleton(distinct.snapshot_aligned(t, al, ND)).entries().all_ticks().sink("first_seen")
    xs.unique().map(lambda x: x // 2).unique().sink("halves")
    xs.release_aligned(al).sink("ack_x")
    ks.release_aligned(al).sink("ack_k")
    if read_pairs:  # (a later version reading the distinct pairs themselves)
        pairs.entries().sink("pairs")
    return flow.finalize()


def _run(
    spark: SparkSession,
    d: Path,
    keyed_state: str,
    fault: Any = None,
    steps: dict[str, Any] | None = None,
    read_pairs: bool = False,
) -> tuple[FlowRunner, dict[str, dict[int, list[Any]]]]:
    """Run on the feeds under `d`, first appended `steps` (default: XS and KS)."""
    steps = steps or {"xs": XS, "ks": KS}
    runner = FlowRunner(
        _program(read_pairs),
        spark=spark,
        checkpoint=str(d / "ck"),
        inputs=feeds(d, {"xs": (int, None, steps["xs"]), "ks": (int, str, steps["ks"])}),
        outputs={p: f"json:{d / p}_out" for p in (*PORTS, "ack_x", "ack_k", *(["pairs"] if read_pairs else []))},
        keyed_state=keyed_state,
        fault=fault,
    )
    run_once(runner)
    return runner, {p: {b: sorted(v) for b, v in json_batches(d / f"{p}_out").items() if v} for p in PORTS}


def _expected(xs: list[list[int]], ks: list[list[tuple[str, int]]]) -> dict[str, dict[int, list[Any]]]:
    """Per batch: every key's fold of the distinct xs so far (in order of first occurrence);
    for each key seen for the first time, its number of distinct values so far; the values
    x // 2 of the distinct xs that are new."""
    want: dict[str, dict[int, list[Any]]] = {p: {} for p in PORTS}
    seen_x: list[int] = []
    seen_kv: set[tuple[str, int]] = set()
    seen_k: set[str] = set()
    halves: set[int] = set()
    for b, (xb, kb) in enumerate(zip(xs, ks, strict=True)):
        new_x = [x for x in dict.fromkeys(xb) if x not in seen_x]
        seen_x += new_x
        sums: dict[int, int] = {}
        for x in seen_x:
            sums[x % 3] = sums.get(x % 3, 0) * 2 + x
        want["sums"][b] = sorted(sums.items())
        seen_kv |= set(kb)
        new_k = [k for k in dict.fromkeys(k for k, _ in kb) if k not in seen_k]
        seen_k |= set(new_k)
        firsts = sorted((k, (0, sum(1 for key, _ in seen_kv if key == k))) for k in new_k)
        new_h = sorted({x // 2 for x in new_x} - halves)
        halves |= set(new_h)
        for port, rows in (("first_seen", firsts), ("halves", new_h)):
            if rows:
                want[port][b] = rows
    return want


def test_states_fed_through_a_stateful_distinct_step_stay_per_key_on_the_executors(
    spark: SparkSession, tmp_path: Path
) -> None:
    runner, got = _run(spark, tmp_path / "executors", "executors")
    placed = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
    kept = [p for p in placed if "Spark's MapState" in p.why and not p.absorbed]
    assert sorted(p.node.op for p in kept) == ["count", "fold", "unique"], [p.describe() for p in placed]
    # the distinct steps only those chains read keep no state of their own (kept_steps.py)
    absorbed = sorted(p.node.op for p in placed if p.absorbed)
    assert absorbed == ["keys", "unique", "unique", "unique"], [p.describe() for p in placed]
    assert all(p.executors and not p.native for p in placed), [p.describe() for p in placed]
    assert got == _expected(XS, KS)
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _, on_driver = _run(spark, tmp_path / "driver", "driver")
    assert on_driver == got
    # a later version reading the absorbed unique() itself would need the state it never kept
    with pytest.raises(PlanChangedError) as err:
        FlowRunner(_program(read_pairs=True), spark=spark, checkpoint=str(tmp_path / "executors" / "ck"), inputs={})
    text = str(err.value)
    assert "lives only with the states it feeds (none of its own)" in text and "--reset-state unique@" in text, text


def test_a_distinct_step_whose_checkpoint_holds_its_own_state_keeps_it_on_resume(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A version that also read `ks.unique()` itself (Spark's own count of the pairs), resumed
    by one where only the count's chain reads it. Spark cannot drop that aggregation from a
    query with committed batches: under `auto` the checkpoint's count stays (not absorbed,
    `kept_homes.py`) and the answers go on; `--keyed-state executors` would absorb it and is
    refused before anything runs, saying why."""
    first, _ = _run(spark, tmp_path, "executors", steps={"xs": XS[:2], "ks": KS[:2]}, read_pairs=True)
    (own,) = [p for p in _placed(first) if p.node.op == "unique" and p.node.meta.kind.keyed]  # (ks.unique())
    assert own.native and not own.absorbed, own.describe()
    with pytest.raises(PlanChangedError, match="native streaming aggregations would change"):
        FlowRunner(_program(), spark=spark, checkpoint=str(tmp_path / "ck"), inputs={}, keyed_state="executors")
    runner, got = _run(spark, tmp_path, "auto", steps={"xs": XS[2:], "ks": KS[2:]})
    (now,) = [p for p in _placed(runner) if p.node.op == "unique" and p.node.meta.kind.keyed]
    assert now.native and not now.absorbed, now.describe()
    assert got == _expected(XS, KS)


def _placed(runner: FlowRunner) -> list[Any]:
    return [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]


def test_a_crash_inside_a_batch_neither_repeats_nor_forgets_a_distinct_element(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A crash in batch 1 after the sinks wrote, before Spark committed it: the restart runs
    batch 1 again from the state before it (the marks roll back with Spark's state), then more
    input: no element counted twice, none forgotten."""
    fault = CrashOnce("after_sinks", batch=1)
    with pytest.raises(Exception, match="crash at"):
        _run(spark, tmp_path, "executors", fault=fault)
    assert fault.fired == [1]
    runner, got = _run(spark, tmp_path, "executors", steps=MORE)
    want = _expected(XS + MORE["xs"], KS + MORE["ks"])
    assert got == want
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


JXS = [[3, 4, 3], [5, 9], [], [10, 4]]
JYS = [[6, 1], [4, 9, 2], [7], [13]]
JOINED = ("distinct_pairs", "join_keys", "keyed_pairs")


def _joined_program() -> hl.Flow:
    flow = hl.FlowBuilder("joined_distinct")
    p = flow.process(P)
    xs, ys = p.source("xs", int), p.source("ys", int)
    pairs = xs.map(lambda x: (x % 3, x % 2)).join(ys.map(lambda y: (y % 3, y % 4)))  # (repeated pairs)
    pairs.unique().sink("distinct_pairs")
    pairs.into_keyed().keys().sink("join_keys")
    pairs.into_keyed().unique().entries().sink("keyed_pairs")
    return flow.finalize()


def _joined_expected() -> dict[str, dict[int, list[Any]]]:
    """Per batch, the join's new pairs (each new element meets the other side so far) that
    were never seen before, as pairs (twice: unkeyed and keyed) and as their join keys."""
    left: list[tuple[int, int]] = []
    right: list[tuple[int, int]] = []
    seen: set[Any] = set()
    want: dict[str, dict[int, list[Any]]] = {p: {} for p in JOINED}
    for b, (xb, yb) in enumerate(zip(JXS, JYS, strict=True)):
        new_l, new_r = [(x % 3, x % 2) for x in xb], [(y % 3, y % 4) for y in yb]
        pairs = [(k, (a, c)) for k, a in new_l for k2, c in right + new_r if k == k2]
        pairs += [(k, (a, c)) for k, a in left for k2, c in new_r if k == k2]
        left, right = left + new_l, right + new_r
        keys_before = {k for k, _ in seen}
        fresh = sorted(set(pairs) - seen)
        seen |= set(pairs)
        if fresh:
            want["distinct_pairs"][b] = want["keyed_pairs"][b] = fresh
        if keys := sorted({k for k, _ in fresh} - keys_before):
            want["join_keys"][b] = keys
    return want


def test_what_a_joins_pairs_saw_is_kept_by_the_join_per_key(spark: SparkSession, tmp_path: Path) -> None:
    """`unique()` / `keys()` of the pairs of a join kept per key (`ExecutorSeen.joined`): the
    join's processor keeps, per join key, the elements it passed on; the same answers as
    Python, the driver path and the simulator's replay."""
    got = {}
    for keyed_state in ("executors", "driver"):
        d = tmp_path / keyed_state
        runner = FlowRunner(
            _joined_program(),
            spark=spark,
            checkpoint=str(d / "ck"),
            inputs=feeds(d, {"xs": (int, None, JXS), "ys": (int, None, JYS)}),
            outputs={p: f"json:{d / p}_out" for p in JOINED},
            keyed_state=keyed_state,
        )
        run_once(runner)
        got[keyed_state] = {p: {b: sorted(v) for b, v in json_batches(d / f"{p}_out").items() if v} for p in JOINED}
        if keyed_state == "executors":
            placed = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
            seen = [p for p in placed if p.node.op in ("unique", "keys")]
            assert len(seen) == 3 and all(p.executors and "kept by join()" in p.why for p in seen), placed
            report = verify_runner(runner)
            assert report.identical and report.outputs > 0, str(report)
    assert got["executors"] == _joined_expected()
    assert got["driver"] == got["executors"]
