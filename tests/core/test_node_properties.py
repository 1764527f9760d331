"""Every operator is complete: one node class declares its properties, and every backend and
tool derives what it needs from it. This test fails when a new node class forgets a piece."""

from __future__ import annotations

import dataclasses

import pytest
from hydrolite_lint.vocabulary import _nondet_index, api_methods

import hydrolite.ir.nodes as n
from hydrolite.planner.spark import runtime  # noqa: F401  (registers the Spark handlers)
from hydrolite.planner.spark.exec import HANDLERS
from hydrolite.sim.registry import evaluator_for

ABSTRACT = {n.Unary, n.Binary}


def _concrete() -> list[type[n.Node]]:
    out: list[type[n.Node]] = []
    todo = list(n.Node.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls not in ABSTRACT and cls not in out:
            out.append(cls)
    return sorted(out, key=lambda c: c.__name__)


NODES = _concrete()


@pytest.mark.parametrize("cls", NODES, ids=lambda c: c.__name__)
def test_every_node_class_is_complete(cls: type[n.Node]) -> None:
    assert "op" in cls.__dict__, f"{cls.__name__} must declare its user-facing `op`"
    params = getattr(cls, "__dataclass_params__", None)  # not in the dataclasses stubs
    assert dataclasses.is_dataclass(cls) and params is not None and params.frozen
    assert evaluator_for(cls) is not None  # the simulator runs it
    assert cls in HANDLERS, (
        f"{cls.__name__} has no Spark handler (register one with @handles, or refuse it at plan time)"
    )
    assert not (cls.passthrough and (cls.always_stateful or not cls.movable)), (
        "a pass-through operator is stateless and movable"
    )


def test_the_tables_derived_from_node_classes() -> None:
    unmovable = {c.__name__ for c in NODES if not c.movable}
    assert unmovable == {"Source", "SourceIter", "Send", "AllTicks", "Latest", "ReleaseAligned"}
    passthrough = {c.__name__ for c in NODES if c.passthrough}
    assert passthrough == {"Map", "Filter", "FilterMap", "FlatMap", "Inspect", "AssumeOrdering", "WeakenOrdering"}
    entries = {c.__name__ for c in NODES if c.entry}
    assert entries == {"Batch", "Snapshot"}


def test_the_linter_vocabulary_is_derived_from_the_live_api() -> None:
    takes, others = api_methods()
    assert takes == {"batch": 1, "snapshot": 1, "batch_aligned": 2, "snapshot_aligned": 2, "assume_ordering": 0}
    assert {
        "map",
        "fold",
        "cross_singleton",
        "release_aligned",
        "tick",
        "source",
        "finalize",
        "complete_next_tick",
    } <= others
    assert not set(takes) & others


def test_a_new_nondet_parameter_is_found_wherever_it_is() -> None:
    from hydrolite.nondet import NonDet

    def later_op(self: object, tick: object, why: NonDet, extra: int = 0) -> None: ...

    def plain(self: object, f: object) -> None: ...

    assert _nondet_index(later_op) == 1 and _nondet_index(plain) is None
