"""Found by run_long seed 0: a plain snapshot (in another tick) of a count that an align
point moved into t1 read it through the alignment pass's latest() bridge, which had no
version until t1 ran: the simulator blocked the reading tick, Spark ran it with an empty
singleton. The bridge now carries the count's initial version from the start (both
backends), as the count had before alignment."""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet

def digit_sum(x: int) -> int:
    return sum(int(c) for c in str(abs(x))) * (1 if x >= 0 else -1)


def odd_py(x: int) -> bool:
    return [c for c in str(abs(x))][-1] in "13579"


def halve_even(x: int) -> int | None:
    return x // 2 if x % 2 == 0 else None


def digits(x: int) -> list[int]:
    return [int(c) for c in str(abs(x))]


def mix_py(a: int, x: int) -> int:
    return int(str(abs(a) % 1000) + str(abs(x) % 10))


def key_py(x: int) -> tuple[int, int]:
    return (int(str(abs(x))[-1]) % 3, x)


def pair_py(t: tuple[int, int]) -> int:
    return int(f"{abs(t[0]) % 10}{abs(t[1]) % 100}")


class P:
    pass


ND = nondet("generated: any batching is legal")


def build() -> hl.Flow:
    flow = hl.FlowBuilder("gen")
    p = flow.process(P)
    t1 = p.tick()
    t2 = p.tick()
    xs = p.source("xs", int)
    ys = p.source("ys", int)
    al = p.local_align_point()
    v1 = ys.release_aligned(al)
    v2 = ys.count()
    v3 = v2.snapshot_aligned(t1, al, ND)
    v4 = ys.map(lambda x: (x % 2, x * 10)).into_keyed().fold_commutative(0, lambda a, x: a + x)
    v5 = v4.snapshot_aligned(t1, al, ND)
    v6 = v2.snapshot(t2, ND)
    v7 = ys.count()
    v8 = v7.snapshot(t2, ND)
    v1.sink("ack")
    v5.entries().all_ticks().sink("aligned")
    v1.sink("o0")
    v2.snapshot(t1, ND).into_stream().all_ticks().sink("o1")
    v3.into_stream().all_ticks().sink("o2")
    v5.entries().all_ticks().sink("o3")
    v6.into_stream().all_ticks().sink("o4")
    v7.snapshot(t1, ND).into_stream().all_ticks().sink("o5")
    v8.into_stream().all_ticks().sink("o6")
    return flow.finalize()


STEPS = [{'ys': [0, 1, 6], 'ws': ['mbm', '', 'b']}, {'xs': [7, 1, 1], 'ys': [7, 1, 4, 8], 'ks': [('c', 1), ('c', 5)], 'ws': ['m', 'azm', 'm', 'b']}, {'ys': [10, 4, 7, 1], 'ws': ['a']}]
