"""Helpers shared by the ``trtcap`` command's tests: run the command, write a small suite, one sweep of it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

BEFORE, AFTER = "8.9", "7.5"  # compare runs 8.9 -> 7.5: what moving a suite onto Turing changes

#: A JUnit file pytest would write for three tests: one passed, one failed, one xfailed (read by compare).
GOOD_XML = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="3">'
    '<testcase classname="t" name="a"/>'
    '<testcase classname="t" name="b"><failure message="ValueError: 0x1f">tb</failure></testcase>'
    '<testcase classname="t" name="c"><skipped type="pytest.xfail" message="known"/></testcase>'
    '</testsuite></testsuites>'
)

TRANSITIONS_SUITE = textwrap.dedent(
    """
    import pytest

    TURING = "7.5"

    def pytest_generate_tests(metafunc):
        if "only" in metafunc.fixturenames:  # a test that exists on one arm only
            arm = metafunc.config.getoption("--trt-target-sm")
            metafunc.parametrize("only", ["turing" if arm == TURING else "ada"])

    @pytest.fixture
    def arm(request):
        return request.config.getoption("--trt-target-sm")

    def test_stable():
        pass

    def test_regression(arm):
        assert arm != TURING, f"fp32 gemm mismatch in engine at {hex(id(arm))}"

    def test_fixed(arm):
        assert arm == TURING, "fails on ada"

    def test_pass_to_skip(arm):
        if arm == TURING:
            pytest.skip("trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)")

    def test_fail_to_skip(arm):
        if arm == TURING:
            pytest.skip("trtcap: attention is not built for SM 7.5")
        raise RuntimeError("attention kernel missing")

    def test_unskip(arm):
        if arm != TURING:
            pytest.skip("only meaningful on turing")

    def test_changed(arm):
        if arm == TURING:
            pytest.xfail("known turing limitation")

    def test_same_status_new_signature(arm):
        if arm == TURING:
            raise ValueError("bad shape 3x4")
        raise TypeError("unsupported dtype bf16")

    def test_same_signature(arm):
        raise RuntimeError(f"engine at {hex(id(object()))} failed after {len(arm)} tries")

    def test_only_on_one_arm(only):
        pass
    """
)


def trtcap(*args, cwd=None, timeout=180, env=None):
    """``trtcap ARGS`` in a subprocess, with this process's ``os.environ`` (or ``env``). Passed explicitly: once
    something in the test process has imported readline, GNU readline has put ``COLUMNS=80`` into the process's C
    environment, which ``os.environ`` does not show, and a child given no ``env`` would draw its tables that wide."""
    return subprocess.run([sys.executable, "-m", "pytest_trtcap", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else dict(os.environ))


def make_suite(path, files):
    path.mkdir(parents=True, exist_ok=True)
    (path / "pytest.ini").write_text("[pytest]\n")
    for name, text in files.items():
        (path / name).write_text(textwrap.dedent(text))
    return path


def one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr
    assert len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


@pytest.fixture(scope="session")
def swept(tmp_path_factory):
    """One 2-arm sweep of the transitions suite (JSON output), shared by the tests below."""
    suite = make_suite(tmp_path_factory.mktemp("transitions"), {"test_suite.py": TRANSITIONS_SUITE})
    out = suite / "out"
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", out, "--format", "json", "--", "test_suite.py", cwd=suite)
    return suite, out, proc


def run_pytest(tmp_path, *args, arm="7.5"):
    """pytest with the recorder at ``arm`` in ``tmp_path``: (process, stream path, JUnit path)."""
    stream, xml = tmp_path / "s.jsonl", tmp_path / "j.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--trt-target-sm", arm, "-p", "pytest_trtcap.runs.recorder",
         f"--trtcap-record={stream}", f"--junitxml={xml}", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=tmp_path, capture_output=True, text=True, errors="backslashreplace", timeout=120,
    )
    return proc, stream, xml


def record_data(tests, **extra):
    """A current-version record of arm 7.5 holding ``tests``; ``extra`` adds or replaces top-level fields."""
    from pytest_trtcap.runs.record import SCHEMA, VERSION  # here: this module is a plugin of every test session

    data = {"schema": SCHEMA, "version": VERSION, "arm": "7.5", "tests": tests}
    data.update(extra)
    return data


def write_input(tmp_path, name, content):
    """``content`` (bytes as they are, text as UTF-8) written to ``tmp_path / name``."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def assert_rejected(path, *needles):
    """``load_record(path)`` is refused with one line that starts with the file and holds each of ``needles``."""
    from pytest_trtcap.runs.load import load_record
    from pytest_trtcap.runs.record import RecordError

    with pytest.raises(RecordError) as info:
        load_record(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": ") and "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


def entry(outcome, signature=None, reason=None):
    """One test's record entry."""
    return {"outcome": outcome, "signature": signature, "reason": reason}


def compare_result_sample():
    """``trtcap compare`` of two complete records: one regression (its node id and signature hold a pipe), one fix."""
    from pytest_trtcap.runs.compare import compare_records
    from pytest_trtcap.runs.record import Record

    complete = {"result": "COMPLETE", "disagreements": []}
    before = Record("b.json", record_data({"t.py::x[a|b]": entry("passed"), "t.py::y": entry("failed", "E: 1")},
                                          reconciliation=complete))
    after = Record("a.json", record_data({"t.py::x[a|b]": entry("failed", "ValueError: bad | pipe"),
                                          "t.py::y": entry("passed")}, reconciliation=complete))
    return compare_records(before, after)

