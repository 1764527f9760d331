"""Binding a program's named ports to Spark inputs and outputs at run time.

Inputs (`--input port=SPEC`):

| SPEC                                   | reads                                                     |
| -------------------------------------- | --------------------------------------------------------- |
| `DIR`, `json:DIR`, `csv:DIR`, `parquet:DIR` | new files in a directory, every record checked (`?maxFilesPerTrigger=N` etc. pass options) |
| `feed:DIR`                             | a hydrolite feed (`FeedWriter`; offsets = entries)         |
| `rate:rowsPerSecond=N`, `rate-micro-batch:rowsPerBatch=N` | Spark's rate sources, mapped to the element type |
| `demo`                                 | a few generated elements per batch (what `run` uses for unbound ports) |

File inputs read each file once, when it first appears, so **producers must publish files
atomically**: write a file under a hidden or temporary name (`.name`, `_name`, `name.tmp`,
`name.inprogress`, `name._COPYING_` — none of them is read) and rename it into place once it
is complete. A file that changes after Spark listed it, or that disappears before its batch
is replayed, fails the batch with an error saying how to go on; a missing input directory
is an error before the run starts (`?waitForDirectory=true` waits for it); names that are
never read are reported once on stderr. Details and options (`waitForDirectory`,
`acceptChangedFiles`, `ignoreMissingFiles`): `files.py`.

File layout of one element: a primitive is one column `value`; a tuple is columns `_1`,
`_2`, ...; a dataclass / NamedTuple is one column per field; keyed ports are columns `key`
and `value` (nested as needed; CSV only holds flat rows).

Input is **strict**: every record of a file is checked against the port's declared type
before the tick body sees it — nothing is coerced (`123` is not a `str`, `"1"` not an
`int`), null or a missing field only where the type is optional, no unknown field, one
JSON object per line, text in the declared encoding, CSV columns matched by header name
(see `strict.py`, `strict_csv.py`; JSON / CSV are parsed by hydrolite, `strict_read.py`).
A bad record fails the batch with `BadDataError` naming the port and its line, the file, the
line, the field, the expected and the found value. `?onBadRecord=quarantine:DIR` sets bad
records aside instead, in `DIR/batch_id=N/` (once per batch, `quarantine.py`), and counts
them in the progress; `?onBadRecord=fail` is the default. `?maxRecordBytes=N` (16 MiB)
bounds one line.

Outputs (`--output port=SPEC`): `DIR` / `json:DIR` / `csv:DIR` / `parquet:DIR` (one
`batch_id=N` directory per micro-batch, overwritten on replay), `memory` (a `MemorySink`),
`console[?limit=N]`, `callback:module:function` or a Python callable `f(batch_id, values)`
(called once per batch id: a replay of a batch whose callback already returned is skipped).

Every scheme is a `PortPlugin` (`port_api.py`): the ones above are registered in
`ports_builtin.py`, Delta Lake (`delta:PATH`, `ports_delta.py`) and PostgreSQL
(`postgres:DSN?table=T`, `ports_postgres.py`) beside them, and installed packages add more
through the entry-point group `hydrolite.ports` (`port_registry.py`, docs/ports.md). This
module keeps the built-in bindings; `parse_input` / `parse_output` ask the registry.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .feed import FEED_FORMAT, arrow_bytes, entry_name, list_entries
from .port_api import (
    InputBinding,
    OutputBinding,
    SinkCtx,
    ValuesSink,
    collect_values,
    external_columns,
    external_df,
    external_schema,
    internal_columns,
)
from .remap import URI_EMPTY_AUTHORITY, spark_uri_key
from .types import HType, ListT, NoneT, Prim, RecordT, StructT, TupleT
from .values import SFrame

if TYPE_CHECKING:
    from .feed_mirror import FeedMirror


# ------------------------------------------------------------------ inputs
@dataclass
class FileInput(InputBinding):
    """New files of a directory, in arrival order: file by file, then row by row within a file.

    Besides `v` (and `k`) the stream has `_file`: struct(`path` = Spark's
    `_metadata.file_path`, `start` = `_metadata.file_block_start`, `bad` = null, or the
    rejected record a quarantining input keeps until `quarantine.py` sets it aside; every
    record is checked, see strict_read.py). The runtime orders a
    batch's rows by (the file's position in the batch's file list from Spark's file source
    log — modification time, then path —, `start`, position within the split). Spark may cut
    a large JSON-lines / CSV file into several splits read by different tasks, so a row's
    position in its task is only meaningful within its split; the split's start offset puts
    the splits of one file back in file order. No partitioning setting is needed.
    """

    path: str
    fmt: str = "json"
    options: dict[str, str] = field(default_factory=dict)

    def stream(self, spark: SparkSession, port: str, vt: HType, kt: HType | None) -> DataFrame:
        # every record checked against the port's type, bad ones fail the batch or go to
        # `?onBadRecord=quarantine:DIR`: see strict_read.py. Spark gets the options that are
        # not hydrolite's (files.spark_options: temporary names skipped); the directory is
        # checked (not created) before the query starts: see files.py
        from .strict_read import read_input

        return read_input(spark, self, port, vt, kt)

    # files per batch up to which the file -> position lookup is a map literal (linear per
    # row, no extra Spark job); larger batches (a backlog) use a broadcast join instead
    MAP_LOOKUP_MAX_FILES: ClassVar[int] = 256

    def latest_first(self) -> bool:
        """Spark's `latestFirst` option: the newest files arrive first."""
        return any(k.lower() == "latestfirst" and v.strip().lower() == "true" for k, v in self.options.items())

    def arrival_order(
        self, spark: SparkSession, rows: DataFrame, port: str, uris: list[str], payload: list[Column]
    ) -> DataFrame:
        """This input's rows of one batch with order columns `_o0` (position of the row's file
        in `uris`, the batch's files in arrival order), `_o0s` (split start), `_o0r` (row in split).

        The row's position within its task (`monotonically_increasing_id`) is taken first, on
        the batch's own partitions, where each split of a file is one ordered run. A row from
        a file missing from `uris` fails the batch (it would have no arrival position).
        """
        pos = rows.select(
            F.col("_file.path").alias("_fp"),
            F.col("_file.start").alias("_o0s"),
            F.monotonically_increasing_id().alias("_o0r"),
            *payload,
        )
        key = F.regexp_replace(F.col("_fp"), URI_EMPTY_AUTHORITY, "$1:/")
        if len(uris) <= self.MAP_LOOKUP_MAX_FILES:
            pairs = [F.lit(x) for r, u in enumerate(uris) for x in (spark_uri_key(u), r)]
            lookup = F.create_map(*pairs) if pairs else F.lit(None).cast("map<string,bigint>")  # no file: no rows
            ranked = pos.withColumn("_fr", lookup[key].cast("long"))
        else:
            ranks = spark.createDataFrame([(spark_uri_key(u), r) for r, u in enumerate(uris)], "_fk string, _fr long")
            ranked = pos.join(F.broadcast(ranks), key == F.col("_fk"), "left")
        missing = F.raise_error(
            F.concat(
                F.lit(f"hydrolite: input {port!r} read a file missing from Spark's file source log: "),
                F.substring_index(F.col("_fp"), "/", -1),
            )
        )
        rank = F.when(F.col("_fr").isNull(), missing).otherwise(F.col("_fr"))
        return ranked.select(rank.alias("_o0"), "_o0s", "_o0r", *[c for c in ("k", "v") if c in pos.columns])

    def describe(self) -> str:
        return f"{self.fmt} files in {self.path}"


