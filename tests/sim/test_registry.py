"""Every IR node class has a simulator evaluator."""

from __future__ import annotations

from hydrolite.ir.nodes import node_classes
from hydrolite.sim import evaluator_for, registered
from hydrolite.sim.registry import Op


def test_every_node_class_has_an_evaluator() -> None:
    missing = [c.__name__ for c in node_classes() if c not in registered()]
    assert missing == []
    for cls in node_classes():
        assert issubclass(evaluator_for(cls), Op)
