"""Lint snippets in-process: `found(code)` gives [(line, code)] of what the linter reports."""

from __future__ import annotations

from textwrap import dedent

from hydrolite_lint import FileReport, lint_source
from hydrolite_lint.config import Config

HEADER = "import hydrolite as hl\nfrom hydrolite import nondet\n"


def run(code: str, config: Config | None = None, *, fix: bool = False, header: bool = False) -> FileReport:
    source = (HEADER if header else "") + dedent(code).lstrip("\n")
    return lint_source(source, "snippet.py", config or Config(), fix=fix)


def found(code: str, config: Config | None = None, *, header: bool = False) -> list[tuple[int, str]]:
    """(line, code) of every finding, in order; with header=True two import lines come first."""
    return [(f.line, f.code) for f in run(code, config, header=header).findings]


def codes(code: str, config: Config | None = None, *, header: bool = False) -> list[str]:
    return [c for _, c in found(code, config, header=header)]


def fixed(code: str, config: Config | None = None) -> str:
    """The source after --fix (the input itself when nothing was fixed)."""
    source = dedent(code).lstrip("\n")
    report = lint_source(source, "snippet.py", config or Config(), fix=True)
    return report.source if report.source is not None else source
