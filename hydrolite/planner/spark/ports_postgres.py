"""PostgreSQL tables as sinks (`postgres:DSN?table=T`), through psycopg 3.

`--output port=postgres:postgresql://user@host:5432/db?table=orders[&upsert=true][&key=id]
[&progressTable=hydrolite_progress][&createTable=false][&sslmode=require ...]`

Each micro-batch is one database transaction: it inserts the progress row
`(query, batch_id)` into the progress table (`hydrolite_progress` by default; `query` is the
sink's id, `SinkCtx.sink_id()`) with `ON CONFLICT DO NOTHING`, and writes the batch's rows
only when that insert added the row. A batch that Spark replays after a crash finds its
progress row committed and writes nothing; a crash before the commit rolls back rows and
progress row together. So every batch is in the table exactly once.

Rows are the port's element layout (`port_api`): a keyed port's `key` and `value`, a
record's fields, else `value`. Plain rows are appended with `COPY`. With `upsert=true` a row
replaces the row with the same key (a keyed port's `key` column, or `key=col[,col]` for a
record port; the last element of the batch wins): the table needs a primary key or unique
constraint on those columns, which a table the sink creates has. `createTable=true` (the
default) creates the table when missing (the progress table is always created when missing). Options that are not the
sink's are libpq connection parameters (checked by psycopg). The batch passes through the
driver; the connection is kept between batches and reopened when it breaks.

Column types: int bigint, float double precision, str text, bool boolean, bytes bytea,
datetime timestamptz, date date, None boolean (always null), a list of those an array,
anything else jsonb (a pickled object: bytea).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import SparkRunError
from .port_api import OutputBinding, PortPlugin, PortSpec, PortSpecError, SinkCtx, collect_external, external_types
from .types import ListT, NoneT, OpaqueT, Prim, strip_optional
from .values import SFrame

_OWN_OPTIONS = ("table", "upsert", "key", "progressTable", "createTable")
_PRIM_SQL = {
    "int": "bigint",
    "float": "double precision",
    "str": "text",
    "bool": "boolean",
    "bytes": "bytea",
    "datetime": "timestamptz",
    "date": "date",
}


def _psycopg() -> Any:
    """The psycopg module, or an error saying how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise PortSpecError(
            "the postgres port needs psycopg 3, which is not installed\n"
            "  fix: pip install 'hydrolite[postgres]' (or pip install 'psycopg[binary]')"
        ) from exc
    return psycopg


def sql_type(t: Any) -> str:
    """The column type a value of HType t is stored as (see the module docstring)."""
    t = strip_optional(t)
    if isinstance(t, NoneT):
        return "boolean"
    if isinstance(t, OpaqueT):
        return "bytea"
    if isinstance(t, Prim):
        return _PRIM_SQL[t.py.__name__]
    if isinstance(t, ListT) and isinstance(strip_optional(t.item), Prim):
        return f"{sql_type(t.item)}[]"
    return "jsonb"


def _jsonable(x: Any) -> Any:
    """A collected Spark value (Rows, dicts, lists) as plain JSON data."""
    if hasattr(x, "asDict"):
        return {k: _jsonable(v) for k, v in x.asDict().items()}
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (bytes, bytearray)):
        return x.hex()
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return str(x)  # dates and times as ISO text


