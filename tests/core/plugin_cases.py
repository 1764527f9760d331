"""Builds a program that breaks every rule of the mypy plugin's table once, per live class.

For each (class, method, rule) of `hydrolite._mypy.table.RULES` the program has one function
whose marked line calls `method` on a receiver of that class that breaks exactly this rule
and respects the others (and the runtime's earlier checks), so that mypy with the plugin
reports one error there and the build raises one BuildError there. tests/core/
test_mypy_plugin.py checks both and compares their words.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hydrolite._mypy.table import RULES, OnArg, OnSelf, Rule

STUBS = Path(__file__).resolve().parents[2] / "typing_stubs"
E = "tuple[MemberId[Workers], int]"  # generated streams carry (member, value) pairs: demux needs them
ND = "nondet(REASON)"
CODES = {
    "ordered": "hydrolite-order",
    "bounded": "hydrolite-bounded",
    "in_tick": "hydrolite-tick",
    "top": "hydrolite-tick",
    "tick_of": "hydrolite-tick",
    "comparable": "hydrolite-elem",
    "pairs": "hydrolite-elem",
    "same_location": "hydrolite-location",
    "align_of": "hydrolite-location",
    "process": "hydrolite-location",
    "cluster": "hydrolite-location",
    "nondet": "hydrolite-nondet",
}

# Receivers by class and state: top (Unbounded), btop (a finite top-level source: Bounded),
# tick, noorder, opaque (a tick of values without `<`), ints (not pairs).
_SNAP = f".snapshot(w.tick, {ND})"
RECEIVERS: dict[str, dict[str, str]] = {
    "Stream": {
        "top": f'w.server.source("r", {E})',
        "btop": "w.server.source_iter([(MemberId[Workers](0), 1)])",
        "tick": f'w.server.source("r", {E}).batch(w.tick, {ND})',
        "noorder": f'w.server.source("r", {E}).weaken_ordering()',
        "opaque": f'w.server.source("r", Opaque).batch(w.tick, {ND})',
        "ints": 'w.server.source("r", int)',
    },
    "KeyedStream": {
        "top": 'w.server.keyed_source("r", str, int)',
        "btop": 'w.server.source_iter([("a", 1)]).into_keyed()',
        "tick": f'w.server.keyed_source("r", str, int).batch(w.tick, {ND})',
        "noorder": 'w.server.keyed_source("r", str, int).weaken_ordering()',
    },
    "Singleton": {
        "top": 'w.server.source("r", int).count()',
        "btop": "w.server.source_iter([1]).count()",
        "tick": 'w.server.source("r", int).count()' + _SNAP,
    },
    "OptionalSingleton": {
        "top": 'w.server.source("r", int).first()',
        "btop": "w.server.source_iter([1]).first()",
        "tick": 'w.server.source("r", int).first()' + _SNAP,
    },
    "KeyedSingleton": {
        "top": 'w.server.keyed_source("r", str, int).count()',
        "btop": 'w.server.source_iter([("a", 1)]).into_keyed().count()',
        "tick": 'w.server.keyed_source("r", str, int).count()' + _SNAP,
    },
}
_SELF_STATE = {
    "ordered": "noorder",
    "bounded": "top",
    "in_tick": "top",
    "top": "tick",
    "comparable": "opaque",
    "pairs": "ints",
}


def params(method: str, place: str, where: str = "server") -> dict[str, str]:
    """Valid arguments of `method` for a receiver at `place` (top: Bounded ones), built on `where`."""
    loc = f"w.{where}"
    tick = "w.tick" if where == "server" else f"{loc}.tick()"
    in_tick = place == "tick"

    def stream(elem: str, sample: str) -> str:
        return f'{loc}.source("o", {elem}).batch({tick}, {ND})' if in_tick else f"{loc}.source_iter([{sample}])"

    singleton = f"{tick}.singleton(1)" if in_tick else f"{loc}.source_iter([1]).count()"
    shapes: dict[str, dict[str, str]] = {
        "fold": {"init": "0", "f": "lambda acc, v: acc"},
        "reduce": {"f": "lambda a, b: a"},
        "cross_singleton": {"other": singleton},
        "zip": {"other": singleton},
        "cross_product": {"other": stream(E, "(MemberId[Workers](0), 1)")},
        "merge_unordered": {"other": stream(E, "(MemberId[Workers](0), 1)")},
        "chain": {"other": stream(E, "(MemberId[Workers](0), 1)")},
        "join": {"other": stream(E, "(MemberId[Workers](0), 1)")},
        "anti_join": {"other": stream("MemberId[Workers]", "MemberId[Workers](0)")},
        "assume_ordering": {"nondet": ND},
        "batch": {"tick": "w.tick", "nondet": ND},
        "snapshot": {"tick": "w.tick", "nondet": ND},
        "batch_aligned": {"tick": "w.tick", "align": "w.server.local_align_point()", "nondet": ND},
        "snapshot_aligned": {"tick": "w.tick", "align": "w.server.local_align_point()", "nondet": ND},
        "release_aligned": {"align": "w.server.local_align_point()"},
        "aligned_at": {"align": "w.server.local_align_point()"},
        "send": {"dest": "w.client"},
        "broadcast": {"dest": "w.workers"},
        "demux": {"dest": "w.workers"},
        "demux_by_key": {"dest": "w.workers"},
        "sink": {"name": '"out"'},
        "lookup_keyed_singleton": {
            "table": f'{loc}.keyed_source("o", str, int).count().snapshot({tick}, {ND})'
            if in_tick
            else f'{loc}.source_iter([("a", 1)]).into_keyed().count()'
        },
        "get": {"key": f'{tick}.singleton("a")' if in_tick else f'{loc}.source_iter(["a"]).fold("", lambda acc, v: v)'},
        "get_many_if_present": {
            "requests": f'{loc}.keyed_source("o", str, float).batch({tick}, {ND})'
            if in_tick
            else f'{loc}.source_iter([("a", 1.0)]).into_keyed()'
        },
    }
    return dict(shapes.get(method, {}))


# An Unbounded argument of the parameter's kind, on the server's top level.
_UNBOUNDED = {
    "cross_singleton": 'w.server.source("o", int).count()',
    "chain": f'w.server.source("o", {E})',
    "anti_join": 'w.server.source("o", MemberId[Workers])',
    "lookup_keyed_singleton": 'w.server.keyed_source("o", str, int).count()',
    "get_many_if_present": 'w.server.keyed_source("o", str, float)',
}
_BAD_ARG = {
    "tick_of": "w.client.tick()",
    "align_of": "w.client.local_align_point()",
    "nondet": '"a plain string"',
    "process": "w.workers",
    "cluster": "w.client",
}


def call_for(cls: str, method: str, rules: tuple[Rule, ...], rule: Rule) -> str:
    """The marked call: `receiver.method(args)` breaking `rule` only."""
    kinds = {x.kind for x in rules if isinstance(x, OnSelf)}
    if isinstance(rule, OnSelf):
        state = _SELF_STATE[rule.kind]
        args = params(method, "tick" if state in ("tick", "opaque") else "top")
    else:
        needs_bounded = "bounded" in kinds or any(isinstance(x, OnArg) and x.kind == "bounded" for x in rules)
        state = "tick" if "in_tick" in kinds else "top" if "top" in kinds else "btop" if needs_bounded else "top"
        place = "tick" if state == "tick" else "top"
        args = params(method, place)
        if rule.kind == "same_location":
            args[rule.param] = params(method, place, where="client")[rule.param]
        elif rule.kind == "bounded":
            args[rule.param] = _UNBOUNDED[method]
        else:
            args[rule.param] = _BAD_ARG[rule.kind]
    return f"{RECEIVERS[cls][state]}.{method}({', '.join(args.values())})"


@dataclass(frozen=True)
class GenCase:
    """One generated misuse: which rule it breaks, the code expected, and where."""

    cls: str
    method: str
    rule: int
    code: str
    function: str
    line: int
    source: str


@dataclass
class Generated:
    """The program file, its cases, and its functions (imported, ready to run)."""

    path: Path
    cases: list[GenCase]
    functions: dict[str, Callable[[], None]] = field(default_factory=dict)


PRELUDE = '''"""Generated by tests/core/plugin_cases.py: one broken rule per function."""

from __future__ import annotations

from _hl_contract import REASON, Workers, world

from hydrolite import MemberId, nondet


class Opaque:
    """Values without `<`."""
'''


def generate(path: Path) -> Generated:
    """Write the program to `path`, import it, and return its cases."""
    lines = PRELUDE.splitlines()
    cases = []
    for fullname, methods in RULES.items():
        cls = fullname.rsplit(".", 1)[1]
        for method, rules in methods.items():
            for i, rule in enumerate(rules):
                name = f"case_{cls}_{method}_{i}"
                call = call_for(cls, method, rules, rule)
                lines += ["", "", f"def {name}() -> None:", "    w = world()", f"    {call}"]
                kind = rule.kind
                cases.append(GenCase(cls, method, i, CODES[kind], name, len(lines), call))
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(STUBS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(STUBS))
    return Generated(path, cases, {c.function: getattr(module, c.function) for c in cases})
