"""Replay works everywhere: the hint printed outside pytest names calls that exist, and
`hydrolite sim PROGRAM:SCENARIO` explores, fuzzes and replays from the shell."""

from __future__ import annotations

import re
import shlex
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples import counter, counter_naive
from hydrolite import sim
from hydrolite.sim import SimulationFailure
from hydrolite.sim.cli import main as sim_main

SCENARIO_FILE = textwrap.dedent(
    """
    from examples import counter_naive
    from hydrolite import sim
    from hydrolite.sim import Simulator


    def stale_read(s):
        s.sender("increment").send(("c1", None))
        s.receiver("increment_ack").next()
        s.sender("query").send(("c1", None))
        s.receiver("query_response").assert_yields([("c1", 1)])


    @sim.exhaustive(counter_naive.build)
    def test_decorated(s):
        stale_read(s)


    def explore():
        Simulator(counter_naive.build).exhaustive(stale_read)
    """
)


@pytest.fixture
def user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's scenario file outside the repository, run from its own directory."""
    path = tmp_path / "user_checks.py"
    path.write_text(SCENARIO_FILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(Path(counter.__file__).parent.parent))
    monkeypatch.delenv("HYDROLITE_SIM_REPLAY", raising=False)
    yield path
    sys.modules.pop("user_checks", None)


def test_module_level_replay_exists() -> None:
    with pytest.raises(SimulationFailure) as info:
        sim.replay(counter_naive.build, _stale_read, "v1:1.0")
    assert info.value.choices == [1, 0]
    assert "^ released 1" in sim.replay(counter_naive.build, _stale_read, "v1:1.1")


def _stale_read(s: sim.Simulator) -> None:
    s.sender("increment").send(("c1", None))
    s.receiver("increment_ack").next()
    s.sender("query").send(("c1", None))
    s.receiver("query_response").assert_yields([("c1", 1)])


def test_the_hint_outside_pytest_names_calls_that_work(
    user_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import user_checks

    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # as if run from a script (pytest sets it per test call)

    with pytest.raises(SimulationFailure) as info:
        user_checks.explore()
    report = str(info.value)
    py = re.search(r"Replay this execution: (hydrolite\.sim\.replay\(.*\))$", report, re.M)
    shell = re.search(r"or from the shell: (hydrolite sim .*)$", report, re.M)
    assert py and shell, report
    assert py.group(1) == "hydrolite.sim.replay(counter_naive.build, user_checks.stale_read, 'v1:1.0')"
    # the Python call runs as printed (with the two modules imported) and fails the same way
    import hydrolite

    with pytest.raises(SimulationFailure) as again:
        eval(py.group(1), {"hydrolite": hydrolite, "counter_naive": counter_naive, "user_checks": user_checks})
    assert again.value.choices == info.value.choices
    # and so does the shell command
    argv = shlex.split(shell.group(1))
    assert argv[:3] == ["hydrolite", "sim", "user_checks.py:stale_read"]
    assert sim_main(argv[2:]) == 1
    out = capsys.readouterr().out
    assert "hydrolite simulation failed: replay" in out and "^ released 0" in out


def test_cli_explores_and_replays_a_decorated_test(
    user_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert sim_main(["user_checks.py:test_decorated"]) == 1  # the decorator knows its flow
    out = capsys.readouterr().out
    assert "exhaustive exploration" in out
    assert "hydrolite sim user_checks.py:test_decorated --replay v1:1.0" in out  # no --program needed
    assert sim_main(["user_checks.py:test_decorated", "--replay", "v1:1.1"]) == 0
    assert "the replayed execution v1:1.1 passed" in capsys.readouterr().out


def test_cli_modes_and_usage_errors(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aligned = str(Path(counter.__file__))
    assert sim_main(["user_checks.py:stale_read", "--program", aligned]) == 0
    assert (
        "every schedule passed: 1 executions explored, one per equivalence class of schedules; "
        "0 branches of equivalent schedules pruned (0 partial executions abandoned)"
    ) in capsys.readouterr().out
    assert sim_main(["user_checks.py:stale_read", "--program", aligned, "--no-reduce"]) == 0
    assert "every schedule passed: 1 executions explored (every interleaving, no reduction)" in capsys.readouterr().out
    assert sim_main(["user_checks.py:stale_read", "--program", aligned, "--fuzz", "20", "--seed", "4"]) == 0
    assert "20 random executions passed (seed 4)" in capsys.readouterr().out
    assert sim_main(["user_checks.py:nope"]) == 2
    assert "has no scenario 'nope'" in capsys.readouterr().err
    assert sim_main(["user_checks.py:stale_read"]) == 2  # a plain function needs a program
    assert "has no build()" in capsys.readouterr().err
    assert sim_main(["user_checks.py:test_decorated", "--replay", "v2:0"]) == 2
    assert "not a hydrolite replay string" in capsys.readouterr().err
