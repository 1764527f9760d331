"""What a run records beside its queries, and small helpers of the runner.

`record_sink_type` / `record_bindings` write what `hydrolite verify-run` needs to read a
run back later (the element types of each sink, the binding of each port); `busy` says
whether a query is doing real work (for `--until-idle`); `pickle_user_modules` makes user
functions (and the user modules they reach) travel to Spark's Python workers by value;
`diagnose_natives` finds the element a translated function failed on; `executor_values` takes
a batch's values of the state kept on the executors; `check_sources` refuses to resume a query
whose plan reads its inputs as other Spark sources than its checkpoint's.
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import site
import sys
import sysconfig
import typing
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.cloudpickle import register_pickle_by_value
from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery

from ...ir.graph import Flow
from ...kernels import KERNELS, KEYED_KERNELS, KernelError
from . import ckfs
from .channel_versions import updated_tables
from .errors import BadDataError, SparkRunError, UserFunctionError, describe_spark_error, from_spark_error, site_of
from .exec import BatchCtx
from .ports import InputBinding, OutputBinding, collect_values
from .values import SFrame

if TYPE_CHECKING:
    from .keyed_state import ExecutorRegion
    from .native_state import NativeAggregations


def record_sink_type(checkpoint: str, port: str, sf: SFrame) -> None:
    """Keep the element types a sink wrote with (`sink_types/<port>.pkl`), so that
    `verify-run` reads its files back as the same Python values (written once per run,
    whole or not at all, on a local or a Hadoop checkpoint: `ckfs`)."""
    path = ckfs.join(checkpoint, "sink_types", f"{port}.pkl")
    if ckfs.exists(path):
        return
    ckfs.write_atomic(path, pickle.dumps((sf.vt, sf.kt)))


def record_bindings(checkpoint: str, inputs: Mapping[str, InputBinding], outputs: Mapping[str, OutputBinding]) -> None:
    """Write which input/output each port was bound to (`bindings.json`, whole or not at all),
    so that `hydrolite verify-run` can read the run's inputs and outputs back later."""
    from .verify import binding_spec

    data = {
        "inputs": {p: spec for p, b in inputs.items() if (spec := binding_spec(b)) is not None},
        "outputs": {p: spec for p, b in outputs.items() if (spec := binding_spec(b)) is not None},
    }
    ckfs.write_atomic(ckfs.join(checkpoint, "bindings.json"), json.dumps(data, indent=2, sort_keys=True))


def busy(q: StreamingQuery) -> bool:
    """Starting up, or planning / running a batch with new data (`isDataAvailable`). Not
    `isTriggerActive` / the message: an idle file source lists its directory on every trigger,
    mostly "busy" on a few hundred files (`--until-idle` waited 86 s for a quiet run of polls)."""
    if not q.isActive:
        return False
    st = q.status
    return bool(st["isDataAvailable"]) or st["message"] == "Initializing sources" or q.lastProgress is None


def pickle_user_modules(flow: Flow) -> None:
    """User functions travel to Spark's Python workers by value: the program's module and every
    module of the user's own it reaches (imported modules, functions and classes among its
    globals, transitively). Spark's workers import by name only what is installed (they share
    the driver's interpreter and PYTHONPATH, not its `sys.path` edits), so a program file loaded
    by path, or a helper module beside it (`import my_rules` in a project directory), would fail
    there with ModuleNotFoundError. Installed modules (stdlib, site-packages) and hydrolite's and
    Spark's own stay pickled by reference."""
    todo: list[ModuleType] = []
    for node in flow.nodes():
        for v in node.params().values():
            if callable(v):
                todo += _modules_of(v)
                todo += _modules_of(getattr(v, "__globals__", None))
        for t in (node.meta.key, node.meta.elem):  # a dataclass the workers rebuild from a row
            todo += [m for c in _classes_in(t) for m in _modules_of(c)]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module.__name__ in seen or not _user_module(module):
            continue
        seen.add(module.__name__)
        if module.__name__ != "__main__":  # cloudpickle pickles __main__ by value already
            register_pickle_by_value(module)
        todo += _modules_of(vars(module))


def _classes_in(t: object) -> list[type]:
    """The classes a type annotation names (`tuple[str, Reading]`: str and Reading)."""
    if inspect.isclass(t) and not typing.get_args(t):
        return [t]
    return [c for a in typing.get_args(t) for c in _classes_in(a)]


def _modules_of(obj: object) -> list[ModuleType]:
    """The modules a function, class or namespace (a module's or function's globals) refers to."""
    values = list(obj.values()) if isinstance(obj, dict) else [obj]
    found: list[ModuleType] = []
    for v in values:
        if isinstance(v, ModuleType):
            found.append(v)
        elif inspect.isfunction(v) or inspect.isclass(v):
            module = sys.modules.get(getattr(v, "__module__", None) or "")
            if module is not None:
                found.append(module)
    return found


