"""`nondet(reason)`: the justified marker every non-deterministic observation requires."""

from __future__ import annotations

from dataclasses import dataclass

from ._site import CallSite, capture_site
from .errors import BuildError

_PLACEHOLDERS = frozenset({"todo", "tbd", "fixme", "...", "nondet", "xxx", "?"})


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
    words = reason.strip().lower().rstrip(".:!-")
    if not any(c.isalnum() for c in reason) or words in _PLACEHOLDERS:
        raise BuildError(
            "nondet()",
            required="a non-empty reason that is not a placeholder",
            found=repr(reason),
            fix="say why any of the possible outcomes is acceptable to this program",
            site=site,
        )
    return NonDet(reason.strip(), site)
