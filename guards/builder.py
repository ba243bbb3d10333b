"""Build for what you declare: the declared targets reach the TensorRT-RTX builder config.

Torch-TensorRT 2.14 never sets the builder config's compute capabilities, so TensorRT-RTX builds for its default
whatever the guards decided from: a graph partitioned for Turing gets an engine not built for SM 7.5, and with
``num_compute_capabilities == 0`` refittable builds on Turing fail (Myelin looks for a precompiled module instead
of JIT-compiling). ``install()`` therefore wraps ``TRTInterpreter._populate_trt_builder_config`` (the one place
2.14 creates a builder config) so that every config it returns declares:

* the declared targets (settings, ``declare_targets``, ``TRTCAP_TARGET_SM``), in order, leaving out any that
  TensorRT-RTX has no ``ComputeCapability`` for (9.0);
* ``ComputeCapability.CURRENT`` when nothing is declared and a CUDA device exists (``targets.host_capabilities()``,
  memoized in ``targets._host``: the seam tests use to reach this branch on a host without a device);
* nothing with the standard backend, when switched off (``enable_builder_targets(False)``), or where the
  installed Torch-TensorRT declares the targets itself (newer releases): then it stands aside.

Nothing here imports torch, torch_tensorrt or tensorrt at module import.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NamedTuple

from .process_state import STATE, changing
from .targets import RTX_SUPPORTED, Capability, CapabilityDecision, capability_decision, format_targets
from .undo import UndoHandle

INTERPRETER_MODULE = "torch_tensorrt.dynamo.conversion._TRTInterpreter"
POPULATE = "_populate_trt_builder_config"
_ORIGINAL = "_trtcap_original"  # attribute on our wrapper: the function it replaced
_DECLARES = "compute_capabilit"  # in a name of upstream code: it declares the builder's targets itself


# --- the decision ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuilderTargets:
    """What a builder config is told, and why (the report header prints ``describe()``)."""

    capabilities: tuple[Capability, ...]  # passed to set_compute_capability, in order
    current: bool  # ComputeCapability.CURRENT instead (nothing declared, a CUDA device exists)
    dropped: tuple[Capability, ...]  # declared, but TensorRT-RTX has no ComputeCapability for them
    source: str  # the decision's source: "declared", "TRTCAP_TARGET_SM", "host device", "none", ...
    origin: str
    reason: str  # why nothing is set, or where the targets came from

    @property
    def sets_anything(self) -> bool:
        return bool(self.capabilities) or self.current

    def describe(self) -> str:
        """``7.5 (declared, from --trt-target-sm)``, ``CURRENT (...)`` or ``none (...)``."""
        if self.capabilities:
            dropped = (
                f"; {format_targets(self.dropped)} dropped: no TensorRT-RTX ComputeCapability" if self.dropped else ""
            )
            return f"{format_targets(self.capabilities)} ({self.reason}{dropped})"
        if self.current:
            return f"CURRENT ({self.reason})"
        return f"none ({self.reason})"


def _sourced(origin: str) -> str:
    return origin if origin.startswith("detected") else f"from {origin}"


def plan_builder_targets(decision: CapabilityDecision) -> BuilderTargets:
    """What to declare on the builder for one capability decision (pure: no switch, no Torch-TensorRT)."""

    def nothing(reason: str) -> BuilderTargets:
        return BuilderTargets((), False, dropped, decision.source, decision.origin, reason)

    dropped = tuple(c for c in decision.targets if c not in RTX_SUPPORTED)
    if decision.backend == "standard":
        return nothing(f"backend is standard TensorRT, {_sourced(decision.backend_origin)}")
    if decision.source == "host device":
        return BuilderTargets((), True, (), decision.source, decision.origin,
                              f"no targets declared; host device {format_targets(decision.targets)}")
    if not decision.targets:
        if decision.origin.endswith("(not probed yet)"):
            return nothing("no targets declared: CURRENT if a CUDA device exists at build time; host not probed yet")
        return nothing("TensorRT-RTX's default: no targets declared and no CUDA device")
    kept = tuple(c for c in decision.targets if c in RTX_SUPPORTED)
    if not kept:
        return nothing(f"declared {format_targets(dropped)} from {decision.origin}: no TensorRT-RTX ComputeCapability")
    return BuilderTargets(kept, False, dropped, decision.source, decision.origin, f"declared, from {decision.origin}")


class BuilderSwitch(NamedTuple):
    on: bool
    origin: str


DEFAULT_SWITCH = BuilderSwitch(True, "default")


class _SwitchUndo(UndoHandle):
    """Undo handle of :func:`enable_builder_targets`; also a context manager, and undone in any order."""

    def _put_back(self, before: BuilderSwitch) -> None:
        STATE.builder_switch = before


def enable_builder_targets(on: bool, *, origin: str = "declared") -> _SwitchUndo:
    """Switch declaring the targets on the builder on or off for the process (the hook stays installed)."""
    if not isinstance(on, bool):
        raise ValueError(f"enable_builder_targets: expected True or False, got {on!r}")
    changing()
    previous = builder_targets_enabled()
    STATE.builder_switch = BuilderSwitch(on, origin)
    return _SwitchUndo(STATE.live_switches, previous)


def builder_targets_enabled() -> BuilderSwitch:
    """The switch now (``STATE.builder_switch``, None until something switched it)."""
    switch: BuilderSwitch = STATE.builder_switch or DEFAULT_SWITCH
    return switch


def builder_targets(settings: Any = None, *, probe_host: bool = True) -> BuilderTargets:
    """The decision for a build with ``settings``: the switch, then :func:`plan_builder_targets`."""
    switch = builder_targets_enabled()
    if not switch.on:
        return BuilderTargets((), False, (), "switch", switch.origin, f"switched off, {_sourced(switch.origin)}")
    return plan_builder_targets(capability_decision(settings, probe_host=probe_host))


def apply_builder_targets(config: Any, settings: Any = None) -> BuilderTargets:
    """Declare :func:`builder_targets` on a TensorRT-RTX builder config; a config without the API is left alone."""
    plan = builder_targets(settings)
    if not plan.sets_anything or not hasattr(config, "set_compute_capability"):
        return plan
    import tensorrt_rtx

    enum = tensorrt_rtx.ComputeCapability
    names = ["CURRENT"] if plan.current else [f"SM{major}{minor}" for major, minor in plan.capabilities]
    config.num_compute_capabilities = len(names)
    for index, name in enumerate(names):
        member = getattr(enum, name, None)
        if member is None or not config.set_compute_capability(member, index):
            raise RuntimeError(
                f"trtcap: the TensorRT-RTX builder config refused compute capability {name} "
                f"(targets {plan.describe()}); not building for something else instead"
            )
    return plan


# --- the hook on TRTInterpreter ------------------------------------------------------------------------


def sets_compute_capabilities(fn: Any, depth: int = 0) -> bool:
    """Whether a populate function (or a module-level function it calls) declares the builder's targets itself."""
    code = getattr(fn, "__code__", None)
    if code is None or depth > 2:
        return False
    scope = getattr(fn, "__globals__", {})
    stack = [code]
    while stack:
        c = stack.pop()
        if any(_DECLARES in name for name in c.co_names):
            return True
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        for name in c.co_names:
            helper = scope.get(name)
            if helper is not fn and callable(helper) and sets_compute_capabilities(helper, depth + 1):
                return True
    return False


