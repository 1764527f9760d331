"""Random well-typed hydrolite programs, generated as Python source from the public API.

A program is a list of statements over a pool of typed variables (top-level and tick
streams of ints or pairs, keyed streams, singletons, keyed singletons). Each step picks an
operator whose input kinds exist in the pool and appends its result; the program ends with
sinks on some of the variables. The output is the text of a module with `build()` — the
shrunk reproducer of a divergence is a program a person can read, run and keep as a test.

Choices come through `Draw` (Hypothesis's `data.draw` in tests, `random.Random` in the
long run script), so the same generator serves both and Hypothesis can shrink it.
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

X = TypeVar("X")

# Functions the programs use: some translate to native Spark Columns, some run in Python
# (Arrow). All are total on the values they can meet (small ints, pairs of ints).
#: int -> int maps (each drawn into `.map(...)`); the last is two steps: `bool_or_int` returns
#: `True` for some elements (Python keeps it; a Spark column of int between the two steps would
#: read it back as `1`) and `len(str(x))` turns that difference into a value (4 against 1), which
#: the differential's `==` can see (`1 == True` cannot)
INT_MAPS = [
    "lambda x: x + 1",
    "lambda x: x * 2",
    "lambda x: x % 5",
    "lambda x: -x",
    "lambda x: x // 3",
    "digit_sum",
    "bool_or_int).map(lambda x: len(str(x))",
    "int_forms",
]
INT_FILTERS = ["lambda x: x % 2 == 0", "lambda x: x > 3", "odd_py"]
INT_FILTER_MAPS = ["lambda x: x - 1 if x % 3 else None", "halve_even"]
INT_FLAT_MAPS = ["lambda x: [x, x + 10]", "lambda x: range(int(x) % 3)", "digits"]
#: (init, function[, acc_type=], commutative); the last two declare their accumulator: `float`
#: over an int init (every backend holds each accumulator as that float), and `int | float`
#: (values of two kinds, kept pickled, each exactly: halves once an element `x % 4 == 1` came)
FOLDS = [
    ("0", "lambda a, x: a * 3 + x", False),
    ("0", "lambda a, x: a + x", True),
    ("1", "lambda a, x: max(a, x)", True),
    ("0", "mix_py", False),
    ("0", "lambda a, x: a + x, acc_type=float", True),
    ("0", "lambda a, x: a + x / 2 if x % 4 == 1 else a + x, acc_type=int | float", True),
]
REDUCES = [("lambda a, b: a + b", True), ("lambda a, b: max(a, b)", True), ("lambda a, b: a * 2 - b", False)]
TO_PAIR = ["lambda x: (x % 3, x)", "lambda x: (x % 2, x * 10)", "key_py", "key_forms", "key_objects"]
PAIR_TO_INT = ["lambda t: t[0] + t[1]", "lambda t: t[0] * 100 + t[1]", "pair_py"]
STR_MAPS = ["lambda s: s + 'x'", "lambda s: s.upper()", "lambda s: s[::-1]"]
STR_FILTERS = ["lambda s: s < 'm'", "lambda s: 'a' in s", "lambda s: len(s) > 1"]
STR_TO_INT = ["lambda s: len(s)", "lambda s: ord(s[0]) % 7 if s else 0"]
KEYED_MAPS = ["lambda v: v + 1", "lambda v: v * 3", "digit_sum"]

HELPERS = (
    "from tests.differential.gen_helpers import bool_or_int, digit_sum, digits, halve_even, int_forms, key_forms, "
    "key_objects, key_py, mix_py, odd_py, pair_py\n"
)


class Draw(ABC):
    """Where the generator's choices come from."""

    @abstractmethod
    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""

    def choice(self, items: Sequence[X]) -> X:
        return items[self.int(0, len(items) - 1)]

    def bool(self) -> bool:
        return self.int(0, 1) == 1


class RandomDraw(Draw):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class HypothesisDraw(Draw):
    def __init__(self, data: Any) -> None:
        self.data = data

    def int(self, lo: int, hi: int) -> int:
        from hypothesis import strategies as st

        v: int = self.data.draw(st.integers(lo, hi))
        return v


