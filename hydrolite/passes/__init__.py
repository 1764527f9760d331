"""Compiler passes: small pure functions from `Flow` to `Flow`.

The alignment pass (`align.align_flow`) is the one every backend runs first. Its output
contract, which the simulator and the Spark planner both rely on:

* **Merged ticks.** Every tick used by `batch_aligned` / `snapshot_aligned` with one align
  point (transitively, across points that share ticks) is replaced by one representative
  `TickId`; every node of those ticks is rewritten to it.
* **Aligned region.** For each align point, the region is its shared-upstream frontier
  (nodes upstream of at least two uses whose downstream is no longer shared by the same
  set of uses; nothing behind a network `Send` counts) plus every node on a path from the
  frontier to a use. Region nodes move into the merged tick: `meta.loc` becomes the merged
  `TickId` while `meta.bounded` stays False. Such a *carried* node (in a tick, unbounded)
  keeps its top-level meaning, discretized at the tick: each tick it consumes the delta that
  reached it in this tick and keeps its state across ticks; a carried stream emits this
  tick's new elements, a carried (keyed) singleton holds its current cumulative value.
* **Entry.** Every edge from a top-level node into the region gets a new
  `Batch(tick=merged, align=point, nondet=...)` (a `Snapshot` when the node is a singleton
  kind): the region's only choice points (a prefix of the pending elements, any subset for
  NoOrder inputs; or a version of the singleton). One entry per (node, merged tick).
* **Aligned reads.** A `Snapshot` / `Batch` with `align` set whose input now lives in the
  same tick reads that input's value (singleton) or this tick's delta (stream): no choice.
* **Release.** A `ReleaseAligned` whose input lives in the merged tick emits that input's
  per-tick delta at top level once the tick has completed (like `AllTicks`).
* **Exits.** Edges from region nodes to consumers outside the region get a bridge
  (`AllTicks` for streams, `Latest` for singletons), so the rest of the graph keeps its meaning.
  Except for a plain `batch()`/`snapshot()` into the region's own merged tick: it reads the
  carried node directly (the current version, one legal choice), and a top-level value it
  reads that is *derived* from carried nodes only (a map of a carried fold, a count of a
  carried stream) gets a carried copy of that derivation in the tick to read. Through a
  bridge the tick would read its own output, which one micro-batch per run cannot do.
* `Flow.regions` lists the `AlignedRegion`s for plan printouts; `Flow.diagnostics` carries
  the warnings.
"""
