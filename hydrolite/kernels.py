"""Kernels: the one definition of what each operator does to the elements it is given.

Every backend runs the same IR: the simulator (`hydrolite.sim`) on Python lists, Spark's
Python path (`hydrolite.planner.spark.pyfn`) on columns decoded from Arrow batches. What
`map`, `filter`, `fold`, `sort`, ... mean element by element is written once, here, as
small functions over plain Python sequences, and both backends call them: the simulator's
evaluators add versions, deltas and ticks around them, `pyfn` adds Arrow decoding and
encoding. Spark's native (Column) translations are an optimisation that the tests check
against these kernels (`tests/spark/test_lambdas.py`). Nothing here imports Spark or the
simulator.

Conventions:

* Element-wise kernels take the user function first and a sequence of values; the
  `*_keyed` forms take `(key, value)` pairs, apply the function to the values and keep the
  keys. A singleton is a sequence of one value (empty result: the singleton is empty).
* A user function that raises (on any element, also while its flat_map result is being
  iterated, or a sort key that cannot be compared) makes the kernel raise `KernelError`
  with the element (for keyed input, the `(key, value)` pair), its index and the original
  exception as `cause` (also chained as `__cause__`). Each backend turns it into its own
  error naming the operator and site; nothing is swallowed.
* Folds never mutate what they are given: the starting accumulator, stored accumulators
  and input elements may be shared (earlier versions, other consumers), so a mutable
  accumulator is deep-copied before the first call of f that could mutate it
  (copy-on-write; immutable values are never copied). A fold's result therefore does not
  depend on aliasing, and folding a batch from the previous batch's result is the same as
  folding everything at once, which is what makes per-batch state correct.

>>> map_values(lambda x: x * 2, [1, 2, 3])
[2, 4, 6]
>>> fold_values(lambda acc, x: acc + [x], [], True, [1, 2])
(True, [1, 2])
>>> fold_values(lambda a, b: a + b, None, False, [])  # a reduce of nothing has no value
(False, None)
>>> try:
...     map_values(lambda x: 10 // x, [5, 0])
... except KernelError as e:
...     print(e.element, e.index, type(e.cause).__name__)
0 1 ZeroDivisionError
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence, Sized
from itertools import chain, compress
from operator import length_hint
from typing import Any, Final, TypeVar

K = TypeVar("K")
V = TypeVar("V")
U = TypeVar("U")
A = TypeVar("A")

Pair = tuple[K, V]


class KernelError(Exception):
    """A user function raised on one element; each backend reports it as its own error.

    `element` is what the operator was processing (a `(key, value)` pair for keyed input,
    the whole batch when a sort's keys cannot be compared), `index` its position in the
    kernel's input (-1 for the whole batch), `cause` the exception the function raised.
    """

    def __init__(self, element: object, cause: Exception, index: int = -1) -> None:
        super().__init__(element, cause, index)
        self.element = element
        self.cause = cause
        self.index = index

    def __str__(self) -> str:
        text = repr(self.element)
        return f"{type(self.cause).__name__}: {self.cause} (element {text if len(text) <= 200 else text[:197] + '...'})"

    def at(self, elements: Sequence[object]) -> KernelError:
        """The same failure reported on `elements[index]` (e.g. the pair around a value)."""
        return KernelError(elements[self.index], self.cause, self.index)


# ------------------------------------------------------------------ copy-on-write
_ATOMS: Final[frozenset[type]] = frozenset({int, float, complex, str, bytes, bool, type(None), frozenset, range})


def immutable(v: object) -> bool:
    """Whether `v` can be shared without copying (primitives, and tuples of them)."""
    t = type(v)
    if t in _ATOMS:
        return True
    if t is tuple and isinstance(v, tuple):  # exactly a tuple: a subclass may hold mutable state
        return all(immutable(x) for x in v)
    return False


def private(v: A) -> A:
    """`v` itself when immutable, else a deep copy nobody else holds."""
    return v if immutable(v) else copy.deepcopy(v)


# ------------------------------------------------------------------ element-wise
def map_values(f: Callable[[V], U], xs: Sequence[V]) -> list[U]:
    """map(f): f(x) for each x, in order."""
    out: list[U] = []
    append = out.append
    try:
        for x in xs:
            append(f(x))
    except Exception as e:
        i = len(out)
        raise KernelError(xs[i], e, i) from e
    return out


def filter_mask(f: Callable[[V], object], xs: Sequence[V]) -> list[bool]:
    """filter(f): whether each x is kept (f(x) is truthy, as in Python's `if`)."""
    mask: list[bool] = []
    append = mask.append
    try:
        for x in xs:
            append(bool(f(x)))
    except Exception as e:
        i = len(mask)
        raise KernelError(xs[i], e, i) from e
    return mask


def filter_values(f: Callable[[V], object], xs: Sequence[V]) -> list[V]:
    """filter(f): the elements for which f is truthy, in order."""
    return list(compress(xs, filter_mask(f, xs)))


def filter_map_results(f: Callable[[V], U | None], xs: Sequence[V]) -> tuple[list[bool], list[U | None]]:
    """filter_map(f): (kept, f(x) for each x); a result is kept unless it is None."""
    ys = map_values(f, xs)
    return [y is not None for y in ys], ys


def filter_map_values(f: Callable[[V], U | None], xs: Sequence[V]) -> list[U]:
    """filter_map(f): the results of f that are not None, in order."""
    return [y for y in map_values(f, xs) if y is not None]


def flat_map_groups(f: Callable[[V], Iterable[U]], xs: Sequence[V]) -> list[list[U]]:
    """flat_map(f): each element's outputs, f(x) iterated to the end (in its own order)."""
    out: list[list[U]] = []
    append = out.append
    try:
        for x in xs:
            append(list(f(x)))
    except Exception as e:
        i = len(out)
        raise KernelError(xs[i], e, i) from e
    return out


def flat_map_values(f: Callable[[V], Iterable[U]], xs: Sequence[V]) -> list[U]:
    """flat_map(f): every element of every f(x), in order."""
    return list(chain.from_iterable(flat_map_groups(f, xs)))


def inspect_values(f: Callable[[V], object], xs: Sequence[V]) -> Sequence[V]:
    """inspect(f): call f on each element for its effect; the elements pass unchanged."""
    if type(xs) is not list:
        xs = list(xs)
    it = iter(xs)
    try:
        for x in it:
            f(x)
    except Exception as e:
        i = len(xs) - length_hint(it) - 1
        raise KernelError(xs[i], e, i) from e
    return xs


def _values(kvs: Sequence[Pair[K, V]]) -> list[V]:
    return [kv[1] for kv in kvs]


def map_keyed(f: Callable[[V], U], kvs: Sequence[Pair[K, V]]) -> list[Pair[K, U]]:
    """map(f) on (key, value) pairs: f applied to each value, keys kept."""
    try:
        ys = map_values(f, _values(kvs))
    except KernelError as e:
        raise e.at(kvs) from e.cause
    return [(kv[0], y) for kv, y in zip(kvs, ys)]


def filter_keyed(f: Callable[[V], object], kvs: Sequence[Pair[K, V]]) -> list[Pair[K, V]]:
    """filter(f) on (key, value) pairs: the pairs whose value f keeps."""
    try:
        kept = filter_mask(f, _values(kvs))
    except KernelError as e:
        raise e.at(kvs) from e.cause
    return list(compress(kvs, kept))


def filter_map_keyed(f: Callable[[V], U | None], kvs: Sequence[Pair[K, V]]) -> list[Pair[K, U]]:
    """filter_map(f) on (key, value) pairs: (key, f(value)) where that is not None."""
    try:
        ys = map_values(f, _values(kvs))
    except KernelError as e:
        raise e.at(kvs) from e.cause
    return [(kv[0], y) for kv, y in zip(kvs, ys) if y is not None]


def flat_map_keyed(f: Callable[[V], Iterable[U]], kvs: Sequence[Pair[K, V]]) -> list[Pair[K, U]]:
    """flat_map(f) on (key, value) pairs: (key, y) for every y of f(value)."""
    try:
        groups = flat_map_groups(f, _values(kvs))
    except KernelError as e:
        raise e.at(kvs) from e.cause
    return [(kv[0], y) for kv, ys in zip(kvs, groups) for y in ys]


def inspect_keyed(f: Callable[[V], object], kvs: Sequence[Pair[K, V]]) -> Sequence[Pair[K, V]]:
    """inspect(f) on (key, value) pairs: f called on each value; the pairs pass unchanged."""
    try:
        inspect_values(f, _values(kvs))
    except KernelError as e:
        raise e.at(kvs) from e.cause
    return kvs


# ------------------------------------------------------------------ folds
def fold_values(f: Callable[[A, V], A], acc: A, has_acc: bool, xs: Sequence[V]) -> tuple[bool, A]:
    """fold / reduce: acc = f(acc, x) for each x in order; returns (has a value, acc).

    A fold starts from its accumulator (`has_acc`); a reduce has none at first
    (`has_acc=False`) and starts from its first element. Neither `acc` nor the elements
    are mutated (copy-on-write, see the module docstring).
    """
    if type(xs) is not list:
        xs = list(xs)
    it = iter(xs)
    if not has_acc:
        if not xs:
            return False, acc
        acc = next(it)  # a reduce starts from its first element
    atoms, owned = _ATOMS, False  # owned: acc is a private copy that f may mutate
    try:
        for x in it:
            if type(acc) in atoms:  # the common case: nothing to protect
                acc = f(acc, x)
            elif owned:
                r = f(acc, x)
                owned = r is acc  # f mutated the private copy in place (and returned it)
                acc = r
            elif immutable(acc):
                acc = f(acc, x)
            else:
                acc = copy.deepcopy(acc)
                r = f(acc, x)
                owned = r is acc
                acc = r
    except Exception as e:
        i = len(xs) - length_hint(it) - 1  # the element being folded (a list iterator knows)
        raise KernelError(xs[i], e, i) from e
    return True, acc


def fold_keyed(
    f: Callable[[A, V], A], accs: Mapping[K, A], init: A, has_init: bool, kvs: Sequence[Pair[K, V]]
) -> dict[K, A]:
    """fold / reduce per key of (key, value) pairs, each key from `accs[key]` when present,
    else from `init` (fold) or from its first value (reduce, `has_init=False`).

    Returns the new accumulators of the keys in `kvs` (in order of first appearance);
    `accs`, `init` and the values are not mutated (copy-on-write, as `fold_values`).
    """
    if type(kvs) is not list:
        kvs = list(kvs)
    it = iter(kvs)
    out: dict[K, A] = {}
    atoms, owned = _ATOMS, set()  # owned: keys whose accumulator in `out` is a private copy
    try:
        for kv in it:
            k = kv[0]
            if k in out:
                acc = out[k]
            elif k in accs:
                acc = accs[k]
            elif has_init:
                acc = init
            else:
                out[k] = kv[1]  # a reduce starts from the key's first value
                continue
            if type(acc) in atoms:
                out[k] = f(acc, kv[1])
            elif k in owned:
                r = out[k] = f(acc, kv[1])
                if r is not acc:
                    owned.discard(k)
            elif immutable(acc):
                out[k] = f(acc, kv[1])
            else:
                acc = copy.deepcopy(acc)
                r = out[k] = f(acc, kv[1])
                if r is acc:
                    owned.add(k)
    except Exception as e:
        i = len(kvs) - length_hint(it) - 1
        raise KernelError(kvs[i], e, i) from e
    return out


def count_values(n: int, xs: Sized) -> int:
    """count(): n plus the number of elements (fold(n, lambda c, _: c + 1))."""
    return n + len(xs)


def count_keyed(counts: Mapping[K, int], kvs: Sequence[Pair[K, V]]) -> dict[K, int]:
    """count() per key: the new counts of the keys in `kvs`, from `counts` (else 0)."""
    out: dict[K, int] = {}
    for kv in kvs:
        k = kv[0]
        out[k] = (out[k] if k in out else counts.get(k, 0)) + 1
    return out


def first_values(has: bool, acc: V, xs: Sequence[V]) -> tuple[bool, V]:
    """first(): the value kept once there is one, else the first element (reduce(lambda a, _: a))."""
    if has or not xs:
        return has, acc
    return True, xs[0]


def first_keyed(firsts: Mapping[K, V], kvs: Sequence[Pair[K, V]]) -> dict[K, V]:
    """first() per key: the first value of each key not in `firsts` yet."""
    out: dict[K, V] = {}
    for k, v in kvs:
        if k not in firsts and k not in out:
            out[k] = v
    return out


def last_values(has: bool, acc: V, xs: Sequence[V]) -> tuple[bool, V]:
    """last(): the last element, if any, else the value so far (reduce(lambda _, x: x))."""
    return (True, xs[-1]) if xs else (has, acc)


def last_keyed(kvs: Sequence[Pair[K, V]]) -> dict[K, V]:
    """last() per key: the last value of each key in `kvs`."""
    return dict(kvs)


# ------------------------------------------------------------------ order, identity, shape
def enumerate_values(start: int, xs: Sequence[V]) -> list[tuple[int, V]]:
    """enumerate(): (start + i, x); the next batch starts at start + len(xs)."""
    return list(enumerate(xs, start))


def enumerate_keyed(next_index: dict[K, int], kvs: Sequence[Pair[K, V]]) -> list[Pair[K, tuple[int, V]]]:
    """enumerate() per key: (key, (index within the key, value)); `next_index` (key -> the
    index of the key's next element) is advanced in place."""
    out: list[Pair[K, tuple[int, V]]] = []
    for k, v in kvs:
        i = next_index.get(k, 0)
        next_index[k] = i + 1
        out.append((k, (i, v)))
    return out


class Seen:
    """The elements seen so far: a set that also holds unhashable elements (by equality)."""

    __slots__ = ("hashed", "other")

    def __init__(self) -> None:
        self.hashed: set[Hashable] = set()
        self.other: list[object] = []

    def add(self, x: object) -> bool:
        """Record x; True when it was not seen before."""
        try:
            if x in self.hashed:
                return False
            self.hashed.add(x)
            return True
        except TypeError:  # unhashable: compared by equality instead
            if x in self.other:
                return False
            self.other.append(x)
            return True


def unique_values(seen: Seen, xs: Iterable[V]) -> list[V]:
    """unique(): the elements not in `seen` (nor earlier in xs), in order; `seen` grows."""
    return [x for x in xs if seen.add(x)]


def sort_order(key: Callable[[V], Any] | None, xs: Sequence[V]) -> list[int]:
    """sort(key): the stable ordering of xs by key(x) (by x itself without a key), as the
    indices of xs in sorted order; keys are compared with `<`, as `sorted` does.

    A failing key function reports its element; keys that cannot be compared report the
    whole batch (index -1).
    """
    keys: Sequence[Any] = xs if key is None else map_values(key, xs)
    try:
        return sorted(range(len(keys)), key=keys.__getitem__)
    except Exception as e:  # e.g. TypeError: '<' not supported between str and int
        raise KernelError(list(xs), e) from e


def sort_values(key: Callable[[V], Any] | None, xs: Sequence[V]) -> list[V]:
    """sort(key): xs sorted by key, stably (see `sort_order`)."""
    return [xs[i] for i in sort_order(key, xs)]


def split_pairs(xs: Sequence[object]) -> list[tuple[Any, Any]]:
    """into_keyed() / the key-value split of joins: each element must be a 2-tuple
    (tuple subclasses such as NamedTuples too); returns plain (key, value) tuples."""
    out: list[tuple[Any, Any]] = []
    for i, x in enumerate(xs):
        if type(x) is tuple and len(x) == 2:
            out.append(x)
        elif isinstance(x, tuple) and len(x) == 2:
            out.append((x[0], x[1]))
        else:
            what = f"a tuple of length {len(x)}" if isinstance(x, tuple) else f"a {type(x).__name__}"
            cause = TypeError(f"expected a (key, value) tuple, got {what}")
            raise KernelError(x, cause, i) from cause
    return out


#: operator name -> the kernel defining it over a sequence of values (the keyed and
#: singleton forms, and the index-returning forms Spark uses, are defined from these)
KERNELS: Final[Mapping[str, Callable[..., Any]]] = {
    "map": map_values,
    "filter": filter_values,
    "filter_map": filter_map_values,
    "flat_map": flat_map_values,
    "inspect": inspect_values,
    "fold": fold_values,
    "reduce": fold_values,
    "count": count_values,
    "first": first_values,
    "last": last_values,
    "enumerate": enumerate_values,
    "unique": unique_values,
    "sort": sort_values,
    "into_keyed": split_pairs,
}

#: element-wise operator name -> its kernel over (key, value) pairs (keyed streams)
KEYED_KERNELS: Final[Mapping[str, Callable[..., Any]]] = {
    "map": map_keyed,
    "filter": filter_keyed,
    "filter_map": filter_map_keyed,
    "flat_map": flat_map_keyed,
    "inspect": inspect_keyed,
}
