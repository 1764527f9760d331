"""The launcher Spark starts its Python processes with (`worker_python`), run for real."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hydrolite.planner.spark import worker_python as wp

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the launcher is a POSIX shell script")


def _sys_path_of(launcher: str, pythonpath: str) -> tuple[str, list[str]]:
    """Run the launcher as Spark does (PYTHONPATH set to Spark's entries): its interpreter
    and sys.path."""
    code = "import sys; print(sys.executable); print('\\n'.join(sys.path))"
    env = {**os.environ, "PYTHONPATH": pythonpath}
    out = subprocess.run([launcher, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    first, *rest = out.splitlines()
    return first, rest


def test_the_launcher_puts_the_installation_before_sparks_zips(tmp_path: Path) -> None:
    first = [str(tmp_path / "site one"), str(tmp_path / "it's")]  # spaces and quotes survive the shell
    for d in first:
        os.makedirs(d)
    zip_entry = str(tmp_path / "spark" / "python" / "lib" / "pyspark.zip")
    launcher = wp._write_launcher(wp.launcher_text(sys.executable, first))
    assert os.stat(launcher).st_mode & stat.S_IXUSR
    python, path = _sys_path_of(launcher, zip_entry)
    assert os.path.realpath(python) == os.path.realpath(sys.executable)
    assert path.index(first[0]) < path.index(first[1]) < path.index(zip_entry)
    _, without = _sys_path_of(launcher, "")  # Spark always sets it; an empty one adds nothing else
    assert "" not in without[1:] and first[0] in without


def test_the_launcher_drops_sparks_own_entries_and_keeps_the_rest_in_order(tmp_path: Path) -> None:
    """The entries in `drop` (Spark's zips and jar) leave the path; every other entry stays
    where it was: spaces, `*` and empty entries included."""
    first = [str(tmp_path / "site")]
    zips = [str(tmp_path / "spark" / "python" / "lib" / n) for n in ("pyspark.zip", "py4j-0.10.9.9-src.zip")]
    jar = str(tmp_path / "spark" / "jars" / "spark-core_2.13-4.3.0.jar")
    mine = [str(tmp_path / "my libs"), str(tmp_path / "star*"), str(tmp_path / "other.zip")]
    for d in [*first, *mine]:
        os.makedirs(d)
    launcher = wp._write_launcher(wp.launcher_text(sys.executable, first, [*zips, jar]))
    given = [zips[0], mine[0], zips[1], mine[1], jar, mine[2]]
    _, path = _sys_path_of(launcher, os.pathsep.join(given))
    assert not set(path) & {*zips, jar}
    assert [p for p in path if p in [*first, *mine]] == [*first, *mine]
    _, unchanged = _sys_path_of(wp._write_launcher(wp.launcher_text(sys.executable, first)), os.pathsep.join(given))
    assert [p for p in unchanged if p in given] == given  # nothing to drop: all kept
    # empty entries (the current directory for Python), inside and at either end, stay where they were
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(["", mine[0], zips[0], "", mine[1], ""])}
    code = "import os; print(os.environ['PYTHONPATH'])"
    out = subprocess.run([launcher, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.rstrip("\n").split(os.pathsep) == [*first, "", mine[0], "", mine[1], ""]


def test_sparks_own_entries_are_those_of_the_installed_home() -> None:
    """For the pip-installed pyspark here: its two zips and its spark-core jar, files that
    exist, and nothing outside its home."""
    import pyspark

    home = os.path.dirname(os.path.realpath(pyspark.__file__))
    entries = wp.sparks_own_entries()
    names = sorted(os.path.basename(e) for e in entries if os.path.realpath(e).startswith(home + os.sep))
    assert len(names) == len(entries) and all(os.path.isfile(e) for e in entries)
    assert "pyspark.zip" in names and any(n.startswith("py4j-") for n in names)
    assert any(n.startswith("spark-core_") and n.endswith(".jar") for n in names)


def test_the_same_launcher_is_written_once(tmp_path: Path) -> None:
    text = wp.launcher_text(sys.executable, [str(tmp_path)])
    a = wp._write_launcher(text)
    before = os.stat(a).st_mtime_ns
    assert wp._write_launcher(text) == a and os.stat(a).st_mtime_ns == before
    assert wp._write_launcher(wp.launcher_text(sys.executable, [])) != a
    assert Path(a).read_text() == text


def test_the_installed_pyspark_is_what_spark_home_points_at() -> None:
    """With pyspark pip-installed (as here), SPARK_HOME is the package: its zip holds the same
    modules, so the launcher puts their directory first."""
    import pyspark

    parents = wp._installed_pyspark_parents()
    assert os.path.dirname(os.path.dirname(pyspark.__file__)) in parents


@pytest.mark.parametrize(
    ("master", "conf", "env", "want"),
    [
        ("local[2]", {}, None, "launcher"),
        (None, {}, None, "launcher"),
        ("local-cluster[2,1,1024]", {}, None, "launcher"),
        ("local[*]", {"spark.pyspark.python": "/opt/py/bin/python3"}, None, "/opt/py/bin/python3"),
        ("local[2]", {}, "/usr/bin/python3", None),  # the user's environment decides
        ("spark://head:7077", {}, None, None),  # executors on other machines: Spark's choice
        ("yarn", {}, None, None),
    ],
)
def test_who_chooses_the_workers_python(
    master: str | None, conf: dict[str, str], env: str | None, want: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is None:
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    else:
        monkeypatch.setenv("PYSPARK_PYTHON", env)
    got = wp.worker_python(master, conf)
    if want == "launcher":
        assert got is not None and Path(got).read_text().startswith("#!/bin/sh")
        assert f"exec {shlex.quote(sys.executable)} " in Path(got).read_text()
    else:
        assert got == want


def test_a_directory_another_user_could_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher is a script Spark runs: it is never taken from (or written to) a directory
    others can write, nor trusted when its content differs."""
    monkeypatch.setattr(wp.tempfile, "tempdir", str(tmp_path))
    shared = tmp_path / f"hydrolite-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    text = wp.launcher_text(sys.executable, [])
    path = wp._write_launcher(text)
    assert not path.startswith(str(shared) + os.sep) and Path(path).read_text() == text
    shared.chmod(0o700)
    planted = shared / Path(wp._write_launcher(text)).name
    assert planted.parent == shared
    planted.write_text("#!/bin/sh\necho planted\n")
    assert wp._write_launcher(text) == str(planted) and planted.read_text() == text


def test_only_the_query_start_modules_go_through_the_fork_server_client(tmp_path: Path) -> None:
    """`python -m` of a module in `forkserver.FORKED` runs the client (isolated, with the
    modules it may fork); any other command runs the interpreter as before."""
    from hydrolite.planner.spark.forkserver import FORKED

    client = tmp_path / "client.py"
    client.write_text("import sys; print('client', sys.flags.isolated, sys.flags.no_site, sys.argv[1:])")
    (tmp_path / "other_mod.py").write_text("print('direct')")
    launcher = tmp_path / "launcher.sh"
    launcher.write_text(wp.launcher_text(sys.executable, [], None, str(client)))
    launcher.chmod(0o755)

    def run(*args: str) -> str:
        done = subprocess.run([str(launcher), *args], cwd=tmp_path, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    for module in FORKED:
        assert run("-m", module, "a b") == f"client 1 1 {[','.join(FORKED), '-m', module, 'a b']}"
    assert run("-m", "other_mod") == "direct"
    assert run("-c", "print('direct')") == "direct"
    assert "client" not in wp.launcher_text(sys.executable, [], None)


def test_hydrolite_no_forkserver_writes_the_launcher_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    with_server = Path(wp.worker_python("local[2]", {}) or "").read_text()
    monkeypatch.setenv("HYDROLITE_NO_FORKSERVER", "1")
    without = Path(wp.worker_python("local[2]", {}) or "").read_text()
    assert "forkserver-client-" in with_server and "forkserver" not in without
