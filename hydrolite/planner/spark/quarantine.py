"""Dead letters: the records of `?onBadRecord=quarantine:DIR` inputs, set aside per batch.

The strict reader (`strict_read.py`) keeps a rejected record in the batch, with the good
ones, as a row whose `_file.bad` says where it came from (file, 1-based line — a row for
Parquet —, raw text) and why. Before the tick body runs, the runtime calls
`divert_rejected`: it writes the batch's rejected records to `DIR/batch_id=N/` (JSON lines:
`port`, `file`, `line`, `reason`, `raw`; one file, sorted by port, file and line) and
counts them per port; `good_rows` is what the tick body then reads of such an input.

Exactly once: a batch's rows are fixed by Spark's offset log, so a replay of batch N after
a crash rejects the same records, and the directory is overwritten (`mode("overwrite")`).
A batch with nothing rejected writes nothing. The records of a batch held back
(`runtime._hold`) are diverted with the batch that read them, not again when it runs.
Inputs of one query that share a DIR share its `batch_id=N` directories; give inputs of
different queries different directories (their batch ids are counted separately).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .ports import FileInput, InputBinding
from .strict_read import read_options


def quarantine_dir(binding: InputBinding) -> str | None:
    """The dead-letter directory of an input bound with `?onBadRecord=quarantine:DIR`."""
    if not isinstance(binding, FileInput):
        return None
    return read_options("", binding.fmt, binding.options).quarantine


def good() -> Column:
    """The condition of a quarantining input's rows that passed the checks."""
    return F.col("_file.bad").isNull()


def good_rows(rows: DataFrame) -> DataFrame:
    """The rows of a quarantining input that passed the checks."""
    return rows.filter(good())


def _rejected(df: DataFrame, i: int, port: str) -> DataFrame:
    bad: Column = F.col("_file.bad")
    return df.filter((F.col("_src") == i) & bad.isNotNull()).select(
        F.lit(port).alias("port"),
        bad["file"].alias("file"),
        bad["line"].alias("line"),
        bad["reason"].alias("reason"),
        bad["raw"].alias("raw"),
    )


def divert_rejected(df: DataFrame, batch_id: int, inputs: Sequence[tuple[int, str, InputBinding]]) -> dict[str, int]:
    """Write the batch's rejected records of every quarantining input (`(position in the
    union, port, binding)`) to `DIR/batch_id=<batch_id>/`; their number per port.

    One Spark job counts them (on the persisted batch); a second writes them, only when
    there are any."""
    by_dir: dict[str, list[tuple[int, str]]] = {}
    for i, port, binding in inputs:
        target = quarantine_dir(binding)
        if target is not None:
            by_dir.setdefault(target, []).append((i, port))
    counts: dict[str, int] = {}
    for target, members in by_dir.items():
        parts = [_rejected(df, i, port) for i, port in members]
        bad = parts[0]
        for p in parts[1:]:
            bad = bad.unionByName(p)
        found = {r["port"]: int(r["count"]) for r in bad.groupBy("port").count().collect()}
        if found:
            out = os.path.join(target, f"batch_id={batch_id}")
            bad.coalesce(1).sortWithinPartitions("port", "file", "line").write.mode("overwrite").json(out)
        for _, port in members:
            counts[port] = found.get(port, 0)
    return counts
