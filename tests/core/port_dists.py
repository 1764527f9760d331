"""Installing a port plugin for a test: a module plus a `.dist-info` directory on `sys.path`.

`importlib.metadata` finds a distribution by its `NAME-VERSION.dist-info` directory on
`sys.path`, and reads its entry points from `entry_points.txt` — exactly what `pip install`
leaves in site-packages — so a test sees the plugin the way a user's installation would.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

PORTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "ports.md"


def install_plugin(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    dist: str,
    entry_points: Mapping[str, str],
    modules: Mapping[str, str],
) -> None:
    """Put `modules` (name -> source) and a distribution `dist` declaring `entry_points`
    (scheme -> "module:attr") in the group `hydrolite.ports` on `sys.path` for this test."""
    root.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (root / f"{name}.py").write_text(source)
    info = root / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[hydrolite.ports]\n{lines}")
    monkeypatch.syspath_prepend(str(root))
    for name in modules:
        monkeypatch.delitem(sys.modules, name, raising=False)


def doc_example() -> str:
    """The example plugin module of docs/ports.md (its first Python block under "Example plugin")."""
    text = PORTS_DOC.read_text()
    section = text.split("## Example plugin", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "docs/ports.md: no python block under '## Example plugin'"
    return match.group(1)
