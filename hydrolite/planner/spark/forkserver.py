"""A fork server for the Python processes Spark starts afresh at every query start.

For each Python streaming source (hydrolite's feeds and channels) Spark starts a new
`python -m pyspark.sql.streaming.python_streaming_source_runner` every time a query starts,
and a `transformWithState` query starts `python -m
pyspark.sql.streaming.transform_with_state_driver_worker` too. Each imports pyspark,
pyarrow, numpy and pandas before it does anything: about 0.4-0.5 s of CPU apiece here, so a
query with two feeds and executor state spent ~1.5 s of CPU in imports before its first
batch, at every start and restart. (Spark's UDF workers do not pay it: they fork from
`pyspark.daemon`, which imported them once.)

This server does for those modules what `pyspark.daemon` does for UDF workers: it imports
them once, then forks a child per request. The launcher (`worker_python.py`) routes only the
modules in `FORKED` here, through `forkserver_client.py`; the child gets the client's exact
arguments, environment, working directory and standard input, output and error (passed as
file descriptors), and runs the module as `__main__`, so to Spark it is the process it
started: the client forwards Spark's signals to it and exits with its status.

One server per JVM and environment (`forkserver_client.server_key`: the interpreter, the
directory, the JVM's process id and every environment variable but Spark's per-process
socket and secret), so a child never runs under an interpreter started with other settings
(hash seed, `PYTHONPATH`, ...); at most `forkserver_client.MAX_SERVERS` per JVM. Its
socket and log live in the user's private launcher
directory (mode 0700); it serves only its own user (`SO_PEERCRED`). It exits when its JVM
does, and kills a child whose client went away (Spark destroyed it by force). A server that
cannot start, or is gone, costs nothing but the time it saves: the client then runs the
module itself. `HYDROLITE_NO_FORKSERVER=1` turns it off: each process starts afresh through
the launcher alone (checked by `worker_python` when it writes the launcher).

    python -m hydrolite.planner.spark.forkserver SOCKET JVM_PID MODULE[,MODULE...]

(the modules it imports once and may run)
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import traceback
import warnings

from .forkserver_client import alive, signal_if_running

#: the modules Spark starts as fresh processes at query start, which the server imports once
#: and runs (hydrolite's sources and stateful processor come pickled by value: nothing more
#: to import ahead)
FORKED = (
    "pyspark.sql.streaming.python_streaming_source_runner",
    "pyspark.sql.streaming.transform_with_state_driver_worker",
)
_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def _log(text: str) -> None:
    print(f"hydrolite fork server {os.getpid()}: {text}", file=sys.stderr, flush=True)


def _read_request(conn: socket.socket, forked: tuple[str, ...]) -> tuple[dict[str, object], list[int]]:
    """The client's request (`forkserver_client._request`): its JSON and its three fds."""
    conn.settimeout(10)
    _, uid, _ = _CRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))
    msg, fds, _flags, _addr = socket.recv_fds(conn, 1, 3)
    if uid != os.getuid() or msg != b"R" or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"not a request from this user's launcher (uid {uid}, {msg!r}, {len(fds)} fds)")
    try:
        request = _read_body(conn)
        argv, env, cwd = request.get("argv"), request.get("env"), request.get("cwd")
        if not (isinstance(argv, list) and isinstance(env, dict) and isinstance(cwd, str)):
            raise ValueError(f"a malformed request: {sorted(request)}")
        if len(argv) < 2 or argv[0] != "-m" or argv[1] not in forked:
            raise ValueError(f"the fork server runs only `-m` of {forked}, not {argv}")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, fds


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the client closed inside its request")
        data += chunk
    return bytes(data)


def _read_body(conn: socket.socket) -> dict[str, object]:
    (size,) = struct.unpack("!I", _recv_exact(conn, 4))
    request = json.loads(_recv_exact(conn, size))
    if not isinstance(request, dict):
        raise ValueError("a malformed request")
    return request


