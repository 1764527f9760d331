"""The port plugin interface: how a `--input` / `--output` SPEC becomes a source or a sink.

A program's ports are bound at run time by a spec string `scheme:TARGET?opt=v&opt2=v2`
(`delta:/data/events`, `postgres:postgresql://app@db/shop?table=orders`). The scheme names a
`PortPlugin`; hydrolite's own ports (files, feeds, rate, memory, console, callback, Delta
Lake, PostgreSQL) are plugins like any other, and a package adds its own through the
entry-point group `hydrolite.ports` (see `port_registry.py` and docs/ports.md):

```toml
[project.entry-points."hydrolite.ports"]
kafka = "hydrolite_kafka:KafkaPort"     # a PortPlugin subclass (or an instance of one)
```

A plugin turns a parsed `PortSpec` into an `InputBinding` (a source: a streaming DataFrame
whose offsets Spark logs and replays) and/or an `OutputBinding` (a sink: writes one batch,
idempotently by batch id). This module is the whole contract; `hydrolite.ports` re-exports it.

Element layout (how one element is stored in a table or a file, `external_columns`): a
primitive is one column `value`; a tuple is columns `_1`, `_2`, ...; a dataclass / NamedTuple
is one column per field; a keyed port is columns `key` and `value`.
"""

from __future__ import annotations

import json
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import parse_qsl

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import ckfs
from .errors import SparkRunError
from .reuse import derived, field_of
from .state import StateStore
from .types import HType, StructT
from .values import SFrame

#: the entry-point group port plugins are discovered in (importlib.metadata)
ENTRY_POINT_GROUP = "hydrolite.ports"

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-_]*$")


class PortSpecError(SparkRunError):
    """A port spec is malformed, names no known scheme, or a plugin rejects its target or options."""

    code: ClassVar[str] = "HL-PORT"


# ------------------------------------------------------------------ specs
@dataclass(frozen=True)
class PortSpec:
    """A parsed `scheme:TARGET?opt=v` (TARGET is everything up to the first `?`).

    Plugins read their target and options through the helpers below, which raise
    `PortSpecError` saying what was required, what was found and how to fix it.
    """

    text: str
    scheme: str
    target: str
    options: Mapping[str, str]

    def error(self, required: str, found: str, fix: str) -> PortSpecError:
        """The error a plugin raises for this spec (names the spec, the rule, the finding, the fix)."""
        return PortSpecError(f"port spec {self.text!r}: {required}; found {found}\n  fix: {fix}")

    def require_target(self, what: str, example: str) -> str:
        """The target, which must not be empty (`what` names it: "a directory", "a DSN")."""
        if not self.target.strip():
            raise self.error(f"{self.scheme}: needs {what} after '{self.scheme}:'", "nothing", f"write {example}")
        return self.target

    def no_target(self) -> None:
        """This scheme takes no target (`memory`, `console`)."""
        if self.target:
            raise self.error(
                f"{self.scheme}: takes no target", repr(self.target), f"write {self.scheme} (options after '?')"
            )

    def check_options(self, allowed: Iterable[str]) -> None:
        """Every option is one of `allowed` (case-sensitive)."""
        known = sorted(allowed)
        unknown = sorted(k for k in self.options if k not in known)
        if unknown:
            takes = ", ".join(known) if known else "no options"
            raise self.error(
                f"{self.scheme}: takes {takes}", f"unknown option(s) {', '.join(unknown)}", "remove or correct them"
            )

    def option(self, name: str, default: str | None = None) -> str | None:
        return self.options.get(name, default)

    def option_int(self, name: str, default: int | None = None, *, minimum: int = 0) -> int | None:
        """An integer option (>= `minimum`), or `default` when absent."""
        raw = self.options.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise self.error(f"option {name} must be an integer >= {minimum}", repr(raw), f"write {name}={minimum}")
        return value

    def option_bool(self, name: str, default: bool = False) -> bool:
        """A boolean option (`true` / `false`, any case), or `default` when absent."""
        raw = self.options.get(name)
        if raw is None:
            return default
        if raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise self.error(f"option {name} must be true or false", repr(raw), f"write {name}=true or {name}=false")


def split_spec(text: str) -> tuple[str | None, str]:
    """(scheme, rest) of a spec; scheme None when the text has none (`DIR`, `memory`).

    A scheme is a URI-style name before the first `:` (a letter, then letters, digits,
    `+ . - _`); anything else before a `:` (a path such as `./a:b`) is not a scheme.
    """
    head, sep, rest = text.partition(":")
    if sep and _SCHEME.match(head):
        return head, rest
    return None, text


