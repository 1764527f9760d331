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
import random
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
    """A free port below the kernel's ephemeral range: the OS never hands it to another
    process's outgoing connection or `bind(0)` (Spark and Py4J open many), so it stays free
    between this check and the server's bind, unlike a port `bind(0)` returned."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            ephemeral_low = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, ephemeral_low - 12000), ephemeral_low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port found below the ephemeral range (from {ephemeral_low})")


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
    initdb = [os.path.join(bin_dir, "initdb"), "-D", data, "-U", "hydrolite", "-A", "trust", "--no-sync"]
    _run([*initdb, "-E", "UTF8", "--locale=C.UTF-8"], "initdb")
    pg_ctl = os.path.join(bin_dir, "pg_ctl")
    for attempt in range(1, 4):  # another program may still take the port first: try another one
        port = free_port()
        server_opts = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        try:
            _run([pg_ctl, "-D", data, "-o", server_opts, "-l", log, "-w", "-t", "60", "start"], "pg_ctl start")
            break
        except RuntimeError as exc:
            with open(log) as fh:
                server_log = fh.read()
            if "Address already in use" in server_log and attempt < 3:
                continue
            raise RuntimeError(f"{exc}\nserver log:\n{server_log[-3000:]}") from exc
    try:
        yield f"postgresql://hydrolite@127.0.0.1:{port}/postgres"
    finally:
        _run([pg_ctl, "-D", data, "-m", "fast", "-w", "stop"], "pg_ctl stop")
        shutil.rmtree(root)
