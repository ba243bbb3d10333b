"""The guard library's process-wide state: one object, ``STATE``, owned here; and the notice before it first changes.

Declarations (targets, backend), the builder-targets switch, neutralizations and fired counts, with the live undo
handles of each kind of change; the host probe's memo, the installed backend and the ``TRTCAP_TARGET_SM`` values
read so far; the record of the GPU-less import. Every module of the guards reads and changes them as attributes of
``STATE``, and nowhere else: ``state`` copies the part a test can leak into a ``GuardsState`` and puts it back.

The pytest plugin stays dormant in sessions that never use the guards or Torch-TensorRT (it loads in every pytest
run of an environment); it listens here (``on_first_change``) so that it can start holding the guards' state before
the first change is made, wherever that happens. Listeners are called once and dropped. Hence plain classes, not
dataclasses: this module loads in every pytest run.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .environment import Capability
from .environment import format_capability as _format
from .undo import LiveHandles


class GpuLessStatus:
    """Whether the import-time device queries were answered, with what, and why (not); one per process
    (``gpuless`` answers them; the plugin's header reads this in every pytest run that shows one)."""

    __slots__ = ("applied", "capability", "detail", "at_import")

    def __init__(self) -> None:
        self.applied = False
        self.capability: Optional[Capability] = None
        self.detail = "not attempted"
        self.at_import: Optional[Capability] = None  # what the import itself was answered, where targets came later

    def __repr__(self) -> str:
        return (f"GpuLessStatus(applied={self.applied!r}, capability={self.capability!r}, detail={self.detail!r}, "
                f"at_import={self.at_import!r})")

    def describe(self) -> str:
        if self.applied and self.capability is not None:
            earlier = ""
            if self.at_import not in (None, self.capability):
                earlier = f"; {_format(self.at_import)} during the import, before the targets were known"
            return f"applied (device queries answered with {_format(self.capability)}{earlier})"
        return self.detail


class ProcessState:
    """Everything the guards remember in a process. Held by the plugin's isolation (``state.state_snapshot``):
    the declarations, the switch, the neutralizations, the host seam and the live handles; the rest are memos
    and records that only grow or are set once."""

    __slots__ = ("targets", "targets_origin", "backend", "backend_origin", "version", "builder_switch",
                 "neutralized", "fired", "live_targets", "live_backend", "live_switches", "host", "probed",
                 "installed_backend", "env_seen", "gpu_less", "changed", "listeners")

    def __init__(self) -> None:
        # declare_targets / declare_backend; ``version`` counts their changes (capability_decision caches on it)
        self.targets: Optional[Tuple[Capability, ...]] = None
        self.targets_origin = "declared"
        self.backend: Optional[str] = None
        self.backend_origin = "declared"
        self.version = 0
        self.builder_switch: Any = None  # enable_builder_targets: a builder.BuilderSwitch; None: its default
        self.neutralized: Counter = Counter()  # target -> depth of neutralize() blocks (they nest)
        self.fired: Counter = Counter()  # (rule, target) -> nodes rejected since the process started
        # the live undo handles of each kind of change (``undo``)
        self.live_targets = LiveHandles()
        self.live_backend = LiveHandles()
        self.live_switches = LiveHandles()
        # the host probe's memo (a test may set it: ``targets._host``, the host seam) and what the probe found
        self.host: Optional[Tuple[Capability, ...]] = None
        self.probed: Optional[Tuple[Capability, ...]] = None
        self.installed_backend: Optional[str] = None  # read from the installed distributions, once
        #: ``TRTCAP_TARGET_SM`` values parsed so far: the predicate, which re-reads the variable on every cache miss,
        #: reports an unsupported target in a value nobody has read before, and only once.
        self.env_seen: Set[str] = set()
        self.gpu_less = GpuLessStatus()
        self.changed = False  # anything changed since this process imported the guards (``changed()``)
        self.listeners: List[Callable[[], Any]] = []


STATE = ProcessState()


def on_first_change(callback: Callable[[], Any]) -> Callable[[], None]:
    """Call ``callback()`` before the next change of the guards' state; returns a function that cancels it."""
    STATE.listeners.append(callback)

    def cancel() -> None:
        if callback in STATE.listeners:
            STATE.listeners.remove(callback)

    return cancel


def changed() -> bool:
    """Whether anything has changed the guards' state since this process imported them (it may since have been
    put back): until then, asking what the state is needs none of the modules that change it."""
    return STATE.changed


def changing() -> None:
    """Called by every function that changes the guards' state, before it does."""
    STATE.changed = True
    if STATE.listeners:
        pending = list(STATE.listeners)
        STATE.listeners.clear()
        for callback in pending:
            callback()


def neutralized() -> Tuple[str, ...]:
    """The targets whose guard is switched off now (``registry.neutralize``)."""
    return tuple(sorted(STATE.neutralized))


def fired() -> Dict[Tuple[str, str], int]:
    """(rule name, target) -> how many nodes that guard kept off TensorRT."""
    return dict(STATE.fired)
