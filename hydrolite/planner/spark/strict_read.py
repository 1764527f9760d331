"""Strict file inputs on Spark: every record is checked against the port's type.

Spark's JSON and CSV readers coerce (`123` read as the string `"123"`), turn what they
cannot read into nulls, match CSV columns by position, and fail on a broken file with a JVM
stack trace. So hydrolite reads `json:` / `csv:` inputs as text instead — Spark's `text`
source, one row per line with its file and split start (`_metadata`) — and parses and
checks each line in Python, in an Arrow function (`records.FileParser`, `strict.py`). It
produces the columns Spark's reader produced (`k`, `v`, and `_file` for the arrival order,
see `ports.FileInput`), in the same order within each split.

Parquet files carry their own types, which Spark checks (a mismatch fails the read: see
`read_error_detail`); what it lets through is a null — or a missing column, read as nulls
— where the type is not optional, which a native expression catches (no Python) — in the
scan, or for the types footers decide, over the batch's files the footers cannot vouch
for (footer_check.py).

A bad record fails the batch with `BadDataError` (raised in the worker; the runtime adds
the port's declaring line, the batch and the query). With `?onBadRecord=quarantine:DIR`
it is kept instead in `_file.bad` (file, line, raw text, reason) and `quarantine.py`
writes it to `DIR/batch_id=N/`; the batch goes on without it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.readwriter import DataStreamReader

from .errors import BadDataError, SparkRunError
from .files import spark_options
from .ports import FileInput, external_schema
from .pyfn import ArrowFn, map_in_arrow
from .records import (
    DEFAULT_MAX_RECORD_BYTES,
    Bad,
    FileParser,
    ParseSpec,
    bad_record_message,
    local_path,
)
from .strict import Layout, time_zone
from .strict_csv import CsvDialect
from .types import DictT, HType, ListT, NoneT, OptT, StructT

Reader = DataFrameReader | DataStreamReader
BAD = T.StructType(
    [
        T.StructField(n, t, True)
        for n, t in (
            ("file", T.StringType()),
            ("line", T.LongType()),
            ("raw", T.StringType()),
            ("reason", T.StringType()),
        )
    ]
)
_BAD_ARROW = pa.struct([("file", pa.string()), ("line", pa.int64()), ("raw", pa.string()), ("reason", pa.string())])
FILE = T.StructType(
    [
        T.StructField("path", T.StringType(), True),
        T.StructField("start", T.LongType(), True),
        T.StructField("bad", BAD, True),
        # the file's modification time (microseconds): with `path`, its place in arrival order
        # where the batch's file list is not at hand (executor state, keyed_state.py)
        T.StructField("mtime", T.LongType(), True),
    ]
)


_MTIME = "unix_micros(_metadata.file_modification_time)"  # as microseconds (see FILE)


def _mtime() -> Column:
    """`_metadata.file_modification_time` as microseconds (see FILE)."""
    return F.expr(_MTIME)


# Spark's JSON / CSV options the strict parser does not implement (refused, never ignored)
_JSON_ONLY = {
    "primitivesasstring",
    "prefersdecimal",
    "allowcomments",
    "allowunquotedfieldnames",
    "allowsinglequotes",
    "allownumericleadingzeros",
    "allowbackslashescapinganycharacter",
    "columnnameofcorruptrecord",
    "dateformat",
    "timestampformat",
    "timestampntzformat",
    "enabledatetimeparsingfallback",
    "allowunquotedcontrolchars",
    "samplingratio",
    "dropfieldifallnull",
    "locale",
    "allownonnumericnumbers",
    "infertimestamp",
}
_CSV_ONLY = {
    "ignoreleadingwhitespace",
    "ignoretrailingwhitespace",
    "nanvalue",
    "positiveinf",
    "negativeinf",
    "dateformat",
    "timestampformat",
    "timestampntzformat",
    "enabledatetimeparsingfallback",
    "maxcolumns",
    "maxcharspercolumn",
    "columnnameofcorruptrecord",
    "chartoescapequoteescaping",
    "samplingratio",
    "emptyvalue",
    "locale",
    "unescapedquotehandling",
    "preferdate",
}
# what the strict parser reads itself (not passed to Spark's text source)
_PARSED = {
    "json": {"multiline", "encoding", "charset", "mode", "timezone"},
    "csv": {
        "header",
        "sep",
        "delimiter",
        "quote",
        "escape",
        "nullvalue",
        "comment",
        "encoding",
        "charset",
        "multiline",
        "mode",
        "timezone",
        "enforceschema",
        "inferschema",
    },
}


@dataclass(frozen=True)
class ReadOptions:
    """A file input's `?options`, split: hydrolite's own, the parser's, and Spark's."""

    quarantine: str | None = None  # onBadRecord=quarantine:DIR
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES
    parse: dict[str, str] = field(default_factory=dict)  # lower-cased names
    spark: dict[str, str] = field(default_factory=dict)


def read_options(port: str, fmt: str, options: dict[str, str]) -> ReadOptions:
    """Split and check an input's options (`SparkRunError` for an unusable one)."""
    quarantine: str | None = None
    max_bytes = DEFAULT_MAX_RECORD_BYTES
    parse: dict[str, str] = {}
    spark: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        if low == "onbadrecord":
            kind, _, target = value.partition(":")
            if kind == "fail" and not target:
                quarantine = None
            elif kind == "quarantine" and target:
                quarantine = target
            else:
                raise SparkRunError(
                    f"input {port!r}: onBadRecord={value!r} is not 'fail' or 'quarantine:DIR'\n  fix: ?onBadRecord=fail (the default) or ?onBadRecord=quarantine:/path/to/dead-letters"
                )
        elif low == "maxrecordbytes":
            if not value.isdigit() or int(value) <= 0:
                raise SparkRunError(f"input {port!r}: maxRecordBytes={value!r} is not a positive number of bytes")
            max_bytes = int(value)
        elif fmt in _PARSED and (low in _JSON_ONLY if fmt == "json" else low in _CSV_ONLY):
            raise SparkRunError(
                f"input {port!r}: the {fmt} option {key!r} is not supported: hydrolite parses and checks every record itself "
                f"(strict input)\n  fix: drop the option (hydrolite's text forms: see hydrolite.planner.spark.strict)"
            )
        elif fmt in _PARSED and low in _PARSED[fmt]:
            parse[low] = value
        else:
            spark[key] = value
    spark = spark_options(spark)  # without files.py's own options; temporary names skipped
    mode = parse.pop("mode", "FAILFAST")
    if mode.upper() != "FAILFAST":
        raise SparkRunError(
            f"input {port!r}: mode={mode} would drop or null out bad records silently\n  fix: ?onBadRecord=quarantine:DIR sets them aside (and counts them)"
        )
    return ReadOptions(quarantine, max_bytes, parse, spark)


