"""hydrolite's own checkpoint files, on a local directory or on any Hadoop file system.

Spark keeps its part of a checkpoint (offsets, commits, the state store) through Hadoop's
file system API, so it may live on HDFS, S3 (`s3a://`), ABFS, `viewfs://` ... hydrolite's own
files under the same checkpoint (the plan, the bindings, sink identities, Spark's offset log
as hydrolite reads it) go through this module, so that reading and writing them does not
assume a local directory:

* a local path (no scheme, or `file:`) uses the OS directly: no JVM round trip on a batch;
* any other URI goes through Hadoop over Py4J (it needs the active SparkSession, which every
  caller has), writing a file whole or not at all. On a file system whose output streams can
  be aborted (the object stores: S3A) a file is one stream written in place, which becomes
  visible whole at `close()` (one PUT) and replaces the old object in one step. Elsewhere it
  is written as Spark writes its offset log, through Spark's `CheckpointFileManager`: a
  temporary file renamed into place, atomic where the file system's rename is (HDFS).
  Renaming over an existing file deletes it first on the others (Hadoop's local file system
  under `viewfs://` in the tests; S3A, where a rename is a copy, would have a window too), so
  a concurrent reader there may briefly find no file: the reason object stores write in place
  (a lease renewed on S3 was once read as missing in CI).

Example::

    >>> import os, tempfile
    >>> from hydrolite.planner.spark import ckfs
    >>> d = os.path.join(tempfile.mkdtemp(), "ck")
    >>> ckfs.write_atomic(ckfs.join(d, "q", "a.json"), b"{}")
    True
    >>> ckfs.write_atomic(ckfs.join(d, "q", "a.json"), b"[]", overwrite=False)  # kept: first writer wins
    False
    >>> ckfs.read_bytes(ckfs.join(d, "q", "a.json")), ckfs.list_names(ckfs.join(d, "q"))
    (b'{}', ['a.json'])
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlsplit

from py4j.protocol import Py4JJavaError

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # as lock.checkpoint_dir: `a:b` is a file name
# names Spark's file managers leave beside a file: checksums and in-flight temporaries
_HADOOP_SIDE = re.compile(r"^\..*\.crc$|^\..*\.tmp$|\.tmp$")


def is_local(path: str) -> bool:
    """Whether `path` is opened with the OS: a plain path or a `file:` URI.

    >>> is_local("/tmp/ck"), is_local("file:///tmp/ck"), is_local("hdfs://nn/ck"), is_local("odd:name")
    (True, True, False, True)
    """
    return path.startswith("file:") or not _SCHEME.match(path)


def os_path(path: str) -> str:
    """A local path or `file:` URI as an OS path (`file:///a%20b` -> `/a b`)."""
    return unquote(urlsplit(path).path) if path.startswith("file:") else path


def join(base: str, *parts: str) -> str:
    """`base/part/...` for a path or a URI (a URI keeps its scheme and authority).

    >>> join("s3a://bucket/ck", "q1", "plan.json")
    's3a://bucket/ck/q1/plan.json'
    """
    return "/".join([base.rstrip("/"), *parts]) if not is_local(base) else os.path.join(base, *parts)


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    if is_local(path):
        try:
            with open(os_path(path), "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return None
    for attempt in range(_READ_ATTEMPTS):
        try:
            h, stream = _open_remote(path)
            if stream is None:
                return None
            try:
                return bytes(java_class(h.jvm, "org.apache.commons.io.IOUtils").toByteArray(stream))
            finally:
                stream.close()
        except Py4JJavaError as exc:
            why = exc.java_exception.getClass().getSimpleName()
            if why == "FileNotFoundException":
                return None  # deleted between the existence check and the read
            if why not in _REPLACED or attempt == _READ_ATTEMPTS - 1:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


# A file replaced while it was read: read the new one. S3A checks the object's ETag on each
# GET of one open stream; Hadoop's checksummed local file system (under viewfs) renames the
# file and its checksum one after the other. After a few attempts the error stands.
_REPLACED = frozenset({"RemoteFileChangedException", "ChecksumException"})
_READ_ATTEMPTS = 4


def _open_remote(path: str) -> tuple[_Hadoop, Any]:
    """The file system of a URI and an input stream of the file (None when it does not exist)."""
    h = _hadoop(path)
    p = h.path(path)
    return h, (h.manager.open(p) if h.manager.exists(p) else None)


def read_text(path: str) -> str | None:
    """The file as UTF-8 text, or None when it does not exist."""
    data = read_bytes(path)
    return None if data is None else data.decode("utf-8")


def write_atomic(path: str, data: bytes | str, overwrite: bool = True) -> bool:
    """Write the whole file or nothing, creating its directory. With `overwrite=False` an
    existing file is kept (the first writer wins) and the answer is False."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if is_local(path):
        local = os_path(path)
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        tmp = f"{local}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            if overwrite:
                os.replace(tmp, local)
                return True
            try:
                os.link(tmp, local)  # fails when the file exists: the other writer's is kept
            except FileExistsError:
                return False
            return True
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    h = _hadoop(path)
    p = h.path(path)
    h.mkdirs(p.getParent())
    if overwrite:
        return _create(h, p, raw, overwrite)
    # Writers racing in this process take turns: on a file system that keeps checksums beside
    # the data (a local disk reached through Hadoop, e.g. under viewfs) the loser's rename could
    # replace the winner's .crc before failing on the data file, and the winner's file would
    # then fail its checksum on read (seen once in CI). Other processes still race on the
    # rename, which HDFS and the object stores' committers make atomic.
    with _EXCLUSIVE:
        if h.manager.exists(p):
            return False
        return _create(h, p, raw, overwrite)


