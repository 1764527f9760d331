"""The kernels (`hydrolite.kernels`): each operator's per-element meaning, defined once.

Direct tests of each kernel, properties that make per-batch evaluation correct (folding a
concatenation = folding the second part from the first part's result; stateless kernels
distribute over concatenation), copy-on-write of accumulators, how failures are reported,
and that every operator taking a user function has a kernel the simulator runs it through.
"""

from __future__ import annotations

import copy
import dataclasses
import doctest
import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hydrolite import kernels as k
from hydrolite.ir import nodes as n
from hydrolite.kernels import KernelError
from hydrolite.sim import SimulationFailure, Simulator, UserFunctionError
from hydrolite.sim.registry import registered
from tests.sim.helpers import eager_outputs, tick_flow

ints = st.lists(st.integers(-50, 50), max_size=12)
keys = st.sampled_from(["a", "b", "c"])
pairs = st.lists(st.tuples(keys, st.integers(-50, 50)), max_size=12)


def test_module_doctest_holds() -> None:
    result = doctest.testmod(k)
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------------------------------ element-wise
def test_elementwise_kernels() -> None:
    xs = [3, 0, 4, 1]
    assert k.map_values(lambda x: x * 2, xs) == [6, 0, 8, 2]
    assert k.filter_mask(lambda x: x % 2, xs) == [True, False, False, True]  # truthiness, not `is True`
    assert k.filter_values(lambda x: x % 2, xs) == [3, 1]
    assert k.filter_map_values(lambda x: x - 1 if x else None, xs) == [2, 3, 0]  # 0 is kept, None dropped
    assert k.filter_map_results(lambda x: x or None, xs) == ([True, False, True, True], [3, None, 4, 1])
    assert k.flat_map_groups(lambda x: range(x % 3), xs) == [[], [], [0], [0]]
    assert k.flat_map_values(lambda x: "ab" if x == 3 else (), xs) == ["a", "b"]  # any iterable, in its order
    seen: list[int] = []
    assert k.inspect_values(seen.append, xs) == xs and seen == xs


def test_keyed_kernels_apply_to_values_and_keep_keys() -> None:
    kvs = [("a", 1), ("b", 2), ("a", 3)]
    assert k.map_keyed(lambda v: v * 10, kvs) == [("a", 10), ("b", 20), ("a", 30)]
    assert k.filter_keyed(lambda v: v != 2, kvs) == [("a", 1), ("a", 3)]
    assert k.filter_map_keyed(lambda v: v if v > 1 else None, kvs) == [("b", 2), ("a", 3)]
    assert k.flat_map_keyed(lambda v: [v] * (v - 1), kvs) == [("b", 2), ("a", 3), ("a", 3)]
    seen: list[int] = []
    assert k.inspect_keyed(seen.append, kvs) == kvs and seen == [1, 2, 3]


