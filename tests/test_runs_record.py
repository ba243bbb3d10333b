"""The run record (``pytest_trtcap.runs.record``): built from a recorder stream, written one test per line and read
back losslessly, version 1 upgraded; the ``Record`` view of a loaded one."""

from __future__ import annotations

import json

from runs_helpers import record_data, write_input

from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.record import SCHEMA, VERSION, Record, build_record, dump_record, upgrade


def test_dump_and_load_roundtrip(tmp_path):
    tests = {
        "tests/test_ü.py::test_x[a|b-7.5]": {"outcome": "skipped", "signature": "Skipped: no", "reason": "no"},
        'tests/t.py::test_"quoted"': {"outcome": "xpassed", "signature": None, "reason": "maybe"},
    }
    data = record_data(tests, reconciliation={"result": "COMPLETE", "disagreements": [], "sources": {}})
    dump_record(data, tmp_path / "r.json")
    loaded = load_record(tmp_path / "r.json")
    assert loaded.tests == tests and loaded.result == "COMPLETE" and loaded.arm == "7.5"
    dump_record(record_data({}), tmp_path / "empty.json")
    assert load_record(tmp_path / "empty.json").tests == {}


def test_lone_surrogates_round_trip_losslessly(tmp_path):
    nodeid, message = "t.py::test_\udcff", "AssertionError: f_\udcff"
    data = record_data({nodeid: {"outcome": "failed", "signature": message}})
    dump_record(data, tmp_path / "s.json")
    assert load_record(tmp_path / "s.json").tests == {nodeid: {"outcome": "failed", "signature": message}}


def test_version_1_record_is_read_and_upgraded(tmp_path):
    data = record_data({"t.py::a": {"outcome": "passed"},
                    "broken.py": {"outcome": "error", "signature": "ImportError: x", "when": "collect"},
                    "skipped.py": {"outcome": "skipped", "signature": "Skipped: y", "when": "collect"}}, version=1)
    rec = load_record(write_input(tmp_path, "v1.json", json.dumps(data)))
    assert set(rec.tests) == {"t.py::a", "skipped.py"}
    assert rec.collection_errors == {"broken.py": {"signature": "ImportError: x", "message": None}}


def test_current_version_is_written(tmp_path):
    dump_record(record_data({}), tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["version"] == VERSION == 2


def test_one_test_per_line_and_the_header_before_them(tmp_path):
    tests = {"t.py::a": {"outcome": "passed"}, "t.py::b": {"outcome": "failed", "signature": "E: x"}}
    dump_record(record_data(tests, label="mine"), tmp_path / "r.json")
    lines = (tmp_path / "r.json").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert '  "label": "mine",' in lines
    assert lines[-4:-1] == ['    "t.py::a": {"outcome": "passed"},',
                            '    "t.py::b": {"outcome": "failed", "signature": "E: x"}',
                            "  }"]
    assert not list(tmp_path.glob("*.tmp"))  # written beside, then moved into place


def test_upgrade_moves_version_1_collection_errors_out_of_tests():
    v1 = {"version": 1, "tests": {"m.py": {"outcome": "error", "when": "collect", "signature": "E"},
                                  "m.py::t": {"outcome": "error", "when": "setup", "signature": "E"}}}
    out = upgrade(v1)
    assert out["tests"] == {"m.py::t": {"outcome": "error", "when": "setup", "signature": "E"}}
    assert out["collection_errors"] == {"m.py": {"signature": "E", "message": None}}
    assert upgrade({"version": 2, "tests": {}})["collection_errors"] == {}


def test_build_record_from_a_stream():
    stream = {"meta": {"arm": "8.9", "pytest": "9.0", "args": ["-q"], "rootdir": "/r"}, "exitstatus": 1,
              "collected": 2, "finished": True, "running": [],
              "tests": {"t.py::a": {"outcome": "failed"}}, "collection_errors": {}}
    data = build_record(stream, {"result": "COMPLETE", "disagreements": []}, returncode=1, stderr_tail=["boom"])
    assert (data["schema"], data["version"], data["arm"], data["label"]) == (SCHEMA, 2, "8.9", "arm 8.9")
    assert data["pytest"] == {"version": "9.0", "args": ["-q"], "rootdir": "/r", "exitstatus": 1, "returncode": 1}
    assert (data["collected"], data["deselected"], data["finished"]) == (2, 0, True)
    assert "stderr_tail" not in data  # kept only for a run that did not complete
    incomplete = build_record(stream, {"result": "INCOMPLETE"}, arm="7.5", stderr_tail=["boom"])
    assert (incomplete["arm"], incomplete["stderr_tail"]) == ("7.5", ["boom"])


def test_record_view_label_result_and_counts(tmp_path):
    gpu = {"outcome": "skipped", "reason": "trtcap: needs a GPU: RuntimeError: no driver"}
    rec = Record(tmp_path / "old.json", record_data({"a": {"outcome": "passed"}, "b": gpu,
                                                      "c": {"outcome": "skipped", "reason": "other"}}, arm=None))
    assert (rec.label, rec.result, rec.disagreements, rec.collection_errors) == ("old.json", None, [], {})
    assert rec.counts() == {"passed": 1, "failed": 0, "error": 0, "skipped": 2, "xfailed": 0, "xpassed": 0}
    assert rec.needs_gpu() == 1
    armed = Record("x.json", record_data({}, reconciliation={"result": "INCOMPLETE", "disagreements": ["d"]}))
    assert (armed.label, armed.result, armed.disagreements) == ("arm 7.5", "INCOMPLETE", ["d"])
