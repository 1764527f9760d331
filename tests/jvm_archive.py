"""One class-data-sharing (CDS) archive for the Spark JVMs the test suite starts.

A Spark JVM spends most of its start-up looking for classes: each of the thousands of
classes it loads is searched for through pyspark's ~280 jars (a Java Flight Recorder
profile of a session's start: 57% of the samples in `ZipFile` entry lookups). Java 17 can
write the classes one run loaded into an archive (`-XX:ArchiveClassesAtExit`) that later
JVMs map at start (`-XX:SharedArchiveFile`). Measured on the 2-core test machine: a
`local[2]` SparkSession started in 5.0-5.7 s with the archive against 11.0-12.6 s without,
and session plus its first two jobs took 8.2-9.8 s against 17.9-19.5 s. The suite starts
one JVM per xdist worker and one per CLI run, notebook kernel and local-cluster process.

The archive is made once per machine and key (the JVM's version, pyspark's version and
jars, the JIT and GC flags), under pytest's cache directory, by a detached process running
the counter example through the CLI (about two minutes, beside the first tests; JVMs started
before it is in place run without it). A JVM whose version or class path does not match
the archive does not use it (Java's default `-Xshare:auto`, silent), so a foreign archive
costs time, never correctness: the classes are the same, only where they are read from
changes. `HYDROLITE_TEST_JVM_ARCHIVE=0` turns it off.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DUMP_TIMEOUT_S = 300

# The archive's workload: the CLI's `main` in one JVM, so the archive holds the classes of a
# streaming query with file inputs, Arrow functions, keyed state and JSON sinks.
_DRIVER = """
import json, sys
from hydrolite.cli import main
for args in json.load(open(sys.argv[1])):
    if main(args) != 0:
        sys.exit(f"archive workload failed: hydrolite {' '.join(args)}")
"""


def _key(base_opts: str) -> str:
    """What the archive depends on: the JVM, pyspark's jars, the flags it was made with."""
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True).stderr
    jars = Path(pyspark.__file__).parent / "jars"
    listing = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in jars.glob("*.jar"))
    blob = json.dumps([java, pyspark.__version__, str(jars), listing, base_opts])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _write_json(path: Path, rows: list[dict[str, object]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path.parent)


def _workload(d: Path) -> list[list[str]]:
    """`hydrolite run` argument lists: the counter example, reading JSON files and writing JSON."""
    common = ["--once", "--conf", "spark.sql.shuffle.partitions=2", "--progress", "lines"]
    counter = [
        "run",
        str(ROOT / "examples" / "counter.py"),
        "--checkpoint",
        str(d / "ck_counter"),
        "--input",
        f"increment=json:{_write_json(d / 'inc' / '1.json', [{'key': 'c1'}, {'key': 'c2'}])}",
        "--input",
        f"query=json:{_write_json(d / 'qry' / '1.json', [{'key': 'c1'}])}",
        "--output",
        f"increment_ack=json:{d / 'out_acks'}",
        "--output",
        f"query_response=json:{d / 'out_resp'}",
        *common,
    ]
    return [counter]


def start(cache_dir: Path, base_opts: str) -> tuple[Path | None, str]:
    """The archive's path for JVMs started with `base_opts`, and whether it is cached or
    being made: a missing one is made by a detached process in the background (JVMs that
    start before it is renamed into place run without it: Java ignores a missing archive
    without a word). (None, why) when turned off or when the JVM cannot be asked its version."""
    if os.environ.get("HYDROLITE_TEST_JVM_ARCHIVE", "1") == "0":
        return None, "turned off by HYDROLITE_TEST_JVM_ARCHIVE=0"
    try:
        path = cache_dir / f"spark-{_key(base_opts)}.jsa"
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"cannot key the archive: {exc}"
    if path.exists():
        return path, "cached"
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".log"), "w") as log:  # the child keeps its own descriptor
        subprocess.Popen(
            [sys.executable, __file__, str(path), base_opts],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # outlives a short pytest run, and its ^C
        )
    return path, "being made in the background"


def make(path: Path, base_opts: str) -> None:
    """Run the workload in a JVM that writes the archive at exit; one maker at a time.

    At a lower priority (nice 10): the first tests, whose JVMs start before the archive exists
    anyway, keep the CPU; the maker runs in the time they wait (on Spark's scheduler, on disk)."""
    os.nice(10)
    with open(path.with_suffix(".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another pytest process is making it
        if path.exists():
            return
        partial = path.with_suffix(".partial")
        with tempfile.TemporaryDirectory(prefix="hydrolite-jvm-archive-") as tmp:
            jobs = Path(tmp) / "jobs.json"
            jobs.write_text(json.dumps(_workload(Path(tmp))))
            env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{base_opts} -XX:ArchiveClassesAtExit={partial}"}
            env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
            done = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(_DRIVER), str(jobs)],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=DUMP_TIMEOUT_S,
            )
        if done.returncode != 0 or not partial.exists():
            partial.unlink(missing_ok=True)
            sys.exit(f"making {path} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        os.replace(partial, path)


if __name__ == "__main__":
    make(Path(sys.argv[1]), sys.argv[2])
