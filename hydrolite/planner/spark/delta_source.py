"""Reading a Delta Lake table as a stream: Spark's Python Data Source API over delta-rs.

The offset is a table version (`{"version": v}`: every version up to `v` is read). A
micro-batch from offset `a` to `b` reads what versions `a+1 .. b` appended, one Spark
partition per version: the data files each version's commit (`_delta_log/<v>.json`, the
table's own record of the version) added with `dataChange: true`, read through delta-rs's
snapshot of that version (partition columns and column layout are delta-rs's business).
Files are read in commit order and rows in file order, so `_seq = (version << 32) + row`
is the table's append order and a replayed batch reads exactly the same rows.

A version that removed data (DELETE, UPDATE, MERGE, an overwrite) is not an append: the
batch fails saying which version and operation, unless `skipChangeCommits=true` skips such
versions whole. Compactions (`OPTIMIZE`: files rewritten with `dataChange: false`) add no rows.

Errors raised while a batch reads name the port and the version, not the table's path: the
runtime would take a message with an input's path for a type mismatch (`run_support.explain_failure`).

Rows are checked against the port's type: a null where the type is not optional fails
the batch with `BadDataError` (the column's types are checked once, before the query starts,
in `ports_delta.py`).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from .errors import BadDataError, SparkRunError
from .types import DictT, HType, ListT, NoneT, OptT, StructT

DELTA_FORMAT = "hydrolite_delta"


# ------------------------------------------------------------------ what a port's columns allow
def null_rule(t: HType) -> dict[str, Any]:
    """Where nulls are allowed in a column of type t, as JSON for the worker
    (`n`: this level may be null; `f` struct fields, `i` list items, `k` / `v` map keys / values)."""
    if isinstance(t, OptT):
        return {**null_rule(t.inner), "n": True}
    if isinstance(t, NoneT):
        return {"n": True}
    if isinstance(t, StructT):
        return {"n": False, "f": {n: null_rule(it) for n, it in zip(t.names, t.items)}, "t": t.describe()}
    if isinstance(t, ListT):
        return {"n": False, "i": null_rule(t.item), "t": t.describe()}
    if isinstance(t, DictT):
        return {"n": False, "k": null_rule(t.key), "v": null_rule(t.value), "t": t.describe()}
    return {"n": False, "t": t.describe()}


def first_null(arr: Any, rule: dict[str, Any], where: str) -> tuple[str, str] | None:
    """(column path, its type) of the first null the rule forbids in `arr` (valid parents only)."""
    if not rule.get("n") and arr.null_count:
        return where, str(rule.get("t", "?"))
    valid = arr.is_valid() if arr.null_count else None
    if "f" in rule:
        for name, sub in rule["f"].items():
            child = arr.field(name)
            found = first_null(child.filter(valid) if valid is not None else child, sub, f"{where}.{name}")
            if found:
                return found
    if "i" in rule:
        return first_null(arr.flatten(), rule["i"], f"{where}[]")
    if "k" in rule:
        return first_null(arr.keys, rule["k"], f"{where}{{key}}") or first_null(
            arr.items, rule["v"], f"{where}{{value}}"
        )
    return None


def encode_schema(schema: Any) -> str:
    """An Arrow schema as text for a data source option."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_schema(text: str) -> Any:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


