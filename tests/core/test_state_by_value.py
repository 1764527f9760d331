"""The driver's store matches pickled keys by value (`BatchState(by_value=True)`).

On the driver path a key whose type hydrolite does not know reaches the store as whatever
the user's function returned: `1` in one batch, `True` or `1.0` in the next. Python's dict in
the simulator holds them as one key (shown in the form it first came in); a store keyed by
each form's pickled bytes kept one entry per form and answered from a part of the state,
silently. These tests run the store (SQLite in a local directory, no Spark) against a dict
over generated batches, replays and a checkpoint written before the index existed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hydrolite.planner.spark.state import StateStore

_AB = "".join(["a", "b"])  # (a str object of its own: equal to "ab", not the same object)
FORMS: list[Any] = [0, 0.0, -0.0, False, 1, 1.0, True, "a", (1, "a"), (1.0, "a"), (True, "a"), frozenset({1})]
# one key whose two strings are one object, and the same key made of two: pickle's memo wrote them apart
FORMS += [(_AB, _AB), (_AB, "".join(["a", "b"]))]


def _batch(store: StateStore, b: int, adds: list[tuple[Any, int]]) -> dict[Any, Any]:
    """One batch of a keyed sum over `adds` (one form per key in a batch, as the driver path
    guarantees); what a reader of the whole state sees after it."""
    bs = store.begin(b)
    keys = list(dict.fromkeys(k for k, _ in adds))
    firsts = dict(zip(keys, bs.first_forms("sum", keys)))
    old = bs.get_many("sum", keys, by_value=True)
    updates: dict[Any, int] = {}
    for k, x in adds:
        updates[firsts[k]] = updates.get(firsts[k], old.get(k, 0)) + x
    bs.put_many("sum", updates, by_value=True)
    bs.commit()
    return dict(store.begin(b + 1).scan("sum"))


def _one_form_per_key(adds: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
    form: dict[Any, Any] = {}
    return [(form.setdefault(k, k), x) for k, x in adds]


batches = st.lists(
    st.lists(st.tuples(st.sampled_from(FORMS), st.integers(-5, 5)), max_size=6).map(_one_form_per_key),
    min_size=1,
    max_size=6,
)


@settings(max_examples=80, deadline=None)
@given(batches=batches, replay=st.integers(0, 5))
def test_equal_keys_in_other_forms_find_one_entry(tmp_path_factory: Any, batches: list[Any], replay: int) -> None:
    """After every batch the store holds exactly the dict's items, keys in their first form
    (compared by repr: `1` and `True` are different answers to a user); a batch replayed
    after a crash answers the same."""
    store = StateStore(str(tmp_path_factory.mktemp("st")))
    model: dict[Any, int] = {}
    try:
        for b, adds in enumerate(batches):
            for k, x in adds:
                model[k] = model.get(k, 0) + x
            got = _batch(store, b, adds)
            assert sorted(map(repr, got.items())) == sorted(map(repr, model.items()))
        if replay < len(batches):  # (the last batch again: it reads the versions before it)
            before = dict(store.begin(len(batches)).scan("sum"))
            again = _batch(store, len(batches) - 1, batches[-1])
            assert sorted(map(repr, again.items())) == sorted(map(repr, before.items()))
    finally:
        store.close()


def test_a_state_written_before_the_index_is_indexed_on_first_use(tmp_path: Path) -> None:
    """A checkpoint of an older hydrolite holds entries under their own bytes and no index:
    its keys are found by value from the first batch on, in the form they were stored in."""
    store = StateStore(str(tmp_path / "st"))
    try:
        bs = store.begin(0)
        bs.put_many("sum", {True: 5, (1, "a"): 7})  # (as before: no index)
        bs.commit()
        bs = store.begin(1)
        assert bs.get_many("sum", [1.0, (True, "a"), 2], by_value=True) == {1.0: 5, (True, "a"): 7}
        assert bs.first_forms("sum", [1.0, 2]) == [True, 2]
        assert repr(bs.first_forms("sum", [1.0])[0]) == "True"
        bs.put_many("sum", {1: 6}, by_value=True)
        bs.commit()
        assert sorted(map(repr, store.begin(2).scan("sum"))) == ["((1, 'a'), 7)", "(True, 6)"]
    finally:
        store.close()


def test_a_read_of_an_absent_key_adds_no_entry(tmp_path: Path) -> None:
    """Looking a key up (a lookup's request) indexes nothing: a later put of another form of
    it is its first form."""
    store = StateStore(str(tmp_path / "st"))
    try:
        bs = store.begin(0)
        assert bs.get_many("sum", [True], by_value=True) == {}
        assert bs.first_forms("sum", [True]) == [True]
        bs.put_many("sum", {1.0: 3}, by_value=True)
        bs.commit()
        bs = store.begin(1)
        assert [repr(k) for k in bs.first_forms("sum", [True, 1])] == ["1.0", "1.0"]
        assert bs.get_many("sum", [True], by_value=True) == {True: 3}
    finally:
        store.close()


def test_an_index_of_an_earlier_grouping_is_rebuilt(tmp_path: Path, monkeypatch: Any) -> None:
    """A checkpoint whose index was written under "python-eq-1" (each key's canonical form
    pickled with pickle's memo, so a key holding one string object twice had other bytes than
    the same key made of two) is indexed again on first use, under this grouping's bytes: its
    keys are found whatever objects they are made of, and no key gets a second entry."""
    import pickle

    from hydrolite.planner.spark import state
    from hydrolite.planner.spark.grouping import canonical

    shared = (_AB, _AB)
    with monkeypatch.context() as m:  # (what python-eq-1 wrote)
        m.setattr(state, "_INDEXED", b"__indexed__")
        m.setattr(state, "group_bytes", lambda x: pickle.dumps(canonical(x), protocol=5))
        store = StateStore(str(tmp_path / "st"))
        bs = store.begin(0)
        bs.put_many("sum", {shared: 5, ("cd", 1): 7}, by_value=True)
        bs.commit()
        store.close()
    store = StateStore(str(tmp_path / "st"))
    try:
        bs = store.begin(1)
        two = ("".join(["a", "b"]), "".join(["a", "b"]))  # (two objects: its old bytes differ from shared's)
        assert bs.get_many("sum", [two, ("cd", 1.0)], by_value=True) == {two: 5, ("cd", 1.0): 7}
        bs.put_many("sum", {two: 6}, by_value=True)
        bs.commit()
        assert sorted(map(repr, store.begin(2).scan("sum"))) == ["(('ab', 'ab'), 6)", "(('cd', 1), 7)"]
    finally:
        store.close()
