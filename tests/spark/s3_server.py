"""An S3 endpoint for the tests: moto's S3 server on loopback, reached through Hadoop's S3A.

pyspark ships Hadoop's client but not its S3A connector, and this machine reaches no Maven
repository: the connector comes from PyPI instead, as the two jars bundled in the
`sagemaker_pyspark` 1.4.5 source archive (hadoop-aws 3.3.1 and the AWS SDK v1 bundle it was
built against), fetched once by the test that needs them (or by hand), checked by digest and
cached in ~/.cache/hydrolite/s3a:

    python -m tests.spark.s3_server --fetch

The server is moto's (`moto[server]`, a dev dependency): an S3 API over HTTP, objects kept in
its memory. It is not Amazon S3 (no latency, no throttling, strongly consistent listings),
but every byte goes through S3A's object-store semantics: no directories, no rename (copy then
delete), create-if-absent checked by a HEAD before the PUT.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.spark.pg_server import free_port

ARCHIVE = (
    "https://files.pythonhosted.org/packages/df/37/88e683fd29270ca890b1b889466325be5461abb93d5ea055bc3a505d40a8/"
    "sagemaker_pyspark-1.4.5.tar.gz"
)
#: jar name -> sha256 of the jar as the archive holds it
JARS = {
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
    "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead",
}
ACCESS, SECRET = "hydrolite-test", "hydrolite-test-secret"


def jar_dir() -> Path:
    """Where the connector's jars are kept: `HYDROLITE_S3A_JARS`, or ~/.cache/hydrolite/s3a."""
    given = os.environ.get("HYDROLITE_S3A_JARS")
    return Path(given) if given else Path.home() / ".cache" / "hydrolite" / "s3a"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def jars() -> list[str]:
    """The connector's jars, checked; an error saying how to get them when they are missing."""
    d = jar_dir()
    paths = [d / name for name in JARS]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise RuntimeError(
            f"the S3A connector's jars are not in {d} (missing {', '.join(missing)})\n"
            "  fix: python -m tests.spark.s3_server --fetch (the test fetches them itself)"
        )
    return [str(p) for p in paths]


def fetch() -> list[str]:
    """Download the archive, keep only the two jars (streamed: the archive is 181 MB and is
    never stored), check their digests, and move them into `jar_dir()` whole."""
    d = jar_dir()
    d.mkdir(parents=True, exist_ok=True)
    if all((d / name).is_file() and _digest(d / name) == sha for name, sha in JARS.items()):
        return jars()
    try:
        _extract(d)
    except OSError as e:
        raise RuntimeError(
            f"could not fetch the S3A connector's jars from {ARCHIVE}: {e}\n"
            f"  fix: put {' and '.join(JARS)} in a directory and set HYDROLITE_S3A_JARS to it"
        ) from e
    return jars()


def _extract(d: Path) -> None:
    with urllib.request.urlopen(ARCHIVE, timeout=120) as response, tarfile.open(fileobj=response, mode="r|gz") as tar:
        for member in tar:
            name = member.name.rsplit("/", 1)[-1]
            if name not in JARS or not member.isfile():
                continue
            part = d / f"{name}.part"
            source = tar.extractfile(member)
            assert source is not None
            with part.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            got = _digest(part)
            if got != JARS[name]:
                part.unlink()
                raise RuntimeError(f"{name} from {ARCHIVE} has sha256 {got}, expected {JARS[name]}")
            part.replace(d / name)


def spark_conf(endpoint: str) -> dict[str, str]:
    """The Spark conf of a session that reaches `endpoint` through S3A (path-style, no TLS).

    hadoop-aws 3.3.1 runs here against pyspark's Hadoop 3.5 client, whose `core-default.xml`
    gives some S3A settings as durations and sizes with units (`60s`, `64M`) that 3.3.1 reads
    as plain numbers, and names SDK v2 credential providers: each is set explicitly."""
    hadoop = {
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": ACCESS,
        "fs.s3a.secret.key": SECRET,
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.connection.establish.timeout": "30000",  # ms
        "fs.s3a.connection.timeout": "200000",  # ms
        "fs.s3a.connection.ttl": "300000",  # ms
        "fs.s3a.threads.keepalivetime": "60",  # s
        "fs.s3a.multipart.size": str(64 << 20),
        "fs.s3a.multipart.threshold": str(128 << 20),
        "fs.s3a.multipart.purge.age": "86400",  # s
        "fs.s3a.block.size": str(32 << 20),
        "fs.s3a.readahead.range": str(64 << 10),
        "fs.s3a.assumed.role.session.duration": "1800",  # s
        "fs.s3a.retry.interval": "500",  # ms
        "fs.s3a.retry.throttle.interval": "100",  # ms
    }
    return {"spark.jars": ",".join(jars()), **{f"spark.hadoop.{k}": v for k, v in hadoop.items()}}


@contextmanager
def s3_server() -> Iterator[str]:
    """A moto S3 server on a free loopback port for the block; yields its endpoint URL."""
    port = free_port()
    log = tempfile.TemporaryFile()  # it logs every request: a pipe nobody reads would fill and stall it
    proc = subprocess.Popen(  # this interpreter's moto, wherever its scripts were installed
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    err = log.read().decode(errors="replace")
                    raise RuntimeError(f"moto's S3 server did not start on {endpoint}: {err[-2000:]}") from None
                time.sleep(0.2)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def create_bucket(endpoint: str, bucket: str) -> None:
    """Create `bucket` on the server (S3A does not create buckets)."""
    import boto3

    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET, region_name="us-east-1"
    ).create_bucket(Bucket=bucket)


def object_keys(endpoint: str, bucket: str) -> list[str]:
    """Every object's key in `bucket`."""
    import boto3

    s3 = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET, region_name="us-east-1"
    )
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fetch", action="store_true", help="download the S3A connector's jars if missing")
    args = parser.parse_args()
    print("\n".join(fetch() if args.fetch else jars()))
