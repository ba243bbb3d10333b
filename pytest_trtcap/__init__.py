"""pytest-trtcap: capability-aware fixtures, markers and leak-proof isolation for Torch-TensorRT suites.

Importing this package imports neither torch nor torch_tensorrt, nor any of its own modules: every public name
is loaded on first use (PEP 562). The plugin (``pytest_trtcap.plugin``) loads this package in every pytest run of
the environment, and most runs never ask for these names.

PYTEST_DONT_REWRITE: the entry point imports this package before any conftest can name it in ``pytest_plugins``,
and pytest would warn that it cannot rewrite asserts it does not have (an error under ``-W error``).
"""

import importlib
from typing import Any

#: Public name -> the module that defines it (``.NAME``: one of this package's).
_EXPORTS: dict[str, str] = {
    "PartitionCounts": ".partitions",
    "Partitioned": ".partitions",
    "TrtCapabilityMixin": ".unittest_support",
    "TrtcapAuditError": ".audit",
    "TrtcapLeakError": ".isolation",
    "TrtcapLeakWarning": ".isolation",
    "UnservableLayer": ".layers",
    "UnservablePlacement": ".audit",
    "UnsupportedTargetWarning": "trtcap_guards",  # the guards issue it too: one class under both names
    "assert_servable_layers": ".layers",
    "assert_servable_placements": ".audit",
    "assert_partition_counts": ".partitions",
    "assert_trt_close": ".trt_close",
    "count_partitions": ".partitions",
    "describe_partitions": ".partitions",
    "expected_partition_counts": ".partitions",
    "partition": ".partitioner",
    "unservable_layers": ".layers",
    "unservable_placements": ".audit",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Read from the module as ``sys.modules`` holds it now, never kept here: an in-process pytester run drops the
    modules it loaded, and a kept class would no longer be the one the plugin raises and warns with (a warnings
    filter naming ``pytest_trtcap.TrtcapLeakWarning`` would then match nothing)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
