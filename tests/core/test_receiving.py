"""The receiver assertions both backends share (hydrolite/receiving.py), over a receiver
whose outputs are a fixed list: what each assertion accepts and how it words a failure."""

from __future__ import annotations

import pytest

from hydrolite.planner.spark.harness import SparkReceiver
from hydrolite.receiving import NoMoreOutput, ReceiverAssertions
from hydrolite.sim import NoMoreOutput as SimNoMoreOutput


class ListReceiver(ReceiverAssertions[int]):
    """Outputs `items`, then nothing more can come."""

    def __init__(self, items: list[int]) -> None:
        self.port = "out"
        self.items = list(items)

    def next(self) -> int:
        if not self.items:
            raise NoMoreOutput(f"receiver {self.port!r} waited for an output")
        return self.items.pop(0)

    def collect(self) -> list[int]:
        out, self.items = self.items, []
        return out


def test_matching_outputs_pass() -> None:
    ListReceiver([1, 2, 3]).assert_yields_only([1, 2, 3])
    ListReceiver([3, 1, 2]).assert_yields_only_unordered([1, 2, 3])
    r = ListReceiver([1, 2, 3])
    r.assert_yields([1])
    r.assert_yields_unordered([3, 2])
    r.assert_no_more()


def test_a_wrong_output_names_the_item_and_what_was_expected() -> None:
    with pytest.raises(AssertionError, match=r"'out' yielded 5, expected 2 \(item 2 of \[1, 2\]\)"):
        ListReceiver([1, 5]).assert_yields([1, 2])
    with pytest.raises(AssertionError, match=r"yielded unexpected 9; still expected \[2\] \(in any order\)"):
        ListReceiver([1, 9]).assert_yields_unordered([2, 1])
    with pytest.raises(AssertionError, match=r"'out' yielded unexpected \[4\], expected no more outputs"):
        ListReceiver([3, 4]).assert_yields_only([3])


def test_an_early_end_says_what_was_still_expected() -> None:
    with pytest.raises(NoMoreOutput, match=r"'out' ended early: still expected \[2, 3\]"):
        ListReceiver([1]).assert_yields([1, 2, 3])
    with pytest.raises(NoMoreOutput, match=r"ended early: still expected \[3\] \(in any order\)"):
        ListReceiver([1, 2]).assert_yields_unordered([2, 3, 1])


def test_one_no_more_output_class_and_one_set_of_assertions_for_both_backends() -> None:
    assert NoMoreOutput is SimNoMoreOutput
    assert issubclass(NoMoreOutput, AssertionError)  # a failed expectation, as pytest reports it
    for name in ("assert_yields", "assert_yields_unordered", "assert_no_more", "assert_yields_only"):
        assert getattr(SparkReceiver, name) is getattr(ReceiverAssertions, name), name
