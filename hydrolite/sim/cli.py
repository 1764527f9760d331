"""`hydrolite sim PROGRAM:SCENARIO`: explore, fuzz or replay a simulator scenario from the shell.

PROGRAM is a .py file or a dotted module; SCENARIO names a function in it (a dotted path
for a method of a class). The scenario is either a test decorated with
`@sim.exhaustive(build)` / `@sim.fuzz(build)` (it knows its flow and cluster sizes) or a
plain function taking the `Simulator`; the flow then comes from `--program FILE[:FUNC]`
(default function `build`) or, without it, from PROGRAM's own `build()`.

    hydrolite sim tests/sim/test_counter.py:test_aligned_counter_one_line
    hydrolite sim tests/scenarios.py:counter_seed --program examples/counter_naive.py --replay v1:1.0
    hydrolite sim tests/scenarios.py:counter_seed --program examples/counter.py --crashes 1

It exits 0 when every explored execution passed (or the replayed one did), 1 with the
failure report otherwise, 2 on a usage error. The failure reports printed outside pytest
name this command with the arguments to replay their execution.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..ir.graph import Flow
from .errors import SimulationFailure, SimUsageError
from .explore import Simulator


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the `sim` subcommand on `build_parser()`'s subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "sim", help="explore, fuzz or replay a simulator scenario (no Spark needed)"
    )
    p.add_argument(
        "target",
        metavar="PROGRAM:SCENARIO",
        help="a .py file or module, and the scenario (or @sim.exhaustive test) in it",
    )
    p.add_argument(
        "--program",
        metavar="FILE[:FUNC]",
        help="the program's flow builder when the scenario is a plain function (default: build() beside it)",
    )
    p.add_argument(
        "--replay",
        metavar="v1:...",
        help="run exactly this recorded execution (from a failure report) and print its trace",
    )
    p.add_argument(
        "--fuzz", type=int, metavar="N", help="run N seeded random executions instead of exploring every one"
    )
    p.add_argument("--seed", type=int, default=0, help="the fuzzing seed (default 0)")
    p.add_argument(
        "--cluster-size",
        action="append",
        default=[],
        metavar="TAG=N",
        help="members of a cluster (repeatable; default 2)",
    )
    p.add_argument("--max-executions", type=int, default=200_000, help="exhaustive mode's budget (default 200000)")
    p.add_argument("--no-reduce", action="store_true", help="explore every interleaving (no partial-order reduction)")
    p.add_argument(
        "--interleavings",
        action="store_true",
        help="per-edge interleavings into two-input top-level operators (more executions)",
    )
    p.add_argument(
        "--per-key-snapshots",
        action="store_true",
        help="keyed-singleton snapshots see each key at its own version (more executions)",
    )
    p.add_argument(
        "--crashes",
        type=int,
        default=0,
        metavar="N",
        help="let up to N tick runs per execution crash and be replayed (default 0)",
    )
    p.set_defaults(fn=run)
    return p


def _import(spec: str) -> ModuleType:
    """Import a file the way pytest's default (prepend) mode does: a file inside packages
    is imported by its dotted name from the first directory above them, which goes on
    sys.path (so `from .helpers import ...` and the tests' top-level helpers resolve)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if not (spec.endswith(".py") or os.path.sep in spec):
        return importlib.import_module(spec)
    path = os.path.abspath(spec)
    if not os.path.isfile(path):
        raise SimUsageError(f"no such file: {spec}")
    base, parts = os.path.dirname(path), [os.path.splitext(os.path.basename(path))[0]]
    while os.path.isfile(os.path.join(base, "__init__.py")):
        base, pkg = os.path.split(base)
        parts.insert(0, pkg)
    if base not in sys.path:
        sys.path.insert(0, base)
    name = ".".join(parts)
    if name in sys.modules and os.path.abspath(getattr(sys.modules[name], "__file__", "") or "") != path:
        raise SimUsageError(f"{spec}: a different module named {name!r} is already imported")
    return importlib.import_module(name)


def _attr(module: ModuleType, dotted: str, what: str) -> Any:
    obj: Any = module
    for part in dotted.split("."):
        if not hasattr(obj, part):
            raise SimUsageError(f"{module.__name__} has no {what} {dotted!r}")
        obj = getattr(obj, part)
    return obj


def split_target(target: str) -> tuple[str, str | None]:
    """`FILE_OR_MODULE[:NAME]` -> (file or module, NAME or None)."""
    head, sep, tail = target.rpartition(":")
    if not sep or not head or os.path.sep in tail:  # no ':' (or a Windows drive letter only)
        return target, None
    return head, tail


def resolve(
    target: str, program: str | None
) -> tuple[Flow | Callable[[], Flow], Callable[..., object], dict[str, int], dict[str, bool]]:
    """(flow source, scenario, cluster sizes, model options) named by the command line."""
    spec, name = split_target(target)
    if name is None:
        raise SimUsageError(f"name the scenario: {target}:SCENARIO")
    module = _import(spec)
    scenario = _attr(module, name, "scenario")
    attached = getattr(scenario, "_hydrolite_sim", None)
    if attached is not None and program is None:
        flow, sizes, fn, model = attached
        return flow, fn, dict(sizes), dict(model)
    if not callable(scenario):
        raise SimUsageError(f"{target} is not a function")
    if program is not None:
        pspec, pname = split_target(program)
        builder = _attr(_import(pspec), pname or "build", "flow builder")
    else:
        builder = getattr(module, "build", None)
        if builder is None:
            raise SimUsageError(f"{spec} has no build(): name the program with --program FILE[:FUNC]")
    if attached is not None:
        return builder, attached[2], dict(attached[1]), dict(attached[3])
    return builder, scenario, {}, {}


def _sizes(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        tag, sep, n = item.partition("=")
        if not sep or not n.isdigit():
            raise SimUsageError(f"--cluster-size must look like Tag=N, got {item!r}")
        out[tag] = int(n)
    return out


def summary(sim: Simulator, n: int, reduced: bool) -> str:
    """What an exhaustive exploration covered (see `Simulator.exhaustive` for the counters)."""
    if not reduced:
        return f"{n} executions explored (every interleaving, no reduction)"
    return (
        f"{n} executions explored, one per equivalence class of schedules; "
        f"{sim.pruned} branches of equivalent schedules pruned ({sim.abandoned} partial executions abandoned)"
    )


def run(args: argparse.Namespace) -> int:
    """The `hydrolite sim` command: 0 passed, 1 failed (report printed), 2 usage error."""
    try:
        flow, scenario, sizes, model = resolve(args.target, args.program)
        sizes.update(_sizes(args.cluster_size))
        model["interleavings"] = model.get("interleavings", False) or args.interleavings
        model["per_key_snapshots"] = model.get("per_key_snapshots", False) or args.per_key_snapshots
        sim = Simulator(flow, cluster_sizes=sizes, **model)
        if args.replay:
            print(sim.replay(scenario, args.replay))
            print(f"hydrolite sim: the replayed execution {args.replay} passed")
        elif args.fuzz is not None:
            n = sim.fuzz(scenario, iterations=args.fuzz, seed=args.seed, crashes=args.crashes)
            print(f"hydrolite sim: {n} random executions passed (seed {args.seed})")
        else:
            n = sim.exhaustive(
                scenario, max_executions=args.max_executions, reduce=not args.no_reduce, crashes=args.crashes
            )
            what = (
                f"every schedule and crash point (up to {args.crashes} per execution)"
                if args.crashes
                else "every schedule"
            )
            print(f"hydrolite sim: {what} passed: {summary(sim, n, not args.no_reduce)}")
    except SimulationFailure as failure:
        print(failure.report)
        return 1
    except (SimUsageError, ValueError) as e:
        print(f"hydrolite sim: error: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the subcommand alone (`python -m hydrolite.sim.cli ...`), as `hydrolite sim` does."""
    parser = argparse.ArgumentParser(prog="hydrolite")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sim", *(sys.argv[1:] if argv is None else argv)])
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
