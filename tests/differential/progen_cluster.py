"""Random cluster programs for the differential test (`test_cluster_programs.py`).

Like `progen.py` (whose function pools and `Draw` it reuses), a program is a list of
statements over typed variables, but the variables live on a cluster `w` (`Cluster[W]`)
and its ticks: per-member sources `xs` / `ys`, a process `p` whose `rq` requests are
demuxed to the members (`x % 2`), whose `bc` stream is broadcast to all of them and whose
`kq` stream is keyed (`x % 5`) and sharded by key (`demux_by_key`); the
operators are those the Spark planner lifts exactly (element-wise, batches, aggregates,
snapshots paired with tick streams, keyed state and lookups, per-tick reshaping, stream
cycles); sinks are per-member cluster sinks and gathers of tick streams back to `p`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.differential.progen import (
    FOLDS,
    HELPERS,
    INT_FILTER_MAPS,
    INT_FILTERS,
    INT_FLAT_MAPS,
    INT_MAPS,
    KEYED_MAPS,
    REDUCES,
    TO_PAIR,
    Draw,
    Program,
    Var,
)
from tests.differential.progen_more import extra_op

CLUSTER_PORTS = ("xs", "ys")
PROCESS_PORTS = ("rq", "bc", "kq")


@dataclass
class ClusterProgram:
    """A generated cluster program and the member count it is run with."""

    prog: Program
    members: int

    def source(self) -> str:
        body = "\n".join(f"    {line}" for line in self.prog.lines)
        return (
            '"""A generated cluster program (differential test)."""\n\n'
            "# ruff: noqa: F401, F841  (generated: unused helpers and variables are normal)\n\n"
            "from __future__ import annotations\n\nimport hydrolite as hl\nfrom hydrolite import MemberId, nondet\n"
            f'{HELPERS}\n\nclass P:\n    """The generated program\'s process."""\n\n\n'
            f'class W:\n    """The generated program\'s cluster ({self.members} members)."""\n\n\n'
            'ND = nondet("generated: any batching is legal")\n\n\n'
            f"def build() -> hl.Flow:\n{body}\n    return flow.finalize()\n"
        )


def _in_tick(v: Var) -> bool:
    return v.tick is not None


def generate_cluster(d: Draw, max_ops: int = 6) -> ClusterProgram:
    """A random cluster program: sources, up to `max_ops` operators, sinks."""
    prog = Program()
    members = d.int(1, 3)
    prog.lines += [
        'flow = hl.FlowBuilder("gen_cluster")',
        "p = flow.process(P)",
        "w = flow.cluster(W)",
        "t1 = w.tick()",
    ]
    prog.lines.append('xs = w.source("xs", int)')
    prog.vars.append(Var("xs", "stream", None, source="xs"))
    if d.bool():
        prog.lines.append('ys = w.source("ys", int)')
        prog.vars.append(Var("ys", "stream", None, source="ys"))
    if d.bool():  # requests routed to one member each (members 0 and 1 only: x % 2 < every size >= 2)
        route = "lambda x: (MemberId(x % 2), x)" if members >= 2 else "lambda x: (MemberId(0), x)"
        prog.lines.append(f'rq = p.source("rq", int).map({route}).demux(w)')
        prog.vars.append(Var("rq", "stream", None))
    if d.bool():
        prog.lines.append('bc = p.source("bc", int).broadcast(w)')
        prog.vars.append(Var("bc", "stream", None))
    if d.bool():  # keyed requests sharded by key (demux_by_key: a stable hash, any member count)
        prog.lines.append('kd = p.source("kq", int).map(lambda x: (x % 5, x)).into_keyed().demux_by_key(w)')
        prog.vars.append(Var("kd", "keyed", None))
    batchy: set[str] = set()  # tick values derived from batches only (their entries may be sunk)
    for _ in range(d.int(1, max_ops)):
        _one_op(prog, d, batchy)
    _sinks(prog, d, batchy)
    return ClusterProgram(prog, members)


