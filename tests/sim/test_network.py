"""Network sends between locations; clusters run every collection per member."""

from __future__ import annotations

from typing import Any

import pytest

import hydrolite as hl
from hydrolite import MemberId, nondet
from hydrolite.locations.sharding import member_of_key
from hydrolite.sim import EagerChooser, SimulationFailure, Simulator, UserFunctionError

from .helpers import Client, Server, Workers


def test_demux_routes_to_one_member_and_replies_are_keyed_by_sender() -> None:
    flow = hl.FlowBuilder("demux")
    p = flow.process(Server)
    workers = flow.cluster(Workers)
    at_member = p.source("in", object).demux(workers)
    at_member.map(lambda x: x * 2).sink("seen")
    at_member.map(lambda x: x + 1).send(p).entries().sink("replies")
    sim = Simulator(flow.finalize(), cluster_sizes={"Workers": 3})

    def scenario(s: Simulator) -> None:
        s.sender("in").send((MemberId(2), 5))
        s.sender("in").send((0, 7))  # a plain int member index works too
        s.receiver("seen", member=2).assert_yields([10])
        s.receiver("seen", member=0).assert_yields([14])
        s.receiver("seen", member=1).assert_no_more()
        s.receiver("replies").assert_yields_only_unordered([(MemberId(2), 6), (MemberId(0), 8)])

    sim.exhaustive(scenario)


def test_cluster_to_cluster_broadcast() -> None:
    class Others:
        """A second cluster."""

    flow = hl.FlowBuilder("c2c")
    a = flow.cluster(Workers)
    b = flow.cluster(Others)
    a.source("in", int).broadcast(b).entries().sink("out")
    sim = Simulator(flow.finalize(), cluster_sizes={"Workers": 2, "Others": 2})

    def scenario(s: Simulator) -> None:
        s.sender("in", member=1).send(3)
        for m in (0, 1):
            s.receiver("out", member=m).assert_yields_only([(MemberId(1), 3)])

    sim.run_once(scenario, EagerChooser())


def test_demux_to_a_missing_member_names_the_operator() -> None:
    flow = hl.FlowBuilder("bad-demux")
    p = flow.process(Server)
    p.source("in", object).demux(flow.cluster(Workers)).sink("out")
    sim = Simulator(flow.finalize(), cluster_sizes={"Workers": 2})

    def scenario(s: Simulator) -> None:
        s.sender("in").send((5, "x"))
        s.receiver("out", member=0).collect()

    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(scenario)
    assert isinstance(info.value.cause, UserFunctionError)
    assert "demux() to member 5, but the cluster has 2 members" in str(info.value)


@pytest.mark.parametrize("members", [1, 2, 5])
def test_demux_by_key_sends_every_value_of_a_key_to_its_owner(members: int) -> None:
    flow = hl.FlowBuilder("by-key")
    p = flow.process(Server)
    owned = p.keyed_source("in", str, int).demux_by_key(flow.cluster(Workers))
    owned.entries().sink("owned")
    sim = Simulator(flow.finalize(), cluster_sizes={"Workers": members})
    sent = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("d", 6)]

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many(sent)
        for m in range(members):  # each member: exactly its keys, each key's values in order
            mine = [kv for kv in sent if member_of_key(kv[0], members) == m]
            got = s.receiver("owned", member=m).collect()
            assert sorted(got) == sorted(mine), (m, got)
            for key in {k for k, _ in mine}:
                assert [v for k, v in got if k == key] == [v for k, v in mine if k == key]

    sim.exhaustive(scenario)


def test_demux_by_key_of_a_key_without_a_stable_encoding_names_the_operator() -> None:
    class Opaque:
        """A key whose encoding would differ between processes."""

    flow = hl.FlowBuilder("bad-key")
    p = flow.process(Server)
    p.keyed_source("in", object, int).demux_by_key(flow.cluster(Workers)).entries().sink("out")
    sim = Simulator(flow.finalize(), cluster_sizes={"Workers": 2})

    def scenario(s: Simulator) -> None:
        s.sender("in").send((Opaque(), 1))
        s.receiver("out", member=0).collect()

    with pytest.raises(SimulationFailure) as info:
        sim.exhaustive(scenario)
    assert isinstance(info.value.cause, UserFunctionError)
    text = str(info.value)
    assert "demux_by_key() cannot route a key of type Opaque" in text and "map() the key" in text, text


def test_a_snapshot_at_the_receiver_sees_any_delivery_prefix() -> None:
    # a count of messages received from a client, read in a tick of the server: every
    # prefix of the FIFO channel is a possible version
    flow = hl.FlowBuilder("remote-count")
    c = flow.process(Client)
    p = flow.process(Server)
    received = c.source("in", int).send(p).count()
    ask = p.source("ask", str).batch(p.tick(), nondet("any grouping"))
    ask.cross_singleton(received.snapshot(ask.location, nondet("any delivered prefix"))).all_ticks().sink("out")
    sim = Simulator(flow.finalize())
    answers: set[Any] = set()

    def scenario(s: Simulator) -> None:
        s.sender("in").send_many([1, 1])
        s.sender("ask").send("q")
        answers.add(s.receiver("out").next()[1])

    sim.exhaustive(scenario)
    assert answers == {0, 1, 2}
