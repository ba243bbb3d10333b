"""Reconciliation: the recorder's stream against what pytest itself counted, in process, and the exit status.

Each run here is a real pytest subprocess with the recorder loaded, as ``trtcap sweep`` runs an arm.
"""

from __future__ import annotations

import textwrap

import pytest
from runs_helpers import run_pytest

from pytest_trtcap.runs.compare import compare_records
from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.reconcile import reconcile, recorded_reports
from pytest_trtcap.runs.record import build_record, dump_record
from pytest_trtcap.runs.stream import read_stream

MIXED_SUITE = textwrap.dedent(
    """
    import pytest

    @pytest.fixture
    def arm(request):
        return request.config.getoption("--trt-target-sm")

    @pytest.fixture
    def bad_teardown():
        yield
        raise RuntimeError("teardown boom")

    @pytest.fixture
    def bad_setup():
        raise KeyError("setup boom")

    def test_pass(): pass
    def test_fail(arm): assert arm == "8.9", f"object at {hex(id(arm))}"
    def test_skip(arm): pytest.skip(f"trtcap: needs SM 8.0 (targets {arm} from --trt-target-sm)")
    @pytest.mark.xfail(reason="known")
    def test_xfail(): raise ValueError("bad shape 3x4")
    @pytest.mark.xfail(reason="maybe")
    def test_xpass(): pass
    @pytest.mark.xfail(reason="strict", strict=True)
    def test_xpass_strict(): pass
    def test_teardown_error(bad_teardown): pass
    def test_fail_and_teardown_error(bad_teardown): assert 0
    def test_setup_error(bad_setup): pass
    @pytest.mark.parametrize("x", [1, 2, 3])
    def test_param(x): assert x != 2
    def test_deselect_me(): pass
    """
)




def _suite(tmp_path, broken=True):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_mixed.py").write_text(MIXED_SUITE)
    if broken:
        (tmp_path / "test_broken.py").write_text("import no_such_module_for_trtcap\n")
    (tmp_path / "test_modskip.py").write_text("import pytest\npytest.skip('whole module', allow_module_level=True)\n")
    return tmp_path


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    tmp_path = _suite(tmp_path_factory.mktemp("mixed"))
    return run_pytest(tmp_path, "-q", "-k", "not deselect_me", "--continue-on-collection-errors")


def test_recorder_agrees_with_pytest_on_every_outcome(mixed_run):
    proc, stream_path, xml = mixed_run
    stream = read_stream(stream_path)
    tests = stream["tests"]
    expect = {
        "test_mixed.py::test_pass": "passed", "test_mixed.py::test_fail": "failed",
        "test_mixed.py::test_skip": "skipped", "test_mixed.py::test_xfail": "xfailed",
        "test_mixed.py::test_xpass": "xpassed", "test_mixed.py::test_xpass_strict": "failed",
        "test_mixed.py::test_teardown_error": "error", "test_mixed.py::test_fail_and_teardown_error": "failed",
        "test_mixed.py::test_setup_error": "error", "test_mixed.py::test_param[2]": "failed",
        "test_modskip.py": "skipped",
    }
    for nodeid, outcome in expect.items():
        assert tests[nodeid]["outcome"] == outcome, nodeid
    assert "test_mixed.py::test_deselect_me" not in tests
    assert tests["test_mixed.py::test_fail"]["signature"] == "AssertionError: object at <addr>"
    assert tests["test_mixed.py::test_skip"]["reason"] == "trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)"
    assert "test_broken.py" not in tests  # a collection error is not a test result
    assert stream["collection_errors"]["test_broken.py"]["signature"].startswith("ModuleNotFoundError: No module named")
    assert tests["test_mixed.py::test_teardown_error"]["categories"] == ["passed", "error"]
    assert stream["finished"] and stream["exitstatus"] == 1 and stream["deselected"] == 1
    rec = reconcile(stream, returncode=proc.returncode)
    assert rec["result"] == "COMPLETE", rec["disagreements"]
    counted = rec["sources"]["pytest"]
    assert counted["deselected"] == 1 and counted["collected"] == len(tests) - 1  # the module skip is no item
    assert counted["outcomes"]["error"] == 3 and counted["outcomes"]["passed"] == 4  # reports, not tests
    assert rec["sources"]["record"]["collection_errors"] == 1


