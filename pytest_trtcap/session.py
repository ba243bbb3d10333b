"""The per-session hooks: capability skips, the isolation drive around each test and fixture, needs-a-GPU
conversions, xdist totals, and the report's summary (whose text lives in ``report``; a leak's wording in
``isolation.leaks``).

One ``SessionPlugin`` is registered for each config when the session starts using the plugin
(``TrtcapState.activate``), so nested (pytester) sessions keep their own state, and sessions that never use it
load none of this.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

import trtcap_guards as guards

from . import markers
from .escaping import one_line
from .isolation.finalizers import after_fixture_ends, node_finalizers, pytests_own_argument, quiet_ends
from .isolation.leaks import fixture_subject, report_leak
from .report import ATTRIBUTE, OwnProperties, attach, summary_lines

if TYPE_CHECKING:
    from .session_state import TrtcapState

T = TypeVar("T")

_HELD = pytest.StashKey[bool]()
_BODY_STARTED = pytest.StashKey[bool]()  # its end is checked by a finalizer registered when its body started
_ENDED = pytest.StashKey[list[str]]()  # what the test left changed, once its end was checked
# checked at the teardown of a fixture its body requested: whether it was held then (checked again, ``_end_test``)
_ENDED_EARLY = pytest.StashKey[bool]()
_NODE_FINALIZERS = pytest.StashKey[list[Any]]()  # pytest's list of the test's node finalizers (``quiet_ends``)
_LEAK_PROPERTY = "trtcap_leak"
_FIXTURE_LEAK_PROPERTY = "trtcap_fixture_leak"
_SKIP_PROPERTY = "trtcap_skip"

_OUR_MARKS = pytest.StashKey[list[Any]]()


def _pop(stash: pytest.Stash, key: pytest.StashKey[T], default: T) -> T:
    """``stash[key]`` taken out of ``stash``, or ``default`` where it is not there."""
    value = stash.get(key, default)
    if key in stash:
        del stash[key]
    return value


def _our_marks(item: pytest.Item) -> list[Any]:
    """The plugin's markers on ``item`` (``markers.our_marks``), read once per test."""
    marks = item.stash.get(_OUR_MARKS, None)
    if marks is None:
        marks = item.stash[_OUR_MARKS] = markers.our_marks(item)
    return marks


def _isolated(item: pytest.Item) -> bool:
    """Not opted out with ``trtcap_no_isolation``: asked once a test becomes the current one, and kept as the
    session's ``current_isolated`` for every fixture it sets up and tears down."""
    return all(mark.name != markers.NO_ISOLATION for mark in _our_marks(item))


def activate(state: TrtcapState) -> SessionPlugin:
    """Register the session's per-session hooks (once). A test already running joins in the phase it is in."""
    if state.session is None:
        state.session = SessionPlugin(state)
        state.config.pluginmanager.register(state.session, "trtcap-session")
        if state.settings.needs_gpu.value == "skip":
            from .needs_gpu import NeedsGpuReports

            state.config.pluginmanager.register(NeedsGpuReports(), "trtcap-needs-gpu-reports")
        running = state.running_test()
        if running is not None:
            state.session.join(running.item, running.when)
    return state.session