@dataclass
class Var:
    """A variable of the generated program: its name and what it holds."""

    name: str
    kind: str  # "stream" | "keyed" | "single" | "ksingle"
    tick: str | None  # the tick variable it lives in, None at top level
    elem: str = "int"  # "int" | "str" (streams), "int" (others)
    key: str = "int"  # key type of keyed collections: "int" | "str"
    ordered: bool = True
    source: str | None = None  # the top-level source it derives from (for align points)
    # ticks whose outputs (all_ticks(), latest()) it derives from through the top level: such a
    # tick may not read it back (the Spark planner refuses that; `stages._check_no_self_feedback`)
    exits: frozenset[str] = frozenset()
    # derives from a singleton turned into a stream, which has an element in every run of its
    # tick: a tick cycle seeded by it would never settle (each run feeds the next)
    every_tick: bool = False


@dataclass
class Program:
    """The generated statements and the variables they define."""

    lines: list[str] = field(default_factory=list)
    vars: list[Var] = field(default_factory=list)
    sinks: list[str] = field(default_factory=list)
    counter: int = 0

    def new(self, expr: str, kind: str, tick: str | None, **kw: Any) -> Var:
        self.counter += 1
        # the ticks whose outputs the variables it reads derive from, through any tick in between
        # (a tick's value from a stream that left t1 may not be read back by t1 either)
        names = set(re.findall(r"\b(v\d+|xs|ys|ks|ws)\b", expr))
        inherited = frozenset().union(*(v.exits for v in self.vars if v.name in names))
        kw["exits"] = inherited | kw.get("exits", frozenset())
        kw["every_tick"] = kw.get("every_tick", False) or any(v.every_tick for v in self.vars if v.name in names)
        v = Var(f"v{self.counter}", kind, tick, **kw)
        self.lines.append(f"{v.name} = {expr}")
        self.vars.append(v)
        return v

    def pick(self, d: Draw, pred: Callable[[Var], bool]) -> Var | None:
        found = [v for v in self.vars if pred(v)]
        return d.choice(found) if found else None

    def source(self) -> str:
        body = "\n".join(f"    {line}" for line in self.lines)
        return (
            '"""A generated program (differential test)."""\n\n# ruff: noqa: F401, F841  (generated: unused helpers and variables are normal)\n\nfrom __future__ import annotations\n\n'
            "import hydrolite as hl\nfrom hydrolite import nondet\n"
            f'{HELPERS}\n\nclass P:\n    """The generated program\'s process."""\n\n\nND = nondet("generated: any batching is legal")\n\n\n'
            f"def build() -> hl.Flow:\n{body}\n    return flow.finalize()\n"
        )


def _top_stream(v: Var) -> bool:
    return v.kind == "stream" and v.tick is None


def generate(d: Draw, max_ops: int = 8, store: bool = False) -> Program:
    """A random program: sources, then up to `max_ops` operators, then sinks. With `store`,
    it always has a keyed store read per key (whose state Spark keeps on the executors)."""
    prog = Program()
    prog.lines += ['flow = hl.FlowBuilder("gen")', "p = flow.process(P)", "t1 = p.tick()"]
    ticks = [f"t{i}" for i in range(1, d.int(1, 3) + 1)]  # three: queries chained through two channels
    prog.lines += [f"{t} = p.tick()" for t in ticks[1:]]
    prog.lines.append('xs = p.source("xs", int)')
    prog.vars.append(Var("xs", "stream", None, source="xs"))
    if d.bool():
        prog.lines.append('ys = p.source("ys", int)')
        prog.vars.append(Var("ys", "stream", None, source="ys"))
    if d.bool():
        prog.lines.append('ks = p.keyed_source("ks", str, int)')
        prog.vars.append(Var("ks", "keyed", None, source="ks", key="str"))
    if d.int(0, 2) == 0:
        prog.lines.append('ws = p.source("ws", str)')
        prog.vars.append(Var("ws", "stream", None, elem="str", source="ws"))
    if store:
        prog.lines.append("al = p.local_align_point()")
        prog.sinks.append('xs.release_aligned(al).sink("ack")')
        from .progen_store import keyed_store  # (it imports this module's pool)

        keyed_store(prog, d, prog.vars[0], per_key=True)
    elif d.bool():
        _aligned_pattern(prog, d)
    if len(ticks) > 1 and d.int(0, 3) == 0:
        _relay(prog, d, ticks)
    for _ in range(d.int(1, max_ops)):
        _one_op(prog, d, ticks)
    _sinks(prog, d)
    return prog


