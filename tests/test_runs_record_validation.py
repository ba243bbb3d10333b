"""Field-by-field validation of a record (``pytest_trtcap.runs.validate``, the rules ``record.schema.json``
publishes): a record that breaks them is refused in one line naming the file and the field."""

from __future__ import annotations

import json

import pytest
from runs_helpers import assert_rejected, record_data, write_input

from pytest_trtcap.runs.record import SCHEMA, VERSION, RecordError, validate_record


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: d["tests"]["t.py::a"].update(reason=12345), "'reason' must be a string or null (got int)"),
        (lambda d: d["tests"]["t.py::a"].update(signature=["x"]), "'signature' must be a string or null"),
        (lambda d: d["tests"]["t.py::a"].update(categories="failed"), "'categories' must be an array of strings"),
        (lambda d: d["tests"]["t.py::a"].update(when="lunch"), "invalid 'when' 'lunch'"),
        (lambda d: d["tests"]["t.py::a"].update(layer_findings="fp32"), "'layer_findings' must be an array of strings"),
        (lambda d: d["tests"]["t.py::a"].update(layers_read=[1]), "'layers_read' must be [networks, engines]"),
        (lambda d: d["tests"]["t.py::a"].update(layers_read=[1, -2]), "'layers_read' must be [networks, engines]"),
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
    data = record_data({"t.py::a": {"outcome": "failed", "signature": "E: x"}})
    mutate(data)
    assert_rejected(write_input(tmp_path, "typed.json", json.dumps(data)), needle)


def test_json_schema_is_shipped_and_matches_the_validator():
    from importlib import resources

    from pytest_trtcap.runs.outcomes import OUTCOMES, WHENS
    from pytest_trtcap.runs.record import ENTRY_FIELDS, TOP_FIELDS

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


@pytest.mark.parametrize("data, problem", [
    (None, 'not a trtcap record (top level is a JSON null, expected an object with "schema": "trtcap-record")'),
    ("x", 'not a trtcap record (top level is a JSON string, expected an object with "schema": "trtcap-record")'),
    ({"b": 1, "a": 2}, 'not a trtcap record (no "schema": "trtcap-record"; top-level keys: a, b)'),
    ({"schema": "trtcap-record", "version": 2, "tests": {"t": 1}}, "test 't': entry must be an object"),
    ({"schema": "trtcap-record", "version": 2, "tests": {}, "stderr_tail": "x"},
     "record's 'stderr_tail' must be an array of strings"),
    ({"schema": "trtcap-record", "version": 2, "tests": {}, "collection_errors": {"m.py": {"message": 1}}},
     "collection error 'm.py': 'message' must be a string or null (got int)"),
    ({"schema": "trtcap-record", "version": 2, "tests": {}, "reconciliation": {"result": "COMPLETE", "sources": []}},
     "reconciliation's 'sources' must be an object or null (got list)"),
])
def test_a_value_that_breaks_the_schema_is_refused_naming_the_field(data, problem):
    with pytest.raises(RecordError) as info:
        validate_record("rec.json", data)
    assert str(info.value) == f"rec.json: {problem}"


def test_a_valid_record_is_returned_as_it_is():
    data = record_data({"t.py::a": {"outcome": "xfailed", "reason": "known", "when": "call", "duration": 0,
                                    "categories": ["xfailed"]}},
                       collected=1, finished=None, duration=1.5, reconciliation={"result": "INCOMPLETE"})
    assert validate_record("rec.json", data) is data


def test_a_long_node_id_is_cut_in_the_message():
    nodeid = "t.py::" + "x" * 1000
    with pytest.raises(RecordError) as info:
        validate_record("rec.json", record_data({nodeid: {"outcome": "gone"}}))
    assert len(str(info.value)) < 400 and "invalid outcome 'gone'" in str(info.value)


@pytest.mark.parametrize("field", ["collected", "deselected"])
def test_a_negative_count_is_refused_naming_the_field(tmp_path, field):
    """pytest never counts below zero: a record that does was edited or broken, and reconciling against it would
    prove nothing."""
    data = record_data({"t.py::a": {"outcome": "passed"}})
    data[field] = -3
    assert_rejected(write_input(tmp_path, "negative.json", json.dumps(data)), f"record's '{field}' must not be "
                                                                                 "negative (got -3)")


def test_the_schema_says_counts_are_not_negative():
    from importlib import resources

    schema = json.loads(
        resources.files("pytest_trtcap.runs").joinpath("record.schema.json").read_text(encoding="utf-8")
    )
    assert [schema["properties"][name].get("minimum") for name in ("collected", "deselected")] == [0, 0]


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda d: d.update(pytest={"exitstatus": "1"}), "'pytest.exitstatus' must be an integer or null (got str)"),
        (lambda d: d.update(pytest={"returncode": True}), "'pytest.returncode' must be an integer or null (got bool)"),
        (lambda d: d.update(pytest={"version": 9}), "'pytest.version' must be a string or null (got int)"),
        (lambda d: d.update(pytest={"rootdir": []}), "'pytest.rootdir' must be a string or null (got list)"),
        (lambda d: d.update(pytest={"args": "-x"}), "'pytest.args' must be an array of strings"),
        (lambda d: d.update(pytest={"command": [1]}), "'pytest.command' must be an array of strings"),
        (lambda d: d.update(files={"record": 1}), "'files.record' must be a string (got int)"),
    ],
)
def test_nested_fields_the_schema_types_are_checked_too(tmp_path, mutate, needle):
    """``record.schema.json`` types the ``pytest`` object's fields and the ``files`` values: a record that breaks
    them is refused like any other wrong-typed field, not accepted as valid."""
    data = record_data({"t.py::a": {"outcome": "failed", "signature": "E: x"}})
    mutate(data)
    assert_rejected(write_input(tmp_path, "nested.json", json.dumps(data)), needle)



@pytest.mark.parametrize("line, problem", [(0, "'line' must be 1 or more (got 0)"),
                                           (True, "'line' must be an integer or null")])
def test_a_tests_line_that_is_no_line_number_is_refused_naming_it(tmp_path, line, problem):
    """Annotations point at the line: a record whose line cannot be one was edited or broken."""
    data = record_data({"t.py::a": {"outcome": "failed", "line": line}})
    assert_rejected(write_input(tmp_path, "line.json", json.dumps(data)), "test 't.py::a'", problem)