def _run_child(request: dict[str, object], fds: list[int]) -> int:
    """In the forked child: become the process the client stands for and run its module."""
    argv, env, cwd = request["argv"], request["env"], request["cwd"]
    assert isinstance(argv, list) and isinstance(env, dict) and isinstance(cwd, str)  # (_read_request)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    sys.path[0] = cwd  # what `python -m` puts first (the server started in the same directory)
    sys.argv = [str(a) for a in argv[1:]]
    # runpy warns that the module is imported already (the server preloaded it, which is the
    # point): its code still runs afresh as `__main__`, as `python -m` runs it
    warnings.filterwarnings(
        "ignore", message=r".*found in sys\.modules after import of package", category=RuntimeWarning
    )
    try:
        runpy.run_module(str(argv[1]), run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    return 0


def _gone(conn: socket.socket) -> bool:
    """Whether a client closed its connection: at its end (EOF), or reset, as a client killed
    with the server's reply still unread leaves it (a reset must not stop the server: its
    other children would be left without anyone to reap or stop them)."""
    try:
        return not conn.recv(1)
    except OSError:
        return True


class Server:
    """Listens on `path` for clients, forks a child per request and reports each child's
    exit status to its client, until the JVM `jvm` is gone."""

    def __init__(self, path: str, jvm: int, forked: tuple[str, ...]) -> None:
        self.path, self.jvm, self.forked = path, jvm, forked
        self.sel = selectors.DefaultSelector()
        self.children: dict[int, socket.socket | None] = {}  # child pid -> its client's connection
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.lexists(path):  # a dead server's (the client's lock makes this one the only one)
            os.unlink(path)
        self.listener.bind(path)
        os.chmod(path, 0o600)
        self.listener.listen(64)
        self.sel.register(self.listener, selectors.EVENT_READ)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes `select` through the pipe
        self.sel.register(self.wake_r, selectors.EVENT_READ)

    def _fork(self, conn: socket.socket) -> None:
        request, fds = _read_request(conn, self.forked)
        with warnings.catch_warnings():  # Python 3.12+ warns of forking with threads running:
            warnings.simplefilter("ignore", DeprecationWarning)  # numpy's and pyarrow's, as in pyspark.daemon
            pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # (the server's own handlers)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                self.sel.close()
                self.listener.close()
                os.close(self.wake_r)
                os.close(self.wake_w)
                for other in (conn, *self.children.values()):
                    if other is not None:
                        other.close()
                code = _run_child(request, fds)
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    atexit._run_exitfuncs()
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        for fd in fds:
            os.close(fd)
        try:
            conn.sendall(f"P{pid}\n".encode())
        except OSError:  # the client died meanwhile (Spark destroyed it): nobody stands for the child
            os.kill(pid, signal.SIGKILL)
            self.children[pid] = None
            raise
        self.children[pid] = conn
        self.sel.register(conn, selectors.EVENT_READ, pid)

    def _reap(self) -> None:
        """Send each child's exit status to its client, as the process Spark started."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            self.sel.unregister(conn)
            with contextlib.suppress(OSError):  # the client is gone: nobody waits for the status
                conn.sendall(f"S{os.waitstatus_to_exitcode(status)}\n".encode())
            conn.close()

    def serve(self) -> None:
        """Serve until the JVM exits; then send the children still running SIGTERM."""
        while alive(self.jvm):
            for key, _ in self.sel.select(timeout=1.0):
                if key.fileobj is self.listener:
                    conn, _addr = self.listener.accept()
                    try:
                        self._fork(conn)
                    except (OSError, ValueError, EOFError) as err:
                        _log(f"refused a request: {err!r}")
                        conn.close()
                elif key.fileobj == self.wake_r:
                    os.read(self.wake_r, 512)
                elif isinstance(key.fileobj, socket.socket) and _gone(key.fileobj):
                    # the client went away (Spark destroyed it): so goes its child
                    self.sel.unregister(key.fileobj)
                    key.fileobj.close()
                    self.children[key.data] = None  # (reaped, with nobody to tell)
                    signal_if_running(key.data, signal.SIGKILL)
            self._reap()
        for pid in list(self.children):
            signal_if_running(pid, signal.SIGTERM)

    def close(self) -> None:
        """Remove the socket, the client's lock (`forkserver_client._spawn`) and the log
        when nothing was written to it."""
        base = self.path.removesuffix(".sock")
        for path in (self.path, f"{base}.lock", f"{base}.log"):
            with contextlib.suppress(FileNotFoundError):
                if not path.endswith(".log") or os.path.getsize(path) == 0:
                    os.unlink(path)


def main(argv: list[str]) -> None:
    path, jvm, forked = argv[0], int(argv[1]), tuple(m for m in argv[2].split(",") if m)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # (then `close` removes the socket)
    for module in forked:
        try:
            importlib.import_module(module)
        except (Exception, SystemExit):  # the child imports it again and fails where Spark sees it
            _log(f"could not preload {module}:\n{traceback.format_exc()}")
    server = Server(path, jvm, forked)
    try:
        server.serve()
    finally:
        server.close()


if __name__ == "__main__":
    main(sys.argv[1:])
