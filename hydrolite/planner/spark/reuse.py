"""Column expressions built in one micro-batch, reused in the next.

`foreachBatch` evaluates the tick again for every micro-batch, over a new DataFrame, and
builds the same Column expressions each time: a translated lambda, the struct of
`entries()`, the output's external layout. A Column is an unresolved expression over
column names, so one built for an earlier batch is just as valid over this batch's
DataFrame; building it again costs Py4J round trips (PySpark 4 makes several per Column
operation, each 0.2-0.7 ms here), tens of ms per batch in all, which Spark's own
`foreachBatch` job does not spend.

`derived(tag, inputs, build)` returns what `build()` returned the last time it was called
with the same `tag` and the *same Column objects* as `inputs`. The frames the tick starts
from hold the same Column objects batch after batch (the native aggregations' columns are
built once: `native_state._columns`), and each reuse passes identical objects on, so a
chain of pending steps is built once per query. A frame that builds its columns anew
(`F.col(name)` over a plain DataFrame) simply finds nothing and builds, as before.

Identity is safe: an entry holds its input Columns, so their ids cannot be taken by other
objects while the entry lives, and the same objects mean the same expressions (Columns
are immutable). The table keeps the latest `LIMIT` entries, whatever the Spark session.

`struct_of` / `field_of` keep the composed expressions small the same way: a field of a
struct this module built is that field's own Column, not `struct(...)['_1']`. Chains of
tuple-building lambdas (`entries()`, then `lambda e: (e[0], e[1][1])`, then the output's
columns) otherwise nest structs in structs, which Spark must analyse in every batch's
`select` (measured: 20-115 ms per batch on the running count) before its optimizer takes
them apart again.

    >>> from hydrolite.planner.spark.reuse import derived
    >>> a, b = object(), object()  # stand-ins for Columns: only their identity is used
    >>> derived(("double",), [a], lambda: "built once")
    'built once'
    >>> derived(("double",), [a], lambda: "built again")
    'built once'
    >>> derived(("double",), [b], lambda: "other input")
    'other input'
"""

from __future__ import annotations

import dis
import functools
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F

_T = TypeVar("_T")

LIMIT = 1024
_entries: OrderedDict[tuple[Hashable, ...], tuple[Sequence[object], Any]] = OrderedDict()
_lock = threading.Lock()  # sinks of one batch are written from several threads (outputs.py)
_structs: OrderedDict[int, tuple[Column, dict[str, Column]]] = OrderedDict()  # struct_of's, by id


def derived(tag: Hashable, inputs: Sequence[object], build: Callable[[], _T]) -> _T:
    """`build()`, reused while `inputs` are the same objects and `tag` is equal.

    `tag` must name everything else `build` reads (the operator, its function, the types);
    an unhashable tag builds every time."""
    try:
        key = (tag, *(id(c) for c in inputs))
        hash(key)
    except TypeError:  # an unhashable part: no reuse, same result
        return build()
    with _lock:
        hit = _entries.get(key)
        if hit is not None:
            _entries.move_to_end(key)
            value: _T = hit[1]
            return value
    value = build()
    with _lock:
        _entries[key] = (tuple(inputs), value)
        while len(_entries) > LIMIT:
            _entries.popitem(last=False)
    return value


_PLAIN = (int, float, complex, str, bytes, bool, type(None))
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"}
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _plain(value: object) -> bool:
    """Data whose repr says all of it: numbers, strings, None, and containers of those."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_plain(x) for x in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(x) for k, x in value.items())
    return False


def _descriptor(value: object) -> bool:
    return hasattr(type(value), "__get__")


@functools.lru_cache(maxsize=LIMIT)
def _names(code: types.CodeType) -> tuple[tuple[str, ...], frozenset[str]]:
    """The free names `code` loads (sorted) and the attribute names it may read, nested code
    included: fixed for the code's life, so read once (`free_values` runs every batch)."""
    loaded: set[str] = set()
    attrs: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        attrs.update(c.co_names)
        loaded.update(str(i.argval) for i in dis.get_instructions(c) if i.opname in _LOADS)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return tuple(sorted(loaded)), frozenset(attrs)


def free_values(f: Callable[..., Any]) -> tuple[Hashable, ...] | None:
    """What `f`'s free names (globals and closure cells it loads, in nested code too) hold
    now, as a hashable key: a translation embeds those values as literals, so it may be
    reused only while they are unchanged. Plain data (numbers, strings, containers of them)
    is keyed by type and repr (a list that grew has a new repr); functions by themselves;
    a module or class by itself and the plain attributes `f` may read from it
    (`config.LIMIT`). None — translate every time — when a value is anything else (an
    object whose attributes may change unseen) or `f` has no code.

    >>> limit = 3
    >>> free_values(lambda v: v > limit)
    (('limit', <class 'int'>, '3'),)
    >>> free_values(lambda v: v.limit)  # an attribute, not the global: nothing to watch
    ()
    """
    code = getattr(f, "__code__", None)
    if not isinstance(code, types.CodeType):
        return None
    loaded, attrs = _names(code)
    cells = dict(zip(code.co_freevars, getattr(f, "__closure__", None) or ()))
    glb: dict[str, Any] = getattr(f, "__globals__", {})
    out: list[Hashable] = []
    for name in loaded:
        if name in cells:
            try:
                value = cells[name].cell_contents
            except ValueError:  # a cell not yet assigned: translation fails on it anyway
                return None
        elif name in glb:
            value = glb[name]
        else:  # a builtin: the same for the function's whole life
            continue
        if _plain(value):
            out.append((name, type(value), repr(value)))
        elif isinstance(value, _FUNCTIONS):
            out.append((name, value))
        elif isinstance(value, (types.ModuleType, type)):
            read = [(a, getattr(value, a)) for a in sorted(attrs) if hasattr(value, a)]
            # functions, modules and descriptors (a NamedTuple's fields) translate to no literal
            data = [(a, v) for a, v in read if not (callable(v) or isinstance(v, types.ModuleType) or _descriptor(v))]
            if not all(_plain(v) for _, v in data):
                return None
            out.append((name, value, tuple((a, type(v), repr(v)) for a, v in data)))
        else:
            return None
    return tuple(out)


def struct_of(fields: Sequence[tuple[str, Column]]) -> Column:
    """`F.struct` of the named Columns, remembered so that `field_of` gives a field back as
    its own Column. A struct built here is never null, so its field is exactly the Column
    it was built from."""
    col = F.struct(*[c.alias(name) for name, c in fields])
    with _lock:
        _structs[id(col)] = (col, dict(fields))
        while len(_structs) > LIMIT:
            _structs.popitem(last=False)
    return col


def field_of(col: Column, name: str) -> Column:
    """Field `name` of the struct `col`: the Column it was built from when `struct_of`
    built `col`, else `col.getField(name)`."""
    with _lock:
        built = _structs.get(id(col))
    if built is not None and built[0] is col and name in built[1]:
        return built[1][name]
    return col.getField(name)
