"""Every type rule also holds at run time, for programs that are not type-checked.

Misuses are built through `Any` (as untyped code would), and each must raise a
`BuildError` (a TypeError) or `FlowError` whose message states what the operator required,
what it found, how to fix it, and *this* file's line, echoing the code on that line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, cast

import pytest

from hydrolite import BuildError, FlowBuilder, FlowError, HydroliteError, MemberId, NonDet, nondet

HERE = os.path.abspath(__file__)
NAME = os.path.basename(HERE)
R = "any batch boundary is acceptable to this test"


class Server: ...


class Client: ...


class Workers: ...


class W:
    """A fresh flow whose handles are typed `Any`, like an untyped program's."""

    def __init__(self, name: str = "rules") -> None:
        self.flow = FlowBuilder(name)
        self.server: Any = self.flow.process(Server)
        self.client: Any = self.flow.process(Client)
        self.workers: Any = self.flow.cluster(Workers)
        self.tick: Any = self.server.tick()

    def ints(self, port: str = "x") -> Any:
        return self.server.source(port, int)

    def bag(self) -> Any:
        return self.ints("bag").weaken_ordering()

    def keyed(self, port: str = "k") -> Any:
        return self.server.keyed_source(port, str, int)

    def batch(self, port: str = "b") -> Any:
        return self.ints(port).batch(self.tick, nondet(R))

    def snap(self) -> Any:
        return self.ints("s").count().snapshot(self.tick, nondet(R))


def this_line() -> int:
    """The caller's current line."""
    return sys._getframe(1).f_lineno


def rejects(
    thunk: Callable[[], object], *parts: str, line: int | None = None, error: type[HydroliteError] = BuildError
) -> BuildError | FlowError:
    """Run a misuse; check the error's kind, its site (this file) and its message parts."""
    expected = thunk.__code__.co_firstlineno if line is None else line
    with pytest.raises(error) as info:
        thunk()
    err = info.value
    assert isinstance(err, (BuildError, FlowError))
    msg = str(err)
    assert (err.site.file, err.site.line) == (HERE, expected), msg
    assert f"{NAME}:{expected}: " in msg, msg
    assert f"{expected:>5} | " in msg, f"the user's code line is not echoed:\n{msg}"
    assert "fix: " in msg, msg
    if isinstance(err, BuildError):
        assert err.required and err.found and err.fix
        assert f"requires {err.required}" in msg and f"found: {err.found}" in msg, msg
    for part in parts:
        assert part in msg, f"{part!r} not in:\n{msg}"
    return err


# ------------------------------------------------------------------ ordering
NO_ORDER_STREAM_OPS: list[tuple[str, Callable[[Any], object]]] = [
    ("fold()", lambda s: s.fold(0, lambda a, v: a + v)),
    ("reduce()", lambda s: s.reduce(lambda a, v: a + v)),
    ("first()", lambda s: s.first()),
    ("last()", lambda s: s.last()),
    ("enumerate()", lambda s: s.enumerate()),
]
NO_ORDER_KEYED_OPS: list[tuple[str, Callable[[Any], object]]] = [
    ("fold()", lambda k: k.fold(0, lambda a, v: a + v)),
    ("reduce()", lambda k: k.reduce(lambda a, v: v)),
    ("first()", lambda k: k.first()),
    ("last()", lambda k: k.last()),
    ("enumerate()", lambda k: k.enumerate()),
]


@pytest.mark.parametrize("op, use", NO_ORDER_STREAM_OPS, ids=[o for o, _ in NO_ORDER_STREAM_OPS])
def test_order_sensitive_stream_ops_need_total_order(op: str, use: Callable[[Any], object]) -> None:
    w = W()
    bag = w.bag()
    err = rejects(
        lambda: use(bag),
        f"{op} requires a TotalOrder collection",
        "NoOrder",
        "weaken_ordering()",
        "assume_ordering(nondet(...))",
        line=use.__code__.co_firstlineno,
    )
    assert f"created by weaken_ordering() at {bag.node.site}" in str(err)


