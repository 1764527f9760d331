"""Errors raised while running a program on Spark, pointing at the user's operator and line."""

from __future__ import annotations

import linecache
import os

from ...errors import HydroliteError
from ...ir.nodes import Node


def _short(v: object, limit: int = 200) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def site_of(node: Node) -> str:
    return f"{os.path.basename(node.site.file)}:{node.site.line}"


class SparkRunError(HydroliteError, RuntimeError):
    """A batch failed; the message names the query, the batch id and (when known) the operator."""


class UserFunctionError(SparkRunError):
    """A user function raised, or returned a value of the wrong type, on one element."""

    def __init__(self, op: str, file: str, line: int, element: object, batch_id: int, stage: str, exc: BaseException, fn_at: str = "") -> None:
        self.op = op
        self.file = file
        self.line = line
        self.batch_id = batch_id
        self.stage = stage
        code = linecache.getline(file, line).strip()
        msg = (
            f"{os.path.basename(file)}:{line}: {op}() failed on element {_short(element)} "
            f"in batch {batch_id} of query {stage!r}: {type(exc).__name__}: {exc}"
        )
        if code:
            msg += f"\n  {line:>5} | {code}"
        if fn_at:
            msg += f"\n  the function is defined at {fn_at}"
        super().__init__(msg)

    def __reduce__(self) -> tuple[object, ...]:  # keep the message when crossing processes
        return (SparkRunError, (str(self),))


class BadDataError(SparkRunError):
    """Input data does not match the port's declared element type."""
