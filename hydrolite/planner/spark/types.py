"""Element types on Spark: `HType` maps a Python element type to a Spark / Arrow type.

Every collection on Spark is a DataFrame whose value column `v` (and key column `k` for
keyed collections) holds elements encoded by an `HType`:

| Python                         | Spark                      | decoded back to        |
| ------------------------------ | -------------------------- | ---------------------- |
| int, float, str, bool, bytes   | long, double, string, ...  | the same               |
| None (`type(None)`)            | boolean, always null       | None                   |
| tuple[A, B]                    | struct<_1: A, _2: B>       | tuple                  |
| dataclass / NamedTuple         | struct<field: ...>         | the class              |
| list[A], set[A], tuple[A, ...] | array<A>                   | list / set / tuple     |
| dict[K, V]                     | map<K, V>                  | dict                   |
| A \\| None                      | A (nullable)               | value or None          |
| anything else                  | binary (pickled)           | the object             |

Types are declared at sources (`Meta.elem` / `Meta.key`) and derived through operators:
translated lambdas carry their result type, Python fallbacks use the function's return
annotation, then a trial call on a sample value, then the pickled form. An annotation
hydrolite cannot store as one Spark type (`-> object`, a union such as `-> int | float`)
keeps every result pickled, exactly as the function returned it.

A column holds one type, so a value of another numeric kind — a `bool` where the column is
`int`, an `int` where it is `float` — would come back converted (`True` as `1`, `3` as
`3.0`) while the simulator keeps it as it is. Where values come from a user's function
and the column's type is a guess from a trial call (`declared_result` is None; `pyfn`
encodes those results under `exact_numbers()`), such a value is refused with the
function's error instead of being converted silently. A declared type (`-> float`) is the
user's: an `int` result is stored as that `float`, and the simulator holds it so too
(`ir.nodes.Map.run_fn`).

>>> with exact_numbers():
...     Prim(float).encode(3)
Traceback (most recent call last):
...
TypeError: 3 is an int, where the column holds float: Spark would return it as 3.0
"""

from __future__ import annotations

import dataclasses
import datetime
import pickle
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from ...port_values import is_namedtuple

PRIMS: dict[type, tuple[T.DataType, Any, Any]] = {
    int: (T.LongType(), pa.int64(), 0),
    float: (T.DoubleType(), pa.float64(), 0.0),
    str: (T.StringType(), pa.string(), ""),
    bool: (T.BooleanType(), pa.bool_(), False),
    bytes: (T.BinaryType(), pa.binary(), b""),
    datetime.datetime: (T.TimestampType(), pa.timestamp("us", tz="UTC"), datetime.datetime(1970, 1, 1)),
    datetime.date: (T.DateType(), pa.date32(), datetime.date(1970, 1, 1)),
}


#: within `exact_numbers()`: a value of another numeric kind than its column's is refused
_EXACT: ContextVar[bool] = ContextVar("hydrolite_exact_numbers", default=False)


@contextmanager
def exact_numbers() -> Iterator[None]:
    """Encode values of a user's function: a `bool` in an `int` column, or an `int` / `bool`
    in a `float` one, raises TypeError instead of being converted (the module's docstring)."""
    token = _EXACT.set(True)
    try:
        yield
    finally:
        _EXACT.reset(token)


class HType(ABC):
    """How elements of one Python type are stored in a Spark column."""

    @abstractmethod
    def spark(self) -> T.DataType: ...

    @abstractmethod
    def arrow(self) -> Any: ...

    @abstractmethod
    def decode(self, x: Any) -> Any:
        """A Python value from a collected Row field or an Arrow `to_pylist()` item."""

    @abstractmethod
    def encode(self, v: Any) -> Any:
        """A value Arrow and `createDataFrame` accept for this type (structs as dicts)."""

    @abstractmethod
    def sample(self) -> Any:
        """Some value of this type (for inferring a function's result type)."""

    @abstractmethod
    def describe(self) -> str: ...

    def __repr__(self) -> str:
        return self.describe()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HType) and self.describe() == other.describe()

    def __hash__(self) -> int:
        return hash(self.describe())


