"""Errors raised while building, compiling and running hydrolite programs.

A misuse of the DSL is reported at build time with what the operator required, what it
found, how to fix it, and the user's file:line (and code line).
"""

from __future__ import annotations

from typing import ClassVar

from ._site import CallSite, capture_site


class HydroliteError(Exception):
    """Base class of every error hydrolite raises on purpose.

    Each class has a stable `code` (like PySpark's error classes): tools and tests match on
    the code, never on the wording, and the CLI prints it (`hydrolite: error [HL-BUILD]: ...`).
    """

    code: ClassVar[str] = "HL-ERROR"

    def getErrorClass(self) -> str:
        """The stable code of this error (the same as `code`)."""
        return self.code


def format_at(site: CallSite, headline: str, *details: str) -> str:
    """Render a message that points at a user's source line."""
    lines = [f"{site}: {headline}"]
    lines.extend(f"  {d}" for d in details if d)
    code = site.code
    if code:
        lines.append(f"  {site.line:>5} | {code}")
    return "\n".join(lines)


class BuildError(HydroliteError, TypeError):
    """A program was built in a way the type rules forbid.

    It is a TypeError so that code catching mistyped calls catches it too; its attributes
    keep the pieces of the message for tools.
    """

    code: ClassVar[str] = "HL-BUILD"

    def __init__(
        self,
        op: str,
        *,
        required: str,
        found: str,
        fix: str,
        site: CallSite | None = None,
    ) -> None:
        self.op = op
        self.required = required
        self.found = found
        self.fix = fix
        self.site = site if site is not None else capture_site()
        super().__init__(
            format_at(
                self.site,
                f"{op} requires {required}",
                f"found: {found}",
                f"fix: {fix}",
            )
        )


class FlowError(HydroliteError, ValueError):
    """A whole program is inconsistent (duplicate port, incomplete cycle, ...)."""

    code: ClassVar[str] = "HL-FLOW"

    def __init__(self, message: str, *, site: CallSite | None = None, fix: str = "") -> None:
        self.site = site if site is not None else capture_site()
        super().__init__(format_at(self.site, message, f"fix: {fix}" if fix else ""))


class UserFunctionError(HydroliteError, RuntimeError):
    """A function the user passed to an operator raised (or returned a value of the wrong
    type) on one element. Each backend raises its own subclass — the simulator's carries the
    IR node, Spark's the fields that survive the trip from a Python worker — so
    `except hydrolite.errors.UserFunctionError` catches the failure on either backend.
    """

    code: ClassVar[str] = "HL-USER-FUNCTION"
