"""Where each piece of a query's state lives: on the executors (Spark's state store) or on
the driver (hydrolite's versioned SQLite store, `state.py`).

Keyed state scales out when it never has to be seen whole: a carried keyed aggregate whose
input and readers are all *per key*. This module finds, in one planned stage (a query), the
**executor region**: the carried keyed folds, reduces, counts, firsts and lasts

* whose input is a *chain*: one of the query's inputs (a source port or a channel) through
  element-wise operators only (`map`, `filter`, `filter_map`, at most one `flat_map`,
  `into_keyed`, a keyed stream's `entries`/`values`, at most one `unique()` or `keys()` —
  each element or key once per batch within a tick, else once ever: each group its elements
  reach keeps the ones it saw (`Chain.kept`) —, and the identity steps `batch`,
  `assume_ordering`, `weaken_ordering`, `send`, `all_ticks`, `release_aligned`, `aligned_at`), so
  the key of every element is known before any state is read — or a `merge_unordered()` of
  chains (one chain per side, folded into the same state: the fold is commutative); and
* whose readers are `lookup_keyed_singleton` operators of the same query (directly or
  through its `snapshot`) with a chain as their request stream, other queries, which
  read it through `latest()` / value `map()` / `inspect()` / `filter()` only: each batch's
  updated keys cross to them as deltas, with tombstones for the ones a filter drops
  (`channel_versions.py`), and nodes of the same query that read it whole (`entries()`,
  `values()`, ...: `ExecutorState.whole`): each batch's updated keys are applied to a copy
  of the table the executors keep as Parquet, O(table) per batch as the read itself is. A
  lookup whose requests are no chain reads that copy too when it exists; alone it keeps the
  state on the driver, whose store answers it in O(requests).

Joins of two unbounded streams whose sides are chains keep both sides' history per key the
same way (a symmetric hash join: each new element meets the other side's elements so far),
and fold their pairs into the commutative keyed aggregates that read them through steps
keeping the join's key, and keep what a `unique()` / `keys()` of them passed on (`kept_with.py`;
a keyed `enumerate()` keeps the aggregates and distinct steps of its pairs the same way); any other join of unbounded streams keeps each side's history as Parquet
the executors write (`history.py`), never on the driver.

**Native aggregation** comes first: a carried keyed aggregate whose fold is algebraic,
folding a query input directly, and read only by lookups whose requested keys the same
batch provably updated (or by other queries, as deltas) (`native_state.native_of` derives that from the IR) is kept by
Spark's own streaming aggregation (`groupBy(k).agg(...)`, update mode, RocksDB): no Python
per key at all. `Placement.why` then starts "native streaming aggregation (RocksDB)"; for
the others it ends with why they are not ("not native streaming aggregation (RocksDB): its
function is not an algebraic fold"). A top-level `unique()` of a query input (and the stateful
`keys()` and `enumerate()` of a keyed one) is kept the same way: Spark counts each element's
(key's) occurrences; the new elements of a batch are those whose count is the batch's own, a
key's indexes continue from its count before the batch (`native_state.native_of`). It is used under
`keyed_state` `executors` and `auto` (local masters too: on the running count of
`benchmarks/bench_state_paths.py` at 1M keys it was faster than the driver store, README.md
"Native aggregation"), never under `driver`. Under `auto` a resumed state stays where its
checkpoint keeps it (`kept_homes.py`). One Spark cannot count (its elements went through a
Python function: a chain), with state on the executors, is kept by the executor region
instead (`region.ExecutorSeen`): per element (per key for `keys()` / `enumerate()`), whether
it was seen or how many it had, and the new elements return to the tick. A top-level
`enumerate()` of an unkeyed stream is one count: it stays on the driver.

Such state is partitioned by key across the executors: the runtime evaluates the chains in
Python on the streaming DataFrame, groups the rows by (state, key) and folds each key's rows
in a Row-based `transformWithState` processor, whose state Spark keeps in its RocksDB state
store, checkpointed and versioned by batch id (`keyed_state.py`). A deferred stream or
keyed singleton (`defer_tick`, stream cycles) is the previous batch's rows: the executors
write them as Parquet under the checkpoint and read them back, whatever the run option. A
keyed aggregate whose input is no chain is folded by the tick into a Parquet table the
executors keep (`tick_table.py`) when state may live there, and a `unique()` / `keys()` /
keyed `enumerate()` of such a stream keeps what it saw in one (`tick_seen.py`). Everything
else stays on the driver; `Placement.why` says why, and `hydrolite plan` prints it.

The rules are deliberately narrow: what is not placed on the executors runs exactly as
before, so a program never gets a different answer from this choice, only a different cost.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ...ir import nodes as n
from ...ir.meta import Kind
from .channel_versions import published_by, read_whole
from .held import may_wait_for
from .kept_homes import KEEPABLE, kept_why, recorded_homes
from .kept_steps import ABSORBED_WHY, absorbed
from .kept_with import keeper_steps, keeping_enumerates
from .keyed_option import resolve_keyed_state, resolve_native
from .native_state import OCCURRENCES, NativeState, native_of
from .native_state import WHY as NATIVE_WHY
from .native_why import describe as describe_native
from .placement_why import (
    DELTAS_KEPT,
    EXECUTOR_AGGREGATES,
    JOIN_WHY,
    JOINS,
    SEEN_WHY,
    TABLE_WHY,
    WHOLE,
    deferred_rows,
    history_why,
    marks_why,
    not_partitioned,
    read_whole_why,
)
from .projection import IDENTITY
from .region import Chain, ExecutorJoin, ExecutorLookup, ExecutorSeen, ExecutorState, Region
from .stages import Plan, Stage, where
from .tick_seen import placed_why as tick_seen_why
from .tick_table import placed_why as tick_table_why

#: per-element operators a chain may contain (run in Python by `hydrolite.kernels`)
_ELEMENTWISE = (n.Map, n.Filter, n.FilterMap, n.FlatMap, n.IntoKeyed, n.Entries, n.Values)
#: identity steps in a merged tick: the batch's delta passes through unchanged (a send is
#: delivered within the micro-batch on Spark, `ops.send`; the others: `projection.IDENTITY`)
_IDENTITY = (*IDENTITY, n.Send)
#: first occurrences — a batch's (within a tick: `_Finder._in_batch`) or ever's (stateful:
#: `Chain.kept`) —, which a chain may contain once: its elements reach the processor with the
#: occurrence they come from, and it keeps the first of each (`keyed_processor.first_occurrences`)
_DISTINCT = (n.Unique, n.Keys)


@dataclass(frozen=True)
class Placement:
    """Where one stateful operator's state lives, and why."""

    node: n.Node
    executors: bool
    why: str
    native: bool = False  # kept by Spark's native streaming aggregation (`native_state.py`)
    rows: bool = False  # a previous batch's rows, as Parquet the executors write (`ops_state.defer_tick`)
    table: str | None = None  # the version of a keyed singleton read through this channel
    absorbed: bool = False  # no state of its own: its readers' groups keep what it saw (kept_steps.py)
    tick_table: bool = False  # a keyed table the tick folds, as Parquet the executors write (`tick_table.py`)

    def describe(self) -> str:
        home = "executors (Spark state store, RocksDB)" if self.executors else "driver (versioned SQLite store)"
        if self.native:
            home = "executors (Spark's streaming aggregation, RocksDB)"
        elif self.rows:
            home = "executors (Parquet files under the query's checkpoint)"
        elif self.absorbed:
            home = "executors (the Spark state of the states it feeds)"
        elif self.tick_table:
            how = "folded" if isinstance(self.node, EXECUTOR_AGGREGATES) else "kept"
            home = f"executors (a Parquet table under the query's checkpoint, {how} by the tick)"
        what = f"{self.node.op}() {where(self.node)}"
        if self.table is not None:
            what = f"the version of {what} read through channel {self.table}"
        return f"{what}: {home}: {self.why}"


