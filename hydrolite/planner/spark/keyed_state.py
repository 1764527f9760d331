"""Keyed state on the executors: a query's executor region (`placement.py`) as one
`transformWithState` operator (PySpark's Row-based API) in the streaming plan, ahead of
`foreachBatch`.

Per micro-batch, in the streaming query itself (so Spark checkpoints and versions the state
by batch id, under the query's checkpoint location, and replays a batch from the state
version before it):

1. **chains** — the rows of the inputs that feed the region go through their element-wise
   operators in Python (one Arrow function per partition, `hydrolite.kernels`: the same
   definitions the simulator runs); each resulting element becomes a row
   `(gk, tag, _r1.._r5, x, d)`: `gk` the pickled (state key, element key), `tag` its chain,
   `_r*` its arrival order (see `ORDER`), `x` the pickled (key, value), `d` which occurrence
   of which element it comes from when the chain passes through a `unique()` / `keys()` (the
   processor keeps the first: `keyed_processor.first_occurrences`; of a stateful one, the
   first ever, remembered per group in a `MapState`), else null;
2. **per key** — rows are grouped by `gk` (a shuffle: each key's rows meet on one executor)
   and `keyed_processor.Processor.handleInputRows` folds the key's new elements, in arrival order, into the
   accumulator held in a `ValueState` (Spark's RocksDB state store), then answers the key's
   lookups with the value as of the end of the batch — what the tick's snapshot sees — and,
   for a state another query reads, emits the key's new value (a delta, `channel_versions.py`);
3. **back to the tick** — the answers are unioned into the query's DataFrame as rows with
   `_src = -1`; `foreachBatch` takes each lookup's rows as that node's value
   (`lookup_frames`) and runs the rest of the tick as before.

So no keyed state passes through the driver: per batch the driver sees only the lookups'
answers, and the state can be as large as the executors' disks.

Arrival order without the batch's file list: a file input's rows are ordered by the file's
modification time (newest first under `latestFirst`), its path, the split's start and the
row's position in its task — the order Spark's file source gives files and the runtime's
`FileInput.arrival_order` uses; a feed's rows by `_seq`; others by position in their task.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...ir import nodes as n
from .channel_versions import whole_table
from .errors import UserFunctionError
from .folds import LAST, analyze
from .grouping import canonical, plain_bytes
from .keyed_processor import (
    ANSWERS,
    ASK,
    ASK_PRESENT,
    FOLD,
    INNER,
    LEFT,
    ORDER,
    ORDER_FIELDS,
    ORDER_TYPES,
    RIGHT,
    SEEN,
    AggFn,
    Item,
    JoinedFold,
    JoinedSeen,
    JoinFn,
    Op,
    Processor,
    SeenFn,
    run_op,
)
from .kinds import chain_types, guessed_type, state_type
from .pyfn import INIT_TYPED, PANDAS_NOTE, TRIAL_TYPED, FnSite, KindCheck, map_in_arrow, reencode
from .region import Chain, ExecutorSeen, Region
from .types import (
    OPAQUE,
    HType,
    OptT,
    Prim,
    TupleT,
    has_opaque,
)
from .values import KTable, SFrame

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_CHAINED = T.StructType(
    [
        T.StructField("gk", T.BinaryType()),
        T.StructField("tag", T.IntegerType()),
        *ORDER_FIELDS,
        T.StructField("x", T.BinaryType()),
        T.StructField("d", T.BinaryType()),  # a batch-level unique() / keys(): which occurrence
    ]
)
_KIND = {
    n.Map: "map",
    n.Filter: "filter",
    n.FilterMap: "filter_map",
    n.FlatMap: "flat_map",
    n.IntoKeyed: "into_keyed",
    n.Entries: "entries",
    n.Values: "values",
    n.Unique: "distinct",  # (a chain's step: first occurrences, `placement._Finder._of_stream`)
    n.Keys: "distinct_keys",
}
UNKNOWN_BATCH = -1  # a worker does not know the batch id; the runtime fills it in (`with_batch`)


# ------------------------------------------------------------------ what the workers run
@dataclass(frozen=True)
class _ChainFn:
    tag: int
    state: str  # the stable key of the state it feeds or reads (`Stage.state_keys`)
    src: int  # the input's index in the query's union (`_src`)
    ops: tuple[Op, ...]
    pairs: Op | None = None  # a join side: split its (key, value) elements last (this op's site)


@dataclass(frozen=True)
class _InputFn:
    src: int
    vt: HType
    kt: HType | None
    seq: bool  # ordered by `_seq`
    file: bool  # a file input: `_file` (path, start, mtime, bad)
    latest_first: bool
    gone: bool = False  # a keyed table's deltas: an element is (value, tombstone)


def _orders(rb: Any, rows: list[int], inp: _InputFn, first: int) -> list[tuple[Any, ...]]:
    """Each row's arrival order; `first` is the task position of the batch's first row."""
    mono = range(first, first + rb.num_rows)
    if inp.seq:
        seq = rb.column(rb.schema.get_field_index("_seq")).to_pylist()
        return [(seq[j], "", 0, mono[j], 0) for j in rows]
    if inp.file:
        where = rb.column(rb.schema.get_field_index("_file"))
        paths, starts = where.field("path").to_pylist(), where.field("start").to_pylist()
        mtimes = where.field("mtime").to_pylist()
        sign = -1 if inp.latest_first else 1
        return [(sign * mtimes[j], paths[j], starts[j], mono[j], 0) for j in rows]
    return [(mono[j], "", 0, mono[j], 0) for j in rows]


def _input_items(rb: Any, inp: _InputFn, srcs: list[int], first: int) -> list[Item]:
    rows = [j for j, s in enumerate(srcs) if s == inp.src]
    if inp.file:  # records a quarantining input set aside never reach the tick
        bad = rb.column(rb.schema.get_field_index("_file")).field("bad").is_null().to_pylist()
        rows = [j for j in rows if bad[j]]
    if not rows:
        return []
    payload = rb.column(rb.schema.get_field_index(f"p{inp.src}"))
    vs = payload.field("v").to_pylist()
    ks = payload.field("k").to_pylist() if inp.kt is not None else None
    orders = _orders(rb, rows, inp, first)
    kt = inp.kt
    if inp.gone:  # a table's entry: (its value, False), or (None, True) for a tombstone
        assert kt is not None and ks is not None
        dead = payload.field("gone").to_pylist()
        return [
            (o, kt.decode(ks[j]), (None, True) if dead[j] else (inp.vt.decode(vs[j]), False))
            for o, j in zip(orders, rows)
        ]
    return [
        (o, kt.decode(ks[j]) if kt is not None and ks is not None else None, inp.vt.decode(vs[j]))
        for o, j in zip(orders, rows)
    ]


def chain_rows(inputs: list[_InputFn], chains: list[_ChainFn]) -> Any:
    """The Arrow function of step 1: the query's raw rows -> one row per chained element."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        task = TaskContext.get()
        # a row's position in its task, as Spark's monotonically_increasing_id numbers it (the
        # function is refused on streaming DataFrames): partition id in the upper bits
        first = (task.partitionId() if task is not None else 0) << 33
        for rb in batches:
            srcs = rb.column(rb.schema.get_field_index("_src")).to_pylist()
            cols: dict[str, list[Any]] = {f.name: [] for f in _CHAINED.fields}
            for inp in inputs:
                mine = [c for c in chains if c.src == inp.src]
                items = _input_items(rb, inp, srcs, first) if mine else []
                for ch in mine if items else []:
                    out = items
                    for op in ch.ops:
                        out = run_op(op, out)
                    if ch.pairs is not None:
                        out = run_op(ch.pairs, out)
                    for o, k, v in out:
                        cols["gk"].append(plain_bytes((ch.state, canonical(k))))  # (grouping.py)
                        cols["tag"].append(ch.tag)
                        for name, x in zip(INNER, o):
                            cols[name].append(x)
                        cols["x"].append(pickle.dumps((k, v), protocol=5))
                        cols["d"].append(pickle.dumps(o[5], protocol=5) if len(o) > 5 else None)
            first += rb.num_rows
            yield pa.RecordBatch.from_pydict(cols, schema=_arrow_schema(_CHAINED))

    return run


