"""What the plugin reports: the header (one line by default, more with ``-v``), the ``trtcap`` summary section, and
the entries a test report carries to that summary.

Imported when pytest asks for the header, or once a session uses the plugin (its hooks attach the entries), never
with the plugin: a dormant ``-q`` run shows no header and has no summary to show.

The entries (a leak, a capability skip, the audit's findings) travel from the process that ran the test (an xdist
worker included) in a report attribute of their own, ``trtcap_properties``, copied onto each report as pytest copies
``user_properties``, and serialized with the report across xdist. Not in ``user_properties``: that list is the
project's, and junitxml (and other reporters) write every entry of it into the project's reports. A report of a
test this process ran is read only for the pairs the plugin appended; one that crossed as a copy (an xdist
worker's, a forked child's) for every well-formed pair under the key.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import pytest

import trtcap_guards as guards
from trtcap_guards.tooling import loaded_converter_registry

if TYPE_CHECKING:
    from .session_state import Setting, TrtcapState

# --- the entries a test report carries ------------------------------------------------------------------------

ATTRIBUTE = "trtcap_properties"
_PAIRS = pytest.StashKey[list[tuple[str, Any]]]()  # on the item: every pair appended for it so far


class OwnProperties:
    """The pairs one plugin appended, kept alive so that an identity check cannot match a recycled ``id``."""

    def __init__(self) -> None:
        self._own: dict[int, tuple[str, Any]] = {}
        self._ran_here: set[str] = set()  # node ids of the tests this process ran

    def ran_here(self, nodeid: str) -> None:
        self._ran_here.add(nodeid)

    def append(self, item: Any, key: str, value: Any) -> None:
        pair = (key, value)
        item.stash.setdefault(_PAIRS, []).append(pair)
        self._own[id(pair)] = pair
        self._ran_here.add(item.nodeid)

    def read(self, report: Any, *keys: str) -> Iterator[tuple[str, Any]]:
        """``(key, value)`` of each of ``report``'s entries under ``keys`` that the plugin appended."""
        here = report.nodeid in self._ran_here
        for entry in getattr(report, ATTRIBUTE, None) or ():
            if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and entry[0] in keys):
                continue
            if not here or self._own.get(id(entry)) is entry:
                yield entry[0], entry[1]


def attach(item: Any, report: Any) -> None:
    """Give ``report`` the pairs appended for ``item`` so far (called as each of its reports is made)."""
    pairs = item.stash.get(_PAIRS, None)
    if pairs:
        setattr(report, ATTRIBUTE, list(pairs))


# --- the header and the summary -------------------------------------------------------------------------------


class Findings(Protocol):
    """What the summary reads of a session's per-session hooks (``session.SessionPlugin``, which calls this
    module: the summary's text lives here, the findings there)."""

    skips: dict[str, str]
    needs_gpu: dict[str, str]
    leaks: dict[str, tuple[str, str]]
    state: TrtcapState

    def fired_counts(self) -> Counter: ...


def upstream_ships_guards() -> bool | None:
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


def _sourced(setting: Setting) -> str:
    return "default" if setting.source == "default" else f"from {setting.source}"


def _given(setting: Setting) -> str:
    """`` (auto, from --trtcap-gpu-less-import)`` where a value was given; nothing for a default."""
    return "" if setting.source == "default" else f" ({setting.value}, {_sourced(setting)})"


def _guards_text(state: TrtcapState) -> str:
    s = state.settings.guards
    installed = loaded_converter_registry() is not None and guards.is_installed()  # guards sit only in a registry
    if not s.value:
        return f"off ({_sourced(s)})" + ("; installed by the project" if installed else "")
    if installed:
        return f"installed ({len(state.installed_targets) or 'all'} targets; on, {_sourced(s)})"
    return f"on ({_sourced(s)}; installed when torch_tensorrt is imported)"


def review_line() -> str | None:
    """The registry review's line once the suite has imported the converter registry (never imports it)."""
    if loaded_converter_registry() is None:  # the guards' registry and review modules stay unloaded
        return None
    from trtcap_guards.tooling import describe_unreviewed

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
    if decision.targets_turing:
        decided = "yes"
    else:
        decided = "no" if decision.targets or s.target_sm.value is not None else "pending host device"
    return (
        f"trtcap: {targets}; backend: {decision.backend} ({_from(decision.backend_origin)}); "
        f"targets Turing on TensorRT-RTX: {decided}; guards: {_guards_text(state)}"
    )


def header_lines(state: TrtcapState, verbose: bool = False) -> list[str]:
    """One line by default; with ``-v`` also the Torch-TensorRT version, neutralizations, GPU-less import and
    isolation mode, each with its source. (pytest shows no header at all under ``-q``.)"""
    lines = [header_line(state)]
    review = review_line()
    if review:
        lines.append(f"trtcap: {review}")
    if state.settings.audit.value:
        lines.append(f"trtcap: placement audit: on ({_sourced(state.settings.audit)})")
    if state.settings.audit_layers.value:
        lines.append(f"trtcap: layer audit: on ({_sourced(state.settings.audit_layers)})")
    if verbose:
        lines.extend(_verbose_lines(state))
    return [line if line.isprintable() else _one_line(line) for line in lines]


