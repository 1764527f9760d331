"""hydrolite's own ports, as `PortPlugin`s: the same interface an installed plugin implements.

| scheme                  | source                                   | sink                                   |
| ----------------------- | ---------------------------------------- | -------------------------------------- |
| `json` `csv` `parquet`  | new files of a directory (strict)        | one `batch_id=N` directory per batch   |
| `feed`                  | a hydrolite feed (`FeedWriter`)          |                                        |
| `rate` `rate-micro-batch` | Spark's rate sources                   |                                        |
| `demo` (bare)           | three generated elements per batch       |                                        |
| `memory` (bare)         |                                          | a `MemorySink` in this process         |
| `console` (bare)        |                                          | prints each batch (`?limit=N`)         |
| `callback`              |                                          | `callback:module:function` called once per batch id |
| `delta`                 | a Delta table's new versions             | appends with a transaction per batch id |
| `postgres`              |                                          | rows + progress row in one transaction |

A spec without a scheme is a JSON directory (`out/` = `json:out/`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from .port_api import InputBinding, OutputBinding, PortPlugin, PortSpec
from .ports import CallbackSink, ConsoleSink, FeedInput, FileInput, FileOutput, MemorySink, RateInput
from .ports_delta import DeltaPort
from .ports_postgres import PostgresPort


class FilesPort(PortPlugin):
    """`json:DIR` / `csv:DIR` / `parquet:DIR`: directories of files (options: see files.py)."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.scheme = fmt  # one class serves three schemes
        self.summary = f"{fmt} files in a directory: new files in (strict), one batch_id=N directory per batch out"

    def source(self, spec: PortSpec) -> InputBinding:
        path = spec.require_target("a directory", f"{self.fmt}:in/events")
        return FileInput(path, self.fmt, dict(spec.options))  # Spark's own options pass through

    def sink(self, spec: PortSpec) -> OutputBinding:
        path = spec.require_target("a directory", f"{self.fmt}:out/results")
        spec.check_options(())
        return FileOutput(path, self.fmt)


class FeedPort(PortPlugin):
    scheme = "feed"
    summary = "a hydrolite feed directory (FeedWriter); offsets = entries (?maxEntriesPerTrigger=N)"

    def source(self, spec: PortSpec) -> InputBinding:
        path = spec.require_target("a feed directory", "feed:in/feed")
        spec.check_options(("maxEntriesPerTrigger",))
        spec.option_int("maxEntriesPerTrigger", minimum=1)
        return FeedInput(path, dict(spec.options))


class RatePort(PortPlugin):
    """`rate:rowsPerSecond=N[,numPartitions=M]` / `rate-micro-batch:rowsPerBatch=N`: Spark's
    rate sources (options as `k=v` joined by `,` or `&`, all passed to Spark)."""

    def __init__(self, micro: bool) -> None:
        self.micro = micro
        self.scheme = "rate-micro-batch" if micro else "rate"  # one class serves two schemes
        self.summary = f"Spark's {self.scheme} source, elements generated from its counter"

    def source(self, spec: PortSpec) -> InputBinding:
        options = dict(parse_qsl(spec.target.replace(",", "&")))
        return RateInput({**options, **spec.options}, micro=self.micro)


class DemoPort(PortPlugin):
    scheme = "demo"
    summary = "three generated elements per micro-batch (rate-micro-batch:rowsPerBatch=3)"
    bare = True

    def source(self, spec: PortSpec) -> InputBinding:
        spec.no_target()
        spec.check_options(())
        return RateInput({"rowsPerBatch": "3"}, micro=True)


class MemoryPort(PortPlugin):
    scheme = "memory"
    summary = "keeps each batch's values in this process (FlowRunner.memory(port))"
    bare = True

    def sink(self, spec: PortSpec) -> OutputBinding:
        spec.no_target()
        spec.check_options(())
        return MemorySink()


class ConsolePort(PortPlugin):
    scheme = "console"
    summary = "prints each batch's first elements (?limit=N, 10 by default)"
    bare = True

    def sink(self, spec: PortSpec) -> OutputBinding:
        spec.no_target()
        spec.check_options(("limit",))
        return ConsoleSink(spec.option_int("limit", 10, minimum=1) or 10)


class CallbackPort(PortPlugin):
    scheme = "callback"
    summary = "callback:package.module:function, called f(batch_id, values) once per batch id"

    def sink(self, spec: PortSpec) -> OutputBinding:
        target = spec.require_target("a function as module:name", "callback:myapp.hooks:on_batch")
        spec.check_options(())
        module_name, sep, attr = target.partition(":")
        if not sep or not module_name or not attr:
            raise spec.error("callback: needs module:function", repr(target), "write callback:myapp.hooks:on_batch")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise spec.error(
                f"callback: module {module_name!r} must be importable",
                f"{type(exc).__name__}: {exc}",
                "put its directory on PYTHONPATH (or install its package)",
            ) from exc
        f: Any = module
        for part in attr.split("."):
            if not hasattr(f, part):
                raise spec.error(f"callback: {module_name} must define {attr}", "no such name", "check the spelling")
            f = getattr(f, part)
        if not callable(f):
            raise spec.error(f"callback: {target} must be callable", type(f).__name__, "name a function")
        fn: Callable[[int, list[Any]], object] = f
        return CallbackSink(fn, target)


BUILTIN_PORTS: tuple[PortPlugin, ...] = (
    FilesPort("json"),
    FilesPort("csv"),
    FilesPort("parquet"),
    FeedPort(),
    RatePort(micro=False),
    RatePort(micro=True),
    DemoPort(),
    MemoryPort(),
    ConsolePort(),
    CallbackPort(),
    DeltaPort(),
    PostgresPort(),
)