@pytest.mark.parametrize("op, use", NO_ORDER_KEYED_OPS, ids=[o for o, _ in NO_ORDER_KEYED_OPS])
def test_order_sensitive_keyed_ops_need_total_order(op: str, use: Callable[[Any], object]) -> None:
    bag = W().keyed().flat_map_unordered(lambda v: {v})
    rejects(
        lambda: use(bag),
        f"{op} requires a TotalOrder collection",
        "KeyedStream[str, ?, Process[Server], Unbounded, NoOrder]",
        line=use.__code__.co_firstlineno,
    )


def test_commutative_aggregation_and_justified_order_are_accepted() -> None:
    w = W()
    bag = w.bag()
    assert bag.fold_commutative(0, lambda a, v: a + v).node.commutative is True
    assert bag.reduce_commutative(lambda a, v: a + v).node.commutative is True
    ordered = bag.assume_ordering(nondet("arrival order is fine for a running max"))
    assert ordered.fold(0, max).node.meta.ordered
    assert w.keyed().weaken_ordering().fold_commutative(0, lambda a, v: a + v).node.commutative is True
    rejects(lambda: bag.assume_ordering("arrival order"), 'a nondet("why") justification', "str 'arrival order'")


# ------------------------------------------------------------------ boundedness
def test_sort_and_chain_need_bounded() -> None:
    w = W()
    x, fixed = w.ints(), w.server.source_iter([1, 2])
    rejects(lambda: x.sort(), "sort() requires a Bounded collection", "Unbounded", "batch(tick")
    rejects(lambda: x.chain(fixed), "chain() requires a Bounded collection", "the first side")
    rejects(lambda: fixed.chain(x), "chain() requires a Bounded collection", "both sides")
    assert fixed.sort().node.meta.ordered and fixed.chain(fixed).node.meta.bounded


def test_anti_join_negative_side_and_cross_singleton_need_bounded() -> None:
    w = W()
    pairs = w.ints().map(lambda v: (v, v))
    rejects(lambda: pairs.anti_join(w.ints("neg")), "anti_join() requires a Bounded collection", "negative side")
    assert pairs.anti_join(w.server.source_iter([1])).node.meta.bounded is False
    rejects(
        lambda: w.server.source_iter([1]).cross_singleton(w.ints("c").count()),
        "cross_singleton() requires a Bounded",
        "Singleton[int, Process[Server], Unbounded]",
        "snapshot(tick",
    )


def test_keyed_singleton_reads_need_bounded() -> None:
    w = W()
    table = w.keyed().reduce(lambda a, v: v)
    requests = w.server.source_iter([("k", 1.0)]).into_keyed()
    key = w.server.source_iter(["k"]).fold("", lambda _, k: k)
    rejects(
        lambda: table.entries(),
        "entries() requires a Bounded collection",
        "KeyedSingleton[str, int, Process[Server], Unbounded]",
    )
    rejects(lambda: table.keys(), "keys() requires a Bounded collection")
    rejects(lambda: table.values(), "values() requires a Bounded collection")
    rejects(lambda: table.get(key), "get() requires a Bounded collection")
    rejects(lambda: table.get_many_if_present(requests), "get_many_if_present() requires a Bounded collection")
    rejects(
        lambda: requests.lookup_keyed_singleton(table),
        "lookup_keyed_singleton() requires a Bounded collection",
        "snapshot(tick",
    )
    rejects(
        lambda: w.keyed("k2").lookup_keyed_singleton(table), "lookup_keyed_singleton() requires a Bounded collection"
    )