def _one_line(line: str) -> str:
    """An origin is the project's text (``declare_targets(origin=...)``): a line holding a break or an escape is made
    safe; ``escaping`` loads only then (every plain run shows the header)."""
    from .escaping import one_line

    return one_line(line)


def _version_line() -> str:
    version = guards.torch_tensorrt_version()
    if version is None:
        return "trtcap: torch-tensorrt: not installed (isolation inert; markers decide from declared targets)"
    ships = upstream_ships_guards()
    own = {True: "ships its own Turing guards", False: "no upstream Turing guards",
           None: "upstream guards unknown"}[ships]
    return f"trtcap: torch-tensorrt {version} ({own})"


def _gpu_less_text(setting: Setting) -> str:
    gpu = guards.gpu_less_import_status()
    if setting.value == "off":
        return f"off ({_sourced(setting)})"
    if gpu.applied:
        return gpu.describe() + _given(setting)
    if "torch_tensorrt" in sys.modules:
        return gpu.detail + _given(setting)
    return (f"auto ({_sourced(setting)}; answers device queries only if torch_tensorrt is "
            "imported without a CUDA device)")


def _verbose_lines(state: TrtcapState) -> list[str]:
    """The ``-v`` lines, each setting with its source."""
    from trtcap_guards.tooling import builder_targets_status

    s = state.settings
    lines = [_version_line()]
    neutral = ", ".join(guards.neutralized())
    lines.append(f"trtcap: neutralized: {neutral} ({_sourced(s.neutralize)})" if neutral
                 else "trtcap: neutralized: none")
    builder = builder_targets_status() if s.guards.value else f"off (guards off, {_sourced(s.guards)})"
    lines.append(f"trtcap: builder targets: {builder}")
    strict = "strict" if s.strict.value else "warn"
    lines.append(f"trtcap: gpu-less import: {_gpu_less_text(s.gpu_less_import)}; isolation: {strict} "
                 f"({_sourced(s.strict)})")
    from . import needs_gpu

    lines.append(f"trtcap: needs a GPU: {needs_gpu.header_text(s.needs_gpu.value, _sourced(s.needs_gpu))}")
    return lines


def _guard_lines(session: Findings) -> list[str]:
    """The review, the neutralized guards and what the guards kept off TensorRT."""
    lines: list[str] = []
    review = review_line()
    if review:
        lines.append(review)
    neutral = guards.neutralized()
    if neutral:
        lines.append(f"neutralized guards: {', '.join(neutral)}")
    fired = session.fired_counts()
    if fired:
        lines.append("guards fired: " + ", ".join(f"{r} on {t} x{n}" for (r, t), n in sorted(fired.items())))
    return lines


def _restored(leaks: dict[str, tuple[str, str]]) -> str:
    """"restored" only where it is true: a leak whose restore failed says so on its line (``NOT_RESTORED``)."""
    from .isolation.ledger import NOT_RESTORED

    failed = sum(NOT_RESTORED in what for _, what in leaks.values())
    if not failed:
        return "restored"
    return "not restored" if failed == len(leaks) else f"restored except {failed}"


def _leak_counts(leaks: dict[str, tuple[str, str]]) -> str:
    """``2 tests and 1 fixture``: tests and fixtures counted apart (and finalizers no fixture could be named for)."""
    kinds = Counter(kind for kind, _ in leaks.values())
    words = (("test", "test", "tests"), ("fixture", "fixture", "fixtures"), ("other", "finalizer", "finalizers"))
    parts = [f"{kinds[k]} {one if kinds[k] == 1 else many}" for k, one, many in words if kinds[k]]
    return " and ".join(parts) if len(parts) < 3 else f"{parts[0]}, {parts[1]} and {parts[2]}"


def summary_lines(session: Findings) -> list[str]:
    """The ``trtcap`` summary section's lines (none: no section)."""
    lines: list[str] = []
    if session.skips:
        by_marker = Counter(session.skips.values())
        detail = ", ".join(f"{m}: {n}" for m, n in sorted(by_marker.items()))
        lines.append(f"capability skips: {len(session.skips)} ({detail})")
    if session.needs_gpu:
        from . import needs_gpu

        lines.append(needs_gpu.summary_line(session.needs_gpu.values()))
    if session.leaks:
        lines.append(f"leaks: {_leak_counts(session.leaks)} left global state changed ({_restored(session.leaks)})")
        lines.extend(f"  {subject} -> {what}" for subject, (_, what) in session.leaks.items())
    lines.extend(_guard_lines(session))
    state = session.state
    if state.audit is not None:
        lines.extend(state.audit.summary_lines())
    gpu = guards.gpu_less_import_status()
    applied = [gpu.describe()] if gpu.applied else sorted(
        {w["gpu_less"] for w in state.worker_status if w.get("gpu_less")})
    if applied:
        lines.append(f"gpu-less import: {', '.join(applied)}")
    return lines
