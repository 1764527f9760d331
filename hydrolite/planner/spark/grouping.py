"""Which keys are the same key on the executors: Python's equality, as bytes.

The simulator keeps keyed state in Python dicts, so `1`, `1.0` and `True` are one key, as
are `0.0` and `-0.0`, a NamedTuple and the plain tuple of its fields, and `{1, 2}` and
`frozenset({2, 1})` as `unique()` elements. Spark's state store groups by bytes: a key
pickled as it came out of a user's function would split one Python key into several
groups (each with a part of the state) and silently answer differently from the simulator.
`group_bytes` is the encoding the executor path groups by (`gk`) and marks elements with:
equal values (by `==`, for the types below) encode to the same bytes, so a group is what a
dict key is to the simulator. It is only an identity: the key a user's function or a sink
sees is the one the rows carry, never the canonical form.

Covered: None, bool / int / float / complex / `Decimal` / `Fraction` (by numeric value:
integral values as ints, `-0.0` as `0.0`), str and bytes (and their subclasses, e.g. a
`StrEnum`; `IntEnum` members as their ints), tuples (NamedTuples too), lists, sets and
frozensets (by their members, in any order), dicts (by their items, in any order), frozen
or plain dataclasses that compare by fields (class and fields), dates, times and
datetimes (an aware datetime by its instant, as Python compares them), other enum members
by class and name. Any other value is grouped by its pickled bytes, as before. NaN is
never equal to itself in Python; here all NaNs are one value (as in Spark SQL's grouping):
a program whose keys are NaN has no answer the simulator can repeat, so none is promised.

>>> group_bytes(1) == group_bytes(1.0) == group_bytes(True), group_bytes(0.0) == group_bytes(-0.0)
(True, True)
>>> group_bytes(frozenset({1, 2})) == group_bytes({2.0, 1}), group_bytes((1, "a")) == group_bytes((1, "b"))
(True, False)
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import math
import pickle
import threading
from decimal import Decimal
from fractions import Fraction
from typing import Any

#: how keys are grouped, as `plan.json` records it (`key_grouping`: `compare_grouping`);
#: "python-eq-1" pickled the canonical form with pickle's memo (`plain_bytes` says why not)
GROUPING = "python-eq-2"

_PLAIN = (str, bytes, int, type(None))
_NAN = ("nan",)


def group_bytes(x: Any) -> bytes:
    """The bytes grouping `x` with every value equal to it (see the module's docstring)."""
    return plain_bytes(canonical(x))


_PICKLERS = threading.local()


def plain_bytes(x: Any) -> bytes:
    """`x` pickled without pickle's memo, so that the bytes depend on the value alone.

    Pickle writes an object met a second time as a reference to the first, by identity: a
    key `("ab", "ab")` whose two strings are one object (a function returned `(w, w)`) and
    the same key decoded from a column (two objects) pickle to different bytes, and would be
    two groups. Fast mode (`Pickler.fast`) writes no memo; one pickler per thread, reused
    (as fast as `pickle.dumps`). A value that contains itself fails (`ValueError`) rather than
    being grouped by some bytes.

        >>> one = "ab"
        >>> plain_bytes((one, one)) == plain_bytes(("ab", "".join(["a", "b"])))
        True
    """
    found = getattr(_PICKLERS, "pickler", None)
    if found is None:
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol=5)
        pickler.fast = True  # (no memo: see above)
        found = _PICKLERS.pickler = (buf, pickler)
    buf, pickler = found
    buf.seek(0)
    buf.truncate()
    try:
        pickler.dump(x)
    except BaseException:  # (a pickler left mid-dump keeps its nesting count: a new one next time)
        del _PICKLERS.pickler
        raise
    return buf.getvalue()


