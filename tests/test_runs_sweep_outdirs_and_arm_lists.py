"""``trtcap sweep`` attacked from outside: runs that share an output directory, odd arm lists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from runs_helpers import make_suite, trtcap


def _wait_for(path, proc, seconds=60):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)


def _refused_before_any_arm_ran(proc, out):
    """The one ``trtcap: error:`` line of a sweep refused as a usage error (exit 2, no traceback) before it ran
    anything: nothing on stdout, no ``--out`` made."""
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("trtcap: error:")]
    assert len(errors) == 1, proc.stderr
    assert proc.stdout == "" and not out.exists()  # nothing ran
    return errors[0]


def test_a_second_sweep_into_the_same_out_never_passes_its_tests_off_as_the_firsts(tmp_path):
    """Two sweeps into one ``--out`` (two CI jobs, a rerun in another terminal): the first must never report
    the second's stream as its own run, and the second is refused with the flag and its value named."""
    started, release = tmp_path / "a_started", tmp_path / "release"
    first = make_suite(tmp_path / "first", {"test_first.py": (
        "import pathlib, time\n"
        "def test_first():\n"
        f"    pathlib.Path({str(started)!r}).touch()\n"
        f"    while not pathlib.Path({str(release)!r}).exists():\n"
        "        time.sleep(0.05)\n"
    )})
    second = make_suite(tmp_path / "second", {"test_second.py": "def test_second():\n    pass\n"})
    out = tmp_path / "o"
    command = [sys.executable, "-m", "pytest_trtcap", "sweep", "-q", "--arms", "7.5", "--out", out,
               "--format", "json"]
    sweep_a = subprocess.Popen(command, cwd=first, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(started, sweep_a)
        sweep_b = trtcap("sweep", "-q", "--arms", "7.5", "--out", out, "--format", "json", cwd=second)
    finally:
        release.touch()
        out_a, err_a = sweep_a.communicate(timeout=120)
    arm = json.loads(out_a)["arms"][0]
    record = json.loads((out / "arm-7.5.json").read_text())
    assert list(record["tests"]) == ["test_first.py::test_first"], record["tests"]
    assert (arm["result"], arm["tests"]) == ("COMPLETE", 1), (arm, err_a)
    assert sweep_b.returncode == 2 and sweep_b.stdout == "", sweep_b.stdout
    errors = [line for line in sweep_b.stderr.splitlines() if line.startswith("trtcap: error:")]
    assert len(errors) == 1 and f"--out {str(out)!r}" in errors[0], sweep_b.stderr


SUBTEST_SUITE = """
import unittest

import pytest


class TestPerArm(unittest.TestCase):
    def test_blocks(self):
        arm = pytest.turing_arm
        for size in (1, 2):
            with self.subTest(size=size):
                self.assertFalse(arm and size == 2, "size 2 does not build at 7.5")
"""

SUBTEST_CONFTEST = """
import pytest


def pytest_configure(config):
    pytest.turing_arm = config.getoption("--trt-target-sm") == "7.5"
"""


def test_a_unittest_subtest_failing_on_one_arm_is_an_arm_specific_failure(tmp_path):
    """pytest reports a ``unittest`` test whose subtest failed as a failed subtest report followed by the
    test's own passing one: the failure must not be undone, or an arm-specific failure passes unseen."""
    suite = make_suite(tmp_path / "suite", {"test_sub.py": SUBTEST_SUITE, "conftest.py": SUBTEST_CONFTEST})
    proc = trtcap("sweep", "-q", "--arms", "7.5,8.9", "--out", tmp_path / "o", "--format", "json", cwd=suite)
    result = json.loads(proc.stdout)
    turing = json.loads((tmp_path / "o" / "arm-7.5.json").read_text())["tests"]["test_sub.py::TestPerArm::test_blocks"]
    assert turing["outcome"] == "failed" and turing["signature"].startswith("AssertionError: "), turing
    assert [d["nodeid"] for d in result["differences"] if d["class"] == "arm-specific failure"] == [
        "test_sub.py::TestPerArm::test_blocks"], result["differences"]
    assert (result["result"], proc.returncode) == ("COMPLETE", 1), proc.stderr


SUBTESTS_FIXTURE_SUITE = """
def test_sizes(subtests):
    for size in (1, 2):
        with subtests.test(size=size):
            assert size < 2, "size 2 does not build"


def test_passes():
    pass
"""


@pytest.mark.parametrize("extra", [[], ["-p", "no:terminal"]], ids=["terminal", "no-terminal"])
def test_a_failing_subtest_of_the_subtests_fixture_leaves_a_run_that_lost_nothing_complete(tmp_path, extra):
    """pytest counts the subtest's failed report in its session counter and, in its stats, the test's own
    report too (turned into a failure after the counter saw it pass): a record of both is complete."""
    suite = make_suite(tmp_path / "suite", {"test_sub.py": SUBTESTS_FIXTURE_SUITE})
    proc = trtcap("sweep", "-q", "--arms", "7.5", "--out", tmp_path / "o", "--format", "json", "--", *extra,
                  cwd=suite)
    arm = json.loads(proc.stdout)["arms"][0]
    assert (arm["result"], arm["disagreements"]) == ("COMPLETE", []), arm
    assert (arm["counts"]["failed"], arm["counts"]["passed"], proc.returncode) == (1, 1, 0), arm


@pytest.mark.parametrize("arms, twice", [("7.5,7.5", "7.5"), ("8.9,7.5,sm_75", "7.5"), ("89, SM89", "8.9")])
def test_an_arm_given_twice_is_a_usage_error_naming_it(tmp_path, arms, twice):
    """One arm's files in ``--out`` hold one run: an arm listed twice cannot run twice, and silently running it
    once would sweep fewer arms than asked."""
    proc = trtcap("sweep", "--arms", arms, "--out", tmp_path / "o", cwd=tmp_path)
    error = _refused_before_any_arm_ran(proc, tmp_path / "o")
    assert "--arms" in error and repr(arms) in error and twice in error, proc.stderr


def test_a_sweep_where_pytest_loads_no_plugin_by_itself_still_runs_its_arms(tmp_path):
    """``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (a hermetic CI job): each arm's ``--trt-target-sm`` is the plugin's
    option, so the sweep loads the plugin it needs, as it loads its recorder."""
    suite = make_suite(tmp_path / "suite", {"test_one.py": "def test_one():\n    pass\n"})
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    proc = subprocess.run([sys.executable, "-m", "pytest_trtcap", "sweep", "--arms", "7.5", "--out", tmp_path / "o"],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=120)
    assert proc.stdout.rstrip().splitlines()[-1] == "RESULT: COMPLETE: 1 arm(s), 0 arm-specific failure(s)", (
        proc.stdout)
    assert proc.returncode == 0


@pytest.mark.parametrize("args", [["-p", "cacheprovider"], ["-pcacheprovider"], ["-p", "stepwise"]])
def test_turning_pytests_cache_back_on_is_a_usage_error_before_any_arm_runs(tmp_path, args):
    """With the cache back on, a project's ``addopts = --lf`` makes the second arm run only the first arm's
    failures: a test failing on the second arm only is never run there, and both arms look complete."""
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", tmp_path / "o", "--", *args, cwd=tmp_path)
    error = _refused_before_any_arm_ran(proc, tmp_path / "o")
    assert "".join(args).replace("-p", "") in error and "cache" in error, proc.stderr


@pytest.mark.parametrize("args", [["-n", "2", "--dist", "each"], ["-n", "2", "--dist=each"]])
def test_xdist_running_every_test_on_every_worker_is_a_usage_error_before_any_arm_runs(tmp_path, args):
    """``--dist each`` runs each test once per worker: pytest counts every run, a record holds one result per
    test, so an arm that lost nothing could never be reconciled (it went INCOMPLETE, blaming the counts)."""
    suite = make_suite(tmp_path / "suite", {"test_a.py": "def test_a():\n    pass\n"})
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", tmp_path / "o", "--", *args, cwd=suite)
    error = _refused_before_any_arm_ran(proc, tmp_path / "o")
    assert "--dist each" in error, proc.stderr


@pytest.mark.parametrize("args", [["-p", "no:junitxml"], ["-pno:junitxml"]])
def test_turning_junit_xml_off_is_a_usage_error_before_any_arm_runs(tmp_path, args):
    """Each arm writes its JUnit XML (``--junitxml``): with pytest's junitxml plugin off, every arm's pytest refused
    that option, and the sweep ran every arm only to report each INCOMPLETE."""
    suite = make_suite(tmp_path / "suite", {"test_a.py": "def test_a():\n    pass\n"})
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", tmp_path / "o", "--", *args, cwd=suite)
    error = _refused_before_any_arm_ran(proc, tmp_path / "o")
    assert "no:junitxml" in error, proc.stderr


@pytest.mark.parametrize(
    "addopts, named",
    [
        ("-n 2 --dist each", "--dist each"),
        ("-n 2 --dist=each", "--dist each"),
        ("-p cacheprovider", "cacheprovider"),
        ("-pstepwise", "stepwise"),
        ("--lf", "--lf"),
        ("-p no:junitxml", "no:junitxml"),
        ("--junitxml=elsewhere.xml", "--junitxml"),
        ("-v '--trt-target-sm' 8.9", "--trt-target-sm"),
        ("-k 'unclosed", "closing quotation"),
    ],
)
def test_what_the_sweep_refuses_after_dashdash_it_refuses_in_pytest_addopts(tmp_path, addopts, named):
    """pytest reads ``PYTEST_ADDOPTS`` (split as a shell would) before its command line: a refused option given
    there reached every arm unchecked, and each arm went INCOMPLETE with a reason that did not name it."""
    suite = make_suite(tmp_path / "suite", {"test_a.py": "def test_a():\n    pass\n"})
    env = dict(os.environ, PYTEST_ADDOPTS=addopts)
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", tmp_path / "o", cwd=suite, env=env)
    error = _refused_before_any_arm_ran(proc, tmp_path / "o")
    assert f"PYTEST_ADDOPTS={addopts!r}" in error and named in error, proc.stderr
