"""Every operator builds the expected IR node: class, meta, fields, children and call site.

`OPS` (tests/core/ir_ops_values.py, ir_ops_time.py) is a table with one row per (operator, collection kind); each
row's `build` is a lambda, so the node's recorded call site must be that lambda's line.
`test_every_node_class_is_built` keeps the table complete as node classes are added.
Snapshot: `HYDROLITE_UPDATE_FIXTURES=1 pytest tests/core` rewrites tests/core/fixtures/.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from hydrolite import nondet
from hydrolite.ir import nodes as n
from hydrolite.ir.graph import topo_order
from hydrolite.ir.meta import Kind, Meta
from hydrolite.ir.nodes import node_classes

from .ir_ops_time import TIME_OPS
from .ir_ops_values import VALUE_OPS
from .ir_world import ANY, PASS_ONLY, Op, R, W, built

OPS: list[Op] = [*VALUE_OPS, *TIME_OPS]

HERE = os.path.abspath(__file__)
FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# ------------------------------------------------------------------ operators
def test_every_node_class_is_built() -> None:
    covered = {op.node for op in OPS}
    missing = set(node_classes()) - covered - PASS_ONLY
    assert not missing, f"node classes no test builds: {sorted(c.__name__ for c in missing)}"
    assert covered <= set(node_classes())
    for op in OPS:  # the table's claim is checked by building, not trusted
        assert type(built(op)[1]) is op.node, op


@pytest.mark.parametrize("op", OPS, ids=str)
def test_operator_builds_its_node(op: Op) -> None:
    w, node = built(op)
    assert type(node) is op.node
    meta = node.meta
    assert (meta.kind, meta.loc, meta.bounded, meta.ordered) == (op.kind, w.loc(op.at), op.bounded, op.ordered), (
        meta.type_str()
    )
    if op.elem is not ANY:
        assert meta.elem == op.elem, meta.type_str()
    if op.key is not ANY:
        assert meta.key == op.key, meta.type_str()
    where = (op.build.__code__.co_filename, op.build.__code__.co_firstlineno)
    assert (node.site.file, node.site.line) == where
    if op.inputs:
        assert tuple(type(c) for c in node.children) == op.inputs
    for name, value in op.fields(w).items():
        assert getattr(node, name) == value, name
    if isinstance(node, (n.Batch, n.Snapshot, n.AssumeOrdering)):
        assert node.nondet.reason and (node.nondet.site.file, node.nondet.site.line) == where


def test_chained_operators_keep_their_own_lines() -> None:
    w = W()
    out = (
        w.x.map(lambda v: v + 1)  # line +1
        .filter(lambda v: v > 0)  # line +2
        .batch(w.tick, nondet(R))  # line +3
    )
    start = test_chained_operators_keep_their_own_lines.__code__.co_firstlineno + 3
    lines = [node.site.line for node in topo_order((out.node,)) if node.site.file == HERE and node.op != "source"]
    assert lines == [start, start + 1, start + 2]
    assert [c.op for c in topo_order((out.node,))] == ["source", "map", "filter", "batch"]


# ------------------------------------------------------------------ node classes
def test_node_classes_are_frozen_identity_dataclasses_with_their_own_name() -> None:
    names = set()
    for cls in node_classes():
        params = getattr(cls, "__dataclass_params__", None)  # not in the dataclasses stubs
        assert dataclasses.is_dataclass(cls) and params is not None and params.frozen and not params.eq, cls
        assert "op" in cls.__dict__ and cls.op not in names, f"{cls.__name__} needs its own op name"
        names.add(cls.op)
        assert "children" not in {f.name for f in dataclasses.fields(cls)}, f"{cls.__name__} stores children"


def _meta(w: W) -> Meta:
    return Meta(Kind.STREAM, w.server.id, bounded=False, ordered=True, elem=int)


def _assign(obj: object, attribute: str, value: object) -> None:
    """`obj.attribute = value`, written so that mypy lets a test try what it would reject."""
    setattr(obj, attribute, value)


def test_nodes_are_immutable_and_compared_by_identity() -> None:
    w = W()
    node = w.x.map(str).node
    with pytest.raises(dataclasses.FrozenInstanceError):
        _assign(node, "meta", _meta(w))
    with pytest.raises(dataclasses.FrozenInstanceError):
        _assign(node, "input", node)
    twin = dataclasses.replace(node)
    assert twin is not node and twin != node and len({node, twin}) == 2
    assert twin.children == node.children and twin.params() == node.params()


def test_children_are_derived_from_fields() -> None:
    w = W()
    site = w.x.node.site
    a = n.Source(meta=_meta(w), site=site, port="a")
    b = n.Source(meta=_meta(w), site=site, port="b")
    assert a.children == () and a.params() == {"port": "a"}
    join = n.Join(meta=_meta(w), site=site, left=a, right=b)
    assert join.children == (a, b)
    assert n.Join(meta=_meta(w), site=site, left=b, right=a).children == (b, a)
    assert join.params() == {}
    m = n.Map(meta=_meta(w), site=site, input=a, f=str)
    assert m.children == (a,) and m.params() == {"f": str}
    assert dataclasses.replace(m, input=b).children == (b,)
    shared = n.Join(meta=_meta(w), site=site, left=m, right=n.Filter(meta=_meta(w), site=site, input=a, f=bool))
    order = topo_order((shared,))
    assert [x.op for x in order] == ["source", "map", "filter", "join"]
    assert order.count(a) == 1


def test_a_reused_collection_is_one_shared_node() -> None:
    w = W()
    counted = w.ks.values()
    left, right = counted.count(), counted.fold_commutative(0, max)
    assert left.node.children[0] is right.node.children[0] is counted.node


# ------------------------------------------------------------------ dumps and examples
def _load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_hl_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dump_snapshot_of_counter_naive() -> None:
    example = _load_example("counter_naive")
    text = example.build().dump() + "\n"
    fixture = FIXTURES / "counter_naive.dump.txt"
    if os.environ.get("HYDROLITE_UPDATE_FIXTURES") == "1":
        fixture.parent.mkdir(exist_ok=True)
        fixture.write_text(text)
    assert text == fixture.read_text(), (
        "Flow.dump() changed: rerun with HYDROLITE_UPDATE_FIXTURES=1 and review the diff"
    )
    assert example.build().dump() + "\n" == text, "two builds of one program dump differently"
    assert "0x" not in text and " at 0" not in text


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.py") if p.stem != "__init__"))
def test_examples_build_their_ir(name: str) -> None:
    example = _load_example(name)
    flow = example.build()
    nodes = flow.nodes()
    assert nodes and flow.sinks
    source = os.path.abspath(EXAMPLES / f"{name}.py")
    assert {node.site.file for node in nodes} == {source}, "every node points at the example's own lines"
    assert all(node.site.code for node in nodes)
    assert flow.dump() == example.build().dump()
