"""The fork server (`hydrolite/planner/spark/forkserver.py`) and its client, run for real: a
shell stands for the JVM that starts Python processes, a small module for Spark's."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hydrolite.planner.spark.forkserver_client as client_module

#: a package's module, as Spark's are (runpy warns when such a module was imported before it
#: runs as `__main__`, which the server's preloading does: the child must not print that)
MODULE = "hl_fs_pkg.probe"
PROBE = """
import json, os, sys, time
if __name__ == "__main__":  # (the server imports it first, as it does Spark's modules)
    first = sys.stdin.readline()
    if first.startswith("sleep"):
        print(json.dumps({"pid": os.getpid(), "ppid": os.getppid()}), flush=True)
        time.sleep(60)
    seen = {
        "argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("PROBE_VALUE"),
        "worker": os.environ.get("PYTHON_WORKER_FACTORY_SECRET"), "stdin": first + sys.stdin.read(),
        "name": __name__, "path0": sys.path[0], "ppid": os.getppid(),
    }
    print(json.dumps(seen))
    print("to stderr", file=sys.stderr)
    sys.exit(3)
"""


@pytest.fixture
def place() -> Iterator[Path]:
    """A short private directory (a socket's path has ~100 bytes) with the client's copy and
    the probe module, as the launcher's directory holds them."""
    d = Path(tempfile.mkdtemp(prefix="hlfs-", dir="/tmp"))
    shutil.copy(client_module.__file__, d / "client.py")
    (d / "work").mkdir()
    (d / "work" / "hl_fs_pkg").mkdir()
    (d / "work" / "hl_fs_pkg" / "__init__.py").write_text("")
    (d / "work" / "hl_fs_pkg" / "probe.py").write_text(PROBE)
    yield d
    for sock in d.glob("fs-*.sock"):  # a server whose "JVM" is this test process
        _stop_server(sock)
    shutil.rmtree(d, ignore_errors=True)


def client_argv(place: Path, *args: str) -> list[str]:
    """The launcher's command for the probe module (`worker_python.launcher_text`)."""
    return [sys.executable, "-I", "-S", str(place / "client.py"), MODULE, "-m", MODULE, *args]


def env_for(secret: str) -> dict[str, str]:
    """One environment for every process (the server's key), but Spark's per-process secret."""
    return {**os.environ, "PROBE_VALUE": "x y", "PYTHON_WORKER_FACTORY_SECRET": secret}


def started(place: Path, secret: str, *args: str, stdin: str = "", **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        client_argv(place, *args),
        cwd=place / "work",
        env=env_for(secret),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        **kw,
    )


def wait_for_server(place: Path) -> int:
    deadline = time.monotonic() + 30
    while not list(place.glob("fs-*.sock")):
        logs = "".join(p.read_text() for p in place.glob("fs-*.log"))
        assert time.monotonic() < deadline, f"no fork server started: {[p.name for p in place.iterdir()]}\n{logs}"
        time.sleep(0.05)
    return _server_pid(next(place.glob("fs-*.sock")))


def test_a_forked_process_is_the_process_the_client_stands_for(place: Path) -> None:
    """The first start runs the module itself and starts the server; the next are forked by
    it: the same arguments, environment (Spark's per-process secret included), directory,
    stdin, stdout, stderr and exit status, `__main__` and `sys.path[0]` as `python -m`."""
    first = started(place, "s1", "a b", "*", stdin="one\n")
    server = wait_for_server(place)
    second = started(place, "s2", "a b", "*", stdin="two\n")
    assert (first.returncode, second.returncode) == (3, 3), first.stderr + second.stderr
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["ppid"] == os.getpid() and b["ppid"] == server  # run by itself, then forked
    assert (a["stdin"], b["stdin"]) == ("one\n", "two\n") and (a["worker"], b["worker"]) == ("s1", "s2")
    for seen in (a, b):
        assert seen["argv"] == ["a b", "*"] and seen["env"] == "x y" and seen["name"] == "__main__"
        assert seen["cwd"] == seen["path0"] == str(place / "work")
    assert first.stderr == second.stderr == "to stderr\n"


def test_the_server_ends_with_its_jvm(place: Path) -> None:
    """A shell stands for the JVM: once it exits, its server removes its socket and exits."""
    one = shlex.join(client_argv(place))
    script = (
        f"{one} </dev/null; i=0; while [ ! -S {place}/fs-*.sock ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"
    )
    subprocess.run(
        ["sh", "-c", script], cwd=place / "work", env=env_for("s"), capture_output=True, timeout=60, check=True
    )
    deadline = time.monotonic() + 10
    while list(place.glob("fs-*")):
        assert time.monotonic() < deadline, f"the server outlived its JVM: {[p.name for p in place.iterdir()]}"
        time.sleep(0.1)


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_a_stopped_client_takes_its_child_along(place: Path, how: str) -> None:
    """Spark stops a worker with SIGTERM (`Process.destroy`): the client forwards it and dies
    of it too. SIGKILL (`destroyForcibly`) cannot be forwarded: the server sees the client's
    connection close and kills the child."""
    started(place, "s1")
    server = wait_for_server(place)
    client = subprocess.Popen(
        client_argv(place),
        cwd=place / "work",
        env=env_for("s2"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdin is not None and client.stdout is not None
    client.stdin.write("sleep\n")
    client.stdin.flush()
    child = json.loads(client.stdout.readline())
    assert child["ppid"] == server
    client.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
    assert client.wait(timeout=10) == (-signal.SIGTERM if how == "sigterm" else -signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(child["pid"]):
        assert time.monotonic() < deadline, "the forked child outlived its client"
        time.sleep(0.05)


RAW_CLIENT = """
import os, socket, sys, time
sys.path.insert(0, sys.argv[2])
from client import _request
r, w = os.pipe()
os.dup2(w, 1)  # the child's stdout: its first line says who it is
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
_request(conn, ["-m", sys.argv[3]])
os.write(2, os.fdopen(r).readline().encode())
while b"\\n" not in conn.recv(64, socket.MSG_PEEK):  # the server's reply, left unread
    time.sleep(0.01)
os._exit(0)  # (a close with unread data: the server's end is reset)
"""


def test_a_client_gone_with_the_reply_unread_takes_its_child_along(place: Path) -> None:
    """A client that dies before it read the server's reply resets the connection (Spark
    stopped it as the child started): the server kills that child and serves on."""
    started(place, "s1")
    server = wait_for_server(place)
    raw = subprocess.run(
        [sys.executable, "-c", RAW_CLIENT, str(next(place.glob("fs-*.sock"))), str(place), MODULE],
        cwd=place / "work",
        env=env_for("s2"),
        input="sleep\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert raw.returncode == 0, raw.stderr
    child = json.loads(raw.stderr)
    assert child["ppid"] == server
    deadline = time.monotonic() + 10
    while _alive(child["pid"]):
        assert time.monotonic() < deadline, "the forked child outlived its client"
        time.sleep(0.05)
    again = started(place, "s3", stdin="x\n")
    assert again.returncode == 3 and json.loads(again.stdout)["ppid"] == server, again.stderr


def test_without_a_server_the_client_runs_the_module_itself(place: Path) -> None:
    """A server that cannot start (here: its lock taken, as after a failed start) costs only
    its time: every start runs the module in the client's own process."""
    from hydrolite.planner.spark.forkserver_client import server_key

    env = env_for("s")
    key = server_key(sys.executable, str(place / "work"), os.getpid(), env)
    (place / f"fs-{os.getpid()}-{key}.lock").write_text("")
    for _ in range(2):
        done = started(place, "s", stdin="x\n")
        assert done.returncode == 3 and json.loads(done.stdout)["ppid"] == os.getpid()
    assert not list(place.glob("fs-*.sock"))


def _server_pid(sock: Path) -> int:
    import socket
    import struct

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(sock))
        pid, _, _ = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return int(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _stop_server(sock: Path) -> None:
    try:
        pid = _server_pid(sock)
    except OSError:
        return
    os.kill(pid, signal.SIGTERM)


def test_a_request_the_server_refuses_runs_in_the_client(place: Path) -> None:
    """A server that will not fork the module (here: one started for other modules) closes
    the connection before forking; the client then runs the module itself."""
    from hydrolite.planner.spark.forkserver_client import server_key

    env = env_for("s")
    base = place / f"fs-{os.getpid()}-{server_key(sys.executable, str(place / 'work'), os.getpid(), env)}"
    Path(f"{base}.lock").write_text("")
    kept = {k: v for k, v in env.items() if not k.startswith("PYTHON_WORKER_FACTORY_")}
    with open(f"{base}.log", "w") as log:
        argv = [
            sys.executable,
            "-m",
            "hydrolite.planner.spark.forkserver",
            f"{base}.sock",
            str(os.getpid()),
            "json",
        ]
        server = subprocess.Popen(argv, cwd=place / "work", env=kept, stdin=subprocess.DEVNULL, stderr=log)
    try:
        assert wait_for_server(place) == server.pid
        done = started(place, "s", stdin="x\n")
        assert done.returncode == 3 and json.loads(done.stdout)["ppid"] == os.getpid(), done.stderr
        assert "refused a request" in Path(f"{base}.log").read_text()
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert not Path(f"{base}.sock").exists()  # (SIGTERM: it removes its socket)


def test_a_jvm_starts_at_most_a_few_servers(place: Path) -> None:
    """Should an environment variable change at every start, each start would have its own
    server; past `MAX_SERVERS` for one JVM the client runs the module itself instead."""
    from hydrolite.planner.spark.forkserver_client import MAX_SERVERS

    for i in range(MAX_SERVERS):
        (place / f"fs-{os.getpid()}-other{i}.lock").write_text("")
    done = started(place, "s", stdin="x\n")
    assert done.returncode == 3 and json.loads(done.stdout)["ppid"] == os.getpid()
    assert len(list(place.glob("fs-*.lock"))) == MAX_SERVERS  # no new server
    (place / f"fs-{os.getpid()}-other0.lock").unlink()  # one fewer: the next start starts one
    started(place, "s", stdin="x\n")
    wait_for_server(place)
