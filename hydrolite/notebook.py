"""hydrolite in Jupyter: see a program, simulate it, run it on Spark and watch it.

* A `Flow` shows itself: evaluate `flow` in a cell and the notebook draws its IR graph
  (Mermaid; `hydrolite/ir/mermaid.py`). `plan(flow)` shows how Spark runs it: the queries,
  as `hydrolite plan --format mermaid` draws them.
* `simulate(flow, scenario)` explores every schedule (or `fuzz=N` random ones) and returns a
  result that shows "passed" with the number of executions, or the failure report laid out
  (`hydrolite/sim_view.py`); `result.check()` raises the failure, as a test would.
* `run(flow, inputs=...)` starts a Spark run in the background and returns a `RunHandle`:
  `handle.wait()` runs until the inputs are used up, showing the handle in the cell and
  redrawing it as batches finish; `handle.progress()`, `handle.outputs(port)`, `handle.stop()`; the handle
  itself shows per-query progress and the first outputs of every sink.

Inputs of `run` are port specs as for `hydrolite run --input` (`json:DIR`, `feed:DIR`,
`rate:...`) or Python batches (`{"increment": [[("c1", None)], [("c2", None)]]}`: one
micro-batch per inner list); a port left out gets demo data. Sinks default to memory, so
their outputs can be shown.
"""

from __future__ import annotations

import html
import importlib
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import HydroliteError
from .ir.graph import Flow
from .sim.errors import SimulationFailure
from .sim.values import render

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .planner.spark.runtime import FlowRunner
    from .planner.spark.stages import Plan
    from .progress import LineProgress, QueryStats

SHOWN_OUTPUTS = 20  # a handle shows this many values of each sink (outputs(port) has all)
FlowSource = Flow | Callable[[], Flow]


class NotebookError(HydroliteError):
    """A notebook helper was called wrongly."""

    code = "HL-NOTEBOOK"


def _flow(flow: FlowSource) -> Flow:
    built = flow() if callable(flow) and not isinstance(flow, Flow) else flow
    if not isinstance(built, Flow):
        raise NotebookError(
            f"expected a hydrolite.Flow or a function returning one, got {type(built).__name__}\n"
            "  fix: pass flow.finalize()'s result, or the program's build function"
        )
    return built


# ------------------------------------------------------------------ the Spark plan
@dataclass(frozen=True)
class PlanView:
    """How Spark runs a flow: its queries as a Mermaid picture, and as `hydrolite plan` text."""

    plan: Plan

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        from .planner.spark.render import render_mermaid, render_text

        chart = render_mermaid(self.plan)
        return {
            "text/vnd.mermaid": chart,
            "text/markdown": f"```mermaid\n{chart}\n```\n",
            "text/plain": render_text(self.plan),
        }


def plan(flow: FlowSource, keyed_state: str = "executors") -> PlanView:
    """The Spark plan of `flow` (`keyed_state` as for `hydrolite plan --keyed-state`)."""
    from .planner.spark.placement import place_all
    from .planner.spark.stages import plan_flow

    if keyed_state not in ("executors", "driver"):
        raise NotebookError(f"keyed_state must be 'executors' or 'driver', not {keyed_state!r}")
    planned = plan_flow(_flow(flow))
    place_all(planned, keyed_state, "local[*]")
    return PlanView(planned)


# ------------------------------------------------------------------ the simulator
@dataclass(frozen=True)
class SimResult:
    """The outcome of `simulate`: how many executions ran, and the failure if one failed."""

    flow: str
    mode: str  # "exhaustive" | "fuzz"
    executions: int
    failure: SimulationFailure | None

    @property
    def passed(self) -> bool:
        return self.failure is None

    def check(self) -> SimResult:
        """Raise the failure (as a test would); returns the result when it passed."""
        if self.failure is not None:
            raise self.failure
        return self

    def __repr__(self) -> str:
        if self.failure is None:
            return f"{self.flow}: passed {self.executions} {self.mode} execution(s)"
        return self.failure.report

    def _repr_html_(self) -> str:
        if self.failure is None:
            return (
                f'<div style="color: #2b8a3e; font-weight: bold">&#10003; {html.escape(self.flow)}: passed '
                f"{self.executions} {self.mode} execution{'s' if self.executions != 1 else ''}</div>"
            )
        return self.failure._repr_html_()


def simulate(
    flow: FlowSource,
    scenario: Callable[[Any], object],
    *,
    fuzz: int | None = None,
    seed: int | None = 0,
    crashes: bool | int = False,
    cluster_sizes: Mapping[str, int] | None = None,
    **model: Any,
) -> SimResult:
    """Run `scenario(simulator)` on every execution of `flow` (or `fuzz` random ones).

    A failed execution is returned (shown as its report), not raised: call `.check()` to
    raise it. Misuse of the simulator (an unknown port, ...) raises as usual."""
    from .sim import Simulator

    built = _flow(flow)
    sim = Simulator(flow, cluster_sizes=cluster_sizes, **model)
    mode = "exhaustive" if fuzz is None else "fuzz"
    try:
        if fuzz is None:
            count = sim.exhaustive(scenario, crashes=crashes)
        else:
            count = sim.fuzz(scenario, iterations=fuzz, seed=seed, crashes=crashes)
    except SimulationFailure as failure:
        return SimResult(built.name, mode, failure.executions, failure)
    return SimResult(built.name, mode, count, None)


