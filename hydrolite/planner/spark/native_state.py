"""Keyed state as Spark's own streaming aggregation: `groupBy(key).agg(...)` in update mode.

A carried keyed aggregate whose fold is *algebraic* (`folds.py`: count, and folds/reduces
that sum, subtract, take the min/max, or and/and the element or a constant, and tuples of
those) needs no Python on the executors at all: Spark's native streaming aggregation keeps
the partial aggregate per key in its RocksDB state store, checkpointed and versioned by
batch id, and in update mode emits, each micro-batch, one row per key *the batch updated*
with its aggregate over every batch so far. The tick merges that with the fold's init
(`ops_state.merge_columns`, the per-tick map form of the same algebra) and the result is
the state's value at those keys.

That is the whole state only at the keys the batch touched, so the path is taken only when
every reader is another query (which applies those keys as deltas, through `latest()` /
value `map()` / `inspect()` / `filter()` only, a key a filter drops crossing as a tombstone:
`channel_versions.py`) or a `lookup_keyed_singleton`
(directly or through `snapshot`) whose requested keys are provably among them — derived
from the IR, never assumed (`requests_covered`):

* the requests are the state's own input stream (up to the identity steps `batch`,
  `assume_ordering`, `weaken_ordering`), or that stream through keyed `filter`, `map`,
  `filter_map`, `flat_map` (they keep each element's key, and keep or drop elements); or
* they are `into_keyed()` of `map(lambda k: (k, ...))` over `keys()` of such a stream
  (possibly filtered): each request's key is a key of one of the batch's elements.

A requested key is then always present in this batch's rows, so the lookup — an ordinary
join on the batch's DataFrame, run by the tick (`ops.keyed_lookup`) — answers exactly what
the driver store would. Further conditions (each refusal is a reason in `hydrolite plan`):
the state folds a query input directly, or through projections the aggregation computes
from the input's typed columns (`projection.py`: maps that pick fields and build tuples,
filters that compare fields with constants, `into_keyed()`, `entries()`, `values()`; no other
Python function between the input and the state); the keys are ints, strings, booleans or
tuples of them (grouped exactly as Python compares them); sums are of ints or booleans
(a float sum depends on the order Spark adds in; Python folds in arrival order); min/max of
ints, strings or booleans; `first`/`last` depend on arrival order across batches and are
not native.

Spark findings this relies on (`README.md`, "Native aggregation"): an update-mode
aggregation can be unioned with its own input's raw rows in the one query that ends in
`foreachBatch` (the tick), next to a `transformWithStateInPandas` branch; several
independent (parallel) aggregations may be unioned too — only *chained* stateful operators
need append mode; append mode itself is refused for aggregations without a watermark, so a
query with native state runs in update mode (`OUTPUT_MODE`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...ir import nodes as n
from ...ir.meta import Kind
from .channel_versions import published_by, whole_table
from .fn_source import function_ast
from .folds import COUNT, Algebra, analyze
from .projection import IDENTITY, Cols, chain_to, follow, strip_identity
from .stages import Stage
from .types import OPAQUE, HType, Prim, TupleT, from_python, of_value

#: what `Placement.why` starts with for a state placed here
WHY = "native streaming aggregation (RocksDB)"
#: the query's output mode when it has native state (append is refused without a watermark)
OUTPUT_MODE = "update"
#: `_src` of state i's aggregate rows in the query's union is `NATIVE_SRC - i`
NATIVE_SRC = -2

INT, STR, BOOL = Prim(int), Prim(str), Prim(bool)
_KEY_KEEPING = (n.Filter, n.Map, n.FilterMap, n.FlatMap)  # on a keyed stream: per value, key unchanged
#: accumulator parts one aggregation computes exactly -> the element types allowed (None: any)
_NATIVE_PARTS: dict[str, tuple[Prim, ...] | None] = {
    "sum": (INT, BOOL),
    "sub": (INT, BOOL),
    "max": (INT, STR, BOOL),
    "min": (INT, STR, BOOL),
    "any": (BOOL,),
    "all": (BOOL,),
    "keep": None,
}


#: top-level operators whose state is how often each element (or key) occurred so far
OCCURRENCES = (n.Unique, n.Keys, n.Enumerate)


@dataclass(frozen=True)
class NativeState:
    """A keyed aggregate kept by a native streaming aggregation over the query input `input`."""

    node: n.Node
    input: n.Node
    lookups: tuple[n.KeyedLookup, ...]
    algebra: Algebra
    vt: HType  # the input's element type
    kt: HType  # its key type (a `unique()`'s: the type it groups by)
    #: the input's payload fields grouped by: ("k",) for a keyed aggregate and for `keys()`;
    #: ("v",) / ("k", "v") for a `unique()` of a stream / of a keyed stream
    by: tuple[str, ...] = ("k",)
    #: projections and simple filters between `input` and the state's own input, input first
    #: (`projection.py`): the aggregation computes them with Spark columns
    chain: tuple[n.Node, ...] = ()
    #: what other queries read of it (the state or per-key steps of it): each batch's updated
    #: keys cross as deltas (`channel_versions.py`)
    published: tuple[n.Node, ...] = ()
    #: nodes of the query that read it whole: its value in a batch is then the whole table, the
    #: updated keys applied to a copy the executors keep as Parquet (`channel_versions.whole_table`)
    whole: tuple[n.Node, ...] = ()

    @property
    def top(self) -> n.Node:
        """The state's own input (its child, up to identity steps): `input` through `chain`."""
        return self.chain[-1] if self.chain else self.input

    @property
    def occurrences(self) -> bool:
        """Whether this counts occurrences for a top-level `unique()` / `keys()` / keyed
        `enumerate()` (its rows are not a keyed state's values: the operator's handler compares
        them with the batch's own counts, `ops_state.unique_native` / `enumerate_native`)."""
        return isinstance(self.node, OCCURRENCES)


