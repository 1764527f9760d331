"""End to end under pytest: the report's replay line replays exactly the failing execution."""

from __future__ import annotations

import re
import textwrap

import pytest

TEST_FILE = textwrap.dedent(
    """
    from examples import counter_naive
    from hydrolite import sim

    @sim.exhaustive(counter_naive.build)
    def test_stale_read(s):
        s.sender("increment").send(("c1", None))
        s.receiver("increment_ack").next()
        s.sender("query").send(("c1", None))
        s.receiver("query_response").assert_yields([("c1", 1)])
    """
)


def test_replay_line_round_trip(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYDROLITE_SIM_REPLAY", raising=False)
    pytester.makeconftest('pytest_plugins = ["hydrolite.sim.pytest_plugin"]')
    pytester.makepyfile(test_story=TEST_FILE)
    pytester.syspathinsert(str(pytester.path))
    import examples  # the repository's examples package must be importable from the temp dir

    pytester.syspathinsert(str(__import__("pathlib").Path(examples.__file__).parent.parent))
    first = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    first.assert_outcomes(failed=1)
    out = first.stdout.str()
    match = re.search(r"Replay this execution: HYDROLITE_SIM_REPLAY=(v1:[0-9.]*) pytest (\S+)", out)
    assert match, out
    assert match.group(1) == "v1:1.0" and match.group(2).endswith("test_story.py::test_stale_read")
    again = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", f"--sim-replay={match.group(1)}")
    again.assert_outcomes(failed=1)
    assert "hydrolite simulation failed: replay" in again.stdout.str()
    assert "^ released 0" in again.stdout.str()
