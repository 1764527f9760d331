"""File inputs whose files move: what hydrolite checks around Spark's streaming file source.

Spark's file source lists the input directory on every trigger, logs each new file with its
modification time (`<query>/spark/sources/<i>/<n>`), and reads the files later, when the
micro-batch runs. It trusts that a file it listed is complete and stays as it was. Files
that are still being written, that change or vanish, or that Spark never reads, were
silently mishandled; this module makes each case either work or fail with a clear error.

**Publishing contract.** A producer writes a file under a temporary name and renames it
into the directory once it is complete (a rename within one file system is atomic). Names
that are never read:

* hidden names, Spark's own rule: starting with `_` or `.` (except `_metadata*` /
  `_common_metadata*` and `_x=y` partition directories), or ending with `._COPYING_`;
* `*.tmp` and `*.inprogress`: hydrolite adds a `pathGlobFilter` that excludes them (a
  `pathGlobFilter` given by the user replaces it: then the user's glob decides).

**Checks** (`FileWatch`, one per run):

* before any query starts, every input directory must exist: a missing (misspelt) one is an
  error naming the port, the path and the fix — Spark would otherwise create nothing, list
  nothing and report 0 rows. `?waitForDirectory=true` (or a number of seconds) waits for it;
* at the start of each micro-batch, every file of the batch must still be there with the
  modification time Spark listed; at its end (before Spark commits it) no file may have
  changed. A file that changed was read, or will be, without what was written after the
  listing; a file that vanished would be skipped without a word (Spark drops a missing
  path when it rebuilds a replayed batch's file list). Both fail the batch, which is not
  committed; the error says how to go on: restore the file, or restart once with
  `?acceptChangedFiles=true` (the replay reads the whole file) / `?ignoreMissingFiles=true`
  (the batch goes on without the file), which turn these errors into warnings;
* a file of the previous, committed batch that changed since is reported on stderr (its
  new rows are lost for this run: nothing can be replayed once committed);
* names Spark does not read are reported on stderr once per file per run, when a batch
  starts (at most every `SCAN_EVERY_SECONDS`) and before the run starts. A temporary name
  modified within the last `IN_PROGRESS_SECONDS` is taken to be a file being written and
  is not reported (yet). Files written by Spark / Hadoop / the OS themselves
  (`_spark_metadata`, `_SUCCESS`, `_temporary`, `.*.crc`, `.DS_Store`) are never reported.

`waitForDirectory` and `acceptChangedFiles` are hydrolite's (never passed to Spark);
`ignoreMissingFiles` is also Spark's own option for the same thing, and is passed on.
"""

from __future__ import annotations

import difflib
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from .ckfs import java_class
from .errors import SparkRunError
from .remap import local_path

HYDROLITE_OPTIONS = ("waitForDirectory", "acceptChangedFiles")  # consumed here, not Spark options
TEMP_SUFFIXES = (".tmp", ".inprogress")  # excluded by our glob; Spark itself skips `._COPYING_`
NOT_REPORTED = ("_spark_metadata", "_SUCCESS", "_temporary", ".DS_Store")  # written by Spark, Hadoop, the OS
IN_PROGRESS_SECONDS = 60.0  # a temporary name modified more recently is a file being written
SCAN_EVERY_SECONDS = 10.0  # directory scans for skipped names, at most this often per input
WAIT_POLL_SECONDS = 1.0


class FileBinding(Protocol):
    """What this module needs of a `ports.FileInput` (not imported: ports imports this module)."""

    path: str
    fmt: str
    options: dict[str, str]


