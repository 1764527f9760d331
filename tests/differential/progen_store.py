"""The keyed-store shape of generated programs (`progen.generate(store=True)`, and drawn by
plain programs too): a keyed aggregate read per key at an align point by another input's
requests — what Spark keeps on the executors — fed straight, through a stateful `unique()` /
`keys()`, by a join's pairs or by a keyed `enumerate()`'s (both kept by that operator's
processor, `kept_with.py`, which also keeps what a `unique()` of an enumerate's pairs saw).
"""

from __future__ import annotations

from .progen import TO_PAIR, Draw, Program, Var, _top_stream
from .progen_more import JOIN_SEEN, seen_sink

#: keyed aggregates of a join's pairs a store may keep (the join's processor folds them)
JOINED_AGGREGATES = [
    "fold_commutative(0, lambda a, x: a + x)",
    "count()",
    "reduce_commutative(lambda a, b: max(a, b))",
]
#: keyed aggregates a store may keep (order-sensitive ones included: the executor path must
#: fold each key's elements in arrival order)
STORE_AGGREGATES = [
    "fold_commutative(0, lambda a, x: a + x)",
    "fold(0, lambda a, x: a * 3 + x)",
    "reduce(lambda a, b: b)",
    "count()",
    "first()",
    "last()",
    "fold(0, mix_py)",
]


def keyed_store(prog: Program, d: Draw, src: Var, per_key: bool = False) -> None:
    """A key-value store: a keyed aggregate of `src` read per key, at the align point, by the
    requests of another input batched into t1 — the shape whose state Spark keeps on the
    executors (placement.py); a second reader or a whole read keeps it on the driver."""
    agg = d.choice(STORE_AGGREGATES)
    fed = store_feed(d, src, agg) if per_key else f"{src.name}.map({d.choice(TO_PAIR)}).into_keyed()"
    other = prog.pick(d, lambda v: _top_stream(v) and v.name == v.source and v.elem == "int") if per_key else None
    kept_by = d.int(0, 2) if other is not None else None
    if kept_by == 0:  # a join's pairs (commutative: no order), folded by its processor (`kept_with.py`)
        agg = d.choice(JOINED_AGGREGATES)
        left, right = d.choice(TO_PAIR), d.choice(TO_PAIR)
        fed = f"{src.name}.map({left}).join({other.name}.map({right})).into_keyed().map(lambda ab: ab[0] * 10 + ab[1])"
    elif kept_by == 1 and src.ordered and fed.endswith(".into_keyed()") and ".keys()" not in fed:
        # a keyed enumerate()'s pairs, folded by its processor (no draw of its own: others keep
        # theirs), which also keeps what a unique() of them passed on, per key
        numbered = prog.new(f"{fed}.enumerate()", "keyed", None, key="int")
        prog.vars.remove(numbered)  # (not an operand of later draws)
        fed = f"{numbered.name}.map(lambda iv: iv[0] * 10 + iv[1])"
        prog.sinks.append(f'{numbered.name}.map(lambda iv: iv[1] % 3).unique().entries().sink("numbered_seen")')
    kf = prog.new(f"{fed}.{agg}", "ksingle", None, key="int")
    snap = prog.new(f"{kf.name}.snapshot_aligned(t1, al, ND)", "ksingle", "t1", key="int")
    if per_key or d.int(0, 3):  # mostly read per key only (the executor path); else other operators may read it whole
        prog.vars.remove(kf)
        prog.vars.remove(snap)
    asks = prog.pick(d, lambda v: _top_stream(v) and v.name == v.source and v.elem == "int")  # a port itself
    assert asks is not None
    req = f"{asked_through(d, asks, per_key)}.batch(t1, ND).filter(lambda x: x != 7).map({d.choice(TO_PAIR)}).into_keyed()"
    if d.bool():
        how = f"{req}.lookup_keyed_singleton({snap.name}).entries().map(lambda t: (t[0], t[1][0], t[1][1]))"
    else:
        how = f"{snap.name}.get_many_if_present({req}).entries().map(lambda t: (t[0], t[1][0], t[1][1]))"
    out = prog.new(how, "stream", "t1", ordered=False, elem="tuple")
    prog.sinks.append(f'{out.name}.all_ticks().sink("lookups")')
    if per_key and d.bool():  # a join of unbounded streams, its history (and what it saw) per key on the executors
        other = prog.pick(d, lambda v: _top_stream(v) and v.name == v.source and v.elem == "int")
        assert other is not None
        left, right, seen = d.choice(TO_PAIR), d.choice(TO_PAIR), d.choice(JOIN_SEEN)
        prog.sinks.append(f'{src.name}.map({left}).join({other.name}.map({right})){seen}.sink("joined")')
    if per_key and d.int(0, 2) == 0:  # what a stream saw, per key on the executors (`region.ExecutorSeen`)
        seen_sink(prog, d, src)


def store_feed(d: Draw, src: Var, agg: str) -> str:
    """What a keyed store folds (with `agg`): `src` keyed by a Python map, in about one of
    three programs through a stateful `unique()` / `keys()` first — distinct elements,
    distinct values per key, a key's first element (no order: for commutative aggregates
    only) — whose seen elements the store's keys keep (`Chain.kept`)."""
    pair = d.choice(TO_PAIR)
    feeds = [f"{src.name}.map({pair}).into_keyed()"] * 6
    feeds += [f"{src.name}.unique().map({pair}).into_keyed()", f"{src.name}.map({pair}).into_keyed().unique()"]
    if "commutative" in agg or agg == "count()":
        feeds.append(f"{src.name}.map({pair}).into_keyed().keys().map(lambda k: (k % 3, k)).into_keyed()")
    return d.choice(feeds)


def asked_through(d: Draw, asks: Var, per_key: bool) -> str:
    """A store's requests: the port `asks`, or in one of four stores its elements the first
    time each arrives (a stateful `unique()`: each group keeps the ones it saw)."""
    return f"{asks.name}.unique()" if per_key and d.int(0, 3) == 0 else asks.name
