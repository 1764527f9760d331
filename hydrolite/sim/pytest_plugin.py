"""pytest plugin: a `simulator` fixture and a `--sim-replay` option.

Enable it with `pytest_plugins = ["hydrolite.sim.pytest_plugin"]` in a conftest.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from ..ir.graph import Flow
from .explore import Simulator
from .report import REPLAY_ENV


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hydrolite simulator")
    group.addoption(
        "--sim-replay", default=None, metavar="v1:...", help=f"replay one recorded execution (same as {REPLAY_ENV})"
    )


_saved = pytest.StashKey[tuple[bool, str | None]]()


def pytest_configure(config: pytest.Config) -> None:
    replay = config.getoption("--sim-replay", default=None)
    if replay:
        config.stash[_saved] = (True, os.environ.get(REPLAY_ENV))
        os.environ[REPLAY_ENV] = str(replay)


def pytest_unconfigure(config: pytest.Config) -> None:
    changed, previous = config.stash.get(_saved, (False, None))
    if changed:  # leave the environment as we found it (matters for in-process runs)
        if previous is None:
            os.environ.pop(REPLAY_ENV, None)
        else:
            os.environ[REPLAY_ENV] = previous


def pytest_report_header(config: pytest.Config) -> str | None:
    replay = os.environ.get(REPLAY_ENV)
    return f"hydrolite simulator: replaying {replay}" if replay else None


@pytest.fixture
def simulator() -> Callable[..., Simulator]:
    """A factory: `simulator(flow, cluster_sizes=...)` -> `Simulator`."""

    def make(
        flow: Flow | Callable[[], Flow], *, cluster_sizes: Mapping[str, int] | None = None, **options: Any
    ) -> Simulator:
        return Simulator(flow, cluster_sizes=cluster_sizes, **options)

    return make
