"""`demux_by_key()`'s routing as a Spark expression: no Python worker per element.

`hydrolite.locations.sharding.member_of_key` is the reference: a key's canonical bytes (a
type tag, a 4-byte big-endian length, the value), SHA-256, the first 60 bits modulo the
member count. For keys of type int, str, bool, bytes and None, and tuples of those, Spark
builds the same bytes from the key's column (`encode`, `concat`, a hex-padded length) and
takes the same digest (`sha2`, `conv`, `pmod`), so a key lands on the same member in the
simulator, in a Python worker and in this expression (tests/spark/test_routing.py checks
them against each other on generated keys). Other key types (floats: Spark prints them
differently from `repr`; dataclasses, enums, member ids) raise `NotTranslatable`, and the
route runs in Python (`cluster_fns.Owner`) as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...locations.sharding import HASH_HEX_DIGITS
from .lambdas import INT, NotTranslatable, TExpr
from .types import HType, NoneT, Prim, TupleT


def _const(b: bytes) -> Column:
    return F.unhex(F.lit(b.hex()))


def _framed(tag: bytes, data: Column) -> Column:
    """tag, len(data) as 4 big-endian bytes, data (`sharding._put`)."""
    return F.concat(_const(tag), F.unhex(F.lpad(F.hex(F.octet_length(data)), 8, "0")), data)


def _null() -> Column:
    return _framed(b"N", _const(b""))


def key_bytes(col: Column, t: HType) -> Column:
    """The canonical bytes (`sharding.key_bytes`) of the keys in `col`, of type `t`."""
    if isinstance(t, NoneT):
        return _null()
    if isinstance(t, TupleT):
        data = F.concat(*(key_bytes(col.getField(name), item) for name, item in zip(t.names, t.items)))
        enc = _framed(b"T", data if t.items else _const(b""))
    elif isinstance(t, Prim) and t.py is bool:
        enc = _framed(b"B", F.encode(F.when(col, F.lit("1")).otherwise(F.lit("0")), "UTF-8"))
    elif isinstance(t, Prim) and t.py is int:
        enc = _framed(b"I", F.encode(col.cast("string"), "UTF-8"))
    elif isinstance(t, Prim) and t.py is str:
        enc = _framed(b"S", F.encode(col, "UTF-8"))
    elif isinstance(t, Prim) and t.py is bytes:
        enc = _framed(b"Y", col)
    else:
        raise NotTranslatable(f"demux_by_key() routes keys of type {t.describe()} in Python")
    return F.when(col.isNull(), _null()).otherwise(enc)  # Python sees None there, encoded as such


def owner_of_key(col: Column, t: HType, members: int) -> Column:
    """The owning member's index (a long), as `sharding.member_of_key` computes it."""
    digest = F.substring(F.sha2(key_bytes(col, t), 256), 1, HASH_HEX_DIGITS)
    return F.pmod(F.conv(digest, 16, 10).cast("long"), F.lit(members))


def owner_column(args: Sequence[TExpr], members: int, from_cluster: bool) -> TExpr:
    """`cluster_fns.Owner` / `OwnerFrom` natively: (k, v) or ((sender, k), v) -> ((owner, k), v)."""
    (e,) = args
    if not isinstance(e.t, TupleT) or len(e.t.items) != 2:
        raise NotTranslatable(f"demux_by_key() of elements typed {e.t.describe()}")
    kt, vt = e.t.items
    k = e.col.getField("_1")
    if from_cluster:
        if not isinstance(kt, TupleT) or len(kt.items) != 2:
            raise NotTranslatable(f"demux_by_key() from a cluster of keys typed {kt.describe()}")
        k, kt = k.getField("_2"), kt.items[1]
    owned = F.struct(owner_of_key(k, kt, members).alias("_1"), k.alias("_2"))
    return TExpr(F.struct(owned.alias("_1"), e.col.getField("_2").alias("_2")), TupleT((TupleT((INT, kt)), vt)))
