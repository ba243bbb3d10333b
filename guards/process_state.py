"""The guard library's process-wide state: one object, ``STATE``, owned here; and the notice before it first changes.

Declarations (targets, backend), the builder-targets switch, neutralizations and fired counts, with the live undo
handles of each kind of change; the host probe's memo, the installed backend and the ``TRTCAP_TARGET_SM`` values
read so far; the record of the GPU-less import. Every module of the guards reads and changes them as attributes of
``STATE``, and nowhere else: ``state`` copies the part a test can leak into a ``GuardsState`` and puts it back.

The pytest plugin stays dormant in sessions that never use the guards or Torch-TensorRT (it loads in every pytest
run of an environment); it listens here (``on_first_change``) so that it can start holding the guards' state before
the first change is made, wherever that happens. Listeners are called once and dropped. Hence a plain class, not a
dataclass: this module loads in every pytest run.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .environment import Capability
    from .undo import LiveHandles

#: The attributes of ``ProcessState`` made at first use.
_LIVE = ("live_targets", "live_backend", "live_switches")


class ProcessState:
    """Everything the guards remember in a process. Held by the plugin's isolation (``state.state_snapshot``):
    the declarations, the switch, the neutralizations, the host seam and the live handles; the rest are memos
    and records that only grow or are set once. Made with this module, which loads in every pytest run: what
    needs more code (the live handles, the GPU-less record) is made where it is first used."""

    live_targets: LiveHandles  # the live undo handles of each kind of change (``undo``), made at its first change
    live_backend: LiveHandles
    live_switches: LiveHandles

    __slots__ = ("targets", "targets_origin", "backend", "backend_origin", "version", "builder_switch",
                 "neutralized", "fired", "live_targets", "live_backend", "live_switches", "host", "probed",
                 "installed_backend", "env_targets", "gpu_less", "changed", "listeners")

    def __init__(self) -> None:
        # declare_targets / declare_backend; ``version`` counts their changes (capability_decision caches on it)
        self.targets: tuple[Capability, ...] | None = None
        self.targets_origin = "declared"
        self.backend: str | None = None
        self.backend_origin = "declared"
        self.version = 0
        self.builder_switch: Any = None  # enable_builder_targets: a builder.BuilderSwitch; None: its default
        self.neutralized: Counter = Counter()  # target -> depth of neutralize() blocks (they nest)
        self.fired: Counter = Counter()  # (rule, target) -> nodes rejected since the process started
        # the host probe's memo (a test may set it: ``targets._host``, the host seam) and what the probe found
        self.host: tuple[Capability, ...] | None = None
        self.probed: tuple[Capability, ...] | None = None
        self.installed_backend: str | None = None  # read from the installed distributions, once
        #: ``TRTCAP_TARGET_SM`` values read so far, and what each reads as: the predicate re-reads the variable on
        #: every cache miss, and reads (and reports an unsupported target in) each value once.
        self.env_targets: dict[str, tuple[Capability, ...]] = {}
        self.gpu_less: Any = None  # the GPU-less import's record: a gpuless.GpuLessStatus, made when first asked for
        self.changed = False  # anything changed since this process imported the guards (``changed()``)
        self.listeners: list[Callable[[], Any]] = []

    if not TYPE_CHECKING:  # to mypy, every other attribute stays unknown

        def __getattr__(self, name: str) -> Any:
            """A kind of change's live undo handles, made at its first change (called for an attribute not set)."""
            if name not in _LIVE:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            from .undo import LiveHandles

            live = LiveHandles()
            setattr(self, name, live)
            return live


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
