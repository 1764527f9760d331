"""Keys equal in Python are one key on the executors (`planner/spark/grouping.py`).

A user's function may give one key in several forms: `1`, `1.0` and `True`, `0.0` and
`-0.0`, an int where the key type says float. The simulator's dicts hold them as one key;
the executor path used to group by the pickled bytes of the key as the function returned it,
so each form got a part of the state and the answers differed from the simulator's without
any error. Each state here must answer what Python's dicts answer, what the driver path
answers and what the simulator's replay gives; a checkpoint written under the old grouping
is refused instead of resumed with its keys unfound.
"""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import hydrolite as hl
from hydrolite import nondet
from hydrolite.planner.spark.grouping import GROUPING
from hydrolite.planner.spark.placement import place_all
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.stages import Plan, plan_flow
from hydrolite.planner.spark.upgrade import PLAN_FILE, PlanChangedError, reconcile
from hydrolite.planner.spark.verify import verify_runner
from tests.spark.runs import feeds, json_batches, run_once, run_to_json

pytestmark = pytest.mark.spark

ND = nondet("test: Spark's micro-batches are the batches")
FORMS: list[float] = [-0.0, 1, 1.0, True, 0.0, 2]  # x % 6 -> the key's form: two keys, 0 and 1, and 2
XS = [[1, 2, 3, 4, 5, 6, 7], [12, 11, 10, 9, 8], [6, 1, 3]]
PORTS = ("folds", "distinct", "values_per_key")


class P:
    """Tag of the process."""


def key_of(x: int) -> tuple[float, int]:
    """The element keyed by one of the forms of its key."""
    return FORMS[x % 6], x


def form_of(x: int) -> float:
    return FORMS[x % 6]


def parity(x: int) -> float:
    """x % 2 in two forms each: 1.0 or True, 0 or -0.0."""
    if x % 2:
        return 1.0 if x % 4 == 1 else True
    return 0 if x % 4 == 0 else -0.0


def _program() -> hl.Flow:
    flow = hl.FlowBuilder("key_grouping")
    p = flow.process(P)
    t = p.tick()
    al = p.local_align_point()
    xs = p.source("xs", int)
    ks = xs.map(key_of).into_keyed()
    ks.fold(0, lambda a, x: a * 2 + x).snapshot_aligned(t, al, ND).entries().all_ticks().sink("folds")
    xs.map(form_of).unique().sink("distinct")
    per_key = ks.map(parity).unique().count()  # (one distinct value per parity, in two forms each)
    per_key.snapshot_aligned(t, al, ND).entries().all_ticks().sink("values_per_key")
    xs.release_aligned(al).sink("ack")
    return flow.finalize()


def _run(spark: SparkSession, d: Path, keyed_state: str) -> tuple[FlowRunner, dict[str, dict[int, list[Any]]]]:
    return run_to_json(spark, _program(), d, {"xs": (int, None, XS)}, PORTS, keyed_state, acks=("ack",))


def _expected() -> dict[str, dict[int, list[Any]]]:
    """What Python's dicts answer: per batch every key's fold so far, the new distinct forms,
    every key's number of distinct value parities so far."""
    want: dict[str, dict[int, list[Any]]] = {p: {} for p in PORTS}
    folds: dict[float, int] = {}
    seen: set[float] = set()
    parities: dict[float, set[float]] = {}
    for b, batch in enumerate(XS):
        new = []
        for x in batch:
            k, _ = key_of(x)
            folds[k] = folds.get(k, 0) * 2 + x
            parities.setdefault(k, set()).add(parity(x))
            if form_of(x) not in seen:
                seen.add(form_of(x))
                new.append(form_of(x))
        want["folds"][b] = sorted(folds.items())
        want["values_per_key"][b] = sorted((k, len(v)) for k, v in parities.items())
        if new:
            want["distinct"][b] = sorted(new)
    return want


def test_keys_equal_in_python_are_one_key_on_the_executors(spark: SparkSession, tmp_path: Path) -> None:
    runner, got = _run(spark, tmp_path / "executors", "executors")
    placed = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
    assert all(p.executors for p in placed) and len(placed) >= 3, [p.describe() for p in placed]
    want = _expected()
    assert len(want["folds"][0]) == 3  # (the forms make three keys: 0, 1 and 2)
    assert got == want
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
    _, on_driver = _run(spark, tmp_path / "driver", "driver")
    assert on_driver == got


