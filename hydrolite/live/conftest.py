"""The names every docstring example of hydrolite/live starts with (pytest's `doctest_namespace`).

Each example gets a fresh program: `flow` (a `FlowBuilder`), `server` and `client` (its
`Process[Server]` and `Process[Client]`), `workers` (a `Cluster[Workers]`, two members in
the simulator by default), `tick` (`server.tick()`), `nondet`, and `run`/`outcomes` from
`hydrolite.live.demo`, which run the simulator on a collection and show what it computed.
"""

from __future__ import annotations

from typing import Any

import pytest

from hydrolite import FlowBuilder, nondet
from hydrolite.live.demo import outcomes, run


class Server:
    """Tag of the examples' server process."""


class Client:
    """Tag of the examples' second process."""


class Workers:
    """Tag of the examples' cluster."""


@pytest.fixture(autouse=True)
def _example_program(doctest_namespace: dict[str, Any]) -> None:
    flow = FlowBuilder("example")
    server = flow.process(Server)
    doctest_namespace.update(
        flow=flow,
        server=server,
        client=flow.process(Client),
        workers=flow.cluster(Workers),
        tick=server.tick(),
        nondet=nondet,
        run=run,
        outcomes=outcomes,
        Server=Server,
        Client=Client,
        Workers=Workers,
    )