class Prim(HType):
    """int, float, str, bool, bytes, datetime, date."""

    def __init__(self, py: type) -> None:
        self.py = py
        self._spark, self._arrow, self._sample = PRIMS[py]

    def spark(self) -> T.DataType:
        return self._spark

    def arrow(self) -> Any:
        return self._arrow

    def decode(self, x: Any) -> Any:
        return x

    def encode(self, v: Any) -> Any:
        if v is not None and not isinstance(v, self.py) and not (self.py is float and isinstance(v, int)):
            raise TypeError(f"expected {self.py.__name__}, got {type(v).__name__} {v!r}")
        if _EXACT.get() and (isinstance(v, bool) and self.py is not bool or self.py is float and isinstance(v, int)):
            kind = "a bool" if isinstance(v, bool) else "an int"
            raise TypeError(
                f"{v!r} is {kind}, where the column holds {self.py.__name__}: Spark would return it as {self.py(v)!r}"
            )
        if self.py is int and isinstance(v, bool):
            return int(v)
        return v

    def sample(self) -> Any:
        return self._sample

    def describe(self) -> str:
        return self.py.__name__


class NoneT(HType):
    """The unit type `None` (e.g. the values of the counter's keyed sources).

    Stored as an always-null boolean rather than Spark's `void`, which Parquet, ORC and
    CSV cannot write.
    """

    def spark(self) -> T.DataType:
        return T.BooleanType()

    def arrow(self) -> Any:
        return pa.bool_()

    def decode(self, x: Any) -> Any:
        return None

    def encode(self, v: Any) -> Any:
        return None

    def sample(self) -> Any:
        return None

    def describe(self) -> str:
        return "None"


class StructT(HType):
    """Common code of tuples and records: a fixed list of named fields."""

    names: tuple[str, ...]
    items: tuple[HType, ...]

    def spark(self) -> T.DataType:
        return T.StructType([T.StructField(n, t.spark(), True) for n, t in zip(self.names, self.items)])

    def arrow(self) -> Any:
        return pa.struct([pa.field(n, t.arrow()) for n, t in zip(self.names, self.items)])

    def field(self, name: str) -> HType:
        return self.items[self.names.index(name)]

    def _values(self, x: Any) -> list[Any]:
        if isinstance(x, dict):
            return [x.get(n) for n in self.names]
        return list(x)

    def encode(self, v: Any) -> Any:
        if v is None:
            return None
        vals = self._fields_of(v)
        if len(vals) != len(self.items):
            raise TypeError(f"expected {self.describe()}, got {v!r}")
        return {n: t.encode(x) for n, t, x in zip(self.names, self.items, vals)}

    @abstractmethod
    def _fields_of(self, v: Any) -> list[Any]: ...


class TupleT(StructT):
    """tuple[A, B, ...] as struct<_1, _2, ...>."""

    def __init__(self, items: tuple[HType, ...]) -> None:
        self.items = items
        self.names = tuple(f"_{i + 1}" for i in range(len(items)))

    def decode(self, x: Any) -> Any:
        if x is None:
            return None
        return tuple(t.decode(v) for t, v in zip(self.items, self._values(x)))

    def _fields_of(self, v: Any) -> list[Any]:
        if not isinstance(v, tuple):
            raise TypeError(f"expected a tuple {self.describe()}, got {type(v).__name__} {v!r}")
        return list(v)

    def sample(self) -> Any:
        return tuple(t.sample() for t in self.items)

    def describe(self) -> str:
        return "tuple[" + ", ".join(t.describe() for t in self.items) + "]"


