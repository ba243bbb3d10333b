"""Reporter plugin ``trtcap sweep`` loads into each arm's pytest:
``-p pytest_trtcap.runs.recorder --trtcap-record=FILE``.

It writes a JSON-lines stream, one line per event and flushed as it goes, so a run that dies mid-way
still leaves everything up to the crash (and the test that was running) on disk::

    {"schema": "trtcap-stream", "version": 2, "arm": "7.5", "pytest": "9.2.0", "args": [...], ...}
    {"e": "collected", "n": 12, "deselected": 0}
    {"e": "collection_error", "id": "test_b.py", "signature": "ImportError: ...", "message": "..."}
    {"e": "start", "id": "test_a.py::test_x"}
    {"e": "test", "id": "test_a.py::test_x", "outcome": "failed", "signature": "...", "reason": null,
     "when": "call", "duration": 0.01, "categories": ["failed"]}
    {"e": "test", "id": "test_a.py::test_y", "outcome": "passed", ..., "layer_findings": ["network 1: ..."],
     "layers_read": [1, 0]}
    {"e": "finish", "exitstatus": 1, "counted": {"collected": 12, "failed_reports": 1, "outcomes": {...}, ...},
     "failed_reports_seen": 1}

``counted`` is what pytest itself counted (``session.testscollected``, ``session.testsfailed`` and the
terminal reporter's stats), taken at session finish, so reconciliation never reads pytest's terminal text.
``failed_reports_seen`` is the recorder's own count of the reports pytest's counter counts, as that counter
sees them: a report a hook turns into a failure afterwards (a test of pytest's ``subtests`` fixture whose
subtest failed) is in pytest's stats but not in its counter, and is not in this count either.
Every line is ASCII JSON: any text a test produces (lone surrogates included) is stored, escaped, losslessly.
Under pytest-xdist only the controller records (it sees every worker's reports). A test's ``"test"`` line is
written at its last report, folded from all its reports (:func:`summarise_reports`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from typing import Any, NamedTuple

import pytest

from ..audit import LAYER_FINDINGS, LAYERS_READ
from ..report import ATTRIBUTE
from .outcomes import FAILING, NEVER_CALLED, OUTCOMES, WHENS
from .record import STREAM_SCHEMA, VERSION, utc_now
from .signatures import first_line, is_worker_crash, normalise, report_message, signature_from_message

# --- a test's entry, folded from the reports pytest made for it (setup, call, teardown, or a crash) ------


class PhaseReport(NamedTuple):
    """What the recorder keeps of one pytest report until the test's last phase arrives."""

    when: str
    outcome: str  # the report's passed / failed / skipped
    wasxfail: bool = False
    xfail_reason: str | None = None
    message: str | None = None
    skip_reason: str | None = None


class Decision(NamedTuple):
    outcome: str
    report: PhaseReport


def _from_call(call: PhaseReport) -> str:
    if call.outcome == "failed":
        return "failed"
    if call.outcome == "skipped":
        return "xfailed" if call.wasxfail else "skipped"
    return "xpassed" if call.wasxfail else "passed"


def decide(by_when: dict[str, PhaseReport]) -> Decision:
    """The test's outcome and the report that decided it (a failing phase wins over a passing one)."""
    setup, call, teardown = by_when.get("setup"), by_when.get("call"), by_when.get("teardown")
    crash = next((r for w, r in by_when.items() if w not in ("setup", "call", "teardown")), None)
    decided: Decision | None = None
    if setup is not None and setup.outcome == "failed":
        decided = Decision("error", setup)
    elif setup is not None and setup.outcome == "skipped":
        decided = Decision("xfailed" if setup.wasxfail else "skipped", setup)
    elif call is not None:
        decided = Decision(_from_call(call), call)
    if crash is not None and crash.outcome == "failed":
        decided = Decision("failed", crash)
    if teardown is not None and teardown.outcome == "failed" and (decided is None or decided.outcome not in FAILING):
        decided = Decision("error", teardown)
    if decided is None:  # setup passed and nothing else arrived: the run stopped inside the test
        last = setup or teardown
        decided = Decision("error", PhaseReport(last.when if last else "setup", "failed", message=NEVER_CALLED))
    return decided