def test_a_checkpoint_grouped_by_pickled_bytes_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    """A record without `key_grouping` (hydrolite before it) kept equal keys apart on the
    executors, and one of "python-eq-1" pickled each key with pickle's memo (a key holding a
    string has other bytes now): resuming either would look its keys up under other bytes.
    Refused, unless the executor states are reset; a checkpoint with its state on the driver
    resumes (its store re-indexes its keys: test_driver_index_is_rebuilt_for_a_new_grouping)."""
    for keyed_state in ("executors", "driver"):
        d = tmp_path / keyed_state
        _run(spark, d, keyed_state)
        record = json.loads((d / "ck" / PLAN_FILE).read_text())
        assert record["key_grouping"] == GROUPING
        for was, says in ((None, "was grouped by each key's pickled bytes"), ("python-eq-1", "grouped by python-eq-1")):
            if was is None:
                del record["key_grouping"]
            else:
                record["key_grouping"] = was
            (d / "ck" / PLAN_FILE).write_text(json.dumps(record))
            recon = reconcile(_placed(keyed_state), str(d / "ck"))
            if keyed_state == "driver":
                assert not recon.refused, recon.render()
                continue
            text = recon.render()
            assert recon.refused and says in text, text
            assert "fold@test_key_grouping.py" in text and "start a new --checkpoint" in text, text
            with pytest.raises(PlanChangedError):
                FlowRunner(_program(), spark=spark, checkpoint=str(d / "ck"), inputs={}, keyed_state="executors")
            states = [s for q in record["queries"].values() for s in q["state"].values() if s["home"] == "executors"]
            resets = [f"{s['op']}@{s['at']}" for s in states]
            assert not reconcile(_placed(keyed_state), str(d / "ck"), resets).refused


def _placed(keyed_state: str) -> Plan:
    plan = plan_flow(_program())
    place_all(plan, keyed_state, "local[2]")
    return plan


OPAQUE_FORMS = {1: 1, 2: True, 3: "c", 4: 1.0, 5: "c", 6: 2}


def opaque_key(x):  # type: ignore[no-untyped-def]  # (no annotation, and 0 fails: the key type is unknown)
    return (OPAQUE_FORMS[x], x)