def _arrow_schema(st: T.StructType) -> Any:
    kinds = {"BinaryType": pa.binary(), "IntegerType": pa.int32(), "LongType": pa.int64(), "StringType": pa.string()}
    return pa.schema([pa.field(f.name, kinds[type(f.dataType).__name__]) for f in st.fields])


# ------------------------------------------------------------------ what the runtime uses
@dataclass(frozen=True)
class QueryInput:
    """What the region needs to know of one input of the query's union."""

    src: int
    node: Any
    vt: HType
    kt: HType | None
    seq: bool
    file: bool
    latest_first: bool
    gone: bool = False  # a keyed table's deltas, with tombstones (`ports.FeedInput`)


def _site(node: n.Node, stage: str) -> FnSite:
    return FnSite(node.op, node.site.file, node.site.line, UNKNOWN_BATCH, stage)


def agg_fn(node: n.Node, site: FnSite, publish: int | None = None) -> AggFn:
    """How the keyed aggregate `node` folds a key's new elements (`AggFn`); `site` names it in
    errors (the executor region's, and the tick's Parquet tables: `tick_table.py`)."""
    if isinstance(node, n.Fold):
        return AggFn("fold", node.run_fn(), True, node.run_init(), site, publish)
    if isinstance(node, n.Reduce):
        # a reduce keeping the newer element (the key-value store's `lambda _old, new: new`)
        # is last(): its state is written without being read
        alg = analyze(node.f, None, reduce=True)
        keeps_last = alg is not None and alg.parts == LAST.parts
        return AggFn("last" if keeps_last else "reduce", node.f, False, None, site, publish)
    if isinstance(node, n.Count):
        return AggFn("count", None, True, 0, site, publish)
    return AggFn("first" if isinstance(node, n.First) else "last", None, False, None, site, publish)