#: on a keyed stream, one element out for each element in, under the same key
_ONE_PER_KEYED_ELEMENT = (n.Map, n.Inspect)


def _strip_per_key(x: n.Node) -> n.Node:
    """`strip_identity`, and value maps of a keyed stream too: a key occurs in `ks.map(f)` exactly as
    often as in `ks`, batch by batch, so what counts keys (`keys()`, keyed `enumerate()`) can
    count them in `ks` (no function runs in the aggregation)."""
    while isinstance(x, IDENTITY) or (isinstance(x, _ONE_PER_KEYED_ELEMENT) and x.meta.kind is Kind.KEYED_STREAM):
        x = x.children[0]
    return x


def _keys_only(t: HType | None) -> bool:
    if isinstance(t, TupleT):
        return all(_keys_only(i) for i in t.items)
    return t in (INT, STR, BOOL)


def _pair_with_key(f: Any) -> bool:
    """Whether `f` is `lambda k: (k, <anything>)`: its result's first component is its argument."""
    fa = function_ast(f)
    if fa is None or len(fa.params) != 1:
        return False
    body = fa.body
    return (
        isinstance(body, ast.Tuple)
        and len(body.elts) == 2
        and isinstance(body.elts[0], ast.Name)
        and body.elts[0].id == fa.params[0]
    )


def requests_covered(requests: n.Node, state_input: n.Node) -> bool:
    """Whether every key of `requests` in a batch is the key of an element of `state_input`
    in the same batch (so the aggregate emitted that key's value in that batch)."""
    target = strip_identity(state_input)

    def keyed(x: n.Node) -> bool:  # keys of keyed stream x ⊆ keys of target
        x = strip_identity(x)
        if x is target:
            return True
        if isinstance(x, _KEY_KEEPING) and x.meta.kind.keyed and x.children[0].meta.kind.keyed:
            return keyed(x.children[0])
        if isinstance(x, n.IntoKeyed):
            pairs = strip_identity(x.children[0])
            return isinstance(pairs, n.Map) and _pair_with_key(pairs.f) and key_stream(pairs.children[0])
        return False

    def key_stream(x: n.Node) -> bool:  # the elements of stream x ⊆ keys of target
        x = strip_identity(x)
        if isinstance(x, n.Filter) and not x.meta.kind.keyed:
            return key_stream(x.children[0])
        return isinstance(x, n.Keys) and x.children[0].meta.kind.streamlike and keyed(x.children[0])

    return keyed(requests)


