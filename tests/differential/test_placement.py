"""The generated keyed stores really take the executor path (so the differential test of
`test_keyed_stores_on_the_executors_match_the_simulator` cannot silently stop covering it),
and everything else stays on the driver with a reason. No Spark session: planning only."""

from __future__ import annotations

import importlib.util
import random
import types
from pathlib import Path

from hydrolite.ir import nodes as n
from hydrolite.planner.spark.channel_versions import VERSIONED
from hydrolite.planner.spark.native_state import OCCURRENCES
from hydrolite.planner.spark.placement import EXECUTOR_AGGREGATES, StagePlacement, place, place_all
from hydrolite.planner.spark.stages import Stage, plan_flow
from tests.differential.progen import RandomDraw, generate


def _plan(source: str) -> list[StagePlacement]:
    mod = types.ModuleType("generated")
    exec(compile(source, "<generated>", "exec"), mod.__dict__)
    return [s.placement for s in plan_flow(mod.build()).stages if s.placement is not None]


def test_every_generated_store_keeps_its_state_on_the_executors() -> None:
    for seed in range(40):
        source = generate(RandomDraw(random.Random(seed)), max_ops=4, store=True).source()
        placements = [p for sp in _plan(source) for p in sp.placements]
        on_executors = [p for p in placements if p.executors]
        assert on_executors, f"seed {seed}: no executor state in\n{source}\n{[p.describe() for p in placements]}"
        for p in placements:
            assert p.why, p


def test_driver_option_keeps_everything_on_the_driver() -> None:
    """keyed_state='driver': every state on the driver; a join of unbounded streams, which the
    driver cannot hold, keeps its sides' history as Parquet the executors write (never whole
    on the driver)."""
    seen = {"driver": 0, "history": 0}
    for seed in range(12):
        source = generate(RandomDraw(random.Random(seed)), max_ops=4, store=True).source()
        mod = types.ModuleType("generated")
        exec(compile(source, "<generated>", "exec"), mod.__dict__)
        for stage in plan_flow(mod.build()).stages:
            sp = place(stage, executors=False)
            assert sp.region is None
            for p in sp.placements:
                assert not p.executors and not p.native, p
                if isinstance(p.node, n.Join):
                    assert p.rows and "history.py" in p.why, p
                    seen["history"] += 1
                    continue
                if isinstance(p.node, EXECUTOR_AGGREGATES) and p.node.children[0].meta.kind.keyed:
                    assert "keyed_state='driver'" in p.why, p  # the option is what keeps it there
                else:  # its own reason (deferred rows: Parquet the executors write), or the option's
                    # for a count of occurrences the native path would have taken
                    option_kept = isinstance(p.node, OCCURRENCES) and "keyed_state='driver'" in p.why
                    assert option_kept or p.rows or "not a keyed aggregate" in p.why or "not keyed" in p.why, p
            seen["driver"] += 1
    assert seen["driver"] and seen["history"], seen


def _placed_from_file(source: str, d: Path, name: str) -> list[Stage]:
    """The program planned and placed on the executors, imported from a file (the native
    path reads its functions' source, as it does in a user's program)."""
    path = d / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    plan = plan_flow(mod.build())
    place_all(plan, "executors", "local-cluster[2,1,1024]")
    return plan.stages


def test_generated_tables_cross_queries_with_tombstones_and_readers_keep_state(tmp_path: Path) -> None:
    """The shapes the differential test must keep drawing: a keyed table on the executors
    read by another query through a filter (deltas with tombstones), and a query that reads
    versions from another query while keeping keyed state on the executors itself (none of
    the versions it reads can make it wait), and a reader keeping the version it reads per key
    in its executor region (its lookups are the only use of the table)."""
    seen = {"tombstones": 0, "reader state": 0, "tables per key": 0}
    for seed in range(86000, 86240):
        source = generate(RandomDraw(random.Random(seed))).source()
        if "tq" not in source:  # (no keyed table read by another query: nothing to count)
            continue
        for st in _placed_from_file(source, tmp_path, f"gen{seed}"):
            seen["tombstones"] += sum(c.gone_from is not None for c in st.channels_out)
            reads_versions = any(c.node.meta.kind in VERSIONED for c in st.channels_in)
            if reads_versions and st.placement is not None:
                seen["reader state"] += any(p.executors or p.native for p in st.placement.placements if p.table is None)
                seen["tables per key"] += sum(p.executors for p in st.placement.placements if p.table is not None)
    assert seen["tombstones"] >= 5 and seen["reader state"] >= 3 and seen["tables per key"] >= 5, seen


