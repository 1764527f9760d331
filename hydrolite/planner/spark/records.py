"""One partition of a JSON / CSV file input, line by line: decode, parse, check, number.

Spark's `text` source hands the strict reader (`strict_read.py`) every line of the
batch's files as raw bytes, with the file (`_metadata.file_path`) and the start of the
split it belongs to (`_metadata.file_block_start`): Spark cuts a large file into splits
read by different tasks, a split starting at byte `s > 0` holding the lines that start
after `s`. `FileParser` sees the lines of a split in file order, so the line number of
the split's n-th line is `n` for the first split and, for the others, `n` plus the lines
before `s` — counted by reading the file up to `s`, only when a record is rejected.

Each line becomes an element `(k, v)` (in `HType.encode`'s form), `None` (a blank or
comment line, a CSV header), or a `Bad` record: the file, the 1-based line, the raw text
and the reason (`strict.Rejection`). With `multiLine` a row is a whole file (Spark's
`wholetext`), holding a JSON array of records / one record, or CSV with quoted line breaks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import unquote, urlparse

from .strict import Layout, Rejection, json_document, json_record, parse_json, time_zone
from .strict_csv import CsvDialect, csv_header, csv_record
from .types import HType

DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024
_CHUNK = 1 << 24
Opener = Callable[[str], IO[bytes]]


def local_path(uri: str) -> str:
    """A file path for messages: `file:/a%20b/x.json` -> `/a b/x.json` (others unchanged)."""
    if uri.startswith("file:"):
        return unquote(urlparse(uri).path)
    return uri


def open_uri(uri: str) -> IO[bytes]:
    """A file Spark read, opened from Python: local files directly, others through pyarrow."""
    if uri.startswith("file:") or "://" not in uri and ":" not in uri.split("/", 1)[0]:
        return open(local_path(uri), "rb")
    from pyarrow import fs

    filesystem, path = fs.FileSystem.from_uri(uri)
    stream: IO[bytes] = filesystem.open_input_stream(path)  # a pyarrow NativeFile: read/seek/close like a binary file
    return stream


def breaks_before(fh: IO[bytes], start: int, sep: bytes | None = None) -> int:
    """How many line breaks end at or before byte `start` (LF, CRLF or a lone CR, as Hadoop's
    line reader splits; or exactly `sep`)."""
    count = pairs = pos = 0
    tail = b""
    while pos < start:
        chunk = fh.read(min(_CHUNK, start - pos))
        if not chunk:
            return count if sep else count - pairs
        pos += len(chunk)
        if sep:
            count += (tail + chunk).count(sep)
            tail = chunk[-(len(sep) - 1) :] if len(sep) > 1 else b""
            continue
        count += chunk.count(b"\n") + chunk.count(b"\r")
        pairs += chunk.count(b"\r\n") + (1 if tail == b"\r" and chunk.startswith(b"\n") else 0)
        tail = chunk[-1:]
    if not sep and tail == b"\r" and fh.read(1) == b"\n":
        pairs += 1
    return count if sep else count - pairs


@dataclass(frozen=True)
class ParseSpec:
    """How a file input's records are read (everything a worker needs; picklable)."""

    port: str
    fmt: str  # "json" or "csv"
    vt: HType
    kt: HType | None
    tz: str = "UTC"  # the session time zone (timestamps without a zone)
    encoding: str = "utf-8"
    max_bytes: int = DEFAULT_MAX_RECORD_BYTES
    multiline: bool = False
    line_sep: str | None = None
    header: bool = True
    dialect: CsvDialect = field(default_factory=CsvDialect)
    quarantine: str | None = None  # the dead-letter directory (None: a bad record fails the batch)
    source: str = ""  # the input's directory (for the fix in messages)


@dataclass(frozen=True)
class Bad:
    """A rejected record: where it is, what it is, and why."""

    file: str
    line: int | None
    raw: str
    reason: str
    field: str = ""
    where: str = ""  # when the line is unknown: which record of which split

    def location(self) -> str:
        return f"line {self.line}" if self.line is not None else f"line ? ({self.where})"


def bad_record_message(spec: ParseSpec, bad: Bad) -> str:
    """The message of the BadDataError a bad record raises (without the port's own line,
    which the runtime puts in front: it knows the source node)."""
    raw = bad.raw if len(bad.raw) <= 200 else bad.raw[:197] + "..."
    fix_spec = f"{spec.fmt}:{spec.source or 'DIR'}?onBadRecord=quarantine:{(spec.source or 'DIR').rstrip('/')}-rejected"
    return (
        f"{bad.file}, {bad.location()}: {bad.reason}\n"
        f"  record: {raw!r}\n"
        f"  fix: correct the record (or the declared type of {spec.port!r}); or set bad records aside and go on: "
        f"add ?onBadRecord=quarantine:DIR to the input (e.g. --input {spec.port}={fix_spec})"
    )


