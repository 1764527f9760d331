"""Failure reports: the assertion, then the steps and choices that led to it, each pointing
at the user's file:line and code, then one line telling how to replay that execution."""

from __future__ import annotations

import os
import shlex
from typing import Any

from ..ir.nodes import Node
from .values import render

REPLAY_ENV = "HYDROLITE_SIM_REPLAY"


def _where(node: Node) -> list[str]:
    nd = getattr(node, "nondet", None)
    why = f'  nondet("{nd.reason}")' if nd is not None else ""
    lines = [f"--> {node.site}  {node.op}(){why}"]
    code = node.site.code
    if code:
        lines.append(f" |  {code}")
    return lines


def _released(node: Node, value: Any, note: str) -> str:
    if node.op == "batch":
        what = f"released {render(value)}" if value else "released nothing"
    elif node.op == "snapshot":
        what = f"released {render(value)}"
    elif isinstance(value, list) and node.op == "assume_ordering":
        what = f"ordered {render(value)}"
    else:
        what = f"released {render(value)}"
    return f" |  ^ {what}" + (f"  ({note})" if note else "")


def format_trace(events: list[tuple[Any, ...]]) -> list[str]:
    """Render trace events (see `World`) as indented lines."""
    out: list[str] = []
    for ev in events:
        tag = ev[0]
        if tag == "send":
            out.append(f"  sent {render(ev[3])} to {ev[1]!r}" + _on(ev[2]))
        elif tag == "recv":
            out.append(f"  received {render(ev[3])} from {ev[1]!r}" + _on(ev[2]))
        elif tag == "choice":
            labels, i = ev[1], ev[2]
            others = [x for j, x in enumerate(labels) if j != i]
            out.append(f"  * scheduler chose to {labels[i]} (instead of: {'; '.join(others)})")
        elif tag == "tick":
            out.append(f"  * ran {ev[1]} on {ev[2]} (run #{ev[3]})")
        elif tag == "release":
            out.extend("      " + line for line in _where(ev[1]) + [_released(ev[1], ev[2], ev[3])])
        elif tag == "deliver":
            out.append(f"  * delivered {render(ev[4])} from {ev[2]} to {ev[3]}")
            out.extend("      " + line for line in _where(ev[1]))
        elif tag == "order":
            out.append(f"  * released the next element of assume_ordering() on {ev[2]}")
    return out


def _on(place: str) -> str:
    return "" if place.startswith("Process[") else f" on {place}"


def replay_line(encoded: str) -> str:
    """One line telling how to replay exactly this execution."""
    current = os.environ.get("PYTEST_CURRENT_TEST")
    if current:
        test_id = current.rsplit(" (", 1)[0]
        return f"Replay this execution: {REPLAY_ENV}={encoded} pytest {shlex.quote(test_id)}"
    return f"Replay this execution: sim.replay(scenario, {encoded!r})  (or set {REPLAY_ENV}={encoded})"


def failure_report(
    headline: str,
    error: BaseException,
    trace: list[tuple[Any, ...]] | None,
    choices: list[int],
    encoded: str,
    notes: list[str],
) -> str:
    """The full text of a failed execution."""
    lines = [headline, "", f"{type(error).__name__}: {error}", ""]
    if trace is None:
        lines.append(f"(the execution could not be replayed to show its steps; choices: {encoded})")
    else:
        lines.append(f"Steps and choices that led here ({len(choices)} choice{'s' if len(choices) != 1 else ''}):")
        lines.extend(format_trace(trace) or ["  (no steps: the failure needs no choice)"])
    lines.extend(notes)
    lines.append(replay_line(encoded))
    return "\n".join(lines)
