"""Step 2 of the executor region (`keyed_state.py`): what runs per key inside Spark's
`transformWithState` operator — a keyed aggregate folding its key's new elements, a join of
unbounded streams pairing them with the other side's elements so far, the commutative
folds kept with that join (`region.ExecutorState.joined`), and `unique()` / `keys()` / keyed
`enumerate()` remembering what they saw (`region.ExecutorSeen`) — and the element-wise steps
both step 1 (the chains) and those folds run.

One `ValueState` per grouping key (state key, element key): a grouping key belongs to exactly
one state, so states can come and go between runs without changing Spark's operator. A region
whose chains pass through a stateful `unique()` / `keys()` (`region.Chain.kept`), or whose
join or keyed `enumerate()` keeps what its output saw (`JoinedSeen`), also declares a `MapState` of the marks of the
elements each group saw (`first_occurrences`); Spark resumes a checkpoint written with or
without it (checked on PySpark 4.3).

A join keeps `(lefts, rights)` per key; with folds kept next to it, `(lefts, rights, accs)`,
`accs` mapping each fold's state key to `(has, acc)`. The two-tuple reads as "no folds yet",
so a checkpoint written before a fold was kept with its join resumes unchanged. What a
`unique()` / `keys()` saw is `True` under the element (key) seen; a keyed `enumerate()`
keeps its key's count, and `(count, accs)` once folds are kept with it (`kept_with.py`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from pyspark.sql import Row as SparkRow
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from ... import kernels
from ...kernels import KernelError
from .grouping import canonical, plain_bytes
from .pyfn import FnSite

#: the order columns of a region's rows: (file mtime | seq | task position, file path,
#: split start, task position, index within a flat_map's result)
ORDER = ("_r1", "_r2", "_r3", "_r4", "_r5")
#: their names inside the stateful operator (PySpark renames columns starting with "_" there)
INNER = ("r1", "r2", "r3", "r4", "r5")
ORDER_TYPES = (T.LongType(), T.StringType(), T.LongType(), T.LongType(), T.LongType())
ORDER_FIELDS = [T.StructField(c, t) for c, t in zip(INNER, ORDER_TYPES)]
#: the operator's output: a lookup's answer, a join's pair, a state's updated key
ANSWERS = T.StructType(
    [
        T.StructField("tag", T.IntegerType()),
        *ORDER_FIELDS,
        T.StructField("k", T.BinaryType()),
        T.StructField("v", T.BinaryType()),
    ]
)
NO_ORDER = (0, "", 0, 0, 0)  # the order columns of rows that have none (a join's pairs, a table's rows)


@dataclass(frozen=True)
class Op:
    """One element-wise step, as `hydrolite.kernels` runs it (the simulator's definitions)."""

    kind: str  # map | filter | filter_map | flat_map | into_keyed | entries | values | by_element | distinct[_keys]
    keyed: bool  # applies to the values of (key, value) pairs
    f: Any  # (distinct[_keys]: which step: its number, or with `kept` its state's stable key)
    site: FnSite
    kept: bool = False  # distinct[_keys] across batches: each group keeps the elements it saw


Item = tuple[tuple[Any, ...], Any, Any]  # (order, key, value)


def run_op(op: Op, items: list[Item]) -> list[Item]:
    """`op` over `items`; a failing user function names the operator and the element."""
    values = [v for _, _, v in items]
    try:
        if op.kind == "into_keyed":
            return [(o, k, v) for (o, _, _), (k, v) in zip(items, kernels.split_pairs(values))]
        if op.kind == "entries":
            return [(o, None, (k, v)) for o, k, v in items]
        if op.kind == "values":
            return [(o, None, v) for o, _, v in items]
        if op.kind == "by_element":  # unique(): an element is its own key (keyed: its (key, value) pair)
            return [(o, (k, v), (k, v)) if op.keyed else (o, v, v) for o, k, v in items]
        if op.kind in ("distinct", "distinct_keys"):  # first occurrences: marked, kept by the processor
            return [_occurrence(op, o, k, v) for o, k, v in items]
        if op.kind == "map":
            return [(o, k, r) for (o, k, _), r in zip(items, kernels.map_values(op.f, values))]
        if op.kind == "filter":
            return list(compress(items, kernels.filter_mask(op.f, values)))
        if op.kind == "filter_map":
            mask, results = kernels.filter_map_results(op.f, values)
            return [(o, k, r) for (o, k, _), r, keep in zip(items, results, mask) if keep]
        groups = kernels.flat_map_groups(op.f, values)
        return [((*o[:4], i, *o[5:]), k, r) for (o, k, _), g in zip(items, groups) for i, r in enumerate(g)]
    except KernelError as e:
        element = (items[e.index][1], e.element) if op.keyed else e.element
        raise op.site.fail(element, e.cause) from e.cause


def _occurrence(op: Op, o: tuple[Any, ...], k: Any, v: Any) -> Item:
    """An element of a `unique()` (`distinct`; of a keyed stream: its pair) or `keys()`
    (`distinct_keys`: the key, unkeyed), its order extended with which step (`op.f`) and
    element (the mark), which occurrence of it this is, and whether the mark is kept across
    batches (`op.kept`)."""
    if op.kind == "distinct_keys":
        element, out = k, (o, None, k)
    else:
        element, out = ((k, v) if op.keyed else v), (o, k, v)
    mark = plain_bytes((op.f, canonical(element)))
    return ((*o[:5], (mark, tuple(o[:5]), op.kept)), *out[1:])


def first_occurrences(rows: list[tuple[Any, ...]], seen: Any = None) -> list[tuple[Any, ...]]:
    """Of a group's rows `(gk, tag, r1..r5, x, d)`, those that are no later occurrence of an
    element a `unique()` / `keys()` (`d`: which step and element, which occurrence, whether
    kept) already passed on. Every occurrence of an element gives the same rows after it (the
    steps are functions of the element), so each reaches the same groups: keeping the first
    in each group is keeping the first in the batch. A kept step (a stateful one: once ever)
    also drops the elements an earlier batch passed on to the group, which `seen` (the
    group's `MapState` of marks) holds, and adds the batch's new ones to it."""
    marks = [None if r[8] is None else pickle.loads(r[8]) for r in rows]
    first: dict[bytes, tuple[Any, ...]] = {}
    kept: set[bytes] = set()
    for m in marks:
        if m is not None and (m[0] not in first or m[1] < first[m[0]]):
            first[m[0]] = m[1]
        if m is not None and m[2]:
            kept.add(m[0])
    old: set[bytes] = set()
    for mark in kept:  # (one round trip to the state store per distinct element)
        if seen.containsKey((mark,)):
            old.add(mark)
        else:
            seen.updateValue((mark,), (True,))
    return [r for r, m in zip(rows, marks) if m is None or (first[m[0]] == m[1] and m[0] not in old)]


@dataclass(frozen=True)
class AggFn:
    """How one executor state folds its elements (`hydrolite.kernels`, as the simulator)."""

    kind: str  # fold | reduce | count | first | last | table (a version read as deltas)
    f: Any
    has_init: bool
    init: Any
    site: FnSite
    publish: int | None = None  # the tag of its updated keys' rows, when another query reads it
    #: keep the form the key first came in, for its published rows: keys of an undeclared
    #: (pickled) type are merged by their bytes downstream, and the simulator's dict keeps the
    #: first form of a key (`1` stays `1` when `True` comes later)
    first_form: bool = False

    def fold(self, key: Any, has: bool, acc: Any, xs: list[Any]) -> tuple[bool, Any]:
        try:
            if self.kind in ("fold", "reduce"):
                return kernels.fold_values(self.f, acc, has, xs)
            if self.kind == "count":
                return True, kernels.count_values(acc, xs)
            if self.kind == "first":
                return kernels.first_values(has, acc, xs)
            if self.kind == "table":  # the newest entry: a value, or a tombstone (no value)
                v, dead = xs[-1]
                return (False, None) if dead else (True, v)
            return kernels.last_values(has, acc, xs)
        except KernelError as e:
            raise self.site.fail((key, e.element), e.cause) from e.cause


@dataclass(frozen=True)
class JoinedFold:
    """A keyed fold of a join's output (commutative: the pairs have no order) or of a keyed
    `enumerate()`'s, kept in that operator's state (`kept_with.py`): its new elements of a key
    — a join's pairs as `(k, (a, b))`, an enumerate's `(index, element)` values in arrival
    order — go through `steps` (each keeps the key) and are folded into the accumulator
    stored under `key` (the fold's stable state key)."""

    key: str
    agg: AggFn
    steps: tuple[Op, ...]


@dataclass(frozen=True)
class JoinedSeen:
    """A `unique()` / `keys()` of a join's or a keyed `enumerate()`'s output, kept in that
    operator's processor: a key's new elements — a join's pairs as `(k, (a, b))`, an
    enumerate's `(index, element)` values in arrival order — go through `steps` (each keeps
    the key, so no element comes from two keys) and the ones the key never passed on leave as
    rows tagged `out`, remembered in the group's `MapState` under `key` (its stable state key)."""

    key: str
    out: int
    kind: str  # unique | keys
    keyed: bool  # unique() of a keyed stream: the element is its (key, value) pair
    steps: tuple[Op, ...]


@dataclass(frozen=True)
class JoinFn:
    """A join of unbounded streams: both sides' elements so far, per key."""

    out: int  # the tag of its output rows
    cross: bool = False  # a cross product: one key (None), pairs (a, b) without it
    folds: tuple[JoinedFold, ...] = ()
    asks: dict[int, str] = field(default_factory=dict)  # lookup tag -> the state key of the fold it reads
    seen: tuple[JoinedSeen, ...] = ()


@dataclass(frozen=True)
class SeenFn:
    """A stream operator remembering what it saw per key (`region.ExecutorSeen`): `unique`
    (grouped by element: whether it was seen), `keys` (by key: whether it was seen) or
    `enumerate` (by key: how many elements it had). Its new elements are rows tagged `out`,
    in their arrival order."""

    kind: str  # unique | keys | enumerate
    out: int
    keyed: bool  # unique() of a keyed stream: the element is its (key, value) pair
    #: an enumerate()'s: the keyed folds of its (index, element) pairs kept in its state
    #: (`kept_with.py`), and the lookups of them it answers (lookup tag -> the fold's state key)
    folds: tuple[JoinedFold, ...] = ()
    asks: dict[int, str] = field(default_factory=dict)
    seen: tuple[JoinedSeen, ...] = ()  # (an enumerate()'s: the unique() / keys() of its pairs)


#: what a chain's rows are to the state they reach
FOLD, ASK, ASK_PRESENT, LEFT, RIGHT, SEEN = "fold", "ask", "ask_present", "left", "right", "seen"
Row = tuple[int, tuple[Any, ...], bytes]  # (tag, order, pickled (key, value))


class Processor(StatefulProcessor):
    """One key's new elements folded into its state, then its lookups answered (or, for a
    join, the new elements paired with the other side's elements so far, the new pairs folded
    into the folds kept with it, then their lookups answered).

    Row-based (`transformWithState`): a key's rows arrive as `Row`s and its answers leave as
    `Row`s, without a pandas DataFrame each way per key (measured ~2x faster per key than
    `transformWithStateInPandas`, README "Keyed state on the executors")."""

    def __init__(self, aggs: dict[str, AggFn | JoinFn | SeenFn], tags: dict[int, str], marks: bool = False) -> None:
        self.aggs = aggs  # state key -> what its state does
        self.tags = tags  # chain tag -> FOLD | ASK | ASK_PRESENT | LEFT | RIGHT | SEEN
        self.marks = marks  # groups keep marks of what they saw (`keyed_state.ExecutorRegion.marks`)
        self.value: Any = None
        self.seen: Any = None

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.value = handle.getValueState("acc", "acc binary")
        if self.marks:  # (declared only then: the operator of other regions stays as it was)
            self.seen = handle.getMapState("seen", "mark binary", "b boolean")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        state_key, _ = pickle.loads(key[0])  # (the key's canonical form: grouping.py)
        fn = self.aggs[state_key]
        by_role: dict[str, list[Row]] = {}
        tags = self.tags
        got = list(rows)  # (gk, tag, r1..r5, x, d), as keyed_state's chained rows
        # the key as the batch's first row carries it: equal keys may differ in form (1, 1.0);
        # of a fold's, the first element it folds (a lookup's request puts no key in the table)
        folded = [r for r in got if tags[r[1]] == FOLD]
        k = pickle.loads(min(folded or got, key=_row_order)[7])[0]
        if any(r[8] is not None for r in got):
            got = first_occurrences(got, self.seen)
        for r in got:
            by_role.setdefault(tags[r[1]], []).append((r[1], r[2:7], r[7]))
        for rs in by_role.values():
            rs.sort(key=_order)  # arrival order
        out: list[Any] = []
        if isinstance(fn, JoinFn):
            self._join(fn, k, by_role, out)
        elif isinstance(fn, SeenFn) and fn.kind == "enumerate":
            self._enumerate(fn, k, by_role, out)
        elif isinstance(fn, SeenFn):
            self._seen(fn, k, by_role.get(SEEN, []), out)
        else:
            self._fold(fn, k, by_role, out)
        return iter(out)

    def _stored(self) -> Any:
        # one round trip to the state store: `get` answers None for a key without state
        found = self.value.get()
        return None if found is None else pickle.loads(found[0])

    def _fold(self, agg: AggFn, k: Any, by_role: dict[str, list[Row]], out: list[Any]) -> None:
        # a key is in the table once an element reached it (a fold's init or a count's 0 is
        # only where its accumulator starts, not a value for keys never seen)
        news = by_role.get(FOLD, [])
        # last(): the new value does not depend on the stored one, so no `get` (a round trip
        # to the state server, a third of a put's cost)
        blind = news and agg.kind in ("last", "table") and not agg.first_form
        stored: tuple[Any, ...] | None = None if blind else self._stored()
        known = stored is not None
        has, acc = stored[:2] if stored is not None else (agg.has_init, agg.init)
        if agg.first_form and stored is not None and len(stored) > 2:
            k = stored[2]
        if news:
            has, acc = agg.fold(k, has, acc, [pickle.loads(x)[1] for _, _, x in news])
            if has or agg.kind != "table":
                kept = (has, acc, k) if agg.first_form else (has, acc)
                self.value.update((pickle.dumps(kept, protocol=5),))
            else:  # a tombstone: the key leaves the table
                self.value.clear()
            known = True
            if agg.publish is not None and has:  # the key's new value, for another query (a delta)
                out.append(answer(agg.publish, NO_ORDER, k, acc))
        found = (has and known, acc)
        _answer_lookups(by_role, lambda _tag: found, out)

    def _join(self, fn: JoinFn, k: Any, by_role: dict[str, list[Row]], out: list[Any]) -> None:
        stored = self._stored()
        lefts, rights, accs, left_keys = _join_state(stored, k)
        new = [pickle.loads(x) for _, _, x in by_role.get(LEFT, [])]
        new_l, new_lk = [v for _, v in new], [key for key, _ in new]
        new_r = [pickle.loads(x)[1] for _, _, x in by_role.get(RIGHT, [])]
        if new_l or new_r:
            # each pair carries its left element's own key (`1` and `1.0` are one group here,
            # and the simulator's join keeps the left element's form)
            pairs = [(lk, (a, b)) for lk, a in zip(new_lk, new_l) for b in rights]
            pairs += [(lk, (a, b)) for lk, a in zip(left_keys + new_lk, lefts + new_l) for b in new_r]
            accs = _fold_kept(fn.folds, k, [(NO_ORDER, None, kp) for kp in pairs], accs, out)
            # (the left elements' keys: the group's `k` is the form of whichever row this batch
            # brought first, so it cannot stand for them)
            value = (lefts + new_l, rights + new_r, accs, left_keys + new_lk)
            self.value.update((pickle.dumps(value, protocol=5),))
            for lk, pair in pairs:  # (a join's output has no order)
                out.append(answer(fn.out, NO_ORDER, None, pair if fn.cross else (lk, pair)))
            for js in fn.seen:
                self._joined_seen(js, [(NO_ORDER, None, kp) for kp in pairs], out)
        _answer_lookups(by_role, lambda tag: _kept_value(accs, fn.asks[tag]), out)

    def _joined_seen(self, js: JoinedSeen, items: list[Item], out: list[Any]) -> None:
        """The elements of one key's new `items` (a join's pairs, an enumerate's indexed
        elements; through `js.steps`) that key never passed on, in the items' order."""
        for op in js.steps:  # (they keep the key: `kept_with.keeper_steps`)
            items = run_op(op, items)
        fresh: set[bytes] = set()
        for o, key, v in items:
            element = key if js.kind == "keys" else (key, v) if js.keyed else v
            mark = plain_bytes((js.key, canonical(element)))
            if mark in fresh or self.seen.containsKey((mark,)):
                continue
            fresh.add(mark)
            self.seen.updateValue((mark,), (True,))
            out.append(
                answer(
                    js.out,
                    o,
                    key if js.keyed and js.kind == "unique" else None,
                    element if js.kind == "keys" else v,
                )
            )

    def _enumerate(self, fn: SeenFn, k: Any, by_role: dict[str, list[Row]], out: list[Any]) -> None:
        """The key's new elements, each with its index (continuing from the key's count), in
        arrival order; then the folds kept with it fold those pairs (in that order) and the
        lookups of them are answered. Its state: the count, or `(count, accs)` once a fold is
        kept with it (a count alone reads as no folds yet)."""
        rows = by_role.get(SEEN, [])
        if not rows and not fn.asks:
            return
        stored = self._stored()
        start, accs = stored if isinstance(stored, tuple) else (stored or 0, {})
        if rows:
            items: list[Item] = []
            for i, (_, o, x) in enumerate(rows):
                key, v = pickle.loads(x)  # (each element keeps its key's form, as the simulator's)
                out.append(answer(fn.out, o, key, (start + i, v)))
                items.append((o, key, (start + i, v)))
            accs = _fold_kept(fn.folds, k, items, accs, out)
            for js in fn.seen:
                self._joined_seen(js, items, out)
            kept = (start + len(rows), accs) if accs else start + len(rows)
            self.value.update((pickle.dumps(kept, protocol=5),))
        _answer_lookups(by_role, lambda tag: _kept_value(accs, fn.asks[tag]), out)

    def _seen(self, fn: SeenFn, k: Any, rows: list[Row], out: list[Any]) -> None:
        """The key's first element, unless an earlier batch saw the key (`unique()` of it, or
        its `keys()`)."""
        if not rows:
            return
        stored = self._stored()
        if stored is not None:  # seen in an earlier batch
            return
        self.value.update((pickle.dumps(True, protocol=5),))
        _, o, x = rows[0]
        key, value = pickle.loads(x)
        if fn.kind == "keys":
            out.append(answer(fn.out, o, None, key))
        elif fn.keyed:  # (the element is its (key, value) pair: `by_element`)
            out.append(answer(fn.out, o, value[0], value[1]))
        else:
            out.append(answer(fn.out, o, None, value))

    def close(self) -> None:
        """Nothing to release: the state is Spark's, the rows were answered."""


def _fold_kept(
    folds: tuple[JoinedFold, ...], k: Any, elements: list[Item], accs: dict[str, Any], out: list[Any]
) -> dict[str, Any]:
    """Key `k`'s new `elements` of a join or an `enumerate()` through each fold kept with it
    (`kept_with.py`: its steps keep the key), folded into its accumulator in `accs` (fold's
    state key -> (has, acc)); an accumulator of a fold the program no longer has is dropped.
    A fold read by another query sends its key's new value."""
    kept = {f.key for f in folds}
    accs = {key: v for key, v in accs.items() if key in kept}
    for fold in folds:
        items = elements
        for op in fold.steps:
            items = run_op(op, items)
        if not items:
            continue
        agg = fold.agg
        has, acc, *first = accs.get(fold.key, (agg.has_init, agg.init))
        key = first[0] if first else k  # (the form the key first came in: `AggFn.first_form`)
        has, acc = agg.fold(key, has, acc, [v for _, _, v in items])
        accs[fold.key] = (has, acc, key) if agg.first_form else (has, acc)
        if agg.publish is not None and has:
            out.append(answer(agg.publish, NO_ORDER, key, acc))
    return accs


def _join_state(stored: tuple[Any, ...] | None, k: Any) -> tuple[list[Any], list[Any], dict[Any, Any], list[Any]]:
    """A join group's stored (lefts, rights, the folds kept with it, the left elements' own
    keys): four items as written now; two or three as older runs wrote them (every left
    element then counts in the group's form, as those runs emitted it)."""
    if stored is None:
        return [], [], {}, []
    lefts, rights = stored[0], stored[1]
    accs = stored[2] if len(stored) > 2 else {}
    keys = stored[3] if len(stored) > 3 else [k] * len(lefts)
    return lefts, rights, accs, keys


def _kept_value(accs: dict[str, Any], key: str) -> tuple[bool, Any]:
    """(has, value) of the fold kept under state key `key` (absent: none yet; a third item,
    the key's first form, is not part of the value)."""
    has, value, *_ = accs.get(key, (False, None))
    return has, value


def _answer_lookups(by_role: dict[str, list[Row]], value_of: Callable[[int], tuple[bool, Any]], out: list[Any]) -> None:
    """Answer the key's lookups with the value (`value_of(lookup tag)`: has, value) of the
    state each reads, as of the end of the batch: `(request value, value or None)`; a request
    of `get_many_if_present` without a value is dropped."""
    for role in (ASK, ASK_PRESENT):
        for tag, o, x in by_role.get(role, []):
            has, acc = value_of(tag)
            if has or role == ASK:
                key, v = pickle.loads(x)  # (the request's own key, in its form)
                out.append(answer(tag, o, key, (v, acc if has else None)))


def _order(r: Row) -> tuple[Any, ...]:
    return r[1]


def _row_order(r: Any) -> tuple[Any, ...]:
    return tuple(r[2:7])


#: an answer row, as ANSWERS
_AnswerRow = SparkRow(*ANSWERS.names)


def answer(tag: int, order: tuple[Any, ...], k: Any, v: Any) -> Any:
    return _AnswerRow(tag, *order, pickle.dumps(k, protocol=5), pickle.dumps(v, protocol=5))
