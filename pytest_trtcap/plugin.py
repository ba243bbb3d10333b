"""pytest-trtcap: the pytest plugin (entry point ``trtcap``; disable with ``-p no:trtcap``).

Loads in every pytest run of an environment, so it imports neither torch, torch_tensorrt nor tensorrt:
fixtures import torch when a test asks for them, and torch_tensorrt is only ever imported by the suite.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from contextlib import ExitStack
from typing import Any, Callable, Dict, Generator, List, Optional, TYPE_CHECKING

import pytest

import trtcap_guards as guards

from . import hooks, markers, partitions, settings as settings_mod
from .errors import TrtcapLeakError, TrtcapLeakWarning

# ``isolation`` is imported by ``TrtcapState.get_isolation`` when the first test needs it, not at plugin load:
# loading the plugin is paid by every pytest run in the environment, collect-only and unrelated suites included.
if TYPE_CHECKING:
    from . import isolation

_STATE = pytest.StashKey["TrtcapState"]()
_HELD = pytest.StashKey[bool]()
_LEAK_PROPERTY = "trtcap_leak"
_FIXTURE_LEAK_PROPERTY = "trtcap_fixture_leak"
_SKIP_PROPERTY = "trtcap_skip"


class TrtcapState:
    """Everything the plugin holds for one session."""

    def __init__(self, config: pytest.Config, resolved: settings_mod.Settings) -> None:
        self.config = config
        self.settings = resolved
        self.exit = ExitStack()
        self.isolation: Optional[isolation.Isolation] = None
        self.guards_installed_by_us = False
        self.installed_targets: tuple = ()
        self.worker_status: List[Dict[str, Any]] = []
        self.user_state: Optional[list] = None  # the project's pytest_trtcap_isolated_state entries, checked
        self.audit: Any = None  # audit_session.AuditSession under --trtcap-audit

    def user_state_entries(self) -> list:
        """The project's isolated-state entries; a usage error naming the hook, file and value if ill-shaped."""
        if self.user_state is None:
            entries: list = []
            if self.config.hook.pytest_trtcap_isolated_state.get_hookimpls():  # a project implements it
                from .hook_results import isolated_state_entries

                entries = isolated_state_entries(self.config)
            self.user_state = entries
        return self.user_state

    def get_isolation(self) -> isolation.Isolation:
        if self.isolation is None:
            from . import held_state, isolation

            specs = held_state.builtin_specs()
            for entry in self.user_state_entries():
                specs.append(isolation.user_spec(entry.label, entry.snapshot, entry.restore))
            self.isolation = isolation.Isolation(specs)
        return self.isolation

    def torch_tensorrt_imported(self) -> None:
        """The suite imported torch_tensorrt: start the placement audit (if on) and install the guards."""
        if self.audit is not None:
            self.audit.activate()
        self.install_guards()

    def install_guards(self) -> None:
        """Install the guards for the session (when ``--trtcap-guards`` is on) once torch_tensorrt is imported."""
        if not self.settings.guards.value:
            return
        was = guards.is_installed()
        self.installed_targets = guards.install()
        self.guards_installed_by_us = self.guards_installed_by_us or not was


# --- registration -----------------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)
    _one_registration(pluginmanager)


def _one_registration(pluginmanager: pytest.PytestPluginManager) -> None:
    """Registered under one name (the entry point's ``trtcap`` or, from ``-p`` / ``pytest_plugins``, the module
    name), block the other: pytest would otherwise register this module again and fail ("already registered
    under a different name"). ``-p no:trtcap`` given before keeps the module's name free, so it can still load."""
    this = sys.modules[__name__]
    name = pluginmanager.get_name(this)
    for other in ("trtcap", __name__):
        if name is not None and other != name and pluginmanager.get_plugin(other) is None:
            if not pluginmanager.is_blocked(other):
                pluginmanager.set_blocked(other)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings_mod.add_options(parser)


