"""After the README's install, mypy sees hydrolite from any directory (issue 11, item 1).

A fresh virtual environment runs the README's own install command (`pip install -e .`,
read from README.md), then `mypy --strict` checks programs in a directory outside the
checkout, with `plugins = ["hydrolite.mypy_plugin"]` in that directory's pyproject.toml:
a correct program passes, a misuse is reported under the plugin's code. The same then
holds for a wheel built from the checkout and installed instead (what users get from
`pip install .` or an index).

To stay well under two minutes the fresh environment gets hydrolite's dependencies by
linking the distributions already installed for this interpreter (pyspark alone is
hundreds of megabytes); pip sees them as installed and builds and installs hydrolite
itself exactly as for a user. `HYDROLITE_FRESH_INSTALL_FULL=1` skips the linking and
installs everything from the package index. The build backend is fetched by pip (an
isolated build); without network and without a cached wheel of it the test is skipped,
saying so.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# Not linked into the fresh environment: hydrolite itself (the install under test) and the
# installer's own packages (the fresh environment has its own).
OWN = re.compile(
    r"^(_?hydrolite|__editable__|pip\b|pip-|setuptools|_distutils_hack|distutils-precedence|pkg_resources|__pycache__)"
)

GOOD = """\
import hydrolite as hl
from hydrolite import nondet


class Server: ...


def build() -> hl.Flow:
    flow = hl.FlowBuilder("mine")
    server = flow.process(Server)
    tick = server.tick()
    words = server.source("words", str).batch(tick, nondet("any grouping of words will do"))
    words.map(len).all_ticks().sink("lengths")
    return flow.finalize()
"""

BAD = """\
import hydrolite as hl


class Server: ...


def build() -> hl.Singleton[int, hl.Process[Server]]:
    bag = hl.FlowBuilder("bad").process(Server).source("x", int).weaken_ordering()
    return bag.fold(0, lambda acc, v: acc + v)
"""

CONFIG = """\
[tool.mypy]
strict = true
plugins = ["hydrolite.mypy_plugin"]
"""


def readme_install_command() -> list[str]:
    """The README's first command up to `&&`: what a newcomer types to install."""
    text = (REPO / "README.md").read_text()
    block = text.split("```bash", 1)[1].split("```", 1)[0]
    first = block.strip().splitlines()[0].split("&&")[0].split()
    assert first[:3] == ["pip", "install", "-e"], first
    return first


def run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def site_packages(python: Path) -> Path:
    out = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], REPO)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip())


def link_dependencies(target: Path) -> None:
    """Make this interpreter's installed distributions (minus hydrolite and pip) visible."""
    source = Path(sysconfig.get_paths()["purelib"])
    for entry in sorted(source.iterdir()):
        if not OWN.match(entry.name) and not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fresh")
    made = run([sys.executable, "-m", "venv", str(root / "venv")], root)
    assert made.returncode == 0, made.stderr
    python = root / "venv" / "bin" / "python"
    if os.environ.get("HYDROLITE_FRESH_INSTALL_FULL") != "1":
        link_dependencies(site_packages(python))
    return root / "venv"


def install_as_the_readme_says(venv: Path) -> None:
    command = readme_install_command()
    done = run([str(venv / "bin" / command[0]), *command[1:]], REPO, timeout=600)
    if done.returncode != 0:
        probe = run([str(venv / "bin" / "pip"), "download", "--no-deps", "-d", str(venv / "probe"), "hatchling"], REPO)
        if probe.returncode != 0:
            pytest.skip(
                f"the build backend cannot be fetched (no network and no cached wheel): {probe.stderr.strip()[-300:]}"
            )
        pytest.fail(f"`{' '.join(command)}` failed in a fresh venv:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def check_programs_elsewhere(venv: Path, where: Path) -> str:
    """mypy --strict on a good and a bad program outside the checkout; returns its output."""
    where.mkdir()
    (where / "pyproject.toml").write_text(CONFIG)
    (where / "my_pipeline.py").write_text(GOOD)
    (where / "misuse.py").write_text(BAD)
    args = [str(venv / "bin" / "python"), "-m", "mypy", "--strict", "--no-pretty", "--cache-dir", str(where / ".cache")]
    out = run([*args, "my_pipeline.py", "misuse.py"], where)
    text = out.stdout + out.stderr
    assert "import-not-found" not in text and "import-untyped" not in text, text
    errors = [line for line in text.splitlines() if ": error: " in line]
    assert errors == ["misuse.py:9: error: fold() requires a TotalOrder collection  [hydrolite-order]"], text
    assert "misuse.py:9: note: found: Stream[int, Process[Server], Unbounded, NoOrder]" in text, text
    assert out.returncode == 1, text
    return text


def imported_from(venv: Path, where: Path) -> Path:
    out = run([str(venv / "bin" / "python"), "-c", "import hydrolite; print(hydrolite.__file__)"], where)
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip()).resolve()


def test_editable_install_is_visible_to_mypy(venv: Path, tmp_path: Path) -> None:
    install_as_the_readme_says(venv)
    pth = [p for p in site_packages(venv / "bin" / "python").glob("*.pth") if str(REPO) in p.read_text()]
    assert pth, "the editable install wrote no .pth naming the checkout"
    for p in pth:  # a static path, not an import hook that only Python itself can follow
        assert not any(line.startswith("import") for line in p.read_text().splitlines()), p.read_text()
    assert imported_from(venv, tmp_path) == REPO / "hydrolite" / "__init__.py"
    assert (venv / "bin" / "hydrolite").exists() and (venv / "bin" / "hydrolite-lint").exists()
    check_programs_elsewhere(venv, tmp_path / "elsewhere")


def test_wheel_install_is_visible_to_mypy(venv: Path, tmp_path: Path) -> None:
    pip = str(venv / "bin" / "pip")
    built = run([pip, "wheel", "--no-deps", "-w", str(tmp_path / "wheels"), "."], REPO, timeout=300)
    if built.returncode != 0:
        probe = run([pip, "download", "--no-deps", "-d", str(tmp_path / "probe"), "hatchling"], REPO)
        if probe.returncode != 0:
            pytest.skip(
                f"the build backend cannot be fetched (no network and no cached wheel): {probe.stderr.strip()[-300:]}"
            )
        pytest.fail(built.stdout[-3000:] + built.stderr[-3000:])
    (wheel,) = (tmp_path / "wheels").glob("hydrolite-*.whl")
    done = run([pip, "install", "--no-deps", "--force-reinstall", str(wheel)], REPO)
    assert done.returncode == 0, done.stderr
    assert imported_from(venv, tmp_path).is_relative_to(venv.resolve())
    check_programs_elsewhere(venv, tmp_path / "elsewhere")
