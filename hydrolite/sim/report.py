"""Failure reports: the assertion, then the steps and choices that led to it, each pointing
at the user's file:line and code, then one line telling how to replay that execution."""

from __future__ import annotations

import os
import shlex
import sys
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
        elif tag == "edge":
            out.append(f"  * delivered {render(ev[4])} on {ev[1]}" + _on(ev[2]))
            out.extend("      " + line for line in _where(ev[3]))
        elif tag == "crash":
            out.append(
                f"  * CRASH at {ev[1]}: the process restarted from its last committed micro-batch; "
                "the crashed one was replayed with the same input"
            )
            for node in ev[2]:
                out.extend("      " + line for line in _where(node))
    return out


MAX_TRACE_LINES = 400


def _elide(lines: list[str], limit: int = MAX_TRACE_LINES) -> list[str]:
    """Keep a report readable: the first and last steps of a very long execution."""
    if len(lines) <= limit:
        return lines
    half = limit // 2
    return lines[:half] + [f"  ... ({len(lines) - 2 * half} lines of steps omitted) ..."] + lines[-half:]


def _on(place: str) -> str:
    return "" if place.startswith("Process[") else f" on {place}"


def _ref(obj: Any) -> tuple[str, str] | None:
    """(where to import it from, its name there) for a module-level function, else None.

    The place is a path relative to the working directory when the module is a file the
    shell can name (always for `__main__`), otherwise the dotted module name."""
    qual = getattr(obj, "__qualname__", "")
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    if not qual or "<" in qual or module is None:
        return None
    path = getattr(module, "__file__", None)
    if path and (module.__name__ == "__main__" or not os.path.relpath(path).startswith("..")):
        return os.path.relpath(path), qual  # a file under the working directory: name it
    if module.__name__ == "__main__":
        return None
    return module.__name__, qual


def _python_name(ref: tuple[str, str] | None, default: str) -> str:
    """`module.function` as a reader would import it (`counter_naive.build`)."""
    if ref is None:
        return default
    where, qual = ref
    if where.endswith(".py"):
        where = os.path.splitext(os.path.basename(where))[0]
    return qual if where == "__main__" else f"{where.rsplit('.', 1)[-1]}.{qual}"


def replay_line(
    encoded: str, flow_source: Any = None, scenario: Any = None, cluster_sizes: Any = None, model: Any = None
) -> str:
    """One line telling how to replay exactly this execution.

    Under pytest: the environment variable and the test id. Elsewhere: the shell command
    `hydrolite sim FILE:SCENARIO --replay ...` when the scenario is a module-level function
    (naming the program with --program when the scenario's module has no build()), and the
    Python call `hydrolite.sim.replay(build, scenario, ...)`, which always exists. `model`:
    the simulator's model options that were on (`interleavings`, `per_key_snapshots`)."""
    model = [k for k, on in dict(model or {}).items() if on]
    current = os.environ.get("PYTEST_CURRENT_TEST")
    if current:
        test_id = current.rsplit(" (", 1)[0]
        return f"Replay this execution: {REPLAY_ENV}={encoded} pytest {shlex.quote(test_id)}"
    scen, flow = _ref(scenario), _ref(flow_source)
    sizes = f", cluster_sizes={dict(cluster_sizes)!r}" if cluster_sizes else ""
    sizes += "".join(f", {k}=True" for k in model)
    py_flow = _python_name(flow, "flow")
    py_scen = _python_name(scen, "scenario")
    hint = f"Replay this execution: hydrolite.sim.replay({py_flow}, {py_scen}, {encoded!r}{sizes})"
    if scen is None:
        return hint + f"  (or set {REPLAY_ENV}={encoded})"
    cmd = ["hydrolite", "sim", f"{scen[0]}:{scen[1]}"]
    module = sys.modules.get(getattr(scenario, "__module__", "") or "")
    decorated = (
        getattr(getattr(module, scen[1], None), "_hydrolite_sim", None) is not None
    )  # @sim.exhaustive knows its flow
    if (
        not decorated
        and flow is not None
        and not (flow[1] == "build" and getattr(module, "build", None) is flow_source)
    ):
        cmd += ["--program", f"{flow[0]}:{flow[1]}"]
    for tag, size in dict(cluster_sizes or {}).items():
        cmd += ["--cluster-size", f"{tag}={size}"]
    cmd += ["--" + k.replace("_", "-") for k in model]
    cmd += ["--replay", encoded]
    return f"{hint}\n  or from the shell: {shlex.join(cmd)}"


def failure_report(
    headline: str,
    error: BaseException,
    trace: list[tuple[Any, ...]] | None,
    choices: list[int],
    encoded: str,
    notes: list[str],
    replay: str | None = None,
) -> str:
    """The full text of a failed execution."""
    lines = [headline, "", f"{type(error).__name__}: {error}", ""]
    if trace is None:
        lines.append(f"(the execution could not be replayed to show its steps; choices: {encoded})")
    else:
        lines.append(f"Steps and choices that led here ({len(choices)} choice{'s' if len(choices) != 1 else ''}):")
        lines.extend(_elide(format_trace(trace)) or ["  (no steps: the failure needs no choice)"])
    lines.extend(notes)
    lines.append(replay if replay is not None else replay_line(encoded))
    return "\n".join(lines)
