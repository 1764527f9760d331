"""--fix: the exact rewrites of HL010 and HL004, and every condition that blocks them."""

from __future__ import annotations

from textwrap import dedent

import pytest

from .helpers import fixed, run


def test_inline_single_use_token() -> None:
    before = """\
        from hydrolite import nondet


        def build(s, count, tick, align):
            # each read needs its own justification
            why = nondet("any version consistent with the acks")
            total = count.snapshot_aligned(tick, align, why)
            return total
        """
    after = """\
        from hydrolite import nondet


        def build(s, count, tick, align):
            # each read needs its own justification
            total = count.snapshot_aligned(tick, align, nondet("any version consistent with the acks"))
            return total
        """
    assert fixed(before) == dedent(after)
    report = run(before, fix=True)
    assert report.fixed == 1 and report.findings == []


def test_inline_into_a_nested_statement_and_keyword() -> None:
    before = """\
        import hydrolite as hl
        def build(s, tick, fast):
            nd: hl.NonDet = hl.nondet("any grouping " "is fine")
            if fast:
                return s.batch(tick, nondet=nd)
        """
    after = """\
        import hydrolite as hl
        def build(s, tick, fast):
            if fast:
                return s.batch(tick, nondet=hl.nondet("any grouping " "is fine"))
        """
    assert fixed(before) == dedent(after)


@pytest.mark.parametrize(
    "code",
    [
        # used twice
        "def f(s, r, t):\n    nd = nondet('any grouping')\n    s.batch(t, nd)\n    r.batch(t, nd)\n",
        # used in a loop
        "def f(ss, t):\n    nd = nondet('any grouping')\n    for s in ss:\n        s.batch(t, nd)\n",
        # module scope: other modules may import the name
        "nd = nondet('any grouping')\ns.batch(t, nd)\n",
        # a trailing comment would be lost
        "def f(s, t):\n    nd = nondet('any grouping')  # keep me\n    s.batch(t, nd)\n",
        # two statements on one line
        "def f(s, t):\n    nd = nondet('any grouping'); x = 1\n    s.batch(t, nd)\n",
        # the use is not in a later statement of the same block
        "def f(s, t, c):\n    if c:\n        nd = nondet('any grouping')\n    s.batch(t, nd)\n",
        # the reason is not a literal: evaluation order could matter
        "def f(s, t, r):\n    nd = nondet(r)\n    s.batch(t, nd)\n",
        # the consumer does not take a nondet there
        "def f(s, t):\n    nd = nondet('any grouping')\n    s.map(nd)\n",
        # consumed by a nested function
        "def f(s, t):\n    nd = nondet('any grouping')\n    def g():\n        return s.batch(t, nd)\n",
        # suppressed (the comment sits inside the call, so only the noqa blocks the fix)
        "def f(s, t):\n    nd = nondet(  # noqa: HL010\n        'any grouping')\n    s.batch(t, nd)\n",
        # chained assignment
        "def f(s, t):\n    nd = other = nondet('any grouping')\n    s.batch(t, nd)\n",
        # the statement binds something else too
        "def f(s, t):\n    nd, other = nondet('any grouping'), 1\n    s.batch(t, nd)\n    return other\n",
        "def f(s, t):\n    x = (nd := nondet('any grouping'))\n    s.batch(t, nd)\n    return x\n",
    ],
)
def test_inline_is_not_applied_when_unsafe(code: str) -> None:
    source = "from hydrolite import nondet\n" + code
    assert fixed(source) == source


def test_inline_module_constant_reason() -> None:
    before = """\
        import hydrolite as hl
        def f(s, t):
            return s.batch(t, hl.nondet(reason=WHY))
        WHY = ("queries may be answered"
               " in any grouping")
        """
    after = """\
        import hydrolite as hl
        def f(s, t):
            return s.batch(t, hl.nondet(reason=("queries may be answered"
                   " in any grouping")))
        WHY = ("queries may be answered"
               " in any grouping")
        """
    assert fixed(before) == dedent(after)


@pytest.mark.parametrize(
    "code",
    [
        "WHY = 'any grouping'\nWHY = 'rebound'\ndef f(s, t):\n    s.batch(t, nondet(WHY))\n",
        "WHY = f'any {x}'\ndef f(s, t):\n    s.batch(t, nondet(WHY))\n",
        "def f(s, t):\n    why = 'any grouping'\n    s.batch(t, nondet(why))\n",
        "def g():\n    global WHY\n    WHY = 'changed'\nWHY = 'any grouping'\ndef f(s, t):\n    s.batch(t, nondet(WHY))\n",
        "s.batch(t, nondet(WHY))\nWHY = 'defined after the module-level use'\n",
    ],
)
def test_constant_inlining_is_not_applied_when_unsafe(code: str) -> None:
    source = "from hydrolite import nondet\n" + code
    assert fixed(source) == source


def test_fix_rounds_expose_the_placeholder_behind_a_constant() -> None:
    source = (
        "from hydrolite import nondet\nWHY = 'TODO'\ndef f(s, t):\n    nd = nondet(WHY)\n    return s.batch(t, nd)\n"
    )
    report = run(source, fix=True)
    assert (
        report.source
        == "from hydrolite import nondet\nWHY = 'TODO'\ndef f(s, t):\n    return s.batch(t, nondet('TODO'))\n"
    )
    assert report.fixed == 2
    assert [(f.line, f.code) for f in report.findings] == [(4, "HL003")]


def test_fix_is_idempotent_and_reports_fixable() -> None:
    source = "from hydrolite import nondet\ndef f(s, t):\n    nd = nondet('any grouping')\n    return s.batch(t, nd)\n"
    assert [f.fixable for f in run(source).findings] == [True]
    once = fixed(source)
    assert once != source and fixed(once) == once
