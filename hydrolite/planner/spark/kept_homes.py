"""Where a checkpoint keeps each state, for a run that places state by itself (`auto`).

A state lives in one place: the driver's versioned store, Spark's state store behind the
query's `transformWithState` operator, a native streaming aggregation, or Parquet the
executors write. Which one `placement.py` picks depends on the run option, the master and
this hydrolite's rules, and all three can change between two runs of one checkpoint (a run
with `--keyed-state executors`, the next with the default; a newer hydrolite that keeps a
join's fold with the join). Moving a state would start it empty where it arrives, so
`upgrade.reconcile` refuses such a run. Under `keyed_state='auto'` — the default: the
option that asks hydrolite to choose — the choice is instead the one the checkpoint already
made: every state of a query that committed batches is placed where `plan.json` says it
lives, when this plan can keep it there (`placement.place`, `kept`). New states, and states
named by `--reset-state`, are placed by the rules as usual.

`recorded_homes` pairs the program's states with the record exactly as `reconcile` does, so
a state kept here is the state `reconcile` then compares.

    >>> import tempfile
    >>> from examples import counter
    >>> from hydrolite.planner.spark.stages import plan_flow
    >>> recorded_homes(plan_flow(counter.build()), tempfile.mkdtemp())  # a new checkpoint
    {}
"""

from __future__ import annotations

from collections.abc import Sequence

from .stages import Plan
from .state_homes import where
from .upgrade import _matches, _NewState, _pair_queries, _pair_state, committed, read_record, state_type

#: the homes a placement can be held to besides "native", and whether each is the executors'
#: (for a keyed aggregate: the transformWithState operator; for a join: Spark's per-key join
#: state). A state recorded in a native aggregation stays native when the aggregation still
#: computes it, read whole too (as under `executors`); otherwise `reconcile` names the change.
KEEPABLE = {"driver": False, "executors": True, "history": False, "table": True}


def recorded_homes(plan: Plan, checkpoint: str, reset: Sequence[str] = ()) -> dict[int | str, str]:
    """id(stateful node) -> the home its state has in `checkpoint`'s record, for the states
    of queries that committed batches (the others start empty wherever they go), leaving out
    those `reset` names (they start empty too); and channel -> where such a query keeps the
    keyed table it reads through it ("executors": per key; "parquet")."""
    found = read_record(checkpoint)
    if found is None:
        return {}
    old, _ = found
    homes: dict[int | str, str] = {}
    pairs = _pair_queries(plan, old, checkpoint)
    for stage in plan.stages:
        q = pairs.get(stage.index)
        if q is None or not committed(checkpoint, q):
            continue
        homes.update(old[q].tables)
        new = [_NewState(x, plan.identities[id(x)], state_type(x)) for x in stage.stateful]
        paired = _pair_state(new, list(old[q].state.values()))
        for ns in new:
            s = paired.get(id(ns.node))
            if s is not None and not _matches(reset, ns.ident.display, ns.ident.key, s.display, s.key):
                homes[id(ns.node)] = s.home
    return homes


def kept_why(home: str) -> str:
    """The reason `hydrolite plan` gives for a state held where its checkpoint keeps it."""
    return (
        f"kept {where(home)}, where the checkpoint keeps it (keyed_state='auto' leaves a resumed state where it "
        "is; moving it would start it empty: a new --checkpoint, or --reset-state, lets this run place it anew)"
    )
