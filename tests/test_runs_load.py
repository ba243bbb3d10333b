"""Loading any input ``trtcap compare`` takes (``pytest_trtcap.runs.load``): a record, a recorder stream or JUnit XML,
as a one-line error naming the file for anything else, bounded depth; reading (inputs), field types (validate) and
writing (record) have their own modules."""

from __future__ import annotations

import json

import pytest
from runs_helpers import GOOD_XML, assert_rejected, record_data, write_input

from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.record import RecordError

GOOD_JSON = json.dumps(
    record_data({"t.py::a": {"outcome": "passed"}, "t.py::b": {"outcome": "failed", "signature": "E: x"}})
)


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("empty.json", "", "empty file"),
        ("blank.json", "  \n\n", "empty file"),
        ("truncated.json", GOOD_JSON[: len(GOOD_JSON) // 2], "truncated JSON"),
        ("garbage.json", '{"schema": "trtcap-record", "version": 1, "tests": {}} trailing', "invalid JSON"),
        ("foreign.json", '{"name": "package", "dependencies": {}}', "not a trtcap record"),
        ("array.json", "[1, 2, 3]", "not a trtcap record (top level is a JSON array"),
        ("schema.json", json.dumps({"schema": "other", "tests": {}}), "schema is 'other'"),
        ("future.json", json.dumps(record_data({}, version=99)), "newer than this trtcap"),
        ("zero.json", json.dumps(record_data({}, version=0)), "no valid \"version\""),
        ("outcome.json", json.dumps(record_data({"t.py::a": {"outcome": "exploded"}})), "invalid outcome 'exploded'"),
        ("tests.json", json.dumps(record_data([])), "must be an object keyed by node id"),
        ("binary.json", b"\xff\xfe\x00garbage\x80", "not a text file"),
        ("text.txt", "hello world\n", "neither a trtcap record"),
        ("truncated.xml", GOOD_XML[: len(GOOD_XML) // 2], "truncated XML"),
        ("foreign.xml", "<html><body>hi</body></html>", "not a JUnit XML report (root element <html>"),
        ("bad.xml", "<testsuites><testsuite tests='x'></testsuite></testsuites>", "is not a number"),
    ],
)
def test_load_record_rejects_bad_files(tmp_path, name, content, problem):
    path = write_input(tmp_path, name, content)
    with pytest.raises(RecordError) as info:
        load_record(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": ")
    assert problem in message
    assert "\n" not in message


# --- hostile input (issue 12, item 13): every one a one-line RecordError naming the file -----------------


def test_integer_beyond_the_digit_limit(tmp_path):
    text = json.dumps(record_data({})).replace('"arm": "7.5"', '"arm": ' + "9" * 5000)
    assert_rejected(write_input(tmp_path, "bigint.json", text), "invalid JSON")


def test_json_nested_200000_deep(tmp_path):
    text = '{"schema": "trtcap-record", "version": 1, "tests": {}, "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    assert_rejected(write_input(tmp_path, "deep.json", text), "nested too deeply")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(tmp_path, constant):
    """Python's json module reads NaN and Infinity, which JSON (and so the schema's "number") does not have."""
    data = record_data({"t.py::a": {"outcome": "passed", "duration": 0.5}})
    text = json.dumps(data).replace('"duration": 0.5', f'"duration": {constant}')
    assert constant in text
    assert_rejected(write_input(tmp_path, "nan.json", text), f"invalid JSON ({constant} is not a JSON number")


def test_a_record_cut_inside_a_string_reads_cleanly_naming_where_the_string_starts(tmp_path):
    text = '{\n  "schema": "trtcap-record",\n  "version": 1,\n  "tests": {\n    "t.py::a": {\n      "outcome": "pas'
    with pytest.raises(RecordError) as info:
        load_record(write_input(tmp_path, "cut.json", text))
    assert str(info.value).endswith(
        ": truncated JSON (the file ends early: unterminated string starting at line 6 column 18)")
