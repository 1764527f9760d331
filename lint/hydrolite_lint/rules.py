"""The rule table (codes, names, summaries, which have autofixes) and the API vocabulary.

The vocabulary is the set of hydrolite method names the checks recognise by name: the
linter cannot know types, so a method call is identified by its attribute name alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .vocabulary import api_methods


@dataclass(frozen=True)
class Rule:
    """One lint rule: its code, a short kebab-case name, a one-line summary, autofix or not."""

    code: str
    name: str
    summary: str
    fixable: bool = False


RULES: dict[str, Rule] = {
    r.code: r
    for r in (
        Rule("HL000", "syntax-error", "the file does not parse (always reported, cannot be ignored)"),
        Rule("HL001", "nondet-missing-reason", "nondet() is called without a reason"),
        Rule("HL002", "nondet-empty-reason", "the nondet reason is empty or blank"),
        Rule(
            "HL003",
            "nondet-placeholder-reason",
            'the nondet reason is a placeholder ("TODO", "...", "nondet", "tbd", ...)',
        ),
        Rule("HL004", "nondet-non-literal-reason", "the nondet reason is not a string literal", fixable=True),
        Rule(
            "HL010",
            "nondet-not-at-call",
            "a nondet token is stored in a variable, returned or built away from the call that consumes it",
            fixable=True,
        ),
        Rule("HL011", "nondet-reused", "one nondet token is consumed by more than one call (or by a call in a loop)"),
        Rule(
            "HL012", "nondet-wrong-call", "a nondet token is passed to a call (or an argument) that does not take one"
        ),
        Rule("HL020", "align-point-unused", "an align point is never used"),
        Rule(
            "HL021",
            "align-point-no-op",
            "an align point can only be a no-op (only release_aligned/aligned_at, or one aligned read and no release)",
        ),
        Rule(
            "HL030",
            "latest-then-snapshot",
            ".latest() followed by .snapshot(): the snapshot is not consistent with the tick it came from",
        ),
        Rule(
            "HL031",
            "end-atomic-then-snapshot",
            ".end_atomic().snapshot(): the legacy pattern loses consistency at end_atomic()",
        ),
        Rule(
            "HL032",
            "tick-entanglement",
            "a query is batched into another computation's tick only to read its state consistently",
        ),
        Rule(
            "HL033",
            "unaligned-multi-read",
            "two plain snapshots of state with a common upstream are combined in one tick (zip, cross_singleton)",
        ),
        Rule("HL040", "legacy-atomic", "atomic()/end_atomic() do not exist in hydrolite: rewrite with an align point"),
    )
}

SYNTAX_ERROR = "HL000"

# Calls that take a nondet, with the 0-based index of the nondet among positional arguments,
# and the public hydrolite methods that take none: derived from the live API's signatures.
NONDET_METHODS, NON_NONDET_METHODS = api_methods()
NONDET_KEYWORD = "nondet"

ALIGNED_READS = frozenset({"batch_aligned", "snapshot_aligned"})
ALIGN_RELEASE = "release_aligned"
ALIGN_TAG = "aligned_at"
ALIGN_FACTORY = "local_align_point"

# Element-wise singleton transforms that keep "the value read back from a tick" intact.
SINGLETON_PASSTHROUGH = frozenset({"map", "filter", "filter_map", "inspect", "unwrap_or", "into_singleton"})

# State-reading combinators: (method, which side is the query: "receiver" or "argument").
STATE_READS: dict[str, str] = {
    "cross_singleton": "receiver",
    "lookup_keyed_singleton": "receiver",
    "get_many_if_present": "argument",
}


def code_matches(code: str, patterns: Iterable[str]) -> bool:
    """flake8/ruff-style prefix selection: "HL" matches every rule, "HL01" the HL01x rules."""
    return any(code.startswith(p) for p in patterns)


def enabled_codes(select: Iterable[str], ignore: Iterable[str]) -> frozenset[str]:
    """The rule codes left after applying select and then ignore (HL000 is always on)."""
    sel, ign = list(select), list(ignore)
    on = {c for c in RULES if code_matches(c, sel) and not code_matches(c, ign)}
    return frozenset(on | {SYNTAX_ERROR})


def unknown_patterns(patterns: Iterable[str]) -> list[str]:
    """Patterns that select no rule at all (a typo in config or on the command line)."""
    return [p for p in patterns if not any(c.startswith(p) for c in RULES)]
