"""Typed test handles: senders bound to source ports, receivers bound to sink ports.

Handles belong to a `Simulator` and always act on its *current* execution, so a scenario can
create them once (outside) or look them up inside; the same scenario runs once per explored
execution.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..ir.meta import Kind
from ..ir.nodes import Sink
from ..receiving import ReceiverAssertions
from .errors import NoMoreOutput, SimUsageError
from .por import sink_resource
from .values import render

if TYPE_CHECKING:
    from .explore import Simulator
    from .ops_time import SinkOp, SourceOp

T = TypeVar("T")


def _checker(t: Any) -> Callable[[Any], bool] | None:
    """A run-time check for a declared element type (None when it cannot be checked)."""
    if t is None or t is Any:
        return None
    if t is type(None):
        return lambda x: x is None
    origin = typing.get_origin(t)
    if origin is tuple:
        args = typing.get_args(t)
        if not args or Ellipsis in args:
            return lambda x: isinstance(x, tuple)
        checks = [_checker(a) for a in args]
        return lambda x: (
            isinstance(x, tuple)
            and len(x) == len(checks)
            and all(c is None or c(v) for c, v in zip(checks, x, strict=True))
        )
    if origin in (typing.Union, types.UnionType):
        alts = [_checker(a) for a in typing.get_args(t)]
        return None if any(a is None for a in alts) else (lambda x: any(a(x) for a in alts if a is not None))
    if isinstance(origin, type):
        return lambda x: isinstance(x, origin)
    if isinstance(t, type):
        if t is float:  # an int (or bool) is a float to typing: the port holds it as one
            return lambda x: isinstance(x, (int, float))
        return lambda x: isinstance(x, t)
    return None


class Sender(Generic[T]):
    """Feeds elements to a source port of the program (one process or cluster member)."""

    __slots__ = ("_sim", "_op", "_place", "port", "_check", "_expects")

    def __init__(self, sim: Simulator, op: SourceOp, place: int, declared: Any) -> None:
        self._sim = sim
        self._op = op
        self._place = place
        self.port: str = op.port
        meta = op.node.meta
        # tuple[key, elem] built at run time (the subscript form is not a type mypy can check)
        expected: Any = (
            types.GenericAlias(tuple, (meta.key, meta.elem)) if meta.kind is Kind.KEYED_STREAM else meta.elem
        )
        if meta.kind is Kind.KEYED_STREAM and (meta.key is None or meta.elem is None):
            expected = tuple
        self._expects = declared if declared is not None else expected
        self._check = _checker(self._expects)

    def send(self, x: T) -> None:
        """Send one element; it is processed by the top level of the program at once."""
        if self._check is not None and not self._check(x):
            raise SimUsageError(
                f"send() to port {self.port!r} (declared at {self._op.node.site} as "
                f"{self._op.node.meta.type_str()}) expects {self._expects}, got {render(x)}"
            )
        self._sim.world.send(self._op, self._place, x)

    def send_many(self, xs: Iterable[T]) -> None:
        """Send several elements, in order."""
        for x in xs:
            self.send(x)

    def __repr__(self) -> str:
        return f"<Sender {self.port!r}>"


class Receiver(ReceiverAssertions[T]):
    """Reads the outputs of a sink port, running the program until they appear (the
    `assert_*` checks are `hydrolite.receiving`'s, shared with the Spark harness).

    Waiting (`next`, the `assert_*` methods) runs scheduler steps (each possibly a choice)
    until an output is there. When nothing more can be produced in this execution, `next`
    fails it with `NoMoreOutput` (an AssertionError): the test expected an output the
    program cannot give. On a NoOrder sink, `next` returns outputs in this execution's
    arrival order; prefer `assert_yields_unordered` there.
    """

    __slots__ = ("_sim", "_op", "_place", "port")

    def __init__(self, sim: Simulator, op: SinkOp, place: int) -> None:
        self._sim = sim
        self._op = op
        self._place = place
        self.port: str = op.node.port if isinstance(op.node, Sink) else ""

    def _state(self) -> list[Any]:
        s: list[Any] = self._sim.world.states[self._place][self._op.idx]
        return s

    def next(self) -> T:
        """The next output; runs the program until there is one."""
        w = self._sim.world
        s = w.states[self._place][self._op.idx]
        while s[1] >= len(s[0]):
            if not w.step():
                raise NoMoreOutput(
                    f"receiver {self.port!r} waited for an output, but nothing more can be produced in this "
                    f"execution (received so far: {render(s[0])})"
                )
        x: T = s[0][s[1]]
        s[1] += 1
        if w.sleep:
            w.wake((sink_resource(self._place, self._op.idx),))
        if w.trace is not None:
            w.trace.append(("recv", self.port, w.prog.places[self._place].label, x))
        return x

    def collect(self) -> list[T]:
        """Every remaining output, once the program cannot produce any more."""
        w = self._sim.world
        w.run_until_quiet()
        s = self._state()
        out: list[T] = s[0][s[1] :]
        s[1] = len(s[0])
        if w.sleep:
            w.wake((sink_resource(self._place, self._op.idx),))
        if w.trace is not None and out:
            w.trace.append(("recv", self.port, w.prog.places[self._place].label, out))
        return out

    def __repr__(self) -> str:
        return f"<Receiver {self.port!r}>"