def _relay(prog: Program, d: Draw, ticks: list[str]) -> None:
    """A stream relayed through every tick in turn: each tick is a query of its own, joined
    to the next by a channel, so the middle ones both read and write one (a chain of
    queries; a gap in a channel once stopped such a chain silently)."""
    v = prog.pick(d, lambda v: _top_stream(v) and v.elem == "int" and not v.exits)
    if v is None:
        return
    for t in ticks:
        inside = prog.new(f"{v.name}.batch({t}, ND).map({d.choice(INT_MAPS)})", "stream", t, ordered=v.ordered)
        v = prog.new(f"{inside.name}.all_ticks()", "stream", None, ordered=v.ordered, exits=frozenset({t}))


def _aligned_pattern(prog: Program, d: Draw) -> None:
    """The align-point pattern: state of a source read consistently with its releases.

    The state is one of: a fold and a count (zipped), a keyed fold, or a stream with state
    over time (unique / enumerate) batched at the point and paired with a count. The
    alignment pass moves it into t1 as *carried* nodes, whose state must survive batches."""
    src = prog.pick(d, lambda v: _top_stream(v) and v.source is not None and v.elem == "int")
    assert src is not None
    prog.lines.append("al = p.local_align_point()")
    explicit = d.int(0, 2) == 0  # explicit mode: only what is tagged at the point is aligned
    if explicit:
        src = prog.new(f"{src.name}.aligned_at(al)", "stream", None, source=src.source, ordered=src.ordered)
    # released as t1 runs at the point: t1 reading it back would read its own output
    rel = prog.new(f"{src.name}.release_aligned(al)", "stream", None, source=src.source, exits=frozenset({"t1"}))
    prog.sinks.append(f'{rel.name}.sink("ack")')
    cnt = prog.new(f"{src.name}.count()", "single", None)
    c = prog.new(f"{cnt.name}.snapshot_aligned(t1, al, ND)", "single", "t1")
    what = d.int(0, 3)
    if what == 3:
        from .progen_store import keyed_store  # (it imports this module's pool)

        keyed_store(prog, d, src)
    elif what == 0:
        init, f, comm = d.choice(FOLDS)
        acc = prog.new(f"{src.name}.fold{'_commutative' if comm else ''}({init}, {f})", "single", None)
        if explicit and d.bool():  # a singleton tagged too
            acc = prog.new(f"{acc.name}.aligned_at(al)", "single", None)
        a = prog.new(f"{acc.name}.snapshot_aligned(t1, al, ND)", "single", "t1")
        out = prog.new(f"{a.name}.zip({c.name}).map(lambda t: t[0] * 1000 + t[1])", "single", "t1")
        prog.sinks.append(f'{out.name}.into_stream().all_ticks().sink("aligned")')
    elif what == 1:
        # the fold's input: the source, or a merge of it with a map of itself (one chain per side
        # folded into one executor state: `placement._Finder.chains`)
        fed = f"{src.name}.merge_unordered({src.name}.map({d.choice(INT_MAPS)}))" if d.bool() else src.name
        kf = prog.new(
            f"{fed}.map({d.choice(TO_PAIR)}).into_keyed().fold_commutative(0, lambda a, x: a + x)", "ksingle", None
        )
        if explicit and d.bool():  # a keyed singleton tagged too
            kf = prog.new(f"{kf.name}.aligned_at(al)", "ksingle", None)
        k = prog.new(f"{kf.name}.snapshot_aligned(t1, al, ND)", "ksingle", "t1")
        prog.sinks.append(f'{k.name}.entries().all_ticks().sink("aligned")')
    else:
        over = d.choice(["unique()", "enumerate().map(lambda t: t[0] * 100 + t[1])", "keyed"])
        if over == "keyed":  # a keyed stream batched at the point
            ku = prog.new(f"{src.name}.map({d.choice(TO_PAIR)}).into_keyed()", "keyed", None, source=src.source)
            kb = prog.new(f"{ku.name}.batch_aligned(t1, al, ND)", "keyed", "t1")
            b = prog.new(f"{kb.name}.entries().map(lambda t: t[0] * 100 + t[1])", "stream", "t1", ordered=False)
        else:
            u = prog.new(f"{src.name}.{over}", "stream", None, source=src.source)
            b = prog.new(f"{u.name}.batch_aligned(t1, al, ND)", "stream", "t1")
        out = prog.new(
            f"{b.name}.cross_singleton({c.name}).map(lambda t: t[0] * 1000 + t[1])", "stream", "t1", ordered=b.ordered
        )
        prog.sinks.append(f'{out.name}.all_ticks().sink("aligned")')


