"""Typing contract: locations, network sends, align points and nondet (docs/design.md §1-2).

Location tags are invariant, so collections of `Process[A]` and `Process[B]`, of a tick and
its outer location, or of a cluster and a process never mix. Sends move data between
locations (cluster -> process is keyed by the sending `MemberId`). A `LocalAlignPoint` is
generic in its location. Every non-deterministic observation takes a `NonDet` argument.
"""

from __future__ import annotations

from _hl_contract import REASON, Client, Replicas, Server, Workers, world
from typing_extensions import assert_type

from hydrolite import (
    Bounded,
    Cluster,
    KeyedSingleton,
    KeyedStream,
    LocalAlignPoint,
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
def accept_sends_between_locations() -> None:
    w = world()
    x = w.server.source("x", int)
    assert_type(x.send(w.client), Stream[int, Process[Client], Unbounded, TotalOrder])
    assert_type(x.broadcast(w.workers), Stream[int, Cluster[Workers], Unbounded, TotalOrder])
    routed = x.map(lambda v: (MemberId[Workers](v % 3), str(v)))
    assert_type(routed.demux(w.workers), Stream[str, Cluster[Workers], Unbounded, TotalOrder])
    on_workers = w.workers.source("y", float)
    gathered = on_workers.send(w.server)
    assert_type(gathered, KeyedStream[MemberId[Workers], float, SP, Unbounded, TotalOrder])
    fanned = on_workers.broadcast(w.replicas)
    assert_type(fanned, KeyedStream[MemberId[Workers], float, Cluster[Replicas], Unbounded, TotalOrder])
    rerouted = on_workers.map(lambda v: (MemberId[Replicas](0), v)).demux(w.replicas)
    assert_type(rerouted, KeyedStream[MemberId[Workers], float, Cluster[Replicas], Unbounded, TotalOrder])
    gathered.entries().sink("gathered")
    keyed = x.map(lambda v: (str(v), v)).into_keyed()
    sharded = keyed.demux_by_key(w.workers)  # from a process: each key keeps its order
    assert_type(sharded, KeyedStream[str, int, Cluster[Workers], Unbounded, TotalOrder])
    resharded = sharded.demux_by_key(w.replicas)  # from a cluster: a key's senders interleave
    assert_type(resharded, KeyedStream[str, int, Cluster[Replicas], Unbounded, NoOrder])
    w.flow.finalize()


def accept_align_points_of_the_own_location() -> None:
    w = world()
    align = w.server.local_align_point()
    assert_type(align, LocalAlignPoint[SP])
    increments = w.server.keyed_source("increment", str, type(None))
    count = increments.values().fold_commutative(0, lambda c, _: c + 1)
    assert_type(increments.release_aligned(align), KeyedStream[str, None, SP, Unbounded, TotalOrder])
    snap = count.snapshot_aligned(w.tick, align, nondet("any count consistent with released acks"))
    assert_type(snap, Singleton[int, TP, Bounded])
    queries = w.server.source("query", str)
    batch = queries.batch_aligned(w.tick, align, nondet("queries may be answered in any grouping"))
    assert_type(batch, Stream[str, TP, Bounded, TotalOrder])
    assert_type(queries.aligned_at(align), Stream[str, SP, Unbounded, TotalOrder])
    assert_type(count.aligned_at(align), Singleton[int, SP, Unbounded])
    best = queries.map(len).reduce(max)
    assert_type(best.snapshot_aligned(w.tick, align, nondet(REASON)), OptionalSingleton[int, TP, Bounded])
    table = increments.count()
    assert_type(table.snapshot_aligned(w.tick, align, nondet(REASON)), KeyedSingleton[str, int, TP, Bounded])
    assert_type(
        increments.batch_aligned(w.tick, align, nondet(REASON)), KeyedStream[str, None, TP, Bounded, TotalOrder]
    )
    batch.cross_singleton(snap).all_ticks().sink("answers")
    w.flow.finalize()


def accept_same_location_combinations() -> None:
    w = world()
    a = w.client.source("a", int)
    b = w.client.source("b", int)
    assert_type(a.merge_unordered(b).count(), Singleton[int, Process[Client], Unbounded])
    from_server = w.server.source("c", int).send(w.client)
    assert_type(a.cross_product(from_server), Stream[tuple[int, int], Process[Client], Unbounded, NoOrder])
    w.flow.finalize()


# ------------------------------------------------------------------ rejected (also at run time)
def reject_mixing_two_processes() -> None:
    w = world()
    w.server.source("a", int).merge_unordered(w.client.source("b", int))  # type: ignore[hydrolite-location]


def reject_joining_two_processes() -> None:
    w = world()
    left = w.server.source("a", str).map(lambda s: (s, 1))
    right = w.client.source("b", str).map(lambda s: (s, 2.0))
    left.join(right)  # type: ignore[hydrolite-location]


def reject_mixing_a_tick_and_its_location() -> None:
    w = world()
    x = w.server.source("x", int)
    x.batch(w.tick, nondet(REASON)).merge_unordered(x)  # type: ignore[hydrolite-location]


def reject_mixing_ticks_of_two_processes() -> None:
    w = world()
    mine = w.server.source("x", int).batch(w.tick, nondet(REASON))
    theirs = w.client.source("y", int).count().snapshot(w.client.tick(), nondet(REASON))
    mine.cross_singleton(theirs)  # type: ignore[hydrolite-location]


def reject_mixing_a_cluster_and_a_process() -> None:
    w = world()
    w.workers.source("a", int).cross_product(w.server.source("b", int))  # type: ignore[hydrolite-location]


def reject_zip_across_locations() -> None:
    w = world()
    w.server.source("a", int).count().zip(w.client.source("b", int).count())  # type: ignore[hydrolite-location]


def reject_send_to_a_cluster() -> None:
    w = world()
    w.server.source("x", int).send(w.workers)  # type: ignore[hydrolite-location]


def reject_broadcast_to_a_process() -> None:
    w = world()
    w.server.source("x", int).broadcast(w.client)  # type: ignore[hydrolite-location]


def reject_demux_to_a_process() -> None:
    w = world()
    routed = w.server.source("x", int).map(lambda v: (MemberId[Workers](v), v))
    routed.demux(w.client)  # type: ignore[hydrolite-location]


def reject_demux_by_key_to_a_process() -> None:
    w = world()
    keyed = w.server.source("x", int).map(lambda v: (v, v)).into_keyed()
    keyed.demux_by_key(w.client)  # type: ignore[hydrolite-location]


def reject_demux_by_key_inside_a_tick() -> None:
    w = world()
    keyed = w.server.source("x", int).map(lambda v: (v, v)).into_keyed()
    batch = keyed.batch(w.server.tick(), nondet(REASON))
    batch.demux_by_key(w.workers)  # type: ignore[hydrolite-tick]


def reject_release_aligned_with_another_locations_point() -> None:
    w = world()
    w.server.source("x", int).release_aligned(w.client.local_align_point())  # type: ignore[hydrolite-location]


def reject_batch_aligned_with_another_locations_point() -> None:
    w = world()
    x = w.server.source("x", int)
    x.batch_aligned(w.tick, w.workers.local_align_point(), nondet(REASON))  # type: ignore[hydrolite-location]


def reject_snapshot_aligned_with_another_locations_point() -> None:
    w = world()
    count = w.server.source("x", int).count()
    count.snapshot_aligned(w.tick, w.client.local_align_point(), nondet(REASON))  # type: ignore[hydrolite-location]


def reject_keyed_release_aligned_with_another_locations_point() -> None:
    w = world()
    ks = w.server.keyed_source("k", str, int)
    ks.release_aligned(w.client.local_align_point())  # type: ignore[hydrolite-location]


def reject_aligned_at_with_another_locations_point() -> None:
    w = world()
    w.server.source("x", int).count().aligned_at(w.client.local_align_point())  # type: ignore[hydrolite-location]


def reject_batch_without_nondet() -> None:
    w = world()
    w.server.source("x", int).batch(w.tick)  # type: ignore[call-arg]


def reject_snapshot_without_nondet() -> None:
    w = world()
    w.server.source("x", int).count().snapshot(w.tick)  # type: ignore[call-arg]


def reject_batch_aligned_without_nondet() -> None:
    w = world()
    w.server.source("x", int).batch_aligned(w.tick, w.server.local_align_point())  # type: ignore[call-arg]


def reject_assume_ordering_without_nondet() -> None:
    world().server.source("x", int).weaken_ordering().assume_ordering()  # type: ignore[call-arg]


def reject_batch_with_a_plain_string_reason() -> None:
    w = world()
    w.server.source("x", int).batch(w.tick, "arrival order does not matter")  # type: ignore[hydrolite-nondet]


def reject_location_named_by_a_string() -> None:
    world().flow.process("Server")  # type: ignore[arg-type]