def test_reconcile_names_the_source_that_disagrees(mixed_run):
    proc, stream_path, _ = mixed_run
    stream = read_stream(stream_path)
    counted = dict(stream["counted"], outcomes=dict(stream["counted"]["outcomes"]))
    counted["outcomes"]["passed"] += 2
    rec = reconcile(dict(stream, counted=counted), returncode=proc.returncode)
    assert rec["result"] == "INCOMPLETE"
    assert any(d.startswith("counts:") and "by 2 report(s)" in d and "passed" in d for d in rec["disagreements"])

    rec = reconcile(dict(stream, counted=dict(stream["counted"], failed_reports=99)), returncode=proc.returncode)
    assert any("pytest counted 99 failed report(s)" in d for d in rec["disagreements"])

    # a record that lost a test against the collected count, and a process killed by a signal
    first = next(k for k, v in stream["tests"].items() if v["when"] != "collect")
    fewer = dict(stream, tests={k: v for k, v in stream["tests"].items() if k != first})
    rec = reconcile(fewer, returncode=-9)
    assert any("killed by SIGKILL" in d for d in rec["disagreements"])
    assert any(d.startswith("collected:") and "(1 missing)" in d for d in rec["disagreements"])

    rec = reconcile(stream, returncode=proc.returncode + 1)
    assert any("but the session ended with status" in d for d in rec["disagreements"])


def test_build_record_and_load_it_back(mixed_run, tmp_path):
    proc, stream_path, xml = mixed_run
    stream = read_stream(stream_path)
    data = build_record(stream, reconcile(stream, returncode=proc.returncode), arm="7.5", returncode=proc.returncode)
    dump_record(data, tmp_path / "arm.json")
    rec = load_record(tmp_path / "arm.json")
    assert rec.result == "COMPLETE" and rec.label == "arm 7.5"
    assert rec.counts()["xfailed"] == 1 and rec.counts()["xpassed"] == 1
    assert list(rec.collection_errors) == ["test_broken.py"]
    junit = load_record(xml)  # and the XML pytest wrote compares cleanly against it, collection error included
    result = compare_records(junit, rec, accept_unverified=True)
    assert result["transitions"] == [], result["transitions"][:3]
    assert result["unchanged"] == len(junit.tests)


# --- an arm that lost nothing is COMPLETE, however pytest was asked to print ---------------------------


