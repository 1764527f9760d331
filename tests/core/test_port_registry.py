"""Port specs and the plugin registry (issue 15, item 3), without starting Spark.

Plugins are real distributions: a module and a `.dist-info` with `entry_points.txt` on
`sys.path` (tests/core/port_dists.py), found through `importlib.metadata` like an installed
package. Built-in ports answer through the same interface and parse as they always did.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hydrolite.planner.spark.port_api import PortSpecError, split_spec
from hydrolite.planner.spark.port_registry import ENTRY_POINT_GROUP, known_schemes, registry
from hydrolite.planner.spark.ports import (
    CallbackSink,
    ConsoleSink,
    FeedInput,
    FileInput,
    FileOutput,
    MemorySink,
    RateInput,
    parse_input,
    parse_output,
)
from hydrolite.planner.spark.ports_delta import DeltaInput, DeltaOutput
from hydrolite.planner.spark.ports_postgres import PostgresOutput
from tests.core.port_dists import doc_example, install_plugin

BUILTIN = [
    "callback",
    "console",
    "csv",
    "delta",
    "demo",
    "feed",
    "json",
    "memory",
    "parquet",
    "postgres",
    "rate",
    "rate-micro-batch",
]

PLUGIN = """
from hydrolite.ports import OutputBinding, PortPlugin, PortSpec


class Echo(OutputBinding):
    def __init__(self, target: str, loud: bool) -> None:
        self.target, self.loud = target, loud

    def write(self, ctx, sf):
        return None

    def describe(self) -> str:
        return f"echo {self.target}"


class EchoPort(PortPlugin):
    scheme = "echo"
    summary = "test plugin"

    def sink(self, spec: PortSpec) -> OutputBinding:
        spec.check_options(("loud",))
        return Echo(spec.require_target("a name", "echo:x"), spec.option_bool("loud"))


