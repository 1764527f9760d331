"""`[tool.hydrolite.lint]` in the nearest pyproject.toml: select, ignore, exclude, reexports."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from .rules import enabled_codes, unknown_patterns

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python 3.10 only
    try:
        import tomli as _toml
    except ImportError as exc:
        raise ImportError(
            "hydrolite-lint on Python 3.10 reads pyproject.toml with the tomli package, a declared "
            "dependency of hydrolite there: `pip install tomli` (or reinstall hydrolite)"
        ) from exc

_KEYS = frozenset({"select", "ignore", "exclude", "reexports"})


class ConfigError(Exception):
    """A configuration the user has to fix (reported with exit status 2)."""


@dataclass(frozen=True)
class Config:
    """Which rules run, which files are skipped, which modules re-export hydrolite."""

    select: tuple[str, ...] = ("HL",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    reexports: tuple[str, ...] = ()
    source: Path | None = field(default=None, compare=False)

    @cached_property
    def enabled(self) -> frozenset[str]:
        return enabled_codes(self.select, self.ignore)

    @property
    def root(self) -> Path | None:
        """The directory `exclude` patterns are relative to."""
        return self.source.parent if self.source is not None else None

    def override(self, select: tuple[str, ...] | None, ignore: tuple[str, ...] | None) -> Config:
        """The command line's --select / --ignore replace the configured lists."""
        _check_codes("--select", select or ())
        _check_codes("--ignore", ignore or ())
        return replace(
            self, select=self.select if select is None else select, ignore=self.ignore if ignore is None else ignore
        )


def load_pyproject(path: Path) -> Config | None:
    """The config in `path`, or None when it has no [tool.hydrolite.lint] table."""
    try:
        with path.open("rb") as handle:
            data = _toml.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except _toml.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("hydrolite", {}).get("lint")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.hydrolite.lint] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in [tool.hydrolite.lint]: {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})"
        )
    values = {key: _strings(path, key, table[key]) for key in table}
    _check_codes(f"{path}: select", values.get("select", ()))
    _check_codes(f"{path}: ignore", values.get("ignore", ()))
    return Config(
        select=values.get("select", ("HL",)),
        ignore=values.get("ignore", ()),
        exclude=values.get("exclude", ()),
        reexports=values.get("reexports", ()),
        source=path,
    )


def find_config(start: Path, cache: dict[Path, Config] | None = None) -> Config:
    """The config of the nearest pyproject.toml with a [tool.hydrolite.lint] table, upward from `start`."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    visited: list[Path] = []
    found = Config()
    for candidate in (directory, *directory.parents):
        if cache is not None and candidate in cache:
            found = cache[candidate]
            break
        visited.append(candidate)
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            loaded = load_pyproject(pyproject)
            if loaded is not None:
                found = loaded
                break
    if cache is not None:
        for path in visited:
            cache[path] = found
    return found


def _strings(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [tool.hydrolite.lint] {key} must be a list of strings")
    return tuple(value)


def _check_codes(where: str, patterns: tuple[str, ...]) -> None:
    bad = unknown_patterns(patterns)
    if bad:
        raise ConfigError(
            f"{where}: {', '.join(bad)} match(es) no rule (codes are HL000-HL040; see hydrolite-lint --list-rules)"
        )