# ------------------------------------------------------------------ a Spark run
def _display() -> Any:
    """IPython's display module when running in a kernel, else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None or ipython.get_ipython() is None:
        return None
    return importlib.import_module("IPython.display")


class RunHandle:
    """A Spark run started from a notebook (see `run`)."""

    def __init__(self, runner: FlowRunner, progress: LineProgress) -> None:
        self.runner = runner
        self._progress = progress
        self.started = time.monotonic()
        self.stopped = False
        self._shown: Any = None  # the IPython display handle redrawn by wait()

    @property
    def status(self) -> str:
        """running, failed (with `error`), or stopped."""
        if self.error is not None:
            return "failed"
        if self.stopped or all(s.query is None or not s.query.isActive for s in self.runner.stages):
            return "stopped"
        return "running"

    @property
    def error(self) -> BaseException | None:
        """The error that stopped a query, if one did."""
        for s in self.runner.stages:
            if s.error is not None:
                return s.error
            q = s.query
            if q is not None and not q.isActive and q.exception() is not None:
                return q.exception()
        return None

    def progress(self) -> list[QueryStats]:
        """Per query: batches, last batch and its duration, input rows, outputs, rejects."""
        return self._progress.stats()

    def outputs(self, port: str) -> list[Any]:
        """Every value written so far to sink `port` (bound to memory, the default here)."""
        from .planner.spark.ports import MemorySink

        if port not in self.runner.outputs:
            raise NotebookError(f"no sink {port!r}; the program's sinks are {sorted(self.runner.outputs)}")
        sink = self.runner.outputs[port]
        if not isinstance(sink, MemorySink):
            raise NotebookError(
                f"sink {port!r} is bound to {sink.describe()}, so its outputs are not kept here\n"
                "  fix: leave it out of run(outputs=...) (memory is the default) or read where it writes"
            )
        return sink.values()

    def wait(self, idle_seconds: float = 3.0) -> None:
        """Run until every query waited `idle_seconds` for new input, redrawing this handle
        in the cell as batches finish (so it returns nothing: the cell shows the handle
        once); then stop the run. A failure is raised."""
        display = _display()
        if display is not None and self._shown is None:
            self._shown = display.display(self, display_id=True)
        try:
            self.runner.run_until_idle(idle_seconds, on_progress=lambda _: self._redraw())
        finally:
            self.stop()

    def _redraw(self) -> None:
        if self._shown is not None:
            self._shown.update(self)

    def stop(self) -> RunHandle:
        """Stop every query (the checkpoint keeps the progress: a new run resumes)."""
        if not self.stopped:
            self.runner.stop()
            self.stopped = True
            counter = self._progress.counter
            counter.wait_terminated([str(s.query.runId) for s in self.runner.stages if s.query is not None])
            counter.detach()
            self._redraw()
        return self

    def __repr__(self) -> str:
        lines = [f"hydrolite run {self.runner.plan.flow.name!r}: {self.status}; checkpoint {self.runner.checkpoint}"]
        lines += [q.line("progress") for q in self.progress()]
        if self.error is not None:
            lines.append(f"error: {self.error}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from .notebook_html import run_html

        return run_html(self)


def run(
    flow: FlowSource,
    inputs: Mapping[str, object] | None = None,
    outputs: Mapping[str, object] | None = None,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    checkpoint: str | None = None,
    keyed_state: str = "executors",
) -> RunHandle:
    """Start `flow` on Spark (in the background) and return its handle.

    `inputs`: port -> a spec string (as `hydrolite run --input`) or a list of batches of
    Python values; a port left out gets demo data. `outputs`: port -> a spec (as `--output`)
    or a callable `f(batch_id, values)`; a sink left out is kept in memory. `checkpoint`: a
    directory (a new temporary one by default; an existing one resumes)."""
    from .input_feeds import feed_inputs
    from .planner.spark import ckfs
    from .planner.spark.lock import checkpoint_dir
    from .planner.spark.runtime import FlowRunner
    from .planner.spark.session import spark_session
    from .progress import LineProgress

    built = _flow(flow)
    given = dict(inputs or {})
    unknown = sorted(set(given) - set(built.sources)) + sorted(set(outputs or {}) - set(built.sinks))
    if unknown:
        raise NotebookError(
            f"unknown ports {unknown}; {built.name!r} has sources {sorted(built.sources)} and sinks {sorted(built.sinks)}"
        )
    checkpoint = checkpoint_dir(checkpoint or tempfile.mkdtemp(prefix=f"hydrolite-{built.name}-"))
    specs = {p: v for p, v in given.items() if isinstance(v, str)}
    typed = [p for p in built.sources if p not in specs]
    if typed and not ckfs.is_local(checkpoint) and spark is None:  # their feeds are written through Spark
        spark = spark_session(master)
    values = {p: v for p, v in given.items() if not isinstance(v, str)}
    specs.update(feed_inputs(built, typed, ckfs.join(checkpoint, "notebook-inputs"), values))
    sinks: dict[str, Any] = {p: "memory" for p in built.sinks}
    sinks.update(outputs or {})
    runner = FlowRunner(
        built, spark=spark, master=master, checkpoint=checkpoint, inputs=specs, outputs=sinks, keyed_state=keyed_state
    )
    progress = LineProgress(runner)  # before start: it counts input rows from Spark's events
    try:
        runner.start()
    except BaseException:
        progress.counter.detach()
        runner.stop()
        raise
    return RunHandle(runner, progress)


def outputs_preview(values: list[Any], limit: int = SHOWN_OUTPUTS) -> list[str]:
    """The first `limit` values, rendered as the simulator renders them."""
    return [render(v) for v in values[:limit]]
