"""Feed entries with gaps, the feed source's `base` and `embed`, and local mirrors of feeds on
a Hadoop file system (`feed_mirror.py`). Here the durable directory is a local one, which the
same code reads through the OS (tests/spark/test_feeds_hadoop.py runs it on `viewfs://`,
tests/spark/test_s3a_checkpoint.py on S3)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import LongType, StructField, StructType

from hydrolite.planner.spark.feed import FeedStreamReader, FeedWriter, arrow_bytes, entry_table, feed_end
from hydrolite.planner.spark.feed_mirror import FeedMirror, FeedMirrors, needed_from, read_entry, remote_entries
from hydrolite.planner.spark.types import Prim

SCHEMA = StructType([StructField("v", LongType()), StructField("_seq", LongType())])


def entry(values: list[int]) -> bytes:
    return arrow_bytes(entry_table(values, Prim(int)))


def names(d: str | Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if not n.startswith("."))


def rows(reader: FeedStreamReader, start: int, end: int) -> list[tuple[int, int]]:
    out = []
    for part in reader.partitions({"entries": start}, {"entries": end}):
        for batch in reader.read(part):
            out.extend(zip(batch.column("v").to_pylist(), batch.column("_seq").to_pylist()))
    return out


def test_needed_from_is_where_the_newest_logged_batch_started() -> None:
    assert needed_from(None, None, 0) == 0  # no offset log: everything
    assert needed_from([{"entries": 5}], None, 0) == 0  # only batch 0: from the start
    assert needed_from([{"entries": 5}, {"entries": 9}], [{"entries": 3}, {"entries": 7}], 1) == 7
    assert needed_from([{"entries": 5}], [None], 0) == 0  # the input had no offset yet
    assert needed_from([{"entries": 5}, None], [{"entries": 3}], 1) == 0  # an input added since


def test_a_feed_ends_past_its_highest_entry_and_a_gap_reads_as_nothing(tmp_path: Path) -> None:
    """A producer's batch that ran no tick writes no entry: the reader goes past the gap."""
    d = tmp_path / "feed"
    w = FeedWriter(str(d), Prim(int))
    assert feed_end(str(d)) == 0 and feed_end(str(d), base=4) == 4
    w.send_many([1, 2])
    (d / f"{2:012d}.arrow").write_bytes(entry([7]))  # entry 1 never written: a gap
    assert feed_end(str(d)) == 3
    assert w.send(8) == 3  # a writer appends after the highest entry, never into the gap
    reader = FeedStreamReader(str(d), SCHEMA)
    assert reader.latestOffset({"entries": 0}, ReadAllAvailable()) == {"entries": 4}
    assert rows(reader, 0, 4) == [(1, 0), (2, 1), (7, 2 << 32), (8, 3 << 32)]


def test_an_embedding_reader_carries_the_entries_bytes_and_reads_nothing_below_its_base(tmp_path: Path) -> None:
    d = tmp_path / "mirror"
    d.mkdir()
    for i in (3, 4):
        (d / f"{i:012d}.arrow").write_bytes(entry([i * 10, i * 10 + 1]))
    reader = FeedStreamReader(str(d), SCHEMA, base=3, embed=True)
    assert reader.latestOffset({"entries": 3}, ReadAllAvailable()) == {"entries": 5}
    parts = reader.partitions({"entries": 3}, {"entries": 5})
    shutil.rmtree(d)  # an executor on another machine has no such directory: the bytes travel
    got = [
        (v, s) for p in parts for b in reader.read(p) for v, s in zip(b.column("v").to_pylist(), b["_seq"].to_pylist())
    ]
    assert got == [(30, 3 << 32), (31, (3 << 32) + 1), (40, 4 << 32), (41, (4 << 32) + 1)]
    d.mkdir()
    with pytest.raises(FileNotFoundError, match="entry 1 is below 3"):
        reader.partitions({"entries": 1}, {"entries": 3})


def test_an_entry_is_written_once_and_the_mirror_holds_the_durable_copy(tmp_path: Path) -> None:
    mirror = FeedMirror(str(tmp_path / "durable"), str(tmp_path / "local"))
    assert mirror.write(0, lambda: entry([1]))
    calls: list[int] = []

    def again() -> bytes:
        calls.append(1)
        return entry([99])

    assert not mirror.write(0, again)  # a replay: the durable entry is kept, nothing recomputed
    assert calls == []
    for where in ("durable", "local"):
        table = pa.ipc.open_file(pa.py_buffer((tmp_path / where / f"{0:012d}.arrow").read_bytes())).read_all()
        assert table.column("v").to_pylist() == [1]
    assert mirror.append(entry([])) == 1 and names(tmp_path / "local") == [f"{i:012d}.arrow" for i in (0, 1)]


def test_a_new_mirror_copies_only_the_entries_from_its_base(tmp_path: Path) -> None:
    """A runner started elsewhere: its empty mirror gets what its queries may still read."""
    durable = str(tmp_path / "durable")
    first = FeedMirror(durable, str(tmp_path / "first"))
    for i in range(5):
        first.write(i, lambda i=i: entry([i]))
    (tmp_path / "durable" / "junk.tmp").write_text("left by an interrupted write")
    second = FeedMirror(durable, str(tmp_path / "second"))
    second.want_from(3, "q1")
    second.want_from(2, "q2")  # another reader of the feed is further behind: the lower base wins
    assert second.sync() == 3 and names(second.local) == [f"{i:012d}.arrow" for i in (2, 3, 4)]
    assert second.sync() == 0  # nothing new
    assert second.append(entry([])) == 5
    assert list(remote_entries(durable)) == [0, 1, 2, 3, 4, 5]