class ExecutorRegion:
    """One query's executor region at run time: the streaming branch and its answers."""

    def __init__(self, region: Region, inputs: list[QueryInput], stage: str, keys: dict[int, str]) -> None:
        self.region = region
        self.stage = stage
        self.keys = keys
        self.by_node = {id(i.node): i for i in inputs}
        self.inputs = [_InputFn(i.src, i.vt, i.kt, i.seq, i.file, i.latest_first, i.gone) for i in inputs]
        self.chains: list[_ChainFn] = []
        self.distinct: dict[int, int] = {}  # a batch-level unique() / keys() -> its number
        self.tags: dict[int, str] = {}
        self.aggs: dict[str, AggFn | JoinFn | SeenFn] = {}
        #: node answered by the region -> (the tag of its rows, key type or None, element type)
        self.answers: dict[int, tuple[int, HType | None, HType]] = {}
        #: the unkeyed ones whose rows keep their arrival order (not a join's pairs)
        self.ordered: set[int] = set()
        # slot -> the state's stable key (a version read as deltas: its channel's, as its input's)
        key_of = {s.slot: keys[id(s.node)] if s.table is None else f"table:{s.table}" for s in region.states}
        #: a state another query reads, or the query reads whole -> (the tag of its updated
        #: keys' rows, key type, value type)
        self.tables: dict[int, tuple[int, HType, HType]] = {}
        #: a table or answer whose column ("k" / "v") has a type that is a guess (a state's
        #: value type, `guessed_type`; a chain's step typed by a trial call): its values are
        #: checked to have that type exactly (`reencode`'s checks), never converted
        self.checks: dict[int, dict[str, list[KindCheck]]] = {}
        #: a chain (by tag) with a step typed by a trial call (its own, or its keeper's) -> that step
        self.trial: dict[int, n.Node] = {}
        #: a join (or keyed enumerate()) whose chains have such a step -> that step
        self.kept_trial: dict[int, n.Node] = {}
        #: a state the query reads whole -> the key of the table kept for it (`whole_table`)
        self.whole: dict[int, str] = {}
        # the joins first: the folds kept with one (`ExecutorState.joined`) start from its output
        keeper_key: dict[int, str] = {}  # a join's (or keyed enumerate()'s) node -> its state key
        keeper_out: dict[int, HType] = {}  # ... -> the type of its output elements
        enum_kt: dict[int, HType | None] = {}  # a keyed enumerate()'s node -> its key type
        for j in region.joins:
            key, cross = keys[id(j.node)], isinstance(j.node, n.CrossProduct)
            split = Op("values" if cross else "into_keyed", False, None, _site(j.node, stage))  # cross: key None
            lt, _ = self._chain(j.left, key, LEFT, split)
            rt, _ = self._chain(j.right, key, RIGHT, split)
            keeper_key[id(j.node)], keeper_out[id(j.node)] = key, TupleT((lt, rt)) if cross else _join_type(lt, rt)
            self.answers[id(j.node)] = (j.left.tag, None, keeper_out[id(j.node)])
            self._check_trial(id(j.node), (j.left, j.right), "v", None)
            self._keeps_trial(id(j.node), (j.left, j.right))
        # then the keyed enumerate()s: the folds kept with one start from its (index, element) pairs
        for s in region.seen:
            if isinstance(s.node, n.Enumerate):
                key = keys[id(s.node)]
                _, kt = self._seen(s, key)
                keeper_key[id(s.node)], keeper_out[id(s.node)] = key, self.answers[id(s.node)][2]
                enum_kt[id(s.node)] = kt
                self._keeps_trial(id(s.node), s.chains)
        # slot -> the state key its rows and its lookups' requests are grouped under
        group = {s.slot: keeper_key[id(s.joined.input)] if s.joined else key_of[s.slot] for s in region.states}
        folds: dict[str, list[JoinedFold]] = {key: [] for key in keeper_key.values()}
        asks: dict[str, list[tuple[int, str]]] = {key: [] for key in keeper_key.values()}
        fed: dict[int, HType] = {}  # slot -> the type of the elements its chains end with
        for st in region.states:
            agg = (
                agg_fn(st.node, _site(st.node, stage), st.publish)
                if st.table is None
                else AggFn("table", None, False, None, _site(st.node, stage))  # (no user function)
            )
            if st.joined is not None:
                vt, kt = self._joined(st.joined, keeper_out, enum_kt)
            else:
                vt, kt = self._fed(st.chains, key_of[st.slot])
            if st.publish is not None and has_opaque(kt):  # (published keys merge by their bytes)
                agg = replace(agg, first_form=True)
            if st.joined is not None:
                folds[group[st.slot]].append(JoinedFold(key_of[st.slot], agg, self._ops(st.joined)))
            else:
                self.aggs[key_of[st.slot]] = agg
            fed[st.slot] = vt
            if st.publish is not None:
                assert kt is not None  # (a keyed aggregate's chain ends keyed)
                self.tables[id(st.node)] = (st.publish, kt, state_type(st.node, vt))
                feeding = (st.joined,) if st.joined is not None else st.chains
                self._check_trial(id(st.node), feeding, "k", None)
                if guessed_type(st.node, vt):
                    self._check(
                        id(st.node), "v", KindCheck(_site(st.node, stage), state_type(st.node, vt), None, INIT_TYPED)
                    )
                elif not isinstance(st.node, (n.Fold, n.Count)):  # (first / last: the chain's type)
                    self._check_trial(id(st.node), feeding, "v", None)
            if st.whole:
                self.whole[id(st.node)] = f"whole:{key_of[st.slot]}"
        for lk in region.lookups:
            vt, kt = self._chain(lk.chain, group[lk.slot], ASK if lk.node.keep_missing else ASK_PRESENT)
            state = next(x for x in region.states if x.slot == lk.slot)
            if state.joined is not None:
                asks[group[lk.slot]].append((lk.chain.tag, key_of[lk.slot]))
            rt = fed[lk.slot] if state.table is not None else state_type(state.node, fed[lk.slot])
            guessed = state.table is None and guessed_type(state.node, fed[lk.slot])
            if guessed:
                self._check(id(lk.node), "v", KindCheck(_site(state.node, stage), rt, 1, INIT_TYPED))
            if lk.node.keep_missing and not isinstance(rt, OptT):
                rt = OptT(rt)
            self.answers[id(lk.node)] = (lk.chain.tag, kt, TupleT((vt, rt)))
            self._check_trial(id(lk.node), (lk.chain,), "k", None)
            self._check_trial(id(lk.node), (lk.chain,), "v", 0)
            found_as_fed = not guessed and state.table is None and not isinstance(state.node, (n.Fold, n.Count))
            if found_as_fed:  # (a first / last / reduce's values: its chain's type)
                self._check_trial(id(lk.node), (state.joined,) if state.joined else state.chains, "v", 1)
        seen_by: dict[str, list[JoinedSeen]] = {key: [] for key in keeper_key.values()}
        for s in region.seen:
            if isinstance(s.node, n.Enumerate):  # (above)
                continue
            if s.joined is None:
                self._seen(s, keys[id(s.node)])
                continue
            keeper = id(s.joined.input)
            vt, kt = self._joined(s.joined, keeper_out, enum_kt)
            kind, keyed = "keys" if isinstance(s.node, n.Keys) else "unique", s.node.children[0].meta.kind.keyed
            js = JoinedSeen(keys[id(s.node)], s.joined.tag, kind, keyed, self._ops(s.joined))
            seen_by[keeper_key[keeper]].append(js)
            self.answers[id(s.node)] = (
                (js.out, None, kt or OPAQUE) if kind == "keys" else (js.out, kt if keyed else None, vt)
            )
            if keeper in enum_kt and self.answers[id(s.node)][1] is None:
                self.ordered.add(id(s.node))  # (an enumerate()'s elements arrive in order per key)
            self._check_trial(id(s.node), (s.joined,), "k", None)
            self._check_trial(id(s.node), (s.joined,), "v", None)
        for j in region.joins:
            key = keeper_key[id(j.node)]
            fn = JoinFn(j.left.tag, isinstance(j.node, n.CrossProduct), tuple(folds[key]), dict(asks[key]))
            self.aggs[key] = replace(fn, seen=tuple(seen_by[key]))
        #: each table's or answer's operator, named with a value that does not fit its column
        nodes = [
            *(x.node for x in region.states),
            *(x.node for x in region.lookups),
            *(x.node for x in region.seen),
            *(x.node for x in region.joins),
        ]
        self.sites = {id(node): _site(node, stage) for node in nodes}
        for e in enum_kt:
            key = keeper_key[e]
            seen_fn = self.aggs[key]
            assert isinstance(seen_fn, SeenFn)
            self.aggs[key] = replace(seen_fn, folds=tuple(folds[key]), asks=dict(asks[key]), seen=tuple(seen_by[key]))

    def _seen(self, s: ExecutorSeen, key: str) -> tuple[HType, HType | None]:
        """`unique()` / `keys()` / keyed `enumerate()` per key: its chains' elements grouped by
        what it remembers (for `unique()`, the element itself), its new elements answered in
        arrival order, typed as the driver path types them (`ops.unique`, `ops.keys`,
        `ops_state.enumerate_unbounded`)."""
        node, tag = s.node, s.chains[0].tag
        keyed = node.children[0].meta.kind.keyed
        kind = "unique" if isinstance(node, n.Unique) else "keys" if isinstance(node, n.Keys) else "enumerate"
        by = Op("by_element", keyed, None, _site(node, self.stage)) if kind == "unique" else None
        vt, kt = self._fed(s.chains, key, SEEN, by)
        self.aggs[key] = SeenFn(kind, tag, keyed)
        if kind == "keys":
            self.answers[id(node)] = (tag, None, kt or OPAQUE)
        elif kind == "enumerate":
            self.answers[id(node)] = (tag, kt, TupleT((Prim(int), vt)))
        else:
            self.answers[id(node)] = (tag, kt if keyed else None, vt)
        if self.answers[id(node)][1] is None:
            self.ordered.add(id(node))
        self._check_trial(id(node), s.chains, "k", None)
        self._check_trial(id(node), s.chains, "v", None)
        return vt, kt

    def _joined(
        self, ch: Chain, keeper_out: dict[int, HType], enum_kt: dict[int, HType | None]
    ) -> tuple[HType, HType | None]:
        """The (value, key) types of a chain from a join's (or keyed `enumerate()`'s) output, kept
        with it; its step typed by a trial call is its own, else its keeper's chains'."""
        keeper = id(ch.input)
        trial: list[n.Node] = []
        types = chain_types(ch, keeper_out[keeper], enum_kt.get(keeper), trial)
        step = trial[0] if trial else self.kept_trial.get(keeper)
        if step is not None:
            self.trial[ch.tag] = step
        return types

    def _fed(
        self, chains: tuple[Chain, ...], state: str, role: str = FOLD, last: Op | None = None
    ) -> tuple[HType, HType | None]:
        """The (value, key) types of the elements that `chains` fold into `state` (as `role`,
        through `last` after their own steps): one encoding for all of them (the sides of a
        `merge_unordered()` may type them apart)."""
        from .ops import common_type

        vt, kt = self._chain(chains[0], state, role, last)
        for ch in chains[1:]:
            v2, k2 = self._chain(ch, state, role, last)
            vt, kt = common_type(vt, v2), (common_type(kt, k2) if kt is not None and k2 is not None else kt)
        return vt, kt

    def _chain(self, ch: Chain, state: str, role: str, pairs: Op | None = None) -> tuple[HType, HType | None]:
        inp = self.by_node[id(ch.input)]
        self.chains.append(_ChainFn(ch.tag, state, inp.src, self._ops(ch), pairs))
        self.tags[ch.tag] = role
        trial: list[n.Node] = []
        types = chain_types(ch, inp.vt, inp.kt, trial)
        if trial:
            self.trial[ch.tag] = trial[0]
        return types

    def _check_trial(self, node_id: int, chains: tuple[Chain, ...], column: str, part: int | None) -> None:
        """Check the values in `column` ("k" or "v"; `part` of each) that `node_id` answers when
        a step of its `chains` was typed by a trial call: a value of another kind fails naming
        that step, never converted. (A type no trial guessed passes the check unchanged.)"""
        step = self._trial_step(chains)
        if step is None:
            return
        table = self.tables.get(node_id)
        answer = self.answers.get(node_id)
        types = (table[1], table[2]) if table is not None else (answer[1], answer[2]) if answer is not None else None
        t = None if types is None else types[0] if column == "k" else types[1]
        if t is not None and part is not None and isinstance(t, TupleT):
            t = t.items[part]
        if t is not None:
            self._check(node_id, column, KindCheck(_site(step, self.stage), t, part, TRIAL_TYPED))

    def _trial_step(self, chains: tuple[Chain, ...]) -> n.Node | None:
        return next((self.trial[c.tag] for c in chains if c.tag in self.trial), None)

    def _keeps_trial(self, keeper: int, chains: tuple[Chain, ...]) -> None:
        step = self._trial_step(chains)
        if step is not None:
            self.kept_trial[keeper] = step

    def _check(self, node_id: int, column: str, check: KindCheck) -> None:
        self.checks.setdefault(node_id, {}).setdefault(column, []).append(check)

    def _ops(self, ch: Chain) -> tuple[Op, ...]:
        """`ch`'s steps as the workers run them; a `unique()` / `keys()` names its step: a
        batch-level one by a number of its own (the same for every chain through it: a merge's
        sides), a stateful one (`ch.kept`) by its state's stable key, which its marks keep
        across runs."""
        out = []
        for op in ch.ops:
            distinct = isinstance(op, (n.Unique, n.Keys))
            if distinct and ch.kept:
                f: Any = self.keys[id(op)]
            elif distinct:
                f = self.distinct.setdefault(id(op), len(self.distinct))
            else:  # (a map's results held as declared: `run_fn`)
                f = op.run_fn() if isinstance(op, (n.Map, n.FilterMap)) else getattr(op, "f", None)
            keyed = op.children[0].meta.kind.keyed
            out.append(Op(_KIND[type(op)], keyed, f, _site(op, self.stage), distinct and ch.kept))
        return tuple(out)

    @property
    def marks(self) -> bool:
        """Whether the processor keeps marks of what groups saw (a `MapState`): a chain passes
        through a stateful `unique()` / `keys()`, or a join or keyed `enumerate()` keeps what its
        output saw."""
        return any(c.kept for c in self.region.chains) or any(s.joined for s in self.region.seen)

    def branch(self, raw: DataFrame) -> DataFrame:
        """The region's part of the streaming plan: its answers as rows `(_src=-1, _rg)`."""
        srcs = sorted({c.src for c in self.chains})
        rows = raw.filter(F.col("_src").isin(srcs))
        chained = map_in_arrow(rows, chain_rows(self.inputs, self.chains), _CHAINED)
        with warnings.catch_warnings():  # (PySpark wraps the processor in a pandas UDF; no pandas runs)
            warnings.filterwarnings("ignore", message=PANDAS_NOTE)
            answers = chained.groupBy("gk").transformWithState(
                Processor(self.aggs, self.tags, self.marks), ANSWERS, "Append", "None"
            )
        return answers.select(F.lit(-1).alias("_src"), F.struct(*[F.col(f.name) for f in ANSWERS.fields]).alias("_rg"))

    def whole_updates(self) -> dict[str, Column]:
        """Of each state the query reads whole, the condition on the batch's rows that holds
        for its updated keys' rows (`channel_versions.updated_tables` asks them all in one job)."""
        return {
            key: (F.col("_src") == -1) & (F.col("_rg.tag") == self.tables[node_id][0])
            for node_id, key in self.whole.items()
        }

    def lookup_frames(self, df: DataFrame, state: Any, updated: dict[str, bool]) -> dict[int, SFrame | KTable]:
        """The values of the nodes the region answers (lookups, joins) in this batch, typed as
        the driver path types them; of each state another query reads, the keys the batch
        updated (`KTable`); of each state the query reads whole, the whole table
        (`whole_table`; `state`: the batch's versioned store, which keeps its path; `updated`:
        whether the batch updated it, by the keys of `whole_updates`)."""
        mine = df.filter(F.col("_src") == -1)
        out: dict[int, SFrame | KTable] = {}
        for node_id, (tag, tk, tv) in self.tables.items():
            rows = mine.filter(F.col("_rg.tag") == tag).select(F.col("_rg.k").alias("k"), F.col("_rg.v").alias("v"))
            schema = T.StructType([T.StructField("k", tk.spark()), T.StructField("v", tv.spark())])
            typed = map_in_arrow(
                rows,
                reencode({"k": (OPAQUE, tk), "v": (OPAQUE, tv)}, self.checks.get(node_id), self.sites.get(node_id)),
                schema,
            )
            if node_id in self.whole:
                key = self.whole[node_id]
                typed = whole_table(df.sparkSession, state, key, typed, not updated[key])
            out[node_id] = KTable(tk, tv, SFrame(typed, tv, tk))
        for node_id, (tag, kt, vt) in self.answers.items():
            rows = mine.filter(F.col("_rg.tag") == tag)
            if kt is None and node_id not in self.ordered:  # a join's pairs: an unkeyed stream without order
                plain = rows.select(F.col("_rg.v").alias("v"))
                schema = T.StructType([T.StructField("v", vt.spark())])
                out[node_id] = SFrame(
                    map_in_arrow(
                        plain, reencode({"v": (OPAQUE, vt)}, self.checks.get(node_id), self.sites.get(node_id)), schema
                    ),
                    vt,
                )
                continue
            keyed = rows.select(
                *[F.col(f"_rg.{c}").alias(o) for c, o in zip(INNER, ORDER)],
                F.col("_rg.k").alias("k"),
                F.col("_rg.v").alias("v"),
            )
            fields = [T.StructField(c, t) for c, t in zip(ORDER, ORDER_TYPES)]
            codes: dict[str, tuple[HType, HType]] = {"v": (OPAQUE, vt)}
            if kt is None:  # (unique() / keys() of a stream: its elements, in their order)
                keyed = keyed.drop("k")
            else:
                fields.append(T.StructField("k", kt.spark()))
                codes["k"] = (OPAQUE, kt)
            schema = T.StructType([*fields, T.StructField("v", vt.spark())])
            typed = map_in_arrow(keyed, reencode(codes, self.checks.get(node_id), self.sites.get(node_id)), schema)
            out[node_id] = SFrame(typed, vt, kt, ORDER)
        return out


def _join_type(lt: HType, rt: HType) -> HType:
    """(k, (v1, v2)) from the sides' (k, v) element types (pickled when either is not a pair)."""
    if isinstance(lt, TupleT) and isinstance(rt, TupleT) and len(lt.items) == len(rt.items) == 2:
        from .ops import common_type

        return TupleT((common_type(lt.items[0], rt.items[0]), TupleT((lt.items[1], rt.items[1]))))
    return OPAQUE


def with_batch(err: UserFunctionError, batch_id: int) -> UserFunctionError:
    """A worker's error from the executor region, with the batch it failed in."""
    if err.batch_id == UNKNOWN_BATCH:
        err.batch_id = batch_id
        err.args = (str(err).replace(f"in batch {UNKNOWN_BATCH} ", f"in batch {batch_id} ", 1),)
    return err
