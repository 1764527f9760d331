"""Long differential run: many generated programs on Spark, each replayed in the simulator.

    python -m tests.differential.run_long --programs 1000 --seed 0 [--out DIR]
    python -m tests.differential.run_long --clusters --programs 200 --seed 0   # cluster programs

Plain programs keep their keyed state on the executors or on the driver (`--keyed-state`;
by default drawn per seed: the driver is where `auto` keeps Python keyed folds on a local
master, what a user runs by default). Prints one line per program, then programs tried, outcomes (identical / refused with a
clear planner error / divergent / error / timeout: `--timeout` seconds, default 600, per
program) and, for each divergence, a shrunk reproducer:
statements are deleted while the program still builds and still diverges, then input
elements are deleted the same way. Reproducers are written to `--out` (default
`tests/differential/found/`) as modules with `build()`, `STEPS` and `KEYED_STATE`, ready to
move into `regressions/`.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.differential.harness import Outcome, run_case
from tests.differential.harness_cluster import run_cluster_case
from tests.differential.progen import RandomDraw, generate, inputs
from tests.differential.progen_cluster import CLUSTER_PORTS, PROCESS_PORTS, cluster_inputs, generate_cluster

Steps = list[dict[str, list[Any]]]


Runner = Callable[[Any, str, Steps], Outcome]

#: where a plain program's keyed state lives (FlowRunner's `keyed_state`): the executors, or the
#: driver, where `auto` keeps Python keyed folds on a local master
KEYED_STATES = ("executors", "driver")


class ProgramTimeout(Exception):
    """A program ran longer than `--timeout` (one that never settles runs forever on both)."""


#: seconds one program (both backends) may take (`--timeout`); 0: no limit
LIMIT = {"seconds": 600}


_FIRED: list[bool] = []  # the alarm went off during the current run (py4j wraps what it raises)


def _alarm(signum: int, frame: Any) -> None:
    _FIRED.append(True)
    raise ProgramTimeout(f"the program ran longer than {LIMIT['seconds']} s (--timeout)")


def _safe(spark: Any, source: str, steps: Steps, runner: Runner = run_case) -> Outcome:
    """One run of the case; a timeout (SIGALRM interrupts the simulator's loop and a blocked
    Spark call alike) stops the queries it left running and is an outcome of its own."""
    seconds = LIMIT["seconds"]
    previous = signal.signal(signal.SIGALRM, _alarm) if seconds else None
    _FIRED.clear()
    if seconds:
        signal.alarm(seconds)
    try:
        return runner(spark, source, steps)
    except Exception as exc:
        if not _FIRED:
            return Outcome("error", traceback.format_exc(limit=8))
        signal.alarm(0)
        for q in spark.streams.active:
            q.stop()
        return Outcome("timeout", f"the program ran longer than {seconds} s (--timeout); interrupted at:\n{exc!r}")
    finally:
        if seconds:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)


def _draw(
    seed: int, clusters: bool, keyed_state: str = "mixed", store: bool = False, resume: str | None = None
) -> tuple[str, Steps, Runner, str]:
    """The program, inputs and runner of one seed, and what to add to its reproducer: a plain
    program (`progen`, with where its keyed state lives: `keyed_state`, or for `mixed` drawn
    per seed; with `store`, the keyed-store shape `test_keyed_stores_on_the_executors_match_the_simulator`
    draws) or a cluster program (`progen_cluster`, run with its member count)."""
    d = RandomDraw(random.Random(seed))
    if not clusters:
        prog = generate(d, max_ops=4, store=True) if store else generate(d)
        source, steps = prog.source(), inputs(d, ["xs", "ys", "ks", "ws"])
        where = d.choice(KEYED_STATES) if keyed_state == "mixed" else keyed_state

        def placed(spark: Any, source: str, steps: Steps) -> Outcome:
            return run_case(spark, source, steps, keyed_state=where, resume_with=resume)

        return source, steps, placed, f"KEYED_STATE = {where!r}\n" + (f"RESUME_WITH = {resume!r}\n" if resume else "")
    cp = generate_cluster(d, max_ops=6)
    sizes = {"W": cp.members}

    def runner(spark: Any, source: str, steps: Steps) -> Outcome:
        return run_cluster_case(spark, source, steps, sizes)

    steps = cluster_inputs(d, [*CLUSTER_PORTS, *PROCESS_PORTS], cp.members)
    return cp.source(), steps, runner, f"MEMBERS = {cp.members}\n"


def _bad(out: Outcome) -> bool:
    return out.status in ("divergent", "error", "timeout")


def _signature(out: Outcome) -> str:
    """What must stay the same while shrinking: the outcome, and for an error its last line
    (so a trial that merely breaks the program, e.g. a NameError, is not kept)."""
    lines = [ln for ln in out.detail.splitlines() if ln.strip()]
    return out.status + ("|" + lines[-1] if out.status == "error" and lines else "")


def shrink(
    spark: Any, source: str, steps: Steps, budget: int = 60, runner: Runner = run_case
) -> tuple[str, Steps, Outcome]:
    """Delete program lines, then input elements, while the case still fails the same way."""
    first = _safe(spark, source, steps, runner)
    status = _signature(first)
    head, _, rest = source.partition("def build() -> hl.Flow:\n")
    body = rest.splitlines()
    fixed = {0, 1, len(body) - 1}  # flow = ..., p = ..., return
    runs = 0
    i = len(body) - 2
    best = first
    while i > 1 and runs < budget:
        if i not in fixed:
            trial = body[:i] + body[i + 1 :]
            text = head + "def build() -> hl.Flow:\n" + "\n".join(trial) + "\n"
            runs += 1
            out = _safe(spark, text, steps, runner)
            if _signature(out) == status:
                body, best = trial, out
                fixed = {0, 1, len(body) - 1}
        i -= 1
    source = head + "def build() -> hl.Flow:\n" + "\n".join(body) + "\n"
    for port in sorted({p for s in steps for p in s}):
        for si in range(len(steps)):
            j = len(steps[si].get(port, [])) - 1
            while j >= 0 and runs < budget * 2:
                trial_steps = [dict(s) for s in steps]
                trial_steps[si][port] = steps[si][port][:j] + steps[si][port][j + 1 :]
                runs += 1
                out = _safe(spark, source, trial_steps, runner)
                if _signature(out) == status:
                    steps, best = trial_steps, out
                j -= 1
    steps = [s for s in ({p: v for p, v in s.items() if v} for s in steps) if s] or steps[:1]
    return source, steps, best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "found"))
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--clusters", action="store_true", help="generate cluster programs (progen_cluster)")
    ap.add_argument(
        "--keyed-state",
        choices=[*KEYED_STATES, "mixed"],
        default="mixed",
        help="where plain programs keep keyed state (mixed: drawn per seed, written to the reproducer)",
    )
    ap.add_argument("--store", action="store_true", help="generate keyed stores read per key (progen store=True)")
    ap.add_argument(
        "--resume",
        choices=["auto", *KEYED_STATES],
        help="stop plain programs after half their steps and resume the checkpoint with this keyed_state",
    )
    ap.add_argument(
        "--timeout",
        type=int,
        default=LIMIT["seconds"],
        help="seconds one program may run on both backends before it counts as a timeout (0: no limit)",
    )
    ap.add_argument(
        "--seeds", help="comma-separated seeds to run instead of --seed/--programs (e.g. the ones that use a feature)"
    )
    args = ap.parse_args(argv)
    LIMIT["seconds"] = args.timeout
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else list(range(args.seed, args.seed + args.programs))
    from hydrolite.planner.spark.session import spark_session

    spark = spark_session(
        "local[2]",
        {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
        app_name="hydrolite-differential",
    )
    spark.sparkContext.setLogLevel("ERROR")
    counts: Counter[str] = Counter()
    found: list[str] = []
    t0 = time.time()
    for i, seed in enumerate(seeds):
        source, steps, runner, extra = _draw(seed, args.clusters, args.keyed_state, args.store, args.resume)
        t = time.time()
        out = _safe(spark, source, steps, runner)
        counts[out.status] += 1
        took = f"{time.time() - t:.1f}s"
        print(f"program {i + 1}/{len(seeds)} seed={seed}: {out.status} ({took}) {extra.strip()}", flush=True)
        if _bad(out):
            small, small_steps, shrunk = (
                (source, steps, out)
                if args.no_shrink or out.status == "timeout"  # (each trial of a timeout takes the whole limit)
                else shrink(spark, source, steps, runner=runner)
            )
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, f"seed_{seed}.py")
            with open(path, "w") as fh:
                header = '"""A generated cluster program' if args.clusters else '"""A generated program'
                fh.write(
                    small.replace(
                        f'{header} (differential test)."""', f'"""Found by run_long seed {seed}: {out.status}."""'
                    )
                )
                fh.write(f"\n\n{extra}STEPS = {small_steps!r}\n")
            found.append(path)
            print(
                f"--- shrunk reproducer ({path}):\n{small}\nSTEPS = {small_steps!r}\n{shrunk.detail}\n---", flush=True
            )
    minutes = (time.time() - t0) / 60
    tried = f"{seeds[0]}..{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ",".join(map(str, seeds))
    print(f"\nprograms tried: {len(seeds)} (seeds {tried}) in {minutes:.1f} min")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(
        f"divergences found: {counts['divergent']}, errors: {counts['error']}, timeouts: {counts['timeout']}; "
        f"reproducers: {found or 'none'}"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
