"""Typing contract: the static types say what the runtime computes (issue 11, item 2).

* Combining two collections is Bounded only if both sides are, and NoOrder if either side
  is (`merge_unordered`, `chain`, `cross_product`, `join`, `zip`), exactly as the runtime's
  `Meta` says; `runtime_type()` compares the two in every accepted case.
* A stream's element type is covariant: a stream of a two-field NamedTuple is a stream of
  pairs (`into_keyed`, `join`).
* Ports take any type expression (PEP 747 `TypeForm`): `float | None`, `tuple[str, int]`.
* `fold(..., acc_type=T)` names an accumulator type that `init` cannot: `frozenset()`,
  `[]`, `{}` and `None` alone infer `Never`/`None`.
* `sort()` without a key needs comparable elements (the runtime checks the same when the
  element type is known); a key must return something comparable.
* `==`/`!=` and truth tests on a collection are errors, not silently `False`/unreachable.

Not in the types: two ticks of one location have the same type (`Tick[Process[Server]]`),
so mixing the batches of two ticks is a build-time `BuildError` only (see the README).
"""

from __future__ import annotations

from typing import NamedTuple

from _hl_contract import REASON, Server, runtime_type, world
from typing_extensions import assert_type

from hydrolite import (
    Bounded,
    KeyedSingleton,
    KeyedStream,
    NoOrder,
    OptionalSingleton,
    Process,
    Singleton,
    Stream,
    Tick,
    TotalOrder,
    Unbounded,
    nondet,
)

SP = Process[Server]
TP = Tick[Process[Server]]


class Visit(NamedTuple):
    """A two-field NamedTuple: a (key, value) pair with names."""

    user: str
    millis: int


class Opaque:
    """A class without `<`: its values cannot be sorted by themselves."""

    def __init__(self, weight: int) -> None:
        self.weight = weight


# ------------------------------------------------------------------ accepted
def accept_combining_is_bounded_only_if_both_sides_are() -> None:
    w = world()
    finite = w.server.source_iter([1, 2])
    live = w.server.source("x", int)
    both = finite.merge_unordered(finite)
    assert_type(both, Stream[int, SP, Bounded, NoOrder])
    assert runtime_type(both) == "Stream[int, Process[Server], Bounded, NoOrder]"
    one = finite.merge_unordered(live)
    assert_type(one, Stream[int, SP, Unbounded, NoOrder])
    assert runtime_type(one) == "Stream[int, Process[Server], Unbounded, NoOrder]"
    assert_type(live.merge_unordered(finite), Stream[int, SP, Unbounded, NoOrder])
    pairs = finite.cross_product(live)
    assert_type(pairs, Stream[tuple[int, int], SP, Unbounded, NoOrder])
    assert runtime_type(pairs) == "Stream[?, Process[Server], Unbounded, NoOrder]"
    assert_type(finite.cross_product(finite), Stream[tuple[int, int], SP, Bounded, NoOrder])
    left = finite.map(lambda v: (v, str(v)))
    right = live.map(lambda v: (v, v / 2))
    joined = left.join(right)
    assert_type(joined, Stream[tuple[int, tuple[str, float]], SP, Unbounded, NoOrder])
    assert runtime_type(joined) == "Stream[?, Process[Server], Unbounded, NoOrder]"
    assert_type(left.join(left), Stream[tuple[int, tuple[str, str]], SP, Bounded, NoOrder])
    w.flow.finalize()


def accept_zip_is_bounded_only_if_both_sides_are() -> None:
    w = world()
    finite = w.server.source_iter([1, 2]).count()
    live = w.server.source("x", int).count()
    assert_type(finite, Singleton[int, SP, Bounded])
    mixed = finite.zip(live)
    assert_type(mixed, Singleton[tuple[int, int], SP, Unbounded])
    assert runtime_type(mixed) == "Singleton[?, Process[Server], Unbounded]"
    assert_type(live.zip(finite), Singleton[tuple[int, int], SP, Unbounded])
    assert_type(finite.zip(finite), Singleton[tuple[int, int], SP, Bounded])
    best = w.server.source_iter([3]).reduce(max)
    assert_type(finite.zip(best), OptionalSingleton[tuple[int, int], SP, Bounded])
    assert_type(best.zip(live), OptionalSingleton[tuple[int, int], SP, Unbounded])
    assert runtime_type(best.zip(live)) == "OptionalSingleton[?, Process[Server], Unbounded]"
    w.flow.finalize()


def accept_chain_is_total_order_only_if_both_sides_are() -> None:
    w = world()
    ordered = w.server.source("a", int).batch(w.tick, nondet(REASON))
    bag = w.server.source("b", int).weaken_ordering().batch(w.tick, nondet(REASON))
    assert_type(ordered.chain(ordered), Stream[int, TP, Bounded, TotalOrder])
    mixed = ordered.chain(bag)
    assert_type(mixed, Stream[int, TP, Bounded, NoOrder])
    assert runtime_type(mixed) == "Stream[int, Tick[Process[Server]], Bounded, NoOrder]"
    assert_type(bag.chain(ordered), Stream[int, TP, Bounded, NoOrder])
    assert runtime_type(bag.chain(ordered)) == "Stream[int, Tick[Process[Server]], Bounded, NoOrder]"
    w.flow.finalize()


