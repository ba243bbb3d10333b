"""What the plugin holds for one pytest session (one ``Config``), once something needs it: the settings with their
sources, the isolation, the per-session hooks and what they found.

Kept apart from the hooks so that registration, the per-session hooks and the report all read one object,
and nested (pytester) sessions each keep their own. A dormant session (``plugin``) never loads this module in a
quiet run; the report header, resolved settings or the session's first use make the state.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, NamedTuple

import pytest

import trtcap_guards as guards

from .options import SPECS


class Setting(NamedTuple):
    """One resolved value and where it came from (``--trt-target-sm``, ``TRTCAP_TARGET_SM``,
    ``ini trt_target_sm``...)."""

    value: Any
    source: str

    def __str__(self) -> str:
        return f"{self.value} (from {self.source})"


class Settings:
    """Every setting of the session, each with its source (the defaults until ``settings`` resolves them)."""

    __slots__ = tuple(spec.dest for spec in SPECS)
    target_sm: Setting
    backend: Setting
    guards: Setting
    neutralize: Setting
    strict: Setting
    gpu_less_import: Setting
    builder_targets: Setting
    audit: Setting
    audit_layers: Setting
    needs_gpu: Setting

    def __init__(self) -> None:
        for spec in SPECS:
            setattr(self, spec.dest, Setting(spec.default, "default"))

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"


class TrtcapState:
    """Everything the plugin holds for one session."""

    def __init__(self, config: pytest.Config, resolved: Settings | None = None,
                 target_hook_plugins: tuple = ()) -> None:
        self.config = config
        self.settings = resolved if resolved is not None else Settings()
        self.exit = ExitStack()
        self.session: Any = None  # the per-session hooks (session.SessionPlugin), once session.activate() ran
        self.guards_installed_by_us = False
        self.installed_targets: tuple = ()
        self.worker_status: list[dict[str, Any]] = []
        self.user_state: list | None = None  # the project's pytest_trtcap_isolated_state entries, checked
        self.audit: Any = None  # audit.AuditSession under --trtcap-audit
        self.target_hook_plugins = target_hook_plugins  # what implemented the targets hook when settings resolved

    # --- state used once active ---------------------------------------------------------------------------

    def user_state_entries(self) -> list:
        """The project's isolated-state entries; a usage error naming the hook, file and value if ill-shaped."""
        if self.user_state is None:
            entries: list = []
            if self.config.hook.pytest_trtcap_isolated_state.get_hookimpls():  # a project implements it
                from .hook_results import isolated_state_entries

                entries = isolated_state_entries(self.config)
            self.user_state = entries
        return self.user_state

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

    def close(self) -> None:
        """At unconfigure: uninstall the guards if this session installed them, and undo what it declared."""
        if self.guards_installed_by_us:
            guards.uninstall()
        self.exit.close()