def parse_spec(
    spark: SparkSession, binding: FileInput, port: str, vt: HType, kt: HType | None, ro: ReadOptions
) -> ParseSpec:
    """What the workers need to parse this input (checked here, on the driver)."""
    p = ro.parse
    enc = p.get("encoding", p.get("charset", "utf-8"))
    if enc.lower().replace("-", "").startswith(("utf16", "utf32")):
        raise SparkRunError(
            f"input {port!r}: encoding {enc} is not supported (lines are split on single bytes)\n  fix: convert the files to UTF-8"
        )
    tz = p.get("timezone") or spark.conf.get("spark.sql.session.timeZone") or "UTC"
    quote = p.get("quote", '"') or "\0"
    dialect = CsvDialect(
        sep=p.get("sep", p.get("delimiter", ",")),
        quote=quote,
        escape=p.get("escape", "\\"),
        null_value=p.get("nullvalue", ""),
        comment=p.get("comment", ""),
    )
    spec = ParseSpec(
        port,
        binding.fmt,
        vt,
        kt,
        tz,
        enc,
        ro.max_bytes,
        p.get("multiline", "false").lower() == "true",
        next((v for k, v in ro.spark.items() if k.lower() == "linesep"), None),
        p.get("header", "true").lower() == "true",
        dialect,
        ro.quarantine,
        binding.path,
    )
    try:
        "".encode(enc)
        time_zone(tz)
        FileParser(spec)  # builds the checkers: a type the format cannot hold fails here
    except (TypeError, ValueError, LookupError) as exc:
        fix = "bind it to json: or parquet: files" if binding.fmt == "csv" else "bind it to parquet: files"
        raise SparkRunError(
            f"input {port!r}: {binding.fmt} files cannot hold its elements ({exc})\n  fix: {fix}"
        ) from exc
    return spec


