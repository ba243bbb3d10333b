"""The guard library's own process-wide state, as one value: take it, compare it, put it back.

Declarations (targets, backend), the builder-targets switch, neutralizations and fired counts live in one object,
``process_state.STATE``. A test that declares ``8.9`` and never undoes it changes what every later test's markers
decide. This is the one public way to hold that state (the pytest plugin's isolation and this project's tests both
use it): a snapshot copies the held fields of ``STATE``, a restore writes them back. And the public readers of two
of them, ``neutralized()`` and ``fired()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .builder import DEFAULT_SWITCH, BuilderSwitch, builder_targets_enabled
from .capabilities import format_targets, int_pair, shown
from .environment import BACKENDS
from .process_state import STATE, changing
from .targets import host_override, set_host_override
from .undo import LiveHandles, UndoHandle


@dataclass(frozen=True)
class GuardsState:
    """An immutable copy of the guards' process state; equal snapshots mean nothing changed."""

    targets: tuple[tuple[int, int], ...] | None
    targets_origin: str
    backend: str | None
    backend_origin: str
    builder_switch: Any  # builder.BuilderSwitch
    neutralized: tuple[tuple[str, int], ...]
    fired: tuple[tuple[tuple[str, str], int], ...] | None  # None: not taken, and not restored
    #: The host devices a test set in the probe's memo (``targets._host``, the documented seam); None: as probed.
    host: tuple[tuple[int, int], ...] | None = None
    #: The live undo handles of the targets, the backend and the builder switch (``undo``), put back with the rest
    #: so that an older handle undone later (a fixture's teardown) still puts back what it found. Not compared:
    #: equal values are equal states. None: left as they are.
    live: tuple[tuple[UndoHandle, ...], ...] | None = field(default=None, compare=False, repr=False)


def initial_state() -> GuardsState:
    """The state the guards start in: nothing declared or neutralized, the builder switch at its default."""
    return GuardsState(None, "", None, "", DEFAULT_SWITCH, (), None, None, ((), (), ()))


_plain: list[Any] = [None, None, {}]  # the last snapshot taken without fired counts, what it was taken from


def state_snapshot(*, fired: bool = True) -> GuardsState:
    """The guards' state now. ``fired=False`` leaves the fired counts out (they grow by design as guards work); such a
    snapshot is handed back again while nothing it was taken from was replaced: the pytest plugin takes one around
    every test and fixture, and a test that changed nothing must cost next to nothing."""
    s = STATE
    taken_from = None if fired else (
        s.targets, s.targets_origin, s.backend, s.backend_origin, s.builder_switch, s.host, s.probed,
        s.live_targets.handles, s.live_backend.handles, s.live_switches.handles)
    if taken_from is not None and _plain[1] == taken_from and dict.__eq__(_plain[2], s.neutralized):
        return _plain[0]
    snapshot = GuardsState(  # an origin means nothing without a value: a cleared declaration equals any other
        s.targets, s.targets_origin if s.targets is not None else "",
        s.backend, s.backend_origin if s.backend is not None else "", builder_targets_enabled(),
        tuple(sorted(s.neutralized.items())), tuple(sorted(s.fired.items())) if fired else None, host_override(),
        tuple(live.handles for live in _live_handles()),
    )
    if taken_from is not None:
        _plain[:] = snapshot, taken_from, dict(s.neutralized)
    return snapshot


def _live_handles() -> tuple[LiveHandles, ...]:
    return STATE.live_targets, STATE.live_backend, STATE.live_switches


def _problem(s: GuardsState) -> str | None:
    """What makes ``s`` no state the guards could be in (the field named first), or None."""
    if s.targets is not None and not (isinstance(s.targets, tuple) and all(int_pair(c, (99, 9)) for c in s.targets)):
        return "targets must be None or a tuple of (major, minor) pairs"
    if s.backend is not None and not (isinstance(s.backend, str) and s.backend in BACKENDS):
        return f"backend must be None or one of {', '.join(BACKENDS)}"
    if not isinstance(s.builder_switch, BuilderSwitch):
        return "builder_switch must be a BuilderSwitch"
    if not _counts(s.neutralized, str, 1):
        return "neutralized must be a tuple of (target name, count >= 1) pairs"
    if s.fired is not None and not _counts(s.fired, tuple, 0):
        return "fired must be None or a tuple of ((rule, target), count >= 0) pairs"
    if s.host is not None and not (isinstance(s.host, tuple) and all(int_pair(c, (99, 9)) for c in s.host)):
        return "host must be None or a tuple of (major, minor) pairs"
    if s.live is not None and not (isinstance(s.live, tuple) and len(s.live) == 3 and all(
            isinstance(live, tuple) and all(isinstance(h, UndoHandle) for h in live) for live in s.live)):
        return "live must be None or three tuples of undo handles"
    return None