def native_algebra(node: n.Node, vt: HType | None) -> Algebra | str:
    """The algebra of an aggregate that one native aggregation computes exactly, or why not."""
    if isinstance(node, n.Count):
        return COUNT
    if isinstance(node, (n.First, n.Last)):
        return f"{node.op}() depends on arrival order across batches, which one aggregation cannot see"
    if vt is None or vt == OPAQUE:
        return "its elements' type is not known"
    if isinstance(node, n.Fold):
        acc_t = of_value(node.run_init()) or from_python(node.meta.elem)
        alg = analyze(node.f, acc_t, reduce=False)
    elif isinstance(node, n.Reduce):
        acc_t, alg = vt, analyze(node.f, vt, reduce=True)
    else:
        return f"{node.op}() is not a fold"
    if alg is None:
        return "its function is not an algebraic fold (a sum, min/max, or/and of the element, or tuples of those)"
    for p in alg.parts:
        allowed = _NATIVE_PARTS.get(p.kind, ())
        if allowed is None:
            continue
        t = _part_type(p.g, alg.elem_param, vt)
        acc = acc_t.items[p.index] if isinstance(acc_t, TupleT) and p.index is not None else acc_t
        if p.kind in ("first", "last"):
            return "it keeps the first or last element, which depends on arrival order across batches"
        want_acc = (INT,) if p.kind in ("sum", "sub") else (t,)
        if t not in allowed or (isinstance(node, n.Fold) and acc not in want_acc):
            return (
                f"its {p.kind} is of {t if t is not None else 'an expression'} into {acc}: natively only "
                f"{' / '.join(str(a) for a in allowed)} (a float sum depends on the order Spark adds in)"
            )
    return alg


def _part_type(g: ast.expr | None, param: str, vt: HType) -> HType | None:
    """The type of a part's per-element expression when it is the element or a constant."""
    if g is None or (isinstance(g, ast.Name) and g.id == param):
        return vt
    if isinstance(g, ast.Constant) and type(g.value) in (int, bool):
        return Prim(type(g.value))
    return None


def native_of(
    node: n.Node,
    inputs: Sequence[n.Node],
    users: dict[int, list[n.Node]],
    blocked: str | None,
    whole_ok: bool = False,
) -> NativeState | str:
    """The native form of the carried keyed aggregate (or top-level `unique()` / `keys()` /
    keyed `enumerate()`) `node` of one query, or why it has none. With `whole_ok` (state on
    the executors by the run's option), readers of the whole table in the query are allowed
    (`NativeState.whole`), and so are lookups asking for other keys once one is."""
    if isinstance(node, OCCURRENCES):
        return _unique_of(node, inputs, blocked)
    if not isinstance(node, (n.Fold, n.Reduce, n.Count, n.First, n.Last)):
        return f"{node.op}() is not an aggregate"
    if not node.children[0].meta.kind.keyed:
        return "not keyed"
    if blocked is not None:
        return blocked
    chain = chain_to(node.children[0], inputs)
    if isinstance(chain, str):
        return chain
    if chain.kt is None:
        return f"its input {chain.src.op}() {chain.src.site.label} is not a keyed stream"
    kt, vt = chain.kt, chain.vt
    if not _keys_only(kt):
        return (
            f"its keys ({kt if kt is not None else 'unknown type'}) are not ints, strings, booleans or tuples of them"
        )
    assert kt is not None
    alg = native_algebra(node, vt)
    if isinstance(alg, str):
        return alg
    lookups: list[n.KeyedLookup] = []
    published: list[n.Node] = []
    whole: list[n.Node] = []
    uncovered: list[n.Node] = []  # lookups that may ask for keys the batch did not update
    todo: list[n.Node] = [node]
    while todo:
        x = todo.pop()
        for u in users.get(id(x), []):
            if isinstance(u, n.Snapshot):
                todo.append(u)
            elif isinstance(u, n.KeyedLookup) and u.children[1] is x and u.children[0] is not x:
                covered = requests_covered(u.children[0], node.children[0])
                (lookups if covered else uncovered).append(u)
            elif x is node and (found := published_by(node, u, users)) is not None:
                if not isinstance(found, str):  # read by another query, which applies the updated keys
                    published.extend(found)
                elif whole_ok:  # (a step towards another query that this one reads whole too)
                    whole.append(u)
                else:
                    return found
            elif whole_ok:
                whole.append(u)
            else:
                return f"read whole by {u.op}() {u.site.label} (the aggregation emits only the keys a batch updated)"
    if uncovered and not whole:
        return (
            f"lookup_keyed_singleton() {uncovered[0].site.label} may ask for keys this batch did not update "
            "(its requests are not this state's own input or its keys)"
        )
    if not lookups and not published and not whole:
        return "nothing in the query reads it"
    assert vt is not None
    return NativeState(
        node,
        chain.src,
        tuple(lookups),
        alg,
        vt,
        kt,
        chain=chain.steps,
        published=tuple(published),
        whole=(*whole, *uncovered),
    )


