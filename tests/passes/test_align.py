"""Before/after fixture tests of the alignment pass, plus its diagnostics.

Fixtures live in tests/passes/fixtures/align/<program>.txt; regenerate them with
HYDROLITE_UPDATE_FIXTURES=1 after an intended change and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, cast

import pytest

import hydrolite as hl
from hydrolite import nondet
from hydrolite.ir import nodes as n
from hydrolite.passes.align import AlignmentError, align_flow, carried, describe_alignment

from .programs import ERROR_PROGRAMS, FIXTURE_PROGRAMS, Client, Server, counter, map_filter_chain

FIXTURES = Path(__file__).parent / "fixtures" / "align"
UPDATE = os.environ.get("HYDROLITE_UPDATE_FIXTURES") == "1"


def _normalize(text: str) -> str:
    """Drop directory prefixes so fixtures do not depend on the working directory."""
    return re.sub(r"[\w./-]*/(\w+\.py):", r"\1:", text)


def _check_fixture(name: str, text: str) -> None:
    path = FIXTURES / f"{name}.txt"
    text = _normalize(text).rstrip() + "\n"
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"fixture {path} was missing and has been written; review and commit it")
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(FIXTURE_PROGRAMS))
def test_before_after_fixture(name: str) -> None:
    flow = FIXTURE_PROGRAMS[name]()
    aligned = align_flow(flow)
    text = "\n".join(
        ["== before ==", flow.dump(), "== after ==", aligned.dump(), "== alignment ==", describe_alignment(aligned)]
    )
    _check_fixture(name, text)


@pytest.mark.parametrize("name", sorted(ERROR_PROGRAMS))
def test_error_fixture(name: str) -> None:
    flow = ERROR_PROGRAMS[name]()
    with pytest.raises(AlignmentError) as info:
        align_flow(flow)
    assert "programs.py:" in str(info.value)
    _check_fixture(f"error_{name}", str(info.value))


def test_pass_is_pure_and_idempotent() -> None:
    flow = counter()
    before = flow.dump()
    once = align_flow(flow)
    assert flow.dump() == before  # the input is untouched
    assert align_flow(once) is once
    assert align_flow(counter()).dump() == once.dump()  # deterministic


def test_counter_runs_increments_and_queries_in_one_tick() -> None:
    aligned = align_flow(counter())
    ticks = {x.meta.loc for x in aligned.nodes() if x.meta.in_tick}
    assert len(ticks) == 1
    (region,) = aligned.regions
    assert [x.op for x in region.nodes] == ["batch", "values", "fold"]
    release = next(x for x in aligned.nodes() if isinstance(x, n.ReleaseAligned))
    assert isinstance(release.input, n.Batch) and release.input.align == region.align
    fold = next(x for x in aligned.nodes() if isinstance(x, n.Fold))
    assert carried(fold) and fold.children[0].children[0] is release.input


def test_fold_snapshotted_in_two_ticks_merges_them() -> None:
    aligned = align_flow(FIXTURE_PROGRAMS["fold_two_ticks"]())
    (region,) = aligned.regions
    assert len(region.merged_ticks) == 2
    assert len(aligned.ticks) == 1
    snaps = [x for x in aligned.nodes() if isinstance(x, n.Snapshot)]
    assert len(snaps) == 2 and snaps[0].input is snaps[1].input  # one fold, read twice


def test_chain_frontier_is_last_shared_node() -> None:
    aligned = align_flow(map_filter_chain())
    (region,) = aligned.regions
    entry = region.nodes[0]
    assert isinstance(entry, n.Batch) and entry.input.op == "filter"  # strip/filter stay async
    assert [x.op for x in region.nodes[1:]] == ["map", "filter", "map", "fold"]


def test_region_output_to_unaligned_consumer_gets_bridge() -> None:
    flow = hl.FlowBuilder()
    p = flow.process(Server)
    xs = p.source("xs", int)
    total = xs.fold(0, lambda a, x: a + x)
    align = p.local_align_point()
    xs.release_aligned(align).sink("acks")
    t1, t2 = p.tick(), p.tick()
    total.snapshot_aligned(t1, align, nondet("consistent with acks")).into_stream().all_ticks().sink("a")
    total.snapshot(t2, nondet("any version")).into_stream().all_ticks().sink("b")
    aligned = align_flow(flow.finalize())
    plain = next(x for x in aligned.nodes() if isinstance(x, n.Snapshot) and x.align is None)
    assert isinstance(plain.input, n.Latest) and carried(plain.input.input)
    assert len(aligned.ticks) == 2  # the unaligned tick stays separate


def test_plain_reads_of_values_derived_from_carried_state_are_carried_too() -> None:
    """A plain snapshot into the aligned tick of a value derived from carried state reads it
    in the tick (a carried copy of the derivation), not through a bridge: through one, the
    tick would read its own output. A reader in another tick still goes through the bridge."""
    flow = hl.FlowBuilder()
    p = flow.process(Server)
    align = p.local_align_point()
    xs = p.source("xs", int).aligned_at(align)
    total = xs.fold(0, lambda a, x: a + x)
    xs.release_aligned(align).sink("acks")
    t1, t2 = p.tick(), p.tick()
    total.snapshot_aligned(t1, align, nondet("consistent with acks")).into_stream().all_ticks().sink("a")
    scaled = total.map(lambda t: t * 10)
    scaled.snapshot(t1, nondet("any version")).into_stream().all_ticks().sink("b")
    xs.count().snapshot(t1, nondet("any version")).into_stream().all_ticks().sink("c")
    scaled.snapshot(t2, nondet("any version")).into_stream().all_ticks().sink("d")
    aligned = align_flow(flow.finalize())
    snaps = {s.port: s.input.input.input for s in aligned.sinks.values() if s.port in "bcd"}
    b, c, d = (cast(n.Snapshot, snaps[k]) for k in "bcd")
    assert b.input.op == "map" and carried(b.input) and carried(b.input.children[0])
    assert c.input.op == "count" and carried(c.input) and carried(c.input.children[0])
    assert isinstance(d.input, n.Map) and isinstance(d.input.input, n.Latest)  # t2: through the bridge
    region = aligned.regions[0]
    assert {"map", "count"} <= {x.op for x in region.nodes}
    assert "carried: count()" in describe_alignment(aligned)


def test_two_points_sharing_a_tick_merge_transitively() -> None:
    flow = hl.FlowBuilder()
    p = flow.process(Server)
    xs, ys = p.source("xs", int), p.source("ys", int)
    a1, a2 = p.local_align_point(), p.local_align_point()
    t1, t2, t3 = p.tick(), p.tick(), p.tick()
    cx, cy = xs.count(), ys.count()
    cx.snapshot_aligned(t1, a1, nondet("any version of cx will do")).into_stream().all_ticks().sink("x1")
    cx.snapshot_aligned(t2, a1, nondet("any version of cx will do")).into_stream().all_ticks().sink("x2")
    cy.snapshot_aligned(t2, a2, nondet("y")).into_stream().all_ticks().sink("y2")
    cy.snapshot_aligned(t3, a2, nondet("y")).into_stream().all_ticks().sink("y3")
    aligned = align_flow(flow.finalize())
    assert len(aligned.ticks) == 1
    assert {r.tick for r in aligned.regions} == {t1.id}


def test_noop_points_warn_and_leave_graph_alone() -> None:
    flow = FIXTURE_PROGRAMS["only_release"]()
    aligned = align_flow(flow)
    assert aligned.dump() == flow.dump()
    (warning,) = aligned.diagnostics
    assert warning.code == "align-noop" and warning.site.line > 0
    assert "programs.py" in str(warning)


def test_network_error_says_alignment_cannot_cross_network() -> None:
    with pytest.raises(AlignmentError, match="cannot cross the network"):
        align_flow(ERROR_PROGRAMS["network_only_shared"]())
    with pytest.raises(AlignmentError, match=r"aligned_at\(.*only through the network"):
        align_flow(ERROR_PROGRAMS["explicit_network_marker"]())


def test_point_of_another_location_is_a_build_error() -> None:
    flow = hl.FlowBuilder()
    client, server = flow.process(Client), flow.process(Server)
    align = client.local_align_point()
    xs = server.source("xs", int)
    with pytest.raises(hl.BuildError) as info:
        xs.release_aligned(cast(Any, align))
    text = str(info.value)
    assert "align point of the collection's location Process[Server]" in text
    assert "cannot align across the network" in text
    assert f"{Path(__file__).name}:" in text
    tick = server.tick()
    with pytest.raises(hl.BuildError, match="align point"):
        xs.count().snapshot_aligned(tick, cast(Any, align), nondet("any count will do"))
    with pytest.raises(hl.BuildError, match="align point"):
        xs.batch_aligned(tick, cast(Any, align), nondet("any batch will do"))
