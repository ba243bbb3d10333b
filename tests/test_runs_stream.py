"""The recorder's stream read back: tolerant of a run that died mid-write, strict about foreign files."""

from __future__ import annotations

import json

import pytest
from runs_helpers import write_input

from pytest_trtcap.runs.inputs import RecordError
from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.record import STREAM_SCHEMA
from pytest_trtcap.runs.stream import read_stream


def test_read_stream_survives_a_torn_last_line(tmp_path):
    lines = [
        json.dumps({"schema": STREAM_SCHEMA, "version": 1, "arm": "7.5"}),
        json.dumps({"e": "collected", "n": 3, "deselected": 1}),
        json.dumps({"e": "start", "id": "t.py::a"}),
        json.dumps({"e": "test", "id": "t.py::a", "outcome": "passed", "signature": None, "when": "call",
                    "categories": ["passed"]}),
        json.dumps({"e": "start", "id": "t.py::b"}),
        '{"e": "test", "id": "t.py::b", "outc',
    ]
    path = write_input(tmp_path, "s.jsonl", "\n".join(lines))
    stream = read_stream(path)
    assert list(stream["tests"]) == ["t.py::a"]
    assert stream["running"] == ["t.py::b"]
    assert stream["collected"] == 3 and stream["deselected"] == 1
    assert not stream["finished"] and stream["bad_lines"] == 0
    rec = load_record(path)  # a bare stream loads too, reconciled with what it has
    assert rec.result == "INCOMPLETE"
    assert any("while running t.py::b" in d for d in rec.disagreements)


def test_read_stream_rejects_foreign_jsonl(tmp_path):
    with pytest.raises(RecordError, match="not a trtcap recorder stream"):
        read_stream(write_input(tmp_path, "x.jsonl", '{"a": 1}\n{"b": 2}\n'))
    with pytest.raises(RecordError, match="missing"):
        read_stream(tmp_path / "none.jsonl")


def test_collection_errors_are_kept_once_and_counted_per_report(tmp_path):
    error = {"e": "collection_error", "id": "m.py", "signature": "ImportError: x", "message": "ImportError: x"}
    lines = [json.dumps({"schema": STREAM_SCHEMA, "version": 2}), json.dumps(error), json.dumps(error),
             json.dumps({"e": "finish", "exitstatus": 1, "counted": {"collected": 0}})]
    stream = read_stream(write_input(tmp_path, "s.jsonl", "\n".join(lines) + "\n"))
    assert stream["collection_errors"] == {"m.py": {"signature": "ImportError: x", "message": "ImportError: x"}}
    assert stream["collection_error_reports"] == 2 and stream["tests"] == {}
    assert stream["counted"] == {"collected": 0} and stream["finished"]
