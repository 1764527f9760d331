"""The command line: output format, exit codes, JSON, noqa, config, discovery, encodings, --fix."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydrolite_lint.cli import main
from hydrolite_lint.rules import RULES

REPO = Path(__file__).resolve().parents[2]
BAD = "from hydrolite import nondet\ndef f(s, t):\n    return s.batch(t, nondet('TODO'))\n"
GOOD = "from hydrolite import nondet\ndef f(s, t):\n    return s.batch(t, nondet('queries may be answered in any grouping'))\n"


def cli(*args: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in args], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_clean_file_exits_0(tmp_path: Path) -> None:
    assert cli(write(tmp_path / "good.py", GOOD)) == (0, "", "")


def test_findings_exit_1_in_flake8_format(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.py", BAD)
    status, out, err = cli(path)
    assert status == 1 and err == ""
    assert (
        out == f"{path}:3:30: HL003 nondet() reason 'TODO' is a placeholder; say why every outcome is acceptable here\n"
    )


def test_json_output(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.py", BAD)
    status, out, _ = cli("--format", "json", path)
    assert status == 1
    assert json.loads(out) == [
        {
            "path": str(path),
            "line": 3,
            "column": 30,
            "code": "HL003",
            "message": "nondet() reason 'TODO' is a placeholder; say why every outcome is acceptable here",
            "fixable": False,
        }
    ]
    assert json.loads(cli("--format", "json", write(tmp_path / "good.py", GOOD))[1]) == []


def test_syntax_error_is_one_line_and_a_finding(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.py", "import hydrolite\ndef f(:\n    pass\n")
    status, out, err = cli(path)
    assert status == 1 and err == ""
    assert out.count("\n") == 1
    assert out.startswith(f"{path}:") and ": HL000 syntax error: " in out
    assert "Traceback" not in out + err
    undecodable = tmp_path / "latin.py"
    undecodable.write_bytes(b"import hydrolite\nx = '\xe9'\n")
    status, out, _ = cli(undecodable)
    assert status == 1 and out.startswith(f"{undecodable}:1:1: HL000 syntax error: cannot decode")


@pytest.mark.parametrize(
    "args",
    [["--format", "xml", "x.py"], ["--select", "HL9"], ["--ignore", "E501"], ["--bogus"], ["missing/file.py"]],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    write(tmp_path / "x.py", GOOD)
    status, out, err = cli(*[str(tmp_path / a) if a.endswith(".py") else a for a in args])
    assert status == 2 and out == ""
    assert err.startswith("hydrolite-lint: error: ")


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ('select = ["HL9"]', "HL9 match(es) no rule"),
        ('select = "HL"', "must be a list of strings"),
        ('colour = "red"', "unknown key(s)"),
        ("select = [", "invalid TOML"),
    ],
)
def test_config_errors_exit_2(tmp_path: Path, table: str, fragment: str) -> None:
    write(tmp_path / "pyproject.toml", f"[tool.hydrolite.lint]\n{table}\n")
    status, _, err = cli(write(tmp_path / "pkg" / "bad.py", BAD))
    assert status == 2 and fragment in err


def test_noqa(tmp_path: Path) -> None:
    lines = [
        "from hydrolite import nondet",
        "def f(s, t, c):",
        "    s.batch(t, nondet('TODO'))  # noqa",
        "    s.batch(t, nondet('TODO'))  # noqa: HL003",
        "    s.batch(t, nondet('TODO'))  # NOQA:HL010,HL003",
        "    s.batch(t, nondet('TODO'))  # noqa: HL00",
        "    s.batch(t, nondet('TODO'))  # noqa: HL010",
        "    s.batch(t, nondet('TODO'))  # noqa: E501",
        "    c.latest().snapshot(t, nondet('TODO'))  # noqa: HL030",
    ]
    status, out, _ = cli("--format", "json", write(tmp_path / "n.py", "\n".join(lines) + "\n"))
    assert status == 1
    assert [(f["line"], f["code"]) for f in json.loads(out)] == [(7, "HL003"), (8, "HL003"), (9, "HL003")]


def test_nearest_pyproject_select_and_ignore(tmp_path: Path) -> None:
    code = BAD + "def g(s, t):\n    nd = nondet('any grouping')\n    return s.batch(t, nd)\n"
    write(tmp_path / "pyproject.toml", '[tool.hydrolite.lint]\nignore = ["HL003"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "no-lint-table"\n')
    write(tmp_path / "sub" / "deeper" / "pyproject.toml", '[tool.hydrolite.lint]\nselect = ["HL00"]\n')
    top = write(tmp_path / "sub" / "a.py", code)  # nearest table: tmp_path (sub's pyproject has none)
    deep = write(tmp_path / "sub" / "deeper" / "b.py", code)
    status, out, _ = cli("--format", "json", top, deep)
    assert status == 1
    assert [(Path(f["path"]).name, f["code"]) for f in json.loads(out)] == [("a.py", "HL010"), ("b.py", "HL003")]
    assert [f["code"] for f in json.loads(cli("--format", "json", "--isolated", top)[1])] == ["HL003", "HL010"]
    assert [f["code"] for f in json.loads(cli("--format", "json", "--select", "HL01", deep)[1])] == ["HL010"]
    assert [f["code"] for f in json.loads(cli("--format", "json", "--ignore", "HL", deep)[1])] == []
    explicit = ["--format", "json", "--config", tmp_path / "sub" / "deeper" / "pyproject.toml", top]
    assert [f["code"] for f in json.loads(cli(*explicit)[1])] == ["HL003"]


def test_syntax_errors_cannot_be_ignored(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.py", "import hydrolite\ndef f(:\n")
    assert cli("--ignore", "HL", path)[0] == 1


def test_directory_discovery_and_exclude(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.hydrolite.lint]\nexclude = ["generated/*", "skip_me.py"]\n')
    write(tmp_path / "pkg" / "a.py", BAD)
    write(tmp_path / "pkg" / "skip_me.py", BAD)
    write(tmp_path / "generated" / "g.py", BAD)
    write(tmp_path / ".venv" / "lib" / "v.py", BAD)
    write(tmp_path / "pkg" / "__pycache__" / "c.py", BAD)
    write(tmp_path / "pkg" / "notes.txt", BAD)
    status, out, _ = cli("--format", "json", tmp_path)
    assert status == 1
    assert [Path(f["path"]).relative_to(tmp_path).as_posix() for f in json.loads(out)] == ["pkg/a.py"]


def test_fix_rewrites_files_and_keeps_their_encoding(tmp_path: Path) -> None:
    source = (
        "# -*- coding: latin-1 -*-\nfrom hydrolite import nondet\ndef f(s, t):\n"
        "    nd = nondet('any grouping, café')\n    return s.batch(t, nd)\n"
    )
    path = tmp_path / "enc.py"
    path.write_bytes(source.encode("latin-1"))
    assert cli(path)[0] == 1
    status, out, err = cli("--fix", path)
    assert (status, out) == (0, "")
    assert "fixed 1 finding(s) in 1 file(s); 0 left" in err
    assert path.read_bytes().decode("latin-1") == (
        "# -*- coding: latin-1 -*-\nfrom hydrolite import nondet\ndef f(s, t):\n"
        "    return s.batch(t, nondet('any grouping, café'))\n"
    )
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + source.replace("latin-1", "utf-8").encode())
    assert cli("--fix", bom)[0] == 0 and bom.read_bytes().startswith(b"\xef\xbb\xbf# -*- coding: utf-8")


def test_fix_reports_what_is_left(tmp_path: Path) -> None:
    path = write(
        tmp_path / "both.py", BAD + "def g(s, t):\n    nd = nondet('any grouping')\n    return s.batch(t, nd)\n"
    )
    status, out, err = cli("--fix", path)
    assert status == 1 and out.count("HL003") == 1 and "HL010" not in out
    assert "fixed 1 finding(s) in 1 file(s); 1 left" in err


def test_list_rules() -> None:
    status, out, _ = cli("--list-rules")
    assert status == 0
    assert [line.split()[0] for line in out.splitlines()] == list(RULES)


def test_module_entry_point_and_console_script(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.py", BAD)
    run = subprocess.run([sys.executable, "-m", "hydrolite_lint", path], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and ": HL003 " in run.stdout and run.stderr == ""
    run = subprocess.run(
        [sys.executable, "-m", "hydrolite_lint", "--format"], capture_output=True, text=True, check=False
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr


# Findings the lead has been told about; this list must shrink to empty, never grow.
KNOWN_EXAMPLE_FINDINGS: set[tuple[str, str]] = set()


def test_repository_examples_lint_clean() -> None:
    status, out, err = cli("--format", "json", REPO / "examples")
    assert err == ""
    assert {(Path(f["path"]).name, f["code"]) for f in json.loads(out)} == KNOWN_EXAMPLE_FINDINGS
    assert status == (1 if KNOWN_EXAMPLE_FINDINGS else 0)


def test_pre_commit_manifest() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["hydrolite-lint"]
    hook = hooks[0]
    assert hook["entry"] == "hydrolite-lint" and hook["language"] == "python" and hook["types"] == ["python"]
    assert any(dep.startswith("libcst") for dep in hook["additional_dependencies"])


def test_a_named_file_is_parsed_even_without_hydrolite(tmp_path: Path) -> None:
    broken = write(tmp_path / "pkg" / "broken.py", "def f(:\n    pass\n")
    status, out, _ = cli(broken)  # named: its syntax error is reported (as ruff/flake8 do)
    assert status == 1 and out.startswith(f"{broken}:") and "HL000 syntax error" in out
    assert cli(tmp_path / "pkg") == (0, "", "")  # found by walking a directory: skipped unparsed