# ------------------------------------------------------------------ ticks
def test_leaving_or_stepping_a_tick_needs_a_tick() -> None:
    w = W()
    x, ks = w.ints(), w.keyed()
    count, best, table = x.count(), x.first(), ks.count()
    inside = "requires a collection inside a tick"
    rejects(
        lambda: x.all_ticks(),
        f"all_ticks() {inside}",
        "Stream[int, Process[Server], Unbounded, TotalOrder]",
        "batch()/snapshot()",
    )
    rejects(lambda: ks.all_ticks(), f"all_ticks() {inside}")
    rejects(lambda: x.defer_tick(), f"defer_tick() {inside}")
    rejects(lambda: ks.defer_tick(), f"defer_tick() {inside}")
    rejects(lambda: count.latest(), f"latest() {inside}")
    rejects(lambda: best.latest(), f"latest() {inside}")
    rejects(lambda: table.latest(), f"latest() {inside}")
    rejects(lambda: count.defer_tick(), f"defer_tick() {inside}")
    rejects(lambda: best.defer_tick(), f"defer_tick() {inside}")
    rejects(lambda: table.defer_tick(), f"defer_tick() {inside}")
    rejects(lambda: count.into_stream(), f"into_stream() {inside}")


def test_entering_a_tick_needs_a_top_level_collection() -> None:
    w = W()
    batch, snap = w.batch(), w.snap()
    kb = w.keyed().batch(w.tick, nondet(R))
    top = "requires a top-level collection (on a Process or Cluster)"
    rejects(
        lambda: batch.batch(w.tick, nondet(R)), f"batch() {top}", "Tick[Process[Server]]", "top-level collections only"
    )
    rejects(lambda: kb.batch(w.tick, nondet(R)), f"batch() {top}")
    rejects(lambda: snap.snapshot(w.tick, nondet(R)), f"snapshot() {top}")
    rejects(lambda: batch.sink("out"), f"sink() {top}", "all_ticks()")
    rejects(lambda: kb.sink("out"), f"sink() {top}")
    rejects(lambda: batch.send(w.client), f"send() {top}")
    rejects(lambda: batch.release_aligned(w.server.local_align_point()), f"release_aligned() {top}")
    rejects(lambda: snap.aligned_at(w.server.local_align_point()), f"aligned_at() {top}")


def test_batch_and_snapshot_need_a_tick_of_their_own_location() -> None:
    w = W()
    x, count, table = w.ints(), w.ints("c").count(), w.keyed().count()
    own = "requires a tick of the collection's own location Process[Server]"
    rejects(
        lambda: x.batch(w.client.tick(), nondet(R)),
        f"batch() {own}",
        "a tick of Process[Client]",
        ".tick() on the location",
    )
    rejects(lambda: x.batch(w.workers.tick(), nondet(R)), f"batch() {own}", "a tick of Cluster[Workers]")
    rejects(lambda: count.snapshot(w.client.tick(), nondet(R)), f"snapshot() {own}")
    rejects(lambda: table.snapshot(w.client.tick(), nondet(R)), f"snapshot() {own}")
    ap = w.server.local_align_point()
    rejects(lambda: x.batch_aligned(w.client.tick(), ap, nondet(R)), f"batch_aligned() {own}")
    rejects(lambda: count.snapshot_aligned(w.client.tick(), ap, nondet(R)), f"snapshot_aligned() {own}")
    rejects(lambda: x.batch(w.server, nondet(R)), "batch() requires a Tick", "Process", "loc.tick()")


def test_ticks_do_not_nest_and_hold_no_ports() -> None:
    tick = W().tick
    rejects(lambda: tick.tick(), "tick() requires a Process or Cluster", "ticks do not nest", "tick.outer.tick()")
    rejects(lambda: tick.source("x", int), "source() requires a Process or Cluster", "a tick (Tick#0[Process[Server]])")
    rejects(lambda: tick.keyed_source("k", str, int), "keyed_source() requires a Process or Cluster")
    rejects(lambda: tick.source_iter([1]), "source_iter() requires a Process or Cluster", "tick.singleton(value)")
    rejects(lambda: tick.local_align_point(), "local_align_point() requires a Process or Cluster", "tick.outer")


