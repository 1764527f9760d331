"""Shrinking a failing execution to a minimal one: fewest tick runs, then fewest choices,
then the smallest choices (lexicographically).

Two phases, both replaying candidates in plain (unreduced) choice space:

1. *Heuristic*: delete chunks of the sequence (also bumping a neighbour, so one tick run
   can take what several took), then lower single values. Any integer list is a valid
   candidate (missing trailing choices default to 0, out-of-range values are clamped); a
   candidate is kept when it fails the same way (same error type at the same test line and
   operator) with a smaller key (tick runs, length, values).
2. *Exact*: a branch-and-bound depth-first walk of the whole choice tree, abandoning an
   execution as soon as it has more tick runs than the best failure so far, or as many
   runs and more choices (both only grow). When the walk finishes within its budget, the
   result is proven minimal (for small failures it always does); otherwise the report
   says the result was shrunk heuristically.

Fewest tick runs first means a run that released nothing is never left in: removing it
(or letting a neighbouring run take its elements) gives fewer runs, so the minimum has none
unless the failure needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .choices import next_prefix


@dataclass(frozen=True)
class Outcome:
    """One replayed candidate: the choices it consumed (and their option counts), its tick
    runs, and whether it failed the same way as the original failure."""

    choices: list[int]
    branching: list[int]
    runs: int
    same_failure: bool

    @property
    def key(self) -> tuple[int, int, list[int]]:
        return (self.runs, len(self.choices), self.choices)


# attempt(candidate, bound): replay `candidate` (then choice 0); with bound = (runs, length),
# abandon the execution once it has more runs, or as many runs and more choices
Attempt = Callable[[list[int], "tuple[int, int] | None"], Outcome]


@dataclass
class Shrunk:
    """The result: the minimal sequence found, its tick runs, and whether it is proven minimal."""

    choices: list[int]
    runs: int
    proven: bool
    tries: int


def shrink(start: Outcome, attempt: Attempt, budget: int = 400, exact_budget: int = 3_000) -> Shrunk:
    """Minimise a failing execution (`start` must be a same-failure outcome)."""
    best = start
    tries = 0

    def better(candidate: list[int]) -> bool:
        nonlocal best, tries
        if tries >= budget or candidate == best.choices:
            return False
        tries += 1
        got = attempt(candidate, None)
        if got.same_failure and got.key < best.key:
            best = got
            return True
        return False

    improved = True
    while improved and tries < budget:
        improved = False
        size = max(len(best.choices) // 2, 1)
        while size >= 1 and best.choices:
            i = 0
            while i + size <= len(best.choices):
                seq = best.choices
                cut = seq[:i] + seq[i + size :]
                # deleting choices often needs a neighbour to take more (one tick run
                # releasing what several runs released): also try bumping one next to the cut
                bumps = [cut[:j] + [cut[j] + 1] + cut[j + 1 :] for j in (i - 1, i) if 0 <= j < len(cut)]
                if any(better(c) for c in [cut, *bumps]):
                    improved = True
                else:
                    i += 1
            size //= 2
        for i in range(len(best.choices)):
            seq = best.choices
            if i >= len(seq) or seq[i] == 0:
                continue
            for v in dict.fromkeys((0, seq[i] // 2, seq[i] - 1)):
                if v < seq[i] and (better(seq[:i] + [v] + seq[i + 1 :]) or better(seq[:i] + [v])):
                    improved = True
                    break
    best, proven, walked = _exact(best, attempt, exact_budget)
    return Shrunk(best.choices, best.runs, proven, tries + walked)


def _exact(best: Outcome, attempt: Attempt, budget: int) -> tuple[Outcome, bool, int]:
    """Branch and bound over every execution with at most `best`'s runs; proven when done."""
    prefix: list[int] | None = []
    walked = 0
    while prefix is not None:
        if walked >= budget:
            return best, False, walked
        walked += 1
        got = attempt(prefix, (best.runs, len(best.choices)))
        if got.same_failure and got.key < best.key:
            best = got
        prefix = next_prefix(got.choices, got.branching)
    return best, True, walked
