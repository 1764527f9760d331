"""Delta Lake tables as ports (`delta:PATH`), through delta-rs (`deltalake`; no JVM jar).

Sink — `--output port=delta:PATH[?partitionBy=col,col]`: each micro-batch is appended in one
Delta commit that also records an application transaction (`txn`: app id = this query's
sink id, `SinkCtx.sink_id()`; version = the batch id). Before writing, the sink reads the
table's transaction version for its app id: a batch id at or below it was committed by an
earlier attempt (Spark replays a batch whose own commit a crash prevented) and is skipped.
Data and marker land in the same atomic commit, so every batch is in the table exactly
once. The table is created by the first batch (columns: the port's element layout, see
`port_api`); an empty batch writes nothing. The batch passes through the driver as Arrow.

Source — `--input port=delta:PATH[?startingVersion=N|latest&maxVersionsPerTrigger=N&
skipChangeCommits=true&waitForTable=true]`: the table's new versions, in order
(`delta_source.py`). By default the stream starts at version 0 (the whole table);
`startingVersion=latest` reads only versions committed after the query's first batch.

Local paths only (the source reads the table's log from the file system).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from .errors import SparkRunError
from .port_api import (
    InputBinding,
    OutputBinding,
    PortPlugin,
    PortSpec,
    PortSpecError,
    SinkCtx,
    batch_arrow,
    external_types,
)
from .types import HType, NoneT, OptT, StructT
from .values import SFrame

_SOURCE_OPTIONS = ("startingVersion", "maxVersionsPerTrigger", "skipChangeCommits", "waitForTable")


def _deltalake() -> Any:
    """The deltalake module, or an error saying how to install it."""
    try:
        import deltalake
    except ImportError as exc:
        raise PortSpecError(
            "the delta port needs the deltalake package (delta-rs), which is not installed\n"
            "  fix: pip install 'hydrolite[delta]' (or pip install deltalake)"
        ) from exc
    return deltalake


# ------------------------------------------------------------------ types: table columns vs the port
def _norm(t: Any) -> Any:
    """An Arrow type with the differences that do not change the Python value taken out:
    string / binary encodings, narrower integers and floats, timestamp units, list kinds."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_signed_integer(t):
        return pa.int64()
    if pa.types.is_floating(t):
        return pa.float64()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(_norm(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(_norm(t.key_type), _norm(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct(sorted((pa.field(f.name, _norm(f.type)) for f in t), key=lambda f: f.name))
    return t


def check_table_columns(path: str, port: str, table_schema: Any, vt: HType, kt: HType | None) -> None:
    """The table's columns hold the port's element layout: no missing (unless optional), no
    unknown column, each of the port's type (up to `_norm`). Raises `PortSpecError` otherwise."""
    have = {f.name: f.type for f in table_schema}
    want = external_types(vt, kt)
    problems: list[str] = []
    for name, t in want:
        if name not in have:
            if not isinstance(t, (OptT, NoneT)):
                problems.append(f"column {name} ({t.describe()}) is missing")
        elif _norm(have[name]) != _norm(t.arrow()):
            problems.append(f"column {name} is {have[name]}, the port's {t.describe()} is {t.arrow()}")
    extra = sorted(set(have) - {n for n, _ in want})
    if extra:
        problems.append(f"unknown column(s) {', '.join(extra)}")
    if problems:
        layout = ", ".join(f"{n}: {t.describe()}" for n, t in want)
        raise PortSpecError(
            f"input {port!r}: delta table {path} does not hold the port's elements: {'; '.join(problems)}\n"
            f"  the port reads columns {layout}\n"
            "  fix: declare the port's type to match the table, or read a table with these columns"
        )


# ------------------------------------------------------------------ the source
@dataclass
class DeltaInput(InputBinding):
    """A Delta table's appended rows, version by version (see `delta_source.py`)."""

    path: str
    options: dict[str, str] = field(default_factory=dict)

    def stream(self, spark: SparkSession, port: str, vt: HType, kt: HType | None) -> DataFrame:
        from .delta_source import DELTA_FORMAT, DeltaDataSource, encode_schema, null_rule

        deltalake = _deltalake()
        path = os.path.abspath(self.path)
        start_after = -1
        if deltalake.DeltaTable.is_deltatable(path):
            table = deltalake.DeltaTable(path)
            check_table_columns(path, port, pa.schema(table.schema().to_arrow()), vt, kt)
            if self.options.get("startingVersion", "0") == "latest":
                start_after = table.version()
        elif self.options.get("waitForTable", "false").lower() != "true":
            raise PortSpecError(
                f"input {port!r}: no Delta table at {path}\n"
                "  fix: create it first (any Delta writer), or pass ?waitForTable=true to wait for it"
            )
        if self.options.get("startingVersion", "0") not in ("0", "latest"):
            start_after = int(self.options["startingVersion"]) - 1
        fields = ([T.StructField("k", kt.spark(), True)] if kt is not None else []) + [
            T.StructField("v", vt.spark(), True),
            T.StructField("_seq", T.LongType(), True),
        ]
        arrow = pa.schema(
            ([pa.field("k", kt.arrow())] if kt is not None else [])
            + [pa.field("v", vt.arrow()), pa.field("_seq", pa.int64())]
        )
        kind = "keyed" if kt is not None else "fields" if isinstance(vt, StructT) else "value"
        layout = {"kind": kind, "columns": [[n, null_rule(t)] for n, t in external_types(vt, kt)]}
        spark.dataSource.register(DeltaDataSource)
        reader = spark.readStream.format(DELTA_FORMAT)
        for name in ("maxVersionsPerTrigger", "skipChangeCommits"):
            if name in self.options:
                reader = reader.option(name, self.options[name].lower())
        return (
            reader.option("path", path)
            .option("port", port)
            .option("schema", json.dumps(T.StructType(fields).jsonValue()))
            .option("arrowSchema", encode_schema(arrow))
            .option("layout", json.dumps(layout))
            .option("startAfter", str(start_after))
            .load()
        )

    def describe(self) -> str:
        return f"delta table {self.path}"


# ------------------------------------------------------------------ the sink
@dataclass
class DeltaOutput(OutputBinding):
    """Appends each batch with an application transaction (app id, batch id); replays are skipped."""

    path: str
    partition_by: tuple[str, ...] = ()

    def committed(self, app_id: str) -> int | None:
        """The newest batch id this app id committed to the table (None: none, or no table yet)."""
        deltalake = _deltalake()
        if not deltalake.DeltaTable.is_deltatable(self.path):
            return None
        version: int | None = deltalake.DeltaTable(self.path).transaction_version(app_id)
        return version

    def write(self, ctx: SinkCtx, sf: SFrame) -> int | None:
        deltalake = _deltalake()
        app_id = ctx.sink_id()
        done = self.committed(app_id)
        if done is not None and done >= ctx.batch_id:
            return None  # an earlier attempt of this batch committed it: a replay, skipped
        table = batch_arrow(sf)
        if table.num_rows == 0:
            return 0
        missing = [c for c in self.partition_by if c not in table.column_names]
        if missing:
            raise SparkRunError(
                f"sink {ctx.port!r} ({self.describe()}): partitionBy names column(s) {', '.join(missing)} the port "
                f"does not write; its columns are {', '.join(table.column_names)}\n  fix: partition by those columns"
            )
        txn = deltalake.Transaction(app_id=app_id, version=ctx.batch_id)
        try:
            deltalake.write_deltalake(
                self.path,
                table,
                mode="append",
                partition_by=list(self.partition_by) or None,
                commit_properties=deltalake.CommitProperties(app_transactions=[txn]),
            )
        except deltalake.exceptions.SchemaMismatchError as exc:
            raise SparkRunError(
                f"sink {ctx.port!r}: batch {ctx.batch_id} does not fit delta table {self.path}: {exc}\n"
                f"  the batch's columns: {table.schema}\n"
                "  fix: write to a new table, or make the port's element type match the table's columns"
            ) from exc
        return int(table.num_rows)

    def describe(self) -> str:
        return f"delta table {self.path}"


# ------------------------------------------------------------------ the plugin
class DeltaPort(PortPlugin):
    scheme = "delta"
    summary = "a Delta Lake table (delta-rs): new versions in, one transaction per batch id out"

    def _path(self, spec: PortSpec) -> str:
        path = spec.require_target("a table directory", "delta:/data/events")
        if "://" in path:
            raise spec.error(
                "delta: PATH must be a local directory", repr(path), "write the table to a local path (delta:/data/t)"
            )
        return path

    def source(self, spec: PortSpec) -> InputBinding:
        path = self._path(spec)
        spec.check_options(_SOURCE_OPTIONS)
        start = spec.option("startingVersion")
        if start is not None and start != "latest":
            spec.option_int("startingVersion", minimum=0)
        spec.option_int("maxVersionsPerTrigger", minimum=1)
        spec.option_bool("skipChangeCommits")
        spec.option_bool("waitForTable")
        return DeltaInput(path, dict(spec.options))

    def sink(self, spec: PortSpec) -> OutputBinding:
        path = self._path(spec)
        spec.check_options(("partitionBy",))
        parts = tuple(c.strip() for c in (spec.option("partitionBy") or "").split(",") if c.strip())
        return DeltaOutput(path, parts)