@pytest.hookimpl(trylast=True)
def pytest_trtcap_target_capabilities(config: pytest.Config) -> Optional[Any]:
    return None


def pytest_configure(config: pytest.Config) -> None:
    for line in markers.marker_lines():
        config.addinivalue_line("markers", line)
    resolved = settings_mod.resolve(config)
    state = TrtcapState(config, resolved)
    config.stash[_STATE] = state
    config.pluginmanager.register(SessionPlugin(state), "trtcap-session")
    target = resolved.target_sm
    if target.value is not None and target.source != guards.ENV_TARGETS:
        state.exit.callback(guards.declare_targets(target.value, origin=target.source, warn=False).undo)
    if resolved.backend.source not in ("default", guards.ENV_BACKEND):
        state.exit.callback(guards.declare_backend(resolved.backend.value, origin=resolved.backend.source).undo)
    if resolved.neutralize.value:
        from . import neutralize_targets

        neutralize_targets.enter(state.exit, resolved.neutralize.value, resolved.neutralize.source)
    if resolved.builder_targets.source != "default":
        state.exit.callback(guards.enable_builder_targets(resolved.builder_targets.value,
                                                          origin=resolved.builder_targets.source).undo)
    if resolved.audit.value:
        from . import audit_session

        state.audit = audit_session.start(config, resolved.strict.value)
        state.exit.callback(state.audit.deactivate)
    state.exit.callback(guards.remove_import_hook)
    if "torch_tensorrt" in sys.modules:
        if target.value:  # imported by a conftest before the hook could name the targets: answer them from now on
            guards.gpuless.follow_targets(target.value[0])
        state.torch_tensorrt_imported()
    else:
        targets = resolved.target_sm.value
        _arm_import_hook(config, resolved.gpu_less_import.value == "auto", targets[0] if targets else None)


def _arm_import_hook(config: pytest.Config, answer: bool, capability: Any) -> None:
    """When the suite first imports torch_tensorrt: answer its device queries (GPU-less host), then guard."""

    def after_import(module: Any) -> None:
        state = config.stash.get(_STATE, None)
        if state is not None:  # imported by a conftest before configure: configure installs the guards
            state.torch_tensorrt_imported()
            state.get_isolation().adopt_new()  # the baseline starts here, even inside a test body

    guards.install_import_hook(answer=answer, after=[after_import], capability=capability)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Arm the import hook before conftests load: they may ``import torch_tensorrt`` at module level."""
    mode = settings_mod.resolve_early(early_config, "gpu_less_import")
    targets = settings_mod.resolve_early(early_config, "target_sm").value
    _arm_import_hook(early_config, mode.value == "auto", targets[0] if targets else None)
    # pytest_unconfigure does nothing when pytest_configure failed (a usage error): disarm here as well.
    early_config.add_cleanup(guards.remove_import_hook)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    if state.guards_installed_by_us:
        guards.uninstall()
    state.exit.close()


# --- report header ------------------------------------------------------------------------------------


def _upstream_ships_guards() -> Optional[bool]:
    """Whether the installed Torch-TensorRT has its own Turing predicate (read from source, not imported)."""
    import importlib.machinery
    import os

    module = sys.modules.get("torch_tensorrt._utils")
    if module is not None:
        return hasattr(module, "trt_rtx_targets_turing")
    if "torch_tensorrt" in sys.modules:
        spec = sys.modules["torch_tensorrt"].__spec__
    else:
        # PathFinder directly, not importlib.util.find_spec: that would consult (and so disarm) our own
        # torch_tensorrt import hook, and the suite's first import would then fail on a GPU-less host.
        spec = importlib.machinery.PathFinder.find_spec("torch_tensorrt")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "_utils.py")
    try:
        with open(path, encoding="utf-8") as f:
            return "def trt_rtx_targets_turing" in f.read()
    except OSError:
        return None


def _from(origin: str) -> str:
    return origin if origin.startswith("detected") else f"from {origin}"


def _sourced(setting: settings_mod.Setting) -> str:
    return "default" if setting.source == "default" else f"from {setting.source}"


def _given(setting: settings_mod.Setting) -> str:
    """`` (auto, from --trtcap-gpu-less-import)`` where a value was given; nothing for a default."""
    return "" if setting.source == "default" else f" ({setting.value}, {_sourced(setting)})"


def _guards_text(state: TrtcapState) -> str:
    s = state.settings.guards
    if not s.value:
        return f"off ({_sourced(s)})"
    if guards.is_installed():
        return f"installed ({len(state.installed_targets) or 'all'} targets; on, {_sourced(s)})"
    return f"on ({_sourced(s)}; installed when torch_tensorrt is imported)"


def _review_line() -> Optional[str]:
    """The registry review's line once the suite has imported the converter registry (never imports it)."""
    if guards.registry.REGISTRY_MODULE not in sys.modules:
        return None
    from trtcap_guards.review import describe_unreviewed

    return describe_unreviewed()


