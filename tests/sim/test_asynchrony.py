"""Finer asynchrony behind flags (`hydrolite/sim/asynchrony.py`): per-edge interleavings
into two-input top-level operators, and keyed-singleton snapshots per key.

Each flag is shown to explore behaviours the default model cannot produce (an invariant
that holds by default is refuted with the flag on), with pinned counts, and partial-order
reduction keeps every outcome under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from scenarios import EXAMPLE_SCENARIOS, counter_acks_bound_answers

import hydrolite as hl
from examples import counter, kvstore
from hydrolite import nondet
from hydrolite.sim import SimulationFailure, Simulator
from hydrolite.sim import exhaustive as sim_exhaustive
from hydrolite.sim.asynchrony import KeyedSnapshotOp

from .helpers import Server


def net_flow() -> hl.Flow:
    """Each transfer is a debit and a credit on two paths of one source, merged and summed;
    a tick samples the net amount."""
    flow = hl.FlowBuilder("net")
    p = flow.process(Server)
    tx = p.source("transfer", int)
    legs = tx.map(lambda a: -a).merge_unordered(tx.map(lambda a: a))
    net = legs.fold_commutative(0, lambda acc, x: acc + x)
    net.snapshot(p.tick(), nondet("any net amount so far")).into_stream().all_ticks().sink("net")
    return flow.finalize()


def net_outcomes(interleavings: bool, reduce: bool = True) -> tuple[int, set[tuple[int, ...]]]:
    seen: set[tuple[int, ...]] = set()

    def scenario(s: Simulator) -> None:
        s.sender("transfer").send(5)
        seen.add(tuple(s.receiver("net").collect()))

    n = Simulator(net_flow(), interleavings=interleavings).exhaustive(scenario, reduce=reduce)
    return n, seen


def test_by_default_the_left_path_of_a_diamond_arrives_first() -> None:
    # versions 0, -5, 0 (the credit path follows the debit path at once): a snapshot sees
    # any increasing selection ending at the newest (consecutive equal versions are one)
    n, seen = net_outcomes(interleavings=False)
    assert all(v <= 0 for run in seen for v in run)
    assert (n, (0, -5, 0) in seen) == (4, True)


def test_interleavings_let_either_path_arrive_first() -> None:
    # each leg waits on its own edge into merge_unordered(); delivering the credit first
    # makes the version +5, which the default model never shows
    n, seen = net_outcomes(interleavings=True)
    assert (0, 5, 0) in seen and (0, -5, 0) in seen
    full, seen_full = net_outcomes(interleavings=True, reduce=False)
    assert seen_full == seen  # reduction loses no outcome
    assert (n, full) == (8, 22)


def test_an_invariant_resting_on_the_path_order_is_refuted_with_interleavings() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("transfer").send(5)
        for net in s.receiver("net").collect():
            assert net <= 0, f"the net amount showed {net}: a credit counted before its debit"

    Simulator(net_flow()).exhaustive(scenario)
    with pytest.raises(SimulationFailure) as info:
        Simulator(net_flow(), interleavings=True).exhaustive(scenario)
    report = str(info.value)
    assert "the net amount showed 5" in report
    assert "* delivered [5] on input 2 of merge_unordered()" in report  # the step, at the user's line
    assert "(from map() at " in report and "test_asynchrony.py:" in report


def two_sources() -> hl.Flow:
    """Two sources merged at top level into one (unordered) sink."""
    flow = hl.FlowBuilder("two_sources")
    p = flow.process(Server)
    p.source("left", str).merge_unordered(p.source("right", str)).sink("merged")
    return flow.finalize()


def test_sends_to_two_sources_reach_a_merge_in_either_order_with_interleavings() -> None:
    # by default the test's sends reach the merge in the order it made them; each source's
    # edge is its own FIFO stream, so with interleavings the later send may arrive first
    orders: dict[bool, set[Any]] = {False: set(), True: set()}

    def scenario_for(flag: bool) -> Callable[[Simulator], None]:
        def scenario(s: Simulator) -> None:
            s.sender("left").send("a")
            s.sender("right").send("b")
            orders[flag].add(tuple(s.receiver("merged").collect()))

        return scenario

    assert Simulator(two_sources()).exhaustive(scenario_for(False)) == 1
    assert Simulator(two_sources(), interleavings=True).exhaustive(scenario_for(True)) == 2
    assert orders == {False: {("a", "b")}, True: {("a", "b"), ("b", "a")}}


def table_flow() -> hl.Flow:
    """A keyed table of the last value put per key; a tick reads a snapshot of it."""
    flow = hl.FlowBuilder("table")
    p = flow.process(Server)
    table = p.keyed_source("put", str, int).reduce(lambda _old, new: new)
    table.snapshot(p.tick(), nondet("any recent table")).entries().all_ticks().sink("rows")
    return flow.finalize()


def table_runs(per_key: bool) -> tuple[int, set[tuple[tuple[tuple[str, int], ...], ...]]]:
    """(executions, the tables each run released, per execution) for puts a=1, b=2, a=3."""
    seen: set[tuple[tuple[tuple[str, int], ...], ...]] = set()
    sim = Simulator(table_flow(), per_key_snapshots=per_key)

    def scenario(s: Simulator) -> None:
        s.sender("put").send_many([("a", 1), ("b", 2), ("a", 3)])
        rows = s.receiver("rows").collect()
        seen.add(_tables(rows))

    return sim.exhaustive(scenario), seen


def _tables(rows: list[tuple[str, int]]) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Split the rows of consecutive runs into their tables: a run emits each key of its
    table once, and every table holds the previous one's keys first (keys are never
    removed here), so a repeated key starts the next run's table."""
    tables: list[list[tuple[str, int]]] = [[]]
    for row in rows:
        if any(k == row[0] for k, _ in tables[-1]):
            tables.append([])
        tables[-1].append(row)
    return tuple(tuple(sorted(t)) for t in tables if t)


