"""Lint one source text or file: pre-check, parse, model, checks, filter, position, fix."""

from __future__ import annotations

import gc
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from .checks_align import check_align
from .checks_flow import check_flow
from .checks_nondet import check_nondet
from .config import Config
from .findings import Finding, Fix, Issue
from .fixes import apply_fixes
from .noqa import is_suppressed
from .positions import positions
from .rules import RULES, SYNTAX_ERROR
from .walker import build_model

_MAX_FIX_ROUNDS = 8
_RECURSION_LIMIT = 20_000
_DEFAULT = Config()


@dataclass
class FileReport:
    """What linting one file produced; `source` is the fixed text when --fix changed it."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    source: str | None = None
    encoding: str = "utf-8"


def mentions_hydrolite(source: str, config: Config = _DEFAULT) -> bool:
    """Cheap pre-check: a file that never names hydrolite (or a re-exporting module) cannot use it."""
    return "hydrolite" in source or any(mod in source for mod in config.reexports)


def lint_source(
    source: str, path: str = "<string>", config: Config = _DEFAULT, *, fix: bool = False, always_parse: bool = False
) -> FileReport:
    """Lint `source` (reported as `path`); with `fix`, apply safe fixes and lint the result.

    A source that never names hydrolite is skipped unparsed, unless `always_parse` (a file
    named on the command line): then its syntax errors are still reported, as ruff does."""
    report = FileReport(path)
    if not mentions_hydrolite(source, config):
        if always_parse:
            with _gc_paused():
                _parse(source, path, report)
        return report
    with _gc_paused():
        return _lint(source, path, config, fix, report)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause cyclic GC (libcst's nodes form no cycles; GC passes over them cost ~20% of the
    parse) and allow deep recursion while one file is linted."""
    was_enabled, limit = gc.isenabled(), sys.getrecursionlimit()
    gc.disable()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))  # long method chains nest deeply
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)
        if was_enabled:
            gc.enable()


def _parse(source: str, path: str, report: FileReport) -> cst.Module | None:
    """The module, or None with the syntax error added to the report."""
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        report.findings.append(_syntax_error(path, exc.raw_line, exc.raw_column + 1, exc.message))
    except (RecursionError, MemoryError) as exc:  # pathological nesting
        report.findings.append(_syntax_error(path, 1, 1, f"cannot parse: {type(exc).__name__}"))
    return None


def _lint(source: str, path: str, config: Config, fix: bool, report: FileReport) -> FileReport:
    module = _parse(source, path, report)
    if module is None:
        return report
    issues = _issues(module, config)
    if fix:
        module, issues, source = _fix(module, config, issues, report, source)
        if report.fixed:
            report.source = source
    report.findings = _findings(path, module, source, issues)
    return report


def lint_file(
    path: Path, config: Config = _DEFAULT, *, fix: bool = False, display: str | None = None, always_parse: bool = False
) -> FileReport:
    """Lint a file on disk, writing it back (same encoding) when fixes applied."""
    shown = display if display is not None else str(path)
    data = path.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return FileReport(shown, [_syntax_error(shown, 1, 1, f"cannot decode: {message}")])
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):
        text = text[1:]
    report = lint_source(text, shown, config, fix=fix, always_parse=always_parse)
    report.encoding = encoding
    if report.source is not None:
        path.write_bytes(report.source.encode(encoding))
    return report


def _lines(source: str) -> list[str]:
    """Physical lines as Python counts them (only \\n, \\r\\n and \\r end a line)."""
    return re.split(r"\r\n|\r|\n", source)


def _syntax_error(path: str, line: int, col: int, message: str) -> Finding:
    first = " ".join(message.splitlines()[0].split()) if message else "invalid syntax"
    first = re.sub(r"^(parser|tokenizer) error: ", "", first)
    return Finding(path, max(line, 1), max(col, 1), SYNTAX_ERROR, f"syntax error: {first}")


def _issues(module: cst.Module, config: Config) -> list[Issue]:
    model = build_model(module, config.reexports)
    enabled = config.enabled
    found = [*check_nondet(model), *check_align(model), *check_flow(model)]
    return [i for i in found if i.code in enabled]


def _fix(
    module: cst.Module, config: Config, issues: list[Issue], report: FileReport, source: str
) -> tuple[cst.Module, list[Issue], str]:
    """Apply unsuppressed fixes in rounds (a fix can expose another) until none applies."""
    for _ in range(_MAX_FIX_ROUNDS):
        fixable = [i for i in issues if i.fix is not None]
        if not fixable:
            break
        where = positions(module, [i.node for i in fixable])
        lines = _lines(source)
        fixes: list[Fix] = []
        for issue in fixable:
            assert issue.fix is not None
            line = where.get(id(issue.node), (1, 1))[0]
            if not is_suppressed(lines[line - 1] if line <= len(lines) else "", issue.code):
                fixes.append(issue.fix)
        module, applied = apply_fixes(module, fixes)
        if not applied:
            break
        report.fixed += applied
        source = module.code
        issues = _issues(module, config)
    return module, issues, source


def _findings(path: str, module: cst.Module, source: str, issues: list[Issue]) -> list[Finding]:
    where = positions(module, [i.node for i in issues])
    lines = _lines(source)
    out: set[Finding] = set()
    for issue in issues:
        line, col = where.get(id(issue.node), (1, 1))
        if line <= len(lines) and is_suppressed(lines[line - 1], issue.code):
            continue
        out.add(
            Finding(path, line, col, issue.code, issue.message, issue.fix is not None and RULES[issue.code].fixable)
        )
    return sorted(out, key=lambda f: (f.line, f.col, f.code, f.message))