def _unique_of(node: n.Node, inputs: Sequence[n.Node], blocked: str | None) -> NativeState | str:
    """The native form of a top-level `unique()` (elements never seen in an earlier batch), of
    the stateful `keys()` of a keyed stream (keys never seen before) or of a keyed stream's
    `enumerate()` over time (indexes continuing per key), or why it has none.

    Spark counts each element's (each key's) occurrences over all batches
    (`groupBy(element).count()`, update mode): the batch's rows carry the count of every
    element the batch holds, this batch's included. An element is new exactly when that count
    equals its count within the batch; a key's indexes in this batch start at that count minus
    the batch's own. The counts live in RocksDB, partitioned by element, and never reach the driver."""
    if blocked is not None:
        return blocked
    if isinstance(node, n.Enumerate) and not node.children[0].meta.kind.keyed:
        return "not keyed: one count for the whole stream (a number the driver keeps)"
    per_key = isinstance(node, (n.Keys, n.Enumerate))  # counts keys only: value maps do not change them
    chain = chain_to(_strip_per_key(node.children[0]) if per_key else node.children[0], inputs)
    if isinstance(chain, str):
        return chain
    src, keyed, kt, vt = chain.src, chain.kt is not None, chain.kt, chain.vt
    if isinstance(node, n.Keys) and not keyed:
        return f"its input {src.op}() {src.site.label} is not a keyed stream"
    by: tuple[str, ...] = ("k",) if per_key else ("k", "v") if keyed else ("v",)
    for field, t in (("k", kt), ("v", vt)):
        if field in by and not _keys_only(t):
            what = "keys" if field == "k" else "elements"
            return f"its {what} ({t if t is not None else 'unknown type'}) are not ints, strings, booleans or tuples of them"
    if vt is None:
        return f"the type of its input's elements ({src.meta.elem!r}) has no Spark column type"
    assert kt is not None or by != ("k",)
    return NativeState(node, src, (), COUNT, vt, kt if kt is not None and by == ("k",) else vt, by, chain.steps)


# ------------------------------------------------------------------ at run time
@dataclass(frozen=True)
class NativeInput:
    """Where a native state's input sits in the query's union."""

    src: int  # `_src` of its rows; its payload is the struct column `p<src>` (k, v)
    quarantined: bool  # rejected records arrive as rows with `_file.bad` set: not elements


