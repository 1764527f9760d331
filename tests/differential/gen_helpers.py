"""Functions the generated programs call that do not translate to Spark Columns (they run
in Python through Arrow, next to translated lambdas). Total on small ints and pairs, and on
the floats a fold declared `acc_type=float` or `int | float` passes on; each returns what its
annotation declares (`int(...)` where a float may come in), as both backends require."""

from __future__ import annotations


def digit_sum(x: int) -> int:
    return sum(int(c) for c in str(abs(int(x)))) * (1 if x >= 0 else -1)  # (total on a float key's sums too)


def bool_or_int(x: int) -> int | bool:
    """`x`, or `True` when `x` is odd: results of two types, which Python keeps apart (`True` is
    not `1` to `str()`) and a Spark column of one type would not (annotated, so that Spark keeps
    each as it is, whether or not its source can be read: generated programs' cannot). Odd
    values are half of the small inputs the generator draws, so most programs meet a `True`."""
    return True if x % 2 == 1 else x


def odd_py(x: int) -> bool:
    return [c for c in str(abs(x))][-1] in "13579"


def halve_even(x: int) -> int | None:
    return int(x) // 2 if x % 2 == 0 else None


def digits(x: int) -> list[int]:
    return [int(c) for c in str(abs(int(x)))]


def mix_py(a: int, x: int) -> int:
    return int(str(abs(int(a)) % 1000) + str(abs(int(x)) % 10))


def key_py(x: int) -> tuple[int, int]:
    return (int(str(abs(x))[-1]) % 3, int(x))


def pair_py(t: tuple[int, int]) -> int:
    return int(f"{abs(int(t[0])) % 10}{abs(int(t[1])) % 100}")


def key_forms(x: int) -> tuple[float, int]:
    """(x % 3, x) with the key in one of the forms Python holds equal — 0, 0.0, -0.0; 1, 1.0,
    True; 2, 2.0 — so that a state keeps them as one key on every backend (`grouping.py`).
    Declared `float`: both backends hold each key as a float (`port_values.declared_result`),
    so the forms that reach a state are 0.0 and -0.0, 1.0, 2.0. (Annotated with the kinds it
    returns, `tuple[int | float, int]`, the keys stay pickled in their forms; the strict
    comparison then finds divergences of such keys that are still open: see the planner
    README, "Which keys are one key".)"""
    k = int(x) % 3  # (int(): total on the floats an `int_forms` or a float fold passes on)
    forms: tuple[float, ...] = ((0, 0.0, -0.0), (1, 1.0, True), (2, 2.0, 2))[k]
    return forms[(int(x) // 3) % 3], int(x)


def key_objects(x: int) -> tuple[object, int]:
    """`key_forms`' keys declared `object`: pickled, each in its own form (0, 0.0, -0.0; 1, 1.0,
    True), so every state, distinct step and join meets forms Python holds equal in one batch
    and must group them as one (`by_value.py` on the driver, `grouping.canonical` on the
    executors) and show the form the simulator shows. Key 2 is a pair of equal strings, either
    one string object twice or two objects: pickle's memo wrote those apart (`grouping.plain_bytes`)."""
    key, v = key_forms(x)
    if key != 2:
        return key, v
    s = "".join(["k", "2"])  # (made here: an object of its own, not the interned constant)
    return ((s, s) if (int(x) // 3) % 2 else (s, "".join(["k", "2"]))), v


def int_forms(x: int) -> object:
    """`x` in one of the forms Python holds equal to it (`x`, `float(x)`; `-0.0` for 0; `True`
    for 1), declared `object`: kept pickled, each as it is."""
    forms: tuple[object, ...] = (x, float(x), -0.0 if x == 0 else True if x == 1 else x)
    return forms[int(abs(x)) % 3]
