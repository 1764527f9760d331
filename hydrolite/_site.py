"""Call sites: where in the user's program an IR node or token was created.

Every IR node records the first stack frame outside the hydrolite package, so errors,
plan printouts and simulator traces can point at the user's own file:line.
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from types import FrameType

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass(frozen=True)
class CallSite:
    """A source position in user code."""

    file: str
    line: int
    function: str = "<module>"

    @property
    def code(self) -> str:
        """The stripped source line, or '' when the file cannot be read."""
        return linecache.getline(self.file, self.line).strip()

    @property
    def short_file(self) -> str:
        """The file relative to the working directory when it lies below it."""
        try:
            rel = os.path.relpath(self.file)
        except ValueError:  # another drive on Windows
            return self.file
        return self.file if rel.startswith("..") else rel

    @property
    def label(self) -> str:
        """`name.py:12`: the file's name (no directory) and line. Unlike `str(site)` it does not
        depend on the working directory, so plans, stage names and stable ids use it."""
        return f"{os.path.basename(self.file)}:{self.line}"

    def __str__(self) -> str:
        """`dir/name.py:12`, relative to the working directory when below it: a path to open."""
        return f"{self.short_file}:{self.line}"


UNKNOWN_SITE = CallSite("<unknown>", 0)


def _internal(filename: str) -> bool:
    return filename.startswith(_PKG_DIR) or filename.startswith("<frozen ")


def capture_site() -> CallSite:
    """Return the innermost frame of the caller that is not inside hydrolite itself."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return UNKNOWN_SITE
    return CallSite(os.path.abspath(frame.f_code.co_filename), frame.f_lineno, frame.f_code.co_name)
