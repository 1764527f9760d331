"""The words of the build-time rules: what an operator requires and how to fix a misuse.

Each rule is checked twice: at build time by the live collections (`Live._need_*`, which
raise a `BuildError`) and, for programs checked with mypy, by `hydrolite.mypy_plugin`.
Both read their `required` and `fix` texts from this module, so a misuse reads the same
whichever of the two finds it (tests/core/test_mypy_plugin.py compares them case by case).
"""

from __future__ import annotations

# ------------------------------------------------------------------ what a rule requires
ORDERED = "a TotalOrder collection"
BOUNDED = "a Bounded collection (one batch inside a tick)"
IN_TICK = "a collection inside a tick (Tick[...] location)"
TOP_LEVEL = "a top-level collection (on a Process or Cluster)"
NONDET = 'a nondet("why") justification'
COMPARABLE = "comparable elements (a type with <) or a key= returning one"
PAIRS = "a Stream of (key, value) pairs"
SPELLED_TYPE = "an element type with its type arguments (tuple[str, int], not tuple)"
NO_EQUALITY = "an operator that observes contents (== and != compare build-time handles)"
NO_TRUTH = "an explicit operator to observe its contents"


def same_location(loc: str) -> str:
    """Both sides of a combining operator live at `loc`."""
    return f"both sides at the same location ({loc})"


def tick_of(loc: str) -> str:
    """batch()/snapshot() need a tick of the collection's own location."""
    return f"a tick of the collection's own location {loc}"


def align_point_of(loc: str) -> str:
    """Aligned operators need an align point of the collection's (top-level) location."""
    return f"an align point of the collection's location {loc}"


def destination(kind: str) -> str:
    """send() targets a Process; broadcast()/demux() a Cluster."""
    return f"a {kind} destination"


# ------------------------------------------------------------------ how to fix a misuse
FIX_FOLD = "use fold_commutative() if the function ignores order, or sort()/assume_ordering(nondet(...)) first"
FIX_REDUCE = "use reduce_commutative() if the function ignores order, or sort()/assume_ordering(nondet(...)) first"
FIX_SORT_FIRST = "sort() or assume_ordering(nondet(...)) first"
FIX_KEYED_ORDER = "use the _commutative variant if the function ignores order, or assume_ordering(nondet(...)) first"
FIX_BATCH = "batch(tick, nondet(...)) it into a tick first"
FIX_SORT_BATCH = "sort works on one batch: batch(tick, nondet(...)) the stream first"
FIX_CHAIN_FIRST = "chain needs the first side to end: batch it into a tick first"
FIX_CHAIN_BOTH = "chain needs both sides to end: batch it into a tick first"
FIX_NEGATIVE_SIDE = "the negative side must be complete: batch it into the tick first"
FIX_SNAPSHOT_SINGLETON = "snapshot(tick, nondet(...)) the singleton into the stream's tick"
FIX_SNAPSHOT_TABLE = "snapshot(tick, nondet(...)) the keyed singleton first"
FIX_ENTER_TICK = "this operator leaves or steps a tick; use batch()/snapshot() to enter one first"
FIX_LEAVE_TICK = "call all_ticks() (streams) or latest() (singletons) to leave the tick first"
FIX_FROM_TOP = "batch/snapshot are taken from top-level collections only"
FIX_RELEASE_TOP = "release_aligned applies to top-level streams: all_ticks() the batch first, then release it"
FIX_ALIGNED_AT_TOP = (
    "aligned_at marks a top-level collection: call it before batch()/snapshot() takes the collection into the tick"
)
FIX_SEND_TOP = "send from the top level: all_ticks() the stream first"
FIX_KEYED_SEND_TOP = "send from the top level: all_ticks() the keyed stream first"
FIX_SINK_TOP = "sinks are top-level: all_ticks() the stream first"
FIX_KEYED_SINK_TOP = "sinks are top-level: all_ticks() the keyed stream first"
FIX_SAME_LOCATION = (
    "move one side first: send() across locations, batch()/snapshot() into the tick, or all_ticks()/latest() out of it"
)
FIX_NONDET = 'pass nondet("why any outcome is acceptable here")'
FIX_DESTINATION = "send() targets a Process; broadcast(), demux() and demux_by_key() target a Cluster"
FIX_COMPARABLE = "pass key=... returning a comparable value (a number, a string, a tuple of them)"
FIX_PAIRS = "map() each element to a (key, value) tuple first"
FIX_SPELLED_TYPE = "spell the items, e.g. tuple[str, int] or list[int] (tuple[Any, ...] if you mean any)"
FIX_EQUALITY = "compare inside the pipeline (filter(), map(), zip()); `is` tells two handles apart"
FIX_TRUTH = "use filter(), fold() or count() to compute the condition inside the pipeline"


def fix_tick_of(loc: str) -> str:
    """Create the tick on the collection's own location."""
    return f"create the tick with .tick() on the location that holds the collection ({loc})"


def fix_align_point_of(loc: str) -> str:
    """Alignment never crosses the network."""
    return (
        f"alignment is local to one location: create the point on the location that holds the collection ({loc}); "
        "it cannot align across the network"
    )
