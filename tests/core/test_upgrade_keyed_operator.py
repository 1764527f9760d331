"""The keyed-state operator in the plan record, without Spark (`upgrade.py`).

Spark names a query's stateful operator in its state metadata and refuses, mid-run, to
resume one operator's state with another (STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_
METADATA). Executor state written by `transformWithStateInPandas` (hydrolite before the
Row-based `transformWithState`) must therefore be refused before anything runs, with the
fix; records without the field are such checkpoints. tests/spark/test_executor_state.py
checks the record a real run writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from examples import kvstore
from hydrolite.planner.spark.placement import place
from hydrolite.planner.spark.stages import Plan, plan_flow
from hydrolite.planner.spark.upgrade import KEYED_OPERATOR, LEGACY_KEYED_OPERATOR, reconcile, write_record


def _plan(executors: bool) -> Plan:
    plan = plan_flow(kvstore.build())
    for stage in plan.stages:
        stage.placement = place(stage, executors=executors)
    return plan


def _checkpoint(d: Path, executors: bool, legacy: bool = False) -> Path:
    """A checkpoint as a run leaves it after 2 committed batches; `legacy`: its record as the
    hydrolite before the Row-based operator wrote it (no `keyed_operator`)."""
    return checkpoint_of(d, _plan(executors), "keyed_operator" if legacy else None)


def checkpoint_of(d: Path, plan: Plan, without: str | None = None) -> Path:
    """`plan`'s record written under `d` (a query field `without` left out, as an earlier
    hydrolite wrote it), and its queries' commit markers of 2 batches."""
    recon = reconcile(plan, str(d))
    recon.apply()
    record = recon.record()
    for q in record["queries"].values():
        q.pop(without or "", None)
    write_record(str(d), record)
    committed(d, plan)
    return d


def committed(d: Path, plan: Plan, batches: int = 2) -> None:
    """Spark's commit markers of `batches` batches for each query of `plan` under `d`."""
    for st in plan.stages:
        commits = d / st.name / "spark" / "commits"
        commits.mkdir(parents=True)
        for b in range(batches):
            (commits / str(b)).write_text("v1\n{}\n")


def test_the_record_names_the_operator_of_executor_state_only(tmp_path: Path) -> None:
    ex = json.loads((_checkpoint(tmp_path / "ex", executors=True) / "plan.json").read_text())
    drv = json.loads((_checkpoint(tmp_path / "drv", executors=False) / "plan.json").read_text())
    assert [q.get("keyed_operator") for q in ex["queries"].values()] == [KEYED_OPERATOR]
    assert [q.get("keyed_operator") for q in drv["queries"].values()] == [None]


def test_executor_state_of_the_same_operator_resumes(tmp_path: Path) -> None:
    recon = reconcile(_plan(executors=True), str(_checkpoint(tmp_path, executors=True)))
    assert not recon.refused, recon.render()


def test_executor_state_of_the_pandas_operator_is_refused_with_the_fix(tmp_path: Path) -> None:
    recon = reconcile(_plan(executors=True), str(_checkpoint(tmp_path, executors=True, legacy=True)))
    text = recon.render()
    assert recon.refused
    assert f"written by Spark's {LEGACY_KEYED_OPERATOR} operator" in text, text
    assert f"this hydrolite keeps it in {KEYED_OPERATOR}" in text
    assert "fix: resume it with the hydrolite version that wrote it, or start a new --checkpoint" in text


def test_driver_state_of_an_earlier_record_resumes(tmp_path: Path) -> None:
    """The operator only matters to executor state: a legacy driver-only record resumes."""
    recon = reconcile(_plan(executors=False), str(_checkpoint(tmp_path, executors=False, legacy=True)))
    assert not recon.refused, recon.render()
