"""Every hydrolite module imports as a program's first hydrolite import.

A user's test file may start with `from hydrolite.planner.spark.harness import SparkHarness`
(its docstring's example) or `from hydrolite.receiving import ...`; an import cycle that
only the usual order (`import hydrolite` first) hides would fail there with "partially
initialized module". Checked in one fresh interpreter that forgets every hydrolite module
before importing the next one (third-party modules stay loaded: a few seconds in all).
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import importlib, pkgutil, sys
import hydrolite
names = [m.name for m in pkgutil.walk_packages(hydrolite.__path__, "hydrolite.")]
failed = []
for name in names:
    for loaded in [k for k in sys.modules if k == "hydrolite" or k.startswith("hydrolite.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print(len(names))
print("\\n".join(failed))
"""


def test_every_module_imports_first() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    count, _, failed = proc.stdout.partition("\n")
    assert int(count) > 100  # the walk found the package's modules
    assert failed.strip() == "", failed
