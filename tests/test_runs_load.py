"""Loading any input ``trtcap compare`` takes: one-line errors naming the file, bounded size and depth, typed fields."""

from __future__ import annotations

import json

import pytest
from runs_helpers import GOOD_XML

from pytest_trtcap.runs.inputs import RecordError
from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.record import SCHEMA, VERSION, dump_record


def _record(tests, **extra):
    data = {"schema": SCHEMA, "version": VERSION, "arm": "7.5", "tests": tests}
    data.update(extra)
    return data


def _write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


GOOD_JSON = json.dumps(
    _record({"t.py::a": {"outcome": "passed"}, "t.py::b": {"outcome": "failed", "signature": "E: x"}})
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
        ("future.json", json.dumps(_record({}, version=99)), "newer than this trtcap"),
        ("zero.json", json.dumps(_record({}, version=0)), "no valid \"version\""),
        ("outcome.json", json.dumps(_record({"t.py::a": {"outcome": "exploded"}})), "invalid outcome 'exploded'"),
        ("tests.json", json.dumps(_record([])), "must be an object keyed by node id"),
        ("binary.json", b"\xff\xfe\x00garbage\x80", "not a text file"),
        ("text.txt", "hello world\n", "neither a trtcap record"),
        ("truncated.xml", GOOD_XML[: len(GOOD_XML) // 2], "truncated XML"),
        ("foreign.xml", "<html><body>hi</body></html>", "not a JUnit XML report (root element <html>"),
        ("bad.xml", "<testsuites><testsuite tests='x'></testsuite></testsuites>", "is not a number"),
    ],
)
def test_load_record_rejects_bad_files(tmp_path, name, content, problem):
    path = _write(tmp_path, name, content)
    with pytest.raises(RecordError) as info:
        load_record(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": ")
    assert problem in message
    assert "\n" not in message


def test_load_record_missing_and_directory(tmp_path):
    with pytest.raises(RecordError, match="no such file"):
        load_record(tmp_path / "nope.json")
    with pytest.raises(RecordError, match="is a directory"):
        load_record(tmp_path)


def test_dump_and_load_roundtrip(tmp_path):
    tests = {
        "tests/test_ü.py::test_x[a|b-7.5]": {"outcome": "skipped", "signature": "Skipped: no", "reason": "no"},
        'tests/t.py::test_"quoted"': {"outcome": "xpassed", "signature": None, "reason": "maybe"},
    }
    data = _record(tests, reconciliation={"result": "COMPLETE", "disagreements": [], "sources": {}})
    dump_record(data, tmp_path / "r.json")
    loaded = load_record(tmp_path / "r.json")
    assert loaded.tests == tests and loaded.result == "COMPLETE" and loaded.arm == "7.5"
    dump_record(_record({}), tmp_path / "empty.json")
    assert load_record(tmp_path / "empty.json").tests == {}




# --- hostile input (issue 12, item 13): every one a one-line RecordError naming the file -----------------


def _assert_rejected(path, *needles):
    with pytest.raises(RecordError) as info:
        load_record(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": ") and "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


def test_integer_beyond_the_digit_limit(tmp_path):
    text = json.dumps(_record({})).replace('"arm": "7.5"', '"arm": ' + "9" * 5000)
    _assert_rejected(_write(tmp_path, "bigint.json", text), "invalid JSON")


def test_json_nested_200000_deep(tmp_path):
    text = '{"schema": "trtcap-record", "version": 1, "tests": {}, "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    _assert_rejected(_write(tmp_path, "deep.json", text), "nested too deeply")


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: d["tests"]["t.py::a"].update(reason=12345), "'reason' must be a string or null (got int)"),
        (lambda d: d["tests"]["t.py::a"].update(signature=["x"]), "'signature' must be a string or null"),
        (lambda d: d["tests"]["t.py::a"].update(categories="failed"), "'categories' must be an array of strings"),
        (lambda d: d["tests"]["t.py::a"].update(when="lunch"), "invalid 'when' 'lunch'"),
        (lambda d: d["tests"]["t.py::a"].update(duration="1s"), "'duration' must be"),
        (lambda d: d.update(reconciliation={"result": "COMPLETE", "disagreements": 7}),
         "'disagreements' must be an array"),
        (lambda d: d.update(reconciliation={"result": "MAYBE"}), "result COMPLETE or INCOMPLETE"),
        (lambda d: d.update(arm=7.5), "'arm' must be a string or null (got float)"),
        (lambda d: d.update(collected="12"), "'collected' must be an integer or null"),
        (lambda d: d.update(finished=1), "'finished' must be true or false or null"),
        (lambda d: d.update(running=[1]), "'running' must be an array of strings"),
        (lambda d: d.update(collection_errors={"m.py": "boom"}), "collection error 'm.py' must be an object"),
        (lambda d: d.update(version=True), "no valid \"version\""),
    ],
)
def test_wrong_typed_fields(tmp_path, mutate, needle):
    data = _record({"t.py::a": {"outcome": "failed", "signature": "E: x"}})
    mutate(data)
    _assert_rejected(_write(tmp_path, "typed.json", json.dumps(data)), needle)