def header_line(state: TrtcapState) -> str:
    """The one line a default run shows: targets and their source, backend, whether Turing rules apply, guards."""
    s = state.settings
    decision = guards.capability_decision(probe_host=False)
    if decision.targets:
        targets = f"targets: {decision.targets_text} (from {decision.origin})"
    elif s.target_sm.value is None:
        targets = "targets: not declared (host device decides at first use)"
    else:
        targets = "targets: none"
    decided = "yes" if decision.targets_turing else ("no" if decision.targets or s.target_sm.value is not None else "pending host device")
    return (
        f"trtcap: {targets}; backend: {decision.backend} ({_from(decision.backend_origin)}); "
        f"targets Turing on TensorRT-RTX: {decided}; guards: {_guards_text(state)}"
    )


def header_lines(state: TrtcapState, verbose: bool = False) -> List[str]:
    """One line by default; with ``-v`` also the Torch-TensorRT version, neutralizations, GPU-less import and
    isolation mode, each with its source. (pytest shows no header at all under ``-q``.)"""
    lines = [header_line(state)]
    review = _review_line()
    if review:
        lines.append(f"trtcap: {review}")
    if state.settings.audit.value:
        lines.append(f"trtcap: placement audit: on ({_sourced(state.settings.audit)})")
    if not verbose:
        return lines
    s = state.settings
    version = guards.torch_tensorrt_version()
    if version is None:
        lines.append("trtcap: torch-tensorrt: not installed (isolation inert; markers decide from declared targets)")
    else:
        ships = _upstream_ships_guards()
        own = {True: "ships its own Turing guards", False: "no upstream Turing guards", None: "upstream guards unknown"}[ships]
        lines.append(f"trtcap: torch-tensorrt {version} ({own})")
    neutral = ", ".join(guards.neutralized())
    lines.append(f"trtcap: neutralized: {neutral} ({_sourced(s.neutralize)})" if neutral else "trtcap: neutralized: none")
    gpu = guards.gpu_less_import_status()
    if s.gpu_less_import.value == "off":
        gpu_text = f"off ({_sourced(s.gpu_less_import)})"
    elif gpu.applied:
        gpu_text = gpu.describe() + _given(s.gpu_less_import)
    elif "torch_tensorrt" in sys.modules:
        gpu_text = gpu.detail + _given(s.gpu_less_import)
    else:
        gpu_text = (f"auto ({_sourced(s.gpu_less_import)}; answers device queries only if torch_tensorrt is "
                    "imported without a CUDA device)")
    builder = guards.builder.builder_targets_status() if s.guards.value else f"off (guards off, {_sourced(s.guards)})"
    lines.append(f"trtcap: builder targets: {builder}")
    strict = "strict" if s.strict.value else "warn"
    lines.append(f"trtcap: gpu-less import: {gpu_text}; isolation: {strict} ({_sourced(s.strict)})")
    from . import needs_gpu_report

    lines.append(f"trtcap: needs a GPU: {needs_gpu_report.header_text(s.needs_gpu.value, _sourced(s.needs_gpu))}")
    return lines