@dataclass
class FeedInput(InputBinding):
    path: str
    options: dict[str, str] = field(default_factory=dict)
    #: the entries may hold tombstones, a `gone` column (a keyed singleton's deltas:
    #: `channel_versions.py`); an entry without the column reads it as null
    gone: bool = False

    def stream(self, spark: SparkSession, port: str, vt: HType, kt: HType | None) -> DataFrame:
        fields = ([T.StructField("k", kt.spark(), True)] if kt is not None else []) + [
            T.StructField("v", vt.spark(), True),
            *([T.StructField("gone", T.BooleanType(), True)] if self.gone else []),
            T.StructField("_seq", T.LongType(), True),
        ]
        os.makedirs(self.path, exist_ok=True)
        schema = json.dumps(T.StructType(fields).jsonValue())
        reader = spark.readStream.format(FEED_FORMAT).options(**self.options)
        return reader.option("path", self.path).option("schema", schema).load()

    def describe(self) -> str:
        return f"feed {self.options.get('durable', self.path)}"  # (a mirror's: the durable directory)


def demo_column(t: HType, value: Column, port: str) -> Column:
    """An element of type t generated from the rate source's counter."""
    if isinstance(t, NoneT):
        return F.lit(None).cast(t.spark())
    if isinstance(t, Prim):
        if t.py is int:
            return value
        if t.py is float:
            return value.cast("double") * 0.5
        if t.py is str:
            return F.concat(F.lit("s"), (value % 4).cast("string"))
        if t.py is bool:
            return value % 2 == 0
    if isinstance(t, StructT):
        parts = [demo_column(it, value + i, f"{port}.{n}").alias(n) for i, (n, it) in enumerate(zip(t.names, t.items))]
        return F.struct(*parts)
    if isinstance(t, ListT):
        return F.array(demo_column(t.item, value, port))
    return F.lit(None).cast(t.spark())


