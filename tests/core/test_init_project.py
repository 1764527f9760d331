"""`hydrolite init NAME` (issue 15, item 6): the files it writes, the dependency line, its
refusals, and the generated project's tests passing (and able to fail) with this checkout's
interpreter. The fresh-venv check is tests/core/test_init_fresh_venv.py (slow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hydrolite.cli import main
from hydrolite.init_project import (
    InitError,
    _spec_from_direct_url,
    create_project,
    hydrolite_requirement,
    project_names,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    ".gitignore",
    ".pre-commit-config.yaml",
    "README.md",
    "pyproject.toml",
    "my_flow/__init__.py",
    "my_flow/pipeline.py",
    "tests/test_pipeline.py",
}


def pytest_in(project: Path) -> subprocess.CompletedProcess[str]:
    """The generated project's own `pytest`, run as a user would from its directory."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_project_files_and_their_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "my-flow")]) == 0
    project = tmp_path / "my-flow"
    written = {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()}
    assert written == FILES
    out = capsys.readouterr().out
    assert f"hydrolite: created {project}:" in out and "pip install -e '.[dev]' && pytest && mypy" in out
    config = tomllib.loads((project / "pyproject.toml").read_text())
    assert config["project"]["name"] == "my-flow"
    assert config["project"]["dependencies"] == [hydrolite_requirement()]
    assert {r.split("<")[0].split(">")[0] for r in config["project"]["optional-dependencies"]["dev"]} == {
        "mypy",
        "pytest",
    }
    assert config["tool"]["mypy"]["strict"] is True
    assert config["tool"]["mypy"]["plugins"] == ["hydrolite.mypy_plugin"]
    assert config["tool"]["mypy"]["files"] == ["my_flow", "tests"]
    assert "-p hydrolite.sim.pytest_plugin" in config["tool"]["pytest"]["ini_options"]["addopts"]
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["my_flow"]
    hooks = yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"][0]
    assert hooks["repo"] == "local"
    lint = hooks["hooks"][0]
    assert (lint["id"], lint["entry"], lint["language"], lint["types"]) == (
        "hydrolite-lint",
        "hydrolite-lint",
        "system",
        ["python"],
    )
    assert 'hl.FlowBuilder("my_flow")' in (project / "my_flow" / "pipeline.py").read_text()
    assert "from my_flow import pipeline" in (project / "tests" / "test_pipeline.py").read_text()
    readme = (project / "README.md").read_text()
    assert readme.startswith("# my-flow\n") and "hydrolite run my_flow/pipeline.py" in readme


def test_the_dependency_points_at_this_hydrolite() -> None:
    # this checkout is installed editable (pip recorded its directory): the project installs it from there
    assert hydrolite_requirement() == f"hydrolite @ {ROOT.as_uri()}"
    assert hydrolite_requirement("hydrolite==0.1.0") == "hydrolite==0.1.0"
    assert hydrolite_requirement(" hydrolite @ git+https://example.invalid/h.git") == (
        "hydrolite @ git+https://example.invalid/h.git"
    )
    with pytest.raises(InitError, match=r"--hydrolite-spec must be a requirement for hydrolite, got 'pyspark'"):
        hydrolite_requirement("pyspark")
    with pytest.raises(InitError, match="must be a requirement for hydrolite"):
        hydrolite_requirement("hydrolitex>=1")


def test_what_pip_recorded_becomes_the_requirement(tmp_path: Path) -> None:
    wheel = tmp_path / "hydrolite-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert _spec_from_direct_url({"url": wheel.as_uri(), "archive_info": {}}) == f"hydrolite @ {wheel.as_uri()}"
    assert _spec_from_direct_url({"url": tmp_path.as_uri(), "dir_info": {}}) == f"hydrolite @ {tmp_path.as_uri()}"
    gone = (tmp_path / "gone.whl").as_uri()
    assert _spec_from_direct_url({"url": gone, "archive_info": {}}) is None  # cannot install again
    vcs = {"url": "https://example.invalid/h.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    assert _spec_from_direct_url(vcs) == "hydrolite @ git+https://example.invalid/h.git@abc123"


def test_names_and_directories_it_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert main(["init", str(taken)]) == 1
    err = capsys.readouterr().err
    assert f"hydrolite: error [HL-INIT]: {taken} already exists and is not empty (notes.txt)" in err
    assert "fix: choose a new project name, or empty that directory first" in err
    assert (taken / "notes.txt").read_text() == "mine" and len(list(taken.iterdir())) == 1  # untouched
    (tmp_path / "empty").mkdir()
    assert len(create_project(str(tmp_path / "empty"))) == len(FILES)  # an empty directory is fine
    (tmp_path / "afile").write_text("")
    with pytest.raises(InitError, match="exists and is not a directory"):
        create_project(str(tmp_path / "afile"))
    for name, why in (
        ("my pipeline", "is not a project name"),
        ("-x", "is not a project name"),
        ("1st", "which Python cannot import"),
        ("class", "which Python cannot import"),
        ("hydrolite", "shadows the module of that name"),
        ("tests", "shadows the module of that name"),
    ):
        with pytest.raises(InitError, match=why):
            project_names(str(tmp_path / name))
    assert project_names(str(tmp_path / "Click.Stream-v2"))[1:] == ("Click.Stream-v2", "click_stream_v2")


def test_the_generated_tests_pass_and_can_fail(tmp_path: Path) -> None:
    project = tmp_path / "demo"
    create_project(str(project))
    passed = pytest_in(project)
    assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-3000:]
    assert "1 passed" in passed.stdout
    # the scenario is a real check: with a plain snapshot instead of the aligned one it fails
    pipeline = project / "demo" / "pipeline.py"
    text = pipeline.read_text()
    naive = text.replace(
        'count.snapshot_aligned(tick, align, nondet("any version consistent with the acks already released"))',
        'count.snapshot(tick, nondet("any recent version will do"))',
    ).replace("increment.release_aligned(align).entries()", "increment.entries()")
    assert naive != text
    pipeline.write_text(naive)
    failed = pytest_in(project)
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "hydrolite simulation failed" in failed.stdout and "'query_response' yielded ('alice', 0)" in failed.stdout
