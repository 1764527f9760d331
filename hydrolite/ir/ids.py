"""Identifiers of locations, ticks, align points and cycles used inside the IR."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessId:
    """A single process, named after its tag class."""

    tag: str
    index: int

    def __str__(self) -> str:
        return f"Process[{self.tag}]"


@dataclass(frozen=True)
class ClusterId:
    """A cluster of processes running the same code; each member has its own state."""

    tag: str
    index: int

    def __str__(self) -> str:
        return f"Cluster[{self.tag}]"


TopId = ProcessId | ClusterId


@dataclass(frozen=True)
class TickId:
    """A logical clock on a top-level location; `index` tells ticks of one location apart."""

    outer: TopId
    index: int

    def __str__(self) -> str:
        return f"Tick#{self.index}[{self.outer}]"


LocId = ProcessId | ClusterId | TickId


def top_of(loc: LocId) -> TopId:
    """The top-level location a location lives on (itself unless it is a tick)."""
    return loc.outer if isinstance(loc, TickId) else loc


@dataclass(frozen=True)
class AlignId:
    """A local align point on one top-level location."""

    loc: TopId
    index: int

    def __str__(self) -> str:
        return f"align#{self.index}[{self.loc}]"


@dataclass(frozen=True)
class CycleId:
    """A tick cycle: a placeholder read in tick t that is completed from tick t-1."""

    tick: TickId
    index: int

    def __str__(self) -> str:
        return f"cycle#{self.index}"
