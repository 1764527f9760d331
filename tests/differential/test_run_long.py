"""`run_long`'s time limit: a program that never settles (legal, and endless on both backends)
must not stall a long run — it becomes a `timeout` outcome, with its queries stopped."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.differential.harness import Outcome
from tests.differential.run_long import LIMIT, _bad, _safe

pytestmark = pytest.mark.spark


def test_a_program_over_its_time_is_a_timeout_and_its_queries_stop(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    def endless(spark: Any, source: str, steps: Any) -> Outcome:
        """A streaming query waited on for ever: a Spark call blocked in the JVM."""
        q = spark.readStream.format("rate").load().writeStream.format("noop").start()
        q.awaitTermination()
        raise AssertionError("unreachable: the rate source never ends")

    def spinning(spark: Any, source: str, steps: Any) -> Outcome:
        """A loop in Python (the simulator's, for a tick that never settles)."""
        while True:
            pass

    monkeypatch.setitem(LIMIT, "seconds", 3)
    for runner in (endless, spinning):
        t = time.monotonic()
        out = _safe(spark, "", [], runner)
        assert out.status == "timeout", out
        assert "ran longer than 3 s (--timeout)" in out.detail, out.detail
        assert _bad(out)
        assert time.monotonic() - t < 30
        assert not spark.streams.active, spark.streams.active
    # the session still answers after the interrupted call
    assert spark.range(3).count() == 3
    assert _safe(spark, "", [], lambda *a: Outcome("identical")).status == "identical"