def file_schema(vt: HType, kt: HType | None) -> T.StructType:
    """The columns of a strict file input: `k`, `v`, `_file` (path, start, bad)."""
    cols = [T.StructField("k", kt.spark(), True)] if kt is not None else []
    return T.StructType([*cols, T.StructField("v", vt.spark(), True), T.StructField("_file", FILE, True)])


def read_input(
    spark: SparkSession,
    binding: FileInput,
    port: str,
    vt: HType,
    kt: HType | None,
    files: list[str] | None = None,
    located: bool = True,
    checked: bool = True,
) -> DataFrame:
    """The checked records of a file input: a stream of its directory, or (`files`, for
    verify-run) a batch read of some of its files. Columns `k`, `v`, `_file` (`file_schema`).

    Parquet without quarantine only: `located=False`, no `_file`, and the scan never reads
    Spark's file metadata (a bad record's file and row are found after the batch failed:
    `locate_bad_record`); `checked=False`, no null check in the scan (the runtime checks
    each batch's files from their footers: footer_check.py)."""
    ro = read_options(port, binding.fmt, binding.options)
    reader: Reader = spark.readStream if files is None else spark.read
    target: Any = binding.path if files is None else files
    if binding.fmt == "parquet":
        df = reader.schema(external_schema(vt, kt)).format("parquet").options(**ro.spark).load(target)
        if ro.quarantine is not None:
            located = checked = True
        return checked_parquet(df, port, vt, kt, ro.quarantine, located, checked)
    if binding.fmt not in _PARSED:
        raise SparkRunError(f"input {port!r}: unknown file format {binding.fmt!r}")
    spec = parse_spec(spark, binding, port, vt, kt, ro)
    text = reader.format("text").options(**ro.spark)
    if spec.multiline:
        text = text.option("wholetext", "true")
    lines = text.load(target).select(
        F.col("value").cast("binary").alias("raw"),
        F.col("_metadata.file_path").alias("path"),
        F.col("_metadata.file_block_start").alias("start"),
        _mtime().alias("mtime"),
    )
    return map_in_arrow(lines, parse_lines(spec), file_schema(vt, kt))


def parse_lines(spec: ParseSpec) -> ArrowFn:
    """The Arrow function: (raw, path, start, mtime) lines -> checked (k, v, _file) rows, in order."""
    vt_arrow, kt_arrow = spec.vt.arrow(), spec.kt.arrow() if spec.kt is not None else None

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        parser = FileParser(spec)
        for rb in batches:
            ks: list[Any] = []
            vs: list[Any] = []
            uris: list[str] = []
            starts: list[int] = []
            bads: list[dict[str, Any] | None] = []
            mtimes: list[int] = []
            columns = (rb.column(0).to_pylist(), rb.column(1).to_pylist(), rb.column(2).to_pylist())
            for (raw, uri, start), mtime in zip(zip(*columns), rb.column(3).to_pylist()):
                got = parser.document(uri, raw) if spec.multiline else [parser.line(uri, start, raw)]
                for one in got:
                    if one is None:
                        continue
                    if isinstance(one, Bad):
                        if spec.quarantine is None:
                            raise BadDataError(bad_record_message(spec, one))
                        ks.append(None)
                        vs.append(None)
                        bads.append({"file": one.file, "line": one.line, "raw": one.raw, "reason": one.reason})
                    else:
                        ks.append(one[0])
                        vs.append(one[1])
                        bads.append(None)
                    uris.append(uri)
                    starts.append(start)
                    mtimes.append(mtime)
            where = pa.StructArray.from_arrays(
                [
                    pa.array(uris, pa.string()),
                    pa.array(starts, pa.int64()),
                    pa.array(bads, _BAD_ARROW),
                    pa.array(mtimes, pa.int64()),
                ],
                names=["path", "start", "bad", "mtime"],
            )
            arrays = ([pa.array(ks, kt_arrow)] if kt_arrow is not None else []) + [pa.array(vs, vt_arrow), where]
            yield pa.RecordBatch.from_arrays(arrays, names=(["k"] if kt_arrow is not None else []) + ["v", "_file"])

    return run