# ------------------------------------------------------------------ the table's log
def commit_actions(path: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit of the table (`_delta_log/<version>.json`, JSON lines)."""
    log = os.path.join(path, "_delta_log", f"{version:020d}.json")
    try:
        with open(log, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError as exc:
        raise SparkRunError(  # the table's path stays out of errors raised while a batch reads (see run_support.explain_failure)
            f"delta table: the log entry of version {version} is gone (_delta_log/{version:020d}.json); "
            "the stream still needs it\n"
            "  fix: keep the log longer (the table property delta.logRetentionDuration), or start a new "
            "checkpoint with ?startingVersion=latest"
        ) from exc


def appended_files(path: str, version: int, skip_changes: bool, port: str) -> list[str]:
    """The data files version `version` appended (commit order), [] for a compaction.

    A version that removes data is not an append: an error, or [] with `skip_changes`."""
    actions = commit_actions(path, version)
    removes = [a["remove"] for a in actions if "remove" in a and a["remove"].get("dataChange", True)]
    adds = [a["add"] for a in actions if "add" in a and a["add"].get("dataChange", True)]
    if removes:
        if skip_changes:
            return []
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        op = info.get("operation", "a commit")
        raise SparkRunError(
            f"input {port!r}: version {version} of the delta table changed existing rows ({op}: "
            f"{len(removes)} file(s) removed); a Delta source reads appends only\n"
            "  fix: pass ?skipChangeCommits=true to skip such versions (their rows are not read), or "
            "read a table that is only appended to"
        )
    for add in adds:
        if add.get("deletionVector"):
            raise SparkRunError(
                f"input {port!r}: version {version} of the delta table adds a file with a deletion vector "
                "(not supported)\n  fix: disable deletion vectors on the table (delta.enableDeletionVectors=false)"
            )
    return [unquote(a["path"]) for a in adds]


# ------------------------------------------------------------------ the stream reader
class _Version(InputPartition):
    def __init__(self, version: int, files: list[str]) -> None:
        super().__init__(version)
        self.version = version
        self.files = files


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets `{"version": v}`; `maxVersionsPerTrigger` caps how many versions one batch takes."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.path = options["path"]
        self.port = options.get("port", "?")
        self.layout: dict[str, Any] = json.loads(options["layout"])
        self.arrow = decode_schema(options["arrowSchema"])
        self.start_after = int(options["startAfter"])
        self.skip_changes = options.get("skipChangeCommits", "false") == "true"
        cap = options.get("maxVersionsPerTrigger")
        self.max_versions = int(cap) if cap else None
        self.target: int | None = None

    def _latest(self) -> int:
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.path):
            return self.start_after  # ?waitForTable=true: nothing yet (checked before the start otherwise)
        return max(self.start_after, DeltaTable(self.path).version())

    def initialOffset(self) -> dict[str, int]:
        return {"version": self.start_after}

    def latestOffset(self, start: dict[Any, Any], limit: ReadLimit) -> dict[Any, Any]:
        end = self._latest()
        if self.target is not None:
            end = min(end, self.target)
        cap = limit.max_files if isinstance(limit, ReadMaxFiles) else self.max_versions
        if cap is not None and start:
            end = min(end, int(start["version"]) + cap)
        return {"version": end}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxFiles(self.max_versions) if self.max_versions else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._latest()

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Version]:
        return [
            _Version(v, appended_files(self.path, v, self.skip_changes, self.port))
            for v in range(int(start["version"]) + 1, int(end["version"]) + 1)
        ]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, _Version)
        table = self._rows(partition)
        yield from self._internal(table, partition.version).to_batches()

    def _rows(self, part: _Version) -> Any:
        """The rows the version appended, in the external layout (commit order, file order)."""
        from deltalake import DeltaTable

        if not part.files:
            return None
        dataset = DeltaTable(self.path, version=part.version).to_pyarrow_dataset()
        by_path = {unquote(f.path): f for f in dataset.get_fragments()}
        tables = []
        for name in part.files:
            fragment = by_path.get(name)
            if fragment is None:
                raise SparkRunError(
                    f"input {self.port!r}: delta table version {part.version}: the file {name} its "
                    "commit added is not in that version's snapshot"
                )
            tables.append(fragment.to_table(schema=dataset.schema))
        return pa.concat_tables(tables)

    def _internal(self, table: Any, version: int) -> Any:
        """`k`, `v`, `_seq` from the external columns, each checked for nulls its type forbids."""
        n = 0 if table is None else table.num_rows
        columns: dict[str, Any] = {}
        for name, rule in self.layout["columns"]:
            if table is not None and name in table.column_names:
                col = table.column(name).combine_chunks()
            else:  # an optional column the table does not have (checked before the start)
                col = pa.nulls(n)
            found = first_null(col, rule, name)
            if found is not None:
                row = _first_invalid_row(col) if found[0] == name else "?"
                raise BadDataError(
                    f"input {self.port!r}: version {version} of the delta table holds a null in {found[0]} "
                    f"(row {row} of the version), but its type {found[1]} is not optional\n"
                    f"  fix: declare it `{found[1]} | None`, or keep nulls out of the table"
                )
            columns[name] = col
        arrays: list[Any] = []
        for field in self.arrow:
            if field.name == "_seq":
                arrays.append(pa.array([(version << 32) + i for i in range(n)], type=pa.int64()))
            elif self.layout["kind"] == "fields" and field.name == "v":
                names = [c for c, _ in self.layout["columns"]]
                whole = pa.StructArray.from_arrays([columns[c] for c in names], names=names)
                arrays.append(whole.cast(field.type))
            else:
                source = {"k": "key", "v": "value"}[field.name]
                arrays.append(columns[source].cast(field.type))
        return pa.Table.from_arrays(arrays, schema=self.arrow)

    def commit(self, end: dict[str, int]) -> None:
        """The table is not ours: nothing to clean up."""


def _first_invalid_row(col: Any) -> int:
    mask = col.is_null().to_pylist()
    return int(mask.index(True)) if True in mask else -1


class DeltaDataSource(DataSource):
    """`spark.readStream.format("hydrolite_delta")` with the options `ports_delta.DeltaInput` sets."""

    @classmethod
    def name(cls) -> str:
        return DELTA_FORMAT

    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(self.options["schema"]))

    def streamReader(self, schema: StructType) -> DeltaStreamReader:
        return DeltaStreamReader(self.options)  # case-insensitive keys: kept as Spark gives them
