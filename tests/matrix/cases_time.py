"""Operator matrix cases (continued): time (defer_tick, cycles, latest), order, network and explicit alignment."""

from __future__ import annotations

from hydrolite.ir import nodes as n

from . import (
    ALIGNED,
    ANY,
    ORDER,
    VERSION,
    Client,
    Harness,
    Proc,
    batch_of_lists,
    case,
    each,
    numbered,
    sinks,
    yields,
)


# ---------------------------------------------------------------- time: defer_tick, cycles, latest
def _deferred_streams(p: Proc) -> None:
    t, b = batch_of_lists(p)
    handle, previous = t.stream_cycle(int)
    handle.complete_next_tick(b.map(lambda x: x * 10))
    sinks(
        {
            "now": b,
            "defer_tick": b.defer_tick(),
            "keyed_defer_tick": b.map(lambda x: ("k", x)).into_keyed().defer_tick(),
            "stream_cycle": previous,
        }
    )


@case("defer-tick-stream-cycle", _deferred_streams, n.DeferTick, n.CycleSource, n.CycleSink)
def _deferred_streams_run(s: Harness) -> None:
    s.sender("xs").send([1, 2])
    s.receiver("now").assert_yields([1, 2])
    s.sender("xs").send([3])  # by the time this batch ran, the previous one is out
    s.receiver("now").assert_yields([3])
    yields(s, {"defer_tick": [1, 2], "keyed_defer_tick": [("k", 1), ("k", 2)], "stream_cycle": [10, 20]})
    s.sender("xs").send([])
    yields(s, {"defer_tick": [3], "keyed_defer_tick": [("k", 3)], "stream_cycle": [30]})


@case(
    "defer-tick-stream-cycle-idle",
    _deferred_streams,
    n.DeferTick,
    n.CycleSource,
)
def _deferred_idle_run(s: Harness) -> None:
    s.sender("xs").send([1, 2])
    s.receiver("now").assert_yields([1, 2])
    yields(
        s, {"defer_tick": [1, 2], "stream_cycle": [10, 20], "keyed_defer_tick": [("k", 1), ("k", 2)]}
    )  # a run of its own


def _deferred_values(p: Proc) -> None:
    b = batch_of_lists(p)[1]
    sinks(
        {
            "count": b.count(),
            "singleton": b.count().defer_tick(),
            "optional": b.last().defer_tick(),
            "keyed_singleton": b.map(lambda x: (x % 2, x)).into_keyed().count().defer_tick(),
        }
    )


@case("defer-tick-values", _deferred_values, n.DeferTick, n.Count, n.Last)
def _deferred_values_run(s: Harness) -> None:
    s.sender("xs").send([1, 2, 3])  # the first tick: nothing deferred yet
    s.receiver("count").assert_yields([3])
    s.sender("xs").send([4])
    yields(
        s,
        {"count": [1], "singleton": [3], "optional": [3], "keyed_singleton": [(1, 2), (0, 1)]},
        unordered={"keyed_singleton"},
    )
    s.sender("xs").send([])
    yields(s, {"count": [0], "singleton": [1], "optional": [4], "keyed_singleton": [(0, 1)]})


def _cycles(p: Proc) -> None:
    t, b = batch_of_lists(p)
    handle, total = t.singleton_cycle(100)
    new_total = total.zip(b.fold_commutative(0, lambda a, x: a + x)).map(lambda ab: ab[0] + ab[1])
    handle.complete_next_tick(new_total)
    last_handle, previous_last = t.optional_cycle(int)
    last_handle.complete_next_tick(b.last())
    sinks({"singleton_cycle": new_total, "optional_cycle": b.cross_singleton(previous_last.unwrap_or(-1))})


@case("singleton-optional-cycle", _cycles, n.CycleSource, n.CycleSink, n.DeferTick, n.Zip, n.UnwrapOr)
def _cycles_run(s: Harness) -> None:
    s.sender("xs").send([1, 2])
    yields(s, {"singleton_cycle": [103], "optional_cycle": [(1, -1), (2, -1)]})
    s.sender("xs").send([])  # last() is empty: the optional cycle carries nothing
    yields(s, {"singleton_cycle": [103]})
    s.sender("xs").send([4])
    yields(s, {"singleton_cycle": [107], "optional_cycle": [(4, -1)]})
    s.sender("xs").send([5])
    yields(s, {"singleton_cycle": [112], "optional_cycle": [(5, 4)]})


def _latest(p: Proc) -> None:
    a, b = p.tick(), p.tick()
    batch = p.source("xs", list[int]).batch(a, ANY).flat_map_ordered(each)
    queries = p.source("q", str).batch(b, ANY)
    sinks(
        {
            "count": batch.count(),
            "latest": queries.cross_singleton(batch.count().latest().snapshot(b, VERSION)),
            "latest_optional": queries.cross_singleton(batch.last().latest().snapshot(b, VERSION)),
        }
    )


