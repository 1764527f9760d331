"""Simulator benchmarks: throughput on the seed's counter, and programs a user would write.

Run: python benchmarks/bench_sim.py [--runs 7] [--seconds 1.0]

* Throughput: exhaustive mode re-explores the naive counter's tree (6 executions, a
  scenario that accepts either answer) and the aligned counter's (1 execution) until
  `--seconds` have passed; fuzz mode runs seeded random executions.
* Partial-order reduction on and off: a leader broadcasting to 2 members that reply, with
  a tick counting the replies (488 executions without reduction, 40 with), and two
  clients summing per key into a per-key snapshot (different keys commute): executions/s,
  and for whole trees the executions, the branches of equivalent schedules pruned and the
  partial executions abandoned (`Simulator.exhaustive`), and the time to explore.
* A word count carrying its counts in a `stream_cycle` (must finish: the cycle reaches
  a fixpoint and stops keeping its tick busy), and a gather from a 3-member cluster with
  and without an align point, and their ratio (target: aligned at most 10x unaligned).
* Crashes as choices (`crashes=1`): the aligned counter with several increments and
  queries (9 executions without crashes, 156 with), the quorum (its deliveries' top-level
  operators crash too) and the word count.

Each figure is the median of `--runs`. Times are the process's CPU time (`time.process_time`):
the machines this runs on are shared, and wall time there measures the neighbours too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hydrolite as hl
from examples import counter, counter_naive
from hydrolite import nondet
from hydrolite.sim import Simulator
from tests.scenarios import counter_acks_bound_answers
from tests.sim.test_por_soundness import two_clients
from tests.sim.test_quiescence import word_count  # the programs the tests pin, measured here
from tests.sim.test_reduction import gather


class Leader:
    """The process of the quorum and gather programs."""


class Workers:
    """The cluster of the quorum and gather programs."""


def quorum() -> hl.Flow:
    """A leader broadcasts; members reply; a tick counts replies to answer questions."""
    flow = hl.FlowBuilder("quorum")
    leader = flow.process(Leader)
    replies = leader.source("in", int).broadcast(flow.cluster(Workers)).map(lambda x: x + 1).send(leader)
    tick = leader.tick()
    seen = replies.entries().count().snapshot(tick, nondet("any number of replies so far"))
    leader.source("ask", str).batch(tick, nondet("any grouping")).cross_singleton(seen).all_ticks().sink("answers")
    replies.entries().map(lambda kv: kv[1]).sink("values")
    return flow.finalize()


def quorum_scenario(s: Simulator) -> None:
    s.sender("in").send(1)
    s.receiver("values").next()
    s.sender("ask").send("q")
    s.receiver("answers").next()


def word_count_scenario(s: Simulator) -> None:
    s.sender("words").send_many(["a", "b", "a", "c"])
    s.sender("ask").send("a")
    s.receiver("answers").next()
    s.receiver("answers").assert_no_more()


def per_key_scenario(s: Simulator) -> None:
    s.sender("a").send_many([("x", 1), ("y", 2)])
    s.sender("b").send_many([("y", 4), ("z", 8)])
    s.receiver("sums").collect()


def gather_scenario(s: Simulator) -> None:
    s.sender("job").send_many([1, 2])
    s.receiver("gathered").assert_yields_unordered([(1, 10)] * 3 + [(2, 20)] * 3)


def scenario(s: Simulator) -> None:
    """The seed's scenario, accepting a stale answer so exploration runs to the end."""
    increment, query = s.sender("increment"), s.sender("query")
    ack, response = s.receiver("increment_ack"), s.receiver("query_response")
    increment.send(("c1", None))
    ack.next()
    query.send(("c1", None))
    assert response.next()[1] in (0, 1)


def rate(explore: Callable[[], int], seconds: float) -> float:
    """Executions per CPU second of repeated `explore()` calls over about `seconds`."""
    done, start = 0, time.process_time()
    while (elapsed := time.process_time() - start) < seconds:
        done += explore()
    return done / elapsed


def explore_once(
    make: Callable[[], Simulator], scenario: Callable[[Simulator], None], reduce: bool = True, crashes: int = 0
) -> tuple[int, int, int, float]:
    """(executions, branches pruned, partial executions abandoned, seconds) of one
    exhaustive exploration."""
    sim = make()
    start = time.process_time()
    n = sim.exhaustive(scenario, reduce=reduce, crashes=crashes)
    return n, sim.pruned, sim.abandoned, time.process_time() - start


