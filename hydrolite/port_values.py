"""The value a source port holds for an element sent to it: its declared numeric kinds.

Python's typing lets a caller pass an `int` where a `float` is declared and a `bool` where an
`int` is (PEP 484's numeric tower), and mypy accepts both. On Spark a typed column stores such
a value as its declared type: `3` sent to a `float` port arrives as `3.0`, `True` sent to an
`int` port as `1`. Both backends must hold the same value, or a later `repr()`, `str()`,
`isinstance()` or JSON sink answers differently on each (`1 == 1.0 == True`, so an equality
check never shows it). So the declared type decides, in both: the simulator converts each
element at the port as Spark's column does (`World.send`), and the Spark planner's encoding
(`planner/spark/types.py`) stores it so.

A value kept whole as Python (pickled on Spark: `Any`, `object`, a union of several types,
a class that is no dataclass or NamedTuple, or any structure with such a part) is held
exactly as sent, in both: conversion happens only where Spark has a typed column.

    >>> holder(float)(3), holder(tuple[str, float])(("a", 1)), holder(list[int])([True, 2])
    (3.0, ('a', 1.0), [1, 2])
    >>> holder(tuple[float, object]) is None  # pickled whole on Spark: kept as sent
    True
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from collections.abc import Callable
from typing import Any

Convert = Callable[[Any], Any]

#: the types Spark stores in a column of their own (`planner/spark/types.PRIMS`)
PRIMITIVES: tuple[type, ...] = (int, float, str, bool, bytes, datetime.datetime, datetime.date)


class _Kept:
    """Marks a type stored whole as Python (pickled): its values are held as sent."""


_KEPT = _Kept()


def holder(t: Any, strict: bool = False) -> Convert | None:
    """The conversion a port declared `t` applies to each element, or None when it holds
    every element as sent (nothing to convert, or a type Spark keeps pickled). With `strict`
    (a function's declared result), a value Spark's column of `t` cannot store — `2.5` for
    `int`, `3` for `str` — raises `TypeError` rather than being held as it is: Spark would
    fail on it, so the simulator does too.

    >>> holder(int, strict=True)(2.5)
    Traceback (most recent call last):
    TypeError: 2.5 (a float) does not fit the declared int: Spark stores it in a column of int and fails on it; fix: \
return int(...), or declare the types it returns (e.g. `-> float`, `-> int | float`, `-> object`)
    """
    found = _convert(t, strict)
    return None if isinstance(found, _Kept) else found


def _to_float(x: Any) -> Any:
    return float(x) if isinstance(x, int) else x  # a bool too: True -> 1.0


def _to_int(x: Any) -> Any:
    return int(x) if isinstance(x, bool) else x


def _to_date(x: Any) -> Any:
    return x.date() if isinstance(x, datetime.datetime) else x  # a date column keeps the day


#: what a column of each primitive type stores (`planner/spark/types.Prim.encode`; a bool is an int)
_STORES: dict[type, tuple[type, ...]] = {float: (int, float), datetime.date: (datetime.date,)}
_CONVERTS: dict[type, Convert] = {float: _to_float, int: _to_int, datetime.date: _to_date}


def _primitive(t: type, strict: bool) -> Convert | None:
    convert = _CONVERTS.get(t)
    if not strict:
        return convert
    stores = _STORES.get(t, (t,))

    def check(x: Any) -> Any:
        if x is not None and not isinstance(x, stores):
            raise TypeError(
                f"{x!r} (a {type(x).__name__}) does not fit the declared {t.__name__}: Spark stores it in a column "
                f"of {t.__name__} and fails on it; fix: return {t.__name__}(...), or declare the types it returns "
                "(e.g. `-> float`, `-> int | float`, `-> object`)"
            )
        return x if convert is None else convert(x)

    return check


def _convert(t: Any, strict: bool = False) -> Convert | None | _Kept:
    """None: stored typed, nothing to convert; `_KEPT`: stored pickled, held as sent (`strict`:
    see `holder`)."""
    if t is type(None):
        return None
    if isinstance(t, type) and t in PRIMITIVES:
        return _primitive(t, strict)
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(rest) == len(args):
            return _KEPT
        inner = _convert(rest[0], strict)
        return inner if not callable(inner) else _optional(inner)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _each(_convert(args[0], strict), tuple)
        parts = [_convert(a, strict) for a in args]
        if not parts or any(isinstance(p, _Kept) for p in parts):
            return _KEPT
        return _parts([p for p in parts if not isinstance(p, _Kept)])
    if origin in (list, set, frozenset) and len(args) == 1:
        return _each(_convert(args[0], strict), origin)
    if origin is dict and len(args) == 2:
        return _mapping(_convert(args[0], strict), _convert(args[1], strict))
    if isinstance(t, type) and (dataclasses.is_dataclass(t) or is_namedtuple(t)):
        return _record(t)
    return _KEPT


def _optional(inner: Convert) -> Convert:
    return lambda x: None if x is None else inner(x)


def _each(item: Convert | None | _Kept, make: Callable[[Any], Any]) -> Convert | None | _Kept:
    if item is None or isinstance(item, _Kept):
        return item
    return lambda xs: make(item(x) for x in xs)


def _parts(parts: list[Convert | None]) -> Convert | None:
    if all(p is None for p in parts):
        return None
    return lambda x: tuple(v if p is None else p(v) for p, v in zip(parts, x, strict=True))


def _mapping(key: Convert | None | _Kept, value: Convert | None | _Kept) -> Convert | None | _Kept:
    if isinstance(key, _Kept) or isinstance(value, _Kept):
        return _KEPT
    if key is None and value is None:
        return None
    k: Convert = key if key is not None else (lambda x: x)
    v: Convert = value if value is not None else (lambda x: x)
    return lambda d: {k(a): v(b) for a, b in d.items()}


def is_namedtuple(cls: type) -> bool:
    """Whether class `cls` is a NamedTuple (a tuple with `_fields`)."""
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def _record(cls: type) -> Convert | None | _Kept:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable forward references: Spark stores it pickled
        return _KEPT
    names: tuple[str, ...] = (
        tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else cls._fields  # type: ignore[attr-defined]
    )
    fields = {name: _convert(hints.get(name)) for name in names}
    if any(isinstance(c, _Kept) for c in fields.values()):
        return _KEPT
    changed = {name: c for name, c in fields.items() if callable(c)}
    if not changed:
        return None
    if dataclasses.is_dataclass(cls):
        return lambda x: dataclasses.replace(x, **{name: c(getattr(x, name)) for name, c in changed.items()})
    return lambda x: x._replace(**{name: c(getattr(x, name)) for name, c in changed.items()})


def declared_result(f: Callable[..., Any]) -> Convert | None:
    """The conversion `f`'s return annotation makes of its results (`-> float`: an int result
    is held as a float), or None. A declared type is the user's word on both backends: Spark
    stores the result in a column of that type, and the simulator holds it the same way."""
    try:
        ret = typing.get_type_hints(f).get("return")
    except Exception:  # annotations that do not resolve: nothing declared
        return None
    return None if ret is None else holder(ret, strict=True)


def as_declared(f: Callable[..., Any], convert: Convert | None) -> Callable[..., Any]:
    """`f` with `convert` applied to each result (`f` itself when there is nothing to convert).

    >>> def half(x: int) -> float:
    ...     return x // 2
    >>> as_declared(half, declared_result(half))(5)
    2.0
    """
    if convert is None:
        return f
    return _Declared(f, convert)


@dataclasses.dataclass(frozen=True)
class _Declared:
    """A user function whose results are held as its declared type (picklable: a worker runs it)."""

    f: Callable[..., Any]
    convert: Convert

    def __call__(self, *args: Any) -> Any:
        return self.convert(self.f(*args))
