"""Simulator throughput: executions explored per second on the seed's counter scenario.

Run: python benchmarks/bench_sim.py [--runs 7] [--seconds 1.0]

Exhaustive mode re-explores the naive counter's tree (6 executions, a scenario that
accepts either answer) and the aligned counter's (1 execution) until `--seconds` have
passed; fuzz mode runs seeded random executions. Each figure is the median of `--runs`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from examples import counter, counter_naive  # noqa: E402
from hydrolite.sim import Simulator  # noqa: E402


def scenario(s: Simulator) -> None:
    """The seed's scenario, accepting a stale answer so exploration runs to the end."""
    increment, query = s.sender("increment"), s.sender("query")
    ack, response = s.receiver("increment_ack"), s.receiver("query_response")
    increment.send(("c1", None))
    ack.next()
    query.send(("c1", None))
    assert response.next()[1] in (0, 1)


def rate(explore: Callable[[], int], seconds: float) -> float:
    """Executions per second of repeated `explore()` calls over about `seconds`."""
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        done += explore()
    return done / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    naive, aligned = Simulator(counter_naive.build), Simulator(counter.build)
    cases: dict[str, Callable[[], int]] = {
        "exhaustive naive counter (6 executions per exploration)": lambda: naive.exhaustive(scenario),
        "exhaustive aligned counter (1 execution per exploration)": lambda: aligned.exhaustive(scenario),
        "fuzz naive counter (1000 seeded random executions)": lambda: naive.fuzz(scenario, iterations=1000, seed=1),
        "fuzz aligned counter (1000 seeded random executions)": lambda: aligned.fuzz(scenario, iterations=1000, seed=1),
    }
    print(f"hydrolite simulator benchmark: median of {args.runs} runs of {args.seconds:.1f}s (python {sys.version.split()[0]})")
    for name, explore in cases.items():
        rates = [rate(explore, args.seconds) for _ in range(args.runs)]
        print(f"  {name:<60} {statistics.median(rates):>9,.0f} executions/s   (min {min(rates):,.0f}, max {max(rates):,.0f})")


if __name__ == "__main__":
    main()