@pytest.mark.parametrize("over_time", ["carried", "per_tick", "per_tick_count"])
def test_keys_of_an_unknown_type_are_one_key_in_a_batch_on_the_driver(
    spark: SparkSession, tmp_path: Path, over_time: str
) -> None:
    """Keys of a type hydrolite does not know are pickled, and Spark compares those bytes: `1`
    and `True` were two keys to a `groupBy` and one to the simulator. The driver path groups
    them by Python's equality (`by_value.py`), each key shown in the form that came first: a
    fold over time, and a fold of one batch inside a tick (in Python, and a count Spark
    computes). (Before, it refused such a batch with a clear error.)"""
    flow = hl.FlowBuilder("opaque_keys")
    p = flow.process(P)
    t, al = p.tick(), p.local_align_point()
    xs = p.source("xs", int)
    if over_time == "carried":
        sums = xs.map(opaque_key).into_keyed().fold(0, lambda a, x: a * 2 + x)
        sums.snapshot_aligned(t, al, ND).entries().all_ticks().sink("sums")
    else:
        batch = xs.batch_aligned(t, al, ND)
        if over_time == "per_tick":
            per_tick = batch.map(opaque_key).into_keyed().fold(0, lambda a, x: a * 2 + x)
        else:
            per_tick = batch.map(opaque_key).into_keyed().count()
        per_tick.entries().all_ticks().sink("sums")
    xs.release_aligned(al).sink("ack")
    runner = FlowRunner(
        flow.finalize(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs=feeds(tmp_path, {"xs": (int, None, [[3, 1, 2], [4, 2]])}),
        outputs={"sums": f"json:{tmp_path / 'sums'}", "ack": f"json:{tmp_path / 'ack'}"},
        keyed_state="driver",
    )
    run_once(runner)
    got = {b: sorted(map(repr, map(_unpickled, v))) for b, v in json_batches(tmp_path / "sums").items() if v}
    # 1, then True (2), then 1.0 (4) are one key, shown as 1; 'c' (3) is another
    want = {
        "carried": {0: ["('c', 3)", "(1, 4)"], 1: ["('c', 3)", "(1, 26)"]},  # (1*2+2 = 4; 4*2+4 = 12, 12*2+2)
        "per_tick": {0: ["('c', 3)", "(1, 4)"], 1: ["(1.0, 10)"]},  # (a batch's first form: 1.0 in the second)
        "per_tick_count": {0: ["('c', 1)", "(1, 2)"], 1: ["(1.0, 2)"]},
    }[over_time]
    assert got == want
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


def opaque_form(x):  # type: ignore[no-untyped-def]  # (an element of a type hydrolite does not know)
    return OPAQUE_FORMS[x]


# the elements of each batch, and what each port shows per batch (reprs, sorted), per path (the
# same on both: two forms of one key meet in one batch, `1.0` and `True` in the second)
FIRST_FORMS: dict[str, tuple[list[list[int]], dict[str, dict[int, list[str]]]]] = {
    "executors": (
        [[1, 3], [2, 4, 5], [6, 1]],
        {
            "sums": {0: ["('c', 3)", "(1, 1)"], 1: ["('c', 8)", "(1, 7)"], 2: ["('c', 8)", "(1, 8)", "(2, 6)"]},
            "asked": {
                0: ["('c', (3, 1))", "(1, (1, 1))"],
                1: ["('c', (5, 2))", "(1.0, (4, 3))", "(True, (2, 3))"],
                2: ["(1, (1, 4))", "(2, (6, 1))"],
            },
            "indexed": {
                0: ["('c', (0, 3))", "(1, (0, 1))"],
                1: ["('c', (1, 5))", "(1.0, (2, 4))", "(True, (1, 2))"],
                2: ["(1, (3, 1))", "(2, (0, 6))"],
            },
            "distinct": {0: ["'c'", "1"], 2: ["2"]},
        },
    ),
}
FIRST_FORMS["driver"] = FIRST_FORMS["executors"]  # (the same answers: the simulator's)


@pytest.mark.parametrize("keyed_state", list(FIRST_FORMS))
def test_keys_of_an_unknown_type_are_one_key_across_batches(
    spark: SparkSession, tmp_path: Path, keyed_state: str
) -> None:
    """Such keys group as Python compares them from one batch to the next, on the executors
    and in the driver's store (`BatchState(by_value=True)`), and each output shows a key in the
    form the simulator shows: a state's entries in the form the key first came in (its dict
    keeps it), a lookup's and an `enumerate()`'s in the element's own form; an element equal
    to one seen in an earlier batch is not new to `unique()`."""
    steps, want = FIRST_FORMS[keyed_state]
    want = {**want, "numbered": want["sums"]}
    flow = hl.FlowBuilder("opaque_forms")
    p = flow.process(P)
    t, al = p.tick(), p.local_align_point()
    xs = p.source("xs", int)
    ks = xs.map(opaque_key).into_keyed()
    ks.fold(0, lambda a, x: a + x).snapshot_aligned(t, al, ND).entries().all_ticks().sink("sums")
    ks.batch_aligned(t, al, ND).lookup_keyed_singleton(
        ks.count().snapshot_aligned(t, al, ND)
    ).entries().all_ticks().sink("asked")
    ks.enumerate().entries().sink("indexed")
    # a fold kept with the enumerate on the executors (`kept_with.py`): the same sums, keys in their first form
    numbered = ks.enumerate().map(lambda iv: iv[1]).fold(0, lambda a, x: a + x)
    numbered.snapshot_aligned(t, al, ND).entries().all_ticks().sink("numbered")
    xs.map(opaque_form).unique().sink("distinct")
    xs.release_aligned(al).sink("ack")
    runner = FlowRunner(
        flow.finalize(),
        spark=spark,
        checkpoint=str(tmp_path / "ck"),
        inputs=feeds(tmp_path, {"xs": (int, None, steps)}),
        outputs={port: f"json:{tmp_path / port}" for port in (*want, "ack")},
        keyed_state=keyed_state,
    )
    run_once(runner)
    got = {
        port: {b: sorted(map(repr, map(_unpickled, v))) for b, v in json_batches(tmp_path / port).items() if v}
        for port in want
    }
    assert got == want
    if keyed_state == "executors":
        placed = [p for st in runner.plan.stages if st.placement is not None for p in st.placement.placements]
        assert any("folded by enumerate()" in p.why for p in placed), [p.describe() for p in placed]
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


def _unpickled(x: Any) -> Any:
    """A JSON sink's element with its pickled (base64) parts loaded."""
    if isinstance(x, str):
        return pickle.loads(base64.b64decode(x))
    if isinstance(x, (list, tuple)):
        return tuple(
            _unpickled(i) if isinstance(i, str) else i if not isinstance(i, (list, tuple)) else _unpickled(i) for i in x
        )
    return x


def request_form(x):  # type: ignore[no-untyped-def]  # (unannotated: its keys stay pickled, in their forms)
    return (0 if x < 10 else 0.0, x)


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
def test_requests_equal_in_python_each_get_their_answer(spark: SparkSession, tmp_path: Path, keyed_state: str) -> None:
    """Two requests in one batch whose keys are equal in Python but in two forms (`0` and
    `0.0`, pickled apart) each get the state's answer, in its own form. On the driver path the
    requests were gathered in a dict, which kept one form: the other request found no answer,
    silently (the differential test's type-strict comparison found it)."""
    flow = hl.FlowBuilder("request_forms")
    p = flow.process(P)
    t = p.tick()
    table = p.source("xs", int).map(lambda x: (x % 2, x)).into_keyed().fold_commutative(0, lambda a, x: a + x)
    asks = p.source("asks", int).batch(t, ND).map(request_form).into_keyed()
    looked = asks.lookup_keyed_singleton(table.snapshot(t, ND)).entries()
    looked.map(lambda e: f"{e[0]!r}:{e[1][0]}:{e[1][1]}").all_ticks().sink("looked")
    entries = {"xs": (int, None, [[2, 4, 5]]), "asks": (int, None, [[3, 12]])}
    runner, got = run_to_json(spark, flow.finalize(), tmp_path, entries, ("looked",), keyed_state)
    assert got == {"looked": {0: ["0.0:12:6", "0:3:6"]}}
    report = verify_runner(runner)
    assert report.identical, str(report)


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
def test_a_join_pair_carries_its_left_elements_key(spark: SparkSession, tmp_path: Path, keyed_state: str) -> None:
    """Float keys on the left, int keys on the right, the right side arriving a batch later:
    each pair carries the left element's key as it holds it (`1.0`), on both backends — the
    executors' join emitted the form of the rows its batch brought (`1`), and before this
    session the simulator gave the key of the side that arrived last."""
    flow = hl.FlowBuilder("join_key_forms")
    p = flow.process(P)
    left = p.source("xs", int).map(lambda x: (float(x % 2), x))
    right = p.source("ys", int).map(lambda y: (y % 2, y))
    left.join(right).map(lambda t: f"{t[0]!r}:{t[1]}").sink("joined")
    entries = {"xs": (int, None, [[1, 2], []]), "ys": (int, None, [[], [3, 4]])}
    runner, got = run_to_json(spark, flow.finalize(), tmp_path, entries, ("joined",), keyed_state)
    assert got == {"joined": {1: ["0.0:(2, 4)", "1.0:(1, 3)"]}}
    if keyed_state == "executors":
        placed = [p for st in runner.plan.stages if st.placement for p in st.placement.placements]
        assert any(p.node.op == "join" and p.executors for p in placed), placed
    report = verify_runner(runner)
    assert report.identical, str(report)


TICK_FORMS: list[object] = [1, True, 1.0, "c", 0, -0.0]


def tick_form(x: int) -> object:  # (`-> object`: pickled, each form as it is)
    return TICK_FORMS[x]


def tick_pair(x: int) -> tuple[object, int]:
    return (TICK_FORMS[x], x)


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
@pytest.mark.parametrize("op", ["unique", "keys", "enumerate"])
def test_a_ticks_distinct_elements_are_distinct_in_python(
    spark: SparkSession, tmp_path: Path, keyed_state: str, op: str
) -> None:
    """Inside a tick, a `unique()` of pickled elements and a keyed stream's `keys()` pass each
    element (key) equal in Python once, in the form that came first, and a keyed `enumerate()`
    numbers a key's forms as one key. Before, Spark's `distinct` and window compared the
    pickles: `1`, `True` and `1.0` came out three times, silently."""
    flow = hl.FlowBuilder(f"tick_forms_{op}")
    p = flow.process(P)
    t = p.tick()
    xs = p.source("xs", int).batch(t, ND)
    if op == "unique":
        out = xs.map(tick_form).unique().map(repr)
    elif op == "keys":
        out = xs.map(tick_pair).into_keyed().keys().map(repr)
    else:
        out = xs.map(tick_pair).into_keyed().enumerate().entries().map(repr)
    out.all_ticks().sink("out")
    entries = {"xs": (int, None, [[0, 1, 3, 2, 4, 5], [2, 1, 5]])}
    runner, got = run_to_json(spark, flow.finalize(), tmp_path, entries, ("out",), keyed_state)
    want = {
        "unique": {0: ["'c'", "0", "1"], 1: ["-0.0", "1.0"]},
        "keys": {0: ["'c'", "0", "1"], 1: ["-0.0", "1.0"]},
        "enumerate": {
            0: ["('c', (0, 3))", "(-0.0, (1, 5))", "(0, (0, 4))", "(1, (0, 0))", "(1.0, (2, 2))", "(True, (1, 1))"],
            1: ["(-0.0, (0, 5))", "(1.0, (0, 2))", "(True, (1, 1))"],
        },
    }[op]
    assert got == {"out": want}
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
@pytest.mark.parametrize("over_time", [False, True])
def test_get_finds_a_pickled_key_in_any_equal_form(
    spark: SparkSession, tmp_path: Path, keyed_state: str, over_time: bool
) -> None:
    """`table.get(key)` of a table whose keys are pickled finds the key in a form other than
    the one it is stored in (`True` for `1`), as a Python dict does: in a tick's own table (a
    frame; before, compared by bytes and missed, silently) and in a state kept over time."""
    flow = hl.FlowBuilder(f"get_forms_{over_time}")
    p = flow.process(P)
    t = p.tick()
    xs = p.source("xs", int)
    if over_time:
        table = xs.map(tick_pair).into_keyed().count().snapshot(t, ND)
    else:
        table = xs.batch(t, ND).map(tick_pair).into_keyed().count()
    table.get(t.singleton(True)).into_stream().all_ticks().sink("out")
    entries = {"xs": (int, None, [[0, 3, 2, 4], [5, 1]])}  # (1, 'c', 1.0, 0; then -0.0, True)
    runner, got = run_to_json(spark, flow.finalize(), tmp_path, entries, ("out",), keyed_state)
    assert got == {"out": {0: [2], 1: [3 if over_time else 1]}}
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


@pytest.mark.parametrize("keyed_state", ["driver", "executors"])
def test_a_join_matches_keys_with_pickled_parts_by_python_equality(
    spark: SparkSession, tmp_path: Path, keyed_state: str
) -> None:
    """Keys that are tuples holding a pickled part: `(True, 0)` meets `(1.0, 0)` in a tick's
    join, as in the simulator's dicts (before, only a wholly pickled key was compared by value;
    such a tuple was compared by its bytes and the join met nothing, silently)."""
    flow = hl.FlowBuilder("nested_keys")
    p = flow.process(P)
    t = p.tick()
    xs = p.source("xs", int).batch(t, ND)
    # ((form, 0), index): a translated tuple around a pickled value (an enumerate()'s pair typed
    # (int, pickled) gives it), typed `tuple[pickled, int]`, not pickled whole
    left = xs.filter(lambda x: x in (1, 3)).map(tick_form).enumerate().map(lambda t: ((t[1], 0), t[0]))
    right = xs.filter(lambda x: x in (2, 4)).map(tick_form).enumerate().map(lambda t: ((t[1], 0), t[0] + 10))
    left.join(right).map(repr).all_ticks().sink("out")
    entries = {"xs": (int, None, [[1, 2, 3, 4]])}  # (True, 0) and (1.0, 0); ('c', 0) and (0, 0)
    runner, got = run_to_json(spark, flow.finalize(), tmp_path, entries, ("out",), keyed_state)
    assert got == {"out": {0: ["((True, 0), (0, 10))"]}}
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)
