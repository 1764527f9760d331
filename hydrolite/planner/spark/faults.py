"""Fault injection for the exactly-once tests: crash a micro-batch at a named point.

`FlowRunner(fault=hook)` calls `hook(point, query, batch_id)` at each point of a batch;
`HYDROLITE_FAULT=ACTION:POINT:QUERY:BATCH` builds such a hook for the CLI (ACTION: kill =
exit at once with no cleanup, raise = an exception).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

FaultHook = Callable[[str, str, int], None]  # (point, query name, batch id)
FAULT_POINTS = ("before_state", "before_outputs", "between_sinks", "after_sinks")


class InjectedFault(RuntimeError):
    """Raised by a fault hook to simulate a crash inside a micro-batch (tests)."""


class CrashOnce:
    """A fault hook raising `InjectedFault` the first time any query (or only `query`, when
    given) reaches `point` of batch `batch`; `fired` lists the batches it crashed (at most one)."""

    def __init__(self, point: str, batch: int = 1, query: str | None = None) -> None:
        self.point, self.batch, self.query = point, batch, query
        self.fired: list[int] = []

    def __call__(self, p: str, query: str, b: int) -> None:
        if p == self.point and b == self.batch and self.query in (None, query) and not self.fired:
            self.fired.append(b)
            raise InjectedFault(f"crash at {p} of batch {b}")


def fault_from_env(value: str | None = None) -> FaultHook | None:
    """`HYDROLITE_FAULT=ACTION:POINT:QUERY:BATCH` (ACTION: kill = exit at once, raise = an exception)."""
    spec = value if value is not None else os.environ.get("HYDROLITE_FAULT")
    if not spec:
        return None
    action, point, query, batch = spec.split(":")

    def hook(p: str, q: str, b: int) -> None:
        if p == point and q == query and b == int(batch):
            if action == "kill":
                sys.stdout.flush()
                os._exit(137)
            raise InjectedFault(f"injected fault at {p} of batch {b} of query {q!r}")

    return hook
