"""Retention of hydrolite's own feed entries under a checkpoint (`retention.py`): which
entries go, when, and what stays. On Spark: tests/spark/test_channel_retention.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hydrolite.planner.spark import retention
from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.feed import FeedWriter, feed_end, list_entries
from hydrolite.planner.spark.ports import FeedInput
from hydrolite.planner.spark.retention import REMOVED_BELOW, FeedRetention, channel_history, removed_below
from hydrolite.planner.spark.runtime import HEARTBEAT, InputSpec
from hydrolite.planner.spark.types import NONE, Prim


def _feed(d: Path, entries: int) -> str:
    w = FeedWriter(str(d), Prim(int))
    for i in range(entries):
        w.send_many([i])
    return str(d)


def _spec(name: str, path: str) -> InputSpec:
    return InputSpec(name, None, FeedInput(path), NONE, None)


def _at(n: int) -> dict[str, int]:
    return {"entries": n}  # a feed offset as Spark logs it


def test_entries_go_once_every_readers_newest_batches_are_past_them(tmp_path: Path) -> None:
    ch = _feed(tmp_path / "ch", 8)
    ins = [_spec("channel:c", ch)]
    r = FeedRetention(2, {ch: {"q1", "q2"}})
    assert r.advance("q1", ins, [_at(2)]) == 0  # q1 has run one batch of 2: its window is not known
    assert r.advance("q1", ins, [_at(4)]) == 0  # q1's newest 2 batches read from 2 on; q2 unknown
    assert r.advance("q2", ins, [None]) == 0
    assert r.advance("q2", ins, [_at(3)]) == 0  # q2's newest 2 batches read from 0 on
    assert sorted(list_entries(ch)) == list(range(8))
    assert r.advance("q2", ins, [_at(6)]) == 2  # q2 from 3 on, q1 from 2 on: 0 and 1 go
    assert sorted(list_entries(ch)) == list(range(2, 8))
    assert removed_below(ch) == 2
    assert r.advance("q1", ins, [_at(7)]) == 1  # q1 from 4 on, q2 from 3 on
    assert sorted(list_entries(ch)) == list(range(3, 8)) and removed_below(ch) == 3


def test_the_highest_entry_stays_so_the_feed_keeps_its_offset(tmp_path: Path) -> None:
    beat = _feed(tmp_path / "heartbeat", 3)
    ins = [_spec(HEARTBEAT, beat)]
    r = FeedRetention(1, {beat: {"q"}})
    assert r.advance("q", ins, [_at(9)]) == 2  # the reader is past every entry
    assert sorted(list_entries(beat)) == [2]
    assert feed_end(beat) == 3  # a heartbeat appended now is entry 3, not 0
    assert FeedWriter(beat, NONE).send_many([]) == 3


def test_a_users_feed_port_and_keep_all_touch_nothing(tmp_path: Path) -> None:
    port, ch = _feed(tmp_path / "port", 4), _feed(tmp_path / "ch", 4)
    r = FeedRetention(1, {ch: {"q"}})
    assert r.advance("q", [_spec("xs", port)], [_at(4)]) == 0  # a source port's feed is the user's
    assert len(list_entries(port)) == 4 and removed_below(port) == 0
    everything = FeedRetention(None, {ch: {"q"}})
    assert everything.advance("q", [_spec("channel:c", ch)], [_at(4)]) == 0
    assert len(list_entries(ch)) == 4 and not (tmp_path / "ch" / REMOVED_BELOW).exists()


def test_the_bound_is_recorded_before_anything_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash midway through the removal leaves the bound recorded: verify never takes a
    removed entry for one that was never written."""
    ch = _feed(tmp_path / "ch", 5)
    seen: list[int] = []

    def crash(path: str) -> None:
        seen.append(removed_below(ch))
        raise OSError("disk gone")

    monkeypatch.setattr(retention.ckfs, "remove", crash)
    with pytest.raises(OSError, match="disk gone"):
        FeedRetention(1, {ch: {"q"}}).advance("q", [_spec("channel:c", ch)], [_at(3)])
    assert seen == [3]


@pytest.mark.parametrize("bad", [0, -1, True, "some", 2.5])
def test_channel_history_refuses_what_is_not_a_count_or_all(bad: object) -> None:
    with pytest.raises(SparkRunError, match=r"channel_history must be an int >= 1 or 'all'.*\n  fix:"):
        channel_history(bad, None)  # type: ignore[arg-type]


def test_channel_history_values() -> None:
    assert channel_history(5, None) == 5
    assert channel_history("all", None) is None


def test_a_long_window_removes_in_steps_of_a_tenth(tmp_path: Path) -> None:
    ch = _feed(tmp_path / "ch", 40)
    ins = [_spec("channel:c", ch)]
    r = FeedRetention(20, {ch: {"q"}})
    assert r.step == 2
    removed = [r.advance("q", ins, [_at(b)]) for b in range(40)]
    # batch b starts at entry b; from batch 19 on the window's oldest start is b - 19, and the
    # entries below it go once it has moved two past the last removal
    assert removed[:21] == [0] * 21 and removed[21:24] == [2, 0, 2]
    assert min(list_entries(ch)) == removed_below(ch) == 20  # the newest 20 batches read from 20 on
