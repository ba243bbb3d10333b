"""What a build targets, and the one predicate every guard, fixture and marker asks.

The decision is a function of the *declared* targets (settings, a process-wide declaration, the
``TRTCAP_TARGET_SM`` variable); the host GPU is only a fallback. Nothing here imports torch at module
import: the host device is probed lazily, once, and only when nothing was declared.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

from .environment import BACKENDS, ENV_BACKEND, ENV_TARGETS

Capability = Tuple[int, int]


TURING: Capability = (7, 5)
#: Compute capabilities TensorRT-RTX builds engines for (``tensorrt_rtx.ComputeCapability``).
RTX_SUPPORTED: Tuple[Capability, ...] = ((7, 5), (8, 0), (8, 6), (8, 9), (12, 0), (12, 1))

_DOTTED = re.compile(r"^(\d{1,2})\.(\d)$")
_COMPACT = re.compile(r"^(?:sm_?)?(\d{1,2})(\d)$", re.IGNORECASE)


class UnsupportedTargetWarning(UserWarning):
    """A declared capability that TensorRT-RTX does not build engines for."""


def format_capability(cap: Capability) -> str:
    return f"{cap[0]}.{cap[1]}"


def format_targets(targets: Sequence[Capability]) -> str:
    return ",".join(format_capability(c) for c in targets) or "none"


def _parse_one(item: str, name: str, text: str) -> Capability:
    m = _DOTTED.match(item)
    if m is None and not item.count("."):
        m = _COMPACT.match(item)
    if m is None:
        raise ValueError(
            f"{name}: invalid compute capability {item!r} in {text!r}; "
            "expected forms like 7.5, 75, sm_75 or SM75, comma-separated"
        )
    return (int(m.group(1)), int(m.group(2)))


def _parse_text(text: str, name: str) -> Tuple[Capability, ...]:
    items = [part.strip() for part in text.split(",")]
    if any(not item for item in items):
        raise ValueError(f"{name}: empty compute capability in {text!r}")
    return tuple(dict.fromkeys(_parse_one(item, name, text) for item in items))


def _pair(value: Any, name: str) -> Capability:
    """``(7, 5)`` -> (7, 5); the same range the text forms allow (major 0-99, minor 0-9), else a ValueError."""
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] <= 99
        and 0 <= value[1] <= 9
    ):
        return (int(value[0]), int(value[1]))
    raise ValueError(
        f"{name}: invalid compute capability {value!r}; expected a (major, minor) pair such as (7, 5) "
        "(major 0-99, minor 0-9) or a string such as '7.5'"
    )


def unsupported_message(caps: Sequence[Capability], name: str) -> Optional[str]:
    """The ``UnsupportedTargetWarning`` text for the capabilities TensorRT-RTX does not build for, or None."""
    unsupported = [c for c in caps if c not in RTX_SUPPORTED]
    if not unsupported:
        return None
    return (
        f"{name}: TensorRT-RTX does not build for {format_targets(unsupported)}; "
        f"it supports {format_targets(RTX_SUPPORTED)}; {format_targets(unsupported)} is never passed to the "
        "TensorRT-RTX builder (no ComputeCapability for it)"
    )


def _warn_unsupported(caps: Sequence[Capability], name: str, stacklevel: int) -> None:
    """Warn every time the warnings filters say so (no once-per-process memory of our own)."""
    message = unsupported_message(caps, name)
    if message is not None:
        warnings.warn(message, UnsupportedTargetWarning, stacklevel=stacklevel + 1)


#: ``TRTCAP_TARGET_SM`` values already parsed under that name: the predicate, which re-reads the variable on
#: every cache miss, reports an unsupported target in a value nobody has read before, and only once.
_env_seen: set = set()


def parse_targets(text: str, name: str = ENV_TARGETS, *, warn: bool = True) -> Tuple[Capability, ...]:
    """Parse ``7.5``, ``75``, ``sm_75``, ``SM75`` or a comma list; errors name ``name`` and the value.

    Spaces around an item are ignored; inside one (``7 .5``, ``sm 75``) they are an error. A capability
    TensorRT-RTX does not build for is an ``UnsupportedTargetWarning`` (unless ``warn`` is False).
    """
    if not isinstance(text, str):
        raise ValueError(f"{name}: expected a string of compute capabilities, got {text!r}")
    caps = _parse_text(text, name)
    if name == ENV_TARGETS:
        _env_seen.add(text)
    if warn:
        _warn_unsupported(caps, name, stacklevel=2)
    return caps


def coerce_targets(targets: Any, name: str, *, warn: bool = True) -> Tuple[Capability, ...]:
    """A string (``parse_targets``) or an iterable of strings and ``(major, minor)`` pairs; ValueError naming
    ``name`` and the value otherwise. Warns about unsupported capabilities like ``parse_targets``."""
    if isinstance(targets, str):
        caps = _parse_text(targets, name)
    else:
        if isinstance(targets, (bytes, bytearray, dict)) or not isinstance(targets, Iterable):
            raise ValueError(
                f"{name}: expected a string like '7.5,8.9' or (major, minor) pairs such as [(7, 5)], got {targets!r}"
            )
        found: list = []
        for t in targets:
            found.extend(_parse_text(t, name) if isinstance(t, str) else [_pair(t, name)])
        caps = tuple(dict.fromkeys(found))
    if warn:
        _warn_unsupported(caps, name, stacklevel=3)
    return caps


def parse_backend(text: str, name: str = ENV_BACKEND) -> str:
    value = text.strip().lower() if isinstance(text, str) else text
    if value not in BACKENDS:
        raise ValueError(f"{name}: invalid backend {text!r}; choose one of {', '.join(BACKENDS)}")
    return value


# --- process-wide declarations ---------------------------------------------------------------


class _Declared:
    """The process-wide declarations (a plain class: this module loads whenever the plugin registers its markers)."""

    __slots__ = ("targets", "targets_origin", "backend", "backend_origin", "version")

    def __init__(self) -> None:
        self.targets: Optional[Tuple[Capability, ...]] = None
        self.targets_origin = "declared"
        self.backend: Optional[str] = None
        self.backend_origin = "declared"
        self.version = 0


_declared = _Declared()


class Declaration:
    """Undo handle returned by :func:`declare_targets` / :func:`declare_backend`; also a context manager."""

    def __init__(self, previous: Tuple[Any, ...], fields: Tuple[str, ...]) -> None:
        self._previous = previous
        self._fields = fields
        self._undone = False

    def undo(self) -> None:
        if self._undone:
            return
        self._undone = True
        for field, value in zip(self._fields, self._previous):
            setattr(_declared, field, value)
        _declared.version += 1

    def __enter__(self) -> "Declaration":
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()


def declare_targets(
    targets: Union[str, Iterable[Any], None], *, origin: str = "declared", warn: bool = True
) -> Declaration:
    """Declare the capabilities this process builds for (outranks ``TRTCAP_TARGET_SM``).

    ``None`` clears the declaration. ``origin`` is what reports print as the value's source. A capability
    TensorRT-RTX does not build for is an ``UnsupportedTargetWarning`` (``warn=False``: the caller already said so).
    """
    previous = (_declared.targets, _declared.targets_origin)
    caps = None if targets is None else coerce_targets(targets, origin, warn=warn)
    _declared.targets, _declared.targets_origin = caps, origin
    _declared.version += 1
    return Declaration(previous, ("targets", "targets_origin"))


def clear_declared_targets() -> None:
    declare_targets(None)


def declare_backend(backend: Optional[str], *, origin: str = "declared") -> Declaration:
    """Declare the backend (``rtx``, ``standard`` or ``auto``), outranking ``TRTCAP_BACKEND``."""
    previous = (_declared.backend, _declared.backend_origin)
    value = None if backend is None else parse_backend(backend, origin)
    _declared.backend, _declared.backend_origin = value, origin
    _declared.version += 1
    return Declaration(previous, ("backend", "backend_origin"))


# --- backend and host detection -----------------------------------------------------------------

_installed_backend: Optional[str] = None
_host: Optional[Tuple[Capability, ...]] = None


def installed_backend() -> str:
    """``rtx``/``standard`` from the imported module or installed distributions, else ``absent``."""
    global _installed_backend
    tt = sys.modules.get("torch_tensorrt")
    features = getattr(tt, "ENABLED_FEATURES", None)
    if features is not None:
        return "rtx" if getattr(features, "tensorrt_rtx", False) else "standard"
    if _installed_backend is None:
        from .distributions import installed_versions

        installed = installed_versions()
        found = "absent"
        for dist, backend in (("torch-tensorrt-rtx", "rtx"), ("torch-tensorrt", "standard")):
            if dist in installed:
                found = backend
                break
        _installed_backend = found
    return _installed_backend


def torch_tensorrt_version() -> Optional[str]:
    """Version of the installed Torch-TensorRT, without importing it."""
    tt = sys.modules.get("torch_tensorrt")
    if getattr(tt, "__version__", None):
        return str(tt.__version__)
    from .distributions import installed_versions

    return next(iter(installed_versions().values()), None)


def host_capabilities(probe: bool = True) -> Optional[Tuple[Capability, ...]]:
    """Capability of the host's CUDA device(s); probed once. ``None`` when not probed yet and ``probe`` is False."""
    global _host
    if _host is None:
        if not probe:
            return None
        try:
            import torch

            if torch.cuda.is_available():
                caps = []
                for index in range(torch.cuda.device_count()):
                    cap = tuple(torch.cuda.get_device_capability(index))
                    if cap not in caps:
                        caps.append(cap)
                _host = tuple(caps)
            else:
                _host = ()
        except Exception:  # no torch, or a broken CUDA runtime: no host device to fall back to
            _host = ()
    return _host


