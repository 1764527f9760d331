"""The lock of a checkpoint on a Hadoop file system: a lease that its holder renews.

Hadoop file systems have no `flock`, and a driver that dies on one machine is often
restarted on another (YARN, Kubernetes), which cannot ask whether the old process is
alive. So the lock there is a file, `<checkpoint>/LOCK`, that says who holds it and how
many times they renewed it:

* taking it: create the file only if absent (the first writer wins);
* holding it: a daemon thread rewrites it every `RENEW_SECONDS` with the count + 1, after
  checking that it is still ours; if it is not (another runner took it over) or cannot be
  renewed for `STALE_SECONDS / 2`, the lease is `lost` and the runner stops with that reason
  before its next batch;
* a lease found on the file system: one of a dead process of this host is taken over at
  once; one of a live process of this host is refused; one of another host is watched for
  `STALE_SECONDS` (no clocks compared: only whether the file changes) and taken over if
  nobody renewed it, refused if somebody did;
* releasing it: stop renewing, delete the file if it is still ours.

A renewal reads, checks and rewrites the file, which is not one atomic step: a renewal
delayed past `STALE_SECONDS` can overwrite the lease a new taker just made. The taker's own
next renewal then finds a foreign lease and stops its run, so the overlap lasts at most one
renewal interval and ends with no runner, never with two.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from . import ckfs

RENEW_SECONDS = 15.0
STALE_SECONDS = 60.0


class Lease:
    """One runner's lease on `path` (`LOCK` under a checkpoint URI)."""

    def __init__(self, path: str, info: dict[str, Any]) -> None:
        self.path = path
        self.info = dict(info, renewals=0)
        self.lost: str | None = None  # why the lease is no longer ours, once it is not
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(
        self, refuse: Callable[[dict[str, Any], str], Exception], alive: Callable[[int], bool]
    ) -> dict[str, Any] | None:
        """Take the lease; the holder taken over, if any. `refuse(holder, why)` is raised when
        another runner holds it; `alive(pid)` says whether a pid of this host runs."""
        if ckfs.write_atomic(self.path, json.dumps(self.info), overwrite=False):
            self._start()
            return None
        raw = ckfs.read_bytes(self.path)
        holder = parse(raw)
        pid = holder.get("pid")
        if holder.get("host") == socket.gethostname() and isinstance(pid, int):
            if alive(pid):
                raise refuse(holder, "")
        elif raw is not None and not self._unrenewed(raw, holder):
            raise refuse(holder, f" (it renewed its lease within the last {STALE_SECONDS:.0f} s)")
        print(
            f"hydrolite: taking over the lease of a runner that stopped without releasing it ({describe(holder)})",
            file=sys.stderr,
        )
        ckfs.remove(self.path)
        if not ckfs.write_atomic(self.path, json.dumps(self.info), overwrite=False):  # another taker was faster
            raise refuse(parse(ckfs.read_bytes(self.path)), "")
        self._start()
        return holder

    def _unrenewed(self, raw: bytes, holder: dict[str, Any]) -> bool:
        """Watch a lease of another host for `STALE_SECONDS`: True when nobody renewed it."""
        print(
            f"hydrolite: {self.path} is held by {describe(holder)}; watching it for up to {STALE_SECONDS:.0f} s "
            "to see whether that runner still renews it",
            file=sys.stderr,
        )
        deadline = time.monotonic() + STALE_SECONDS
        while time.monotonic() < deadline:
            time.sleep(min(2.0, RENEW_SECONDS / 3))
            if ckfs.read_bytes(self.path) != raw:
                return False
        return True

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._renew_loop, name="hydrolite-lease", daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        failing_since: float | None = None
        while not self._stop.wait(RENEW_SECONDS):
            try:
                if not self.renew():
                    return
                failing_since = None
            except Exception as exc:  # kept: the reason the lease is lost, if the failures last
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since >= STALE_SECONDS / 2:
                    self.lost = f"its lease {self.path} could not be renewed for {STALE_SECONDS / 2:.0f} s: {exc}"
                    return

    def renew(self) -> bool:
        """Rewrite the lease with one more renewal; False (and `lost` set) when it is not ours."""
        holder = parse(ckfs.read_bytes(self.path))
        if holder.get("token") != self.info["token"]:
            self.lost = f"another runner took its lease {self.path} over ({describe(holder) if holder else 'deleted'})"
            return False
        self.info["renewals"] += 1
        ckfs.write_atomic(self.path, json.dumps(self.info))
        return True

    def release(self) -> None:
        """Stop renewing; delete the lease if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.lost is None and parse(ckfs.read_bytes(self.path)).get("token") == self.info["token"]:
            ckfs.remove(self.path)


def parse(raw: bytes | None) -> dict[str, Any]:
    """A lock file's holder; {} for an empty or unreadable one (a crash while writing it)."""
    try:
        data = json.loads((raw or b"").decode() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def describe(holder: dict[str, Any]) -> str:
    return (
        f"host {holder.get('host', '?')}, pid {holder.get('pid', '?')}, started {holder.get('started', '?')}, "
        f"command {holder.get('command', '?')!r}"
    )
