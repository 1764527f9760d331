"""Cluster programs and their scenarios, shared by the unit tests of the lifting pass
(`tests/spark/test_cluster_lift.py`: the lifted, process-only flow in the simulator) and the
Spark tests (`tests/spark/test_cluster.py`). Each scenario asserts only what holds on every
legal schedule, with `sender(port, member=m)` / `receiver(port, member=m)` for cluster ports.

`LiftedHandles` runs a scenario written for the cluster program against the *lifted* flow in
the simulator: a cluster source there is a keyed port of (member, value) records and a
cluster sink holds (member, element) pairs, exactly what the Spark harness feeds and reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import hydrolite as hl
from examples import sharded_kvstore
from hydrolite import MemberId, nondet
from hydrolite.locations.sharding import member_of_key
from hydrolite.receiving import NoMoreOutput, ReceiverAssertions
from hydrolite.sim import Simulator


class Server:
    """A process tag."""


class Workers:
    """A cluster tag."""


class Others:
    """A second cluster tag."""


@dataclass(frozen=True)
class Case:
    """A cluster program, its member counts and a scenario that holds on every schedule."""

    name: str
    build: Callable[[], hl.Flow]
    sizes: dict[str, int]
    scenario: Callable[[Any], None]
    exhaustive: bool = True  # else a seeded sample of schedules (too many to enumerate)
    on_spark: bool = True  # False: the simulator and lifting tests only (another case runs it on Spark)

    def simulate(self, sim: Simulator, scenario: Callable[[Any], None]) -> None:
        if self.exhaustive:
            sim.exhaustive(scenario)
        else:
            sim.fuzz(scenario, iterations=300, database=None)


# ------------------------------------------------------------------ demux and gather
def demux_gather() -> hl.Flow:
    flow = hl.FlowBuilder("demux_gather")
    p = flow.process(Server)
    workers = flow.cluster(Workers)
    at_member = p.source("in", tuple[MemberId[Workers], int]).demux(workers)
    at_member.map(lambda x: x * 2).sink("seen")
    at_member.map(lambda x: x + 1).send(p).entries().sink("replies")
    return flow.finalize()


def demux_gather_scenario(s: Any) -> None:
    s.sender("in").send_many([(MemberId(2), 5), (MemberId(0), 7), (MemberId(2), 1)])
    s.receiver("seen", member=2).assert_yields([10, 2])
    s.receiver("seen", member=0).assert_yields([14])
    s.receiver("replies").assert_yields_only_unordered([(MemberId(2), 6), (MemberId(0), 8), (MemberId(2), 2)])
    s.receiver("seen", member=1).assert_no_more()


# ------------------------------------------------------------------ broadcast, per-member count
def broadcast_count() -> hl.Flow:
    """Data demuxed to some members; a question broadcast to all of them is answered with
    each member's count (0 for a member that received nothing) and a fold of its values."""
    flow = hl.FlowBuilder("broadcast_count")
    p = flow.process(Server)
    workers = flow.cluster(Workers)
    data = p.source("data", tuple[int, int]).demux(workers)
    count = data.count()
    total = data.fold(100, lambda acc, x: acc + x)
    tick = workers.tick()
    asks = p.source("ask", str).broadcast(workers).batch(tick, nondet("questions in any grouping"))
    answered = asks.cross_singleton(count.snapshot(tick, nondet("any count so far")))
    answered = answered.cross_singleton(total.snapshot(tick, nondet("any total so far")))
    answered.map(lambda a: (a[0][0], a[0][1], a[1])).all_ticks().send(p).entries().sink("answers")
    return flow.finalize()


def broadcast_count_scenario(s: Any) -> None:
    s.sender("data").send_many([(0, 5), (0, 6), (2, 1)])  # member 1 gets nothing
    s.sender("ask").send("q")
    got = sorted(s.receiver("answers").collect(), key=lambda a: a[0].raw)
    assert [m.raw for m, _ in got] == [0, 1, 2], got
    (_, a0), (_, a1), (_, a2) = got
    assert a1 == ("q", 0, 100), a1  # no input: the count's 0 and the fold's init
    assert a0[1] in (0, 1, 2) and a0[2] in (100, 105, 111), a0  # two snapshots: any versions each
    assert a2[1] in (0, 1) and a2[2] in (100, 101), a2


# ------------------------------------------------------------------ cluster -> cluster
def cluster_to_cluster() -> hl.Flow:
    flow = hl.FlowBuilder("c2c")
    a = flow.cluster(Workers)
    b = flow.cluster(Others)
    xs = a.source("in", int)
    xs.broadcast(b).entries().sink("out")
    xs.map(lambda x: (MemberId(x % 3), x)).demux(b).entries().sink("routed")
    return flow.finalize()