def accept_into_keyed_of_a_named_tuple() -> None:
    w = world()
    visits = w.server.source("visits", Visit)
    keyed = visits.into_keyed()
    assert_type(keyed, KeyedStream[str, int, SP, Unbounded, TotalOrder])
    assert runtime_type(keyed) == "KeyedStream[str, int, Process[Server], Unbounded, TotalOrder]"
    assert_type(keyed.fold(0, lambda total, ms: total + ms), KeyedSingleton[str, int, SP, Unbounded])
    durations = w.server.source("durations", str).map(lambda user: (user, 1.5))
    assert_type(visits.join(durations), Stream[tuple[str, tuple[int, float]], SP, Unbounded, NoOrder])
    w.flow.finalize()


def accept_ports_of_optional_and_tuple_types() -> None:
    w = world()
    readings = w.server.source("readings", float | None)
    assert_type(readings, Stream[float | None, SP, Unbounded, TotalOrder])
    assert runtime_type(readings) == "Stream[float | None, Process[Server], Unbounded, TotalOrder]"
    assert_type(readings.filter_map(lambda r: r), Stream[float, SP, Unbounded, TotalOrder])
    settings = w.server.keyed_source("settings", str, int | None)
    assert_type(settings, KeyedStream[str, int | None, SP, Unbounded, TotalOrder])
    pairs = w.server.source("pairs", tuple[str, int])
    assert_type(pairs.into_keyed(), KeyedStream[str, int, SP, Unbounded, TotalOrder])
    assert runtime_type(pairs.into_keyed()) == "KeyedStream[str, int, Process[Server], Unbounded, TotalOrder]"
    handle, previous = w.tick.stream_cycle(int | None)
    assert_type(previous, Stream[int | None, TP, Bounded, TotalOrder])
    handle.complete_next_tick(previous)
    w.flow.finalize()


def accept_fold_with_an_explicit_accumulator_type() -> None:
    w = world()
    x = w.server.source("x", int)
    seen = x.fold(frozenset(), lambda acc, v: acc | {v}, acc_type=frozenset[int])
    assert_type(seen, Singleton[frozenset[int], SP, Unbounded])
    assert runtime_type(seen) == "Singleton[frozenset[int], Process[Server], Unbounded]"
    history = x.fold([], lambda acc, v: [*acc, v], acc_type=list[int])
    assert_type(history, Singleton[list[int], SP, Unbounded])
    counts = x.fold_commutative({}, lambda acc, v: {**acc, v: acc.get(v, 0) + 1}, acc_type=dict[int, int])
    assert_type(counts, Singleton[dict[int, int], SP, Unbounded])
    best = x.fold(None, lambda acc, v: v if acc is None or v > acc else acc, acc_type=int | None)
    assert_type(best, Singleton[int | None, SP, Unbounded])
    per_key = w.server.keyed_source("k", str, int).fold(None, lambda acc, v: v, acc_type=int | None)
    assert_type(per_key, KeyedSingleton[str, int | None, SP, Unbounded])
    w.flow.finalize()


def accept_sort_of_comparable_elements_or_by_key() -> None:
    w = world()
    assert_type(w.server.source_iter([3, 1]).sort(), Stream[int, SP, Bounded, TotalOrder])
    assert_type(w.server.source_iter([("b", 2)]).sort(), Stream[tuple[str, int], SP, Bounded, TotalOrder])
    opaque = w.server.source("o", Opaque).batch(w.tick, nondet(REASON))
    assert_type(opaque.sort(key=lambda o: o.weight), Stream[Opaque, TP, Bounded, TotalOrder])
    w.flow.finalize()


# ------------------------------------------------------------------ rejected (also at run time)
def reject_sort_of_non_comparable_elements() -> None:
    w = world()
    opaque = w.server.source("o", Opaque).batch(w.tick, nondet(REASON))
    opaque.sort()  # type: ignore[hydrolite-elem]


def reject_equality_of_two_collections() -> None:
    w = world()
    a, b = w.server.source("a", int).count(), w.server.source("b", int).count()
    print(a == b)  # type: ignore[hydrolite-eq]


def reject_inequality_with_a_value() -> None:
    count = world().server.source("a", int).count()
    print(count != 0)  # type: ignore[hydrolite-eq]


def reject_truth_test_of_a_collection() -> None:
    x = world().server.source("x", int)
    if x:  # type: ignore[truthy-bool]
        print("never decided at build time")


# ------------------------------------------------------------------ rejected by mypy only
def mistype_sort_key_returning_non_comparable() -> None:
    w = world()
    opaque = w.server.source("o", Opaque).batch(w.tick, nondet(REASON))
    opaque.sort(key=lambda o: o)  # type: ignore[arg-type, return-value]
    w.flow.finalize()


def mistype_source_of_a_bare_tuple() -> None:
    """`tuple` alone is `tuple[Any, ...]`: its items go unchecked (plugin only)."""
    w = world()
    w.server.source("pairs", tuple).sink("out")  # type: ignore[hydrolite-elem]
    w.flow.finalize()
