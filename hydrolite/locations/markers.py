"""Type-level markers: Boundedness and Ordering.

They exist only as type arguments (`Stream[int, Process[S], Bounded, NoOrder]`); at run time
each collection carries the same facts as booleans in its IR node's `Meta`.
"""

from __future__ import annotations


class Boundedness:
    """Whether a collection ends (Bounded: one batch of a tick) or grows forever."""


class Bounded(Boundedness):
    """A finite collection: inside a tick, or a finite top-level source."""


class Unbounded(Boundedness):
    """A collection that keeps growing (top level, asynchronous)."""


class Ordering:
    """Whether the order of elements is meaningful and deterministic."""


class TotalOrder(Ordering):
    """A sequence: every schedule sees the same order."""


class NoOrder(Ordering):
    """A bag: the order may differ between schedules, so it must not be observed."""