def summarise_reports(reports: Iterable[PhaseReport]) -> dict[str, Any]:
    """Fold a test's reports into its record entry: ``outcome``, ``signature``, ``reason`` and ``when``."""
    by_when: dict[str, PhaseReport] = {}
    for rep in reports:
        earlier = by_when.get(rep.when)
        if earlier is not None and earlier.outcome == "failed" and rep.outcome != "failed":
            continue  # a failed subtest's report, then the test's own passing one: the failure stands
        by_when[rep.when] = rep  # otherwise a later report of a phase replaces the earlier one
    outcome, rep = decide(by_when)
    when = rep.when if rep.when in WHENS else "crash"
    reason: str | None = None
    signature: str | None = None
    if outcome == "xpassed":
        reason = rep.xfail_reason
    elif outcome == "skipped":
        reason, signature = rep.skip_reason, signature_from_message(rep.message, "Skipped")
    elif outcome == "xfailed":
        reason, signature = rep.xfail_reason, signature_from_message(rep.message, "XFAIL")
    elif outcome in FAILING:
        if when == "crash" or is_worker_crash(rep.message):
            when = "crash"
            signature = "WorkerCrashed: " + normalise(first_line(rep.message or "worker crashed"))
        else:
            signature = signature_from_message(rep.message, "Error" if outcome == "error" else "Failure")
    return {"outcome": outcome, "signature": signature, "reason": reason, "when": when}


# --- the plugin ------------------------------------------------------------------------------------------


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


def _header(config: pytest.Config) -> dict[str, Any]:
    try:
        arm = config.getoption("--trt-target-sm", None)
    except (ValueError, AttributeError):
        arm = None
    return {
        "schema": STREAM_SCHEMA, "version": VERSION, "arm": arm, "pytest": pytest.__version__,
        "python": sys.version.split()[0], "args": list(config.invocation_params.args),
        "rootdir": str(config.rootpath), "pid": os.getpid(), "started": utc_now(),
    }


def counted_by_pytest(session: pytest.Session) -> dict[str, Any]:
    """What pytest itself counted: the session's counters and, when the terminal reporter runs, its stats."""
    stopped = session.shouldfail or session.shouldstop  # -x, --maxfail, a plugin that stopped the session
    counted: dict[str, Any] = {"collected": session.testscollected, "failed_reports": session.testsfailed,
                               "outcomes": None, "deselected": None, "stopped": str(stopped) if stopped else None}
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", None)
    if isinstance(stats, dict):
        outcomes = dict.fromkeys(OUTCOMES, 0)
        for key in OUTCOMES:  # test reports only: collection reports are counted as collection errors
            outcomes[key] = sum(1 for rep in stats.get(key, ()) if getattr(rep, "when", None) != "collect")
        counted["outcomes"] = outcomes
        counted["deselected"] = len(stats.get("deselected", ()))
    return counted


def _line(report: pytest.TestReport) -> int | None:
    """The 1-based line pytest gives for the test (its ``location``: where the function is defined), for
    annotations that point at it; None where pytest knows none."""
    location = getattr(report, "location", None)
    lineno = location[1] if isinstance(location, (tuple, list)) and len(location) == 3 else None
    return lineno + 1 if type(lineno) is int and lineno >= 0 else None


def layer_findings(report: pytest.TestReport) -> tuple[list[str], list[int]]:
    """What ``--trtcap-audit-layers`` found during the test and the [networks, engines] it read, from its teardown
    report (nothing without the audit)."""
    found: list[str] = []
    read = [0, 0]
    for pair in getattr(report, ATTRIBUTE, None) or ():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            continue
        if pair[0] == LAYER_FINDINGS:
            found.extend(str(line) for line in pair[1] or ())
        elif pair[0] == LAYERS_READ and isinstance(pair[1], (list, tuple)) and len(pair[1]) == 2:
            read = [read[0] + int(pair[1][0]), read[1] + int(pair[1][1])]
    return found, read