def _one_op(prog: Program, d: Draw, ticks: list[str]) -> None:
    from .progen_more import EXTRA_OPS, extra_op  # (it imports this module's pool and functions)

    op = d.int(0, EXTRA_OPS[-1])
    tick = d.choice(ticks)
    if op in EXTRA_OPS:
        extra_op(prog, d, op, ticks)
    elif op == 0:  # element-wise on an int stream (top level or tick)
        v = prog.pick(d, lambda v: v.kind == "stream" and v.elem == "int")
        if v is None:
            return
        what = d.int(0, 4)
        other = prog.pick(d, lambda o: _top_stream(o) and o.elem == "int")
        if what == 4 and v.tick is None and other is not None and d.bool():
            # a top-level cross product or join: both sides' whole history, on the executors (per key
            # in Spark's state when both are chains from the query's inputs, else as Parquet: history.py)
            if d.bool():
                expr = f"{v.name}.cross_product({other.name}).map(lambda t: t[0] * 10 + t[1])"
            else:
                left, right = d.choice(TO_PAIR), d.choice(TO_PAIR)
                expr = (
                    f"{v.name}.map({left}).join({other.name}.map({right})).map(lambda t: t[0] + t[1][0] * 3 + t[1][1])"
                )
            prog.new(expr, "stream", None, ordered=False)
        elif what == 4 and v.tick is None:  # a top-level anti_join: its keys are literals, whole in every batch
            keys = sorted({d.int(0, 5) for _ in range(d.int(1, 3))})
            prog.new(
                f"{v.name}.map({d.choice(TO_PAIR)}).anti_join(p.source_iter({keys}).map(lambda x: x % 3))"
                ".map(lambda t: t[1])",
                "stream",
                None,
                ordered=v.ordered,
            )
        elif what == 0 or what == 4:
            prog.new(f"{v.name}.map({d.choice(INT_MAPS)})", "stream", v.tick, ordered=v.ordered, source=v.source)
        elif what == 1:
            prog.new(f"{v.name}.filter({d.choice(INT_FILTERS)})", "stream", v.tick, ordered=v.ordered, source=v.source)
        elif what == 2:
            prog.new(
                f"{v.name}.filter_map({d.choice(INT_FILTER_MAPS)})",
                "stream",
                v.tick,
                ordered=v.ordered,
                source=v.source,
            )
        else:
            prog.new(
                f"{v.name}.flat_map_ordered({d.choice(INT_FLAT_MAPS)})",
                "stream",
                v.tick,
                ordered=v.ordered,
                source=v.source,
            )
    elif op == 1:  # into a tick
        v = prog.pick(d, lambda v: _top_stream(v) and tick not in v.exits)
        if v is None:
            return
        if v.kind == "stream":
            prog.new(f"{v.name}.batch({tick}, ND)", "stream", tick, elem=v.elem, ordered=v.ordered)
    elif op == 2:  # aggregate a stream into a singleton
        v = prog.pick(d, lambda v: v.kind == "stream" and v.elem == "int")
        if v is None:
            return
        what = d.int(0, 4)
        if what == 0:
            init, f, comm = d.choice(FOLDS)
            if not comm and not v.ordered:
                comm = True
            prog.new(f"{v.name}.fold{'_commutative' if comm else ''}({init}, {f})", "single", v.tick)
        elif what == 1:
            prog.new(f"{v.name}.count()", "single", v.tick)
        elif what == 2:
            f, comm = d.choice(REDUCES)
            comm = comm or not v.ordered
            prog.new(f"{v.name}.reduce{'_commutative' if comm else ''}({f}).unwrap_or(-1)", "single", v.tick)
        elif what == 3 and v.ordered:
            prog.new(f"{v.name}.{d.choice(['first', 'last'])}().unwrap_or(-1)", "single", v.tick)
        else:
            prog.new(f"{v.name}.count()", "single", v.tick)
    elif op == 3:  # a top-level singleton read by a tick
        v = prog.pick(d, lambda v: v.kind == "single" and v.tick is None and tick not in v.exits)
        if v is not None:
            prog.new(f"{v.name}.snapshot({tick}, ND)", "single", tick)
    elif op == 4:  # stream x singleton in a tick
        s = prog.pick(d, lambda v: v.kind == "stream" and v.tick is not None and v.elem == "int")
        g = prog.pick(d, lambda v: v.kind == "single" and s is not None and v.tick == s.tick)
        if s is not None and g is not None:
            prog.new(
                f"{s.name}.cross_singleton({g.name}).map(lambda t: t[0] * 7 + t[1])",
                "stream",
                s.tick,
                ordered=s.ordered,
            )
    elif op == 5:  # two tick streams combined
        a = prog.pick(d, lambda v: v.kind == "stream" and v.tick is not None and v.elem == "int")
        b = prog.pick(
            d, lambda v: a is not None and v.kind == "stream" and v.tick == a.tick and v.elem == "int" and v is not a
        )
        if a is None or b is None:
            return
        what = d.int(0, 3)
        if what == 0 and a.ordered and b.ordered:
            prog.new(f"{a.name}.chain({b.name})", "stream", a.tick)
        elif what == 1:
            prog.new(f"{a.name}.merge_unordered({b.name})", "stream", a.tick, ordered=False)
        elif what == 2:
            prog.new(
                f"{a.name}.cross_product({b.name}).map(lambda t: t[0] * 10 + t[1])", "stream", a.tick, ordered=False
            )
        else:
            ka = f"{a.name}.map({d.choice(TO_PAIR)})"
            kb = f"{b.name}.map({d.choice(TO_PAIR)})"
            if d.bool():
                prog.new(
                    f"{ka}.join({kb}).map(lambda t: t[0] + t[1][0] * 3 + t[1][1])", "stream", a.tick, ordered=False
                )
            else:
                prog.new(
                    f"{ka}.anti_join({b.name}.map(lambda x: x % 3)).map(lambda t: t[1])",
                    "stream",
                    a.tick,
                    ordered=a.ordered,
                )
    elif op == 6:  # per-tick reshaping
        v = prog.pick(d, lambda v: v.kind == "stream" and v.tick is not None and v.elem == "int")
        if v is None:
            return
        what = d.int(0, 3)
        if what == 0:
            prog.new(f"{v.name}.sort()", "stream", v.tick)
        elif what == 1:
            prog.new(f"{v.name}.unique()", "stream", v.tick, ordered=v.ordered)
        elif what == 2 and v.ordered:
            prog.new(f"{v.name}.enumerate().map(lambda t: t[0] * 100 + t[1])", "stream", v.tick)
        else:
            prog.new(f"{v.name}.defer_tick()", "stream", v.tick, ordered=v.ordered)
    elif op == 7:  # top-level unique / enumerate (state over time)
        v = prog.pick(d, lambda v: _top_stream(v) and v.elem == "int")
        if v is None:
            return
        if d.bool() or not v.ordered:
            prog.new(f"{v.name}.unique()", "stream", None, ordered=v.ordered, source=v.source)
        else:
            prog.new(f"{v.name}.enumerate().map(lambda t: t[0] * 100 + t[1])", "stream", None, source=v.source)
    elif op == 8:  # keyed streams
        v = prog.pick(d, lambda v: v.kind == "stream" and v.elem == "int")
        if v is not None:
            prog.new(
                f"{v.name}.map({d.choice(TO_PAIR)}).into_keyed()", "keyed", v.tick, ordered=v.ordered, source=v.source
            )
    elif op == 14:  # two tick singletons
        a = prog.pick(d, lambda v: v.kind == "single" and v.tick is not None)
        b = prog.pick(d, lambda v: a is not None and v.kind == "single" and v.tick == a.tick)
        if a is not None and b is not None:
            prog.new(f"{a.name}.zip({b.name}).map(lambda t: t[0] * 10 + t[1])", "single", a.tick)
    elif op == 15:  # keyed streams: per-key order and state
        v = prog.pick(d, lambda v: v.kind == "keyed")
        if v is None:
            return
        what = d.int(0, 4)
        if what == 0:
            prog.new(f"{v.name}.unique()", "keyed", v.tick, ordered=v.ordered, source=v.source, key=v.key)
        elif what == 1 and v.ordered:
            prog.new(
                f"{v.name}.enumerate().map(lambda t: t[0] * 100 + t[1])", "keyed", v.tick, source=v.source, key=v.key
            )
        elif what == 2:
            f, comm = d.choice(REDUCES)
            comm = comm or not v.ordered
            prog.new(f"{v.name}.reduce{'_commutative' if comm else ''}({f})", "ksingle", v.tick, key=v.key)
        elif what == 4:  # a value map keeps the keys: what counts them counts its input's (native_state.py)
            kw = {"ordered": v.ordered, "source": v.source, "key": v.key}
            mapped = prog.new(f"{v.name}.map(lambda x: x * 3 + 1)", "keyed", v.tick, **kw)
            if d.bool():  # the keys (over time at top level: a state)
                prog.new(f"{mapped.name}.keys()", "stream", v.tick, elem=v.key, ordered=False)
        elif v.ordered:
            prog.new(f"{v.name}.{d.choice(['first', 'last'])}()", "ksingle", v.tick, key=v.key)
    elif op == 16:  # a stream carried to the next run by a tick cycle
        v = prog.pick(
            d,
            lambda v: v.kind == "stream" and v.tick is not None and v.elem == "int" and v.ordered and not v.every_tick,
        )
        if v is None:
            return
        prog.counter += 1
        h, pend = f"hc{prog.counter}", f"pend{prog.counter}"
        prog.lines.append(f"{h}, {pend} = {v.tick}.stream_cycle(int)")
        both = prog.new(f"{v.name}.chain({pend})", "stream", v.tick)
        prog.lines.append(f"{h}.complete_next_tick({both.name}.map(lambda x: x + 5).filter(lambda x: x < 20))")
    elif op == 17:  # strings
        v = prog.pick(d, lambda v: v.kind == "stream" and v.elem == "str")
        if v is None:
            return
        what = d.int(0, 2)
        if what == 0:
            prog.new(
                f"{v.name}.map({d.choice(STR_MAPS)})", "stream", v.tick, elem="str", ordered=v.ordered, source=v.source
            )
        elif what == 1:
            prog.new(
                f"{v.name}.filter({d.choice(STR_FILTERS)})",
                "stream",
                v.tick,
                elem="str",
                ordered=v.ordered,
                source=v.source,
            )
        else:
            prog.new(f"{v.name}.map({d.choice(STR_TO_INT)})", "stream", v.tick, ordered=v.ordered, source=v.source)
    elif op == 9:  # keyed aggregation into a keyed singleton
        v = prog.pick(d, lambda v: v.kind == "keyed")
        if v is None:
            return
        what = d.int(0, 2)
        if what == 0:
            init, f, comm = d.choice(FOLDS)
            comm = comm or not v.ordered
            prog.new(f"{v.name}.fold{'_commutative' if comm else ''}({init}, {f})", "ksingle", v.tick, key=v.key)
        elif what == 1:
            prog.new(f"{v.name}.count()", "ksingle", v.tick, key=v.key)
        else:
            prog.new(
                f"{v.name}.map({d.choice(KEYED_MAPS)})", "keyed", v.tick, ordered=v.ordered, source=v.source, key=v.key
            )
    elif op == 10:  # keyed singletons read in a tick
        v = prog.pick(d, lambda v: v.kind == "ksingle" and v.tick is None and tick not in v.exits)
        if v is not None:
            prog.new(f"{v.name}.snapshot({tick}, ND)", "ksingle", tick, key=v.key)
    elif op == 11:  # keyed lookups in a tick
        ks = prog.pick(d, lambda v: v.kind == "ksingle" and v.tick is not None and v.key == "int")
        if ks is None:
            return
        if d.bool():  # KeyedSingleton.get with a key computed in the tick
            key = prog.pick(d, lambda v: v.kind == "single" and v.tick == ks.tick)
            if key is not None:
                prog.new(f"{ks.name}.get({key.name}.map(lambda x: x % 3)).unwrap_or(-1)", "single", ks.tick)
            return
        src = prog.pick(d, lambda v: v.kind == "stream" and v.tick == ks.tick and v.elem == "int")
        if src is None:
            return
        keyed = f"{src.name}.map({d.choice(TO_PAIR)}).into_keyed()"
        prog.new(
            f"{keyed}.lookup_keyed_singleton({ks.name}).entries().map(lambda t: t[0] * 1000 + t[1][0] + (t[1][1] or 0))",
            "stream",
            ks.tick,
            ordered=False,
        )
    elif op == 12:  # leave a tick: a stream's elements (a channel when batched into another tick) or a singleton
        if d.bool():
            s = prog.pick(d, lambda v: v.kind == "stream" and v.tick is not None)
            if s is not None:
                prog.new(
                    f"{s.name}.all_ticks()", "stream", None, elem=s.elem, ordered=s.ordered, exits=frozenset({s.tick})
                )
            return
        v = prog.pick(d, lambda v: v.kind in ("single", "ksingle") and v.tick is not None)
        if v is not None:  # (a keyed singleton's versions cross queries whole: channel_versions.py)
            prog.new(f"{v.name}.latest()", v.kind, None, key=v.key, exits=frozenset({v.tick}))
    else:  # a running total carried by a tick cycle
        v = prog.pick(d, lambda v: v.kind == "stream" and v.tick is not None and v.elem == "int")
        if v is None:
            return
        prog.counter += 1
        h, prev = f"h{prog.counter}", f"prev{prog.counter}"
        prog.lines.append(f"{h}, {prev} = {v.tick}.singleton_cycle(0)")
        tot = prog.new(
            f"{prev}.zip({v.name}.fold_commutative(0, lambda a, x: a + x)).map(lambda t: t[0] + t[1])", "single", v.tick
        )
        prog.lines.append(f"{h}.complete_next_tick({tot.name})")


