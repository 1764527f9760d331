"""Upgrade safety: resume a checkpoint with an edited program only when no state is lost.

Each run records its plan in ``<checkpoint>/plan.json``: per query (a directory of the
checkpoint), the inputs of its union in order (Spark's offset log is positional), its sinks,
and every stateful operator's stable identity (`hydrolite.ir.stable`) with the key its
state is stored under and its state type. A restarted program is reconciled with that
record before anything runs:

* queries are matched by what they hold (state identities, then input ports, then sinks),
  not by position, so moving a statement or adding a pipeline changes nothing;
* a matched query resumes in its old directory; a query whose inputs changed cannot
  (Spark's offsets belong to the old inputs): refused;
* inside a query, each old state is matched to a new operator (same key; else same
  fingerprint and same code; else the one operator left with that fingerprint, whose
  function changed). State of the checkpoint the program no longer has, or state the
  program needs but the checkpoint never kept (it would start empty while the batches it
  missed are never replayed), or state whose type changed, is refused with a readable
  diff, unless the user accepts it: ``--reset-state fold@counter.py:31`` (or its key).
  `hydrolite plan PROGRAM --against CHECKPOINT` prints the same diff without running.

Example (a fresh checkpoint: nothing to compare)::

    >>> import tempfile
    >>> from examples import counter
    >>> from hydrolite.planner.spark.stages import plan_flow
    >>> from hydrolite.planner.spark.upgrade import reconcile
    >>> recon = reconcile(plan_flow(counter.build()), tempfile.mkdtemp())
    >>> recon.refused, recon.render().splitlines()[0]
    (False, 'plan check: a new checkpoint (nothing to compare)')
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...errors import HydroliteError
from ...ir import nodes as n
from ...ir.meta import type_name
from ...ir.stable import Identity
from . import ckfs
from .grouping import GROUPING, compare_grouping
from .offsets import numbered
from .stages import Plan, Stage
from .state_homes import KEYED_OPERATOR, LEGACY_KEYED_OPERATOR, compare_homes, compare_state_home, home_of, table_homes

PLAN_FILE = "plan.json"
RECORD_VERSION = 1
#: how `demux_by_key()` picks a key's member (`locations.sharding.member_of_key`), recorded: a
#: record without it was routed by BLAKE2b; resumed by another route, a key's state is elsewhere
KEY_ROUTING = "sha256-60"


class PlanChangedError(HydroliteError, RuntimeError):
    """The program cannot resume its checkpoint without losing or inventing state."""

    code: ClassVar[str] = "HL-PLAN-CHANGED"


def state_type(node: n.Node) -> str:
    """What a stateful operator's state holds, as recorded (elements and keys)."""
    meta = node.meta
    key = f"{type_name(meta.key)}, " if meta.kind.keyed else ""
    return f"{meta.kind.value}[{key}{type_name(meta.elem)}]"


@dataclass
class StateRecord:
    key: str
    base: str
    code: str
    op: str
    at: str
    type: str
    home: str = "driver"  # native | executors | driver (`placement.py`); records before it: driver

    @property
    def display(self) -> str:
        return f"{self.op}@{self.at}"


@dataclass
class QueryRecord:
    dir: str
    inputs: list[str]
    sinks: list[str]
    state: dict[str, StateRecord]
    keyed_operator: str = LEGACY_KEYED_OPERATOR  # meaningful when a state's home is "executors"
    #: channel -> where the version of the keyed table read through it lives (`table_homes`);
    #: records before the field kept every such version as Parquet
    tables: dict[str, str] = field(default_factory=dict)


def stage_inputs(stage: Stage) -> list[str]:
    """The query's union inputs as the runtime builds it (the heartbeat, when any, last)."""
    return stage.input_names + (["heartbeat"] if stage.has_heartbeat else [])


def committed(checkpoint: str, query: str) -> int:
    """How many batches of a query were committed (0 for a query that never committed)."""
    qdir = ckfs.join(checkpoint, query)
    if ckfs.exists(ckfs.join(qdir, "batch-job-committed")):
        return 1
    done = numbered(ckfs.join(qdir, "spark", "commits"))
    return done[-1] + 1 if done else 0


