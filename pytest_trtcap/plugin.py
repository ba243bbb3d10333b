"""pytest-trtcap: the pytest plugin (entry point ``trtcap``; disable with ``-p no:trtcap``).

Registration and configuration only: hook specifications, options, markers, the settings' declarations for the
session, the torch_tensorrt import hook, and the fixtures. Loads in every pytest run of an environment, so it
imports neither torch, torch_tensorrt nor tensorrt, and a session that never uses the plugin stays dormant: the
per-session hooks (``session``) are registered by ``TrtcapState.activate`` when it first does.
"""

from __future__ import annotations

import sys
from typing import Any, Generator, List, Optional

import pytest

from trtcap_guards import first_use, import_hook

from . import fixtures, hooks, markers, options
from .options import SPECS, Settings
from .state import STATE, TrtcapState

# --- registration -----------------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)
    _one_registration(pluginmanager)


class _OtherName:
    """Holds the plugin's other name; it has no hooks. Not a block: ``-p NAME`` unblocks the name it loads, and
    pytest would then register this module again and fail."""


def _one_registration(pluginmanager: pytest.PytestPluginManager) -> None:
    """Registered under one name (the entry point's ``trtcap`` or, from ``-p`` / ``pytest_plugins``, the module
    name), take the other: pytest would otherwise register this module again and fail ("already registered
    under a different name"). ``-p no:trtcap`` given before keeps the module's name free, so it can still load."""
    this = sys.modules[__name__]
    name = pluginmanager.get_name(this)
    for other in ("trtcap", __name__):
        free = name is not None and other != name and pluginmanager.get_plugin(other) is None
        if free and not pluginmanager.is_blocked(other):
            pluginmanager.register(_OtherName(), other)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in markers.marker_lines():
        config.addinivalue_line("markers", line)
    given = options.anything_given(config)
    target_hooks = config.hook.pytest_trtcap_target_capabilities.get_hookimpls()
    # the settings module loads only where a value may come: a setting is given, or the targets hook implemented
    valued = bool(given or target_hooks)
    if valued:
        from . import settings

        resolved = settings.resolve(config)  # a usage error for a bad value, before anything is changed
    else:
        resolved = Settings()
    state = TrtcapState(config, resolved, given, tuple(impl.plugin for impl in target_hooks))
    config.stash[STATE] = state
    if not config.pluginmanager.is_registered(fixtures):
        config.pluginmanager.register(fixtures, "trtcap-fixtures")
    if valued:  # a setting nothing gave stays at its default and declares nothing
        settings.declare(state)
    state.exit.callback(import_hook.remove_import_hook)
    target = resolved.target_sm
    if "torch_tensorrt" in sys.modules:
        if target.value:  # imported by a conftest before the hook could name the targets: answer them from now on
            from trtcap_guards import gpuless

            gpuless.follow_targets(target.value[0])
        state.torch_tensorrt_imported()
    else:
        _arm_import_hook(config, resolved.gpu_less_import.value == "auto", target.value[0] if target.value else None)
    if state.in_use():
        state.activate()
    else:
        state.exit.callback(first_use.on_first_change(state.activate))


def _arm_import_hook(config: pytest.Config, answer: bool, capability: Any) -> None:
    """When the suite first imports torch_tensorrt: answer its device queries (GPU-less host), then guard."""

    def after_import(module: Any) -> None:  # noqa: ARG001 - the import hook passes the imported module
        state = config.stash.get(STATE, None)
        if state is not None:  # imported by a conftest before configure: configure installs the guards
            state.torch_tensorrt_imported()
            state.activate()
            state.get_isolation().adopt_new()  # the baseline starts here, even inside a test body

    import_hook.install_import_hook(answer=answer, after=[after_import], capability=capability)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Arm the import hook before conftests load: they may ``import torch_tensorrt`` at module level."""
    mode, target = _early(early_config, "gpu_less_import"), _early(early_config, "target_sm")
    _arm_import_hook(early_config, mode == "auto", target[0] if target else None)
    # pytest_unconfigure does nothing when pytest_configure failed (a usage error): disarm here as well.
    early_config.add_cleanup(import_hook.remove_import_hook)


def _early(config: pytest.Config, dest: str) -> Any:
    """One setting's value while conftests load; the settings module loads only where a value was given."""
    spec = next(s for s in SPECS if s.dest == dest)
    if not options.given(config, spec, early=True):
        return spec.default
    from . import settings

    return settings.resolve_early(config, dest).value


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.guards_installed_by_us:
        from trtcap_guards import registry

        registry.uninstall()
    state.exit.close()


# --- dormant until used ------------------------------------------------------------------------------


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is not None:
        state.pytest_session = session


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """Collected tests that carry our markers put the session to use; the markers' arguments are checked (and
    GPU-less collection errors converted, under ``--trtcap-needs-gpu skip``) on each collector's report."""
    report = yield
    state = collector.config.stash.get(STATE, None)
    if state is None:
        return report
    uses = report.outcome == "passed" and bool(report.result) and markers.uses_markers(
        collector, report.result, markers.marker_names())
    if uses or state.settings.needs_gpu.value == "skip":
        state.activate()
        from .collect_checks import check_collect_report

        check_collect_report(report, collector, state)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Conftests found during collection may implement our hooks, test modules may have imported the guards, and
    ``pytest_collection_modifyitems`` may have added our markers after the collectors reported."""
    state = session.config.stash.get(STATE, None)
    if state is not None and state.session is None and (
            state.in_use() or markers.carried_after_collection(session.items, markers.marker_names())):
        state.activate().pytest_collection_finish(session)  # registered during this hook: pluggy would skip it


def pytest_report_header(config: pytest.Config) -> Optional[List[str]]:
    state = config.stash.get(STATE, None)
    if state is None:
        return None
    from .report_lines import header_lines

    return header_lines(state, verbose=config.get_verbosity() > 0)