class NativeAggregations:
    """A query's native states at run time: their aggregations in the streaming plan, and
    each batch's aggregate rows as the states' values (`KTable`s of the updated keys)."""

    def __init__(self, states: Sequence[NativeState], inputs: dict[int, NativeInput], stage: Stage) -> None:
        self.states = list(states)
        self.inputs = inputs  # id(input node) -> NativeInput
        self.state_keys = stage.state_keys
        self._parts: list[list[HType]] = []
        #: `keys()` of a native state's own input in the tick -> that state's index: the keys the
        #: batch holds are exactly the keys its aggregation emitted (no distinct over the input)
        self.keys: dict[int, tuple[n.Node, int]] = {}
        #: lookups answered from the aggregate rows without a join -> their requests' `lambda k: (k, r)` translated
        self.in_place: dict[int, Any] = {}
        self._cols: dict[int, _Columns] = {}
        #: whether the query's batches hold only this one state's rows (set by the runner once
        #: it knows the union): its values then need no filter on `_src`
        self.alone = False
        #: whether the query's union holds one input only: its rows need no filter on `_src`
        #: (each DataFrame built costs the query's start a Py4J round trip and an analysis)
        self.one_input = False
        for x in stage.nodes:
            if not isinstance(x, n.Keys) or stage.roles.stateful(x) or x.children[0].meta.kind is not Kind.KEYED_STREAM:
                continue
            i = next(
                (
                    i
                    for i, st in enumerate(self.states)
                    if not st.occurrences and strip_identity(x.children[0]) is st.top
                ),
                None,
            )
            if i is not None:
                self.keys[id(x)] = (x, i)
        self._find_in_place()  # before `given`, which the runner asks before the branch is built

    @classmethod
    def over(cls, states: Sequence[NativeState], inputs: Sequence[Any], stage: Stage) -> NativeAggregations:
        """The aggregations of a query whose union holds `inputs` (`InputSpec`s) in this order."""
        from .quarantine import quarantine_dir

        at = {
            id(inp.node): NativeInput(i, quarantine_dir(inp.binding) is not None)
            for i, inp in enumerate(inputs)
            if inp.node is not None
        }
        out = cls(states, at, stage)
        out.one_input = len(inputs) == 1
        return out

    def branch(self, raw: Any, direct: bool = False) -> Any:
        """The aggregations' rows, to union with the query's raw rows: state i's rows have
        `_src = NATIVE_SRC - i` and a struct `_n<i>` of (k, p0, p1, ...).

        `direct`: `raw` is the query's one input itself (columns `k` when keyed, `v`), not
        the union of the inputs' payload structs: no DataFrame is built to wrap the columns
        into a struct only to take them out again (each one costs the query's start a Py4J
        round trip and an analysis)."""
        from pyspark.sql import functions as F

        from .folds import partial_columns
        from .lambdas import TExpr
        from .quarantine import good_rows
        from .strict_read import sql_name

        out = None
        self._parts, self._cols = [], {}
        for i, st in enumerate(self.states):
            inp = self.inputs[id(st.input)]
            rows = raw if self.one_input else raw.filter(F.col("_src") == inp.src)
            if inp.quarantined:
                rows = good_rows(rows)
            rows = _element_rows(st, rows, None if direct else F.col(f"p{inp.src}"))
            parts = partial_columns(st.algebra, TExpr(F.col("v"), st.vt), None)
            self._parts.append([t for _, t in parts])
            agg = rows.groupBy(*st.by).agg(*[c.alias(f"p{j}") for j, (c, _) in enumerate(parts)])
            cols = [*st.by, *(f"p{j}" for j in range(len(parts)))]
            # one SQL select: Column functions cost a Py4J round trip each, at every query start
            fields = ", ".join(sql_name(c) for c in cols)
            mine = agg.selectExpr(f"{NATIVE_SRC - i} AS _src", f"struct({fields}) AS {sql_name(f'_n{i}')}")
            out = mine if out is None else out.unionByName(mine, allowMissingColumns=True)
        return out

    @property
    def scans(self) -> int:
        """How many times `branch` reads the raw union: once per state (each one a scan of every input)."""
        return len(self.states)

    def _whole(self, live: set[int] | None) -> list[tuple[int, str]]:
        """(index, key of its kept table) of each `live` state the query reads whole."""
        return [
            (i, f"whole:{self.state_keys[id(st.node)]}")
            for i, st in enumerate(self.states)
            if st.whole and not st.occurrences and (live is None or id(st.node) in live)
        ]

    def whole_updates(self, live: set[int] | None = None) -> dict[str, Any]:
        """Of each `live` state the query reads whole, the condition on the batch's rows that
        holds for its updated keys' rows (`channel_versions.updated_tables` asks them all in one job)."""
        from pyspark.sql import functions as F

        return {key: F.lit(True) if self.alone else self._columns(i).mine for i, key in self._whole(live)}

    def tables(
        self, df: Any, live: set[int] | None = None, state: Any = None, updated: dict[str, bool] | None = None
    ) -> dict[int, Any]:
        """node id -> the state's value in this batch: a `KTable` of the keys the batch updated
        (only the `live` ones, when given: each value is a DataFrame built over Py4J); of a
        state read whole, the whole table (`channel_versions.whole_table`; `state`: the batch's
        versioned store, which keeps the copy's path; `updated`: whether the batch updated it,
        by the keys of `whole_updates`)."""
        from .values import KTable, SFrame

        out: dict[int, Any] = {}
        for i in range(len(self.states)):
            c = self._columns(i)
            wanted = [(x, value) for x, value in c.values.items() if live is None or x in live]
            where = None if self.alone else c.mine
            # pending frames over the state's rows: one select each when built
            out.update((x, value(df, where)) for x, value in wanted)
        for i, key in self._whole(live):
            assert state is not None and updated is not None, "a state read whole needs the batch's store"
            node = self.states[i].node
            rows = out[id(node)]
            table = whole_table(df.sparkSession, state, key, rows.frame.df, not updated[key])
            out[id(node)] = KTable(rows.kt, rows.vt, SFrame(table, rows.vt, rows.kt))
        return out

    def _columns(self, i: int) -> _Columns:
        """State `i`'s column expressions, built once: a Spark Column is an unresolved
        expression that any batch's DataFrame can take, and building one costs Py4J calls."""
        if i in self._cols:
            return self._cols[i]
        from pyspark.sql import functions as F

        from .ops_state import merge_columns
        from .reuse import field_of, struct_of
        from .types import OptT
        from .values import KTable

        st, parts = self.states[i], self._parts[i]
        if st.occurrences:  # no value of its own: `seen` gives its handler the counts
            c = self._cols[i] = _Columns(mine=F.col("_src") == NATIVE_SRC - i, values={})
            return c
        has_init, init, acc_t = _start(st)
        k = F.col(f"_n{i}.k")
        partial = [(F.col(f"_n{i}.p{j}"), t) for j, t in enumerate(parts)]
        v = merge_columns(st.algebra, partial, has_init, init, acc_t)
        vt = acc_t if has_init else parts[0]
        table, key = {"k": k, "v": v}, {"v": k}
        # node id -> its value from the state's rows of the batch: the state's table, the keys
        # the batch updated, each in-place lookup's answer
        values: dict[int, Callable[[Any, Any], Any]] = {
            id(st.node): lambda df, where: KTable(st.kt, vt, _frame(table, vt, st.kt)(df, where))
        }
        for x, j in self.keys.values():
            if j == i:
                values[id(x)] = _frame(key, st.kt, None)
        for lookup in st.lookups:
            te = self.in_place.get(id(lookup))
            if te is None:
                continue
            assert isinstance(te.t, TupleT)  # (k, (r, value)), typed as `ops.keyed_lookup` types it
            rt = OptT(vt) if lookup.keep_missing and not isinstance(vt, OptT) else vt
            answer = struct_of([("_1", field_of(te.col, "_2")), ("_2", v)])
            t, kt = TupleT((te.t.items[1], rt)), te.t.items[0]
            values[id(lookup)] = _frame({"k": k, "v": answer}, t, kt)
        c = self._cols[i] = _Columns(mine=F.col("_src") == NATIVE_SRC - i, values=values)
        return c

    def _find_in_place(self) -> None:
        """Which lookups answer without a join (`in_place`): those whose requests are `keys()`
        of the state's own input paired by `lambda k: (k, r)` with a natively translated `r`.
        There is one request per key the aggregation emitted, so each aggregate row answers
        its own request (a join would match every row with itself, at the cost of two
        shuffles). Decided once, before the query starts: the batch then never computes the
        requests at all (`exec.live_nodes`)."""
        from pyspark.sql import functions as F

        from .lambdas import NotTranslatable, TExpr, translate

        for i, st in enumerate(self.states):
            for lookup in st.lookups:
                req = strip_identity(lookup.children[0])
                pairs = strip_identity(req.children[0]) if isinstance(req, n.IntoKeyed) else None
                if not (isinstance(pairs, n.Map) and _pair_with_key(pairs.f)):
                    continue
                keys_of = self.keys.get(
                    id(strip_identity(pairs.children[0]))
                )  # every state of one input emits the same keys
                if keys_of is None or self.states[keys_of[1]].top is not st.top:
                    continue
                try:
                    te = translate(pairs.f, [TExpr(F.col(f"_n{i}.k"), st.kt)])  # over the state's rows
                except NotTranslatable:
                    continue
                if isinstance(te.t, TupleT) and len(te.t.items) == 2 and te.t.items[0] == st.kt:
                    self.in_place[id(lookup)] = te

    def given(self) -> set[int]:
        """Ids of the nodes whose values `tables` supplies each batch."""
        keys = {id(x) for x, _ in self.keys.values()}
        return {id(st.node) for st in self.states if not st.occurrences} | keys | set(self.in_place)

    def seen(self, df: Any) -> dict[int, Any]:
        """`unique()` / `keys()` node id -> a DataFrame of (`_g0`, ... the element's grouped
        fields, `_t` its count over all batches so far), one row per element of this batch."""
        from pyspark.sql import functions as F

        out: dict[int, Any] = {}
        for i, st in enumerate(self.states):
            if st.occurrences:
                rows = df if self.alone else df.filter(F.col("_src") == NATIVE_SRC - i)
                groups = [F.col(f"_n{i}.{c}").alias(f"_g{j}") for j, c in enumerate(st.by)]
                out[id(st.node)] = rows.select(*groups, F.col(f"_n{i}.p0").alias("_t"))
        return out


