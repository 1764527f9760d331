"""Node roles: how each node of an aligned flow is evaluated, computed once for every backend.

The simulator and the Spark planner used to decide separately what "carried" or "keeps
state" meant, and they disagreed (a fold placed in a tick by the alignment pass kept its
state in the simulator and lost it on Spark). Both now read this classification:

* ``TOP``: top level and unbounded; consumes input deltas as they arrive.
* ``STATIC``: top level and bounded (derived from ``source_iter`` only): one value, computed
  once.
* ``BODY``: bounded, inside a tick: recomputed from this tick's inputs on every run.
* ``CARRIED``: moved into a tick by the alignment pass while unbounded: top-level meaning,
  discretised at the tick (consumes the delta that reached it in this run, keeps state).
* ``ENTRY``: a ``batch`` / ``snapshot`` whose input lives outside its tick: a choice point.
* ``EXIT``: a top-level node reading a tick's value (``all_ticks``, ``latest``,
  ``release_aligned``).

A node is *stateful* (its backend keeps state across ticks / micro-batches) when its class
says so whatever the role (``always_stateful``: ``defer_tick``, cycles, ``source_iter``), or
when it runs outside a tick body (TOP, STATIC, CARRIED) and its output depends on earlier
inputs (``Node.keeps_history()``: folds, counts, ``unique``, ...).

Example::

    >>> import hydrolite as hl
    >>> from hydrolite import nondet
    >>> from hydrolite.ir.roles import Role, classify
    >>> from hydrolite.passes.align import align_flow
    >>> class P: ...
    >>> fb = hl.FlowBuilder("roles")
    >>> p = fb.process(P)
    >>> xs = p.source("xs", int)
    >>> _ = xs.count().snapshot(p.tick(), nondet("any version")).into_stream().all_ticks().sink("out")
    >>> flow = align_flow(fb.finalize())
    >>> roles = classify(flow)
    >>> [(x.op, roles.of(x).role.value, roles.of(x).stateful) for x in flow.nodes()][:3]
    [('source', 'top', False), ('count', 'top', True), ('snapshot', 'entry', False)]
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from .graph import Flow
from .nodes import Node


class Role(enum.Enum):
    """How a node is evaluated (see the module docstring)."""

    TOP = "top"
    STATIC = "static"
    BODY = "body"
    CARRIED = "carried"
    ENTRY = "entry"
    EXIT = "exit"

    @property
    def over_time(self) -> bool:
        """Evaluated on deltas with a value that persists across ticks (not a tick body)."""
        return self in (Role.TOP, Role.STATIC, Role.CARRIED)


@dataclass(frozen=True)
class NodeRole:
    """A node's role and whether its backend must keep its state across ticks."""

    role: Role
    stateful: bool


def role_of(node: Node) -> Role:
    """The role of one node of an aligned flow (depends on the node and its inputs only)."""
    meta = node.meta
    if meta.in_tick:
        if node.entry and node.children[0].meta.loc != meta.loc:
            return Role.ENTRY
        return Role.BODY if meta.bounded else Role.CARRIED
    if any(c.meta.in_tick for c in node.children):
        return Role.EXIT
    if meta.bounded and not node.push_root:
        return Role.STATIC
    return Role.TOP


def node_role(node: Node) -> NodeRole:
    """Role and statefulness of one node."""
    role = role_of(node)
    stateful = node.always_stateful or (role.over_time and node.keeps_history())
    return NodeRole(role, stateful)


@dataclass(frozen=True)
class Roles:
    """The classification of every node of one aligned flow (keyed by node identity)."""

    by_id: Mapping[int, NodeRole]

    def of(self, node: Node) -> NodeRole:
        try:
            return self.by_id[id(node)]
        except KeyError:  # a node outside the flow (e.g. an unused source): classify it alone
            return node_role(node)

    def stateful(self, node: Node) -> bool:
        return self.of(node).stateful


def classify(flow: Flow) -> Roles:
    """Classify every node of `flow` (run the alignment pass first: roles follow its output)."""
    return Roles({id(x): node_role(x) for x in flow.nodes()})


