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

from .builder import (
    BuilderTargets,
    apply_builder_targets,
    builder_targets,
    builder_targets_enabled,
    builder_targets_installed,
    enable_builder_targets,
    plan_builder_targets,
    upstream_sets_builder_targets,
)
from .gpuless import answer_device_queries, import_torch_tensorrt, install_import_hook, remove_import_hook
from .gpuless import status as gpu_less_import_status
from .registry import (
    fired,
    install,
    installed,
    is_installed,
    neutralize,
    neutralized,
    parse_target_name,
    uninstall,
    upstream_guarded_targets,
)
from .state import GuardsState, restore_state, state_snapshot
from .rules import RULES, Rule, explicit_targets, markers, rules_for
from .targets import (
    ENV_BACKEND,
    ENV_TARGETS,
    RTX_SUPPORTED,
    TURING,
    CapabilityDecision,
    UnsupportedTargetWarning,
    capability_decision,
    clear_declared_targets,
    declare_backend,
    declare_targets,
    format_targets,
    get_target_compute_capabilities,
    parse_backend,
    parse_targets,
    torch_tensorrt_version,
    trt_rtx_targets_turing,
    turing_safe_gemm_dtype,
)
from .validators import (
    VALIDATORS,
    attention_capability_validator,
    bf16_capability_validator,
    cdist_forward_capability_validator,
    convolution_capability_validator,
    gemm_capability_validator,
    rejecting_rule,
)


def unreviewed_targets(registry: object = None) -> tuple:
    """The live converter registry's targets the checked-in review does not cover (see :mod:`trtcap_guards.review`;
    loaded here on first use, since the plugin imports this package in every pytest run)."""
    from .review import unreviewed_targets as unreviewed

    return unreviewed(registry)


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