def parse_spec(scheme: str, rest: str, text: str) -> PortSpec:
    """A `PortSpec` from a scheme and the text after `scheme:` (target, then `?` and options)."""
    target, sep, query = rest.partition("?")
    options: dict[str, str] = {}
    if sep and query:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError as exc:
            raise PortSpecError(
                f"port spec {text!r}: options after '?' must be name=value pairs joined by '&'; found {query!r} "
                f"({exc})\n  fix: write {scheme}:{target}?name=value&other=value"
            ) from exc
        for k, v in pairs:
            if k in options:
                raise PortSpecError(
                    f"port spec {text!r}: option {k} is given twice ({options[k]!r} and {v!r})\n  fix: keep one"
                )
            options[k] = v
    return PortSpec(text, scheme, target, options)


# ------------------------------------------------------------------ element layout
def external_schema(vt: HType, kt: HType | None) -> T.StructType:
    """The columns a file or table holding elements of this type has."""
    if kt is not None:
        return T.StructType([T.StructField("key", kt.spark(), True), T.StructField("value", vt.spark(), True)])
    if isinstance(vt, StructT):
        return T.StructType([T.StructField(n, t.spark(), True) for n, t in zip(vt.names, vt.items)])
    return T.StructType([T.StructField("value", vt.spark(), True)])


def external_types(vt: HType, kt: HType | None) -> list[tuple[str, HType]]:
    """The external columns with the element type each holds (see `external_schema`)."""
    if kt is not None:
        return [("key", kt), ("value", vt)]
    if isinstance(vt, StructT):
        return list(zip(vt.names, vt.items))
    return [("value", vt)]


def internal_columns(vt: HType, kt: HType | None) -> list[Column]:
    """`k` / `v` columns from the external layout."""
    if kt is not None:
        return [F.col("key").alias("k"), F.col("value").alias("v")]
    if isinstance(vt, StructT):
        return [F.struct(*[F.col(n) for n in vt.names]).alias("v")]
    return [F.col("value").alias("v")]


def external_columns(sf: SFrame, col: Callable[[str], Column] = F.col) -> list[Column]:
    """The external layout of an output, as columns over `sf.df` (or over `sf.base` with
    `col=sf.col`, as `external_df` builds it)."""
    if sf.keyed:
        return [col("k").alias("key"), col("v").alias("value")]
    if isinstance(sf.vt, StructT):
        return [field_of(col("v"), n).alias(n) for n in sf.vt.names]
    return [col("v").alias("value")]


def external_df(sf: SFrame) -> DataFrame:
    """The batch as a DataFrame in the external layout (rows in no particular order), built
    with one transformation even when `sf` is pending (its columns reused from an earlier
    batch while `sf`'s are the same objects: `reuse.py`)."""
    named = {c: sf.col(c) for c in (["k"] if sf.keyed else []) + ["v"]}
    cols = derived(("external", sf.keyed, sf.vt), list(named.values()), lambda: external_columns(sf, named.__getitem__))
    return sf.select(*cols)


# ------------------------------------------------------------------ sources
class InputBinding(ABC):
    """Where a source port's elements come from: one streaming DataFrame with replayable offsets.

    `stream` returns a streaming DataFrame with column `v` (type `vt.spark()`), `k` (type
    `kt.spark()`) when the port is keyed, and optionally `_seq` (long): the elements' order
    within the stream, increasing in arrival order and the same when a batch is replayed.
    Without `_seq` the order within a batch is the batch's row order. The DataFrame must
    come from a Spark streaming source whose offsets Spark logs before a batch and replays
    after a crash (every built-in Spark source does; a Python Data Source streaming reader,
    as in `feed.py` or `ports_delta.py`, does when its `partitions(start, end)` depends only
    on the two offsets). That is what makes a replayed batch read exactly the same rows.
    """

    @abstractmethod
    def stream(self, spark: SparkSession, port: str, vt: HType, kt: HType | None) -> DataFrame:
        """A streaming DataFrame with columns `v` (and `k`), plus `_seq` when it has an order."""

    @abstractmethod
    def describe(self) -> str:
        """A few words for progress lines and errors (`delta table /data/events`)."""


# ------------------------------------------------------------------ sinks
@dataclass
class SinkCtx:
    """What a sink needs to write one batch idempotently.

    `batch_id` is Spark's: a crash inside a batch makes Spark run the same batch id again
    with the same input, so a sink that records "batch b is written" in the same atomic step
    as the data, and skips a batch it finds recorded, writes each batch exactly once.
    `sink_id()` names this sink of this query across restarts (the key to record it under).
    """

    port: str
    batch_id: int
    store: StateStore
    stage: str
    query_dir: str

    def sink_id(self) -> str:
        """`hydrolite-<query uuid>-<port>`: stable for this checkpoint's query and this port.

        The uuid is made once per query directory (`sink-identity.json`), so a new
        checkpoint (whose batch ids restart at 0) is a new writer, never mistaken for a replay.
        """
        return f"hydrolite-{query_identity(self.query_dir)}-{self.port}"


