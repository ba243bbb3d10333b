"""What a build targets, and the one predicate every guard, fixture and marker asks.

The decision is a function of the *declared* targets (settings, a process-wide declaration, the
``TRTCAP_TARGET_SM`` variable); the host GPU is only a fallback. Nothing here imports torch at module
import: the host device is probed lazily, once, and only when nothing was declared.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .capabilities import (  # noqa: F401  (re-exported: trtcap_guards.targets.parse_targets and the rest)
    RTX_SUPPORTED,
    TURING,
    Capability,
    UnsupportedTargetWarning,
    coerce_targets,
    format_capability,
    format_targets,
    parse_backend,
    parse_targets,
    read_env_targets,
    unsupported_message,
)
from .environment import ENV_BACKEND, ENV_TARGETS
from .process_state import STATE, changing
from .undo import LiveHandles, UndoHandle

# --- process-wide declarations (``STATE.targets``, ``STATE.backend``) ------------------------------------------


class Declaration(UndoHandle):
    """Undo handle returned by :func:`declare_targets` / :func:`declare_backend`; also a context manager, and
    undone in any order (see ``undo``)."""

    def __init__(self, live: LiveHandles, before: tuple[Any, ...], fields: tuple[str, ...]) -> None:
        self._fields = fields
        super().__init__(live, before)

    def _put_back(self, before: tuple[Any, ...]) -> None:
        for field, value in zip(self._fields, before):
            setattr(STATE, field, value)
        STATE.version += 1


def declare_targets(
    targets: str | Iterable[Any] | None, *, origin: str = "declared", warn: bool = True
) -> Declaration:
    """Declare the capabilities this process builds for (outranks ``TRTCAP_TARGET_SM``).

    ``None`` clears the declaration. ``origin`` is what reports print as the value's source. A capability
    TensorRT-RTX does not build for is an ``UnsupportedTargetWarning`` (``warn=False``: the caller already said so).
    """
    changing()
    previous = (STATE.targets, STATE.targets_origin)
    caps = None if targets is None else coerce_targets(targets, origin, warn=warn)
    STATE.targets, STATE.targets_origin = caps, origin
    STATE.version += 1
    return Declaration(STATE.live_targets, previous, ("targets", "targets_origin"))


def clear_declared_targets() -> None:
    declare_targets(None)


def declare_backend(backend: str | None, *, origin: str = "declared") -> Declaration:
    """Declare the backend (``rtx``, ``standard`` or ``auto``), outranking ``TRTCAP_BACKEND``."""
    changing()
    previous = (STATE.backend, STATE.backend_origin)
    value = None if backend is None else parse_backend(backend, origin)
    STATE.backend, STATE.backend_origin = value, origin
    STATE.version += 1
    return Declaration(STATE.live_backend, previous, ("backend", "backend_origin"))


# --- backend and host detection (``STATE.installed_backend``, ``STATE.host``) ------------------------------------


def installed_backend() -> str:
    """``rtx``/``standard`` from the imported module or installed distributions, else ``absent``."""
    tt = sys.modules.get("torch_tensorrt")
    features = getattr(tt, "ENABLED_FEATURES", None)
    if features is not None:
        return "rtx" if getattr(features, "tensorrt_rtx", False) else "standard"
    if STATE.installed_backend is None:
        from .distributions import installed_versions

        installed = installed_versions()
        found = "absent"
        for dist, backend in (("torch-tensorrt-rtx", "rtx"), ("torch-tensorrt", "standard")):
            if dist in installed:
                found = backend
                break
        STATE.installed_backend = found
    return STATE.installed_backend


def torch_tensorrt_version() -> str | None:
    """Version of the installed Torch-TensorRT, without importing it."""
    version = getattr(sys.modules.get("torch_tensorrt"), "__version__", None)
    if version:
        return str(version)
    from .distributions import installed_versions

    return next(iter(installed_versions().values()), None)


def host_capabilities(probe: bool = True) -> tuple[Capability, ...] | None:
    """Capability of the host's CUDA device(s); probed once. ``None`` when not probed yet and ``probe`` is False."""
    if STATE.host is None:
        if not probe:
            return None
        STATE.host = STATE.probed = _probe_host()
    return STATE.host


def _probe_host() -> tuple[Capability, ...]:
    try:
        import torch

        if not torch.cuda.is_available():
            return ()
        caps: list[Capability] = []
        for index in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(index)
            cap = (int(major), int(minor))
            if cap not in caps:
                caps.append(cap)
        return tuple(caps)
    except Exception:  # no torch, or a broken CUDA runtime: no host device to fall back to
        return ()


def host_override() -> tuple[Capability, ...] | None:
    """The host devices a test set in the memo (``_host``), or None where the memo is the probe's or unset."""
    return None if STATE.host is None or STATE.host == STATE.probed else STATE.host


def set_host_override(host: tuple[Capability, ...] | None) -> None:
    """Put :func:`host_override` back: a value, or None for the probe's answer (probed again where never probed)."""
    STATE.host = STATE.probed if host is None else host


class _Module(ModuleType):
    """``targets._host``, the host seam a test sets (documented), reads and writes the probe's memo in ``STATE``."""

    @property
    def _host(self) -> tuple[Capability, ...] | None:
        return STATE.host

    @_host.setter
    def _host(self, value: tuple[Capability, ...] | None) -> None:
        changing()  # a change of the guards' state like any other: isolation holds it from before this one
        STATE.host = value


