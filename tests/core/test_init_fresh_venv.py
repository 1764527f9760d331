"""`hydrolite init demo && cd demo && pytest` in a fresh virtual environment (issue 15, item 6).

The project is created by this checkout's hydrolite, so its dependency line points here
(`hydrolite @ file:///...`). A fresh venv that has no hydrolite installs the project with
`pip install -e '.[dev]'`, which builds and installs hydrolite from that line; then, in the
project's directory, its tests pass, `mypy --strict` (with hydrolite's plugin) passes, and
hydrolite-lint (what its pre-commit hook runs) is clean. A `hydrolite init` run from the
fresh venv points its project at the same checkout.

Dependencies are linked from this interpreter as in test_fresh_install.py (whose helpers this
reuses), so only hydrolite and the project are built; without network for the build backend
the test is skipped, saying so.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.core.test_fresh_install import REPO, link_dependencies, run, site_packages

pytestmark = pytest.mark.slow


@pytest.fixture
def bare_venv(tmp_path: Path) -> Path:
    made = run([sys.executable, "-m", "venv", str(tmp_path / "venv")], tmp_path)
    assert made.returncode == 0, made.stderr
    link_dependencies(site_packages(tmp_path / "venv" / "bin" / "python"))
    return tmp_path / "venv"


def pip_install_project(venv: Path, project: Path) -> None:
    done = run([str(venv / "bin" / "pip"), "install", "-e", ".[dev]"], project, timeout=600)
    if done.returncode != 0:
        probe = run([str(venv / "bin" / "pip"), "download", "--no-deps", "-d", str(venv / "probe"), "hatchling"], REPO)
        if probe.returncode != 0:
            pytest.skip(f"the build backend cannot be fetched (no network, no cached wheel): {probe.stderr[-300:]}")
        pytest.fail(f"pip install -e '.[dev]' failed in a fresh venv:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def test_init_then_pytest_mypy_and_lint_in_a_fresh_venv(bare_venv: Path, tmp_path: Path) -> None:
    python = str(bare_venv / "bin" / "python")
    assert run([python, "-c", "import hydrolite"], tmp_path).returncode == 1  # not there yet
    created = run([sys.executable, "-m", "hydrolite.cli", "init", "demo"], tmp_path)
    assert created.returncode == 0, created.stderr
    demo = tmp_path / "demo"
    assert f'"hydrolite @ {REPO.as_uri()}"' in (demo / "pyproject.toml").read_text()

    pip_install_project(bare_venv, demo)
    where = run([python, "-c", "import hydrolite; print(hydrolite.__file__)"], tmp_path)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve().is_relative_to(bare_venv.resolve())  # installed, from the line

    tests = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], demo, timeout=300)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert "1 passed" in tests.stdout
    for args in (["-m", "mypy"], ["-m", "mypy", "--strict", "demo", "tests"]):
        typed = run([python, *args, "--cache-dir", str(tmp_path / "mypy-cache")], demo, timeout=600)
        assert typed.returncode == 0, typed.stdout[-3000:] + typed.stderr[-3000:]
        assert "Success: no issues found in 3 source files" in typed.stdout
    lint = run([str(bare_venv / "bin" / "hydrolite-lint"), "demo", "tests"], demo)
    assert lint.returncode == 0, lint.stdout + lint.stderr

    again = run([str(bare_venv / "bin" / "hydrolite"), "init", "again"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert f'"hydrolite @ {REPO.as_uri()}"' in (tmp_path / "again" / "pyproject.toml").read_text()
