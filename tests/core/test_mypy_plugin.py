"""hydrolite.mypy_plugin reports misuses as the runtime's BuildError words them (issue 11, item 3).

1. Every rule of the plugin's table, for every live class it applies to: a generated
   program breaks each rule once (tests/core/plugin_cases.py builds it); mypy with the
   plugin reports exactly that rule's code on that line, the program raises a BuildError
   on that line at build time, and both say the same `op() requires ...`, `fix: ...` and
   (up to what only the runtime knows) `found: ...`.
2. The same agreement for every contract case (typing_stubs/check_*.py) the plugin words.
3. The messages for the contract's cases are snapshot-tested
   (tests/core/fixtures/mypy_plugin_messages.txt; `HYDROLITE_UPDATE_FIXTURES=1` rewrites it).
4. Without the plugin mypy still rejects every marked contract misuse (with its generic
   codes) and nothing else: the plugin words errors, it is not what finds them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from hydrolite import BuildError

from .plugin_cases import Generated, generate
from .test_typing_contract import (
    ALL_IGNORES,
    CASES,
    CHECK_FILES,
    IGNORE,
    REPO,
    STUBS,
    Case,
)

SNAPSHOT = Path(__file__).parent / "fixtures" / "mypy_plugin_messages.txt"
LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<sev>error|note): (?P<msg>.*?)(?:  \[(?P<code>[a-z0-9-]+)\])?$")


@dataclass
class Message:
    """One mypy error and the notes printed with it."""

    text: str
    code: str
    notes: list[str]

    def note(self, prefix: str) -> str:
        (hit,) = [n[len(prefix) :] for n in self.notes if n.startswith(prefix)]
        return hit

    def render(self) -> str:
        return "\n".join([f"  error: {self.text}  [{self.code}]", *(f"  note: {n}" for n in self.notes)])


def run_mypy(cache: Path, *files: Path, plugin: bool = True) -> tuple[dict[tuple[str, int], list[Message]], str]:
    """mypy --strict (as the project configures it, or the same without the plugin)."""
    from mypy import api

    if plugin:
        config = str(REPO / "pyproject.toml")
    else:
        ini = cache / "no-plugin.ini"
        ini.write_text(
            f"[mypy]\nstrict = true\nwarn_unused_ignores = true\npython_version = 3.10\nmypy_path = {STUBS}\nenable_error_code = truthy-bool\n"
        )
        config = str(ini)
    with _at(REPO):  # the project's mypy_path is relative to the working directory
        out, err, _ = api.run(
            [
                "--config-file",
                config,
                "--cache-dir",
                str(cache / ("plugin" if plugin else "plain")),
                "--no-pretty",
                "--no-color-output",
                *map(str, files),
            ]
        )
    by_line: dict[tuple[str, int], list[Message]] = {}
    for text in out.splitlines():
        m = LINE.match(text)
        if m is None:
            continue
        key = (Path(m["file"]).name, int(m["line"]))
        if m["sev"] == "error":
            by_line.setdefault(key, []).append(Message(m["msg"], m["code"] or "", []))
        elif by_line.get(key):
            by_line[key][-1].notes.append(m["msg"])
    return by_line, out + err


@contextmanager
def _at(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def norm(text: str) -> str:
    """Tick indices (`Tick#0[...]`) and creation sites are known to the runtime only."""
    return re.sub(r"Tick#\d+\[", "Tick[", re.sub(r" \(created (?:by|at) .*?:\d+\)", "", text))


def same_found(static: str, runtime: str) -> bool:
    """Whether mypy's `found` is the runtime's, up to what the runtime cannot know.

    The runtime writes `?` for an element type it could not track and a bare class for a
    literal's generic type (`tuple`, `MemberId`); typing reprs carry module paths. Those
    parts match loosely.
    """
    runtime = re.sub(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])", "", norm(runtime))
    pattern = ""
    for token in re.split(r"(\?|\b[A-Za-z_]\w*\b(?!\[))", runtime):
        if token == "?":
            pattern += ".+?"
        elif re.fullmatch(r"[A-Za-z_]\w*", token):
            pattern += re.escape(token) + r"(?:\[.+?\])?"
        else:
            pattern += re.escape(token)
    return re.fullmatch(pattern, static) is not None


def assert_agree(msg: Message, err: BuildError) -> None:
    assert msg.text == norm(f"{err.op} requires {err.required}"), (msg.render(), str(err))
    assert msg.note("fix: ") == norm(err.fix), (msg.render(), str(err))
    assert same_found(msg.note("found: "), err.found), (msg.render(), str(err))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy-plugin")


# ------------------------------------------------------------------ 1. every rule, every class
@pytest.fixture(scope="module")
def generated(cache: Path) -> tuple[Generated, dict[tuple[str, int], list[Message]], str]:
    program = generate(cache / "plugin_program.py")
    by_line, out = run_mypy(cache, program.path)
    return program, by_line, out


def test_the_generated_program_covers_every_rule_of_the_table(
    generated: tuple[Generated, dict[tuple[str, int], list[Message]], str],
) -> None:
    from hydrolite._mypy.table import RULES

    program, _, _ = generated
    wanted = {
        (cls.rsplit(".", 1)[1], method, i)
        for cls, methods in RULES.items()
        for method, rules in methods.items()
        for i in range(len(rules))
    }
    assert {(c.cls, c.method, c.rule) for c in program.cases} == wanted
    assert len(program.cases) >= 90


def test_every_rule_is_reported_in_the_runtimes_words(
    generated: tuple[Generated, dict[tuple[str, int], list[Message]], str],
) -> None:
    program, by_line, out = generated
    name = program.path.name
    marked = {(name, c.line) for c in program.cases}
    stray = sorted(k for k in by_line if k not in marked)
    assert not stray, f"errors on unmarked lines: {stray}\n{out}"
    for case in program.cases:
        msgs = by_line.get((name, case.line), [])
        assert [m.code for m in msgs] == [case.code], f"{case}: {[m.render() for m in msgs]}\n{case.source}"
        with pytest.raises(BuildError) as info:
            program.functions[case.function]()
        assert info.value.site.line == case.line, (case, str(info.value))
        assert_agree(msgs[0], info.value)


# ------------------------------------------------------------------ 2./3. the contract's cases
def _stripped(tmp: Path) -> list[Path]:
    out = []
    for path in CHECK_FILES:
        target = tmp / path.name
        target.write_text("".join(IGNORE.sub("", line) for line in path.read_text().splitlines(keepends=True)))
        out.append(target)
    return out


@pytest.fixture(scope="module")
def contract_messages(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], list[Message]]:
    by_line, _ = run_mypy(cache, *_stripped(tmp_path_factory.mktemp("stripped")))
    return by_line


def _worded(case: Case) -> bool:
    return any(code.startswith("hydrolite-") for ig in case.ignores for code in ig.codes)


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("reject_") and _worded(c)], ids=str)
def test_contract_misuse_reads_like_its_build_error(
    case: Case, contract_messages: dict[tuple[str, int], list[Message]]
) -> None:
    (ignore,) = case.ignores
    (msg,) = contract_messages[(ignore.file, ignore.line)]
    with pytest.raises(BuildError) as info:
        case.fn()
    assert_agree(msg, info.value)


def test_no_contract_case_is_left_with_a_generic_self_type_error() -> None:
    """Every self-type rule (formerly `[misc]`, "Invalid self argument") is worded now."""
    assert not [ig for ig in ALL_IGNORES if "misc" in ig.codes]


def test_contract_messages_snapshot(contract_messages: dict[tuple[str, int], list[Message]]) -> None:
    blocks = []
    for case in sorted(CASES, key=str):
        for ig in case.ignores:
            for msg in contract_messages.get((ig.file, ig.line), []):
                if msg.code.startswith("hydrolite-"):
                    blocks.append(f"{case}\n{msg.render()}")
    text = "\n\n".join(blocks) + "\n"
    if os.environ.get("HYDROLITE_UPDATE_FIXTURES") == "1":
        SNAPSHOT.write_text(text)
    assert SNAPSHOT.exists(), "run with HYDROLITE_UPDATE_FIXTURES=1 to create the snapshot"
    assert text == SNAPSHOT.read_text(), "plugin messages changed; review and rerun with HYDROLITE_UPDATE_FIXTURES=1"


# ------------------------------------------------------------------ 4. without the plugin
# `collection != 0`: `__ne__` takes `Never`, so mypy falls back to `int.__ne__(object)` and
# accepts it; only the plugin (and the build) reject comparing a collection with a value.
# `source(name, tuple)` is valid typing (`tuple[Any, ...]`); the plugin asks for the items.
PLUGIN_ONLY = {"check_agreement.reject_inequality_with_a_value", "check_agreement.mistype_source_of_a_bare_tuple"}


def test_mypy_alone_still_rejects_every_marked_misuse(cache: Path, tmp_path: Path) -> None:
    by_line, out = run_mypy(cache, *_stripped(tmp_path), plugin=False)
    plugin_only = {(ig.file, ig.line) for case in CASES if str(case) in PLUGIN_ONLY for ig in case.ignores}
    assert len(plugin_only) == len(PLUGIN_ONLY)
    marked = {(ig.file, ig.line) for ig in ALL_IGNORES} - plugin_only
    assert set(by_line) == marked, (
        f"missing: {sorted(marked - set(by_line))}, unmarked: {sorted(set(by_line) - marked)}\n{out}"
    )
    assert not any(m.code.startswith("hydrolite-") for msgs in by_line.values() for m in msgs), out


def test_plugin_entry_point() -> None:
    from hydrolite.mypy_plugin import HydrolitePlugin, plugin

    assert plugin("2.4.1") is HydrolitePlugin
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'plugins = ["hydrolite.mypy_plugin"]' in pyproject
