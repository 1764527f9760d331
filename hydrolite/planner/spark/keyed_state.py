"""Keyed state on the executors: a query's executor region (`placement.py`) as one
`transformWithStateInPandas` operator in the streaming plan, ahead of `foreachBatch`.

Per micro-batch, in the streaming query itself (so Spark checkpoints and versions the state
by batch id, under the query's checkpoint location, and replays a batch from the state
version before it):

1. **chains** — the rows of the inputs that feed the region go through their element-wise
   operators in Python (one Arrow function per partition, `hydrolite.kernels`: the same
   definitions the simulator runs); each resulting element becomes a row
   `(gk, tag, _r1.._r5, x)`: `gk` the pickled (state key, element key), `tag` its chain, `_r*` its
   arrival order (see `ORDER`), `x` the pickled (key, value);
2. **per key** — rows are grouped by `gk` (a shuffle: each key's rows meet on one executor)
   and `_Processor.handleInputRows` folds the key's new elements, in arrival order, into the
   accumulator held in a `ValueState` (Spark's RocksDB state store), then answers the key's
   lookups with the value as of the end of the batch — what the tick's snapshot sees;
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
from dataclasses import dataclass
from itertools import compress
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # (pyarrow ships no type information)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from ... import kernels
from ...ir import nodes as n
from ...kernels import KernelError
from .errors import UserFunctionError
from .lambdas import NotTranslatable, TExpr, translate
from .placement import Chain, Region
from .pyfn import PANDAS_NOTE, FnSite, map_in_arrow, reencode
from .types import OPAQUE, HType, ListT, OptT, TupleT, from_python, infer_result, of_value, strip_optional
from .values import SFrame

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: the order columns of a region's rows: (file mtime | seq | task position, file path,
#: split start, task position, index within a flat_map's result)
ORDER = ("_r1", "_r2", "_r3", "_r4", "_r5")
#: their names inside the stateful operator (PySpark renames columns starting with "_" there)
_INNER = ("r1", "r2", "r3", "r4", "r5")
_ORDER_TYPES = (T.LongType(), T.StringType(), T.LongType(), T.LongType(), T.LongType())
_ORDER_FIELDS = [T.StructField(c, t) for c, t in zip(_INNER, _ORDER_TYPES)]
_CHAINED = T.StructType(
    [
        T.StructField("gk", T.BinaryType()),
        T.StructField("tag", T.IntegerType()),
        *_ORDER_FIELDS,
        T.StructField("x", T.BinaryType()),
    ]
)
_ANSWERS = T.StructType(
    [
        T.StructField("tag", T.IntegerType()),
        *_ORDER_FIELDS,
        T.StructField("k", T.BinaryType()),
        T.StructField("v", T.BinaryType()),
    ]
)
_KIND = {n.Map: "map", n.Filter: "filter", n.FilterMap: "filter_map", n.FlatMap: "flat_map", n.IntoKeyed: "into_keyed"}
UNKNOWN_BATCH = -1  # a worker does not know the batch id; the runtime fills it in (`with_batch`)


# ------------------------------------------------------------------ types, as the driver path derives them
def _step_type(op: n.Node, vt: HType) -> HType:
    f = getattr(op, "f", None)
    if isinstance(op, n.Filter) or f is None:
        return vt
    try:
        t = translate(f, [TExpr(F.col("v"), vt)]).t
        if isinstance(op, n.FlatMap):
            if isinstance(t, ListT):
                return t.item
            raise NotTranslatable("not a list")
        return strip_optional(t) if isinstance(op, n.FilterMap) else t
    except NotTranslatable:
        pass
    if isinstance(op, n.FlatMap):
        from .ops import flat_item_type

        return flat_item_type(f, vt)
    t = infer_result(f, [vt])
    return strip_optional(t) if isinstance(op, n.FilterMap) else t


def chain_types(chain: Chain, vt: HType, kt: HType | None) -> tuple[HType, HType]:
    """The (value, key) types at the end of `chain`, from its input's types."""
    for op in chain.ops:
        if isinstance(op, n.IntoKeyed):
            kt, vt = (vt.items[0], vt.items[1]) if isinstance(vt, TupleT) and len(vt.items) == 2 else (OPAQUE, OPAQUE)
        else:
            vt = _step_type(op, vt)
    assert kt is not None, "a chain feeding keyed state ends in a keyed stream"
    return vt, kt


