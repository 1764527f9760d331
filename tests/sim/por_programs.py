"""Small random programs with network actions, for the partial-order-reduction brute force.

`tests/differential/progen.py` generates programs on one process, where the scheduler's
only actions are tick runs. These programs put the actions reduction reorders side by side:
two client processes and a 2-member cluster send (key, value) pairs and replies to a server,
through paths that keep or change keys (keyed maps, filters, merges, entries/into_keyed, a
map of the whole pair), into consumers that read per key or not: keyed and NoOrder batches,
keyed folds read by whole-map or per-key snapshots, counts, top-level assume_ordering,
sinks. The generator writes the program as source text (`Generated.source`), so a
failure prints a program a person can read.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any

import hydrolite as hl
from tests.differential.progen import Draw

PAIR_FILTERS = ["lambda kv: kv[1] % 3 != 1", "lambda kv: kv[0] != 'y'"]
VALUE_MAPS = ["lambda v: v + 1", "lambda v: v * 2"]
REKEY = "lambda kv: (kv[1] % 3, kv[1])"  # a map of the whole pair: the key changes


@dataclass
class Var:
    """A top-level collection on the server: `pairs` (Stream of (key, value)), `keyed`, or `ints`."""

    name: str
    kind: str
    ordered: bool


@dataclass
class Generated:
    """A generated program: its statements, its input ports (port -> (member, values)) and options."""

    lines: list[str] = field(default_factory=list)
    vars: list[Var] = field(default_factory=list)
    inputs: list[tuple[str, int | None, list[Any]]] = field(default_factory=list)
    sinks: int = 0
    counter: int = 0
    values: int = 0
    options: dict[str, bool] = field(default_factory=dict)

    def new(self, expr: str, kind: str, ordered: bool) -> Var:
        self.counter += 1
        v = Var(f"v{self.counter}", kind, ordered)
        self.lines.append(f"{v.name} = {expr}")
        self.vars.append(v)
        return v

    def value(self) -> int:
        """A fresh input value: powers of two, so every sum of inputs tells which ones it holds."""
        self.values += 1
        return 1 << self.values

    def sink(self, expr: str) -> None:
        self.lines.append(f'{expr}.sink("o{self.sinks}")')
        self.sinks += 1

    def source(self) -> str:
        body = "\n".join(f"    {line}" for line in self.lines)
        return (
            '"""A generated program (partial-order reduction brute force)."""\n\n'
            "import hydrolite as hl\nfrom hydrolite import nondet\n\n\n"
            "class Server:\n    pass\n\n\nclass ClientA:\n    pass\n\n\nclass ClientB:\n    pass\n\n\n"
            'class Workers:\n    pass\n\n\nND = nondet("generated: any grouping")\n\n\n'
            f"def build() -> hl.Flow:\n{body}\n    return flow.finalize()\n"
        )


def _feeds(g: Generated, d: Draw) -> None:
    """Two or three inputs reaching the server over the network (or from the test)."""
    g.lines += ['flow = hl.FlowBuilder("por")', "srv = flow.process(Server)", "t1 = srv.tick()"]
    if d.bool():
        g.lines.append("t2 = srv.tick()")
    g.lines.append("ca = flow.process(ClientA)")
    g.vars.append(Var("fa", "pairs", True))
    g.lines.append('fa = ca.source("a", tuple[str, int]).send(srv)')
    g.inputs.append(("a", None, [(d.choice("xxy"), g.value()) for _ in range(d.int(1, 2))]))
    if d.int(0, 2) > 0:
        g.lines.append('fb = flow.process(ClientB).source("b", tuple[str, int]).send(srv)')
        g.vars.append(Var("fb", "pairs", True))
        g.inputs.append(("b", None, [(d.choice("xxy"), g.value()) for _ in range(d.int(1, 2))]))
    if d.bool():
        g.lines.append("w = flow.cluster(Workers)")
        if d.bool():
            g.lines.append('fw = srv.source("job", int).broadcast(w).map(lambda j: j * 10).send(srv)')
            g.inputs.append(("job", None, [g.value()]))
        else:
            g.lines.append('fw = w.source("w", int).send(srv)')
            g.inputs.append(("w", d.int(0, 1), [g.value()]))
        g.vars.append(Var("fw", "keyed", True))
    if d.int(0, 2) == 0:
        g.lines.append('fs = srv.source("s", tuple[str, int])')
        g.vars.append(Var("fs", "pairs", True))
        g.inputs.append(("s", None, [(d.choice("xxy"), g.value())]))


def _transform(g: Generated, d: Draw) -> None:
    v = d.choice(g.vars)
    what = d.int(0, 9)
    if what == 9 and v.ordered and v.kind != "ints":  # state whose order matters: indices
        if v.kind == "keyed":
            g.new(f"{v.name}.enumerate().map(lambda iv: iv[0] * 100 + iv[1])", "keyed", True)
        else:
            g.new(f"{v.name}.enumerate().map(lambda t: (t[1][0], t[0] * 100 + t[1][1]))", "pairs", True)
    elif v.kind == "pairs":
        other = [u for u in g.vars if u.kind == "pairs" and u is not v]
        if what <= 3 and other:
            g.new(f"{v.name}.merge_unordered({d.choice(other).name})", "pairs", False)
        elif what <= 5:
            g.new(f"{v.name}.into_keyed()", "keyed", v.ordered)
        elif what == 6:
            g.new(f"{v.name}.filter({d.choice(PAIR_FILTERS)})", "pairs", v.ordered)
        elif what == 7:
            g.new(f"{v.name}.map({REKEY})", "pairs", v.ordered)
        else:
            g.new(f"{v.name}.weaken_ordering()", "pairs", False)
    elif v.kind == "keyed":
        if what <= 2:
            g.new(f"{v.name}.map({d.choice(VALUE_MAPS)})", "keyed", v.ordered)
        elif what <= 4:
            g.new(f"{v.name}.entries()", "pairs", False)
        elif what == 5:
            g.new(f"{v.name}.filter(lambda v: v % 3 != 1)", "keyed", v.ordered)
        elif what == 6:
            g.new(f"{v.name}.unique()", "keyed", v.ordered)
        else:
            g.new(f"{v.name}.values()", "ints", False)


def _consume(g: Generated, d: Draw, ticks: list[str]) -> None:
    v = d.choice(g.vars)
    t = d.choice(ticks)
    what = d.int(0, 7)
    if what <= 1:  # into a tick, out to a sink
        b = f"{v.name}.batch({t}, ND)"
        if v.kind == "keyed":
            b += ".entries()" if d.bool() else ".fold_commutative(0, lambda a, x: a + x).entries()"
        elif d.bool():
            b += ".count().into_stream()"
        g.sink(f"{b}.all_ticks()")
    elif what <= 4 and v.kind in ("keyed", "pairs"):  # a keyed aggregate read by a snapshot
        keyed = v.name if v.kind == "keyed" else f"{v.name}.into_keyed()"
        agg = d.choice(
            ["count()", "fold_commutative(0, lambda a, x: a + x)", "fold_commutative(0, lambda a, x: a + x)"]
        )
        if v.ordered and d.bool():
            agg = d.choice(["fold(0, lambda a, x: a * 3 + x)", "last()"])
        table = g.new(f"{keyed}.{agg}", "table", True)
        g.sink(f"{table.name}.snapshot({t}, ND).entries().all_ticks()")
    elif what == 5:  # a count read by a snapshot
        stream = f"{v.name}.entries()" if v.kind == "keyed" else v.name
        g.sink(f"{stream}.count().snapshot({t}, ND).into_stream().all_ticks()")
    elif what == 6 and v.kind != "keyed":  # a top-level assume_ordering
        g.sink(f"{v.name}.weaken_ordering().assume_ordering(ND)")
    else:
        g.sink(v.name if v.kind != "keyed" else f"{v.name}.entries()")


def generate(d: Draw) -> Generated:
    """A random program with network feeds, transforms and consumers on the server."""
    g = Generated()
    _feeds(g, d)
    for _ in range(d.int(1, 4)):
        _transform(g, d)
    g.vars = [v for v in g.vars if v.kind != "table"]
    ticks = ["t1", "t2"] if "t2 = srv.tick()" in g.lines else ["t1"]
    for _ in range(d.int(1, 3)):
        _consume(g, d, ticks)
        g.vars = [v for v in g.vars if v.kind != "table"]
    g.options = {"interleavings": d.int(0, 3) == 0, "per_key_snapshots": d.bool()}
    return g


def load(source: str) -> hl.Flow:
    """Build the program whose module text is `source`."""
    module = types.ModuleType(f"por_generated_{abs(hash(source))}")
    sys.modules[module.__name__] = module
    exec(compile(source, f"{module.__name__}.py", "exec"), module.__dict__)
    flow: hl.Flow = module.build()
    return flow
