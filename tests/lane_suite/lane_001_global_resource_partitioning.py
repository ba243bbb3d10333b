"""Resource partitioning after global capability partitioning, on a conv model with no GEMM at all.

Nothing here depends on the target GPU: the counts hold at every capability. They fail only if an atomic
subgraph registered by an earlier test is still in ``ATOMIC_SUBGRAPHS`` (a ReLU->conv pattern glues the conv
groups together, so the resource partitioner cannot split them).
"""

import unittest

import torch
import torch_tensorrt as torchtrt  # noqa: F401  (module level, as Torch-TensorRT's test modules do)

from partitioning_models import ConvNet, block_names, blocks, partition


class TestGlobalResourcePartitioning(unittest.TestCase):
    def test_resource_partitioning_with_global_capability_partitioning(self):
        partitioned_module = partition(ConvNet(linear_head=False), use_global_partitioner=True)

        self.assertEqual(
            len(block_names(partitioned_module, "_run_on_acc")), 4,
            f"The graph should have 4 accelerated subgraphs\n{blocks(partitioned_module)}",
        )
        torch._dynamo.reset()


if __name__ == "__main__":
    unittest.main()
