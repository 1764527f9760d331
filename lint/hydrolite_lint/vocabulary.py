"""The API vocabulary, derived from hydrolite's live classes instead of kept by hand.

The linter identifies hydrolite calls by method name (it has no types). Which methods take
a `nondet` token, and at which position, is read from the signatures of the live
collections, locations, the flow builder and cycle handles: a parameter annotated
`NonDet`. A new operator is classified the moment it exists; nothing here can forget it.
"""

from __future__ import annotations

import inspect
from functools import lru_cache


def _api_classes() -> list[type]:
    from hydrolite.live.cycles import TickCycle
    from hydrolite.live.keyed_singleton import KeyedSingleton
    from hydrolite.live.keyed_stream import KeyedStream
    from hydrolite.live.singleton import OptionalSingleton, Singleton
    from hydrolite.live.stream import Stream
    from hydrolite.locations.flow import FlowBuilder
    from hydrolite.locations.locations import Cluster, Process, Tick

    return [
        Stream,
        KeyedStream,
        Singleton,
        OptionalSingleton,
        KeyedSingleton,
        Process,
        Cluster,
        Tick,
        FlowBuilder,
        TickCycle,
    ]


def _nondet_index(fn: object) -> int | None:
    """The 0-based position (after self) of the parameter annotated `NonDet`, if any."""
    if not callable(fn):
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(params):
        ann = p.annotation
        if ann == "NonDet" or getattr(ann, "__name__", None) == "NonDet":
            return i
    return None


@lru_cache(maxsize=1)
def api_methods() -> tuple[dict[str, int], frozenset[str]]:
    """(method -> position of its nondet, public methods that take none)."""
    takes: dict[str, int] = {}
    others: set[str] = set()
    for cls in _api_classes():
        for name in dir(cls):
            if name.startswith("_"):
                continue
            fn = getattr(cls, name)
            if not callable(fn) or not getattr(fn, "__module__", "").startswith("hydrolite."):
                continue
            index = _nondet_index(fn)
            if index is not None:
                takes[name] = index
            else:
                others.add(name)
    return takes, frozenset(others - set(takes))
