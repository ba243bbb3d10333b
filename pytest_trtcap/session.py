"""The per-session hooks: capability skips, the leaks the isolation drive found (``isolation.drive``), needs-a-GPU
conversions, xdist totals, and the report's summary (whose text lives in ``report``; a leak's wording in
``isolation.leaks``).

One ``SessionPlugin`` is registered for each config when the session starts using the plugin
(``TrtcapState.activate``), so nested (pytester) sessions keep their own state, and sessions that never use it
load none of this.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

import trtcap_guards as guards

from . import markers
from .escaping import one_line
from .isolation import report_leak
from .report import ATTRIBUTE, OwnProperties, attach, summary_lines

if TYPE_CHECKING:
    from .session_state import TrtcapState

_LEAK_PROPERTY = "trtcap_leak"
_FIXTURE_LEAK_PROPERTY = "trtcap_fixture_leak"
_OTHER_LEAK_PROPERTY = "trtcap_other_leak"  # found outside any test, or left by a wider node's finalizers
_LEAK_KINDS = {_LEAK_PROPERTY: "test", _FIXTURE_LEAK_PROPERTY: "fixture", _OTHER_LEAK_PROPERTY: "other"}
_SKIP_PROPERTY = "trtcap_skip"

_OUR_MARKS = pytest.StashKey[list[Any]]()


def _our_marks(item: pytest.Item) -> list[Any]:
    """The plugin's markers on ``item`` (``markers.our_marks``), read once per test."""
    marks = item.stash.get(_OUR_MARKS, None)
    if marks is None:
        marks = item.stash[_OUR_MARKS] = markers.our_marks(item)
    return marks


def _leak_key(leak: Any, item: pytest.Item | None) -> str:
    """A test's own leak, a fixture's (or one that names a fixture beside a test), or one found elsewhere."""
    if leak.subject == getattr(item, "nodeid", None):
        return _LEAK_PROPERTY
    return _FIXTURE_LEAK_PROPERTY if leak.kind in ("fixture", "test") else _OTHER_LEAK_PROPERTY


def activate(state: TrtcapState) -> SessionPlugin:
    """Register the session's per-session hooks (once). A test already running joins in the phase it is in."""
    if state.session is None:
        state.session = SessionPlugin(state)
        state.config.pluginmanager.register(state.session, "trtcap-session")
        if state.settings.needs_gpu.value == "skip":
            from .needs_gpu import NeedsGpuReports

            state.config.pluginmanager.register(NeedsGpuReports(), "trtcap-needs-gpu-reports")
    return state.session


