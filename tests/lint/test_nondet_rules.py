"""HL001-HL004 (the reason) and HL010-HL012 (where the token goes)."""

from __future__ import annotations

import pytest

from hydrolite.errors import BuildError
from hydrolite.nondet import PLACEHOLDERS, is_placeholder, nondet

from .helpers import codes, found, run


# ---------------------------------------------------------------------- HL001-HL004
def test_missing_reason() -> None:
    report = run(
        """
        from hydrolite import nondet
        def f(s, t):
            return s.batch(t, nondet())
        """
    )
    assert [(f.line, f.col, f.code) for f in report.findings] == [(3, 23, "HL001")]


@pytest.mark.parametrize("reason", ['""', '"   "', "''", '"\\n"', 'f""'])
def test_empty_reason(reason: str) -> None:
    assert found(f"def f(s, t):\n    s.batch(t, nondet({reason}))\n", header=True) == [(4, "HL002")]


@pytest.mark.parametrize(
    "reason",
    [
        "TODO",
        "todo",
        "TODO: explain",
        "tbd",
        "TBD later",
        "...",
        "…",
        "nondet",
        "Nondet.",
        "FIXME",
        "?",
        "xxx",
        "n/a",
        "reason",
        "why",
    ],
)
def test_placeholder_reason(reason: str) -> None:
    code = f"def f(s, t):\n    s.batch(t, nondet({reason!r}))\n"
    report = run(code, header=True)
    assert [(f.line, f.col, f.code) for f in report.findings] == [(4, 23, "HL003")]
    assert repr(reason) in report.findings[0].message


@pytest.mark.parametrize(
    "reason",
    [
        "queries may be answered in any grouping",
        "todos are processed in any order",  # starts with "todo" but is a sentence
        "whyever the batch ends, the sum is the same",
        "tbdx is the name of the port; any prefix is fine",
    ],
)
def test_real_reason_is_accepted(reason: str) -> None:
    assert found(f"def f(s, t):\n    s.batch(t, nondet({reason!r}))\n", header=True) == []


@pytest.mark.parametrize("reason", [*sorted(PLACEHOLDERS), "TODO - fill in", "fixme: later", "###", "Temp."])
def test_the_runtime_rejects_exactly_what_the_linter_reports(reason: str) -> None:
    """One list (hydrolite.nondet.PLACEHOLDERS): nondet() fails on what HL003 reports."""
    with pytest.raises(BuildError, match="not a placeholder"):
        nondet(reason)
    assert codes(f"def f(s, t):\n    s.batch(t, nondet({reason!r}))\n", header=True) == ["HL003"]


def test_a_real_reason_passes_both() -> None:
    reason = "todos are processed in any order"
    assert nondet(reason).reason == reason
    assert codes(f"def f(s, t):\n    s.batch(t, nondet({reason!r}))\n", header=True) == []


def test_placeholder_helper() -> None:
    assert is_placeholder(" Todo ") and is_placeholder("TODO - fill in") and is_placeholder("??")
    assert not is_placeholder("any version of the count will do")


@pytest.mark.parametrize(
    "arg",
    ["reason", "REASONS[0]", "f'batch {t}'", "str(t)", "obj.reason", "*args", "reason='x' + t", "b'bytes reason'"],
)
def test_non_literal_reason(arg: str) -> None:
    code = f"def f(s, t, reason, args, obj):\n    s.batch(t, nondet({arg}))\n"
    assert found(code, header=True) == [(4, "HL004")]


@pytest.mark.parametrize(
    "arg",
    [
        '"any grouping " "is fine"',
        'f"any grouping is fine"',
        'reason="any grouping is fine"',
        '("any grouping"\n        " is fine")',
    ],
)
def test_literal_forms_are_accepted(arg: str) -> None:
    assert found(f"def f(s, t):\n    s.batch(t, nondet({arg}))\n", header=True) == []


# ---------------------------------------------------------------------- HL010
def test_token_stored_in_variable() -> None:
    report = run(
        """
        from hydrolite import nondet
        def f(s, t):
            why = nondet("any grouping")
            return s.batch(t, why)
        """
    )
    assert [(f.line, f.col, f.code) for f in report.findings] == [(3, 11, "HL010")]
    assert "`why`" in report.findings[0].message


@pytest.mark.parametrize(
    "body",
    [
        'return nondet("any grouping")',
        'tokens = [nondet("any grouping")]',
        'g = lambda: nondet("any grouping")',
        'self_nd = (nd := nondet("any grouping"))',
        'nondet("any grouping")',
        's.cfg.nd = nondet("any grouping")',
    ],
)
def test_token_not_written_at_its_call(body: str) -> None:
    assert [c for _, c in found(f"def f(s, t):\n    {body}\n", header=True)] == ["HL010"]


def test_default_argument_is_not_at_the_call() -> None:
    assert found('def f(s, t, nd=nondet("any grouping")):\n    return s.batch(t, nd)\n', header=True) == [(3, "HL010")]


