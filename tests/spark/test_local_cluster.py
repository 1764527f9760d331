"""The examples on `local-cluster[2,1,1024]`: separate executor JVMs, whose Python workers
import nothing the driver imported at run time (issue 14, deliverable 4).

Each program runs from its file, as `hydrolite run PROGRAM` loads it (so its module is
not importable on the executors), with keyed state on the executors (what `auto` chooses on
a cluster master) and, when that places some state differently, again on the driver; all
in ONE local-cluster application: a subprocess calling the CLI's `main` once per run (the
test session's own SparkSession is `local[2]`, and a process holds one SparkContext). Inputs are feeds capped at one entry per micro-batch, so the batches are the
same on every master. Each cluster run must

* write, batch by batch, exactly what the same program writes on `local[2]` here, and
* replay identically in the simulator (`verify_run`, the reference semantics).

One program is written into a temporary directory outside the repository, with a helper
module of its own, as a new user's would be. A new program is one more `Program(...)`
line in `ALL_PROGRAMS`. The default run keeps the suite's time in bounds: the sharded
key-value store (a `Cluster`) and the key-value store from outside the repository, keyed
state on the executors; `HYDROLITE_LOCAL_CLUSTER=all` adds the examples (counters, kvstore,
bank) and the runs with keyed state on the driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hydrolite.cli import load_program, main
from hydrolite.ir.graph import Flow
from hydrolite.planner.spark.feed import FeedWriter
from hydrolite.planner.spark.placement import place_all
from hydrolite.planner.spark.ports import parse_output
from hydrolite.planner.spark.stages import plan_flow
from hydrolite.planner.spark.state_homes import home_of
from hydrolite.planner.spark.types import OPAQUE, from_python
from hydrolite.planner.spark.verify import read_outputs, verify_run

pytestmark = [pytest.mark.spark, pytest.mark.cluster]
ROOT = Path(__file__).resolve().parents[2]
MASTER = "local-cluster[2,1,1024]"
MODES = ("executors", "driver")
CLUSTER_TIMEOUT_S = 600  # the whole subprocess: JVM, two executor JVMs, every run
# The executor JVMs get the test JVMs' JIT and GC flags (tests/conftest.py gives them to the
# driver through SPARK_SUBMIT_OPTS, which executors do not read): C1 only and one GC thread,
# as their lives are short and three JVMs share the machine's cores; and the class archive the
# driver maps (tests/jvm_archive.py), when there is one. Semantics do not change.
EXECUTOR_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def executor_jvm() -> str:
    archive = [o for o in os.environ.get("SPARK_SUBMIT_OPTS", "").split() if o.startswith("-XX:SharedArchiveFile=")]
    return "spark.executor.extraJavaOptions=" + " ".join([EXECUTOR_JVM, *archive])


@dataclass(frozen=True)
class Program:
    """A program file and its inputs: per source port, the feed entries (one per micro-batch)."""

    name: str
    path: Callable[[Path], Path]  # given the temporary directory, where the program file is
    feeds: dict[str, list[list[Any]]]
    options: tuple[str, ...] = ()  # more `hydrolite run` options, on every master (e.g. a cluster's members)


def example(name: str) -> Callable[[Path], Path]:
    return lambda _tmp: ROOT / "examples" / f"{name}.py"


COUNTER_FEEDS: dict[str, list[list[Any]]] = {
    "increment": [[("i0", None), ("i1", None)], [("i2", None)], [("i3", None), ("i4", None), ("i5", None)]],
    "query": [[("q0", None)], [("q1", None), ("q2", None)], [("q3", None)]],
}
# Three batches: a get beside the put of its key (batch 0, and x in batch 1), an overwritten
# key (k, j), a missing key (nope), and a batch without puts reading state of older batches.
KV_FEEDS: dict[str, list[list[Any]]] = {
    "put": [[("c1", "k", 5), ("c1", "j", 1)], [("c2", "k", 7), ("c3", "x", 2), ("c3", "j", 4)], []],
    "get": [[("g0", "k")], [("g1", "k"), ("g1", "nope"), ("g1", "x")], [("g2", "j"), ("g2", "x"), ("g3", "k")]],
}
BANK_FEEDS: dict[str, list[list[Any]]] = {
    "deposit": [[("a", 10), ("b", 5)], [("c", 1)], []],
    "transfer": [[("a", "b", 3)], [("b", "c", 8)], [("c", "a", 2)]],
    "audit": [["x"], ["y"], ["z"]],
}

# A new user's program: outside the repository, with a helper module beside it that the
# lambdas reach through a module global and through a name imported from it.
USER_PROGRAM = '''
"""A key-value store written outside the hydrolite repository."""
import hydrolite as hl
from hydrolite import nondet

import kv_rules
from kv_rules import answer


class Store:
    """Tag of the store process."""


def build() -> hl.Flow:
    flow = hl.FlowBuilder("user_kv")
    store = flow.process(Store)
    puts = store.source("put", tuple[str, str, int])
    gets = store.source("get", tuple[str, str])
    align = store.local_align_point()
    table = puts.map(lambda p: kv_rules.entry(p)).into_keyed().reduce(lambda _old, new: new)
    puts.release_aligned(align).map(lambda p: (p[0], p[1])).sink("put_ack")
    tick = store.tick()
    requests = gets.batch(tick, nondet("any grouping")).map(lambda g: (g[1], g[0])).into_keyed()
    snapshot = table.snapshot_aligned(tick, align, nondet("consistent with the acks"))
    requests.lookup_keyed_singleton(snapshot).entries().map(lambda e: answer(e)).all_ticks().sink("get_response")
    return flow.finalize()
'''
USER_HELPERS = '''
"""Helpers of the user's program (a module Spark's Python workers cannot import by name)."""


def entry(p):
    return (p[1], p[2] * 10)


def answer(e):
    return (e[1][0], e[0], e[1][1])
'''


def user_program(tmp: Path) -> Path:
    d = tmp / "user_project"
    d.mkdir(exist_ok=True)
    (d / "kv_rules.py").write_text(textwrap.dedent(USER_HELPERS))
    (d / "user_kv.py").write_text(textwrap.dedent(USER_PROGRAM))
    return d / "user_kv.py"


ALL_PROGRAMS = [
    Program("counter", example("counter"), COUNTER_FEEDS),
    Program("counter_naive", example("counter_naive"), COUNTER_FEEDS),
    Program("kvstore", example("kvstore"), KV_FEEDS),
    Program("bank", example("bank"), BANK_FEEDS),
    Program("user_kv", user_program, KV_FEEDS),
    Program("sharded_kvstore", example("sharded_kvstore"), KV_FEEDS, ("--cluster-members", "Shard=3")),
]
#: the default run (see the module's docstring); HYDROLITE_LOCAL_CLUSTER=all runs every example
EVERY = os.environ.get("HYDROLITE_LOCAL_CLUSTER", "") == "all"
PROGRAMS = [p for p in ALL_PROGRAMS if EVERY or p.name in ("user_kv", "sharded_kvstore")]


def load(path: Path) -> Flow:
    return load_program(str(path))[1]


def planned_homes(flow: Flow, mode: str) -> list[tuple[str, str]]:
    """Where `hydrolite run --keyed-state MODE` on a cluster master puts each state."""
    plan = plan_flow(flow)
    place_all(plan, mode, MASTER)
    out = []
    for stage in plan.stages:
        out += [(f"{plan.identities[id(x)].op}@{plan.identities[id(x)].at}", home_of(stage, x)) for x in stage.stateful]
    return sorted(out)


def modes(flow: Flow) -> tuple[str, ...]:
    """executors (what `auto` chooses on a cluster master), and driver where that plan differs."""
    if not EVERY:  # the driver's store runs in the driver whatever the master
        return ("executors",)
    return MODES if planned_homes(flow, "driver") != planned_homes(flow, "executors") else ("executors",)


def write_inputs(flow: Flow, feeds: dict[str, list[list[Any]]], d: Path) -> dict[str, str]:
    """Write the feeds (typed as the program's sources) under d; their specs, one entry per batch."""
    specs: dict[str, str] = {}
    for port, entries in feeds.items():
        src = flow.sources[port]
        vt = from_python(src.meta.elem) or OPAQUE
        kt = (from_python(src.meta.key) or OPAQUE) if src.meta.kind.keyed else None
        w = FeedWriter(str(d / "in" / port), vt, kt)
        for entry in entries:
            w.send_many(entry)
        specs[port] = f"feed:{d / 'in' / port}?maxEntriesPerTrigger=1"
    return specs


def output_specs(flow: Flow, d: Path) -> dict[str, str]:
    return {port: f"json:{d / 'out' / port}" for port in flow.sinks}


def cli_args(prog: Program, path: Path, d: Path, master: str, mode: str) -> list[str]:
    """`hydrolite run PROGRAM` on `master` with the program's feeds (written under d) and JSON outputs."""
    flow = load(path)
    inputs, outputs = write_inputs(flow, prog.feeds, d), output_specs(flow, d)
    args = ["run", str(path), "--master", master, "--keyed-state", mode, "--once", "--progress", "lines"]
    args += ["--checkpoint", str(d / "ck"), "--conf", "spark.sql.shuffle.partitions=2", *prog.options]
    if master == MASTER:
        args += ["--conf", executor_jvm()]
    for port, spec in inputs.items():
        args += ["--input", f"{port}={spec}"]
    for port, spec in outputs.items():
        args += ["--output", f"{port}={spec}"]
    return args


# One local-cluster application, every run in turn through the CLI's main (which leaves the
# session running for the next). `load_program` puts a program's directory on the driver's
# sys.path only: the executors' Python workers get the user's modules pickled by value or not at all.
CLUSTER_DRIVER = """
import json, sys, time
from hydrolite.cli import main
for args in json.load(open(sys.argv[1])):
    t = time.monotonic()
    rc = main(args)
    print(f"local-cluster run {args[1]} --keyed-state {args[5]}: rc {rc} in {time.monotonic() - t:.1f} s", flush=True)
    if rc != 0:
        sys.exit(rc)
"""


@pytest.fixture(scope="module")
def cluster_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run every program in its modes on one local-cluster application (a subprocess)."""
    base = tmp_path_factory.mktemp("local_cluster")
    jobs: list[list[str]] = []
    for prog in PROGRAMS:
        path = prog.path(base)
        for mode in modes(load(path)):
            jobs.append(cli_args(prog, path, base / prog.name / mode, MASTER, mode))
    (base / "jobs.json").write_text(json.dumps(jobs))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "lint")])}
    t = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CLUSTER_DRIVER, str(base / "jobs.json")],
        cwd=base,  # not the repository: nothing of it is importable by accident
        env=env,
        capture_output=True,
        text=True,
        timeout=CLUSTER_TIMEOUT_S,
    )
    log = f"exit {done.returncode} after {time.monotonic() - t:.0f} s\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    (base / "cluster.log").write_text(log)
    assert done.returncode == 0, log
    return base


def outputs_by_batch(spark: SparkSession, flow: Flow, d: Path) -> dict[str, dict[int, list[str]]]:
    """Per sink, per batch id, the rendered values written (sorted: partitions may interleave)."""
    out: dict[str, dict[int, list[str]]] = {}
    for port, spec in output_specs(flow, d).items():
        got = read_outputs(spark, flow.sinks[port], parse_output(spec), str(d / "ck"))
        assert got is not None, f"sink {port!r} of {d} cannot be read back"
        out[port] = {b: sorted(map(repr, vs)) for b, vs in sorted(got.items())}
    return out


def recorded_homes(d: Path) -> tuple[int, list[tuple[str, str]]]:
    """The run's queries and where it kept each state (operator@file:line, home), from its plan.json."""
    plan = json.loads((d / "ck" / "plan.json").read_text())
    homes = [(f"{s['op']}@{s['at']}", s["home"]) for q in plan["queries"].values() for s in q["state"].values()]
    return len(plan["queries"]), sorted(homes)


def test_a_program_keeps_state_on_the_executors(tmp_path: Path) -> None:
    """Without one, the runs with keyed state on the executors would test nothing of it."""
    flows = [load(p.path(tmp_path)) for p in PROGRAMS]
    assert all(any(home == "executors" for _, home in planned_homes(f, "executors")) for f in flows)


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_local_cluster_runs_equal_local_and_simulator(
    prog: Program, cluster_runs: Path, spark: SparkSession, tmp_path: Path
) -> None:
    path = prog.path(cluster_runs)
    flow = load(path)
    # the reference: the same CLI on this session's local[2] (`auto` keeps keyed state on the driver there)
    assert main(cli_args(prog, path, tmp_path, "local[2]", "auto")) == 0
    local = outputs_by_batch(spark, flow, tmp_path)
    assert all(local.values()), f"{prog.name} left a sink empty on local[2]: {local}"
    batches = max(map(len, prog.feeds.values()))
    for mode in modes(flow):
        d = cluster_runs / prog.name / mode
        cluster = outputs_by_batch(spark, flow, d)
        assert cluster == local, f"{prog.name} --keyed-state {mode}: {MASTER} wrote\n{cluster}\nlocal[2] wrote\n{local}"
        queries, homes = recorded_homes(d)
        assert homes == planned_homes(flow, mode), f"{prog.name} --keyed-state {mode}: state kept at {homes}"
        report = verify_run(flow, str(d / "ck"), spark)
        assert report.identical and report.ticks == queries * batches, f"{prog.name} --keyed-state {mode}: {report}"