# ------------------------------------------------------------------ locations
def test_collections_of_different_locations_do_not_mix() -> None:
    w = W()
    x, y = w.ints(), w.client.source("y", int)
    same = "requires both sides at the same location"
    rejects(
        lambda: x.merge_unordered(y), f"merge_unordered() {same} (Process[Server])", "found: Process[Client]", "send()"
    )
    rejects(lambda: x.join(y), f"join() {same}")
    rejects(lambda: x.cross_product(w.workers.source("z", int)), f"cross_product() {same}", "Cluster[Workers]")
    rejects(
        lambda: w.batch().merge_unordered(x),
        f"merge_unordered() {same} (Tick#0[Process[Server]])",
        "all_ticks()/latest()",
    )
    rejects(lambda: w.batch("b2").cross_singleton(x.count()), f"cross_singleton() {same}")
    rejects(lambda: x.count().zip(y.count()), f"zip() {same}")
    table = w.client.keyed_source("t", str, int).count().snapshot(w.client.tick(), nondet(R))
    batch = w.keyed().batch(w.tick, nondet(R))
    rejects(lambda: batch.lookup_keyed_singleton(table), f"lookup_keyed_singleton() {same}")


def test_two_ticks_of_one_location_do_not_mix() -> None:
    # Runtime-only: both ticks have the static type Tick[Process[Server]].
    w = W()
    other_tick = w.server.tick()
    late = w.ints("late").batch(other_tick, nondet(R))
    rejects(
        lambda: w.batch().chain(late),
        "chain() requires both sides at the same location (Tick#0[Process[Server]])",
        "Tick#1[Process[Server]]",
    )
    handle, _ = w.tick.stream_cycle(int)
    rejects(
        lambda: handle.complete_next_tick(late),
        "complete_next_tick() requires a Stream[int, Tick[Process[Server]], Bounded, TotalOrder]",
    )


def test_two_flows_do_not_mix() -> None:
    # Runtime-only: equal tags give equal types (and equal location ids) in both flows.
    a, b = W("a"), W("b")
    rejects(
        lambda: a.ints().merge_unordered(b.ints()),
        "merge_unordered() requires a collection or location of the same FlowBuilder ('a')",
        "another FlowBuilder ('b')",
    )
    rejects(
        lambda: a.ints("y").batch(b.tick, nondet(R)),
        "batch() requires a collection or location of the same FlowBuilder",
    )
    rejects(
        lambda: a.ints("z").release_aligned(b.server.local_align_point()),
        "release_aligned() requires a collection or location of the same FlowBuilder",
    )
    rejects(lambda: a.ints("s").send(b.client), "send() requires a collection or location of the same FlowBuilder")
    handle, _ = a.tick.stream_cycle(int)
    rejects(lambda: handle.complete_next_tick(b.batch()), "complete_next_tick() requires")


def test_arguments_of_the_wrong_kind() -> None:
    w = W()
    batch = w.batch()
    rejects(
        lambda: batch.cross_singleton(batch),
        "cross_singleton() requires a Singleton or OptionalSingleton as its argument",
        "Stream[int",
    )
    rejects(lambda: batch.join(batch.count()), "join() requires a Stream of (key, value) tuples", "Singleton[int")
    rejects(lambda: batch.map(3), "map() requires a function", "int 3")
    rejects(lambda: w.ints("f").filter("x > 0"), "filter() requires a function")
    rejects(lambda: w.snap().zip(batch), "zip() requires a Singleton or OptionalSingleton")


