"""The ``trtcap`` command end to end: real pytest subprocesses on small generated suites (no torch)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from runs_helpers import AFTER, BEFORE, one_line_error, trtcap


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
    assert (sig["before"]["signature"], sig["after"]["signature"]) == (
        "TypeError: unsupported dtype bf16", "ValueError: bad shape <N>x<N>"
    )
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
    unverified = trtcap("compare", out / f"arm-{BEFORE}.xml", out / f"arm-{AFTER}.json")
    assert unverified.returncode == 2, unverified.stderr  # JUnit XML cannot prove it lost no test
    assert unverified.stdout.rstrip().splitlines()[-1].startswith(
        "RESULT: UNVERIFIED: nothing proves these sides lost no test"
    )
    proc = trtcap(
        "compare", out / f"arm-{BEFORE}.xml", out / f"arm-{AFTER}.json", "--format", "json", "--accept-unverified"
    )
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
        ("truncated.xml", '<?xml version="1.0"?><testsuites><testsuite tests="1"><testcase classname="a" na',
         "truncated XML"),
        ("foreign.xml", '<?xml version="1.0"?><project><modelVersion>4</modelVersion></project>',
         "not a JUnit XML report"),
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
    from pytest_trtcap.runs.cli import main

    assert main(["compare", str(tmp_path / "x.json"), str(tmp_path / "y.json")]) == 2
    assert "x.json: no such file" in capsys.readouterr().err
    assert main(["sweep", "--arms", "banana"]) == 2


def test_non_ascii_console_gets_escapes_not_a_crash(tmp_path):
    def write(name, outcome):
        data = {"schema": "trtcap-record", "version": 1, "arm": None,
                "tests": {"tests/test_ü.py::test_x[日本]": {
                    "outcome": outcome, "signature": "E: ü" if outcome == "failed" else None,
                }}}
        (tmp_path / name).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        return tmp_path / name

    before, after = write("b.json", "passed"), write("a.json", "failed")
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    for fmt in ("table", "markdown", "json"):
        proc = subprocess.run([sys.executable, "-m", "pytest_trtcap", "compare", str(before), str(after),
                               "--format", fmt, "--accept-unverified"],
                              capture_output=True, env=env, timeout=60)
        assert proc.returncode == 1, proc.stderr
        assert b"Traceback" not in proc.stderr
        if fmt == "json":
            assert json.loads(proc.stdout)["transitions"][0]["nodeid"] == "tests/test_ü.py::test_x[日本]"
        else:
            assert b"tests/test_\\xfc.py::test_x[\\u65e5\\u672c]" in proc.stdout


def test_record_with_a_lone_surrogate_on_a_utf8_console(tmp_path):
    data = {"schema": "trtcap-record", "version": 2, "arm": None, "reconciliation": {"result": "COMPLETE"},
            "tests": {"t.py::test_\udcff": {"outcome": "failed", "signature": "E: \udcff"}}}
    before = tmp_path / "b.json"
    before.write_text(json.dumps(data))  # ASCII JSON: the surrogate is an escape
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    for fmt in ("table", "markdown", "json"):
        proc = subprocess.run([sys.executable, "-m", "pytest_trtcap", "compare", str(before), str(before),
                               "--format", fmt],
                              capture_output=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert b"Traceback" not in proc.stderr
        proc.stdout.decode("utf-8")  # valid UTF-8 throughout
        if fmt == "json":
            assert json.loads(proc.stdout)["before"]["tests"] == 1


HOSTILE = {
    "bigint.json": '{"schema": "trtcap-record", "version": 1, "tests": {}, "collected": ' + "9" * 5000 + "}",
    "deep.json": '{"schema": "trtcap-record", "version": 1, "tests": {}, "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
    "reason.json": json.dumps({"schema": "trtcap-record", "version": 1,
                               "tests": {"t::a": {"outcome": "skipped", "reason": 12345}}}),
    "disagreements.json": json.dumps({"schema": "trtcap-record", "version": 1, "tests": {},
                                      "reconciliation": {"result": "INCOMPLETE", "disagreements": 7}}),
}


@pytest.mark.parametrize("name", [*HOSTILE, "/dev/zero"])
def test_compare_rejects_unusable_input_in_one_line(swept, tmp_path, name):
    good = swept[1] / "arm-7.5.json"
    bad = name if name.startswith("/") else tmp_path / name
    if not name.startswith("/"):
        bad.write_text(HOSTILE[name])
    proc = trtcap("compare", good, bad)
    one_line_error(proc, str(bad))
    assert proc.stdout == ""


def test_plugin_side_modules_stay_light():
    code = (
        "import sys, pytest_trtcap, pytest_trtcap.runs.load, pytest_trtcap.runs.recorder, pytest_trtcap.runs.cli; "
        "heavy = [m for m in ('torch', 'rich', 'torch_tensorrt') if m in sys.modules]; "
        "print(','.join(heavy) or 'light')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "light", proc.stdout + proc.stderr


def test_compare_github_format_points_each_regression_at_its_test_function(swept):
    """CI shows each new failure on the test's own line: the record holds the line pytest reports for the test."""
    suite, out, _ = swept
    proc = trtcap("compare", out / f"arm-{BEFORE}.json", out / f"arm-{AFTER}.json", "--format", "github")
    assert proc.returncode == 1, proc.stderr
    source = (suite / "test_suite.py").read_text().splitlines()
    line = next(n for n, text in enumerate(source, 1) if text.startswith("def test_regression("))
    commands = [c for c in proc.stdout.splitlines() if c.startswith("::")]
    assert commands == [c for c in commands if c.startswith("::error ")] and len(commands) == 1, proc.stdout
    assert commands[0].startswith(f"::error file=test_suite.py,line={line},title="), commands
    assert proc.stdout.rstrip().splitlines()[-1].startswith("RESULT: COMPLETE: 1 regression(s)")


def test_github_is_a_format_of_both_subcommands():
    for command in (["sweep"], ["compare", "a", "b"]):
        proc = trtcap(*command, "--format", "nope")
        assert proc.returncode == 2 and "'github'" in proc.stderr, proc.stderr
        assert "github" in trtcap(*command, "--help").stdout


def _usage(subcommand: str) -> str:
    """The usage line(s) of ``trtcap SUBCOMMAND --help``, joined into one line."""
    helped = trtcap(subcommand, "--help")
    assert helped.returncode == 0, helped.stderr
    usage = helped.stdout.split("usage: ", 1)[1].split("\n\n", 1)[0]
    return " ".join(usage.split())


def _options(line: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", line)) - {"-h", "--help", "--"}


@pytest.mark.parametrize("subcommand", ["sweep", "compare"])
def test_the_docs_synopsis_of_each_subcommand_is_its_help_usage(subcommand):
    """docs/trtcap.md's synopsis and ``--help`` name the same options; each option ``--help`` names is described
    below its usage, and the synopsis line is the usage line itself."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "trtcap.md").read_text(encoding="utf-8")
    synopsis = doc.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    line = next(s for s in synopsis if s.startswith(f"trtcap {subcommand} "))
    usage = _usage(subcommand)
    assert _options(line) == _options(usage), (line, usage)
    assert line == usage.replace(" [-h]", "")
