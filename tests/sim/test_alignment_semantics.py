"""Alignment semantics under the simulator, beyond the seed's single-path scenario.

Property (the alignment guarantee, docs/design.md §2): after a client has received k acks, every later answer counts at
least k increments. The naive counter breaks it; the aligned one keeps it on every schedule.
"""

from __future__ import annotations

from collections import Counter

import pytest

from examples import bank, counter, counter_naive, kvstore
from hydrolite.sim import SimulationFailure, Simulator


def racing_scenario(s: Simulator, seen: Counter[tuple[int, int, int]] | None = None) -> None:
    """Two increments and an early query race; answers after acks must count the acks."""
    inc, query = s.sender("increment"), s.sender("query")
    acks, answers = s.receiver("increment_ack"), s.receiver("query_response")
    inc.send_many([("c1", None), ("c2", None)])
    query.send(("early", None))
    early = answers.next()
    assert 0 <= early[1] <= 2, early
    acks.next()
    query.send(("after-one", None))
    after_one = answers.next()
    assert after_one[1] >= 1, f"answered {after_one} after one ack"
    acks.next()
    query.send(("after-two", None))
    after_two = answers.next()
    assert after_two == ("after-two", 2), f"answered {after_two} after two acks"
    if seen is not None:
        seen[(early[1], after_one[1], after_two[1])] += 1


def test_aligned_counter_keeps_acks_and_answers_consistent() -> None:
    # Every schedule passes, and the exploration is not trivial: the early query may see 0, 1
    # or 2 increments (the aligned entry batch may take none, one or both per tick run), and
    # the answer after one ack may already count the second increment. Pinned: 25 executions,
    # (early, after one ack, after two acks) -> how many executions answered so.
    seen: Counter[tuple[int, int, int]] = Counter()
    runs = Simulator(counter.build).exhaustive(lambda s: racing_scenario(s, seen))
    assert runs == 25
    assert dict(seen) == {(0, 1, 2): 2, (0, 2, 2): 5, (1, 1, 2): 4, (1, 2, 2): 8, (2, 2, 2): 6}


def test_naive_counter_breaks_the_property_under_racing() -> None:
    with pytest.raises(SimulationFailure) as info:
        Simulator(counter_naive.build).exhaustive(racing_scenario)
    report = str(info.value)
    assert "after one ack" in report or "after two acks" in report
    assert "snapshot()" in report and "counter_naive.py" in report


def test_bank_audit_sees_balances_and_total_from_one_ledger_prefix() -> None:
    def audit(s: Simulator) -> None:
        s.sender("deposit").send_many([("a", 10), ("b", 5)])
        s.sender("transfer").send(("a", "b", 3))
        s.sender("audit").send("auditor")
        _, (balance_sum, total) = s.receiver("audit_report").next()
        assert balance_sum == total, (balance_sum, total)

    assert Simulator(bank.build).exhaustive(audit) > 1  # many ledger prefixes, all consistent


def test_kvstore_get_after_ack_never_misses_the_put_under_racing() -> None:
    # Two puts to one key race with an early get. After the first ack a get sees a put
    # (never None); after both acks it sees the last write. The naive variant (plain
    # snapshot, unaligned ack) would be allowed to answer None after the ack.
    answers: Counter[tuple[object, object, object]] = Counter()

    def scenario(s: Simulator) -> None:
        put, get = s.sender("put"), s.sender("get")
        acks, responses = s.receiver("put_ack"), s.receiver("get_response")
        put.send_many([("c1", "k", 1), ("c2", "k", 2)])
        get.send(("early", "k"))
        early = responses.next()[2]
        acks.next()
        get.send(("after-one", "k"))
        after_one = responses.next()[2]
        assert after_one in (1, 2), f"get after an ack answered {after_one}"
        acks.next()
        get.send(("after-two", "k"))
        after_two = responses.next()[2]
        assert after_two == 2, f"get after both acks answered {after_two}"
        answers[(early, after_one, after_two)] += 1

    runs = Simulator(kvstore.build).exhaustive(scenario)
    assert runs == sum(answers.values()) > 1
    assert {a[0] for a in answers} == {None, 1, 2}  # the early get really races the puts