def query_identity(query_dir: str) -> str:
    """The uuid of the query whose checkpoint directory this is (made on first use, atomically:
    of writers racing to make it, the first one's is kept and every one reads that back)."""
    path = ckfs.join(query_dir, "sink-identity.json")
    text = ckfs.read_text(path)
    if text is None:
        ckfs.write_atomic(path, json.dumps({"query": uuid.uuid4().hex}), overwrite=False)
        text = ckfs.read_text(path)
        if text is None:  # written (by us or another writer) a moment ago: it cannot be gone
            raise SparkRunError(f"{path} vanished after it was written\n  fix: check what deletes checkpoint files")
    value = json.loads(text).get("query")
    if not isinstance(value, str) or not value:
        raise SparkRunError(f"{path} is damaged (no query id)\n  fix: restore it from a backup of the checkpoint")
    return value


class OutputBinding(ABC):
    """Where a sink port's elements go; `write` must be idempotent by batch id.

    `write(ctx, sf)` gets the batch's elements as an `SFrame` (a DataFrame with `v`, `k`
    when keyed, and the order columns `sf.order`); `collect_values(sf)` turns it into
    Python values in stream order, `batch_arrow(sf)` into an Arrow table in the external
    layout, `external_df(sf)` into a DataFrame in that layout.

    `one_job`: True when `write` reads the batch with exactly one Spark job (one file write,
    one `collect`). A tick whose only reader of the batch is such a sink does not cache the
    batch's rows first (a cache pays for itself only when a second job reads them). A wrong
    True costs time only: Spark computes the batch again for the second job.
    """

    one_job: ClassVar[bool] = False

    @abstractmethod
    def write(self, ctx: SinkCtx, sf: SFrame) -> int | None:
        """Write one batch; returns the number of rows when it is known without extra work."""

    @abstractmethod
    def describe(self) -> str:
        """A few words for progress lines and errors (`postgres table orders`)."""


class ValuesSink(OutputBinding):
    """A sink that takes each batch as Python values (memory, callbacks, the console). The
    batch's sinks of this kind are read together by one Spark job (`collect_many`), then each
    gets its own values through `deliver`, in the program's sink order."""

    one_job = True  # one collect

    def write(self, ctx: SinkCtx, sf: SFrame) -> int:
        return self.deliver(ctx, collect_values(sf))

    @abstractmethod
    def deliver(self, ctx: SinkCtx, values: list[Any]) -> int:
        """Hand over one batch's values (idempotent by batch id); returns how many."""


def collect_values(sf: SFrame) -> list[Any]:
    """The batch's elements as Python values, in the stream's order ((k, v) pairs when keyed)."""
    return _values(sf, one_task_per_core(sf.select(*(sf.col(c).alias(c) for c in sf.cols())), bool(sf.order)).collect())


