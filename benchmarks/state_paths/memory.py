"""Peak memory from /proc: VmHWM of a process, and the summed PSS of the JVM's Python workers."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator


def status(pid: int, field: str, file: str = "status") -> int:
    """A /proc/<pid>/status (or smaps_rollup) field in kB (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/{file}") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, from /proc/<pid>/stat (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def _descendants(pid: int) -> dict[int, int]:
    """pid -> parent pid of every process below `pid`."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    found, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for k in kids.get(parent, []):
            found[k] = parent
            todo.append(k)
    return found


class WorkerMemory(threading.Thread):
    """Samples the summed PSS of the JVM's Python workers (and executor JVMs under local-cluster)
    every 0.2 s and keeps the peak. PSS, not RSS: forked workers share pages. Left out: the
    data-source lookup workers Spark starts because hydrolite's session registers a Python data
    source (the same in every path; they come and go)."""

    def __init__(self, jvm: int) -> None:
        super().__init__(daemon=True)
        self.jvm, self.peak_kb, self.running = jvm, 0, True
        self.cpu_s = 0.0  # this thread's own CPU time: reading an executor JVM's smaps_rollup is not cheap

    def run(self) -> None:
        while self.running:
            self.peak_kb = max(self.peak_kb, sum(status(p, "Pss", "smaps_rollup") for p in self._workers()))
            self.cpu_s = time.thread_time()
            time.sleep(0.2)

    def _workers(self) -> Iterator[int]:
        procs = _descendants(self.jvm)
        cmds = {p: _cmdline(p) for p in [self.jvm, *procs]}
        for pid, parent in procs.items():
            argv = cmds[pid]
            # a child still being forked shows its parent's pages (and command line) until it execs
            python = bool(argv) and os.path.basename(argv[0]).startswith("python") and "_data_source" not in argv[-1]
            executor = _is_executor(argv) and not _is_executor(cmds[parent])
            if python or executor:
                yield pid


def _is_executor(argv: list[str]) -> bool:
    """An executor JVM's command line names its main class in full (`org.apache.spark.executor.…`)."""
    return any(a.endswith("CoarseGrainedExecutorBackend") for a in argv)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline") as fh:
            return fh.read().split("\0")[:-1]
    except OSError:
        return []


def reset_peak(pid: int) -> bool:
    """Reset VmHWM (Linux `clear_refs` 5) so the warm-up does not count; False if not allowed."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def batch_sampler(spark: object, jvm: int, workers: WorkerMemory, log: str) -> list[dict[str, float]]:
    """Register a streaming listener that records, at every progress event of any query, the
    Python driver's CPU seconds (less the sampling thread's), its resident set and the JVM's CPU
    seconds; consecutive samples give driver time per micro-batch (driver flatness: the first
    batch of a run against its last). Each sample is also appended to `log` as a JSON line as it
    comes (a long run stopped early still leaves its batches' figures). Returns the list."""
    import json

    from pyspark.sql.streaming import StreamingQueryListener

    samples: list[dict[str, float]] = []
    me = os.getpid()

    def sample(batch: float) -> dict[str, float]:
        drv = cpu_seconds(me) - workers.cpu_s
        return {
            "batch": batch,
            "driver_cpu_s": drv,
            "driver_rss_kb": status(me, "VmRSS"),
            "jvm_cpu_s": cpu_seconds(jvm),
        }

    class Sampler(StreamingQueryListener):
        def onQueryStarted(self, event: object) -> None:
            """Only progress events are sampled (Spark requires all four callbacks)."""

        def onQueryProgress(self, event: object) -> None:
            samples.append(sample(float(event.progress.batchId)))  # type: ignore[attr-defined]
            with open(log, "a") as fh:
                fh.write(json.dumps({**samples[-1], "ms": dict(event.progress.durationMs)}) + "\n")  # type: ignore[attr-defined]

        def onQueryIdle(self, event: object) -> None:
            """Not sampled: an idle query runs no batch."""

        def onQueryTerminated(self, event: object) -> None:
            """Not sampled: the run's end is measured by the caller."""

    samples.append(sample(-1.0))  # the start: batch 0's time is the first event's less this
    spark.streams.addListener(Sampler())  # type: ignore[attr-defined]
    return samples