INSTANCE = EchoPort()
NOT_A_PLUGIN = 42
"""


def test_builtin_specs_bind_as_before() -> None:
    assert parse_input("in/events") == FileInput("in/events", "json", {})
    assert parse_input("csv:in?maxFilesPerTrigger=2") == FileInput("in", "csv", {"maxFilesPerTrigger": "2"})
    assert parse_input("./a:b") == FileInput("./a:b", "json", {})  # not a scheme: a path
    assert parse_input("feed:f?maxEntriesPerTrigger=1") == FeedInput("f", {"maxEntriesPerTrigger": "1"})
    assert parse_input("rate:rowsPerSecond=5,numPartitions=2") == RateInput(
        {"rowsPerSecond": "5", "numPartitions": "2"}
    )
    assert parse_input("demo") == RateInput({"rowsPerBatch": "3"}, micro=True)
    assert parse_input("delta:/t?startingVersion=latest") == DeltaInput("/t", {"startingVersion": "latest"})
    assert parse_output("out") == FileOutput("out", "json")
    assert parse_output("parquet:out") == FileOutput("out", "parquet")
    assert isinstance(parse_output("memory"), MemorySink)
    console = parse_output("console?limit=3")
    assert isinstance(console, ConsoleSink) and console.limit == 3
    assert parse_output("delta:/t?partitionBy=a,b") == DeltaOutput("/t", ("a", "b"))
    pg = parse_output("postgres:postgresql://u:secret@localhost/db?table=s.t&upsert=true&key=id&sslmode=disable")
    assert isinstance(pg, PostgresOutput) and (pg.table, pg.upsert, pg.key) == ("s.t", True, ("id",))
    assert "sslmode=disable" in pg.conninfo and "secret" not in pg.describe()
    cb = parse_output("callback:os.path:join")
    assert isinstance(cb, CallbackSink) and cb.name == "os.path:join"
    assert set(BUILTIN) <= set(known_schemes())


def test_spec_grammar() -> None:
    assert split_spec("delta:/x") == ("delta", "/x")
    assert split_spec("/abs/a:b") == (None, "/abs/a:b")
    with pytest.raises(PortSpecError, match="option maxEntriesPerTrigger is given twice"):
        parse_input("feed:f?maxEntriesPerTrigger=1&maxEntriesPerTrigger=2")
    with pytest.raises(PortSpecError, match="options after '\\?' must be name=value pairs"):
        parse_input("json:d?oops")
    with pytest.raises(PortSpecError, match="feed: takes maxEntriesPerTrigger; found unknown option"):
        parse_input("feed:f?maxEntries=1")
    with pytest.raises(PortSpecError, match="integer >= 1"):
        parse_input("feed:f?maxEntriesPerTrigger=zero")
    with pytest.raises(PortSpecError, match="memory: takes no target"):
        parse_output("memory:x")
    with pytest.raises(PortSpecError, match="delta: needs a table directory"):
        parse_output("delta:")
    with pytest.raises(PortSpecError, match="an input needs a scheme that reads; postgres only writes"):
        parse_input("postgres:x?table=t")
    with pytest.raises(PortSpecError, match="an output needs a scheme that writes; rate only reads"):
        parse_output("rate:rowsPerSecond=1")
    with pytest.raises(PortSpecError, match="module 'no_such_module_x' must be importable"):
        parse_output("callback:no_such_module_x:f")


def test_unknown_scheme_lists_known_schemes_and_the_group() -> None:
    with pytest.raises(PortSpecError) as err:
        parse_output("kafka:topic")
    text = str(err.value)
    assert "unknown port scheme 'kafka' in port spec 'kafka:topic'" in text
    assert f"known schemes: {', '.join(BUILTIN)} (built in)" in text
    assert f"entry-point group {ENTRY_POINT_GROUP!r}" in text and "docs/ports.md" in text
    assert err.value.code == "HL-PORT"


def test_plugin_found_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PortSpecError, match="unknown port scheme 'echo'"):
        parse_output("echo:a")
    install_plugin(tmp_path, monkeypatch, "hl-echo", {"echo": "hl_echo:EchoPort"}, {"hl_echo": PLUGIN})
    sink = parse_output("echo:a?loud=true")
    assert sink.describe() == "echo a" and vars(sink)["loud"] is True
    assert known_schemes()["echo"] == "entry point echo = hl_echo:EchoPort of hl-echo"
    with pytest.raises(PortSpecError, match="an input needs a scheme that reads; echo only writes"):
        parse_input("echo:a")
    with pytest.raises(PortSpecError) as err:
        parse_output("kafka:x")
    assert "echo (from plugins)" in str(err.value)


def test_an_instance_is_a_plugin_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path, monkeypatch, "hl-echo", {"echo": "hl_echo:INSTANCE"}, {"hl_echo": PLUGIN})
    assert parse_output("echo:b").describe() == "echo b"


@pytest.mark.parametrize(
    ("entry", "modules", "message"),
    [
        (
            "hl_missing_mod:EchoPort",
            {},
            r"cannot be imported: ModuleNotFoundError.*\n  fix: repair or reinstall hl-bad",
        ),
        (
            "hl_echo:NOT_A_PLUGIN",
            {"hl_echo": PLUGIN},
            r"must name a hydrolite PortPlugin subclass or instance; found int",
        ),
        ("hl_echo:EchoPort", {"hl_echo": PLUGIN.replace('scheme = "echo"', 'scheme = "other"')}, r"scheme is 'other'"),
        ("hl_broken:P", {"hl_broken": "raise RuntimeError('boom at import')\n"}, r"RuntimeError: boom at import"),
    ],
)
def test_broken_plugins_are_reported(
    entry: str, modules: dict[str, str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(tmp_path, monkeypatch, "hl-bad", {"echo": entry}, modules)
    with pytest.raises(PortSpecError, match=message) as err:
        parse_output("echo:x")
    assert f"entry point echo = {entry} of hl-bad" in str(err.value)
    assert parse_output("memory").describe() == "memory"  # other schemes are unaffected


def test_a_scheme_claimed_twice_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(tmp_path / "a", monkeypatch, "hl-a", {"echo": "hl_echo:EchoPort", "json": "hl_echo:EchoPort"}, {})
    install_plugin(tmp_path / "b", monkeypatch, "hl-b", {"echo": "hl_echo2:EchoPort"}, {"hl_echo2": PLUGIN})
    with pytest.raises(PortSpecError, match="'echo' is claimed more than once: entry point echo") as e:
        parse_output("echo:x")
    assert "hl-a" in str(e.value) and "hl-b" in str(e.value)
    with pytest.raises(PortSpecError, match="'json' is claimed more than once: built in; entry point json"):
        parse_output("json:out")
    assert "echo" in registry().schemes()


def test_the_documented_example_plugin_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(
        tmp_path,
        monkeypatch,
        "hydrolite-example-ports",
        {"numbers": "hydrolite_example_ports:NumbersPort", "jsonl": "hydrolite_example_ports:JsonlPort"},
        {"hydrolite_example_ports": doc_example()},
    )
    assert parse_input("numbers:in?filesPerBatch=2").describe() == "numbers in in"
    assert parse_output("jsonl:out").describe() == "jsonl files in out"
    with pytest.raises(PortSpecError, match="filesPerBatch must be an integer >= 1"):
        parse_input("numbers:in?filesPerBatch=0")
    with pytest.raises(PortSpecError, match="an input needs a scheme that reads; jsonl only writes"):
        parse_input("jsonl:out")
