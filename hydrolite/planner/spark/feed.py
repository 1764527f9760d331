"""A streaming source whose offsets we control: a directory of numbered entries.

`FeedWriter.send_many(values)` appends one entry (an Arrow IPC file) to a feed directory;
the `hydrolite_feed` Python data source (Spark's Python Data Source API) reads it as a
stream whose offset is the number of entries, so every micro-batch covers a whole number
of sends and a replayed batch reads exactly the same entries. Channels between queries use
the same reader over Parquet entries written by the producing query, one per batch id.

Each row gets `_seq = (entry << 32) + row`, the order of the feed.

`spark_session` registers this module to be pickled by value: the Python process Spark starts
for each feed at each query start then rebuilds the reader without importing hydrolite. So the
reader classes here use only the standard library, pyarrow and pyspark.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from .types import HType

FEED_FORMAT = "hydrolite_feed"
_ENTRY = re.compile(r"^(\d{12})\.(arrow|parquet)$")


def entry_name(index: int, ext: str) -> str:
    return f"{index:012d}.{ext}"


def list_entries(path: str) -> dict[int, str]:
    """index -> entry file/dir name, for complete entries."""
    out: dict[int, str] = {}
    if os.path.isdir(path):
        for name in os.listdir(path):
            m = _ENTRY.match(name)
            if m:
                out[int(m.group(1))] = name
    return out


def feed_end(path: str, base: int = 0) -> int:
    """The feed's latest offset: one past its highest entry, at least `base`. A channel has a
    gap where its producer ran a batch without a tick (Spark's first batch without data, a
    held batch): entries are written in batch order, so a gap below the highest entry is
    final, and it holds no elements. Entries every reader is past may be removed, never the
    highest (`retention.py`), so the offset stays."""
    return max([base, *(i + 1 for i in list_entries(path))])


class FeedWriter:
    """Appends entries of typed elements to a feed directory (used by tests and the CLI)."""

    def __init__(self, path: str, vt: HType, kt: HType | None = None) -> None:
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path) and not path.startswith("file:"):
            raise ValueError(
                f"feed {path}: a feed is a local directory, read by Spark's Python workers by path, and this is a "
                "Hadoop URI (it would become a relative directory named after its scheme)\n"
                "  fix: give the feed a local directory (on a cluster: a shared file system mounted everywhere)"
            )
        self.path = path
        self.vt = vt
        self.kt = kt
        os.makedirs(path, exist_ok=True)

    def send_many(self, values: Iterable[Any]) -> int:
        """Write one entry holding `values` (pairs (k, v) for keyed feeds); returns its index."""
        table = entry_table(values, self.vt, self.kt)
        index = feed_end(self.path)
        final = os.path.join(self.path, entry_name(index, "arrow"))
        tmp = final + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(arrow_bytes(table))
        os.rename(tmp, final)
        return index

    def send(self, value: Any) -> int:
        return self.send_many([value])


def entry_table(values: Iterable[Any], vt: HType, kt: HType | None = None) -> pa.Table:
    """The Arrow table of one entry holding `values` (pairs (k, v) when `kt` is given)."""
    items = list(values)
    cols: dict[str, Any] = {}
    fields = []
    if kt is not None:
        cols["k"] = pa.array([kt.encode(k) for k, _ in items], type=kt.arrow())
        cols["v"] = pa.array([vt.encode(v) for _, v in items], type=vt.arrow())
        fields.append(pa.field("k", kt.arrow()))
    else:
        cols["v"] = pa.array([vt.encode(v) for v in items], type=vt.arrow())
    fields.append(pa.field("v", vt.arrow()))
    return pa.Table.from_pydict(cols, schema=pa.schema(fields))


class _Entry(InputPartition):
    """Entry `index` of a feed: read by `path`, or from `data`, its bytes (an embedding reader)."""

    def __init__(self, index: int, path: str, data: bytes | None = None) -> None:
        super().__init__(index)
        self.index = index
        self.path = path
        self.data = data


class FeedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are {"entries": n}: the first n entries of the directory.

    `maxEntriesPerTrigger` caps how many entries one micro-batch takes. `base`: entries below
    it count as present and are never read; `embed`: each partition carries its entry's bytes,
    read here on the driver's host, so executors elsewhere need no access to `path` (a local
    mirror of a feed on a Hadoop file system: feed_mirror.py).
    """

    def __init__(
        self, path: str, schema: StructType, max_entries: int | None = None, base: int = 0, embed: bool = False
    ) -> None:
        self.path = path
        self.schema = schema
        self.max_entries = max_entries
        self.base = base
        self.embed = embed
        self.target: int | None = None

    def initialOffset(self) -> dict[str, int]:
        return {"entries": 0}

    def latestOffset(self, start: dict[Any, Any], limit: ReadLimit) -> dict[Any, Any]:
        end = feed_end(self.path, self.base)
        if self.target is not None:
            end = min(end, self.target)
        cap = limit.max_files if isinstance(limit, ReadMaxFiles) else self.max_entries
        if cap is not None and start:
            end = min(end, int(start["entries"]) + cap)
        return {"entries": end}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxFiles(self.max_entries) if self.max_entries else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = feed_end(self.path, self.base)

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Entry]:
        entries = list_entries(self.path)
        out = []
        for i in range(start["entries"], end["entries"]):
            if i not in entries:
                if i < self.base:
                    raise FileNotFoundError(f"feed {self.path}: entry {i} is below {self.base}, the first one kept")
                continue  # a producer's batch that wrote nothing (see `feed_end`)
            path = os.path.join(self.path, entries[i])
            out.append(_Entry(i, path, _entry_bytes(path) if self.embed else None))
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, _Entry)
        if partition.data is not None:
            table = ipc.open_file(pa.py_buffer(partition.data)).read_all()
        elif partition.path.endswith(".arrow"):
            with pa.memory_map(partition.path) as src:
                table = ipc.open_file(src).read_all()
        else:
            table = pq.read_table(partition.path)
        fields = [f for f in self.schema.fields if f.name != "_seq"]
        names = [f.name for f in fields]
        n = table.num_rows
        seq = pa.array([(partition.index << 32) + i for i in range(n)], type=pa.int64())
        # a column the entry lacks (a delta entry without tombstones) reads as nulls of its type
        cols = [
            table.column(f.name) if f.name in table.column_names else pa.nulls(n, to_arrow_type(f.dataType))
            for f in fields
        ]
        out = pa.Table.from_arrays([*cols, seq], names=[*names, "_seq"])
        yield from out.to_batches()

    def commit(self, end: dict[str, int]) -> None:
        """Entries are kept: a feed is an append-only log (a replay may need them)."""


def _entry_bytes(path: str) -> bytes:
    """An entry as Arrow IPC bytes (a Parquet entry directory is read and converted)."""
    if path.endswith(".arrow"):
        with open(path, "rb") as fh:
            return fh.read()
    return arrow_bytes(pq.read_table(path))


def arrow_bytes(table: pa.Table) -> bytes:
    """`table` as the bytes of an Arrow IPC file (the format of a feed entry)."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


class FeedDataSource(DataSource):
    """`spark.readStream.format("hydrolite_feed").option("path", dir).option("schema", json)`."""

    @classmethod
    def name(cls) -> str:
        return FEED_FORMAT

    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(self.options["schema"]))

    def streamReader(self, schema: StructType) -> FeedStreamReader:
        cap = self.options.get("maxEntriesPerTrigger")
        base, embed = int(self.options.get("base", "0")), self.options.get("embed", "") == "true"
        return FeedStreamReader(self.options["path"], schema, int(cap) if cap else None, base, embed)
