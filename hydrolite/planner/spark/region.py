"""The executor region of one query: what `placement.py` decided to evaluate per key on the
executors, and what `keyed_state.py` runs there (one `transformWithState` operator).

* a `Chain`: one query input's elements through element-wise steps, so each element's key
  is known before any state is read;
* an `ExecutorState`: a keyed aggregate (or a keyed table read from another query) folded per
  key, with the `ExecutorLookup`s that read it per key;
* an `ExecutorJoin`: a join of unbounded streams, both sides' elements so far kept per key;
* an `ExecutorSeen`: a stream operator that remembers what it saw per key — `unique()`, the
  stateful `keys()`, a keyed `enumerate()` — whose new elements go back to the tick.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import nodes as n


@dataclass(frozen=True)
class Chain:
    """One query input's elements through element-wise operators (in order, input first).

    At most one step is a `unique()` / `keys()`: within a tick, each element once per batch;
    with `kept` (a stateful one), once ever — every group its elements reach keeps the ones it
    saw (`keyed_processor.first_occurrences`), so the chain needs no state of its own."""

    tag: int
    input: n.Node
    ops: tuple[n.Node, ...]
    kept: bool = False

    @property
    def end(self) -> n.Node:
        return self.ops[-1] if self.ops else self.input


@dataclass(frozen=True)
class ExecutorState:
    """A keyed aggregate folded on the executors; `slot` names its state variable. With
    `publish` (a tag for its rows), another query reads it: each batch's updated keys and
    their new values arrive as rows, the state's value in the batch (`channel_versions.py`)."""

    node: n.Node
    #: what feeds it: one chain, or one per side of a `merge_unordered()` of chains
    chains: tuple[Chain, ...]
    slot: int
    publish: int | None = None
    #: a keyed singleton read from another query as deltas (the channel's name), not an
    #: aggregate: the newest entry per key is its value, a tombstone removes the key
    table: str | None = None
    #: nodes of the same query that read it whole (`entries()`, `values()`, a lookup whose
    #: requests are no chain ...): each batch's updated keys (rows tagged `publish`) are
    #: applied to a copy of the table the executors keep as Parquet, and the tick reads that
    whole: tuple[n.Node, ...] = ()
    #: another query reads it (channel_versions.py)
    published: bool = False
    #: fed by a join of unbounded streams, or a keyed `enumerate()`, kept per key on the
    #: executors instead of by `chains` (`kept_with.py`): that node, and the steps from its
    #: output, each keeping its key; its processor folds its new elements (`keyed_processor`)
    joined: Chain | None = None


@dataclass(frozen=True)
class ExecutorLookup:
    """A `lookup_keyed_singleton` answered on the executors from state `slot`."""

    node: n.KeyedLookup
    chain: Chain
    slot: int


@dataclass(frozen=True)
class ExecutorJoin:
    """A join of two unbounded streams, both sides' history kept per key on the executors (a
    cross product: all of it under one key, one task's state)."""

    node: n.Join | n.CrossProduct
    left: Chain
    right: Chain


@dataclass(frozen=True)
class ExecutorSeen:
    """A stream operator whose state is what it saw, kept per key on the executors: `unique()`
    (grouped by the element, or the (key, value) pair: whether it was seen), the stateful
    `keys()` of a keyed stream (by key: whether it was seen) and a keyed `enumerate()` (by
    key: how many elements it had). Its new elements, in arrival order, go back to the tick
    as the node's value, like a join's pairs (`keyed_processor.Processor._seen`)."""

    node: n.Unique | n.Keys | n.Enumerate
    #: what feeds it: one chain, or one per side of a `merge_unordered()` of chains
    chains: tuple[Chain, ...]
    #: a `unique()` / `keys()` of the pairs of a join kept per key on the executors, through
    #: steps keeping the join's key (`_Finder.joined`): the join's processor keeps, per join
    #: key, the elements it passed on (`keyed_processor.JoinedSeen`); `chains` is then empty
    joined: Chain | None = None


@dataclass(frozen=True)
class Region:
    """The part of one query evaluated per key on the executors."""

    states: tuple[ExecutorState, ...]
    lookups: tuple[ExecutorLookup, ...]
    joins: tuple[ExecutorJoin, ...] = ()
    seen: tuple[ExecutorSeen, ...] = ()
    #: stateful `unique()` / `keys()` whose readers' groups keep what they saw (`kept_steps.py`)
    absorbed: tuple[n.Node, ...] = ()

    @property
    def chains(self) -> list[Chain]:
        sides = [c for j in self.joins for c in (j.left, j.right)]
        seen = [c for x in self.seen for c in x.chains]
        return [c for x in self.states for c in x.chains] + [x.chain for x in self.lookups] + sides + seen

    def skipped(self) -> set[int]:
        """Nodes the driver no longer evaluates: the states, the absorbed steps and the
        snapshots between the states and their lookups (the lookups' results arrive as rows
        of the batch)."""
        out = {id(s.node) for s in self.states} | {id(x) for x in self.absorbed}
        whole = {s.slot for s in self.states if s.whole}
        for lk in self.lookups:
            if lk.slot in whole:  # (its snapshots may be read whole too: the tick evaluates them)
                continue
            table = lk.node.children[1]
            while isinstance(table, n.Snapshot):
                out.add(id(table))
                table = table.children[0]
        return out
