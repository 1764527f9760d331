"""`keyed_state='auto'` keeps a resumed state where its checkpoint has it (`kept_homes.py`):
pure planning against a plan record, no Spark session (on real Spark:
tests/spark/test_executor_state.py and tests/spark/test_native_state.py).

The record here is written by `upgrade.Reconciliation.record()` from a placement, as a run
writes it; a query counts as having committed batches when Spark's commit log has one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.cli import load_program, main
from hydrolite.planner.spark.kept_homes import recorded_homes
from hydrolite.planner.spark.placement import Placement, place, place_all
from hydrolite.planner.spark.stages import Plan, plan_flow
from hydrolite.planner.spark.upgrade import reconcile, write_record

ND = nondet("any prefix of the pairs")
CLUSTER = "local-cluster[2,1,1024]"  # `auto` on a cluster master: keyed state on the executors


class P:
    """Tag of the process."""


def _plan() -> Plan:
    """A join of two sources, a count of its pairs read per key (a fold the join itself
    keeps on the executors), and a count of a third source's keys read per key."""
    flow = hl.FlowBuilder("kept")
    p = flow.process(P)
    pairs = p.source("xs", tuple[int, int]).join(p.source("ys", tuple[int, str]))
    tick = p.tick()
    table = pairs.into_keyed().count().snapshot(tick, ND)
    asks = p.source("ask", int).batch(tick, ND).map(lambda a: (a, a)).into_keyed()
    asks.lookup_keyed_singleton(table).entries().all_ticks().sink("out")
    return plan_flow(flow.finalize())


def _by_op(plan: Plan) -> dict[str, Placement]:
    (stage,) = plan.stages
    assert stage.placement is not None
    return {p.node.op: p for p in stage.placement.placements}


def _checkpoint(tmp_path: Path, count_home: str, planned: Callable[[], Plan] = _plan) -> tuple[str, str]:
    """A checkpoint whose record keeps the join per key and the count where `count_home`
    says (as hydrolite before the count moved into the join wrote it), one batch committed;
    (its path, the count's name as `--reset-state` takes it)."""
    plan = planned()
    (stage,) = plan.stages
    count = next(x for x in stage.stateful if x.op == "count")
    stage.placement = place(stage, executors=True, kept={id(count): count_home})
    ck = str(tmp_path / "ck")
    recon = reconcile(plan, ck)
    write_record(ck, recon.record())
    (query,) = recon.record()["queries"]
    commits = tmp_path / "ck" / query / "spark" / "commits"
    commits.mkdir(parents=True)
    (commits / "0").write_text("v1\n{}\n")
    return ck, plan.identities[id(count)].display


def test_a_count_the_checkpoint_keeps_on_the_driver_stays_there_next_to_its_join(tmp_path: Path) -> None:
    ck, _ = _checkpoint(tmp_path, "driver")
    new = _plan()
    place_all(new, "auto", CLUSTER)  # without the checkpoint: the join folds the count itself
    assert _by_op(new)["count"].executors and "folded by join()" in _by_op(new)["count"].why
    assert reconcile(new, ck).refused  # ... which would start it empty on the executors
    resumed = _plan()
    place_all(resumed, "auto", CLUSTER, ck)
    homes = _by_op(resumed)
    assert not homes["count"].executors and "kept on the driver, where the checkpoint keeps it" in homes["count"].why
    assert homes["join"].executors and "where the checkpoint" not in homes["join"].why  # where the rules put it
    recon = reconcile(resumed, ck)
    assert not recon.refused, recon.render()


def test_explicit_options_and_reset_states_are_placed_by_the_rules(tmp_path: Path) -> None:
    ck, count = _checkpoint(tmp_path, "driver")
    explicit = _plan()
    place_all(explicit, "executors", CLUSTER, ck)  # the option the user named: no holding
    assert _by_op(explicit)["count"].executors
    text = reconcile(explicit, ck).render()
    assert "lives on the driver in this checkpoint" in text and "the default auto" in text, text
    reset = _plan()
    place_all(reset, "auto", CLUSTER, ck, reset=[count])  # it starts empty: free to move
    assert _by_op(reset)["count"].executors
    assert not reconcile(reset, ck, [count]).refused


def test_a_join_kept_per_key_stays_per_key_where_auto_would_keep_history(tmp_path: Path) -> None:
    ck, _ = _checkpoint(tmp_path, "executors")  # the count folded by the join, on the executors
    local = _plan()
    place_all(local, "auto", "local[2]")  # a new run on a local master: history, the count on the driver
    assert not _by_op(local)["join"].executors and not _by_op(local)["count"].executors
    resumed = _plan()
    place_all(resumed, "auto", "local[2]", ck)
    homes = _by_op(resumed)
    assert homes["join"].executors and "kept on the executors, where the checkpoint keeps it" in homes["join"].why
    assert homes["count"].executors and "folded by join()" in homes["count"].why, homes["count"].why
    assert not reconcile(resumed, ck).refused


