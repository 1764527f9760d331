"""The test files go to the xdist workers longest first (tests/xdist_order.py)."""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling, LoadScopeScheduling
from xdist_order import DURATIONS, LongestFileFirst, longest, recorded, write_from_log

LOG = """
============================= slowest durations ==============================
104.62s setup    tests/spark/test_local_cluster.py::test_runs[user_kv]
80.60s call     tests/spark/test_s3a_checkpoint.py::test_crashed_runs_resume
20.00s call     tests/spark/test_local_cluster.py::test_runs[kvstore]
0.50s teardown tests/spark/test_local_cluster.py::test_runs[kvstore]
0.01s call     hydrolite/ir/stable.py::hydrolite.ir.stable.stable_id
(3 durations < 0.005s hidden.  Use -vv to show these durations.)
1 passed in 0.1s
"""


def test_a_durations_report_sums_each_files_phases() -> None:
    assert write_from_log(LOG) == {
        "hydrolite/ir/stable.py": 0.0,
        "tests/spark/test_local_cluster.py": 125.1,
        "tests/spark/test_s3a_checkpoint.py": 80.6,
    }


def test_the_recorded_times_are_read() -> None:
    """A file that does not parse would silently give xdist's own order back."""
    seconds = recorded()
    assert len(seconds) > 100, DURATIONS
    assert max(seconds, key=lambda name: seconds[name]).startswith("tests/")


def test_the_longest_pending_file_goes_out_first() -> None:
    seconds = {"a.py": 5.0, "b.py": 90.0, "c.py": 30.0}
    pending = ["new1.py", "a.py", "new2.py", "b.py", "c.py"]  # xdist's own order
    order = []
    while pending:
        order.append(longest(pending, seconds))
        pending.remove(order[-1])
    assert order == ["b.py", "c.py", "a.py", "new1.py", "new2.py"]  # unrecorded last, in xdist's order


def test_the_scheduler_is_xdists_loadfile_with_that_choice() -> None:
    assert issubclass(LongestFileFirst, LoadFileScheduling)
    assert "_assign_work_unit" in vars(LoadScopeScheduling)  # the method it overrides still exists