def state_type(node: n.Node, chain_vt: HType) -> HType:
    """The type of a keyed aggregate's values (as `ops_state._spec` derives it)."""
    if isinstance(node, n.Count):
        return of_value(0) or OPAQUE
    if isinstance(node, n.Fold):
        return of_value(node.init) or from_python(node.meta.elem) or OPAQUE
    return chain_vt


# ------------------------------------------------------------------ what the workers run
@dataclass(frozen=True)
class _Op:
    kind: str
    keyed: bool  # applies to the values of (key, value) pairs
    f: Any
    site: FnSite


@dataclass(frozen=True)
class _ChainFn:
    tag: int
    state: str  # the stable key of the state it feeds or reads (`Stage.state_keys`)
    src: int  # the input's index in the query's union (`_src`)
    ops: tuple[_Op, ...]


@dataclass(frozen=True)
class _InputFn:
    src: int
    vt: HType
    kt: HType | None
    seq: bool  # ordered by `_seq`
    file: bool  # a file input: `_file` (path, start, mtime, bad)
    latest_first: bool


Item = tuple[tuple[Any, ...], Any, Any]  # (order, key, value)


def _run_op(op: _Op, items: list[Item]) -> list[Item]:
    values = [v for _, _, v in items]
    try:
        if op.kind == "into_keyed":
            return [(o, k, v) for (o, _, _), (k, v) in zip(items, kernels.split_pairs(values))]
        if op.kind == "map":
            return [(o, k, r) for (o, k, _), r in zip(items, kernels.map_values(op.f, values))]
        if op.kind == "filter":
            return list(compress(items, kernels.filter_mask(op.f, values)))
        if op.kind == "filter_map":
            mask, results = kernels.filter_map_results(op.f, values)
            return [(o, k, r) for (o, k, _), r, keep in zip(items, results, mask) if keep]
        groups = kernels.flat_map_groups(op.f, values)
        return [((*o[:4], i), k, r) for (o, k, _), g in zip(items, groups) for i, r in enumerate(g)]
    except KernelError as e:
        element = (items[e.index][1], e.element) if op.keyed else e.element
        raise op.site.fail(element, e.cause) from e.cause


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
                        out = _run_op(op, out)
                    for o, k, v in out:
                        cols["gk"].append(pickle.dumps((ch.state, k), protocol=5))
                        cols["tag"].append(ch.tag)
                        for name, x in zip(_INNER, o):
                            cols[name].append(x)
                        cols["x"].append(pickle.dumps((k, v), protocol=5))
            first += rb.num_rows
            yield pa.RecordBatch.from_pydict(cols, schema=_arrow_schema(_CHAINED))

    return run


def _arrow_schema(st: T.StructType) -> Any:
    kinds = {"BinaryType": pa.binary(), "IntegerType": pa.int32(), "LongType": pa.int64(), "StringType": pa.string()}
    return pa.schema([pa.field(f.name, kinds[type(f.dataType).__name__]) for f in st.fields])


@dataclass(frozen=True)
class _AggFn:
    """How one executor state folds its elements (`hydrolite.kernels`, as the simulator)."""

    kind: str  # fold | reduce | count | first | last
    f: Any
    has_init: bool
    init: Any
    site: FnSite

    def fold(self, key: Any, has: bool, acc: Any, xs: list[Any]) -> tuple[bool, Any]:
        try:
            if self.kind in ("fold", "reduce"):
                return kernels.fold_values(self.f, acc, has, xs)
            if self.kind == "count":
                return True, kernels.count_values(acc, xs)
            if self.kind == "first":
                return kernels.first_values(has, acc, xs)
            return kernels.last_values(has, acc, xs)
        except KernelError as e:
            raise self.site.fail((key, e.element), e.cause) from e.cause


