"""`nondet(reason)`: the justified marker every non-deterministic observation requires."""

from __future__ import annotations

from dataclasses import dataclass

from ._site import CallSite, capture_site
from .errors import BuildError

# Reasons that stand in for a justification, compared after strip + casefold with runs of
# whitespace made one space and trailing ":.!-" removed. The one list: `nondet()` rejects
# them at build time and hydrolite-lint reports them as HL003 before the program runs.
PLACEHOLDERS = frozenset(
    {
        *("todo", "tbd", "tba", "fixme", "xxx", "hack", "wip", "later", "placeholder"),
        *("...", "…", "?", "??", "???", "-", "--", "_", "x"),
        *("nondet", "non-det", "nondeterministic", "non-deterministic"),
        *("reason", "why", "because", "explain", "fill me", "fill in"),
        *("n/a", "na", "none", "null", "test", "temp", "tmp", "ok", "fine", "whatever", "idk"),
    }
)
# ... and reasons that begin with one of these as a word ("TODO - fill in", "fixme: later").
PLACEHOLDER_PREFIXES = ("todo", "tbd", "fixme", "xxx")


def is_placeholder(reason: str) -> bool:
    """True when `reason` is a stand-in rather than a justification (see PLACEHOLDERS)."""
    norm = " ".join(reason.strip().casefold().split()).rstrip(":.!-")
    if not any(c.isalnum() for c in norm) or norm in PLACEHOLDERS:
        return True
    return any(
        norm.startswith(prefix) and (len(norm) == len(prefix) or not norm[len(prefix)].isalnum())
        for prefix in PLACEHOLDER_PREFIXES
    )


@dataclass(frozen=True)
class NonDet:
    """A token saying why a non-deterministic choice is acceptable here."""

    reason: str
    site: CallSite

    def __str__(self) -> str:
        return f"nondet({self.reason!r})"


def nondet(reason: str) -> NonDet:
    """Justify a non-deterministic observation (batch boundary, snapshot version, ...).

    The reason must be a real sentence: empty, blank or placeholder reasons are rejected.
    """
    site = capture_site()
    if not isinstance(reason, str):
        raise BuildError(
            "nondet()",
            required="a string explaining why the non-determinism is acceptable",
            found=f"{type(reason).__name__} {reason!r}",
            fix='write nondet("queries may be answered in any grouping")',
            site=site,
        )
    if is_placeholder(reason):
        raise BuildError(
            "nondet()",
            required="a non-empty reason that is not a placeholder",
            found=repr(reason),
            fix="say why any of the possible outcomes is acceptable to this program",
            site=site,
        )
    return NonDet(reason.strip(), site)