def one_task_per_core(df: DataFrame, ordered: bool) -> DataFrame:
    """`df` read by at most one task per core of the application (`coalesce`, no shuffle), for
    a job whose rows all go to the driver anyway; `ordered`: the driver sorts them there by
    their order columns (else `df` is returned as it is).

    A tick's batch is the union of its inputs' partitions (one per feed entry or file split,
    and the executor region's shuffle partitions), so a collect of a few rows used to run a
    task per partition, each costing tens of milliseconds of scheduling and, when a Python
    function is on the way, a round trip to a Python worker. Grouping them runs the same
    partitions one after another inside each task: no more tasks than Spark could run at
    once, and nothing changes for the rows. Their order is kept by their order columns, which
    the collect sorts by, and every position (`monotonically_increasing_id`) is computed below
    this point, on the partitions it was defined on.

    Rows without order columns (an input read in no particular order) arrive in the order of
    Spark's partitions, which a collect concatenates by index: a file comes back in file order.
    Spark's coalescer groups partitions by preferred location, not by index, so such a frame
    keeps its partitions.

    Rows the driver holds (a local relation: a singleton's value as a stream) are returned as
    they are: Spark collects those without a job, and a coalesce on top would start one."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    if not ordered or not isinstance(df, ClassicDataFrame):  # (Spark Connect: no SparkContext to ask)
        return df
    grouped = df.coalesce(max(int(df.sparkSession.sparkContext.defaultParallelism), 1))
    plan: Any = grouped._jdf.queryExecution().optimizedPlan()  # computed once: the collect reuses it
    if plan.getClass().getSimpleName() == "Repartition" and plan.child().getClass().getSimpleName() == "LocalRelation":
        return df
    return grouped


def collect_many(frames: Sequence[SFrame]) -> list[list[Any]]:
    """`collect_values` of each frame, read by one Spark job: the frames (one batch's sinks)
    as one union, each frame's rows in a struct column of its own (`_s<i>`) beside its index
    `_sink`. Each extra job would cost the batch its fixed overhead again and read the batch
    again (with every Python function on the way).

        >>> collect_many([])
        []
    """
    if len(frames) <= 1:
        return [collect_values(sf) for sf in frames]
    union = None
    for i, sf in enumerate(frames):
        part = sf.select(F.lit(i).alias("_sink"), F.struct(*(sf.col(c).alias(c) for c in sf.cols())).alias(f"_s{i}"))
        union = part if union is None else union.unionByName(part, allowMissingColumns=True)
    assert union is not None
    rows: list[list[Any]] = [[] for _ in frames]
    for r in one_task_per_core(union, all(sf.order for sf in frames)).collect():
        i = r["_sink"]
        rows[i].append(r[f"_s{i}"])
    return [_values(sf, got) for sf, got in zip(frames, rows)]


def in_order(rows: list[Any], order: Sequence[str]) -> list[Any]:
    """Collected rows sorted by their `order` columns (in place; none: as they came)."""
    if order:
        rows.sort(key=lambda r: tuple(r[c] for c in order))
    return rows


def _values(sf: SFrame, rows: list[Any]) -> list[Any]:
    """Rows of `sf`'s columns (`cols()`) as its Python values, in the stream's order."""
    in_order(rows, sf.order)
    if sf.keyed:
        assert sf.kt is not None
        return [(sf.kt.decode(r["k"]), sf.vt.decode(r["v"])) for r in rows]
    return [sf.vt.decode(r["v"]) for r in rows]


def ordered_external(sf: SFrame) -> tuple[DataFrame, list[str]]:
    """The batch in the external layout plus its order columns (renamed apart from the
    layout's names, and listed), for a sink that sorts on the driver: it receives every row
    anyway, and Spark's global `orderBy` would first run a job sampling the rows for its
    range bounds, then shuffle them."""
    cols = external_columns(sf)
    taken = {name for name, _ in external_types(sf.vt, sf.kt)}
    names = [f"__hl_order{i}" for i in range(len(sf.order))]
    assert not taken & set(names), names
    return one_task_per_core(
        sf.df.select(*cols, *(F.col(c).alias(n) for c, n in zip(sf.order, names))), bool(names)
    ), names


def collect_external(sf: SFrame) -> list[Any]:
    """The batch's rows in the external layout, in the stream's order (sorted on the driver:
    `ordered_external`); each row has its order columns after the layout's."""
    df, order = ordered_external(sf)
    return in_order(df.collect(), order)


def batch_arrow(sf: SFrame) -> Any:
    """The batch as a `pyarrow.Table` in the external layout, rows in the stream's order
    (sorted on the driver: `ordered_external`)."""
    df, order = ordered_external(sf)
    table = df.toArrow()
    if not order:
        return table
    return table.sort_by([(c, "ascending") for c in order], null_placement="at_start").drop_columns(order)


def arrow_schema(vt: HType, kt: HType | None) -> Any:
    """The Arrow schema of the external layout (what `batch_arrow` yields for these types)."""
    return pa.schema([pa.field(name, t.arrow(), True) for name, t in external_types(vt, kt)])


# ------------------------------------------------------------------ plugins
class PortPlugin(ABC):
    """One port scheme: parses its specs into sources and/or sinks.

    Subclass it, set `scheme` (the name before `:`) and `summary` (one line), and override
    `source` and/or `sink`; a scheme that is not a source (or not a sink) keeps the default,
    which raises a clear error. `bare = True` lets the scheme's name alone be a spec
    (`memory`, `console`): the target is then empty.
    """

    scheme: str
    summary: str = ""
    bare: bool = False

    def source(self, spec: PortSpec) -> InputBinding:
        """The source a `--input port=SPEC` binds (override for a scheme that reads)."""
        raise spec.error(
            f"{self.scheme}: is not a source (it only writes)", "it bound to an input", "use it as --output"
        )

    def sink(self, spec: PortSpec) -> OutputBinding:
        """The sink a `--output port=SPEC` binds (override for a scheme that writes)."""
        raise spec.error(f"{self.scheme}: is not a sink (it only reads)", "it bound to an output", "use it as --input")

    @property
    def reads(self) -> bool:
        return type(self).source is not PortPlugin.source

    @property
    def writes(self) -> bool:
        return type(self).sink is not PortPlugin.sink

    def roles(self) -> str:
        """`source`, `sink` or `source, sink` (for listings)."""
        return ", ".join(r for r, yes in (("source", self.reads), ("sink", self.writes)) if yes)
