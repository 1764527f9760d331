"""`hydrolite-lint PATH...`: exit 0 when clean, 1 on findings, 2 on usage or configuration errors."""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from . import __version__
from .config import Config, ConfigError, find_config, load_pyproject
from .engine import FileReport, lint_file
from .rules import RULES

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist", "venv", "site-packages"})


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _parser() -> _Parser:
    parser = _Parser(
        prog="hydrolite-lint",
        description="Check hydrolite programs: nondet justifications, align points, inconsistent reads, legacy atomic.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument(
        "--fix", action="store_true", help="apply the safe autofixes in place, then report what is left"
    )
    parser.add_argument(
        "--select", metavar="CODES", help="comma-separated codes or prefixes to check (replaces the config)"
    )
    parser.add_argument(
        "--ignore", metavar="CODES", help="comma-separated codes or prefixes to skip (replaces the config)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--config", metavar="PYPROJECT", type=Path, help="use this pyproject.toml instead of the nearest one"
    )
    group.add_argument("--isolated", action="store_true", help="ignore every pyproject.toml")
    parser.add_argument("--list-rules", action="store_true", help="print the rule table and exit")
    parser.add_argument("--version", action="version", version=f"hydrolite-lint {__version__}")
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the linter; returns the exit status."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        args = _parser().parse_args(argv)
        if args.list_rules:
            _list_rules(out)
            return 0
        select, ignore = _codes(args.select), _codes(args.ignore)
        configs = _ConfigSource(args.config, args.isolated, select, ignore)
        files = list(_discover([Path(p) for p in (args.paths or ["."])], configs))
        reports, failed = _run(files, configs, args.fix, err)
    except (_UsageError, ConfigError) as exc:
        print(f"hydrolite-lint: error: {exc}", file=err)
        return 2
    findings = [f for r in reports for f in r.findings]
    try:
        if args.format == "json":
            json.dump([f.to_json() for f in findings], out, indent=2)
            out.write("\n")
        else:
            for finding in findings:
                print(finding.format(), file=out)
        out.flush()
    except BrokenPipeError:  # `hydrolite-lint . | head`: stop quietly, keep the status
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if args.fix:
        fixed = sum(r.fixed for r in reports)
        changed = sum(1 for r in reports if r.fixed)
        print(f"hydrolite-lint: fixed {fixed} finding(s) in {changed} file(s); {len(findings)} left", file=err)
    if failed:
        return 2
    return 1 if findings else 0


def _codes(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


class _ConfigSource:
    """The config for each file: --isolated, --config, or the nearest pyproject.toml."""

    def __init__(
        self, explicit: Path | None, isolated: bool, select: tuple[str, ...] | None, ignore: tuple[str, ...] | None
    ) -> None:
        self.select, self.ignore = select, ignore
        self.fixed: Config | None = None
        if isolated:
            self.fixed = Config()
        elif explicit is not None:
            if not explicit.is_file():
                raise _UsageError(f"--config {explicit}: no such file")
            self.fixed = load_pyproject(explicit) or Config(source=explicit.resolve())
        if self.fixed is not None:
            self.fixed = self.fixed.override(select, ignore)
        self.cache: dict[Path, Config] = {}
        self.resolved: dict[Path, Config] = {}

    def for_path(self, path: Path) -> Config:
        if self.fixed is not None:
            return self.fixed
        found = find_config(path, self.cache)
        key = found.source or Path()
        if key not in self.resolved:
            self.resolved[key] = found.override(self.select, self.ignore)
        return self.resolved[key]


def _discover(paths: list[Path], configs: _ConfigSource) -> Iterator[tuple[Path, Config, bool]]:
    """Files to lint, with their config and whether they were named on the command line
    (a named file is always parsed, so its syntax errors are reported)."""
    seen: set[Path] = set()
    for path in paths:
        if not path.exists():
            raise _UsageError(f"{path}: no such file or directory")
        candidates = [path] if path.is_file() else _walk(path)
        for file in candidates:
            real = file.resolve()
            if real in seen:
                continue
            seen.add(real)
            config = configs.for_path(file)
            if not _excluded(real, config):
                yield file, config, file is path


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS and not d.endswith(".egg-info")
        )
        found.extend(Path(directory) / f for f in sorted(files) if f.endswith(".py"))
    return found


def _excluded(path: Path, config: Config) -> bool:
    if not config.exclude:
        return False
    names = [path.name, path.as_posix()]
    if config.root is not None:
        try:
            names.append(path.relative_to(config.root.resolve()).as_posix())
        except ValueError:
            pass
    return any(fnmatch.fnmatch(name, pattern) for pattern in config.exclude for name in names)


def _run(
    files: list[tuple[Path, Config, bool]], configs: _ConfigSource, fix: bool, err: TextIO
) -> tuple[list[FileReport], bool]:
    reports: list[FileReport] = []
    failed = False
    for path, config, named in files:
        try:
            reports.append(lint_file(path, config, fix=fix, always_parse=named))
        except OSError as exc:
            print(f"hydrolite-lint: error: {path}: {exc.strerror or exc}", file=err)
            failed = True
        except Exception as exc:  # a bug in the linter: say where, keep going, exit 2
            print(f"hydrolite-lint: internal error on {path}: {type(exc).__name__}: {exc}", file=err)
            failed = True
    return reports, failed


def _list_rules(out: TextIO) -> None:
    for rule in RULES.values():
        fix = " [fix]" if rule.fixable else ""
        print(f"{rule.code}  {rule.name:<26} {rule.summary}{fix}", file=out)
