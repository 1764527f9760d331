"""The examples' simulator scenarios (tests/sim/test_examples.py) against real Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from examples import bank, kvstore
from hydrolite.planner.spark.harness import SparkHarness

pytestmark = pytest.mark.spark


def kv_scenario(s: Any) -> None:
    s.sender("put").send(("c1", "k", 5))
    s.receiver("put_ack").assert_yields([("c1", "k")])
    s.sender("get").send(("c2", "k"))
    s.receiver("get_response").assert_yields([("c2", "k", 5)])


def kv_more(s: Any) -> None:
    """Later puts win; a missing key answers None; acks and answers arrive once."""
    put, get = s.sender("put"), s.sender("get")
    put.send_many([("c1", "k", 5), ("c1", "j", 1)])
    s.receiver("put_ack").assert_yields_unordered([("c1", "k"), ("c1", "j")])
    put.send(("c2", "k", 7))
    s.receiver("put_ack").assert_yields([("c2", "k")])
    get.send_many([("c3", "k"), ("c3", "nope"), ("c4", "j")])
    s.receiver("get_response").assert_yields_only_unordered([("c3", "k", 7), ("c3", "nope", None), ("c4", "j", 1)])


def audit(s: Any) -> None:
    s.sender("deposit").send(("a", 10))
    s.sender("transfer").send(("a", "b", 3))
    s.sender("audit").send("auditor")
    _, (balance_sum, total) = s.receiver("audit_report").next()
    assert balance_sum == total, f"the balances add up to {balance_sum} but the total is {total}"


def audit_after_ledger(s: Any) -> None:
    s.sender("deposit").send_many([("a", 10), ("b", 5)])
    s.sender("transfer").send(("a", "b", 3))
    s.sender("audit").send("x")
    s.receiver("audit_report").assert_yields([("x", (15, 15))])
    s.sender("transfer").send(("b", "c", 8))
    s.sender("audit").send("y")
    s.receiver("audit_report").assert_yields_only([("y", (15, 15))])


@pytest.mark.parametrize("scenario", [kv_scenario, kv_more])
def test_kvstore_on_spark(scenario: Any, spark: SparkSession, tmp_path: Path) -> None:
    SparkHarness(kvstore.build(), spark, str(tmp_path)).run(scenario)


@pytest.mark.parametrize("scenario", [audit, audit_after_ledger])
def test_bank_on_spark(scenario: Any, spark: SparkSession, tmp_path: Path) -> None:
    SparkHarness(bank.build(), spark, str(tmp_path)).run(scenario)