def canonical(x: Any) -> Any:
    """A value standing for every value equal to `x`, built only to be pickled."""
    t = type(x)
    if t in _PLAIN:
        return x
    if t is float:
        return _float(x)
    if isinstance(x, tuple):  # (NamedTuples too: equal to their plain tuple)
        return ("T", *(canonical(i) for i in x))
    if isinstance(x, enum.Enum) and not isinstance(x, (int, str, float)):
        return ("E", t.__module__, t.__qualname__, x.name)
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return int.__index__(x)
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    if isinstance(x, (float, complex, Decimal, Fraction)):
        return _number(x)
    if isinstance(x, list):
        return ("L", *(canonical(i) for i in x))
    if isinstance(x, (set, frozenset)):
        return ("S", *sorted(plain_bytes(canonical(i)) for i in x))
    if isinstance(x, dict):
        items = sorted((plain_bytes(canonical(k)), canonical(v)) for k, v in x.items())
        return ("M", *items)
    if isinstance(x, datetime.datetime):
        return _datetime(x)
    if isinstance(x, datetime.timedelta):
        return ("timedelta", x // datetime.timedelta.resolution)
    if isinstance(x, (datetime.date, datetime.time)):
        return (t.__qualname__, x.isoformat())
    if dataclasses.is_dataclass(x) and not isinstance(x, type) and t.__dataclass_params__.eq:
        fields = (canonical(getattr(x, f.name)) for f in dataclasses.fields(x) if f.compare)
        return ("D", t.__module__, t.__qualname__, *fields)
    return x


def stored_form(k: Any) -> Any:
    """A key as the driver's store keeps it (`state.key_bytes`): `-0.0` as `0.0`, every NaN as
    one, inside tuples too; anything else as it is. The driver's keys come from Spark's typed
    columns, so they already have their declared type (no `1` beside `1.0`); only the two
    zeros and the NaNs, which Spark itself groups together, pickle apart. Kept this narrow so
    that every other key keeps the bytes the store's checkpoints already hold."""
    t = type(k)
    if t is float:
        return 0.0 if k == 0 else math.nan if k != k else k
    if t is tuple:
        items = tuple(stored_form(i) for i in k)
        return k if all(a is b for a, b in zip(items, k)) else items
    return k


def _float(f: float) -> Any:
    if f != f:
        return _NAN
    if math.isinf(f) or not f.is_integer():
        return float(f)
    return int(f)  # (-0.0 and 0.0 are 0, as 1.0 is 1)


def _number(x: Any) -> Any:
    """An int for an integral value, a float when the value is one, else an exact fraction."""
    if isinstance(x, complex):
        return _float(x.real) if x.imag == 0 else ("C", _float(x.real), _float(x.imag))
    if isinstance(x, float):
        return _float(float(x))
    if isinstance(x, Decimal) and not x.is_finite():
        return _NAN if x.is_nan() else float(x)
    q = Fraction(x)
    if q.denominator == 1:
        return q.numerator
    f = float(q)
    return f if Fraction(f) == q else ("Q", q.numerator, q.denominator)


def _datetime(d: datetime.datetime) -> Any:
    if d.utcoffset() is None:
        return ("datetime", d.isoformat())
    return ("datetime@", (d - d.utcoffset()).replace(tzinfo=None).isoformat())  # type: ignore[operator]


def compare_grouping(recon: Any, old: dict[str, Any], data: dict[str, Any], reset: Any) -> None:
    """Refuse resuming keyed state a checkpoint grouped by another rule (`upgrade.reconcile`).

    Records without `key_grouping` were written when the executors grouped keys by their
    pickled bytes: a key stored as `True`, `2.0` or a tuple would not be found under this
    rule's bytes, so its state would silently start again. "python-eq-1" pickled the same
    canonical forms with pickle's memo: every key holding a string has other bytes now. The
    states grouped by these bytes are those on the executors (Spark's state store, the tick's
    tables, keyed tables kept per key); the driver's store re-indexes its keys itself
    (`state._INDEXED`) and Spark's native aggregations group by typed columns. `--reset-state`
    of such a state drops it knowingly."""
    from .upgrade import _matches, committed

    was = data.get("key_grouping")
    if was == GROUPING:
        return
    how = (
        "by each key's pickled bytes (the checkpoint's record has no key_grouping: hydrolite before 2026-11-30), "
        "which kept equal keys such as 1, 1.0 and True apart"
        if was is None
        else f"by {was}, whose bytes for a key holding a string depended on which objects it was made of"
    )
    for q, rec in old.items():
        if not committed(recon.checkpoint, q):
            continue
        held = [s for s in rec.state.values() if s.home in _GROUPED and not _matches(reset, s.display, s.key)]
        tables = sorted(ch for ch, home in rec.tables.items() if home == "executors")
        if held or tables:
            names = ", ".join([*(s.display for s in held), *(f"the table read through channel {t}" for t in tables)])
            recon.refusals.append(
                f"query {q}: its keyed state on the executors ({names}) was grouped {how}; this version groups keys "
                f"as Python compares them ({GROUPING}), so stored keys would not be found and their state would "
                "start again"
            )
            fix = f"pass --reset-state {', '.join(s.display for s in held)} to drop that state, " if held else ""
            recon.fixes.append(
                f"start a new --checkpoint, {fix}or resume the checkpoint with the hydrolite version that wrote it"
            )


#: the homes (`state_homes.home_of`) whose keys are stored under `group_bytes`
_GROUPED = ("executors", "table")
