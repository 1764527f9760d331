"""Where a query keeps the version of a keyed table it reads from another query, in the plan
record, without Spark (`upgrade.py`).

With its state on the executors, a reader whose lookups are its only use of the table keeps
the version per key in its executor region (`placement._Finder.table_of`); otherwise, and in
every record written before the field existed, as Parquet under the query's state. A resume
that moves it would start it empty while the entries it applied are never read again: it is
refused before anything runs, with the fix. tests/spark/test_keyed_channel.py restarts a real
reader with its table on the executors.
"""

from __future__ import annotations

import json
from pathlib import Path

import hydrolite as hl
from hydrolite.ir.graph import Flow
from hydrolite.planner.spark.placement import place_all
from hydrolite.planner.spark.stages import Plan, plan_flow
from hydrolite.planner.spark.upgrade import reconcile
from tests.core.test_upgrade_keyed_operator import checkpoint_of
from tests.spark.test_keyed_channel import ND, P


def table_and_own_state() -> Flow:
    """Tick `b` looks up gets in tick `a`'s per-key count (another query) and in a Python
    fold of its own gets (its executor region, read per key)."""
    fb = hl.FlowBuilder("table-reader")
    p = fb.process(P)
    a, b = p.tick(), p.tick()
    table = p.source("puts", tuple[str, int]).batch(a, ND).all_ticks().into_keyed().count()
    gets = p.source("gets", str)
    mine = gets.map(lambda k: (k, 1)).into_keyed().fold(0, lambda acc, x: acc * 10 + x)
    asked = gets.batch(b, ND).map(lambda k: (k, None)).into_keyed()
    asked.lookup_keyed_singleton(mine.snapshot(b, ND)).entries().all_ticks().sink("mine")
    asked.lookup_keyed_singleton(table.snapshot(b, ND)).entries().all_ticks().sink("theirs")
    return fb.finalize()


def _plan(keyed_state: str) -> Plan:
    plan = plan_flow(table_and_own_state())
    place_all(plan, keyed_state, "local-cluster[2,1,1024]")
    return plan


def _checkpoint(d: Path, keyed_state: str, before_the_field: bool = False) -> Path:
    """A checkpoint as a run leaves it after 2 committed batches; `before_the_field`: its
    record as hydrolite wrote it before tables were recorded (every version as Parquet)."""
    return checkpoint_of(d, _plan(keyed_state), "tables" if before_the_field else None)


def test_the_record_says_where_each_table_lives(tmp_path: Path) -> None:
    ex = json.loads((_checkpoint(tmp_path / "ex", "executors") / "plan.json").read_text())
    drv = json.loads((_checkpoint(tmp_path / "drv", "driver") / "plan.json").read_text())
    assert [list(q.get("tables", {}).values()) for q in ex["queries"].values()] == [[], ["executors"]]
    assert [list(q.get("tables", {}).values()) for q in drv["queries"].values()] == [[], ["parquet"]]
    reader = _plan("executors").stages[1]
    assert reader.placement is not None and reader.placement.region is not None
    assert [s.table is not None for s in reader.placement.region.states] == [False, True]


def test_a_table_where_it_was_resumes(tmp_path: Path) -> None:
    for mode in ("executors", "driver"):
        recon = reconcile(_plan(mode), str(_checkpoint(tmp_path / mode, mode)))
        assert not recon.refused, recon.render()


def test_a_table_kept_as_parquet_is_not_resumed_per_key(tmp_path: Path) -> None:
    """The reader already had executor state of its own, so only the table's record tells
    that its version would start empty."""
    recon = reconcile(_plan("executors"), str(_checkpoint(tmp_path, "executors", before_the_field=True)))
    text = recon.render()
    assert recon.refused, text
    assert len(recon.refusals) == 1, text
    assert "the version it keeps of the keyed table read through channel ch_count-" in text, text
    assert "lives as Parquet under the query's state in this checkpoint, and this run would keep it per key" in text
    assert "fix: resume with --keyed-state driver, or start a new --checkpoint" in text


def test_a_table_kept_per_key_is_not_resumed_as_parquet(tmp_path: Path) -> None:
    recon = reconcile(_plan("driver"), str(_checkpoint(tmp_path, "executors")))
    text = recon.render()
    assert recon.refused, text
    assert "lives per key in Spark's state store in this checkpoint, and this run would keep it as Parquet" in text
    assert "fix: resume with --keyed-state executors, or start a new --checkpoint" in text


def test_auto_keeps_the_table_as_parquet_and_says_why(tmp_path: Path) -> None:
    """`auto` on a cluster master puts the reader's own fold on the executors but keeps the
    table's version as Parquet: that measured faster (README); the plan gives the reason, the
    record says parquet, and a checkpoint that kept it per key is not resumed under `auto`."""
    reader = _plan("auto").stages[1]
    assert reader.placement is not None and reader.placement.region is not None
    assert [s.table is not None for s in reader.placement.region.states] == [False]
    (table,) = [p for p in reader.placement.placements if p.table is not None]
    assert not table.executors and "keyed_state='auto': the Parquet copy measured faster" in table.why, table.why
    assert "--keyed-state executors keeps it per key" in table.why
    auto = json.loads((_checkpoint(tmp_path / "auto", "auto") / "plan.json").read_text())
    assert [list(q.get("tables", {}).values()) for q in auto["queries"].values()] == [[], ["parquet"]]
    recon = reconcile(_plan("auto"), str(_checkpoint(tmp_path / "ex", "executors")))
    assert recon.refused and "fix: resume with --keyed-state executors" in recon.render(), recon.render()