# --- collection: marker validation ---------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    state = collector.config.stash.get(_STATE, None)
    if report.outcome == "failed" and state is not None and state.settings.needs_gpu.value == "skip":
        from . import needs_gpu_report

        needs_gpu_report.convert_collect_report(report, collector)
    if report.outcome == "passed" and report.result:
        problems = [p for item in report.result if isinstance(item, pytest.Item) for p in markers.bad_marker_usage(item)]
        if problems:
            report.outcome = "failed"
            report.longrepr = "trtcap: " + "\n".join(problems)
            report.result = []
    return report


# --- per test: capability skips and isolation -------------------------------------------------------------


def _loaded_registry() -> Any:
    """The guards' registry module where something loaded it; a session that never did has nothing to report
    from it, and loading it only to say so would cost every unrelated pytest run."""
    return sys.modules.get("trtcap_guards.registry")


def _fired() -> Dict[Any, int]:
    registry = _loaded_registry()
    return registry.fired() if registry is not None else {}


def _isolated(item: pytest.Item) -> bool:
    return item.get_closest_marker(markers.NO_ISOLATION) is None


#: pytest's fixtures for unittest and xunit set-up methods, named after the methods a user wrote.
_SETUP_FIXTURES = (
    ("_unittest_setUpClass_fixture_", "{}.setUpClass/tearDownClass"),
    ("_unittest_setup_method_fixture_", "{}.setup_method/teardown_method"),
    ("_xunit_setup_module_fixture_", "{} setup_module/teardown_module"),
    ("_xunit_setup_class_fixture_", "{}.setup_class/teardown_class"),
    ("_xunit_setup_function_fixture_", "{} setup_function/teardown_function"),
    ("_xunit_setup_method_fixture_", "{}.setup_method/teardown_method"),
)


def _fixture_subject(fixturedef: Any, nodeid: str, setup_for: str) -> str:
    """``test_b (fixture 'f', module scope, set up for test_a)``; set-up methods by their own names."""
    name = fixturedef.argname
    what = next((form.format(name[len(prefix):]) for prefix, form in _SETUP_FIXTURES if name.startswith(prefix)),
                f"fixture {name!r}")
    since = "" if setup_for in ("", nodeid) else f", set up for {setup_for}"
    return f"{nodeid} ({what}, {fixturedef.scope} scope{since})"