class RecordT(StructT):
    """A dataclass or NamedTuple as a struct of its fields."""

    def __init__(self, cls: type | None, names: tuple[str, ...], items: tuple[HType, ...]) -> None:
        self.cls = cls
        self.names = names
        self.items = items

    def decode(self, x: Any) -> Any:
        if x is None:
            return None
        vals = [t.decode(v) for t, v in zip(self.items, self._values(x))]
        if self.cls is None:
            return dict(zip(self.names, vals))
        if is_namedtuple(self.cls):
            return self.cls(*vals)
        return self.cls(**dict(zip(self.names, vals)))

    def _fields_of(self, v: Any) -> list[Any]:
        if isinstance(v, dict):
            return [v.get(n) for n in self.names]
        return [getattr(v, n) for n in self.names]

    def sample(self) -> Any:
        return self.decode([t.encode(t.sample()) for t in self.items])

    def describe(self) -> str:
        name = self.cls.__qualname__ if self.cls is not None else "struct"
        return name + "{" + ", ".join(f"{n}: {t.describe()}" for n, t in zip(self.names, self.items)) + "}"


class ListT(HType):
    """list[A], set[A], frozenset[A] and tuple[A, ...] as array<A>."""

    def __init__(self, item: HType, container: type = list) -> None:
        self.item = item
        self.container = container

    def spark(self) -> T.DataType:
        return T.ArrayType(self.item.spark(), True)

    def arrow(self) -> Any:
        return pa.list_(self.item.arrow())

    def decode(self, x: Any) -> Any:
        if x is None:
            return None
        return self.container(self.item.decode(v) for v in x)

    def encode(self, v: Any) -> Any:
        if v is None:
            return None
        items = sorted(v, key=repr) if isinstance(v, (set, frozenset)) else v
        return [self.item.encode(x) for x in items]

    def sample(self) -> Any:
        return self.container([self.item.sample()])

    def describe(self) -> str:
        if self.container is tuple:
            return f"tuple[{self.item.describe()}, ...]"
        return f"{self.container.__name__}[{self.item.describe()}]"


class DictT(HType):
    """dict[K, V] as map<K, V>."""

    def __init__(self, key: HType, value: HType) -> None:
        self.key = key
        self.value = value

    def spark(self) -> T.DataType:
        return T.MapType(self.key.spark(), self.value.spark(), True)

    def arrow(self) -> Any:
        return pa.map_(self.key.arrow(), self.value.arrow())

    def decode(self, x: Any) -> Any:
        if x is None:
            return None
        pairs = x.items() if isinstance(x, dict) else x
        return {self.key.decode(k): self.value.decode(v) for k, v in pairs}

    def encode(self, v: Any) -> Any:
        if v is None:
            return None
        return [(self.key.encode(k), self.value.encode(x)) for k, x in v.items()]

    def sample(self) -> Any:
        return {self.key.sample(): self.value.sample()}

    def describe(self) -> str:
        return f"dict[{self.key.describe()}, {self.value.describe()}]"


class OptT(HType):
    """A | None: the inner type, nullable."""

    def __init__(self, inner: HType) -> None:
        self.inner = inner

    def spark(self) -> T.DataType:
        return self.inner.spark()

    def arrow(self) -> Any:
        return self.inner.arrow()

    def decode(self, x: Any) -> Any:
        return None if x is None else self.inner.decode(x)

    def encode(self, v: Any) -> Any:
        return None if v is None else self.inner.encode(v)

    def sample(self) -> Any:
        return self.inner.sample()

    def describe(self) -> str:
        return f"{self.inner.describe()} | None"


class OpaqueT(HType):
    """Any Python object, pickled into a binary column (only Python code can look inside)."""

    def spark(self) -> T.DataType:
        return T.BinaryType()

    def arrow(self) -> Any:
        return pa.binary()

    def decode(self, x: Any) -> Any:
        return None if x is None else pickle.loads(x)

    def encode(self, v: Any) -> Any:
        return pickle.dumps(v, protocol=5)

    def sample(self) -> Any:
        return None

    def describe(self) -> str:
        return "object"


OPAQUE = OpaqueT()
NONE = NoneT()


