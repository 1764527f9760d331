"""Typing contract: entering, leaving and stepping ticks (docs/design.md §1).

* batch / snapshot are taken from top-level collections into a tick *of the same location*;
* all_ticks / latest / defer_tick / into_stream exist only inside a tick;
* ticks do not nest (`tick.tick()` does not exist) and ports are top-level;
* tick cycles carry a value of the placeholder's exact type to the next tick.
"""

from __future__ import annotations

from _hl_contract import REASON, Server, Workers, world
from typing_extensions import assert_type

from hydrolite import (
    Bounded,
    Cluster,
    KeyedSingleton,
    KeyedStream,
    OptionalSingleton,
    Process,
    Singleton,
    Stream,
    Tick,
    TickCycle,
    TotalOrder,
    Unbounded,
    nondet,
)

SP = Process[Server]
TP = Tick[Process[Server]]


# ------------------------------------------------------------------ accepted
def accept_enter_and_leave_a_tick() -> None:
    w = world()
    x = w.server.source("x", int)
    batch = x.batch(w.tick, nondet(REASON))
    assert_type(batch, Stream[int, TP, Bounded, TotalOrder])
    assert_type(batch.all_ticks(), Stream[int, SP, Unbounded, TotalOrder])
    assert_type(batch.defer_tick(), Stream[int, TP, Bounded, TotalOrder])
    total = x.fold(0, lambda acc, v: acc + v)
    snap = total.snapshot(w.tick, nondet("any recent total"))
    assert_type(snap, Singleton[int, TP, Bounded])
    assert_type(snap.latest(), Singleton[int, SP, Unbounded])
    assert_type(snap.defer_tick(), OptionalSingleton[int, TP, Bounded])
    assert_type(snap.into_stream(), Stream[int, TP, Bounded, TotalOrder])
    batch.all_ticks().sink("echo")
    w.flow.finalize()


def accept_keyed_and_optional_ticks() -> None:
    w = world()
    ks = w.server.keyed_source("k", str, int)
    kb = ks.batch(w.tick, nondet(REASON))
    assert_type(kb, KeyedStream[str, int, TP, Bounded, TotalOrder])
    assert_type(kb.all_ticks(), KeyedStream[str, int, SP, Unbounded, TotalOrder])
    assert_type(kb.defer_tick(), KeyedStream[str, int, TP, Bounded, TotalOrder])
    table = ks.reduce(lambda old, new: new).snapshot(w.tick, nondet("any recent table"))
    assert_type(table, KeyedSingleton[str, int, TP, Bounded])
    assert_type(table.latest(), KeyedSingleton[str, int, SP, Unbounded])
    assert_type(table.defer_tick(), KeyedSingleton[str, int, TP, Bounded])
    best = w.server.source("x", int).reduce(max).snapshot(w.tick, nondet("any recent max"))
    assert_type(best, OptionalSingleton[int, TP, Bounded])
    assert_type(best.latest(), OptionalSingleton[int, SP, Unbounded])
    assert_type(best.into_stream(), Stream[int, TP, Bounded, TotalOrder])
    w.flow.finalize()


def accept_ticks_on_a_cluster() -> None:
    w = world()
    tick = w.workers.tick()
    assert_type(tick, Tick[Cluster[Workers]])
    batch = w.workers.source("x", int).batch(tick, nondet(REASON))
    assert_type(batch.all_ticks(), Stream[int, Cluster[Workers], Unbounded, TotalOrder])
    w.flow.finalize()


def accept_tick_cycles() -> None:
    w = world()
    handle, count = w.tick.singleton_cycle(0)
    assert_type(handle, TickCycle[Singleton[int, TP, Bounded]])
    arrivals = w.server.source("x", int).batch(w.tick, nondet(REASON))
    handle.complete_next_tick(count.zip(arrivals.count()).map(lambda p: p[0] + p[1]))
    log_handle, log = w.tick.stream_cycle(str)
    assert_type(log, Stream[str, TP, Bounded, TotalOrder])
    log_handle.complete_next_tick(log.chain(arrivals.map(str)))
    last_handle, last = w.tick.optional_cycle(int)
    assert_type(last, OptionalSingleton[int, TP, Bounded])
    last_handle.complete_next_tick(arrivals.last())
    assert_type(w.tick.singleton(1.5), Singleton[float, TP, Bounded])
    w.flow.finalize()


