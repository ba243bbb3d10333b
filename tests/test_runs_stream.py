"""The recorder's stream read back: tolerant of a run that died mid-write, strict about foreign files."""

from __future__ import annotations

import json

import pytest
from runs_helpers import write_input

from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.record import STREAM_SCHEMA, RecordError
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


_HEADER = json.dumps({"schema": STREAM_SCHEMA, "version": 2, "arm": "7.5"})


@pytest.mark.parametrize(
    "event",
    [
        {"e": "test", "id": "t.py::a"},  # no outcome
        {"e": "test", "id": "t.py::a", "outcome": "banana"},
        {"e": "test", "id": "t.py::a", "outcome": "failed", "signature": 5},
        {"e": "test", "id": "t.py::a", "outcome": "skipped", "reason": ["a"]},
        {"e": "test", "id": "t.py::a", "outcome": "failed", "when": 7},
        {"e": "test", "id": "t.py::a", "outcome": "failed", "categories": "failed"},
        {"e": "collection_error", "id": "m.py", "signature": [1]},
        {"e": "start", "id": ["t.py::a"]},
        {"e": "finish", "exitstatus": "x"},
        {"e": "finish", "exitstatus": 0, "counted": {"collected": "3"}},
        {"e": "finish", "exitstatus": 0, "counted": {"collected": 1, "outcomes": [1]}},
        {"e": "finish", "exitstatus": 0, "counted": {"collected": 1, "outcomes": {"passed": "1"}}},
    ],
)
def test_an_event_that_breaks_the_record_rules_is_an_unreadable_line(tmp_path, capsys, event):
    """``trtcap compare`` reads a bare stream too: an event whose fields the record schema would refuse is counted
    as an unreadable line (the record is INCOMPLETE, saying so), never carried on to crash the comparison."""
    lines = [_HEADER, json.dumps({"e": "collected", "n": 1, "deselected": 0}), json.dumps(event), ""]
    path = write_input(tmp_path, "s.stream.jsonl", "\n".join(lines))
    stream = read_stream(path)
    assert stream["bad_lines"] == 1
    assert "t.py::a" not in stream["tests"] and "m.py" not in stream["collection_errors"]
    assert not stream["finished"]
    rec = load_record(path)
    assert rec.result == "INCOMPLETE"
    assert any("1 unreadable line(s)" in d for d in rec.disagreements)
    from pytest_trtcap.runs.cli import main

    for fmt in ("table", "json", "markdown"):
        assert main(["compare", str(path), str(path), "--format", fmt]) == 2
        out = capsys.readouterr().out
        assert (json.loads(out)["result"] == "INCOMPLETE") if fmt == "json" else ("RESULT: INCOMPLETE" in out)
