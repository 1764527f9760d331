"""Which Python executable Spark starts its Python processes with, on this machine.

Spark starts a Python process for every Python function it runs; for a Python streaming
source (hydrolite's feeds and channels) it starts a fresh one per source every time a query
starts. Spark launches them with `PYTHONPATH=$SPARK_HOME/python/lib/pyspark.zip:...`, and a
zip holds no bytecode cache: each start compiled the pyspark modules it imports again, about
0.85 s of a 1.7 s start here (a program with four sources waited about 7 s before its first
micro-batch). When `pyspark` is pip-installed, `SPARK_HOME` *is* the installed package, so
the same modules exist compiled next to it; `worker_python` writes a small launcher that
puts that installation ahead of the zips and runs this interpreter.

It also takes Spark's own entries out of that `PYTHONPATH` (the two zips and the
`spark-core` jar Spark adds for distributions that ship pyspark inside it): with the
installation first they can provide nothing, but each costs time in every process. Python
reads a zip's (or jar's) table of contents when it first searches it, and again on every
`importlib.invalidate_caches()`, which Spark's worker calls before each function it runs:
the jar alone lists ~6,000 entries. A Java Flight Recorder + py-spy profile of the operator
matrix on Spark found ~10 s of Python CPU in those re-reads over 34 small programs (of ~77 s
spent in Spark's Python processes). Any other entry (the user's own) stays, in its order.

The processes Spark starts afresh at every query start (`forkserver.FORKED`: a Python
source's runner, the `transformWithState` driver worker) go further: the launcher hands them
to a fork server of the JVM that imported pyspark and pyarrow once (`forkserver.py`), unless
`HYDROLITE_NO_FORKSERVER=1`.

Without an explicit choice Spark runs `python3` from `PATH`, which need not be the
interpreter (or virtual environment) the program runs in; the launcher also fixes that, as
PySpark's documentation advises (`PYSPARK_PYTHON=sys.executable`).

Only local masters (`local`, `local[N]`, `local-cluster[...]`) get it: their Python
processes run on this machine. A user's own `PYSPARK_PYTHON` (environment) is left alone,
and a `spark.pyspark.python` conf is taken as that choice (PySpark itself reads only the
environment variable once the driver runs in Python).

```python
>>> worker_python("local[2]", {"spark.pyspark.python": "/opt/py/bin/python"})
'/opt/py/bin/python'
>>> worker_python("spark://head:7077", {}) is None  # executors elsewhere: Spark's own choice
True

```
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import shlex
import stat
import sys
import tempfile
from collections.abc import Mapping

from . import forkserver_client
from .forkserver import FORKED


def _spark_home() -> str | None:
    from pyspark.find_spark_home import _find_spark_home

    try:
        return _find_spark_home()
    except Exception:  # pyspark exits with its own message when it finds none; Spark will say so
        return None


def _installed_pyspark_parents() -> list[str]:
    """The directories holding the installed `pyspark` and `py4j`, when `SPARK_HOME` is that
    same pyspark (a pip install): then these are the zips' modules, compiled once."""
    import pyspark

    home = _spark_home()
    package = os.path.dirname(os.path.abspath(pyspark.__file__))
    if home is None or os.path.realpath(home) != os.path.realpath(package):
        return []  # a separate Spark distribution: its zip is what its JVM expects
    parents: list[str] = []
    for name in ("pyspark", "py4j"):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        parent = os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))
        if parent not in parents:
            parents.append(parent)
    return parents


#: where Spark's own `PYTHONPATH` entries sit under its home
_SPARKS_ENTRIES = (("python", "lib", "pyspark.zip"), ("python", "lib", "py4j-*-src.zip"), ("jars", "spark-core_*.jar"))


def sparks_own_entries() -> list[str]:
    """The `PYTHONPATH` entries Spark adds from its home (its `python/lib` zips and
    `jars/spark-core_*.jar`), under both spellings of the home (as given and resolved): what
    the launcher drops when the installation comes first, i.e. when `SPARK_HOME` is the
    pip-installed pyspark (`_installed_pyspark_parents()` finds it; `worker_python` checks).
    A separate Spark distribution keeps them: its zips are what its JVM expects."""
    home = _spark_home()
    if home is None:
        return []
    found: list[str] = []
    for root in dict.fromkeys([home, os.path.realpath(home)]):
        for parts in _SPARKS_ENTRIES:
            found += sorted(glob.glob(os.path.join(glob.escape(root), *parts)))
    return list(dict.fromkeys(found))


