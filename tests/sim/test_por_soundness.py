"""Partial-order reduction is sound: brute force (reduce=False) and reduction see the same outcomes.

Every test explores a program both ways and compares the sets of outcomes (`por_check`:
each sink's deltas in the canonical form its type promises, and failures), and checks that
`executions + pruned` never exceeds the unreduced count. The hand-written programs each
exercise one independence rule of `hydrolite/sim/por.py`, in the case where it must *not*
reorder (same key, a key that changed, a whole-map snapshot) and where it may (different
keys); the generated ones are random programs: on one process (`tests/differential/progen`,
two ticks) and with clients and a cluster sending to a server (`por_programs`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import hydrolite as hl
from hydrolite import nondet
from hydrolite.errors import HydroliteError
from hydrolite.sim import Simulator
from tests.differential import progen

from . import por_programs
from .helpers import Server, Workers
from .por_check import Comparison, compare


class ClientA:
    """One client process."""


class ClientB:
    """Another client process."""


def two_clients(per_key_snapshot: bool, rekey: bool = False) -> Callable[[], hl.Flow]:
    """Two clients send (key, value) pairs to a server that sums them per key; a tick reads
    the sums with a snapshot (whole map, or per key with `per_key_snapshots`)."""

    def build() -> hl.Flow:
        flow = hl.FlowBuilder("two_clients")
        srv = flow.process(Server)
        a = flow.process(ClientA).source("a", tuple[str, int]).send(srv)
        b = flow.process(ClientB).source("b", tuple[str, int]).send(srv)
        pairs = a.merge_unordered(b)
        if rekey:
            pairs = pairs.map(lambda kv: (kv[1] % 3, kv[1]))  # the key is computed: unknown to reduction
        sums = pairs.into_keyed().fold_commutative(0, lambda s, x: s + x)
        sums.snapshot(srv.tick(), nondet("any recent sums")).entries().all_ticks().sink("sums")
        return flow.finalize()

    return build


def send_pairs(a: tuple[str, int], b: tuple[str, int]) -> Callable[[Simulator], None]:
    def body(s: Simulator) -> None:
        s.sender("a").send(a)
        s.sender("b").send(b)
        s.receiver("sums").collect()

    return body


def explore(build: Callable[[], hl.Flow], body: Callable[[Simulator], None], **options: Any) -> Comparison:
    result = compare(lambda: Simulator(build, **options), body)
    assert result is not None
    return result


def sums_seen(c: Comparison) -> set[Any]:
    """Every sums delta some execution's tick saw."""
    return {delta for outcome, _ in c.outcomes for _, deltas in outcome for delta in deltas}


def test_updates_of_one_key_are_ordered_even_per_key() -> None:
    # a: x += 2, b: x += 8 from two clients: a per-key snapshot may see x at 2 or at 8
    # first; the two deliveries write the same key and must not be reordered as one.
    c = explore(two_clients(True), send_pairs(("x", 2), ("x", 8)), per_key_snapshots=True)
    assert {(("x", 2),), (("x", 8),), (("x", 10),)} <= sums_seen(c)


def test_updates_of_different_keys_commute_under_per_key_snapshots() -> None:
    # x and y are different keys: with per-key snapshots the two deliveries commute (the
    # fold and the snapshot keep them apart), with a whole-map snapshot they do not ({x}
    # before {x, y} differs from {y} before {x, y}): the same outcomes, fewer executions.
    body = send_pairs(("x", 2), ("y", 8))
    per_key = explore(two_clients(True), body, per_key_snapshots=True)
    whole = explore(two_clients(False), body)
    assert (per_key.full, per_key.reduced) == (30, 6)  # 12 before keys were told apart
    assert (whole.full, whole.reduced) == (22, 8)
    assert {(("x", 2),), (("y", 8),)} <= sums_seen(whole)  # the map as one version: one key first


def test_a_computed_key_is_unknown_to_reduction() -> None:
    # x and y, mapped to (value % 3, value): both become key 2. Reduction cannot know that
    # from the sent elements, so it must treat the writes as touching any key.
    c = explore(two_clients(True, rekey=True), send_pairs(("x", 2), ("y", 8)), per_key_snapshots=True)
    assert {((2, 2),), ((2, 8),), ((2, 10),)} <= sums_seen(c)


def gather_mapped() -> hl.Flow:
    """Replies from cluster members, mapped per member (keyed map), batched per member."""
    flow = hl.FlowBuilder("gather_mapped")
    leader = flow.process(Server)
    replies = leader.source("job", int).broadcast(flow.cluster(Workers)).map(lambda j: j * 10).send(leader)
    replies.map(lambda v: v + 1).batch(leader.tick(), nondet("any grouping")).entries().all_ticks().sink("out")
    return flow.finalize()


def test_replies_keep_their_member_key_through_a_keyed_map() -> None:
    # the map changes values, not keys: deliveries from different members still append
    # under different keys of the keyed batch and commute
    def body(s: Simulator) -> None:
        s.sender("job").send(1)
        s.receiver("out").collect()

    c = explore(gather_mapped, body, cluster_sizes={"Workers": 2})
    assert (c.full, c.reduced) == (26, 3)  # 6 when only a direct delivery kept its key
    assert c.reduced + c.pruned <= c.full


