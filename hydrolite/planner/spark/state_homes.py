"""Where each state of a plan lives, and the home changes a resumed checkpoint cannot take.

A stateful operator's state has one home per run (`placement.py` chooses it): the driver's
versioned store, Spark's `transformWithState` operator on the executors, a native streaming
aggregation, a join's sides as Parquet history, a keyed table the tick folds as Parquet, or
none of its own (its readers' groups keep it). `plan.json` records each state's home
(`upgrade.Reconciliation.record`); a restarted run whose plan would keep a state elsewhere
would start it empty there, and Spark cannot add a stateful operator to a query that has
committed batches, or drop one: `upgrade.reconcile` refuses both through this module.

    >>> from examples import counter
    >>> from hydrolite.planner.spark.stages import plan_flow
    >>> plan = plan_flow(counter.build())
    >>> sorted({home_of(s, x) for s in plan.stages for x in s.stateful})
    ['driver']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir import nodes as n
from .stages import Stage

if TYPE_CHECKING:
    from .upgrade import QueryRecord, Reconciliation

#: Spark's operator holding a query's executor state (`keyed_state.ExecutorRegion.branch`),
#: recorded per query: Spark refuses to resume one operator's state with another (its state
#: metadata names the operator), so a change is refused here, before anything runs
KEYED_OPERATOR = "transformWithState"
#: what records without the field used (hydrolite before the Row-based operator)
LEGACY_KEYED_OPERATOR = "transformWithStateInPandas"


def home_of(stage: Stage, node: n.Node) -> str:
    """Where `node`'s state lives in this plan: "native" (a native streaming aggregation),
    "executors" (the transformWithState operator), "history" (a join's sides as Parquet,
    `history.py`), "table" (a keyed table the tick folds, as Parquet: `tick_table.py`),
    "chains" (none of its own: its readers' groups keep it, `kept_steps.py`)
    or "driver"."""
    p = stage.placement.of(node) if stage.placement is not None else None
    if p is not None and (p.native or p.absorbed):
        return "native" if p.native else "chains"
    if p is not None and p.rows and isinstance(node, (n.Join, n.CrossProduct)):
        return "history"
    if p is not None and p.tick_table:
        return "table"
    return "executors" if p is not None and p.executors else "driver"


def where(home: str) -> str:
    """How a refusal, or `hydrolite plan`, says where a state of `home` lives."""
    places = {
        "native": "in a native streaming aggregation",
        "history": "as Parquet history under the checkpoint",
        "table": "as a Parquet table under the checkpoint",
        "chains": "only with the states it feeds (none of its own)",
        "parquet": "as Parquet under the query's state",
    }
    return places.get(home, f"on the {home}")


def keyed_state_for(home: str) -> str:
    """The run option that keeps state where `home` says (a join's history: the driver's
    option, which keeps no join per key on the executors)."""
    return {"native": "executors", "history": "driver", "parquet": "driver", "table": "executors"}.get(home, home)


def compare_homes(recon: Reconciliation, stage: Stage, rec: QueryRecord) -> None:
    """Spark cannot add a stateful operator to a query, or drop one, between runs: the query
    keeps executor state (one transformWithState operator) exactly when it did before, and
    the same native aggregations (one per native state, `native_state.py`)."""
    _compare_native(recon, stage, rec)
    tables = table_homes(stage)
    _compare_tables(recon, tables, rec)
    before = any(s.home == "executors" for s in rec.state.values()) or "executors" in rec.tables.values()
    now = any(home_of(stage, x) == "executors" for x in stage.stateful) or "executors" in tables.values()
    if before and now and rec.keyed_operator != KEYED_OPERATOR:
        recon.refusals.append(
            f"query {rec.dir}: its state on the executors was written by Spark's {rec.keyed_operator} operator (an "
            f"earlier hydrolite), and this hydrolite keeps it in {KEYED_OPERATOR}: Spark cannot resume one "
            "operator's state with another"
        )
        recon.fixes.append("resume it with the hydrolite version that wrote it, or start a new --checkpoint")
        return
    if before == now:
        return
    what = "adds" if now else "drops"
    recon.refusals.append(
        f"query {rec.dir}: this run {what} Spark's keyed-state operator (state on the executors), which Spark "
        f"cannot do to a query that has committed batches"
    )
    recon.fixes.append(
        f"resume with --keyed-state {'driver' if now else 'executors'} to keep the state where it is, "
        "or start a new --checkpoint"
    )


def table_homes(stage: Stage) -> dict[str, str]:
    """Channel -> where the version of the keyed table the query reads through it lives:
    "executors" (per key in the region, `placement._Finder.table_of`) or "parquet"."""
    placed = stage.placement.placements if stage.placement is not None else ()
    return {p.table: "executors" if p.executors else "parquet" for p in placed if p.table is not None}


def _compare_tables(recon: Reconciliation, tables: dict[str, str], rec: QueryRecord) -> None:
    at = {"executors": "per key in Spark's state store", "parquet": "as Parquet under the query's state"}
    for name, home in tables.items():
        was = rec.tables.get(name, "parquet")
        if was != home:
            recon.refusals.append(
                f"query {rec.dir}: the version it keeps of the keyed table read through channel {name} lives "
                f"{at[was]} in this checkpoint, and this run would keep it {at[home]}: it would start empty there"
            )
            recon.fixes.append(f"resume with --keyed-state {keyed_state_for(was)}, or start a new --checkpoint")


def _compare_native(recon: Reconciliation, stage: Stage, rec: QueryRecord) -> None:
    """Spark numbers a query's stateful operators by their place in the plan and checks each
    one's state schema on restart: the native aggregations must be the same ones, in the same
    order, as in the checkpoint (a state that moved to or from one is also refused per state)."""
    before = [s.display for s in rec.state.values() if s.home == "native"]
    now = [f"{x.op}@{x.site.label}" for x in stage.stateful if home_of(stage, x) == "native"]
    if len(before) == len(now):
        return
    recon.refusals.append(
        f"query {rec.dir}: its native streaming aggregations would change (recorded: {', '.join(before) or 'none'}; "
        f"this run: {', '.join(now) or 'none'}): Spark cannot add or drop a stateful operator of a query that has "
        "committed batches"
    )
    recon.fixes.append(
        "keep the aggregations and their readers as they were (resume with the keyed_state option the checkpoint "
        "was written with), or start a new --checkpoint"
    )


def compare_state_home(recon: Reconciliation, stage: Stage, node: n.Node, display: str, was: str, key: str) -> bool:
    """Refuse (and say so: False) a state recorded in home `was` that this run would keep
    elsewhere; a state that now has no home of its own ("chains": no reader needs it) may go."""
    now = home_of(stage, node)
    if was == now or now == "chains":
        return True
    recon.refusals.append(
        f"{display}: its state lives {where(was)} in this checkpoint, and this run would keep it "
        f"{where(now)} (key {key}): it would start empty there"
    )
    recon.fixes.append(  # ("chains": it has none to keep; reset, it would pass its elements on again)
        f"resume with --keyed-state {keyed_state_for(was)} (or the default auto, which keeps a resumed "
        "state where its checkpoint has it: kept_homes.py), or start a new --checkpoint"
        if was != "chains"
        else f"start a new --checkpoint, or pass --reset-state {display} (it starts empty)"
    )
    return False