# ------------------------------------------------------------------ network
def test_sends_need_the_right_kind_of_destination() -> None:
    w = W()
    x = w.ints()
    rejects(lambda: x.send(w.workers), "send() requires a Process destination", "Cluster", "demux_by_key() target")
    rejects(lambda: x.broadcast(w.client), "broadcast() requires a Cluster destination", "Process")
    rejects(
        lambda: x.map(lambda v: (MemberId[Workers](v), v)).demux(w.client), "demux() requires a Cluster destination"
    )
    rejects(
        lambda: x.send(w.server),
        "send() requires a different location to send to",
        "the collection's own location",
        "drop the send",
    )
    rejects(lambda: w.workers.source("c", int).broadcast(w.workers), "broadcast() requires a different location")
    keyed = x.map(lambda v: (v, v)).into_keyed()
    rejects(lambda: keyed.demux_by_key(w.client), "demux_by_key() requires a Cluster destination", "Process")
    sharded = keyed.demux_by_key(w.workers)
    rejects(lambda: sharded.demux_by_key(w.workers), "demux_by_key() requires a different location")
    rejects(
        lambda: keyed.batch(w.server.tick(), nondet("any")).demux_by_key(w.workers),
        "demux_by_key() requires a top-level collection",
        "all_ticks() the keyed stream first",
    )


# ------------------------------------------------------------------ align points
def test_align_points_are_local_to_one_location() -> None:
    w = W()
    x, count, best, table, ks = w.ints(), w.ints("c").count(), w.ints("f").first(), w.keyed().count(), w.keyed("k2")
    theirs = w.client.local_align_point()
    local = "requires an align point of the collection's location Process[Server]"
    for use in (
        lambda: x.release_aligned(theirs),
        lambda: ks.release_aligned(theirs),
        lambda: x.batch_aligned(w.tick, theirs, nondet(R)),
        lambda: ks.batch_aligned(w.tick, theirs, nondet(R)),
        lambda: count.snapshot_aligned(w.tick, theirs, nondet(R)),
        lambda: best.snapshot_aligned(w.tick, theirs, nondet(R)),
        lambda: table.snapshot_aligned(w.tick, theirs, nondet(R)),
        lambda: x.aligned_at(theirs),
        lambda: count.aligned_at(theirs),
        lambda: table.aligned_at(theirs),
    ):
        err = rejects(use, local, "an align point of Process[Client]", "cannot align across the network")
        assert f"created at {theirs.site}" in str(err)
    rejects(
        lambda: x.release_aligned(w.tick),
        "release_aligned() requires a LocalAlignPoint",
        "Tick",
        "loc.local_align_point()",
    )
    rejects(lambda: x.aligned_at(w.workers.local_align_point()), f"aligned_at() {local}", "Cluster[Workers]")


# ------------------------------------------------------------------ nondet
@pytest.mark.parametrize(
    "reason", ["", "   ", "\n\t", "TODO", "todo.", "FIXME:", "tbd", "...", "?", "nondet", "XXX", "--"]
)
def test_nondet_needs_a_real_reason(reason: str) -> None:
    rejects(
        lambda: nondet(reason),
        "nondet() requires a non-empty reason that is not a placeholder",
        repr(reason),
        "say why",
    )


@pytest.mark.parametrize("reason", [None, 42, b"bytes"])
def test_nondet_reason_must_be_a_string(reason: object) -> None:
    rejects(lambda: nondet(cast(Any, reason)), "nondet() requires a string", type(reason).__name__)


def test_nondet_is_required_and_typed_wherever_nondeterminism_is_observed() -> None:
    w = W()
    x, count = w.ints(), w.ints("c").count()
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'nondet'"):
        x.batch(w.tick)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'nondet'"):
        count.snapshot(w.tick)
    token = "queries may be answered in any grouping"
    rejects(lambda: x.batch(w.tick, token), 'batch() requires a nondet("why") justification', f"str {token!r}")
    rejects(lambda: count.snapshot(w.tick, None), 'snapshot() requires a nondet("why")', "NoneType None")
    rejects(
        lambda: x.batch_aligned(w.tick, w.server.local_align_point(), "why"), 'batch_aligned() requires a nondet("why")'
    )
    nd, line = nondet("  any grouping of queries is fine  "), this_line()
    assert isinstance(nd, NonDet) and nd.reason == "any grouping of queries is fine"
    assert (nd.site.file, nd.site.line) == (HERE, line)
    assert x.batch(w.tick, nd).node.nondet is nd


