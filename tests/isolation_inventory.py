"""Torch-TensorRT's process-wide mutable state, per supported release: what isolation holds, and why not the rest.

A systematic read of the installed package (``test_isolation_inventory.py`` walks it: every module-level dict,
list, set, pass manager or registry one of its functions mutates, and every module global a function rebinds) must
find nothing this table does not cover, so a new release's new registry shows up as a failing test naming it, not
as a leak. The list of held state in docs/plugin.md is this table's (``python tests/isolation_inventory.py``
prints it).
"""

from __future__ import annotations

from typing import NamedTuple

#: The torch-tensorrt-rtx releases (minors) the plugin supports: the ``rtx`` extra's range.
SUPPORTED_RELEASES = ("2.11", "2.12", "2.13", "2.14")


class StateEntry(NamedTuple):
    """One piece of process-wide state: ``held_by`` is the isolation spec's label, or None with a reason.

    ``releases`` are the supported releases that have it: a spec holds what the running release has and is idle
    where its module does not exist, and the drift test checks each release has what is listed and lacks the rest.
    """

    module: str
    name: str
    held_by: str | None
    changed_by: str  # the helpers that change it
    reason: str = ""  # why it is not held (empty when held)
    releases: tuple[str, ...] = SUPPORTED_RELEASES


_CONV = "torch_tensorrt.dynamo.conversion._ConverterRegistry"
_PASSES = "torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass"
_DECOMP = "torch_tensorrt.dynamo.lowering._decomposition_groups"
_RUNTIME_MODE = ("a runtime mode switch, mirrored in the C++ runtime when it is loaded; it only changes how "
                 "engines execute (a GPU is needed) and its context manager restores it on exit")

