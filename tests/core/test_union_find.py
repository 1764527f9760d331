"""The one union-find (hydrolite/ir/union_find.py): the sets are the connected components of
the unions, and each is represented by its least member whatever the order of the unions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hydrolite.ir.union_find import UnionFind

pairs = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=30)


def _components(edges: list[tuple[int, int]]) -> dict[int, int]:
    """Each item's least connected item, by repeated relaxation (the obviously right answer)."""
    least = {x: x for e in edges for x in e}
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            m = min(least[a], least[b])
            if least[a] != m or least[b] != m:
                least[a] = least[b] = m
                changed = True
    return least


@given(pairs, st.data())
def test_sets_are_the_components_with_the_least_member_first(edges: list[tuple[int, int]], data: st.DataObject) -> None:
    want = _components(edges)
    for order in (edges, data.draw(st.permutations(edges), label="the same unions in another order")):
        uf: UnionFind[int] = UnionFind(rank=lambda i: i)
        for a, b in order:
            uf.union(a, b)
        assert {x: uf.find(x) for x in uf.items()} == want


def test_items_are_listed_in_first_seen_order_and_find_adds_a_singleton() -> None:
    uf: UnionFind[str] = UnionFind(rank=len)
    uf.union("ccc", "a")
    assert uf.find("bb") == "bb"
    assert uf.items() == ["ccc", "a", "bb"] and uf.find("ccc") == "a"