@pytest.mark.parametrize(
    "args, env",
    [
        (["-qq"], {}),
        (["-p", "no:terminal"], {}),
        (["--junit-prefix=ci"], {}),
        (["-rA", "-v"], {"COLUMNS": "20"}),
        ([], {"COLUMNS": "1000"}),
    ],
    ids=["-qq", "no-terminal", "junit-prefix", "narrow", "wide"],
)
def test_honest_arm_is_complete_whatever_the_output(tmp_path, monkeypatch, args, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    proc, stream_path, _ = run_pytest(_suite(tmp_path), "--continue-on-collection-errors", *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rec = reconcile(read_stream(stream_path), returncode=proc.returncode)
    assert rec["result"] == "COMPLETE", rec["disagreements"]
    assert rec["sources"]["record"]["tests"] == 13 and rec["sources"]["record"]["collection_errors"] == 1


def test_collection_errors_under_xdist_are_counted_once(tmp_path):
    pytest.importorskip("xdist")
    suite = _suite(tmp_path)
    (suite / "test_gpu_at_import.py").write_text("raise RuntimeError('Found no NVIDIA driver on your system')\n")
    proc, stream_path, _ = run_pytest(suite, "-n", "2", "--continue-on-collection-errors")
    stream = read_stream(stream_path)
    rec = reconcile(stream, returncode=proc.returncode)
    assert rec["result"] == "COMPLETE", rec["disagreements"]
    assert sorted(stream["collection_errors"]) == ["test_broken.py", "test_gpu_at_import.py"]
    assert (
        stream["collection_errors"]["test_gpu_at_import.py"]["signature"]
        == "RuntimeError: Found no NVIDIA driver on your system"
    )


# --- an arm that lost something, or tested nothing, is INCOMPLETE and says why -------------------------


def test_collection_error_that_stops_the_run_is_incomplete(tmp_path):
    proc, stream_path, _ = run_pytest(_suite(tmp_path))
    assert proc.returncode == 2
    rec = reconcile(read_stream(stream_path), returncode=proc.returncode)
    assert rec["result"] == "INCOMPLETE"
    assert (
        "process: pytest's exit status is 2 (interrupted: 1 collection error(s) stopped the run)"
        in rec["disagreements"]
    )


def test_interrupted_run_is_incomplete(tmp_path):
    (tmp_path / "test_int.py").write_text(
        "def test_a(): pass\ndef test_b(): raise KeyboardInterrupt\ndef test_c(): pass\n"
    )
    proc, stream_path, _ = run_pytest(tmp_path)
    assert proc.returncode == 2
    rec = reconcile(read_stream(stream_path), returncode=proc.returncode)
    assert rec["result"] == "INCOMPLETE"
    assert any("exit status is 2 (interrupted" in d for d in rec["disagreements"])


def test_run_stopped_early_is_incomplete_and_says_so(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_a(): assert 0\ndef test_b(): pass\n")
    proc, stream_path, _ = run_pytest(tmp_path, "-x")
    assert proc.returncode == 1
    rec = reconcile(read_stream(stream_path), returncode=proc.returncode)
    assert rec["result"] == "INCOMPLETE"
    assert "process: pytest stopped the session early (stopping after 1 failures)" in rec["disagreements"]
    assert "collected: 2 tests collected, the record has results for 1 (1 missing)" in rec["disagreements"]


@pytest.mark.parametrize("args", [["-k", "nomatch"], ["empty_dir"]], ids=["deselected-all", "empty-directory"])
def test_arm_that_tested_nothing_is_never_complete(tmp_path, args):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "test_one.py").write_text("def test_one(): pass\n")
    proc, stream_path, _ = run_pytest(tmp_path, *args)
    assert proc.returncode == 5
    rec = reconcile(read_stream(stream_path), returncode=proc.returncode)
    assert rec["result"] == "INCOMPLETE"
    assert "process: pytest's exit status is 5 (no tests collected): nothing was tested" in rec["disagreements"]


def test_zero_tests_without_exit_5_is_incomplete():
    stream = {"tests": {}, "finished": True, "exitstatus": 0, "collected": 0,
              "counted": {"collected": 0, "failed_reports": 0, "outcomes": None, "deselected": None}}
    rec = reconcile(stream, returncode=0)
    assert rec["result"] == "INCOMPLETE"
    assert "record: no test ran (pytest collected or kept no tests)" in rec["disagreements"]


def test_stream_without_pytest_counts_is_not_complete():
    stream = {"tests": {"t.py::a": {"outcome": "passed", "when": "call", "categories": ["passed"]}},
              "finished": True, "exitstatus": 0, "collected": 1, "counted": None}
    rec = reconcile(stream, returncode=0)
    assert rec["result"] == "INCOMPLETE" and any("no counts from pytest" in d for d in rec["disagreements"])


def test_recorded_reports_counts_reports_not_tests():
    tests = {
        "a": {"outcome": "error", "categories": ["passed", "error"]},  # pass + teardown error
        "b": {"outcome": "xfailed", "categories": ["xfailed"]},
        "c": {"outcome": "failed"},  # no categories recorded: its outcome stands for its one report
        "d": {"outcome": "error", "categories": []},  # never reported a call phase: pytest counted nothing
    }
    counts = recorded_reports(tests)
    assert counts == {"passed": 1, "failed": 1, "error": 1, "skipped": 0, "xfailed": 1, "xpassed": 0}
