"""More operators for the program generator (`progen.py`): the element-wise and ordering
operators of singletons, optional singletons, keyed streams and keyed singletons.

Kept apart from `progen._one_op` (which dispatches here for its last operator numbers) so
each file stays readable. A new user's program that the simulator passes and Spark answers
differently for is most likely to use an operator the generator never draws, so every
public operator is drawn somewhere but `assume_ordering` (its order is a choice the replay
cannot know), `inspect` (it prints) and a keyed stream's `release_aligned`.

    >>> import random
    >>> from tests.differential.progen import Program, RandomDraw, Var
    >>> prog = Program(vars=[Var("xs", "stream", None, source="xs")])
    >>> extra_op(prog, RandomDraw(random.Random(3)), 21, ["t1"])
    >>> prog.lines
    ['v1 = xs.weaken_ordering()']
"""

from __future__ import annotations

from collections.abc import Sequence

from .progen import (
    FOLDS,
    INT_FILTER_MAPS,
    INT_FILTERS,
    INT_FLAT_MAPS,
    INT_MAPS,
    KEYED_MAPS,
    TO_PAIR,
    Draw,
    Program,
    Var,
)

#: the operator numbers `progen._one_op` hands to `extra_op`
EXTRA_OPS = range(18, 24)
#: a stream that is no chain of the query's inputs, over top-level int streams `{v}` (and
#: `{w}`), as (expression of (key, value) pairs, ordered): a join's pairs re-keyed, an
#: enumerate()'s pairs re-keyed, a stream through two flat_map()s
UNCHAINED = [
    ("{v}.map({p}).join({w}.map({q})).map(lambda t: ((t[1][0] + t[1][1]) % 3, t[1][0] - t[1][1]))", False),
    ("{v}.enumerate().map(lambda t: (t[1] % 3, t[0] * 10 + t[1]))", True),
    ("{v}.flat_map_ordered({f}).flat_map_ordered(lambda x: [x, -x]).map({p})", True),
    ("{v}.cross_product({w}).map(lambda t: (t[0] % 2, t[0] * 10 + t[1]))", False),
]
#: keyed aggregates of an unordered stream (commutative), then of an ordered one too
UNORDERED_AGGREGATES = ["count()", "fold_commutative(0, lambda a, x: a + x)", "reduce_commutative(max)"]
UNORDERED_AGGREGATES += [f"fold_commutative({i}, {f})" for i, f, comm in FOLDS if comm]
ORDERED_AGGREGATES = [*UNORDERED_AGGREGATES, "first()", "last()", "reduce(lambda a, b: a * 2 - b)"]
ORDERED_AGGREGATES += [f"fold({i}, {f})" for i, f, comm in FOLDS if not comm]
#: what a stateful `unique()` / `keys()` / keyed `enumerate()` of such a stream (pairs) saw, kept
#: as the tick's table on the executors (`tick_seen.py`); `enumerate()` needs an ordered one
UNCHAINED_SEEN = [".unique()", ".into_keyed().keys()", ".into_keyed().unique().entries()"]
ORDERED_SEEN = [*UNCHAINED_SEEN, ".into_keyed().enumerate().entries()"]
#: after a store's join of unbounded streams: what the join's processor keeps it saw
#: (`region.ExecutorSeen.joined`), or nothing
JOIN_SEEN = ["", "", ".unique()", ".into_keyed().keys()"]


def extra_op(prog: Program, d: Draw, op: int, ticks: Sequence[str]) -> None:
    """Append one operator of kind `op` (18: singletons, 19: keyed streams, 20: keyed
    singletons, 21: a stream's ordering, 22: a keyed table read by another query, 23: a keyed
    aggregate of a stream that is no chain, read whole and per key) when the
    pool has an input for it; `ticks` are the program's tick variables."""
    if op == 18:
        _singleton(prog, d)
    elif op == 19:
        _keyed_stream(prog, d, ticks)
    elif op == 20:
        _keyed_singleton(prog, d)
    elif op == 21:
        _ordering(prog, d)
    elif op == 22:
        _crossing_table(prog, d)
    else:
        _ticks_table(prog, d)