# ------------------------------------------------------------------ Parquet
_MARK = "hydrolite: bad record in "


def unlocated_mark(port: str) -> str:
    """How the check of an input read without its file metadata starts its message."""
    return f"hydrolite: bad record of input {port!r}: "


def sql_str(text: str) -> str:
    """`text` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_name(name: str) -> str:
    """A column or field name, quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def internal_exprs(vt: HType, kt: HType | None) -> list[str]:
    """`ports.internal_columns` (`k` / `v` from the external layout) as SQL expressions, for
    one `selectExpr`: each Column function is a Py4J round trip, and a query's start builds
    these for every input.

    >>> from hydrolite.planner.spark.types import Prim
    >>> internal_exprs(Prim(int), Prim(str))
    ['`key` AS k', '`value` AS v']
    """
    if kt is not None:
        return ["`key` AS k", "`value` AS v"]
    if isinstance(vt, StructT):
        return [f"struct({', '.join(sql_name(n) for n in vt.names)}) AS v"]
    return ["`value` AS v"]


_FIELD = sql_str("field '")


def null_problem(c: str, t: HType, path: str, depth: int = 0) -> str | None:
    """A SQL expression: a string naming the first null (or missing column) of `c` where `t`
    is not optional, else null; None when nothing in `t` needs a check. `c` and `path` (the
    field's name for the message) are SQL expressions. SQL text, not Column calls: PySpark
    makes about a dozen Py4J round trips per Column function, and a record type needs dozens
    of functions (measured: the check cost 0.2 s of each query's start).

    >>> from hydrolite.planner.spark.types import Prim
    >>> null_problem("`n`", Prim(int), "'n'")
    "CASE WHEN `n` IS NULL THEN concat('field \\\\'', 'n', '\\\\': expected int, found null (or no such column)') END"
    """
    if isinstance(t, OptT):
        some = null_problem(c, t.inner, path, depth)
        return None if some is None else f"CASE WHEN {c} IS NOT NULL THEN {some} END"
    if isinstance(t, NoneT):
        found = sql_str("': expected None (null), found ")
        return f"CASE WHEN {c} IS NOT NULL THEN concat({_FIELD}, {path}, {found}, CAST({c} AS STRING)) END"
    expected = sql_str(f"': expected {t.describe()}, found null (or no such column)")
    msg = f"concat({_FIELD}, {path}, {expected})"
    inner: str | None = None
    if isinstance(t, StructT):
        parts = [
            p
            for n, it in zip(t.names, t.items)
            if (p := null_problem(f"{c}.{sql_name(n)}", it, f"concat({path}, {sql_str('.' + n)})", depth)) is not None
        ]
        inner = f"coalesce({', '.join(parts)})" if len(parts) > 1 else parts[0] if parts else None
    elif isinstance(t, ListT):
        x, i = f"_x{depth}", f"_i{depth}"
        item = null_problem(x, t.item, f"concat({path}, '[', CAST({i} AS STRING), ']')", depth + 1)
        inner = None if item is None else f"get(array_compact(transform({c}, ({x}, {i}) -> {item})), 0)"
    elif isinstance(t, DictT):
        e = f"_e{depth}"
        where = f"concat({path}, '[\\'', CAST({e}.key AS STRING), '\\']')"
        item = null_problem(f"{e}.value", t.value, where, depth + 1)
        inner = None if item is None else f"get(array_compact(transform(map_entries({c}), {e} -> {item})), 0)"
    return (
        f"CASE WHEN {c} IS NULL THEN {msg} END"
        if inner is None
        else f"CASE WHEN {c} IS NULL THEN {msg} ELSE {inner} END"
    )


