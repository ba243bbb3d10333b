"""The same resource-partitioning model, written capability-aware with ``pytest_trtcap.TrtCapabilityMixin``.

These pass at every target: the expectation (or the head's dtype) comes from the predicate the guards use.
Each test prints one ``lane-mixin:`` line with what the mixin decided.
"""

import unittest

import torch
import torch_tensorrt as torchtrt  # noqa: F401  (module level, as Torch-TensorRT's test modules do)

from partitioning_models import ConvNet, blocks, partition
from pytest_trtcap import TrtCapabilityMixin, count_partitions


class TestCapabilityAwareResourcePartitioning(TrtCapabilityMixin, unittest.TestCase):
    def test_expected_counts_follow_the_targets(self):
        """FP32 head: on Turing it runs in PyTorch, one more non-accelerated subgraph."""
        expected = self.expected_partition_counts(default=(5, 2), turing=(5, 3))
        partitioned_module = partition(ConvNet())
        self.assertEqual(count_partitions(partitioned_module), expected, blocks(partitioned_module))
        print(
            f"lane-mixin: trt_targets_turing={self.trt_targets_turing} expected={tuple(expected)} "
            f"({self.trt_capability.describe()})"
        )

    def test_turing_safe_head_stays_on_tensorrt(self):
        """A head in ``turing_safe_gemm_dtype`` (FP16 on Turing) is served by TensorRT at every target."""
        dtype = self.turing_safe_gemm_dtype
        partitioned_module = partition(ConvNet(head_dtype=dtype))
        self.assertEqual(tuple(count_partitions(partitioned_module)), (5, 2), blocks(partitioned_module))
        print(f"lane-mixin: turing_safe_gemm_dtype={dtype}")


if __name__ == "__main__":
    unittest.main()