@case("latest", _latest, n.Latest, n.Snapshot)
def _latest_run(s: Harness) -> None:
    s.sender("xs").send([5, 6])
    s.receiver("count").assert_yields([2])
    s.sender("q").send("a")  # the other tick sees the only version there is
    yields(s, {"latest": [("a", 2)], "latest_optional": [("a", 6)]})
    s.sender("xs").send([7])
    s.receiver("count").assert_yields([1])
    s.sender("q").send("b")  # a plain snapshot: the previous version is still legal
    assert s.receiver("latest").next() in (("b", 2), ("b", 1))
    assert s.receiver("latest_optional").next() in (("b", 6), ("b", 7))


def _latest_keyed(p: Proc) -> None:
    a, b = p.tick(), p.tick()
    table = p.source("xs", list[tuple[str, int]]).batch(a, ANY).flat_map_ordered(each).into_keyed().count().latest()
    p.source("q", str).batch(b, ANY).cross_singleton(table.snapshot(b, VERSION).get(b.singleton("a"))).all_ticks().sink(
        "latest_keyed"
    )


@case(
    "latest-keyed",
    _latest_keyed,
    n.Latest,
    n.KeyedGet,
)
def _latest_keyed_run(s: Harness) -> None:
    s.sender("xs").send([("a", 1), ("a", 2)])
    s.sender("q").send("x")  # the query tick waits for a first version of the table
    s.receiver("latest_keyed").assert_yields([("x", 2)])


# ---------------------------------------------------------------- order
def _ordering(p: Proc) -> None:
    src, kv, b = p.source("in", int), p.keyed_source("kv", str, int), batch_of_lists(p)[1]
    sinks(
        {
            "assume_ordering": src.weaken_ordering().assume_ordering(ORDER).enumerate(),
            "weaken_ordering": src.weaken_ordering(),
            "keyed_assume_ordering": kv.weaken_ordering().assume_ordering(ORDER).enumerate().entries(),
            "tick_assume_ordering": b.weaken_ordering().assume_ordering(ORDER).enumerate(),
            "tick_weaken_sort": b.weaken_ordering().sort(),
            "keyed_weaken_fold": b.map(lambda x: (x % 2, x))
            .into_keyed()
            .weaken_ordering()
            .fold_commutative(0, lambda a, x: a + x),
        }
    )


@case("ordering", _ordering, n.AssumeOrdering, n.WeakenOrdering, n.Enumerate, n.Sort)
def _ordering_run(s: Harness) -> None:
    s.sender("in").send_many([3, 1, 2])
    numbered(s, "assume_ordering", [3, 1, 2])
    s.receiver("weaken_ordering").assert_yields_unordered([3, 1, 2])
    s.sender("kv").send_many([("a", 1), ("b", 2), ("a", 3)])
    numbered(s, "keyed_assume_ordering", [("a", 1), ("b", 2), ("a", 3)], keyed=True)
    s.sender("xs").send([2, 1, 2])
    numbered(s, "tick_assume_ordering", [2, 1, 2])
    yields(s, {"tick_weaken_sort": [1, 2, 2], "keyed_weaken_fold": [(0, 4), (1, 1)]}, unordered={"keyed_weaken_fold"})


# ---------------------------------------------------------------- network and explicit alignment
def _send(p: Proc) -> None:
    p.flow.process(Client).source("in", int).map(lambda x: x + 1).send(p).map(lambda x: x * 10).sink("received")


@case("send-process-to-process", _send, n.Send, n.Map)
def _send_run(s: Harness) -> None:
    s.sender("in").send_many([1, 2])
    s.receiver("received").assert_yields([20, 30])  # one channel: FIFO


def _aligned_at(p: Proc) -> None:
    align, t = p.local_align_point(), p.tick()
    inc = p.source("inc", int).aligned_at(align)
    both = inc.fold(0, lambda a, x: a + x).zip(p.source("config", int).count())
    inc.release_aligned(align).sink("ack")
    sinks(
        {
            "total": p.source("q", str)
            .batch(t, ANY)
            .cross_singleton(both.snapshot_aligned(t, align, ALIGNED).map(lambda sc: sc[0]))
        }
    )


@case("aligned-at", _aligned_at, n.AlignedAt, n.ReleaseAligned, n.Snapshot, n.Fold)
def _aligned_at_run(s: Harness) -> None:
    s.sender("inc").send_many([1, 2])
    s.receiver("ack").assert_yields([1, 2])
    s.sender("q").send("a")  # the total is aligned with the acks; the config count is not
    s.receiver("total").assert_yields([("a", 3)])
