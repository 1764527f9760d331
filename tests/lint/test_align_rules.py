"""HL020 (align point never used) and HL021 (align point that can only be a no-op)."""

from __future__ import annotations

import pytest

from .helpers import found, run

_PRELUDE = """\
from hydrolite import nondet
def build(server, increment, count, query, tick, other):
"""


def body(*lines: str) -> str:
    return _PRELUDE + "".join(f"    {line}\n" for line in lines)


def test_never_used() -> None:
    report = run(body("align = server.local_align_point()", "count.snapshot(tick, nondet('any version'))"))
    assert [(f.line, f.col, f.code) for f in report.findings] == [(3, 5, "HL020")]
    assert "`align`" in report.findings[0].message


def test_created_and_dropped() -> None:
    assert found(body("server.local_align_point()")) == [(3, "HL020")]


@pytest.mark.parametrize(
    ("uses", "fragment"),
    [
        (["increment.release_aligned(align)"], "only release_aligned"),
        (["increment.release_aligned(align)", "query.release_aligned(align)"], "only release_aligned"),
        (["increment.aligned_at(align)"], "only aligned_at"),
        (["increment.aligned_at(align)", "increment.release_aligned(align)"], "release_aligned and aligned_at"),
        (["count.snapshot_aligned(tick, align, nondet('consistent'))"], "one aligned read and no release_aligned"),
        (["query.batch_aligned(tick, align, nondet('consistent'))", "increment.aligned_at(align)"], "one aligned read"),
    ],
)
def test_no_op(uses: list[str], fragment: str) -> None:
    report = run(body("align = server.local_align_point()", *uses))
    assert [(f.line, f.code) for f in report.findings] == [(3, "HL021")]
    assert fragment in report.findings[0].message


def test_inline_point_used_once_is_a_no_op() -> None:
    code = body("count.snapshot_aligned(tick, server.local_align_point(), nondet('consistent'))")
    assert found(code) == [(3, "HL021")]


@pytest.mark.parametrize(
    "uses",
    [
        [
            "count.snapshot_aligned(tick, align, nondet('consistent with acks'))",
            "acks = increment.release_aligned(align)",
        ],
        [
            "count.snapshot_aligned(tick, align, nondet('same prefix'))",
            "query.batch_aligned(other, align, nondet('same prefix'))",
        ],
        ["for c in count:", "    c.snapshot_aligned(tick, align, nondet('one read per counter, all aligned'))"],
    ],
)
def test_points_that_align_something(uses: list[str]) -> None:
    assert found(body("align = server.local_align_point()", *uses)) == []


@pytest.mark.parametrize(
    "uses",
    [
        ["helper(count, align)"],  # passed on: the helper may read at it
        ["return align"],
        ["self_points = [align]"],
        ["def inner():", "    return count.snapshot_aligned(tick, align, nondet('consistent'))"],
        ["increment.release_aligned(align)", "align = server.local_align_point()"],  # rebound
    ],
)
def test_escaping_points_are_not_judged(uses: list[str]) -> None:
    assert found(body("align = server.local_align_point()", *uses)) == []


def test_points_are_counted_per_binding() -> None:
    code = body(
        "a = server.local_align_point()",
        "b = server.local_align_point()",
        "count.snapshot_aligned(tick, a, nondet('consistent with acks'))",
        "increment.release_aligned(a)",
        "count.snapshot_aligned(tick, b, nondet('consistent'))",
    )
    assert found(code) == [(4, "HL021")]


def test_module_level_point() -> None:
    code = """
        import hydrolite as hl
        align = server.local_align_point()
        acks = increment.release_aligned(align)
    """
    assert found(code) == [(2, "HL021")]
