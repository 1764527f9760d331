"""Errors with identity: stable codes, and the same class and fields across the worker boundary."""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Callable

import pytest

from hydrolite.errors import BuildError, FlowError, HydroliteError
from hydrolite.passes.align_analysis import AlignmentError
from hydrolite.planner.spark.errors import (
    BadDataError,
    SparkRunError,
    UserFunctionError,
    describe_spark_error,
    from_spark_error,
)
from hydrolite.planner.spark.lock import CheckpointLockedError
from hydrolite.planner.spark.stages import SparkPlanError
from hydrolite.planner.spark.upgrade import PlanChangedError
from hydrolite.planner.spark.verify import VerifyError
from hydrolite.sim.errors import ExplorationLimit, SimUsageError


def _subclasses(cls: type[HydroliteError]) -> set[type[HydroliteError]]:
    out = set(cls.__subclasses__())
    for c in list(out):
        out |= _subclasses(c)
    return out


def test_every_hydrolite_error_class_has_its_own_stable_code() -> None:
    classes = {HydroliteError} | _subclasses(HydroliteError)
    known = {
        BuildError,
        FlowError,
        AlignmentError,
        SparkRunError,
        UserFunctionError,
        BadDataError,
        CheckpointLockedError,
        PlanChangedError,
        SparkPlanError,
        VerifyError,
        ExplorationLimit,
        SimUsageError,
    }
    assert known <= classes
    codes = {c: c.code for c in classes if "code" in c.__dict__}
    assert set(codes) >= known
    by_code: dict[str, set[str]] = {}
    for c, code in codes.items():
        by_code.setdefault(code, set()).add(c.__name__)
    # no two different errors share a code (the simulator's and Spark's UserFunctionError are one error)
    assert all(len(names) == 1 for names in by_code.values()), by_code
    assert all(code.startswith("HL-") and code == code.upper() for code in codes.values())
    assert BadDataError("x").getErrorClass() == "HL-BAD-DATA"


def _failure() -> UserFunctionError:
    return UserFunctionError("map", __file__, 3, 7, 2, "tick0", ZeroDivisionError("division by zero"))


def test_a_user_function_error_pickles_as_itself() -> None:
    back = pickle.loads(pickle.dumps(_failure()))
    assert type(back) is UserFunctionError
    assert (back.op, back.line, back.batch_id, back.stage) == ("map", 3, 2, "tick0")
    assert str(back) == str(_failure())


@pytest.mark.parametrize(
    "make", [_failure, lambda: BadDataError("input 'x': /d/1.json, line 2: field 'v': expected int, found str")]
)
def test_a_worker_error_is_rebuilt_from_the_text_spark_carries(make: Callable[[], SparkRunError]) -> None:
    err = make()
    try:
        raise err
    except SparkRunError as exc:
        worker = "".join(traceback.format_exception(exc))
    text = (
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        f"{worker}\n\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1)\n"
    )
    back = from_spark_error(text)
    assert type(back) is type(err) and str(back) == str(err)
    assert "hydrolite-error" not in str(back)
    if isinstance(err, UserFunctionError):
        assert isinstance(back, UserFunctionError) and (back.op, back.batch_id) == ("map", 2)
    assert describe_spark_error(RuntimeError(text)) == str(err)


def test_spark_conditions_are_read_from_the_structured_error() -> None:
    class Captured(Exception):  # PySpark's CapturedException interface
        desc = "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide`. SQLSTATE: 22012"

        def getCondition(self) -> str:
            return "DIVIDE_BY_ZERO"

    outer = RuntimeError("py4j noise\n\tat org.apache.Foo")
    outer.__cause__ = Captured()
    assert describe_spark_error(outer) == "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide`."
    assert from_spark_error("no hydrolite error here") is None


def test_one_user_function_error_to_catch_on_either_backend() -> None:
    """The simulator's and Spark's failures of a user function share one class to catch."""
    from hydrolite import errors
    from hydrolite.planner.spark.errors import UserFunctionError as SparkUFE
    from hydrolite.sim.errors import UserFunctionError as SimUFE

    for cls in (SimUFE, SparkUFE):
        assert issubclass(cls, errors.UserFunctionError) and cls.code == "HL-USER-FUNCTION"
    err = SparkUFE("map", __file__, 1, 5, 3, "tick0", ZeroDivisionError("x"))
    assert isinstance(pickle.loads(pickle.dumps(err)), errors.UserFunctionError)
