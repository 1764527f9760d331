"""`Simulator`: runs a scenario once per explored execution, in exhaustive, fuzz or replay mode.

A failing execution is shrunk (smallest choice sequence failing the same way), replayed
with tracing on, and raised as `SimulationFailure` whose message is the report: the
assertion, the steps and choices with the user's file:line and code, and a replay line.
Outputs whose type promises determinism are compared across executions with the same inputs.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import random
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from ..ir.graph import Flow
from ..live.ports import SinkPort
from .choices import (
    Chooser,
    DataChooser,
    PrefixChooser,
    RandomChooser,
    ReplayDiverged,
    next_prefix,
)
from .crash import SPARK, CrashWorld, Recovery, first_difference, sink_outputs
from .errors import (
    CrashDivergence,
    DeterminismViolation,
    ExplorationLimit,
    Pruned,
    SimulationFailure,
    SimUsageError,
)
from .ports import Receiver, Sender
from .program import Program, compile_program
from .report import REPLAY_ENV, failure_report, format_trace, replay_line
from .shrink import Attempt, Outcome, shrink
from .values import decode_replay, encode_choices, render
from .world import World

T = TypeVar("T")
Scenario = Callable[..., object]
_SIM_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PASSTHROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit)


def _aligned(flow: Flow) -> Flow:
    from ..passes.align import align_flow

    return align_flow(flow)


def _signature(e: BaseException) -> tuple[str, str, str]:
    """What makes two failures 'the same': error type, the test's line, the operator's site."""
    where = ""
    for frame, line in traceback.walk_tb(e.__traceback__):
        if not frame.f_code.co_filename.startswith(_SIM_DIR):
            where = f"{frame.f_code.co_filename}:{line}"
    node = getattr(e, "node", None)
    return type(e).__name__, where, str(node.site) if node is not None else ""


class Simulator:
    """Explores the executions of one program under a scenario written against its ports."""

    def __init__(
        self,
        flow: Flow | Callable[[], Flow],
        *,
        cluster_sizes: Mapping[str, int] | None = None,
        align: bool = True,
        max_steps: int = 10_000,
        fairness: int = 2,
        interleavings: bool = False,
        per_key_snapshots: bool = False,
    ) -> None:
        """`interleavings` and `per_key_snapshots` explore finer asynchrony (more executions;
        see `asynchrony.py`): per-edge delivery into two-input top-level operators, and
        keyed-singleton snapshots that see each key at its own version."""
        built = flow if isinstance(flow, Flow) else flow()
        self._flow_source: Any = None if isinstance(flow, Flow) else flow  # for the replay hint
        self._cluster_sizes = dict(cluster_sizes or {})
        self._scenario: Any = None
        self.flow = _aligned(built) if align else built
        self.model = {"interleavings": interleavings, "per_key_snapshots": per_key_snapshots}  # the model options
        self.program: Program = compile_program(self.flow, cluster_sizes, **self.model)
        self.max_steps = max_steps
        if fairness < 0:
            raise SimUsageError(f"fairness must be >= 0 (self-driven runs an input may wait), got {fairness}")
        self.fairness = fairness
        self.executions = 0  # executions explored by the last exhaustive/fuzz/replay call
        self.pruned = 0  # branches of equivalent schedules the last exhaustive call skipped (see exhaustive)
        self.abandoned = 0  # partial executions it stopped because every next action was asleep
        self._por = False  # partial-order reduction in the current mode
        self._world: World | None = None
        self._senders: dict[tuple[str, int | None], Sender[Any]] = {}
        self._receivers: dict[tuple[str, int | None], Receiver[Any]] = {}
        self._seen: dict[Any, tuple[tuple[Any, ...], list[int]]] = {}
        self.recovery: Recovery = SPARK  # how a crashed process recovers (crash.py); tests break it on purpose
        self._crashes = 0  # crash budget per execution in the current mode (0: no crash choices)
        self._baseline: dict[tuple[int, ...], Any] = {}  # schedule without crashes -> its outputs
        self.baseline_runs = 0  # uninterrupted executions run to compare crashing ones with

    # ------------------------------------------------------------- ports
    @property
    def world(self) -> World:
        """The execution currently running (senders and receivers act on it)."""
        if self._world is None:
            raise SimUsageError(
                "no execution is running: send and receive inside the scenario passed to exhaustive()/fuzz()/replay()"
            )
        return self._world

    @property
    def crash_log(self) -> list[str]:
        """The crashes of the current execution so far, described (empty without `crashes=`)."""
        w = self.world
        return list(w.crash_log) if isinstance(w, CrashWorld) else []

    def _place(self, top: Any, port: str, member: int | None) -> int:
        places = self.program.places_of[top]
        if self.program.places[places[0]].member is None:
            if member is not None:
                raise SimUsageError(f"port {port!r} is on {top}, a process: do not pass member=")
            return places[0]
        if member is None or not 0 <= member < len(places):
            raise SimUsageError(
                f"port {port!r} is on {top} with {len(places)} members: pass member=0..{len(places) - 1}"
            )
        return places[member]

    @overload
    def sender(self, port: str, ty: type[T], *, member: int | None = None) -> Sender[T]: ...
    @overload
    def sender(self, port: str, ty: None = None, *, member: int | None = None) -> Sender[Any]: ...
    def sender(self, port: str, ty: type[Any] | None = None, *, member: int | None = None) -> Sender[Any]:
        """A sender bound to source `port` (and to one member on a cluster); `ty` types it for mypy."""
        key = (port, member)
        if key not in self._senders:
            op = self.program.sources.get(port)
            if op is None:
                raise SimUsageError(f"the program has no source port {port!r} (ports: {sorted(self.program.sources)})")
            self._senders[key] = Sender(self, op, self._place(op.node.meta.loc, port, member), ty)
        return self._senders[key]

    @overload
    def receiver(self, port: SinkPort[T], *, member: int | None = None) -> Receiver[T]: ...
    @overload
    def receiver(self, port: str, *, member: int | None = None) -> Receiver[Any]: ...
    def receiver(self, port: SinkPort[Any] | str, *, member: int | None = None) -> Receiver[Any]:
        """A receiver bound to sink `port` (a name or the SinkPort returned by sink())."""
        name = port if isinstance(port, str) else port.name
        key = (name, member)
        if key not in self._receivers:
            op = self.program.sinks.get(name)
            if op is None:
                raise SimUsageError(f"the program has no sink port {name!r} (ports: {sorted(self.program.sinks)})")
            self._receivers[key] = Receiver(self, op, self._place(op.node.meta.loc, name, member))
        return self._receivers[key]

    # ------------------------------------------------------------- one execution
    def _caller(self, scenario: Scenario) -> Callable[[], object]:
        self._scenario = scenario
        params: Mapping[str, inspect.Parameter]
        try:
            params = inspect.signature(scenario).parameters
        except (TypeError, ValueError):  # a callable without a signature: call it with no argument
            params = {}
        required = [
            p
            for p in params.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        return (lambda: scenario(self)) if required else scenario

    def _run(
        self, call: Callable[[], object], chooser: Chooser, trace: bool = False, bound: tuple[int, int] | None = None
    ) -> World:
        """One execution driven by `chooser`; the scenario's exceptions propagate. With
        `bound` = (runs, choices) (shrinking), an execution sure to end with more tick runs,
        or as many and more choices, is abandoned (`Pruned`)."""
        choose = chooser.choose
        if bound is not None:
            most_runs, most_choices = bound

            def choose(n: int) -> int:
                if len(chooser.choices) >= most_choices and w.total_runs >= most_runs:
                    raise Pruned()
                return chooser.choose(n)

        w: World
        if self._crashes:
            w = self._world = CrashWorld(
                self.program,
                choose,
                trace,
                self.max_steps,
                self._por,
                self.fairness,
                crashes=self._crashes,
                recovery=self.recovery,
            )
        else:
            w = self._world = World(self.program, choose, trace, self.max_steps, self._por, self.fairness)
        w.run_limit = None if bound is None else bound[0]
        w.choice_log = chooser.choices
        if isinstance(chooser, PrefixChooser):
            w.seen_before = len(chooser.prefix)  # the depth-first walk re-runs the prefix's states
        call()
        if isinstance(w, CrashWorld):
            skip = set(w.crash_positions)
            key = tuple(c for i, c in enumerate(chooser.choices) if i not in skip)
            if w.crash_log:
                self._check_crash(call, w, key)
            else:  # a schedule without crashes: what crashing executions with its choices must end with
                self._baseline.setdefault(key, sink_outputs(self.program, w))
        return w

    def _check_crash(self, call: Callable[[], object], w: CrashWorld, key: tuple[int, ...]) -> None:
        """An execution in which a process crashed must end with the outputs of the same
        schedule without the crash: the same choices, minus the crash choices. Exhaustive
        mode has always explored that schedule before (its crash choices are 0: earlier in
        the depth-first order); other modes run it (`baseline_runs`)."""
        if key not in self._baseline:
            self._baseline[key] = self._uninterrupted(call, list(key))
        plain = self._baseline[key]
        crashes = "; ".join(w.crash_log)
        if isinstance(plain, str):
            raise CrashDivergence(f"a process crashed and recovered ({crashes}), but {plain}")
        diff = first_difference(sink_outputs(self.program, w), plain)
        if diff is not None:
            port, text = diff
            raise CrashDivergence(
                f"a process crashed and recovered ({crashes}), and the outputs differ from the same schedule "
                f"without the crash: {text}. A replayed run must write what the crashed run would have: a user "
                "function whose effect repeats or whose result changes when it runs again breaks exactly-once",
                self.program.sinks[port].node,
            )

    def _uninterrupted(self, call: Callable[[], object], key: list[int]) -> Any:
        """The sink outputs of the execution making choices `key` without crashes, or why
        there is none (a string)."""
        saved = self._world, self._crashes
        self._crashes = 0
        self.baseline_runs += 1
        ch = PrefixChooser(key, strict=True)
        try:
            w = self._run(call, ch)
            if len(ch.choices) == len(key):
                return sink_outputs(self.program, w)
        except (ReplayDiverged, Pruned):
            pass
        except _PASSTHROUGH:
            raise
        except BaseException as e:
            return f"the same schedule without the crash fails ({type(e).__name__}: {e})"
        finally:
            self._world, self._crashes = saved
        return "no execution without the crash makes the same choices: the crash changed what the program could do next"

    def _attempt(self, call: Callable[[], object], sig: tuple[str, str, str]) -> Attempt:
        def attempt(candidate: list[int], bound: tuple[int, int] | None) -> Outcome:
            ch = PrefixChooser(candidate)
            same = False
            try:
                self._run(call, ch, bound=bound)
            except _PASSTHROUGH:
                raise
            except Pruned:
                pass
            except BaseException as e:
                same = _signature(e) == sig
            w = self._world
            return Outcome(ch.choices, ch.branching, w.total_runs if w is not None else 0, same)

        return attempt

    def _fail(
        self, call: Callable[[], object], error: BaseException, choices: list[int], headline: str, shrunk: bool = True
    ) -> SimulationFailure:
        """Shrink, replay with tracing, and build the failure to raise.

        `choices` are plain (unreduced) choices, except for a determinism violation found
        with reduction (it is reported with the recorded choices, unshrunk)."""
        original = list(choices)
        expect_error = not isinstance(error, DeterminismViolation)  # a violation needs the earlier run
        if isinstance(error, ExplorationLimit):
            shrunk = False  # every candidate would run to the step budget: shrinking costs minutes
        notes: list[str] = []
        if shrunk and expect_error:
            attempt = self._attempt(call, _signature(error))
            start = attempt(choices, None)
            if start.same_failure:
                result = shrink(start, attempt)
                choices = result.choices
                runs = f"{result.runs} tick run{'s' if result.runs != 1 else ''}"
                if result.proven:
                    notes.append(
                        f"(shrunk to a minimal execution: {runs}, {len(choices)} choices; from {len(original)} choices)"
                    )
                else:
                    notes.append(f"(shrunk from {len(original)} to {len(choices)} choices, {runs}; not proven minimal)")
        final, reproduced = error, not expect_error
        try:
            self._run(call, PrefixChooser(choices), trace=True)
        except _PASSTHROUGH:
            raise
        except Pruned:
            pass
        except BaseException as e:
            final, reproduced = e, True
        trace = self._world.trace if self._world is not None and reproduced else None
        reduced = self._por and (self._world is None or self._world.filtered)  # else plain choices mean the same
        encoded = encode_choices(choices, reduced, self._crashes)
        if not reproduced:
            notes.append(
                "(replaying these choices did not fail again: a user function or the scenario is not deterministic)"
            )
        hint = replay_line(encoded, self._flow_source, self._scenario, self._cluster_sizes, self.model)
        report = failure_report(headline, final, trace, choices, encoded, notes, hint)
        return SimulationFailure(report, choices=choices, replay=encoded, executions=self.executions, cause=final)

    def _outputs(self, w: World, port: str) -> tuple[Any, ...]:
        op = self.program.sinks[port]
        place = self.program.places_at(op.node.meta.loc)[0]  # a process sink: one place
        return tuple(w.states[place][op.idx][0])

    def _check_determinism(self, w: World, choices: list[int]) -> None:
        """Outputs promised deterministic must match every earlier execution with the same inputs."""
        sinks = self.program.deterministic_sinks
        if not sinks:
            return
        outputs = tuple(self._outputs(w, s) for s in sinks)
        earlier, earlier_choices = self._seen.setdefault(repr(w.sends), (outputs, list(choices)))
        for port, before, now in zip(sinks, earlier, outputs, strict=True):
            if before != now:
                raise DeterminismViolation(
                    f"sink {port!r} promises a deterministic output ({self.program.sinks[port].node.meta.type_str()}, "
                    f"derived from no nondet choice), but two schedules with the same inputs produced "
                    f"{render(list(before))} and {render(list(now))} (the first came from "
                    f"{encode_choices(earlier_choices, self._por, self._crashes)}); a user function is probably not pure"
                )

    # ------------------------------------------------------------- modes
    def _env_replay(self, scenario: Scenario) -> bool:
        text = os.environ.get(REPLAY_ENV)
        if not text:
            return False
        print(self.replay(scenario, text))
        return True

    def _mode(self, crashes: bool | int, reduce: bool) -> None:
        if isinstance(crashes, bool):
            crashes = int(crashes)
        if not isinstance(crashes, int) or crashes < 0:
            raise SimUsageError(
                f"crashes must be True/False or a number of crashes per execution >= 0, got {crashes!r}"
            )
        self._crashes, self._por = crashes, reduce
        self._seen.clear()
        self._baseline.clear()
        self.baseline_runs = 0

    def exhaustive(
        self, scenario: Scenario, *, max_executions: int = 200_000, reduce: bool = True, crashes: bool | int = False
    ) -> int:
        """Run `scenario` once per choice sequence; return how many executions were explored.

        With `reduce` (partial-order reduction, `por.py`), schedules that differ only in the
        order of independent actions form one equivalence class, and one execution per class
        is explored. What the counters say afterwards:

        * the result (`self.executions`): complete executions explored. With reduction no
          two of them are equivalent: each is the one representative of its class;
        * `self.pruned`: equivalent branches pruned. A branch is a state of the walk and
          an action the sleep set did not let run there (or, for a tick woken only for its
          new input, its runs taking nothing new): every schedule starting that way is
          equivalent to an explored execution, so none of them was run. Each branch is
          counted once (at the first execution reaching its state) and holds at least one
          complete schedule, so `executions + pruned` is at most the number of executions
          without reduction (equal when each pruned branch holds exactly one schedule);
        * `self.abandoned`: partial executions stopped because every next action was
          asleep (their branches are counted in `pruned`); they cost running time, and
          count against `max_executions` with the complete ones.

        With `crashes` (True, or a number of crashes per execution), every tick run may
        also crash at each of Spark's fault points and be replayed (`crash.py`); each
        execution that crashed must end with the outputs of the same schedule without the
        crash, else it fails with `CrashDivergence`. `self.baseline_runs` counts the
        uninterrupted executions run for that comparison (not included in the result).
        """
        if self._env_replay(scenario):
            return 1
        call = self._caller(scenario)
        self._mode(crashes, reduce)
        prefix: list[int] | None = []
        self.executions = self.pruned = self.abandoned = 0
        while prefix is not None:
            ch = PrefixChooser(prefix)
            try:
                w = self._run(call, ch)
                self.executions += 1
                self._check_determinism(w, ch.choices)
            except Pruned:
                self.abandoned += 1
            except _PASSTHROUGH:
                raise
            except BaseException as e:
                self.executions += 1
                raise self._fail(
                    call,
                    e,
                    ch.choices,
                    f"hydrolite simulation failed: exhaustive exploration, execution #{self.executions}",
                ) from e
            if self._world is not None:
                self.pruned += self._world.hidden
            if self.executions + self.abandoned >= max_executions:
                raise ExplorationLimit(
                    f"exhaustive exploration stopped after {max_executions} executions; use fuzz() or smaller inputs"
                )
            prefix = next_prefix(ch.choices, ch.branching)
        return self.executions

    def fuzz(
        self,
        scenario: Scenario,
        *,
        iterations: int = 5_000,
        seed: int | None = 0,
        engine: str = "random",
        database: Any = "default",
        crashes: bool | int = False,
    ) -> int:
        """Run `scenario` on `iterations` random executions (seeded); return how many ran.

        engine="random": a seeded PRNG (fast), failures shrunk by `shrink`.
        engine="hypothesis": choices drawn from Hypothesis, which shrinks failures itself and
        keeps them in its example database (Hypothesis's default, keyed by the scenario and
        the flow; pass `database=None` for none), replaying stored failures first.
        """
        if self._env_replay(scenario):
            return 1
        call = self._caller(scenario)
        self._mode(crashes, False)
        if engine == "hypothesis":
            key = f"hydrolite.sim|{getattr(scenario, '__module__', '')}.{getattr(scenario, '__qualname__', '')}|{self.flow.name}"
            return self._hypothesis(call, iterations, seed, database, key)
        if engine != "random":
            raise SimUsageError(f"unknown fuzz engine {engine!r}: use 'random' or 'hypothesis'")
        rng = random.Random(seed)
        self.executions = 0
        for _ in range(iterations):
            ch = RandomChooser(rng)
            self.executions += 1
            try:
                w = self._run(call, ch)
                self._check_determinism(w, ch.choices)
            except _PASSTHROUGH:
                raise
            except BaseException as e:
                raise self._fail(
                    call,
                    e,
                    ch.choices,
                    f"hydrolite simulation failed: fuzzing (seed {seed}), execution #{self.executions}",
                ) from e
        return self.executions

    def _hypothesis(
        self, call: Callable[[], object], iterations: int, seed: int | None, database: Any, key: str
    ) -> int:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import seed as hseed
        from hypothesis import strategies as st

        last: list[DataChooser] = []
        self.executions = 0

        def prop(data: Any) -> None:
            ch = DataChooser(data)
            last[:] = [ch]
            self.executions += 1
            w = self._run(call, ch)
            self._check_determinism(w, ch.choices)

        options: dict[str, Any] = {} if database == "default" else {"database": database}
        test = settings(max_examples=iterations, deadline=None, suppress_health_check=list(HealthCheck), **options)(
            given(st.data())(prop)
        )
        test.__dict__["_hypothesis_internal_database_key"] = hashlib.sha256(key.encode()).digest()
        if seed is not None:
            test = hseed(seed)(test)
        try:
            test()
        except _PASSTHROUGH:
            raise
        except BaseException as e:
            choices = last[0].choices if last else []
            raise self._fail(
                call,
                e,
                choices,
                "hydrolite simulation failed: fuzzing with Hypothesis (shrunk by Hypothesis)",
                shrunk=False,
            ) from e
        return self.executions

    def run_once(
        self, scenario: Scenario, chooser: Chooser | None = None, *, trace: bool = False, crashes: bool | int = False
    ) -> World:
        """Run one execution (first options by default, or `chooser`'s); errors propagate as is."""
        self._mode(crashes, False)
        return self._run(self._caller(scenario), chooser or PrefixChooser([]), trace)

    def replay(self, scenario: Scenario, choices: str | list[int]) -> str:
        """Run exactly one recorded execution; return its trace (raises its failure, if any)."""
        seq, reduced, crashes = decode_replay(choices) if isinstance(choices, str) else (list(choices), False, 0)
        self._mode(crashes, reduced)
        call = self._caller(scenario)
        self.executions = 1
        ch = PrefixChooser(seq, strict=True)
        try:
            w = self._run(call, ch, trace=True)
        except (ReplayDiverged, Pruned) as e:
            why = str(e) or "the sequence ends in a pruned (repeated) execution"
            raise SimUsageError(
                f"cannot replay {encode_choices(seq, self._por, self._crashes)}: {why}; the program or the scenario changed since it was recorded"
            ) from e
        except _PASSTHROUGH:
            raise
        except BaseException as e:
            raise self._fail(call, e, seq, "hydrolite simulation failed: replay", shrunk=False) from e
        return "\n".join(format_trace(w.trace or []))