def _crossing_table(prog: Program, d: Draw) -> None:
    """A keyed aggregate of a tick's stream (through `all_ticks()`), its values mapped and / or
    filtered, read per key by another tick: two queries joined by a keyed singleton channel, which crosses as
    deltas when the producer keeps the state on the executors (`channel_versions.py`). The two
    ticks are new ones, so no other operator merges them."""
    from .progen_store import STORE_AGGREGATES  # (it imports this module)

    v = prog.pick(d, lambda v: v.kind == "stream" and v.tick is None and v.elem == "int" and v.ordered)
    asks = prog.pick(d, lambda v: v.kind == "stream" and v.tick is None and v.name == v.source and v.elem == "int")
    if v is None or asks is None:
        return
    ta, tb = f"tp{prog.counter + 1}", f"tq{prog.counter + 1}"
    prog.lines += [f"{ta} = p.tick()", f"{tb} = p.tick()"]
    table = f"{v.name}.batch({ta}, ND).map({d.choice(TO_PAIR)}).all_ticks().into_keyed().{d.choice(STORE_AGGREGATES)}"
    step = d.int(0, 3)  # a filter drops keys: the deltas then carry tombstones
    if step in (1, 3):
        table += f".map({d.choice(KEYED_MAPS)})"
    if step >= 2:
        table += f".filter({d.choice(INT_FILTERS)})"
    t = prog.new(table, "ksingle", None, key="int")
    prog.vars.remove(t)  # read per key only: the shape whose state may stay on the executors
    req = f"{asks.name}.batch({tb}, ND).map({d.choice(TO_PAIR)}).into_keyed()"
    ks = prog.pick(d, lambda v: v.kind == "keyed" and v.tick is None and v.name == v.source)
    if ks is not None and d.bool():  # the reader keeps a running aggregate of its own, read per key
        al = f"al{prog.counter + 1}"
        prog.lines.append(f"{al} = p.local_align_point()")
        own = f"{ks.name}.{d.choice(STORE_AGGREGATES)}.snapshot_aligned({tb}, {al}, ND)"
        asked = f"{ks.name}.batch_aligned({tb}, {al}, ND).keys().map(lambda k: (k, 0)).into_keyed()"
        mine = prog.new(f"{asked}.lookup_keyed_singleton({own}).entries()", "stream", tb, ordered=False, elem="tuple")
        prog.sinks.append(f'{mine.name}.all_ticks().sink("own_{mine.name}")')
    looked = f"{req}.lookup_keyed_singleton({t.name}.snapshot({tb}, ND)).entries()"
    out = prog.new(f"{looked}.map(lambda t: (t[0], t[1][0], t[1][1]))", "stream", tb, ordered=False, elem="tuple")
    prog.sinks.append(f'{out.name}.all_ticks().sink("crossing_{out.name}")')