@dataclass(frozen=True)
class StagePlacement:
    region: Region | None
    placements: tuple[Placement, ...]
    native: tuple[NativeState, ...] = ()  # states kept by native streaming aggregations

    def of(self, node: n.Node) -> Placement | None:
        return next((p for p in self.placements if p.node is node), None)


def place_all(
    plan: Plan, keyed_state: str, master: str, checkpoint: str | None = None, reset: Sequence[str] = ()
) -> None:
    """Place every stage's state as `hydrolite run --keyed-state KEYED_STATE --master MASTER`
    does (the runner, `hydrolite plan`, the notebook view and `verify-run` all place here).
    Under `auto`, a state `checkpoint` already keeps stays where it is when it can
    (`kept_homes.py`; not those `reset` names)."""
    on_executors, why = resolve_keyed_state(keyed_state, master)
    kept = recorded_homes(plan, checkpoint, reset) if checkpoint is not None and keyed_state == "auto" else {}
    joins = on_executors or keyed_state == "executors"
    joins_why = None
    if not joins and keyed_state == "auto":  # chosen by measurement, as the keyed state's home
        joins_why = (
            f"keyed_state='auto' on the local master {master!r}: there the history path ran a join 10.4x faster than "
            "Spark's per-key join state (benchmarks/bench_history_join.py; --keyed-state executors keeps it per key)"
        )
    tables_why = None
    if keyed_state == "auto":  # chosen by measurement, as the joins' home above
        tables_why = (
            "keyed_state='auto': the Parquet copy measured faster than a table per key in Spark's state store, at 1M "
            "and at 10M keys (benchmarks/bench_keyed_channel.py; --keyed-state executors keeps it per key)"
        )
    from .channel_versions import settle_channels  # (it reads stages: imported here, not at the top)

    deltas: set[str] = set()
    for again in (False, True):  # how a channel crosses depends on its producer's placement
        for stage in plan.stages:
            if again and not any(ch.name in deltas for ch in stage.channels_in):
                continue
            stage.placement = place(
                stage,
                executors=on_executors,
                driver_why=why,
                joins=joins,
                native=resolve_native(keyed_state),
                joins_why=joins_why,
                tables=deltas,
                tables_why=tables_why,
                kept=kept,
            )
        settle_channels(plan)  # (a reader's tables never change how its own channels cross)
        deltas = {ch.name for ch in plan.channels if ch.deltas}
        if not deltas:
            break