@pytest.mark.parametrize(
    "call",
    [
        's.batch(t, nondet("any grouping"))',
        's.batch(t, nondet=nondet("any grouping"))',
        's.batch(tick=t, nondet=nondet("any grouping"))',
        's.batch(t, nondet("early") if fast else nondet("late is fine too"))',
        's.assume_ordering(nondet("arrival order is a valid order here"))',
        's.snapshot_aligned(t, a, nondet("consistent with the acks"))',
        's.batch_aligned(t, a, nondet("consistent with the acks"))',
        'c.snapshot(t, nondet("any recent version"))',
    ],
)
def test_token_at_its_call_is_fine(call: str) -> None:
    assert found(f"def f(s, c, t, a, fast):\n    return {call}\n", header=True) == []


# ---------------------------------------------------------------------- HL011
def test_token_reused_by_two_calls() -> None:
    report = run(
        """
        from hydrolite import nondet
        def f(s, c, t):
            nd = nondet("any grouping")
            s.batch(t, nd)
            c.snapshot(t, nd)
        """
    )
    assert [(f.line, f.col, f.code) for f in report.findings] == [(3, 10, "HL010"), (5, 19, "HL011")]


def test_token_consumed_in_a_loop() -> None:
    code = """
        from hydrolite import nondet
        def f(streams, t):
            nd = nondet("any grouping")
            for s in streams:
                s.batch(t, nd)
    """
    assert found(code) == [(3, "HL010"), (5, "HL011")]


def test_nondet_parameter_reused() -> None:
    code = """
        import hydrolite as hl
        def helper(s, c, t, why: hl.NonDet) -> None:
            s.batch(t, why)
            c.snapshot(t, why)
    """
    assert found(code) == [(4, "HL011")]


def test_nondet_parameter_used_once_is_fine() -> None:
    code = """
        from hydrolite import NonDet
        def helper(s, t, why: "NonDet | None"):
            return s.batch(t, why)
    """
    assert found(code) == []


def test_rebinding_a_name_is_not_reuse() -> None:
    code = """
        from hydrolite import nondet
        def f(s, r, t):
            nd = nondet("any grouping of s")
            s.batch(t, nd)
            nd = nondet("any grouping of r")
            r.batch(t, nd)
    """
    assert found(code) == [(3, "HL010"), (5, "HL010")]


# ---------------------------------------------------------------------- HL012
@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        ('s.map(nondet("x is fine"))', ".map()"),
        ('s.cross_singleton(nondet("x is fine"))', ".cross_singleton()"),
        ('print(nondet("x is fine"))', "print()"),
        ('hl.FlowBuilder(nondet("x is fine"))', "FlowBuilder()"),
        ('s.batch(nondet("x is fine"), t)', "argument 2"),
        ('s.snapshot_aligned(t, nondet("x is fine"), a)', "argument 3"),
        ('s.batch(t, tick=nondet("x is fine"))', "`nondet=`"),
        ('plain(s, nondet("x is fine"))', "parameter `why`"),
    ],
)
def test_nondet_to_a_call_that_does_not_take_one(call: str, fragment: str) -> None:
    code = f"def plain(s, why):\n    pass\ndef f(s, t, a):\n    {call}\n"
    report = run(code, header=True)
    assert [f.code for f in report.findings] == ["HL012"]
    assert fragment in report.findings[0].message


@pytest.mark.parametrize(
    "call",
    [
        'typed(s, nondet("x is fine"))',
        'typed(s, why=nondet("x is fine"))',
        'named(s, nondet("x is fine"))',
        'external(s, nondet("x is fine"))',  # imported from elsewhere: cannot tell
        'functools.partial(s.batch, t, nondet("x is fine"))',
        'star(s, nondet("x is fine"))',  # absorbed by *args
        'unknown_obj.custom(nondet("x is fine"))',
    ],
)
def test_calls_that_take_or_may_take_a_nondet(call: str) -> None:
    code = f"""
import functools
from hydrolite import NonDet, nondet
from mylib import external
def typed(s, why: NonDet): ...
def named(s, nondet): ...
def star(*args): ...
def f(s, t, unknown_obj):
    {call}
"""
    assert found(code) == []


def test_token_variable_passed_to_a_wrong_call() -> None:
    code = """
        from hydrolite import nondet
        def f(s):
            nd = nondet("any order")
            return s.map(nd)
    """
    assert found(code) == [(3, "HL010"), (4, "HL012")]


def test_inspecting_a_token_is_not_consuming_it() -> None:
    code = """
        from hydrolite import NonDet, nondet
        def f(s, t):
            nd, other = nondet("any grouping"), 1
            assert isinstance(nd, NonDet)
            print(nd)
            s.batch(t, nd)
            print(nondet("printed, never consumed"))
    """
    report = run(code)
    assert [(f.line, f.code) for f in report.findings] == [(3, "HL010"), (7, "HL012")]
    assert "`nd`" in report.findings[0].message


def test_very_long_method_chains() -> None:
    chain = "s" + ".map(f)" * 600 + ".batch(t, nondet('TODO'))"
    report = run(f"def g(s, t, f):\n    return {chain}\n", header=True)
    assert [(f.line, f.code) for f in report.findings] == [(4, "HL003")]
