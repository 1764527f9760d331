"""The Spark planner and runtime (see README.md next to this file).

```python
from hydrolite.planner.spark import FlowRunner, plan_flow, read_offset_log

print(plan_flow(counter.build()))                       # stages = Structured Streaming queries
with FlowRunner(counter.build(), inputs={"increment": "json:in/inc", "query": "json:in/q"},
                outputs={"query_response": "parquet:out/resp"}, checkpoint="ck") as run:
    run.start().run_until_idle()
for tick in read_offset_log("ck"):                      # batch id -> source offsets it covered
    print(tick.describe())
```

Names are imported lazily so that planning (`plan_flow`, `hydrolite plan`) does not load
PySpark.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "plan_flow": "stages",
    "Plan": "stages",
    "Stage": "stages",
    "SparkPlanError": "stages",
    "render_text": "render",
    "render_dot": "render",
    "render_mermaid": "render",
    "FlowRunner": "runtime",
    "InjectedFault": "faults",
    "fault_from_env": "faults",
    "spark_session": "session",
    "read_offset_log": "offsets",
    "TickOffsets": "offsets",
    "SparkHarness": "harness",
    "FeedWriter": "feed",
    "MemorySink": "ports",
    "CallbackSink": "ports",
    "FileInput": "ports",
    "FileOutput": "ports",
    "FeedInput": "ports",
    "RateInput": "ports",
    "SparkRunError": "errors",
    "UserFunctionError": "errors",
    "BadDataError": "errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