def demo_value(t: HType, i: int, port: str) -> Any:
    """A Python element of type t for demo inputs (the same scheme as `demo_column`)."""
    if isinstance(t, NoneT):
        return None
    if isinstance(t, Prim):
        if t.py is int:
            return i
        if t.py is float:
            return i * 0.5
        if t.py is str:
            return f"s{i % 4}"  # the same few strings on every port, so keys meet across ports
        if t.py is bool:
            return i % 2 == 0
    if isinstance(t, StructT):
        return t.decode(
            [t_.encode(demo_value(t_, i + j, f"{port}.{n}")) for j, (n, t_) in enumerate(zip(t.names, t.items))]
        )
    if isinstance(t, ListT):
        return t.decode([t.item.encode(demo_value(t.item, i, port))])
    return t.sample()


@dataclass
class RateInput(InputBinding):
    options: dict[str, str]
    micro: bool = False

    def stream(self, spark: SparkSession, port: str, vt: HType, kt: HType | None) -> DataFrame:
        fmt = "rate-micro-batch" if self.micro else "rate"
        df = spark.readStream.format(fmt).options(**self.options).load()
        v = F.col("value")
        cols = [demo_column(vt, v, port).alias("v"), v.alias("_seq")]
        if kt is not None:
            cols.insert(0, demo_column(kt, v % 3, f"{port}-key").alias("k"))
        return df.select(*cols)

    def describe(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options.items())
        return f"{'rate-micro-batch' if self.micro else 'rate'} source ({opts})"


def parse_input(spec: str | InputBinding) -> InputBinding:
    """An InputBinding from a spec (see the module docstring), found through the port registry."""
    if isinstance(spec, InputBinding):
        return spec
    from .port_registry import registry

    return registry().bind_input(spec)