def safe_dsn(conninfo: str) -> str:
    """The connection string without its password (for messages)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = {k: v for k, v in conninfo_to_dict(conninfo).items() if k != "password" and v is not None}
    return make_conninfo("", **params)


@dataclass
class PostgresOutput(OutputBinding):
    """Writes each batch and its progress row in one transaction (see the module docstring)."""

    conninfo: str
    table: str
    upsert: bool = False
    key: tuple[str, ...] = ()
    progress_table: str = "hydrolite_progress"
    create: bool = True
    _conn: Any = field(default=None, repr=False, compare=False)
    _ready: bool = field(default=False, repr=False, compare=False)

    def describe(self) -> str:
        return f"postgres table {self.table} ({safe_dsn(self.conninfo)})"

    def _connection(self) -> Any:
        psycopg = _psycopg()
        if self._conn is None or self._conn.closed or self._conn.broken:
            try:
                self._conn = psycopg.connect(self.conninfo)
            except psycopg.OperationalError as exc:
                raise SparkRunError(
                    f"cannot connect to PostgreSQL at {safe_dsn(self.conninfo)}: {exc}\n"
                    "  fix: check the DSN, that the server runs, and the credentials (PGPASSWORD or ~/.pgpass)"
                ) from exc
        return self._conn

    def write(self, ctx: SinkCtx, sf: SFrame) -> int | None:
        psycopg = _psycopg()
        columns = [name for name, _ in external_types(sf.vt, sf.kt)]
        keys = self._keys(ctx, sf, columns)
        rows = [self._row(r, sf) for r in collect_external(sf)]  # (`_row` reads the layout's columns only)
        conn = self._connection()
        try:
            with conn.transaction(), conn.cursor() as cur:
                if not self._ready:
                    self._create(cur, sf, keys)
                cur.execute(
                    self._q("INSERT INTO {} (query, batch_id, rows) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", True),
                    (ctx.sink_id(), ctx.batch_id, len(rows)),
                )
                if cur.rowcount == 0:
                    return None  # committed by an earlier attempt of this batch: a replay, skipped
                if rows and keys:
                    self._upsert(cur, columns, keys, rows)
                elif rows:
                    with cur.copy(self._q(f"COPY {{}} ({self._cols(columns)}) FROM STDIN")) as copy:
                        for row in rows:
                            copy.write_row(row)
        except psycopg.Error as exc:
            raise SparkRunError(
                f"sink {ctx.port!r} ({self.describe()}): batch {ctx.batch_id} was not written (rolled back): "
                f"{type(exc).__name__}: {str(exc).strip()}\n  fix: make the table's columns match the port's "
                f"layout ({', '.join(f'{n} {sql_type(t)}' for n, t in external_types(sf.vt, sf.kt))})"
                + (", with a primary key or unique constraint on the key" if keys else "")
            ) from exc
        self._ready = True
        return len(rows)

    def _keys(self, ctx: SinkCtx, sf: SFrame, columns: Sequence[str]) -> tuple[str, ...]:
        if not self.upsert:
            return ()
        keys = self.key or (("key",) if sf.keyed else ())
        if not keys:
            raise SparkRunError(
                f"sink {ctx.port!r}: upsert=true needs the key column(s); the port is not keyed\n"
                f"  fix: add key=COLUMN (one of {', '.join(columns)}) to the spec"
            )
        bad = [k for k in keys if k not in columns]
        if bad:
            raise SparkRunError(
                f"sink {ctx.port!r}: key column(s) {', '.join(bad)} are not among the port's columns "
                f"{', '.join(columns)}\n  fix: name columns the port writes"
            )
        return keys

    def _row(self, r: Any, sf: SFrame) -> list[Any]:
        from psycopg.types.json import Jsonb

        out: list[Any] = []
        for (_, t), x in zip(external_types(sf.vt, sf.kt), r):
            kind = sql_type(t)
            out.append(Jsonb(_jsonable(x)) if kind == "jsonb" and x is not None else x)
        return out

    def _q(self, template: str, progress: bool = False) -> Any:
        """A statement with the (progress) table's name quoted into `{}`."""
        from psycopg import sql

        name = self.progress_table if progress else self.table
        return sql.SQL(template).format(sql.Identifier(*name.split(".")))

    def _cols(self, columns: Sequence[str]) -> str:
        return ", ".join(json.dumps(c) for c in columns)  # JSON quoting is SQL's "..." for these names

    def _create(self, cur: Any, sf: SFrame, keys: tuple[str, ...]) -> None:
        """The progress table when missing, and the data table too unless `createTable=false`."""
        defs = [f"{json.dumps(n)} {sql_type(t)}" for n, t in external_types(sf.vt, sf.kt)]
        if keys:
            defs.append(f"PRIMARY KEY ({self._cols(keys)})")
        if self.create:
            cur.execute(self._q(f"CREATE TABLE IF NOT EXISTS {{}} ({', '.join(defs)})"))
        cur.execute(
            self._q(
                "CREATE TABLE IF NOT EXISTS {} (query text NOT NULL, batch_id bigint NOT NULL, rows bigint, "
                "written_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (query, batch_id))",
                True,
            )
        )

    def _upsert(self, cur: Any, columns: Sequence[str], keys: tuple[str, ...], rows: list[list[Any]]) -> None:
        """Rows through a temporary table: the batch's last row per key replaces the table's."""
        cols, keycols = self._cols(columns), self._cols(keys)
        cur.execute(self._q("CREATE TEMP TABLE hydrolite_batch ON COMMIT DROP AS SELECT * FROM {} WITH NO DATA"))
        cur.execute("ALTER TABLE hydrolite_batch ADD COLUMN hydrolite_ord bigint")
        with cur.copy(f"COPY hydrolite_batch ({cols}, hydrolite_ord) FROM STDIN") as copy:
            for i, row in enumerate(rows):
                copy.write_row([*row, i])
        rest = [c for c in columns if c not in keys]
        update = (
            f"DO UPDATE SET {', '.join(f'{json.dumps(c)} = EXCLUDED.{json.dumps(c)}' for c in rest)}"
            if rest
            else "DO NOTHING"
        )
        cur.execute(
            self._q(
                f"INSERT INTO {{}} ({cols}) SELECT DISTINCT ON ({keycols}) {cols} FROM hydrolite_batch "
                f"ORDER BY {keycols}, hydrolite_ord DESC ON CONFLICT ({keycols}) {update}"
            )
        )


class PostgresPort(PortPlugin):
    scheme = "postgres"
    summary = "a PostgreSQL table (psycopg): rows and a (query, batch_id) progress row per transaction"

    def sink(self, spec: PortSpec) -> OutputBinding:
        dsn = spec.require_target("a connection string", "postgres:postgresql://user@localhost/db?table=events")
        table = spec.option("table")
        if not table or not all(part.strip() for part in table.split(".")):
            raise spec.error("postgres: needs ?table=NAME (or SCHEMA.NAME)", repr(table), "add ?table=events")
        progress = spec.option("progressTable", "hydrolite_progress") or "hydrolite_progress"
        key = tuple(c.strip() for c in (spec.option("key") or "").split(",") if c.strip())
        upsert = spec.option_bool("upsert")
        if key and not upsert:
            raise spec.error("postgres: key= is used by upsert=true only", f"key={','.join(key)}", "add upsert=true")
        extra = {k: v for k, v in spec.options.items() if k not in _OWN_OPTIONS}
        psycopg = _psycopg()
        from psycopg.conninfo import make_conninfo

        try:
            conninfo = make_conninfo(dsn, **extra)
        except psycopg.ProgrammingError as exc:
            raise spec.error(
                "postgres: the target is a libpq DSN and other options are libpq connection parameters",
                str(exc).strip(),
                f"the sink's own options are {', '.join(_OWN_OPTIONS)}; see PostgreSQL's connection parameters",
            ) from exc
        create = spec.option_bool("createTable", True)
        return PostgresOutput(conninfo, table, upsert, key, progress, create)
