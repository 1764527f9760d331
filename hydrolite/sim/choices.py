"""Choosers: where an execution's decisions come from.

An execution is a deterministic function of its *choice sequence*: every time the world
meets a decision with n > 1 options it asks its chooser for an index in [0, n). Exhaustive
exploration is a depth-first walk over choice sequences (replay a prefix, default to 0 after
it, record the branching factors, then bump the last position that has options left);
fuzzing draws choices at random; replay and shrinking follow a recorded sequence.
"""

from __future__ import annotations

import random
from typing import Any


class ReplayDiverged(Exception):
    """A recorded choice sequence does not fit the execution any more (program or test changed)."""


class Chooser:
    """Records the choices made and the number of options at each one."""

    __slots__ = ("choices", "branching")

    def __init__(self) -> None:
        self.choices: list[int] = []
        self.branching: list[int] = []

    def choose(self, n: int) -> int:
        raise NotImplementedError


class PrefixChooser(Chooser):
    """Follow `prefix`, then choose 0. Out-of-range recorded values are clamped (or, when
    `strict`, reported as a diverged replay)."""

    __slots__ = ("prefix", "strict")

    def __init__(self, prefix: list[int], strict: bool = False) -> None:
        super().__init__()
        self.prefix = prefix
        self.strict = strict

    def choose(self, n: int) -> int:
        pos = len(self.choices)
        v = self.prefix[pos] if pos < len(self.prefix) else 0
        if v >= n:
            if self.strict:
                raise ReplayDiverged(
                    f"choice #{pos + 1} of the replayed sequence is {v}, but only {n} options exist here"
                )
            v = n - 1
        self.choices.append(v)
        self.branching.append(n)
        return v


def next_prefix(choices: list[int], branching: list[int]) -> list[int] | None:
    """The depth-first successor of an explored sequence, or None when the tree is exhausted."""
    i = len(choices) - 1
    while i >= 0 and choices[i] + 1 >= branching[i]:
        i -= 1
    if i < 0:
        return None
    return choices[:i] + [choices[i] + 1]


class EagerChooser(Chooser):
    """Always the last option: batches release everything pending, snapshots the newest
    version, the scheduler the last runnable action. One quick, synchronous-looking run."""

    __slots__ = ()

    def choose(self, n: int) -> int:
        self.choices.append(n - 1)
        self.branching.append(n)
        return n - 1


class RandomChooser(Chooser):
    """Uniformly random choices from a seeded generator."""

    __slots__ = ("rng",)

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng

    def choose(self, n: int) -> int:
        v = int(self.rng.random() * n)
        self.choices.append(v)
        self.branching.append(n)
        return v


class DataChooser(Chooser):
    """Choices drawn from Hypothesis (`st.data()`), so Hypothesis can shrink and store them."""

    __slots__ = ("data",)
    _strategies: dict[int, Any] = {}

    def __init__(self, data: Any) -> None:
        super().__init__()
        self.data = data

    def choose(self, n: int) -> int:
        strategy = self._strategies.get(n)
        if strategy is None:
            from hypothesis import strategies as st

            strategy = self._strategies[n] = st.integers(0, n - 1)
        v: int = self.data.draw(strategy)
        self.choices.append(v)
        self.branching.append(n)
        return v
