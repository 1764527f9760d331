"""The cluster-lifting pass (`hydrolite/planner/spark/cluster.py`), without Spark: the lifted,
process-only flow runs in the simulator and passes the cluster program's own scenarios, and
what has no exact lifted form is refused at plan time with the user's line."""

from __future__ import annotations

from typing import Any

import pytest
from cluster_programs import CASES, Case, LiftedHandles, Server, Workers

import hydrolite as hl
from hydrolite import MemberId, nondet
from hydrolite.cli import main
from hydrolite.ir.ids import ClusterId, top_of
from hydrolite.ir.meta import Kind
from hydrolite.passes.align import align_flow
from hydrolite.planner.spark.cluster import lift_clusters
from hydrolite.planner.spark.render import render_text
from hydrolite.planner.spark.stages import SparkPlanError, plan_flow
from hydrolite.sim import SimulationFailure, Simulator


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lifted_flow_passes_the_cluster_scenario(case: Case) -> None:
    flow = case.build()
    case.simulate(Simulator(flow, cluster_sizes=case.sizes), case.scenario)  # the reference
    lifted = lift_clusters(align_flow(flow), case.sizes)
    assert not any(isinstance(top_of(x.meta.loc), ClusterId) for x in lifted.flow.nodes())
    # one tick runs every member: too many schedules to enumerate, so a seeded sample of them
    Simulator(lifted.flow).fuzz(lambda s: case.scenario(LiftedHandles(s, lifted.ports)), iterations=300, database=None)


def test_cluster_state_is_keyed_by_member_in_the_plan() -> None:
    case = next(c for c in CASES if c.name == "broadcast_count")
    plan = plan_flow(case.build(), case.sizes)
    assert plan.cluster_members == {"Workers": 3} and plan.cluster_ports == {}
    text = render_text(plan)
    assert "cluster Cluster[Workers]: 3 members, run as Process[Workers*3]" in text
    states = [x for s in plan.stages for x in s.stateful]
    assert {x.op for x in states} >= {"count", "fold"}
    assert all(x.meta.kind is Kind.KEYED_SINGLETON and x.meta.key is int for x in states if x.op in ("count", "fold"))
    assert "one entry per member, keyed by member index" in text


def test_a_cluster_source_is_a_keyed_port_of_member_records() -> None:
    case = next(c for c in CASES if c.name == "keyed_per_member")
    plan = plan_flow(case.build(), {"Workers": 2})
    src = plan.flow.sources["words"]
    assert src.meta.kind is Kind.KEYED_STREAM and src.meta.key is int and src.meta.elem is str
    assert plan.cluster_ports == {"words": "Workers", "ask": "Workers", "lengths": "Workers", "counts": "Workers"}


def test_a_record_for_a_missing_member_fails() -> None:
    case = next(c for c in CASES if c.name == "keyed_per_member")
    lifted = lift_clusters(align_flow(case.build()), {"Workers": 2})

    def scenario(s: Any) -> None:
        s.sender("words").send((5, "x"))
        s.receiver("lengths").collect()

    with pytest.raises(
        SimulationFailure, match="input 'words' has a record for member 5, but the cluster has 2 members"
    ):
        Simulator(lifted.flow).exhaustive(scenario)


def test_demux_out_of_range_fails_with_the_simulators_message() -> None:
    case = next(c for c in CASES if c.name == "demux_gather")
    lifted = lift_clusters(align_flow(case.build()), {"Workers": 2})

    def scenario(s: Any) -> None:
        s.sender("in").send((MemberId(5), 1))
        s.receiver("replies").collect()

    with pytest.raises(
        SimulationFailure, match=r"demux\(\) to member MemberId\(raw=5\), but the cluster has 2 members"
    ):
        Simulator(lifted.flow).exhaustive(scenario)


def test_member_counts_are_checked() -> None:
    case = next(c for c in CASES if c.name == "demux_gather")
    with pytest.raises(SparkPlanError, match="cluster_sizes names 'Nope'"):
        plan_flow(case.build(), {"Nope": 2})
    with pytest.raises(SparkPlanError, match="needs at least one member"):
        plan_flow(case.build(), {"Workers": 0})
    assert plan_flow(case.build()).cluster_members == {"Workers": 2}  # the simulator's default


def _refused(build: Any) -> str:
    flow = hl.FlowBuilder("refused")
    w = flow.cluster(Workers)
    build(w, w.tick(), flow.process(Server))
    with pytest.raises(SparkPlanError) as info:
        plan_flow(flow.finalize())
    return str(info.value)


def test_into_stream_of_a_count_is_refused() -> None:
    text = _refused(
        lambda w, t, p: w.source("x", int).batch(t, nondet("any")).count().into_stream().all_ticks().sink("o")
    )
    assert "into_stream() on Cluster[Workers] at test_cluster_lift.py:" in text
    assert "whether or not that member ran" in text and "fix:" in text


