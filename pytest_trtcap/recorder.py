"""Reporter plugin ``trtcap sweep`` loads into each arm's pytest: ``-p pytest_trtcap.recorder --trtcap-record=FILE``.

It writes a JSON-lines stream, one line per event and flushed as it goes, so a run that dies mid-way
still leaves everything up to the crash (and the test that was running) on disk::

    {"schema": "trtcap-stream", "version": 1, "arm": "7.5", "pytest": "9.2.0", "args": [...], ...}
    {"e": "collected", "n": 12, "deselected": 0}
    {"e": "start", "id": "test_a.py::test_x"}
    {"e": "test", "id": "test_a.py::test_x", "outcome": "failed", "signature": "...", "reason": null,
     "when": "call", "duration": 0.01, "categories": ["failed"]}
    {"e": "finish", "exitstatus": 1}

Under pytest-xdist only the controller records (it sees every worker's reports).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

import pytest

from .records import STREAM_SCHEMA, VERSION, report_message, summarise_reports, utc_now


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("trtcap-record", "trtcap run recorder")
    group.addoption(
        "--trtcap-record",
        metavar="FILE",
        default=None,
        help="write each test's outcome and failure signature to FILE as JSON lines (used by `trtcap sweep`)",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--trtcap-record", None)
    if not path or hasattr(config, "workerinput"):
        return
    config.pluginmanager.register(Recorder(config, path), "trtcap-recorder")


class Recorder:
    def __init__(self, config: pytest.Config, path: str) -> None:
        self.config = config
        try:
            self.file = open(path, "w", encoding="utf-8")
        except OSError as exc:
            raise pytest.UsageError(f"--trtcap-record: cannot write {path}: {exc.strerror or exc}") from None
        self.pending: Dict[str, List[tuple]] = {}
        self.durations: Dict[str, float] = {}
        self.categories: Dict[str, List[str]] = {}
        self.deselected = 0
        self.collected_written = set()
        arm = None
        try:
            arm = config.getoption("--trt-target-sm", None)
        except (ValueError, AttributeError):
            pass
        self._write({
            "schema": STREAM_SCHEMA,
            "version": VERSION,
            "arm": arm,
            "pytest": pytest.__version__,
            "python": sys.version.split()[0],
            "args": list(config.invocation_params.args),
            "rootdir": str(config.rootpath),
            "pid": os.getpid(),
            "started": utc_now(),
        })

    def _write(self, event: Dict[str, Any]) -> None:
        if self.file.closed:
            return
        self.file.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        self.file.flush()

    # --- collection ---------------------------------------------------------------------------

    def pytest_deselected(self, items: list) -> None:
        self.deselected += len(items)

    def _collected(self, n: int) -> None:
        if n in self.collected_written:
            return
        self.collected_written.add(n)
        self._write({"e": "collected", "n": n, "deselected": self.deselected})

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected(len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list) -> None:
        self._collected(len(ids))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.passed:
            return
        message, reason = report_message(report)
        outcome = "error" if report.failed else "skipped"
        entry = summarise_reports([("setup", "failed" if report.failed else "skipped", False, None, message, reason)])
        entry["when"] = "collect"
        entry.update(duration=0.0, categories=[outcome])
        self._write({"e": "test", "id": report.nodeid, **entry})

    # --- tests --------------------------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._write({"e": "start", "id": nodeid})

    def _category(self, report: pytest.TestReport) -> str:
        try:
            status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
            return str(status[0]) if status else ""
        except Exception:
            if report.when in ("setup", "teardown") and report.failed:
                return "error"
            if report.when in ("setup", "teardown") and report.passed:
                return ""
            return report.outcome

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid = report.nodeid
        message, reason = report_message(report)
        wasxfail = hasattr(report, "wasxfail")
        xfail_reason = str(report.wasxfail) if wasxfail else None
        if report.passed and report.when != "call":
            message = None
        self.pending.setdefault(nodeid, []).append((report.when, report.outcome, wasxfail, xfail_reason, message, reason))
        self.durations[nodeid] = self.durations.get(nodeid, 0.0) + float(getattr(report, "duration", 0.0) or 0.0)
        category = self._category(report)
        if category:
            self.categories.setdefault(nodeid, []).append(category)
        if report.when not in ("setup", "call"):  # teardown, or xdist's "???" for a crashed worker
            self._finish(nodeid)

    def _finish(self, nodeid: str) -> None:
        reports = self.pending.pop(nodeid, None)
        if not reports:
            return
        entry = summarise_reports(reports)
        entry["duration"] = round(self.durations.pop(nodeid, 0.0), 6)
        entry["categories"] = self.categories.pop(nodeid, [])
        self._write({"e": "test", "id": nodeid, **entry})

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> None:
        for nodeid in list(self.pending):
            self._finish(nodeid)
        self._write({"e": "finish", "exitstatus": int(exitstatus), "testscollected": session.testscollected})

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if not self.file.closed:
            self.file.close()
