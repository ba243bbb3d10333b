"""One test's record entry out of its setup/call/teardown (or crash) reports."""

from __future__ import annotations

import pytest

from pytest_trtcap.runs.recorder import PhaseReport, summarise_reports


def _rep(when, outcome, wasxfail=False, xreason=None, message=None, skip=None):
    return PhaseReport(when, outcome, wasxfail, xreason, message, skip)


@pytest.mark.parametrize(
    "reports, outcome, when",
    [
        ([_rep("setup", "passed"), _rep("call", "passed"), _rep("teardown", "passed")], "passed", "call"),
        ([_rep("setup", "failed", message="KeyError: 'k'"), _rep("teardown", "passed")], "error", "setup"),
        ([_rep("setup", "passed"), _rep("call", "passed"), _rep("teardown", "failed", message="RuntimeError: x")],
         "error", "teardown"),
        ([_rep("setup", "passed"), _rep("call", "failed", message="E: a"), _rep("teardown", "failed", message="E: b")],
         "failed", "call"),
        ([_rep("setup", "skipped", message="Skipped: no", skip="no"), _rep("teardown", "passed")], "skipped", "setup"),
        ([_rep("setup", "passed"), _rep("call", "skipped", True, "known", "ValueError: v"), _rep("teardown", "passed")],
         "xfailed", "call"),
        ([_rep("setup", "passed"), _rep("call", "passed", True, "maybe"), _rep("teardown", "passed")],
         "xpassed", "call"),
        ([_rep("???", "failed", message="worker 'gw0' crashed while running 't.py::x'")], "failed", "crash"),
        ([_rep("setup", "passed")], "error", "setup"),
    ],
)
def test_summarise_reports(reports, outcome, when):
    entry = summarise_reports(reports)
    assert (entry["outcome"], entry["when"]) == (outcome, when)
    if outcome in ("failed", "error", "skipped"):
        assert entry["signature"]
    if outcome == "passed":
        assert entry["signature"] is None


def test_summarise_reports_keeps_reasons():
    skipped = summarise_reports(
        [_rep("setup", "passed"), _rep("call", "skipped", message="Skipped: needs 8.0", skip="needs 8.0")]
    )
    assert skipped["reason"] == "needs 8.0" and skipped["signature"] == "Skipped: needs <N>"
    xfailed = summarise_reports([_rep("setup", "passed"), _rep("call", "skipped", True, "known bug", "ValueError: v")])
    assert xfailed["reason"] == "known bug" and xfailed["signature"] == "ValueError: v"
    crashed = summarise_reports([_rep("???", "failed", message="worker 'gw1' crashed while running 't.py::x'")])
    assert crashed["signature"].startswith("WorkerCrashed: worker 'gw<N>' crashed")
