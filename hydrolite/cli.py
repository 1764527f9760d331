"""`hydrolite run | plan | offsets | verify-run | init`: run a program on Spark, show its plan,
show its offset log, check a finished run against the simulator, create a new project.

A program is a Python file (or `package.module`) exposing `build() -> hydrolite.Flow`.

`hydrolite run examples/counter.py` works on a fresh machine: Spark runs embedded
(`local[*]`); every source port not bound with `--input` gets demo data — the program's
optional `demo_inputs()` (a dict from port name to a list of batches, each a list of
elements) or, without it, a few generated elements of the port's type — and every sink
not bound with `--output` is printed. With only finite inputs (files, feeds, demo data)
the run stops once idle; with a rate source it runs until Ctrl-C (or use `--once`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import HydroliteError
from .ir.graph import Flow
from .progress import make_progress

if TYPE_CHECKING:
    from .metrics import RunMetrics
    from .planner.spark.runtime import FlowRunner
    from .planner.spark.stages import Plan


def load_program(spec: str) -> tuple[ModuleType, Flow]:
    """Import a program and call its flow builder: `prog.py`, `pkg/prog.py`, a module name
    importable from the current directory (`prog`, `pkg.prog`), each optionally followed by
    `:FUNC` to call another builder than `build()` (as `hydrolite sim --program FILE[:FUNC]`)."""
    from .sim.cli import split_target

    target, func = split_target(spec)
    if target.endswith(".py") or os.path.sep in target:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise SystemExit(f"hydrolite: no such program file: {target} (from {os.getcwd()})")
        # the module's name stays hydrolite_program_<file>: a record or enum key's shard
        # (`locations.sharding`) hashes its class's module, so a checkpoint's routing depends on it
        name = "hydrolite_program_" + os.path.splitext(os.path.basename(path))[0]
        sys.path.insert(0, os.path.dirname(path))
        mod_spec = importlib.util.spec_from_file_location(name, path)
        assert mod_spec is not None and mod_spec.loader is not None
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[name] = module
        mod_spec.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path:  # as `python -m` does: a module in the current directory
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as e:
            if e.name is None or not (target == e.name or target.startswith(e.name + ".")):
                raise  # the program itself imports something missing: its own traceback says what
            raise SystemExit(
                f"hydrolite: cannot import the program {target!r}: no module named {e.name!r} on the path "
                f"(the current directory is {os.getcwd()})\n"
                "  fix: give the program's file (prog.py, path/to/prog.py) or a module importable from here, "
                "optionally with :FUNC for a builder other than build()"
            ) from None
    what = f"{func}()" if func else "build()"
    build = getattr(module, func or "build", None)
    if build is None or not callable(build):
        other = "" if func else " (name another builder with PROGRAM:FUNC)"
        raise SystemExit(f"hydrolite: {target} has no {what} function returning a hydrolite.Flow{other}")
    flow = build()
    if not isinstance(flow, Flow):
        raise SystemExit(f"hydrolite: {spec}: {what} returned {type(flow).__name__}, not a hydrolite.Flow")
    return module, flow


def _pairs(items: Sequence[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        port, sep, value = item.partition("=")
        if not sep or not port:
            raise SystemExit(f"hydrolite: {what} must look like port=SPEC, got {item!r}")
        out[port] = value
    return out


# ------------------------------------------------------------------ plan
def cmd_plan(args: argparse.Namespace) -> int:
    from .planner.spark.placement import place_all
    from .planner.spark.render import RENDERERS
    from .planner.spark.stages import plan_flow

    _, flow = load_program(args.program)
    plan = plan_flow(flow, _cluster_sizes(args.cluster_members))
    against = None
    if args.against is not None:
        from .planner.spark.lock import checkpoint_dir

        against = checkpoint_dir(args.against)
        if not _checkpoint_found(against, args.master):
            raise SystemExit(f"hydrolite: error: --against {args.against}: no such checkpoint directory")
    # as `run --keyed-state` would place it (under auto, states the checkpoint keeps stay where they are)
    place_all(plan, args.keyed_state, args.master or "local[*]", against, args.reset_state)
    if against is not None:
        from .planner.spark.upgrade import reconcile

        recon = reconcile(plan, against, args.reset_state)
        print(recon.render())
        return 1 if recon.refused else 0
    print(RENDERERS[args.format](plan))
    return 0


def _checkpoint_found(checkpoint: str, master: str | None) -> bool:
    """Whether a checkpoint directory exists: a local one asked of the OS, a Hadoop URI of
    Spark (`ckfs`), whose session is started for it first (a local one needs none)."""
    from .planner.spark import ckfs

    if not ckfs.is_local(checkpoint):
        from .planner.spark.session import spark_session

        spark_session(master, {})
    return ckfs.is_dir(checkpoint)


def _keyed_state_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--keyed-state",
        choices=("auto", "executors", "driver"),
        default="auto",
        help="executors: keyed state read only per key is partitioned across Spark's executors (its state store); "
        "driver: all state in the driver's store (how checkpoints of earlier hydrolite versions keep it); "
        "auto (default): executors on a cluster master, driver on a local one (measured faster there), and a "
        "resumed state where its checkpoint keeps it; joins of "
        "unbounded streams are never on the driver: per key on the executors, or (driver, and auto on a local "
        "master) with their history as Parquet",
    )


def _history(text: str | None) -> int | str | None:
    """`--channel-history`: an int, 'all' or the default (None); FlowRunner checks the value.

    >>> [_history(x) for x in ("5", "all", None, "-1")]
    [5, 'all', None, -1]
    """
    return int(text) if text is not None and text.strip().lstrip("-").isdigit() else text


# ------------------------------------------------------------------ offsets
def cmd_offsets(args: argparse.Namespace) -> int:
    import json

    from .planner.spark.lock import checkpoint_dir
    from .planner.spark.offsets import read_offset_log, repair_offsets

    checkpoint = checkpoint_dir(args.checkpoint)
    _checkpoint_found(checkpoint, None)  # a URI is read through Spark: its session first
    if args.repair:
        repaired = repair_offsets(checkpoint)
        for path in repaired:
            print(f"hydrolite: rebuilt {path} from hydrolite's remap log", file=sys.stderr)
        if not repaired:
            print("hydrolite: no damaged offset file that the remap log can rebuild", file=sys.stderr)
    ticks = read_offset_log(checkpoint, args.query)
    if not ticks:
        print(f"no offset log under {checkpoint}", file=sys.stderr)
        return 1
    for t in ticks:
        if args.json:
            print(json.dumps({"query": t.query, "batch_id": t.batch_id, "committed": t.committed, "inputs": t.inputs}))
        else:
            print(t.describe())
    return 0


# ------------------------------------------------------------------ run
def _demo_feeds(module: ModuleType, plan: Plan, unbound: list[str], directory: str) -> dict[str, str]:
    from .input_feeds import demo_batches, feed_inputs

    given = getattr(module, "demo_inputs", None)
    batches = {p: b for p, b in dict(given()).items() if p in unbound} if callable(given) else {}
    for port, tag in plan.cluster_ports.items():  # a cluster source's records are (member, value)
        if port in unbound and port not in batches and port in plan.flow.sources:
            size = plan.cluster_members[tag]
            batches[port] = [[(m % size, v) for m, v in b] for b in demo_batches(plan.flow, port)]
    return feed_inputs(plan.flow, unbound, directory, batches)


def _cluster_sizes(items: Sequence[str]) -> dict[str, int]:
    """`--cluster-members Tag=N` (repeatable) as {Tag: N}."""
    out: dict[str, int] = {}
    for item in items:
        tag, sep, value = item.partition("=")
        if not sep or not tag or not value.strip().isdigit():
            raise SystemExit(f"hydrolite: --cluster-members must look like Tag=N (N members), got {item!r}")
        out[tag] = int(value)
    return out


def _cluster_members_option(p: argparse.ArgumentParser, default: str = "2 per cluster, as the simulator") -> None:
    p.add_argument(
        "--cluster-members",
        action="append",
        default=[],
        metavar="TAG=N",
        help=f"members of the cluster whose tag class is TAG (repeatable; default {default})",
    )


def cmd_run(args: argparse.Namespace) -> int:
    from .planner.spark import ckfs
    from .planner.spark.faults import fault_from_env
    from .planner.spark.lock import CheckpointLock, checkpoint_dir
    from .planner.spark.runtime import FlowRunner
    from .planner.spark.session import spark_session
    from .planner.spark.stages import plan_flow

    module, flow = load_program(args.program)
    plan = plan_flow(flow, _cluster_sizes(args.cluster_members))
    inputs: dict[str, Any] = dict(_pairs(args.input, "--input"))
    outputs: dict[str, Any] = dict(_pairs(args.output, "--output"))
    unknown = sorted(set(inputs) - set(flow.sources)) + sorted(set(outputs) - set(flow.sinks))
    if unknown:
        raise SystemExit(
            f"hydrolite: unknown ports {unknown}; the program has sources {sorted(flow.sources)} and sinks {sorted(flow.sinks)}"
        )
    checkpoint = checkpoint_dir(args.checkpoint or os.path.join(".hydrolite", flow.name))
    conf = _pairs(args.conf, "--conf")
    print(f"hydrolite: running {flow.name!r} on {args.master or 'local[*]'}; checkpoint {checkpoint}")
    # one runner per checkpoint, before anything is written (and before Spark starts, for a
    # local one; a lease on a Hadoop file system is taken through Spark)
    lock = CheckpointLock(checkpoint) if ckfs.is_local(checkpoint) else None
    spark = spark_session(args.master, conf, verbose=args.verbose)
    lock = lock or CheckpointLock(checkpoint)
    unbound = sorted(p for p in flow.sources if p not in inputs)
    if unbound:
        inputs.update(_demo_feeds(module, plan, unbound, ckfs.join(checkpoint, "demo-inputs")))
        print(f"hydrolite: demo data for unbound ports: {', '.join(unbound)} (bind them with --input port=SPEC)")
    for port in flow.sinks:
        outputs.setdefault(port, "console")
    finite = all(not str(v).startswith("rate") for v in inputs.values())
    runner = FlowRunner(
        plan,
        spark=spark,
        checkpoint=checkpoint,
        inputs=inputs,
        outputs=outputs,
        fault=fault_from_env(),
        reset_state=args.reset_state,
        lock=lock,
        keyed_state=args.keyed_state,
        channel_history=_history(args.channel_history),
    )
    for s in runner.plan.stages:
        print(f"hydrolite: query {s.name}: reads {[x.port for x in s.sources]}, writes {[x.port for x in s.sinks]}")
        done = runner.resumed.get(s.name, 0)
        if done:
            print(f"hydrolite: query {s.name}: resuming after batch {done - 1} (checkpoint {checkpoint})")
    metrics = _serve_metrics(runner, args.metrics_port, args.metrics_addr)
    progress = make_progress(runner, args.progress)
    runner.start(once=args.once)
    try:
        if args.once:
            runner.await_termination()
        elif args.until_idle is not None or finite:
            runner.run_until_idle(args.until_idle or 3.0, on_progress=progress.show)
        else:
            while True:
                time.sleep(1.0)
                progress.show(runner)
                runner._check()
    except KeyboardInterrupt:
        print("hydrolite: interrupted; the checkpoint keeps the progress, run again to resume")
    finally:
        runner.stop()
    progress.show(runner, final=True)
    if metrics is not None:
        metrics.wait_for_end()  # every progress event of the run counted (a last scrape sees them)
        metrics.close()
    return 0


def _serve_metrics(runner: FlowRunner, port: int | None, addr: str) -> RunMetrics | None:
    """`--metrics-port`: a Prometheus endpoint for this run (hydrolite/metrics.py), or None."""
    if port is None:
        return None
    from .metrics import RunMetrics

    metrics = RunMetrics(runner)
    try:
        bound = metrics.serve(port, addr)
    except BaseException:
        metrics.close()
        runner.stop()
        raise
    host = f"[{addr}]" if ":" in addr else addr
    print(f"hydrolite: Prometheus metrics at http://{host}:{bound}/metrics", flush=True)
    return metrics


def cmd_verify_run(args: argparse.Namespace) -> int:
    from .planner.spark.lock import checkpoint_dir
    from .planner.spark.session import spark_session
    from .planner.spark.verify import verify_run

    _, flow = load_program(args.program)
    checkpoint = checkpoint_dir(args.checkpoint)
    if not _checkpoint_found(checkpoint, args.master):
        raise SystemExit(f"hydrolite: no such checkpoint directory: {args.checkpoint}")
    spark = spark_session(args.master, {})
    report = verify_run(
        flow,
        checkpoint,
        spark,
        _pairs(args.input, "--input"),
        _pairs(args.output, "--output"),
        _cluster_sizes(args.cluster_members),
    )
    print(report)
    return 0 if report.identical else 2


# ------------------------------------------------------------------ init
def cmd_init(args: argparse.Namespace) -> int:
    from .init_project import create_project, project_names

    directory, _, module = project_names(args.name)
    written = create_project(args.name, args.hydrolite_spec)
    print(f"hydrolite: created {directory}:")
    for path in written:
        print(f"    {path}")
    print(
        f"next: cd {os.path.relpath(directory)} && python -m venv .venv && . .venv/bin/activate && "
        f"pip install -e '.[dev]' && pytest && mypy && hydrolite run {module}/pipeline.py"
    )
    return 0


# ------------------------------------------------------------------ main
PROGRAM_HELP = "a .py file or a module (importable from the current directory) exposing build() -> hydrolite.Flow; PROGRAM:FUNC calls FUNC() instead"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hydrolite", description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a program on Spark (embedded local[*] by default)")
    run.add_argument("program", help=PROGRAM_HELP)
    run.add_argument(
        "--master", help="Spark master URL (local[*], spark://..., yarn) or Spark Connect (sc://host:port)"
    )
    run.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="PORT=SPEC",
        help="bind a source port: DIR, json:|csv:|parquet:DIR, feed:DIR, delta:PATH, rate:rowsPerSecond=N, demo, "
        "or a scheme of an installed port plugin (docs/ports.md)",
    )
    run.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="PORT=SPEC",
        help="bind a sink port: DIR, json:|csv:|parquet:DIR, delta:PATH, postgres:DSN?table=T, console, memory, "
        "callback:module:function, or a scheme of an installed port plugin (docs/ports.md)",
    )
    run.add_argument("--checkpoint", help="checkpoint directory (default .hydrolite/<program name>); rerun to resume")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark configuration")
    mode = run.add_mutually_exclusive_group()
    run.add_argument(
        "--reset-state",
        action="append",
        default=[],
        metavar="OP@FILE:LINE",
        help="accept that this operator's state starts empty (or is dropped) when resuming an edited program; "
        "names as `hydrolite plan --against CHECKPOINT` prints them (repeatable)",
    )
    _keyed_state_option(run)
    _cluster_members_option(run)
    run.add_argument(
        "--channel-history",
        metavar="N|all",
        help="newest batches of each query whose channel entries stay under the checkpoint (default: Spark's "
        "spark.sql.streaming.minBatchesToRetain, 100); all: keep every entry (to `hydrolite verify` a long run)",
    )
    run.add_argument("--verbose", action="store_true", help="keep Spark's own logging (default: Spark errors only)")
    run.add_argument(
        "--progress",
        choices=("auto", "live", "lines"),
        default="auto",
        help="live: a table redrawn in place (rich); lines: one line per finished batch; auto: live on a terminal",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics on this port during the run (0: any free port, printed)",
    )
    run.add_argument(
        "--metrics-addr",
        default="127.0.0.1",
        metavar="ADDR",
        help="address of --metrics-port (0.0.0.0: every interface)",
    )
    mode.add_argument("--once", action="store_true", help="process what is available now, then stop")
    mode.add_argument(
        "--until-idle", nargs="?", type=float, const=3.0, metavar="SECONDS", help="stop after SECONDS without new input"
    )
    run.set_defaults(fn=cmd_run)

    plan = sub.add_parser("plan", help="show the queries, merged ticks and aligned regions")
    plan.add_argument("program", help=PROGRAM_HELP)
    plan.add_argument("--format", choices=("text", "dot", "mermaid"), default="text")
    plan.add_argument(
        "--against",
        metavar="CHECKPOINT",
        help="compare with the plan a checkpoint recorded: what resumes, what state would be lost (exit 1 when the run would be refused)",
    )
    plan.add_argument(
        "--reset-state",
        action="append",
        default=[],
        metavar="OP@FILE:LINE",
        help="as for run: accept that this operator's state starts empty / is dropped",
    )
    _keyed_state_option(plan)
    _cluster_members_option(plan)
    plan.add_argument("--master", help="the master the run will use (decides --keyed-state auto; default local[*])")
    plan.set_defaults(fn=cmd_plan)

    offsets = sub.add_parser("offsets", help="show, per tick (micro-batch), the source offsets it covered")
    offsets.add_argument("checkpoint")
    offsets.add_argument("--query", help="only this query (e.g. tick0)")
    offsets.add_argument("--json", action="store_true", help="one JSON object per line")
    offsets.add_argument(
        "--repair",
        action="store_true",
        help="first rebuild damaged (truncated) Spark offset files from hydrolite's remap log",
    )
    offsets.set_defaults(fn=cmd_offsets)

    verify = sub.add_parser(
        "verify-run", help="replay a finished run in the simulator and compare every sink, batch by batch"
    )
    verify.add_argument("program", help=PROGRAM_HELP)
    verify.add_argument("checkpoint", help="the run's checkpoint directory (its offset log says what each tick read)")
    verify.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="PORT=SPEC",
        help="where a source's data is now (default: as recorded by the run)",
    )
    verify.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="PORT=SPEC",
        help="where a sink's outputs are (default: as recorded by the run)",
    )
    verify.add_argument("--master", help="Spark master URL used to read files back (default local[*])")
    _cluster_members_option(verify, "the members the run had, from its checkpoint")
    verify.set_defaults(fn=cmd_verify_run)

    init = sub.add_parser("init", help="create a new project: a program, a simulator test, pytest, mypy, pre-commit")
    init.add_argument("name", help="the project's directory (its name is the project's; it must not exist or be empty)")
    init.add_argument(
        "--hydrolite-spec",
        metavar="REQUIREMENT",
        help="the hydrolite dependency to write (default: where this hydrolite was installed from, "
        "e.g. 'hydrolite @ file:///path/to/checkout')",
    )
    init.set_defaults(fn=cmd_init)

    from .sim.cli import add_parser as add_sim_parser

    add_sim_parser(sub)  # hydrolite sim PROGRAM:SCENARIO [--replay v1:...] [--fuzz N] [--program FILE[:FUNC]]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except HydroliteError as exc:
        print(f"hydrolite: error [{exc.code}]: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `hydrolite plan ... | head`: the reader stopped; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