def launcher_text(python: str, first: list[str], drop: list[str] | None = None, client: str | None = None) -> str:
    """The launcher script: `first` ahead of the PYTHONPATH Spark gives, without the entries
    in `drop` (matched whole), then `python`. Every other entry is kept as written, in its
    order: globbing is off while the script splits the path (an entry may hold `*`), and
    empty entries (Python's current directory) stay, a trailing one included. With `client`
    (a copy of `forkserver_client.py`), `python -m` of a module in `forkserver.FORKED` runs
    through it: isolated (`-I -S`, the standard library only), it hands the process to the
    fork server (`forkserver.py`) or runs the module itself."""
    lines = [
        "#!/bin/sh",
        "# written by hydrolite (hydrolite/planner/spark/worker_python.py): Spark's Python",
        "# processes import the installed pyspark (compiled once), not SPARK_HOME's zips",
    ]
    if first:
        lines += ["set -f", f"hydrolite_path={shlex.quote(os.pathsep.join(first))}", "IFS=:"]
        lines.append("for hydrolite_entry in ${PYTHONPATH-}; do")
        if drop:
            lines.append(f"  case $hydrolite_entry in {'|'.join(shlex.quote(d) for d in drop)}) continue ;; esac")
        lines += ['  hydrolite_path="$hydrolite_path:$hydrolite_entry"', "done"]
        lines.append('case ${PYTHONPATH-} in *:) hydrolite_path="$hydrolite_path:" ;; esac  # splitting drops it')
        lines += ['PYTHONPATH="$hydrolite_path"', "export PYTHONPATH"]
    if client is not None:
        lines += [
            'if [ "${1-}" = -m ]; then',
            f"  case ${{2-}} in {'|'.join(FORKED)})",
            f'    exec {shlex.quote(python)} -I -S {shlex.quote(client)} {",".join(FORKED)} "$@" ;;',
            "  esac",
            "fi",
        ]
    lines.append(f'exec {shlex.quote(python)} "$@"')
    return "\n".join(lines) + "\n"


def _private_dir() -> str:
    """This user's directory for launchers under the temporary directory: owned by this user
    and writable by no one else (another user could otherwise plant a script we would run);
    a new private directory when that one is not."""
    directory = os.path.join(tempfile.gettempdir(), f"hydrolite-{os.getuid()}")
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except FileExistsError:  # a file (or a link to one) of that name: not ours to use
        return tempfile.mkdtemp(prefix="hydrolite-")
    st = os.lstat(directory)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
        return directory
    return tempfile.mkdtemp(prefix="hydrolite-")


def _holds(path: str, text: str) -> bool:
    """Whether the file at `path` exists with exactly `text` in it."""
    try:
        with open(path) as fh:
            return fh.read() == text
    except FileNotFoundError:
        return False


def _write_launcher(text: str, name: str = "python", suffix: str = ".sh") -> str:
    """Write `text` once per content into this user's private directory; its path."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(_private_dir(), f"{name}-{digest}{suffix}")
    if _holds(path, text):
        return path
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)  # atomic: a concurrent session sees the whole file or none
    return path


def worker_python(master: str | None, conf: Mapping[str, str]) -> str | None:
    """The executable for Spark's Python processes under `master`, or None to keep what the
    environment says (`PYSPARK_PYTHON` set, not a local master, not POSIX)."""
    if os.environ.get("PYSPARK_PYTHON"):
        return None
    chosen = conf.get("spark.pyspark.python")
    if chosen:
        return chosen
    local = master is None or master == "local" or master.startswith(("local[", "local-cluster["))
    if not local or os.name != "posix" or not sys.executable:
        return None
    first = _installed_pyspark_parents()  # empty for a separate distribution: its entries stay
    client = None
    if os.environ.get("HYDROLITE_NO_FORKSERVER", "") in ("", "0"):
        with open(forkserver_client.__file__, encoding="utf-8") as fh:
            client = _write_launcher(fh.read(), "forkserver-client", ".py")
    return _write_launcher(launcher_text(sys.executable, first, sparks_own_entries() if first else [], client))