# ------------------------------------------------------------------ names and options
def spark_hidden(name: str) -> bool:
    """Whether Spark's file listing skips this file or directory name (its
    `shouldFilterOutPathName`): hidden `_x` / `.x` names and `x._COPYING_`, but not
    `_metadata*`, `_common_metadata*` (Parquet summaries) or `_k=v` partition directories."""
    excluded = (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")
    return excluded and not name.startswith(("_common_metadata", "_metadata"))


def temp_name(name: str) -> bool:
    """A name of a file being written: `*.tmp`, `*.inprogress`, `*._COPYING_`."""
    return name.endswith((*TEMP_SUFFIXES, "._COPYING_"))


def not_ending_with_glob(suffixes: tuple[str, ...]) -> str:
    """A Hadoop glob (`pathGlobFilter`) matching exactly the names that end with none of `suffixes`.

    Globs cannot negate, so the complement is spelled out over the reversed suffixes as a
    trie: a name is accepted iff, for the longest trie node `t` it ends with, `t` is no whole
    suffix and the name is `t` itself or continues (leftwards) with a character that leaves
    the trie — alternatives `t` and `*[^c1c2..]t` for every node `t` that is not a whole suffix.
    """
    trie: dict[str, Any] = {}
    for s in suffixes:
        node = trie
        for ch in reversed(s):
            node = node.setdefault(ch, {})
        node[""] = {}  # end of a whole suffix

    def esc(text: str) -> str:
        return "".join("\\" + c if c in "\\[]{}*?,^!-" else c for c in text)

    alts: list[str] = []

    def walk(node: dict[str, Any], tail: str) -> None:
        if "" in node:  # a whole suffix: every name ending with it is excluded
            return
        kids = sorted(node)
        alts.append(f"*[^{esc(''.join(kids))}]{esc(tail)}")
        if tail:
            alts.append(esc(tail))
        for c in kids:
            walk(node[c], c + tail)

    walk(trie, "")
    return "{" + ",".join(alts) + "}"


NOT_TEMP_GLOB = not_ending_with_glob(TEMP_SUFFIXES)


def _option(options: Mapping[str, str], name: str) -> str | None:
    """An option's value, its name matched case-insensitively (as Spark does)."""
    return next((v for k, v in options.items() if k.lower() == name.lower()), None)


def _flag(options: Mapping[str, str], name: str) -> bool:
    return (_option(options, name) or "").strip().lower() == "true"


def spark_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options to pass to Spark's file source: without hydrolite's own, with the glob
    that skips temporary names (unless the user gave a `pathGlobFilter`)."""
    own = {o.lower() for o in HYDROLITE_OPTIONS}
    out = {k: v for k, v in options.items() if k.lower() not in own}
    if _option(out, "pathGlobFilter") is None:
        out["pathGlobFilter"] = NOT_TEMP_GLOB
    return out


def _same_mtime(listed_ms: int, now_ms: int) -> bool:
    """Whether a file still has the modification time Spark listed: equal, or equal to the
    second when the listing's clock only had seconds (some file systems, older JDKs)."""
    return listed_ms == now_ms or (listed_ms % 1000 == 0 and listed_ms // 1000 == now_ms // 1000)


def _fmt_ms(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"


# ------------------------------------------------------------------ file systems
@dataclass(frozen=True)
class _Stat:
    size: int
    mtime_ms: int  # as Spark's listing has it (Hadoop: milliseconds, truncated)
    is_dir: bool


class _Fs:
    """Stat and list paths: `os` for local files, Hadoop's FileSystem (through the JVM) else.

    Directory paths without a scheme are resolved as Spark resolves them (against
    `fs.defaultFS`, local in local mode); the URIs in Spark's file source log are qualified.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def _hadoop(self, path: str) -> tuple[Any, Any]:
        sc: Any = self.spark.sparkContext
        jpath = java_class(sc._jvm, "org.apache.hadoop.fs.Path")(path)
        fs = jpath.getFileSystem(sc._jsc.hadoopConfiguration())
        return fs, fs.makeQualified(jpath)

    def qualify(self, path: str) -> str:
        """The directory as a URI (`file:///...`, `hdfs://...`)."""
        if urlsplit(path).scheme in ("", "file") and self._default_local():
            return "file://" + os.path.abspath(local_path(path))
        _fs, q = self._hadoop(path)
        return str(q.toUri().toString())

    def _default_local(self) -> bool:
        sc: Any = self.spark.sparkContext
        default = str(sc._jsc.hadoopConfiguration().get("fs.defaultFS") or "file:///")
        return default.startswith("file:")

    def stat(self, uri: str) -> _Stat | None:
        if urlsplit(uri).scheme in ("", "file"):
            try:
                st = os.stat(local_path(uri))
            except FileNotFoundError:
                return None
            return _Stat(st.st_size, st.st_mtime_ns // 1_000_000, os.path.isdir(local_path(uri)))
        fs, q = self._hadoop(uri)
        if not fs.exists(q):
            return None
        js = fs.getFileStatus(q)
        return _Stat(int(js.getLen()), int(js.getModificationTime()), bool(js.isDirectory()))

    def unread_names(self, uri: str) -> tuple[list[tuple[str, _Stat]], list[str]]:
        """The entries of a directory that Spark never reads, hidden or temporary by name, with
        their stats, and (local only) its other subdirectories. Only those entries are
        stat-ed; remotely the names are filtered in the JVM (no round trip per file)."""
        if urlsplit(uri).scheme not in ("", "file"):
            fs, q = self._hadoop(uri)
            sc: Any = self.spark.sparkContext
            glob = java_class(sc._jvm, "org.apache.hadoop.fs.GlobFilter")("{_*,.*,*._COPYING_,*.tmp,*.inprogress}")
            found = [
                (
                    str(s.getPath().getName()),
                    _Stat(int(s.getLen()), int(s.getModificationTime()), bool(s.isDirectory())),
                )
                for s in fs.listStatus(q, glob)
            ]
            return found, []
        names: list[tuple[str, _Stat]] = []
        subdirs: list[str] = []
        try:
            with os.scandir(local_path(uri)) as it:
                for e in it:
                    try:
                        if spark_hidden(e.name) or temp_name(e.name):
                            st = e.stat()
                            names.append((e.name, _Stat(st.st_size, st.st_mtime_ns // 1_000_000, e.is_dir())))
                        elif e.is_dir():
                            subdirs.append(e.name)
                    except FileNotFoundError:  # renamed away meanwhile
                        continue
        except FileNotFoundError:
            pass
        return names, subdirs


# ------------------------------------------------------------------ one run's checks
@dataclass
class _Port:
    """One file input of the run."""

    name: str
    binding: FileBinding
    uri: str | None = None  # qualified directory; None for a glob path (not checked)
    reported: set[str] = field(default_factory=set)  # skipped names already reported this run
    last_scan: float = float("-inf")


@dataclass
class _Batch:
    """The files of one batch of one query, as listed and as seen when the batch started."""

    batch_id: int
    files: dict[str, list[tuple[str, int, _Stat]]]  # port -> (uri, listed mtime, stat at batch start)


def _warn(message: str) -> None:
    print(f"hydrolite: {message}", file=sys.stderr)


class FileWatch:
    """The checks of one run's file inputs (see the module docstring); the runtime calls
    `before_start` before starting any query, and `begin` / `end` around every micro-batch."""

    def __init__(self, spark: SparkSession, inputs: Mapping[str, object]) -> None:
        from .ports import FileInput

        self.fs = _Fs(spark)
        self.ports = {p: _Port(p, b) for p, b in inputs.items() if isinstance(b, FileInput)}
        self._open: dict[str, _Batch] = {}  # query -> its running batch
        self._last: dict[str, _Batch] = {}  # query -> its last finished batch
        self._warned: set[tuple[str, str, str]] = set()  # (kind, port, file): each warning once per run
        self._scanning = threading.Lock()  # queries run their batches in threads of their own

    # ---------------------------------------------------------- before the run
    def before_start(self) -> None:
        """Every input directory exists (or, with `waitForDirectory`, once it does); report
        names Spark will skip."""
        for port in self.ports.values():
            path = port.binding.path
            if any(c in path for c in "*?[{"):  # a glob: Spark matches it on every listing
                continue
            port.uri = self._require_directory(port)
            self._scan(port, force=True)

    def _require_directory(self, port: _Port) -> str:
        path = port.binding.path
        uri = self.fs.qualify(path)
        found = self.fs.stat(uri)
        if found is not None and found.is_dir:
            return uri
        if found is not None:
            raise SparkRunError(
                f"input {port.name!r}: {path} is a file, not a directory\n  fix: bind the port to the directory the files arrive in"
            )
        wait = (_option(port.binding.options, "waitForDirectory") or "false").strip().lower()
        if wait in ("", "false", "0"):
            raise SparkRunError(
                f"input {port.name!r}: directory {path} does not exist\n  fix: {self._did_you_mean(uri)}create it, or "
                f"add ?waitForDirectory=true to the input to wait for it (e.g. {port.name}={port.binding.fmt}:{path}?waitForDirectory=true)"
            )
        try:
            limit = float("inf") if wait == "true" else float(wait)
        except ValueError:
            raise SparkRunError(
                f"input {port.name!r}: waitForDirectory={wait!r}: expected true, false or a number of seconds"
            ) from None
        _warn(
            f"input {port.name!r}: waiting for directory {path} to appear ({'no time limit' if limit == float('inf') else f'up to {limit:g} s'}; waitForDirectory)"
        )
        deadline = time.monotonic() + limit
        while True:
            found = self.fs.stat(uri)
            if found is not None and found.is_dir:
                _warn(f"input {port.name!r}: directory {path} is there")
                return uri
            if time.monotonic() >= deadline:
                raise SparkRunError(
                    f"input {port.name!r}: directory {path} did not appear within {limit:g} s (waitForDirectory)"
                )
            time.sleep(min(WAIT_POLL_SECONDS, max(deadline - time.monotonic(), 0.0)))

    @staticmethod
    def _did_you_mean(uri: str) -> str:
        """A close existing sibling of a missing local directory, as a hint."""
        if urlsplit(uri).scheme not in ("", "file"):
            return ""
        path = local_path(uri).rstrip("/")
        parent, name = os.path.split(path)
        try:
            siblings = [e for e in os.listdir(parent) if os.path.isdir(os.path.join(parent, e))]
        except OSError:
            return ""
        close = difflib.get_close_matches(name, siblings, n=1)
        return f"did you mean {os.path.join(parent, close[0])}? " if close else ""

    # ---------------------------------------------------------- names Spark skips
    def _scan(self, port: _Port, force: bool = False) -> None:
        """Report, once per file per run, the names Spark skips in the port's directory (and,
        locally, its non-hidden subdirectories, which Spark also reads)."""
        now = time.monotonic()
        if port.uri is None or (not force and now - port.last_scan < SCAN_EVERY_SECONDS):
            return
        with self._scanning:  # two queries reading one port report a name once
            port.last_scan = now
            self._scan_names(port)

    def _scan_names(self, port: _Port) -> None:
        assert port.uri is not None
        glob_ours = _option(port.binding.options, "pathGlobFilter") is None
        wall_ms = int(time.time() * 1000)
        todo = [("", port.uri)]
        while todo:
            rel, uri = todo.pop()
            names, subdirs = self.fs.unread_names(uri)
            todo += [(f"{rel}{d}/", f"{uri.rstrip('/')}/{d}") for d in subdirs]
            for name, st in sorted(names):
                shown = rel + name + ("/" if st.is_dir else "")
                if name.endswith("._COPYING_") or (glob_ours and temp_name(name) and not st.is_dir):
                    kind, why = (
                        "temporary file",
                        "names ending with .tmp, .inprogress or ._COPYING_ are files still being written",
                    )
                elif spark_hidden(name):
                    kind = "hidden directory" if st.is_dir else "hidden file"
                    why = "names starting with _ or . are not read" + (", nor anything under them" if st.is_dir else "")
                else:  # a temporary name under the user's own pathGlobFilter: read if it matches
                    continue
                if name in NOT_REPORTED or (name.startswith(".") and name.endswith(".crc")) or shown in port.reported:
                    continue
                if wall_ms - st.mtime_ms < IN_PROGRESS_SECONDS * 1000:  # being written: look again later
                    continue
                port.reported.add(shown)
                _warn(f"input {port.name!r}: skipping {kind} {shown} ({why}; rename it to read it)")

    # ---------------------------------------------------------- around each micro-batch
    def begin(self, query: str, batch_id: int, listed: Mapping[str, list[tuple[str, int]]]) -> None:
        """Check the files Spark listed for this batch (`listed`: port -> (URI, listed mtime ms))
        before any of them is read; report changes to the previous batch's files."""
        files: dict[str, list[tuple[str, int, _Stat]]] = {}
        for name, entries in listed.items():
            port = self.ports.get(name)
            if port is None:
                continue
            seen: list[tuple[str, int, _Stat]] = []
            for uri, listed_ms in entries:
                st = self.fs.stat(uri)
                if st is None:
                    self._missing(port, query, batch_id, uri, listed_ms)
                    continue
                if not _same_mtime(listed_ms, st.mtime_ms):
                    self._changed(
                        port,
                        query,
                        batch_id,
                        uri,
                        f"listed with modification time {_fmt_ms(listed_ms)}, now {_fmt_ms(st.mtime_ms)}",
                        listed_ms,
                    )
                seen.append((uri, listed_ms, st))
            files[name] = seen
            self._scan(port)
        self._committed_changes(query)
        self._open[query] = _Batch(batch_id, files)

    def end(self, query: str, batch_id: int) -> None:
        """Before Spark commits the batch: none of its files changed while it was read."""
        batch = self._open.pop(query, None)
        if batch is None or batch.batch_id != batch_id:
            return
        for name, seen in batch.files.items():
            for uri, listed_ms, before in seen:
                now = self.fs.stat(uri)
                if now is None:  # deleted once read (or Spark already failed on it): nothing lost here
                    continue
                if not _same_mtime(listed_ms, now.mtime_ms) or now.size != before.size:
                    what = f"{before.size} bytes when the batch started, {now.size} bytes modified at {_fmt_ms(now.mtime_ms)} when it ended"
                    self._changed(self.ports[name], query, batch_id, uri, what, listed_ms)
        self._last[query] = batch

    def _committed_changes(self, query: str) -> None:
        """Report files of the query's previous batch (committed: Spark runs a batch only after
        committing the one before) that changed since it ended: their new rows are lost."""
        last = self._last.pop(query, None)
        if last is None:
            return
        for name, seen in last.files.items():
            for uri, _listed_ms, before in seen:
                now = self.fs.stat(uri)  # gone: moved away after commit (e.g. cleanSource), not a loss
                if (
                    now is not None
                    and (now.mtime_ms != before.mtime_ms or now.size != before.size)
                    and ("committed", name, uri) not in self._warned
                ):
                    self._warned.add(("committed", name, uri))
                    _warn(
                        f"input {name!r}: file {local_path(uri)} changed after batch {last.batch_id} of query {query!r} read it and committed: "
                        f"what was written since is not read by this run\n  fix: {_ATOMIC}"
                    )

    def _accepted(self, port: _Port, uri: str, option: str, warning: str) -> bool:
        """Whether the user accepted this case with `option` on the input (then it is said
        once per file and run, and the batch goes on)."""
        if not _flag(port.binding.options, option):
            return False
        if (option, port.name, uri) not in self._warned:
            self._warned.add((option, port.name, uri))
            _warn(warning)
        return True

    def _changed(self, port: _Port, query: str, batch_id: int, uri: str, what: str, listed_ms: int) -> None:
        path = local_path(uri)
        head = f"input {port.name!r}: file {path} changed after Spark listed it for batch {batch_id} of query {query!r} ({what})"
        if self._accepted(port, uri, "acceptChangedFiles", f"{head}; read as it is now (acceptChangedFiles=true)"):
            return
        raise SparkRunError(
            f"{head}: rows written after the listing would be lost\n  fix: {_ATOMIC}\n"
            f"  to go on: once the file is complete, run again with ?acceptChangedFiles=true on this input: batch {batch_id} "
            f"was not committed, so it is replayed and reads the whole file (then drop the option; or set the file's "
            f"modification time back: touch -m -d @{listed_ms / 1000:.3f} {path})"
        )

    def _missing(self, port: _Port, query: str, batch_id: int, uri: str, listed_ms: int) -> None:
        path = local_path(uri)
        head = f"input {port.name!r}: file {path} of batch {batch_id} of query {query!r} is gone"
        if self._accepted(
            port, uri, "ignoreMissingFiles", f"{head}; the batch goes on without its rows (ignoreMissingFiles=true)"
        ):
            return
        raise SparkRunError(
            f"{head}: Spark listed it for this batch, which was not committed, and would replay the batch without it "
            f"(its rows silently lost)\n  fix: put the file back unchanged, with its modification time "
            f"(cp -p, or touch -m -d @{listed_ms / 1000:.3f} {path}), and run again; or, to go on without its rows, "
            f"run again with ?ignoreMissingFiles=true on this input"
        )


_ATOMIC = (
    "publish files atomically: write each file under a hidden or temporary name (.name, _name, name.tmp) "
    "and rename it into the directory once complete"
)
