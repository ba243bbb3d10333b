"""pytest-trtcap: the pytest plugin (entry point ``trtcap``; disable with ``-p no:trtcap``).

Registration and configuration only: hook specifications, options, the settings' declarations for the session,
the torch_tensorrt import hook, and the per-session plugin (``session``) and fixtures (``fixtures``), registered
in ``pytest_configure``. Loads in every pytest run of an environment, so it imports neither torch,
torch_tensorrt nor tensorrt: fixtures import torch when a test asks for them, and torch_tensorrt is only ever
imported by the suite.
"""

from __future__ import annotations

import sys
from typing import Any, Generator

import pytest

import trtcap_guards as guards

from . import hooks, markers
from . import settings as settings_mod
from .state import STATE, TrtcapState

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
        free = name is not None and other != name and pluginmanager.get_plugin(other) is None
        if free and not pluginmanager.is_blocked(other):
            pluginmanager.set_blocked(other)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings_mod.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in markers.marker_lines():
        config.addinivalue_line("markers", line)
    resolved = settings_mod.resolve(config)
    state = TrtcapState(config, resolved)
    config.stash[STATE] = state
    from . import fixtures
    from .session import SessionPlugin

    config.pluginmanager.register(SessionPlugin(state), "trtcap-session")
    if not config.pluginmanager.is_registered(fixtures):
        config.pluginmanager.register(fixtures, "trtcap-fixtures")
    _declare(state)
    state.exit.callback(guards.remove_import_hook)
    target = resolved.target_sm
    if "torch_tensorrt" in sys.modules:
        if target.value:  # imported by a conftest before the hook could name the targets: answer them from now on
            guards.gpuless.follow_targets(target.value[0])
        state.torch_tensorrt_imported()
    else:
        _arm_import_hook(config, resolved.gpu_less_import.value == "auto", target.value[0] if target.value else None)


def _declare(state: TrtcapState) -> None:
    """Declare what the settings name (targets, backend, neutralized guards, builder targets, the audit) for the
    session; undone at unconfigure. A value from the guards' own environment variable is theirs already."""
    resolved, exit = state.settings, state.exit
    target = resolved.target_sm
    if target.value is not None and target.source != guards.ENV_TARGETS:
        exit.callback(guards.declare_targets(target.value, origin=target.source, warn=False).undo)
    if resolved.backend.source not in ("default", guards.ENV_BACKEND):
        exit.callback(guards.declare_backend(resolved.backend.value, origin=resolved.backend.source).undo)
    if resolved.neutralize.value:
        from . import neutralize_targets

        neutralize_targets.enter(exit, resolved.neutralize.value, resolved.neutralize.source)
    if resolved.builder_targets.source != "default":
        exit.callback(guards.enable_builder_targets(resolved.builder_targets.value,
                                                    origin=resolved.builder_targets.source).undo)
    if resolved.audit.value:
        from . import audit_session

        state.audit = audit_session.start(state.config, resolved.strict.value)
        exit.callback(state.audit.deactivate)


def _arm_import_hook(config: pytest.Config, answer: bool, capability: Any) -> None:
    """When the suite first imports torch_tensorrt: answer its device queries (GPU-less host), then guard."""

    def after_import(module: Any) -> None:  # noqa: ARG001 - the import hook passes the imported module
        state = config.stash.get(STATE, None)
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
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.guards_installed_by_us:
        guards.uninstall()
    state.exit.close()


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """Marker arguments checked (and GPU-less collection errors converted) on each collector's report."""
    report = yield
    from .session import check_collect_report

    check_collect_report(report, collector, collector.config.stash.get(STATE, None))
    return report
