"""Check a finished Spark run against the model: replay it in the simulator, batch by batch.

Every micro-batch of every query covered the inputs between two logged offsets (the remap
from ticks to offsets, `offsets.read_offset_log`). Reading those inputs back (feeds,
channels, files) gives exactly the batching choices the run made; `hydrolite.sim.recorded`
runs the same IR with those choices, and every sink's output of every committed batch
must be identical to what Spark wrote. A difference is reported with the sink, the batch
id, the first differing element and the operator chain (with the user's lines) behind it.

```python
runner = FlowRunner(flow, spark=spark, inputs={"xs": "feed:/tmp/xs"})
runner.start(); runner.process_all_available(); runner.stop()
report = verify_runner(runner)      # or verify_run(flow, checkpoint, spark) for file outputs
assert report.identical, str(report)
```
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyspark.sql import SparkSession

from ...ir import nodes as n
from ...ir.graph import Flow
from ...ir.meta import Kind
from ...sim.program import Program, compile_program
from ...sim.recorded import ReplayBatch, ReplayBlocked, operator_chain, replay_ticks
from ...sim.values import render
from . import ckfs
from .errors import SparkRunError
from .feed import feed_end
from .feed_mirror import read_entry, remote_entries
from .grouping import group_bytes
from .offsets import TickOffsets, read_offset_log
from .ports import (
    FeedInput,
    FileInput,
    FileOutput,
    InputBinding,
    MemorySink,
    OutputBinding,
    collect_values,
    external_schema,
    internal_columns,
)
from .retention import removed_below
from .runtime import HEARTBEAT
from .stages import Plan, Stage, plan_flow
from .types import OPAQUE, HType, from_python
from .values import SFrame


class VerifyError(SparkRunError):
    """The run cannot be replayed (an input or output that cannot be read back)."""

    code: ClassVar[str] = "HL-VERIFY"


@dataclass(frozen=True)
class Divergence:
    """The first place where Spark's output differs from the simulator's replay."""

    query: str
    sink: str
    batch_id: int
    spark: list[Any]
    model: list[Any]
    chain: str

    def element(self) -> str:
        """The first element that differs (missing on one side, or in another position)."""
        if self.batch_id < 0:
            return "the run cannot be replayed"
        for i, (a, b) in enumerate(zip(self.spark, self.model)):
            if a != b:
                return f"element {i}: Spark wrote {render(a)}, the simulator {render(b)}"
        if len(self.spark) > len(self.model):
            return f"Spark wrote an extra {render(self.spark[len(self.model)])}"
        if len(self.model) > len(self.spark):
            return f"Spark did not write {render(self.model[len(self.spark)])}"
        return "same elements in another order"

    def __str__(self) -> str:
        return (
            f"divergence in sink {self.sink!r} (query {self.query!r}), batch {self.batch_id}: {self.element()}\n"
            f"  Spark:     {render(self.spark)}\n  simulator: {render(self.model)}\n  produced by: {self.chain}"
        )


@dataclass
class VerifyReport:
    """The outcome of replaying a run: ticks and outputs compared, divergences found."""

    ticks: int = 0
    outputs: int = 0
    skipped: list[str] = field(default_factory=list)  # uncommitted batches, unreadable sinks
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.divergences

    def __str__(self) -> str:
        if self.identical and not self.outputs and self.skipped:
            head = (
                f"{self.ticks} ticks, nothing compared (no sink could be read back; bind sinks to files to verify them)"
            )
        else:
            head = f"{self.ticks} ticks, {self.outputs} outputs, " + (
                "identical" if self.identical else f"{len(self.divergences)} divergent batch(es)"
            )
        lines = [head, *(f"  not compared: {s}" for s in self.skipped)]
        if self.divergences:
            lines.append(f"first {self.divergences[0]}")
        return "\n".join(lines)


# ------------------------------------------------------------------ reading inputs back
def _types(node: n.Node) -> tuple[HType, HType | None]:
    vt = from_python(node.meta.elem) or OPAQUE
    kt = (from_python(node.meta.key) or OPAQUE) if node.meta.kind.keyed else None
    return vt, kt


def _entries_of(offset: Any) -> int:
    if offset is None:
        return 0
    if isinstance(offset, dict) and "entries" in offset:
        return int(offset["entries"])
    raise VerifyError(f"unexpected feed offset {offset!r}")


def read_feed(path: str, start: Any, end: Any, vt: HType, kt: HType | None) -> list[Any]:
    """The elements of feed entries [start, end) in feed order ((k, v) pairs when keyed)."""
    return [x for entry in read_feed_entries(path, start, end, vt, kt) for x in entry]


class _Gone:
    def __repr__(self) -> str:
        return "GONE"


#: a tombstone's value in `read_feed_entries` (the key left the keyed singleton)
GONE: Any = _Gone()


def read_feed_entries(path: str, start: Any, end: Any, vt: HType, kt: HType | None) -> list[list[Any]]:
    """The elements of each feed entry in [start, end) that is there, entry by entry (of a
    keyed singleton's deltas: a tombstone, a removed key, is the pair `(k, GONE)`)."""
    first, stop = _entries_of(start), _entries_of(end)
    gone = removed_below(path)
    if first < min(gone, stop):
        raise VerifyError(
            f"feed {path}: entries {first}..{min(gone, stop) - 1} a batch read were removed once every query reading "
            f"them was past them (entries below {gone} are gone: retention.py); a replay needs every batch's input "
            "from the first batch on\n  fix: run with FlowRunner(channel_history='all') "
            "(hydrolite run --channel-history all) to keep every channel entry of a run you will verify"
        )
    entries = remote_entries(path)
    out: list[list[Any]] = []
    for i in range(first, stop):
        if i not in entries:
            continue  # a producer's batch that ran no tick wrote none (`feed.feed_end`)
        table = read_entry(path, entries[i])
        vs = [vt.decode(x) for x in table.column("v").to_pylist()] if table.num_rows else []
        if "gone" in table.column_names:
            vs = [GONE if dead else v for v, dead in zip(vs, table.column("gone").to_pylist())]
        if kt is not None:
            ks = [kt.decode(x) for x in table.column("k").to_pylist()] if table.num_rows else []
            out.append(list(zip(ks, vs)))
        else:
            out.append(vs)
    return out


def read_files(spark: SparkSession, binding: FileInput, files: list[str], vt: HType, kt: HType | None) -> list[Any]:
    """The elements of the given input files, file by file, rows in file order."""
    from pyspark.sql import functions as F

    from .strict_read import read_input

    out: list[Any] = []  # read as the run read them: every record checked, rejected ones left out
    for f in files:
        df = read_input(spark, binding, binding.describe(), vt, kt, [f])
        df = df.filter(F.col("_file.bad").isNull()).select(*(["k"] if kt is not None else []), "v")
        out.extend(collect_values(SFrame(df, vt, kt)))
    return out


# ------------------------------------------------------------------ reading outputs back
def _sink_types(checkpoint: str, sink: n.Sink) -> tuple[HType, HType | None]:
    """The element types the run wrote a sink with (recorded by the runtime), else declared."""
    data = ckfs.read_bytes(ckfs.join(checkpoint, "sink_types", f"{sink.port}.pkl"))
    if data is not None:
        vt, kt = pickle.loads(data)
        return vt, kt
    return _types(sink)


def read_outputs(
    spark: SparkSession, sink: n.Sink, binding: OutputBinding, checkpoint: str
) -> dict[int, list[Any]] | None:
    """Per batch id, what a sink wrote (None when the binding cannot be read back)."""
    if isinstance(binding, MemorySink):
        return dict(binding.batches)
    if isinstance(binding, FileOutput) and ckfs.is_dir(binding.path):  # the user's directory, maybe a URI
        vt, kt = _sink_types(checkpoint, sink)
        out: dict[int, list[Any]] = {}
        for name in ckfs.list_names(binding.path):
            if not name.startswith("batch_id="):
                continue
            b = int(name.split("=", 1)[1])
            where = ckfs.join(binding.path, name)
            try:
                df = spark.read.schema(external_schema(vt, kt)).format(binding.fmt).load(where)
                out[b] = collect_values(SFrame(df.select(*internal_columns(vt, kt)), vt, kt))
            except Exception as exc:  # re-raised with the sink and the directory, without Java frames
                from .errors import describe_spark_error

                raise VerifyError(
                    f"sink {sink.port!r}: cannot read its output {where}: {describe_spark_error(exc)}"
                ) from exc
        return out
    return None


# ------------------------------------------------------------------ the replay
@dataclass
class _Query:
    stage: Stage
    bindings: dict[str, InputBinding]  # input name -> binding (source ports and channels)
    nodes: dict[str, n.Node]  # input name -> node it delivers
    deltas: set[str] = field(default_factory=set)  # keyed singleton channels whose entries are deltas
    tables: dict[str, dict[Any, Any]] = field(default_factory=dict)  # their versions so far, in the replay


def _same(spark_out: list[Any], model: list[Any], ordered: bool, strict: bool = False) -> bool:
    """Equal as Python compares (`1 == 1.0`: a file sink read back may hold 1.0 for 1), in
    order when the sink keeps it, else as multisets (by `grouping.group_bytes`, Python's
    equality). `strict` (a memory sink, which keeps each value's Python type): of the same
    type too, all the way down — `1`, `1.0` and `True` are three answers, as `repr()` shows."""
    if strict:
        spark_out, model = [typed(x) for x in spark_out], [typed(x) for x in model]
    if ordered:
        return spark_out == model
    return sorted(map(_identity, spark_out)) == sorted(map(_identity, model))


def typed(x: Any) -> Any:
    """`x` with the type of each part beside it, so that equality also compares the types
    (`typed(1) != typed(1.0)`; a NamedTuple is not its tuple).

        >>> typed((1, [True])) == typed((1.0, [1])), typed({"a": 1}) == typed({"a": 1})
        (False, True)
    """
    if isinstance(x, dict):
        return ("dict", frozenset((typed(k), typed(v)) for k, v in x.items()))
    if isinstance(x, (set, frozenset)):
        return (type(x).__name__, frozenset(typed(v) for v in x))
    if isinstance(x, (tuple, list)):
        return (type(x).__qualname__, tuple(typed(v) for v in x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__qualname__, tuple(typed(getattr(x, f.name)) for f in dataclasses.fields(x)))
    if isinstance(x, (bool, int, float, complex)):
        return (type(x).__name__, x)
    return x


def _identity(x: Any) -> bytes:
    try:
        return group_bytes(x)
    except (pickle.PicklingError, TypeError, AttributeError):  # not picklable: its repr, as before
        return repr(x).encode()


def _batch_inputs(spark: SparkSession, q: _Query, tick: TickOffsets, files: Mapping[str, list[str]]) -> ReplayBatch:
    sources: dict[str, list[Any]] = {}
    injected: dict[int, tuple[n.Node, list[Any]]] = {}
    for name, (start, end) in tick.inputs.items():
        if name == HEARTBEAT:
            continue  # no elements: it only made Spark run the tick (for deferred streams)
        node = q.nodes[name]
        binding = q.bindings[name]
        vt, kt = _types(node)
        if start == "?":
            raise VerifyError(
                f"query {q.stage.name!r} batch {tick.batch_id}: the start offset of {name!r} is no longer logged"
            )
        if isinstance(binding, FeedInput) and node.meta.kind is Kind.KEYED_SINGLETON:
            # entries are whole versions (the batch read the newest) or deltas (the batch read
            # every entry so far applied in order: the replay starts at the run's first batch)
            versions = read_feed_entries(binding.path, start, end, vt, kt)
            if name in q.deltas:
                table = q.tables.setdefault(name, {})
                for version in versions:
                    for k, v in version:
                        if v is GONE:
                            table.pop(k, None)
                        else:
                            table[k] = v
                elements = [dict(table)] if versions else []
            else:
                elements = [dict(versions[-1])] if versions else []
        elif isinstance(binding, FeedInput):
            elements = read_feed(binding.path, start, end, vt, kt)
        elif isinstance(binding, FileInput):
            if name not in files:
                raise VerifyError(
                    f"query {q.stage.name!r} batch {tick.batch_id}: the files of input {name!r} were not recorded"
                )
            elements = read_files(spark, binding, files[name], vt, kt)
        else:
            raise VerifyError(f"input {name!r} ({binding.describe()}) cannot be read back for a replay")
        if isinstance(node, n.Source):
            sources[node.port] = elements
        elif node.meta.kind.streamlike:
            injected[id(node)] = (node, elements)
        elif elements:
            injected[id(node)] = (node, elements[-1:])  # a singleton channel: its newest version
    return ReplayBatch(tick.batch_id, sources, injected)


def verify_plan(
    plan: Plan,
    checkpoint: str,
    spark: SparkSession,
    inputs: Mapping[str, InputBinding],
    outputs: Mapping[str, OutputBinding],
    channel_dir: Any,
    program: Program | None = None,
    memory_from: Mapping[str, int] | None = None,
) -> VerifyReport:
    """Replay every committed batch of every query of a run and compare every sink (a
    memory sink from batch `memory_from[query]` on: it holds only what this process ran)."""
    from .offsets import batch_files

    prog = program if program is not None else compile_program(plan.flow)
    report = VerifyReport()
    for stage in plan.stages:
        bindings: dict[str, InputBinding] = {s.port: inputs[s.port] for s in stage.sources}
        nodes: dict[str, n.Node] = {s.port: s for s in stage.sources}
        for ch in stage.channels_in:
            bindings[f"channel:{ch.name}"] = FeedInput(channel_dir(ch))
            nodes[f"channel:{ch.name}"] = ch.node
        q = _Query(stage, bindings, nodes, {f"channel:{ch.name}" for ch in stage.channels_in if ch.deltas})
        written: dict[str, dict[int, list[Any]]] = {}
        since: dict[str, int] = {}  # sink -> first batch it can show
        for sink in stage.sinks:
            got = read_outputs(spark, sink, outputs[sink.port], checkpoint)
            if got is None:
                report.skipped.append(f"sink {sink.port!r} ({outputs[sink.port].describe()}) cannot be read back")
                continue
            written[sink.port] = got
            if isinstance(outputs[sink.port], MemorySink) and (memory_from or {}).get(stage.name, 0):
                since[sink.port] = (memory_from or {})[stage.name]
                report.skipped.append(f"sink {sink.port!r} (memory) before batch {since[sink.port]}: an earlier run's")
        if not stage.streaming:
            ticks = [TickOffsets(stage.name, 0, True, {})]
        else:
            ticks = [t for t in read_offset_log(checkpoint, stage.name) if t.committed]
        batches = [_batch_inputs(spark, q, t, batch_files(checkpoint, stage.name, t.batch_id)) for t in ticks]
        # the runtime skips an empty first batch (Spark runs batch 0 even without data)
        batches = [
            b
            for b in batches
            if b.batch_id != 0
            or not stage.streaming
            or any(b.sources.values())
            or any(d for _, d in b.injected.values())
        ]
        try:
            results = replay_ticks(
                plan.flow,
                stage.tick,
                batches,
                sinks=[s.port for s in stage.sinks],
                program=prog,
                fed=[ch.node for ch in stage.channels_in],
            )
        except ReplayBlocked as exc:
            first = stage.sinks[0].port if stage.sinks else "-"
            report.divergences.append(Divergence(stage.name, first, -1, [], [], str(exc)))  # chain: why
            continue
        report.ticks += len(results)
        for r in results:
            for sink in stage.sinks:
                if sink.port not in written or r.batch_id < since.get(sink.port, 0):
                    continue
                wrote = written[sink.port].get(r.batch_id, [])
                model = r.outputs[sink.port]
                report.outputs += len(wrote)
                memory = isinstance(outputs[sink.port], MemorySink)
                if not _same(wrote, model, sink.meta.ordered and memory, memory):
                    report.divergences.append(
                        Divergence(stage.name, sink.port, r.batch_id, wrote, model, operator_chain(sink))
                    )
    report.divergences.sort(key=lambda d: d.batch_id)
    return report


def verify_runner(runner: Any) -> VerifyReport:
    """Verify the run of a `FlowRunner` (after it processed its inputs; memory sinks are
    compared over the batches this runner ran: a resumed checkpoint's earlier batches were
    written to another process's memory)."""
    plan, ck = runner.plan, runner.checkpoint
    return verify_plan(plan, ck, runner.spark, runner.inputs, runner.outputs, runner.channel_dir, None, runner.resumed)


def unread_entries(runner: Any) -> list[str]:
    """What a `FlowRunner`'s queries left unread in their feeds (sources fed through feeds,
    channels, heartbeats) once it processed everything available: one line per input whose
    newest committed offset is short of the feed's end, `[]` when none. After
    `process_all_available()` anything listed is input a query will never read (a stalled
    channel), which comparing the batches Spark ran with the simulator cannot see: a batch
    Spark never ran is missing from both sides.

        >>> unread_entries(type("Idle", (), {"stages": [], "checkpoint": "/nonexistent"})())
        []
    """
    lines = []
    ticks = read_offset_log(runner.checkpoint) if runner.stages else []
    for st in runner.stages:
        done = [t for t in ticks if t.query == st.stage.name and t.committed]
        for inp in st.inputs:
            if not isinstance(inp.binding, FeedInput):
                continue
            end = feed_end(inp.binding.path, int(inp.binding.options.get("base", "0")))
            got = done[-1].inputs.get(inp.name, (None, None))[1] if done else None
            read = _entries_of(got)
            if read < end:
                lines.append(f"query {st.stage.name!r} left entries {read}..{end - 1} of {inp.name} unread")
    return lines


def verify_run(
    flow: Flow,
    checkpoint: str,
    spark: SparkSession,
    inputs: Mapping[str, str] | None = None,
    outputs: Mapping[str, str] | None = None,
    cluster_sizes: Mapping[str, int] | None = None,
) -> VerifyReport:
    """Verify a run from its checkpoint: port bindings and clusters' member counts default to
    those the run recorded (`cluster_sizes` overrides the latter; a different count is refused)."""
    from .ports import parse_input, parse_output
    from .upgrade import reconcile, recorded_members

    plan = plan_flow(flow, cluster_sizes or recorded_members(checkpoint) or None)
    _place_as_recorded(plan, checkpoint)
    recon = reconcile(plan, checkpoint)  # the run's query directories and state keys
    if recon.refused:
        raise VerifyError(f"the program is not the one that wrote the checkpoint:\n{recon.render()}")
    recon.apply()
    recorded = _recorded_bindings(checkpoint)
    ins = {
        p: parse_input((inputs or {}).get(p) or recorded["inputs"].get(p) or _missing("input", p))
        for p in plan.flow.sources
    }
    # a sink the run did not record (console, callback) cannot be read back: not compared
    outs = {p: parse_output((outputs or {}).get(p) or recorded["outputs"].get(p) or "console") for p in plan.flow.sinks}
    root = ckfs.absolute(checkpoint)  # a URI stays one
    return verify_plan(plan, checkpoint, spark, ins, outs, lambda ch: ckfs.join(root, "channels", ch.name))


def _place_as_recorded(plan: Plan, checkpoint: str) -> None:
    """Keep each state where the run kept it (its `plan.json`). `plan_flow` puts eligible keyed
    state on the executors, but a run with `--keyed-state driver` (or `auto` on a local master)
    kept it on the driver, and replaying that checkpoint must not read as a change of home. The
    run options are tried in turn (auto holding each state where the checkpoint keeps it, as a
    resumed `auto` run does; driver; auto on a local master; executors); when none places the
    states as recorded, `plan_flow`'s placement stays, for `reconcile` to report."""
    from .placement import place_all
    from .state_homes import home_of
    from .upgrade import read_record

    record = read_record(checkpoint)
    if record is None:
        return
    recorded = sorted((s.op, s.at, s.home) for q in record[0].values() for s in q.state.values())
    # the last: plan_flow's own placement (everything eligible on the executors)
    tries = (("auto", checkpoint), ("driver", None), ("auto", None), ("executors", None))
    for option, kept in tries:
        place_all(plan, option, "local[*]", kept)
        homes = []
        for stage in plan.stages:
            ids = [plan.identities[id(x)] for x in stage.stateful]
            homes += [(i.op, i.at, home_of(stage, x)) for i, x in zip(ids, stage.stateful)]
        if sorted(homes) == recorded:
            return


def binding_spec(binding: InputBinding | OutputBinding) -> str | None:
    """The port SPEC that binds the same input/output again (None when it cannot be re-bound)."""
    from urllib.parse import urlencode

    if isinstance(binding, FeedInput):
        query = f"?{urlencode(binding.options)}" if binding.options else ""
        return f"feed:{ckfs.absolute(binding.path)}{query}"
    if isinstance(binding, FileInput):
        query = f"?{urlencode(binding.options)}" if binding.options else ""
        return f"{binding.fmt}:{ckfs.absolute(binding.path)}{query}"
    if isinstance(binding, FileOutput):
        return f"{binding.fmt}:{ckfs.absolute(binding.path)}"
    return binding.describe() if binding.describe() == "console" else None


def _missing(what: str, port: str) -> str:
    raise VerifyError(
        f"the checkpoint does not record the {what} bound to port {port!r}\n  fix: pass --input {port}=SPEC"
    )


def _recorded_bindings(checkpoint: str) -> dict[str, dict[str, str]]:
    """The port specs the run recorded (`record_bindings`); none for a run before them."""
    text = ckfs.read_text(ckfs.join(checkpoint, "bindings.json"))
    if text is None:
        return {"inputs": {}, "outputs": {}}
    data: dict[str, dict[str, str]] = json.loads(text)
    return data