class SessionPlugin:
    """Per-config hooks; registered in ``pytest_configure`` so nested (pytester) sessions keep their own state."""

    def __init__(self, state: TrtcapState) -> None:
        self.state = state
        self.leaks: dict[str, tuple[str, str]] = {}  # subject -> (kind, what), from reports: right under xdist too
        self.skips: dict[str, str] = {}
        self.needs_gpu: dict[str, str] = {}  # nodeid -> signature (``--trtcap-needs-gpu skip``)
        self.fired_before = guards.fired()  # guards fired in this process before the session
        self.late_target_hook: str | None = None  # a targets hook found while collecting: the usage error
        self.properties = OwnProperties()  # what this plugin attached to the reports
        self.unreported: list[str] = []  # project entries' errors no test could be failed with: for the summary
        self.current: pytest.Item | None = None  # the test being set up, run or torn down
        self.current_id = ""  # its node id
        self.gpu_skips = state.settings.needs_gpu.value == "skip"  # ``--trtcap-needs-gpu skip``

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Capability markers skip (the isolation drive holds the state around the test: ``isolation.drive``)."""
        if self.late_target_hook is not None:  # an xdist worker's: each test fails with it
            pytest.fail(self.late_target_hook, pytrace=False)
        self.current, self.current_id = item, item.nodeid
        self.properties.ran_here(self.current_id)
        marks = _our_marks(item)
        problems = markers.bad_marker_usage(item, marks)  # added after collection (a collected one failed it)
        if problems:
            pytest.fail("trtcap: " + "\n".join(problems), pytrace=False)
        named = {mark.name for mark in marks}
        for name in markers.capability_markers() if named else ():
            if name in named:
                reason = markers.skip_reason(name, guards.capability_decision())
                if reason is not None:
                    self.properties.append(item, _SKIP_PROPERTY, name)
                    raise pytest.skip.Exception(reason, _use_item_location=True)

    def leaks_found(self, item: pytest.Item | None, leaks: list[Any], failures: list[str],
                    teardown_failed: bool = False, interrupted: bool = False) -> None:
        """Warn about each leak the isolation found (``isolation.drive``) and put it on the test's teardown report;
        under ``--trtcap-strict`` (or a filter that makes the warning an error) the test errors. A project entry's
        failure fails the test. A teardown that failed already keeps its own error; with no report to come (no
        test, or an interrupted one) the summary has them."""
        __tracebackhide__ = True
        if item is None or interrupted or teardown_failed:
            self.unreported.extend(failures)
            failures = []
        if item is not None:
            self.current, self.current_id = item, item.nodeid
        errors = []
        for leak in leaks:
            key = _leak_key(leak, item)
            what = "; ".join(leak.lines) + (" (interrupted)" if interrupted else "")
            if item is None or interrupted:  # no report of it will come
                self.leaks.setdefault(leak.subject, (_LEAK_KINDS[key], what))
            errors.append(report_leak(item, leak.subject, leak.lines, self.state.settings.strict.value))
            if item is not None and not interrupted:
                self.properties.append(item, key, what if key == _LEAK_PROPERTY else f"{leak.subject} -> {what}")
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)
        error = next((e for e in errors if e is not None), None)
        if error is not None and item is not None and not (teardown_failed or interrupted):
            raise error.with_traceback(None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self) -> None:
        """Check the project's isolated-state hook results here too: under xdist this is the controller's one
        chance, before it starts the workers (a usage error raised in a worker is an INTERNALERROR)."""
        if self.state.config.hook.pytest_trtcap_isolated_state.get_hookimpls():
            from .hook_results import isolated_state_entries

            isolated_state_entries(self.state.config)  # checked only; conftests found later may add entries
        neutralize = self.state.settings.neutralize
        if neutralize.value and self.state.config.pluginmanager.has_plugin("dsession"):
            from .settings import check_neutralized_in_xdist_controller

            check_neutralized_in_xdist_controller(neutralize.value, neutralize.source)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Before the first test: a targets hook found too late, the project's isolated-state hook results, and the
        neutralized targets against the registry where collection imported Torch-TensorRT. Not in an xdist worker,
        which cannot stop the session cleanly: there a bad hook result fails each test as before, and the controller
        checked what it could."""
        from .hook_results import late_target_hook

        self.late_target_hook = late_target_hook(session.config, self.state.target_hook_plugins)
        if getattr(session.config, "workerinput", None) is not None:
            return
        if self.late_target_hook is not None:
            raise pytest.UsageError(self.late_target_hook)
        self.state.user_state_entries()
        neutralize = self.state.settings.neutralize
        if neutralize.value:
            from .settings import check_neutralized_after_collection

            check_neutralized_after_collection(neutralize.value, neutralize.source)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """First, so every reader (an xdist worker sending it on included) finds the plugin's entries on a report
        of the test this process runs: attached as it is logged, right after it was made."""
        if report.nodeid == self.current_id and self.current is not None:
            attach(self.current, report)  # the plugin's entries, apart from the project's user_properties
        if self.gpu_skips:
            self._count_needs_gpu(report)
        if not getattr(report, ATTRIBUTE, None):  # most reports carry none of the plugin's entries
            return
        for key, value in self.properties.read(report, _SKIP_PROPERTY, *_LEAK_KINDS):
            if key == _LEAK_PROPERTY and report.when == "teardown":
                self.leaks.setdefault(report.nodeid, ("test", str(value)))
            elif key in _LEAK_KINDS and report.when == "teardown":
                subject, _, what = str(value).partition(" -> ")
                self.leaks.setdefault(subject, (_LEAK_KINDS[key], what))
            elif key == _SKIP_PROPERTY and report.when == "setup" and report.skipped:
                self.skips[report.nodeid] = value

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if self.gpu_skips:
            self._count_needs_gpu(report)

    def _count_needs_gpu(self, report: Any) -> None:
        if report.skipped:
            from . import needs_gpu

            signature = needs_gpu.signature_of(report)
            if signature is not None:
                self.needs_gpu[report.nodeid] = signature

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            gpu = guards.gpu_less_import_status()
            workeroutput["trtcap"] = {
                "gpu_less": gpu.describe() if gpu.applied else "",
                "fired": [[rule, target, n] for (rule, target), n in self.fired_counts().items()],
            }

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any) -> None:
        out = getattr(node, "workeroutput", {}).get("trtcap")
        if out:
            self.state.worker_status.append(out)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if getattr(config, "workerinput", None) is None and exitstatus != pytest.ExitCode.USAGE_ERROR:
            failures = self.unreported  # no test to report them on (or one that failed)
            if not failures and not self._may_have_news():  # a refused setting ran nothing: nothing to claim
                return
            lines = failures + summary_lines(self)
            if lines:
                terminalreporter.write_sep("-", "trtcap")
                for line in lines:
                    terminalreporter.write_line(one_line(line))

    def _may_have_news(self) -> bool:
        """Whether the summary could have a line: most runs of an environment skip, convert and leak nothing and
        never load torch_tensorrt or the guards, and they need not compute the summary to find that out."""
        state = self.state
        return bool(self.skips or self.needs_gpu or self.leaks or state.audit is not None or state.worker_status
                    or "torch_tensorrt" in sys.modules or guards.neutralized() or self.fired_counts()
                    or guards.gpu_less_import_status().applied)

    def fired_counts(self) -> Counter:
        """What the guards kept off TensorRT during this session: here, or summed over xdist workers."""
        counts: Counter = Counter(guards.fired())
        counts.subtract(self.fired_before)
        for worker in self.state.worker_status:
            for rule, target, n in worker.get("fired", ()):
                counts[(rule, target)] += n
        return Counter({key: n for key, n in counts.items() if n > 0})
