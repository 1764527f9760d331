"""Which member of a cluster owns a key: `KeyedStream.demux_by_key`'s routing.

The simulator and Spark (the driver and every Python worker on every executor) must route a
key to the same member, run after run, so Python's `hash()` will not do (salted per process
for strings). A key is encoded to bytes canonically — its type tag and value, tuples and
frozen dataclasses field by field — and the member is the first 60 bits of the SHA-256
digest of those bytes, modulo the number of members. Spark computes the same with its own
functions for the common key types (`planner/spark/routing.py`), so routing needs no Python
worker there. Keys of any other type fail with a message saying which types route the same
everywhere.

>>> member_of_key("apple", 3), member_of_key("apple", 3) == member_of_key("apple", 3)
(0, True)
>>> member_of_key(("user", 7), 4)
3
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from typing import Any

from .locations import MemberId

#: how many hex digits of the SHA-256 digest make the route (60 bits: a Spark long, and
#: what `conv(substr(sha2(bytes, 256), 1, 15), 16, 10)` reads there)
HASH_HEX_DIGITS = 15
KEY_TYPES = "ints, strs, bytes, floats, bools, None, MemberIds, enums, and tuples or frozen dataclasses of those"


def key_bytes(key: Any) -> bytes:
    """The canonical encoding of a key (the same in every process and Python run)."""
    out = bytearray()
    _encode(key, out)
    return bytes(out)


def _put(out: bytearray, tag: bytes, data: bytes) -> None:
    """Tag, length, data: no two keys share an encoding."""
    out += tag
    out += len(data).to_bytes(4, "big")
    out += data


def _encode(x: Any, out: bytearray) -> None:
    if x is None:
        _put(out, b"N", b"")
    elif isinstance(x, bool):  # before int: True is an int
        _put(out, b"B", b"1" if x else b"0")
    elif isinstance(x, enum.Enum):
        _put(out, b"E", f"{type(x).__module__}.{type(x).__qualname__}.{x.name}".encode())
    elif isinstance(x, int):
        _put(out, b"I", str(x).encode())
    elif isinstance(x, float):
        _put(out, b"F", repr(x).encode())
    elif isinstance(x, str):
        _put(out, b"S", x.encode("utf-8", "surrogatepass"))
    elif isinstance(x, bytes):
        _put(out, b"Y", x)
    elif isinstance(x, MemberId):
        _put(out, b"M", str(x.raw).encode())
    elif isinstance(x, tuple):
        _put(out, b"T", _encode_all(b"", x))
    elif dataclasses.is_dataclass(x) and not isinstance(x, type) and type(x).__dataclass_params__.frozen:  # type: ignore[attr-defined]
        name = f"{type(x).__module__}.{type(x).__qualname__}".encode()
        _put(out, b"D", _encode_all(name, [getattr(x, f.name) for f in dataclasses.fields(x)]))
    else:
        raise TypeError(
            f"demux_by_key() cannot route a key of type {type(x).__name__} ({x!r}): a key must encode the same "
            f"in every process, so it must be one of {KEY_TYPES}; map() the key to one of those first"
        )


def _encode_all(head: bytes, items: Any) -> bytes:
    out = bytearray(head)
    for item in items:
        _encode(item, out)
    return bytes(out)


def member_of_key(key: Any, members: int) -> int:
    """The index (0 .. members-1) of the member that owns `key` in a cluster of `members`."""
    if members < 1:
        raise ValueError(f"a cluster needs at least one member to route key {key!r} to, found {members}")
    digest = hashlib.sha256(key_bytes(key)).hexdigest()
    return int(digest[:HASH_HEX_DIGITS], 16) % members
