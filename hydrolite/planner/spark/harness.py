"""Run simulator-style scenarios against real Spark (conformance tests).

`SparkHarness` offers the simulator's test handles — `sender(port).send(x)`,
`receiver(port).next()`, `assert_yields`, `assert_yields_only`, `assert_yields_unordered`,
`assert_no_more`, `collect` — so the same scenario function runs under both:

```python
def scenario(s):
    s.sender("increment").send(("c1", None))
    s.receiver("increment_ack").assert_yields([("c1", None)])
    s.sender("query").send(("c1", None))
    s.receiver("query_response").assert_yields_only([("c1", 1)])

Simulator(counter.build).exhaustive(scenario)       # every schedule
SparkHarness(counter.build(), spark).run(scenario)  # one real Spark execution
```

Sends are buffered per port and written as one feed entry (`FeedWriter`) when a receiver
waits; waiting processes everything available in every query (Spark's own batching
decides the ticks), and reads the sink's in-memory output. Spark explores no schedules:
the harness checks that the real runtime produces outputs the scenario accepts.

Clusters (`cluster_sizes={"Tag": N}`, default 2 as in the simulator): as in the simulator,
`sender(port, member=m)` sends to one member's source and `receiver(port, member=m)` reads
one member's outputs of a cluster sink (the run's sink holds `(member, element)` pairs).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from ...ir.graph import Flow
from ...receiving import NoMoreOutput, ReceiverAssertions
from .feed import FeedWriter
from .runtime import FlowRunner
from .stages import plan_flow
from .types import OPAQUE, from_python


class SparkSender:
    """Buffers elements for a source port until the next receive."""

    def __init__(self, harness: SparkHarness, port: str, member: int | None = None) -> None:
        self.harness = harness
        self.port = port
        self.member = member  # a cluster source: the member sent to (records are (member, x))
        self.pending: list[Any] = []

    def _wrap(self, x: Any) -> Any:
        return x if self.member is None else (self.member, x)

    def send(self, x: Any) -> None:
        self.pending.append(self._wrap(x))

    def send_many(self, xs: Iterable[Any]) -> None:
        self.pending.extend(self._wrap(x) for x in xs)

    def flush(self) -> bool:
        if not self.pending:
            return False
        self.harness.writers[self.port].send_many(self.pending)
        self.pending = []
        return True


class SparkReceiver(ReceiverAssertions[Any]):
    """Reads a sink port's outputs, running the queries until they appear."""

    def __init__(self, harness: SparkHarness, port: str, member: int | None = None) -> None:
        self.harness = harness
        self.port = port
        self.member = member  # a cluster sink: this member's elements only
        self.cursor = 0

    def _available(self) -> list[Any]:
        values = self.harness.runner.memory(self.port).values()
        if self.member is not None:
            values = [x for m, x in values if m == self.member]
        return values[self.cursor :]

    def next(self) -> Any:
        if not self._available():
            self.harness.step()
        got = self._available()
        if not got:
            raise NoMoreOutput(f"receiver {self.port!r} waited for an output, but Spark produced none")
        self.cursor += 1
        return got[0]

    def collect(self) -> list[Any]:
        self.harness.step()
        out = self._available()
        self.cursor += len(out)
        return out


class SparkHarness:
    """A program on Spark with every source fed through a hydrolite feed and every sink in memory."""

    def __init__(
        self,
        flow: Flow | Callable[[], Flow],
        spark: SparkSession,
        directory: str | None = None,
        keyed_state: str = "executors",  # conformance covers the executor path wherever it applies
        cluster_sizes: Mapping[str, int] | None = None,
        checkpoint: str | None = None,  # default: `checkpoint` under `directory`; may be a Hadoop URI
        channel_history: int | str | None = None,  # FlowRunner's: channel entries kept (retention.py)
    ) -> None:
        self.flow = flow if isinstance(flow, Flow) else flow()
        self.plan = plan_flow(self.flow, cluster_sizes)
        self.dir = directory or tempfile.mkdtemp(prefix="hydrolite-harness-")
        self.writers: dict[str, FeedWriter] = {}
        inputs: dict[str, str] = {}
        for port, src in self.plan.flow.sources.items():  # cluster sources: keyed by member
            vt = from_python(src.meta.elem) or OPAQUE
            kt = (from_python(src.meta.key) or OPAQUE) if src.meta.kind.keyed else None
            path = os.path.join(self.dir, "inputs", port)
            self.writers[port] = FeedWriter(path, vt, kt)
            inputs[port] = f"feed:{path}"
        self.runner = FlowRunner(
            self.plan,
            spark=spark,
            checkpoint=checkpoint or os.path.join(self.dir, "checkpoint"),
            inputs=inputs,
            keyed_state=keyed_state,
            channel_history=channel_history,
        )
        self.senders: dict[tuple[str, int | None], SparkSender] = {}
        self.receivers: dict[tuple[str, int | None], SparkReceiver] = {}
        self.started = False

    def _member(self, port: str, member: int | None, what: str) -> int | None:
        """`member` checked against the port's location, as the simulator checks it."""
        tag = self.plan.cluster_ports.get(port)
        if tag is None:
            if member is not None:
                raise ValueError(f"{what} {port!r} is on a process: it takes no member, got member={member}")
            return None
        size = self.plan.cluster_members[tag]
        if member is None or not 0 <= member < size:
            raise ValueError(f"{what} {port!r} is on cluster {tag!r} ({size} members): give member=0..{size - 1}")
        return member

    def sender(self, port: str, ty: Any = None, *, member: int | None = None) -> SparkSender:
        if port not in self.flow.sources:
            raise KeyError(port)
        key = (port, self._member(port, member, "source"))
        if key not in self.senders:
            self.senders[key] = SparkSender(self, port, key[1])
        return self.senders[key]

    def receiver(self, port: str, *, member: int | None = None) -> SparkReceiver:
        if port not in self.flow.sinks:
            raise KeyError(port)
        key = (port, self._member(port, member, "sink"))
        if key not in self.receivers:
            self.receivers[key] = SparkReceiver(self, port, key[1])
        return self.receivers[key]

    def step(self) -> None:
        """Write pending sends, then process everything available."""
        for s in self.senders.values():
            s.flush()
        if not self.started:
            self.runner.start()
            self.started = True
        self.runner.process_all_available()

    def run(self, scenario: Callable[[Any], object]) -> None:
        """Run the scenario once on Spark (the queries are stopped afterwards)."""
        try:
            scenario(self)
        finally:
            self.runner.stop()
