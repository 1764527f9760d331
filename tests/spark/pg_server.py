"""A throwaway PostgreSQL server for the tests: `initdb` + `pg_ctl` in a temporary directory.

Debian's `postgresql` package provides the binaries (`/usr/lib/postgresql/<major>/bin`;
`.ci/run` installs it when missing). The cluster listens on 127.0.0.1 on a free port and a
private socket directory, trusts local connections (user `hydrolite`), and runs without
fsync (a test server). As root, initdb refuses to run, so the cluster is owned by and runs
as the `postgres` system user (`runuser`).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


def pg_bin() -> str:
    """The newest installed PostgreSQL's bin directory (or an error saying how to install one)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    on_path = shutil.which("initdb")
    if on_path:
        return os.path.dirname(on_path)
    raise RuntimeError(
        "PostgreSQL's server binaries (initdb, pg_ctl) are not installed\n"
        "  fix: apt-get install -y postgresql (what .ci/run does)"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _as_owner(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(_as_owner(cmd), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yields its DSN (`postgresql://hydrolite@127.0.0.1:PORT/postgres`)."""
    bin_dir = pg_bin()
    root = tempfile.mkdtemp(prefix="hydrolite-pg-")
    data, sockets, log = os.path.join(root, "data"), os.path.join(root, "sock"), os.path.join(root, "server.log")
    os.makedirs(sockets)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    port = free_port()
    initdb = [os.path.join(bin_dir, "initdb"), "-D", data, "-U", "hydrolite", "-A", "trust", "--no-sync"]
    _run([*initdb, "-E", "UTF8", "--locale=C.UTF-8"], "initdb")
    server_opts = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    pg_ctl = os.path.join(bin_dir, "pg_ctl")
    try:
        _run([pg_ctl, "-D", data, "-o", server_opts, "-l", log, "-w", "-t", "60", "start"], "pg_ctl start")
    except RuntimeError as exc:
        with open(log) as fh:
            raise RuntimeError(f"{exc}\nserver log:\n{fh.read()[-3000:]}") from exc
    try:
        yield f"postgresql://hydrolite@127.0.0.1:{port}/postgres"
    finally:
        _run([pg_ctl, "-D", data, "-m", "fast", "-w", "stop"], "pg_ctl stop")
        shutil.rmtree(root)
