"""Runs with the whole checkpoint on S3 (moto's server through S3A), in a process of their own.

The S3A connector must be on the JVM's class path when the JVM starts, and the test session's
shared SparkSession has started without it: `test_s3a_checkpoint.py` runs this module as a
child process with its own session. Each scenario crashes a run mid-batch and resumes it with a
new runner that finds nothing but the bucket (as on another machine), then checks the answers,
replays every batch in the simulator (`verify_runner`) and prints one JSON line of figures.

    python -m tests.spark.s3a_runs ENDPOINT BUCKET WORKDIR
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from examples import kvstore
from hydrolite.planner.spark import ckfs
from hydrolite.planner.spark import lease as lease_mod
from hydrolite.planner.spark.faults import CrashOnce
from hydrolite.planner.spark.feed import FeedWriter, list_entries
from hydrolite.planner.spark.lock import CheckpointLock, CheckpointLockedError
from hydrolite.planner.spark.offsets import read_offset_log
from hydrolite.planner.spark.runtime import FlowRunner
from hydrolite.planner.spark.session import spark_session
from hydrolite.planner.spark.types import Prim
from hydrolite.planner.spark.verify import unread_entries, verify_runner
from tests.session_conf import INTERPRETED
from tests.spark.runs import channel_entries, json_batches, run_once
from tests.spark.s3_server import spark_conf
from tests.spark.test_executor_state import EXPECTED, _feeds, _responses
from tests.spark.test_plan import two_ticks


def _check(runner: FlowRunner) -> None:
    report = verify_runner(runner)
    assert report.identical and report.outputs > 0, str(report)


def until_crash(run: Callable[[], object], fault: CrashOnce) -> None:
    """Run until `fault` fires (the query raises it, wrapped by Spark); any other error, or
    none, fails the scenario."""
    try:
        run()
    except Exception:
        if not fault.fired:
            raise
        return
    raise AssertionError(f"no crash at {fault.point} of batch {fault.batch}")


def kvstore_crash(spark: Any, d: Path, ck: str, keyed_state: str, point: str) -> dict[str, Any]:
    """The key-value store crashes at `point` of batch 1, then resumes from the bucket."""
    d.mkdir(parents=True)

    def runner(fault: Any = None) -> FlowRunner:
        outs = {"get_response": f"json:{d / 'out'}", "put_ack": f"json:{d / 'acks'}"}
        return FlowRunner(
            kvstore.build(),
            spark=spark,
            checkpoint=ck,
            inputs=_feeds(d),
            outputs=outs,
            fault=fault,
            keyed_state=keyed_state,
        )

    t0 = time.perf_counter()
    fault = CrashOnce(point)
    until_crash(lambda: run_once(runner(fault)), fault)
    assert fault.fired == [1], fault.fired
    second = run_once(runner())
    assert second.resumed == {"tick0": 1}, second.resumed
    got = _responses(d)
    assert got == EXPECTED, got
    _check(second)
    return {"scenario": f"kvstore-{keyed_state}", "seconds": round(time.perf_counter() - t0, 1)}


def _mirrored(local: str) -> list[int]:
    return sorted(list_entries(local))


def channel_crash(spark: Any, d: Path, ck: str) -> dict[str, Any]:
    """Two queries joined by a channel (entries written to the bucket, read from the driver's
    mirror): the consumer crashes in its batch 2; a new runner copies into its mirror only the
    entries from that batch's start on, replays the batch and goes on, dropping from the
    mirror what the consumer is past: every element counted once, in the batches a run
    without the crash has."""
    d.mkdir(parents=True)
    x = FeedWriter(str(d / "x"), Prim(int))
    crash = CrashOnce("before_outputs", batch=2, query="tick1")

    def runner(fault: Any = None) -> FlowRunner:
        outs = {"counts": f"json:{d / 'counts'}", "doubled": f"json:{d / 'doubled'}"}
        return FlowRunner(
            two_ticks(), spark=spark, checkpoint=ck, inputs={"x": f"feed:{d / 'x'}"}, outputs=outs, fault=fault
        )

    t0 = time.perf_counter()
    first = runner(crash)
    first.start()

    def feed() -> None:
        for values in ([1, 2], [3]):
            x.send_many(values)
            first.process_all_available()

    try:
        until_crash(feed, crash)
    finally:
        first.stop()
    assert crash.fired == [2], crash.fired
    second = runner()  # a new, empty mirror, as on another machine
    mirrors = second.mirrors
    assert mirrors is not None
    (feed,) = mirrors.feeds.values()  # the channel (two_ticks defers nothing: no heartbeat)
    # only the entries from the crashed batch's start on are copied; where it starts depends
    # on how the two queries' batches fell (the producer's first batch may be empty): the log says
    (crashed,) = [t for t in read_offset_log(ck) if t.query == "tick1" and t.batch_id == 2]
    ((start, end),) = crashed.inputs.values()
    base = int(start["entries"]) if start else 0
    assert feed.base == base, (feed.base, crashed)
    second.start()
    try:
        copied = [e for e in channel_entries(ck) if base <= e < int(end["entries"])]
        assert _mirrored(feed.local) == copied, (_mirrored(feed.local), crashed)
        second.process_all_available()
        for values in ([4, 5], [6]):
            x.send_many(values)
            second.process_all_available()
        assert unread_entries(second) == [], unread_entries(second)
        # the mirror holds the entries from the consumer's last batch on (the highest at least):
        # older ones are gone from it, the bucket keeps them all (the test lists it)
        (consumer,) = [st for st in second.stages if st.stage.name == "tick1"]
        (name,) = [i.name for i in consumer.inputs]
        last = [t for t in read_offset_log(ck) if t.query == "tick1"][-1]
        start = last.inputs[name][0]
        written = channel_entries(ck)  # (the consumer has read them all)
        first_kept = min(int(start["entries"]) if start else 0, written[-1])
        kept = [e for e in written if e >= first_kept]
        assert _mirrored(feed.local) == kept, (last, _mirrored(feed.local))
        _check(second)
    finally:
        second.stop()
    assert mirrors.root is None  # stopping the runner removed its mirror
    counts = json_batches(d / "counts")  # one file per batch id with output, each written once
    assert [counts[b] for b in sorted(counts)] == [[2], [1], [2], [1]], counts
    doubled = sorted(v for rows in json_batches(d / "doubled").values() for v in rows)
    assert doubled == [2, 4, 6, 8, 10, 12], doubled
    (ch,) = second.plan.channels
    return {
        "scenario": "channel",
        "seconds": round(time.perf_counter() - t0, 1),
        "channel": ch.name,
        "entries": written,
    }


def lease(ck: str) -> dict[str, Any]:
    """The checkpoint's lease as an S3 object: a second runner of this host is refused while
    the first holds it, the holder renews it, and a release lets the next one take it."""
    t0 = time.perf_counter()
    lease_mod.RENEW_SECONDS = 0.5  # this process's leases renew every half second
    first = CheckpointLock(ck)
    try:
        CheckpointLock(ck)
        raise AssertionError("a second lock on a held checkpoint was granted")
    except CheckpointLockedError as e:
        assert "in use by another runner" in str(e), str(e)
    lease_path = ckfs.join(ck, "LOCK")
    assert ckfs._hadoop(ck).in_place  # S3A's streams are written in place: a rewrite is one PUT
    # read it over and over while it is renewed (rewritten) about 4 times: never missing, never
    # another holder's (a rename over it, a copy after a delete on S3A, once left a window)
    reads = []
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        reads.append(ckfs.read_text(lease_path))
    seen = [json.loads(r) if r is not None else None for r in reads]
    assert first.lease is not None
    token = first.lease.info["token"]
    assert all(s is not None and s["token"] == token for s in seen), seen
    renewals = [s["renewals"] for s in seen if s is not None]
    assert renewals == sorted(renewals) and renewals[-1] >= renewals[0] + 2, (len(reads), renewals)
    first.release()
    assert ckfs.read_text(lease_path) is None
    CheckpointLock(ck).release()
    return {"scenario": "lease", "seconds": round(time.perf_counter() - t0, 1), "reads": len(reads)}


def files(ck: str, workdir: Path) -> dict[str, Any]:
    """hydrolite's own files on S3A, written in place (one stream, visible at its close): a
    rewrite replaces them, the first writer wins, a large file streams both ways in chunks,
    and an upload that fails midway leaves nothing behind."""
    t0 = time.perf_counter()
    a = ckfs.join(ck, "q", "a.json")
    assert ckfs.write_atomic(a, "{}") and ckfs.write_atomic(a, "[1]")
    assert not ckfs.write_atomic(a, "[2]", overwrite=False) and ckfs.read_text(a) == "[1]"
    workdir.mkdir(parents=True, exist_ok=True)
    big = workdir / "big.bin"
    big.write_bytes(bytes(range(256)) * (3 << 14))  # 12 MiB: several chunks
    ckfs.upload_atomic(str(big), ckfs.join(ck, "q", "big.bin"))
    back = workdir / "back.bin"
    assert ckfs.download(ckfs.join(ck, "q", "big.bin"), str(back)) and back.read_bytes() == big.read_bytes()

    h = ckfs._hadoop(ck)
    out = h.create(h.path(ckfs.join(ck, "q", "torn.bin")), True)
    out.write(bytearray(b"half of it"))
    out.cancel()  # as upload_atomic does when its source fails midway
    assert ckfs.read_bytes(ckfs.join(ck, "q", "torn.bin")) is None
    assert sorted(ckfs.list_names(ckfs.join(ck, "q"))) == ["a.json", "big.bin"], ckfs.list_names(ckfs.join(ck, "q"))
    return {"scenario": "files", "seconds": round(time.perf_counter() - t0, 1)}


def main(endpoint: str, bucket: str, workdir: str) -> None:
    spark = spark_session("local[2]", {**spark_conf(endpoint), **INTERPRETED})
    d = Path(workdir)
    for result in (
        kvstore_crash(spark, d / "exec", f"s3a://{bucket}/exec", "executors", "before_outputs"),
        channel_crash(spark, d / "ch", f"s3a://{bucket}/ch"),
        lease(f"s3a://{bucket}/lease"),
        files(f"s3a://{bucket}/files", d / "files"),
    ):
        print(json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
