"""What counting a query's driver state costs a metrics scrape (`hydrolite/metrics.py`).

Builds a driver state store (`planner/spark/state.py`) with N keys of one keyed operator,
committed over two batches (half the keys rewritten in the second, so they hold two
versions, as after a real run) plus a few deletions, then times `driver_state_rows`, which
a scrape runs at most once per committed batch. Prints the median of 5 counts per size.

    python benchmarks/bench_metrics_state.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from hydrolite.metrics import driver_state_rows
from hydrolite.planner.spark.state import StateStore, key_bytes


def build(directory: str, keys: int) -> int:
    """A store with `keys` keys of operator "op" of which some are deleted; returns the live count."""
    store = StateStore(directory)
    first = store.begin(1)
    first.put_many("op", {f"k{i}": i for i in range(keys)})
    first.put("fold", 42)  # an unkeyed operator beside it
    first.commit()
    second = store.begin(2)
    second.put_many("op", {f"k{i}": -i for i in range(0, keys, 2)})
    deleted = keys // 100
    for i in range(1, 2 * deleted, 2):
        second.delete("op", key_bytes(f"k{i}"))
    second.commit()
    store.close()
    return keys - deleted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    args = parser.parse_args()
    print(f"{'keys':>10} {'median ms':>10} {'us/key':>8}")
    for size in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as d:
            live = build(d, size)
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                rows = driver_state_rows(d)
                times.append(time.perf_counter() - t0)
                assert rows == {"op": live, "fold": 1}, rows
            median = statistics.median(times)
            print(f"{size:>10} {median * 1000:>10.1f} {median / size * 1e6:>8.2f}")


if __name__ == "__main__":
    main()
