"""One writer per checkpoint: an exclusive lock taken before anything is written.

Two runners on one checkpoint both write offsets, state versions and outputs; Spark only
notices later (``CONCURRENT_STREAM_LOG_UPDATE``), after both have written, and the outputs
are corrupt. So a runner locks ``<checkpoint>/LOCK`` first:

* the lock is an ``flock`` on the open file, held for the runner's life: the kernel drops
  it when the process dies, even on ``kill -9``, so a stale lock never blocks a restart;
* the file holds who took it (host, pid, start time, command line), so a refused runner
  names the holder; a lock left by a dead process is taken over and said so.

On file systems without ``flock`` (some network mounts) the lock raises rather than
pretending.

A checkpoint on a Hadoop file system (``hdfs://``, ``s3a://`` ...) has no ``flock``: there the
lock is a *lease* its holder renews, taken over once nobody renews it (``lease.py``).

Example::

    >>> import tempfile
    >>> from hydrolite.planner.spark.lock import CheckpointLock, CheckpointLockedError
    >>> d = tempfile.mkdtemp()
    >>> first = CheckpointLock(d)
    >>> try:
    ...     CheckpointLock(d)
    ... except CheckpointLockedError as e:
    ...     print("refused:", "in use by another runner" in str(e))
    refused: True
    >>> first.release()
    >>> CheckpointLock(d).release()
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import re
import socket
import sys
import uuid
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from ...errors import HydroliteError
from . import ckfs
from .forkserver_client import alive as _alive  # (stdlib only: the fork server's client runs it alone)
from .lease import Lease, describe, parse

LOCK_FILE = "LOCK"


class CheckpointLockedError(HydroliteError, RuntimeError):
    """Another runner holds the checkpoint."""

    code: ClassVar[str] = "HL-CHECKPOINT-LOCKED"


class CheckpointPathError(HydroliteError, ValueError):
    """A checkpoint named by a URI hydrolite cannot keep its files under."""

    code: ClassVar[str] = "HL-CHECKPOINT-PATH"


def checkpoint_dir(spec: str) -> str:
    """The checkpoint a checkpoint argument names: an absolute local directory for a path or a
    `file:` URI; any other URI (`hdfs://`, `s3a://`, `viewfs://` ...) as given, without a
    trailing slash, for Hadoop's file system API (`ckfs`) and Spark.

    >>> checkpoint_dir("file:///tmp/ck%201"), checkpoint_dir("s3a://bucket/runs/ck/")
    ('/tmp/ck 1', 's3a://bucket/runs/ck')
    """
    parts = urlsplit(spec)
    if parts.scheme == "file":
        return os.path.abspath(unquote(parts.path))
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", spec):
        if not parts.path.strip("/"):
            raise CheckpointPathError(
                f"checkpoint {spec}: names the root of a file system, where every run's files would mix\n"
                f"  fix: name a directory under it, e.g. {spec.rstrip('/')}/hydrolite/<program>"
            )
        return spec.rstrip("/")
    return os.path.abspath(spec)


class CheckpointLock:
    """An exclusive, crash-safe lock on a checkpoint directory (see the module docstring)."""

    def __init__(self, checkpoint: str) -> None:
        self.checkpoint = checkpoint_dir(checkpoint)
        self.path = ckfs.join(self.checkpoint, LOCK_FILE)
        self.previous: dict[str, Any] | None = None  # a stale holder taken over, if any
        self.fd: int | None = None
        self.lease: Lease | None = None  # on a Hadoop file system (no flock there): lease.py
        info = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:300],
            "token": uuid.uuid4().hex,
        }
        self.info = info
        if not ckfs.is_local(self.checkpoint):
            lease = Lease(self.path, info)
            self.previous = lease.take(
                lambda holder, why: CheckpointLockedError(self._held_message(holder, why)), _alive
            )
            self.lease = lease
            return
        os.makedirs(self.checkpoint, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise CheckpointLockedError(self._held_message(holder)) from None
        except OSError as exc:
            os.close(fd)
            raise CheckpointLockedError(
                f"checkpoint {self.checkpoint}: cannot lock {self.path} ({exc}); this file system does not support "
                f"flock, so hydrolite cannot guarantee a single writer\n  fix: put the checkpoint on a local disk"
            ) from exc
        self.fd = fd
        self.previous = _read(fd) or None
        if self.previous is not None and self.previous.get("released") is not True:
            _say_taken_over(self.previous)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        os.fsync(fd)

    @property
    def lost(self) -> str | None:
        """Why this runner no longer holds the checkpoint (a lease taken over or not renewable)."""
        return self.lease.lost if self.lease is not None else None

    def _held_message(self, holder: dict[str, Any], why: str = "") -> str:
        who = (describe(holder) if holder else "holder unknown") + why
        here = holder.get("host") == socket.gethostname()
        state = ""
        if here and isinstance(holder.get("pid"), int) and not _alive(holder["pid"]):
            state = " (that pid is not running here: its lock may be held by a child process that outlived it)"
        return (
            f"checkpoint {self.checkpoint} is in use by another runner: {who}{state}\n"
            f"  two runners on one checkpoint would both write offsets, state and outputs\n"
            f"  fix: stop that run first (Ctrl-C or kill; a killed run releases the lock at once), "
            f"or use another --checkpoint"
        )

    def release(self) -> None:
        """Release the lock (locally the file is marked released, so the next taker says
        nothing; a lease is deleted, if it is still ours)."""
        if self.lease is not None:
            lease, self.lease = self.lease, None
            lease.release()
            return
        if self.fd is None:
            return
        try:
            data = dict(self.info, released=True)
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, json.dumps(data).encode(), 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = None

    def __del__(self) -> None:  # a runner dropped without stop(): the lock goes with it
        if getattr(self, "fd", None) is not None:
            self.release()  # (a lease is not released here: that needs the JVM, maybe gone by now)


def _read(fd: int) -> dict[str, Any]:
    try:
        return parse(os.pread(fd, 65536, 0))
    except OSError:
        return {}


def _say_taken_over(holder: dict[str, Any]) -> None:
    print(
        f"hydrolite: taking over the lock of a runner that stopped without releasing it ({describe(holder)})",
        file=sys.stderr,
    )
