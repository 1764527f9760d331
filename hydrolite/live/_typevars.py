"""Type variables shared by the live collections.

Tags are invariant so `Process[A]` and `Process[B]` never mix; Boundedness and Ordering
have defaults so `Stream[int, Process[S]]` means an unbounded, totally ordered stream.

A stream's element type is covariant (`T_co`): a stream only produces its elements, so a
`Stream[Pair, ...]` of a two-field NamedTuple *is* a stream of `tuple[str, int]` (what
`into_keyed()` and `join()` need), and a stream of comparable elements is a stream of
`SupportsRichComparison` (what `sort()` checks). Location, boundedness and ordering stay
invariant: mixing them is exactly what the rules forbid.
"""

from __future__ import annotations

from typing_extensions import TypeVar

from ..locations.locations import Location, TopLevel
from ..locations.markers import Boundedness, Ordering, TotalOrder, Unbounded

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
U = TypeVar("U")
A = TypeVar("A")
K = TypeVar("K")
V = TypeVar("V")
V2 = TypeVar("V2")
Tag = TypeVar("Tag")
Tag2 = TypeVar("Tag2")
L = TypeVar("L", bound=Location)
P = TypeVar("P", bound=TopLevel)
B = TypeVar("B", bound=Boundedness, default=Unbounded)
B2 = TypeVar("B2", bound=Boundedness)
E = TypeVar("E")
O = TypeVar("O", bound=Ordering, default=TotalOrder)  # noqa: E741  (O for Ordering, as in the type signatures users read)
O2 = TypeVar("O2", bound=Ordering)