class Recorder:
    def __init__(self, config: pytest.Config, path: str) -> None:
        self.config = config
        try:
            # SIM115 is wrong here: the record stays open for the whole session and is closed in close().
            self.file = open(path, "w", encoding="ascii")  # noqa: SIM115
        except OSError as exc:
            raise pytest.UsageError(f"--trtcap-record: cannot write {path}: {exc.strerror or exc}") from None
        self.pending: dict[str, list[PhaseReport]] = {}
        self.durations: dict[str, float] = {}
        self.categories: dict[str, list[str]] = {}
        self.lines: dict[str, int | None] = {}
        self.layer_findings: dict[str, list[str]] = {}
        self.layers_read: dict[str, list[int]] = {}
        self.deselected = 0
        self.collected_written: set = set()
        self.failed_seen = 0
        self._write(_header(config))

    def _write(self, event: dict[str, Any]) -> None:
        if self.file.closed:
            return
        self.file.write(json.dumps(event, ensure_ascii=True, default=str) + "\n")
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
    def pytest_xdist_node_collection_finished(self, ids: list) -> None:
        self._collected(len(ids))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.passed:
            return
        self.failed_seen += report.failed
        message = report_message(report)
        if report.failed:
            self._write({"e": "collection_error", "id": report.nodeid, "message": message.text,
                         "signature": signature_from_message(message.text, "Error")})
            return
        entry = summarise_reports(
            [PhaseReport("setup", "skipped", message=message.text, skip_reason=message.skip_reason)]
        )
        self._write(
            {"e": "test", "id": report.nodeid, **entry, "when": "collect", "duration": 0.0, "categories": ["skipped"]}
        )

    # --- tests --------------------------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._write({"e": "start", "id": nodeid})

    def _category(self, report: pytest.TestReport) -> str:
        """pytest's summary category of a report (what its stats count it as); pytest's own default
        when no plugin answers (``-p no:terminal``) or the hook fails."""
        try:
            status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
        except Exception:
            status = None
        if status:
            return str(status[0])
        if report.when in ("setup", "teardown"):
            return "error" if report.failed else ("" if report.passed else report.outcome)
        return report.outcome

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        # Counted before any plugin sees the report, as pytest's counter sees it; recorded after all of them.
        self.failed_seen += report.failed and not hasattr(report, "wasxfail")
        result = yield
        self._log(report)
        return result

    def _log(self, report: pytest.TestReport) -> None:
        nodeid = report.nodeid
        message = report_message(report)
        wasxfail = hasattr(report, "wasxfail")
        text = None if report.passed and report.when != "call" else message.text
        self.pending.setdefault(nodeid, []).append(PhaseReport(
            report.when, report.outcome, wasxfail, str(report.wasxfail) if wasxfail else None, text,
            message.skip_reason,
        ))
        self.durations[nodeid] = self.durations.get(nodeid, 0.0) + float(getattr(report, "duration", 0.0) or 0.0)
        if nodeid not in self.lines:
            self.lines[nodeid] = _line(report)
        category = self._category(report)
        if category:
            self.categories.setdefault(nodeid, []).append(category)
        if report.when == "teardown":
            found, read = layer_findings(report)
            if found:
                self.layer_findings[nodeid] = found
            if any(read):
                self.layers_read[nodeid] = read
        if report.when not in ("setup", "call"):  # teardown, or xdist's "???" for a crashed worker
            self._finish(nodeid)

    def _finish(self, nodeid: str) -> None:
        reports = self.pending.pop(nodeid, None)
        if not reports:
            return
        entry = summarise_reports(reports)
        entry["duration"] = round(self.durations.pop(nodeid, 0.0), 6)
        entry["categories"] = self.categories.pop(nodeid, [])
        entry["line"] = self.lines.pop(nodeid, None)
        found = self.layer_findings.pop(nodeid, None)
        if found:
            entry["layer_findings"] = found
        read = self.layers_read.pop(nodeid, None)
        if read:
            entry["layers_read"] = read
        self._write({"e": "test", "id": nodeid, **entry})

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> None:
        for nodeid in list(self.pending):
            self._finish(nodeid)
        self._write({"e": "finish", "exitstatus": int(exitstatus), "counted": counted_by_pytest(session),
                     "failed_reports_seen": self.failed_seen})

    def pytest_unconfigure(self) -> None:
        if not self.file.closed:
            self.file.close()