INVENTORY: tuple[StateEntry, ...] = (
    StateEntry(_CONV, "DYNAMO_ATEN_CONVERTERS", "converter registry",
               "`dynamo_tensorrt_converter`, `register_converter`, tests editing a target's list"),
    StateEntry(_CONV, "DYNAMO_CONVERTERS", "converter registry",
               "its `registries` list of dicts, registry names and calling conventions"),
    StateEntry(_CONV, "DYNAMO_CONVERTERS.compilation_settings", "converter registry settings",
               "`set_compilation_settings` (every compile, refit, `TRTInterpreter`): restored silently; its fields "
               "edited in place: named, and put back by value"),
    StateEntry(_CONV, "DYNAMO_CONVERTERS.disallowed_targets", "converter registry settings",
               "`set_compilation_settings`, `set_disallowed_targets`, or editing the set in place (named)"),
    StateEntry("torch_tensorrt.dynamo.conversion._TRTInterpreter", "TRTInterpreter._populate_trt_builder_config",
               "builder wrapper", "`trtcap_guards.install()` / `uninstall()` (the guards' builder wrapper), put back "
               "with the converter registry"),
    StateEntry("torch_tensorrt.dynamo.partitioning._atomic_subgraphs", "ATOMIC_SUBGRAPHS", "ATOMIC_SUBGRAPHS",
               "`register_atomic_subgraph` (the trace cache is cleared on restore)"),
    StateEntry(_PASSES, "ATEN_PRE_LOWERING_PASSES", "ATEN_PRE_LOWERING_PASSES",
               "`add_pass_with_index`, `remove_pass_with_index`, `insert_debug_pass_before/after`"),
    StateEntry(_PASSES, "ATEN_POST_LOWERING_PASSES", "ATEN_POST_LOWERING_PASSES",
               "`_aten_lowering_pass`, `_remove_lowering_pass` and the pass manager's methods"),
    StateEntry(_DECOMP, "TORCH_TRT_DECOMPOSITIONS", "TORCH_TRT_DECOMPOSITIONS",
               "`register_torch_trt_decomposition(op, registry=TORCH_TRT_DECOMPOSITIONS)`, editing the dict"),
    StateEntry(_DECOMP, "ENABLED_TORCH_DECOMPOSITIONS", "ENABLED_TORCH_DECOMPOSITIONS",
               "editing the dict (enabling or disabling a PyTorch decomposition)"),
    StateEntry("torch_tensorrt.dynamo.lowering.constant_fold_exclusions._core", "_CONSTANT_FOLD_EXCLUSION_RULES",
               "_CONSTANT_FOLD_EXCLUSION_RULES",
               "`register_constant_fold_exclusion_rule`, `unregister_constant_fold_exclusion_rule`",
               releases=("2.14",)),
    StateEntry("trtcap_guards", "declarations, backend, builder switch, neutralizations, host probe memo", "guards",
               "`declare_targets`, `declare_backend`, `enable_builder_targets`, `neutralize`, setting "
               "`targets._host` (fired counts are not held: they grow by design)"),
    StateEntry("os", "environ: the settings' variables (`TRTCAP_TARGET_SM`, `TRTCAP_BACKEND`, ...)", "environment",
               "a test setting or removing one (the guards read `TRTCAP_TARGET_SM` whenever they decide); held in "
               "every session"),
    StateEntry("torch_tensorrt.runtime._cudagraphs", "_PY_RT_CUDAGRAPHS", None, "`set_cudagraphs_mode`",
               _RUNTIME_MODE),
    StateEntry("torch_tensorrt.runtime._multi_device_safe_mode", "_PY_RT_MULTI_DEVICE_SAFE_MODE", None,
               "`set_multi_device_safe_mode`", _RUNTIME_MODE),
    StateEntry("torch_tensorrt._TensorRTProxyModule", "package_imported", None, "`alias_tensorrt` at import",
               "set once when Torch-TensorRT aliases the installed TensorRT; it names what is installed"),
    StateEntry("torch_tensorrt._TensorRTProxyModule", "package_name", None, "`alias_tensorrt` at import",
               "set once when Torch-TensorRT aliases the installed TensorRT; it names what is installed"),
    StateEntry("torch_tensorrt.distributed._nccl_utils", "_nccl_setup_checked", None,
               "`setup_nccl_for_torch_tensorrt`", "a once-per-process memo of an idempotent NCCL set-up",
               releases=("2.12", "2.13", "2.14")),
    StateEntry("torch_tensorrt.dynamo.debug._supports_debugger", "_DEBUG_ENABLED_CLS", None,
               "`cls_supports_debugger`", "filled by a decorator as classes are defined; read only inside "
               "the `Debugger` context manager"),
    StateEntry("torch_tensorrt.dynamo.debug._supports_debugger", "_DEBUG_ENABLED_FUNCS", None,
               "`fn_supports_debugger`", "filled by a decorator as functions are defined; read only inside "
               "the `Debugger` context manager"),
    StateEntry("torch_tensorrt.executorch._export_utils", "_WARNED_MISSING", None, "`_warn_missing_accessor`",
               "a warn-once memo; it changes no result", releases=("2.14",)),
    StateEntry("torch_tensorrt.kernels._register", "_LIVE_LIBS", None, "`_register_pytorch_op`",
               "keeps `torch.library` handles of registered kernels alive; an op registered with PyTorch's "
               "dispatcher is not undone by restoring a list", releases=("2.13", "2.14")),
    # Registries of other libraries that Torch-TensorRT's public helpers write to:
    StateEntry("torch._decomp", "global_decomposition_table", None,
               "`register_torch_trt_decomposition(op)` without `registry=`",
               "PyTorch's own table: it belongs to PyTorch, which offers no way to hold it"),
    StateEntry("tensorrt.plugin", "plugin registry", None,
               "`torch_tensorrt.dynamo.conversion.plugins.custom_op`, `generate_plugin`",
               "TensorRT's and PyTorch's global op and plugin registries, which cannot unregister"),
)


def held_labels() -> tuple[str, ...]:
    """The isolation spec labels the inventory says are held, in order, without repeats."""
    return tuple(dict.fromkeys(e.held_by for e in INVENTORY if e.held_by is not None))


def covers(module: str, name: str) -> bool:
    return any(e.module == module and e.name.split(".")[0] == name for e in INVENTORY)


def _only(entry: StateEntry) -> str:
    """``, 2.13 and 2.14 only`` for state some supported releases lack; empty for state they all have."""
    if entry.releases == SUPPORTED_RELEASES:
        return ""
    *rest, last = entry.releases
    return f", {', '.join(rest)} and {last} only" if rest else f", {last} only"


def readme_lines() -> list[str]:
    """The list (docs/plugin.md) of held and not-held state (between the ``isolation-inventory`` markers)."""
    lines = [f"Held (Torch-TensorRT {', '.join(SUPPORTED_RELEASES)}):", ""]
    lines += [f"- `{e.name}` (`{e.module}`{_only(e)}): {e.changed_by}" for e in INVENTORY if e.held_by is not None]
    lines += ["", "Not held, and why:", ""]
    lines += [f"- `{e.name}` (`{e.module}`, {e.changed_by}{_only(e)}): {e.reason}"
              for e in INVENTORY if e.held_by is None]
    return lines


if __name__ == "__main__":
    print("\n".join(readme_lines()))
