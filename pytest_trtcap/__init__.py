"""pytest-trtcap: capability-aware fixtures, markers and leak-proof isolation for Torch-TensorRT suites.

Importing this package imports neither torch nor torch_tensorrt. The placement audit and ``assert_trt_close`` are
loaded on first use (PEP 562): the plugin loads this package in every pytest run of the environment.
"""

import importlib
from typing import Any

from .errors import TrtcapLeakError, TrtcapLeakWarning
from .partitions import (
    PartitionCounts,
    assert_partition_counts,
    count_partitions,
    describe_partitions,
    expected_partition_counts,
)
from .unittest_support import TrtCapabilityMixin

__all__ = [
    "PartitionCounts",
    "TrtCapabilityMixin",
    "TrtcapLeakError",
    "TrtcapLeakWarning",
    "UnservablePlacement",
    "assert_servable_placements",
    "assert_partition_counts",
    "assert_trt_close",
    "count_partitions",
    "describe_partitions",
    "expected_partition_counts",
    "unservable_placements",
]

_LAZY = {
    "UnservablePlacement": "audit",
    "assert_servable_placements": "audit",
    "unservable_placements": "audit",
    "assert_trt_close": "trt_close",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
