"""CSV records for the strict reader: splitting a line (or a whole `multiLine` file) into
fields the way Spark's CSV options describe them, and matching the header BY NAME.

A CSV file's columns are found from its header line, so reordered columns read correctly;
a file without a header, or with a missing, unknown or repeated column, is rejected (with
`header=false` the columns are taken in the layout's order instead). Field text becomes
values by `strict.text_check` (an empty unquoted field is null, `""` the empty string).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .strict import Layout, Rejection, text_check


@dataclass(frozen=True)
class CsvDialect:
    """Spark's CSV options that matter for reading one record (its defaults: `,`, `"`, `\\`).

    An unquoted field equal to `null_value` is null; a quoted field is text as written
    (`""` is the empty string). Inside quotes, the escape character or a doubled quote
    stands for a quote."""

    sep: str = ","
    quote: str = '"'
    escape: str = "\\"
    null_value: str = ""
    comment: str = ""

    def skip(self, line: str) -> bool:
        """A blank line or a comment line (not a record)."""
        return not line.strip() or bool(self.comment) and line.startswith(self.comment)

    def split(self, line: str) -> list[str | None]:
        """The fields of one line (None for null); a malformed line: Rejection."""
        if self.quote not in line:  # the common case: no quoting at all
            return [None if f == self.null_value else f for f in line.split(self.sep)]
        fields, _ = self.scan(line, 0, multiline=False)
        return fields

    def scan(self, text: str, i: int, multiline: bool) -> tuple[list[str | None], int]:
        """The record starting at offset i and where the next one starts. With `multiline`
        (Spark's `multiLine`: a whole file) a record ends at a line break outside quotes."""
        out: list[str | None] = []
        n = len(text)
        ends = re.compile(f"{re.escape(self.sep)}|\r\n|\r|\n" if multiline else re.escape(self.sep))
        while True:
            if text.startswith(self.quote, i):
                value, i = self._quoted(text, i + 1)
                out.append(value)
            else:
                m = ends.search(text, i)
                j = n if m is None else m.start()
                raw = text[i:j]
                out.append(None if raw == self.null_value else raw)
                i = j
            if i >= n:
                return out, n
            if not text.startswith(self.sep, i):
                m = re.compile(r"\r\n|\r|\n").match(text, i) if multiline else None
                if m is not None:
                    return out, m.end()
                raise Rejection("a separator after a closing quote", f"{text[i : i + 20]!r} at column {i + 1}")
            i += len(self.sep)
            if i == n:
                out.append(None if self.null_value == "" else "")
                return out, n

    def records(self, text: str) -> list[tuple[int, list[str | None] | Rejection]]:
        """The records of a whole file (`multiLine`): (offset, fields); blank and comment
        lines are skipped; a malformed record ends the file (its Rejection is the last)."""
        out: list[tuple[int, list[str | None] | Rejection]] = []
        i, n = 0, len(text)
        blank = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
        while i < n:
            m = blank.match(text, i)
            assert m is not None
            if self.skip(m.group().rstrip("\r\n")):
                i = m.end()
                continue
            try:
                fields, j = self.scan(text, i, multiline=True)
            except Rejection as r:
                out.append((i, r))
                return out
            out.append((i, fields))
            i = j
        return out

    def _quoted(self, text: str, i: int) -> tuple[str, int]:
        buf: list[str] = []
        q, esc = self.quote, self.escape
        n = len(text)
        while i < n:
            c = text[i]
            if esc and c == esc and i + 1 < n and text[i + 1] in (q, esc):
                buf.append(text[i + 1])
                i += 2
            elif c == q and text.startswith(q, i + 1):
                buf.append(q)
                i += 2
            elif c == q:
                return "".join(buf), i + 1
            else:
                buf.append(c)
                i += 1
        raise Rejection("a closing quote", "a quoted field that runs to the end of the line")


def csv_header(layout: Layout, names: list[str | None]) -> list[int]:
    """For each column of the header, its position in the layout; Rejection when the header
    does not name exactly the layout's columns (in any order)."""
    got = ["" if n is None else n for n in names]
    want = list(layout.names)
    missing = [n for n in want if n not in got]
    unknown = [n for n in got if n not in want]
    dupes = sorted({n for n in got if got.count(n) > 1})
    if missing or unknown or dupes:
        parts = ([f"no column {', '.join(missing)}"] if missing else []) + (
            [f"unknown column {', '.join(map(repr, unknown))}"] if unknown else []
        )
        parts += [f"column {', '.join(dupes)} twice"] if dupes else []
        hint = " (a file without a header line?)" if missing and unknown else ""
        field = (missing or unknown or dupes)[0]
        raise Rejection(f"a header line naming the columns {', '.join(want)}", f"{'; '.join(parts)}{hint}", [field])
    return [want.index(n) for n in got]


def csv_record(layout: Layout, tz: dt.tzinfo) -> Callable[[list[str | None], list[int]], tuple[Any, Any]]:
    """The fields of a CSV line (in the file's column order) -> (k, v), or Rejection."""
    checks = [text_check(t, tz) for t in layout.types]
    width = len(layout.names)

    def record(fields: list[str | None], order: list[int]) -> tuple[Any, Any]:
        if len(fields) != width:
            raise Rejection(f"{width} fields, as the header has", f"{len(fields)} fields")
        vals: list[Any] = [None] * width
        for raw, pos in zip(fields, order):
            try:
                vals[pos] = checks[pos](raw)
            except Rejection as r:
                r.path.insert(0, layout.names[pos])
                raise
        return layout.element(vals)

    return record