def test_only_queries_that_committed_a_batch_hold_their_states(tmp_path: Path) -> None:
    ck, _ = _checkpoint(tmp_path, "driver")
    plan = _plan()
    assert sorted(recorded_homes(plan, ck).values()) == ["driver", "executors"]
    for commit in (tmp_path / "ck").rglob("commits/0"):
        commit.unlink()
    assert recorded_homes(plan, ck) == {}
    assert recorded_homes(plan, str(tmp_path / "none")) == {}


PROGRAM = """\
import hydrolite as hl
from hydrolite import nondet


class P: ...


def build() -> hl.Flow:
    flow = hl.FlowBuilder("kept")
    p = flow.process(P)
    pairs = p.source("xs", tuple[int, int]).join(p.source("ys", tuple[int, str]))
    tick = p.tick()
    table = pairs.into_keyed().count().snapshot(tick, nondet("any prefix"))
    asks = p.source("ask", int).batch(tick, nondet("any grouping")).map(lambda a: (a, a)).into_keyed()
    asks.lookup_keyed_singleton(table).entries().all_ticks().sink("out")
    return flow.finalize()
"""


def test_plan_against_a_checkpoint_places_as_the_run_would(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "joined.py"
    prog.write_text(PROGRAM)
    ck, _ = _checkpoint(tmp_path, "driver", lambda: plan_flow(load_program(str(prog))[1]))
    assert main(["plan", str(prog), "--against", ck, "--master", CLUSTER]) == 0
    out = capsys.readouterr().out
    assert "state kept" in out and "refused" not in out, out
    assert main(["plan", str(prog), "--against", ck, "--master", CLUSTER, "--keyed-state", "executors"]) == 1
    out = capsys.readouterr().out
    assert "lives on the driver in this checkpoint" in out, out


def test_a_keyed_table_read_per_key_stays_per_key(tmp_path: Path) -> None:
    """A query reading another query's keyed table per key keeps it in its state store under
    `--keyed-state executors`; `auto` on a local master keeps a new one as Parquet, and keeps a
    resumed one where the checkpoint has it."""
    from tests.spark.test_keyed_channel import counts_read_elsewhere

    def tables(plan: Plan) -> list[tuple[str, bool]]:
        return [(p.table, p.executors) for s in plan.stages for p in s.placement.placements if p.table]  # type: ignore[union-attr]

    written = plan_flow(counts_read_elsewhere())
    place_all(written, "executors", "local[2]")
    assert [on for _, on in tables(written)] == [True]
    ck = str(tmp_path / "ck")
    recon = reconcile(written, ck)
    write_record(ck, recon.record())
    for query in recon.record()["queries"]:
        (tmp_path / "ck" / query / "spark" / "commits").mkdir(parents=True)
        (tmp_path / "ck" / query / "spark" / "commits" / "0").write_text("v1\n{}\n")
    fresh = plan_flow(counts_read_elsewhere())
    place_all(fresh, "auto", "local[2]")
    assert [on for _, on in tables(fresh)] == [False] and reconcile(fresh, ck).refused
    resumed = plan_flow(counts_read_elsewhere())
    place_all(resumed, "auto", "local[2]", ck)
    assert tables(resumed) == tables(written)
    assert not reconcile(resumed, ck).refused, reconcile(resumed, ck).render()


def test_a_native_count_read_whole_stays_native(tmp_path: Path) -> None:
    """A count read whole is a native aggregation plus a Parquet copy under `executors`; on a
    local master `auto` keeps a new one on the driver, and a resumed one native (found by the
    differential test's resumed runs, run_long --resume auto, seed 17001)."""

    def counted() -> Plan:
        flow = hl.FlowBuilder("whole")
        p = flow.process(P)
        p.keyed_source("ks", str, int).count().snapshot(p.tick(), ND).entries().all_ticks().sink("o")
        return plan_flow(flow.finalize())

    written = counted()
    place_all(written, "executors", "local[2]")
    assert _by_op(written)["count"].native
    ck = str(tmp_path / "ck")
    recon = reconcile(written, ck)
    write_record(ck, recon.record())
    (query,) = recon.record()["queries"]
    (tmp_path / "ck" / query / "spark" / "commits").mkdir(parents=True)
    (tmp_path / "ck" / query / "spark" / "commits" / "0").write_text("v1\n{}\n")
    fresh = counted()
    place_all(fresh, "auto", "local[2]")
    assert not _by_op(fresh)["count"].native and reconcile(fresh, ck).refused
    resumed = counted()
    place_all(resumed, "auto", "local[2]", ck)
    assert _by_op(resumed)["count"].native
    assert not reconcile(resumed, ck).refused, reconcile(resumed, ck).render()
