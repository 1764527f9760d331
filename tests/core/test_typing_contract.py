"""The typing contract in typing_stubs/ holds, and cannot pass silently.

1. mypy (the project's config, plus `--strict --warn-unused-ignores` so a weakened config
   cannot loosen the contract) accepts every file in typing_stubs/.
2. With every `# type: ignore[code]` comment stripped, mypy reports exactly one error per
   expected (line, code) pair and nothing else: each marked misuse is really rejected, with
   that code, on that line.
3. The check files are real programs: `accept_*` and `mistype_*` cases build, `reject_*`
   cases raise at run time on the very line mypy rejects.

mypy runs twice per session (a few seconds each); its cache lives in pytest's cache dir.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from hydrolite import BuildError

REPO = Path(__file__).resolve().parents[2]
STUBS = REPO / "typing_stubs"
CHECK_FILES = sorted(STUBS.glob("check_*.py"))
IGNORE = re.compile(r"\s*#\s*type:\s*ignore(?:\[(?P<codes>[^\]]*)\])?")
ERROR = re.compile(r"^(?P<file>.+?):(?P<line>\d+): error: (?P<msg>.*?)  \[(?P<code>[a-z0-9-]+)\]$")
MIN_REJECTED = 30


# ------------------------------------------------------------------ expected rejections
@dataclass(frozen=True)
class Ignore:
    """One `# type: ignore[...]` line of a check file."""

    file: str
    line: int
    codes: frozenset[str]


def ignores_in(path: Path) -> list[Ignore]:
    out = []
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        m = IGNORE.search(text)
        if m is None:
            continue
        codes = frozenset(c.strip() for c in (m.group("codes") or "").split(",") if c.strip())
        assert codes, f"{path.name}:{number}: a bare `# type: ignore` says nothing; name the code"
        out.append(Ignore(path.name, number, codes))
    return out


ALL_IGNORES = [ig for path in CHECK_FILES for ig in ignores_in(path)]


def run_mypy(cache_dir: Path, *targets: str) -> tuple[str, int]:
    from mypy import api

    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--strict",
            "--warn-unused-ignores",
            "--cache-dir",
            str(cache_dir),
            "--no-pretty",
            "--no-color-output",
            "--show-error-codes",
            *targets,
        ]
    )
    return stdout + stderr, status


@pytest.fixture(scope="module")
def mypy_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = getattr(request.config, "cache", None)  # None under `-p no:cacheprovider`
    return Path(cache.mkdir("hydrolite-mypy")) if cache is not None else tmp_path_factory.mktemp("mypy")


@pytest.fixture
def at_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    # The project's `mypy_path = "typing_stubs"` is relative to the working directory.
    monkeypatch.chdir(REPO)


# ------------------------------------------------------------------ 1. accepted as written
def test_contract_has_enough_cases() -> None:
    assert len(CHECK_FILES) >= 5, CHECK_FILES
    assert len(ALL_IGNORES) >= MIN_REJECTED
    for path in CHECK_FILES:
        text = path.read_text()
        assert "assert_type(" in text, f"{path.name} asserts no inferred type"
        assert ignores_in(path), f"{path.name} marks no misuse"


@pytest.mark.usefixtures("at_repo")
def test_mypy_accepts_the_contract(mypy_cache: Path) -> None:
    out, status = run_mypy(mypy_cache, "typing_stubs")
    assert status == 0, out
    sources = [p for p in STUBS.rglob("*") if p.suffix in (".py", ".pyi")]
    m = re.search(r"Success: no issues found in (\d+) source files?", out)
    assert m is not None, out
    assert int(m.group(1)) == len(sources), f"mypy checked {m.group(1)} files, expected {len(sources)}"


# ------------------------------------------------------------------ 2. every ignore is a real rejection
@pytest.mark.usefixtures("at_repo")
def test_every_ignored_line_is_rejected_with_its_code(mypy_cache: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "stripped"
    stripped.mkdir()
    for path in CHECK_FILES:
        lines = path.read_text().splitlines(keepends=True)
        (stripped / path.name).write_text("".join(IGNORE.sub("", line) for line in lines))
    assert not any(ignores_in(p) for p in stripped.iterdir())
    out, status = run_mypy(mypy_cache, *sorted(str(p) for p in stripped.iterdir()))
    assert status == 1, out

    expected = {(ig.file, ig.line, code) for ig in ALL_IGNORES for code in ig.codes}
    found: set[tuple[str, int, str]] = set()
    for text in out.splitlines():
        m = ERROR.match(text)
        if m is not None:
            found.add((Path(m.group("file")).name, int(m.group("line")), m.group("code")))
    assert "error:" not in "\n".join(t for t in out.splitlines() if not ERROR.match(t)), out
    missing = sorted(expected - found)
    unexpected = sorted(found - expected)
    assert not missing, f"misuses mypy no longer rejects with the marked code: {missing}\n{out}"
    assert not unexpected, f"errors on lines the contract does not mark: {unexpected}\n{out}"


# ------------------------------------------------------------------ 3. the same programs at run time
def _import_checks() -> Iterator[ModuleType]:
    sys.path.insert(0, str(STUBS))
    try:
        for path in CHECK_FILES:
            yield importlib.import_module(path.stem)
    finally:
        sys.path.remove(str(STUBS))


@dataclass(frozen=True)
class Case:
    module: str
    name: str
    fn: Callable[[], None]
    ignores: tuple[Ignore, ...]

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


def _cases() -> list[Case]:
    cases = []
    for module in _import_checks():
        path = Path(module.__file__ or "")
        by_line = {ig.line: ig for ig in ignores_in(path)}
        claimed: set[int] = set()
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__ or name.startswith("_"):
                continue
            lines, start = inspect.getsourcelines(fn)
            mine = tuple(by_line[n] for n in range(start, start + len(lines)) if n in by_line)
            claimed.update(ig.line for ig in mine)
            cases.append(Case(module.__name__, name, fn, mine))
        assert claimed == set(by_line), f"{path.name}: ignores outside a case function"
    return cases


CASES = _cases()


def test_every_case_is_classified() -> None:
    for case in CASES:
        kind = case.name.split("_", 1)[0]
        assert kind in ("accept", "reject", "mistype"), f"{case}: name it accept_/reject_/mistype_"
        if kind == "accept":
            assert not case.ignores, f"{case}: an accepted case must not need `type: ignore`"
        else:
            assert len(case.ignores) == 1, f"{case}: exactly one marked misuse per case"
    assert sum(c.name.startswith("reject_") for c in CASES) >= MIN_REJECTED


@pytest.mark.parametrize("case", [c for c in CASES if not c.name.startswith("reject_")], ids=str)
def test_accepted_and_mistyped_cases_build(case: Case) -> None:
    case.fn()


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("reject_")], ids=str)
def test_rejected_cases_fail_at_run_time_on_the_marked_line(case: Case) -> None:
    (ignore,) = case.ignores
    if ignore.codes == {"call-arg"}:  # Python itself rejects the missing argument
        with pytest.raises(TypeError, match="missing 1 required positional argument"):
            case.fn()
        return
    with pytest.raises(BuildError) as info:
        case.fn()
    err = info.value
    assert (Path(err.site.file).name, err.site.line) == (ignore.file, ignore.line), str(err)
    assert err.required and err.found and err.fix
    assert f"{ignore.file}:{ignore.line}: " in str(err)
