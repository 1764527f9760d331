"""Errors the simulator raises: failed executions, user-function errors, misuse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .. import errors
from ..errors import HydroliteError, format_at
from ..receiving import NoMoreOutput as NoMoreOutput  # defined with the receivers of both backends
from .values import render

if TYPE_CHECKING:
    from ..ir.nodes import Node


class SimUsageError(HydroliteError, ValueError):
    """The test used the simulator wrongly (unknown port, missing cluster member, ...)."""

    code: ClassVar[str] = "HL-SIM-USAGE"


class UserFunctionError(errors.UserFunctionError):
    """A function the user passed to an operator raised; names the operator, site and element
    (the simulator's form of `hydrolite.errors.UserFunctionError`)."""

    def __init__(self, node: Node, element: Any, where: str, exc: BaseException) -> None:
        self.node = node
        self.element = element
        self.where = where
        self.exc = exc
        super().__init__(
            format_at(
                node.site,
                f"{node.op}() raised {type(exc).__name__}: {exc}",
                f"element: {render(element)}",
                f"while: {where}",
            )
        )


class SimulationFailure(AssertionError):
    """An explored execution failed; the message is the full report (see `report.py`).

    Attributes: `choices` (the shrunk choice sequence), `replay` (its encoded form),
    `executions` (how many executions ran before the failure), `cause` (the original error).
    """

    def __init__(self, report: str, *, choices: list[int], replay: str, executions: int, cause: BaseException) -> None:
        super().__init__(report)
        self.report = report
        self.choices = choices
        self.replay = replay
        self.executions = executions
        self.cause = cause

    def _repr_html_(self) -> str:  # a notebook shows a caught failure laid out (hydrolite/sim_view.py)
        from ..sim_view import report_html

        return report_html(self.report)


class DeterminismViolation(AssertionError):
    """An output whose type promises determinism differed between two explored schedules."""


class CrashDivergence(AssertionError):
    """An execution in which a process crashed and recovered ended with other outputs than
    the same schedule without the crash (see `crash.py`). `node` is the sink that differs."""

    def __init__(self, message: str, node: Node | None = None) -> None:
        super().__init__(message)
        self.node = node


class ExplorationLimit(HydroliteError, RuntimeError):
    """An execution did not quiesce within the step budget (a tick keeps itself busy)."""

    code: ClassVar[str] = "HL-SIM-LIMIT"


class Pruned(BaseException):
    """Internal: this execution only repeats an explored one (all next actions are asleep).

    A BaseException so that a scenario's `except Exception` cannot swallow it.
    """
