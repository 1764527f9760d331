"""Typing contract: order-sensitive operators need TotalOrder (docs/design.md §1).

fold / reduce / first / last / enumerate observe the order of elements, so they require a
`TotalOrder` collection, for plain and keyed streams alike. Over `NoOrder` the program
must declare commutativity (`fold_commutative`, `reduce_commutative`) or justify an
order with `assume_ordering(nondet(...))`. The rule is encoded as an explicit self type
with the invariant ordering parameter: mypy alone reports `[misc]` ("Invalid self
argument"), `hydrolite.mypy_plugin` (enabled in pyproject.toml) `[hydrolite-order]` with
the runtime's required / found / fix.
"""

from __future__ import annotations

from _hl_contract import REASON, Server, Workers, world
from typing_extensions import assert_type

from hydrolite import (
    Bounded,
    KeyedSingleton,
    KeyedStream,
    MemberId,
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


# ------------------------------------------------------------------ accepted
def accept_order_sensitive_ops_on_total_order() -> None:
    w = world()
    x = w.server.source("x", int)
    assert_type(x.fold(0, lambda acc, v: acc + v), Singleton[int, SP, Unbounded])
    assert_type(x.reduce(lambda a, b: max(a, b)), OptionalSingleton[int, SP, Unbounded])
    assert_type(x.first(), OptionalSingleton[int, SP, Unbounded])
    assert_type(x.last(), OptionalSingleton[int, SP, Unbounded])
    assert_type(x.enumerate(), Stream[tuple[int, int], SP, Unbounded, TotalOrder])
    w.flow.finalize()


def accept_commutative_aggregation_on_no_order() -> None:
    w = world()
    bag = w.server.source("x", int).weaken_ordering()
    assert_type(bag, Stream[int, SP, Unbounded, NoOrder])
    assert_type(bag.fold_commutative(0, lambda acc, v: acc + v), Singleton[int, SP, Unbounded])
    assert_type(bag.reduce_commutative(lambda a, b: a + b), OptionalSingleton[int, SP, Unbounded])
    assert_type(bag.count(), Singleton[int, SP, Unbounded])
    assert_type(bag.unique(), Stream[int, SP, Unbounded, NoOrder])
    w.flow.finalize()


def accept_keyed_order_sensitive_ops_on_total_order() -> None:
    w = world()
    ks = w.server.keyed_source("k", str, int)
    assert_type(ks.fold(0, lambda acc, v: acc + v), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.reduce(lambda old, new: new), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.first(), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.last(), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.enumerate(), KeyedStream[str, tuple[int, int], SP, Unbounded, TotalOrder])
    w.flow.finalize()


def accept_keyed_commutative_on_no_order() -> None:
    w = world()
    ks = w.server.keyed_source("k", str, int).flat_map_unordered(lambda v: {v, -v})
    assert_type(ks, KeyedStream[str, int, SP, Unbounded, NoOrder])
    assert_type(ks.fold_commutative(0, lambda acc, v: acc + v), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.reduce_commutative(lambda a, b: a + b), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(ks.count(), KeyedSingleton[str, int, SP, Unbounded])
    w.flow.finalize()


def accept_assume_ordering_and_sort_restore_total_order() -> None:
    w = world()
    bag = w.server.source("x", int).merge_unordered(w.server.source("y", int))
    ordered = bag.assume_ordering(nondet("arrival order is as good as any for a running max"))
    assert_type(ordered, Stream[int, SP, Unbounded, TotalOrder])
    ordered.fold(0, lambda acc, v: max(acc, v))
    batch = bag.batch(w.tick, nondet(REASON))
    assert_type(batch.sort().first(), OptionalSingleton[int, TP, Bounded])
    keyed = w.server.keyed_source("k", str, int).weaken_ordering()
    keyed.assume_ordering(nondet("any order of a key's values is fine for this test")).first()
    w.flow.finalize()


def accept_cluster_to_process_is_ordered_per_member() -> None:
    w = world()
    got = w.workers.source("x", int).send(w.server)
    per_member = got.fold(0, lambda acc, v: acc + v)
    assert_type(per_member, KeyedSingleton[MemberId[Workers], int, SP, Unbounded])
    assert_type(got.values(), Stream[int, SP, Unbounded, NoOrder])
    w.flow.finalize()


# ------------------------------------------------------------------ rejected (also at run time)
def reject_fold_over_no_order() -> None:
    bag = world().server.source("x", int).weaken_ordering()
    bag.fold(0, lambda acc, v: acc + v)  # type: ignore[hydrolite-order]


def reject_reduce_over_no_order() -> None:
    bag = world().server.source("x", int).weaken_ordering()
    bag.reduce(lambda a, b: a + b)  # type: ignore[hydrolite-order]


def reject_first_over_no_order() -> None:
    w = world()
    bag = w.server.source("x", int).merge_unordered(w.server.source("y", int))
    bag.first()  # type: ignore[hydrolite-order]


def reject_last_over_no_order() -> None:
    w = world()
    pairs = w.server.source("x", int).cross_product(w.server.source("y", str))
    pairs.last()  # type: ignore[hydrolite-order]


def reject_enumerate_over_no_order() -> None:
    bag = world().server.keyed_source("k", str, int).values()
    bag.enumerate()  # type: ignore[hydrolite-order]


def reject_keyed_fold_over_no_order() -> None:
    ks = world().server.keyed_source("k", str, int).weaken_ordering()
    ks.fold(0, lambda acc, v: acc + v)  # type: ignore[hydrolite-order]


def reject_keyed_reduce_over_no_order() -> None:
    ks = world().server.keyed_source("k", str, int).weaken_ordering()
    ks.reduce(lambda old, new: new)  # type: ignore[hydrolite-order]


def reject_keyed_first_over_no_order() -> None:
    ks = world().server.keyed_source("k", str, int).flat_map_unordered(lambda v: {v})
    ks.first()  # type: ignore[hydrolite-order]


def reject_keyed_last_over_no_order() -> None:
    ks = world().server.keyed_source("k", str, int).weaken_ordering()
    ks.last()  # type: ignore[hydrolite-order]


def reject_keyed_enumerate_over_no_order() -> None:
    ks = world().server.keyed_source("k", str, int).weaken_ordering()
    ks.enumerate()  # type: ignore[hydrolite-order]


def reject_fold_in_tick_over_no_order_batch() -> None:
    w = world()
    batch = w.server.source("x", int).weaken_ordering().batch(w.tick, nondet(REASON))
    batch.fold(0, lambda acc, v: acc + v)  # type: ignore[hydrolite-order]


def reject_stream_cycle_completed_with_no_order() -> None:
    w = world()
    handle, previous = w.tick.stream_cycle(int)
    bag = previous.merge_unordered(w.server.source("x", int).batch(w.tick, nondet(REASON)))
    handle.complete_next_tick(bag)  # type: ignore[arg-type]
