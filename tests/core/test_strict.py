"""The strict reader's record checks, without Spark (`strict.py`, `strict_csv.py`, `records.py`).

Every declared type a port supports reads back from the JSON text Spark's writer produces
(the round trip below goes through Arrow and `HType.decode`, as the run does), and every
value of a wrong JSON type, null or missing where the type is not optional, or unknown
field is rejected with the field's path, the expected type and what was found. CSV lines
are split as Spark's CSV options describe and matched to the layout by header name. Line
numbers are exact whichever split of a file a line is read from.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hydrolite.planner.spark.errors import SparkRunError
from hydrolite.planner.spark.records import (
    Bad,
    FileParser,
    ParseSpec,
    bad_record_message,
    breaks_before,
)
from hydrolite.planner.spark.strict import (
    Layout,
    Rejection,
    json_check,
    json_document,
    json_record,
    parse_json,
    parse_timestamp,
    text_check,
    time_zone,
)
from hydrolite.planner.spark.strict_csv import CsvDialect, csv_header, csv_record
from hydrolite.planner.spark.strict_read import read_options
from hydrolite.planner.spark.types import OPAQUE, HType, from_python

UTC = dt.timezone.utc


@dataclasses.dataclass
class Reading:
    sensor: str
    value: float
    tags: list[str]
    seen: dt.datetime | None = None


class Point(NamedTuple):
    x: int
    y: int


def htype(t: Any) -> HType:
    """The HType of annotation `t`; these tests use only types that have one."""
    ht = from_python(t)
    assert ht is not None, f"{t!r} has no native HType"
    return ht


def check(t: Any, x: Any) -> Any:
    return json_check(htype(t), UTC)(x)


def rejected(t: Any, x: Any) -> Rejection:
    with pytest.raises(Rejection) as info:
        check(t, x)
    return info.value


# ------------------------------------------------------------------ JSON values: no coercion
@pytest.mark.parametrize(
    ("t", "x", "found"),
    [
        (str, 123, "int 123"),
        (str, {"a": 1}, 'object {"a": 1}'),
        (str, [1], "array [1]"),
        (str, True, "bool true"),
        (int, "1", 'str "1"'),
        (int, 1.5, "float 1.5"),
        (int, 1.0, "float 1.0"),
        (int, True, "bool true"),
        (int, 2**63, f"int {2**63} (outside the 64-bit range)"),
        (float, "1.5", 'str "1.5"'),
        (float, False, "bool false"),
        (bool, 1, "int 1"),
        (bool, "true", 'str "true"'),
        (bytes, "not base64!", 'str "not base64!"'),
        (bytes, 12, "int 12"),
        (dt.date, "2024-13-01", 'str "2024-13-01"'),
        (dt.datetime, 1700000000, "int 1700000000"),
        (type(None), 0, "int 0"),
        (list[int], {"a": 1}, 'object {"a": 1}'),
    ],
)
def test_a_value_of_another_json_type_is_rejected(t: Any, x: Any, found: str) -> None:
    r = rejected(t, x)
    assert r.found == found and r.path == []
    assert r.expected.startswith(htype(t).describe())


def test_accepted_forms_of_each_primitive() -> None:
    assert check(int, -(2**63)) == -(2**63)
    assert check(float, 3) == 3.0 and isinstance(check(float, 3), float)  # an int is a float
    assert math.isnan(check(float, "NaN")) and check(float, "-Infinity") == -math.inf  # Spark's writer's forms
    assert check(bytes, base64.b64encode(b"\x00\xff").decode()) == b"\x00\xff"
    assert check(dt.date, "2024-02-29") == dt.date(2024, 2, 29)
    assert check(dt.datetime, "2024-01-02T03:04:05.123Z") == dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)
    assert check(type(None), None) is None and check(int | None, None) is None


def test_null_or_missing_only_where_the_type_is_optional() -> None:
    assert rejected(int, None).found == "null"
    layout = Layout.of(htype(int), htype(str))
    record = json_record(layout, UTC)
    with pytest.raises(Rejection) as info:
        record({"value": 1})
    assert (info.value.field, info.value.expected, info.value.found) == ("key", "str", "nothing (the field is missing)")
    assert json_record(Layout.of(htype(int | None), htype(str)), UTC)({"key": "a"}) == ("a", None)
    assert json_record(Layout.of(htype(type(None)), htype(str)), UTC)({"key": "a"}) == ("a", None)


def test_nested_rejections_name_the_field_path() -> None:
    r = rejected(Reading, {"sensor": "s", "value": 1, "tags": ["a", 2]})
    assert (r.field, r.expected, r.found) == ("tags[1]", "str", "int 2")
    r = rejected(dict[str, list[int | None]], {"k": [1, None, "x"]})
    assert (r.field, r.found) == ("['k'][2]", 'str "x"')
    r = rejected(tuple[str, Point], {"_1": "a", "_2": {"x": 1, "z": 2}})
    assert (r.field, r.expected, r.found) == ("_2.z", "only the fields x, y", "an unknown field (a misspelt name?)")
    r = rejected(dict[int, str], {"1": "a", "one": "b"})
    assert (r.field, r.expected, r.found) == ("['one']", "int", "'one'")


def test_a_json_line_must_be_one_object_of_the_layout() -> None:
    record = json_record(Layout.of(htype(int), htype(str)), UTC)
    assert record(parse_json('{"key": "a", "value": 1}')) == ("a", 1)
    for text, found in [
        ('["a", 1]', 'array ["a", 1]'),
        ('"a"', 'str "a"'),
        ("null", "null"),
        ('{"key": "a", "value": 1} {"key": "b"}', "more text after the record at column 26"),
        ('{"key": "a", "value": 1', "a record cut off before its end (a truncated line?)"),
        ('{"key": "a", "val', "a record cut off before its end (a truncated line?)"),
        ('{"key": "a", "value": }', "invalid JSON at column 23: Expecting value"),
    ]:
        with pytest.raises(Rejection) as info:
            record(parse_json(text))
        assert info.value.found.startswith(found), (text, info.value.found)


# ------------------------------------------------------------------ every declared type, round trip
def spark_json(t: HType, v: Any) -> Any:
    """The JSON form Spark's writer gives an encoded value of t (nulls written as null)."""
    from hydrolite.planner.spark.types import DictT, ListT, OpaqueT, OptT, Prim, StructT

    if v is None:
        return None
    if isinstance(t, OptT):
        return spark_json(t.inner, v)
    if isinstance(t, StructT):
        return {n: spark_json(it, v[n]) for n, it in zip(t.names, t.items)}
    if isinstance(t, ListT):
        return [spark_json(t.item, x) for x in v]
    if isinstance(t, DictT):
        return {json.dumps(k) if not isinstance(k, str) else k: spark_json(t.value, x) for k, x in v}
    if isinstance(t, OpaqueT) or isinstance(t, Prim) and t.py is bytes:
        return base64.b64encode(v).decode()
    if isinstance(t, Prim) and t.py is dt.datetime:
        return v.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(t, Prim) and t.py is dt.date:
        return v.isoformat()
    if isinstance(t, Prim) and t.py is float and not math.isfinite(v):
        return "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"
    return v


