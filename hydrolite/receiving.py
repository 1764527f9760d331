"""The assertions of a receiver handle, written once for both backends.

A scenario function (`s.receiver("out").assert_yields([...])`) runs unchanged under the
simulator (`hydrolite/sim/ports.py`) and on Spark (`hydrolite/planner/spark/harness.py`).
Each backend's receiver only knows how to wait for its next output (`next`, raising
`NoMoreOutput` when none can come) and how to drain what is left (`collect`); the checks
a scenario makes on top of those, and their messages, live here so the two cannot drift.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic, TypeVar

# nothing from `hydrolite.sim` at import time: the simulator's receiver subclasses this
# module's class, so importing the sim package from here would make `import
# hydrolite.receiving` (or the Spark harness) as a program's first import a circular one

__all__ = ["NoMoreOutput", "ReceiverAssertions"]

T = TypeVar("T")


class NoMoreOutput(AssertionError):
    """A receiver waited for an output, but nothing more can be produced in this execution
    (an AssertionError: the test expected an output the program cannot give)."""


def render(v: Any) -> str:
    """The simulator's short rendering of a value (`hydrolite.sim.values.render`)."""
    from .sim.values import render as sim_render

    return sim_render(v)


class ReceiverAssertions(Generic[T]):
    """`assert_*` over a receiver's `next()` and `collect()`; subclasses provide those and `port`."""

    __slots__ = ()
    port: str

    def next(self) -> T:
        """The next output; NoMoreOutput when the program can produce none."""
        raise NotImplementedError(f"{type(self).__name__} must define next()")

    def collect(self) -> list[T]:
        """Every remaining output, once the program cannot produce any more."""
        raise NotImplementedError(f"{type(self).__name__} must define collect()")

    def assert_yields(self, expected: Iterable[T]) -> None:
        """The next outputs are exactly `expected`, in order (more may follow)."""
        want = list(expected)
        for i, e in enumerate(want):
            try:
                got = self.next()
            except NoMoreOutput:
                raise NoMoreOutput(f"{self.port!r} ended early: still expected {render(want[i:])}") from None
            if got != e:
                raise AssertionError(
                    f"{self.port!r} yielded {render(got)}, expected {render(e)} (item {i + 1} of {render(want)})"
                )

    def assert_yields_unordered(self, expected: Iterable[T]) -> None:
        """The next len(expected) outputs are `expected`, in any order."""
        remaining = list(expected)
        for _ in range(len(remaining)):
            try:
                got = self.next()
            except NoMoreOutput:
                raise NoMoreOutput(
                    f"{self.port!r} ended early: still expected {render(remaining)} (in any order)"
                ) from None
            if got not in remaining:
                raise AssertionError(
                    f"{self.port!r} yielded unexpected {render(got)}; still expected {render(remaining)} (in any order)"
                )
            remaining.remove(got)

    def assert_no_more(self) -> None:
        """Nothing more is produced, whatever runs next."""
        extra = self.collect()
        if extra:
            raise AssertionError(f"{self.port!r} yielded unexpected {render(extra)}, expected no more outputs")

    def assert_yields_only(self, expected: Iterable[T]) -> None:
        """Exactly `expected`, in order, and then nothing more."""
        self.assert_yields(expected)
        self.assert_no_more()

    def assert_yields_only_unordered(self, expected: Iterable[T]) -> None:
        """Exactly `expected`, in any order, and then nothing more."""
        self.assert_yields_unordered(expected)
        self.assert_no_more()
