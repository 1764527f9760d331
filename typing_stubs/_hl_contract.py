"""Shared fixtures of the typing contract: location tags and a small world to build flows in.

The `check_*.py` files next to this one are the contract. mypy (strict, with
`warn_unused_ignores`) must accept them as written; every `# type: ignore[code]` line is a
misuse mypy must keep rejecting with exactly that code (tests/core/test_typing_contract.py
strips the comments and compares mypy's errors). The files are also real programs: the
same test imports them and runs every case function:

* `accept_*`  builds without error;
* `reject_*`  raises at run time too (a `BuildError` pointing at the ignored line, or a
  plain `TypeError` for a missing argument);
* `mistype_*` is rejected by mypy only: element types are erased at run time, so the
  program builds (the runtime cannot see that a lambda returns the wrong type).

This module is importable as a top-level module because pyproject's `mypy_path` (and the
tests' `sys.path`) contain `typing_stubs/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydrolite import Cluster, FlowBuilder, Process, Tick
from hydrolite.live._base import Live


class Server:
    """Tag of the server process."""


class Client:
    """Tag of a second process."""


class Workers:
    """Tag of a cluster."""


class Replicas:
    """Tag of a second cluster."""


@dataclass(frozen=True)
class World:
    """One flow with two processes, two clusters and a tick on the server."""

    flow: FlowBuilder
    server: Process[Server]
    client: Process[Client]
    workers: Cluster[Workers]
    replicas: Cluster[Replicas]
    tick: Tick[Process[Server]]


def world(name: str = "contract") -> World:
    """A fresh world: every case builds its own flow."""
    flow = FlowBuilder(name)
    server = flow.process(Server)
    return World(
        flow=flow,
        server=server,
        client=flow.process(Client),
        workers=flow.cluster(Workers),
        replicas=flow.cluster(Replicas),
        tick=server.tick(),
    )


REASON = "any batch boundary is acceptable to this test program"


def runtime_type(collection: Live) -> str:
    """The collection's type as the runtime records it (`Meta.type_str()`, `?` = element unknown).

    Accepted cases compare it with what mypy infers, so the two cannot drift apart.
    """
    return collection.node.meta.type_str()