def has_opaque(t: HType | None) -> bool:
    """Whether values of `t` hold pickled parts (Spark compares those by their bytes)."""
    if isinstance(t, OpaqueT):
        return True
    if isinstance(t, StructT):
        return any(has_opaque(i) for i in t.items)
    if isinstance(t, ListT):
        return has_opaque(t.item)
    if isinstance(t, DictT):
        return has_opaque(t.key) or has_opaque(t.value)
    return isinstance(t, OptT) and has_opaque(t.inner)


def strip_optional(t: HType) -> HType:
    return t.inner if isinstance(t, OptT) else t


def from_python(t: Any) -> HType | None:
    """The HType of a Python type annotation, or None when it cannot be stored natively."""
    if t is None:
        return None
    if t is type(None):
        return NONE
    if isinstance(t, type) and t in PRIMS:
        return Prim(t)
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):
            inner = from_python(rest[0])
            return OptT(inner) if inner is not None else None
        return None
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = from_python(args[0])
            return ListT(item, tuple) if item is not None else None
        parts = [from_python(a) for a in args]
        if not parts or any(p is None for p in parts):
            return None
        return TupleT(tuple(p for p in parts if p is not None))
    if origin in (list, set, frozenset) and len(args) == 1:
        item = from_python(args[0])
        return ListT(item, origin) if item is not None else None
    if origin is dict and len(args) == 2:
        k, v = from_python(args[0]), from_python(args[1])
        return DictT(k, v) if k is not None and v is not None else None
    if isinstance(t, type) and (dataclasses.is_dataclass(t) or is_namedtuple(t)):
        return _record(t)
    return None


def _tuple_fields(cls: type) -> tuple[str, ...]:
    """A NamedTuple's field names (`_fields`, which `is_namedtuple` checked is there)."""
    fields: tuple[str, ...] = getattr(cls, "_fields", ())
    return fields


def _record(cls: type) -> HType | None:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable forward references: store it pickled
        return None
    names = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else _tuple_fields(cls)
    items = [from_python(hints.get(n)) for n in names]
    if any(i is None for i in items):
        return None
    return RecordT(cls, names, tuple(i for i in items if i is not None))


def fold_type(init: Any, declared: Any) -> HType:
    """A fold's accumulator type: the `declared` one (`acc_type=`, else `type(init)`) when it
    names a type (a bare `tuple` does not), else the type of `init`'s value, else pickled.
    The declared type comes first: `init` may be narrower than the values the fold makes
    (`(0, ())` growing into `(3, (1, 2))`); `object` or several types (`int | float`) keep
    each accumulator pickled, exactly as the function made it.

        >>> fold_type((0, ()), tuple[int, tuple[int, ...]]).describe(), fold_type((0, 1), tuple).describe()
        ('tuple[int, tuple[int, ...]]', 'tuple[int, int]')
    """
    if declared is object or _several_types(declared):  # `acc_type=int | float`: each kept as it is
        return OPAQUE
    return from_python(declared) or of_value(init) or OPAQUE


def of_value(v: Any) -> HType | None:
    """The HType of a concrete value (e.g. a fold's `init`), or None when ambiguous."""
    if v is None:
        return NONE
    if type(v) in PRIMS:
        return Prim(type(v))
    if dataclasses.is_dataclass(v) or (isinstance(v, tuple) and hasattr(v, "_fields")):
        return from_python(type(v))
    if isinstance(v, tuple):
        if not v:  # (a fold's `()` grows: its element type is unknown, and Parquet has no empty struct)
            return None
        parts = [of_value(x) for x in v]
        if any(p is None or isinstance(p, NoneT) for p in parts):
            return None
        return TupleT(tuple(p for p in parts if p is not None))
    if isinstance(v, (list, set, frozenset)) and v:
        items = {of_value(x) for x in v}
        if len(items) == 1 and None not in items:
            item = items.pop()
            assert item is not None
            return ListT(item, type(v))
    if isinstance(v, dict) and v:
        ks = {of_value(x) for x in v}
        vs = {of_value(x) for x in v.values()}
        if len(ks) == 1 and len(vs) == 1 and None not in ks and None not in vs:
            k, x = ks.pop(), vs.pop()
            assert k is not None and x is not None
            return DictT(k, x)
    return None


