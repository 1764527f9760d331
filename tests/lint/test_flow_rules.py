"""HL030/HL031 (reads back through latest()/end_atomic()), HL032 (tick entanglement), HL040 (atomic)."""

from __future__ import annotations

import pytest

from .helpers import found, run

_PRELUDE = """\
from hydrolite import nondet
def build(server, increment, count, query, tick, other, align):
"""


def body(*lines: str) -> str:
    return _PRELUDE + "".join(f"    {line}\n" for line in lines)


# ---------------------------------------------------------------------- HL030 / HL031
def test_latest_then_snapshot() -> None:
    report = run(body("count.latest().snapshot(other, nondet('any version'))"))
    assert [(f.line, f.col, f.code) for f in report.findings] == [(3, 20, "HL030")]
    assert "snapshot_aligned" in report.findings[0].message


@pytest.mark.parametrize(
    "lines",
    [
        ["back = count.latest()", "back.snapshot(other, nondet('any version'))"],
        ["back = count.latest().map(lambda c: c * 2)", "back.filter(bool).snapshot(other, nondet('any version'))"],
        ["(count.latest()", "    .snapshot(other, nondet('any version')))"],
    ],
)
def test_latest_then_snapshot_through_names_and_maps(lines: list[str]) -> None:
    assert [c for _, c in found(body(*lines))] == ["HL030"]


@pytest.mark.parametrize(
    "line",
    [
        "count.snapshot(other, nondet('any version'))",
        "count.latest().snapshot_aligned(other, align, nondet('consistent'))",
        "count.latest().into_stream().all_ticks()",
        "count.latest().fold(0, max).snapshot(other, nondet('any version'))",
        "count.snapshot(other, nondet('any version')).latest()",
    ],
)
def test_snapshots_that_are_fine(line: str) -> None:
    assert found(body(line)) == []


def test_end_atomic_then_snapshot() -> None:
    report = run(body("count.end_atomic().snapshot(other, nondet('any version'))"))
    assert [(f.line, f.code) for f in report.findings] == [(3, "HL031")]  # not also HL040 for end_atomic()
    assert "align point" in report.findings[0].message


def test_end_atomic_through_a_name() -> None:
    code = body("done = count.end_atomic()", "done.snapshot(other, nondet('any version'))")
    assert found(code) == [(3, "HL040"), (4, "HL031")]


# ---------------------------------------------------------------------- HL040
def test_atomic_usage() -> None:
    report = run(body("inc = increment.atomic(tick)", "acks = inc.end_atomic()"))
    assert [(f.line, f.col, f.code) for f in report.findings] == [(3, 21, "HL040"), (4, 16, "HL040")]
    assert "local_align_point()" in report.findings[0].message
    assert "release_aligned" in report.findings[1].message


@pytest.mark.parametrize(
    "line",
    [
        "transaction.atomic(db)",  # django's transaction.atomic: an import of another library
        "with transaction.atomic():\n        pass",
        "increment.atomic()",
        "increment.atomic(tick, savepoint=False)",
        "increment.end_atomic(1)",
    ],
)
def test_other_atomics_are_left_alone(line: str) -> None:
    code = "from django.db import transaction\n" + body(line)
    assert found(code) == []


def test_atomic_resolved_through_hydrolite() -> None:
    assert found("import hydrolite as hl\nhl.atomic(tick)\n") == [(2, "HL040")]


# ---------------------------------------------------------------------- HL032
_ENTANGLED = body(
    "inc = increment.batch(tick, nondet('increments in any grouping'))",
    "cycle, prev = tick.singleton_cycle(0)",
    "total = prev.zip(inc.count()).map(lambda p: p[0] + p[1])",
    "cycle.complete_next_tick(total)",
    "inc.all_ticks().sink('ack')",
    "(",
    "    query.batch(tick, nondet('queries in any grouping'))",
    "    .entries()",
    "    .map(lambda kv: kv[0])",
    "    .cross_singleton(total)",
    "    .all_ticks()",
    "    .sink('response')",
    ")",
)


def test_query_batched_into_another_computations_tick() -> None:
    report = run(_ENTANGLED)
    assert [(f.line, f.col, f.code) for f in report.findings] == [(9, 15, "HL032")]
    message = report.findings[0].message
    assert "`query`" in message and "`tick`" in message and "`increment`" in message
    assert "snapshot_aligned" in message and "release_aligned" in message


@pytest.mark.parametrize(
    "lines",
    [
        [
            "b = increment.batch(other, nondet('increments in any grouping'))",
            "b.all_ticks().sink('ack')",
            "query.batch(other, nondet('queries in any grouping')).cross_singleton(b.count()).all_ticks()",
        ],
        [
            "puts = increment.into_keyed().batch(tick, nondet('any grouping'))",
            "table = puts.fold_commutative(0, max)",
            "puts.entries().all_ticks().sink('ack')",
            "query.batch(tick, nondet('any grouping')).lookup_keyed_singleton(table).all_ticks()",
        ],
        [
            "puts = increment.batch(tick, nondet('any grouping'))",
            "table = puts.into_keyed().fold_commutative(0, max)",
            "puts.all_ticks().sink('ack')",
            "table.get_many_if_present(query.batch(tick, nondet('any grouping'))).entries().all_ticks()",
        ],
    ],
)
def test_entanglement_variants(lines: list[str]) -> None:
    assert [c for _, c in found(body(*lines))] == ["HL032"]


@pytest.mark.parametrize(
    "lines",
    [
        # the naive counter: the query's own tick and a plain snapshot of top-level state
        [
            "total = increment.values().fold_commutative(0, lambda c, _: c + 1)",
            "increment.entries().sink('ack')",
            "query.batch(tick, nondet('any grouping')).cross_singleton(total.snapshot(tick, nondet('any version'))).all_ticks()",
        ],
        # the aligned counter
        [
            "total = increment.values().fold_commutative(0, lambda c, _: c + 1)",
            "increment.release_aligned(align).entries().sink('ack')",
            "query.batch(tick, nondet('any grouping')).cross_singleton(total.snapshot_aligned(tick, align, nondet('consistent'))).all_ticks()",
        ],
        # state built in the tick but nothing else of it leaves the tick: co-incidence only
        [
            "b = increment.batch(tick, nondet('increments in any grouping'))",
            "query.batch(tick, nondet('queries in any grouping')).cross_singleton(b.count()).all_ticks()",
        ],
        # different ticks
        [
            "b = increment.batch(other, nondet('increments in any grouping'))",
            "b.all_ticks().sink('ack')",
            "query.batch(tick, nondet('queries in any grouping')).cross_singleton(b.count()).all_ticks()",
        ],
        # the same stream on both sides
        [
            "b = increment.batch(tick, nondet('any grouping'))",
            "b.all_ticks().sink('ack')",
            "increment.batch(tick, nondet('any grouping')).cross_singleton(b.count()).all_ticks()",
        ],
        # the only release of the state goes through the query itself
        [
            "b = increment.batch(tick, nondet('increments in any grouping'))",
            "query.batch(tick, nondet('queries in any grouping')).cross_singleton(b.count()).all_ticks()",
        ],
    ],
)
def test_not_entangled(lines: list[str]) -> None:
    assert found(body(*lines)) == []