def static_initial(node: Node) -> tuple[bool, object]:
    """The version a singleton has before any input arrives, when it is known statically:
    a fold's init, a count's 0, `unwrap_or(d)` of an optional that starts empty (`d`), maps
    and zips of those, and the `latest()` bridge the alignment pass puts on a carried one
    (readers of the bridge see that version from the start, in the simulator and on Spark).
    (False, None) otherwise."""
    from . import nodes as nd
    from .meta import Kind

    if node.meta.kind is not Kind.SINGLETON:
        return False, None
    if isinstance(node, nd.AlignedAt):  # (a mark for the alignment pass: its input's value)
        return static_initial(node.input)
    if isinstance(node, nd.Latest):
        return static_initial(node.input) if role_of(node.input) is Role.CARRIED else (False, None)
    if isinstance(node, nd.Count):
        return True, 0
    if isinstance(node, nd.Fold):
        return True, node.init
    if isinstance(node, nd.UnwrapOr):
        known, present, value = optional_initial(node.input)
        return (True, value if present else node.default) if known else (False, None)
    if isinstance(node, nd.Zip):
        (has_a, a), (has_b, b) = static_initial(node.left), static_initial(node.right)
        return (True, (a, b)) if has_a and has_b else (False, None)
    if isinstance(node, nd.Map):
        has, value = static_initial(node.input)
        return (True, node.f(value)) if has else (False, None)
    return False, None


def optional_initial(node: Node) -> tuple[bool, bool, object]:
    """(known, present, value): the version an optional singleton has before any input
    arrives, when known statically. A reduce, first or last of an unbounded stream starts
    empty (as an optional read from another query does on Spark before its first version);
    a map keeps it empty, a zip is empty when a side is; a filter of a singleton with a static
    initial version keeps it or not; a singleton is present with its static initial version.

        >>> import hydrolite as hl
        >>> class P: ...
        >>> p = hl.FlowBuilder("initial").process(P)
        >>> best = p.source("xs", int).reduce_commutative(max)
        >>> optional_initial(best.node), static_initial(best.unwrap_or(-1).node)
        ((True, False, None), (True, -1))
    """
    from . import nodes as nd
    from .meta import Kind

    if node.meta.kind is Kind.SINGLETON:
        has, value = static_initial(node)
        return has, has, value
    if node.meta.kind is not Kind.OPTIONAL:
        return False, False, None
    if isinstance(node, nd.AlignedAt):
        return optional_initial(node.input)
    if isinstance(node, nd.Latest):
        return optional_initial(node.input) if role_of(node.input) is Role.CARRIED else (False, False, None)
    if isinstance(node, (nd.Reduce, nd.First, nd.Last)):
        return (True, False, None) if _of_unbounded_stream(node) else (False, False, None)
    if isinstance(node, nd.Map):
        known, present, value = optional_initial(node.input)
        return (known, present, node.f(value) if present else None) if known else (False, False, None)
    if isinstance(node, nd.Zip):  # empty when a side is empty; unknown while a side is
        (ka, pa, a), (kb, pb, b) = optional_initial(node.left), optional_initial(node.right)
        return (True, pa and pb, (a, b) if pa and pb else None) if ka and kb else (False, False, None)
    if isinstance(node, nd.Filter) and node.input.meta.kind is Kind.SINGLETON:
        has, value = static_initial(node.input)
        return (True, bool(node.f(value)), value) if has else (False, False, None)
    return False, False, None


def starts_empty(node: Node) -> bool:
    """Whether keyed singleton `node` is the empty table before any input arrives: a keyed
    count, fold, reduce, first or last of an unbounded keyed stream, a map or filter of one,
    and the `latest()` bridge on a carried one (as `static_initial` knows a count's 0).

        >>> import hydrolite as hl
        >>> class P: ...
        >>> p = hl.FlowBuilder("empty").process(P)
        >>> counts = p.source("xs", tuple[str, int]).into_keyed().count()
        >>> starts_empty(counts.node), starts_empty(counts.map(lambda n: n + 1).node)
        (True, True)
        >>> starts_empty(counts.aligned_at(p.local_align_point()).node)  # (a mark: its input's value)
        True
    """
    from . import nodes as nd
    from .meta import Kind

    if node.meta.kind is not Kind.KEYED_SINGLETON:
        return False
    if isinstance(node, nd.AlignedAt):  # (a mark for the alignment pass: its input's value)
        return starts_empty(node.input)
    if isinstance(node, nd.Latest):
        return role_of(node.input) is Role.CARRIED and starts_empty(node.input)
    if isinstance(node, (nd.Count, nd.Fold, nd.Reduce, nd.First, nd.Last)):
        return _of_unbounded_stream(node)
    if isinstance(node, (nd.Map, nd.Filter, nd.FilterMap, nd.Inspect)):
        return starts_empty(node.input)
    return False


def _of_unbounded_stream(node: Node) -> bool:
    """An aggregate over an unbounded (keyed) stream: it has seen nothing before any input.
    So is one the alignment pass carries in a tick (its input is the tick's batch of such a
    stream, its state every batch so far): the `latest()` bridge on it reads that from the start."""
    src = node.children[0]
    return src.meta.kind.streamlike and (not src.meta.bounded or role_of(node) is Role.CARRIED)
