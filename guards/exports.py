"""The guard library's public names and where each is defined, read by the package's ``__getattr__``.

Apart from the package's ``__init__`` because the pytest plugin imports the package in every pytest run of an
environment (for the names in ``environment``), and most runs never ask it for anything: only then is this table
loaded. ``__all__`` is this table's keys.
"""


#: Public name -> the submodule that defines it (``submodule.attribute`` where the names differ). Imported on first
#: use (PEP 562): the pytest plugin loads in every pytest run of an environment, and most runs never ask the
#: guards anything.
EXPORTS: dict[str, str] = {
    "BuilderTargets": "builder", "apply_builder_targets": "builder", "builder_targets": "builder",
    "builder_targets_enabled": "builder", "builder_targets_installed": "builder",
    "enable_builder_targets": "builder", "plan_builder_targets": "builder",
    "upstream_sets_builder_targets": "builder",
    "answer_device_queries": "gpuless", "import_torch_tensorrt": "gpuless",
    "gpu_less_import_status": "gpuless.status",
    "install_import_hook": "import_hook", "remove_import_hook": "import_hook",
    "fired": "state", "neutralized": "state",
    "install": "registry", "installed": "registry", "is_installed": "registry",
    "neutralize": "registry", "parse_target_name": "registry", "uninstall": "registry",
    "upstream_guarded_targets": "registry",
    "RULES": "rules", "Rule": "rules", "explicit_targets": "rules", "markers": "rules", "rules_for": "rules",
    "unreviewed_targets": "review",
    "GuardsState": "state", "restore_state": "state", "state_snapshot": "state",
    "ENV_BACKEND": "environment", "ENV_TARGETS": "environment",
    "RTX_SUPPORTED": "targets", "TURING": "targets", "CapabilityDecision": "targets",
    "UnsupportedTargetWarning": "capabilities", "capability_decision": "targets", "clear_declared_targets": "targets",
    "declare_backend": "targets", "declare_targets": "targets", "format_targets": "targets",
    "get_target_compute_capabilities": "targets", "parse_backend": "targets", "parse_targets": "targets",
    "torch_tensorrt_version": "targets", "trt_rtx_targets_turing": "targets", "turing_safe_gemm_dtype": "targets",
    "VALIDATORS": "validators", "attention_capability_validator": "validators",
    "bf16_capability_validator": "validators", "cdist_forward_capability_validator": "validators",
    "convolution_capability_validator": "validators", "gemm_capability_validator": "validators",
    "rejecting_rule": "validators",
}