def read_record(checkpoint: str) -> tuple[dict[str, QueryRecord], int] | None:
    """The plan recorded in a checkpoint (None when there is none)."""
    path = ckfs.join(checkpoint, PLAN_FILE)
    try:
        text = ckfs.read_text(path)
        if text is None:
            return None
        data = json.loads(text)
        queries = {
            d: QueryRecord(
                d,
                list(q["inputs"]),
                list(q["sinks"]),
                {k: StateRecord(key=k, **s) for k, s in q["state"].items()},
                str(q.get("keyed_operator", LEGACY_KEYED_OPERATOR)),
                dict(q.get("tables", {})),
            )
            for d, q in data["queries"].items()
        }
        return queries, int(data.get("resets", 0))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PlanChangedError(
            f"the plan record {path} is unreadable ({type(exc).__name__}: {exc})\n"
            f"  fix: restore it from a backup, or start a new --checkpoint"
        ) from exc


def _legacy(checkpoint: str) -> list[str]:
    """The query directories of a checkpoint (each holds its `hydrolite.json`), sorted."""
    return [d for d in ckfs.list_names(checkpoint) if ckfs.is_file(ckfs.join(checkpoint, d, "hydrolite.json"))]


@dataclass
class _NewState:
    node: n.Node
    ident: Identity
    type: str


@dataclass
class Reconciliation:
    """The outcome of comparing a plan with a checkpoint's record (see the module docstring)."""

    plan: Plan
    checkpoint: str
    lines: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)  # stage index -> directory
    input_order: dict[int, list[str]] = field(default_factory=dict)
    keys: dict[int, dict[int, str]] = field(default_factory=dict)  # stage index -> node -> state key
    resets: int = 0
    fresh: bool = True

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    @property
    def notable(self) -> bool:
        """Whether the diff says more than "everything resumes as it was"."""
        return any(not ln.lstrip().startswith("=") or "(" in ln.split(":", 1)[-1] for ln in self.lines)

    def render(self) -> str:
        head = (
            "plan check: a new checkpoint (nothing to compare)"
            if self.fresh
            else f"plan check against {self.checkpoint}:"
        )
        out = [head, *self.lines]
        if self.refusals:
            out.append(f"refused: {len(self.refusals)} change(s) would lose or invent state:")
            out.extend(f"  - {r}" for r in self.refusals)
            out.extend(f"  fix: {f}" for f in dict.fromkeys(self.fixes))
        return "\n".join(out)

    def apply(self) -> None:
        """Give the plan's stages their directories, input orders and state keys."""
        for stage in self.plan.stages:
            stage.name = self.names.get(stage.index, stage.base_name)
            stage.input_order = self.input_order.get(stage.index, [])
            stage.state_keys = {
                **{id(x): self.plan.identities[id(x)].key for x in stage.nodes},
                **self.keys.get(stage.index, {}),
            }

    def record(self) -> dict[str, Any]:
        """The plan record to write after `apply` (what the next restart compares with)."""
        queries: dict[str, Any] = {}
        for stage in self.plan.stages:
            state = {}
            for x in stage.stateful:
                ident = self.plan.identities[id(x)]
                state[stage.state_keys[id(x)]] = {
                    "base": ident.base,
                    "code": ident.code,
                    "op": ident.op,
                    "at": ident.at,
                    "type": state_type(x),
                    "home": home_of(stage, x),
                }
            tables = table_homes(stage)
            homes = [*(s["home"] for s in state.values()), *tables.values()]
            queries[stage.name] = {
                "inputs": stage_inputs(stage),
                "sinks": [s.port for s in stage.sinks],
                "state": state,
                **({"keyed_operator": KEYED_OPERATOR} if "executors" in homes else {}),
                **({"tables": tables} if tables else {}),
            }
        return {
            "version": RECORD_VERSION,
            "flow": self.plan.flow.name,
            "resets": self.resets,
            "queries": queries,
            "clusters": dict(sorted(self.plan.cluster_members.items())),
            "key_routing": KEY_ROUTING,
            "key_grouping": GROUPING,
        }