# ------------------------------------------------------------------ rejected (also at run time)
def reject_all_ticks_at_top_level() -> None:
    world().server.source("x", int).all_ticks()  # type: ignore[hydrolite-tick]


def reject_keyed_all_ticks_at_top_level() -> None:
    world().server.keyed_source("k", str, int).all_ticks()  # type: ignore[hydrolite-tick]


def reject_latest_at_top_level() -> None:
    world().server.source("x", int).count().latest()  # type: ignore[hydrolite-tick]


def reject_optional_latest_at_top_level() -> None:
    world().server.source("x", int).first().latest()  # type: ignore[hydrolite-tick]


def reject_keyed_singleton_latest_at_top_level() -> None:
    world().server.keyed_source("k", str, int).count().latest()  # type: ignore[hydrolite-tick]


def reject_defer_tick_at_top_level() -> None:
    world().server.source("x", int).defer_tick()  # type: ignore[hydrolite-tick]


def reject_singleton_defer_tick_at_top_level() -> None:
    world().server.source("x", int).count().defer_tick()  # type: ignore[hydrolite-tick]


def reject_keyed_defer_tick_at_top_level() -> None:
    world().server.keyed_source("k", str, int).defer_tick()  # type: ignore[hydrolite-tick]


def reject_into_stream_at_top_level() -> None:
    world().server.source("x", int).count().into_stream()  # type: ignore[hydrolite-tick]


def reject_batch_inside_a_tick() -> None:
    w = world()
    batch = w.server.source("x", int).batch(w.tick, nondet(REASON))
    batch.batch(w.tick, nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_snapshot_inside_a_tick() -> None:
    w = world()
    snap = w.server.source("x", int).count().snapshot(w.tick, nondet(REASON))
    snap.snapshot(w.tick, nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_keyed_batch_inside_a_tick() -> None:
    w = world()
    kb = w.server.keyed_source("k", str, int).batch(w.tick, nondet(REASON))
    kb.batch(w.tick, nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_batch_into_a_tick_of_another_process() -> None:
    w = world()
    w.server.source("x", int).batch(w.client.tick(), nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_snapshot_into_a_tick_of_a_cluster() -> None:
    w = world()
    count = w.server.source("x", int).count()
    count.snapshot(w.workers.tick(), nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_keyed_snapshot_into_a_tick_of_another_location() -> None:
    w = world()
    table = w.server.keyed_source("k", str, int).count()
    table.snapshot(w.client.tick(), nondet(REASON))  # type: ignore[hydrolite-tick]


def reject_tick_of_a_tick() -> None:
    world().tick.tick()  # type: ignore[attr-defined]


def reject_source_inside_a_tick() -> None:
    world().tick.source("x", int)  # type: ignore[attr-defined]


def reject_sink_inside_a_tick() -> None:
    w = world()
    batch = w.server.source("x", int).batch(w.tick, nondet(REASON))
    batch.sink("out")  # type: ignore[hydrolite-tick]


def reject_keyed_sink_inside_a_tick() -> None:
    w = world()
    kb = w.server.keyed_source("k", str, int).batch(w.tick, nondet(REASON))
    kb.sink("out")  # type: ignore[hydrolite-tick]


def reject_send_from_inside_a_tick() -> None:
    w = world()
    batch = w.server.source("x", int).batch(w.tick, nondet(REASON))
    batch.send(w.client)  # type: ignore[hydrolite-tick]


def reject_cycle_completed_with_another_kind() -> None:
    w = world()
    handle, _ = w.tick.singleton_cycle(0)
    handle.complete_next_tick(w.server.source("x", int).batch(w.tick, nondet(REASON)))  # type: ignore[arg-type]


def reject_cycle_completed_from_another_location() -> None:
    w = world()
    handle, _ = w.tick.stream_cycle(int)
    other = w.client.source("x", int).batch(w.client.tick(), nondet(REASON))
    handle.complete_next_tick(other)  # type: ignore[arg-type]


def reject_cycle_completed_at_top_level() -> None:
    w = world()
    handle, _ = w.tick.singleton_cycle(0)
    handle.complete_next_tick(w.server.source("x", int).count())  # type: ignore[arg-type]


# ------------------------------------------------------------------ rejected by mypy only
def mistype_cycle_completed_with_another_element_type() -> None:
    w = world()
    handle, count = w.tick.singleton_cycle(0)
    handle.complete_next_tick(count.map(str))  # type: ignore[arg-type]
    w.flow.finalize()
