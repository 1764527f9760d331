"""`Meta`: the run-time form of a collection's type parameters, recorded on every IR node."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from types import GenericAlias
from typing import Any

from .ids import LocId, TickId


class Kind(enum.Enum):
    """Which live collection a node produces."""

    STREAM = "Stream"
    KEYED_STREAM = "KeyedStream"
    SINGLETON = "Singleton"
    OPTIONAL = "OptionalSingleton"
    KEYED_SINGLETON = "KeyedSingleton"

    @property
    def keyed(self) -> bool:
        return self in (Kind.KEYED_STREAM, Kind.KEYED_SINGLETON)

    @property
    def streamlike(self) -> bool:
        return self in (Kind.STREAM, Kind.KEYED_STREAM)


def type_name(t: Any) -> str:
    """A short, deterministic name for an element type (or '?' when unknown)."""
    if t is None:
        return "?"
    if t is type(None):
        return "None"
    if isinstance(t, type) and not getattr(t, "__args__", None):
        return t.__qualname__
    text = repr(t)
    return text.replace("typing.", "").replace("builtins.", "").replace("NoneType", "None")


@dataclass(frozen=True)
class Meta:
    """Kind, location, boundedness, ordering and (when known) element types of a node."""

    kind: Kind
    loc: LocId
    bounded: bool
    ordered: bool
    elem: Any = None  # value type; None when unknown (e.g. after an unannotated lambda)
    key: Any = None  # key type of keyed collections

    @property
    def in_tick(self) -> bool:
        return isinstance(self.loc, TickId)

    def but(self, **changes: Any) -> Meta:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def type_str(self) -> str:
        """The collection's type as the user would write it."""
        b = "Bounded" if self.bounded else "Unbounded"
        o = "TotalOrder" if self.ordered else "NoOrder"
        loc = f"Tick[{self.loc.outer}]" if isinstance(self.loc, TickId) else str(self.loc)
        v = type_name(self.elem)
        if self.kind is Kind.STREAM:
            return f"Stream[{v}, {loc}, {b}, {o}]"
        if self.kind is Kind.KEYED_STREAM:
            return f"KeyedStream[{type_name(self.key)}, {v}, {loc}, {b}, {o}]"
        if self.kind is Kind.KEYED_SINGLETON:
            return f"KeyedSingleton[{type_name(self.key)}, {v}, {loc}, {b}]"
        return f"{self.kind.value}[{v}, {loc}, {b}]"


def pair_type(meta: Meta) -> Any:
    """`tuple[K, V]` for a keyed collection whose key and value types are known, else None."""
    if meta.key is None or meta.elem is None:
        return None
    return GenericAlias(tuple, (meta.key, meta.elem))  # `tuple[key, elem]`, built from runtime types