TYPES: list[Any] = [
    int,
    float,
    str,
    bool,
    bytes,
    dt.datetime,
    dt.date,
    type(None),
    int | None,
    tuple[int, str],
    Point,
    Reading,
    list[int],
    set[str],
    tuple[float, ...],
    dict[str, int],
    dict[int, list[str | None]],
    tuple[str, dict[str, Point]] | None,
]
VALUES: dict[Any, Any] = {
    int: 7,
    float: 2.5,
    str: "é",
    bool: True,
    bytes: b"\x00\x01",
    dt.datetime: dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    dt.date: dt.date(2024, 5, 6),
    type(None): None,
    int | None: None,
    tuple[int, str]: (1, "a"),
    Point: Point(1, 2),
    Reading: Reading("s", 1.0, ["x"], None),
    list[int]: [1, 2],
    set[str]: {"a", "b"},
    tuple[float, ...]: (1.0, float("inf")),
    dict[str, int]: {"a": 1},
    dict[int, list[str | None]]: {3: ["x", None]},
    tuple[str, dict[str, Point]] | None: ("k", {"p": Point(3, 4)}),
}


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_every_supported_type_reads_back_what_spark_wrote(t: Any) -> None:
    ht = htype(t)
    value = VALUES[t]
    layout = Layout.of(ht, None)  # a tuple / record is its own columns, else one `value`
    body = spark_json(ht, ht.encode(value))
    _, encoded = json_record(layout, UTC)(parse_json(json.dumps(body if layout.struct else {"value": body})))
    decoded = ht.decode(pa.array([encoded], type=ht.arrow()).to_pylist()[0])
    assert decoded == value or repr(decoded) == repr(value)