class SessionPlugin:
    """Per-config hooks; registered in ``pytest_configure`` so nested (pytester) sessions keep their own state."""

    def __init__(self, state: TrtcapState) -> None:
        self.state = state
        self.leaks: Dict[str, str] = {}  # filled from reports, so they are right under xdist too
        self.skips: Dict[str, str] = {}
        self.needs_gpu: Dict[str, str] = {}  # nodeid -> signature (``--trtcap-needs-gpu skip``)
        self.held: Optional[pytest.Item] = None  # the test between hold and release
        self.current: Optional[pytest.Item] = None  # the test being set up, run or torn down
        self.fixture_leaks: List[Any] = []  # (subject, changes) found in fixture teardowns, reported in teardown
        self.fired_before = _fired()  # guards fired in this process before the session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Hold before any fixture is set up (fixtures get their own frames); then capability markers skip."""
        self.current = item
        self.state.get_isolation().hold()
        if _isolated(item):
            item.stash[_HELD] = True
            self.held = item
        for name in markers.capability_markers():
            if item.get_closest_marker(name) is not None:
                reason = markers.skip_reason(name, guards.capability_decision())
                if reason is not None:
                    item.user_properties.append((_SKIP_PROPERTY, name))
                    raise pytest.skip.Exception(reason, _use_item_location=True)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: pytest.FixtureRequest) -> Generator[None, Any, Any]:
        """A fixture's changes are its own while it lives: frame them (not for an opted-out test's own fixtures)."""
        item = self.current
        if item is None or (fixturedef.scope == "function" and not _isolated(item)):
            return (yield)
        isolation = self.state.get_isolation()
        isolation.fixture_started(fixturedef, item.nodeid)
        try:
            return (yield)
        finally:
            isolation.fixture_set_up(fixturedef)

    def pytest_fixture_post_finalizer(self, fixturedef: Any, request: pytest.FixtureRequest) -> None:
        """Its teardown has run: what the fixture left changed is its leak, restored now, reported in teardown."""
        isolation = self.state.isolation
        end = isolation.fixture_finished(fixturedef) if isolation is not None else None
        if end is not None and end.changes and self.current is not None:
            self.fixture_leaks.append((_fixture_subject(fixturedef, self.current.nodeid, end.setup_for),
                                       end.changes))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
        """Outermost, so it sees the report unittest and xfail handling made: a failure that needs a GPU skips."""
        report = yield
        if report.failed and self.state.settings.needs_gpu.value == "skip":
            from . import needs_gpu_report

            needs_gpu_report.convert_test_report(report, call, item)
        return report

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: Optional[pytest.Item]) -> Generator[None, Any, Any]:
        """Restore before the fixtures are torn down; report after, so no warnings filter can stop the teardown."""
        changes: List[str] = []
        if item.stash.get(_HELD, False):
            item.stash[_HELD] = False
            self.held = None
            changes = self.state.get_isolation().release()
        if changes:
            item.user_properties.append((_LEAK_PROPERTY, "; ".join(changes)))
        leaks = [(item.nodeid, changes)] if changes else []
        try:
            result = yield
        except BaseException:
            self._flush_fixture_leaks(item, leaks)
            for subject, what in leaks:
                self._report_leak(item, subject, what)  # the teardown's own error is the one to show
            raise
        self._flush_fixture_leaks(item, leaks)
        errors = [self._report_leak(item, subject, what) for subject, what in leaks]
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error
        return result

    def _flush_fixture_leaks(self, item: pytest.Item, leaks: List[Any]) -> None:
        for subject, what in self.fixture_leaks:
            item.user_properties.append((_FIXTURE_LEAK_PROPERTY, f"{subject} -> {'; '.join(what)}"))
            leaks.append((subject, what))
        self.fixture_leaks.clear()

    def _report_leak(self, item: pytest.Item, subject: str, changes: List[str]) -> Optional[TrtcapLeakError]:
        """Warn about a leak; the error to raise under ``--trtcap-strict`` or a filter that makes warnings errors."""
        what = "; ".join(changes)
        path, lineno, _ = item.location
        try:
            warnings.warn_explicit(
                TrtcapLeakWarning(f"{subject} leaked global state: {what}"),
                TrtcapLeakWarning, filename=str(item.config.rootpath / path), lineno=(lineno or 0) + 1,
            )
        except Warning as exc:  # -W error / filterwarnings = error: an error of this test, not of pytest
            return TrtcapLeakError(
                f"trtcap: {subject} leaked global state ({type(exc).__name__} is an error under the "
                f"warnings filter): {what}"
            )
        if self.state.settings.strict.value:
            return TrtcapLeakError(f"trtcap: {subject} leaked global state (--trtcap-strict): {what}")
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Check the project's isolated-state hook results here too: under xdist this is the controller's one
        chance, before it starts the workers (a usage error raised in a worker is an INTERNALERROR)."""
        if self._implements_isolated_state():
            from .hook_results import isolated_state_entries

            isolated_state_entries(self.state.config)  # checked only; conftests found later may add entries

    def _implements_isolated_state(self) -> bool:
        return bool(self.state.config.hook.pytest_trtcap_isolated_state.get_hookimpls())

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Before the first test: the project's isolated-state hook results, and the neutralized targets against
        the registry where collection imported Torch-TensorRT. Not in an xdist worker, which cannot stop the
        session cleanly: there a bad hook result fails each test as before, and the controller checked what it could."""
        if getattr(session.config, "workerinput", None) is not None:
            return
        self.state.user_state_entries()
        neutralize = self.state.settings.neutralize
        if neutralize.value:
            from . import neutralize_targets

            neutralize_targets.check_after_collection(neutralize.value, neutralize.source)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._count_needs_gpu(report)
        for key, value in report.user_properties:
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
            from . import needs_gpu_report

            signature = needs_gpu_report.signature_of(report)
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
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        out = getattr(node, "workeroutput", {}).get("trtcap")
        if out:
            self.state.worker_status.append(out)

    def pytest_report_header(self, config: pytest.Config) -> List[str]:
        return header_lines(self.state, verbose=config.get_verbosity() > 0)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if getattr(config, "workerinput", None) is None and exitstatus != pytest.ExitCode.USAGE_ERROR:
            lines = self.summary_lines()  # a refused setting ran nothing: nothing to claim
            if lines:
                terminalreporter.write_sep("-", "trtcap")
                for line in lines:
                    terminalreporter.write_line(line)

    def fired_counts(self) -> Counter:
        """What the guards kept off TensorRT during this session: here, or summed over xdist workers."""
        counts: Counter = Counter(_fired())
        counts.subtract(self.fired_before)
        for worker in self.state.worker_status:
            for rule, target, n in worker.get("fired", ()):
                counts[(rule, target)] += n
        return Counter({key: n for key, n in counts.items() if n > 0})

    def summary_lines(self) -> List[str]:
        lines: List[str] = []
        if self.skips:
            by_marker = Counter(self.skips.values())
            detail = ", ".join(f"{m}: {n}" for m, n in sorted(by_marker.items()))
            lines.append(f"capability skips: {len(self.skips)} ({detail})")
        if self.needs_gpu:
            from . import needs_gpu_report

            lines.append(needs_gpu_report.summary_line(self.needs_gpu.values()))
        if self.leaks:
            lines.append(f"leaks: {len(self.leaks)} test(s) left global state changed (restored)")
            lines.extend(f"  {nodeid} -> {what}" for nodeid, what in self.leaks.items())
        review = _review_line()
        if review:
            lines.append(review)
        registry = _loaded_registry()
        neutral = registry.neutralized() if registry is not None else ()
        if neutral:
            lines.append(f"neutralized guards: {', '.join(neutral)}")
        fired = self.fired_counts()
        if fired:
            lines.append("guards fired: " + ", ".join(f"{r} on {t} x{n}" for (r, t), n in sorted(fired.items())))
        if self.state.audit is not None:
            lines.extend(self.state.audit.summary_lines())
        gpu = guards.gpu_less_import_status()
        applied = [gpu.describe()] if gpu.applied else sorted({w["gpu_less"] for w in self.state.worker_status if w.get("gpu_less")})
        if applied:
            lines.append(f"gpu-less import: {', '.join(applied)}")
        return lines


# --- fixtures -------------------------------------------------------------------------------------------


def _need_torch(fixture: str) -> Any:
    try:
        import torch
    except ImportError:
        pytest.skip(f"{markers.SKIP_PREFIX}{fixture} needs torch, which is not installed")
    return torch


@pytest.fixture
def trt_capability() -> guards.CapabilityDecision:
    """The predicate's decision with its provenance (targets, source, backend, reason)."""
    return guards.capability_decision()


@pytest.fixture
def trt_targets_turing(trt_capability: guards.CapabilityDecision) -> bool:
    """True when the session's build targets Turing (SM 7.5) on TensorRT-RTX."""
    return trt_capability.targets_turing


@pytest.fixture
def turing_safe_gemm_dtype() -> Any:
    """``torch.float16`` where FP32 GEMMs cannot be served on the targets, else ``torch.float32``."""
    _need_torch("turing_safe_gemm_dtype")
    return guards.turing_safe_gemm_dtype()


@pytest.fixture
def expected_partition_counts() -> Callable[..., partitions.PartitionCounts]:
    """Factory: ``expected_partition_counts(default=(acc, gpu), turing=(acc, gpu))`` chosen by the predicate."""
    return partitions.expected_partition_counts