def _one_op(prog: Program, d: Draw, batchy: set[str]) -> None:
    op = d.int(0, 12)
    if op == 12:  # singletons' and keyed streams' element-wise operators, orderings (progen_more.py)
        extra_op(prog, d, d.choice([19, 21]), ["t1"])
    elif op == 0:  # element-wise on an int stream
        v = prog.pick(d, lambda v: v.kind == "stream" and v.elem == "int")
        if v is None:
            return
        f = d.choice(
            [
                f"map({d.choice(INT_MAPS)})",
                f"filter({d.choice(INT_FILTERS)})",
                f"filter_map({d.choice(INT_FILTER_MAPS)})",
                f"flat_map_ordered({d.choice(INT_FLAT_MAPS)})",
            ]
        )
        out = prog.new(f"{v.name}.{f}", "stream", v.tick, ordered=v.ordered)
        if v.name in batchy:
            batchy.add(out.name)
    elif op == 1:  # into the tick
        v = prog.pick(d, lambda v: v.kind == "stream" and v.tick is None)
        if v is not None:
            batchy.add(prog.new(f"{v.name}.batch(t1, ND)", "stream", "t1", ordered=v.ordered).name)
    elif op == 2:  # aggregate a stream into a singleton (defaults: a fold's init, a count's 0)
        v = prog.pick(d, lambda v: v.kind == "stream" and v.elem == "int")
        if v is None:
            return
        what = d.int(0, 2)
        if what == 0:
            init, f, comm = d.choice(FOLDS)
            comm = comm or not v.ordered
            prog.new(f"{v.name}.fold{'_commutative' if comm else ''}({init}, {f})", "single", v.tick)
        elif what == 1:
            prog.new(f"{v.name}.count()", "single", v.tick)
        else:
            f, comm = d.choice(REDUCES)
            comm = comm or not v.ordered
            prog.new(f"{v.name}.reduce{'_commutative' if comm else ''}({f}).unwrap_or(-1)", "single", v.tick)
    elif op == 3:  # a top-level singleton read by the tick
        v = prog.pick(d, lambda v: v.kind == "single" and v.tick is None)
        if v is not None:
            prog.new(f"{v.name}.snapshot(t1, ND).map(lambda x: x + 1)", "single", "t1")
    elif op == 4:  # stream x singleton in the tick
        s = prog.pick(d, lambda v: v.kind == "stream" and _in_tick(v) and v.elem == "int")
        g = prog.pick(d, lambda v: v.kind == "single" and _in_tick(v))
        if s is not None and g is not None:
            out = prog.new(f"{s.name}.cross_singleton({g.name}).map(lambda t: t[0] * 7 + t[1])", "stream", "t1")
            out.ordered = s.ordered
            if s.name in batchy:
                batchy.add(out.name)
    elif op == 5:  # two tick streams combined
        a = prog.pick(d, lambda v: v.kind == "stream" and _in_tick(v) and v.elem == "int")
        b = prog.pick(
            d, lambda v: a is not None and v.kind == "stream" and _in_tick(v) and v.elem == "int" and v is not a
        )
        if a is None or b is None:
            return
        what = d.int(0, 3)
        if what == 0 and a.ordered and b.ordered:
            out = prog.new(f"{a.name}.chain({b.name})", "stream", "t1")
        elif what == 1:
            out = prog.new(f"{a.name}.merge_unordered({b.name})", "stream", "t1", ordered=False)
        elif what == 2:
            out = prog.new(
                f"{a.name}.cross_product({b.name}).map(lambda t: t[0] * 10 + t[1])", "stream", "t1", ordered=False
            )
        else:
            ka, kb = f"{a.name}.map({d.choice(TO_PAIR)})", f"{b.name}.map({d.choice(TO_PAIR)})"
            out = prog.new(
                f"{ka}.join({kb}).map(lambda t: t[0] + t[1][0] * 3 + t[1][1])", "stream", "t1", ordered=False
            )
        if a.name in batchy and b.name in batchy:
            batchy.add(out.name)
    elif op == 6:  # per-tick reshaping
        v = prog.pick(d, lambda v: v.kind == "stream" and _in_tick(v) and v.elem == "int")
        if v is None:
            return
        what = d.int(0, 3)
        if what == 0:
            out = prog.new(f"{v.name}.sort()", "stream", "t1")
        elif what == 1:
            out = prog.new(f"{v.name}.unique()", "stream", "t1", ordered=v.ordered)
        elif what == 2 and v.ordered:
            out = prog.new(f"{v.name}.enumerate().map(lambda t: t[0] * 100 + t[1])", "stream", "t1")
        else:
            prog.new(f"{v.name}.defer_tick()", "stream", "t1", ordered=v.ordered)
            return
        if v.name in batchy:
            batchy.add(out.name)
    elif op == 7:  # top-level state over time
        v = prog.pick(d, lambda v: v.kind == "stream" and v.tick is None and v.elem == "int")
        if v is None:
            return
        if d.bool() or not v.ordered:
            prog.new(f"{v.name}.unique()", "stream", None, ordered=v.ordered)
        else:
            prog.new(f"{v.name}.enumerate().map(lambda t: t[0] * 100 + t[1])", "stream", None)
    elif op == 8:  # keyed streams and keyed state
        v = prog.pick(d, lambda v: v.kind == "stream" and v.elem == "int")
        if v is None:
            return
        k = prog.new(f"{v.name}.map({d.choice(TO_PAIR)}).into_keyed()", "keyed", v.tick, ordered=v.ordered)
        if v.name in batchy:
            batchy.add(k.name)
        what = d.int(0, 3)
        if what == 0:
            out = prog.new(f"{k.name}.count()", "ksingle", k.tick)
        elif what == 1:
            init, f, comm = d.choice(FOLDS)
            comm = comm or not k.ordered
            out = prog.new(f"{k.name}.fold{'_commutative' if comm else ''}({init}, {f})", "ksingle", k.tick)
        elif what == 2:
            out = prog.new(f"{k.name}.map({d.choice(KEYED_MAPS)})", "keyed", k.tick, ordered=k.ordered)
        else:
            return
        if k.name in batchy:
            batchy.add(out.name)
    elif op == 9:  # a keyed singleton read per key in the tick
        ks = prog.pick(d, lambda v: v.kind == "ksingle")
        src = prog.pick(d, lambda v: v.kind == "stream" and _in_tick(v) and v.elem == "int")
        if ks is None or src is None:
            return
        table = ks.name if ks.tick else f"{ks.name}.snapshot(t1, ND)"
        keyed = f"{src.name}.map({d.choice(TO_PAIR)}).into_keyed()"
        expr = (
            f"{keyed}.lookup_keyed_singleton({table}).entries().map(lambda t: t[0] * 1000 + t[1][0] + (t[1][1] or 0))"
        )
        out = prog.new(expr, "stream", "t1", ordered=False)
        if src.name in batchy and ks.name in batchy:
            batchy.add(out.name)
    elif op == 10:  # keyed per-key order
        v = prog.pick(d, lambda v: v.kind == "keyed")
        if v is None:
            return
        if v.ordered and d.bool():
            out = prog.new(f"{v.name}.{d.choice(['first', 'last'])}()", "ksingle", v.tick)
        else:
            f, comm = d.choice(REDUCES)
            comm = comm or not v.ordered
            out = prog.new(f"{v.name}.reduce{'_commutative' if comm else ''}({f})", "ksingle", v.tick)
        if v.name in batchy:
            batchy.add(out.name)
    else:  # a stream carried to the next run by a tick cycle
        v = prog.pick(
            d, lambda v: v.kind == "stream" and _in_tick(v) and v.elem == "int" and v.ordered and not v.every_tick
        )
        if v is None:
            return
        prog.counter += 1
        h, pend = f"hc{prog.counter}", f"pend{prog.counter}"
        prog.lines.append(f"{h}, {pend} = t1.stream_cycle(int)")
        both = prog.new(f"{v.name}.chain({pend})", "stream", "t1")
        prog.lines.append(f"{h}.complete_next_tick({both.name}.map(lambda x: x + 5).filter(lambda x: x < 20))")


