"""Run-time value helpers shared by the evaluators: sentinels, copying, rendering."""

from __future__ import annotations

import re
from typing import Any, Final


class _Sentinel:
    """A named singleton marker (prints as its name)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:  # copying keeps identity
        return self.name


EMPTY: Final = _Sentinel("EMPTY")  # an optional singleton without a value
NOTHING: Final = _Sentinel("NOTHING")  # "no output" from a push (nothing to propagate)
UNSET: Final = _Sentinel("UNSET")  # a singleton input that has produced no version yet


def render(v: Any, limit: int = 8) -> str:
    """A short, deterministic rendering of a released value for traces."""
    if isinstance(v, list):
        items = [render(x, limit) for x in v[:limit]]
        more = f", ... ({len(v)} total)" if len(v) > limit else ""
        return "[" + ", ".join(items) + more + "]"
    if isinstance(v, dict):
        items = [f"{render(k)}: {render(x)}" for k, x in list(v.items())[:limit]]
        more = f", ... ({len(v)} total)" if len(v) > limit else ""
        return "{" + ", ".join(items) + more + "}"
    text = repr(v)
    return text if len(text) <= 200 else text[:197] + "..."


def encode_choices(choices: list[int], reduced: bool = False, crashes: int = 0) -> str:
    """The compact replay string of a choice sequence: `v1:1.0.3`; `v1r:...` when it was
    recorded with partial-order reduction (exhaustive mode), which changes what choices mean;
    `v1c1:...` (`v1rc1:`) when tick runs had crash choices, with that crash budget.
    A run of 4 or more equal choices is written `value*count` (`v1:2.0*37.1`)."""
    parts: list[str] = []
    i = 0
    while i < len(choices):
        j = i
        while j < len(choices) and choices[j] == choices[i]:
            j += 1
        parts.extend([f"{choices[i]}*{j - i}"] if j - i >= 4 else [str(choices[i])] * (j - i))
        i = j
    return "v1" + ("r" if reduced else "") + (f"c{crashes}" if crashes else "") + ":" + ".".join(parts)


_HEAD = re.compile(r"v1(r?)(?:c([1-9][0-9]*))?")


def decode_replay(text: str) -> tuple[list[int], bool, int]:
    """Parse a replay string made by `encode_choices`: (choices, reduced, crash budget)."""
    text = text.strip()
    head, sep, body = text.partition(":")
    m = _HEAD.fullmatch(head)
    if not sep or m is None:
        raise ValueError(f"not a hydrolite replay string (expected 'v1:...', 'v1r:...' or 'v1c1:...'): {text!r}")
    reduced, crashes = m.group(1) == "r", int(m.group(2) or 0)
    if not body:
        return [], reduced, crashes
    out: list[int] = []
    try:
        for part in body.split("."):
            value, star, count = part.partition("*")
            out.extend([int(value)] * (int(count) if star else 1))
    except ValueError:
        raise ValueError(
            f"malformed replay string {text!r}: choices are dot-separated integers (or value*count)"
        ) from None
    if any(c < 0 for c in out):
        raise ValueError(f"malformed replay string {text!r}: choices are non-negative")
    return out, reduced, crashes


def decode_choices(text: str) -> tuple[list[int], bool]:
    """Parse a replay string made by `encode_choices`: (choices, reduced); see `decode_replay`
    for the crash budget."""
    choices, reduced, _ = decode_replay(text)
    return choices, reduced