def test_pickled_elements_read_from_base64() -> None:
    data = OPAQUE.encode(object.__class__)
    assert json_check(OPAQUE, UTC)(base64.b64encode(data).decode()) == data


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))), max_size=6))
def test_optional_values_round_trip(pairs: list[tuple[str, int | None]]) -> None:
    t = htype(dict[str, int | None])
    got = json_check(t, UTC)(json.loads(json.dumps(dict(pairs))))
    assert dict(got) == dict(pairs)


def test_timestamps_without_a_zone_are_in_the_session_zone() -> None:
    paris = time_zone("Europe/Paris")
    assert parse_timestamp("2024-01-02 03:04", paris) == dt.datetime(2024, 1, 2, 3, 4, tzinfo=paris)
    assert parse_timestamp("2024-01-02T03:04:05+01:30", UTC) == dt.datetime(2024, 1, 2, 1, 34, 5, tzinfo=UTC)
    assert parse_timestamp("2024-01-02", UTC) == dt.datetime(2024, 1, 2, tzinfo=UTC)
    assert parse_timestamp("02/01/2024", UTC) is None
    assert time_zone("+05:30").utcoffset(None) == dt.timedelta(hours=5, minutes=30)
    with pytest.raises(ValueError, match="unknown time zone"):
        time_zone("Mars/Olympus")


# ------------------------------------------------------------------ CSV
def test_csv_fields_split_as_spark_writes_them() -> None:
    d = CsvDialect()
    assert d.split("a,,1") == ["a", None, "1"]
    assert d.split('"",x,') == ["", "x", None]  # quoted empty: the empty string; unquoted: null
    assert d.split(r'"a\"b,c",2') == ['a"b,c', "2"]  # Spark's writer escapes quotes with a backslash
    assert d.split('"a""b",2') == ['a"b', "2"]
    assert CsvDialect(sep=";", null_value="NA").split("NA;b") == [None, "b"]
    for line, found in [('"abc,1', "a quoted field that runs to the end of the line"), ('"a"b,1', "'b,1' at column 4")]:
        with pytest.raises(Rejection) as info:
            d.split(line)
        assert info.value.found == found


def test_csv_header_is_matched_by_name() -> None:
    layout = Layout.of(htype(int), htype(str))
    record = csv_record(layout, UTC)
    order = csv_header(layout, ["value", "key"])
    assert record(["5", "a"], order) == ("a", 5) == record(["a", "5"], csv_header(layout, ["key", "value"]))
    for names, found, field in [
        (["a", "1"], "no column key, value; unknown column 'a', '1' (a file without a header line?)", "key"),
        (["key"], "no column value", "value"),
        (["key", "value", "x"], "unknown column 'x'", "x"),
        (["key", "value", "key"], "column key twice", "key"),
    ]:
        with pytest.raises(Rejection) as info:
            csv_header(layout, list(names))
        assert (info.value.found, info.value.field) == (found, field)
    with pytest.raises(Rejection, match="expected 2 fields, as the header has, found 3 fields"):
        record(["a", "1", "x"], order)