def _interpreter_class() -> Any:
    module = sys.modules.get(INTERPRETER_MODULE)
    return getattr(module, "TRTInterpreter", None)


def _wrap(original: Any) -> Any:
    def _populate_trt_builder_config(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = original(self, *args, **kwargs)
        apply_builder_targets(config, getattr(self, "compilation_settings", None))
        return config

    _populate_trt_builder_config.__wrapped__ = original  # type: ignore[attr-defined]
    _populate_trt_builder_config.__doc__ = original.__doc__
    setattr(_populate_trt_builder_config, _ORIGINAL, original)
    return _populate_trt_builder_config


def install_builder_targets() -> bool:
    """Wrap the populate function (imports Torch-TensorRT's interpreter). Idempotent; False where it stands aside."""
    from .gpuless import import_torch_tensorrt

    import_torch_tensorrt()
    __import__(INTERPRETER_MODULE)
    cls = _interpreter_class()
    current = cls.__dict__.get(POPULATE)
    if current is None or sets_compute_capabilities(getattr(current, _ORIGINAL, current)):
        return False
    if not hasattr(current, _ORIGINAL):
        setattr(cls, POPULATE, _wrap(current))
    return True


def uninstall_builder_targets() -> bool:
    """Put the identical original function back; imports nothing. False where our wrapper is not installed."""
    cls = _interpreter_class()
    current = cls.__dict__.get(POPULATE) if cls is not None else None
    if not hasattr(current, _ORIGINAL):
        return False
    setattr(cls, POPULATE, getattr(current, _ORIGINAL))
    return True


def is_builder_wrapper(fn: Any) -> bool:
    """Whether ``fn`` is this module's wrapper of the populate function (isolation names it in a leak)."""
    return hasattr(fn, _ORIGINAL)


def builder_targets_installed() -> bool:
    cls = _interpreter_class()
    return cls is not None and is_builder_wrapper(cls.__dict__.get(POPULATE))


def upstream_sets_builder_targets() -> bool | None:
    """Whether the installed Torch-TensorRT declares the targets itself; None until its interpreter is imported."""
    cls = _interpreter_class()
    if cls is None:
        return None
    current = cls.__dict__.get(POPULATE)
    return sets_compute_capabilities(getattr(current, _ORIGINAL, current))


def builder_targets_status() -> str:
    """The header's text: what the builder is told and where the switch came from. Never probes the host."""
    switch = builder_targets_enabled()
    if not switch.on:
        return f"off ({_sourced(switch.origin)})"
    if upstream_sets_builder_targets():
        return "left to Torch-TensorRT (it declares the builder's compute capabilities itself)"
    origin = "default" if switch.origin == "default" else _sourced(switch.origin)
    return f"{builder_targets(probe_host=False).describe()}; on ({origin})"
