"""Upgrade safety without Spark: a program's plan against the plan a checkpoint recorded.

A "checkpoint" here is what a run leaves for the reconciliation to read: `plan.json` and,
per query, Spark's `commits/<n>` marker. The Spark tests (tests/spark/test_upgrade.py)
resume real runs with edited programs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.errors import FlowError
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.upgrade import Reconciliation, reconcile, write_record


class Server:
    """Tag of the test process."""


class Edits(TypedDict, total=False):
    """Edits of `counter` that tests choose by parameter (each one a switch)."""

    identity_map: bool
    keep_all_filter: bool
    extra_pipeline_first: bool


def counter(
    *,
    port: str = "increment",
    identity_map: bool = False,
    keep_all_filter: bool = False,
    extra_pipeline_first: bool = False,
    init: float = 0,  # an int unless a test changes the accumulator's type
    second_fold: bool = False,
    drop_count: bool = False,
    name: str | None = None,
    step: int = 1,
    twice: bool = False,
) -> hl.Flow:
    """The README's counter, with the edits a user makes between two runs."""
    flow = hl.FlowBuilder("counter")
    server = flow.process(Server)
    if extra_pipeline_first:
        server.source("audit", str).map(str.upper).sink("audit_out")
    increment = server.keyed_source(port, str, type(None))
    query = server.keyed_source("query", str, type(None))
    align = server.local_align_point()
    values = increment.values()
    if identity_map:
        values = values.map(lambda v: v)
    if keep_all_filter:
        values = values.filter(lambda v: True)
    if twice:
        count = values.fold_commutative(init, lambda c, _: c + 2 * step, name=name)
    else:
        count = values.fold_commutative(init, lambda c, _: c + step, name=name)
    increment.release_aligned(align).entries().sink("increment_ack")
    tick = server.tick()
    names = query.batch(tick, nondet("any grouping")).entries().map(lambda kv: kv[0])
    if drop_count:
        names.all_ticks().sink("query_response")
        return flow.finalize()
    answers = names.cross_singleton(count.snapshot_aligned(tick, align, nondet("consistent with the acks")))
    if second_fold:
        total = values.fold_commutative(0, lambda c, _: c + 100)
        answers.cross_singleton(total.snapshot_aligned(tick, align, nondet("consistent"))).all_ticks().sink(
            "query_response"
        )
    else:
        answers.all_ticks().sink("query_response")
    return flow.finalize()


def checkpoint_of(flow: hl.Flow, d: Path, batches: int = 3) -> Path:
    """A checkpoint as a run of `flow` leaves it after `batches` committed batches."""
    plan = plan_flow(flow)
    recon = reconcile(plan, str(d))
    recon.apply()
    write_record(str(d), recon.record())
    for st in plan.stages:
        commits = d / st.name / "spark" / "commits"
        commits.mkdir(parents=True)
        for b in range(batches):
            (commits / str(b)).write_text("v1\n{}\n")
    return d


def check(flow: hl.Flow, d: Path, reset: tuple[str, ...] = ()) -> Reconciliation:
    return reconcile(plan_flow(flow), str(d), reset)


def test_a_new_checkpoint_has_nothing_to_compare(tmp_path: Path) -> None:
    recon = check(counter(), tmp_path)
    assert not recon.refused and recon.fresh