# ------------------------------------------------------------------ outputs
class MemorySink(ValuesSink):
    """Keeps every batch's values in this process, keyed by batch id (a replay replaces them)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[Any]] = {}

    def deliver(self, ctx: SinkCtx, values: list[Any]) -> int:
        self.batches[ctx.batch_id] = values
        return len(values)

    def values(self) -> list[Any]:
        return [v for b in sorted(self.batches) for v in self.batches[b]]

    def describe(self) -> str:
        return "memory"


class CallbackSink(ValuesSink):
    """Calls `f(batch_id, values)` once per batch id (skipped on replay once it returned)."""

    def __init__(self, f: Callable[[int, list[Any]], object], name: str = "callback") -> None:
        self.f = f
        self.name = name

    def deliver(self, ctx: SinkCtx, values: list[Any]) -> int:
        if not ctx.store.delivered(ctx.port, ctx.batch_id):
            self.f(ctx.batch_id, values)
            ctx.store.mark_delivered(ctx.port, ctx.batch_id)
        return len(values)

    def describe(self) -> str:
        return self.name


@dataclass
class FileOutput(OutputBinding):
    path: str
    fmt: str = "json"
    one_job: ClassVar[bool] = True  # one file write

    def write(self, ctx: SinkCtx, sf: SFrame) -> None:
        df = external_df(sf)
        target = os.path.join(self.path, f"batch_id={ctx.batch_id}")
        df.write.mode("overwrite").format(self.fmt).options(**({"header": "true"} if self.fmt == "csv" else {})).save(
            target
        )
        return None

    def describe(self) -> str:
        return f"{self.fmt} files in {self.path}"


def parse_output(spec: str | OutputBinding | Callable[[int, list[Any]], object]) -> OutputBinding:
    """An OutputBinding from a spec, a binding or a callable `f(batch_id, values)`."""
    if isinstance(spec, OutputBinding):
        return spec
    if callable(spec):
        return CallbackSink(spec, getattr(spec, "__name__", "callback"))
    from .port_registry import registry

    return registry().bind_output(spec)


class ConsoleSink(ValuesSink):
    """Prints each batch (the first `limit` elements) to stdout."""

    def __init__(self, limit: int = 10) -> None:
        self.limit = limit

    def deliver(self, ctx: SinkCtx, values: list[Any]) -> int:
        shown = ", ".join(repr(v) for v in values[: self.limit])
        more = f", ... ({len(values) - self.limit} more)" if len(values) > self.limit else ""
        print(
            f"  {ctx.port} [batch {ctx.batch_id}]: {shown}{more}"
            if values
            else f"  {ctx.port} [batch {ctx.batch_id}]: (nothing)"
        )
        return len(values)

    def describe(self) -> str:
        return "console"


# ------------------------------------------------------------------ channels between queries
class ChannelOutput:
    """Writes a node's per-batch output as feed entry <batch id> (skipped if already complete).

    A batch with no elements for the channel writes no entry: the consumer's offset passes the
    gap (`feed.feed_end`), and runs no tick for it. An empty entry would make Spark run the
    consumer's query for nothing, and a query reading its own channel (its `all_ticks()`
    batched into itself) would then run micro-batches for ever."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, batch_id: int, sf: SFrame, mirror: FeedMirror | None = None, gone: bool = False) -> bool:
        """`mirror`: the channel is on a Hadoop file system; the entry is an Arrow file the driver
        writes there and into the local mirror the consumer reads (feed_mirror.py). `gone`:
        `sf.df` also has the tombstone column (a keyed singleton's deltas). Whether an entry
        was written (False: no elements, or written by an earlier attempt)."""
        order = [F.col(c) for c in sf.order]
        cols = [*(["k"] if sf.keyed else []), "v", *(["gone"] if gone else [])]
        df = sf.df.select(*cols, *sf.order)
        # one file: after a shuffle into one partition, never coalesce(1) straight over the
        # batch's rows, which would compute every upstream partition in one task — serially,
        # and, with two kinds of stateful operators upstream (a streaming aggregation,
        # transformWithState), failing Spark's check that a task's state stores match. The one
        # partition is sorted in place: a global `orderBy` would first run a job sampling the
        # rows for its range bounds, then sort in ranges that one task reads back anyway.
        df = df.repartition(1)
        df = (df.sortWithinPartitions(*order) if order else df).select(*cols)
        if mirror is not None:
            return mirror.write(batch_id, lambda: _nonempty_arrow(df))
        final = os.path.join(self.path, entry_name(batch_id, "parquet"))
        if batch_id in list_entries(self.path):
            return False  # written by an earlier attempt of this batch: replays are identical
        tmp = final + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        df.write.parquet(tmp)
        parts = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".parquet")]
        if sum(pq.ParquetFile(f).metadata.num_rows for f in parts) == 0:  # from the footers: no job
            shutil.rmtree(tmp)
            return False
        os.rename(tmp, final)
        return True


def _nonempty_arrow(df: DataFrame) -> bytes | None:
    table = df.toArrow()
    return arrow_bytes(table) if table.num_rows else None


__all__ = [
    "external_schema",
    "internal_columns",
    "external_columns",
    "external_df",
    "ValuesSink",
    "collect_values",
    "InputBinding",
    "FileInput",
    "FeedInput",
    "RateInput",
    "parse_input",
    "OutputBinding",
    "MemorySink",
    "CallbackSink",
    "FileOutput",
    "parse_output",
    "ChannelOutput",
    "SinkCtx",
    "TupleT",
    "RecordT",
]