def test_csv_text_forms() -> None:
    assert text_check(htype(float), UTC)("-1e3") == -1000.0
    assert math.isinf(text_check(htype(float), UTC)("Infinity"))
    assert text_check(htype(bool), UTC)("TRUE") is True
    assert text_check(htype(int | None), UTC)(None) is None
    for t, text in [
        (int, "1.0"),
        (int, " 1"),
        (float, "1_000"),
        (bool, "yes"),
        (dt.date, "2024-1-2"),
        (type(None), "x"),
    ]:
        with pytest.raises(Rejection):
            text_check(htype(t), UTC)(text)
    with pytest.raises(TypeError, match="CSV holds flat text fields only"):
        text_check(htype(list[int]), UTC)


def test_multiline_files() -> None:
    recs = CsvDialect().records('key,value\n"a\nb",1\n\n"c",2')
    assert [(pos, f) for pos, f in recs] == [(0, ["key", "value"]), (10, ["a\nb", "1"]), (19, ["c", "2"])]
    doc = json_document('[\n {"value": 1},\n {"value": 2}\n]\n')
    assert [(pos, v) for pos, _, v in doc] == [(3, {"value": 1}), (18, {"value": 2})]
    assert [v for _, _, v in json_document('{"value": 3}')] == [{"value": 3}]
    *_, (_, _, err) = json_document('[{"value": 1}, {"value": ')
    assert isinstance(err, Rejection) and "cut off" in err.found


# ------------------------------------------------------------------ files: line numbers, headers, bytes
def write(tmp_path: Path, name: str, data: bytes) -> str:
    (tmp_path / name).write_bytes(data)
    return (tmp_path / name).as_uri()