def write_record(checkpoint: str, data: dict[str, Any]) -> None:
    """Write the plan record (`plan.json`) whole or not at all, creating the checkpoint."""
    ckfs.write_atomic(ckfs.join(checkpoint, PLAN_FILE), json.dumps(data, indent=2, sort_keys=True))


def _matches(reset: Sequence[str], *names: str) -> bool:
    return any(r in names for r in reset)


def reconcile(plan: Plan, checkpoint: str, reset: Sequence[str] = ()) -> Reconciliation:
    """Compare `plan` with the plan recorded in `checkpoint` (nothing is changed on disk)."""
    recon = Reconciliation(plan, ckfs.absolute(checkpoint))  # a URI stays one
    found = read_record(recon.checkpoint)
    if found is None:
        legacy = _legacy(recon.checkpoint)
        if legacy:
            recon.fresh = False
            recon.refusals.append(
                f"the checkpoint has queries {legacy} but no plan record ({PLAN_FILE}): it was written by an "
                f"earlier hydrolite, so it cannot be checked against this program"
            )
            recon.fixes.append("resume it with the hydrolite version that wrote it, or start a new --checkpoint")
        return recon
    old, recon.resets = found
    recon.fresh = False
    data = _record_data(recon.checkpoint)
    _compare_members(recon, plan, data)
    _compare_routing(recon, plan, data)
    compare_grouping(recon, old, data, reset)
    used = set(reset)
    pairs = _pair_queries(plan, old, recon.checkpoint)
    taken = {q for q in pairs.values()}
    for stage in plan.stages:
        q = pairs.get(stage.index)
        if q is None:
            name = stage.base_name
            k = 2
            while name in old or ckfs.exists(ckfs.join(recon.checkpoint, name)):
                name, k = f"{stage.base_name}-v{k}", k + 1
            recon.names[stage.index] = name
            recon.lines.append(
                f"  + query {name}: new (reads {stage_inputs(stage)}, writes {[s.port for s in stage.sinks]}); starts from the beginning of its inputs"
            )
            continue
        recon.names[stage.index] = q
        _compare_query(recon, stage, old[q], committed(recon.checkpoint, q), reset, used)
    for q, rec in old.items():
        if q not in taken:
            lost = [s for s in rec.state.values() if not _matches(reset, s.display, s.key)]
            n_done = committed(recon.checkpoint, q)
            recon.lines.append(
                f"  - query {q}: no longer in the program (read {rec.inputs}, wrote {rec.sinks}); its directory is kept"
            )
            for s in lost if n_done else []:
                recon.refusals.append(
                    f"{s.display}: the state of query {q} (key {s.key}, {s.type}) would be lost: the program no longer has this operator"
                )
                recon.fixes.append(f"pass --reset-state {s.display} to drop it, or keep the operator")
            used.difference_update(x for s in rec.state.values() for x in (s.display, s.key))
    unknown = sorted(r for r in used if not _known(r, plan, old))
    if unknown:
        recon.refusals.append(f"--reset-state {', '.join(unknown)}: no such operator in the program or the checkpoint")
        recon.fixes.append("name operators as the diff shows them (op@file:line) or by their state key")
    return recon


def _record_data(checkpoint: str) -> dict[str, Any]:
    """The plan record's JSON; FileNotFoundError when the checkpoint has none."""
    path = ckfs.join(checkpoint, PLAN_FILE)
    text = ckfs.read_text(path)
    if text is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    data: dict[str, Any] = json.loads(text)
    return data


def recorded_members(checkpoint: str) -> dict[str, int]:
    """Members per cluster tag the checkpoint's runs had (empty for records before clusters)."""
    return _members_of(_record_data(checkpoint))


def _members_of(data: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in dict(data.get("clusters", {})).items()}


def _compare_members(recon: Reconciliation, plan: Plan, data: dict[str, Any]) -> None:
    """Refuse resuming with a different number of members: state is keyed by member index and
    routed by it (`demux`), so each member would inherit another's state."""
    before = _members_of(data)
    for tag in sorted(set(before) | set(plan.cluster_members)):
        was, now = before.get(tag), plan.cluster_members.get(tag)
        if was is not None and now is not None and was != now:
            recon.refusals.append(
                f"cluster {tag}: the checkpoint was written with {was} members and this run has {now}; state is "
                f"kept per member index, so members would start from other members' state"
            )
            recon.fixes.append(f"resume with --cluster-members {tag}={was}, or start a new --checkpoint")