def cluster_to_cluster_scenario(s: Any) -> None:
    s.sender("in", member=1).send_many([3, 4])
    s.sender("in", member=0).send(5)
    for m in (0, 1, 2):
        got = s.receiver("out", member=m).collect()
        assert sorted(got, key=lambda e: (e[0].raw, e[1])) == [(MemberId(0), 5), (MemberId(1), 3), (MemberId(1), 4)]
    s.receiver("routed", member=0).assert_yields_only([(MemberId(1), 3)])
    s.receiver("routed", member=1).assert_yields_only([(MemberId(1), 4)])
    s.receiver("routed", member=2).assert_yields_only([(MemberId(0), 5)])


def sharded_by_key() -> hl.Flow:
    """`demux_by_key` from a cluster to another: each key's values meet at its owner, which
    keeps a running sum per key (its values from every sender, in any order)."""
    flow = hl.FlowBuilder("sharded_by_key")
    a = flow.cluster(Workers)
    b = flow.cluster(Others)
    owned = a.source("in", int).map(lambda x: (x % 4, x)).into_keyed().demux_by_key(b)
    owned.entries().sink("owned")
    tick = b.tick()
    sums = owned.fold_commutative(0, lambda acc, x: acc + x)
    asks = b.source("ask", int).batch(tick, nondet("any grouping")).map(lambda k: (k, None)).into_keyed()
    asks.lookup_keyed_singleton(sums.snapshot(tick, nondet("any version"))).entries().all_ticks().sink("sums")
    return flow.finalize()


def sharded_by_key_scenario(s: Any) -> None:
    """Every value reaches the owner of its key (`member_of_key`, 3 members), from any sender."""
    sent = {0: [1, 2, 5, 7], 1: [3, 6, 9]}
    for m, xs in sent.items():
        s.sender("in", member=m).send_many(xs)
    everything = [(x % 4, x) for xs in sent.values() for x in xs]
    for m in (0, 1, 2):
        mine = sorted(kv for kv in everything if member_of_key(kv[0], 3) == m)
        assert sorted(s.receiver("owned", member=m).collect()) == mine, (m, mine)
    owner = member_of_key(1, 3)  # key 1: 1, 5, 9 from two senders
    s.sender("ask", member=owner).send(1)
    got = s.receiver("sums", member=owner).collect()
    assert len(got) == 1 and got[0][0] == 1 and got[0][1][1] in (None, 1, 5, 6, 9, 10, 14, 15), got


# ------------------------------------------------------------------ keyed state per member
def keyed_per_member() -> hl.Flow:
    """Per-member sources, keyed folds in a tick and at top level, lookups per member."""
    flow = hl.FlowBuilder("keyed_per_member")
    w = flow.cluster(Workers)
    tick = w.tick()
    words = w.source("words", str)
    batch = words.batch(tick, nondet("any grouping")).map(lambda s: (s[:1], len(s))).into_keyed()
    batch.fold(0, lambda acc, n: acc + n).entries().all_ticks().sink("lengths")
    per_key = words.map(lambda s: (s[:1], s)).into_keyed().count()
    asks = w.source("ask", str).batch(tick, nondet("any grouping")).map(lambda k: (k, None)).into_keyed()
    asks.lookup_keyed_singleton(per_key.snapshot(tick, nondet("any version"))).entries().all_ticks().sink("counts")
    return flow.finalize()


def keyed_per_member_scenario(s: Any) -> None:
    s.sender("words", member=0).send_many(["ant", "apple", "bee"])
    s.sender("words", member=1).send("axe")
    lengths0 = s.receiver("lengths", member=0).collect()
    assert {k: sum(v for kk, v in lengths0 if kk == k) for k, _ in lengths0} == {"a": 8, "b": 3}, lengths0
    s.receiver("lengths", member=1).assert_yields_only([("a", 3)])
    s.sender("ask", member=1).send("a")
    got = s.receiver("counts", member=1).collect()
    assert got in ([("a", (None, 1))], []), got  # the snapshot may be older than the words (then no entry)


def enumerate_per_member() -> hl.Flow:
    """Top-level state over time per member: enumerate (indexes per member), then flat_map."""
    flow = hl.FlowBuilder("enumerate_per_member")
    words = flow.cluster(Workers).source("words", str)
    words.enumerate().flat_map_ordered(lambda e: [e] * (e[0] % 2 + 1)).sink("numbered")
    return flow.finalize()


