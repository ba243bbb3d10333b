"""The ``trtcap`` command end to end: real pytest subprocesses on small generated suites (no torch)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

from pytest_trtcap import records, report

BEFORE, AFTER = "8.9", "7.5"  # compare runs 8.9 -> 7.5: what moving a suite onto Turing changes

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


def trtcap(*args, cwd=None, timeout=180):
    return subprocess.run([sys.executable, "-m", "pytest_trtcap", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


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


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """One 2-arm sweep of the transitions suite (JSON output), shared by the tests below."""
    suite = make_suite(tmp_path_factory.mktemp("transitions"), {"test_suite.py": TRANSITIONS_SUITE})
    out = suite / "out"
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", out, "--format", "json", "--", "test_suite.py", cwd=suite)
    return suite, out, proc


# --- sweep ------------------------------------------------------------------------------------------------


def test_sweep_finds_arm_specific_failures(swept):
    suite, out, proc = swept
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "COMPLETE" and result["exit_status"] == 1
    arms = {a["arm"]: a for a in result["arms"]}
    assert arms["7.5"]["counts"] == {"passed": 4, "failed": 3, "error": 0, "skipped": 2, "xfailed": 1, "xpassed": 0}
    assert arms["8.9"]["counts"] == {"passed": 5, "failed": 4, "error": 0, "skipped": 1, "xfailed": 0, "xpassed": 0}
    assert all(a["collected"] == 10 and a["result"] == "COMPLETE" for a in arms.values())
    classes = [(d["nodeid"].split("::")[1], d["class"]) for d in result["differences"]]
    assert classes == [
        ("test_regression", "arm-specific failure"),
        ("test_fixed", "arm-specific failure"),
        ("test_fail_to_skip", "arm-specific failure"),
        ("test_pass_to_skip", "outcome differs"),
        ("test_unskip", "outcome differs"),
        ("test_changed", "outcome differs"),
        ("test_only_on_one_arm[turing]", "missing on some arms"),
        ("test_only_on_one_arm[ada]", "missing on some arms"),
        ("test_same_status_new_signature", "signature differs"),
    ]
    regression = result["differences"][0]
    assert regression["outcomes"] == {"7.5": "failed", "8.9": "passed"}
    assert regression["signatures"]["7.5"] == "AssertionError: fp32 gemm mismatch in engine at <addr>"


def test_sweep_lists_tests_skipped_on_one_arm_with_reasons(swept):
    result = json.loads(swept[2].stdout)
    skipped = {s["nodeid"].split("::")[1]: s["reasons"] for s in result["skipped_on_some_arms"]}
    assert skipped == {
        "test_pass_to_skip": {"7.5": "trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)"},
        "test_fail_to_skip": {"7.5": "trtcap: attention is not built for SM 7.5"},
        "test_unskip": {"8.9": "only meaningful on turing"},
    }


def test_sweep_writes_one_reconciled_record_per_arm(swept):
    suite, out, proc = swept
    for arm in ("7.5", "8.9"):
        rec = records.load_record(out / f"arm-{arm}.json")
        assert rec.arm == arm and rec.result == "COMPLETE"
        sources = rec.data["reconciliation"]["sources"]
        assert sources["collected"] == 10 and sources["junit"]["tests"] == 10
        assert sources["summary"]["line"].endswith("s")  # pytest's own final line, as read
        assert (out / f"arm-{arm}.xml").is_file() and (out / f"arm-{arm}.stream.jsonl").is_file()
        assert "--trt-target-sm" in rec.data["pytest"]["args"]
    assert "trtcap: [1/2] arm 7.5" in proc.stderr and "trtcap: [2/2] arm 8.9" in proc.stderr


def test_sweep_table_output_and_progress(tmp_path):
    suite = make_suite(tmp_path, {"test_suite.py": TRANSITIONS_SUITE})
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--", "test_suite.py", cwd=suite)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert (suite / ".trtcap" / "sweep" / "arm-7.5.json").is_file()  # the default --out
    lines = out.splitlines()
    first_specific = next(i for i, line in enumerate(lines) if "test_suite.py::test_regression" in line)
    first_other = next(i for i, line in enumerate(lines) if "test_suite.py::test_pass_to_skip" in line)
    assert first_specific < first_other
    assert "arm-specific failure" in lines[first_specific] and "failed" in lines[first_specific]
    assert "Skipped on only some arms" in out
    assert "trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)" in out
    assert lines[-1] == "RESULT: COMPLETE: 2 arm(s), 3 arm-specific failure(s)"
    progress = [line for line in proc.stderr.splitlines() if line.startswith("trtcap: [")]
    assert len(progress) >= 4 and progress[1].startswith("trtcap: [1/2] arm 7.5: 4 passed, 3 failed")
    assert progress[-1].endswith(": COMPLETE")


def test_sweep_without_differences_exits_0(tmp_path):
    suite = make_suite(tmp_path, {"test_ok.py": "def test_ok():\n    pass\n"})
    proc = trtcap("sweep", "--arms", "sm_89", "--out", "o", "-q", "--format", "markdown", cwd=suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "**RESULT: COMPLETE: 1 arm(s), 0 arm-specific failure(s)**" in proc.stdout
    assert "| 8.9 | COMPLETE | 1 | 1 |" in proc.stdout
    assert proc.stderr == ""  # --quiet: no progress lines


def test_sweep_markdown_fits_a_pull_request(swept):
    result = json.loads(swept[2].stdout)
    out = io.StringIO()
    report.render(result, "markdown", out)
    text = out.getvalue()
    assert text.startswith("### trtcap sweep\n")
    assert "| test | class | 7.5 | 8.9 | signature |" in text
    assert ("| `test_suite.py::test_regression` | arm-specific failure | failed | passed | "
            "`7.5: AssertionError: fp32 gemm mismatch in engine at <addr>` |") in text
    assert "| `test_suite.py::test_only_on_one_arm[turing]` | missing on some arms | passed | absent |" in text
    assert "**RESULT: COMPLETE: 2 arm(s), 3 arm-specific failure(s)**" in text


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
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", out, "--format", "json", "--", "-s", cwd=suite)
    assert proc.returncode == 2, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "INCOMPLETE"
    arm = result["arms"][0]
    assert arm["arm"] == "7.5" and arm["result"] == "INCOMPLETE" and arm["returncode"] == 3
    text = "\n".join(arm["disagreements"])
    assert "exit code 3 before the session finished while running test_crash.py::test_dies" in text
    assert "collected: 3 tests collected, the record has results for 1 (2 missing)" in text
    assert "summary: no final summary line" in text
    assert "junit:" in text and "no such file" in text  # the stale XML was not taken for this run's
    assert "fatal: cuda context lost" in arm["stderr_tail"]
    assert result["arms"][1]["result"] == "COMPLETE"
    assert {d["class"] for d in result["differences"]} == {"not run on some arms"}  # not arm-specific failures


def test_sweep_arm_killed_by_a_signal_is_incomplete(tmp_path):
    suite = make_suite(tmp_path, {"test_crash.py": CRASH_SUITE.format(how="kill(os.getpid(), signal.SIGKILL)")})
    proc = trtcap("sweep", "--arms", "7.5", "--out", "out", "-q", cwd=suite)
    assert proc.returncode == 2
    assert "RESULT: INCOMPLETE: arm 7.5: process: pytest was killed by SIGKILL while running test_crash.py::test_dies" in proc.stdout
    assert "Arm 7.5 is INCOMPLETE" in proc.stdout and "stderr tail:" in proc.stdout
    rec = records.load_record(suite / "out" / "arm-7.5.json")  # the partial record is still a valid record
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


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--arms", "banana"], "'banana'"),
        (["--arms", "7"], "'7'"),
        (["--arms", "7.5,"], "empty compute capability"),
        (["--arms", "7.5", "--", "--junitxml=x.xml"], "--junitxml is set by trtcap sweep"),
        (["--arms", "7.5", "--", "--trt-target-sm", "8.9"], "--trt-target-sm is set by trtcap sweep"),
    ],
)
def test_sweep_usage_errors(tmp_path, args, needle):
    proc = trtcap("sweep", "--out", tmp_path / "o", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("trtcap: error:")]
    assert len(error) == 1 and needle in error[0], proc.stderr
    assert proc.stdout == "" and not (tmp_path / "o").exists()  # nothing ran


# --- compare ------------------------------------------------------------------------------------------------


def test_compare_lists_every_transition_class(swept):
    suite, out, _ = swept
    proc = trtcap("compare", out / f"arm-{BEFORE}.json", out / f"arm-{AFTER}.json", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    got = {t["nodeid"].split("::")[1]: (t["class"], t["transition"]) for t in result["transitions"]}
    assert got == {
        "test_regression": ("regression", "passed->failed"),
        "test_fixed": ("fixed", "failed->passed"),
        "test_pass_to_skip": ("newly skipped", "passed->skipped"),
        "test_fail_to_skip": ("newly skipped", "failed->skipped"),
        "test_unskip": ("unskipped", "skipped->passed"),
        "test_changed": ("changed", "passed->xfailed"),
        "test_same_status_new_signature": ("signature changed", "failed->failed"),
        "test_only_on_one_arm[turing]": ("added", "absent->passed"),
        "test_only_on_one_arm[ada]": ("removed", "passed->absent"),
    }
    assert "test_same_signature" not in got  # same failure up to addresses and numbers
    sig = next(t for t in result["transitions"] if t["class"] == "signature changed")
    assert (sig["before"]["signature"], sig["after"]["signature"]) == ("TypeError: unsupported dtype bf16", "ValueError: bad shape <N>x<N>")
    assert result["totals"]["regression"] == 1 and result["unchanged"] == 2
    assert [t["class"] for t in result["transitions"]][0] == "regression"


def test_compare_table_and_exit_statuses(swept):
    suite, out, _ = swept
    before, after = out / f"arm-{BEFORE}.json", out / f"arm-{AFTER}.json"
    proc = trtcap("compare", before, after)
    assert proc.returncode == 1
    assert "test_suite.py::test_regression" in proc.stdout and "regression" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "RESULT: COMPLETE: 1 regression(s), 1 fixed"
    reverse = trtcap("compare", after, before)  # 7.5 -> 8.9: test_fixed and test_fail_to_skip regress
    assert reverse.returncode == 1
    assert json.loads(trtcap("compare", after, before, "--format", "json").stdout)["totals"]["regression"] == 2
    same = trtcap("compare", before, before)
    assert same.returncode == 0 and "RESULT: COMPLETE: 0 regression(s), 0 fixed" in same.stdout


def test_compare_markdown(swept):
    suite, out, _ = swept
    proc = trtcap("compare", out / f"arm-{BEFORE}.json", out / f"arm-{AFTER}.json", "--format", "markdown")
    assert proc.returncode == 1
    text = proc.stdout
    assert text.startswith("### trtcap compare\n")
    assert "| class | tests |" in text and "| regression | 1 |" in text
    assert ("| `test_suite.py::test_regression` | regression | passed → failed | "
            "`AssertionError: fp32 gemm mismatch in engine at <addr>` |") in text
    assert "| `test_suite.py::test_only_on_one_arm[ada]` | removed | passed → absent |" in text


def test_compare_against_junit_xml(swept):
    suite, out, _ = swept
    proc = trtcap("compare", out / f"arm-{BEFORE}.xml", out / f"arm-{AFTER}.json", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    got = {t["nodeid"]: t["class"] for t in result["transitions"]}
    assert got["test_suite::test_regression"] == "regression"
    assert got["test_suite::test_only_on_one_arm[turing]"] == "added"
    assert result["before"]["source"] == "junit"


def test_compare_incomplete_record_exits_2(swept, tmp_path):
    suite, out, _ = swept
    data = json.loads((out / "arm-7.5.json").read_text())
    data["reconciliation"] = {"result": "INCOMPLETE", "disagreements": ["summary: differs by 1 test(s)"], "sources": {}}
    (tmp_path / "inc.json").write_text(json.dumps(data))
    proc = trtcap("compare", out / "arm-7.5.json", tmp_path / "inc.json")
    assert proc.returncode == 2
    assert "RESULT: INCOMPLETE: after" in proc.stdout and "summary: differs by 1 test(s)" in proc.stdout


TRUNCATED = '{"schema": "trtcap-record", "version": 1, "tests": {"a.py::t": {"outcome": "pass'


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("missing.json", None, "no such file"),
        ("empty.json", "", "empty file"),
        ("truncated.json", TRUNCATED, "truncated JSON"),
        ("foreign.json", '{"version": 3, "results": []}', "not a trtcap record"),
        ("truncated.xml", '<?xml version="1.0"?><testsuites><testsuite tests="1"><testcase classname="a" na', "truncated XML"),
        ("foreign.xml", '<?xml version="1.0"?><project><modelVersion>4</modelVersion></project>', "not a JUnit XML report"),
    ],
)
def test_compare_bad_file_is_a_one_line_error(swept, tmp_path, name, content, problem):
    good = swept[1] / "arm-7.5.json"
    bad = tmp_path / name
    if content is not None:
        bad.write_text(content)
    for args in ((bad, good), (good, bad)):
        proc = trtcap("compare", *args)
        one_line_error(proc, str(bad), problem)
        assert proc.stdout == ""


# --- the command itself ------------------------------------------------------------------------------------


def test_usage_errors_and_help():
    assert trtcap().returncode == 2
    assert trtcap("compare", "only-one.json").returncode == 2
    bad_format = trtcap("compare", "a", "b", "--format", "html")
    assert bad_format.returncode == 2 and "invalid choice: 'html'" in bad_format.stderr
    helped = trtcap("sweep", "--help")
    assert helped.returncode == 0 and "--arms LIST" in helped.stdout and "PYTEST ARGS" in helped.stdout


def test_console_script_is_installed():
    script = os.path.join(os.path.dirname(sys.executable), "trtcap")
    if not os.path.exists(script):
        pytest.skip("trtcap console script not installed in this environment")
    proc = subprocess.run([script, "compare", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "BEFORE" in proc.stdout and "AFTER" in proc.stdout


def test_main_returns_status_in_process(tmp_path, capsys):
    from pytest_trtcap.cli import main

    assert main(["compare", str(tmp_path / "x.json"), str(tmp_path / "y.json")]) == 2
    assert "x.json: no such file" in capsys.readouterr().err
    assert main(["sweep", "--arms", "banana"]) == 2


def test_non_ascii_console_gets_escapes_not_a_crash(tmp_path):
    def write(name, outcome):
        data = {"schema": "trtcap-record", "version": 1, "arm": None,
                "tests": {"tests/test_ü.py::test_x[日本]": {"outcome": outcome, "signature": "E: ü" if outcome == "failed" else None}}}
        (tmp_path / name).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        return tmp_path / name

    before, after = write("b.json", "passed"), write("a.json", "failed")
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    for fmt in ("table", "markdown", "json"):
        proc = subprocess.run([sys.executable, "-m", "pytest_trtcap", "compare", str(before), str(after), "--format", fmt],
                              capture_output=True, env=env, timeout=60)
        assert proc.returncode == 1, proc.stderr
        assert b"Traceback" not in proc.stderr
        if fmt == "json":
            assert json.loads(proc.stdout)["transitions"][0]["nodeid"] == "tests/test_ü.py::test_x[日本]"
        else:
            assert b"tests/test_\\xfc.py::test_x[\\u65e5\\u672c]" in proc.stdout
