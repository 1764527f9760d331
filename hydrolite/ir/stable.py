"""Stable identities of operators: what a checkpoint's state is keyed by across program edits.

A running program keeps state (a fold's accumulator, a query's offsets, a channel's files)
under names. A name taken from the operator's position in the program (its index in
topological order, its source line) changes as soon as the user adds a `map` above it or
moves a statement, and the restarted program would silently start that state from empty.
So each operator's identity is derived from what it *means* structurally:

* an explicit ``name=`` given by the user wins (``count(name="clicks")``);
* otherwise a **fingerprint** of the operator and its upstream graph: the operator's name,
  its sources' port names and the fingerprints of its inputs, skipping *pass-through*
  operators (``map``, ``filter``, ``inspect``, ... — `Node.passthrough`), whose insertion
  or edit does not change what the state downstream of them is about;
* when two operators of a program share a fingerprint (two folds over one source), their
  own functions' code tells them apart (bytecode and constants, not line numbers), then
  their order.

`Identity` keeps the pieces, so a checkpoint can match an old operator to a new one even
when the tie-break changed (see `hydrolite.planner.spark.upgrade`).

Example::

    >>> import hydrolite as hl
    >>> from hydrolite import nondet
    >>> from hydrolite.ir.stable import identities
    >>> class P: ...
    >>> def build(extra_map: bool) -> hl.Flow:
    ...     fb = hl.FlowBuilder("ids")
    ...     p = fb.process(P)
    ...     xs = p.source("xs", int)
    ...     if extra_map:
    ...         xs = xs.map(lambda x: x)
    ...     tick = p.tick()
    ...     xs.count().snapshot(tick, nondet("any")).into_stream().all_ticks().sink("out")
    ...     return fb.finalize()
    >>> def count_key(flow: hl.Flow) -> str:
    ...     return next(i.key for i in identities(flow.nodes()).values() if i.op == "count")
    >>> count_key(build(False)) == count_key(build(True))
    True
"""

from __future__ import annotations

import hashlib
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import nodes as n


@dataclass(frozen=True)
class Identity:
    """One operator's identity: `key` is what state is stored under."""

    key: str  # unique in the program: `base`, or `base.code`, or `base.code#i`
    base: str  # "<op>-<fingerprint>" (or "<op>:<name>" for a named operator)
    code: str  # digest of the operator's own functions and parameters ("" when none)
    op: str
    at: str  # "file.py:LINE", for messages only (never part of the identity)

    @property
    def display(self) -> str:
        """How messages and `--reset-state` name the operator: `fold@counter.py:31`."""
        return f"{self.op}@{self.at}"


def _digest(text: str, size: int = 10) -> str:
    return hashlib.sha1(text.encode("utf-8", "backslashreplace")).hexdigest()[:size]


def code_digest(value: Any) -> str:
    """A digest of a function's behaviour as written: bytecode, constants and names, without
    line numbers or file names (moving a function does not change it). Other values by repr."""
    parts: list[str] = []

    def visit(v: Any) -> None:
        code = getattr(v, "__code__", None)
        if isinstance(v, types.CodeType) or code is not None:
            c = v if isinstance(v, types.CodeType) else code
            assert isinstance(c, types.CodeType)
            parts.append(c.co_code.hex())
            parts.append(repr(c.co_names))
            for const in c.co_consts:
                visit(const)
            return
        if isinstance(v, (tuple, frozenset)):
            for item in v:
                visit(item)
            return
        text = repr(v)
        parts.append(text if " at 0x" not in text else type(v).__qualname__)

    visit(value)
    return _digest("|".join(parts), 8)


def _own_params(node: n.Node) -> str:
    """Digest of the node's own non-node parameters (functions by code)."""
    params = {k: v for k, v in node.params().items() if k not in ("nondet", "name", "tick", "align", "values")}
    if not params:
        return ""
    return code_digest(tuple(f"{k}={code_digest(v)}" for k, v in sorted(params.items())))


class _Fingerprints:
    def __init__(self) -> None:
        self.memo: dict[int, str] = {}

    def of(self, node: n.Node) -> str:
        known = self.memo.get(id(node))
        if known is None:
            known = self.memo[id(node)] = self._compute(node)
        return known

    def _compute(self, node: n.Node) -> str:
        if node.name is not None:
            return f"name:{node.name}"
        if node.passthrough and len(node.children) == 1:
            return self.of(node.children[0])
        if isinstance(node, n.Source):
            return f"source:{node.port}"
        extra = ""
        if isinstance(node, n.SourceIter):
            extra = _digest(repr(node.values), 8)
        elif isinstance(node, n.TickConstant):
            extra = _digest(repr(node.value), 8)
        elif isinstance(node, (n.CycleSource, n.CycleSink)):
            extra = f"cycle{node.cycle.index}"
        inner = " ".join(self.of(c) for c in node.children)
        return _digest(f"({node.op} {extra} {inner})", 16)


def identities(nodes: Iterable[n.Node]) -> dict[int, Identity]:
    """The identity of every node (keyed by `id(node)`); keys are unique among `nodes`.

    Nodes sharing a fingerprint are told apart by their own parameters' digest, then by
    their order in `nodes` (give them `name=` to make that choice yours)."""
    fp = _Fingerprints()
    order = list(nodes)
    draft: list[tuple[n.Node, str, str]] = []
    for node in order:
        base = f"{node.op}:{node.name}" if node.name is not None else f"{node.op}-{_digest(fp.of(node))}"
        draft.append((node, base, _own_params(node)))
    by_base: dict[str, list[int]] = {}
    for i, (_, base, _) in enumerate(draft):
        by_base.setdefault(base, []).append(i)
    out: dict[int, Identity] = {}
    for base, members in by_base.items():
        keys = _tie_break([(base, draft[i][2]) for i in members])
        for i, key in zip(members, keys):
            node = draft[i][0]
            at = node.site.label
            out[id(node)] = Identity(key, base, draft[i][2], node.op, at)
    return out


def _tie_break(group: Sequence[tuple[str, str]]) -> list[str]:
    if len(group) == 1:
        return [group[0][0]]
    keys = [f"{base}.{code}" if code else base for base, code in group]
    seen: dict[str, int] = {}
    out: list[str] = []
    for k in keys:
        count = seen.get(k, 0)
        seen[k] = count + 1
        out.append(k if keys.count(k) == 1 else f"{k}#{count}")
    return out


def duplicate_names(nodes: Iterable[n.Node]) -> list[tuple[str, list[n.Node]]]:
    """Explicit names given to more than one operator (a program error)."""
    by_name: dict[str, list[n.Node]] = {}
    for node in nodes:
        if node.name is not None:
            by_name.setdefault(node.name, []).append(node)
    return [(name, found) for name, found in by_name.items() if len(found) > 1]
