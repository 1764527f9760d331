"""`hydrolite run`'s progress: per query, batches, input rows and rows/s, outputs, rejects.

On a terminal the figures are a table redrawn in place (rich's `Live`), so a long run reads
as one screen instead of a scrolling log; elsewhere (pipes, CI, `--progress lines`) one
line per query whenever it finished a batch. Both end with the same final lines.

Example (the table for two queries, rendered without a terminal)::

    >>> import io
    >>> from hydrolite.progress import QueryStats, progress_table
    >>> from rich.console import Console
    >>> console = Console(file=io.StringIO(), width=100, color_system=None)
    >>> console.print(progress_table([QueryStats("tick0", 3, 2, 41.0, 120, 60.0, "resp=4", "")]))
    >>> text = console.file.getvalue()
    >>> "tick0" in text and "#2" in text and "resp=4" in text
    True
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console, JustifyMethod
from rich.live import Live
from rich.table import Table


@dataclass(frozen=True)
class QueryStats:
    """What the progress shows of one query."""

    name: str
    batches: int
    last_batch: int
    last_ms: float
    rows: int
    rows_per_s: float
    outputs: str  # "port=rows, ..."
    rejected: str  # "port=records, ..." set aside by ?onBadRecord=quarantine
    per_input: str = ""  # " (a=10, b=3)" when the query reads several inputs

    def line(self, label: str) -> str:
        rejected = f"; rejected (quarantined): {self.rejected}" if self.rejected else ""
        return (
            f"hydrolite {label}: query {self.name}: {self.batches} batches (last #{self.last_batch}, "
            f"{self.last_ms:.0f} ms), {self.rows} input rows{self.per_input}, {self.rows_per_s:.1f} rows/s; "
            f"outputs: {self.outputs or '-'}{rejected}"
        )


# The table's columns and their alignment: the terminal's table and a notebook's HTML
# table (`notebook_html.py`) show the same columns and rows.
COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("query", "left"),
    ("batches", "right"),
    ("last", "right"),
    ("ms", "right"),
    ("input rows", "right"),
    ("rows/s", "right"),
    ("outputs", "left"),
    ("rejected", "left"),
)


def progress_rows(stats: list[QueryStats]) -> list[list[str]]:
    """The table's rows, as text (one per query)."""
    return [
        [
            q.name,
            str(q.batches),
            f"#{q.last_batch}" if q.last_batch >= 0 else "-",
            f"{q.last_ms:.0f}",
            f"{q.rows}{q.per_input}",
            f"{q.rows_per_s:.1f}",
            q.outputs or "-",
            q.rejected or "-",
        ]
        for q in stats
    ]


def progress_table(stats: list[QueryStats]) -> Table:
    """The live table: one row per query."""
    table = Table(title="hydrolite run", title_justify="left")
    for col, just in COLUMNS:
        table.add_column(col, justify=just)
    for row in progress_rows(stats):
        table.add_row(*row)
    return table


class LineProgress:
    """One line per query whenever it finished a batch (and final lines at the end)."""

    def __init__(self, runner: Any) -> None:
        from .planner.spark.input_rows import InputRows

        self.runner = runner
        # every progress event, not `recentProgress` (which keeps the last 100, and whose
        # no-data progresses carry the id of the next batch): see input_rows.py
        self.counter = InputRows().attach(runner.spark)
        self.shown: dict[str, int] = {}
        self.start = time.monotonic()

    def stats(self) -> list[QueryStats]:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        out = []
        for s in self.runner.stages:
            p = s.progress
            rows, per_input = self._rows(s)
            out.append(
                QueryStats(
                    s.stage.name,
                    p.batches,
                    p.last_batch,
                    p.durations_ms[-1][1] if p.durations_ms else 0.0,
                    rows,
                    rows / elapsed,
                    ", ".join(f"{k}={v}" for k, v in sorted(p.output_rows.items())),
                    ", ".join(f"{k}={v}" for k, v in sorted(p.rejected.items()) if v),
                    per_input,
                )
            )
        return out

    def _rows(self, s: Any) -> tuple[int, str]:
        """A query's input rows so far, and per input when it has several."""
        if s.query is None:
            return 0, ""
        name = s.query.name
        # Spark counts a row once per scan of its input; a query with state on the executors or
        # in native aggregations scans an input more than once (`StageRunner.scans`)
        named = [
            (inp.name, s.rows_read(i, self.counter.source_rows(name, i)))
            for i, inp in enumerate(s.inputs)
            if inp.node is not None
        ]
        per = ", ".join(f"{nm}={rows}" for nm, rows in named)
        return sum(rows for _, rows in named), f" ({per})" if len(named) > 1 else ""

    def _finish(self, runner: Any) -> None:
        """The queries are stopped: wait for their last progress events."""
        self.counter.wait_terminated([str(s.query.runId) for s in runner.stages if s.query is not None])
        self.counter.detach()

    def show(self, runner: Any, final: bool = False) -> None:
        if final:
            self._finish(runner)
        for q in self.stats():
            if not final and self.shown.get(q.name) == q.last_batch:
                continue
            self.shown[q.name] = q.last_batch
            print(q.line("done" if final else "progress"))
        if final:
            self._print_paths(runner)

    def _print_paths(self, runner: Any) -> None:
        for s in runner.stages:
            for fn, path in sorted(s.progress.fn_paths.items()):
                print(f"    {fn}: {path}")


class LiveProgress(LineProgress):
    """The same figures as a table redrawn in place; the final lines are printed as usual."""

    def __init__(self, runner: Any, console: Console | None = None) -> None:
        super().__init__(runner)
        self.live = Live(progress_table(self.stats()), console=console, refresh_per_second=4, transient=True)
        self.live.start()

    def show(self, runner: Any, final: bool = False) -> None:
        if not final:
            self.live.update(progress_table(self.stats()))
            return
        self.live.stop()
        super().show(runner, final=True)


def make_progress(runner: Any, mode: str = "auto") -> LineProgress:
    """`live` on a terminal (or when asked), `lines` otherwise."""
    if mode == "live" or (mode == "auto" and sys.stdout.isatty()):
        return LiveProgress(runner)
    return LineProgress(runner)