def place(
    stage: Stage,
    executors: bool = True,
    driver_why: str | None = None,
    joins: bool | None = None,
    native: bool | None = None,
    joins_why: str | None = None,
    tables: Collection[str] = (),
    tables_why: str | None = None,
    kept: Mapping[int | str, str] | None = None,
) -> StagePlacement:
    """Decide, for every stateful operator of `stage`, where its state lives.

    With `native` (default: as `executors`) a carried keyed aggregate that one native
    streaming aggregation computes exactly (`native_state.native_of`) is kept by one.
    With `executors=False` (the run option `keyed_state="driver"`, or `auto` on a local
    master: `driver_why` says so) everything else stays on the driver, as in hydrolite before
    state moved to the executors — except, with `joins`, joins of unbounded streams, which the
    driver cannot hold at all: they are kept per key on the executors. Without `joins` (`auto` on
    a local master, where it measured faster: `joins_why` says so; `driver`), and for a join
    whose sides are not chains, their sides' history is Parquet the executors write
    (`history.py`). A keyed table read from another query as deltas (a channel in `tables`)
    is kept per key on the executors when only lookups read it; with `tables_why` (`auto`,
    where the Parquet copy measured faster) it is kept as Parquet, for that reason. `kept`
    (`kept_homes.recorded_homes`) overrides all that for a state, or a keyed table read
    through a channel, its checkpoint keeps somewhere (native ones read whole too)."""
    joins_here = executors if joins is None else joins
    native_here = executors if native is None else native
    why_driver = driver_why or "the run asked for driver state (keyed_state='driver')"
    finder = _Finder(stage)
    held = kept or {}  # id(node) -> its home in the checkpoint
    joins_at = [x for x in stage.stateful if isinstance(x, n.Join) and KEEPABLE.get(held.get(id(x), ""), joins_here)]
    found_joins = (finder.join_of(x) for x in joins_at)
    finder.joins = {id(j.node): j for j in found_joins if isinstance(j, ExecutorJoin)}
    states: list[ExecutorState] = []
    lookups: list[ExecutorLookup] = []
    placed_joins: list[ExecutorJoin] = []
    seen_here: list[ExecutorSeen] = []  # unique() / keys() / keyed enumerate() per key
    natives: list[NativeState] = []
    placements: list[Placement] = []
    # keyed enumerate()s whose output feeds a keyed aggregate, unique() or keys() placed per key:
    # their processor keeps it (`kept_with.py`), so they take it rather than a native count
    keeps = keeping_enumerates(stage, held, lambda e: not isinstance(finder.seen_of(e), str)) if executors else set()
    for node in stage.stateful:
        keyed_aggregate = isinstance(node, EXECUTOR_AGGREGATES) and node.children[0].meta.kind.keyed
        join, occurrences = isinstance(node, JOINS), isinstance(node, OCCURRENCES)  # (occurrences: native counts)
        # a state its checkpoint keeps somewhere (kept_homes.py): the option's flags, for this state only
        rec = held.get(id(node), "") if keyed_aggregate or occurrences or join else ""
        hold = KEEPABLE.get(rec)  # held on the executors (True) or not (False); None: native, or not held
        executors_, joins_ = (executors, joins_here) if hold is None else (hold, hold)
        moved = hold is not None and (  # held elsewhere than the option puts it (the driver: not native)
            hold != (joins_here if join else executors) or native_here and not hold and not join
        )
        why_here = kept_why(rec) if moved else why_driver
        not_native, held_note = "", f"; {why_here}" if moved and hold else ""
        if (
            (native_here or rec == "native")
            and hold is None
            and (keyed_aggregate or occurrences)
            and id(node) not in keeps
        ):
            found_native = native_of(
                node, finder.inputs, finder.users, finder._blocker(), whole_ok=executors or bool(rec)
            )
            if not isinstance(found_native, str):
                natives.append(found_native)
                placements.append(Placement(node, True, describe_native(found_native), native=True))
                continue
            not_native = f" (not {NATIVE_WHY}: {found_native})"
        rows = deferred_rows(node)
        if rows is not None:
            placements.append(Placement(node, False, rows, rows=True))
            continue
        if isinstance(node, JOINS) and not joins_:
            side = finder.join_of(node)  # (a side that is not a chain is the reason on any option)
            because = why_here if moved else joins_why or why_driver
            placements.append(_history_placement(node, side if isinstance(side, str) else because))
            continue
        if not executors_ and not join:
            # a state no option moves says its own reason; one the option kept from the native
            # path (a count of occurrences it could have taken) says the option
            # (a stream's unique() / keys() / keyed enumerate() has an executor home whatever its input)
            moot = not keyed_aggregate and not (occurrences and not _one_count(node))
            why = why_here if moved else (not_partitioned(node) or why_driver) if moot else why_driver
            placements.append(Placement(node, False, why + not_native))
            continue
        if isinstance(node, JOINS):
            side = finder.joins.get(id(node)) or finder.join_of(node)
            if isinstance(side, str):
                placements.append(_history_placement(node, side))
            else:
                placed_joins.append(side)
                why = JOIN_WHY[type(node)] + marks_why((side.left, side.right))
                placements.append(Placement(node, True, why + held_note))
            continue
        if isinstance(node, OCCURRENCES) and not _one_count(node):
            seen = finder.seen_of(node)
            by_join = finder.joined(node) if isinstance(seen, str) and isinstance(node, _DISTINCT) else None
            seen = seen if by_join is None else by_join if isinstance(by_join, str) else ExecutorSeen(node, (), by_join)
            if isinstance(seen, str):  # (its input no chain: the tick's table, tick_seen.py)
                table = id(node) in finder.unchained
                why = tick_seen_why(seen) + held_note if table else seen + not_native
                placements.append(Placement(node, table, why, tick_table=table))
            else:
                seen_here.append(seen)
                if isinstance(node, n.Enumerate):
                    finder.enumerates.add(id(node))
                why = f"{SEEN_WHY[type(node)]}{marks_why(seen.chains)}{not_native}"
                if seen.joined is not None:  # (then the native path's reason is moot: it reads query inputs)
                    keeper = seen.joined.input
                    why = f"kept by {keeper.op}() {where(keeper)}: each of its keys keeps the elements it passed on"
                placements.append(Placement(node, True, why + held_note))
            continue
        found = finder.region_of(node, len(states))
        if isinstance(found, str) and id(node) in finder.unchained:
            placements.append(Placement(node, True, tick_table_why(found) + held_note, tick_table=True))
            continue
        if isinstance(found, str):
            placements.append(Placement(node, False, found + not_native))
            continue
        state, its_lookups = found
        states.append(state)
        lookups.extend(its_lookups)
        readers = [f"lookup_keyed_singleton() {where(x.node)}" for x in its_lookups]
        if state.published:
            readers.append("another query, as the keys each batch updated (channel_versions.py)")
        fed, marks = "fed per element", marks_why([*state.chains, *(x.chain for x in its_lookups)])
        if state.joined is not None:  # (then the native path's reason is moot: it reads query inputs)
            keeper = state.joined.input
            news = "new pairs" if isinstance(keeper, n.Join) else "new (index, element) pairs"
            fed, not_native = f"folded by {keeper.op}() {where(keeper)} from its {news}, under its key", ""
        if state.whole:
            per_key = f"; per key by {', '.join(readers)}" if readers else ""
            why = f"keyed, {fed}; {read_whole(list(state.whole))}{per_key}{marks}{not_native}{held_note}"
        else:
            why = f"keyed, {fed} and read only per key (by {', '.join(readers)}){marks}{not_native}{held_note}"
        placements.append(Placement(node, True, why))
    for ch in stage.channels_in:  # the versions of keyed singletons read from other queries
        if ch.node.meta.kind is not Kind.KEYED_SINGLETON:
            continue
        if ch.name not in tables:
            placements.append(Placement(ch.node, False, WHOLE, rows=True, table=ch.name))
            continue
        on = held.get(ch.name, "executors" if executors and not tables_why else "")  # held where recorded
        found = finder.table_of(ch.node, ch.name, len(states)) if on == "executors" else tables_why or why_driver
        if on == "parquet" and (executors and not tables_why):
            found = kept_why(on)
        if isinstance(found, str):
            placements.append(Placement(ch.node, False, f"{DELTAS_KEPT} ({found})", rows=True, table=ch.name))
            continue
        state, its_lookups = found
        states.append(state)
        lookups.extend(its_lookups)
        by = ", ".join(f"lookup_keyed_singleton() {where(x.node)}" for x in its_lookups)
        placements.append(Placement(ch.node, True, TABLE_WHY.format(readers=by), table=ch.name))
    chainlike = (*_IDENTITY, *_ELEMENTWISE, n.MergeUnordered)
    gone = absorbed(stage.stateful, finder.users, states, lookups, placed_joins, seen_here, chainlike)
    gone = {i for i in gone if held.get(i, "chains") == "chains"}  # (one its checkpoint holds stays: Spark's operators)
    if gone:  # (their readers' groups keep what they saw: kept_steps.py)
        natives = [x for x in natives if id(x.node) not in gone]
        seen_here = [x for x in seen_here if id(x.node) not in gone]
        placements = [
            Placement(p.node, True, ABSORBED_WHY, absorbed=True) if id(p.node) in gone else p for p in placements
        ]
    parts = (tuple(states), tuple(lookups), tuple(placed_joins), tuple(seen_here))
    region = (
        Region(*parts, absorbed=tuple(p.node for p in placements if p.absorbed))
        if states or placed_joins or seen_here
        else None
    )
    return StagePlacement(region, tuple(placements), tuple(natives))


