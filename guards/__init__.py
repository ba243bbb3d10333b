"""Capability guards for Torch-TensorRT on TensorRT-RTX.

``import trtcap_guards; trtcap_guards.install()`` makes every op that TensorRT-RTX cannot serve on the declared targets
(FP32 GEMMs, attention, cdist's matmul, 3D convolution, BF16 on Turing) fall back to PyTorch. Importing this
package imports neither torch nor torch_tensorrt; functions import what they need when called.

The folder is ``guards/`` in the repository and installs as ``trtcap_guards``. Imported under any other name
(``import guards`` from a checkout), it refuses at once: a second copy would hold a second, disagreeing set of
declarations, neutralizations and fired counts in the same process.
"""

if __name__ != "trtcap_guards":
    raise ImportError(
        f"pytest-trtcap's guard library must be imported as 'trtcap_guards', not {__name__!r} "
        "(install the project, e.g. pip install -e .)"
    )

import importlib
from typing import Any, Dict, List

#: Public name -> (submodule, attribute). Imported on first use (PEP 562): the pytest plugin loads in every pytest
#: run of an environment, and most runs never ask the guards anything.
_EXPORTS: Dict[str, tuple] = {
    **{name: ("builder", name) for name in (
        "BuilderTargets", "apply_builder_targets", "builder_targets", "builder_targets_enabled",
        "builder_targets_installed", "enable_builder_targets", "plan_builder_targets",
        "upstream_sets_builder_targets")},
    **{name: ("gpuless", name) for name in (
        "answer_device_queries", "import_torch_tensorrt", "install_import_hook", "remove_import_hook")},
    "gpu_less_import_status": ("gpuless", "status"),
    **{name: ("registry", name) for name in (
        "fired", "install", "installed", "is_installed", "neutralize", "neutralized", "parse_target_name", "uninstall",
        "upstream_guarded_targets")},
    **{name: ("rules", name) for name in ("RULES", "Rule", "explicit_targets", "markers", "rules_for")},
    "unreviewed_targets": ("review", "unreviewed_targets"),
    **{name: ("state", name) for name in ("GuardsState", "restore_state", "state_snapshot")},
    **{name: ("environment", name) for name in ("ENV_BACKEND", "ENV_TARGETS")},
    **{name: ("targets", name) for name in (
        "RTX_SUPPORTED", "TURING", "CapabilityDecision", "UnsupportedTargetWarning", "capability_decision",
        "clear_declared_targets", "declare_backend", "declare_targets", "format_targets",
        "get_target_compute_capabilities", "parse_backend", "parse_targets", "torch_tensorrt_version",
        "trt_rtx_targets_turing", "turing_safe_gemm_dtype")},
    **{name: ("validators", name) for name in (
        "VALIDATORS", "attention_capability_validator", "bf16_capability_validator",
        "cdist_forward_capability_validator", "convolution_capability_validator", "gemm_capability_validator",
        "rejecting_rule")},
}
_SUBMODULES = ("builder", "capabilities", "distributions", "environment", "gpuless", "live_registry", "registry",
               "review", "review_2_14", "rules", "state", "targets", "validators")


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attribute)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))


__all__ = [
    "BuilderTargets", "apply_builder_targets", "builder_targets", "builder_targets_enabled",
    "builder_targets_installed", "enable_builder_targets", "plan_builder_targets", "upstream_sets_builder_targets",
    "GuardsState", "restore_state", "state_snapshot",
    "CapabilityDecision", "ENV_BACKEND", "ENV_TARGETS", "RTX_SUPPORTED", "RULES", "Rule", "TURING",
    "UnsupportedTargetWarning", "VALIDATORS", "answer_device_queries", "attention_capability_validator",
    "bf16_capability_validator", "capability_decision", "cdist_forward_capability_validator",
    "clear_declared_targets", "convolution_capability_validator", "declare_backend", "declare_targets",
    "explicit_targets", "fired", "format_targets", "gemm_capability_validator", "get_target_compute_capabilities",
    "gpu_less_import_status", "import_torch_tensorrt", "install", "install_import_hook", "installed",
    "is_installed", "markers", "remove_import_hook", "neutralize", "neutralized", "parse_backend", "parse_target_name",
    "parse_targets", "rejecting_rule", "rules_for", "torch_tensorrt_version", "trt_rtx_targets_turing",
    "turing_safe_gemm_dtype", "uninstall", "unreviewed_targets", "upstream_guarded_targets",
]