def test_latest_of_a_tick_body_is_refused() -> None:
    def build(w: Any, t: Any, p: Any) -> None:
        last = w.source("x", int).batch(t, nondet("any")).count().latest()
        t2 = w.tick()
        w.source("y", int).batch(t2, nondet("any")).cross_singleton(last.snapshot(t2, nondet("any"))).all_ticks().sink(
            "o"
        )

    assert "latest() on Cluster[Workers] at test_cluster_lift.py:" in _refused(build)


def test_a_singleton_cycle_on_a_cluster_is_refused() -> None:
    def build(w: Any, t: Any, p: Any) -> None:
        handle, prev = t.singleton_cycle(0)
        xs = w.source("x", int).batch(t, nondet("any"))
        handle.complete_next_tick(prev.map(lambda v: v + 1))
        xs.cross_singleton(prev).all_ticks().sink("o")

    assert "on Cluster[Workers] at test_cluster_lift.py:" in _refused(build)


def test_cli_plan_takes_cluster_members(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "examples/sharded_kvstore.py", "--cluster-members", "Shard=3"]) == 0
    out = capsys.readouterr().out
    assert "cluster Cluster[Shard]: 3 members, run as Process[Shard*3]" in out
    assert "[Cluster[Shard]: one entry per member, keyed by member index]" in out


def test_process_to_process_sends_are_unchanged() -> None:
    class Client:
        """Another process tag."""

    flow = hl.FlowBuilder("p2p")
    client, server, w = flow.process(Client), flow.process(Server), flow.cluster(Workers)
    client.source("in", int).send(server).broadcast(w).map(lambda x: x + 1).sink("out")
    lifted = lift_clusters(align_flow(flow.finalize()), {"Workers": 2})
    (send,) = [x for x in lifted.flow.nodes() if x.op == "send" and str(x.meta.loc) == "Process[Server]"]
    assert send.meta.kind is Kind.STREAM and send.children[0].meta.loc.tag.endswith("Client")

    def scenario(s: Any) -> None:
        s.sender("in").send_many([1, 2])
        s.receiver("out", member=0).assert_yields_only([2, 3])
        s.receiver("out", member=1).assert_yields_only([2, 3])

    Simulator(lifted.flow).exhaustive(lambda s: scenario(LiftedHandles(s, lifted.ports)))


def test_resuming_with_another_member_count_is_refused(tmp_path: Any) -> None:
    from hydrolite.planner.spark.upgrade import Reconciliation, reconcile, write_record

    case = next(c for c in CASES if c.name == "broadcast_count")
    before = plan_flow(case.build(), {"Workers": 3})
    write_record(str(tmp_path), Reconciliation(before, str(tmp_path)).record())
    same = reconcile(plan_flow(case.build(), {"Workers": 3}), str(tmp_path))
    assert not same.refused
    other = reconcile(plan_flow(case.build(), {"Workers": 2}), str(tmp_path))
    assert other.refused
    text = other.render()
    assert "cluster Workers: the checkpoint was written with 3 members and this run has 2" in text
    assert "--cluster-members Workers=3" in text


def test_resuming_keys_routed_by_another_hash_is_refused(tmp_path: Any) -> None:
    """A record of the BLAKE2b route (no `key_routing`: hydrolite before SHA-256) would put each
    key's state on another member: refused for a program routing by key, not for others."""
    import json

    from hydrolite.planner.spark.upgrade import PLAN_FILE, Reconciliation, reconcile, write_record

    sharded = next(c for c in CASES if c.name == "sharded_by_key")
    record = Reconciliation(plan_flow(sharded.build(), sharded.sizes), str(tmp_path)).record()
    write_record(str(tmp_path), record)
    assert not reconcile(plan_flow(sharded.build(), sharded.sizes), str(tmp_path)).refused
    del record["key_routing"]
    write_record(str(tmp_path), record)
    old = reconcile(plan_flow(sharded.build(), sharded.sizes), str(tmp_path))
    assert old.refused
    assert "demux_by_key(): the checkpoint's keys were routed to members by hydrolite before" in old.render()
    assert "start a new --checkpoint" in old.render()
    broadcast = next(c for c in CASES if c.name == "broadcast_count")  # no demux_by_key(): nothing routed by key
    record = Reconciliation(plan_flow(broadcast.build(), broadcast.sizes), str(tmp_path)).record()
    del record["key_routing"]
    write_record(str(tmp_path), record)
    assert not reconcile(plan_flow(broadcast.build(), broadcast.sizes), str(tmp_path)).refused
    assert json.loads((tmp_path / PLAN_FILE).read_text())["clusters"] == broadcast.sizes