def hadoop_splits(data: bytes, starts: list[int]) -> dict[int, list[bytes]]:
    """The lines each split reads, as Hadoop's line reader assigns them (a split starting at
    s > 0 holds the lines that start after s; LF, CRLF and a lone CR end a line)."""
    import re

    begins = [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", data) if m.end() < len(data)]
    lines = re.split(rb"\r\n|\r|\n", data)
    out: dict[int, list[bytes]] = {s: [] for s in starts}
    for b, line in zip(begins, lines):
        owner = max(s for s in starts if s == 0 and b >= 0 or 0 < s < b)
        out[owner].append(line)
    return out


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_numbers_in_every_split(tmp_path: Path, eol: bytes) -> None:
    lines = [b'{"value": %d}' % i if i % 7 else b'{"value": "bad%d"}' % i for i in range(1, 60)]
    data = eol.join(lines) + eol
    uri = write(tmp_path, "f.json", data)
    parser = FileParser(ParseSpec("p", "json", htype(int), None))
    bad: list[int] = []
    for start, split in hadoop_splits(data, [0, 100, 101, 333, 600]).items():
        for raw in split:
            got = parser.line(uri, start, raw)
            if isinstance(got, Bad):
                assert got.line is not None, "every split knows its line numbers here"
                assert got.raw == f'{{"value": "bad{got.line}"}}'
                bad.append(got.line)
    assert sorted(bad) == [i for i in range(1, 60) if i % 7 == 0]


def test_breaks_before_counts_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hydrolite.planner.spark import records

    monkeypatch.setattr(records, "_CHUNK", 3)  # line breaks straddle the chunks
    data = b"ab\r\ncd\r\ref\ngh\r"
    (tmp_path / "x").write_bytes(data)

    def ends_a_line(i: int) -> bool:  # LF, or a CR not followed by LF
        return data[i : i + 1] == b"\n" or data[i : i + 1] == b"\r" and data[i + 1 : i + 2] != b"\n"

    for start in range(len(data) + 1):
        with open(tmp_path / "x", "rb") as fh:
            assert breaks_before(fh, start) == sum(ends_a_line(i) for i in range(start)), start
    with open(tmp_path / "x", "rb") as fh:
        assert breaks_before(fh, len(data), b"cd") == 1


def test_csv_header_of_a_later_split_is_read_from_the_file(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbfvalue,key\n1,a\n2,b\nx,c\n"
    uri = write(tmp_path, "f.csv", data)
    parser = FileParser(ParseSpec("p", "csv", htype(int), htype(str)))
    assert parser.line(uri, 16, b"2,b") == ("b", 2)  # another task reads the header line
    got = parser.line(uri, 16, b"x,c")
    assert isinstance(got, Bad) and got.line == 4 and got.reason == "field 'value': expected int, found 'x'"
    assert parser.line(uri, 0, data.split(b"\n")[0]) is None and parser.line(uri, 0, b"1,a") == ("a", 1)
    headerless = write(tmp_path, "g.csv", b"a,1\nb,2\n")
    first = parser.line(headerless, 0, b"a,1")
    later = parser.line(headerless, 0, b"b,2")
    assert isinstance(first, Bad) and first.line == 1 and "a file without a header line?" in first.reason
    assert isinstance(later, Bad) and later.line == 2 and "(in the file's header line)" in later.reason


def test_bytes_that_are_not_text_and_records_too_long(tmp_path: Path) -> None:
    uri = write(tmp_path, "f.json", b"")
    parser = FileParser(ParseSpec("p", "json", htype(str), None, max_bytes=40))
    got = parser.line(uri, 0, b'{"value": "caf\xe9"}')
    assert (
        isinstance(got, Bad)
        and got.reason == "expected utf-8 text, found the byte 0xe9 at byte 15 of the line, which is not utf-8"
    )
    assert got.raw == '{"value": "caf\ufffd"}'
    long = parser.line(uri, 0, b'{"value": "' + b"x" * 40 + b'"}')
    assert isinstance(long, Bad) and "found a line of 53 bytes" in long.reason and long.line == 2
    latin = FileParser(ParseSpec("p", "json", htype(str), None, encoding="latin-1"))
    assert latin.line(uri, 0, b'{"value": "caf\xe9"}') == (None, "café")
    assert parser.line(uri, 0, b"   ") is None  # blank lines are not records


def test_the_message_says_where_what_and_how_to_fix() -> None:
    spec = ParseSpec("p", "json", htype(int), None, source="/data/in")
    msg = bad_record_message(
        spec, Bad("/data/in/f.json", 3, '{"value": "1"}', "field 'value': expected int, found str \"1\"", "value")
    )
    assert msg.splitlines() == [
        "/data/in/f.json, line 3: field 'value': expected int, found str \"1\"",
        '  record: \'{"value": "1"}\'',
        (
            "  fix: correct the record (or the declared type of 'p'); or set bad records aside and go on: add ?onBadRecord=quarantine:DIR "
            "to the input (e.g. --input p=json:/data/in?onBadRecord=quarantine:/data/in-rejected)"
        ),
    ]


def test_options_hydrolite_reads_and_those_it_refuses() -> None:
    ro = read_options(
        "p", "csv", {"onBadRecord": "quarantine:/dead", "sep": ";", "maxFilesPerTrigger": "1", "maxRecordBytes": "10"}
    )
    assert (ro.quarantine, ro.max_bytes, ro.parse) == ("/dead", 10, {"sep": ";"})
    assert ro.spark["maxFilesPerTrigger"] == "1" and "onBadRecord" not in ro.spark and "sep" not in ro.spark
    assert read_options("p", "json", {"onBadRecord": "fail", "mode": "FAILFAST"}).quarantine is None
    for opts, needle in [
        ({"onBadRecord": "quarantine:"}, "not 'fail' or 'quarantine:DIR'"),
        ({"mode": "PERMISSIVE"}, "silently"),
        ({"dateFormat": "d/M/y"}, "not supported"),
        ({"maxRecordBytes": "-1"}, "positive"),
    ]:
        with pytest.raises(SparkRunError, match=needle):
            read_options("p", "json", opts)
