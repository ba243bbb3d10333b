"""Capability guards for Torch-TensorRT on TensorRT-RTX.

``import trtcap_guards; trtcap_guards.install()`` makes every op that TensorRT-RTX cannot serve on the declared targets
(FP32 GEMMs, attention, cdist's matmul, 3D convolution, BF16 on Turing) fall back to PyTorch. Importing this
package imports neither torch nor torch_tensorrt; functions import what they need when called.

The folder is ``guards/`` in the repository and installs as ``trtcap_guards``. Imported under any other name
(``import guards`` from a checkout), it refuses at once: a second copy would hold a second, disagreeing set of
declarations, neutralizations and fired counts in the same process.

PYTEST_DONT_REWRITE: the pytest plugin imports this package before any conftest can name it in ``pytest_plugins``,
and pytest would warn that it cannot rewrite asserts it does not have (an error under ``-W error``).
"""

if __name__ != "trtcap_guards":
    raise ImportError(
        f"pytest-trtcap's guard library must be imported as 'trtcap_guards', not {__name__!r} "
        "(install the project, e.g. pip install -e .)"
    )

import importlib
import sys
from typing import Any, Dict, List

#: Public name -> the submodule that defines it (``submodule.attribute`` where the names differ). Imported on first
#: use (PEP 562): the pytest plugin loads in every pytest run of an environment, and most runs never ask the
#: guards anything.
_EXPORTS: Dict[str, str] = {
    "BuilderTargets": "builder", "apply_builder_targets": "builder", "builder_targets": "builder",
    "builder_targets_enabled": "builder", "builder_targets_installed": "builder",
    "enable_builder_targets": "builder", "plan_builder_targets": "builder",
    "upstream_sets_builder_targets": "builder",
    "answer_device_queries": "gpuless", "import_torch_tensorrt": "gpuless",
    "gpu_less_import_status": "gpuless.status",
    "install_import_hook": "import_hook", "remove_import_hook": "import_hook",
    "fired": "registry", "install": "registry", "installed": "registry", "is_installed": "registry",
    "neutralize": "registry", "neutralized": "registry", "parse_target_name": "registry", "uninstall": "registry",
    "upstream_guarded_targets": "registry",
    "RULES": "rules", "Rule": "rules", "explicit_targets": "rules", "markers": "rules", "rules_for": "rules",
    "unreviewed_targets": "review",
    "GuardsState": "state", "restore_state": "state", "state_snapshot": "state",
    "ENV_BACKEND": "environment", "ENV_TARGETS": "environment",
    "RTX_SUPPORTED": "targets", "TURING": "targets", "CapabilityDecision": "targets",
    "UnsupportedTargetWarning": "targets", "capability_decision": "targets", "clear_declared_targets": "targets",
    "declare_backend": "targets", "declare_targets": "targets", "format_targets": "targets",
    "get_target_compute_capabilities": "targets", "parse_backend": "targets", "parse_targets": "targets",
    "torch_tensorrt_version": "targets", "trt_rtx_targets_turing": "targets", "turing_safe_gemm_dtype": "targets",
    "VALIDATORS": "validators", "attention_capability_validator": "validators",
    "bf16_capability_validator": "validators", "cdist_forward_capability_validator": "validators",
    "convolution_capability_validator": "validators", "gemm_capability_validator": "validators",
    "rejecting_rule": "validators",
}
_SUBMODULES = ("builder", "capabilities", "distributions", "environment", "first_use", "gpuless", "import_hook",
               "live_registry",
               "node_checks", "registry", "review", "review_2_14", "rules", "state", "targets", "undo", "validators")

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Exports are read from their module as ``sys.modules`` holds it now, never kept here: an in-process pytester
    run drops the submodules it loaded, and a kept copy would answer from state nobody declares into any more."""
    if name in _EXPORTS:
        module, _, attribute = _EXPORTS[name].partition(".")
        loaded = sys.modules.get(f"{__name__}.{module}")
        if loaded is None or getattr(loaded.__spec__, "_initializing", False):
            # another thread may be importing it now: import_module waits for that import to finish
            loaded = importlib.import_module(f".{module}", __name__)
        return getattr(loaded, attribute or name)
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)  # the import binds it here, as any submodule import
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))

