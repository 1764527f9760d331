"""The HTML a notebook shows for a Spark run's handle (`hydrolite.notebook.RunHandle`).

One fragment: a status line (running / stopped / failed, the checkpoint), a table with a
row per query (the figures `hydrolite run` prints: batches, the last batch and its
duration, input rows per input, rows/s, outputs and rejects per port), then the first
values of every sink kept in memory, and the error in a red box when the run failed.
Everything shown is escaped: values come from the user's data.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .progress import COLUMNS, QueryStats, progress_rows

if TYPE_CHECKING:
    from .notebook import RunHandle

CELL = "padding: 2px 8px; text-align: left; border-bottom: 1px solid #ddd"
STATUS_COLOURS = {"running": "#1c64b0", "stopped": "#2b8a3e", "failed": "#c92a2a"}


def _cell(text: str, tag: str = "td") -> str:
    return f'<{tag} style="{CELL}">{html.escape(text)}</{tag}>'


def progress_table(stats: list[QueryStats]) -> str:
    head = "".join(_cell(c, "th") for c, _ in COLUMNS)
    body = "".join("<tr>" + "".join(_cell(x) for x in row) + "</tr>" for row in progress_rows(stats))
    return f'<table style="border-collapse: collapse"><tr>{head}</tr>{body}</table>'


def outputs_section(handle: RunHandle) -> str:
    """The first values of each sink kept in memory (one collapsible block per sink)."""
    from .notebook import SHOWN_OUTPUTS, outputs_preview
    from .planner.spark.ports import MemorySink

    out = []
    for port, sink in sorted(handle.runner.outputs.items()):
        if not isinstance(sink, MemorySink):
            out.append(f"<div><b>{html.escape(port)}</b>: written to {html.escape(sink.describe())}</div>")
            continue
        values = sink.values()
        more = f" (first {SHOWN_OUTPUTS})" if len(values) > SHOWN_OUTPUTS else ""
        items = "".join(f"<li><code>{html.escape(v)}</code></li>" for v in outputs_preview(values))
        out.append(
            f"<details open><summary><b>{html.escape(port)}</b>: {len(values)} value"
            f"{'s' if len(values) != 1 else ''}{more}</summary><ul>{items}</ul></details>"
        )
    return "\n".join(out)


def run_html(handle: RunHandle) -> str:
    """The whole fragment for `handle`."""
    status = handle.status
    colour = STATUS_COLOURS.get(status, "#333")
    parts = [
        '<div class="hydrolite-run">',
        f"<div><b>hydrolite run</b> {html.escape(repr(handle.runner.plan.flow.name))}: "
        f'<span style="color: {colour}; font-weight: bold">{status}</span> '
        f"&middot; checkpoint <code>{html.escape(handle.runner.checkpoint)}</code></div>",
        progress_table(handle.progress()),
        outputs_section(handle),
    ]
    error = handle.error
    if error is not None:
        parts.append(
            '<pre style="background: #fff0f0; border-left: 3px solid #c92a2a; padding: 6px 8px">'
            f"{html.escape(f'{type(error).__name__}: {error}')}</pre>"
        )
    parts.append("</div>")
    return "\n".join(parts)
