"""Finding the plugin of a port scheme: hydrolite's built-in ports, then the entry-point group.

Built-in plugins (`ports_builtin.BUILTIN_PORTS`) and installed plugins (entry points of the
group `hydrolite.ports`, read with `importlib.metadata` on every lookup, so a package
installed — or a `.dist-info` put on `sys.path` — is seen without restarting) answer
through the same `PortPlugin` interface. An entry point's name is its scheme; its object is
a `PortPlugin` subclass (instantiated without arguments) or instance. It is imported only
when its scheme is used, so a broken plugin fails only the runs that use it, with an error
naming the entry point and its distribution.

A scheme claimed twice (by two distributions, or by a plugin and a built-in) is an error
when it is used: hydrolite never picks one silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from .port_api import (
    ENTRY_POINT_GROUP,
    InputBinding,
    OutputBinding,
    PortPlugin,
    PortSpec,
    PortSpecError,
    parse_spec,
    split_spec,
)

DEFAULT_SCHEME = "json"  # a spec without a scheme is a directory of JSON-lines files


@dataclass(frozen=True)
class Found:
    """Where a scheme comes from: built in, or an entry point of a distribution."""

    scheme: str
    origin: str  # "built in" or "entry point NAME = VALUE of DIST"
    load: Callable[[], PortPlugin]


def _dist_name(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(getattr(dist, "name", None) or "an unknown distribution")


def _loader(ep: metadata.EntryPoint, origin: str) -> Callable[[], PortPlugin]:
    def load() -> PortPlugin:
        try:
            obj: Any = ep.load()
        except Exception as exc:  # the plugin's import failed: say which one, keep the cause
            raise PortSpecError(
                f"port plugin {origin} cannot be imported: {type(exc).__name__}: {exc}\n"
                f"  fix: repair or reinstall {_dist_name(ep)}, or uninstall it"
            ) from exc
        plugin = obj() if isinstance(obj, type) and issubclass(obj, PortPlugin) else obj
        if not isinstance(plugin, PortPlugin):
            raise PortSpecError(
                f"port plugin {origin}: must name a hydrolite PortPlugin subclass or instance; "
                f"found {type(obj).__name__} {obj!r}\n  fix: point the entry point at a class deriving "
                "from hydrolite.ports.PortPlugin"
            )
        if getattr(plugin, "scheme", None) != ep.name:
            raise PortSpecError(
                f"port plugin {origin}: its scheme is {getattr(plugin, 'scheme', None)!r}, "
                f"but the entry point is named {ep.name!r}\n  fix: name the entry point after the plugin's scheme"
            )
        return plugin

    return load


def _constant(plugin: PortPlugin) -> Callable[[], PortPlugin]:
    return lambda: plugin


class PortRegistry:
    """Schemes from built-in plugins plus entry points (`entry_points` is injectable for tests)."""

    def __init__(
        self,
        builtins: Iterable[PortPlugin],
        entry_points: Callable[[], Iterable[metadata.EntryPoint]] | None = None,
    ) -> None:
        self._builtins = {p.scheme: p for p in builtins}
        self._entry_points = entry_points or (lambda: metadata.entry_points(group=ENTRY_POINT_GROUP))

    def _all(self) -> dict[str, list[Found]]:
        found = {s: [Found(s, "built in", _constant(p))] for s, p in self._builtins.items()}
        seen: set[tuple[str, str]] = set()
        for ep in self._entry_points():
            if (ep.name, ep.value) in seen:  # the same distribution seen twice on sys.path
                continue
            seen.add((ep.name, ep.value))
            origin = f"entry point {ep.name} = {ep.value} of {_dist_name(ep)}"
            found.setdefault(ep.name, []).append(Found(ep.name, origin, _loader(ep, origin)))
        return found

    def schemes(self) -> dict[str, str]:
        """scheme -> where it comes from ("built in" or the entry point), sorted by scheme."""
        return {s: "; ".join(f.origin for f in fs) for s, fs in sorted(self._all().items())}

    def plugin(self, scheme: str, spec_text: str | None = None) -> PortPlugin:
        """The plugin of `scheme`, or a `PortSpecError` listing the known schemes."""
        found = self._all().get(scheme)
        if not found:
            raise PortSpecError(self._unknown(scheme, spec_text))
        if len(found) > 1:
            raise PortSpecError(
                f"port scheme {scheme!r} is claimed more than once: {'; '.join(f.origin for f in found)}\n"
                "  fix: uninstall one of them (or rename one plugin's scheme and entry point)"
            )
        return found[0].load()

    def _unknown(self, scheme: str, spec_text: str | None) -> str:
        all_ = self._all()
        builtin = sorted(s for s in all_ if s in self._builtins)
        plugged = sorted(s for s in all_ if s not in self._builtins)
        where = f" in port spec {spec_text!r}" if spec_text else ""
        return (
            f"unknown port scheme {scheme!r}{where}\n"
            f"  known schemes: {', '.join(builtin)} (built in); "
            f"{', '.join(plugged) if plugged else 'none'} (from plugins)\n"
            f"  fix: use a known scheme, or install a package that declares {scheme!r} in the entry-point group "
            f"{ENTRY_POINT_GROUP!r} (see docs/ports.md); a directory whose name has a ':' is json:DIR"
        )

    def spec(self, text: str) -> tuple[PortPlugin, PortSpec]:
        """The plugin and parsed spec of a spec string (no scheme: a bare scheme name or a JSON directory)."""
        if not isinstance(text, str) or not text.strip():
            raise PortSpecError(
                f"a port spec must be a non-empty string; found {text!r}\n  fix: write scheme:TARGET, e.g. json:DIR"
            )
        scheme, rest = split_spec(text)
        if scheme is None:
            name = text.partition("?")[0]
            builtin = self._builtins.get(name)
            if builtin is not None and builtin.bare:
                return builtin, parse_spec(name, text[len(name) :], text)
            return self.plugin(DEFAULT_SCHEME, text), parse_spec(DEFAULT_SCHEME, text, text)
        return self.plugin(scheme, text), parse_spec(scheme, rest, text)

    def bind_input(self, text: str) -> InputBinding:
        plugin, spec = self.spec(text)
        if not plugin.reads:
            raise spec.error(
                f"an input needs a scheme that reads; {spec.scheme} only writes",
                f"--input ...={text}",
                f"use one of: {', '.join(self._with_role('reads'))}",
            )
        return plugin.source(spec)

    def bind_output(self, text: str) -> OutputBinding:
        plugin, spec = self.spec(text)
        if not plugin.writes:
            raise spec.error(
                f"an output needs a scheme that writes; {spec.scheme} only reads",
                f"--output ...={text}",
                f"use one of: {', '.join(self._with_role('writes'))}",
            )
        return plugin.sink(spec)

    def _with_role(self, role: str) -> list[str]:
        """Built-in schemes that read (or write); plugins are not imported for a hint."""
        return sorted(s for s, p in self._builtins.items() if getattr(p, role))


def registry() -> PortRegistry:
    """The registry of this process: hydrolite's built-in ports and the installed plugins."""
    from .ports_builtin import BUILTIN_PORTS

    return PortRegistry(BUILTIN_PORTS)


def known_schemes() -> dict[str, str]:
    """scheme -> origin, for `hydrolite` listings and error messages."""
    return registry().schemes()