def checked_parquet(
    df: DataFrame,
    port: str,
    vt: HType,
    kt: HType | None,
    quarantine: str | None,
    located: bool = True,
    checked: bool = True,
) -> DataFrame:
    """Parquet rows with a null where the type allows none: fail (`raise_error`), or keep
    them aside in `_file.bad` (quarantine). Columns `k`, `v`, and `_file` unless `located`
    is false (then the message names the input, not the file: see `locate_bad_record`);
    no check at all unless `checked` (footer_check.py checks the batch's files instead)."""
    layout = Layout.of(vt, kt)
    names = [sql_name(n) for n in layout.names]
    parts = [
        p
        for n, t in zip(layout.names, layout.types)
        if checked and (p := null_problem(sql_name(n), t, sql_str(n))) is not None
    ]
    problem = f"coalesce({', '.join(parts)})" if len(parts) > 1 else parts[0] if parts else None
    record = f"to_json(struct({', '.join(names)}))"
    if not located:
        # a streaming query builds the whole `_metadata` struct (path, name, size, block,
        # mtime) for every row once any field of it is referenced anywhere in its plan, even
        # when a later select drops it (seen in its physical plan): about a third of the scan
        if problem is not None:
            text = f"concat({sql_str(unlocated_mark(port))}, _m_problem, ' | record: ', {record})"
            df = df.selectExpr(*names, f"{problem} AS _m_problem").filter(
                F.expr(f"CASE WHEN _m_problem IS NULL THEN true ELSE CAST(raise_error({text}) AS BOOLEAN) END")
            )
        return df.selectExpr(*internal_exprs(vt, kt))
    # the file's fields as plain columns first: in a batch read (verify-run), the check reading
    # them through `_metadata` made Spark build that struct for every row (a third of the scan's time)
    df = df.selectExpr(
        *names,
        "_metadata.file_path AS _m_path",
        "_metadata.row_index + 1 AS _m_row",
        "_metadata.file_block_start AS _m_start",
        f"{_MTIME} AS _m_mtime",
        *([f"{problem} AS _m_problem"] if problem is not None else []),
    )
    bad = f"CAST(NULL AS {BAD.simpleString()})"
    if problem is not None and quarantine is not None:
        path = r"url_decode(regexp_replace(regexp_replace(_m_path, '\\+', '%2B'), '^file:(//)?', ''))"
        reason = f"named_struct('file', {path}, 'line', _m_row, 'raw', {record}, 'reason', _m_problem)"
        bad = f"CASE WHEN _m_problem IS NOT NULL THEN {reason} END"
    elif problem is not None:  # a filter: Spark never prunes it away
        text = f"concat({sql_str(_MARK)}, _m_path, ' row ', CAST(_m_row AS STRING), ': ', _m_problem, ' | record: ', {record})"
        df = df.filter(F.expr(f"CASE WHEN _m_problem IS NULL THEN true ELSE CAST(raise_error({text}) AS BOOLEAN) END"))
    where = f"named_struct('path', _m_path, 'start', _m_start, 'bad', {bad}, 'mtime', _m_mtime) AS _file"
    return df.selectExpr(*internal_exprs(vt, kt), where)


def unlocated(inputs: list[Any], live: set[int]) -> set[int]:
    """Which of a query's inputs (`InputSpec`s) to read without file metadata: Parquet ones
    whose `_file` (arrival order, quarantine) no reader needs, as their rows reach no `live`
    node of the tick (only the native aggregations read them)."""
    return {
        i for i, inp in enumerate(inputs) if plain_parquet(inp) and inp.node is not None and id(inp.node) not in live
    }