# --- the decision ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapabilityDecision:
    """The predicate's answer with its provenance; skip reasons and report headers print it."""

    targets: Tuple[Capability, ...]
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


def _settings_targets(settings: Any) -> Optional[Tuple[Capability, ...]]:
    caps = getattr(settings, "target_compute_capabilities", None) if settings is not None else None
    if not caps:
        return None
    try:  # read on every cache miss of a validator's question: never warns, never raises
        return coerce_targets(caps, "settings.target_compute_capabilities", warn=False)
    except (TypeError, ValueError):
        return None


def _env_targets(text: str) -> Tuple[Capability, ...]:
    """``TRTCAP_TARGET_SM`` as the predicate reads it: warns about a value nobody parsed before, and a warnings
    filter that makes the warning an error cannot make the predicate (and so a validator) raise."""
    try:
        return parse_targets(text, ENV_TARGETS, warn=text not in _env_seen)
    except UnsupportedTargetWarning:
        return parse_targets(text, ENV_TARGETS, warn=False)


def _resolve_backend() -> Tuple[str, str]:
    if _declared.backend is not None:
        value, origin = _declared.backend, _declared.backend_origin
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
    key = (settings_caps, _declared.version, env_targets, os.environ.get(ENV_BACKEND), _host, probe_host)
    hit = _cache.get(key) if upstream is None else None
    if hit is not None and (hit.backend != "absent" or "torch_tensorrt" not in sys.modules):
        return hit
    if settings_caps is not None:
        targets, source, origin = settings_caps, "settings", "settings.target_compute_capabilities"
    elif _declared.targets is not None:
        targets, source, origin = _declared.targets, "declared", _declared.targets_origin
    elif env_targets is not None:
        targets, source, origin = _env_targets(env_targets), ENV_TARGETS, ENV_TARGETS
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
        turing = bool(upstream(settings))
    where = f"targets {format_targets(targets)} from {origin}" if targets else f"no targets ({origin})"
    if turing:
        reason = f"TensorRT-RTX targets SM 7.5 ({where})"
    elif backend == "standard":
        reason = f"backend is standard TensorRT ({backend_origin}); Turing limits of TensorRT-RTX do not apply ({where})"
    else:
        reason = f"SM 7.5 is not among the targets ({where})"
    decision = CapabilityDecision(targets, source, origin, backend, backend_origin, turing, reason)
    if upstream is None:  # upstream's answer may depend on more than the targets: never cache it
        if len(_cache) > 256:
            _cache.clear()
        _cache[key] = decision
    return decision


def get_target_compute_capabilities(settings: Any = None) -> Tuple[Capability, ...]:
    """What is being built for: settings, then the declaration/``TRTCAP_TARGET_SM``, then the host GPU."""
    return capability_decision(settings).targets


def trt_rtx_targets_turing(settings: Any = None) -> bool:
    """True when the backend is TensorRT-RTX and SM 7.5 is among the targets."""
    return capability_decision(settings).targets_turing


def turing_safe_gemm_dtype(settings: Any = None) -> Any:
    """``torch.float16`` where FP32 GEMMs cannot be served, else ``torch.float32``."""
    import torch

    return torch.float16 if trt_rtx_targets_turing(settings) else torch.float32
