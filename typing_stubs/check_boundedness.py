"""Typing contract: operators that need the whole input need `Bounded` (docs/design.md §1).

sort and chain (both sides), anti_join's negative side, cross_singleton's singleton, and
the keyed-singleton lookups all need a collection that ends: one batch inside a tick, or a
finite top-level `source_iter`. A Bounded self is an explicit self type (`[misc]` without
the plugin), a Bounded argument a parameter type (`[arg-type]`/`[call-overload]`); with
`hydrolite.mypy_plugin` (enabled in pyproject.toml) both are `[hydrolite-bounded]`.
"""

from __future__ import annotations

from _hl_contract import REASON, Server, world
from typing_extensions import assert_type

from hydrolite import (
    Bounded,
    KeyedStream,
    NoOrder,
    OptionalSingleton,
    Process,
    Stream,
    Tick,
    TotalOrder,
    Unbounded,
    nondet,
)

SP = Process[Server]
TP = Tick[Process[Server]]


# ------------------------------------------------------------------ accepted
def accept_sort_and_chain_inside_a_tick() -> None:
    w = world()
    a = w.server.source("a", int).batch(w.tick, nondet(REASON))
    b = w.server.source("b", int).weaken_ordering().batch(w.tick, nondet(REASON))
    assert_type(b.sort(), Stream[int, TP, Bounded, TotalOrder])
    assert_type(b.sort(key=lambda v: -v), Stream[int, TP, Bounded, TotalOrder])
    assert_type(a.chain(b.sort()), Stream[int, TP, Bounded, TotalOrder])
    assert_type(b.chain(b), Stream[int, TP, Bounded, NoOrder])
    a.chain(b.sort()).all_ticks().sink("out")
    w.flow.finalize()


def accept_finite_top_level_source_is_bounded() -> None:
    w = world()
    blocked = w.server.source_iter(["mallory", "eve"])
    assert_type(blocked, Stream[str, SP, Bounded, TotalOrder])
    assert_type(blocked.sort(), Stream[str, SP, Bounded, TotalOrder])
    assert_type(blocked.chain(w.server.source_iter(["trent"])), Stream[str, SP, Bounded, TotalOrder])
    logins = w.server.source("logins", str).map(lambda user: (user, len(user)))
    allowed = logins.anti_join(blocked)  # an unbounded positive side is fine
    assert_type(allowed, Stream[tuple[str, int], SP, Unbounded, TotalOrder])
    allowed.sink("allowed")
    w.flow.finalize()


def accept_anti_join_with_a_batched_negative_side() -> None:
    w = world()
    orders = w.server.source("orders", str).map(lambda o: (o, 1)).batch(w.tick, nondet(REASON))
    cancelled = w.server.source("cancelled", str).batch(w.tick, nondet(REASON))
    assert_type(orders.anti_join(cancelled), Stream[tuple[str, int], TP, Bounded, TotalOrder])
    w.flow.finalize()


def accept_lookups_on_snapshots() -> None:
    w = world()
    table = w.server.keyed_source("put", str, int).reduce(lambda old, new: new)
    snap = table.snapshot(w.tick, nondet("any recent version of the table"))
    gets = w.server.keyed_source("get", str, float).batch(w.tick, nondet(REASON))
    joined = gets.lookup_keyed_singleton(snap)
    assert_type(joined, KeyedStream[str, tuple[float, int | None], TP, Bounded, TotalOrder])
    present = snap.get_many_if_present(gets)
    assert_type(present, KeyedStream[str, tuple[float, int], TP, Bounded, TotalOrder])
    key = w.tick.singleton("alice")
    assert_type(snap.get(key), OptionalSingleton[int, TP, Bounded])
    assert_type(snap.entries(), Stream[tuple[str, int], TP, Bounded, NoOrder])
    assert_type(snap.keys(), Stream[str, TP, Bounded, NoOrder])
    assert_type(snap.values(), Stream[int, TP, Bounded, NoOrder])
    w.flow.finalize()


# ------------------------------------------------------------------ rejected (also at run time)
def reject_sort_unbounded() -> None:
    x = world().server.source("x", int)
    x.sort()  # type: ignore[hydrolite-bounded]


def reject_chain_unbounded_self() -> None:
    w = world()
    x = w.server.source("x", int)
    x.chain(w.server.source_iter([1, 2]))  # type: ignore[hydrolite-bounded]


def reject_chain_unbounded_other() -> None:
    w = world()
    x = w.server.source("x", int)
    w.server.source_iter([1, 2]).chain(x)  # type: ignore[hydrolite-bounded]


def reject_anti_join_unbounded_negative_side() -> None:
    w = world()
    pairs = w.server.source("x", str).map(lambda s: (s, len(s)))
    pairs.anti_join(w.server.source("blocked", str))  # type: ignore[hydrolite-bounded]


def reject_cross_singleton_with_unbounded_singleton() -> None:
    w = world()
    count = w.server.source("x", int).count()
    w.server.source_iter([1, 2]).cross_singleton(count)  # type: ignore[hydrolite-bounded]


def reject_lookup_keyed_singleton_unbounded_table() -> None:
    w = world()
    table = w.server.keyed_source("put", str, int).reduce(lambda old, new: new)
    gets = w.server.source_iter([("alice", 1)]).into_keyed()
    gets.lookup_keyed_singleton(table)  # type: ignore[hydrolite-bounded]


def reject_lookup_keyed_singleton_unbounded_requests() -> None:
    w = world()
    table = w.server.source_iter([("alice", 1)]).into_keyed().reduce(lambda old, new: new)
    gets = w.server.keyed_source("get", str, int)
    gets.lookup_keyed_singleton(table)  # type: ignore[hydrolite-bounded]


def reject_keyed_singleton_entries_unbounded() -> None:
    table = world().server.keyed_source("put", str, int).reduce(lambda old, new: new)
    table.entries()  # type: ignore[hydrolite-bounded]


def reject_keyed_singleton_get_unbounded() -> None:
    w = world()
    table = w.server.keyed_source("put", str, int).reduce(lambda old, new: new)
    key = w.server.source_iter(["alice"]).fold("", lambda _, name: name)
    table.get(key)  # type: ignore[hydrolite-bounded]
