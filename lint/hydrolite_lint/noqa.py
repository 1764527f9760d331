"""`# noqa` and `# noqa: HL010, HL011` comments (flake8 syntax; codes match by prefix)."""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?P<sep>:\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


def is_suppressed(line: str, code: str) -> bool:
    """True when the physical line carries a noqa comment covering `code` (bare noqa covers all)."""
    if "#" not in line:
        return False
    for match in _NOQA.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if any(code.startswith(c.upper()) for c in _CODE.findall(codes)):
            return True
    return False