def test_the_same_program_resumes_silently(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    recon = check(counter(), ck)
    assert not recon.refused and not recon.notable
    assert "resumes after batch 2" in recon.render()


@pytest.mark.parametrize(
    "edit", [Edits(identity_map=True), Edits(keep_all_filter=True), Edits(identity_map=True, keep_all_filter=True)]
)
def test_pass_through_operators_above_a_fold_keep_its_state(tmp_path: Path, edit: Edits) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    recon = check(counter(**edit), ck)
    assert not recon.refused, recon.render()
    plan = recon.plan
    recon.apply()
    old = json.loads((ck / "plan.json").read_text())["queries"]["tick0"]["state"]
    fold = next(x for x in plan.stages[0].stateful if x.op == "fold")
    assert plan.stages[0].state_keys[id(fold)] in old  # read from the key the checkpoint holds


def test_moving_a_sink_statement_and_adding_a_pipeline_keeps_every_query(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    recon = check(counter(extra_pipeline_first=True), ck)
    assert not recon.refused, recon.render()
    recon.apply()
    by_sink = {s.port: st.name for st in recon.plan.stages for s in st.sinks}
    assert by_sink["query_response"] == "tick0"  # the old query's directory, not a renumbered one
    assert by_sink["audit_out"] not in ("tick0",)
    assert "+ query" in recon.render() and "starts from the beginning of its inputs" in recon.render()


def test_a_renamed_port_is_refused_with_the_inputs_diff(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    recon = check(counter(port="incr"), ck)
    assert recon.refused
    text = recon.render()
    assert "added ['incr'], removed ['increment']" in text
    assert "a renamed port is a new input" in text


def test_removed_state_is_refused_unless_reset(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(second_fold=True), tmp_path)
    recon = check(counter(), ck)
    assert recon.refused
    text = recon.render()
    line = next(ln for ln in text.splitlines() if "would be lost" in ln)
    name = line.split("- ", 1)[1].split(":", 2)
    display = f"{name[0]}:{name[1]}"
    assert display.startswith("fold@test_upgrade.py:")
    assert f"--reset-state {display}" in text
    accepted = check(counter(), ck, (display,))
    assert not accepted.refused, accepted.render()
    assert f"- {display}: state dropped (--reset-state)" in accepted.render()


def test_restructured_queries_are_refused_with_both_reasons(tmp_path: Path) -> None:
    # without the count, the acks no longer wait for the tick: the tick's query loses an input
    text = check(counter(drop_count=True), checkpoint_of(counter(), tmp_path)).render()
    assert "query tick0 reads ['query'] but its checkpoint recorded ['increment', 'query']" in text
    assert "would be lost: the program no longer has this operator" in text


def test_new_state_in_a_running_query_is_refused_unless_reset(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    recon = check(counter(second_fold=True), ck)
    assert recon.refused
    text = recon.render()
    assert "would start empty at batch 3, without the 3 batch(es) of input already read" in text
    new = next(i for i in recon.plan.identities.values() if i.op == "fold" and f"{i.display}: new state" in text)
    accepted = check(counter(second_fold=True), ck, (new.display,))
    assert not accepted.refused, accepted.render()
    accepted.apply()
    keys = accepted.plan.stages[0].state_keys
    assert any(k.endswith("~r1") for k in keys.values())  # a fresh key: nothing old is read
    assert "state reset (--reset-state): starts empty at batch 3" in accepted.render()


def test_a_changed_state_type_is_refused(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    text = check(counter(init=0.0), ck).render()
    assert "its state was Singleton[int] and would now be read as Singleton[float]" in text


def test_a_changed_function_keeps_the_state_and_says_so(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    same = check(counter(step=2), ck)  # the same code (the step is a closure value): kept quietly
    assert not same.refused and not same.notable
    edited = check(counter(twice=True), ck)
    assert not edited.refused and edited.notable
    assert "state kept (was fold@test_upgrade.py:" in edited.render()  # moved line
    assert "(its function changed)" in edited.render()
    named = checkpoint_of(counter(name="clicks"), tmp_path / "named")
    renamed_lambda = check(counter(name="clicks", identity_map=True, twice=True), named)
    assert not renamed_lambda.refused, renamed_lambda.render()


def test_two_folds_of_one_shape_are_told_apart_by_their_code(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(second_fold=True), tmp_path)
    recon = check(counter(second_fold=True, identity_map=True), ck)
    assert not recon.refused, recon.render()


def test_a_checkpoint_without_a_plan_record_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tick0").mkdir()
    (tmp_path / "tick0" / "hydrolite.json").write_text("{}")
    text = check(counter(), tmp_path).render()
    assert "no plan record (plan.json)" in text and "start a new --checkpoint" in text


def test_an_unknown_reset_name_is_refused(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path)
    text = check(counter(), ck, ("fold@nowhere.py:1",)).render()
    assert "--reset-state fold@nowhere.py:1: no such operator" in text


def test_a_query_that_never_committed_is_replaced(tmp_path: Path) -> None:
    ck = checkpoint_of(counter(), tmp_path, batches=0)
    recon = check(counter(port="incr"), ck)
    assert not recon.refused, recon.render()
    recon.apply()
    assert recon.plan.stages[0].name == "tick0-v2"  # a fresh directory: the old Spark log is not reused


def test_duplicate_operator_names_are_a_build_error() -> None:
    fb = hl.FlowBuilder("dup")
    p = fb.process(Server)
    xs = p.source("xs", int)
    tick = p.tick()
    xs.count(name="n").snapshot(tick, nondet("any")).into_stream().all_ticks().sink("a")
    xs.fold_commutative(0, lambda s, x: s + x, name="n").snapshot(tick, nondet("any")).into_stream().all_ticks().sink(
        "b"
    )
    with pytest.raises(FlowError, match="the operator name 'n' is given to 2 operators"):
        fb.finalize()


@pytest.mark.parametrize("bad", ["", " x", 3])
def test_a_bad_name_is_a_build_error(bad: Any) -> None:  # Any: 3 is the wrong type on purpose
    xs = hl.FlowBuilder("bad").process(Server).source("xs", int)
    with pytest.raises(hl.BuildError, match=r"count\(name=...\) requires a non-empty string"):
        xs.count(name=bad)


def test_plan_against_prints_the_diff_and_fails_when_the_run_would_be_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from examples import counter as example
    from hydrolite.cli import main

    ck = checkpoint_of(example.build(), tmp_path / "ck")
    assert main(["plan", "examples/counter.py", "--against", str(ck)]) == 0
    assert "= query tick0: resumes after batch 2" in capsys.readouterr().out
    edited = tmp_path / "counter_v2.py"
    source = Path(example.__file__).read_text().replace('"increment"', '"increments"')
    edited.write_text(source)
    assert main(["plan", str(edited), "--against", str(ck)]) == 1
    out = capsys.readouterr().out
    assert (
        "refused: 3 change(s)" in out and "removed ['increment']" in out
    )  # the inputs, and the fold over the renamed port