class _Processor(StatefulProcessor):
    """Step 2: one key's new elements folded into its state, then its lookups answered."""

    def __init__(self, aggs: dict[str, _AggFn], tags: dict[int, tuple[bool, bool]]) -> None:
        self.aggs = aggs  # state key -> its fold
        self.tags = tags  # chain tag -> (is a lookup's requests, keep requests without a value)
        self.value: Any = None

    def init(self, handle: StatefulProcessorHandle) -> None:
        # one variable: a grouping key (state key, element key) belongs to exactly one state, so
        # states can come and go between runs without changing Spark's operator (upgrade.py)
        self.value = handle.getValueState("acc", "acc binary")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        import pandas as pd  # (a dependency of PySpark's pandas API, which this operator uses)

        agg, state = self.aggs[pickle.loads(key[0])[0]], self.value
        news: list[tuple[tuple[Any, ...], bytes]] = []
        asks: list[tuple[int, tuple[Any, ...], bytes]] = []
        for frame in rows:
            order = zip(*(frame[c] for c in _INNER))
            for tag, o, x in zip(frame["tag"], order, frame["x"]):
                if self.tags[int(tag)][0]:
                    asks.append((int(tag), tuple(o), x))
                else:
                    news.append((tuple(o), x))
        # a key is in the table once an element reached it (a fold's init or a count's 0 is
        # only where its accumulator starts, not a value for keys never seen)
        known = state.exists()
        has, acc = pickle.loads(state.get()[0]) if known else (agg.has_init, agg.init)
        if news:
            news.sort(key=lambda t: t[0])
            elements = [pickle.loads(x) for _, x in news]
            has, acc = agg.fold(elements[0][0], has, acc, [v for _, v in elements])
            state.update((pickle.dumps((has, acc), protocol=5),))
            known = True
        has = has and known
        out: dict[str, list[Any]] = {f.name: [] for f in _ANSWERS.fields}
        for tag, o, x in asks:
            if not has and not self.tags[tag][1]:
                continue  # an inner lookup drops a request without a value
            k, v = pickle.loads(x)
            out["tag"].append(tag)
            for name, y in zip(_INNER, o):
                out[name].append(y)
            out["k"].append(pickle.dumps(k, protocol=5))
            out["v"].append(pickle.dumps((v, acc if has else None), protocol=5))
        # object columns: pandas 3 would store the texts Arrow-backed, which PySpark's
        # conversion of the result does not accept
        yield pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in out.items()})

    def close(self) -> None:
        pass


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


def _site(node: n.Node, stage: str) -> FnSite:
    return FnSite(node.op, node.site.file, node.site.line, UNKNOWN_BATCH, stage)


def _agg(node: n.Node, stage: str) -> _AggFn:
    site = _site(node, stage)
    if isinstance(node, n.Fold):
        return _AggFn("fold", node.f, True, node.init, site)
    if isinstance(node, n.Reduce):
        return _AggFn("reduce", node.f, False, None, site)
    if isinstance(node, n.Count):
        return _AggFn("count", None, True, 0, site)
    return _AggFn("first" if isinstance(node, n.First) else "last", None, False, None, site)


