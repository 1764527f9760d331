"""Evaluating a stage's IR nodes for one micro-batch (the body of `foreachBatch`).

Behaviour is attached to node classes through `HANDLERS` (a translation table keyed by
node class, filled by `ops` and `ops_state`); `evaluate` walks the stage's nodes in
topological order and asks each handler for the node's `Val` in this batch.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from ..._site import CallSite
from ...ir import nodes as n
from .errors import SparkRunError, site_of
from .pyfn import FnSite
from .stages import Stage
from .state import BatchState
from .values import SFrame, Val

Handler = Callable[["BatchCtx", Any, list[Val]], Val]

#: node class -> how it evaluates in a micro-batch (see ops.py and ops_state.py)
HANDLERS: dict[type[n.Node], Handler] = {}
LAZY: set[type[n.Node]] = set()  # node classes whose handler runs no Spark job (`handles(lazy=True)`)


def handles(*classes: type[n.Node], lazy: bool = False) -> Callable[[Handler], Handler]:
    """Register a handler for node classes. `lazy`: the handler only builds DataFrames and
    never runs a Spark job itself (`StageRunner` uses it to tell when one job reads a batch)."""

    def deco(fn: Handler) -> Handler:
        for c in classes:
            HANDLERS[c] = fn
            if lazy:
                LAZY.add(c)
        return fn

    return deco


@dataclass
class BatchCtx:
    """Everything a handler may use while evaluating one batch of one stage."""

    spark: SparkSession
    stage: Stage
    batch_id: int
    state: BatchState
    inputs: dict[int, Val]  # source / channel nodes -> this batch's delta
    keys: dict[int, str]  # node -> the key of its state (`Stage.state_keys`)
    vals: dict[int, Val] = field(default_factory=dict)
    outputs: dict[str, SFrame] = field(default_factory=dict)  # sink port -> output
    channel_outputs: dict[str, Val] = field(default_factory=dict)
    #: a delta channel's `gone_from` state's value: the keys it updated (tombstones' candidates)
    channel_updated: dict[str, Val] = field(default_factory=dict)
    fn_paths: dict[str, str] = field(default_factory=dict)  # "op() file:line" -> native | arrow
    after: list[Callable[[], None]] = field(default_factory=list)  # run before state commit
    natives: list[tuple[Any, SFrame]] = field(default_factory=list)  # translated functions and their inputs
    elsewhere: set[int] = field(default_factory=set)  # nodes evaluated on the executors (keyed_state.py)
    #: a native `unique()` / `keys()` -> its elements' counts over all batches (`NativeAggregations.seen`)
    native_seen: dict[int, Any] = field(default_factory=dict)
    live: set[int] | None = None  # the nodes a batch must evaluate (`live_nodes`); None: all
    whole: bool = False  # `source_iter()` gives all its values, not only in its first batch (`whole`)
    _fresh: itertools.count[int] = field(default_factory=itertools.count)

    def key(self, node: n.Node) -> str:
        return self.keys[id(node)]

    def stateful(self, node: n.Node) -> bool:
        """Whether `node` keeps state across batches (the one classification: `ir.roles`)."""
        return self.stage.roles.stateful(node)

    def site(self, node: n.Node) -> FnSite:
        fn_at = ""
        code = getattr(getattr(node, "f", None), "__code__", None)
        if code is not None and (os.path.abspath(code.co_filename), code.co_firstlineno) != (
            node.site.file,
            node.site.line,
        ):
            fn_at = CallSite(code.co_filename, code.co_firstlineno).label
        return FnSite(node.op, node.site.file, node.site.line, self.batch_id, self.stage.name, fn_at)

    def fresh(self, prefix: str = "_o") -> str:
        return f"{prefix}{next(self._fresh) + 1}"

    def call(self, node: n.Node, f: Callable[..., Any], *args: Any) -> Any:
        """Call a user function on the driver, reporting failures like the workers do."""
        try:
            return f(*args)
        except Exception as exc:  # reported with the operator, line, element and batch
            raise self.site(node).fail(args[0] if len(args) == 1 else args, exc) from exc

    def note_fn(self, node: n.Node, path: str) -> None:
        """Record how the node's function ran ("native" / "arrow (why)"), under the user's
        operator: a helper node of a pass names it (`hydrolite_op` of its function)."""
        op = getattr(getattr(node, "f", None), "hydrolite_op", node.op)
        self.fn_paths[f"{op}() {site_of(node)}"] = path


#: nodes evaluated for their effect on the batch, whether or not a value of theirs is read:
#: they write outputs or state (with every node `Roles.stateful` classifies)
_EFFECTS = (n.Sink, n.DeferTick, n.CycleSource, n.SourceIter)


def live_nodes(stage: Stage, given: set[int]) -> set[int]:
    """Ids of the nodes a batch must evaluate: those an output, a channel or a state depends
    on, not looking past the nodes whose values arrive computed (`given`: inputs, native
    aggregations, the executor region's answers). Spark would never run a dead node's
    DataFrame anyway; skipping it saves building it over Py4J, and lets the query leave an
    input no live node reads out of the rows the tick receives (`StageRunner.streaming_df`)."""
    todo = [x for x in stage.nodes if isinstance(x, _EFFECTS) or stage.roles.stateful(x)]
    todo += [ch.node for ch in stage.channels_out]
    live: set[int] = set()
    while todo:
        x = todo.pop()
        if id(x) in live:
            continue
        live.add(id(x))
        if id(x) not in given:
            todo.extend(x.children)
    # a computed value no evaluated node reads (a native count read only by its in-place
    # lookup) is not even built
    read = {id(c) for x in stage.nodes if id(x) in live and id(x) not in given for c in x.children}
    read |= {id(ch.node) for ch in stage.channels_out}
    return {i for i in live if i not in given or i in read}


def one_job_reads(stage: Stage, live: set[int], given: set[int], one_job_sink: Callable[[str], bool]) -> bool:
    """Whether exactly one Spark job reads a batch's rows: one live sink that writes with one
    job (`OutputBinding.one_job`), no channel out and no deferred stream (each reads the
    batch again), and every node the batch evaluates built lazily (`handles(lazy=True)`;
    the nodes in `given` arrive computed, the inputs among them). Then caching the batch
    before the tick buys nothing and costs a copy of its rows."""
    sinks = [x for x in stage.nodes if isinstance(x, n.Sink) and id(x) in live]
    if len(sinks) != 1 or not one_job_sink(sinks[0].port) or stage.channels_out or stage.deferred:
        return False
    placed = stage.placement  # (a table read whole is written by jobs of its own: `whole_table`)
    if placed is not None and (
        any(st.whole for st in placed.native)
        or (placed.region is not None and any(st.whole for st in placed.region.states))
    ):
        return False
    return all(type(x) in LAZY for x in stage.nodes if id(x) in live and id(x) not in given)


def whole(ctx: BatchCtx, node: n.Node) -> Val:
    """The complete value of a bounded stream at top level, which only `source_iter()`
    literals and stateless operators build: every batch of the model sees all of it, while on
    Spark the literals arrive once, in the query's first batch. Its subgraph is evaluated again
    with each `source_iter()` giving all its values (nothing read or written in the state)."""
    from dataclasses import replace

    below: dict[int, n.Node] = {}
    todo = [node]
    while todo:
        x = todo.pop()
        if id(x) not in below:
            below[id(x)] = x
            todo.extend(x.children)
    sub = replace(ctx, vals={}, outputs={}, channel_outputs={}, channel_updated={}, after=[], whole=True)
    for x in ctx.stage.nodes:  # in the stage's order: children first
        if id(x) not in below:
            continue
        # stages._check_whole_keys refused any other subgraph at plan time
        assert id(x) not in ctx.inputs and (isinstance(x, n.SourceIter) or not ctx.stateful(x)), x.op
        sub.vals[id(x)] = HANDLERS[type(x)](sub, x, [sub.vals[id(c)] for c in x.children])
    return sub.vals[id(node)]


def evaluate(ctx: BatchCtx) -> None:
    """Evaluate every live node of the stage for this batch (outputs land in ctx.outputs)."""
    for node in ctx.stage.nodes:
        if ctx.live is not None and id(node) not in ctx.live:
            continue
        if id(node) in ctx.inputs:
            ctx.vals[id(node)] = ctx.inputs[id(node)]
            continue
        if id(node) in ctx.elsewhere:  # its state lives on the executors; its readers got their answers
            continue
        handler = HANDLERS.get(type(node))
        if handler is None:
            raise SparkRunError(f"{site_of(node)}: {node.op}() has no Spark translation")
        ctx.vals[id(node)] = handler(ctx, node, [_value(ctx, c) for c in node.children])
    for ch in ctx.stage.channels_out:
        ctx.channel_outputs[ch.name] = ctx.vals[id(ch.node)]
        if ch.gone_from is not None:
            ctx.channel_updated[ch.name] = _value(ctx, ch.gone_from)


def _value(ctx: BatchCtx, x: n.Node) -> Val:
    """Node `x`'s value in this batch: computed here, or given (an input, a state the
    executors keep, which no live node needed here)."""
    return ctx.vals[id(x)] if id(x) in ctx.vals else ctx.inputs[id(x)]