def test_generated_programs_keep_whole_reads_and_merges_on_the_executors(tmp_path: Path) -> None:
    """The differential test keeps drawing executor states read whole in their own query
    (`ExecutorState.whole`: `snapshot_aligned(...).entries()` of a keyed fold) and states fed
    by a `merge_unordered()` of chains (one chain per side), and each says so in its reason."""
    seen = {"whole": 0, "merged": 0}
    for seed in range(120):
        source = generate(RandomDraw(random.Random(seed))).source()
        for st in _placed_from_file(source, tmp_path, f"whole{seed}"):
            if st.placement is None or st.placement.region is None:
                continue
            for s in st.placement.region.states:
                why = st.placement.of(s.node)
                assert why is not None and why.executors, why
                if s.whole:
                    seen["whole"] += 1
                    assert "read whole by" in why.why and "Parquet" in why.why, why.why
                seen["merged"] += len(s.chains) > 1
    assert seen["whole"] >= 10 and seen["merged"] >= 2, seen


def test_generated_stores_keep_what_streams_saw_per_key_on_the_executors(tmp_path: Path) -> None:
    """The keyed stores the differential test draws keep drawing `unique()` (of elements and
    of a keyed stream's pairs), the stateful `keys()` and a keyed `enumerate()` of elements
    that went through Python functions (`region.ExecutorSeen`), and a `unique()` of a keyed
    enumerate's pairs kept by the enumerate, each with its reason."""
    from hydrolite.planner.spark.placement import SEEN_WHY

    seen: dict[tuple[str, bool], int] = {}
    for seed in range(40):
        source = generate(RandomDraw(random.Random(seed)), max_ops=4, store=True).source()
        for st in _placed_from_file(source, tmp_path, f"seen{seed}"):
            if st.placement is None or st.placement.region is None:
                continue
            for s in st.placement.region.seen:
                why = st.placement.of(s.node)
                # (kept by the join or enumerate whose output it reads: `kept_with.py`)
                start = SEEN_WHY[type(s.node)] if s.joined is None else f"kept by {s.joined.input.op}() "
                assert why is not None and why.executors and why.why.startswith(start), why
                kind = (s.node.op, s.node.children[0].meta.kind.keyed)
                if s.joined is not None:
                    kind = (f"{s.node.op} by {s.joined.input.op}", kind[1])
                seen[kind] = seen.get(kind, 0) + 1
    want = [("unique", False), ("unique", True), ("keys", True), ("enumerate", True), ("unique by enumerate", True)]
    assert all(seen.get(k, 0) >= 2 for k in want), seen


def test_generated_requests_through_a_batchs_keys_are_asked_per_key(tmp_path: Path) -> None:
    """The differential test keeps drawing lookups whose requests pass through a batch's
    `keys()` (each key the batch touched, asked once: `keyed_processor.first_occurrences`),
    answered per key on the executors."""
    found = 0
    for seed in range(300):
        source = generate(RandomDraw(random.Random(seed))).source()
        for st in _placed_from_file(source, tmp_path, f"asked{seed}"):
            if st.placement is None or st.placement.region is None:
                continue
            found += sum(any(isinstance(op, n.Keys) for op in lk.chain.ops) for lk in st.placement.region.lookups)
    assert found >= 8, found


def test_generated_programs_keep_what_a_computed_stream_saw_in_the_ticks_table(tmp_path: Path) -> None:
    """The differential test keeps drawing a stateful `unique()` (of elements and of a keyed
    stream's pairs), `keys()` and keyed `enumerate()` of a stream the tick computes (no chain
    of the query's inputs): under `executors` each keeps what it saw in a Parquet table the
    tick updates (`tick_seen.py`), saying why its input is no chain."""
    from hydrolite.planner.spark.tick_seen import WHY

    seen: dict[tuple[str, bool], int] = {}
    for seed in range(200):
        source = generate(RandomDraw(random.Random(seed))).source()
        if 'sink("seen_' not in source:
            continue
        for st in _placed_from_file(source, tmp_path, f"tickseen{seed}"):
            placed = st.placement.placements if st.placement is not None else ()
            for p in placed:
                if p.tick_table and isinstance(p.node, (n.Unique, n.Keys, n.Enumerate)):
                    assert p.executors and p.why.endswith(WHY) and "fed by what the tick computes (" in p.why, p.why
                    assert "kept by the tick" in p.describe(), p.describe()
                    kind = (p.node.op, p.node.children[0].meta.kind.keyed)
                    seen[kind] = seen.get(kind, 0) + 1
    want = [("unique", False), ("unique", True), ("keys", True), ("enumerate", True)]
    assert all(seen.get(k, 0) >= 2 for k in want), seen