def _element_rows(st: NativeState, rows: Any, payload: Any) -> Any:
    """The rows (`k` when keyed, `v`) the state aggregates, from its input's rows and payload
    struct (None: the rows are the input's own `k`, `v`): the input's own, or computed
    through the state's projections and filters."""
    from pyspark.sql import functions as F

    if payload is None and not st.chain:
        return rows
    field = F.col if payload is None else payload.getField
    k = field("k") if st.input.meta.kind.keyed else None
    got = follow(st.input, st.chain, Cols(k, field("v")))
    assert not isinstance(got, str) and got[2] is not None, "chain_to checked every step"
    cols = got[2]
    if cols.where is not None:
        rows = rows.where(cols.where)
    return rows.select(*([cols.k.alias("k")] if cols.k is not None else []), cols.v.alias("v"))


@dataclass
class _Columns:
    """One state's per-batch column expressions (`NativeAggregations._columns`)."""

    mine: Any  # the state's rows of the batch (`_src`), each with its struct `_n<i>` of (k, p0, p1, ...)
    values: dict[int, Callable[[Any, Any], Any]]  # node id -> its value, from (batch, the state's rows' condition)


def _frame(exprs: dict[str, Any], vt: HType, kt: HType | None) -> Callable[[Any, Any], Any]:
    """(batch, condition) -> the pending `SFrame` of these columns of the batch's rows where
    the condition holds (None: every row)."""
    from .values import SFrame

    return lambda df, where: SFrame.pending(df, exprs, vt, kt, where=where)


def _start(st: NativeState) -> tuple[bool, Any, HType]:
    """(has_init, init, accumulator type), as `ops_state._spec` derives them."""
    if isinstance(st.node, n.Count):
        return True, 0, INT
    if isinstance(st.node, n.Fold):
        return True, st.node.run_init(), of_value(st.node.run_init()) or from_python(st.node.meta.elem) or OPAQUE
    return False, None, st.vt
