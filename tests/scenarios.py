"""The examples' scenarios, shared by the simulator tests and the Spark conformance tests.

Each takes a test harness with `sender(port)` / `receiver(port)` — the simulator's
`Simulator` (every schedule) or the Spark `SparkHarness` (one real execution) — and asserts
only what must hold on every legal schedule, so both runtimes must pass them unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hydrolite as hl
from examples import bank, counter, kvstore


def counter_seed(s: Any) -> None:
    """Seed 002: send an increment, receive its ack, send a query: the answer counts it."""
    increment, query = s.sender("increment"), s.sender("query")
    ack, response = s.receiver("increment_ack"), s.receiver("query_response")
    increment.send(("c1", None))
    ack.next()
    query.send(("c1", None))
    response.assert_yields([("c1", 1)])


def counter_acks_bound_answers(s: Any) -> None:
    """Several increments and queries: an answer counts at least every increment acked before."""
    inc, query = s.sender("increment"), s.sender("query")
    ack, resp = s.receiver("increment_ack"), s.receiver("query_response")
    inc.send_many([("a", None), ("b", None)])
    ack.assert_yields_unordered([("a", None), ("b", None)])
    query.send(("q1", None))
    resp.assert_yields([("q1", 2)])
    inc.send(("c", None))
    query.send(("q2", None))
    _, n = resp.next()
    assert n in (2, 3), f"answered {n}: only 2 or 3 increments can have been counted"
    ack.assert_yields([("c", None)])
    query.send(("q3", None))
    resp.assert_yields([("q3", 3)])


def kvstore_get_after_put_ack(s: Any) -> None:
    """A get sent after the put's ack sees the put; a later put's ack makes gets see it."""
    put, get = s.sender("put"), s.sender("get")
    acks, responses = s.receiver("put_ack"), s.receiver("get_response")
    put.send(("c1", "k", 5))
    acks.assert_yields([("c1", "k")])
    get.send(("c2", "k"))
    responses.assert_yields([("c2", "k", 5)])
    get.send(("c2", "missing"))
    responses.assert_yields([("c2", "missing", None)])
    put.send(("c1", "k", 7))
    acks.assert_yields([("c1", "k")])
    get.send(("c3", "k"))
    responses.assert_yields([("c3", "k", 7)])


def bank_audit_consistent(s: Any) -> None:
    """The sum of the balances equals the total, whatever ledger prefix the audit sees."""
    s.sender("deposit").send_many([("a", 10), ("b", 5)])
    s.sender("transfer").send(("a", "b", 3))
    s.sender("audit").send("auditor")
    _, (balance_sum, total) = s.receiver("audit_report").next()
    # Only this holds on every schedule: a transfer's two ledger legs are two elements, so an
    # aligned prefix may hold one leg (total 12 or -3), but balances and total see the same one.
    assert balance_sum == total, f"the balances add up to {balance_sum} but the total is {total}"


#: example program -> the scenarios it must pass on every runtime
EXAMPLE_SCENARIOS: dict[str, tuple[Callable[[], hl.Flow], list[Callable[[Any], None]]]] = {
    "counter": (counter.build, [counter_seed, counter_acks_bound_answers]),
    "kvstore": (kvstore.build, [kvstore_get_after_put_ack]),
    "bank": (bank.build, [bank_audit_consistent]),
}

CASES = [(name, sc) for name, (_, scs) in EXAMPLE_SCENARIOS.items() for sc in scs]
CASE_IDS = [f"{name}-{sc.__name__}" for name, sc in CASES]
