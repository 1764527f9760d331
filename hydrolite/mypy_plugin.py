"""mypy plugin: hydrolite's misuses reported in hydrolite's words, under hydrolite's error codes.

Enable it where mypy reads its configuration::

    # pyproject.toml
    [tool.mypy]
    plugins = ["hydrolite.mypy_plugin"]

    # or mypy.ini / setup.cfg
    [mypy]
    plugins = hydrolite.mypy_plugin

A misuse then reads like the `BuildError` the program would raise at build time::

    bad.py:12: error: fold() requires a TotalOrder collection  [hydrolite-order]
    bad.py:12: note: found: Stream[int, Process[Server], Unbounded, NoOrder]
    bad.py:12: note: fix: use fold_commutative() if the function ignores order, or sort()/assume_ordering(nondet(...)) first

Error codes (for `# type: ignore[...]` and `--disable-error-code`): `hydrolite-order`,
`hydrolite-bounded`, `hydrolite-tick`, `hydrolite-location`, `hydrolite-nondet`,
`hydrolite-elem` and `hydrolite-eq`. Without the plugin mypy rejects the same programs with
its generic codes (`misc`, `arg-type`, `call-overload`, `call-arg`, `operator`).
"""

from __future__ import annotations

from mypy.plugin import Plugin

from ._mypy.checks import HydrolitePlugin


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point: the plugin class (for every mypy version hydrolite supports)."""
    return HydrolitePlugin


__all__ = ["HydrolitePlugin", "plugin"]
