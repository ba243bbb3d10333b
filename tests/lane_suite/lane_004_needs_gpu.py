"""Tests that need a GPU, written the way Torch-TensorRT's own tests are, next to a real failure.

Each needs a CUDA device in one of the three ways a CPU runner meets: a tensor moved to ``"cuda"`` (torch's
lazy CUDA initialisation), an engine build through ``torch.compile`` (Torch-TensorRT's interpreter gets no
engine without a device, wrapped in ``BackendCompilerFailed``), and a CUDA-only kernel. Under
``--trtcap-needs-gpu skip`` each is a ``trtcap: needs a GPU`` skip; under ``fail`` a failure.

``test_partitioned_head_runs_on_cuda`` checks a count hard-coded for a GPU that serves FP32 GEMMs before it
moves to CUDA: at 8.9 the count holds and the test needs a GPU; at 7.5 the guard keeps the FP32 ``nn.Linear``
layers off TensorRT-RTX and the count assertion fails first - a real failure, which stays one.
"""

import unittest

import torch
import torch.nn as nn
import torch_tensorrt as torchtrt  # noqa: F401  (module level, as Torch-TensorRT's test modules do)
from torch_tensorrt.dynamo import partitioning

from partitioning_models import block_names, blocks, lower, settings


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class TestNeedsGpu(unittest.TestCase):
    def test_partitioned_head_runs_on_cuda(self):
        model, x = Head().eval(), torch.randn(2, 8)
        partitioned_module, _ = partitioning.fast_partition(lower(model, [x], settings()), min_block_size=1)
        self.assertEqual(
            len(block_names(partitioned_module, "_run_on_gpu")), 0,
            f"The graph should have no non-accelerated subgraph\n{blocks(partitioned_module)}",
        )
        model, x = model.cuda(), x.cuda()
        self.assertEqual(model(x).shape, (2, 4))

    def test_engine_build_through_torch_compile(self):
        torch._dynamo.reset()
        model = nn.Sequential(nn.ReLU()).eval()
        compiled = torch.compile(
            model, backend="torch_tensorrt", options={"min_block_size": 1, "pass_through_build_failures": True}
        )
        try:
            self.assertEqual(compiled(torch.randn(2, 3)).shape, (2, 3))
        finally:
            torch._dynamo.reset()

    def test_efficient_attention_kernel(self):
        q = torch.randn(1, 2, 4, 8)
        out = torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, False)[0]
        torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(q, q, q))


if __name__ == "__main__":
    unittest.main()
