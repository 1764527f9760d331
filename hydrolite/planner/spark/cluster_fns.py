"""The functions the cluster-lifting pass (`cluster.py`) puts into the lifted flow: re-keying
between member-keyed and plain collections, `demux` / `broadcast` routing with the
simulator's checks, and the per-member defaults of lifted singletons. Module-level functions
(not closures) so Spark pickles them by reference and, for the plain ones, translates them
to native Column expressions (`lambdas.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ...ir import nodes as n
from ...locations.locations import MemberId
from ...locations.sharding import member_of_key

if TYPE_CHECKING:
    from .lambdas import TExpr


class Empty:
    """The value of an empty optional in a default."""

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY: Final = Empty()
Default = Callable[[], Any]  # a member's value when it has no entry (EMPTY: no value)


def split_key(e: Any) -> Any:
    """(m, (k, v)) -> ((m, k), v)."""
    return ((e[0], e[1][0]), e[1][1])


def join_key(e: Any) -> Any:
    """((m, k), v) -> (m, (k, v))."""
    return (e[0][0], (e[0][1], e[1]))


def drop_key(e: Any) -> Any:
    """((m, k), v) -> (m, v)."""
    return (e[0][0], e[1])


@dataclass(frozen=True)
class ToSender:
    """(m, x) -> (MemberId(m), x): how the simulator keys what a member sends. (A callable
    object, run in Python: the native translation of `MemberId(e[0])` casts the member to a
    long whatever its encoding.)"""

    def __call__(self, e: Any) -> Any:
        return (MemberId(e[0]), e[1])


to_sender = ToSender()


def wrap(v: Any) -> Any:
    """A present value, told apart from a missing one after a lookup."""
    return (v,)


def not_none(v: Any) -> bool:
    return v is not None


@dataclass(frozen=True)
class Route:
    """`demux()`'s routing: `(member, x)` -> (member index, x), checked as the simulator does."""

    size: int

    def index(self, x: Any) -> int:
        if type(x) is not tuple or len(x) != 2:
            raise TypeError("demux() needs (member_id, value) tuples")
        i = x[0].raw if isinstance(x[0], MemberId) else x[0]
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < self.size:
            raise ValueError(f"demux() to member {x[0]!r}, but the cluster has {self.size} members")
        return i

    def __call__(self, x: Any) -> tuple[int, Any]:
        return self.index(x), x[1]


@dataclass(frozen=True)
class Owner:
    """`demux_by_key()` from a process: (k, v) -> ((member owning k, k), v), as the simulator routes."""

    hydrolite_op: ClassVar[str] = "demux_by_key"  # the name the run's function paths show (`BatchCtx.note_fn`)
    size: int

    def __call__(self, e: Any) -> tuple[tuple[int, Any], Any]:
        return (member_of_key(e[0], self.size), e[0]), e[1]

    def spark_column(self, args: Sequence[TExpr]) -> TExpr:
        """The same, natively, for the key types `routing.py` encodes (`lambdas.translate`)."""
        from .routing import owner_column

        return owner_column(args, self.size, from_cluster=False)


@dataclass(frozen=True)
class OwnerFrom:
    """`demux_by_key()` from a cluster: ((sender, k), v) -> ((member owning k, k), v)."""

    hydrolite_op: ClassVar[str] = "demux_by_key"
    size: int

    def __call__(self, e: Any) -> tuple[tuple[int, Any], Any]:
        k = e[0][1]
        return (member_of_key(k, self.size), k), e[1]

    def spark_column(self, args: Sequence[TExpr]) -> TExpr:
        from .routing import owner_column

        return owner_column(args, self.size, from_cluster=True)


@dataclass(frozen=True)
class RouteFrom:
    """Cluster -> cluster `demux()`: (sender, (member, x)) -> ((member, MemberId(sender)), x)."""

    route: Route

    def __call__(self, e: Any) -> tuple[tuple[int, MemberId[Any]], Any]:
        return (self.route.index(e[1]), MemberId(e[0])), e[1][1]


@dataclass(frozen=True)
class Everyone:
    """`broadcast()` from a process: x -> [(0, x), ..., (N-1, x)]."""

    size: int

    def __call__(self, x: Any) -> list[tuple[int, Any]]:
        return [(i, x) for i in range(self.size)]


@dataclass(frozen=True)
class EveryoneFrom:
    """`broadcast()` from a cluster: (sender, x) -> [((d, MemberId(sender)), x) for every member d]."""

    size: int

    def __call__(self, e: Any) -> list[tuple[tuple[int, MemberId[Any]], Any]]:
        return [((d, MemberId(e[0])), e[1]) for d in range(self.size)]


@dataclass(frozen=True)
class CheckMember:
    """A cluster source's record `(member, value)`: the member must exist."""

    port: str
    size: int

    def __call__(self, e: Any) -> Any:
        m = e[0]
        if not isinstance(m, int) or isinstance(m, bool) or not 0 <= m < self.size:
            raise ValueError(
                f"input {self.port!r} has a record for member {m!r}, but the cluster has {self.size} members"
            )
        return e


@dataclass(frozen=True)
class MemberFirst:
    """`sort()` per member: the sort key of a (member, x) pair."""

    key: Callable[[Any], Any] | None

    def __call__(self, e: Any) -> tuple[int, Any]:
        return e[0], e[1] if self.key is None else self.key(e[1])


@dataclass(frozen=True)
class Fill:
    """After a lookup with `keep_missing`: (x, (v,)) -> (x, v); (x, None) -> (x, default)
    (dropped when the default is an empty optional)."""

    default: Default

    def __call__(self, p: Any) -> Any:
        if p[1] is not None:
            return p[0], p[1][0]
        d = self.default()
        return None if d is EMPTY else (p[0], d)


def then(d: Default, kind: type[n.Node], f: Callable[..., Any]) -> Default:
    """The default after an element-wise operator on a singleton."""

    def mapped() -> Any:
        v = d()
        if v is EMPTY:
            return EMPTY
        if kind is n.Map:
            return f(v)
        if kind is n.Filter:
            return v if f(v) else EMPTY
        y = f(v)  # filter_map
        return EMPTY if y is None else y

    return mapped


def const(value: Any) -> Default:
    return lambda: value


def unwrap_or(d: Default | None, fallback: Any) -> Default:
    if d is None:
        return const(fallback)
    inner = d
    return lambda: fallback if (v := inner()) is EMPTY else v
