"""The whole checkpoint on S3: Spark's offsets, commits and RocksDB state, hydrolite's files,
the lease and the channels' entries, all in a bucket of moto's
S3 server reached through Hadoop's S3A connector (`s3_server.py` says where the connector
comes from and what the server is not). The runs need a JVM with the connector on its class
path, so they run in a child process (`s3a_runs.py`) with its own SparkSession."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.s3_server import create_bucket, fetch, object_keys, s3_server

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def test_crashed_runs_resume_from_an_s3_bucket_alone(tmp_path: Path) -> None:
    """The key-value store (its state on the executors) and two queries joined by a channel each
    crash mid-batch and resume with a new runner: the answers of a run without a crash, every
    batch replayed identically by the simulator, nothing left unread; the lease refuses a second
    runner, is renewed and is released. (The driver's store
    writes its files through the same calls as hydrolite's other files here: its own crash
    tests run on `viewfs://`, test_hadoop_checkpoint.py.)"""
    fetch()  # the S3A connector's jars from PyPI, once (cached; a clear error when that fails)
    with s3_server() as endpoint:
        create_bucket(endpoint, "hydrolite-ck")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, "-m", "tests.spark.s3a_runs", endpoint, "hydrolite-ck", str(tmp_path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
        results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        assert [r["scenario"] for r in results] == ["kvstore-executors", "channel", "lease", "files"], proc.stdout
        keys = object_keys(endpoint, "hydrolite-ck")
    # everything is in the bucket: Spark's logs and state, hydrolite's own files, channel entries
    assert "exec/tick0/spark/commits/2" in keys and any(k.startswith("exec/tick0/spark/state/") for k in keys)
    assert "exec/plan.json" in keys and "exec/tick0/hydrolite.json" in keys
    # every entry: one per batch of the producer that read elements (four sends: four batches)
    channel, entries = results[1]["channel"], results[1]["entries"]
    assert len(entries) == 4, results[1]
    assert sorted(k for k in keys if k.startswith(f"ch/channels/{channel}/")) == [
        f"ch/channels/{channel}/{i:012d}.arrow" for i in entries
    ]
    assert not any(k.endswith("LOCK") for k in keys), [k for k in keys if "LOCK" in k]  # every lease released
    assert not any(n.startswith("s3a") for n in os.listdir(tmp_path))  # nothing written under the scheme's name