def plain_parquet(inp: Any) -> bool:
    """Whether an input (`InputSpec`) is a Parquet directory without quarantine: one whose
    records only fail the batch, so `read_input` may leave `_file` or the check out."""
    b = inp.binding
    return (
        isinstance(b, FileInput) and b.fmt == "parquet" and read_options(inp.name, b.fmt, b.options).quarantine is None
    )


def stream_input(spark: SparkSession, inp: Any, located: bool, checked: bool) -> DataFrame:
    """An input's (`InputSpec`) stream, `unlocated` or not, checked in the scan or not."""
    if located and checked:
        return inp.binding.stream(spark, inp.name, inp.vt, inp.kt)  # type: ignore[no-any-return]
    return read_input(spark, inp.binding, inp.name, inp.vt, inp.kt, located=located, checked=checked)


def locate_bad_record(spark: SparkSession, inp: Any, files: list[str]) -> str | None:
    """The error text of an `unlocated` input's check over a batch read of `files` (the
    batch's files of it), which names the bad record's file and row; None if none fails there."""
    if not files:
        return None
    try:
        read_input(spark, inp.binding, inp.name, inp.vt, inp.kt, files).write.format("noop").mode("overwrite").save()
    except Exception as exc:  # the check's own failure is the answer; the caller reads what else it says
        return str(exc)
    return None


# ------------------------------------------------------------------ Spark's own read errors
def read_error_detail(text: str, port: str, binding: FileInput) -> str | None:
    """A readable account (no Java frames) of a Spark error about one of this input's files:
    a null found by `checked_parquet`, a Parquet type mismatch, a file Spark cannot read."""
    m = re.search(r"BadDataError: (.*?)(?:\n\n|\n\tat |\nJVM stacktrace|\Z)", text, re.DOTALL)
    if m:  # raised by a worker (parse_lines): its message is complete
        return "\n  " + m.group(1).strip()
    fix = f"  fix: correct or remove the file, or set bad records aside with ?onBadRecord=quarantine:DIR on input {port!r}"
    m = re.search(re.escape(_MARK) + r"(\S+) row (\d+): (.*?) \| record: (.*?)(?: SQLSTATE: \w+|\n|$)", text)
    if m:
        path = local_path(m.group(1))
        return f"\n  {path}, row {m.group(2)}: {m.group(3)}{_columns_of(path)}\n  record: {m.group(4)}\n{fix}"
    m = re.search(re.escape(unlocated_mark(port)) + r"(.*?) \| record: (.*?)(?: SQLSTATE: \w+|\n|$)", text)
    if m:  # `locate_bad_record` did not find it again (the file changed since): the record itself
        return f"\n  a record of this batch's files: {m.group(1)}\n  record: {m.group(2)}\n{fix}"
    m = re.search(
        r"\[(FAILED_READ_FILE[.\w]*)\] Encountered error while reading file (\S+?)\.?\s+(.*?)\s*SQLSTATE",
        text,
        re.DOTALL,
    )
    if not m:
        return None
    path, rest = local_path(m.group(2)), " ".join(m.group(3).split())
    mm = re.search(r"Parquet column \[(.+?)\]\. Expected Spark type (\S+), actual Parquet type (\S+?)\.", rest)
    if mm:
        return f"\n  {path}: field {mm.group(1)!r}: expected {mm.group(2)}, found Parquet type {mm.group(3)}\n{fix}"
    causes = re.findall(r"Caused by: [\w.$]+: ([^\n]+)", text)
    cause = f": {causes[-1].strip()}" if causes else f" ({m.group(1)})"
    return f"\n  {path}: the file cannot be read{cause} {rest}".rstrip() + (
        f"\n  fix: replace or remove the file (or skip unreadable files: ?ignoreCorruptFiles=true on input {port!r})"
    )


def _columns_of(path: str) -> str:
    """` (the file's columns are ...)`: whether the null is a missing column shows at once."""
    try:
        import pyarrow.parquet as pq

        have = list(pq.read_schema(path).names)
    except (OSError, ValueError):  # not a local file, or unreadable: the null is all we know
        return ""
    return f" (the file's columns are {', '.join(have)})"
