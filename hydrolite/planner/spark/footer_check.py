"""The null check of a Parquet input, from its files' footers instead of in the scan.

A Parquet file carries its own types, which Spark's reader checks; what it lets through is a
null (or a missing column, read as nulls) where the port's type allows none. The check in
the scan (`strict_read.checked_parquet`) costs every batch: the scan reads columns the
program may not need (a per-key count needs only the key), and the check's expression adds
~20 ms of query planning per micro-batch (measured on the running count, 1M keys).

For a type whose nulls the footers can decide, the runtime reads no check in the streaming
plan and checks each batch's files before the batch computes anything instead: every
row group's `null_count` of each column that must not be null is 0 (or the column is
`required`), and a column that must be null (`None`) holds only nulls or is absent. When a
footer cannot show it — a null found, statistics absent, a column missing or named in
another case, a file that is not local — the same check runs as a batch read of those files
(`strict_read.read_input` with `files`), which fails naming the file, the row and the field,
as the in-scan check does; a batch is never let through unproven.

Types the footers decide (`footer_rules`): primitives, `None`, `Optional[...]` of a
primitive, and records / tuples whose fields are (recursively) non-optional primitives or
records. A list, a dict, or a record with an optional field keeps the in-scan check.

    >>> from hydrolite.planner.spark.types import Prim, TupleT
    >>> footer_rules(Prim(int), Prim(str))
    {'key': 'no nulls', 'value': 'no nulls'}
    >>> footer_rules(TupleT((Prim(int), Prim(str))), None)
    {'_1': 'no nulls', '_2': 'no nulls'}
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .remap import local_path
from .strict import Layout
from .types import HType, NoneT, OptT, Prim, StructT

NO_NULLS = "no nulls"
ONLY_NULLS = "only nulls"


def footer_rules(vt: HType, kt: HType | None) -> dict[str, str] | None:
    """Parquet leaf column path -> what its values must be (`NO_NULLS` / `ONLY_NULLS`), for
    an element of these types; None when the footers cannot decide it (see the module)."""
    layout = Layout.of(vt, kt)
    rules: dict[str, str] = {}
    for name, t in zip(layout.names, layout.types):
        if not _leaves(name, t, rules, top=True):
            return None
    return rules


def _leaves(path: str, t: HType, rules: dict[str, str], top: bool) -> bool:
    if isinstance(t, Prim):
        rules[path] = NO_NULLS
        return True
    if isinstance(t, NoneT) and top:
        rules[path] = ONLY_NULLS
        return True
    if isinstance(t, OptT) and top:
        return isinstance(t.inner, Prim)  # no rule: any value or null
    if isinstance(t, StructT):
        # a record is present iff its leaves are: with every field required, a null leaf is
        # exactly a missing field or a missing record
        return all(_leaves(f"{path}.{n}", it, rules, top=False) for n, it in zip(t.names, t.items))
    return False


def footer_checked(inputs: list[Any]) -> dict[int, dict[str, str]]:
    """A query's inputs (`InputSpec`s) to null-check from footers -> their rules: local
    Parquet directories without quarantine, of a type the footers decide."""
    from .strict_read import plain_parquet

    out: dict[int, dict[str, str]] = {}
    for i, inp in enumerate(inputs):
        if plain_parquet(inp) and urlsplit(inp.binding.path).scheme in ("", "file"):
            rules = footer_rules(inp.vt, inp.kt)
            if rules is not None:
                out[i] = rules
    return out


def footer_shows(uri: str, rules: dict[str, str]) -> bool:
    """Whether this file's footer shows that its rows keep `rules`; False also when it cannot
    tell (not a local file, no statistics, a column missing or named differently)."""
    if urlsplit(uri).scheme not in ("", "file"):
        return False
    import pyarrow.parquet as pq

    try:
        md = pq.read_metadata(local_path(uri))
    except (OSError, ValueError):  # unreadable here: Spark's read reports it
        return False
    columns = {md.schema.column(j).path: j for j in range(md.num_columns)}
    folded = {p.lower() for p in columns}
    for path, rule in rules.items():
        j = columns.get(path)
        if j is None:  # absent: read as nulls (Spark may also match it in another case)
            if rule == ONLY_NULLS and path.lower() not in folded:
                continue
            return False
        if rule == NO_NULLS and md.schema.column(j).max_definition_level == 0:
            continue  # `required`: the file cannot hold a null there
        for r in range(md.num_row_groups):
            group = md.row_group(r)
            stats = group.column(j).statistics
            if stats is None or not stats.has_null_count:
                return False
            want = 0 if rule == NO_NULLS else group.num_rows
            if stats.null_count != want:
                return False
    return True


def check_files(spark: Any, inp: Any, rules: dict[str, str], uris: list[str]) -> None:
    """Check one batch's files of a footer-checked input (`InputSpec`): those whose footers
    do not show the rules are read with the in-scan check, which raises on a bad record
    (naming its file and row) before the batch computes anything."""
    from .strict_read import read_input

    unshown = [u for u in uris if not footer_shows(u, rules)]
    if unshown:
        checked = read_input(spark, inp.binding, inp.name, inp.vt, inp.kt, unshown)
        checked.write.format("noop").mode("overwrite").save()
