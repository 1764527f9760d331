"""What `hydrolite plan` says of a state kept by a native streaming aggregation
(`native_state.py`): the aggregation, its input and who reads it."""

from __future__ import annotations

from ...ir import nodes as n
from .channel_versions import read_whole
from .native_state import WHY, NativeState


def _through(st: NativeState) -> str:
    """' through map() x.py:3, into_keyed() x.py:3': the projections the aggregation computes."""
    return " through " + ", ".join(f"{x.op}() {x.site.label}" for x in st.chain) if st.chain else ""


def describe(st: NativeState) -> str:
    src = f"{st.input.op}() {st.input.site.label}{_through(st)}"
    if isinstance(st.node, n.Enumerate):
        return (
            f"{WHY}: the keys of {src} counted over all batches; a key's indexes "
            "in a batch start at its count before it"
        )
    if st.occurrences:
        what = "keys" if st.by == ("k",) else "elements"
        return (
            f"{WHY}: the {what} of {src} counted over all batches; "
            f"the new ones are those whose count is the batch's own"
        )
    readers = [f"lookup_keyed_singleton() {x.site.label}" for x in st.lookups]
    readers += [f"another query reading {x.op}() {x.site.label} as deltas" for x in st.published]
    if st.whole:
        also = f"; at the keys the batch updated by {', '.join(readers)}" if readers else ""
        return f"{WHY}: an algebraic {st.node.op}() of {src}, {read_whole(list(st.whole))}{also}"
    return f"{WHY}: an algebraic {st.node.op}() of {src}, read only at the keys the batch updated (by {', '.join(readers)})"
