"""HL033: two plain snapshots of state with a common upstream, combined in one tick."""

from __future__ import annotations

import pytest

from .helpers import found, run

_PRELUDE = """\
from hydrolite import nondet
def build(p, tick, other, align):
    xs = p.source("xs", int)
    ys = p.source("ys", int)
"""


def body(*lines: str) -> str:
    return _PRELUDE + "".join(f"    {line}\n" for line in lines)


INVALID = [
    # the count and the sum of one stream, each snapshotted on its own: they can disagree
    [
        "n = xs.count().snapshot(tick, nondet('any'))",
        "s = xs.fold_commutative(0, lambda a, x: a + x).snapshot(tick, nondet('any'))",
        "n.zip(s)",
    ],
    ["xs.count().snapshot(tick, nondet('any')).zip(xs.map(abs).fold(0, max).snapshot(tick, nondet('any')))"],
    [
        "total = xs.count()",
        "big = xs.filter(lambda x: x > 9).count()",
        "total.snapshot(tick, nondet('a')).map(str).cross_singleton(big.snapshot(tick, nondet('b')))",
    ],
]

VALID = [
    # different upstreams: nothing shared, nothing to agree on
    ["xs.count().snapshot(tick, nondet('any')).zip(ys.count().snapshot(tick, nondet('any')))"],
    # aligned reads are consistent by construction
    [
        "xs.count().snapshot_aligned(tick, align, nondet('c')).zip(xs.fold(0, max).snapshot_aligned(tick, align, nondet('c')))"
    ],
    # two different ticks are not combined
    [
        "a = xs.count().snapshot(tick, nondet('any'))",
        "b = xs.fold(0, max).snapshot(other, nondet('any'))",
        "a.into_stream().all_ticks()",
        "b.into_stream().all_ticks()",
    ],
    # one snapshot combined with a batch of the same stream (HL032's territory, not this rule)
    ["xs.batch(tick, nondet('any')).cross_singleton(xs.count().snapshot(tick, nondet('any')))"],
]


@pytest.mark.parametrize("lines", INVALID)
def test_combined_plain_snapshots_of_shared_state_are_reported(lines: list[str]) -> None:
    report = run(body(*lines))
    assert [f.code for f in report.findings] == ["HL033"]
    msg = report.findings[0].message
    assert "computed from `xs`" in msg and ".snapshot_aligned(tick, align, nondet(...))" in msg


@pytest.mark.parametrize("lines", VALID)
def test_reads_that_are_fine(lines: list[str]) -> None:
    assert [c for _, c in found(body(*lines))] == []
