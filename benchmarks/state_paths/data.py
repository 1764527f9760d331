"""The benchmark's inputs and expected answers: Parquet files generated once, read back with pandas."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

EVENTS, PUTS, GETS = "events", "put", "get"


def write_inputs(base: str, batches: int, rows: int, keys: int, gets: int, group: int | None = None) -> None:
    """`batches` files per input. Keys: the first `keys` rows (events and puts share them) visit
    every key once in a random order, later rows pick keys uniformly; gets pick keys uniformly.
    `group`: rows per Parquet row group (the unit Spark splits a file into partitions by)."""
    rng = np.random.default_rng(7)
    perm = rng.permutation(keys)
    for d in (EVENTS, PUTS, GETS):
        os.makedirs(os.path.join(base, d))
    t0 = time.time() - 10 * batches
    for b in range(batches):
        g = np.arange(b * rows, (b + 1) * rows, dtype=np.int64)
        idx = np.where(g < keys, perm[np.minimum(g, keys - 1)], rng.integers(0, keys, rows))
        key = pc.binary_join_element_wise("k", pa.array(idx).cast(pa.string()), "")
        gi = np.arange(b * gets, (b + 1) * gets, dtype=np.int64)
        tables = {
            EVENTS: pa.table({"key": key, "value": pa.array(g)}),
            PUTS: pa.table({"_1": _names("p", g), "_2": key, "_3": pa.array(rng.integers(0, 1 << 40, rows)), "seq": g}),
            GETS: pa.table({"_1": _names("g", gi), "_2": _names("k", rng.integers(0, keys, gets))}),
        }
        for d, table in tables.items():
            path = os.path.join(base, d, f"part-{b:06d}.parquet")
            pq.write_table(table, path, row_group_size=group)
            os.utime(path, (t0 + 10 * b, t0 + 10 * b))  # Spark's file source takes the oldest first


def write_batch_file(directory: str, b: int, table: pa.Table) -> None:
    """Micro-batch `b`'s input file in `directory` (made if missing), its modification time
    `b` seconds after a fixed start: Spark's file source takes the oldest file first, so with
    `maxFilesPerTrigger=1` batch `b` reads exactly this file."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"part-{b:05d}.parquet")
    pq.write_table(table, path)
    os.utime(path, (1_000_000 + b, 1_000_000 + b))


def _names(prefix: str, ints: Any) -> Any:
    return pc.binary_join_element_wise(prefix, pa.array(ints).cast(pa.string()), "")


def _read(base: str, d: str) -> pd.DataFrame:
    """One input as pandas with its batch number `b` (file i is micro-batch i)."""
    parts: list[pd.DataFrame] = []
    for i, f in enumerate(sorted(os.listdir(os.path.join(base, d)))):
        parts.append(pq.read_table(os.path.join(base, d, f)).to_pandas().assign(b=i))
    return pd.concat(parts, ignore_index=True)


def expected(base: str, kind: str) -> dict[str, pd.DataFrame]:
    """The answers every path must write, per batch, from the generated files."""
    if kind in ("count", "table"):
        ev = _read(base, EVENTS)
        per = ev.groupby(["b", "key"], sort=True).size().rename("n").reset_index()
        per["_2"] = per.groupby("key")["n"].cumsum()
        per = per.rename(columns={"b": "batch_id", "key": "_1"})[["batch_id", "_1", "_2"]]
        if kind == "table":  # every key counted so far, in every batch from then on
            per = pd.concat(
                [per[per.batch_id <= b].groupby("_1").tail(1).assign(batch_id=b) for b in sorted(ev.b.unique())]
            )
        return {"resp": per}
    puts, gets = _read(base, PUTS), _read(base, GETS)
    last = puts.sort_values("seq").groupby(["b", "_2"]).tail(1)[["b", "_2", "_3"]].sort_values("b")
    answers = pd.merge_asof(gets.sort_values("b"), last, on="b", by="_2", direction="backward")
    answers["_3"] = answers["_3"].astype("Int64")
    return {
        "resp": answers.rename(columns={"b": "batch_id"})[["batch_id", "_1", "_2", "_3"]],
        "acks": puts.rename(columns={"b": "batch_id"})[["batch_id", "_1", "_2"]],
    }


def _normal(df: pd.DataFrame) -> pd.DataFrame:
    """Numbers as nullable Int64, the rest as strings: one dtype per column whatever the reader chose."""
    out: pd.DataFrame = df.astype({c: "Int64" if pd.api.types.is_numeric_dtype(df[c]) else "string" for c in df})
    return out


def check(out: str, want: dict[str, pd.DataFrame]) -> str:
    """Compare each output directory (as a multiset of rows) with the expected answers; '' if equal."""
    bad = []
    for name, exp in want.items():
        table = ds.dataset(os.path.join(out, name), format="parquet", partitioning="hive").to_table()
        cols = list(exp.columns)
        g, e = (_normal(df[cols]).sort_values(cols, ignore_index=True) for df in (table.to_pandas(), exp))
        if not g.equals(e):
            diff = g.merge(e, how="outer", indicator=True).query("_merge != 'both'")
            bad.append(f"{name}: {len(g)} rows written, {len(e)} expected, {len(diff)} differ, e.g.\n{diff.head(4)}")
    return "\n".join(bad)