def per_key() -> Simulator:
    """Two clients summing per key, read by a per-key snapshot."""
    return Simulator(two_clients(True), per_key_snapshots=True)


def throughput(runs: int, seconds: float) -> None:
    """Executions per second of repeated explorations (and fuzzing), reduction on and off."""
    naive, aligned, q, pk = (
        Simulator(counter_naive.build),
        Simulator(counter.build),
        Simulator(quorum, cluster_sizes={"Workers": 2}),
        per_key(),
    )
    cases: dict[str, Callable[[], int]] = {
        "exhaustive naive counter (6 executions per exploration)": lambda: naive.exhaustive(scenario),
        "exhaustive aligned counter (1 execution per exploration)": lambda: aligned.exhaustive(scenario),
        "fuzz naive counter (1000 seeded random executions)": lambda: naive.fuzz(scenario, iterations=1000, seed=1),
        "fuzz aligned counter (1000 seeded random executions)": lambda: aligned.fuzz(scenario, iterations=1000, seed=1),
        "quorum, 2 members, reduction off (488 executions)": lambda: q.exhaustive(quorum_scenario, reduce=False),
        "quorum, 2 members, reduction on (40 executions)": lambda: q.exhaustive(quorum_scenario),
        "per-key sums, reduction off (4,794 executions)": lambda: pk.exhaustive(per_key_scenario, reduce=False),
        "per-key sums, reduction on (176 executions)": lambda: pk.exhaustive(per_key_scenario),
        "aligned counter, acks scenario, crashes=1 (156 executions)": lambda: aligned.exhaustive(
            counter_acks_bound_answers, crashes=1
        ),
    }
    for name, explore in cases.items():
        rates = [rate(explore, seconds) for _ in range(runs)]
        print(
            f"  {name:<60} {statistics.median(rates):>9,.0f} executions/s   (min {min(rates):,.0f}, max {max(rates):,.0f})"
        )


def trees(runs: int) -> dict[str, int]:
    """Whole explorations: executions, pruned branches, abandoned executions, time; returns
    the executions per tree."""
    q2 = lambda: Simulator(quorum, cluster_sizes={"Workers": 2})  # noqa: E731
    gathers = {a: (lambda a=a: Simulator(lambda: gather(a), cluster_sizes={"Workers": 3})) for a in (False, True)}
    cases: dict[str, Callable[[], tuple[int, int, int, float]]] = {
        "quorum, 2 members, whole tree, reduction off": lambda: explore_once(q2, quorum_scenario, False),
        "quorum, 2 members, whole tree, reduction on": lambda: explore_once(q2, quorum_scenario),
        "per-key sums, whole tree, reduction off": lambda: explore_once(per_key, per_key_scenario, False),
        "per-key sums, whole tree, reduction on": lambda: explore_once(per_key, per_key_scenario),
        "word count in a stream cycle, 4 words + 1 question": lambda: explore_once(
            lambda: Simulator(word_count), word_count_scenario
        ),
        "gather, 3 members, 2 jobs, no align point": lambda: explore_once(gathers[False], gather_scenario),
        "gather, 3 members, 2 jobs, align point": lambda: explore_once(gathers[True], gather_scenario),
        "quorum, 2 members, whole tree, reduction on, crashes=1": lambda: explore_once(q2, quorum_scenario, crashes=1),
        "word count in a stream cycle, crashes=1": lambda: explore_once(
            lambda: Simulator(word_count), word_count_scenario, crashes=1
        ),
    }
    counts: dict[str, int] = {}
    for name, tree in cases.items():
        results = [tree() for _ in range(max(1, runs // 2))]
        n, pruned, abandoned, _ = results[0]
        secs = statistics.median(r[3] for r in results)
        counts[name] = n
        print(f"  {name:<60} {n:>9,} executions, {pruned:,} pruned, {abandoned:,} abandoned, {secs:.3f}s to explore")
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    print(
        f"hydrolite simulator benchmark: median of {args.runs} runs of {args.seconds:.1f}s (python {sys.version.split()[0]})"
    )
    throughput(args.runs, args.seconds)
    counts = trees(args.runs)
    aligned, plain = (
        counts["gather, 3 members, 2 jobs, align point"],
        counts["gather, 3 members, 2 jobs, no align point"],
    )
    ratio = aligned / plain
    verdict = "within" if ratio <= 10 else "OVER"
    print(f"  gather with / without its align point: {aligned:,} / {plain:,} = {ratio:.2f}x ({verdict} the 10x target)")


if __name__ == "__main__":
    main()
