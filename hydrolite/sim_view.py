"""A simulator failure report (`sim/report.py`) as HTML and Markdown, for notebooks.

The report is text built for a terminal: a headline, the assertion, the steps and choices
that led to it (each operator at the user's file:line, with its code and what it released),
notes, and how to replay the execution. A notebook shows the same text, laid out: the
assertion in a red box, the steps as a preformatted block whose lines are coloured by what
they are (a choice of the scheduler, a site in the user's code, a released value, a crash),
and the replay command apart, to copy. Parsing keys on the report's fixed phrases; a report
whose shape is not recognised is shown whole, escaped, never dropped.

    >>> html = report_html("hydrolite simulation failed: x\\n\\nAssertionError: a < b\\n\\nReplay this execution: r")
    >>> "AssertionError: a &lt; b" in html and "<code>Replay this execution: r</code>" in html
    True
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

STEPS = "Steps and choices that led here"
NO_STEPS = "(the execution could not be replayed"
REPLAY = "Replay this execution"
BOX = "font-family: var(--jp-code-font-family, monospace); font-size: 12px; padding: 6px 8px; margin: 4px 0"
STYLES = {  # line kind -> inline style (notebooks keep inline styles, not <style> blocks)
    "choice": "color: #7b2cbf; font-weight: bold",
    "tick": "font-weight: bold",
    "site": "color: #1c64b0",
    "value": "color: #2b8a3e",
    "crash": "color: #c92a2a; font-weight: bold",
}


@dataclass
class ReportParts:
    """A report cut into what is shown apart."""

    headline: str
    error: list[str] = field(default_factory=list)
    steps_title: str = ""
    steps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    replay: list[str] = field(default_factory=list)


def split_report(report: str) -> ReportParts | None:
    """The report's parts, or None when its shape is not the one `failure_report` writes."""
    lines = report.splitlines()
    if len(lines) < 3 or lines[1] != "":
        return None
    parts = ReportParts(lines[0])
    i = 2
    while i < len(lines) and not lines[i].startswith((STEPS, NO_STEPS, REPLAY)):
        parts.error.append(lines[i])
        i += 1
    while parts.error and parts.error[-1] == "":
        parts.error.pop()
    if i < len(lines) and lines[i].startswith(STEPS):
        parts.steps_title = lines[i]
        i += 1
        while i < len(lines) and lines[i].startswith(" "):
            parts.steps.append(lines[i])
            i += 1
    while i < len(lines) and not lines[i].startswith(REPLAY):
        parts.notes.append(lines[i])
        i += 1
    parts.replay = lines[i:]
    return parts


def line_kind(line: str) -> str | None:
    """What a step line shows (a key of STYLES), or None for a plain one."""
    text = line.strip()
    if text.startswith("* CRASH"):
        return "crash"
    if text.startswith("* scheduler chose"):
        return "choice"
    if text.startswith("* ran "):
        return "tick"
    if text.startswith("-->"):
        return "site"
    if text.startswith("|  ^"):
        return "value"
    return None


def _steps_html(lines: list[str]) -> str:
    out = []
    for line in lines:
        kind = line_kind(line)
        text = html.escape(line)
        out.append(f'<span style="{STYLES[kind]}">{text}</span>' if kind else text)
    return "\n".join(out)


def report_html(report: str) -> str:
    """The report as one HTML fragment (a notebook output)."""
    parts = split_report(report)
    if parts is None:
        return f'<pre style="{BOX}">{html.escape(report)}</pre>'
    out = [
        '<div class="hydrolite-sim-failure">',
        f'<div style="font-weight: bold; color: #c92a2a">{html.escape(parts.headline)}</div>',
        f'<pre style="{BOX}; background: #fff0f0; border-left: 3px solid #c92a2a">'
        f"{html.escape(chr(10).join(parts.error))}</pre>",
    ]
    if parts.steps_title:
        out.append(f"<details open><summary>{html.escape(parts.steps_title)}</summary>")
        out.append(f'<pre style="{BOX}; background: #f8f9fa">{_steps_html(parts.steps)}</pre></details>')
    out.extend(f"<div><i>{html.escape(note)}</i></div>" for note in parts.notes if note.strip())
    if parts.replay:
        replay = html.escape("\n".join(parts.replay))
        out.append(f'<pre style="{BOX}; background: #eef4ff"><code>{replay}</code></pre>')
    out.append("</div>")
    return "\n".join(out)


def report_markdown(report: str) -> str:
    """The report as Markdown: the headline in bold, the rest as a fenced text block."""
    lines = report.splitlines() or [""]
    fence = "````" if "```" in report else "```"
    return f"**{lines[0]}**\n\n{fence}text\n" + "\n".join(lines[1:]).strip("\n") + f"\n{fence}\n"
