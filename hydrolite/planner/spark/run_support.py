"""What a run records beside its queries, and small helpers of the runner.

`record_sink_type` / `record_bindings` write what `hydrolite verify-run` needs to read a
run back later (the element types of each sink, the binding of each port); `busy` says
whether a query is doing real work (for `--until-idle`); `pickle_user_modules` makes user
functions travel to Spark's Python workers by value.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
from collections.abc import Mapping

from pyspark.cloudpickle import register_pickle_by_value
from pyspark.sql.streaming.query import StreamingQuery

from ...ir.graph import Flow
from .ports import InputBinding, OutputBinding
from .values import SFrame


def record_sink_type(checkpoint: str, port: str, sf: SFrame) -> None:
    """Keep the element types a sink wrote with (`sink_types/<port>.pkl`), so that
    `verify-run` reads its files back as the same Python values (written once per run)."""
    path = os.path.join(checkpoint, "sink_types", f"{port}.pkl")
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as fh:
        pickle.dump((sf.vt, sf.kt), fh)
    os.replace(path + ".tmp", path)


def record_bindings(checkpoint: str, inputs: Mapping[str, InputBinding], outputs: Mapping[str, OutputBinding]) -> None:
    """Write which input/output each port was bound to (`bindings.json`), so that
    `hydrolite verify-run` can read the run's inputs and outputs back later."""
    from .verify import binding_spec

    data = {
        "inputs": {p: spec for p, b in inputs.items() if (spec := binding_spec(b)) is not None},
        "outputs": {p: spec for p, b in outputs.items() if (spec := binding_spec(b)) is not None},
    }
    with open(os.path.join(checkpoint, "bindings.json"), "w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)


def busy(q: StreamingQuery) -> bool:
    """Starting up, or planning / running a batch with new data (`isDataAvailable`). Not
    `isTriggerActive` / the message: an idle file source lists its directory on every trigger,
    mostly "busy" on a few hundred files (`--until-idle` waited 86 s for a quiet run of polls)."""
    if not q.isActive:
        return False
    st = q.status
    return bool(st["isDataAvailable"]) or st["message"] == "Initializing sources" or q.lastProgress is None


def pickle_user_modules(flow: Flow) -> None:
    """User functions travel to Spark's Python workers by value (their module may not be importable there)."""
    done: set[str] = set()
    for node in flow.nodes():
        for v in node.params().values():
            mod_name = getattr(v, "__module__", None)
            if not callable(v) or mod_name is None or mod_name in done or mod_name == "__main__":
                continue
            if mod_name.startswith(("hydrolite.", "builtins", "pyspark.")):
                continue
            module = sys.modules.get(mod_name)
            if module is not None:
                register_pickle_by_value(module)
                done.add(mod_name)
