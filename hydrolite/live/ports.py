"""Typed handles on output ports, returned by `sink()` for tests and runtimes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class SinkPort(Generic[T]):
    """The output port `name`, carrying elements of type T."""

    name: str
    elem: Any = None
    ordered: bool = True
