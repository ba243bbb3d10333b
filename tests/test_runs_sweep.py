"""``trtcap sweep``: the suite once per arm, and the tests whose outcome differs between arms."""

from __future__ import annotations

import io
import json

import pytest
from runs_helpers import TRANSITIONS_SUITE, make_suite, trtcap

from pytest_trtcap.runs import render
from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.sweep import arm_differences

GPU = "trtcap: needs a GPU: RuntimeError: Found no NVIDIA driver on your system (test_x.py:12)"


def E(outcome, signature=None, reason=None):
    return {"outcome": outcome, "signature": signature, "reason": reason}


def test_arm_differences_puts_arm_specific_failures_first():
    arms = {
        "7.5": {"s": E("skipped", "Skipped: x", "needs 8.0"), "f": E("failed", "E: x"), "both": E("failed", "E: a"),
                "sig": E("failed", "ValueError: a"), "only75": E("passed")},
        "8.9": {"s": E("passed"), "f": E("passed"), "both": E("failed", "E: a"), "sig": E("failed", "TypeError: b")},
    }
    diffs, skipped = arm_differences(arms)
    assert [(d["nodeid"], d["class"]) for d in diffs] == [
        ("f", "arm-specific failure"), ("s", "outcome differs"), ("only75", "missing on some arms"),
        ("sig", "signature differs"),
    ]
    assert skipped == [
        {"nodeid": "s", "outcomes": {"7.5": "skipped", "8.9": "passed"}, "reasons": {"7.5": "needs 8.0"}}
    ]
    # tests an incomplete arm never ran are "not run", not failures of the other arm
    diffs, _ = arm_differences(
        {"7.5": {"a": E("passed")}, "8.9": {"a": E("passed"), "b": E("failed", "E: x")}}, ["7.5"]
    )
    assert [(d["nodeid"], d["class"], d["outcomes"]["7.5"]) for d in diffs] == [
        ("b", "not run on some arms", "not run")
    ]


def test_needs_a_gpu_on_one_arm_is_its_own_class():
    arms = {"7.5": {"g": E("passed"), "f": E("skipped", "Skipped: x", GPU)},
            "8.9": {"g": E("skipped", "Skipped: x", GPU), "f": E("failed", "E: x")}}
    diffs, skipped = arm_differences(arms)
    assert [(d["nodeid"], d["class"]) for d in diffs] == [
        ("f", "arm-specific failure"), ("g", "needs a GPU on some arms")
    ]
    assert diffs[1]["reasons"] == {"8.9": GPU}
    assert [s["nodeid"] for s in skipped] == ["f"]  # a needs-a-GPU test is listed once, in its own class


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
        rec = load_record(out / f"arm-{arm}.json")
        assert rec.arm == arm and rec.result == "COMPLETE"
        sources = rec.data["reconciliation"]["sources"]
        assert sources["collected"] == 10 and sources["pytest"]["collected"] == 10  # pytest's own counter
        assert sum(sources["pytest"]["outcomes"].values()) == 10  # and its stats, as pytest held them
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
    render.render(result, "markdown", out)
    text = out.getvalue()
    assert text.startswith("### trtcap sweep\n")
    assert "| test | class | 7.5 | 8.9 | signature |" in text
    assert ("| `test_suite.py::test_regression` | arm-specific failure | failed | passed | "
            "`7.5: AssertionError: fp32 gemm mismatch in engine at <addr>` |") in text
    assert "| `test_suite.py::test_only_on_one_arm[turing]` | missing on some arms | passed | absent |" in text
    assert "**RESULT: COMPLETE: 2 arm(s), 3 arm-specific failure(s)**" in text


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


GPU_SUITE = """
import sys
import pytest

ARM = sys.argv[sys.argv.index("--trt-target-sm") + 1]

def test_builds_an_engine():
    if ARM == "8.9":  # 7.5 falls back to PyTorch (guards) and passes; 8.9 needs a device to build
        pytest.skip("trtcap: needs a GPU: RuntimeError: Found no NVIDIA driver on your system (test_gpu.py:10)")

def test_cpu_only():
    pass
"""

BROKEN_ON_TURING = """
import sys
if sys.argv[sys.argv.index("--trt-target-sm") + 1] == "7.5":
    raise ImportError("no turing kernels")

def test_ada():
    pass
"""


def test_sweep_counts_tests_that_need_a_gpu_apart(tmp_path):
    suite = make_suite(tmp_path, {"test_gpu.py": GPU_SUITE})
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", "o", "-q", "--", "-p", "no:randomly", cwd=suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # not an arm-specific failure
    assert "arm 8.9: needs a GPU: 1" in proc.stdout
    line = next(line for line in proc.stdout.splitlines() if "test_gpu.py::test_builds_an_engine" in line)
    assert "needs a GPU on some arms" in line
    assert "8.9: trtcap: needs a GPU: RuntimeError: Found no NVIDIA driver" in line
    result = json.loads(trtcap("sweep", "--arms", "7.5,8.9", "--out", "o", "-q", "--format", "json", cwd=suite).stdout)
    assert [a["needs_gpu"] for a in result["arms"]] == [0, 1]
    assert result["totals"]["needs a GPU on some arms"] == 1 and result["totals"]["arm-specific failure"] == 0


def test_sweep_lists_collection_errors_per_arm(tmp_path, monkeypatch):
    suite = make_suite(tmp_path, {"test_broken.py": BROKEN_ON_TURING, "test_ok.py": "def test_ok():\n    pass\n"})
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", "o", "-q", "--format", "json", "--",
                  "--continue-on-collection-errors", cwd=suite)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "COMPLETE"  # a collection error is an outcome, not a count disagreement
    assert [a["collection_errors"] for a in result["arms"]] == [
        {"test_broken.py": "ImportError: no turing kernels"}, {}
    ]
    assert [(d["nodeid"], d["class"]) for d in result["differences"]][0] == (
        "test_broken.py", "collection error on some arms"
    )
    table = render_text(result, monkeypatch)
    assert "Collection errors (modules pytest could not collect)" in table
    assert "7.5  test_broken.py  ImportError: no turing kernels" in table


def render_text(result, monkeypatch):
    monkeypatch.setenv("TRTCAP_NO_RICH", "1")
    out = io.StringIO()
    render.render(result, "table", out)
    return out.getvalue()


FALLBACK_SUITE = """
import torch


def test_fallback_shape_bug():
    model = torch.nn.Linear(4, 2)
    try:
        model = model.cuda()
    except RuntimeError:
        model(torch.ones(3, 5))


def test_plain_cuda():
    torch.nn.Linear(4, 2).cuda()
"""


def test_sweep_counts_a_bug_in_the_tests_own_device_fallback_as_a_failure_not_a_gpu_skip(tmp_path):
    """Under --trtcap-needs-gpu skip only the plain device error is a needs-a-GPU skip on each arm; the genuine
    bug the test's except ran into is each arm's failure."""
    pytest.importorskip("torch")
    suite = make_suite(tmp_path, {"test_fallback.py": FALLBACK_SUITE})
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", "o", "-q", "--format", "json", "--",
                  "--trtcap-needs-gpu", "skip", "-p", "no:randomly", cwd=suite)
    result = json.loads(proc.stdout)
    assert result["result"] == "COMPLETE", proc.stderr
    for arm in result["arms"]:
        assert (arm["counts"]["failed"], arm["counts"]["skipped"], arm["needs_gpu"]) == (1, 1, 1), arm