def _one_count(node: n.Node) -> bool:
    """Whether `node` is an `enumerate()` of an unkeyed stream: one count, nothing to partition."""
    return isinstance(node, n.Enumerate) and not node.children[0].meta.kind.keyed


def _history_placement(node: n.Join | n.CrossProduct, because: str) -> Placement:
    return Placement(node, False, history_why(node, because), rows=True)


class _Finder:
    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.inputs = [*stage.sources, *(c.node for c in stage.channels_in)]
        self.users: dict[int, list[n.Node]] = {}
        for x in stage.nodes:
            for c in x.children:
                self.users.setdefault(id(c), []).append(x)
        for ch in stage.channels_out:  # a node read by another query has a reader we cannot see
            self.users.setdefault(id(ch.node), []).append(ch.node)
        self.tags = 0
        self.joins: dict[int, ExecutorJoin] = {}  # the query's joins kept per key on the executors
        self.enumerates: set[int] = set()  # its keyed enumerate()s kept per key on the executors
        #: keyed states whose input is no chain: the tick keeps them (`tick_table.py`, `tick_seen.py`)
        self.unchained: set[int] = set()

    def _blocker(self) -> str | None:
        if not self.stage.streaming:
            return "the query reads no stream (it runs once, as a batch job)"
        for x in self.inputs:  # (a batch that waits is held: its state must not move on)
            if may_wait_for(x):
                return (
                    f"the query reads a {'keyed ' if x.meta.kind.keyed else ''}singleton from another query "
                    f"({x.op}() {where(x)}) that has no first version before it runs: a batch may have to wait for it"
                )
        return None

    def chain(self, end: n.Node) -> Chain | str:
        """The one chain ending at `end`, or why there is none."""
        found = self.chains(end, merges=False)
        return found if isinstance(found, str) else found[0]

    def chains(self, end: n.Node, merges: bool = True) -> list[Chain] | str:
        """The chains ending at `end`, one per path from a query input (with `merges`, through
        `merge_unordered()` of chains too: a state fed by it folds both sides' elements), or
        why there are none."""
        found = self._paths(end, merges)
        if isinstance(found, str):
            return found
        out: list[Chain] = []
        for inp, ops in found:
            if sum(isinstance(x, n.FlatMap) for x in ops) > 1:
                return "its input passes through more than one flat_map()"
            if sum(isinstance(x, _DISTINCT) for x in ops) > 1:
                return "its input passes through more than one unique() / keys()"
            if not inp.meta.kind.streamlike:
                return f"its input {inp.op}() {where(inp)} is not a stream"
            self.tags += 1
            kept = any(isinstance(x, _DISTINCT) and not self._in_batch(x) for x in ops)
            out.append(Chain(self.tags - 1, inp, ops, kept))
        return out

    def _paths(self, end: n.Node, merges: bool) -> list[tuple[n.Node, tuple[n.Node, ...]]] | str:
        """(query input, element-wise operators from it to `end`) for each path, or why not."""
        ops: list[n.Node] = []
        x = end
        while not any(x is i for i in self.inputs):
            if isinstance(x, _IDENTITY):
                x = x.children[0]
                continue
            if merges and isinstance(x, n.MergeUnordered) and self.stage.member(x):
                paths: list[tuple[n.Node, tuple[n.Node, ...]]] = []
                for side in x.children:
                    found = self._paths(side, merges)
                    if isinstance(found, str):
                        return found
                    paths += [(inp, (*before, *reversed(ops))) for inp, before in found]
                return paths
            # (a distinct step: first occurrences, of the batch or ever, the processor keeps per group)
            distinct = isinstance(x, _DISTINCT) and self._of_stream(x)
            if not distinct and (not isinstance(x, _ELEMENTWISE) or not x.children[0].meta.kind.streamlike):
                return f"its input passes through {x.op}() {where(x)}, which is not element-wise"
            if not self.stage.member(x):
                return f"its input comes through {x.op}() {where(x)} outside the query"
            ops.append(x)
            x = x.children[0]
        return [(x, tuple(reversed(ops)))]

    def seen_of(self, node: n.Unique | n.Keys | n.Enumerate) -> ExecutorSeen | str:
        """The executor form of a stateful `unique()`, `keys()` or keyed `enumerate()` whose
        input is a chain (or a `merge_unordered()` of chains), or why there is none."""
        if not node.children[0].meta.kind.streamlike:
            return f"{node.op}() of a {node.children[0].meta.kind.value} is not a stream's state"
        blocked = self._blocker()
        if blocked is not None:
            return blocked
        chains = self.chains(node.children[0])
        if isinstance(chains, str):
            self.unchained.add(id(node))
            return chains
        return ExecutorSeen(node, tuple(chains))

    def _of_stream(self, x: n.Node) -> bool:
        """Whether `x` is a `unique()` of a stream, or `keys()` of a keyed stream: each element
        (key) passed on once — within a tick, once per batch (`_in_batch`); otherwise once ever,
        and a chain through it keeps what it saw with each group it reaches (`Chain.kept`)."""
        kind = x.children[0].meta.kind
        return kind is Kind.KEYED_STREAM if isinstance(x, n.Keys) else kind.streamlike

    def _in_batch(self, x: n.Node) -> bool:
        """Whether `x` is a `unique()` / `keys()` of a stream within a tick of the query (each
        element, or key, once per batch: no state across batches)."""
        return self._of_stream(x) and not self.stage.roles.stateful(x)

    def join_of(self, node: n.Join | n.CrossProduct) -> ExecutorJoin | str:
        """The executor form of a join of unbounded streams, or why there is none."""
        blocked = self._blocker()
        if blocked is not None:
            return blocked
        left, right = self.chain(node.children[0]), self.chain(node.children[1])
        for side, chain in (("left", left), ("right", right)):
            if isinstance(chain, str):
                return f"its {side} side: {chain}"
        assert isinstance(left, Chain) and isinstance(right, Chain)
        return ExecutorJoin(node, left, right)

    def table_of(self, node: n.Node, channel: str, slot: int) -> tuple[ExecutorState, list[ExecutorLookup]] | str:
        """The executor state holding the version of keyed singleton `node`, read from another
        query through `channel` as deltas, and its lookups; or why it is kept as Parquet."""
        blocked = self._blocker()
        if blocked is not None:
            return blocked
        readers, _, whole = self._readers(node, may_publish=False)
        if whole:  # (the Parquet copy is the table read whole: `channel_versions.latest_table`)
            return read_whole_why(whole[0])
        if not readers:
            return "nothing in the query reads it per key"
        lookups, unchained = self._requests(readers, slot)
        if unchained:
            return unchained[0][1]
        self.tags += 1
        return ExecutorState(node, (Chain(self.tags - 1, node, ()),), slot, table=channel), lookups

    def _readers(self, node: n.Node, may_publish: bool) -> tuple[list[n.KeyedLookup], bool, list[n.Node]]:
        """The lookups reading `node` (directly or through snapshots); with `may_publish`,
        whether another query reads it as the keys each batch updated (channel_versions.py);
        and the nodes that read it whole (evaluated by the tick from the whole table)."""
        readers: list[n.KeyedLookup] = []
        whole: list[n.Node] = []
        published = False
        todo: list[n.Node] = [node]
        while todo:
            x = todo.pop()
            for u in self.users.get(id(x), []):
                if isinstance(u, n.Snapshot):
                    todo.append(u)
                elif may_publish and x is node and (found := published_by(node, u, self.users)) is not None:
                    if isinstance(found, str):  # a step towards a channel out is read whole here too
                        whole.append(u)
                    published = published or bool(found)
                elif isinstance(u, n.KeyedLookup) and u.children[1] is x and u.children[0] is not x:
                    readers.append(u)
                else:  # (a snapshot read by another query is its own user: it gets whole versions)
                    whole.append(u)
        return readers, published, whole

    def _requests(
        self, readers: list[n.KeyedLookup], slot: int
    ) -> tuple[list[ExecutorLookup], list[tuple[n.KeyedLookup, str]]]:
        """The lookups whose requests are chains (answered per key in the executor region),
        and the others, with why their requests are not a chain."""
        lookups: list[ExecutorLookup] = []
        unchained: list[tuple[n.KeyedLookup, str]] = []
        for r in readers:
            left = self.chain(r.children[0])
            if isinstance(left, str):
                unchained.append((r, f"the requests of lookup_keyed_singleton() {where(r)}: {left}"))
            else:
                lookups.append(ExecutorLookup(r, left, slot))
        return lookups, unchained

    def region_of(self, node: n.Node, slot: int) -> tuple[ExecutorState, list[ExecutorLookup]] | str:
        """The executor state of `node` and its lookups, or why it stays on the driver.

        Readers of the same query that read it whole (and lookups whose requests are not
        chains, when something reads it whole anyway) read a copy of the table that each
        batch's updated keys are applied to on the executors (`ExecutorState.whole`); a lookup
        whose requests are not a chain is no reason to build that copy on its own (it would
        cost the table per batch where the driver's store costs the requests)."""
        unkeyed = not_partitioned(node)
        if unkeyed is not None:
            return unkeyed
        blocked = self._blocker()
        if blocked is not None:
            return blocked
        readers, published, whole = self._readers(node, may_publish=True)
        if not readers and not published and not whole:
            return "nothing in the query reads it"
        chains = self.chains(node.children[0])
        joined = self.joined(node) if isinstance(chains, str) else None
        if isinstance(joined, str):
            self.unchained.add(id(node))
            return joined
        if isinstance(chains, str) and joined is None:
            self.unchained.add(id(node))
            return chains
        lookups, unchained = self._requests(readers, slot)
        if unchained and not whole:
            return unchained[0][1]
        whole.extend(r for r, _ in unchained)
        if published or whole:
            self.tags += 1
        tag = self.tags - 1 if published or whole else None
        fed = () if isinstance(chains, str) else tuple(chains)
        state = ExecutorState(node, fed, slot, tag, whole=tuple(whole), published=published, joined=joined)
        return state, lookups

    def joined(self, node: n.Node) -> Chain | str | None:
        """The steps from the output of a join or keyed `enumerate()` kept per key on the
        executors (`self.joins`, `self.enumerates`) to `node`'s input, when each keeps the
        element's key: that operator's processor can then keep `node`'s state under its own
        grouping key (`kept_with.py`). None when none feeds `node` (the chain's reason stands);
        a string: why this one cannot keep it."""
        found = keeper_steps(node, self.stage, {*self.joins, *self.enumerates})
        if found is None or isinstance(found, str):
            return found
        self.tags += 1
        return Chain(self.tags - 1, *found)
