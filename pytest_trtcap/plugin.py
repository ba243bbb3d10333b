"""pytest-trtcap: the pytest plugin (entry point ``trtcap``; disable with ``-p no:trtcap``).

Registration and configuration: hook specifications, options, markers, fixtures, the torch_tensorrt import hook,
and the moment a session starts using the plugin. This module loads in every pytest run of an environment, and
most runs never touch Torch-TensorRT: so a session stays *dormant* (this module, ``options``, ``hooks`` and
``fixtures`` loaded; no state, no per-test hooks) until it is used: a setting is given or a hook of ours
implemented, the suite imports torch_tensorrt or changes the guards' state, a collected test carries one of our
markers, or xdist runs the session. ``_activate`` is that moment, wherever it falls; the session's state
(``session_state``) and its hooks (``session``) load then. Every module loaded here is paid by every pytest run (and
compiled by each one where bytecode is not cached), so the dormant path is kept to a few small functions.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, Optional

import pytest

from trtcap_guards.tooling import armed_hooks, changed, install_import_hook, on_first_change, rearm, remove_import_hook

from . import fixtures, hooks, options
from .isolation.drive import IsolationDrive

if TYPE_CHECKING:
    from .session_state import TrtcapState

#: The session's state once something needs it; None while the session is dormant; absent before configure and
#: after unconfigure.
_STATE = pytest.StashKey[Optional["TrtcapState"]]()
_DRIVE = pytest.StashKey[Any]()  # the isolation drive (``isolation.drive.IsolationDrive``)

# --- registration -----------------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)
    _one_registration(pluginmanager)


class _OtherName:
    """Holds the plugin's other name; it has no hooks. Not a block: ``-p NAME`` unblocks the name it loads, and
    pytest would then register this module again and fail."""

    def __dir__(self) -> list[str]:
        """Nothing for pluggy's hook scan or pytest's fixture scan to read: every pytest run registers one."""
        return []


def _one_registration(pluginmanager: pytest.PytestPluginManager) -> None:
    """Registered under one name (the entry point's ``trtcap`` or, from ``-p`` / ``pytest_plugins``, the module
    name), take the other: pytest would otherwise register this module again and fail ("already registered
    under a different name"). ``-p no:trtcap`` given before keeps the module's name free, so it can still load."""
    name = pluginmanager.get_name(sys.modules[__name__])
    for other in ("trtcap", __name__):
        free = name is not None and other != name and pluginmanager.get_plugin(other) is None
        if free and not pluginmanager.is_blocked(other):
            pluginmanager.register(_OtherName(), other)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Arm the import hook before conftests load: they may ``import torch_tensorrt`` at module level."""
    outer = armed_hooks()  # an enclosing session's (``pytest.main`` in a test): armed again at the end
    mode, target = _early(early_config, "gpu_less_import"), _early(early_config, "target_sm")
    _arm_import_hook(early_config, mode == "auto", target[0] if target else None)
    # a run that never configures (a conftest that fails to import, --version) never unconfigures: disarm here too
    # (and arm again what an enclosing session had armed).
    early_config.add_cleanup(lambda: rearm(outer))


def _early(config: pytest.Config, dest: str) -> Any:
    """One setting's value while conftests load; the settings module loads only where a value was given."""
    spec = next(s for s in options.SPECS if s.dest == dest)
    if not options.given(config, spec, early=True):
        return spec.default
    from . import settings

    return settings.resolve_early(config, dest).value


#: torch's structured-trace logger: non-propagating and always at DEBUG, it is meant for ``TORCH_TRACE`` files.
_TORCH_TRACE = "torch.__trace"


def _not_torch_trace(record: Any) -> bool:
    return record.name != _TORCH_TRACE


def _keep_torch_trace_out_of_captured_logs(config: pytest.Config) -> None:
    """pytest attaches its log capture to every non-propagating logger, so each export would put dozens of empty
    ``DEBUG torch.__trace`` records into a failing test's report, below our explanation. Its handlers skip them
    (torch's own trace handler, writing ``TORCH_TRACE`` files, is untouched)."""
    logging_plugin = config.pluginmanager.get_plugin("logging-plugin")
    for name in ("caplog_handler", "report_handler"):
        handler = getattr(logging_plugin, name, None)
        if handler is not None and hasattr(handler, "addFilter"):
            handler.addFilter(_not_torch_trace)


def pytest_sessionstart(session: pytest.Session) -> None:
    _keep_torch_trace_out_of_captured_logs(session.config)  # pytest's logging plugin exists once configured


def pytest_configure(config: pytest.Config) -> None:
    if config.option.markers:  # ``pytest --markers`` shows their help, generated from the rules table
        from .markers import marker_lines

        lines: Sequence[str] = marker_lines()
    else:  # registered by name, which is all ``--strict-markers`` reads: the table stays unloaded
        lines = options.MARKER_NAMES
    for line in lines:
        config.addinivalue_line("markers", line)
    target_hooks = config.hook.pytest_trtcap_target_capabilities.get_hookimpls()
    resolved = None
    if options.anything_given(config) or target_hooks:  # a bad value is a usage error before anything changes
        from . import settings

        resolved = settings.resolve(config)
    # stashed after resolving: a targets hook that imports torch_tensorrt must not make a state of defaults first
    config.stash[_STATE] = None
    if resolved is not None:
        settings.declare(_state(config, resolved, tuple(impl.plugin for impl in target_hooks)))
    if not config.pluginmanager.is_registered(fixtures):
        config.pluginmanager.register(fixtures, "trtcap-fixtures")
    state = config.stash[_STATE]
    if "torch_tensorrt" in sys.modules:
        state = state or _state(config)
        if state.settings.target_sm.value:  # imported by a conftest before the hook could name the targets
            from trtcap_guards.tooling import follow_targets

            follow_targets(state.settings.target_sm.value[0])
        state.torch_tensorrt_imported()
    else:  # armed again: the settings are resolved now, and a plugin named in a conftest was not armed early
        target = state.settings.target_sm.value if state is not None else None
        answer = state is None or state.settings.gpu_less_import.value == "auto"
        _arm_import_hook(config, answer, target[0] if target else None)
    if state is not None or _in_use(config):
        _activate(config)
    else:
        config.add_cleanup(on_first_change(lambda: _STATE in config.stash and _activate(config)))
    _start_isolation(config)  # the guards installed and the targets declared: the baseline


def _state(config: pytest.Config, resolved: Any = None, target_hook_plugins: tuple = ()) -> TrtcapState:
    """The session's state, made at first need (settings resolved, the report header, or activation)."""
    state = config.stash.get(_STATE, None)
    if state is None:
        from .session_state import TrtcapState

        state = config.stash[_STATE] = TrtcapState(config, resolved, target_hook_plugins)
    return state


def _activate(config: pytest.Config) -> Any:
    """Wake the session: its state and per-session hooks; returns the per-session plugin."""
    from .session import activate

    return activate(_state(config))


def _start_isolation(config: pytest.Config) -> None:
    """Hold the settings' environment from the start, Torch-TensorRT's registries and the guards' state once the
    suite imports Torch-TensorRT or first changes the guards (``isolation.drive``)."""
    def deliver(item: Any, leaks: list, **how: bool) -> None:
        __tracebackhide__ = True
        failures = drive.take_failures()
        if leaks or failures:
            _activate(config).leaks_found(item, leaks, failures, **how)

    drive = config.stash[_DRIVE] = IsolationDrive(deliver)
    config.pluginmanager.register(drive, "trtcap-isolation")
    verbose = config.get_verbosity() > 0
    if "torch_tensorrt" in sys.modules or changed():
        drive.torch_tensorrt_imported(verbose)
    else:  # called before the change: the guards' state as it was is the baseline
        config.add_cleanup(on_first_change(lambda: drive.hold_builtins(verbose)))


def _arm_import_hook(config: pytest.Config, answer: bool, capability: Any) -> None:
    """When the suite first imports torch_tensorrt: answer its device queries (GPU-less host), then guard."""

    def after_import(module: Any) -> None:  # noqa: ARG001 - the import hook passes the imported module
        if _STATE in config.stash:  # imported by a conftest before configure: configure installs the guards
            state = _state(config)
            state.torch_tensorrt_imported()
            _activate(config)
            drive = config.stash.get(_DRIVE, None)
            if drive is not None:
                drive.torch_tensorrt_imported(config.get_verbosity() > 0)  # the baseline starts here, wherever

    install_import_hook(answer=answer, after=[after_import], capability=capability)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session ends: nothing of it acts later (a ``trylast`` hook may still import torch_tensorrt or first
    change the guards' state), so the import hook is disarmed, armed at configure or early, and the state is
    forgotten (every hook of ours acts only while it is stashed) before it closes."""
    remove_import_hook()
    state = config.stash.get(_STATE, None)
    if _STATE in config.stash:
        del config.stash[_STATE]
    if state is not None:
        state.close()


# --- dormant until used ------------------------------------------------------------------------------


def _in_use(config: pytest.Config) -> bool:
    """Whether the session uses the plugin already (checked at configure and after collection): the suite
    imported torch_tensorrt or changed the guards' state, a hook of ours is implemented, or xdist runs it."""
    hook = config.hook
    return bool(
        "torch_tensorrt" in sys.modules or _guards_changed()
        or hook.pytest_trtcap_target_capabilities.get_hookimpls() or hook.pytest_trtcap_isolated_state.get_hookimpls()
        or (getattr(config.option, "dist", "no") != "no" and not hasattr(config, "workerinput"))
    )


def _guards_changed() -> bool:
    """Whether the guards' state differs from the one they start in (a conftest declared targets, say). Loaded is
    not enough: the report header and the fixtures read the guards without changing them; and until something
    changed it, the modules that hold that state stay unloaded."""
    if not changed():
        return False
    from trtcap_guards import state_snapshot
    from trtcap_guards.tooling import initial_state

    return state_snapshot(fired=False) != initial_state()


def _carries_marker(nodes: Any) -> bool:
    """Whether one of ``nodes`` carries one of our markers among its own (a marker on a module or class is on
    that node; ``item.add_marker`` puts one on the item after its collector reported)."""
    names = options.MARKER_NAMES
    return any(mark.name in names for node in nodes for mark in getattr(node, "own_markers", ()))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """Collected tests that carry our markers (on them or on a module or class above) put the session to use;
    the markers' arguments are checked (and GPU-less collection errors converted, under ``--trtcap-needs-gpu
    skip``) on each collector's report."""
    report = yield
    config = collector.config
    if _STATE not in config.stash:
        return report
    state = config.stash[_STATE]
    skip_gpu = state is not None and state.settings.needs_gpu.value == "skip"
    if skip_gpu or (report.outcome == "passed" and report.result
                    and (_carries_marker(collector.listchain()) or _carries_marker(report.result))):
        _activate(config)
        if skip_gpu and report.outcome == "failed":
            from .needs_gpu import convert_collect_report

            convert_collect_report(report, collector)
        if report.outcome == "passed" and report.result:
            from .markers import check_collect_report

            check_collect_report(report)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Conftests found during collection may implement our hooks, test modules may have imported the guards, and
    ``pytest_collection_modifyitems`` may have added our markers after the collectors reported."""
    config = session.config
    _warn_misspelt_markers(config, session.items)
    if _STATE not in config.stash:
        return
    state = config.stash[_STATE]
    if (state is None or state.session is None) and (_in_use(config) or _carried_after_collection(session.items)):
        _activate(config).pytest_collection_finish(session)  # registered during this hook: pluggy would skip it
    if config.hook.pytest_trtcap_isolated_state.get_hookimpls():
        from .isolation.ledger import user_spec

        for entry in _state(config).user_state_entries():
            config.stash[_DRIVE].hold(user_spec(entry.label, entry.snapshot, entry.restore, entry.where))


def _warn_misspelt_markers(config: pytest.Config, items: Any) -> None:
    """Markers pytest does not know, on the collected tests or a class or module above them: one close to ours is
    warned about by ``markers`` (loaded only when there is an unknown marker)."""
    unknown: dict[str, Any] = {}
    seen: set[int] = set()
    for item in items:
        node = item
        while node is not None and id(node) not in seen:  # the test, its class and module, each read once
            seen.add(id(node))
            for mark in getattr(node, "own_markers", ()):
                unknown.setdefault(mark.name, item)
            node = getattr(node, "parent", None)
    registered = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    unknown = {name: item for name, item in unknown.items() if name not in registered}
    if unknown:
        from .markers import warn_misspelt

        warn_misspelt(unknown)


def _carried_after_collection(items: Any) -> bool:
    """Whether any of ``items``, or a module or class above one, carries one of our markers; each node read once."""
    seen, nodes = set(), []
    for item in items:
        node = item
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            nodes.append(node)
            node = getattr(node, "parent", None)
    return _carries_marker(nodes)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if _STATE not in config.stash:
        return None
    from .report import header_lines

    return header_lines(_state(config), verbose=config.get_verbosity() > 0)
