"""Which build-time rules each operator checks, in the order the run-time checks run.

The plugin (`checks.py`) evaluates these against the static types of a call's receiver and
arguments; the live collections raise the same rules as `BuildError`s at build time, with
the `required`/`fix` texts of `hydrolite.live.rules`. The table is keyed by the class that
defines the method (mypy reports methods by their defining class) and the method name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..live import rules as r

SelfKind = Literal["ordered", "bounded", "in_tick", "top", "comparable", "pairs"]
ArgKind = Literal["same_location", "bounded", "tick_of", "align_of", "nondet", "process", "cluster"]


@dataclass(frozen=True)
class OnSelf:
    """A rule on the receiver (`bag.fold(...)`: bag must be TotalOrder)."""

    kind: SelfKind
    fix: str = ""


@dataclass(frozen=True)
class OnArg:
    """A rule on the argument bound to parameter `param` (`a.chain(b)`: b must be Bounded)."""

    param: str
    kind: ArgKind
    fix: str = ""


Rule = OnSelf | OnArg

# ------------------------------------------------------------------ shared groups
_TOP_BATCH = (OnSelf("top", r.FIX_FROM_TOP), OnArg("tick", "tick_of"))
_ALIGN = (OnArg("align", "align_of"),)
_NONDET = (OnArg("nondet", "nondet"),)
_STEP = (OnSelf("in_tick"),)

# Operators of every collection kind that enter, leave or step ticks.
_SNAPSHOT: dict[str, tuple[Rule, ...]] = {
    "snapshot": _TOP_BATCH + _NONDET,
    "snapshot_aligned": _TOP_BATCH + _ALIGN + _NONDET,
    "latest": _STEP,
    "defer_tick": _STEP,
    "aligned_at": (OnSelf("top", r.FIX_ALIGNED_AT_TOP), *_ALIGN),
}

# Operators of streams and keyed streams alike (ordering assumed, ticks entered, left, stepped).
_STREAMLIKE: dict[str, tuple[Rule, ...]] = {
    "assume_ordering": _NONDET,
    "batch": _TOP_BATCH + _NONDET,
    "batch_aligned": _TOP_BATCH + _ALIGN + _NONDET,
    "all_ticks": _STEP,
    "defer_tick": _STEP,
    "release_aligned": (OnSelf("top", r.FIX_RELEASE_TOP), *_ALIGN),
    "aligned_at": (OnSelf("top", r.FIX_ALIGNED_AT_TOP), *_ALIGN),
}

STREAM: dict[str, tuple[Rule, ...]] = {
    "fold": (OnSelf("ordered", r.FIX_FOLD),),
    "reduce": (OnSelf("ordered", r.FIX_REDUCE),),
    "first": (OnSelf("ordered", r.FIX_SORT_FIRST),),
    "last": (OnSelf("ordered", r.FIX_SORT_FIRST),),
    "enumerate": (OnSelf("ordered", r.FIX_SORT_FIRST),),
    "sort": (OnSelf("bounded", r.FIX_SORT_BATCH), OnSelf("comparable")),
    "cross_singleton": (OnArg("other", "same_location"), OnArg("other", "bounded", r.FIX_SNAPSHOT_SINGLETON)),
    "cross_product": (OnArg("other", "same_location"),),
    "join": (OnArg("other", "same_location"),),
    "anti_join": (OnArg("other", "same_location"), OnArg("other", "bounded", r.FIX_NEGATIVE_SIDE)),
    "chain": (
        OnSelf("bounded", r.FIX_CHAIN_FIRST),
        OnArg("other", "same_location"),
        OnArg("other", "bounded", r.FIX_CHAIN_BOTH),
    ),
    "merge_unordered": (OnArg("other", "same_location"),),
    "into_keyed": (OnSelf("pairs"),),
    **_STREAMLIKE,
    "send": (OnSelf("top", r.FIX_SEND_TOP), OnArg("dest", "process")),
    "broadcast": (OnSelf("top", r.FIX_SEND_TOP), OnArg("dest", "cluster")),
    "demux": (OnSelf("top", r.FIX_SEND_TOP), OnArg("dest", "cluster")),
    "sink": (OnSelf("top", r.FIX_SINK_TOP),),
}

KEYED_STREAM: dict[str, tuple[Rule, ...]] = {
    "enumerate": (OnSelf("ordered", r.FIX_KEYED_ORDER),),
    "fold": (OnSelf("ordered", r.FIX_KEYED_ORDER),),
    "reduce": (OnSelf("ordered", r.FIX_KEYED_ORDER),),
    "first": (OnSelf("ordered", r.FIX_KEYED_ORDER),),
    "last": (OnSelf("ordered", r.FIX_KEYED_ORDER),),
    "lookup_keyed_singleton": (
        OnSelf("bounded"),
        OnArg("table", "same_location"),
        OnArg("table", "bounded", r.FIX_SNAPSHOT_TABLE),
    ),
    **_STREAMLIKE,
    "demux_by_key": (OnSelf("top", r.FIX_KEYED_SEND_TOP), OnArg("dest", "cluster")),
    "sink": (OnSelf("top", r.FIX_KEYED_SINK_TOP),),
}

SINGLETON: dict[str, tuple[Rule, ...]] = {
    **_SNAPSHOT,
    "zip": (OnArg("other", "same_location"),),
    "into_stream": _STEP,
}

KEYED_SINGLETON: dict[str, tuple[Rule, ...]] = {
    **_SNAPSHOT,
    "entries": (OnSelf("bounded", r.FIX_SNAPSHOT_TABLE),),
    "keys": (OnSelf("bounded", r.FIX_SNAPSHOT_TABLE),),
    "values": (OnSelf("bounded", r.FIX_SNAPSHOT_TABLE),),
    "get": (OnSelf("bounded", r.FIX_SNAPSHOT_TABLE), OnArg("key", "same_location")),
    "get_many_if_present": (
        OnSelf("bounded", r.FIX_SNAPSHOT_TABLE),
        OnArg("requests", "same_location"),
        OnArg("requests", "bounded"),
    ),
}

# Defining class -> method -> rules.
RULES: dict[str, dict[str, tuple[Rule, ...]]] = {
    "hydrolite.live.stream.Stream": STREAM,
    "hydrolite.live.keyed_stream.KeyedStream": KEYED_STREAM,
    "hydrolite.live.singleton.Singleton": SINGLETON,
    "hydrolite.live.singleton.OptionalSingleton": SINGLETON,
    "hydrolite.live.keyed_singleton.KeyedSingleton": KEYED_SINGLETON,
}

# Element types of ports and cycles: a bare generic (`tuple`, `list`) silently means
# `tuple[Any, ...]`, which strict mypy would reject in an annotation.
# mypy names a method after the receiver's class, so TopLevel's ports appear under both.
_PORTS: dict[str, tuple[str, ...]] = {"source": ("ty",), "keyed_source": ("key", "value")}
TYPE_ARGS: dict[str, dict[str, tuple[str, ...]]] = {
    "hydrolite.locations.locations.Process": _PORTS,
    "hydrolite.locations.locations.Cluster": _PORTS,
    "hydrolite.locations.locations.TopLevel": _PORTS,
    "hydrolite.locations.locations.Tick": {"stream_cycle": ("ty",), "optional_cycle": ("ty",)},
}

# `==`/`!=` on any live collection (mypy names operator methods after the receiver's class).
EQUALITY = {"__eq__": "==", "__ne__": "!="}