def test_a_test_send_wakes_only_what_writes_its_key() -> None:
    # the test's send of ("x", 4) into the server's own source meets deliveries of y only
    def build() -> hl.Flow:
        flow = hl.FlowBuilder("local_and_remote")
        srv = flow.process(Server)
        remote = flow.process(ClientA).source("a", tuple[str, int]).send(srv)
        local = srv.source("s", tuple[str, int])
        sums = remote.merge_unordered(local).into_keyed().fold_commutative(0, lambda s, x: s + x)
        sums.snapshot(srv.tick(), nondet("any recent sums")).entries().all_ticks().sink("sums")
        return flow.finalize()

    def body(s: Simulator) -> None:
        s.sender("a").send_many([("y", 1), ("y", 2)])
        s.receiver("sums").next()
        s.sender("s").send(("x", 4))
        s.receiver("sums").collect()

    c = explore(build, body, per_key_snapshots=True)
    assert c.reduced < c.full


class Relay:
    """A process forwarding what two clients send."""


def test_appends_to_one_channel_keep_their_order() -> None:
    # two clients send to a relay, which forwards both to the server over one channel:
    # the two deliveries at the relay append to that channel, so their order is the order
    # the server sees (they conflict), whatever the relay merged unordered
    def build() -> hl.Flow:
        flow = hl.FlowBuilder("relay")
        srv, relay = flow.process(Server), flow.process(Relay)
        a = flow.process(ClientA).source("a", int).send(relay)
        b = flow.process(ClientB).source("b", int).send(relay)
        a.merge_unordered(b).send(srv).sink("out")
        return flow.finalize()

    def body(s: Simulator) -> None:
        s.sender("a").send(1)
        s.sender("b").send(2)
        s.receiver("out").collect()

    c = explore(build, body)
    assert {outcome[0][1] for outcome, _ in c.outcomes} == {((1,), (2,)), ((2,), (1,))}  # deltas, in order


def test_appends_to_one_edge_keep_their_order() -> None:
    # interleavings: a and b reach the second merge through one edge (the first merge's
    # output); releasing a's and b's edges appends to it, so those releases conflict
    def build() -> hl.Flow:
        flow = hl.FlowBuilder("edges")
        srv = flow.process(Server)
        a, b, c = (srv.source(name, int) for name in "abc")
        a.merge_unordered(b).merge_unordered(c).sink("out")
        return flow.finalize()

    def body(s: Simulator) -> None:
        for name, x in zip("abc", (1, 2, 3), strict=True):
            s.sender(name).send(x)
        s.receiver("out").collect()

    c = explore(build, body, interleavings=True)
    orders = {tuple(d[0] for d in outcome[0][1]) for outcome, _ in c.outcomes}
    assert len(orders) == 6  # every arrival order of the three sends
    assert c.reduced < c.full


GENERATED = settings(
    max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)


def run_all(inputs: list[tuple[str, int | None, list[Any]]], middle: bool) -> Callable[[Simulator], None]:
    """Send every input (collecting the first sink after the first port's, when `middle`),
    then collect every sink."""

    def body(s: Simulator) -> None:
        for i, (port, member, values) in enumerate(inputs):
            s.sender(port, member=member).send_many(values)
            if middle and i == 0:
                s.receiver(sorted(s.program.sinks)[0]).collect()
        for name in sorted(s.program.sinks):
            s.receiver(name).collect()

    return body


def test_generated_programs_with_network_actions() -> None:
    stats: Counter[str] = Counter()

    @GENERATED
    @given(st.data())
    def check(data: st.DataObject) -> None:
        g = por_programs.generate(progen.HypothesisDraw(data))
        source = g.source()
        note(source)
        note(f"inputs={g.inputs!r} options={g.options!r}")
        middle = data.draw(st.booleans())
        make = lambda: Simulator(por_programs.load(source), **g.options)  # noqa: E731
        result = compare(make, run_all(g.inputs, middle), budget=1_000)
        stats["compared" if result is not None else "too big"] += 1
        if result is not None and result.reduced < result.full:
            stats["reduced"] += 1

    check()
    assert stats["compared"] >= 20 and stats["reduced"] >= 10, stats


SMALL_INPUTS = {"xs": [3, 4], "ys": [5], "ks": [("a", 1), ("b", 2)], "ws": ["ab"]}


def test_generated_programs_on_one_process() -> None:
    stats: Counter[str] = Counter()

    @GENERATED
    @given(st.data())
    def check(data: st.DataObject) -> None:
        source = progen.generate(progen.HypothesisDraw(data)).source()
        note(source)
        try:
            por_programs.load(source)
        except HydroliteError:
            stats["rejected"] += 1  # not a legal program: nothing to explore
            return
        inputs: list[tuple[str, int | None, list[Any]]] = [
            (port, None, SMALL_INPUTS[port]) for port in sorted(SMALL_INPUTS)
        ]

        def body(s: Simulator) -> None:
            run_all([i for i in inputs if i[0] in s.program.sources], False)(s)

        result = compare(lambda: Simulator(por_programs.load(source)), body, budget=2_000)
        stats["compared" if result is not None else "too big"] += 1

    check()
    assert stats["compared"] >= 20, stats


def test_the_delta_log_sees_every_sink_write() -> None:
    # the check's own instrument: one execution of the gather writes 2 deltas (one per
    # member) or 1 (both at once), and the outcomes hold both shapes
    def body(s: Simulator) -> None:
        s.sender("job").send(1)
        s.receiver("out").collect()

    c = explore(gather_mapped, body, cluster_sizes={"Workers": 2})
    shapes = {len(deltas) for outcome, _ in c.outcomes for _, deltas in outcome}
    assert shapes == {1, 2}