# ------------------------------------------------------------------ whole-flow rules
def test_duplicate_port_names() -> None:
    w = W()
    first = w.ints("x")
    err = rejects(
        lambda: w.server.source("x", str),
        "source port 'x' is declared twice",
        f"first at {first.node.site}",
        "own name",
        error=FlowError,
    )
    assert isinstance(err, FlowError) and not isinstance(err, TypeError)
    rejects(lambda: w.client.keyed_source("x", str, int), "source port 'x' is declared twice", error=FlowError)
    first.sink("out")
    rejects(lambda: w.ints("y").sink("out"), "sink port 'out' is declared twice", "merge the streams", error=FlowError)


def test_duplicate_location_tags() -> None:
    w = W()
    rejects(
        lambda: w.flow.process(Server),
        "tag Server already names a location",
        "one tag class per location",
        error=FlowError,
    )
    rejects(lambda: w.flow.cluster(Client), "tag Client already names a location", error=FlowError)
    rejects(
        lambda: w.flow.process(cast(Any, "Server")),
        "process()/cluster() requires a tag class",
        "str 'Server'",
        "class Server",
    )


def test_incomplete_tick_cycle_is_reported_at_its_creation() -> None:
    w = W()
    (handle, _), created = w.tick.singleton_cycle(0), this_line()
    rejects(
        lambda: w.flow.finalize(), "cycle#0 is never completed", "complete_next_tick", line=created, error=FlowError
    )
    handle.complete_next_tick(w.snap())
    assert w.flow.finalize().roots


def test_cycle_completed_twice_or_with_the_wrong_collection() -> None:
    w = W()
    handle, count = w.tick.singleton_cycle(0)
    rejects(
        lambda: handle.complete_next_tick(w.batch()),
        "complete_next_tick() requires a Singleton[int, Tick[Process[Server]], Bounded] (the cycle's own kind and tick)",
        "Stream[int",
    )
    rejects(
        lambda: handle.complete_next_tick(w.ints("top").count()),
        "complete_next_tick() requires a Singleton",
        "Singleton[int, Process[Server], Unbounded]",
    )
    rejects(lambda: handle.complete_next_tick(cast(Any, 5)), "complete_next_tick() requires", "found: 5")
    handle.complete_next_tick(count.map(lambda v: v + 1))
    rejects(
        lambda: handle.complete_next_tick(count),
        "cycle#0 (created at",
        "is completed twice",
        "exactly once",
        error=FlowError,
    )
    s_handle, log = w.tick.stream_cycle(int)
    rejects(
        lambda: s_handle.complete_next_tick(log.weaken_ordering()),
        "complete_next_tick() requires a TotalOrder collection",
        "NoOrder",
        "assume_ordering",
    )


def test_a_finalized_flow_is_closed() -> None:
    w = W()
    x = w.ints()
    handle, _ = w.tick.stream_cycle(int)
    handle.complete_next_tick(w.batch())
    batch = w.batch("late")
    w.flow.finalize()
    closed = "flow 'rules' is already finalized"
    for use in (
        lambda: w.flow.process(Workers),
        lambda: w.server.tick(),
        lambda: w.server.local_align_point(),
        lambda: w.server.source("new", int),
        lambda: x.sink("out"),
        lambda: w.tick.stream_cycle(int),
        lambda: w.flow.finalize(),
    ):
        rejects(use, closed, "new FlowBuilder", error=FlowError)
    h2: Any = handle
    rejects(lambda: h2.complete_next_tick(batch), closed, error=FlowError)


# ------------------------------------------------------------------ truth tests
def test_collections_have_no_truth_value() -> None:
    w = W()
    x = w.ints()
    rejects(
        lambda: bool(x), "a live collection requires an explicit operator", "truth test", "filter(), fold() or count()"
    )
    rejects(lambda: not x.count(), "a live collection requires")
    rejects(lambda: x and w.ints("y"), "a live collection requires")
    rejects(lambda: [v for v in [x] if v], "a live collection requires")
