"""``trtcap`` as an outside user meets it: bad command lines and hostile output directories and records."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from runs_helpers import make_suite, one_line_error, record_data, trtcap, write_input

PASSING = {"test_one.py": "def test_one():\n    pass\n"}


def _error_lines(proc):
    return [line for line in proc.stderr.splitlines() if line.startswith("trtcap: error:")]


def test_pytest_arguments_without_double_dash_say_where_they_go(tmp_path):
    suite = make_suite(tmp_path / "suite", PASSING)
    proc = trtcap("sweep", "--arms", "7.5", "--out", tmp_path / "o", "test_one.py", "-k", "one", cwd=suite)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = _error_lines(proc)
    assert len(errors) == 1, proc.stderr
    assert "test_one.py -k one" in errors[0] and "after `--`" in errors[0], errors[0]
    assert proc.stderr.startswith("usage: trtcap sweep"), proc.stderr  # the sweep's usage, not the top level's
    assert proc.stdout == "" and not (tmp_path / "o").exists()


def test_empty_out_names_the_flag_and_the_value(tmp_path):
    suite = make_suite(tmp_path / "suite", PASSING)
    proc = trtcap("sweep", "--arms", "7.5", "--out", "", cwd=suite)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = _error_lines(proc)
    assert len(errors) == 1 and "--out ''" in errors[0], proc.stderr
    assert proc.stdout == ""


def test_out_that_is_a_file_names_the_flag_and_leaves_the_file(tmp_path):
    suite = make_suite(tmp_path / "suite", PASSING)
    target = tmp_path / "results.json"
    target.write_text("keep me\n")
    proc = trtcap("sweep", "--arms", "7.5", "--out", target, cwd=suite)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = _error_lines(proc)
    assert len(errors) == 1 and f"--out {str(target)!r}" in errors[0], proc.stderr
    assert target.read_text() == "keep me\n"


def test_a_planted_link_beside_the_record_is_never_written_through(tmp_path):
    """The record is written to a file beside it, then moved into place: a link already there must not make
    the sweep overwrite the file it points to, nor leave the record as a link to it."""
    suite = make_suite(tmp_path / "suite", PASSING)
    out = tmp_path / "o"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / "arm-7.5.json.tmp").symlink_to(victim)
    proc = trtcap("sweep", "--arms", "7.5", "--out", out, "-q", cwd=suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert victim.read_text() == "precious\n"
    record = out / "arm-7.5.json"
    assert not record.is_symlink() and json.loads(record.read_text())["arm"] == "7.5"


def test_a_record_that_cannot_be_written_leaves_no_partial_file(tmp_path):
    from pytest_trtcap.runs.record import dump_record

    path = tmp_path / "arm-7.5.json"
    path.write_text("the earlier record\n")
    data = record_data({"t.py::test_a": {"outcome": "passed"}, "t.py::test_b": {"outcome": "passed", "x": {1, 2}}})
    try:
        dump_record(data, path)
    except TypeError:
        pass
    assert path.read_text() == "the earlier record\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arm-7.5.json"]


def test_a_version_of_the_wrong_type_is_shown_as_written(tmp_path):
    path = write_input(tmp_path, "v.json", json.dumps(record_data({}, version="2")))
    one_line_error(trtcap("compare", path, path), str(path), "(got '2')")


def test_pytest_refusing_its_arguments_is_named_in_the_result(tmp_path):
    suite = make_suite(tmp_path / "suite", PASSING)
    proc = trtcap("sweep", "--arms", "7.5", "--out", tmp_path / "o", "-q", "--", "--no-such-pytest-flag", cwd=suite)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    result = proc.stdout.rstrip().splitlines()[-1]
    assert result.startswith("RESULT: INCOMPLETE: arm 7.5: process: ") and "usage error" in result, result
    assert "--no-such-pytest-flag" in proc.stdout  # pytest's own complaint, in the stderr tail


@pytest.mark.parametrize("flag", ["--lf", "--last-failed", "--ff", "--nf", "--sw", "--stepwise-skip", "--cache-clear"])
def test_cache_options_are_a_usage_error_before_any_arm_runs(tmp_path, flag):
    suite = make_suite(tmp_path / "suite", PASSING)
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", tmp_path / "o", "--", flag, cwd=suite)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = _error_lines(proc)
    assert len(errors) == 1 and flag in errors[0] and "cache" in errors[0], proc.stderr
    assert proc.stdout == "" and not (tmp_path / "o").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device whose writes fail: disk full)")
@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_a_report_that_cannot_be_written_is_one_line_error(tmp_path, fmt):
    path = write_input(tmp_path, "r.json", json.dumps(record_data({"t.py::test_a": {"outcome": "passed"}})))
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "pytest_trtcap", "compare", path, path, "--accept-unverified",
                               "--format", fmt], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    errors = _error_lines(proc)
    assert len(errors) == 1 and "standard output" in errors[0] and "No space left" in errors[0], proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device whose writes fail: disk full)")
def test_progress_lines_that_cannot_be_written_do_not_stop_the_sweep(tmp_path):
    suite = make_suite(tmp_path / "suite", PASSING)
    with open("/dev/full", "w") as full:
        command = [sys.executable, "-m", "pytest_trtcap", "sweep", "--arms", "7.5", "--out", tmp_path / "o"]
        proc = subprocess.run(command, cwd=suite, stdout=subprocess.PIPE, stderr=full, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "RESULT: COMPLETE: 1 arm(s), 0 arm-specific failure(s)"


def _running(pid):
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states from /proc")
def test_terminating_a_sweep_stops_its_pytest(tmp_path):
    """``timeout``, a CI job cancelled: SIGTERM to trtcap must not leave the arm's pytest running on its own."""
    import signal
    import time

    pid_file = tmp_path / "pytest.pid"
    suite = make_suite(tmp_path / "suite", {"test_slow.py": (
        "import os, time\n"
        "def test_slow():\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
    )})
    command = [sys.executable, "-m", "pytest_trtcap", "sweep", "--arms", "7.5", "--out", tmp_path / "o"]
    sweep = subprocess.Popen(command, cwd=suite, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and sweep.poll() is None, sweep.communicate()
            time.sleep(0.1)
        pytest_pid = int(pid_file.read_text())
        sweep.send_signal(signal.SIGTERM)
        out, err = sweep.communicate(timeout=30)
        assert sweep.returncode != 0 and "Traceback" not in err, err
        time.sleep(0.5)
        assert not _running(pytest_pid), "the arm's pytest kept running after trtcap was terminated"
    finally:
        sweep.kill()
        if pid_file.exists() and pid_file.read_text() and _running(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.xfail(strict=True, reason="each arm runs with -p no:cacheprovider, so pytest refuses a project's own "
                   "'addopts = --ff' (or --lf, --sw): the fix (a per-arm cache, or none) is a design choice")
def test_a_project_whose_ini_asks_for_failed_first_can_be_swept(tmp_path):
    suite = make_suite(tmp_path / "suite", PASSING)
    (suite / "pytest.ini").write_text("[pytest]\naddopts = --ff\n")
    proc = trtcap("sweep", "--arms", "7.5", "--out", tmp_path / "o", "-q", cwd=suite)
    assert proc.stdout.rstrip().splitlines()[-1] == "RESULT: COMPLETE: 1 arm(s), 0 arm-specific failure(s)", proc.stdout
