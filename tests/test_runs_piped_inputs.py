"""``trtcap compare`` attacked from outside: inputs that arrive through a pipe (``<(...)``, a named pipe)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from runs_helpers import GOOD_XML, record_data

STREAM = "\n".join(json.dumps(event) for event in (
    {"schema": "trtcap-stream", "version": 2, "arm": "7.5"},
    {"e": "collected", "n": 2, "deselected": 0},
    {"e": "test", "id": "t.py::test_a", "outcome": "passed", "when": "call", "categories": ["passed"]},
    {"e": "test", "id": "t.py::test_b", "outcome": "failed", "signature": "ValueError: x", "when": "call",
     "categories": ["failed"]},
    {"e": "finish", "exitstatus": 1, "counted": {"collected": 2, "failed_reports": 1, "deselected": 0,
                                                  "outcomes": {"passed": 1, "failed": 1}}},
)) + "\n"
RECORD = json.dumps(record_data({"t.py::test_a": {"outcome": "passed"}, "t.py::test_b": {"outcome": "failed"}}))


def _fifo_with(path, data):
    """A named pipe at ``path`` that a thread fills with ``data`` once a reader opens it."""
    os.mkfifo(path)

    def feed():
        with open(path, "wb") as fh:
            try:
                fh.write(data.encode())
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("content", [RECORD, STREAM, GOOD_XML], ids=["record", "stream", "junit"])
def test_every_input_kind_is_read_through_a_pipe(tmp_path, content):
    """``trtcap compare <(curl ...) after.json``: a pipe can be read once, whatever the file turns out to be."""
    writer = _fifo_with(tmp_path / "before", content)
    after = tmp_path / "after"
    after.write_text(content, encoding="utf-8")
    command = [sys.executable, "-m", "pytest_trtcap", "compare", tmp_path / "before", after, "--accept-unverified",
               "--format", "json"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("trtcap compare hung on a named pipe (it opened the pipe a second time)")
    writer.join(5)
    assert "trtcap: error" not in proc.stderr and proc.returncode in (0, 1), proc.stderr
    before = json.loads(proc.stdout)["before"]
    assert (before["tests"], before["counts"]["failed"]) == (json.loads(proc.stdout)["after"]["tests"], 1), before