class ExecutorRegion:
    """One query's executor region at run time: the streaming branch and its answers."""

    def __init__(self, region: Region, inputs: list[QueryInput], stage: str, keys: dict[int, str]) -> None:
        self.region = region
        by_node = {id(i.node): i for i in inputs}
        self.inputs = [_InputFn(i.src, i.vt, i.kt, i.seq, i.file, i.latest_first) for i in inputs]
        self.chains: list[_ChainFn] = []
        ends: dict[int, tuple[HType, HType]] = {}
        key_of = {s.slot: keys[id(s.node)] for s in region.states}  # slot -> the state's stable key
        for slot, ch in [(s.slot, s.chain) for s in region.states] + [(lk.slot, lk.chain) for lk in region.lookups]:
            inp = by_node[id(ch.input)]
            ops = tuple(
                _Op(_KIND[type(op)], op.children[0].meta.kind.keyed, getattr(op, "f", None), _site(op, stage))
                for op in ch.ops
            )
            self.chains.append(_ChainFn(ch.tag, key_of[slot], inp.src, ops))
            ends[ch.tag] = chain_types(ch, inp.vt, inp.kt)
        self.aggs = {key_of[s.slot]: _agg(s.node, stage) for s in region.states}
        value_t = {s.slot: state_type(s.node, ends[s.chain.tag][0]) for s in region.states}
        self.tags = {s.chain.tag: (False, False) for s in region.states} | {
            lk.chain.tag: (True, lk.node.keep_missing) for lk in region.lookups
        }
        #: lookup node -> (its chain's tag, key type, element type of its answers)
        self.answers: dict[int, tuple[int, HType, HType]] = {}
        for lk in region.lookups:
            vt, kt = ends[lk.chain.tag]
            rt = value_t[lk.slot]
            if lk.node.keep_missing and not isinstance(rt, OptT):
                rt = OptT(rt)
            self.answers[id(lk.node)] = (lk.chain.tag, kt, TupleT((vt, rt)))

    def branch(self, raw: DataFrame) -> DataFrame:
        """The region's part of the streaming plan: its answers as rows `(_src=-1, _rg)`."""
        srcs = sorted({c.src for c in self.chains})
        rows = raw.filter(F.col("_src").isin(srcs))
        chained = map_in_arrow(rows, chain_rows(self.inputs, self.chains), _CHAINED)
        with warnings.catch_warnings():  # (the answers are built without pandas' newer features)
            warnings.filterwarnings("ignore", message=PANDAS_NOTE)
            answers = chained.groupBy("gk").transformWithStateInPandas(
                _Processor(self.aggs, self.tags), _ANSWERS, "Append", "None"
            )
        return answers.select(F.lit(-1).alias("_src"), F.struct(*[F.col(f.name) for f in _ANSWERS.fields]).alias("_rg"))

    def lookup_frames(self, df: DataFrame) -> dict[int, SFrame]:
        """Each executor lookup's answers in this batch, typed as the driver path types them."""
        mine = df.filter(F.col("_src") == -1)
        out: dict[int, SFrame] = {}
        for node_id, (tag, kt, vt) in self.answers.items():
            rows = mine.filter(F.col("_rg.tag") == tag).select(
                *[F.col(f"_rg.{c}").alias(o) for c, o in zip(_INNER, ORDER)],
                F.col("_rg.k").alias("k"),
                F.col("_rg.v").alias("v"),
            )
            typed = map_in_arrow(
                rows,
                reencode({"k": (OPAQUE, kt), "v": (OPAQUE, vt)}),
                T.StructType(
                    [
                        *[T.StructField(c, t) for c, t in zip(ORDER, _ORDER_TYPES)],
                        T.StructField("k", kt.spark()),
                        T.StructField("v", vt.spark()),
                    ]
                ),
            )
            out[node_id] = SFrame(typed, vt, kt, ORDER)
        return out


def with_batch(err: UserFunctionError, batch_id: int) -> UserFunctionError:
    """A worker's error from the executor region, with the batch it failed in."""
    if err.batch_id == UNKNOWN_BATCH:
        err.batch_id = batch_id
        err.args = (str(err).replace(f"in batch {UNKNOWN_BATCH} ", f"in batch {batch_id} ", 1),)
    return err