_OWN = ("hydrolite", "pyspark", "py4j", "builtins")


@cache
def _installed_dirs() -> tuple[str, ...]:
    """Where installed modules live: the stdlib and site-packages (the workers import from them)."""
    dirs = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs |= set(site.getsitepackages()) | {site.getusersitepackages()}
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


def _user_module(module: ModuleType) -> bool:
    """A module of the user's own files: not installed, not hydrolite's or Spark's, not built in."""
    name = module.__name__
    if any(name == own or name.startswith(own + ".") for own in _OWN):
        return False
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return name == "__main__"  # an interactive __main__ has no file
    return not os.path.realpath(path).startswith(_installed_dirs())


def diagnose_natives(ctx: BatchCtx | None) -> SparkRunError | None:
    """The element a natively translated function of the batch `ctx` fails on, found by
    running the function's kernel in Python over its input (Spark's own error names no
    element); None when no translated function fails there."""
    if ctx is None:
        return None
    for node, sf in ctx.natives:
        try:
            values = collect_values(sf.with_df(sf.df.limit(100_000)))
        except Exception:  # its own input fails too: an upstream operator is to blame
            continue
        table = KEYED_KERNELS if sf.keyed else KERNELS
        try:
            table[node.op](node.f, values)
        except KernelError as err:  # the failing element, reported like a Python fallback's
            return ctx.site(node).fail(err.element, err.cause)
    return None


def explain_failure(runner: Any, ctx: BatchCtx | None, exc: Exception, batch_id: int) -> SparkRunError:
    """What failed in batch `batch_id` of `runner` (a `StageRunner`, evaluating `ctx`), for the
    user: an input's bad data, a user function's error (with the batch, when an executor-region
    worker raised it), a translated function's failing element, else Spark's own error."""
    text = str(exc)
    bad = bad_input_error(runner, text, exc, batch_id)  # a file input's bad data: its port and file
    if bad is not None:
        return bad
    ours = from_spark_error(text)  # raised in a worker: the same class, message and fields
    if isinstance(ours, UserFunctionError):  # (executor-region workers do not know the batch)
        from .keyed_state import with_batch

        return with_batch(ours, batch_id)
    if ours is not None:
        return ours
    found = diagnose_natives(ctx)
    if found is not None:
        return found
    return SparkRunError(f"query {runner.stage.name!r} failed in batch {batch_id}: {describe_spark_error(exc)}")


def bad_input_error(runner: Any, text: str, exc: Exception, batch_id: int) -> BadDataError | None:
    """The error of a batch of `runner` (a `StageRunner`) that failed on an input's data (the
    Spark error's `text` names the input's directory, or the mark of an input read without
    file metadata): the port, its declaring line, its type, and what is wrong where."""
    from .ports import FileInput
    from .strict_read import locate_bad_record, read_error_detail, unlocated_mark

    for i, inp in enumerate(runner.inputs):
        path, said = getattr(inp.binding, "path", None), text
        if i in runner.unlocated and unlocated_mark(inp.name) in text:  # the check's text names no file
            said = locate_bad_record(runner.runner.spark, inp, runner.batch_files.get(i, [])) or text
        elif not (path and os.path.abspath(path) in text):
            continue
        if inp.node is not None:
            src = inp.node
            detail = read_error_detail(said, inp.name, inp.binding) if isinstance(inp.binding, FileInput) else None
            return BadDataError(
                f"{site_of(src)}: input {inp.name!r} ({inp.binding.describe()}) has data that does not match its "
                f"declared type {src.meta.type_str()} (batch {batch_id} of query {runner.stage.name!r}): "
                f"{detail or describe_spark_error(exc)}"
            )
    return None


def left_out_elements(runner: Any, uris: Mapping[int, list[str]]) -> bool:
    """Whether an input the tick's rows leave out (read only by the native aggregations or
    the executor region: `StageRunner.in_tick`) had elements in the batch being run. Its rows
    are not in the batch's DataFrame, yet the model runs the tick for them (a snapshot in it
    emits), and `verify` replays a first batch with any input. Asked only of a first batch
    whose own rows are empty; the inputs are read back as `verify` reads them (`uris`: a file
    input's files, as the remap log listed them). An input of another kind counts as having
    elements: the tick runs, which is always legal."""
    from .feed_mirror import durable_dir
    from .ports import FeedInput, FileInput
    from .remap import local_path
    from .verify import read_feed, read_files

    starts, ends = runner.remap.starts, runner.remap.ends
    for i, inp in enumerate(runner.inputs):
        if inp.node is None or runner.in_tick[i]:
            continue
        b = inp.binding
        if isinstance(b, FeedInput):
            start, end = (starts[i] if i < len(starts) else None), (ends[i] if i < len(ends) else None)
            found = read_feed(durable_dir(b), start, end, inp.vt, inp.kt)
        elif isinstance(b, FileInput):
            found = read_files(runner.runner.spark, b, [local_path(u) for u in uris.get(i, [])], inp.vt, inp.kt)
        else:
            return True
        if found:
            return True
    return False


