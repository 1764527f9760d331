"""`FlowBuilder`: creates locations, collects ports and roots, and finishes a `Flow`."""

from __future__ import annotations

from typing import Any

from .._site import CallSite, capture_site
from ..errors import BuildError, FlowError
from ..ir import nodes as n
from ..ir.graph import AlignPointInfo, Flow
from ..ir.ids import AlignId, ClusterId, CycleId, ProcessId, TickId, TopId
from ..ir.stable import duplicate_names
from .locations import Cluster, Process, T, Tag


class FlowBuilder:
    """The entry point of a program: `flow = FlowBuilder(); server = flow.process(Server)`."""

    def __init__(self, name: str = "flow") -> None:
        self.name = name
        self._tags: dict[str, CallSite] = {}
        self._locs: int = 0
        self._ticks: list[TickId] = []
        self._aligns: list[AlignPointInfo] = []
        self._cycles: dict[CycleId, CallSite] = {}
        self._completed: set[CycleId] = set()
        self._sources: dict[str, n.Source] = {}
        self._sinks: dict[str, n.Sink] = {}
        self._roots: list[n.Node] = []
        self._finished = False

    # ------------------------------------------------------------- locations
    def process(self, tag: type[Tag]) -> Process[Tag]:
        """The process named by the tag class.

        >>> import hydrolite as hl
        >>> class Server: ...
        >>> hl.FlowBuilder().process(Server)
        <Process[Server]>
        """
        return Process(self, ProcessId(self._claim_tag(tag), self._next_loc()))

    def cluster(self, tag: type[Tag]) -> Cluster[Tag]:
        """The cluster named by the tag class.

        >>> import hydrolite as hl
        >>> class Workers: ...
        >>> hl.FlowBuilder().cluster(Workers)
        <Cluster[Workers]>
        """
        return Cluster(self, ClusterId(self._claim_tag(tag), self._next_loc()))

    def _claim_tag(self, tag: Any) -> str:
        self._check_open()
        name = getattr(tag, "__qualname__", None)
        if not isinstance(tag, type) or name is None:
            raise BuildError(
                "process()/cluster()",
                required="a tag class naming the location",
                found=f"{type(tag).__name__} {tag!r}",
                fix="declare `class Server: ...` and call flow.process(Server)",
            )
        if name in self._tags:
            raise FlowError(
                f"tag {name} already names a location (created at {self._tags[name]})",
                fix="use one tag class per location, so their types differ",
            )
        self._tags[name] = capture_site()
        return str(name)

    def _next_loc(self) -> int:
        self._locs += 1
        return self._locs - 1

    def _new_tick(self, outer: TopId, site: CallSite) -> TickId:
        self._check_open()
        tick = TickId(outer, len(self._ticks))
        self._ticks.append(tick)
        return tick

    def _new_align(self, loc: TopId, site: CallSite) -> AlignId:
        self._check_open()
        aid = AlignId(loc, len(self._aligns))
        self._aligns.append(AlignPointInfo(aid, site))
        return aid

    def _new_cycle(self, tick: TickId, site: CallSite) -> CycleId:
        self._check_open()
        cid = CycleId(tick, len(self._cycles))
        self._cycles[cid] = site
        return cid

    # ------------------------------------------------------------- ports and roots
    def _register_source(self, node: n.Source) -> None:
        self._check_open()
        if node.port in self._sources:
            raise FlowError(
                f"source port {node.port!r} is declared twice (first at {self._sources[node.port].site})",
                site=node.site,
                fix="give every input port its own name, or reuse the first stream",
            )
        self._sources[node.port] = node

    def _register_sink(self, node: n.Sink) -> None:
        self._check_open()
        if node.port in self._sinks:
            raise FlowError(
                f"sink port {node.port!r} is declared twice (first at {self._sinks[node.port].site})",
                site=node.site,
                fix="give every output port its own name, or merge the streams before one sink",
            )
        self._sinks[node.port] = node
        self._roots.append(node)

    def _complete_cycle(self, node: n.CycleSink) -> None:
        self._check_open()
        if node.cycle in self._completed:
            raise FlowError(
                f"{node.cycle} (created at {self._cycles[node.cycle]}) is completed twice",
                site=node.site,
                fix="complete each cycle handle exactly once",
            )
        self._completed.add(node.cycle)
        self._roots.append(node)

    def _check_open(self) -> None:
        if self._finished:
            raise FlowError(
                f"flow {self.name!r} is already finalized",
                fix="build the whole program before calling finalize(), or start a new FlowBuilder",
            )

    # ------------------------------------------------------------- finishing
    def finalize(self) -> Flow:
        """Check the program is complete and return its immutable IR (once).

        >>> import hydrolite as hl
        >>> class Server: ...
        >>> flow = hl.FlowBuilder("echo")
        >>> port = flow.process(Server).source("xs", int).sink("out")
        >>> program = flow.finalize()
        >>> sorted(program.sources), sorted(program.sinks)
        (['xs'], ['out'])
        """
        self._check_open()
        missing = [c for c in self._cycles if c not in self._completed]
        if missing:
            c = missing[0]
            raise FlowError(
                f"{c} is never completed",
                site=self._cycles[c],
                fix="call handle.complete_next_tick(collection) on the handle this call returned",
            )
        self._finished = True
        flow = Flow(
            roots=tuple(self._roots),
            sources=dict(self._sources),
            sinks=dict(self._sinks),
            ticks=tuple(self._ticks),
            align_points=tuple(self._aligns),
            name=self.name,
        )
        for name, nodes in duplicate_names(flow.nodes()):
            sites = ", ".join(f"{x.op}() at {x.site}" for x in nodes)
            raise FlowError(
                f"the operator name {name!r} is given to {len(nodes)} operators ({sites})",
                site=nodes[1].site,
                fix="give each operator its own name= (a name is the identity of its state in a checkpoint)",
            )
        return flow


__all__ = ["FlowBuilder", "T"]
