"""Typing contract: element types flow through operators and lambdas (issue 2, item 4).

Type-parameter defaults make `Stream[int, Process[S]]` mean Unbounded and TotalOrder.
Signatures are chosen so mypy infers lambda parameters from the collection and results
from the lambda: `s.fold(0, lambda acc, x: acc + x)` is `Singleton[int, ...]`, never
`Any` (`assert_type` is exact, so an `Any` result fails the contract). The `mistype_*`
cases are rejected by mypy only: element types are erased at run time.
"""

from __future__ import annotations

from _hl_contract import REASON, Server, world
from typing_extensions import assert_type

from hydrolite import (
    Bounded,
    KeyedSingleton,
    KeyedStream,
    NoOrder,
    OptionalSingleton,
    Process,
    Singleton,
    SinkPort,
    Stream,
    Tick,
    TotalOrder,
    Unbounded,
    nondet,
)

SP = Process[Server]
TP = Tick[Process[Server]]


def _takes_default_stream(s: Stream[int, Process[Server]]) -> None:
    """A parameter written with the short form: Unbounded and TotalOrder by default."""


def _takes_default_keyed(s: KeyedStream[str, int, Process[Server]]) -> None:
    """Keyed streams default the same way."""


def _takes_default_singleton(s: Singleton[int, Process[Server]]) -> None:
    """Singletons default to Unbounded."""


# ------------------------------------------------------------------ accepted
def accept_type_parameter_defaults() -> None:
    w = world()
    x = w.server.source("x", int)
    assert_type(x, Stream[int, Process[Server]])
    assert_type(x, Stream[int, Process[Server], Unbounded, TotalOrder])
    _takes_default_stream(x)
    ks = w.server.keyed_source("k", str, int)
    assert_type(ks, KeyedStream[str, int, Process[Server]])
    _takes_default_keyed(ks)
    _takes_default_singleton(x.count())
    assert_type(x.count(), Singleton[int, Process[Server]])
    w.flow.finalize()


def accept_fold_infers_the_accumulator_through_lambdas() -> None:
    w = world()
    x = w.server.source("x", int)
    assert_type(x.fold(0, lambda acc, v: acc + v), Singleton[int, SP, Unbounded])
    assert_type(x.fold(0.0, lambda acc, v: acc + v / 2), Singleton[float, SP, Unbounded])
    assert_type(x.fold("", lambda acc, v: acc + str(v)), Singleton[str, SP, Unbounded])
    assert_type(x.fold(list[int](), lambda acc, v: [*acc, v]), Singleton[list[int], SP, Unbounded])
    assert_type(x.fold((0, 0), lambda acc, v: (acc[0] + 1, acc[1] + v)), Singleton[tuple[int, int], SP, Unbounded])
    acks = w.server.keyed_source("increment", str, type(None))
    assert_type(acks.values().fold_commutative(0, lambda c, _: c + 1), Singleton[int, SP, Unbounded])
    assert_type(x.reduce(lambda a, b: a * b), OptionalSingleton[int, SP, Unbounded])
    w.flow.finalize()


def accept_element_wise_inference() -> None:
    w = world()
    x = w.server.source("x", int)
    assert_type(x.map(lambda v: str(v)), Stream[str, SP, Unbounded, TotalOrder])
    assert_type(x.map(float), Stream[float, SP, Unbounded, TotalOrder])
    assert_type(x.filter(lambda v: v > 0), Stream[int, SP, Unbounded, TotalOrder])
    assert_type(x.filter_map(lambda v: str(v) if v > 0 else None), Stream[str, SP, Unbounded, TotalOrder])
    assert_type(x.flat_map_ordered(lambda v: [v, v + 1]), Stream[int, SP, Unbounded, TotalOrder])
    assert_type(x.flat_map_unordered(lambda v: {str(v)}), Stream[str, SP, Unbounded, NoOrder])
    assert_type(x.inspect(print), Stream[int, SP, Unbounded, TotalOrder])
    assert_type(x.map(lambda v: (v, str(v))).sink("pairs"), SinkPort[tuple[int, str]])
    w.flow.finalize()


def accept_keyed_inference() -> None:
    w = world()
    ks = w.server.keyed_source("k", str, int)
    assert_type(ks.map(lambda v: v * 1.5), KeyedStream[str, float, SP, Unbounded, TotalOrder])
    assert_type(ks.filter_map(lambda v: str(v) if v else None), KeyedStream[str, str, SP, Unbounded, TotalOrder])
    assert_type(ks.fold(0, lambda acc, v: acc + v), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.fold("", lambda acc, v: acc + str(v)), KeyedSingleton[str, str, SP, Unbounded])
    assert_type(ks.reduce(lambda a, b: a + b), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.count().map(lambda n: n > 1), KeyedSingleton[str, bool, SP, Unbounded])
    assert_type(ks.entries(), Stream[tuple[str, int], SP, Unbounded, NoOrder])
    assert_type(ks.keys(), Stream[str, SP, Unbounded, NoOrder])
    assert_type(ks.values(), Stream[int, SP, Unbounded, NoOrder])
    pairs = w.server.source("p", str).map(lambda s: (s, len(s)))
    assert_type(pairs.into_keyed(), KeyedStream[str, int, SP, Unbounded, TotalOrder])
    assert_type(ks.sink("out"), SinkPort[tuple[str, int]])
    w.flow.finalize()