class FileParser:
    """Parses and checks the lines of one partition (state: lines seen per split, headers)."""

    def __init__(self, spec: ParseSpec, opener: Opener = open_uri) -> None:
        self.spec = spec
        self.opener = opener
        tz = time_zone(spec.tz)
        self.layout = Layout.of(spec.vt, spec.kt)
        self._json = json_record(self.layout, tz) if spec.fmt == "json" else None
        self._csv = csv_record(self.layout, tz) if spec.fmt == "csv" else None
        self._plain = list(range(len(self.layout.names)))  # header=false: the layout's order
        self._next: dict[tuple[str, int], int] = {}
        self._bases: dict[tuple[str, int], int | None] = {}
        self._headers: dict[str, list[int] | Rejection] = {}
        self._header_lines: set[str] = set()

    # ------------------------------------------------------------- one line of a split
    def line(self, uri: str, start: int, raw: bytes) -> tuple[Any, Any] | Bad | None:
        key = (uri, start)
        j = self._next.get(key, 0)
        self._next[key] = j + 1
        try:
            text = self._decode(raw, start == 0 and j == 0)
            if self._json is not None:
                if not text or text.isspace():
                    return None
                return self._json(parse_json(text))
            return self._csv_line(uri, start, text)
        except Rejection as r:
            return self.bad(uri, start, j, raw, r)

    def _decode(self, raw: bytes, first: bool) -> str:
        spec = self.spec
        if len(raw) > spec.max_bytes:
            raise Rejection(
                f"a record of at most {spec.max_bytes} bytes (maxRecordBytes)",
                f"a line of {len(raw)} bytes (a file without line breaks? raise ?maxRecordBytes=N if records are that long)",
            )
        try:
            text = raw.decode(spec.encoding)
        except UnicodeDecodeError as e:
            raise Rejection(
                f"{spec.encoding} text",
                f"the byte 0x{raw[e.start]:02x} at byte {e.start + 1} of the line, which is not {spec.encoding}",
            ) from None
        return text[1:] if first and text.startswith("\ufeff") else text

    def _csv_line(self, uri: str, start: int, text: str) -> tuple[Any, Any] | None:
        assert self._csv is not None
        dialect = self.spec.dialect
        if dialect.skip(text):
            return None
        order: list[int] | Rejection
        if not self.spec.header:
            order = self._plain
        elif start == 0 and uri not in self._header_lines:  # the file's first line: its header
            self._header_lines.add(uri)
            order = self._headers[uri] = self._header(text)
            if isinstance(order, Rejection):
                raise order
            return None
        else:
            found = self._headers.get(uri)
            order = found if found is not None else self._headers.setdefault(uri, self._read_header(uri))
        if isinstance(order, Rejection):
            raise Rejection(order.expected, f"{order.found} (in the file's header line)", order.path)
        return self._csv(dialect.split(text), order)

    def _header(self, text: str) -> list[int] | Rejection:
        try:
            return csv_header(self.layout, self.spec.dialect.split(text))
        except Rejection as r:
            return r

    def _read_header(self, uri: str) -> list[int] | Rejection:
        """The header of a file whose first split another task reads."""
        try:
            with self.opener(uri) as fh:
                first = True
                for raw in fh:
                    text = self._decode(raw.rstrip(b"\r\n"), first)
                    first = False
                    if not self.spec.dialect.skip(text):
                        return self._header(text)
        except (OSError, ValueError) as exc:
            return Rejection("a readable header line", f"the file cannot be read from Python: {exc}")
        except Rejection as r:
            return r
        return Rejection("a header line", "an empty file")

    # ------------------------------------------------------------- a whole file (multiLine)
    def document(self, uri: str, raw: bytes) -> list[tuple[Any, Any] | Bad]:
        """The records of a whole file (`multiLine`), each checked."""
        out: list[tuple[Any, Any] | Bad] = []
        path = local_path(uri)
        try:
            text = raw.decode(self.spec.encoding)
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            reason = Rejection(
                f"{self.spec.encoding} text", f"the byte 0x{raw[e.start]:02x}, which is not {self.spec.encoding}"
            ).reason()
            return [Bad(path, line, raw.decode(self.spec.encoding, "replace"), reason)]
        text = text.removeprefix("\ufeff")

        def line_of(pos: int) -> int:
            return text.count("\n", 0, pos) + 1

        if self._json is not None:
            for pos, part, value in json_document(text):
                try:
                    if isinstance(value, Rejection):
                        raise value
                    out.append(self._json(value))
                except Rejection as r:
                    out.append(Bad(path, line_of(pos), part, r.reason(), r.field))
            return out
        assert self._csv is not None
        order: list[int] | Rejection | None = None if self.spec.header else self._plain
        for pos, fields in self.spec.dialect.records(text):
            end = text.find("\n", pos)
            part = text[pos : end if end >= 0 else len(text)]
            try:
                if isinstance(fields, Rejection):
                    raise fields
                if order is None:
                    order = csv_header(self.layout, list(fields))
                    continue
                if isinstance(order, Rejection):
                    raise Rejection(order.expected, f"{order.found} (in the file's header line)", order.path)
                out.append(self._csv(fields, order))
            except Rejection as r:
                if order is None:
                    order = r
                out.append(Bad(path, line_of(pos), part, r.reason(), r.field))
        return out

    # ------------------------------------------------------------- rejected records
    def bad(self, uri: str, start: int, j: int, raw: bytes, r: Rejection) -> Bad:
        """The rejected j-th line (0-based) of the split of `uri` starting at byte `start`."""
        line = self.line_number(uri, start, j)
        where = "" if line is not None else f"line {j + 1} of the part of the file from byte {start}"
        return Bad(local_path(uri), line, raw.decode(self.spec.encoding, "replace"), r.reason(), r.field, where)

    def line_number(self, uri: str, start: int, j: int) -> int | None:
        if start == 0:
            return j + 1
        key = (uri, start)
        if key not in self._bases:
            sep = self.spec.line_sep.encode(self.spec.encoding) if self.spec.line_sep else None
            try:
                with self.opener(uri) as fh:
                    self._bases[key] = breaks_before(fh, start, sep) + 2  # the split's first line
            except (OSError, ValueError):
                self._bases[key] = None
        base = self._bases[key]
        return None if base is None else base + j
