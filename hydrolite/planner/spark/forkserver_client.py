"""The launcher's client half of `forkserver.py`: run `python -m MODULE ARGS` through this
JVM's fork server, or exactly as before when there is none.

Spark runs it (through the launcher `worker_python.py` writes) as `python -I -S
<copy of this file> FORKED -m MODULE ARGS` for the modules it starts afresh at every query
start (`FORKED`: those modules, comma-separated, which the server imports once).
It uses the standard library only and is copied next to the launchers (a private
directory), so nothing of `hydrolite` or `site-packages` is imported in it: it starts in
about 20 ms. It sends its arguments, environment, working directory and its standard input,
output and error (the file descriptors themselves) to the fork server for its key; the
server forks a child that already imported the module and runs it as `__main__` with all of
those. The client stays as the process Spark started: it forwards Spark's signals to the
child and exits with the child's status. Without a server (the first start of a JVM's first
query, a server that could not start), it starts one for later and runs the module itself
(`os.execv`), as if the launcher had never looked.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import struct
import sys
import time

#: environment variables Spark sets anew for each Python process it starts (its callback
#: socket and secret): sent to the child, not part of the server's key
PER_PROCESS = "PYTHON_WORKER_FACTORY_"
#: servers one JVM may have started (one per environment its processes had): should some
#: setting change at every start, that is a server per start, each living as long as the
#: JVM (~73 MB); past this many the client runs the module itself
MAX_SERVERS = 4
#: the signals Spark may stop a process with, forwarded to the child
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def shared_env(env: dict[str, str]) -> dict[str, str]:
    """`env` without Spark's per-process entries: what the server is started with and keyed by."""
    return {k: v for k, v in env.items() if not k.startswith(PER_PROCESS)}


def signal_if_running(pid: int, signum: int) -> None:
    """Send `signum` to `pid` unless it is gone already."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return


def server_key(executable: str, cwd: str, parent: int, env: dict[str, str]) -> str:
    """The key of the fork server that may serve a process started with these: the same
    interpreter, directory, JVM (`parent`) and environment but Spark's per-process entries.

    >>> key = server_key("/usr/bin/python3", "/work", 42, {"PYTHONHASHSEED": "0", "PYTHON_WORKER_FACTORY_SECRET": "a"})
    >>> key == server_key("/usr/bin/python3", "/work", 42, {"PYTHONHASHSEED": "0", "PYTHON_WORKER_FACTORY_SECRET": "b"})
    True
    >>> key == server_key("/usr/bin/python3", "/work", 42, {"PYTHONHASHSEED": "1"})  # another interpreter's settings
    False
    """
    kept = sorted(shared_env(env).items())
    text = json.dumps([executable, cwd, parent, kept])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _spawn(base: str, parent: int, forked: str) -> None:
    """Start the fork server for `base` (once per key: the lock file is created exclusively;
    its log is `base.log`), detached from this process."""
    directory, prefix = os.path.dirname(base), f"fs-{parent}-"
    if sum(n.startswith(prefix) and n.endswith(".lock") for n in os.listdir(directory)) >= MAX_SERVERS:
        return
    try:
        fd = os.open(f"{base}.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return  # started (or starting) already; or it failed once: then every start runs itself
    os.close(fd)
    env = shared_env(dict(os.environ))
    log = os.open(f"{base}.log", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDWR)
    argv = [sys.executable, "-m", "hydrolite.planner.spark.forkserver", f"{base}.sock", str(parent), forked]
    if os.fork() == 0:  # detach: a new session, and the grandchild runs the server
        try:
            os.setsid()
            if os.fork() == 0:
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(log, 2)
                os.execve(sys.executable, argv, env)
        finally:
            os._exit(0)
    os.wait()
    os.close(log)
    os.close(null)


def _request(conn: socket.socket, args: list[str]) -> None:
    body = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    socket.send_fds(conn, [b"R"], [0, 1, 2])
    conn.sendall(struct.pack("!I", len(body)) + body)


def _line(conn: socket.socket, buffered: bytearray) -> bytes:
    while b"\n" not in buffered:
        chunk = conn.recv(64)
        if not chunk:
            raise EOFError("the fork server closed the connection")
        buffered += chunk
    line, _, rest = bytes(buffered).partition(b"\n")
    buffered[:] = rest
    return line


def alive(pid: int) -> bool:
    """Whether process `pid` exists (this file runs alone, isolated: it cannot import
    `lock._alive`, which is the same; the server uses this one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_of(signum: int) -> None:
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _run_here(args: list[str], pending: list[int]) -> None:
    """Run the module in this process (`execv`), unless a signal came first: then die of it,
    as the process Spark started would have (the default actions first, so that a signal
    arriving meanwhile acts at once)."""
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_DFL)
    for signum in pending:
        _die_of(signum)
    os.execv(sys.executable, [sys.executable, *args])


def main(argv: list[str]) -> None:
    forked, args = argv[0], argv[1:]  # args: ["-m", module, ...]
    parent, cwd = os.getppid(), os.getcwd()
    key = server_key(sys.executable, cwd, parent, dict(os.environ))
    base = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"fs-{parent}-{key}")
    # Spark's signals from the start: before the child's pid is known they wait (forwarded
    # once it is, or the client dies of them when it runs the module itself)
    child, pending = 0, list[int]()

    def forward(signum: int, _frame: object) -> None:
        if child:
            signal_if_running(child, signum)
        else:
            pending.append(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(f"{base}.sock")
        _request(conn, args)
    except OSError:  # no server (yet): start one for the next process, run this one here
        conn.close()
        _spawn(base, parent, forked)
        _run_here(args, pending)
    buffered = bytearray()
    try:
        child = int(_line(conn, buffered)[1:])
    except (OSError, EOFError, ValueError):  # refused before it forked (see its log): run here
        conn.close()
        _run_here(args, pending)
    for signum in pending:
        signal_if_running(child, signum)
    try:
        status = int(_line(conn, buffered)[1:])
    except (OSError, EOFError):  # the server died: wait for the child, whose status is lost
        while alive(child):
            time.sleep(0.1)
        sys.exit(f"hydrolite fork server: lost the status of process {child}")
    if status < 0:  # killed by a signal: die of the same one, as the child did
        _die_of(-status)
    sys.exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
