"""The operator matrix: every case runs on the simulator (every schedule: the reference) and on Spark.

A case (`cases.py`) is a program built with the public API plus a scenario against its ports.

A scenario takes a harness with `sender(port)` / `receiver(port)` — the simulator's
`Simulator` (run on every schedule) or Spark's `SparkHarness` (one real execution) — and
asserts only what holds on every legal schedule:

* in a tick, a step sends **one** element, so it is one batch on every schedule; a batch of
  several elements is one list, flattened in the tick (`batch_of_lists`);
* a top-level value read with a plain `snapshot` may be any version not older than the last
  one read: `versions` checks the reads walk the version sequence and end at the newest;
* reads at an align point after the acks are exact (`release_aligned`, `snapshot_aligned`).

The runner checks afterwards that no sink produced anything the scenario did not consume.
A case whose Spark run diverges from the simulator names the divergence (xfail on Spark).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import hydrolite as hl
from hydrolite import nondet
from hydrolite.ir import nodes as n


class Sends(Protocol):
    def send(self, x: Any, /) -> None: ...
    def send_many(self, xs: Iterable[Any], /) -> None: ...


class Receives(Protocol):
    def next(self) -> Any: ...
    def collect(self) -> list[Any]: ...
    def assert_yields(self, expected: Iterable[Any], /) -> None: ...
    def assert_yields_unordered(self, expected: Iterable[Any], /) -> None: ...
    def assert_no_more(self) -> None: ...


class Harness(Protocol):
    """What a scenario may use: `hydrolite.sim.Simulator` and `SparkHarness` both offer it."""

    def sender(self, port: str, /) -> Sends: ...
    def receiver(self, port: str, /) -> Receives: ...


Scenario = Callable[[Harness], None]
Proc = hl.Process[Any]


@dataclass(frozen=True)
class Case:
    """One row of the matrix."""

    id: str
    nodes: frozenset[type[n.Node]]  # the IR node classes it exercises (checked to be in its program)
    build: Callable[[], hl.Flow]
    scenario: Scenario
    spark_divergence: str | None = None  # what Spark does differently: xfail(strict=True) on spark
    spark_raises: type[BaseException] = AssertionError  # how the divergence shows


CASES: list[Case] = []


def case(
    id: str,
    body: Callable[[Proc], object],
    *nodes: type[n.Node],
    divergence: str | None = None,
    raises: type[BaseException] = AssertionError,
) -> Callable[[Scenario], Scenario]:
    """Register the decorated scenario with `body`, which builds the program on a fresh process."""

    def build() -> hl.Flow:
        flow = hl.FlowBuilder(id)
        body(flow.process(Server))
        return flow.finalize()

    def register(scenario: Scenario) -> Scenario:
        CASES.append(Case(id, frozenset(nodes), build, scenario, divergence, raises))
        return scenario

    return register


class Server:
    """The process tag."""


class Client:
    """A second process (network case)."""


ANY = nondet("a step sends one element: every batching is that one batch")
VERSION = nondet("the scenario accepts every version sequence ending at the newest")
ALIGNED = nondet("after the acks, every aligned read reflects the acked inputs")
ORDER = nondet("the scenario accepts every order")


# ---------------------------------------------------------------- building
def each(xs: list[Any]) -> list[Any]:
    return xs


def noop(x: object) -> None:
    return None


def batch_of_lists(
    p: Proc, port: str = "xs", ty: Any = int
) -> tuple[hl.Tick[Any], hl.Stream[Any, Any, hl.Bounded, hl.TotalOrder]]:
    """A tick whose batch is the elements of the one list a step sends."""
    t = p.tick()
    return t, p.source(port, list[ty]).batch(t, ANY).flat_map_ordered(each)


def sinks(outs: Mapping[str, Any]) -> None:
    """Sink each collection under its name: singletons as streams, keyed singletons as
    entries, out of the tick with all_ticks()."""
    for name, x in outs.items():
        if isinstance(x, (hl.Singleton, hl.OptionalSingleton)):
            x = x.into_stream()
        elif isinstance(x, hl.KeyedSingleton):
            x = x.entries()
        if isinstance(x.location, hl.Tick):
            x = x.all_ticks()
        x.sink(name)


# ---------------------------------------------------------------- asserting
def yields(s: Harness, expected: Mapping[str, Sequence[Any]], unordered: Collection[str] = ()) -> None:
    """Each port's next outputs are `expected[port]` (in any order for ports in `unordered`)."""
    for port, want in expected.items():
        r = s.receiver(port)
        (r.assert_yields_unordered if port in unordered else r.assert_yields)(want)


def walk(port: str, got: list[Any], versions: Sequence[Any]) -> None:
    """`got` reads `versions` in order (repeats allowed) and ends at the newest one."""
    assert got, f"{port!r} yielded nothing, expected reads of {versions!r} ending at {versions[-1]!r}"
    pos = 0
    for x in got:
        while pos < len(versions) and versions[pos] != x:
            pos += 1
        assert pos < len(versions), f"{port!r} yielded {got!r}: not reads, in order, of the versions {versions!r}"
    assert got[-1] == versions[-1], (
        f"{port!r} yielded {got!r}: the last read is not the newest version {versions[-1]!r}"
    )


def versions(s: Harness, versions: Mapping[str, Sequence[Any]]) -> None:
    """Plain snapshots: each port's outputs are versions read in order, ending at the newest."""
    for port, vs in versions.items():
        walk(port, s.receiver(port).collect(), vs)


def zipped_versions(s: Harness, port: str, *parts: Sequence[Any]) -> None:
    """A snapshot of `a.zip(b).zip(c)...`: each part is read in order and ends at its newest
    version (the zip's inputs change one at a time, so any combination may be read)."""
    got = s.receiver(port).collect()
    for i, versions in enumerate(parts):
        walk(f"{port}[{i}]", [unnest(x, len(parts))[i] for x in got], versions)


def unnest(x: Any, k: int) -> list[Any]:
    """[a, b, c] from ((a, b), c), a value of a.zip(b).zip(c)."""
    out: list[Any] = []
    for _ in range(k - 1):
        x, last = x
        out.append(last)
    return [x, *reversed(out)]


def numbered(s: Harness, port: str, items: list[Any], keyed: bool = False) -> None:
    """enumerate() after assume_ordering(): the items in some order, numbered 0, 1, ... (per key)."""
    got = [s.receiver(port).next() for _ in items]
    rows = [(k, i, (k, v)) for k, (i, v) in got] if keyed else [(None, i, v) for i, v in got]
    assert sorted(v for _, _, v in rows) == sorted(items), f"{port!r} yielded {got!r}: not the items {items!r}"
    for key in {k for k, _, _ in rows}:
        indices = [i for k, i, _ in rows if k == key]
        want = list(range(len(indices)))
        assert (sorted(indices) if keyed else indices) == want, (
            f"{port!r} yielded {got!r}: not numbered 0, 1, ... in order"
        )
