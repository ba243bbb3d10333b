"""What the plugin holds for one pytest session (one ``Config``), reached through ``config.stash``.

Kept apart from the hooks so that registration, the per-session hooks and the report all read one object,
and nested (pytester) sessions each keep their own.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import pytest

import trtcap_guards as guards

# ``isolation`` is imported by ``TrtcapState.get_isolation`` when the first test needs it, not at plugin load:
# loading the plugin is paid by every pytest run in the environment, collect-only and unrelated suites included.
if TYPE_CHECKING:
    from . import isolation
    from .settings import Settings

STATE = pytest.StashKey["TrtcapState"]()


class TrtcapState:
    """Everything the plugin holds for one session."""

    def __init__(self, config: pytest.Config, resolved: Settings) -> None:
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
