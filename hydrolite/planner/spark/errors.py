"""Errors raised while running a program on Spark, pointing at the user's operator and line.

Each has a stable `code` (`HL-RUN`, `HL-USER-FUNCTION`, `HL-BAD-DATA`, ...). An error raised
in a Python worker reaches the driver only as text inside Spark's exception, so the worker
adds one machine-readable note (`hydrolite-error {json}`) and `from_spark_error` rebuilds the
same class with its fields on the driver. Spark's own errors are described from their
structured condition and parameters (`getCondition()`, `getMessageParameters()`); only raw
Py4J errors (no condition) fall back to reading the JVM text.
"""

from __future__ import annotations

import json
import linecache
import re
from typing import Any, ClassVar

from ... import errors
from ..._site import CallSite
from ...errors import HydroliteError
from ...ir.nodes import Node


def _short(v: object, limit: int = 200) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def site_of(node: Node) -> str:
    """`name.py:12` of the user's line that created `node` (`CallSite.label`)."""
    return node.site.label


_NOTE = "hydrolite-error "


class SparkRunError(HydroliteError, RuntimeError):
    """A batch failed; the message names the query, the batch id and (when known) the operator."""

    code: ClassVar[str] = "HL-RUN"
    _fields: ClassVar[tuple[str, ...]] = ()  # attributes rebuilt on the driver

    def __reduce__(self) -> tuple[Any, ...]:  # the same class and fields across processes
        return (_rebuild, (type(self).__name__, str(self), {f: getattr(self, f, None) for f in self._fields}))

    def _mark(self) -> None:
        """Add the note that lets the driver rebuild this error from Spark's text."""
        if hasattr(self, "add_note"):  # Python 3.11+; on 3.10 the class and message still come back
            data = {"class": type(self).__name__, "fields": {f: getattr(self, f, None) for f in self._fields}}
            self.add_note(_NOTE + json.dumps(data, default=str))


class UserFunctionError(SparkRunError, errors.UserFunctionError):
    """A user function raised, or returned a value of the wrong type, on one element (Spark's
    form of `hydrolite.errors.UserFunctionError`: the fields survive a worker's pickling)."""

    code: ClassVar[str] = "HL-USER-FUNCTION"
    _fields: ClassVar[tuple[str, ...]] = ("op", "file", "line", "batch_id", "stage")

    def __init__(
        self,
        op: str,
        file: str,
        line: int,
        element: object,
        batch_id: int,
        stage: str,
        exc: BaseException,
        fn_at: str = "",
    ) -> None:
        self.op = op
        self.file = file
        self.line = line
        self.batch_id = batch_id
        self.stage = stage
        code = linecache.getline(file, line).strip()
        msg = (
            f"{CallSite(file, line).label}: {op}() failed on element {_short(element)} "
            f"in batch {batch_id} of query {stage!r}: {type(exc).__name__}: {exc}"
        )
        if code:
            msg += f"\n  {line:>5} | {code}"
        if fn_at:
            msg += f"\n  the function is defined at {fn_at}"
        super().__init__(msg)
        self._mark()


class BadDataError(SparkRunError):
    """Input data does not match the port's declared element type."""

    code: ClassVar[str] = "HL-BAD-DATA"


_CLASSES: dict[str, type[SparkRunError]] = {c.__name__: c for c in (SparkRunError, UserFunctionError, BadDataError)}


def _rebuild(name: str, message: str, fields: dict[str, Any]) -> SparkRunError:
    err = Exception.__new__(_CLASSES.get(name, SparkRunError))
    Exception.__init__(err, message)
    err.__dict__.update(fields)
    return err


def from_spark_error(text: str) -> SparkRunError | None:
    """A hydrolite error raised in a Python worker, rebuilt (its class, message and fields)
    from the text of the Spark exception that carried it to the driver; None if there is none."""
    m = re.search(
        r"\b(UserFunctionError|BadDataError|SparkRunError): (.*?)(?:\n\n|\n\tat |\nJVM stacktrace|\Z)", text, re.S
    )
    if m is None:
        return None
    lines = [ln for ln in m.group(2).strip().splitlines() if not ln.startswith(_NOTE)]
    fields: dict[str, Any] = {}
    note = re.search(re.escape(_NOTE) + r"(\{.*?\})\s*$", text, re.M)
    if note is not None:
        try:
            fields = dict(json.loads(note.group(1)).get("fields", {}))
        except ValueError:
            fields = {}
    return _rebuild(m.group(1), "\n".join(lines).strip(), fields)


def describe_spark_error(exc: BaseException) -> str:
    """The useful part of an error from Spark, without Java frames: a worker's hydrolite
    error; else Spark's error condition and its message (structured, from PySpark's
    exception and its causes); else the first lines of a raw Py4J error."""
    text = str(exc)
    ours = from_spark_error(text)
    if ours is not None:
        return str(ours)
    found: list[str] = []
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:  # the exception and its causes, outermost first
        seen.add(id(e))
        condition = getattr(e, "getCondition", None)
        cond = condition() if callable(condition) else None
        if cond:
            first = str(getattr(e, "desc", None) or e).strip().splitlines()[0]
            first = re.sub(r"\s*SQLSTATE: \w+\.?$", "", first).replace("\\'", "'").strip()
            line = first if first.startswith(f"[{cond}]") else f"[{cond}] {first}"
            if line not in found:
                found.append(line)
        e = e.__cause__ or e.__context__
    if not found:  # a raw Py4J error: Spark's condition tags in its text
        for line in re.findall(r"\[[A-Z][A-Z0-9_.]+\][^\n]*", text):
            line = re.sub(r"\s*SQLSTATE: \w+\.?$", "", line).replace("\\'", "'").strip()
            if line not in found:
                found.append(line)
    if found:  # the outermost error and its root cause (which usually names the value)
        return found[0] if len(found) == 1 else f"{found[0]} ... caused by: {found[-1]}"
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("at ")]
    return "\n".join(lines[:6])
