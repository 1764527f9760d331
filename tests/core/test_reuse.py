"""`planner.spark.reuse`: a Column built for one micro-batch is reused in the next only
while everything it was built from is unchanged — the same input objects, and the same
values behind the translated function's free names (a stale literal would be a silent
wrong answer). No Spark here: identity and keys only."""

from __future__ import annotations

import types
from typing import Any

from hydrolite.planner.spark import reuse
from hydrolite.planner.spark.reuse import derived, free_values

LIMIT = 3
ITEMS = [1, 2]


class Settings:
    """A class whose attribute a lambda may read (`Settings.CUT`)."""

    CUT = 10


def test_a_changed_global_changes_the_key() -> None:
    global LIMIT
    f = lambda v: v > LIMIT  # noqa: E731
    before = free_values(f)
    LIMIT = 4
    try:
        assert free_values(f) != before
    finally:
        LIMIT = 3
    assert free_values(f) == before


def test_a_grown_list_changes_the_key() -> None:
    f = lambda v: v in ITEMS  # noqa: E731
    before = free_values(f)
    ITEMS.append(3)
    try:
        assert free_values(f) != before
    finally:
        ITEMS.pop()


def test_a_closure_cell_is_watched_too() -> None:
    cut = 1
    f = lambda v: v > cut  # noqa: E731
    before = free_values(f)
    cut = 2
    assert free_values(f) != before


def test_attributes_read_from_a_module_or_class_are_watched() -> None:
    cfg = types.ModuleType("cfg")
    cfg.LIMIT = 5  # type: ignore[attr-defined]
    f = lambda v: v > cfg.LIMIT + Settings.CUT  # noqa: E731
    before = free_values(f)
    cfg.LIMIT = 6  # type: ignore[attr-defined]
    assert free_values(f) != before
    cfg.LIMIT = 5  # type: ignore[attr-defined]
    assert free_values(f) == before
    Settings.CUT = 11
    try:
        assert free_values(f) != before
    finally:
        Settings.CUT = 10


def test_an_object_whose_state_may_change_unseen_is_never_reused() -> None:
    box = types.SimpleNamespace(limit=3)
    assert free_values(lambda v: v > box.limit) is None


def test_an_attribute_named_like_a_global_is_not_watched() -> None:
    assert free_values(lambda v: v.LIMIT) == ()


def test_derived_reuses_for_the_same_objects_only(monkeypatch: Any) -> None:
    monkeypatch.setattr(reuse, "LIMIT", 2)
    a, b, c = object(), object(), object()
    built: list[str] = []

    def build(name: str) -> Any:
        def make() -> str:
            built.append(name)
            return name

        return make

    assert derived(("t",), [a], build("a")) == "a"
    assert derived(("t",), [a], build("a again")) == "a"  # reused
    assert derived(("u",), [a], build("other tag")) == "other tag"
    assert derived(("t",), [b], build("b")) == "b"
    assert derived(("t",), [c], build("c")) == "c"  # past the limit: the oldest entries go
    assert derived(("t",), [a], build("a rebuilt")) == "a rebuilt"
    assert built == ["a", "other tag", "b", "c", "a rebuilt"]
    unhashable: Any = ({"a": 1},)
    assert derived(unhashable, [a], build("no key")) == "no key"


def test_a_record_class_built_in_the_function_keeps_it_reusable() -> None:
    from typing import NamedTuple

    class Point(NamedTuple):
        x: int
        y: int

    key = free_values(lambda e: Point(e.x, e.y))
    assert key is not None and len(key) == 1, key  # watched by identity (its fields are descriptors)
    entry: Any = key[0]
    assert entry[:2] == ("Point", Point)
