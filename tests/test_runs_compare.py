"""``trtcap compare``'s transitions: every test of either record gets at most one class."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from runs_helpers import record_data

from pytest_trtcap.runs.compare import classify, compare_records, transitions
from pytest_trtcap.runs.record import Record

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU = "trtcap: needs a GPU: RuntimeError: Found no NVIDIA driver on your system (test_x.py:12)"


def E(outcome, signature=None, reason=None):
    return {"outcome": outcome, "signature": signature, "reason": reason}


@pytest.mark.parametrize(
    "before, after, cls",
    [
        (E("passed"), E("failed", "E: x"), "regression"),
        (E("skipped", "S"), E("error", "E: x"), "regression"),
        (None, E("failed", "E: x"), "added"),  # present in one record only: added, even when failing
        (E("failed", "E: x"), None, "removed"),
        (E("failed", "E: x"), E("passed"), "fixed"),
        (E("error", "E: x"), E("xfailed", "E: x"), "fixed"),
        (E("failed", "E: x"), E("skipped", "S"), "newly skipped"),
        (E("passed"), E("skipped", "S"), "newly skipped"),
        (E("skipped", "S"), E("passed"), "unskipped"),
        (E("failed", "E: x"), E("error", "E: y"), "changed"),
        (E("passed"), E("xfailed", "E: x"), "changed"),
        (E("failed", "ValueError: a"), E("failed", "TypeError: b"), "signature changed"),
        (E("skipped", "Skipped: a"), E("skipped", "Skipped: b"), "signature changed"),
        (E("failed", "E: <addr>"), E("failed", "E: <addr>"), None),
        (E("xfailed", None), E("xfailed", "E: x"), None),
        (None, E("passed"), "added"),
        (E("failed", "E: x"), None, "removed"),
    ],
)
def test_classify(before, after, cls):
    assert classify(before, after) == cls


def test_transitions_never_drop_a_test_and_order_by_class():
    before = {"a": E("passed"), "b": E("failed", "E: x"), "gone": E("passed"), "same": E("passed")}
    after = {"a": E("failed", "E: y"), "b": E("passed"), "new": E("skipped", "S"), "same": E("passed")}
    items = transitions(before, after)
    assert [(t["nodeid"], t["class"], t["transition"]) for t in items] == [
        ("a", "regression", "passed->failed"),
        ("b", "fixed", "failed->passed"),
        ("new", "added", "absent->skipped"),
        ("gone", "removed", "passed->absent"),
    ]
    assert items[2]["before"] is None and items[3]["after"] is None


def test_compare_records_exit_status_and_incomplete():
    def rec(tests, result="COMPLETE"):
        return Record("x.json", record_data(
            tests, reconciliation={"result": result, "disagreements": ["d"] if result != "COMPLETE" else []}
        ))

    same = {"a": E("passed")}
    assert compare_records(rec(same), rec(same))["exit_status"] == 0
    assert compare_records(rec(same), rec({"a": E("failed", "E: x")}))["exit_status"] == 1
    inc = compare_records(rec(same), rec({"a": E("failed", "E: x")}, "INCOMPLETE"))
    assert inc["exit_status"] == 2 and inc["result"] == "INCOMPLETE"


def _rec(tests, result="COMPLETE", errors=None):
    reconciliation = (
        None if result is None else {"result": result, "disagreements": ["d"] if result != "COMPLETE" else []}
    )
    return Record("x.json", record_data(tests, reconciliation=reconciliation, collection_errors=errors or {}))


def test_new_failing_test_is_added_not_a_regression():
    result = compare_records(_rec({"a": E("passed")}), _rec({"a": E("passed"), "new": E("failed", "E: x")}))
    assert [(t["nodeid"], t["class"]) for t in result["transitions"]] == [("new", "added")]
    assert result["exit_status"] == 0 and result["totals"]["regression"] == 0
    gone = compare_records(_rec({"a": E("passed"), "old": E("failed", "E: x")}), _rec({"a": E("passed")}))
    assert [(t["nodeid"], t["class"]) for t in gone["transitions"]] == [("old", "removed")]


@pytest.mark.parametrize("before_result, after_result", [(None, "COMPLETE"), ("COMPLETE", None), (None, None)])
def test_a_side_without_reconciliation_is_unverified(before_result, after_result):
    lost = compare_records(
        _rec({"a": E("passed"), "b": E("passed")}, before_result), _rec({"a": E("passed")}, after_result)
    )
    assert lost["result"] == "UNVERIFIED" and lost["exit_status"] == 2
    accepted = compare_records(_rec({"a": E("passed")}, before_result), _rec({"a": E("failed", "E: x")}, after_result),
                               accept_unverified=True)
    assert accepted["result"] == "UNVERIFIED" and accepted["exit_status"] == 1 and accepted["accepted_unverified"]


def test_incomplete_beats_unverified():
    result = compare_records(
        _rec({"a": E("passed")}, None), _rec({"a": E("passed")}, "INCOMPLETE"), accept_unverified=True
    )
    assert result["result"] == "INCOMPLETE" and result["exit_status"] == 2


@pytest.mark.parametrize("before, after", [(E("passed"), E("skipped", "Skipped: x", GPU)),
                                           (E("skipped", "Skipped: x", GPU), E("passed"))])
def test_needs_a_gpu_is_a_class_of_its_own(before, after):
    result = compare_records(_rec({"t": before}), _rec({"t": after}))
    assert [t["class"] for t in result["transitions"]] == ["needs a GPU"]
    assert result["exit_status"] == 0
    skipped = [
        side for side in (result["transitions"][0]["before"], result["transitions"][0]["after"])
        if side["outcome"] == "skipped"
    ]
    assert skipped[0]["reason"] == GPU
    # an ordinary skip stays "newly skipped"
    plain = compare_records(_rec({"t": E("passed")}), _rec({"t": E("skipped", "Skipped: x", "not on turing")}))
    assert [t["class"] for t in plain["transitions"]] == ["newly skipped"]


def test_collection_errors_are_compared_as_their_own_class():
    error = {"m.py": {"signature": "ImportError: x", "message": None}}
    new = compare_records(_rec({"a": E("passed")}), _rec({"a": E("passed")}, errors=error))
    assert [(t["nodeid"], t["class"], t["transition"]) for t in new["transitions"]] == [
        ("m.py", "collection error", "absent->collection error")
    ]
    assert new["exit_status"] == 1 and new["after"]["collection_errors"] == 1
    same = compare_records(_rec({}, errors=error), _rec({}, errors=error))
    assert same["transitions"] == [] and same["exit_status"] == 0
    gone = compare_records(_rec({}, errors=error), _rec({"m.py::test_a": E("passed")}))
    assert {t["class"] for t in gone["transitions"]} == {"fixed", "added"}


def test_bench_compare_runs_tiny_sizes():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "bench_compare.py"), "--sizes", "200,400"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["200", "400"]
    assert all(float(r[-1]) > 0 for r in rows)  # bytes per test measured
