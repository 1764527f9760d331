"""Benchmark hydrolite-lint on a generated 5,000-line program (a script, not a timed test).

    python benchmarks/bench_lint.py [--lines 5000] [--runs 7] [--keep program.py]

Prints the median seconds of several runs for: the in-process lint of the program
(parse, analysis, positions of the findings), the same with --fix, the whole
`hydrolite-lint` command (interpreter start-up and imports included), and a file of
the same size that never mentions hydrolite (skipped by the text pre-check).
Target: <= 1.5 s for the 5,000-line program on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hydrolite_lint import lint_source

HEADER = '''"""Generated benchmark program: many small services, mostly correct, some with lint findings."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import NonDet, nondet
from hydrolite import nondet as nd
'''

CLEAN_COUNTER = '''

class Counter{i}:
    """Tag of counter service {i}."""


def counter_{i}(flow: hl.FlowBuilder) -> None:
    """Counter {i}: acks released at an align point, queries read a count consistent with them."""
    server = flow.process(Counter{i})
    increment = server.keyed_source("increment_{i}", str, type(None))
    query = server.keyed_source("query_{i}", str, type(None))
    align = server.local_align_point()
    count = increment.values().fold_commutative(0, lambda c, _: c + 1)
    increment.release_aligned(align).entries().sink("ack_{i}")
    tick = server.tick()
    (
        query.batch(tick, nondet("queries may be answered in any grouping"))
        .entries()
        .map(lambda kv: kv[0])
        .cross_singleton(count.snapshot_aligned(tick, align, nd("any version consistent with released acks")))
        .all_ticks()
        .sink("response_{i}")
    )
'''

CLEAN_STORE = '''

class Store{i}:
    """Tag of key-value store {i}."""


def batch_requests_{i}(requests: hl.KeyedStream, tick: hl.Tick, why: NonDet) -> hl.KeyedStream:
    """Helper {i}: the caller justifies the batch boundary."""
    return requests.batch(tick, why)


def store_{i}(flow: hl.FlowBuilder) -> None:
    """Store {i}: puts are acknowledged once every aligned read sees them."""
    server = flow.process(Store{i})
    puts = server.keyed_source("put_{i}", str, int)
    gets = server.keyed_source("get_{i}", str, type(None))
    align = server.local_align_point()
    table = puts.last()
    puts.release_aligned(align).entries().sink("put_ack_{i}")
    tick = server.tick()
    snapshot = table.snapshot_aligned(tick, align, nondet("any table version covering the acked puts"))
    requests = batch_requests_{i}(gets, tick, nondet("gets may be answered in any grouping"))
    snapshot.get_many_if_present(requests).entries().all_ticks().sink("get_result_{i}")
    sizes = [
        puts.values().map(lambda v, k=k: v * k).fold_commutative(0, lambda a, b: a + b)
        for k in range(3)
    ]
    for size in sizes:
        size.snapshot(tick, nondet("any recent size is fine for monitoring")).into_stream().all_ticks()
'''

BUGGY = '''

class Legacy{i}:
    """Tag of a service ported from Hydro {i}."""


def legacy_{i}(flow: hl.FlowBuilder) -> None:
    """Legacy {i}: still written the pre-alignment way."""
    server = flow.process(Legacy{i})
    increment = server.keyed_source("increment_{i}", str, type(None))
    query = server.keyed_source("query_{i}", str, type(None))
    tick = server.tick()
    inc = increment.batch(tick, nondet("increments in any grouping"))
    cycle, prev = tick.singleton_cycle(0)
    count = prev.zip(inc.count()).map(lambda p: p[0] + p[1])
    cycle.complete_next_tick(count)
    inc.all_ticks().sink("ack_{i}")
    query.batch(tick, nondet("TODO")).cross_singleton(count).all_ticks().sink("response_{i}")
    other = server.tick()
    count.latest().snapshot(other, nondet("any version")).into_stream().all_ticks()
    why = nondet("kept in a variable")
    query.batch(other, why).all_ticks()
    unused = server.local_align_point()
    atomic = increment.atomic(tick)
    atomic.end_atomic().entries().sink("legacy_ack_{i}")
'''

BLOCKS = (CLEAN_COUNTER, CLEAN_STORE, CLEAN_COUNTER, CLEAN_STORE, BUGGY)


def generate(lines: int) -> str:
    """A program of at least `lines` lines cycling through the blocks above."""
    parts, count, i = [HEADER], HEADER.count("\n"), 0
    while count < lines:
        block = BLOCKS[i % len(BLOCKS)].format(i=i)
        parts.append(block)
        count += block.count("\n")
        i += 1
    return "".join(parts)


def median_seconds(run: Callable[[], object], runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="also write the generated program here")
    args = parser.parse_args()

    source = generate(args.lines)
    plain = "\n".join(f"value_{i} = compute({i}, 'x') + 1" for i in range(source.count("\n")))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "program.py"
        path.write_text(source)
        if args.keep:
            args.keep.write_text(source)
        findings = lint_source(source, str(path)).findings
        rows = [
            ("lint (in process)", *median_seconds(lambda: lint_source(source, str(path)), args.runs)),
            ("lint --fix (in process)", *median_seconds(lambda: lint_source(source, str(path), fix=True), args.runs)),
            (
                "hydrolite-lint command",
                *median_seconds(
                    lambda: subprocess.run(
                        [sys.executable, "-m", "hydrolite_lint", str(path)], capture_output=True, check=False
                    ),
                    args.runs,
                ),
            ),
            ("non-hydrolite file (skipped)", *median_seconds(lambda: lint_source(plain, "plain.py"), args.runs)),
        ]
    by_code: dict[str, int] = {}
    for finding in findings:
        by_code[finding.code] = by_code.get(finding.code, 0) + 1
    print(f"program: {source.count(chr(10))} lines, {len(findings)} findings {dict(sorted(by_code.items()))}")
    print(f"{'what':<30} {'median s':>9}   runs")
    for what, median, times in rows:
        print(f"{what:<30} {median:>9.3f}   {' '.join(f'{t:.3f}' for t in times)}")
    verdict = "within" if rows[2][1] <= 1.5 else "OVER"
    print(f"target <= 1.5 s: the command's median is {verdict} the target")


if __name__ == "__main__":
    main()