def test_per_key_snapshots_see_keys_at_their_own_versions() -> None:
    # whole map: versions {}, {a:1}, {a:1,b:2}, {a:3,b:2}; a run reads a newer one each time
    # (increasing selections ending at the newest): 2^3 = 8, and b never shows without a.
    # Per key: a run takes, per key, any of its versions not older than the last it showed
    # (a: 1 then 3; b: 2), at least one key advancing, plus the first run may read the map
    # as it is: sequences of non-zero (a, b) steps summing to (2, 1), 8 of them, with or
    # without a first run before: 16.
    n, whole = table_runs(per_key=False)
    assert n == 8 and not any(t == (("b", 2),) for run in whole for t in run)
    n, per_key = table_runs(per_key=True)
    assert n == 16 and any((("b", 2),) in run for run in per_key)
    assert whole < per_key
    for run in per_key:  # monotone per key: a shows 1 then 3, never back
        a_values = [v for table in run for k, v in table if k == "a"]
        assert a_values == sorted(a_values)


def test_an_invariant_resting_on_one_version_of_the_map_is_refuted_per_key() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("put").send_many([("a", 1), ("b", 2)])
        for table in _tables(s.receiver("rows").collect()):
            keys = {k for k, _ in table}
            assert "b" not in keys or "a" in keys, f"the table {table} has b (put after a) without a"

    Simulator(table_flow()).exhaustive(scenario)
    with pytest.raises(SimulationFailure, match="has b \\(put after a\\) without a") as info:
        Simulator(table_flow(), per_key_snapshots=True).exhaustive(scenario)
    assert "per key" in str(info.value)  # the release note of the per-key snapshot


def test_aligned_snapshots_still_read_one_version_of_the_map() -> None:
    sim = Simulator(kvstore.build, per_key_snapshots=True)
    assert not any(isinstance(op, KeyedSnapshotOp) for op in sim.program.ops)
    assert any(isinstance(op, KeyedSnapshotOp) for op in Simulator(table_flow(), per_key_snapshots=True).program.ops)


@pytest.mark.parametrize("name", sorted(EXAMPLE_SCENARIOS))
def test_examples_pass_with_both_flags_and_crashes(name: str) -> None:
    build, scenarios = EXAMPLE_SCENARIOS[name]
    sim = Simulator(build, interleavings=True, per_key_snapshots=True)
    for scenario in scenarios:
        assert sim.exhaustive(scenario, crashes=True) >= sim.exhaustive(scenario)


def test_flags_with_crashes_on_the_diamond() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("transfer").send_many([5, 7])
        assert s.receiver("net").collect()[-1] == 0

    sim = Simulator(net_flow(), interleavings=True)
    assert sim.exhaustive(scenario, crashes=True) > sim.exhaustive(scenario)


def test_replay_hint_names_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from hydrolite.sim.report import replay_line

    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # outside pytest: the Python call and the command
    line = replay_line(
        "v1:1", net_flow, test_replay_hint_names_the_flags, None, {"interleavings": True, "per_key_snapshots": False}
    )
    assert (
        "hydrolite.sim.replay(test_asynchrony.net_flow, test_asynchrony.test_replay_hint_names_the_flags, 'v1:1', interleavings=True)"
        in line
    )
    assert "--interleavings --replay v1:1" in line and "per-key" not in line


@sim_exhaustive(counter.build, interleavings=True, per_key_snapshots=True, crashes=True)
def test_decorator_takes_the_flags(s: Simulator) -> None:
    assert s.model == {"interleavings": True, "per_key_snapshots": True}
    counter_acks_bound_answers(s)