@given(ints, ints)
def test_stateless_kernels_distribute_over_concatenation(xs: list[int], ys: list[int]) -> None:
    """What makes evaluating them batch by batch (or element by element) correct."""
    fs: list[tuple[Callable[..., Any], Callable[..., Any]]] = [
        (k.map_values, lambda x: x * 3 - 1),
        (k.filter_values, lambda x: x % 3),
        (k.filter_map_values, lambda x: None if x % 2 else x // 2),
        (k.flat_map_values, lambda x: range(x % 4)),
        (k.inspect_values, lambda x: None),
    ]
    for kernel, f in fs:
        assert kernel(f, xs + ys) == kernel(f, xs) + kernel(f, ys)


@given(pairs)
def test_keyed_kernels_are_the_value_kernels_with_keys_kept(kvs: list[tuple[str, int]]) -> None:
    vs = [v for _, v in kvs]
    assert [v for _, v in k.map_keyed(lambda v: v + 1, kvs)] == k.map_values(lambda v: v + 1, vs)
    assert [v for _, v in k.filter_keyed(lambda v: v > 0, kvs)] == k.filter_values(lambda v: v > 0, vs)
    assert [v for _, v in k.flat_map_keyed(lambda v: range(v % 3), kvs)] == k.flat_map_values(
        lambda v: range(v % 3), vs
    )


# ------------------------------------------------------------------ folds
def step(acc: int, x: int) -> int:
    return acc * 3 + x  # order-sensitive, so a wrong order shows


@given(ints, ints, st.booleans())
def test_fold_of_a_concatenation_continues_from_the_first_parts_result(
    xs: list[int], ys: list[int], is_fold: bool
) -> None:
    """Per-batch state is correct: fold(xs + ys) = fold ys from fold(xs) (fold and reduce)."""
    has, acc = k.fold_values(step, 7 if is_fold else None, is_fold, xs)
    assert k.fold_values(step, acc, has, ys) == k.fold_values(step, 7 if is_fold else None, is_fold, xs + ys)


@given(pairs, pairs, st.booleans())
def test_keyed_fold_of_a_concatenation_continues_from_the_stored_accumulators(
    a: list[tuple[str, int]], b: list[tuple[str, int]], is_fold: bool
) -> None:
    first = k.fold_keyed(step, {}, 7, is_fold, a)
    then = {**first, **k.fold_keyed(step, first, 7, is_fold, b)}
    assert then == k.fold_keyed(step, {}, 7, is_fold, a + b)
    for key in {key for key, _ in a + b}:  # per key, the whole fold of that key's values
        vs = [v for kk, v in a + b if kk == key]
        assert then[key] == k.fold_values(step, 7, is_fold, vs)[1]


def test_reduce_starts_from_the_first_element_and_is_empty_without_one() -> None:
    assert k.fold_values(step, None, False, []) == (False, None)
    assert k.fold_values(step, None, False, [5]) == (True, 5)
    assert k.fold_values(step, None, False, [5, 1]) == (True, 16)
    assert k.fold_keyed(step, {}, None, False, [("a", 5), ("b", 2), ("a", 1)]) == {"a": 16, "b": 2}
    assert k.fold_keyed(step, {"a": 0}, None, False, [("a", 5)]) == {"a": 5}  # a stored accumulator wins


@given(ints, ints, st.integers(0, 5))
def test_count_first_last_are_the_folds_they_stand_for(xs: list[int], ys: list[int], n0: int) -> None:
    assert k.count_values(n0, xs) == k.fold_values(lambda c, _: c + 1, n0, True, xs)[1]
    for has, acc in [(False, None), (True, -1)]:
        assert k.first_values(has, acc, xs) == k.fold_values(lambda a, _: a, acc, has, xs)
        assert k.last_values(has, acc, xs) == k.fold_values(lambda _, x: x, acc, has, xs)
    kvs = [(str(x % 3), x) for x in xs]
    more = [(str(y % 3), y) for y in ys]
    counts = k.count_keyed({}, kvs)
    assert {**counts, **k.count_keyed(counts, more)} == k.count_keyed({}, kvs + more)
    firsts = k.first_keyed({}, kvs)
    assert {**firsts, **k.first_keyed(firsts, more)} == k.first_keyed({}, kvs + more)
    assert {**k.last_keyed(kvs), **k.last_keyed(more)} == k.last_keyed(kvs + more)


def test_folds_never_mutate_what_they_are_given() -> None:
    """Copy-on-write: init, stored accumulators and elements may be shared (versions)."""

    def push(acc: list[int], x: int) -> list[int]:
        acc.append(x)
        return acc

    init: list[int] = []
    has, v1 = k.fold_values(push, init, True, [1, 2])
    has, v2 = k.fold_values(push, v1, has, [3])
    assert (init, v1, v2) == ([], [1, 2], [1, 2, 3])  # the earlier version is intact
    stored = {"a": [0]}
    out = k.fold_keyed(push, stored, init, True, [("a", 1), ("b", 2), ("a", 3)])
    assert out == {"a": [0, 1, 3], "b": [2]} and stored == {"a": [0]} and init == []

    def extend(acc: list[int], x: list[int]) -> list[int]:
        acc.extend(x)
        return acc

    elements = [[1], [2], [3]]
    before = copy.deepcopy(elements)
    assert k.fold_values(extend, None, False, elements) == (True, [1, 2, 3])  # a reduce
    assert k.fold_keyed(extend, {}, None, False, [("a", e) for e in elements]) == {"a": [1, 2, 3]}
    assert elements == before  # the first element was copied before it was extended


def test_a_function_returning_a_shared_object_is_not_trusted_with_it() -> None:
    shared = [0]
    calls: list[int] = []

    def f(acc: list[int], x: int) -> list[int]:
        calls.append(x)
        if x == 1:
            return shared  # not a private object: the next call must get a copy
        acc.append(x)
        return acc

    assert k.fold_values(f, [], True, [1, 2]) == (True, [0, 2]) and shared == [0]


def test_immutable_accumulators_are_never_copied() -> None:
    acc = (1, ("x", 2.5), frozenset({3}))
    assert k.immutable(acc) and k.private(acc) is acc
    assert not k.immutable((1, [2])) and k.private([1]) == [1]
    calls: list[Any] = []
    k.fold_values(lambda a, x: calls.append(a) or a, acc, True, [1, 2])
    assert all(c is acc for c in calls)


# ------------------------------------------------------------------ order, identity, shape
@given(st.lists(st.tuples(st.integers(0, 3), st.integers()), max_size=12))
def test_sort_is_stable_and_by_key(xs: list[tuple[int, int]]) -> None:
    order = k.sort_order(lambda t: t[0], xs)
    assert sorted(order) == list(range(len(xs)))
    assert k.sort_values(lambda t: t[0], xs) == sorted(xs, key=lambda t: t[0]) == [xs[i] for i in order]
    assert k.sort_values(None, xs) == sorted(xs)


@given(ints, ints, st.integers(0, 9))
def test_enumerate_and_unique_continue_across_batches(xs: list[int], ys: list[int], start: int) -> None:
    assert k.enumerate_values(start, xs) + k.enumerate_values(start + len(xs), ys) == k.enumerate_values(start, xs + ys)
    seen = k.Seen()
    assert k.unique_values(seen, xs) + k.unique_values(seen, ys) == k.unique_values(k.Seen(), xs + ys)
    kvs = [(x % 2, x) for x in xs + ys]
    counters: dict[int, int] = {}
    assert k.enumerate_keyed(counters, kvs[: len(xs)]) + k.enumerate_keyed(
        counters, kvs[len(xs) :]
    ) == k.enumerate_keyed({}, kvs)


def test_unique_compares_unhashable_elements_by_equality() -> None:
    assert k.unique_values(k.Seen(), [[1], 2, [1], {"a": 1}, 2, {"a": 1}]) == [[1], 2, {"a": 1}]


class KV(NamedTuple):
    key: str
    value: int


def test_split_pairs_takes_two_tuples_only() -> None:
    assert k.split_pairs([("a", 1), KV("b", 2)]) == [("a", 1), ("b", 2)]
    assert type(k.split_pairs([KV("b", 2)])[0]) is tuple
    for bad, what in [(["a", 1], "a list"), (("a", 1, 2), "a tuple of length 3"), (5, "a int")]:
        with pytest.raises(KernelError) as info:
            k.split_pairs([("ok", 0), bad])
        assert info.value.element == bad and info.value.index == 1
        assert (
            isinstance(info.value.cause, TypeError)
            and str(info.value.cause) == f"expected a (key, value) tuple, got {what}"
        )


# ------------------------------------------------------------------ failures
def boom(x: Any) -> Any:
    if x == 3:
        raise ValueError("three")
    return [x]


def boom2(acc: Any, x: Any) -> Any:
    return boom(x)


def gen(x: int) -> Any:
    yield x
    boom(x)  # fails while the result is being iterated


FAILING: list[tuple[str, Callable[[], Any], Any, int]] = [
    ("map", lambda: k.map_values(boom, [1, 3, 4]), 3, 1),
    ("filter", lambda: k.filter_values(boom, [1, 3]), 3, 1),
    ("filter_map", lambda: k.filter_map_values(boom, [3]), 3, 0),
    ("flat_map", lambda: k.flat_map_values(boom, [1, 2, 3]), 3, 2),
    ("flat_map lazily", lambda: k.flat_map_values(gen, [1, 3]), 3, 1),
    ("inspect", lambda: k.inspect_values(boom, [0, 1, 3]), 3, 2),
    ("fold", lambda: k.fold_values(boom2, 0, True, [1, 3]), 3, 1),
    ("reduce", lambda: k.fold_values(boom2, None, False, [1, 2, 3, 4]), 3, 2),
    ("sort key", lambda: k.sort_values(boom, [4, 3]), 3, 1),
    ("keyed map", lambda: k.map_keyed(boom, [("a", 1), ("b", 3)]), ("b", 3), 1),
    ("keyed filter", lambda: k.filter_keyed(boom, [("b", 3)]), ("b", 3), 0),
    ("keyed filter_map", lambda: k.filter_map_keyed(boom, [("b", 3)]), ("b", 3), 0),
    ("keyed flat_map", lambda: k.flat_map_keyed(gen, [("b", 3)]), ("b", 3), 0),
    ("keyed inspect", lambda: k.inspect_keyed(boom, [("a", 1), ("b", 3)]), ("b", 3), 1),
    ("keyed fold", lambda: k.fold_keyed(boom2, {}, 0, True, [("a", 1), ("b", 3)]), ("b", 3), 1),
    ("keyed reduce", lambda: k.fold_keyed(boom2, {}, None, False, [("b", 1), ("b", 3)]), ("b", 3), 1),
]


@pytest.mark.parametrize("name, run, element, index", FAILING, ids=[c[0] for c in FAILING])
def test_a_failing_function_is_reported_with_its_element(
    name: str, run: Callable[[], Any], element: Any, index: int
) -> None:
    with pytest.raises(KernelError) as info:
        run()
    e = info.value
    assert (e.element, e.index) == (element, index)
    assert isinstance(e.cause, ValueError) and e.__cause__ is e.cause and str(e.cause) == "three"
    assert "ValueError: three" in str(e)


def test_incomparable_sort_keys_report_the_batch() -> None:
    with pytest.raises(KernelError) as info:
        k.sort_values(None, [1, "a", 2])
    assert info.value.element == [1, "a", 2] and info.value.index == -1
    assert isinstance(info.value.cause, TypeError)


def test_base_exceptions_are_not_wrapped() -> None:
    def stop(x: int) -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        k.map_values(stop, [1])


# ------------------------------------------------------------------ every operator has a kernel
def user_function_ops() -> dict[str, type[n.Node]]:
    """Operators whose node carries a user function (a Callable field)."""
    return {cls.op: cls for cls in n.node_classes() if any("Callable" in str(f.type) for f in dataclasses.fields(cls))}


#: each user-function operator, applied in a tick to a stream of ints with `boom`
SIM_CASES: dict[str, Callable[[Any], Any]] = {
    "map": lambda s: s.map(boom),
    "filter": lambda s: s.filter(boom),
    "filter_map": lambda s: s.filter_map(boom),
    "flat_map": lambda s: s.flat_map_ordered(boom),
    "inspect": lambda s: s.inspect(boom),
    "fold": lambda s: s.fold(0, boom2).into_stream(),
    "reduce": lambda s: s.reduce(boom2).into_stream(),
    "sort": lambda s: s.sort(key=boom),
}


def test_every_operator_with_a_user_function_has_a_kernel() -> None:
    ops = user_function_ops()
    assert set(ops) == set(SIM_CASES), "a new operator with a user function needs a kernel and a case here"
    missing = sorted(op for op in ops if op not in k.KERNELS)
    assert not missing, f"operators without a kernel in hydrolite.kernels.KERNELS: {missing}"
    evaluators = registered()
    for op in k.KEYED_KERNELS:  # the simulator's element-wise evaluators run exactly these
        assert evaluators[ops[op]].KERNELS == (k.KERNELS[op], k.KEYED_KERNELS[op])


@pytest.mark.parametrize("op", sorted(SIM_CASES))
def test_the_simulator_runs_user_functions_through_their_kernel(op: str) -> None:
    """The user's exception was caught in hydrolite/kernels.py, and reported like before."""
    flow = tick_flow(lambda s, t, p: SIM_CASES[op](s))

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([1, 3])
        s.receiver("out").collect()

    with pytest.raises(SimulationFailure) as info:
        Simulator(flow).exhaustive(scenario)
    err = info.value.cause
    assert isinstance(err, UserFunctionError) and isinstance(err.__cause__, ValueError)
    frames = traceback.extract_tb(err.__cause__.__traceback__)
    assert frames[0].filename == k.__file__, f"{op}() called the user function outside its kernel: {frames[0]}"
    assert f"{op}() raised ValueError: three" in str(err) and "element: 3" in str(err)


def test_the_simulator_reports_keyed_failures_with_the_pair() -> None:
    flow = tick_flow(lambda s, t, p: s.map(boom).entries(), keyed=True)
    with pytest.raises(UserFunctionError, match=r"element: \('b', 3\)"):
        eager_outputs(flow, [("a", 1), ("b", 3)])


def test_the_simulator_never_mutates_a_folds_init() -> None:
    init: list[int] = []
    flow = tick_flow(lambda s, t, p: s.fold(init, lambda acc, x: acc.append(x) or acc).into_stream())
    assert eager_outputs(flow, [1, 2]) == [[1, 2]]
    assert eager_outputs(flow, [3]) == [[3]] and init == []


# ------------------------------------------------------------------ Spark's Arrow path = the kernels
# pyfn's functions run on Arrow record batches inside Spark's Python workers; they are called
# here directly on batches (no Spark session), and must compute what the kernels compute.
def _arrow() -> Any:
    return pytest.importorskip("pyarrow")


def _batch(values: list[Any], keys: list[Any] | None = None) -> Any:
    pa = _arrow()
    cols = {"_o0": pa.array(range(len(values)), type=pa.int64())}
    if keys is not None:
        cols["k"] = pa.array(keys, type=pa.string())
    cols["v"] = pa.array(values, type=pa.int64())
    return pa.RecordBatch.from_pydict(cols)


def _site() -> Any:
    from hydrolite.planner.spark.pyfn import FnSite

    return FnSite("op", __file__, 1, 7, "q")


ARROW_KINDS: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("map", lambda x: x * 3 - 1, k.map_values),
    ("filter", lambda x: x % 3, k.filter_values),
    ("filter_map", lambda x: None if x % 2 else x // 2, k.filter_map_values),
    ("flat_map", lambda x: range(x % 4), k.flat_map_values),
    ("inspect", lambda x: None, k.inspect_values),
]


@pytest.mark.parametrize("kind, f, kernel", ARROW_KINDS, ids=[c[0] for c in ARROW_KINDS])
def test_the_arrow_path_computes_the_elementwise_kernels(
    kind: str, f: Callable[..., Any], kernel: Callable[..., Any]
) -> None:
    from hydrolite.planner.spark.pyfn import elementwise
    from hydrolite.planner.spark.types import Prim

    xs = [4, 0, 7, 3, 5, 2]
    run = elementwise(kind, f, Prim(int), Prim(int), _site(), "_p" if kind == "flat_map" else None)
    out = [rb for b in (xs[:2], xs[2:]) for rb in run(iter([_batch(b)]))]  # two batches
    assert [v for rb in out for v in rb.column(rb.schema.get_field_index("v")).to_pylist()] == kernel(f, xs)


def test_the_arrow_path_reports_failures_like_the_simulator() -> None:
    from hydrolite.planner.spark.errors import UserFunctionError as SparkError
    from hydrolite.planner.spark.pyfn import elementwise, fold_global
    from hydrolite.planner.spark.types import Prim

    with pytest.raises(
        SparkError, match=r"op\(\) failed on element 3 in batch 7 of query 'q': ValueError: three"
    ) as info:
        list(elementwise("map", boom, Prim(int), Prim(int), _site())(iter([_batch([1, 3])])))
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(SparkError, match=r"failed on element \('b', 3\)"):  # a keyed frame names the pair
        list(
            elementwise("flat_map", gen, Prim(int), Prim(int), _site(), "_p", Prim(str))(
                iter([_batch([1, 3], ["a", "b"])])
            )
        )
    with pytest.raises(SparkError, match=r"failed on element 3 "):  # the element, not (acc, element)
        list(fold_global(boom2, 0, True, Prim(int), _site(), ["_o0"])(iter([_batch([1, 3])])))


def test_a_value_that_does_not_fit_its_column_names_the_operator_and_the_value() -> None:
    """`reencode` of the executors' answers (pickled -> the state's column type): a value the
    column cannot hold fails naming the operator whose values they are, and the value."""
    import pickle

    from hydrolite.planner.spark.errors import UserFunctionError as SparkError
    from hydrolite.planner.spark.pyfn import reencode
    from hydrolite.planner.spark.types import OPAQUE, Prim

    pa = _arrow()
    rb = pa.RecordBatch.from_pydict({"v": pa.array([pickle.dumps(x) for x in (4, 44.0, 5)], type=pa.binary())})
    run = reencode({"v": (OPAQUE, Prim(int))}, None, _site())
    with pytest.raises(SparkError, match=r"op\(\) failed on element 44\.0 in batch 7 of query 'q'") as info:
        list(run(iter([rb])))
    assert "does not fit its column int: expected int, got float 44.0" in str(info.value)
    with pytest.raises(TypeError, match="does not fit its column int"):  # (no site: as before)
        list(reencode({"v": (OPAQUE, Prim(int))})(iter([rb])))
    fits = pa.RecordBatch.from_pydict({"v": pa.array([pickle.dumps(x) for x in (4, 5)], type=pa.binary())})
    assert [b.column(0).to_pylist() for b in run(iter([fits]))] == [[4, 5]]


@given(ints, st.booleans())
def test_the_arrow_folds_are_the_fold_kernels(xs: list[int], is_fold: bool) -> None:
    import pickle

    from hydrolite.planner.spark.pyfn import fold_global, fold_keyed
    from hydrolite.planner.spark.types import Prim

    (rb,) = fold_global(step, 7, is_fold, Prim(int), _site(), ["_o0"])(iter([_batch(xs)] if xs else []))
    _, acc = k.fold_values(step, 7, is_fold, xs)
    assert (pickle.loads(rb.column(0)[0].as_py()), rb.column(1)[0].as_py()) == (acc, len(xs))
    pa = _arrow()
    if xs:
        table = pa.Table.from_batches([_batch(xs, ["a"] * len(xs))])
        got = fold_keyed(step, {"a": 1}, 7, is_fold, Prim(str), Prim(int), _site(), ["_o0"])(table)
        assert (
            pickle.loads(got.column("acc")[0].as_py())
            == k.fold_keyed(step, {"a": 1}, 7, is_fold, [("a", x) for x in xs])["a"]
        )


def test_the_arrow_sort_and_pair_split_are_the_kernels() -> None:
    import pickle

    from hydrolite.planner.spark.pyfn import sort_whole, split_pairs
    from hydrolite.planner.spark.types import OPAQUE, Prim

    xs = [5, -2, 9, 2, -5]
    out = list(sort_whole(abs, Prim(int), _site(), ["_o0"], "_r")(iter([_batch(xs)])))
    assert [v for rb in out for v in rb.column(rb.schema.get_field_index("v")).to_pylist()] == k.sort_values(abs, xs)
    pa = _arrow()
    pairs = [("a", 1), KV("b", 2)]
    rb = pa.RecordBatch.from_pydict({"v": pa.array([OPAQUE.encode(p) for p in pairs], type=pa.binary())})
    (got,) = split_pairs(OPAQUE, _site())(iter([rb]))
    split = list(zip(*(map(pickle.loads, got.column(got.schema.get_field_index(c)).to_pylist()) for c in ("k", "v"))))
    assert split == k.split_pairs(pairs)