_EXCLUSIVE = threading.Lock()


def _create(h: _Hadoop, p: Any, raw: bytes, overwrite: bool) -> bool:
    """Write `raw` to `p` whole (one PUT, or a temporary file renamed); False when `overwrite`
    is off and another writer's file appeared first."""
    out = None
    try:
        out = h.create(p, overwrite)
        out.write(bytearray(raw))
        out.close()  # the PUT (or the rename) happens here
    except Py4JJavaError as exc:
        if out is not None:
            out.cancel()
        if not overwrite and exc.java_exception.getClass().getSimpleName() == "FileAlreadyExistsException":
            return False  # another writer made it between our check and our rename
        raise
    return True


def exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(os_path(path))
    h = _hadoop(path)
    return bool(h.manager.exists(h.path(path)))


def is_dir(path: str) -> bool:
    if is_local(path):
        return os.path.isdir(os_path(path))
    h = _hadoop(path)
    p = h.path(path)
    return bool(h.manager.exists(p) and h.fs.getFileStatus(p).isDirectory())


def list_names(path: str) -> list[str]:
    """The names in a directory, sorted; [] when it does not exist. Remotely, the checksum
    and temporary files Hadoop keeps beside a file are left out."""
    if is_local(path):
        try:
            return sorted(os.listdir(os_path(path)))
        except (FileNotFoundError, NotADirectoryError):
            return []
    h = _hadoop(path)
    p = h.path(path)
    if not h.manager.exists(p):
        return []
    names = (str(s.getPath().getName()) for s in h.manager.list(p))
    return sorted(n for n in names if not _HADOOP_SIDE.search(n))


def makedirs(path: str) -> None:
    if is_local(path):
        os.makedirs(os_path(path), exist_ok=True)
    else:
        h = _hadoop(path)
        h.mkdirs(h.path(path))


def remove(path: str) -> None:
    """Delete a file (or, remotely, a directory tree); a missing one is fine."""
    if is_local(path):
        try:
            os.remove(os_path(path))
        except FileNotFoundError:
            pass
    else:
        h = _hadoop(path)
        h.manager.delete(h.path(path))


class _Hadoop:
    """Spark's checkpoint file manager for one file system (scheme + authority)."""

    def __init__(self, jvm: Any, conf: Any, root: str) -> None:
        self.jvm = jvm
        self._path = java_class(jvm, "org.apache.hadoop.fs.Path")
        jroot = self._path(root)
        self.fs = jroot.getFileSystem(conf)
        self.manager = _manager_class(jvm).create(jroot, conf)
        self.in_place = _abortable(self.fs, jroot)

    def create(self, p: Any, overwrite: bool) -> Any:
        """A stream whose bytes appear at `p` whole at `close()`, and nothing of them after
        `cancel()`: written in place where streams can be aborted, else renamed into place."""
        if self.in_place:
            return _InPlace(self.fs.create(p, overwrite))
        return self.manager.createAtomic(p, overwrite)

    def path(self, path: str) -> Any:
        return self._path(path)

    def mkdirs(self, p: Any) -> None:
        """Create a directory and its parents unless it exists (an existing mount point of a
        `viewfs://` table is read-only: asking to create it again fails)."""
        if not self.manager.exists(p):
            self.manager.mkdirs(p)


