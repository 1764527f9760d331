"""The examples' stories under the simulator: aligned reads stay consistent on every schedule."""

from __future__ import annotations

import pytest

import hydrolite as hl
from examples import bank, kvstore
from hydrolite import nondet
from hydrolite.sim import SimulationFailure, Simulator


def test_kvstore_get_after_put_ack_sees_the_put() -> None:
    def scenario(s: Simulator) -> None:
        s.sender("put").send(("c1", "k", 5))
        s.receiver("put_ack").assert_yields([("c1", "k")])
        s.sender("get").send(("c2", "k"))
        s.receiver("get_response").assert_yields([("c2", "k", 5)])

    # like the counter: the put's aligned entry is the only entry that can advance (forced),
    # then the get's batch is (forced): 1 execution
    assert Simulator(kvstore.build).exhaustive(scenario) == 1


def audit(s: Simulator) -> None:
    s.sender("deposit").send(("a", 10))
    s.sender("transfer").send(("a", "b", 3))
    s.sender("audit").send("auditor")
    _, (balance_sum, total) = s.receiver("audit_report").next()
    assert balance_sum == total, f"the balances add up to {balance_sum} but the total is {total}"


def test_bank_audit_is_consistent_on_every_schedule() -> None:
    assert Simulator(bank.build).exhaustive(audit) > 1


def naive_bank() -> hl.Flow:
    """bank.py with two plain snapshots instead of snapshot_aligned."""
    flow = hl.FlowBuilder("bank_naive")
    b = flow.process(bank.Bank)
    deposits = b.source("deposit", tuple[str, int])
    transfers = b.source("transfer", tuple[str, str, int])
    audits = b.source("audit", str)
    ledger = deposits.merge_unordered(transfers.flat_map_ordered(lambda t: [(t[0], -t[2]), (t[1], t[2])]))
    balances = ledger.into_keyed().fold_commutative(0, lambda x, d: x + d)
    total = ledger.map(lambda e: e[1]).fold_commutative(0, lambda x, d: x + d)
    tick = b.tick()
    balance_sum = balances.snapshot(tick, nondet("any version")).values().fold_commutative(0, lambda x, v: x + v)
    total_now = total.snapshot(tick, nondet("any version"))
    audits.batch(tick, nondet("any grouping")).cross_singleton(balance_sum.zip(total_now)).all_ticks().sink(
        "audit_report"
    )
    return flow.finalize()


def test_naive_bank_audit_can_disagree() -> None:
    with pytest.raises(SimulationFailure) as info:
        Simulator(naive_bank()).exhaustive(audit)
    assert "the balances add up to" in str(info.value)
    # shrunk to one tick run: the audit batch and two snapshots of different ledger prefixes
    assert len(info.value.choices) == 3 and "run #2" not in str(info.value)
    assert str(info.value).count("^ released") == 3
