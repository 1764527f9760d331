"""Qualified-name resolution: aliases, re-exports, star imports, shadowing, the pre-check."""

from __future__ import annotations

import pytest
from hydrolite_lint.config import Config

from .helpers import found


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        ("import hydrolite as hl", "hl.nondet"),
        ("import hydrolite", "hydrolite.nondet"),
        ("import hydrolite.nondet", "hydrolite.nondet"),
        ("from hydrolite import nondet", "nondet"),
        ("from hydrolite import nondet as nd", "nd"),
        ("from hydrolite.nondet import nondet", "nondet"),
        ("from hydrolite.nondet import nondet as justify", "justify"),
        ("import hydrolite.nondet as hn", "hn.nondet"),
        ("from hydrolite import *", "nondet"),
    ],
)
def test_aliases_resolve_to_hydrolite_nondet(imports: str, call: str) -> None:
    assert found(f"{imports}\ndef f(s, t):\n    return s.batch(t, {call}('TODO'))\n") == [(3, "HL003")]


def test_import_inside_a_function() -> None:
    code = """
        import hydrolite
        def f(s, t):
            from hydrolite import nondet as nd
            return s.batch(t, nd("TODO"))
        def g(s, t, nd):
            return s.batch(t, nd("TODO"))
    """
    assert found(code) == [(4, "HL003")]


def test_local_function_named_nondet_is_not_ours() -> None:
    code = """
        import hydrolite as hl
        def nondet(reason=None):
            return reason
        def f(s, t):
            return s.map(nondet("TODO"))
    """
    assert found(code) == []


def test_other_library_nondet_is_not_ours() -> None:
    code = """
        import hydrolite as hl
        from otherlib import nondet
        from otherlib import hydrolite_like as hydrolite
        nondet()
        hydrolite.nondet("TODO")
    """
    assert found(code) == []


def test_parameter_and_comprehension_shadow_the_import() -> None:
    code = """
        from hydrolite import nondet
        def f(s, t, nondet):
            return s.map(nondet("TODO"))
        values = [nondet("TODO") for nondet in makers]
        g = lambda nondet: nondet()
    """
    assert found(code) == []


def test_nested_function_shadows_only_its_own_scope() -> None:
    code = """
        from hydrolite import nondet
        def f(s, t):
            def nondet(x):
                return x
            return s.batch(t, nondet("TODO"))
        def g(s, t):
            return s.batch(t, nondet("TODO"))
    """
    assert found(code) == [(7, "HL003")]


def test_module_level_redefinition_is_flow_aware() -> None:
    code = """
        from hydrolite import nondet
        early = s.batch(t, nondet("TODO"))
        def nondet(x):
            return x
        late = s.batch(t, nondet("TODO"))
        def later(s, t):
            return s.batch(t, nondet("TODO"))
    """
    assert found(code) == [(2, "HL003")]


def test_class_body_names_do_not_leak_into_methods() -> None:
    code = """
        from hydrolite import nondet
        class Pipeline:
            nondet = staticmethod(lambda reason: reason)
            def build(self, s, t):
                return s.batch(t, nondet("TODO"))
            value = nondet("TODO")
    """
    assert found(code) == [(5, "HL003")]


def test_global_declaration_resolves_to_the_module() -> None:
    code = """
        from hydrolite import nondet
        def f(s, t):
            global nondet
            return s.batch(t, nondet("TODO"))
    """
    assert found(code) == [(4, "HL003")]


def test_nondet_type_alias_for_parameters() -> None:
    code = """
        from hydrolite import NonDet as Why
        def helper(s, c, t, why: Why):
            s.batch(t, why)
            c.snapshot(t, why)
    """
    assert found(code) == [(4, "HL011")]


def test_configured_reexport_module() -> None:
    code = """
        from myproj.dsl import nondet
        def f(s, t):
            return s.batch(t, nondet("TODO"))
    """
    assert found(code) == []  # no "hydrolite" in the text: skipped by the pre-check
    assert found(code, Config(reexports=("myproj.dsl",))) == [(3, "HL003")]
    nested = "import myproj.dsl as dsl\ns.batch(t, dsl.nondet('tbd'))\n"
    assert found(nested, Config(reexports=("myproj.dsl",))) == [(2, "HL003")]
    assert found("from myproj.dslx import nondet\ns.batch(t, nondet('tbd'))\n", Config(reexports=("myproj.dsl",))) == []


def test_files_that_never_mention_hydrolite_are_skipped() -> None:
    assert found("x = s.latest().snapshot(t, nondet('TODO'))\ndef broken(:\n") == []


def test_relative_imports_are_not_guessed() -> None:
    code = """
        # part of the hydrolite package itself
        from .nondet import nondet
        nondet("TODO")
    """
    assert found(code) == []
