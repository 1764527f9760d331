"""The world the operator table of tests/core/test_ir_construction.py builds in: a flow
with typical inputs (`W`), one row's shape (`Op`) and how a row is built (`built`). The
rows are in ir_ops_values.py and ir_ops_time.py; each row's `build` is a lambda whose
call site the built node must record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hydrolite import Cluster, FlowBuilder, Process, SinkPort, Tick, nondet
from hydrolite.ir.ids import LocId
from hydrolite.ir.meta import Kind
from hydrolite.ir.nodes import Node
from hydrolite.live._base import Live
from hydrolite.live.keyed_stream import KeyedStream
from hydrolite.live.stream import Stream

R = "any batch boundary is acceptable to this test"
ANY: Any = object()  # "do not check" for elem/key


class Server: ...


class Client: ...


class Workers: ...


class W:
    """A flow with typical inputs; `build` lambdas take one of these."""

    def __init__(self) -> None:
        self.flow = FlowBuilder("ir")
        self.server: Process[Server] = self.flow.process(Server)
        self.client: Process[Client] = self.flow.process(Client)
        self.workers: Cluster[Workers] = self.flow.cluster(Workers)
        self.tick: Tick[Process[Server]] = self.server.tick()
        self.align = self.server.local_align_point()
        self.x: Stream[int, Process[Server]] = self.server.source("x", int)
        self.ks: KeyedStream[str, int, Process[Server]] = self.server.keyed_source("k", str, int)
        self.bx = self.x.batch(self.tick, nondet(R))
        self.bks = self.ks.batch(self.tick, nondet(R))
        self.count = self.x.count()
        self.snap = self.count.snapshot(self.tick, nondet(R))
        self.opt = self.bx.first()
        self.table = self.ks.count()
        self.snap_table = self.table.snapshot(self.tick, nondet(R))

    def loc(self, at: str) -> LocId:
        locs: dict[str, LocId] = {
            "server": self.server.id,
            "client": self.client.id,
            "workers": self.workers.id,
            "tick": self.tick.id,
        }
        return locs[at]


ST, KS, SG, OP, KG = Kind.STREAM, Kind.KEYED_STREAM, Kind.SINGLETON, Kind.OPTIONAL, Kind.KEYED_SINGLETON


@dataclass(frozen=True)
class Op:
    """One operator call and the node it must build."""

    node: type[Node]
    variant: str
    build: Callable[[W], object]
    kind: Kind
    at: str
    bounded: bool
    ordered: bool
    elem: Any = ANY
    key: Any = ANY
    inputs: tuple[type[Node], ...] = ()
    fields: Callable[[W], dict[str, Any]] = field(default=lambda w: {})

    def __str__(self) -> str:
        return f"{self.node.__name__}-{self.variant}"


# Node classes that only compiler passes create (none yet): they need no row in OPS.
PASS_ONLY: frozenset[type[Node]] = frozenset()


def built(op: Op) -> tuple[W, Node]:
    """Build the operator in a fresh world; resolve sinks and cycle sinks through finalize()."""
    w = W()
    result = op.build(w)
    if isinstance(result, Live):
        return w, result.node
    flow = w.flow.finalize()
    if isinstance(result, SinkPort):
        return w, flow.sinks[result.name]
    assert result is None, result
    return w, flow.roots[-1]