def test_dev_zero_and_devices():
    _assert_rejected("/dev/zero", "is a device, not a file")


def test_oversized_file_is_rejected_without_reading_it_all(tmp_path, monkeypatch):
    from pytest_trtcap.runs import inputs

    monkeypatch.setattr(inputs, "MAX_BYTES", 1024)
    big = json.dumps(_record({f"t.py::t{i}": {"outcome": "passed"} for i in range(100)}))
    _assert_rejected(_write(tmp_path, "big.json", big), "larger than")


def test_lone_surrogates_round_trip_losslessly(tmp_path):
    nodeid, message = "t.py::test_\udcff", "AssertionError: f_\udcff"
    data = _record({nodeid: {"outcome": "failed", "signature": message}})
    dump_record(data, tmp_path / "s.json")
    assert load_record(tmp_path / "s.json").tests == {nodeid: {"outcome": "failed", "signature": message}}


# --- versions ------------------------------------------------------------------------------------------


def test_version_1_record_is_read_and_upgraded(tmp_path):
    data = _record({"t.py::a": {"outcome": "passed"},
                    "broken.py": {"outcome": "error", "signature": "ImportError: x", "when": "collect"},
                    "skipped.py": {"outcome": "skipped", "signature": "Skipped: y", "when": "collect"}}, version=1)
    rec = load_record(_write(tmp_path, "v1.json", json.dumps(data)))
    assert set(rec.tests) == {"t.py::a", "skipped.py"}
    assert rec.collection_errors == {"broken.py": {"signature": "ImportError: x", "message": None}}


def test_current_version_is_written(tmp_path):
    dump_record(_record({}), tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["version"] == VERSION == 2


# --- the published JSON Schema ---------------------------------------------------------------------------


def test_json_schema_is_shipped_and_matches_the_validator():
    from importlib import resources

    from pytest_trtcap.runs.outcomes import OUTCOMES, WHENS
    from pytest_trtcap.runs.validate import ENTRY_FIELDS, TOP_FIELDS

    schema = json.loads(
        resources.files("pytest_trtcap.runs").joinpath("record.schema.json").read_text(encoding="utf-8")
    )
    assert schema["properties"]["schema"]["const"] == SCHEMA
    assert schema["properties"]["version"]["maximum"] == VERSION
    test = schema["$defs"]["test"]["properties"]
    assert test["outcome"]["enum"] == list(OUTCOMES)
    assert test["when"]["enum"] == [*WHENS, None]
    names = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}
    for fields, properties in ((TOP_FIELDS, schema["properties"]), (ENTRY_FIELDS, test)):
        for name, types in fields.items():
            declared = set(properties[name].get("type", ["string"])) - {"null"}  # "when": an enum of strings
            assert declared == {names[t] for t in types} - ({"integer"} if float in types else set()), name
