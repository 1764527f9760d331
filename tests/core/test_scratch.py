"""Scratch directories of killed drivers are removed by the next runner on the host (`scratch.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hydrolite.planner.spark import scratch


def test_only_this_hosts_dead_processes_directories_are_swept(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)  # exited: its pid runs nothing now (or something else, then kept)
    host = scratch._host()
    names = {
        "dead": f"hydrolite-feeds-{host}-{dead}-abc",
        "alive": f"hydrolite-feeds-{host}-{os.getpid()}-def",
        "elsewhere": f"hydrolite-feeds-otherhost-{dead}-ghi",
        "other kind": f"hydrolite-state-{host}-{dead}-jkl",
        "not ours": f"hydrolite-feeds-{host}-notapid",
    }
    for name in names.values():
        (tmp_path / name).mkdir()
        (tmp_path / name / "000000000000.arrow").write_bytes(b"x")
    if scratch._alive(dead):
        pytest.skip(f"pid {dead} was reused at once")
    assert scratch.sweep("feeds", str(tmp_path)) == [names["dead"]]
    assert sorted(os.listdir(tmp_path)) == sorted(v for k, v in names.items() if k != "dead")
