"""The evaluator registry: one executable `Op` class per IR node class.

`compile_program` builds one `Op` per node (shared by every execution); the registry maps
node classes to `Op` classes, so adding a node class means registering its evaluator, and
a test checks that every class in `hydrolite.ir.nodes.node_classes()` has one.

An `Op` evaluates its node in one of these *roles* (`hydrolite.ir.roles`, computed once
for every backend from the aligned IR):

* ``TOP``: top-level and unbounded; push-driven: `push` turns an input delta (a list of new
  elements for streams, a new version for singletons) into an output delta, keeping state.
* ``STATIC``: top-level and bounded (derived from `source_iter` only): computed once per
  execution with `tick`, then pushed to its unbounded consumers.
* ``BODY``: bounded, inside a tick: `tick` computes the tick's value from the inputs' values.
* ``CARRIED``: placed in a tick by the alignment pass while unbounded: `push` at tick time,
  with the deltas that reached it in this tick, state kept across ticks.
* ``ENTRY``: a `Batch` / `Snapshot` into a tick from the top level: a choice point.
* ``EXIT``: a top-level node reading a tick (`AllTicks`, `Latest`, `ReleaseAligned`): emits
  the tick's value at top level once the tick has completed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..ir.meta import Kind
from ..ir.nodes import Node
from ..ir.roles import Role
from .errors import UserFunctionError
from .values import NOTHING

if TYPE_CHECKING:
    from .world import World


class Op:
    """The executable form of one IR node. Subclasses override the methods of their roles."""

    __slots__ = (
        "node",
        "idx",
        "role",
        "kind",
        "in_kinds",
        "ins",
        "consumers",
        "carried",
        "port_order",
        "streamlike",
        "in_roles",
    )

    def __init__(
        self, node: Node, idx: int, role: Role, in_kinds: tuple[Kind, ...], in_roles: tuple[Role, ...]
    ) -> None:
        self.node = node
        self.idx = idx
        self.role = role
        self.kind = node.meta.kind
        self.streamlike = node.meta.kind.streamlike
        self.in_kinds = in_kinds
        self.in_roles = in_roles
        self.ins: tuple[int, ...] = ()  # indices of the input ops, in port order
        self.consumers: list[tuple[Op, int]] = []  # push-driven consumers (op, input port)
        self.carried: list[tuple[Op, int]] = []  # carried consumers (fed at tick time)
        self.port_order: tuple[int, ...] = ()  # carried ops: bounded inputs first, then carried
        self.setup()

    def setup(self) -> None:
        """Pick kind-specific behaviour once (override; called by __init__)."""

    # ------------------------------------------------------------- per-execution state
    def init_state(self) -> Any:
        """This op's state at the start of an execution, per place (None when stateless)."""
        return None

    def initial(self, st: list[Any]) -> Any:
        """The initial version of a top-level/carried singleton producer, or NOTHING."""
        return NOTHING

    # ------------------------------------------------------------- evaluation
    def push(self, w: World, p: int, st: list[Any], port: int, delta: Any) -> Any:
        """Consume a delta on input `port`; return the output delta or NOTHING."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot run at top level ({self.node.op}() at {self.node.site})"
        )

    def tick(self, w: World, st: list[Any], vals: list[Any]) -> Any:
        """The value of this node in the current tick (bounded roles), from `vals[input]`."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot run inside a tick ({self.node.op}() at {self.node.site})"
        )

    def fail(self, w: World, element: Any, exc: BaseException) -> UserFunctionError:
        """The error to raise when a user function failed on `element`."""
        return UserFunctionError(self.node, element, w.where_text(), exc)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} %{self.idx} {self.node.op}() {self.role.value} at {self.node.site}>"


OpT = TypeVar("OpT", bound=type[Op])
_REGISTRY: dict[type[Node], type[Op]] = {}


def evaluator(*classes: type[Node]) -> Callable[[OpT], OpT]:
    """Register the decorated `Op` class as the evaluator of the given node classes."""

    def register(op_cls: OpT) -> OpT:
        for cls in classes:
            if cls in _REGISTRY:
                raise TypeError(f"{cls.__name__} already has an evaluator ({_REGISTRY[cls].__name__})")
            _REGISTRY[cls] = op_cls
        return op_cls

    return register


def evaluator_for(cls: type[Node]) -> type[Op]:
    """The `Op` class registered for a node class."""
    _load()
    try:
        return _REGISTRY[cls]
    except KeyError:
        raise TypeError(f"the simulator has no evaluator for IR node class {cls.__name__}") from None


def registered() -> dict[type[Node], type[Op]]:
    """A copy of the registry (for the completeness test)."""
    _load()
    return dict(_REGISTRY)


def _load() -> None:
    from . import ops_aggregate, ops_binary, ops_element, ops_time  # noqa: F401  (registration)