def _ticks_table(prog: Program, d: Draw) -> None:
    """A keyed aggregate of a stream that is no chain of the query's inputs (`UNCHAINED`): on
    the executors the tick folds it into a Parquet table (`tick_table.py`), on the driver its
    store does. Read whole by a new tick and, sometimes, by a second one (another query: its
    versions cross as a channel) and per key by a source's requests. One draw in three is
    instead the stream's `unique()`, `keys()` or keyed `enumerate()` (`UNCHAINED_SEEN`), whose
    table of what it saw the tick keeps (`tick_seen.py`), written to a sink."""
    v = prog.pick(d, lambda v: _top_int(v))
    w = prog.pick(d, lambda w: _top_int(w))
    if v is None or w is None:
        return
    shape, ordered = d.choice(UNCHAINED)
    if ordered and not v.ordered:
        return
    fed = shape.format(v=v.name, w=w.name, p=d.choice(TO_PAIR), q=d.choice(TO_PAIR), f=d.choice(INT_FLAT_MAPS))
    if d.int(0, 2) == 0:  # what the stream saw, not an aggregate: its new elements (indexes) go to a sink
        seen = prog.new(f"{fed}{d.choice(ORDERED_SEEN if ordered else UNCHAINED_SEEN)}", "stream", None, elem="tuple")
        prog.vars.remove(seen)
        prog.sinks.append(f'{seen.name}.sink("seen_{seen.name}")')
        return
    agg = d.choice(ORDERED_AGGREGATES if ordered else UNORDERED_AGGREGATES)
    table = prog.new(f"{fed}.into_keyed().{agg}", "ksingle", None, key="object")
    prog.vars.remove(table)  # (its reads are drawn here: a later draw's tick could read it from its own output)
    t = f"tt{prog.counter}"
    prog.lines.append(f"{t} = p.tick()")
    prog.sinks.append(f'{table.name}.snapshot({t}, ND).entries().all_ticks().sink("table_{table.name}")')
    if d.bool():  # a second reader in a tick of its own: whole versions cross to another query
        prog.lines.append(f"{t}b = p.tick()")
        prog.sinks.append(f'{table.name}.snapshot({t}b, ND).entries().all_ticks().sink("other_{table.name}")')
    asks = prog.pick(d, lambda a: _top_int(a) and a.name == a.source)
    if asks is not None and d.bool():
        req = f"{asks.name}.batch({t}, ND).map({d.choice(TO_PAIR)}).into_keyed()"
        looked = f"{req}.lookup_keyed_singleton({table.name}.snapshot({t}, ND)).entries()"
        prog.sinks.append(f'{looked}.map(lambda t: (t[0], t[1][0], t[1][1])).all_ticks().sink("asked_{table.name}")')


def _top_int(v: Var) -> bool:
    return v.kind == "stream" and v.tick is None and v.elem == "int"


def _singleton(prog: Program, d: Draw) -> None:
    """A singleton's value mapped, filtered (an optional, then its default, a stream of at
    most one element or a singleton holding None), expanded into a tick's stream, or the
    previous tick's value."""
    v = prog.pick(d, lambda v: v.kind == "single")
    if v is None:
        return
    what = d.int(0, 6)
    if v.tick is None and what in (3, 4, 5):  # over a top-level value's versions: the element-wise ones only
        what = d.choice([0, 1, 2, 6])
    if what == 0:
        prog.new(f"{v.name}.map({d.choice(INT_MAPS)})", "single", v.tick)
    elif what == 1:
        prog.new(f"{v.name}.filter({d.choice(INT_FILTERS)}).unwrap_or(-1)", "single", v.tick)
    elif what == 2:
        prog.new(
            f"{v.name}.filter_map({d.choice(INT_FILTER_MAPS)}).map(lambda x: x + 1).unwrap_or(-2)", "single", v.tick
        )
    elif what == 3:
        prog.new(f"{v.name}.flat_map_ordered({d.choice(INT_FLAT_MAPS)})", "stream", v.tick, every_tick=True)
    elif what == 4:
        prog.new(f"{v.name}.defer_tick().unwrap_or(-3)", "single", v.tick)
    elif what == 5:
        prog.new(f"{v.name}.filter({d.choice(INT_FILTERS)}).into_stream()", "stream", v.tick, every_tick=True)
    else:  # the optional as a singleton holding None when absent
        f = d.choice(INT_FILTERS)
        prog.new(f"{v.name}.filter({f}).into_singleton().map(lambda x: -1 if x is None else x * 2)", "single", v.tick)