def routes_by_key(plan: Plan) -> bool:
    """Whether the program sends by key: `demux_by_key()` targets a cluster, so the planned
    (lifted) flow has it as a map to the key's owner (`cluster_fns.Owner` / `OwnerFrom`)."""
    from .cluster_fns import Owner, OwnerFrom

    return any(isinstance(getattr(x, "f", None), (Owner, OwnerFrom)) for x in plan.flow.nodes())


def _compare_routing(recon: Reconciliation, plan: Plan, data: dict[str, Any]) -> None:
    """Refuse resuming keys routed by another hash (see KEY_ROUTING)."""
    was = data.get("key_routing")
    if was == KEY_ROUTING or not routes_by_key(plan) or (was is None and not data.get("clusters")):
        return
    how = (
        f"by {was}" if was else "by hydrolite before 2026-11-26 (a BLAKE2b digest), if its program used demux_by_key()"
    )
    recon.refusals.append(
        f"demux_by_key(): the checkpoint's keys were routed to members {how}, this version routes them by "
        f"{KEY_ROUTING}; each key's state and values would be looked for on another member"
    )
    recon.fixes.append(
        "resume it with the hydrolite version that wrote it, or start a new --checkpoint (also if the program "
        "that wrote it had no demux_by_key(): its record cannot tell)"
    )


def _known(name: str, plan: Plan, old: dict[str, QueryRecord]) -> bool:
    if any(name in (i.display, i.key) for i in plan.identities.values()):
        return True
    return any(name in (s.display, s.key) for q in old.values() for s in q.state.values())


def _pair_queries(plan: Plan, old: dict[str, QueryRecord], checkpoint: str) -> dict[int, str]:
    """Match each stage to the recorded query holding the most of the same things."""
    scores: list[tuple[int, int, str]] = []
    for stage in plan.stages:
        bases = {plan.identities[id(x)].base for x in stage.stateful}
        inputs, sinks = set(stage_inputs(stage)), {s.port for s in stage.sinks}
        for q, rec in old.items():
            if not committed(checkpoint, q) and set(rec.inputs) != inputs:
                continue  # never committed and read other inputs: its Spark log cannot serve
            score = (
                8 * len(bases & {s.base for s in rec.state.values()})
                + 2 * len(inputs & set(rec.inputs))
                + len(sinks & set(rec.sinks))
            )
            if score:
                scores.append((score, stage.index, q))
    pairs: dict[int, str] = {}
    for _, i, q in sorted(scores, key=lambda t: (-t[0], t[1], t[2])):
        if i not in pairs and q not in pairs.values():
            pairs[i] = q
    return pairs