sys.modules[__name__].__class__ = _Module


# --- the decision ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapabilityDecision:
    """The predicate's answer with its provenance; skip reasons and report headers print it."""

    targets: tuple[Capability, ...]
    source: str  # "settings" | "declared" | "TRTCAP_TARGET_SM" | "host device" | "none"
    origin: str  # what a human reads as the source, e.g. "--trt-target-sm"
    backend: str  # "rtx" | "standard" | "absent"
    backend_origin: str
    targets_turing: bool
    reason: str

    @property
    def targets_text(self) -> str:
        return format_targets(self.targets)

    def targets_capability(self, cap: Capability) -> bool:
        """Whether a TensorRT-RTX build (or an undetermined backend) targets ``cap``."""
        return self.backend != "standard" and cap in self.targets

    def describe(self) -> str:
        """``targets 7.5 from --trt-target-sm``: the provenance in skip reasons."""
        if self.source == "none":
            return "no targets declared and no CUDA device"
        return f"targets {self.targets_text} from {self.origin}"


def _settings_targets(settings: Any) -> tuple[Capability, ...] | None:
    """The settings' targets; None where they carry none or cannot be read (then the declaration decides).
    Read on every cache miss of a validator's question: never warns, never raises."""
    if settings is None:
        return None
    try:
        caps = getattr(settings, "target_compute_capabilities", None)
        return coerce_targets(caps, "settings.target_compute_capabilities", warn=False) if caps else None
    except Exception:
        return None


def _upstream_answer(upstream: Any, settings: Any, own: bool) -> bool:
    """Upstream's predicate for these settings; ours where it raises on them (a validator must answer)."""
    try:
        return bool(upstream(settings))
    except Exception:
        return own


def _resolve_backend() -> tuple[str, str]:
    if STATE.backend is not None:
        value, origin = STATE.backend, STATE.backend_origin
    else:
        raw = os.environ.get(ENV_BACKEND)
        value, origin = (parse_backend(raw), ENV_BACKEND) if raw else ("auto", "auto")
    if value == "auto":
        return installed_backend(), ("detected" if origin == "auto" else f"detected ({origin}=auto)")
    return value, origin


def _upstream_predicate() -> Any:
    utils = sys.modules.get("torch_tensorrt._utils")
    return getattr(utils, "trt_rtx_targets_turing", None)


_cache: dict = {}


def capability_decision(settings: Any = None, *, probe_host: bool = True) -> CapabilityDecision:
    """Resolve targets (settings > declared > ``TRTCAP_TARGET_SM`` > host device > none) and decide.

    Cached on everything it reads, so validators can ask for every node cheaply.
    """
    settings_caps = _settings_targets(settings)
    upstream = _upstream_predicate() if settings_caps is not None else None
    env_targets = os.environ.get(ENV_TARGETS)
    key = (settings_caps, STATE.version, env_targets, os.environ.get(ENV_BACKEND), STATE.host, probe_host)
    hit = _cache.get(key) if upstream is None else None
    if hit is not None and (hit.backend != "absent" or "torch_tensorrt" not in sys.modules):
        return hit
    if settings_caps is not None:
        targets, source, origin = settings_caps, "settings", "settings.target_compute_capabilities"
    elif STATE.targets is not None:
        targets, source, origin = STATE.targets, "declared", STATE.targets_origin
    elif env_targets is not None:
        targets, source, origin = read_env_targets(env_targets), ENV_TARGETS, ENV_TARGETS
    else:
        host = host_capabilities(probe=probe_host)
        if host:
            targets, source, origin = host, "host device", "host device"
        elif host is None:
            targets, source, origin = (), "none", "host device (not probed yet)"
        else:
            targets, source, origin = (), "none", "none"
    backend, backend_origin = _resolve_backend()
    turing = backend != "standard" and TURING in targets
    if upstream is not None and backend == "rtx":
        turing = _upstream_answer(upstream, settings, turing)
    where = f"targets {format_targets(targets)} from {origin}" if targets else f"no targets ({origin})"
    if turing:
        reason = f"TensorRT-RTX targets SM 7.5 ({where})"
    elif backend == "standard":
        reason = (f"backend is standard TensorRT ({backend_origin}); Turing limits of TensorRT-RTX do not apply "
                  f"({where})")
    else:
        reason = f"SM 7.5 is not among the targets ({where})"
    decision = CapabilityDecision(targets, source, origin, backend, backend_origin, turing, reason)
    if upstream is None:  # upstream's answer may depend on more than the targets: never cache it
        if len(_cache) > 256:
            _cache.clear()
        _cache[key] = decision
    return decision


def get_target_compute_capabilities(settings: Any = None) -> tuple[Capability, ...]:
    """What is being built for: settings, then the declaration/``TRTCAP_TARGET_SM``, then the host GPU."""
    return capability_decision(settings).targets


def trt_rtx_targets_turing(settings: Any = None) -> bool:
    """True when the backend is TensorRT-RTX and SM 7.5 is among the targets."""
    return capability_decision(settings).targets_turing


def turing_safe_gemm_dtype(settings: Any = None) -> Any:
    """``torch.float16`` where FP32 GEMMs cannot be served, else ``torch.float32``."""
    import torch

    return torch.float16 if trt_rtx_targets_turing(settings) else torch.float32