ABORTABLE = "fs.capability.outputstream.abortable"  # Hadoop's CommonPathCapabilities.ABORTABLE_STREAM


def _abortable(fs: Any, root: Any) -> bool:
    """Whether `fs` can abort an output stream (then a stream's bytes appear only at its close).
    A file system that cannot answer for its root (`viewfs://`'s mount table has no working
    directory) is taken as one that cannot: its files are renamed into place, as Spark's."""
    try:
        return bool(fs.hasPathCapability(root, ABORTABLE))
    except Py4JJavaError:
        return False


class _InPlace:
    """An object store's output stream with the manager's stream's `cancel()`: `abort()`, so
    that nothing is uploaded."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def write(self, data: bytearray) -> None:
        self._out.write(data)

    def close(self) -> None:
        self._out.close()

    def cancel(self) -> None:
        self._out.abort()


def java_class(jvm: Any, name: str) -> Any:
    """The JVM's class `name` (full name), or a Py4J `JavaPackage` when there is none.

    One Py4J call: `jvm.org.apache.hadoop.fs.Path` makes one per dot, and the JVM looks each
    prefix (`org`, `org.apache`, ...) up as a class on the whole classpath first (3.3 ms
    against 0.6 ms for `Path(x)` on this machine, and the JVM's CPU for every miss)."""
    return getattr(jvm, name)


def _manager_class(jvm: Any) -> Any:
    """Spark's `CheckpointFileManager`."""
    return java_class(jvm, checkpointing_class(jvm, "CheckpointFileManager"))


def checkpointing_class(jvm: Any, simple: str) -> str:
    """The full name of a class of Spark's checkpoint file managers (its package moved in
    Spark 4.1), e.g. `FileContextBasedCheckpointFileManager`."""
    from py4j.java_gateway import JavaClass

    for package in (
        "org.apache.spark.sql.execution.streaming.checkpointing",
        "org.apache.spark.sql.execution.streaming",
    ):
        if isinstance(java_class(jvm, f"{package}.{simple}"), JavaClass):  # else a JavaPackage: not there
            return f"{package}.{simple}"
    raise RuntimeError(f"hydrolite: this Spark has no {simple}; a Hadoop URI checkpoint needs Spark 4")


MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"


def query_manager(spark: Any, path: str) -> str | None:
    """The checkpoint file manager a query checkpointing under `path` starts with, or None
    for Spark's default.

    Spark's default manager goes through Hadoop's `FileContext`, whose rename with overwrite
    is atomic on HDFS. On the local disk it spends ~50 ms on each of the two log files a
    micro-batch writes (offsets, commits), while the `FileSystem`-based manager, whose rename
    is the OS's atomic `rename(2)` there, takes ~15 ms (benchmarks/bench_batch_overhead.py:
    134 vs 34 ms for both files of a batch). So a checkpoint that Spark resolves to the local
    file system uses it; any other file system, or a manager the user configured, keeps
    Spark's choice.
    """
    if not is_local(path) or spark.conf.get(MANAGER_CONF, None) is not None:
        return None
    sc: Any = spark.sparkContext
    jvm = sc._jvm
    fs = java_class(jvm, "org.apache.hadoop.fs.Path")(path).getFileSystem(sc._jsc.hadoopConfiguration())
    if str(fs.getUri().getScheme()) != "file":  # a plain path on a cluster whose default file system is HDFS
        return None
    return checkpointing_class(jvm, "FileSystemBasedCheckpointFileManager")


def _hadoop(path: str) -> _Hadoop:
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    try:
        spark = SparkSession.active()  # this thread's session, else the process's default one
    except PySparkRuntimeError as exc:
        raise RuntimeError(
            f"hydrolite: {path} is on a Hadoop file system, which is reached through Spark: "
            "start a SparkSession (hydrolite.planner.spark.session.spark_session()) before opening it"
        ) from exc
    if getattr(spark, "_jsc", None) is None:
        raise RuntimeError(
            f"hydrolite: {path} is on a Hadoop file system, reached through the driver's JVM, and a Spark "
            "Connect session has none here: give a local checkpoint directory, or run with a classic session"
        )
    parts = urlsplit(path)
    return _cached(spark, f"{parts.scheme}://{parts.netloc}/")


@lru_cache(maxsize=16)
def _cached(spark: Any, root: str) -> _Hadoop:
    sc: Any = spark.sparkContext
    return _Hadoop(sc._jvm, sc._jsc.hadoopConfiguration(), root)


# ------------------------------------------------------------------ added for the control files
# (run_support, verify, upgrade, port_api: hydrolite's small files under a checkpoint)


def absolute(path: str) -> str:
    """A plain path made absolute (`os.path.abspath`); a URI (`file:` too) kept as given.

    A checkpoint is remembered and compared by its absolute path, and a relative one would
    mean another directory after a `cd`; a URI names its file system and is absolute already
    (`os.path.abspath` would make `hdfs://nn/ck` a local `.../hdfs:/nn/ck`).

    >>> absolute("s3a://bucket/ck"), absolute("/tmp/ck/../ck")
    ('s3a://bucket/ck', '/tmp/ck')
    """
    return path if _SCHEME.match(path) or path.startswith("file:") else os.path.abspath(path)


def is_file(path: str) -> bool:
    """Whether `path` is a file (`os.path.isfile` locally; a directory is not one)."""
    if is_local(path):
        return os.path.isfile(os_path(path))
    h = _hadoop(path)
    p = h.path(path)
    return bool(h.manager.exists(p) and h.fs.getFileStatus(p).isFile())


# ------------------------------------------------------------------ added for the remap log (remap.py, offsets.py)
def append(path: str, data: bytes | str) -> None:
    """Append `data` to a local file, creating it (not its directory) when missing.

    The remap log appends one line per micro-batch to a local checkpoint: one write, no
    rename, no fsync (a torn last line is tolerated by its readers). Hadoop file systems
    offer no append a checkpoint can rely on (object stores have none at all), so a URI is
    refused with ValueError: write whole files there (`write_atomic`).
    """
    if not is_local(path):
        raise ValueError(f"hydrolite: cannot append to {path}: a Hadoop file system has no append; write whole files")
    with open(os_path(path), "ab") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


# ------------------------------------------------------------------ whole files by streaming
# (added for the state store's snapshots, state_remote.py: a SQLite file may be far larger than
# a bytes object should be, so it moves between a local file and the checkpoint in chunks)

_CHUNK = 4 << 20


def upload_atomic(local_file: str, path: str) -> None:
    """Copy the local file `local_file` to `path`, whole or not at all (as `write_atomic`,
    replacing an existing file), in chunks: its size is not bounded by memory."""
    if is_local(path):
        local = os_path(path)
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        tmp = f"{local}.{uuid.uuid4().hex}.tmp"
        try:
            with open(local_file, "rb") as src, open(tmp, "wb") as dst:
                while chunk := src.read(_CHUNK):
                    dst.write(chunk)
                dst.flush()
                os.fsync(dst.fileno())
            os.replace(tmp, local)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return
    h = _hadoop(path)
    p = h.path(path)
    h.mkdirs(p.getParent())
    out = h.create(p, True)
    try:
        with open(local_file, "rb") as src:
            while chunk := src.read(_CHUNK):
                out.write(bytearray(chunk))
    except BaseException:
        out.cancel()  # nothing of it appears at `path`
        raise
    out.close()  # the PUT (or the rename) happens here


def download(path: str, local_file: str) -> bool:
    """Copy the file at `path` to the local file `local_file` in chunks; False (and no local
    file written) when `path` does not exist."""
    if is_local(path):
        try:
            src = open(os_path(path), "rb")
        except FileNotFoundError:
            return False
        with src, open(local_file, "wb") as dst:
            while chunk := src.read(_CHUNK):
                dst.write(chunk)
        return True
    _h, stream = _open_remote(path)
    if stream is None:
        return False
    try:
        with open(local_file, "wb") as dst:
            while chunk := bytes(stream.readNBytes(_CHUNK)):  # java.io.InputStream, Java 11+
                dst.write(chunk)
    finally:
        stream.close()
    return True