def _compare_query(
    recon: Reconciliation, stage: Stage, rec: QueryRecord, done: int, reset: Sequence[str], used: set[str]
) -> None:
    q = rec.dir
    inputs = stage_inputs(stage)
    recon.input_order[stage.index] = list(rec.inputs) if set(rec.inputs) == set(inputs) else []
    if not done:
        recon.lines.append(f"  = query {q}: nothing committed yet; starts as a new query")
        return
    recon.lines.append(f"  = query {q}: resumes after batch {done - 1}")
    if set(rec.inputs) != set(inputs):
        added, removed = sorted(set(inputs) - set(rec.inputs)), sorted(set(rec.inputs) - set(inputs))
        recon.refusals.append(
            f"query {q} reads {inputs} but its checkpoint recorded {rec.inputs} (added {added}, removed {removed}): "
            f"Spark's offset log has one offset per recorded input, so it cannot resume with other inputs"
        )
        recon.fixes.append("keep the query's input ports (a renamed port is a new input), or start a new --checkpoint")
    for port in sorted(set(rec.sinks) - {s.port for s in stage.sinks}):
        recon.lines.append(f"      - sink {port}: no longer written")
    for port in sorted({s.port for s in stage.sinks} - set(rec.sinks)):
        recon.lines.append(f"      + sink {port}: written from the next batch on")
    new = [_NewState(x, recon.plan.identities[id(x)], state_type(x)) for x in stage.stateful]
    compare_homes(recon, stage, rec)
    pairs = _pair_state(new, list(rec.state.values()))
    keys: dict[int, str] = {}
    for ns in new:
        s = pairs.get(id(ns.node))
        names = (ns.ident.display, ns.ident.key) + ((s.display, s.key) if s else ())
        if _matches(reset, *names) and (s is not None and s.home == "native" or home_of(stage, ns.node) == "native"):
            used.difference_update(names)
            recon.refusals.append(
                f"{ns.ident.display}: its state is kept by a native streaming aggregation, in Spark's own checkpoint "
                f"of query {q}: it cannot be reset alone (key {ns.ident.key})"
            )
            recon.fixes.append("start a new --checkpoint (its other states start empty too)")
            continue
        if _matches(reset, *names):
            used.difference_update(names)
            recon.resets += 1
            keys[id(ns.node)] = f"{ns.ident.key}~r{recon.resets}"
            recon.lines.append(f"      ~ {ns.ident.display}: state reset (--reset-state): starts empty at batch {done}")
            continue
        if s is None:
            recon.refusals.append(
                f"{ns.ident.display}: new state in query {q} would start empty at batch {done}, "
                f"without the {done} batch(es) of input already read (key {ns.ident.key})"
            )
            recon.fixes.append(
                f"pass name=... naming the operator it replaces, or accept an empty start with --reset-state {ns.ident.display}"
            )
            continue
        keys[id(ns.node)] = s.key
        if s.type != ns.type and "?" not in s.type + ns.type:
            recon.refusals.append(
                f"{ns.ident.display}: its state was {s.type} and would now be read as {ns.type} (key {s.key})"
            )
            recon.fixes.append(f"pass --reset-state {ns.ident.display} to start it empty, or keep its type")
            continue
        if not compare_state_home(recon, stage, ns.node, ns.ident.display, s.home, s.key):
            continue
        changed = " (its function changed)" if s.code != ns.ident.code else ""
        moved = f" (was {s.display})" if s.at != ns.ident.at else ""
        recon.lines.append(f"      = {ns.ident.display}: state kept{moved}{changed}")
    matched = {id(s) for s in pairs.values()}
    for s in rec.state.values():
        if id(s) in matched:
            continue
        if _matches(reset, s.display, s.key):
            used.difference_update((s.display, s.key))
            recon.lines.append(f"      - {s.display}: state dropped (--reset-state)")
            continue
        recon.refusals.append(
            f"{s.display}: the state of query {q} (key {s.key}, {s.type}) would be lost: the program no longer has this operator"
        )
        recon.fixes.append(
            f"pass name=... with its old key's operator, or drop the state with --reset-state {s.display}"
        )
    recon.keys[stage.index] = keys


def _pair_state(new: Iterable[_NewState], old: list[StateRecord]) -> dict[int, StateRecord]:
    """node -> the recorded state it continues (same key; same fingerprint and code; or the
    only ones left with one fingerprint)."""
    new = list(new)
    out: dict[int, StateRecord] = {}
    free = list(old)

    def take(ns: _NewState, s: StateRecord) -> None:
        out[id(ns.node)] = s
        free.remove(s)

    for ns in new:
        s = next((s for s in free if s.key == ns.ident.key and s.base == ns.ident.base), None)
        if s is not None:
            take(ns, s)
    for ns in [x for x in new if id(x.node) not in out]:
        same = [s for s in free if s.base == ns.ident.base and s.code == ns.ident.code]
        if len(same) == 1:
            take(ns, same[0])
    left = [x for x in new if id(x.node) not in out]
    for ns in left:
        olds = [s for s in free if s.base == ns.ident.base]
        news = [x for x in left if x.ident.base == ns.ident.base and id(x.node) not in out]
        if len(olds) == 1 and len(news) == 1:
            take(ns, olds[0])
    return out
