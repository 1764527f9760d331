"""Hand the xdist workers the longest test files first (`--dist loadfile`).

With `loadfile` every file runs on one worker, and xdist hands out files by their number of
tests, most first. Our longest files are not the ones with most tests: the local-cluster
run (5 tests, ~190 s), the S3A checkpoint (2 tests, ~110 s) and the import-order test (1
test) went out last, so the run ended with one or two workers busy and the others idle.
Handing out the longest file first (the classic longest-processing-time rule) packs the
workers evenly: on the measured file times of a full run, the simulated end of the run moves
from 1,603 s to 1,548 s, against 1,547 s for a perfect split over three workers.

The file times live in `tests/file_durations.json` (seconds per file, from one full run under
`-n 3`). They only order the files: a stale or missing entry costs balance, never a test. A
file without an entry goes out among the last: most are modules whose docstring examples run
in milliseconds (pytest's report leaves out times under 5 ms).
Refresh them after adding long tests:

    python -m pytest --durations=0 -p no:randomly | tee /tmp/durations.log
    python tests/xdist_order.py /tmp/durations.log
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadFileScheduling

DURATIONS = Path(__file__).with_name("file_durations.json")


def recorded() -> dict[str, float]:
    """Seconds per test file (path from the repository's root), as last recorded; {} if none."""
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError):
        return {}


class LongestFileFirst(LoadFileScheduling):
    """`--dist loadfile`, the pending file with the longest recorded time handed out first."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self.seconds = recorded()

    def _assign_work_unit(self, node: Any) -> None:
        # xdist 3.x's hook for handing out one file; were it renamed, the files would go out
        # in xdist's own order again (slower, never wrong)
        self.workqueue.move_to_end(longest(self.workqueue, self.seconds), last=False)  # it hands out the first
        super()._assign_work_unit(node)


def longest(pending: Iterable[str], seconds: Mapping[str, float]) -> str:
    """The pending file to hand out next: the longest recorded one; a file without a record
    counts 0 (it goes out among the last); among equal times, the order of `pending`."""
    return max(pending, key=lambda name: seconds.get(name, 0.0))


def write_from_log(log: str) -> dict[str, float]:
    """Per-file seconds from pytest's `--durations=0` lines (setup, call and teardown summed)."""
    files: defaultdict[str, float] = defaultdict(float)
    for line in log.splitlines():
        m = re.match(r"^([\d.]+)s (?:call|setup|teardown)\s+([^:\s]+)", line)
        if m:
            files[m.group(2)] += float(m.group(1))
    return {name: round(seconds, 1) for name, seconds in sorted(files.items())}


if __name__ == "__main__":
    found = write_from_log(Path(sys.argv[1]).read_text())
    if not found:
        sys.exit(f"no --durations=0 lines in {sys.argv[1]}")
    DURATIONS.write_text(json.dumps(found, indent=1) + "\n")
    print(f"{len(found)} files, {sum(found.values()):.0f} s in all -> {DURATIONS}")