def _counts(items: Any, key_type: type, least: int) -> bool:
    return isinstance(items, tuple) and all(
        isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], key_type)
        and type(i[1]) is int and i[1] >= least for i in items
    )


def restore_state(snapshot: GuardsState) -> None:
    """Put the state of ``snapshot`` back in place (fired counts only if the snapshot holds them).

    A snapshot the guards could never have taken is refused before anything changes: the validators read this
    state on every node and must never raise on it.
    """
    if not isinstance(snapshot, GuardsState):
        raise TypeError(f"restore_state: expected a GuardsState from state_snapshot(), got {type(snapshot).__name__}")
    problem = _problem(snapshot)
    if problem is not None:
        raise ValueError(f"restore_state: {problem}")
    changing()
    s = STATE
    s.targets, s.targets_origin = snapshot.targets, snapshot.targets_origin or s.targets_origin
    s.backend, s.backend_origin = snapshot.backend, snapshot.backend_origin or s.backend_origin
    s.version += 1  # capability_decision caches on it
    s.builder_switch = snapshot.builder_switch
    set_host_override(snapshot.host)
    s.neutralized.clear()
    s.neutralized.update(dict(snapshot.neutralized))
    if snapshot.fired is not None:
        s.fired.clear()
        s.fired.update(dict(snapshot.fired))
    if snapshot.live is not None:
        for live, handles in zip(_live_handles(), snapshot.live):
            live.handles = handles


def neutralized() -> tuple[str, ...]:
    """The targets whose guard is switched off now (``registry.neutralize``)."""
    return tuple(sorted(STATE.neutralized))


def fired() -> dict[tuple[str, str], int]:
    """(rule name, target) -> how many nodes that guard kept off TensorRT."""
    return dict(STATE.fired)


def _declared_text(value: Any, origin: str) -> str:
    if value is None:
        return "none"
    shown = value if isinstance(value, str) else format_targets(value)
    return f"{shown} (from {origin})"


def _host_text(host: tuple[tuple[int, int], ...] | None) -> str:
    if host is None:
        return "as probed"
    try:
        return format_targets(host) if host else "none"
    except (TypeError, ValueError):  # a test set the seam to something else: show what
        return shown(host, 60)


def describe_changes(before: GuardsState, after: GuardsState) -> list[str]:
    """What differs between two snapshots, one phrase per change, for leak reports."""
    out: list[str] = []
    if (before.targets, before.targets_origin) != (after.targets, after.targets_origin):
        out.append(f"guards: declared targets {_declared_text(after.targets, after.targets_origin)}, "
                   f"were {_declared_text(before.targets, before.targets_origin)}")
    if (before.backend, before.backend_origin) != (after.backend, after.backend_origin):
        out.append(f"guards: declared backend {_declared_text(after.backend, after.backend_origin)}, "
                   f"was {_declared_text(before.backend, before.backend_origin)}")
    if before.host != after.host:
        out.append(f"guards: host devices (targets._host) set to {_host_text(after.host)}, "
                   f"were {_host_text(before.host)}")
    if before.builder_switch != after.builder_switch:
        out.append(f"guards: builder targets switched {'on' if after.builder_switch.on else 'off'} "
                   f"(from {after.builder_switch.origin})")
    was, now = dict(before.neutralized), dict(after.neutralized)
    out += [f"guards: left neutralized {t}" for t in sorted(now.keys() - was.keys())]
    out += [f"guards: un-neutralized {t}" for t in sorted(was.keys() - now.keys())]
    if not out and was != now:
        out.append("guards: neutralize depth changed")
    if before.fired is not None and after.fired is not None and before.fired != after.fired:
        out.append("guards: fired counts changed")
    return out