def test_the_mirror_drops_what_every_reader_is_past_and_keeps_the_highest(tmp_path: Path) -> None:
    """Two queries read the feed; an entry leaves the mirror once both run batches starting
    past it (the URI keeps every entry), and the highest stays: the feed's offset is one past it."""
    durable = str(tmp_path / "durable")
    mirror = FeedMirror(durable, str(tmp_path / "local"))
    mirror.want_from(0, "q1")
    mirror.want_from(0, "q2")
    for i in range(4):
        mirror.write(i, lambda i=i: entry([i]))
    assert mirror.advance("q1", 3) == 0  # q2 may still read from entry 0
    assert mirror.advance("q2", 2) == 2 and names(mirror.local) == [f"{i:012d}.arrow" for i in (2, 3)]
    assert mirror.advance("q2", 1) == 0  # a reader never goes back: an older start changes nothing
    assert mirror.advance("q2", 4) == 1 and names(mirror.local) == [f"{3:012d}.arrow"]  # q1 is at 3
    assert mirror.advance("q1", 4) == 0 and names(mirror.local) == [f"{3:012d}.arrow"]  # the highest stays
    assert feed_end(mirror.local, 0) == 4 and mirror.append(entry([9])) == 4  # offsets go on from it
    reader = FeedStreamReader(mirror.local, SCHEMA, embed=True)
    assert rows(reader, 4, 5) == [(9, 4 << 32)]  # `_seq`: the entry's index, then the element's
    assert list(remote_entries(durable)) == [0, 1, 2, 3, 4]  # the durable copy keeps the history


def test_the_runners_mirrors_advance_per_query_and_input(tmp_path: Path) -> None:
    """`FeedMirrors.advance` maps a batch's start offsets to the mirrored feeds among its inputs."""
    mirrors = FeedMirrors()
    try:
        feed = mirrors.get(str(tmp_path / "channel"))
        feed.want_from(0, "q")
        for i in range(3):
            feed.write(i, lambda i=i: entry([i]))
        own = type("Input", (), {"binding": type("B", (), {"options": {"path": "/x"}})()})()
        mirrored = type("Input", (), {"binding": type("B", (), {"options": {"durable": feed.uri}})()})()
        assert mirrors.advance("q", [own, mirrored], [{"logOffset": 7}, {"entries": 2}]) == 2
        assert names(feed.local) == [f"{2:012d}.arrow"]
        assert mirrors.advance("q", [own, mirrored], [None, None]) == 0  # the first batch starts at 0
    finally:
        mirrors.close()


def test_a_parquet_entry_of_a_run_by_local_path_is_mirrored_and_read(tmp_path: Path) -> None:
    """The same checkpoint first run by its local path (a channel entry is then a Parquet
    directory Spark wrote), then through a URI."""
    durable = tmp_path / "durable"
    part = durable / f"{0:012d}.parquet"
    part.mkdir(parents=True)
    pq.write_table(pa.table({"v": [5, 6]}), part / "part-00000.snappy.parquet")
    (part / "_SUCCESS").write_text("")
    assert read_entry(str(durable), part.name).column("v").to_pylist() == [5, 6]
    mirror = FeedMirror(str(durable), str(tmp_path / "local"))
    assert mirror.sync() == 1
    reader = FeedStreamReader(mirror.local, SCHEMA, embed=True)
    assert rows(reader, 0, 1) == [(5, 0), (6, 1)]


def test_a_runners_mirrors_share_one_directory_removed_when_it_stops(tmp_path: Path) -> None:
    mirrors = FeedMirrors()
    a, b = mirrors.get(str(tmp_path / "a")), mirrors.get(str(tmp_path / "b"))
    assert mirrors.get(str(tmp_path / "a")) is a and a.local != b.local
    root = mirrors.root
    assert root is not None and os.path.dirname(a.local) == root
    mirrors.close()
    assert not os.path.exists(root) and mirrors.feeds == {}


def test_a_column_an_entry_lacks_reads_as_nulls_of_its_type(tmp_path: Path) -> None:
    """A keyed singleton's delta channel is read with a `gone` (tombstone) column; an entry
    written without it (no filter on the way, or by an earlier hydrolite) reads it as boolean
    nulls, which Spark's check of the reader's schema accepts (untyped nulls it refuses)."""
    from pyspark.sql.types import BooleanType

    FeedWriter(str(tmp_path), Prim(int)).send_many([5, 6])
    schema = StructType(
        [StructField("v", LongType()), StructField("gone", BooleanType()), StructField("_seq", LongType())]
    )
    reader = FeedStreamReader(str(tmp_path), schema)
    (part,) = reader.partitions({"entries": 0}, {"entries": 1})
    (batch,) = list(reader.read(part))
    assert batch.schema.field("gone").type == pa.bool_()
    assert batch.column("gone").to_pylist() == [None, None]
    assert batch.column("v").to_pylist() == [5, 6]