def enumerate_per_member_scenario(s: Any) -> None:
    s.sender("words", member=0).send_many(["ant", "apple", "bee"])
    s.sender("words", member=1).send("axe")
    s.receiver("numbered", member=0).assert_yields_only([(0, "ant"), (1, "apple"), (1, "apple"), (2, "bee")])
    s.receiver("numbered", member=1).assert_yields_only([(0, "axe")])


CASES = [
    Case("demux_gather", demux_gather, {"Workers": 3}, demux_gather_scenario),
    Case("broadcast_count", broadcast_count, {"Workers": 3}, broadcast_count_scenario, exhaustive=False),
    Case("cluster_to_cluster", cluster_to_cluster, {"Workers": 2, "Others": 3}, cluster_to_cluster_scenario),
    Case("sharded_by_key", sharded_by_key, {"Workers": 2, "Others": 3}, sharded_by_key_scenario),
    Case("keyed_per_member", keyed_per_member, {"Workers": 2}, keyed_per_member_scenario),
    Case("enumerate_per_member", enumerate_per_member, {"Workers": 2}, enumerate_per_member_scenario),
]


def sharded_kvstore_scenario(s: Any) -> None:
    """Puts acked, then gets answered from the owning shard; a later put overwrites."""
    s.sender("put").send_many([("c1", "apple", 1), ("c1", "pear", 2)])
    s.receiver("put_ack").assert_yields_only_unordered([("c1", "apple"), ("c1", "pear")])
    s.sender("get").send_many([("c1", "apple"), ("c1", "pear"), ("c2", "fig")])
    s.receiver("get_response").assert_yields_only_unordered(
        [("c1", "apple", 1), ("c1", "pear", 2), ("c2", "fig", None)]
    )
    s.sender("put").send(("c2", "apple", 7))
    s.receiver("put_ack").assert_yields_only([("c2", "apple")])
    s.sender("get").send(("c2", "apple"))
    s.receiver("get_response").assert_yields_only([("c2", "apple", 7)])


# the same program on 2 and on 3 shards: demux_by_key routes by the member count at run time
CASES += [
    Case(f"sharded_kvstore_{n}", sharded_kvstore.build, {"Shard": n}, sharded_kvstore_scenario, on_spark=n == 3)
    for n in (2, 3)
]


# ------------------------------------------------------------------ the lifted flow in the simulator
class _Sender:
    def __init__(self, inner: Any, member: int | None) -> None:
        self.inner = inner
        self.member = member

    def _wrap(self, x: Any) -> Any:
        return x if self.member is None else (self.member, x)

    def send(self, x: Any) -> None:
        self.inner.send(self._wrap(x))

    def send_many(self, xs: Iterable[Any]) -> None:
        self.inner.send_many([self._wrap(x) for x in xs])


class _Receiver(ReceiverAssertions[Any]):
    """One member's elements of a lifted cluster sink (pairs (member, element))."""

    def __init__(self, handles: LiftedHandles, port: str, member: int) -> None:
        self.handles = handles
        self.port = port
        self.member = member

    def _pull(self, drain: bool) -> None:
        inner = self.handles.sim.receiver(self.port)
        got = inner.collect() if drain else [inner.next()]
        for m, x in got:
            self.handles.buffers.setdefault((self.port, m), []).append(x)

    def next(self) -> Any:
        buf = self.handles.buffers.setdefault((self.port, self.member), [])
        while not buf:
            try:
                self._pull(drain=False)
            except NoMoreOutput:
                raise NoMoreOutput(f"{self.port!r} member {self.member}: no more outputs") from None
        return buf.pop(0)

    def collect(self) -> list[Any]:
        self._pull(drain=True)
        buf = self.handles.buffers.setdefault((self.port, self.member), [])
        out = list(buf)
        buf.clear()
        return out


class LiftedHandles:
    """A cluster program's scenario handles over its lifted flow in the simulator."""

    def __init__(self, sim: Simulator, cluster_ports: dict[str, str]) -> None:
        self.sim = sim
        self.cluster_ports = cluster_ports
        self.buffers: dict[tuple[str, int], list[Any]] = {}

    def sender(self, port: str, ty: Any = None, *, member: int | None = None) -> _Sender:
        assert (member is None) == (port not in self.cluster_ports), (port, member)
        return _Sender(self.sim.sender(port), member)

    def receiver(self, port: str, *, member: int | None = None) -> Any:
        assert (member is None) == (port not in self.cluster_ports), (port, member)
        if member is None:
            return self.sim.receiver(port)
        return _Receiver(self, port, member)
