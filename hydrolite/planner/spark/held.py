"""Ticks that cannot run yet: a batch whose tick waits for a first version of a singleton
read from another query is held (its input rows kept under `held/<batch id>`) and runs with
the first batch that can. A mixin of `runtime.StageRunner`, kept apart like `outputs.py`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from ...ir import nodes as n
from ...ir.meta import Kind
from ...ir.roles import starts_empty, static_initial
from . import ckfs
from .errors import site_of
from .values import Scalar, Val

if TYPE_CHECKING:
    from .runtime import FlowRunner, InputSpec, StageProgress
    from .stages import Stage

_HELD = "held-batches"  # state key: input rows of batches whose tick could not run yet


def may_wait_for(node: n.Node) -> bool:
    """Whether a batch of a query reading `node` from another query may have to wait for it
    (`HeldBatches._blocked`): a singleton without a static first version (`static_initial`),
    a keyed singleton that does not start empty (`starts_empty`). An optional never makes a
    batch wait: before a first version it is empty, in the model too."""
    if node.meta.kind is Kind.SINGLETON:
        return not static_initial(node)[0]
    if node.meta.kind is Kind.KEYED_SINGLETON:
        return not starts_empty(node)
    return False


def release_held(state: Any) -> None:
    """The tick ran: nothing is held any more (written with the batch's state)."""
    state.put(_HELD, ([], {}))


class HeldBatches:
    """Holding and releasing a stage's blocked batches (needs the runner's fields below)."""

    runner: FlowRunner
    stage: Stage
    inputs: list[InputSpec]
    in_tick: list[bool]
    dir: str
    progress: StageProgress

    def _blocked(self, inputs: dict[int, Val]) -> bool:
        """Whether the tick cannot run yet: a singleton or keyed singleton read from another
        query has no version (in the model the tick waits for one; running it with no value
        would be wrong). A keyed singleton without one is left out of `inputs`
        (`channel_versions.latest_table`)."""
        for i, inp in enumerate(self.inputs):
            if inp.node is None:
                continue
            value = inputs.get(id(inp.node))
            if inp.node.meta.kind is Kind.SINGLETON and isinstance(value, Scalar) and not value.present:
                return True
            if inp.node.meta.kind is Kind.KEYED_SINGLETON and self.in_tick[i] and value is None:
                return True
        return False

    def _hold(self, df: DataFrame, files: dict[int, list[str]], batch_id: int, state: Any) -> None:
        """Keep a blocked batch's input rows (under `held/<batch id>`, idempotent on replay) for
        the next batch that can run: the model's tick takes everything pending then."""
        path = ckfs.join(self.dir, "held", str(batch_id))  # Spark writes it: any Hadoop file system
        df.write.mode("overwrite").parquet(path)
        state.put(_HELD, ([path], files))
        state.commit()
        self.progress.held += 1
        if self.progress.held == 1:  # said once per run: the tick waits, it does not guess
            waiting = [
                f"{inp.node.op}() at {site_of(inp.node)}"
                for inp in self.inputs
                if inp.node is not None and inp.node.meta.kind in (Kind.SINGLETON, Kind.KEYED_SINGLETON)
            ]
            print(
                f"hydrolite: query {self.stage.name!r} holds batch {batch_id}: its tick waits for a first version of "
                f"{' / '.join(waiting)} (from another query); the held input runs with the first batch that has one",
                file=sys.stderr,
            )

    def _with_held(
        self, df: DataFrame, files: dict[int, list[str]], state: Any
    ) -> tuple[DataFrame, dict[int, list[str]]]:
        """This batch's rows after those of earlier batches held back (oldest first)."""
        found, value = state.get(_HELD)
        if not found or not value[0]:
            return df, files
        paths, held_files = value
        held = self.runner.spark.read.parquet(*paths)
        merged = {i: [*held_files.get(i, []), *files.get(i, [])] for i in set(held_files) | set(files)}
        return held.unionByName(df, allowMissingColumns=True).persist(StorageLevel.MEMORY_AND_DISK), merged
