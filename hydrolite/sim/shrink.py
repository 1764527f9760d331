"""Shrinking a failing choice sequence to a minimal one (shortest, then smallest values).

Candidates are replayed: missing trailing choices default to 0 and out-of-range values are
clamped, so any integer list is a valid candidate. A candidate is kept when it fails the
same way (same error type at the same line) and its *consumed* sequence is smaller.
"""

from __future__ import annotations

from typing import Callable

Attempt = Callable[[list[int]], "list[int] | None"]


def _smaller(a: list[int], b: list[int]) -> bool:
    return (len(a), a) < (len(b), b)


def shrink(choices: list[int], attempt: Attempt, budget: int = 400) -> list[int]:
    """Minimise `choices`; `attempt(c)` returns the consumed sequence if `c` still fails."""
    best = list(choices)
    tries = 0

    def better(candidate: list[int]) -> bool:
        nonlocal best, tries
        if tries >= budget or candidate == best:
            return False
        tries += 1
        got = attempt(candidate)
        if got is not None and _smaller(got, best):
            best = got
            return True
        return False

    improved = True
    while improved and tries < budget:
        improved = False
        size = max(len(best) // 2, 1)
        while size >= 1 and best:
            i = 0
            while i + size <= len(best):
                cut = best[:i] + best[i + size :]
                # deleting choices often needs a neighbour to take more (e.g. one tick run
                # releasing what several runs released): also try bumping one next to the cut
                bumps = [cut[:j] + [cut[j] + 1] + cut[j + 1 :] for j in (i - 1, i) if 0 <= j < len(cut)]
                if any(better(c) for c in [cut, *bumps]):
                    improved = True
                else:
                    i += 1
            size //= 2
        for i in range(len(best)):
            if i >= len(best) or best[i] == 0:
                continue
            for v in dict.fromkeys((0, best[i] // 2, best[i] - 1)):
                if i < len(best) and v < best[i] and (better(best[:i] + [v] + best[i + 1 :]) or better(best[:i] + [v])):
                    improved = True
                    break
    return best