def from_spark(dt: T.DataType) -> HType:
    """An HType for a column whose Python type is not known (structs decode to tuples or dicts)."""
    for py, (sp, _, _) in PRIMS.items():
        if type(dt) is type(sp):
            return Prim(py)
    if isinstance(dt, (T.IntegerType, T.ShortType, T.ByteType)):
        return Prim(int)
    if isinstance(dt, T.FloatType):
        return Prim(float)
    if isinstance(dt, T.NullType):
        return NONE
    if isinstance(dt, T.StructType):
        names = tuple(f.name for f in dt.fields)
        items = tuple(from_spark(f.dataType) for f in dt.fields)
        if names == tuple(f"_{i + 1}" for i in range(len(names))):
            return TupleT(items)
        return RecordT(None, names, items)
    if isinstance(dt, T.ArrayType):
        return ListT(from_spark(dt.elementType))
    if isinstance(dt, T.MapType):
        return DictT(from_spark(dt.keyType), from_spark(dt.valueType))
    return OPAQUE


def infer_result(f: Callable[..., Any], args: list[HType], declared: Any = None) -> HType:
    """The result type of a Python function: declared/annotated type, a trial call, or pickled
    (also for `-> object` and unions of several types: results that may differ in type)."""
    t = declared_result(f, declared)
    if t is not None:
        return t
    try:
        out = f(*[a.sample() for a in args])
    except Exception:  # the sample was not a meaningful input: keep results as Python objects
        return OPAQUE
    t = of_value(out)
    return t if t is not None and not isinstance(t, NoneT) else OPAQUE


def declared_result(f: Callable[..., Any], declared: Any = None) -> HType | None:
    """The result type `declared` or `f`'s return annotation gives (pickled for `-> object`
    and unions of several types), or None: `infer_result` then types it by a trial call, a
    guess from one sample, so its results are encoded exactly (`exact_numbers`)."""
    t = from_python(declared)
    if t is not None:
        return t
    try:
        ret = typing.get_type_hints(f).get("return")
    except Exception:  # annotations that do not resolve: typed by a trial call
        return None
    if ret is None or _says_nothing(ret):  # (`-> Any`: typed by a trial call, exactly)
        return None
    # an annotation Spark has no column type for (`object`, `int | bool`, `tuple[int | float, int]`,
    # a plain class): the results are kept pickled, each as it is (as `port_values.holder` keeps them)
    return from_python(ret) or OPAQUE


def _says_nothing(t: Any) -> bool:
    """Whether annotation `t` leaves a type open (`Any`, a type variable, anywhere in it)."""
    if t is Any or isinstance(t, typing.TypeVar):
        return True
    return any(_says_nothing(a) for a in typing.get_args(t) if a is not Ellipsis)


def _several_types(t: Any) -> bool:
    """Whether annotation `t` is a union of two or more types besides None (`int | float`)."""
    if typing.get_origin(t) not in (typing.Union, types.UnionType):
        return False
    return len([a for a in typing.get_args(t) if a is not type(None)]) > 1


def void_free(dt: T.DataType) -> T.DataType:
    """`dt` with every void (None) field turned into a nullable string (file formats reject void)."""
    if isinstance(dt, T.NullType):
        return T.StringType()
    if isinstance(dt, T.StructType):
        return T.StructType([T.StructField(f.name, void_free(f.dataType), True) for f in dt.fields])
    if isinstance(dt, T.ArrayType):
        return T.ArrayType(void_free(dt.elementType), True)
    if isinstance(dt, T.MapType):
        return T.MapType(void_free(dt.keyType), void_free(dt.valueType), True)
    return dt
