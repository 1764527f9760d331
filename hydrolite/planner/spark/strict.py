"""Checking input records against a port's declared element type (no Spark here).

File inputs (`json:` / `csv:`) are read as text lines and every record is parsed and
checked in Python (`records.py` drives this per line, inside an Arrow function; CSV lines
are split by `strict_csv.py`) before the tick body sees it. The checks are strict:
nothing is coerced and nothing is dropped.

* a value must have the declared type: JSON `123` is not a `str`, `"1"` is not an `int`,
  `1.5` and `true` are not ints; an int is a float (and `"NaN"`, `"Infinity"`,
  `"-Infinity"`, which Spark's JSON writer produces, are floats); `bytes` are base64
  text; `datetime` / `date` are ISO-8601 text (a timestamp without a zone is in the
  session time zone); a dict's keys are JSON object keys read as the key type's text;
* null, or a missing field, only where the type is optional (`X | None`, `None`) — Spark's
  JSON writer leaves null fields out, so a missing optional field reads as None;
* a JSON record is one object holding exactly the layout's fields (see `Layout`); an
  unknown field, an array, trailing data, invalid JSON or text that is not UTF-8 (or the
  declared `encoding`) is rejected;
* CSV text is converted by the same rules (an empty unquoted field is null, `""` is the
  empty string); the header is matched by name (`strict_csv.py`).

A record that fails raises `Rejection`: the field (a path such as `value.items[2]`),
what was expected and what was found. This module needs no Spark session, so it is
unit-tested on its own (tests/core/test_strict.py).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .types import DictT, HType, ListT, NoneT, OpaqueT, OptT, Prim, StructT

Check = Callable[[Any], Any]  # a raw value -> its encoded form (HType.encode's), or Rejection
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
_FLOAT_WORDS = {"NaN": float("nan"), "Infinity": float("inf"), "+Infinity": float("inf"), "-Infinity": float("-inf")}
_CSV_FLOAT_WORDS = {**_FLOAT_WORDS, "Inf": float("inf"), "+Inf": float("inf"), "-Inf": float("-inf")}
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE_TEXT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TS_TEXT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]{1,9}))?)?)?"
    r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)


class _Missing:
    """A field absent from its record (distinct from an explicit null)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Rejection(Exception):
    """Why one record does not match the declared type: the field, expected, found."""

    def __init__(self, expected: str, found: str, path: Sequence[str] = ()) -> None:
        super().__init__(expected, found)
        self.expected = expected
        self.found = found
        self.path = list(path)

    @property
    def field(self) -> str:
        """The offending field as a path (`key`, `value.a`, `value[2]`), '' for the whole record."""
        out = ""
        for seg in self.path:
            out += seg if seg.startswith("[") or not out else "." + seg
        return out

    def reason(self) -> str:
        where = f"field {self.field!r}: " if self.path else ""
        return f"{where}expected {self.expected}, found {self.found}"

    def __str__(self) -> str:
        return self.reason()


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_KINDS = {bool: "bool", int: "int", float: "float", str: "str", dict: "object", list: "array"}


def found_json(x: Any) -> str:
    """A parsed JSON value as an error message shows it: its kind and its text."""
    if x is MISSING:
        return "nothing (the field is missing)"
    if x is None:
        return "null"
    return f"{_KINDS.get(type(x), type(x).__name__)} {_short(json.dumps(x, ensure_ascii=False))}"


def found_text(x: str | None) -> str:
    """A CSV field (or a JSON object key) as an error message shows it."""
    return "nothing (an empty field)" if x is None else repr(_short(x))


def _in_path(seg: str, check: Check, x: Any) -> Any:
    """`check(x)`, with `seg` put in front of the path of a rejection."""
    try:
        return check(x)
    except Rejection as r:
        r.path.insert(0, seg)
        raise


# ------------------------------------------------------------------ text forms
def time_zone(name: str) -> dt.tzinfo:
    """A tzinfo from Spark's `spark.sql.session.timeZone` (a region, `UTC`, or `+hh:mm`)."""
    if name.upper() in ("UTC", "Z", "GMT"):
        return dt.timezone.utc
    m = re.fullmatch(r"(?:UTC|GMT)?([+-])([0-9]{1,2})(?::?([0-9]{2}))?", name)
    if m:
        delta = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        return dt.timezone(delta if m.group(1) == "+" else -delta)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def parse_timestamp(text: str, tz: dt.tzinfo) -> dt.datetime | None:
    """An aware datetime from ISO-8601 text (`2024-01-02T03:04:05.123Z`, `2024-01-02 03:04`,
    `2024-01-02`); None when the text is not one. No zone means the session zone `tz`."""
    m = _TS_TEXT.fullmatch(text)
    if not m:
        return None
    y, mo, d, h, mi, s, frac, zone = m.groups()
    try:
        micros = int((frac or "0")[:6].ljust(6, "0"))
        zinfo = tz
        if zone == "Z":
            zinfo = dt.timezone.utc
        elif zone:
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            zinfo = dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0)))
        return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micros, tzinfo=zinfo)
    except ValueError:  # a month 13, an hour 25, ...
        return None