def _sinks(prog: Program, d: Draw, batchy: set[str]) -> None:
    """Per-member sinks of streams and keyed streams, keyed singletons computed from the tick's
    batches, and gathers of tick streams back to the process."""
    candidates = [v for v in prog.vars if v.name not in (*CLUSTER_PORTS, *PROCESS_PORTS)]
    chosen = [v for v in candidates if d.int(0, 2) > 0]
    for i, v in enumerate(chosen):
        name = f"o{i}"
        tail = ".all_ticks()" if v.tick else ""
        if v.kind == "stream":
            if v.tick and d.int(0, 2) == 0:  # gathered: keyed by the sending member at the process
                prog.sinks.append(f'{v.name}.all_ticks().send(p).entries().sink("{name}")')
            else:
                prog.sinks.append(f'{v.name}{tail}.sink("{name}")')
        elif v.kind == "keyed":
            prog.sinks.append(f'{v.name}.entries(){tail}.sink("{name}")')
        elif v.kind == "ksingle" and v.tick and v.name in batchy:
            prog.sinks.append(f'{v.name}.entries().all_ticks().sink("{name}")')
    if not prog.sinks:
        prog.sinks.append('xs.map(lambda x: x + 1).sink("o_last")')
    prog.lines.extend(prog.sinks)


def cluster_inputs(d: Draw, ports: Sequence[str], members: int, steps: int = 3) -> list[dict[str, list[Any]]]:
    """Random inputs split into steps: cluster ports get (member, x) records, process ports x."""
    out: list[dict[str, list[Any]]] = []
    for _ in range(d.int(1, steps)):
        step: dict[str, list[Any]] = {}
        for port in ports:
            n = d.int(0, 3)
            if port in CLUSTER_PORTS:
                step[port] = [(d.int(0, members - 1), d.int(0, 12)) for _ in range(n)]
            else:
                step[port] = [d.int(0, 12) for _ in range(n)]
        out.append(step)
    return out
