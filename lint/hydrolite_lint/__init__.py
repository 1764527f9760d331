"""hydrolite-lint: checks hydrolite programs for what types cannot express.

Every `nondet(...)` carries a real, literal reason and is written at the one call that
consumes it; align points are used and can do something; the buggy `.latest().snapshot()`
and legacy `atomic()` patterns are rewritten with align points. See `lint/README.md`.
"""

from .engine import FileReport, lint_file, lint_source
from .findings import Finding
from .rules import RULES, Rule

__all__ = ["RULES", "FileReport", "Finding", "Rule", "lint_file", "lint_source"]
__version__ = "0.1.0"