def _sinks(prog: Program, d: Draw) -> None:
    # a top-level singleton is sunk through a snapshot into t1, which must not be one it derives from
    readable = [
        v for v in prog.vars if v.tick is not None or v.kind not in ("single", "ksingle") or "t1" not in v.exits
    ]
    candidates = [v for v in readable if v.name not in ("xs", "ys", "ks", "ws")] or prog.vars
    chosen = [v for v in candidates if d.int(0, 2) > 0] or [candidates[-1]]
    for i, v in enumerate(chosen):
        name = f"o{i}"
        if v.kind == "stream":
            tail = ".all_ticks()" if v.tick else ""
            prog.sinks.append(f'{v.name}{tail}.sink("{name}")')
        elif v.kind == "keyed":
            tail = ".all_ticks()" if v.tick else ""
            prog.sinks.append(f'{v.name}.entries(){tail}.sink("{name}")')
        elif v.kind == "single":
            if v.tick:
                prog.sinks.append(f'{v.name}.into_stream().all_ticks().sink("{name}")')
            else:
                prog.sinks.append(f'{v.name}.snapshot(t1, ND).into_stream().all_ticks().sink("{name}")')
        else:
            if v.tick:
                prog.sinks.append(f'{v.name}.entries().all_ticks().sink("{name}")')
            else:
                prog.sinks.append(f'{v.name}.snapshot(t1, ND).entries().all_ticks().sink("{name}")')
    prog.lines.extend(prog.sinks)


def inputs(d: Draw, ports: Sequence[str], steps: int = 4) -> list[dict[str, list[Any]]]:
    """Random inputs split into steps (each step is written, then Spark processes it)."""
    out: list[dict[str, list[Any]]] = []
    for _ in range(d.int(2, steps)):
        step: dict[str, list[Any]] = {}
        for port in ports:
            n = d.int(0, 4)
            if port == "ks":
                step[port] = [(d.choice("abc"), d.int(0, 9)) for _ in range(n)]
            elif port == "ws":
                step[port] = ["".join(d.choice("abmz") for _ in range(d.int(0, 3))) for _ in range(n)]
            else:
                step[port] = [d.int(0, 12) for _ in range(n)]
        out.append(step)
    return out
