"""pytest-trtcap: capability-aware fixtures, markers and leak-proof isolation for Torch-TensorRT suites.

Importing this package imports neither torch nor torch_tensorrt.
"""

from .audit import UnservablePlacement, assert_servable_placements, unservable_placements
from .errors import TrtcapLeakError, TrtcapLeakWarning
from .partitions import (
    PartitionCounts,
    assert_partition_counts,
    count_partitions,
    describe_partitions,
    expected_partition_counts,
)
from .trt_close import assert_trt_close
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