def parse_date(text: str) -> dt.date | None:
    m = _DATE_TEXT.fullmatch(text)
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _base64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def text_check(t: HType, tz: dt.tzinfo, what: str = "CSV") -> Callable[[str | None], Any]:
    """How a field given as text (CSV; None = an empty field) is read as a value of t.

    Raises TypeError for a type text cannot hold (nested values in CSV, pickled objects)."""
    if isinstance(t, OptT):
        inner = text_check(t.inner, tz, what)
        return lambda x: None if x is None else inner(x)
    if isinstance(t, NoneT):

        def none(x: str | None) -> Any:
            if x is None:
                return None
            raise Rejection("None (an empty field)", found_text(x))

        return none
    if not isinstance(t, Prim):
        raise TypeError(f"{what} holds flat text fields only, not {t.describe()}")
    name = t.describe()
    conv = _TEXT_CONVERTERS.get(t.py)
    if conv is None:
        raise TypeError(f"{what} cannot hold {name} values")

    def check(x: str | None) -> Any:
        v = None if x is None else conv(x, tz)
        if v is None:
            raise Rejection(name, found_text(x))
        return v

    return check


def _text_int(x: str, tz: dt.tzinfo) -> int | None:
    if not _INT_TEXT.fullmatch(x):
        return None
    v = int(x)
    return v if INT_MIN <= v <= INT_MAX else None


def _text_float(x: str, tz: dt.tzinfo) -> float | None:
    if x in _CSV_FLOAT_WORDS:
        return _CSV_FLOAT_WORDS[x]
    return float(x) if _FLOAT_TEXT.fullmatch(x) else None


def _text_bool(x: str, tz: dt.tzinfo) -> bool | None:
    low = x.lower()
    return True if low == "true" else False if low == "false" else None


_TEXT_CONVERTERS: dict[type, Callable[[str, dt.tzinfo], Any]] = {
    int: _text_int,
    float: _text_float,
    bool: _text_bool,
    str: lambda x, tz: x,
    bytes: lambda x, tz: _base64(x),
    dt.datetime: parse_timestamp,
    dt.date: lambda x, tz: parse_date(x),
}


# ------------------------------------------------------------------ JSON values
def json_check(t: HType, tz: dt.tzinfo) -> Check:
    """How a parsed JSON value is checked as a value of t (returns HType.encode's form).

    Raises TypeError for a type JSON cannot hold (a dict whose keys are not text-like)."""
    if isinstance(t, OptT):
        inner = json_check(t.inner, tz)
        return lambda x: None if x is None or x is MISSING else inner(x)
    if isinstance(t, NoneT):

        def none(x: Any) -> Any:
            if x is None or x is MISSING:
                return None
            raise Rejection("None (null)", found_json(x))

        return none
    if isinstance(t, Prim):
        return _json_prim(t, tz)
    if isinstance(t, OpaqueT):
        return _json_prim(Prim(bytes), tz)
    if isinstance(t, StructT):
        fields = json_fields(t.names, t.items, tz)
        names, what = t.names, t.describe()
        return lambda x: dict(zip(names, fields(x, what)))
    if isinstance(t, ListT):
        return _json_list(t, json_check(t.item, tz))
    if isinstance(t, DictT):
        return _json_dict(t, text_check(t.key, tz, "a JSON object's keys"), json_check(t.value, tz))
    raise TypeError(f"JSON cannot hold {t.describe()} values")


def _json_prim(t: Prim, tz: dt.tzinfo) -> Check:
    name = t.describe()
    py = t.py

    def bad(x: Any, note: str = "") -> Rejection:
        return Rejection(name, found_json(x) + note)

    if py is int:

        def int_(x: Any) -> Any:
            if type(x) is int and INT_MIN <= x <= INT_MAX:
                return x
            raise bad(x, " (outside the 64-bit range)" if type(x) is int else "")

        return int_
    if py is float:

        def float_(x: Any) -> Any:
            if type(x) is float:
                return x
            if type(x) is int:
                return float(x)
            if type(x) is str and x in _FLOAT_WORDS:
                return _FLOAT_WORDS[x]
            raise bad(x)

        return float_
    if py is str or py is bool:

        def same(x: Any) -> Any:
            if type(x) is py:
                return x
            raise bad(x)

        return same
    as_text = _TEXT_CONVERTERS[py]
    form = {bytes: "base64 text", dt.datetime: "ISO-8601 text", dt.date: "ISO-8601 text (yyyy-mm-dd)"}[py]

    def text_form(x: Any) -> Any:
        v = as_text(x, tz) if type(x) is str else None
        if v is None:
            raise Rejection(f"{name} ({form})", found_json(x))
        return v

    return text_form


