"""One arm's pytest run: a run that dies, is killed, loses a worker or fails to start is INCOMPLETE, with why."""

from __future__ import annotations

import json

import pytest
from runs_helpers import make_suite, trtcap

from pytest_trtcap.runs.load import load_record

CRASH_SUITE = """
import os, signal

def test_first():
    pass

def test_dies(request):
    if request.config.getoption("--trt-target-sm") == "7.5":
        os.write(2, b"fatal: cuda context lost\\n")
        os.{how}

def test_after():
    pass
"""


def test_sweep_arm_that_exits_mid_run_is_incomplete(tmp_path):
    suite = make_suite(tmp_path, {"test_crash.py": CRASH_SUITE.format(how="_exit(3)")})
    out = suite / "out"
    out.mkdir()
    (out / "arm-7.5.xml").write_text('<testsuites><testsuite tests="0"/></testsuites>')  # stale, from an earlier sweep
    (out / "arm-7.5.stream.jsonl").write_text(  # a stale stream that finished cleanly
        '{"schema": "trtcap-stream", "version": 2}\n'
        '{"e": "test", "id": "test_crash.py::test_after", "outcome": "passed"}\n'
        '{"e": "finish", "exitstatus": 0, "counted": {"collected": 1}}\n')
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", out, "--format", "json", "--", "-s", cwd=suite)
    assert proc.returncode == 2, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "INCOMPLETE"
    arm = result["arms"][0]
    assert arm["arm"] == "7.5" and arm["result"] == "INCOMPLETE" and arm["returncode"] == 3
    text = "\n".join(arm["disagreements"])
    assert "exit code 3 before the session finished while running test_crash.py::test_dies" in text
    assert "collected: 3 tests collected, the record has results for 1 (2 missing)" in text
    assert not (out / "arm-7.5.xml").exists()  # the stale XML was removed, never taken for this run's
    assert "fatal: cuda context lost" in arm["stderr_tail"]
    assert result["arms"][1]["result"] == "COMPLETE"
    assert {d["class"] for d in result["differences"]} == {"not run on some arms"}  # not arm-specific failures


def test_sweep_arm_killed_by_a_signal_is_incomplete(tmp_path):
    suite = make_suite(tmp_path, {"test_crash.py": CRASH_SUITE.format(how="kill(os.getpid(), signal.SIGKILL)")})
    proc = trtcap("sweep", "--arms", "7.5", "--out", "out", "-q", cwd=suite)
    assert proc.returncode == 2
    assert (
        "RESULT: INCOMPLETE: arm 7.5: process: pytest was killed by SIGKILL while running test_crash.py::test_dies"
        in proc.stdout
    )
    assert "Arm 7.5 is INCOMPLETE" in proc.stdout and "stderr tail:" in proc.stdout
    rec = load_record(suite / "out" / "arm-7.5.json")  # the partial record is still a valid record
    assert rec.result == "INCOMPLETE" and list(rec.tests) == ["test_crash.py::test_first"]
    assert rec.data["running"] == ["test_crash.py::test_dies"]


def test_sweep_xdist_worker_crash_is_incomplete(tmp_path):
    pytest.importorskip("xdist")
    suite = make_suite(tmp_path, {"test_crash.py": CRASH_SUITE.format(how="_exit(3)")})
    proc = trtcap("sweep", "--arms", "7.5", "--out", "out", "-q", "--format", "json", "--", "-n", "2", cwd=suite)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    arm = json.loads(proc.stdout)["arms"][0]
    assert arm["result"] == "INCOMPLETE" and arm["returncode"] == 1  # pytest itself finished normally
    assert any("lost to a crashed worker: test_crash.py::test_dies" in d for d in arm["disagreements"])
    assert arm["counts"]["passed"] == 2 and arm["counts"]["failed"] == 1


def test_sweep_pytest_usage_error_is_incomplete(tmp_path):
    suite = make_suite(tmp_path, {"test_ok.py": "def test_ok():\n    pass\n"})
    proc = trtcap("sweep", "--arms", "7.5", "--out", "out", "-q", "--", "--no-such-pytest-flag", cwd=suite)
    assert proc.returncode == 2
    assert "RESULT: INCOMPLETE" in proc.stdout
    assert "--no-such-pytest-flag" in proc.stdout  # pytest's own complaint, from the stderr tail
