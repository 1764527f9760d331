"""A driver's private scratch directories, and removing those of drivers that are gone.

With a checkpoint on a Hadoop file system the driver keeps local working files: the SQLite
working copy of each query's store (`state.py`) and the mirrors of its feeds
(`feed_mirror.py`). A runner that stops removes them; one that is killed cannot. Each
directory is named after its kind, host and process id, so the next runner of that kind on
the same host removes those whose process no longer runs (a directory of another host, or
of a live process, is left alone: a reused pid only keeps garbage one run longer).

    >>> import os
    >>> d = scratch_dir("doctest")
    >>> os.path.basename(d).startswith(f"hydrolite-doctest-{_host()}-{os.getpid()}-")
    True
    >>> os.rmdir(d)
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile

from .forkserver_client import alive as _alive  # (stdlib only: the fork server's client runs it alone)

__all__ = ["scratch_dir", "sweep"]


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def sweep(kind: str, root: str | None = None) -> list[str]:
    """Remove the `kind` scratch directories this host's dead processes left under `root`
    (the temporary directory by default); returns their names."""
    root = root or tempfile.gettempdir()
    prefix = f"hydrolite-{kind}-{_host()}-"
    removed = []
    for name in sorted(os.listdir(root)):
        pid = name[len(prefix) :].split("-", 1)[0] if name.startswith(prefix) else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            removed.append(name)
    return removed


def scratch_dir(kind: str) -> str:
    """A new private directory for `kind`, after sweeping those dead processes left."""
    sweep(kind)
    return tempfile.mkdtemp(prefix=f"hydrolite-{kind}-{_host()}-{os.getpid()}-")