def executor_values(
    df: Any, region: ExecutorRegion | None, native: NativeAggregations | None, state: Any, live: set[int] | None
) -> dict[int, Any]:
    """The batch's values of the state the streaming plan kept on the executors: the executor
    region's answers (lookups, joins) and the native aggregations' tables (of the `live`
    nodes). The states the query reads whole get a new copy only when the batch updated them,
    which one Spark job tells for all of them (`channel_versions.updated_tables`)."""
    whole = region.whole_updates() if region is not None else {}
    whole |= native.whole_updates(live) if native is not None else {}
    updated = updated_tables(df, whole)
    out: dict[int, Any] = {}
    if region is not None:
        out.update(region.lookup_frames(df, state, updated))
    if native is not None:
        out.update(native.tables(df, live, state, updated))
    return out


#: a query's record beside its Spark checkpoint (`offsets.queries` finds queries by it)
QUERY_RECORD = "hydrolite.json"


def write_query_record(qdir: str, query: str, inputs: list[str], sinks: list[str]) -> None:
    """Write the query's `hydrolite.json` (its name, inputs, sinks), keeping the Spark
    sources a previous run recorded (`check_sources` compares them before the query starts)."""
    meta: dict[str, Any] = {"query": query, "inputs": inputs, "sinks": sinks}
    path = ckfs.join(qdir, QUERY_RECORD)
    old = json.loads(ckfs.read_bytes(path) or b"{}")
    if "sources" in old:
        meta = {**meta, "sources": old["sources"]}
    ckfs.write_atomic(path, json.dumps(meta, indent=2))


def check_sources(qdir: str, query: str, sources: list[str], committed: int) -> None:
    """Refuse to resume a query whose plan would read its inputs as other Spark sources than
    its checkpoint's, then record them.

    Spark's offset log holds one offset per source of the query's plan, by position, and a
    hydrolite query scans an input once per branch that keeps state on the executors (each
    reads all inputs) and once more when the tick reads its rows. An edit that changes those
    scans (a lookup or sink added or removed, a state moved) shifts the positions: Spark then
    stops with an assertion about the number of sources, or — same number, other order —
    would resume an input from another input's offset, silently. `sources`: the input of
    each position, in order; `committed`: the batches the query committed before this run."""
    path = ckfs.join(qdir, QUERY_RECORD)
    meta = json.loads(ckfs.read_bytes(path) or b"{}")
    before = meta.get("sources")
    if committed and before is not None and before != sources:
        from .upgrade import PlanChangedError

        raise PlanChangedError(
            f"query {query}: its checkpoint holds Spark offsets for the sources {before} (one per scan of an input: "
            f"each state branch reads every input, then the tick reads the inputs it needs), and this program's plan "
            f"reads {sources}: Spark restores offsets by position, so the query cannot resume with them\n"
            "  fix: keep what reads each input as it was in that run (the same keyed states on the executors, the same "
            "inputs read by the tick itself), or start a new --checkpoint"
        )
    if before != sources:
        ckfs.write_atomic(path, json.dumps({**meta, "sources": sources}, indent=2))


def prepare_queries(stages: list[Any], checkpoint: str, record_before: bytes | None) -> None:
    """Build every query's streaming plan (`StageRunner.prepare`) before any query starts; when
    one is refused (`check_sources`), put back the plan record the run found, so that a
    refused run leaves the checkpoint as it was (`record_before`: None for a new one)."""
    from .upgrade import PLAN_FILE, PlanChangedError

    try:
        for s in stages:
            s.prepare()
    except PlanChangedError:
        if record_before is not None:
            ckfs.write_atomic(ckfs.join(checkpoint, PLAN_FILE), record_before)
        raise


def cache_batch(df: DataFrame, both_stores: bool) -> DataFrame:
    """The batch's rows cached for the jobs that read them. With `both_stores` (a native
    streaming aggregation and the executor region's `transformWithState` in one plan) they
    are computed at once by a job of their own, one task per partition, before any job reads
    them through a `coalesce()`: a task that computes an aggregation's partition and then the
    `transformWithState`'s reuses the aggregation's read store for the other operator
    (Spark 4's per-thread `StateStoreThreadLocalTracker` is cleared only when the task ends)
    and fails ("Can only upgrade readStore to writeStore with the same stateStoreId";
    `tests/spark/test_cache_batch.py`)."""
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    if both_stores:
        df.count()
    return df
