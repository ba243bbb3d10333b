"""Resource partitioning, written like Torch-TensorRT's test_001_resource_partitioning.py.

The counts are hard-coded for a GPU whose TensorRT serves FP32 GEMMs (they hold at SM 8.9). On Turing the
trailing FP32 ``nn.Linear`` cannot stay on TensorRT-RTX, so both tests here fail at 7.5 - and the atomic-subgraph
test, like upstream's, removes its pattern only after its asserts: when it fails, the pattern leaks.
"""

import unittest

import torch
import torch_tensorrt as torchtrt  # noqa: F401  (module level, as Torch-TensorRT's test modules do)
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph

from partitioning_models import ConvNet, ReLUConv, block_names, blocks, partition


class TestResourcePartitioning(unittest.TestCase):
    def test_resource_partitioning(self):
        """Each conv-bn-relu group outgrows the per-engine budget: 2 + 2 conv engines + the head's engine."""
        partitioned_module = partition(ConvNet())

        self.assertEqual(
            len(block_names(partitioned_module, "_run_on_acc")), 5,
            f"The graph should have 5 accelerated subgraphs\n{blocks(partitioned_module)}",
        )
        self.assertEqual(
            len(block_names(partitioned_module, "_run_on_gpu")), 2,
            f"The graph should have 2 non-accelerated subgraphs\n{blocks(partitioned_module)}",
        )
        torch._dynamo.reset()

    def test_resource_partitioning_with_atomic_subgraphs(self):
        """With ReLU->conv atomic, no conv group can be split off: 3 accelerated and 2 non-accelerated subgraphs."""
        register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUConv)

        partitioned_module = partition(ConvNet())

        self.assertEqual(
            len(block_names(partitioned_module, "_run_on_acc")), 3,
            f"The graph should have 3 accelerated subgraphs\n{blocks(partitioned_module)}",
        )
        self.assertEqual(
            len(block_names(partitioned_module, "_run_on_gpu")), 2,
            f"The graph should have 2 non-accelerated subgraphs\n{blocks(partitioned_module)}",
        )

        ATOMIC_SUBGRAPHS.remove((ReLUConv, (), True))
        torch._dynamo.reset()


if __name__ == "__main__":
    unittest.main()
