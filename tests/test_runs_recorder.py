"""The recorder plugin inside an arm's pytest: it never breaks the run it records."""

from __future__ import annotations

from runs_helpers import run_pytest

from pytest_trtcap.runs.reconcile import reconcile
from pytest_trtcap.runs.stream import read_stream

SURROGATE_SUITE = """
import os

def test_first():
    pass

def test_surrogate():
    assert 0, os.fsdecode(b"f_\\xff")

def test_skip_surrogate():
    import pytest
    pytest.skip("reason \\udcff")

def test_after():
    pass
"""


def test_lone_surrogate_in_a_message_is_stored_and_the_run_continues(tmp_path):
    (tmp_path / "test_s.py").write_text(SURROGATE_SUITE)
    proc, stream_path, _ = run_pytest(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # plain pytest's answer: 1 failed, 1 skipped, 2 passed
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
    assert stream_path.read_bytes().isascii()  # escaped in the JSON, not dropped
    stream = read_stream(stream_path)
    tests = stream["tests"]
    assert tests["test_s.py::test_surrogate"]["signature"] == "AssertionError: f_\udcff"  # losslessly
    assert tests["test_s.py::test_skip_surrogate"]["reason"] == "reason \udcff"
    assert tests["test_s.py::test_after"]["outcome"] == "passed"
    assert reconcile(stream, returncode=proc.returncode)["result"] == "COMPLETE"


def test_unwritable_record_path_is_a_usage_error(tmp_path):
    (tmp_path / "test_ok.py").write_text("def test_ok(): pass\n")
    proc, _, _ = run_pytest(tmp_path, "--trtcap-record", str(tmp_path / "no" / "such" / "dir" / "s.jsonl"))
    assert proc.returncode == 4
    assert "--trtcap-record: cannot write" in proc.stderr


def test_under_xdist_only_the_controller_records(tmp_path):
    import pytest

    pytest.importorskip("xdist")
    (tmp_path / "test_ok.py").write_text(
        "import pytest\n@pytest.mark.parametrize('i', range(4))\ndef test_ok(i): pass\n"
    )
    proc, stream_path, _ = run_pytest(tmp_path, "-n", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = stream_path.read_text()
    assert text.count('"schema": "trtcap-stream"') == 1 and text.count('"e": "finish"') == 1
    assert len(read_stream(stream_path)["tests"]) == 4