class SessionPlugin:
    """Per-config hooks; registered in ``pytest_configure`` so nested (pytester) sessions keep their own state."""

    def __init__(self, state: TrtcapState) -> None:
        self.state = state
        self.leaks: dict[str, str] = {}  # filled from reports, so they are right under xdist too
        self.skips: dict[str, str] = {}
        self.needs_gpu: dict[str, str] = {}  # nodeid -> signature (``--trtcap-needs-gpu skip``)
        self.held: pytest.Item | None = None  # the test between hold and release
        self.hold_at_call: pytest.Item | None = None  # woken in this test's setup: held when its body starts
        self.current: pytest.Item | None = None  # the test being set up, run or torn down
        self.fixture_leaks: list[Any] = []  # (subject, changes) found in fixture teardowns, reported in teardown
        self.fired_before = guards.fired()  # guards fired in this process before the session
        self.late_target_hook: str | None = None  # a targets hook found while collecting: the usage error
        self.properties = OwnProperties()  # what this plugin attached to the reports
        self.unreported: list[str] = []  # project entries' errors no test could be failed with: for the summary
        self.quiet: set[int] = set()  # id() of fixtures whose end needs no comparison (``quiet_ends``)
        self.current_isolated = True  # ``_isolated(self.current)``, asked at every fixture's setup and end
        self.arguments: dict[Any, bool] = {}  # FixtureDef -> ``pytests_own_argument``, asked as often

    def join(self, item: pytest.Item, when: str) -> None:
        """Registered while ``item`` runs (the session had been dormant). In its body, hold now: nothing held was
        loaded or changed before this moment, so this is the state the test started from. In its setup, a fixture
        may be half-way through changes nobody framed: hold when its body starts, so what the fixtures set up is
        theirs and what the body leaves is the test's. In its teardown, what it leaves is adopted."""
        self.current, self.current_isolated = item, _isolated(item)
        if when == "call":
            self._hold(item)
            self._body_started(item, woken=True)
        elif when == "setup":
            self.hold_at_call = item

    def _hold(self, item: pytest.Item) -> None:
        """Hold the current test, ``item`` (joined in its body, or at its body's start after joining in its setup)."""
        if self.current_isolated:
            self.state.get_isolation().hold()
            item.stash[_HELD] = True
            self.held = item

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        if self.hold_at_call is item:
            self.hold_at_call = None
            self._hold(item)
        self._body_started(item)

    def _body_started(self, item: pytest.Item, woken: bool = False) -> None:
        """The test's end is checked by a finalizer of its own, registered now: the finalizers its body adds
        (``request.addfinalizer``) run before it, its fixtures' ends after it. What those finalizers change is the
        test's, what they put back is its clean-up, and no fixture or later test is blamed for either. ``woken``
        mid-body: placed after its last fixture's end, before the finalizers the body added until then."""
        item.stash[_BODY_STARTED] = True
        end = functools.partial(self._end_test, item)
        finalizers = item.stash[_NODE_FINALIZERS] = node_finalizers(item)
        if woken and finalizers:
            finalizers.insert(after_fixture_ends(finalizers), end)
        else:
            item.addfinalizer(end)

    def _end_test(self, item: pytest.Item, early: bool = False) -> None:
        """Check the test's end: the first of its own finalizer and the start of a fixture's teardown that its body
        requested (``early``). After an early check its own finalizer checks again, since a finalizer its body added
        before that request runs after that fixture's teardown."""
        if item is not self.current:
            return
        if _ENDED in item.stash:
            if not early and _ENDED_EARLY in item.stash:
                item.stash[_ENDED].extend(self._check_end(_pop(item.stash, _ENDED_EARLY, False)))
            return
        held = item.stash.get(_HELD, False)
        if early:
            item.stash[_ENDED_EARLY] = held
        if held:
            item.stash[_HELD] = False
            self.held = None
        item.stash[_ENDED] = self._check_end(held)
        frames = self.state.get_isolation().frames if held else None
        if frames:  # with no frame open, none of its fixtures has one: their ends compare nothing
            finalizers = item.stash.get(_NODE_FINALIZERS, [])
            self.quiet = quiet_ends(finalizers, {id(frame.fixture) for frame in frames})

    def _check_end(self, held: bool) -> list[str]:
        """A held test is released (its changes restored, returned for its teardown's report); an opted-out test's
        changes are kept and become the baseline, before any fixture ending with it is checked (its own
        function-scoped fixtures keep adopting as they end)."""
        if held:
            return self.state.get_isolation().release()
        if self.state.isolation is not None:
            self.state.isolation.adopt_outside()
        return []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Hold before any fixture is set up (fixtures get their own frames); then capability markers skip."""
        if self.late_target_hook is not None:  # an xdist worker's: each test fails with it
            pytest.fail(self.late_target_hook, pytrace=False)
        self.current, self.current_isolated = item, _isolated(item)
        self.quiet.clear()
        self.properties.ran_here(item)
        self.state.get_isolation().hold()
        if self.current_isolated:
            item.stash[_HELD] = True
            self.held = item
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

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Generator[None, Any, Any]:
        """A fixture's changes are its own while it lives: frame them (not for an opted-out test's own fixtures)."""
        item = self.current
        if item is None or self._own_argument(fixturedef) or (
                not self.current_isolated and fixturedef.scope == "function"):
            return (yield)
        isolation = self.state.get_isolation()
        isolation.fixture_started(fixturedef, item.nodeid, woken=self.hold_at_call is item)
        try:
            return (yield)
        finally:
            isolation.fixture_set_up(fixturedef)
            if fixturedef.scope == "function" and item.stash.get(_BODY_STARTED, False):
                # requested by the body (``getfixturevalue``): it ends before the test's own finalizer, so the
                # test's end is checked first thing in its teardown, before its code runs
                fixturedef.addfinalizer(functools.partial(self._end_test, item, True))

    def _own_argument(self, fixturedef: Any) -> bool:
        own = self.arguments.get(fixturedef)
        if own is None:
            own = self.arguments[fixturedef] = pytests_own_argument(fixturedef)
        return own

    def pytest_fixture_post_finalizer(self, fixturedef: Any) -> None:
        """Its teardown has run: what the fixture left changed is its leak, restored now, reported in teardown."""
        isolation = self.state.isolation
        if isolation is None or self._own_argument(fixturedef):
            return
        item = self.current
        if item is not None and not self.current_isolated and fixturedef.scope == "function":
            isolation.adopt_outside()  # an opted-out test's own fixture: its teardown's changes are kept too
        quiet = id(fixturedef) in self.quiet
        self.quiet.discard(id(fixturedef))
        end = isolation.fixture_finished(fixturedef, unchanged=quiet)
        if end is None:  # set up while the session was dormant, so never framed: its clean-up is kept
            isolation.unframed_finished()
        if end is not None and end.changes and self.current is not None:
            subject = fixture_subject(fixturedef.argname, fixturedef.scope, self.current.nodeid, end.setup_for)
            self.fixture_leaks.append((subject, end.changes))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """Check the test's end before its fixtures end (its body's finalizers first, see ``_body_started``);
        report after them, so no warnings filter can stop the teardown."""
        self.hold_at_call = None  # woken in a setup that failed or skipped: the body never ran
        if not item.stash.get(_BODY_STARTED, False):
            self._end_test(item)
        strict = self.state.settings.strict.value
        try:
            result = yield
        except BaseException:
            self.unreported.extend(self._entry_failures())  # the teardown's own error is its test's: in the summary
            for subject, what in self._leaks_of(item):
                report_leak(item, subject, what, strict)  # the teardown's own error is the one to show
            raise
        leaks = self._leaks_of(item)
        errors = [report_leak(item, subject, what, strict) for subject, what in leaks]
        failures = self._entry_failures()
        if failures:  # a project's entry failed while this test was held or restored: its error, after the teardown
            pytest.fail("\n".join(failures), pytrace=False)
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error
        return result

    def _entry_failures(self) -> list[str]:
        isolation = self.state.isolation
        return isolation.take_failures() if isolation is not None else []

    def _leaks_of(self, item: pytest.Item) -> list[Any]:
        """(subject, changes) of the test and of the fixtures that ended in its teardown, each attached to its
        report. A test whose end is not checked yet (its finalizer never ran) is checked now."""
        item.stash[_BODY_STARTED] = False
        if _ENDED not in item.stash:
            self._end_test(item)
        changes = _pop(item.stash, _ENDED, [])
        _pop(item.stash, _ENDED_EARLY, False)
        _pop(item.stash, _NODE_FINALIZERS, [])
        leaks = [(item.nodeid, changes)] if changes else []
        if changes:
            self.properties.append(item, _LEAK_PROPERTY, "; ".join(changes))
        for subject, what in self.fixture_leaks:
            self.properties.append(item, _FIXTURE_LEAK_PROPERTY, f"{subject} -> {'; '.join(what)}")
            leaks.append((subject, what))
        self.fixture_leaks.clear()
        return leaks

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
        current = self.current
        if current is not None and report.nodeid == current.nodeid:
            attach(current, report)  # the plugin's entries, apart from the project's user_properties
        self._count_needs_gpu(report)
        if not getattr(report, ATTRIBUTE, None):  # most reports carry none of the plugin's entries
            return
        for key, value in self.properties.read(report, _LEAK_PROPERTY, _FIXTURE_LEAK_PROPERTY, _SKIP_PROPERTY):
            if key == _LEAK_PROPERTY and report.when == "teardown":
                self.leaks.setdefault(report.nodeid, value)
            elif key == _FIXTURE_LEAK_PROPERTY and report.when == "teardown":
                subject, _, what = str(value).partition(" -> ")
                self.leaks.setdefault(subject, what)
            elif key == _SKIP_PROPERTY and report.when == "setup" and report.skipped:
                self.skips[report.nodeid] = value

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._count_needs_gpu(report)

    def _count_needs_gpu(self, report: Any) -> None:
        if report.skipped and self.state.settings.needs_gpu.value == "skip":
            from . import needs_gpu

            signature = needs_gpu.signature_of(report)
            if signature is not None:
                self.needs_gpu[report.nodeid] = signature

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.held is not None and self.state.isolation is not None:
            # An interrupted test (KeyboardInterrupt, pytest.exit) never reached its teardown.
            changes = self.state.isolation.release()
            if changes:
                self.leaks.setdefault(self.held.nodeid, "; ".join(changes) + " (interrupted)")
            self.held = None
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
            failures = self.unreported + self._entry_failures()  # no test to report them on (or one that failed)
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