def json_fields(names: Sequence[str], types: Sequence[HType], tz: dt.tzinfo) -> Callable[[Any, str], list[Any]]:
    """A JSON object holding exactly these fields -> their encoded values, in order."""
    checks = [json_check(t, tz) for t in types]
    known = frozenset(names)
    pairs = list(zip(names, checks))
    listed = ", ".join(names)

    def fields(x: Any, what: str) -> list[Any]:
        if type(x) is not dict:
            raise Rejection(f"a JSON object with the fields {listed} ({what})", found_json(x))
        if not x.keys() <= known:
            extra = next(k for k in x if k not in known)
            raise Rejection(f"only the fields {listed}", "an unknown field (a misspelt name?)", [extra])
        out = []
        for n, c in pairs:
            try:
                out.append(c(x.get(n, MISSING)))
            except Rejection as r:
                r.path.insert(0, n)
                raise
        return out

    return fields


def _json_list(t: ListT, item: Check) -> Check:
    name = t.describe()

    def list_(x: Any) -> Any:
        if type(x) is not list:
            raise Rejection(f"{name} (a JSON array)", found_json(x))
        return [_in_path(f"[{i}]", item, v) for i, v in enumerate(x)]

    return list_


def _json_dict(t: DictT, key: Callable[[str | None], Any], value: Check) -> Check:
    name = t.describe()

    def dict_(x: Any) -> Any:
        if type(x) is not dict:
            raise Rejection(f"{name} (a JSON object)", found_json(x))
        out = []
        for k, v in x.items():
            seg = f"[{k!r}]"
            out.append((_in_path(seg, key, k), _in_path(seg, value, v)))
        return out

    return dict_


# ------------------------------------------------------------------ the layout of a record
@dataclass(frozen=True)
class Layout:
    """The top-level fields (columns) of one element in a file, see ports.external_schema:
    keyed ports `key` and `value`, a tuple `_1`, `_2`, ..., a record its fields, else `value`."""

    names: tuple[str, ...]
    types: tuple[HType, ...]
    keyed: bool
    struct: bool  # the element is the record of all columns (unkeyed tuple / record)

    @staticmethod
    def of(vt: HType, kt: HType | None) -> Layout:
        if kt is not None:
            return Layout(("key", "value"), (kt, vt), True, False)
        if isinstance(vt, StructT):
            return Layout(tuple(vt.names), tuple(vt.items), False, True)
        return Layout(("value",), (vt,), False, False)

    def element(self, vals: list[Any]) -> tuple[Any, Any]:
        """(k, v) in HType.encode's form from the columns' encoded values."""
        if self.keyed:
            return vals[0], vals[1]
        if self.struct:
            return None, dict(zip(self.names, vals))
        return None, vals[0]

    def describe(self) -> str:
        return ", ".join(self.names)


def json_record(layout: Layout, tz: dt.tzinfo) -> Callable[[Any], tuple[Any, Any]]:
    """A parsed JSON line -> (k, v), or Rejection."""
    fields = json_fields(layout.names, layout.types, tz)
    what = "one element per line"
    return lambda x: layout.element(fields(x, what))


def parse_json(text: str) -> Any:
    """One JSON value, whole text; invalid JSON, trailing data or a cut-off value: Rejection."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise json_error(e, text) from None


def json_error(e: json.JSONDecodeError, text: str) -> Rejection:
    stripped = len(text.rstrip())
    if e.msg.startswith("Extra data"):
        found = f"more text after the record at column {e.colno}: {_short(text[e.pos :].strip(), 40)!r}"
    elif e.pos >= stripped or e.msg.startswith("Unterminated string"):
        found = "a record cut off before its end (a truncated line?)"
    else:
        found = f"invalid JSON at column {e.colno}: {e.msg}"
    return Rejection("one JSON object", found)


_JSON_TOKEN = re.compile(r"[^ \t\r\n]")  # anything but JSON's insignificant whitespace


def _skip_ws(text: str, i: int) -> int:
    """The index of the first non-whitespace character of `text` at or after `i` (or its end)."""
    m = _JSON_TOKEN.search(text, i)
    return len(text) if m is None else m.start()


def json_document(text: str) -> list[tuple[int, str, Any]]:
    """The records of a whole-file JSON document (`multiLine`): an array of records, or one
    record. Each is (character offset, its text, the parsed value, or a Rejection for the
    rest of the file when it is not valid JSON)."""
    dec = json.JSONDecoder()
    out: list[tuple[int, str, Any]] = []
    i = _skip_ws(text, 0)
    in_array = text.startswith("[", i)
    if in_array:
        i = _skip_ws(text, i + 1)
        if text.startswith("]", i):
            i += 1
            in_array = False
    try:
        while i < len(text):
            value, j = dec.raw_decode(text, i)
            out.append((i, text[i:j], value))
            i = _skip_ws(text, j)
            if not in_array:
                break
            if text.startswith(",", i):
                i = _skip_ws(text, i + 1)
            elif text.startswith("]", i):
                i = _skip_ws(text, i + 1)
                in_array = False
                break
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, i)
        if in_array or i < len(text):
            raise json.JSONDecodeError("Extra data" if not in_array else "Expecting ']'", text, i)
    except json.JSONDecodeError as e:
        out.append((e.pos, text[e.pos : e.pos + 200], json_error(e, text)))
    return out
