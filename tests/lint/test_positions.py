"""The lazy positions agree with libcst's PositionProvider (the reference) on every node kind we report."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from hydrolite_lint.positions import positions
from libcst.metadata import MetadataWrapper, PositionProvider

REPO = Path(__file__).resolve().parents[2]
TRICKY = [
    "x = 1\r\ny = (f(\r\n  'é',\tg(2)))\r\n",
    "# ü\nif a:\n\tb = ('ü' + c.d(e))  # c\n\tz = ( ( q ) )\rw = [n for n in m]\n",
    '@dec(1)\nclass A(B, metaclass=M):\n    """doc\n    string"""\n    def f(self, *a, k=g(), **kw) -> h(): return (yield)\n',
    "s = (x\n  .latest()\n  .snapshot(t, nondet('z'))\n)\nv = f'{a(b)!r:>{w}}'\n",
]


@pytest.mark.parametrize("source", TRICKY + [p.read_text() for p in sorted((REPO / "examples").glob("*.py"))])
def test_positions_match_position_provider(source: str) -> None:
    module = cst.parse_module(source)
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    kinds = (cst.Call, cst.Name, cst.Attribute, cst.SimpleString, cst.BinaryOperation, cst.FormattedString)
    targets = [node for node in reference if isinstance(node, kinds)]
    assert targets
    mine = positions(module, targets)
    expected = {id(n): (reference[n].start.line, reference[n].start.column + 1) for n in targets}
    assert mine == expected


def test_positions_of_nothing() -> None:
    assert positions(cst.parse_module("x = 1\n"), []) == {}