def _keyed_stream(prog: Program, d: Draw, ticks: Sequence[str]) -> None:
    """A keyed stream's values filtered, expanded or taken apart; its order given up; or the
    stream moved in time (into a tick, to the next run, out of the tick)."""
    v = prog.pick(d, lambda v: v.kind == "keyed")
    if v is None:
        return
    kw = {"ordered": v.ordered, "source": v.source, "key": v.key}
    what = d.int(0, 6)
    if what == 6:
        if v.tick is None:
            tick = d.choice([t for t in ticks if t not in v.exits] or [""])
            if tick:
                prog.new(f"{v.name}.batch({tick}, ND)", "keyed", tick, ordered=v.ordered, key=v.key)
        elif d.bool():
            prog.new(f"{v.name}.defer_tick()", "keyed", v.tick, ordered=v.ordered, key=v.key)
        else:
            prog.new(f"{v.name}.all_ticks()", "keyed", None, ordered=v.ordered, key=v.key, exits=frozenset({v.tick}))
        return
    if what == 0:
        prog.new(f"{v.name}.filter({d.choice(INT_FILTERS)})", "keyed", v.tick, **kw)
    elif what == 1:
        prog.new(f"{v.name}.filter_map({d.choice(INT_FILTER_MAPS)})", "keyed", v.tick, **kw)
    elif what == 2:
        prog.new(f"{v.name}.flat_map_ordered({d.choice(INT_FLAT_MAPS)})", "keyed", v.tick, **kw)
    elif what == 3:
        prog.new(f"{v.name}.flat_map_unordered({d.choice(INT_FLAT_MAPS)})", "keyed", v.tick, **{**kw, "ordered": False})
    elif what == 4:
        prog.new(f"{v.name}.values()", "stream", v.tick, ordered=False, source=v.source)
    else:
        prog.new(f"{v.name}.weaken_ordering()", "keyed", v.tick, **{**kw, "ordered": False})


def _keyed_singleton(prog: Program, d: Draw) -> None:
    """A keyed singleton's values mapped or filtered (at top level: every version), or, in a
    tick, its keys, its values or the previous tick's table."""
    v = prog.pick(d, lambda v: v.kind == "ksingle")
    if v is None:
        return
    what = d.int(0, 4)
    if v.tick is None and what >= 2:
        what = d.int(0, 1)
    if what == 0:
        prog.new(f"{v.name}.map({d.choice(KEYED_MAPS)})", "ksingle", v.tick, key=v.key)
    elif what == 1:
        prog.new(f"{v.name}.filter({d.choice(INT_FILTERS)})", "ksingle", v.tick, key=v.key)
    elif what == 2:
        prog.new(f"{v.name}.keys()", "stream", v.tick, elem=v.key, ordered=False)
    elif what == 3:
        prog.new(f"{v.name}.values()", "stream", v.tick, ordered=False)
    else:
        prog.new(f"{v.name}.defer_tick()", "ksingle", v.tick, key=v.key)


def _ordering(prog: Program, d: Draw) -> None:
    """A stream expanded without order, or its order given up (then only order-insensitive
    operators may follow: the pool records it unordered)."""
    v = prog.pick(d, lambda v: v.kind == "stream" and v.elem in ("int", "str"))
    if v is None:
        return
    if v.elem == "int" and d.bool():
        prog.new(
            f"{v.name}.flat_map_unordered({d.choice(INT_FLAT_MAPS)})", "stream", v.tick, ordered=False, source=v.source
        )
    else:
        prog.new(f"{v.name}.weaken_ordering()", "stream", v.tick, elem=v.elem, ordered=False, source=v.source)


def seen_sink(prog: Program, d: Draw, src: Var) -> None:
    """A sink of what `src` saw over time, through a Python map first: a `unique()`, or a
    keyed `unique()` / `keys()` / `enumerate()` (kept per key on the executors)."""
    keyed = f"{src.name}.map({d.choice(TO_PAIR)}).into_keyed()"
    seen = [f"{keyed}.unique().entries()", f"{keyed}.keys()", f"{keyed}.enumerate().entries()"]
    seen.append(f"{src.name}.map({d.choice(INT_MAPS)}).unique()")
    prog.sinks.append(f'{d.choice(seen)}.sink("seen")')