def accept_combining_inference() -> None:
    w = world()
    batch = w.server.source("q", str).batch(w.tick, nondet(REASON))
    total = w.server.source("x", int).fold(0, lambda acc, v: acc + v)
    snap = total.snapshot(w.tick, nondet("any recent total"))
    assert_type(batch.cross_singleton(snap), Stream[tuple[str, int], TP, Bounded, TotalOrder])
    best = w.server.source("y", float).reduce(max).snapshot(w.tick, nondet(REASON))
    assert_type(batch.cross_singleton(best), Stream[tuple[str, float], TP, Bounded, TotalOrder])
    assert_type(batch.cross_product(batch.map(len)), Stream[tuple[str, int], TP, Bounded, NoOrder])
    left = batch.map(lambda s: (s, len(s)))
    right = batch.map(lambda s: (s, s.upper()))
    assert_type(left.join(right), Stream[tuple[str, tuple[int, str]], TP, Bounded, NoOrder])
    assert_type(left.anti_join(batch), Stream[tuple[str, int], TP, Bounded, TotalOrder])
    assert_type(snap.zip(snap.map(str)), Singleton[tuple[int, str], TP, Bounded])
    assert_type(snap.zip(best), OptionalSingleton[tuple[int, float], TP, Bounded])
    assert_type(best.zip(snap), OptionalSingleton[tuple[float, int], TP, Bounded])
    assert_type(best.unwrap_or(0.0), Singleton[float, TP, Bounded])
    assert_type(best.into_singleton(), Singleton[float | None, TP, Bounded])
    assert_type(snap.filter(lambda n: n > 0), OptionalSingleton[int, TP, Bounded])
    assert_type(snap.flat_map_ordered(range), Stream[int, TP, Bounded, TotalOrder])
    w.flow.finalize()


def accept_keyed_singleton_lookups() -> None:
    w = world()
    table = w.server.keyed_source("put", str, float).reduce(lambda old, new: new)
    snap = table.snapshot(w.tick, nondet("any recent table"))
    gets = w.server.keyed_source("get", str, int).batch(w.tick, nondet(REASON))
    assert_type(gets.lookup_keyed_singleton(snap), KeyedStream[str, tuple[int, float | None], TP, Bounded, TotalOrder])
    assert_type(snap.get_many_if_present(gets), KeyedStream[str, tuple[int, float], TP, Bounded, TotalOrder])
    assert_type(snap.get(w.tick.singleton("k")), OptionalSingleton[float, TP, Bounded])
    assert_type(snap.map(round), KeyedSingleton[str, int, TP, Bounded])
    w.flow.finalize()


# ------------------------------------------------------------------ rejected (also at run time)
def reject_into_keyed_without_pairs() -> None:
    world().server.source("x", int).into_keyed()  # type: ignore[hydrolite-elem]


# ------------------------------------------------------------------ rejected by mypy only
def mistype_lambda_uses_the_wrong_element_type() -> None:
    w = world()
    w.server.source("x", int).map(lambda v: v.upper())  # type: ignore[attr-defined]
    w.flow.finalize()


def mistype_fold_accumulator_mismatch() -> None:
    w = world()
    w.server.source("x", int).fold("", lambda acc, v: acc + v)  # type: ignore[operator]
    w.flow.finalize()


def mistype_fold_empty_list_literal() -> None:
    """`[]` alone is `list[Never]`: say `acc_type=list[int]` (check_agreement.py) or `list[int]()`."""
    w = world()
    w.server.source("x", int).fold([], lambda acc, v: [*acc, v])  # type: ignore[arg-type, return-value]
    w.flow.finalize()


def mistype_join_with_other_key_type() -> None:
    w = world()
    left = w.server.source("a", str).map(lambda s: (s, 1))
    right = w.server.source("b", int).map(lambda n: (n, 2))
    left.join(right)  # type: ignore[arg-type]
    w.flow.finalize()


def mistype_chain_of_other_element_type() -> None:
    w = world()
    numbers = w.server.source_iter([1, 2])
    words = w.server.source_iter(["x"])
    numbers.chain(words)  # type: ignore[arg-type]
    w.flow.finalize()


def mistype_default_is_not_no_order() -> None:
    w = world()
    _takes_default_stream(w.server.source("x", int).weaken_ordering())  # type: ignore[arg-type]
    w.flow.finalize()


def mistype_default_is_not_bounded() -> None:
    w = world()
    _takes_default_stream(w.server.source_iter([1, 2]))  # type: ignore[arg-type]
    w.flow.finalize()


def mistype_cross_singleton_result_is_a_pair() -> None:
    w = world()
    batch = w.server.source("q", str).batch(w.tick, nondet(REASON))
    pairs = batch.cross_singleton(w.tick.singleton(1))
    pairs.map(lambda p: p.upper())  # type: ignore[attr-defined]
    w.flow.finalize()
